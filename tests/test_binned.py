"""The binned streaming path: the edge sketch, BinnedMatrix, read(..., binned=True), and
models trained on codes against models trained on the float features with the same edges.

References are independent of the code under test where they can be: numpy's weighted
quantiles and the exact weighted CDF of the full data for the sketch, the float read and
``fit_bin_edges`` (the in-core rule) for the streaming read, and the in-core fit on float
features for the models.
"""

from __future__ import annotations

import html
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.binned import MISSING_CODE, BinnedMatrix
from hepbdt.engine.binning import EdgeSketch, fit_bin_edges
from hepbdt.io import CompressionError, Dataset, InputError, Sample, read
from tests.ntuples import KINDS, write_ntuple, write_ttree

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CLASS_FILE = DATA / "tmva_class_example.root"
VARS = ["var1", "var2", "var3", "var4"]
needs_data = pytest.mark.skipif(not CLASS_FILE.exists(), reason="reference ntuples absent")


def _sketch(X, w, chunks, capacity, seed=0, merge=False):
    """A sketch fed in the given chunk sizes, either updated in turn or merged from one
    sketch per chunk (in reverse order)."""
    bounds = np.cumsum([0, *chunks])
    assert bounds[-1] == len(X)
    if not merge:
        sketch = EdgeSketch(X.shape[1], capacity, seed)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            sketch.update(X[a:b], w[a:b], np.arange(a, b))
        return sketch
    parts = []
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        part = EdgeSketch(X.shape[1], capacity, seed)
        part.update(X[a:b], w[a:b], np.arange(a, b))
        parts.append(part)
    total = parts.pop()
    for part in reversed(parts):
        total.merge(part)
    return total


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.exponential(size=n),
                         rng.integers(0, 7, n).astype(float),  # few distinct values
                         np.round(rng.normal(size=n), 2)]).astype(np.float32)
    X[rng.random(n) < 0.05, 1] = np.nan
    w = rng.lognormal(0, 0.5, n)
    w[rng.random(n) < 0.2] *= -1  # negative weights count as |w|
    w[rng.random(n) < 0.02] = 0.0  # weight zero: not counted
    return X, w


def _same_edges(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("merge", [False, True])
def test_sketch_of_data_that_fit_reproduces_the_in_core_edges(merge: bool) -> None:
    X, w = _data(30_000)
    expected = fit_bin_edges(X, w)
    for chunks in ([30_000], [1, 9_999, 20_000], [7_000] * 4 + [2_000]):
        sketch = _sketch(X, w, chunks, capacity=30_000, merge=merge)
        assert _same_edges(sketch.edges(), expected)
    assert _same_edges(_sketch(X, w, [30_000], 30_000).edges(40, 5), fit_bin_edges(X, w, 40, 5))


def test_sketch_of_unit_and_all_zero_weights_counts_events() -> None:
    X, _ = _data(5_000, seed=1)
    for w in (np.ones(5_000), np.zeros(5_000)):
        assert _same_edges(_sketch(X, w, [2_500, 2_500], 10_000).edges(), fit_bin_edges(X, w))


def test_sampled_sketch_does_not_depend_on_the_chunks_or_merge_order() -> None:
    X, w = _data(60_000, seed=2)
    reference = _sketch(X, w, [60_000], capacity=5_000).edges()
    for chunks, merge in (([1_000] * 60, False), ([13, 40_000, 19_987], True),
                          ([6_000] * 10, True)):
        assert _same_edges(_sketch(X, w, chunks, 5_000, merge=merge).edges(), reference)
    assert not _same_edges(_sketch(X, w, [60_000], 5_000, seed=1).edges(), reference)


def _weighted_cdf(values, weights, at):
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order]) / weights.sum()
    return np.where(np.searchsorted(values[order], at, side="left") > 0,
                    cumulative[np.maximum(np.searchsorted(values[order], at, side="left") - 1, 0)],
                    0.0)


