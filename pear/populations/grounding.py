"""The shipped simulated populations (``data/populations/``): ``study`` and ``grounded``,
written from the shipped data and code, checked, and resampled.

* ``study`` (:func:`study_population`): :class:`~pear.sim.population.SimParams`' defaults,
  fitted to the study's baselines (:mod:`pear.populations.calibration`); revision by persuasion.
* ``grounded`` (:func:`grounded_population`): the study's initial answers, confidence and
  critique acceptance (real logs have neither confidences nor critiques), with

  - the revision model (:class:`~pear.sim.population.RevisionModel`, every feature of its
    ``COLUMNS``) fitted by maximum likelihood (:func:`pear.sim.revision.fit`) to every debate
    round of DyLAN's whole corpus of gpt-3.5 MATH debates (:data:`CORPUS`, 4,800 debates,
    imported with ``pear import dylan`` as dataset ``math``, graded by the math kind), of its
    MMLU debates (:data:`MMLU_CORPUS`, teams of 2, 3, 4 and 7, one run per team:
    :func:`mmlu_runs`) and any imported run given; the answer-space terms let the free
    answers and the letters enter one fit;
  - ``wrong_focus`` set so that two erring agents give the same wrong answer as often as in
    those debates' round 0 (:func:`pear.sim.revision.same_wrong_answer`), measured on the
    free-answer debates, and ``wrong_focus_options`` likewise on the multiple-choice ones.
* ``grounded-math`` (:func:`math_population`, :data:`MATH_ONLY`): the fit on the MATH corpus
  alone, without the answer-space terms: ``grounded`` before the MMLU debates entered it.

  Coefficients are stored rounded to 3 decimals (far below their standard errors), so that the
  fingerprint does not move with a float's last bits.
* :func:`bootstrap_populations`: K grounded populations refitted on debates resampled with
  replacement (seeded): the fit's sampling distribution, for an ensemble.  The first
  :data:`ENSEMBLE_K` draws of seed :data:`ENSEMBLE_SEED` are shipped too
  (``data/populations/ensemble/``: ``grounded-b<i>.json`` and ``ensemble.json``, the seed and
  every fingerprint), so that an ensemble of at most that size needs neither DyLAN's corpus
  imported nor a refit; ``pear populations check`` refits them as well.

DyLAN's corpus is imported once per machine (``build/imported/``); a first build writes that
run from its shipped graded copy (:data:`GRADED`) instead of grading its 57,000 answers again,
and ``pear populations check`` holds that copy equal to an import from scratch.

Command line (:mod:`pear.cli.populations`)::

    pear populations check          # import the corpus from scratch and refit; exit 1 unless
                                    # the shipped graded import and population files match
    pear populations write-graded   # import the corpus from scratch and rewrite its graded
                                    # copy, data/real-debates/graded/
    pear populations write          # rewrite data/populations/{study,grounded,
                                    # grounded-math}.json and data/populations/ensemble/
    pear populations fit --also RUN # the fit on the corpus and an imported run
    pear populations bootstrap 20   # time 20 bootstrap refits
    pear populations in-sample      # the fit held against its own data; exit 1 on a gap
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import time
from functools import partial
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from pear.parallel import cores_per_process, fork_map
from pear.paths import BUILD_DIR, REAL_DEBATES_DIR, REPO_ROOT, PAPER_DIR, write_json
from pear.sim import population as pop, revision
from pear.sim.population import Population, RevisionModel, SimParams
from pear.core.hashing import file_sha256
from pear.store import shipped as shipped_import
from pear.store.readers import DylanMmluReader, DylanReader
from pear.populations.reading import fitted_on as _fitted_on, options, records, sequential
import pear

__all__ = ["CORPUS", "CORPUS_DATASET", "CORPUS_GRADING", "CORPUS_MODEL", "GRADED",
           "ENSEMBLE_DIR", "ENSEMBLE_K", "ENSEMBLE_SEED", "corpus_run", "write_graded",
           "check_graded", "records", "study_population",
           "grounded_population", "Grounding", "ground", "bootstrap_populations",
           "shipped_draws", "write_draws", "sources", "check", "sequential", "check_all",
           "write_populations", "bootstrap_spread", "fit_summary",
           "CRITIQUE_WEIGHTS", "MMLU_CORPUS", "MMLU_TEAMS", "mmlu_runs", "default_runs",
           "options", "MATH_ONLY", "math_population"]

CORPUS = REAL_DEBATES_DIR / "dylan-math-gpt35.tgz"
"""DyLAN's whole corpus of gpt-3.5 MATH debates (MIT; ``data/real-debates/README.md``)."""
CORPUS_DATASET = "math"
CORPUS_GRADING = "math"
CORPUS_MODEL = "gpt-3.5-turbo-0301"
GRADED = shipped_import.GRADED_DIR / "dylan-math-gpt35"
"""The shipped graded copy of :data:`CORPUS`'s import (:mod:`pear.store.shipped`: its manifest
and its records xz-compressed), written by ``pear populations write-graded`` and held equal to a
fresh import by ``pear populations check``; derived from DyLAN's records (MIT,
``data/real-debates/LICENSE-DyLAN``)."""
MMLU_CORPUS = REAL_DEBATES_DIR / "dylan-mmlu-gpt35.tgz"
"""DyLAN's MMLU debates (MIT): role-prompted gpt-3.5 teams of 2, 3, 4 and 7 on 2,809 MMLU
questions, one source protocol per team size (``pear import dylan-mmlu --protocol``)."""
MMLU_TEAMS = (2, 3, 4, 7)
MMLU_DATASET = "mmlu"
MMLU_GRADING = "letters"
DECIMALS = 3
"""Decimals of the stored coefficients and of ``wrong_focus``."""

