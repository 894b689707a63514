"""Per-benchmark answer canonicalisation and grading.

A :class:`Task` turns a model's answer text into a canonical string (the form the vote, the
router and the influence update compare) and grades it against a :class:`pear.data.Question`.
Two canonical answers the grader calls equal are put in one bucket by :meth:`Task.buckets`.

- GSM8K: the last number in the text, compared exactly as a fraction (``$1,000``, ``1000.0`` and
  ``1000`` are all ``"1000"``).
- MMLU-Pro, TruthfulQA: an option letter; a letter beyond the shown options is wrong.
- MATH-500: a cleaned LaTeX string, graded by Math-Verify (gold first) in a guarded worker
  process (see :mod:`pear.mathgrade`), so that one pathological expression cannot hang a run.

No model output is ever evaluated as code.

>>> get("gsm8k").canonical("The answer is $1,000.00.")
'1000'
>>> get("mmlu_pro").canonical("The answer is (c)")
'C'
>>> get("math500").canonical(r"so the answer is $\\boxed{\\dfrac12}$.")
'\\\\frac{1}{2}'
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Sequence

from pear import mathgrade

if TYPE_CHECKING:  # pragma: no cover - typing only; pear.data imports this module
    from pear.data import Question

__all__ = ["Grade", "Task", "NumericTask", "ChoiceTask", "MathTask", "TASKS", "get",
           "parse_number", "format_number", "parse_letter"]


@dataclass(frozen=True)
class Grade:
    """The grade of one answer."""

    correct: bool
    """Whether the answer equals the gold answer (never True for a parse failure or timeout)."""
    parse_failure: bool = False
    """No answer could be read from the text."""
    timeout: bool = False
    """The grader did not finish in time (or crashed); the answer counts as wrong."""


class Task(ABC):
    """Canonicalisation and grading of one benchmark's answers."""

    name: str

    @abstractmethod
    def canonical(self, text: str) -> str:
        """The canonical form of an answer text; ``""`` when it holds no readable answer."""

    @abstractmethod
    def grade_detail(self, prediction: str, question: Question) -> Grade:
        """Grade ``prediction`` (raw answer text) against ``question``."""

    def grade(self, prediction: str, question: Question) -> bool:
        """Whether ``prediction`` is correct for ``question``."""
        return self.grade_detail(prediction, question).correct

    def equivalent(self, a: str, b: str) -> bool:
        """Whether two canonical answers are the same answer (``""`` equals nothing)."""
        return a != "" and a == b

    def buckets(self, canonicals: Sequence[str]) -> list[str]:
        """A bucket representative per canonical answer; equivalent answers share one.

        The result does not depend on the order of ``canonicals`` (representatives are chosen
        in (length, text) order); ``""`` stays its own non-answer bucket.

        >>> get("gsm8k").buckets(["2", "", "3", "2"])
        ['2', '', '3', '2']
        """
        reps: list[str] = []
        assign: dict[str, str] = {"": ""}
        for c in sorted(set(canonicals) - {""}, key=lambda s: (len(s), s)):
            assign[c] = next((r for r in reps if self.equivalent(r, c)), c)
            if assign[c] == c:
                reps.append(c)
        return [assign[c] for c in canonicals]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


# ---------------------------------------------------------------------------------------------
# GSM8K: numbers

MAX_NUMBER_CHARS = 100  # our choice: a longer "number" is not an answer (and int() refuses it)
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?![\d,]*\d)")
_NUMBER = re.compile(
    r"(?P<sign>(?<![\w)\]}])[-\u2212\u2013]\s*)?\\?\$?\s*"
    r"(?:\\d?frac\{(?P<fn>\d+)\}\{(?P<fd>\d+)\}"
    r"|(?:(?P<whole>\d+)\s+(?=\d+\s*/\s*\d))?"
    r"(?P<num>\d+(?:\.\d+)?|\.\d+)(?:\s*/\s*(?P<den>\d+(?:\.\d+)?)(?!\.?\d))?)")


