"""Notebook 18 ("simulate your model"): a twin of recorded debates (:mod:`pear.populations.twin`),
the study's reduced grid run under it, and what the study could decide at its size if its
models debated like the twin.

* :func:`fit` fits the twin of some runs (default: DyLAN's MMLU debates, the team of 3,
  :data:`DEFAULT_TEAM`); :func:`table_twin` shows its run-level effects with their standard
  errors and its round-0 accuracy, :func:`describe_twin` where it came from.
* :func:`run` runs (or resumes) the reduced grid under it (:func:`grid`: the ``sim`` preset's
  datasets, :data:`METHODS`, ``n_questions`` per dataset, the first seed) into
  :func:`pear.paths.twin_dir` of the build's run, through :func:`pear.runs.runner.run`.
* :func:`power_table`: per dataset and pooled, PEAR against each of :data:`AGAINST`, the
  discordant pairs, the questions McNemar's test needs for 80 % power at that effect
  (:func:`pear.analysis.stats.mcnemar_sample_size`) and the seeds that is at the study's
  questions per dataset (:data:`STUDY`).
* :func:`table_claims`: every claim of the ledger (:func:`pear.claims.evaluate.ledger`) on the
  twin's grid, with what deciding it would take at the study's size.

Layout of a twin folder (``<run>-twin/`` beside a build's run)::

    populations/<name>.json    the twin as a file (its run's manifest names it)
    <name>-<fingerprint[:8]>/  its grid's run directory (records, manifest)
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pear.analysis import metrics
from pear.analysis.stats import mcnemar_sample_size
from pear.claims.verdicts import POWER  # the ledger's: an inconclusive claim sized for 80 %
from pear.catalog.labels import dataset_label, method_label
from pear.paper import ensemble
from pear.paper.study import Results, load_results, runs_path
from pear.paths import twin_dir
from pear.store import import_cache
from pear.populations.twin import Twin, fit_twin
from pear.runs.factory import default_workers, grid_backend
from pear.runs.grid import preset as grid_preset
from pear.runs.runner import run as run_grid
from pear.sim.population import expected_accuracy, load as load_population
from pear.tasks.benchmarks import load as load_questions
from pear.backends.registry import SIMULATED

__all__ = ["DEFAULT_QUESTIONS", "DEFAULT_TEAM", "METHODS", "AGAINST", "STUDY", "POOLED",
           "TwinGrid", "source_runs", "fit", "table_twin", "describe_twin", "grid", "run",
           "for_build", "power_table", "claims", "table_claims", "describe_claims", "caption",
           "twin_dir"]

DEFAULT_QUESTIONS = 60  # our choice: a grid of 960 debates, seconds on 2 cores
DEFAULT_TEAM = 3  # our choice: DyLAN's MMLU team closest to the study's panels
METHODS = ("cot_sc", "clique", "random", "pear")
"""The methods of the twin's grid (:data:`pear.paper.ensemble.MAIN`, in table order)."""
AGAINST = ("cot_sc", "clique")
"""PEAR is tested against these (the strongest baseline and the densest topology)."""
STUDY = "paper"
"""The preset whose size the power table and the claims are measured against (200 questions
per dataset, 5 seeds)."""
POOLED = "pooled"


@dataclass(frozen=True)
class TwinGrid:
    """The twin's grid as run: the twin, the population file and run directory, the debates
    it wrote now and the seconds it took."""

    twin: Twin
    results: Results
    population_file: Path
    run_dir: Path
    written: int
    seconds: float


# ----------------------------------------------------------------- the twin

def source_runs(twin_runs: str = "") -> list[Path]:
    """The run directories of a comma-separated list (e.g. an imported Inspect log run); empty:
    DyLAN's MMLU team of :data:`DEFAULT_TEAM` (imported from the shipped corpus when needed,
    :func:`pear.store.import_cache.mmlu_runs`).  A missing directory is an error naming it."""
    given = [Path(s.strip()).expanduser() for s in twin_runs.split(",") if s.strip()]
    if not given:
        team = f"dylan-mmlu{DEFAULT_TEAM}-"
        return [r for r in import_cache.mmlu_runs() if r.name.startswith(team)]
    missing = [str(p) for p in given if not p.is_dir()]
    if missing:
        raise FileNotFoundError(f"invalid twin_runs: no run directory {missing[0]!r} (give "
                                "comma-separated run directories, e.g. of `pear import`)")
    return given


