"""The Numba engine: binning, histograms, split criteria, the grower and the predictor.

Arrays in, arrays out: no Python objects in kernels and no I/O.
"""

from __future__ import annotations

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
    "warmup",
]


def warmup() -> None:
    """Compile (or load from cache) every engine kernel on a tiny problem."""
    import numpy as np

    from ..estimators import BDTClassifier, BDTRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    w = np.ones(64)
    w[::16] = -0.5  # the default negative-weight policy's neighbour search
    for boosting in ("gradient", "newton", "adaboost"):
        BDTClassifier(boosting=boosting, n_trees=2, max_depth=2).fit(X, y, w).decision_function(X)
        if boosting != "adaboost":  # the packed-histogram path, with a validation set
            BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, quantised_histograms=True).fit(
                X, y, eval_set=(X, y)).decision_function(X)
    BDTRegressor(n_trees=2, max_depth=2).fit(X, X[:, 0]).predict(X)
