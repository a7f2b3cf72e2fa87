"""What an output set may replace, where it goes and with what mode: files its manifest
does not list are refused in every subfolder, a link to a folder is written through, and
the folder keeps its mode (or the umask's)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hepbdt.output_set import OutputSet, OutputSetError


def _commit(target: Path, files: dict[str, str]) -> None:
    out = OutputSet(target)
    with out as staging:
        for name, text in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(text)
        out.commit()


def test_a_file_its_manifest_does_not_list_is_refused_in_any_subfolder(tmp_path):
    target = tmp_path / "run"
    _commit(target, {"model.json": "{}", "figures/roc.png": "png"})
    (target / "figures" / "paper_fig1.pdf").write_text("my figure")
    with pytest.raises(OutputSetError, match=r"did not write \(figures/paper_fig1\.pdf\)"):
        _commit(target, {"model.json": "{}"})
    assert (target / "figures" / "paper_fig1.pdf").read_text() == "my figure"


def test_a_folder_without_a_manifest_is_not_replaced(tmp_path):
    """A user's summary.txt (a name hepbdt writes) in a folder of no manifest was deleted."""
    target = tmp_path / "run"
    target.mkdir()
    (target / "summary.txt").write_text("my notes")
    with pytest.raises(OutputSetError, match=r"did not write \(summary\.txt\)"):
        _commit(target, {"summary.txt": "hepbdt"})
    assert (target / "summary.txt").read_text() == "my notes"


def test_a_link_to_a_folder_is_written_through(tmp_path):
    """The link was swapped for a new folder beside it, the new set not where it points."""
    storage = tmp_path / "big-disk" / "run"
    storage.mkdir(parents=True)
    link = tmp_path / "results"
    link.symlink_to(storage)
    _commit(link, {"model.json": "first"})
    _commit(link, {"model.json": "second"})
    assert link.is_symlink() and os.readlink(link) == str(storage)
    assert (storage / "model.json").read_text() == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big-disk", "results"]


def test_the_folder_keeps_its_mode_or_takes_the_umasks(tmp_path):
    """Every run left a private (0700) folder: collaborators lost access."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o2775)
    _commit(shared, {"model.json": "{}"})
    assert stat.S_IMODE(shared.stat().st_mode) == 0o2775
    old = os.umask(0o027)
    try:
        _commit(tmp_path / "new", {"model.json": "{}"})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o750
