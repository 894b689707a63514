"""Calibration of the simulated population (:mod:`pear.sim.backend`) on the study's
baselines, and its validation on held-out ones.

* **Targets** (:func:`study_targets`): per dataset, the accuracy of every non-PEAR method
  averaged over the study's six models (``data/paper/main_results.csv``), and the trajectory
  diagnostics per method (``data/paper/diagnostics.csv``, averaged over the study's
  settings).  CoT, CoT-SC and Random are *fitted*; Clique, Star, Chain and Ring are
  *held out* (never in the fit); PEAR and its ablations are in nothing.
* **Simulation** (:func:`simulate`): the engine and the simulated backend on a seeded grid,
  summarised per (dataset, method) by :func:`summarize` with the study's definitions (see
  :func:`pear.analysis.metrics.diagnostics`, the one definition).
* **Fit** (:func:`fit`): ``scipy.optimize.least_squares`` on the residuals of the fitted
  targets, in stages (initial answers on CoT / CoT-SC; persuasion on Random; then all
  together), with common random numbers (a fixed question sample and fixed seeds), so the
  objective is deterministic for a given seed.
* **Report** (:func:`residual_table`, :func:`goals`; the figure is notebook 14's).
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from pear.analysis.metrics import CRITIQUE_RATES
from pear.sim.backend import SimParams, SimulatedBackend
from pear.core.methods import FIXED_TOPOLOGIES
from pear.analysis import metrics
from pear.analysis.compare import load_paper, to_internal
from pear.catalog.labels import METHOD_LABELS, DATASET_LABELS
from pear.core.engine import Engine
from pear.runs.factory import default_workers
from pear.runs.grid import answer_key, preset
from pear.runs.jobs import jobs
from pear.runs.runner import chunk_runner, question_chunks, model_dir
from pear.runs.together import by_question, recorded_in
from pear.store.columns import Rows, to_pandas
from pear.store.records import records_of
from pear.sim.population import load as load_population
from pear.tasks import grading as tasks
from pear.tasks.benchmarks import DATASETS, load as load_questions
from pear.backends.registry import SIMULATED

__all__ = [
    "FITTED_METHODS", "HELD_OUT_METHODS", "DIAGNOSTICS", "STAGES", "BOUNDS", "FitResult",
    "summarize", "study_targets", "simulate", "residual_table",
    "goals", "populations_table", "describe_populations", "fit",
]

FITTED_METHODS = ("cot", "cot_sc", "random")
"""Baselines whose accuracy (and, for Random, diagnostics) the fit uses."""
HELD_OUT_METHODS = FIXED_TOPOLOGIES  # validation only: the fixed topologies stay out of the fit
"""Baselines kept out of the fit: the validation."""
DIAGNOSTICS = ("w2r", "r2w", *CRITIQUE_RATES)
"""The study's trajectory diagnostics that a simulated population can be compared on."""

STAGES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("initial answers", ("ease_gsm8k", "ease_math500", "ease_truthfulqa", "ease_mmlu_pro",
                         "difficulty_sd", "wrong_focus"), ("cot", "cot_sc")),
    ("persuasion", ("conf_base", "accept_agree", "accept_bias", "accept_right",
                    "accept_hold", "recheck"), FITTED_METHODS),
    ("joint", ("ease_gsm8k", "ease_math500", "ease_truthfulqa", "ease_mmlu_pro",
               "difficulty_sd", "skill_sd", "wrong_focus", "conf_base", "accept_agree",
               "accept_bias", "accept_right", "accept_hold", "recheck"), FITTED_METHODS),
)
"""The fit's stages: (name, fitted :class:`SimParams` fields, methods simulated)."""

