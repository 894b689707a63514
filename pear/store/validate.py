"""``pear validate RUN_DIR``: every record of a run checked from scratch before it is trusted.

The problem kinds and how lines are read are in :mod:`pear.store.findings`; the per-record
checks in :mod:`pear.store.checks`; the same checks run whenever the view indexes a run
(:func:`pear.store.view.load`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pear.paths import shown
from pear.store import indexing, view
from pear.store.findings import (DROP_ENV, KINDS, Findings, Problem,  # noqa: F401
                                 ValidationError, drop_invalid_default, escape)
from pear.store.manifest import read as read_manifest
from pear.store.records import iter_records, record_files

__all__ = ["Validation", "validate", "check_branches", "ValidationError", "Findings", "KINDS",
           "escape", "drop_invalid_default", "DROP_ENV"]


# ----------------------------------------------------------------- the entry points

@dataclass(frozen=True)
class Validation:
    """What :func:`validate` found in a run directory, and how long it took."""

    run_dir: Path
    findings: Findings
    debates: int
    """Records in the view afterwards (the valid ones)."""
    files: int
    seconds: float

    def report(self, *, elide: bool = False) -> str:
        """The verdict, counts and problems; the run named as :func:`pear.paths.shown` does
        (``elide``: a run outside the checkout by its name only, for a notebook's output)."""
        verdict = "valid" if self.findings.ok else "DAMAGED"
        return (f"{shown(self.run_dir, elide=elide)}: {verdict}; {self.debates} valid records "
                f"in {self.files} record files checked in {self.seconds:.1f} s\n"
                f"{self.findings.report()}")


def validate(run_dir: str | os.PathLike[str]) -> Validation:
    """Check every line of ``run_dir`` from scratch (``pear validate``): the columnar view
    is rebuilt with every check, damaged records left out of it and counted, and the
    findings (the view's, the manifest's, torn tails, repeated ids) returned.  A later
    analysis of a damaged run still stops unless asked to drop the damaged records.  A
    directory with neither a manifest nor a record file is no run: one ValueError."""
    import tempfile
    import time

    root = indexing.run_dir_of(run_dir)
    if read_manifest(root) is None and not record_files(root):
        raise ValueError(f"not a run directory: {str(root)!r} holds neither a manifest.json "
                         "nor a record file (a mistyped path?)")
    t0 = time.perf_counter()
    try:
        s = indexing.index(root, rebuild=True, drop_invalid=True)
        vdir = root / indexing.VIEW_DIR
        man = indexing.read_manifest(vdir)
        found = view.findings(view.View(files=[root / f["path"] for f in man.files],
                                        root=root, vdir=vdir, manifest=man), man)
    except PermissionError:  # a read-only copy: check it in a temporary view
        with tempfile.TemporaryDirectory() as tmp:
            vdir = Path(tmp) / indexing.VIEW_DIR
            s = indexing.index(root, view_dir=vdir, drop_invalid=True)
            man = indexing.read_manifest(vdir)
            found = view.findings(view.View(files=[root / f["path"] for f in man.files],
                                            root=root, vdir=vdir, manifest=man), man)
    found = found.merge(check_branches(root))
    return Validation(root, found, s.debates, s.files, time.perf_counter() - t0)


def check_branches(run_dir: str | os.PathLike[str]) -> Findings:
    """For a run of counterfactual branches (``pear branch``; its manifest names the parent
    run): every branched record's copied rounds (0..R) equal its parent debate's, and the
    parent run and debate exist.  Empty findings for any other run."""
    import json
    root = Path(run_dir)
    found = Findings()
    info = (read_manifest(root) or {}).get("branched_from")
    if not info:
        return found
    parent_dir = Path(info["run"])
    if not parent_dir.is_absolute():
        parent_dir = (root / parent_dir).resolve()
    if not parent_dir.is_dir():
        found.add(Problem("branch", str(root), f"parent run {str(parent_dir)!r} is missing"))
        return found
    wanted: dict[str, list[tuple[str, int, list[Any]]]] = {}
    for rec in iter_records(root):
        bf = rec.get("branched_from")
        if not bf:
            found.add(Problem("branch", rec["debate_id"], "a record without branched_from "
                                                          "in a branch run"))
            continue
        wanted.setdefault(bf["debate_id"], []).append(
            (rec["debate_id"], int(bf["round"]), rec["rounds_data"][:int(bf["round"]) + 1]))
    for parent in iter_records(parent_dir):
        for child, r, copied in wanted.pop(parent["debate_id"], []):
            if json.dumps(copied, sort_keys=True) != json.dumps(
                    parent["rounds_data"][:r + 1], sort_keys=True):
                found.add(Problem("branch", child, f"rounds 0..{r} differ from those of its "
                                                   f"parent {parent['debate_id']}"))
    for pid, children in wanted.items():
        for child, _, _ in children:
            found.add(Problem("branch", child, f"parent debate {pid} is not in the parent run"))
    return found

