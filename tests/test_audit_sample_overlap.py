"""Audit of samples across files: one tree's events selected by two samples (overlapping
cuts, one sample without a cut), a tree cycle named to `apply`, and the report's record of
it. Every expected count comes from uproot and NumPy directly."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import uproot

from hepbdt import BDTClassifier, apply
from hepbdt.analysis.outputs import _sample_provenance
from hepbdt.io import Dataset, Sample, read
from hepbdt.io.errors import InputError
from tests.ntuples import KINDS, write_ntuple

N = 400


@pytest.fixture(params=KINDS)
def mc(tmp_path, request):
    """One file of N events: x normal, an event number; a TTree, and an RNTuple."""
    rng = np.random.default_rng(1)
    path = tmp_path / "mc.root"
    write_ntuple(path, "Events", {"x": rng.normal(size=N).astype(np.float32), "w": np.ones(N),
                                  "event": np.arange(N, dtype=np.int64)}, request.param)
    return path


def _two(path, sig_cut, bkg_cut):
    return [Sample("sig", str(path), tree="Events", weight="w", cut=sig_cut, label="signal"),
            Sample("bkg", str(path), tree="Events", weight="w", cut=bkg_cut, label="background")]


@pytest.mark.parametrize("sig_cut, bkg_cut", [("x > 0", "0 < x"), ("x > 0", "x > 0.0"),
                                              (None, "x > 0"), ("x > -1", "x < 1")])
@pytest.mark.parametrize("mode", ["memory", "binned", "dask"])
def test_overlapping_cuts_are_refused(mc, sig_cut, bkg_cut, mode):
    """Cuts that differ as written but select common events of one tree put those events in
    both classes: refused, with the number uproot counts."""
    x = uproot.open(mc)["Events"]["x"].array(library="np").astype(np.float64)
    sig = np.ones(N, bool) if sig_cut is None else eval(sig_cut, {"x": x})
    expected = int(np.count_nonzero(sig & eval(bkg_cut, {"x": x})))
    with pytest.raises(InputError, match=f"both select entry .*{expected:,} of its {N:,} entries"):
        read(_two(mc, sig_cut, bkg_cut), ["x"], binned=mode == "binned", dask=mode == "dask")


@pytest.mark.parametrize("url", ["file://{}", "file://localhost{}"])
def test_a_file_url_is_the_same_file(mc, url):
    """One file written as a ``file:`` URL in one sample and as a path in the other is
    still one tree: its overlapping events are refused (the URL escaped the check)."""
    samples = _two(mc, "x > 0", "x > -1")
    samples[0] = Sample("sig", url.format(mc.absolute().as_posix()), tree="Events", weight="w",
                        cut="x > 0", label="signal")
    x = uproot.open(mc)["Events"]["x"].array(library="np").astype(np.float64)
    expected = int(np.count_nonzero(x > 0))
    with pytest.raises(InputError, match=f"both select entry .*{expected:,} of its {N:,} entries"):
        read(samples, ["x"])


def test_exclusive_cuts_of_one_tree_are_read(mc):
    """One file split into two classes by exclusive cuts stays valid: each event once."""
    x = uproot.open(mc)["Events"]["x"].array(library="np")
    data = read(_two(mc, "x > 0", "!(x > 0)"), ["x"], event="event")
    assert len(data) == N
    np.testing.assert_array_equal(np.sort(data.event[data.y == 1]), np.flatnonzero(x > 0))
    np.testing.assert_array_equal(np.sort(data.event[data.y == 0]), np.flatnonzero(~(x > 0)))


@pytest.fixture
def cycles(tmp_path):
    """A file holding two cycles of tree Events: 3 entries (events 0-2), then 10 (100-109)."""
    path = tmp_path / "cyc.root"
    with uproot.recreate(path) as f:
        f.mktree("Events", {"x": "f4", "event": "i8"}).extend(
            {"x": np.full(3, -5, "f4"), "event": np.arange(3)})
    with uproot.update(path) as f:
        f.mktree("Events", {"x": "f4", "event": "i8"}).extend(
            {"x": np.full(10, 5, "f4"), "event": np.arange(10) + 100})
    return path


def test_apply_scores_the_cycle_named(cycles, tmp_path):
    """`apply` of 'file:Events;1' scores that cycle's entries, not the newest cycle's."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 1))
    data = Dataset(X, (X[:, 0] > 0).astype(int), feature_names=["x"])
    model = BDTClassifier(n_trees=3, max_depth=2).fit(data.X, data.y)
    out = tmp_path / "friend.root"
    apply(model, f"{cycles}:Events;1", out, event_branch="event")
    with uproot.open(cycles) as f, uproot.open(out) as g:
        expected = f["Events;1"]["event"].array(library="np")
        (friend,) = g.keys(cycle=False)
        np.testing.assert_array_equal(g[friend]["event"].array(library="np"), expected)


def test_report_names_the_cycle_read(cycles):
    """The report's input table gives the tree with the cycle the sample named, beside that
    cycle's entry count (the newest cycle has other entries)."""
    sample = SimpleNamespace(name="s", files=[str(cycles)], tree="Events;1", target=None,
                             class_name="signal", cut=None, weight=None, scale=1.0)
    (record,) = _sample_provenance(None, sample).files
    with uproot.open(cycles) as f:
        assert (record.tree, record.entries) == ("Events;1", f["Events;1"].num_entries)


@pytest.fixture
def snapshots(tmp_path):
    """Two cycles of tree Events as ROOT's AutoSave leaves them: Events;1 a snapshot of the
    first 10 entries, Events;2 all 30 (x = the entry number)."""
    path = tmp_path / "snap.root"
    with uproot.recreate(path) as f:
        f.mktree("Events", {"x": "f8"}).extend({"x": np.arange(10.0)})
    with uproot.update(path) as f:
        f.mktree("Events", {"x": "f8"}).extend({"x": np.arange(30.0)})
    return path


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("old_cut, expected", [("x < 5 || x >= 12", 0), ("x >= 8", 2)])
def test_cycles_of_one_tree_overlap_only_in_their_common_entries(snapshots, reverse, old_cut,
                                                                  expected):
    """A sample of the newer cycle and one of the older share only the older's entries: the
    older sample's cut on entries it never reads (12-29) is no overlap (it was refused when
    the newer sample came first); one on entries both read (8, 9) is."""
    with uproot.open(snapshots) as f:
        assert f["Events;1"].num_entries == 10 and f["Events;2"].num_entries == 30
    samples = [Sample("sig", f"{snapshots}:Events;2", cut="x >= 5", label="signal"),
               Sample("bkg", f"{snapshots}:Events;1", cut=old_cut, label="background")]
    if reverse:
        samples.reverse()
    if expected:
        with pytest.raises(InputError, match=f"both select entry 8 .*\\({expected:,} of its 10 "):
            read(samples, ["x"])
    else:
        data = read(samples, ["x"])
        assert np.count_nonzero(data.y == 1) == 25 and np.count_nonzero(data.y == 0) == 5
