"""Fitting and checking simulated populations against recorded runs, one room:

* :mod:`~pear.populations.twin`: a twin of recorded runs (``pear fit``);
  :mod:`~pear.populations.family`: the shipped family of real twins (``--population family``),
  with :mod:`~pear.populations.published_gains` (members moment-matched to published debate
  gains) and :mod:`~pear.populations.holdout` (a twin fitted on half a run, checked on the
  other half);
* :mod:`~pear.populations.grounding`: the corpus fit (``grounded``, its ensemble, the in-sample
  check); :mod:`~pear.populations.calibration`: the initial answers fitted on the study's
  baselines; :mod:`~pear.populations.heldout`: leave-one-subject-out;
* :mod:`~pear.populations.simcheck` (``pear sim-check``) and :mod:`~pear.populations.dynamics`
  (the statistics it compares), :mod:`~pear.populations.real_debates` (imported runs held
  against populations), :mod:`~pear.populations.published_dynamics` (published collapse and
  recovery); :mod:`~pear.populations.reading`: what a fit reads of a run.

Above runs and analysis (it reads runs and their statistics), below the paper build (which
states its simulated conclusions across the family)."""
