"""Per-round debate dynamics of one run, with bootstrap intervals (notebook 17: real debates
imported with ``pear import``; :mod:`pear.populations.simcheck` holds a simulated population
against them).

The statistics (:data:`STATISTICS`), per debate then averaged over debates:

- ``agent_acc_first`` / ``agent_acc_last``: share of right agents in round 0 / in the
  debate's last round;
- ``vote_acc_first`` / ``vote_acc_last``: the majority vote right in round 0 / last round;
- ``vote_gain``: ``vote_acc_last - vote_acc_first`` per debate (so its bootstrap interval over
  debates is a paired one);
- ``w2r`` / ``r2w``: the study's per-query rates (:func:`pear.analysis.metrics.update_counts`:
  wrong-at-r-1 agent updates that end right, over the wrong-at-r-1 updates; a debate with
  none has no W2R and is skipped; R2W symmetric);
- ``change_rate``: share of agent updates whose answer (canonical class) changes (an answer
  graded right that stays right has not changed, however it is written);
- ``minority_won``: among debates where a correct answer is held by fewer than half of the
  agents in round 0 (:func:`pear.analysis.transcript.debate_flags`), the share whose final
  vote is right.

A statistic that no debate of the run defines (e.g. W2R of a run without rounds, a correct
minority with two agents) is NaN with a note saying why, never an error.  Confidences,
critiques and influence are not used: imported records do not have them.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from pear.analysis.metrics import update_counts
from pear.analysis.stats import bootstrap_mean, mcnemar_table
from pear.analysis.transcript import debate_flags

__all__ = ["NOT_DEFINED", "STATISTICS", "per_debate", "summarize", "round_curve",
           "first_last_mcnemar"]

STATISTICS: dict[str, str] = {
    "agent_acc_first": "agent accuracy, round 0",
    "agent_acc_last": "agent accuracy, last round",
    "vote_acc_first": "vote accuracy, round 0",
    "vote_acc_last": "vote accuracy, last round",
    "vote_gain": "vote gain, last - round 0",
    "w2r": "W2R (per query)",
    "r2w": "R2W (per query)",
    "change_rate": "answer-change rate",
    "minority_won": "correct minority won",
}
"""Statistic -> its label in tables and figures, in table order."""

NOT_DEFINED = "n/a"
"""What a table shows for a value that no debate defines (or a comparison that cannot be made)."""

_UNDEFINED = {
    "w2r": "no debate has an agent wrong before a later round (no rounds after round 0?)",
    "r2w": "no debate has an agent right before a later round (no rounds after round 0?)",
    "change_rate": "no debate has a round after round 0",
    "minority_won": "no debate has a correct answer held by fewer than half of its agents "
                    "in round 0 and a later round (two agents never have such a minority)",
}


def per_debate(debates: pd.DataFrame, agent_rounds: pd.DataFrame,
               rounds: pd.DataFrame) -> pd.DataFrame:
    """One row per debate (``debates`` order) with the per-debate value of each of
    :data:`STATISTICS` (NaN where the debate does not define it), ``n_agents``, ``rounds``.

    >>> deb = pd.DataFrame({"debate": [0], "rounds": [1], "n_agents": [2], "correct": [True]})
    >>> ar = pd.DataFrame({"debate": 0, "agent": [0, 1, 0, 1], "round": [0, 0, 1, 1],
    ...                    "correct": [False, True, True, True], "canonical": list("2333")})
    >>> ro = pd.DataFrame({"debate": 0, "round": [0, 1], "vote_correct": [False, True]})
    >>> per_debate(deb, ar, ro)[["agent_acc_first", "w2r", "change_rate"]].values.tolist()
    [[0.5, 1.0, 0.5]]
    >>> ar["canonical"] = ["2", "0.33", "1/3", "3"]  # a right answer written another way
    >>> per_debate(deb, ar, ro)["change_rate"].tolist()
    [0.5]
    """
    keys = debates["debate"].to_numpy()
    ar = agent_rounds.sort_values(["debate", "agent", "round"])
    last_round = ar.groupby("debate")["round"].transform("max")
    acc = ar.assign(first=ar["round"] == 0, last=ar["round"] == last_round)
    first = acc[acc["first"]].groupby("debate")["correct"].mean().reindex(keys)
    last = acc[acc["last"]].groupby("debate")["correct"].mean().reindex(keys)
    ro = rounds.sort_values(["debate", "round"])
    v_first = ro.groupby("debate")["vote_correct"].first().reindex(keys)
    v_last = ro.groupby("debate")["vote_correct"].last().reindex(keys)
    counts = update_counts(debates, agent_rounds)
    with np.errstate(invalid="ignore", divide="ignore"):
        w2r = np.where(counts["from_wrong"] > 0, counts["w2r_count"] / counts["from_wrong"],
                       np.nan)
        r2w = np.where(counts["from_right"] > 0, counts["r2w_count"] / counts["from_right"],
                       np.nan)
    same = (ar["debate"].to_numpy()[1:] == ar["debate"].to_numpy()[:-1]) & \
        (ar["agent"].to_numpy()[1:] == ar["agent"].to_numpy()[:-1]) & \
        (ar["round"].to_numpy()[1:] == ar["round"].to_numpy()[:-1] + 1)
    canon = ar["canonical"].astype(str).to_numpy()
    ok = ar["correct"].to_numpy(bool)
    # two answers graded right are one answer, however written ("0.33" and "\frac{33}{100}")
    moved = (canon[1:] != canon[:-1]) & ~(ok[1:] & ok[:-1])
    changed = pd.Series(moved[same]).groupby(
        ar["debate"].to_numpy()[1:][same]).mean().reindex(keys)
    flags = debate_flags(debates, agent_rounds)
    r0 = agent_rounds[agent_rounds["round"] == 0].groupby("debate")["correct"].agg(
        ["sum", "size"]).reindex(keys)
    eligible = (debates["rounds"].to_numpy() >= 1) & (r0["sum"].to_numpy(float) > 0) & \
        (r0["sum"].to_numpy(float) < r0["size"].to_numpy(float) / 2)
    won = np.where(eligible, flags["minority_won"].to_numpy(float), np.nan)
    return pd.DataFrame({
        "debate": keys, "n_agents": debates["n_agents"].to_numpy(),
        "rounds": debates["rounds"].to_numpy(),
        "agent_acc_first": first.to_numpy(float), "agent_acc_last": last.to_numpy(float),
        "vote_acc_first": v_first.to_numpy(float), "vote_acc_last": v_last.to_numpy(float),
        "vote_gain": v_last.to_numpy(float) - v_first.to_numpy(float),
        "w2r": w2r, "r2w": r2w, "change_rate": changed.to_numpy(float),
        "minority_won": won})


def summarize(per: pd.DataFrame, *, rng: np.random.Generator, n_resamples: int = 2000,
              alpha: float = 0.05) -> pd.DataFrame:
    """Per statistic of :data:`STATISTICS`: ``value`` (mean over the debates that define
    it), its percentile bootstrap interval ``low, high`` over debates
    (:func:`pear.analysis.stats.bootstrap_mean`; where every debate gives the same value, the
    exact bounds of :func:`_exact_bounds` instead of a zero-width interval), ``n`` (debates
    that define it) and
    ``note`` (why it cannot be computed, else "")."""
    rows = []
    for stat, label in STATISTICS.items():
        x = per[stat].to_numpy(float)
        n = int(np.isfinite(x).sum())
        value, low, high = bootstrap_mean(x, n_resamples, alpha, rng=rng)
        if n >= 2 and low == high:  # every debate alike: no resample differs
            low, high = _exact_bounds(value, n, alpha, _RANGE.get(stat, (0.0, 1.0)))
        note = "" if n else _UNDEFINED.get(stat, "no debate defines it")
        if n == 1:
            note = "one debate defines it: no interval"
        rows.append({"statistic": stat, "label": label, "value": value, "low": low,
                     "high": high, "n": n, "note": note})
    return pd.DataFrame(rows)


_RANGE = {"vote_gain": (-1.0, 1.0)}
"""The range of a statistic whose per-debate values are not in [0, 1]."""


def _exact_bounds(value: float, n: int, alpha: float, bounds: tuple[float, float]
                  ) -> tuple[float, float]:
    """The interval of a statistic on which all ``n`` debates agree (a percentile bootstrap
    has zero width there, though no 95% interval of a rate seen 0 times in n is): ``value``
    plus or minus the exact (Clopper-Pearson) upper bound on the share of debates that could
    differ, ``1 - (alpha/2)**(1/n)`` (about 3.7/n), kept inside the statistic's ``bounds``.

    >>> _exact_bounds(0.0, 100, 0.05, (0.0, 1.0))
    (0.0, 0.0362)
    """
    b = 1.0 - (alpha / 2) ** (1.0 / n)
    return (round(max(bounds[0], value - b), 4), round(min(bounds[1], value + b), 4))


def round_curve(debates: pd.DataFrame, agent_rounds: pd.DataFrame, rounds: pd.DataFrame,
                horizon: int | None = None) -> pd.DataFrame:
    """Agent and vote accuracy after each round 0..``horizon`` (default: the longest
    debate), each debate that ended earlier carrying its last round forward (so every round
    averages the same debates): columns ``round, agent_accuracy, vote_accuracy,
    debates_running`` (debates that really reached the round)."""
    last = int(debates["rounds"].max()) if horizon is None else int(horizon)
    agent = agent_rounds.groupby(["debate", "round"])["correct"].mean().unstack()
    vote = rounds.set_index(["debate", "round"])["vote_correct"].astype(float).unstack()
    cols = range(last + 1)
    agent = agent.reindex(columns=cols).ffill(axis=1)
    vote = vote.reindex(columns=cols).ffill(axis=1)
    running = [int((debates["rounds"] >= r).sum()) for r in cols]
    return pd.DataFrame({"round": list(cols), "agent_accuracy": agent.mean().to_numpy(),
                         "vote_accuracy": vote.mean().to_numpy(),
                         "debates_running": running})


def first_last_mcnemar(per: pd.DataFrame) -> tuple[Any, str]:
    """McNemar's test of the vote's correctness in the last round against round 0 over the
    debates with rounds (:func:`pear.analysis.stats.mcnemar_table`; ``b`` = right only in
    the last round), or None and why it cannot be computed."""
    rows = per[per["rounds"] >= 1]
    if len(rows) < 2:
        return None, "fewer than two debates with a round after round 0"
    return mcnemar_table(rows["vote_acc_last"].to_numpy(int),
                         rows["vote_acc_first"].to_numpy(int))[1], ""
