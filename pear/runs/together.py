"""Several grids in one pass, and the debates one grid can take from another run.

A study varies one setting of a grid (the router's temperature, the stop rule, one agent's
role): each *variant* is an :class:`~pear.runs.grid.Experiment` recorded in its own run
directory, since runs of different protocols never share one.

* :func:`recorded_in` -- whether a run directory already holds every debate of a grid: its
  manifest is of the same setting (protocol, backend, model, data; what a resume into it
  would require) and every debate id the grid's jobs have is recorded there.  A debate id
  hashes the model, backend, dataset, question, seed, method and the configuration that
  identifies the debate (:meth:`pear.core.engine.Engine.identity`), so those records are
  exactly the debates the grid would run, never a debate of another setting.
* :func:`run_together` -- run (or resume) the missing debates of several grids with one
  backend in one pass: grids with the same debate configuration go through one
  :class:`~pear.core.engine.Engine` together, so its lockstep batches hold every variant's
  debates of a question (one round-0 request per (seed, question, agent) for all of them);
  each record is appended to its own grid's directory (manifest, append-only records,
  fsync per chunk, resumable) exactly as :func:`pear.runs.runner.run` would write it.
  Every request's seed derives from (seed, method, question, agent, round), never from the
  batch, so a record is the same, timing fields aside, whichever grids share the pass.
"""
from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from pathlib import Path
from typing import Any, Mapping, Sequence

from pear.core.engine import Engine, Job, call_budget
from pear.runs.grid import Experiment, model_grid
from pear.runs.jobs import jobs
from pear.runs.progress import Progress
from pear.runs.runner import (RunDir, RunSummary, check_workers, debate_ids, model_dir,
                              question_chunks, recording)
from pear.store import manifest as manifest_io
from pear.store.records import (RecordWriter, completed_ids, iter_lines, line_debate_id,
                                record_files)
from pear.tasks import grading
from pear.tasks.benchmarks import sha256_files

__all__ = ["same_setting", "recorded_in", "run_together", "by_question"]


def same_setting(exp: Experiment, run_dir: str | os.PathLike[str], model_id: str,
                 backend_name: str) -> bool:
    """Whether ``run_dir``'s manifest is of ``exp``'s setting for this model and backend
    (protocol, backend, model, data, no shard): what a resume into it would require, so
    its debates are debates ``exp`` would run wherever their ids coincide."""
    old = manifest_io.read(run_dir) if Path(run_dir).is_dir() else None
    if old is None or exp.shard is not None:
        return False
    wanted = {"protocol": exp.protocol(), "backend": backend_name, "models": [model_id],
              "data_sha256": sha256_files(), "shard": None}
    return not manifest_io.diff_keys(old, wanted)


def recorded_in(exp: Experiment, run_dir: str | os.PathLike[str], model_id: str,
                backend_name: str, recorded: set[str] | None = None) -> list[str] | None:
    """The debate ids of ``exp``'s grid when ``run_dir`` holds every one of them under a
    manifest of the same setting (:func:`same_setting`), else None.  ``recorded``: the ids
    recorded in ``run_dir`` when the caller has them (else read)."""
    if not same_setting(exp, run_dir, model_id, backend_name):
        return None
    ids = debate_ids(exp, model_id, backend_name)
    have = recorded if recorded is not None else completed_ids(model_dir(run_dir, model_id))
    return ids if ids and all(i in have for i in ids) else None


