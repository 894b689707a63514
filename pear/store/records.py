"""Records on disk: an append-only JSON Lines store, a resume index, and streaming readers.

One JSON object per finished debate (the schema: :mod:`pear.core.record`), one line each, in
files named ``debates.jsonl`` anywhere under a run directory.  Readers stream: one line in
memory at a time, whatever the size of the file.
"""
from __future__ import annotations

import contextlib
import gc
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterator

import msgspec

from pear.core.record import (IDENTITY, SCHEMA_VERSION, TIMING_FIELDS, AgentEntry,  # noqa: F401
                              Assessment, CritiqueEntry, DebateRecord, PromptStyle, RoundEntry,
                              RouterEntry, Tokens)
from pear.paths import RECORDS_FILE, RUN_MANIFEST

__all__ = [
    "RECORDS_FILE", "RecordWriter", "encode_record", "record_files", "iter_lines", "parse_line",
    "iter_records", "records_of", "read_records", "read_record_at", "completed_ids",
    "line_debate_id", "few_collections", "with_defaults",
]


# ----------------------------------------------------------------- writing

def _plain_float(obj: Any) -> float:
    """msgspec's hook for what it cannot encode itself: a float subclass (numpy's) as a float;
    anything else is not JSON."""
    if isinstance(obj, float):
        return float(obj)
    raise TypeError(f"not JSON: an object of type {type(obj).__name__}")


_ENCODER = msgspec.json.Encoder(enc_hook=_plain_float)
"""A record as one compact UTF-8 JSON line: the values ``json.dumps(record,
ensure_ascii=False, separators=(",", ":"))`` writes (the same bytes but for exponents: 1e16,
not 1e+16), about 7x faster."""


def encode_record(record: DebateRecord | dict[str, Any], check: bool = True) -> bytes:
    """``record``'s line in the store (without its newline), checked against
    :class:`DebateRecord` (unless ``check=False``: for a caller that decodes the line itself,
    :func:`pear.store.indexing.lay_out`); a record that breaks the schema is an error naming
    the field."""
    try:
        line = _ENCODER.encode(record)
        if check:
            parse_line("", 0, line)
    except (TypeError, ValueError) as err:
        raise ValueError(str(err).split(": ", 1)[-1]) from None
    return line


class RecordWriter:
    """Appends records to ``<run_dir>/debates.jsonl``: one line each, flushed at once,
    fsynced at batch boundaries (:meth:`sync`).  A torn last line left by a crash is
    truncated away before the first append, so new records never merge into it."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _repair_torn_tail(self.path)
        self._fh = open(self.path, "ab")

    def write(self, record: DebateRecord | dict[str, Any] | bytes) -> None:
        """Append one finished debate and flush it to the OS: a record, or its line as
        :func:`encode_record` made it (e.g. in the worker process that ran the debate).  A
        record that breaks the schema (:class:`DebateRecord`) is an error naming the field;
        nothing is written."""
        if not isinstance(record, bytes):
            try:
                record = encode_record(record)
            except ValueError as err:
                raise ValueError(f"refusing to write a record to {self.path}: {err}") from None
        self._fh.write(record + b"\n")
        self._fh.flush()

    def sync(self) -> None:
        """Make every record written so far durable (fsync)."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self.sync()
            self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _repair_torn_tail(path: Path) -> None:
    """Cut a trailing partial line (no newline) left by a crash, reading only the tail."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(size - 1)
        if fh.read(1) == b"\n":
            return
        cut, pos, block = 0, size, 1 << 16
        while pos > 0:  # the last newline, searched backwards block by block
            start = max(0, pos - block)
            fh.seek(start)
            i = fh.read(pos - start).rfind(b"\n")
            if i >= 0:
                cut = start + i + 1
                break
            pos = start
        warnings.warn(f"{path}: dropping a torn last line of {size - cut} bytes "
                      f"left by an interrupted run", RuntimeWarning, stacklevel=3)
        fh.truncate(cut)


# ----------------------------------------------------------------- reading

def record_files(run_dir: str | os.PathLike[str]) -> list[Path]:
    """Every ``debates.jsonl`` under ``run_dir`` (or ``run_dir`` itself if it is a file),
    sorted; an error if ``run_dir`` does not exist.  A directory below ``run_dir`` that
    holds its own run manifest (``manifest.json``, e.g. a study's variant under
    ``<runs>/studies/``) is another run: its records are not ``run_dir``'s."""
    root = Path(run_dir)
    if root.is_file():
        return [root]
    if not root.exists():
        raise FileNotFoundError(f"run directory {str(root)!r} does not exist")
    runs: dict[Path, bool] = {}

    def nested(d: Path) -> bool:
        if d == root:
            return False
        if d not in runs:
            runs[d] = (d / RUN_MANIFEST).is_file() or nested(d.parent)
        return runs[d]
    return sorted(p for p in root.rglob(RECORDS_FILE) if not nested(p.parent))


