"""The import cache: other frameworks' debates imported once per machine (``build/imported/``)
and reused, safe for any number of processes asking for the same import at once.

:func:`imported_run` is the cache's one entry: a run directory holding a file imported
(:func:`pear.store.importing.import_files`) is kept when its manifest says it is exactly that
import, else written from a shipped graded copy (:mod:`pear.store.shipped`) when one matches,
else imported now.  Two writers never meet: the check and the write happen under an exclusive
lock on a file beside the run directory (:func:`locked`: ``.<name>.lock``, ``fcntl.flock``), so
a second process asking for the same import waits for the first and then keeps what it wrote;
and every write is whole or absent (a temporary folder beside the run, renamed into place:
:func:`pear.paths.new_dir`; a stale import is renamed aside before it is removed), so a reader
never sees half a run.

DyLAN's corpora, the runs the corpus fit (:mod:`pear.populations.corpus_fit`) and notebooks read:

* :func:`corpus_run`: its whole MATH corpus (:data:`CORPUS`), written from its shipped graded
  copy (:data:`GRADED`) on a first build;
* :func:`mmlu_runs`: its MMLU debates (:data:`MMLU_CORPUS`), one run per team size
  (:data:`MMLU_TEAMS`);
* :func:`default_runs`: both.
"""
from __future__ import annotations

import contextlib
import os
import shutil
from functools import partial
from pathlib import Path

from pear.core.hashing import file_sha256
from pear.parallel import cores_per_process, exclusive, fork_map
from pear.paths import BUILD_DIR, REAL_DEBATES_DIR
from pear.store import manifest, shipped as shipped_import
from pear.store.importing import import_files, same_import
from pear.store.readers import DylanMmluReader, DylanReader

__all__ = ["IMPORTED_DIR", "CORPUS", "CORPUS_DATASET", "CORPUS_GRADING", "CORPUS_MODEL",
           "GRADED", "MMLU_CORPUS", "MMLU_TEAMS", "MMLU_DATASET", "MMLU_GRADING", "locked",
           "imported_run", "corpus_run", "mmlu_runs", "default_runs"]

IMPORTED_DIR = BUILD_DIR / "imported"
"""Where the cache keeps its imports by default, one run directory each."""

CORPUS = REAL_DEBATES_DIR / "dylan-math-gpt35.tgz"
"""DyLAN's whole corpus of gpt-3.5 MATH debates (MIT; ``data/real-debates/README.md``)."""
CORPUS_DATASET = "math"
CORPUS_GRADING = "math"
CORPUS_MODEL = "gpt-3.5-turbo-0301"
GRADED = shipped_import.GRADED_DIR / "dylan-math-gpt35"
"""The shipped graded copy of :data:`CORPUS`'s import (:mod:`pear.store.shipped`: its manifest
and its records xz-compressed), written by ``pear population shipped write-graded`` and held equal to a
fresh import by ``pear population shipped check``; derived from DyLAN's records (MIT,
``data/real-debates/LICENSE-DyLAN``)."""
MMLU_CORPUS = REAL_DEBATES_DIR / "dylan-mmlu-gpt35.tgz"
"""DyLAN's MMLU debates (MIT): role-prompted gpt-3.5 teams of 2, 3, 4 and 7 on 2,809 MMLU
questions, one source protocol per team size (``pear import dylan-mmlu --protocol``)."""
MMLU_TEAMS = (2, 3, 4, 7)
MMLU_DATASET = "mmlu"
MMLU_GRADING = "letters"


def locked(path: str | os.PathLike[str]) -> contextlib.AbstractContextManager[None]:
    """The exclusive lock of ``path`` (the file ``.<name>.lock`` beside it:
    :func:`pear.parallel.exclusive`); another process asking for it waits, saying so."""
    path = Path(path)
    return exclusive(path.parent / f".{path.name}.lock",
                     f"pear: another process is writing {path.name}; waiting for it")


def _remove(out: Path) -> None:
    """``out`` removed: renamed aside first, so that no reader finds half of it."""
    aside = out.parent / f".{out.name}.stale-{os.getpid()}"
    os.replace(out, aside)
    shutil.rmtree(aside)


