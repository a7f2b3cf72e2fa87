"""C-style logical operators (&& || !) and the & / | precedence trap in expressions.

Every expression is checked against the same condition written directly in NumPy (or
Awkward), and the end-to-end cut against a count made with uproot by hand.
"""

from __future__ import annotations

from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io import ExpressionError, InputError, Sample, read
from hepbdt.io.expressions import Expression, to_column

SIGNAL = Path(__file__).resolve().parents[1] / "data" / "signal.root"

RNG = np.random.default_rng(7)
N = 400
ARRAYS: dict[str, np.ndarray] = {
    "nJet": RNG.integers(0, 5, N).astype(np.int32),
    "nLep": RNG.integers(0, 3, N).astype(np.int32),
    "a": RNG.integers(0, 4, N).astype(np.int32),
    "b": RNG.integers(0, 4, N).astype(np.int32),
    "c": RNG.integers(0, 5, N).astype(np.int32),
    "x": np.round(RNG.normal(0.0, 2.0, N) * 2) / 2,  # zeros too, for !x
    "flags": RNG.integers(0, 16, N).astype(np.int32),
}
nJet, nLep = ARRAYS["nJet"], ARRAYS["nLep"]
a, b, c, x, flags = (ARRAYS[k] for k in ("a", "b", "c", "x", "flags"))


def _cut(text: str) -> np.ndarray:
    """The expression as a cut: one bool per event."""
    expression = Expression(text, "cut")
    return to_column(expression.evaluate(ARRAYS), N, np.float64, expression).astype(bool)


@pytest.mark.parametrize(("text", "expected"), [
    ("nJet >= 2 && nLep == 0", (nJet >= 2) & (nLep == 0)),
    ("nJet>=2&&nLep==0", (nJet >= 2) & (nLep == 0)),
    ("a > 1 || b < 2 && c == 3", (a > 1) | ((b < 2) & (c == 3))),
    ("b < 2 && c == 3 || a > 1", ((b < 2) & (c == 3)) | (a > 1)),
    ("(a > 1 || b < 2) && c == 3", ((a > 1) | (b < 2)) & (c == 3)),
    ("!(a > 1)", ~(a > 1)),
    ("!(a > 1) && !(b > 2)", ~(a > 1) & ~(b > 2)),
    ("a != 2 && !b", (a != 2) & (b == 0)),
    ("!!b", b != 0),
    ("!x", x == 0),
    ("a > 1 && not b < 2", (a > 1) & ~(b < 2)),
    ("a > 1 || b < 2 and c == 3", (a > 1) | ((b < 2) & (c == 3))),
    ("abs(x) < 1 && x != 0", (np.abs(x) < 1) & (x != 0)),
    ("where(a > 1 && b > 1, 1, 0) == 1", (a > 1) & (b > 1)),
])
def test_c_style_logic_matches_numpy(text: str, expected: np.ndarray) -> None:
    assert 0 < expected.sum() < N  # the data tell the readings apart
    np.testing.assert_array_equal(_cut(text), expected)


def test_and_binds_tighter_than_or() -> None:
    loose = ((a > 1) | (b < 2)) & (c == 3)
    result = _cut("a > 1 || b < 2 && c == 3")
    assert not np.array_equal(result, loose)  # the data tell the groupings apart
    np.testing.assert_array_equal(result, (a > 1) | ((b < 2) & (c == 3)))


@pytest.mark.parametrize(("words", "symbols", "expected"), [
    ("a > 1 and not b < 2", "a > 1 && !(b < 2)", (a > 1) & ~(b < 2)),
    ("a > 1 or b < 2 and c == 3", "a > 1 || b < 2 && c == 3", (a > 1) | ((b < 2) & (c == 3))),
    ("not a or b", "!a || b", (a == 0) | (b != 0)),
])
def test_python_words_mean_the_same_as_c_symbols(
    words: str, symbols: str, expected: np.ndarray
) -> None:
    np.testing.assert_array_equal(_cut(symbols), expected)
    np.testing.assert_array_equal(_cut(words), expected)


