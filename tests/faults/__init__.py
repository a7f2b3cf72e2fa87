"""The fault catalogue's entries: one :class:`Fault` per bad input or unlucky event.

Each module here defines ``FAULTS``, a list of :class:`Fault`; ``tests/test_fault_catalogue.py``
runs all of them as one parametrised table through the ``hepbdt`` command line and checks
the exit status, that stderr is exactly one ``hepbdt: error:`` line matching ``expected``
(no traceback), and that nothing is left behind (no temporary or staging files, and
whatever ``left`` checks).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


@dataclass
class Fault:
    """One catalogue row.

    name : the row's id.
    setup : builds the inputs in a fresh folder and returns the ``hepbdt`` arguments.
    expected : a regular expression the error line must match (after ``hepbdt: error:``).
    status : the exit status (2: usage and configuration mistakes; 1: failures while
        running).
    left : optional check of the folder afterwards (e.g. the previous outputs intact).
    """

    name: str
    setup: Callable[[Path], list[str]]
    expected: str
    status: int = 2
    left: Callable[[Path], None] | None = None


def tiny_config(folder: Path, extra: str = "", method: str = "n_trees = 3\nmax_depth = 2",
                features: str = '["HT", "MET_pt", "pt1"]', split: str = "train_fraction = 0.5",
                aliases: str = 'pt1 = "Jet_pt[:, 0]"', top: str = "") -> Path:
    """A small analysis configuration on the shipped ntuples, written to folder/a.toml."""
    text = f'''{top}
title = "fault"
tree = "Events"
weight = "genWeight * xsec * lumi / sumGenWeight"
event = "event"
features = {features}

[aliases]
{aliases}

[samples.signal]
files = "{DATA / 'signal.root'}"
label = "signal"

[samples.ttbar]
files = "{DATA / 'background_ttbar.root'}"
label = "background"

[split]
{split}

[method]
{method}

[output]
directory = "{folder / 'out'}"
report = false
figures = false
{extra}
'''
    path = folder / "a.toml"
    path.write_text(text)
    return path