def format_number(value: Fraction) -> str:
    """The canonical text of a number: an integer, an exact decimal, or ``p/q``.

    >>> format_number(Fraction(3, 4)), format_number(Fraction(1000)), format_number(Fraction(1, 3))
    ('0.75', '1000', '1/3')
    """
    if value.denominator == 1:
        return str(value.numerator)
    d, twos, fives = value.denominator, 0, 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f"{value.numerator}/{value.denominator}"
    places = max(twos, fives)
    scaled = abs(value.numerator) * 10 ** places // value.denominator
    sign = "-" if value < 0 else ""
    whole, frac = divmod(scaled, 10 ** places)
    return f"{sign}{whole}.{frac:0{places}d}".rstrip("0")


def parse_number(text: str) -> Fraction | None:
    """The last number in ``text`` (thousands commas, ``$``, units and ``%`` ignored), or None.

    >>> parse_number("Total: -$1,250.50 dollars"), parse_number("3/4 of it"), parse_number("none")
    (Fraction(-2501, 2), Fraction(3, 4), None)
    """
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text or "")
    last = None
    for last in _NUMBER.finditer(text):
        pass
    if last is None or len(last.group(0)) > MAX_NUMBER_CHARS:
        return None
    if last["fn"] is not None:
        num, den = Fraction(last["fn"]), Fraction(last["fd"])
    else:
        num = Fraction(last["num"])
        den = Fraction(last["den"]) if last["den"] is not None else Fraction(1)
    if den == 0:
        return None
    value = num / den + (Fraction(last["whole"]) if last["whole"] else 0)  # "3 1/2": mixed
    return -value if last["sign"] else value


class NumericTask(Task):
    """A numeric answer (GSM8K): the last number in the text, compared exactly."""

    def __init__(self, name: str) -> None:
        self.name = name

    def canonical(self, text: str) -> str:
        """The last number in ``text`` in canonical form (``""`` if there is none).

        >>> get("gsm8k").canonical("It costs $18.00")
        '18'
        """
        value = parse_number(text)
        return "" if value is None else format_number(value)

    def grade_detail(self, prediction: str, question: Question) -> Grade:
        pred = self.canonical(prediction)
        if not pred:
            return Grade(False, parse_failure=True)
        gold = parse_number(question.gold)
        return Grade(gold is not None and Fraction(pred) == gold)


# ---------------------------------------------------------------------------------------------
# Multiple choice: letters

_WRAPPER = re.compile(r"\\(?:boxed|text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")
_ONLY_LETTER = re.compile(r"^[\s(\[]*([A-Za-z])[\s)\]]*[.:)]?\s*$")
_LETTER_AFTER = (  # after a keyword: "(b)", "[b]", "B" (not a word like "I think"), "b" at the end
    r"\s*[:=\-]?\s*(?:\(\s*([A-Za-z])\s*\)|\[\s*([A-Za-z])\s*\]|([A-Z])(?![\w'\u2019])"
    r"(?!\s+(?:think|believe|am|guess|would|will|can|need)\b)|([a-z])(?=\s*\.?\s*$))"
    r"(?!\s*(?:,|/|&|\band\b|\bor\b)\s*[(\[]?[A-Za-z](?![\w'\u2019]))")  # not "A or B"
_ANSWER_KEY = re.compile(r"(?i:\banswer\b(?:\s+(?:is|would\s+be|will\s+be))?)" + _LETTER_AFTER)
_OPTION_KEY = re.compile(r"(?i:\b(?:option|choice)\b(?:\s+is)?)" + _LETTER_AFTER)
_LEADING = re.compile(r"^\s*[(\[]?([A-Z])[.):\]]\s+\S")
_PAREN = re.compile(r"\(([A-Z])\)")


