"""Simulated populations as named, versioned data: ``data/populations/<name>.json``.

A population is what the simulated backend (:mod:`pear.sim.backend`) draws its agents
from: the parameters of :class:`SimParams` (initial answers, confidence, critique acceptance)
and, optionally, a :class:`RevisionModel` (what an agent answers in a debate round given its
own previous answer and the answers it heard) fitted to real debates.  Three are shipped:

* ``study``: today's population, every parameter fitted to the study's printed baselines
  (``benchmarks/calibrate_simulation.py``) and revision by persuasion (no revision model);
  its parameters are :class:`SimParams`' defaults.
* ``grounded``: the same initial answers, confidence and acceptance, revision by the
  :class:`RevisionModel` fitted by maximum likelihood to real debates, and ``wrong_focus``
  set from the share of erring agents that give the same wrong answer in those debates
  (:mod:`pear.sim.revision` writes it and checks it).
* ``grounded-math``: ``grounded`` as it was fitted on DyLAN's MATH debates alone, without the
  answer-space terms (a comparison).

A population file holds ``name``, ``version``, ``params`` (every :class:`SimParams` field),
``revision`` (``null`` or ``{"features", "coef", "se"}``), ``fingerprint`` (sha256 of the
parameters that define the agents' behaviour: :func:`fingerprint`), ``sources`` (which
parameter came from which data), ``fitted_on`` (files with their sha256), ``code`` (the module
and version that wrote it) and ``diagnostics``.  Loading checks the fingerprint, so a hand-edited
file is caught.  This module needs numpy and the standard library only.

>>> p = load("study")
>>> p.name, p.revision is None, p.params == SimParams()
('study', True, True)
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import numpy as np

from pear.core.hashing import content_digest
from pear.paths import DATA_DIR, write_json

__all__ = ["SimParams", "DATASET_EASE", "RevisionModel", "Population", "POPULATIONS_DIR",
           "SHIPPED", "DEFAULT", "BUILD_DEFAULT", "FEW_OPTIONS", "load", "fingerprint",
           "expected_accuracy", "round0_moments", "same_wrong_share", "wrong_focus_for", "wrong_answers_for",
           "skill_of", "identity"]

POPULATIONS_DIR = DATA_DIR / "populations"
"""Where the shipped population files are (``<name>.json``)."""
SHIPPED = ("study", "grounded", "grounded-math")
"""The shipped populations."""
DEFAULT = "study"
"""The population of a :class:`~pear.sim.backend.SimulatedBackend` built without one
(tests, calibration, the golden records)."""
BUILD_DEFAULT = "grounded"
"""The population of simulated runs and builds (``pear run --backend simulated``, ``make
paper BACKEND=simulated``) unless ``--population`` names another."""
VERSION = 1
"""The population file format's version."""

FEW_OPTIONS = 4
"""The most labelled options of a question whose erring agents ``wrong_focus_options`` (measured
on DyLAN's four-option MMLU debates) describes; on more, :attr:`SimParams.wrong_focus_many`."""

DATASET_EASE = {"gsm8k": "ease_gsm8k", "math500": "ease_math500",
                "truthfulqa": "ease_truthfulqa", "mmlu_pro": "ease_mmlu_pro"}
"""The :class:`SimParams` field holding each study dataset's ease (others: ``ease_other``)."""


