"""What checking untrusted records costs: ``pear validate`` (every line from scratch) on a
run, the same index with the checks replaced by decoding alone, a fresh load (nothing new to
check), and an incremental load after appending 1 % of the lines again under new ids (another model name).

Works on a copy of the run's records (the original directory is never written).  Prints
wall and process CPU seconds per step, and the checks' share of the full index.

    python benchmarks/bench_validate.py /tmp/claims-sim
"""
from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from unittest import mock


def _timed(label: str, fn) -> float:
    w, c = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    print(f"{label:55s} {wall:7.1f} s wall  {cpu:7.1f} s cpu")
    return cpu


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir")
    a = p.parse_args()
    from pear.store import checks, indexing, view
    from pear.core.hashing import hex_id
    from pear.store.records import IDENTITY, RECORDS_FILE
    from pear.store.validate import validate
    src = Path(a.run_dir)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        shutil.copytree(src, run, ignore=shutil.ignore_patterns("view", "cache.sqlite"))
        files = list(run.rglob(RECORDS_FILE))
        size = sum(f.stat().st_size for f in files)
        lines = sum(1 for f in files for _ in open(f, "rb"))
        print(f"{lines} records, {size / 1e6:.0f} MB in {len(files)} files")
        full = _timed("pear validate (index from scratch, every check)",
                      lambda: print("   ", validate(run).findings.report()))

        def decode_only(self, where, line, size):
            return (None, []) if line is None else (checks._DECODER.decode(line), [])
        with mock.patch.object(checks.Checker, "check_line", decode_only):
            bare = _timed("the same index, decoding only (no checks)",
                          lambda: indexing.index(run, rebuild=True))
        print(f"{'checks share of the full index (cpu)':55s} {1 - bare / full:7.0%}")
        _timed("fresh load (nothing new: freshness check only)", lambda: view.load(run))
        path = files[0]
        head = path.read_text().splitlines()[: max(1, lines // 100)]
        with open(path, "a") as fh:
            for text in head:
                rec = json.loads(text)
                rec["model"] += "-copy"   # a new identity, the same seed and base graphs
                rec["debate_id"] = hex_id(*(rec[k] for k in sorted(IDENTITY)), n=20)
                fh.write(json.dumps(rec, separators=(",", ":")) + "\n")
        _timed(f"incremental load after {len(head)} appended records",
               lambda: view.load(run))


if __name__ == "__main__":
    main()
