"""Jagged features on ntuples the test writes with uproot (TTree and RNTuple)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io import ExpressionError, Sample, read
from tests.ntuples import write_rntuple, write_ttree


def _events(n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    n_jet = rng.poisson(1.3, n).astype(np.int32)
    n_jet[:3] = [0, 1, 4]  # make sure the edge cases are there
    offsets = np.r_[0, np.cumsum(n_jet)]
    jet_pt = rng.exponential(40.0, offsets[-1]).astype(np.float32) + 20
    jet_btag = rng.uniform(0, 1, offsets[-1]).astype(np.float32)
    return {
        "Jet_pt": ak.unflatten(jet_pt, n_jet),
        "Jet_btag": ak.unflatten(jet_btag, n_jet),
        "MET_pt": rng.exponential(50.0, n).astype(np.float32),
        "event": (np.arange(n, dtype=np.uint64) * 7 + 3),
        "genWeight": rng.choice([-1.0, 1.0], n, p=[0.2, 0.8]),
    }


def _write_ttree(path: Path, n: int = 3000, seed: int = 1) -> dict[str, object]:
    data = _events(n, seed)
    # two baskets, so small step sizes cross a basket boundary
    write_ttree(path, "Events", data, baskets=2)
    return data



def _first(lists: ak.Array, i: int) -> np.ndarray:
    return np.array([row[i] if len(row) > i else np.nan for row in lists.tolist()], np.float32)


@pytest.fixture()
def jagged_file(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    path = tmp_path / "jagged.root"
    return path, _write_ttree(path)


def test_jagged_reductions_match_python_loops(jagged_file: tuple[Path, dict]) -> None:
    path, data = jagged_file
    features = ["Jet_pt[:, 0]", "Jet_pt[1]", "Jet_pt[:, -1]", "num(Jet_pt)", "max(Jet_btag)",
                "sum(Jet_pt[Jet_pt > 50])", "mean(Jet_pt)", "MET_pt / (sum(Jet_pt) + 1)",
                "max(Jet_pt[:, 1:3])"]
    ds = read(Sample("tt", path, label="signal", weight="genWeight * 0.1"), features,
              event="event", step_size=700)
    rows = data["Jet_pt"].tolist()
    btag = data["Jet_btag"].tolist()
    met = data["MET_pt"]
    expected = np.column_stack([
        _first(data["Jet_pt"], 0),
        _first(data["Jet_pt"], 1),
        [r[-1] if r else np.nan for r in rows],
        [len(r) for r in rows],
        [max(r) if r else np.nan for r in btag],
        [sum(x for x in r if x > 50) for r in rows],
        [np.mean(r) if r else np.nan for r in rows],
        met / (np.array([sum(r) for r in rows]) + 1),
        [max(r[1:3]) if len(r) > 1 else np.nan for r in rows],
    ]).astype(np.float32)
    np.testing.assert_allclose(ds.X, expected, rtol=1e-5, equal_nan=True)
    assert np.isnan(ds.X[0, 0]) and ds.X[0, 3] == 0  # the event without jets
    np.testing.assert_array_equal(ds.event, data["event"].astype(np.int64))
    np.testing.assert_allclose(ds.w, data["genWeight"] * 0.1)
    assert (ds.w < 0).any()  # negative weights are kept


def test_jagged_cut_and_multiple_files(tmp_path: Path) -> None:
    a = _write_ttree(tmp_path / "a.root", 1000, seed=2)
    b = _write_ttree(tmp_path / "b.root", 500, seed=3)
    ds = read(Sample("tt", [tmp_path / "a.root", tmp_path / "b.root"], label=1,
                     cut="(num(Jet_pt) >= 2) & (Jet_pt[:, 0] > 60)"),
              ["Jet_pt[:, 1]", "MET_pt"])
    lead = np.r_[_first(a["Jet_pt"], 0), _first(b["Jet_pt"], 0)]
    second = np.r_[_first(a["Jet_pt"], 1), _first(b["Jet_pt"], 1)]
    n_jet = np.r_[ak.num(a["Jet_pt"]).to_numpy(), ak.num(b["Jet_pt"]).to_numpy()]
    mask = (n_jet >= 2) & (lead > 60)
    np.testing.assert_array_equal(ds.X[:, 0], second[mask])
    np.testing.assert_array_equal(ds.X[:, 1], np.r_[a["MET_pt"], b["MET_pt"]][mask])
    np.testing.assert_array_equal(ds.event, np.flatnonzero(mask))


def test_a_jagged_feature_must_be_reduced(jagged_file: tuple[Path, dict]) -> None:
    path, _ = jagged_file
    with pytest.raises(ExpressionError) as info:
        read(Sample("tt", path, label=1), ["Jet_pt * 2"])
    message = str(info.value)
    assert "'Jet_pt * 2'" in message and "list per event" in message
    assert "jagged.root" in message and "'Events'" in message and "x[:, 0]" in message
    with pytest.raises(ExpressionError, match=r"cut expression 'Jet_pt > 30'.*any\(\.\.\.\)"):
        read(Sample("tt", path, label=1, cut="Jet_pt > 30"), ["MET_pt"])
    ds = read(Sample("tt", path, label=1, cut="any(Jet_pt > 100)"), ["max(Jet_pt)"])
    assert len(ds) > 0 and (ds.X[:, 0] > 100).all()


def test_peak_memory_is_the_final_arrays_plus_a_chunk(tmp_path: Path) -> None:
    n, m = 200_000, 10
    rng = np.random.default_rng(0)
    path = tmp_path / "flat.root"
    names = [f"x{j}" for j in range(m)]
    with uproot.recreate(path) as file:
        file.mktree("T", {name: np.float32 for name in names})
        for _ in range(n // 10_000):  # baskets of 10k entries (40 kB), as ROOT writes
            file["T"].extend({name: rng.normal(size=10_000).astype(np.float32)
                              for name in names})
    def traced_peak(function):  # numpy and uproot allocations, as tracemalloc sees them
        tracemalloc.start()
        try:
            result = function()
            return result, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    def uproot_alone():
        with uproot.open(path) as file:
            for _ in file["T"].iterate(names, step_size="1 MB", library="np"):
                pass

    _, uproot_peak = traced_peak(uproot_alone)
    ds, peak = traced_peak(
        lambda: read(Sample("s", path, label=1), names, step_size="1 MB", threads=1)
    )
    final = sum(a.nbytes for a in (ds.X, ds.y, ds.w, ds.event, ds.sample_index))
    # the final arrays, plus what uproot's own chunked iteration needs, plus a little
    assert final <= peak < final + 1.1 * uproot_peak + 2**20
    assert uproot_peak < 0.5 * final


def test_rntuple_written_by_uproot(tmp_path: Path) -> None:
    data = _events(400, seed=5)
    path = tmp_path / "rntuple.root"
    write_rntuple(path, "Events", {k: data[k] for k in ("Jet_pt", "MET_pt", "genWeight")})
    ds = read(Sample("tt", path, label=0, weight="genWeight"), ["Jet_pt[:, 0]", "MET_pt"])
    np.testing.assert_array_equal(ds.X[:, 0], _first(data["Jet_pt"], 0))
    np.testing.assert_array_equal(ds.X[:, 1], data["MET_pt"])
    np.testing.assert_array_equal(ds.w, data["genWeight"])


def test_a_subfield_of_an_rntuple_record_is_read(tmp_path):
    # uproot writes a dict of a record as an RNTuple whose 'Jet.pt' comes back inside the
    # record 'Jet'; it was refused as "a type uproot cannot read" though uproot reads it.
    pt = ak.Array([[10.0, 5.0], [], [7.0], [3.0, 2.0, 1.0]])
    path = tmp_path / "records.root"
    write_rntuple(path, "Events", {"Jet": ak.zip({"pt": pt}), "x": np.arange(4.0)})
    expected = uproot.open(path)["Events"]["Jet.pt"].array()
    data = read(Sample("s", str(path), label=1), ["Jet.pt[:, 0]", "num(Jet.pt)", "x"])
    np.testing.assert_array_equal(data.X[:, 0], [10.0, np.nan, 7.0, 3.0])
    np.testing.assert_array_equal(data.X[:, 1], ak.num(expected).to_numpy())
    np.testing.assert_array_equal(data.X[:, 2], np.arange(4.0))
