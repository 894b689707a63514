"""Combining run directories (e.g. the shards of one grid, ``pear run --shard i/N``) into one,
after checking that their manifests agree; ``pear merge`` calls :func:`merge`."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.paths import new_dir, shown_command
from pear.runs import compute
from pear.runs.jobs import parse_shard
from pear.store.manifest import CHECKED, RUN_MANIFEST as MANIFEST, diff_keys, read as read_manifest, write as write_manifest
from pear.store.records import RECORDS_FILE, TIMING_FIELDS, RecordWriter, iter_records

__all__ = ["merge", "MergeSummary"]

_AGREE = tuple(k for k in CHECKED if k != "shard")  # shards of one grid differ there
"""Manifest keys that must be equal in every merged run."""


@dataclass
class MergeSummary:
    """What :func:`merge` did."""

    records: int
    duplicates: int
    shards: list[str]
    missing_shards: list[int]

    @property
    def complete(self) -> bool:
        return not self.missing_shards


def merge(out_dir: str | os.PathLike[str],
          run_dirs: Sequence[str | os.PathLike[str]]) -> MergeSummary:
    """Combine the records of several run directories (e.g. the shards of one grid) into
    the new directory ``out_dir``.

    The runs' manifests must agree on protocol, backend, models and data; shards of one
    grid must have the same N and distinct indices (missing ones are reported, and running
    the unsharded grid into ``out_dir`` later finishes them).  A debate recorded in two runs
    must be the same record apart from timing fields.  Nothing is written unless all checks
    pass; ``out_dir`` must not exist or be empty.  Response caches are not merged.
    """
    out = Path(out_dir)
    if len(run_dirs) < 1:
        raise ValueError("merge needs at least one run directory")
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"merge target {str(out)!r} is not empty: give a new directory")
    manifests = _manifests(run_dirs)
    shards = [m.get("shard") for m in manifests]
    missing = _missing_shards(shards)
    by_dir, duplicates = _read_records(run_dirs)  # read and check everything before writing
    with new_dir(out, "merging") as tmp:  # out: absent or empty (checked above)
        for sub, records in sorted(by_dir.items()):
            with RecordWriter(tmp / sub) as writer:
                for rec in records.values():
                    writer.write(rec)
        write_manifest(tmp, _merged_manifest(run_dirs, manifests, missing))
    return MergeSummary(records=sum(len(r) for r in by_dir.values()), duplicates=duplicates,
                        shards=[s for s in shards if s], missing_shards=missing)


def _manifests(run_dirs: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The runs' manifests, refused unless every one agrees with the first on :data:`_AGREE`."""
    manifests = []
    for d in run_dirs:
        m = read_manifest(d)
        if m is None:
            raise FileNotFoundError(f"{str(d)!r} is not a run directory (no {MANIFEST})")
        manifests.append(m)
    for d, m in zip(run_dirs[1:], manifests[1:]):
        diffs = diff_keys(manifests[0], m, _AGREE)
        if diffs:
            raise ValueError(f"cannot merge {str(d)!r} with {str(run_dirs[0])!r}: different "
                             f"settings ({'; '.join(diffs[:3])})")
    return manifests


def _missing_shards(shards: Sequence[str | None]) -> list[int]:
    """The shard indices of the split that none of the runs holds ([] for unsharded runs);
    mixing sharded and unsharded runs, two splits, or one shard twice is refused."""
    if all(s is None for s in shards):
        return []
    if any(s is None for s in shards):
        raise ValueError("cannot merge sharded and unsharded runs: give only the shards "
                         "of one grid")
    parsed = [parse_shard(s) for s in shards if s is not None]
    if len({n for _, n in parsed}) > 1:
        raise ValueError(f"cannot merge shards of different splits: "
                         f"{', '.join(s for s in shards if s)}")
    index = [i for i, _ in parsed]
    dup = sorted({i for i in index if index.count(i) > 1})
    if dup:
        raise ValueError(f"shard {dup[0]}/{parsed[0][1]} is given twice")
    return [i for i in range(1, parsed[0][1] + 1) if i not in index]


def _read_records(run_dirs: Sequence[str | os.PathLike[str]]
                  ) -> tuple[dict[str, dict[str, dict[str, Any]]], int]:
    """Every record by sub-directory and debate id, and how many were recorded twice; a
    debate recorded differently (apart from timing fields) in two runs is refused."""
    by_dir: dict[str, dict[str, dict[str, Any]]] = {}
    duplicates = 0
    for d in run_dirs:
        root = Path(d)
        for rec_file in sorted(root.rglob(RECORDS_FILE)):
            sub = rec_file.parent.relative_to(root).as_posix()
            bucket = by_dir.setdefault(sub, {})
            for rec in iter_records(rec_file):
                did = rec["debate_id"]
                if did in bucket:
                    a = {k: v for k, v in bucket[did].items() if k not in TIMING_FIELDS}
                    b = {k: v for k, v in rec.items() if k not in TIMING_FIELDS}
                    if a != b:
                        raise ValueError(f"debate {did} is recorded differently in two of the "
                                         f"runs (under {sub!r}); they are not parts of one grid")
                    duplicates += 1
                    continue
                bucket[did] = rec
    return by_dir, duplicates


def _merged_manifest(run_dirs: Sequence[str | os.PathLike[str]],
                     manifests: Sequence[Mapping[str, Any]], missing: list[int]
                     ) -> dict[str, Any]:
    """The merged run's manifest: the shared settings, where each part came from with its
    compute, every attempt of every part (marked with its shard), every machine any part ran
    on, and the compute summed over all of them (:func:`pear.runs.compute.total`)."""
    first = manifests[0]
    merged: dict[str, Any] = {key: first.get(key) for key in _AGREE}
    merged.update({
        "shard": None,
        "experiments": [e for m in manifests for e in m.get("experiments", [])],
        "backend_settings": first.get("backend_settings"),
        "model_ids": first.get("model_ids"),
        "versions": first.get("versions"), "git_commit": first.get("git_commit"),
        "merged_from": [{"dir": str(Path(d).resolve()), "shard": m.get("shard"),
                         "complete": m.get("complete"), "git_commit": m.get("git_commit"),
                         "versions": m.get("versions"), "lock": m.get("lock"),
                         "compute": compute.total(m.get("attempts") or [])}
                        for d, m in zip(run_dirs, manifests)],
        "hardware": [], "lock": first.get("lock"),
        "attempts": [{**a, "shard": m.get("shard")} for m in manifests
                     for a in m.get("attempts") or []],
        "missing_shards": missing,
        "complete": not missing and all(m.get("complete") for m in manifests),
        "started_at": min(str(m.get("started_at")) for m in manifests),
        "finished_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": shown_command(sys.argv),
    })
    for h in (h for m in manifests for h in m.get("hardware") or []):
        merged["hardware"] = compute.hardware_list(merged["hardware"], h)
    merged["compute"] = compute.total(merged["attempts"])
    return merged
