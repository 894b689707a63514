"""Running a grid: run + resume.

``run(experiment, backend, out_dir)`` runs every debate of the grid that is not yet in
``out_dir``'s records, in chunks of questions (all methods of a question share round 0 and
advance in lockstep through the engine), appending each finished debate at once and
fsyncing at chunk boundaries.  Killing it at any point and running it again finishes the
grid with no debate lost or duplicated.  Each model's records live in :func:`model_dir`.

With ``workers > 1`` the chunks (smaller: :data:`CHUNKS_PER_WORKER` per worker, so that the
grid's end is balanced) run in that many worker processes (forked, each with the engine and
backend as they were at the fork), and this process alone appends their records, chunk by
chunk in the grid's order: the records and the manifest are those of one process (timing
fields aside; the records' order follows the chunks), and a killed run resumes the same way.
"""
from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from pear.core.config import whole_number
from pear.core.engine import Engine, Job, call_budget
from pear.core.hashing import hex_id
from pear.parallel import exclusive, fork_map
from pear.runs.grid import Experiment, model_grid
from pear.runs.jobs import jobs
from pear.runs.progress import Progress
from pear.runs import compute
from pear.runs.provenance import close_attempt, open_manifest
from pear.store import manifest as manifest_io
from pear.store.checks import Checker
from pear.store.indexing import ViewWriter, lay_out
from pear.store.records import (RECORDS_FILE, RecordWriter, completed_ids, encode_record,
                                few_collections)
from pear.tasks import grading as tasks, mathgrade

__all__ = ["run", "RunSummary", "model_dir", "Panel", "LOCK_FILE", "debate_ids",
           "identities", "chunk_runner", "question_chunks", "check_workers", "recording",
           "Recording", "RunDir"]


def model_dir(out_dir: str | os.PathLike[str], model: str) -> Path:
    """Where one model's records live: ``<out_dir>/<model slug>/`` (a readable prefix of the
    model id plus a short hash of all of it, so distinct ids never share a directory).

    >>> model_dir("runs", "SmolLM2.gguf@sha256:b179c9").name
    'SmolLM2.gguf-d5c8391d97'
    """
    name = model.split("@", 1)[0]
    name = Path(name).name if os.sep in name else name
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:60] or "model"
    return Path(out_dir) / f"{slug}-{hex_id(model, n=10)}"


@dataclass
class RunSummary:
    """What a call to :func:`run` did."""

    total: int
    already_done: int
    written: int
    failed: list[tuple[str, str]]
    generate_calls: int
    requests: int
    tokens: int
    cache_hits: int
    stopped: bool = False
    """Whether ``stop`` ended the run early (every finished debate is recorded)."""

    @property
    def complete(self) -> bool:
        return self.already_done + self.written == self.total

    def line(self) -> str:
        """The run in one line: debates written, already done and failed of the grid, then
        the model calls and tokens it cost.

        >>> RunSummary(6, 2, 3, [("d", "timeout")], 5, 9, 120, 4).line()
        '3 debates written, 2 already done, 1 failed of 6; 9 requests in 5 backend calls, \
120 tokens, 4 cache hits'
        """
        return (f"{self.written} debates written, {self.already_done} already done, "
                f"{len(self.failed)} failed of {self.total}; {self.requests} requests in "
                f"{self.generate_calls} backend calls, {self.tokens} tokens, "
                f"{self.cache_hits} cache hits")

    def incomplete(self, what: str = "the grid") -> str:
        """Why ``what`` is not complete ("" when it is): the debates that failed and the
        first failure, and that running it again resumes.

        >>> RunSummary(6, 2, 3, [("d", "timeout")], 5, 9, 120, 4).incomplete()
        'the grid is incomplete (1 debates failed; first: timeout); rerun to resume'
        """
        if self.complete:
            return ""
        first = self.failed[0][1] if self.failed else "unknown"
        return (f"{what} is incomplete ({len(self.failed)} debates failed; first: {first}); "
                "rerun to resume")

    def raise_if_incomplete(self, what: str = "the grid") -> None:
        """RuntimeError(:meth:`incomplete`) unless every debate of the grid is recorded."""
        if not self.complete:
            raise RuntimeError(self.incomplete(what))


