"""Events of weight 0 in what the evaluation prints: an event of weight k counts as k
copies, so one of weight 0 is no event. The references are the same events without the
rows of weight 0, or counts of the events of non-zero weight made here with numpy
(defects of a weights-as-copies audit, 2026-12-05)."""

from __future__ import annotations

import numpy as np

from hepbdt.evaluation import significance_scan


def _interleaved(n: int = 3000, seed: int = 1):
    """Two classes with integer weights 1-5 and 15 % of the events at weight 0 among them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.8 * y[:, None]
    w = rng.integers(1, 6, n).astype(float)
    w[rng.random(n) < 0.15] = 0.0
    return X, y, w


def test_other_half_does_not_count_events_of_weight_zero() -> None:
    # the halves took every other event, those of weight 0 included: S/sqrt(B) 78.21
    # where the same events without them give 79.27
    X, y, w = _interleaved()
    s = np.round(X[:, 0] + 0.5 * X[:, 1], 1)
    kept = w != 0
    padded = significance_scan(y, s, w).other_half
    plain = significance_scan(y[kept], s[kept], w[kept]).other_half
    assert padded == plain
    assert all(np.isfinite(v) for v in plain.values())
