"""Debates per second of simulated grids: this checkout against an earlier commit, in one run.

Each case runs ``python -m pear run --backend simulated --preset sim ...`` into a fresh
directory and divides the debates written by the command's wall time (imports and the
Math-Verify worker's start included, as a user sees it).  The earlier commit (default
8029965, the commit before issue 36) is checked out with ``git worktree add`` into a temporary
directory and run with ``PYTHONPATH`` pointing there; this checkout runs with one process
(``--workers 1``) and with every core (``--workers N``).  Cases alternate, ``--repeat``
times; medians are reported with the ratios to the earlier commit.

Math-Verify's replies kept on disk (:data:`pear.tasks.mathgrade.CACHE_ENV`) would make every
run after the first grade without a worker: each case of this checkout runs with an empty
store of its own (a fresh machine's first run), and one more case with every core and a store
that an untimed run of the same grid filled (a machine's later runs: the family's members, the
build's studies, a rerun).  This checkout's runs write the columnar view beside the records, as
``pear run`` does by default (the earlier commit indexed it when first read); the last case
runs with ``--no-view``, the same work as the earlier commit's command.  Both trees are
compiled to bytecode first, as ``make test`` and ``make paper`` leave this one.

Grids: ``small`` (gsm8k and math500, 40 questions each, seed 0, no full-dataset runs: 1,440
debates) and ``paper`` (the sim preset's paper grid, cut to ``--paper-questions`` questions
per dataset with seed 0 and no full-dataset runs, so that it fits a bench run; the whole grid
is 78,419 debates).  ``--grid`` runs one of them (each in its own invocation keeps a run short).
The records of every process count are compared with those of one process, timing fields
aside (:data:`pear.core.record.TIMING_FIELDS`): splitting a grid must not change a debate.

    python benchmarks/bench_sim.py [--base 8029965] [--repeat 3] [--paper-questions 40]
                                   [--grid small|paper|both]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRIDS = {
    "small": ["--datasets", "gsm8k,math500", "--n-questions", "40", "--seeds", "0", "--no-full"],
    "paper": ["--seeds", "0", "--no-full"],
}


def _debates_per_s(pythonpath: Path, grid: list[str], out: Path, workers: int | None,
                   store: Path, extra: tuple[str, ...] = ()) -> float:
    cmd = [sys.executable, "-m", "pear", "run", "--backend", "simulated", "--preset", "sim",
           *grid, "--out", str(out), "--quiet", *extra]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PEAR_GRADING_CACHE": str(store)}
    t = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=pythonpath, check=True, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t
    written = int(done.stdout.strip().splitlines()[-1].split()[0])
    return written / wall


def _records(out: Path) -> dict[str, dict]:
    """The run's records by debate id, timing fields aside."""
    from pear.core.record import TIMING_FIELDS
    recs = {}
    for path in sorted(out.rglob("debates.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            recs[r["debate_id"]] = {k: v for k, v in r.items() if k not in TIMING_FIELDS}
    return recs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="8029965", help="the earlier commit")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--paper-questions", type=int, default=40,
                    help="questions per dataset of the paper grid (0: skip it)")
    ap.add_argument("--grid", choices=("small", "paper", "both"), default="both")
    a = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    grids = {}
    if a.grid in ("small", "both"):
        grids["small"] = GRIDS["small"]
    if a.paper_questions and a.grid in ("paper", "both"):
        grids["paper"] = GRIDS["paper"] + ["--n-questions", str(a.paper_questions)]
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                        a.base], check=True, capture_output=True)
        for tree in (base, ROOT):  # both compiled, as `make test` and `make paper` leave them
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "pear")],
                           check=True, capture_output=True)
        try:
            cases = {"before (1 process)": (base, None, ()), "now, 1 process": (ROOT, 1, ()),
                     f"now, {cores} processes": (ROOT, cores, ()),
                     f"now, {cores}, store warm": (ROOT, cores, ()),
                     f"now, {cores}, warm, no view": (ROOT, cores, ("--no-view",))}
            for gname, grid in grids.items():
                warm = Path(tmp) / f"{gname}-warm.sqlite"
                _debates_per_s(ROOT, grid, Path(tmp) / f"{gname}-warming", cores, warm)
                rates: dict[str, list[float]] = {c: [] for c in cases}
                differ: dict[str, int] = {}
                reference: dict[str, dict] = {}
                for i in range(a.repeat):
                    for case, (path, workers, extra) in cases.items():
                        out = Path(tmp) / f"{gname}-{i}-{list(cases).index(case)}"
                        store = warm if "warm" in case else out.with_suffix(".sqlite")
                        rates[case].append(_debates_per_s(path, grid, out, workers, store,
                                                          extra))
                        if i == 0 and path == ROOT:
                            recs = _records(out)
                            reference = reference or recs
                            differ[case] = sum(recs.get(k) != v for k, v in reference.items()
                                               ) + len(recs.keys() - reference.keys())
                before = statistics.median(rates["before (1 process)"])
                print(f"{gname} grid ({' '.join(grid)}), median of {a.repeat}:")
                for case, r in rates.items():
                    m = statistics.median(r)
                    same = "" if case not in differ else \
                        f"   records differing from 1 process's: {differ[case]}"
                    print(f"  {case:<28} {m:8.1f} debates/s   x{m / before:.2f}{same}")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], check=False, capture_output=True)


if __name__ == "__main__":
    main()
