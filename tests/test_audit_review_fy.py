"""Audit FY: a review of 2026-12-05's checks of damaged files, for what they cost and what
they refuse.

``data/root_written/vector_float.root`` was written by ROOT 6.40 (TTree ``events``: ``x``
float, ``v`` std::vector<float> in one uncompressed basket, 120 entries: entry i holds
i % 4 elements 10 i, 10 i + 1, ...).
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np

from hepbdt.io import samples
from hepbdt.io.samples import Sample, read

VECTOR_FILE = Path(__file__).parent / "data" / "root_written" / "vector_float.root"


def _expected() -> np.ndarray:
    """The file's features x, num(v), sum(v), from its construction (not from a read)."""
    i = np.arange(120)
    sums = np.array([sum(10.0 * k + j for j in range(k % 4)) for k in i])
    return np.column_stack([0.5 * i, i % 4, sums]).astype(np.float32)


def test_a_vector_basket_read_in_many_chunks_has_its_headers_checked_once(monkeypatch):
    """uproot reads a basket again for every chunk it spans, and the header check ran each
    time: a 2M-entry file of 7 std::vector branches (RDataFrame's baskets of up to 300,000
    entries) had 80M entry headers checked for its 14M entries, and hepbdt.read took 9.5 s
    where it took 5.2 s before the check."""
    checked = []
    check = samples._vector_header_problem

    def counted(data, byte_offsets, itemsize):
        checked.append(len(byte_offsets) - 1)
        return check(data, byte_offsets, itemsize)

    monkeypatch.setattr(samples, "_vector_header_problem", counted)
    ds = read(Sample("s", f"{VECTOR_FILE}:events", label=1), ["x", "num(v)", "sum(v)"],
              step_size=10)
    np.testing.assert_array_equal(np.asarray(ds.X), _expected())
    assert sum(checked) == 120  # one basket of 120 entries, read in 12 chunks: was 1,440


def test_the_vector_header_check_holds_few_bytes_an_entry():
    """A gather of the ten header bytes as int64 took 130 bytes an entry of a basket (a
    basket of 300,000 entries: 39 MB for the check of its 6.6 MB)."""
    n = 200_000  # entries of one float each: header (10 bytes) and element (4)
    one_float = np.frombuffer(b"\x40\x00\x00\x0a\x00\x09\x00\x00\x00\x01\x3f\x80\x00\x00",
                              dtype=np.uint8)
    data = np.tile(one_float, n)
    offsets = np.arange(n + 1, dtype=np.int32) * 14
    tracemalloc.start()
    try:
        assert samples._vector_header_problem(data, offsets, 4) == ""
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * n
    moved = offsets.copy()
    moved[7] += 4  # entry 6 then spans 18 bytes, entry 7 14 - 4
    assert samples._vector_header_problem(data, moved, 4) == (
        "entry 6 of the basket spans 18 bytes, but its header counts 10 bytes and 1 elements")
