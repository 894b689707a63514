"""The shipped real debates and their graded copies (``data/real-debates/graded/``,
:mod:`pear.store.shipped`): DyLAN's MATH corpus (:data:`pear.store.import_cache.GRADED`) and the
shipped files notebook 17 reads (:data:`SHIPPED`, imported by :func:`shipped_runs`), each copy
written from an import from scratch and held equal to one (``pear population shipped
write-graded``, ``pear population shipped check``), so that a first build restores an import from
its copy instead of grading every answer again."""
from __future__ import annotations

import os
from pathlib import Path

from pear.paths import REAL_DEBATES_DIR, ShownPath
from pear.store import shipped as shipped_import
from pear.store.import_cache import CORPUS, GRADED, IMPORTED_DIR, corpus_run, imported_run
from pear.store.readers import DuReader, DylanReader
from pear.tasks.benchmarks import sha256_files

__all__ = ["SHIPPED", "shipped_runs", "write_graded", "check_graded", "write_shipped_graded",
           "check_shipped_graded"]

SHIPPED = {"dylan-math500": (DylanReader.name, "dylan-math500-gpt35.json.gz", "math500",
                             "gpt-3.5-turbo-0301")}
"""Name -> (format, file under data/real-debates, dataset, model) of each shipped file.  Each
file's import is shipped graded as ``pear.store.shipped.GRADED_DIR / name``: a first build
writes the import from it instead of asking Math-Verify for every answer again (DyLAN's
MATH-500 file: about 6,500 readings and comparisons, 24 s on a 2-core machine)."""


def shipped_runs(du_file: str = "", du_dataset: str = "gsm8k", du_grading: str = "",
                 du_model: str = "", where: str | os.PathLike[str] | None = None,
                 fresh: bool = False) -> dict[str, Path]:
    """Name -> run directory of each shipped import (under ``where``, default
    ``build/imported``; written from its graded copy (:data:`SHIPPED`) when that is
    exactly this import, unless ``fresh``: imported now whatever is there or shipped), plus
    ``du_file`` (a Du et al. file) when given (each a :class:`pear.paths.ShownPath`: the
    notebook shows them without the builder's path)."""
    from pear.core.hashing import content_digest
    # one folder per benchmark data (PEAR_DATA_DIR): imports matched against other questions
    # never replace each other
    data = content_digest(sha256_files(), n=8)
    root = Path(where) if where else IMPORTED_DIR
    out = {}
    for name, (fmt, file, dataset, model) in SHIPPED.items():
        out[name] = ShownPath(imported_run(
            fmt, REAL_DEBATES_DIR / file, root / f"{name}-{data}", dataset=dataset, model=model,
            shipped=shipped_import.GRADED_DIR / name, fresh=fresh))
    if du_file:
        name = f"du-{Path(du_file).name.split('.')[0]}"
        out[name] = ShownPath(imported_run(DuReader.name, du_file, root / f"{name}-{data}",
                                           dataset=du_dataset, model=du_model,
                                           grading=du_grading or None))
    return out


def write_graded(dest: Path = GRADED, *, corpus: Path = CORPUS,
                 where: str | os.PathLike[str] | None = None) -> Path:
    """Import ``corpus`` from scratch (:func:`corpus_run` with ``fresh``, under ``where``) and
    ship the run as its graded copy ``dest`` (:func:`pear.store.shipped.write`)."""
    return shipped_import.write(corpus_run(where, corpus=corpus, fresh=True), dest)


def check_graded(run: str | os.PathLike[str], dest: Path = GRADED) -> list[str]:
    """What differs between the shipped graded copy ``dest`` and ``run``, an import of the
    corpus from scratch (:func:`pear.store.shipped.check`: timing, wall-clock and environment
    fields aside; empty: the shipped copy is what the code produces)."""
    return shipped_import.check(dest, run, CORPUS.name)


def write_shipped_graded(where: str | os.PathLike[str] | None = None) -> list[Path]:
    """Import each shipped file from scratch (under ``where``, default ``build/imported``) and
    ship the import as its graded copy (:data:`SHIPPED`); the copies written."""
    return [shipped_import.write(run, shipped_import.GRADED_DIR / name)
            for name, run in shipped_runs(where=where, fresh=True).items()]


def check_shipped_graded(runs: dict[str, Path] | None = None) -> list[str]:
    """What differs between each shipped file's graded copy and ``runs`` (name -> an import
    from scratch; default: imported now, :func:`shipped_runs` with ``fresh``); empty: every
    copy is what the code produces (:func:`pear.store.shipped.differences`: timing, wall-clock
    and environment fields aside)."""
    runs = shipped_runs(fresh=True) if runs is None else runs
    return [line for name, run in runs.items() for line in shipped_import.check(
        shipped_import.GRADED_DIR / name, run, SHIPPED[name][1])]
