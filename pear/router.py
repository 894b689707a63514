"""The PEAR router: score every candidate graph of the pool, then choose one.

For a state (canonical answers ``y``, confidences ``c`` on 1..5, influence ``rho``) and an
edge set E with m = n k edges, exactly as the paper::

    T(s,t) = [y_s != y_t] [c_s >= tau_src] [c_t <= tau_tgt]       targeted diversity
    T~ = sum_{(s,t) in E} T(s,t) / m
    I~ = sum_s rho_s d_out(s) / m                                   influence balancing
    L(s) = max(0, tau_low + 1 - c_s);  L~ = sum_{(s,t) in E} L(s) / (m tau_low)
    S = alpha_T T~ - alpha_I I~ - alpha_L L~

The choice is softmax(S / tau) over the pool, drawn with the debate's own generator;
``tau = 0`` is argmax with ties broken uniformly.  Scores are computed for the whole pool at
once from the ``(M, n, n)`` adjacency tensor.  Everything here is permutation-equivariant:
relabelling the agents relabels the scores and the choice distribution.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pear.config import DebateConfig, Method, RouterConfig
from pear.graphs import (ENUMERATE_MAX_N, Pool, base_graph, candidate_pool,
                         distinct_relabellings, fixed_topology, to_adjacency)

__all__ = [
    "Terms",
    "RouterState",
    "Decision",
    "score",
    "score_pool",
    "selection_probabilities",
    "route",
    "route_batch",
    "Router",
    "make_router",
    "update_influence",
]


@dataclass(frozen=True)
class Terms:
    """The normalized score terms of one edge set (or arrays of them over a pool)."""

    score: float
    T: float
    I: float
    L: float


@dataclass(frozen=True)
class RouterState:
    """What the router sees after a round: per-agent canonical answer, confidence, influence,
    and the debate's base role graph."""

    answers: tuple[str, ...]
    confidences: tuple[int, ...]
    influence: tuple[float, ...]
    base_edges: np.ndarray

    @property
    def n(self) -> int:
        return len(self.answers)


@dataclass(frozen=True)
class Decision:
    """One routing decision: the chosen edges and, for routed methods, the pool statistics."""

    edges: np.ndarray
    pool_size: int | None = None
    terms: Terms | None = None
    score_min: float | None = None
    score_max: float | None = None

    def to_record(self) -> dict | None:
        """The ``router`` entry of a debate record (None for fixed topologies)."""
        if self.terms is None:
            return None
        return {"pool_size": self.pool_size, "score": self.terms.score, "T": self.terms.T,
                "I": self.terms.I, "L": self.terms.L, "score_min": self.score_min,
                "score_max": self.score_max}


def _codes(answers: Sequence[str]) -> list[int]:
    """Answers as integer codes (equal answers, equal codes)."""
    seen: dict[str, int] = {}
    return [seen.setdefault(a, len(seen)) for a in answers]


def _agent_terms(answers: Sequence[str], confidences: Sequence[int], cfg: RouterConfig):
    """The per-pair T matrix (n, n) and per-source L vector (n,)."""
    y = np.array(_codes(answers))
    c = np.asarray(confidences, dtype=np.int64)
    t_pair = (y[:, None] != y[None, :]) & (c[:, None] >= cfg.tau_src) & (c[None, :] <= cfg.tau_tgt)
    low = np.maximum(0, cfg.tau_low + 1 - c).astype(float)
    return t_pair, low


def score_pool(pool: Pool | np.ndarray, answers: Sequence[str], confidences: Sequence[int],
               influence: Sequence[float], cfg: RouterConfig, m: int | None = None) -> Terms:
    """Scores of every candidate of ``pool``; the fields are ``(M,)`` arrays.

    ``pool`` is a :class:`~pear.graphs.Pool` or a boolean ``(M, n, n)`` adjacency tensor
    whose candidates all have m edges (true of relabellings: m = n k; ``m`` defaults to it).
    Per-edge terms are gathered from ``(n, n)`` and ``(n,)`` tables: O(M m) work.
    """
    if not isinstance(pool, Pool):
        adj = np.asarray(pool, dtype=bool)
        cand, s, t = np.nonzero(adj)
        per = len(cand) // len(adj)
        if per * len(adj) != len(cand):
            raise ValueError("every candidate of a pool must have the same number of edges")
        pool = Pool(s.reshape(len(adj), per), t.reshape(len(adj), per), adj.shape[1])
    src, tgt = pool.src, pool.tgt
    m = src.shape[1] if m is None else m
    t_pair, low = _agent_terms(answers, confidences, cfg)
    rho = np.asarray(influence, dtype=float)
    T = t_pair[src, tgt].sum(axis=1) / m
    I = rho[src].sum(axis=1) / m          # sum_s rho_s d_out(s) = sum over edges of rho_src
    L = low[src].sum(axis=1) / (m * cfg.tau_low)
    S = cfg.alpha_T * T - cfg.alpha_I * I - cfg.alpha_L * L
    return Terms(S, T, I, L)


