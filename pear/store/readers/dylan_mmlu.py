"""DyLAN's MMLU records (Liu et al., "Dynamic LLM-Agent Network", arXiv 2310.02170;
repository SALT-NLP/DyLAN, ``exp/MMLU/mmlu_optimal7_N/*.json``): DyLAN's own network of N
role-prompted gpt-3.5-turbo agents (N = 2, 3, 4, 7) on a fixed one-fifth sample of the MMLU
test set.

Format: each ``.json`` file is JSON Lines, one debate a line, in sample order: a list with one
entry per agent, each a list of 3 reply strings (rounds 1-3) or ``null`` where that agent did
not speak.  Neither the question nor the gold is stored: both come from a key
(``dylan-mmlu-gpt35-key.tsv``, columns ``folder file line subject sample_pos mmlu_test_row
gold align note``; data/real-debates/README.md), found beside the archive as
``<archive stem>-key.tsv`` or given to :class:`DylanMmluReader`.  A line with no key row is a
:class:`~pear.store.readers.base.BadEntry` naming the file and the line.

What a debate becomes (:class:`~pear.store.readers.base.RawDebate`):

* ``question``: a stable stand-in, ``MMLU <subject> test row <mmlu_test_row>`` (the records
  hold no question text; the same MMLU question gets the same text, so the same id, in every
  team size);
* ``gold``: the key's letter (A-D);
* ``texts[agent][round]``: the replies of the agents still there at the end (those with a
  reply in every round up to the debate's last spoken one), as DyLAN's MATH records keep them:
  an agent the quorum came before, or the ranker dropped, leaves the record (its ``null``
  replies would otherwise count as wrong answers: 20-24% of round-0 agents in teams of 4 and
  7); ``extra["slots"]`` gives the kept agents' places in the team (their roles);
* ``extra``: ``subject`` (the key's, so the mislabelled ``college_physics_test_43.json`` of
  N = 4 is conceptual_physics), ``team`` (N), ``folder``, ``file``, ``line``, ``align``
  (``order`` / ``text``: the latter approximate), ``sample_pos``, ``mmlu_test_row``, ``slots`` and
  ``dylan_answers`` (per kept agent and round the letter DyLAN's own parser reads, or None).

Grading is ``pear import``'s, ``--grading letters``: the stated final answer
(:func:`pear.store.readers.answers.final_answer`) read as an option letter A-D
(:func:`pear.tasks.grading.parse_letter`); DyLAN's parser (:func:`dylan_choice`: the last
``(X)``) is kept beside it in ``extra["dylan_answers"]``.

>>> dylan_choice("(A) is wrong, so the answer is (b)."), dylan_choice("option D) Prone"), \\
...     dylan_choice("no letter")
('B', 'D', None)
"""
from __future__ import annotations

import csv
import gzip
import json
import math
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from pear.store.readers.base import BadEntry, RawDebate, Reader
from pear.store.readers.protocols import Drop, Protocol, Quorum

__all__ = ["DylanMmluReader", "KeyRow", "load_key", "key_beside", "dylan_choice",
           "protocol_for", "KEY_COLUMNS"]

KEY_COLUMNS = ("folder", "file", "line", "subject", "sample_pos", "mmlu_test_row", "gold",
               "align", "note")
"""The key's columns, in order (its header row)."""

_TEAM = re.compile(r"mmlu_optimal7_(\d+)$")
_CHOICE = re.compile(r"\(([ABCDabcd])\)")
_CHOICE_LOOSE = re.compile(r"([ABCDabcd])\)")


def dylan_choice(reply: str | None) -> str | None:
    """The option letter DyLAN's MMLU code reads from a reply (``utils.parse_single_choice``):
    the last ``(X)`` with X in A-D (either case), else the last ``X)``; None if neither."""
    if not reply:
        return None
    for pattern in (_CHOICE, _CHOICE_LOOSE):
        found = pattern.findall(reply)
        if found:
            return found[-1].upper()
    return None


@dataclass(frozen=True)
class KeyRow:
    """One row of the key: the question and gold of one JSON line."""

    folder: str
    file: str
    line: int
    subject: str
    sample_pos: int
    mmlu_test_row: int
    gold: str
    align: str
    note: str


def load_key(path: str | os.PathLike[str]) -> dict[tuple[str, str, int], KeyRow]:
    """``(folder, file, line) -> KeyRow`` from a key TSV; an error names the file and the row
    that cannot be read."""
    p = Path(path)
    out: dict[tuple[str, str, int], KeyRow] = {}
    with p.open(encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh, delimiter="\t")
        header = next(rows, None)
        if header is None or tuple(header[:len(KEY_COLUMNS)]) != KEY_COLUMNS:
            raise ValueError(f"{p}: not a DyLAN MMLU key: the header must be "
                             f"{' '.join(KEY_COLUMNS)}")
        for i, row in enumerate(rows, start=2):
            if not row:
                continue
            row = row + [""] * (len(KEY_COLUMNS) - len(row))
            try:
                r = KeyRow(row[0], row[1], int(row[2]), row[3], int(row[4]), int(row[5]),
                           row[6].strip().upper(), row[7], row[8])
            except ValueError as err:
                raise ValueError(f"{p}: row {i}: cannot read it ({err})") from None
            if r.gold not in ("A", "B", "C", "D") or not r.subject:
                raise ValueError(f"{p}: row {i}: gold {row[6]!r} is not one of A-D or the "
                                 "subject is empty")
            out[(r.folder, r.file, r.line)] = r
    return out


