"""pear.parallel: fork_map's order and errors, and the share of the cores its workers see."""
import multiprocessing
import os
import time

import pytest

from pear import parallel

_STARTED = None  # set before the fork: the long call has taken its first reading


def _square(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"bad item {x}")
    return x


def _share(kind: str) -> list[int]:
    """"long": its share while the other call runs, then once that one has finished;
    "short": its share after the long call has taken its first reading."""
    if kind == "short":
        assert _STARTED.wait(20)
        return [parallel.cores_per_process()]
    first = parallel.cores_per_process()
    _STARTED.set()
    deadline = time.monotonic() + 20
    while parallel.cores_per_process() == first and time.monotonic() < deadline:
        time.sleep(0.02)
    return [first, parallel.cores_per_process()]


def test_results_come_in_the_order_of_the_items_from_other_processes():
    out = list(parallel.fork_map(_square, range(7), workers=2))
    assert [v for v, _ in out] == [0, 1, 4, 9, 16, 25, 36]
    assert os.getpid() not in {pid for _, pid in out}  # each ran in a worker process


def test_a_failing_call_raises_its_error_here():
    with pytest.raises(ValueError, match="bad item 3"):
        list(parallel.fork_map(_fail_on_three, range(6), workers=2))


def test_a_worker_gets_the_cores_the_others_no_longer_need(monkeypatch):
    """Two calls on 4 cores: 2 each while both are unfinished; the one left gets all 4 (the
    tail of a grid decodes on every core)."""
    global _STARTED
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    _STARTED = multiprocessing.get_context("fork").Event()
    try:
        long, short = parallel.fork_map(_share, ["long", "short"], workers=2)
    finally:
        _STARTED = None
    assert short == [2]
    assert long == [2, 4]
    assert parallel.cores_per_process() == 4  # this process is no worker


def test_calls_waiting_for_a_worker_count_towards_the_share(monkeypatch):
    """Five calls on two workers: while calls remain, each worker keeps half the cores."""
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    shares = list(parallel.fork_map(_cores, range(5), workers=2))
    assert shares[:3] == [2, 2, 2]
    assert set(shares[3:]) <= {2, 4}


def _cores(_: int) -> int:
    return parallel.cores_per_process()


def test_the_threads_env_caps_a_thread_team_not_the_cores(monkeypatch):
    everything = parallel.usable_cores()
    monkeypatch.setenv(parallel.THREADS_ENV, "1")
    assert parallel.threads_per_process() == 1
    assert parallel.usable_cores() == parallel.cores_per_process() == everything
    monkeypatch.setenv(parallel.THREADS_ENV, str(everything + 5))
    assert parallel.threads_per_process() == everything  # a cap, never more than the cores
    monkeypatch.setenv(parallel.THREADS_ENV, "zero")
    assert parallel.threads_per_process() == everything