ENSEMBLE_DIR = pop.POPULATIONS_DIR / "ensemble"
"""The shipped bootstrap draws of ``grounded`` (:func:`write_draws`)."""
ENSEMBLE_K = 20  # issue 35: an ensemble of 20
"""How many bootstrap draws are shipped."""
ENSEMBLE_SEED = 0  # our choice
"""The bootstrap seed of the shipped draws."""
ENSEMBLE_RECORD = "ensemble.json"

_PLUMBING = ("malformed_rate", "latency_s")


def corpus_run(where: str | os.PathLike[str] | None = None, *, corpus: Path = CORPUS,
               graded: Path | None = GRADED, fresh: bool = False) -> Path:
    """The run directory of ``corpus`` (:data:`CORPUS`) imported
    (``build/imported/dylan-math-<sha>``, under ``where`` when given): kept when it already
    holds exactly this file's import, else written from the shipped graded copy ``graded``
    (:data:`GRADED`) when that is exactly this import (no grading: seconds), else imported now
    (minutes: Math-Verify grades every answer).  ``fresh``: imported now whatever is there or
    shipped.  Debates whose gold our grader cannot read are left out (listed in the run's
    manifest)."""
    from pear.populations.real_debates import imported_run  # heavy: pandas, scipy, only for this function
    root = Path(where) if where else BUILD_DIR / "imported"
    out = root / f"dylan-math-{file_sha256(corpus)[:8]}"
    if fresh and out.exists():
        shutil.rmtree(out)
    return imported_run(DylanReader.name, corpus, out, dataset=CORPUS_DATASET,
                        grading=CORPUS_GRADING, model=CORPUS_MODEL, skip_bad=True,
                        shipped=None if fresh else graded)


def mmlu_runs(where: str | os.PathLike[str] | None = None, *, corpus: Path = MMLU_CORPUS,
              fresh: bool = False) -> list[Path]:
    """The run directories of DyLAN's MMLU debates (:data:`MMLU_CORPUS`), one per team size
    (``build/imported/dylan-mmlu<n>-<sha>``, under ``where`` when given), each kept when it
    already holds exactly this import, else imported now (graded by letter: seconds; the
    teams on this process's cores, the largest first); ``fresh``: imported now whatever is
    there."""
    root = Path(where) if where else BUILD_DIR / "imported"
    sha8 = file_sha256(corpus)[:8]
    runs = [root / f"dylan-mmlu{n}-{sha8}" for n in MMLU_TEAMS]
    if fresh:
        for run in runs:
            if run.exists():
                shutil.rmtree(run)
    teams = sorted(zip(MMLU_TEAMS, runs), reverse=True)  # (DyLAN's 7-agent team is the largest)
    done = dict(fork_map(partial(_mmlu_team, corpus=corpus), teams, cores_per_process()))
    return [done[n] for n in MMLU_TEAMS]


