"""Router conformance checks: is a router fit to run under the study's protocol?

:func:`check_router` runs a router (``route(state, rng) -> edges``, see :mod:`pear.methods`)
on random states and on states shaped like recorded debate rounds (:data:`RECORDED_STATES`,
or states read from records with :func:`states_from_records`) and raises ``AssertionError``
naming the first property it violates:

1. **valid edges**: an int ``(m, 2)`` array, agents in range, no self-loops, no duplicates;
2. **edge budget**: every target hears exactly the declared number of sources (``k``, the base
   graph's in-degree, by default; ``in_degree=None`` declares none);
3. **determinism under a seed**: the same state and a generator with the same seed give the
   same edges, whatever ran in between (no global RNG, clock or hidden state);
4. **permutation equivariance**: relabelling the agents relabels the distribution of edges.
   Each edge's frequency over many seeded draws is compared with its relabelled edge's; a
   router that reads the agent index (lowest index first, agent 1 as hub) fails with a
   message saying so.  The study's Star, Chain and Ring and index-grouped routers declare
   ``equivariant=False``.

:func:`check_method` checks a registered method with what it declared.

>>> from pear.methods import pear_route
>>> check_router(pear_route)          # the PEAR router passes
>>> check_method("static")
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from pear.core.config import RouterConfig
from pear.core.graphs import base_graph
from pear.core.methods import check_edges, lookup as spec, method
from pear.core.router import Decision, RouterState
from pear.parallel import fork_map

__all__ = ["check_router", "check_method", "check_methods", "random_states", "recorded_states",
           "states_from_records", "RECORDED_STATES"]

RECORDED_STATES: tuple[tuple[tuple[str, ...], tuple[int, ...], tuple[float, ...]], ...] = (
    (("a", "a", "a", "a", "a"), (4, 4, 5, 4, 3), (0.0,) * 5),          # consensus, round 1
    (("a", "a", "a", "a", "b"), (4, 3, 4, 4, 5), (0.0,) * 5),          # one confident dissenter
    (("a", "b", "a", "b", "c"), (5, 4, 2, 3, 1), (0.5, 0.0, 0.25, 0.5, 0.0)),
    (("a", "a", "b", "b", "b"), (3, 3, 3, 3, 3), (0.25, 0.25, 0.25, 0.25, 0.25)),  # ties
    (("a", "b", "c", "d", "e"), (1, 2, 1, 2, 1), (0.0, 0.5, 0.0, 0.0, 0.75)),  # all low
    (("a", "", "a", "b", "a"), (5, 1, 5, 2, 4), (0.75, 0.0, 0.5, 0.0, 0.25)),  # a parse failure
)
"""(answers, confidences, influence) of n=5 agents as recorded debates show them: consensus,
a lone confident dissenter, three-way splits, all-equal ties, all low confidence, an empty
answer (a parse failure)."""


def _state(answers: Sequence[str], confidences: Sequence[int], influence: Sequence[float],
           k: int, rng: np.random.Generator, round_: int, config: RouterConfig) -> RouterState:
    n = len(answers)
    return RouterState(tuple(answers), tuple(int(c) for c in confidences),
                       tuple(float(x) for x in influence), base_graph(n, k, rng), round=round_,
                       k=k, config=config)


def random_states(count: int = 6, *, n: int = 5, k: int = 2, seed: int = 0,
                  config: RouterConfig | None = None) -> list[RouterState]:
    """``count`` random states: answers from a pool of 3 classes (so ties and splits are
    common), confidences 1..5, influence in [0, 1], a seeded base graph, rounds 1..4."""
    rng = np.random.default_rng(seed)
    cfg = config or RouterConfig()
    return [_state([str(x) for x in rng.integers(0, 3, n)], rng.integers(1, 6, n),
                   np.round(rng.random(n), 2), k, rng, 1 + i % 4, cfg) for i in range(count)]


def recorded_states(*, k: int = 2, seed: int = 0,
                    config: RouterConfig | None = None) -> list[RouterState]:
    """:data:`RECORDED_STATES` as router states (seeded base graphs, rounds 1..)."""
    rng = np.random.default_rng(seed)
    cfg = config or RouterConfig()
    return [_state(a, c, i, k, rng, 1 + j % 4, cfg)
            for j, (a, c, i) in enumerate(RECORDED_STATES)]


def states_from_records(records: Iterable[Mapping[str, Any]], *, k: int = 2, seed: int = 0,
                        limit: int = 20) -> list[RouterState]:
    """The states after each non-final round of debate records (at most ``limit``): what a
    router of the recorded runs saw, with a seeded base graph of in-degree ``k``."""
    rng = np.random.default_rng(seed)
    out: list[RouterState] = []
    for rec in records:
        for rd in rec.get("rounds_data", [])[:-1]:
            agents = rd["agents"]
            if len(agents) < 2 or len(out) >= limit:
                continue
            out.append(RouterState.after_round(rd, base_graph(len(agents), min(k, len(agents) - 1),
                                                              rng)))
    return out


def _edges(route: Callable[..., Any], state: RouterState, seed: int,
           params: Mapping[str, Any], who: str) -> np.ndarray:
    out = route(state, np.random.default_rng(seed), **params)
    if isinstance(out, Decision):
        out = out.edges
    try:
        return check_edges(out, state.n, who)
    except ValueError as err:
        raise AssertionError(f"invalid edges: {err} (state: answers {state.answers}, "
                             f"confidences {state.confidences})") from None


def _budget(edges: np.ndarray, state: RouterState, in_degree: Any, who: str) -> None:
    if in_degree is None:
        return
    want = state.k if in_degree == "k" else int(in_degree)
    got = np.bincount(edges[:, 1], minlength=state.n) if len(edges) else np.zeros(state.n, int)
    bad = np.flatnonzero(got != want)
    if len(bad):
        t = int(bad[0])
        raise AssertionError(f"edge budget broken: {who} gives target {t} {int(got[t])} "
                             f"sources, but declares in-degree {want} per target "
                             f"({'k' if in_degree == 'k' else 'declared'}); declare "
                             "in_degree=None if the router has no fixed budget")


def check_router(route: Callable[..., Any], *, in_degree: int | str | None = "k",
                 equivariant: bool = True, params: Mapping[str, Any] | None = None,
                 states: Sequence[RouterState] | None = None, n: int = 5, k: int = 2,
                 samples: int = 200, tolerance: float = 0.25, seed: int = 0,
                 config: RouterConfig | None = None, name: str = "") -> None:
    """Check ``route`` on ``states`` (default: :func:`random_states` and
    :func:`recorded_states`); raise ``AssertionError`` naming the violated property.

    ``in_degree``: the declared edge budget (``"k"``, an integer, or None); ``equivariant``:
    whether to test permutation equivariance, on ``samples`` seeded draws per state (an
    edge's frequency may differ from its relabelled edge's by at most ``tolerance``, or 4.5
    standard errors of that difference when fewer samples make it wider);
    ``params`` are passed to ``route`` as keyword arguments.
    """
    who = name or getattr(route, "__name__", "router")
    kw = dict(params or {})
    if states is None:
        states = random_states(6, n=n, k=k, seed=seed, config=config) + \
            (recorded_states(k=k, seed=seed, config=config) if n == 5 else [])
    if not states:
        raise ValueError("check_router needs at least one state")
    draws = np.random.default_rng(seed + 1)
    for i, st in enumerate(states):
        s0 = 1000 * i + seed
        first = _edges(route, st, s0, kw, who)
        _budget(first, st, in_degree, who)
        other = states[(i + 1) % len(states)]
        _edges(route, other, s0 + 7, kw, who)  # something in between
        again = _edges(route, st, s0, kw, who)
        if first.shape != again.shape or not np.array_equal(first, again):
            raise AssertionError(f"not deterministic under a seed: {who} gave different edges "
                                 f"for the same state and a generator seeded {s0} "
                                 f"({first.tolist()} then {again.tolist()}); draw every "
                                 "random choice from the rng argument (no global RNG, clock "
                                 "or state kept between calls)")
        if not equivariant:
            continue
        perm = draws.permutation(st.n)
        moved = st.relabelled(perm)
        a = np.zeros((st.n, st.n))
        b = np.zeros((st.n, st.n))
        fixed_output = all(np.array_equal(first, _edges(route, st, s0 + j, kw, who))
                           for j in range(1, 4))
        count = 1 if fixed_output else samples
        for j in range(count):
            e = _edges(route, st, s0 + j, kw, who)
            _budget(e, st, in_degree, who)
            a[e[:, 0], e[:, 1]] += 1
            f = _edges(route, moved, s0 + j, kw, who)
            _budget(f, moved, in_degree, who)
            b[f[:, 0], f[:, 1]] += 1
        a /= count
        b = b[np.ix_(perm, perm)] / count  # b[s, t]: frequency of (perm s, perm t) in moved
        gap = np.abs(a - b)
        s, t = np.unravel_index(int(np.argmax(gap)), gap.shape)
        limit = tolerance if count == 1 else max(tolerance, 4.5 * float(np.sqrt(0.5 / count)))
        if gap[s, t] > limit:  # 4.5 standard errors of a difference of two frequencies
            raise AssertionError(
                f"not permutation-equivariant: relabelling the agents by {perm.tolist()} "
                f"changed {who}'s edge distribution: edge ({s}, {t}) was chosen in "
                f"{a[s, t]:.0%} of draws, its relabelled edge ({int(perm[s])}, "
                f"{int(perm[t])}) in {b[s, t]:.0%} (state: answers {st.answers}, "
                f"confidences {st.confidences}).  The router seems to read the agent index "
                "(e.g. lowest index first, or a fixed hub); rank agents by what the state "
                "says of them and break ties with rng, or register it with "
                "equivariant=False")


def check_method(name: str, **options: Any) -> None:
    """:func:`check_router` on the registered method ``name`` with what it declared (its
    in-degree, equivariance and parameters; its router settings in the states).  Methods
    without debate rounds (CoT, CoT-SC) have nothing to check."""
    s = spec(name)
    if s.route is None:
        return
    m = method(name)
    check_router(s.route, in_degree=s.in_degree, equivariant=s.equivariant,
                 params={k: v for k, v in m.params if _takes(s.route, k)},
                 config=m.router, name=name, **options)


def check_methods(names: Sequence[str], workers: int | None = None) -> None:
    """:func:`check_method` of every method of ``names``, ``workers`` at a time (default one
    per core) in forked processes, so plug-ins registered here are checked too; the first
    method in ``names`` that fails raises its error."""
    for _ in fork_map(check_method, list(names), workers or None):
        pass


def _takes(fn: Callable[..., Any], key: str) -> bool:
    import inspect
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind is p.VAR_KEYWORD or p.name == key for p in ps)