def run_together(grids: Mapping[str | os.PathLike[str], Experiment], backend: Any, *,
                 progress: bool = True, reuse: str | os.PathLike[str] | None = None,
                 workers: int = 1) -> RunSummary:
    """Run every missing debate of each grid (``{run directory: experiment}``) into its own
    directory with ``backend`` (one model; see the module docstring), in one pass; returns
    the pass's summary (debates of all grids; each directory's manifest says whether its
    grid is complete).  ``reuse``: a run directory (the main run) whose records of a grid's
    setting (:func:`same_setting`) are copied into the grid's directory, line for line, for
    every debate id they share, instead of being run again (counted in ``already_done``).
    ``workers``: processes that run the pass's chunks, as :func:`pear.runs.runner.run`'s
    (forked; this process alone writes, chunk by chunk in order): the records are the same
    for any number.  Grids that name models, a mixed-model panel or a shard are refused: run
    those with :func:`pear.runs.runner.run`."""
    check_workers(workers)
    if not hasattr(backend, "generate"):
        raise ValueError("run_together takes one backend (one model); run grids that need a "
                         "backend per model with pear.runs.runner.run")
    dirs = {Path(d): exp for d, exp in grids.items()}
    for d, exp in dirs.items():
        if exp.models or exp.debate.agent_models or exp.shard is not None:
            raise ValueError(f"grid for {str(d)!r} names models, a mixed-model panel or a "
                             "shard: run it with pear.runs.runner.run")
    grid = {d: jobs(model_grid(exp, backend.model_id)) for d, exp in dirs.items()}
    # one engine per debate configuration: its grids run together
    engines = {debate: Engine(backend, debate, task_for=grading.get)
               for debate in dict.fromkeys(exp.debate for exp in dirs.values())}
    todo: dict[Any, list[Job]] = defaultdict(list)
    owner: dict[str, list[RunDir]] = defaultdict(list)  # debate id -> the grids that hold it
    already: dict[Path, int] = defaultdict(int)
    with recording() as rec:
        for d, exp in dirs.items():
            rec.open(d, exp, rec.lock(d), backend.name, [backend.model_id],
                     backend_settings=[backend.settings()], model_ids=[backend.model_id])
        if reuse is not None:
            _copy_recorded(Path(reuse), {d: exp for d, exp in dirs.items() if same_setting(
                exp, reuse, backend.model_id, backend.name)}, backend, grid)
        for d, exp in dirs.items():
            engine, done = engines[exp.debate], completed_ids(model_dir(d, backend.model_id))
            for j in grid[d]:
                did = engine.debate_id(j)
                if did in done:
                    already[d] += 1
                    continue
                if not owner[did]:
                    todo[exp.debate].append(j)
                owner[did].append(rec.dirs[d])
        summary = rec.summary
        summary.total, summary.already_done = sum(map(len, grid.values())), sum(already.values())
        bar = rec.stack.enter_context(Progress(sum(
            call_budget(js, key) for key, js in todo.items()),
            summary.total - summary.already_done, progress))
        per_chunk = min(exp.chunk_questions for exp in dirs.values())
        for key, engine in engines.items():
            rec.append(engine, list(question_chunks(by_question(todo[key]), per_chunk)),
                       lambda line: owner[line_debate_id("", 0, line)], bar, workers=workers)
        for d, run in rec.dirs.items():
            run.manifest["complete"] = already[d] + run.written == len(grid[d])
    return summary


def _copy_recorded(source: Path, dirs: Mapping[Path, Experiment], backend: Any,
                   grid: Mapping[Path, Sequence[Job]]) -> None:
    """Append to each of ``dirs`` the records ``source`` holds of its grid's debates and
    it lacks (one pass over ``source``'s records; each line parsed and written back as
    the runner writes it, so the bytes are the same)."""
    import json

    wanted: dict[str, list[Path]] = defaultdict(list)
    for d, exp in dirs.items():
        done = completed_ids(model_dir(d, backend.model_id))
        for i in debate_ids(exp, backend.model_id, backend.name, grid[d]):
            if i not in done:
                wanted[i].append(d)
    if not wanted:
        return
    with contextlib.ExitStack() as stack:
        writers = {d: stack.enter_context(RecordWriter(model_dir(d, backend.model_id)))
                   for d in dirs}
        for path in record_files(model_dir(source, backend.model_id)):
            for _, line_no, line in iter_lines(path):
                for d in wanted.pop(line_debate_id(path, line_no, line), ()):
                    writers[d].write(json.loads(line))


def by_question(todo: Sequence[Job]) -> list[Job]:
    """``todo`` with the jobs of each (seed, question) together, groups in first-seen order
    (every grid lists its jobs by seed, dataset and question), so that a chunk holds every
    grid's debates of its questions."""
    groups: dict[tuple, list[Job]] = {}
    for j in todo:
        groups.setdefault((j.seed, j.question.dataset, j.question.id), []).append(j)
    return [j for g in groups.values() for j in g]
