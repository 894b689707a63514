"""Early stopping of debates (``DebateConfig.stop``).

The study runs every debate for R rounds (``none``).  Two rules, checked after round 0 and
every round, end it sooner: ``consensus`` (every agent gives the same non-empty answer) and
``stable:K`` (K >= 1: the votes of rounds r-K..r are equal).  A stopped debate leaves the
batch; its record has ``rounds`` (run), ``max_rounds`` (R; 0 for CoT, CoT-SC) and
``stop_reason`` (``consensus``, ``stable``, ``max_rounds``; None for CoT, CoT-SC).  Round-wise
analyses carry its last round forward (:func:`pear.analysis.metrics.round_accuracy`).

>>> parse_stop("stable:2")
StopRule(kind='stable', k=2)
>>> stop_reason(parse_stop("consensus"), votes=["4"], answers=["4", "4", "4"], r=0, rounds=5)
'consensus'
"""
from __future__ import annotations

from typing import Literal, NamedTuple, Sequence

__all__ = ["StopRule", "parse_stop", "stop_reason"]


class StopRule(NamedTuple):
    """A parsed stop rule: ``kind`` and, for ``stable``, the number of unchanged rounds K."""

    kind: Literal["none", "consensus", "stable"]
    k: int = 0


def parse_stop(text: str) -> StopRule:
    """The rule of ``text`` (``none``, ``consensus`` or ``stable:K`` with an integer K >= 1).

    >>> parse_stop("sometimes")
    Traceback (most recent call last):
    ...
    ValueError: invalid stop='sometimes': use none, consensus or stable:K (K an integer >= 1)
    """
    fix = "use none, consensus or stable:K (K an integer >= 1)"
    if text in ("none", "consensus"):
        return StopRule(text)  # type: ignore[arg-type]
    kind, _, k = str(text).partition(":")
    if kind == "stable" and k.isdigit() and int(k) >= 1:
        return StopRule("stable", int(k))
    raise ValueError(f"invalid stop={text!r}: {fix}")


def stop_reason(rule: StopRule, *, votes: Sequence[str], answers: Sequence[str], r: int,
                rounds: int) -> str | None:
    """Why a debate ends after round ``r`` of ``rounds`` (None: it goes on).

    ``votes`` are the debate's votes of rounds 0..r; ``answers`` its agents' canonical answers
    after round r.  ``max_rounds`` when r = R, whatever the rule.

    >>> rule = parse_stop("stable:2")
    >>> [stop_reason(rule, votes=v, answers=["x"], r=len(v) - 1, rounds=5)
    ...  for v in (["a"], ["a", "b"], ["a", "b", "b"], ["a", "b", "b", "b"])]
    [None, None, None, 'stable']
    """
    if r >= rounds:
        return "max_rounds"
    if rule.kind == "consensus" and answers and answers[0] and len(set(answers)) == 1:
        return "consensus"
    if rule.kind == "stable" and r >= rule.k and len(set(votes[r - rule.k: r + 1])) == 1:
        return "stable"
    return None