def run(exp: Experiment, backend: Any | Callable[[str], Any], out_dir: str | os.PathLike[str],
        *, progress: bool = True, task_for: Callable[[str], Any] | None = None,
        stop: Callable[[], bool] | None = None, workers: int = 1, view: bool = True
        ) -> RunSummary:
    """Run every missing debate of ``exp`` into ``out_dir``.

    ``workers``: processes that run the grid's chunks (disjoint parts of it); the records
    are the same for any number, but for what a model's prefix cache saved (llama.cpp's
    ``tokens.cached`` depends on which requests shared a process)
    (:func:`pear.runs.factory.default_workers` gives the CLI's default).

    ``stop`` (e.g. set by a scheduler's SIGTERM) is asked after every chunk: when it
    answers True the debates in flight have finished and are recorded, and the run returns
    incomplete (``summary.stopped``); running it again resumes.

    ``backend`` is a Backend (one model) or a callable ``model name -> Backend`` (one per
    entry of ``exp.models``, or one per distinct ``exp.debate.agent_models`` for a mixed-model
    panel, which runs as one unit).  With a callable, the models run one after another
    and each backend is built only when its turn comes and dropped afterwards (one GPU engine
    at a time); each model's grid is :func:`pear.runs.grid.model_grid`'s.

    ``view``: the run's columnar view is written beside the records of a one-model run
    (:class:`pear.store.indexing.ViewWriter`); otherwise it is indexed when first read.
    """
    check_workers(workers)
    return _run(exp, backend, Path(out_dir), progress=progress, task_for=task_for, stop=stop,
                workers=workers, view=view)


def _writer_lock(out: Path) -> contextlib.AbstractContextManager[None]:
    """One ``run`` writes into a directory at a time (:func:`pear.parallel.exclusive`): a
    second one (e.g. a requeued task starting while the stopped one finishes its debates in
    flight) waits for the first, then resumes from what it recorded, so no debate is run
    twice."""
    return exclusive(out / LOCK_FILE, f"pear: another run is writing into {str(out)!r}; "
                                      "waiting for it to end")


LOCK_FILE = ".pear-run.lock"


def _run(exp: Experiment, backend: Any, out: Path, *, progress: bool,
         task_for: Callable[[str], Any] | None, stop: Callable[[], bool] | None,
         workers: int, view: bool) -> RunSummary:
    factory = callable(backend) and not hasattr(backend, "generate")
    if exp.debate.agent_models:
        if not factory or exp.models:
            raise ValueError("a mixed-model panel (agent_models) needs a backend factory "
                             "(model name -> Backend) and no separate models")
        panel = Panel({m: backend(m) for m in dict.fromkeys(exp.debate.agent_models)},
                      exp.debate.agent_models)
        backend, factory = panel, False
    names: list[str | None] = list(exp.models) if factory and exp.models else [None]
    with recording() as rec:
        old, summary = rec.lock(out), rec.summary
        resuming = factory and bool(exp.models) and old is not None \
            and old.get("models") == names and len(old.get("model_ids", [])) == len(names)
        # resuming several models: no backend is built (no model loaded) before it is needed
        current: Any = None if resuming else (backend(names[0]) if factory else backend)
        grid_names = names if factory and exp.models else [current.model_id]
        run = rec.open(out, exp, old, old["backend"] if resuming else current.name, grid_names)
        manifest = run.manifest
        grid_jobs = [jobs(model_grid(exp, n)) for n in grid_names]
        summary.total = sum(map(len, grid_jobs))
        bar = rec.stack.enter_context(Progress(sum(
            call_budget(js, model_grid(exp, n).debate) for n, js in zip(grid_names, grid_jobs)),
            summary.total, progress))
        for name, all_jobs in zip(names, grid_jobs):
            finished = _finished_earlier(exp, old, manifest["backend"], name, all_jobs, out) \
                if current is None else None
            if finished is not None:  # not loaded again: its ids and settings are in the manifest
                summary.already_done += len(all_jobs)
                bar.skip(call_budget(all_jobs, model_grid(exp, name).debate), len(all_jobs))
                manifest["backend_settings"].append(finished[1])
                manifest["model_ids"].append(finished[0])
                continue
            be = current if current is not None else backend(name)
            current = None  # the previous model's backend (and its GPU engine) can now be freed
            if be.name != manifest["backend"]:
                raise ValueError(f"run directory {str(out)!r} holds results of backend "
                                 f"{manifest['backend']!r}, not {be.name!r}; use a new --out")
            manifest["backend_settings"].append(be.settings())
            manifest["model_ids"].append(be.model_id)
            manifest_io.write(out, manifest)
            grader = task_for or tasks.get
            engine = Engine(be.backends if isinstance(be, Panel) else be,
                            model_grid(exp, name).debate, task_for=grader)
            done = completed_ids(model_dir(out, engine.model))
            todo = [j for j in all_jobs if engine.debate_id(j) not in done]
            summary.already_done += len(all_jobs) - len(todo)
            bar.skip(call_budget(all_jobs, engine.debate) - call_budget(todo, engine.debate),
                     len(all_jobs) - len(todo))
            rec.append(engine, list(question_chunks(todo, _per_chunk(
                todo, exp.chunk_questions, workers))), run, bar, workers=workers, stop=stop,
                math=any(isinstance(grader(d), tasks.MathTask)  # Math-Verify started at once
                         for d in {j.question.dataset for j in todo}),
                view=view and len(grid_names) == 1)
            del be, engine
            if stop is not None and stop():
                summary.stopped = True
                break
        manifest["complete"] = summary.complete
    return summary


