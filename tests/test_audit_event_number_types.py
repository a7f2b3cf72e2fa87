"""Event numbers of every ROOT type through event expressions (audit DA, 2026-12-05).

Trees are written by ROOT itself (a subprocess of a Python with ROOT, as in
``tests/test_io_writers.py``), and the reference is the exact integer as a Python int: an
event expression that reads a float event number beyond the integers its type holds, or
computes a double beyond 2**53, is refused wherever that happens, not only when its
result lands beyond the bound.
"""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pytest

from hepbdt.io import Sample, read
from hepbdt.io.errors import BadValueError, ExpressionError
from hepbdt.kfold import fold_of
from tests.test_io_writers import _root_python

ROOT_WRITER = """
import json, sys
import ROOT
ROOT.gInterpreter.Declare(r'''
template <typename T>
void hepbdt_da_events(const char* path, const char* leaf, const std::vector<double>& values) {
  TFile f(path, "RECREATE"); TTree t("Events", "Events");
  T event; Float_t x;
  t.Branch("event", &event, leaf); t.Branch("x", &x, "x/F");
  for (size_t k = 0; k < values.size(); k++) { event = values[k]; x = k; t.Fill(); }
  t.Write(); f.Close();
}''')
values = ROOT.std.vector["double"](json.loads(sys.argv[3]))
kind = {"F": "Float_t", "D": "Double_t", "d": "Double32_t"}[sys.argv[2]]
ROOT.hepbdt_da_events[kind](sys.argv[1], f"event/{sys.argv[2]}", values)
tfile = ROOT.TFile.Open(sys.argv[1])
tree = tfile.Get("Events")
count = tree.Draw("event", "", "goff")
print(json.dumps([tree.GetV1()[i] for i in range(count)]))
"""


def _root_tree(path, leaf: str, values: list[float]) -> list[float]:
    """Write ``values`` as branch ``event/leaf`` with ROOT; the numbers ROOT reads back."""
    done = subprocess.run([_root_python(), "-c", ROOT_WRITER, str(path), leaf,
                           json.dumps(values)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _read(path, event: str):
    return read([Sample("s", f"{path}:Events", label=1)], ["x"], event=event, progress=False)


@pytest.mark.parametrize(("leaf", "stored", "expression", "words"), [
    # float32 2**24 + 3 and + 5 are both written as 2**24 + 4: event - 16777216 gave 4 and 4
    # (folds 1, 1 of 3) for the numbers 3 and 5 (folds 0, 2)
    ("F", [2**24 + 3, 2**24 + 5, 5], "event - 16777216",
     "'event - 16777216': event holds float32 values of 2**24 or beyond"),
    ("F", [2**24 + 3, 2**24 + 5, 5], "fmod(event, 1000)", "event holds float32 values of"),
    # Double32_t without a range: float32 on disk, double in uproot
    ("d", [2**24 + 3, 2**24 + 5, 5], "event - 16777216",
     "reads 'event', stored as float32, at 2**24 or beyond for 2 event"),
    # a double 2**60 + 12346 is written as 2**60 + 12288: fmod(event, 1000) gave 264, not 346
    ("D", [2**60 + 12346, 5, 7], "fmod(event, 1000)",
     "event holds double values of 2**53 or beyond"),
    # a float32 2**24 + 1 is written as 2**24 (fold 1 of 3 for its 2): 2**24 is refused too
    ("F", [2**24 + 1, 2**24 + 2, 5], "event - 16777216",
     "'event - 16777216': event holds float32 values of 2**24 or beyond"),
])
def test_float_event_numbers_beyond_their_exact_integers_are_refused_inside_expressions(
        tmp_path, leaf, stored, expression, words):
    path = tmp_path / "e.root"
    written = _root_tree(path, leaf, [float(v) for v in stored])
    exact = [v % 1000 if "fmod" in expression else v - 2**24 for v in stored[:2]]
    rounded = [int(v) % 1000 if "fmod" in expression else int(v) - 2**24 for v in written[:2]]
    assert [v % 3 for v in rounded] != [v % 3 for v in exact]  # folds the rounding moves
    with pytest.raises((BadValueError, ExpressionError), match=re.escape(words)):
        _read(path, expression)


def test_a_double_intermediate_at_2_53_is_refused_and_exact_ones_are_kept(tmp_path):
    """A double 2**53 - 1 is exact, but event + 1 reaches 2**53, which 2**53 + 1 rounds to:
    event + 2 - 2 of 2**53 - 1 gave 2**53 - 2 (fold 1 of 3) for fold 2. A stored 2**53 may
    itself be 2**53 + 1 rounded: refused."""
    path = tmp_path / "d.root"
    values = [2**53 - 1, -(2**53) + 7, 2**31 + 5, -12, 0]
    written = _root_tree(path, "D", [float(v) for v in values])
    assert [int(v) for v in written] == values  # every one stored exactly
    data = _read(path, "event - 1 + 1")  # the intermediate 2**53 - 1 is exact
    assert [int(v) for v in data.event] == values
    assert fold_of(data.event, 3).tolist() == [v % 3 for v in values]
    assert float(2**53 - 1 + 2) - 2 == 2**53 - 2  # the rounding the refusal prevents
    with pytest.raises(ExpressionError, match=r"'event \+ 2 - 2': event \+ 2 reaches 2\*\*53 "
                                              r"or beyond in double"):
        _read(path, "event + 2 - 2")
    _root_tree(path, "D", [float(2**53), 5.0])
    with pytest.raises(ExpressionError, match=r"event holds double values of 2\*\*53 or beyond"):
        _read(path, "event - 1 + 1")


def test_integer_event_numbers_computed_in_double_beyond_2_53_are_refused(tmp_path):
    """A Long64_t 2**60 + 1 taken to double is 2**60: event * 1.0 - 2**60 gave 0, not 1."""
    import uproot

    path = tmp_path / "l.root"
    with uproot.recreate(path) as file:
        file["Events"] = {"event": np.array([2**60 + 1, 2**60 + 2], dtype=np.int64),
                          "x": np.array([0.0, 1.0], dtype=np.float32)}
    assert [int(v) for v in _read(path, "event - 1152921504606846976").event] == [1, 2]
    with pytest.raises(ExpressionError, match=r"event \* 1.0 reaches 2\*\*53 or beyond"):
        _read(path, "event * 1.0 - 1152921504606846976")
