"""Audit of evaluation.metrics and evaluation.curves against independent references: each
test pins a number that was silently wrong, or an input that must now be refused."""

from __future__ import annotations

import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.metrics import roc_auc_score

from hepbdt.evaluation import learning_curve
from hepbdt.evaluation.curves import multiclass_log_loss
from hepbdt.evaluation.decorrelation import threshold_at_efficiency
from hepbdt.evaluation.metrics import (
    ams,
    background_rejection_at,
    regression_metrics,
    resolution_vs_target,
    roc_auc,
    roc_curve,
    separation,
    signal_efficiency_at,
    significance_scan,
    split_yields,
)

Y = np.array([0, 1, 0, 1, 1, 0])
SCORE = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.3])


@pytest.mark.parametrize("scale", [1e-300, 1e-170, 1e160, 1e300])
def test_roc_auc_and_curve_do_not_overflow_with_extreme_weights(scale):
    w = np.full(Y.size, scale)
    assert roc_auc(Y, SCORE, w) == pytest.approx(roc_auc_score(Y, SCORE), rel=1e-14)
    eff_s, eff_b, _ = roc_curve(Y, SCORE, w)
    ref_s, ref_b, _ = roc_curve(Y, SCORE)
    np.testing.assert_allclose(eff_s, ref_s, rtol=1e-14)
    np.testing.assert_allclose(eff_b, ref_b, rtol=1e-14)


def _ams_exact(s: float, b: float) -> float:
    getcontext().prec = 50
    s_, b_ = Decimal(s), Decimal(b)
    value = float((2 * ((s_ + b_) * (1 + s_ / b_).ln() - s_)).sqrt())
    return value if s >= 0 else -value


@pytest.mark.parametrize("s, b", [(1.0, 1e17), (1e-3, 1e10), (1.0, 1e12), (-1e-5, 1e3),
                                  (5.0, 100.0), (0.5, 50.0), (1e5, 1e-3)])
def test_ams_keeps_its_digits_when_s_is_much_smaller_than_b(s, b):
    # the direct form gave 0 for (1, 1e17) and lost 3 digits at (1e-3, 1e10)
    assert float(ams(s, b, b_reg=0.0)) == pytest.approx(_ams_exact(s, b), rel=1e-13)


def test_ams_and_scan_refuse_bad_b_reg_and_yields():
    with pytest.raises(ValueError, match="b_reg"):
        ams(1.0, 5.0, b_reg=-10.0)
    with pytest.raises(ValueError, match="b_reg"):
        significance_scan(Y, SCORE, b_reg=np.nan)
    for name in ("signal_yield", "background_yield"):
        for bad in (np.nan, np.inf, -5.0, 0.0):
            with pytest.raises(ValueError, match=name):
                significance_scan(Y, SCORE, **{name: bad})


@pytest.mark.parametrize("scale", [1e-170, 1e160])
def test_scan_uncertainties_neither_underflow_nor_overflow(scale):
    w = np.full(Y.size, scale)
    scan = significance_scan(Y, SCORE, w, min_background_events=1)
    # every event passes the loosest cut: sqrt(3 w^2) per class
    assert scan.signal_error[-1] == pytest.approx(np.sqrt(3.0) * scale, rel=1e-14)
    assert scan.background_error[-1] == pytest.approx(np.sqrt(3.0) * scale, rel=1e-14)
    assert scan.signal[-1] == pytest.approx(3 * scale, rel=1e-14)
    assert scan.signal_scale == 1.0 and scan.background_scale == 1.0


def test_scan_scales_report_the_factor_on_the_given_weights():
    w = np.full(Y.size, 1e-3)
    scan = significance_scan(Y, SCORE, w, signal_yield=6.0, background_yield=9.0)
    assert scan.signal_scale == pytest.approx(6.0 / 3e-3)
    assert scan.background_scale == pytest.approx(9.0 / 3e-3)
    assert scan.signal[-1] == pytest.approx(6.0) and scan.background[-1] == pytest.approx(9.0)


