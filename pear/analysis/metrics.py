"""Metrics of the columnar view (:mod:`pear.store.view`): accuracy, round-wise accuracy, the
trajectory diagnostics, critique rates, influence entropy, cost, and gains over baselines.

Every function takes the view's tables (``debates`` with the identity columns; the child
tables ``agent_rounds``, ``edges``, ``rounds`` keyed by ``debate``), computes per-debate
quantities with vectorised group-bys, and returns a tidy DataFrame keyed by ``by``
(default :data:`GROUP` = model, dataset, method), rows in the study's table order.  Methods
and datasets are internal names (``cot_sc``, ``math500``).

>>> d = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": "pear",
...                   "seed": [0, 0, 1, 1], "question_id": ["q1", "q2"] * 2,
...                   "correct": [True, False, True, True]})
>>> accuracy(d)[["accuracy", "std", "n_seeds", "n_questions"]].to_dict("records")
[{'accuracy': 0.75, 'std': 0.3535533905932738, 'n_seeds': 2, 'n_questions': 2}]
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from pear.core.config import CONFIDENCE_MAX, CONFIDENCE_MIN
from pear.core.methods import FIXED_TOPOLOGIES
from pear.methods import spec as _spec
from pear.catalog.labels import sort_rows as _sorted

__all__ = [
    "GROUP", "UPDATE_RATES", "CRITIQUE_RATES", "DIAGNOSTICS", "seed_accuracy", "accuracy",
    "pooled_accuracy", "round_accuracy", "update_counts", "update_rates", "critique_rates",
    "influence_entropy", "mean_influence_entropy", "diagnostics", "macro_average", "costs",
    "best_fixed", "gains", "gain_summary", "gains_versus", "pareto_front", "paired",
]

GROUP = ("model", "dataset", "method")
"""The keys of one experimental cell; seeds and questions are averaged inside it."""


def _kinds(names: Any) -> dict[str, str]:
    """Method name -> registered kind (``single``, ``sample``, ``fixed``, ``routed``,
    ``plugin``); ``unknown`` for a name no loaded plug-in registers."""
    out = {}
    for m in set(names):
        try:
            out[m] = _spec(str(m)).kind
        except ValueError:
            out[m] = "unknown"
    return out


def _across_seeds(per_seed: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Mean and sample std (ddof=1; 0 with one seed) of per-seed accuracies."""
    out = per_seed.groupby(list(keys), sort=False).agg(
        accuracy=("accuracy", "mean"),
        std=("accuracy", lambda s: float(s.std(ddof=1)) if len(s) > 1 else 0.0),
        n_seeds=("seed", "nunique"), n_questions=("n_questions", "min")).reset_index()
    return _sorted(out, keys)


def _per_debate(debates: pd.DataFrame, codes: np.ndarray,
                values: dict[str, np.ndarray]) -> pd.DataFrame:
    """Sums of ``values`` over the child rows of each debate (``codes`` = their ``debate``),
    one row per row of ``debates``, with its ``debate`` key."""
    keys = debates["debate"].to_numpy()
    size = int(max(keys.max(initial=-1), codes.max(initial=-1))) + 1
    out = {"debate": keys}
    for name, v in values.items():
        out[name] = np.bincount(codes, weights=np.asarray(v, dtype=float), minlength=size)[keys]
    return pd.DataFrame(out)


