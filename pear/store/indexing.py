"""Indexing a run directory's records into its columnar view (``<run_dir>/view/``), by
streaming: blocks of :data:`BATCH` record lines (checked and laid out in worker processes
when a file has many new lines, two blocks per worker in flight), each block's rows flushed
to Parquet as one row group, in file order.

Freshness is checked, never assumed: ``view/manifest.json`` records, for every record file,
how far it was indexed and a fingerprint of those bytes (head, tail and sampled blocks),
and for every Parquet part its size and sha256.  :func:`index` appends one part holding only
the lines written since (incremental), and rebuilds the whole view when a record file
shrank, changed or vanished, a part is missing or damaged, the manifest is unreadable or of
another :data:`VERSION`, or the parts grew too many.  The manifest is written last and
atomically, so an interrupted index leaves the previous view intact.

Every line is checked as it is indexed (:class:`pear.store.checks.Checker`, against the run
manifest's protocol): a damaged record stops the index with one clear error
(:class:`pear.store.validate.ValidationError`, nothing written), or with ``drop_invalid`` is left
out of the view; the manifest keeps the findings (counts and first examples), so that a
later load knows what the view lacks.  A changed run-manifest protocol rebuilds the view.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from collections import deque
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pear.core.hashing import file_sha256
from pear.store.checks import Checker
from pear.store.columns import SCHEMAS, TABLES, Rows
from pear.store.records import encode_record, few_collections, record_files
from pear.store.findings import KINDS, Findings, ValidationError, digest, scan_lines

__all__ = ["VIEW_DIR", "VERSION", "BATCH", "IndexSummary", "Manifest", "index",
           "read_manifest", "part_path", "run_dir_of", "Laid", "lay_out", "ViewWriter"]

from pear.paths import VIEW_DIR, VIEW_MANIFEST, write_atomic  # noqa: E402
from pear.parallel import exclusive, fork_map, usable_cores  # noqa: E402
VERSION = 4  # 2: debates.max_rounds and debates.stop_reason (early stopping); 3: the
# records' checks (debates.digest, the manifest's findings and protocol); 4: debates.relabelling
# and debates.orbit (issue 73)
"""Bump when a table's columns or their meaning change: older views are then rebuilt."""
BATCH = 1000  # our choice: debates per Parquet row group (bounded memory while indexing)
_FINGERPRINT_BLOCK = 4096  # our choice
_FINGERPRINT_SAMPLES = 16  # our choice: blocks sampled between the head and the tail
_MAX_PARTS = 32  # our choice: more parts than this and the view is rewritten in one part


def _fingerprint(path: Path, end: int) -> str:
    """sha256 of the head, the tail and evenly spaced blocks of ``path[:end]``."""
    h = hashlib.sha256(str(end).encode())
    b = _FINGERPRINT_BLOCK
    starts = {0, max(0, end - b)}
    if end > 2 * b:
        starts |= {int(x) for x in np.linspace(b, end - 2 * b, _FINGERPRINT_SAMPLES)}
    with open(path, "rb") as fh:
        for s in sorted(starts):
            fh.seek(s)
            h.update(fh.read(min(b, end - s)))
    return h.hexdigest()


@dataclass
class Manifest:
    files: list[dict[str, Any]] = field(default_factory=list)
    """Per record file: ``path`` (relative), ``offset`` (bytes indexed), ``lines``,
    ``fingerprint`` of ``[0, offset)``."""
    parts: list[dict[str, Any]] = field(default_factory=list)
    """Per part: ``name``, ``debates`` and per table ``{rows, bytes, sha256}``."""
    debates: int = 0
    findings: dict[str, Any] = field(default_factory=dict)
    """What the checks found in the indexed lines (:meth:`pear.store.validate.Findings.to_dict`)."""
    protocol: str = ""
    """The run manifest's protocol the lines were checked against (:class:`Checker`)."""

    def to_json(self) -> str:
        return json.dumps({"version": VERSION, "files": self.files, "parts": self.parts,
                           "debates": self.debates, "findings": self.findings,
                           "protocol": self.protocol}, indent=1)


