"""The relabelling study (issue 73), which notebook 19 runs and the claims ledger judges: the
odd agent of a panel seated at every position (:func:`experiment`, :func:`variants`), each
method's accuracy per seat, its spread across seats against sampling (a randomisation test
at matched seeds) and each fixed router beside its orbit average (``NAME~orbit``:
:func:`tables`).  The notebook's figure and words are its own cells."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

import numpy as np
import pandas as pd

from pear.analysis import stats
from pear.catalog.labels import method_order
from pear.core.config import roles_for
from pear.core.methods import orbit_base
from pear.paper.beyond import preset_experiment
from pear.runs.relabelling import placements, relabelled

__all__ = ["SMOKE_METHODS", "METHODS", "SEEDS", "ORBIT_COLUMNS", "experiment", "variants",
           "outcomes", "tables"]

SMOKE_METHODS = ("star", "star~orbit", "pear")
"""The CPU build (a 135M model, one question): what runs, not what it finds (our choice)."""
SEEDS = 2  # our choice: 4,000 debates a seat in the simulated build, half its time
"""Seeds of the grid the study runs unless seeds are given: the preset's first ``SEEDS``."""
SMOKE_SEATS = (0, 1)
"""The CPU build's seats of the odd agent: Star's hub and a leaf (6 debates, not 9: the
default build grows by about a minute; our choice)."""
METHODS = ("star", "star~orbit", "chain", "chain~orbit", "random", "pear")
KEY = ["dataset", "seed", "question_id"]
ORBIT_COLUMNS = ["router", "router_accuracy", "orbit_accuracy", "difference", "diff_low",
                 "diff_high", "p_value", "n_pairs", "router_spread", "orbit_spread",
                 "spread_removed"]


def experiment(preset: str, seeds: str = "", n_questions: int = 0) -> Any:
    """The grid the study varies (:func:`pear.paper.beyond.preset_experiment`), with the
    preset's first :data:`SEEDS` seeds unless ``seeds`` are given."""
    exp = preset_experiment(preset, seeds=seeds, n_questions=n_questions)
    return exp if seeds else dataclasses.replace(exp, seeds=exp.seeds[:SEEDS])


def variants(exp: Any, odd_role: str = "adversarial", *, odd_temperature: float = -1.0,
             odd_model: str = "", model: str = "") -> dict[str, Any]:
    """One variant of ``exp`` per seat of agent 1, with this study's methods
    (:data:`SMOKE_METHODS` and :data:`SMOKE_SEATS` for the smoke grid).  Agent 1 is odd by
    its role ``odd_role``, its sampling temperature ``odd_temperature`` (-1: the protocol's;
    the others keep theirs: a panel of one model at two temperatures) and its model
    ``odd_model`` ('': the grid's; the others run ``model``: a mixed-model panel); it keeps
    all three wherever it sits."""
    smoke = exp.name == "smoke"
    exp = dataclasses.replace(exp, methods=SMOKE_METHODS if smoke else METHODS)
    n = exp.debate.n_agents
    debate: dict[str, Any] = {"roles": roles_for(n, {1: odd_role})}
    if odd_temperature >= 0:
        debate["agent_temperatures"] = (float(odd_temperature),) + (exp.debate.temperature,) * (
            n - 1)
    if odd_model:
        if not model:
            raise ValueError(f"odd_model={odd_model!r} needs the other agents' model: give "
                             "model too (a mixed-model panel)")
        debate["agent_models"] = (odd_model,) + (model,) * (n - 1)
    seats = placements(n, agent=0)
    return relabelled(exp, [seats[p] for p in SMOKE_SEATS] if smoke else seats, **debate)


def outcomes(runs: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """From the seat variants' results (in seat order): per method (table order) its
    outcomes at matched seeds, one row per (dataset, seed, question) recorded at every seat
    and one 0/1 column per seat (1: the odd agent at position 1)."""
    frames = []
    for p, r in enumerate(runs.values()):
        d = r.debates[KEY + ["method", "correct"]].copy()
        d["seat"] = p + 1
        frames.append(d)
    long = pd.concat(frames, ignore_index=True)
    return {m: long[long["method"] == m].pivot_table(index=KEY, columns="seat",
                                                     values="correct",
                                                     aggfunc="first").dropna().astype(int)
            for m in method_order(long["method"].unique())}


def tables(runs: Mapping[str, Any], *, seed: int = 0
           ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """From the seat variants' results (in seat order, :func:`outcomes`): accuracy per
    method and seat with Wilson intervals; per method the mean accuracy, spread (range over
    seats), its null mean and the randomisation p (:func:`pear.analysis.stats.relabelling_spread`);
    each fixed router beside its orbit average: mean accuracy over seats, the difference
    (orbit - router) with its paired bootstrap interval and McNemar's p over the (question,
    seed, seat) pairs (:func:`pear.analysis.stats.paired_effect`), and each one's spread."""
    rng = np.random.default_rng(seed)
    wides = outcomes(runs)
    rows, spread_rows = [], []
    for m, wide in wides.items():
        for p in wide.columns:
            k, total = int(wide[p].sum()), len(wide)
            lo, hi = stats.wilson(k, total)
            rows.append({"method": m, "seat": int(p), "accuracy": k / total, "ci_low": lo,
                         "ci_high": hi, "n": total})
        s = stats.relabelling_spread(wide.to_numpy(dtype=int), rng=rng)
        spread_rows.append({"method": m, "mean_accuracy": float(np.mean(s.accuracy)),
                            "spread": s.spread, "null_spread": s.null_mean,
                            "p_value": s.pvalue, "n": len(wide)})
    by_seat, spread = pd.DataFrame(rows), pd.DataFrame(spread_rows).set_index("method")
    orbit_rows = []
    for m in spread.index:
        b = orbit_base(m)
        if b not in spread.index:
            continue
        both = wides[b].add_suffix("_router").join(wides[m].add_suffix("_orbit"),
                                                    how="inner")
        seats = list(wides[b].columns)
        router = both[[f"{p}_router" for p in seats]].to_numpy().ravel()
        orb = both[[f"{p}_orbit" for p in seats]].to_numpy().ravel()
        e = stats.paired_effect(orb, router, rng=rng)
        orbit_rows.append({
            "router": b, "router_accuracy": spread.loc[b, "mean_accuracy"],
            "orbit_accuracy": spread.loc[m, "mean_accuracy"], "difference": e.diff,
            "diff_low": e.low, "diff_high": e.high, "p_value": e.p_exact, "n_pairs": e.n,
            "router_spread": spread.loc[b, "spread"], "orbit_spread": spread.loc[m, "spread"],
            "spread_removed": spread.loc[b, "spread"] - spread.loc[m, "spread"]})
    orbit = pd.DataFrame(orbit_rows, columns=ORBIT_COLUMNS)
    return by_seat, spread.reset_index(), orbit
