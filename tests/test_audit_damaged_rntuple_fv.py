"""Audit FV: damaged ROOT-written RNTuples read as ROOT reads them, or refused in one line.

``data/root_written/rntuple_zstd.root`` was written by ROOT 6.40's RNTupleWriter (RNTuple
``events``, ZSTD 505, three clusters of 100 entries, pages of at most 256 bytes): entry i
holds ``x`` = 0.5 i (float), ``d`` = 0.25 i (double), ``n`` = i (int) and ``v`` =
std::vector<float> of i % 4 elements 10 i, 10 i + 1, ... ROOT checks each page's and each
envelope's xxhash3 checksum; uproot checks the header's and footer's only, and ZSTD frames
carry none of their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hepbdt.io.errors import InputError
from hepbdt.io.samples import Sample, read

RNTUPLE_FILE = Path(__file__).parent / "data" / "root_written" / "rntuple_zstd.root"
FEATURES = ["x", "d", "n", "num(v)", "sum(v)"]
PAGE_BYTE = 568  # in page 0 of field 'x', cluster 0 (entries 0-63)
PAGE_LIST_BYTE = 4047  # in the ZSTD-compressed page list of the only cluster group

ROOT_READ = """
import sys, ROOT
ROOT.gInterpreter.Declare('''
#include <ROOT/RNTupleReader.hxx>
#include <iostream>
void read_all(const char *path) {
  try {
    auto reader = ROOT::RNTupleReader::Open("events", path);
    auto x = reader->GetView<float>("x"); auto d = reader->GetView<double>("d");
    for (auto i : reader->GetEntryRange()) std::cout << x(i) << " " << d(i) << "\\\\n";
  } catch (const std::exception &e) { std::cout << "ERROR " << e.what() << "\\\\n"; }
}''')
ROOT.read_all(sys.argv[1])
"""


def _expected() -> np.ndarray:
    """The undamaged file's features, from its construction (not from a read)."""
    i = np.arange(300)
    sums = np.array([sum(10.0 * k + j for j in range(k % 4)) for k in i])
    return np.column_stack([0.5 * i, 0.25 * i, i, i % 4, sums]).astype(np.float32)


def _flipped(tmp_path: Path, at: int) -> Path:
    data = bytearray(RNTUPLE_FILE.read_bytes())
    data[at] ^= 0x10
    out = tmp_path / "flipped.root"
    out.write_bytes(bytes(data))
    return out


def test_undamaged_rntuple_reads_its_values():
    ds = read(Sample("s", f"{RNTUPLE_FILE}:events", label=1), FEATURES)
    np.testing.assert_array_equal(np.asarray(ds.X), _expected())


def test_rntuple_page_not_matching_its_checksum_is_refused(tmp_path):
    """uproot read the page without its checksum: x of entry 28 read as 15 (undamaged 14)."""
    bad = _flipped(tmp_path, PAGE_BYTE)
    with pytest.raises(InputError, match=r"flipped\.root.*'events'.*page 0 of field 'x' "
                                         r"\(column 0\) in cluster 0 does not match its "
                                         r"checksum.*corrupt") as info:
        read(Sample("s", f"{bad}:events", label=1), FEATURES)
    assert "\n" not in str(info.value)


def test_rntuple_page_list_not_matching_its_checksum_is_refused(tmp_path):
    """uproot checks no page list's checksum: d of entries 96-99 read as 0, 0, 2, -0
    (undamaged 24, 24.25, 24.5, 24.75)."""
    bad = _flipped(tmp_path, PAGE_LIST_BYTE)
    with pytest.raises(InputError, match=r"flipped\.root.*'events'.*the page list of cluster "
                                         r"group 0 does not match its checksum.*corrupt") as info:
        read(Sample("s", f"{bad}:events", label=1), FEATURES)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("at, message", [(PAGE_BYTE, "page checksum verification failed"),
                                         (PAGE_LIST_BYTE, "XxHash-3 checksum mismatch")])
def test_root_refuses_the_damaged_rntuple(tmp_path, at, message):
    """The reference: ROOT's RNTupleReader reads the undamaged values, and refuses each
    damaged copy."""
    python = os.environ.get("TMVA_READER_PYTHON")
    if not python or not Path(python).exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI must read the damaged file with ROOT: TMVA_READER_PYTHON is not set")
        pytest.skip("ROOT is not available: set TMVA_READER_PYTHON to a Python with ROOT")
    done = subprocess.run([python, "-c", ROOT_READ, str(RNTUPLE_FILE)], capture_output=True,
                          text=True, timeout=120)
    rows = np.array([line.split() for line in done.stdout.splitlines()], dtype=np.float64)
    np.testing.assert_array_equal(rows.astype(np.float32), _expected()[:, :2])
    done = subprocess.run([python, "-c", ROOT_READ, str(_flipped(tmp_path, at))],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("ERROR") and message in done.stdout


HOSTILE_READ = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))
from hepbdt.io.samples import Sample, read
try:
    read(Sample("s", sys.argv[1] + ":events"), ["d"])
except Exception as err:
    print(type(err).__name__, err)
"""


def test_a_page_list_claiming_gigabytes_under_a_valid_checksum_is_refused_unread():
    # rntuple_hostile_page_count.root: ROOT's uncompressed RNTuple (100 entries of 'd' a
    # cluster) whose page list says column 'd''s first page holds -2e9 elements, its
    # checksum made again. Typing the field by a read of no entries made uproot read the
    # first cluster: 14.9 GiB asked for, refused as "a type uproot cannot read"; the field
    # is typed from its form now, and the cluster's declared bytes refuse it unread
    hostile = Path(__file__).parent / "data" / "root_written" / "rntuple_hostile_page_count.root"
    done = subprocess.run([sys.executable, "-c", HOSTILE_READ, str(hostile)],
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("InputError "), done.stdout + done.stderr
    assert "cluster 0 declares 16,000,000,544 bytes of the fields 'd' for its 100 entries" in (
        done.stdout)
