"""The corpus fit: the shipped populations ``study`` and ``grounded`` (``data/populations/``)
from the shipped data and code.

* ``study`` (:func:`study_population`): :class:`~pear.sim.population.SimParams`' defaults,
  fitted to the study's baselines (:mod:`pear.populations.calibration`); revision by persuasion.
* ``grounded`` (:func:`grounded_population`): the study's initial answers, confidence and
  critique acceptance (real logs have neither confidences nor critiques), with

  - the revision model (:class:`~pear.sim.population.RevisionModel`, every feature of its
    ``COLUMNS``) fitted by maximum likelihood (:func:`pear.sim.revision.fit`) to every debate
    round of DyLAN's whole corpus of gpt-3.5 MATH debates
    (:data:`pear.store.import_cache.CORPUS`, 4,800 debates, imported with ``pear import
    dylan`` as dataset ``math``, graded by the math kind), of its MMLU debates
    (:data:`pear.store.import_cache.MMLU_CORPUS`, teams of 2, 3, 4 and 7, one run per team:
    :func:`pear.store.import_cache.mmlu_runs`) and any imported run given; the answer-space
    terms let the free answers and the letters enter one fit (:func:`fit_corpus`, its result a
    :class:`CorpusFit`);
  - ``wrong_focus`` set so that two erring agents give the same wrong answer as often as in
    those debates' round 0 (:func:`pear.sim.revision.same_wrong_answer`), measured on the
    free-answer debates, and ``wrong_focus_options`` likewise on the multiple-choice ones.
* ``grounded-math`` (:func:`math_population`, :data:`MATH_ONLY`): the fit on the MATH corpus
  alone, without the answer-space terms: ``grounded`` before the MMLU debates entered it.

  Coefficients are stored rounded to 3 decimals (far below their standard errors), so that the
  fingerprint does not move with a float's last bits.

Its bootstrap draws are :mod:`pear.populations.draws`; the shipped files are written and
checked by :mod:`pear.populations.checks`; the command line is ``pear population shipped``
(:mod:`pear.cli.populations`).
"""
from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pear.paths import PAPER_DIR
from pear.sim import population as pop, revision
from pear.sim.population import Population, RevisionModel, SimParams
from pear.core.hashing import file_sha256
from pear.store.import_cache import CORPUS, MMLU_CORPUS, corpus_run, default_runs
from pear.populations.reading import fitted_on as _fitted_on, options, records, sequential
import pear

__all__ = ["DECIMALS", "sources", "study_population", "CorpusFit", "fit_corpus",
           "WRONG_FOCUS_MANY", "grounded_population", "MATH_ONLY", "math_population",
           "fit_summary", "population_from"]

DECIMALS = 3
"""Decimals of the stored coefficients and of ``wrong_focus``."""


_PLUMBING = ("malformed_rate", "latency_s")


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
            f"pinned by published figures: {WRONG_FOCUS_MANY} (pear.populations.corpus_fit."
            "WRONG_FOCUS_MANY), where DebateLedger's MMLU-Pro collapse and recovery of 11 "
            "models are likeliest (pear.populations.published_collapse); unset on free answers "
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
                                  "ensemble's draws span 1 and 0.5 (pear.populations.draws."
                                  "CRITIQUE_WEIGHTS)")
        for f in ("accept_agree", "accept_bias", "accept_src", "accept_tgt", "accept_right",
                  "accept_hold", "conf_base", "conf_gap", "conf_sd"):
            out[f] += " (real logs have no critiques or confidences)"
    else:
        out["revision"] = "none: revision by persuasion (accept_*, recheck, revise_focus)"
    return out


def _code() -> dict[str, Any]:
    return {"modules": ["pear.sim.revision", "pear.populations.corpus_fit",
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
class CorpusFit:
    """What :func:`fit_corpus` measured: the revision fit, the same-wrong-answer share and the
    number of pairs it was measured on, the choice sets, the runs read and the time taken."""

    fit: revision.RevisionFit
    same_wrong: float
    wrong_pairs: int
    transitions: revision.Transitions
    runs: tuple[Path, ...]
    seconds: float
    left_out: int = 0
    """How many debates of the runs :func:`fit_corpus`'s ``leave_out`` kept out of the fit."""
    same_wrong_options: float | None = None
    """The same-wrong-answer share of the runs whose questions offer labelled options (None:
    no such run), measured apart: ``wrong_focus_options``."""
    wrong_pairs_options: int = 0
    options: int = 0
    """How many options those runs' questions offer (the most of any record:
    :func:`pear.populations.simcheck.n_choices`)."""


def fit_corpus(runs: Sequence[str | os.PathLike[str]] | None = None,
           extra: Sequence[str | os.PathLike[str]] = (),
           leave_out: Callable[[Mapping[str, Any]], bool] | None = None,
           features: Sequence[str] | None = None) -> CorpusFit:
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
    return CorpusFit(revision.fit(tr, features=features), share, pairs, tr, paths,
                     time.perf_counter() - t0, total - len(recs), share_o, pairs_o, n_options)


WRONG_FOCUS_MANY = 0.75
"""``grounded``'s :attr:`~pear.sim.population.SimParams.wrong_focus_many` (erring agents on ten
options, MMLU-Pro's): pinned by DebateLedger's published MMLU-Pro figures, not by DyLAN's
four-option debates (whose 0.873, carried to ten options, makes erring agents share a letter
0.76 of the time).  The binomial log-likelihood of the 22 published shares (collapse and
recovery of 11 models, :func:`pear.populations.published_collapse.check`, 10 replicates) is
-3583 at 0.873 and flat from 0.55 to 0.75 (-3545, -3555, -3548 at 0.55, 0.65, 0.75: within the
simulation's noise); of that plateau, the value nearest the measured one, which also keeps the
most simulated shares inside their published intervals (10 of 22, against 9 at 0.65 and 8 at
0.55)."""


def population_from(g: CorpusFit, model: RevisionModel, se: Sequence[float] | None,
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


def math_population(g: CorpusFit | None = None) -> Population:
    """:data:`MATH_ONLY` from ``g``, a :func:`fit_corpus` of the MATH corpus alone (default: of
    :func:`corpus_run`)."""
    return grounded_population(g or fit_corpus(runs=[corpus_run()]), MATH_ONLY)


def grounded_population(g: CorpusFit | None = None, name: str = "grounded",
                        diagnostics: Mapping[str, Any] | None = None) -> Population:
    """``grounded`` from :func:`fit_corpus` (run now when not given), named ``name``, with
    ``diagnostics`` added to the fit's (e.g. what was left out)."""
    g = g or fit_corpus()
    return population_from(g, g.fit.model, g.fit.se_cluster, name,
                     diagnostics={**(diagnostics or {}), **g.fit.diagnostics(),
                                  "revision_se_model": {f: round(float(s), 4) for f, s in zip(
                                      g.fit.model.features, g.fit.se)},
                                  "revision_se": "clustered by debate (sandwich)"})



def fit_summary(g: CorpusFit) -> str:
    """The fit as ``pear population shipped`` prints it: its size, time and same-wrong-answer share,
    the coefficients' table and the fit's diagnostics."""
    return "\n".join([
        f"fit: {g.fit.n_choices} choice sets of {g.fit.n_debates} debates in "
        f"{g.fit.seconds:.2f} s (with reading: {g.seconds:.1f} s); same wrong answer "
        f"{g.same_wrong:.3f} of {g.wrong_pairs} pairs of erring agents",
        g.fit.table().round(4).to_string(), str(g.fit.diagnostics())])
