"""The one small interface every reader of another framework's debate records implements.

A reader turns one file into :class:`RawDebate` objects (each agent's text per round, the
question, the gold answer as the file gives it) and :class:`BadEntry` objects for entries it
cannot read; :mod:`pear.store.importing` grades them and writes PEAR records.  Another
framework's format is one more file beside ``du.py`` and ``dylan.py``.

Nothing here evaluates or executes anything a file holds: files are parsed as JSON only.

>>> agent_texts([[{"role": "user", "content": "q"}, {"role": "assistant", "content": "4"}]])
(('4',),)
"""
from __future__ import annotations

import gzip
import json
import os
import tarfile
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterator, Sequence

from pear.store.readers.protocols import Protocol

__all__ = ["RawDebate", "BadEntry", "BadInput", "Reader", "load_json", "load_archive",
           "agent_texts", "user_turns", "gold_text", "short", "debate", "keyed_entries"]


def short(text: str, n: int = 60) -> str:
    """``text`` on one line, cut to ``n`` characters (to name an entry in a message).

    >>> short("What is\\n2 + 2?", 8)
    'What is…'
    """
    one = " ".join(str(text).split())
    return one if len(one) <= n else one[:n - 1].rstrip() + "…"


@dataclass(frozen=True)
class RawDebate:
    """One debate as another framework recorded it, before grading."""

    entry: str
    """The entry's key in the file (for messages and provenance)."""
    question: str
    """The question's text, as it is matched to our benchmarks."""
    gold: str
    """The gold answer as the file gives it (GSM8K: the worked answer ending ``#### 16``)."""
    texts: tuple[tuple[str, ...], ...]
    """``texts[agent][round]``: each agent's full answer text per round (round 0 first)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Other per-debate fields the file gives (DyLAN: level, subject)."""
    heard: tuple[tuple[tuple[str, ...], ...], ...] = ()
    """``heard[agent][round]``: the other agents' answers quoted in full in that agent's
    message of that round, in prompt order (``()`` in round 0 and where none could be read);
    ``()`` as a whole where the format's reader does not read them (Du et al.'s)."""

    @property
    def n_agents(self) -> int:
        return len(self.texts)

    @property
    def n_rounds(self) -> int:
        """Rounds recorded, round 0 included."""
        return len(self.texts[0]) if self.texts else 0


@dataclass(frozen=True)
class BadEntry:
    """An entry (or a whole file, ``entry == ""``) that cannot be imported, and why."""

    file: str
    entry: str
    reason: str

    def message(self) -> str:
        where = f"entry {short(self.entry)!r}" if self.entry else "the file"
        return f"{self.file}: {where}: {self.reason}"


class BadInput(ValueError):
    """Bad input to ``pear import``: names the file and the entry (the CLI exits 2)."""

    def __init__(self, bad: list[BadEntry]) -> None:
        self.bad = bad
        more = f" (and {len(bad) - 1} more bad entries; --skip-bad imports the rest and " \
               f"lists them in the manifest)" if len(bad) > 1 else \
               " (--skip-bad imports the rest and lists it in the manifest)"
        super().__init__(f"cannot import {bad[0].message()}{more}; nothing was written")


