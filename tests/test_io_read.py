"""hepbdt.io.read on the ROOT-written reference ntuples, against uproot and numpy by hand."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.io import Dataset, InputError, Sample, read
from tests.ntuples import KINDS, write_ntuple, write_rntuple, write_ttree

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
CLASS_FILE = DATA / "tmva_class_example.root"
REG_FILE = DATA / "tmva_reg_example.root"
MULTI_FILE = DATA / "tmva_multiclass_example.root"
CATEG_FILE = DATA / "toy_sigbkg_categ_offset.root"

pytestmark = pytest.mark.skipif(
    not CLASS_FILE.exists(), reason="reference ntuples in ../shared/data are absent"
)
VARS = ["var1", "var2", "var3", "var4"]


def _uproot(path: Path, tree: str, branches: list[str]) -> dict[str, np.ndarray]:
    with uproot.open(path) as file:
        return file[tree].arrays(branches, library="np")


def test_tmva_classification_example_loads_in_one_call() -> None:
    ds = read(
        [
            Sample("signal", f"{CLASS_FILE}:TreeS", label="signal"),
            Sample("background", f"{CLASS_FILE}:TreeB", label="background", weight="weight"),
        ],
        features=VARS,
    )
    s = _uproot(CLASS_FILE, "TreeS", VARS)
    b = _uproot(CLASS_FILE, "TreeB", [*VARS, "weight"])
    expected = np.concatenate(
        [np.column_stack([s[v] for v in VARS]), np.column_stack([b[v] for v in VARS])]
    )
    assert isinstance(ds, Dataset)
    assert ds.X.dtype == np.float32 and ds.X.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(ds.X, expected)
    np.testing.assert_array_equal(ds.y, np.r_[np.ones(6000), np.zeros(6000)])
    assert ds.y.dtype == ds.sample_index.dtype == np.int8  # labels 0/1, two samples
    np.testing.assert_array_equal(ds.w[:6000], 1.0)
    np.testing.assert_array_equal(ds.w[6000:], b["weight"].astype(np.float64))
    np.testing.assert_array_equal(ds.sample_index, np.r_[np.zeros(6000), np.ones(6000)])
    np.testing.assert_array_equal(ds.event, np.r_[np.arange(6000), np.arange(6000)])
    assert ds.feature_names == VARS
    assert ds.sample_names == ["signal", "background"]


def test_weight_cut_and_expressions_match_numpy_by_hand() -> None:
    cut = "(var1 > 0) & (abs(var2) < 1.5) | (var4 > 2)"
    features = ["var1", "log(abs(var3))", "var1 * var2 + var4 ** 2", "sqrt(abs(var4))",
                "atan2(var2, var1)", "max(var1, var2)", "where(var3 > 0, var3, -1)"]
    ds = read(
        Sample("bkg", CLASS_FILE, tree="TreeB", label=0, weight="weight * 2.5 / 3",
               cut=cut, scale=0.5),
        features=features,
    )
    b = _uproot(CLASS_FILE, "TreeB", [*VARS, "weight"])
    v1, v2, v3, v4, weight = (b[k] for k in [*VARS, "weight"])
    mask = ((v1 > 0) & (np.abs(v2) < 1.5)) | (v4 > 2)
    assert 0 < mask.sum() < len(mask)
    expected = np.column_stack([
        v1, np.log(np.abs(v3)), v1 * v2 + v4**2, np.sqrt(np.abs(v4)), np.arctan2(v2, v1),
        np.maximum(v1, v2), np.where(v3 > 0, v3, -1),
    ])[mask].astype(np.float32)
    np.testing.assert_allclose(ds.X, expected, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(ds.w, (weight * 2.5 / 3)[mask].astype(np.float64) * 0.5,
                               rtol=1e-6)
    np.testing.assert_array_equal(ds.event, np.flatnonzero(mask))
    np.testing.assert_array_equal(ds.y, 0)


def test_chunks_and_threads_give_the_same_arrays() -> None:
    samples = [Sample("s", CLASS_FILE, tree="TreeS", label=1, cut="var1 > var2"),
               Sample("b", CLASS_FILE, tree="TreeB", label=0, weight="weight")]
    whole = read(samples, VARS, step_size="100 MB", threads=1)
    for chunked in (read(samples, VARS, step_size=777, threads=2), read(samples, VARS)):
        for name in ("X", "y", "w", "event", "sample_index"):
            np.testing.assert_array_equal(getattr(whole, name), getattr(chunked, name))


def test_regression_target_expression() -> None:
    ds = read(Sample("reg", REG_FILE, label="fvalue"), ["var1", "var2"])
    r = _uproot(REG_FILE, "TreeR", ["var1", "var2", "fvalue"])
    assert ds.task == "regression" and ds.y.dtype == np.float32
    np.testing.assert_array_equal(ds.y, r["fvalue"])
    ds2 = read(Sample("reg", REG_FILE, target="2 * fvalue"), ["var1"])
    np.testing.assert_allclose(ds2.y, 2 * r["fvalue"])


def test_multiclass_integer_labels() -> None:
    trees = ["TreeS", "TreeB0", "TreeB1", "TreeB2"]
    ds = read([Sample(t, f"{MULTI_FILE}:{t}", label=i) for i, t in enumerate(trees)], VARS)
    np.testing.assert_array_equal(ds.y, np.repeat(np.arange(4), 2000))
    np.testing.assert_array_equal(ds.X[2000:4000, 0], _uproot(MULTI_FILE, "TreeB0", ["var1"])["var1"])


def test_file_lists_globs_mappings_and_tree_lists(tmp_path: Path) -> None:
    for name in ("a.root", "b.root"):
        shutil.copyfile(CATEG_FILE, tmp_path / name)
    s = _uproot(CATEG_FILE, "TreeS", ["var1", "eta"])
    b = _uproot(CATEG_FILE, "TreeB", ["var1"])
    by_glob = read(Sample("s", str(tmp_path / "*.root"), tree="TreeS", label=1), ["var1", "eta"])
    np.testing.assert_array_equal(by_glob.X[:, 1], np.tile(s["eta"], 2))
    # entry numbers run through the chain of files
    np.testing.assert_array_equal(by_glob.event, np.arange(20000))
    by_list = read(Sample("s", [tmp_path / "a.root", f"{tmp_path / 'b.root'}:TreeB"],
                          tree="TreeS", label=1), ["var1"])
    np.testing.assert_array_equal(by_list.X[:, 0], np.r_[s["var1"], b["var1"]])
    by_map = read(Sample("s", {str(tmp_path / "b.root"): "TreeB"}, label=1), ["var1"])
    np.testing.assert_array_equal(by_map.X[:, 0], b["var1"])
    two_trees = read(Sample("all", tmp_path / "a.root", tree=["TreeS", "TreeB"], label=1),
                     ["var1"])
    np.testing.assert_array_equal(two_trees.X[:, 0], np.r_[s["var1"], b["var1"]])


def test_only_tree_is_found_and_event_expression() -> None:
    # event numbers must be whole: a fraction is refused, so floor() makes them so
    ds = read(Sample("reg", REG_FILE, target="fvalue"), ["var1"], event="floor(var2 * 1000)")
    r = _uproot(REG_FILE, "TreeR", ["var2"])
    # in double, as ROOT computes formulas (float32 arithmetic rounds 2 of these 10,000 down)
    np.testing.assert_array_equal(ds.event, np.floor(r["var2"].astype(np.float64) * 1000))
    assert ds.event.dtype == np.int64  # an expression's values may be large
    entries = read(Sample("reg", REG_FILE, target="fvalue"), ["var1"])
    assert entries.event.dtype == np.int32  # entry numbers below 2**31: 4 bytes an event
    np.testing.assert_array_equal(entries.event, np.arange(len(r["var2"])))


def test_entry_numbers_beyond_int32_are_int64(monkeypatch: pytest.MonkeyPatch) -> None:
    # A chain of more than 2**31 - 1 entries would overflow int32 entry numbers.
    import hepbdt.io.samples as samples

    monkeypatch.setattr(samples, "EVENT_INT32_MAX", 100)
    ds = read(Sample("reg", REG_FILE, target="fvalue"), ["var1"])
    assert ds.event.dtype == np.int64 and ds.event[-1] == len(ds) - 1


def test_no_progress_line_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    read(Sample("reg", REG_FILE, target="fvalue"), ["var1"])
    assert capsys.readouterr().err == ""
    read(Sample("reg", REG_FILE, target="fvalue"), ["var1"], progress=True)
    err = capsys.readouterr().err
    assert "10,000/10,000 events" in err and err.endswith("\n")


def test_read_ahead_keeps_order_raises_in_place_and_stops_its_thread() -> None:
    """The chunk reader's one-ahead thread: the items in order, an error raised where its
    item would have come (after the items before it), and no thread left behind."""
    import threading

    from hepbdt._util import read_ahead

    assert list(read_ahead(iter(range(1000)))) == list(range(1000))

    def failing():
        yield 1
        yield 2
        raise OSError("truncated basket")

    got = []
    with pytest.raises(OSError, match="truncated basket"):
        for item in read_ahead(failing()):
            got.append(item)
    assert got == [1, 2]
    made = []

    def endless():
        while True:
            made.append(len(made))
            yield made[-1]

    before = threading.active_count()
    for item in read_ahead(endless()):
        if item == 5:
            break
    assert threading.active_count() == before  # closing the generator joined the thread
    assert len(made) <= 8  # the thread made at most a couple past where the caller stopped


@pytest.mark.parametrize("binned", [False, True])
def test_files_kept_open_or_reopened_read_the_same(monkeypatch, binned) -> None:
    """A read keeps its first KEEP_OPEN_FILES files open from the planning to the last pass
    and reopens the others: the same Dataset either way, and every file closed after."""
    import uproot

    from hepbdt.io import samples as samples_module

    root = Path(__file__).resolve().parent.parent / "data"
    samples = [Sample("signal", str(root / "signal.root"), label=1, cut="nJet >= 2"),
               Sample("bkg", [str(root / "background_qcd.root"), str(root / "background_ttbar.root")],
                      label=0, weight="genWeight", cut="nJet >= 2")]
    features = ["HT", "MET_pt", "Jet_pt[:, 0]"]
    opened = []
    real_open = uproot.open
    monkeypatch.setattr(uproot, "open", lambda *a, **k: opened.append(real_open(*a, **k)) or opened[-1])
    kept = read(samples, features, binned=binned, progress=False)
    assert all(f.closed for f in opened) and len(opened) == 3  # each file opened once
    monkeypatch.setattr(samples_module, "KEEP_OPEN_FILES", 1)
    opened.clear()
    reopened = read(samples, features, binned=binned, progress=False)
    passes = 2 if binned else 1  # the two others: opened to plan, then again for each pass
    assert all(f.closed for f in opened) and len(opened) == 1 + 2 * (1 + passes)
    for name in ("y", "w", "event", "sample_index"):
        assert np.array_equal(getattr(kept, name), getattr(reopened, name))
    a, b = (np.asarray(d.X.codes if binned else d.X) for d in (kept, reopened))
    assert np.array_equal(a, b, equal_nan=not binned)


@pytest.mark.parametrize("kind", KINDS)
def test_nothing_but_the_dataset_stays_allocated_after_a_read(tmp_path, kind) -> None:
    """uproot's objects refer to each other, so the chunks they read stayed allocated after
    read() until Python's cyclic collector ran (as much as the data itself): read collects."""
    import tracemalloc

    rng = np.random.default_rng(0)
    write_ntuple(tmp_path / "big.root", "t",
                 {f"x{j}": rng.normal(size=300_000).astype(np.float32) for j in range(12)}, kind)
    samples = [Sample("all", str(tmp_path / "big.root"), label=1, tree="t")]
    features = [f"x{j}" for j in range(12)]
    read(samples, features, progress=False)  # imports and caches outside the measurement
    tracemalloc.start()
    data = read(samples, features, progress=False)
    live = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    held = sum(np.asarray(a).nbytes for a in (data.X, data.y, data.w, data.sample_index, data.event))
    assert live < 1.2 * held + (1 << 20), (live, held)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("binned", [False, True])
