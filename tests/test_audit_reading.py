"""Audit of hepbdt.io.samples: chunk-independent reads against uproot + awkward + numpy by
hand, and the defects the audit found (step sizes, literal paths with glob characters,
tree cycles, tree names, NumPy weights, weight x scale overflow)."""

from __future__ import annotations

import os
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io import Sample, read
from hepbdt.io.errors import BadValueError, InputError, MissingFileError, MissingTreeError
from tests.ntuples import KINDS, write_ntuple, write_ttree


def _events(n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 4, n)
    counts[: n // 3] = 0  # the first chunks have no jet at all
    return {
        "x": rng.normal(size=n).astype(np.float32),
        "i8": rng.integers(-128, 127, n).astype(np.int8),
        "flag": rng.random(n) < 0.3,
        "ev": np.int64(2**60) + np.arange(n, dtype=np.int64) * 3 + seed,
        "w": rng.uniform(0.5, 1.5, n).astype(np.float32),
        "Jet_pt": ak.unflatten(rng.normal(30, 10, counts.sum()).astype(np.float32), counts),
    }


def _write(path: Path, trees: dict[str, dict[str, object]], baskets: int = 3) -> None:
    """TTrees of several baskets each (a tree of 0 entries too)."""
    with uproot.recreate(path) as file:
        for name, data in trees.items():
            types = {k: ("var * float32" if k == "Jet_pt" else np.asarray(v).dtype)
                     for k, v in data.items()}
            tree = file.mktree(name, types)
            n = len(data["x"])
            edges = np.linspace(0, n, baskets + 1).astype(int)
            for start, stop in zip(edges[:-1], edges[1:], strict=True):
                if stop > start or n == 0:
                    tree.extend({k: v[start:stop] for k, v in data.items()})
                    if n == 0:
                        break


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("audit_reading")
    paths = []
    for k, n in enumerate([300, 0, 170]):
        path = folder / f"f{k}.root"
        _write(path, {"t": _events(n, k), "t2": _events(n + 11, k + 10)})
        paths.append(str(path))
    return paths


FEATURES = ["x", "i8", "flag", "Jet_pt[:, 0]", "num(Jet_pt)", "max(Jet_pt)", "Jet_pt[:, 1]"]


def _reference(paths: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, weights and event numbers of trees t then t2 of each file, by hand."""
    parts = [uproot.open(p)[t].arrays(library="ak") for p in paths for t in ("t", "t2")]
    a = ak.concatenate(parts)
    jet = a.Jet_pt
    padded = ak.pad_none(jet, 2)

    def filled(values: ak.Array) -> np.ndarray:
        return ak.to_numpy(ak.fill_none(values, np.nan)).astype(np.float32)

    X = np.column_stack([
        ak.to_numpy(a.x), ak.to_numpy(a.i8).astype(np.float32),
        ak.to_numpy(a.flag).astype(np.float32), filled(padded[:, 0]),
        ak.to_numpy(ak.num(jet)).astype(np.float32), filled(ak.max(jet, axis=1)),
        filled(padded[:, 1]),
    ])
    return X, ak.to_numpy(a.w).astype(np.float64), ak.to_numpy(a.ev), X[:, 3]


@pytest.mark.parametrize("step_size", [3, 7, "20 kB", None])
def test_rows_do_not_depend_on_the_chunks(chain, step_size) -> None:
    X, w, ev, first_jet = _reference(chain)
    # Selects nothing in the chunks of events without jets (a third of each tree).
    mask = np.nan_to_num(first_jet, nan=-1.0) > 35
    kw = {} if step_size is None else {"step_size": step_size}
    sample = Sample("s", chain, tree=["t", "t2"], weight="w", scale=2.5,
                    cut="Jet_pt[:, 0] > 35", label=1, event="ev")
    ds = read(sample, FEATURES, **kw)
    np.testing.assert_array_equal(ds.X, X[mask])
    np.testing.assert_array_equal(ds.w, w[mask] * 2.5)
    assert ds.event.dtype == np.int64
    np.testing.assert_array_equal(ds.event, ev[mask])
    # Entry numbers count along the chain, file by file, tree t before t2.
    plain = read(Sample("s", chain, tree=["t", "t2"], label=1), ["x"], **kw)
    np.testing.assert_array_equal(plain.event, np.arange(len(X)))
    np.testing.assert_array_equal(plain.X[:, 0], X[:, 0])


@pytest.mark.parametrize("step_size", [7, "20 kB"])
def test_binned_read_equals_the_float_read_binned_with_its_edges(chain, step_size) -> None:
    from hepbdt.engine.binning import apply_bins

    def sample() -> Sample:
        return Sample("s", chain, tree=["t", "t2"], weight="w - 0.9", label=1,
                      cut="num(Jet_pt) >= 1")

    floats = read(sample(), FEATURES)
    binned = read(sample(), FEATURES, binned=True, step_size=step_size)
    np.testing.assert_array_equal(binned.X.codes, apply_bins(floats.X, list(binned.X.edges)).T)
    np.testing.assert_array_equal(binned.w, floats.w)
    np.testing.assert_array_equal(binned.event, floats.event)
    small = read(sample(), FEATURES, binned=True, step_size=1000, edge_sample=40)
    again = read(sample(), FEATURES, binned=True, step_size=step_size, edge_sample=40)
    for a, b in zip(small.X.edges, again.X.edges, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("step_size", [0, -5, True, 1.5, "abc", "100", "0 MB"])
def test_a_step_size_that_is_not_positive_is_refused(chain, step_size) -> None:
    # -5 read nothing and called the files empty; 0 and "abc" blamed a corrupt file.
    for options in ({}, {"binned": True}):
        with pytest.raises(InputError, match="step_size must be a positive number"):
            read(Sample("s", chain[0], tree="t", label=1), ["x"], step_size=step_size,
                 **options)


def test_numpy_step_size_is_a_number_of_entries(chain) -> None:
    a = read(Sample("s", chain[0], tree="t", label=1), ["x"], step_size=np.int64(7))
    b = read(Sample("s", chain[0], tree="t", label=1), ["x"])
    np.testing.assert_array_equal(a.X, b.X)


def test_an_existing_file_with_glob_characters_in_its_name_is_read_as_itself(
    chain, tmp_path
) -> None:
    literal = tmp_path / "run[1].root"
    other = tmp_path / "run1.root"  # what the name means as a glob
    literal.write_bytes(Path(chain[0]).read_bytes())
    other.write_bytes(Path(chain[2]).read_bytes())
    ds = read(Sample("s", str(literal), tree="t", label=1), ["x"])
    assert len(ds.X) == 300  # not run1.root's 170 events
    ds = read(Sample("s", f"{literal}:t", label=1), ["x"])
    assert len(ds.X) == 300
    other.unlink()
    assert len(read(Sample("s", str(literal), tree="t", label=1), ["x"]).X) == 300
    with pytest.raises(MissingFileError, match="matches no file"):
        read(Sample("s", str(tmp_path / "run[2].root"), tree="t", label=1), ["x"])


def test_a_glob_is_read_in_sorted_order_and_a_link_is_a_duplicate(chain, tmp_path) -> None:
    for name, source in [("b10.root", chain[2]), ("a.root", chain[0]), ("b2.root", chain[2])]:
        (tmp_path / name).write_bytes(Path(source).read_bytes())
    ds = read(Sample("s", str(tmp_path / "*.root"), tree="t", label=1), ["x"])
    np.testing.assert_array_equal(ds.event, np.arange(300 + 170 + 170))
    first = uproot.open(chain[0])["t"]["x"].array(library="np")
    np.testing.assert_array_equal(ds.X[:300, 0], first)
    os.symlink(chain[0], tmp_path / "link.root")
    with pytest.raises(InputError, match="given twice"):
        read(Sample("s", [chain[0], str(tmp_path / "link.root")], tree="t", label=1), ["x"])


def test_a_tree_cycle_is_that_cycle(tmp_path) -> None:
    path = tmp_path / "cycles.root"
    with uproot.recreate(path) as file:
        file.mktree("t", {"x": np.float32}).extend({"x": np.arange(3, dtype=np.float32)})
    with uproot.update(path) as file:  # a second cycle, t;2, of five events
        file.mktree("t", {"x": np.float32}).extend({"x": np.arange(10, 15, dtype=np.float32)})
    old = read(Sample("s", f"{path}:t;1", label=1), ["x"])
    np.testing.assert_array_equal(old.X[:, 0], [0, 1, 2])  # was t;2's five events
    new = read(Sample("s", str(path), tree="t", label=1), ["x"])
    np.testing.assert_array_equal(new.X[:, 0], np.arange(10, 15))
    with pytest.raises(MissingTreeError, match="no cycle 't;3'.*'t;1', 't;2'"):
        read(Sample("s", f"{path}:t;3", label=1), ["x"])


def test_tree_names_are_checked(chain) -> None:
    ds = read(Sample("s", {chain[2]: ["t", "t2"]}, label=1), ["x"])
    assert len(ds.X) == 170 + 181
    for files, tree in [({chain[2]: 5}, None), ({chain[2]: []}, None), (chain[2], []),
                        (chain[2], ""), ([chain[2], 3], "t")]:
        with pytest.raises(InputError, match="tree must be|files must be"):
            read(Sample("s", files, tree=tree, label=1), ["x"])


def test_weights_numpy_numbers_and_overflow_with_scale(chain) -> None:
    ds = read(Sample("s", chain[2], tree="t", label=1, weight=np.float32(2.5), scale=2), ["x"])
    np.testing.assert_array_equal(ds.w, 5.0)
    # Finite weights times a finite scale beyond float64: an infinite weight, refused.
    with pytest.raises(BadValueError, match="times scale=1e\\+200 is not finite"):
        read(Sample("s", chain[2], tree="t", label=1, weight="w * 1e200", scale=1e200),
             ["x"])


def test_a_path_the_locale_cannot_encode_is_one_error(tmp_path, monkeypatch):
    """Under a Latin-1 locale a file named 'signal ✓.root' ended in a UnicodeEncodeError
    traceback (os.stat raises ValueError, not OSError); now one InputError naming the fix."""
    import hepbdt.io.samples as samples

    def latin1(path):
        return os.fspath(path).encode("latin-1")

    monkeypatch.setattr(samples.os, "fsencode", latin1)
    with pytest.raises(InputError, match=r"signal .\.root' cannot be written in this "
                                         r"locale's file-name encoding .* UTF-8 locale"):
        read(Sample("s", str(tmp_path / "signal \u2713.root"), label="signal"), ["x"])


@pytest.mark.parametrize("kind", KINDS)
def test_a_file_replaced_by_a_rename_while_open_is_read_as_opened(tmp_path, kind):
    """uproot's default local source opened the path again for each read: a file renamed
    over the input (rsync, a producer's temporary) while it was read gave the new file's
    baskets after the old file's metadata, entries of neither file. The open file is read."""
    from hepbdt.io.samples import open_root_file

    n = 50_000
    for name, sign in (("in.root", 1.0), ("new.root", -1.0)):
        with uproot.recreate(tmp_path / name, compression=None) as f:
            write_ntuple(f, "T", {"x": sign * np.arange(n, dtype=np.float64)}, kind)
    with open_root_file(str(tmp_path / "in.root"), "test") as file:
        tree = file["T"]
        os.replace(tmp_path / "new.root", tmp_path / "in.root")
        np.testing.assert_array_equal(tree["x"].array(library="np"), np.arange(n))


@pytest.mark.parametrize("kind", KINDS)
def test_float32_event_numbers_beyond_2_24_are_refused(tmp_path, kind):
    """A float32 event branch is read in double, so the float64 bound (2**53) let 2**24 + 1,
    stored as 2**24, through: two events shared one number and k-fold apply scored half of
    them with the fold model that had trained on them. Refused from 2**24 on (2**24 itself
    may be 2**24 + 1 rounded), as KFoldModel refuses it."""
    n = 100
    for name, start in (("low.root", 2**24 - n), ("high.root", 2**24 - 10)):
        write_ntuple(tmp_path / name, "T", {"x": np.arange(n, dtype=np.float32),
                                            "event": (start + np.arange(n)).astype(np.float32)},
                     kind)
    data = read(Sample("s", str(tmp_path / "low.root"), label="signal"), ["x"], event="event")
    np.testing.assert_array_equal(data.event, 2**24 - n + np.arange(n))
    with pytest.raises(BadValueError, match=r"event expression 'event' is not an integer event "
                                            r"number .* for 90 event\(s\)"):
        read(Sample("s", str(tmp_path / "high.root"), label="signal"), ["x"], event="event")


def _replace_after_planning(monkeypatch, module, name, path, data, kind="ttree"):
    """Rewrite ``path`` with ``data`` (a tree T of ``kind``) when ``module.name`` is first
    called (after the plan of a read or of apply), then call it."""
    original = getattr(module, name)
    done = []

    def replace_then_call(*args, **kwargs):
        if not done:
            done.append(True)
            write_ntuple(str(path) + ".new", "T", data, kind)
            os.replace(str(path) + ".new", path)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, replace_then_call)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["float", "binned", "dask"])
def test_a_file_replaced_between_the_plan_and_the_read_is_refused(tmp_path, monkeypatch, how,
                                                                  kind):
    """Files beyond KEEP_OPEN_FILES are opened again by path for each pass: one replaced
    meanwhile was read as the new file, whose entries were not those counted (80 more
    entries than planned, or in the binned read codes of other values than its edges')."""
    import hepbdt.io.samples as samples

    if how == "dask":
        pytest.importorskip("dask.array")
    monkeypatch.setattr(samples, "KEEP_OPEN_FILES", 0)
    paths = [tmp_path / f"f{k}.root" for k in range(2)]
    for k, path in enumerate(paths):
        write_ntuple(path, "T", {"x": np.arange(100, dtype=np.float32) + 1000 * k}, kind)
    _replace_after_planning(monkeypatch, samples, "_index_dtypes", paths[1],
                            {"x": -np.arange(180, dtype=np.float32)}, kind)
    sample = Sample("s", [str(p) for p in paths], label="signal")
    with pytest.raises(InputError, match=r"sample 's': the file '.*f1\.root' changed while it "
                                         r"was read \(replaced or rewritten"):
        data = read(sample, ["x"], binned=how == "binned", dask=how == "dask")
        if how == "dask":
            data.compute(scheduler="sync")


@pytest.mark.parametrize("kind", KINDS)
def test_apply_refuses_an_input_replaced_after_its_plan(tmp_path, monkeypatch, kind):
    """apply counted each input's entries when it planned the outputs and scored the file
    it opened again: a replaced input gave a friend tree of 180 entries for a tree of 100
    counted, and shifted the entry numbers of the inputs after it."""
    import pandas as pd

    import hepbdt
    import hepbdt.scoring as scoring

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"f0": rng.normal(size=200).astype(np.float32)})
    model = hepbdt.BDTClassifier(n_trees=2).fit(X, (X["f0"] > 0).astype(int))
    model.save(tmp_path / "m.json")
    path = tmp_path / "in.root"
    write_ntuple(path, "T", {"f0": np.arange(100, dtype=np.float32)}, kind)
    _replace_after_planning(monkeypatch, scoring, "check_writable", path,
                            {"f0": np.arange(180, dtype=np.float32)}, kind)
    with pytest.raises(InputError, match=r"apply: the file '.*in\.root' changed while it was "
                                         "read"):
        hepbdt.apply(tmp_path / "m.json", str(path), tmp_path / "friend.root")
    assert not (tmp_path / "friend.root").exists()


def test_a_file_checked_on_another_host_is_compared_by_size_and_time(tmp_path, monkeypatch):
    """A Dask worker on another node may see other device and inode numbers of one file on
    a network file system: there only its size and modification time must match."""
    import hepbdt.io.samples as samples

    path = tmp_path / "f.root"
    write_ttree(path, "T", {"x": np.arange(10, dtype=np.float32)})  # any ROOT file
    host, device, inode, size, mtime = samples.file_version(str(path))
    monkeypatch.setattr(samples.socket, "gethostname", lambda: host + "-worker")
    samples.check_file_version(str(path), (host, device + 1, inode + 1, size, mtime), "test")
    with pytest.raises(InputError, match="changed while it was read"):
        samples.check_file_version(str(path), (host, device, inode, size, mtime - 1), "test")
    monkeypatch.setattr(samples.socket, "gethostname", lambda: host)
    with pytest.raises(InputError, match="changed while it was read"):  # same host: the inode
        samples.check_file_version(str(path), (host, device, inode + 1, size, mtime), "test")
