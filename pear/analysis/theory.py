"""The study's theoretical claims about the router, checked numerically on debate states.

A *state* is what the router sees before a round: canonical answers ``y``, confidences ``c``,
influence ``rho`` and the base role graph.  Over the pool of all distinct relabellings of the
base graph (n! is small for n = 5) these functions measure:

* :func:`equivariance_deviation` — relabelling the agents by sigma relabels every candidate's
  score and the choice distribution: max |S(G | state) - S(sigma G | sigma state)| and the same
  for the choice probabilities (both 0 up to rounding if the router is equivariant);
* :func:`influence_derivative` — influence monotonicity: d E[D_j] / d rho_j, the change of
  agent j's expected out-degree under the softmax choice with its own influence, numerically
  (central difference) beside the closed form ``-alpha_I / (tau m) Var(D_j)``;
* :func:`term_spread` — the spread (max - min) of the I~ and L~ terms over the pool: zero for
  an out-regular (circulant) base graph, positive for the in-regular one;
* :func:`routing_lift` — the largest lift in mean routed-source confidence (on [0, 1]) and
  in cross-answer rate (share of edges whose source answer differs from the target's) that any
  relabelling of the pool gives over uniform routing: how much routing *could* change them.

>>> st = RouterState(("a", "b", "a", "c", "b"), (5, 2, 4, 1, 3), (0.2, 0.0, 0.6, 0.1, 0.3),
...            base_graph(5, 2, np.random.default_rng(0)))
>>> equivariance_deviation(st, RouterConfig(), np.random.default_rng(1))["score"] < 1e-12
True
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import numpy as np

from pear.core.config import RouterConfig
from pear.core.graphs import Pool, base_graph, distinct_relabellings
from pear.core.router import RouterState, score_pool, selection_probabilities

__all__ = ["relabelling_pool", "states_from_records",
           "equivariance_deviation", "influence_derivative",
           "term_spread", "routing_lift", "choice_entropy", "base_graph"]


def relabelling_pool(state: RouterState) -> Pool:
    """Every distinct relabelling of the state's base graph."""
    return distinct_relabellings(state.base_edges, state.n)


def states_from_records(records: Iterable[dict[str, Any]], limit: int | None = None,
                        methods: tuple[str, ...] = ("pear", "random")) -> Iterator[RouterState]:
    """Router states taken from routed debate records: before each round r >= 1, the agents'
    canonical answers and confidences after round r-1 and the influence after it; the base
    graph is the round's routed edge set (a relabelling of the base graph has the same pool)."""
    count = 0
    for rec in records:
        if rec.get("method") not in methods:
            continue
        rounds = rec["rounds_data"]
        for prev, cur in zip(rounds, rounds[1:]):
            if not cur["edges"]:
                continue
            yield RouterState.after_round(prev, np.asarray(cur["edges"], dtype=np.int64))
            count += 1
            if limit is not None and count >= limit:
                return


def _scores(state: RouterState, cfg: RouterConfig, pool: Pool) -> np.ndarray:
    return score_pool(pool, state.answers, state.confidences, state.influence, cfg).score


def _codes(pool: Pool) -> np.ndarray:
    """One sortable code per candidate edge set, to match candidates across pools."""
    return np.sort(pool.src * pool.n + pool.tgt, axis=1)


def equivariance_deviation(state: RouterState, cfg: RouterConfig, rng: np.random.Generator,
                           n_perms: int = 10) -> dict[str, float]:
    """Max deviation, over ``n_perms`` random relabellings sigma, between each candidate's score
    (and choice probability) and that of its relabelled candidate under the relabelled state."""
    pool = relabelling_pool(state)
    s0 = _scores(state, cfg, pool)
    p0 = selection_probabilities(s0, cfg.tau)
    known = {c.tobytes() for c in _codes(pool)}
    worst_s = worst_p = 0.0
    for _ in range(n_perms):
        perm = rng.permutation(state.n)
        moved = Pool(perm[pool.src], perm[pool.tgt], pool.n)  # sigma G for every G of the pool
        if {c.tobytes() for c in _codes(moved)} != known:
            raise AssertionError("the pool is not closed under relabelling")
        s1 = _scores(state.relabelled(perm), cfg, moved)     # S(sigma G | sigma state)
        p1 = selection_probabilities(s1, cfg.tau)           # P(sigma G | sigma state)
        worst_s = max(worst_s, float(np.abs(s1 - s0).max()))
        worst_p = max(worst_p, float(np.abs(p1 - p0).max()))
    return {"score": worst_s, "probability": worst_p}


