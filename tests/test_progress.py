"""Progress in units that move: model calls (each reported as it completes) against the
engine's call budget, and debate-rounds; both reach their totals whether debates stop early,
fail or run to the end.  A run's Progress writes timestamped lines off a terminal, from a
thread of its own, with the rate and ETA of completed calls (the relay through papermill:
tests/test_progress_relay.py)."""
from __future__ import annotations

import io
import re
import time

import pytest

from pear.sim.backend import SimulatedBackend
from pear.core.backend import Completion
from pear.core.config import DebateConfig
from pear.core.engine import Engine, Job, call_budget, debate_rounds
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
                if r.meta.get("phase") == "revision" else c for r, c in zip(requests, out)]


def test_failed_debates_count_the_rounds_they_skip():
    engine = Engine(_FailingRevisions(KEY), DebateConfig(rounds=3), task_for=grading.get)
    records = list(engine.run(JOBS))
    assert {r["method"] for r in records} == {"cot", "cot_sc"}
    assert len(engine.failed) == 8
    assert engine.rounds_done == sum(engine.steps(j) for j in JOBS)


@pytest.mark.parametrize("debate, backend", [
    (DebateConfig(rounds=3), SimulatedBackend), (DebateConfig(rounds=5, stop="consensus"),
                                                 SimulatedBackend),
    (DebateConfig(rounds=3), _FailingRevisions),
    (DebateConfig(n_agents=3, rounds=1, k=1, max_tokens=112), SimulatedBackend)])
def test_calls_done_and_unneeded_reach_the_call_budget(debate, backend):
    engine = Engine(backend(KEY), debate, task_for=grading.get)
    budget = call_budget(JOBS, debate)
    list(engine.run(JOBS))
    assert engine.calls_done == engine.requests > 0
    assert engine.calls_done + engine.calls_unneeded == budget
    if debate.stop == "consensus":  # early stops leave most of the debate rounds unneeded
        assert engine.calls_unneeded > engine.calls_done


def _spy(monkeypatch) -> list:
    bars = []
    real = Progress.__init__

    def spy(self, *args, **kwargs):
        real(self, *args, **kwargs)
        bars.append(self)
    monkeypatch.setattr(Progress, "__init__", spy)
    return bars


def test_a_run_counts_calls_and_debates_to_their_totals(tmp_path, monkeypatch, capsys):
    exp = preset("sim", datasets=("gsm8k",), methods=("cot", "pear"), n_questions=3,
                 seeds=(0,), rounds=2)
    bars = _spy(monkeypatch)
    s = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=True)
    assert s.written == 6
    (bar,) = bars
    assert bar.calls == s.requests and bar.left == 0 and bar.debates == 6
    # 5 initial answers a question (shared by CoT), at most 2 calls an agent in each of the
    # 2 rounds of the 3 PEAR debates
    assert bar.calls_expected == 3 * 5 + 3 * 2 * 5 * 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # lines: stderr is no terminal
    assert f"calls {s.requests}/{s.requests} (100%), debates 6/6" in last and "ETA 0:00:00" in last
    again = run(exp, SimulatedBackend(answer_key(exp)), tmp_path, progress=True)
    assert again.already_done == 6  # resumed: nothing expected of this run
    assert (bars[1].calls_expected, bars[1].debates_expected, bars[1].calls) == (0, 0, 0)


class _Clocked:
    """An engine stand-in: a call completes every ``gap`` seconds."""

    def __init__(self):
        self.phase, self.calls_done, self.calls_unneeded, self.tokens = "round 1: critiques", 0, 0, 0
        self.failed, self.on_progress = [], None

    def complete(self, n, gap):
        for _ in range(n):
            time.sleep(gap)
            self.calls_done += 1
            self.on_progress()


def test_lines_come_from_their_own_thread_while_calls_complete():
    out = io.StringIO()
    bar = Progress(40, 4, stream=out, interval=0.1)
    engine = _Clocked()
    bar.follow(engine)
    engine.complete(30, 0.02)  # 0.6 s of calls
    time.sleep(0.35)  # a pause between phases: lines go on
    bar.counts(4)
    engine.calls_unneeded = 10  # the debates stopped early
    engine.on_progress()
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 7 and "\r" not in out.getvalue()
    got = [re.search(r"calls (\d+)/(\d+) .*ETA ([^,]+),", line).groups() for line in lines]
    calls = [int(c) for c, _, _ in got]
    assert calls == sorted(calls) and calls[-1] == 30
    assert got[-1] == ("30", "30", "0:00:00") and "debates 4/4" in lines[-1]
    mid = next(g for g in got if 10 <= int(g[0]) < 30)  # ETA: the calls left at the rate
    assert mid[2] != "?" and re.fullmatch(r"0:00:0\d", mid[2])
    assert re.match(r"\[\d\d:\d\d:\d\d\] round 1: critiques: calls", lines[0])


def test_a_terminal_gets_a_bar_in_calls():
    class Terminal(io.StringIO):
        def isatty(self):
            return True
    out = Terminal()
    bar = Progress(20, 2, stream=out)
    engine = _Clocked()
    bar.follow(engine)
    engine.complete(20, 0.0)
    bar.close()
    frames = out.getvalue().split("\r")
    assert "20/20" in frames[-1] and "call" in frames[-1] and "round 1: critiques" in frames[-1]


def test_model_calls_move_within_a_phase():
    # simulated agents that take time report each completion: the count moves before
    # generate returns; instant ones are counted a phase at a time
    for latency, expect in ((1e-4, [0, 1, 2]), (0.0, [0, 5])):  # 5: the question's answers
        engine = Engine(SimulatedBackend(KEY, params={"latency_s": latency}),
                        DebateConfig(rounds=1), task_for=grading.get)
        seen = []
        engine.on_progress = lambda: seen.append((engine.phase, engine.calls_done))
        list(engine.run(JOBS[:4]))
        initial = [c for p, c in seen if p == "round 0: initial answers"]
        assert sorted(set(initial))[:3] == expect, latency
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


def test_worker_processes_move_the_calls_before_their_chunks_come_back(tmp_path, monkeypatch):
    """With worker processes, each chunk's calls reach this process's progress while the
    chunk runs (at most every 0.5 s), not only when its records come back; the counts never
    go back and end at the run's calls."""
    import dataclasses

    from pear.sim.population import SimParams
    exp = dataclasses.replace(preset("sim", datasets=("gsm8k",), methods=("pear",),
                                     n_questions=4, seeds=(0,), rounds=2), chunk_questions=2)
    seen: list[tuple[int, int]] = []
    real = Progress._moved

    def spy(self):
        seen.append((self.calls, self.debates))
        real(self)
    monkeypatch.setattr(Progress, "_moved", spy)
    from pear.runs import runner
    monkeypatch.setattr(runner, "CHUNKS_PER_WORKER", 1)  # two chunks of two questions
    be = SimulatedBackend(answer_key(exp), params=SimParams(latency_s=0.05))
    s = run(exp, be, tmp_path, progress=True, workers=2)
    assert s.written == 4
    calls = [c for c, _ in seen]
    assert calls == sorted(calls) and calls[-1] == s.requests
    # calls moved several times before the first chunk's debates came back (before, they
    # moved once, with the whole chunk)
    assert len({c for c, d in seen if d == 0 and c > 0}) >= 3
