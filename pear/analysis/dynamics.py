"""Per-round debate dynamics of one run, with bootstrap intervals, and the simulated population
held against them (notebook 17: real debates imported with ``pear import``).

The statistics (:data:`STATISTICS`), per debate then averaged over debates:

- ``agent_acc_first`` / ``agent_acc_last``: share of right agents in round 0 / in the
  debate's last round;
- ``vote_acc_first`` / ``vote_acc_last``: the majority vote right in round 0 / last round;
- ``w2r`` / ``r2w``: the study's per-query rates (:func:`pear.analysis.metrics.update_counts`:
  wrong-at-r-1 agent updates that end right, over the wrong-at-r-1 updates; a debate with
  none has no W2R and is skipped; R2W symmetric);
- ``change_rate``: share of agent updates whose answer (canonical class) changes;
- ``minority_won``: among debates where a correct answer is held by fewer than half of the
  agents in round 0 (:func:`pear.analysis.transcript.debate_flags`), the share whose final
  vote is right.

A statistic that no debate of the run defines (e.g. W2R of a run without rounds, a correct
minority with two agents) is NaN with a note saying why, never an error.  Confidences,
critiques and influence are not used: imported records do not have them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.analysis.metrics import update_counts
from pear.analysis.stats import bootstrap_mean, mcnemar_table
from pear.analysis.transcript import debate_flags

__all__ = ["STATISTICS", "per_debate", "summarize", "round_curve", "first_last_mcnemar",
           "compare", "simulate_like", "Simulated"]

STATISTICS: dict[str, str] = {
    "agent_acc_first": "agent accuracy, round 0",
    "agent_acc_last": "agent accuracy, last round",
    "vote_acc_first": "vote accuracy, round 0",
    "vote_acc_last": "vote accuracy, last round",
    "w2r": "W2R (per query)",
    "r2w": "R2W (per query)",
    "change_rate": "answer-change rate",
    "minority_won": "correct minority won",
}
"""Statistic -> its label in tables and figures, in table order."""

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
    changed = pd.Series((canon[1:] != canon[:-1])[same]).groupby(
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
        "w2r": w2r, "r2w": r2w, "change_rate": changed.to_numpy(float),
        "minority_won": won})


def summarize(per: pd.DataFrame, *, rng: np.random.Generator, n_resamples: int = 2000,
              alpha: float = 0.05) -> pd.DataFrame:
    """Per statistic of :data:`STATISTICS`: ``value`` (mean over the debates that define
    it), its percentile bootstrap interval ``low, high`` over debates
    (:func:`pear.analysis.stats.bootstrap_mean`), ``n`` (debates that define it) and
    ``note`` (why it cannot be computed, else "")."""
    rows = []
    for stat, label in STATISTICS.items():
        x = per[stat].to_numpy(float)
        n = int(np.isfinite(x).sum())
        value, low, high = bootstrap_mean(x, n_resamples, alpha, rng=rng)
        note = "" if n else _UNDEFINED.get(stat, "no debate defines it")
        if n == 1:
            note = "one debate defines it: no interval"
        rows.append({"statistic": stat, "label": label, "value": value, "low": low,
                     "high": high, "n": n, "note": note})
    return pd.DataFrame(rows)


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


def compare(real: pd.DataFrame, sim: pd.DataFrame) -> pd.DataFrame:
    """The two :func:`summarize` tables side by side per statistic with ``inside`` (the
    simulated value lies in the real run's interval; None where either cannot be computed)
    and ``verdict``, one line per statistic."""
    out = real.merge(sim[["statistic", "value", "low", "high", "n", "note"]],
                     on="statistic", suffixes=("_real", "_sim"))
    inside, lines = [], []
    for _, r in out.iterrows():
        if not (math.isfinite(r["value_sim"]) and math.isfinite(r["low_real"])
                and math.isfinite(r["high_real"])):
            inside.append(None)
            why = r["note_real"] or r["note_sim"] or "no interval"
            lines.append(f"{r['label']}: cannot be compared ({why})")
            continue
        ok = bool(r["low_real"] <= r["value_sim"] <= r["high_real"])
        inside.append(ok)
        lines.append(f"{r['label']}: simulated {r['value_sim']:.3f} "
                     f"{'inside' if ok else 'OUTSIDE'} the real interval "
                     f"[{r['low_real']:.3f}, {r['high_real']:.3f}] (real {r['value_real']:.3f})")
    out["inside"] = inside
    out["verdict"] = lines
    return out


@dataclass(frozen=True)
class Simulated:
    """The simulated population's debates in a real run's setting (:func:`simulate_like`)."""

    records: list[dict[str, Any]]
    skill_mean: float
    """The population's ``skill_mean`` after matching (nothing else is changed)."""
    target: float
    """The real run's round-0 agent accuracy that was matched (in expectation)."""
    expected: float
    """The expected round-0 agent accuracy of the matched population on these questions."""
    params: dict[str, Any]


def simulate_like(records: Iterable[Mapping[str, Any]], *, seed: int = 0,
                  params: Any = None, stop: str = "consensus") -> Simulated:
    """The simulated population (:class:`pear.backends.simulated.SimulatedBackend`, its
    calibrated parameters, no refit) debating the same questions in the same setting as
    ``records`` (one run's records, e.g. imported): per debate the same number of agents
    and at most the same rounds, everyone hearing everyone (the ``clique``), the same
    dataset and grader, stopping when the agents agree (``stop``, default ``consensus``: as
    Du et al.'s and DyLAN's debates mostly end; ``none`` runs every round);
    its ``skill_mean`` alone shifted so that its expected round-0 agent accuracy equals the
    records' (so that what differs is the dynamics, not the skill)."""
    import dataclasses
    from pear.backends.simulated import SimParams, SimulatedBackend
    from pear.core.config import DebateConfig
    from pear.core.engine import Engine, Job
    from pear.core.methods import method
    from pear.tasks.benchmarks import DATASETS, Question, get_question
    from pear.tasks.grading import get
    recs = list(records)
    if not recs:
        raise ValueError("no records to simulate the setting of")
    datasets = {r["dataset"] for r in recs}
    if len(datasets) != 1 or next(iter(datasets)) not in DATASETS:
        raise ValueError(f"simulate_like needs one of our datasets ({', '.join(DATASETS)}), "
                         f"got {sorted(datasets)}")
    dataset = next(iter(datasets))
    key = {(dataset, r["question_id"]): r["gold"] for r in recs}
    first = [r["rounds_data"][0]["agents"] for r in recs]
    agents = [(r["question_id"], a["agent"]) for r, ags in zip(recs, first) for a in ags]
    weights = [1.0 / len(ags) for ags in first for _ in ags]  # per debate, as summarize
    target = float(np.mean([np.mean([a["correct"] for a in ags]) for ags in first]))
    base = SimulatedBackend(key, params=params or SimParams(), seed=seed,
                            n_agents=max(r["n_agents"] for r in recs))
    backend = base.matched(dataset, agents, target, weights)
    groups: dict[tuple[int, int], list[Mapping[str, Any]]] = {}
    for r in recs:
        groups.setdefault((r["n_agents"], r["rounds"]), []).append(r)

    def run(be: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for (n, rounds), rs in sorted(groups.items()):
            if n < 2:
                continue
            cfg = DebateConfig(n_agents=n, rounds=max(rounds, 1), k=min(2, n - 1),
                               json_mode=False, stop=stop)  # k: unused by the clique
            engine = Engine(be, cfg, task_for=get)
            jobs = []
            for r in rs:
                try:
                    q = get_question(dataset, r["question_id"])
                except ValueError:  # kept with the file's own gold
                    q = Question(r["question_id"], dataset, "", None, r["gold"], r["gold"],
                                 None)
                jobs.append(Job(q, method("cot_sc" if rounds == 0 else "clique"), r["seed"]))
            out += list(engine.run(jobs))
        return out
    return Simulated(run(backend), backend.params.skill_mean, target,
                     backend.expected_solve_rate(dataset, agents, weights),
                     dataclasses.asdict(backend.params))
