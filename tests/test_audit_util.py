"""Audit of the shared helpers (``_util``, ``evaluation._data``, ``evaluation._hist``): each
test pins a defect that was fixed (a number silently wrong, or a refusal that named the
wrong thing)."""

from __future__ import annotations

import math
import os
import stat
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from hepbdt._util import atomic_path, atomic_write_text, check_X
from hepbdt.engine.sums import exact_sum, exact_sum_parts
from hepbdt.evaluation._data import as_1d, check_labels, unpack_dataset
from hepbdt.evaluation._hist import common_edges, weighted_histogram

BIG = float(np.finfo(np.float64).max)


# -- check_X ------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("value", [1e39, -1e39, "1e39"])
def test_values_beyond_float32_are_refused_as_such_not_as_infinite(value) -> None:
    X = np.array([[1.0, value]], dtype=object if isinstance(value, str) else np.float64)
    with pytest.raises(ValueError, match=r"beyond float32's range \(first at event 0, feature 1"):
        check_X(X)


def test_a_real_infinity_is_still_called_infinite() -> None:
    with pytest.raises(ValueError, match="infinite values"):
        check_X(np.array([[1.0, np.inf]]))


def test_masked_entries_are_missing_values_not_their_hidden_data() -> None:
    X = np.ma.array([[1.0, 2.0], [3.0, 4.0]], mask=[[False, True], [False, False]])
    out, _ = check_X(X)
    assert np.isnan(out[0, 1]) and out[1, 1] == 4.0 and out[0, 0] == 1.0


@pytest.mark.parametrize("dtype", ["datetime64[D]", "datetime64[ns]", "timedelta64[s]"])
def test_dates_and_durations_are_refused_their_number_depends_on_the_unit(dtype) -> None:
    with pytest.raises(TypeError, match="convert them to numbers"):
        check_X(np.array([[1, 2]], dtype=dtype))


def test_pandas_missing_values_become_nan() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [3.0, 4.0]})
    out, names = check_X(frame)
    assert names == ["a", "b"] and out[0, 0] == 1.0 and np.isnan(out[1, 0])


def test_ragged_rows_are_refused_naming_X() -> None:
    with pytest.raises(ValueError, match="X must be numeric"):
        check_X([[1.0, 2.0], [3.0]])


# -- exact sums ---------------------------------------------------------------------------------


def test_an_overflowing_exact_sum_is_infinite_not_an_error() -> None:
    for values, expected in (([BIG, BIG, 5e-324], math.inf), ([-BIG, -BIG, 5e-324], -math.inf),
                             ([BIG, BIG, -BIG, 5e-324], BIG)):
        exact = sum((Fraction(v) for v in values), Fraction(0))
        assert exact_sum(np.array(values)) == expected
        assert expected == (float(exact) if abs(exact) <= BIG else expected)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_exact_sum_parts_refuses_non_finite_values(bad) -> None:
    with pytest.raises(ValueError, match="NaN or infinite"):
        exact_sum_parts(np.array([1.0, bad]))
    # a value that the mask leaves out does not count
    assert exact_sum_parts(np.array([1.0, bad]), np.array([True, False])).any()


# -- atomic writes ------------------------------------------------------------------------------


