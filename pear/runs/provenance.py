"""What a run records about itself: the run manifest's provenance facts.

:func:`open_manifest` composes the manifest of a run before any debate runs (the protocol,
backend, models, data checksums and shard, checked against the manifest already in the
directory, then the experiments, package versions, the lock, the machine, git commit,
command, this attempt with the run's compute (:mod:`pear.runs.compute`) and plug-in methods)
and writes it; :func:`close_attempt` records what the attempt cost.  Reading, writing and
checking a manifest is :mod:`pear.store.manifest`'s.
"""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.methods import method
from pear.paths import shown_command
from pear.runs import compute
from pear.runs.grid import Experiment
from pear.runs.jobs import shard_text
from pear.store import environment, manifest as manifest_io
from pear.tasks.benchmarks import sha256_files

__all__ = ["open_manifest", "close_attempt"]


def open_manifest(exp: Experiment, out: Path, old: Mapping[str, Any] | None,
                  backend_name: str, grid_names: Sequence[Any],
                  attempt: compute.Attempt | None = None) -> dict[str, Any]:
    """The run's manifest, checked against the one already in ``out`` (results of another
    setting are refused) and written before any debate runs; with ``attempt`` (this start
    of the run, :class:`pear.runs.compute.Attempt`), which the caller finishes, among its
    ``attempts`` and this machine among its ``hardware``."""
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
    attempts = (old or {}).get("attempts", []) + ([attempt.record] if attempt else [])
    manifest.update({
        "experiments": (old or {}).get("experiments", []) + [exp.to_dict()],
        "backend_settings": [], "model_ids": [],
        "versions": environment.versions(), "lock": environment.lock(),
        "hardware": compute.hardware_list((old or {}).get("hardware", []),
                                          environment.hardware()),
        "git_commit": environment.git_commit(),
        "started_at": (old or {}).get("started_at", started), "resumed_at": started,
        "finished_at": None, "command": shown_command(sys.argv),
        "attempts": attempts, "compute": compute.total(attempts),
    })
    plugins = {**(old or {}).get("plugins", {}),
               **{m: p for m in dict.fromkeys((*exp.methods, *exp.full_methods))
                  if (p := method(m, exp.router).provenance()) is not None}}
    if plugins:  # the study's methods only: no key, the manifest as it always was
        manifest["plugins"] = plugins
    manifest_io.write(out, manifest)
    return manifest


def close_attempt(out: Path, manifest: dict[str, Any], attempt: compute.Attempt,
                  share: float = 1.0, **counts: int) -> None:
    """Finish ``attempt`` (one of ``manifest``'s) with its counts (and its ``share`` of a
    pass that served several runs), sum the run's compute again and write the manifest."""
    attempt.finish(share, **counts)
    manifest["compute"] = compute.total(manifest["attempts"])
    manifest_io.write(out, manifest)
