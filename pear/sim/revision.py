"""The revision model fitted to real debates: what an agent answers in round r given its own
previous answer and the answers it heard (:class:`pear.sim.population.RevisionModel`, the
one definition of the candidates and their features), by maximum likelihood.

* :func:`transitions` turns debate records (ours or imported: :mod:`pear.store.importing`) into
  choice sets: one per agent and debate round whose answer was read, with its candidates' features
  and the candidate it chose.  Answers are one candidate when the records put them in one class
  in a round or read them as the same answer in any two rounds; every answer graded right is the
  right candidate.  "Heard" = the answers the agent's prompt quoted, where an import read them
  (the record's ``heard`` entries: DyLAN quotes the agents a ranker dropped too), else the
  sources of the critiques the agent received (PEAR's protocol) or, in a round without
  critiques, the sources of the edges into it.
* :func:`fit`: the conditional logit's maximum-likelihood coefficients with standard errors
  (``scipy.optimize.minimize``, trust-region with the exact gradient and Hessian; standard errors
  from the inverse of the observed information, and clustered by debate: a sandwich estimator
  with the scores summed per debate).
* :func:`bootstrap`: K refits on debates resampled with replacement (seeded), the sampling
  distribution of the coefficients (the ensemble of populations draws from it).
* :func:`same_wrong_answer`: the share of pairs of erring agents of a debate's round 0 that give
  the same wrong answer (``wrong_focus`` of a grounded population is set from it).

The skill a choice set is fitted with is the logit of the round-0 agent accuracy of its *question
set* (:func:`question_set`: the dataset, and the subject where the records give one; per model),
so that the ``right_x_skill`` term says how recognising the right answer varies with skill across
question sets, which is what carries the model over to other models and datasets.
"""
from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from pear.sim.population import RevisionModel, skill_of

__all__ = ["Transitions", "RevisionFit", "question_set", "subject", "transitions",
           "round0_accuracy", "concat", "fit", "bootstrap", "same_wrong_answer", "choice_table",
           "predictive_table"]

_GOLD = "\x00gold"  # the right answer when no answer of the debate was graded right


def question_set(record: Mapping[str, Any]) -> str:
    """The question set a debate belongs to: model, dataset and, for imported debates that give
    one (DyLAN), the subject.

    >>> question_set({"model": "m", "dataset": "math", "imported": {"extra": {"subject": "Algebra"}}})
    'm/math/Algebra'
    """
    topic = subject(record)
    return "/".join([str(record.get("model", "")), str(record["dataset"])]
                    + ([topic] if topic else []))


def subject(record: Mapping[str, Any]) -> str | None:
    """The subject an imported debate gives (DyLAN's MATH subjects: ``imported.extra.subject``),
    else None.

    >>> subject({"imported": {"extra": {"subject": "Geometry"}}}), subject({"dataset": "gsm8k"})
    ('Geometry', None)
    """
    extra = (record.get("imported") or {}).get("extra") or {}
    return str(extra["subject"]) if extra.get("subject") else None


@dataclass
class Transitions:
    """Choice sets in long form: row i is one candidate of choice set ``group[i]`` (groups are
    contiguous), with features ``X[i]`` and ``chosen[i]``; per choice set its debate
    (``debate``, an index into ``debates``) and its question set (``qset``)."""

    X: np.ndarray
    chosen: np.ndarray
    group: np.ndarray
    debate: np.ndarray
    qset: list[str]
    debates: list[str]
    skill: dict[str, float] = field(default_factory=dict)
    """Question set -> the skill its choice sets were built with (logit of round-0 accuracy)."""
    accuracy: dict[str, float] = field(default_factory=dict)
    """Question set -> its round-0 agent accuracy (mean over debates of the agents' mean)."""
    dropped: int = 0
    """Agent rounds left out: the answer could not be read."""

    @property
    def n_choices(self) -> int:
        return len(self.debate)

    @property
    def starts(self) -> np.ndarray:
        """Index of each choice set's first row."""
        return np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])


class _Classes:
    """Union-find over one debate's (round, agent) answers."""

    def __init__(self) -> None:
        self.parent: dict[Any, Any] = {}

    def find(self, x: Any) -> Any:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


