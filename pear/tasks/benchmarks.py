"""The four benchmarks, read offline from ``data/benchmarks``: full sets, seeded subsets, and
seeded option shuffles.

Nothing is downloaded.  The directory is ``<repository>/data/benchmarks`` unless the
environment variable ``PEAR_DATA_DIR`` names another one (``SOURCES.md`` there gives the record
format and provenance).  Subsets are a seeded uniform sample without replacement, returned in
source order; the seed is derived from ``(dataset, seed)`` with sha256, so the same call gives the
same ids on every machine.  TruthfulQA's options are shuffled once per question with a seed
derived from ``"dataset:id"`` (not from the run seed), so a question looks the same in every run
and the gold letters are spread over the positions; MMLU-Pro keeps its own option order.

>>> qs = load("gsm8k", n=3, seed=0)
>>> [q.id for q in qs] == [q.id for q in load("gsm8k", n=3, seed=0)]
True
>>> q = get_question("truthfulqa", "truthfulqa-000")
>>> q.choices[ord(q.gold) - ord("A")] == q.gold_raw
True
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from pear.core.config import whole_number
from pear.core.hashing import file_sha256, stable_seed
from pear.paths import BENCHMARKS_DIR


__all__ = [
    "DATASETS",
    "FILES",
    "Question",
    "data_dir",
    "load",
    "get_question",
    "GoldAnswers",
    "sha256_files",
    "normalize_text",
    "match_question",
    "stable_seed",
    "option_letters",
    "SHUFFLED",
]

DATASETS = ("mmlu_pro", "truthfulqa", "gsm8k", "math500")  # the one list, in the study's table order
"""The benchmark names, in the order tables show them."""

FILES = {
    "gsm8k": "gsm8k.jsonl",
    "math500": "math500.jsonl",
    "truthfulqa": "truthfulqa_mc1.jsonl",
    "mmlu_pro": "mmlu_pro.jsonl.gz",
}
"""The file of each benchmark inside :func:`data_dir`."""

ENV_VAR = "PEAR_DATA_DIR"


@dataclass(frozen=True)
class Question:
    """One benchmark question, as every prompt and grader sees it."""

    id: str
    """The source record's id (unique within the dataset)."""
    dataset: str
    """One of :data:`DATASETS`."""
    question: str
    """The raw question text."""
    choices: tuple[str, ...] | None
    """The options in the order shown (TruthfulQA: after the per-question shuffle; MMLU-Pro:
    the benchmark's own order); None if open-ended."""
    gold: str
    """The gold answer: for multiple choice the letter of the correct option as shown, else the
    source's answer as written (stripped).  Reading, grading and equivalence live in
    :mod:`pear.tasks.grading`."""
    gold_raw: str
    """The source's gold answer, verbatim (TruthfulQA: the correct option's text; MMLU-Pro:
    the source letter)."""
    permutation: tuple[int, ...] | None
    """Shown position -> source option index; None if open-ended."""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The source record's metadata (subject, level, category, ...); treat as read-only."""


def data_dir() -> Path:
    """The benchmark directory: ``$PEAR_DATA_DIR`` if set, else ``<repo>/data/benchmarks``."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser().resolve()
    return BENCHMARKS_DIR


def _check_name(name: str) -> None:
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}: choose one of {', '.join(DATASETS)}")


def _path(name: str) -> Path:
    path = data_dir() / FILES[name]
    if not path.is_file():
        raise FileNotFoundError(
            f"benchmark file {str(path)!r} for dataset {name!r} not found; set {ENV_VAR} to the "
            f"directory holding {FILES[name]}")
    return path


def _records(path: str) -> tuple[dict[str, Any], ...]:
    """The parsed JSONL records of one file (gzip if the name ends in ``.gz``)."""
    try:
        from msgspec.json import decode  # the same values as json.loads, 3x faster
    except ImportError:  # the protocol's layers run with numpy alone
        decode = json.loads
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        data = gzip.decompress(data)  # in one call, not line by line through GzipFile
    return tuple(map(decode, filter(bytes.strip, data.splitlines())))


SHUFFLED = ("truthfulqa",)
"""Datasets whose options are shown in a seeded per-question order.  TruthfulQA MC1 lists the
correct choice first in its source, so it must be shuffled; MMLU-Pro's own order is the
standard one and is kept (the study's setting)."""


def option_letters(n: int) -> str:
    """The letters of ``n`` options: ``option_letters(4) == 'ABCD'``."""
    if not 1 <= n <= 26:
        raise ValueError(f"invalid number of options {n}: use 1..26")
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]


def _shuffle(dataset: str, qid: str, n_options: int) -> tuple[int, ...]:
    """The per-question option order: shown position -> source index (seeded by the id for
    :data:`SHUFFLED` datasets, the source order otherwise)."""
    if dataset not in SHUFFLED:
        return tuple(range(n_options))
    rng = np.random.default_rng(stable_seed(dataset, qid))
    return tuple(int(i) for i in rng.permutation(n_options))


def _source_answer_index(dataset: str, rec: dict[str, Any]) -> int:
    if dataset == "truthfulqa":
        return int(rec["answer_index"])
    # MMLU-Pro: the letter is authoritative (question 3983 has answer_index != letter; the
    # official scorer compares letters; see SOURCES.md).
    return ord(rec["answer"].strip().upper()) - ord("A")