def score(edges, answers: Sequence[str], confidences: Sequence[int],
          influence: Sequence[float], cfg: RouterConfig) -> Terms:
    """The paper's score of one edge set (``(source, target)`` pairs, agents 0-indexed).

    m is the number of edges (n k for the base graph and its relabellings).

    >>> cfg = RouterConfig()
    >>> t = score([(0, 1)], ["a", "b"], [5, 1], [0.0, 0.0], cfg)
    >>> round(t.T, 3), round(t.L, 3), round(t.score, 3)
    (1.0, 0.0, 0.4)
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    adj = to_adjacency(e, len(answers))[None]
    terms = score_pool(adj, answers, confidences, influence, cfg, m=len(e))
    return Terms(*(float(x[0]) for x in (terms.score, terms.T, terms.I, terms.L)))


def selection_probabilities(scores: np.ndarray, tau: float) -> np.ndarray:
    """Choice probabilities over the pool: softmax(S / tau); tau = 0 is uniform over the
    maximisers (argmax with uniform tie-break)."""
    s = np.asarray(scores, dtype=float)
    if tau == 0:
        best = np.isclose(s, s.max(), rtol=0.0, atol=1e-12)
        return best / best.sum()
    z = (s - s.max()) / tau
    w = np.exp(z)
    return w / w.sum()


def route(state: RouterState, cfg: RouterConfig, rng: np.random.Generator,
          relabellings: Pool | None = None) -> Decision:
    """Sample the candidate pool, score it, and choose one graph with ``rng``.

    ``relabellings`` (all distinct relabellings of the base graph, when known) saves the
    enumeration; the pool drawn from it is the same as without it.
    """
    pool = _draw_pool(state, cfg, rng, relabellings)
    terms = score_pool(pool, state.answers, state.confidences, state.influence, cfg)
    p = selection_probabilities(terms.score, cfg.tau)
    cdf = np.cumsum(p)
    i = min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), len(p) - 1)
    chosen = Terms(float(terms.score[i]), float(terms.T[i]), float(terms.I[i]),
                   float(terms.L[i]))
    return Decision(edges=pool.edges(i), pool_size=len(pool), terms=chosen,
                    score_min=float(terms.score.min()), score_max=float(terms.score.max()))


def _draw_pool(state: RouterState, cfg: RouterConfig, rng: np.random.Generator,
               relabellings: Pool | None) -> Pool:
    if relabellings is not None and len(relabellings) > cfg.m_max:
        return relabellings.take(np.sort(rng.choice(len(relabellings), size=cfg.m_max,
                                                    replace=False)))
    if relabellings is not None:
        return relabellings
    return candidate_pool(state.base_edges, state.n, cfg.m_max, rng)


def route_batch(items: Sequence[tuple[RouterState, RouterConfig, np.random.Generator,
                                      Pool | None]]) -> list[Decision]:
    """Route many debates at once: the same decisions as ``[route(*item) for item in
    items]`` (each debate draws from its own generator in the same order), with the scores
    of every pool computed in one vectorized pass over all candidates of all debates."""
    if not items:
        return []
    pools = [_draw_pool(st, cfg, rng, rel) for st, cfg, rng, rel in items]
    m = pools[0].src.shape[1]
    if any(p.src.shape[1] != m for p in pools):
        return [route(*item) for item in items]
    sizes = np.array([len(p) for p in pools])
    owner = np.repeat(np.arange(len(items)), sizes)
    src = np.concatenate([p.src for p in pools])
    tgt = np.concatenate([p.tgt for p in pools])
    n = items[0][0].n
    codes = np.array([_codes(st.answers) for st, _, _, _ in items])          # (D, n)
    conf = np.array([st.confidences for st, _, _, _ in items], dtype=np.int64)
    rho = np.array([st.influence for st, _, _, _ in items], dtype=float)
    w = np.array([(c.alpha_T, c.alpha_I, c.alpha_L, c.tau_low, c.tau, c.tau_src, c.tau_tgt)
                  for _, c, _, _ in items])
    t_pair = ((codes[:, :, None] != codes[:, None, :])
              & (conf[:, :, None] >= w[:, 5, None, None])
              & (conf[:, None, :] <= w[:, 6, None, None]))                   # (D, n, n)
    low = np.maximum(0, w[:, 3, None] + 1 - conf)                            # (D, n)
    # flat gathers: one for the T indicator, one for the per-source penalty
    # alpha_I rho_s + alpha_L L(s) / tau_low (I and L are recovered for chosen graphs only)
    base_src = owner[:, None] * n + src                                       # (C, m)
    t_hits = np.take(t_pair.ravel(), base_src * n + tgt).sum(axis=1)
    penalty = w[:, 1, None] * rho + w[:, 2, None] * low / w[:, 3, None]     # (D, n)
    S = (w[owner, 0] * t_hits - np.take(penalty.ravel(), base_src).sum(axis=1)) / m
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    best = np.maximum.reduceat(S, starts)
    soft = w[:, 4] > 0
    tau = np.where(soft, w[:, 4], 1.0)[owner]
    weights = np.where(soft[owner], np.exp((S - best[owner]) / tau),
                       np.isclose(S, best[owner], rtol=0.0, atol=1e-12).astype(float))
    cdf = np.cumsum(weights)
    before = np.concatenate([[0.0], cdf[:-1]])[starts]   # mass before each segment
    totals = np.add.reduceat(weights, starts)
    u = np.array([rng.random() for _, _, rng, _ in items])  # each debate's own draw
    # the global cumsum within a segment equals before + the segment's own cumsum
    pick = np.searchsorted(cdf, before + u * totals, side="right")
    pick = np.minimum(np.maximum(pick, starts), starts + sizes - 1)
    lows = np.minimum.reduceat(S, starts)
    chosen_src, chosen_tgt = src[pick], tgt[pick]                         # (D, m)
    rows = np.arange(len(items))[:, None]
    T = t_pair[rows, chosen_src, chosen_tgt].sum(axis=1) / m
    I = rho[rows, chosen_src].sum(axis=1) / m
    L = low[rows, chosen_src].sum(axis=1) / (m * w[:, 3])
    order = np.argsort(chosen_src * n + chosen_tgt, axis=1, kind="stable")
    edges = np.stack([np.take_along_axis(chosen_src, order, axis=1),
                      np.take_along_axis(chosen_tgt, order, axis=1)], axis=2)  # (D, m, 2)
    return [Decision(edges=edges[d], pool_size=int(sizes[d]),
                     terms=Terms(float(S[j]), float(T[d]), float(I[d]), float(L[d])),
                     score_min=float(lows[d]), score_max=float(best[d]))
            for d, j in enumerate(pick)]


class Router:
    """Chooses each round's graph for one debate method."""

    def __init__(self, method: Method, debate: DebateConfig, rng: np.random.Generator):
        self.method = method
        self.n = debate.n_agents
        if method.kind == "fixed":
            self.fixed = fixed_topology(method.name, self.n)
            self.base = None
        elif method.kind == "routed":
            self.fixed = None
            self.base = base_graph(self.n, debate.k, rng, method.router.base_graph)
            self.relabellings = distinct_relabellings(self.base, self.n) \
                if self.n <= ENUMERATE_MAX_N else None
        else:
            raise ValueError(f"method {method.name!r} has no debate rounds to route")

    def batch_item(self, state: RouterState, rng: np.random.Generator):
        """The ``route_batch`` item of this routed debate (None for a fixed topology)."""
        if self.fixed is not None:
            return None
        state = RouterState(state.answers, state.confidences, state.influence, self.base)
        return (state, self.method.router, rng, self.relabellings)

    def choose(self, state: RouterState, rng: np.random.Generator) -> Decision:
        """The graph for the next round given the state after the last one."""
        if self.fixed is not None:
            return Decision(edges=self.fixed)
        state = RouterState(state.answers, state.confidences, state.influence, self.base)
        return route(state, self.method.router, rng, self.relabellings)


def make_router(method: Method, debate: DebateConfig, rng: np.random.Generator) -> Router:
    """The router of ``method`` (fixed topology, random relabelling, PEAR or an ablation);
    a routed method draws its base role graph from ``rng``.  The engine seeds ``rng`` from
    (run seed, question) alone, so every routed method of one question starts from the same
    base graph and PEAR, Random and the ablations differ only in routing (paired)."""
    return Router(method, debate, rng)


def update_influence(influence: Sequence[float], edges: np.ndarray, accepted: Sequence[bool],
                     beta: float) -> np.ndarray:
    """rho_s <- beta rho_s + (1 - beta) a_s with a_s = accepted critiques of s / max(1, d_out(s)).

    ``accepted[i]`` says whether the critique on ``edges[i]`` was accepted.

    >>> update_influence([0.0, 0.0], np.array([[0, 1]]), [True], 0.5).tolist()
    [0.5, 0.0]
    """
    rho = np.asarray(influence, dtype=float)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    n = len(rho)
    d_out = np.bincount(e[:, 0], minlength=n)
    acc = np.bincount(e[:, 0], weights=np.asarray(accepted, dtype=float), minlength=n)
    a = acc / np.maximum(1, d_out)
    return beta * rho + (1 - beta) * a
