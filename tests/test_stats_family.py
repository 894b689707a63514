"""The bootstrap family and the paired effect in ``pear.analysis.stats`` (one owner each):
values pinned from the four implementations they replaced (``equal_compute``'s one-sample
bootstrap, ``counterfactual``'s unpaired one, ``studies``' guarded paired interval, the
paired tests of ``your_method``), computed on the same inputs and seeds before the change."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pear.analysis import stats


def _data():
    rng = np.random.default_rng(5)
    a = (rng.random(60) < 0.7).astype(int)
    b = (rng.random(60) < 0.55).astype(int)
    x = rng.normal(0.05, 0.3, size=40)
    return a, b, x


PAIRED = (0.15000000000000002, -0.01666666666666672, 0.31666666666666665)


def test_paired_bootstrap_interval_is_unchanged():
    a, b, _ = _data()
    assert stats.bootstrap_diff(a, b, 2000, rng=np.random.default_rng(1)) == pytest.approx(
        PAIRED, abs=1e-12)


def test_paired_effect_matches_the_paired_bootstrap_and_mcnemar():
    a, b, _ = _data()
    e = stats.paired_effect(a, b, 2000, rng=np.random.default_rng(1))
    assert (e.diff, e.low, e.high) == pytest.approx(PAIRED, abs=1e-12)
    assert e.p_exact == pytest.approx(0.13604594767093658, abs=1e-12)
    assert e.n == 60


def test_one_sample_bootstrap_is_unchanged():
    _, _, x = _data()
    got = stats.bootstrap_mean(x, 5000, rng=np.random.default_rng(2))
    assert got == pytest.approx((0.0835997114516394, -0.007410609410731393,
                                 0.17431203997452085), abs=1e-12)


def test_unpaired_bootstrap_is_unchanged():
    a, b, _ = _data()
    got = stats.bootstrap_diff_unpaired(a[:50].astype(float), b.astype(float), 5000,
                                        rng=np.random.default_rng(3))
    assert got == pytest.approx((0.16666666666666663, -0.013333333333333308,
                                 0.3466666666666667), abs=1e-12)


def test_fewer_than_two_pairs_give_no_interval_and_no_test():
    one = stats.paired_effect([1], [0], rng=np.random.default_rng(0))
    assert (one.diff, one.n) == (1.0, 1)
    assert all(math.isnan(v) for v in (one.low, one.high, one.p_exact))
    none = stats.paired_effect([], [], rng=np.random.default_rng(0))
    assert math.isnan(none.diff) and none.n == 0
    d, lo, hi = stats.bootstrap_diff_unpaired([1.0], [0.0, 1.0], rng=np.random.default_rng(0))
    assert d == 0.5 and math.isnan(lo) and math.isnan(hi)
    m, lo, hi = stats.bootstrap_mean([0.3], rng=np.random.default_rng(0))
    assert m == 0.3 and math.isnan(lo) and math.isnan(hi)
    assert stats.bootstrap_mean([0.3, 0.3], rng=np.random.default_rng(0)) == (0.3, 0.3, 0.3)


def test_paired_effect_rejects_unequal_lengths():
    with pytest.raises(ValueError, match="differ in length: 3 vs 2"):
        stats.paired_effect([1, 0, 1], [1, 0], rng=np.random.default_rng(0))


def test_seeds_change_the_intervals():
    a, b, x = _data()
    one = stats.bootstrap_mean(x, 2000, rng=np.random.default_rng(0))
    two = stats.bootstrap_mean(x, 2000, rng=np.random.default_rng(1))
    assert one[0] == two[0] and one[1:] != two[1:]


def test_two_way_bootstrap_weights_are_the_draws_the_ledger_always_made():
    # the claims ledger drew multinomial weights inline before it called bootstrap_weights
    got = stats.bootstrap_weights(7, 50, rng=np.random.default_rng(4))
    want = np.random.default_rng(4).multinomial(7, np.full(7, 1 / 7), size=50)
    assert np.array_equal(got, want)
    assert got.shape == (50, 7) and (got.sum(axis=1) == 7).all()
