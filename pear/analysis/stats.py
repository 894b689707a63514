"""Significance tests, intervals and power for paired method comparisons.

Every test statistic comes from statsmodels or scipy; this module names the choices
(continuity correction, which power, which bootstrap) and checks the inputs.  Every resampling
takes an explicit ``numpy.random.Generator``.  scipy and statsmodels (about a second) are
imported inside the functions that use them.  :func:`significance` builds the study's table.

Conventions for a paired comparison of method A with method B on the same questions:
``b`` = questions A gets right and B gets wrong, ``c`` = A wrong and B right (the
discordant pairs); the study's significance table has A = PEAR, B = the strongest fixed
topology, and reports the discordant win rate ``b / (b + c)``.

>>> r = mcnemar(33, 14)
>>> round(r.chi2, 3), round(r.pvalue_exact, 4)
(6.894, 0.0079)
>>> [round(v, 3) for v in wilson(33, 47)]
[0.56, 0.813]
>>> round(mcnemar_power(33, 14).normal, 3)
0.814
"""
from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
import pandas as pd

from pear.catalog.labels import sort_rows
from pear.analysis.metrics import GROUP, best_fixed, paired, pooled_accuracy


__all__ = [
    "ALPHA", "BOOTSTRAP_RESAMPLES", "BOOTSTRAP_SEED", "McNemarResult", "PowerResult", "mcnemar",
    "mcnemar_table", "wilson", "mcnemar_power", "mcnemar_sample_size", "adjusted_significance",
    "spearman_rho", "spearman", "bootstrap_mean", "bootstrap_diff", "bootstrap_diff_unpaired",
    "bootstrap_weights", "PairedEffect", "paired_effect", "holm", "significance",
    "rank_agreement", "SpreadResult", "relabelling_spread",
]


ALPHA = 0.05  # conventional; the study's tests are at the 5% level
"""The level of every test and interval here: two-sided tests at ``ALPHA``, ``1 - ALPHA``
(95%) intervals."""
BOOTSTRAP_RESAMPLES = 10000  # our choice (scipy's default); the study reports no bootstrap
BOOTSTRAP_SEED = 0  # our choice: one fixed seed, so that the table is reproducible


def _count(name: str, value: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"invalid {name}={value!r}: use a non-negative integer count")
    return int(value)


