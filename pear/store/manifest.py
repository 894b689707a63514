"""A run directory's manifest (``RUN_DIR/manifest.json``): the one place it is read, written,
compared and checked.  :func:`pear.runs.runner.run` writes it, :func:`pear.runs.merge.merge`
compares several, the validator (:class:`pear.store.checks.Checker`) reads the protocol from it.

It holds versions, the protocol (config), git commit, seeds and backend settings; never an API
key.

>>> diff({"a": 1, "b": {"c": 2}}, {"a": 1, "b": {"c": 3}})
['b.c: recorded 2, requested 3']
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from pear.core.hashing import content_digest
from pear.paths import RUN_MANIFEST, write_json
from pear.core.config import DebateConfig, RouterConfig
from pear.store.records import record_files

__all__ = ["RUN_MANIFEST", "CHECKED", "path", "read", "protocol", "write", "diff", "diff_keys",
           "check", "fingerprint"]

CHECKED = ("protocol", "backend", "models", "data_sha256", "shard")
"""Manifest keys that must agree for runs to share (or be merged into) one directory."""


def path(run_dir: str | os.PathLike[str]) -> Path:
    """The manifest file of ``run_dir``."""
    return Path(run_dir) / RUN_MANIFEST


def read(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The run directory's manifest, or None when there is none yet."""
    p = path(run_dir)
    return json.loads(p.read_text()) if p.exists() else None


def protocol(manifest: Mapping[str, Any]) -> tuple[Any, Any]:
    """The (DebateConfig, RouterConfig) a manifest records under ``protocol``; KeyError,
    TypeError or ValueError when it records none or a malformed one.

    >>> import dataclasses
    >>> from pear.core.config import DebateConfig, RouterConfig
    >>> rec = json.loads(json.dumps({"protocol": {"debate": dataclasses.asdict(DebateConfig()),
    ...                                           "router": {}}}))
    >>> protocol(rec) == (DebateConfig(), RouterConfig())
    True
    """
    proto = manifest["protocol"]
    debate = dict(proto["debate"])
    for key in ("roles", "agent_models", "agent_temperatures", "relabelling"):
        if key in debate:
            debate[key] = tuple(debate[key])
    return DebateConfig(**debate), RouterConfig(**proto["router"])


def write(run_dir: str | os.PathLike[str], manifest: Mapping[str, Any]) -> None:
    """Write the manifest atomically (a crash leaves the old one or the new one)."""
    write_json(path(run_dir), manifest, default=str)


def diff(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Every leaf where ``old`` and ``new`` differ, as ``key.path: recorded X, requested Y``."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in sorted(set(old) | set(new)):
            out += diff(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    return [] if old == new else [f"{prefix}: recorded {old!r}, requested {new!r}"]


def diff_keys(old: Mapping[str, Any], new: Mapping[str, Any],
              keys: Iterable[str] = CHECKED) -> list[str]:
    """:func:`diff` over ``keys``, comparing ``new`` as the manifest stores it (tuples as
    lists)."""
    new = json.loads(json.dumps(new, default=str))
    out: list[str] = []
    for key in keys:
        out += diff(old.get(key), new.get(key), key)
    return out


def check(old: Mapping[str, Any], new: Mapping[str, Any], run_dir: str | os.PathLike[str]
          ) -> None:
    """Refuse to mix results: raise ValueError naming the first differences when ``new``
    (the requested run) disagrees with ``old`` (the recorded one) on :data:`CHECKED`."""
    diffs = diff_keys(old, new)
    if diffs:
        raise ValueError(f"run directory {str(run_dir)!r} holds results of another setting "
                         f"({'; '.join(diffs[:3])}); use a new --out directory instead of "
                         f"mixing results")


VOLATILE = ("started_at", "resumed_at", "finished_at", "command", "attempts", "versions",
            "hardware", "lock", "compute")
"""Manifest keys that change when the same records are resumed or re-indexed."""


def fingerprint(run_dir: str | os.PathLike[str]) -> str:
    """16 hex digits that name what an analysis of ``run_dir`` read: its manifest (times and
    command aside) and the size of each of its record files.  Outputs built from the same
    records carry the same fingerprint; a run resumed with new debates, or another run,
    gets another.

    >>> fingerprint("/nonexistent")
    Traceback (most recent call last):
    ...
    FileNotFoundError: run directory '/nonexistent' does not exist
    """
    root = Path(run_dir)
    files = record_files(root)
    man = {k: v for k, v in (read(root) or {}).items() if k not in VOLATILE}
    parts = [json.dumps(man, sort_keys=True, default=str)]
    parts += [f"{f.relative_to(root).as_posix()}:{f.stat().st_size}" for f in files
              if f != root]
    return content_digest("\n".join(parts), n=16)
