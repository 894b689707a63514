"""What the analysis notebooks share: the debates of one scope of a preset's grid with their
provenance (:func:`results`, :func:`load_results`, :class:`Results`), accuracy shaped for
the study's tables, and the significance tests of both scopes.

Which debates belong to a scope is asked of :func:`pear.runs.grid.scope_debates`, never
re-derived here.  The records are read through the run directory's columnar view
(:mod:`pear.store.view`): built or updated when needed, texts left in the JSON Lines.

Elsewhere: the build and the notebooks' parameters (:mod:`pear.paper.build`), metrics
(:mod:`pear.analysis.metrics`), tests (:mod:`pear.analysis.stats`), the study's printed numbers
(:mod:`pear.analysis.compare`), tables (:mod:`pear.analysis.report`), plots (:mod:`pear.analysis.figures`), the
case-study transcript (:mod:`pear.analysis.transcript`).

>>> MAIN_METHODS
('cot', 'cot_sc', 'clique', 'star', 'chain', 'ring', 'random', 'pear')
"""
from __future__ import annotations

import dataclasses
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
import re
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from pear.analysis import metrics, report
from pear.backends.registry import SIMULATED, names as backend_names, spec as backend_spec
from pear.core.config import whole_number
from pear.store import manifest, view
from pear.catalog.labels import (MAIN_METHODS, ROUTING_VARIANTS, dataset_label, evidence_mark,
                         model_labels, with_plugins)
from pear.methods import load_plugins, plugin_names
from pear.paths import REPO_ROOT, RUNS_DIR
from pear.runs.factory import sim_population
from pear.runs.grid import experiment as grid_experiment, full_questions, model_grid, scope_debates
from pear.sim.population import BUILD_DEFAULT, load as load_population
from pear.store.records import read_record_at
from pear.tasks.benchmarks import load

__all__ = [
    "MAIN_METHODS", "ROUTING_VARIANTS", "with_plugins", "BACKENDS", "REPO_ROOT", "experiment", "runs_path",
    "Results", "results", "load_results", "accuracy", "select", "cost_accuracy",
    "significance_sets", "describe_scope", "is_imported",
]

BACKENDS = backend_names()
"""The notebook build's backends: every name of :mod:`pear.backends.registry`, where
``pear.backends.registry.REPLAY`` runs nothing and reads the records already in the run
directory."""


# ----------------------------------------------------------------- the notebooks' parameters

def runs_path(runs_dir: str, preset: str, backend: str, population: str = "") -> Path:
    """The run directory: ``runs_dir`` if given, else ``data/runs/<preset>-<backend>``, and
    for a simulated population other than the build default (``population``, else
    ``$PEAR_POPULATION``: a name or a population file) ``data/runs/<preset>-simulated-<name>``,
    named after the population's own name (a file's ``name``, not its path; a file that holds
    the build default itself is the build default's run)."""
    if runs_dir:
        return Path(runs_dir).expanduser().resolve()
    name = f"{preset}-{backend}"
    if backend == SIMULATED:
        chosen = load_population(sim_population(population or None))
        if chosen.name != BUILD_DEFAULT or chosen.fingerprint != load_population(
                BUILD_DEFAULT).fingerprint:
            name += f"-{chosen.name}"
    return RUNS_DIR / name


def _seeds(seeds: str | Sequence[int]) -> tuple[int, ...] | None:
    if isinstance(seeds, str):
        items = [s.strip() for s in seeds.split(",") if s.strip()]
        if not items:
            return None
        if not all(re.fullmatch(r"\d+", s) for s in items):
            raise ValueError(f"invalid seeds {seeds!r}: give comma-separated non-negative "
                             "integers, e.g. '0,1,2', or '' for the preset's")
        return tuple(int(s) for s in items)
    return tuple(int(s) for s in seeds) or None


