"""Split objects' member branches, read as ROOT reads them or refused in one line.

``data/root_written/split_objects.root`` was written by ROOT 6.40 with
``data/root_written/split_objects.py`` (its docstring gives every value): a Delphes-like
TClonesArray ``Jet`` of TVector3 split into ``Jet.fX``, ``Jet.fY``, ``Jet.fZ``; two TAttLine
objects ``a`` and ``b`` split into members named ``fLineColor``, ...; a top-level
``fLineColor`` made after ``a``. The expected values come from the generator's formulas.
Before 2026-12-05 ``Jet.fX`` was "not a branch", ``Jet/Jet.fX`` and ``a/fLineColor`` were
read as a corrupt file, and uproot's name filter read ``a/fLineColor`` with the top-level
``fLineColor``'s values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt.cli import main
from hepbdt.io.errors import InputError
from hepbdt.io.samples import Sample, read

FILE = Path(__file__).parent / "data" / "root_written" / "split_objects.root"
ENTRY = np.arange(120)
JETS = ENTRY % 4


def _read(*features: str) -> np.ndarray:
    return np.asarray(read(Sample("s", f"{FILE}:events", label=1), list(features)).X)


def test_delphes_members_read_by_root_name_and_by_path():
    X = _read("num(Jet.fX)", "max(`Jet/Jet.fX`)", "sum(`Jet.fZ`)", "Jet.fY[:, 0]",
              "`Jet/Jet.fX`[:, 0]", "Jet_size", "w")
    first = np.where(JETS > 0, ENTRY, np.nan)
    expected = np.column_stack([
        JETS, np.where(JETS > 0, ENTRY + (JETS - 1) / 4, np.nan), 100 * JETS * (JETS - 1) / 2,
        -2.0 * first, first, JETS, 0.5 + ENTRY]).astype(np.float32)
    np.testing.assert_array_equal(X, expected)


def test_member_named_like_a_top_level_branch_reads_its_own_values():
    np.testing.assert_array_equal(_read("`a/fLineColor`")[:, 0], ENTRY % 7)
    np.testing.assert_array_equal(_read("`/fLineColor`")[:, 0], 1000 + ENTRY)
    np.testing.assert_array_equal(_read("`b/fLineColor`", "`b/fLineWidth`")[:, 0], 100 + ENTRY)


def test_name_of_a_branch_and_a_member_is_refused():
    """ROOT's TTree::Draw("fLineColor") reads a's member here (made first), the top-level
    branch where that was made first: the bare name says neither."""
    with pytest.raises(InputError, match=r"'fLineColor'.*both the branch 'fLineColor' and "
                                         r"'a/fLineColor'.*`/fLineColor`"):
        _read("fLineColor")


@pytest.mark.parametrize("order", [1, -1])
def test_branches_of_one_name_read_together(order):
    """uproot 5.7 read the top-level fLineColor and the member a/fLineColor, asked for
    together by their keys in this order, both with the member's values."""
    features = ["`/fLineColor`", "`a/fLineColor`", "`b/fLineColor`", "Jet.fX[:, 0]"][::order]
    columns = {"`/fLineColor`": 1000 + ENTRY, "`a/fLineColor`": ENTRY % 7,
               "`b/fLineColor`": 100 + ENTRY, "Jet.fX[:, 0]": np.where(JETS > 0, ENTRY, np.nan)}
    np.testing.assert_array_equal(_read(*features),
                                  np.column_stack([columns[f] for f in features]))


def test_member_name_of_several_objects_names_them():
    with pytest.raises(InputError, match=r"'fLineWidth', which is not a branch.*'a/fLineWidth', "
                                         r"'b/fLineWidth'; write the one meant"):
        _read("fLineWidth")


def test_train_check_and_train_take_member_names(tmp_path, capsys):
    config = tmp_path / "split.toml"
    config.write_text(f"""tree = "events"
features = ["max(`Jet.fX`)", "num(`Jet/Jet.fY`)", "`a/fLineColor`", "w"]
[samples.signal]
files = "{FILE}"
label = "signal"
cut = "w < 60"
[samples.background]
files = "{FILE}"
label = "background"
cut = "w > 60"
[method]
n_trees = 3
""")
    assert main(["train", str(config), "--output", str(tmp_path / "out"), "--check"]) == 0
    assert "OK (2 samples, 4 features" in capsys.readouterr().out
    assert main(["train", str(config), "--output", str(tmp_path / "out")]) == 0


SLASH = FILE.with_name("slash_names.root")  # written by ROOT 6.40 with slash_names.py


def test_top_level_branch_named_with_a_slash_is_no_member():
    """``E/p`` and ``pt/m`` are top-level branches, not members: ROOT's TTree::Draw("p")
    read 10 + i here, and "m" was "Bad numerical expression". hepbdt took every key with a
    ``/`` for a member: ``p`` was refused as "both the branch 'p' and 'E/p'", and ``m``
    read ``pt/m``'s values (0.5 i)."""
    X = np.asarray(read(Sample("s", f"{SLASH}:events", label=1), ["p", "`E/p`", "`pt/m`"]).X)
    entry = np.arange(60)
    expected = np.column_stack([10 + entry, 1 + entry / 100, 0.5 * entry]).astype(np.float32)
    np.testing.assert_array_equal(X, expected)
    with pytest.raises(InputError, match=r"'m', which is not a branch"):
        read(Sample("s", f"{SLASH}:events", label=1), ["m"])


def test_train_check_names_the_members_of_a_shared_name(tmp_path, capsys):
    config = tmp_path / "shared.toml"
    config.write_text(f"""tree = "events"
features = ["fLineWidth", "w"]
[samples.signal]
files = "{FILE}"
label = "signal"
[samples.background]
files = "{FILE}"
label = "background"
""")
    assert main(["train", str(config), "--output", str(tmp_path / "out"), "--check"]) != 0
    err = capsys.readouterr().err
    assert "members of 2 split objects have this name ('a/fLineWidth', 'b/fLineWidth')" in err
