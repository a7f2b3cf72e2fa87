"""Audit of features at float32's extremes as the readers and ``hepbdt apply`` see them.

A double branch (or expression) holding a finite value beyond float32's range (1e39) was
made +-inf by the float32 cast and then, with ``inf_as_missing``, NaN: a number scored as
a missing value, silently (the Python API refuses such a value). It is refused now, with or
without the option; a real +-inf still becomes NaN with it. The references are numpy's
float32 cast and ``np.isinf`` of the values written.

An int64 (or uint64) branch beyond 2**53 went to float32 through double in the training read
(two roundings), where ``hepbdt apply`` and the Python API round once: an event between two
float32 values landed on the other side of a split in training than in apply. The reference
is numpy's int64 -> float32 cast (one rounding, as C's).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import uproot

import hepbdt
from hepbdt.cli import main
from hepbdt.io.errors import BadValueError


def _file(path: Path, x: np.ndarray) -> Path:
    with uproot.recreate(path) as file:
        file.mktree("t", {"x": np.float64, "y": np.float32})
        file["t"].extend({"x": x, "y": np.linspace(-1, 1, x.size).astype(np.float32)})
    return path


def _values(n: int = 64) -> np.ndarray:
    return np.linspace(-2.0, 2.0, n)


@pytest.mark.parametrize("binned", [False, True])
@pytest.mark.parametrize("feature", ["x", "x * 1e30"])
def test_a_finite_value_beyond_float32_is_not_made_missing(tmp_path, binned, feature):
    x = _values()
    x[7] = 1e39 if feature == "x" else 1e9
    with np.errstate(over="ignore"):
        assert np.isinf(np.float32(x[7] * (1e30 if feature != "x" else 1.0)))  # the reference
    path = _file(tmp_path / "beyond.root", x)
    sample = hepbdt.Sample("s", str(path), tree="t", label=1)
    for inf_as_missing in (True, False):
        with pytest.raises(BadValueError, match=r"at entry 7 .*beyond float32's range"):
            hepbdt.read(sample, [feature, "y"], inf_as_missing=inf_as_missing, binned=binned)


def test_a_real_infinity_is_still_missing_with_inf_as_missing(tmp_path):
    x = _values()
    x[3], x[9] = -np.inf, np.inf
    path = _file(tmp_path / "inf.root", x)
    sample = hepbdt.Sample("s", str(path), tree="t", label=1)
    got = np.asarray(hepbdt.read(sample, ["x", "y"], inf_as_missing=True).X)[:, 0]
    expected = np.where(np.isinf(x), np.nan, x).astype(np.float32)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(BadValueError, match="is infinite for 2 event"):
        hepbdt.read(sample, ["x", "y"])


def test_apply_refuses_a_value_beyond_float32_with_inf_as_missing(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.normal(size=300), "y": rng.normal(size=300).astype(np.float32)})
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, (X["x"] > 0).astype(int))
    model.save(tmp_path / "m.json")
    x = _values()
    x[11] = -2e39
    path = _file(tmp_path / "in.root", x)
    code = main(["apply", str(tmp_path / "m.json"), str(path), "-o", str(tmp_path / "out.root"),
                 "--inf-as-missing", "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1, err
    assert err[0].startswith("hepbdt: error: ") and "-2e+39 at entry 11" in err[0]
    assert not (tmp_path / "out.root").exists()


def _wide_integers() -> tuple[np.ndarray, np.ndarray]:
    # 2**54 + 2**30 + 1: double makes it 2**54 + 2**30, a tie that float32 rounds to 2**54;
    # in one rounding it is 2**54 + 2**31
    i = np.array([2**54 + 2**30 + 1, -(2**54 + 2**30 + 1), 2**62 + 2**38 + 1, 2**24 + 1, 5, 0],
                 np.int64)
    u = i.astype(np.uint64)
    u[1] = np.uint64(2**63 + 2**39 + 1)
    return i, u


@pytest.mark.parametrize("binned", [False, True])
def test_wide_integer_branches_are_rounded_once(tmp_path, binned):
    i, u = _wide_integers()
    path = tmp_path / "ints.root"
    with uproot.recreate(path) as file:
        file.mktree("t", {"i": np.int64, "u": np.uint64})
        file["t"].extend({"i": i, "u": u})
    data = hepbdt.read(hepbdt.Sample("s", str(path), tree="t", label=1), ["i", "u"],
                       binned=binned)
    if binned:
        edges = data.X.edges
        expected = [np.searchsorted(edges[f], c.astype(np.float32), side="right")
                    for f, c in enumerate((i, u))]
        np.testing.assert_array_equal(data.X.codes, np.column_stack(expected))
    else:
        np.testing.assert_array_equal(np.asarray(data.X),
                                      np.column_stack([i.astype(np.float32), u.astype(np.float32)]))


def test_training_read_and_apply_score_a_wide_integer_alike(tmp_path):
    low, high = np.float32(2.0**54), np.float32(2.0**54 + 2**31)
    X = pd.DataFrame({"i": np.r_[np.full(100, low), np.full(100, high)]})
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=1).fit(X, np.repeat([0, 1], 100))
    model.save(tmp_path / "m.json")
    i = np.array([2**54 + 2**30 + 1, 2**54 + 2**30 - 1], np.int64)
    path = tmp_path / "in.root"
    with uproot.recreate(path) as file:
        file.mktree("t", {"i": np.int64})
        file["t"].extend({"i": i})
    read = np.asarray(hepbdt.read(hepbdt.Sample("s", str(path), tree="t", label=1), ["i"]).X)
    expected = model.decision_function(pd.DataFrame({"i": i.astype(np.float32)}))
    assert expected[0] > 0 > expected[1]  # one event on each side of the split
    np.testing.assert_array_equal(model.decision_function(pd.DataFrame(read, columns=["i"])), expected)
    assert main(["apply", str(tmp_path / "m.json"), str(path), "-o", str(tmp_path / "out.root"),
                 "--no-progress"]) == 0
    applied = uproot.open(tmp_path / "out.root")["t"]["bdt_score"].array(library="np")
    np.testing.assert_array_equal(applied, expected)


def test_the_python_api_refuses_a_value_beyond_float32_without_a_numpy_warning():
    """The refusal names the value (1e39, which numpy's float32 cast makes inf); numpy's
    'overflow encountered in cast' RuntimeWarning no longer comes before it."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=1).fit(X, (X[:, 0] > 0).astype(int))
    bad = X[:3].copy()
    bad[1, 1] = 1e39
    with np.errstate(over="ignore"):
        assert np.isinf(bad.astype(np.float32)[1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for call in (model.decision_function, model.predict, lambda x: model.fit(x, [0, 1, 0])):
            with pytest.raises(ValueError, match=r"beyond float32's range .*event 1, feature 1: 1e\+39"):
                call(bad)