def test_replacing_a_file_keeps_its_permissions(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    path.write_text("old")
    os.chmod(path, 0o600)
    atomic_write_text(path, "new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "new"
    os.chmod(path, 0o750)
    with atomic_path(path, temporary_name="fixed") as temporary:
        Path(temporary).write_text("newer")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


# -- evaluation inputs --------------------------------------------------------------------------


def test_unpack_dataset_keeps_a_data_frames_names_so_models_score_by_name() -> None:
    pd = pytest.importorskip("pandas")
    from hepbdt.io.dataset import FeatureMatrix

    frame = pd.DataFrame({"b": [1.0, 2.0], "a": [3.0, 4.0]})
    X, _, _, names = unpack_dataset((frame, [0, 1]))
    assert names == ["b", "a"]
    assert isinstance(X, FeatureMatrix) and tuple(X.feature_names) == ("b", "a")
    reordered, _ = check_X(X, names=["a", "b"])  # what a model fitted on (a, b) does
    np.testing.assert_array_equal(reordered, [[3.0, 1.0], [4.0, 2.0]])
    plain, _, _, plain_names = unpack_dataset((np.ones((2, 2)), [0, 1]))
    assert type(plain) is np.ndarray and plain_names == ["x0", "x1"]


def test_label_and_score_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="y must hold 1 for signal"):
        check_labels(np.array([0, 1, None], dtype=object))
    with pytest.raises(ValueError, match="score must be numbers"):
        as_1d(["a", "b"], "score")


# -- histograms ---------------------------------------------------------------------------------


def test_nan_values_are_refused_not_folded_into_the_last_bin() -> None:
    edges = np.linspace(0.0, 1.0, 5)
    with pytest.raises(ValueError, match="NaN"):
        weighted_histogram(np.array([0.5, np.nan]), np.array([1.0, 5.0]), edges)
    sumw, _ = weighted_histogram(np.array([-np.inf, 0.5, 2.0]), np.array([1.0, 2.0, 4.0]), edges)
    np.testing.assert_array_equal(sumw, [1.0, 0.0, 2.0, 4.0])  # outside: folded


@pytest.mark.parametrize("values", [[1e20, 1e20], [1.0, 1.0 + 2**-52], [BIG, BIG],
                                    [-BIG, BIG], [-1e308, 1e308]])
def test_common_edges_are_strictly_increasing_finite_and_span_the_values(values) -> None:
    for n_bins in (1, 7):
        edges = common_edges(np.array(values), n_bins)
        assert edges.size == n_bins + 1 and np.all(np.isfinite(edges))
        assert np.all(edges[1:] > edges[:-1])
        assert edges[0] <= min(values) and edges[-1] >= max(values)
        weighted_histogram(np.array(values), np.ones(len(values)), edges)  # accepted


def test_common_edges_of_a_constant_are_a_unit_range_around_it() -> None:
    """Values all 3: equal bins over [2.5, 3.5], as the docstring says (numpy's histogram
    takes the same range for a constant)."""
    for n_bins in (1, 2, 5):
        np.testing.assert_array_equal(common_edges(np.array([3.0, 3.0]), n_bins),
                                      np.histogram_bin_edges([3.0, 3.0], n_bins))


def test_common_edges_refuses_no_bins() -> None:
    with pytest.raises(ValueError, match="n_bins must be an integer >= 1"):
        common_edges(np.array([0.0, 1.0]), 0)


@pytest.mark.parametrize("q", [1.5, -0.5, float("nan"), [0.5, 2.0]])
def test_a_quantile_outside_zero_to_one_is_refused(q):
    from hepbdt._util import weighted_quantile

    with pytest.raises(ValueError, match=r"q must lie in \[0, 1\]"):
        weighted_quantile(np.array([1.0, 2.0, 3.0]), np.ones(3), q)


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_a_control_group_limit_bounds_the_available_memory(tmp_path, version):
    from hepbdt._util import cgroup_room

    if version == "v2":
        proc, root = "0::/slurm/job42\n", tmp_path
        files = {"slurm": ("8000000000", "1000000000"), "slurm/job42": ("max", "500000000")}
        names = ("memory.max", "memory.current")
    else:
        proc, root = "7:cpu,cpuacct:/x\n5:memory:/slurm/job42\n", tmp_path
        files = {"memory/slurm": ("9223372036854771712", "1"),
                 "memory/slurm/job42": ("3000000000", "2000000000")}
        names = ("memory.limit_in_bytes", "memory.usage_in_bytes")
    for folder, (limit, usage) in files.items():
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / names[0]).write_text(limit + "\n")
        (tmp_path / folder / names[1]).write_text(usage + "\n")
    (tmp_path / "cgroup").write_text(proc)
    expected = 7_000_000_000 if version == "v2" else 1_000_000_000
    assert cgroup_room(str(tmp_path / "cgroup"), str(root)) == expected
    assert cgroup_room(str(tmp_path / "absent"), str(root)) is None