def fit(twin_runs: str = "") -> Twin:
    """The twin of :func:`source_runs` (:func:`pear.populations.twin.fit_twin`, the shipped
    prior; named ``twin-<first run>``)."""
    runs = source_runs(twin_runs)
    describe = "" if twin_runs.strip() else (
        f"a twin of DyLAN's gpt-3.5 MMLU debates, the team of {DEFAULT_TEAM} ({runs[0].name})")
    return fit_twin(runs, describe=describe)


def _what(tw: Twin) -> str:
    """``a twin of <runs>`` (what the twin's file says it describes)."""
    return str(tw.population.info.get("describes") or f"a twin of {tw.population.name}")


def table_twin(tw: Twin, datasets: Sequence[str] = ()) -> pd.DataFrame:
    """The twin in numbers: each run-level effect (a shift of the corpus fit's coefficients)
    with its standard error, the round-0 agent accuracy measured on each dataset of the runs,
    and (``datasets``) the round-0 accuracy the twin's agents are expected to have on each
    dataset of a grid (:func:`pear.sim.population.expected_accuracy`)."""
    diag = tw.population.info["diagnostics"]
    rows = [{"Quantity": f"effect: {k}", "Estimate": v["estimate"], "SE": v["se"]}
            for k, v in diag["effects"].items()]
    rows += [{"Quantity": f"round-0 agent accuracy, measured ({d})", "Estimate": a,
              "SE": np.nan} for d, a in diag.get("round0_accuracy", {}).items()]
    rows += [{"Quantity": f"round-0 agent accuracy, expected ({dataset_label(d)})",
              "Estimate": expected_accuracy(tw.population.params, d), "SE": np.nan}
             for d in datasets]
    return pd.DataFrame(rows).set_index("Quantity")


def describe_twin(tw: Twin) -> str:
    """Where the twin came from: its name and fingerprint, the runs it was fitted on (file,
    sha256, debates, model, protocol), the base it is pooled toward, the fit's log-likelihood
    against the base's, and the seconds the fit took."""
    p, diag = tw.population, tw.population.info["diagnostics"]
    lines = [f"{p.name} ({p.fingerprint[:12]}): {_what(tw)}; {diag['debates']} debates, "
             f"{diag['choices']} revision choices"]
    for f in p.info.get("fitted_on", []):
        what = ", ".join(f"{k} {f[k]}" for k in ("debates", "model", "protocol", "grading")
                         if f.get(k))
        lines.append(f"  fitted on {f.get('file', '?')} (sha256 {str(f.get('sha256', ''))[:12]}"
                     f"; {what})")
    base = diag["base"]
    lines.append(f"  pooled toward {base['name']} ({base['fingerprint'][:12]}) with the prior "
                 f"spread {diag['prior']['sd']}; log-likelihood {diag['log_likelihood']} "
                 f"(the base's: {diag['base_log_likelihood']}); "
                 f"{'converged' if diag['converged'] else 'NOT converged'}; "
                 f"fitted in {tw.seconds:.1f} s")
    if p.info.get("warning"):
        lines.append(f"  WARNING: {p.info['warning']}")
    return "\n".join(lines)


# ----------------------------------------------------------------- its grid

def grid(n_questions: int = DEFAULT_QUESTIONS) -> Any:
    """The twin's grid: the ``sim`` preset's datasets, :data:`METHODS`, ``n_questions`` per
    dataset (at most the smallest dataset's questions), its first seed, no full sets
    (:func:`pear.paper.ensemble.grid`)."""
    exp = ensemble.grid("sim", n_questions, methods=METHODS)
    most = min(len(load_questions(d)) for d in exp.datasets)
    return dataclasses.replace(exp, n_questions=min(exp.n_questions, most))