def _answer_classes(rounds: Sequence[Mapping[str, Any]]) -> dict[tuple[Any, ...], str]:
    """(round, agent) -> the debate-wide class of its answer ("" none; every answer graded right
    is :data:`_GOLD`), and ("heard", round, agent, k) -> the class of the k-th answer the agent's
    prompt quoted in that round (an import's ``heard`` entries: one class with an answer of
    that round or the one before when they read the same, right when graded right)."""
    uf = _Classes()
    nodes = {}
    for r, rd in enumerate(rounds):
        for a in rd["agents"]:
            cls = a.get("canonical") or ""
            if not cls:
                continue
            node = (r, int(a["agent"]))
            nodes[node] = a
            uf.union(node, ("class", r, cls))  # one class within a round
            if a.get("answer"):
                uf.union(node, ("answer", a["answer"]))  # the same reading in any round
            if a.get("correct"):
                uf.union(node, ("gold",))
    for r, rd in enumerate(rounds):
        for a in rd["agents"]:
            for k, h in enumerate(a.get("heard") or ()):
                cls = h.get("canonical") or ""
                if not cls:
                    continue
                node = ("heard", r, int(a["agent"]), k)
                nodes[node] = h
                uf.union(node, ("quoted", cls))  # one class however often it is quoted
                for back in (r - 1, r):
                    if ("class", back, cls) in uf.parent:
                        uf.union(node, ("class", back, cls))
                if h.get("correct"):
                    uf.union(node, ("gold",))
    out = {}
    for node in nodes:
        root = uf.find(node)
        out[node] = _GOLD if root == uf.find(("gold",)) else f"{root}"
    return out


def _heard(rd: Mapping[str, Any], agent: int) -> list[int]:
    """The agents whose answers ``agent`` heard in round ``rd``."""
    crits = rd.get("critiques") or []
    if crits:
        return [int(c["source"]) for c in crits
                if int(c["target"]) == agent and c.get("delivered", True)]
    return [int(s) for s, t in rd.get("edges") or [] if int(t) == agent]


def _fresh(rd: Mapping[str, Any], agent: int, n: int) -> list[bool]:
    """Which of the ``n`` answers ``agent``'s prompt quoted in round ``rd`` (an import's
    ``heard``, in prompt order: the other agents in index order, those of this round's record
    when it quotes one answer fewer than the record holds, else all of them) were given in
    this round, by agents that answered before it (a protocol whose agents answer in turn)."""
    here = sorted(int(a["agent"]) for a in rd["agents"])
    others = [j for j in (here if n == len(here) - 1 else range(n + 1)) if j != agent]
    if len(others) != n:
        return [False] * n
    return [j < agent and j in here for j in others]


def transitions(records: Iterable[Mapping[str, Any]],
                accuracy: Mapping[str, float] | None = None,
                sequential: bool = False, options: bool = False) -> Transitions:
    """The choice sets of every debate round of ``records`` (see the module docstring);
    ``accuracy``: the round-0 agent accuracy per :func:`question_set` (default: measured on
    ``records``; give it to build the choice sets of a resample or a subset with the skills of
    the whole).  ``sequential``: the agents of a round answer in turn (agent 0 first), each
    hearing the latest answers, so an agent hears the agents before it in this round's answer
    (DyLAN's protocol, ``imported.protocol.order`` in an import's manifest); otherwise every
    agent hears the previous round's answers.  ``options``: the questions offer labelled options
    (graded by letter: the ``*_x_options`` features)."""
    recs = list(records)
    if accuracy is None:
        accuracy = round0_accuracy(recs)
    skills = {k: skill_of(v) for k, v in accuracy.items()}
    rows: list[np.ndarray] = []
    chosen: list[np.ndarray] = []
    debate_of: list[int] = []
    qsets: list[str] = []
    debates: list[str] = []
    dropped = 0
    for rec in recs:
        rounds = rec["rounds_data"]
        if len(rounds) < 2:
            continue
        qs = question_set(rec)
        if qs not in skills:
            raise ValueError(f"no round-0 accuracy for question set {qs!r}")
        classes = _answer_classes(rounds)
        d = len(debates)
        debates.append(str(rec["debate_id"]))
        for r in range(1, len(rounds)):
            for a in rounds[r]["agents"]:
                i = int(a["agent"])
                pick = classes.get((r, i))
                if not pick:
                    dropped += 1
                    continue
                if a.get("heard"):  # the answers its prompt quoted (an import read them)
                    heard = [classes.get(("heard", r, i, k), "") for k in range(len(a["heard"]))]
                    fresh = _fresh(rounds[r], i, len(heard)) if sequential else []
                else:
                    sources = _heard(rounds[r], i)
                    fresh = [sequential and s < i for s in sources]
                    heard = [classes.get((r if f else r - 1, s), "")
                             for s, f in zip(sources, fresh)]
                names, X = RevisionModel.design(classes.get((r - 1, i)) or None, heard, _GOLD,
                                                r, skills[qs], options=options, fresh=fresh)
                if pick in names:
                    j = names.index(pick)
                else:
                    j = names.index(RevisionModel.NEW_RIGHT if pick == _GOLD
                                    else RevisionModel.NEW_WRONG)
                y = np.zeros(len(names), dtype=bool)
                y[j] = True
                rows.append(X)
                chosen.append(y)
                debate_of.append(d)
                qsets.append(qs)
    if not rows:
        raise ValueError("no debate round with a readable answer to fit the revision model on")
    sizes = [len(x) for x in rows]
    return Transitions(np.vstack(rows), np.concatenate(chosen),
                       np.repeat(np.arange(len(rows)), sizes), np.asarray(debate_of), qsets,
                       debates, skills, dict(accuracy), dropped)


