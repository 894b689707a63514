"""Experiment grids (models x datasets x methods x seeds x questions), run + resume, manifest.

``run(experiment, backend, out_dir)`` runs every debate of the grid that is not yet in
``out_dir``'s records, in chunks of questions (all methods of a question share round 0 and
advance in lockstep through the engine), appending each finished debate at once and
fsyncing at chunk boundaries.  Killing it at any point and running it again finishes the
grid with no debate lost or duplicated.

Scale-out: ``Experiment.shard = (i, N)`` runs the i-th of N deterministic parts of the grid
(whole (seed, question) groups, balanced by debate count), so N machines can each run a part
into their own directory; :func:`pear.runs.merge.merge` combines the parts after checking that
their manifests agree.  Models of the study's registry (:mod:`pear.catalog.models`) run the part of the
grid the study ran on them (:func:`model_grid`).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from pear.core.config import METHODS, DebateConfig, RouterConfig, identity_dict, roles_for
from pear.core.methods import SC_SIZES
from pear.methods import is_self_consistency, method, spec as method_spec
from pear.core.engine import Engine, Job, debate_rounds
from pear.core.hashing import hex_id
from pear.store.records import RecordWriter, completed_ids

__all__ = ["Experiment", "PRESETS", "preset", "jobs", "run", "RunSummary", "answer_key",
           "subset_questions", "full_questions", "SCOPES", "scope_debates",
           "MANIFEST", "read_manifest", "model_dir", "model_grid", "parse_shard", "shard_sizes",
           "Progress", "grid_questions", "open_manifest", "PRESET_SETTINGS",
           "DEBATE_SETTINGS"]

from pear.paths import RUN_MANIFEST as MANIFEST  # noqa: E402
from pear.store import manifest as manifest_io  # noqa: E402
FULL_METHODS = ("cot", "cot_sc", "clique", "star", "chain", "ring", "pear")  # paper's full-set table
SC_METHODS = tuple(f"sc@{k}" for k in SC_SIZES)  # our choice
"""Self-consistency at more samples, for comparisons at equal compute (notebook 07)."""


@dataclass(frozen=True)
class Experiment:
    """A grid of debates and the protocol they share."""

    name: str
    datasets: tuple[str, ...] = ("gsm8k", "math500", "truthfulqa", "mmlu_pro")
    methods: tuple[str, ...] = METHODS
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)  # paper: 5 seeds
    n_questions: int | None = 200  # paper: 200 questions per dataset (open models)
    """Questions per dataset (a seeded subset); None = the full set."""
    question_seed: int = 0  # our choice
    """Seed of the subset sample (the same questions for every method and run seed)."""
    full_datasets: tuple[str, ...] = ()
    """Datasets also run on their full set (the study's full-dataset table)."""
    full_methods: tuple[str, ...] = FULL_METHODS
    full_seeds: tuple[int, ...] = (0,)
    full_n_questions: int | None = None
    """Questions of the "full" runs: None = the whole set (the study); a number = a larger
    seeded subset that stands in for it (the smoke preset), always including the subset."""
    models: tuple[str, ...] = ()
    """Model names for backends that take one (vLLM, OpenAI); empty = the backend's own."""
    debate: DebateConfig = field(default_factory=DebateConfig)
    router: RouterConfig = field(default_factory=RouterConfig)
    chunk_questions: int = 8  # our choice
    """(seed, question) groups per engine batch: larger batches feed the backend better,
    smaller ones write records sooner."""
    shard: tuple[int, int] | None = None
    """``(i, N)``: run only the i-th (1-based) of N deterministic parts of the grid; None =
    all of it."""
    study_scope: bool = True  # paper
    """Run models of the study's registry on the part of the grid the study ran on them
    (their method set, question count and full-set runs); False = the whole grid."""

    def __post_init__(self) -> None:
        from pear.tasks.benchmarks import DATASETS
        for name, values, allowed in (("datasets", self.datasets, DATASETS),
                                      ("full_datasets", self.full_datasets, DATASETS)):
            bad = [v for v in values if v not in allowed]
            if bad:
                raise ValueError(f"invalid {name}: unknown {bad[0]!r}; choose from "
                                 f"{', '.join(allowed)}")
        for name, values in (("methods", self.methods), ("full_methods", self.full_methods)):
            for v in values:
                if v not in METHODS:  # a plug-in: registered now, or loadable
                    try:
                        method_spec(v)
                    except ValueError as err:
                        raise ValueError(f"invalid {name}: {err}") from None
        if not self.seeds or any(not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ValueError(f"invalid seeds={self.seeds!r}: give non-negative integers")
        for name in ("n_questions", "full_n_questions"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"invalid {name}={v!r}: use an integer >= 1 or None")
        if self.chunk_questions < 1:
            raise ValueError(f"invalid chunk_questions={self.chunk_questions!r}: use >= 1")
        if self.shard is not None:
            ok = (isinstance(self.shard, tuple) and len(self.shard) == 2
                  and all(isinstance(v, int) for v in self.shard)
                  and 1 <= self.shard[0] <= self.shard[1])
            if not ok:
                raise ValueError(f"invalid shard={self.shard!r}: use (i, N) with 1 <= i <= N")

    def protocol(self) -> dict[str, Any]:
        """What must agree between runs that append to one directory."""
        return {"debate": identity_dict(self.debate),
                "router": identity_dict(self.router),
                "question_seed": self.question_seed}

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(dataclasses.asdict(self)))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Experiment":
        """The experiment :meth:`to_dict` recorded (e.g. in a run manifest).

        >>> e = preset("smoke", seeds=(3,))
        >>> Experiment.from_dict(e.to_dict()) == e
        True
        """
        def tup(v: Any) -> Any:
            return tuple(v) if isinstance(v, list) else v
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - fields
        if unknown:
            raise ValueError(f"unknown experiment field {sorted(unknown)[0]!r} in the record")
        kw = {k: tup(v) for k, v in d.items() if k not in ("debate", "router")}
        debate = {k: tup(v) for k, v in d.get("debate", {}).items()}
        return cls(**kw, debate=DebateConfig(**debate), router=RouterConfig(**d.get("router", {})))


PRESETS: dict[str, Experiment] = {
    # the study's setting: 4 datasets x 14 methods x 5 seeds x 200 questions; full sets for
    # TruthfulQA and MATH-500 (7 methods, one seed)
    "paper": Experiment("paper", methods=METHODS + SC_METHODS,
                        full_datasets=("truthfulqa", "math500")),
    # the pipeline check: the smallest grid that still feeds every table and figure with a
    # real model's records (every method and dataset: 1 question per dataset, 1 seed, 3
    # agents, 1 round, 112 tokens a call; the "full-set" runs use 2 TruthfulQA questions
    # standing in for the 817).  One seed: spreads across seeds are shown by the sim build,
    # not this one.  Sized for the 10-minute default `make paper` on 2 cores (our choice).
    "smoke": Experiment("smoke", seeds=(0,), n_questions=1, full_datasets=("truthfulqa",),
                        full_n_questions=2, full_seeds=(0,),
                        debate=DebateConfig(n_agents=3, rounds=1, k=1, max_tokens=112,
                                            prompt_style="compact"),
                        chunk_questions=3),
    # the paper grid for the simulated backend (cheap, so everything is run)
    "sim": Experiment("sim", methods=METHODS + SC_METHODS,
                      full_datasets=("truthfulqa", "math500"), chunk_questions=50),
    # the four open studies (notebooks 09-12, pear.paper.studies): the study's protocol on 30
    # questions per dataset x 2 seeds, the methods those studies vary; sized so that the
    # simulated build of 09-12 takes a few minutes on 2 cores (our choice)
    "beyond": Experiment("beyond", methods=("clique", "star", "ring", "random", "pear",
                                            "pear_T", "pear_L"),
                         seeds=(0, 1), n_questions=30, chunk_questions=30),
}


DEBATE_SETTINGS = tuple(f.name for f in dataclasses.fields(DebateConfig))
"""Settings :func:`preset` passes to the debate config."""
PRESET_SETTINGS = tuple(f.name for f in dataclasses.fields(Experiment)
                        if f.name not in ("name", "debate", "router")) + DEBATE_SETTINGS
"""Every setting :func:`preset` takes: the experiment's fields and its debate config's."""


def preset(name: str, **overrides: Any) -> Experiment:
    """A named preset with overrides (``rounds``, ``n_agents``, ``k``, ``max_tokens``,
    ``temperature``, ``prompt_style``, ``stop``, ``roles``, ``agent_models`` go to the debate
    config; ``roles`` may be ``{agent (from 1): role}`` assignments).

    >>> preset("smoke", seeds=(3,)).seeds
    (3,)
    >>> preset("smoke", roles={2: "adversarial"}).debate.roles
    ('honest', 'adversarial', 'honest')
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}: choose one of {', '.join(PRESETS)}")
    exp = PRESETS[name]
    debate_over = {k: overrides.pop(k) for k in DEBATE_SETTINGS if k in overrides}
    if debate_over:
        d = dataclasses.asdict(exp.debate) | debate_over
        if "n_agents" in debate_over and "k" not in debate_over:
            d["k"] = min(d["k"], d["n_agents"] - 1)
        if isinstance(d["roles"], Mapping):
            d["roles"] = roles_for(d["n_agents"], d["roles"])
        overrides["debate"] = DebateConfig(**d)
    unknown = set(overrides) - {f.name for f in dataclasses.fields(Experiment)}
    if unknown:
        raise ValueError(f"unknown experiment setting {sorted(unknown)[0]!r}")
    if overrides.get("models"):
        from pear.catalog.models import expand
        overrides["models"] = expand(tuple(overrides["models"]))
    return _filter_full(replace(exp, **overrides), set(overrides))


def _filter_full(exp: Experiment, given: set[str]) -> Experiment:
    """The full-set part of ``exp`` under the filters given (``datasets``, ``methods``,
    ``seeds``, ``n_questions``): a filter applies to every part of a grid, so the full-set
    runs keep only the datasets, methods and seeds asked for, and no more questions than
    ``n_questions``; a part left empty is dropped.  Full-set settings given explicitly are
    kept as given.

    >>> e = preset("sim", datasets=("gsm8k", "math500"), methods=("pear", "cot_sc"),
    ...            n_questions=12)
    >>> e.full_datasets, e.full_methods, e.full_n_questions
    (('math500',), ('cot_sc', 'pear'), 12)
    >>> preset("sim", datasets=("gsm8k",)).full_datasets
    ()
    """
    full: dict[str, Any] = {}
    if "datasets" in given and "full_datasets" not in given:
        full["full_datasets"] = tuple(d for d in exp.full_datasets if d in exp.datasets)
    if "methods" in given and "full_methods" not in given:
        full["full_methods"] = tuple(m for m in exp.full_methods if m in exp.methods)
    if "seeds" in given and "full_seeds" not in given:
        full["full_seeds"] = tuple(s for s in exp.full_seeds if s in exp.seeds)
    if "n_questions" in given and "full_n_questions" not in given \
            and exp.n_questions is not None:
        full["full_n_questions"] = min(exp.full_n_questions or exp.n_questions,
                                       exp.n_questions)
    if not (full.get("full_methods", True) and full.get("full_seeds", True)):
        full["full_datasets"] = ()
    return replace(exp, **full) if full else exp


def parse_shard(text: str) -> tuple[int, int]:
    """``"i/N"`` as ``(i, N)``.

    >>> parse_shard("2/4")
    (2, 4)
    >>> parse_shard("3/2")
    Traceback (most recent call last):
    ...
    ValueError: invalid shard '3/2': use i/N with 1 <= i <= N, e.g. 1/4
    """
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"invalid shard {text!r}: use i/N with 1 <= i <= N, e.g. 1/4")
    return int(m.group(1)), int(m.group(2))


def model_grid(exp: Experiment, model: str | None) -> Experiment:
    """The grid ``model`` runs: for a model of the study's registry (``exp.study_scope``),
    the study's part of it (methods, questions per dataset, full-set runs); otherwise
    ``exp`` unchanged.

    >>> g = model_grid(preset("paper"), "Qwen/Qwen3-30B-A3B")
    >>> len(preset("paper").methods), len(g.methods), g.full_datasets
    (18, 12, ())
    >>> model_grid(preset("paper"), "gpt-5.4-nano").n_questions
    100
    """
    from pear.catalog.models import lookup
    found = lookup(model) if (model and exp.study_scope) else None
    if found is None:
        return exp
    return replace(
        exp,
        methods=tuple(m for m in exp.methods if m in found.methods or is_self_consistency(m)),
        full_methods=tuple(m for m in exp.full_methods if m in found.methods),
        full_datasets=tuple(d for d in exp.full_datasets if d in found.full_datasets),
        n_questions=None if exp.n_questions is None else min(exp.n_questions,
                                                             found.n_questions))


def grid_questions(exp: Experiment) -> list[tuple[Any, bool]]:
    """(question, in_subset) for every question the grid needs, subset first."""
    out, seen = [], set()
    for ds in exp.datasets:
        for q in subset_questions(exp, ds):
            out.append((q, True))
            seen.add((ds, q.id))
    for ds in exp.full_datasets:
        for q in full_questions(exp, ds):
            if (ds, q.id) not in seen:
                out.append((q, False))
    return out


def subset_questions(exp: Experiment, dataset: str) -> list[Any]:
    """The seeded subset of ``dataset`` the grid runs every method on."""
    from pear.tasks.benchmarks import load
    return load(dataset, n=exp.n_questions, seed=exp.question_seed)


def full_questions(exp: Experiment, dataset: str) -> list[Any]:
    """The questions of the full-set runs: the whole set, or (``full_n_questions``) a larger
    sample that contains the subset."""
    from pear.tasks.benchmarks import load
    if exp.full_n_questions is None:
        return load(dataset)
    subset = subset_questions(exp, dataset)
    ids = {q.id for q in subset}
    extra = [q for q in load(dataset, n=min(len(load(dataset)), exp.full_n_questions
                                            + len(subset)), seed=exp.question_seed + 1)
             if q.id not in ids][: max(0, exp.full_n_questions - len(subset))]
    keep = ids | {q.id for q in extra}
    return [q for q in load(dataset) if q.id in keep]


SCOPES = ("subset", "full")


def scope_debates(exp: Experiment, scope: str) -> list[tuple[str, str, int, str]]:
    """``(dataset, question id, seed, method)`` of every debate in one scope of the grid:
    ``subset`` = every method x seed on the seeded subset of each dataset; ``full`` = the
    full-set methods x seeds on :func:`full_questions` of each full-set dataset (a debate in
    both scopes is run once and read by both).  The union of the scopes is :func:`jobs`;
    the analysis asks this function which records belong to a table.

    >>> len(scope_debates(preset("smoke"), "full")), len(scope_debates(preset("smoke"), "subset"))
    (14, 56)
    """
    if scope == "subset":
        plan = [(ds, subset_questions(exp, ds), exp.seeds, exp.methods) for ds in exp.datasets]
    elif scope == "full":
        if not exp.full_datasets:
            raise ValueError(f"preset {exp.name!r} runs no full dataset (full_datasets is "
                             "empty): nothing in scope 'full'")
        plan = [(ds, full_questions(exp, ds), exp.full_seeds, exp.full_methods)
                for ds in exp.full_datasets]
    else:
        raise ValueError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    return [(ds, q.id, seed, m) for ds, questions, seeds, methods in plan
            for q in questions for seed in seeds for m in methods]


def jobs(exp: Experiment) -> list[Job]:
    """Every debate of the grid for one model (subset: all methods x seeds; full sets:
    ``full_methods`` x ``full_seeds``), grouped by (seed, question)."""
    out, seen = [], set()
    for q, in_subset in grid_questions(exp):
        plans = []
        if in_subset:
            plans.append((exp.seeds, exp.methods))
        if q.dataset in exp.full_datasets:
            plans.append((exp.full_seeds, exp.full_methods))
        for seeds, methods in plans:
            for seed in seeds:
                for m in methods:
                    if (seed, q.dataset, q.id, m) not in seen:
                        seen.add((seed, q.dataset, q.id, m))
                        out.append(Job(q, method(m, exp.router), seed))
    out.sort(key=lambda j: (j.seed, j.question.dataset))  # stable: keeps question order
    return _shard(out, exp.shard) if exp.shard else out


def _shard(all_jobs: list[Job], shard: tuple[int, int]) -> list[Job]:
    """The jobs of part ``i`` of ``N`` (:func:`_parts`)."""
    i, n = shard
    part = _parts(all_jobs, n)
    return [j for j in all_jobs if part[(j.seed, j.question.dataset, j.question.id)] == i - 1]


def _parts(all_jobs: list[Job], n: int) -> dict[tuple, int]:
    """The part (0-based) of every (seed, dataset, question) group: whole groups (they share
    round 0), each given in grid order to the part with the fewest debates so far (lowest
    index on ties), so the parts are disjoint, cover the grid and differ by at most one
    group."""
    groups: dict[tuple, int] = {}
    for j in all_jobs:
        key = (j.seed, j.question.dataset, j.question.id)
        groups[key] = groups.get(key, 0) + 1
    load = [0] * n
    part: dict[tuple, int] = {}
    for key, size in groups.items():
        p = min(range(n), key=lambda q: (load[q], q))
        load[p] += size
        part[key] = p
    return part


def shard_sizes(exp: Experiment, n: int) -> list[int]:
    """Debates in each of the ``n`` shards of ``exp``'s grid (``len(jobs(...shard=(i, n)))``
    for i = 1..n, from one pass over the grid).

    >>> shard_sizes(preset("smoke"), 3)
    [28, 21, 14]
    """
    counts = [0] * n
    all_jobs = jobs(replace(exp, shard=None))
    part = _parts(all_jobs, n)
    for j in all_jobs:
        counts[part[(j.seed, j.question.dataset, j.question.id)]] += 1
    return counts


def answer_key(exp: Experiment) -> dict[tuple[str, str], str]:
    """Gold answers of the grid's questions, for the simulated backend only."""
    return {(q.dataset, q.id): q.gold for q, _ in grid_questions(exp)}


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