BOUNDS: dict[str, tuple[float, float]] = {  # our choice: wide, sign-preserving
    "ease_gsm8k": (-5.0, 6.0), "ease_math500": (-5.0, 6.0), "ease_truthfulqa": (-5.0, 6.0),
    "ease_mmlu_pro": (-5.0, 6.0), "difficulty_sd": (0.05, 8.0), "skill_sd": (0.0, 5.0),
    "wrong_focus": (0.0, 1.0),
    "conf_base": (1.0, 5.0), "accept_agree": (-4.0, 6.0), "accept_bias": (-6.0, 4.0),
    "accept_right": (0.0, 8.0), "accept_hold": (0.0, 8.0), "recheck": (0.0, 1.0),
}
"""Bounds of every fitted field (the documented signs of the model are kept)."""

ACCURACY_SCALE = 0.02  # our choice: the goal's tolerance on fitted accuracy
DIAGNOSTIC_SCALE = 0.025  # our choice: half the goal's tolerance on Random's diagnostics
SHAPE_SCALE = 0.01  # our choice: a 1-point fall of Random's vote between rounds


# ----------------------------------------------------------------- study's definitions

def summarize(records: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Per (dataset, method): ``debates``, ``accuracy`` (final vote), ``round_<r>`` (vote
    accuracy after round r) and the study's diagnostics exactly as the analysis computes
    them (:func:`pear.analysis.metrics.diagnostics`, one definition): ``w2r`` / ``r2w`` per
    query then averaged, ``acceptance``, ``cross_answer`` (share of routed edges whose
    endpoints answered differently) and ``source_confidence``.  The records are laid out in
    memory as the columnar view lays them out on disk (:class:`pear.store.columns.Rows`).
    Methods without debate rounds get NaN diagnostics (nothing to fit there)."""
    rows = Rows()
    for i, rec in enumerate(records):
        rows.add(rec, i, 0, 0)
    t = {name: to_pandas(table, name) for name, table in rows.tables().items()}
    deb, ar, ed, ro = t["debates"], t["agent_rounds"], t["edges"], t["rounds"]
    by = ["dataset", "method"]
    for df in (deb,):
        for k in by:
            df[k] = df[k].astype(str)
    out = deb.groupby(by, sort=True).agg(debates=("debate", "size"),
                                         accuracy=("correct", "mean")).reset_index()
    rounds = ro.merge(deb[["debate", *by]], on="debate")
    per_round = rounds.pivot_table(index=by, columns="round", values="vote_correct",
                                   aggfunc="sum", observed=True)
    per_round.columns = [f"round_{int(r)}" for r in per_round.columns]
    out = out.merge(per_round.reset_index(), on=by, how="left")
    for col in per_round.columns:  # a debate that stopped before round r counts as wrong there
        out[col] = out[col] / out["debates"]
    diag = metrics.diagnostics(deb, ar, ed, by=by)
    keep = list(DIAGNOSTICS)
    out = out.merge(diag[[*by, *keep, "updates"] if "updates" in diag else [*by, *keep]],
                    on=by, how="left")
    debated = deb.groupby(by)["rounds"].max().reindex(
        pd.MultiIndex.from_frame(out[by])).to_numpy() > 0
    out.loc[~debated, keep] = np.nan
    return out.drop(columns=[c for c in ("updates",) if c in out]).reset_index(drop=True)


# ----------------------------------------------------------------- the study's numbers

def study_targets() -> pd.DataFrame:
    """The study's numbers the population is compared with: columns ``dataset`` (``all`` =
    averaged over datasets), ``method``, ``quantity`` (``accuracy`` or a diagnostic),
    ``study``, ``role`` (``fitted`` or ``held-out``).  Accuracies are averaged over the
    study's models; diagnostics are printed averaged over its settings."""
    roles = {**{m: "fitted" for m in FITTED_METHODS}, **{m: "held-out" for m in HELD_OUT_METHODS}}
    main = to_internal(load_paper("main_results"))
    main = main[main["method"].isin(list(roles))]
    acc = main.groupby(["dataset", "method"])["accuracy"].mean().reset_index()
    acc = pd.concat([acc, acc.groupby("method")["accuracy"].mean().reset_index()
                    .assign(dataset="all")])
    rows = [{"dataset": r.dataset, "method": r.method, "quantity": "accuracy",
             "study": float(r.accuracy), "role": roles[r.method]} for r in acc.itertuples()]
    diag = to_internal(load_paper("diagnostics"))
    for r in diag[diag["method"].isin(["random", *HELD_OUT_METHODS])].itertuples():
        for q in DIAGNOSTICS:
            rows.append({"dataset": "all", "method": r.method, "quantity": q,
                         "study": float(getattr(r, q)), "role": roles[r.method]})
    return pd.DataFrame(rows)