class Reader(ABC):
    """Reads one file format of another debate framework."""

    name: ClassVar[str]
    """The format's name on the command line (``pear import NAME``)."""
    same_shape: ClassVar[bool] = False
    """Whether every debate of one file must have the same agents x rounds."""

    @abstractmethod
    def entries(self, path: Path, data: Any) -> Iterator[RawDebate | BadEntry]:
        """The debates (or bad entries) of a file whose JSON is ``data``."""

    @abstractmethod
    def protocol(self, first: RawDebate) -> Protocol:
        """The protocol the framework ran the debates under (``first``: a file's first
        debate, for a protocol whose agents and rounds each file sets)."""

    def read(self, path: str | os.PathLike[str]) -> Iterator[RawDebate | BadEntry]:
        """Every debate of the file at ``path`` (``.json``, ``.json.gz``, or a ``.tgz`` /
        ``.tar.gz`` archive of ``.json`` files, read in name order; its other members are
        skipped); a file that is not JSON, or not this format, is one :class:`BadEntry` with
        ``entry == ""``; with :attr:`same_shape`, debates shaped unlike the file's first are
        bad entries."""
        p = Path(path)
        if p.name.endswith((".tgz", ".tar.gz")):
            for member, data in load_archive(p):
                yield from self._read(member, data)
            return
        yield from self._read(p, load_json(p))

    def _read(self, p: Path, data: Any) -> Iterator[RawDebate | BadEntry]:
        if isinstance(data, BadEntry):
            yield data
            return
        shape = None
        for item in self.entries(p, data):
            if isinstance(item, RawDebate) and self.same_shape:
                here = (item.n_agents, item.n_rounds)
                shape = shape or here
                if here != shape:
                    item = BadEntry(str(p), item.entry,
                                    f"{here[0]} agents x {here[1]} rounds, but this format "
                                    f"needs every debate of a file alike and the file's first "
                                    f"has {shape[0]} x {shape[1]}")
            yield item


def load_json(path: Path) -> Any:
    """The JSON value of ``path`` (gzip when it ends in ``.gz``), or a :class:`BadEntry`
    for the whole file when it is missing, not UTF-8 or not (complete) JSON."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    try:
        raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (OSError, EOFError, gzip.BadGzipFile) as err:
        return BadEntry(str(path), "", f"cannot read it ({err})")
    return _parse(path, raw)


def load_archive(path: Path) -> Iterator[tuple[Path, Any]]:
    """``(archive/member path, its JSON value or a BadEntry)`` for every ``.json`` member of a
    gzipped tar archive, in name order (nothing is extracted to disk); a file that is not such
    an archive is one BadEntry."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {str(path)!r}")
    try:
        with tarfile.open(path, "r:gz") as tar:
            members = sorted((m for m in tar.getmembers()
                              if m.isfile() and m.name.endswith(".json")), key=lambda m: m.name)
            if not members:
                yield path, BadEntry(str(path), "", "the archive holds no .json file")
                return
            for m in members:
                where = path / m.name
                fh = tar.extractfile(m)
                raw = fh.read() if fh is not None else b""
                yield where, _parse(where, raw)
    except (OSError, EOFError, tarfile.TarError, gzip.BadGzipFile) as err:
        yield path, BadEntry(str(path), "", f"cannot read it as a .tgz archive ({err})")


def _parse(path: Path, raw: bytes) -> Any:
    """The JSON value of ``raw`` (the bytes of ``path``), or a BadEntry saying why not."""
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return BadEntry(str(path), "", "not UTF-8 text")
    except json.JSONDecodeError as err:
        cut = " (truncated?)" if err.pos >= len(raw.rstrip()) - 1 else ""
        return BadEntry(str(path), "", f"not valid JSON{cut}: {err.msg} at line {err.lineno} "
                                       f"column {err.colno}")


def agent_texts(contexts: Any) -> tuple[tuple[str, ...], ...] | str:
    """``texts[agent][round]`` from per-agent chats (lists of ``{"role", "content"}``
    messages; each assistant message is that agent's answer in one round), or a string
    saying why they cannot be read (not chats, no answer, agents with different rounds)."""
    if not isinstance(contexts, list) or not contexts:
        return "agent_contexts is not a non-empty list of chats"
    out = []
    for i, chat in enumerate(contexts):
        if not isinstance(chat, list) or not all(
                isinstance(m, dict) and isinstance(m.get("content"), str) for m in chat):
            return f"agent {i}'s context is not a list of messages with text content"
        said = tuple(m["content"] for m in chat if m.get("role") == "assistant")
        if not said:
            return f"agent {i} never answers (no assistant message)"
        out.append(said)
    rounds = [len(t) for t in out]
    if len(set(rounds)) > 1:
        return f"agents with different round counts {rounds}: every agent of a debate must " \
               f"answer in every round"
    return tuple(out)


