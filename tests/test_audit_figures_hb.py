"""Audit HB (2026-12-06): what the figures draw and say, read back from their artists and
checked against numpy: the notes on scores outside the bins, the labels of the correlation
cells."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hepbdt import plotting  # noqa: E402
from hepbdt.evaluation.overtraining import overtraining_test  # noqa: E402


def _sample(seed: int = 0, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    s = rng.normal(np.where(y == 1, 0.8, -0.8), 1.0)
    w = rng.uniform(0.5, 1.5, n)
    return y, s, w


def _note_counts(title: str) -> tuple[int, int]:
    """(scores at -inf, at +inf) as the legend's note says them."""
    low = high = 0
    for part in title.removeprefix("scores ").split(", "):
        if part:
            count, _, where = part.partition(" at ")
            low, high = (int(count), high) if where.startswith("-inf") else (low, int(count))
    return low, high


def _expected_counts(s: np.ndarray, w: np.ndarray) -> tuple[int, int]:
    counted = w != 0
    return int(np.sum(counted & (s == -np.inf))), int(np.sum(counted & (s == np.inf)))


def test_score_note_counts_the_infinite_scores_of_events_only():
    """Three events of weight 0 at +inf are in no bin; the note said "3 at +inf in the last
    bin". One event of weight 2 at +inf and one at -inf are."""
    y, s, w = _sample()
    s[:3], w[:3] = np.inf, 0.0
    s[3], s[4], w[4] = np.inf, -np.inf, 2.0
    fig = plotting.plot_score_distributions(y, s, w, bins=10)
    title = fig.axes[0].get_legend().get_title().get_text()
    assert _note_counts(title) == _expected_counts(s, w) == (1, 1)
    w[3] = w[4] = 0.0  # every infinite score of weight 0: no note
    fig = plotting.plot_score_distributions(y, s, w, bins=10)
    assert fig.axes[0].get_legend().get_title().get_text() == ""


def test_overtraining_note_counts_the_infinite_scores_of_events_only():
    y, s, w = _sample(1)
    tr, te = slice(0, 300), slice(300, None)
    s[:2], w[:2] = np.inf, 0.0  # training events of weight 0
    s[300], w[300] = -np.inf, 0.0  # a test event of weight 0
    s[301] = np.inf
    result = overtraining_test(np.clip(s[tr], -9, 9), y[tr], w[tr],
                               np.clip(s[te], -9, 9), y[te], w[te])
    fig = plotting.plot_overtraining(s[tr], y[tr], w[tr], s[te], y[te], w[te], result=result)
    title = fig.axes[0].get_legend().get_title().get_text()
    assert _note_counts(title) == _expected_counts(s, w) == (0, 1)


def _weighted_percent(columns: list[np.ndarray], w: np.ndarray) -> np.ndarray:
    """The weighted Pearson correlations in percent, from numpy's weighted covariance."""
    cov = np.cov(np.vstack(columns), aweights=w)
    sd = np.sqrt(np.diag(cov))
    return 100.0 * cov / np.outer(sd, sd)


def _drawn(ax) -> tuple[list[str], np.ndarray, list[str]]:
    """(tick names, image values, cell texts) of one correlation panel."""
    return ([t.get_text() for t in ax.get_xticklabels()], np.asarray(ax.images[0].get_array()),
            [t.get_text() for t in ax.texts])


@pytest.mark.parametrize("container", ["dict", "frame"])
def test_correlation_cells_show_the_named_columns_pair(container):
    """A dict (or data frame) of columns c, a, b drawn with feature_names a, b, c: the cell
    named (a, b) showed corr(c, a), -5 %, where corr(a, b) is 96 %; without feature_names
    the names were x0, x1, x2."""
    rng = np.random.default_rng(19)
    n = 800
    y = rng.integers(0, 2, n)
    w = rng.uniform(0.2, 3.0, n)
    a = rng.normal(0.0, 1.0, n)
    columns = {"a": a, "b": a + rng.normal(0.0, 0.3, n), "c": rng.normal(0.0, 1.0, n) - 0.2 * a}
    given = {name: columns[name] for name in ("c", "a", "b")}
    if container == "frame":
        pandas = pytest.importorskip("pandas")
        given = pandas.DataFrame(given)
    for names in (["a", "b", "c"], None):
        fig = plotting.plot_correlation_matrices(given, y, w, feature_names=names)
        shown = names or ["c", "a", "b"]
        for ax, mask in zip(fig.axes[::2], (y == 1, y == 0), strict=True):
            expected = _weighted_percent([columns[k][mask] for k in shown], w[mask])
            ticks, image, texts = _drawn(ax)
            assert ticks == shown
            np.testing.assert_allclose(image, expected, rtol=1e-12, atol=1e-12)
            assert texts == [str(int(round(v))) for v in expected.ravel()]


def test_correlation_feature_names_of_another_count_are_refused():
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="2 names for the 3 columns of X"):
        plotting.plot_correlation_matrices(X, feature_names=["a", "b"])


def test_per_class_permutation_figures_name_their_class():
    """Each class's ranking drew the same axis, "roc_auc, class against the rest": no figure
    said which class's AUC dropped. The baselines are scikit-learn's one-against-rest AUCs
    of each label's column; a class absent from y is refused naming it."""
    from sklearn.metrics import roc_auc_score

    from hepbdt import BDTClassifier
    from hepbdt.evaluation.multiclass import per_class_permutation_importance

    rng = np.random.default_rng(8)
    n = 600
    labels = np.array(["tt", "bkg", "Higgs"])[rng.integers(0, 3, n)]  # sorted: Higgs, bkg, tt
    X = rng.normal(0.0, 1.0, (n, 2))
    X[:, 0] += (labels == "tt").astype(float) - (labels == "Higgs")
    w = rng.uniform(0.5, 2.0, n)
    model = BDTClassifier(n_trees=5, max_depth=2, boosting="gradient").fit(X, labels)
    rankings = per_class_permutation_importance(model, X, labels, w, n_repeats=1)
    codes = np.searchsorted(model.classes_, labels)
    expected = roc_auc_score(codes, model.predict_proba(X), multi_class="ovr", average=None,
                             sample_weight=w)
    np.testing.assert_allclose([r.baseline for r in rankings], expected, rtol=1e-12)
    for label, ranking in zip(model.classes_, rankings, strict=True):
        xlabel = plotting.plot_ranking(ranking).axes[0].get_xlabel().replace("\n", " ")
        assert f"class {label} against the rest" in xlabel and "Drop in ROC AUC" in xlabel
    absent = labels != "bkg"
    with pytest.raises(ValueError, match="class 1 against the rest"):
        per_class_permutation_importance(model, X[absent], labels[absent], n_repeats=1)
