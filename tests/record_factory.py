"""Hand-made debate records in the typed schema of :mod:`pear.store.records`
(:class:`~pear.store.records.DebateRecord` and its parts), for tests of the view, metrics, stats
and report that need known answers.

``make_record`` takes the answers of every agent in every round (round 0 = initial answers)
and, per debate round, the routed critiques as ``(source, target, decision)`` triples
(``decision`` None = not delivered); it fills in correctness, votes, the answers and
confidences each critique saw (those of round r-1), and the bookkeeping fields; the
``debate_id`` is the engine's hash of the identity fields (what :mod:`pear.store.validate` checks).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Sequence

from pear.core.hashing import hex_id
from pear.store.records import (SCHEMA_VERSION, AgentEntry, CritiqueEntry, DebateRecord, RoundEntry,
                          Tokens)

Critique = tuple[int, int, "str | None"]


def _vote(canon: list[str]) -> str:
    """Majority vote; ties go to the answer seen first (tests avoid ties)."""
    counts = Counter(canon)
    best = max(counts.values())
    return next(a for a in canon if counts[a] == best)


def _critique(s: int, t: int, decision: str | None, answers, conf, r: int) -> CritiqueEntry:
    return CritiqueEntry(
        source=s, target=t, source_answer=answers[r - 1][s], target_answer=answers[r - 1][t],
        source_confidence=conf[r - 1][s], target_confidence=conf[r - 1][t],
        delivered=decision is not None, decision=decision,
        parse_error=None if decision else "no review", step_loc="step 1",
        correction=f"use {answers[r - 1][s]}",
        assessment="Flawed" if answers[r - 1][s] != answers[r - 1][t] else "Acceptable",
        reason=f"agent {t}'s reason")


def make_record(answers: Sequence[Sequence[str]], gold: str, *, method: str = "pear",
                model: str = "m", dataset: str = "gsm8k", seed: int = 0,
                question_id: str = "q0",
                confidences: Sequence[Sequence[int]] | None = None,
                critiques: dict[int, Sequence[Critique]] | None = None,
                influence: Sequence[Sequence[float]] | None = None,
                canonical: Callable[[str], str] = lambda a: a,
                tokens: tuple[int, int, int] = (100, 50, 0), calls: int = 1,
                parse_failures: int = 0, truncated_calls: int = 0) -> DebateRecord:
    """One debate record.  ``answers[r][i]`` is agent i's answer after round r;
    ``confidences[r][i]`` its confidence (default 3); ``critiques[r]`` the edges of
    round r >= 1; ``influence[r]`` rho after round r (default zeros); ``canonical`` maps
    an answer to its canonical form (correct = canonical == gold)."""
    n = len(answers[0])
    conf = confidences or [[3] * n for _ in answers]
    rounds_data: list[RoundEntry] = []
    for r, row in enumerate(answers):
        canon = [canonical(a) for a in row]
        crit = [_critique(s, t, d, answers, conf, r)
                for s, t, d in (critiques or {}).get(r, ())]
        agents = [AgentEntry(agent=i, answer=a, canonical=canon[i], confidence=conf[r][i],
                             reasoning="", correct=canon[i] == gold, parse_error=None,
                             truncated=False)
                  for i, a in enumerate(row)]
        vote = _vote(canon)
        rounds_data.append(RoundEntry(
            round=r, edges=[[c["source"], c["target"]] for c in crit], router=None,
            agents=agents, critiques=crit,
            influence=list(influence[r]) if influence else [0.0] * n,
            vote=vote, vote_correct=vote == gold))
    final = rounds_data[-1]["vote"]
    ident = dict(model=model, backend="handmade", dataset=dataset, method=method, seed=seed,
                 question_id=question_id, config_hash="h0")
    record = DebateRecord(
        schema=SCHEMA_VERSION, debate_id=hex_id(*(ident[k] for k in sorted(ident)), n=20),
        model=model, backend="handmade", dataset=dataset, method=method, seed=seed,
        question_id=question_id, config_hash="h0", n_agents=n, rounds=len(answers) - 1,
        gold=gold, rounds_data=rounds_data, final_answer=final, correct=final == gold,
        tokens=Tokens(prompt=tokens[0], completion=tokens[1], cached=tokens[2]),
        calls=calls, parse_failures=parse_failures, latency_s=0.0,
        finished_at="2025-01-01T00:00:00Z", prompt_style="paper",
        truncated_calls=truncated_calls)
    return record


def make_simple(correct: bool, *, method: str, seed: int = 0, question_id: str = "q0",
                model: str = "m", dataset: str = "gsm8k", n_agents: int = 1,
                tokens: tuple[int, int, int] = (100, 50, 0), calls: int = 1) -> DebateRecord:
    """A record with round 0 only whose vote is right or wrong (e.g. ``cot``)."""
    answer = "1" if correct else "0"
    return make_record([[answer] * n_agents], "1", method=method, seed=seed,
                       question_id=question_id, model=model, dataset=dataset, tokens=tokens,
                       calls=calls)


@dataclass(frozen=True)
class Q:
    """A minimal question for engine and simulator tests (what the engine reads of one)."""

    id: str
    dataset: str
    question: str
    gold: str
    choices: tuple = ()


def arithmetic_questions(n: int) -> list[Q]:
    """``n`` GSM8K-labelled questions "What is i + 10?" with gold ``10 + i``."""
    return [Q(f"q{i}", "gsm8k", f"What is {i} + 10?", str(10 + i)) for i in range(n)]



def du_chat(question: str, answers: list[str]) -> list[dict]:
    """One agent's chat as Du et al.'s scripts write it: the question, then per round its
    answer (and, before each later round, the others' answers as a user message)."""
    out = [{"role": "user", "content": question}]
    for i, a in enumerate(answers):
        if i:
            out.append({"role": "user", "content": "These are the other agents' answers..."})
        out.append({"role": "assistant", "content": a})
    return out
