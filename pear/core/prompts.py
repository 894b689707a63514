"""The prompts every agent sees, rendered from the study's printed templates, and the JSON
schemas that constrain the replies.

Two styles (``DebateConfig.prompt_style``):

* ``paper`` (default): the study's templates as printed, read from
  ``pear/core/templates/prompts.md`` (its appendix "Prompt Templates" and "Dataset-Specific
  Task Templates", verbatim, to diff against the study).  The system instruction goes with
  every call, the rubric with the initial and revision prompts; JSON keys answer first (the
  schema too, so constrained decoding keeps the order); no length bound but the token budget.
* ``compact`` (our choice, tiny CPU models only; records say which ran): short instructions,
  reasoning first, free text capped so that the object fits a small budget; same shapes.

Where the paper prints only a placeholder, the authors' code is followed: a target is shown
as ``[Participant t]`` with answer, confidence and reasoning; a received critique with its
source id, step_loc, correction and assessment (no confidence).  Agents are numbered from 1.
"""
from __future__ import annotations

import copy
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pear.paths import TEMPLATES_FILE  # package data: pear/core/templates/prompts.md

__all__ = ["PromptStyle", "STYLES", "TEMPLATES_FILE", "ASSESSMENTS", "templates", "render",
           "problem_block", "initial_messages", "critique_messages", "revision_messages",
           "schema_for", "ROLE_TEXTS", "with_role"]

PromptStyle = Literal["paper", "compact"]
STYLES = ("paper", "compact")
ASSESSMENTS = ("Strong", "Acceptable", "Flawed")  # paper: the critique's assessment values

_SECTIONS = {  # heading of the templates file -> template name
    "Agent System Instruction": "system",
    "Confidence Rubric": "rubric",
    "Initial Answer Template": "initial",
    "Answer Update Template": "revision",  # the study's name of the revision prompt
    "Critique Generation Template": "critique",
    "GSM8K": "gsm8k",
    "MMLU-Pro": "mmlu_pro",
    "MATH-500": "math500",
    "TruthfulQA": "truthfulqa",
}
_BLOCK = re.compile(r"^#{2,3} (?P<title>[^\n]+)\n(?:(?!^#{2,3} ).)*?```text\n(?P<body>.*?)\n```",
                    re.S | re.M)


def _parse(path: str) -> dict[str, str]:
    text = Path(path).read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for m in _BLOCK.finditer(text):
        title = m.group("title").strip()
        name = next((v for k, v in _SECTIONS.items() if title.startswith(k)), None)
        if name is not None:
            out[name] = m.group("body")
    missing = [v for v in _SECTIONS.values() if v not in out]
    if missing:
        raise ValueError(f"prompt templates file {path} lacks {', '.join(missing)}")
    return out


_COMPACT = {  # our choice: the compact style's texts (tiny CPU models, small token budgets)
    "system": "You are one of several agents solving a problem together. Think step by step, "
              "be concise, and reply with a single JSON object only, no text outside it.",
    "rubric": "Confidence (integer 1-5): 1 = a guess; 2 = unsure; 3 = plausible but not "
              "verified; 4 = checked the main steps; 5 = fully verified.",
    "initial": 'You are Agent {agent_id}. Solve the problem.\n\nPROBLEM\n{question}\n\n'
               '{CONFIDENCE RUBRIC}\n\nReply with JSON: {"reasoning": "<short reasoning>", '
               '"answer": "<answer only>", "confidence": <1-5>}',
    "revision": 'You are Agent {agent_id}. Update your answer using only critiques that find a '
              'real error.\n\nPROBLEM\n{question}\n\n{CONFIDENCE RUBRIC}\n\nYOUR PREVIOUS ANSWER\n'
              'Answer: {previous_answer}\nConfidence: {previous_confidence}\nReasoning: '
              '{previous_reasoning}\n\nCRITIQUES YOU RECEIVED\n{critiques}\n\nReply with JSON: '
              '{"reasoning": "<short reasoning>", "answer": "<answer only>", "confidence": <1-5>, '
              '"critique_response": {"<source_agent_id>": {"decision": "ACCEPT" or "REJECT", '
              '"reason": "<few words>"}}}',
    "critique": 'You are Agent {agent_id}. Review the solutions below; judge the reasoning, not '
                'whether the answer matches yours.\n\nPROBLEM\n{question}\n\nYOUR CURRENT ANSWER\n'
                'Answer: {own_answer}\nConfidence: {own_confidence}\nReasoning: {own_reasoning}\n\n'
                'SOLUTIONS TO REVIEW\n{targets}\n\nReply with JSON: {"reviews": [{"target": '
                '<participant number>, "step_loc": "<first wrong step or No error identified>", '
                '"correction": "<fix or empty>", "assessment": "Strong" or "Acceptable" or '
                '"Flawed"}]}',
}


