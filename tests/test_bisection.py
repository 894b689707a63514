"""The populations' one solver (pear.populations.bisection): where an increasing function reaches
a target, by a fixed count of halvings; on a step function (a simulation at fixed seeds) it
gives what the hand-written loops it replaced gave, and a bad bracket is one clear error."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pear.populations.bisection import increasing_root


def _old_loop(f, target, lo, hi, steps):  # the loop twin, published_gains and
    for _ in range(steps):                # published_collapse each spelled out before
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def test_a_smooth_root_to_the_bracket_s_precision():
    assert increasing_root(math.tanh, 0.5, -40.0, 40.0, 50) == pytest.approx(math.atanh(0.5),
                                                                             abs=1e-12)


@pytest.mark.parametrize("target", [0.1, 0.37, 0.5, 0.93])
def test_a_step_function_gives_the_old_loops_value(target):
    steps = np.sort(np.random.default_rng(3).uniform(size=40))
    f = lambda x: float(np.searchsorted(steps, x)) / len(steps)  # noqa: E731 - piecewise constant
    for lo, hi, n in ((0.02, 0.98, 12), (-4.0, 6.0, 10), (0.0, 8.0, 30)):
        assert increasing_root(f, target, lo, hi, n) == _old_loop(f, target, lo, hi, n)


def test_without_a_crossing_it_ends_at_an_edge():
    assert increasing_root(lambda x: 0.0, 1.0, 0.0, 1.0, 20) == pytest.approx(1.0, abs=1e-5)
    assert increasing_root(lambda x: 2.0, 1.0, 0.0, 1.0, 20) == pytest.approx(0.0, abs=1e-5)


@pytest.mark.parametrize("lo, hi, steps, needle", [(1.0, 1.0, 5, "invalid bracket"),
                                                   (2.0, 1.0, 5, "invalid bracket"),
                                                   (0.0, 1.0, 0, "invalid steps=0"),
                                                   (0.0, 1.0, 2.5, "invalid steps=2.5")])
def test_a_bad_bracket_or_count_is_one_clear_error(lo, hi, steps, needle):
    with pytest.raises(ValueError, match=needle):
        increasing_root(lambda x: x, 0.5, lo, hi, steps)
