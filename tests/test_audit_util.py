"""Audit of the shared helpers (``_util``, ``evaluation._data``, ``evaluation._hist``): each
test pins a defect that was fixed (a number silently wrong, or a refusal that named the
wrong thing)."""

from __future__ import annotations

import math
import os
import stat
from decimal import ROUND_HALF_EVEN, Context, Decimal
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


def _decimal_rounded(value: float, digits: int, fixed: bool = False) -> Decimal:
    """``value`` (its exact binary value) rounded half to even by Python's decimal module:
    ``digits`` significant digits, or ``digits`` decimals when ``fixed``."""
    if fixed:
        return Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN,
                                       context=Context(prec=400))
    return Context(prec=digits, rounding=ROUND_HALF_EVEN).plus(Decimal(value))


def _shown_value(value: float, digits: int, marks: tuple[float, ...], fixed: bool = False
                 ) -> float:
    """number_text's contract: the fewest digits (from ``digits`` to 12) whose rounding
    lands on no mark nor on a mark's other side; ``digits`` when none does."""
    for n in range(digits, max(digits, 12) + 1):
        shown = float(_decimal_rounded(value, n, fixed))
        if all((shown < m) == (value < m) and (shown == m) == (value == m) for m in marks):
            return shown
    return float(_decimal_rounded(value, digits, fixed))


NEAR_MARKS = [0.99995, 0.999975, 0.99996, 0.0099996, 0.0499999, 0.050000001, 1 - 1e-9,
              1 - 1e-13, -1e-17, 1e-17, 5e-324, 1.7976931348623157e308, -0.99996, 1.00004,
              0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.1234500001, 0.0,
              0.01, 0.05, 1.0, -1.0, 99.99996, 2.5e-5, 0.00049, 1 - 1e-12, 1e-12]


@pytest.mark.parametrize("value", NEAR_MARKS)
def test_shown_numbers_are_the_decimal_rounding_that_crosses_no_mark(value):
    # an efficiency, AUC or p-value: rounded half to even (halves at each digit count),
    # never onto 0, +-1 or a verdict's threshold nor across one
    from hepbdt._util import number_text, percent_text, pvalue_text

    assert float(number_text(value)) == _shown_value(value, 4, (0.0, 1.0, -1.0))
    assert float(number_text(value, 3, fixed=True)) == _shown_value(value, 3, (0.0, 1.0, -1.0),
                                                                    fixed=True)
    thresholds = (0.01, 0.05)
    assert float(pvalue_text(value, thresholds)) == _shown_value(value, 4, (0.0, 1.0, *thresholds))
    assert float(pvalue_text(value, digits=2)) == _shown_value(value, 2, (0.0, 1.0))
    if abs(value) < 1e300:
        assert float(percent_text(value).rstrip("%")) == _shown_value(100 * value, 1, (0.0, 100.0),
                                                                      fixed=True)
    assert not number_text(value).startswith("-") or value < 0


def test_a_number_within_rounding_noise_of_a_mark_shows_its_plain_rounding():
    # twelve digits still land on the mark: the decimal rounding at four, without a sign
    from hepbdt._util import number_text

    for value in (1e-17, -1e-17, 1e-13):
        assert number_text(value, fixed=True) == str(abs(_decimal_rounded(value, 4, fixed=True)))


@pytest.mark.parametrize(("value", "thresholds", "text"), [
    (0.0099996, (0.01,), "0.0099996"), (0.050000001, (0.05,), "0.050000001"),
    (1 - 1e-9, (), "0.999999999"), (0.01, (0.01,), "0.01"), (0.012344, (0.01,), "0.01234"),
    (float("nan"), (), "n/a")])
def test_pvalue_texts_at_a_verdicts_threshold(value, thresholds, text):
    from hepbdt._util import pvalue_text

    assert pvalue_text(value, thresholds) == text


