"""Twins and the family held out of sample, on every licensed run (prints its tables).

1. Split-half: each DyLAN subject / MMLU team's twin fitted on half its questions
   (``pear population fit``'s model and the shipped prior), checked on the other half beside
   grounded.
2. The family on runs it did not fit: for each DyLAN member, every *other* member checked on
   that member's debates; per statistic whether the family's range meets the real interval.
3. Fit and check times.

    .venv/bin/python benchmarks/bench_twins.py [--replicates K]
"""
from __future__ import annotations

import argparse
import time

import pandas as pd

from pear.analysis.report import _markdown
from pear.store.import_cache import corpus_run, mmlu_runs
from pear.populations import family, split_half, reading


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=5)
    a = ap.parse_args()
    ms = family.members(corpus_run(), mmlu_runs())
    rows, fit_s, check_s = [], [], []
    for m in ms:
        t0 = time.perf_counter()
        sh = split_half.split_half(m.runs[0], keep=m.keep, name=m.name, replicates=a.replicates)
        rows.append(sh.row())
        fit_s.append(sh.twin.seconds)
        check_s.append(time.perf_counter() - t0 - sh.twin.seconds)
    df = pd.DataFrame(rows)
    print("## Split-half: twin fitted on half the questions, checked on the other half\n")
    print(_markdown(df.set_index("run").round(3)))
    for who in ("twin", "base"):
        ins = [tuple(map(int, x.split("/"))) for x in df[who]]
        print(f"\n{who}: {sum(i for i, _ in ins)} of {sum(d for _, d in ins)} statistics inside")
    print(f"vote gain inside (twin): {int(df['gain_inside'].sum())} of {len(df)} runs")
    print(f"fit per twin: median {pd.Series(fit_s).median():.2f} s; check (twin and base, "
          f"{a.replicates} replicates): median {pd.Series(check_s).median():.1f} s")

    fam = family.load()
    out = []
    t0 = time.perf_counter()
    for m in ms:
        others = [p for p in fam if p.name != m.name]
        recs = [r for r in reading.records(m.runs) if m.keep is None or m.keep(r)]
        fc = family.check(m.runs[0], others, a.replicates, records=recs)
        st = {s["statistic"]: s for s in fc.statistics}
        row = {"held out": m.name}
        for k in ("vote_gain", "w2r", "r2w", "change_rate"):
            row[k] = {True: "yes", False: "NO", None: "n/a"}[st[k]["meets"]]
        met = [s["meets"] for s in fc.statistics if s["meets"] is not None]
        row["all statistics"] = f"{sum(met)}/{len(met)}"
        out.append(row)
    print("\n## The family (every other member) on each held-out DyLAN run: does its range "
          "meet the real 95% interval?\n")
    print(_markdown(pd.DataFrame(out).set_index("held out")))
    print(f"\nfamily checks: {time.perf_counter() - t0:.0f} s for {len(ms)} runs x "
          f"{len(fam) - 1} members x {a.replicates} replicates")


if __name__ == "__main__":
    main()
