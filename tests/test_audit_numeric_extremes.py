"""Audit of numeric extremes in the boosting: the pseudo-Huber loss at residuals far below
its delta, a fit whose loss grows tree after tree, a split whose gain is zero but for
rounding, and the messages of weights out of range. References: the loss computed in
50-digit decimal arithmetic, the squared loss it tends to, and scale invariance."""

from __future__ import annotations

import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest

from hepbdt import BDTRegressor
from hepbdt.boosting.losses import PseudoHuber
from tests.ntuples import KINDS, write_ntuple


@pytest.mark.parametrize("delta", [1.0, 0.003, 250.0])
def test_pseudo_huber_loss_has_no_cancellation(delta):
    """delta^2 (sqrt(1 + (r/delta)^2) - 1) to 1e-15 relative at every residual, in
    particular far below delta, where the subtraction of 1 lost every digit."""
    getcontext().prec = 50
    r = delta * np.array([1e-12, 1e-9, 3e-8, 1e-5, 0.5, 3.0, 1e6])
    got = PseudoHuber(delta).pointwise(np.zeros(r.size), -r)
    d = Decimal(delta)
    exact = [float(d * d * ((1 + (Decimal(x) / d) ** 2).sqrt() - 1)) for x in r]
    np.testing.assert_allclose(got, exact, rtol=1e-15, atol=0)


def test_pseudo_huber_on_a_tiny_target_is_the_squared_loss():
    """Residuals far below huber_delta: the pseudo-Huber loss is half the squared error
    (to 1e-16 relative) and n_trees="auto" stops where the squared loss does; it kept one
    tree when the loss computed as 0."""
    rng = np.random.default_rng(19)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] + np.sin(2 * X[:, 1]) + 0.2 * rng.normal(size=3000)) * 1e-9
    huber = BDTRegressor(boosting="newton", loss="huber").fit(X, y)
    squared = BDTRegressor(boosting="newton", loss="squared").fit(X, y)
    assert huber.forest_.n_trees == squared.forest_.n_trees > 10
    fifty = BDTRegressor(boosting="newton", loss="huber", n_trees=50).fit(X, y)  # no hold-out
    staged = np.array([(p - y) ** 2 / 2 for p in fifty.staged_predict(X)]).mean(axis=1)
    np.testing.assert_allclose(fifty.train_loss_, staged, rtol=1e-9)


