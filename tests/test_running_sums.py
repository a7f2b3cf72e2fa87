"""Quantiles and cuts at a target weight fraction, against exact (Fraction) sums.

The running sums' rounding allowance was n eps sum |w|: more than one event's weight past
6.7e7 unit weights, or with one heavy weight among light ones at any size. These cases put
a heavy event below light ones, so that the allowance covers several light events.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from hepbdt._util import weighted_quantile
from hepbdt.engine.sums import (
    RUNNING_SUM_ROUNDING,
    exact_sum_of_parts,
    exact_sum_parts,
    numpy_sum,
    running_sum,
)
from hepbdt.evaluation import background_rejection_at
from hepbdt.evaluation.decorrelation import threshold_at_efficiency

HEAVY = 1e13
N_LIGHT = 1000


def _exact_quantile(values: np.ndarray, w: np.ndarray, q: float) -> float:
    """The smallest value at which the exact summed weight reaches q times the total."""
    order = np.argsort(values, kind="stable")
    target = Fraction(q) * sum(Fraction(x) for x in w)
    running = Fraction(0)
    for i in order:
        running += Fraction(w[i])
        if running >= target:
            return float(values[i])
    return float(values[order[-1]])


def test_running_sum_is_within_its_stated_rounding_of_the_exact_sums():
    rng = np.random.default_rng(3)
    x = rng.normal(size=20_000) * 10.0 ** rng.uniform(-8, 8, 20_000)
    exact = np.array([math.fsum(x[:k + 1]) for k in range(0, x.size, 997)])
    got = running_sum(x)[::997]
    assert np.all(np.abs(got - exact) <= RUNNING_SUM_ROUNDING * np.abs(x).sum())
    plain = np.cumsum(x)[::997]  # what the bound is for: the plain sum drifts further
    assert np.max(np.abs(plain - exact)) > np.max(np.abs(got - exact))


@pytest.mark.parametrize("light", [500, 501, 737])
def test_a_heavy_weight_does_not_move_the_quantile_among_light_ones(light):
    values = np.arange(N_LIGHT + 1, dtype=np.float64)
    w = np.ones(N_LIGHT + 1)
    w[0] = HEAVY
    q = (HEAVY + light - 0.5) / (HEAVY + N_LIGHT)  # the target halfway into an event
    assert weighted_quantile(values, w, q) == _exact_quantile(values, w, q) == light


def test_a_heavy_weight_does_not_move_the_cut_at_an_efficiency():
    score = np.arange(N_LIGHT + 1, dtype=np.float64)  # the heavy event scores lowest
    w = np.ones(N_LIGHT + 1)
    w[0] = HEAVY
    efficiency = 499.5 / (HEAVY + N_LIGHT)  # 500 light events reach it, 499 do not
    # the highest cut score >= t keeping at least that fraction of the exact total
    total = sum(Fraction(x) for x in w)
    best = max(t for t in score if sum(Fraction(x) for x in w[score >= t])
               >= Fraction(efficiency) * total)
    assert threshold_at_efficiency(score, w, efficiency) == best == 501


def test_a_heavy_weight_does_not_let_a_cut_short_of_the_efficiency_count():
    signal = np.arange(N_LIGHT + 1, dtype=np.float64)
    w_signal = np.ones(N_LIGHT + 1)
    w_signal[0] = HEAVY
    target = 499.5 / (HEAVY + N_LIGHT)  # reached by the cut at 501 (500 light events), not 502
    # background events just above the cut that reaches the target, below the cuts that do not
    background = np.array([501.5, 502.5, 503.5, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0])
    y = np.r_[np.ones(signal.size), np.zeros(background.size)]
    score = np.r_[signal, background]
    w = np.r_[w_signal, np.ones(background.size)]
    rejection = background_rejection_at(y, score, w, target)[0]
    assert rejection == pytest.approx(0.7)  # a cut at 501 or below keeps the 3 above it


def _frexp_parts(values: np.ndarray) -> np.ndarray:
    """The parts by numpy's frexp and np.add.at: each 53-bit mantissa's two halves."""
    parts = np.zeros((2, 2200), np.int64)
    mantissa, exponent = np.frexp(values.astype(np.float64))
    whole = (mantissa * 2.0**53).astype(np.int64)
    high = whole >> 26
    np.add.at(parts[0], exponent + 1100, high)
    np.add.at(parts[1], exponent + 1100, whole - (high << 26))
    return parts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exact_sum_parts_are_numpys_frexp_halves(dtype):
    rng = np.random.default_rng(3)
    top = 300 if dtype == np.float64 else 36
    v = (rng.standard_normal(20_000) * 10.0 ** rng.integers(-top, top, 20_000)).astype(dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    v[:8] = [0.0, -0.0, tiny, -tiny, 3 * tiny, np.finfo(dtype).tiny, -np.finfo(dtype).max, 1.0]
    mask = rng.random(v.size) < 0.3
    assert np.array_equal(exact_sum_parts(v), _frexp_parts(v))
    assert np.array_equal(exact_sum_parts(v, mask), _frexp_parts(v[mask]))
    exact = sum((Fraction(float(x)) for x in v[mask]), Fraction(0))
    assert exact_sum_of_parts(exact_sum_parts(v, mask)) == float(exact)
    v[[5, 900, 4000]] = [np.inf, np.nan, -np.inf]
    mask[[5, 900, 4000]] = [False, True, True]
    with pytest.raises(ValueError, match=r"first: nan\)"):  # the first one selected
        exact_sum_parts(v, mask)


def test_numpy_sum_adds_as_numpy_does():
    # The compiled rounds compute the losses numpy's sums give the tree-by-tree loop: every
    # length up to 300 (each branch of the pairwise sum and its boundaries 8, 128, 129) and
    # longer ones, values over 40 orders of magnitude and signed zeros, bit for bit.
    rng = np.random.default_rng(5)
    for n in [*range(300), 1000, 1023, 1024, 1025, 4097, 65_537, 300_001]:
        for kind in range(3):
            a = rng.normal(size=n) * (np.exp(rng.normal(size=n) * 10) if kind else 1.0)
            if kind == 2:
                a[rng.random(n) < 0.3] = -0.0
            assert np.float64(numpy_sum(a)).tobytes() == np.sum(a).tobytes(), (n, kind)
