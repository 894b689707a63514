"""Statistics against independently known values and the study's significance table."""
from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from pear.analysis import compare, stats
from pear.store.view import from_records
from record_factory import make_simple

SIGNIFICANCE = compare.load_paper("significance")


# -- McNemar ------------------------------------------------------------------------------

def test_mcnemar_b12_c2_by_hand():
    r = stats.mcnemar(12, 2)
    assert (r.b, r.c) == (12, 2)
    assert r.chi2 == pytest.approx(81 / 14, rel=1e-12)            # (|12 - 2| - 1)^2 / 14
    exact = 2 * sum(math.comb(14, k) for k in range(3)) / 2 ** 14  # 2 P(Binom(14, .5) <= 2)
    assert r.pvalue_exact == pytest.approx(exact, rel=1e-12)
    assert r.pvalue_chi2 == pytest.approx(math.erfc(math.sqrt(81 / 14 / 2)), rel=1e-9)


def test_mcnemar_is_symmetric_and_frozen():
    a, b = stats.mcnemar(3, 9), stats.mcnemar(9, 3)
    assert (a.chi2, a.pvalue_exact) == (b.chi2, b.pvalue_exact)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.b = 4


def test_mcnemar_without_discordant_pairs_and_bad_counts():
    r = stats.mcnemar(0, 0)
    assert (r.chi2, r.pvalue_chi2, r.pvalue_exact) == (0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="b=-1"):
        stats.mcnemar(-1, 3)
    with pytest.raises(ValueError, match="c=2.5"):
        stats.mcnemar(1, 2.5)


@pytest.mark.parametrize("row", SIGNIFICANCE.to_dict("records"),
                         ids=lambda r: f"{r['dataset']}-{r['model']}")
def test_significance_table_is_reproduced_from_b_and_c(row):
    b, c = row["b"], row["c"]
    r = stats.mcnemar(b, c)
    assert r.chi2 == pytest.approx(row["chi2"], abs=5e-4)
    digits = len(str(row["p_exact"]).split(".")[1])          # printed to 3 or 4 decimals
    assert round(r.pvalue_exact, digits) == pytest.approx(row["p_exact"], abs=1.01 * 10 ** -digits)
    low, high = stats.wilson(b, b + c)
    assert (low, high) == pytest.approx((row["wilson_low"], row["wilson_high"]), abs=5e-4)
    assert stats.mcnemar_power(b, c).normal == pytest.approx(row["power"], abs=5e-4)


def test_mcnemar_table_counts_from_paired_vectors():
    a = np.array([1, 1, 1, 1, 0, 0, 0, 1])
    b = np.array([1, 0, 0, 0, 1, 0, 0, 1])
    table, r = stats.mcnemar_table(a, b)
    assert table.tolist() == [[2, 3], [1, 2]]
    assert (r.b, r.c) == (3, 1)
    assert table.sum() == 8
    with pytest.raises(ValueError, match="length"):
        stats.mcnemar_table([1, 0], [1])
    with pytest.raises(ValueError, match="0/1"):
        stats.mcnemar_table([1, 2], [1, 0])


# -- the significance table from records -------------------------------------------------

def test_significance_from_records():
    # 6 questions x 2 seeds; PEAR wins 4 + 2 discordant pairs, loses 1; chain beats clique
    recs = []
    for s in (0, 1):
        for q in range(6):
            recs.append(make_simple(q < 5 if s == 0 else q < 4, method="pear", seed=s,
                                    question_id=f"q{q}"))
            recs.append(make_simple(q in (0, 5) if s == 0 else q < 2, method="chain", seed=s,
                                    question_id=f"q{q}"))
            recs.append(make_simple(False, method="clique", seed=s, question_id=f"q{q}"))
    sig = stats.significance(from_records(recs).debates).iloc[0]
    assert sig["best_baseline"] == "chain" and sig["n_pairs"] == 12
    assert (sig["b"], sig["c"]) == (6, 1)
    assert sig["pear_acc"] == pytest.approx(9 / 12)
    assert sig["best_baseline_acc"] == pytest.approx(4 / 12)
    assert sig["win_rate"] == pytest.approx(6 / 7)
    assert sig["p_exact"] == pytest.approx(0.125)   # 2 * P(Binom(7, .5) <= 1) = 2 * 8/128
    assert sig["chi2"] == pytest.approx(16 / 7)     # (|6 - 1| - 1)^2 / 7
    assert (sig["wilson_low"], sig["wilson_high"]) == pytest.approx(stats.wilson(6, 7))
    assert sig["power"] == pytest.approx(stats.mcnemar_power(6, 1).normal)
    vs_clique = stats.significance(from_records(recs).debates, against="clique").iloc[0]
    assert (vs_clique["best_baseline"], vs_clique["b"], vs_clique["c"]) == ("clique", 9, 0)
    assert stats.significance(from_records(recs).debates, method="ring").empty