def seed_accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Per-seed final-answer accuracy: columns ``model, dataset, method, seed, accuracy,
    n_questions`` (accuracy = mean of the 0/1 ``correct`` over that seed's questions)."""
    out = debates.groupby([*GROUP, "seed"], sort=False)["correct"].agg(
        accuracy="mean", n_questions="size").reset_index()
    out["accuracy"] = out["accuracy"].astype(float)
    return _sorted(out, [*GROUP, "seed"])


def accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Final-answer accuracy per (model, dataset, method): mean and std ACROSS SEEDS.

    Columns ``model, dataset, method, accuracy, std, n_seeds, n_questions``: each seed's
    accuracy is first the mean of 0/1 correctness over its questions; ``accuracy`` and
    ``std`` (ddof=1, 0 when one seed) are then taken over those per-seed values, never over
    the 0/1 flags.  ``n_questions`` is the smallest number of questions of any seed.
    """
    return _across_seeds(seed_accuracy(debates), GROUP)


def pooled_accuracy(debates: pd.DataFrame, by: Sequence[str] = ("method",)) -> pd.Series:
    """Final-answer accuracy pooled over the debates sharing ``by``: the mean of their 0/1
    ``correct`` (every seed's questions together), a float Series named ``accuracy``
    indexed by ``by``.  The study's accuracy is :func:`accuracy` (mean across seeds); this
    is for a run's own comparisons (one seed, or a share of all its debates).

    >>> d = pd.DataFrame({"method": ["a", "a", "b"], "correct": [True, False, True]})
    >>> pooled_accuracy(d).to_dict()
    {'a': 0.5, 'b': 1.0}
    """
    return debates.groupby(list(by))["correct"].mean().astype(float).rename("accuracy")


def round_accuracy(debates: pd.DataFrame, rounds: pd.DataFrame) -> pd.DataFrame:
    """Accuracy of the vote after each round (round 0 = the initial answers), mean and std
    across seeds as in :func:`accuracy`: columns ``model, dataset, method, round, accuracy,
    std, n_seeds, n_questions``.

    Methods without debate rounds (``cot``, ``cot_sc``: records with round 0 only) are
    carried flat over rounds 0..R, R the last round of any debate method of the same
    (model, dataset), so that they draw as horizontal reference lines.  A debate that
    stopped early (``pear.core.stopping``) carries its last vote forward to the last round of
    its (model, dataset, method), so that every round averages the same debates.

    >>> deb = pd.DataFrame({"debate": [0, 1], "model": "m", "dataset": "d", "seed": 0,
    ...                     "method": ["cot", "pear"]})
    >>> ro = pd.DataFrame({"debate": [0, 1, 1], "round": [0, 0, 1],
    ...                    "vote_correct": [True, False, True]})
    >>> round_accuracy(deb, ro)[["method", "round", "accuracy"]].values.tolist()
    [['cot', 0, 1.0], ['cot', 1, 1.0], ['pear', 0, 0.0], ['pear', 1, 1.0]]
    """
    extra = ["max_rounds"] if "max_rounds" in debates else []
    votes = rounds[["debate", "round", "vote_correct"]].merge(
        debates[["debate", *GROUP, "seed", *extra]], on="debate")
    votes = _carry_forward(votes)
    per_seed = votes.groupby([*GROUP, "seed", "round"], sort=False)["vote_correct"].agg(
        accuracy="mean", n_questions="size").reset_index()
    per_seed["accuracy"] = per_seed["accuracy"].astype(float)
    per_seed["round"] = per_seed["round"].astype(int)
    out = _across_seeds(per_seed, [*GROUP, "round"])
    last = out.groupby(list(GROUP))["round"].transform("max")
    horizon = out[last > 0].groupby(["model", "dataset"])["round"].max()
    flat = [row.to_frame().T.assign(round=r) for _, row in out[last == 0].iterrows()
            for r in range(1, int(horizon.get((row["model"], row["dataset"]), 0)) + 1)]
    out = pd.concat([out, *flat], ignore_index=True).astype(out.dtypes.to_dict())
    return _sorted(out, [*GROUP, "round"])


def _carry_forward(votes: pd.DataFrame) -> pd.DataFrame:
    """``votes`` with each debate's last round repeated (round numbers counting on) up to its
    ``max_rounds`` (R) where recorded, else the last round any debate of its (model, dataset,
    method) reached.

    >>> v = pd.DataFrame({"debate": [0, 0, 1, 1, 1], "round": [0, 1, 0, 1, 2],
    ...                   "vote_correct": [0, 1, 0, 0, 1], "model": "m", "dataset": "d",
    ...                   "method": "pear", "seed": 0})
    >>> _carry_forward(v).query("debate == 0")[["round", "vote_correct"]].values.tolist()
    [[0, 0], [1, 1], [2, 1]]
    """
    if votes.empty:
        return votes
    horizon = votes.groupby(list(GROUP), observed=True)["round"].transform("max")
    if "max_rounds" in votes:
        horizon = np.maximum(horizon, votes["max_rounds"].fillna(0).astype(int))
    last = votes.groupby("debate")["round"].transform("max")
    tail = votes[(votes["round"] == last) & (last < horizon)]
    if tail.empty:
        return votes
    gap = (horizon - last)[tail.index].astype(int)
    pad = tail.loc[tail.index.repeat(gap)].copy()
    pad["round"] = pad["round"] + pad.groupby(level=0).cumcount() + 1
    return pd.concat([votes, pad], ignore_index=True)


# ----------------------------------------------------------------- trajectory diagnostics

CRITIQUE_RATES = ("acceptance", "cross_answer", "source_confidence")
"""The critique diagnostics (:func:`critique_rates`), in the study's column order."""
DIAGNOSTICS = ("w2r", "r2w", "net", *CRITIQUE_RATES, "influence_entropy")
"""The study's diagnostics, in its table's column order (:func:`diagnostics`): the one list."""
UPDATE_RATES = ("w2r", "r2w", "net", "w2r_pooled", "r2w_pooled", "net_pooled",
                "w2r_endpoints", "r2w_endpoints", "net_endpoints")
"""The update-rate columns of :func:`update_rates`, by definition."""


def _transitions(agent_rounds: pd.DataFrame) -> tuple[np.ndarray, ...]:
    """(debate, before, after) of every agent update r-1 -> r, and (debate, initial, final)
    of every agent with at least one update (its round 0 and its last round)."""
    d = agent_rounds["debate"].to_numpy(np.int64)
    a = agent_rounds["agent"].to_numpy(np.int64)
    r = agent_rounds["round"].to_numpy(np.int64)
    c = agent_rounds["correct"].to_numpy(bool)
    order = np.lexsort((r, a, d))
    d, a, r, c = d[order], a[order], r[order], c[order]
    same_agent = (d[1:] == d[:-1]) & (a[1:] == a[:-1])
    step = same_agent & (r[1:] == r[:-1] + 1)
    first = np.r_[True, ~same_agent]          # first row of each (debate, agent)
    last = np.r_[~same_agent, True]
    f_idx, l_idx = np.flatnonzero(first), np.flatnonzero(last)
    ends = (r[f_idx] == 0) & (r[l_idx] > 0)
    return (d[1:][step], c[:-1][step], c[1:][step],
            d[f_idx][ends], c[f_idx][ends], c[l_idx][ends])


def _mean_rate(num: pd.Series, den: pd.Series, groups: pd.Series | list) -> pd.Series:
    """Mean over the debates with ``den > 0`` of ``num / den``, per group."""
    ok = den > 0
    rate = (num[ok] / den[ok]).groupby([g[ok] for g in groups]).mean()
    return rate


def update_counts(debates: pd.DataFrame, agent_rounds: pd.DataFrame) -> pd.DataFrame:
    """Per debate (rows of ``debates``, same order, with its ``debate`` key), the counts the
    update rates are made of: ``updates``, ``from_wrong``, ``from_right``, ``w2r_count``,
    ``r2w_count`` (agent updates r-1 -> r) and the endpoint counts ``e_wrong``, ``e_right``,
    ``e_w2r``, ``e_r2w`` (round 0 against each agent's last round).  A debate's per-query
    W2R (:func:`update_rates`) is ``w2r_count / from_wrong`` where ``from_wrong > 0``.

    >>> deb = pd.DataFrame({"debate": [0]})
    >>> ar = pd.DataFrame({"debate": 0, "agent": [0, 1, 0, 1], "round": [0, 0, 1, 1],
    ...                    "correct": [False, True, True, True]})
    >>> update_counts(deb, ar)[["from_wrong", "w2r_count", "from_right"]].values.tolist()
    [[1.0, 1.0, 1.0]]
    """
    td, before, after, ed, initial, final = _transitions(agent_rounds)
    per = _per_debate(debates, td, {
        "updates": np.ones(len(td)), "from_wrong": ~before, "from_right": before,
        "w2r_count": ~before & after, "r2w_count": before & ~after})
    ends = _per_debate(debates, ed, {"e_wrong": ~initial, "e_right": initial,
                                     "e_w2r": ~initial & final, "e_r2w": initial & ~final})
    return pd.concat([per, ends.drop(columns="debate")], axis=1)


def update_rates(debates: pd.DataFrame, agent_rounds: pd.DataFrame,
                 by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Wrong-to-right and right-to-wrong rates of agent updates within ``by``, under three
    definitions (an update is one agent in round r-1 and in round r of one debate; a query
    is one debate, i.e. one question answered under one seed):

    - ``w2r``, ``r2w``, ``net`` — **per query, the study's definition**: per debate,
      W2R = (updates wrong at r-1 and right at r) / (updates wrong at r-1), summed over its
      agents and rounds; then averaged over the debates, skipping those with no update
      wrong at r-1 (W2R undefined there); R2W symmetric (skipping debates with no update
      right at r-1); Net = W2R - R2W of those two means, so a table's Net is its W2R minus
      its R2W;
    - ``w2r_pooled``, ``r2w_pooled``, ``net_pooled`` — counts pooled over every debate of
      the group before dividing (weights debates by their number of wrong updates);
    - ``w2r_endpoints``, ``r2w_endpoints``, ``net_endpoints`` — the authors' code: each
      agent's initial (round 0) against its final answer only, per debate the share of the
      initially wrong (right) agents that end right (wrong), averaged over debates as the
      per-query rates.

    Also the counts ``updates, from_wrong, from_right, w2r_count, r2w_count`` and
    ``queries`` (debates with an update).  Groups with no update at all (CoT, CoT-SC) get 0
    for every rate, as the study prints; a rate with no defined query in a group that has
    updates is NaN.

    >>> deb = pd.DataFrame({"debate": [0, 1], "model": "m", "dataset": "d", "method": "pear"})
    >>> ar = pd.DataFrame({"debate": [0] * 4 + [1] * 4, "agent": [0, 1] * 4,
    ...     "round": [0, 0, 1, 1] * 2,
    ...     "correct": [False, True, True, True, False, False, False, True]})
    >>> out = update_rates(deb, ar).iloc[0]
    >>> out["w2r"], out["w2r_pooled"], out["r2w"]
    (np.float64(0.75), np.float64(0.6666666666666666), np.float64(0.0))
    """
    by = list(by)
    per = update_counts(debates, agent_rounds)
    keys = [debates[k].reset_index(drop=True) for k in by]
    g = per.drop(columns="debate").groupby(keys, sort=False)
    sums = g.sum()
    out = pd.DataFrame({
        "updates": sums["updates"], "from_wrong": sums["from_wrong"],
        "from_right": sums["from_right"], "w2r_count": sums["w2r_count"],
        "r2w_count": sums["r2w_count"],
        "queries": (per["updates"] > 0).groupby(keys, sort=False).sum()})
    counts = ["updates", "from_wrong", "from_right", "w2r_count", "r2w_count", "queries"]
    out[counts] = out[counts].astype(int)
    out["w2r"] = _mean_rate(per["w2r_count"], per["from_wrong"], keys)
    out["r2w"] = _mean_rate(per["r2w_count"], per["from_right"], keys)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["w2r_pooled"] = out["w2r_count"] / out["from_wrong"].replace(0, np.nan)
        out["r2w_pooled"] = out["r2w_count"] / out["from_right"].replace(0, np.nan)
    out["w2r_endpoints"] = _mean_rate(per["e_w2r"], per["e_wrong"], keys)
    out["r2w_endpoints"] = _mean_rate(per["e_r2w"], per["e_right"], keys)
    none = out["updates"] == 0
    for kind in ("", "_pooled", "_endpoints"):
        for col in (f"w2r{kind}", f"r2w{kind}"):
            out[col] = out[col].astype(float).where(~none, 0.0)
        out[f"net{kind}"] = out[f"w2r{kind}"] - out[f"r2w{kind}"]
    out = out.reset_index()
    out.columns = [*by, *out.columns[len(by):]]
    return _sorted(out[[*by, *counts, *UPDATE_RATES]], by)


def critique_rates(debates: pd.DataFrame, edges: pd.DataFrame,
                   by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Critique diagnostics over routed edges, pooled within ``by``.

    Columns ``edges`` (routed critique edges), ``decisions`` (delivered critiques with an
    ACCEPT/REJECT decision), ``acceptance`` (share ACCEPT among ``decisions``),
    ``cross_answer`` (share of edges whose source answered differently from its target when
    the critique was written: canonical answers of round r-1) and ``source_confidence``
    (mean of (c - 1) / 4, the source's confidence c on the 1..5 scale mapped to [0, 1]).
    Groups without critiques are absent.

    >>> deb = pd.DataFrame({"debate": [0], "model": "m", "dataset": "d", "method": "pear"})
    >>> e = pd.DataFrame({"debate": 0, "delivered": True, "decision": ["ACCEPT", "REJECT", None],
    ...     "cross_answer": [True, False, True], "source_confidence": [5, 3, 1]})
    >>> out = critique_rates(deb, e)[["acceptance", "cross_answer", "source_confidence"]]
    >>> out.round(3).values.tolist()
    [[0.5, 0.667, 0.5]]
    """
    by = list(by)
    decided = edges["delivered"].to_numpy(bool) & edges["decision"].notna().to_numpy()
    accepted = decided & (edges["decision"].astype(object) == "ACCEPT").to_numpy()
    conf = ((edges["source_confidence"].to_numpy(float) - CONFIDENCE_MIN)
            / (CONFIDENCE_MAX - CONFIDENCE_MIN))
    per = _per_debate(debates, edges["debate"].to_numpy(np.int64), {
        "edges": np.ones(len(edges)), "decisions": decided, "accepted": accepted,
        "cross": edges["cross_answer"].to_numpy(float), "conf": conf})
    keys = [debates[k].reset_index(drop=True) for k in by]
    s = per.drop(columns="debate").groupby(keys, sort=False).sum()
    s = s[s["edges"] > 0]
    out = pd.DataFrame({"edges": s["edges"].astype(int),
                        "decisions": s["decisions"].astype(int),
                        "acceptance": s["accepted"] / s["decisions"].replace(0, np.nan),
                        "cross_answer": s["cross"] / s["edges"],
                        "source_confidence": s["conf"] / s["edges"]}).reset_index()
    out.columns = [*by, *out.columns[len(by):]]
    return _sorted(out, by)


def influence_entropy(influence: Sequence[float] | np.ndarray) -> float:
    """Normalised entropy H(rho / sum rho) / log n of an influence vector of n agents.

    1 = influence spread evenly, 0 = one agent holds it all.  An all-zero vector (no
    critique ever accepted) and a single agent give 0 by convention.

    >>> influence_entropy([0.2] * 5), influence_entropy([0, 0, 0]), influence_entropy([0, 1])
    (1.0, 0.0, 0.0)
    """
    rho = np.asarray(influence, dtype=float)
    return float(_entropies(np.zeros(rho.size, dtype=np.int64), rho, 1)[0])


def _entropies(codes: np.ndarray, rho: np.ndarray, size: int) -> np.ndarray:
    """Normalised entropy of each debate's influence vector (the rows with code i)."""
    if (rho < 0).any():
        raise ValueError(f"influence must be non-negative, got {rho[rho < 0][:5].tolist()}")
    n = np.bincount(codes, minlength=size)
    total = np.bincount(codes, weights=rho, minlength=size)
    p = rho / np.where(total[codes] > 0, total[codes], 1.0)
    plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    h = -np.bincount(codes, weights=plogp, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where((n > 1) & (total > 0), h / np.log(np.maximum(n, 2)), 0.0)
    return np.clip(out, 0.0, 1.0) + 0.0  # + 0.0: no negative zero


def mean_influence_entropy(debates: pd.DataFrame, agent_rounds: pd.DataFrame,
                           by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Mean over debates of the normalised entropy of the final influence vector (the
    agents' influence after the last round, :func:`influence_entropy`).

    Debates without debate rounds have no influence update; their vote weighs every answer
    equally, so they count as uniform influence: 0 for a single answer (``cot``), 1 for
    several (``cot_sc``), as in the study's diagnostics.  Column ``influence_entropy``.
    """
    by = list(by)
    keys = debates["debate"].to_numpy(np.int64)
    last = np.zeros(int(max(keys.max(initial=-1),
                            agent_rounds["debate"].max() if len(agent_rounds) else -1)) + 1,
                    dtype=np.int64)
    last[keys] = debates["rounds"].to_numpy(np.int64)
    codes = agent_rounds["debate"].to_numpy(np.int64)
    final = agent_rounds["round"].to_numpy(np.int64) == last[codes]
    rho = agent_rounds["influence"].to_numpy(float)
    ent = _entropies(codes[final], np.nan_to_num(rho[final]), len(last))[keys]
    # no influence recorded (imported debates: no router): no entropy (NaN)
    recorded = np.bincount(codes[final], weights=~np.isnan(rho[final]), minlength=len(last))

    kinds = _kinds(debates["method"].unique())
    routed = debates["method"].isin([m for m, k in kinds.items()
                                     if k in ("fixed", "routed", "plugin")]).to_numpy() & \
        (debates["rounds"].to_numpy() != 0)
    single = debates["method"].isin([m for m, k in kinds.items() if k == "single"]).to_numpy() \
        | (debates["n_agents"].to_numpy() <= 1)
    value = np.where(routed, ent, np.where(single, 0.0, 1.0))
    value = np.where((recorded[keys] > 0) | single, value, np.nan)
    out = pd.Series(value).groupby([debates[k].reset_index(drop=True) for k in by],
                                   sort=False).mean()
    out = out.rename("influence_entropy").reset_index()
    out.columns = [*by, "influence_entropy"]
    return _sorted(out, by)


def diagnostics(debates: pd.DataFrame, agent_rounds: pd.DataFrame, edges: pd.DataFrame,
                by: Sequence[str] = GROUP) -> pd.DataFrame:
    """The study's trajectory diagnostics within ``by``: ``w2r, r2w, net`` (per query, the
    study's definition), ``acceptance, cross_answer, source_confidence,
    influence_entropy`` in the study's column order, then the other definitions of the
    update rates (``*_pooled``, ``*_endpoints``); see :func:`update_rates`,
    :func:`critique_rates`, :func:`mean_influence_entropy`.  Methods without debate rounds
    get 0 for the update rates and NaN for the critique columns."""
    by = list(by)
    base = debates[by].drop_duplicates()
    upd = update_rates(debates, agent_rounds, by)[[*by, *UPDATE_RATES]]
    crit = critique_rates(debates, edges, by)[[*by, *CRITIQUE_RATES]]
    out = (base.merge(upd, on=by, how="left").merge(crit, on=by, how="left")
           .merge(mean_influence_entropy(debates, agent_rounds, by), on=by, how="left"))
    cols = [*by, *DIAGNOSTICS, *UPDATE_RATES[3:]]
    return _sorted(out[cols], by)


def macro_average(df: pd.DataFrame, by: Sequence[str] = ("method",)) -> pd.DataFrame:
    """Unweighted mean of every numeric column over the rows sharing ``by`` (the study's
    "averaged over settings"), NaN skipped.

    >>> macro_average(pd.DataFrame({"method": ["a", "a"], "x": [0.2, 0.4]}))["x"].tolist()
    [0.30000000000000004]
    """
    num = [c for c in df.select_dtypes("number").columns if c not in by]
    return _sorted(df.groupby(list(by))[num].mean().reset_index(), by)


def costs(debates: pd.DataFrame, by: Sequence[str] = GROUP) -> pd.DataFrame:
    """Cost per example (per debate): ``tokens_per_example`` (prompt + completion),
    ``prompt_tokens, completion_tokens, cached_tokens`` (means; cached is part of prompt),
    ``calls_per_example``, ``parse_failure_rate`` (parse failures / calls),
    ``truncation_rate`` (calls stopped at the token budget / calls; NaN where the records
    predate that field) and ``n_debates``."""
    g = debates.groupby(list(by))
    calls = g["calls"].sum().replace(0, np.nan)
    if "truncated_calls" in debates:
        known = debates["truncated_calls"].notna()
        trunc = (debates["truncated_calls"].astype(float).where(known, 0.0)
                 .groupby([debates[k] for k in by]).sum())
        called = debates["calls"].where(known, 0).groupby([debates[k] for k in by]).sum()
        truncation = (trunc / called.replace(0, np.nan)).where(
            known.groupby([debates[k] for k in by]).any())
    else:
        truncation = pd.Series(np.nan, index=calls.index)
    out = pd.DataFrame({
        "tokens_per_example": g["tokens"].mean(), "prompt_tokens": g["prompt_tokens"].mean(),
        "completion_tokens": g["completion_tokens"].mean(),
        "cached_tokens": g["cached_tokens"].mean(), "calls_per_example": g["calls"].mean(),
        "parse_failure_rate": g["parse_failures"].sum() / calls,
        "truncation_rate": truncation.astype(float), "n_debates": g.size()})
    return _sorted(out.reset_index(), by)


def best_fixed(accuracy: Any) -> str | None:
    """The best fixed topology: of the :data:`~pear.core.methods.FIXED_TOPOLOGIES` that
    ``accuracy`` (method -> accuracy: a mapping or a Series) holds a number for (NaN = not
    run), the one of highest accuracy, the first in that order on ties; None when none.

    >>> best_fixed({"pear": 0.9, "clique": 0.7, "ring": 0.72, "star": float("nan")})
    'ring'
    >>> best_fixed({"pear": 0.9}) is None
    True
    """
    known = [(m, float(accuracy[m])) for m in FIXED_TOPOLOGIES
             if m in accuracy and not np.isnan(accuracy[m])]
    return max(known, key=lambda item: item[1], default=(None,))[0]


def gains(acc: pd.DataFrame, method: str = "pear", against: str = "best_fixed") -> pd.DataFrame:
    """Accuracy gain of ``method`` over a reference per (model, dataset) setting, in points.

    ``against`` is a method name or ``"best_fixed"``: the best of the fixed topologies
    (clique, star, chain, ring) present in that setting.  Columns ``model, dataset,
    reference, reference_accuracy, accuracy, gain`` with gain = 100 (acc - ref).

    >>> a = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": ["pear", "clique", "ring"],
    ...                   "accuracy": [0.75, 0.70, 0.72]})
    >>> gains(a)[["reference", "gain"]].to_dict("records")
    [{'reference': 'ring', 'gain': 3.0}]
    """
    table = acc.pivot_table(index=["model", "dataset"], columns="method", values="accuracy")
    if method not in table:
        raise ValueError(f"method {method!r} has no accuracy in the table")
    if against == "best_fixed":
        fixed = [m for m in FIXED_TOPOLOGIES if m in table]
        if not fixed:
            raise ValueError(f"no fixed topology ({', '.join(FIXED_TOPOLOGIES)}) in the table")
        name = table.apply(best_fixed, axis=1).dropna()
        ref = pd.Series([table.at[i, m] for i, m in name.items()], index=name.index,
                        dtype=float)
    elif against in table:
        ref, name = table[against], pd.Series(against, index=table.index)
    else:
        raise ValueError(f"reference {against!r} has no accuracy in the table")
    out = pd.DataFrame({"reference": name, "reference_accuracy": ref, "accuracy": table[method]})
    out = out.dropna(subset=["reference_accuracy", "accuracy"])
    out["gain"] = (100 * (out["accuracy"] - out["reference_accuracy"])).round(10)
    return _sorted(out.reset_index(), ["model", "dataset"])


def gain_summary(gain_df: pd.DataFrame) -> pd.DataFrame:
    """Mean gain per dataset, per model and overall, as the study's text quotes them:
    columns ``level`` (dataset / model / overall), ``key``, ``gain``, ``n_settings``."""
    parts = []
    for level in ("dataset", "model"):
        g = gain_df.groupby(level)["gain"].agg(gain="mean", n_settings="size").reset_index()
        parts.append(_sorted(g, [level]).rename(columns={level: "key"}).assign(level=level))
    parts.append(pd.DataFrame({"level": ["overall"], "key": ["all"],
                               "gain": [gain_df["gain"].mean()], "n_settings": [len(gain_df)]}))
    return pd.concat(parts, ignore_index=True)[["level", "key", "gain", "n_settings"]]


def gains_versus(acc: pd.DataFrame, method: str = "pear",
                 references: Sequence[str] = ("best_fixed", "random", *FIXED_TOPOLOGIES)
                 ) -> pd.DataFrame:
    """Mean gain (points) of ``method`` over each reference present: ``reference, gain,
    n_settings``."""
    present = set(acc["method"])
    rows = [{"reference": r, "gain": (g := gains(acc, method, r))["gain"].mean(),
             "n_settings": len(g)} for r in references
            if r == "best_fixed" and present & set(FIXED_TOPOLOGIES) or r in present]
    return pd.DataFrame(rows, columns=["reference", "gain", "n_settings"])


def pareto_front(tokens: Sequence[float], accuracy: Sequence[float]) -> np.ndarray:
    """Boolean mask of the Pareto-optimal points: no other point has at most the tokens and
    at least the accuracy, better in one.  Points with equal (tokens, accuracy) tie as optimal.

    >>> pareto_front([800, 3100, 24800, 32300], [0.55, 0.59, 0.68, 0.75]).tolist()
    [True, True, True, True]
    >>> pareto_front([1, 2, 3], [0.5, 0.4, 0.6]).tolist()
    [True, False, True]
    """
    t, a = np.asarray(tokens, dtype=float), np.asarray(accuracy, dtype=float)
    if t.shape != a.shape:
        raise ValueError(f"tokens and accuracy differ in shape: {t.shape} vs {a.shape}")
    no_worse = (t[None, :] <= t[:, None]) & (a[None, :] >= a[:, None])
    better = (t[None, :] < t[:, None]) | (a[None, :] > a[:, None])
    return ~(no_worse & better).any(axis=1)


def paired(debates: pd.DataFrame, method_a: str, method_b: str) -> pd.DataFrame:
    """0/1 correctness of two methods on the same (model, dataset, seed, question_id):
    columns ``model, dataset, seed, question_id, correct_a, correct_b`` (inner join), the
    input of :func:`pear.analysis.stats.mcnemar_table` and :func:`pear.analysis.stats.significance`."""
    keys = ["model", "dataset", "seed", "question_id"]
    sides = []
    for name, suffix in ((method_a, "a"), (method_b, "b")):
        part = debates.loc[debates["method"] == name, [*keys, "correct"]]
        if part.empty:
            raise ValueError(f"no debates of method {name!r}")
        if part.duplicated(keys).any():
            raise ValueError(f"method {name!r} has several debates per question; "
                             "select one config_hash first")
        sides.append(part.rename(columns={"correct": f"correct_{suffix}"}))
    out = sides[0].merge(sides[1], on=keys)
    out[["correct_a", "correct_b"]] = out[["correct_a", "correct_b"]].astype(int)
    return _sorted(out, keys)
