"""Twins: a population fitted to recorded runs (``pear population fit RUN... --out FILE``).

A plain refit of the revision model on one small run does not make a twin: on 40-250 debates the
full conditional logit separates or does not converge and loses the terms its answer space
needs.  A twin keeps the corpus fit (``grounded``: :data:`BASE`) as the prior mean and frees a
few run-level effects (:data:`EFFECTS`), each a shift of the corpus coefficients:

* ``keep``: how firmly an agent keeps its own answer, right or wrong (``own``);
* ``keep_right``: how much more firmly it keeps a *right* answer than a wrong one
  (``own_x_right``): a flippy small model leaves a right answer about as readily as a wrong
  one, a strong one almost never;
* ``follow``: how hard an answer it hears pulls (``share``);
* ``follow_right``: how much more a *right* answer it hears pulls (``right`` on a heard
  candidate: ``right`` minus ``own_x_right`` and ``new_x_right``);
* ``invent``: how often it produces an answer nobody holds (``new``);
* ``find_right``: how much more often that answer nobody holds is the right one
  (``new_x_right``: self-correction, apart from adopting a right answer heard).

The three ``*_right`` effects shift disjoint candidates (own, heard, new), so each says one
thing.  They are estimated by a penalised likelihood: the conditional logit's log-likelihood of
the run's choice sets (:mod:`pear.sim.revision`, the one definition of candidates and features)
minus ``sum(effect**2 / (2 * prior_sd**2))``.  How far a run may move an effect is set by
how much *models* differ, not by how much one model's tasks do: the licensed runs are all
gpt-3.5, whose spread across its own tasks is a few tenths, while the members matched to
published per-model figures (``prior.json``'s ``matched``: Du's, Choi's and DebateLedger's
models) lie several units apart.  :func:`estimate_prior` adds the two variance components
(one model's tasks, method of moments on the licensed runs; models, the matched members'
values), at least :data:`PRIOR_SD_FLOOR` for an effect no published figure frees; 100 debates
of a run then dominate it.  The standard errors and the covariance are the posterior's (the
inverse of the penalised information): a twin's predictive draws (:func:`draws`) come from
them.

The initial answers come from the run too: its strength per dataset (the round-0 agent
accuracy: the dataset's ease is set so that the population's expected round-0 accuracy equals
it), how often two erring agents of a debate give the same wrong answer (``wrong_focus``,
``n_wrong``; ``wrong_focus_options`` for lettered questions).  Confidence and critique
acceptance stay the base's (no real log has them).
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

import pear
from pear.core.config import whole_number
from pear.core.hashing import int_seed
from pear.paths import DATA_DIR, shown
from pear.populations import reading
from pear.populations.bisection import increasing_root
from pear.populations.simcheck import n_choices
from pear.sim import population as pop, revision
from pear.sim.population import (DATASET_EASE, Population, RevisionModel, SimParams,
                                 round0_moments)

__all__ = ["EFFECTS", "BASE", "PRIOR_FILE", "Prior", "Twin", "design", "fit_effects",
           "fit_twin", "draws", "loglik", "estimate_prior", "load_prior", "initial_params",
           "check_records", "shifted", "ease_for", "round0_moments", "SMALL_PILOT"]

BASE = "grounded"
"""The corpus fit a twin is pooled toward (its revision model is the prior mean)."""
PRIOR_FILE = DATA_DIR / "populations" / "family" / "prior.json"
"""The prior's spread per effect (:func:`estimate_prior` on the licensed runs)."""
EFFECTS: dict[str, dict[str, float]] = {
    "keep": {"own": 1.0},
    "keep_right": {"own_x_right": 1.0},
    "follow": {"share": 1.0},
    "follow_right": {"right": 1.0, "own_x_right": -1.0, "new_x_right": -1.0},
    "invent": {"new": 1.0},
    "find_right": {"new_x_right": 1.0},
}
"""The run-level effects: name -> the coefficients it shifts (and by how much per unit)."""
DECIMALS = 4
PRIOR_SD_FLOOR = 1.5  # our choice: weak, so that 100 debates dominate an unmatched effect
"""The smallest prior spread of an effect.  Models differ by several units on these effects
(the published members' matched ``follow_right`` runs from -4 to +6, DebateLedger's matched
``keep_right`` from -1.1 to +6), one model's tasks by a few tenths (DyLAN's eleven runs); with a
spread of 1.5 a run whose own standard error is 0.3 keeps 96% of its estimate
(``1.5**2 / (1.5**2 + 0.3**2)``), while a pilot whose data say little stays near the corpus
fit."""
SMALL_PILOT = 20  # our choice: below this many debates a twin is mostly its prior
"""A twin fitted on fewer debates is written with a warning naming its size."""


