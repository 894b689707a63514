"""What the portable llama.cpp build costs: the smoke grid's tokens/s, one build against another.

Each build is a wheelhouse that scripts/llama-wheel.sh wrote (build/wheels/llama-cpp-python-*):
its wheel is unpacked into a scratch folder put first on PYTHONPATH, and the default `make
paper` grid (preset smoke, the real SmolLM2-135M model, no response cache) runs once per build
and repeat, the builds taking turns, so both see the same machine.  It prints, per build, the
generated and prompt tokens per second of the grid's wall time (median over repeats) and the
ratio to the first build.  A build that crashes (say, native AMX kernels on a machine that does
not run them) is reported with its exit status.

    python benchmarks/bench_llama_build.py build/wheels/llama-cpp-python-0.3.36-portable-* \
        build/wheels/llama-cpp-python-0.3.36-native-* [--repeats 2] [--datasets gsm8k]

Build the native one first with `LLAMA_CPU=native scripts/llama-wheel.sh .venv/bin/python
requirements/cpu.txt` (it installs itself into the venv: run `make setup` afterwards, or
`scripts/llama-wheel.sh .venv/bin/python requirements/cpu.txt`, to go back to the portable one).
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
import zipfile
from pathlib import Path


def unpack(house: Path, into: Path) -> Path:
    (wheel,) = sorted(house.glob("llama_cpp_python-*.whl"))
    target = into / house.name
    with zipfile.ZipFile(wheel) as z:
        z.extractall(target)
    for lib in (target / "llama_cpp" / "lib").glob("*"):
        lib.chmod(0o755)
    return target


def run_grid(path: Path, out: Path, datasets: str | None) -> tuple[int, float, int, int]:
    env = {**os.environ, "PYTHONPATH": f"{path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "pear", "run", "--preset", "smoke", "--backend", "llamacpp",
           "--out", str(out), "--no-cache", "--quiet"]
    if datasets:
        cmd += ["--datasets", datasets]
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True).returncode
    wall = time.perf_counter() - t0
    completion = prompt = 0
    for f in out.glob("**/*.jsonl"):
        for line in f.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "tokens" in rec:
                completion += rec["tokens"]["completion"]
                prompt += rec["tokens"]["prompt"]
    return rc, wall, completion, prompt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("houses", nargs="+", type=Path, help="wheelhouse folders (first = baseline)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--datasets", help="narrow the smoke grid (comma-separated datasets)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [unpack(h, Path(tmp)) for h in args.houses]
        seen: dict[str, list[tuple[float, float, float]]] = {h.name: [] for h in args.houses}
        crashed: dict[str, int] = {}
        for r in range(args.repeats):
            for house, path in zip(args.houses, paths):
                if house.name in crashed:
                    continue
                rc, wall, comp, prompt = run_grid(path, Path(tmp) / f"run-{house.name}-{r}",
                                                  args.datasets)
                if rc != 0:
                    crashed[house.name] = rc
                    print(f"{house.name}: the grid exited with {rc}", flush=True)
                    continue
                seen[house.name].append((wall, comp / wall, (comp + prompt) / wall))
                print(f"{house.name} repeat {r}: {wall:.1f} s, {comp} generated tokens, "
                      f"{comp / wall:.1f} generated tok/s", flush=True)
    base = None
    print("\nbuild | grid wall s | generated tok/s | all tok/s | vs first")
    for house in args.houses:
        rows = seen[house.name]
        if not rows:
            print(f"{house.name} | crashed (exit {crashed.get(house.name)}) | - | - | -")
            continue
        wall = statistics.median(x[0] for x in rows)
        gen = statistics.median(x[1] for x in rows)
        tot = statistics.median(x[2] for x in rows)
        base = base or gen
        print(f"{house.name} | {wall:.1f} | {gen:.1f} | {tot:.1f} | {gen / base:.2f}")


if __name__ == "__main__":
    main()