def _binary(name: str, values: Sequence[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d vector of 0/1 correctness, got shape {arr.shape}")
    if arr.size and not np.isin(arr, (0, 1)).all():
        raise ValueError(f"{name} must hold only 0/1 (or bool) values")
    return arr.astype(int)


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on the discordant pairs ``b`` (A right, B wrong) and ``c``."""

    b: int
    c: int
    chi2: float
    """Continuity-corrected statistic ``(|b - c| - 1)^2 / (b + c)`` (0 when b + c = 0)."""
    pvalue_chi2: float
    """p-value of ``chi2`` against chi-square with 1 degree of freedom."""
    pvalue_exact: float
    """Exact two-sided binomial p-value of ``min(b, c)`` under Binom(b + c, 1/2)."""


def mcnemar(b: int, c: int) -> McNemarResult:
    """McNemar's test from the discordant counts (statsmodels, exact and corrected chi2).

    With no discordant pair (b = c = 0) there is no evidence either way: chi2 = 0, p = 1.

    >>> r = mcnemar(12, 2)
    >>> r.chi2 == 81 / 14, round(r.pvalue_exact, 5)
    (True, 0.01294)
    """
    b, c = _count("b", b), _count("c", c)
    if b + c == 0:
        return McNemarResult(0, 0, 0.0, 1.0, 1.0)
    table = [[0, b], [c, 0]]
    from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
    corrected = _sm_mcnemar(table, exact=False, correction=True)
    exact = _sm_mcnemar(table, exact=True)
    return McNemarResult(b, c, float(corrected.statistic), float(corrected.pvalue),
                         float(exact.pvalue))


def mcnemar_table(correct_a: Sequence[int] | np.ndarray,
                  correct_b: Sequence[int] | np.ndarray) -> tuple[np.ndarray, McNemarResult]:
    """The 2x2 table of paired 0/1 correctness vectors and McNemar's test on it.

    ``table[i, j]`` counts questions with A ``right if i == 0 else wrong`` and B
    ``right if j == 0 else wrong``; so ``b = table[0, 1]`` and ``c = table[1, 0]``.

    >>> table, r = mcnemar_table([1, 1, 1, 0, 0], [1, 0, 0, 1, 0])
    >>> table.tolist(), r.b, r.c
    ([[1, 2], [1, 1]], 2, 1)
    """
    a, b = _binary("correct_a", correct_a), _binary("correct_b", correct_b)
    if a.shape != b.shape:
        raise ValueError(f"paired vectors differ in length: {a.size} vs {b.size}")
    table = np.array([[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
                      [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]])
    return table, mcnemar(int(table[0, 1]), int(table[1, 0]))


def wilson(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Wilson score interval ``(low, high)`` of the proportion ``k / n`` (statsmodels).

    >>> wilson(0, 10)[0], wilson(10, 10)[1]
    (0.0, 1.0)
    """
    k, n = _count("k", k), _count("n", n)
    if n == 0:
        raise ValueError(f"invalid n={n}: a Wilson interval needs at least one trial")
    if k > n:
        raise ValueError(f"invalid k={k}: more successes than trials n={n}")
    from statsmodels.stats.proportion import proportion_confint
    low, high = proportion_confint(k, n, alpha=alpha, method="wilson")
    # the Wilson bounds are exactly 0 at k = 0 and 1 at k = n; remove float round-off
    return (0.0 if k == 0 else float(low)), (1.0 if k == n else float(high))


@dataclass(frozen=True)
class PowerResult:
    """Post-hoc power of McNemar's test at the observed discordant win rate."""

    normal: float
    """Normal approximation on Cohen's h = 2 asin sqrt(b/n) - 2 asin sqrt(1/2), one-sample,
    two-sided, n = b + c (statsmodels ``NormalIndPower`` with ``ratio=0``).  This is the
    power column of the study's significance table (33/14 -> 0.814, 40/15 -> 0.938)."""
    exact: float
    """Exact binomial power: the probability under Binom(n, b/n) of landing in the
    rejection region of the exact two-sided test of p = 1/2 at level alpha."""


def mcnemar_power(b: int, c: int, alpha: float = ALPHA) -> PowerResult:
    """Post-hoc power of McNemar's test for the observed discordant pairs (b, c).

    >>> p = mcnemar_power(40, 15)
    >>> round(p.normal, 3), 0.9 < p.exact < 1.0
    (0.938, True)
    """
    b, c = _count("b", b), _count("c", c)
    n = b + c
    if n == 0:
        raise ValueError(f"invalid b + c = {n}: power needs at least one discordant pair")
    rate = b / n
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize
    from scipy import stats as sps
    h = float(proportion_effectsize(rate, 0.5))
    normal = float(NormalIndPower().power(effect_size=h, nobs1=n, alpha=alpha, ratio=0,
                                          alternative="two-sided")) if h != 0 else alpha
    reject = np.array([sps.binomtest(k, n, 0.5).pvalue <= alpha for k in range(n + 1)])
    exact = float(sps.binom.pmf(np.arange(n + 1), n, rate)[reject].sum())
    return PowerResult(normal=normal, exact=exact)


def mcnemar_sample_size(b: int, c: int, n: int, alpha: float = ALPHA, power: float = 0.8
                        ) -> int | None:
    """Questions that give McNemar's test ``power`` at the discordance observed in ``n``
    questions (b, c discordant pairs); None when b == c (no effect to detect).

    >>> mcnemar_sample_size(40, 15, 200)  # h = 0.47: 35 discordant pairs, 55 in 200
    129
    """
    b, c = _count("b", b), _count("c", c)
    if b == c or n == 0 or b + c == 0:
        return None
    from statsmodels.stats.power import NormalIndPower
    from statsmodels.stats.proportion import proportion_effectsize
    h = abs(float(proportion_effectsize(b / (b + c), 0.5)))
    pairs = NormalIndPower().solve_power(effect_size=h, alpha=alpha, power=power, ratio=0)
    return int(math.ceil(pairs * n / (b + c)))


def spearman_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho along the last axis (Pearson's r of the ranks), vectorised over the
    leading axes (e.g. bootstrap replicates); NaN where a vector is constant.

    >>> float(spearman_rho(np.array([1., 2, 3, 4]), np.array([10., 20, 40, 30])))
    0.8
    """
    from scipy import stats as sps
    rx, ry = sps.rankdata(x, axis=-1), sps.rankdata(y, axis=-1)
    rx, ry = rx - rx.mean(-1, keepdims=True), ry - ry.mean(-1, keepdims=True)
    with np.errstate(all="ignore"):
        return (rx * ry).sum(-1) / np.sqrt((rx ** 2).sum(-1) * (ry ** 2).sum(-1))


def _rng_kwargs(func, rng: np.random.Generator) -> dict:
    """scipy >= 1.15 names the generator ``rng``; older versions ``random_state``."""
    params = inspect.signature(func).parameters
    return {"rng": rng} if "rng" in params else {"random_state": rng}


def spearman(x: Sequence[float], y: Sequence[float], permutation: bool = False,
             n_resamples: int = 9999, rng: np.random.Generator | None = None
             ) -> tuple[float, float]:
    """Spearman's rank correlation ``(rho, pvalue)`` of two paired vectors.

    ``permutation=False``: scipy's ``spearmanr`` p-value (t approximation; the one the
    study's rank-agreement table prints).  ``permutation=True``: a two-sided permutation
    p-value from ``scipy.stats.permutation_test`` over pairings, the statistic being
    Pearson's r of the ranks (= Spearman's rho); every pairing is enumerated (an exact
    p-value) when n <= 8 or n! <= ``n_resamples``, otherwise ``n_resamples`` random
    pairings are drawn from ``rng``, which is then required.

    >>> spearman([1, 2, 3, 4], [10, 20, 30, 40])[0]
    1.0
    >>> rho, p = spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], permutation=True)
    >>> round(rho, 1), round(p, 3)
    (0.8, 0.133)
    """
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise ValueError(f"x and y must be 1-d of equal length, got {xa.shape} and {ya.shape}")
    if xa.size < 3:
        raise ValueError(f"Spearman's rho needs at least 3 points, got {xa.size}")
    from scipy import stats as sps
    res = sps.spearmanr(xa, ya)
    rho = float(res.statistic)
    if not permutation:
        return rho, float(res.pvalue)
    exact = xa.size <= 8 or math.factorial(xa.size) <= n_resamples
    if not exact and rng is None:
        raise ValueError(f"n={xa.size} points need {n_resamples} random pairings: pass "
                         "rng=numpy.random.default_rng(seed)")
    rx, ry = sps.rankdata(xa), sps.rankdata(ya)

    def rank_corr(a: np.ndarray, axis: int = -1) -> np.ndarray:
        return sps.pearsonr(a, np.broadcast_to(ry, a.shape), axis=axis).statistic

    kwargs = {} if exact else _rng_kwargs(sps.permutation_test, rng)
    perm = sps.permutation_test((rx,), rank_corr, permutation_type="pairings", vectorized=True,
                                n_resamples=np.inf if exact else n_resamples, **kwargs)
    return rho, float(perm.pvalue)


def bootstrap_diff(correct_a: Sequence[int] | np.ndarray, correct_b: Sequence[int] | np.ndarray,
                   n_resamples: int = BOOTSTRAP_RESAMPLES, alpha: float = ALPHA, *,
                   rng: np.random.Generator,
                   method: Literal["percentile", "basic", "BCa"] = "percentile",
                   ) -> tuple[float, float, float]:
    """Accuracy difference ``mean(a) - mean(b)`` with a paired bootstrap CI ``(low, high)``.

    Questions are resampled with replacement, keeping each question's pair together
    (``scipy.stats.bootstrap(paired=True)``), ``n_resamples`` times, drawing from ``rng``.

    >>> d, lo, hi = bootstrap_diff([1, 1, 1, 0] * 10, [1, 0, 0, 0] * 10,
    ...                            n_resamples=2000, rng=np.random.default_rng(0))
    >>> d, lo < d < hi
    (0.5, True)
    """
    a, b = _binary("correct_a", correct_a), _binary("correct_b", correct_b)
    if a.shape != b.shape or a.size < 2:
        raise ValueError(f"need two paired vectors of equal length >= 2, got {a.size}, {b.size}")
    diff = float(a.mean() - b.mean())
    if np.all(a - b == (a - b)[0]):  # every resample gives the same difference
        return diff, diff, diff
    from scipy import stats as sps
    res = sps.bootstrap((a, b), lambda u, v, axis=-1: u.mean(axis=axis) - v.mean(axis=axis),
                        paired=True, vectorized=True, n_resamples=n_resamples,
                        confidence_level=1 - alpha, method=method,
                        **_rng_kwargs(sps.bootstrap, rng))
    ci = res.confidence_interval
    return diff, float(ci.low), float(ci.high)


def bootstrap_mean(values: Sequence[float] | np.ndarray,
                   n_resamples: int = BOOTSTRAP_RESAMPLES,
                   alpha: float = ALPHA, *, rng: np.random.Generator
                   ) -> tuple[float, float, float]:
    """Mean of one sample with a percentile bootstrap ``(1 - alpha)`` interval ``(low,
    high)``: ``n_resamples`` resamples with replacement drawn from ``rng``.  NaN entries
    (e.g. queries where a rate is undefined) are left out; no value gives NaN, a single
    value no interval (NaN), a constant sample a zero-width one.

    >>> m, lo, hi = bootstrap_mean([0.0, 1.0, 0.5, 0.25, np.nan] * 5, n_resamples=2000,
    ...                            rng=np.random.default_rng(0))
    >>> m, lo < m < hi
    (0.4375, True)
    >>> bootstrap_mean([np.nan], rng=np.random.default_rng(0))
    (nan, nan, nan)
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return math.nan, math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2:
        return mean, math.nan, math.nan
    if np.all(x == x[0]):
        return mean, mean, mean
    means = x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1)
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return mean, float(low), float(high)


