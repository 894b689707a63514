"""Router: the paper's formulas, permutation equivariance, the circulant degeneracy, and the
influence penalty's monotonicity (with its analytic derivative)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pear.core.config import RouterConfig
from pear.core.graphs import base_graph, candidate_pool, fixed_topology
from pear.core.router import (RouterState, route, score, score_pool, selection_probabilities,
                         update_influence)

CFG = RouterConfig()


def relabel(edges, perm):
    """Edge ``(s, t)`` renamed ``(perm[s], perm[t])``, sorted."""
    e = np.asarray(perm)[np.asarray(edges)]
    return e[np.lexsort((e[:, 1], e[:, 0]))]


def to_adjacency(edges, n):
    """The boolean ``(n, n)`` adjacency matrix of an edge set."""
    adj = np.zeros((n, n), dtype=bool)
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    adj[e[:, 0], e[:, 1]] = True
    return adj


def to_edges(adj):
    """The ``(m, 2)`` edge array of a boolean adjacency matrix."""
    return np.argwhere(adj).astype(np.int64)


def adjacency(pool):
    """A pool's boolean ``(M, n, n)`` adjacency tensor."""
    adj = np.zeros((len(pool), pool.n, pool.n), dtype=bool)
    adj[np.arange(len(pool))[:, None], pool.src, pool.tgt] = True
    return adj


def test_hand_computed_score():
    # 5 agents; answers, confidences, influence chosen by hand
    answers = ["A", "B", "A", "C", "B"]
    conf = [5, 2, 4, 1, 3]
    rho = [0.5, 0.0, 0.25, 0.0, 1.0]
    edges = [(0, 1), (0, 3), (2, 1), (2, 4), (3, 0), (3, 2), (4, 0), (4, 3), (1, 2), (1, 4)]
    # T: (0,1) A!=B, c0=5>=4, c1=2<=3 -> 1; (0,3) A!=C, 5>=4, 1<=3 -> 1; (2,1) A!=B, 4>=4,
    # 2<=3 -> 1; (2,4) A!=B, 4>=4, 3<=3 -> 1; sources 3 (c=1), 4 (c=3), 1 (c=2) < 4 -> 0.
    T = 4 / 10
    # out-degrees: 0:2, 1:2, 2:2, 3:2, 4:2 -> I = (2*.5 + 2*.25 + 2*1) / 10 = 0.35
    I = 0.35
    # L(s) = max(0, 3 - c_s): L0=0, L1=1, L2=0, L3=2, L4=0 -> sum over edges = 2*1 + 2*2 = 6
    L = 6 / (10 * 2)
    S = 0.4 * T - 0.7 * I - 0.7 * L
    t = score(edges, answers, conf, rho, CFG)
    assert t.T == pytest.approx(T) and t.I == pytest.approx(I) and t.L == pytest.approx(L)
    assert t.score == pytest.approx(S) == pytest.approx(-0.295)  # 0.16 - 0.245 - 0.21


def test_hand_computed_unbalanced_out_degrees():
    answers, conf, rho = ["x", "y", "y"], [4, 3, 5], [0.2, 0.6, 0.0]
    edges = [(0, 1), (0, 2), (1, 0)]
    t = score(edges, answers, conf, rho, CFG)
    # T: (0,1): x!=y, 4>=4, 3<=3 -> 1; (0,2): c2=5>3 -> 0; (1,0): c1=3<4 -> 0
    assert t.T == pytest.approx(1 / 3)
    assert t.I == pytest.approx((2 * 0.2 + 1 * 0.6) / 3)
    assert t.L == pytest.approx((0 + 0 + 0) / 6)


states = st.integers(3, 6).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.sampled_from("abc"), min_size=n, max_size=n),
    st.lists(st.integers(1, 5), min_size=n, max_size=n),
    st.lists(st.floats(0, 1), min_size=n, max_size=n),
    st.permutations(list(range(n))),
    st.integers(0, 2**31 - 1),
))


def _apply(sigma, values):
    out = [None] * len(values)
    for i, v in enumerate(values):
        out[sigma[i]] = v
    return out


