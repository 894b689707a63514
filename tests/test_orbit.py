"""Orbit averages (``NAME~orbit``): any router after a fresh uniform relabelling per debate,
equivariant by construction (issue 73)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pear import methods, testing
from pear.catalog.labels import method_label, method_order
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job
from pear.core.graphs import fixed_topology
from pear.core.hashing import debate_seed
from pear.core.methods import lookup, orbit_relabelling
from pear.core.router import RouterState
from pear.sim.backend import SimulatedBackend
from record_factory import arithmetic_questions


def lowest_first(state, rng):
    """Reads the agent index: each agent critiques the next one (not equivariant)."""
    n = state.n
    return np.array([[i, (i + 1) % n] for i in range(n)])


@pytest.fixture
def plugin():
    methods.register("tmp_lowest", lowest_first, in_degree=1, equivariant=False)
    yield "tmp_lowest"
    for name in ("tmp_lowest~orbit", "tmp_lowest"):
        if name in methods.names():
            methods.unregister(name)


@pytest.mark.parametrize("name", ["star", "chain", "ring"])
def test_an_orbit_average_passes_check_router_and_its_router_does_not(name):
    base = lookup(name)
    with pytest.raises(AssertionError, match="not permutation-equivariant"):
        testing.check_router(base.route, in_degree=None)
    avg = lookup(f"{name}~orbit")
    assert avg.equivariant and avg.orbit_of == name and avg.graphs == "free"
    testing.check_router(avg.route, in_degree=None, name=avg.name)
    testing.check_method(avg.name)


def test_a_plugins_orbit_average_passes_with_its_edge_budget(plugin):
    with pytest.raises(AssertionError, match="not permutation-equivariant"):
        testing.check_router(lowest_first, in_degree=1)
    avg = lookup(f"{plugin}~orbit")
    assert avg.in_degree == 1 and avg.origin == "module"
    testing.check_method(avg.name)


def test_with_a_fixed_relabelling_the_orbit_router_is_exactly_equivariant():
    """Given its per-debate relabelling (which moves with the agents), the orbit average's
    choice under a relabelled state is the relabelled choice, draw for draw."""
    route = lookup("star~orbit").route
    rng = np.random.default_rng(3)
    st = RouterState(("a", "b", "a", "c", "b"), (5, 2, 4, 1, 3), (0.0,) * 5,
                     np.zeros((0, 2), dtype=np.int64), k=2, orbit=(3, 0, 4, 1, 2))
    edges = route(st, rng)
    # the router's hub (its agent 0) is agent 1 (orbit[1] == 0)
    assert sorted(map(tuple, edges.tolist())) == sorted(
        [(1, t) for t in (0, 2, 3, 4)] + [(t, 1) for t in (0, 2, 3, 4)])
    for seed in range(5):
        perm = np.random.default_rng(seed).permutation(5)
        moved = route(st.relabelled(perm), rng)
        want = {(int(perm[s]), int(perm[t])) for s, t in edges.tolist()}
        assert {tuple(e) for e in moved.tolist()} == want


def test_an_orbit_debate_keeps_one_recorded_relabelling_and_the_hub_moves_across_questions():
    qs = arithmetic_questions(24)
    eng = Engine(SimulatedBackend({(q.dataset, q.id): q.gold for q in qs}),
                 DebateConfig(rounds=3))
    recs = list(eng.run([Job(q, methods.method("star~orbit"), 0) for q in qs]))
    assert len(recs) == 24 and not eng.failed
    hubs = []
    for r in recs:
        orbit = r["orbit"]
        want = orbit_relabelling(debate_seed(0, "star~orbit", r["dataset"], r["question_id"]), 5)
        assert tuple(orbit) == want
        hub = orbit.index(0)
        star = {(int(np.argsort(orbit)[s]), int(np.argsort(orbit)[t]))
                for s, t in fixed_topology("star", 5).tolist()}
        for rd in r["rounds_data"][1:]:
            assert {tuple(e) for e in rd["edges"]} == star
            assert all(hub in e for e in rd["edges"])
        hubs.append(hub)
    assert len(set(hubs)) == 5  # 24 questions: every agent is a hub somewhere (p > 0.99)
    plain = list(eng.run([Job(q, methods.method("star"), 0) for q in qs[:2]]))
    assert all("orbit" not in r for r in plain)


def test_orbit_names_labels_and_errors():
    assert method_label("star~orbit") == "Star (orbit)"
    assert method_order(["pear", "star~orbit", "cot", "star", "pear~orbit"]) == \
        ["cot", "star", "star~orbit", "pear", "pear~orbit"]
    with pytest.raises(ValueError, match="'cot' has no debate rounds"):
        lookup("cot~orbit")
    with pytest.raises(ValueError, match="unknown method 'nope~orbit'"):
        lookup("nope~orbit")


def test_orbit_runs_validate_and_resume(tmp_path):
    from pear.runs.grid import answer_key, preset
    from pear.runs.runner import run
    from pear.store.validate import validate
    exp = preset("beyond", methods=("star", "star~orbit", "pear~orbit"), datasets=("gsm8k",),
                 seeds=(0,), n_questions=3, rounds=2)
    first = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    checked = validate(tmp_path)
    assert checked.findings.ok, checked.report()
    assert checked.debates == 9
    again = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=False)
    lines = [json.loads(x) for f in tmp_path.rglob("*.jsonl") for x in f.open()]
    assert first.written == 9 and again.written == 0 and again.already_done == 9
    assert len(lines) == 9
    assert {r["method"] for r in lines if "orbit" in r} == {"star~orbit", "pear~orbit"}
