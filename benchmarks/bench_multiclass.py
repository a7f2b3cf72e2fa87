"""Multi-class training: hepbdt's softmax boosting against XGBoost's and LightGBM's.

Two data sets, each split in halves (training, test; split ``i`` of ``--splits`` uses seed
``i``): ROOT's TMVA multi-class tutorial ntuple (``../shared/data``:
tmva_multiclass_example.root, TreeS, TreeB0, TreeB1, TreeB2, var1..var4; 4 classes, 8000
events) and ``_data.multiclass_like`` (5 classes, ``--events`` events x 28 features,
gamma-distributed weights). Every library at the same settings: ``--trees`` rounds of
one tree a class, depth ``--depth`` (LightGBM: ``2**depth`` leaves within that depth),
learning rate 0.1, 255 bins (``--max-bins``), lambda 1, minimum child hessian 1, all cores:

  hepbdt-newton    ``boosting="newton"``: XGBoost's multi:softprob objective; packed integer
                   histograms from 50,000 events (hepbdt's default), float64 below
  hepbdt-gradient  ``boosting="gradient"``: TMVA's multi-class BDTG (Friedman's TreeBoost)
  xgboost          ``tree_method="hist"``, ``multi:softprob``, depth-wise, float histograms
  lightgbm         ``multiclass``, leaf-wise within the depth, float histograms
  lightgbm-quant   the same with ``use_quantized_grad=True`` (integer gradients)

and multi-class AdaBoost, one K-class tree a round (``--trees`` trees of depth
``--depth``, learning rate 0.5), whose probabilities are not a log-loss minimiser (so its
row says how it compares with scikit-learn's, not with the softmax rows):

  hepbdt-samme     ``boosting="adaboost"`` with K classes: SAMME through the one grower,
                   multi-class Gini on 255 bins, depth-wise
  sklearn-samme    scikit-learn's ``AdaBoostClassifier`` (SAMME) of exact
                   ``DecisionTreeClassifier`` trees (every distinct value a cut); skipped above
                   ``SKLEARN_SAMME_EVENTS`` training events (it takes minutes a tree there)

On each split the models are fitted in turn (interleaved), so drifts in machine load hit
every library alike; the table gives medians over the splits of the weighted test
log-loss and of the fit time, each fit time's ratio to XGBoost's, and each row's mean
log-loss difference to LightGBM's over the splits with its standard error.

With ``--hepbdt-bins`` every library is given, in place of the features, hepbdt's bin
codes of them (edges fitted on each split's training half, as hepbdt's fit does), as
floats: at most ``--max-bins`` distinct values a feature, so every library keeps one bin
a code and all learn from the same bins. What differs between the rows is then the
boosting alone.

    python benchmarks/bench_multiclass.py [--splits 3] [--events 1000000] [--trees 200]
        [--depth 6] [--max-bins 255] [--only tmva-multiclass,multiclass-like]
        [--hepbdt-bins]
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

from _data import machine, multiclass_like  # noqa: E402

SHARED_DATA = HERE.parent.parent / "shared" / "data"
LIBS = ("hepbdt-newton", "hepbdt-gradient", "xgboost", "lightgbm", "lightgbm-quant",
        "hepbdt-samme", "sklearn-samme")
SKLEARN_SAMME_EVENTS = 100_000


def tmva_multiclass():
    """(X, y, w) of ROOT's multi-class tutorial, or None when the file is absent."""
    path = SHARED_DATA / "tmva_multiclass_example.root"
    if not path.exists():
        return None
    import uproot

    Xs, ys = [], []
    with uproot.open(path) as f:
        for label, tree in enumerate(("TreeS", "TreeB0", "TreeB1", "TreeB2")):
            arrays = f[tree].arrays(["var1", "var2", "var3", "var4"], library="np")
            Xs.append(np.column_stack([arrays[f"var{i}"] for i in range(1, 5)]))
            ys.append(np.full(Xs[-1].shape[0], label))
    X = np.concatenate(Xs).astype(np.float32)
    return X, np.concatenate(ys), np.ones(X.shape[0], np.float32)


def make(lib: str, trees: int, depth: int, bins: int = 255):
    """The model of one row at the shared settings."""
    threads = os.cpu_count()
    if lib == "hepbdt-samme":
        import hepbdt

        return hepbdt.BDTClassifier(boosting="adaboost", n_trees=trees, max_depth=depth,
                                    beta=0.5, max_bins=bins, min_node_size=0.0, n_jobs=threads)
    if lib == "sklearn-samme":
        from sklearn.ensemble import AdaBoostClassifier
        from sklearn.tree import DecisionTreeClassifier

        return AdaBoostClassifier(DecisionTreeClassifier(max_depth=depth), n_estimators=trees,
                                  learning_rate=0.5, random_state=0)
    if lib.startswith("hepbdt"):
        import hepbdt

        return hepbdt.BDTClassifier(boosting=lib.split("-")[1], n_trees=trees, max_depth=depth,
                                    learning_rate=0.1, max_bins=bins, reg_lambda=1.0,
                                    min_child_weight=1.0, min_node_size=0.0, n_jobs=threads)
    if lib == "xgboost":
        import xgboost as xgb

        return xgb.XGBClassifier(tree_method="hist", objective="multi:softprob",
                                 n_estimators=trees, max_depth=depth, learning_rate=0.1,
                                 max_bin=bins, reg_lambda=1.0, min_child_weight=1.0,
                                 n_jobs=threads)
    import lightgbm as lgb

    return lgb.LGBMClassifier(objective="multiclass", n_estimators=trees, max_depth=depth,
                              num_leaves=2**depth, learning_rate=0.1, max_bin=bins,
                              reg_lambda=1.0, min_child_weight=1.0, min_child_samples=1,
                              n_jobs=threads, verbose=-1,
                              use_quantized_grad=lib == "lightgbm-quant")


