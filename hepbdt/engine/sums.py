"""Sums whose rounding does not grow with the number of terms: running sums accurate to
a few units of rounding, and exact sums that do not depend on the order of the terms.

``np.cumsum`` adds in sequence: its k-th sum can be off by up to k eps sum |w|, which at
10^8 unit weights exceeds one event. Neumaier's compensated summation carries the lost
low-order part along, so each running sum is within about 2 eps sum |w| of the exact one
(Higham, "Accuracy and Stability of Numerical Algorithms", section 4.3).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ._types import njit
from ._vmath import _float_as_bits

#: Each running sum of :func:`running_sum` is within ``RUNNING_SUM_ROUNDING * sum |w|`` of
#: the exact one (2 eps for the compensated sum, eps for its final rounding, doubled for
#: a target computed from such a sum).
RUNNING_SUM_ROUNDING = 8.0 * float(np.finfo(np.float64).eps)


@njit
def _compensated_cumsum(values: np.ndarray) -> np.ndarray:
    out = np.empty(values.size, np.float64)
    total = 0.0
    lost = 0.0
    for i in range(values.size):
        v = values[i]
        t = total + v
        if abs(total) >= abs(v):
            lost += (total - t) + v
        else:
            lost += (v - t) + total
        total = t
        out[i] = total + lost
    return out


def running_sum(values: np.ndarray) -> np.ndarray:
    """The running sums of float ``values`` (float64, like ``np.cumsum``), each within
    ``RUNNING_SUM_ROUNDING * sum |values|`` of the exact sum."""
    return _compensated_cumsum(np.ascontiguousarray(values, dtype=np.float64))


EXACT_EXP_OFFSET = 1100  # np.frexp exponents of finite float64 lie in [-1073, 1024]
EXACT_SLOTS = 2200
EXACT_HALF = 26  # a 53-bit mantissa as two halves of at most 27 bits
_MANTISSA_BITS = (1 << 52) - 1


@njit
def _exact_parts(values, where, masked, parts):
    """Adds each selected value's 53-bit integer mantissa, cut in two halves, to the
    parts of its binary exponent (as np.frexp gives them); the index of the first selected
    value that is NaN or infinite, else -1.

    Branch-free but for subnormals: a value left out adds 0, a zero adds 0 to a slot of
    its own, and four interleaved copies of the parts keep the adds of values of one
    exponent (most weights) from waiting on each other; integer sums, in any order."""
    lanes = np.zeros((4, 2, EXACT_SLOTS), np.int64)
    first = -1
    for i in range(values.size):
        x = np.float64(values[i])
        bits = _float_as_bits(x)
        field = (bits >> 52) & 0x7FF
        selected = where[i] if masked else True
        if field == 0x7FF and selected and first < 0:
            first = i
        if field == 0 and (bits & _MANTISSA_BITS) != 0:  # subnormal: frexp normalises it
            m, e = math.frexp(x)
            whole = np.int64(m * 9007199254740992.0)
        else:
            e = field - 1022
            whole = (bits & _MANTISSA_BITS) | (np.int64(field != 0) << 52)
            whole = -whole if bits < 0 else whole
        whole *= np.int64(selected)
        high = whole >> EXACT_HALF
        lane = lanes[i & 3]
        lane[0, e + EXACT_EXP_OFFSET] += high
        lane[1, e + EXACT_EXP_OFFSET] += whole - (high << EXACT_HALF)
    for k in range(4):
        for half in range(2):
            for slot in range(EXACT_SLOTS):
                parts[half, slot] += lanes[k, half, slot]
    return first


def exact_sum_parts(values: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
    """The exact sum of finite float values, as mergeable integer parts.

    (2, EXACT_SLOTS) int64: for each binary exponent e, the sums of the high and low halves
    of the 53-bit integer mantissas of the values with that exponent. Parts of two sets of
    values add (``a + b``) to the parts of their union, in any order and grouping: a sum
    that the workers of a cluster can share and that never depends on how the events were
    cut. :func:`exact_sum_of_parts` turns them into the correctly rounded float.
    ``where``: a boolean mask of the values to sum (all when None). One compiled pass, no
    temporaries. NaN or infinite values (among those selected) are refused: they have no
    mantissa to add.
    """
    v = np.ascontiguousarray(values).ravel()
    if v.dtype not in (np.float32, np.float64):
        v = v.astype(np.float64)
    mask = (np.ones(1, np.bool_) if where is None
            else np.ascontiguousarray(where, dtype=np.bool_).ravel())
    if where is not None and mask.size != v.size:
        raise ValueError(f"exact_sum_parts: a mask of {mask.size} for {v.size} values")
    parts = np.zeros((2, EXACT_SLOTS), np.int64)
    first = _exact_parts(v, mask, where is not None, parts)
    if first >= 0:
        raise ValueError(f"exact_sum_parts: the values have NaN or infinite values (first: "
                         f"{float(v[first])}); only finite values have an exact sum")
    return parts


def exact_sum_of_parts(parts: np.ndarray) -> float:
    """The correctly rounded float64 of the sum that ``parts`` (from :func:`exact_sum_parts`,
    perhaps added up) hold."""
    total = 0
    lowest = None
    for slot in np.flatnonzero(parts.any(axis=0)):
        e = int(slot) - EXACT_EXP_OFFSET - 53
        lowest = e if lowest is None else lowest
        total += ((int(parts[0, slot]) << EXACT_HALF) + int(parts[1, slot])) << (e - lowest)
    if lowest is None:
        return 0.0
    try:
        return float(Fraction(total) * Fraction(2) ** lowest)
    except OverflowError:  # beyond float64, as numpy's sum overflows
        return math.inf if total > 0 else -math.inf


def exact_sum(values: np.ndarray) -> float:
    """The sum of ``values`` rounded once to float64: the same whatever their order or the
    chunks they were summed in (NaN or infinite values: numpy's sum)."""
    v = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(v)):
        return float(np.sum(v))
    return exact_sum_of_parts(exact_sum_parts(v))