@settings(max_examples=60, deadline=None)
@given(states)
def test_score_is_permutation_equivariant(s):
    n, answers, conf, rho, sigma, seed = s
    rng = np.random.default_rng(seed)
    edges = base_graph(n, 2, rng)
    sig = np.array(sigma)
    a = score(edges, answers, conf, rho, CFG)
    b = score(relabel(edges, sig), _apply(sigma, answers), _apply(sigma, conf),
              _apply(sigma, rho), CFG)
    assert a.score == pytest.approx(b.score) and a.T == pytest.approx(b.T)
    assert a.I == pytest.approx(b.I) and a.L == pytest.approx(b.L)


def _choice_distribution(base, answers, conf, rho, cfg, n):
    pool = candidate_pool(base, n, 10**6, np.random.default_rng(0))  # all distinct relabellings
    p = selection_probabilities(score_pool(pool, answers, conf, rho, cfg).score, cfg.tau)
    return {np.packbits(adj).tobytes(): pi for adj, pi in zip(adjacency(pool), p)}


@settings(max_examples=25, deadline=None)
@given(states, st.sampled_from([0.0, 0.05, 0.5]))
def test_choice_distribution_is_relabelled(s, tau):
    n, answers, conf, rho, sigma, seed = s
    cfg = RouterConfig(tau=tau)
    base = base_graph(n, 2, np.random.default_rng(seed))
    sig = np.array(sigma)
    p = _choice_distribution(base, answers, conf, rho, cfg, n)
    q = _choice_distribution(base, _apply(sigma, answers), _apply(sigma, conf),
                             _apply(sigma, rho), cfg, n)
    for key, pi in p.items():
        adj = np.unpackbits(np.frombuffer(key, dtype=np.uint8))[: n * n].reshape(n, n)
        moved = to_adjacency(relabel(to_edges(adj), sig), n)
        assert q[np.packbits(moved).tobytes()] == pytest.approx(pi, abs=1e-12)


def test_route_sampling_matches_selection_probabilities():
    # the empirical choice frequency of route() follows softmax(S / tau)
    n = 4
    base = base_graph(n, 2, np.random.default_rng(3))
    answers, conf, rho = ["a", "b", "a", "c"], [5, 2, 4, 3], [0.9, 0.0, 0.3, 0.1]
    cfg = RouterConfig(tau=0.05, m_max=1000)
    expected = _choice_distribution(base, answers, conf, rho, cfg, n)
    rng = np.random.default_rng(7)
    counts: dict[bytes, int] = {}
    draws = 4000
    state = RouterState(tuple(answers), tuple(conf), tuple(rho), base, config=cfg)
    for _ in range(draws):
        d = route(state, rng)
        key = np.packbits(to_adjacency(d.edges, n)).tobytes()
        counts[key] = counts.get(key, 0) + 1
    for key, p in expected.items():
        assert counts.get(key, 0) / draws == pytest.approx(p, abs=0.03)


def test_circulant_makes_I_and_L_constant_but_in_regular_does_not():
    n, k = 5, 2
    rng = np.random.default_rng(0)
    answers, conf, rho = ["a", "b", "a", "c", "b"], [5, 1, 2, 4, 3], [0.9, 0.1, 0.4, 0.0, 0.7]
    circ = candidate_pool(base_graph(n, k, rng, "circulant"), n, 100, rng)
    t = score_pool(circ, answers, conf, rho, CFG)
    assert np.ptp(t.I) == pytest.approx(0) and np.ptp(t.L) == pytest.approx(0)
    assert np.ptp(t.T) > 0
    irr = candidate_pool(base_graph(n, k, np.random.default_rng(1)), n, 100, rng)
    t2 = score_pool(irr, answers, conf, rho, CFG)
    assert np.ptp(t2.I) > 0 and np.ptp(t2.L) > 0


