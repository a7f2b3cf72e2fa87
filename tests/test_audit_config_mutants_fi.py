"""Audit FI (2026-12-05): analysis configurations mutated key by key (deleted, retyped, set
to extremes, moved, misspelt) must train what they say or be refused by ``--check`` with
one ``hepbdt: error:`` line naming the key. The mutants that passed are pinned here."""

from __future__ import annotations

from pathlib import Path

import pytest

from hepbdt.cli import main

from .faults import tiny_config


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``hepbdt train PATH --check``: the exit status and stderr's error lines."""
    status = main(["train", str(path), "--check"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, "\n".join(line for line in err.splitlines() if "note:" not in line)


def test_an_empty_samples_table_is_refused(tmp_path, capsys):
    # `[samples]` with no sample passed --check ("OK (0 samples ...)"); train then failed
    # in hepbdt.read with a message naming no key of the configuration
    text = tiny_config(tmp_path).read_text()
    head, tail = text.split("[samples.signal]")
    path = tmp_path / "a.toml"
    path.write_text(head + "[samples]\n\n[split]" + tail.split("[split]")[1])
    status, err = check(path, capsys)
    assert status == 2
    assert err.startswith("hepbdt: error: ") and len(err.splitlines()) == 1
    assert f"{path}: samples: holds no sample; add a [samples.NAME] table" in err