@dataclass(frozen=True)
class SimParams:
    """Parameters of the simulated population (see the module docstring for the model).

    Defaults: "fitted" = fitted to the study's baselines by ``benchmarks/
    calibrate_simulation.py``; "our choice" = fixed, not identified by those targets.
    """

    # initial answers --------------------------------------------------------------
    ease_gsm8k: float = 3.16  # fitted
    """Mean solve logit of a GSM8K question (higher = easier)."""
    ease_math500: float = -2.187  # fitted
    """Mean solve logit of a MATH-500 question."""
    ease_truthfulqa: float = 2.35  # fitted
    """Mean solve logit of a TruthfulQA question."""
    ease_mmlu_pro: float = -0.696  # fitted
    """Mean solve logit of an MMLU-Pro question."""
    ease_other: float = 0.0  # our choice
    """Mean solve logit of any other dataset (tests, custom tasks)."""
    skill_mean: float = 0.0  # our choice
    """Offset added to every solve logit (0 = as calibrated; < 0 a weaker population)."""
    difficulty_sd: float = 3.661  # fitted
    """Spread of question difficulty shared by the question's agents (larger = errors more
    correlated across agents, so voting gains less)."""
    skill_sd: float = 0.712  # fitted
    """Spread of per-(question, agent) skill (agent heterogeneity; exchangeable)."""
    wrong_focus: float = 0.72  # fitted
    """Probability that a wrong solve gives the question's attractive wrong answer (larger =
    wrong agents agree more)."""
    wrong_focus_options: float | None = None  # our choice (None); grounded: measured
    """``wrong_focus`` on a question with labelled options (multiple choice; None: the same
    ``wrong_focus``): erring agents facing three wrong letters agree far more than ones facing
    a free answer (DyLAN's gpt-3.5 agents: 0.77 of erring pairs on MMLU, 0.12 on MATH)."""
    wrong_focus_many: float | None = None  # our choice (None); grounded: published figures
    """``wrong_focus`` on a question with more labelled options than :data:`FEW_OPTIONS`
    (MMLU-Pro's ten; None: ``wrong_focus_options``).  ``wrong_focus_options`` is measured on
    four options; how often erring agents share a wrong letter among nine is not in those
    debates.  ``grounded``'s is pinned by DebateLedger's MMLU-Pro collapse and recovery of 11
    models (:mod:`pear.populations.published_collapse`)."""
    revise_focus: float = 0.0  # our choice
    """``wrong_focus`` of a re-solve during the debate (0: revisions scatter over the wrong
    answers instead of returning to the attractive one)."""
    n_wrong: int = 8  # our choice
    """Plausible wrong answers per question (fewer where a question has fewer options)."""
    unread_wrong: float | None = None  # our choice (None: 0); a twin: measured
    """Share of wrong initial answers that no grader reads (a letter the question does not
    offer, no answer at all): recorded as an answer of ``""`` (a parse failure), which no vote
    counts.  DyLAN's gpt-3.5 MMLU teams give 0.15-0.28 of their wrong round-0 answers so (an
    "I" or an "E" on four options), its MATH debates 0.003."""
    # confidence -------------------------------------------------------------------
    conf_base: float = 3.005  # fitted
    """Mean confidence (1..5 scale) of a wrong answer."""
    conf_gap: float = 0.8  # our choice
    """Extra mean confidence of a right answer (> 0: confidence is informative)."""
    conf_sd: float = 1.0  # our choice
    """Noise of confidence (on the 1..5 scale, before rounding)."""
    # persuasion -------------------------------------------------------------------
    accept_agree: float = 2.807  # fitted
    """Logit of accepting a critique that agrees with the target's answer."""
    accept_bias: float = -3.72  # fitted
    """Logit of accepting a differing critique at confidences 3/3, both sides wrong."""
    accept_src: float = 0.3  # our choice
    """Per confidence point of the source above 3 (>= 0: confident critics persuade more)."""
    accept_tgt: float = 0.3  # our choice
    """Per confidence point of the target above 3 (>= 0: confident targets resist more)."""
    accept_right: float = 1.866  # fitted
    """Added when the critique points to the right answer (>= 0)."""
    accept_hold: float = 1.657  # fitted
    """Subtracted when the target is right (>= 0: agents mostly keep a right answer)."""
    recheck: float = 0.358  # fitted
    """Probability that an agent that adopts no critique re-solves the question."""
    # plumbing ---------------------------------------------------------------------
    malformed_rate: float = 0.0
    """Share of completions truncated or replaced by junk (tests of the parser)."""
    latency_s: float = 0.0
    """Sleep per generate call per request (to emulate a slow backend in tests)."""

    def __post_init__(self) -> None:
        checks = [("difficulty_sd", self.difficulty_sd >= 0, ">= 0"),
                  ("skill_sd", self.skill_sd >= 0, ">= 0"),
                  ("wrong_focus", 0 <= self.wrong_focus <= 1, "in [0, 1]"),
                  ("wrong_focus_options", self.wrong_focus_options is None
                   or 0 <= self.wrong_focus_options <= 1, "None or in [0, 1]"),
                  ("wrong_focus_many", self.wrong_focus_many is None
                   or 0 <= self.wrong_focus_many <= 1, "None or in [0, 1]"),
                  ("revise_focus", 0 <= self.revise_focus <= 1, "in [0, 1]"),
                  ("unread_wrong", self.unread_wrong is None or 0 <= self.unread_wrong < 1,
                   "None or in [0, 1)"),
                  ("n_wrong", isinstance(self.n_wrong, int) and self.n_wrong >= 1,
                   "an integer >= 1"),
                  ("conf_gap", self.conf_gap >= 0, ">= 0"),
                  ("conf_sd", self.conf_sd >= 0, ">= 0"),
                  ("accept_src", self.accept_src >= 0, ">= 0"),
                  ("accept_tgt", self.accept_tgt >= 0, ">= 0"),
                  ("accept_right", self.accept_right >= 0, ">= 0"),
                  ("accept_hold", self.accept_hold >= 0, ">= 0"),
                  ("recheck", 0 <= self.recheck <= 1, "in [0, 1]"),
                  ("malformed_rate", 0 <= self.malformed_rate <= 1, "in [0, 1]"),
                  ("latency_s", self.latency_s >= 0, ">= 0")]
        for name, ok, need in checks:
            if not ok:
                raise ValueError(f"invalid SimParams.{name}={getattr(self, name)!r}: "
                                 f"must be {need}")
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"invalid SimParams.{f.name}={v!r}: must be finite")

    def ease(self, dataset: str) -> float:
        """The mean solve logit of ``dataset``'s questions (``skill_mean`` included)."""
        return getattr(self, DATASET_EASE.get(dataset, "ease_other")) + self.skill_mean