def _mmlu_team(team: tuple[int, Path], corpus: Path) -> tuple[int, Path]:
    """One team size of :func:`mmlu_runs`: ``(n, its run)``, kept or imported."""
    from pear.populations.real_debates import imported_run  # heavy: pandas, scipy, only for this function
    n, run = team
    return n, imported_run(DylanMmluReader.name, corpus, run, dataset=MMLU_DATASET,
                           grading=MMLU_GRADING, model=CORPUS_MODEL, skip_bad=True,
                           protocol=f"dylan-mmlu-{n}")


def default_runs(fresh: bool = False) -> list[Path]:
    """What ``grounded`` is fitted on: DyLAN's MATH corpus (:func:`corpus_run`) and its MMLU
    teams (:func:`mmlu_runs`); ``fresh``: both imported from scratch."""
    return [corpus_run(fresh=fresh), *mmlu_runs(fresh=fresh)]


def write_graded(dest: Path = GRADED, *, corpus: Path = CORPUS,
                 where: str | os.PathLike[str] | None = None) -> Path:
    """Import ``corpus`` from scratch (:func:`corpus_run` with ``fresh``, under ``where``) and
    ship the run as its graded copy ``dest`` (:func:`pear.store.shipped.write`)."""
    return shipped_import.write(corpus_run(where, corpus=corpus, fresh=True), dest)


def check_graded(run: str | os.PathLike[str], dest: Path = GRADED) -> list[str]:
    """What differs between the shipped graded copy ``dest`` and ``run``, an import of the
    corpus from scratch (:func:`pear.store.shipped.check`: timing, wall-clock and environment
    fields aside; empty: the shipped copy is what the code produces)."""
    return shipped_import.check(dest, run, CORPUS.name)


def sources(grounded: bool) -> dict[str, str]:
    """Which data each parameter came from (a population file's ``sources``)."""
    from pear.populations.calibration import STAGES  # heavy: pandas, matplotlib, only for this function
    fitted = {f for _, fields, _ in STAGES for f in fields}
    study = ("fitted to the study's baselines (CoT, CoT-SC and Random accuracy per dataset, "
             "Random's diagnostics: data/paper/main_results.csv, data/paper/diagnostics.csv) "
             "by benchmarks/calibrate_simulation.py")
    out = {}
    for f in dataclasses.fields(SimParams):
        out[f.name] = (study if f.name in fitted else "plumbing (tests), not a behaviour"
                       if f.name in _PLUMBING else "our choice")
    if grounded:
        real = (f"the real debates in fitted_on (DyLAN's gpt-3.5 MATH debates, {CORPUS.name}; "
                f"for grounded also its MMLU teams, {MMLU_CORPUS.name})")
        out["wrong_focus"] = (f"measured: set so that two erring agents give the same wrong "
                              f"answer as often as pairs of erring round-0 agents of a debate "
                              f"do in {real}")
        out["wrong_focus_options"] = (f"measured like wrong_focus, on the debates of {real} "
                                      "whose questions offer labelled options (unset: "
                                      "wrong_focus)")
        out["wrong_focus_many"] = (
            f"pinned by published figures: {WRONG_FOCUS_MANY} (pear.populations.grounding."
            "WRONG_FOCUS_MANY), where DebateLedger's MMLU-Pro collapse and recovery of 11 "
            "models are likeliest (pear.populations.published_dynamics); unset on free answers "
            "(grounded-math)")
        out["n_wrong"] = ("our choice (8), raised to the fewest wrong answers that allow the "
                          "measured same-wrong-answer share when it is below 1/8")
        out["revise_focus"] = "not used (the revision model draws another wrong answer)"
        out["unread_wrong"] = ("our choice: unset (every initial answer is read); a twin "
                               "measures it on its run (pear.populations.twin)")
        out["recheck"] = "not used (the revision model replaces persuasion-driven revision)"
        out["revision"] = (f"fitted by maximum likelihood (conditional logit, "
                           f"pear.sim.revision) to every debate round of {real}")
        out["critique_weight"] = ("our choice (1: a received critique counts like a peer's "
                                  "answer heard in full); no real log has critiques: the "
                                  "ensemble's draws span 1 and 0.5 (pear.populations.grounding."
                                  "CRITIQUE_WEIGHTS)")
        for f in ("accept_agree", "accept_bias", "accept_src", "accept_tgt", "accept_right",
                  "accept_hold", "conf_base", "conf_gap", "conf_sd"):
            out[f] += " (real logs have no critiques or confidences)"
    else:
        out["revision"] = "none: revision by persuasion (accept_*, recheck, revise_focus)"
    return out


