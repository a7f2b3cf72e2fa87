"""Time per tree of every booster, with scikit-learn's AdaBoostClassifier in the same run.

Synthetic HIGGS-like data (``_data.higgs_like``): 1,000,000 events x 28 float32 features,
positive weights, depth-3 trees. Each hepbdt booster fits ``--trees`` trees ``--repeats``
times after a warm-up fit (compilation excluded); the median time per tree is quoted, and its
ratio to scikit-learn's AdaBoostClassifier (DecisionTreeClassifier(max_depth=3), exact
splits, fitted for ``--sklearn-trees`` rounds). Then the quality check on ROOT's TMVA
tutorial sample (``../shared/data``): weighted test ROC AUC of the TMVA ``BDT`` and ``BDTG``
settings against scikit-learn's AdaBoostClassifier (depth 3, 850 rounds) and
GradientBoostingClassifier (1000 trees, depth 2, subsample 0.5) at the same 50/50 split.

    python benchmarks/bench_adaboost.py [--n 1000000] [--trees 10] [--repeats 3]
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
from bench_negative_weights import tutorial_data  # noqa: E402

BOOSTERS = {
    "adaboost": dict(boosting="adaboost", beta=0.5),
    "adaboost (bagged 0.5)": dict(boosting="adaboost", beta=0.5, subsample=0.5,
                                  subsample_mode="poisson"),
    "realadaboost": dict(boosting="realadaboost"),
    "eps": dict(boosting="eps", epsilon=0.05),
    "bagging": dict(boosting="bagging", subsample=0.5, subsample_mode="poisson"),
    "gradient": dict(boosting="gradient", learning_rate=0.1),
    "newton": dict(boosting="newton", learning_rate=0.1),
}


def speed(n: int, trees: int, repeats: int, sklearn_trees: int) -> None:
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    from hepbdt import BDTClassifier

    X, y, w = higgs_like(n, seed=0)
    print(f"\n### Time per tree, {n} events x {X.shape[1]} features, depth 3\n")
    t0 = time.perf_counter()
    AdaBoostClassifier(DecisionTreeClassifier(max_depth=3), n_estimators=sklearn_trees,
                       random_state=0).fit(X, y, sample_weight=w)
    ref = (time.perf_counter() - t0) / sklearn_trees
    print("| booster | median s / tree | runs (s / tree) | vs sklearn AdaBoost |")
    print("| --- | --- | --- | --- |")
    for name, params in BOOSTERS.items():
        kw = dict(params, max_depth=3, min_node_size=0.01, negative_weights="keep", random_state=0)
        BDTClassifier(n_trees=2, **kw).fit(X[:20000], y[:20000], w[:20000])  # compile
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            BDTClassifier(n_trees=trees, **kw).fit(X, y, w)
            runs.append((time.perf_counter() - t0) / trees)
        med = statistics.median(runs)
        print(f"| {name} | {med:.3f} | {', '.join(f'{r:.3f}' for r in runs)} | "
              f"{ref / med:.1f}x faster |")
    print(f"| sklearn AdaBoostClassifier (depth 3, {sklearn_trees} rounds, once) | {ref:.3f} | | 1 |")
    print("\n(hepbdt times include binning the 1M events once per fit, amortised over the trees)")


def quality() -> None:
    from sklearn.ensemble import AdaBoostClassifier, GradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.tree import DecisionTreeClassifier

    from hepbdt import BDTClassifier

    data = HERE.parents[0].parent / "shared" / "data" / "tmva_class_example.root"
    if not data.exists():
        print(f"\n{data} is absent: the quality table is skipped")
        return
    X, y, w = tutorial_data()
    train = np.random.default_rng(100).random(y.size) < 0.5
    Xtr, ytr, wtr, Xte, yte, wte = X[train], y[train], w[train], X[~train], y[~train], w[~train]
    bdt = ("NTrees=850:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:AdaBoostBeta=0.5:"
           "UseBaggedBoost:BaggedSampleFraction=0.5:SeparationType=GiniIndex:nCuts=20")
    bdtg = ("NTrees=1000:MinNodeSize=2.5%:BoostType=Grad:Shrinkage=0.10:UseBaggedBoost:"
            "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=2")
    rows = []
    for label, options, ref in (
        ("BDT (AdaBoost)", bdt, AdaBoostClassifier(DecisionTreeClassifier(max_depth=3),
                                                   n_estimators=850, random_state=0)),
        ("BDTG (Grad)", bdtg, GradientBoostingClassifier(n_estimators=1000, learning_rate=0.1,
                                                         max_depth=2, subsample=0.5,
                                                         random_state=0)),
    ):
        t0 = time.perf_counter()
        ours = BDTClassifier.from_tmva(options, random_state=1).fit(Xtr, ytr, wtr)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref.fit(Xtr, ytr, sample_weight=wtr)
        t_ref = time.perf_counter() - t0
        a = roc_auc_score(yte, ours.decision_function(Xte), sample_weight=wte)
        b = roc_auc_score(yte, ref.decision_function(Xte), sample_weight=wte)
        rows.append((label, a, t_ours, type(ref).__name__, b, t_ref))
    print("\n### TMVA tutorial settings, tmva_class_example.root, 50/50 split, weighted test AUC\n")
    print("| TMVA method | hepbdt AUC | hepbdt fit s | reference | reference AUC | reference fit s |"
          " difference |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, a, ta, ref, b, tb in rows:
        print(f"| {label} | {a:.4f} | {ta:.1f} | {ref} | {b:.4f} | {tb:.1f} | {a - b:+.4f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--trees", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sklearn-trees", type=int, default=2)
    ap.add_argument("--skip-speed", action="store_true")
    args = ap.parse_args()
    print(f"# hepbdt AdaBoost family ({machine()}, numba threads "
          f"{os.environ.get('NUMBA_NUM_THREADS', 'all')})")
    if not args.skip_speed:
        speed(args.n, args.trees, args.repeats, args.sklearn_trees)
    quality()


if __name__ == "__main__":
    main()