def read_manifest(vdir: Path) -> Manifest | None:
    """The manifest if present and of this version, else None."""
    try:
        raw = json.loads((vdir / VIEW_MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        return None
    try:
        return Manifest(list(raw["files"]), list(raw["parts"]), int(raw["debates"]),
                        dict(raw.get("findings") or {}), str(raw.get("protocol", "")))
    except (KeyError, TypeError, ValueError):
        return None


def part_path(vdir: Path, name: str, table: str) -> Path:
    return vdir / table / f"{name}.parquet"


def _damage(vdir: Path, man: Manifest, *, verify: bool = True) -> str | None:
    """Why the parts cannot be trusted, or None."""
    total = 0
    for part in man.parts:
        total += part["debates"]
        for t in TABLES:
            p = part_path(vdir, part["name"], t)
            meta = part["tables"].get(t)
            if meta is None or not p.is_file():
                return f"part {p.name} of table {t} is missing"
            if p.stat().st_size != meta["bytes"]:
                return f"part {p} has {p.stat().st_size} bytes, {meta['bytes']} were written"
            if verify and file_sha256(p) != meta["sha256"]:
                return f"part {p} differs from what was written (sha256)"
    if total != man.debates:
        return f"the parts hold {total} debates, the manifest says {man.debates}"
    return None


def _staleness(root: Path, man: Manifest, files: Sequence[Path]) -> str | None:
    """Why the indexed bytes of the record files no longer hold (rebuild), or None."""
    now = {_rel(root, p) for p in files}
    for f in man.files:
        p = root / f["path"]
        if f["path"] not in now or not p.is_file():
            return f"record file {f['path']} is gone"
        if p.stat().st_size < f["offset"]:
            return f"record file {f['path']} shrank below what was indexed"
        if _fingerprint(p, f["offset"]) != f["fingerprint"]:
            return f"record file {f['path']} changed in what was indexed"
    return None


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


@dataclass(frozen=True)
class IndexSummary:
    """What :func:`index` did."""

    action: str
    """"built" (from scratch), "updated" (new lines appended), or "fresh" (nothing new)."""
    reason: str
    """Why it rebuilt ("" unless built over an existing view)."""
    debates: int
    """Debates in the view afterwards (before de-duplication by id)."""
    new_debates: int
    files: int
    seconds: float


def _locked(vdir: Path) -> AbstractContextManager[None]:
    """One indexer at a time per view (:func:`pear.parallel.exclusive`)."""
    return exclusive(vdir / ".lock")


def run_dir_of(run_dir: str | os.PathLike[str]) -> Path:
    root = Path(run_dir)
    if not root.exists():
        raise FileNotFoundError(f"run directory {str(root)!r} does not exist")
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is a file: give the run directory that holds it")
    return root


def index(run_dir: str | os.PathLike[str], *, verify: bool = True,
          view_dir: str | os.PathLike[str] | None = None, drop_invalid: bool = False,
          rebuild: bool = False, workers: int | None = None) -> IndexSummary:
    """Bring ``<run_dir>/view/`` up to date with the records under ``run_dir`` (see the
    module docstring): nothing when fresh, a new part with the appended lines, or a full
    rebuild when the view is absent, stale or damaged (or ``rebuild``).  ``verify=False``
    skips hashing the parts (sizes are still checked); ``view_dir`` puts the view elsewhere
    than ``<run_dir>/view``.  A damaged record is an error naming file and line
    (:class:`pear.store.validate.ValidationError`) unless ``drop_invalid``.  ``workers``:
    processes that check and lay out the lines of a file with many new ones (None: every
    core); the view's tables are the same for any number."""
    root = run_dir_of(run_dir)
    files = record_files(root)
    t0 = time.perf_counter()
    vdir = Path(view_dir) if view_dir is not None else root / VIEW_DIR
    checker = Checker(root)
    with _locked(vdir):
        man = read_manifest(vdir)
        reason = "" if man is None else (_damage(vdir, man, verify=verify)
                                         or _staleness(root, man, files) or "")
        if man is not None and not reason and man.protocol != checker.protocol_key:
            reason = "the run manifest's protocol changed"
        if rebuild and not reason:
            reason = "a full check was asked for"
        if man is None or reason or len(man.parts) >= _MAX_PARTS:
            if man is not None and not reason:
                reason = f"{len(man.parts)} parts: compacting"
            _clear(vdir)
            man = Manifest(protocol=checker.protocol_key)
            action = "built"
        else:
            action = "updated"
        before = man.debates
        with few_collections():
            _append(root, vdir, man, files, checker, drop_invalid, workers)
        if man.debates == before and action == "updated":
            action = "fresh"
    return IndexSummary(action, reason, man.debates, man.debates - before, len(files),
                        time.perf_counter() - t0)


def _clear(vdir: Path) -> None:
    for t in TABLES:
        shutil.rmtree(vdir / t, ignore_errors=True)
    (vdir / VIEW_MANIFEST).unlink(missing_ok=True)


class _Part:
    """One new Parquet part of the view: its four tables written batch by batch into
    temporary files, moved into place by :meth:`finish` (never half-visible)."""

    def __init__(self, vdir: Path, man: Manifest) -> None:
        """The part after ``man``'s, named by its place and the time."""
        self.vdir = vdir
        self.name = f"part-{len(man.parts):05d}-{time.time_ns() % 10**12:012d}"
        self.tmp = {t: part_path(vdir, self.name, t).with_suffix(".tmp") for t in TABLES}
        self.writers: dict[str, pq.ParquetWriter] = {}

    def write(self, tables: dict[str, pa.Table], first_debate: int = 0) -> None:
        """Append a batch's tables, their debates numbered from ``first_debate``."""
        for t, table in tables.items():
            if first_debate:
                i = table.schema.get_field_index("debate")
                table = table.set_column(i, "debate", pc.add(
                    table["debate"], pa.scalar(first_debate, table.schema.field(i).type)))
            if t not in self.writers:
                self.tmp[t].parent.mkdir(parents=True, exist_ok=True)
                self.writers[t] = pq.ParquetWriter(self.tmp[t], SCHEMAS[t], compression="zstd")
            self.writers[t].write_table(table)

    def finish(self) -> dict[str, Any]:
        """Close and move the tables into place; per table its rows, bytes and sha256."""
        self.close()
        meta = {}
        for t in TABLES:
            final = part_path(self.vdir, self.name, t)
            os.replace(self.tmp[t], final)
            meta[t] = {"rows": pq.read_metadata(final).num_rows,
                       "bytes": final.stat().st_size, "sha256": file_sha256(final)}
        return meta

    def close(self) -> None:
        for w in self.writers.values():
            w.close()
        self.writers.clear()

    def discard(self) -> None:
        self.close()
        for p in self.tmp.values():
            p.unlink(missing_ok=True)


def _file_entries(root: Path, man: Manifest, files: Sequence[Path]
                  ) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The manifest's record-file entries with new files appended (offset 0), and each
    file's position among them."""
    entries = [dict(f) for f in man.files]
    slot = {f["path"]: i for i, f in enumerate(entries)}
    for path in files:
        if _rel(root, path) not in slot:
            slot[_rel(root, path)] = len(entries)
            entries.append({"path": _rel(root, path), "offset": 0, "lines": 0})
    return entries, slot


def _append(root: Path, vdir: Path, man: Manifest, files: Sequence[Path], checker: Checker,
            drop_invalid: bool, workers: int | None = None) -> None:
    """Check and index every line past each file's recorded offset into one new part; then
    write the manifest (atomically, last: a crash or a damaged record before it leaves the
    old view intact).  Blocks of lines are checked and laid out in ``workers`` processes
    (:func:`_blocks`); their problems and rows are taken in file order here."""
    entries, slot = _file_entries(root, man, files)
    part = _Part(vdir, man)
    added, found = 0, Findings()
    try:
        for path in files:
            file_no = slot[_rel(root, path)]
            entry = entries[file_no]
            offset, lines = entry["offset"], entry["lines"]
            for block, checked, rows in _blocks(checker, path, file_no,
                                                  scan_lines(path, offset, lines), workers):
                offset, lines = block[-1][0] + block[-1][3], block[-1][1]
                for problems, bad in checked:
                    for p in problems:
                        found.add(p)
                    if bad:
                        if not drop_invalid:
                            raise ValidationError(root, found)
                        found.dropped += 1
                if rows is not None:
                    tables = rows.tables()
                    part.write(tables, first_debate=man.debates + added)
                    added += tables["debates"].num_rows
            entry.update(offset=offset, lines=lines, fingerprint=_fingerprint(path, offset))
        if added:
            man.parts.append({"name": part.name, "debates": added, "tables": part.finish()})
            man.debates += added
        man.files = entries
        man.findings = Findings.from_dict(man.findings).merge(found).to_dict()
        write_atomic(vdir / VIEW_MANIFEST, man.to_json())
    finally:
        part.discard()


PARALLEL_LINES = 2 * BATCH
"""New lines of a file from which their blocks are checked in worker processes (our
choice: for fewer, starting the processes costs more than it saves)."""
_FORKED_CHECKER: Checker | None = None
_Block = list[tuple[int, int, "bytes | None", int]]


def _check_block(checker: Checker, path: Path, file_no: int, block: _Block
                 ) -> tuple[list[tuple[list[Any], bool]], Rows | None]:
    """One block of lines checked and laid out: per line its problems and whether one is an
    error (such a record is not laid out), and the column lists of the readable records
    without errors, their debates numbered from 0 (None: no such record).  Plain Python
    values: a forked worker returns them and never touches Arrow (whose threads and locks
    a fork copies in whatever state they were)."""
    rows, checked = Rows(), []
    for pos, line_no, line, size in block:
        rec, problems = checker.check_line(f"{path}:{line_no}", line, size)
        bad = any(KINDS[p.kind][0] == "error" for p in problems)
        if rec is not None and not bad:
            rows.add(rec, rows.n, file_no, pos, digest(rec))
        checked.append((problems, bad))
    return checked, rows if rows.n else None


def _blocks(checker: Checker, path: Path, file_no: int, lines: Iterator[Any],
            workers: int | None = None
            ) -> Iterator[tuple[_Block, list[tuple[list[Any], bool]], Rows | None]]:
    """Each block of :data:`BATCH` ``lines`` (:func:`pear.store.findings.scan_lines`) with
    :func:`_check_block`'s result, in order: here, or, for a file with at least
    :data:`PARALLEL_LINES` new lines and ``workers`` > 1 (None: every core), in forked
    worker processes, two blocks per worker in flight (a worker that dies is an error here,
    not a wait without end).  The results are those of one process."""
    global _FORKED_CHECKER
    import itertools
    workers = usable_cores() if workers is None else workers
    blocks = iter(lambda: list(itertools.islice(lines, BATCH)), [])
    head = list(itertools.islice(blocks, PARALLEL_LINES // BATCH))
    if workers <= 1 or sum(map(len, head)) < PARALLEL_LINES:  # fewer lines: here
        for block in itertools.chain(head, blocks):
            yield (block, *_check_block(checker, path, file_no, block))
        return
    sent: deque[_Block] = deque()  # the blocks in flight, each yielded beside its result
    source = itertools.chain(head, blocks)
    del head  # held by nothing else: a block lives while it is in flight

    def sending() -> Iterator[_Block]:
        for block in source:
            sent.append(block)
            yield block

    _FORKED_CHECKER = checker  # what the workers check with: fork copies it
    results = fork_map(partial(_check_forked, path, file_no), sending(), workers, ahead=2)
    try:
        for result in results:
            yield (sent.popleft(), *result)
    finally:
        results.close()
        _FORKED_CHECKER = None


def _check_forked(path: Path, file_no: int, block: _Block) -> Any:
    """In a worker: :func:`_check_block` with the checker of the fork."""
    assert _FORKED_CHECKER is not None, "a worker runs only in a forked process"
    return _check_block(_FORKED_CHECKER, path, file_no, block)


# ----------------------------------------------------------------- written beside the records

class Laid(NamedTuple):
    """Records laid out where they ran (:func:`lay_out`): their lines, each line's problems
    and whether one is an error, and the column lists of those without errors (debates
    numbered from 0; where they lie in the record file is set by :class:`ViewWriter`)."""

    lines: list[bytes]
    checked: list[tuple[list[Any], bool]]
    rows: Rows | None


def lay_out(checker: Checker, records: Iterable[Any]) -> Laid:
    """``records`` (in the process that ran them) as their lines in the store,
    each decoded and checked as :func:`index` checks a line (:func:`_check_block`, which is
    also the schema check :func:`pear.store.records.encode_record` makes): a record that breaks
    the schema is the same error as there, naming the field."""
    records = list(records)
    lines = [encode_record(r, check=False) for r in records]
    checked, rows = _check_block(checker, Path(), 0, [(0, 0, line + b"\n", len(line) + 1)
                                                       for line in lines])
    for record, (problems, _) in zip(records, checked):
        if any(p.kind in ("schema", "corrupt_line") for p in problems):
            encode_record(record)  # raises, naming the field
    return Laid(lines, checked, rows)


class ViewWriter:
    """A run directory's view written while its one record file grows (the runner's,
    :func:`pear.runs.runner.run`), instead of indexed from the records afterwards: each
    record's rows and checks made as :func:`index` makes them, in the process that ran the
    debate (:func:`lay_out`), a :data:`BATCH` of debates per row group of one new part, and
    the manifest written by :meth:`close`.  The records stay the
    truth: :meth:`open` returns None unless the view already holds every line of the run's
    record files (or there are none), and :meth:`close` writes nothing when a line had an
    error, the run failed, or another process indexed the view meanwhile; :func:`index` then
    does what is left, as it would have without this writer.  The tables are those
    :func:`index` makes from the same records (``tests/test_view_written.py``)."""

    def __init__(self, root: Path, path: Path, man: Manifest, checker: Checker) -> None:
        self.root, self.vdir, self.path = root, root / VIEW_DIR, path
        self.man, self.checker = man, checker
        self.opened = man.to_json()
        self.entry = next((dict(f) for f in man.files if f["path"] == _rel(root, path)),
                          {"path": _rel(root, path), "offset": 0, "lines": 0})
        self.pos, self.line_no = self.entry["offset"], self.entry["lines"]
        self.part = _Part(self.vdir, man)
        self.rows, self.added, self.found, self.spoiled = Rows(), 0, Findings(), False

    @classmethod
    def open(cls, root: str | os.PathLike[str], path: str | os.PathLike[str]
             ) -> "ViewWriter | None":
        """A writer of ``root``'s view as ``path`` (a record file under ``root``, perhaps not
        made yet) grows, or None when the view cannot simply be continued: another record
        file holds lines, lines are not indexed yet, or the view is stale, damaged, of
        another protocol or in too many parts (:func:`index` sees to those)."""
        root, path = Path(root), Path(path)
        checker = Checker(root)
        rel = _rel(root, path)
        with _locked(root / VIEW_DIR):
            files = {_rel(root, p): p.stat().st_size for p in record_files(root)}
            if any(size for name, size in files.items() if name != rel):
                return None
            man = read_manifest(root / VIEW_DIR)
            if man is None:
                if files.get(rel):
                    return None
                _clear(root / VIEW_DIR)
                man = Manifest(protocol=checker.protocol_key)
            elif (man.protocol != checker.protocol_key or len(man.parts) >= _MAX_PARTS - 1
                  or _damage(root / VIEW_DIR, man, verify=False)
                  or _staleness(root, man, [root / name for name in files])
                  or any(f["path"] != rel for f in man.files)
                  or sum(f["offset"] for f in man.files) != files.get(rel, 0)):
                return None
        return cls(root, path, man, checker)

    def add(self, laid: Laid) -> None:
        """Records laid out (:func:`lay_out`) whose lines were just appended to the record
        file, in this order: their problems named by file and line as :func:`index` names
        them, their rows placed at their offsets."""
        places = []
        for line in laid.lines:
            self.line_no += 1
            places.append((self.pos, self.line_no))
            self.pos += len(line) + 1
        if self.spoiled:
            return
        good = []
        for (pos, line_no), (problems, bad) in zip(places, laid.checked):
            for p in problems:
                self.found.add(dataclasses.replace(p, where=f"{self.path}:{line_no}"))
            self.spoiled |= bad
            if not bad:
                good.append(pos)
        if laid.rows is not None and not self.spoiled:
            self.rows.extend(laid.rows, 0, good)
        if self.rows.n >= BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.rows.n and not self.spoiled:
            n = self.rows.n
            self.part.write(self.rows.tables(), first_debate=self.man.debates + self.added)
            self.added += n

    def close(self, ok: bool = True) -> bool:
        """Write the view (``ok``: the run did not fail) unless :meth:`open`'s conditions no
        longer hold; whether it was written."""
        try:
            if not ok or self.spoiled or not self.path.is_file() \
                    or self.path.stat().st_size != self.pos:
                return False
            self._flush()
            with _locked(self.vdir):
                now = read_manifest(self.vdir)
                if (now.to_json() if now is not None else Manifest(
                        protocol=self.checker.protocol_key).to_json()) != self.opened:
                    return False
                man = self.man
                if self.added:
                    man.parts.append({"name": self.part.name, "debates": self.added,
                                      "tables": self.part.finish()})
                    man.debates += self.added
                self.entry.update(offset=self.pos, lines=self.line_no,
                                  fingerprint=_fingerprint(self.path, self.pos))
                man.files = [self.entry]
                man.findings = Findings.from_dict(man.findings).merge(self.found).to_dict()
                write_atomic(self.vdir / VIEW_MANIFEST, man.to_json())
                return True
        finally:
            self.part.discard()