def _out_degrees(pool: Pool) -> np.ndarray:
    """(M, n) out-degree of every agent in every candidate."""
    out = np.zeros((len(pool), pool.n))
    np.add.at(out, (np.arange(len(pool))[:, None], pool.src), 1)
    return out


def influence_derivative(state: RouterState, cfg: RouterConfig, agent: int,
                         eps: float = 1e-5) -> dict[str, float]:
    """d E[D_j] / d rho_j for agent ``j``: a central finite difference of the expected out-degree
    under softmax(S / tau) over the pool, and the closed form -alpha_I / (tau m) Var(D_j)."""
    if cfg.tau <= 0:
        raise ValueError(f"invalid tau={cfg.tau!r}: the derivative needs a softmax (tau > 0)")
    pool = relabelling_pool(state)
    degrees = _out_degrees(pool)[:, agent]
    m = pool.src.shape[1]

    def expected(rho_j: float) -> tuple[float, float]:
        rho = list(state.influence)
        rho[agent] = rho_j
        shifted = RouterState(state.answers, state.confidences, tuple(rho), state.base_edges)
        p = selection_probabilities(_scores(shifted, cfg, pool), cfg.tau)
        mean = float(p @ degrees)
        return mean, float(p @ (degrees - mean) ** 2)

    up, _ = expected(state.influence[agent] + eps)
    down, _ = expected(state.influence[agent] - eps)
    _, var = expected(state.influence[agent])
    return {"numeric": (up - down) / (2 * eps), "formula": -cfg.alpha_I / (cfg.tau * m) * var,
            "variance": var}


def term_spread(state: RouterState, cfg: RouterConfig) -> dict[str, float]:
    """Max minus min of the I~ and L~ terms (and of T~) over every relabelling of the base graph."""
    pool = relabelling_pool(state)
    terms = score_pool(pool, state.answers, state.confidences, state.influence, cfg)
    return {name: float(np.ptp(getattr(terms, name))) for name in ("T", "I", "L")}


def routing_lift(state: RouterState) -> dict[str, float]:
    """The largest gain over uniform routing (the pool's mean) that any relabelling gives in the
    mean routed-source confidence (mapped from 1..5 to [0, 1], as the study's diagnostics
    table reports it) and in the cross-answer rate of its edges."""
    pool = relabelling_pool(state)
    conf = (np.asarray(state.confidences, dtype=float) - 1) / 4
    codes = np.unique(np.asarray(state.answers), return_inverse=True)[1]
    src_conf = conf[pool.src].mean(axis=1)
    cross = (codes[pool.src] != codes[pool.tgt]).mean(axis=1)
    return {"source_confidence": float(src_conf.max() - src_conf.mean()),
            "cross_answer": float(cross.max() - cross.mean())}


def choice_entropy(state: RouterState, cfg: RouterConfig, normalised: bool = True) -> float:
    """Entropy of the router's choice distribution over the pool (nats), divided by log(M) when
    ``normalised`` (1 = uniform like Random, 0 = one graph always)."""
    pool = relabelling_pool(state)
    p = selection_probabilities(_scores(state, cfg, pool), cfg.tau)
    h = float(-(p[p > 0] * np.log(p[p > 0])).sum())
    return h / np.log(len(pool)) if normalised and len(pool) > 1 else h
