"""The containers a physicist hands the Python API (audit CP, 2026-12-05): a masked
array's masked entries are missing values wherever X comes in (a dict's columns too), and
every container rounds each value once to float32. References: the same X with NaN where
the mask is, and float32 of the exact value (numpy's single cast, Python's Fraction)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hepbdt._util import check_X

MASK = np.array([False, True, False, False, True])
A = np.array([1.5, 2.5, 3.5, 4.5, 5.5])
B = np.array([10.0, 20.0, 30.0, 40.0, 50.0])


def _nearest_float32(value: int) -> np.float32:
    """The float32 nearest the exact integer (ties to even), by exact arithmetic."""
    low = np.float32(float(value))
    candidates = [np.nextafter(low, np.float32(-np.inf)), low, np.nextafter(low, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(int(c)) - value),
                                          int(np.array(c).view(np.uint32)) & 1))


# float64 rounds it to the midpoint of two float32 neighbours, float32 then ties down;
# correctly rounded it goes up
WIDE = 2**60 + 2**36 + 1


def test_dict_of_masked_columns_keeps_the_mask():
    X, names = check_X({"a": np.ma.array(A, mask=MASK), "b": B})
    expected = np.column_stack([np.where(MASK, np.nan, A), B]).astype(np.float32)
    assert names == ["a", "b"]
    np.testing.assert_array_equal(X, expected)  # NaN where masked, not 2.5 and 5.5


def test_masked_wide_integers_round_once():
    assert _nearest_float32(WIDE) != np.float32(np.float64(WIDE))  # the case is sharp
    values = np.array([[WIDE, 1], [7, 2], [WIDE, 3]], dtype=np.int64)
    X, _ = check_X(np.ma.array(values, mask=[[False, False], [True, False], [False, False]]))
    assert X[0, 0] == X[2, 0] == _nearest_float32(WIDE)
    assert np.isnan(X[1, 0])
    X, _ = check_X({"id": np.ma.array(values[:, 0], mask=[False, True, False]), "x": B[:3]})
    assert X[0, 0] == _nearest_float32(WIDE) and np.isnan(X[1, 0])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="long double is float64 here")
def test_masked_long_doubles_round_once():
    value = np.longdouble(1) + np.longdouble(2) ** -24 + np.longdouble(2) ** -60
    assert np.float32(np.float64(value)) != np.float32(value)  # the case is sharp
    column = np.array([value, 2, 3], dtype=np.longdouble)
    X, _ = check_X(np.ma.array(np.column_stack([column, column]), mask=[[0, 0], [1, 0], [0, 0]]))
    assert X[0, 0] == np.float32(value) == X[0, 1]
    assert np.isnan(X[1, 0])


def test_model_scores_a_dict_of_masked_columns_as_missing_values():
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(4)
    x0, x1 = rng.normal(size=400), rng.normal(size=400)
    missing = np.arange(400) % 7 == 0
    y = (x0 + 0.5 * rng.normal(size=400) > 0).astype(int)
    model = BDTClassifier(n_trees=5, max_depth=2).fit(
        {"x0": np.where(missing, np.nan, x0), "x1": x1}, y)
    hidden = np.where(missing, 100.0, x0)  # what the mask hides: a value far on one side
    scores = model.decision_function({"x0": np.ma.array(hidden, mask=missing), "x1": x1})
    expected = model.decision_function({"x0": np.where(missing, np.nan, x0), "x1": x1})
    np.testing.assert_array_equal(scores, expected)


def _missing_x(seed: int = 4, n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(X with NaN in every 7th event's first column, the same X with 100 there, y)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X[:, 1] += 0.5 * X[:, 0]
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    hidden = X.copy()
    hidden[::7, 0] = 100.0  # what a mask hides: far on one side of every cut
    with_nan = X.copy()
    with_nan[::7, 0] = np.nan
    return with_nan, hidden, y


def test_evaluation_reads_masked_x_as_missing_values():
    from sklearn.metrics import roc_auc_score

    from hepbdt import BDTClassifier
    from hepbdt.evaluation import learning_curve, permutation_importance

    with_nan, hidden, y = _missing_x()
    masked = np.ma.array(hidden, mask=np.isnan(with_nan))
    model = BDTClassifier(n_trees=10, max_depth=2).fit(with_nan, y)
    expected = roc_auc_score(y, model.decision_function(with_nan))
    assert permutation_importance(model, masked, y, n_repeats=1).baseline == \
        pytest.approx(expected, rel=1e-12)
    # the learning curve of the same events with NaN where the mask is: equal, bit for bit
    curve = learning_curve(model, (masked, y), (masked, y))
    plain = learning_curve(model, (with_nan, y), (with_nan, y))
    np.testing.assert_array_equal(curve.test_loss, plain.test_loss)
    hidden_curve = learning_curve(model, (hidden, y), (hidden, y))
    assert hidden_curve.test_loss[-1] != plain.test_loss[-1]  # the hidden values matter


def test_evaluation_reads_frame_and_arrow_wide_integers_once():
    pd = pytest.importorskip("pandas")
    from hepbdt.evaluation._data import named_array, unpack_dataset

    ids = np.array([WIDE, WIDE + 2**38, 12345], dtype=np.int64)
    frame = pd.DataFrame({"id": ids, "x": [0.5, 1.5, 2.5]})
    expected = [_nearest_float32(int(v)) for v in ids]
    X, names = named_array(frame)
    assert names == ["id", "x"]
    np.testing.assert_array_equal(np.asarray(X[:, 0], np.float32), expected)
    X = unpack_dataset((frame, np.array([0, 1, 1])))[0]
    np.testing.assert_array_equal(np.asarray(X[:, 0], np.float32), expected)
    pa = pytest.importorskip("pyarrow")
    X, _ = named_array(pa.table({"id": ids, "x": [0.5, 1.5, 2.5]}))
    np.testing.assert_array_equal(np.asarray(X[:, 0], np.float32), expected)


def test_weighted_correlation_of_masked_frame_and_dict_input():
    pd = pytest.importorskip("pandas")
    from hepbdt.evaluation import weighted_correlation

    with_nan, hidden, _ = _missing_x(seed=5)
    both = ~np.isnan(with_nan[:, 0])
    expected = np.corrcoef(with_nan[both, 0], with_nan[both, 1])[0, 1]  # the pair's events
    masked = np.ma.array(hidden, mask=np.isnan(with_nan))
    frame = pd.DataFrame({"a": pd.array(with_nan[:, 0], dtype="Float64"), "b": with_nan[:, 1]})
    frame.loc[np.isnan(with_nan[:, 0]), "a"] = pd.NA
    for X in (masked, frame, {"a": with_nan[:, 0], "b": with_nan[:, 1]}):
        assert weighted_correlation(X)[0, 1] == pytest.approx(expected, rel=1e-12)


def test_evaluation_refuses_masked_labels():
    """Labels have no missing value: a mask is refused, as the estimators refuse it (np.asarray
    dropped it, and the hidden labels were scored)."""
    from hepbdt import BDTClassifier, report
    from hepbdt.evaluation import (
        learning_curve,
        one_vs_rest_auc,
        per_class_permutation_importance,
        permutation_importance,
    )

    with_nan, _, y = _missing_x()
    X = np.nan_to_num(with_nan)
    model = BDTClassifier(n_trees=5, max_depth=2).fit(X, y)
    masked = np.ma.array(y, mask=np.arange(y.size) % 3 == 0)
    for call in (lambda: learning_curve(model, (X, masked), (X, y)),
                 lambda: permutation_importance(model, X, masked, n_repeats=1),
                 lambda: report(model, (X, y), (X, masked), "unused.html")):
        with pytest.raises(ValueError, match="masked array"):
            call()
    three = np.arange(y.size) % 3
    proba = np.full((y.size, 3), 1 / 3)
    with pytest.raises(ValueError, match="masked array"):
        one_vs_rest_auc(np.ma.array(three, mask=three == 0), proba)
    multi = BDTClassifier(n_trees=2, max_depth=2).fit(X, three)
    with pytest.raises(ValueError, match="masked array"):
        per_class_permutation_importance(multi, X, np.ma.array(three, mask=three == 0),
                                         n_repeats=1)


def _date_inputs() -> list:
    """Dates and durations in the containers that read them as a count of their unit."""
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    day = np.datetime64("2020-01-01")  # numpy reads it as 18262 days as an object
    return [
        pd.DataFrame({"t": pd.date_range("2020", periods=3, tz="UTC")}),  # was microseconds
        np.array([[day, 1.0]] * 3, dtype=object),                        # was 18262 days
        [[np.timedelta64(5, "s"), 1.0]] * 3,                               # was 5 seconds
        pd.DataFrame({"t": pd.date_range("2020", periods=3), "x": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"t": pd.period_range("2020", periods=3), "x": [1.0, 2.0, 3.0]}),
        {"t": np.array([1, 2, 3], dtype="timedelta64[s]"), "x": np.ones(3)},
        pa.table({"t": pd.date_range("2020", periods=3).values, "x": [1.0, 2.0, 3.0]}),
    ]


@pytest.mark.parametrize("case", range(7))
def test_dates_and_durations_are_refused_in_every_container(case):
    """Their number depends on their unit (README: refused); some containers turned them
    into a count of microseconds or days, others raised numpy's DTypePromotionError."""
    X = _date_inputs()[case]
    with pytest.raises(TypeError, match="X must be numeric .*depends on their unit"):
        check_X(X)