@pytest.mark.parametrize("weights", ["lognormal", "heavy"])
def test_sampled_sketch_edges_are_close_to_the_weighted_quantiles(weights: str) -> None:
    """Above its capacity the edges are quantiles of a priority sample: each edge's weighted
    rank in the full data is within a few 1/sqrt(capacity) of its target, and close to
    numpy's weighted quantile."""
    n, capacity, bins = 400_000, 20_000, 64
    rng = np.random.default_rng(3)
    x = np.column_stack([rng.normal(size=n), rng.gamma(2.0, size=n)]).astype(np.float32)
    if weights == "lognormal":
        w = rng.lognormal(0, 1.0, n) * np.where(rng.random(n) < 0.25, -1, 1)
    else:  # 0.1 % of the events carry half the weight, as large MC weights do
        w = np.ones(n)
        w[rng.random(n) < 0.001] = n / 400.0
    sketch = _sketch(x, w, [50_000] * 8, capacity, merge=True)
    a = np.abs(w)
    tolerance = 6 / np.sqrt(capacity)  # 6 standard deviations of a sampled rank, at most
    for f, edges in enumerate(sketch.edges(bins)):
        targets = np.arange(1, bins) / bins
        assert len(edges) == bins - 1
        ranks = _weighted_cdf(x[:, f].astype(np.float64), a, edges.astype(np.float64))
        assert np.max(np.abs(ranks - targets)) < tolerance
        assert np.mean(np.abs(ranks - targets)) < tolerance / 4
        numpy_q = np.quantile(x[:, f], targets, weights=a, method="inverted_cdf")
        numpy_ranks = _weighted_cdf(x[:, f].astype(np.float64), a, numpy_q.astype(np.float64))
        assert np.max(np.abs(ranks - numpy_ranks)) < tolerance + 1e-3


def test_binned_matrix_rows_columns_and_representatives() -> None:
    X, w = _data(2_000, seed=4)
    edges = fit_bin_edges(X, w, max_bins=16)
    B = BinnedMatrix.from_features(X, edges, feature_names=["a", "b", "c", "d"])
    for f in range(4):  # code b <=> edges[b-1] <= x < edges[b]; NaN in the missing bin
        finite = ~np.isnan(X[:, f])
        np.testing.assert_array_equal(B.codes[finite, f],
                                      np.searchsorted(edges[f], X[finite, f], side="right"))
        assert np.all(B.codes[~finite, f] == MISSING_CODE)
    rep = np.asarray(B)
    for f in range(4):  # representatives land in their own bins
        finite = ~np.isnan(X[:, f])
        np.testing.assert_array_equal(np.searchsorted(edges[f], rep[finite, f], side="right"),
                                      B.codes[finite, f])
        assert np.isnan(rep[~finite, f]).all()
    assert B[10:20].shape == (10, 4) and np.array_equal(B[X[:, 0] > 0].codes, B.codes[X[:, 0] > 0])
    assert B.columns([3, 0]).feature_names == ("d", "a")
    with pytest.raises(TypeError):
        B[:, 1]
    assert B.nbytes == 2_000 * 4


# -- models: binned against in-core on float features ---------------------------------------------


def _json(model) -> str:
    return json.dumps(model.to_dict(), sort_keys=True)


def test_missing_scans_find_the_last_value_with_a_small_temporary() -> None:
    """The NaN checks of a fit read in blocks: a NaN (code 255) in the last row is found, a
    clean matrix is clean, and the scan's peak memory is far below one byte per value."""
    import tracemalloc

    from hepbdt._util import any_nan

    n, m = 1_000_000, 10  # several blocks of 2**22 values
    codes = np.zeros((n, m), np.uint8)
    X = np.zeros((n, m), np.float32)
    tracemalloc.start()
    assert not BinnedMatrix(codes, [np.array([0.5], np.float32)] * m).missing_any()
    assert not any_nan(X)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * m / 2  # a whole mask would be n * m bytes
    codes[-1, -1] = MISSING_CODE
    X[-1, -1] = np.nan
    assert BinnedMatrix(codes, [np.array([0.5], np.float32)] * m).missing_any()
    assert any_nan(X)


@pytest.mark.parametrize("params", [
    {"boosting": "gradient"},  # n_trees="auto": held out by hashed event number, packed histograms
    {"boosting": "newton", "n_trees": 15, "max_depth": 4, "quantised_histograms": False},
    {"boosting": "adaboost", "n_trees": 8, "max_depth": 3},
    {"boosting": "gradient", "n_trees": 12, "max_leaves": 9, "max_depth": None, "subsample": 0.7},
])
def test_model_on_codes_equals_the_in_core_model_with_its_edges(params) -> None:
    rng = np.random.default_rng(5)
    n = 60_000
    X = rng.normal(size=(n, 6)).astype(np.float32)
    X[rng.random(n) < 0.03, 4] = np.nan
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    w = rng.uniform(0.2, 2.0, n)
    event = rng.permutation(n).astype(np.int64)
    in_core = BDTClassifier(random_state=7, **params).fit(X, y, w, event=event)
    binned = BinnedMatrix.from_features(X, in_core.bin_edges_)
    on_codes = BDTClassifier(random_state=7, **params).fit(binned, y, w, event=event)
    assert _json(on_codes) == _json(in_core)
    np.testing.assert_array_equal(on_codes.decision_function(binned), in_core.decision_function(X))


