"""Event weights are frequency weights: a weight of 0 is no event, and a constant scale
of the weights changes nothing that the documentation does not name (newton's absolute
penalties). The references are the same events without their zero-weight rows, or with
unit weights, fitted and evaluated alike (defects of an audit, 2026-12-03)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.boosting._loop import _draw, drawn_events
from hepbdt.boosting.negative_weights import pair_class_weights
from hepbdt.engine.binning import fit_bin_edges
from hepbdt.evaluation import separation


@pytest.mark.parametrize("scale", [3.0, 0.1, 1e-12])
def test_bin_edges_do_not_move_with_the_weight_scale(scale: float) -> None:
    # 40 values into 4 quantile bins: the targets 10, 20, 30 fall on running sums; weights
    # of 0.1 summed to just below them and moved the edges by one value
    X = np.arange(40, dtype=np.float32).reshape(-1, 1)
    ones = fit_bin_edges(X, np.ones(40), max_bins=4)[0]
    np.testing.assert_array_equal(ones, [9.5, 19.5, 29.5])
    np.testing.assert_array_equal(fit_bin_edges(X, np.full(40, scale), max_bins=4)[0], ones)


def test_a_gradient_model_does_not_move_with_the_weight_scale() -> None:
    # the edges saw float32 weights, whose rounding of 0.3 against 3 x 0.1 broke a tie
    rng = np.random.default_rng(17)
    X = rng.integers(0, 60, size=(600, 1)).astype(np.float32)
    y = ((X[:, 0] + rng.normal(size=600) * 10) > 30).astype(int)
    w = rng.integers(0, 4, size=600).astype(float)
    options = dict(n_trees=5, max_depth=2, max_bins=8, min_node_size=0.0, random_state=0)
    one = BDTClassifier(**options).fit(X, y, sample_weight=w)
    tenth = BDTClassifier(**options).fit(X, y, sample_weight=0.1 * w)
    for a, b in zip(one.bin_edges_, tenth.bin_edges_, strict=True):
        np.testing.assert_array_equal(a, b)
    xs = np.arange(60, dtype=np.float32).reshape(-1, 1)
    np.testing.assert_allclose(one.decision_function(xs), tenth.decision_function(xs),
                               rtol=0, atol=1e-6)


def _with_zero_rows(X, y, w, n_zero=200, seed=5):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n_zero, X.shape[1])).astype(X.dtype)
    return (np.r_[X, Z], np.r_[y, rng.integers(0, 2, n_zero)], np.r_[w, np.zeros(n_zero)])


def test_auto_trees_do_not_count_events_of_weight_zero() -> None:
    # 900 events and 200 of weight zero: "auto" held out and stopped early, as for 1,100
    rng = np.random.default_rng(3)
    X = rng.normal(size=(900, 3))
    y = (X[:, 0] + rng.normal(size=900) > 0).astype(int)
    options = dict(max_depth=3, random_state=0, min_node_size=0.0)
    plain = BDTClassifier(**options).fit(X, y, event=np.arange(900))
    Xz, yz, wz = _with_zero_rows(X, y, np.ones(900))
    padded = BDTClassifier(**options).fit(Xz, yz, sample_weight=wz,
                                          event=np.r_[np.arange(900), 10_000 + np.arange(200)])
    assert plain.n_trees_ == padded.n_trees_ and "fixed count" in padded.n_trees_reason_
    np.testing.assert_array_equal(plain.decision_function(X), padded.decision_function(X))


def test_auto_node_size_does_not_count_events_of_weight_zero() -> None:
    # min_node_size="auto" (gradient under n_trees="auto") is the share of 20 events: 3,000
    # events and 3,000 of weight zero halved it (scores off by 0.72; the auto-trees audit)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] * X[:, 2] + rng.normal(size=3000) > 0).astype(int)
    options = dict(max_depth=5, learning_rate=0.3, random_state=0)
    plain = BDTClassifier(**options).fit(X, y, event=np.arange(3000))
    Xz, yz, wz = _with_zero_rows(X, y, np.ones(3000), n_zero=3000)
    padded = BDTClassifier(**options).fit(Xz, yz, sample_weight=wz,
                                          event=np.r_[np.arange(3000), 10**6 + np.arange(3000)])
    assert padded.min_node_size_ == plain.min_node_size_ > 0
    assert padded.n_trees_ == plain.n_trees_
    np.testing.assert_array_equal(padded.decision_function(X), plain.decision_function(X))


@pytest.mark.parametrize("mode", ["uniform", "poisson", "weighted"])
def test_a_draw_counts_its_events_of_non_zero_weight(mode: str) -> None:
    # a subsampled tree's "auto" floor is the share of 20 of its drawn events: each drawn
    # event with its multiplicity, those of weight 0 (drawn by a uniform or poisson draw)
    # not at all
    w = np.tile([1.0, 0.0, 2.0, 0.0], 250)
    rows, _, counts = _draw(w, 0.6, mode, np.random.default_rng(1))
    expected = (np.count_nonzero(w[rows]) if counts is None
                else sum(int(c) for c, x in zip(counts, w, strict=True) if x != 0))
    total = rows.size if counts is None else int(counts.sum())
    assert drawn_events(rows, counts, w) == expected
    assert expected == total if mode == "weighted" else expected < total  # |w| draws no 0
    if mode == "weighted":  # a fraction of the 500 events: the 500 rows of weight 0 drew too
        assert total == round(0.6 * 500)


def test_the_class_ratio_counts_events_of_non_zero_weight() -> None:
    # newton's reg_lambda and min_child_weight are absolute, so the normalised weights' total
    # (the number of events) shows in the model: zero-weight rows changed it by 0.6
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=3000) > 0.5).astype(int)
    w = rng.uniform(0.5, 2.0, size=3000)
    options = dict(boosting="newton", n_trees=20, max_depth=3, sig_to_bkg_fraction=1.0,
                   random_state=0)
    plain = BDTClassifier(**options).fit(X, y, sample_weight=w)
    padded = BDTClassifier(**options).fit(*_with_zero_rows(X, y, w))
    np.testing.assert_allclose(plain.decision_function(X), padded.decision_function(X),
                               rtol=0, atol=1e-6)


def test_pairing_does_not_standardise_with_events_of_weight_zero() -> None:
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (rng.random(n) < 0.5).astype(int)
    w = rng.integers(0, 4, size=n).astype(float)
    negative = rng.random(n) < 0.15
    w[negative] = -rng.integers(1, 3, size=negative.sum())
    kept = w != 0
    np.testing.assert_array_equal(pair_class_weights(X, y, w)[kept],
                                  pair_class_weights(X[kept], y[kept], w[kept]))


def test_separation_bins_span_the_scores_of_non_zero_weight() -> None:
    rng = np.random.default_rng(1)
    y = (rng.random(3000) < 0.4).astype(int)
    s = rng.normal(size=3000) + y
    w = rng.integers(1, 4, size=3000).astype(float)
    padded = separation(np.r_[y, 0, 1], np.r_[s, 40.0, -40.0], np.r_[w, 0.0, 0.0])
    assert padded == separation(y, s, w)


def test_a_first_tree_that_grows_the_loss_warns() -> None:
    # pseudo-Huber Newton steps, residuals of 30 against huber_delta 1 and weights of 100:
    # a 28-fold training loss after the first tree, predictions of -7168 for a 100-400 target
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (5000, 3)).astype(np.float32)
    y = 100 + 300 * X[:, 0] + rng.normal(0, 30, 5000)
    w = rng.uniform(50, 150, 5000)
    options = dict(boosting="newton", loss="huber", n_trees=3, random_state=0)
    with pytest.warns(UserWarning, match="after 1 tree the training loss") as record:
        BDTRegressor(**options).fit(X, y, sample_weight=w)
    assert record[0].filename == __file__  # the caller's line, not hepbdt's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BDTRegressor(**options).fit(X, y, sample_weight=0.01 * w)  # steps that converge


@pytest.mark.parametrize("scale", [1e-7, 0.1, 3.0])
def test_a_weighted_draw_weighs_its_counts_in_a_power_of_two(scale: float) -> None:
    """draw_sample's weighted draw: each drawn event weighs its count times sign(w) times
    the power of two at or below the draw's mean |w| (exact fractions); draw_rows' the mean
    itself, so that the total |w| is kept."""
    from fractions import Fraction

    from hepbdt.boosting._loop import draw_rows, draw_sample

    w = np.tile([1.0, -0.5, 2.5, 0.75, 0.0], 200) * scale
    _, wt, counts = draw_sample(w, 0.4, "weighted", np.random.default_rng(3))
    mean = Fraction(math.fsum(np.abs(w))) / int(counts.sum())
    unit = Fraction(2) ** (mean.numerator.bit_length() - mean.denominator.bit_length())
    unit = unit if unit <= mean else unit / 2  # the power of two at or below the mean
    assert unit <= mean < 2 * unit
    assert [Fraction(float(v)) for v in wt] == [c * int(np.sign(x)) * unit
                                                for c, x in zip(counts, w, strict=True)]
    _, wt_rows = draw_rows(w, 0.4, "weighted", np.random.default_rng(3))
    assert math.fsum(np.abs(wt_rows)) == pytest.approx(math.fsum(np.abs(w)), rel=1e-6)


def test_a_uniform_draw_takes_its_fraction_without_replacement() -> None:
    """subsample_mode='uniform': round(subsample x n) distinct events, sorted, their weights
    kept and every other event's weight 0."""
    from hepbdt.boosting._loop import draw_rows

    w = np.linspace(0.5, 2.0, 1001)
    rows, wt = draw_rows(w, 0.3, "uniform", np.random.default_rng(4))
    assert rows.size == round(0.3 * 1001) and np.array_equal(rows, np.unique(rows))
    expected = np.zeros(w.size, np.float32)
    expected[rows] = w[rows]
    assert np.array_equal(wt, expected)


def test_each_subsampled_tree_takes_its_floor_from_its_own_draw(monkeypatch) -> None:
    """min_node_size is a share of each tree's own sample weight: with a poisson draw
    every tree's weight differs, and each tree's floor is min_node_size x that weight."""
    from hepbdt.boosting import _loop

    drawn, floors = [], []
    draw, floor = _loop._draw, _loop.child_weight_floor

    def recording_draw(*args, **kwargs):
        out = draw(*args, **kwargs)
        drawn.append(math.fsum(out[1]))
        return out

    def recording_floor(*args, **kwargs):
        floors.append(floor(*args, **kwargs))
        return floors[-1]

    monkeypatch.setattr(_loop, "_draw", recording_draw)
    monkeypatch.setattr(_loop, "child_weight_floor", recording_floor)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    BDTRegressor(n_trees=4, subsample=0.5, subsample_mode="poisson", min_node_size=0.05,
                 random_state=0).fit(X, X[:, 0] + rng.normal(size=600))
    assert len(drawn) == len(floors) == 4 and len(set(drawn)) == 4
    assert floors == pytest.approx([0.05 * total for total in drawn], rel=1e-12)