def test_arrow_integer_column_with_nulls_rounds_once():
    """A null in an Arrow int64 column: the cast to float64 that made it NaN raised
    ArrowInvalid for a value beyond 2**53 (and would round it twice)."""
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"id": pa.array([WIDE, None, 5], type=pa.int64()), "x": [1.0, 2.0, 3.0]})
    X, names = check_X(table)
    assert names == ["id", "x"]
    assert X[0, 0] == _nearest_float32(WIDE) and np.isnan(X[1, 0]) and X[2, 0] == 5


def test_missing_labels_are_named_as_missing_not_as_a_continuous_target():
    """A NaN label (pandas' NA of a nullable column too) was refused as 'Unknown label
    type: continuous ... use BDTRegressor', which sent the user to the wrong remedy."""
    pd = pytest.importorskip("pandas")
    from hepbdt import BDTClassifier

    X = np.arange(20, dtype=np.float64).reshape(10, 2)
    y = np.array([0, 1] * 5, dtype=np.float64)
    y[[3, 7]] = np.nan
    nullable = pd.Series([0, 1] * 5, dtype="Int64")
    nullable[[3, 7]] = pd.NA
    for labels in (y, nullable):
        with pytest.raises(ValueError, match=r"y has 2 missing labels .*first at event 3"):
            BDTClassifier(n_trees=2).fit(X, labels)
    with pytest.raises(ValueError, match="continuous"):  # a real continuous target still is
        BDTClassifier(n_trees=2).fit(X, np.linspace(0, 1, 10))