def test_regression_negative_mean_square_is_nan_not_zero():
    m = regression_metrics([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [2.0, -1.5, 0.1])
    # sum w r^2 = -3.1 and sum w |r| = -0.7 over a summed weight of 0.6: no RMS, no MAE
    assert np.isnan(m.rmse) and np.isnan(m.mae)
    assert m.bias == pytest.approx(-0.7 / 0.6)


def test_regression_refuses_non_positive_summed_weight():
    with pytest.raises(ValueError, match="positive summed weight"):
        regression_metrics([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [1.0, -1.0, -1.0])
    binned = resolution_vs_target([0.0, 0.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0],
                                  [1.0, -2.0, 1.0, 1.0], bins=[0.0, 0.5, 1.0])
    assert np.isnan(binned.bias[0]) and np.isnan(binned.rmse[0])  # was bias 3, rmse 2.6
    assert binned.bias[1] == pytest.approx(2.5)


@pytest.mark.parametrize("kwargs, match", [
    ({"y_pred": [1.0, np.nan, 3.0]}, "y_pred"),
    ({"y_true": [0.0, 0.0, np.inf]}, "y_true"),
    ({"truncation": 0.0}, "truncation"),
    ({"truncation": 1.5}, "truncation"),
])
def test_regression_refuses_bad_inputs(kwargs, match):
    args = {"y_true": [0.0, 0.0, 0.0], "y_pred": [1.0, 2.0, 4.0], **kwargs}
    with pytest.raises(ValueError, match=match):
        regression_metrics(**args)


@pytest.mark.parametrize("bins", [0, 2.5, [1.0, 0.0, -1.0], [0.0], [0.0, np.nan, 1.0]])
def test_resolution_vs_target_refuses_bad_bins(bins):
    with pytest.raises(ValueError, match="bins"):
        resolution_vs_target([0.0, 0.5, 1.0], [0.1, 0.4, 1.2], bins=bins)


def test_regression_quantiles_do_not_depend_on_event_order():
    residual = np.array([4.0, 2.0, 3.0, 4.0, 4.0])
    w = np.array([0.1, 0.3, 0.1, 1.0, 0.1])
    # weighted inverse CDF: q25 = 3 (cumulative 0.3, 0.4 of 1.6), q75 = 4
    for order in (np.arange(5), np.arange(5)[::-1], np.array([3, 0, 4, 1, 2])):
        m = regression_metrics(np.zeros(5), residual[order], w[order])
        assert m.resolution_iqr == pytest.approx(1.0 / 1.3489795003921634)


def test_separation_refuses_infinite_scores_without_edges():
    score = np.array([-np.inf, np.inf, 0.3, np.inf, 0.2, 0.3])
    with pytest.raises(ValueError, match="infinite"):
        separation(Y, score)  # was 0.0 for these disjoint samples
    assert separation(Y, score, bins=[-1.0, 0.25, 0.32, 1.0]) == pytest.approx(2 / 3)
    for bins in (0, 2.5, [0.5], [1.0, 0.5, 0.0]):
        with pytest.raises(ValueError, match="bins"):
            separation(Y, SCORE, bins=bins)


def test_split_yields_refuses_fractional_or_nan_sample_indices():
    for bad in ([0, 0.5], [0, np.nan], [0, 1e30]):
        with pytest.raises(ValueError, match="sample indices must be integers"):
            split_yields(bad, [0, 1], [0, 1], [1, 1])


class _StagedClassifier:
    """Stand-in classifier with ``classes_``: raw score and its logistic probability."""

    _estimator_type = "classifier"

    def __init__(self, classes, n_trees=3):
        self.classes_ = np.asarray(classes)
        self.n_trees_ = n_trees

    def staged_decision_function(self, X):
        for k in range(1, self.n_trees_ + 1):
            yield k * X[:, 0]


class _StagedMulticlass:
    _estimator_type = "classifier"

    def __init__(self, classes):
        self.classes_ = np.asarray(classes)
        self.n_trees_ = 2

    def staged_predict_proba(self, X):
        for k in (1, 2):
            logits = k * X[:, :3]
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            yield p / p.sum(axis=1, keepdims=True)


def _data(seed, n=200, k=2):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, 3))
    X[np.arange(n), y] += 1.5
    return X, y


def test_learning_curve_takes_the_signal_from_classes():
    (X_tr, y_tr), (X_te, y_te) = _data(1), _data(2)
    # labels 0/1 with signal_label=0: classes_ = [1, 0], column 1 of predict_proba is label 0
    curve = learning_curve(_StagedClassifier([1, 0]), (X_tr, y_tr), (X_te, y_te))
    expected = roc_auc(y_te == 0, 3 * X_te[:, 0])
    assert curve.test_auc[-1] == pytest.approx(expected)  # was 1 - expected
    assert expected > 0.5


def test_learning_curve_multiclass_maps_labels_to_columns():
    (X_tr, y_tr), (X_te, y_te) = _data(3, k=3), _data(4, k=3)
    model = _StagedMulticlass([1, 2, 3])
    for mix in (True, False):
        curve = learning_curve(model, (X_tr, y_tr + 1), (X_te, y_te + 1), match_class_mix=mix)
        last = list(model.staged_predict_proba(X_te))[-1]
        assert curve.test_loss[-1] == pytest.approx(sk_log_loss(y_te, last))  # was IndexError
    indices_and_labels = learning_curve(model, (X_tr, y_tr), (X_te, y_te + 1))
    assert indices_and_labels.test_loss[-1] == pytest.approx(curve.test_loss[-1])
    with pytest.raises(ValueError, match="class indices"):
        learning_curve(model, (X_tr, y_tr), (X_te, y_te + 7))  # neither labels nor indices


