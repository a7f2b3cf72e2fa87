"""Audit FV: C-style arrays whose counter and offsets disagree, read as ROOT reads them or
refused in one line.

A C-style array branch (``a[n]``) stores no header per entry: ROOT reads each entry's
counter value (branch ``n``) of elements from the entry's start, uproot cuts entries by the
basket's offsets alone. Each test writes a small uncompressed file (no checksum protects
the baskets), damages a copy and compares with the undamaged values and with ROOT's
TTreeFormula (``Length$(a)``, ``Sum$(a)``) on the damaged copy.
"""

from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io.errors import InputError
from hepbdt.io.samples import Sample, read

ENTRIES = 40
FEATURES = ["n", "num(a)", "sum(a)"]

ROOT_FORMULA = """
import sys, ROOT
f = ROOT.TFile.Open(sys.argv[1]); t = f.Get("t")
forms = [ROOT.TTreeFormula(f"f{i}", e, t) for i, e in enumerate(["n", "Length$(a)", "Sum$(a)"])]
for i in range(t.GetEntries()):
    t.LoadTree(i)
    print(*(form.EvalInstance(0) for form in forms if form.GetNdata() >= 0))
"""


def _expected() -> np.ndarray:
    """The undamaged file's features, from its construction: entry i holds i % 4 elements
    10 i, 10 i + 1, ..."""
    i = np.arange(ENTRIES)
    sums = [sum(10.0 * k + j for j in range(k % 4)) for k in i]
    return np.column_stack([i % 4, i % 4, sums]).astype(np.float32)


def _write(tmp_path: Path) -> Path:
    """An uncompressed file of ``float a[n]`` (uproot writes a counter branch ``n``)."""
    path = tmp_path / "carray.root"
    lists = [[10.0 * i + j for j in range(i % 4)] for i in range(ENTRIES)]
    with uproot.recreate(path, compression=None) as f:
        f.mktree("t", {"a": "var * float32"}, counter_name=lambda name: "n")
        f["t"].extend({"a": ak.Array(lists, with_name=None)})
    return path


def _damaged(tmp_path: Path, branch: str, entry: int, change: int) -> Path:
    """A copy whose basket of ``a`` records entry ``entry``'s start ``change`` bytes later
    (``branch`` 'a'), or whose counter ``n`` of entry ``entry`` is ``change`` (``branch`` 'n')."""
    path = _write(tmp_path)
    data = bytearray(path.read_bytes())
    tree = uproot.open(path)["t"]
    key, basket = tree[branch].basket_key(0), tree[branch].basket(0)
    if branch == "a":
        where = key.fSeekKey + basket.member("fLast") + 4 + 4 * entry
        (start,) = struct.unpack_from(">i", data, where)
        struct.pack_into(">i", data, where, start + change)
    else:
        struct.pack_into(">i", data, key.fSeekKey + key.fKeylen + 4 * entry, change)
    out = tmp_path / "damaged.root"
    out.write_bytes(bytes(data))
    return out


def test_undamaged_c_array_reads_its_values(tmp_path):
    ds = read(Sample("s", f"{_write(tmp_path)}:t", label=1), FEATURES)
    np.testing.assert_array_equal(np.asarray(ds.X), _expected())


# (branch, entry, change): an offset moved by 4 bytes (one float) either way, at the
# basket's last entry, and a counter of 2 (or 1,000, above the leaf's maximum) for 1.
DAMAGES = [("a", 6, 4), ("a", 6, -4), ("a", ENTRIES - 1, 4), ("n", 5, 2), ("n", 5, 1000)]


@pytest.mark.parametrize("branch, entry, change", DAMAGES)
def test_c_array_disagreeing_with_its_counter_is_refused(tmp_path, branch, entry, change):
    """uproot cut entries by the offsets alone: ('a', 6, 4) read entry 5 as 2 elements summing
    to 110 and entry 6 as 1 summing to 61 (undamaged: 1 summing to 50, 2 to 121; ROOT reads
    entry 6 as 2 summing to 131), and ('n', 5, 2) read n = 2 beside num(a) = 1 (ROOT: 2
    elements summing to 110), all without a word."""
    bad = _damaged(tmp_path, branch, entry, change)
    with pytest.raises(InputError, match=r"damaged\.root.*'t'.*branch 'a' disagrees with its "
                                         r"counter branch 'n': entry \d+ holds.*corrupt") as info:
        read(Sample("s", f"{bad}:t", label=1), FEATURES)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("branch, entry, change", DAMAGES)
def test_root_reads_the_counter_s_number_of_elements(tmp_path, branch, entry, change):
    """The reference: ROOT's TTreeFormula reads Length$(a) from the counter (clamped to the
    leaf's maximum, with an error), never the offsets' count, so its values differ from the
    undamaged file's wherever offsets and counter disagree."""
    python = os.environ.get("TMVA_READER_PYTHON")
    if not python or not Path(python).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI must read the damaged file with ROOT: TMVA_READER_PYTHON is not set")
        pytest.skip("ROOT is not available: set TMVA_READER_PYTHON to a Python with ROOT")
    bad = _damaged(tmp_path, branch, entry, change)
    done = subprocess.run([python, "-c", ROOT_FORMULA, str(bad)], capture_output=True,
                          text=True, timeout=120)
    lines = done.stdout.splitlines()  # ROOT prints 'ERROR leaf:a, len=1000 and max=3' there
    rows = np.array([line.split() for line in lines if not line.startswith("ERROR")],
                    dtype=np.float64)
    if change == 1000:
        assert "Leaf counter is greater than maximum" in done.stderr
    assert rows.shape == (ENTRIES, 3)
    assert not np.array_equal(rows.astype(np.float32), _expected())
    np.testing.assert_array_equal(rows[:, 1], np.minimum(rows[:, 0], 3))
