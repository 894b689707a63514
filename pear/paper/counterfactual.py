"""Notebook 16 (counterfactual branching): the main run's debates of one method, rerun from
round R under other methods (:mod:`pear.runs.branch`), compared question by question.

:func:`run_branches` branches the main run (or reads the branches, ``replay``);
:func:`effects` gives, per branched method, the paired effect (branch minus parent on the
same questions and seeds: accuracy difference, bootstrap 95% interval, McNemar's exact p),
beside the unpaired comparison a full rerun allows (the method's own debates in the main run
against the parent's, resampled independently) at the same number of questions, and the calls
that branching did not repeat.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pear import paths
from pear.analysis import stats
from pear.analysis.figures import METHOD_COLORS, annotate
from pear.backends.registry import spec as backend_spec
from pear.catalog.labels import method_label
from pear.paper.study import Results
from pear.store import view
from pear.store.records import iter_records
from pear.runs.branch import branch
from pear.runs.factory import default_workers, make_backend

__all__ = ["branch_dir", "run_branches", "effects", "table_effects", "plot_effects"]

KEYS = ["model", "dataset", "seed", "question_id"]


def branch_dir(runs_dir: str | Path, from_round: int) -> Path:
    """Where the main run's branches after round ``from_round`` live (beside the studies)."""
    return paths.studies_dir(runs_dir) / f"branch-r{from_round}"


def run_branches(backend: str, parent: Results, methods: Sequence[str], from_round: int, *,
                 parent_method: str = "random", model: str = "", progress: bool = False
                 ) -> tuple[pd.DataFrame, Path, int]:
    """Branch ``parent``'s run after ``from_round`` (held to the run's last branchable
    round, R - 1) into ``methods`` (``replay``: only read earlier branches; on every core for
    the simulated backend: :func:`pear.runs.factory.default_workers`); returns the
    branches' debates, their directory and the round used.  The branches share the main
    run's response cache."""
    rounds = parent.exp.debate.rounds
    r = max(0, min(int(from_round), rounds - 1))
    out = branch_dir(parent.runs_dir, r)
    spec = backend_spec(backend)
    if spec.runs:
        be = None
        if not spec.simulator:
            be = make_backend(backend, exp=parent.exp, model=model or None,
                              model_path=model or None if spec.model == "model_path" else None,
                              cache_path=paths.cache_path(parent.runs_dir))
        branch(parent.runs_dir, r, list(methods), out, backend=be,
               parent_method=parent_method, progress=progress,
               workers=default_workers(backend))
    elif not out.is_dir():
        raise FileNotFoundError(f"backend 'replay' needs recorded branches in {str(out)!r}")
    return view.load(out).debates, out, r


def effects(branches: pd.DataFrame, branch_run: str | Path, parent: Results, *,
            seed: int = 0) -> pd.DataFrame:
    """One row per branched method: pairs, the parent's and the branch's accuracy, the
    paired effect (diff, low, high, width, McNemar's exact p), the unpaired comparison of
    the method's full debates in the main run with the parent's on as many questions
    (diff, low, high, width; NaN where the main run lacks the method), and calls: made by
    the branches, not repeated (the copied rounds), and the share saved against full
    reruns."""
    rng = np.random.default_rng(seed)
    info = {r["debate_id"]: r["branched_from"] for r in iter_records(branch_run)}
    deb = parent.debates
    rows = []
    for m in dict.fromkeys(branches["method"]):
        br = branches[branches["method"] == m]
        copied = sum(info[i]["calls_copied"] for i in br["debate_id"])
        pm = info[br["debate_id"].iloc[0]]["method"]
        par = deb[deb["method"] == pm].set_index(KEYS)["correct"].rename("parent")
        pairs = br.set_index(KEYS)["correct"].rename("branch").to_frame().join(
            par, how="inner")
        a, b = pairs["branch"].to_numpy(int), pairs["parent"].to_numpy(int)
        e = stats.paired_effect(a, b, n_resamples=5000, rng=rng)
        diff, low, high, p = e.diff, e.low, e.high, e.p_exact
        full = deb[deb["method"] == m]["correct"].to_numpy(int)[:a.size]
        u = stats.bootstrap_diff_unpaired(full, b, 5000, rng=rng) if full.size \
            else (np.nan,) * 3
        calls = int(br["calls"].sum())
        rows.append({"method": m, "parent": pm, "n_pairs": int(a.size),
                     "parent_accuracy": float(b.mean()) if b.size else np.nan,
                     "branch_accuracy": float(a.mean()) if a.size else np.nan,
                     "diff": diff, "low": low, "high": high, "width": high - low,
                     "p_mcnemar": p, "unpaired_diff": u[0], "unpaired_low": u[1],
                     "unpaired_high": u[2], "unpaired_width": u[2] - u[1],
                     "calls_branch": calls, "calls_copied": copied,
                     "saved_share": copied / (calls + copied) if calls + copied else np.nan})
    return pd.DataFrame(rows)


def table_effects(eff: pd.DataFrame) -> pd.DataFrame:
    """:func:`effects` with display names and readable columns."""
    out = eff.assign(method=eff["method"].map(method_label),
                     parent=eff["parent"].map(method_label))
    return out.rename(columns={
        "method": "Branch", "parent": "Parent", "n_pairs": "Pairs",
        "parent_accuracy": "Parent acc.", "branch_accuracy": "Branch acc.",
        "diff": "Paired diff", "low": "CI low", "high": "CI high", "width": "CI width",
        "p_mcnemar": "McNemar p", "unpaired_diff": "Unpaired diff",
        "unpaired_low": "Unpaired CI low", "unpaired_high": "Unpaired CI high",
        "unpaired_width": "Unpaired CI width", "calls_branch": "Calls made",
        "calls_copied": "Calls not repeated", "saved_share": "Share saved"}
    ).set_index("Branch")


def plot_effects(eff: pd.DataFrame, *, source: str = "", mark: str = "",
                 simulated: bool = False) -> Figure:
    """Per branched method: the paired effect's 95% interval (filled) above the unpaired
    one (open), in accuracy points."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(3.5, 1.2 + 0.45 * max(1, len(eff))), layout="constrained")
    for i, row in enumerate(eff.itertuples()):
        color = METHOD_COLORS.get(row.method, "0.4")
        ax.errorbar(row.diff, i + 0.15, xerr=[[row.diff - row.low], [row.high - row.diff]],
                    fmt="o", color=color, capsize=2)
        if not np.isnan(row.unpaired_low):
            ax.errorbar(row.unpaired_diff, i - 0.15,
                        xerr=[[row.unpaired_diff - row.unpaired_low],
                              [row.unpaired_high - row.unpaired_diff]], fmt="o", mfc="white",
                        color=color, capsize=2)
    ax.axvline(0, color="0.6", lw=0.6)
    ax.set_yticks(range(len(eff)), [f"{method_label(m)} - {method_label(p)}"
                                    for m, p in zip(eff["method"], eff["parent"])])
    ax.set_xlabel("Accuracy difference (95% interval)")
    from matplotlib.lines import Line2D
    ax.legend(handles=[Line2D([], [], marker="o", color="0.3", label="paired (branch)"),
                       Line2D([], [], marker="o", mfc="white", color="0.3",
                              label="unpaired (full rerun)")],
              fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2,
              frameon=False)
    return annotate(fig, [ax], title="Branches: paired vs unpaired",
                    source=source, mark=mark, simulated=simulated)