def test_a_printed_cut_selects_the_events_it_was_computed_for():
    # score >= printed keeps the events at the cut and none below it, with the fewest
    # digits (from four) that do: decimal's rounding of the cut
    from hepbdt._util import cut_text

    rng = np.random.default_rng(11)
    for _ in range(400):
        scale = 10.0 ** rng.integers(-6, 6)
        scores = np.unique(np.round(rng.normal(size=rng.integers(2, 30)) * scale,
                                    rng.integers(2, 9)))
        if scores.size < 2:
            continue
        k = int(rng.integers(1, scores.size))
        text = cut_text(scores[k], scores[k - 1])
        assert np.array_equal(scores >= float(text), scores >= scores[k]), (scores[k], text)
        n = next(n for n in range(4, 18)
                 if scores[k - 1] < float(_decimal_rounded(scores[k], n)) <= scores[k])
        assert float(text) == float(_decimal_rounded(scores[k], n))
    assert cut_text(0.12344, None) == "0.1234" and cut_text(-0.0) == "0"
    assert cut_text(0.123436, 0.1231, digits=3) == "0.1234"  # 0.123 would be below 0.1231
    assert cut_text(float("nan")) == "n/a"


@pytest.mark.parametrize(("first", "second"), [
    (-0.4950810001, -0.495081), (1.0, 1.0000000000000002), (5e-324, 1e-323),
    (1e30, 1.0001e30), (0.1234564, 0.1234565), (2.0, 3.0), (0.1, 0.1), (0.1234111, 0.1234211)])
def test_two_differing_numbers_show_the_fewest_digits_that_tell_them_apart(first, second):
    from hepbdt._util import differing_texts

    texts = differing_texts(first, second)
    if first == second:
        assert texts[0] == texts[1] and float(texts[0]) == first
        return
    n = next(n for n in range(6, 18)
             if _decimal_rounded(first, n) != _decimal_rounded(second, n))
    assert [float(t) for t in texts] == [float(_decimal_rounded(v, n)) for v in (first, second)]
    assert texts[0] != texts[1]


@pytest.mark.parametrize("fraction", [0.5, 0.995, 0.57, 0.29, 0.145, 0.07, 0.3, 0.123456,
                                      0.9999999, 1e-7, 1.0, 0.25, 0.12345678, 0.123456789,
                                      0.999999999999995, 0.1234567891, 2.5e-9])
def test_a_requested_fraction_shows_its_own_decimal_in_percent(fraction):
    # 100 * 0.57 is 56.99999999999999 in floats: the request of "57%" is shown as such
    from hepbdt._util import requested_percent, shown_alike

    expected = (Decimal(repr(fraction)) * 100).normalize()
    text = requested_percent(fraction)
    assert Decimal(text.rstrip("%")) == expected and text.endswith("%")
    decimals = max(0, -expected.as_tuple().exponent)
    assert len(text.rstrip("%").partition(".")[2]) == decimals
    step = 10.0 ** -decimals / 100  # one shown unit of the percent
    assert shown_alike(fraction, fraction)
    assert shown_alike(fraction + 0.4 * step, fraction) and shown_alike(fraction - 0.4 * step,
                                                                       fraction)
    assert not shown_alike(fraction + 0.6 * step, fraction)
    assert not shown_alike(fraction - 0.6 * step, fraction)


@pytest.mark.parametrize("value", [0.05, 1e-5, 0.1234567, 1 / 3, 0.1 + 0.2, 123456.7, 5e-324,
                                   1e300, 3.0, 0.3])
def test_a_setting_is_shown_as_a_text_that_reads_back_as_it(value):
    from hepbdt._util import setting_text

    text = setting_text(value)
    assert float(text) == value
    six = f"{Context(prec=6).plus(Decimal(value)):g}"
    assert len(text) <= max(len(six), len(repr(value)))
    if float(Decimal(six)) == value:
        assert Decimal(text) == Decimal(six)


