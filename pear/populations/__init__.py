"""Fitting and checking simulated populations against recorded runs, one room, one module per
concept (the commands: ``pear population ...``, :mod:`pear.cli.populations`):

* :mod:`~pear.populations.twin`: a twin of recorded runs (``pear population fit``);
  :mod:`~pear.populations.family`: the shipped family of real twins (``--population family``),
  with :mod:`~pear.populations.published_gains` (members moment-matched to published debate
  gains), :mod:`~pear.populations.published_collapse` (published per-model collapse and
  recovery: the check and the ``ledger-*`` members), :mod:`~pear.populations.split_half` (a
  twin fitted on half a run, checked on the other half) and :mod:`~pear.populations.planted`
  (twins planted at the published extremes);
* :mod:`~pear.populations.corpus_fit`: the corpus fit (``study``, ``grounded``,
  ``grounded-math``) on DyLAN's debates (imported by :mod:`pear.store.import_cache`);
  :mod:`~pear.populations.draws`: its bootstrap draws (the ensemble);
  :mod:`~pear.populations.checks`: the shipped population files written and checked, and the
  fit's in-sample check; :mod:`~pear.populations.graded_copies`: the shipped graded copies of
  the imported real debates; :mod:`~pear.populations.calibration`: the initial answers fitted
  on the study's baselines; :mod:`~pear.populations.leave_one_subject_out`: the corpus fit
  held against each MATH subject it was not fitted on;
* :mod:`~pear.populations.simcheck` (``pear population sim-check``) and
  :mod:`~pear.populations.debate_statistics` (the per-round statistics it compares),
  :mod:`~pear.populations.graded_copies` (the shipped real debates, their graded copies);
  :mod:`~pear.populations.reading`: what a fit reads of a run.

Above runs and analysis (it reads runs and their statistics), below the paper build (which
states its simulated conclusions across the family)."""
