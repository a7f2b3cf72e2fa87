"""Negative event weights: what each policy costs, and whether it learns the right background.

Two tables, both printed as markdown:

1. Random flips (nothing to learn from them, only statistical power to lose): on ROOT's
   TMVA tutorial sample (``../shared/data/tmva_class_example.root``, 50/50 random split,
   background weights used), 10 % of the training events, drawn at random, get their weight
   multiplied by -1. Each booster is trained (a) on the training events without the flipped
   ones ("drop"), (b) with every flipped event kept under each policy; the table gives the
   weighted test ROC AUC (the test events are untouched), averaged over ``--seeds`` draws.
   LightGBM and scikit-learn's HistGradientBoosting (they accept negative weights silently)
   are in the same run for reference; XGBoost and scikit-learn's AdaBoost/GradientBoosting
   refuse negative weights.
2. NLO-like cancellation: a background whose positive-weight part holds an extra
   signal-like component that an equal negative-weight component cancels (net background
   unchanged). Training on the net sample ("net"), with the default policy, "ignore"
   (drops the negative events: the contamination stays) and "abs" (doubles it), tested on
   signal against the net background.

    python benchmarks/bench_negative_weights.py [--seeds 3] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import machine  # noqa: E402

DATA = HERE.parents[0].parent / "shared" / "data" / "tmva_class_example.root"

BOOSTERS = {
    "gradient": dict(boosting="gradient", n_trees=400, max_depth=2, learning_rate=0.1,
                     min_node_size=0.025, n_cuts=20, subsample=0.5, subsample_mode="poisson"),
    "newton": dict(boosting="newton", n_trees=400, max_depth=3, learning_rate=0.1),
    "adaboost": dict(boosting="adaboost", n_trees=400, max_depth=3, beta=0.5,
                     min_node_size=0.025, n_cuts=20, subsample=0.5, subsample_mode="poisson"),
    "realadaboost": dict(boosting="realadaboost", n_trees=200, max_depth=3,
                         min_node_size=0.025, n_cuts=20),
    "eps": dict(boosting="eps", n_trees=400, max_depth=3, epsilon=0.05, min_node_size=0.025,
                n_cuts=20),
}
POLICIES = ("default", "keep", "pair", "ignore", "abs")


def tutorial_data():
    import uproot

    with uproot.open(DATA) as f:
        s = f["TreeS"].arrays([f"var{i}" for i in range(1, 5)], library="np")
        b = f["TreeB"].arrays([*(f"var{i}" for i in range(1, 5)), "weight"], library="np")
    X = np.vstack([np.column_stack([s[f"var{i}"] for i in range(1, 5)]),
                   np.column_stack([b[f"var{i}"] for i in range(1, 5)])]).astype(np.float32)
    y = np.r_[np.ones(len(s["var1"])), np.zeros(len(b["var1"]))]
    w = np.r_[np.ones(len(s["var1"])), b["weight"]].astype(np.float64)
    return X, y, w


def auc(y, score, w):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y, score, sample_weight=w)


def fit_score(params, policy, X, y, w, Xt):
    from hepbdt import BDTClassifier

    kw = dict(params, random_state=1)
    if policy != "default":
        kw["negative_weights"] = policy
    return BDTClassifier(**kw).fit(X, y, w).decision_function(Xt)


def flip_table(n_seeds: int, boosters: list[str]) -> None:
    X, y, w = tutorial_data()
    rng = np.random.default_rng(100)
    train = rng.random(y.size) < 0.5
    Xtr, ytr, wtr = X[train], y[train], w[train]
    Xte, yte, wte = X[~train], y[~train], w[~train]
    rows = {}
    peers = {"lightgbm": [], "sklearn HistGradientBoosting": []}
    for seed in range(n_seeds):
        flip = np.random.default_rng(seed).random(ytr.size) < 0.10
        w_flip = np.where(flip, -wtr, wtr)
        for name in boosters:
            params = BOOSTERS[name]
            r = rows.setdefault(name, {p: [] for p in ("drop", *POLICIES)})
            r["drop"].append(auc(yte, fit_score(params, "keep", Xtr[~flip], ytr[~flip],
                                                wtr[~flip], Xte), wte))
            for policy in POLICIES:
                r[policy].append(auc(yte, fit_score(params, policy, Xtr, ytr, w_flip, Xte), wte))
        try:
            import lightgbm

            for data, key in (((Xtr[~flip], ytr[~flip], wtr[~flip]), "drop"),
                              ((Xtr, ytr, w_flip), "kept")):
                m = lightgbm.LGBMClassifier(n_estimators=400, learning_rate=0.1, num_leaves=8,
                                            verbose=-1, random_state=1)
                m.fit(data[0], data[1], sample_weight=data[2])
                peers["lightgbm"].append((key, auc(yte, m.predict_proba(Xte)[:, 1], wte)))
        except ImportError:
            pass
        from sklearn.ensemble import HistGradientBoostingClassifier

        for data, key in (((Xtr[~flip], ytr[~flip], wtr[~flip]), "drop"),
                          ((Xtr, ytr, w_flip), "kept")):
            m = HistGradientBoostingClassifier(max_iter=400, learning_rate=0.1, max_depth=3,
                                               random_state=1)
            m.fit(data[0], data[1], sample_weight=data[2])
            peers["sklearn HistGradientBoosting"].append(
                (key, auc(yte, m.predict_proba(Xte)[:, 1], wte)))
    print(f"\n### Random flips: 10 % of the training weights times -1, tutorial data, "
          f"mean test AUC over {n_seeds} draws\n")
    print("| booster | drop flipped | " + " | ".join(POLICIES) + " | default - drop |")
    print("| --- | --- | " + " | ".join("---" for _ in POLICIES) + " | --- |")
    for name, r in rows.items():
        mean = {k: float(np.mean(v)) for k, v in r.items()}
        print(f"| {name} | {mean['drop']:.4f} | "
              + " | ".join(f"{mean[p]:.4f}" for p in POLICIES)
              + f" | {mean['default'] - mean['drop']:+.4f} |")
    for peer, vals in peers.items():
        if vals:
            d = float(np.mean([a for k, a in vals if k == "drop"]))
            k = float(np.mean([a for k, a in vals if k == "kept"]))
            print(f"| {peer} (peer) | {d:.4f} | kept as given: {k:.4f} | | | | | {k - d:+.4f} |")


def nlo_sample(n: int, seed: int):
    """Signal N((1,1)), background N((-1,-1)), plus an extra component at (1.5, 0.5) in the
    background with weight +1 and an identical one with weight -1 (net: nothing)."""
    rng = np.random.default_rng(seed)
    k = n // 2
    sig = rng.normal([1.0, 1.0, 0.0, 0.0], 1.0, size=(n, 4))
    bkg = rng.normal([-1.0, -1.0, 0.0, 0.0], 1.0, size=(n, 4))
    extra_pos = rng.normal([1.5, 0.5, 0.0, 0.0], 0.5, size=(k, 4))
    extra_neg = rng.normal([1.5, 0.5, 0.0, 0.0], 0.5, size=(k, 4))
    X = np.vstack([sig, bkg, extra_pos, extra_neg]).astype(np.float32)
    y = np.r_[np.ones(n), np.zeros(n + 2 * k)]
    w = np.r_[np.ones(2 * n + k), -np.ones(k)]
    is_net = np.r_[np.ones(2 * n, bool), np.zeros(2 * k, bool)]
    return X, y, w, is_net


def nlo_table(boosters: list[str], n: int) -> None:
    X, y, w, is_net = nlo_sample(n, 1)
    Xt, yt, _, net_t = nlo_sample(n, 2)
    Xt, yt = Xt[net_t], yt[net_t]
    print(f"\n### NLO-like cancellation ({n} signal, {n} background, {n // 2} + {n // 2} "
          "cancelling events), test AUC on signal vs net background\n")
    print("| booster | net sample | default | keep | pair | ignore | abs |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name in boosters:
        params = dict(BOOSTERS[name])
        params.pop("n_cuts", None)
        res = [auc(yt, fit_score(params, "keep", X[is_net], y[is_net], w[is_net], Xt), None)]
        for policy in ("default", "keep", "pair", "ignore", "abs"):
            res.append(auc(yt, fit_score(params, policy, X, y, w, Xt), None))
        print(f"| {name} | " + " | ".join(f"{a:.4f}" for a in res) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="gradient and adaboost only, 1 seed")
    args = ap.parse_args()
    boosters = ["gradient", "adaboost"] if args.quick else list(BOOSTERS)
    seeds = 1 if args.quick else args.seeds
    print(f"# hepbdt negative-weight policies ({machine()})")
    from hepbdt.estimators import BDTClassifier

    print(f"default policy: negative_weights={BDTClassifier().negative_weights!r}")
    t0 = time.perf_counter()
    if DATA.exists():
        flip_table(seeds, boosters)
    else:
        print(f"\n{DATA} is absent: the random-flip table is skipped", file=sys.stderr)
    nlo_table(boosters, 20_000)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
