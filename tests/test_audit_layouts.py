"""The input-layout and binned-read audits' findings: named columns in another order than
the model's were taken by position by the permutation ranking and the report's ranking
table, and pyarrow tables lost their names; integers beyond 2**53 in nullable, object and
list containers were rounded twice; ``score`` counted labels of another type as wrong;
BinnedMatrix wrapped out-of-range codes; a feature without edges showed as 0.0."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hepbdt import BDTClassifier
from hepbdt.binned import BinnedMatrix
from hepbdt.evaluation import permutation_importance
from hepbdt.report import report

NAMES = ["a", "b", "c", "d"]


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(3000, 4)), columns=NAMES)
    y = (X["a"] + 0.5 * X["b"] + rng.normal(size=3000) > 0).astype(int).to_numpy()
    return BDTClassifier(n_trees=20, max_depth=3, random_state=0).fit(X, y), X, y


def test_the_permutation_ranking_takes_named_columns_by_name(fitted):
    model, X, y = fitted
    plain = permutation_importance(model, X, y, n_repeats=2, random_state=0)
    shuffled = permutation_importance(model, X[["d", "c", "b", "a"]], y, n_repeats=2,
                                      random_state=0)
    assert plain.baseline == pytest.approx(shuffled.baseline, abs=0) and plain.baseline > 0.8
    assert np.array_equal(plain.importances_mean, shuffled.importances_mean)


def test_the_reports_ranking_names_each_column_right(fitted, tmp_path):
    # the model's own ranking is a, b (its signal is a + b / 2); given as d, c, b, a the
    # table put a's numbers beside d
    import re

    model, X, y = fitted
    text = report(model, (X[["d", "c", "b", "a"]], y), (X[["d", "c", "b", "a"]], y),
                  tmp_path / "r.html", n_repeats=1).read_text()
    table = text[text.find("TMVA importance"):]
    words = re.sub(r"<[^>]+>", " ", table[:table.find("<img")]).split()
    assert words[words.index("1") + 1] == "a" and words[words.index("2") + 1] == "b"


def test_a_pyarrow_table_is_taken_by_name(fitted):
    pa = pytest.importorskip("pyarrow")
    model, X, _ = fitted
    table = pa.Table.from_pandas(X[["d", "c", "b", "a"]], preserve_index=False)
    assert np.array_equal(model.decision_function(table), model.decision_function(X))


@pytest.mark.parametrize("container", ["Int64", "object", "list"])
def test_integers_beyond_2_53_are_rounded_once_from_every_container(container):
    v = 2**60 + 2**36 + 1  # float32(v) = 2**60 + 2**37, float32(float64(v)) = 2**60
    values = np.array([2**60, v, 2**60 + 2**38] * 50, dtype=np.int64)
    y = (values > 2**60 + 2**36).astype(int)
    frame = pd.DataFrame({"x": values, "z": np.zeros(values.size)})
    model = BDTClassifier(n_trees=1, max_depth=1, random_state=0).fit(frame, y)
    reference = model.decision_function(frame)
    if container == "Int64":
        given = frame.astype({"x": "Int64"})
    elif container == "object":
        given = frame.astype({"x": object})
    else:
        given = [[int(a), 0.0] for a in values]
    assert np.array_equal(model.decision_function(given), reference)


def test_score_refuses_labels_the_model_does_not_have(fitted):
    model, X, y = fitted
    assert model.score(X, y) > 0.7
    with pytest.raises(ValueError, match="not in the classes"):
        model.score(X, y.astype(str))


@pytest.mark.parametrize("codes", [np.array([[259]]), np.array([[-1]]), np.array([[2.7]])])
def test_binned_codes_out_of_range_are_refused(codes):
    with pytest.raises(ValueError, match="integers from 0 to 255"):
        BinnedMatrix(codes, [np.arange(9, dtype=np.float32)])


def test_a_feature_without_edges_shows_nan_not_zero():
    X = BinnedMatrix(np.zeros((3, 2), np.uint8), [[], [1.0, 2.0]])
    values = np.asarray(X)
    assert np.all(np.isnan(values[:, 0])) and np.all(values[:, 1] < 1.0)


def test_max_samples_is_a_whole_number_and_keeps_both_classes(fitted):
    # the second cliffs audit: 100.7 became 100, True and 1.0 became one event, and an
    # error about a class's weight did not name max_samples
    model, X, y = fitted
    for bad in (100.7, 1.0, True, 0):
        with pytest.raises(ValueError, match="max_samples must be a whole number"):
            permutation_importance(model, X, y, max_samples=bad)
    with pytest.raises(ValueError, match="max_samples=1: .* one class only"):
        permutation_importance(model, X, y, max_samples=1)
    assert permutation_importance(model, X, y, n_repeats=1, max_samples=500).n_events == 500


def test_flatness_bins_of_few_events_warn_and_mass_bins_are_bounded():
    from hepbdt.boosting.decorrelation import FlatnessBinsWarning, flatness_bins
    from hepbdt.evaluation import decorrelation_measures

    rng = np.random.default_rng(0)
    m, y, w = rng.random(2000), (rng.random(2000) < 0.5).astype(int), np.ones(2000)
    with pytest.warns(FlatnessBinsWarning, match="976 background events.*use at most 97 bins"):
        flatness_bins(m, y, w, 300, "background")
    with pytest.raises(ValueError, match="more mass bins than the"):
        decorrelation_measures(rng.random(2000), y, m, w, bins=10**6)
    # weights count as Kish's effective events: 976 rows, 2 % of them at weight 200 (about
    # 38 effective events), are too few for 20 cells, as 38 rows would be
    heavy = np.where(rng.random(2000) < 0.02, 200.0, 1.0)
    with pytest.warns(FlatnessBinsWarning, match=r"976 \(\d+ effective\) background events"):
        flatness_bins(m, y, heavy, 20, "background")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flatness_bins(m, y, w, 20, "background")
