"""The study's analysis at the scale a cluster produces (issue 29): the four open models'
simulated grids merged into one run directory, through notebooks 01..08.

SYNTHETIC MERGED GRID.  Simulating four grids costs ~13 min of CPU each on a 2-core
machine, so the merged run is built from ONE simulated run of the ``sim`` preset (a
single simulated model id, ``--runs DIR``; made with ``pear run --preset sim --backend
simulated`` when DIR holds no records): for each model of the catalog group ``paper``, the
records of that model's part of the grid (:func:`pear.runs.grid.model_grid`; matched
on dataset, question id, seed and method) are copied with the ``model`` field (the record's
and every agent's) rewritten to the model's id and ``debate_id`` recomputed over the
identity fields (:func:`pear.core.hashing.debate_id`), into that model's directory
(:func:`pear.runs.runner.model_dir`) of one run directory whose manifest names the
four models as a multi-model ``pear run`` (or ``pear merge`` of its shards) does.  The four
models therefore share the same simulated answers (the debates are identical apart from the
model name): the analysis' work (rows, groups, statistics) is that of four real grids;
its numbers are not findings.  The rewrite streams one line at a time.

Steps, each in a subprocess of its own (wall time and peak RSS from ``wait4``, through
:func:`bench_analysis.measure`): ``pear index`` of the merged run, ``pear validate`` of it,
and notebooks 01..08 in one ``pear paper --backend replay --preset sim`` build
(:func:`bench_analysis.notebooks`).  Goal (issue 29): the eight notebooks over the ~277,000
debates (the issue's "about 212,000" predates the ``sc@k`` methods) in <= 120 s with peak
RSS <= 2 GB; 62,000 debates of one model took 39 s and 0.71 GB.

    python benchmarks/bench_cluster_analysis.py --runs /tmp/sim78 --out /tmp/paper4
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from typing import Any
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analysis import REPO, measure, notebooks, py, sim_grid  # noqa: E402

PRESET = "sim"   # the source run's preset; its grid is the ``paper`` preset's (same methods,
                 # datasets, questions, seeds and full sets)


def build(src: Path, out: Path) -> dict[str, int]:
    """Write the synthetic merged run into ``out`` (see the module docstring); returns the
    number of debates per model id."""
    import msgspec
    from pear.catalog.models import GROUPS, get
    from pear.core.hashing import debate_id
    from pear.core.record import IDENTITY
    from pear.runs.grid import model_grid, preset
    from pear.runs.jobs import jobs
    from pear.runs.runner import model_dir
    from pear.store.manifest import read as read_manifest, write as write_manifest
    from pear.store.records import record_files

    # the identity fields only (pear.core.record.IDENTITY): the texts are never decoded
    Ident = msgspec.defstruct("Ident", [("debate_id", str), *((k, Any) for k in IDENTITY)])

    man = read_manifest(src)
    if man is None or len(man.get("model_ids", [])) != 1:
        raise SystemExit(f"{src} is not a one-model run directory")
    old_model = man["model_ids"][0]
    exp = preset(PRESET)
    models = [get(k).model_id for k in GROUPS["paper"]]
    wanted = {m: {(j.question.dataset, j.question.id, j.seed, j.method.name)
                  for j in jobs(model_grid(exp, m))} for m in models}
    out.mkdir(parents=True, exist_ok=True)
    files = {}
    for m in models:
        d = model_dir(out, m)
        d.mkdir(parents=True, exist_ok=True)
        files[m] = open(d / "debates.jsonl", "wb")
    counts = dict.fromkeys(models, 0)
    dec = msgspec.json.Decoder(Ident)
    old_b = json.dumps(old_model).encode()
    try:
        for path in record_files(src):
            with open(path, "rb") as fh:
                for line in fh:
                    rec = dec.decode(line)
                    key = (rec.dataset, rec.question_id, rec.seed, rec.method)
                    old_id = f'"debate_id":"{rec.debate_id}"'.encode()
                    for m in models:
                        if key not in wanted[m]:
                            continue
                        ident = {k: getattr(rec, k) for k in IDENTITY}
                        ident["model"] = m
                        new_id = f'"debate_id":"{debate_id(ident)}"'.encode()
                        files[m].write(line.replace(old_id, new_id, 1)
                                       .replace(old_b, json.dumps(m).encode()))
                        counts[m] += 1
    finally:
        for fh in files.values():
            fh.close()
    settings = man["backend_settings"][0]
    experiments = [{**e, "models": models} for e in man.get("experiments", [])]
    write_manifest(out, {**man, "models": models, "model_ids": models,
                         "backend_settings": [settings for _ in models],
                         "experiments": experiments,
                         "synthetic": (f"relabelled copies of {str(src.resolve())!r} "
                                       f"(model {old_model}) per model_grid; "
                                       "benchmarks/bench_cluster_analysis.py"),
                         "command": " ".join(map(str, sys.argv))})
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=None,
                    help="the sim grid's run directory (made if empty; default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None,
                    help="the merged four-model run (made if it holds no records; default: "
                         "a temp dir)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to measure")
    ap.add_argument("--figures", type=Path, default=None,
                    help="keep the notebooks' outputs here (default: a temp dir)")
    ap.add_argument("--skip", default="", help="comma-separated: index,validate")
    a = ap.parse_args()
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    repo = a.repo.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        runs = a.runs or Path(tmp) / "sim"
        out = a.out or Path(tmp) / "paper4"
        sim_grid(runs)
        print("SYNTHETIC merged grid: the sim run's records relabelled per model of the "
              "`paper` group (see the docstring)")
        if not any(out.glob("*/debates.jsonl")):
            t0 = time.perf_counter()
            counts = build(runs, out)
            print(f"  written in {time.perf_counter() - t0:.0f} s into {out}")
        else:
            counts = {}
            for f in sorted(out.glob("*/debates.jsonl")):
                with open(f, "rb") as fh:
                    counts[f.parent.name] = sum(1 for _ in fh)
            print(f"  reusing {out}")
        for m, n in counts.items():
            print(f"    {m:<40} {n:8,d} debates")
        print(f"    {'in all':<40} {sum(counts.values()):8,d} debates")
        if "index" not in skip:
            measure(py("-m", "pear", "index", str(out)), repo=repo, label="pear index")
        if "validate" not in skip:
            measure(py("-m", "pear", "validate", str(out)), repo=repo, label="pear validate")
        times, _, peak = notebooks(out, repo, a.figures, preset=PRESET,
                                   grid=f"the merged four-model grid ({sum(counts.values()):,}"
                                        " debates)")
        total = sum(times.values())
        print(f"goal (issue 29): <= 120 s and <= 2 GB: {total:.1f} s "
              f"({'met' if total <= 120 else 'MISSED'}), {peak:.2f} GB "
              f"({'met' if peak <= 2 else 'MISSED'})")


if __name__ == "__main__":
    main()
