"""Every plot function runs (Agg) and writes non-empty PNG and PDF files."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from hepbdt import plotting  # noqa: E402
from hepbdt.evaluation import (  # noqa: E402
    LearningCurve,
    permutation_importance,
    resolution_vs_target,
    significance_scan,
    tmva_importance,
)


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    n = 600
    y = rng.integers(0, 2, n)
    s = rng.normal(np.where(y == 1, 0.8, -0.8), 1.0)
    w = rng.uniform(0.5, 1.5, n)
    w[:20] *= -1  # a few negative weights
    return y, s, w


def _check(fig, path):
    assert isinstance(fig, Figure)
    for suffix in (".png", ".pdf"):
        out = path.parent / (path.name + suffix)
        assert out.is_file() and out.stat().st_size > 1000, out
    assert not list(path.parent.glob("*.tmp"))


def test_roc_and_scores(tmp_path, scores):
    y, s, w = scores
    _check(plotting.plot_roc(y, s, w, train=(y, s + 0.1, w), path=tmp_path / "roc.png"),
           tmp_path / "roc")
    _check(plotting.plot_score_distributions(y, s, w, path=tmp_path / "scores"),
           tmp_path / "scores")


def test_overtraining(tmp_path, scores):
    y, s, w = scores
    fig = plotting.plot_overtraining(s[:300], y[:300], w[:300], s[300:], y[300:], w[300:],
                                     path=tmp_path / "sub" / "overtraining")
    _check(fig, tmp_path / "sub" / "overtraining")
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "Kolmogorov-Smirnov p-value" in text


def test_ranking_and_correlations(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    model = SimpleNamespace(decision_function=lambda d: d[:, 0], _estimator_type="classifier",
                            feature_names_in_=["pt", "eta", "phi", "m"])
    perm = permutation_importance(model, X, y, n_repeats=2)
    _check(plotting.plot_ranking(perm, path=tmp_path / "perm"), tmp_path / "perm")
    forest = SimpleNamespace(feature=np.array([0, -1, -1], dtype=np.int32),
                             gain=np.array([1.0, 0, 0]), cover=np.array([10.0, 5, 5]),
                             tree_offsets=np.array([0, 3]), tree_weights=np.ones(1),
                             n_features=4)
    _check(plotting.plot_ranking(tmva_importance(forest), path=tmp_path / "rank"),
           tmp_path / "rank")
    # the axis names what is drawn: TMVA's squared-gain importance was labelled summed gain
    labels = {q: plotting.plot_ranking(tmva_importance(forest, quadrature=q)).axes[0]
              .get_xlabel() for q in (False, True)}
    assert "summed split gain" in labels[False] and labels[True].startswith("TMVA importance")
    # no minor ticks between the names (mplhep's style turns them on: at 0.2 steps they
    # meant nothing, and matplotlib 3.7's locator took log10 of the descending step, -1)
    axis = plotting.plot_ranking(tmva_importance(forest)).axes[0].yaxis
    assert axis.get_minorticklocs().size == 0 and axis.get_majorticklocs().size == 4
    _check(plotting.plot_correlation_matrices(X, y, None, ["pt", "eta", "phi", "m"],
                                              path=tmp_path / "corr"), tmp_path / "corr")
    _check(plotting.plot_correlation_matrices(X, path=tmp_path / "corr1"), tmp_path / "corr1")


def test_learning_curve_and_significance(tmp_path, scores):
    y, s, w = scores
    n = np.arange(1, 21)
    curve = LearningCurve(n, 1 / n, 1 / n + 0.01 * n, 1 - 1 / n, 0.9 - 1 / n, 12,
                          "binomial deviance")
    _check(plotting.plot_learning_curve(curve, path=tmp_path / "lc"), tmp_path / "lc")
    curve_reg = LearningCurve(n, 1 / n, 1 / n, None, None, None, "squared error")
    _check(plotting.plot_learning_curve(curve_reg, path=tmp_path / "lcr"), tmp_path / "lcr")
    scan = significance_scan(y, s, np.abs(w), signal_yield=20, background_yield=500)
    _check(plotting.plot_significance_scan(scan, path=tmp_path / "sig"), tmp_path / "sig")


def test_regression_plots(tmp_path):
    rng = np.random.default_rng(2)
    t = rng.uniform(0, 5, 400)
    p = t + rng.normal(0, 0.3, 400)
    _check(plotting.plot_predicted_vs_true(t, p, path=tmp_path / "pvt"), tmp_path / "pvt")
    _check(plotting.plot_resolution(resolution_vs_target(t, p, bins=5), path=tmp_path / "res"),
           tmp_path / "res")


def test_background_rejection_is_log_scale_against_signal_efficiency(tmp_path, scores):
    y, s, w = scores
    fig = plotting.plot_background_rejection(y, s, np.abs(w), train=(y, s + 0.1, np.abs(w)),
                                             path=tmp_path / "rejection")
    _check(fig, tmp_path / "rejection")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log"
    assert ax.get_xlabel().startswith("Signal efficiency") and "1/ε" in ax.get_ylabel()
    # The test curve is 1/eff_B at each eff_S of the ROC curve (where eff_B > 0).
    from hepbdt.evaluation import roc_curve

    eff_s, eff_b, _ = roc_curve(y, s, np.abs(w))
    line = ax.get_lines()[0]
    keep = (eff_b > 0) & (eff_s > 0)
    np.testing.assert_allclose(line.get_xdata(), eff_s[keep])
    np.testing.assert_allclose(line.get_ydata(), 1.0 / eff_b[keep])
    both = plotting.plot_roc_and_rejection(y, s, w)
    assert [a.get_yscale() for a in both.axes] == ["log", "linear"]
    # No literal underscores in the axis labels (eps_B was printed as it was written).
    for a in (*fig.axes, *both.axes):
        assert "_B" not in a.get_ylabel().replace("$_", "") and "eps" not in a.get_ylabel()


def test_experiment_label_on_every_figure(scores):
    y, s, w = scores

    def texts(fig):
        return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)

    assert "Simulation" not in texts(plotting.plot_score_distributions(y, s, w))
    assert "Simulation" in texts(plotting.plot_score_distributions(y, s, w,
                                                                   exp_label="Simulation"))
    with plotting.experiment_label("CMS Simulation"):
        fig = plotting.plot_roc_and_rejection(y, s, w)
    assert all("CMS" in " ".join(t.get_text() for t in ax.texts) for ax in fig.axes)
    assert "CMS" not in texts(plotting.plot_roc(y, s, w))  # the context is over


@pytest.mark.parametrize(("n_features", "annotated"), [(4, True), (20, True), (21, False)])
def test_correlation_values_in_cells_up_to_20_variables(n_features, annotated):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, n_features))
    y = rng.integers(0, 2, 400)
    fig = plotting.plot_correlation_matrices(X, y)
    signal, background = (ax for ax in fig.axes if ax.get_title())
    assert signal.get_title() == "Correlation (signal)"
    assert background.get_title() == "Correlation (background)"
    assert len(signal.texts) == (n_features ** 2 if annotated else 0)
    if annotated:
        assert signal.texts[0].get_text() == "100"  # the diagonal, in percent


def test_long_curves_are_drawn_through_a_subset_that_keeps_their_ends_and_maximum():
    from hepbdt.evaluation import roc_curve

    assert plotting._thin(100) == slice(None)
    at = plotting._thin(1_000_000, keep=[123_457])
    assert np.all(np.diff(at) > 0) and at[0] == 0 and at[-1] == 999_999 and 123_457 in at
    assert at.size <= 2 * plotting.MAX_LINE_POINTS + 3
    rng = np.random.default_rng(5)
    y = (rng.random(60_000) < 0.5).astype(int)
    score = rng.normal(size=60_000) + y
    fig = plotting.plot_background_rejection(y, score)
    (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("test")]
    eff_s, eff_b, _ = roc_curve(y, score)
    keep = (eff_b > 0) & (eff_s > 0)
    assert len(line.get_ydata()) < keep.sum()  # thinned
    assert max(line.get_ydata()) == (1.0 / eff_b[keep]).max()  # the highest rejection drawn


def test_long_titles_stay_inside_the_figure(scores):
    """The k-fold overtraining title ran off the figure's right edge."""
    y, s, w = scores
    long = ("fold 0 of 3: its model's training vs test events (the summary's verdict: "
            "smallest p of 3 folds x 3), a title longer than the axes are wide")
    figures = [plotting.plot_overtraining(s, y, w, s, y, w, title=long),
               plotting.plot_roc_and_rejection(y, s, w, suptitle=long),
               plotting.plot_score_distributions(y, s, w, suptitle=long)]
    for fig in figures:
        fig.canvas.draw()
        box = fig.bbox
        texts = [ax.title for ax in fig.axes if ax.get_title()]
        texts += [t for t in fig.texts if t.get_text()]  # the suptitle
        assert texts
        for text in texts:
            extent = text.get_window_extent()
            assert box.x0 <= extent.x0 and extent.x1 <= box.x1, text.get_text()


