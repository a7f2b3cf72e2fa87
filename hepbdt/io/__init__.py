"""ROOT in and out: samples of ntuples to a Dataset, scores and friend trees back to ROOT.

:class:`Sample` and :func:`read` turn ROOT trees (read with uproot and awkward) into a
:class:`Dataset` of float32 features, labels, weights and event identifiers;
:func:`write_scores` and :func:`apply` write score trees and friend trees. Nothing here
knows about decision trees. Every bad input raises an :class:`InputError` subclass that
names the file, tree and branch or expression.
"""

from __future__ import annotations

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
)
from hepbdt.io.expressions import FUNCTIONS, Expression
from hepbdt.io.samples import Sample, read
from hepbdt.io.writers import apply, branch_name, write_scores

__all__ = [
    "Sample",
    "read",
    "Dataset",
    "write_scores",
    "apply",
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
    "ExpressionError",
    "EmptySelectionError",
    "BadValueError",
    "CompressionError",
]