def experiment(preset: str, seeds: str | Sequence[int] = "", n_questions: int = 0,
               model: str = "", backend: str = "") -> Any:
    """The preset's :class:`pear.runs.grid.Experiment` with the notebook parameters:
    ``seeds`` ("" = the preset's), ``n_questions`` (0 = the preset's) and ``model`` as the
    grid's model where the backend takes one (:func:`pear.runs.grid.experiment`).

    >>> e = experiment("smoke", seeds="3,4", n_questions=5)
    >>> e.seeds, e.n_questions
    ((3, 4), 5)
    """
    if backend:
        backend_spec(backend)  # an unknown name: one error listing the names
    over: dict[str, Any] = {}
    if (parsed := _seeds(seeds)) is not None:
        over["seeds"] = parsed
    n_questions = whole_number(n_questions, "n_questions", 0, fix="use 0 (the preset's) or more")
    if n_questions:
        over["n_questions"] = int(n_questions)
    exp = grid_experiment(preset, backend=backend, models=(model,) if model else (), **over)
    load_plugins()  # entry points and $PEAR_PLUGINS (pear paper --plugin): their methods run too
    extra = [m for m in plugin_names(("entry point", "module")) if m not in exp.methods]
    return dataclasses.replace(exp, methods=exp.methods + tuple(extra)) if extra else exp




