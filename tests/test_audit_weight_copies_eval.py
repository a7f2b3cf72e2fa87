"""Events of weight 0 in what the evaluation prints: an event of weight k counts as k
copies, so one of weight 0 is no event. The references are the same events without the
rows of weight 0, or counts of the events of non-zero weight made here with numpy
(defects of a weights-as-copies audit, 2026-12-05)."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.evaluation import (
    per_class_permutation_importance,
    permutation_importance,
    significance_scan,
)
from hepbdt.evaluation.metrics import split_yields


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


def _model_and_outliers(classes: int):
    X, y, w = _interleaved(2000, seed=2 + classes)
    y = y if classes == 2 else np.random.default_rng(0).integers(0, classes, y.size)
    model = BDTClassifier(n_trees=5, max_depth=2, random_state=0).fit(X, y, sample_weight=w)
    X = X.copy()
    X[w == 0, :2] = 50.0  # no event: its values must never stand in for an event's
    return model, X, y, w


def test_permutation_importance_does_not_shuffle_in_events_of_weight_zero() -> None:
    # a shuffle gave the weighted events the values of those of weight 0 (x0 and x1 at 50)
    model, X, y, w = _model_and_outliers(2)
    kept = w != 0
    padded = permutation_importance(model, X, y, w, n_repeats=3, random_state=4)
    plain = permutation_importance(model, X[kept], y[kept], w[kept], n_repeats=3,
                                   random_state=4)
    np.testing.assert_array_equal(padded.importances, plain.importances)
    assert padded.n_events == np.count_nonzero(w)


def test_per_class_permutation_importance_does_not_shuffle_in_events_of_weight_zero() -> None:
    model, X, y, w = _model_and_outliers(3)
    kept = w != 0
    padded = per_class_permutation_importance(model, X, y, w, n_repeats=2, random_state=4)
    plain = per_class_permutation_importance(model, X[kept], y[kept], w[kept], n_repeats=2,
                                             random_state=4)
    for a, b in zip(padded, plain, strict=True):
        np.testing.assert_array_equal(a.importances, b.importances)


def test_split_yields_do_not_count_events_of_weight_zero() -> None:
    # each group's factor is its events / its test events, both of non-zero weight
    rng = np.random.default_rng(5)
    n = 3000
    sample, label = rng.integers(0, 3, n), rng.integers(0, 2, n)
    w = rng.integers(1, 6, n).astype(float)
    w[rng.random(n) < 0.2] = 0.0
    test = rng.random(n) < 0.5
    w[test & (sample == 2) & (label == 1)] = 0.0  # a group none of whose test events counts
    yields = split_yields(sample[test], label[test], sample[~test], label[~test],
                          test_weight=w[test], other_weight=w[~test])
    counted = w != 0
    for g in yields.groups:
        mine = (sample == g.sample) & (label == g.label) & counted
        assert (g.n_events, g.n_test) == (mine.sum(), (mine & test).sum())
    assert [(g.sample, g.label) for g in yields.missing] == [(2, 1)]
    for k in np.flatnonzero(counted[test]):
        mine = (sample == sample[test][k]) & (label == label[test][k]) & counted
        assert yields.scale[k] == pytest.approx(mine.sum() / (mine & test).sum(), rel=1e-15)
    assert np.all(yields.scale > 0)  # the weight-0 events of group (2, 1) get a factor too
    # the summed yield of what passes any cut is that of the same events without weight 0
    plain = split_yields(sample[test & counted], label[test & counted],
                         sample[~test & counted], label[~test & counted])
    np.testing.assert_array_equal(yields.scale[counted[test]], plain.scale)
