"""The numbers the figures and the HTML report show, each against an independent reference
(numpy histograms, scikit-learn, scipy, brute force), and the edge cases where a figure or a
cell would be silently wrong: a class without positive weight, weights whose squares leave
float64, infinite scores, negative bins, a cut that keeps nothing, non-finite points."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import dataclasses  # noqa: E402
import decimal  # noqa: E402
import html  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.spatial.distance import jensenshannon  # noqa: E402
from sklearn.metrics import roc_auc_score, roc_curve  # noqa: E402

from hepbdt import plotting  # noqa: E402
from hepbdt.evaluation import LearningCurve  # noqa: E402
from hepbdt.evaluation.decorrelation import decorrelation_measures  # noqa: E402

report = importlib.import_module("hepbdt.report")  # the module: hepbdt.report is a function


def _sample(seed=0, n=400):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(np.where(y == 1, 0.8, -0.8), 1.0)
    w = rng.uniform(0.5, 1.5, n)
    return y, s, w


def _steps(fig):
    """The values of the step histograms (mplhep's StepPatch) and of the error bars."""
    ax = fig.axes[0]
    values = [p.get_data()[0] for p in ax.patches]
    errors = [np.array([(seg[1, 1] - seg[0, 1]) / 2 for seg in c.get_segments()])
              for c in ax.collections if len(c.get_segments())]
    return values, errors


def _density(values, weights, edges):
    """Reference: unit-area density and its error with np.histogram."""
    sumw, _ = np.histogram(values, edges, weights=weights)
    sumw2, _ = np.histogram(values, edges, weights=weights * weights)
    norm = sumw.sum() * np.diff(edges)
    return sumw / norm, np.sqrt(sumw2) / norm


def test_score_distributions_match_numpy_histograms():
    y, s, w = _sample()
    w[:25] *= -1
    values, errors = _steps(plotting.plot_score_distributions(y, s, w, bins=12))
    edges = np.linspace(s.min(), s.max(), 13)
    for k, mask in enumerate((y == 1, y == 0)):
        density, error = _density(s[mask], w[mask], edges)
        np.testing.assert_allclose(values[k], density, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(errors[k], error, rtol=1e-12, atol=1e-15)
        assert np.sum(values[k] * np.diff(edges)) == pytest.approx(1.0)


@pytest.mark.parametrize("background", ["zero", "negative", "absent"])
def test_a_class_without_positive_net_weight_is_refused_not_drawn_flat(background):
    y, s, w = _sample()
    if background == "zero":
        w = np.where(y == 0, 0.0, w)
    elif background == "negative":
        w = np.where(y == 0, -w, w)
    else:
        y = np.ones_like(y)
    with pytest.raises(ValueError, match="background.*(positive net weight|needs events)"):
        plotting.plot_score_distributions(y, s, w)
    with pytest.raises(ValueError, match="background"):
        plotting.plot_overtraining(s, y, w, s, y, w, result=_any_result())


def _any_result():
    from hepbdt.evaluation import overtraining_test
    y, s, w = _sample(5)
    return overtraining_test(s[:200], y[:200], w[:200], s[200:], y[200:], w[200:])


@pytest.mark.parametrize("scale", [1e-170, 1e170])
def test_error_bars_of_tiny_and_huge_weights_are_those_of_their_ratios(scale):
    y, s, w = _sample()
    values, errors = _steps(plotting.plot_score_distributions(y, s, w * scale, bins=8))
    edges = np.linspace(s.min(), s.max(), 9)
    for k, mask in enumerate((y == 1, y == 0)):
        density, error = _density(s[mask], w[mask], edges)  # unit-scale weights
        np.testing.assert_allclose(values[k], density, rtol=1e-12)
        np.testing.assert_allclose(errors[k], error, rtol=1e-12)
        assert np.all(errors[k][density > 0] > 0)


def test_infinite_scores_count_in_the_end_bins_and_the_legend_says_so():
    y, s, w = _sample()
    s[:3], s[3] = np.inf, -np.inf
    fig = plotting.plot_score_distributions(y, s, w, bins=10)
    finite = s[np.isfinite(s)]
    edges = np.linspace(finite.min(), finite.max(), 11)
    clipped = np.clip(s, edges[0], edges[-1])
    values, _ = _steps(fig)
    for k, mask in enumerate((y == 1, y == 0)):
        np.testing.assert_allclose(values[k], _density(clipped[mask], w[mask], edges)[0])
    title = fig.axes[0].get_legend().get_title().get_text()
    assert "3 at +inf in the last bin" in title and "1 at -inf in the first bin" in title
    plain = plotting.plot_score_distributions(y, np.clip(s, -9, 9), w)
    assert plain.axes[0].get_legend().get_title().get_text() == ""


def test_overtraining_points_and_fills_match_numpy_and_negative_bins_stay_in_view():
    y, s, w = _sample(2, 600)
    w = np.where((y == 0) & (s > 1.0), -3.0 * w, w)  # background bins of negative weight
    tr, te = slice(0, 300), slice(300, None)
    fig = plotting.plot_overtraining(s[tr], y[tr], w[tr], s[te], y[te], w[te], bins=10)
    ax = fig.axes[0]
    edges = np.linspace(s.min(), s.max(), 11)
    lowest = 0.0
    points = [c.lines[0].get_ydata() for c in ax.containers]
    for k, label in enumerate((1, 0)):
        m_te, m_tr = y[te] == label, y[tr] == label
        np.testing.assert_allclose(ax.patches[k].get_data()[0],
                                   _density(s[te][m_te], w[te][m_te], edges)[0], atol=1e-14)
        density, error = _density(s[tr][m_tr], w[tr][m_tr], edges)
        np.testing.assert_allclose(points[k], density, atol=1e-14)
        lowest = min(lowest, np.min(density - error))
    assert lowest < 0
    assert ax.get_ylim()[0] <= lowest


def test_roc_curves_and_aucs_match_scikit_learn():
    y, s, w = _sample(3, 800)
    s = np.round(s, 1)  # ties
    fig = plotting.plot_roc_and_rejection(y, s, w, train=(y[:300], s[:300], w[:300]))
    rejection, linear = fig.axes
    fpr, tpr, _ = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    line = linear.lines[0]
    np.testing.assert_allclose(line.get_xdata(), tpr, atol=1e-12)
    np.testing.assert_allclose(line.get_ydata(), 1 - fpr, atol=1e-12)
    assert f"{roc_auc_score(y, s, sample_weight=w):.4f}" in line.get_label()
    train_auc = roc_auc_score(y[:300], s[:300], sample_weight=w[:300])
    assert f"{train_auc:.4f}" in linear.lines[1].get_label()
    keep = (fpr > 0) & (tpr > 0)
    np.testing.assert_allclose(rejection.lines[0].get_ydata(), 1 / fpr[keep], rtol=1e-12)


def _three_classes(seed=4, n=900):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    logits = rng.normal(size=(n, 3))
    logits[np.arange(n), y] += 1.5
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return y, p, rng.uniform(0.5, 2.0, n)


def test_multiclass_roc_matches_scikit_learn_and_refuses_a_wrong_number_of_names():
    y, p, w = _three_classes()
    fig = plotting.plot_multiclass_roc(y, p, w, class_names=["a", "b", "c"])
    for j, name in enumerate("abc"):
        line = fig.axes[0].lines[j]
        fpr, tpr, _ = roc_curve(y == j, p[:, j], sample_weight=w, drop_intermediate=False)
        np.testing.assert_allclose(line.get_xdata(), tpr, atol=1e-12)
        np.testing.assert_allclose(line.get_ydata(), 1 - fpr, atol=1e-12)
        auc = roc_auc_score(y == j, p[:, j], sample_weight=w)
        assert line.get_label() == f"{name}, test (AUC = {auc:.4f})"
    for names in (["a", "b"], ["a", "b", "c", "d"]):
        with pytest.raises(ValueError, match="class names for the 3 columns"):
            plotting.plot_multiclass_roc(y, p, w, class_names=names)


def test_predicted_vs_true_colours_negative_bins_and_refuses_nan():
    rng = np.random.default_rng(5)
    t = rng.normal(size=300)
    p = t + 0.1 * rng.normal(size=300)
    w = rng.uniform(0.5, 2.0, 300)
    w[(t > 1.2) & (p > 1.2)] *= -10  # a bin of negative net weight
    fig = plotting.plot_predicted_vs_true(t, p, w, bins=5)
    edges = np.linspace(min(t.min(), p.min()), max(t.max(), p.max()), 6)
    weights, _, _ = np.histogram2d(t, p, [edges, edges], weights=w)
    events, _, _ = np.histogram2d(t, p, [edges, edges])
    drawn = fig.axes[0].collections[0].get_array()
    np.testing.assert_array_equal(np.ma.getmaskarray(drawn).ravel(), (events.T == 0).ravel())
    np.testing.assert_allclose(drawn.compressed(), weights.T[events.T > 0])
    assert drawn.min() < 0
    for bad in (np.nan, np.inf):
        q = p.copy()
        q[7] = bad
        with pytest.raises(ValueError, match=r"y_pred must be finite numbers: 1 of \d+ are NaN"):
            plotting.plot_predicted_vs_true(t, q, w)


def test_correlation_and_ranking_figures_show_the_reference_values():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(500, 3))
    y = rng.integers(0, 2, 500)
    X[y == 1, 1] += 0.8 * X[y == 1, 0]
    X[y == 0, 2] -= 0.5 * X[y == 0, 0]
    w = rng.uniform(0.5, 2.0, 500)
    fig = plotting.plot_correlation_matrices(X, y, w, ["a", "b", "c"])
    shown = [ax.images[0].get_array() for ax in fig.axes if ax.images]
    for matrix, label in zip(shown, (1, 0), strict=True):
        cov = np.cov(X[y == label].T, aweights=w[y == label])
        reference = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
        np.testing.assert_allclose(matrix, 100 * reference, atol=1e-9)


def _measures(seed=7, signal_scores=None):
    rng = np.random.default_rng(seed)
    n = 600
    y = rng.integers(0, 2, n)
    mass = rng.uniform(50, 200, n)
    score = (rng.normal(y, 1.0) + 0.004 * mass if signal_scores is None
             else np.where(y == 1, signal_scores(rng, n), rng.uniform(0, 1, n)))
    return y, score, mass, decorrelation_measures(score, y, mass, None, bins=10)


def test_decorrelation_front_draws_no_infinite_point_and_says_which():
    *_, perfect = _measures(signal_scores=lambda rng, n: rng.uniform(2, 3, n))
    assert np.all(np.isinf(perfect.background_rejection))
    y, score, mass, good = _measures()
    fig = plotting.plot_decorrelation_front({"perfect": perfect, "good": good},
                                            efficiency=0.5)
    lines = {line.get_label().split(" ")[0]: line for line in fig.axes[0].lines}
    assert lines["perfect"].get_xdata().size == 0
    assert "not drawn at 50%" in lines["perfect"].get_label()
    cut = good.threshold[2]
    kept = (y == 0) & (score >= cut)
    edges = good.mass_edges
    before, _ = np.histogram(mass[y == 0], edges)
    after, _ = np.histogram(np.clip(mass[kept], edges[0], edges[-1]), edges)
    jsd = jensenshannon(before, after, base=2) ** 2
    assert lines["good"].get_xdata()[0] == pytest.approx(1 / jsd, rel=1e-9)
    assert lines["good"].get_ydata()[0] == pytest.approx((y == 0).sum() / kept.sum())
    plotting.plot_decorrelation_front({"perfect": perfect}, efficiency=None)  # no error


def test_sculpting_legend_never_rounds_a_kept_efficiency_onto_100_percent():
    *_, measures = _measures()
    achieved = measures.achieved_signal_efficiency.copy()
    achieved[-1] = 0.99996  # requested 90 %: 9.996 points above, not reachable
    achieved[-2] = 0.7  # as requested
    shown = dataclasses.replace(measures, achieved_signal_efficiency=achieved)
    labels = [line.get_label() for line in plotting.plot_mass_sculpting(shown).axes[0].patches]
    assert any("cut keeps 99.996%" in label for label in labels), labels
    assert not any("100.0%" in label for label in labels)
    requested = measures.signal_efficiency.copy()
    requested[-1] = 0.96  # 3.996 points below what the cut keeps: measured at its cut
    shown = dataclasses.replace(shown, signal_efficiency=requested)
    assert plotting._efficiency_labels(shown)[-1] == "99.996% (requested 96%)"


# -- the report -------------------------------------------------------------------------------

def _coarse_model():
    """A classifier whose score takes a few values: no cut keeps only 1 % of background."""
    return SimpleNamespace(_estimator_type="classifier",
                           decision_function=lambda X: np.clip(np.round(np.asarray(X)[:, 0]), -1, 2))


def _report_data(seed, n=600, scale=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 2))
    X[:, 0] += y
    w = rng.uniform(0.5, 1.5, n) * scale
    w[:10] *= -1
    return SimpleNamespace(X=X, y=y, w=w, feature_names=["a", "b"])