def user_turns(contexts: list[list[dict[str, Any]]]) -> tuple[tuple[str, ...], ...]:
    """``turns[agent][round]``: the last user message before each of an agent's answers
    (``""`` when none), for chats :func:`agent_texts` reads.

    >>> user_turns([[{"role": "user", "content": "q"}, {"role": "assistant", "content": "4"},
    ...              {"role": "user", "content": "others: 5"},
    ...              {"role": "assistant", "content": "5"}]])
    (('q', 'others: 5'),)
    """
    out = []
    for chat in contexts:
        last, turns = "", []
        for m in chat:
            if m.get("role") == "user":
                last = m["content"]
            elif m.get("role") == "assistant":
                turns.append(last)
        out.append(tuple(turns))
    return tuple(out)


def gold_text(value: Any) -> str | None:
    """A gold answer as text (numbers written out, JSON's ``true``/``false`` as such, for a
    yes/no grader), or None when it is none.

    >>> gold_text(30), gold_text(2.5), gold_text(True), gold_text(" E "), gold_text("")
    ('30', '2.5', 'true', 'E', None)
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def debate(path: Path, entry: str, question: str, contexts: Any, gold: Any,
           extra: dict[str, Any] | None = None,
           quoted: Callable[[str], tuple[str, ...]] | None = None) -> RawDebate | BadEntry:
    """One entry's debate from its agents' chats and its gold, or the bad entry saying what
    is wrong with them (what every reader checks alike).  ``quoted``: the other agents'
    answers a user message quotes (for :attr:`RawDebate.heard`, read from each agent's
    message of rounds 1..); None: not read."""
    texts = agent_texts(contexts)
    if isinstance(texts, str):
        return BadEntry(str(path), entry, texts)
    answer = gold_text(gold)
    if answer is None:
        return BadEntry(str(path), entry, "the gold answer is empty")
    heard: tuple[tuple[tuple[str, ...], ...], ...] = ()
    if quoted is not None:
        heard = tuple(tuple(quoted(u) if r else () for r, u in enumerate(turns))
                      for turns in user_turns(contexts))
    return RawDebate(entry=entry, question=question, gold=answer, texts=texts,
                     extra=dict(extra or {}), heard=heard)


def keyed_entries(path: Path, data: Any, *, source: str, key: str, fields: Sequence[str],
                  make: Callable[[str, list[Any]], RawDebate | BadEntry],
                  name: Callable[[str], str] = str) -> Iterator[RawDebate | BadEntry]:
    """The entries of a file whose JSON object maps each ``key`` to a list ``[fields...]``
    (Du et al.'s layout and DyLAN's): ``make(entry, value)`` per entry, named ``name(key)``;
    data that is not such an object (the whole file), or a value that is not such a list, is
    a :class:`BadEntry` saying what ``source``'s format expects.

    >>> bad, = keyed_entries(Path("x.json"), {"q": [1]}, source="Du et al.'s", key="question",
    ...                      fields=("agent_contexts", "gold"), make=None)
    >>> bad.message()
    "x.json: entry 'q': not Du et al.'s format: the value is not [agent_contexts, gold]"
    """
    shape = f"[{', '.join(fields)}]"
    if not isinstance(data, dict) or not data:
        yield BadEntry(str(path), "", f"not {source} format: expected a JSON object mapping "
                                      f"each {key} to {shape}")
        return
    for k, value in data.items():
        entry = name(k)
        if not isinstance(value, list) or len(value) != len(fields):
            yield BadEntry(str(path), entry, f"not {source} format: the value is not {shape}")
            continue
        yield make(entry, value)
