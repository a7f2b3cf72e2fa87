"""hepbdt: boosted decision trees for particle physics.

Reads ROOT ntuples, trains with a Numba histogram engine (AdaBoost, epsilon-boost,
gradient and regularised second-order boosting), and writes what an analysis needs:
ROC curves, overtraining checks, rankings, ROOT score trees, JSON and TMVA XML models.
Public names are imported lazily so that ``import hepbdt`` stays cheap.
"""

from __future__ import annotations

from ._lazy import lazy_exports
from ._version import __version__

_LAZY = {
    "BDTClassifier": "hepbdt.estimators",
    "BDTRegressor": "hepbdt.estimators",
    "warmup": "hepbdt.estimators",
    "load_model": "hepbdt.persistence",
    "Forest": "hepbdt.model",
    "KFoldModel": "hepbdt.kfold",
    "Sample": "hepbdt.io",
    "Dataset": "hepbdt.io",
    "read": "hepbdt.io",
    "write_scores": "hepbdt.io",
    "apply": "hepbdt.scoring",
    "report": "hepbdt.report",
    "load_config": "hepbdt.analysis",
    "train": "hepbdt.analysis",
}

_SUBMODULES = ("evaluation", "plotting", "interop", "engine", "io", "analysis")

__all__ = ["__version__", *_LAZY, *_SUBMODULES]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, _SUBMODULES)
