"""The worker split of a simulated grid (issue 36, item 3): disjoint whole (seed, question)
chunks, the records of one process with MATH answers graded in every worker and the fitted
revision model drawing, and each grading process's Math-Verify worker started up front."""
from __future__ import annotations

import gc
import json
import time

from pear.sim.backend import SimulatedBackend
from pear.runs import runner
from pear.runs.grid import answer_key, preset
from pear.runs.jobs import jobs
from pear.store.records import TIMING_FIELDS, read_records
from pear.tasks import mathgrade

EXP = dict(datasets=("gsm8k", "math500"), n_questions=3, seeds=(0, 1), full_datasets=(),
           rounds=2, chunk_questions=1)


def test_chunks_are_whole_question_groups_that_cover_the_grid_once():
    all_jobs = jobs(preset("sim", **EXP))
    chunks = list(runner.question_chunks(all_jobs, 2))
    key = lambda j: (j.seed, j.question.dataset, j.question.id)  # noqa: E731
    groups = [{key(j) for j in c} for c in chunks]
    assert [len(g) for g in groups] == [2, 2, 2, 2, 2, 2]  # 12 (seed, question) groups
    assert all(not (a & b) for i, a in enumerate(groups) for b in groups[i + 1:])  # disjoint
    assert [j for c in chunks for j in c] == all_jobs  # every job once, in grid order
    methods = len(preset("sim", **EXP).methods)
    assert all(len(c) == 2 * methods for c in chunks)  # a question's methods stay together


def test_two_workers_write_one_process_records_with_math_and_the_revision_model(tmp_path):
    exp = preset("sim", **EXP)
    out = {}
    threshold = gc.get_threshold()
    for workers in (1, 2):
        be = SimulatedBackend(answer_key(exp), population="grounded")
        s = runner.run(exp, be, tmp_path / str(workers), progress=False, workers=workers)
        assert s.complete and s.written == len(jobs(exp))
        # the collector runs rarely only while chunks run: as it was afterwards
        assert gc.get_threshold() == threshold and gc.get_freeze_count() == 0
        out[workers] = [{k: v for k, v in r.items() if k not in TIMING_FIELDS}
                        for r in read_records(tmp_path / str(workers))]
    assert out[1] == out[2]
    math = [r for r in out[1] if r["dataset"] == "math500"]
    assert len(math) == len(out[1]) // 2 and any(r["correct"] for r in math)
    assert any(a["canonical"] != r["gold"] for r in math for a in r["rounds_data"][0]["agents"])


def test_prestart_starts_one_worker_that_the_first_call_uses(monkeypatch):
    monkeypatch.setattr(mathgrade, "_POOL", None)
    monkeypatch.setattr(mathgrade, "_VERIFIED", {})
    mathgrade.prestart()
    pool = mathgrade._pool()
    deadline = time.monotonic() + 60
    while not any(w.proc is not None for w in pool.workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = [w.proc for w in pool.workers if w.proc is not None]
    assert len(started) == 1
    time.sleep(0.1)
    assert mathgrade.verify(r"\frac{2}{4}", "0.5") == ("ok", True)
    assert [w.proc for w in pool.workers if w.proc is not None] == started  # no second start
    mathgrade.prestart()  # already started: nothing new
    time.sleep(0.2)
    assert [w.proc for w in pool.workers if w.proc is not None] == started
    mathgrade.shutdown()


def test_workers_get_enough_chunks_to_balance_the_grid_end():
    exp = preset("sim", datasets=("gsm8k", "truthfulqa"), n_questions=20, seeds=(0,),
                 full_datasets=())  # 40 groups; the preset's chunks hold 50
    todo = jobs(exp)
    assert runner._per_chunk(todo, exp.chunk_questions, 1) == 50  # one process: as set
    per = runner._per_chunk(todo, exp.chunk_questions, 2)
    sizes = [len(c) for c in runner.question_chunks(todo, per)]
    assert per == 3 and len(sizes) == 14  # 40 groups in 13 chunks of 3 and one of 1
    assert len(sizes) >= runner.CHUNKS_PER_WORKER * 2 - 2 and sum(sizes) == len(todo)


def test_a_worker_sends_the_line_one_process_writes():
    exp = preset("sim", **{**EXP, "datasets": ("gsm8k",), "seeds": (0,)})
    engine = runner.Engine(SimulatedBackend(answer_key(exp)), exp.debate)
    chunks = list(runner.question_chunks(jobs(exp), 1))
    with runner.chunk_runner(engine, chunks, 1) as ran:
        records = [r for chunk in ran for r in chunk]
    with runner.chunk_runner(engine, chunks, 2, lines=True) as ran:
        lines = [line for chunk in ran for line in chunk]
    assert all(isinstance(x, bytes) and b"\n" not in x for x in lines)
    timeless = lambda r: {k: v for k, v in r.items() if k not in TIMING_FIELDS}  # noqa: E731
    assert [timeless(json.loads(x)) for x in lines] == [
        timeless(json.loads(runner.encode_record(r))) for r in records]
    assert len(lines) == len(jobs(exp))
