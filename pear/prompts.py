"""Prompt templates for the three phases, the per-dataset task blocks, and the JSON schemas.

The templates follow the paper's structure (system instruction with a confidence rubric;
initial answer; critique generation returning a ``reviews`` list; answer update with an
ACCEPT/REJECT decision per critique).  In every JSON object the model is asked for,
``reasoning`` comes before ``answer`` (small models answer better when they reason first;
our choice).  The per-dataset task blocks live here and nowhere else.
"""
from __future__ import annotations

from typing import Any, Sequence

__all__ = [
    "schema_for",
    "SYSTEM_PROMPT",
    "CONFIDENCE_RUBRIC",
    "TASK_INSTRUCTIONS",
    "task_block",
    "option_letters",
    "initial_messages",
    "critique_messages",
    "revision_messages",
    "SCHEMAS",
]

CONFIDENCE_RUBRIC = (
    "Confidence scale (integer 1-5):\n"
    "1 = a guess; 2 = unsure, substantial doubt; 3 = plausible but not verified; "
    "4 = confident, checked the main steps; 5 = certain, fully verified."
)

SYSTEM_PROMPT = (
    "You are one of several expert agents solving a problem together. Think step by step, "
    "be concise, and reply with a single JSON object only, no text outside it.\n"
    + CONFIDENCE_RUBRIC
)

TASK_INSTRUCTIONS = {
    "gsm8k": "Solve the math word problem. The answer field must be the final numeric answer "
             "only (digits, no units, no words).",
    "math500": "Solve the math problem. The answer field must be the final simplified expression "
               "only, in LaTeX without $ signs or \\boxed{}.",
    "mmlu_pro": "Choose the best option. The answer field must be the letter of the best option "
                "only.",
    "truthfulqa": "Choose the most truthful option. The answer field must be the letter of the "
                  "most truthful option only.",
}
"""The per-dataset instruction (the paper's task templates)."""


def option_letters(n: int) -> str:
    """The letters of ``n`` options: ``option_letters(4) == 'ABCD'``."""
    if not 1 <= n <= 26:
        raise ValueError(f"invalid number of options {n}: use 1..26")
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]


def task_block(dataset: str, question: str, choices: Sequence[str] | None = None) -> str:
    """The task text put into every prompt: instruction, question, and an ``Options:`` block.

    >>> print(task_block("truthfulqa", "Is the sky green?", ["No.", "Yes."]))
    Choose the most truthful option. The answer field must be the letter of the most truthful option only.
    <BLANKLINE>
    Question: Is the sky green?
    <BLANKLINE>
    Options:
    A. No.
    B. Yes.
    """
    if dataset not in TASK_INSTRUCTIONS:
        raise ValueError(f"unknown dataset {dataset!r}: choose one of {', '.join(TASK_INSTRUCTIONS)}")
    text = f"{TASK_INSTRUCTIONS[dataset]}\n\nQuestion: {question.strip()}"
    if choices:
        opts = "\n".join(f"{l}. {c}" for l, c in zip(option_letters(len(choices)), choices))
        text += f"\n\nOptions:\n{opts}"
    return text


_ANSWER_FIELDS = (
    '"reasoning": "<your step-by-step reasoning>", "answer": "<final answer>", '
    '"confidence": <integer 1-5>'
)


def initial_messages(task: str) -> tuple[dict[str, str], ...]:
    """Round 0: answer the question independently."""
    user = (f"{task}\n\nReply with JSON: {{{_ANSWER_FIELDS}}}")
    return ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user})


def _own(answer: str, confidence: int, reasoning: str) -> str:
    return (f"Your current answer: {answer} (confidence {confidence}/5)\n"
            f"Your reasoning: {_clip(reasoning)}")


def _clip(text: str, limit: int = 1200) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def critique_messages(task: str, own: dict[str, Any],
                      targets: Sequence[dict[str, Any]]) -> tuple[dict[str, str], ...]:
    """Critique phase: one call per source covering all of its targets.

    ``own`` and each target are dicts with ``answer``, ``confidence``, ``reasoning``;
    targets also carry ``agent`` (0-indexed; shown 1-indexed as "Agent 3").
    """
    peers = "\n\n".join(
        f"Agent {t['agent'] + 1}: answer {t['answer']} (confidence {t['confidence']}/5)\n"
        f"Reasoning: {_clip(t['reasoning'])}" for t in targets)
    ids = ", ".join(str(t["agent"] + 1) for t in targets)
    user = (
        f"{task}\n\n{_own(own['answer'], own['confidence'], own['reasoning'])}\n\n"
        f"Review the following agents' solutions. For each, point out the specific error, or "
        f"confirm it is correct, and say which answer you recommend.\n\n{peers}\n\n"
        f"Reply with JSON: {{\"reviews\": [{{\"target\": <agent number, one of {ids}>, "
        f"\"critique\": \"<concise critique>\", \"recommended_answer\": \"<answer>\"}}, ...]}} "
        f"with exactly one review per agent listed.")
    return ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user})