def _write(tmp_path, scale=1.0):
    train, test = _report_data(1, scale=scale), _report_data(2, scale=scale)
    curve = LearningCurve(np.array([1, 2]), np.array([0.6, 0.5]), np.array([0.6, 0.55]),
                          None, None, None, "log loss")
    path = report.report(_coarse_model(), train, test, tmp_path / "r.html", n_repeats=1,
                         learning_curve=curve)
    return path.read_text(encoding="utf-8"), train, test


def _table(text, table_id):
    body = re.search(f'<table id="{table_id}">(.*?)</table>', text).group(1)
    return [[html.unescape(c) for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)]


def _efficiencies(y, s, w):
    """Brute force: (eff_S, eff_B) of every cut score >= t, the empty one first."""
    cuts = np.r_[np.inf, np.unique(s)[::-1]]
    return np.array([[w[(y == c) & (s >= t)].sum() / w[y == c].sum() for c in (1, 0)]
                     for t in cuts]), cuts


def test_report_tables_against_brute_force_and_a_cut_that_keeps_nothing(tmp_path):
    text, train, test = _write(tmp_path)
    s = np.clip(np.round(test.X[:, 0]), -1, 2)
    eff, cuts = _efficiencies(test.y, s, test.w)
    summary = _table(text, "summary-table")
    pairs = (s[test.y == 1][:, None], s[test.y == 0][None, :])
    auc = np.sum(test.w[test.y == 1][:, None] * test.w[test.y == 0][None, :]
                 * ((pairs[0] > pairs[1]) + 0.5 * (pairs[0] == pairs[1])))
    auc /= test.w[test.y == 1].sum() * test.w[test.y == 0].sum()
    assert float(summary[1][1]) == pytest.approx(auc, rel=2e-4)
    for row, b in zip(summary[2:], (0.01, 0.1, 0.3), strict=True):
        # the cuts keeping at most b and at least b - min(0.05, b / 2) of the background
        near = (eff[:, 1] <= b + 1e-12) & (eff[:, 1] >= b - min(0.05, b / 2) - 1e-12)
        if near.any():
            assert float(row[1]) == pytest.approx(eff[near, 0].max(), abs=1e-4)
        else:  # the coarse scores' cuts jump over b
            assert row[1] == "n/a"
    samples = _table(text, "samples")
    header = samples[0]
    assert eff[1, 1] > 0.01  # the highest cut keeps more than 1 % of the background
    assert "no event passes" in header[8] and "n/a" not in header[8]
    ok = np.flatnonzero(eff[:, 1] <= 0.1 + 1e-12)
    best = ok[np.argmax(eff[ok, 0])]
    assert f"\u2265 {cuts[best]:g} (cut at 10 % background" in header[9]
    # the coarse scores' loosest cut keeping at most 10 % keeps 7.09 %: the header says so
    assert f"it keeps {100 * eff[best, 1]:.2f}% of the test background" in header[9]
    for row, label in zip(samples[1:3], (1, 0), strict=True):
        w = test.w[test.y == label]
        assert int(row[3]) == w.size
        assert float(row[4]) == pytest.approx(w.sum(), rel=1e-3)
        assert float(row[5]) == pytest.approx(np.sum(w * w), rel=1e-3)
        assert float(row[6]) == pytest.approx(np.mean(w < 0), rel=1e-3)
        assert float(row[8]) == 0.0
        assert float(row[9]) == pytest.approx(eff[best, 1 - label], rel=1e-3)