def _finished_earlier(exp: Experiment, old: Mapping[str, Any] | None, backend_name: str,
                      name: Any, all_jobs: Sequence[Job], out: Path
                      ) -> tuple[str, Any] | None:
    """``(model id, backend settings)`` when an earlier run of ``out`` finished the whole grid
    of model ``name``, else None."""
    earlier = dict(zip((old or {}).get("models", []), (old or {}).get("model_ids", [])))
    settings = dict(zip((old or {}).get("model_ids", []), (old or {}).get("backend_settings", [])))
    known = earlier.get(name)
    if not known or known not in settings:
        return None
    done = completed_ids(model_dir(out, known))
    if len(done) >= len(all_jobs) and _all_done(exp, backend_name, known, all_jobs, done):
        return known, settings[known]
    return None


# ----------------------------------------------------------------- the run loop

@dataclass
class RunDir:
    """A run directory :func:`recording` writes: its manifest (``complete``: set by the caller
    when it ends well), this attempt, its record writers (per model id), debates written."""

    out: Path
    manifest: dict[str, Any]
    attempt: compute.Attempt
    written: int = 0
    writers: dict[str, RecordWriter] = field(default_factory=dict)


_COST = {"calls": "requests", "tokens": "tokens", "cache_hits": "cache_hits"}  # attempt: engine


