"""The static sparse topology: the debate's base role graph every round, never relabelled.

Source: Li et al., "Improving Multi-Agent Debate with Sparse Communication Topology",
Findings of EMNLP 2024.  They show that a debate in which each agent hears only a few others,
over a fixed sparse graph, keeps most of a fully connected debate's accuracy at a fraction of
its cost.

Taken: a sparse graph fixed for the whole debate.

Approximated: Li et al. study particular sparse graphs (e.g. neighbour-connected rings of a
given degree); here the graph is the study's base role graph of the debate (in-degree k,
drawn per question from the run seed), so it spends exactly PEAR's and Random's edge budget
and differs from them only in never being relabelled: the clean "no routing" control for
PEAR.
"""
from __future__ import annotations

import numpy as np

from pear.core.methods import RouterState
from pear.methods.registry import register

__all__ = ["route"]


def route(state: RouterState, rng: np.random.Generator) -> np.ndarray:
    """The base role graph as it is."""
    return np.asarray(state.base_edges, dtype=np.int64).reshape(-1, 2)


register("static", route, label="Static sparse", graphs="relabelling",
         description="Static sparse topology (Li et al., 2024): the base role graph every "
                     "round, never relabelled.")