@pytest.mark.parametrize("scale", [1e-170, 1e170])
def test_report_sums_of_squared_weights_beyond_float64_are_shown_right(tmp_path, scale):
    text, _, test = _write(tmp_path, scale)
    for row, label in zip(_table(text, "samples")[1:3], (1, 0), strict=True):
        exact = sum((decimal.Decimal(float(v)) ** 2 for v in test.w[test.y == label]),
                    decimal.Decimal(0))
        total = sum(decimal.Decimal(float(v)) for v in test.w[test.y == label])
        for cell, reference in ((row[5], exact), (row[4], total)):  # relative: no abs floor
            assert abs(decimal.Decimal(cell) / reference - 1) < decimal.Decimal("1e-3"), cell


def test_overtraining_test_depends_only_on_the_weights_ratios():
    # sum w^2 underflowed at 1e-170 (KS p NaN, chi2 ndf 0) and overflowed at 1e170
    from hepbdt.evaluation.overtraining import effective_sample_size, overtraining_test

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    s = rng.normal(y, 1.0)
    w = rng.uniform(0.5, 1.5, 600)
    reference = overtraining_test(s[:300], y[:300], w[:300], s[300:], y[300:], w[300:])
    kish = w.sum() ** 2 / np.sum(w * w)
    for scale in (1e-170, 1e170):
        ws = w * scale
        assert effective_sample_size(ws) == pytest.approx(kish, rel=1e-12)
        scaled = overtraining_test(s[:300], y[:300], ws[:300], s[300:], y[300:], ws[300:])
        assert scaled.verdict == reference.verdict
        for name in ("signal", "background"):
            a, b = getattr(scaled, name), getattr(reference, name)
            assert a.ks_pvalue == pytest.approx(b.ks_pvalue, rel=1e-9)
            assert a.ndf == b.ndf and a.chi2_pvalue == pytest.approx(b.chi2_pvalue, rel=1e-9)