def test_not_feature_is_a_float_like_other_boolean_results() -> None:
    expression = Expression("!(x > 0)", "feature")
    column = to_column(expression.evaluate(ARRAYS), N, np.float32, expression)
    assert column.dtype == np.float32
    np.testing.assert_array_equal(column, (x <= 0).astype(np.float32))
    same = Expression("!x", "feature")
    np.testing.assert_array_equal(
        to_column(same.evaluate(ARRAYS), N, np.float32, same), (x == 0).astype(np.float32))


@pytest.mark.parametrize(("text", "meant", "logical"), [
    ("nJet >= 2 & nLep == 0", "(nJet >= 2) & (nLep == 0)", "nJet >= 2 && nLep == 0"),
    ("nJet >= 2 | nLep == 0", "(nJet >= 2) | (nLep == 0)", "nJet >= 2 || nLep == 0"),
    ("a > 1 & b < 2 | c == 3", "(a > 1) & (b < 2) | (c == 3)", "a > 1 && b < 2 || c == 3"),
    ("a>b&c<2", "(a>b) & (c<2)", "a>b && c<2"),
])
def test_bitwise_next_to_comparisons_is_refused_with_the_meant_form(
    text: str, meant: str, logical: str
) -> None:
    with pytest.raises(ExpressionError) as info:
        Expression(text, "cut")
    message = str(info.value)
    assert meant in message and logical in message
    assert text in message and "cut" in message


@pytest.mark.parametrize(("text", "meant"), [
    ("any(Jet_pt > 30 & Jet_eta < 2)", "any((Jet_pt > 30) & (Jet_eta < 2))"),
    ("x * (nJet >= 2 & nLep == 0)", "x * ((nJet >= 2) & (nLep == 0))"),
    ("`n jet` >= 2 & nLep == 0", "(`n jet` >= 2) & (nLep == 0)"),
    ("nJet >= 2 & nLep == 0 && x > 1", "(nJet >= 2) & (nLep == 0) && x > 1"),
])
def test_the_meant_form_is_given_in_place(text: str, meant: str) -> None:
    for role in ("cut", "weight", "feature", "target", "event"):
        with pytest.raises(ExpressionError, match=role) as info:
            Expression(text, role)
        assert meant in str(info.value)


@pytest.mark.parametrize("text", [
    "flags & 4 != 0",  # Python: (flags & 4) != 0; C: flags & (4 != 0)
    "a == flags & 4",
    "!nJet >= 2",  # C: (!nJet) >= 2, not !(nJet >= 2)
    "! nJet < a <= 2",
])
def test_other_ambiguous_mixes_are_refused(text: str) -> None:
    with pytest.raises(ExpressionError, match="add parentheses"):
        Expression(text, "cut")
    with pytest.raises(ExpressionError, match="add parentheses"):
        Expression(f"{text} && a > 0", "cut")


def test_not_before_a_comparison_suggests_both_groupings() -> None:
    with pytest.raises(ExpressionError) as info:
        Expression("!nJet >= 2", "cut")
    assert "!(nJet >= 2)" in str(info.value) and "(!nJet) >= 2" in str(info.value)


def test_parenthesised_bitwise_keeps_working_and_agrees_with_logical() -> None:
    expected = (a > 1) & (b < 2)
    np.testing.assert_array_equal(_cut("(a > 1) & (b < 2)"), expected)
    np.testing.assert_array_equal(_cut("a > 1 && b < 2"), expected)
    np.testing.assert_array_equal(_cut("(a > 1) | (b < 2)"), (a > 1) | (b < 2))
    np.testing.assert_array_equal(_cut("~(a > 1) && b < 2"), ~(a > 1) & (b < 2))


