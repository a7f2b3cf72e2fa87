"""Expressions that ROOT reads otherwise: fixed to ROOT's value, or refused.

Expected values marked "ROOT" are ROOT 6's (pip wheel) TTreeFormula results: a tree written
with uproot, ``ROOT.TTreeFormula("f", expr, tree)`` and ``EvalInstance(0)`` per entry.
"""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt.io import ExpressionError
from hepbdt.io.expressions import Expression, to_column

D = np.array([0.0, 2.5, -2.5, np.nan, np.inf, -np.inf, 2.4, 7.5, 0.5, 3.0])
I = np.array([0, 1, -1, 7, -7, 2147483647, -2147483648, 3, 2, 5], np.int32)
U = np.array([0, 1, 4294967295, 7, 3, 2147483648, 5, 3, 2, 10], np.uint32)
ARRAYS = {"d": D, "i": I, "u": U}


def _column(text: str) -> np.ndarray:
    expression = Expression(text, "feature")
    return to_column(expression.evaluate(ARRAYS), len(D), np.float64, expression)


@pytest.mark.parametrize(("text", "root"), [
    ("round(2.5)", [3.0] * 10),  # ROOT; NumPy's rint gave 2
    ("round(d)", [0.0, 3.0, -3.0, np.nan, np.inf, -np.inf, 2.0, 8.0, 1.0, 3.0]),  # ROOT
    ("sign(i)", [1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0]),  # ROOT: sign(0) is 1
    ("u%(3*2)", [0.0, 1.0, 3.0, 1.0, 3.0, 2.0, 5.0, 3.0, 2.0, 4.0]),  # ROOT
    ("(u%3)*2", [0.0, 2.0, 0.0, 2.0, 0.0, 4.0, 4.0, 0.0, 4.0, 2.0]),  # ROOT
    ("u*2%3", [0.0, 2.0, 0.0, 2.0, 0.0, 1.0, 1.0, 0.0, 1.0, 2.0]),  # ROOT: (u*2)%3
    ("(8%3)%2", [0.0] * 10),  # ROOT
    ("(2**3)**2", [64.0] * 10),  # ROOT
    ("-2**2", [-4.0] * 10),  # ROOT
])
def test_values_match_root(text: str, root: list[float]) -> None:
    np.testing.assert_array_equal(_column(text), root)


def test_round_and_sign_match_brute_force() -> None:
    x = np.array([-2.5, -1.5, -0.5, -0.49999999999999994, 0.0, 0.49999999999999994, 0.5, 1.5,
                  2.5, 1e300, np.nan])
    half_away = [float(np.floor(v + 0.5)) if v >= 0 else float(np.ceil(v - 0.5))
                 for v in x[:-1]]
    half_away[3], half_away[5] = 0.0, 0.0  # v + 0.5 rounds up in double; the value is below 1/2
    got = to_column(Expression("round(x)").evaluate({"x": x}), len(x), np.float64,
                    Expression("round(x)"))
    np.testing.assert_array_equal(got, [*half_away, np.nan])
    got = to_column(Expression("sign(x)").evaluate({"x": x}), len(x), np.float64,
                    Expression("sign(x)"))
    np.testing.assert_array_equal(got, [*(-1.0 if v < 0 else 1.0 for v in x[:-1]), np.nan])


@pytest.mark.parametrize(("text", "match"), [
    # ROOT: 64 (left to right), Python 512.
    ("2**3**2", r"2 \*\* \(3\*\*2\) in Python but \(2\*\*3\) \*\* 2 in ROOT"),
    ("2**-3**2", r"\(2\*\*-3\) \*\* 2 in ROOT"),  # ROOT: 0.015625
    # ROOT's % binds looser than * and /: u%3*2 is u%6, 10%4*3+1 is 11, u%3/2 is u%1 = 0.
    ("u%3*2", r"\(u % 3\) \* 2 in Python but u % \(3 \* 2\) in ROOT"),
    ("10%4*3+1", "binds looser"),
    ("u%3/2", "binds looser"),
    # ROOT splits at the first %: 7%5%3 is 7%(5%3) = 1 there, (7%5)%3 = 2 in Python.
    ("7%5%3", r"\(7 % 5\) % 3 in Python but 7 % \(5 % 3\) in ROOT, whose % groups from"),
    ("u%7%4", "groups from the right"),
    # ROOT truncates both sides of % to integers: 7.5%2 is 1, d%2 at d=7.5 is 1.
    ("7.5%2", "with a fraction"),
    ("d%2", "with a fraction"),
    ("u/2%3", "with a fraction"),
    # ^ is ROOT's power, also between conditions: (i>0)^(d>0) is 1 when both are false.
    ("(i>0)^(d>0)", "power in ROOT"),
    ("i^2", "power in ROOT"),
    # ROOT: (!i)**0 is 1 for every i; Python's ** binds tighter than the ~ of !: 0.
    ("!i**0", r"!\(i \*\* 0\) in Python but \(!i\) \*\* 0 in ROOT"),
    ("!d**0.5", r"\(!d\) \*\* 0.5 in ROOT"),
])
def test_what_root_reads_otherwise_is_refused(text: str, match: str) -> None:
    with pytest.raises(ExpressionError, match=match):
        _column(text)


