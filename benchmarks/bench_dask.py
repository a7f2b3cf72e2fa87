"""hepbdt on a Dask cluster against ``xgboost.dask`` and LightGBM's Dask interface.

A LocalCluster of ``--workers`` single-threaded worker processes; ``_data.higgs_like``
events x 28 features made on the workers, block by block (a block's events depend on its
index only); newton boosting (XGBoost's objective), ``--trees`` trees of depth ``--depth``,
learning rate 0.1, 255 value bins, in the same run and on the same cluster. Prints each
library's fit time and test AUC (200,000 events made on the client), and hepbdt's bytes
received by the client per tree level and per tree (the summed histograms; the parts
send one histogram each per split node, summed pairwise on the cluster).

    python benchmarks/bench_dask.py                      # 10M x 28, 200 trees of depth 6
    python benchmarks/bench_dask.py --events 1000000 --trees 50   # a shared 2-core machine
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

from _data import higgs_like, machine  # noqa: E402


def _block(i: int, n: int, m: int):
    X, y, w = higgs_like(n, m, seed=1000 + i)
    return X, y.astype(np.int32), w.astype(np.float64)


def _cluster_data(client, events: int, m: int, block: int):
    import dask
    import dask.array as da

    sizes = [min(block, events - s) for s in range(0, events, block)]
    parts = [dask.delayed(_block)(i, n, m) for i, n in enumerate(sizes)]
    X = da.concatenate([da.from_delayed(p[0], (n, m), np.float32) for p, n in zip(parts, sizes, strict=True)])
    y = da.concatenate([da.from_delayed(p[1], (n,), np.int32) for p, n in zip(parts, sizes, strict=True)])
    w = da.concatenate([da.from_delayed(p[2], (n,), np.float64) for p, n in zip(parts, sizes, strict=True)])
    return client.persist([X, y, w])


def _auc(y, score, w=None) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, score, sample_weight=w))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--features", type=int, default=28)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--depth", type=int, default=6)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--block", type=int, default=500_000, help="events per dask block")
    parser.add_argument("--skip", nargs="*", default=[], choices=["xgboost", "lightgbm"])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()

    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    from distributed import Client, LocalCluster, wait

    from hepbdt.dask import DaskBDTClassifier

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    client = Client(cluster)
    X, y, w = _cluster_data(client, args.events, args.features, args.block)
    wait([X, y, w])
    X_test, y_test, w_test = higgs_like(200_000, args.features, seed=10**6)
    # Compile the workers' kernels (and the client's) before timing.
    DaskBDTClassifier(boosting="newton", n_trees=2, max_depth=2).fit(X[:20_000], y[:20_000],
                                                                       w[:20_000], client=client)
    results = {"machine": machine(), "events": args.events, "features": args.features,
               "trees": args.trees, "depth": args.depth, "workers": args.workers}

    start = time.perf_counter()
    model = DaskBDTClassifier(boosting="newton", n_trees=args.trees, max_depth=args.depth,
                              learning_rate=0.1, reg_lambda=1.0, min_child_weight=1.0)
    model.fit(X, y, w, client=client)
    results["hepbdt"] = {"fit_s": time.perf_counter() - start,
                         "auc": _auc(y_test, model.decision_function(X_test), w_test)}
    traffic = model.dask_bytes_
    per_level: dict[int, list[dict]] = {}
    for level in traffic["levels"]:
        per_level.setdefault(level["depth"], []).append(level)
    results["hepbdt"]["bytes_per_level_mean"] = {
        d: {k: float(np.mean([v[k] for v in levels])) for k in levels[0]}
        for d, levels in per_level.items()}
    results["hepbdt"]["bytes_per_tree_mean"] = {
        k: float(np.mean([t[k] for t in traffic["trees"]])) for k in traffic["trees"][0]}
    print(f"hepbdt   {results['hepbdt']['fit_s']:8.1f} s  AUC {results['hepbdt']['auc']:.4f}",
          flush=True)

    if "xgboost" not in args.skip:
        import xgboost as xgb
        import xgboost.dask  # noqa: F401 -- the Dask interface is a submodule

        xgb_model = xgb.dask.DaskXGBClassifier(n_estimators=args.trees, max_depth=args.depth,
                                               learning_rate=0.1, tree_method="hist",
                                               max_bin=256, reg_lambda=1.0, min_child_weight=1.0,
                                               n_jobs=1)
        xgb_model.client = client
        start = time.perf_counter()
        xgb_model.fit(X, y, sample_weight=w)
        results["xgboost.dask"] = {"fit_s": time.perf_counter() - start,
                                   "auc": _auc(y_test, xgb_model.get_booster().inplace_predict(
                                       X_test), w_test)}
        print(f"xgboost  {results['xgboost.dask']['fit_s']:8.1f} s  AUC "
              f"{results['xgboost.dask']['auc']:.4f}", flush=True)
    if "lightgbm" not in args.skip:
        import lightgbm as lgb

        lgb_model = lgb.DaskLGBMClassifier(client=client, n_estimators=args.trees,
                                           max_depth=args.depth, num_leaves=2 ** args.depth,
                                           learning_rate=0.1, max_bin=255, reg_lambda=1.0,
                                           min_child_weight=1.0, min_child_samples=1,
                                           n_jobs=1, verbose=-1)
        start = time.perf_counter()
        try:
            lgb_model.fit(X, y, sample_weight=w)
        except TypeError as exc:  # LightGBM issue 6739: its Dask training breaks on dask >= 2024.12
            import dask

            results["lightgbm.dask"] = {"failed": f"{exc} (lightgbm {lgb.__version__}, dask "
                                                  f"{dask.__version__}; LightGBM issue 6739)"}
            print(f"lightgbm failed: {results['lightgbm.dask']['failed']}", flush=True)
        else:
            local = lgb_model.to_local()
            results["lightgbm.dask"] = {"fit_s": time.perf_counter() - start,
                                        "auc": _auc(y_test, local.predict_proba(X_test)[:, 1],
                                                    w_test)}
            print(f"lightgbm {results['lightgbm.dask']['fit_s']:8.1f} s  AUC "
                  f"{results['lightgbm.dask']['auc']:.4f}", flush=True)
    if "xgboost.dask" in results:
        results["hepbdt_over_xgboost"] = results["hepbdt"]["fit_s"] / results["xgboost.dask"]["fit_s"]
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
