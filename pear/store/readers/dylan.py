"""DyLAN's debate records (Liu et al., "Dynamic LLM-Agent Network", arXiv 2310.02170;
repository SALT-NLP/DyLAN, ``exp/MATH/CoT/*.json``): Du et al.'s format with two more fields
and a varying shape: a JSON object mapping the full prompt (few-shot examples, then
``Problem: <the problem>\\nAnswer:``) to ``[agent_contexts, gold, level, subject]``.  The
number of agents (2-4) and rounds (1-3) varies by debate (that baseline stops when the agents
agree); within a debate every agent answers in every round.  From round 1 each agent's message
quotes the other agents' latest answers (:func:`quoted_solutions`), kept as
:attr:`~pear.store.readers.base.RawDebate.heard`.

>>> problem_text("Problem: 1+1?\\nAnswer: 2\\n\\nProblem: What is $2+2$?\\nAnswer:")
'What is $2+2$?'
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from pear.store.readers.base import BadEntry, RawDebate, Reader, debate, keyed_entries
from pear.store.readers.protocols import Drop, Protocol, Quorum

__all__ = ["DylanReader", "problem_text", "quoted_solutions", "PROTOCOL"]

_TAIL = re.compile(r"\s*Answer:\s*$")
_HEAD = "These are the solutions to the problem from other agents: "
_OPEN = "One agent solution: ```"
_SEP = "```\n\n" + _OPEN


def problem_text(prompt: str) -> str:
    """The problem of a DyLAN prompt: the text after its last ``Problem:``, without the
    trailing ``Answer:`` (the whole prompt when it has no ``Problem:``)."""
    i = prompt.rfind("Problem:")
    text = prompt[i + len("Problem:"):] if i >= 0 else prompt
    return _TAIL.sub("", text).strip()


def quoted_solutions(message: str) -> tuple[str, ...]:
    """The other agents' answers a DyLAN message of round 1.. quotes, in prompt order:
    DyLAN writes ``These are the solutions to the problem from other agents: `` then, per
    answer, ``\\n\\nOne agent solution: ```<answer>``` `` and then its instruction
    (``\\n\\nUsing the reasoning from other agents ...``); ``()`` for a message not so
    written (round 0's problem).  An answer that itself holds code fences is read whole:
    answers are split only where one closing fence meets the next header.

    >>> quoted_solutions("These are the solutions to the problem from other agents: \\n\\n"
    ...                  "One agent solution: ```x = 2```\\n\\n"
    ...                  "One agent solution: ```The answer is 3.```\\n\\nUsing the reasoning")
    ('x = 2', 'The answer is 3.')
    """
    i = message.find(_HEAD)
    if i < 0:
        return ()
    body = message[i + len(_HEAD):].lstrip()
    end = body.rfind("```")
    if not body.startswith(_OPEN) or end < len(_OPEN):
        return ()
    return tuple(body[len(_OPEN):end].split(_SEP))


class DylanReader(Reader):
    """``{prompt: [agent_contexts, gold, level, subject]}``, shapes varying by debate."""

    name = "dylan"
    same_shape = False

    def entries(self, path: Path, data: Any) -> Iterator[RawDebate | BadEntry]:
        return keyed_entries(
            path, data, source="DyLAN's", key="prompt",
            fields=("agent_contexts", "gold", "level", "subject"), name=problem_text,
            make=lambda q, v: debate(path, q, q, v[0], v[1], {"level": v[2], "subject": v[3]},
                                     quoted=quoted_solutions))

    def protocol(self, first: RawDebate) -> Protocol:
        """DyLAN's CoT baseline (:data:`PROTOCOL`), the same for every file."""
        return PROTOCOL


PROTOCOL = Protocol(
    name="dylan-cot", agents=4, rounds=3, order="sequential",
    stop=Quorum(share=2 / 3, after=3), drop=Drop(before_round=2, keep=2, by="llm_ranker"),
    source=(
        "SALT-NLP/DyLAN code/MATH/llmlp_gen_math_listwise_cot.py (agents = 4, rounds = 3; "
        "check_reach_consensus after each agent i >= floor(2/3 * 4): most frequent answer "
        "held by more than floor(2/3 * answered); the record keeps the agents answered so "
        "far; construct_ranking_message + parse_ranks keep the best 2 before round 2) and the "
        "records exp/MATH/CoT/*_4_3.json: shapes 4x1, 3x1, 4x2, 3x2, 2x2, 2x3; from round 1 "
        "each agent's message quotes the 3 other agents' latest answers in full (agents "
        "before it in the round with this round's answer), without confidences or critiques"))
"""DyLAN's CoT baseline as its code and its records show it (docs/records.md)."""