def test_integer_flags_keep_working() -> None:
    np.testing.assert_array_equal(_cut("(flags & 4) != 0 && a > 1"), ((flags & 4) != 0) & (a > 1))
    np.testing.assert_array_equal(_cut("(flags & 4) != 0"), (flags & 4) != 0)
    np.testing.assert_array_equal(_cut("a == (flags & 4)"), a == (flags & 4))
    np.testing.assert_array_equal(_cut("(!nJet) >= 1 || a > 2"), (nJet == 0) | (a > 2))
    np.testing.assert_array_equal(_cut("a != !b && a > 0"), (a != (b == 0)) & (a > 0))
    feature = Expression("flags & 4 | 1", "feature")
    np.testing.assert_array_equal(feature.evaluate(ARRAYS), (flags & 4) | 1)


def test_jagged_logic_matches_awkward() -> None:
    jet_pt = ak.Array([[50.0, 20.0], [], [35.0], [10.0, 60.0, 31.0]])
    jet_eta = ak.Array([[3.0, 0.5], [], [1.0], [0.1, 2.6, -1.2]])
    arrays = {"Jet_pt": jet_pt, "Jet_eta": jet_eta}
    text = "any(Jet_pt > 30 && abs(Jet_eta) < 2.4) && !(num(Jet_pt) > 2)"
    expression = Expression(text, "cut")
    result = to_column(expression.evaluate(arrays), 4, np.float64, expression).astype(bool)
    expected = ak.to_numpy(ak.any((jet_pt > 30) & (abs(jet_eta) < 2.4), axis=-1)
                           & ~(ak.num(jet_pt) > 2))
    np.testing.assert_array_equal(result, expected)
    np.testing.assert_array_equal(result, [False, False, True, False])
    masked = Expression("sum(Jet_pt[Jet_pt > 30 && !(abs(Jet_eta) > 2.4)])", "feature")
    np.testing.assert_allclose(
        to_column(masked.evaluate(arrays), 4, np.float64, masked), [0.0, 0.0, 35.0, 31.0])


def _uproot_count() -> tuple[int, int]:
    with uproot.open(SIGNAL) as file:
        branches = file["Events"].arrays(["nJet", "nLep"], library="np")
    keep = (branches["nJet"] >= 2) & (branches["nLep"] == 0)
    return int(keep.sum()), len(keep)


def test_read_with_c_style_cut_matches_uproot() -> None:
    kept, total = _uproot_count()
    assert (kept, total) == (20_191, 25_000)
    ds = read(Sample("signal", str(SIGNAL), tree="Events", cut="nJet >= 2 && nLep == 0",
                     label="signal"), features=["nJet", "nLep"])
    assert len(ds.y) == kept
    assert np.all(ds.X[:, 0] >= 2) and np.all(ds.X[:, 1] == 0)


def test_read_refuses_the_precedence_trap() -> None:
    sample = Sample("signal", str(SIGNAL), tree="Events", cut="nJet >= 2 & nLep == 0",
                    label="signal")
    with pytest.raises(ExpressionError) as info:
        read(sample, features=["nJet", "nLep"])
    assert isinstance(info.value, InputError)
    assert "(nJet >= 2) & (nLep == 0)" in str(info.value)
    assert "nJet >= 2 && nLep == 0" in str(info.value)


def test_preselection_and_sample_cut_are_joined_by_logical_and(tmp_path: Path) -> None:
    # "nJet" alone is a cut (non-zero passes); joined to a preselection with the bitwise &,
    # True & 2 was 0 and the events with two jets were lost.
    from hepbdt.analysis import load_config

    path = tmp_path / "analysis.toml"
    path.write_text(f'preselection = "nJet >= 0"\nfeatures = ["HT"]\ntree = "Events"\n'
                    f'[samples.signal]\nfiles = "{SIGNAL}"\nlabel = "signal"\ncut = "nJet"\n'
                    f'[samples.other]\nfiles = "{SIGNAL}"\nlabel = "background"\n')
    sample = load_config(path).samples[0]
    n_jet = uproot.open(f"{SIGNAL}:Events")["nJet"].array(library="np")
    data = read([Sample("s", SIGNAL, tree="Events", cut=sample.cut, label=1)], ["nJet"])
    assert data.X.shape[0] == np.count_nonzero((n_jet >= 0) & (n_jet != 0))
    assert np.count_nonzero(n_jet == 2) > 0  # the events the bitwise join lost
