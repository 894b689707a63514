"""The PEAR router: score every candidate graph of the pool, then choose one.

For a state (canonical answers ``y``, confidences ``c`` on 1..5, influence ``rho``) and an
edge set E with m = n k edges, exactly as the paper::

    T(s,t) = [y_s != y_t] [c_s >= tau_src] [c_t <= tau_tgt]       targeted diversity
    T~ = sum_{(s,t) in E} T(s,t) / m
    I~ = sum_s rho_s d_out(s) / m                                   influence balancing
    L(s) = max(0, tau_low + 1 - c_s);  L~ = sum_{(s,t) in E} L(s) / (m tau_low)
    S = alpha_T T~ - alpha_I I~ - alpha_L L~

The choice is softmax(S / tau) over the pool, drawn with the debate's own generator (``tau =
0``: argmax, ties uniform).  One vectorized path (``_terms``) scores one pool or many debates'
pools; ``route`` chooses one debate's graph as the formula reads, ``route_batch`` makes the
same draws for many.  Everything here is permutation-equivariant.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from pear.core.config import RouterConfig
from pear.core.graphs import Pool, candidate_pool, subsample
from pear.core.record import ROUTER_KEYS, in_schema_order

__all__ = ["Terms", "RouterState", "Decision", "score", "score_pool", "selection_probabilities",
           "route", "route_batch", "RouteItem", "update_influence"]


@dataclass(frozen=True)
class Terms:
    """The normalized score terms of one edge set (or arrays of them over a pool)."""

    score: float
    T: float
    I: float
    L: float


@dataclass(frozen=True)
class RouterState:
    """What a router sees after a round (:mod:`pear.core.methods`): per agent (0-indexed; the
    index means nothing) its answer class, confidence and influence; the base role graph, the
    round to route (1..R), k and the run's router settings."""

    answers: tuple[str, ...]
    confidences: tuple[int, ...]
    influence: tuple[float, ...]
    base_edges: np.ndarray
    round: int = 1
    k: int = 0  # the base graph's in-degree; 0: derived from base_edges
    config: RouterConfig = field(default_factory=RouterConfig)
    orbit: tuple[int, ...] | None = None
    """An orbit average's relabelling (agent ``i`` shown as ``orbit[i]``), one per debate;
    None: the orbit average draws one (:func:`pear.core.methods.orbit`)."""

    def __post_init__(self) -> None:
        n = len(self.answers)
        if len(self.confidences) != n or len(self.influence) != n:
            raise ValueError(f"invalid router state: {n} answers, {len(self.confidences)} "
                             f"confidences, {len(self.influence)} influence values; give one "
                             "of each per agent")
        if not self.k and len(self.base_edges) and n:
            object.__setattr__(self, "k", len(self.base_edges) // n)

    @property
    def n(self) -> int:
        return len(self.answers)

    @classmethod
    def after_round(cls, round_record: Mapping[str, Any], base_edges: np.ndarray, *,
                    k: int = 0, config: RouterConfig | None = None) -> "RouterState":
        """The state after a recorded round (a ``rounds_data`` entry), routing the next one."""
        agents = round_record["agents"]
        return cls(tuple(a["canonical"] for a in agents),
                   tuple(int(a["confidence"]) for a in agents),
                   tuple(float(x) for x in round_record["influence"]),
                   np.asarray(base_edges, dtype=np.int64).reshape(-1, 2),
                   round=int(round_record["round"]) + 1, k=k,
                   config=config if config is not None else RouterConfig())

    def relabelled(self, perm: np.ndarray) -> "RouterState":
        """The same state with agent ``i`` renamed ``perm[i]`` (everything moves together).

        >>> s = RouterState(("a", "b", "c"), (5, 1, 3), (0.0, 0.5, 1.0), np.array([[0, 1]]))
        >>> t = s.relabelled(np.array([2, 0, 1]))
        >>> t.answers, t.base_edges.tolist()
        (('b', 'c', 'a'), [[2, 0]])
        """
        pick = np.argsort(perm)  # new agent j is old agent pick[j]
        base = np.asarray(self.base_edges, dtype=np.int64).reshape(-1, 2)
        return RouterState(tuple(self.answers[i] for i in pick),
                           tuple(self.confidences[i] for i in pick),
                           tuple(self.influence[i] for i in pick),
                           perm[base] if len(base) else base, round=self.round, k=self.k,
                           config=self.config,
                           orbit=None if self.orbit is None
                           else tuple(self.orbit[i] for i in pick))


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
        t = self.terms
        return in_schema_order(ROUTER_KEYS, {
            "pool_size": self.pool_size, "score": t.score, "T": t.T, "I": t.I, "L": t.L,
            "score_min": self.score_min, "score_max": self.score_max})


class RouteItem(NamedTuple):
    """One debate to route: its state, its generator and (when known) all distinct
    relabellings of its base graph (saves the enumeration; the same pool)."""

    state: RouterState
    rng: np.random.Generator
    relabellings: Pool | None = None


def _codes(answers: Sequence[str]) -> list[int]:
    """Answers as integer codes (equal answers, equal codes)."""
    seen: dict[str, int] = {}
    return [seen.setdefault(a, len(seen)) for a in answers]


@dataclass(frozen=True)
class _Group:
    """D debates with the same n and m, stacked: per-debate arrays ``(D, n)`` or ``(D,)``,
    their candidates ``(C, m)`` (candidate ``j`` belongs to debate ``owner[j]``)."""

    answer: np.ndarray       # y_i as integer codes, (D, n)
    confidence: np.ndarray   # c_i, (D, n)
    influence: np.ndarray    # rho_i, (D, n)
    alpha_T: np.ndarray      # (D,)
    alpha_I: np.ndarray      # (D,)
    alpha_L: np.ndarray      # (D,)
    tau_src: np.ndarray      # (D,)
    tau_tgt: np.ndarray      # (D,)
    tau_low: np.ndarray      # (D,)
    owner: np.ndarray        # debate of each candidate, (C,)
    src: np.ndarray          # edge sources of each candidate, (C, m)
    tgt: np.ndarray          # edge targets of each candidate, (C, m)
    m: int                   # edges per candidate (n k for relabellings)

    @classmethod
    def stack(cls, states: Sequence[tuple[Sequence[str], Sequence[int], Sequence[float]]],
              cfgs: Sequence[RouterConfig], pools: Sequence[Pool], m: int) -> "_Group":
        """``states`` are (answers, confidences, influence) per debate."""
        w = np.array([(c.alpha_T, c.alpha_I, c.alpha_L, c.tau_src, c.tau_tgt, c.tau_low)
                      for c in cfgs], dtype=float).T
        one = len(pools) == 1
        return cls(answer=np.array([_codes(a) for a, _, _ in states], dtype=np.int64),
                   confidence=np.array([c for _, c, _ in states], dtype=np.int64),
                   influence=np.array([r for _, _, r in states], dtype=float),
                   alpha_T=w[0], alpha_I=w[1], alpha_L=w[2], tau_src=w[3], tau_tgt=w[4],
                   tau_low=w[5],
                   owner=np.zeros(len(pools[0]), dtype=np.int64) if one else
                   np.repeat(np.arange(len(pools)), [len(p) for p in pools]),
                   src=pools[0].src if one else np.concatenate([p.src for p in pools]),
                   tgt=pools[0].tgt if one else np.concatenate([p.tgt for p in pools]), m=m)


def _terms(g: _Group) -> Terms:
    """The paper's score terms of every candidate of ``g`` (``(C,)`` arrays): the router's one
    scoring path, per-edge terms gathered from ``(D, n, n)`` and ``(D, n)`` tables."""
    n, m, own = g.answer.shape[1], g.m, g.owner
    y, c = g.answer, g.confidence                           # y_i, c_i: (D, n)
    T_pair = ((y[:, :, None] != y[:, None, :])              # [y_s != y_t]
              & (c[:, :, None] >= g.tau_src[:, None, None])  # [c_s >= tau_src]
              & (c[:, None, :] <= g.tau_tgt[:, None, None]))  # [c_t <= tau_tgt]: T(s,t), (D, n, n)
    L_src = np.maximum(0, g.tau_low[:, None] + 1 - c)       # L(s) = max(0, tau_low + 1 - c_s)
    at_src = own[:, None] * n + g.src                       # flat (debate, s) per edge, (C, m)
    T = np.take(T_pair.ravel(), at_src * n + g.tgt).sum(axis=1) / m  # T~ = sum_E T(s,t) / m
    I = np.take(g.influence.ravel(), at_src).sum(axis=1) / m        # I~ = sum_s rho_s d_out(s) / m
    L = np.take(L_src.ravel(), at_src).sum(axis=1) \
        / (m * g.tau_low[own])                                      # L~ = sum_E L(s) / (m tau_low)
    S = g.alpha_T[own] * T - g.alpha_I[own] * I - g.alpha_L[own] * L  # a_T T~ - a_I I~ - a_L L~
    return Terms(S, T, I, L)


def _choice_weights(S: np.ndarray, best: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Unnormalised choice weights: exp((S - max S) / tau), for tau = 0 the maximisers."""
    gap = S - best                                          # S - max S <= 0
    soft = tau > 0
    if soft.all():
        return np.exp(gap / tau)                            # softmax(S / tau), unnormalised
    argmax = (np.abs(gap) <= 1e-12).astype(float)           # tau = 0: the maximisers
    if not soft.any():
        return argmax
    return np.where(soft, np.exp(gap / np.where(soft, tau, 1.0)), argmax)


def _single(pool: Pool, answers: Sequence[str], confidences: Sequence[int],
            influence: Sequence[float], cfg: RouterConfig, m: int) -> _Group:
    return _Group.stack([(answers, confidences, influence)], [cfg], [pool], m)


def score_pool(pool: Pool, answers: Sequence[str], confidences: Sequence[int],
               influence: Sequence[float], cfg: RouterConfig) -> Terms:
    """Scores of every candidate of ``pool`` (``(M,)`` arrays)."""
    return _terms(_single(pool, answers, confidences, influence, cfg, pool.src.shape[1]))


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
    terms = score_pool(Pool(e[None, :, 0], e[None, :, 1], len(answers)), answers, confidences,
                       influence, cfg)
    return Terms(*(float(x[0]) for x in (terms.score, terms.T, terms.I, terms.L)))


def selection_probabilities(scores: np.ndarray, tau: float) -> np.ndarray:
    """Choice probabilities over the pool: softmax(S / tau); tau = 0 is uniform over the
    maximisers (argmax with uniform tie-break).

    >>> selection_probabilities(np.array([1.0, 2.0, 2.0]), 0.0).tolist()
    [0.0, 0.5, 0.5]
    """
    s = np.asarray(scores, dtype=float)
    w = _choice_weights(s, s.max(), np.asarray(float(tau)))
    return w / w.sum()


def route(state: RouterState, rng: np.random.Generator,
          relabellings: Pool | None = None) -> Decision:
    """One debate's graph as the paper states it: the pool of relabellings, each one's score
    S, softmax(S / tau), one draw with ``rng`` (:func:`route_batch`: the same for many).
    ``relabellings`` (all of them, when known) saves the enumeration."""
    cfg = state.config
    pool = _draw_pool(state, rng, relabellings)                      # pool of relabellings
    terms = score_pool(pool, state.answers, state.confidences,       # S = a_T T~ - a_I I~
                       state.influence, cfg)                         #     - a_L L~ per candidate
    p = selection_probabilities(terms.score, cfg.tau)                # softmax(S / tau)
    pick = min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")),
               len(p) - 1)                                           # one draw (inverse CDF)
    edges = np.stack([pool.src[pick], pool.tgt[pick]], axis=1)
    edges = edges[np.argsort(edges[:, 0] * state.n + edges[:, 1], kind="stable")]
    return Decision(edges=edges, pool_size=len(p),
                    terms=Terms(float(terms.score[pick]), float(terms.T[pick]),
                                float(terms.I[pick]), float(terms.L[pick])),
                    score_min=float(terms.score.min()), score_max=float(terms.score.max()))


def _draw_pool(state: RouterState, rng: np.random.Generator, relabellings: Pool | None
               ) -> Pool:
    if relabellings is not None:
        return subsample(relabellings, state.config.m_max, rng)
    return candidate_pool(state.base_edges, state.n, state.config.m_max, rng)


def route_batch(items: Sequence[RouteItem | tuple]) -> list[Decision]:
    """Route many debates at once (:class:`RouteItem` or 3-tuples): each draws its pool and
    one uniform from its own generator; groups of equal (n, m) are scored in one pass.  Each
    gets the decision it gets alone (but a uniform within float rounding of a boundary)."""
    items = [RouteItem(*it) for it in items]
    pools = [_draw_pool(it.state, it.rng, it.relabellings) for it in items]
    u = np.array([it.rng.random() for it in items])  # each debate's own draw, after its pool
    groups: dict[tuple[int, int], list[int]] = {}
    for d, (it, pool) in enumerate(zip(items, pools)):
        groups.setdefault((it.state.n, pool.src.shape[1]), []).append(d)
    out: list[Decision | None] = [None] * len(items)
    for (_, m), members in groups.items():
        g = _Group.stack([(items[d].state.answers, items[d].state.confidences,
                           items[d].state.influence) for d in members],
                         [items[d].state.config for d in members], [pools[d] for d in members],
                         m)
        tau = np.array([items[d].state.config.tau for d in members], dtype=float)
        for d, decision in zip(members, _choose(g, _terms(g), tau, u[members])):
            out[d] = decision
    return out  # type: ignore[return-value]


def _choose(g: _Group, terms: Terms, tau: np.ndarray, u: np.ndarray) -> list[Decision]:
    """Per debate of ``g``, the candidate drawn from softmax(S / tau) with uniform ``u``."""
    S, own, n = terms.score, g.owner, g.answer.shape[1]
    sizes = np.bincount(own, minlength=len(u))                     # M per debate
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])          # first candidate per debate
    best = np.maximum.reduceat(S, starts)                          # max S per debate
    w = _choice_weights(S, best[own], tau[own])                    # unnormalised softmax(S / tau)
    cdf = np.cumsum(w)                                             # one cumsum over all debates
    before = np.concatenate([[0.0], cdf[:-1]])[starts]             # mass of earlier debates
    total = np.add.reduceat(w, starts)                             # mass per debate
    pick = np.searchsorted(cdf, before + u * total, side="right")  # inverse-CDF draw
    pick = np.clip(pick, starts, starts + sizes - 1)
    lows = np.minimum.reduceat(S, starts)
    src, tgt = g.src[pick], g.tgt[pick]                            # chosen edges, (D, m)
    order = np.argsort(src * n + tgt, axis=1, kind="stable")       # edges sorted (source, target)
    edges = np.stack([np.take_along_axis(src, order, axis=1),
                      np.take_along_axis(tgt, order, axis=1)], axis=2)
    return [Decision(edges=edges[d], pool_size=int(sizes[d]),
                     terms=Terms(float(S[j]), float(terms.T[j]), float(terms.I[j]),
                                 float(terms.L[j])),
                     score_min=float(lows[d]), score_max=float(best[d]))
            for d, j in enumerate(pick)]


def update_influence(influence: Sequence[float], decisions: Iterable[tuple[int, bool]],
                     beta: float) -> np.ndarray:
    """rho_s <- beta rho_s + (1 - beta) a_s with a_s = accepted critiques of s / max(1, d_out(s)).

    ``decisions`` holds one ``(source, accepted)`` pair per critique sent, in any order: only
    the counts per source enter (integers, so the result does not depend on the order).

    >>> update_influence([0.0, 0.0], [(0, True)], 0.5).tolist()
    [0.5, 0.0]
    >>> update_influence([0.2, 0.0], [(1, False), (0, True), (0, False)], 0.5).tolist()
    [0.35, 0.0]
    """
    rho = np.asarray(influence, dtype=float)
    n = len(rho)
    sent = np.zeros(n, dtype=np.int64)
    kept = np.zeros(n, dtype=np.int64)
    for source, accepted in decisions:
        sent[source] += 1
        kept[source] += bool(accepted)
    return beta * rho + (1 - beta) * (kept / np.maximum(1, sent))
