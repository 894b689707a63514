r"""Per-benchmark answer reading, grading and answer equivalence, as the benchmarks' reference
graders do them.

One equivalence serves grading, the vote, the router's T term, influence and every diagnostic:
:meth:`Task.judge` takes the raw answers of one question's agents (one round) and returns, per
answer, its **class** (a label shared by exactly the answers the grader calls equal; ``""`` for
no answer) and its grade against the gold answer.  Every answer of a class gets the class's
grade, so the vote and the router never split what the grader merges, nor merge what it splits.

- GSM8K: the final number as the common evaluators read it: after a ``####`` marker, else in the
  last ``\boxed{}``, else the last number (``$1,000``, ``1,000.00``, ``18 dollars`` and
  ``\boxed{18}`` are all read as numbers; ``1, 234`` is 234, never 1234); compared exactly as
  fractions.  The class is the number's canonical text.
- MMLU-Pro, TruthfulQA: the option letter as MMLU-Pro's reference evaluation extracts it
  (``answer is (B)``, ``Answer: B``, ``(B)``, ``\boxed{B}``, then the last stand-alone letter),
  restricted to the question's own option letters.  The class is the letter.  A question
  of another framework's records offers the option letters its text lists
  (:func:`offered_letters`).
- Yes/no (StrategyQA-style, ``pear import --grading yesno``): ``yes`` or ``no`` as a careful
  reader reads the answer (:func:`parse_yes_no`: the whole answer, a JSON ``answer`` field,
  "the answer is yes", ``\boxed{no}``, ``(yes)``, "So, no", a leading "No, because");
  ``True``/``False`` are yes/no; an answer that gives both ("yes or no") is none.  The class
  is ``yes`` or ``no``.
- MATH-500: Math-Verify's own extraction and comparison on the answer as written (see
  :mod:`pear.tasks.mathgrade`, which adds only what Math-Verify lacks for answers without
  delimiters, the same way for gold and prediction).  Classes are pairwise Math-Verify
  equivalence (either answer taken as gold), grouped greedily in a fixed order (Math-Verify's
  reading, shortest first, then the text) so that they do not depend on the agents' order; a
  class is named by its first member as written, and graded by that member's grade.

No model output is ever evaluated as code.

>>> get("gsm8k").canonical("The answer is $1,000.00.")
'1000'
>>> get("mmlu_pro").canonical("The answer is (C)")
'C'
>>> get("math500").canonical(r"so the answer is $\dfrac12$.")
'\\frac{1}{2}'
>>> for_kind("yesno", "strategyqa").canonical("No, because laptops came much later.")
'no'
"""
from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Callable, Sequence

from pear.tasks import mathgrade

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pear.tasks.benchmarks import Question

__all__ = ["Grade", "Judgement", "Task", "NumericTask", "ChoiceTask", "MathTask", "YesNoTask",
           "TASKS", "get", "GRADING_KINDS", "kind_of", "for_kind",
           "parse_number", "format_number", "parse_letter", "option_letters", "offered_letters",
           "parse_yes_no"]


@dataclass(frozen=True)
class Grade:
    """The grade of one answer."""

    correct: bool
    """Whether the answer equals the gold answer (never True for a parse failure or timeout)."""
    parse_failure: bool = False
    """No answer could be read from the text."""
    timeout: bool = False
    """The grader did not finish in time (or crashed); the answer counts as wrong."""


@dataclass(frozen=True)
class Judgement:
    """Classes and grades of the answers of one question (e.g. one round of a debate)."""

    classes: tuple[str, ...]
    """Per answer, its equivalence class label (``""`` = no answer); equal labels = equal
    answers for the vote, the router and influence."""
    grades: tuple[Grade, ...]
    """Per answer, its grade (the same for every answer of a class)."""

    @property
    def correct(self) -> tuple[bool, ...]:
        """Per answer, whether it is correct."""
        return tuple(g.correct for g in self.grades)