def revision_messages(task: str, own: dict[str, Any],
                      critiques: Sequence[dict[str, Any]]) -> tuple[dict[str, str], ...]:
    """Revision phase: decide ACCEPT/REJECT per critique received, then give an updated answer.

    Each critique is a dict with ``id`` (1-based within this prompt), ``source`` (0-indexed),
    ``critique``, ``recommended_answer`` and ``source_confidence``.
    """
    if critiques:
        listed = "\n\n".join(
            f"Critique {c['id']} from Agent {c['source'] + 1} (confidence "
            f"{c['source_confidence']}/5, recommends {c['recommended_answer']}):\n"
            f"{_clip(c['critique'], 800)}" for c in critiques)
        body = (f"Critiques you received:\n\n{listed}\n\nFor every critique decide ACCEPT "
                f"(it is right and changes your view) or REJECT (it is wrong), then give your "
                f"updated answer.")
        decisions = ('"decisions": [{"critique": <critique number>, "decision": '
                     '"ACCEPT" or "REJECT"}, ...], ')
    else:
        body = "You received no critiques this round. Re-check your solution and give your answer."
        decisions = ""
    user = (f"{task}\n\n{_own(own['answer'], own['confidence'], own['reasoning'])}\n\n{body}\n\n"
            f"Reply with JSON: {{{decisions}{_ANSWER_FIELDS}}}")
    return ({"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user})


_ANSWER_PROPS = {
    "reasoning": {"type": "string", "maxLength": 1500},
    "answer": {"type": "string", "maxLength": 200},
    "confidence": {"type": "integer", "minimum": 1, "maximum": 5},
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "initial": {
        "type": "object",
        "properties": dict(_ANSWER_PROPS),
        "required": ["reasoning", "answer", "confidence"],
        "additionalProperties": False,
    },
    "critique": {
        "type": "object",
        "properties": {
            "reviews": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "target": {"type": "integer", "minimum": 1},
                        "critique": {"type": "string", "maxLength": 1000},
                        "recommended_answer": {"type": "string", "maxLength": 200},
                    },
                    "required": ["target", "critique", "recommended_answer"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["reviews"],
        "additionalProperties": False,
    },
    "revision": {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "critique": {"type": "integer", "minimum": 1},
                        "decision": {"type": "string", "enum": ["ACCEPT", "REJECT"]},
                    },
                    "required": ["critique", "decision"],
                    "additionalProperties": False,
                },
            },
            **_ANSWER_PROPS,
        },
        "required": ["decisions", "reasoning", "answer", "confidence"],
        "additionalProperties": False,
    },
}
"""JSON schema per phase (``initial``, ``critique``, ``revision``); the engine drops
``decisions`` from the revision schema when an agent received no critique."""


CHARS_PER_TOKEN = 2.5  # our choice: a conservative characters-per-token ratio (JSON, LaTeX)
JSON_OVERHEAD_TOKENS = 48  # our choice: keys, quotes, answer and confidence of the object
DECISION_TOKENS = 14  # our choice: one {"critique": i, "decision": "ACCEPT"} entry
REVIEW_OVERHEAD_CHARS = 70  # our choice: keys, target and recommended answer of one review


def schema_for(phase: str, max_tokens: int, n_items: int = 1,
               targets: Sequence[int] | None = None) -> dict[str, Any]:
    """The phase's schema with free-text lengths capped so that a complete object fits in
    ``max_tokens`` (a truncated object would be a parse failure).  ``n_items`` is the number
    of reviews a critique holds or of decisions a revision owes (they share the budget);
    ``targets`` (0-indexed agents) restricts a review's ``target`` to the agents routed to.

    >>> schema_for("initial", 160)["properties"]["reasoning"]["maxLength"]
    280
    >>> schema_for("critique", 128, 2, targets=[1, 4])["properties"]["reviews"]["items"][
    ...     "properties"]["target"]
    {'type': 'integer', 'enum': [2, 5]}
    """
    import copy
    if phase not in SCHEMAS:
        raise ValueError(f"unknown phase {phase!r}: choose one of {', '.join(SCHEMAS)}")
    schema = copy.deepcopy(SCHEMAS[phase])
    props = schema["properties"]
    if phase == "critique":
        budget = int((max_tokens - 16) * CHARS_PER_TOKEN)
        item = props["reviews"]["items"]["properties"]
        per = max(16, budget // max(1, n_items) - REVIEW_OVERHEAD_CHARS)
        item["critique"]["maxLength"] = min(item["critique"]["maxLength"], per)
        item["recommended_answer"]["maxLength"] = min(item["recommended_answer"]["maxLength"], 60)
        props["reviews"]["minItems"] = props["reviews"]["maxItems"] = n_items
        if targets is not None:
            item["target"] = {"type": "integer", "enum": [t + 1 for t in targets]}
        return schema
    decisions = n_items if phase == "revision" else 0
    budget = int((max_tokens - JSON_OVERHEAD_TOKENS - DECISION_TOKENS * decisions)
                 * CHARS_PER_TOKEN)
    props["reasoning"]["maxLength"] = min(props["reasoning"]["maxLength"], max(16, budget))
    if phase == "revision":
        props["decisions"]["minItems"] = props["decisions"]["maxItems"] = n_items
        props["decisions"]["items"]["properties"]["critique"] = {
            "type": "integer", "minimum": 1, "maximum": max(1, n_items)}
    return schema
