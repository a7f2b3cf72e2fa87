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
from decimal import Decimal, localcontext

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ._types import njit

__all__ = ["exp_float32", "exp_nonpositive", "log_positive"]


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


@intrinsic
def _fma(typingctx, a, b, c):
    """a b + c with one rounding (LLVM's fma: the instruction where the CPU has one)."""
    if not all(t == types.float64 for t in (a, b, c)):
        return None

    def codegen(context, builder, signature, args):
        return builder.fma(*args)

    return types.float64(a, b, c), codegen


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


def _exp2_table(n: int) -> np.ndarray:
    """bits(2^(i/n)) - (i << 52 - log2 n), i < n (n a power of two), of the correctly
    rounded 2^(i/n): adding k << 52 - log2 n to entry k % n gives the bits of 2^(k/n) for
    any integer k. From 40-digit decimals (repeated square roots, then integer powers: 0.1
    ms at import, where fractional decimal powers took 2.6)."""
    shift = 52 - (n.bit_length() - 1)
    with localcontext() as context:
        context.prec = 40
        root = Decimal(2)
        for _ in range(n.bit_length() - 1):
            root = root.sqrt()
        powers = [float(root**i) for i in range(n)]
    bits = np.array(powers).view(np.int64)
    return bits - (np.arange(n, dtype=np.int64) << shift)


# glibc's expf (2.27 and later: 2^(k/32) from a table times a cubic in the remainder),
# its constants, and the fused multiply-adds of its x86-64 FMA build.
_EXPF_TABLE = _exp2_table(32)
_EXPF_INV_LN2 = float.fromhex("0x1.71547652b82fep+0") * 32
_EXPF_SHIFT = float.fromhex("0x1.8p+52")
_EXPF_C0 = float.fromhex("0x1.c6af84b912394p-5") / 32**3
_EXPF_C1 = float.fromhex("0x1.ebfce50fac4f3p-3") / 32**2
_EXPF_C2 = float.fromhex("0x1.62e42ff0c52d6p-1") / 32
_EXPF_OVERFLOW = float.fromhex("0x1.62e42ep6")  # above: inf
_EXPF_UNDERFLOW = float.fromhex("-0x1.9fe368p6")  # below: 0


@njit(inline="always")
def exp_float32(x):
    """exp of a float32 as a float32, bit for bit what glibc's ``expf`` returns on an x86-64
    CPU with FMA (the single-precision exponential the models' channels were always
    computed with): the same steps in plain arithmetic, so loops of it vectorise, and the
    same result on every machine and C library (tests/test_vmath.py compares it with the C
    library's on a grid of float32 values; all 2^32 agree on glibc 2.36)."""
    xd = np.float64(x)
    kd = _fma(_EXPF_INV_LN2, xd, _EXPF_SHIFT)  # round(x 32 / ln 2) in the low bits
    ki = _float_as_bits(kd)
    kd -= _EXPF_SHIFT
    r = _fma(_EXPF_INV_LN2, xd, -kd)
    s = _bits_as_float(_EXPF_TABLE[ki & 31] + (ki << 47))
    y = _fma(_fma(_EXPF_C0, r, _EXPF_C1), r * r, _fma(_EXPF_C2, r, 1.0)) * s
    y = np.inf if xd > _EXPF_OVERFLOW else y
    y = 0.0 if xd < _EXPF_UNDERFLOW else y
    return np.float32(xd + xd if xd != xd else y)


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
