"""Parsing: real-looking completions, LaTeX inside strings, and a fuzz of malformed output."""
import json
import random

import pytest

from pear.core.parsing import (DEFAULT_CONFIDENCE, extract_json, parse_answer, parse_confidence,
                          parse_critique, parse_revision)

# (completion text, expected answer, expected confidence, should be flagged)
ANSWER_CASES = [
    # plain and fenced JSON
    ('{"reasoning": "3+4", "answer": "7", "confidence": 5}', "7", 5, False),
    ('```json\n{"reasoning": "r", "answer": "B", "confidence": 4}\n```', "B", 4, False),
    ('Here you go:\n{"reasoning": "r", "answer": "C", "confidence": 3}\nThanks!', "C", 3, False),
    # trailing commas
    ('{"reasoning": "r", "answer": "12", "confidence": 2,}', "12", 2, False),
    # numbers as numbers, confidences as text / out of range
    ('{"reasoning": "r", "answer": 42, "confidence": "4"}', "42", 4, False),
    ('{"reasoning": "r", "answer": 2.5, "confidence": 9}', "2.5", 5, False),
    ('{"reasoning": "r", "answer": "A", "confidence": "high"}', "A", 4, False),
    ('{"reasoning": "r", "answer": "A", "confidence": 0}', "A", 1, False),
    # LaTeX backslashes that are not valid JSON escapes, and ones that look like escapes
    ('{"reasoning": "use \\sqrt{2}", "answer": "\\frac{\\sqrt{2}}{2}", "confidence": 4}',
     "\\frac{\\sqrt{2}}{2}", 4, False),
    ('{"reasoning": "x", "answer": "\\boxed{\\theta + \\pi}", "confidence": 3}',
     "\\boxed{\\theta + \\pi}", 3, False),
    ('{"reasoning": "x", "answer": "\\left( 3, \\frac{\\pi}{2} \\right)", "confidence": 5}',
     "\\left( 3, \\frac{\\pi}{2} \\right)", 5, False),
    ('{"reasoning": "x", "answer": "10\\text{ cm}", "confidence": 3}', "10\\text{ cm}", 3, False),
    # missing parts are flagged with documented fallbacks
    ('{"reasoning": "r", "confidence": 4}', "", 4, True),
    ('{"reasoning": "r", "answer": "7"}', "7", DEFAULT_CONFIDENCE, True),
    ('{"reasoning": "a long chain of thought that was cut', "", DEFAULT_CONFIDENCE, True),
    ("", "", DEFAULT_CONFIDENCE, True),
    ("I think the answer is 7.", "", DEFAULT_CONFIDENCE, True),
    # a broken object whose fields are still recoverable
    ('{"reasoning": "r" "answer": "9", "confidence": 4', "9", 4, False),
]


@pytest.mark.parametrize("text, answer, conf, flagged", ANSWER_CASES)
def test_parse_answer_table(text, answer, conf, flagged):
    p = parse_answer(text)
    assert (p.answer, p.confidence) == (answer, conf)
    assert (p.parse_error is not None) == flagged


def test_real_newlines_inside_strings_and_real_escapes_survive():
    obj, err = extract_json('{"reasoning": "line1\nline2\\nline3\\tx", "answer": "5"}')
    assert err is None and obj["reasoning"] == "line1\nline2\nline3\tx"


def test_critique_reviews_by_target_and_missing_flagged():
    text = json.dumps({"reviews": [
        {"target": 3, "step_loc": "step 2", "correction": "the sign is -", "assessment": "Flawed"},
        {"target": "Participant 5", "step_loc": "No error identified", "correction": "",
         "assessment": "strong."},
        {"target": 9, "step_loc": "not a target", "correction": "", "assessment": "Flawed"}]})
    p = parse_critique(text, [2, 4, 0])
    assert p.reviews == {
        2: {"step_loc": "step 2", "correction": "the sign is -", "assessment": "Flawed"},
        4: {"step_loc": "No error identified", "correction": "", "assessment": "Strong"}}
    assert p.parse_error == "missing review for agent 1"
    empty = parse_critique("garbage", [1])
    assert empty.reviews == {} and "missing review for agent 2" in empty.parse_error


def test_critique_with_unknown_assessment_still_counts_and_empty_review_does_not():
    text = json.dumps({"reviews": [
        {"target": 1, "step_loc": "", "correction": "", "assessment": ""},
        {"target": 2, "step_loc": "step 3", "correction": "x = 4", "assessment": "Meh"}]})
    p = parse_critique(text, [0, 1])
    assert p.reviews == {1: {"step_loc": "step 3", "correction": "x = 4", "assessment": ""}}
    assert p.parse_error == "missing review for agent 1"


