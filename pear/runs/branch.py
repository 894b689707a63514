"""Counterfactual branching of recorded debates (``pear branch``).

Routing changes only the rounds after the first, yet a full rerun of a routed method re-asks
every round, and an unpaired rerun needs many questions to show a routing effect.  A branch
reruns only rounds R+1.. of every recorded debate of a parent run under another method,
starting from the parent's recorded state after round R (answers, confidences, reasoning,
influence); rounds 0..R are copied, never re-asked (:meth:`pear.core.engine.Engine.branch`).
Each branched debate is paired with its parent question by question, and a branch under
the parent's own method reproduces the parent (same seeds, same cache).

The branch run directory is a run like any other (manifest, append-only records, resume);
its manifest's ``branched_from`` names the parent run (relative to the branch's directory:
no builder's path), the round and the parent method, and
``pear validate`` checks every copied round against the parent's
(:func:`pear.store.validate.check_branches`).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import msgspec

from pear.core.config import config_hash
from pear.core.engine import Engine, Job, call_budget
from pear.methods import method, spec
from pear.runs.grid import Experiment, grid_questions
from pear.runs.progress import Progress
from pear.runs.runner import check_workers, model_dir, recording
from pear.store import manifest as manifest_io
from pear.store import view
from pear.store.records import completed_ids, parse_line
from pear.sim.backend import SimulatedBackend
from pear.tasks import grading as tasks
from pear.tasks.benchmarks import GoldAnswers
from pear.backends.registry import SIMULATED

__all__ = ["BranchSummary", "Parents", "BranchPlan", "parent_method_of", "parent_experiment",
           "check", "plan", "write", "branch"]


@dataclass
class BranchSummary:
    """What :func:`branch` did: debates written (and already there), parents skipped
    because they ended before the branch round, the calls the branches made and the calls
    their copied rounds cost the parent (which a full rerun would have made again)."""

    written: int
    already_done: int
    skipped_stopped: int
    calls: int
    calls_copied: int


def parent_experiment(run_dir: str | os.PathLike[str]) -> tuple[dict[str, Any], Any]:
    """The parent run's manifest and experiment (its protocol), or one clear error."""
    man = manifest_io.read(Path(run_dir))
    if man is None or not man.get("experiments"):
        raise FileNotFoundError(f"no run manifest in {str(run_dir)!r}: branch a directory "
                                "written by `pear run`")
    return man, Experiment.from_dict(man["experiments"][-1])


def parent_method_of(methods_present: Sequence[str], wanted: str | None = None) -> str:
    """The parent debates' method: ``wanted``; else the run's one debate method; else
    ``random`` (the same base graphs as PEAR without a routing signal)."""
    debate = [m for m in dict.fromkeys(methods_present) if spec(m).route is not None]
    if wanted:
        if wanted not in debate:
            raise ValueError(f"invalid --parent-method {wanted!r}: the run's debate methods "
                             f"are {', '.join(debate) or 'none'}")
        return wanted
    if len(debate) == 1:
        return debate[0]
    if "random" in debate:
        return "random"
    raise ValueError(f"the run holds several debate methods ({', '.join(debate)}): name the "
                     "parents with --parent-method")


def _simulated_backend(exp: Any, settings: Mapping[str, Any]) -> Any:
    recorded = settings.get("population") or {}
    be = SimulatedBackend(GoldAnswers(), params=settings.get("params"),
                          seed=settings.get("seed", 0),
                          n_agents=settings.get("n_agents", exp.debate.n_agents),
                          population=recorded.get("name"))
    if recorded and be.population.fingerprint != recorded.get("fingerprint"):
        raise ValueError(f"the parent run's simulated population {recorded.get('name')!r} "
                         f"(fingerprint {str(recorded.get('fingerprint'))[:12]}) is not the one "
                         f"shipped now ({be.population.fingerprint[:12]}): branch it with "
                         "that population's file")
    return be


@dataclass
class Parents:
    """What :func:`check` found in a parent run: its manifest and experiment, the parent
    method and its debates (all made under the manifest's protocol)."""

    run_dir: Path
    manifest: dict[str, Any]
    exp: Any
    method: str
    records: list[dict[str, Any]]


