"""ReConcile's confidence-weighted vote, as an aggregation on PEAR and on Clique.

Source: Chen, Saha and Bansal, "ReConcile: Round-Table Conference Improves Reasoning via
Consensus among Diverse LLMs", ACL 2024.  ReConcile lets agents of different model families
discuss for a few rounds and takes the final answer by a vote in which each agent's answer
counts with a recalibrated version of its stated confidence.

Taken: the final answer of each round is the answer class with the largest sum of its
agents' weights, with ReConcile's recalibration of a confidence p in [0, 1]: 1.0 -> 1.0,
>= 0.9 -> 0.8, >= 0.8 -> 0.5, > 0.6 -> 0.3, else 0.1 (``scale="reconcile"``).

Approximated: our agents state confidence on the study's integer scale 1..5, read here as
p = c / 5 (so 5 -> 1.0, 4 -> 0.5, 3 and below -> 0.1); ``scale="linear"`` weights by c
itself instead.  ReConcile's other parts (diverse model families, convincing samples, its own
discussion prompt and consensus stopping) are not taken: the routing is PEAR's or Clique's and
the protocol is the study's.  Ties are broken uniformly with the debate's generator.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from pear.core.graphs import fixed_topology
from pear.core.methods import RouterState, pear_route
from pear.methods.registry import register

__all__ = ["weight", "aggregate", "clique_route"]


def weight(confidence: int, scale: str = "reconcile") -> float:
    """The vote weight of a confidence on 1..5.

    >>> [weight(c) for c in (1, 3, 4, 5)], weight(4, "linear")
    ([0.1, 0.1, 0.5, 1.0], 4.0)
    """
    if scale == "linear":
        return float(confidence)
    if scale != "reconcile":
        raise ValueError(f"invalid scale={scale!r}: use 'reconcile' or 'linear'")
    p = confidence / 5
    return 1.0 if p >= 1.0 else 0.8 if p >= 0.9 else 0.5 if p >= 0.8 else 0.3 if p > 0.6 \
        else 0.1


def aggregate(answers: Sequence[str], confidences: Sequence[int], rng: np.random.Generator,
              scale: str = "reconcile") -> str:
    """The answer class with the largest summed weight (empty answers count only when there
    is nothing else); ties uniformly with ``rng``.

    >>> aggregate(["a", "a", "b"], [3, 3, 5], np.random.default_rng(0))
    'b'
    """
    total: dict[str, float] = {}
    for a, c in zip(answers, confidences):
        if a:
            total[a] = total.get(a, 0.0) + weight(int(c), scale)
    if not total:
        return answers[0] if answers else ""
    best = max(total.values())
    tied = sorted(a for a, v in total.items() if abs(v - best) <= 1e-12)
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]


def clique_route(state: RouterState, rng: np.random.Generator) -> np.ndarray:
    """Every agent critiques every other (the study's Clique)."""
    return fixed_topology("clique", state.n)


register("pear_reconcile", pear_route, aggregate=aggregate, params={"scale": "reconcile"},
         label="PEAR + ReConcile vote", graphs="relabelling",
         description="PEAR routing; answers aggregated by ReConcile's confidence-weighted vote "
                     "(Chen et al., 2024).")
register("clique_reconcile", clique_route, aggregate=aggregate, params={"scale": "reconcile"},
         label="Clique + ReConcile vote", in_degree=None,
         description="Clique; answers aggregated by ReConcile's confidence-weighted vote "
                     "(Chen et al., 2024).")
