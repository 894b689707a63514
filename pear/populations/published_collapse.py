"""A simulated population held against published per-model debate figures
(``pear population published``).

DebateLedger (arXiv 2609.35279; its table CONDITIONAL_COLLAPSE_TABLE.md, as quoted in
``../shared/data/real-debates/published-dynamics.md``) ran 3 agents of one model for 3 debate
rounds on MMLU-Pro, with a majority vote, for 11 models whose round-0 majority accuracy spans
0.28-0.85, and reports per model the *collapse* (among debates whose round-0 majority is right,
the share whose final majority is wrong) and the *recovery* (among those whose round-0 majority
is wrong, the share whose final majority is right).  :func:`check` simulates that setting with a
population's agents, per model, and sets the two shares beside the published ones with their
95% interval (the source's where it gives one, else Wilson's on the counts implied by the
debates and the round-0 accuracy, :data:`PUBLISHED`).

The setting, as simulated (:func:`pear.populations.simcheck.simulate_protocol`, the protocol of an
imported run): a seeded sample of 500 MMLU-Pro questions of our benchmark (10 options), 3 agents
answering at once and
hearing every other agent's previous answer in full, an initial answer and 3 debate rounds, no
early stop, the last round's majority vote (ties at random).  Only the strength is matched: the
agents' round-0 accuracy is set so that the simulated round-0 majority is right as often as the
model's (bisection over :meth:`pear.sim.backend.SimulatedBackend.matched`'s target).  No corpus
fit is fitted on these figures (weight 0 in every fit): :func:`check` is a check across
strength.  The family's ``ledger-*`` members (:func:`match`) are matched to them, one model
each, on both figures at once.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import pear
from pear.populations import twin
from pear.populations.bisection import increasing_root
from pear.populations.simcheck import simulate_protocol
from pear.analysis.stats import wilson
from pear.core.vote import vote
from pear.sim.backend import SimulatedBackend
from pear.sim.population import Population, load
from pear.store.readers.protocols import Protocol
from pear.tasks.benchmarks import load as load_questions

__all__ = ["PUBLISHED", "PROTOCOL", "Figure", "check", "table", "report", "match",
           "members", "MEMBER_QUESTIONS", "MATCHED"]

MATCHED = ("keep", "follow_right", "find_right")
"""The effects a member's two figures set (the others stay 0: not separated by them)."""

SOURCE = ("DebateLedger (arXiv 2609.35279), abc_exp/results/CONDITIONAL_COLLAPSE_TABLE.md "
          "@cf84b4f, as quoted in published-dynamics.md")


@dataclass(frozen=True)
class Figure:
    """One model's published row: debates, round-0 majority accuracy, collapse and recovery
    (shares), and the source's 95% interval of the collapse where it gives one."""

    model: str
    debates: int
    initial: float
    collapse: float
    recover: float
    collapse_ci: tuple[float, float] | None = None

    def collapse_interval(self) -> tuple[float, float]:
        """The source's interval, else Wilson's on the debates whose round-0 vote was right."""
        if self.collapse_ci is not None:
            return self.collapse_ci
        n = round(self.debates * self.initial)
        return wilson(round(self.collapse * n), n)

    def recover_interval(self) -> tuple[float, float]:
        """Wilson's on the debates whose round-0 vote was wrong (the source gives none)."""
        n = round(self.debates * (1 - self.initial))
        return wilson(round(self.recover * n), n)


PUBLISHED: tuple[Figure, ...] = (
    Figure("Claude Sonnet 4.5", 120, 0.775, 0.0215, 0.1111, (0.0059, 0.0751)),
    Figure("Claude Haiku 4.5", 500, 0.822, 0.1119, 0.1910, (0.0850, 0.1461)),
    Figure("GPT-4o-mini", 498, 0.685, 0.0235, 0.1019, (0.0119, 0.0456)),
    Figure("Gemini 2.5 Flash", 200, 0.365, 0.0137, 0.1181),
    Figure("GPT-5.4-mini", 200, 0.715, 0.0070, 0.1754),
    Figure("Gemini 3 Flash", 200, 0.850, 0.0059, 0.0667),
    Figure("Phi-4-mini", 2161, 0.506, 0.1024, 0.1631, (0.0858, 0.1218)),
    Figure("Qwen3-4B", 2161, 0.453, 0.0511, 0.3900),
    Figure("Qwen3-8B", 200, 0.280, 0.0536, 0.4931),
    Figure("Qwen3-32B", 600, 0.587, 0.0739, 0.3911),
    Figure("Llama-3.1-8B", 2003, 0.507, 0.0846, 0.0993, (0.0691, 0.1034)),
)
"""DebateLedger's 11 models (:data:`SOURCE`), shares (the table's percentages / 100)."""