def _graded(classes: Sequence[str], right: Callable[[str], bool]) -> Judgement:
    """The judgement of answers read as ``classes``: ``""`` a parse failure, else ``right``."""
    return Judgement(tuple(classes), tuple(
        Grade(False, parse_failure=True) if not c else Grade(right(c)) for c in classes))


def _memo_key(answers: Sequence[str], question: Question) -> tuple:
    """What a judgement depends on: the gold answer (as read and as written), the number of
    options and the answers."""
    return (question.gold, question.gold_raw, len(question.choices or ()), tuple(answers))


class Task(ABC):
    """Reading, grading and equivalence of one benchmark's answers."""

    name: str

    def __init__(self, name: str) -> None:
        self.name = name

    @abstractmethod
    def canonical(self, text: str) -> str:
        """The answer read from ``text`` in canonical form; ``""`` when it holds none."""

    def judge(self, answers: Sequence[str], question: Question) -> Judgement:
        """Classes and grades of the raw ``answers`` given to ``question``.

        A judgement is a pure function of the answers and the question's gold answer (and
        number of options), so it is memoized on them within the process (:attr:`MEMO_SIZE`
        judgements; a debate's rounds and a question's methods and seeds repeat them)."""
        key = _memo_key(answers, question)
        memo = self.__dict__.setdefault("_memo", {})
        judged = memo.get(key)
        if judged is None:
            if len(memo) >= self.MEMO_SIZE:
                memo.clear()
            judged = memo[key] = self._judge(key[3], question)
        return judged

    def judge_many(self, batch: Sequence[tuple[Sequence[str], Question]]) -> list[Judgement]:
        """:meth:`judge` of each ``(answers, question)`` of ``batch`` (e.g. one phase of every
        debate in flight); a grader that asks another process asks once for the batch."""
        return [self.judge(answers, q) for answers, q in batch]

    MEMO_SIZE = 1 << 16  # our choice: judgements kept per task and process (cleared when full)

    @abstractmethod
    def _judge(self, answers: Sequence[str], question: Question) -> Judgement:
        """:meth:`judge` without the memo."""

    def grade_detail(self, prediction: str, question: Question) -> Grade:
        """Grade ``prediction`` (raw answer text) against ``question``."""
        return self.judge([prediction], question).grades[0]

    def grade(self, prediction: str, question: Question) -> bool:
        """Whether ``prediction`` is correct for ``question``."""
        return self.grade_detail(prediction, question).correct

    def equivalent(self, a: str, b: str) -> bool:
        """Whether two canonical answers are the same answer (``""`` equals nothing)."""
        return a != "" and a == b

    def buckets(self, canonicals: Sequence[str]) -> list[str]:
        """A bucket representative per canonical answer; equivalent answers share one.

        The result does not depend on the order of ``canonicals`` (representatives are chosen
        in (length, text) order); ``""`` stays its own non-answer bucket.  Prefer
        :meth:`judge`, which compares the answers as written.

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
_MARKER = re.compile(r"####")  # GSM8K's own answer marker (its reference solutions end so)
_BOXED = re.compile(r"\\boxed\s*\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")


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


def _number(text: str, first: bool = False) -> Fraction | None:
    """The last (or first) number of ``text``."""
    text = _THOUSANDS.sub(lambda m: m.group(0).replace(",", ""), text)
    last = None
    for last in _NUMBER.finditer(text):
        if first:
            break
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


def parse_number(text: str) -> Fraction | None:
    r"""The final number of ``text``, or None: the first number after the last ``####``, else
    the last number in the last ``\boxed{}``, else the last number of the text (thousands
    commas, ``$``, units and ``%`` ignored).

    >>> parse_number("Total: -$1,250.50 dollars"), parse_number("3/4 of it"), parse_number("none")
    (Fraction(-2501, 2), Fraction(3, 4), None)
    >>> parse_number("#### 18 (from 9 * 2)"), parse_number(r"\boxed{18} since 9 * 2 = 18.0")
    (Fraction(18, 1), Fraction(18, 1))
    """
    text = text or ""
    if _MARKER.search(text):
        value = _number(_MARKER.split(text)[-1], first=True)
        if value is not None:
            return value
    boxed = _BOXED.findall(text)
    if boxed:
        value = _number(boxed[-1])
        if value is not None:
            return value
    return _number(text)


class NumericTask(Task):
    """A numeric answer (GSM8K): the final number, compared exactly."""

    def canonical(self, text: str) -> str:
        """The final number of ``text`` in canonical form (``""`` if there is none).

        >>> get("gsm8k").canonical("It costs $18.00")
        '18'
        """
        value = parse_number(text)
        return "" if value is None else format_number(value)

    def _judge(self, answers: Sequence[str], question: Question) -> Judgement:
        gold = parse_number(question.gold)
        return _graded([self.canonical(a) for a in answers],
                       lambda c: gold is not None and Fraction(c) == gold)


# ---------------------------------------------------------------------------------------------
# Multiple choice: letters

ALL_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def option_letters(question: Question) -> str:
    """The letters of the options shown with ``question`` (``""`` if it has none)."""
    return ALL_LETTERS[:len(question.choices or ())]


_OFFERED = (  # the ways a question's text lists its options; group 1 is the letter
    re.compile(r"\(([A-Z])\)"),                                        # "(A) 21"
    re.compile(r"(?:^|(?<=[\s,;:'\"\[]))([A-Z])\)", re.M),              # "A) 21", "['A)21'"
    re.compile(r"(?:^|(?<=[\s,;:'\"\[]))([A-Z])\.(?=[ \t]*[^\s.])", re.M),  # "A. 21"
    re.compile(r"(?:^|(?<=[\s,;'\"\[]))([A-Z]):(?=[ \t]*\S)", re.M),      # "A: 21"
)


def offered_letters(text: str) -> str:
    """The option letters a question's ``text`` lists, ``A`` on (``""`` if fewer than two).

    An option is a letter written ``A)``, ``(A)``, ``A.`` or ``A:`` at a line's start or
    inline (AQuA's ``Options: A)21 B)21.5``), or as the items of a quoted list (ReConcile's
    and Du et al.'s forks' ``options: ['A)10%', 'B) 25%', "C)28%"]``: a letter after a quote
    or ``[``); of each way of writing them, the letters count from ``A`` up to the first one
    missing, and the way that lists the most wins, so a stray ``(X)`` or ``vitamin C.`` is
    not an option.

    >>> offered_letters("What is 2+2? Options: A)3 B)4 C)5 D)6 E)7")
    'ABCDE'
    >>> offered_letters("Choose one of the following options: ['A)10%', 'B)25%', 'C)28%']")
    'ABC'
    >>> offered_letters("Pick one.\\n(A) iron\\n(B) neon\\nAnswer in the form (X).")
    'AB'
    >>> offered_letters("Is vitamin C. an acid? Answer (X)."), offered_letters("A: yes B: no")
    ('', 'AB')
    """
    best = ""
    for pattern in _OFFERED:
        found = set(pattern.findall(text or ""))
        run = next((ALL_LETTERS[:i] for i, ch in enumerate(ALL_LETTERS) if ch not in found),
                   ALL_LETTERS)
        if len(run) > len(best):
            best = run
    return best if len(best) >= 2 else ""


_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf)\s*\{([^{}]*)\}")


def _letter_patterns(letters: str) -> list[tuple[re.Pattern[str], bool]]:
    """(pattern, take the last match) in priority order; group 1 is the letter."""
    up = f"[{letters}]"
    anycase = f"[{letters}{letters.lower()}]"
    return [
        (re.compile(rf"^\s*[(\[]?({anycase})[)\].:]?\s*$"), False),   # the whole answer: "b", "(B)"
        (re.compile(rf"(?i:answer\s+is)\s*:?\s*(?:\(({anycase})\)|({up})(?![\w'\u2019]))"),
         False),                                                   # reference: first "answer is"
        (re.compile(rf"(?i:answer)\s*:\s*(?:\(({anycase})\)|({up})(?![\w'\u2019]))"),
         True),                                                    # reference: last "Answer:"
        (re.compile(rf"^\s*({up})[.)]\s+\S"), False),                 # "B. option text"
        (re.compile(rf"\(({up})\)"), True),                            # "(B)"
        (re.compile(rf"\\boxed\s*\{{\s*\(?({anycase})\)?\s*\}}"), True),  # \boxed{B}
        (re.compile(rf"(?<![\w'\u2019])({up})(?![\w'\u2019])"), True),  # last stand-alone letter
    ]


_PATTERNS: dict[str, list[tuple[re.Pattern[str], bool]]] = {}


def parse_letter(text: str, letters: str = ALL_LETTERS) -> str:
    r"""The option letter (uppercase, one of ``letters``) stated in ``text``, or ``""``.

    In order, as MMLU-Pro's reference evaluation and its common variants: the whole answer is a
    letter (``b``, ``(B)``, ``B.``); the first ``answer is (B)`` / ``answer is B``; the last
    ``Answer: B``; a leading ``B. <option text>`` (the form options are shown in); the last
    ``(B)``; the last ``\boxed{B}``; the last stand-alone capital letter.  Lower case is read
    only where the letter stands alone: the whole answer, ``\boxed{b}``, or ``(b)`` after
    "answer".  Letters outside ``letters`` are never read.

    >>> [parse_letter(t, "ABCD") for t in ["(b)", "Option C", "D. Paris", "The answer is E", ""]]
    ['B', 'C', 'D', '', '']
    """
    if letters not in _PATTERNS:
        _PATTERNS[letters] = _letter_patterns(letters) if letters else []
    t = (text or "").replace("*", "").replace("$", "")
    for _ in range(3):
        t = _WRAPPER.sub(lambda m: m.group(1), t)
    for pattern, last in _PATTERNS[letters]:
        hit = None
        for hit in pattern.finditer(t):
            if not last:
                break
        if hit is not None:
            return next(g for g in hit.groups() if g).upper()
    return ""


class ChoiceTask(Task):
    """A multiple-choice answer (MMLU-Pro, TruthfulQA): the letter of a shown option."""

    def canonical(self, text: str) -> str:
        """The option letter stated in ``text``, any of A-Z (see :func:`parse_letter`).

        >>> get("truthfulqa").canonical("Answer: B")
        'B'
        """
        return parse_letter(text)

    def _judge(self, answers: Sequence[str], question: Question) -> Judgement:
        letters = option_letters(question)
        return _graded([parse_letter(a, letters) for a in answers], lambda c: c == question.gold)


# ---------------------------------------------------------------------------------------------
# Yes/no: StrategyQA-style answers

_YES_NO = {"yes": "yes", "true": "yes", "no": "no", "false": "no"}
_WORD = r"(yes|no|true|false)"
_OPEN = r"[\s(\[*\"'`]*"  # what may dress a stated word: brackets, quotes, markdown bold
# a stated "yes"/"no" ends its clause: not "no one", "no evidence" ("no" as a determiner), but
# "No, because", "no.", "No it is not", "yes since ..."
_END = (r"(?![\w'\u2019-])(?!\s+(?!(?:because|since|as|for|but|it|he|she|they|we|i|you|this|"
        r"that|there)\b)[A-Za-z])")
_WHOLE = re.compile(rf"^{_OPEN}{_WORD}[\s)\]*\"'`.!]*$", re.I)
_JSON_FIELD = re.compile(rf"[\"']answer[\"']\s*:\s*[\"']?\s*{_WORD}\b", re.I)
_STATEMENTS = (  # explicit statements of the answer; the last one (by position) counts
    re.compile(rf"\banswer\b(?:\s+to\s+(?:the|this|your)\s+question)?\s*"
               rf"(?:is|was|would be|should be|will be|remains|stays|=|:)\s*:?\s*"
               rf"(?:(?:still|definitely|clearly|indeed|therefore|also|then|simply|"
               rf"the same|unchanged)\s*[:,-]?\s+)?{_OPEN}{_WORD}{_END}", re.I),
    re.compile(rf"\\boxed\s*\{{\s*(?:\\text(?:bf)?\s*\{{\s*)?{_WORD}\s*\}}", re.I),
    re.compile(rf"\(\s*{_WORD}\s*\)", re.I),
    re.compile(rf"\b(?:therefore|thus|hence|so|in conclusion|in summary|to conclude|overall|"
               rf"consequently|in short|ultimately)\s*[,:]?\s+[*\"']*(yes|no){_END}", re.I),
)
_LEADING = re.compile(rf"^{_OPEN}(yes|no){_END}", re.I)  # "No, because ..."
_BOTH_AFTER = re.compile(rf"[\s)\]*\"'`]*,?\s*(?:or|and|nor|/)\s*{_OPEN}{_WORD}\b", re.I)
_BOTH_BEFORE = re.compile(rf"\b{_WORD}[\s)\]*\"'`]*,?\s*(?:or|and|nor|/)\s*{_OPEN}$", re.I)


def _hedged(text: str, hit: re.Match[str]) -> bool:
    """Whether the word ``hit`` reads is one of two answers given together ("yes or no",
    ``(yes) or (no)``, "yes/no", "yes and no")."""
    word = hit.start(1), hit.end(1)
    return bool(_BOTH_AFTER.match(text, word[1]) or _BOTH_BEFORE.search(text[:word[0]]))


def parse_yes_no(text: str) -> str:
    r"""``"yes"`` or ``"no"`` as ``text`` answers a yes/no question, or ``""``.

    In order: the whole answer is the word (``Yes``, ``(no)``, ``**No.**``, ``True``); a
    JSON ``"answer"`` field (``{"answer": "yes"}``, ``{"answer": false}``); the last explicit
    statement (``the answer is yes``, ``Answer: No``, ``\boxed{no}``, ``(yes)``, ``So, no``);
    a text that opens with its answer (``No, because ...``).  ``true``/``false`` are
    ``yes``/``no`` where they stand as the answer; "no" as a determiner (``no one``, ``there
    is no evidence``) is not an answer; the answer read is ``""`` when it is given together
    with the other ("yes or no", ``(yes) or (no)``, "yes/no").  Nothing is evaluated.

    >>> [parse_yes_no(t) for t in ["Yes.", "(no)", "False", '{"answer": true}']]
    ['yes', 'no', 'no', 'yes']
    >>> parse_yes_no("Aristotle died in 322 BC, so the answer is No."), \
    ...     parse_yes_no("No, because laptops came much later."), parse_yes_no("yes or no")
    ('no', 'no', '')
    """
    t = (text or "").strip()
    if not t:
        return ""
    whole = _WHOLE.match(t)
    if whole:
        return _YES_NO[whole.group(1).lower()]
    field = None
    for field in _JSON_FIELD.finditer(t):
        pass
    if field is not None:
        return "" if _hedged(t, field) else _YES_NO[field.group(1).lower()]
    hits = [m for pattern in _STATEMENTS for m in pattern.finditer(t)]
    if not hits:
        lead = _LEADING.match(t)
        hits = [lead] if lead else []
    if not hits:
        return ""
    last = max(hits, key=lambda m: m.start(1))
    return "" if _hedged(t, last) else _YES_NO[last.group(1).lower()]


class YesNoTask(Task):
    """A yes/no answer (StrategyQA): ``yes`` or ``no``, read by :func:`parse_yes_no`."""

    def canonical(self, text: str) -> str:
        """``yes``, ``no`` or ``""`` (see :func:`parse_yes_no`).

        >>> for_kind("yesno", "strategyqa").canonical("So, yes: he could.")
        'yes'
        """
        return parse_yes_no(text)

    def _judge(self, answers: Sequence[str], question: Question) -> Judgement:
        gold = parse_yes_no(question.gold)
        return _graded([parse_yes_no(a) for a in answers], lambda c: c == gold)


# ---------------------------------------------------------------------------------------------
# MATH-500: LaTeX answers graded by Math-Verify


class MathTask(Task):
    """A LaTeX answer (MATH-500) graded by Math-Verify with the gold answer first.

    ``timeout_s`` bounds each Math-Verify call (run in a worker process); a call that runs
    over counts as wrong with ``timeout=True``.
    """

    def __init__(self, name: str, timeout_s: float = mathgrade.DEFAULT_TIMEOUT_S) -> None:
        if not timeout_s > 0:
            raise ValueError(f"invalid timeout_s={timeout_s!r}: use a positive number of seconds")
        super().__init__(name)
        self.timeout_s = float(timeout_s)

    def canonical(self, text: str) -> str:
        r"""Math-Verify's reading of ``text`` as a normalised LaTeX string (``""``: none).

        >>> get("math500").canonical(r"\boxed{(2,2)} and \boxed{(6,2)}")
        '(2,2),(6,2)'
        """
        status, label = mathgrade.extract(text, self.timeout_s)
        return label if status == "ok" else ""

    def _same(self, a: str, b: str) -> bool:
        """Whether Math-Verify calls ``a`` and ``b`` equal, taking either one as gold."""
        return any(mathgrade.verify(g, p, self.timeout_s) == ("ok", True)
                   for g, p in ((a, b), (b, a)))

    def equivalent(self, a: str, b: str) -> bool:
        """Whether two (canonical) answers are equal for Math-Verify either way."""
        return bool(a) and bool(b) and (a == b or self._same(a, b))

    def _judge(self, answers: Sequence[str], question: Question) -> Judgement:
        """Classes by pairwise Math-Verify equivalence (answers read identically share one
        without a comparison), independent of the answers' order; Math-Verify is asked in
        two round trips (the readings; then every comparison and grade they may need)."""
        inputs = [mathgrade.mathverify_input(a) for a in answers]
        text_of = _texts(answers)
        reads: dict[str, tuple[str, str]] = dict(zip(  # Math-Verify input -> (status, label)
            text_of, mathgrade.extract_all(list(text_of.values()), self.timeout_s)))
        self._prefetch(reads, text_of, question)
        reps: list[str] = []
        rep_of: dict[str, str] = {"": ""}
        for key in sorted(reads, key=lambda k: (len(reads[k][1]), reads[k][1], k)):
            status, label = reads[key]
            if status == "unparsed":
                rep_of[key] = ""
                continue
            rep_of[key] = next((r for r in reps if status == reads[r][0] == "ok" and (
                reads[r][1] == label or self._same(text_of[r], text_of[key]))), key)
            if rep_of[key] == key:
                reps.append(key)
        grades = {"": Grade(False, parse_failure=True)}
        for r in reps:
            grades[r] = self._grade(text_of[r], reads[r][0], question)
        classes = tuple(text_of[rep_of[k]].strip() if rep_of[k] else "" for k in inputs)
        return Judgement(classes, tuple(grades[rep_of[k]] for k in inputs))

    def judge_many(self, batch: Sequence[tuple[Sequence[str], Question]]) -> list[Judgement]:
        """:meth:`judge` of each of ``batch``, Math-Verify asked in two round trips for all
        the judgements not memoized, however many questions the batch holds."""
        memo = self.__dict__.get("_memo", {})
        todo = [(_texts(a), q) for a, q in batch if _memo_key(a, q) not in memo]
        if todo:
            every = {k: t for text_of, _ in todo for k, t in text_of.items()}
            reads = dict(zip(every, mathgrade.extract_all(list(every.values()), self.timeout_s)))
            mathgrade.verify_all([p for text_of, q in todo for p in self._pairs(
                {k: reads[k] for k in text_of}, text_of, q)], self.timeout_s)
        return super().judge_many(batch)

    def _prefetch(self, reads: dict[str, tuple[str, str]], text_of: dict[str, str],
                  question: Question) -> None:
        """Ask Math-Verify, in one round trip, every pair :meth:`_judge` may ask."""
        mathgrade.verify_all(self._pairs(reads, text_of, question), self.timeout_s)

    @staticmethod
    def _pairs(reads: dict[str, tuple[str, str]], text_of: dict[str, str],
               question: Question) -> list[tuple[str, str]]:
        """The (gold, prediction) pairs :meth:`_judge` may ask of the answers ``text_of`` read
        as ``reads``: both ways between answers read differently, and every grade."""
        ok = sorted((k for k in reads if reads[k][0] == "ok"),
                    key=lambda k: (len(reads[k][1]), reads[k][1], k))
        pairs = [(text_of[a], text_of[b]) for i, a in enumerate(ok) for b in ok[i + 1:]
                 if reads[a][1] != reads[b][1]]
        pairs += [(b, a) for a, b in pairs]
        pairs += [(question.gold_raw, text_of[k]) for k in reads
                  if reads[k][0] not in ("unparsed", "timeout")]
        return pairs

    def _grade(self, text: str, read_status: str, question: Question) -> Grade:
        if read_status == "timeout":
            return Grade(False, timeout=True)
        status, ok = mathgrade.verify(question.gold_raw, text, self.timeout_s)
        if status == "unparsed":
            return Grade(False, parse_failure=True)
        return Grade(status == "ok" and ok, timeout=status == "timeout")


def _texts(answers: Sequence[str]) -> dict[str, str]:
    """Each Math-Verify input among ``answers`` -> one raw answer written so (the first in
    text order, so that it does not depend on the answers' order)."""
    text_of: dict[str, str] = {}
    for a, key in sorted((a, mathgrade.mathverify_input(a)) for a in answers):
        if key and key not in text_of:
            text_of[key] = a
    return text_of


TASKS: dict[str, Task] = {
    "gsm8k": NumericTask("gsm8k"),
    "math500": MathTask("math500"),
    "truthfulqa": ChoiceTask("truthfulqa"),
    "mmlu_pro": ChoiceTask("mmlu_pro"),
}
"""The task of each dataset."""


GRADING_KINDS: dict[str, type[Task]] = {"numbers": NumericTask, "letters": ChoiceTask,
                                         "math": MathTask, "yesno": YesNoTask}
"""The grading kinds, by name: a final number (GSM8K's), an option letter (MMLU-Pro's), a
LaTeX answer graded by Math-Verify (MATH-500's), yes or no (StrategyQA's).  Records of a
dataset we do not ship (``pear import --grading``) are graded with one of these."""


def kind_of(task: Task) -> str:
    """The grading kind of ``task``.

    >>> kind_of(get("gsm8k")), kind_of(get("mmlu_pro")), kind_of(get("math500"))
    ('numbers', 'letters', 'math')
    >>> kind_of(for_kind("yesno", "strategyqa"))
    'yesno'
    """
    return next(k for k, cls in GRADING_KINDS.items() if isinstance(task, cls))


def for_kind(kind: str, name: str) -> Task:
    """A task named ``name`` graded the way ``kind`` says (one of :data:`GRADING_KINDS`).

    >>> for_kind("letters", "mmlu").canonical("so the answer is (C)")
    'C'
    """
    if kind not in GRADING_KINDS:
        raise ValueError(f"unknown grading kind {kind!r}: choose one of "
                         f"{', '.join(GRADING_KINDS)}")
    return GRADING_KINDS[kind](name)


def get(name: str) -> Task:
    """The task of dataset ``name``.

    >>> get("gsm8k").name
    'gsm8k'
    """
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}: choose one of {', '.join(TASKS)}")
    return TASKS[name]
