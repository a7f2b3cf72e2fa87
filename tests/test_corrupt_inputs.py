"""Corrupt ROOT files and jagged-in-where features give one InputError naming the file."""

import struct
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt.io.errors import ExpressionError, InputError
from hepbdt.io.samples import Sample, Source, get_tree, read


def _write(path):
    rng = np.random.default_rng(1)
    n = 200
    counts = rng.integers(0, 4, n)
    pt = ak.unflatten(rng.exponential(50, counts.sum()).astype(np.float32), counts)
    with uproot.recreate(path, compression=None) as f:
        f.mktree("Events", {"HT": np.float32, "Jet_pt": "var * float32"})
        f["Events"].extend({"HT": rng.normal(200, 40, n).astype(np.float32), "Jet_pt": pt})
    return path


def _corrupt(path, out, offset_in_key, fmt, value):
    """Overwrite bytes of Jet_pt's first basket, as the audit's reproducers do."""
    branch = uproot.open(path)["Events"]["Jet_pt"]
    key, basket = branch.basket_key(0), branch.basket(0)
    data = bytearray(path.read_bytes())
    where = key.fSeekKey + (basket.member("fLast") + 8 if offset_in_key is None else offset_in_key)
    struct.pack_into(fmt, data, where, value)
    out.write_bytes(bytes(data))
    return out


def test_corrupt_jagged_offsets_are_refused(tmp_path):
    bad = _corrupt(_write(tmp_path / "ok.root"), tmp_path / "bad.root", None, ">i", 0x7FFFFFFF)
    with pytest.raises(InputError, match=r"bad\.root.*'Events'.*branch 'Jet_pt' is corrupt"):
        read(Sample("s", bad, label=1), ["HT", "num(Jet_pt)"])


def test_corrupt_basket_key_is_an_input_error(tmp_path):
    bad = _corrupt(_write(tmp_path / "ok.root"), tmp_path / "bad.root", 14, ">h", 0x7FFF)
    with pytest.raises(InputError, match=r"bad\.root.*corrupt or not a ROOT file uproot can read "
                                         r"\(uproot: DeserializationError"):
        read(Sample("s", bad, label=1), ["HT", "Jet_pt[:, 0]"])


class _BrokenFile:
    """An open file whose tree metadata uproot cannot deserialise."""

    def __init__(self, error):
        self.error = error

    def classnames(self, cycle=False):
        return {"Events": "TTree"}

    def __getitem__(self, name):
        raise self.error


@pytest.mark.parametrize("error", [NotImplementedError("memberwise serialization"),
                                   ValueError("unknown class TL"), AssertionError()])
def test_corrupt_tree_metadata_is_an_input_error(error):
    with pytest.raises(InputError, match=rf"'x\.root'.*corrupt.*{type(error).__name__}"):
        get_tree(_BrokenFile(error), Source("x.root", "Events"), "sample 's'")


def test_hepbdt_errors_and_memory_errors_pass_through():
    own = InputError("own")
    with pytest.raises(InputError) as info:
        get_tree(_BrokenFile(own), Source("x.root", None), "sample 's'")
    assert info.value is own
    with pytest.raises(MemoryError):
        get_tree(_BrokenFile(MemoryError()), Source("x.root", None), "sample 's'")


def test_where_with_a_jagged_branch_and_a_number_is_refused(tmp_path):
    """Element by element, as ROOT's HT > 100 ? Jet_pt : 0: a list per event, refused as a
    feature with the reductions that make it one number."""
    path = _write(tmp_path / "ok.root")
    with pytest.raises(ExpressionError, match=r"where\(HT > 100, Jet_pt, 0\)' gives a list per "
                                              r"event, not one number; reduce it.*sum\(x\)"):
        read(Sample("s", path, label=1), ["where(HT > 100, Jet_pt, 0)"])


def _tree_entries_set_to(path, out, value):
    """The tree's fEntries (its first 64-bit count of events in its key) set to ``value``."""
    key = uproot.open(path).key("Events")
    data = bytearray(path.read_bytes())
    region = bytes(data[key.fSeekKey:key.fSeekKey + key.fNbytes])
    struct.pack_into(">q", data, key.fSeekKey + region.index(struct.pack(">q", 200)), value)
    out.write_bytes(bytes(data))
    assert uproot.open(out)["Events"].num_entries == value  # the patch hit fEntries
    return out


@pytest.mark.parametrize(("value", "message"), [
    (-5, r"claims -5 entries; the file is corrupt"),
    (10**12, r"claims 1,000,000,000,000 entries but branch 'HT' holds 200"),
])
def test_a_tree_entry_count_that_cannot_be_true_is_refused(tmp_path, value, message):
    bad = _tree_entries_set_to(_write(tmp_path / "ok.root"), tmp_path / "bad.root", value)
    with pytest.raises(InputError, match=rf"bad\.root.*'Events'.*{message}"):
        read(Sample("s", bad, label=1), ["HT"])


def test_a_truncated_file_is_named_truncated_when_opened_and_when_read(tmp_path):
    # uproot's "expected Chunk of length ..." OSError came out bare from read(), and
    # `hepbdt train --check` passed the file.
    from hepbdt.analysis import check_inputs, load_config
    from hepbdt.analysis.config import ConfigError
    from hepbdt.io.samples import _corrupt_error

    full = tmp_path / "full.root"
    with uproot.recreate(full) as f:
        tree = f.mktree("Events", {"x": np.float32})
        for i in range(4):
            tree.extend({"x": np.random.default_rng(i).normal(size=20000).astype(np.float32)})
    data = full.read_bytes()
    cut = tmp_path / "cut.root"
    cut.write_bytes(data[: int(len(data) * 0.9)])
    with pytest.raises(InputError, match=r"is [\d,]+ bytes, but its header says.*truncated"):
        read(Sample("s", str(cut), tree="Events", label=1), ["x"])
    err = _corrupt_error(OSError("expected Chunk of length 74363, received 35050 bytes"), "s")
    assert isinstance(err, InputError) and "truncated" in str(err)
    config = tmp_path / "c.toml"
    config.write_text(f'tree = "Events"\nfeatures = ["x"]\n[samples.a]\nfiles = "{cut}"\n'
                      f'label = "signal"\n[samples.b]\nfiles = "{full}"\nlabel = "background"\n')
    with pytest.raises(ConfigError, match=r"\[samples.a\] files: .*truncated"):
        check_inputs(load_config(config))


ROOT_WRITTEN = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tmva_class_example.root"


@pytest.mark.skipif(not ROOT_WRITTEN.is_file(), reason="../shared/data is not present")
def test_a_truncated_root_written_file_is_one_line_at_the_configuration_check(tmp_path):
    # ROOT writes the directory at the end of the file, so uproot.open fails before the
    # length check; its multi-line message came through as it was
    from hepbdt.analysis import check_inputs, load_config
    from hepbdt.analysis.config import ConfigError

    cut = tmp_path / "cut.root"
    cut.write_bytes(ROOT_WRITTEN.read_bytes()[:100_000])
    config = tmp_path / "c.toml"
    config.write_text(f'features = ["var1"]\n[samples.a]\nfiles = "{cut}:TreeS"\n'
                      f'label = "signal"\n[samples.b]\nfiles = "{ROOT_WRITTEN}:TreeB"\n'
                      'label = "background"\n')
    with pytest.raises(ConfigError) as info:
        check_inputs(load_config(config))
    message = str(info.value)
    assert "\n" not in message
    assert "[samples.a] files: cannot open" in message
    assert "(100000 bytes: truncated, or not a ROOT file)" in message