@pytest.mark.parametrize("weights", [[1e-170, -3e170, 2.0], [0.75], [-1.0, 0.5], [5e-324],
                                     [1.7976931348623157e308, 1.0], [0.0, 0.0], []])
def test_the_weight_scale_is_the_binary_exponent_of_the_largest_weight(weights):
    from hepbdt._util import weight_exponent

    largest = max(map(abs, weights), default=0.0)
    expected = math.frexp(largest)[1] if largest else 0
    e = weight_exponent(np.array(weights, dtype=np.float64))
    assert e == expected and isinstance(e, int)
    if largest:  # the scaled weights lie in [0.5, 1) at the largest, and scaling is exact
        assert 0.5 <= math.ldexp(largest, -e) < 1


def test_the_running_sum_slack_is_highams_bound_and_the_net_weight_test_uses_it():
    from hepbdt._util import positive_beyond_rounding, running_sum_slack

    eps = Fraction(2) ** -52
    assert Fraction(running_sum_slack(10, 3.0)) == 10 * eps * 3
    assert Fraction(running_sum_slack(7, 0.1)) == Fraction(float(7 * eps * Fraction(0.1)))
    assert not positive_beyond_rounding(np.zeros(3))  # no weight at all is not positive
    assert not positive_beyond_rounding(np.array([0.1, 0.1, 0.1, -0.1, -0.1, -0.1]))
    assert positive_beyond_rounding(np.array([5e-324]))
    assert positive_beyond_rounding(np.array([1.0, -1.0, 1e-14]))
    assert not positive_beyond_rounding(np.array([1.0, -1.0, -1e-14]))


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1_000_000])
def test_missing_counts_and_any_nan_agree_with_numpy_whatever_the_block(block, monkeypatch):
    import hepbdt._util as util

    monkeypatch.setattr(util, "NAN_BLOCK_VALUES", block)
    rng = np.random.default_rng(block)
    X = rng.normal(size=(11, 3)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[-1, 2] = np.nan  # the last row: a block's end
    np.testing.assert_array_equal(util.missing_counts(X), np.isnan(X).sum(axis=0))
    codes = rng.integers(0, 4, size=(11, 3)).astype(np.uint8)
    np.testing.assert_array_equal(util.missing_counts(codes, 3), (codes == 3).sum(axis=0))
    assert util.any_nan(X) and not util.any_nan(np.nan_to_num(X))
    for rows in ([10], [0, 10], np.flatnonzero(~np.isnan(X).any(axis=1)), []):
        rows = np.asarray(rows, dtype=np.intp)
        assert util.any_nan(X, rows) == bool(np.isnan(X[rows]).any())


def test_columns_given_in_another_order_are_put_in_the_models_order():
    from hepbdt._util import check_X, column_positions

    rng = np.random.default_rng(4)
    names = ["a", "b", "c", "d"]
    X = rng.normal(size=(5, 4))
    for order in (["d", "c", "b", "a"], ["b", "a", "x", "d", "c"], ["c", "d", "a", "b"]):
        frame = {k: (X[:, names.index(k)] if k in names else np.zeros(5)) for k in order}
        out, given = check_X(frame, names=names)
        np.testing.assert_array_equal(out, X.astype(np.float32))
        assert given == names
        assert column_positions(order, names, "X", "m", {}) == [order.index(k) for k in names]
    # a feature named by its definition, and a back-quoted branch by the branch's name
    assert column_positions(["e", "log(HT)"], ["lht", "`e`"], "X", "m", {"lht": "log(HT)"}) == [1, 0]
    with pytest.raises(ValueError, match=r"lacks the features \['c'\]"):
        column_positions(["a", "b"], ["a", "c"], "X", "m", {})
    with pytest.raises(ValueError, match="repeated column names"):
        column_positions(["a", "a", "b"], ["a", "b"], "X", "m", {})


@pytest.mark.parametrize(("weights", "training", "message"), [
    ([1.0, np.nan, 2.0], False, "NaN or infinite values .first at event 1"),
    ([1.0, 2.0, -np.inf], False, "first at event 2"), ([1.0, 2.0], False, "2 entries, expected 3"),
    ([[1.0, 2.0, 3.0]], False, "must be 1-d"), ([0.0, 0.0, 0.0], True, "all weights are zero"),
    (["a", "b", "c"], False, "must be finite numbers")])
def test_bad_weights_are_refused(weights, training, message):
    from hepbdt._util import check_weights

    with pytest.raises(ValueError, match=message):
        check_weights(weights, 3, training=training)


def test_good_weights_pass_unchanged():
    from hepbdt._util import check_weights

    np.testing.assert_array_equal(check_weights(None, 3), np.ones(3))
    w = check_weights([0.0, 0.0, 0.0], 3)
    assert w.dtype == np.float64 and not w.any()
    assert check_weights(np.array([0.0, -1.0, 2.5], np.float32), 3, training=True).tolist() == [
        0.0, -1.0, 2.5]


def test_the_nan_scans_mask_at_most_a_block_of_values(monkeypatch):
    # the block is counted in rows of X's width: a wide X is scanned one row at a time
    import hepbdt._util as util

    isnan, sizes = np.isnan, []
    monkeypatch.setattr(util, "NAN_BLOCK_VALUES", 1000)
    monkeypatch.setattr(np, "isnan", lambda a: sizes.append(np.size(a)) or isnan(a))
    for X in (np.zeros((3, 1000), np.float32), np.zeros((2000, 3), np.float32)):
        assert not util.any_nan(X) and not util.missing_counts(X).any()
    assert sizes and max(sizes) <= 1000
    assert not util.any_nan(np.zeros((3, 0), np.float32))  # no column: no NaN, no error
    assert util.missing_counts(np.zeros((3, 0), np.float32)).shape == (0,)


def test_any_nan_scans_every_given_row_when_rows_repeat(monkeypatch):
    # rows of a bootstrap sample may outnumber X's rows
    import hepbdt._util as util

    monkeypatch.setattr(util, "NAN_BLOCK_VALUES", 1)
    X = np.zeros((3, 2), np.float32)
    X[2, 1] = np.nan
    rows = np.array([0, 0, 0, 2])
    assert util.any_nan(X, rows) == bool(np.isnan(X[rows]).any()) is True


@pytest.mark.parametrize(("X", "names", "message"), [
    (np.zeros(3), None, "must be 2-dimensional"),
    (np.zeros((2, 2, 2)), None, "must be 2-dimensional"),
    (np.zeros((2, 0)), None, "is empty: 2 sample"), (np.zeros((0, 2)), None, "is empty: 0 sample"),
    (np.zeros((2, 3)), ["a", "b"], "has 3 features, but the model is expecting 2"),
    (np.array([[np.inf, 1.0]]), None, r"infinite values \(first at event 0, feature 0\)"),
    (np.array([[1e39, 1.0]]), None,
     r"beyond float32's range \(first at event 0, feature 0: 1e\+39\).* within \+-3\.4028235e\+38")])
def test_check_X_refuses_other_shapes_and_an_infinity_at_the_first_entry(X, names, message):
    with pytest.raises(ValueError, match=message):
        check_X(X, names=names)


def test_uniform_draws_below_are_numpys_draws_after_the_skipped_ones():
    # the held-out events a fit drew (random(n) < fraction), drawn again from its state; a
    # draw equal to the fraction is not below it
    from hepbdt._util import uniform_draws_below

    state = np.random.PCG64(5).state
    draws = np.random.Generator(np.random.PCG64(5)).random(10)
    for skip in (0, 3):
        got = uniform_draws_below(state, 10 - skip, draws[3], skip)
        np.testing.assert_array_equal(got, draws[skip:] < draws[3])
    assert not uniform_draws_below(state, 1, draws[0])[0]