def test_a_loss_that_grows_after_the_first_tree_warns():
    """Weights of 1000 make reg_lambda negligible: each pseudo-Huber step overshoots a little
    more than the last, so the first tree is fine and the loss passes twice its lowest
    later. The warning names that tree, and comes once."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(600, 4))
    y = 2 * X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=600)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BDTRegressor(boosting="newton", loss="huber", n_trees=100).fit(
            X, y, np.full(600, 1000.0))
    losses = np.asarray(model.train_loss_)  # after 1, 2, ... trees
    lowest_before = np.minimum.accumulate(np.concatenate([[np.inf], losses[:-1]]))
    first = int(np.flatnonzero(losses > 2 * lowest_before)[0]) + 1  # trees when it doubled
    grown = [str(w.message) for w in caught if "training loss" in str(w.message)]
    assert first > 1 and len(grown) == 1 and grown[0].startswith(f"after {first} trees")
    assert losses.max() > 100 * losses[0]  # the fit did diverge
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BDTRegressor(boosting="newton", loss="huber", n_trees=100).fit(X, y)  # unit weights converge


def test_the_grown_loss_is_measured_against_the_lowest_loss_before_it():
    """Deep trees on 5 % subsamples at learning_rate 1 fit the first tree's structure (the
    squared loss falls from the constant's 2.567 to 1.0), then each tree copies a drawn
    event's noise to its leaf's others, and the loss climbs: after 3 trees it is past twice
    the lowest before it (1.0) but not twice the highest (the constant's). The warning names
    that tree and both numbers, each computed here with numpy from the staged predictions
    and the weighted mean (the constant); measured against the highest loss it came later,
    at another tree, or not at all."""
    X, y = grown_loss_sample()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BDTRegressor(**GROWN_LOSS_OPTIONS).fit(X, y)
    assert_warned_at_the_first_growth(model, X, y, caught)


# Deep trees on 5 % subsamples at learning rate 1: the loss falls, then climbs (the Dask
# twin in tests/test_audit_dask.py fits the same)
GROWN_LOSS_OPTIONS = dict(loss="squared", n_trees=6, max_depth=8, learning_rate=1.0,
                          subsample=0.05, min_node_size=0.0, random_state=0)


def grown_loss_sample() -> tuple[np.ndarray, np.ndarray]:
    """2,000 events whose squared loss under ``GROWN_LOSS_OPTIONS`` first falls, then grows."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 3))
    return X, 4 * (X[:, 0] > 0) + rng.normal(size=2000)


def assert_warned_at_the_first_growth(model, X, y, caught) -> None:
    """One grown-loss warning among ``caught``, at the first tree whose loss (numpy's, from
    the staged predictions) passes twice the lowest before it, naming both numbers."""
    losses = np.array([np.mean((y - y.mean()) ** 2) / 2]  # the constant, then tree by tree
                      + [np.mean((p - y) ** 2) / 2 for p in model.staged_predict(X)])
    lowest = np.minimum.accumulate(losses)[:-1]
    first = int(np.flatnonzero(losses[1:] > 2 * lowest)[0]) + 1
    assert first > 1 and losses[first] <= 2 * losses[:first].max()  # min and max disagree
    grown = [str(w.message) for w in caught if "training loss" in str(w.message)]
    assert len(grown) == 1, grown
    assert grown[0].startswith(
        f"after {first} trees the training loss is {losses[first]:.4g}, more than 2x "
        f"{lowest[first - 1]:.4g} (its lowest before)"), grown


@pytest.mark.parametrize("scale", [0.1, 0.3, 1e-20, 1e20])
def test_absolute_loss_does_not_depend_on_the_weight_scale(scale):
    """A node whose events all have residuals of one sign has A = +-B: every cut's gain is 0
    exactly, and rounding left a few eps x |parent| at some weight scales, a split that
    gave the new leaves their own medians. Absolute-loss boosting is scale invariant, so
    any uniform weight must give the unit-weight model."""
    rng = np.random.default_rng(0)
    x = rng.random(200)
    X, y = np.c_[x, rng.random(200)], x.copy()
    options = dict(boosting="gradient", loss="absolute", n_trees=1, max_depth=3, learning_rate=1.0)
    unit = BDTRegressor(**options).fit(X, y)
    scaled = BDTRegressor(**options).fit(X, y, np.full(200, scale))
    assert scaled.forest_.n_nodes == unit.forest_.n_nodes
    np.testing.assert_array_equal(scaled.predict(X), unit.predict(X))
    rng = np.random.default_rng(21)
    X = rng.normal(size=(1500, 4))
    y = 2 * X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=1500)
    unit = BDTRegressor(loss="absolute", n_trees=60).fit(X, y)
    scaled = BDTRegressor(loss="absolute", n_trees=60).fit(X, y, np.full(1500, scale))
    np.testing.assert_allclose(scaled.predict(X), unit.predict(X), rtol=0, atol=1e-12)


def test_weights_out_of_range_after_the_class_normalisation_say_so():
    """Given weights of 1e20 and 1e-20 in one class lie within the accepted range; the
    AdaBoost family's class normalisation takes the small ones below it. The message must
    not ask to rescale (that changes nothing), and names the option that avoids it."""
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(20)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(int)
    w = np.where(rng.random(400) < 0.5, 1e20, 1e-20)
    for scale in (1.0, 1e10):
        with pytest.raises(ValueError, match="after the class normalisation.*sig_to_bkg_fraction=None"):
            BDTClassifier(boosting="adaboost", n_trees=5, max_depth=3).fit(X, y, w * scale)
    BDTClassifier(boosting="adaboost", n_trees=5, max_depth=3, sig_to_bkg_fraction=None).fit(X, y, w)