def _code() -> dict[str, Any]:
    return {"modules": ["pear.sim.revision", "pear.populations.grounding",
                        "pear.sim.population"], "pear_version": pear.__version__}


def study_population() -> Population:
    """``study``: :class:`SimParams`' defaults with their provenance."""
    return Population("study", SimParams(), None, {
        "sources": sources(False), "fitted_on": [
            {"file": f"data/paper/{n}", "sha256": file_sha256(PAPER_DIR / n)}
            for n in ("main_results.csv", "diagnostics.csv")],
        "code": {**_code(), "modules": ["pear.populations.calibration",
                                        "benchmarks/calibrate_simulation.py"]},
        "diagnostics": {}})


@dataclasses.dataclass(frozen=True)
class Grounding:
    """What :func:`ground` measured: the revision fit, the same-wrong-answer share and the
    number of pairs it was measured on, the choice sets, the runs read and the time taken."""

    fit: revision.RevisionFit
    same_wrong: float
    wrong_pairs: int
    transitions: revision.Transitions
    runs: tuple[Path, ...]
    seconds: float
    left_out: int = 0
    """How many debates of the runs :func:`ground`'s ``leave_out`` kept out of the fit."""
    same_wrong_options: float | None = None
    """The same-wrong-answer share of the runs whose questions offer labelled options (None:
    no such run), measured apart: ``wrong_focus_options``."""
    wrong_pairs_options: int = 0
    options: int = 0
    """How many options those runs' questions offer (the most of any record:
    :func:`pear.populations.simcheck.n_choices`)."""


def ground(runs: Sequence[str | os.PathLike[str]] | None = None,
           extra: Sequence[str | os.PathLike[str]] = (),
           leave_out: Callable[[Mapping[str, Any]], bool] | None = None,
           features: Sequence[str] | None = None) -> Grounding:
    """Fit the revision model with ``features`` (default: every column of
    :attr:`~pear.sim.population.RevisionModel.COLUMNS` when some run's questions offer
    labelled options, else :attr:`~pear.sim.population.RevisionModel.FEATURES`: the
    ``*_x_options`` terms need both answer spaces) and measure the same-wrong-answer shares on
    ``runs`` (default: :func:`default_runs`) and the imported runs ``extra``, without the
    debates for which ``leave_out(record)`` is true (e.g. one subject, for a held-out check):
    they count in nothing, neither the choice sets, nor the question sets' round-0 accuracy,
    nor the same-wrong-answer share."""
    t0 = time.perf_counter()
    paths = tuple(Path(r) for r in (runs if runs is not None else default_runs())) + \
        tuple(Path(r) for r in extra)
    parts = [records([p]) for p in paths]
    flags = [options(p, part) for p, part in zip(paths, parts)]
    total = sum(map(len, parts))
    if leave_out is not None:
        parts = [[r for r in part if not leave_out(r)] for part in parts]
    recs = [r for part in parts for r in part]
    accuracy = revision.round0_accuracy(recs)
    tr = revision.concat([revision.transitions(part, accuracy, sequential(p), o)
                          for p, part, o in zip(paths, parts, flags)])
    if features is None:
        features = RevisionModel.COLUMNS if any(flags) and not all(flags) \
            else RevisionModel.FEATURES
    free = [r for part, o in zip(parts, flags) if not o for r in part]
    lettered = [r for part, o in zip(parts, flags) if o for r in part]
    share, pairs = revision.same_wrong_answer(free or lettered)  # wrong_focus
    share_o, pairs_o = revision.same_wrong_answer(lettered) if free and lettered else (None, 0)
    n_options = 0
    if lettered:  # heavy: pandas and the simulator, only for lettered runs
        from pear.populations.simcheck import n_choices
        n_options = max(n_choices(r, "letters") for r in lettered)
    return Grounding(revision.fit(tr, features=features), share, pairs, tr, paths,
                     time.perf_counter() - t0, total - len(recs), share_o, pairs_o, n_options)


