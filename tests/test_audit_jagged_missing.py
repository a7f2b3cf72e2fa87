"""A missing list element of 64-bit integers (audit DJ of jagged branches, 2026-12-05).

An event without the element (``vl[:, 0]`` of an empty list, ``max`` of one) is NaN, so the
chunk's values of a ``Long64_t`` or ``ULong64_t`` list became doubles: beyond 2**53 they
were rounded, in the chunks that held such an event and not in the others. ``vl[:, 0] %
1000`` of 2**53 + 1 gave 992 (993 elsewhere), ``vl[:, 0] == 2**53`` was true for it, and a
ULong64_t beyond 2**63, refused in a chunk without an empty list, was computed in double.
The reference is Python's exact integers; each value must be exact or refused, at every
step size.
"""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest

from hepbdt.io import ExpressionError, Sample, read
from hepbdt.io.expressions import Expression, to_column
from tests.ntuples import write_ttree

BIG = 2**53 + 1  # the smallest positive integer double does not hold
LISTS = [[BIG, 7], [], [BIG + 2]]  # the second event has no element


def _exact(text: str, lists: list[list[int]]) -> list[float | bool]:
    """The expression's value per event by Python's exact integers (NaN: no element)."""
    values = []
    for items in lists:
        if not items:
            values.append(np.nan)
        elif text == "vl[:, 0] % 1000":
            values.append(items[0] % 1000)
        elif text == "vl[:, 0] == 9007199254740992":
            values.append(items[0] == 2**53)
        else:  # "max(vl) - 9007199254740990"
            values.append(max(items) - (2**53 - 2))
    return values


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("text", ["vl[:, 0] % 1000", "vl[:, 0] == 9007199254740992",
                                  "max(vl) - 9007199254740990"])
def test_a_missing_element_never_rounds_wide_integers(text, dtype):
    lists = ak.values_astype(ak.Array(LISTS), dtype)
    expression = Expression(text, "feature")
    try:
        got = to_column(expression.evaluate({"vl": lists}), 3, np.float64, expression)
    except ExpressionError as err:
        assert "2**53" in str(err) or "double" in str(err)
        return
    want = np.array(_exact(text, LISTS), dtype=np.float64)
    np.testing.assert_array_equal(got, want)


def test_exact_wide_integers_and_small_ones_keep_their_missing_value():
    for lists, want in (([[2**53 + 2], []], [2**53 + 2, np.nan]), ([[5, 9], []], [9, np.nan])):
        expression = Expression("max(vl)", "feature")
        got = to_column(expression.evaluate({"vl": ak.values_astype(ak.Array(lists), "int64")}),
                        2, np.float64, expression)
        np.testing.assert_array_equal(got, want)


def test_in_double_on_purpose_is_the_remedy():
    expression = Expression("(vl * 1.0)[:, 0]", "feature")
    got = to_column(expression.evaluate({"vl": ak.values_astype(ak.Array(LISTS), "int64")}),
                    3, np.float64, expression)
    np.testing.assert_array_equal(got, [float(BIG), np.nan, float(BIG + 2)])


def test_a_cut_is_exact_or_refused_at_every_step_size(tmp_path: Path):
    lists = [[BIG]] * 5 + [[]] + [[BIG]] * 2  # only entry 5 has no element
    path = tmp_path / "ids.root"
    write_ttree(path, "Events", {"vl": ak.values_astype(ak.Array(lists), "int64"),
                                 "event": np.arange(8, dtype=np.int64)}, baskets=2)
    exact = [i for i, items in enumerate(lists) if items and items[0] == 2**53]  # none
    for step in (5, 8):
        sample = Sample("s", str(path), tree="Events", label="signal",
                        cut="vl[:, 0] == 9007199254740992 || event == 0")
        try:
            data = read([sample], ["event"], event="event", step_size=step)
        except ExpressionError:
            continue
        assert sorted(data.event.tolist()) == sorted({0, *exact})


def _true(value: float) -> bool:
    """hepbdt's truth of a number, as && and || take it: non-zero and not NaN."""
    return value != 0 and not np.isnan(value)


def test_any_all_and_count_nonzero_take_a_nan_element_as_false():
    # any(x) is x[0] || x[1] || ...: any([NaN]) was true, where x[:, 0] || x[:, 1] and
    # any(x != 0) were false (a stored NaN, or sqrt of a negative element)
    lists = [[np.nan], [np.nan, 0.0], [0.0, 1.5], [], [np.nan, 2.0], [3.0, -1.0]]
    x = ak.Array(lists)
    want = {"any(x)": [any(map(_true, v)) for v in lists],
            "all(x)": [all(map(_true, v)) for v in lists],
            "count_nonzero(x)": [sum(map(_true, v)) for v in lists]}
    with np.errstate(invalid="ignore"):
        want["all(sqrt(x - 1) + 1)"] = [all(_true(np.sqrt(e - 1) + 1) for e in v) for v in lists]
    for text, values in want.items():
        expression = Expression(text, "feature")
        got = to_column(expression.evaluate({"x": x}), len(lists), np.float64, expression)
        np.testing.assert_array_equal(got, np.array(values, dtype=np.float64), err_msg=text)
    pair = Expression("x[:, 0] || x[:, 1]", "cut").evaluate({"x": ak.Array([[np.nan, 0.0]])})
    assert not pair[0]


def test_wide_integers_at_the_edges_of_double_with_a_missing_element():
    """-(2**53) - 1 is as inexact in double as 2**53 + 1 (refused, or exact by Python's
    integers); a ULong64_t 2**63 is a double exactly, so kept."""
    lists = ak.values_astype(ak.Array([[-(2**53) - 1], []]), "int64")
    expression = Expression("vl[:, 0] == -9007199254740992", "cut")
    try:
        got = to_column(expression.evaluate({"vl": lists}), 2, np.float64, expression)
    except ExpressionError as err:
        assert "2**53" in str(err) or "double" in str(err)
    else:
        np.testing.assert_array_equal(got, [-(2**53) - 1 == -(2**53), False])
    lists = ak.values_astype(ak.Array([[2**62], []]), "uint64") * np.uint64(2)
    expression = Expression("max(vl)", "feature")
    got = to_column(expression.evaluate({"vl": lists}), 2, np.float64, expression)
    np.testing.assert_array_equal(got, [float(2**63), np.nan])