PROTOCOL = Protocol(name="debateledger", agents=3, rounds=4, order="simultaneous",
                    source=SOURCE + ": 3 agents, an initial answer and 3 debate rounds, "
                                    "majority vote")
DATASET = "mmlu_pro"


def _debates(backend: SimulatedBackend, questions: Sequence[Any], seed: int,
             rounds: int | None = None) -> np.ndarray:
    """(round-0 vote right, last vote right) per question, one debate each."""
    proto = PROTOCOL if rounds is None else Protocol(
        name=PROTOCOL.name, agents=PROTOCOL.agents, rounds=rounds, order=PROTOCOL.order)
    out = np.zeros((len(questions), 2), dtype=bool)
    for i, q in enumerate(questions):
        meta = {"dataset": DATASET, "question_id": q.id, "n_choices": len(q.choices)}
        rng = np.random.default_rng([seed, i])
        history = simulate_protocol(backend, proto, meta, rng)
        votes = [vote([a for _, a, _ in rd], rng) == q.gold for rd in history]
        out[i] = votes[0], votes[-1]
    return out


def _backend(pop: Population, questions: Sequence[Any], agent_acc: float, seed: int
             ) -> SimulatedBackend:
    key = {(DATASET, q.id): q.gold for q in questions}
    agents = [(q.id, a) for q in questions for a in range(PROTOCOL.agents)]
    base = SimulatedBackend(key, seed=seed, n_agents=PROTOCOL.agents, population=pop)
    return base.matched(DATASET, agents, agent_acc, [1.0 / PROTOCOL.agents] * len(agents))


def _matched(pop: Population, questions: Sequence[Any], initial: float, seed: int,
             steps: int = 12) -> tuple[SimulatedBackend, float]:
    """The backend whose simulated round-0 majority is right ``initial`` of the time, and the
    agents' round-0 accuracy that gives it (bisection; the majority's accuracy rises with
    the agents')."""
    def majority(agent_acc: float) -> float:
        return _debates(_backend(pop, questions, agent_acc, seed), questions, seed,
                        rounds=1)[:, 0].mean()
    acc = increasing_root(majority, initial, 0.02, 0.98, steps)
    return _backend(pop, questions, acc, seed), acc


def check(population: str | Population = "grounded", replicates: int = 5, seed: int = 0,
          n_questions: int = 500, figures: Sequence[Figure] = PUBLISHED
          ) -> pd.DataFrame:
    """Per model of ``figures``: the published collapse and recovery with their intervals
    beside the simulated ones (``replicates`` simulations of ``n_questions`` MMLU-Pro
    questions, a seeded sample), and whether each lies inside."""
    pop = load(population)
    questions = load_questions(DATASET, n_questions)
    rows = []
    for j, fig in enumerate(figures):
        runs = []
        for k in range(replicates):
            s = seed * 1000 + 100 * j + k
            backend, acc = _matched(pop, questions, fig.initial, s)
            runs.append(_debates(backend, questions, s))
        res = np.concatenate(runs)
        right0, last = res[:, 0], res[:, 1]
        collapse = float((~last[right0]).mean()) if right0.any() else float("nan")
        recover = float(last[~right0].mean()) if (~right0).any() else float("nan")
        c_lo, c_hi = fig.collapse_interval()
        r_lo, r_hi = fig.recover_interval()
        rows.append({"model": fig.model, "debates": fig.debates, "initial": fig.initial,
                     "sim_initial": float(right0.mean()), "agent_acc": acc,
                     "collapse": fig.collapse, "collapse_lo": c_lo, "collapse_hi": c_hi,
                     "sim_collapse": collapse, "collapse_inside": c_lo <= collapse <= c_hi,
                     "recover": fig.recover, "recover_lo": r_lo, "recover_hi": r_hi,
                     "sim_recover": recover, "recover_inside": r_lo <= recover <= r_hi})
    return pd.DataFrame(rows)


