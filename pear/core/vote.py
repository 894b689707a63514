"""The majority vote, defined once (the engine, the validator and the grading check use
:func:`leaders`): over canonical classes; empty answers count only when there is nothing
else; ties broken uniformly with the debate's generator, never by agent order.

>>> leaders(["4", "5", "4", ""])
['4']
>>> leaders(["", ""]), leaders([])
([''], [])
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

__all__ = ["leaders", "vote"]


def leaders(answers: Sequence[str]) -> list[str]:
    """The most frequent answers (sorted; more than one on a tie)."""
    counts = Counter(a for a in answers if a) or Counter(answers)
    if not counts:
        return []
    top = max(counts.values())
    return sorted(a for a, c in counts.items() if c == top)


def vote(answers: Sequence[str], rng: np.random.Generator) -> str:
    """Majority over canonical answers; ties broken uniformly with ``rng`` (one draw only on
    a tie).

    >>> vote(["4", "5", "4"], np.random.default_rng(0))
    '4'
    """
    tied = leaders(answers)
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]
