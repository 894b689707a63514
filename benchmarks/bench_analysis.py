"""The analysis at the study's scale: indexing a run into its columnar view, the eight
analysis notebooks over the ``sim`` grid, and indexing a synthetic run of real-size records.

Every step runs in a subprocess of its own; its wall time, peak resident memory (the
largest process of its tree) and CPU time (user + system, its whole tree; close to the wall
time of an idle machine, as every step is single-threaded) are printed, from ``wait4``.
Steps:

1. ``sim`` grid: the ``sim`` preset on simulated agents (62,419 debates), made with
   ``pear run`` unless ``--runs DIR`` holds it already;
2. indexing it from scratch (``pear index``), then again with nothing new (the freshness
   check every notebook pays), then after 1,000 appended debates (incremental);
3. the analysis notebooks 01..08 executed by one ``pear paper --backend replay --only
   01,...,08`` as ``make paper`` runs them: each notebook's time (kernel start, imports,
   loading, metrics, tables, figures), their total, and the build's peak RSS;
4. a synthetic real-size run (``--synthetic DIR``): the sim grid's records with reasoning,
   critique and reason texts of the study's length (512-token answers; about 6 GB), then
   its indexing and the diagnostics over its view.

``--repo DIR`` runs steps 3 (and 2 when DIR has ``pear.store.view``) against another checkout,
e.g. the commit before the view, for before/after figures on one machine.  Goals (issue
11): notebooks 01..08 <= 60 s in all with peak RSS <= 1.5 GB; indexing the ~6 GB run with
peak RSS <= 2 GB.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("01_main_results", "02_full_dataset", "03_ablation", "04_round_curves",
             "05_diagnostics", "06_significance", "07_cost_pareto", "08_case_study")
# realistic text lengths (our choice): a 512-token answer's reasoning ~ 2,000 characters;
# a paper-style critique's correction ~ 400 and its step location ~ 40; a decision's reason
# ~ 150 characters
REASONING, CORRECTION, STEP, REASON = 2000, 400, 40, 150


def measure(cmd: list[str], *, repo: Path = REPO, label: str, env: dict | None = None
            ) -> tuple[float, float, str]:
    """Run ``cmd`` (cwd and PYTHONPATH = ``repo``); print and return (seconds, peak GB of
    its largest process, stdout)."""
    full_env = {**os.environ, "PYTHONPATH": str(repo), "MPLBACKEND": "agg", **(env or {})}
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=repo, env=full_env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{label} failed:\n{stdout[-2000:]}\n{stderr[-3000:]}")
    peak = usage.ru_maxrss / 1024 ** 2   # KiB -> GiB
    cpu = usage.ru_utime + usage.ru_stime
    print(f"  {label:<34} {seconds:8.1f} s   peak RSS {peak:5.2f} GB   CPU {cpu:7.1f} s",
          flush=True)
    return seconds, peak, stdout


def py(*args: str) -> list[str]:
    return [sys.executable, *args]


def sim_grid(runs: Path) -> None:
    if any(runs.rglob("debates.jsonl")):
        print(f"sim grid: reusing {runs}")
        return
    print(f"sim grid: running the sim preset into {runs} (several minutes)")
    measure(py("-m", "pear", "run", "--preset", "sim", "--backend", "simulated", "--out",
               str(runs), "--quiet"), label="pear run --preset sim")


def indexing(runs: Path, repo: Path) -> None:
    if not any((repo / "pear" / p).exists() for p in ("view.py", "store/view.py")):
        print("indexing: this checkout has no columnar view")
        return
    print("indexing the sim grid")
    shutil.rmtree(runs / "view", ignore_errors=True)
    measure(py("-m", "pear", "index", str(runs)), repo=repo, label="from scratch")
    measure(py("-m", "pear", "index", str(runs)), repo=repo, label="fresh (nothing new)")
    with tempfile.TemporaryDirectory() as tmp:   # +1,000 debates, then back as they were
        files = sorted(runs.rglob("debates.jsonl"))
        saved = Path(tmp) / "saved.jsonl"
        shutil.copyfile(files[0], saved)
        with open(files[0], "rb") as fh:  # copies: checked like any line (a warning each)
            extra = [line for _, line in zip(range(1000), fh)]
        with open(files[0], "ab") as fh:
            fh.writelines(extra)
        try:
            measure(py("-m", "pear", "index", str(runs)), repo=repo, label="+1,000 appended")
        finally:
            shutil.copyfile(saved, files[0])
    measure(py("-m", "pear", "index", str(runs)), repo=repo, label="rebuilt after the rewrite")


def notebooks(runs: Path, repo: Path, figures: Path | None, *, preset: str = "sim",
              grid: str = "the sim grid") -> tuple[dict[str, float], float, float]:
    """The eight notebooks in one ``pear paper`` build, as ``make paper`` runs them; each
    notebook's time is the build's own ("ok NAME in X s": kernel start to last cell).
    Returns (seconds per notebook, the build's wall seconds, its peak RSS in GB)."""
    print(f"notebooks 01..08 on {grid} ({repo})")
    with tempfile.TemporaryDirectory() as tmp:
        out = figures or Path(tmp)
        seconds, peak, stdout = measure(
            py("-m", "pear", "paper", "--backend", "replay", "--preset", preset, "--runs",
               str(runs), "--only", ",".join(n[:2] for n in NOTEBOOKS)),
            repo=repo, label="pear paper --only 01..08", env={"PEAR_FIGURES_DIR": str(out)})
    times = {m.group(1): float(m.group(2))
             for m in re.finditer(r"^ok (\S+) in ([0-9.]+) s", stdout, re.M)}
    for name in NOTEBOOKS:
        print(f"    {name:<32} {times.get(name, float('nan')):8.1f} s")
    print(f"  {'the eight notebooks':<34} {sum(times.values()):8.1f} s   peak RSS {peak:5.2f} GB"
          f" (the whole build: {seconds:.1f} s)")
    return times, seconds, peak


def synthesize(src: Path, out: Path) -> None:
    """The sim grid's records with texts of realistic length (streamed, one line at a time)."""
    import msgspec
    import numpy as np
    rng = np.random.default_rng(0)
    words = np.array("the answer step so we get then compute total because each value "
                     "check sum product equals hence therefore first second next "
                     "option".split())

    def pool(n: int, k: int = 997) -> list[str]:
        """k distinct texts of n characters (drawn once; records cycle through them)."""
        return [" ".join(words[rng.integers(0, len(words), n // 3)].tolist())[:n]
                for _ in range(k)]

    texts = {n: pool(n) for n in (REASONING, CORRECTION, STEP, REASON)}
    counter = [0]

    def text(n: int) -> str:
        counter[0] += 1
        return texts[n][counter[0] % len(texts[n])]

    out.mkdir(parents=True, exist_ok=True)
    dec, enc = msgspec.json.Decoder(), msgspec.json.Encoder()
    size = 0
    for path in sorted(src.rglob("debates.jsonl")):
        target = out / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "rb") as fh, open(target, "wb") as w:
            for line in fh:
                rec = dec.decode(line)
                for rd in rec["rounds_data"]:
                    for a in rd["agents"]:
                        a["reasoning"] = text(REASONING)
                    for c in rd["critiques"]:
                        c.pop("critique", None)
                        c.pop("recommended_answer", None)
                        c.update(step_loc=text(STEP), correction=text(CORRECTION),
                                 assessment="Flawed", reason=text(REASON))
                rec.update(prompt_style="paper", truncated_calls=0)
                data = enc.encode(rec) + b"\n"
                size += len(data)
                w.write(data)
    print(f"  synthetic run: {size / 1e9:.2f} GB of records in {out}")


METRICS = """
import sys, time
from pear.analysis import metrics
from pear.store import view
t = time.perf_counter()
v = view.load(sys.argv[1])
diag = metrics.diagnostics(v.debates, v.agent_rounds, v.edges)
acc = metrics.accuracy(v.debates); cost = metrics.costs(v.debates)
rounds = metrics.round_accuracy(v.debates, v.rounds)
print(f"{len(v.debates)} debates, {len(v.agent_rounds)} agent rows, {len(v.edges)} edges; "
      f"loaded and measured in {time.perf_counter() - t:.1f} s")
"""


def synthetic(runs: Path, out: Path, repo: Path) -> None:
    print("synthetic real-size run")
    if not any(out.rglob("debates.jsonl")):
        t0 = time.perf_counter()
        synthesize(runs, out)
        print(f"  written in {time.perf_counter() - t0:.0f} s")
    else:
        size = sum(p.stat().st_size for p in out.rglob("debates.jsonl"))
        print(f"  reusing {out} ({size / 1e9:.2f} GB of records)")
    shutil.rmtree(out / "view", ignore_errors=True)
    measure(py("-m", "pear", "index", str(out)), repo=repo, label="indexing from scratch")
    _, _, said = measure(py("-c", METRICS, str(out)), repo=repo, label="load + every metric")
    print(f"    {said.strip()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=None,
                    help="the sim grid's run directory (made if empty; default: a temp dir)")
    ap.add_argument("--repo", type=Path, default=REPO, help="checkout to measure")
    ap.add_argument("--synthetic", type=Path, default=None,
                    help="directory of the synthetic real-size run (made if empty)")
    ap.add_argument("--figures", type=Path, default=None,
                    help="keep the notebooks' outputs here (default: a temp dir)")
    ap.add_argument("--skip", default="", help="comma-separated: index,notebooks,synthetic")
    a = ap.parse_args()
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    with tempfile.TemporaryDirectory() as tmp:
        runs = a.runs or Path(tmp) / "sim"
        sim_grid(runs)
        if "index" not in skip:
            indexing(runs, a.repo.resolve())
        if "notebooks" not in skip:
            notebooks(runs, a.repo.resolve(), a.figures)
        if "synthetic" not in skip:
            synthetic(runs, a.synthetic or Path(tmp) / "synthetic", a.repo.resolve())


if __name__ == "__main__":
    main()
