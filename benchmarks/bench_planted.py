"""Planted twins at the published extremes (:mod:`pear.populations.planted`): for each
extreme and run size, the planted run's statistics (change rate, W2R, R2W, vote gain), the
split-half check of a twin fitted on half of it (statistics inside / defined, the vote gain),
and the fit's time.

    python benchmarks/bench_planted.py [--sizes 50,100,250] [--replicates 10] [--extremes ...] [--prior-sd X]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pear.populations import split_half, planted, twin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,100,250")
    ap.add_argument("--replicates", type=int, default=10)
    ap.add_argument("--extremes", default=",".join(planted.EXTREMES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prior-sd", type=float, default=None,
                    help="one prior spread for every effect (default: the shipped prior)")
    a = ap.parse_args()
    prior = twin.Prior({k: a.prior_sd for k in twin.EFFECTS}) if a.prior_sd \
        else twin.load_prior()
    print(f"prior sd: {prior.sd}")
    head = ("extreme", "debates", "change", "w2r", "r2w", "gain", "twin inside", "twin gain",
            "base inside", "fit s")
    print(" | ".join(head))
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.extremes.split(","):
            for n in map(int, a.sizes.split(",")):
                run = planted.planted_run(name, n, Path(tmp) / f"{name}-{n}", seed=a.seed)
                t0 = time.perf_counter()
                sh = split_half.split_half(run, prior=prior, replicates=a.replicates,
                                        seed=a.seed, base="grounded")
                sec = time.perf_counter() - t0
                real = {s["statistic"]: s for s in sh.twin_check.statistics}
                row = sh.row()

                def f(x: object) -> str:
                    return "n/a" if x is None else f"{x:.3f}"
                print(" | ".join([name, str(n), f(real["change_rate"]["real"]),
                                  f(real["w2r"]["real"]), f(real["r2w"]["real"]),
                                  f(real["vote_gain"]["real"]), row["twin"],
                                  f(row["twin_gain"]), row["base"],
                                  f"{sh.twin.seconds:.1f} (check {sec - sh.twin.seconds:.1f})"]),
                      flush=True)


if __name__ == "__main__":
    main()
