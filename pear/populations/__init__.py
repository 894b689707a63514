"""Fitting and checking simulated populations against recorded runs: twins of a run
(:mod:`pear.populations.twin`, ``pear fit``), the family of real twins
(:mod:`pear.populations.family`) and the split-half check of a twin
(:mod:`pear.populations.holdout`).

Above runs and analysis (it reads runs and holds a population against them with
:mod:`pear.analysis.simcheck`), below the paper build (which states its simulated conclusions
across the family)."""