def key_beside(path: str | os.PathLike[str]) -> Path:
    """Where the key of ``path`` lies: ``<stem>-key.tsv`` beside it (the stem without
    ``.tgz``, ``.tar.gz``, ``.json`` or ``.json.gz``)."""
    p = Path(path)
    stem = p.name
    for suffix in (".tar.gz", ".tgz", ".json.gz", ".jsonl", ".json"):
        if stem.endswith(suffix):
            stem = stem[:-len(suffix)]
            break
    return p.with_name(f"{stem}-key.tsv")


def protocol_for(team: int) -> Protocol:
    """DyLAN's MMLU protocol for a team of ``team`` agents (see :class:`DylanMmluReader`)."""
    after = math.floor(2 * team / 3) + 1
    return Protocol(
        name=f"dylan-mmlu-{team}", agents=team, rounds=3, order="simultaneous",
        hears="all_answered", stop=Quorum(share=2 / 3, after=after),
        drop=Drop(before_round=2, keep=2, by="llm_ranker") if team > 3 else None,
        source=_SOURCE)


_SOURCE = (
    "SALT-NLP/DyLAN code/MMLU/LLMLP.py (forward: rounds = 3; round 1 in a shuffled order, "
    "check_consensus after each answer from index floor(2/3 N) on: the most frequent answer "
    "held by more than floor(2/3 N), N the team size, not the answers so far; the same in "
    "round 2; before round 3, for N > 3, listwise_ranker_2 keeps 2 and round 3 stops when "
    "both agree; each node of a round has an edge from every node of the previous round, its "
    "own included) and utils.parse_single_choice (the last '(X)'); records "
    "exp/MMLU/mmlu_optimal7_{2,3,4,7}/*.json (JSON Lines, null for an agent that did not "
    "speak)")


