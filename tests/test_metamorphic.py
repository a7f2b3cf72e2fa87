"""Metamorphic relations: two runs whose inputs differ in a way that must not change the
answer (or must change it in a known way), compared with each other rather than with
hepbdt's own earlier outputs. Events' order, the features' order, a strictly increasing
transform of a feature, a power-of-two weight scale, copies of an event, swapped classes
and an affine regression target (audit GC, 2026-12-05)."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.evaluation import roc_auc, significance_scan

FIT = dict(n_trees=15, max_depth=3, random_state=0)


def _events(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Four continuous features (no exact ties, so no tie-broken splits), labels, weights."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 - 0.7 * X[:, 2] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, rng.uniform(0.5, 1.5, n)


def _same_forest(a, b, features: np.ndarray | None = None) -> None:
    """The same trees node for node (``features`` maps a's feature numbers to b's)."""
    fa, fb = a.forest_, b.forest_
    mapped = fa.feature if features is None else np.where(
        fa.feature >= 0, features[np.maximum(fa.feature, 0)], fa.feature)
    np.testing.assert_array_equal(mapped, fb.feature)
    np.testing.assert_array_equal(fa.threshold, fb.threshold)
    np.testing.assert_array_equal(fa.value, fb.value)


@pytest.mark.parametrize("boosting", ["gradient", "newton", "adaboost"])
def test_the_events_order_changes_no_tree(boosting: str) -> None:
    """Exact histograms (below the packed threshold, no subsampling): the sums are float64
    sums of float32 channels, exact at this size, so the order of the events changes no
    bit of the trees; the AdaBoost boost weights (float64 sums of the misclassified
    weights in another order) agree to 1e-15."""
    X, y, w = _events()
    order = np.random.default_rng(1).permutation(y.size)
    a = BDTClassifier(boosting=boosting, **FIT).fit(X, y, w)
    b = BDTClassifier(boosting=boosting, **FIT).fit(X[order], y[order], w[order])
    _same_forest(a, b)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=0, atol=1e-15)


def test_permuted_features_give_the_same_model_relabelled() -> None:
    X, y, w = _events()
    columns = np.array([2, 0, 3, 1])
    names = ["a", "b", "c", "d"]
    a = BDTClassifier(**FIT).fit(X, y, w)
    a_named = BDTClassifier(**FIT).fit({n: X[:, i] for i, n in enumerate(names)}, y, w)
    b = BDTClassifier(**FIT).fit({names[i]: X[:, i] for i in columns}, y, w)
    _same_forest(a, b, features=np.argsort(columns))
    # given as a dict in another order, the data is put in the model's order by name
    frame = {n: X[:, i] for i, n in enumerate(names)}
    np.testing.assert_array_equal(a_named.decision_function(frame), b.decision_function(frame))


@pytest.mark.parametrize("transform", [lambda x: 2 * x + 3, np.exp, lambda x: x**3],
                         ids=["2x+3", "exp", "x^3"])
def test_an_increasing_transform_keeps_every_partition(transform) -> None:
    """Quantile bins depend on ranks only: the same splits (thresholds between the same
    events), so the same scores on transformed inputs."""
    X, y, w = _events()
    moved = X.copy()
    moved[:, 1] = transform(X[:, 1])
    a = BDTClassifier(**FIT).fit(X, y, w)
    b = BDTClassifier(**FIT).fit(moved, y, w)
    np.testing.assert_array_equal(a.forest_.feature, b.forest_.feature)
    np.testing.assert_array_equal(a.forest_.value, b.forest_.value)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(moved))


@pytest.mark.parametrize("k", [-20, 7, 20])
def test_weights_times_a_power_of_two(k: int) -> None:
    """Gradient boosting and the AdaBoost family: the same model; newton: the same model
    when its penalties, in units of summed weight, scale with the weights. AUC the same,
    yields and S/sqrt(B) scaled by 2^k and 2^(k/2), the cuts unmoved."""
    X, y, w = _events()
    c = 2.0**k
    for options in ({"boosting": "gradient"}, {"boosting": "adaboost"}):
        a = BDTClassifier(**options, **FIT).fit(X, y, w)
        b = BDTClassifier(**options, **FIT).fit(X, y, w * c)
        np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    penalties = dict(reg_lambda=1.0, reg_alpha=0.3, min_child_weight=2.0, min_split_gain=0.1)
    a = BDTClassifier(boosting="newton", **penalties, **FIT).fit(X, y, w)
    b = BDTClassifier(boosting="newton", **{key: v * c for key, v in penalties.items()},
                      **FIT).fit(X, y, w * c)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    score = a.decision_function(X)
    assert roc_auc(y, score, w * c) == roc_auc(y, score, w)
    one, scaled = significance_scan(y, score, w), significance_scan(y, score, w * c)
    cut, cut_scaled = one.best_cuts["s_over_sqrt_b"], scaled.best_cuts["s_over_sqrt_b"]
    assert cut_scaled.threshold == cut.threshold
    assert cut_scaled.signal == pytest.approx(cut.signal * c, rel=1e-12)
    assert cut_scaled.value == pytest.approx(cut.value * np.sqrt(c), rel=1e-12)


def test_every_event_twice_at_half_its_weight() -> None:
    """Options that depend on weights only (an integer n_trees; min_node_size a fraction of
    the weight): the same model as the single events."""
    X, y, w = _events(2000)
    for options in ({"boosting": "gradient", "min_node_size": 0.05}, {"boosting": "newton"},
                    {"boosting": "adaboost"}):
        a = BDTClassifier(**options, **FIT).fit(X, y, w)
        b = BDTClassifier(**options, **FIT).fit(np.r_[X, X], np.r_[y, y], np.r_[w, w] / 2)
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X),
                                   rtol=0, atol=1e-15)


def test_swapped_classes_mirror_the_scores() -> None:
    """Symmetric losses (deviance, logistic, discrete AdaBoost with Gini): the score of the
    swapped training is minus the score, and the AUC (the other class as signal) is the same."""
    X, y, w = _events()
    for boosting in ("gradient", "newton", "adaboost"):
        a = BDTClassifier(boosting=boosting, **FIT).fit(X, y, w)
        b = BDTClassifier(boosting=boosting, **FIT).fit(X, 1 - y, w)
        sa, sb = a.decision_function(X), b.decision_function(X)
        np.testing.assert_allclose(sb, -sa, rtol=0, atol=1e-15)
        assert roc_auc(1 - y, sb, w) == pytest.approx(roc_auc(y, sa, w), abs=1e-15)


@pytest.mark.parametrize("loss", ["squared", "absolute", "huber"])
def test_affine_regression_target(loss: str) -> None:
    """y -> a y + b: predictions a p + b (squared: gradient steps are linear in y; absolute
    and Huber: medians and quantiles move with y); up to float64 rounding of the target."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 3))
    target = X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(0, 0.3, 2000)
    w = rng.uniform(0.5, 1.5, 2000)
    p = BDTRegressor(loss=loss, **FIT).fit(X, target, w).predict(X)
    for a, b in ((2.0, 3.0), (-1.0, 0.0), (1e-3, 1e3)):
        q = BDTRegressor(loss=loss, **FIT).fit(X, a * target + b, w).predict(X)
        np.testing.assert_allclose(q, a * p + b, rtol=0, atol=1e-7 * abs(a) + 1e-12 * abs(b))


def test_other_half_does_not_depend_on_the_events_order() -> None:
    """The "other half" estimate of a best cut took every other event in the order given:
    the same test events listed in another order (a sample's files listed the other way
    round in a configuration) printed S/sqrt(B) 84.36 or 85. The halves are now drawn from
    the events' scores and weights, so the order changes no number but the last bits of
    a sum of weights taken in another order (1e-12); the weights times 2^k scale it by
    2^(k/2)."""
    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    score = np.round(rng.normal(y * 0.8, 1.0), 2)  # ties
    w = rng.uniform(0.2, 2.0, n) * np.where(rng.random(n) < 0.1, -0.3, 1.0)
    base = significance_scan(y, score, w).other_half
    for seed in (1, 2):
        order = np.random.default_rng(seed).permutation(n)
        permuted = significance_scan(y[order], score[order], w[order]).other_half
        assert permuted == pytest.approx(base, rel=1e-12)
    scaled = significance_scan(y, score, w * 2.0**-20).other_half
    assert scaled["s_over_sqrt_b"] == pytest.approx(base["s_over_sqrt_b"] * 2.0**-10, rel=1e-12)
