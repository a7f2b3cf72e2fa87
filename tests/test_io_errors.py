"""Bad input: every error names the file, tree and branch or expression, and what is valid."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.io import (
    BadValueError,
    BranchTypeError,
    CompressionError,
    EmptySelectionError,
    InputError,
    MissingBranchError,
    MissingFileError,
    MissingTreeError,
    Sample,
    read,
)
from tests.ntuples import write_rntuple


@pytest.fixture()
def ntuple(tmp_path: Path) -> Path:
    path = tmp_path / "ntuple.root"
    n = 200
    with uproot.recreate(path) as file:
        file.mktree("Events", {"lep_pt": np.float32, "lep_eta": np.float32,
                               "nJet": np.int32, "label": "string", "w": np.float64})
        file["Events"].extend({
            "lep_pt": np.linspace(0, 100, n).astype(np.float32),
            "lep_eta": np.linspace(-2, 2, n).astype(np.float32),
            "nJet": np.arange(n, dtype=np.int32) % 4,
            "label": np.array(["a", "bb"] * (n // 2)),
            "w": np.linspace(-1, 1, n),
        })
        file.mktree("Other", {"x": np.float32})
        file["Other"].extend({"x": np.zeros(3, np.float32)})
    return path


def _read(path: Path, features: list[str], **sample: object) -> object:
    sample.setdefault("tree", "Events")
    return read(Sample("sig", path, label="signal", **sample), features)


def test_missing_file_names_it_and_close_names(ntuple: Path) -> None:
    with pytest.raises(MissingFileError) as info:
        _read(ntuple.parent / "ntupel.root", ["lep_pt"])
    message = str(info.value)
    assert "ntupel.root" in message and "'ntuple.root'" in message and "sample 'sig'" in message
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, ValueError)
    with pytest.raises(MissingFileError, match=r"matches no file"):
        _read(ntuple.parent / "*.nothing", ["lep_pt"])


def test_missing_tree_lists_the_trees(ntuple: Path) -> None:
    with pytest.raises(MissingTreeError) as info:
        _read(ntuple, ["lep_pt"], tree="Event")
    message = str(info.value)
    assert "'Event'" in message and "'Events'" in message and "'Other'" in message
    assert str(ntuple) in message
    with pytest.raises(MissingTreeError, match=r"several trees.*'Events'.*'Other'"):
        read(Sample("sig", ntuple, label=1), ["lep_pt"])


def test_missing_branch_lists_close_names(ntuple: Path) -> None:
    with pytest.raises(MissingBranchError) as info:
        _read(ntuple, ["log(lep_ptt)"])
    message = str(info.value)
    assert "'lep_ptt'" in message and "'log(lep_ptt)'" in message
    assert "Close names: 'lep_pt'" in message and str(ntuple) in message and "'Events'" in message
    with pytest.raises(MissingBranchError, match=r"cut expression 'njet > 1'.*'nJet'"):
        _read(ntuple, ["lep_pt"], cut="njet > 1")


def test_misspelt_class_label_is_explained(ntuple: Path) -> None:
    with pytest.raises(MissingBranchError, match=r"label='sgnal' is not a class name"):
        read(Sample("s", ntuple, tree="Events", label="sgnal"), ["lep_pt"])


def test_string_branch_cannot_be_a_feature(ntuple: Path) -> None:
    with pytest.raises(BranchTypeError) as info:
        _read(ntuple, ["label"])
    message = str(info.value)
    assert "'label'" in message and "strings" in message and str(ntuple) in message
    assert "Valid branches hold numbers" in message


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("log(lep_pt", "does not parse"),
        ("lep_pt.__class__", "not a branch"),
        ("__import__('os')", "unknown function '__import__'"),
        ("lgo(lep_pt)", "did you mean log"),
        ("[x for x in lep_pt]", "ListComp is not allowed"),
        ("lep_pt if 'a' else 0", "only numbers"),
        ("max(lep_pt)", "reduces each event's list"),
        ("lep_pt[:, 0]", "one value per event"),
        ("lep_pt[lep_pt > 3]", "select events with cut="),
        ("log(lep_pt, 2)", "takes 1 argument"),
        ("(lambda: 1)()", "only the built-in functions"),
        ("(lep_pt + 1).real", "attributes are allowed only on branch names"),
        ("log(x=lep_pt)", "no keyword arguments"),
    ],
)
def test_bad_expressions(ntuple: Path, expression: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        _read(ntuple, [expression])
    assert fragment in str(info.value)
    assert repr(expression) in str(info.value) or "lep_pt.__class__" in str(info.value)


def test_integer_constants_stay_fast(ntuple: Path) -> None:
    # a Python int would try to compute 10 ** 10 ** 10 exactly, for ever
    ds = read(Sample("sig", ntuple, tree="Events", label=1),
              ["nJet & 1", "2 ** 3 + lep_pt * 0"])
    np.testing.assert_array_equal(ds.X[:, 0], np.arange(200) % 4 % 2)
    np.testing.assert_array_equal(ds.X[:, 1], 8)
    # computed in double, as a branch would be: inf, which a feature may not be
    with pytest.raises(BadValueError, match=r"'lep_pt \+ 10 \*\* \(10 \*\* 10\)' is infinite"):
        read(Sample("sig", ntuple, tree="Events", label=1), ["lep_pt + 10 ** (10 ** 10)"])


def test_cut_that_selects_nothing(ntuple: Path) -> None:
    with pytest.raises(EmptySelectionError) as info:
        _read(ntuple, ["lep_pt"], cut="(lep_pt > 50) & (lep_pt < 10)")
    message = str(info.value)
    assert "(lep_pt > 50) & (lep_pt < 10)" in message and "200" in message
    assert str(ntuple) in message


def test_nan_weight_is_an_error(ntuple: Path) -> None:
    # w = linspace(-1, 1, 200): negative for the first half, so sqrt(w) is NaN there
    with pytest.raises(BadValueError) as info:
        _read(ntuple, ["lep_pt"], weight="sqrt(w)")
    message = str(info.value)
    assert "'sqrt(w)'" in message and "NaN" in message and "entry 0" in message
    assert str(ntuple) in message and "'Events'" in message


def test_inf_feature_is_an_error_unless_missing(ntuple: Path) -> None:
    with pytest.raises(BadValueError) as info:
        _read(ntuple, ["1 / lep_pt"])
    message = str(info.value)
    assert "'1 / lep_pt'" in message and "inf_as_missing=True" in message and "entry 0" in message
    ds = read(Sample("sig", ntuple, tree="Events", label=1), ["1 / lep_pt", "log(lep_eta)"],
              inf_as_missing=True)
    assert np.isnan(ds.X[0, 0]) and np.isfinite(ds.X[1:, 0]).all()
    # NaN in a feature is a missing value: kept, no error
    assert np.isnan(ds.X[:, 1]).sum() == 100


def test_unreadable_compression_names_the_branch(tmp_path: Path) -> None:
    path = tmp_path / "compressed.root"
    with uproot.recreate(path, compression=None) as file:
        file.mktree("T", {"x": np.float64, "y": np.float64})
        file["T"].compression = uproot.ZLIB(1)
        file["T"].extend({"x": np.arange(1000.0), "y": np.zeros(1000)})
    data = path.read_bytes()
    assert data.count(b"ZL\x08") == 2
    bad = tmp_path / "unknown.root"
    bad.write_bytes(data.replace(b"ZL\x08", b"QQ\x08", 1))  # one basket of one branch
    broken = []
    with uproot.open(bad) as file:
        for name in ("x", "y"):
            try:
                file["T"][name].array(library="np")
            except ValueError:
                broken.append(name)
    assert len(broken) == 1
    (culprit,) = broken
    (healthy,) = {"x", "y"} - {culprit}
    with pytest.raises(CompressionError) as info:
        read(Sample("s", bad, label=1), ["x", "y"])
    message = str(info.value)
    named = message.split("(entries")[0]
    assert f"'{culprit}'" in named and f"'{healthy}'" not in named
    assert str(bad) in message and "'T'" in message and "ZLIB" in message


def test_mixed_labels_and_duplicates(ntuple: Path) -> None:
    with pytest.raises(InputError, match="regression targets"):
        read([Sample("a", ntuple, tree="Events", label="lep_pt"),
              Sample("b", ntuple, tree="Events", label=0)], ["lep_eta"])
    with pytest.raises(InputError, match="unique"):
        read([Sample("a", ntuple, tree="Events", label=1),
              Sample("a", ntuple, tree="Events", label=0)], ["lep_eta"])
    with pytest.raises(InputError, match="negative"):
        Sample("a", ntuple, label=-1)


def test_nested_object_branches_are_refused() -> None:
    # uproot cannot write vector<vector<float>>; check the classification ROOT files get
    from types import SimpleNamespace

    from uproot.containers import AsVector
    from uproot.interpretation.objects import AsObjects

    from hepbdt.io.samples import _branch_kind

    nested = SimpleNamespace(
        typename="std::vector<std::vector<float>>",
        interpretation=AsObjects(AsVector(True, AsVector(False, np.dtype(">f4")))),
    )
    kind, description = _branch_kind(nested)
    assert kind is None and description.startswith("nested objects (std::vector<std::vector")


def test_class_label_beyond_int32_is_refused_before_reading(ntuple: Path) -> None:
    # one file's events split between the two samples (an event in both is refused)
    samples = [Sample("sig", ntuple, tree="Events", label=1, cut="lep_pt <= 50"),
               Sample("huge", ntuple, tree="Events", label=2**31, cut="lep_pt > 50")]
    with pytest.raises(InputError, match=r"sample 'huge': class label 2147483648 is beyond int32"):
        read(samples, ["lep_pt"])
    samples[1] = Sample("largest", ntuple, tree="Events", label=2**31 - 1, cut="lep_pt > 50")
    assert read(samples, ["lep_pt"]).y.dtype == np.int32


def test_a_basket_declaring_more_than_its_entries_can_hold_is_not_read(tmp_path: Path,
                                                                         monkeypatch) -> None:
    """A 1.6 MB file whose basket unpacked to 1.6 GB (a decompression bomb) took 3.2 GB to
    read: a basket declaring more than MAX_BASKET_BYTES_PER_ENTRY an entry is refused from
    its key, before it is unpacked. Here the limit is lowered below a normal basket's
    8 bytes an entry, which then stands for the bomb."""
    from hepbdt.io import samples

    path = tmp_path / "zeros.root"
    with uproot.recreate(path) as file:
        file.mktree("Events", {"x": np.float64})
        file["Events"].extend({"x": np.zeros(1000)})
    read(Sample("s", path, tree="Events", label=1), ["x"], progress=False)  # 8 an entry: fine
    monkeypatch.setattr(samples, "MAX_BASKET_BYTES_PER_ENTRY", 4)
    monkeypatch.setattr(samples, "BASKET_SLACK_BYTES", 0)
    with pytest.raises(InputError, match=r"basket 0 of branch 'x' declares 8,0\d\d bytes for "
                       r"its 1,000 entries, more than 4 an entry: the file is corrupt"):
        read(Sample("s", path, tree="Events", label=1), ["x"], progress=False)


def test_an_rntuple_cluster_declaring_more_than_its_entries_can_hold_is_not_read(
        tmp_path: Path, monkeypatch) -> None:
    """The basket check's sibling for RNTuples: a cluster whose pages of the fields read
    declare more than MAX_BASKET_BYTES_PER_ENTRY an entry is refused from its page list,
    before a page is unpacked: five entries of 200,000 zeros each (1.6 MB an entry, a 38 kB
    file) as uproot writes them, and, with the limit lowered, a plain float64 column."""
    import awkward as ak

    from hepbdt.io import samples

    path = tmp_path / "bomb.root"
    write_rntuple(path, "Events", {"x": np.zeros(5), "hits": ak.Array([np.zeros(200_000)] * 5)})
    read(Sample("s", path, tree="Events", label=1), ["x"], progress=False)  # x alone: fine
    with pytest.raises(InputError, match=r"cluster 0 declares 8,000,0\d\d bytes of the fields "
                       r"'x', 'hits' for its 5 entries, more than 1,048,576 an entry"):
        read(Sample("s", path, tree="Events", label=1), ["x", "sum(hits)"], progress=False)
    path = tmp_path / "zeros.root"
    write_rntuple(path, "Events", {"x": np.zeros(1000)})
    monkeypatch.setattr(samples, "MAX_BASKET_BYTES_PER_ENTRY", 4)
    monkeypatch.setattr(samples, "BASKET_SLACK_BYTES", 0)
    with pytest.raises(InputError, match=r"cluster 0 declares 8,000 bytes of the fields 'x' "
                       r"for its 1,000 entries, more than 4 an entry: the file is corrupt"):
        read(Sample("s", path, tree="Events", label=1), ["x"], progress=False)
