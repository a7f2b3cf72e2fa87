"""Shared test fixtures: the ROOT-written reference files in ../shared (skip when absent)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the checkout (tests skip without it)."""
    if not (SHARED / "data").is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED


@pytest.fixture(scope="session")
def tmva_class_split(shared_dir):
    """tmva_class_example.root: signal TreeS, background TreeB weighted by `weight`;
    a seeded 50/50 split. Returns (X_train, y_train, w_train, X_test, y_test, w_test)."""
    uproot = pytest.importorskip("uproot")
    with uproot.open(shared_dir / "data" / "tmva_class_example.root") as f:
        s = f["TreeS"].arrays(["var1", "var2", "var3", "var4"], library="np")
        b = f["TreeB"].arrays(["var1", "var2", "var3", "var4", "weight"], library="np")
    Xs = np.column_stack([s[k] for k in ("var1", "var2", "var3", "var4")]).astype(np.float32)
    Xb = np.column_stack([b[k] for k in ("var1", "var2", "var3", "var4")]).astype(np.float32)
    X = np.concatenate([Xs, Xb])
    y = np.concatenate([np.ones(len(Xs), int), np.zeros(len(Xb), int)])
    w = np.concatenate([np.ones(len(Xs)), b["weight"]]).astype(np.float64)
    train = np.random.default_rng(100).random(len(y)) < 0.5
    return X[train], y[train], w[train], X[~train], y[~train], w[~train]
