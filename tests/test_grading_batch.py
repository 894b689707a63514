"""Grading within a run: judgements memoized, Math-Verify asked in pipelined batches, with the
same results as one call at a time (issue 36, item 2)."""
from __future__ import annotations

import time

import pytest

from pear.tasks import grading as tasks, mathgrade
from pear.tasks.benchmarks import Question
from pear.tasks.grading import Grade


def question(dataset: str, gold: str, n_options: int | None = None) -> Question:
    choices = None if n_options is None else tuple(f"option {i}" for i in range(n_options))
    return Question(id="t", dataset=dataset, question="q", choices=choices, gold=gold,
                    gold_raw=gold, permutation=None if choices is None else
                    tuple(range(n_options or 0)), meta={})


@pytest.fixture
def fresh_caches(monkeypatch):
    """Empty Math-Verify result caches (restored after the test) and a count of round trips."""
    monkeypatch.setattr(mathgrade, "_EXTRACTED", {})
    monkeypatch.setattr(mathgrade, "_VERIFIED", {})
    trips: list[int] = []
    real = mathgrade._Pool.call_many

    def counted(self, requests, timeout_s):
        trips.append(len(requests))
        return real(self, requests, timeout_s)

    monkeypatch.setattr(mathgrade._Pool, "call_many", counted)
    return trips


@pytest.mark.parametrize("dataset,gold,n,answers", [
    ("gsm8k", "18", None, ["18", "$18.00", "17", "", "18 dollars"]),
    ("mmlu_pro", "B", 4, ["(B)", "Answer: C", "b", "E", ""]),
    ("math500", r"\frac12", None, ["0.5", r"\frac{1}{2}", "2", "", r"\dfrac12"]),
])
def test_judge_is_memoized_on_answers_and_gold(monkeypatch, dataset, gold, n, answers) -> None:
    task = tasks.get(dataset)
    calls: list[tuple[str, ...]] = []
    real = type(task)._judge

    def counted(self, a, q):
        calls.append(tuple(a))
        return real(self, a, q)

    monkeypatch.setattr(type(task), "_judge", counted)
    monkeypatch.setattr(task, "_memo", {}, raising=False)
    q = question(dataset, gold, n)
    first = task.judge(answers, q)
    assert task.judge(list(answers), q) is first and calls == [tuple(answers)]
    assert first == real(task, answers, q)  # the memo holds what the grader says
    other = question(dataset, "2" if dataset != "mmlu_pro" else "C", n)
    assert task.judge(answers, other) != first and len(calls) == 2  # another gold: asked again
    assert first.correct[0] is True and first.grades[3] == Grade(False, parse_failure=True)


def test_math_judge_asks_math_verify_in_two_round_trips(fresh_caches) -> None:
    task = tasks.MathTask("math500")
    q = question("math500", r"\frac{3}{4}")
    answers = ["0.75", r"\frac{6}{8}", "3/4", "7", r"x = \frac34", "", "0.75"]
    judged = task.judge(answers, q)
    assert len(fresh_caches) == 2  # the readings, then every comparison and grade at once
    assert fresh_caches[0] == 5  # five distinct readable inputs
    assert judged.correct == (True, True, True, False, True, False, True)
    assert judged.classes[0] == judged.classes[1] == judged.classes[2] == judged.classes[6]
    assert judged.classes[3] == "7" and judged.classes[5] == ""
    # one call at a time (no batch) gives the same judgement
    mathgrade._EXTRACTED.clear()
    mathgrade._VERIFIED.clear()
    monkey_task = tasks.MathTask("math500")
    monkey_task._prefetch = lambda *a: None  # type: ignore[method-assign]
    before = len(fresh_caches)
    assert monkey_task._judge(answers, q) == judged
    assert len(fresh_caches) - before > 2  # unbatched: one round trip per call


def test_judge_many_asks_math_verify_twice_for_a_whole_phase(fresh_caches) -> None:
    """One phase of several debates on several questions: two round trips in all, the same
    judgements as one question at a time, memoized ones not asked again."""
    batch = [(["0.75", r"\frac{6}{8}", "7"], question("math500", r"\frac{3}{4}")),
             (["2", r"\sqrt{4}", ""], question("math500", "2")),
             (["x = 5", "5", r"\text{five}"], question("math500", "5")),
             (["0.75", r"\frac{6}{8}", "7"], question("math500", r"\frac{3}{4}"))]
    task = tasks.MathTask("math500")
    judged = task.judge_many(batch)
    assert len(fresh_caches) == 2  # the readings of all, then every comparison and grade
    assert [j.correct for j in judged] == [(True, True, False), (True, True, False),
                                           (True, True, False), (True, True, False)]
    assert judged[0] is judged[3] and judged[2].classes[0] == judged[2].classes[1]
    assert task.judge_many(batch[:2]) == judged[:2] and len(fresh_caches) == 2  # memoized
    mathgrade._EXTRACTED.clear()
    mathgrade._VERIFIED.clear()
    alone = tasks.MathTask("math500")
    assert [alone.judge(a, q) for a, q in batch] == judged
    assert len(fresh_caches) == 2 + 2 * 3  # one question at a time: two round trips each