def test_score_axis_tick_labels_do_not_run_into_each_other():
    """The style's large tick labels of a score axis from -1.3 to 0.75 touched
    ("-1.25-1.00-0.75"), and the ranking's long x label lost its start off the figure."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 2000)
    s = np.clip(rng.normal(np.where(y == 1, 0.4, -0.6), 0.5), -1.316, 0.723)
    s[:2] = -1.316, 0.723  # the demo's k-fold range, where ticks came every 0.25
    for fig in (plotting.plot_score_distributions(y, s), plotting.plot_overtraining(
            s, y, np.ones(y.size), s, y, np.ones(y.size))):
        fig.canvas.draw()
        ax = fig.axes[0]
        lo, hi = ax.get_xlim()
        boxes = sorted((label.get_window_extent() for label in ax.get_xticklabels()
                        if label.get_text() and lo <= label.get_position()[0] <= hi),
                       key=lambda box: box.x0)
        assert len(boxes) >= 3
        assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False))
        label = ax.xaxis.label.get_window_extent()
        assert fig.bbox.x0 <= label.x0 and label.x1 <= fig.bbox.x1


def test_log_tick_labels_saved_outside_the_style_ask_for_no_missing_font(caplog):
    """The report saves each figure after the ROOT style is left: a log axis's tick labels
    ($\\mathdefault{10^{2}}$, formatted then) looked the style's 'custom' math fonts up in
    the default rcParams and matplotlib warned that the 'cursive' family is missing
    (two findfont lines on the CLI's stderr for the decorrelation figure)."""
    import io
    import logging

    from hepbdt.evaluation.decorrelation import decorrelation_measures

    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    mass = rng.exponential(50.0, n) + 20.0
    score = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0) + mass / 200.0
    measures = decorrelation_measures(score, y, mass, variable="mjj")
    fig = plotting.plot_decorrelation_front({"this model": measures}, efficiency=None)
    with caplog.at_level(logging.WARNING, logger="matplotlib.font_manager"):
        fig.savefig(io.BytesIO(), format="png", dpi=72)  # as the report's _png, no style
    assert not [r for r in caplog.records if "findfont" in r.getMessage()]
    labels = [t for ax in fig.axes for t in (*ax.get_xticklabels(), *ax.get_yticklabels())]
    assert any("$" in t.get_text() for t in labels)  # the log axes' labels are math text
    assert {t.get_fontproperties().get_math_fontfamily() for t in labels} == {"stixsans"}