def _directions() -> np.ndarray:
    """(columns x effects): each effect as a vector over RevisionModel.COLUMNS."""
    D = np.zeros((len(RevisionModel.COLUMNS), len(EFFECTS)))
    for k, shifts in enumerate(EFFECTS.values()):
        for col, w in shifts.items():
            D[RevisionModel.COLUMNS.index(col), k] = w
    return D


@dataclass(frozen=True)
class Prior:
    """The prior of the run-level effects: mean 0 (the base's coefficients), ``sd`` per effect,
    and where it came from (``info``)."""

    sd: dict[str, float]
    base: str = BASE
    info: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        bad = {k: v for k, v in self.sd.items() if not (isinstance(v, (int, float)) and v > 0)}
        if set(self.sd) != set(EFFECTS) or bad:
            raise ValueError(f"invalid prior sd {self.sd!r}: one value > 0 for each of "
                             f"{', '.join(EFFECTS)}")

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base, "effects": {k: EFFECTS[k] for k in EFFECTS},
                "sd": {k: round(float(self.sd[k]), DECIMALS) for k in EFFECTS}, **self.info}


def load_prior(path: str | os.PathLike[str] | None = None) -> Prior:
    """The prior file (default :data:`PRIOR_FILE`)."""
    path = Path(path) if path else PRIOR_FILE
    try:
        d = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"invalid prior file {str(path)!r}: {err}") from None
    if d.get("effects") != EFFECTS:
        raise ValueError(f"prior file {str(path)!r} frees other effects than this code "
                         f"({sorted(d.get('effects') or {})} vs {sorted(EFFECTS)}): write it "
                         "again (pear population family write)")
    info = {k: v for k, v in d.items() if k not in ("base", "effects", "sd")}
    return Prior({k: float(v) for k, v in d["sd"].items()}, d.get("base", BASE), info)


# ----------------------------------------------------------------- reading the runs

def check_records(recs: Sequence[Mapping[str, Any]], where: str) -> None:
    """One clear error when ``recs`` cannot make a twin: no debates, one agent, no revision
    round, nothing graded."""
    if not recs:
        raise ValueError(f"{where}: no debates to fit a twin on")
    if max(int(r.get("n_agents") or len(r["rounds_data"][0]["agents"])) for r in recs) < 2:
        raise ValueError(f"{where}: one agent per debate: no debate to fit a twin on")
    if max(len(r["rounds_data"]) for r in recs) < 2:
        raise ValueError(f"{where}: no debate has a revision round (every debate stops after "
                         "its initial answers)")
    graded = [a.get("correct") for r in recs for rd in r["rounds_data"] for a in rd["agents"]
              if a.get("canonical")]
    if not any(g is True for g in graded) and not any(r.get("gold") for r in recs):
        raise ValueError(f"{where}: nothing graded (no gold answer, no answer marked right)")


