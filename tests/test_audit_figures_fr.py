"""Audit FR (2026-12-05): documented figures against what the code measures today."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import hepbdt
import hepbdt.engine.grower as grower
from hepbdt.binned import BinnedMatrix


def _lean_fit_peak(n: int) -> int:
    """tracemalloc's peak of a lean newton fit (no feature-major copy) of n x 28 codes."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 254, (n, 28), dtype=np.uint8)
    X = BinnedMatrix(codes, [np.arange(253, dtype=np.float32)] * 28)
    y = (codes[:, 0].astype(np.int64) + codes[:, 1] + rng.integers(0, 200, n) > 330)
    y = y.astype(np.int32)
    w = rng.gamma(4.0, 0.25, n).astype(np.float32)
    model = hepbdt.BDTClassifier(boosting="newton", n_trees=2, max_depth=6)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    model.fit(X, y, w)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - before


def test_lean_fit_holds_no_float64_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """README's fit memory (bench_fit_memory.py): beyond fixed buffers a lean fit holds
    packed channels (8), scores (8), partition and scratch (8), float32 weights (4) and
    labels (1) an event; the float64 weights held through the trees made it 8 more."""
    monkeypatch.setattr(grower, "COLUMN_COPY_BYTES", 0)
    _lean_fit_peak(60_000)  # compile outside the measurement
    per_event = (_lean_fit_peak(400_000) - _lean_fit_peak(200_000)) / 200_000
    assert per_event < 29 + 2, per_event