def test_percent_text_never_rounds_onto_0_or_100_percent():
    from hepbdt._util import percent_text

    assert percent_text(0.99996) == "99.996%" and percent_text(0.00004) == "0.004%"
    assert percent_text(0.5) == "50.0%" and percent_text(1.0) == "100.0%"
    assert percent_text(float("nan")) == "n/a"


def test_roc_points_of_signed_weights_beyond_one_stay_in_the_frame():
    """Negative background weights at low scores (NLO-like) make loose cuts keep more than
    the net background: eff_B above 1, a rejection below 1, 1 - eff_B below 0. Every drawn
    point lies inside its axes and the legend says why (the axes began at 1 and at 0:
    1,322 of 4,996 points were drawn outside them)."""
    rng = np.random.default_rng(1)
    y = np.r_[np.ones(2000, int), np.zeros(3000, int)]
    s = np.r_[rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 3000)]
    w = np.ones(y.size)
    low = np.flatnonzero((y == 0) & (s < -0.5))
    w[low[: int(0.6 * low.size)]] = -1.0
    fpr, tpr, _ = roc_curve(y, s, sample_weight=w, drop_intermediate=False)
    assert fpr.max() > 1.05  # the case itself
    fig = plotting.plot_roc_and_rejection(y, s, w)
    rejection, linear = fig.axes
    assert linear.lines[0].get_ydata().min() == pytest.approx(1 - fpr.max(), rel=1e-12)
    assert rejection.lines[0].get_ydata().min() == pytest.approx(1 / fpr.max(), rel=1e-12)
    for ax in fig.axes:
        line = ax.lines[0]
        x, v = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
        (x_low, x_high), (y_low, y_high) = ax.get_xlim(), ax.get_ylim()
        assert np.all((x >= x_low) & (x <= x_high) & (v >= y_low) & (v <= y_high))
        assert line.get_label().endswith(" *")  # marked, and the legend's title says why
        assert ax.get_legend().get_title().get_text() == (
            "* efficiencies beyond [0, 1] at some cuts:\nnegative weights")