def bootstrap_diff_unpaired(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                            n_resamples: int = BOOTSTRAP_RESAMPLES, alpha: float = ALPHA, *,
                            rng: np.random.Generator) -> tuple[float, float, float]:
    """``mean(a) - mean(b)`` of two independent samples (no pairing: what separate runs can
    claim) with a percentile bootstrap interval, each sample resampled on its own from
    ``rng``; no interval (NaN) when a sample has fewer than two values.

    >>> d, lo, hi = bootstrap_diff_unpaired([1, 1, 0, 1] * 5, [0, 1, 0, 0] * 5,
    ...                                     n_resamples=2000, rng=np.random.default_rng(0))
    >>> d, lo < d < hi
    (0.5, True)
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(a.mean() - b.mean())
    if a.size < 2 or b.size < 2:
        return diff, np.nan, np.nan
    da = a[rng.integers(0, a.size, (n_resamples, a.size))].mean(axis=1)
    db = b[rng.integers(0, b.size, (n_resamples, b.size))].mean(axis=1)
    low, high = np.quantile(da - db, [alpha / 2, 1 - alpha / 2])
    return diff, float(low), float(high)


def bootstrap_weights(n: int, n_resamples: int, *, rng: np.random.Generator) -> np.ndarray:
    """``(n_resamples, n)`` resampling weights of ``n`` units: how many times each unit is
    drawn in each resample with replacement (multinomial counts summing to ``n``).  The
    weighted form of the bootstrap, for statistics over several crossed units (the claims
    ledger's two-way bootstrap draws seeds and questions independently).

    >>> w = bootstrap_weights(4, 3, rng=np.random.default_rng(0))
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 4), [4, 4, 4])
    """
    return rng.multinomial(n, np.full(n, 1 / n), size=n_resamples)


@dataclass(frozen=True)
class PairedEffect:
    """Method A against method B on ``n`` paired questions (:func:`paired_effect`):
    ``diff = mean(a) - mean(b)`` (NaN with no pair), its paired bootstrap interval
    ``low, high`` and McNemar's exact ``p_exact`` (NaN with fewer than two pairs)."""

    diff: float
    low: float
    high: float
    p_exact: float
    n: int