def design(runs: Sequence[str | os.PathLike[str]],
           keep: Callable[[Mapping[str, Any]], bool] | None = None
           ) -> tuple[revision.Transitions, list[list[dict[str, Any]]], list[bool]]:
    """The choice sets of ``runs`` (only the debates ``keep`` accepts), the records read per
    run and whether each run's questions offer labelled options.  In a run whose protocol
    stops on no quorum that can be missed, ``own_x_agree`` is 0 (as
    :meth:`~pear.sim.population.RevisionModel.probabilities` draws it there)."""
    paths = [Path(r) for r in runs]
    parts, flags = [], []
    for p in paths:
        if not p.is_dir():
            raise ValueError(f"not a run directory: {str(p)!r}")
        part = reading.records([p])
        flags.append(reading.options(p, part))
        parts.append([r for r in part if keep is None or keep(r)])
    recs = [r for part in parts for r in part]
    check_records(recs, ", ".join(str(p) for p in paths))
    accuracy = revision.round0_accuracy(recs)
    pieces = []
    for p, part, o in zip(paths, parts, flags):
        if part:
            t = revision.transitions(part, accuracy, reading.sequential(p), o)
            if not reading.stops_on_quorum(p):  # as the simulator draws it there
                t.X[:, RevisionModel.COLUMNS.index("own_x_agree")] = 0.0
            pieces.append(t)
    return revision.concat(pieces), parts, flags


# ----------------------------------------------------------------- the penalised fit

@dataclass(frozen=True)
class EffectsFit:
    """The run-level effects of :func:`fit_effects`: estimates, standard errors (posterior),
    the log-likelihood at the estimate and at 0 (the base), choice sets and debates."""

    estimate: dict[str, float]
    se: dict[str, float]
    loglik: float
    base_loglik: float
    n_choices: int
    n_debates: int
    converged: bool
    cov: tuple[tuple[float, ...], ...] = ()
    """The posterior covariance of the effects (:data:`EFFECTS` order)."""


def fit_effects(tr: revision.Transitions, base: RevisionModel,
                prior_sd: Mapping[str, float] | None) -> EffectsFit:
    """The run-level effects of ``tr`` around ``base`` (its coefficients over every column),
    penalised by ``prior_sd`` (None: no penalty, the run's own maximum likelihood; used to
    estimate the prior)."""
    from scipy.optimize import minimize
    D = _directions()
    Z = tr.X @ D
    offset = tr.X @ base.vector
    starts = tr.starts
    lam = np.zeros(len(EFFECTS)) if prior_sd is None else \
        np.array([1.0 / float(prior_sd[k]) ** 2 for k in EFFECTS])

    def parts(d: np.ndarray, need: int) -> tuple[float, np.ndarray, np.ndarray | None]:
        ll, p = _choices(offset + Z @ d, tr)
        zbar = np.add.reduceat(p[:, None] * Z, starts)
        grad = (Z[tr.chosen] - zbar).sum(0)
        hess = None
        if need == 2:
            dz = Z - zbar[tr.group]
            hess = -(dz * p[:, None]).T @ dz
        return ll, grad, hess

    def obj(d: np.ndarray) -> float:
        return -(parts(d, 0)[0] - 0.5 * float(lam @ d ** 2))

    res = minimize(obj, np.zeros(len(EFFECTS)),
                   jac=lambda d: -(parts(d, 1)[1] - lam * d),
                   hess=lambda d: -(parts(d, 2)[2] - np.diag(lam)),
                   method="trust-exact", options={"gtol": 1e-8, "maxiter": 200})
    ll, grad, hess = parts(res.x, 2)
    info = -hess + np.diag(lam)
    try:
        cov = np.linalg.inv(info)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        cov = np.full((len(EFFECTS), len(EFFECTS)), np.nan)
        se = np.full(len(EFFECTS), np.nan)
    ok = bool(np.all(np.isfinite(se)) and np.all(np.abs(res.x) < 30)
              and np.abs(grad - lam * res.x).max() < 1e-3)
    return EffectsFit({k: float(x) for k, x in zip(EFFECTS, res.x)},
                      {k: float(s) for k, s in zip(EFFECTS, se)}, ll,
                      parts(np.zeros(len(EFFECTS)), 0)[0], tr.n_choices,
                      len(np.unique(tr.debate)), ok,
                      tuple(tuple(float(x) for x in row) for row in cov))