def test_histogram_plots_refuse_more_bins_than_a_figure_shows() -> None:
    """1e6 bins of 1,000 scores drew for 83 s (the overtraining plot over 120 s); 20,000 a
    side of the predicted-vs-true histogram asked for two 3 GiB arrays."""
    rng = np.random.default_rng(5)
    y = (rng.random(1000) < 0.5).astype(int)
    s, w, t = rng.normal(size=1000) + y, np.ones(1000), rng.normal(size=1000)
    message = r"bins={:,} is more bins than the {:,} allowed .*whole number in \[1, {:,}\]"
    with pytest.raises(ValueError, match=message.format(10**6, 10_000, 10_000)):
        plotting.plot_score_distributions(y, s, w, bins=10**6)
    with pytest.raises(ValueError, match=message.format(10**6, 10_000, 10_000)):
        plotting.plot_overtraining(s, y, w, s, y, w, bins=10**6)
    with pytest.raises(ValueError, match=message.format(20_000, 1_000, 1_000)):
        plotting.plot_predicted_vs_true(t, t + 0.1, w, bins=20_000)
    fig = plotting.plot_predicted_vs_true(t, t + 0.1, w, bins=plotting.MAX_2D_BINS)
    mesh = fig.axes[0].collections[0].get_array()
    assert mesh.size == plotting.MAX_2D_BINS**2 and mesh.sum() == pytest.approx(1000.0)


