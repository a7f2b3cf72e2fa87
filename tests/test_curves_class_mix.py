"""Training against test at one class mix: the learning curve's training loss and the
multi-class correlation matrix of all events weigh the training classes (weights normalised
per class, ``norm``) to the test sample's (physical) class mix.

The expected values are computed here without hepbdt: the mixed weights class by class,
losses by scikit-learn's ``log_loss``, correlations by ``np.cov`` with ``aweights``.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import uproot  # noqa: E402
from sklearn.metrics import log_loss  # noqa: E402

from hepbdt import BDTClassifier, BDTRegressor, plotting  # noqa: E402
from hepbdt.analysis import load_config, train  # noqa: E402
from hepbdt.evaluation import learning_curve  # noqa: E402
from tests.ntuples import write_ttree  # noqa: E402


def _at_test_mix(y_tr, w_tr, y_te, w_te):
    """Each training class's weights x (its share of the test weight) / (its share of the
    training weight), and the factors."""
    classes = np.unique(y_tr)
    factors = np.array([(w_te[y_te == k].sum() / w_te.sum())
                        / (w_tr[y_tr == k].sum() / w_tr.sum()) for k in classes])
    return w_tr * factors[np.searchsorted(classes, y_tr)], factors


def _normalised(y, w):
    """Each class's weights summed to the mean class count (``equal_num_events``)."""
    out = w.astype(np.float64).copy()
    for k in np.unique(y):
        out[y == k] *= (y.size / np.unique(y).size) / w[y == k].sum()
    return out