def run(tw: Twin, root: str | Path, n_questions: int = DEFAULT_QUESTIONS, *,
        workers: int | None = None, progress: bool = False) -> TwinGrid:
    """Run (or resume) :func:`grid` under the twin into ``root``: the twin written to
    ``root/populations/<name>.json`` (kept when the same twin is there), its debates into
    ``root/<name>-<fingerprint[:8]>`` through :func:`pear.runs.runner.run` (``workers``
    processes, default every core); then read them."""
    t0 = time.perf_counter()
    root = Path(root)
    exp = grid(n_questions)
    p = tw.population
    file = root / "populations" / f"{p.name}.json"
    if not file.is_file() or _fingerprint(file) != p.fingerprint:
        file.parent.mkdir(parents=True, exist_ok=True)
        p.write(file)
    out = root / f"{p.name}-{p.fingerprint[:8]}"
    be = grid_backend(SIMULATED, exp, extra={"population": str(file)})
    s = run_grid(exp, be, out, progress=progress,
                 workers=workers or default_workers(SIMULATED))
    if not s.complete:
        first = s.failed[0][1] if s.failed else "unknown"
        raise RuntimeError(f"twin {p.name}: the grid is incomplete ({len(s.failed)} debates "
                           f"failed; first: {first}); rerun to resume")
    res = load_results(out, exp, "subset")
    return TwinGrid(tw, res, file, out, s.written, time.perf_counter() - t0)


def _fingerprint(file: Path) -> str | None:
    try:
        return load_population(file).fingerprint
    except ValueError:
        return None


def for_build(tw: Twin, backend: str, preset: str, runs_dir: str = "",
              n_questions: int = DEFAULT_QUESTIONS) -> TwinGrid:
    """:func:`run` into :func:`pear.paths.twin_dir` of a build's run (the notebooks'
    parameters), whatever the build's backend: the twin's agents are simulated."""
    return run(tw, twin_dir(runs_path(runs_dir, preset, backend)), n_questions)


# ----------------------------------------------------------------- power and claims

def _study_size() -> tuple[int, int]:
    """(questions per dataset, seeds) of :data:`STUDY`."""
    exp = grid_preset(STUDY)
    return int(exp.n_questions), len(exp.seeds)


def _at_study() -> str:
    """The claims table's column of what the study's size decides."""
    per_ds, seeds = _study_size()
    return f"At the study's size ({per_ds} questions x {seeds} seeds)"


def power_table(tg: TwinGrid) -> pd.DataFrame:
    """Per dataset and pooled over datasets, PEAR against each of :data:`AGAINST` on the same
    questions: the accuracy of each, the discordant pairs ``b`` (PEAR right, the other wrong)
    and ``c`` (the reverse), the questions per dataset McNemar's test needs for 80 % power at
    that discordance (:func:`pear.analysis.stats.mcnemar_sample_size`; pooled: the pooled
    test's questions spread evenly over the datasets), and how many seeds of the study's
    questions per dataset that is (each seed counted as fresh questions: optimistic, since
    the study repeats its questions).  ``no effect`` where b == c."""
    per_ds, seeds = _study_size()
    deb = tg.results.debates
    datasets = [d for d in tg.results.exp.datasets if d in set(deb["dataset"])]
    rows = []
    for against in AGAINST:
        pairs = metrics.paired(deb, "pear", against)
        for ds in [*datasets, POOLED]:
            part = pairs if ds == POOLED else pairs[pairs["dataset"] == ds]
            k = len(datasets) if ds == POOLED else 1
            n = len(part)
            b = int(((part["correct_a"] == 1) & (part["correct_b"] == 0)).sum())
            c = int(((part["correct_a"] == 0) & (part["correct_b"] == 1)).sum())
            need = mcnemar_sample_size(b, c, n, power=POWER)
            per = None if need is None else math.ceil(need / k)
            rows.append({
                "Against": method_label(against),
                "Dataset": "Pooled" if ds == POOLED else dataset_label(ds),
                "PEAR": float(part["correct_a"].mean()),
                "Baseline": float(part["correct_b"].mean()),
                "Questions": n // k, "b": b, "c": c,
                "Questions needed": "no effect" if per is None else per,
                f"Seeds of {per_ds}": "–" if per is None else math.ceil(per / per_ds),
                f"Within {seeds} seeds": "–" if per is None else
                ("yes" if per <= per_ds * seeds else "no")})
    return pd.DataFrame(rows).set_index(["Against", "Dataset"])


