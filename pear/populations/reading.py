"""What a fit reads of a recorded run (ours or imported): its records, whether its agents answer
a round in turn, whether its questions offer labelled options, and the files it came from."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.core.hashing import file_sha256
from pear.paths import shown
from pear.store import manifest
from pear.store.records import read_records, record_files

__all__ = ["records", "sequential", "stops_on_quorum", "options", "fitted_on"]


def records(runs: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Every record of the runs, in order."""
    return [r for run in runs for r in read_records(run)]


def sequential(run: str | os.PathLike[str]) -> bool:
    """Whether the run's agents answer a round in turn (its import manifest's protocol)."""
    proto = ((manifest.read(run) or {}).get("imported") or {}).get("protocol") or {}
    return proto.get("order") == "sequential"


def stops_on_quorum(run: str | os.PathLike[str]) -> bool:
    """Whether the run's source stops a debate on a quorum its check can miss (an import whose
    protocol has a ``stop``: DyLAN's), so that an agent hearing only its own answer is in a
    debate whose check missed (the revision model's ``own_x_agree`` applies)."""
    proto = ((manifest.read(run) or {}).get("imported") or {}).get("protocol") or {}
    return bool(proto.get("stop"))


def options(run: str | os.PathLike[str],
            recs: Sequence[Mapping[str, Any]] | None = None) -> bool:
    """Whether the run's questions offer a few labelled options (an import graded by letter or
    yes/no; a run of ours on multiple-choice datasets only): the revision model's
    ``*_x_options`` features.
    ``recs``: the run's records when already read."""
    m = manifest.read(run) or {}
    if m.get("imported"):
        return m["imported"].get("grading") in ("letters", "yesno")
    from pear.tasks.grading import get, kind_of
    datasets = {r["dataset"] for r in (read_records(run) if recs is None else recs)}
    return bool(datasets) and all(kind_of(get(d)) == "letters" for d in datasets)


def fitted_on(runs: Sequence[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """The files a fit read: each run's imported files with their sha256 (or, for a run of
    ours, its record files')."""
    out = []
    for run in runs:
        m = manifest.read(run) or {}
        files = (m.get("imported") or {}).get("files")
        if files:
            out += [{"file": f["name"], "sha256": f["sha256"], "debates": f.get("debates"),
                     "format": m["imported"]["format"], "dataset": m["imported"]["datasets"],
                     "grading": m["imported"]["grading"], "model": m["imported"]["model"],
                     "protocol": (m["imported"].get("protocol") or {}).get("name")}
                    for f in files]
        else:
            out += [{"file": shown(p), "sha256": file_sha256(p)} for p in record_files(Path(run))]
    return out
