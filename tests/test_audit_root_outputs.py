"""Audit of the trees hepbdt writes as ROOT itself reads them: branch names RDataFrame takes
for its own columns, read with RDataFrame against TTree::GetEntry."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.io import Dataset, InputError, write_scores
from hepbdt.io.writers import branch_name, is_branch_name
from hepbdt.scoring import ApplyOptionError, apply
from tests.test_io_writers import LinearModel, _root_python

# The columns RDataFrame defines itself (ROOT 6.40): a branch of one of these names is shadowed.
RDATAFRAME_COLUMNS = ("rdfentry_", "rdfslot_", "tdfentry_", "tdfslot_")

# Every branch of a tree, read by TTree::GetEntry (the leaf's value) and by RDataFrame.
ROOT_BOTH_WAYS = """
import json, sys
import ROOT
path, tree_name = sys.argv[1:3]
tfile = ROOT.TFile.Open(path)
tree = tfile.Get(tree_name)
names = [b.GetName() for b in tree.GetListOfBranches()]
entry = {n: [] for n in names}
for i in range(tree.GetEntries()):
    tree.GetEntry(i)
    for n in names:
        entry[n].append(tree.GetLeaf(n).GetValue())
frame = ROOT.RDataFrame(tree_name, path).AsNumpy(names)
print(json.dumps({"entry": entry, "rdf": {n: [float(v) for v in frame[n]] for n in names}}))
"""


def _read_both_ways(path: Path, tree: str) -> dict[str, dict[str, list[float]]]:
    done = subprocess.run([_root_python(), "-c", ROOT_BOTH_WAYS, str(path), tree],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_rdataframe_reads_every_written_branch_as_the_tree_holds_it(tmp_path: Path) -> None:
    x = np.array([[0.25, 7.0], [1.5, 8.0], [-2.0, 9.0]], np.float32)
    data = Dataset(x, y=[1, 0, 1], event=[10, 20, 30], feature_names=["rdfentry_", "tdfslot_"])
    write_scores(tmp_path / "s.root", data, np.array([0.5, -0.5, 0.125]))
    seen = _read_both_ways(tmp_path / "s.root", "TestTree")
    assert set(seen["entry"]).isdisjoint(RDATAFRAME_COLUMNS)
    for name, values in seen["entry"].items():
        assert seen["rdf"][name] == values, name  # RDataFrame read 0, 1, 2 for rdfentry_
    np.testing.assert_array_equal(seen["entry"]["rdfentry"], x[:, 0])
    np.testing.assert_array_equal(seen["entry"]["tdfslot"], x[:, 1])


@pytest.mark.parametrize("name", RDATAFRAME_COLUMNS)
def test_rdataframe_column_names_are_refused_as_score_branches(tmp_path: Path, name: str
                                                                ) -> None:
    assert not is_branch_name(name) and branch_name(name) == name[:-1]
    data = Dataset(np.zeros((2, 1), np.float32), y=[0, 1], feature_names=["x"])
    with pytest.raises(InputError, match=f"{name}.*RDataFrame's own column names"):
        write_scores(tmp_path / "s.root", data, np.zeros(2), score_branch=name)
    source = tmp_path / "in.root"
    with uproot.recreate(source) as file:
        file.mktree("Events", {"x": np.float32}).extend({"x": np.zeros(2, np.float32)})
    with pytest.raises(ApplyOptionError, match="RDataFrame's own column names"):
        apply(LinearModel(["x"], [1.0]), f"{source}:Events", tmp_path / "f.root", branch=name)


# The chain a user builds of a glob, with the friend apply wrote for the same glob: its files,
# its entries, and how many entries read another event's identifier through the friend
# (friends of several files: a glob too).
ROOT_CHAIN_OF_GLOB = """
import sys
import ROOT
inputs, friend_path = sys.argv[1:3]
chain = ROOT.TChain("Events")
chain.Add(inputs)
friend = ROOT.TChain("Events")
friend.Add(friend_path)
chain.AddFriend(friend, "s")
print(",".join(f.GetTitle().rsplit("/", 1)[-1] for f in chain.GetListOfFiles()))
print(chain.GetEntries(), friend.GetEntries(), chain.GetEntries("event != s.event"))
"""


@pytest.mark.parametrize(("pattern", "misordered"), [("{stem}_f.root", True),
                                                     ("f_{stem}.root", False)])
def test_friend_files_that_a_glob_would_misorder_are_noted(tmp_path: Path, pattern: str,
                                                           misordered: bool) -> None:
    import warnings

    from hepbdt.scoring import FriendOrderWarning

    for stem, n in (("app_1", 3), ("app_10", 2)):
        with uproot.recreate(tmp_path / f"{stem}.root") as file:
            file.mktree("Events", {"x": np.float32, "event": np.int64}).extend(
                {"x": np.arange(n, dtype=np.float32), "event": 100 * len(stem) + np.arange(n)})
    (tmp_path / "out").mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        apply(LinearModel(["x"], [1.0]), str(tmp_path / "app_*.root"),
              tmp_path / "out" / pattern, event_branch="event")
    noted = [w for w in caught if issubclass(w.category, FriendOrderWarning)]
    assert len(noted) == int(misordered)
    if misordered:
        assert "app_10_f.root' (of" in str(noted[0].message)
    done = subprocess.run([_root_python(), "-c", ROOT_CHAIN_OF_GLOB, str(tmp_path / "app_*.root"),
                           str(tmp_path / "out" / "*.root")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    entries, _, unpaired = map(int, done.stdout.split()[-3:])
    assert entries == 5 and (unpaired > 0) == misordered  # ROOT's own pairing of the globs




def test_a_glob_reads_the_hidden_files_that_tchain_add_reads(tmp_path: Path) -> None:
    # audit EV, 2026-12-05: Python's glob skipped '.h.root', TChain::Add's wildcard reads it,
    # so the friend of 'data/*.root' gave 1,196 of 1,350 entries of ROOT's chain another
    # event's score (ROOT said nothing).
    data = tmp_path / "data"
    (data / ".d").mkdir(parents=True)
    for name, first, n in ((".h.root", 0, 4), ("a.root", 100, 3), ("b.root", 200, 2),
                           (".d/c.root", 300, 2)):
        with uproot.recreate(data / name) as file:
            file.mktree("Events", {"x": np.float32, "event": np.int64}).extend(
                {"x": np.arange(n, dtype=np.float32) + first, "event": first + np.arange(n)})
    for pattern, files in (("*.root", ".h.root,a.root,b.root"), ("*/c.root", "c.root")):
        friend = tmp_path / f"friend_{len(files)}.root"
        apply(LinearModel(["x"], [1.0]), str(data / pattern), friend, event_branch="event")
        done = subprocess.run([_root_python(), "-c", ROOT_CHAIN_OF_GLOB, str(data / pattern),
                               str(friend)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        listed, counts = done.stdout.strip().splitlines()[-2:]
        assert listed == files  # ROOT's own reading of the glob
        entries, friend_entries, unpaired = map(int, counts.split())
        assert (friend_entries, unpaired) == (entries, 0)
        scores = uproot.open(friend)["Events"]["bdt_score"].array(library="np")
        assert scores.tolist() == [float(e) for e in
                                   uproot.open(friend)["Events"]["event"].array(library="np")]


def test_the_glob_of_python_3_10_matches_hidden_files_as_3_11_does(tmp_path: Path,
                                                                     monkeypatch) -> None:
    import glob
    import sys

    from hepbdt.io.samples import root_glob

    for name in (".h.root", "a.root", ".d/c.root", "e/c.root", "e/.f.root"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    patterns = ["*.root", "*/c.root", "*/*.root", "e/?f.root", "[.a]*.root", "e/.f.root"]
    expected = [sorted(glob.glob(str(tmp_path / p), include_hidden=True)) for p in patterns]
    monkeypatch.setattr(sys, "version_info", (3, 10, 0))
    assert [sorted(root_glob(str(tmp_path / p))) for p in patterns] == expected


ROOT_FILES_OF_GLOB = """
import sys
import ROOT
for pattern in sys.argv[1:]:
    chain = ROOT.TChain("Events")
    chain.Add(pattern)
    print(",".join(f.GetTitle().rsplit("/", 1)[-1] for f in chain.GetListOfFiles()))
