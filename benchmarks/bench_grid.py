"""The runner on the ``sim`` grid with the simulated backend at 0 ms and 1 ms per request.

Prints, for each latency: wall time, the fraction of wall time spent outside the backend
(engine, records, resume bookkeeping), and the number of backend ``generate`` calls and
requests against what running each method separately would need (every method its own
lockstep batch and its own round 0).  ``--n-questions`` and ``--seeds`` shrink the grid
(the full ``sim`` grid at 1 ms per request sleeps for about 45 minutes).
"""
from __future__ import annotations

import argparse
import tempfile
import time

from pear.backends.base import Instrumented
from pear.sim.backend import SimParams, SimulatedBackend
from pear.runs.grid import answer_key, preset
from pear.runs.jobs import jobs
from pear.runs.runner import run


def separate_cost(exp) -> tuple[int, int]:
    """(generate calls, round-0 requests) if every method ran as its own grid."""
    n, r = exp.debate.n_agents, exp.debate.rounds
    calls = requests = 0
    js = jobs(exp)
    per_method: dict[str, int] = {}
    for j in js:
        per_method[j.method.name] = per_method.get(j.method.name, 0) + 1
    for name, count in per_method.items():
        chunks = -(-count // exp.chunk_questions)
        debate = name not in ("cot", "cot_sc")
        calls += chunks * (1 + (2 * r if debate else 0))
        requests += count * (1 if name == "cot" else n)
    return calls, requests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-questions", type=int, default=20)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--full", action="store_true", help="include the full-set runs")
    args = ap.parse_args()
    seeds = tuple(int(s) for s in args.seeds.split(","))
    exp = preset("sim", n_questions=args.n_questions, seeds=seeds,
                 **({} if args.full else {"full_datasets": ()}))
    sep_calls, sep_round0 = separate_cost(exp)
    print(f"grid: {len(jobs(exp))} debates ({len(exp.datasets)} datasets x "
          f"{len(exp.methods)} methods x {len(seeds)} seeds x {args.n_questions} questions)")
    for latency in (0.0, 0.001):
        be = Instrumented(SimulatedBackend(answer_key(exp), params=SimParams(latency_s=latency)))
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            s = run(exp, be, out, progress=False)
            wall = time.perf_counter() - t0
        print(f"latency {latency * 1000:.0f} ms/request: wall {wall:.1f} s, outside the "
              f"backend {1 - be.seconds / wall:.1%}; {s.generate_calls} generate calls "
              f"(separately: {sep_calls}, ratio {s.generate_calls / sep_calls:.2f}x), "
              f"{s.requests} requests")
    print(f"round-0 requests if each method ran separately: {sep_round0}")


if __name__ == "__main__":
    main()