def test_learning_curve_refuses_zero_weight_and_no_points():
    (X_tr, y_tr), (X_te, y_te) = _data(5), _data(6)
    model = _StagedClassifier([0, 1])
    with pytest.raises(ValueError, match="positive summed weight"):
        learning_curve(model, (X_tr, y_tr), (X_te, y_te, np.zeros(y_te.size)))  # was NaN
    with pytest.raises(ValueError, match="max_points"):
        learning_curve(model, (X_tr, y_tr), (X_te, y_te), max_points=0)


def test_multiclass_log_loss_refuses_labels_that_are_not_columns():
    proba = np.full((3, 3), 1 / 3)
    with pytest.raises(ValueError, match="class indices"):
        multiclass_log_loss(np.array([0, 1, -1]), proba, np.ones(3))  # -1 read column 2
    with pytest.raises(ValueError, match="class indices"):
        multiclass_log_loss(np.array([0, 1, 2.5]), proba, np.ones(3))


def test_weighted_quantile_does_not_depend_on_the_order_of_the_events():
    from hepbdt._util import weighted_quantile

    values = np.array([2.0, 3.0, 3.0, 1.0, 4.0])
    weights = np.array([1.0, 0.0, 1.0, 0.2, 0.2])
    assert weighted_quantile(values, weights, 0.5) == weighted_quantile(
        values[::-1], weights[::-1], 0.5)
    rng = np.random.default_rng(0)
    for _ in range(500):  # decimal weights whose sums round differently in other orders
        n = int(rng.integers(1, 8))
        v = rng.integers(0, 4, n).astype(float)
        w = rng.choice([0.1, 0.2, 0.3, 0.7, 1.0], n)
        q = float(rng.choice([0.1, 0.3, 0.5, 0.7, 0.9]))
        p = rng.permutation(n)
        assert weighted_quantile(v, w, q) == weighted_quantile(v[p], w[p], q), (v, w, q)


def test_weighted_quantile_is_the_exact_one_of_decimal_weights():
    # ten weights of 0.1 add up to just below a quarter of forty: all weights 0.1 gave
    # another quantile (and a 5 % smaller resolution) than all weights 1
    from fractions import Fraction

    from hepbdt._util import weighted_quantile

    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(5, 60))
        values = rng.permutation(n).astype(float)
        weights = (np.full(n, float(rng.choice([0.1, 0.3, 0.7, 1e-6, 1e25, 1.0])))
                   if trial % 2 else rng.choice([0.1, 0.2, 0.3, 1.0], n))
        exact = [Fraction(repr(float(x))) for x in weights]  # the decimals given
        for q in (0.05, 0.25, 0.5, 0.75, 0.95):
            target = Fraction(repr(q)) * sum(exact)
            running = Fraction(0)
            for i in np.argsort(values, kind="stable"):
                running += exact[i]
                if running >= target:
                    break
            assert weighted_quantile(values, weights, q) == values[i], (weights[0], n, q)
    residual = np.arange(40.0)
    unit = regression_metrics(np.zeros(40), residual, np.ones(40))
    for scale in (0.1, 1e25, 1e-6):
        scaled = regression_metrics(np.zeros(40), residual, np.full(40, scale))
        assert scaled.resolution_iqr == unit.resolution_iqr
        assert scaled.resolution_trms == pytest.approx(unit.resolution_trms, rel=1e-12)


# -- efficiency targets: the running sums' rounding grows with the event count ------------------

N_ROUNDING = 100_000  # events of one class: weights of 0.3 or 0.7 fall 1.4e-12 short of 90 %


def _one_class_ordered(n: int, n_other: int, targets: tuple[float, ...]):
    """n events of one class with scores -0, -1, ..., -(n-1) and n_other of the other class
    spread over the same range, one of them just below each cut that keeps exactly a target
    fraction (an exact count) of the first class."""
    other = -np.linspace(0, n, n_other) - 0.5
    for f in targets:
        other[int(f * n_other)] = -(round(f * n) - 1) - 0.5
    return np.r_[-np.arange(n, dtype=np.float64), other]


