"""Running sums accurate to a few units of rounding, whatever the number of terms.

``np.cumsum`` adds in sequence: its k-th sum can be off by up to k eps sum |w|, which at
10^8 unit weights exceeds one event. Neumaier's compensated summation carries the lost
low-order part along, so each running sum is within about 2 eps sum |w| of the exact one
(Higham, "Accuracy and Stability of Numerical Algorithms", section 4.3).
"""

from __future__ import annotations

import numpy as np

from ._types import njit

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
