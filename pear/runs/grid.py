"""Experiment grids: models x datasets x methods x seeds x questions, the named presets and
the filters that narrow them.

An :class:`Experiment` is a grid of debates and the protocol they share; :data:`PRESETS` are
the named grids (``paper``, ``smoke``, ``sim``, ``beyond``) and :func:`preset` one of them with
overrides.  Models of the study's registry (:mod:`pear.catalog.models`) run the part of the
grid the study ran on them (:func:`model_grid`).  Which questions the grid asks
(:func:`grid_questions`) and which debates belong to a scope of it (:func:`scope_debates`) are
answered here; the debates themselves are :func:`pear.runs.jobs.jobs`.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from pear.backends.registry import BACKENDS
from pear.core.config import DebateConfig, RouterConfig, identity_dict, roles_for
from pear.core.methods import METHODS
from pear.methods import is_self_consistency, spec as method_spec
from pear.tasks.benchmarks import DATASETS, load
from pear.catalog.models import expand, lookup

__all__ = ["Experiment", "PRESETS", "preset", "PRESET_SETTINGS", "DEBATE_SETTINGS",
           "model_grid", "grid_questions", "subset_questions", "full_questions", "SCOPES",
           "scope_debates", "answer_key", "MODEL_BACKENDS", "experiment"]

FULL_METHODS = ("cot", "cot_sc", "clique", "star", "chain", "ring", "pear")  # paper's full-set table
SC_SIZES = (10, 20, 40, 64)
"""The ``sc@K`` the ``paper`` and ``sim`` presets add to the study's methods (equal-compute
self-consistency; ``sc@5`` is the study's CoT-SC at n = 5).  64 reaches past a debate's cost
(the study quotes 32.3k tokens for PEAR, about 52 CoT answers), so the comparison at a
debate's tokens interpolates instead of holding the last K (our choice)."""
SC_METHODS = tuple(f"sc@{k}" for k in SC_SIZES)  # our choice
"""Self-consistency at more samples, for comparisons at equal compute (notebook 07)."""


@dataclass(frozen=True)
class Experiment:
    """A grid of debates and the protocol they share."""

    name: str
    datasets: tuple[str, ...] = DATASETS
    """The benchmarks (default: all four, in the tables' order, :data:`pear.tasks.benchmarks.DATASETS`)."""
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
    # the four open studies (notebooks 09-12, pear.paper.beyond): the study's protocol on 30
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
        overrides["models"] = expand(tuple(overrides["models"]))
    return _filter_full(replace(exp, **overrides), set(overrides))


MODEL_BACKENDS = tuple(n for n, s in BACKENDS.items() if s.takes_model_name)
"""The backends that take a model name (:mod:`pear.backends.registry`): the grid's ``models``
are theirs; the others (a GGUF file, the simulator, replay) run their own model and ignore one
given."""


def experiment(preset_name: str, *, backend: str | None, models: tuple[str, ...] = (),
               **settings: Any) -> Experiment:
    """The grid user parameters choose (``pear run``, ``pear plan``, ``pear launch``, the
    notebooks): :func:`preset` with ``settings``, and ``models`` as the grid's models when
    ``backend`` takes a model name (:data:`MODEL_BACKENDS`; None = any, as a plan).

    >>> experiment("smoke", backend="vllm", models=("tiny",)).models
    ('tiny',)
    >>> experiment("smoke", backend="simulated", models=("tiny",)).models
    ()
    """
    if models and (backend is None or backend in MODEL_BACKENDS):
        settings["models"] = tuple(models)
    return preset(preset_name, **settings)


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
    return load(dataset, n=exp.n_questions, seed=exp.question_seed)


def full_questions(exp: Experiment, dataset: str) -> list[Any]:
    """The questions of the full-set runs: the whole set, or (``full_n_questions``) a larger
    sample that contains the subset."""
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
    both scopes is run once and read by both).  The union of the scopes is
    :func:`pear.runs.jobs.jobs`; the analysis asks this function which records belong to a
    table.

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


def answer_key(exp: Experiment) -> dict[tuple[str, str], str]:
    """Gold answers of the grid's questions, for the simulated backend only."""
    return {(q.dataset, q.id): q.gold for q, _ in grid_questions(exp)}
