"""Training and applying on a Dask cluster (the optional extra ``pip install hepbdt[dask]``).

:class:`DaskBDTClassifier` and :class:`DaskBDTRegressor` take the in-memory estimators'
options and fit dask arrays on a ``distributed.Client`` (the current one by default): data
parallel, each worker binning and keeping a contiguous run of the events, the histograms of
every tree level (leaf-wise: of every split) summed on the cluster and the splits chosen once
on the client
(:mod:`hepbdt.engine.data_parallel`). The fitted model is an ordinary hepbdt model, the
in-memory one bit for bit at the same bin edges. :func:`apply` scores ntuples on the
workers, one task an output file. :func:`connect` opens a client with a timeout. Names are
imported lazily; without Dask installed they raise an ImportError that gives the install
command.
"""

from __future__ import annotations

from .._lazy import lazy_exports

_LAZY = {
    "DaskBDTClassifier": "hepbdt.dask._estimators",
    "DaskBDTRegressor": "hepbdt.dask._estimators",
    "WorkerLostError": "hepbdt.dask._cluster",
    "WorkerPausedError": "hepbdt.dask._cluster",
    "ClusterError": "hepbdt.dask._cluster",
    "connect": "hepbdt.dask._cluster",
    "apply": "hepbdt.dask._apply",
    "require_dask": "hepbdt.dask._cluster",
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