MEMBER_QUESTIONS = 600  # our choice: a simulated share's standard error about 2-3 points
"""The MMLU-Pro questions a matched member's figures are simulated on (a seeded sample)."""


def _shares(res: np.ndarray) -> tuple[float, float]:
    """(collapse, recovery) of (round-0 vote right, last vote right) rows."""
    right0, last = res[:, 0], res[:, 1]
    return (float((~last[right0]).mean()) if right0.any() else float("nan"),
            float(last[~right0].mean()) if (~right0).any() else float("nan"))


KEEP_GRID = np.arange(-2.0, 5.5, 1.0)
"""``keep`` values of the matcher's coarse grid (our choice: the matched members' span, -0.7 to
+3.2, with room)."""
PULL_GRID = np.arange(-3.0, 4.5, 1.0)
"""The pull of a right answer's coarse grid values (our choice, likewise)."""
FINE_STEP = 0.25  # our choice: about a tenth of the effects' prior spread
"""The step of the fine grid around the coarse grid's best point (three steps either way)."""


def match(fig: Figure, base: Population, seed: int = 0) -> tuple[Population, dict[str, Any]]:
    """A member matched to ``fig`` on both of its figures: ``base`` with its agents as strong
    as the model's round-0 majority says, ``keep`` (how firmly an agent keeps its answer) and
    the pull of a right answer, heard or found (``follow_right`` and ``find_right`` alike),
    set where the simulated collapse and recovery lie closest to the published ones, in units
    of the published 95% intervals' half-widths.  The search is a grid (:data:`KEEP_GRID` x
    :data:`PULL_GRID`), then a finer one around its best point (:data:`FINE_STEP`), at
    matched seeds: the simulated shares are not monotone in either effect at the other's
    value, so bisecting one effect at a time can end far from both figures.  ``keep``, not
    ``keep_right``: what keeps a strong model's right majority right also keeps its wrong
    agents where they are (published strong models change an answer under 5% of the time,
    right or wrong)."""
    questions = load_questions(DATASET, MEMBER_QUESTIONS)
    _, acc = _matched(base, questions, fig.initial, seed)
    c_lo, c_hi = fig.collapse_interval()
    r_lo, r_hi = fig.recover_interval()
    seen: dict[tuple[float, float], tuple[float, float]] = {}

    def at(keep: float, pull: float) -> Population:
        eff = {k: 0.0 for k in twin.EFFECTS}
        eff.update(keep=keep, follow_right=pull, find_right=pull)
        return Population(f"ledger-{fig.model}", base.params, twin.shifted(base.revision, eff))

    def shares(keep: float, pull: float) -> tuple[float, float]:
        key = (round(float(keep), 3), round(float(pull), 3))
        if key not in seen:
            seen[key] = _shares(_debates(_backend(at(*key), questions, acc, seed),
                                         questions, seed))
        return seen[key]

    def distance(point: tuple[float, float]) -> float:
        c, r = shares(*point)
        return (((c - fig.collapse) / ((c_hi - c_lo) / 2)) ** 2
                + ((r - fig.recover) / ((r_hi - r_lo) / 2)) ** 2)

    best = min(((k, p) for k in KEEP_GRID for p in PULL_GRID), key=distance)
    around = FINE_STEP * np.arange(-3, 4)
    keep, pull = min(((best[0] + a, best[1] + b) for a in around for b in around),
                     key=distance)
    keep, pull = round(float(keep), 3), round(float(pull), 3)
    collapse, recover = shares(keep, pull)
    slug = "".join(c if c.isalnum() else "-" for c in fig.model.lower())
    name = "ledger-" + "-".join(x for x in slug.split("-") if x)
    ease_name, ease = twin.ease_for(base.params, DATASET, acc)
    params = dataclasses.replace(base.params, **{ease_name: ease})
    sources = {f.name: f"the base population {base.name} ({base.fingerprint[:12]})"
               for f in dataclasses.fields(params)}
    sources[ease_name] = (f"the agents' round-0 accuracy ({acc:.4f}) at which the simulated "
                          f"round-0 majority is right {fig.initial:.3f} of the time, as published")
    sources["revision"] = (f"{base.name}'s revision model with keep matched to the "
                           f"published collapse ({fig.collapse:.4f}) and follow_right = "
                           f"find_right to the published recovery ({fig.recover:.4f}); other "
                           "effects 0 (not separated by the figures)")
    c_lo, c_hi = fig.collapse_interval()
    r_lo, r_hi = fig.recover_interval()
    effects = {"keep": keep, "follow_right": pull, "find_right": pull}
    diag = {"base": base.manifest(),
            "effects": {k: {"estimate": effects.get(k, 0.0), "se": None} for k in twin.EFFECTS},
            "debates": MEMBER_QUESTIONS, "round0_accuracy": {DATASET: round(acc, 4)},
            "options": len(questions[0].choices),
            "simulated_collapse": round(collapse, 4), "simulated_recover": round(recover, 4),
            "inside": bool(c_lo <= collapse <= c_hi and r_lo <= recover <= r_hi), "seed": seed}
    info = {"describes": f"{fig.model} on MMLU-Pro, published: {SOURCE} (collapse "
                         f"{fig.collapse:.3f}, recovery {fig.recover:.3f})",
            "sources": sources,
            "fitted_on": [{"file": "data/real-debates/published-dynamics.md",
                           "table": "DebateLedger", "model": fig.model,
                           "initial": fig.initial, "collapse": fig.collapse,
                           "recover": fig.recover, "debates": fig.debates}],
            "code": {"modules": ["pear.populations.published_collapse"],
                     "pear_version": pear.__version__},
            "diagnostics": diag}
    return Population(name, params, at(keep, pull).revision, info), diag