def test_labels_and_sample_indices_are_read_into_the_smallest_integers(tmp_path, monkeypatch,
                                                                        binned, kind) -> None:
    """int8 for labels up to 127 and up to 128 samples, else int16: allocated so by the
    reader (no int32 array converted afterwards), and kept so by the Dataset."""
    from hepbdt.io import samples as samples_module

    path = tmp_path / "small.root"
    write_ntuple(path, "t", {"x": np.arange(5 * 130, dtype=np.float32)}, kind)
    allocated = []
    allocate = samples_module._allocate

    def spy(*args, **kwargs):
        allocated.append(allocate(*args, **kwargs))
        return allocated[-1]

    monkeypatch.setattr(samples_module, "_allocate", spy)
    cases = [(2, [1, 0], np.int8, np.int8), (128, [127] + [0] * 127, np.int8, np.int8),
             (130, [1, 0] * 65, np.int16, np.int8), (2, [200, 0], np.int8, np.int16),
             (3, [0, 1, 40_000], np.int8, np.int32)]
    for n_samples, labels, index_dtype, label_dtype in cases:
        allocated.clear()
        # each sample its own 5 events of the file (events in two samples are refused)
        ds = read([Sample(f"s{i}", str(path), tree="t", label=labels[i],
                          cut=f"x >= {5 * i} && x < {5 * i + 5}")
                   for i in range(n_samples)], ["x"], binned=binned)
        assert ds.sample_index.dtype == index_dtype and ds.y.dtype == label_dtype
        assert allocated[-1].sample_index.dtype == index_dtype
        assert allocated[-1].y.dtype == label_dtype
        assert ds.y is allocated[-1].y and ds.sample_index is allocated[-1].sample_index
        np.testing.assert_array_equal(ds.sample_index, np.repeat(np.arange(n_samples), 5))
        np.testing.assert_array_equal(ds.y, np.repeat(labels, 5))


