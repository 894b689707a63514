"""A twin's forecast with its uncertainty on a licensed run: the twin fitted on a pilot of the
first 40, 100 or all of a run's questions, its predictive interval (each replicate a draw of the
effects from their fitted uncertainty) for the run's other questions, and the family weighted
by its likelihood on the same pilot (prints a table per pilot size, and the times).

    .venv/bin/python benchmarks/bench_forecast.py [--run dylan-mmlu3] [--sizes 40,100,0]
        [--replicates 20]

Size 0 is every question (the check then holds the same debates it was fitted on).
"""
from __future__ import annotations

import argparse
import time
import warnings

from pear.populations import family, reading, twin
from pear.store.import_cache import corpus_run, mmlu_runs
from pear.populations.simcheck import check

STATS = ("vote_gain", "w2r", "r2w", "change_rate")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", default="dylan-mmlu3", help="a member of the family: its run")
    ap.add_argument("--sizes", default="40,100,0")
    ap.add_argument("--replicates", type=int, default=20)
    a = ap.parse_args()
    member = next(m for m in family.members(corpus_run(), mmlu_runs()) if m.name == a.run)
    run = member.runs[0]
    recs = [r for r in reading.records([run]) if member.keep is None or member.keep(r)]
    qids = list(dict.fromkeys(r["question_id"] for r in recs))
    fam = [p for p in family.load() if p.name != a.run]  # the family without the run's twin
    print(f"{a.run}: {len(recs)} debates, {len(qids)} questions; {a.replicates} replicates")
    for n in map(int, a.sizes.split(",")):
        pilot_q = set(qids[:n]) if n else set(qids)
        rest = [r for r in recs if r["question_id"] not in pilot_q] or recs
        pilot = [r for r in recs if r["question_id"] in pilot_q]
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tw = twin.fit_twin([run], keep=lambda r: r["question_id"] in pilot_q and (
                member.keep is None or member.keep(r))).population
        fit_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        c = check(run, tw, a.replicates, draws=twin.draws(tw, a.replicates), records=rest)
        check_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        fc = family.check(run, fam, max(2, a.replicates // 4), records=rest)
        w = family.pilot(run, fam, pilot)  # the members weighted on the pilot alone
        fc = family.FamilyCheck(fc.run, fc.checks, w)
        fam_s = time.perf_counter() - t0
        print(f"\npilot of {len(pilot)} debates ({n or 'all'} questions), checked on "
              f"{len(rest)} debates: fit {fit_s:.1f} s, twin check {check_s:.1f} s, family "
              f"{fam_s:.1f} s; the weights spread over {w.effective_members:.1f} members"
              + (" (the pilot is unlike every member)" if w.unlike else ""))
        print("statistic | real [95% CI] | twin | twin predictive 95% | family range | "
              "family weighted [95%]")
        fst = {s["statistic"]: s for s in fc.statistics}
        for s in c.statistics:
            if s["statistic"] not in STATS or s["real"] is None:
                continue
            f = fst[s["statistic"]]
            print(f"{s['statistic']} | {s['real']:.3f} [{s['lo']:.3f}, {s['hi']:.3f}] | "
                  f"{s['simulated']:.3f} | [{s['predictive'][0]:.3f}, {s['predictive'][1]:.3f}]"
                  f" | [{f['range'][0]:.3f}, {f['range'][1]:.3f}] | {f['forecast']:.3f} "
                  f"[{f['forecast_interval'][0]:.3f}, {f['forecast_interval'][1]:.3f}]")


if __name__ == "__main__":
    main()
