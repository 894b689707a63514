"""Theory checks: equivariance, influence monotonicity, term spread, routing lift."""
import numpy as np
import pytest

from pear.core.router import RouterState
from pear.analysis import theory
from pear.core.config import RouterConfig
from pear.core.graphs import base_graph


def _state(kind="in_regular", seed=0):
    return RouterState(("a", "b", "a", "c", "b"), (5, 2, 4, 1, 3), (0.2, 0.0, 0.6, 0.1, 0.3),
                        base_graph(5, 2, np.random.default_rng(seed), kind))


@pytest.mark.parametrize("seed", range(4))
def test_scores_and_choice_distribution_are_equivariant(seed):
    dev = theory.equivariance_deviation(_state(seed=seed), RouterConfig(tau=0.3),
                                        np.random.default_rng(seed), n_perms=6)
    assert dev["score"] < 1e-12 and dev["probability"] < 1e-12


def test_an_agent_index_dependent_score_would_be_caught():
    # a router that favoured agent 0 breaks equivariance: the check must see it
    st = _state()
    import pear.analysis.theory as th
    real = th._scores
    try:
        th._scores = lambda state, cfg, pool: real(state, cfg, pool) + (pool.src == 0).sum(1)
        dev = th.equivariance_deviation(st, RouterConfig(), np.random.default_rng(0), 6)
    finally:
        th._scores = real
    assert dev["score"] > 0.5


@pytest.mark.parametrize("agent", range(5))
def test_influence_derivative_matches_the_closed_form(agent):
    d = theory.influence_derivative(_state(), RouterConfig(tau=0.2), agent)
    assert d["numeric"] <= 1e-9  # more influence never raises an agent's expected out-degree
    assert d["numeric"] == pytest.approx(d["formula"], rel=1e-4, abs=1e-8)


def test_circulant_base_graph_makes_I_and_L_constant_over_the_pool():
    circ = theory.term_spread(_state("circulant"), RouterConfig())
    reg = theory.term_spread(_state("in_regular", seed=3), RouterConfig())
    assert circ["I"] < 1e-12 and circ["L"] < 1e-12
    assert reg["I"] > 0 and reg["L"] > 0


def test_routing_lift_is_the_best_candidate_over_the_pool_mean():
    st = _state()
    lift = theory.routing_lift(st)
    pool = theory.relabelling_pool(st)
    conf = (np.array(st.confidences, float) - 1) / 4
    assert lift["source_confidence"] == pytest.approx(
        conf[pool.src].mean(1).max() - conf[pool.src].mean(1).mean())
    assert 0 < lift["cross_answer"] <= 1
    same = RouterState(("a",) * 5, (3,) * 5, (0.0,) * 5, st.base_edges)
    assert theory.routing_lift(same) == {"source_confidence": 0.0, "cross_answer": 0.0}


def test_states_from_records_follow_rounds():
    from tests.record_factory import make_record
    rec = make_record([["1", "2", "3"], ["1", "1", "3"]], "1", method="pear",
                      critiques={1: [(0, 1, "ACCEPT"), (2, 0, "REJECT"), (1, 2, None)]})
    states = list(theory.states_from_records([rec]))
    assert len(states) == 1
    assert states[0].answers == ("1", "2", "3") and states[0].base_edges.shape == (3, 2)


def test_choice_entropy_falls_from_uniform_as_tau_shrinks():
    st = _state()
    hs = [theory.choice_entropy(st, RouterConfig(tau=t)) for t in (100.0, 0.7, 0.1, 0.0)]
    assert hs[0] == pytest.approx(1.0, abs=1e-3)
    assert hs[0] > hs[1] > hs[2] >= hs[3] >= 0
    assert theory.choice_entropy(st, RouterConfig(alpha_T=0, alpha_I=0, alpha_L=0)) == \
        pytest.approx(1.0)