def test_probabilities_of_large_scores_come_without_overflow_warnings():
    """realadaboost on separable data reaches |F| of about 1000: the probabilities are
    scipy's expit of 2F, with no 'overflow encountered in exp' warning."""
    from scipy.special import expit

    from hepbdt import BDTClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    model = BDTClassifier(boosting="realadaboost", n_trees=200, max_depth=3).fit(
        X, (X[:, 0] > 0).astype(int))
    F = model.decision_function(X)
    assert np.abs(F).max() > 400
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = model.predict_proba(X)
    np.testing.assert_allclose(p[:, 1], expit(2 * F), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("offset, spread", [(1e9, 30.0), (1.0, 1e-10)])
def test_float64_features_that_float32_collapses_warn(offset, spread):
    """float64 values that float32 holds in a few steps (a timestamp 1e9 +- 30; 1 and
    1 + 1e-10) lose what separates the classes (numpy counts the distinct values left):
    the fit warns with the offset to subtract, and the feature after it separates them."""
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(0)
    x = offset + rng.uniform(-spread, spread, 400)
    y = (x > offset).astype(int)
    assert np.unique(x.astype(np.float32)).size < 10 < np.unique(x).size
    with pytest.warns(UserWarning, match=r"feature 0 spans .* float32 .* subtract an offset"):
        BDTClassifier(n_trees=5, max_depth=2).fit(x[:, None], y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shifted = BDTClassifier(n_trees=5, max_depth=2).fit((x - offset)[:, None] / spread, y)
    assert shifted.score((x - offset)[:, None] / spread, y) > 0.99


def _float32_steps_between(low: float, high: float) -> int:
    """The float32 steps between float32(low) and float32(high), both positive, counted
    on their bit patterns (consecutive positive float32 values have consecutive ones)."""
    bits = np.array([low, high], dtype=np.float32).view(np.int32)
    return int(bits[1]) - int(bits[0])


@pytest.mark.parametrize("n_steps, warns", [(500, True), (1500, False)])
def test_float32_step_count_is_float32s_spacing(n_steps, warns):
    """README: a float64 feature whose range float32 holds in fewer than 1,024 steps warns,
    saying how many. The steps are counted on float32's bit patterns: the fit estimated
    float32's spacing at 1e9 as 1e9 x 2^-23 = 119 where it is 64, so it warned for 1,500
    steps and printed 268 for 500."""
    from hepbdt import BDTClassifier

    x = 1e9 + np.linspace(0.0, 64.0 * n_steps, 400) + 0.25  # 0.25: float32 rounds each value
    y = np.arange(400) % 2
    assert _float32_steps_between(x.min(), x.max()) == n_steps
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        BDTClassifier(n_trees=2, max_depth=2).fit(x[:, None], y)
    messages = [str(w.message) for w in record if "float32" in str(w.message)]
    if not warns:
        assert messages == []
        return
    assert len(messages) == 1 and f"holds in about {n_steps:,} steps" in messages[0]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("binned", [False, True])
def test_a_double_branch_that_float32_collapses_warns_at_the_read(tmp_path, binned, kind):
    """The readers compute in double and keep float32 features: a double branch of
    1e9 +- 30 keeps 1 value (float32's spacing there is 64); the read warns for it, and for the float
    branch and the shipped features it does not."""

    from hepbdt.io import Sample, read

    rng = np.random.default_rng(3)
    t = 1e9 + rng.uniform(-30, 30, 500)
    assert np.unique(t.astype(np.float32)).size < 10
    write_ntuple(tmp_path / "f.root", "Events",
                 {"t": t, "pt": rng.exponential(40, 500).astype(np.float32)}, kind)
    with pytest.warns(UserWarning, match=r"read: feature 't' spans .* subtract an offset") as record:
        read(Sample("s", tmp_path / "f.root", label=1), ["t", "pt"], binned=binned)
    assert not any("'pt'" in str(w.message) for w in record)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read(Sample("s", tmp_path / "f.root", label=1), ["t - 1e9", "pt"], binned=binned)


@pytest.mark.parametrize("kind", KINDS)
def test_integers_that_float32_holds_exactly_do_not_warn(tmp_path, kind):
    """Run numbers 315252-315261 span few float32 steps but each is exact in float32: no
    warning at the fit (float64 column) or at the read (an unsigned branch)."""

    from hepbdt import BDTClassifier
    from hepbdt.io import Sample, read

    runs = 315252 + np.arange(400) % 10
    write_ntuple(tmp_path / "r.root", "Events",
                 {"run": runs.astype(np.uint32), "x": np.linspace(0, 1, 400)}, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        BDTClassifier(n_trees=3, max_depth=2).fit(runs[:, None].astype(np.float64), runs % 2)
        read(Sample("s", tmp_path / "r.root", label=1), ["run", "x"])
