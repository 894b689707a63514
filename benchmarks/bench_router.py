"""Routing decisions per second: the vectorized router vs a straightforward pure-Python loop.

Prints decisions/s at n=5 (M=100) and n=16 (M=1000) and the speed-up (goal >= 20x).
Both paths score the same pool and choose with the same rule; the pool draw is included
in neither timing (it is shared work), so the ratio isolates scoring + choice.
"""
from __future__ import annotations

import math
import time

import numpy as np

from pear.core.config import RouterConfig
from pear.core.graphs import base_graph, candidate_pool
from pear.core.router import score_pool, selection_probabilities


def python_loop(pool_edges, answers, conf, rho, cfg, rng):
    """Score every candidate edge list with plain Python, then softmax-sample one."""
    scores = []
    for edges in pool_edges:
        m = len(edges)
        t = i = l = 0.0
        for s, tgt in edges:
            if answers[s] != answers[tgt] and conf[s] >= cfg.tau_src and conf[tgt] <= cfg.tau_tgt:
                t += 1
            i += rho[s]
            l += max(0, cfg.tau_low + 1 - conf[s])
        scores.append(cfg.alpha_T * t / m - cfg.alpha_I * i / m - cfg.alpha_L * l / (m * cfg.tau_low))
    top = max(scores)
    w = [math.exp((s - top) / cfg.tau) for s in scores]
    z = sum(w)
    u, acc = rng.random() * z, 0.0
    for k, wk in enumerate(w):
        acc += wk
        if acc >= u:
            return k
    return len(w) - 1


def vectorized(pool, answers, conf, rho, cfg, rng):
    p = selection_probabilities(score_pool(pool, answers, conf, rho, cfg).score, cfg.tau)
    cdf = np.cumsum(p)
    return int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))


def bench(n: int, m_max: int, reps: int) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    cfg = RouterConfig(m_max=m_max)
    pool = candidate_pool(base_graph(n, 2, rng), n, m_max, rng)
    pool_edges = [list(zip(pool.src[i].tolist(), pool.tgt[i].tolist())) for i in range(len(pool))]
    answers = [str(x) for x in rng.integers(0, 3, n)]
    conf = [int(x) for x in rng.integers(1, 6, n)]
    rho = [float(x) for x in rng.random(n)]
    out = []
    for fn, arg in ((vectorized, pool), (python_loop, pool_edges)):
        r = np.random.default_rng(1)
        t0 = time.perf_counter()
        for _ in range(reps):
            fn(arg, answers, conf, rho, cfg, r)
        out.append(reps / (time.perf_counter() - t0))
    return out[0], out[1]


def bench_batch(n: int, m_max: int, debates: int, reps: int) -> float:
    """Decisions/s of ``route_batch`` over ``debates`` debates in lockstep (the engine's
    path) on pools drawn beforehand, i.e. the same work as the loop: scoring + choice."""
    from pear.core.router import RouterState, route_batch
    rng = np.random.default_rng(0)
    cfg = RouterConfig(m_max=m_max)
    items = []
    for _ in range(debates):
        base = base_graph(n, 2, rng)
        rel = candidate_pool(base, n, m_max, rng)  # pre-drawn: no pool draw is timed
        st = RouterState(tuple(str(x) for x in rng.integers(0, 3, n)),
                         tuple(int(x) for x in rng.integers(1, 6, n)),
                         tuple(float(x) for x in rng.random(n)), base, config=cfg)
        items.append((st, np.random.default_rng(len(items)), rel))
    t0 = time.perf_counter()
    for _ in range(reps):
        route_batch(items)
    return reps * debates / (time.perf_counter() - t0)


if __name__ == "__main__":
    for n, m, reps, debates in ((5, 100, 3000, 200), (16, 1000, 300, 20)):
        vec, loop = bench(n, m, reps)
        batched = bench_batch(n, m, debates, max(3, reps // debates))
        print(f"n={n:2d} M={m:4d}: python loop {loop:8.0f} decisions/s | vectorized, one "
              f"debate {vec:8.0f}/s ({vec / loop:5.1f}x) | batched over {debates} debates "
              f"(engine path) {batched:8.0f}/s ({batched / loop:5.1f}x)")