def paired_effect(correct_a: Sequence[int] | np.ndarray, correct_b: Sequence[int] | np.ndarray,
                  n_resamples: int = BOOTSTRAP_RESAMPLES, alpha: float = ALPHA, *,
                  rng: np.random.Generator) -> PairedEffect:
    """The paired comparison every table of this project reports: the accuracy difference,
    its paired bootstrap interval (:func:`bootstrap_diff`) and McNemar's exact p
    (:func:`mcnemar_table`).  Fewer than two pairs (a pipeline check of one question) give
    no interval and no test, never an error.

    >>> e = paired_effect([1, 1, 1, 0] * 10, [1, 0, 0, 0] * 10, n_resamples=2000,
    ...                   rng=np.random.default_rng(0))
    >>> e.diff, e.n, e.low < e.diff < e.high, round(e.p_exact, 6)
    (0.5, 40, True, 2e-06)
    >>> paired_effect([1], [0], rng=np.random.default_rng(0))
    PairedEffect(diff=1.0, low=nan, high=nan, p_exact=nan, n=1)
    """
    a, b = _binary("correct_a", correct_a), _binary("correct_b", correct_b)
    if a.shape != b.shape:
        raise ValueError(f"paired vectors differ in length: {a.size} vs {b.size}")
    if a.size < 2:
        diff = float((a - b).mean()) if a.size else np.nan
        return PairedEffect(diff, np.nan, np.nan, np.nan, int(a.size))
    diff, low, high = bootstrap_diff(a, b, n_resamples, alpha, rng=rng)
    return PairedEffect(diff, low, high, mcnemar_table(a, b)[1].pvalue_exact, int(a.size))


