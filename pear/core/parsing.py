"""Robust extraction of the JSON object a model was asked for, with explicit failure flags.
(The answer a free-text solution states, in other frameworks' records, is read by the import:
:mod:`pear.store.readers.answers`.)

Survives fences, text around the object, trailing commas, raw newlines and LaTeX backslashes
in strings (``\\frac``, ``\\boxed``), numbers as numbers, confidences out of range or as text.
No model output is ever executed.  Fallbacks (always flagged in ``parse_error``):

* answer missing: ``""`` in round 0 (graded wrong); a revision keeps the previous answer.
* confidence missing: 3 (the midpoint); out of range: clipped to 1..5 (not a failure).
* no review for a routed target: nothing delivered (``delivered = false``), never invented.
* no decision on a received critique: ``None`` (not accepted for influence, left out of the
  acceptance rate; never "REJECT all").
* an unknown ``assessment`` word: ``""`` (the review still counts).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from pear.core.config import CONFIDENCE_MAX, CONFIDENCE_MIN

__all__ = ["extract_json", "parse_confidence", "AnswerParse", "CritiqueParse", "RevisionParse",
           "parse_answer", "parse_critique", "parse_revision", "DEFAULT_CONFIDENCE"]

DEFAULT_CONFIDENCE = 3  # our choice: midpoint of the 1..5 scale when confidence is missing

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
# LaTeX commands whose first letter is also a JSON escape (\b \f \n \r \t): keep them literal
_LATEX_AFTER_ESCAPE = re.compile(
    r"(?:[bf][A-Za-z]"  # \b, \f + letter: \boxed, \beta, \frac ... (form feeds are not meant)
    r"|(?:n(?:eq|e|abla|ewline|ot|u|i|leq|geq|mid|parallel|otin|eg)"
    r"|r(?:ight|ho|angle|m|floor|ceil|ightarrow)"
    r"|t(?:ext|heta|imes|an|frac|o|op|au|ilde|riangle|extbf|extit|h|imes|ext))(?![A-Za-z]))")


def _balanced_object(text: str, start: int) -> str | None:
    """The substring from ``text[start] == '{'`` to its matching brace (string-aware)."""
    depth, in_str, esc = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


def _fix_backslashes(s: str) -> str:
    """Double backslashes in JSON strings that are no JSON escape or start a LaTeX command."""
    out, in_str, i = [], False, 0
    while i < len(s):
        ch = s[i]
        if not in_str:
            out.append(ch)
            in_str = ch == '"'
            i += 1
            continue
        if ch == '"':
            in_str = False
            out.append(ch)
        elif ch == "\\":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            rest = s[i + 1:i + 16]
            if nxt in '"\\/':
                out.append(s[i:i + 2])
                i += 2
                continue
            if nxt == "u" and re.match(r"u[0-9a-fA-F]{4}", rest):
                out.append(s[i:i + 6])
                i += 6
                continue
            if nxt in "bfnrt" and not _LATEX_AFTER_ESCAPE.match(rest):
                out.append(s[i:i + 2])
                i += 2
                continue
            out.append("\\\\")  # a literal backslash (LaTeX or stray)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_DECODER = json.JSONDecoder(strict=False)


def _loads(candidate: str) -> Any:
    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", candidate)):
        tries = (_fix_backslashes(attempt), attempt) if "\\" in attempt else (attempt,)
        for fixed in tries:
            try:
                return json.loads(fixed, strict=False)
            except (json.JSONDecodeError, RecursionError):
                continue
    return None


def _fast(text: str) -> dict[str, Any] | None:
    """The common case: a well-formed object without backslashes, decoded at C speed."""
    start = text.find("{")
    if start == -1 or "\\" in text:
        return None
    try:
        obj, _ = _DECODER.raw_decode(text, start)
    except (json.JSONDecodeError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def extract_json(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first JSON object in ``text`` and ``None``, or ``None`` and the reason.

    >>> extract_json('Sure! ```json\\n{"answer": "\\\\frac{1}{2}", "confidence": 4,}\\n```')
    ({'answer': '\\\\frac{1}{2}', 'confidence': 4}, None)
    >>> extract_json("no json here")
    (None, 'no JSON object found')
    """
    if not isinstance(text, str) or not text.strip():
        return None, "empty output"
    obj = _fast(text)
    if obj is not None:
        return obj, None
    pieces = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for piece in pieces:
        start = piece.find("{")
        while start != -1:
            obj_text = _balanced_object(piece, start)
            if obj_text is None:
                break
            obj = _loads(obj_text)
            if isinstance(obj, dict):
                return obj, None
            start = piece.find("{", start + 1)
    if "{" in text and _balanced_object(text, text.find("{")) is None:
        return None, "truncated JSON object"
    return None, "no JSON object found"