def _shown(text) -> str:
    """A matplotlib Text's string as drawn, by matplotlib's own rule; AssertionError if it
    is drawn as math text."""
    shown, is_math = text._preprocess_math(text.get_text())
    assert is_math is False, text.get_text()
    return shown


def test_names_with_dollars_are_drawn_as_written(tmp_path, scores):
    # '$x_1^2$' was drawn as math (x with sub- and superscript) and '$\frac{$' ended the
    # figure in matplotlib's ParseSyntaxException (audit FJ, 2026-12-05)
    y, s, w = scores
    names = ["$x_1^2$", "cost $5 and $6", "$\\frac{$", "a\\$b"]
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 4))
    fig = plotting.plot_correlation_matrices(X, (X[:, 0] > 0).astype(int),
                                             feature_names=names, path=tmp_path / "corr")
    ticks = [_shown(t) for ax in fig.axes[:1] for t in ax.get_yticklabels()]
    assert ticks[:4] == names
    fig = plotting.plot_overtraining(s[:300], y[:300], w[:300], s[300:], y[300:], w[300:],
                                     class_names=("$s_1$", "b$"), path=tmp_path / "ot")
    legend = [_shown(t) for t in fig.axes[0].get_legend().get_texts()]
    assert sorted(legend) == ["$s_1$ (test sample)", "$s_1$ (training sample)",
                              "b$ (test sample)", "b$ (training sample)"]
    k = np.arange(300) % 3
    proba = np.full((300, 3), 0.2) + 0.6 * (k[:, None] == np.arange(3))
    fig = plotting.plot_multiclass_roc(k, proba, class_names=["$q^2$", "t_t", "{x}"],
                                       path=tmp_path / "mc")
    legend = [_shown(t) for t in fig.axes[0].get_legend().get_texts()]
    assert [t.split(" (AUC")[0] for t in legend[:3]] == ["$q^2$, test", "t_t, test", "{x}, test"]


