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