def log_loss(y: np.ndarray, proba: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean -ln p(true class)."""
    p = np.clip(proba[np.arange(y.size), y], 1e-15, 1.0)
    return float(np.sum(w * -np.log(p)) / np.sum(w))


def split(X, y, w, seed: int):
    """Random halves (training, test)."""
    order = np.random.default_rng(seed).permutation(y.size)
    a, b = order[: y.size // 2], order[y.size // 2:]
    return (X[a], y[a], w[a]), (X[b], y[b], w[b])


def as_bin_codes(Xa: np.ndarray, wa: np.ndarray, Xb: np.ndarray, bins: int):
    """hepbdt's bin codes of the training and test features (edges from the training
    events and weights), as float32 events x features."""
    from hepbdt.engine.binning import BinMapper

    mapper = BinMapper(bins).fit(Xa, wa)
    return tuple(np.ascontiguousarray(mapper.transform(X).T, np.float32) for X in (Xa, Xb))


def run(name: str, data, args) -> None:
    """One data set: every library on every split, interleaved; print the medians."""
    results: dict[str, dict[str, list[float]]] = {lib: {"loss": [], "fit": []} for lib in LIBS}
    for seed in range(args.splits):
        (Xa, ya, wa), (Xb, yb, wb) = split(*data, seed)
        if args.hepbdt_bins:
            Xa, Xb = as_bin_codes(Xa, wa, Xb, args.max_bins)
        if seed == 0:  # every library's first fit untimed: hepbdt's kernels come from Numba's
            for lib in LIBS:  # cache, the others' thread pools start (70,000 events: above
                if lib != "sklearn-samme":  # every event-count switch of hepbdt's grower)
                    make(lib, 2, args.depth, args.max_bins).fit(
                        Xa[:70_000], ya[:70_000], sample_weight=wa[:70_000]).predict_proba(Xb[:1000])
        for lib in LIBS:
            if lib == "sklearn-samme" and ya.size > SKLEARN_SAMME_EVENTS:
                continue
            model = make(lib, args.trees, args.depth, args.max_bins)
            start = time.perf_counter()
            model.fit(Xa, ya, sample_weight=wa)
            results[lib]["fit"].append(time.perf_counter() - start)
            results[lib]["loss"].append(log_loss(yb, model.predict_proba(Xb), wb))
            print(f"  {name} split {seed}: {lib} log-loss {results[lib]['loss'][-1]:.5f} "
                  f"fit {results[lib]['fit'][-1]:.2f} s", flush=True)
    xgb_fit = statistics.median(results["xgboost"]["fit"])
    print(f"\n{name}: {data[0].shape[0] // 2} x {data[0].shape[1]} training events, "
          f"{int(data[1].max()) + 1} classes, {args.trees} rounds of depth {args.depth}, "
          f"medians of {args.splits} splits"
          + (", every library on hepbdt's bin codes" if args.hepbdt_bins else "") + "\n")
    print("| row | test log-loss | fit s | fit / XGBoost's | mean - LightGBM's (s.e.) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    reference = np.array(results["lightgbm"]["loss"])
    for lib in LIBS:
        if not results[lib]["fit"]:
            print(f"| {lib} | skipped: more than {SKLEARN_SAMME_EVENTS:,} training events "
                  "| | | |")
            continue
        fit = statistics.median(results[lib]["fit"])
        print(f"| {lib} | {statistics.median(results[lib]['loss']):.5f} | {fit:.2f} | "
              f"{fit / xgb_fit:.2f} | {_difference(results[lib]['loss'], reference)} |")
    print()


def _difference(losses: list[float], reference: np.ndarray) -> str:
    """Mean of the per-split differences to the reference, with its standard error."""
    d = np.asarray(losses) - reference
    if d.size < 2:
        return f"{d.mean():+.5f}"
    return f"{d.mean():+.5f} ({d.std(ddof=1) / np.sqrt(d.size):.5f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--max-bins", type=int, default=255, help="bins of every library")
    parser.add_argument("--only", default="tmva-multiclass,multiclass-like")
    parser.add_argument("--hepbdt-bins", action="store_true",
                        help="give every library hepbdt's bin codes of the features")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    only = args.only.split(",")
    if "tmva-multiclass" in only:
        data = tmva_multiclass()
        if data is None:
            print("tmva-multiclass: skipped, ../shared/data/tmva_multiclass_example.root is absent")
        else:
            run("tmva-multiclass", data, args)
    if "multiclass-like" in only:
        run("multiclass-like", multiclass_like(2 * args.events, 28, 5, seed=1), args)


if __name__ == "__main__":
    main()