def loglik(tr: revision.Transitions, model: RevisionModel) -> float:
    """The log-likelihood of the choice sets ``tr`` under ``model`` (its coefficients over
    every column): how well a population's revision model explains a run's choices."""
    return _choices(tr.X @ model.vector, tr)[0]


def _choices(v: np.ndarray, tr: revision.Transitions) -> tuple[float, np.ndarray]:
    """Utilities ``v`` of ``tr``'s candidates as a multinomial logit over each choice set:
    the log-likelihood of the chosen candidates and every candidate's probability."""
    vmax = np.maximum.reduceat(v, tr.starts)
    e = np.exp(v - vmax[tr.group])
    den = np.add.reduceat(e, tr.starts)
    return float((v[tr.chosen] - vmax - np.log(den)).sum()), e / den[tr.group]


def shifted(base: RevisionModel, effects: Mapping[str, float]) -> RevisionModel:
    """``base`` with the run-level ``effects`` added to its coefficients (rounded)."""
    v = base.vector + _directions() @ np.array([effects[k] for k in EFFECTS])
    missing = [c for c, x in zip(RevisionModel.COLUMNS, v) if x and c not in base.features]
    if missing:
        raise ValueError(f"base revision model lacks the features {missing} an effect shifts")
    return RevisionModel(tuple(round(float(v[RevisionModel.COLUMNS.index(f)]), DECIMALS)
                               for f in base.features), base.critique_weight, base.features)


# ----------------------------------------------------------------- initial answers

def ease_for(params: SimParams, dataset: str, accuracy: float) -> tuple[str, float]:
    """The ease field of ``dataset`` and the value that makes the population's expected
    round-0 accuracy there ``accuracy`` (bisection on the monotone map:
    :func:`pear.populations.bisection.increasing_root`)."""
    name = DATASET_EASE.get(dataset, "ease_other")
    target = min(max(accuracy, 0.01), 0.99)
    ease = increasing_root(lambda x: round0_moments(dataclasses.replace(params, **{name: x}),
                                                    dataset)[0], target, -40.0, 40.0, 50)
    return name, round(ease, DECIMALS)


def _difficulty_for(params: SimParams, dataset: str, accuracy: float, both: float) -> float:
    """The ``difficulty_sd`` at which two agents of a debate are both right ``both`` of the
    time while one is right ``accuracy`` of the time (how correlated the agents' errors are;
    clipped to [0, 8]; the dataset's ease re-solved at each trial)."""
    def pair(sd: float) -> float:
        trial = dataclasses.replace(params, difficulty_sd=sd)
        name, ease = ease_for(trial, dataset, accuracy)
        return round0_moments(dataclasses.replace(trial, **{name: ease}), dataset)[1]
    return round(increasing_root(pair, both, 0.0, 8.0, 30), 3)


