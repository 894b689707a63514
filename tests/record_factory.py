"""Hand-made debate records in the schema of :mod:`pear.records` (version 1), for tests of
metrics, stats and report that need known answers.

``make_record`` takes the answers of every agent in every round (round 0 = initial answers)
and, per debate round, the routed critiques as ``(source, target, decision)`` triples
(``decision`` None = not delivered); it fills in correctness, votes, the answers and
confidences each critique saw (those of round r-1), and the bookkeeping fields.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from pear.records import SCHEMA_VERSION

Critique = tuple[int, int, "str | None"]


def _vote(canon: list[str]) -> str:
    """Majority vote; ties go to the answer seen first (tests avoid ties)."""
    counts = Counter(canon)
    best = max(counts.values())
    return next(a for a in canon if counts[a] == best)


def make_record(answers: Sequence[Sequence[str]], gold: str, *, method: str = "pear",
                model: str = "m", dataset: str = "gsm8k", seed: int = 0,
                question_id: str = "q0",
                confidences: Sequence[Sequence[int]] | None = None,
                critiques: dict[int, Sequence[Critique]] | None = None,
                influence: Sequence[Sequence[float]] | None = None,
                canonical: Callable[[str], str] = lambda a: a,
                tokens: tuple[int, int, int] = (100, 50, 0), calls: int = 1,
                parse_failures: int = 0) -> dict:
    """One debate record.  ``answers[r][i]`` is agent i's answer after round r;
    ``confidences[r][i]`` its confidence (default 3); ``critiques[r]`` the edges of
    round r >= 1; ``influence[r]`` rho after round r (default zeros); ``canonical`` maps
    an answer to its canonical form (correct = canonical == gold)."""
    n = len(answers[0])
    conf = confidences or [[3] * n for _ in answers]
    rounds_data = []
    for r, row in enumerate(answers):
        canon = [canonical(a) for a in row]
        crit = []
        for s, t, decision in (critiques or {}).get(r, ()):
            crit.append({
                "source": s, "target": t, "step_loc": f"agent {s} on agent {t}",
                "correction": f"it is {answers[r - 1][s]}", "assessment": "Flawed",
                "reason": "", "source_answer": answers[r - 1][s],
                "target_answer": answers[r - 1][t], "source_confidence": conf[r - 1][s],
                "target_confidence": conf[r - 1][t], "delivered": decision is not None,
                "decision": decision, "parse_error": None if decision else "no review"})
        vote = _vote(canon)
        rounds_data.append({
            "round": r, "edges": [[c["source"], c["target"]] for c in crit],
            "router": None,
            "agents": [{"agent": i, "answer": a, "canonical": canon[i], "confidence": conf[r][i],
                        "reasoning": "", "correct": canon[i] == gold, "parse_error": None}
                       for i, a in enumerate(row)],
            "critiques": crit,
            "influence": list(influence[r]) if influence else [0.0] * n,
            "vote": vote, "vote_correct": vote == gold})
    final = rounds_data[-1]["vote"]
    return {
        "schema": SCHEMA_VERSION,
        "debate_id": f"{model}|{dataset}|{method}|{seed}|{question_id}",
        "model": model, "backend": "handmade", "dataset": dataset, "method": method,
        "seed": seed, "question_id": question_id, "config_hash": "h0", "n_agents": n,
        "rounds": len(answers) - 1, "gold": gold, "rounds_data": rounds_data,
        "final_answer": final, "correct": final == gold,
        "tokens": {"prompt": tokens[0], "completion": tokens[1], "cached": tokens[2]},
        "calls": calls, "parse_failures": parse_failures, "latency_s": 0.0,
        "finished_at": "2025-01-01T00:00:00Z",
    }


def make_simple(correct: bool, *, method: str, seed: int = 0, question_id: str = "q0",
                model: str = "m", dataset: str = "gsm8k", n_agents: int = 1,
                tokens: tuple[int, int, int] = (100, 50, 0), calls: int = 1) -> dict:
    """A record with round 0 only whose vote is right or wrong (e.g. ``cot``)."""
    answer = "1" if correct else "0"
    return make_record([[answer] * n_agents], "1", method=method, seed=seed,
                       question_id=question_id, model=model, dataset=dataset, tokens=tokens,
                       calls=calls)