def test_labels_built_from_names_draw_them_as_written(tmp_path, monkeypatch, scores):
    # the multi-class report's overtraining figure took f"P({class})" unescaped: a class
    # '$\frac{$' "could not be drawn" (ParseSyntaxException) and '$q^2$' was drawn as
    # math; so was the mass sculpting figure's variable (audit FO, 2026-12-05)
    import hepbdt
    from hepbdt.evaluation import decorrelation_measures

    y, s, w = scores
    mass = np.linspace(50.0, 150.0, s.size)
    fig = plotting.plot_mass_sculpting(decorrelation_measures(s, y, mass, w, variable="$m$"))
    assert [_shown(ax.xaxis.label) for ax in fig.axes] == ["$m$", "$m$"]
    drawn = []
    original = plotting.plot_overtraining

    def recording(*args, **kwargs):
        fig = original(*args, **kwargs)
        drawn.append(_shown(fig.axes[0].xaxis.label))
        return fig

    monkeypatch.setattr(plotting, "plot_overtraining", recording)
    rng = np.random.default_rng(0)
    k = np.arange(300) % 3
    X = rng.normal(size=(300, 2)) + k[:, None]
    names = np.array(["$\\frac{$", "$q^2$", "c"])
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, names[k])
    page = hepbdt.report(model, (X[::2], k[::2]), (X[1::2], k[1::2]), tmp_path / "r.html",
                         n_repeats=1).read_text()
    assert "could not be drawn" not in page
    assert sorted(drawn) == sorted(f"P({n})" for n in names)


def test_correlation_images_and_cells_are_numpys_weighted_corrcoef():
    """Each matrix drawn (signal, then background) is 100 x numpy's weighted correlation
    (np.cov with aweights), on a colour scale of -100 to 100, each cell's text its whole
    percent; the log rejection axis of positive weights starts at a rejection of 1."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 3))
    X[:, 1] += 0.6 * X[:, 0]
    y = (rng.random(400) < 0.5).astype(int)
    w = rng.uniform(0.5, 2.0, 400)
    fig = plotting.plot_correlation_matrices(X, y, w)
    drawn = [ax for ax in fig.axes if ax.images and ax.get_title()]
    assert [ax.get_title() for ax in drawn] == ["Correlation (signal)",
                                                "Correlation (background)"]
    for ax, mask in zip(drawn, (y == 1, y == 0), strict=True):
        cov = np.cov(X[mask].T, aweights=w[mask])
        expected = 100 * cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
        np.testing.assert_allclose(np.asarray(ax.images[0].get_array()), expected, rtol=1e-9)
        assert ax.images[0].get_clim() == (-100, 100)
        cells = [t.get_text() for t in ax.texts]
        assert cells == [str(int(round(v))) for v in expected.ravel()]
    ax = plotting.plot_background_rejection(y, X[:, 0], w).axes[0]
    assert ax.get_ylim()[0] == 1.0


def test_decorrelation_front_draws_a_rejection_below_one():
    """Signed weights can pass more background than the total (efficiency 1.25): its
    rejection 1/1.25 = 0.8 is finite and positive, so it is drawn at (1/JSD, 0.8) on the
    log axes, beside a row of efficiency 0.5 at (1/0.2, 2)."""
    from hepbdt.evaluation.decorrelation import DecorrelationMeasures

    shape = np.full((2, 4), 0.25)
    measures = DecorrelationMeasures(
        signal_efficiency=np.array([0.3, 0.5]), threshold=np.array([0.4, 0.2]),
        background_efficiency=np.array([1.25, 0.5]), background_jsd=np.array([0.1, 0.2]),
        signal_jsd=np.array([0.01, 0.02]), mass_edges=np.linspace(0.0, 4.0, 5),
        background_shape_all=shape[0], signal_shape_all=shape[0],
        background_shapes=shape, signal_shapes=shape)
    ax = plotting.plot_decorrelation_front({"model": measures}, efficiency=None).axes[0]
    np.testing.assert_allclose(ax.lines[0].get_xydata(), [[10.0, 0.8], [5.0, 2.0]])
    assert ax.lines[0].get_label() == "model"


def test_mass_sculpting_legends_give_scipys_inverse_jsd():
    """Each cut's legend entry gives 1/JSD of the background mass before and after it, the
    JSD scipy's jensenshannon(base=2)**2 of np.histogram (a JSD of at most 1 read "∞")."""
    from scipy.spatial.distance import jensenshannon

    from hepbdt.evaluation import decorrelation_measures

    rng = np.random.default_rng(12)
    y = np.repeat([1, 0], 300)
    mass = rng.uniform(50, 150, 600)
    score = rng.normal(size=600) + y + 0.02 * mass * (1 - y)
    measures = decorrelation_measures(score, y, mass, None, efficiencies=(0.5,), bins=8)
    edges = np.linspace(mass[y == 0].min(), mass[y == 0].max(), 9)
    passed = (y == 0) & (score >= measures.threshold[0])
    jsd = jensenshannon(np.histogram(mass[y == 0], edges)[0],
                        np.histogram(mass[passed], edges)[0], base=2) ** 2
    ax = plotting.plot_mass_sculpting(measures).axes[0]
    labels = [line.get_label() for line in ax.patches]
    assert labels[1].endswith(f"(1/JSD {1 / jsd:.3g})"), labels


