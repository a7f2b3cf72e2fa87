"""Integer features beyond 2**53 (the bin-edge audit, 2026-12-02): every container rounds
them once to float32, as a file read or a plain int64 array does. Through float64 (numpy's
column_stack of an int64 column beside a float one, pandas' to_numpy of mixed columns) the
value is rounded twice and can land on the other float32 neighbour, the other side of a
split. Reference: the correctly rounded float32 of the exact integer (Python's Fraction)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from hepbdt._util import check_X


def _nearest_float32(value: int) -> np.float32:
    """The float32 nearest the exact integer (ties to even), by exact arithmetic."""
    low = np.float32(float(value))  # a candidate near it; walk to the true nearest
    candidates = [np.nextafter(low, np.float32(-np.inf)), low, np.nextafter(low, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(int(c)) - value),
                                          int(np.array(c).view(np.uint32)) & 1))


IDS = np.array([2**54 + 2**30 + 1, 2**53 + 2**29 + 1, 2**62 + 2**38 + 1, 12345], dtype=np.int64)


def test_the_reference_differs_from_rounding_through_float64():
    assert _nearest_float32(int(IDS[0])) != np.float32(np.float64(IDS[0]))


def test_dict_columns_round_wide_integers_once():
    X, _ = check_X({"id": IDS, "x": np.linspace(0, 1, IDS.size)})
    np.testing.assert_array_equal(X[:, 0], [_nearest_float32(int(v)) for v in IDS])


def test_frame_columns_round_wide_integers_once():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": IDS, "x": np.linspace(0, 1, IDS.size),
                          "n": pd.array([1, None, 3, 4], dtype="Int64")})
    X, names = check_X(frame)
    assert names == ["id", "x", "n"]
    np.testing.assert_array_equal(X[:, 0], [_nearest_float32(int(v)) for v in IDS])
    assert np.isnan(X[1, 2]) and X[2, 2] == 3
    np.testing.assert_array_equal(X[:, 0], check_X(IDS[:, None])[0][:, 0])