_HERMITE = np.polynomial.hermite_e.hermegauss(40)
"""Gauss-Hermite nodes and weights (40) for means over a standard normal."""


def expected_accuracy(params: SimParams, dataset: str) -> float:
    """The population's expected round-0 accuracy of an agent on ``dataset``: the mean of
    ``sigmoid(ease + skill_sd * u - difficulty_sd * z)`` over ``u, z ~ N(0, 1)``, one
    quadrature over ``skill_sd * u - difficulty_sd * z ~ N(0, hypot(skill_sd, difficulty_sd))``
    (what the simulated agents' revision model reads; :func:`round0_moments` integrates ``u``
    and ``z`` apart, as the pair probability needs).

    >>> round(expected_accuracy(SimParams(), "other"), 3)
    0.5
    """
    x, w = _HERMITE
    s = math.hypot(params.skill_sd, params.difficulty_sd)
    return float(np.sum(w / (1.0 + np.exp(-(params.ease(dataset) + s * x)))) / w.sum())


def round0_moments(params: SimParams, dataset: str) -> tuple[float, float]:
    """The expected round-0 accuracy of an agent on ``dataset`` and the probability that two
    agents of one debate are both right (they share the question's difficulty): quadrature
    over the difficulty and over each agent's skill (what a twin's initial answers are fitted
    with: :func:`pear.populations.twin.ease_for`; its accuracy is :func:`expected_accuracy`'s
    within the quadrature's error, about 1e-4 at most).

    >>> [round(m, 3) for m in round0_moments(SimParams(), "other")]
    [0.5, 0.395]
    """
    x, w = _HERMITE
    w = w / w.sum()
    logits = (params.ease(dataset) - params.difficulty_sd * x[:, None]
              + params.skill_sd * x[None, :])
    p = (1.0 / (1.0 + np.exp(-logits))) @ w  # per difficulty node
    return float(p @ w), float((p ** 2) @ w)


def same_wrong_share(focus: float, n_wrong: int) -> float:
    """The probability that two erring agents of :class:`SimParams` give the same wrong
    answer: ``focus**2 + (1 - focus)**2 / (n_wrong - 1)`` (1 when there is one wrong answer).

    >>> round(same_wrong_share(0.72, 8), 4)
    0.5296
    """
    if n_wrong <= 1:
        return 1.0
    return focus ** 2 + (1 - focus) ** 2 / (n_wrong - 1)


def wrong_focus_for(share: float, n_wrong: int) -> float:
    """The ``wrong_focus`` whose :func:`same_wrong_share` is ``share``: the root in
    ``[1 / n_wrong, 1]`` (``1 / n_wrong``, every wrong answer alike, when ``share`` is at most
    ``1 / n_wrong``: fewer agreements need more wrong answers, :func:`wrong_answers_for`).

    >>> round(wrong_focus_for(same_wrong_share(0.6, 8), 8), 6)
    0.6
    """
    if not 0 <= share <= 1:
        raise ValueError(f"invalid share={share!r}: must be in [0, 1]")
    k = n_wrong - 1
    if k <= 0:
        return 1.0
    # (1 + 1/k) f^2 - (2/k) f + 1/k - share = 0
    a, b, c = 1 + 1 / k, -2 / k, 1 / k - share
    disc = b * b - 4 * a * c
    if disc < 0:
        return 1.0 / n_wrong
    return float(min(1.0, max(1.0 / n_wrong, (-b + math.sqrt(disc)) / (2 * a))))


