"""Expressions found by a differential fuzz against ROOT's TTreeFormula to give another
number than ROOT (or Python's type rules' number), each fixed to ROOT's value or refused.

Expected values marked "ROOT" are ROOT 6.40's (pip wheel): a tree written with ROOT itself
(``TTree::Branch`` with ``c[3]/D`` and ``n/I``), ``ROOT.TTreeFormula("f", expr, tree)`` and
``EvalInstance(0)`` after ``GetEntry`` of each entry.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.io import Sample, read
from tests.ntuples import KINDS, write_ntuple

C = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9], [0.5, -1, 2]], np.float64)
N = np.array([10, 20, 30, 40], np.int32)

# ROOT, for the 4 entries above (the first 3 alone give the first 3 values).
ROOT_FIXED = {
    "sum(c * n)": ("Sum$(c * n)", [60.0, 300.0, 720.0, 60.0]),
    "max(c - n / 10)": ("Max$(c - n / 10)", [2.0, 4.0, 6.0, -2.0]),
    "sum(c > n / 10)": ("Sum$(c > n / 10)", [2.0, 3.0, 3.0, 0.0]),
    "sum(where(n > 15, c, 0))": ("Sum$(n > 15 ? c : 0)", [0.0, 15.0, 24.0, 1.5]),
}


def _tree(path: Path, events: int) -> str:
    with uproot.recreate(path) as file:
        file.mktree("T", {"c": (np.float64, (3,)), "n": np.int32})
        file["T"].extend({"c": C[:events], "n": N[:events]})
    return str(path)


@pytest.mark.parametrize("events", [3, 4])
def test_a_fixed_size_array_meets_a_value_per_event_event_by_event(tmp_path: Path,
                                                                   events: int) -> None:
    """NumPy's broadcasting paired the (n,) branch with the 3 columns of the (n, 3) one:
    with 3 events sum(c * n) was 140, 320, 500 (c[i, j] * n[j]); with 4 an error."""
    path = _tree(tmp_path / "fixed.root", events)
    features = list(ROOT_FIXED)
    ds = read(Sample("s", path), features)
    for column, text in enumerate(features):
        np.testing.assert_array_equal(ds.X[:, column], ROOT_FIXED[text][1][:events])


def test_a_cut_leaving_as_many_events_as_the_array_has_elements(tmp_path: Path) -> None:
    """A chunk cut down to 3 events met the same broadcasting with a 3-element array."""
    path = _tree(tmp_path / "fixed.root", 4)
    ds = read(Sample("s", path, cut="n != 20"), ["sum(c * n)"])
    np.testing.assert_array_equal(ds.X[:, 0], [60.0, 720.0, 60.0])  # ROOT, entries 0, 2, 3
    ds = read(Sample("s", path, cut="sum(c > n / 10) >= 2"), ["n"])
    np.testing.assert_array_equal(ds.X[:, 0], [10, 20, 30])  # ROOT: Sum$(c > n / 10) >= 2


@pytest.mark.parametrize("kind", KINDS)
def test_where_with_a_condition_per_event_chooses_element_by_element(tmp_path: Path,
                                                                     kind: str) -> None:
    """where(n > 15, v, 0) chose the whole list or the number 0 (a list for some events and
    a number for others), so sum() of it was refused; ROOT's n > 15 ? v : 0 is per element
    (the ROOT numbers are TTree::Draw's of a std::vector v)."""
    import awkward as ak

    path = tmp_path / "jagged.root"
    write_ntuple(path, "T", {"v": ak.Array([[1.0, 2.0], [], [3.0], [4.0, 5.0, 6.0]]), "n": N},
                 kind)
    ds = read(Sample("s", str(path)), ["sum(where(n > 15, v, 0))", "sum(where(n > 15, 1, v))",
                                       "num(where(n > 15, v, 0))"])
    np.testing.assert_array_equal(ds.X, np.array([[0.0, 3.0, 2.0], [0.0, 0.0, 0.0],  # ROOT
                                                  [3.0, 1.0, 1.0], [15.0, 3.0, 3.0]]))


@pytest.mark.parametrize(("text", "root"), [
    ("7 % 5 % 3", 1.0),  # ROOT: 7 % (5 % 3); Python's (7 % 5) % 3 is 2
    ("100 % 7 % 4", 1.0),  # ROOT: 100 % (7 % 4); Python's 2
])
def test_a_remainder_of_a_remainder_is_refused(text: str, root: float) -> None:
    """ROOT's TFormula splits a formula at its first %, so a % b % c is a % (b % c) there;
    hepbdt computed Python's (a % b) % c, silently another number."""
    from hepbdt.io import ExpressionError
    from hepbdt.io.expressions import Expression, to_column

    a, b, c = (int(part) for part in text.split("%"))
    assert a % (b % c) == root  # ROOT's grouping, checked by brute force
    with pytest.raises(ExpressionError, match="groups from the right"):
        Expression(text).evaluate({})
    for spelled, value in ((f"{a} % ({b} % {c})", root), (f"({a} % {b}) % {c}", (a % b) % c)):
        expression = Expression(spelled)
        assert to_column(expression.evaluate({}), 1, np.float64, expression)[0] == value


@pytest.mark.parametrize(("text", "root"), [
    ("atan(0.0 != 64)", np.arctan(1.0)),  # ROOT 0.7853981633974483; was float16 0.78515625
    ("exp(1 > 0)", np.e),  # ROOT 2.718281828459045; was 2.71875
    ("hypot(1 > 0, 1 > 0)", np.sqrt(2.0)),  # ROOT 1.4142135623730951; was 1.4140625
    ("cosh(1 > 0)", np.cosh(1.0)),  # ROOT 1.5430806348152437
    ("round(2 > 1)", 1.0),  # ROOT 1; was a NumPy error
    ("sign(1 > 2)", 1.0),  # ROOT 1 (sign(0) is 1); was a NumPy error
])
def test_a_constant_condition_in_a_function_is_the_integer_in_double(text: str,
                                                                     root: float) -> None:
    """A constant comparison is a Python bool, which NumPy's functions computed in float16."""
    from hepbdt.io.expressions import Expression, to_column

    expression = Expression(text)
    assert to_column(expression.evaluate({}), 1, np.float64, expression)[0] == root


def test_a_per_event_index_is_refused_with_the_spelling_that_works() -> None:
    """ROOT's a[n - 1] (the last element) was refused as a 'mask' with the advice to select
    events with a cut; the error now names x[:, -1]."""
    import awkward as ak

    from hepbdt.io import ExpressionError
    from hepbdt.io.expressions import Expression, to_column

    arrays = {"a": ak.Array([[1.0, 2.0], [3.0], []]), "n": np.array([2, 1, 0], np.int32)}
    with pytest.raises(ExpressionError, match=r"'n-1' is a number per event.*x\[:, -1\]"):
        Expression("a[n-1]").evaluate(arrays)
    expression = Expression("a[:, -1]")
    last = [row[-1] if row else np.nan for row in arrays["a"].tolist()]  # ROOT: 2, 3, none
    np.testing.assert_array_equal(to_column(expression.evaluate(arrays), 3, np.float64,
                                            expression), last)


@pytest.mark.parametrize(("text", "match"), [
    ("~x", r"^feature expression '~x': ~ \(the bitwise complement\) takes an integer or a "
           r"boolean, not a floating-point number; for a logical not write !x"),
    ("sum(~j)", r"'~j': ~ \(the bitwise complement\) takes an integer"),
    ("n << 2", r"the shifts << and >> are not supported: write x \* 2\*\*k for x << k"),
    ("n >> 1", r"and x // 2\*\*k for x >> k"),
])
def test_a_complement_of_a_float_and_the_shifts_are_refused_in_words(text, match):
    """~ of a float surfaced NumPy's "ufunc 'invert' not supported for the input types";
    << and >> said only "operator LShift is not allowed"."""
    import awkward as ak

    from hepbdt.io.expressions import Expression, ExpressionError

    arrays = {"x": np.array([1.5, 2.0]), "n": np.array([1, 2]), "j": ak.Array([[1.0], [2.0]])}
    with pytest.raises(ExpressionError, match=match):
        Expression(text, "feature").evaluate(arrays)


@pytest.mark.parametrize("text", ["c[:, 3]", "c[:, -4]", "sum(c[:, 5:6]) + c[:, 3]"])
def test_an_index_beyond_a_fixed_size_array_is_refused(text):
    """c[:, 3] of a fixed c[3] was NaN for every event, without a word; ROOT's TTreeFormula
    refuses c[3] when it compiles ("Index 3 for dimension #1 in c is too high (max is 2)").
    Indices within the array, from either end, give its elements."""
    from hepbdt.io.expressions import Expression, ExpressionError

    arrays = {"c": np.arange(6.0).reshape(2, 3)}
    with pytest.raises(ExpressionError, match=r"index -?\d is beyond the fixed-size array 'c' of "
                                              r"3 elements in every event: valid indices are 0 "
                                              r"to 2 \(or -1 to -3 from the end\)"):
        Expression(text, "feature").evaluate(arrays)
    for index in range(-3, 3):
        got = Expression(f"c[:, {index}]", "feature").evaluate(arrays)
        np.testing.assert_array_equal(np.asarray(got, dtype=float), arrays["c"][:, index])


@pytest.mark.parametrize("text", ["sum(v * c)", "sum(where(v > 1, v, c))"])
def test_lists_of_different_lengths_in_one_event_are_refused_in_words(text):
    """They surfaced Awkward's "cannot broadcast nested list"; ROOT's Sum$(v * c) pairs the
    elements up to the shorter length, a rule no analysis means."""
    import awkward as ak

    from hepbdt.io.expressions import Expression, ExpressionError

    arrays = {"v": ak.Array([[1.0, 2.0], [2.0]]), "c": ak.Array([[1.0], [2.0, 3.0]])}
    with pytest.raises(ExpressionError, match=r"two lists of different lengths in one event "
                                              r"meet element by element"):
        Expression(text, "feature").evaluate(arrays)
