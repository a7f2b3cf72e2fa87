"""ROOT in and out: samples of ntuples to a Dataset, score trees back to ROOT.

:class:`Sample` and :func:`read` turn ROOT trees (read with uproot and awkward) into a
:class:`Dataset` of float32 features, labels, weights and event identifiers;
:func:`write_scores` writes score trees and :func:`read_scores` reads them back. Nothing
here knows about decision trees (scoring ntuples with a model is :mod:`hepbdt.scoring`).
Every bad input raises an :class:`InputError` subclass that names the file, tree and
branch or expression.
"""

from __future__ import annotations

from typing import Any

from hepbdt.io.dataset import NORM_MODES, SPLIT_MODES, Dataset
from hepbdt.io.errors import (
    BadValueError,
    BranchTypeError,
    CompressionError,
    EmptySelectionError,
    ExpressionError,
    InputError,
    MissingBranchError,
    MissingFileError,
    MissingTreeError,
    SavedRulesError,
)
from hepbdt.io.expressions import FUNCTIONS, Expression
from hepbdt.io.samples import Sample, read
from hepbdt.io.writers import branch_name, read_class_names, read_scores, write_scores

__all__ = [
    "Sample",
    "read",
    "Dataset",
    "write_scores",
    "read_class_names",
    "read_scores",
    "branch_name",
    "Expression",
    "FUNCTIONS",
    "SPLIT_MODES",
    "NORM_MODES",
    "InputError",
    "MissingFileError",
    "MissingTreeError",
    "MissingBranchError",
    "BranchTypeError",
    "SavedRulesError",
    "ExpressionError",
    "EmptySelectionError",
    "BadValueError",
    "CompressionError",
]


def __getattr__(name: str) -> Any:
    # old names only: imported when one is used
    from hepbdt._lazy import moved

    return moved(__name__, name, {"apply": "hepbdt.scoring"})