def test_regressor_and_negative_weights_given_edges() -> None:
    rng = np.random.default_rng(6)
    n = 20_000
    X = rng.normal(size=(n, 4)).astype(np.float32)
    target = X[:, 0] * 2 + np.sin(X[:, 1]) + rng.normal(scale=0.1, size=n)
    reg = BDTRegressor(n_trees=20, random_state=0).fit(X, target)
    on_codes = BDTRegressor(n_trees=20, random_state=0).fit(
        BinnedMatrix.from_features(X, reg.bin_edges_), target)
    assert _json(on_codes) == _json(reg)
    # Negative weights and the default policy ("regress"): given edges, the policy sees bins,
    # so fit(X, bin_edges=E) and fit(BinnedMatrix(X, E)) agree.
    y = (X[:, 0] > 0).astype(int)
    w = np.where(rng.random(n) < 0.1, -0.5, 1.0)
    edges = fit_bin_edges(X, w)
    a = BDTClassifier(n_trees=10, random_state=1).fit(X, y, w, bin_edges=edges)
    b = BDTClassifier(n_trees=10, random_state=1).fit(BinnedMatrix.from_features(X, edges), y, w)
    assert _json(a) == _json(b)


def test_binned_prediction_refuses_a_model_of_other_bins() -> None:
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3_000, 3)).astype(np.float32)
    y = (X[:, 0] > 0.1).astype(int)
    model = BDTClassifier(n_trees=5, max_depth=2).fit(X, y)
    other = BinnedMatrix.from_features(X, fit_bin_edges(X, max_bins=10))
    with pytest.raises(ValueError, match="not one of its bin edges"):
        model.decision_function(other)
    with pytest.raises(ValueError, match="bin_edges"):
        BDTClassifier().fit(other, y, bin_edges=other.edges)


# -- reading ---------------------------------------------------------------------------------


def _samples():
    return [Sample("signal", f"{CLASS_FILE}:TreeS", label="signal", event="floor(1000 * var1)"),
            Sample("background", f"{CLASS_FILE}:TreeB", label="background",
                   weight="weight * (1 - 2 * (var2 > 1.5))", cut="var1 > -2.5", scale=0.5)]


FEATURES = ["var1", "var2 * var3", "log(abs(var4))", "where(var3 > 1, var3, nan)"]


@needs_data
@pytest.mark.parametrize("step_size", [997, "8 MB"])
def test_binned_read_equals_the_float_read_binned_with_the_in_core_edges(step_size) -> None:
    floats = read(_samples(), FEATURES, event="0")
    binned = read(_samples(), FEATURES, event="0", binned=True, step_size=step_size)
    assert binned.binned and isinstance(binned.X, BinnedMatrix) and len(floats) == len(binned)
    assert np.any(floats.w < 0)  # negative weights are in the sketch as |w|
    edges = fit_bin_edges(floats.X, floats.w)  # fewer events than the sketch holds: exact
    assert _same_edges(binned.X.edges, edges)
    np.testing.assert_array_equal(binned.X.codes, BinnedMatrix.from_features(floats.X, edges).codes)
    for name in ("y", "w", "event", "sample_index"):
        np.testing.assert_array_equal(getattr(binned, name), getattr(floats, name))
    assert binned.X.feature_names == tuple(FEATURES) and binned.feature_names == FEATURES


@needs_data
def test_sampled_edges_do_not_depend_on_the_step_size() -> None:
    a = read(_samples(), FEATURES, binned=True, step_size=500, edge_sample=800)
    b = read(_samples(), FEATURES, binned=True, step_size="8 MB", edge_sample=800)
    assert _same_edges(a.X.edges, b.X.edges)
    np.testing.assert_array_equal(a.X.codes, b.X.codes)
    full = read(_samples(), FEATURES, binned=True)
    assert not _same_edges(a.X.edges, full.X.edges)


