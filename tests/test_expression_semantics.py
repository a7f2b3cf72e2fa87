"""Expressions computed as ROOT computes them, and reads that refuse what they cannot do
right: missing values, integer and float32 arithmetic, masks, comparison chains, remainders,
constant names, fixed-size masks and files listed twice.

Every expected value is computed here with NumPy, Awkward or Python integers directly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io import ExpressionError, InputError, MissingBranchError, Sample, read
from hepbdt.io.expressions import Expression, to_column
from tests.ntuples import KINDS, write_ntuple

RNG = np.random.default_rng(11)
N = 300
N_JET = RNG.integers(0, 4, N).astype(np.int32)
N_JET[:4] = [0, 1, 2, 3]
N_LEP = RNG.integers(0, 3, N).astype(np.int32)
N_LEP[:4] = [1, 0, 2, 3]  # the first event has more leptons than jets, the second fewer
JET_PT = ak.unflatten(RNG.uniform(10, 100, N_JET.sum()).astype(np.float32), N_JET)
JET_ETA = ak.unflatten(RNG.uniform(-3, 3, N_JET.sum()).astype(np.float32), N_JET)
JET_Q = ak.unflatten(RNG.integers(-1, 2, N_JET.sum()).astype(np.int32), N_JET)
JET_ID = ak.unflatten(RNG.integers(0, 8, N_JET.sum()).astype(np.int32), N_JET)
LEP_PT = ak.unflatten(RNG.uniform(5, 50, N_LEP.sum()).astype(np.float32), N_LEP)
ARRAYS = {"nJet": N_JET, "Jet_pt": JET_PT, "Jet_eta": JET_ETA, "Jet_q": JET_Q,
          "Jet_id": JET_ID, "Lep_pt": LEP_PT}


def _element(lists: ak.Array, i: int) -> np.ndarray:
    """Element i of each list as float64, NaN where the list is shorter."""
    return np.array([row[i] if len(row) > i else np.nan for row in lists.tolist()])


def _reduce(lists: ak.Array, func) -> np.ndarray:
    """``func`` of each list as float64, NaN for an empty list."""
    return np.array([func(row) if row else np.nan for row in lists.tolist()], dtype=np.float64)


def _column(text: str, arrays: dict, role: str = "feature", dtype=np.float64) -> np.ndarray:
    expression = Expression(text, role)
    n = len(next(iter(arrays.values())))
    return to_column(expression.evaluate(arrays), n, dtype, expression)


def _passes(text: str, arrays: dict) -> np.ndarray:
    """The expression as a cut, as read() applies it: non-zero and not NaN passes."""
    values = _column(text, arrays, "cut")
    return (values != 0) & ~np.isnan(values)


def _write(path: Path, branches: dict, tree: str = "T") -> Path:
    types = {name: ("var * " + str(value.type.content.content) if isinstance(value, ak.Array)
                    else value.dtype if value.ndim == 1 else (value.dtype, value.shape[1:]))
             for name, value in branches.items()}
    with uproot.recreate(path) as file:
        file.mktree(tree, types)
        file[tree].extend(branches)
    return path


# -- 1. a missing element or an empty list's reduction is NaN inside the expression --------

PT0 = _element(JET_PT, 0)
PT1 = _element(JET_PT, 1)
PT_MAX = _reduce(JET_PT, max)
PT_MIN = _reduce(JET_PT, min)


@pytest.mark.parametrize(("text", "expected"), [
    ("nJet == 0 || Jet_pt[:, 0] > 50", (N_JET == 0) | (PT0 > 50)),
    ("!(Jet_pt[:, 0] > 50)", ~(PT0 > 50)),
    ("isnan(Jet_pt[:, 0])", np.isnan(PT0)),
    ("num(Jet_pt) == 0 || max(Jet_pt) < 30", (N_JET == 0) | (PT_MAX < 30)),
    ("!(min(Jet_pt) > 30)", ~(PT_MIN > 30)),
    ("isnan(mean(Jet_pt)) && isnan(argmax(Jet_pt))", N_JET == 0),
    ("Jet_pt[:, 1] > 30 || nJet < 2", (PT1 > 30) | (N_JET < 2)),
    ("!(Jet_q[:, 0] == 0)", ~(_element(JET_Q, 0) == 0)),
])
def test_missing_values_follow_ieee_rules_in_cuts(text: str, expected: np.ndarray) -> None:
    assert 0 < expected.sum() < N
    np.testing.assert_array_equal(_passes(text, ARRAYS), expected)


@pytest.mark.parametrize(("text", "expected"), [
    ("where(isnan(Jet_pt[:, 0]), -1, Jet_pt[:, 0])", np.where(np.isnan(PT0), -1, PT0)),
    ("isnan(Jet_pt[:, 0])", np.isnan(PT0)),
    ("Jet_q[:, 0] * 2", _element(JET_Q, 0) * 2),
    ("max(Jet_q) + 1", _reduce(JET_Q, max) + 1),
    ("argmin(Jet_pt)", _reduce(JET_PT, lambda r: int(np.argmin(r)))),
    ("Jet_pt[:, -1] if nJet > 0 else -5", np.where(N_JET > 0, _reduce(JET_PT, lambda r: r[-1]),
                                                     -5)),
])
def test_missing_values_are_nan_in_features(text: str, expected: np.ndarray) -> None:
    np.testing.assert_allclose(_column(text, ARRAYS), expected, rtol=1e-6, equal_nan=True)


def test_missing_values_in_a_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "jets.root", {"nJet": N_JET, "Jet_pt": JET_PT})
    ds = read(Sample("s", path, cut="nJet == 0 || Jet_pt[:, 0] > 50"),
              ["isnan(Jet_pt[:, 0])", "where(isnan(Jet_pt[:, 0]), -1, Jet_pt[:, 0])"])
    keep = (N_JET == 0) | (PT0 > 50)
    np.testing.assert_array_equal(ds.event, np.flatnonzero(keep))
    np.testing.assert_array_equal(ds.X[:, 0], np.isnan(PT0[keep]))
    np.testing.assert_allclose(ds.X[:, 1], np.where(np.isnan(PT0), -1, PT0)[keep], rtol=1e-6)


def test_a_bit_test_on_a_missing_element_is_refused() -> None:
    with pytest.raises(ExpressionError, match=r"Jet_id\[:, 0\] holds floating-point"):
        _column("Jet_id[:, 0] & 4", ARRAYS)
    full = {"Jet_id": JET_ID[N_JET > 0]}
    first = np.array([row[0] for row in JET_ID[N_JET > 0].tolist()])
    np.testing.assert_array_equal(_column("Jet_id[:, 0] & 4", full), first & 4)


# -- 2. integers and booleans do not wrap around ---------------------------------------

INTS = {
    "nU": np.array([0, 1, 3, 7], np.uint32),
    "q8": np.array([-128, -3, 100, 127], np.int8),
    "n16": np.array([-300, 2, 30000, 5], np.int16),
    "n32": np.array([3, -5, 2**31 - 1, 0], np.int32),
    "b1": np.array([True, True, False, False]),
    "b2": np.array([True, False, True, False]),
    "flags": np.array([4, 5, 2, 12], np.int32),
    "u8": np.array([3, 200, 255, 1], np.uint8),
}
BIG = {name: [int(v) for v in values] for name, values in INTS.items()}


@pytest.mark.parametrize(("text", "expected"), [
    ("nU - 2", [v - 2 for v in BIG["nU"]]),
    ("abs(nU - 2)", [abs(v - 2) for v in BIG["nU"]]),
    ("-nU", [-v for v in BIG["nU"]]),
    ("q8 * 2", [v * 2 for v in BIG["q8"]]),
    ("abs(q8)", [abs(v) for v in BIG["q8"]]),
    ("-q8", [-v for v in BIG["q8"]]),
    ("n16 * n16", [v * v for v in BIG["n16"]]),
    ("n32 * 1000000000", [v * 1_000_000_000 for v in BIG["n32"]]),
    ("n32 + 1", [v + 1 for v in BIG["n32"]]),
    ("b1 + b2", [a + b for a, b in zip(BIG["b1"], BIG["b2"], strict=True)]),
    ("b1 - 1", [v - 1 for v in BIG["b1"]]),
    ("-b1", [-v for v in BIG["b1"]]),
    ("u8 + u8", [2 * v for v in BIG["u8"]]),
    ("max(nU - 2, q8)", [max(a - 2, b) for a, b in zip(BIG["nU"], BIG["q8"], strict=True)]),
    ("where(b1, nU - 5, q8)", [a - 5 if c else b for a, b, c in
                               zip(BIG["nU"], BIG["q8"], BIG["b1"], strict=True)]),
    ("clip(nU - 2, -1, 3)", [min(max(v - 2, -1), 3) for v in BIG["nU"]]),
    ("fmod(nU - 5, 3)", [np.fmod(v - 5, 3) for v in BIG["nU"]]),
    ("(flags + 0) & 4", [v & 4 for v in BIG["flags"]]),
    ("flags & 4", [v & 4 for v in BIG["flags"]]),
])
def test_integer_arithmetic_does_not_wrap(text: str, expected: list[int]) -> None:
    np.testing.assert_array_equal(_column(text, INTS), np.array(expected, np.float64))


def test_integer_powers_and_functions_work_in_double() -> None:
    n = np.array([1, 2, 4], np.int32)
    np.testing.assert_allclose(_column("n ** -1", {"n": n}), 1.0 / n)
    np.testing.assert_allclose(_column("pow(n, -2)", {"n": n}), n.astype(np.float64) ** -2)
    small = np.array([3, 7, 100], np.int8)
    values = Expression("log(n)").evaluate({"n": small})
    assert values.dtype == np.float64  # not NumPy's float16 for int8
    np.testing.assert_allclose(values, np.log(small.astype(np.float64)))


def test_integer_cut_weight_and_event_in_a_read(tmp_path: Path) -> None:
    run = np.array([315000, 4_000_000_000, 7], np.uint32)
    event = np.array([123456789, 987654321987, 2**40 + 1], np.uint64)
    nu = np.array([1, 3, 2], np.uint32)
    q8 = np.array([-3, 100, 50], np.int8)
    path = _write(tmp_path / "ints.root", {"run": run, "event": event, "nU": nu, "q8": q8})
    ds = read(Sample("s", path, cut="nU - 2 >= 0", weight="q8 * 2"), ["nU - 2"],
              event="run * 10000000 + event")
    keep = [i for i in range(3) if int(nu[i]) - 2 >= 0]
    np.testing.assert_array_equal(ds.X[:, 0], [int(nu[i]) - 2 for i in keep])
    np.testing.assert_array_equal(ds.w, [int(q8[i]) * 2 for i in keep])
    # 4e16 + 987654321987 is beyond 2**53: exact in int64 only
    assert ds.event.tolist() == [int(run[i]) * 10_000_000 + int(event[i]) for i in keep]


UINT64 = {"ev": np.array([0, 5, 2**62], np.uint64),
          "huge": np.array([2**64 - 1, 2**63, 1], np.uint64),
          "s": np.array([-1, 2, 3], np.int32)}


def test_uint64_arithmetic_policy() -> None:
    ev = [int(v) for v in UINT64["ev"]]
    huge = [int(v) for v in UINT64["huge"]]
    # every value below 2**63: int64, exact
    assert _column("ev - 1", UINT64, "event", np.int64).tolist() == [v - 1 for v in ev]
    assert _column("ev + s", UINT64, "event", np.int64).tolist() == [
        a + b for a, b in zip(ev, [-1, 2, 3], strict=True)]
    # beyond 2**63: integer arithmetic refused in every role (in double for such a chunk
    # only, another chunk's events would get other values); in double when asked
    for role in ("feature", "cut", "event"):
        with pytest.raises(ExpressionError, match=r"beyond 2\*\*63 - 1.*u \* 1\.0"):
            _column("huge - 1", UINT64, role, np.int64 if role == "event" else np.float64)
    np.testing.assert_array_equal(_column("huge * 1.0 - 1", UINT64), [float(v) - 1 for v in huge])
    np.testing.assert_array_equal(_column("huge / 2", UINT64), [float(v) / 2 for v in huge])
    # comparisons are exact without any conversion
    np.testing.assert_array_equal(_passes("huge > s", UINT64), [True, True, False])
    assert _column("ev", UINT64, "event", np.uint64).tolist() == ev
    empty = Expression("ev - 1", "event").evaluate({"ev": np.array([], np.uint64)})
    assert empty.dtype == np.int64 and len(empty) == 0
    jagged = {"ev": ak.unflatten(np.array([1, 2, 2**63 + 1], np.uint64), [2, 0, 1])}
    with pytest.raises(ExpressionError, match=r"beyond 2\*\*63 - 1"):
        _column("sum(ev - 1)", jagged)
    assert _column("sum(ev * 1.0)", jagged).tolist() == [3.0, 0.0, float(2**63 + 1)]



@pytest.mark.parametrize("container", [np.asarray, ak.Array])
@pytest.mark.parametrize("value", [2**63 + 1, 2**63 + 1024])
def test_uint64_just_beyond_int64_is_refused_at_every_numpy(container, value) -> None:
    """numpy < 2 compared the uint64 maximum with 2**63 - 1 in double, where both are 2**63:
    event 2**63 + 1 - 1 gave -2**63 (Python's exact integers: 2**63, beyond int64)."""
    assert value - 1 > 2**63 - 1
    data = {"ev": container(np.array([5, value], np.uint64))}
    for role in ("feature", "event"):
        with pytest.raises(ExpressionError, match=rf"{value}, is beyond 2\*\*63 - 1"):
            Expression("ev - 1", role).evaluate(data)

BIG64 = {"e": np.array([5, 2**40, -(2**62), 2**63 - 1], np.int64),
         "m": np.array([-(2**63), 1, 2, 3], np.int64),
         "j": ak.Array([[2**62, 2**62], [1, 2], [], [-(2**62), -(2**62), -1]])}


@pytest.mark.parametrize(("text", "exact"), [
    ("e * 10000000000000", lambda e, m: e * 10_000_000_000_000),
    ("e + e", lambda e, m: e + e),
    ("m - e", lambda e, m: m - e),
    ("-m", lambda e, m: -m),
    ("abs(m)", lambda e, m: abs(m)),
    ("e * m", lambda e, m: e * m),
])
def test_int64_arithmetic_beyond_the_range_is_refused_in_every_role(text, exact) -> None:
    for role in ("feature", "cut", "weight", "event"):
        with pytest.raises(ExpressionError, match="beyond the 64-bit integer range"):
            Expression(text, role).evaluate(BIG64)
    # within the range: exact, as Python's integers
    small = {"e": BIG64["e"] % 1000, "m": BIG64["m"] % 1000}
    pairs = zip(small["e"].tolist(), small["m"].tolist(), strict=True)
    assert _column(text, small, "event", np.int64).tolist() == [exact(e, m) for e, m in pairs]


def test_an_int64_sum_that_would_wrap_is_refused_and_in_double_when_asked() -> None:
    with pytest.raises(ExpressionError, match=r"beyond the 64-bit integer range.*1\.0"):
        _column("sum(j)", BIG64)
    expected = [float(sum(v)) for v in BIG64["j"].tolist()]
    np.testing.assert_allclose(_column("sum(j * 1.0)", BIG64), expected, rtol=1e-15)
    np.testing.assert_allclose(_column("e * 10000000000000.0", BIG64),
                               [e * 1e13 for e in BIG64["e"].tolist()], rtol=1e-15)


@pytest.mark.parametrize("text", ["9223372036854775807 + 1", "3037000500 * 3037000500 + e",
                                  "e + 18446744073709551616", "99999999999999999999 > e",
                                  "-(-9223372036854775807 - 1)", "-9223372036854775807 - 2"])
def test_integer_constants_beyond_int64_are_refused_not_exact_python_integers(text) -> None:
    """Constants computed as Python's unbounded integers: 2**63 passed as an exact value,
    a larger one failed with Python's OverflowError."""
    with pytest.raises(ExpressionError, match=r"beyond the 64-bit integer range"):
        Expression(text, "cut").evaluate(BIG64)
    # the same numbers in double compute, as ROOT does
    assert _column("e * 0 + 9223372036854775807.0 + 1", BIG64).tolist() == [2.0**63] * 4


def test_a_float32_sum_is_taken_in_double() -> None:
    pt = ak.values_astype(ak.Array([[42.978718, 20.321802, 49.266628]] * 3), np.float32)
    exact = float(np.sum(np.array([42.978718, 20.321802, 49.266628], np.float32), dtype=np.float64))
    assert _column("sum(pt)", {"pt": pt}).tolist() == [exact] * 3
    # within the range, event numbers stay exact integers
    assert _column("e - 5", BIG64, "event", np.int64).tolist() == [
        v - 5 for v in BIG64["e"].tolist()]


# -- 3. a mask from lists of other lengths is refused ----------------------------------


def test_a_mask_from_another_collection_is_refused() -> None:
    with pytest.raises(ExpressionError, match=r"'Lep_pt > 20' and 'Jet_pt' have different"):
        _column("sum(Jet_pt[Lep_pt > 20])", ARRAYS)
    with pytest.raises(ExpressionError, match="different numbers of elements"):
        _column("sum(Jet_pt[Jet_pt[:, 1:] > 35])", ARRAYS)


def test_a_mask_of_the_same_lengths_selects_elements() -> None:
    expected = np.array([sum(p for p, e in zip(pts, etas, strict=True) if abs(e) < 2.4)
                         for pts, etas in zip(JET_PT.tolist(), JET_ETA.tolist(), strict=True)])
    np.testing.assert_allclose(_column("sum(Jet_pt[abs(Jet_eta) < 2.4])", ARRAYS), expected,
                               rtol=1e-5)
    same = {"Jet_pt": JET_PT, "Lep_pt": ak.unflatten(np.ones(N_JET.sum(), np.float32), N_JET)}
    np.testing.assert_allclose(_column("sum(Jet_pt[Lep_pt > 0])", same),
                               [sum(row) for row in JET_PT.tolist()], rtol=1e-5)


def test_an_integer_subscript_is_not_a_mask() -> None:
    with pytest.raises(ExpressionError, match=r"'Jet_id & 2' is not a condition"):
        _column("sum(Jet_pt[Jet_id & 2])", ARRAYS)
    expected = [sum(p for p, i in zip(pts, ids, strict=True) if i & 2)
                for pts, ids in zip(JET_PT.tolist(), JET_ID.tolist(), strict=True)]
    np.testing.assert_allclose(_column("sum(Jet_pt[(Jet_id & 2) != 0])", ARRAYS), expected,
                               rtol=1e-5)


# -- 4. comparison chains with == or != in them --------------------------------------


@pytest.mark.parametrize(("text", "python", "c"), [
    ("x > 0 == isMC", "(x > 0) && (0 == isMC)", "(x > 0) == isMC"),
    ("x >= 1 != isMC", "(x >= 1) && (1 != isMC)", "(x >= 1) != isMC"),
    ("isMC == x > 0", "(isMC == x) && (x > 0)", "isMC == (x > 0)"),
    ("a < b == c < d", "(a < b) && (b == c) && (c < d)", "(a < b) == (c < d)"),
    ("y || x > 0 == isMC", "y || ((x > 0) && (0 == isMC))", "y || ((x > 0) == isMC)"),
    ("a == b == c", "(a == b) && (b == c)", "(a == b) == c"),
])
def test_a_mixed_comparison_chain_is_refused_with_both_readings(
    text: str, python: str, c: str
) -> None:
    with pytest.raises(ExpressionError) as info:
        Expression(text, "cut")
    message = str(info.value)
    assert f"Python reads it as {python}," in message
    assert f"C and ROOT as {c};" in message


def test_ordering_chains_and_parenthesised_forms_still_work() -> None:
    x = np.array([1.0, -1.0, 1.0, -1.0, 2.5])
    is_mc = np.array([1, 1, 0, 0, 1], np.int32)
    arrays = {"x": x, "isMC": is_mc}
    np.testing.assert_array_equal(_passes("1 < x < 3", arrays), (1 < x) & (x < 3))
    np.testing.assert_array_equal(_passes("(x > 0) == isMC", arrays), (x > 0) == is_mc)


# -- 5. a constant's name that is a branch elsewhere ----------------------------------


def test_a_constants_name_that_is_a_branch_must_be_back_quoted(tmp_path: Path) -> None:
    """A bare e, pi, inf or nan where the tree has a branch of that name is refused (the
    branch, or 2.718 where an input lacks it, silently: a model trained on branch e scored
    another file at e = 2.718), `e` is the branch, e where no branch is the constant."""
    with_e = _write(tmp_path / "with_e.root", {"e": np.array([10, 20], np.float32),
                                               "x": np.array([1, 2], np.float32)})
    without = _write(tmp_path / "without_e.root", {"x": np.array([3, 4], np.float32)})
    for features, cut in ((["e"], None), (["x * e"], None), (["x"], "e > 0")):
        with pytest.raises(ExpressionError, match=r"with_e\.root.*uses 'e', which is both a "
                                                  r"branch of this tree and the constant"):
            read(Sample("s", [with_e, without], cut=cut), features)
    ds = read(Sample("s", with_e), ["`e` * x"])
    np.testing.assert_array_equal(ds.X[:, 0], [10, 40])
    with pytest.raises(MissingBranchError, match=r"without_e\.root.*uses 'e', which is not a "
                                                 r"branch"):
        read(Sample("s", [with_e, without]), ["`e`"])
    ds = read(Sample("s", without), ["x * e"])
    np.testing.assert_allclose(ds.X[:, 0], np.array([3, 4]) * np.e, rtol=1e-6)


def test_a_back_quoted_branch_is_found_under_its_name_in_a_data_frame() -> None:
    """A model trained on the branch `e` (the rule above) scores a data frame read from the
    same tree, whose column is e, as it scores the same values in its own column order; a
    column that really is named `e` is taken first."""
    pd = pytest.importorskip("pandas")
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=400) > 0).astype(int)
    named = pd.DataFrame(X, columns=["`e`", "x"])
    model = BDTClassifier(n_trees=5).fit(named, y)
    expected = model.decision_function(named)
    frame = pd.DataFrame({"x": X[:, 1], "e": X[:, 0]})
    np.testing.assert_array_equal(model.decision_function(frame), expected)
    frame["`e`"] = X[:, 0]
    frame["e"] = 0.0
    np.testing.assert_array_equal(model.decision_function(frame), expected)