def wrong_answers_for(share: float, n_wrong: int = 8) -> tuple[float, int]:
    """``(wrong_focus, n_wrong)`` whose :func:`same_wrong_share` is ``share``: ``n_wrong`` kept
    unless ``share`` is below ``1 / n_wrong`` (then the fewest wrong answers that allow it).

    >>> focus, n = wrong_answers_for(0.1)
    >>> round(focus, 6), n
    (0.1, 10)
    """
    if not 0 < share <= 1:
        raise ValueError(f"invalid share={share!r}: must be in (0, 1]")
    n = max(n_wrong, math.ceil(1 / share - 1e-9))
    return wrong_focus_for(share, n), n


def _logit(p: float) -> float:
    p = min(max(float(p), 0.01), 0.99)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class RevisionModel:
    """What an agent answers in a debate round: a conditional logit over its candidate answers.

    The candidates of agent i in round r: its own previous answer (when it had one), each
    distinct answer it heard (in PEAR's protocol the answers of the sources of the critiques it
    received; in an imported debate the agents it heard), the right answer when neither i nor
    anyone it heard holds it ("another answer, right") and one wrong answer nobody holds
    ("another answer, wrong").  Candidate j gets the utility ``coef . x_j`` with the features
    :attr:`FEATURES` of :meth:`design`; i answers j with probability ``softmax(utility)_j``.

    The features are what a real agent sees, in units that carry over to other models,
    datasets and debate sizes: the *share* of the answers it heard that are j (not a count),
    whether j is right, interacted with the population's skill (the logit of its round-0 agent
    accuracy on the question set, centred at 0 = 50%: a stronger population recognises the
    right answer more), and the round.

    >>> m = RevisionModel((2.0, 3.0, 1.0, 0.5, -2.0, 0.3, 1.5, -3.0, 0.0, 0.0, -1.0))
    >>> X = m.design(own="4", heard=["5", "5"], gold="5", round=1, skill=0.0)[1]
    >>> [list(map(int, row[:11])) for row in X]  # own 4, heard 5 (right), another wrong
    [[1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]]
    >>> [round(float(p), 3) for p in m.probabilities(X)]
    [0.119, 0.879, 0.002]
    """

    coef: tuple[float, ...]
    """One coefficient per feature, in :attr:`FEATURES` order."""
    critique_weight: float = 1.0
    """PEAR's protocol stated as an assumption (no real log has critiques): how a received
    critique maps to "heard" in a simulated debate.  Its source's answer counts in ``share``
    (and in ``share_x_single``, ``share_x_options``, which are ``share`` in a situation) with
    this weight: 1 = like a peer's answer quoted in full, as DyLAN's agents hear them (the
    fitted coefficients' own setting); 0.5 = discounted, a critique moving an agent half as
    much as hearing that answer from a peer.  Not fitted; one of the ensemble's dimensions
    (:mod:`pear.populations.corpus_fit`)."""
    features: tuple[str, ...] = ()
    """The features the model uses, in :attr:`COLUMNS` order (empty: :attr:`FEATURES`, the
    revision model of ``grounded-math``; ``grounded`` uses every column); ``coef`` has one
    value per feature."""
    FEATURES: ClassVar[tuple[str, ...]] = ("own", "share", "right", "right_x_skill", "new",
                                           "own_x_round", "own_x_right", "new_x_right",
                                           "own_x_skill", "new_x_skill", "share_x_single")
    """``own``: j is the agent's previous answer; ``share``: the share of the answers it heard
    that are j (0..1); ``right``: j is right (from the gold); ``right_x_skill``: ``right`` times
    the population's skill (logit of its round-0 agent accuracy on the question set);
    ``new``: j is another answer (neither its own nor heard); ``own_x_round``: ``own`` times
    ``round - 1`` (agents may hold on more in later rounds); ``own_x_right``: j is its own
    answer and right (an agent recognises its own right answer apart from a heard one: without
    it one ``right`` term serves own, heard and new answers, and the fit matches only the total
    of right picks); ``new_x_right``: j is another answer and right (finding a right answer
    nobody holds is harder than recognising a right answer one hears or holds: with one
    ``right`` term for all three, a wrong agent among wrong peers found the right answer three
    times as often in the model as in DyLAN's debates, and one hearing it adopted it too
    rarely); ``own_x_skill``, ``new_x_skill``: ``own`` and ``new`` times the skill (how
    the tendency to keep one's answer and to produce another one varies with the model's
    strength and the question set's difficulty); ``share_x_single``: ``share`` when the agent
    heard a single answer (one answer heard alone moves an agent less than the same share of
    several: in DyLAN's debates an erring agent hearing one other answer adopted it 0.69 of the
    time, where one ``share`` term fitted to all heard sets predicted 0.82)."""
    OPTION_FEATURES: ClassVar[tuple[str, ...]] = ("own_x_options", "share_x_options",
                                                  "new_x_options", "right_x_options",
                                                  "own_x_round_x_options",
                                                  "new_x_right_x_options")
    """The answer space: ``own``, ``share``, ``new`` and ``right`` when the question offers a
    few labelled options (multiple choice, graded by letter) rather than a free answer (a
    number, an expression).  With four options another answer is one of three letters, where
    a free answer has countless others: without these terms a fit on MATH and MMLU debates
    together makes the main terms a compromise between the two spaces (``new`` 2.42 -> 0.80,
    ``share`` 5.42 -> 3.54) and the strength dependence cannot be read across them."""
    HEARD_FEATURES: ClassVar[tuple[str, ...]] = ("own_x_alone", "own_x_agree")
    """``own`` when the agent heard no answer, and when every answer it heard was its own (a
    unanimous debate): the two ends of ``share`` that its straight line misses (DyLAN's MMLU
    agents: erring ones that heard nothing kept their letter 0.52 of the time, where the line
    predicted 0.65; right ones that heard only agreement left it 0.10 of the time, against 0.05
    predicted)."""
    ORDER_FEATURES: ClassVar[tuple[str, ...]] = ("fresh", "fresh_x_single")
    """``fresh``: the share of the answers the agent heard that are j and were given in this
    round, by agents that revised before it (a protocol whose agents answer in turn, DyLAN's:
    an answer revised in sight of the others draws more than one still from the round
    before; in a protocol whose agents answer at once, PEAR's, it is 0); ``fresh_x_single``:
    ``fresh`` when the agent heard a single answer (DyLAN's last round, after the ranker kept
    two agents: the second hears the first's new answer alone, and follows it far less than an
    agent hearing it among three: 0.58 of 406 choice sets)."""
    AGREE_FEATURES: ClassVar[tuple[str, ...]] = ("new_x_right_x_agree",)
    """``new_x_right_x_agree``: j is another answer and right, and the agent heard several
    answers (two or more), every one its own: an agent that several peers agree with does not
    come on the right answer alone as often as the other terms say (DyLAN's wrong agents in
    that situation, 363 choice sets: 5 produced the right answer, where the model without the
    term predicted 15; fitted -1.17, SE 0.45 clustered, log-likelihood +4.7; one agreeing peer
    heard alone, 1,222 choice sets, needs no such term: -0.14, SE 0.13, fitted on every
    agreement).  A behaviour of the agents, not the stop rule's: it applies in every
    protocol."""
    COLUMNS: ClassVar[tuple[str, ...]] = (FEATURES + OPTION_FEATURES + HEARD_FEATURES
                                          + ORDER_FEATURES + AGREE_FEATURES)
    """The columns of :meth:`design`'s feature rows: every feature a model may use (a model
    uses :attr:`features`, :attr:`FEATURES` by default; the others count 0)."""
    NEW_RIGHT: ClassVar[str] = "\x00another right answer"
    NEW_WRONG: ClassVar[str] = "\x00another wrong answer"
    """The candidate names of "another answer" (never an answer's text)."""

    def __post_init__(self) -> None:
        feats = tuple(self.features) or self.FEATURES
        unknown = [f for f in feats if f not in self.COLUMNS]
        if unknown or list(feats) != sorted(set(feats), key=self.COLUMNS.index):
            raise ValueError(f"invalid RevisionModel features {list(feats)!r}: each once, of "
                             f"{', '.join(self.COLUMNS)}, in that order")
        object.__setattr__(self, "features", feats)
        if len(self.coef) != len(feats):
            raise ValueError(f"invalid RevisionModel coef: {len(self.coef)} values for the "
                             f"{len(feats)} features {', '.join(feats)}")
        if not all(math.isfinite(c) for c in self.coef):
            raise ValueError(f"invalid RevisionModel coef {self.coef!r}: must be finite")
        if not (isinstance(self.critique_weight, (int, float)) and 0 <= self.critique_weight <= 1):
            raise ValueError(f"invalid RevisionModel critique_weight={self.critique_weight!r}: "
                             "must be in [0, 1]")
        object.__setattr__(self, "coef", tuple(float(c) for c in self.coef))
        object.__setattr__(self, "critique_weight", float(self.critique_weight))

    @classmethod
    def design(cls, own: str | None, heard: Sequence[str], gold: str | None, round: int,
               skill: float, same: Any = None, options: bool = False,
               fresh: Sequence[bool] = ()) -> tuple[list[str], np.ndarray]:
        """The candidates (answers, or :attr:`NEW_RIGHT` / :attr:`NEW_WRONG`) of an agent whose
        previous answer is ``own`` (None or "": it had none) and which heard ``heard`` (one
        answer per peer heard with an answer), and their features (one row each,
        :attr:`COLUMNS`).  ``gold``: the right answer (None: no candidate is right);
        ``same(a, b)``: whether two answers are one (default ``==``); ``options``: the
        question offers labelled options (multiple choice).  The one definition of
        the features, used by the fit and by the simulation alike: :meth:`candidates`, then
        :meth:`feature_rows` of their :meth:`structure`."""
        names, counts, right, recent = cls.candidates(own, heard, gold, same, fresh)
        return names, cls.feature_rows(cls.structure(names, counts, right, own, heard, recent),
                                       round, skill, options)

    @classmethod
    def candidates(cls, own: str | None, heard: Sequence[str], gold: str | None,
                   same: Any = None, fresh: Sequence[bool] = ()
                   ) -> tuple[list[str], list[int], list[bool], list[int]]:
        """The candidates of :meth:`design`, with how many of the answers heard are each
        (own answer not counted), whether each is right and how many of the answers heard
        are each and ``fresh`` (one flag per answer heard: given in this round)."""
        eq = same or (lambda a, b: a == b)
        names: list[str] = []
        counts: list[int] = []
        recent: list[int] = []
        said = [(h, bool(f)) for h, f in zip(heard, list(fresh) + [False] * len(heard)) if h]
        for a, f in ([(own, False)] if own else []) + said:
            if same is None:  # plain equality: a list lookup finds the same first match
                k = names.index(a) if a in names else None
            else:
                k = next((i for i, n in enumerate(names) if eq(n, a)), None)
            if k is None:
                names.append(a)
                counts.append(0)
                recent.append(0)
                k = len(names) - 1
            counts[k] += 1
            recent[k] += f
        if own:
            counts[0] -= 1  # own answer is not heard
        right = [gold is not None and eq(n, gold) for n in names]
        if gold is not None and not any(right):
            names.append(cls.NEW_RIGHT)
            counts.append(0)
            recent.append(0)
            right.append(True)
        names.append(cls.NEW_WRONG)
        counts.append(0)
        recent.append(0)
        right.append(False)
        return names, counts, right, recent

    @classmethod
    def structure(cls, names: Sequence[str], counts: Sequence[int], right: Sequence[bool],
                  own: str | None, heard: Sequence[str], fresh: Sequence[int] = ()
                  ) -> tuple[Any, ...]:
        """What the features of :meth:`candidates` depend on besides the round and skill
        (hashable: a simulation caches choice probabilities on it); ``fresh``: per candidate,
        how many of the answers heard are it and were given in this round."""
        return (bool(own), tuple(counts), tuple(right),
                tuple(n in (cls.NEW_RIGHT, cls.NEW_WRONG) for n in names),
                sum(1 for h in heard if h), tuple(fresh) or (0,) * len(names))

    @classmethod
    def feature_rows(cls, structure: tuple[Any, ...], round: int, skill: float,
                     options: bool = False) -> np.ndarray:
        """The feature rows (:attr:`COLUMNS`) of candidates of this :meth:`structure`
        (``options``: a multiple-choice question)."""
        has_own, counts, right, new, n_heard, fresh = structure
        X = np.zeros((len(counts), len(cls.COLUMNS)))
        o = bool(options)
        agree = bool(has_own and n_heard >= 2 and counts[0] == n_heard)  # several, all its own
        for j, (c, ok, is_new, f) in enumerate(zip(counts, right, new, fresh)):
            is_own = has_own and j == 0
            share = c / n_heard if n_heard else 0.0
            X[j] = (is_own, share, ok, ok * skill, is_new, is_own * (round - 1), is_own * ok,
                    is_new * ok, is_own * skill, is_new * skill, share * (n_heard == 1),
                    is_own * o, share * o, is_new * o, ok * o, is_own * (round - 1) * o,
                    is_new * ok * o, is_own * (n_heard == 0), is_own * (share == 1),
                    f / n_heard if n_heard else 0.0, f * (n_heard == 1),
                    is_new * ok * agree)
        return X

    @property
    def vector(self) -> np.ndarray:
        """The coefficients over :attr:`COLUMNS` (0 for a feature the model does not use)."""
        v = np.zeros(len(self.COLUMNS))
        v[[self.COLUMNS.index(f) for f in self.features]] = self.coef
        return v

    def probabilities(self, X: np.ndarray, critiques: bool = False,
                      missed_quorum: bool = True) -> np.ndarray:
        """The choice probabilities of the candidates with features ``X`` (:attr:`COLUMNS`;
        ``critiques``: the answers were heard as critiques, so ``share`` and its interactions
        count with :attr:`critique_weight`; ``missed_quorum`` False: the protocol does not
        stop on a quorum, so ``own_x_agree`` does not apply).

        ``own_x_agree`` is the stop rule's, not the agents': in the debates it was fitted on
        (DyLAN's) an agent hears only its own answer after the source's string check missed a
        quorum, on answers written apart, and such agents go on to rewrite theirs; in a
        protocol that stops on no quorum (PEAR's, Du et al.'s) unanimity is not selected so."""
        if (critiques and self.critique_weight != 1.0) or not missed_quorum:
            X = X.copy()
        if critiques and self.critique_weight != 1.0:
            X[:, [self.COLUMNS.index("share"), self.COLUMNS.index("share_x_single"),
                  self.COLUMNS.index("share_x_options")]] *= self.critique_weight
        if not missed_quorum:
            X[:, self.COLUMNS.index("own_x_agree")] = 0.0
        v = X @ self.vector
        e = np.exp(v - v.max())
        return e / e.sum()

    def as_dict(self, se: Sequence[float] | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"features": list(self.features),
                               "coef": dict(zip(self.features, self.coef)),
                               "critique_weight": self.critique_weight}
        if se is not None:
            out["se"] = dict(zip(self.features, map(float, se)))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RevisionModel":
        feats = list(d.get("features", []))
        if not feats or any(f not in cls.COLUMNS for f in feats):
            raise ValueError(f"invalid revision model: features {feats!r}, expected some of "
                             f"{list(cls.COLUMNS)!r}")
        return cls(tuple(float(d["coef"][f]) for f in feats),
                   float(d.get("critique_weight", 1.0)), tuple(feats))


