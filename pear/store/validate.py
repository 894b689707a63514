"""``pear validate RUN_DIR``: every record of a run checked from scratch before it is trusted.

The problem kinds and how lines are read are in :mod:`pear.store.findings`; the per-record
checks in :mod:`pear.store.checks`; the same checks run whenever the view indexes a run
(:func:`pear.store.view.load`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pear.store import indexing, view
from pear.store.findings import (DROP_ENV, KINDS, Findings, ValidationError,  # noqa: F401
                                 drop_invalid_default, escape)

__all__ = ["Validation", "validate", "ValidationError", "Findings", "KINDS", "escape",
           "drop_invalid_default", "DROP_ENV"]


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

    def report(self) -> str:
        verdict = "valid" if self.findings.ok else "DAMAGED"
        return (f"{self.run_dir}: {verdict}; {self.debates} valid records in {self.files} "
                f"record files checked in {self.seconds:.1f} s\n{self.findings.report()}")


def validate(run_dir: str | os.PathLike[str]) -> Validation:
    """Check every line of ``run_dir`` from scratch (``pear validate``): the columnar view
    is rebuilt with every check, damaged records left out of it and counted, and the
    findings (the view's, the manifest's, torn tails, repeated ids) returned.  A later
    analysis of a damaged run still stops unless asked to drop the damaged records."""
    import tempfile
    import time

    root = indexing.run_dir_of(run_dir)
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
    return Validation(root, found, s.debates, s.files, time.perf_counter() - t0)

