"""Audit FQ: damaged ROOT-written files read as ROOT reads them, or refused in one line.

``data/root_written/vector_float.root`` was written by ROOT 6.40 (TTree ``events``: ``x``
float, ``v`` std::vector<float> in one uncompressed basket, 120 entries: entry i holds
i % 4 elements 10 i, 10 i + 1, ...). Each test damages a copy byte by byte and compares
with the undamaged values and with what ROOT's TTree::GetEntry reports for that damage.
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.io.errors import InputError
from hepbdt.io.samples import Sample, read

VECTOR_FILE = Path(__file__).parent / "data" / "root_written" / "vector_float.root"
FEATURES = ["x", "num(v)", "sum(v)"]

ROOT_READ = """
import sys, ROOT
f = ROOT.TFile.Open(sys.argv[1]); t = f.Get("events")
for i in range(t.GetEntries()):
    status = t.GetEntry(i)
    print(i, status, t.x, len(t.v), sum(t.v))
"""


def _expected() -> np.ndarray:
    """The undamaged file's features, from its construction (not from a read)."""
    i = np.arange(120)
    n = i % 4
    sums = np.array([sum(10.0 * k + j for j in range(k % 4)) for k in i])
    return np.column_stack([0.5 * i, n, sums]).astype(np.float32)


def _moved_offset(tmp_path: Path, entry: int, shift: int) -> Path:
    """A copy whose basket of ``v`` records entry ``entry``'s start ``shift`` bytes later
    (its offsets hold no checksum in an uncompressed or ZSTD basket)."""
    branch = uproot.open(VECTOR_FILE)["events"]["v"]
    key, basket = branch.basket_key(0), branch.basket(0)
    data = bytearray(VECTOR_FILE.read_bytes())
    # after the basket's data: the count of offsets, then each entry's start (+ fKeylen)
    where = key.fSeekKey + basket.member("fLast") + 4 + 4 * entry
    (start,) = struct.unpack_from(">i", data, where)
    struct.pack_into(">i", data, where, start + shift)
    out = tmp_path / "moved_offset.root"
    out.write_bytes(bytes(data))
    return out


def test_undamaged_vector_file_reads_its_values():
    ds = read(Sample("s", f"{VECTOR_FILE}:events", label=1), FEATURES)
    np.testing.assert_array_equal(np.asarray(ds.X), _expected())


# (entry, shift, what ROOT 6.40 does with the damaged copy)
MOVED = [(6, 4, "reads"), (118, 4, "reads"), (6, -4, "reports")]


@pytest.mark.parametrize("entry, shift", [case[:2] for case in MOVED])
def test_moved_vector_entry_offset_is_refused(tmp_path, entry, shift):
    """uproot skips each entry's header, so hepbdt read (6, +4) as entry 5 holding 2
    elements summing to 52 and entry 6 one summing to 61 (ROOT: 1 summing to 50, 2 to 121),
    (118, +4) as entries 117 and 118 holding 2 and 1 (ROOT: 1 and 2), and (6, -4), which
    ROOT reports ('Byte count probably corrupted'), as entry 5 empty: all without a word."""
    bad = _moved_offset(tmp_path, entry, shift)
    with pytest.raises(InputError, match=r"moved_offset\.root.*'events'.*branch 'v', basket 0"
                                         r".*corrupt") as info:
        read(Sample("s", f"{bad}:events", label=1), FEATURES)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("entry, shift, root", MOVED)
def test_root_reads_or_reports_the_moved_offset(tmp_path, entry, shift, root):
    """The reference: ROOT's TTree::GetEntry reads the undamaged values (it finds each
    entry by its header), or reports the damage; it never reads the numbers hepbdt read."""
    python = os.environ.get("TMVA_READER_PYTHON")
    if not python or not Path(python).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI must read the damaged file with ROOT: TMVA_READER_PYTHON is not set")
        pytest.skip("ROOT is not available: set TMVA_READER_PYTHON to a Python with ROOT")
    bad = _moved_offset(tmp_path, entry, shift)
    done = subprocess.run([python, "-c", ROOT_READ, str(bad)], capture_output=True,
                          text=True, timeout=120)
    if root == "reports":
        assert "Byte count probably corrupted" in done.stderr
        return
    assert done.returncode == 0 and "Error" not in done.stderr
    rows = np.array([line.split()[2:] for line in done.stdout.splitlines()], dtype=np.float64)
    np.testing.assert_array_equal(rows.astype(np.float32), _expected())


ROOT_STATUS = """
import sys, ROOT
f = ROOT.TFile.Open(sys.argv[1]); t = f.Get("t")
print(t.GetEntry(0))
"""


def _overclaimed_basket(tmp_path: Path, extra: int) -> Path:
    """A ZLIB file of 20,000 doubles in one basket whose key claims ``extra`` bytes more
    than its compression block unpacks to (fObjlen; under 1 MiB an entry)."""
    path = tmp_path / "overclaimed.root"
    with uproot.recreate(path, compression=uproot.ZLIB(1)) as f:
        f.mktree("t", {"a": np.float64})
        f["t"].extend({"a": np.linspace(0.0, 1.0, 20_000)})
    key = uproot.open(path)["t"]["a"].basket_key(0)
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, key.fSeekKey + 6, key.fObjlen + extra)
    path.write_bytes(bytes(data))
    return path


def test_basket_claiming_more_than_its_blocks_unpack_is_refused(tmp_path):
    """uproot unpacked the block and left the rest of the claimed buffer unread: 1 MiB more
    read the values, 2 GB more (tmva_reg_example.root's first basket) took 2.2 GB and 19 s."""
    bad = _overclaimed_basket(tmp_path, 1 << 20)
    with pytest.raises(InputError, match=r"overclaimed\.root.*basket 0 of branch 'a' declares "
                                         r"1,208,\d{3} bytes, but its compressed blocks unpack "
                                         r"to 160,\d{3}") as info:
        read(Sample("s", f"{bad}:t", label=1), ["a"])
    assert "\n" not in str(info.value)


def test_root_refuses_the_overclaimed_basket(tmp_path):
    """The reference: ROOT's GetEntry fails (-1, 'fObjlen = ... noutot = ...')."""
    python = os.environ.get("TMVA_READER_PYTHON")
    if not python or not Path(python).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI must read the damaged file with ROOT: TMVA_READER_PYTHON is not set")
        pytest.skip("ROOT is not available: set TMVA_READER_PYTHON to a Python with ROOT")
    bad = _overclaimed_basket(tmp_path, 1 << 20)
    done = subprocess.run([python, "-c", ROOT_STATUS, str(bad)], capture_output=True,
                          text=True, timeout=120)
    assert done.stdout.split()[-1] == "-1" and "TBasket::ReadBasketBuffers" in done.stderr


@pytest.mark.parametrize("tree", [None, "events"])
def test_a_file_whose_directory_lists_nothing_says_it_may_be_damaged(tmp_path, tree):
    # a directory whose fSeekKeys points at itself lists no key to uproot, while ROOT's
    # TFile::Recover reads the tree: "has no tree 'events'; trees in it: (none)" blamed
    # the configuration. Checked here on an empty file written by uproot, whose directory
    # lists nothing as that damaged one's does (the same message path)
    from hepbdt.io import MissingTreeError

    path = tmp_path / "empty.root"
    with uproot.recreate(path):
        pass
    with uproot.open(path) as file:
        assert file.keys() == []
    with pytest.raises(MissingTreeError, match="its directory lists no object at all: an "
                                               "empty file, or a damaged one"):
        read(Sample("s", str(path), tree=tree), ["x"])
