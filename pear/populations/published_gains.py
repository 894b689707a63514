"""Moment-matched twins of models known only from published figures
(``data/real-debates/published-debate-gains.md``): per published row (a model on a task, its
single-agent accuracy and its debate's final vote accuracy under the source's protocol), the
base population (``grounded``) with its agents as strong as the model's single agent and the one
run-level effect ``follow_right`` (how much more a right answer heard pulls) set so that the
simulated debate ends where the published one does.

Only homogeneous debates whose final answer is a plurality vote over the agents' last answers
and whose table gives the single agent's accuracy enter (:data:`ROWS`); the other effects stay
the corpus fit's (published figures do not separate them).  The setting simulated: the source's
agents and rounds, agents answering at once and hearing every other agent's previous answer, a
seeded set of :data:`QUESTIONS` questions of the task's answer space (free numbers, or the
source's number of lettered options), each member's own seed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

import pear
from pear.populations.simcheck import simulate_protocol
from pear.core.hashing import int_seed
from pear.core.vote import vote
from pear.populations import twin
from pear.populations.bisection import increasing_root
from pear.sim.backend import SimulatedBackend
from pear.sim.population import Population, load as load_population
from pear.store.readers.protocols import Protocol

__all__ = ["Row", "ROWS", "QUESTIONS", "SOURCE_FILE", "MATCHED", "simulate_gain", "match",
           "members", "DU_PROFILE", "du_profile"]

MATCHED = ("follow_right",)
"""The effect a member's published figure sets (the others stay 0: not separated by it)."""

SOURCE_FILE = "data/real-debates/published-debate-gains.md"
QUESTIONS = 400  # our choice: the simulated vote's standard error about 1 point per member
DATASET = "published"  # the questions' dataset name in simulation (ease_other)


@dataclass(frozen=True)
class Row:
    """One published row: its number in :data:`SOURCE_FILE`'s main table, source, model, task,
    agents and rounds (generations: the initial answer and the debate rounds), the task's
    options (0: a free answer), single-agent and debate final accuracy (fractions)."""

    number: int
    source: str
    model: str
    task: str
    agents: int
    rounds: int
    options: int
    single: float
    debate: float

    @property
    def name(self) -> str:
        slug = "".join(c if c.isalnum() else "-" for c in f"{self.model}-{self.task}".lower())
        return "published-" + "-".join(p for p in slug.split("-") if p)


_DU = "Du et al. 2023, Tables 1-2 (3 agents, 2 debate rounds, plurality of last answers)"
_CHOI = ("Choi et al. 2025, Table 1 (5 agents, decentralized, T=2 debate rounds, plurality of "
         "last answers; single = mean of 5 runs)")
ROWS: tuple[Row, ...] = (
    Row(1, _DU, "gpt-3.5-turbo-0301", "arithmetic", 3, 3, 0, 0.670, 0.818),
    Row(2, _DU, "gpt-3.5-turbo-0301", "gsm8k", 3, 3, 0, 0.770, 0.850),
    Row(5, _DU, "gpt-3.5-turbo-0301", "mmlu", 3, 3, 4, 0.639, 0.711),
    Row(22, _CHOI, "Qwen2.5-7B-Instruct", "arithmetic", 5, 3, 0, 0.814, 0.760),
    Row(23, _CHOI, "Qwen2.5-7B-Instruct", "gsm8k", 5, 3, 0, 0.8713, 0.8867),
    Row(24, _CHOI, "Qwen2.5-7B-Instruct", "mmlu-pro-med", 5, 3, 4, 0.7868, 0.8051),
    Row(25, _CHOI, "Qwen2.5-7B-Instruct", "mmlu-formal-logic", 5, 3, 4, 0.4905, 0.5556),
    Row(27, _CHOI, "Qwen2.5-7B-Instruct", "commonsenseqa", 5, 3, 5, 0.8153, 0.8567),
    Row(30, _CHOI, "Llama3.1-8B-Instruct", "arithmetic", 5, 3, 0, 0.732, 0.820),
    Row(31, _CHOI, "Llama3.1-8B-Instruct", "gsm8k", 5, 3, 0, 0.7393, 0.7933),
    Row(32, _CHOI, "Llama3.1-8B-Instruct", "mmlu-pro-med", 5, 3, 4, 0.7441, 0.7868),
    Row(33, _CHOI, "Llama3.1-8B-Instruct", "mmlu-formal-logic", 5, 3, 4, 0.3794, 0.5238),
    Row(35, _CHOI, "Llama3.1-8B-Instruct", "commonsenseqa", 5, 3, 5, 0.6767, 0.7267),
)
"""The rows of :data:`SOURCE_FILE`'s main table that make a member (numbers as printed)."""


def _key(row: Row, seed: int) -> dict[tuple[str, str], str]:
    rng = np.random.default_rng(int_seed("published", row.name, seed, nbytes=4))
    if row.options:
        golds = [chr(65 + int(i)) for i in rng.integers(0, row.options, QUESTIONS)]
    else:
        golds = [str(int(g)) for g in rng.integers(2, 1000, QUESTIONS)]
    return {(DATASET, f"q{i}"): g for i, g in enumerate(golds)}