@dataclass
class BranchPlan:
    """What :func:`plan` decided: the engine, the branches still to run (job, parent
    record), those already written, parents that ended before the branch round, and where
    the branches go."""

    parents: Parents
    engine: Engine
    from_round: int
    methods: tuple[str, ...]
    out: Path
    todo: list[tuple[Job, dict[str, Any]]]
    already_done: int
    skipped_stopped: int


def check(run_dir: str | os.PathLike[str], from_round: int, methods: Sequence[str],
          parent_method: str | None = None) -> Parents:
    """The parent run, or one clear error: a round outside 0..R-1, no method or one
    without debate rounds, parent records made under another protocol than their
    manifest's."""
    man, exp = parent_experiment(run_dir)
    if not isinstance(from_round, int) or not 0 <= from_round < exp.debate.rounds:
        last = exp.debate.rounds - 1
        raise ValueError(f"invalid --from-round {from_round!r}: the parent debates have "
                         f"{exp.debate.rounds} rounds; branch after round 0..{last}")
    for m in methods:
        if spec(m).route is None:
            raise ValueError(f"invalid method {m!r} for a branch: it has no debate rounds")
    if not methods:
        raise ValueError("no methods to branch into: give --methods M[,M...]")
    v = view.load(run_dir, columns={"debates": ["method", "config_hash"]})
    deb = v.debates
    parent = parent_method_of(list(deb["method"].astype(object).unique()), parent_method)
    want_hash = config_hash(exp.debate, *method(parent, exp.router).hash_parts())
    deb = deb[(deb["method"] == parent).to_numpy()]
    other = deb["config_hash"][(deb["config_hash"] != want_hash).to_numpy()]
    if len(other):
        raise ValueError(f"run {str(run_dir)!r} holds {parent} debates of another protocol "
                         f"(config hash {other.iloc[0]}, its manifest's is {want_hash}): "
                         "branch a run whose records match its manifest")
    return Parents(Path(run_dir), man, exp, parent, _records_at(v.files, deb))


def _records_at(files: Sequence[Path], deb: Any) -> list[dict[str, Any]]:
    """The records of a view's debates ``deb`` (its ``file`` and ``offset`` columns into
    ``files``), in the order the run's files and lines hold them: only those lines are
    parsed, not the whole run."""
    out = []
    for f in sorted(set(deb["file"].tolist()), key=lambda f: str(files[f])):
        with open(files[f], "rb") as fh:
            for off in sorted(deb["offset"][(deb["file"] == f).to_numpy()].tolist()):
                fh.seek(off)
                out.append(parse_line(files[f], -1, fh.readline()))
    return out


def plan(parents: Parents, from_round: int, methods: Sequence[str],
         out_dir: str | os.PathLike[str], *, backend: Any = None) -> BranchPlan:
    """The branches to run into ``out_dir`` (those not written yet), or one clear error:
    another model than the parents', a question outside the parent grid.  ``backend``:
    the parent's model (None: the parent's simulated agents, rebuilt from its manifest)."""
    exp = parents.exp
    if backend is None:
        if parents.manifest["backend"] != SIMULATED:
            raise ValueError(f"the parent run used backend {parents.manifest['backend']!r}: "
                             "give the same model (--backend, --model-path / --model) to "
                             "branch it")
        backend = _simulated_backend(exp, parents.manifest["backend_settings"][0])
    engine = Engine(backend, exp.debate, task_for=tasks.get)
    models = {r["model"] for r in parents.records}
    if parents.records and models != {engine.model}:
        raise ValueError(f"the branch's model {engine.model!r} is not the parent run's "
                         f"({', '.join(sorted(models))}): branch with the parent's model")
    questions = {(q.dataset, q.id): q for q, _ in grid_questions(exp)}
    out = Path(out_dir)
    done = completed_ids(model_dir(out, engine.model))
    todo, skipped, already = [], 0, 0
    for rec in parents.records:
        if rec["rounds"] <= from_round:  # it ended (stopped early) at or before the round
            skipped += 1
            continue
        q = questions.get((rec["dataset"], rec["question_id"]))
        if q is None:
            raise ValueError(f"question {rec['question_id']!r} of {rec['dataset']} is not in "
                             "the parent run's grid")
        for m in methods:
            job = Job(q, method(m, exp.router), rec["seed"])
            if engine.branch_identity(job, rec["debate_id"], from_round)["debate_id"] in done:
                already += 1
            else:
                todo.append((job, rec))
    return BranchPlan(parents, engine, from_round, tuple(methods), out, todo, already, skipped)


