"""Exponential and logarithm in plain arithmetic, so that loops calling them vectorise.

Numba compiles ``math.exp`` and ``math.log`` to calls of the C library (pip's llvmlite
has no vector math library), one event at a time. These take the same steps as a libm
(range reduction by powers of two, a short polynomial) with the float's bits read and
written through LLVM bitcasts, which vector units do lane by lane: a loop of them runs
several events an instruction. Both are within a few units in the last place of the
correctly rounded result (tests/test_vmath.py checks them against numpy's).
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._types import njit

__all__ = ["exp_nonpositive", "log_positive"]


@intrinsic
def _bits_as_float(typingctx, bits):
    """The float64 whose bit pattern is the int64 ``bits``."""
    if not isinstance(bits, types.Integer) or bits.bitwidth != 64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(bits), codegen


@intrinsic
def _float_as_bits(typingctx, x):
    """The int64 holding the bit pattern of the float64 ``x``."""
    if x != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(x), codegen


_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts: LN2_HI times a small integer is exact
_LN2_LO = 1.90821492927058770002e-10
_LOG2E = 1.4426950408889634
_ROUNDER = 6755399441055744.0  # 1.5 x 2^52: adding it rounds to an integer, held in the low bits
_ROUNDER_BITS = 0x4338000000000000
_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_BITS = 0x3FF0000000000000
_SQRT2 = 1.4142135623730951
_MAX_FINITE = 1.7976931348623157e308
_EXP_FLOOR = -708.0  # below it exp(x) is subnormal; returned as 0 (relative size < 1e-307)
# exp(r), |r| <= ln(2) / 2: the Taylor series to r^13 (the next term is below 4e-18 of it)
_EXP_SERIES = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
# (atanh(s) / s - 1) / s^2 = 1/3 + s^2/5 + ..., to s^20 (|s| <= 0.1716)
_ATANH_SERIES = tuple(1.0 / (2 * k + 1) for k in range(11, 0, -1))


@njit(inline="always")
def _horner(coefficients, x):
    """The polynomial of ``coefficients`` (highest power first) at x."""
    p = coefficients[0]
    for c in coefficients[1:]:
        p = p * x + c
    return p


@njit(inline="always")
def exp_nonpositive(x: float) -> float:
    """exp(x) for x <= 0 (0 below -708, where it is subnormal); a NaN gives NaN."""
    low = x < _EXP_FLOOR
    x = _EXP_FLOOR if low else x
    t = x * _LOG2E + _ROUNDER
    k = _float_as_bits(t) - _ROUNDER_BITS  # round(x / ln 2)
    kf = t - _ROUNDER
    r = (x - kf * _LN2_HI) - kf * _LN2_LO  # |r| <= ln(2) / 2
    p = _horner(_EXP_SERIES, r)
    scale = _bits_as_float((k + 1023) << 52)  # 2^k, k >= -1022 here
    return 0.0 if low else p * scale


@njit(inline="always")
def log_positive(x: float) -> float:
    """ln(x) for a positive normal x; NaN and +inf give themselves (a loss that is not a
    number must stay one)."""
    bits = _float_as_bits(x)
    k = (bits >> 52) - 1023
    m = _bits_as_float((bits & _MANTISSA) | _ONE_BITS)  # x = 2^k m, 1 <= m < 2
    big = m > _SQRT2
    m = 0.5 * m if big else m
    k = k + 1 if big else k
    kf = _bits_as_float(k + _ROUNDER_BITS) - _ROUNDER  # k as a float, exactly
    s = (m - 1.0) / (m + 1.0)  # |s| <= 0.1716; ln m = 2 atanh(s)
    s2 = s * s
    q = _horner(_ATANH_SERIES, s2)
    result = kf * _LN2_HI + (2.0 * s + (2.0 * s * s2 * q + kf * _LN2_LO))
    return result if x <= _MAX_FINITE else x