def initial_params(base: SimParams, parts: Sequence[Sequence[Mapping[str, Any]]],
                   flags: Sequence[bool]) -> tuple[SimParams, dict[str, Any]]:
    """The base's parameters with the run's initial answers: the ease of each dataset it holds
    (from its round-0 agent accuracy, over every debate of the dataset), how correlated its
    agents' errors are (``difficulty_sd``, from how often two agents of a debate are both
    right, on its main dataset), how often erring agents agree (``wrong_focus``/``n_wrong``
    from free-answer debates, ``wrong_focus_options`` from lettered ones), how many wrong
    answers no grader read (``unread_wrong``; of the revised ones only measured), and what
    was measured."""
    measured: dict[str, Any] = {}
    acc: dict[str, list[float]] = {}
    both: dict[str, list[float]] = {}
    wrong = unread = 0
    for part in parts:
        for r in part:
            agents = r["rounds_data"][0]["agents"]
            wrong += sum(1 for a in agents if not a.get("correct"))
            unread += sum(1 for a in agents if not a.get("correct") and not a.get("canonical"))
            right = [bool(a.get("correct")) for a in agents]
            if right:
                acc.setdefault(str(r["dataset"]), []).append(float(np.mean(right)))
            if len(right) >= 2:
                k, n = sum(right), len(right)
                both.setdefault(str(r["dataset"]), []).append(k * (k - 1) / (n * (n - 1)))
    params = dataclasses.replace(base, skill_mean=0.0)
    main = max(acc, key=lambda d: len(acc[d]))  # the dataset with the most debates
    if both.get(main):  # the agents' errors as correlated as the run's (its main dataset)
        params = dataclasses.replace(params, difficulty_sd=_difficulty_for(
            params, main, float(np.mean(acc[main])), float(np.mean(both[main]))))
        measured["round0_both_right"] = round(float(np.mean(both[main])), 4)
    for ds, accs in sorted(acc.items()):
        name, value = ease_for(params, ds, float(np.mean(accs)))
        params = dataclasses.replace(params, **{name: value})
        measured.setdefault("round0_accuracy", {})[ds] = round(float(np.mean(accs)), 4)
    revised = [a for part in parts for r in part for rd in r["rounds_data"][1:]
               for a in rd["agents"]]
    if revised:  # measured, not simulated: revised answers no grader read (see unread_wrong)
        measured["unread_revision"] = round(
            sum(1 for a in revised if not a.get("canonical")) / len(revised), 4)
    if wrong:  # wrong initial answers no grader read (the vote does not count them)
        measured["unread_wrong"] = round(unread / wrong, 4)
        if unread:
            params = dataclasses.replace(params, unread_wrong=round(unread / wrong, 3))
    free = [r for part, o in zip(parts, flags) if not o for r in part]
    lettered = [r for part, o in zip(parts, flags) if o for r in part]
    if free:
        share, pairs = revision.same_wrong_answer(free)
        measured.update(same_wrong_answer_share=None if pairs == 0 else round(share, 4),
                        same_wrong_answer_pairs=pairs)
        if pairs and share > 0:
            focus, n_wrong = pop.wrong_answers_for(share, base.n_wrong)
            params = dataclasses.replace(params, wrong_focus=round(focus, 3), n_wrong=n_wrong)
    if lettered:
        share, pairs = revision.same_wrong_answer(lettered)
        n_opt = max(n_choices(r, "yesno" if str(r.get("gold")) in ("yes", "no") else "letters")
                    for r in lettered)
        measured.update(same_wrong_answer_share_options=None if pairs == 0 else round(share, 4),
                        same_wrong_answer_pairs_options=pairs, options=n_opt)
        if pairs and share > 0:
            focus = round(pop.wrong_focus_for(share, n_opt - 1), 3)
            # measured on the run's own options: it governs every option count (the base's
            # wrong_focus_many, pinned on published ten-option figures, gives way)
            params = dataclasses.replace(params, wrong_focus_options=focus, wrong_focus_many=None,
                                         **({} if free else {"wrong_focus": focus}))
    return params, measured


# ----------------------------------------------------------------- the twin

@dataclass(frozen=True)
class Twin:
    """A twin (:attr:`population`, ready to write) and its fit (:attr:`effects`)."""

    population: Population
    effects: EffectsFit
    seconds: float


