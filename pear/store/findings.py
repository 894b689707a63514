"""What a check of untrusted records finds: the problem kinds, findings, and line-level checks
shared by the validator (:mod:`pear.store.validate`), the per-record checks
(:mod:`pear.store.checks`), the indexer and the view.

A run directory may come from another lab (``BACKEND=replay RUNS=...``), so every line is
read as untrusted data: in bounded memory (a line over :data:`MAX_LINE_BYTES` is skipped
without being held), decoded against the typed schema (:class:`pear.core.record.DebateRecord`),
and checked field by field.  :data:`KINDS` lists every problem with its severity: an
*error* stops the analysis (one clear message naming the first example); ``--drop-invalid``
(``drop_invalid=True``) leaves those records out instead and says how many; a *warning* is
reported and changes nothing.

Checks that need the run's protocol (the config hash of each method, the benchmark's gold
answer, the base role graph each routed debate relabels, the fixed topologies) read it
from the run manifest (``RUN_DIR/manifest.json``, written by :func:`pear.runs.runner.run`);
without one they are skipped and a warning says so.

What is not detected: an edit that keeps every field consistent with the others, with the
record's id and with the benchmark (records carry no signature).  Model text is data: it
is never executed, never used as a path, and markup inside it is reported (``markup``) and
escaped wherever a page shows it (:func:`escape`).

>>> " ".join(sorted(k for k, (severity, _) in KINDS.items() if severity == "warning"))
'data_changed duplicate_id gold_form markup no_manifest torn_line unlisted_model'
"""
from __future__ import annotations

import html
import itertools
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import msgspec
import numpy as np

from pear.core.record import IDENTITY, TIMING_FIELDS, DebateRecord
from pear.core.hashing import branch_debate_id, debate_id

__all__ = ["DROP_ENV", "drop_invalid_default", "MAX_LINE_BYTES", "MAX_FIELD_BYTES", "EXAMPLES", "KINDS", "Problem", "Findings",
           "ValidationError", "has_markup", "scan_lines", "torn_tail", "escape"]

MAX_LINE_BYTES = 16 << 20  # our choice: a 5-agent, 5-round record at 512 tokens a call is ~0.2 MB
MAX_FIELD_BYTES = 1 << 20  # our choice: 32k tokens of text fit; a 512-token call writes ~4 kB
EXAMPLES = 5  # our choice: first examples kept per problem
DROP_ENV = "PEAR_DROP_INVALID"
"""Set to 1 (``pear paper --drop-invalid`` does) to analyse the valid records of a damaged
run instead of stopping."""
_READ_BLOCK = 1 << 20  # our choice: bytes read at a time while skipping an oversized line

KINDS: dict[str, tuple[str, str]] = {
    "corrupt_line": ("error", "a line that is not JSON (cut or overwritten)"),
    "schema": ("error", "a JSON line that is not a debate record: a field missing or of the "
                        "wrong type"),
    "oversized_line": ("error", f"a line longer than {MAX_LINE_BYTES} bytes (skipped unread)"),
    "oversized_field": ("error", f"a text field longer than {MAX_FIELD_BYTES} bytes"),
    "identity": ("error", "debate_id is not the hash of the identity fields, or an identity "
                          "field is not a plain name (unknown dataset or method, markup, "
                          "control characters)"),
    "inconsistent": ("error", "fields of one record that disagree (edited): final answer or "
                              "correctness against the last vote, round or agent numbering, "
                              "a vote no agent gave, edges against critiques"),
    "out_of_range": ("error", "a value outside its range: confidence outside 1..5, an agent "
                              "outside 0..n-1, influence outside [0, 1], negative counts"),
    "conflicting_id": ("error", "one debate_id recorded twice with different contents"),
    "config_hash": ("error", "config_hash differs from the hash of the run manifest's protocol "
                             "for the record's method"),
    "gold": ("error", "the gold answer differs from the benchmark's, or the question id is "
                      "not in the benchmark"),
    "graph": ("error", "a routed round whose edges are not a relabelling of the base role "
                       "graph of its (seed, question), or a fixed method's round that is not "
                       "its topology"),
    "manifest": ("error", "the run manifest is unreadable or its protocol is not a valid "
                          "configuration"),
    "branch": ("error", "a counterfactual branch whose copied rounds differ from its parent "
                        "debate's, or whose parent run or debate is missing"),
    "gold_form": ("warning", "the gold answer is the benchmark's in another written form (an "
                             "older grader's canonical form; the task calls them equal)"),
    "unlisted_model": ("warning", "a record of a model the run manifest does not list: not "
                                  "checked against the manifest's protocol"),
    "duplicate_id": ("warning", "one debate_id recorded twice with the same contents (the "
                                "first is used)"),
    "torn_line": ("warning", "a last line without its newline (a write under way or cut by a "
                             "crash; not read until complete)"),
    "no_manifest": ("warning", "no run manifest: config hashes, gold answers and graphs are "
                               "not checked"),
    "data_changed": ("warning", "the run manifest's benchmark hashes differ from "
                                "data/benchmarks"),
    "markup": ("warning", "model text holding HTML markup (escaped wherever shown, never "
                          "rendered)"),
}
"""Problem kind -> (severity, what it means)."""


