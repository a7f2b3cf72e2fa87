"""Deprecated: the training workflow moved to :mod:`hepbdt.analysis` (and
:class:`~hepbdt.kfold.KFoldModel` to :mod:`hepbdt.kfold`, ``load`` to
:func:`hepbdt.load_model`). These names keep working until hepbdt 0.3, with a warning."""

from __future__ import annotations

from typing import Any

_HOMES = {
    "KFoldModel": "hepbdt.kfold", "KFOLD_FORMAT": "hepbdt.kfold",
    "TrainResult": "hepbdt.analysis", "train": "hepbdt.analysis",
    "default_output_dir": "hepbdt.analysis", "report_from_scores": "hepbdt.analysis",
    "summarise": "hepbdt.analysis.summary", "draw_figures": "hepbdt.analysis.outputs",
    "write_report": "hepbdt.analysis.outputs", "load": "hepbdt.persistence",
}


def __getattr__(name: str) -> Any:
    # old names only: imported when one is used
    from ._lazy import moved

    if name == "load":  # renamed as well as moved
        return moved(__name__, "load", {"load": "hepbdt.persistence"}, new_name="load_model")
    return moved(__name__, name, _HOMES)