@pytest.mark.parametrize("weight", [1.0, 0.3, 0.7])
def test_efficiency_targets_do_not_depend_on_the_weights_scale(weight):
    targets = (0.5, 0.9)
    score = _one_class_ordered(N_ROUNDING, 1000, targets)
    y = np.r_[np.ones(N_ROUNDING, np.int8), np.zeros(1000, np.int8)]
    w = np.full(y.size, weight)
    # exact counts: the cut keeping f of the signal keeps the background above -(f n - 1)
    rejection = [1 - np.sum(score[y == 0] >= -(round(f * N_ROUNDING) - 1)) / 1000
                 for f in targets]
    np.testing.assert_allclose(background_rejection_at(y, score, w, targets), rejection,
                               rtol=0, atol=1e-12)
    # the mirror: background efficiencies of exactly 50 % and 90 %, and the signal event just
    # below each such cut joins it (it adds no background)
    kept = [np.sum(score[y == 0] >= -(round(f * N_ROUNDING) - 1) - 0.5) / 1000 for f in targets]
    np.testing.assert_allclose(signal_efficiency_at(1 - y, score, w, targets), kept,
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("weight", [1.0, 0.1, 1.1])
def test_threshold_at_efficiency_does_not_depend_on_the_weights_scale(weight):
    score = -np.arange(N_ROUNDING, dtype=np.float64)
    for efficiency in (0.1, 0.3, 0.5):  # 0.1 and 1.1 fell short of each, 1.1 of 70 % too
        cut = threshold_at_efficiency(score, np.full(N_ROUNDING, weight), efficiency)
        assert cut == -(round(efficiency * N_ROUNDING) - 1)  # keeps exactly that fraction


@pytest.mark.parametrize("weight", [0.1, 1e305, 3e-300])
def test_the_whole_selection_keeps_exactly_all_of_each_class(weight):
    """The totals were numpy's pairwise sums and the efficiencies running sums over them:
    the last ROC point was 1 + 7e-16, and a rejection of -7e-16 was printed."""
    y = np.r_[np.ones(50), np.zeros(50)]
    score = np.arange(100.0)
    eff_s, eff_b, _ = roc_curve(y, score, np.full(100, weight))
    assert (eff_s[-1], eff_b[-1]) == (1.0, 1.0)
    assert np.all(background_rejection_at(y, score, np.full(100, weight)) == 0.0)


def _scale_invariant_measures(scale: float) -> list[float]:
    """Measures that are ratios within a class (or sample) of weighted events, all weights
    times ``scale``."""
    from hepbdt.evaluation import decorrelation_measures, weighted_ks_2samp

    rng = np.random.default_rng(3)
    n = 2000
    y = (rng.random(n) < 0.5).astype(int)
    mass = rng.uniform(50, 150, n)
    score = rng.normal(y, 1) + 0.01 * mass
    w = rng.lognormal(0, 0.5, n) * scale
    measures = decorrelation_measures(score, y, mass, w, efficiencies=(0.3, 0.5))
    reg = regression_metrics(mass, mass + score, w)
    return [separation(y, score, w), weighted_ks_2samp(score[y == 1], score[y == 0] + 1,
                                                       w[y == 1], w[y == 0]).pvalue,
            reg.rmse, reg.bias, reg.resolution_trms, *measures.threshold,
            *measures.background_rejection, *measures.background_jsd]


@pytest.mark.parametrize("scale", [1e306, 1e-306])
def test_ratio_measures_do_not_depend_on_the_weights_scale(scale):
    """Weights of 1e306 overflowed their sums: separation 0, a NaN KS p-value and
    regression metrics, an infinite rejection, a JSD of 2 and a cut keeping one event."""
    np.testing.assert_allclose(_scale_invariant_measures(scale), _scale_invariant_measures(1.0),
                               rtol=1e-9)


def test_learning_curve_warns_when_labels_are_also_indices_of_other_classes():
    """Labels 1, 2, 3 and a y of 1s and 2s read both ways: as labels (columns 0 and 1, the
    documented rule) or as the indices a caller may have meant (columns 1 and 2); the
    reading was silent, the losses of the other columns' probabilities."""
    from hepbdt.evaluation import LabelReadingWarning

    (X_tr, y_tr), (X_te, y_te) = _data(3, k=3), _data(4, k=3)
    model = _StagedMulticlass([1, 2, 3])
    keep_tr, keep_te = y_tr < 2, y_te < 2
    X_tr, y_tr, X_te, y_te = X_tr[keep_tr], y_tr[keep_tr], X_te[keep_te], y_te[keep_te]
    last = list(model.staged_predict_proba(X_te))[-1]
    with pytest.warns(LabelReadingWarning, match=r"columns \[0, 1\]; read as class indices "
                      r"they would be columns \[1, 2\]"):
        curve = learning_curve(model, (X_tr, y_tr + 1), (X_te, y_te + 1))
    assert curve.test_loss[-1] == pytest.approx(
        sk_log_loss(y_te, last, labels=[0, 1, 2]))  # the labels' reading
    with warnings.catch_warnings():
        warnings.simplefilter("error", LabelReadingWarning)
        learning_curve(model, (X_tr, y_tr), (X_te, y_te))  # 0 is no label: indices
        learning_curve(_StagedClassifier([1, 0]), *(_data(5), _data(6)))  # signal_label=0
