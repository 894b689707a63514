"""Disagreement-aware retention (DAR): each target hears the k sources that disagree most
with it.

Source: the study's related work names disagreement-aware retention (DAR, 2026) as a
train-free way to decide who talks to whom in a debate: keep, for each agent, the messages
of the agents whose answers disagree most with its own.

Taken: the rule "each target hears the k sources whose answers disagree most with its own",
with k the study's base-graph in-degree, so DAR spends exactly PEAR's and Random's edge
budget (n k critiques a round) and runs under the same critique + revision protocol.

Approximated: we work from that one-line description, not from the authors' code.  Here
disagreement is what the router protocol can see: a source disagrees with a target when
their canonical answer classes differ (binary, as in PEAR's T term); among disagreeing
sources the more confident are kept first; remaining ties (and the fill-up with agreeing
sources when fewer than k disagree) are broken uniformly at random with the debate's
generator, so the router stays permutation-equivariant.  No text similarity, embedding or
extra model call is used.
"""
from __future__ import annotations

import numpy as np

from pear.core.methods import RouterState
from pear.methods.registry import register

__all__ = ["route"]


def route(state: RouterState, rng: np.random.Generator) -> np.ndarray:
    """Per target, the k sources ranked by (disagrees, source confidence, random tie-break).

    >>> from pear.core.router import RouterState
    >>> s = RouterState(("a", "a", "b"), (5, 5, 2), (0.0,) * 3, np.zeros((0, 2)), k=1)
    >>> [e for e in route(s, np.random.default_rng(0)).tolist() if e[1] != 2]  # 0, 1 hear 2
    [[2, 0], [2, 1]]
    """
    n, k = state.n, state.k
    codes = {a: i for i, a in enumerate(dict.fromkeys(state.answers))}
    y = np.array([codes[a] for a in state.answers])
    c = np.asarray(state.confidences, dtype=float)
    disagree = (y[:, None] != y[None, :]).astype(float)              # (source, target)
    key = disagree * 10.0 + c[:, None] + rng.random((n, n)) * 0.5    # confidence 1..5, gaps 1
    np.fill_diagonal(key, -np.inf)                                   # no self-loops
    sources = np.argsort(-key, axis=0, kind="stable")[:k]            # top k per target column
    edges = [(int(s), t) for t in range(n) for s in sources[:, t]]
    return np.array(sorted(edges), dtype=np.int64)


register("dar", route, label="DAR",
         description="Disagreement-aware retention (DAR, 2026): each target hears the k most "
                     "confident sources whose answers differ from its own.")
