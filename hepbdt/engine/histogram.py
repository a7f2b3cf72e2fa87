"""Per-node histograms of the two booster channels (A, B) and the event weight (W).

A histogram is float64 ``(n_features, N_BINS, 3)``. Each node is a ``[start, stop)`` slice of
one partition array of event indices; the per-event channels are kept in partition order
("ordered" arrays) so the inner loop reads them contiguously. Threads own features, so the
sums never depend on the number of threads.
"""

from __future__ import annotations

import numba
import numpy as np

from ._types import N_BINS, N_CHANNELS, SUM_DTYPE, njit

__all__ = ["build_histograms", "histograms_naive", "new_histograms"]


def new_histograms(n_nodes: int, n_features: int) -> np.ndarray:
    """Uninitialised histogram storage for ``n_nodes`` nodes."""
    return np.empty((n_nodes, n_features, N_BINS, N_CHANNELS), dtype=SUM_DTYPE)


@njit(parallel=True)
def _build_histograms(codes, partition, ordered_a, ordered_b, ordered_w,
                      node_start, node_stop, slots, feature_used, hists):
    n_features = codes.shape[0]
    for f in numba.prange(n_features):
        codes_f = codes[f]
        for j in range(node_start.size):
            h = hists[slots[j], f]
            h[:] = 0.0
            if not feature_used[f]:
                continue
            for k in range(node_start[j], node_stop[j]):
                c = codes_f[partition[k]]
                h[c, 0] += ordered_a[k]
                h[c, 1] += ordered_b[k]
                h[c, 2] += ordered_w[k]


def build_histograms(
    codes: np.ndarray,
    partition: np.ndarray,
    ordered_a: np.ndarray,
    ordered_b: np.ndarray,
    ordered_w: np.ndarray,
    node_start: np.ndarray,
    node_stop: np.ndarray,
    slots: np.ndarray,
    feature_used: np.ndarray,
    hists: np.ndarray,
) -> None:
    """Fill ``hists[slots[j]]`` with node j's histogram (events ``partition[start_j:stop_j]``).

    codes: (m, n) uint8; partition: (n_rows,) int32; ordered_*: (n_rows,) float32 in partition
    order; node_start/stop/slots: (k,) int; feature_used: (m,) bool (others are zeroed);
    hists: (n_slots, m, 256, 3) float64, written in place.
    """
    _build_histograms(codes, partition, ordered_a, ordered_b, ordered_w,
                      node_start, node_stop, slots, feature_used, hists)


def histograms_naive(codes: np.ndarray, rows: np.ndarray, a: np.ndarray, b: np.ndarray,
                     w: np.ndarray) -> np.ndarray:
    """Reference twin with ``np.add.at``: one node's histogram over event indices ``rows``."""
    m = codes.shape[0]
    h = np.zeros((m, N_BINS, N_CHANNELS), dtype=SUM_DTYPE)
    for f in range(m):
        c = codes[f, rows]
        for ch, v in enumerate((a, b, w)):
            np.add.at(h[f, :, ch], c, v[rows].astype(SUM_DTYPE))
    return h
