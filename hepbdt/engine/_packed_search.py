"""The split search of packed histograms, each feature's bins decoded where they are scanned.

``Quantiser.decode`` turns a level's packed int64 histograms into float64 (A, B, B) sums,
and ``split._find_best_splits`` then reads them back: at 32 nodes x 28 features that is
5.5 MB written and read again, and a parallel launch, a level. Here each (node, feature)
job decodes its 256 bins into a buffer of its own (4 kB, in the L1 cache) with
``histogram``'s arithmetic and scans it with ``split._scan_channels``: the same sums, the
same gains, the same splits, bit for bit. The buffer holds A and B as two arrays (B is
also W), so the decoding's divisions vectorise and stay out of the scan's serial loop of
cumulative sums.
"""

from __future__ import annotations

import numba
import numpy as np

from ._types import N_BINS, N_CHANNELS, launch_lock, njit, serial_twin
from .histogram import decode_channels
from .split import _best_of_features, _feature_results, _scan_channels

__all__ = ["find_best_packed_splits"]

# (node, feature) jobs that share one thread's buffers: four allocations of a block cost
# less than the three of each job did (about 60 ns each, 10 us of a 56-job search), and
# the two children of a leaf-wise split still make 14 blocks to share between threads.
JOB_BLOCK = 4


@njit(parallel=True)
def _find_best_packed(raw, slots, scale_a, scale_b, node_sums, feature_allowed,
                      n_value_bins, criterion, reg_lambda, reg_alpha, min_child_hessian,
                      min_child_weight, min_split_gain, out_gain, out_feature, out_bin,
                      out_missing_left, out_left):
    m = n_value_bins.size
    gains, bins, missing, left = _feature_results(slots.size, m, N_CHANNELS)
    n_jobs = slots.size * m
    for block in numba.prange(-(-n_jobs // JOB_BLOCK)):  # buffers made once a block
        h = np.empty((2, N_BINS))
        cum = np.empty((4, N_BINS))
        at = np.empty(N_BINS, np.int64)
        for job in range(block * JOB_BLOCK, min(n_jobs, (block + 1) * JOB_BLOCK)):
            j = job // m
            f = job % m
            if not feature_allowed[j, f]:
                continue
            decode_channels(raw[slots[j], f].reshape(N_BINS, -1), scale_a, scale_b, h[0],
                            h[1])
            g, b, ml = _scan_channels(h[0], h[1], None, n_value_bins[f], node_sums[j, 0],
                                      node_sums[j, 1], node_sums[j, 2], criterion,
                                      reg_lambda, reg_alpha, min_child_hessian,
                                      min_child_weight, min_split_gain, cum, at, left[j, f])
            gains[j, f] = g
            bins[j, f] = b
            missing[j, f] = ml
    _best_of_features(gains, bins, missing, left, out_gain, out_feature, out_bin,
                      out_missing_left, out_left)


_find_best_packed_1 = serial_twin(_find_best_packed)


def find_best_packed_splits(raw: np.ndarray, slots: np.ndarray, scale_a: float,
                            scale_b: float, node_sums: np.ndarray, feature_allowed: np.ndarray,
                            n_value_bins: np.ndarray, params: tuple,
                            outputs: tuple | None = None) -> tuple[np.ndarray, ...]:
    """``split.find_best_splits`` of the packed histograms ``raw[slots]`` (int64 (.., m, 256),
    wide: (.., m, 256, 2)) decoded with the quantiser's ``scale_a``, ``scale_b``; ``params``:
    ``SplitParams.as_tuple()``; ``outputs``: the five arrays to fill (new when None)."""
    k = slots.size
    if outputs is None:
        outputs = (np.empty(k), np.empty(k, np.int32), np.zeros(k, np.int32),
                   np.zeros(k, np.bool_), np.zeros((k, N_CHANNELS)))
    with launch_lock():
        _find_best_packed(raw, np.asarray(slots, np.int64), scale_a, scale_b, node_sums,
                          feature_allowed, n_value_bins, *params, *outputs)
    return outputs