def test_pool_holds_distinct_relabellings_and_respects_budget():
    n = 5
    base = base_graph(n, 2, np.random.default_rng(0))
    pool = candidate_pool(base, n, 100, np.random.default_rng(0))
    assert adjacency(pool).shape == (100, 5, 5)
    keys = {np.packbits(a).tobytes() for a in adjacency(pool)}
    assert len(keys) == 100
    assert (adjacency(pool).sum(axis=1) == 2).all()  # in-degree k preserved
    full = candidate_pool(base, n, 10**6, np.random.default_rng(0))
    assert len(full) <= 120
    big = candidate_pool(base_graph(16, 2, np.random.default_rng(0)), 16, 1000,
                         np.random.default_rng(0))
    assert len({np.packbits(a).tobytes() for a in adjacency(big)}) == 1000


def test_pool_sampling_is_seeded():
    base = base_graph(5, 2, np.random.default_rng(0))
    a = candidate_pool(base, 5, 50, np.random.default_rng(11))
    b = candidate_pool(base, 5, 50, np.random.default_rng(11))
    c = candidate_pool(base, 5, 50, np.random.default_rng(12))
    assert np.array_equal(adjacency(a), adjacency(b))
    assert not np.array_equal(adjacency(a), adjacency(c))


def _expected_out_degree(pool, j, rho, answers, conf, cfg):
    t = score_pool(pool, answers, conf, rho, cfg)
    p = selection_probabilities(t.score, cfg.tau)
    d = adjacency(pool).sum(axis=2)[:, j]
    return p @ d, p @ d**2 - (p @ d) ** 2


@pytest.mark.parametrize("tau", [0.05, 0.1, 1.0])
@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10**6), st.integers(0, 4), st.floats(0, 1))
def test_influence_penalty_monotone_with_analytic_derivative(tau, seed, j, r0):
    rng = np.random.default_rng(seed)
    n, cfg = 5, RouterConfig(tau=tau)
    pool = candidate_pool(base_graph(n, 2, rng), n, 10**6, rng)
    answers = list(rng.choice(list("abc"), n))
    conf = list(rng.integers(1, 6, n))
    rho = rng.random(n)
    rho[j] = r0
    e0, var = _expected_out_degree(pool, j, rho, answers, conf, cfg)
    h = 1e-6
    rho_up = rho.copy()
    rho_up[j] += h
    e1, _ = _expected_out_degree(pool, j, rho_up, answers, conf, cfg)
    deriv = (e1 - e0) / h
    assert deriv <= 1e-6  # raising j's influence never raises its expected out-degree
    m = n * 2
    assert deriv == pytest.approx(-cfg.alpha_I / (tau * m) * var, rel=1e-3, abs=1e-6)
    rho_big = rho.copy()
    rho_big[j] += 0.5
    assert _expected_out_degree(pool, j, rho_big, answers, conf, cfg)[0] <= e0 + 1e-9


def test_argmax_breaks_ties_uniformly():
    p = selection_probabilities(np.array([1.0, 3.0, 3.0, 2.0, 3.0]), 0.0)
    assert p.tolist() == pytest.approx([0, 1 / 3, 1 / 3, 0, 1 / 3])


def test_random_method_is_uniform_over_the_pool():
    pool = candidate_pool(base_graph(5, 2, np.random.default_rng(0)), 5, 100,
                          np.random.default_rng(0))
    zero = RouterConfig(alpha_T=0, alpha_I=0, alpha_L=0)
    t = score_pool(pool, list("abcab"), [5, 1, 3, 4, 2], [0.3] * 5, zero)
    assert np.allclose(selection_probabilities(t.score, zero.tau), 1 / 100)


def test_influence_update():
    pairs = [(0, True), (0, False), (1, True), (2, True)]  # (source, accepted) per critique
    rho = update_influence([0.4, 0.2, 0.0], pairs, beta=0.5)
    # a0 = 1/2, a1 = 1/1, a2 = 1/1
    assert rho.tolist() == pytest.approx([0.5 * 0.4 + 0.5 * 0.5, 0.5 * 0.2 + 0.5, 0.5])
    # a source that sent nothing only decays; the order of the pairs does not matter
    assert update_influence([0.4, 0.2, 0.0], pairs[::-1], 0.5).tolist() == rho.tolist()
    assert update_influence([0.4, 0.2, 0.0], [], 0.5).tolist() == [0.2, 0.1, 0.0]


@pytest.mark.parametrize("name, n, m", [("clique", 5, 20), ("star", 5, 8), ("chain", 5, 4),
                                        ("ring", 5, 5)])