def fit_twin(runs: Sequence[str | os.PathLike[str]], *, name: str | None = None,
             prior: Prior | None = None, base: str | Population | None = None,
             keep: Callable[[Mapping[str, Any]], bool] | None = None,
             describe: str = "") -> Twin:
    """The twin of ``runs`` (only their debates that ``keep`` accepts; see the module
    docstring), named ``name`` (default: ``twin-<first run's name>``), pooled toward
    ``base`` (default: the prior's) with ``prior`` (default: :func:`load_prior`).
    ``describe``: what the twin stands for (its file's ``describes``)."""
    t0 = time.perf_counter()
    prior = prior or load_prior()
    base_pop = pop.load(base or prior.base)
    if base_pop.revision is None:
        raise ValueError(f"invalid base population {base_pop.name!r}: it has no revision model "
                         "to pool toward")
    tr, parts, flags = design(runs, keep)
    eff = fit_effects(tr, base_pop.revision, prior.sd)
    params, measured = initial_params(base_pop.params, parts, flags)
    model = shifted(base_pop.revision, eff.estimate)
    paths = [Path(r) for r in runs]
    name = name or f"twin-{paths[0].name}"
    n_debates = sum(map(len, parts))
    sources = {f: f"the base population {base_pop.name} ({base_pop.fingerprint[:12]})"
               for f in (x.name for x in dataclasses.fields(SimParams))}
    for f in ("wrong_focus", "n_wrong", "wrong_focus_options", "wrong_focus_many",
              "unread_wrong", "skill_mean",
              "difficulty_sd") + tuple(
            k for k in DATASET_EASE.values()) + ("ease_other",):
        if getattr(params, f) != getattr(base_pop.params, f):
            sources[f] = "measured on the runs in fitted_on (round-0 answers)"
    sources["revision"] = (f"{base_pop.name}'s revision model with the run-level effects "
                           f"{', '.join(EFFECTS)} fitted to the runs in fitted_on (penalised "
                           "likelihood; prior spread per effect from the licensed runs: "
                           "diagnostics.prior)")
    info: dict[str, Any] = {
        "describes": describe or f"a twin of {', '.join(p.name for p in paths)}",
        "sources": sources,
        "fitted_on": reading.fitted_on(paths),
        "code": {"modules": ["pear.populations.twin", "pear.sim.revision"],
                 "pear_version": pear.__version__},
        "diagnostics": {
            "base": base_pop.manifest(),
            "prior": {"sd": {k: round(prior.sd[k], DECIMALS) for k in EFFECTS},
                      "file": shown(PRIOR_FILE) if PRIOR_FILE.is_file() else None},
            "effects": {k: {"estimate": round(eff.estimate[k], DECIMALS),
                            "se": round(eff.se[k], DECIMALS)} for k in EFFECTS},
            "effects_cov": [[round(x, 6) if np.isfinite(x) else None for x in row]
                            for row in eff.cov],
            "log_likelihood": round(eff.loglik, 3),
            "base_log_likelihood": round(eff.base_loglik, 3),
            "choices": eff.n_choices, "debates": n_debates,
            "debates_with_choices": eff.n_debates, "converged": eff.converged,
            "unread_answers_left_out": tr.dropped, **measured}}
    if n_debates < SMALL_PILOT:
        info["warning"] = (f"fitted on {n_debates} debates (under {SMALL_PILOT}): the twin is "
                           f"mostly its prior, {base_pop.name}'s revision model; its predictive "
                           "intervals (pear population sim-check RUN --population FILE) say how little "
                           "it knows")
        warnings.warn(f"{name}: {info['warning']}", stacklevel=2)
    twin = Population(name, params, model, info)
    return Twin(twin, eff, time.perf_counter() - t0)


def draws(population: Population, k: int, seed: int = 0) -> list[Population]:
    """``k`` draws of a twin (or any population whose file records its run-level effects and
    their covariance, ``diagnostics.effects_cov``): its revision model shifted by effects drawn
    from their posterior (normal, the fit's covariance), each named ``<name>~<i>``.  A
    population without that covariance (a corpus fit, a published member) is returned ``k``
    times unchanged: what it does not know it does not say."""
    k = whole_number(k, "k", 1, fix="a number of draws >= 1")
    d = population.info.get("diagnostics") or {}
    cov = np.array(d.get("effects_cov") or [], dtype=float)
    if population.revision is None or cov.shape != (len(EFFECTS), len(EFFECTS)) \
            or not np.all(np.isfinite(cov)):
        return [population] * k
    cov = (cov + cov.T) / 2
    w, V = np.linalg.eigh(cov)
    root = V * np.sqrt(np.clip(w, 0, None))
    rng = np.random.default_rng(int_seed("twin-draws", population.fingerprint, seed, nbytes=8))
    out = []
    for i in range(k):
        delta = root @ rng.standard_normal(len(EFFECTS))
        model = shifted(population.revision, dict(zip(EFFECTS, map(float, delta))))
        out.append(Population(f"{population.name}~{i}", population.params, model,
                              population.info))
    return out


