"""What a run records about itself: the run manifest's provenance facts.

:func:`open_manifest` composes the manifest of a run before any debate runs (the protocol,
backend, models, data checksums and shard, checked against the manifest already in the
directory, then the experiments, package versions, git commit, command, scheduler attempts
and plug-in methods) and writes it.  Reading, writing and checking a manifest is
:mod:`pear.store.manifest`'s.
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.methods import method
from pear.runs.grid import Experiment
from pear.runs.jobs import shard_text
from pear.store import manifest as manifest_io

__all__ = ["open_manifest"]


def open_manifest(exp: Experiment, out: Path, old: Mapping[str, Any] | None,
                   backend_name: str, grid_names: Sequence[Any]) -> dict[str, Any]:
    """The run's manifest, checked against the one already in ``out`` (results of another
    setting are refused) and written before any debate runs."""
    from pear.tasks.benchmarks import sha256_files
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    manifest: dict[str, Any] = {
        "protocol": exp.protocol(),
        "backend": backend_name,
        "models": [str(n) for n in grid_names],
        "data_sha256": sha256_files(),
        "shard": shard_text(exp.shard),
    }
    if old is not None:
        manifest_io.check(old, manifest, out)
    manifest.update({
        "experiments": (old or {}).get("experiments", []) + [exp.to_dict()],
        "backend_settings": [], "model_ids": [],
        "versions": _versions(backend_name), "git_commit": _git_commit(),
        "started_at": (old or {}).get("started_at", started), "resumed_at": started,
        "finished_at": None, "command": " ".join(map(str, sys.argv)),
    })
    attempt = _scheduler_attempt()
    if attempt or (old or {}).get("attempts"):
        manifest["attempts"] = (old or {}).get("attempts", []) + ([attempt] if attempt else [])
    plugins = {**(old or {}).get("plugins", {}),
               **{m: p for m in dict.fromkeys((*exp.methods, *exp.full_methods))
                  if (p := method(m, exp.router).provenance()) is not None}}
    if plugins:  # the study's methods only: no key, the manifest as it always was
        manifest["plugins"] = plugins
    manifest_io.write(out, manifest)
    return manifest


def _versions(backend_name: str) -> dict[str, str]:
    names = ["pear", "numpy", "pandas", "math-verify"]
    names += {"llamacpp": ["llama_cpp_python"], "openai": ["openai"], "vllm": ["vllm", "torch"]}\
        .get(backend_name, [])
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip() \
            or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _scheduler_attempt() -> dict[str, Any] | None:
    """This start of the run as a Slurm task (job, array task, ``SLURM_RESTART_COUNT``,
    node), for the manifest's ``attempts``; None outside Slurm."""
    env = os.environ
    if "SLURM_JOB_ID" not in env:
        return None
    return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "slurm_job_id": env.get("SLURM_JOB_ID"),
            "array_job_id": env.get("SLURM_ARRAY_JOB_ID"),
            "array_task_id": env.get("SLURM_ARRAY_TASK_ID"),
            "restart_count": int(env.get("SLURM_RESTART_COUNT") or 0),
            "node": env.get("SLURMD_NODENAME") or platform.node()}
