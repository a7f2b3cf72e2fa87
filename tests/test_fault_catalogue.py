"""The fault catalogue: every bad input and unlucky event of ``tests/faults/*`` gives one
``hepbdt: error:`` line (no traceback), the right exit status, and leaves nothing behind."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import tests.faults as faults
from hepbdt.cli import main

CATALOGUE = [fault for info in pkgutil.iter_modules(faults.__path__)
             for fault in importlib.import_module(f"tests.faults.{info.name}").FAULTS]
LEFTOVERS = ("*.tmp", "*.tmp-*", ".*.tmp", "*hepbdt-staging*", "*hepbdt-old*", "*.hepbdt-lock")


def test_the_catalogue_has_unique_names() -> None:
    names = [f.name for f in CATALOGUE]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("fault", CATALOGUE, ids=[f.name for f in CATALOGUE])
def test_fault(fault, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = fault.setup(tmp_path)
    capsys.readouterr()
    try:
        status = main(argv)
    finally:
        err = capsys.readouterr().err
        if fault.left is not None:
            fault.left(tmp_path)  # also undoes what the setup holds (a lock, a limit)
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    errors = [line for line in lines if line.startswith("hepbdt: error:")]
    assert len(errors) == 1, err
    assert re.search(fault.expected, errors[0]), f"{fault.expected!r} not in {errors[0]!r}"
    assert status == fault.status, (status, err)
    left = [p for pattern in LEFTOVERS for p in tmp_path.rglob(pattern)]
    assert not left, left