def imported_run(fmt: str, file: str | os.PathLike[str], out: str | os.PathLike[str], *,
                 dataset: str, model: str = "", grading: str | None = None,
                 skip_bad: bool = False,
                 shipped: str | os.PathLike[str] | None = None,
                 protocol: str | None = None, fresh: bool = False) -> Path:
    """The run directory ``out`` holding ``file`` imported: kept when ``out`` already holds
    exactly this import (:func:`pear.store.importing.same_import`: the file's sha256, the
    importer's version, the dataset, the model, our benchmarks), else written from the shipped
    graded copy ``shipped`` (:mod:`pear.store.shipped`) when its manifest says it is exactly this
    import, else imported now (``skip_bad``: bad entries are left out and listed in the
    manifest; ``protocol``: only that source protocol's debates, as ``pear import
    --protocol``).  ``fresh``: imported now whatever is there or shipped.  Under
    :func:`locked`: one process writes ``out`` at a time, the others wait and keep it."""
    out, file = Path(out), Path(file)
    same = dict(dataset=dataset, grading=grading, model=model)
    with locked(out):
        held = manifest.read(out) if out.is_dir() and not fresh else None
        if same_import(held, fmt, [file], **same) and (protocol is None or (
                held["imported"].get("protocol") or {}).get("name") == protocol):  # type: ignore
            return out
        if out.exists():
            _remove(out)
        if shipped is not None and not fresh:
            ship = shipped_import.read_manifest(shipped)
            if same_import(ship, fmt, [file], **same) and \
                    (skip_bad or not ship["imported"].get("bad_count")):  # type: ignore[index]
                return shipped_import.restore(shipped, out, [file])
        import_files(fmt, [file], out, dataset=dataset, grading=grading, model=model,
                     skip_bad=skip_bad, protocol=protocol)
    return out


def corpus_run(where: str | os.PathLike[str] | None = None, *, corpus: Path = CORPUS,
               graded: Path | None = GRADED, fresh: bool = False) -> Path:
    """The run directory of ``corpus`` (:data:`CORPUS`) imported
    (``build/imported/dylan-math-<sha>``, under ``where`` when given): kept when it already
    holds exactly this file's import, else written from the shipped graded copy ``graded``
    (:data:`GRADED`) when that is exactly this import (no grading: seconds), else imported now
    (minutes: Math-Verify grades every answer).  ``fresh``: imported now whatever is there or
    shipped.  Debates whose gold our grader cannot read are left out (listed in the run's
    manifest)."""
    root = Path(where) if where else IMPORTED_DIR
    out = root / f"dylan-math-{file_sha256(corpus)[:8]}"
    return imported_run(DylanReader.name, corpus, out, dataset=CORPUS_DATASET,
                        grading=CORPUS_GRADING, model=CORPUS_MODEL, skip_bad=True,
                        shipped=graded, fresh=fresh)


def mmlu_runs(where: str | os.PathLike[str] | None = None, *, corpus: Path = MMLU_CORPUS,
              fresh: bool = False) -> list[Path]:
    """The run directories of DyLAN's MMLU debates (:data:`MMLU_CORPUS`), one per team size
    (``build/imported/dylan-mmlu<n>-<sha>``, under ``where`` when given), each kept when it
    already holds exactly this import, else imported now (graded by letter: seconds; the
    teams on this process's cores, the largest first); ``fresh``: imported now whatever is
    there."""
    root = Path(where) if where else IMPORTED_DIR
    sha8 = file_sha256(corpus)[:8]
    runs = [root / f"dylan-mmlu{n}-{sha8}" for n in MMLU_TEAMS]
    teams = sorted(zip(MMLU_TEAMS, runs), reverse=True)  # (DyLAN's 7-agent team is the largest)
    done = dict(fork_map(partial(_mmlu_team, corpus=corpus, fresh=fresh), teams,
                         cores_per_process()))
    return [done[n] for n in MMLU_TEAMS]


def _mmlu_team(team: tuple[int, Path], corpus: Path, fresh: bool) -> tuple[int, Path]:
    """One team size of :func:`mmlu_runs`: ``(n, its run)``, kept or imported."""
    n, run = team
    return n, imported_run(DylanMmluReader.name, corpus, run, dataset=MMLU_DATASET,
                           grading=MMLU_GRADING, model=CORPUS_MODEL, skip_bad=True,
                           protocol=f"dylan-mmlu-{n}", fresh=fresh)


def default_runs(fresh: bool = False) -> list[Path]:
    """What the corpus fit reads: DyLAN's MATH corpus (:func:`corpus_run`) and its MMLU teams
    (:func:`mmlu_runs`); ``fresh``: both imported from scratch."""
    return [corpus_run(fresh=fresh), *mmlu_runs(fresh=fresh)]
