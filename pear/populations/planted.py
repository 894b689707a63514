"""Planted twins at the published extremes: populations whose run-level effects are known,
debates simulated from them under Du et al.'s protocol (3 agents answering at once, hearing each
other's previous answers, 2 debate rounds, a plurality of the last answers), written as Du's
files and imported (:func:`planted_run`), so that a twin fitted on such a run
(:func:`pear.populations.twin.fit_twin`) can be held to what was planted.

The extremes (:data:`EXTREMES`) are those real debates reach (``data/real-debates/
published-dynamics.md``): a *stubborn* strong model (answers change under 2% of the time), a
*flippy* small one on four options (R2W above 0.6), a *strong-gain* debater (the vote gains
about +0.3: wrong answers are slips that a right answer, heard or found, fixes) and the
*ceiling* (every agent right in round 0, and it stays so).  Their effects were set here by
simulation so that their statistics reach those figures (``benchmarks/bench_planted.py``
prints them); they are test instruments, never members of the family.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import numpy as np

from pear.populations import twin
from pear.populations.simcheck import simulate_protocol
from pear.sim.backend import SimulatedBackend
from pear.sim.population import Population, load as load_population
from pear.store.importing import import_files
from pear.store.readers.protocols import Protocol
from pear.tasks.benchmarks import load as load_questions

__all__ = ["Extreme", "EXTREMES", "DU", "population", "planted_run"]

DU = Protocol(name="du", agents=3, rounds=3, order="simultaneous")
"""Du et al.'s protocol: 3 agents, the initial answers and 2 debate rounds."""


@dataclass(frozen=True)
class Extreme:
    """A planted extreme: its name, what it stands for, the dataset its debates are on
    (``gsm8k``: free numbers; ``mmlu``: four lettered options), the agents' ``skill_mean`` and
    the run-level effects (:data:`pear.populations.twin.EFFECTS`; the others 0)."""

    name: str
    describes: str
    dataset: str
    skill_mean: float
    effects: Mapping[str, float]


EXTREMES: dict[str, Extreme] = {e.name: e for e in (
    Extreme("stubborn", "a strong model that changes an answer under 2% of the time", "gsm8k",
            1.0, {"keep": 5.0, "keep_right": 1.0}),
    Extreme("flippy", "a small model on four options that leaves a right answer over 60% of "
            "the time (R2W above 0.6)", "mmlu", -1.0,
            {"keep": -1.5, "keep_right": -1.0, "invent": 0.5}),
    Extreme("strong-gain", "a debater whose vote gains about +0.3: its wrong answers are slips "
            "a right answer heard or found fixes", "gsm8k", -1.5,
            {"keep": -0.5, "keep_right": 2.0, "follow_right": 5.0, "find_right": 5.0}),
    Extreme("ceiling", "a model right in round 0 on every question, and it stays so", "gsm8k",
            8.0, {"keep_right": 3.0}),
)}
"""The planted extremes, by name."""


def population(extreme: Extreme | str, base: str | Population = twin.BASE) -> Population:
    """The planted population of ``extreme``: ``base`` with its effects and skill."""
    e = EXTREMES[extreme] if isinstance(extreme, str) else extreme
    b = load_population(base)
    effects = {k: float(e.effects.get(k, 0.0)) for k in twin.EFFECTS}
    return Population(f"planted-{e.name}", b.params, twin.shifted(b.revision, effects),
                      {"describes": e.describes}).with_params(skill_mean=e.skill_mean)


def _question(dataset: str, i: int) -> tuple[str, str, int]:
    """Question text, gold and options of the ``i``-th planted question of ``dataset``."""
    if dataset == "gsm8k":
        q = load_questions("gsm8k")[i]
        return q.question, str(q.gold), 0
    gold = "ABCD"[int(np.random.default_rng([7, i]).integers(4))]
    return (f"Planted question {i}: which option holds? (A) first (B) second (C) third "
            f"(D) fourth", gold, 4)


def planted_run(extreme: Extreme | str, n: int, out: str | os.PathLike[str], seed: int = 0,
                pop: Population | None = None) -> Path:
    """``n`` debates of ``extreme``'s planted agents (or of ``pop``) under :data:`DU`, written
    as Du et al.'s file ``<out>.json`` and imported into the run directory ``out``."""
    e = EXTREMES[extreme] if isinstance(extreme, str) else extreme
    pop = pop or population(e)
    qs = [_question(e.dataset, i) for i in range(n)]
    key = {(e.dataset, f"q{i}"): gold for i, (_, gold, _) in enumerate(qs)}
    backend = SimulatedBackend(key, seed=seed, n_agents=DU.agents, population=pop)
    rows = {}
    for i, (text, gold, options) in enumerate(qs):
        meta = {"dataset": e.dataset, "question_id": f"q{i}", "n_choices": options}
        history = simulate_protocol(backend, DU, meta, np.random.default_rng([seed, i]))
        said = [[dict((a, ans) for a, ans, _ in rd).get(k, "") for rd in history]
                for k in range(DU.agents)]
        chats = []
        for answers in said:
            chat = [{"role": "user", "content": text}]
            for r, ans in enumerate(answers):
                if r:
                    chat.append({"role": "user", "content": "These are the solutions of the "
                                 "other agents. Update your answer."})
                shown = f"({ans})" if options else ans
                chat.append({"role": "assistant",
                             "content": f"The answer is {shown}." if ans else "I am not sure."})
            chats.append(chat)
        rows[text] = (chats, f"#### {gold}" if not options else gold)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    f = out.with_suffix(".json")
    f.write_text(json.dumps(rows))
    import_files("du", [f], out, dataset=e.dataset,
                 grading=None if e.dataset == "gsm8k" else "letters",
                 model=f"planted-{e.name}")
    return out