@njit
def _block(a, lo, n):
    """numpy's pairwise sum of a[lo:lo + n] for n <= 128 (``pairwise_sum`` of its float64
    loops): below 8 terms one after another from 0.0, else in eight interleaved sums."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = lo + 8
    end = lo + n - n % 8
    while i < end:
        r0 += a[i]
        r1 += a[i + 1]
        r2 += a[i + 2]
        r3 += a[i + 3]
        r4 += a[i + 4]
        r5 += a[i + 5]
        r6 += a[i + 6]
        r7 += a[i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += a[i]
        i += 1
    return res


@njit
def numpy_sum(a):
    """``np.sum`` of a contiguous float64 array, bit for bit, in compiled code: numpy adds
    0.0 and the pairwise sum, which above 128 terms sums the two halves (the first a
    multiple of 8 terms long) and adds them. The halving runs on a stack of its own (a
    recursive kernel crashes when Numba loads it from its cache). tests/test_running_sums.py
    checks it against numpy."""
    if a.size <= 128:
        return 0.0 + _block(a, 0, a.size)
    lo, size, phase = np.empty(64, np.int64), np.empty(64, np.int64), np.empty(64, np.int64)
    left = np.empty(64)
    top, value = 0, 0.0
    lo[0], size[0], phase[0] = 0, a.size, 0
    while top >= 0:
        n = size[top]
        if n <= 128:
            value = _block(a, lo[top], n)
            top -= 1
            continue
        half = n // 2
        half -= half % 8
        if phase[top] == 0:  # the first half next
            phase[top] = 1
            lo[top + 1], size[top + 1], phase[top + 1] = lo[top], half, 0
            top += 1
        elif phase[top] == 1:  # the first half's sum is in: the second half next
            left[top], phase[top] = value, 2
            lo[top + 1], size[top + 1], phase[top + 1] = lo[top] + half, n - half, 0
            top += 1
        else:
            value = left[top] + value
            top -= 1
    return 0.0 + value