# ----------------------------------------------------------------- the prior

def estimate_prior(groups: Mapping[str, tuple[Sequence[str | os.PathLike[str]],
                                              Callable[[Mapping[str, Any]], bool] | None]],
                   base: str | Population = BASE,
                   matched: Mapping[str, Mapping[str, float]] | None = None) -> Prior:
    """The prior spread of each effect as two variance components that add: how far one
    model's tasks spread it (``groups``, name -> (runs, keep): the licensed runs, one model;
    each group's own maximum-likelihood effects ``e_g`` with standard errors ``s_g`` around
    ``base``, ``mean(e_g**2 - s_g**2)``, method of moments) and how far models spread it
    (``matched``: name -> {effect: value} of members matched to published per-model figures,
    no standard error: ``mean(value**2)`` over the members that free the effect); ``sd`` is
    the square root of their sum, at least :data:`PRIOR_SD_FLOOR`."""
    base_pop = pop.load(base)
    if base_pop.revision is None:
        raise ValueError(f"invalid base population {base_pop.name!r}: no revision model")
    if len(groups) < 3:
        raise ValueError(f"a prior needs the effects of at least 3 runs, got {len(groups)}")
    per = {}
    for gname, (runs, keep) in groups.items():
        tr, _, _ = design(runs, keep)
        f = fit_effects(tr, base_pop.revision, None)
        per[gname] = f
    sd = {}
    components = {}
    for k in EFFECTS:
        e = np.array([f.estimate[k] for f in per.values()])
        s = np.array([f.se[k] for f in per.values()])
        within = max(0.0, float(np.mean(e ** 2 - s ** 2)))  # one model's tasks
        extra = np.array([m[k] for m in (matched or {}).values() if k in m], dtype=float)
        across = float(np.mean(extra ** 2)) if extra.size else 0.0  # models
        components[k] = {"within_model": round(within ** 0.5, DECIMALS),
                         "across_models": round(across ** 0.5, DECIMALS),
                         "matched_members": int(extra.size)}
        sd[k] = float(max(PRIOR_SD_FLOOR, np.sqrt(within + across)))
    from scipy.stats import chi2  # heavy: only the prior's estimate loads it
    hetero = {}
    for k in EFFECTS:  # do the licensed runs differ in this effect beyond their noise?
        e = np.array([f.estimate[k] for f in per.values()])
        s = np.array([f.se[k] for f in per.values()])
        w = 1.0 / s ** 2
        q = float((w * (e - (w * e).sum() / w.sum()) ** 2).sum())
        hetero[k] = {"Q": round(q, 2), "df": len(e) - 1,
                     "p": float(f"{chi2.sf(q, len(e) - 1):.3g}")}
    info = {"method": "empirical Bayes, two variance components: sd^2 = mean over the "
                      "licensed runs of (estimate^2 - se^2) [one model's tasks] + mean over "
                      "the members matched to published per-model figures of value^2 "
                      "[models], at least the floor",
            "components": components,
            "heterogeneity": hetero,
            "floor": PRIOR_SD_FLOOR,
            "base_fingerprint": base_pop.fingerprint,
            "runs": {g: {"estimate": {k: round(f.estimate[k], DECIMALS) for k in EFFECTS},
                         "se": {k: round(f.se[k], DECIMALS) for k in EFFECTS},
                         "choices": f.n_choices} for g, f in per.items()},
            "matched": {g: {k: round(v, DECIMALS) for k, v in m.items()}
                        for g, m in (matched or {}).items()}}
    return Prior(sd, base_pop.name, info)