def test_a_read_keeps_no_copy_of_the_rntuple_columns_it_read(tmp_path) -> None:
    """uproot caches every RNTuple column it reads (a copy, up to 100 MB a file) in the open
    file, and a read keeps its files open until its last pass: eight one-cluster files held
    eight copies at the read's peak. The read opens them without that cache, so its peak is
    the dataset plus a few files' columns, not all of them."""
    import tracemalloc

    rng = np.random.default_rng(1)
    n, files = 50_000, 8
    samples = []
    for i in range(files):
        path = tmp_path / f"part{i}.root"
        write_rntuple(path, "t", {f"x{j}": rng.normal(size=n) for j in range(4)})  # one cluster
        samples.append(Sample(f"s{i}", str(path), label=i % 2, tree="t"))
    features = [f"x{j}" for j in range(4)]
    read(samples, features, progress=False)  # imports and caches outside the measurement
    tracemalloc.start()
    data = read(samples, features, progress=False)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    held = sum(np.asarray(a).nbytes for a in (data.X, data.y, data.w, data.sample_index, data.event))
    one_file = n * 4 * 8  # the float64 columns a file holds
    assert peak < held + 4 * one_file, (peak, held, one_file)


def test_an_rntuple_cluster_is_read_once_whatever_the_step(tmp_path) -> None:
    """uproot decompresses a whole cluster for any range of it, and the read stepped 8 MB
    at a time through a one-cluster file: time grew with the square of its entries (60 s
    for 4M x 20, 5 s as a TTree). Each cluster is read once and cut into the steps."""
    from hepbdt.io.expressions import Expression
    from hepbdt.io.samples import Source, TreeReader

    rng = np.random.default_rng(2)
    path = tmp_path / "one.root"
    with uproot.recreate(path) as f:  # an RNTuple of two clusters
        write_rntuple(f, "t", {"x": rng.normal(size=10_000), "y": rng.normal(size=10_000)})
        f["t"].extend({"x": rng.normal(size=3_000), "y": rng.normal(size=3_000)})
    with uproot.open(path) as f:
        whole = f["t"].arrays(library="np")
    with uproot.open(path, array_cache=None) as f:
        reader = TreeReader(f, Source(str(path), "t"), [Expression("x"), Expression("y")], "test")
        reads = []
        arrays = reader.tree.arrays
        reader.tree.arrays = lambda *a, **k: reads.append(k.get("entry_stop")) or arrays(*a, **k)
        chunks = list(reader.iterate(step_size=1_000))
    assert reads == [10_000, 13_000]  # one read a cluster
    assert [(start, stop) for _, start, stop in chunks] == (
        [(k, k + 1_000) for k in range(0, 13_000, 1_000)])
    for name in ("x", "y"):
        np.testing.assert_array_equal(np.concatenate([c[name] for c, _, _ in chunks]), whole[name])