# -- Wilson -------------------------------------------------------------------------------

def test_wilson_edges_and_known_value():
    low, high = stats.wilson(0, 20)
    assert low == 0.0 and 0 < high < 0.2
    low, high = stats.wilson(20, 20)
    assert high == 1.0 and 0.8 < low < 1
    # Wilson by hand: (p + z^2/2n +- z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    z, n, p = sps.norm.ppf(0.975), 47, 33 / 47
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert stats.wilson(33, 47) == pytest.approx(((centre - half) / (1 + z * z / n),
                                                  (centre + half) / (1 + z * z / n)))
    assert stats.wilson(33, 47, alpha=0.01)[0] < stats.wilson(33, 47)[0]


def test_wilson_rejects_empty_and_impossible_counts():
    with pytest.raises(ValueError, match="n=0"):
        stats.wilson(0, 0)
    with pytest.raises(ValueError, match="k=5"):
        stats.wilson(5, 4)


# -- power --------------------------------------------------------------------------------

@pytest.mark.parametrize("b, c, expected", [(33, 14, 0.814), (40, 15, 0.938)])
def test_power_matches_the_study(b, c, expected):
    assert stats.mcnemar_power(b, c).normal == pytest.approx(expected, abs=0.005)


def test_exact_power_by_enumeration():
    b, c = 12, 2
    n, p = b + c, b / (b + c)
    # two-sided exact test of p = 1/2: reject k when 2 * min tail <= 0.05
    tail = [sum(math.comb(n, j) for j in range(0, k + 1)) / 2 ** n for k in range(n + 1)]
    reject = [k for k in range(n + 1) if min(1.0, 2 * min(tail[k], tail[n - k])) <= 0.05]
    expected = sum(math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in reject)
    result = stats.mcnemar_power(b, c)
    assert result.exact == pytest.approx(expected, rel=1e-9)
    assert result.exact < result.normal   # the discrete test is conservative here


def test_power_at_no_effect_is_alpha_and_needs_pairs():
    assert stats.mcnemar_power(10, 10).normal == pytest.approx(0.05)
    with pytest.raises(ValueError, match="b \\+ c = 0"):
        stats.mcnemar_power(0, 0)


# -- Spearman ------------------------------------------------------------------------------

def test_spearman_identical_and_reversed_rankings():
    x = [0.2, 0.5, 0.1, 0.9, 0.4]
    assert stats.spearman(x, [v * 10 for v in x])[0] == pytest.approx(1.0)
    assert stats.spearman(x, [-v for v in x])[0] == pytest.approx(-1.0)


def test_spearman_exact_permutation_p_for_few_points():
    rho, p = stats.spearman([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], permutation=True)
    assert rho == pytest.approx(1.0)
    assert p == pytest.approx(2 / 120)   # identity and reversal among 5! pairings
    # n = 8 is enumerated too (8! = 40320 pairings): no generator needed, p = 2 / 8!
    rho, p = stats.spearman(range(8), [v ** 3 for v in range(8)], permutation=True)
    assert (rho, p) == (pytest.approx(1.0), pytest.approx(2 / 40320))