def claims(tg: TwinGrid, seed: int = 0) -> pd.DataFrame:
    """The claims ledger on the twin's grid (:func:`pear.claims.evaluate.ledger`, 95 %
    bootstrap intervals drawn with ``seed``)."""
    from pear.claims.evaluate import ledger  # heavy: scipy, only for this function
    return ledger(tg.results, None, rng=seed)


def table_claims(table: pd.DataFrame, tg: TwinGrid) -> pd.DataFrame:
    """One row per claim: its finding on the twin's grid (what the ledger finds; its verdict
    on simulated agents is "not evidence"; ``not evaluated`` where the claim names a method
    the grid does not run, :func:`pear.paper.ensemble.claims_not_run`), the questions per
    setting that would decide it where inconclusive, and whether the study's size
    (:data:`STUDY`: questions per dataset x seeds, each seed counted as fresh questions)
    reaches that: ``decided`` (already on the twin's grid), ``yes``/``no`` with the seeds it
    takes, or why not (not covered by the twin's grid, or no sample size follows)."""
    per_ds, seeds = _study_size()
    have = int(tg.results.exp.n_questions)
    missing = ensemble.claims_not_run(tg.results.exp)
    rows = []
    for _, r in table.iterrows():
        need = r["n_needed"]
        need = None if need is None or (isinstance(need, float) and np.isnan(need)) else int(need)
        f = r["finding"]
        if r["id"] in missing:
            f, need = "not evaluated", None
            at = ("not covered: the twin's grid does not run "
                  + ", ".join(method_label(m) for m in missing[r["id"]]))
        elif f in ("supported", "contradicted"):
            at = f"decided at {have} questions"
        elif f == "inconclusive" and need is not None:
            k = math.ceil(need / per_ds)
            at = (f"{'yes' if need <= per_ds * seeds else 'no'}: {k} seed{'s' * (k != 1)} of "
                  f"{per_ds} questions")
        elif f == "inconclusive":
            at = "no: no sample size follows (a nil difference, or a test of ranks)"
        else:
            at = "not covered by the twin's grid"
        rows.append({"Claim": r["id"], "Kind": r["kind"], "Finding": f,
                     "Reproduced": r["reproduced"] or "–",
                     "Questions needed": "–" if need is None else need,
                     _at_study(): at,
                     "Why": r["reason"] or "–"})
    return pd.DataFrame(rows).set_index("Claim")


def describe_claims(tc: pd.DataFrame) -> str:
    """How many claims (of :func:`table_claims`) the twin's grid decides, how many the study's
    size would, how many it would not, and how many the grid does not cover."""
    at = tc[_at_study()].astype(str)
    n = {"decided": int(at.str.startswith("decided").sum()),
         "not evaluated": int((tc["Finding"] == "not evaluated").sum()),
         "yes": int(at.str.startswith("yes:").sum()), "no": int(at.str.startswith("no:").sum()),
         "not covered": int(at.str.startswith("not covered").sum())}
    return (f"{len(tc)} claims: {n['decided']} decided on the twin's grid, {n['yes']} more "
            f"decidable at the study's size, {n['no']} not, {n['not covered']} not covered by "
            f"the twin's grid ({n['not evaluated']} of them name a method it does not run; the "
            "others need models, full sets or scopes it does not have)")


def caption(tg: TwinGrid | Twin, what: str) -> str:
    """``what`` with the agents named: ``what: simulated agents, a twin of <runs>; population
    <name>; grid: ....``"""
    tw = tg.twin if isinstance(tg, TwinGrid) else tg
    where = ""
    if isinstance(tg, TwinGrid):
        e = tg.results.exp
        where = (f"; grid: {len(e.methods)} methods x {len(e.datasets)} datasets x "
                 f"{e.n_questions} questions x {len(e.seeds)} seed")
    return (f"{what.rstrip('.')}: simulated agents, {_what(tw)}; population "
            f"{tw.population.name}{where}.")