def skill_of(accuracy: float) -> float:
    """The :class:`RevisionModel`'s skill: the logit of a round-0 agent accuracy (clipped to
    [0.01, 0.99]).

    >>> skill_of(0.5)
    0.0
    """
    return _logit(accuracy)


_UNSET_UNHASHED = ("wrong_focus_options", "unread_wrong", "wrong_focus_many")
"""Fields added after population files were first written: unset (None) they do not enter the
fingerprint, so the files written before them keep theirs."""


def identity(params: SimParams) -> dict[str, Any]:
    """The parameters that define the agents' behaviour: every :class:`SimParams` field but
    ``latency_s``, and the fields of :data:`_UNSET_UNHASHED` only when set (what a
    population's fingerprint and a simulated backend's model id hash)."""
    return {k: v for k, v in dataclasses.asdict(params).items() if k != "latency_s"
            and not (k in _UNSET_UNHASHED and v is None)}


def fingerprint(params: SimParams, revision: RevisionModel | None) -> str:
    """sha256 (hex) of the parameters that define the agents' behaviour: every
    :class:`SimParams` field but ``latency_s``, the revision coefficients (rounded to 9
    significant digits, so that a float's last bits do not move it) and its critique weight."""
    ident = identity(params)
    rev = None
    if revision is not None:
        rev = {f: float(f"{c:.9g}") for f, c in zip(revision.features, revision.coef)}
        rev["critique_weight"] = float(f"{revision.critique_weight:.9g}")
    blob = {"params": ident, "revision": rev}
    return content_digest(blob)