def test_spearman_permutation_p_equals_brute_force_enumeration():
    x = [0.31, 0.12, 0.55, 0.47, 0.90, 0.26]
    y = [0.20, 0.18, 0.35, 0.60, 0.71, 0.05]
    rho = sps.spearmanr(x, y).statistic
    perms = [sps.spearmanr(list(p), y).statistic for p in itertools.permutations(x)]
    expected = np.mean(np.abs(perms) >= abs(rho) - 1e-12)   # null distribution is symmetric
    got_rho, got_p = stats.spearman(x, y, permutation=True)
    assert got_rho == pytest.approx(rho) and got_p == pytest.approx(expected)


def test_spearman_reproduces_the_rank_agreement_table():
    sub = compare.to_internal(compare.load_paper("main_results"))
    full = compare.to_internal(compare.load_paper("full_dataset"))
    both = full.merge(sub, on=["dataset", "model", "method"], suffixes=("_full", "_sub"))
    printed = compare.to_internal(compare.load_paper("spearman"))
    for row in printed.to_dict("records"):
        part = both[(both["dataset"] == row["dataset"]) & (both["model"] == row["model"])]
        assert len(part) == 7
        rho, p = stats.spearman(part["accuracy_sub"], part["accuracy_full"])
        assert rho == pytest.approx(row["rho"], abs=5e-4)
        assert p == pytest.approx(row["p_value"], abs=1.5e-4 if row["p_value"] < 1e-3 else 5e-4)


def test_spearman_permutation_seed_is_used():
    rng = np.random.default_rng(7)
    x, y = rng.normal(size=12), rng.normal(size=12)
    p1 = stats.spearman(x, y, permutation=True, n_resamples=500, rng=np.random.default_rng(1))[1]
    p2 = stats.spearman(x, y, permutation=True, n_resamples=500, rng=np.random.default_rng(1))[1]
    p3 = stats.spearman(x, y, permutation=True, n_resamples=500, rng=np.random.default_rng(2))[1]
    assert p1 == p2
    assert p1 != p3
    with pytest.raises(ValueError, match="rng"):
        stats.spearman(x, y, permutation=True)


# -- bootstrap -----------------------------------------------------------------------------

def _pair(n=200, seed=3):
    rng = np.random.default_rng(seed)
    return (rng.random(n) < 0.7).astype(int), (rng.random(n) < 0.6).astype(int)


def test_bootstrap_same_seed_same_interval_other_seed_other_interval():
    a, b = _pair()
    first = stats.bootstrap_diff(a, b, n_resamples=2000, rng=np.random.default_rng(11))
    again = stats.bootstrap_diff(a, b, n_resamples=2000, rng=np.random.default_rng(11))
    other = stats.bootstrap_diff(a, b, n_resamples=2000, rng=np.random.default_rng(12))
    assert first == again
    assert first[1:] != other[1:]
    assert first[0] == other[0] == pytest.approx(a.mean() - b.mean())


def test_bootstrap_interval_is_close_to_the_paired_normal_interval():
    a, b = _pair()
    diff, low, high = stats.bootstrap_diff(a, b, n_resamples=5000, rng=np.random.default_rng(0))
    d = a - b
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert low < diff < high
    assert (high - low) == pytest.approx(2 * 1.96 * se, rel=0.1)
    assert (low + high) / 2 == pytest.approx(diff, abs=0.3 * se)


def test_bootstrap_of_identical_differences_is_a_point():
    # every question differs the same way, so every resample gives the same difference
    rng = np.random.default_rng(0)
    assert stats.bootstrap_diff([1, 1, 1], [0, 0, 0], rng=rng) == (1.0, 1.0, 1.0)
    assert stats.bootstrap_diff([1, 0, 1], [1, 0, 1], rng=rng) == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="paired"):
        stats.bootstrap_diff([1, 0], [1], rng=np.random.default_rng(0))


# -- Holm ----------------------------------------------------------------------------------

def test_holm_on_a_known_vector():
    # sorted 0.005, 0.01, 0.03, 0.04 -> x4, x3, x2, x1 = 0.02, 0.03, 0.06, 0.04 -> monotone 0.06
    adjusted = stats.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted.tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])   # 2 x 0.5, then monotone
    with pytest.raises(ValueError, match="p-values"):
        stats.holm([0.1, 1.5])