@dataclass
class Results:
    """The debates of one scope of a run (``subset``: the grid's seeded subset questions,
    every method and seed; ``full``: the full-set datasets, methods and seeds) as the
    view's tables, and their provenance."""

    view: view.View
    exp: Any
    scope: str
    runs_dir: Path
    grid: str = ""
    """What the scope covers, in words (:func:`describe_scope`)."""
    backends: tuple[str, ...] = field(init=False)
    models: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        deb = self.view.debates
        self.backends = tuple(sorted(set(deb["backend"])))
        self.models = tuple(sorted(set(deb["model"])))
        if not self.grid:
            self.grid = describe_scope(self.exp, self.scope)

    @property
    def debates(self) -> pd.DataFrame:
        """One row per debate (:data:`pear.store.columns.SCHEMAS` ``debates``)."""
        return self.view.debates

    @property
    def agent_rounds(self) -> pd.DataFrame:
        return self.view.agent_rounds

    @property
    def edges(self) -> pd.DataFrame:
        return self.view.edges

    @property
    def rounds(self) -> pd.DataFrame:
        return self.view.rounds

    def record(self, debate_id: str) -> dict[str, Any]:
        """One debate's full record, texts included, read from its JSON Lines file."""
        return self.view.record(debate_id)

    def records(self) -> Iterator[dict[str, Any]]:
        """The full records of these debates (texts included), streamed in the order of
        (seed, dataset, question id, method, debate id): the same order whichever run
        directory holds them and in whatever order they were written or resumed."""
        deb = self.debates
        order = deb.assign(**{c: deb[c].astype(str) for c in
                              ("dataset", "question_id", "method", "debate_id")}).sort_values(
            ["seed", "dataset", "question_id", "method", "debate_id"], kind="stable")
        files = self.view.files
        for did, file, offset in zip(order["debate_id"], order["file"], order["offset"]):
            yield read_record_at(files[file], int(offset)) if 0 <= file < len(files) \
                else self.view.record(did)  # an in-memory view: the record itself

    @property
    def simulated(self) -> bool:
        """Whether any record comes from simulated agents."""
        return SIMULATED in self.backends

    @property
    def model_names(self) -> tuple[str, ...]:
        """The models' display names (:func:`pear.catalog.labels.model_labels`), in :attr:`models`
        order; the full identities stay in the manifest and the records."""
        names = model_labels(self.models)
        return tuple(names[m] for m in self.models)

    @property
    def source(self) -> str:
        """Provenance for figures (``source=``; the plots add :attr:`mark` with ``mark=``):
        backend(s) and the models' display names."""
        return f"backend {', '.join(self.backends)}; model {', '.join(self.model_names)}"

    @property
    def mark(self) -> str:
        """What these results are not (:func:`pear.catalog.labels.evidence_mark`): "simulated
        agents", "pipeline check (135M model, 1 question per dataset): not evidence" for the
        smoke preset, or ""."""
        if is_imported(self.runs_dir):
            return "imported debates, not run here"
        n = self.exp.full_n_questions if self.scope == "full" else self.exp.n_questions
        return evidence_mark(simulated=self.simulated, preset=self.exp.name,
                             models=self.models, n_questions=n)

    @property
    def label(self) -> str:
        """Provenance for captions: :attr:`source`, prefixed by :attr:`mark` if any."""
        return f"{self.mark} ({self.source})" if self.mark else self.source

    def caption(self, text: str) -> str:
        """``text`` with the grid and the provenance appended."""
        return f"{text} {self.grid[0].upper()}{self.grid[1:]}; {self.label}."

    def summary(self) -> pd.DataFrame:
        """Debates per (model display name, method) and dataset."""
        names = model_labels(self.models)
        deb = self.debates.assign(model=self.debates["model"].map(names))
        return deb.pivot_table(index=["model", "method"], columns="dataset",
                               values="debate", aggfunc="size", fill_value=0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def describe_scope(exp: Any, scope: str) -> str:
    """What one scope of ``exp``'s grid covers, in words; a full-set scope that runs a
    sample of a set (``full_n_questions``) names it a stand-in for the full set.

    >>> from pear.runs.grid import preset
    >>> describe_scope(preset("smoke"), "full")
    '2-question stand-in for the full TruthfulQA set (817 questions), seed 0'
    >>> describe_scope(preset("smoke"), "subset")
    '1 question per dataset (question seed 0) x 1 seed'
    """
    if scope == "full":
        seeds = f"seed{'s' if len(exp.full_seeds) > 1 else ''} " \
                f"{', '.join(map(str, exp.full_seeds))}"
        if exp.full_n_questions is None:
            names = ", ".join(f"{dataset_label(d)} {len(load(d))}" for d in exp.full_datasets)
            return f"full sets ({names}), {seeds}"
        parts = [f"{len(full_questions(exp, d))}-question stand-in for the full "
                 f"{dataset_label(d)} set ({len(load(d))} questions)" for d in exp.full_datasets]
        return f"{'; '.join(parts)}, {seeds}"
    n = "all" if exp.n_questions is None else exp.n_questions
    return (f"{n} question{'' if n == 1 else 's'} per dataset (question seed "
            f"{exp.question_seed}) x {_plural(len(exp.seeds), 'seed')}")


def load_results(runs_dir: str | os.PathLike[str], exp: Any, scope: str = "subset"
                 ) -> Results:
    """The debates of ``runs_dir`` that belong to ``scope`` of ``exp``'s grid
    (:func:`pear.runs.grid.scope_debates`), read through the run's columnar view (indexed
    first if the records changed).

    A (model, dataset, method) cell of the scope without any record is an error naming it;
    debates missing inside a cell are a warning counting them."""
    root = Path(runs_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"run directory {str(root)!r} does not exist: run notebook "
                                "00_run_experiments (or `pear run`) first")
    if is_imported(root):  # debates recorded elsewhere: every one, whatever the preset
        man = manifest.read(root) or {}
        imp = man.get("imported")
        grid = (f"{imp.get('debates')} debates imported from {imp.get('format')} records "
                f"({', '.join(imp.get('datasets') or [])}), not a grid of ours" if imp else
                f"{man['inspect'].get('debates')} debates of PEAR's Inspect solver (pear "
                f"import inspect), not a preset's grid")
        return Results(view.load(root), exp, scope, root, grid=grid)
    keys = ["dataset", "question_id", "seed", "method"]
    scope_debates(exp, scope)  # a scope the preset does not run is an error naming it
    v = view.load(root)
    deb = v.debates
    # each model's part of the grid (model_grid: a study model runs its own methods,
    # questions and full sets), so that a multi-model run is held to each model's grid
    grids = {}
    for m in sorted(set(deb["model"])):
        mexp = model_grid(exp, m)
        rows = scope_debates(mexp, scope) if scope != "full" or mexp.full_datasets else []
        grids[m] = pd.DataFrame(rows, columns=keys).drop_duplicates()
    grid = pd.concat([g.assign(model=m) for m, g in grids.items()]
                     or [pd.DataFrame(columns=[*keys, "model"])], ignore_index=True)
    inside = deb[["model", *keys]].merge(grid.assign(_in=True), on=["model", *keys],
                                         how="left")["_in"].fillna(False).to_numpy(bool)
    if not inside.any():
        raise FileNotFoundError(f"no records of the {scope} grid of preset {exp.name!r} under "
                                f"{str(root)!r}: run notebook 00_run_experiments with the same "
                                "preset, seeds and n_questions")
    res = Results(v.select(inside), exp, scope, root)
    have = res.debates.groupby(["model", "dataset", "method"]).size()
    missing, short = [], 0
    for m in res.models:
        for (ds, meth), n in grids[m].groupby(["dataset", "method"]).size().items():
            got = int(have.get((m, ds, meth), 0))
            if got == 0:
                missing.append(f"{m} x {ds} x {meth}")
            short += n - got
    if missing:
        raise FileNotFoundError(f"{len(missing)} cells of the {scope} grid have no record under "
                                f"{str(root)!r} (first: {missing[0]}): run notebook "
                                "00_run_experiments to finish the grid")
    if short:
        warnings.warn(f"{short} debates of the {scope} grid are missing under {root}; results "
                      "use the recorded ones", RuntimeWarning, stacklevel=2)
    return res


def is_imported(runs_dir: str | os.PathLike[str]) -> bool:
    """Whether ``runs_dir`` holds debates recorded elsewhere and imported (``pear import``):
    another framework's (no confidences, critiques, router or token counts), or PEAR's own
    run through Inspect (``pear import inspect``).  Their methods, datasets and questions are
    the records', not a preset's grid, and a replay cannot run more of them."""
    m = manifest.read(runs_dir) if Path(runs_dir).is_dir() else None
    return bool(m and (m.get("imported") or m.get("inspect")))


def results(backend: str, preset: str, runs_dir: str = "", *, model: str = "",
            seeds: str = "", n_questions: int = 0, scope: str = "subset") -> Results:
    """:func:`load_results` from the notebooks' parameters (:func:`experiment`,
    :func:`runs_path`)."""
    exp = experiment(preset, seeds=seeds, n_questions=n_questions, model=model,
                     backend=backend)
    return load_results(runs_path(runs_dir, preset, backend), exp, scope)


# ----------------------------------------------------------------- computing and shaping

def accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """:func:`pear.analysis.metrics.accuracy`, with ``std`` NaN where a cell has one seed (tables
    then print no ``± 0.000``)."""
    acc = metrics.accuracy(debates)
    acc.loc[acc["n_seeds"] < 2, "std"] = np.nan
    return acc


def select(df: pd.DataFrame, methods: Iterable[str] | None = None,
           datasets: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows of ``df`` with these methods / datasets (None = all)."""
    keep = pd.Series(True, index=df.index)
    if methods is not None:
        keep &= df["method"].isin(list(methods))
    if datasets is not None:
        keep &= df["dataset"].isin(list(datasets))
    return df[keep].reset_index(drop=True)


def cost_accuracy(debates: pd.DataFrame) -> pd.DataFrame:
    """Accuracy (:func:`accuracy`) and cost (:func:`pear.analysis.metrics.costs`) per (model,
    dataset, method) in one frame: the input of :func:`pear.analysis.figures.plot_pareto`."""
    return accuracy(debates).merge(metrics.costs(debates), on=list(metrics.GROUP))


def significance_sets(*scopes: Results) -> tuple[pd.DataFrame, pd.DataFrame]:
    """PEAR against its strongest fixed topology (:func:`pear.analysis.stats.adjusted_significance`: McNemar,
    Holm-adjusted p across the scope's settings, paired bootstrap CI of the difference) for
    each scope given, on the first seed of that scope (McNemar needs independent pairs; the
    study tests one full-set run): ``(rows, table)``.  ``table`` holds every scope
    (:func:`pear.analysis.report.table_significance` with a leading "Set" level); ``rows`` (with a
    ``set`` column) only the first scope that has a testable setting, the one to set
    beside the study's table (give the full set first)."""
    from pear.analysis import stats  # heavy: scipy, statsmodels, only where a test is run
    parts, tables = [], {}
    for res in scopes:
        seed = min(res.exp.full_seeds if res.scope == "full" else res.exp.seeds)
        sig = stats.adjusted_significance(res.debates[res.debates["seed"] == seed])
        if sig.empty:
            continue
        name = f"{'full set' if res.scope == 'full' else 'subset'}, seed {seed}"
        parts.append(sig.assign(set=name))
        tables[name] = report.table_significance(sig)
    if not parts:
        if scopes and all(is_imported(res.runs_dir) for res in scopes):
            empty = pd.DataFrame(columns=["set", "dataset", "model", "best_baseline",
                                          "best_baseline_acc", "pear_acc", "b", "c", "chi2",
                                          "p_exact", "win_rate", "wilson_low", "wilson_high",
                                          "power"])
            return empty, pd.DataFrame({"note": ["imported debates: no PEAR and no second "
                                                 "method to test against"]})
        raise ValueError("no setting has both PEAR and a fixed topology: nothing to test")
    return parts[0], pd.concat(tables, names=["Set"])