# ----------------------------------------------------------------- simulation

def simulate(params: SimParams | None = None,
             methods: Sequence[str] = (*FITTED_METHODS, *HELD_OUT_METHODS), *,
             n_questions: int = 100,
             seeds: Sequence[int] = (0, 1), question_seed: int = 0,
             datasets: Sequence[str] | None = None, backend_seed: int = 0,
             chunk_questions: int = 100, population: str | None = None,
             workers: int | None = None, recorded: str | os.PathLike[str] | None = None
             ) -> pd.DataFrame:
    """:func:`summarize` of a seeded simulated grid of ``methods`` with the population
    ``population`` (a name or file, :mod:`pear.sim.population`; None: ``study``) whose
    parameters ``params`` replace when given (the ``sim`` preset's protocol, subset
    questions only; ``n_questions`` capped at the smallest dataset's size) run through the
    engine in memory, its chunks of ``chunk_questions`` (seed, question) groups in
    ``workers`` forked processes as a grid's (:func:`pear.runs.runner.run`; None: every core,
    :func:`pear.runs.factory.default_workers`): the summary is the same for any number.
    ``recorded``: a run directory (a simulated build's) holding every debate of this grid
    under the same setting (:func:`pear.runs.together.recorded_in`: protocol, population,
    seed, data): its records of them are summarized instead of running them again."""
    names = tuple(datasets) if datasets is not None else DATASETS
    n_questions = min(n_questions, *(len(load_questions(d)) for d in names))
    over: dict[str, Any] = {"methods": tuple(methods), "n_questions": n_questions,
                            "seeds": tuple(seeds), "question_seed": question_seed,
                            "full_datasets": ()}
    if datasets is not None:
        over["datasets"] = names
    exp = preset("sim", **over)
    backend = SimulatedBackend(answer_key(exp), params=params, seed=backend_seed,
                               n_agents=exp.debate.n_agents, population=population)
    if recorded is not None:
        ids = recorded_in(exp, recorded, backend.model_id, backend.name)
        if ids:
            return summarize(records_of(model_dir(recorded, backend.model_id), set(ids)))
    engine = Engine(backend, exp.debate, task_for=tasks.get)

    chunks = list(question_chunks(by_question(jobs(exp)), chunk_questions))  # whole questions

    def records() -> Iterable[dict[str, Any]]:
        with chunk_runner(engine, chunks, default_workers(SIMULATED)
                          if workers is None else workers) as ran:
            for chunk in ran:
                yield from chunk
    return summarize(records())


# ----------------------------------------------------------------- residuals