def iter_lines(path: str | os.PathLike[str], offset: int = 0, line_no: int = 0
               ) -> Iterator[tuple[int, int, bytes]]:
    """``(byte offset, line number, line)`` of every complete line of ``path`` from byte
    ``offset`` on (``line_no`` = the number of lines before ``offset``), one line in memory
    at a time.  A last line without its newline (a write still under way, or one a crash
    cut) is not yielded."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        pos, n = offset, line_no
        for line in fh:
            if not line.endswith(b"\n"):
                return
            n += 1
            yield pos, n, line
            pos += len(line)


_DECODER: msgspec.json.Decoder | None = None


def parse_line(path: Path | str, line_no: int, line: bytes) -> dict[str, Any] | None:
    """One record line decoded and checked against :class:`DebateRecord` (msgspec: unknown
    fields are ignored, a missing field or a wrong type is not); None for a blank line.  A
    corrupt or invalid line is an error naming the file, the line and the field."""
    global _DECODER
    if not line.strip():
        return None
    if _DECODER is None:
        _DECODER = msgspec.json.Decoder(DebateRecord)
    try:
        return _DECODER.decode(line)
    except msgspec.ValidationError as err:
        raise ValueError(f"{path}:{line_no}: not a debate record ({err})") from None
    except msgspec.DecodeError as err:
        raise ValueError(f"{path}:{line_no}: corrupt record ({err})") from None


def iter_records(run_dir: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Every complete record under ``run_dir``, streamed; a torn last line is skipped with a
    warning, a corrupt line elsewhere is an error naming the file and line."""
    for path in record_files(run_dir):
        end = 0
        for pos, line_no, line in iter_lines(path):
            end = pos + len(line)
            rec = parse_line(path, line_no, line)
            if rec is not None:
                yield rec
        if path.stat().st_size > end:
            warnings.warn(f"{path}: ignoring a torn last line "
                          f"({path.stat().st_size - end} bytes)", RuntimeWarning, stacklevel=2)


def records_of(run_dir: str | os.PathLike[str], ids: set[str]) -> Iterator[dict[str, Any]]:
    """The records under ``run_dir`` whose debate id is in ``ids``, streamed in file order
    (each line's id read from its start, :func:`line_debate_id`: only those lines parsed)."""
    for path in record_files(run_dir):
        for _, line_no, line in iter_lines(path):
            if line_debate_id(path, line_no, line) in ids:
                rec = parse_line(path, line_no, line)
                if rec is not None:
                    yield rec


def read_records(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All complete records under ``run_dir`` in memory, de-duplicated by ``debate_id``
    (first wins).  For small runs and tests; the analysis reads :mod:`pear.store.view`."""
    seen: set[str] = set()
    out = []
    for rec in iter_records(run_dir):
        if rec["debate_id"] not in seen:
            seen.add(rec["debate_id"])
            out.append(rec)
    return out


def with_defaults(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the fields an imported record lacks filled in where absent (in
    place; returned for chaining): ``prompt_style`` and ``truncated_calls`` None (unknown),
    agents' ``truncated`` False.

    >>> r = with_defaults({"rounds_data": [{"agents": [{}], "critiques": []}]})
    >>> r["truncated_calls"], r["rounds_data"][0]["agents"][0]["truncated"]
    (None, False)
    """
    record.setdefault("prompt_style", None)
    record.setdefault("truncated_calls", None)
    for rd in record.get("rounds_data", ()):
        for a in rd.get("agents", ()):
            a.setdefault("truncated", False)
    return record


def read_record_at(path: str | os.PathLike[str], offset: int) -> dict[str, Any]:
    """The one record whose line starts at byte ``offset`` of ``path`` (the view stores
    each debate's file and offset), with :func:`with_defaults` applied."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        line = fh.readline()
    if not line.endswith(b"\n"):
        raise ValueError(f"{path}: no complete record at byte {offset}")
    rec = parse_line(path, -1, line)
    if rec is None:
        raise ValueError(f"{path}: no record at byte {offset}")
    return with_defaults(rec)


_ID_PREFIX = re.compile(rb'^\{"schema":\d+,"debate_id":"([^"\\]+)"')


def completed_ids(run_dir: str | os.PathLike[str]) -> set[str]:
    """The resume index: ids of debates already recorded under ``run_dir`` (streamed; the
    id is read from the line's start where the writer put it, else the line is parsed)."""
    if not Path(run_dir).exists():
        return set()
    out: set[str] = set()
    for path in record_files(run_dir):
        for _, line_no, line in iter_lines(path):
            if (did := line_debate_id(path, line_no, line)) is not None:
                out.add(did)
    return out


def line_debate_id(path: Path | str, line_no: int, line: bytes) -> str | None:
    """The debate id of one record line (read from the line's start where the writer put
    it, else the line is parsed); None for a blank line."""
    m = _ID_PREFIX.match(line)
    if m:
        return m.group(1).decode()
    rec = parse_line(path, line_no, line)
    return None if rec is None else rec["debate_id"]


# ----------------------------------------------------------------- records in bulk

@contextlib.contextmanager
def few_collections() -> Iterator[None]:
    """For work on records in bulk (running debates, indexing records): they make millions
    of short-lived containers and no reference cycles worth collecting, so inside, the cyclic
    collector's first generation waits for :data:`GC_FIRST` new containers instead of 700
    (about 15% of a simulated grid's time went to collections), and what existed before is
    frozen (never scanned again; shared with forked workers without being copied).
    Reference counting frees memory as before; the settings are restored on the way out."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GC_FIRST, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


GC_FIRST = 100_000  # our choice: measured with benchmarks/bench_sim.py