def test_fixed_topologies(name, n, m):
    e = fixed_topology(name, n)
    assert len(e) == m and len({tuple(x) for x in e.tolist()}) == m
    assert all(s != t for s, t in e.tolist())
    if name == "star":
        assert all(0 in pair for pair in e.tolist())


def test_base_graph_in_degree_and_seed():
    for seed in range(20):
        e = base_graph(7, 3, np.random.default_rng(seed))
        assert np.bincount(e[:, 1], minlength=7).tolist() == [3] * 7
    a = base_graph(7, 3, np.random.default_rng(1))
    assert np.array_equal(a, base_graph(7, 3, np.random.default_rng(1)))
    assert not all(np.array_equal(a, base_graph(7, 3, np.random.default_rng(s)))
                   for s in range(2, 6))


def test_route_batch_equals_sequential_routes():
    from pear.core.methods import method
    from pear.core.graphs import distinct_relabellings
    from pear.core.router import route_batch
    rng = np.random.default_rng(42)
    items_a, items_b = [], []
    for d in range(30):
        n = 5
        base = base_graph(n, 2, rng)
        cfg = method(["pear", "random", "pear_T", "pear_IL"][d % 4],
                     RouterConfig(tau=[0.1, 0.0, 0.5][d % 3])).router
        st_ = RouterState(tuple(rng.choice(list("abc"), n)), tuple(rng.integers(1, 6, n)),
                          tuple(rng.random(n)), base, config=cfg)
        rel = distinct_relabellings(base, n) if d % 2 else None
        items_a.append((st_, np.random.default_rng(d), rel))
        items_b.append((st_, np.random.default_rng(d), rel))
    batch = route_batch(items_a)
    one_by_one = [route(*item) for item in items_b]
    for x, y in zip(batch, one_by_one):
        assert np.array_equal(x.edges, y.edges) and x.pool_size == y.pool_size
        assert x.terms.score == pytest.approx(y.terms.score)
        assert (x.score_min, x.score_max) == pytest.approx((y.score_min, y.score_max))


def test_route_batch_groups_debates_of_different_sizes():
    # debates with different n and edge counts m in one batch: each is scored in its own
    # (n, m) group and gets the decision route() gives it alone, in input order
    from pear.core.graphs import distinct_relabellings
    from pear.core.router import RouteItem, route_batch
    rng = np.random.default_rng(5)
    shapes = [(5, 2), (5, 3), (7, 2), (4, 1), (10, 2), (5, 2), (7, 3)]
    items_a, items_b = [], []
    for d, (n, k) in enumerate(shapes):
        base = base_graph(n, k, rng)
        cfg = RouterConfig(tau=[0.1, 0.0][d % 2], m_max=50)
        st_ = RouterState(tuple(rng.choice(list("abc"), n)), tuple(rng.integers(1, 6, n)),
                          tuple(rng.random(n)), base, config=cfg)
        rel = distinct_relabellings(base, n) if n <= 7 and d % 3 else None
        items_a.append(RouteItem(st_, np.random.default_rng(100 + d), rel))
        items_b.append((st_, np.random.default_rng(100 + d), rel))
    batch = route_batch(items_a)
    alone = [route(*item) for item in items_b]
    assert [len(x.edges) for x in batch] == [n * k for n, k in shapes]
    for x, y in zip(batch, alone):
        assert np.array_equal(x.edges, y.edges) and x.pool_size == y.pool_size
        assert x.terms == y.terms and (x.score_min, x.score_max) == (y.score_min, y.score_max)


def test_chosen_terms_match_the_score_of_the_chosen_edges():
    # the batched path's recorded T~, I~, L~ and S are the paper's score of the graph it chose
    rng = np.random.default_rng(9)
    for d in range(20):
        n = 5 + d % 3
        base = base_graph(n, 2, rng)
        answers, conf, rho = list(rng.choice(list("ab"), n)), list(rng.integers(1, 6, n)), \
            list(rng.random(n))
        dec = route(RouterState(tuple(answers), tuple(conf), tuple(rho), base, config=CFG),
                    np.random.default_rng(d))
        ref = score(dec.edges, answers, conf, rho, CFG)
        assert dec.terms.score == pytest.approx(ref.score, abs=1e-12)
        assert (dec.terms.T, dec.terms.I, dec.terms.L) == pytest.approx((ref.T, ref.I, ref.L))
        assert dec.score_min <= dec.terms.score <= dec.score_max