@needs_data
def test_a_model_trained_from_the_streaming_read_equals_the_in_core_one() -> None:
    """split, k-fold and the fit on codes: the same model as the float read, given its edges."""
    floats = read(_samples(), FEATURES)
    model = BDTClassifier(n_trees=20, max_depth=3, random_state=2, negative_weights="abs")
    train_f, test_f = floats.split("random", 0.6, seed=4, norm="num_events")
    in_core = model.fit(train_f.X, train_f.y, train_f.w, event=train_f.event)
    scores = in_core.decision_function(test_f.X)
    edges = in_core.bin_edges_
    binned = read(_samples(), FEATURES, binned=True, bin_edges=edges, step_size=1500)
    assert _same_edges(binned.X.edges, edges)
    train_b, test_b = binned.split("random", 0.6, seed=4, norm="num_events")
    on_codes = BDTClassifier(**model.get_params()).fit(train_b.X, train_b.y, train_b.w,
                                                        event=train_b.event)
    assert _json(on_codes) == _json(in_core)
    np.testing.assert_array_equal(on_codes.decision_function(test_b.X), scores)
    for (tr_f, te_f), (tr_b, te_b) in zip(floats.kfold(3), binned.kfold(3), strict=True):
        np.testing.assert_array_equal(tr_b.event, tr_f.event)
        np.testing.assert_array_equal(te_b.X.codes,
                                      BinnedMatrix.from_features(te_f.X, edges).codes)


def test_binned_dataset_take_and_normalise() -> None:
    X, w = _data(1_000, seed=9)
    B = BinnedMatrix.from_features(X, fit_bin_edges(X, w))
    y = (np.arange(1_000) % 3 == 0).astype(int)
    data = Dataset(B, y=y, w=np.abs(w) + 0.1, feature_names=list("abcd"))
    part = data.take(y == 1).normalize("num_events")
    assert part.binned and len(part) == int(y.sum()) and part.X.feature_names == tuple("abcd")
    np.testing.assert_allclose(part.w.sum(), len(part))
    np.testing.assert_array_equal(part.X.codes, B.codes[y == 1])


def test_a_file_unreadable_halfway_names_it(tmp_path: Path) -> None:
    path = tmp_path / "good.root"
    with uproot.recreate(path, compression=uproot.ZLIB(1)) as file:
        file.mktree("T", {"x": np.float64, "y": np.float64})
        for k in range(4):  # four baskets per branch
            file["T"].extend({"x": np.arange(1000.0) + k, "y": np.zeros(1000)})
    data = path.read_bytes()
    last = data.rfind(b"ZL\x08")
    bad = tmp_path / "halfway.root"
    bad.write_bytes(data[:last] + b"QQ\x08" + data[last + 3:])  # the last basket only
    with pytest.raises(CompressionError) as info:
        read(Sample("s", bad, label=1), ["x", "y"], binned=True, step_size=2000)
    assert str(bad) in str(info.value) and "'T'" in str(info.value)
    failing = []  # the branch whose last basket was damaged, as uproot reads it alone
    with uproot.open(bad) as file:
        for name in ("x", "y"):
            try:
                file["T"][name].array(library="np")
            except Exception:  # noqa: BLE001 - any failure names it
                failing.append(name)
    # the chunk's entries (two baskets) and only that branch (it named every branch: the
    # probe read the chunk's first entry, in the undamaged basket)
    assert len(failing) == 1
    assert f"branch(es) {failing[0]!r} (entries 2000 to 3999)" in str(info.value)


def _small_file(tmp_path: Path, big: float = 1.0, kind: str = "ttree") -> Path:
    path = tmp_path / "small.root"
    x = np.random.default_rng(0).normal(size=2000)
    write_ntuple(path, "T", {"x": x, "big": np.where(np.arange(2000) == 1500, big, 1.0)}, kind)
    return path


@pytest.mark.parametrize("option, value", [
    ("edge_sample", 0), ("edge_sample", 2.5), ("edge_sample", "100"), ("edge_sample", -1),
    ("edge_sample", True), ("seed", 1.5), ("seed", -1), ("seed", "0"), ("max_bins", "16"),
])
def test_the_binned_reads_options_are_checked(tmp_path: Path, option: str, value) -> None:
    # edge_sample=0 became the default, 2.5 became 2 and "100" was taken; -1 raised a
    # ValueError about a 'capacity'
    path = _small_file(tmp_path)
    with pytest.raises(InputError, match=f"{option} must be"):
        read(Sample("s", f"{path}:T", label=1), ["x"], binned=True, **{option: value})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("binned", [True, False])