"""


def test_a_negated_bracket_that_root_reads_otherwise_is_refused(tmp_path: Path) -> None:
    # audit FE, 2026-12-05: TChain::Add reads '[!1]' as the set of '!' and '1' (b1.root) and
    # '[^1]' as anything but '1' (b2.root); Python's glob the opposite, so apply's friend of
    # 'b[!1].root' held b2.root's scores for ROOT's chain of b1.root's entries.
    import glob

    for name, first in (("b1.root", 0), ("b2.root", 100)):
        with uproot.recreate(tmp_path / name) as file:
            file.mktree("Events", {"x": np.float32, "event": np.int64}).extend(
                {"x": np.zeros(3, np.float32), "event": first + np.arange(3)})
    patterns = [str(tmp_path / p) for p in ("b[!1].root", "b[^1].root", "b[]1].root")]
    done = subprocess.run([_root_python(), "-c", ROOT_FILES_OF_GLOB, *patterns],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    roots = done.stdout.strip().splitlines()[-3:]
    pythons = [",".join(Path(p).name for p in sorted(glob.glob(p))) for p in patterns]
    assert roots != pythons  # the two read the patterns differently
    for pattern in patterns:
        with pytest.raises(InputError, match="TChain::Add reads differently"):
            apply(LinearModel(["x"], [1.0]), pattern, tmp_path / "friend.root")
    assert not (tmp_path / "friend.root").exists()
    apply(LinearModel(["x"], [1.0]), str(tmp_path / "b[12].root"), tmp_path / "friend.root")