def test_batched_method_routing_makes_the_one_debate_draws():
    # PEAR declares its batch router in the method table (Method.route_batch); the engine's
    # batched path gives every debate the decision its one-debate router gives it alone
    from pear.core.methods import call_route, lookup, method, pear_route_batch, route_debates
    assert lookup("pear").route_batch is pear_route_batch and lookup("clique").route_batch is None
    rng = np.random.default_rng(3)
    items = []
    for d in range(24):
        m = method(["pear", "random", "pear_TL"][d % 3], RouterConfig(tau=[0.1, 0.0][d % 2]))
        st_ = RouterState(tuple(rng.choice(list("abcd"), 5)), tuple(rng.integers(1, 6, 5)),
                          tuple(rng.random(5)), base_graph(5, 2, rng), config=m.router)
        items.append((m, st_, d))
    batched = route_debates([(m, s, np.random.default_rng(d)) for m, s, d in items])
    alone = [call_route(m, s, np.random.default_rng(d)) for m, s, d in items]
    assert len({x.edges.tobytes() for x in alone}) > 5  # the states route differently
    for x, y in zip(batched, alone):
        assert np.array_equal(x.edges, y.edges) and x.terms == y.terms


debate_states = st.integers(3, 7).flatmap(lambda n: st.tuples(
    st.just(n),
    st.integers(1, n - 1),                                         # k
    st.lists(st.sampled_from("abc"), min_size=n, max_size=n),       # answers
    st.lists(st.integers(1, 5), min_size=n, max_size=n),            # confidences
    st.lists(st.floats(0, 1), min_size=n, max_size=n),              # influence
    st.sampled_from(["pear", "random", "pear_T", "pear_I", "pear_L", "pear_TI", "pear_TL",
                     "pear_IL"]),
    st.sampled_from([0.0, 0.05, 0.1, 1.0]),                        # tau
    st.sampled_from([1, 7, 100]),                                   # m_max
    st.integers(0, 2**32 - 1),                                      # the debate's seed
))


@settings(max_examples=60, deadline=None)
@given(st.lists(debate_states, min_size=1, max_size=8))
def test_batched_routing_equals_the_one_debate_formula(debates):
    # route() is the paper's formula for one debate; route_batch, and the method table's
    # batched routing the engine uses, must make every debate the same draw: same edges, same
    # router record entry, for any mix of sizes, methods, temperatures and budgets
    from pear.core.methods import call_route, method, route_debates
    from pear.core.router import RouteItem, route_batch
    items = []
    for n, k, answers, conf, rho, name, tau, m_max, seed in debates:
        m = method(name, RouterConfig(tau=tau, m_max=m_max))
        base = base_graph(n, k, np.random.default_rng(seed))
        items.append((m, RouterState(tuple(answers), tuple(conf), tuple(rho), base,
                                     config=m.router), seed))
    alone = [route(s, np.random.default_rng(seed)) for _, s, seed in items]
    batch = route_batch([RouteItem(s, np.random.default_rng(seed)) for _, s, seed in items])
    table = route_debates([(m, s, np.random.default_rng(seed)) for m, s, seed in items])
    for (m, s, seed), a in zip(items, alone):
        assert call_route(m, s, np.random.default_rng(seed)).to_record() == a.to_record()
    for a, b, c in zip(alone, batch, table):
        assert a.edges.tolist() == b.edges.tolist() == c.edges.tolist()
        assert a.to_record() == b.to_record() == c.to_record()
    for (_, s, _), a in zip(items, alone):  # the record is the chosen graph's own score
        ref = score(a.edges, s.answers, s.confidences, s.influence, s.config)
        assert a.to_record()["score"] == pytest.approx(ref.score, abs=1e-12)
        assert len(a.edges) == s.n * s.k
