"""Shared test fixtures: the ROOT-written reference files in ../shared (skip when absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def tmva_inputs(name: str) -> np.ndarray:
    """The events behind a TMVA fixture of ../shared/tmva, float32 (n, m), in its reader
    CSV's order: TreeS then TreeB of tmva_class_example.root (var1..var4) for the
    ``ClassExample_*`` models, TreeR of tmva_reg_example.root (var1, var2) for the others."""
    uproot = pytest.importorskip("uproot")
    if name.startswith("Class"):
        names, trees, file = ["var1", "var2", "var3", "var4"], ("TreeS", "TreeB"), "tmva_class_example.root"
    else:
        names, trees, file = ["var1", "var2"], ("TreeR",), "tmva_reg_example.root"
    with uproot.open(SHARED / "data" / file) as f:
        parts = [f[tree].arrays(names, library="np") for tree in trees]
    return np.concatenate([np.column_stack([p[k] for k in names]) for p in parts]).astype(np.float32)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the checkout (tests skip without it)."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED


@pytest.fixture(scope="session")
def tmva_class_data(shared_dir):
    """tmva_class_example.root: signal TreeS, background TreeB weighted by `weight`, and a
    seeded 50/50 split. Returns (X float32, y int (1 signal), w float64, train mask)."""
    uproot = pytest.importorskip("uproot")
    names = ["var1", "var2", "var3", "var4"]
    with uproot.open(shared_dir / "data" / "tmva_class_example.root") as f:
        s = f["TreeS"].arrays(names, library="np")
        b = f["TreeB"].arrays([*names, "weight"], library="np")
    X = np.concatenate([np.column_stack([s[k] for k in names]),
                        np.column_stack([b[k] for k in names])]).astype(np.float32)
    y = np.concatenate([np.ones(len(s["var1"]), int), np.zeros(len(b["var1"]), int)])
    w = np.concatenate([np.ones(len(s["var1"])), b["weight"]]).astype(np.float64)
    train = np.random.default_rng(100).random(len(y)) < 0.5
    return X, y, w, train


@pytest.fixture(scope="session")
def tmva_class_split(tmva_class_data):
    """The tutorial data split: (X_train, y_train, w_train, X_test, y_test, w_test)."""
    X, y, w, train = tmva_class_data
    return X[train], y[train], w[train], X[~train], y[~train], w[~train]


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 single-threaded worker processes, for one module's Dask tests
    (a module may define its own)."""
    from .test_dask import _start_cluster  # skips the module when Dask is not installed

    cluster, dask_client = _start_cluster()
    yield dask_client
    dask_client.close()
    cluster.close()