def test_number_text_shows_no_negative_zero():
    # a value within rounding noise of 0 showed as -0.0000 (a background rejection in the
    # summary of a training with negative weights)
    from hepbdt._util import number_text

    assert number_text(-1e-17, fixed=True) == "0.0000"
    assert number_text(-1e-17) == "-1e-17" and number_text(-0.25, fixed=True) == "-0.2500"


# -- mutation audit GY: the helpers' numbers against references hepbdt did not write --------

_MASK64 = 2**64 - 1


def _splitmix64_fraction(number: int) -> float:
    """splitmix64's finaliser on Python integers (two's complement modulo 2**64), top 53 bits."""
    z = (number + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return float(Fraction(z >> 11, 2**53))


@pytest.mark.parametrize("dtype", ["int64", "uint64", "int32", "uint32", "int8"])
def test_hash_fraction_is_splitmix64_of_the_twos_complement_pattern(dtype):
    # the train/test split of every fit with event numbers: each constant, shift and
    # operation of the finaliser decides which events are held out
    from hepbdt._util import hash_fraction

    info = np.iinfo(dtype)
    numbers = [0, 1, 2, 3, 99, info.max, info.max - 1, info.min, info.min + 1]
    if dtype == "int64":
        numbers += [-1, -2, 2**53 + 1, -(2**62), 2**32, 987654321987654321]
    if dtype == "uint64":
        numbers += [2**63, 2**63 + 1, 2**63 - 1, 2**53 + 1]
    got = hash_fraction(np.array(numbers, dtype=dtype))
    expected = [_splitmix64_fraction(int(n) & _MASK64) for n in numbers]
    assert got.dtype == np.float64 and got.tolist() == expected
    assert hash_fraction(np.array([2**64 - 1], np.uint64))[0] == _splitmix64_fraction(-1)


def _brute_force_quantile(values: list[float], weights: list[float], q: float) -> float:
    """The documented definition with exact sums: the smallest value whose summed weight of
    values up to it reaches q (as the decimal given) times the total; |w| when the total is
    not positive, unit weights when all are zero."""
    w = [Fraction(x) for x in weights]
    if sum(w) <= 0:
        w = [abs(x) for x in w] if any(w) else [Fraction(1)] * len(w)
    target = Fraction(repr(q)) * sum(w)
    return next((v for v in sorted(set(values))
                 if sum(x for x, y in zip(w, values, strict=True) if y <= v) >= target),
                max(values))


def test_weighted_quantile_is_the_brute_force_definition_with_signed_weights_and_ties():
    from hepbdt._util import weighted_quantile

    rng = np.random.default_rng(7)
    qs = [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0]
    for case in range(240):
        n = int(rng.integers(1, 8))
        values = rng.integers(0, 4, n).astype(np.float64)
        weights = [rng.integers(-3, 4, n).astype(np.float64), rng.integers(0, 3, n) * 0.1,
                   rng.normal(size=n), np.zeros(n)][case % 4]
        got = weighted_quantile(values, weights, qs)
        expected = [_brute_force_quantile(values.tolist(), weights.tolist(), q) for q in qs]
        assert got.tolist() == expected, (values, weights)
        median = weighted_quantile(values, weights, 0.5)
        assert type(median) is float and median == expected[3]


def test_weighted_quantile_is_numpys_inverted_cdf_at_positive_weights():
    from hepbdt._util import weighted_quantile

    rng = np.random.default_rng(8)
    values = rng.normal(size=2000).round(1)  # ties
    weights = rng.exponential(size=2000)
    qs = np.linspace(0, 1, 41)
    np.testing.assert_array_equal(
        weighted_quantile(values, weights, qs),
        np.quantile(values, qs, weights=weights, method="inverted_cdf"))
    # a million equal weights of 0.1 give the unit weights' quantiles (their running sum
    # rounds below q times the total where unit weights reach it exactly)
    values = np.arange(1_000_000, dtype=np.float64)
    expected = np.quantile(values, [0.25, 0.5, 0.7], method="inverted_cdf")
    np.testing.assert_array_equal(
        weighted_quantile(values, np.full(values.size, 0.1), [0.25, 0.5, 0.7]), expected)
    assert weighted_quantile(np.array([]), np.array([]), 0.5) == 0.0
    assert np.isnan(weighted_quantile(np.array([]), np.array([]), [0.5])).all()
