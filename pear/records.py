"""The debate record: its typed schema, an append-only JSON Lines store, a resume index, and
streaming readers.

One JSON object per finished debate, one line each, in files named ``debates.jsonl``
anywhere under a run directory.  :class:`DebateRecord` (with :class:`RoundEntry`,
:class:`AgentEntry`, :class:`CritiqueEntry`, :class:`RouterEntry`, :class:`Tokens`) is the
schema: the engine writes it, the tests' record factory builds it, and the columnar view
(:mod:`pear.view`) reads it.  Fields added after schema 1 was first written are optional
(``total=False`` parts); :func:`with_defaults` fills them for records that predate them.

``cot`` records hold agent 0 only; ``cot_sc`` records hold the n initial answers; both
have a single round (round 0).  A critique whose source produced no usable review is
recorded with ``delivered = false`` and is never shown to its target.

Timing fields (``latency_s``, ``finished_at``) are the only ones that differ between two
runs of the same grid with the same seeds and cache.

Readers stream: one line in memory at a time, whatever the size of the file.

>>> sorted(DebateRecord.__required_keys__ - {"rounds_data", "tokens"})[:4]
['backend', 'calls', 'config_hash', 'correct']
"""
from __future__ import annotations

import json
import os
import re
import warnings
from pathlib import Path
from typing import Any, Iterator, Literal, Optional, TypedDict

import msgspec

__all__ = [
    "SCHEMA_VERSION", "RECORDS_FILE", "TIMING_FIELDS", "IDENTITY",
    "Tokens", "RouterEntry", "AgentEntry", "CritiqueEntry", "RoundEntry", "DebateRecord",
    "PromptStyle", "Assessment", "with_defaults", "missing_fields",
    "RecordWriter", "record_files", "iter_lines", "parse_line", "iter_records", "read_records",
    "read_record_at", "completed_ids",
]

SCHEMA_VERSION = 1
RECORDS_FILE = "debates.jsonl"
RUN_MANIFEST = "manifest.json"  # pear.experiment.MANIFEST: a run directory's manifest
TIMING_FIELDS = ("latency_s", "finished_at")
IDENTITY = ("model", "backend", "dataset", "method", "seed", "question_id", "config_hash")
"""The fields that say which debate a record is (hashed into ``debate_id``)."""

PromptStyle = Literal["paper", "compact"]
Assessment = Literal["Strong", "Acceptable", "Flawed", ""]


# ----------------------------------------------------------------- the schema

class Tokens(TypedDict):
    """Token counts summed over every call of a debate (cached is part of prompt)."""

    prompt: int
    completion: int
    cached: int


class RouterEntry(TypedDict):
    """The router's choice in one round: pool size, the chosen relabelling's score and its
    T/I/L terms, and the range of scores over the pool."""

    pool_size: int
    score: float
    T: float
    I: float  # noqa: E741 - the paper's name
    L: float
    score_min: float
    score_max: float


class _AgentRequired(TypedDict):
    # 0-indexed agent.
    agent: int
    answer: str
    # The answer after task canonicalisation (what votes, routing and grading compare).
    canonical: str
    # 1..5.
    confidence: int
    reasoning: str
    correct: bool
    parse_error: Optional[str]


class AgentEntry(_AgentRequired, total=False):
    """One agent's answer after a round."""

    # The call stopped at the token budget (finish reason "length"); absent in older
    # records.
    truncated: bool
    # honest | adversarial | overconfident | underconfident (pear.config); absent in older
    # records.
    role: str
    # The model that answered for this agent (mixed populations); absent in older records.
    model: str


class _CritiqueRequired(TypedDict):
    source: int
    target: int
    source_answer: str
    # Both agents' answers when the critique was written (those of round r-1).
    target_answer: str
    source_confidence: int
    target_confidence: int
    # False when the source produced no usable review (never shown to the target).
    delivered: bool
    decision: Optional[Literal["ACCEPT", "REJECT"]]
    parse_error: Optional[str]


class CritiqueEntry(_CritiqueRequired, total=False):
    """One routed critique edge: the source's review of its target and the target's
    decision.  Paper-style reviews carry ``step_loc``, ``correction``, ``assessment`` and
    the target's one-sentence ``reason``; older records carry ``critique`` and
    ``recommended_answer`` instead."""

    step_loc: str
    correction: str
    assessment: Assessment
    reason: str
    critique: str
    recommended_answer: str