def residual_table(summary: pd.DataFrame, targets: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study beside the simulation, one row per target: ``target`` (a label),
    ``dataset``, ``method``, ``quantity``, ``study``, ``simulated``, ``diff`` (simulated -
    study), ``role``.  ``dataset == "all"``: accuracy averaged over the datasets simulated,
    diagnostics averaged over datasets (as the study averages over its settings).  Targets
    of methods not in ``summary`` are left out."""
    targets = study_targets() if targets is None else targets
    sim = summary.set_index(["dataset", "method"])
    sim_all = summary.groupby("method")[["accuracy", *DIAGNOSTICS]].mean()
    datasets = set(summary["dataset"])
    rows = []
    for t in targets.itertuples(index=False):
        if t.method not in sim_all.index or (t.dataset != "all" and t.dataset not in datasets):
            continue
        value = sim_all.loc[t.method, t.quantity] if t.dataset == "all" \
            else sim.loc[(t.dataset, t.method), t.quantity]
        where = "mean of datasets" if t.dataset == "all" else DATASET_LABELS.get(t.dataset,
                                                                                 t.dataset)
        rows.append({"target": f"{METHOD_LABELS.get(t.method, t.method)} {t.quantity} "
                               f"({where})",
                     "dataset": t.dataset, "method": t.method, "quantity": t.quantity,
                     "study": t.study, "simulated": float(value),
                     "diff": float(value) - t.study, "role": t.role})
    return pd.DataFrame(rows)


def goals(table: pd.DataFrame) -> dict[str, float]:
    """The calibration's headline numbers from :func:`residual_table`: ``fitted_accuracy_mae``
    (CoT, CoT-SC, Random accuracy averaged over datasets), ``held_out_accuracy_mae`` (Clique,
    Star, Chain, Ring, likewise), ``random_minus_cot_sc`` (simulated, averaged over datasets)
    and ``<diagnostic>_error`` for each of Random's diagnostics (absolute)."""
    acc = table[(table["quantity"] == "accuracy") & (table["dataset"] == "all")]
    by = acc.set_index("method")
    out = {"fitted_accuracy_mae": float(acc[acc["role"] == "fitted"]["diff"].abs().mean()),
           "held_out_accuracy_mae": float(acc[acc["role"] == "held-out"]["diff"].abs().mean()),
           "random_minus_cot_sc": float(by.loc["random", "simulated"]
                                        - by.loc["cot_sc", "simulated"])
           if {"random", "cot_sc"} <= set(by.index) else float("nan")}
    rnd = table[(table["method"] == "random") & table["quantity"].isin(DIAGNOSTICS)]
    out.update({f"{r.quantity}_error": abs(float(r.diff)) for r in rnd.itertuples()})
    return out


def populations_table(tables: Mapping[str, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Several populations' :func:`residual_table` side by side: ``(headline, targets)`` —
    :func:`goals` per population (one column each) and one row per target with the study's
    number, its role and ``simulated (<population>)``, ``diff (<population>)`` per population
    (the tables must hold the same targets in the same order, as :func:`residual_table` of
    :func:`simulate` on the same grid gives them)."""
    names = list(tables)
    first = tables[names[0]]
    out = first[["target", "study", "role"]].copy()
    for name in names:
        t = tables[name]
        if t["target"].tolist() != first["target"].tolist():
            raise ValueError(f"population {name!r}'s targets differ from {names[0]!r}'s")
        out[f"simulated ({name})"] = t["simulated"].to_numpy()
        out[f"diff ({name})"] = t["diff"].to_numpy()
    return pd.DataFrame({n: goals(t) for n, t in tables.items()}), out


def describe_populations(names: Sequence[str]) -> pd.DataFrame:
    """Per population: its fingerprint (first 12 digits) and how its agents revise."""
    pops = {n: load_population(n) for n in names}
    return pd.DataFrame({n: {"fingerprint": p.fingerprint[:12],
                             "revision": "fitted model (real debates)" if p.revision
                             else "persuasion (study's baselines)"} for n, p in pops.items()})


def _fit_residuals(summary: pd.DataFrame, targets: pd.DataFrame,
                   methods: Sequence[str]) -> np.ndarray:
    """Scaled residuals of the fitted targets of ``methods`` (per-dataset accuracy, Random's
    diagnostics, and any fall of Random's vote accuracy from one round to the next)."""
    table = residual_table(summary, targets)
    fitted = table[(table["role"] == "fitted") & table["method"].isin(methods)]
    acc = fitted[(fitted["quantity"] == "accuracy") & (fitted["dataset"] != "all")]
    diag = fitted[fitted["quantity"].isin(DIAGNOSTICS)]
    parts = [acc["diff"].to_numpy() / ACCURACY_SCALE, diag["diff"].to_numpy() / DIAGNOSTIC_SCALE]
    if "random" in methods:
        rnd = summary[summary["method"] == "random"]
        curve = rnd[[c for c in rnd.columns if c.startswith("round_")]].mean().to_numpy()
        parts.append(np.maximum(0.0, curve[:-1] - curve[1:]) / SHAPE_SCALE)
    return np.concatenate(parts)


# ----------------------------------------------------------------- the fit

@dataclass
class FitResult:
    """The outcome of :func:`fit`: the fitted parameters and, per stage, its name, the
    fields it fitted, its final cost (half the sum of squared scaled residuals) and the
    number of simulations it ran."""

    params: SimParams
    stages: list[dict[str, Any]]


class _Budget(Exception):
    """Raised inside the objective when a stage has used its simulations."""


def fit(start: SimParams = SimParams(), *, n_questions: int = 200,
        seeds: Sequence[int] = (0,), question_seed: int = 0, backend_seed: int = 0,
        budget: int = 60, diff_step: float = 0.02,
        stages: Sequence[tuple[str, Sequence[str], Sequence[str]]] = STAGES,
        log: Callable[[str], None] | None = print) -> FitResult:
    """Fit the population to the study's baselines: per stage, ``scipy.optimize.
    least_squares`` (trust-region reflective within :data:`BOUNDS`, forward differences of
    ``diff_step`` to ``2 * diff_step`` of each field's range) of that stage's fields on the
    scaled residuals of its methods' fitted targets, starting from ``start``; a stage
    stops after ``budget``
    simulations (Jacobian columns included) and keeps the best parameters it saw.

    Every evaluation simulates the same grid (``n_questions`` per dataset drawn with
    ``question_seed``, run ``seeds``, ``backend_seed``): common random numbers make the
    objective deterministic, so the fit is reproducible.  PEAR and the held-out
    topologies are never simulated here."""
    from scipy.optimize import least_squares
    targets = study_targets()
    params = start
    report: list[dict[str, Any]] = []
    for name, fields, methods in stages:
        fields = list(fields)
        lo = np.array([BOUNDS[f][0] for f in fields])
        width = np.array([BOUNDS[f][1] - BOUNDS[f][0] for f in fields])
        # the optimiser works on y = 1 + (x - lo) / width in [1, 2]: every field's
        # finite-difference step is then diff_step..2 * diff_step of its range (scipy's
        # relative steps would vanish for a field at 0)
        x0 = np.clip([float(getattr(params, f)) for f in fields], lo, lo + width)
        base = params
        best: dict[str, Any] = {"cost": np.inf, "x": x0, "n": 0}

        def fun(y: np.ndarray, base: SimParams = base, fields: list[str] = fields,
                methods: Sequence[str] = methods, best: dict[str, Any] = best,
                name: str = name, lo: np.ndarray = lo, width: np.ndarray = width
                ) -> np.ndarray:
            if best["n"] >= budget:
                raise _Budget
            best["n"] += 1
            x = lo + (np.asarray(y) - 1.0) * width
            p = dataclasses.replace(base, **{f: float(v) for f, v in zip(fields, x)})
            s = simulate(p, methods, n_questions=n_questions, seeds=seeds,
                         question_seed=question_seed, backend_seed=backend_seed)
            r = _fit_residuals(s, targets, methods)
            cost = 0.5 * float(r @ r)
            if cost < best["cost"]:
                best.update(cost=cost, x=x)
            if log:
                log(f"  [{name} {best['n']}] cost {cost:.3f} (best {best['cost']:.3f}) "
                    + " ".join(f"{f}={v:.3f}" for f, v in zip(fields, x)))
            return r
        try:
            res = least_squares(fun, 1.0 + (x0 - lo) / width, bounds=(1.0, 2.0), method="trf",
                                diff_step=diff_step, ftol=1e-4, xtol=1e-4, gtol=1e-6)
            message = res.message
        except _Budget:
            message = f"stopped after {budget} simulations"
        params = dataclasses.replace(base, **{f: round(float(v), 3)
                                              for f, v in zip(fields, best["x"])})
        report.append({"stage": name, "fields": fields, "cost": best["cost"],
                       "simulations": best["n"], "status": message})
        if log:
            log(f"stage {name}: best cost {best['cost']:.3f} after {best['n']} simulations "
                f"({message})")
    return FitResult(params, report)