def test_single_target_review_without_a_target_number_is_that_targets():
    p = parse_critique('{"reviews": [{"step_loc": "step 1", "correction": "c", '
                       '"assessment": "Acceptable"}]}', [3])
    assert p.reviews[3]["assessment"] == "Acceptable" and p.parse_error is None


def test_update_decisions_by_source_never_default_to_reject():
    p = parse_revision('{"answer": "B", "confidence": 3, "reasoning": "r"}', [0, 2])
    assert p.decisions == {} and p.answer == "B"
    assert "missing decision on the critique from agent 1" in p.parse_error
    q = parse_revision('{"answer": "C", "confidence": 5, "reasoning": "", "critique_response": '
                       '{"1": {"decision": "accept", "reason": "right"}, '
                       '"Agent 3": "Reject", "4": {"decision": "REJECT"}}}', [0, 2])
    assert q.decisions == {0: "ACCEPT", 2: "REJECT"} and q.parse_error is None
    assert q.reasons == {0: "right", 2: ""}
    r = parse_revision('{"answer": "C", "confidence": 5, "reasoning": "", "critique_response": '
                       '{"1": {"decision": "maybe"}}}', [0])
    assert r.decisions == {} and "agent 1" in r.parse_error


def test_update_with_latex_answer_first():
    r = parse_revision('{"answer": "\\frac{1}{2}", "confidence": 4, "reasoning": "\\sqrt{x}", '
                       '"critique_response": {"2": {"decision": "ACCEPT", "reason": "ok"}}}', [1])
    assert (r.answer, r.decisions, r.parse_error) == ("\\frac{1}{2}", {1: "ACCEPT"}, None)


@pytest.mark.parametrize("value, expected", [
    (3, 3), (3.4, 3), ("2", 2), ("5/5", 5), ("4/5", 4), ("8/10", 4), ("100%", 5),
    ("very low", 1), ("LOW", 2), (True, None), ([4], None), ("unsure", None), (-3, 1),
])
def test_confidence_forms(value, expected):
    assert parse_confidence(value) == expected


def _mutations(rng: random.Random, good: str) -> str:
    kind = rng.randrange(9)
    if kind == 0:
        return good[: rng.randrange(len(good))]                       # truncation
    if kind == 1:
        return "".join(rng.choice('{}[]":,\\abc 123\n') for _ in range(rng.randrange(80)))
    if kind == 2:
        return good.replace('"', "", rng.randrange(1, 6))              # dropped quotes
    if kind == 3:
        return json.dumps({"reasoning": rng.random(), "answer": rng.choice(
            [None, [], {}, True, 3, "x", ""]), "confidence": rng.choice(
            [None, "x", [], -7, 99, "3", 2.7, {}])})                   # wrong types
    if kind == 4:
        return "```json\n" + good + "\n```" + "".join(rng.choice("}]{") for _ in range(3))
    if kind == 5:
        return good.replace("7", "\\frac{\\sqrt{" + "{" * rng.randrange(30) + "x}")
    if kind == 6:
        pos = rng.randrange(len(good))
        return good[:pos] + rng.choice(["\\", "\\u12", "\x00", "\ufffd", "\\q"]) + good[pos:]
    if kind == 7:
        return "{" * rng.randrange(1, 200) + good
    return rng.choice(["", " ", "null", "[]", "42", '"answer"', "{}", "{{}}"])


def test_fuzz_malformed_completions_never_raise_and_failures_are_flagged():
    rng = random.Random(1234)
    good = ('{"answer": "7", "confidence": 4, "reasoning": "it is 7", "critique_response": '
            '{"2": {"decision": "ACCEPT", "reason": "ok"}, "3": {"decision": "REJECT", '
            '"reason": "no"}}}')
    crit = ('{"reviews": [{"target": 2, "step_loc": "step 1", "correction": "7", '
            '"assessment": "Flawed"}]}')
    for _ in range(10_000):
        text = _mutations(rng, good)
        a = parse_answer(text)
        assert isinstance(a.answer, str) and 1 <= a.confidence <= 5
        if not a.answer:
            assert a.parse_error and "missing answer" in a.parse_error
        r = parse_revision(text, [1, 2])
        assert set(r.decisions) <= {1, 2} and set(r.reasons) == set(r.decisions)
        if len(r.decisions) < 2:
            assert r.parse_error is not None  # a missing decision is always flagged
        c = parse_critique(_mutations(rng, crit), [1])
        assert set(c.reviews) <= {1}
        if not c.reviews:
            assert c.parse_error is not None
