"""The shipped graded copies of the imported real debates (``data/real-debates/graded/``,
:mod:`pear.store.shipped`): DyLAN's MATH corpus (:data:`pear.store.import_cache.GRADED`) and
notebook 17's shipped files (:data:`pear.populations.real_debates.SHIPPED`), each written from
an import from scratch and held equal to one (``pear population shipped write-graded``,
``pear population shipped check``), so that a first build restores an import from its copy
instead of grading every answer again."""
from __future__ import annotations

import os
from pathlib import Path

from pear.store import shipped as shipped_import
from pear.store.import_cache import CORPUS, GRADED, corpus_run
from pear.populations.real_debates import SHIPPED, shipped_runs

__all__ = ["write_graded", "check_graded", "write_shipped_graded", "check_shipped_graded"]


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