def test_read_unit_bytes_counts_the_largest_basket_or_cluster_of_the_branches_used(tmp_path):
    """What a read decompresses at once, from the metadata: a TTree's largest basket of each
    branch used (written in extends of 30,000, 50,000 and 20,000 entries), an RNTuple's
    largest cluster of the columns behind the fields used (a subfield with its collection's
    offsets), counted against the sizes of the arrays written."""
    import awkward as ak

    from hepbdt.io.samples import read_unit_bytes

    rng = np.random.default_rng(2)
    with uproot.recreate(tmp_path / "tree.root") as f:
        f.mktree("t", {"a": np.float64, "b": np.float32, "c": np.int16})
        for size in (30_000, 50_000, 20_000):
            f["t"].extend({"a": rng.normal(size=size), "b": np.ones(size, np.float32),
                           "c": np.zeros(size, np.int16)})
    tree = uproot.open(tmp_path / "tree.root")["t"]
    assert read_unit_bytes(tree, ["a", "b", "not a branch"]) == pytest.approx(50_000 * 12, rel=0.01)
    assert read_unit_bytes(tree, ["c"]) == pytest.approx(50_000 * 2, rel=0.01)

    counts = [rng.integers(0, 4, n) for n in (1_000, 3_000)]
    with uproot.recreate(tmp_path / "rntuple.root") as f:
        for i, c in enumerate(counts):
            arrays = {"x": np.ones(c.size, np.float32),
                      "jet": ak.zip({"pt": ak.unflatten(np.ones(c.sum()), c),
                                     "eta": ak.unflatten(np.ones(c.sum()), c)})}
            if i == 0:
                write_rntuple(f, "t", arrays)
            else:
                f["t"].extend(arrays)
    tree = uproot.open(tmp_path / "rntuple.root")["t"]
    assert len(tree.cluster_summaries) == 2
    # per cluster: x 4 bytes an entry, the collection's index 8 an entry, each float64 8 an item
    x_jet_pt = max(c.size * (4 + 8) + c.sum() * 8 for c in counts)
    assert read_unit_bytes(tree, ["x", "jet.pt"]) == x_jet_pt
    assert read_unit_bytes(tree, ["jet"]) == max(c.size * 8 + c.sum() * 16 for c in counts)
    assert read_unit_bytes(tree, ["nothing"]) == 0


