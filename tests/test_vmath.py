"""The engine's exponential and logarithm in plain arithmetic, against numpy's (the C library's)."""

from __future__ import annotations

import math
import platform
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from hepbdt.engine._vmath import exp_float32, exp_nonpositive, log_positive

ULP = np.finfo(np.float64).eps


@njit
def _exp_all(x, out):
    for i in range(x.size):
        out[i] = exp_nonpositive(x[i])


@njit
def _log_all(x, out):
    for i in range(x.size):
        out[i] = log_positive(x[i])


@njit
def _expf_both(x, ours, libm):
    for i in range(x.size):
        ours[i] = exp_float32(x[i])
        libm[i] = math.exp(x[i])  # a float32 argument: the C library's expf


def _float32_grid() -> np.ndarray:
    """Every 251st float32 bit pattern (all signs, exponents, NaNs), the extremes, and the
    inputs where glibc's fused multiply-adds decide the rounding."""
    patterns = np.arange(0, 1 << 32, 251, dtype=np.uint64).astype(np.uint32)
    special = np.array([0xC27C65D9, 0x80000000, 0, 0xFF800000, 0x7F800000, 0x42B17217,
                        0x42B17218, 0xC2CFF1B4, 0xC2CFF1B5, 0xC2CE8ED0, 0x7FC00000],
                       np.uint32)
    return np.concatenate([special, patterns]).view(np.float32)


def _glibc_with_fma() -> bool:
    cpu = Path("/proc/cpuinfo")
    flags = cpu.read_text() if cpu.exists() else ""
    name, version = platform.libc_ver()
    return (platform.machine() == "x86_64" and name == "glibc"
            and tuple(int(v) for v in version.split(".")[:2]) >= (2, 27) and " fma" in flags)


@pytest.mark.skipif(not _glibc_with_fma(), reason="compares with glibc's expf on x86-64 with "
                    "FMA (the machines the tests run on in CI); run it there")
def test_exp_float32_is_glibcs_expf_bit_for_bit():
    """The channels' exponential in plain arithmetic against the C library's expf on 17M
    float32 values (all 2^32 agree: every pattern, checked once on glibc 2.36)."""
    x = _float32_grid()
    ours, libm = np.empty_like(x), np.empty_like(x)
    _expf_both(x, ours, libm)
    same = (ours.view(np.uint32) == libm.view(np.uint32)) | (np.isnan(ours) & np.isnan(libm))
    assert np.all(same), x[~same][:5]


def test_exp_float32_within_one_unit_of_the_exact_exponential():
    """Against the exactly rounded float32 of numpy's double exponential (any platform)."""
    x = _float32_grid()
    ours, libm = np.empty_like(x), np.empty_like(x)
    _expf_both(x, ours, libm)
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.exp(x.astype(np.float64))
    finite = np.isfinite(exact) & (exact < np.finfo(np.float32).max)
    step = np.spacing(exact[finite].astype(np.float32))
    assert np.all(np.abs(ours[finite] - exact[finite]) <= step)
    assert np.all(np.isnan(ours[np.isnan(x)]))
    assert np.all(ours[np.isposinf(exact) | (exact > np.finfo(np.float32).max)] == np.inf)


def test_exp_nonpositive_within_two_units_in_the_last_place():
    rng = np.random.default_rng(0)
    edges = [0.0, -0.0, -1e-300, -5e-17, -0.5 * np.log(2), -np.log(2), -1.0, -700.0,
             -707.9999, -708.0]
    x = np.concatenate([edges, -rng.exponential(3.0, 200_000), rng.uniform(-708, 0, 200_000)])
    out = np.empty_like(x)
    _exp_all(x, out)
    expected = np.exp(x)
    assert np.all(np.abs(out - expected) <= 2 * ULP * expected)
    assert out[0] == out[1] == 1.0


def test_exp_nonpositive_below_the_normal_range_and_nan():
    x = np.array([-708.5, -745.2, -1e6, -np.inf, np.nan])
    out = np.empty_like(x)
    _exp_all(x, out)
    assert np.all(out[:4] == 0.0)  # exp is subnormal or 0 there: below 1e-307 of any sum with 1
    assert np.isnan(out[4])


def test_log_positive_within_two_units_in_the_last_place():
    rng = np.random.default_rng(1)
    edges = [1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), 2.0, np.sqrt(2.0),
             np.nextafter(np.sqrt(2.0), 2.0), 0.5, np.finfo(np.float64).tiny,
             np.finfo(np.float64).max, 1e-300, 1e300]
    x = np.concatenate([edges, 1.0 + rng.random(200_000), np.exp(rng.uniform(-700, 700, 200_000))])
    out = np.empty_like(x)
    _log_all(x, out)
    expected = np.log(x)
    # relative to |ln x|, and absolutely near x = 1 where ln x -> 0
    assert np.all(np.abs(out - expected) <= 2 * ULP * np.maximum(np.abs(expected), 1.0 / 8))
    assert out[0] == 0.0


def test_softmax_channels_round_as_the_c_library_would():
    # The channels are float32; computed with numpy's (the C library's) exp and rounded
    # once, they are the reference. The plain-arithmetic exponential may differ from it in
    # the last place of the double, which reaches a float32 only next to a rounding tie.
    from hepbdt.boosting.losses import Softmax

    rng = np.random.default_rng(2)
    n, k = 200_000, 5
    scores = rng.normal(scale=4.0, size=(k, n))
    y = rng.integers(0, k, n).astype(np.int8)  # the fit's labels and weights, as it passes them
    w = rng.gamma(2.0, 1.0, n).astype(np.float32)
    wg, wh, _ = Softmax(k, "newton").channels(y, scores, w, w)
    e = np.exp(scores - scores.max(axis=0))
    p = e / e.sum(axis=0)
    expected_g = (w * (p - (np.arange(k)[:, None] == y))).astype(np.float32)
    expected_h = (w * np.maximum(k / (k - 1) * p * (1 - p), 1e-16)).astype(np.float32)
    for got, expected in ((wg, expected_g), (wh, expected_h)):
        assert np.mean(got == expected) > 0.9999
        assert np.all(np.abs(got - expected) <= np.spacing(np.abs(expected)))


def test_log_positive_keeps_nan_and_inf():
    # Their bits read as a number would give about 710: a diverged loss must stay NaN or inf.
    out = np.empty(2)
    _log_all(np.array([np.nan, np.inf]), out)
    assert np.isnan(out[0]) and out[1] == np.inf


def test_a_loss_of_non_finite_scores_is_not_finite():
    from hepbdt.boosting.losses import Logistic, Softmax

    y = np.array([0, 1, 2, 1], np.int8)  # the fit's labels and weights, as it passes them
    w = np.ones(4, np.float32)
    scores = np.zeros((3, 4))
    scores[1, 2] = np.nan
    assert np.isnan(Softmax(3, "newton").loss(y, w, scores))
    assert np.isnan(Softmax(3, "newton").channels(y, scores, w, w)[2])
    score = np.array([0.0, np.nan, 1.0, -1.0])
    assert np.isnan(Logistic().channels((y > 0).astype(np.int8), score, w, w)[2])