@dataclass(frozen=True)
class SpreadResult:
    """How much accuracy moves across relabellings of the same questions, against what
    sampling alone gives (:func:`relabelling_spread`)."""

    accuracy: tuple[float, ...]
    """Accuracy under each relabelling (columns of the input)."""
    spread: float
    """Range of ``accuracy`` (max - min)."""
    null_mean: float
    """Mean range under the null (outcomes exchangeable within each question)."""
    pvalue: float
    """Share of null ranges at least ``spread`` (the observed one counted)."""


def relabelling_spread(correct: Sequence[Sequence[int]] | np.ndarray, *,
                       n_resamples: int = 2000, rng: np.random.Generator) -> SpreadResult:
    """A randomisation test at matched seeds: ``correct`` is (questions, K) 0/1, question q
    under relabelling j (the same questions and seed streams in every column).  Under the
    null that accuracy does not depend on the relabelling, a question's K outcomes are
    exchangeable, so each row is permuted on its own; the statistic is the range of the K
    accuracies.

    >>> r = relabelling_spread([[1, 0], [1, 0], [1, 0], [1, 0], [1, 0], [1, 0]],
    ...                        rng=np.random.default_rng(0))
    >>> r.spread, r.pvalue < 0.05
    (1.0, True)
    >>> relabelling_spread([[1, 1], [0, 0]], rng=np.random.default_rng(0)).pvalue
    1.0
    """
    x = np.asarray(correct, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
        raise ValueError(f"invalid correct of shape {x.shape}: give (questions, K >= 2) 0/1 "
                         "outcomes, one column per relabelling")
    acc = x.mean(axis=0)
    observed = float(acc.max() - acc.min())
    null = np.empty(int(n_resamples))
    batch = max(1, 2_000_000 // x.size)
    for start in range(0, len(null), batch):
        b = min(batch, len(null) - start)
        moved = rng.permuted(np.broadcast_to(x, (b, *x.shape)), axis=2).mean(axis=1)
        null[start:start + b] = moved.max(axis=1) - moved.min(axis=1)
    p = (1 + int(np.sum(null >= observed - 1e-12))) / (1 + len(null))
    return SpreadResult(tuple(float(a) for a in acc), observed, float(null.mean()), float(p))


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (statsmodels ``multipletests(method="holm")``).

    >>> holm([0.01, 0.04, 0.03]).round(2).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return p
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    from statsmodels.stats.multitest import multipletests
    return multipletests(p, method="holm")[1]


_SIGNIFICANCE_COLUMNS = ["model", "dataset", "best_baseline", "best_baseline_acc", "pear_acc",
                         "n_pairs", "b", "c", "chi2", "p_exact", "win_rate", "wilson_low",
                         "wilson_high", "power", "power_exact"]


def significance(debates: pd.DataFrame, method: str = "pear", against: str = "best_fixed",
                 alpha: float = ALPHA) -> pd.DataFrame:
    """The study's significance table from records, per (model, dataset): ``best_baseline``
    (``against``, or the fixed topology of highest accuracy), ``best_baseline_acc``,
    ``pear_acc`` (``method``'s accuracy, over all seeds' questions), the discordant pairs
    ``b`` (method right, baseline wrong) and ``c``, ``chi2``, ``p_exact``, ``win_rate`` =
    b/(b+c) with its Wilson interval, ``power`` (normal, Cohen's h) and ``power_exact``.
    Every (seed, question) is one pair; McNemar assumes independent pairs, so pass one
    seed's debates when the seeds share their questions (the study: one full-set run).
    """
    rows = []
    for (model, dataset), part in debates.groupby(["model", "dataset"], sort=True):
        present = set(part["method"])
        if method not in present:
            continue
        if against != "best_fixed":
            base = against if against in present else None
        else:
            base = best_fixed(pooled_accuracy(part))
        if base is None:
            continue
        pairs = paired(part, method, base)
        _, test = mcnemar_table(pairs["correct_a"], pairs["correct_b"])
        n = test.b + test.c
        low, high = wilson(test.b, n, alpha) if n else (np.nan, np.nan)
        power = mcnemar_power(test.b, test.c, alpha) if n else None
        rows.append({"model": model, "dataset": dataset, "best_baseline": base,
                     "best_baseline_acc": pairs["correct_b"].mean(),
                     "pear_acc": pairs["correct_a"].mean(), "n_pairs": len(pairs),
                     "b": test.b, "c": test.c, "chi2": test.chi2, "p_exact": test.pvalue_exact,
                     "win_rate": test.b / n if n else np.nan, "wilson_low": low,
                     "wilson_high": high, "power": power.normal if power else np.nan,
                     "power_exact": power.exact if power else np.nan})
    return pd.DataFrame(rows, columns=_SIGNIFICANCE_COLUMNS)


def rank_agreement(acc_a: pd.DataFrame, acc_b: pd.DataFrame) -> pd.DataFrame:
    """Spearman's rho (:func:`spearman`) between two accuracy tables (e.g. the subset's and
    the full set's, :func:`pear.analysis.metrics.accuracy`) over the methods in both, per
    (model, dataset) in both: ``model, dataset, n_methods, rho, p_value`` (NaN with fewer
    than 3 methods or constant accuracies).

    >>> a = pd.DataFrame({"model": "m", "dataset": "gsm8k", "method": ["x", "y", "z"],
    ...                   "accuracy": [0.1, 0.2, 0.3]})
    >>> out = rank_agreement(a, a.assign(accuracy=[0.3, 0.5, 0.4]))
    >>> out[["n_methods", "rho"]].to_dict("records")
    [{'n_methods': 3, 'rho': 0.5}]
    """
    both = acc_a.merge(acc_b, on=list(GROUP), suffixes=("_a", "_b"))
    rows = []
    for (m, ds), part in both.groupby(["model", "dataset"], sort=False):
        rho = p = np.nan
        if len(part) >= 3:
            with warnings.catch_warnings():  # constant accuracies: rho undefined (NaN)
                warnings.simplefilter("ignore")
                rho, p = spearman(part["accuracy_a"], part["accuracy_b"])
        rows.append({"model": m, "dataset": ds, "n_methods": len(part), "rho": rho, "p_value": p})
    out = pd.DataFrame(rows, columns=["model", "dataset", "n_methods", "rho", "p_value"])
    return sort_rows(out, ["dataset"])


def adjusted_significance(debates: pd.DataFrame, *, n_resamples: int = BOOTSTRAP_RESAMPLES,
                          seed: int = BOOTSTRAP_SEED) -> pd.DataFrame:
    """:func:`significance` of ``debates`` plus, across its settings (rows), the
    Holm-adjusted exact McNemar p (``p_holm``, :func:`holm`; rows without a
    p-value stay NaN and do not count) and the paired bootstrap of PEAR's accuracy minus
    the best fixed topology's on the same pairs (``diff``, ``diff_low``, ``diff_high``:
    95% percentile interval, questions resampled with their pair,
    :func:`bootstrap_diff`; one generator seeded with ``seed`` draws for the
    rows in order)."""
    sig = significance(debates)
    p = sig["p_exact"].to_numpy(float)
    ok = np.isfinite(p)
    sig["p_holm"] = np.nan
    sig.loc[ok, "p_holm"] = holm(p[ok])
    rng = np.random.default_rng(seed)
    cis = []
    for r in sig.itertuples():
        part = debates[(debates["model"] == r.model) & (debates["dataset"] == r.dataset)]
        pairs = paired(part, "pear", r.best_baseline)
        cis.append(bootstrap_diff(pairs["correct_a"], pairs["correct_b"],
                                  n_resamples=n_resamples, rng=rng)
                   if len(pairs) >= 2 else (np.nan, np.nan, np.nan))
    sig[["diff", "diff_low", "diff_high"]] = np.array(cis, dtype=float).reshape(-1, 3)
    return sig