def test_read_unit_bytes_sees_a_basket_made_large_by_one_event(tmp_path):
    """A basket's size was its entries times the branch's mean bytes an entry: one event of
    2M jagged elements among a basket's 1,000 counted for a fraction of it. Against the
    baskets' own uncompressed sizes (their keys, which the estimate does not read)."""
    import awkward as ak

    from hepbdt.io.samples import read_unit_bytes

    rng = np.random.default_rng(3)
    with uproot.recreate(tmp_path / "giant.root") as f:
        f.mktree("t", {"j": "var * float32"})
        for k in range(4):
            counts = np.full(1_000, 3)
            if k == 1:
                counts[500] = 2_000_000
            values = rng.normal(size=counts.sum()).astype(np.float32)
            f["t"].extend({"j": ak.unflatten(values, counts)})
    branch = uproot.open(tmp_path / "giant.root")["t"]["j"]
    actual = max(branch.basket_uncompressed_bytes(i) for i in range(branch.num_baskets))
    assert actual > 8_000_000
    assert read_unit_bytes(uproot.open(tmp_path / "giant.root")["t"], ["j"]) >= 0.9 * actual


def test_read_unit_bytes_ends_on_field_records_whose_parents_loop():
    """A damaged RNTuple's field records may name each other as parents: the walk over a
    field's descendants and anonymous levels visits each field once."""
    from types import SimpleNamespace as Record

    from hepbdt.io.samples import _cluster_bytes

    records = [Record(field_name="jet", parent_field_id=0), Record(field_name="_0", parent_field_id=2),
               Record(field_name="_1", parent_field_id=1), Record(field_name="pt", parent_field_id=1)]
    rntuple = Record(field_records=records, column_records=[Record(field_id=3, nbits=32)],
                     page_link_list=[[Record(pages=[Record(num_elements=10)])]],
                     cluster_summaries=[Record(num_first_entry=0, num_entries=5)])

    def _largest_cluster_bytes(rntuple, names):
        return max(size for _, _, size in _cluster_bytes(rntuple, names))

    assert _largest_cluster_bytes(rntuple, ["jet"]) == 0  # 1 and 2 are each other's parent
    assert _largest_cluster_bytes(rntuple, ["jet.pt"]) == 40  # not found: every column
    records[1].parent_field_id = 0  # jet -> _0 -> {_1 -> _0 ..., pt}
    assert _largest_cluster_bytes(rntuple, ["jet.pt"]) == 40
    assert _largest_cluster_bytes(rntuple, ["jet"]) == 40


