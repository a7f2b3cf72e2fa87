"""Whether ``hepbdt.warmup()`` compiles every kernel that in-memory fits use.

In a child process with an empty Numba cache (a temporary ``NUMBA_CACHE_DIR``) and
``NUMBA_DEBUG_CACHE=1``, runs ``hepbdt.warmup()`` and then fits of every booster on both
sides of the grower's event-count switches, leaf-wise and depth-wise, each
negative-weight policy, both decorrelation losses and the DDT map, three classes, every
regression loss, trees deeper than the dense prediction's levels, staged predictions,
automatic tree counts and column draws; prints each kernel that a fit after the warmup
compiled and saved (exit status 1 if any). Takes a few minutes: every kernel compiles.

    python scripts/check_warmup.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

MARKER = "=== warmup done"

CHILD = """
import warnings
import numpy as np
import hepbdt
from hepbdt import BDTClassifier, BDTRegressor

warnings.simplefilter("ignore")
hepbdt.warmup()
print("MARKER", flush=True)
rng = np.random.default_rng(0)


def data(n):
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (rng.random(n) < 0.5).astype(int)
    X[y == 1, 0] += 0.5
    return X, y


Xs, ys = data(300)
Xl, yl = data(70_000)
w = np.ones(300)
w[::10] = -0.5
for b in ("gradient", "newton", "adaboost", "realadaboost", "eps", "bagging"):
    for n_jobs in (1, 2):
        for X, y in ((Xs, ys), (Xl, yl)):
            BDTClassifier(boosting=b, n_trees=2, max_depth=3, n_jobs=n_jobs).fit(
                X, y).predict_proba(X)
            BDTClassifier(boosting=b, n_trees=2, max_leaves=8, max_depth=None,
                          n_jobs=n_jobs).fit(X, y)
for b in ("gradient", "newton"):
    for X, y in ((Xs, ys), (Xl, yl)):
        BDTClassifier(boosting=b, decorrelation="flatness", decorrelation_strength=1.0,
                      n_trees=2, max_depth=2).fit(X, y, decorrelate=X[:, 1])
BDTClassifier(boosting="adaboost", decorrelation="uboost", decorrelation_steps=2,
              n_trees=2, max_depth=2).fit(Xs, ys, decorrelate=Xs[:, 1])
BDTClassifier(n_trees=2, max_depth=2, decorrelation_map="ddt").fit(
    Xs, ys, decorrelate=Xs[:, 1]).decision_function(Xs)
for policy in ("pair", "regress", "inverse_boost", "abs", "ignore", "keep"):
    for b in ("newton", "adaboost") if policy != "inverse_boost" else ("adaboost",):
        BDTClassifier(boosting=b, n_trees=2, max_depth=2, negative_weights=policy).fit(Xs, ys, w)
for b in ("gradient", "newton", "adaboost"):
    for X in (Xs, Xl):
        BDTClassifier(boosting=b, n_trees=2, max_depth=2).fit(
            X, np.arange(len(X)) % 3).predict_proba(Xs)
for loss in ("squared", "absolute", "huber"):
    for b in ("gradient", "newton"):
        for X in (Xs, Xl):
            BDTRegressor(boosting=b, loss=loss, n_trees=2, max_depth=2).fit(
                X, X[:, 0]).predict(Xs)
BDTRegressor(n_trees=2, max_leaves=200, max_depth=None, min_child_weight=0).fit(
    Xl[:5000], Xl[:5000, 0] * 100).predict(Xl)
list(BDTClassifier(n_trees=3, max_depth=2).fit(Xs, ys).staged_decision_function(Xs))
BDTClassifier(n_trees="auto").fit(Xl, yl)
BDTClassifier(n_trees=3, max_depth=2, early_stopping_rounds=1).fit(Xs, ys, eval_set=[(Xs, ys)])
BDTClassifier(n_trees=2, max_depth=2, subsample=0.5, colsample_bytree=0.7,
              colsample_bylevel=0.7).fit(Xl, yl)
""".replace("MARKER", MARKER)


def main() -> int:
    """Run the child in an empty cache; print what compiled after the warmup."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_DEBUG_CACHE="1")
        run = subprocess.run([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, check=False)
    if run.returncode != 0 or MARKER not in run.stdout:
        print(run.stdout[-4000:])
        print("the fits failed")
        return 2
    after = run.stdout.split(MARKER, 1)[1]
    saved = sorted(set(re.findall(r"data saved to .*[/\\]([^/\\]+?)-\d+\.py\d+\.\d+\.nbc", after)))
    for name in saved:
        print(f"compiled after warmup: {name}")
    print(f"{len(saved)} kernels compiled after hepbdt.warmup()")
    return 1 if saved else 0


if __name__ == "__main__":
    sys.exit(main())
