"""What a launch is: the grid (the ``pear run`` arguments every shard task repeats), one
array of shards per model with its resources, time limit and expected debates, and the
launch directory's layout.

A launch directory ``DIR`` holds::

    DIR/launch/grid.json            the launch's grid (a rerun must launch the same one)
    DIR/launch/<model>.sbatch       one job array per model (Slurm)
    DIR/launch/merge.sbatch         the merge job (Slurm)
    DIR/launch/jobs.jsonl           every submission: model, job id, array tasks
    DIR/launch/logs/<model>-<i>.log one log per shard task (appended to across restarts)
    DIR/shards/<model>/<i>-of-<N>/  one ``pear run --shard i/N`` run directory per shard
    DIR/<model>/                    the merged run directory of the model (``pear merge``)
"""
from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.catalog.models import GPU_KINDS, lookup, resources
from pear.paths import write_json
from pear.runs.grid import Experiment, model_grid
from pear.runs.jobs import shard_sizes
from pear.store.manifest import read as read_manifest
from pear.store.records import completed_ids
from pear.backends.dry import CHARS_PER_TOKEN
from pear.backends.registry import REPLAY
from pear.runs.plan import estimate

__all__ = ["ModelArray", "Launch", "plan_launch", "shard_dir", "shard_command", "paper_command",
           "read_launch", "write_launch", "check_same_grid", "shard_done", "merge_mem_mb",
           "record_kb", "LAUNCH", "STARTUP_H", "MARGIN"]

LAUNCH = "launch"
"""The launch's own files under ``DIR``."""
GRID_FILE = "grid.json"
STARTUP_H = 0.25  # our choice: loading a model onto the GPUs, once per task
MARGIN = 1.5  # our choice: time limit = estimate x margin (throughput varies by node)
DEFAULT_TIME_H = 1.0  # our choice: a shard of a backend without a GPU estimate
MERGE_BASE_MB = 512  # our choice: the merge's interpreter and pear peak at 44 MB (measured)
AGENT_ROUND_KB = 2.5  # a record's structure per agent and round, held in memory (measured 2.1)
PAPER_MB = 2048  # --then-paper: indexing and notebooks (benchmarks/bench_analysis.py: <= 2 GB)


@dataclass(frozen=True)
class ModelArray:
    """One model's job array: ``shards`` tasks, each ``pear run --shard i/shards``."""

    model: str | None
    """The model name given to ``pear run --model`` (None: the backend's own)."""
    slug: str
    """The model's name in file names (the registry key where there is one)."""
    shards: int
    gpus: int
    cpus: int
    mem_gb: int
    time_limit: str
    """Per task, ``D-HH:MM:SS``."""
    expected: tuple[int, ...]
    """Debates of each shard (index 0 = shard 1)."""
    gpu_hours: float | None = None
    """The model's estimated GPU-hours (``pear plan``), None without an estimate."""


@dataclass(frozen=True)
class Launch:
    """A launch: where it writes, the ``pear run`` arguments of its grid, its arrays."""

    out: Path
    run_args: tuple[str, ...]
    arrays: tuple[ModelArray, ...]
    python: str = sys.executable
    workdir: str = "."
    record_kb: int = 0
    """The largest record a debate of the grid can write, in KB (:func:`record_kb`): what
    sizes the merge job's memory (:func:`merge_mem_mb`)."""

    @property
    def dir(self) -> Path:
        return self.out / LAUNCH

    def identity(self) -> dict[str, Any]:
        """What a rerun into the same directory must repeat."""
        return {"run_args": list(self.run_args),
                "models": [a.model for a in self.arrays],
                "shards": {a.slug: a.shards for a in self.arrays}}


def model_slug(model: str | None) -> str:
    """A model's name in file names.

    >>> model_slug("Qwen/Qwen2.5-14B-Instruct"), model_slug("org/My Model"), model_slug(None)
    ('qwen2.5-14b', 'My_Model', 'default')
    """
    if model is None:
        return "default"
    found = lookup(model)
    if found is not None:
        return found.key
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model.rsplit("/", 1)[-1]).strip("_") or "model"


def _time_text(hours: float) -> str:
    """``D-HH:MM:SS`` of ``hours`` rounded up to the minute.

    >>> _time_text(0.01), _time_text(30.5)
    ('0-00:01:00', '1-06:30:00')
    """
    minutes = max(1, math.ceil(hours * 60 - 1e-9))
    return f"{minutes // 1440}-{minutes // 60 % 24:02d}:{minutes % 60:02d}:00"