def parse_letter(text: str) -> str:
    """The option letter stated in ``text`` (uppercase), or ``""``.

    Accepted: ``B``, ``(B)``, ``B.``, ``b``, ``Option B``, ``The answer is B``, ``Answer: (b)``,
    ``B. <option text>``, ``**B**``, ``\\boxed{B}``, or a single parenthesised letter.  An
    "answer" statement wins over an "option" mention; the last one of its kind wins.

    >>> [parse_letter(t) for t in ["(b)", "Option C", "D. Paris", "The answer is a cat", ""]]
    ['B', 'C', 'D', '', '']
    """
    t = (text or "").replace("*", "").replace("$", "").strip()
    for _ in range(3):
        t = _WRAPPER.sub(lambda m: m.group(1).strip(), t)
    m = _ONLY_LETTER.match(t)
    if m:
        return m.group(1).upper()
    for key in (_ANSWER_KEY, _OPTION_KEY):
        hits = list(key.finditer(t))
        if hits:
            return next(g for g in hits[-1].groups() if g).upper()
    paren = set(_PAREN.findall(t))
    m = _LEADING.match(t)
    if m and paren <= {m.group(1)}:
        return m.group(1)
    return paren.pop() if len(paren) == 1 else ""


class ChoiceTask(Task):
    """A multiple-choice answer (MMLU-Pro, TruthfulQA): the letter of a shown option."""

    def __init__(self, name: str) -> None:
        self.name = name

    def canonical(self, text: str) -> str:
        """The option letter stated in ``text`` (see :func:`parse_letter`).

        >>> get("truthfulqa").canonical("Option B")
        'B'
        """
        return parse_letter(text)

    def grade_detail(self, prediction: str, question: Question) -> Grade:
        letter = self.canonical(prediction)
        if not letter:
            return Grade(False, parse_failure=True)
        n_options = len(question.choices or ())
        in_range = ord(letter) - ord("A") < n_options
        return Grade(in_range and letter == question.gold)


# ---------------------------------------------------------------------------------------------
# MATH-500: LaTeX expressions graded by Math-Verify


class MathTask(Task):
    """A LaTeX answer (MATH-500) graded by Math-Verify with the gold answer first.

    ``timeout_s`` bounds each Math-Verify call (parse + verify, run in a worker process); a
    call that runs over counts as wrong with ``timeout=True``.
    """

    def __init__(self, name: str, timeout_s: float = mathgrade.DEFAULT_TIMEOUT_S) -> None:
        if not timeout_s > 0:
            raise ValueError(f"invalid timeout_s={timeout_s!r}: use a positive number of seconds")
        self.name = name
        self.timeout_s = float(timeout_s)

    def canonical(self, text: str) -> str:
        r"""The cleaned final expression (see :func:`pear.mathgrade.canonical_latex`).

        >>> get("math500").canonical(r"$\left( 3, \frac{\pi}{2} \right)$")
        '(3,\\frac{\\pi}{2})'
        """
        return mathgrade.canonical_latex(text)

    def grade_detail(self, prediction: str, question: Question) -> Grade:
        pred = self.canonical(prediction)
        if not pred:
            return Grade(False, parse_failure=True)
        status, ok = mathgrade.verify(question.gold_raw, pred, self.timeout_s)
        if status == "unparsed":
            return Grade(False, parse_failure=True)
        return Grade(status == "ok" and ok, timeout=status == "timeout")

    def equivalent(self, a: str, b: str) -> bool:
        """Whether Math-Verify calls ``a`` and ``b`` equal, taking either one as gold."""
        if not a or not b:
            return False
        if a == b:
            return True
        return any(mathgrade.verify(g, p, self.timeout_s) == ("ok", True)
                   for g, p in ((a, b), (b, a)))


TASKS: dict[str, Task] = {
    "gsm8k": NumericTask("gsm8k"),
    "math500": MathTask("math500"),
    "truthfulqa": ChoiceTask("truthfulqa"),
    "mmlu_pro": ChoiceTask("mmlu_pro"),
}
"""The task of each dataset."""


def get(name: str) -> Task:
    """The task of dataset ``name``.

    >>> get("gsm8k").name
    'gsm8k'
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}")
    return TASKS[name]
