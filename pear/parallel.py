"""Work on several cores, defined once: how many cores this process may use
(:func:`usable_cores`), mapping a function over items in forked worker processes
(:func:`fork_map`), and one process at a time where several may write the same thing
(:func:`exclusive`: a run's writer, a view's indexer, the import cache).

A leaf module (standard library only) beside :mod:`pear.paths` that every layer may import.

>>> usable_cores() >= 1
True
>>> list(fork_map(abs, [-2, 1, -3], workers=1))
[2, 1, 3]
"""
from __future__ import annotations

import contextlib
import itertools
import multiprocessing
import os
import sys
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any, Callable, Iterable, Iterator, TypeVar

__all__ = ["THREADS_ENV", "usable_cores", "cores_per_process", "threads_per_process",
           "fork_map", "exclusive"]

T = TypeVar("T")
R = TypeVar("R")


THREADS_ENV = "PEAR_THREADS"
"""At most this many threads for a thread team that spins while it waits (llama.cpp's OpenMP
team; :func:`threads_per_process`): what a parent that runs several processes side by side
(``pear paper``'s notebooks) gives each, where two such teams on the same cores would crawl.
Worker processes are not capped by it: the system shares the cores among them."""


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity (what ``taskset``, cgroups' cpusets
    and Slurm leave it), else the machine's logical CPUs; at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


_POOL: tuple[int, Any] | None = None
"""In a worker process of :func:`fork_map`: its pool's workers and the shared count of the
calls submitted and not yet finished (else None)."""


def cores_per_process() -> int:
    """The cores this process may keep busy: :func:`usable_cores`, or, in one of
    :func:`fork_map`'s worker processes, its share of them (at least 1) among the workers that
    have a call to run now.  The share grows when the pool runs out of calls: the last call
    left (the tail of a grid) has every core.

    >>> cores_per_process() == usable_cores()
    True
    """
    n = usable_cores()
    if _POOL is None:
        return n
    workers, unfinished = _POOL
    return max(1, n // max(1, min(workers, unfinished.value)))


def threads_per_process() -> int:
    """The threads a spinning thread team of this process may have: :func:`cores_per_process`,
    at most :data:`THREADS_ENV`'s value when set (a positive integer).

    >>> threads_per_process() <= cores_per_process()
    True
    """
    n = cores_per_process()
    cap = os.environ.get(THREADS_ENV, "").strip()
    return min(n, int(cap)) if cap.isdigit() and int(cap) >= 1 else n


def _enter_worker(pool: tuple[int, Any], initializer: Callable[..., Any] | None,
                  initargs: tuple) -> None:
    global _POOL
    _POOL = pool
    if initializer is not None:
        initializer(*initargs)


def fork_map(fn: Callable[[T], R], items: Iterable[T], workers: int | None = None, *,
             ahead: int | None = None, initializer: Callable[..., Any] | None = None,
             initargs: tuple = (), idle: Callable[[], Any] | None = None,
             idle_s: float = 0.5) -> Iterator[R]:
    """``fn(item)`` for each of ``items``, yielded in the order of ``items``.

    With ``workers`` > 1 (None: :func:`usable_cores`) and at least two items, the calls run in
    up to ``workers`` forked worker processes (no more than there are items, when ``items``
    has a length).  The workers inherit this process as it is when the first result is asked
    for: module globals set before then reach them without pickling; ``fn`` and each item
    are pickled to a worker, its result back.  Each item is submitted as soon as it is read;
    with ``ahead``, at most ``ahead`` calls per worker are in flight (a long or lazy iterator
    of large items); ``initializer(*initargs)`` runs first in each worker, and ``idle()`` here
    every ``idle_s`` seconds while a result is awaited (say, to show the workers' progress).
    Otherwise the calls run here, one at a time.  In a worker, :func:`cores_per_process` is
    its share of the cores among the calls not yet finished (submitted ones included, so a
    worker between two calls keeps its share).  A call that fails raises
    its error here, in its turn; the calls not yet started are then cancelled, as they are
    when the caller stops early (closes the iterator)."""
    workers = usable_cores() if workers is None else int(workers)
    if hasattr(items, "__len__"):
        workers = min(workers, len(items))  # type: ignore[arg-type]
    items = iter(items)
    head = list(itertools.islice(items, max(2, workers)))  # counted before any call starts
    if workers < 2 or len(head) < 2:
        yield from map(fn, itertools.chain(head, items))
        return
    def result(future: Future) -> R:
        while idle is not None and not wait([future], timeout=idle_s).done:
            idle()
        return future.result()

    fork = multiprocessing.get_context("fork")
    unfinished = fork.Value("i", len(head))  # shared with the workers by the fork

    def finished(_: Future) -> None:
        with unfinished.get_lock():
            unfinished.value -= 1

    pool = ProcessPoolExecutor(workers, mp_context=fork, initializer=_enter_worker,
                               initargs=((workers, unfinished), initializer, initargs))
    first, items = len(head), itertools.chain(head, items)
    del head  # an item is held while its call is in flight, no longer
    try:
        pending: deque = deque()
        for i, item in enumerate(items):
            if i >= first:
                with unfinished.get_lock():
                    unfinished.value += 1
            pending.append(pool.submit(fn, item))
            pending[-1].add_done_callback(finished)
            if ahead is not None and len(pending) >= ahead * workers:
                yield result(pending.popleft())
        while pending:
            yield result(pending.popleft())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def exclusive(lock_file: str | os.PathLike[str], waiting: str = "") -> Iterator[None]:
    """The ``with`` block run while this process holds the exclusive lock of ``lock_file``
    (created when missing, its folder too; ``fcntl.flock``: released when the block ends or
    the process dies, whatever killed it); a process that finds it held waits for it, saying
    ``waiting`` on stderr first when given.  Where ``fcntl`` is missing (not POSIX) the block
    runs unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on POSIX
        yield
        return
    os.makedirs(os.path.dirname(os.path.abspath(lock_file)), exist_ok=True)
    with open(lock_file, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting:
                print(waiting, file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