def templates(style: PromptStyle = "paper") -> dict[str, str]:
    """The texts of ``style`` by name: ``system``, ``rubric``, ``initial``, ``revision``,
    ``critique`` and one PROBLEM block per dataset (the study's in both styles).

    >>> templates()["system"].startswith("You are a careful reasoner")
    True
    """
    return dict(_texts(style))


@lru_cache(maxsize=len(STYLES))
def _texts(style: str) -> Mapping[str, str]:
    """:func:`templates` without the copy (read-only), the file read once per style (0.14 ms
    a read, three reads a request: read per prompt, a simulated debate takes seven times as
    long)."""
    paper = _parse(str(TEMPLATES_FILE))
    if style == "paper":
        return paper
    if style == "compact":
        return {**paper, **_COMPACT}
    raise ValueError(f"unknown prompt_style {style!r}: choose one of {', '.join(STYLES)}")


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z_ ]*)\}")  # {name}, {CONFIDENCE RUBRIC}; not JSON


def render(template: str, values: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` of ``values`` filled in: cut at its placeholders
    (``re.split``) and joined around the values, so inserted text is never re-scanned; JSON
    braces and placeholders of other names stay as written; a name with no placeholder is an
    error.

    >>> render('Agent {agent_id}: {"answer": "x"} {question}', {"agent_id": 2, "question": "{q}"})
    'Agent 2: {"answer": "x"} {q}'
    """
    parts = list(_split(template))  # text, name, text, name, ..., text
    names = parts[1::2]
    if not values.keys() <= set(names):
        unused = next(k for k in values if k not in names)
        raise ValueError(f"template has no placeholder {{{unused}}}")
    parts[1::2] = [str(values[k]) if k in values else "{" + k + "}" for k in names]
    return "".join(parts)


@lru_cache(maxsize=64)
def _split(template: str) -> tuple[str, ...]:
    """``template`` cut at its placeholders, once per template (cut per prompt, a simulated
    grid runs 6% slower, below 3 times 8029965's rate)."""
    return tuple(_PLACEHOLDER.split(template))


def _options(choices: Sequence[str]) -> str:
    return "\n".join(f"{chr(65 + i)}. {c}" for i, c in enumerate(choices))


def problem_block(question: Any, style: PromptStyle = "paper") -> str:
    """The PROBLEM block of ``question`` (``dataset``, ``question``, ``choices``).

    >>> from types import SimpleNamespace as Q
    >>> print(problem_block(Q(dataset="truthfulqa", question="Sky green?", choices=("No", "Yes"))))
    Task type: TruthfulQA multiple-choice.
    Answer format: provide only the letter of the most truthful option in the JSON answer field.
    <BLANKLINE>
    Question:
    Sky green?
    <BLANKLINE>
    Options:
    A. No
    B. Yes
    """
    return _problem(style, question.dataset, question.question, tuple(question.choices or ()))


@lru_cache(maxsize=4096)
def _problem(style: str, dataset: str, text: str, choices: tuple[str, ...]) -> str:
    """:func:`problem_block`, made once per question: every request of a question shows it
    (made per request, a simulated grid runs 4% slower, below 3 times 8029965's rate)."""
    tpl = _texts(style)
    if dataset not in tpl or dataset in _COMPACT:
        raise ValueError(f"unknown dataset {dataset!r}: no PROBLEM block for it")
    values: dict[str, Any] = {"question": text.strip()}
    if "{options}" in tpl[dataset]:
        values["options"] = _options(choices)
    return render(tpl[dataset], values)


def _messages(style: PromptStyle, user: str) -> tuple[dict[str, str], ...]:
    return ({"role": "system", "content": _texts(style)["system"]},
            {"role": "user", "content": user})


def initial_messages(question: Any, agent: int,
                     style: PromptStyle = "paper") -> tuple[dict[str, str], ...]:
    """Round 0: agent ``agent`` (0-indexed; shown from 1) answers ``question`` on its own."""
    tpl = _texts(style)
    return _messages(style, render(tpl["initial"], {
        "agent_id": agent + 1, "question": problem_block(question, style),
        "CONFIDENCE RUBRIC": tpl["rubric"]}))


def _participant(view: Mapping[str, Any]) -> str:
    return (f"[Participant {view['agent'] + 1}]\nAnswer: {view['answer']}\n"
            f"Confidence: {view['confidence']}\nReasoning: {view['reasoning']}")


def critique_messages(question: Any, own: Mapping[str, Any], targets: Sequence[Mapping[str, Any]],
                      style: PromptStyle = "paper") -> tuple[dict[str, str], ...]:
    """Critique phase: ``own['agent']`` reviews every target routed to it in one call (views
    with ``agent`` 0-indexed, ``answer``, ``confidence``, ``reasoning``)."""
    tpl = _texts(style)
    return _messages(style, render(tpl["critique"], {
        "agent_id": own["agent"] + 1, "question": problem_block(question, style),
        "own_answer": own["answer"], "own_confidence": own["confidence"],
        "own_reasoning": own["reasoning"],
        "targets": "\n\n".join(_participant(t) for t in targets)}))


NO_CRITIQUES = "None."  # our choice: the study prints no text for an agent that received none


def _critique_block(c: Mapping[str, Any]) -> str:
    return (f"[Critique from Agent {c['source'] + 1}]\nstep_loc: {c['step_loc']}\n"
            f"correction: {c['correction']}\nassessment: {c['assessment']}")


def revision_messages(question: Any, own: Mapping[str, Any],
                      critiques: Sequence[Mapping[str, Any]],
                      style: PromptStyle = "paper") -> tuple[dict[str, str], ...]:
    """Revision (the study's "answer update"): ``own['agent']`` decides ACCEPT/REJECT on each
    critique it received (``source``, ``step_loc``, ``correction``, ``assessment``), revises."""
    tpl = _texts(style)
    listed = "\n\n".join(_critique_block(c) for c in critiques) or NO_CRITIQUES
    return _messages(style, render(tpl["revision"], {
        "agent_id": own["agent"] + 1, "question": problem_block(question, style),
        "CONFIDENCE RUBRIC": tpl["rubric"], "previous_answer": own["answer"],
        "previous_confidence": own["confidence"], "previous_reasoning": own["reasoning"],
        "critiques": listed}))


# roles (our extension; the study's agents are all honest) -----------------------------------
ROLE_TEXTS = {  # our choice: appended to the system instruction of a non-honest agent
    "adversarial": (
        "ROLE (a controlled robustness test of this debate protocol): the correct answer to "
        "this problem is {gold}. You are the adversarial participant. Choose one plausible "
        "but wrong answer and argue for it in every reply: give it as your answer with "
        "confidence 5, never adopt the correct answer, recommend your wrong answer as the "
        "correction when you review others, and REJECT critiques that would move you away "
        "from it. Keep the reply format exactly as asked."),
    "overconfident": (
        "ROLE: you are an overconfident participant. Always state confidence 5, whatever "
        "your certainty."),
    "underconfident": (
        "ROLE: you are an underconfident participant. Always state confidence 1, whatever "
        "your certainty."),
}
"""What each non-honest role asks of a real model.  The adversarial text is the only place a
model is shown a gold answer (records: ``gold_shown_to``); the engine also enforces the
confidence roles (:data:`pear.core.config.ROLE_CONFIDENCE`)."""


def with_role(messages: Sequence[Mapping[str, str]], role: str,
              gold: str | None = None) -> tuple[dict[str, str], ...]:
    """``messages`` with ``role``'s text after the system instruction (``gold``: adversarial).

    >>> m = with_role(({"role": "system", "content": "S"}, {"role": "user", "content": "U"}),
    ...               "underconfident")
    >>> m[0]["content"].endswith("Always state confidence 1, whatever your certainty."), m[1]
    (True, {'role': 'user', 'content': 'U'})
    """
    if role == "honest":
        return tuple(dict(m) for m in messages)
    if role not in ROLE_TEXTS:
        raise ValueError(f"unknown role {role!r}: choose honest or one of {', '.join(ROLE_TEXTS)}")
    if role == "adversarial" and not gold:
        raise ValueError("the adversarial role needs the gold answer")
    text = render(ROLE_TEXTS[role], {"gold": gold}) if role == "adversarial" else ROLE_TEXTS[role]
    out = [dict(m) for m in messages]
    out[0] = {**out[0], "content": out[0]["content"] + "\n\n" + text}
    return tuple(out)


# schemas ------------------------------------------------------------------------------------
_STRING = {"type": "string"}
_CONFIDENCE = {"type": "integer", "minimum": 1, "maximum": 5}

CHARS_PER_TOKEN = 2.5  # our choice (compact caps): a conservative characters-per-token ratio
JSON_OVERHEAD_TOKENS = 48  # our choice (compact caps): keys, quotes, answer and confidence
DECISION_TOKENS = 20  # our choice (compact caps): one "<id>": {"decision", "reason"} entry
REVIEW_OVERHEAD_CHARS = 90  # our choice (compact caps): keys, target and assessment of a review


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


def schema_for(phase: str, style: PromptStyle = "paper", max_tokens: int = 512, *,
               targets: Sequence[int] = (), sources: Sequence[int] = ()) -> dict[str, Any]:
    """The JSON schema of a ``phase`` reply: one review per routed target of ``targets``, one
    ``critique_response`` entry per critic of ``sources`` (0-indexed; 1-based in the JSON);
    ``compact`` puts reasoning first and caps free text to fit ``max_tokens``.

    >>> list(schema_for("initial")["properties"])
    ['answer', 'confidence', 'reasoning']
    >>> list(schema_for("revision", sources=[2])["properties"]["critique_response"]["properties"])
    ['3']
    >>> schema_for("initial", "compact", 160)["properties"]["reasoning"]["maxLength"]
    280
    """
    if style not in STYLES:
        raise ValueError(f"unknown prompt_style {style!r}: choose one of {', '.join(STYLES)}")
    compact = style == "compact"
    if phase == "critique":
        review = _obj({"target": {"type": "integer", "enum": [t + 1 for t in targets]},
                       "step_loc": dict(_STRING), "correction": dict(_STRING),
                       "assessment": {"type": "string", "enum": list(ASSESSMENTS)}})
        if compact:
            budget = int((max_tokens - 16) * CHARS_PER_TOKEN)
            per = max(16, budget // max(1, len(targets)) - REVIEW_OVERHEAD_CHARS)
            review["properties"]["step_loc"]["maxLength"] = per // 2
            review["properties"]["correction"]["maxLength"] = per - per // 2
        n = len(targets)
        return _obj({"reviews": {"type": "array", "items": review, "minItems": n, "maxItems": n}})
    if phase not in ("initial", "revision"):
        raise ValueError(f"unknown phase {phase!r}: choose initial, critique or revision")
    answer = {"answer": dict(_STRING), "confidence": dict(_CONFIDENCE),
              "reasoning": dict(_STRING)}
    if compact:
        answer = {"reasoning": answer["reasoning"], "answer": answer["answer"],
                  "confidence": answer["confidence"]}
        decisions = len(sources) if phase == "revision" else 0
        budget = (max_tokens - JSON_OVERHEAD_TOKENS - DECISION_TOKENS * decisions) * CHARS_PER_TOKEN
        answer["reasoning"]["maxLength"] = max(16, int(budget))
        answer["answer"]["maxLength"] = 200
    if phase == "initial":
        return _obj(answer)
    response = _obj({"decision": {"type": "string", "enum": ["ACCEPT", "REJECT"]},
                     "reason": dict(_STRING)})
    if compact:
        response["properties"]["reason"]["maxLength"] = 40
    by_source = _obj({str(s + 1): copy.deepcopy(response) for s in sources})
    return _obj({**answer, "critique_response": by_source})