def _question(dataset: str, rec: dict[str, Any]) -> Question:
    qid, text, meta = str(rec["id"]), rec["question"], dict(rec.get("meta") or {})
    gold_raw = str(rec["answer"])
    if rec.get("choices"):
        source = list(rec["choices"])
        perm = _shuffle(dataset, qid, len(source))
        choices: tuple[str, ...] | None = tuple(source[i] for i in perm)
        answer_index = _source_answer_index(dataset, rec)
        if not 0 <= answer_index < len(source):
            raise ValueError(f"{dataset} question {qid!r}: gold index {answer_index} outside "
                             f"its {len(source)} options")
        gold = option_letters(len(source))[perm.index(answer_index)]
    else:
        perm, choices = None, None
        gold = gold_raw.strip()
    return Question(id=qid, dataset=dataset, question=text, choices=choices, gold=gold,
                    gold_raw=gold_raw, permutation=perm, meta=meta)


class _Source:
    """One benchmark file's records, each made a :class:`Question` when first asked for: a
    sample of a few questions (a grid's) builds only those (MMLU-Pro holds 12,032)."""

    def __init__(self, name: str, path: str) -> None:
        self.name, self.records = name, _records(path)
        ids = [str(rec["id"]) for rec in self.records]
        self.position = {qid: i for i, qid in enumerate(ids)}
        if len(self.position) != len(ids):
            raise ValueError(f"duplicate question ids in {path!r}")
        self._made: list[Question | None] = [None] * len(ids)

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, i: int) -> Question:
        q = self._made[i]
        if q is None:
            q = self._made[i] = _question(self.name, self.records[i])
        return q


@lru_cache(maxsize=8)
def _source(name: str, path: str) -> _Source:
    return _Source(name, path)


@lru_cache(maxsize=8)
def _questions(name: str, path: str) -> tuple[Question, ...]:
    """The parsed questions of one benchmark file (cached: MMLU-Pro is 10 MB of JSONL)."""
    src = _source(name, path)
    return tuple(src[i] for i in range(len(src)))


def load(name: str, n: int | None = None, seed: int = 0) -> list[Question]:
    """The questions of benchmark ``name``: all of them (``n=None``) or a seeded uniform sample of
    ``n`` without replacement, in source order.

    The sample depends only on ``(name, n, seed)``: the same ids on every run and machine.

    >>> len(load("math500"))
    500
    >>> [q.id for q in load("gsm8k", n=2, seed=0)] != [q.id for q in load("gsm8k", n=2, seed=1)]
    True
    >>> load("gsm8k", n=0)
    Traceback (most recent call last):
    ...
    ValueError: invalid n=0: dataset 'gsm8k' has 1319 questions: use 1..1319 or None for the full set
    """
    _check_name(name)
    path = str(_path(name))
    if n is None:
        return list(_questions(name, path))
    questions = _source(name, path)
    n = whole_number(n, "n", 1, len(questions), fix=f"dataset {name!r} has {len(questions)} "
                     f"questions: use 1..{len(questions)} or None for the full set")
    seed = whole_number(seed, "seed", None, fix="use an integer")
    rng = np.random.default_rng(stable_seed(name, int(seed)))
    picked = np.sort(rng.choice(len(questions), size=int(n), replace=False))
    return [questions[int(i)] for i in picked]


def get_question(dataset: str, id: str) -> Question:  # noqa: A002 - the record field's name
    """The question of ``dataset`` with this ``id``.

    >>> get_question("math500", "test/precalculus/807.json").meta["level"]
    2
    """
    _check_name(dataset)
    src = _source(dataset, str(_path(dataset)))
    if id not in src.position:
        raise ValueError(f"unknown question id {id!r} in dataset {dataset!r}")
    return src[src.position[id]]


class GoldAnswers(Mapping):
    """The gold answer of every shipped question, keyed by ``(dataset, question id)`` and
    looked up when asked (a dataset is read on its first question): what the simulated
    backend knows, without loading every question of a grid up front.

    >>> gold = GoldAnswers()
    >>> gold[("math500", "test/precalculus/807.json")] == get_question(
    ...     "math500", "test/precalculus/807.json").gold, ("gsm8k", "no such id") in gold
    (True, False)
    """

    def __getitem__(self, key: tuple[str, str]) -> str:
        dataset, qid = key
        try:
            return get_question(dataset, qid).gold
        except ValueError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((q.dataset, q.id) for name in DATASETS for q in load(name))

    def __len__(self) -> int:
        return sum(len(load(name)) for name in DATASETS)


def normalize_text(text: str) -> str:
    """A question's text for matching: whitespace runs made one space, ends stripped.

    >>> normalize_text("  What is  2 +\t 2? ")
    'What is 2 + 2?'
    """
    return " ".join(str(text).split())


@lru_cache(maxsize=None)
def _text_index(name: str, path: str) -> dict[str, Question]:
    return {normalize_text(q.question): q for q in _questions(name, path)}


def match_question(dataset: str, text: str) -> Question | None:
    """The question of ``dataset`` whose text is ``text`` (whitespace aside), else the longest
    one whose text lies inside ``text`` (a prompt that wraps the question), else None.

    >>> match_question("math500", load("math500")[0].question + " ").id
    'test/precalculus/807.json'
    >>> match_question("math500", "What is the colour of the sky?") is None
    True
    """
    _check_name(dataset)
    index = _text_index(dataset, str(_path(dataset)))
    key = normalize_text(text)
    if key in index:
        return index[key]
    inside = [t for t in index if len(t) >= 40 and t in key]  # our choice: no short snippets
    return index[max(inside, key=len)] if inside else None


def sha256_files() -> dict[str, str]:
    """File name -> sha256 of each benchmark file as stored (for run manifests).

    >>> sha256_files()["math500.jsonl"][:12]
    '2cb78cfe1f54'
    """
    out = {}
    for name in DATASETS:
        path = _path(name)
        out[path.name] = file_sha256(path)
    return out