def members(base: str | Population = "grounded", figures: Sequence[Figure] = PUBLISHED,
            seed: int = 0) -> tuple[list[Population], list[str]]:
    """The members matched to ``figures`` whose simulated collapse and recovery both lie
    inside the published intervals, and a line for each that does not."""
    b = load(base)
    kept, left = [], []
    for fig in figures:
        m, d = match(fig, b, seed)
        if d["inside"]:
            kept.append(m)
        else:
            left.append(f"{m.name}: keep {d['effects']['keep']['estimate']:+.2f}, "
                        f"pull {d['effects']['follow_right']['estimate']:+.2f} give collapse "
                        f"{d['simulated_collapse']:.3f} (published {fig.collapse:.3f}) and "
                        f"recovery {d['simulated_recover']:.3f} (published {fig.recover:.3f}): "
                        "left out")
    return kept, left


def table(df: pd.DataFrame) -> str:
    """The check as Markdown: published [95% CI] beside simulated, per model."""
    lines = ["| model | initial (sim.) | collapse [95% CI] | simulated | recovery [95% CI] | "
             "simulated |", "|---|---|---|---:|---|---:|"]
    for r in df.itertuples():
        lines.append(
            f"| {r.model} | {r.initial:.3f} ({r.sim_initial:.3f}) | {r.collapse:.3f} "
            f"[{r.collapse_lo:.3f}, {r.collapse_hi:.3f}] | "
            f"{'' if r.collapse_inside else '**'}{r.sim_collapse:.3f}"
            f"{'' if r.collapse_inside else '**'} | {r.recover:.3f} [{r.recover_lo:.3f}, "
            f"{r.recover_hi:.3f}] | {'' if r.recover_inside else '**'}{r.sim_recover:.3f}"
            f"{'' if r.recover_inside else '**'} |")
    inside = int(df["collapse_inside"].sum() + df["recover_inside"].sum())
    lines.append(f"\n{inside} of {2 * len(df)} simulated shares inside the published 95% "
                 "interval (bold: outside)")
    return "\n".join(lines)


def report(population: str | Population = "grounded", replicates: int = 5, seed: int = 0,
           n_questions: int = 500) -> str:
    """The check (:func:`check`) as ``pear population published`` prints it: a line naming the
    population, the source, the replicates, the questions and the time taken, then
    :func:`table`."""
    t0 = time.perf_counter()
    df = check(population, replicates, seed, n_questions)
    return (f"{load(population).name} against {SOURCE}, {replicates} replicates of "
            f"{len(load_questions(DATASET, n_questions))} MMLU-Pro questions "
            f"({time.perf_counter() - t0:.0f} s)\n\n" + table(df))