def test_awkward_records_are_columns_by_field_and_none_is_missing():
    """uproot's ``tree.arrays(features)`` gives awkward records; None (an option type) is a
    missing value, as a masked entry or an Arrow null is, and fields are feature names."""
    import awkward as ak

    records = ak.Array({"b": B.tolist(), "a": [1.5, None, 3.5, 4.5, None]})
    X, names = check_X(records, names=["a", "b"])
    np.testing.assert_array_equal(X, np.column_stack([np.where(MASK, np.nan, A), B])
                                  .astype(np.float32))
    assert names == ["a", "b"]
    rows, names = check_X(ak.Array([[1.0, None], [0.5, 0.25]]))
    assert names is None and np.isnan(rows[0, 1]) and rows[1, 1] == np.float32(0.25)
    wide, _ = check_X(ak.Array({"id": [WIDE, None, WIDE]}))
    assert wide[0, 0] == _nearest_float32(WIDE) and np.isnan(wide[1, 0])
    with pytest.raises(ValueError, match=r"X must be numeric .* awkward array of type"):
        check_X(ak.Array({"jets": [[1.0, 2.0], [], [3.0]]}))


@pytest.mark.parametrize("column", ["category", "object"])
def test_a_column_of_words_is_refused_by_name(column):
    pandas = pytest.importorskip("pandas")
    words = pandas.Series(["x", "y", "x", "y", "x"], dtype=column)
    with pytest.raises(ValueError, match=r"X's column 'kind' \(.*\) is not numeric.*cat.codes"):
        check_X(pandas.DataFrame({"kind": words, "b": B}))


def test_python_integers_beyond_64_bits_are_refused_naming_x():
    with pytest.raises(ValueError, match=r"X holds the integer 1180591620717411303424, beyond "
                                         "64 bits"):
        check_X([[2**70, 1.0], [1, 2.0]])


def test_an_object_column_of_numbers_reads_none_as_missing():
    pandas = pytest.importorskip("pandas")
    column = pandas.Series([1.5, None, 3.5, 4.5, np.nan], dtype=object)
    X, _ = check_X(pandas.DataFrame({"a": column, "b": B}))
    np.testing.assert_array_equal(X, np.column_stack([np.where(MASK, np.nan, A), B])
                                  .astype(np.float32))
