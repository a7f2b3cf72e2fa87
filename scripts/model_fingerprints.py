"""Fingerprints of the models a panel of settings trains, to check that a change to the
engine leaves every model the same, bit for bit.

``write`` fits 78 models (classification, three classes and regression; every booster
family, packed and exact histograms, subsampling modes, leaf-wise growth, column
subsampling, automatic tree counts, negative weights, missing values; 4,000 events, where
small trees grow in one compiled call, and 80,000) and stores a SHA-256 of each model's
predictions on 5,000 events. ``compare`` says which differ (exit status 1 if any). Run
``write`` with each version of the code (for example through ``PYTHONPATH``), then compare:

    PYTHONPATH=/path/to/old/checkout python scripts/model_fingerprints.py write old.json
    python scripts/model_fingerprints.py write new.json
    python scripts/model_fingerprints.py compare old.json new.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

CLASSIFIER_SETTINGS = (
    {"boosting": "newton"}, {"boosting": "gradient"},
    {"boosting": "newton", "quantised_histograms": True, "min_node_size": 0},
    {"boosting": "gradient", "quantised_histograms": False},
    {"boosting": "newton", "subsample": 0.5},
    {"boosting": "gradient", "subsample": 0.7, "subsample_mode": "poisson"},
    {"boosting": "gradient", "subsample": 0.6, "subsample_mode": "weighted"},
    {"boosting": "newton", "max_leaves": 20, "max_depth": None},
    {"boosting": "gradient", "max_leaves": 40, "max_depth": None},
    {"boosting": "newton", "colsample_bynode": 0.5}, {"boosting": "gradient", "max_depth": 7},
    {"boosting": "newton", "n_trees": "auto"}, {"boosting": "gradient", "n_trees": "auto"},
    {"boosting": "adaboost"}, {"boosting": "realadaboost"},
)
MULTICLASS_SETTINGS = ({"boosting": "gradient"}, {"boosting": "newton"}, {"boosting": "adaboost"})
REGRESSOR_SETTINGS = ({"boosting": "gradient"}, {"boosting": "newton"},
                      {"boosting": "gradient", "loss": "huber"},
                      {"boosting": "newton", "loss": "absolute"}, None)  # None: the defaults
SIZES = (4000, 80_000)


def _data():
    """Features with 3 % missing values; binary, three-class and continuous targets;
    weights, and the same with 400 negative."""
    rng = np.random.default_rng(7)
    n = SIZES[-1]
    X = rng.normal(size=(n, 8)).astype(np.float32)
    X[rng.random(X.shape) < 0.03] = np.nan
    x = np.nan_to_num(X)
    z = x[:, 0] + x[:, 1] ** 2 - x[:, 2] * x[:, 3]
    y = (z + rng.normal(size=n) > 1).astype(int)
    y3 = np.digitize(z + rng.normal(size=n), [0.0, 1.5])
    t = z + rng.normal(size=n)
    w = rng.gamma(2, 1, n)
    w_negative = w.copy()
    w_negative[:400] *= -1
    return X, y, y3, t, w, w_negative


def _digest(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def fingerprints() -> dict[str, str]:
    """Model name -> SHA-256 of its predictions."""
    import hepbdt

    X, y, y3, t, w, w_negative = _data()
    probe = X[:5000]
    out = {}
    for i, settings in enumerate(CLASSIFIER_SETTINGS):
        for n in SIZES:
            for name, weights in (("w", w), ("negative", w_negative)):
                model = hepbdt.BDTClassifier(n_trees=12, max_depth=4, random_state=3)
                model.set_params(**settings).fit(X[:n], y[:n], weights[:n])
                out[f"classifier{i}-{n}-{name}"] = _digest(model.decision_function(probe))
    for i, settings in enumerate(MULTICLASS_SETTINGS):
        for n in SIZES:
            model = hepbdt.BDTClassifier(n_trees=8, max_depth=4, random_state=3)
            model.set_params(**settings).fit(X[:n], y3[:n], w[:n])
            out[f"multiclass{i}-{n}"] = _digest(model.predict_proba(probe))
    for i, settings in enumerate(REGRESSOR_SETTINGS):
        for n in SIZES:
            model = (hepbdt.BDTRegressor(random_state=1) if settings is None else
                     hepbdt.BDTRegressor(n_trees=12, max_depth=4, random_state=3).set_params(**settings))
            out[f"regressor{i}-{n}"] = _digest(model.fit(X[:n], t[:n], w[:n]).predict(probe))
    for n in SIZES:
        model = hepbdt.BDTClassifier(random_state=1).fit(X[:n], y[:n], w[:n])
        out[f"default-classifier-{n}"] = _digest(model.decision_function(probe))
    return out


def main() -> int:
    """``write OUT`` or ``compare A B``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("write").add_argument("out", type=Path)
    compare = sub.add_parser("compare")
    compare.add_argument("a", type=Path)
    compare.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "write":
        found = fingerprints()
        args.out.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{len(found)} models -> {args.out}")
        return 0
    a, b = (json.loads(p.read_text()) for p in (args.a, args.b))
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"{len(a.keys() & b.keys()) - len(set(differ) & a.keys() & b.keys())} of "
          f"{len(a.keys() | b.keys())} models the same" + (f"; differ: {', '.join(differ)}"
                                                            if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