class Recording:
    """The run directories one pass writes (:func:`recording`): each locked (:meth:`lock`),
    its manifest and this attempt opened (:meth:`open`); :meth:`append` writes the records
    and counts in ``summary`` what each engine did."""

    def __init__(self, locks: contextlib.ExitStack) -> None:
        self.dirs: dict[Path, RunDir] = {}
        self.summary = RunSummary(0, 0, 0, [], 0, 0, 0, 0)
        self.locks, self.stack = locks, contextlib.ExitStack()  # writers, displays

    def lock(self, out: Path) -> dict[str, Any] | None:
        """Take ``out`` (made if missing; :func:`_writer_lock`) and read its manifest."""
        out.mkdir(parents=True, exist_ok=True)
        self.locks.enter_context(_writer_lock(out))
        return manifest_io.read(out)

    def open(self, out: Path, exp: Experiment, old: Mapping[str, Any] | None,
             backend_name: str, grid_names: Sequence[Any], **extra: Any) -> RunDir:
        """Open ``out``'s manifest (:func:`pear.runs.provenance.open_manifest`, with the
        keys ``extra``) and this attempt."""
        attempt = compute.Attempt()
        manifest = {**open_manifest(exp, out, old, backend_name, grid_names, attempt), **extra}
        manifest_io.write(out, manifest)
        self.dirs[out] = RunDir(out, manifest, attempt)
        return self.dirs[out]

    def append(self, engine: Any, chunks: Sequence[Any],
               where: RunDir | Callable[[bytes], Iterable[RunDir]], bar: Progress, *,
               workers: int = 1, math: bool = False, stop: Callable[[], bool] | None = None,
               each: Callable[[bytes], None] = lambda line: None, view: bool = False) -> None:
        """Run ``chunks`` (:func:`chunk_runner`), appending each record line to ``where``
        (or each run ``where(line)`` names) under ``engine.model`` (flushed; fsynced after
        every chunk) and passing it to ``each``; ``stop`` is asked after every chunk.  What
        ``engine`` did (failures, calls, tokens) is counted, also when it fails.  ``view``
        (one run ``where``, whose only record file this is): its columnar view is written
        beside the records (:class:`pear.store.indexing.ViewWriter`; where it cannot be, the
        next index makes it)."""
        bar.follow(engine)
        s, counts = self.summary, ("generate_calls", *_COST.values())
        before, failed = [getattr(engine, k) for k in counts], len(engine.failed)
        vw = ViewWriter.open(where.out, model_dir(where.out, engine.model) / RECORDS_FILE) \
            if view and not callable(where) else None
        ok = False
        try:
            with chunk_runner(engine, chunks, workers, math, lines=True,
                              lay=vw.checker if vw is not None else None) as ran:
                for chunk in ran:
                    for item in chunk:  # a record's line, or records laid out (``vw``)
                        for line in item.lines if vw is not None else (item,):
                            for run in where(line) if callable(where) else (where,):
                                if engine.model not in run.writers:
                                    run.writers[engine.model] = self.stack.enter_context(
                                        RecordWriter(model_dir(run.out, engine.model)))
                                run.writers[engine.model].write(line)
                                run.written, s.written = run.written + 1, s.written + 1
                            each(line)
                            bar.counts(s.written)
                        if vw is not None:
                            vw.add(item)
                    for w in (w for run in self.dirs.values() for w in run.writers.values()):
                        w.sync()
                    if stop is not None and stop():
                        s.stopped = True
                        break
            ok = True
        finally:
            if vw is not None:
                vw.close(ok)
            s.failed += engine.failed[failed:]
            for k, b in zip(counts, before):
                setattr(s, k, getattr(s, k) + getattr(engine, k) - b)


