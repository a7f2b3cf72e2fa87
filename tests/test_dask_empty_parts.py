"""The Dask path where cuts select nothing: a lazy read refuses a sample of no selected event
as the in-memory read does, empty parts of a fit and empty partitions of a prediction add
nothing, and a fit of no event at all is refused with the in-memory error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

import dask  # noqa: E402
import dask.array as da  # noqa: E402

from hepbdt import BDTClassifier, BDTRegressor  # noqa: E402
from hepbdt.dask import DaskBDTClassifier, DaskBDTRegressor  # noqa: E402
from hepbdt.io import Sample, read  # noqa: E402
from hepbdt.io.errors import EmptySelectionError  # noqa: E402
from tests.ntuples import KINDS, write_ntuple  # noqa: E402

FOREST_FIELDS = ("feature", "threshold", "bin_threshold", "left", "right", "missing_left", "value",
                 "gain", "cover", "tree_offsets", "tree_weights")
FEATURES = ["a", "b", "c"]
OPTIONS = dict(n_trees=3, max_depth=3, random_state=0, quantised_histograms=True,
               negative_weights="keep")


def _write(path: Path, n: int, shift: float, seed: int, kind: str) -> str:
    rng = np.random.default_rng(seed)
    w = rng.lognormal(0, 0.5, n)
    w[rng.random(n) < 0.1] *= -1
    write_ntuple(path, "t", {"a": rng.normal(shift, 1, n).astype(np.float32),
                             "b": np.round(rng.exponential(1, n), 1).astype(np.float32),
                             "c": rng.integers(0, 5, n).astype(np.int32), "w": w,
                             "event": (np.arange(n) * 7 + seed * 100_000).astype(np.int64)},
                 kind)
    return str(path)


@pytest.fixture(scope="module", params=KINDS)
def files(tmp_path_factory, request):
    """Toy ntuples: ``tiny`` (1 entry) and ``small`` (300), of events below 102,100, and
    ``big`` (4,000, events from 200,000) of signal, ``bkg`` (5,000), and ``empty``, a tree
    of no entry; TTrees, and RNTuples."""
    where = tmp_path_factory.mktemp("ntuples")
    kind = request.param
    return {"tiny": _write(where / "tiny.root", 1, 0.5, 1, kind),
            "small": _write(where / "small.root", 300, 0.5, 1, kind),
            "big": _write(where / "big.root", 4_000, 0.5, 2, kind),
            "bkg": _write(where / "bkg.root", 5_000, -0.5, 3, kind),
            "empty": _write(where / "empty.root", 0, 0.0, 4, kind)}


def _error_of(call) -> tuple[type, str]:
    with pytest.raises(Exception) as info:
        call()
    return type(info.value), str(info.value)


def _assert_same_forest(a, b):
    assert a.base_score == b.base_score
    for name in FOREST_FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


def _data(n=3_000, m=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] + rng.standard_normal(n) > 0).astype(int)
    return X, y, rng.uniform(0.3, 2.0, n)


def _chunked(chunks, *arrays):
    return [da.from_array(a, chunks=(chunks,) + a.shape[1:]) for a in arrays]


# -- 1. a lazy read refuses a sample of no selected event ---------------------------------
@pytest.mark.parametrize("step_size", [100_000, 1_000])  # one partition a file, or several
def test_lazy_read_refuses_a_cut_that_selects_nothing_when_computed(files, step_size):
    samples = [Sample("sig", files["big"], tree="t", label=1, weight="w"),
               Sample("bkg", [files["small"], files["bkg"]], tree="t", label=0, weight="w",
                      cut="a > 1000")]
    expected = _error_of(lambda: read(samples, FEATURES))
    assert expected[0] is EmptySelectionError
    lazy = read(samples, FEATURES, dask=True, step_size=step_size)
    with dask.config.set(scheduler="synchronous"):
        assert _error_of(lazy.compute) == expected
        assert _error_of(lazy.w.compute) == expected  # every column carries the check
        # the partitions before the sample's last go on without waiting for the check
        assert lazy.X.blocks[0].compute().shape == (4_000 if step_size > 4_000 else 1_000, 3)


def test_lazy_read_refuses_files_of_no_entry_at_once(files):
    for cut in (None, "a > 0"):
        samples = [Sample("sig", files["big"], tree="t", label=1),
                   Sample("bkg", files["empty"], tree="t", label=0, cut=cut)]
        expected = _error_of(lambda samples=samples: read(samples, FEATURES))
        assert expected[0] is EmptySelectionError and "hold no events" in expected[1]
        assert _error_of(lambda samples=samples: read(samples, FEATURES, dask=True)) == expected


def test_a_cut_that_empties_some_partitions_only_reads_what_memory_reads(files):
    samples = [Sample("sig", [files["small"], files["big"]], tree="t", label=1, weight="w",
                      cut="event >= 102100"),  # nothing of small.root, all of big.root
               Sample("bkg", files["bkg"], tree="t", label=0, weight="w")]
    memory = read(samples, FEATURES, event="event")
    lazy = read(samples, FEATURES, event="event", dask=True, step_size=200)
    with dask.config.set(scheduler="synchronous"):
        computed = lazy.compute()
        sizes = [block.shape[0] for block in dask.compute(*lazy.X.to_delayed().ravel())]
    assert sizes[:2] == [0, 0] and sum(sizes) == len(memory.X)
    for name in ("X", "y", "w", "event", "sample_index"):
        assert np.array_equal(getattr(computed, name), getattr(memory, name)), name


def test_a_dask_fit_on_a_sample_of_no_selected_event_is_refused(client, files):
    samples = [Sample("sig", files["big"], tree="t", label=1, weight="w"),
               Sample("bkg", files["bkg"], tree="t", label=0, weight="w", cut="a > 1000")]
    expected = _error_of(lambda: read(samples, FEATURES))
    lazy = read(samples, FEATURES, dask=True, step_size=1_000)
    fit = DaskBDTClassifier(**OPTIONS).fit
    assert _error_of(lambda: fit(lazy.X, lazy.y, lazy.w, client=client)) == expected
    regressor = DaskBDTRegressor(**OPTIONS).fit
    assert _error_of(lambda: regressor(lazy.X, lazy.w, client=client)) == expected


# -- 2. empty parts of a fit -------------------------------------------------------------
@pytest.mark.parametrize("chunks", [(0, 3_000), (0, 0, 1_500, 1_500), (3_000, 0, 0)])
def test_empty_blocks_and_parts_add_nothing(client, chunks):
    X, y, w = _data()
    memory = BDTClassifier(**OPTIONS).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**OPTIONS).fit(*_chunked(chunks, X, y, w), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    assert sum(count for _, count in dist.dask_parts_) == X.shape[0]
    target = X[:, 0] * 2 + X[:, 3]
    memory = BDTRegressor(**OPTIONS).fit(X, target, sample_weight=w)
    dist = DaskBDTRegressor(**OPTIONS).fit(*_chunked(chunks, X, target, w), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)


def test_a_part_of_only_cut_away_partitions_adds_nothing(client, files):
    samples = [Sample("sig", [files["tiny"], files["small"], files["big"]], tree="t", label=1,
                      weight="w", cut="event >= 102100"),
               Sample("bkg", files["bkg"], tree="t", label=0, weight="w")]
    memory = read(samples, FEATURES, event="event")
    reference = BDTClassifier(**OPTIONS).fit(memory.X, memory.y, sample_weight=memory.w)
    # partitions of 1, 300, 4,000 and 5,000 entries, two a worker: the first part is cut away
    lazy = read(samples, FEATURES, event="event", dask=True, step_size=5_000)
    assert lazy.npartitions == 4
    dist = DaskBDTClassifier(**OPTIONS).fit(lazy.X, lazy.y, lazy.w, client=client)
    assert dist.dask_parts_[0][1] == 0
    _assert_same_forest(reference.forest_, dist.forest_)
    assert dist.forest_.extra == reference.forest_.extra


@pytest.mark.parametrize("chunks", [(0,), (0, 0), (0, 0, 0)])
def test_a_fit_of_no_event_is_refused_as_in_memory(client, chunks):
    X, y, w = np.empty((0, 4), np.float32), np.empty(0, int), np.empty(0)
    for local, distributed in ((BDTClassifier, DaskBDTClassifier),
                               (BDTRegressor, DaskBDTRegressor)):
        expected = _error_of(lambda local=local: local(**OPTIONS).fit(X, y, sample_weight=w))
        fit = distributed(**OPTIONS).fit
        assert _error_of(lambda fit=fit: fit(*_chunked(chunks, X, y, w), client=client)) == expected


def test_a_fit_of_labels_but_no_event_names_the_lengths_as_in_memory(client):
    X, _, _ = _data(n=50)
    y = np.empty(0, int)
    expected = _error_of(lambda: BDTClassifier(**OPTIONS).fit(X, y))
    fit = DaskBDTClassifier(**OPTIONS).fit
    assert _error_of(lambda: fit(da.from_array(X, chunks=(20, 4)), da.from_array(y),
                                 client=client)) == expected


# -- 3. predictions on empty partitions ---------------------------------------------------
def test_lazy_predictions_of_empty_partitions(client):
    X, y, w = _data(seed=1)
    model = DaskBDTClassifier(**OPTIONS).fit(*_chunked(1_000, X, y, w), client=client)
    Xd, = _chunked((0, 1_000, 0, 2_000, 0), X)
    for method, shape in (("decision_function", (0,)), ("predict_proba", (0, 2)),
                          ("predict", (0,))):
        lazy = getattr(model, method)(Xd)
        expected = getattr(model.to_local(), method)(X)
        computed = lazy.compute()
        assert np.array_equal(computed, expected), method
        assert computed.dtype == expected.dtype == lazy.dtype, method
        empty = lazy.blocks[0].compute()
        assert empty.shape == shape and empty.dtype == expected.dtype, method
    target = X[:, 0] - X[:, 1]
    regressor = DaskBDTRegressor(**OPTIONS).fit(*_chunked(1_000, X, target, w), client=client)
    lazy = regressor.predict(Xd)
    assert np.array_equal(lazy.compute(), regressor.to_local().predict(X))
    assert lazy.blocks[0].compute().shape == (0,) and lazy.dtype == np.float64


def test_lazy_scores_of_a_read_whose_cut_empties_partitions(client, files):
    samples = [Sample("sig", [files["small"], files["big"]], tree="t", label=1, weight="w",
                      cut="event >= 102100"),
               Sample("bkg", files["bkg"], tree="t", label=0, weight="w")]
    memory = read(samples, FEATURES, event="event")
    lazy = read(samples, FEATURES, event="event", dask=True, step_size=1_000)
    model = DaskBDTClassifier(**OPTIONS).fit(lazy.X, lazy.y, lazy.w, client=client)
    reference = BDTClassifier(**OPTIONS).fit(memory.X, memory.y, sample_weight=memory.w)
    assert np.array_equal(model.decision_function(lazy.X).compute(),
                          reference.decision_function(memory.X))