WRONG_FOCUS_MANY = 0.75
"""``grounded``'s :attr:`~pear.sim.population.SimParams.wrong_focus_many` (erring agents on ten
options, MMLU-Pro's): pinned by DebateLedger's published MMLU-Pro figures, not by DyLAN's
four-option debates (whose 0.873, carried to ten options, makes erring agents share a letter
0.76 of the time).  The binomial log-likelihood of the 22 published shares (collapse and
recovery of 11 models, :func:`pear.populations.published_dynamics.check`, 10 replicates) is
-3583 at 0.873 and flat from 0.55 to 0.75 (-3545, -3555, -3548 at 0.55, 0.65, 0.75: within the
simulation's noise); of that plateau, the value nearest the measured one, which also keeps the
most simulated shares inside their published intervals (10 of 22, against 9 at 0.65 and 8 at
0.55)."""


def _grounded(g: Grounding, model: RevisionModel, se: Sequence[float] | None,
              name: str = "grounded", diagnostics: Mapping[str, Any] | None = None
              ) -> Population:
    base = SimParams()
    focus, n_wrong = pop.wrong_answers_for(g.same_wrong, base.n_wrong)
    focus_o = None
    if g.same_wrong_options is not None:
        focus_o = round(pop.wrong_focus_for(g.same_wrong_options, g.options - 1), DECIMALS)
    coef = RevisionModel(tuple(round(c, DECIMALS) for c in model.coef), model.critique_weight,
                         model.features)
    info: dict[str, Any] = {
        "sources": sources(True), "fitted_on": _fitted_on(g.runs), "code": _code(),
        "diagnostics": {**(diagnostics or {}),
                        "same_wrong_answer_share": round(g.same_wrong, 4),
                        "same_wrong_answer_pairs": g.wrong_pairs,
                        **({"same_wrong_answer_share_options": round(g.same_wrong_options, 4),
                            "same_wrong_answer_pairs_options": g.wrong_pairs_options,
                            "options": g.options} if focus_o is not None else {}),
                        "round0_accuracy": {k: round(v, 4)
                                            for k, v in sorted(g.transitions.accuracy.items())},
                        "unread_answers_left_out": g.transitions.dropped}}
    if se is not None:
        info["revision_se"] = {f: round(float(s), 4) for f, s in zip(model.features, se)}
    return Population(name, dataclasses.replace(base, wrong_focus=round(focus, DECIMALS),
                                                n_wrong=n_wrong, wrong_focus_options=focus_o,
                                                wrong_focus_many=None if focus_o is None
                                                else WRONG_FOCUS_MANY),
                      coef, info)


MATH_ONLY = "grounded-math"
"""The population ``grounded`` was until the MMLU debates entered its fit: the revision model
without the answer-space terms, fitted on DyLAN's MATH corpus alone (a comparison)."""


def math_population(g: Grounding | None = None) -> Population:
    """:data:`MATH_ONLY` from ``g``, a :func:`ground` of the MATH corpus alone (default: of
    :func:`corpus_run`)."""
    return grounded_population(g or ground(runs=[corpus_run()]), MATH_ONLY)


def grounded_population(g: Grounding | None = None, name: str = "grounded",
                        diagnostics: Mapping[str, Any] | None = None) -> Population:
    """``grounded`` from :func:`ground` (run now when not given), named ``name``, with
    ``diagnostics`` added to the fit's (e.g. what was left out)."""
    g = g or ground()
    return _grounded(g, g.fit.model, g.fit.se_cluster, name,
                     diagnostics={**(diagnostics or {}), **g.fit.diagnostics(),
                                  "revision_se_model": {f: round(float(s), 4) for f, s in zip(
                                      g.fit.model.features, g.fit.se)},
                                  "revision_se": "clustered by debate (sandwich)"})