def test_a_front_at_one_efficiency_names_what_a_tied_cut_keeps():
    """With tied scores the cut measured at 50 % keeps 54.9 % of the signal; the front's
    axis says 50 %, so its legend says what the point's cut keeps (it said nothing)."""
    rng = np.random.default_rng(3)
    y = (rng.random(4000) < 0.5).astype(int)
    mass = rng.uniform(50, 150, y.size)
    score = np.round(rng.normal(y * 1.0, 1.0) * 5) / 5
    measures = decorrelation_measures(score, y, mass)
    k = int(np.argmin(np.abs(measures.signal_efficiency - 0.5)))
    kept = np.mean(score[y == 1] >= measures.threshold[k])
    assert abs(kept - 0.5) > 0.01  # the case: no cut keeps 50 %
    fig = plotting.plot_decorrelation_front({"model": measures}, efficiency=0.5)
    label = fig.axes[0].lines[0].get_label()
    assert f"its cut keeps {100 * kept:.1f}% of the signal" in label, label
    untied = decorrelation_measures(np.asarray(score) + rng.normal(0, 1e-6, y.size), y, mass)
    label = plotting.plot_decorrelation_front({"m": untied}, efficiency=0.5).axes[0].lines[0]
    assert label.get_label() == "m"


def test_the_kfold_roc_legend_never_rounds_an_auc_onto_one():
    """The k-fold ROC figure printed f"{auc:.4f}": "AUC = 1.0000" for 0.99998, where the
    per-fold table beside it and every other figure print 0.99998."""
    from hepbdt._util import number_text
    from hepbdt.analysis.outputs import _kfold_roc_figure

    rng = np.random.default_rng(4)
    y = (rng.random(6000) < 0.5).astype(int)
    s = rng.normal(np.where(y == 1, 2.85, -2.85), 1.0)
    w, fold = np.ones(y.size), np.arange(y.size) % 3
    folds = SimpleNamespace(k=3, test_fold=fold, test=SimpleNamespace(y=y, w=w), test_scores=s)
    lines = _kfold_roc_figure(folds).axes[0].lines
    for i in range(4):
        mask = fold == i if i < 3 else np.ones(y.size, bool)
        auc = roc_auc_score(y[mask], s[mask])
        assert auc < 0.99999
        assert lines[i].get_label().endswith(f"(AUC = {number_text(auc, fixed=True)})")
        assert "1.0000" not in lines[i].get_label()


def test_rejection_ticks_below_one_read_as_their_values():
    """Signed weights can give a rejection far below 1 (eff_B of 500 where the background's
    net weight nearly cancels); the log axis's ticks at 0.01 and 0.1 read "0" (audit EU,
    2026-12-05). Every visible tick label reads back as the tick's own value."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rng = np.random.default_rng(3)
    y = np.r_[np.ones(2000, int), np.zeros(2000, int)]
    s = np.r_[rng.normal(1.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)]
    w = np.where((y == 0) & (s <= 0), -1.0, 1.0)
    assert w[y == 0].sum() / w[(y == 0) & (s > 0)].sum() < 0.01  # the case: rejection < 0.01
    fig = plotting.plot_background_rejection(y, s, w)
    ax = fig.axes[0]
    FigureCanvasAgg(fig).draw()
    low, high = ax.get_ylim()
    ticks = [t for t in ax.yaxis.get_major_ticks() if low <= t.get_loc() <= high]
    assert min(t.get_loc() for t in ticks) < 1  # ticks below 1 are shown
    for tick in ticks:
        assert float(tick.label1.get_text().replace(",", "")) == pytest.approx(tick.get_loc())
