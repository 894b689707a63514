"""The one solver of the populations room: where an increasing function reaches a target, by a
fixed number of halvings of a bracket.

Every match of a population to a figure goes through it: an ease to a round-0 accuracy and a
``difficulty_sd`` to a pair's accuracy (:mod:`pear.populations.twin`), the agents' accuracy to a
round-0 majority's (:mod:`pear.populations.published_collapse`), ``follow_right`` to a published
final vote (:mod:`pear.populations.published_gains`).  A fixed count of halvings, not a tolerance
(as :func:`scipy.optimize.brentq` takes): two of those functions are simulated debates at fixed
seeds, piecewise constant in the argument, where a root finder's interpolation steps land on a
plateau's edge anywhere; halving the bracket a fixed number of times gives the same value for the
same simulations on every machine, and the shipped members were matched by it."""
from __future__ import annotations

from typing import Callable

__all__ = ["increasing_root"]


def increasing_root(f: Callable[[float], float], target: float, lo: float, hi: float,
                    steps: int) -> float:
    """The midpoint of the bracket left after ``steps`` halvings of ``[lo, hi]``, each keeping
    the half where the increasing ``f`` crosses ``target`` (``f(mid) < target``: the upper
    half).  Without a crossing it ends at the bracket's edge: near ``hi`` when ``f`` stays below
    ``target``, near ``lo`` when it is at least ``target`` everywhere.

    >>> round(increasing_root(lambda x: x * x, 2.0, 0.0, 2.0, 40), 6)
    1.414214
    >>> increasing_root(lambda x: x, 5.0, 0.0, 1.0, 3)  # never reached: the upper edge
    0.9375
    """
    if not lo < hi:
        raise ValueError(f"invalid bracket [{lo}, {hi}]: lo must be below hi")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"invalid steps={steps!r}: at least one halving")
    for _ in range(steps):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2