def _versions(backend_name: str) -> dict[str, str]:
    names = ["pear", "numpy", "pandas", "math-verify"]
    names += {"llamacpp": ["llama_cpp_python"], "openai": ["openai"], "vllm": ["vllm", "torch"]}\
        .get(backend_name, [])
    out = {"python": platform.python_version()}
    for n in names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).resolve().parent, timeout=10).stdout.strip() \
            or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


read_manifest = manifest_io.read  # the run directory's manifest, or None


def _shard_text(shard: tuple[int, int] | None) -> str | None:
    return None if shard is None else f"{shard[0]}/{shard[1]}"


def run(exp: Experiment, backend: Any | Callable[[str], Any], out_dir: str | os.PathLike[str],
        *, progress: bool = True, task_for: Callable[[str], Any] | None = None,
        stop: Callable[[], bool] | None = None) -> RunSummary:
    """Run every missing debate of ``exp`` into ``out_dir``.

    ``stop`` (e.g. set by a scheduler's SIGTERM) is asked after every chunk: when it
    answers True the debates in flight have finished and are recorded, and the run returns
    incomplete (``summary.stopped``); running it again resumes.

    ``backend`` is a Backend (one model) or a callable ``model name -> Backend`` (one per
    entry of ``exp.models``, or one per distinct ``exp.debate.agent_models`` for a mixed
    population, which runs as one unit).  With a callable, the models run one after another
    and each backend is built only when its turn comes and dropped afterwards (one GPU engine
    at a time); each model's grid is :func:`model_grid`'s.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with _writer_lock(out):
        return _run(exp, backend, out, progress=progress, task_for=task_for, stop=stop)


@contextlib.contextmanager
def _writer_lock(out: Path) -> Iterator[None]:
    """One ``run`` writes into a directory at a time: a second one (e.g. a requeued task
    starting while the stopped one finishes its debates in flight) waits for the first, then
    resumes from what it recorded, so no debate is run twice."""
    import fcntl
    with open(out / LOCK_FILE, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"pear: another run is writing into {str(out)!r}; waiting for it to end",
                  file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


LOCK_FILE = ".pear-run.lock"


def _run(exp: Experiment, backend: Any, out: Path, *, progress: bool,
         task_for: Callable[[str], Any] | None, stop: Callable[[], bool] | None) -> RunSummary:
    from pear.tasks import grading as tasks
    factory = callable(backend) and not hasattr(backend, "generate")
    if exp.debate.agent_models:
        if not factory or exp.models:
            raise ValueError("a mixed population (agent_models) needs a backend factory "
                             "(model name -> Backend) and no separate models")
        population = Population({m: backend(m) for m in dict.fromkeys(exp.debate.agent_models)},
                                exp.debate.agent_models)
        backend, factory = population, False
    names: list[str | None] = list(exp.models) if factory and exp.models else [None]
    old = read_manifest(out)
    resuming = factory and bool(exp.models) and old is not None \
        and old.get("models") == names and len(old.get("model_ids", [])) == len(names)
    # resuming several models: no backend is built (no model loaded) before it is needed
    current: Any = None if resuming else (backend(names[0]) if factory else backend)
    grid_names = names if factory and exp.models else [current.model_id]
    manifest = open_manifest(exp, out, old, old["backend"] if resuming else current.name,
                              grid_names)
    grid_jobs = [jobs(model_grid(exp, n)) for n in grid_names]
    summary = RunSummary(total=sum(map(len, grid_jobs)), already_done=0, written=0,
                         failed=[], generate_calls=0, requests=0, tokens=0, cache_hits=0)
    bar = Progress(sum(debate_rounds(j, model_grid(exp, n).debate.rounds)
                       for n, js in zip(grid_names, grid_jobs) for j in js), progress)
    for name, all_jobs in zip(names, grid_jobs):
        finished = _finished_earlier(exp, old, manifest["backend"], name, all_jobs, out) \
            if current is None else None
        if finished is not None:  # not loaded again: its ids and settings are in the manifest
            summary.already_done += len(all_jobs)
            bar.skip(sum(debate_rounds(j, model_grid(exp, name).debate.rounds)
                         for j in all_jobs))
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
        engine = Engine(be.backends if isinstance(be, Population) else be,
                        model_grid(exp, name).debate, task_for=task_for or tasks.get)
        _run_jobs(engine, all_jobs, model_dir(out, be.model_id), exp.chunk_questions, bar,
                  summary, stop)
        del be, engine
        if stop is not None and stop():
            summary.stopped = True
            break
    bar.close()
    manifest["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    manifest["complete"] = summary.complete
    manifest_io.write(out, manifest)
    return summary


def open_manifest(exp: Experiment, out: Path, old: Mapping[str, Any] | None,
                   backend_name: str, grid_names: Sequence[Any]) -> dict[str, Any]:
    """The run's manifest, checked against the one already in ``out`` (results of another
    setting are refused) and written before any debate runs."""
    from pear.tasks.benchmarks import sha256_files
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    manifest: dict[str, Any] = {
        "protocol": exp.protocol(),
        "backend": backend_name,
        "models": [str(n) for n in grid_names],
        "data_sha256": sha256_files(),
        "shard": _shard_text(exp.shard),
    }
    if old is not None:
        manifest_io.check(old, manifest, out)
    manifest.update({
        "experiments": (old or {}).get("experiments", []) + [exp.to_dict()],
        "backend_settings": [], "model_ids": [],
        "versions": _versions(backend_name), "git_commit": _git_commit(),
        "started_at": (old or {}).get("started_at", started), "resumed_at": started,
        "finished_at": None, "command": " ".join(map(str, sys.argv)),
    })
    attempt = _scheduler_attempt()
    if attempt or (old or {}).get("attempts"):
        manifest["attempts"] = (old or {}).get("attempts", []) + ([attempt] if attempt else [])
    plugins = {**(old or {}).get("plugins", {}),
               **{m: p for m in dict.fromkeys((*exp.methods, *exp.full_methods))
                  if (p := method(m, exp.router).provenance()) is not None}}
    if plugins:  # the study's methods only: no key, the manifest as it always was
        manifest["plugins"] = plugins
    manifest_io.write(out, manifest)
    return manifest


def _scheduler_attempt() -> dict[str, Any] | None:
    """This start of the run as a Slurm task (job, array task, ``SLURM_RESTART_COUNT``,
    node), for the manifest's ``attempts``; None outside Slurm."""
    env = os.environ
    if "SLURM_JOB_ID" not in env:
        return None
    return {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "slurm_job_id": env.get("SLURM_JOB_ID"),
            "array_job_id": env.get("SLURM_ARRAY_JOB_ID"),
            "array_task_id": env.get("SLURM_ARRAY_TASK_ID"),
            "restart_count": int(env.get("SLURM_RESTART_COUNT") or 0),
            "node": env.get("SLURMD_NODENAME") or platform.node()}


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


