"""The Numba engine: binning, histograms, split criteria, the grower and the predictor.

Arrays in, arrays out: no Python objects in kernels and no I/O.
"""

from __future__ import annotations

# first: _types sets the OpenMP and thread-count environment, which Numba reads once when
# it is imported (by the modules below)
from . import _types  # noqa: F401, I001
from .binning import BinMapper, apply_bins, fit_bin_edges
from .grower import GrownTree, grow_tree
from .predict import predict_binned, predict_per_tree, predict_raw
from .split import SplitParams

__all__ = [
    "BinMapper",
    "GrownTree",
    "SplitParams",
    "apply_bins",
    "fit_bin_edges",
    "grow_tree",
    "predict_binned",
    "predict_per_tree",
    "predict_raw",
]


def __getattr__(name: str):
    # old names only: imported when one is used
    from .._lazy import moved

    return moved(__name__, name, {"warmup": "hepbdt.estimators"})