def test_batched_calls_equal_single_calls(fresh_caches) -> None:
    pairs = [(r"\frac12", "0.5"), ("1234", "1, 234"), (r"\sqrt{2}", r"2^{1/2}"), ("x", ""),
             ("", "3"), (r"(1, 2)", r"(2, 1)"), ("Evelyn", r"\text{Evelyn}")]
    texts = [r"\boxed{(2,2)} and \boxed{(6,2)}", "no answer here", "", "The answer is 34."]
    batched_v = mathgrade.verify_all(pairs)
    batched_e = mathgrade.extract_all(texts)
    assert fresh_caches == [5, 3]  # empty inputs never reach the worker
    mathgrade._EXTRACTED.clear()
    mathgrade._VERIFIED.clear()
    assert batched_v == [mathgrade.verify(g, p) for g, p in pairs]
    assert batched_e == [mathgrade.extract(t) for t in texts]
    assert batched_v[0] == ("ok", True) and batched_v[1] == ("ok", False)
    assert batched_v[3] == ("unparsed", False) and batched_v[4] == ("gold_unparsed", False)
    assert batched_e[0] == ("ok", "(2,2),(6,2)") and batched_e[2] == ("unparsed", "")


def test_a_call_that_runs_over_in_a_batch_times_out_alone(fresh_caches) -> None:
    tower = "9^{9^{9^{9}}}"  # sympy would work on this for minutes
    start = time.perf_counter()
    got = mathgrade.verify_all([("1", tower), (r"\frac12", "0.5"), ("3", "4")], timeout_s=0.5)
    assert time.perf_counter() - start < 10.0
    assert got == [("timeout", False), ("ok", True), ("ok", False)]  # the rest: a fresh worker
    assert mathgrade.verify_all([("1", tower)], timeout_s=0.5) == [("timeout", False)]  # cached


def test_replies_kept_on_disk_serve_another_process_without_a_worker(
        fresh_caches, tmp_path, monkeypatch) -> None:
    """Math-Verify's replies kept in the grading store (``PEAR_GRADING_CACHE``) answer a later
    process's calls without a round trip, with the same results; a timeout is never kept, and
    a store written by other code (another fingerprint) answers nothing."""
    monkeypatch.setenv(mathgrade.CACHE_ENV, str(tmp_path / "grading.sqlite"))
    monkeypatch.setattr(mathgrade, "_STORE", None)
    pairs = [(r"\frac12", "0.5"), ("1234", "1, 234"), ("x", ""), ("7", r"\text{seven}")]
    texts = [r"\boxed{(2,2)} and \boxed{(6,2)}", "no answer here", "The answer is 34."]
    first_v, first_e = mathgrade.verify_all(pairs), mathgrade.extract_all(texts)
    assert fresh_caches == [3, 3]  # asked of a worker: empty answers never reach it
    assert first_v[0] == ("ok", True) and first_v[1] == ("ok", False)
    assert first_e[0] == ("ok", "(2,2),(6,2)") and first_e[2] == ("ok", "34")
    # another process: its memory empty, its store the same file
    mathgrade._EXTRACTED.clear()
    mathgrade._VERIFIED.clear()
    monkeypatch.setattr(mathgrade, "_STORE", None)
    assert mathgrade.verify_all(pairs) == first_v and mathgrade.extract_all(texts) == first_e
    assert fresh_caches == [3, 3]  # no round trip
    # a timeout is this machine's: not kept, asked again next time
    monkeypatch.setattr(mathgrade._Pool, "call_many",
                        lambda self, requests, timeout_s: [("timeout", None)] * len(requests))
    assert mathgrade.verify_all([("5", "4 + 1")]) == [("timeout", False)]
    mathgrade._VERIFIED.clear()
    store = mathgrade._store()
    assert store is not None and store.get(['["verify", "$5$", "$4 + 1$"]']) == {}
    # other code computes replies another way: what it kept is not served
    kept = ['["verify", "$\\\\frac12$", "$0.5$"]']
    assert store.get(kept) == {kept[0]: ("ok", True)}
    store.fingerprint = "another"
    assert store.get(kept) == {}


def test_an_unreadable_grading_store_is_left_alone(fresh_caches, tmp_path, monkeypatch,
                                                   caplog) -> None:
    """A store that is not a database (or cannot be opened) only costs the round trips."""
    bad = tmp_path / "grading.sqlite"
    bad.write_bytes(b"not a database, " * 100)
    monkeypatch.setenv(mathgrade.CACHE_ENV, str(bad))
    monkeypatch.setattr(mathgrade, "_STORE", None)
    assert mathgrade.verify_all([(r"\frac12", "0.5")]) == [("ok", True)]
    assert fresh_caches == [1] and "grading cache" in caplog.text
    assert bad.read_bytes() == b"not a database, " * 100  # nothing written into it
    monkeypatch.setenv(mathgrade.CACHE_ENV, "off")
    assert mathgrade._store() is None


def test_prestart_leaves_the_worker_to_the_first_miss_when_the_store_keeps_replies(
        tmp_path, monkeypatch) -> None:
    """A process on a machine whose store keeps replies starts no Math-Verify worker ahead of
    time; on a machine's first run (an empty store) it does."""
    monkeypatch.setenv(mathgrade.CACHE_ENV, str(tmp_path / "grading.sqlite"))
    monkeypatch.setattr(mathgrade, "_STORE", None)
    monkeypatch.setattr(mathgrade, "_POOL", mathgrade._Pool(1))
    started: list[int] = []
    monkeypatch.setattr(mathgrade._Worker, "_start", lambda self: started.append(1))
    store = mathgrade._store()
    assert store is not None and store.empty()
    mathgrade.prestart()
    assert mathgrade._POOL.started.wait(10) and started == [1]  # empty: started ahead
    monkeypatch.setattr(mathgrade, "_POOL", mathgrade._Pool(1))
    store.put([('["extract", "$1$"]', ("ok", "1"))])
    assert not store.empty()
    mathgrade.prestart()
    assert started == [1]  # kept replies: no worker until a call misses