class RoundEntry(TypedDict):
    """Round r of a debate (round 0 = the initial answers)."""

    round: int
    # [source, target] pairs, 0-indexed; [] in round 0.
    edges: list[list[int]]
    router: Optional[RouterEntry]
    agents: list[AgentEntry]
    critiques: list[CritiqueEntry]
    # rho after this round's update, one per agent.
    influence: list[float]
    vote: str
    vote_correct: bool


class _RecordRequired(TypedDict):
    schema: int
    # Stable id of (model, backend, dataset, method, seed, question, config).
    debate_id: str
    model: str
    backend: str
    dataset: str
    method: str
    seed: int
    question_id: str
    config_hash: str
    n_agents: int
    rounds: int
    gold: str
    rounds_data: list[RoundEntry]
    final_answer: str
    correct: bool
    tokens: Tokens
    calls: int
    parse_failures: int


class DebateRecord(_RecordRequired, total=False):
    """One finished debate (schema :data:`SCHEMA_VERSION`)."""

    latency_s: float
    finished_at: str
    # Which prompt templates produced it; absent in older records.
    prompt_style: PromptStyle
    # Calls whose finish reason was "length"; absent in older records.
    truncated_calls: int
    # R of the config (0 for CoT and CoT-SC); ``rounds`` is fewer when the debate stopped
    # early (pear.stopping); absent in older records.
    max_rounds: int
    # consensus | stable | max_rounds; None for CoT and CoT-SC; absent in older records.
    stop_reason: Optional[str]
    # Agents told the gold answer (the adversarial role); absent in older records.
    gold_shown_to: list[int]


_CRITIQUE_TEXTS = ("step_loc", "correction", "assessment", "reason")


def with_defaults(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with the fields later schema revisions added filled in where absent
    (in place; returned for chaining): ``prompt_style`` and ``truncated_calls`` None
    (unknown), agents' ``truncated`` False, critiques' ``step_loc``, ``correction``,
    ``assessment``, ``reason`` "" (older critiques keep ``critique`` and
    ``recommended_answer``).

    >>> r = with_defaults({"rounds_data": [{"agents": [{}], "critiques": [{}]}]})
    >>> r["truncated_calls"], r["rounds_data"][0]["agents"][0]["truncated"]
    (None, False)
    """
    record.setdefault("prompt_style", None)
    record.setdefault("truncated_calls", None)
    for rd in record.get("rounds_data", ()):
        for a in rd.get("agents", ()):
            a.setdefault("truncated", False)
        for c in rd.get("critiques", ()):
            for key in _CRITIQUE_TEXTS:
                c.setdefault(key, "")
    return record


def missing_fields(record: dict[str, Any]) -> list[str]:
    """The required top-level fields ``record`` lacks (sorted; [] for a valid record).

    >>> missing_fields({"debate_id": "x"})[:3]
    ['backend', 'calls', 'config_hash']
    """
    return sorted(DebateRecord.__required_keys__ - record.keys())


# ----------------------------------------------------------------- writing

class RecordWriter:
    """Appends records to ``<run_dir>/debates.jsonl``: one line each, flushed at once,
    fsynced at batch boundaries (:meth:`sync`).  A torn last line left by a crash is
    truncated away before the first append, so new records never merge into it."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir) / RECORDS_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        _repair_torn_tail(self.path)
        self._fh = open(self.path, "a", encoding="utf-8")

    def write(self, record: DebateRecord | dict[str, Any]) -> None:
        """Append one finished debate and flush it to the OS.  A record that breaks the
        schema (:class:`DebateRecord`) is an error naming the field; nothing is written."""
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        try:
            parse_line(self.path, 0, line.encode("utf-8"))
        except ValueError as err:
            raise ValueError(f"refusing to write a record to {self.path}: "
                             f"{str(err).split(': ', 1)[-1]}") from None
        self._fh.write(line + "\n")
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


def read_records(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """All complete records under ``run_dir`` in memory, de-duplicated by ``debate_id``
    (first wins).  For small runs and tests; the analysis reads :mod:`pear.view`."""
    seen: set[str] = set()
    out = []
    for rec in iter_records(run_dir):
        if rec["debate_id"] not in seen:
            seen.add(rec["debate_id"])
            out.append(rec)
    return out


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
            m = _ID_PREFIX.match(line)
            if m:
                out.add(m.group(1).decode())
            elif (rec := parse_line(path, line_no, line)) is not None:
                out.add(rec["debate_id"])
    return out