CRITIQUE_WEIGHTS = (1.0, 0.5)
"""The ensemble's draws of PEAR's protocol mapping (:attr:`pear.sim.population.RevisionModel.
critique_weight`): draw i maps a received critique to "heard" with weight
``CRITIQUE_WEIGHTS[i % 2]`` (a peer's answer quoted in full, or discounted by half); ``grounded``
itself uses 1.  Our choice: no real log we hold has critiques, so the mapping is an assumption
the ensemble spans, not a fitted value."""


def bootstrap_populations(k: int = 20, seed: int = 0, g: Grounding | None = None
                          ) -> list[Population]:
    """``k`` grounded populations (``grounded-b<i>``), each with the revision model refitted on
    the debates resampled with replacement (:func:`pear.sim.revision.bootstrap`, seeded by
    ``seed``; the same-wrong-answer share stays the whole data's; the spread of the skill
    interactions is the strength dependence's) and PEAR's protocol mapped with the critique
    weight :data:`CRITIQUE_WEIGHTS` ``[i % 2]``: an ensemble over both.  Without ``g``, the shipped
    draws when they hold these (:func:`shipped_draws`: what ``pear populations check`` holds
    equal to a refit), else refitted on :func:`ground`'s fit."""
    if g is None:
        shipped = shipped_draws(k, seed)
        if shipped is not None:
            return shipped
    g = g or ground()
    fits = revision.bootstrap(g.transitions, k, seed, start=g.fit.model.coef,
                              features=g.fit.model.features)
    return [_grounded(g, dataclasses.replace(
        f.model, critique_weight=CRITIQUE_WEIGHTS[i % len(CRITIQUE_WEIGHTS)]), None,
        _draw_name(i), {**f.diagnostics(), "bootstrap": {"seed": seed, "draw": i}})
            for i, f in enumerate(fits)]


def _draw_name(i: int) -> str:
    return f"grounded-b{i}"


