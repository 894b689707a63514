"""The one run loop (pear.runs.runner.recording) under a crash, Engine.branch's round check,
and the influence update's independence of the order of its (source, accepted) pairs."""
from types import SimpleNamespace

import numpy as np
import pytest

from pear.core.config import DebateConfig
from pear.core.engine import Engine
from pear.runs.branch import check, plan, write
from pear.runs.grid import answer_key, preset
from pear.runs.runner import run
from pear.sim.backend import SimulatedBackend
from pear.store.manifest import read as read_manifest
from pear.store.records import read_records
from pear.store.validate import validate


class _Crashing(SimulatedBackend):
    """The simulated agents, until their ``crash_at``-th generate call raises."""

    crash_at = 0

    def generate(self, requests):
        self.calls_made = getattr(self, "calls_made", 0) + 1
        if self.calls_made == self.crash_at:
            raise RuntimeError("backend died")
        return super().generate(requests)


def test_a_branch_killed_midway_keeps_its_cost_and_records(tmp_path):
    exp = preset("sim", datasets=("gsm8k",), methods=("random",), seeds=(0,), n_questions=6,
                 full_datasets=(), rounds=3, chunk_questions=1)
    parent = tmp_path / "parent"
    run(exp, SimulatedBackend(answer_key(exp)), parent, progress=False)
    out = tmp_path / "b"
    crashing = _Crashing(answer_key(exp))
    crashing.crash_at = 9  # a chunk (one branch: rounds 2 and 3) is 4 generate calls
    with pytest.raises(RuntimeError, match="backend died"):
        write(plan(check(parent, 1, ["pear"]), 1, ["pear"], out, backend=crashing),
              progress=False)
    man = read_manifest(out)
    attempt = man["attempts"][-1]
    recs = read_records(out)
    assert len(recs) == 2 and attempt["debates"] == 2  # the two finished chunks, whole
    assert attempt["ended_at"] is not None and attempt["calls"] == sum(r["calls"] for r in recs) > 0
    assert man["compute"]["calls"] == attempt["calls"] and man["finished_at"] is None
    assert validate(out).findings.ok
    # resumed: the rest is written, nothing twice, and the run is finished
    s = write(plan(check(parent, 1, ["pear"]), 1, ["pear"], out,
                   backend=SimulatedBackend(answer_key(exp))), progress=False)
    assert (s.written, s.already_done) == (4, 2)
    man = read_manifest(out)
    assert len({r["debate_id"] for r in read_records(out)}) == 6
    assert man["finished_at"] is not None and man["complete"] is True
    assert [a["debates"] for a in man["attempts"]] == [2, 4]
    assert man["compute"]["calls"] == sum(r["calls"] for r in read_records(out))


@pytest.mark.parametrize("bad", [3, 7, -1])
def test_branching_after_a_round_outside_the_debate_is_one_error(bad):
    engine = Engine(SimulatedBackend({}), DebateConfig(rounds=3))
    with pytest.raises(ValueError, match=rf"from_round={bad}: the debate has 3 rounds"):
        engine.branch([], bad)


def test_the_influence_update_does_not_depend_on_the_order_of_its_pairs():
    engine = Engine(SimulatedBackend({}), DebateConfig(n_agents=5))
    rng = np.random.default_rng(0)
    rho = rng.random(5)
    pairs = [(int(s), bool(a)) for s, a in zip(rng.integers(0, 5, 12), rng.random(12) < 0.5)]

    def updated(order):
        d = SimpleNamespace(failed=None, influence=rho.copy(), job=SimpleNamespace(
            method=SimpleNamespace(router=SimpleNamespace(beta=0.37))))
        engine._update_influence([d], [order])
        return d.influence.tolist()

    want = updated(pairs)
    for seed in range(20):
        order = [pairs[i] for i in np.random.default_rng(seed).permutation(len(pairs))]
        assert updated(order) == want
    # each source moves toward the share of its critiques that were accepted
    for s in range(5):
        mine = [a for src, a in pairs if src == s]
        share = sum(mine) / max(1, len(mine))
        assert want[s] == pytest.approx(0.37 * rho[s] + 0.63 * share)
