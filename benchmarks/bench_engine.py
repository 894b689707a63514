"""The engine on the simulated backend: throughput, early stopping, and one adversarial agent.

1. Throughput: 200 synthetic GSM8K-style questions x all 14 methods, n=5, R=5 (the paper's
   protocol) with identity canonicalisation: debates/second and the share of wall time spent
   outside the backend (engine: prompts, parsing, routing, records).
2. Early stopping: 200 benchmark questions (50 per dataset, graded by :mod:`pear.tasks.grading`) x the
   12 debate methods, R=5: requests (calls) and tokens with ``--stop consensus`` and
   ``stable:2`` as a fraction of the full protocol (``none``), and the accuracy difference in
   points (issue 14's goal: <= 0.6x the tokens at <= 1 point accuracy loss).
3. Robustness: Clique, Ring, Random and PEAR with no adversary vs one adversarial agent.  The
   current simulated population gives agents different skills by index, so the adversary takes
   each of the 5 positions in turn and the accuracy is averaged over the positions.

Every run is seeded (run seed 0, simulator seed 0, the simulator's default parameters), so
the figures repeat exactly; only the timings of part 1 vary.

    PYTHONPATH=$PWD python benchmarks/bench_engine.py [--questions 200] [--parts 1,2,3]
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any, Sequence

from pear.backends.base import Instrumented
from pear.sim.backend import SimulatedBackend
from pear.catalog.labels import METHOD_LABELS
from pear.core.config import DebateConfig
from pear.core.methods import DEBATE_METHODS, METHODS
from pear.core.methods import method
from pear.core.engine import Engine, Job

ROBUSTNESS_METHODS = ("clique", "ring", "random", "pear")


@dataclass(frozen=True)
class Question:
    id: str
    dataset: str
    question: str
    gold: str
    choices: tuple = ()


def throughput(n_questions: int) -> None:
    qs = [Question(f"q{i:03d}", "gsm8k", f"Compute {i} + 17.", str(i + 17))
          for i in range(n_questions)]
    backend = Instrumented(SimulatedBackend({(q.dataset, q.id): q.gold for q in qs}))
    engine = Engine(backend, DebateConfig())
    jobs = [Job(q, method(m), 0) for q in qs for m in METHODS]
    t0 = time.perf_counter()
    n = sum(1 for _ in engine.run(jobs))
    wall = time.perf_counter() - t0
    print(f"{n} debates ({n_questions} questions x {len(METHODS)} methods, n=5, R=5) in "
          f"{wall:.1f} s: {n / wall:.0f} debates/s; {engine.requests} requests in "
          f"{engine.generate_calls} backend calls")
    print(f"time inside the simulated backend {backend.seconds / wall:.0%}, outside (engine) "
          f"{1 - backend.seconds / wall:.0%}")


def benchmark_questions(n_questions: int) -> list[Any]:
    """``n_questions`` seeded benchmark questions, spread evenly over the four datasets."""
    from pear.tasks.benchmarks import DATASETS, load
    per = max(1, n_questions // len(DATASETS))
    return [q for ds in DATASETS for q in load(ds, n=per, seed=0)]


def simulate(questions: Sequence[Any], methods: Sequence[str], debate: DebateConfig):
    """(engine, records) of one seeded simulated run."""
    from pear.tasks import grading as tasks
    backend = SimulatedBackend({(q.dataset, q.id): q.gold for q in questions},
                               n_agents=debate.n_agents)
    engine = Engine(backend, debate, task_for=tasks.get)
    records = list(engine.run([Job(q, method(m), 0) for q in questions for m in methods]))
    return engine, records


def _accuracy(records: Sequence[dict], methods: Sequence[str] | None = None) -> float:
    keep = [r for r in records if methods is None or r["method"] in methods]
    return sum(r["correct"] for r in keep) / len(keep)


def early_stopping(questions: Sequence[Any]) -> None:
    print(f"\nearly stopping: {len(questions)} questions x {len(DEBATE_METHODS)} debate methods,"
          f" n=5, R=5, simulated")
    print(f"{'stop':10s} {'calls':>9s} {'x full':>7s} {'tokens':>12s} {'x full':>7s} "
          f"{'accuracy':>9s} {'diff (pts)':>11s} {'mean rounds':>12s}")
    full = None
    for stop in ("none", "consensus", "stable:2"):
        engine, recs = simulate(questions, DEBATE_METHODS, DebateConfig(stop=stop))
        calls, tokens, acc = engine.requests, engine.tokens, _accuracy(recs)
        rounds = sum(r["rounds"] for r in recs) / len(recs)
        full = full or (calls, tokens, acc)
        print(f"{stop:10s} {calls:9d} {calls / full[0]:7.2f} {tokens:12d} {tokens / full[1]:7.2f} "
              f"{acc:9.3f} {100 * (acc - full[2]):+11.1f} {rounds:12.2f}")


def robustness(questions: Sequence[Any], n_agents: int = 5) -> None:
    print(f"\none adversarial agent: {len(questions)} questions, n={n_agents}, R=5, simulated "
          f"(adversary at each position 1..{n_agents}, averaged)")
    _, honest = simulate(questions, ROBUSTNESS_METHODS, DebateConfig())
    adversarial: list[dict] = []
    for pos in range(n_agents):
        roles = tuple("adversarial" if i == pos else "honest" for i in range(n_agents))
        adversarial += simulate(questions, ROBUSTNESS_METHODS, DebateConfig(roles=roles))[1]
    print(f"{'method':8s} {'no adversary':>13s} {'1 adversary':>12s} {'diff (pts)':>11s}")
    for m in ROBUSTNESS_METHODS:
        a, b = _accuracy(honest, [m]), _accuracy(adversarial, [m])
        print(f"{METHOD_LABELS[m]:8s} {a:13.3f} {b:12.3f} {100 * (b - a):+11.1f}")


def main(n_questions: int = 200, parts: Sequence[int] = (1, 2, 3)) -> None:
    if 1 in parts:
        throughput(n_questions)
    questions = benchmark_questions(n_questions) if {2, 3} & set(parts) else []
    if 2 in parts:
        early_stopping(questions)
    if 3 in parts:
        robustness(questions)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=200, help="questions (default 200)")
    ap.add_argument("--parts", default="1,2,3", help="comma-separated parts to run")
    a = ap.parse_args()
    main(a.questions, tuple(int(p) for p in a.parts.split(",")))