def test_integral_floats_keep_their_remainder() -> None:
    x = np.array([0.0, 3.0, 8.0, 7.0])
    expression = Expression("x % 3")
    got = to_column(expression.evaluate({"x": x}), len(x), np.float64, expression)
    np.testing.assert_array_equal(got, x % 3)  # ROOT gives the same for whole numbers


def test_max_and_min_of_a_list_with_nan_are_nan_as_roots() -> None:
    """ROOT's Max$/Min$ of [NaN] and [NaN, 70] are NaN; Awkward's reducers passed over NaN
    (max([NaN]) was -inf, so the cut max(x) < 50 kept that event, and max([NaN, 70]) 70).
    The empty list's NaN is hepbdt's documented missing value (ROOT: 0)."""
    import awkward as ak

    lists = ak.values_astype(ak.Array([[np.nan], [np.nan, 70.0], [30.0], [], [5.0, 9.0]]),
                             np.float32)
    arrays = {"x": lists}
    for text, root in (("max(x)", [np.nan, np.nan, 30.0, np.nan, 9.0]),
                       ("min(x)", [np.nan, np.nan, 30.0, np.nan, 5.0]),
                       ("max(x) < 50", [0.0, 0.0, 1.0, 0.0, 1.0])):
        expression = Expression(text, "feature")
        np.testing.assert_array_equal(to_column(expression.evaluate(arrays), 5, np.float64,
                                                expression), root)


# ROOT's % truncates both sides to Long64_t; beyond int64 that has no value. ROOT 6.40
# (pip wheel), TTreeFormula on a tree of 300 entries, EvalInstance(0) (audit ES, 2026-12-05):
# 3.4e38 % 7 is -1, 1e19 % 7 is -1 and 9.3e18 % 10 is -8, where Python's remainder gave 2, 3
# and 0; refused, as ROOT's value is the wrapped truncation's.
@pytest.mark.parametrize(("text", "root", "python"), [
    ("3.4e38 % 7", -1.0, 2.0),
    ("1e19 % 7", -1.0, 3.0),
    ("9.3e18 % 10", -8.0, 0.0),
])
def test_remainder_beyond_int64_is_refused(text: str, root: float, python: float) -> None:
    assert python == float(text.split(" % ")[0]) % float(text.split(" % ")[1])  # what it gave
    assert root != python
    with pytest.raises(ExpressionError, match="beyond the 64-bit integer range"):
        _column(text)


def test_remainder_of_a_branch_beyond_int64_or_infinite_is_refused() -> None:
    big = {"x": np.array([3.0, 1e19]), "y": np.array([3.0, np.inf])}
    for name in ("x", "y"):
        expression = Expression(f"{name} % 7", "feature")
        with pytest.raises(ExpressionError, match="has no value in ROOT"):
            expression.evaluate(big)
    # below 2**63 the truncation is exact: ROOT and Python agree on positive integral values
    small = Expression("x % 7", "feature").evaluate({"x": np.array([2.0**62, 10.0])})
    np.testing.assert_array_equal(small, [2**62 % 7, 3.0])
    # a missing value (NaN) is still NaN, not refused
    assert np.isnan(Expression("x % 7").evaluate({"x": np.array([np.nan, 8.0])})[0])


def test_bitwise_of_a_uint64_word_and_a_signed_integer_is_cs() -> None:
    """ul & i and ul | i of a ULong64_t word and a signed integer convert the signed one to
    unsigned in two's complement, as C does; NumPy has no common type for them and the
    expression ended in "cannot be evaluated: TypeError". ROOT 6.40's TTreeFormula on a
    tree written by TTree::Branch (audit ES, 2026-12-05) gives these values below 2**53, where
    its doubles are exact: ul & i of (12, 8), (19, 1) is 8, 1; ul & -1 of 12 is 12; ul | -2 of
    12 is 1.8446744073709552e19. The reference is Python's exact integers (C's rule)."""
    ul = np.array([12, 19, 7, 2**63 + 4, 2**64 - 1], np.uint64)
    i = np.array([8, 1, -1, -4, -2**31], np.int32)
    arrays = {"ul": ul, "i": i, "l": i.astype(np.int64)}
    words = [int(u) for u in ul]
    as_c = [int(v) % 2**64 for v in i]
    for text, exact in [
        ("ul & i", [u & v for u, v in zip(words, as_c, strict=True)]),
        ("ul | l", [u | v for u, v in zip(words, as_c, strict=True)]),
        ("ul & -1", words),
        ("ul | -2", [u | (2**64 - 2) for u in words]),
        ("i & ul", [u & v for u, v in zip(words, as_c, strict=True)]),
    ]:
        got = Expression(text, "feature").evaluate(arrays)
        assert got.dtype == np.uint64
        assert [int(v) for v in got] == exact, text
    assert list(Expression("ul & i", "feature").evaluate(arrays)[:2]) == [8, 1]  # ROOT
    passes = Expression("(ul & i) != 0", "cut").evaluate(arrays)
    np.testing.assert_array_equal(passes, [u & v != 0 for u, v in zip(words, as_c, strict=True)])