def shipped_draws(k: int, seed: int, where: Path | None = None) -> list[Population] | None:
    """The first ``k`` shipped bootstrap draws of ``seed`` (``where``, default
    :data:`ENSEMBLE_DIR`), or None when they are not shipped: another seed, more than are
    shipped, or drawn from another ``grounded`` than the shipped one."""
    import json
    root = Path(where) if where is not None else ENSEMBLE_DIR
    try:
        record = json.loads((root / ENSEMBLE_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = [_draw_name(i) for i in range(k)]
    if record.get("seed") != seed or any(n not in record.get("populations", {}) for n in names) \
            or record.get("point", {}).get("fingerprint") != pop.load("grounded").fingerprint:
        return None
    draws = [pop.load(root / f"{n}.json") for n in names]
    for p in draws:
        if p.fingerprint != record["populations"][p.name]:
            raise ValueError(f"shipped draw {str(root / (p.name + '.json'))!r}: fingerprint "
                             f"{p.fingerprint[:12]}, {ENSEMBLE_RECORD} says "
                             f"{record['populations'][p.name][:12]}")
    return draws


def write_draws(draws: Sequence[Population], seed: int, point: Population,
                where: Path | None = None) -> Path:
    """Write the bootstrap draws of ``seed`` from ``point`` as shipped data (``where``,
    default :data:`ENSEMBLE_DIR`): one file each and the record of the seed and every
    fingerprint.  Files of other draws there are removed."""
    root = Path(where) if where is not None else ENSEMBLE_DIR
    root.mkdir(parents=True, exist_ok=True)
    keep = {f"{p.name}.json" for p in draws} | {ENSEMBLE_RECORD}
    for old in root.glob("*.json"):
        if old.name not in keep:
            old.unlink()
    for p in draws:
        p.write(root / f"{p.name}.json")
    return write_json(root / ENSEMBLE_RECORD, {
        "seed": seed, "k": len(draws), "point": point.manifest(),
        "populations": {p.name: p.fingerprint for p in draws}}, newline=True)


def _difference(name: str, shipped: Population, now: Population) -> str:
    what = [f"{f}: shipped {getattr(shipped.params, f)!r}, now {getattr(now.params, f)!r}"
            for f in (x.name for x in dataclasses.fields(SimParams))
            if getattr(shipped.params, f) != getattr(now.params, f)]
    if (shipped.revision is None) != (now.revision is None):
        what.append("revision model present in one only")
    elif shipped.revision is not None:
        what += [f"{f}: shipped {a}, now {b}" for f, a, b in zip(
            RevisionModel.COLUMNS + ("critique_weight",),
            (*shipped.revision.vector, shipped.revision.critique_weight),
            (*now.revision.vector, now.revision.critique_weight)) if a != b]
    return (f"{name}: fingerprint {shipped.fingerprint[:12]} shipped, {now.fingerprint[:12]} "
            "from the data and code now (" + "; ".join(what) + ")")


def check(g: Grounding | None = None, g_math: Grounding | None = None) -> list[str]:
    """What differs between the shipped population files (``study``, ``grounded``,
    ``grounded-math`` and the :data:`ENSEMBLE_K` bootstrap draws of :data:`ENSEMBLE_SEED`) and
    what the shipped data and code produce now (empty: they match).  ``g``: :func:`ground`'s
    fit (default: now); ``g_math``: the fit on the MATH corpus alone (default: on ``g``'s
    first run)."""
    g = g or ground()
    problems = []
    for name, build in (("study", lambda: study_population()),
                        ("grounded", lambda: grounded_population(g)),
                        (MATH_ONLY, lambda: math_population(
                            g_math or ground(runs=[g.runs[0]])))):
        shipped, now = pop.load(name), build()
        if shipped.fingerprint != now.fingerprint:
            problems.append(_difference(name, shipped, now))
    shipped_draws_ = shipped_draws(ENSEMBLE_K, ENSEMBLE_SEED)
    if shipped_draws_ is None:
        return problems + [f"{ENSEMBLE_DIR.name}: the {ENSEMBLE_K} bootstrap draws of seed "
                           f"{ENSEMBLE_SEED} of the shipped grounded are not shipped "
                           f"({ENSEMBLE_DIR}): run `pear populations write`"]
    for shipped, now in zip(shipped_draws_,
                            bootstrap_populations(ENSEMBLE_K, ENSEMBLE_SEED, g)):
        if shipped.fingerprint != now.fingerprint:
            problems.append(_difference(f"{ENSEMBLE_DIR.name}/{shipped.name}", shipped, now))
    return problems


IN_SAMPLE_MIN = 100
"""Choice sets a situation needs for :func:`in_sample` to hold it (our choice)."""
IN_SAMPLE_TOLERANCE = 0.08
"""The largest gap between a real and a predicted share (keep, adopt, produce another) of a
situation that :func:`in_sample` accepts (our choice: a few points; the sampling error of a
situation of 100 choice sets is about 0.05)."""


def in_sample(g: Grounding, replicates: int = 20, seed: int = 0) -> tuple[Any, Any, list[str]]:
    """The fit held against its own data: the choice level (:func:`pear.sim.revision.
    predictive_table` of ``grounded`` refitted on ``g``'s choice sets) and the debate level
    (every debate of the corpus simulated under its own protocol, :func:`pear.analysis.
    simcheck.check`, with the population :func:`grounded_population` writes); and what fails:
    a situation of at least :data:`IN_SAMPLE_MIN` choice sets whose real share of keeping,
    adopting or producing another answer is more than :data:`IN_SAMPLE_TOLERANCE` from the
    predicted one, or whose share ending right is more than 4 standard deviations from it."""
    from pear.populations import simcheck  # heavy: pandas and the simulator, only for this function
    point = grounded_population(g)
    table = revision.predictive_table(g.transitions, point.revision)
    problems = []
    for (space, own, heard), row in table.iterrows():
        if row["n"] < IN_SAMPLE_MIN:
            continue
        where = f"{space} answers, own answer {own}, heard {heard}"
        for k in ("keep", "adopt", "another"):
            if abs(row[k] - row[f"{k}_pred"]) > IN_SAMPLE_TOLERANCE:
                problems.append(f"{where} ({row['n']:.0f} choice sets): {k} {row[k]:.3f} "
                                f"real, {row[f'{k}_pred']:.3f} predicted")
        if abs(row["z_right"]) > 4:
            problems.append(f"{where}: ended right {row['right']:.3f} real, "
                            f"{row['right_pred']:.3f} predicted (z {row['z_right']:+.1f})")
    debates = simcheck.check(g.runs[0], point, replicates, seed)
    return table, debates, problems


def fit_summary(g: Grounding) -> str:
    """The fit as ``pear populations`` prints it: its size, time and same-wrong-answer share,
    the coefficients' table and the fit's diagnostics."""
    return "\n".join([
        f"fit: {g.fit.n_choices} choice sets of {g.fit.n_debates} debates in "
        f"{g.fit.seconds:.2f} s (with reading: {g.seconds:.1f} s); same wrong answer "
        f"{g.same_wrong:.3f} of {g.wrong_pairs} pairs of erring agents",
        g.fit.table().round(4).to_string(), str(g.fit.diagnostics())])


def check_all(log: Callable[[str], None] | None = None) -> tuple[list[str], list[str]]:
    """The reproducibility check (``pear populations check``, run by CI): DyLAN's MATH corpus
    imported from scratch (never from the shipped graded copy it checks) and held against that
    copy (:func:`check_graded`), so are notebook 17's shipped files
    (:func:`pear.populations.real_debates.check_shipped_graded`), its MMLU teams imported from
    scratch, the whole fitted, and the shipped population files held against that fit
    (:func:`check`).  Returns what differs: the
    graded copy's records and the population files (both empty: everything as shipped).
    ``log`` is told each step's time and the fit as it goes (minutes in all)."""
    say = log or (lambda line: None)
    t0 = time.perf_counter()
    run = corpus_run(fresh=True)
    graded = check_graded(run)
    say(f"imported {CORPUS.name} from scratch in {time.perf_counter() - t0:.0f} s ({run}); "
        f"shipped graded copy: {'DIFFERS' if graded else 'the same records'}")
    from pear.populations.real_debates import SHIPPED, check_shipped_graded, shipped_runs
    t0 = time.perf_counter()
    others = check_shipped_graded(shipped_runs(where=BUILD_DIR / "imported", fresh=True))
    say(f"imported {', '.join(f for _, f, _, _ in SHIPPED.values())} from scratch in "
        f"{time.perf_counter() - t0:.0f} s; shipped graded copies: "
        f"{'DIFFER' if others else 'the same records'}")
    graded += others
    t0 = time.perf_counter()
    g = ground(runs=[run, *mmlu_runs(fresh=True)])
    say(f"imported {MMLU_CORPUS.name}'s {len(MMLU_TEAMS)} teams from scratch and fitted in "
        f"{time.perf_counter() - t0:.0f} s")
    say(fit_summary(g))
    return graded, check(g)


def write_populations(g: Grounding | None = None
                      ) -> tuple[list[tuple[Path, Population]], Path]:
    """Write the shipped populations from ``g`` (:func:`ground`'s fit; default: now):
    ``study``, ``grounded`` and ``grounded-math`` (fitted on ``g``'s first run) in
    :data:`~pear.sim.population.POPULATIONS_DIR`, and the :data:`ENSEMBLE_K` bootstrap draws
    of :data:`ENSEMBLE_SEED` from that ``grounded`` (:func:`write_draws`).  Returns each
    population file written with what it holds, and the draws' record."""
    g = g or ground()
    pop.POPULATIONS_DIR.mkdir(parents=True, exist_ok=True)
    point = grounded_population(g)
    written = [(p.write(pop.POPULATIONS_DIR / f"{p.name}.json"), p)
               for p in (study_population(), point, math_population(ground(runs=[g.runs[0]])))]
    draws = bootstrap_populations(ENSEMBLE_K, ENSEMBLE_SEED, g)
    return written, write_draws(draws, ENSEMBLE_SEED, point)


def bootstrap_spread(k: int, seed: int = 0, g: Grounding | None = None
                     ) -> tuple[float, dict[str, float]]:
    """``k`` bootstrap refits of ``g`` (:func:`bootstrap_populations`, seeded by ``seed``;
    default: :func:`ground` now): the seconds they took and each coefficient's standard
    deviation across them."""
    if k < 1:
        raise ValueError(f"bootstrap needs at least one refit, got {k}")
    g = g or ground()
    t0 = time.perf_counter()
    pops = bootstrap_populations(k, seed, g)
    dt = time.perf_counter() - t0
    coefs = np.array([p.revision.coef for p in pops])
    return dt, {f: float(s) for f, s in zip(pops[0].revision.features, coefs.std(0))}