class DylanMmluReader(Reader):
    """DyLAN's MMLU JSON Lines records (``exp/MMLU/mmlu_optimal7_N/<subject>_test_...json``,
    one debate a line), with question and gold from the key (``key``: its path; default: the
    ``<stem>-key.tsv`` beside each file read, :func:`key_beside`).

    Protocol (:func:`protocol_for`, from DyLAN's ``LLMLP.forward``): at most 3 rounds; in
    round 1 the N agents answer alone, one at a time in a random order; rounds 2 and 3 give
    every agent that answers the question and every answer of the previous round; the early
    stop is checked after each answer from the ``floor(2N/3) + 1``-th on, in rounds 1-2; for
    N >= 4 an LLM ranker keeps 2 agents before round 3, which stops when both agree.
    Expressed with :class:`Protocol`, :class:`Quorum` and :class:`Drop` as
    ``order="simultaneous"`` (no one hears an answer of its own round), ``hears=
    "all_answered"`` (round 3's 2 agents hear every round-2 answer, the dropped agents'
    included), ``Quorum(share=2/3, after=floor(2N/3) + 1)`` and ``Drop(before_round=2,
    keep=2)`` for N >= 4.  Where it does not fit:

    * the quorum is a fixed count, more than ``floor(2N/3)`` agreeing answers of the team,
      not ``floor(2/3 x answered)``: the same for N = 2, 3, 4, but for N = 7 after 5 answers
      DyLAN needs 5 agreeing, :class:`Quorum` 4; in round 3 (2 agents) it is both agreeing;
    * an agent hears its own previous answer too (quoted as one of the "Agent solution i");
      ``hears`` has no value for "all, itself included";
    * agreement is on DyLAN's parsed letters, and two replies without a letter (None)
      count as agreeing;
    * which 2 agents speak in round 3 is not the ranker's choice: the code keeps the agents
      whose position in a fresh shuffle equals a ranked slot number, so in effect 2 random
      agents (:class:`Drop` says "the ``keep`` best");
    * the agents are role-prompted (N = 7: Economist, Doctor, Lawyer, Mathematician,
      Psychologist, Programmer, Historian in slot order; N < 7: the top N of those by
      DyLAN's importance score per subject, not recorded), which the protocol does not state;
    * a run records one protocol: ``pear import dylan-mmlu ... --protocol dylan-mmlu-N``
      imports the teams of N (the archive's four team sizes together are refused).
    """

    name = "dylan-mmlu"
    same_shape = False

    def __init__(self, key: str | os.PathLike[str] | None = None) -> None:
        self.key_path = Path(key) if key is not None else None
        self._keys: dict[Path, dict[tuple[str, str, int], KeyRow]] = {}

    def key(self, path: str | os.PathLike[str]) -> dict[tuple[str, str, int], KeyRow]:
        """The key for the file at ``path`` (loaded once per key file)."""
        where = self.key_path or key_beside(path)
        if where not in self._keys:
            if not where.is_file():
                raise FileNotFoundError(
                    f"no key for {str(path)!r}: expected {str(where)!r} (the DyLAN MMLU key "
                    "TSV; data/real-debates/README.md)")
            self._keys[where] = load_key(where)
        return self._keys[where]

    def read(self, path: str | os.PathLike[str]) -> Iterator[RawDebate | BadEntry]:
        """Every debate of a ``.tgz`` / ``.tar.gz`` archive of DyLAN's MMLU files (its
        ``.json`` members in name order; the ``.txt`` ones skipped) or of one such ``.json``
        (``.json.gz``) file, whose folder name is ``mmlu_optimal7_N``."""
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"no such file: {str(p)!r}")
        key = self.key(p)
        if p.name.endswith((".tgz", ".tar.gz")):
            try:
                with tarfile.open(p, "r:gz") as tar:
                    members = sorted((m for m in tar.getmembers()
                                      if m.isfile() and m.name.endswith(".json")),
                                     key=lambda m: m.name)
                    if not members:
                        yield BadEntry(str(p), "", "the archive holds no .json file")
                        return
                    for m in members:
                        fh = tar.extractfile(m)
                        raw = fh.read() if fh is not None else b""
                        yield from self._lines(p / m.name, raw, key)
            except (OSError, EOFError, tarfile.TarError, gzip.BadGzipFile) as err:
                yield BadEntry(str(p), "", f"cannot read it as a .tgz archive ({err})")
            return
        try:
            raw = gzip.decompress(p.read_bytes()) if p.suffix == ".gz" else p.read_bytes()
        except (OSError, EOFError, gzip.BadGzipFile) as err:
            yield BadEntry(str(p), "", f"cannot read it ({err})")
            return
        yield from self._lines(p, raw, key)

    def entries(self, path: Path, data: Any) -> Iterator[RawDebate | BadEntry]:
        """The debates of one file's bytes or text (JSON Lines); the key beside ``path``."""
        raw = data if isinstance(data, bytes) else str(data).encode("utf-8")
        yield from self._lines(path, raw, self.key(path))

    def _lines(self, path: Path, raw: bytes, key: Mapping[tuple[str, str, int], KeyRow]
               ) -> Iterator[RawDebate | BadEntry]:
        name = path.name.removesuffix(".gz")
        folder = path.parent.name
        team = _TEAM.search(folder)
        if team is None:
            yield BadEntry(str(path), "", f"not in a folder mmlu_optimal7_N (got {folder!r}): "
                                          "the team size is unknown")
            return
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            yield BadEntry(str(path), "", "not UTF-8 text")
            return
        n = int(team.group(1))
        for i, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            entry = f"line {i}"
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                yield BadEntry(str(path), entry, f"not valid JSON: {err.msg} at column "
                                                 f"{err.colno}")
                continue
            row = key.get((folder, name, i))
            if row is None:
                yield BadEntry(str(path), entry, f"no key row for {folder}/{name} line {i}")
                continue
            yield _debate(path, entry, value, row, n)

    def protocol(self, first: RawDebate) -> Protocol:
        """The protocol of ``first``'s team size (:func:`protocol_for`)."""
        return protocol_for(int(first.extra.get("team") or first.n_agents))


def _debate(path: Path, entry: str, value: Any, row: KeyRow, team: int
            ) -> RawDebate | BadEntry:
    """One line's debate, or the bad entry saying why it is not one."""
    if not isinstance(value, list) or not value or not all(
            isinstance(a, list) and a and all(x is None or isinstance(x, str) for x in a)
            for a in value):
        return BadEntry(str(path), entry, "not DyLAN's MMLU format: expected a list per agent "
                                          "of reply strings or null")
    if len(value) != team:
        return BadEntry(str(path), entry, f"{len(value)} agents in a folder of teams of "
                                          f"{team}")
    width = max(len(a) for a in value)
    spoke = [r for r in range(width) if any(r < len(a) and a[r] for a in value)]
    if not spoke:
        return BadEntry(str(path), entry, "no agent speaks")
    rounds = spoke[-1] + 1
    # the agents still there at the end, as DyLAN's MATH records keep them: those that spoke
    # in every round (the others were dropped by the ranker, or the quorum came before them)
    slots = [i for i, a in enumerate(value) if all(r < len(a) and a[r] for r in range(rounds))]
    if not slots:
        return BadEntry(str(path), entry, f"no agent speaks in all {rounds} rounds")
    texts = tuple(tuple(value[i][r] for r in range(rounds)) for i in slots)
    parsed = [[dylan_choice(t) for t in agent] for agent in texts]
    extra = {"subject": row.subject, "team": team, "folder": row.folder, "file": row.file,
             "line": row.line, "align": row.align, "sample_pos": row.sample_pos,
             "mmlu_test_row": row.mmlu_test_row, "slots": slots, "dylan_answers": parsed}
    return RawDebate(entry=f"{row.folder}/{row.file} {entry}",
                     question=f"MMLU {row.subject} test row {row.mmlu_test_row}",
                     gold=row.gold, texts=texts, extra=extra)