def record_kb(exp: Experiment) -> int:
    """KB of memory a debate record of ``exp`` takes at most once read: per agent and round
    (round 0 and every debate round) its answer and its critiques at the token budget
    (``CHARS_PER_TOKEN`` characters a token), plus ``AGENT_ROUND_KB`` of structure.
    Measured (``pear merge`` of 1,200 simulated debates of 5 agents and 5 rounds, peak RSS
    less the interpreter's): 3.35 bytes a byte of JSON for the simulated agents' short texts
    (19 KB records: 2.1 KB an agent-round), 1.51 with texts of the study's length (88 KB
    records: 132 KB, where this gives 195).

    >>> from pear.core.config import DebateConfig
    >>> record_kb(Experiment("x")), record_kb(Experiment("x", debate=DebateConfig(n_agents=3,
    ...                                            rounds=1, k=1, max_tokens=112)))
    (195, 21)
    """
    d = exp.debate
    text_kb = 2 * d.max_tokens * CHARS_PER_TOKEN / 1024
    return math.ceil((d.rounds + 1) * d.n_agents * (text_kb + AGENT_ROUND_KB))


def merge_mem_mb(launch: Launch, *, then_paper: bool = False) -> int:
    """Memory of the merge job, in MB (a multiple of 256): the merge holds every record of
    one model at a time (:func:`pear.runs.merge.merge` checks all of them before writing),
    so ``MERGE_BASE_MB`` + the largest model's debates x :attr:`Launch.record_kb`;
    ``then_paper`` adds ``PAPER_MB``.

    >>> a = ModelArray(None, "m", 3, 0, 1, 4, "0-01:00:00", (12, 12, 12))
    >>> merge_mem_mb(Launch(Path("/x"), (), (a,), record_kb=21))
    768
    """
    debates = max((sum(a.expected) for a in launch.arrays), default=0)
    need = MERGE_BASE_MB + debates * launch.record_kb / 1024
    need += PAPER_MB if then_paper else 0
    return math.ceil(need / 256) * 256


def plan_launch(exp: Experiment, run_args: Sequence[str], out: str | os.PathLike[str], *,
                backend: str, shards: int | None = None, target_hours: float | None = None,
                time_limit: str | None = None, gpu_kind: str = "h100",
                throughput: float | None = None, gpus_per_node: int | None = None,
                workdir: str | None = None) -> Launch:
    """The launch of ``exp`` (every model of ``exp.models``, or the backend's own) in
    ``shards`` shards per model, or in as many as keep each under ``target_hours`` by the
    ``pear plan`` estimate.  A model needing more GPUs than ``gpus_per_node`` is refused."""
    if (shards is None) == (target_hours is None):
        raise ValueError("give --shards N or --target-hours H (one of them)")
    if shards is not None and shards < 1:
        raise ValueError(f"invalid --shards {shards}: use >= 1")
    if gpu_kind not in GPU_KINDS:
        raise ValueError(f"unknown --gpu-kind {gpu_kind!r}: choose one of "
                         f"{', '.join(GPU_KINDS)}")
    if exp.shard is not None:
        raise ValueError("--shard is chosen by the launcher: give --shards N instead")
    arrays = []
    for model in (exp.models or (None,)):
        res = resources(model, backend, gpu_kind)
        slug = model_slug(model)
        if gpus_per_node is not None and res.gpus > gpus_per_node:
            raise ValueError(f"model {model!r} needs {res.gpus} GPUs per task (tensor parallel, "
                             f"{gpu_kind}) but --gpus-per-node is {gpus_per_node}")
        hours = None
        if res.gpus:
            hours = estimate(exp, model).gpu_hours(throughput or
                                                   GPU_KINDS[gpu_kind].tokens_per_s)
        n = shards
        if n is None:
            if hours is None:
                raise ValueError(f"--target-hours needs a GPU estimate (backend vllm); backend "
                                 f"{backend!r} has none: give --shards N")
            n = max(1, math.ceil(hours / res.gpus * MARGIN
                                 / max(target_hours - STARTUP_H, 0.05)))
        per_task = DEFAULT_TIME_H if hours is None else hours / res.gpus / n * MARGIN + STARTUP_H
        expected = tuple(shard_sizes(model_grid(exp, model), n))
        arrays.append(ModelArray(model, slug, n, res.gpus, res.cpus, res.mem_gb,
                                 time_limit or _time_text(per_task), expected,
                                 None if hours is None else round(hours, 1)))
    slugs = [a.slug for a in arrays]
    if len(set(slugs)) != len(slugs):
        raise ValueError(f"two models share the file name {slugs[0]!r}: give distinct models")
    return Launch(Path(out).resolve(), tuple(run_args), tuple(arrays),
                  workdir=str(Path(workdir or os.getcwd()).resolve()), record_kb=record_kb(exp))