def test_a_value_beyond_float32_is_refused_without_a_numpy_warning(
        tmp_path: Path, binned: bool, kind: str) -> None:
    # numpy's "overflow encountered in cast" reached stderr before hepbdt's error line; a
    # finite 1e39 is no missing value, so inf_as_missing refuses it too (it was read as NaN)
    path = _small_file(tmp_path, big=1e39, kind=kind)
    sample = Sample("s", f"{path}:T", label=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for inf_as_missing in (False, True):
            with pytest.raises(InputError, match="'big' is 1e\\+39 at entry 1500 .* beyond "
                                                 "float32's range"):
                read(sample, ["x", "big"], binned=binned, inf_as_missing=inf_as_missing)


# -- hepbdt train: binned, "auto" and the stated memory ----------------------------------------

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "analyses" / "demo.toml"
QUICK = ["--set", "preselection='(nJet >= 2) & (event % 5 == 0)'", "--set", "method.n_trees=10",
         "--no-progress"]


def test_weights_too_small_to_sample_the_edges_by_are_refused(tmp_path: Path) -> None:
    """Keys u / |w| were cut at 5e299, so below |w| = 2e-300 the events' keys tied: the
    sketch kept the first events read, not a random sample (4 edges instead of 254 at
    weights of 1e-305, while fit_bin_edges on the same events found all)."""
    sketch = EdgeSketch(1, capacity=10)
    X = np.zeros((3, 1), np.float32)
    sketch.update(X, np.array([1e-299, 0.0, -1.0]), np.arange(3))  # exact keys: taken
    with pytest.raises(ValueError, match=r"below 2e-300 \(event 4: 1e-305\)"):
        sketch.update(X, np.array([1.0, -1e-305, 1.0]), np.arange(3, 6))
    path = _small_file(tmp_path)
    with pytest.raises(InputError, match="scale=1e-305 is below 2e-300 .* too small for the "
                                         "binned read's edge sketch"):
        read(Sample("s", f"{path}:T", label=1, scale=1e-305), ["x"], binned=True)


def test_train_binned_then_apply_streams_floats_to_the_same_scores(tmp_path, capsys) -> None:
    """A binned training writes every output; apply, reading float branches chunk by chunk,
    scores the test events exactly as the training did from their codes."""
    from hepbdt.cli import main

    out = tmp_path / "results"
    assert main(["train", str(DEMO), "--output", str(out), *QUICK, "--set", "binned=true"]) == 0
    assert (out / "model.json").exists() and (out / "report.html").exists()
    # its correlations are of the bins' lower edges (README), and the report says so
    assert ("a binned read: each value at its bin's lower edge"
            in html.unescape((out / "report.html").read_text()))
    rebuilt = tmp_path / "rebuilt.html"  # hepbdt report knows it from the output set
    assert main(["report", str(out / "model.json"), str(out / "scores.root"),
                 "--output", str(rebuilt)]) == 0
    assert "a binned read: each value at its bin's lower edge" in html.unescape(rebuilt.read_text())
    friend = tmp_path / "friend.root"
    inputs = [str(REPO / "data" / "signal.root"), str(REPO / "data" / "background_*.root")]
    assert main(["apply", str(out / "model.json"), *inputs, "--output", str(friend),
                 "--event", "event", "--no-progress"]) == 0
    with uproot.open(friend) as file:
        applied = file["Events"].arrays(["event", "bdt_score"], library="np")
    with uproot.open(out / "scores.root") as file:
        test = file["TestTree"].arrays(["event", "bdt_score"], library="np")
    score_of = dict(zip(applied["event"].tolist(), applied["bdt_score"].tolist(), strict=True))
    np.testing.assert_array_equal([score_of[e] for e in test["event"].tolist()], test["bdt_score"])


def _wide_config(tmp_path: Path, outputs: bool, events: int = 300_000, features: int = 20
                 ) -> Path:
    """A configuration of 2 x ``events`` x ``features`` (nothing is trained from it), with
    an event number ``evt``: TTrees of one basket a branch."""
    rng = np.random.default_rng(0)
    for name in ("s", "b"):
        write_ttree(tmp_path / f"{name}.root", "t",
                    {"evt": np.arange(events, dtype=np.int64),
                     **{f"x{j}": rng.normal(size=events).astype(np.float32)
                        for j in range(features)}})
    path = tmp_path / f"wide_{outputs}.toml"
    path.write_text(f"""
tree = "t"
event = "evt"
features = {[f"x{j}" for j in range(features)]}
[samples.signal]
files = "{tmp_path / 's.root'}"
label = "signal"
[samples.bkg]
files = "{tmp_path / 'b.root'}"
label = "background"
[output]
report = {str(outputs).lower()}
figures = {str(outputs).lower()}
""")
    return path


def test_memory_too_small_is_an_error_before_training(tmp_path, capsys) -> None:
    from hepbdt.analysis import load_config
    from hepbdt.analysis.estimate import estimate, use_binned
    from hepbdt.cli import main

    out = tmp_path / "never"
    lean = _wide_config(tmp_path, outputs=False)
    code = main(["train", str(lean), "--output", str(out), "--set", "memory='2 MB'"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.startswith("hepbdt: error:") and "2.0 MB stated" in err and "binned = true" in err
    code = main(["train", str(lean), "--output", str(out), "--set", "memory='2 MB'",
                 "--set", "binned='auto'"])
    assert code == 2 and "even binned" in capsys.readouterr().err and not out.exists()
    # the report and figures see float values: binned then needs more, and is not advised
    full = _wide_config(tmp_path, outputs=True)
    code = main(["train", str(full), "--output", str(out), "--set", "memory='2 MB'"])
    err = capsys.readouterr().err
    assert code == 2 and "binned would need about" in err and "binned = true" not in err
    # "auto": binned when the float path would need more than half the memory and the
    # binned path less than the float path
    need = estimate(load_config(lean)).bytes
    for memory, binned in ((need * 4, False), (need, True)):
        assert use_binned(load_config(lean, [f"memory={memory}", "binned='auto'"])) is binned
    assert use_binned(load_config(full, [f"memory={need}", "binned='auto'"])) is False
    code = main(["train", str(DEMO), "--output", str(out), *QUICK, "--set", "binned='maybe'"])
    assert code == 2 and "binned" in capsys.readouterr().err


def test_binned_auto_can_choose_binned_with_the_report_and_figures(tmp_path, monkeypatch) -> None:
    """With the report and figures the binned estimate was 1.26-1.29x the float one at any
    size (its report room added to the fit's peak, 8 bytes a value), so binned = "auto"
    never read binned; 4M x 20 measured 1.14 GB binned against 1.41 GB float (peak RSS).
    At many events its fixed costs (the edge sketch, the correlation blocks) are paid off."""
    from hepbdt.analysis import estimate as est
    from hepbdt.analysis import load_config

    full = load_config(_wide_config(tmp_path, outputs=True))
    monkeypatch.setattr(est, "_read_sizes", lambda config: (4_000_000, 0))
    e = est.estimate(full)
    assert e.binned_bytes < e.bytes
    chosen = est.estimate(load_config(_wide_config(tmp_path, outputs=True), ["binned='auto'"]),
                          e.bytes)  # the float path needs more than half of that
    assert chosen.binned


@pytest.mark.parametrize("boosting", ["gradient", "adaboost"])
def test_staged_scores_of_codes_equal_those_of_their_values(boosting) -> None:
    """The learning curve's staged scores read a BinnedMatrix of the model's own bins from
    its codes (no float copy): the same numbers, bit for bit, as from the values; a matrix
    of other bins goes through its values."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 4)).astype(np.float32)
    X[rng.random(4000) < 0.05, 1] = np.nan
    y = (X[:, 0] + np.nan_to_num(X[:, 1]) + rng.normal(size=4000) > 0).astype(int)
    model = BDTClassifier(boosting=boosting, n_trees=12, max_depth=3).fit(X, y)
    own = BinnedMatrix.from_features(X, model.bin_edges_)
    coarse = BinnedMatrix.from_features(X, [e[::2] for e in model.bin_edges_])
    assert model._grown_on(own) and not model._grown_on(coarse)
    by_values = list(model.staged_decision_function(np.asarray(own)))
    assert len(by_values) == 12
    for staged in model.staged_decision_function(own), model.staged_decision_function(X):
        for a, b in zip(staged, by_values, strict=True):
            np.testing.assert_array_equal(a, b)


def test_a_binned_kfold_estimate_counts_the_training_rows_it_writes(tmp_path) -> None:
    # the binned-read audit: 2M x 10 with 10 folds peaked at 2.6 GB where binned's estimate
    # said 954 MB (k - 1 float training rows an event, which the float estimate counted)
    from hepbdt.analysis import load_config
    from hepbdt.analysis.estimate import _kfold_rows_bytes, estimate

    lean = _wide_config(tmp_path, outputs=False, events=20_000, features=10)
    split = estimate(load_config(lean, ["binned=true"]))
    config = load_config(lean, ["binned=true", "split.kfold=10"])
    folds = estimate(config)
    rows = _kfold_rows_bytes(config, folds.events * 9, folds.features)
    assert rows > 0 and folds.binned_bytes >= split.binned_bytes + 0.9 * rows


def test_sketch_edges_of_weights_near_the_float64_maximum() -> None:
    """Priority sampling's 1 / tau overflowed for weights near float64's largest (keys of
    1e-309): every sampled weight became inf, the quantiles NaN, and a feature of 254 edges
    got 1. Scaling every weight by a power of two must not move an edge; the reference is
    numpy's weighted quantiles of the priority sample, computed here."""
    rng = np.random.default_rng(0)
    n, capacity = 20_000, 1000
    X = rng.normal(size=(n, 1)).astype(np.float32)
    w = np.where(rng.random(n) < 0.1, 10.0, 1.0)
    X[w == 10, 0] += 3
    sketches = {}
    for power in (0, 1019):
        sketch = EdgeSketch(1, capacity, 0)
        sketch.update(X, w * 2.0**power, np.arange(n))
        sketches[power] = sketch
    edges = sketches[1019].edges()[0]
    assert np.isfinite(sketches[1019].sample()[1]).all()
    # brute force: the capacity smallest keys u / w, each weighted max(w, 1 / tau)
    keys = sketches[0].keys(w, np.arange(n))
    order = np.argsort(keys)
    kept, tau = np.sort(order[:capacity]), keys[order[capacity]]
    values, weights = X[kept, 0], np.maximum(w[kept], 1.0 / tau)
    assert len(edges) == 254
    below = np.array([weights[values < e].sum() for e in edges]) / weights.sum()
    step = np.max(weights) / weights.sum()  # one event's share: the most a quantile can miss by
    np.testing.assert_array_less(np.abs(below - np.arange(1, 255) / 255), step + 1e-12)
    np.testing.assert_array_equal(edges, sketches[0].edges()[0])


def test_binned_read_refuses_weights_the_sketch_cannot_sample(tmp_path, capsys) -> None:
    """Weights below 2e-300 in magnitude: one error naming the sample, the file and the
    entry (a ValueError of the sketch reached the command line as a traceback)."""
    from hepbdt.cli import main

    rng = np.random.default_rng(1)
    for name in ("s", "b"):
        write_ttree(tmp_path / f"{name}.root", "t",
                    {"x": rng.normal(size=50).astype(np.float32), "w": np.full(50, 1e-301)})
    config = tmp_path / "tiny.toml"
    config.write_text(f"""
binned = true
tree = "t"
features = ["x"]
[samples.signal]
files = "{tmp_path / 's.root'}"
label = "signal"
weight = "w"
[samples.bkg]
files = "{tmp_path / 'b.root'}"
label = "background"
[output]
report = false
figures = false
""")
    code = main(["train", str(config), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("hepbdt: error: sample 'signal'") and err.count("\n") == 1
    assert "entry 0" in err and "1e-301" in err and "w * 1e300" in err
    with pytest.raises(InputError, match="too small for the binned read's edge sketch"):
        read(Sample("s", str(tmp_path / "s.root"), tree="t", weight="w", label="signal"), ["x"],
             binned=True)


def test_representatives_and_rows_by_hand() -> None:
    """The table of each code's value, written out by hand: below the first edge by one
    step (the first gap, or max(1, |edge|) for one edge), then the edges, the last edge
    for codes past them, NaN for missing and for a feature without edges; rows selected
    by a negative index and read from ``start`` give numpy's own rows of that table."""
    edges = [np.array([1.0, 2.0, 4.0], np.float32), np.array([5.0], np.float32),
             np.array([-0.5], np.float32), np.zeros(0, np.float32)]
    codes = np.array([[0, 0, 0, 0], [3, 1, 1, 0], [255, 255, 0, 255], [2, 1, 255, 0]], np.uint8)
    B = BinnedMatrix(codes, edges)
    table = B.representatives()
    assert table.shape == (4, 256)
    np.testing.assert_array_equal(table[0, :5], [0.0, 1.0, 2.0, 4.0, 4.0])
    np.testing.assert_array_equal(table[0, 4:255], np.full(251, 4.0))
    np.testing.assert_array_equal(table[1, :3], [0.0, 5.0, 5.0])
    np.testing.assert_array_equal(table[2, :3], [-1.5, -0.5, -0.5])
    assert np.isnan(table[:, MISSING_CODE]).all() and np.isnan(table[3]).all()
    by_hand = np.array([[0.0, 0.0, -1.5, np.nan], [4.0, 5.0, -0.5, np.nan],
                        [np.nan, np.nan, -1.5, np.nan], [2.0, 5.0, np.nan, np.nan]], np.float32)
    np.testing.assert_array_equal(np.asarray(B), by_hand)
    np.testing.assert_array_equal(B.to_features(1, 3), by_hand[1:3])
    np.testing.assert_array_equal(B.feature_values(2), by_hand[:, 2])
    np.testing.assert_array_equal(B[-1].codes, codes[3:])
    np.testing.assert_array_equal(B[1].codes, codes[1:2])
    with pytest.raises(IndexError):
        B[-5]
    bins = B.bin_indices()
    np.testing.assert_array_equal(np.isnan(bins), codes == MISSING_CODE)
    np.testing.assert_array_equal(bins[codes != MISSING_CODE], codes[codes != MISSING_CODE])
    assert not B.same_bins(BinnedMatrix(codes, [edges[0], edges[1], np.array([-0.25], np.float32),
                                                edges[3]]))
    assert B.same_bins(BinnedMatrix(codes, [e.copy() for e in edges]))


@pytest.mark.parametrize("m", [1, 3, 300])
def test_codes_beyond_the_edges_are_refused_wherever_they_lie(m: int, monkeypatch) -> None:
    """A code above len(edges) is refused in any row (the check's folded rows, its blocks
    and their remainders) and any column; len(edges) itself and 255 are bins."""
    import hepbdt.binned as binned

    monkeypatch.setattr(binned, "_CHECK_VALUES", 4096)  # several blocks of a small matrix
    n = 4096 // m * 3 + 7
    edges = [np.array([0.5, 1.5], np.float32)] * m
    codes = np.full((n, m), 2, np.uint8)
    codes[::5] = MISSING_CODE
    BinnedMatrix(codes, edges)  # the largest bin and missing: valid
    for row, col in [(0, 0), (n - 1, m - 1), (n // 2, m // 2), (n - 3, 0)]:
        bad = codes.copy()
        bad[row, col] = 3
        with pytest.raises(ValueError, match=f"codes of feature {col} go up to 3"):
            BinnedMatrix(bad, edges)


def test_given_edges_become_float32_above_and_must_match_the_columns() -> None:
    """A float64 edge between two float32 values becomes the float32 above it (numpy's
    nextafter of the rounded-down value), so x = 1.0 stays below an edge of 1 + 2**-30; an
    edge array per column, no fewer; the matrix is 2-d as numpy sees it."""
    above_one = np.nextafter(np.float32(1.0), np.float32(2.0))
    B = BinnedMatrix(np.zeros((2, 1), np.uint8), [np.array([1.0 + 2.0**-30, 3.0])])
    assert B.edges[0].dtype == np.float32
    np.testing.assert_array_equal(B.edges[0], np.array([above_one, 3.0], np.float32))
    assert B.ndim == np.asarray(B).ndim == 2
    with pytest.raises(ValueError, match="1 edge arrays for 2 columns"):
        BinnedMatrix(np.zeros((3, 2), np.uint8), [np.array([0.5], np.float32)])
    with pytest.raises(ValueError, match="1 feature names for 2 columns"):
        BinnedMatrix(np.zeros((3, 2), np.uint8), [np.array([0.5], np.float32)] * 2, ["a"])


@pytest.mark.parametrize("bad", [-1, 256, 259])
def test_integer_codes_are_taken_as_they_are_or_refused(bad: int) -> None:
    """Integer codes of another dtype are the same codes (int64 1 is bin 1); one outside
    0..255 is refused, not wrapped by a cast (-1 would become 255, missing; 259 would be 3)."""
    edges = [np.array([0.5, 1.5, 2.5], np.float32)]
    B = BinnedMatrix(np.array([[1], [3]], np.int64), edges)
    np.testing.assert_array_equal(B.codes, np.array([[1], [3]], np.uint8))
    with pytest.raises(ValueError, match="codes must be bin codes"):
        BinnedMatrix(np.array([[1], [bad]], np.int64), edges)
