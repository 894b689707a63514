"""Group debate: agents debate in fixed subgroups; groups hear each other every other round.

Source: Liu et al., "GroupDebate: Enhancing the Efficiency of Multi-Agent Debate Using Group
Discussion", 2024.  GroupDebate splits the agents into groups that debate internally and,
between stages, share a summary of each group's discussion with the other groups, cutting the
tokens a full debate spends.

Taken: fixed subgroups (agents ``0..g-1``, ``g..2g-1``, ...; ``group_size`` g, default
ceil(n / 2)); in every round each agent critiques every other member of its group; in every
other round (rounds 2, 4, ...) information also crosses groups.

Approximated: GroupDebate's cross-group exchange is a summary written by a model; here no
summary call is made: on cross-group rounds the most confident member of each group (ties
uniformly with the debate's generator) critiques every agent of the other groups, standing in
for its group's summary.  The groups are formed by agent index, as GroupDebate assigns them,
so the router is not permutation-equivariant in the strict sense (like Star and Chain); with
exchangeable agents the grouping is arbitrary, and it is registered with
``equivariant=False`` so that :func:`pear.testing.check_router` does not hold it to that.
The number of critiques per round is not the study's n k.
"""
from __future__ import annotations

import numpy as np

from pear.core.methods import RouterState
from pear.methods.registry import register

__all__ = ["groups", "route"]


def groups(n: int, group_size: int = 0) -> list[list[int]]:
    """Agents in consecutive groups of ``group_size`` (0: ceil(n / 2)), at least 2 each
    (a last group of one joins the one before).

    >>> groups(5), groups(6, 2), groups(3)
    ([[0, 1, 2], [3, 4]], [[0, 1], [2, 3], [4, 5]], [[0, 1, 2]])
    """
    g = group_size or -(-n // 2)
    if not isinstance(g, int) or g < 2:
        raise ValueError(f"invalid group_size={group_size!r}: use an integer >= 2 (0 = n/2)")
    out = [list(range(i, min(i + g, n))) for i in range(0, n, g)]
    if len(out) > 1 and len(out[-1]) < 2:
        last = out.pop()
        out[-1] += last
    return out


def route(state: RouterState, rng: np.random.Generator, group_size: int = 0) -> np.ndarray:
    """Within-group cliques every round; on even rounds also each group's most confident
    member to every agent of the other groups."""
    parts = groups(state.n, group_size)
    edges = {(s, t) for g in parts for s in g for t in g if s != t}
    if state.round % 2 == 0 and len(parts) > 1:
        conf = np.asarray(state.confidences, dtype=float)
        for g in parts:
            key = conf[g] + rng.random(len(g)) * 0.5
            lead = g[int(np.argmax(key))]
            edges |= {(lead, t) for h in parts if h is not g for t in h}
    return np.array(sorted(edges), dtype=np.int64)


register("group", route, params={"group_size": 0}, label="GroupDebate", in_degree=None,
         equivariant=False,
         description="Group debate (Liu et al., 2024): fixed subgroups, cross-group critiques "
                     "from each group's most confident member every other round.")
