"""Early stopping of debates (``DebateConfig.stop``).

The study runs every debate for R rounds (``none``, the default).  Two rules end a debate
sooner; the engine checks them after round 0 (the initial answers) and after every round:

* ``consensus``: stop after a round in which every agent gives the same, non-empty canonical
  answer (no further round could change a unanimous vote of agents that all agree);
* ``stable:K`` (K >= 1): stop when the vote (the majority answer recorded as the round's
  ``vote``) has not changed for K consecutive rounds, i.e. votes of rounds r-K..r are equal.

A stopped debate leaves the engine's lockstep batch (no more calls, no more tokens); its
record says ``rounds`` (rounds actually run), ``max_rounds`` (R; 0 for CoT and CoT-SC) and
``stop_reason`` (``consensus``, ``stable``, ``max_rounds`` when it ran all R rounds; ``None``
for CoT and CoT-SC, which have no rounds).

Round-wise analyses carry a stopped debate's last round forward
(:func:`pear.analysis.metrics.round_accuracy`), so that a curve over rounds 0..R averages the
same debates at every round; W2R and R2W count only the rounds that ran.

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