def test_a_class_of_one_event_is_a_unit_density_in_its_bin():
    """One background event: its bin holds 1 / bin width (np.histogram's density), every
    other bin 0; it is drawn, not refused as a class without positive weight."""
    s = np.array([0.1, 0.5, 0.9, 0.3])
    y = np.array([1, 1, 1, 0])
    ax = plotting.plot_score_distributions(y, s, np.array([1.0, 1.0, 1.0, 3.0]), bins=4).axes[0]
    expected = np.histogram([0.3], np.linspace(0.1, 0.9, 5), density=True)[0]
    heights = [np.asarray(p.get_path().vertices) for p in ax.patches]
    drawn = {round(float(v[:, 1].max()), 9) for v in heights}
    assert round(float(expected.max()), 9) in drawn and expected.max() == pytest.approx(5.0)


def test_a_thinned_significance_line_passes_through_the_best_cuts_it_quotes(tmp_path):
    # 30,000 distinct cuts are drawn through about 10,000: the global maxima (tight cuts
    # of too few background events) were kept, the best qualifying cuts that the legend
    # quotes and the dotted lines mark only by chance.
    rng = np.random.default_rng(2)  # S/sqrt(B)'s best qualifying cut is not a thinned point
    y = (rng.random(30_000) < 0.3).astype(int)
    s = rng.normal(np.where(y == 1, 1.5, 0.0), 1.0)
    scan = significance_scan(y, s, np.ones(y.size), signal_yield=20, background_yield=500,
                             min_background_events=200)
    fig = plotting.plot_significance_scan(scan, path=tmp_path / "sig")
    lines = fig.axes[0].get_lines()[::2]  # each curve, then its best cut's vertical line
    for line, key in zip(lines, ("s_over_sqrt_b", "s_over_sqrt_s_plus_b", "ams"), strict=True):
        best = scan.best_cuts[key]
        assert best.found
        x, v = line.get_xdata(), line.get_ydata()
        assert x.size < scan.thresholds.size
        assert np.any((x == best.threshold) & (v == best.value)), key


def test_a_saved_figure_is_drawn_once_with_the_pixels_of_its_tight_layout(scores, monkeypatch):
    # tight_layout leaves a placeholder layout engine, for which savefig draws the figure
    # once more before the draw it saves; the figures drop it: one draw, and the same
    # PNG as the figure with matplotlib's placeholder (the reference).
    import io

    from matplotlib.layout_engine import PlaceHolderLayoutEngine

    y, s, w = scores
    draws = []
    original = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda fig, r: draws.append(fig) or original(fig, r))
    saved = []
    for placeholder in (False, True):
        fig = plotting.plot_roc_and_rejection(y, s, w)
        if placeholder:
            fig.set_layout_engine(PlaceHolderLayoutEngine(True, True))
        draws.clear()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=72)
        saved.append((len(draws), buffer.getvalue()))
    assert saved[0][0] == 1 and saved[1][0] == 2
    assert saved[0][1] == saved[1][1]
