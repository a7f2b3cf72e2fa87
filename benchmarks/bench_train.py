"""Training and prediction speed, memory and AUC: hepbdt against XGBoost and LightGBM.

Same data (synthetic HIGGS-like, 1,000,000 training events x 28 float32 features, positive
event weights, 200,000 test events), same settings (200 trees, 255 bins, learning rate
0.1, lambda 1, min_child_weight 1, all cores), same run. Each row runs in its own fresh
process, so that peak memory is its own; the rows are interleaved and repeated, and the
medians are quoted. Every row says how it grows trees and which histograms it sums:

depth-wise, depth 6 (each against its like):
  hepbdt            newton, packed int64 histograms (as hepbdt's default from 50,000 events)
  hepbdt-exact      newton, float64 histograms (``quantised_histograms=False``)
  hepbdt-gradient   TMVA's BDTG (first-order gradient), packed histograms (not by default)
  xgboost           ``tree_method="hist"``, depth-wise, float histograms
  lightgbm          leaf-wise, 64 leaves within depth 6, float histograms
  lightgbm-quant    the same with ``use_quantized_grad=True`` (integer gradients, 4 bins)
leaf-wise, 64 leaves, no depth limit:
  hepbdt-leafwise   newton, ``max_leaves=64, max_depth=None``, packed histograms
  xgboost-lossguide ``grow_policy="lossguide", max_leaves=64``, float histograms
  lightgbm-leafwise ``num_leaves=64, max_depth=-1``, float histograms
  lightgbm-leafwise-quant  the same with ``use_quantized_grad=True``

    python benchmarks/bench_train.py [--repeats 3] [--n-train 1000000] [--trees 200]
        [--libs hepbdt,hepbdt-exact,xgboost,lightgbm,lightgbm-quant]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from _data import machine  # noqa: E402


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def child(lib: str, n_train: int, n_test: int, trees: int, threads: int) -> dict:
    """Run one library once; returns timings, memory and AUC."""
    from _data import higgs_like

    X, y, w = higgs_like(n_train + n_test, seed=0)
    Xtr, ytr, wtr = X[:n_train], y[:n_train], w[:n_train]
    Xte, yte, wte = X[n_train:], y[n_train:], w[n_train:]
    X = y = w = None
    model, predict, warm_up = _model(lib, trees, threads)
    warm_up()
    base = _rss_kib("VmRSS")  # the kernels loaded, the warm-up's freed memory given back
    _reset_peak()
    t0 = time.perf_counter()
    model.fit(Xtr, ytr, sample_weight=wtr)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    score = predict(Xte)
    predict_s = time.perf_counter() - t0
    peak = _rss_kib("VmHWM")
    from hepbdt.evaluation import roc_auc

    return {"fit_s": fit_s, "predict_s": predict_s, "peak_extra_mib": (peak - base) / 1024,
            "auc": float(roc_auc(yte, np.asarray(score, float), wte))}


HEPBDT = {  # row -> hepbdt options beyond the common ones
    "hepbdt": {"boosting": "newton", "max_depth": 6, "quantised_histograms": True},
    "hepbdt-exact": {"boosting": "newton", "max_depth": 6, "quantised_histograms": False},
    "hepbdt-gradient": {"boosting": "gradient", "max_depth": 6, "quantised_histograms": True},
    "hepbdt-leafwise": {"boosting": "newton", "max_leaves": 64, "max_depth": None,
                        "quantised_histograms": True},
}
XGBOOST = {"xgboost": {"max_depth": 6},
           "xgboost-lossguide": {"grow_policy": "lossguide", "max_leaves": 64, "max_depth": 0}}
LIGHTGBM = {"lightgbm": {"max_depth": 6}, "lightgbm-quant": {"max_depth": 6, "use_quantized_grad": True},
            "lightgbm-leafwise": {"max_depth": -1},
            "lightgbm-leafwise-quant": {"max_depth": -1, "use_quantized_grad": True}}


def _model(lib: str, trees: int, threads: int):
    """The estimator of row ``lib``, its raw-score prediction and its warm-up (a callable)."""
    if lib in HEPBDT:
        from _data import higgs_like

        import hepbdt

        options = {"reg_lambda": 1.0, "min_child_weight": 1.0} if "gradient" not in lib else {}
        options.update(max_bins=255, learning_rate=0.1, n_jobs=threads, **HEPBDT[lib])
        model = hepbdt.BDTClassifier(n_trees=trees, **options)
        # Load the compiled kernels of this row's fit and prediction from Numba's cache, as
        # importing XGBoost or LightGBM loads theirs (about 0.2 s of a fresh process's first
        # fit at 1M events; bench_coldstart.py measures the cold start): two trees of the
        # same settings on 70,000 events, above every event-count switch of the grower.
        def warm_up() -> None:
            import gc

            from hepbdt._util import release_free_memory

            Xw, yw, ww = higgs_like(70_000, seed=1)
            hepbdt.BDTClassifier(n_trees=2, **options).fit(Xw, yw, sample_weight=ww).decision_function(Xw)
            del Xw, yw, ww
            gc.collect()
            release_free_memory()  # so that the timed fit cannot reuse the warm-up's pages

        return model, model.decision_function, warm_up
    if lib in XGBOOST:
        import xgboost as xgb

        model = xgb.XGBClassifier(tree_method="hist", n_estimators=trees, max_bin=255, n_jobs=threads,
                                  learning_rate=0.1, reg_lambda=1.0, min_child_weight=1.0,
                                  **XGBOOST[lib])
        return model, lambda X: model.predict(X, output_margin=True), lambda: None
    if lib in LIGHTGBM:
        import lightgbm as lgb

        model = lgb.LGBMClassifier(n_estimators=trees, num_leaves=64, max_bin=255, n_jobs=threads,
                                   learning_rate=0.1, reg_lambda=1.0, min_child_weight=1.0,
                                   min_child_samples=0, verbose=-1, **LIGHTGBM[lib])
        return model, lambda X: model.predict(X, raw_score=True), lambda: None
    raise ValueError(f"unknown row {lib!r}; rows: {', '.join([*HEPBDT, *XGBOOST, *LIGHTGBM])}")


def main() -> None:
    """Run every library ``--repeats`` times in fresh processes and print the medians and ratios."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-train", type=int, default=1_000_000)
    ap.add_argument("--n-test", type=int, default=200_000)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--libs", default="hepbdt,hepbdt-exact,xgboost,lightgbm,lightgbm-quant")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n_train, args.n_test, args.trees, args.threads)))
        return
    libs = args.libs.split(",")
    runs: dict[str, list[dict]] = {lib: [] for lib in libs}
    for rep in range(args.repeats):
        for lib in libs:  # interleaved, so drifts in machine load hit every library alike
            out = subprocess.run([sys.executable, __file__, "--child", lib, "--n-train", str(args.n_train),
                                  "--n-test", str(args.n_test), "--trees", str(args.trees),
                                  "--threads", str(args.threads)],
                                 capture_output=True, text=True, check=True)
            runs[lib].append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(f"  run {rep + 1} {lib}: {runs[lib][-1]}", file=sys.stderr)
    med = {lib: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for lib, rs in runs.items()}
    print(f"# {machine()}; {args.n_train} train / {args.n_test} test events x 28, {args.trees} trees, "
          f"255 bins, lr 0.1, {args.threads} threads; median of {args.repeats} interleaved runs")
    print(f"{'row':24s} {'fit s':>8s} {'predict s':>10s} {'peak MiB':>9s} {'test AUC':>9s}")
    for lib, m in med.items():
        print(f"{lib:24s} {m['fit_s']:8.2f} {m['predict_s']:10.3f} {m['peak_extra_mib']:9.0f} "
              f"{m['auc']:9.4f}")
    for ours in (lib for lib in libs if lib.startswith("hepbdt")):
        leafwise = ours.endswith("leafwise")
        for lib in (lib for lib in libs if not lib.startswith("hepbdt")):
            if leafwise != any(tag in lib for tag in ("leafwise", "lossguide")):
                continue  # depth-wise against depth-wise, leaf-wise against leaf-wise
            h, o = med[ours], med[lib]
            print(f"{ours} / {lib}: fit {h['fit_s'] / o['fit_s']:.2f}x, predict "
                  f"{h['predict_s'] / o['predict_s']:.2f}x, memory "
                  f"{h['peak_extra_mib'] / o['peak_extra_mib']:.2f}x, AUC {h['auc'] - o['auc']:+.4f}")

if __name__ == "__main__":
    main()