def simulate_gain(pop: Population, row: Row, seed: int = 0) -> tuple[float, float]:
    """(round-0 agent accuracy, final vote accuracy) of ``pop``'s agents, matched to the row's
    single-agent accuracy, in the row's setting."""
    key = _key(row, seed)
    agents = [(q, a) for (_, q) in key for a in range(row.agents)]
    be = SimulatedBackend(key, seed=seed, n_agents=row.agents, population=pop).matched(
        DATASET, agents, row.single)
    proto = Protocol(name=row.name, agents=row.agents, rounds=row.rounds, order="simultaneous")
    first, last = [], []
    for i, (ds, q) in enumerate(key):
        rng = np.random.default_rng([seed, i])
        hist = simulate_protocol(be, proto, {"dataset": ds, "question_id": q,
                                             "n_choices": row.options}, rng)
        first.append(np.mean([ok for _, _, ok in hist[0]]))
        last.append(vote([a for _, a, _ in hist[-1]], rng) == key[(ds, q)])
    return float(np.mean(first)), float(np.mean(last))


DU_PROFILE = ("change_rate", "w2r", "r2w", "vote_gain")
"""What :func:`du_profile` reports of a population under Du et al.'s protocol."""


def du_profile(pop: Population, single: float, options: int = 0, seed: int = 0,
               questions: int = 300) -> dict[str, float]:
    """``pop``'s debates under Du et al.'s protocol (3 agents, 2 debate rounds, answering at
    once) on ``questions`` seeded questions of its answer space (``options`` letters, 0: free
    numbers), its agents as strong as ``single`` in round 0: the change rate, W2R, R2W
    (per query) and vote gain (last round - round 0), for ``pear population family list``."""
    import pandas as pd
    from pear.populations import debate_statistics
    row = Row(0, "du-profile", pop.name, "profile", 3, 3, options, single, single)
    key = dict(list(_key(row, seed).items())[:questions])
    agents = [(q, a) for (_, q) in key for a in range(row.agents)]
    be = SimulatedBackend(key, seed=seed, n_agents=row.agents, population=pop).matched(
        DATASET, agents, min(max(single, 0.02), 0.98))
    proto = Protocol(name="du", agents=3, rounds=3, order="simultaneous")
    deb, ar, ro = [], [], []
    for i, (ds, q) in enumerate(key):
        rng = np.random.default_rng([seed, i])
        hist = simulate_protocol(be, proto, {"dataset": ds, "question_id": q,
                                             "n_choices": options}, rng)
        for r, rd in enumerate(hist):
            ar += [(i, a, r, ok, ans) for a, ans, ok in rd]
            ro.append((i, r, vote([ans for _, ans, _ in rd], rng) == key[(ds, q)]))
        deb.append((i, len(hist) - 1, 3, ro[-1][2]))
    per = debate_statistics.per_debate(
        pd.DataFrame(deb, columns=["debate", "rounds", "n_agents", "correct"]),
        pd.DataFrame(ar, columns=["debate", "agent", "round", "correct", "canonical"]),
        pd.DataFrame(ro, columns=["debate", "round", "vote_correct"]))
    return {k: round(float(np.nanmean(per[k].to_numpy(float))), 4) for k in DU_PROFILE}


def match(row: Row, base: Population, seed: int = 0, steps: int = 10
          ) -> tuple[Population, dict[str, Any]]:
    """The member of ``row``: ``base`` with ``follow_right`` set by bisection in [-4, 6] so
    that the simulated final vote accuracy is the published one (it rises with the effect)."""
    def at(effect: float) -> Population:
        effects = {k: 0.0 for k in twin.EFFECTS}
        effects["follow_right"] = effect
        return Population(row.name, base.params, twin.shifted(base.revision, effects))
    effect = round(increasing_root(lambda x: simulate_gain(at(x), row, seed)[1], row.debate,
                                   -4.0, 6.0, steps), 3)
    first, final = simulate_gain(at(effect), row, seed)
    name, ease = twin.ease_for(base.params, DATASET, row.single)
    params = dataclasses.replace(base.params, **{name: ease})
    member = at(effect)
    sources = {f.name: f"the base population {base.name} ({base.fingerprint[:12]})"
               for f in dataclasses.fields(params)}
    sources[name] = f"the published single-agent accuracy ({row.single:.4f})"
    sources["revision"] = (f"{base.name}'s revision model with follow_right matched so that "
                           f"the simulated debate's final vote is the published "
                           f"{row.debate:.4f} (other effects 0: not separated by the figures)")
    info = {"describes": f"{row.model} on {row.task}, published: {row.source}, row {row.number}",
            "sources": sources,
            "fitted_on": [{"file": SOURCE_FILE, "row": row.number, "single": row.single,
                           "debate": row.debate, "agents": row.agents, "rounds": row.rounds}],
            "code": {"modules": ["pear.populations.published_gains"],
                     "pear_version": pear.__version__},
            "diagnostics": {"base": base.manifest(),
                            "effects": {k: {"estimate": effect if k == "follow_right" else 0.0,
                                            "se": None} for k in twin.EFFECTS},
                            "debates": QUESTIONS, "simulated_single": round(first, 4),
                            "simulated_debate": round(final, 4), "seed": seed}}
    return Population(row.name, params, member.revision, info), info["diagnostics"]


def members(base: str | Population = twin.BASE, rows: tuple[Row, ...] = ROWS, seed: int = 0
            ) -> list[Population]:
    """Every published member."""
    b = load_population(base)
    return [match(r, b, seed)[0] for r in rows]