@dataclass(frozen=True)
class Problem:
    kind: str
    where: str
    """``file:line`` (or the run directory for run-wide problems)."""
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


@dataclass
class Findings:
    """Counts and first examples per problem kind, and the records left out."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    dropped: int = 0
    """Records (or lines) left out of the view because of an error."""

    def add(self, problem: Problem, count: int = 1) -> None:
        if problem.kind not in KINDS:
            raise ValueError(f"unknown problem kind {problem.kind!r}")
        self.counts[problem.kind] = self.counts.get(problem.kind, 0) + count
        kept = self.examples.setdefault(problem.kind, [])
        if len(kept) < EXAMPLES:
            kept.append(str(problem))

    def merge(self, other: "Findings") -> "Findings":
        out = Findings(dict(self.counts), {k: list(v) for k, v in self.examples.items()},
                       self.dropped + other.dropped)
        for kind, n in other.counts.items():
            out.counts[kind] = out.counts.get(kind, 0) + n
            out.examples[kind] = (out.examples.get(kind, []) + other.examples.get(kind, []))[
                :EXAMPLES]
        return out

    def errors(self) -> dict[str, int]:
        return {k: n for k, n in self.counts.items() if KINDS[k][0] == "error"}

    def warnings(self) -> dict[str, int]:
        return {k: n for k, n in self.counts.items() if KINDS[k][0] == "warning"}

    @property
    def ok(self) -> bool:
        """No error (warnings allowed)."""
        return not self.errors()

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts, "examples": self.examples, "dropped": self.dropped}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> "Findings":
        raw = raw or {}
        return cls({k: int(v) for k, v in raw.get("counts", {}).items() if k in KINDS},
                   {k: list(v) for k, v in raw.get("examples", {}).items() if k in KINDS},
                   int(raw.get("dropped", 0)))

    def report(self) -> str:
        """Per problem: severity, count, meaning and the first examples (one block each)."""
        if not self.counts:
            return "no problem found"
        lines = []
        for kind in sorted(self.counts, key=lambda k: (KINDS[k][0] != "error", k)):
            severity, meaning = KINDS[kind]
            lines.append(f"{severity} {kind}: {self.counts[kind]} ({meaning})")
            lines += [f"    {_clip(e)}" for e in self.examples.get(kind, [])]
        if self.dropped:
            lines.append(f"{self.dropped} records left out (--drop-invalid)")
        return "\n".join(lines)

    def first_error(self) -> str:
        kind = sorted(self.errors())[0]
        first = self.examples.get(kind) or [kind]
        return first[0]


class ValidationError(ValueError):
    """Damaged records where the analysis needs valid ones; the message names the first."""

    def __init__(self, run_dir: str | os.PathLike[str], findings: Findings) -> None:
        self.findings = findings
        errs = findings.errors()
        summary = ", ".join(f"{n} {k}" for k, n in sorted(errs.items()))
        super().__init__(f"{_clip(findings.first_error())} [{summary} in {run_dir}; run `pear "
                         f"validate {run_dir}` for every problem, or pass --drop-invalid "
                         "(drop_invalid=True) to analyse the valid records only]")


def _clip(text: str, limit: int = 300) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def escape(text: Any) -> str:
    """Model text (or any record field) made safe for an HTML page: ``& < > " '`` escaped.

    >>> escape('<script>alert("x")</script>')
    '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'
    """
    return html.escape("" if text is None else str(text), quote=True)


def drop_invalid_default() -> bool:
    """Whether the analysis leaves damaged records out (:data:`DROP_ENV` is ``1``) instead
    of stopping on them."""
    return os.environ.get(DROP_ENV, "") in ("1", "true", "yes")


# ----------------------------------------------------------------- reading lines

def scan_lines(path: str | os.PathLike[str], offset: int = 0, line_no: int = 0
               ) -> Iterator[tuple[int, int, bytes | None, int]]:
    """``(byte offset, line number, line or None, length)`` of every complete line of
    ``path`` from ``offset``; a line over :data:`MAX_LINE_BYTES` comes as None (skipped in
    bounded memory).  A last line without its newline is not yielded (:func:`torn_tail`)."""
    with open(path, "rb") as fh:
        fh.seek(offset)
        pos, n = offset, line_no
        while True:
            line = fh.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if line.endswith(b"\n"):
                n += 1
                yield pos, n, line, len(line)
                pos += len(line)
                continue
            if len(line) <= MAX_LINE_BYTES:
                return  # torn tail
            size = len(line)
            while True:  # skip the rest of the oversized line, a block at a time
                block = fh.readline(_READ_BLOCK)
                size += len(block)
                if not block:
                    return  # oversized and torn: not complete yet
                if block.endswith(b"\n"):
                    break
            n += 1
            yield pos, n, None, size
            pos += size


def torn_tail(path: Path, end: int) -> Problem | None:
    """A warning when ``path`` holds bytes past ``end`` (the end of its last complete line)."""
    size = path.stat().st_size
    if size > end:
        return Problem("torn_line", f"{path}:end", f"{size - end} bytes after the last "
                                                    "complete line (not read)")
    return None


# ----------------------------------------------------------------- checking records

_DECODER = msgspec.json.Decoder(DebateRecord)
_PLAIN = re.compile(r"[^\x00-\x1f\x7f<>\"'&\\`]{1,512}")
_MARKUP = re.compile(r"<\s*/?\s*(script|iframe|object|embed|style|svg|img|link|meta|form|input|"
                     r"base|a)\b|javascript\s*:", re.IGNORECASE)


def has_markup(text: str) -> bool:
    """Whether ``text`` holds an HTML tag that could run or load something, or a
    ``javascript:`` URL (a cheap test first: most text has neither ``<`` nor ``:``).

    >>> has_markup("x < 3 and y > 2"), has_markup("<img src=x onerror=alert(1)>")
    (False, True)
    """
    return ("<" in text or ":" in text) and _MARKUP.search(text) is not None


def _debate_id(rec: Mapping[str, Any]) -> str:
    ident = {k: rec[k] for k in IDENTITY}
    branched = rec.get("branched_from")
    return branch_debate_id(ident, branched) if branched else debate_id(ident)


def digest(rec: Mapping[str, Any]) -> str:
    """A short hash of a record's contents without its timing fields (equal for two runs
    of the same debate with the same seeds and cache)."""
    from pear.core.hashing import content_digest
    body = {k: v for k, v in rec.items() if k not in TIMING_FIELDS}
    return content_digest(msgspec.json.encode(body, order="sorted"), n=16)


@lru_cache(maxsize=16)
def _perms(n: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(n))), dtype=np.int64)


_CANON: dict[tuple[int, tuple], bytes] = {}


def graph_class(edges: Any, n: int) -> bytes:
    """A canonical form of an edge set under relabelling: two edge sets have the same class
    iff one is a relabelling of the other (n <= 8; beyond, the sorted in- and out-degree
    sequences, a necessary condition only).

    >>> graph_class([[0, 1], [1, 2]], 3) == graph_class([[2, 0], [0, 1]], 3)
    True
    >>> graph_class([[0, 1], [1, 2]], 3) == graph_class([[0, 1], [0, 2]], 3)
    False
    """
    key = (n, tuple(map(tuple, edges)))  # a record's edges: pairs of ints
    hit = _CANON.get(key)
    if hit is not None:
        return hit
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n > 8:
        deg = (np.sort(np.bincount(e[:, 0], minlength=n)), np.sort(np.bincount(e[:, 1],
                                                                               minlength=n)))
        out = b"deg" + np.concatenate(deg).tobytes()
    else:
        p = _perms(n)
        codes = np.sort(p[:, e[:, 0]] * n + p[:, e[:, 1]], axis=1)
        best = codes[np.lexsort(codes.T[::-1])[0]] if len(e) else codes[:1].ravel()
        out = best.tobytes()
    if len(_CANON) > 200_000:
        _CANON.clear()
    _CANON[key] = out
    return out


def _in_range(v: Any, lo: float, hi: float) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) \
        and lo <= v <= hi
