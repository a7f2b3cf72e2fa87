"""Fit time against XGBoost beyond the headline benchmark: other sample sizes, depths,
feature counts, and the ``gradient`` booster (TMVA's BDTG).

Synthetic HIGGS-like data (``_data.higgs_like``), positive weights, learning rate 0.1,
255 bins, all cores; hepbdt and XGBoost (``hist``) fitted alternately in the same process
(kernels loaded from the cache first), ``--repeats`` times each; the median is quoted.

    python benchmarks/bench_shapes.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import higgs_like, machine  # noqa: E402

# (events, features, depth, trees, hepbdt booster)
SHAPES = [
    (10_000, 28, 6, 100, "newton"),
    (50_000, 28, 6, 100, "newton"),
    (200_000, 28, 6, 100, "newton"),
    (1_000_000, 10, 4, 100, "newton"),
    (1_000_000, 28, 3, 100, "newton"),
    (1_000_000, 28, 8, 50, "newton"),
    (1_000_000, 28, 6, 50, "gradient"),
]


def _timed(model, X, y, w) -> float:
    t0 = time.perf_counter()
    model.fit(X, y, sample_weight=w)
    return time.perf_counter() - t0


def main() -> None:
    """Print one table row per shape: hepbdt and XGBoost fit seconds and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    import xgboost as xgb

    import hepbdt

    threads = os.cpu_count()
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(1000, 3)).astype(np.float32)
    for q in (False, True):  # load the cached kernels of both histogram kinds
        hepbdt.BDTClassifier(boosting="newton", n_trees=2, max_depth=2,
                             quantised_histograms=q).fit(Xs, Xs[:, 0] > 0)
    print(f"# {machine()}; median of {args.repeats}")
    print("| events | features | depth | trees | hepbdt booster | hepbdt fit s | XGBoost fit s | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, m, depth, trees, boosting in SHAPES:
        X, y, w = higgs_like(n, seed=1)
        X = np.ascontiguousarray(X[:, :m])
        ours, theirs = [], []
        for _ in range(args.repeats):
            ours.append(_timed(hepbdt.BDTClassifier(
                boosting=boosting, n_trees=trees, max_depth=depth, learning_rate=0.1, n_jobs=threads,
                reg_lambda=1.0, min_child_weight=1.0), X, y, w))
            theirs.append(_timed(xgb.XGBClassifier(
                tree_method="hist", n_estimators=trees, max_depth=depth, max_bin=255, learning_rate=0.1,
                n_jobs=threads, reg_lambda=1.0, min_child_weight=1.0), X, y, w))
        h, x = statistics.median(ours), statistics.median(theirs)
        print(f"| {n:,} | {m} | {depth} | {trees} | {boosting} | {h:.2f} | {x:.2f} | {h / x:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