# -- 6. masks on fixed-size array branches --------------------------------------------


def test_a_mask_on_a_fixed_size_array(tmp_path: Path) -> None:
    arr = RNG.normal(0, 1, (50, 3)).astype(np.float32)
    arr[0] = [-1, -2, -3]  # no positive element
    path = _write(tmp_path / "fixed.root", {"arr": arr})
    ds = read(Sample("s", path), ["sum(arr[arr > 0])", "num(arr[arr > 0])",
                                  "max(arr[arr > 0])"])
    positive = np.where(arr > 0, arr, 0)
    np.testing.assert_allclose(ds.X[:, 0], positive.sum(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(ds.X[:, 1], (arr > 0).sum(axis=1))
    np.testing.assert_allclose(ds.X[:, 2], np.where((arr > 0).any(axis=1),
                                                    np.where(arr > 0, arr, -np.inf).max(axis=1),
                                                    np.nan), equal_nan=True)
    with pytest.raises(ExpressionError, match="gives a list per event"):
        read(Sample("s", path), ["arr[arr > 0] * 1"])
    # NaN for every event, as ROOT refuses it: an index beyond every event's three elements
    with pytest.raises(ExpressionError, match="index 5 is beyond the fixed-size array 'arr'"):
        read(Sample("s", path), ["arr[:, 5]"])


# -- 7. a file listed twice -----------------------------------------------------------


def test_a_file_listed_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "sig.root", {"x": np.arange(4, dtype=np.float32)})
    _write(tmp_path / "other.root", {"x": np.arange(2, dtype=np.float32)})
    os.symlink(path, tmp_path / "link.root")
    monkeypatch.chdir(tmp_path)
    for files in (["sig.root", "./sig.root"], ["sig.root", "sig.root"],
                  ["sig.root", str(tmp_path / "*.root")], ["sig.root", "link.root"],
                  {"sig.root": "T", "./sig.root": "T"}, ["sig.root:T", "sig.root"]):
        with pytest.raises(InputError, match=r"sample 'sig': the file '.*sig\.root' is given "
                                             "twice"):
            read(Sample("sig", files), ["x"])
    ds = read(Sample("sig", ["sig.root", "other.root"]), ["x"])
    np.testing.assert_array_equal(ds.X[:, 0], [0, 1, 2, 3, 0, 1])


@pytest.mark.parametrize("kind", KINDS)
def test_the_same_file_with_two_trees_is_read_once_each(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "two.root"
    with uproot.recreate(path) as file:
        write_ntuple(file, "A", {"x": np.array([1, 2], np.float32)}, kind)
        write_ntuple(file, "B", {"x": np.array([5, 6, 7], np.float32)}, kind)
    ds = read(Sample("s", [f"{path}:A", f"{path}:B"]), ["x"])
    np.testing.assert_array_equal(ds.X[:, 0], [1, 2, 5, 6, 7])
    ds = read(Sample("s", path, tree=["A", "B"]), ["x"])
    np.testing.assert_array_equal(ds.X[:, 0], [1, 2, 5, 6, 7])


@pytest.mark.parametrize("text, in_double", [
    ("eta <= 2.4", lambda e: e <= 2.4),
    ("eta > 2.4", lambda e: e > 2.4),
    ("2.4 >= abs(eta)", lambda e: 2.4 >= np.abs(e)),
    ("eta * 10 == 24", lambda e: e * 10 == 24),
])
def test_float32_branches_are_compared_in_double_as_root_does(text, in_double):
    # float32(2.4) is 2.4000000954: compared in float32 with float32(2.4), eta <= 2.4 kept
    # it; ROOT compares the value, widened to double, with the double 2.4 and drops it.
    eta = np.array([2.4, 2.39, 2.41, -2.4, 2.4000001], dtype=np.float32)
    expression = Expression(text, "cut")
    got = to_column(expression.evaluate({"eta": eta}), eta.size, np.float64, expression)
    np.testing.assert_array_equal(got.astype(bool), in_double(eta.astype(np.float64)))


@pytest.mark.parametrize("kind", KINDS)
def test_apply_reads_constants_and_branches_as_the_training_did(tmp_path, kind):
    """A model trained on branch `e` scored a file without it at e = 2.718, and one trained
    on the constant pi read a file's branch pi: a branch is back-quoted, so the first is a
    missing branch, and a bare constant's name that is a branch is refused."""
    import hepbdt

    for name, branches in (("with.root", {"e": np.arange(5.0), "pi": np.arange(5.0),
                                          "x": np.arange(5.0)}),
                           ("without.root", {"x": np.arange(5.0)})):
        write_ntuple(tmp_path / name, "t", branches, kind)
    y = (np.arange(5) % 2).astype(int)
    for features, applied_to, error, match in (
            (["`e`", "x"], "without.root", MissingBranchError, "'e', which is not a branch"),
            (["x * pi", "x"], "with.root", ExpressionError, "'pi', which is both a branch")):
        trained_on = "with.root" if applied_to == "without.root" else "without.root"
        data = read(Sample("s", tmp_path / trained_on, tree="t", label=1), features)
        model = hepbdt.BDTClassifier(n_trees=2, max_depth=1, min_child_weight=0.0).fit(data.X, y)
        with pytest.raises(error, match=match):
            hepbdt.apply(model, tmp_path / applied_to, tmp_path / "out.root", tree="t")
        assert not (tmp_path / "out.root").exists()


def test_remainder_and_floor_division_refuse_what_python_and_root_disagree_on(tmp_path):
    # NumPy's integer // and % by zero give 0 (ROOT: inf or NaN), and Python's -7 % 3 is 2
    # where C's and ROOT's is -1: both are refused; after a cut that removes them they work.
    path = _write(tmp_path / "neg.root", {"x": np.array([7, -7, 3, -2, 5], np.int32),
                                          "y": np.array([1, 0, 2, 0, 1], np.int32)})
    for feature, match in (("x % 3", "% of a negative number"), ("x // y", "// by zero"),
                           ("x % y", "% by zero")):
        with pytest.raises(ExpressionError, match=match):
            read(Sample("s", path, tree="T", label=1), [feature])
    x, y = np.array([7, -7, 3, -2, 5]), np.array([1, 0, 2, 0, 1])
    kept = read(Sample("s", path, tree="T", cut="x >= 0 && y != 0", label=1),
                ["x % 3", "x // y", "fmod(x, 3)"])
    keep = (x >= 0) & (y != 0)
    np.testing.assert_array_equal(kept.X, np.column_stack(
        [x[keep] % 3, x[keep] // y[keep], np.fmod(x[keep], 3)]).astype(np.float32))
    every = read(Sample("s", path, tree="T", label=1), ["fmod(x, 3)"])
    np.testing.assert_array_equal(every.X[:, 0], [1, -1, 0, -2, 2])  # C's remainder


@pytest.mark.parametrize(("a", "b", "same"), [
    ("HT", "(HT)", True),
    ("a > 1 && b < 2", "(a > 1) and (b < 2)", True),
    ("`a.b`", "a.b", True),
    ("`a.b` + 1", "`c.d` + 1", False),  # both back-quoted, different branches
    ("!flags", "~flags", False),  # a logical not and a bitwise one
    ("x - y", "y - x", False),
])
def test_canonical_text_tells_the_same_computation_from_another(a, b, same) -> None:
    assert (Expression(a).canonical() == Expression(b).canonical()) is same


@pytest.mark.parametrize("role, start", [("expression", "expression 'x +'"),
                                         ("cut", "cut expression 'x +'")])
def test_messages_name_the_role_once(role, start):
    with pytest.raises(ExpressionError) as error:
        Expression("x +", role)
    assert str(error.value).startswith(start)
    assert "expression expression" not in str(error.value)
    with pytest.raises(ExpressionError, match=f"^{start.split(' ')[0]}.* is empty"):
        Expression("  ", role)


_D = np.float64  # the reference: numpy's double arithmetic, as on arrays


@pytest.mark.parametrize("text, reference", [
    ("x + (-8)**0.5", lambda x: x + np.power(_D(-8), 0.5)),  # Python: complex, real part kept
    ("x * (-8)**(1/3)", lambda x: x * np.power(_D(-8), _D(1) / 3)),
    ("x + 1/0", lambda x: x + _D(1) / _D(0)),  # as x/0 of an array (ROOT's formula: 0)
    ("x + 0/0", lambda x: x + _D(0) / _D(0)),
    ("x + 0**-1", lambda x: x + np.power(_D(0), -1.0)),
    ("x + 2.0**10000", lambda x: x + np.power(_D(2), 10000.0)),
    ("x + 10**400", lambda x: x + np.power(_D(10), 400.0)),
])
def test_constants_compute_in_double_as_arrays_do(text, reference):
    x = np.array([1.0, -2.0, 3.5], np.float32)
    expression = Expression(text, "cut")
    column = to_column(expression.evaluate({"x": x}), x.size, np.float64, expression)
    with np.errstate(all="ignore"):
        expected = reference(x.astype(np.float64))
    assert not np.isfinite(expected).any()  # each case is one Python would not compute
    np.testing.assert_array_equal(column, expected)


def test_a_complex_column_is_refused_not_cast():
    expression = Expression("x", "cut")
    with pytest.raises(ExpressionError, match="complex"):
        to_column(np.array([1 + 2j, 3j]), 2, np.float64, expression)
    with pytest.raises(ExpressionError, match="complex"):
        to_column(2j, 2, np.float64, expression)


@pytest.mark.parametrize("text, reference", [
    ("pow(2, 70) + n * 0", lambda x, n: np.power(_D(2), 70.0) + n * 0.0),  # int64 wrapped to 0
    ("pow(2, -1) + n * 0", lambda x, n: np.full(n.size, 0.5)),  # numpy refused ints ** -1
    ("fmod(n, 0)", lambda x, n: np.fmod(n.astype(_D), 0.0)),  # int64 fmod gave 0, C gives NaN
    ("fmod(n, 3)", lambda x, n: np.fmod(n.astype(_D), 3.0)),
    ("x ** 2", lambda x, n: x.astype(_D) ** 2),  # float32 branches in double, as ROOT
    ("pow(x, 0.5)", lambda x, n: np.power(x.astype(_D), 0.5)),
    ("n ** 40", lambda x, n: n.astype(_D) ** 40.0),
])
def test_pow_and_fmod_compute_in_double(text, reference):
    x = np.array([20.000002, 2.0, 9.5, 1e-3], np.float32)
    n = np.array([2, 3, 10, -7], np.int32)
    expression = Expression(text, "weight")
    got = expression.evaluate({"x": x, "n": n})
    with np.errstate(all="ignore"):
        expected = reference(x, n)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("text, reference", [
    ("~u", lambda u, b: ~u.astype(np.int64)),        # uint8 gave 254 for 1 (ROOT has no ~)
    ("(~u) > 0", lambda u, b: ~u.astype(np.int64) > 0),
    ("u | 256", lambda u, b: u.astype(np.int64) | 256),  # overflowed uint8
    ("u & -1", lambda u, b: u.astype(np.int64)),
    ("b & u", lambda u, b: b.astype(np.int64) & u.astype(np.int64)),
    ("b & (u > 1)", lambda u, b: b & (u > 1)),        # two conditions stay a condition
])
def test_bitwise_operators_take_integers_as_int64(text, reference):
    u = np.array([1, 2, 200, 0], np.uint8)
    b = np.array([True, False, True, True])
    got = Expression(text, "weight").evaluate({"u": u, "b": b})
    expected = reference(u, b)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)


def test_bitwise_operators_keep_a_uint64_words_bits():
    # A trigger word with its top bit set: & | ~ work on its bits and stay unsigned (ROOT's
    # bitwise results are unsigned; it reads the word through a double, so bit 2 of 2**63 + 4
    # is lost there), where arithmetic on such a value is refused.
    t = np.array([2**63 + 4, 5, 2**64 - 1, 0], np.uint64)
    got = Expression("(t & 4) != 0", "cut").evaluate({"t": t})
    np.testing.assert_array_equal(got, [True, True, True, False])
    for text, expected in (("t | 1", t | np.uint64(1)), ("~t", ~t), ("t & 6", t & np.uint64(6))):
        value = Expression(text, "weight").evaluate({"t": t})
        assert value.dtype == np.uint64
        np.testing.assert_array_equal(value, expected)


def test_a_missing_element_fails_every_condition_it_is_in():
    # != with NaN was IEEE's true (events without jets passed Jet_q[:, 0] != 0), and NaN
    # counted as true for && (a condition that failed alone passed with '&& 1').
    has_jet = N_JET > 0
    q0 = _element(JET_Q, 0)
    assert np.array_equal(_passes("Jet_q[:, 0] != 0", ARRAYS), has_jet & (q0 != 0))
    assert np.array_equal(_passes("Jet_q[:, 0] != 0 && nJet >= 0", ARRAYS), has_jet & (q0 != 0))
    lead = _element(JET_ID, 0)  # a missing element as a condition on its own, and in &&, ||
    assert np.array_equal(_passes("Jet_id[:, 0]", ARRAYS), has_jet & (lead != 0))
    assert np.array_equal(_passes("Jet_id[:, 0] && 1", ARRAYS), has_jet & (lead != 0))
    assert np.array_equal(_passes("Jet_id[:, 0] || nJet == 0", ARRAYS), ~has_jet | (lead != 0))
    assert np.array_equal(_passes("where(Jet_id[:, 0], 1, 0)", ARRAYS), has_jet & (lead != 0))


def test_a_conditional_expression_widens_small_unsigned_integers():
    # 'u8 if flag else -1' gave 255 where where(flag, u8, -1) gives -1
    u8 = np.array([5, 6, 7, 8], np.uint8)
    flag = np.array([True, False, True, False])
    arrays = {"u8": u8, "flag": flag}
    for other in (-1, 300):
        expected = np.where(flag, u8.astype(np.int64), other).astype(np.float64)
        assert np.array_equal(_column(f"u8 if flag else {other}", arrays), expected)
        assert np.array_equal(_column(f"where(flag, u8, {other})", arrays), expected)
    assert np.array_equal(_passes("(u8 if flag else -1) < 0", arrays), ~flag)


ROOT_SPELLINGS = [  # ROOT's spelling, the one the error offers, it written out, ROOT's value
    ("Sum$(Jet_pt > 30)", "sum(...)", "sum(Jet_pt > 30)",
     lambda: [sum(p > 30 for p in row) for row in JET_PT.tolist()]),
    ("Length$(Jet_pt)", "num(...)", "num(Jet_pt)", lambda: N_JET),
    ("Max$(Jet_pt)", "max(...)", "max(Jet_pt)",
     lambda: [max(row) if row else np.nan for row in JET_PT.tolist()]),
    ("TMath::Abs(nJet - 2)", "abs(...)", "abs(nJet - 2)", lambda: np.abs(N_JET - 2)),
    ("TMath::Power(nJet, 2)", "pow(...)", "pow(nJet, 2)", lambda: N_JET.astype(float) ** 2),
    ("std::sqrt(nJet)", "sqrt(...)", "sqrt(nJet)", lambda: np.sqrt(N_JET)),
    ("nJet * TMath::Pi()", "pi", "nJet * pi", lambda: N_JET * np.pi),
    ("nJet > 1 ? nJet : 0", "where(c, a, b)", "where(nJet > 1, nJet, 0)",
     lambda: np.where(N_JET > 1, N_JET, 0)),
]


@pytest.mark.parametrize("root, offered, ours, expected", ROOT_SPELLINGS,
                         ids=[spelling[0] for spelling in ROOT_SPELLINGS])
def test_root_spellings_name_this_languages(root, offered, ours, expected):
    """A ROOT-only spelling (TTreeFormula's Sum$, TMath::, the ternary) is refused with the
    spelling that computes the same, and that spelling gives ROOT's value."""
    with pytest.raises(ExpressionError, match=re.escape(f"is written {offered} here")):
        Expression(root)
    got = np.asarray(Expression(ours).evaluate(ARRAYS), dtype=float)
    np.testing.assert_allclose(got, np.asarray(expected(), dtype=float), rtol=1e-6, equal_nan=True)


def test_root_spelling_without_equivalent_lists_the_functions():
    """Alt$ and TMath functions this language lacks are named, with the valid functions."""
    for text, name in (("Alt$(Jet_pt[0], 0)", "Alt$"), ("TMath::Landau(nJet)", "TMath::Landau")):
        with pytest.raises(ExpressionError, match=re.escape(name) + ".*no equivalent.*abs, acos"):
            Expression(text)


def test_a_model_saved_before_the_rule_with_a_bare_constant_is_refused_by_apply(tmp_path):
    """A model file without "constants": "bare" was saved when a bare e meant the branch
    where a tree had one: apply refuses its features that use one (else e = 2.718 on a file
    without the branch), names the edit, and the edited file scores as the branch."""
    import json

    import hepbdt

    write_ntuple(tmp_path / "with.root", "t", {"e": np.arange(6.0), "x": np.arange(6.0) % 2},
                 "ttree")  # apply writes its friend tree beside a TTree
    y = (np.arange(6) > 2).astype(int)
    data = read(Sample("s", tmp_path / "with.root", tree="t", label=1), ["`e`", "x"])
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=1, min_child_weight=0.0).fit(data.X, y)
    doc = model.to_dict()
    assert doc.pop("constants") == "bare"
    doc.pop("expression_rules")  # a file of before 2026-12-04 says neither
    doc["feature_names"] = ["e", "x"]  # as the old rule saved it
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = hepbdt.load_model(tmp_path / "old.json")
    with pytest.raises(InputError, match=r"feature 'e' uses 'e'.*saved before"):
        hepbdt.apply(old, tmp_path / "with.root", tmp_path / "out.root", tree="t")
    assert "constants" not in old.to_dict()  # re-saving it does not claim the new rule
    doc["feature_names"], doc["constants"] = ["`e`", "x"], "bare"  # the edit the error names
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    hepbdt.apply(hepbdt.load_model(tmp_path / "edited.json"), tmp_path / "with.root",
                 tmp_path / "out.root", tree="t")
    with uproot.open(tmp_path / "out.root") as f:
        np.testing.assert_array_equal(f["t"]["bdt_score"].array(library="np"),
                                      model.decision_function(data.X))


@pytest.mark.parametrize("text, value", [("where(1, 2, 3)", 2.0), ("where(0 > 1, 2, 3.5)", 3.5),
                                         ("1.5 if 1 > 0 else 1", 1.5)])
def test_a_constant_choice_is_that_constant_for_every_event(text, value):
    """np.where of constants is a 0-d array: a weight 'where(1, 2, 3)' was refused as
    giving "() values per event" (audit ES); ROOT's 1 ? 2 : 3 is 2 for every event."""
    e = Expression(text, "weight")
    np.testing.assert_array_equal(to_column(e.evaluate({}), 4, np.float64, e), np.full(4, value))


def test_round_and_sign_are_cs_and_roots() -> None:
    """round is C's (halves away from zero: Python's Decimal ROUND_HALF_UP), sign is ROOT's
    (1 at zero, -1 below, NaN kept)."""
    from decimal import ROUND_HALF_UP, Decimal

    x = np.array([-2.5, -1.5, -0.5, -0.49, 0.0, 0.49, 0.5, 1.5, 2.5, 3.7, -3.7])
    rounded = Expression("round(x)").evaluate({"x": x})
    expected = [float(Decimal(v).quantize(Decimal(1), rounding=ROUND_HALF_UP)) for v in x]
    np.testing.assert_array_equal(np.asarray(rounded, dtype=float), expected)
    signs = Expression("sign(x)").evaluate({"x": np.r_[x, np.nan]})
    np.testing.assert_array_equal(np.asarray(signs, dtype=float),
                                  [-1.0 if v < 0 else 1.0 for v in x] + [np.nan])


@pytest.mark.parametrize("text", ["Jet_pt[:, 1:nJet]", "Jet_pt[:, Jet_pt > 25]",
                                  "max(sum(Jet_pt))", "sum(Jet_pt)[:, 0]"])
def test_subscripts_and_reductions_refuse_what_is_no_list_or_no_constant(text) -> None:
    """A slice bound that varies per event, a mask after ``:,``, and a list subscript or
    reduction of one value per event have no meaning in ROOT's formulas: refused, never
    computed as another expression (``Jet_pt[:, 1:nJet]`` as ``Jet_pt[:, 1:]``)."""
    with pytest.raises(ExpressionError):
        Expression(text, "feature").evaluate(ARRAYS)


def test_integer_powers_of_constants_are_exact_integers_below_2_53_and_doubles_beyond() -> None:
    """``2**k`` is the integer a literal writes while double holds it exactly (Python's exact
    integers are the reference), C's double ``pow`` from 2**53 on."""
    big = {"x": np.array([2**53 + 1, 3], dtype=np.int64)}
    got = Expression("x * 2**0 + 2**3", "event").evaluate(big)
    assert got.dtype == np.int64 and got.tolist() == [2**53 + 1 + 8, 11]
    got = Expression("x + 2**53", "feature").evaluate({"x": np.array([1, 3], dtype=np.int64)})
    assert got.dtype == np.float64 and got.tolist() == [2.0**53 + 1.0, 2.0**53 + 3.0]  # C's


@pytest.mark.parametrize("text", [5, None, b"x"])
def test_an_expression_that_is_no_string_is_refused(text) -> None:
    with pytest.raises(ExpressionError, match="must be a string expression"):
        Expression(text, "cut")  # type: ignore[arg-type]