@dataclass(frozen=True)
class Population:
    """A named population: its parameters, its revision model (None: persuasion, as the study
    population) and what the file says of where they came from (``info``)."""

    name: str
    params: SimParams = field(default_factory=SimParams)
    revision: RevisionModel | None = None
    info: Mapping[str, Any] = field(default_factory=dict)
    """The file's ``sources``, ``fitted_on``, ``code``, ``diagnostics`` and the revision's
    standard errors (``revision_se``)."""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.params, self.revision)

    def with_params(self, **changes: Any) -> "Population":
        """The same population with some :class:`SimParams` fields changed (its name kept;
        its fingerprint follows the parameters)."""
        return dataclasses.replace(self, params=dataclasses.replace(self.params, **changes))

    def manifest(self) -> dict[str, Any]:
        """What a run's manifest records of its population: name and fingerprint."""
        return {"name": self.name, "fingerprint": self.fingerprint}

    def to_json(self) -> dict[str, Any]:
        """The file's content (:func:`load` reads it back)."""
        rev = None
        if self.revision is not None:
            rev = self.revision.as_dict(
                [self.info["revision_se"][f] for f in self.revision.features]
                if self.info.get("revision_se") else None)
        out = {"name": self.name, "version": VERSION, "fingerprint": self.fingerprint,
               "params": dataclasses.asdict(self.params), "revision": rev}
        out.update({k: v for k, v in self.info.items() if k != "revision_se"})
        return out

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the file (sorted keys, 2-space indent, a final newline) atomically."""
        return write_json(path, self.to_json(), newline=True)

    @classmethod
    def from_json(cls, d: Mapping[str, Any], where: str = "population") -> "Population":
        """The population of a file's content; the stored fingerprint must match."""
        if not isinstance(d, Mapping) or "params" not in d or "name" not in d:
            raise ValueError(f"{where}: not a population file (needs name, params)")
        if d.get("version") != VERSION:
            raise ValueError(f"{where}: population file version {d.get('version')!r}, this "
                             f"code reads version {VERSION}")
        known = {f.name for f in dataclasses.fields(SimParams)}
        unknown = sorted(set(d["params"]) - known)
        if unknown:
            raise ValueError(f"{where}: unknown parameters {', '.join(unknown)}")
        params = SimParams(**d["params"])
        rev = RevisionModel.from_dict(d["revision"]) if d.get("revision") else None
        info = {k: v for k, v in d.items()
                if k not in ("name", "version", "fingerprint", "params", "revision")}
        if d.get("revision") and d["revision"].get("se"):
            info["revision_se"] = dict(d["revision"]["se"])
        pop = cls(str(d["name"]), params, rev, info)
        if d.get("fingerprint") != pop.fingerprint:
            raise ValueError(f"{where}: fingerprint {d.get('fingerprint')!r} does not match "
                             f"its parameters ({pop.fingerprint}): the file was edited or is "
                             "damaged")
        return pop


def load(population: "str | os.PathLike[str] | Population | None" = None) -> Population:
    """A population by name (a shipped one, :data:`SHIPPED`), by file path (``.json``), or
    as given; None: :data:`DEFAULT`.  An unknown name is one error naming the shipped ones.
    ``study`` is :class:`SimParams`' defaults, so it needs no file outside a checkout."""
    if isinstance(population, Population):
        return population
    name = DEFAULT if population is None else os.fspath(population)
    if name == "study" and not (POPULATIONS_DIR / "study.json").is_file():
        return Population("study")  # outside a checkout (a wheel): the defaults are study's
    if name.endswith(".json") or os.sep in name:
        path = Path(name)
        if not path.is_file():
            raise ValueError(f"invalid population {name!r}: no such file")
    else:
        path = POPULATIONS_DIR / f"{name}.json"
        if not path.is_file():
            there = sorted(p.stem for p in POPULATIONS_DIR.glob("*.json")) or list(SHIPPED)
            raise ValueError(f"unknown population {name!r}: choose one of {', '.join(there)} "
                             "or a population file (.json)")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"invalid population file {str(path)!r}: {err}") from None
    return Population.from_json(data, where=str(path))