def round0_accuracy(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Per :func:`question_set`: the round-0 agent accuracy (the mean over debates of their
    agents' mean)."""
    per: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        ags = rec["rounds_data"][0]["agents"]
        if ags:
            per[question_set(rec)].append(float(np.mean([bool(a["correct"]) for a in ags])))
    return {k: float(np.mean(v)) for k, v in per.items()}


def concat(parts: Sequence[Transitions]) -> Transitions:
    """The choice sets of several :class:`Transitions` as one (debates kept apart)."""
    groups, debates, offset_g, offset_d = [], [], 0, 0
    for t in parts:
        groups.append(t.group + offset_g)
        debates.append(t.debate + offset_d)
        offset_g += t.n_choices
        offset_d += len(t.debates)
    return Transitions(np.vstack([t.X for t in parts]),
                       np.concatenate([t.chosen for t in parts]), np.concatenate(groups),
                       np.concatenate(debates), [q for t in parts for q in t.qset],
                       [d for t in parts for d in t.debates],
                       {k: v for t in parts for k, v in t.skill.items()},
                       {k: v for t in parts for k, v in t.accuracy.items()},
                       sum(t.dropped for t in parts))


# ----------------------------------------------------------------- the likelihood

def _loglik(beta: np.ndarray, tr: Transitions, w: np.ndarray, starts: np.ndarray,
            need: int = 2) -> tuple[float, np.ndarray, np.ndarray | None]:
    """The weighted log-likelihood (``w`` per choice set), its gradient and (``need`` 2) its
    Hessian."""
    v = tr.X @ beta
    vmax = np.maximum.reduceat(v, starts)
    e = np.exp(v - vmax[tr.group])
    denom = np.add.reduceat(e, starts)
    p = e / denom[tr.group]
    ll = float(w @ (v[tr.chosen] - vmax - np.log(denom)))
    xbar = np.add.reduceat(p[:, None] * tr.X, starts)
    grad = (w[:, None] * (tr.X[tr.chosen] - xbar)).sum(0)
    if need < 2:
        return ll, grad, None
    dx = tr.X - xbar[tr.group]
    hess = -(dx * (w[tr.group] * p)[:, None]).T @ dx
    return ll, grad, hess


@dataclass(frozen=True)
class RevisionFit:
    """The outcome of :func:`fit`."""

    model: RevisionModel
    se: tuple[float, ...]
    """Standard errors (inverse observed information), in ``model.features`` order."""
    loglik: float
    null_loglik: float
    """The log-likelihood of equal probabilities over each choice set's candidates."""
    n_choices: int
    n_debates: int
    converged: bool
    """The optimiser converged to finite coefficients (|coef| < 30) with finite standard errors
    (False: the data do not identify the model, e.g. a run too small or separated)."""
    iterations: int
    seconds: float
    se_cluster: tuple[float, ...] = ()
    """Standard errors robust to dependence within a debate (sandwich estimator with the
    scores summed per debate): the ones to read, as one debate's choice sets share its
    question and agents."""

    def table(self) -> "Any":
        """The coefficients with their standard errors (``se``: clustered by debate; ``z`` from
        them) and the model-based ones (``se_model``) (a DataFrame)."""
        import pandas as pd
        coef = np.asarray(self.model.coef)
        se = np.asarray(self.se_cluster)
        return pd.DataFrame({"coef": coef, "se": se, "z": coef / se,
                             "se_model": np.asarray(self.se)},
                            index=pd.Index(self.model.features, name="feature"))

    def diagnostics(self) -> dict[str, Any]:
        """What a population file records of the fit."""
        return {"log_likelihood": round(self.loglik, 3),
                "null_log_likelihood": round(self.null_loglik, 3),
                "mcfadden_r2": round(1 - self.loglik / self.null_loglik, 4),
                "choices": self.n_choices, "debates": self.n_debates,
                "converged": self.converged, "iterations": self.iterations}


def fit(tr: Transitions, weights: np.ndarray | None = None,
        start: Sequence[float] | None = None,
        features: Sequence[str] = RevisionModel.FEATURES) -> RevisionFit:
    """The maximum-likelihood :class:`RevisionModel` with ``features`` (some of
    :attr:`~pear.sim.population.RevisionModel.COLUMNS`, in that order) of ``tr`` (``weights``
    per choice set, default 1), by ``scipy.optimize.minimize(method="trust-exact")`` with the
    exact gradient and Hessian of the conditional logit (concave: one maximum)."""
    from scipy.optimize import minimize
    t0 = time.perf_counter()
    features = tuple(features)
    if tr.X.shape[1] == len(RevisionModel.COLUMNS):  # the model's columns of the design
        tr = dataclasses.replace(tr, X=tr.X[:, [RevisionModel.COLUMNS.index(f) for f in features]])
    elif tr.X.shape[1] != len(features):
        raise ValueError(f"invalid choice sets: {tr.X.shape[1]} feature columns, neither "
                         f"RevisionModel.COLUMNS' {len(RevisionModel.COLUMNS)} nor the "
                         f"{len(features)} features {', '.join(features)}")
    starts = tr.starts
    w = np.ones(tr.n_choices) if weights is None else np.asarray(weights, float)
    x0 = np.zeros(tr.X.shape[1]) if start is None else np.asarray(start, float)
    res = minimize(lambda b: -_loglik(b, tr, w, starts, 1)[0], x0,
                   jac=lambda b: -_loglik(b, tr, w, starts, 1)[1],
                   hess=lambda b: -_loglik(b, tr, w, starts, 2)[2],
                   method="trust-exact", options={"gtol": 1e-8, "maxiter": 200})
    ll, _, hess = _loglik(res.x, tr, w, starts, 2)
    try:
        cov = np.linalg.inv(-hess)
    except np.linalg.LinAlgError:  # not identified (e.g. a feature that never varies)
        cov = np.full_like(hess, np.nan)
    se = np.sqrt(np.clip(np.diag(cov), 0, None)) if np.all(np.isfinite(cov)) \
        else np.full(len(res.x), np.nan)
    n_options = np.diff(np.r_[starts, len(tr.group)])
    null = -float(w @ np.log(n_options))
    used = np.unique(tr.debate[w > 0])
    # converged: scipy's own verdict, or a gradient at the limit of float precision (trust-exact
    # reports "bad approximation" once no step can improve the log-likelihood any further)
    flat = bool(res.success) or float(np.abs(_loglik(res.x, tr, w, starts, 1)[1]).max()) < 1e-4
    identified = bool(np.all(np.isfinite(se)) and np.all(np.abs(res.x) < 30))
    se_cluster = np.full(len(res.x), np.nan)
    if identified:  # sandwich: the scores summed per debate (its choice sets are not independent)
        v = tr.X @ res.x
        e = np.exp(v - np.maximum.reduceat(v, starts)[tr.group])
        p = e / np.add.reduceat(e, starts)[tr.group]
        score = w[:, None] * (tr.X[tr.chosen] - np.add.reduceat(p[:, None] * tr.X, starts))
        per = np.zeros((len(tr.debates), tr.X.shape[1]))
        np.add.at(per, tr.debate, score)
        se_cluster = np.sqrt(np.diag(cov @ (per.T @ per) @ cov))
    return RevisionFit(RevisionModel(tuple(res.x), features=features), tuple(map(float, se)),
                       ll, null, int(w.sum()), len(used), flat and identified,
                       int(res.nit), time.perf_counter() - t0, tuple(map(float, se_cluster)))


def bootstrap(tr: Transitions, k: int = 20, seed: int = 0,
              start: Sequence[float] | None = None,
              features: Sequence[str] = RevisionModel.FEATURES) -> list[RevisionFit]:
    """``k`` refits of ``tr`` on its debates resampled with replacement (each choice set
    weighted by how often its debate was drawn; the skills stay the whole data's), seeded by
    ``seed``: the sampling distribution of the fit.  Warm-started at ``start`` (default: the
    full fit)."""
    if k < 1:
        raise ValueError(f"invalid k={k!r}: at least one bootstrap refit")
    rng = np.random.default_rng(seed)
    n = len(tr.debates)
    x0 = start if start is not None else fit(tr, features=features).model.coef
    out = []
    for _ in range(k):
        counts = np.bincount(rng.integers(0, n, n), minlength=n)
        out.append(fit(tr, counts[tr.debate].astype(float), start=x0, features=features))
    return out


def same_wrong_answer(records: Iterable[Mapping[str, Any]]) -> tuple[float, int]:
    """The share of pairs of agents of one debate that both gave a wrong (read) answer in round
    0 and gave the same one, and the number of such pairs (0: none)."""
    same = pairs = 0
    for rec in records:
        rd = rec["rounds_data"][0]
        classes = _answer_classes([rd])
        wrong = [classes[(0, int(a["agent"]))] for a in rd["agents"]
                 if (0, int(a["agent"])) in classes and not a["correct"]]
        for i in range(len(wrong)):
            for j in range(i + 1, len(wrong)):
                pairs += 1
                same += wrong[i] == wrong[j]
    return (same / pairs if pairs else float("nan")), pairs


def choice_table(tr: Transitions) -> "Any":
    """What the agents did, per question set: choice sets, the share that kept their own
    answer, adopted a heard one, or produced another (a DataFrame)."""
    import pandas as pd
    own = tr.X[:, RevisionModel.COLUMNS.index("own")] > 0
    new = tr.X[:, RevisionModel.COLUMNS.index("new")] > 0
    kind = np.where(own, "keep", np.where(new, "another", "adopt"))[tr.chosen]
    df = pd.DataFrame({"question_set": tr.qset, "choice": kind})
    out = pd.crosstab(df["question_set"], df["choice"], normalize="index")
    out.insert(0, "choices", df.groupby("question_set").size())
    out.insert(1, "round0_accuracy", [tr.accuracy[q] for q in out.index])
    return out


def _situations(tr: Transitions) -> tuple[np.ndarray, np.ndarray]:
    """Per choice set: the agent's previous answer (``right``, ``wrong``, ``none``) and what it
    heard (``alone``: no answer; ``agree``: only its own answer; ``other``: one other answer
    only; ``split``: several answers)."""
    F = RevisionModel.COLUMNS
    own = tr.X[:, F.index("own")] > 0
    right = tr.X[:, F.index("right")] > 0
    heard = tr.X[:, F.index("share")] > 0
    st = tr.starts
    has_own = np.logical_or.reduceat(own, st)
    own_right = np.logical_or.reduceat(own & right, st)
    n_heard = np.add.reduceat(heard.astype(int), st)
    own_heard = np.logical_or.reduceat(own & heard, st)
    mine = np.where(~has_own, "none", np.where(own_right, "right", "wrong"))
    what = np.where(n_heard == 0, "alone", np.where(n_heard > 1, "split",
                                                    np.where(own_heard, "agree", "other")))
    return mine, what


def predictive_table(tr: Transitions, model: RevisionModel) -> "Any":
    """The fit held against its own data, on the choice level: per situation (the answer space,
    free or a few labelled options, x the agent's previous answer right / wrong / none, x what
    it heard: alone, only its own answer, one other answer, several), the choice sets ``n``,
    the real share that kept their answer, adopted a heard one, produced another and ended
    right, and the share ``model`` predicts
    on the same choice sets (``*_pred``, the probabilities the simulator draws from:
    :meth:`~pear.sim.population.RevisionModel.probabilities`), with the z-score of the real
    share of ending right against the predicted (``z_right``: the real minus the predicted,
    over the Poisson-binomial standard deviation)."""
    import pandas as pd
    F = RevisionModel.COLUMNS
    st = tr.starts
    v = tr.X @ model.vector
    e = np.exp(v - np.maximum.reduceat(v, st)[tr.group])
    p = e / np.add.reduceat(e, st)[tr.group]
    own = tr.X[:, F.index("own")] > 0
    new = tr.X[:, F.index("new")] > 0
    right = tr.X[:, F.index("right")] > 0
    kind = {"keep": own, "adopt": ~own & ~new, "another": new, "right": right}
    mine, what = _situations(tr)
    lettered = np.logical_or.reduceat(tr.X[:, F.index("new_x_options")] > 0, st)
    cols: dict[str, Any] = {"space": np.where(lettered, "options", "free"), "own": mine,
                            "heard": what}
    for k, m in kind.items():
        cols[f"{k}"] = np.add.reduceat((tr.chosen & m).astype(float), st)
        cols[f"{k}_pred"] = np.add.reduceat(p * m, st)
    df = pd.DataFrame(cols)
    df["var_right"] = df["right_pred"] * (1 - df["right_pred"])
    out = df.groupby(["space", "own", "heard"]).agg(
        n=("keep", "size"),
        **{c: (c, "mean") for c in cols if c not in ("space", "own", "heard")},
        var_right=("var_right", "sum"))
    out["z_right"] = (out["right"] - out["right_pred"]) * out["n"] / np.sqrt(
        out.pop("var_right").clip(lower=1e-12))
    return out
