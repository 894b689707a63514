"""Throughput of the whole engine with the simulated backend.

200 questions x all 14 methods, n=5, R=5 (the paper's protocol) on GSM8K-style questions
with identity canonicalisation: prints debates/second and the share of wall time spent
outside the backend (engine: prompts, parsing, routing, records).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from pear.backends.base import Instrumented
from pear.backends.simulated import SimulatedBackend
from pear.config import METHODS, DebateConfig, method
from pear.engine import Engine, Job


@dataclass(frozen=True)
class Question:
    id: str
    dataset: str
    task: str
    gold: str
    choices: tuple = ()


def main(n_questions: int = 200) -> None:
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


if __name__ == "__main__":
    main()