@contextlib.contextmanager
def recording() -> Iterator[Recording]:
    """The one run loop (:func:`run`, :func:`pear.runs.together.run_together`, branches): a
    :class:`Recording`, its directories locked until it ends; its writers closed, then in a
    ``finally`` every attempt closed with its debates and its share of the pass's cost (by
    debates received); then, unless it failed, each manifest's ``finished_at``."""
    with contextlib.ExitStack() as locks:
        rec = Recording(locks)
        runs = rec.dirs.values()
        try:
            with rec.stack:
                yield rec
        finally:  # what this attempt cost, also when it fails
            weights = [run.written for run in runs]
            parts = {k: compute.split(getattr(rec.summary, v), weights) for k, v in _COST.items()}
            for i, run in enumerate(runs):
                close_attempt(run.out, run.manifest, run.attempt, weights[i] / sum(weights)
                              if sum(weights) else 1 / len(runs), debates=run.written,
                              **{k: v[i] for k, v in parts.items()})
        for run in runs:
            run.manifest["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
            manifest_io.write(run.out, run.manifest)


# ----------------------------------------------------------------- worker processes

@contextlib.contextmanager
def chunk_runner(engine: Engine, chunks: Sequence[list[Job]], workers: int,
                 math: bool = False, lines: bool = False, lay: Checker | None = None
                 ) -> Iterator[Iterable[Iterable[Any]]]:
    """Per chunk in order, its records: run here (yielded as each debate ends), or with
    ``workers > 1`` by forked worker processes, at most two chunks ahead per worker (the
    engine's counts and failures are added to ``engine`` as each chunk comes back).
    Chunks are whole (seed, question) groups (:func:`question_chunks`), so a question's methods,
    which share round 0, and its grading cache stay in one process; the workers take the
    next chunk as they finish one.  ``math``: each process that grades starts its
    Math-Verify worker first (:func:`pear.tasks.mathgrade.prestart`).  ``lines``: each
    record comes as its line in the store (:func:`pear.store.records.encode_record`), made
    where the debate ran (a worker sends bytes, not a record to pickle and unpickle); with
    ``lay`` (a checker of the run's records) as records laid out into the view's rows
    (:func:`pear.store.indexing.lay_out`) where they ran: each record here, a worker's chunk
    at once.

    While chunks run, the cyclic garbage collector runs rarely
    (:func:`pear.store.records.few_collections`)."""
    if workers == 1 or len(chunks) <= 1:
        if math and chunks:
            mathgrade.prestart()
        with few_collections():
            yield ((lay_out(lay, (r,)) for r in engine.run(chunk)) if lay is not None else
                   map(encode_record, engine.run(chunk)) if lines else engine.run(chunk)
                   for chunk in chunks)
        return
    global _FORKED
    live = multiprocessing.get_context("fork").SimpleQueue()  # the workers' calls (progress)
    encode = ((lambda records: [lay_out(lay, records)]) if lay is not None else
              (lambda records: list(map(encode_record, records))) if lines else list)
    _FORKED = (engine, chunks, live, encode)  # what the workers run: fork copies it (not pickled)
    with few_collections():
        try:
            yield _collect(engine, len(chunks), workers, live, math)
        finally:
            _FORKED = None


_FORKED: tuple[Engine, Sequence[list[Job]], Any, Callable[[Iterable[Any]], Any]] | None = None
_LIVE_EVERY_S = 0.5  # a worker reports its calls at most this often (progress, not records)
_COUNTS = ("generate_calls", "requests", "tokens", "cache_hits", "calls_done", "calls_unneeded",
           "rounds_done")


def _exit_with(parent: int, math: bool = False) -> None:
    """In a worker: end when ``parent`` does (a killed run leaves no worker behind); with
    ``math``, start its Math-Verify worker."""
    if math:
        mathgrade.prestart()
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _run_chunk(i: int) -> tuple[Any, list[tuple[str, str]], dict[str, int]]:
    """In a worker: chunk ``i``'s records (or their lines, or them laid out), failures and
    the engine counts it added."""
    assert _FORKED is not None, "a worker runs only in a forked process"
    engine, chunks, live, encode = _FORKED
    chunk = chunks[i]
    before = {k: getattr(engine, k) for k in _COUNTS}
    last = [0.0]

    def report() -> None:  # this chunk's calls so far, to the parent's progress
        now = time.monotonic()
        if now - last[0] >= _LIVE_EVERY_S:
            last[0] = now
            live.put((i, engine.calls_done - before["calls_done"],
                      engine.calls_unneeded - before["calls_unneeded"]))
    engine.on_progress = report
    failed_before = len(engine.failed)
    records = encode(engine.run(chunk))
    return (records, engine.failed[failed_before:],
            {k: getattr(engine, k) - before[k] for k in _COUNTS})


def _collect(engine: Engine, n_chunks: int, workers: int, live: Any,
             math: bool) -> Iterator[list[Any]]:
    """The chunks' records in order (:func:`pear.parallel.fork_map`, two chunks ahead per
    worker).  While waiting, the calls the workers report (``live``) move the engine's call
    counts, so progress moves with every call; a chunk's own counts replace its reports when
    it comes back."""
    done = {"calls_done": engine.calls_done, "calls_unneeded": engine.calls_unneeded}
    in_flight: dict[int, tuple[int, int]] = {}  # chunk -> (calls done, calls unneeded)
    finished: set[int] = set()

    def show() -> None:
        engine.calls_done = done["calls_done"] + sum(c for c, _ in in_flight.values())
        engine.calls_unneeded = done["calls_unneeded"] + sum(u for _, u in in_flight.values())
        engine.phase = f"chunks: {len(finished)} of {n_chunks} done"
        if engine.on_progress is not None:
            engine.on_progress()

    def reports() -> None:
        moved = False
        while not live.empty():
            j, calls, unneeded = live.get()
            if j not in finished:  # a report can arrive after its chunk's result
                in_flight[j], moved = (calls, unneeded), True
        if moved:
            show()

    results = fork_map(_run_chunk, range(n_chunks), workers, ahead=2, initializer=_exit_with,
                       initargs=(os.getpid(), math), idle=reports, idle_s=_LIVE_EVERY_S)
    for i, (records, failed, counts) in enumerate(results):
        finished.add(i)
        in_flight.pop(i, None)
        engine.failed += failed
        for k, v in counts.items():
            if k in done:
                done[k] += v
            else:
                setattr(engine, k, getattr(engine, k) + v)
        show()
        yield records
    engine.calls_done, engine.calls_unneeded = done["calls_done"], done["calls_unneeded"]


class Panel:
    """A mixed-model panel run as one unit (``{model name: backend}``, the agents' models in
    order); it answers ``name``, ``model_id`` and ``settings()`` like one backend."""

    def __init__(self, backends: Mapping[str, Any], agent_models: Sequence[str]) -> None:
        self.backends = dict(backends)
        ids = [self.backends[m].model_id for m in agent_models]
        self.model_id = ids[0] if len(set(ids)) == 1 else "+".join(ids)
        self.name = "+".join(dict.fromkeys(b.name for b in self.backends.values()))

    def settings(self) -> dict[str, Any]:
        return {m: b.settings() for m, b in self.backends.items()}


def _all_done(exp: Experiment, backend_name: str, model_id: str, all_jobs: Sequence[Job],
              done: set[str]) -> bool:
    """Whether every job of a model is recorded (:func:`debate_ids`: no model is loaded to
    find out)."""
    return all(i in done for i in debate_ids(exp, model_id, backend_name, all_jobs))


def debate_ids(exp: Experiment, model_id: str, backend_name: str,
               all_jobs: Sequence[Job] | None = None) -> list[str]:
    """The debate id of each job (default: every job of ``exp``'s grid for ``model_id``,
    :func:`model_grid`) as model ``model_id`` on backend ``backend_name`` records it: ids
    need only the model id and the backend name, so no model is loaded to name them."""
    return [i["debate_id"] for i in identities(exp, model_id, backend_name, all_jobs)]


def identities(exp: Experiment, model_id: str, backend_name: str,
               all_jobs: Sequence[Job] | None = None) -> list[dict[str, Any]]:
    """The identity fields (:meth:`pear.core.engine.Engine.identity`, ``debate_id`` first)
    of each job, as :func:`debate_ids` names them."""

    class _Identity:  # what Engine.identity reads from a backend
        def __init__(self) -> None:
            self.model_id, self.name = model_id, backend_name

    engine = Engine(_Identity(), exp.debate)  # type: ignore[arg-type]
    if all_jobs is None:
        all_jobs = jobs(model_grid(exp, model_id))
    return [engine.identity(j) for j in all_jobs]


CHUNKS_PER_WORKER = 8  # our choice: the last chunk leaves a worker idle 1/8 of its share


def _per_chunk(todo: Sequence[Job], chunk_questions: int, workers: int) -> int:
    """(seed, question) groups per chunk: ``chunk_questions``, or fewer with ``workers > 1``
    so that each worker gets :data:`CHUNKS_PER_WORKER` chunks to balance the grid's end
    (records do not depend on the chunks: a resumed run chunks what is left).

    >>> from types import SimpleNamespace as NS
    >>> todo = [NS(seed=0, question=NS(dataset="d", id=str(i))) for i in range(160)]
    >>> _per_chunk(todo, 50, 1), _per_chunk(todo, 50, 2), _per_chunk(todo, 5, 2)
    (50, 10, 5)
    """
    if workers == 1:
        return chunk_questions
    groups = len({(j.seed, j.question.dataset, j.question.id) for j in todo})
    return max(1, min(chunk_questions, -(-groups // (CHUNKS_PER_WORKER * workers))))


def check_workers(workers: Any) -> int:
    """``workers`` (processes that run a grid's chunks), or one error naming it.

    >>> check_workers(0)
    Traceback (most recent call last):
    ...
    ValueError: invalid workers=0: use a whole number of processes >= 1
    """
    return whole_number(workers, "workers", 1, fix="use a whole number of processes >= 1")


def question_chunks(todo: Sequence[Job], per_chunk: int) -> Iterable[list[Job]]:
    """Jobs split into batches of ``per_chunk`` (seed, question) groups, never splitting one."""
    batch: list[Job] = []
    keys: set[tuple] = set()
    for job in todo:
        key = (job.seed, job.question.dataset, job.question.id)
        if key not in keys and len(keys) == per_chunk:
            yield batch
            batch, keys = [], set()
        keys.add(key)
        batch.append(job)
    if batch:
        yield batch