_CONF_WORDS = {"very low": 1, "low": 2, "medium": 3, "moderate": 3, "high": 4,
               "very high": 5, "certain": 5}


def parse_confidence(value: Any) -> int | None:
    """An integer confidence on 1..5 from a number, a numeric string ("4", "4/5", "80%"),
    or a word ("high"); clipped to range; ``None`` when nothing usable.

    >>> [parse_confidence(v) for v in (4, 4.6, "5/5", "9", "high", "80%", None, "x")]
    [4, 5, 5, 5, 4, 4, None, None]
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        if value != value:  # NaN
            return None
        return int(min(CONFIDENCE_MAX, max(CONFIDENCE_MIN, round(value))))
    if isinstance(value, str):
        s = value.strip().lower()
        if s in _CONF_WORDS:
            return _CONF_WORDS[s]
        m = re.match(r"^(-?\d+(?:\.\d+)?)\s*(%|/\s*(\d+))?", s)
        if m:
            x = float(m.group(1))
            if m.group(2) == "%":
                x = 1 + 4 * x / 100
            elif m.group(3):
                denom = float(m.group(3)) or 1.0
                x = 1 + 4 * (x - 1) / (denom - 1) if denom == 10 else x * 5 / denom
            return parse_confidence(x)
    return None


def _text(value: Any) -> str | None:
    """A field as text: strings stripped, numbers formatted, everything else None."""
    if type(value) is str:  # the common case first
        return value.strip()
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value.strip()
    return None


_ANSWER_FIELD = re.compile(r'"answer"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?)')
_CONF_FIELD = re.compile(r'"confidence"\s*:\s*"?(\d+(?:\.\d+)?)')


@dataclass
class AnswerParse:
    """An answer (initial or revised): text, confidence, reasoning, and what went wrong."""

    answer: str
    confidence: int
    reasoning: str
    parse_error: str | None = None
    decisions: dict[int, str] = field(default_factory=dict)


def parse_answer(text: str) -> AnswerParse:
    """Parse an initial answer (a broken object's fields recovered by regex, else flagged).

    >>> parse_answer('{"reasoning": "2+2", "answer": 4, "confidence": "5"}')
    AnswerParse(answer='4', confidence=5, reasoning='2+2', parse_error=None, decisions={})
    """
    return _answer_from(text, *extract_json(text))


def _answer_from(text: str, obj: dict[str, Any] | None, err: str | None) -> AnswerParse:
    errors = []
    if obj is None:
        obj = {}
        m = _ANSWER_FIELD.search(text or "")
        if m:
            raw = m.group(1)
            obj["answer"] = _loads("[" + raw + "]")[0] if raw.startswith('"') else raw
            c = _CONF_FIELD.search(text)
            if c:
                obj["confidence"] = c.group(1)
        errors.append(err or "invalid JSON")
    answer = _text(obj.get("answer"))
    if not answer:
        errors.append("missing answer")
        answer = ""
    conf = parse_confidence(obj.get("confidence"))
    if conf is None:
        errors.append("missing confidence")
        conf = DEFAULT_CONFIDENCE
    reasoning = _text(obj.get("reasoning")) or ""
    # a recovered answer + confidence from broken JSON is usable: flag only missing parts
    fatal = [e for e in errors if e.startswith("missing")]
    return AnswerParse(answer, conf, reasoning, "; ".join(fatal) if fatal else None)


@dataclass
class CritiqueParse:
    """A critique call's reviews by target (0-indexed): ``step_loc``, ``correction``,
    ``assessment`` (Strong/Acceptable/Flawed or ``""``)."""

    reviews: dict[int, dict[str, str]]
    parse_error: str | None = None


_ASSESSMENTS = {"strong": "Strong", "acceptable": "Acceptable", "flawed": "Flawed"}


def _assessment(value: Any) -> str:
    word = (_text(value) or "").strip(" .!*").lower()
    return next((v for k, v in _ASSESSMENTS.items() if word.startswith(k)), "")


def parse_critique(text: str, targets: Sequence[int]) -> CritiqueParse:
    """Reviews keyed by 0-indexed target (1-indexed in the JSON); a review counts when it says
    anything; one target and one review without a usable ``target``: that target's.

    >>> p = parse_critique('{"reviews": [{"target": 2, "step_loc": "step 2", '
    ...                    '"correction": "7, not 8", "assessment": "flawed"}]}', [1, 3])
    >>> p.reviews[1]["assessment"], p.parse_error
    ('Flawed', 'missing review for agent 4')
    """
    obj, err = extract_json(text)
    reviews: dict[int, dict[str, str]] = {}
    raw = obj.get("reviews") if isinstance(obj, dict) else None
    if isinstance(raw, dict):
        raw = [raw]
    if isinstance(raw, list):
        for item in raw:
            if not isinstance(item, dict):
                continue
            review = {"step_loc": _text(item.get("step_loc")) or "",
                      "correction": _text(item.get("correction")) or "",
                      "assessment": _assessment(item.get("assessment"))}
            if not any(review.values()):
                continue
            tgt = _target_index(item.get("target"))
            if tgt is None and len(targets) == 1 and len(raw) == 1:
                tgt = targets[0]
            if tgt in targets and tgt not in reviews:
                reviews[tgt] = review
    missing = [t for t in targets if t not in reviews]
    problems = [] if obj is not None else [err or "invalid JSON"]
    problems += [f"missing review for agent {t + 1}" for t in missing]
    return CritiqueParse(reviews, "; ".join(problems) if problems else None)


_DIGITS = re.compile(r"\d+")


def _target_index(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)) and float(value).is_integer():
        return int(value) - 1
    if isinstance(value, str):
        m = _DIGITS.search(value)
        return int(m.group()) - 1 if m else None
    return None


def _decision(value: Any) -> str | None:
    word = value.strip().upper() if isinstance(value, str) else ""
    return "ACCEPT" if word.startswith("ACC") else "REJECT" if word.startswith("REJ") else None


@dataclass
class RevisionParse(AnswerParse):
    """A revised answer plus, per critic (0-indexed source), its ACCEPT/REJECT and the reason."""

    reasons: dict[int, str] = field(default_factory=dict)


def parse_revision(text: str, sources: Sequence[int]) -> RevisionParse:
    """Parse a revision: the answer fields and ``critique_response`` keyed by the critics'
    1-based ids (``"3"``, ``"Agent 3"``) of ``{"decision", "reason"}`` or a bare decision; a
    missing decision is left out of ``decisions`` and flagged.

    >>> r = parse_revision('{"answer": "B", "confidence": 4, "reasoning": "", "critique_response":'
    ...                    ' {"2": {"decision": "accept", "reason": "ok"}}}', [1, 3])
    >>> r.decisions, r.reasons, r.answer, r.parse_error
    ({1: 'ACCEPT'}, {1: 'ok'}, 'B', 'missing decision on the critique from agent 4')
    """
    obj, err = extract_json(text)
    base = _answer_from(text, obj, err)
    decisions: dict[int, str] = {}
    reasons: dict[int, str] = {}
    raw = obj.get("critique_response") if isinstance(obj, dict) else None
    items: list[tuple[Any, Any]] = []
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):  # tolerated: [{"source": 3, "decision": ...}, ...]
        items = [(it.get("source", it.get("agent")), it) for it in raw if isinstance(it, dict)]
    for key, value in items:
        src = _target_index(key)
        entry = value if isinstance(value, dict) else {"decision": value}
        word = _decision(entry.get("decision"))
        if src in sources and word and src not in decisions:
            decisions[src] = word
            reasons[src] = _text(entry.get("reason")) or ""
    problems = [base.parse_error] if base.parse_error else []
    problems += [f"missing decision on the critique from agent {s + 1}" for s in sources
                 if s not in decisions]
    return RevisionParse(base.answer, base.confidence, base.reasoning,
                         "; ".join(problems) if problems else None, decisions, reasons)