def write(p: BranchPlan, *, progress: bool = True, workers: int = 1) -> BranchSummary:
    """Run the planned branches into their directory (manifest first; records appended as
    they finish, synced after every chunk; resumable), or one clear error when the
    directory holds another branch or protocol.  ``workers``: processes that run the
    chunks, as :func:`pear.runs.runner.run`'s (forked; this process alone writes, chunk by
    chunk in order): the records are the same for any number."""
    check_workers(workers)
    exp, engine = p.parents.exp, p.engine
    info = {"run": os.path.relpath(p.parents.run_dir.resolve(), Path(p.out).resolve()),
            "round": p.from_round,
            "parent_method": p.parents.method}
    summary = BranchSummary(0, p.already_done, p.skipped_stopped, 0, 0)

    def count(line: bytes) -> None:
        cost = _COST.decode(line)
        summary.calls += cost.calls
        summary.calls_copied += cost.branched_from.calls_copied
    with recording() as rec:
        old = rec.lock(p.out)  # a new directory: nothing below is refused
        if old is not None and {k: v for k, v in (old.get("branched_from") or {}).items()
                                if k != "run"} != {k: v for k, v in info.items() if k != "run"}:
            raise ValueError(f"run directory {str(p.out)!r} holds another run (branched_from "
                             f"{old.get('branched_from')!r}); use a new --out")
        run = rec.open(p.out, dataclasses.replace(exp, methods=p.methods, full_datasets=()),
                       old, engine.backend_name, [engine.model], branched_from=info,
                       backend_settings=[engine.backend.settings()], model_ids=[engine.model])
        bar = rec.stack.enter_context(Progress(call_budget(
            [job for job, _ in p.todo], engine.debate, p.from_round + 1), len(p.todo), progress))
        step = max(1, exp.chunk_questions * len(p.methods))
        rec.append(_Branching(engine, p.from_round),
                   [p.todo[i:i + step] for i in range(0, len(p.todo), step)], run, bar,
                   workers=workers, each=count)
        summary.written = run.written
        run.manifest["complete"] = not engine.failed
    return summary


def branch(run_dir: str | os.PathLike[str], from_round: int, methods: Sequence[str],
           out_dir: str | os.PathLike[str], *, backend: Any = None,
           parent_method: str | None = None, progress: bool = True,
           workers: int = 1) -> BranchSummary:
    """Branch every debate of ``parent_method`` in ``run_dir`` after round ``from_round``
    into each of ``methods``, writing the branches to ``out_dir`` (resumable, in
    ``workers`` processes): :func:`check`, :func:`plan`, :func:`write`.  Every refusal
    comes before anything is written."""
    parents = check(run_dir, from_round, methods, parent_method)
    return write(plan(parents, from_round, methods, out_dir, backend=backend),
                 progress=progress, workers=workers)


class _Copied(msgspec.Struct):
    calls_copied: int


class _Cost(msgspec.Struct):
    """What a branch's summary reads of a record line (the rest of the line is skipped)."""
    calls: int
    branched_from: _Copied


_COST = msgspec.json.Decoder(_Cost)


class _Branching:
    """The engine as the runner's chunk runner drives it (``run(chunk)``): each chunk's
    ``(job, parent record)`` pairs continue after ``from_round``
    (:meth:`pear.core.engine.Engine.branch`); every other attribute (the counts the
    workers report back, progress) is the engine's own."""

    def __init__(self, engine: Engine, from_round: int) -> None:
        object.__setattr__(self, "_engine", engine)
        object.__setattr__(self, "_from_round", from_round)

    def run(self, starts: Sequence[tuple[Job, dict[str, Any]]]) -> Any:
        return self._engine.branch(starts, self._from_round)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._engine, name, value)
