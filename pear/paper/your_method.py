"""Notebook 15 ("bring your own method"): run registered methods beside PEAR, Random and
Clique on the studies' grid and compare them paired, question by question.

:func:`experiment` is the ``beyond`` grid (or another preset's) with the methods to compare;
:func:`run` records it beside the run directory (``<runs_dir>-studies/your_method``, like the
other studies); :func:`comparison` gives accuracy, W2R/R2W (per query, the study's
definition), tokens per example and, against each reference, the paired accuracy
difference with its bootstrap 95% interval and McNemar's exact p (all over the same
questions and seeds).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pear.analysis import metrics, stats
from pear.catalog.labels import method_label, method_order
from pear.paper.study import Results
from pear.methods import spec

__all__ = ["REFERENCES", "experiment", "run", "comparison", "significance",
           "significance_table"]

REFERENCES = ("pear", "random", "clique")
"""What a new method is set beside: PEAR, Random (same base graphs, no routing signal) and
Clique (every critique)."""


def experiment(preset: str = "beyond", methods: Sequence[str] = (), *,
               seeds: str | Sequence[int] = "", n_questions: int = 0) -> Any:
    """The studies' grid (:func:`pear.paper.beyond.preset_experiment`) with
    :data:`REFERENCES` and ``methods`` (registered names; plug-ins are loaded), in table
    order."""
    from pear.paper.beyond import preset_experiment  # heavy: matplotlib, only for this function
    for m in methods:
        spec(m)  # an unknown name fails here, naming itself
    exp = preset_experiment(preset, seeds=seeds, n_questions=n_questions)
    return dataclasses.replace(exp, methods=tuple(method_order([*REFERENCES, *methods])))


def run(backend: str, exp: Any, runs_dir: str | Path, *, model: str = "") -> Results:
    """Run (or resume; ``replay``: only read) ``exp`` into
    ``<runs_dir>-studies/your_method`` and load its debates."""
    from pear.paper.beyond import run_variants  # heavy: matplotlib, only for this function
    return run_variants(backend, {"your_method": exp}, runs_dir, model=model)["your_method"]


def significance(debates: pd.DataFrame, method: str, against: str, *, seed: int = 0,
                 n_resamples: int = 5000) -> dict[str, Any]:
    """``method`` against ``against`` on the same (model, dataset, seed, question): the
    accuracy difference with a paired bootstrap 95% interval and McNemar's exact p."""
    pairs = metrics.paired(debates, method, against)
    e = stats.paired_effect(pairs["correct_a"].to_numpy(), pairs["correct_b"].to_numpy(),
                            n_resamples, rng=np.random.default_rng(seed))
    return {"diff": e.diff, "low": e.low, "high": e.high, "p_exact": e.p_exact, "n_pairs": e.n}


def comparison(res: Results) -> pd.DataFrame:
    """One row per method of the run (table order, display names): accuracy, W2R, R2W and
    Net (per query, the study's definition) and tokens per example, pooled over the run's
    datasets and seeds."""
    deb = res.debates
    acc = metrics.pooled_accuracy(deb)
    rates = metrics.update_rates(deb, res.agent_rounds, ("method",)).set_index("method")[
        ["w2r", "r2w", "net"]]
    cost = metrics.costs(deb, ("method",)).set_index("method")[["tokens_per_example"]]
    out = pd.concat([acc, rates, cost], axis=1)
    out = out.loc[method_order(out.index)]
    out.index = pd.Index([method_label(m) for m in out.index], name="Method")
    return out.rename(columns={"accuracy": "Accuracy", "w2r": "W2R (per query)",
                               "r2w": "R2W (per query)", "net": "Net (per query)",
                               "tokens_per_example": "Tokens / example"})


def significance_table(res: Results, references: Sequence[str] = ("pear", "random"), *,
                       seed: int = 0) -> pd.DataFrame:
    """Every method of the run against each reference it is not: the paired accuracy
    difference (method - reference) with its bootstrap 95% interval, McNemar's exact p and
    the number of pairs (:func:`significance`), in table order with display names."""
    deb = res.debates
    present = method_order(deb["method"].unique())
    rows = []
    for ref in [r for r in references if r in present]:
        for m in present:
            if m != ref:
                rows.append({"Method": method_label(m), "Against": method_label(ref),
                             **significance(deb, m, ref, seed=seed)})
    out = pd.DataFrame(rows).rename(columns={
        "diff": "Diff", "low": "CI low", "high": "CI high", "p_exact": "p (exact)",
        "n_pairs": "Pairs"})
    return out.set_index(["Against", "Method"])