def test_no_entries_are_typed_from_the_branch_records_without_a_read(tmp_path) -> None:
    """``--check`` typed the expressions from uproot's read of no entries, which
    decompresses the first basket (566 MB for one holding an event of 60M jagged
    elements). The types come from the branch records now: the same as that read's. A
    TTree's only: an RNTuple's fields are typed by that read (``TreeReader.no_entries``)."""
    import awkward as ak

    from hepbdt.io.expressions import Expression
    from hepbdt.io.samples import Source, TreeReader

    path = tmp_path / "types.root"
    columns = {"f": np.ones(10, np.float32), "d": np.ones(10), "i": np.ones(10, np.int16),
               "u": np.ones(10, np.uint64), "b": np.ones(10, bool),
               "a": np.ones((10, 3), np.float32),
               "j": ak.Array([[1.0, 2.0]] * 10), "k": ak.Array([[1, 2, 3]] * 10)}
    write_ttree(path, "t", columns)
    names = list(columns)
    with uproot.open(path, array_cache=None) as f:
        reader = TreeReader(f, Source(str(path), "t"), [Expression(n) for n in names], "test")
        read = reader.read(0, 0)

        def no_read(*args, **kwargs):
            raise AssertionError("a read")

        reader.tree.arrays = no_read
        typed = reader.no_entries()
    assert set(typed) == set(read)
    for name in names:
        assert type(typed[name]) is type(read[name]), name
        if isinstance(read[name], np.ndarray):
            assert typed[name].dtype == read[name].dtype and typed[name].shape == read[name].shape
        else:
            assert str(typed[name].type) == str(read[name].type), name


def test_fill_rows_writes_every_block_of_many_columns_as_numpy_stacks_them() -> None:
    """fill_rows over three cache blocks (300 columns of 2500 rows) into rows 7: of a larger
    array: numpy's column_stack of the same columns, the rows around left untouched."""
    from hepbdt.io.samples import fill_rows

    rng = np.random.default_rng(3)
    columns = [rng.normal(size=2500).astype(np.float32) for _ in range(300)]
    X = np.full((2510, 300), -1.0, dtype=np.float32)
    fill_rows(X, 7, columns)
    np.testing.assert_array_equal(X[7:2507], np.column_stack(columns))
    assert np.all(X[:7] == -1.0) and np.all(X[2507:] == -1.0)
    one = np.zeros((2500, 1), dtype=np.float32)
    fill_rows(one, 0, columns[:1])
    np.testing.assert_array_equal(one[:, 0], columns[0])


def test_a_chunk_that_keeps_one_event_and_an_infinite_feature(tmp_path: Path) -> None:
    """Chunks of 4 entries whose cut keeps 1, 0 and 2 events give exactly numpy's selection
    (the one-event chunk included); +inf is refused unless inf_as_missing, then NaN."""
    path = tmp_path / "t.root"
    x = np.arange(10, dtype=np.float64)
    x[9] = np.inf
    write_ttree(path, "t", {"x": x})
    sample = Sample("s", f"{path}:t", label="signal", cut="x == 3 || x >= 8")
    with pytest.raises(InputError, match="infinite for 1 event"):
        read(sample, ["x"], step_size=4)
    data = read(sample, ["x"], step_size=4, inf_as_missing=True)
    keep = (x == 3) | (x >= 8)
    np.testing.assert_array_equal(data.event, np.flatnonzero(keep))
    np.testing.assert_array_equal(data.X[:, 0], np.where(np.isinf(x), np.nan, x)[keep])


def test_event_numbers_of_a_float32_branch_beyond_2_24_are_refused(tmp_path: Path) -> None:
    """16777218 is a float32 (numpy holds it exactly) but beyond 2**24 float32 skips
    integers, so it may be another event's number rounded: the read refuses it."""
    path = tmp_path / "t.root"
    write_ttree(path, "t", {"evt": np.array([5.0, 2**24 + 2], dtype=np.float32),
                            "x": np.arange(2.0)})
    assert float(np.float32(2**24 + 2)) == 2**24 + 2
    with pytest.raises(InputError, match="'evt' is not an integer event number .* for 1 "):
        read(Sample("s", f"{path}:t", label="signal"), ["x"], event="evt")
    assert read(Sample("s", f"{path}:t", label="signal", cut="x < 1"), ["x"],
                event="evt").event.tolist() == [5]
