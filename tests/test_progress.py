"""Progress in a unit that moves: debate-rounds (round 0 and every debate round of every
debate), with the engine's phase.  Debates advance in lockstep and finish together, so a
per-debate count sits still for most of a run; rounds reach the total whether debates stop
early, fail or run to the end."""
from __future__ import annotations

from pear.backends.simulated import SimulatedBackend
from pear.core.backend import Completion
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job, debate_rounds
from pear.core.methods import method
from pear.runs.grid import answer_key, preset
from pear.runs.progress import Progress
from pear.runs.runner import run
from pear.tasks import benchmarks, grading

QS = benchmarks.load("gsm8k", n=4)
KEY = {("gsm8k", q.id): q.gold for q in QS}
JOBS = [Job(q, method(m), 0) for q in QS for m in ("cot", "cot_sc", "clique", "pear")]


def _follow(engine):
    seen: list[tuple[str, int]] = []
    engine.on_progress = lambda: seen.append((engine.phase, engine.rounds_done))
    return seen


def test_debate_rounds_per_method():
    assert [debate_rounds(j, 3) for j in JOBS[:4]] == [1, 1, 4, 4]
    assert debate_rounds(JOBS[2], 3, first=2) == 2 and debate_rounds(JOBS[0], 3, first=1) == 0


def test_rounds_reach_the_total_and_phases_come_in_order():
    engine = Engine(SimulatedBackend(KEY), DebateConfig(rounds=3), task_for=grading.get)
    seen = _follow(engine)
    records = list(engine.run(JOBS))
    assert len(records) == len(JOBS)
    total = sum(engine.steps(j) for j in JOBS)
    assert total == 4 * (1 + 1 + 4 + 4) and engine.rounds_done == total
    phases = list(dict.fromkeys(p for p, _ in seen))
    assert phases == ["round 0: initial answers", "round 1: critiques", "round 1: revisions",
                      "round 2: critiques", "round 2: revisions", "round 3: critiques",
                      "round 3: revisions"]
    done = [n for _, n in seen]
    assert done == sorted(done) and done[-1] == total
    # the count moves within the run, not only when debates finish at its end
    assert len(set(done)) >= 4


def test_early_stops_count_the_rounds_they_skip():
    engine = Engine(SimulatedBackend(KEY), DebateConfig(rounds=5, stop="consensus"),
                    task_for=grading.get)
    records = list(engine.run(JOBS))
    assert any(r["rounds"] < 5 for r in records if r["method"] == "pear")  # some stopped
    assert engine.rounds_done == sum(engine.steps(j) for j in JOBS)


class _FailingRevisions(SimulatedBackend):
    """Fails every revision request: every debate fails in round 1."""

    def generate(self, requests):
        out = super().generate(requests)
        return [Completion("", finish_reason="error", error="HTTP 503")
                if r.meta.get("phase") == "update" else c for r, c in zip(requests, out)]


def test_failed_debates_count_the_rounds_they_skip():
    engine = Engine(_FailingRevisions(KEY), DebateConfig(rounds=3), task_for=grading.get)
    records = list(engine.run(JOBS))
    assert {r["method"] for r in records} == {"cot", "cot_sc"}
    assert len(engine.failed) == 8
    assert engine.rounds_done == sum(engine.steps(j) for j in JOBS)


def test_a_run_bar_counts_rounds_and_ends_full(tmp_path):
    exp = preset("sim", datasets=("gsm8k",), methods=("cot", "pear"), n_questions=3,
                    seeds=(0,), rounds=2)
    bars = []
    real = Progress.__init__

    def spy(self, total, enabled=True):
        real(self, total, enabled)
        bars.append(self)
    Progress.__init__ = spy
    try:
        s = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=True)
        assert s.written == 6
        (bar,) = bars
        assert bar.bar.total == 3 * 1 + 3 * 3 and bar.bar.n == bar.bar.total
        again = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=True)
        assert again.already_done == 6 and bars[1].bar.n == bars[1].bar.total  # resumed: skipped
    finally:
        Progress.__init__ = real


def test_model_calls_move_within_a_phase():
    # the simulated backend reports each completion: the count moves before generate returns
    engine = Engine(SimulatedBackend(KEY), DebateConfig(rounds=1), task_for=grading.get)
    seen = []
    engine.on_progress = lambda: seen.append((engine.phase, engine.calls_done))
    list(engine.run(JOBS[:4]))
    initial = [c for p, c in seen if p == "round 0: initial answers"]
    assert initial[:3] == [0, 1, 2]  # one step per completed request, not per phase
    assert engine.calls_done == engine.requests
    assert engine.backend.on_completion is None  # the hook is the engine's only while it runs


def test_cache_hits_count_as_calls_done(tmp_path):
    from pear.backends.cache import CachedBackend
    for expect_hits in (False, True):
        be = CachedBackend(SimulatedBackend(KEY), tmp_path / "cache.sqlite")
        engine = Engine(be, DebateConfig(rounds=1), task_for=grading.get)
        ticks = []
        engine.on_progress = lambda: ticks.append(engine.calls_done)
        list(engine.run(JOBS[:4]))
        assert engine.calls_done == engine.requests
        assert (engine.cache_hits == engine.requests) is expect_hits
        assert len(set(ticks)) > 3  # moved request by request, from the cache or not
        be.close()