def shard_dir(launch: Launch, array: ModelArray, i: int) -> Path:
    """The run directory of shard ``i`` (1-based) of ``array``."""
    return launch.out / "shards" / array.slug / f"{i}-of-{array.shards}"


def shard_command(launch: Launch, array: ModelArray, shard: str, out: str) -> list[str]:
    """The ``pear run`` of one shard (``shard`` and ``out`` may be shell expressions)."""
    cmd = [launch.python, "-m", "pear", "run", *launch.run_args]
    if array.model is not None:
        cmd += ["--model", array.model]
    if array.gpus > 1:  # vLLM over the task's GPUs (tensor parallel, from the catalog)
        cmd += ["--tensor-parallel-size", str(array.gpus)]
    return cmd + ["--shard", shard, "--out", out, "--quiet"]


def paper_command(launch: Launch) -> list[str]:
    """``--then-paper``: the notebooks on the merged records (``pear paper --backend
    replay``), for a launch of one model (the notebooks read one run directory)."""
    if len(launch.arrays) != 1:
        raise ValueError(f"--then-paper builds the notebooks from one run directory: launch "
                         f"one model, not {len(launch.arrays)}")
    args = list(launch.run_args)
    cmd = [launch.python, "-m", "pear", "paper", "--backend", REPLAY,
           "--runs", str(launch.out / launch.arrays[0].slug)]
    for flag in ("--preset", "--seeds", "--n-questions"):
        if flag in args:
            cmd += [flag, args[args.index(flag) + 1]]
    return cmd


def shard_done(launch: Launch, array: ModelArray, i: int) -> tuple[int, bool]:
    """``(debates recorded, complete)`` of shard ``i``, from its records and manifest."""
    d = shard_dir(launch, array, i)
    done = len(completed_ids(d))
    man = read_manifest(d) if d.is_dir() else None
    return done, bool(man and man.get("complete")) and done >= array.expected[i - 1]


def write_launch(launch: Launch) -> None:
    """Record the launch in ``DIR/launch/grid.json``."""
    launch.dir.mkdir(parents=True, exist_ok=True)
    data = {**launch.identity(), "python": launch.python, "workdir": launch.workdir,
            "record_kb": launch.record_kb,
            "arrays": [a.__dict__ | {"expected": list(a.expected)} for a in launch.arrays]}
    write_json(launch.dir / GRID_FILE, data, indent=1, sort_keys=False, newline=True)


def read_launch(out: str | os.PathLike[str]) -> Launch:
    """The launch recorded in ``out`` (``pear launch status``, the merge job)."""
    path = Path(out) / LAUNCH / GRID_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{str(out)!r} is not a launch directory (no {LAUNCH}/{GRID_FILE})")
    data = json.loads(path.read_text())
    arrays = tuple(ModelArray(**{**a, "expected": tuple(a["expected"])}) for a in data["arrays"])
    return Launch(Path(out).resolve(), tuple(data["run_args"]), arrays, data["python"],
                  data["workdir"], data.get("record_kb", 0))


def check_same_grid(launch: Launch) -> Launch | None:
    """The launch already recorded in ``launch.out`` (None when there is none); a different
    grid is refused with one line naming what differs."""
    path = launch.dir / GRID_FILE
    if not path.is_file():
        if launch.out.is_dir() and any(launch.out.iterdir()):
            raise ValueError(f"{str(launch.out)!r} exists and is not a launch directory: give "
                             "a new --out")
        return None
    old = read_launch(launch.out)
    a, b = old.identity(), launch.identity()
    if a["run_args"] != b["run_args"]:
        return _refuse(launch.out, "grid arguments", _args_diff(a["run_args"], b["run_args"]))
    for key in ("models", "shards"):
        if a[key] != b[key]:
            return _refuse(launch.out, key, f"{a[key]} there, {b[key]} now")
    return old


def _refuse(out: Path, what: str, detail: str) -> None:
    raise ValueError(f"{str(out)!r} holds a different launch ({what}: {detail}); use a new "
                     "--out or repeat the same grid")


def _args_diff(old: Sequence[str], new: Sequence[str]) -> str:
    """The first ``--flag`` whose value differs between two argument lists."""
    def as_map(args: Sequence[str]) -> Mapping[str, str]:
        out: dict[str, str] = {}
        key = None
        for tok in args:
            if tok.startswith("--"):
                key = tok
                out[key] = out.get(key, "")
            elif key is not None:
                out[key] = (out[key] + " " + tok).strip()
        return out
    a, b = as_map(old), as_map(new)
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            return f"{k} {a.get(k, '(not given)') or '(set)'} there, {b.get(k, '(not given)') or '(set)'} now"
    return f"{' '.join(old)} there, {' '.join(new)} now"
