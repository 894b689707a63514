"""Edge sets: the base role graph, relabellings, the candidate pool, fixed topologies.

Agents are 0-indexed.  An edge ``(s, t)`` means "source s critiques target t".  Edge sets are
``int`` arrays of shape ``(m, 2)``; a candidate pool (:class:`Pool`) holds ``(M, m)`` source and
target index arrays of M relabellings.

>>> base = base_graph(5, 2, np.random.default_rng(0))
>>> np.bincount(base[:, 1], minlength=5).tolist()   # every role has in-degree exactly k
[2, 2, 2, 2, 2]
>>> fixed_topology("chain", 3).tolist()
[[0, 1], [1, 2]]
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from pear.core.hashing import base_graph_seed

__all__ = ["base_graph", "debate_base_graph", "subsample", "candidate_pool", "Pool",
           "distinct_relabellings", "fixed_topology", "TOPOLOGIES"]

TOPOLOGIES = ("clique", "star", "chain", "ring")
ENUMERATE_MAX_N = 8  # our choice: enumerate all n! relabellings up to n = 8 (40,320)


def base_graph(n: int, k: int, rng: np.random.Generator,
               kind: Literal["in_regular", "circulant"] = "in_regular") -> np.ndarray:
    """The base role graph, every role of in-degree ``k``: ``in_regular`` draws each role's k
    sources uniformly (out-degrees vary); ``circulant`` links ``t - j mod n -> t``, j = 1..k
    (out-degree k too: the I and L terms are equal for every relabelling)."""
    if not 1 <= k <= n - 1:
        raise ValueError(f"invalid k={k}: the in-degree must lie in 1..n-1 = 1..{n - 1}")
    if kind == "circulant":
        edges = [((t - j) % n, t) for t in range(n) for j in range(1, k + 1)]
    elif kind == "in_regular":
        edges = []
        for t in range(n):
            others = np.array([s for s in range(n) if s != t])
            for s in rng.choice(others, size=k, replace=False):
                edges.append((int(s), t))
    else:
        raise ValueError(f"unknown base graph kind {kind!r}: use 'in_regular' or 'circulant'")
    return _sorted(np.array(edges, dtype=np.int64))


def debate_base_graph(seed: int, dataset: str, question_id: str, n: int, k: int,
                      kind: Literal["in_regular", "circulant"] = "in_regular") -> np.ndarray:
    """The base role graph of a question's debates in a run of seed ``seed``, from (seed,
    question) alone (:func:`pear.core.hashing.base_graph_seed`): what the engine routes.

    >>> g = debate_base_graph(0, "gsm8k", "q1", 5, 2)
    >>> g.shape, bool((g == debate_base_graph(0, "gsm8k", "q1", 5, 2)).all())
    ((10, 2), True)
    """
    return base_graph(n, k, np.random.default_rng(base_graph_seed(seed, dataset, question_id)),
                      kind)


def _sorted(edges: np.ndarray) -> np.ndarray:
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))] if len(edges) else edges


@dataclass(frozen=True)
class Pool:
    """A candidate pool: ``M`` relabellings of one base graph as ``(M, m)`` source and target
    index arrays (candidate ``p`` routes ``src[p, e] -> tgt[p, e]``)."""

    src: np.ndarray
    tgt: np.ndarray
    n: int

    def __len__(self) -> int:
        return len(self.src)

    def take(self, index: np.ndarray) -> "Pool":
        return Pool(self.src[index], self.tgt[index], self.n)


def _relabelled(edges: np.ndarray, perms: np.ndarray, n: int) -> Pool:
    return Pool(perms[:, edges[:, 0]], perms[:, edges[:, 1]], n)


def _first_distinct(pool: Pool) -> np.ndarray:
    """Indices of the first candidate of every distinct edge set, in order."""
    codes = np.sort(pool.src * pool.n + pool.tgt, axis=1)
    _, first = np.unique(codes, axis=0, return_index=True)
    return np.sort(first)


@lru_cache(maxsize=64)
def _distinct_relabellings(edges_key: tuple[tuple[int, int], ...], n: int) -> Pool:
    """All relabellings of a graph with distinct edge sets."""
    edges = np.array(edges_key, dtype=np.int64).reshape(-1, 2)
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    every = _relabelled(edges, perms, n)
    out = every.take(_first_distinct(every))
    out.src.setflags(write=False)
    out.tgt.setflags(write=False)
    return out


def distinct_relabellings(edges: np.ndarray, n: int) -> Pool:
    """Every relabelling of ``edges`` with a distinct edge set (enumerates all n! permutations;
    for n <= 8)."""
    if n > ENUMERATE_MAX_N:
        raise ValueError(f"n={n} is too large to enumerate n! relabellings; use candidate_pool")
    return _distinct_relabellings(tuple(map(tuple, np.asarray(edges).tolist())), n)


def subsample(pool: Pool, m_max: int, rng: np.random.Generator) -> Pool:
    """The pool rule: all of ``pool`` when it holds at most ``m_max`` relabellings, else
    ``m_max`` of them drawn uniformly without replacement (kept in enumeration order)."""
    if len(pool) <= m_max:
        return pool
    return pool.take(np.sort(rng.choice(len(pool), size=m_max, replace=False)))


def candidate_pool(edges: np.ndarray, n: int, m_max: int, rng: np.random.Generator) -> Pool:
    """The router's candidate pool: distinct relabellings of ``edges``, all of them when at
    most ``m_max`` (enumerated for n <= 8), else ``m_max`` drawn uniformly without replacement
    (for large n: random permutations, duplicate edge sets dropped)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if n <= ENUMERATE_MAX_N:
        allc = _distinct_relabellings(tuple(map(tuple, edges.tolist())), n)
        return subsample(allc, m_max, rng)
    chosen: Pool | None = None
    for _ in range(20):
        draw = int(m_max * 1.2) + 8
        perms = rng.permuted(np.tile(np.arange(n), (draw, 1)), axis=1)
        batch = _relabelled(edges, perms, n)
        if chosen is not None:
            batch = Pool(np.concatenate([chosen.src, batch.src]),
                         np.concatenate([chosen.tgt, batch.tgt]), n)
        chosen = batch.take(_first_distinct(batch)[:m_max])
        if len(chosen) == m_max:
            break
    return chosen


def fixed_topology(name: str, n: int) -> np.ndarray:
    """The fixed topologies of the study: ``clique`` (all ordered pairs), ``star`` (hub =
    agent 0, both directions), ``chain`` (0 -> 1 -> ... -> n-1), ``ring`` (i -> i+1 mod n)."""
    if name == "clique":
        e = [(s, t) for s in range(n) for t in range(n) if s != t]
    elif name == "star":
        e = [(0, i) for i in range(1, n)] + [(i, 0) for i in range(1, n)]
    elif name == "chain":
        e = [(i, i + 1) for i in range(n - 1)]
    elif name == "ring":
        e = [(i, (i + 1) % n) for i in range(n)] if n > 2 else [(0, 1), (1, 0)]
    else:
        raise ValueError(f"unknown topology {name!r}: choose one of {', '.join(TOPOLOGIES)}")
    return _sorted(np.array(e, dtype=np.int64))