def _run_jobs(engine: Engine, all_jobs: Sequence[Job], rdir: Path, chunk_questions: int,
              bar: Progress, summary: RunSummary, stop: Callable[[], bool] | None = None
              ) -> None:
    """Run the jobs not yet recorded in ``rdir``, appending each record as it finishes
    (flushed; fsynced after every chunk), and add the engine's counts to ``summary``."""
    done = completed_ids(rdir)
    todo = [j for j in all_jobs if engine.debate_id(j) not in done]
    summary.already_done += len(all_jobs) - len(todo)
    todo_ids = {id(j) for j in todo}
    bar.skip(sum(engine.steps(j) for j in all_jobs if id(j) not in todo_ids))
    bar.follow(engine)
    with RecordWriter(rdir) as writer:
        for chunk in _chunks(todo, chunk_questions):
            for record in engine.run(chunk):
                writer.write(record)
                summary.written += 1
                bar.counts(summary.written)
            writer.sync()
            if stop is not None and stop():
                summary.stopped = True
                break
    summary.failed += engine.failed
    summary.generate_calls += engine.generate_calls
    summary.requests += engine.requests
    summary.tokens += engine.tokens
    summary.cache_hits += engine.cache_hits


class Population:
    """A mixed population run as one unit (``{model name: backend}``, the agents' models in
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
    """Whether every job of a model is recorded; debate ids need only the model id and the
    backend name, so no model is loaded to find out."""

    class _Identity:  # what Engine.identity reads from a backend
        def __init__(self) -> None:
            self.model_id, self.name = model_id, backend_name

    engine = Engine(_Identity(), exp.debate)  # type: ignore[arg-type]
    return all(engine.debate_id(j) in done for j in all_jobs)


def _chunks(todo: Sequence[Job], per_chunk: int) -> Iterable[list[Job]]:
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


class Progress:
    """A run's progress bar in debate-rounds (round 0's initial answers and every debate
    round of every debate): debates advance in lockstep and finish together, so rounds are
    the unit that moves between phases, and model calls (counted as each completes, where
    the backend reports it) move within one.  The engine's phase (``round 2: critiques``)
    is its description; debates written, calls, tokens and failures its postfix."""

    def __init__(self, total_rounds: int, enabled: bool = True) -> None:
        from tqdm.auto import tqdm
        self.bar = tqdm(total=total_rounds, desc="debate rounds", unit="round",
                        disable=not enabled, dynamic_ncols=True, mininterval=0.5)
        self.debates = 0

    def skip(self, rounds: int) -> None:
        """Rounds of debates recorded earlier (nothing to run)."""
        self.bar.update(rounds)

    def follow(self, engine: Engine) -> None:
        """Move with ``engine`` from now on (its phase, calls and rounds done)."""
        base = self.bar.n - engine.rounds_done

        def moved() -> None:
            self.bar.set_description_str(engine.phase, refresh=False)
            self.bar.set_postfix(debates=self.debates, calls=engine.calls_done,
                                 tokens=engine.tokens, failed=len(engine.failed),
                                 refresh=False)
            self.bar.update(base + engine.rounds_done - self.bar.n)  # redrawn at most 2/s
        engine.on_progress = moved

    def counts(self, debates: int) -> None:
        """Debates written so far."""
        self.debates = debates

    def close(self) -> None:
        self.bar.set_description_str("debate rounds", refresh=False)
        self.bar.close()