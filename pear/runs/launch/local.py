"""The same launch on one machine: the shards as local processes (the same ``pear run
--shard i/N`` into the same shard directories), ``parallel`` at a time, one GPU set per
process when GPUs are visible (``CUDA_VISIBLE_DEVICES``), then the same merge."""
from __future__ import annotations

import os
import subprocess
import time
from typing import Sequence

from pear.runs.compute import LAUNCHER_ENV
from pear.runs.launch.spec import Launch, shard_command, shard_dir, shard_done
from pear.store.environment import visible_gpus

__all__ = ["run_local"]


def run_local(launch: Launch, parallel: int, *, gpus: Sequence[str] | None = None,
              poll_s: float = 0.2) -> list[tuple[str, int, int]]:
    """Run every incomplete shard, ``parallel`` processes at a time; a process that needs
    GPUs gets its own ``CUDA_VISIBLE_DEVICES`` (so ``parallel`` is capped by the GPUs).
    Returns ``(model slug, shard, exit code)`` per process started."""
    if parallel < 1:
        raise ValueError(f"invalid --parallel {parallel}: use >= 1")
    gpus = list(visible_gpus() if gpus is None else gpus)
    todo = [(a, i) for a in launch.arrays for i in range(1, a.shards + 1)
            if not shard_done(launch, a, i)[1]]
    need = max([a.gpus for a, _ in todo] or [0])
    if need and len(gpus) < need:
        raise ValueError(f"a shard needs {need} GPUs and {len(gpus)} are visible: use "
                         "`pear launch slurm`, or a machine with more GPUs")
    free = [gpus[k:k + need] for k in range(0, len(gpus) - need + 1, need)] if need else []
    slots = min(parallel, len(free)) if need else parallel
    logs = launch.dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    running: list[tuple[subprocess.Popen, str, int, list[str], object]] = []
    results: list[tuple[str, int, int]] = []
    try:
        while todo or running:
            while todo and len(running) < slots:
                array, i = todo.pop(0)
                devices = free.pop(0) if array.gpus else []
                env = {**os.environ, LAUNCHER_ENV: "local"}  # the shard's attempt says so
                if array.gpus:
                    env["CUDA_VISIBLE_DEVICES"] = ",".join(devices)
                cmd = shard_command(launch, array, f"{i}/{array.shards}",
                                    str(shard_dir(launch, array, i)))
                log = open(logs / f"{array.slug}-{i - 1}.log", "a")
                log.write(f"[pear launch local] {time.strftime('%FT%TZ', time.gmtime())} "
                          f"shard {i}/{array.shards}: {' '.join(cmd)}\n")
                log.flush()
                proc = subprocess.Popen(cmd, cwd=launch.workdir, env=env, stdout=log,
                                        stderr=subprocess.STDOUT)
                running.append((proc, array.slug, i, devices, log))
            time.sleep(poll_s)
            for entry in list(running):
                proc, slug, i, devices, log = entry
                if proc.poll() is not None:
                    running.remove(entry)
                    log.close()  # type: ignore[attr-defined]
                    if devices:
                        free.append(devices)
                    results.append((slug, i, proc.returncode))
    finally:  # interrupted: the shards stop after their debates in flight
        for proc, *_ in running:
            if proc.poll() is None:
                proc.terminate()
        for proc, *_ in running:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
    return results