def _events(seed, n, n_classes, yields):
    """Events of ``n_classes`` classes, x0 shifted by class; physical weights scaled per
    class by ``yields`` (a small signal)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] = X[:, 0] * np.where(y == 0, 2.0, 0.7) + y  # the classes unlike: unequal losses
    X[:, 1] += 0.5 * X[:, 0] * (y == 0)  # correlations that differ by class
    w = rng.uniform(0.5, 1.5, n) * np.asarray(yields)[y]
    return X, y, w


def _correlation_percent(X, w):
    cov = np.cov(X, rowvar=False, aweights=w)
    sigma = np.sqrt(np.diag(cov))
    return 100 * cov / np.outer(sigma, sigma)


def _caption(text, fig_id):
    return html.unescape(re.search(rf'<figure id="{fig_id}">.*?<figcaption>(.*?)</figcaption>',
                                   text).group(1))


@pytest.fixture
def drawn(monkeypatch):
    """The figures of plot_correlation_matrices and the curves of plot_learning_curve."""
    seen = {"correlation": [], "curve": []}
    correlation, curve = plotting.plot_correlation_matrices, plotting.plot_learning_curve

    def spy_correlation(*args, **kwargs):
        fig = correlation(*args, **kwargs)
        seen["correlation"].append(fig)
        return fig

    def spy_curve(c, *args, **kwargs):
        seen["curve"].append(c)
        return curve(c, *args, **kwargs)

    monkeypatch.setattr(plotting, "plot_correlation_matrices", spy_correlation)
    monkeypatch.setattr(plotting, "plot_learning_curve", spy_curve)
    return seen


@pytest.fixture(scope="module")
def binary():
    X, y, w_phys = _events(1, 3000, 2, (1.0, 0.02))
    X_tr, y_tr, w_tr = X[:1500], y[:1500], _normalised(y[:1500], w_phys[:1500])
    X_te, y_te, w_te = X[1500:], y[1500:], w_phys[1500:]
    model = BDTClassifier(n_trees=12, max_depth=2, random_state=0).fit(X_tr, y_tr, w_tr)
    return model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te)


@pytest.fixture(scope="module")
def multiclass():
    X, y, w_phys = _events(2, 2400, 3, (1.0, 0.05, 4.0))
    X_tr, y_tr, w_tr = X[:1200], y[:1200], _normalised(y[:1200], w_phys[:1200])
    X_te, y_te, w_te = X[1200:], y[1200:], w_phys[1200:]
    model = BDTClassifier(n_trees=8, max_depth=2, random_state=0).fit(
        X_tr, np.array(["a", "b", "c"])[y_tr], w_tr)
    return model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te)


def test_binary_training_loss_is_at_the_test_class_mix(binary):
    model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te) = binary
    w_mix, factors = _at_test_mix(y_tr, w_tr, y_te, w_te)
    curve = learning_curve(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te))
    p_tr, p_te = model.predict_proba(X_tr), model.predict_proba(X_te)
    expected = log_loss(y_tr, p_tr, sample_weight=w_mix)
    as_given = log_loss(y_tr, p_tr, sample_weight=w_tr)
    assert abs(expected - as_given) > 0.02  # the mixes differ enough to matter here
    assert curve.train_loss[-1] == pytest.approx(expected, rel=1e-9)
    assert curve.test_loss[-1] == pytest.approx(log_loss(y_te, p_te, sample_weight=w_te),
                                                rel=1e-9)
    np.testing.assert_allclose(curve.train_class_factors, factors, rtol=1e-12)
    # the weights as given, when asked
    given = learning_curve(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te), match_class_mix=False)
    assert given.train_loss[-1] == pytest.approx(as_given, rel=1e-9)
    assert given.train_class_factors is None
    np.testing.assert_allclose(given.train_auc, curve.train_auc, rtol=1e-12)  # AUC: per class


def test_identical_events_give_identical_curves(binary, multiclass):
    """The test events given as training events with normalised weights: the same curve."""
    for model, _, (X_te, y_te, w_te) in (binary, multiclass):
        curve = learning_curve(model, (X_te, y_te, _normalised(y_te, w_te)), (X_te, y_te, w_te))
        np.testing.assert_allclose(curve.train_loss, curve.test_loss, rtol=1e-12)
        if curve.test_auc is not None:
            np.testing.assert_allclose(curve.train_auc, curve.test_auc, rtol=1e-12)


def test_multiclass_training_loss_is_at_the_test_class_mix(multiclass):
    model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te) = multiclass
    w_mix, factors = _at_test_mix(y_tr, w_tr, y_te, w_te)
    curve = learning_curve(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te))
    p_tr = model.predict_proba(X_tr)
    expected = log_loss(y_tr, p_tr, sample_weight=w_mix, labels=[0, 1, 2])
    assert abs(expected - log_loss(y_tr, p_tr, sample_weight=w_tr, labels=[0, 1, 2])) > 0.02
    assert curve.train_loss[-1] == pytest.approx(expected, rel=1e-9)
    staged = list(model.staged_predict_proba(X_tr))
    assert curve.train_loss[0] == pytest.approx(
        log_loss(y_tr, staged[0], sample_weight=w_mix, labels=[0, 1, 2]), rel=1e-9)
    np.testing.assert_allclose(curve.train_class_factors, factors, rtol=1e-12)


def test_regression_curve_keeps_the_weights():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2))
    target = 2 * X[:, 0] + rng.normal(size=400)
    w = rng.uniform(0.2, 3.0, 400)
    model = BDTRegressor(n_trees=5, max_depth=2).fit(X[:200], target[:200], w[:200])
    curve = learning_curve(model, (X[:200], target[:200], w[:200]), (X[200:], target[200:]))
    residual = model.predict(X[:200]) - target[:200]
    assert curve.train_loss[-1] == pytest.approx(np.average(residual ** 2, weights=w[:200]))
    assert curve.train_class_factors is None


def test_report_binary_learning_curve_at_the_test_mix(binary, drawn, tmp_path):
    from hepbdt.report import report

    model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te) = binary
    path = report(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te), tmp_path / "r.html",
                  n_repeats=1)
    text = path.read_text()
    (curve,) = drawn["curve"]
    w_mix, _ = _at_test_mix(y_tr, w_tr, y_te, w_te)
    assert curve.train_loss[-1] == pytest.approx(
        log_loss(y_tr, model.predict_proba(X_tr), sample_weight=w_mix), rel=1e-9)
    assert "test sample's class mix" in _caption(text, "fig-learning-curve")
    # signal and background matrices: one class each, the training weights as they are
    (fig,) = drawn["correlation"]
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(),
                               _correlation_percent(X_tr[y_tr == 1], w_tr[y_tr == 1]), atol=1e-6)
    assert "class mix" not in _caption(text, "fig-correlation")


def test_report_multiclass_correlation_at_the_test_mix(multiclass, drawn, tmp_path):
    from hepbdt.report import report

    model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te) = multiclass
    path = report(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te), tmp_path / "r.html",
                  n_repeats=1)
    text = path.read_text()
    w_mix, _ = _at_test_mix(y_tr, w_tr, y_te, w_te)
    (fig,) = drawn["correlation"]
    shown = np.asarray(fig.axes[0].images[0].get_array())
    np.testing.assert_allclose(shown, _correlation_percent(X_tr, w_mix), atol=1e-6)
    assert np.abs(_correlation_percent(X_tr, w_tr) - shown).max() > 3  # the fix matters
    assert "test sample's (physical) class mix" in _caption(text, "fig-correlation")
    (curve,) = drawn["curve"]
    assert curve.train_loss[-1] == pytest.approx(
        log_loss(y_tr, model.predict_proba(X_tr), sample_weight=w_mix, labels=[0, 1, 2]),
        rel=1e-9)
    assert "test sample's class mix" in _caption(text, "fig-learning-curve")


def test_regression_report_says_nothing_of_a_class_mix(drawn, tmp_path):
    from hepbdt.report import report

    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 2))
    target = X[:, 0] + rng.normal(size=400)
    model = BDTRegressor(n_trees=5, max_depth=2).fit(X[:200], target[:200])
    text = report(model, (X[:200], target[:200]), (X[200:], target[200:]),
                  tmp_path / "r.html", n_repeats=1).read_text()
    for fig_id in ("fig-learning-curve", "fig-correlation"):
        assert "class mix" not in _caption(text, fig_id)


def test_multiclass_training_figures_and_report(tmp_path, drawn):
    """``hepbdt train`` of three classes of very different yields, norm = equal_num_events:
    the learning curve (shared by figure and report) and the correlation figure."""
    ntuple = tmp_path / "events.root"
    rng = np.random.default_rng(6)
    with uproot.recreate(ntuple) as file:
        for i, (name, scale) in enumerate((("qcd", 1.0), ("signal", 0.03), ("ttbar", 5.0))):
            n = 500
            x = rng.normal(i - 1.0, 1.0, n)
            write_ttree(file, name, {"x": x.astype(np.float32),
                                     "y": (rng.normal(size=n) + (1.5 - i) * x).astype(np.float32),
                                     "w": scale * rng.uniform(0.5, 1.5, n),
                                     "event": np.arange(n) + 1000 * i})
    samples = "\n".join(f'[samples.{name}]\nfiles = "{ntuple}:{name}"\nlabel = "{name}"\n'
                        'weight = "w"\n' for name in ("qcd", "signal", "ttbar"))
    config_path = tmp_path / "mc.toml"
    config_path.write_text(
        f'features = ["x", "y"]\nevent = "event"\n{samples}\n'
        '[split]\nnorm = "equal_num_events"\n[method]\nboosting = "gradient"\nn_trees = 8\n'
        f'max_depth = 2\n[output]\ndirectory = "{tmp_path / "out"}"\ntmva_xml = false\n'
        "permutation_repeats = 1\n")
    result = train(load_config(config_path))
    tr, te = result.train, result.test
    assert abs(tr.w[tr.y == 1].sum() / tr.w.sum() - te.w[te.y == 1].sum() / te.w.sum()) > 0.1
    w_mix, _ = _at_test_mix(tr.y, tr.w, te.y, te.w)
    (fig,) = drawn["correlation"]  # drawn once into figures/, embedded in the report
    np.testing.assert_allclose(np.asarray(fig.axes[0].images[0].get_array()),
                               _correlation_percent(tr.X.astype(np.float64), w_mix), atol=1e-4)
    (curve,) = drawn["curve"]
    assert curve is result.learning_curve
    assert curve.train_loss[-1] == pytest.approx(
        log_loss(tr.y, result.model.predict_proba(tr.X), sample_weight=w_mix, labels=[0, 1, 2]),
        rel=1e-9)
    # each class's overtraining figure fills the density of that class's test events
    # (np.histogram, density, on the figure's edges), "other classes" the rest
    from hepbdt.analysis.outputs import _multiclass_figures

    proba_te = result.model.predict_proba(te.X)
    figures = _multiclass_figures(result)
    for k, name in enumerate(("qcd", "signal", "ttbar")):
        patches = figures[f"overtraining_{name}"]().axes[0].patches
        for patch, mine in zip(patches[:2], (te.y == k, te.y != k), strict=True):
            values, edges, _ = patch.get_data()
            expected = np.histogram(np.clip(proba_te[mine, k], edges[0], edges[-1]), edges,
                                    weights=te.w[mine], density=True)[0]
            np.testing.assert_allclose(values, expected, rtol=1e-6, atol=1e-9)
    text = (tmp_path / "out" / "report.html").read_text()
    assert "test sample's (physical) class mix" in _caption(text, "fig-correlation")
    assert "test sample's class mix" in _caption(text, "fig-learning-curve")
