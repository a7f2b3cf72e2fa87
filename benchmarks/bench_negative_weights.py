"""Negative event weights: what each policy costs, and whether it learns the right background.

Three kinds of table, printed as markdown:

1. Random flips (nothing to learn from them, only statistical power to lose): on ROOT's
   TMVA tutorial sample (``../shared/data/tmva_class_example.root``, 50/50 random split,
   background weights used), 10 % of the training events, drawn at random, get their weight
   multiplied by -1. Each booster is trained (a) on the training events without the flipped
   ones ("drop"), (b) with every flipped event kept under each policy; the table gives the
   weighted test ROC AUC (the test events are untouched), averaged over ``--seeds`` draws.
   LightGBM and scikit-learn's HistGradientBoosting (they accept negative weights silently)
   are in the same run for reference; XGBoost and scikit-learn's AdaBoost/GradientBoosting
   refuse negative weights.
2. NLO-like cancellation, in 4 and in 28 dimensions, with 10 % and 40 % of the background
   events at weight -1: a background whose positive-weight part holds an extra signal-like
   component that an identical negative-weight component cancels (the net background is
   clean; ``nlo_sample`` and ``_data.nlo_like``). Each booster is trained on the net sample
   ("net", the reference to reach), without the negative events ("drop": the contamination
   stays; this is also what ``ignore`` does) and under every policy; the test AUC is on
   signal against the clean background of an independent sample.
3. ``--oracle``: where the gap of the default policy to the net sample comes from, on the
   28-D case with 40 % negative events: each booster trained on the background weighted by
   the generator's true local net weight E[w | x] (``_data.nlo_like_net_weight``, clipped
   and rescaled as the policy does: what a perfect weight model would reach), by the
   policy, and by the policy learning from 3x as many background events (the extra ones
   independent, drawn from the same generator; only the training events' weights are used),
   and the net sample cut to the weighted background's effective size. ``--draws N``
   averages each difference to the net sample over N training samples (mean +- standard
   error; the test sample the same).
4. ``--cost``: the time of the ``regress`` and ``pair`` policies at 1,000,000 events x 28
   features (10 % of the background at weight -1), against two main fits on the
   reweighted events: 200 trees of depth 3, and ``BDTClassifier()`` at its defaults
   (``n_trees="auto"``, the automatic tree shape), the fit a user who sets nothing runs.

    python benchmarks/bench_negative_weights.py [--seeds 3] [--quick] [--cost] [--oracle]
        [--draws 1] [--n-jobs 1] [--boosters adaboost,realadaboost] [--flips-only]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import machine, nlo_like, nlo_like_net_weight  # noqa: E402

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
POLICIES = ("keep", "ignore", "abs", "pair", "inverse_boost", "regress")
ADABOOST_FAMILY = ("adaboost", "realadaboost", "eps", "bagging")
NLO_BOOSTERS = ("gradient", "newton", "adaboost", "realadaboost")
NLO_TREES = 200  # trees of every booster in the NLO-like tables (time)
N_JOBS = None  # threads of every fit (--n-jobs); the AUCs do not depend on it


def valid(policy: str, booster: str) -> bool:
    """inverse_boost is for the AdaBoost family only."""
    return policy != "inverse_boost" or booster in ADABOOST_FAMILY


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
    """Weighted test AUC; NaN for a fit hepbdt refused as diverged (score None)."""
    from sklearn.metrics import roc_auc_score

    return float("nan") if score is None else roc_auc_score(y, score, sample_weight=w)


def cell(value) -> str:
    """A table cell: the AUC, "n/a", or "diverged" for a refused fit (NaN)."""
    if value is None:
        return "n/a"
    return "diverged" if np.isnan(value) else f"{value:.4f}"


def fit_score(params, policy, X, y, w, Xt):
    from hepbdt import BDTClassifier

    kw = dict(params, random_state=1, n_jobs=N_JOBS)
    if policy != "default":
        kw["negative_weights"] = policy
    try:
        return BDTClassifier(**kw).fit(X, y, w).decision_function(Xt)
    except ValueError as exc:  # keep: a signed loss that runs away is refused
        if "training diverged" not in str(exc):
            raise
        return None


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
                if valid(policy, name):
                    r[policy].append(auc(yte, fit_score(params, policy, Xtr, ytr, w_flip, Xte),
                                         wte))
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
    default = default_policy()
    for name, r in rows.items():
        mean = {k: float(np.mean(v)) if v else None for k, v in r.items()}
        print(f"| {name} | {mean['drop']:.4f} | "
              + " | ".join(cell(mean[p]) for p in POLICIES)
              + f" | {mean[default] - mean['drop']:+.4f} |")
    for peer, vals in peers.items():
        if vals:
            d = float(np.mean([a for k, a in vals if k == "drop"]))
            k = float(np.mean([a for k, a in vals if k == "kept"]))
            print(f"| {peer} (peer) | {d:.4f} | kept as given: {k:.4f} |"
                  + " |" * (len(POLICIES) - 1) + f" {k - d:+.4f} |")


def default_policy() -> str:
    from hepbdt import BDTClassifier

    return BDTClassifier().negative_weights


def nlo_sample(n: int, negative_fraction: float, seed: int):
    """4-D: signal N((1,1)), background N((-1,-1)), plus an extra component at (1.5, 0.5) in
    the background with weight +1 and an identical one with weight -1 (net: nothing), each of
    k = f n / (1 - 2 f) events, so a fraction f of the background events is negative."""
    rng = np.random.default_rng(seed)
    k = int(round(negative_fraction * n / (1 - 2 * negative_fraction)))
    sig = rng.normal([1.0, 1.0, 0.0, 0.0], 1.0, size=(n, 4))
    bkg = rng.normal([-1.0, -1.0, 0.0, 0.0], 1.0, size=(n, 4))
    extra_pos = rng.normal([1.5, 0.5, 0.0, 0.0], 0.5, size=(k, 4))
    extra_neg = rng.normal([1.5, 0.5, 0.0, 0.0], 0.5, size=(k, 4))
    X = np.vstack([sig, bkg, extra_pos, extra_neg]).astype(np.float32)
    y = np.r_[np.ones(n), np.zeros(n + 2 * k)]
    w = np.r_[np.ones(2 * n + k), -np.ones(k)]
    is_net = np.r_[np.ones(2 * n, bool), np.zeros(2 * k, bool)]
    return X, y, w, is_net


NLO_CASES = {  # name: (sampler(negative_fraction, seed, n), n events per class)
    "4-D": (lambda f, seed, n: nlo_sample(n, f, seed), 10_000),
    "28-D": (lambda f, seed, n: nlo_like(n, n, f, seed=seed), 10_000),
}


def nlo_table(case: str, fraction: float, boosters: list[str]) -> dict[str, dict[str, float]]:
    sampler, n = NLO_CASES[case]
    X, y, w, is_net = sampler(fraction, 1, n)
    Xt, yt, _, net_t = sampler(0.0, 2, n)
    Xt, yt = Xt[net_t], yt[net_t]
    n_neg = int(np.sum(w < 0))
    default = default_policy()
    print(f"\n### NLO-like cancellation, {case}, {fraction:.0%} of the background at weight -1 "
          f"({n} signal, {int(np.sum(y == 0))} background of which {n_neg} negative; "
          f"{NLO_TREES} trees), test AUC on signal vs clean background\n")
    print("| booster | net sample | drop negatives | " + " | ".join(POLICIES)
          + f" | default ({default}) - net | default - drop |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in POLICIES) + " | --- | --- |")
    out = {}
    for name in boosters:
        params = dict(BOOSTERS[name], n_trees=NLO_TREES)
        params.pop("n_cuts", None)
        keep = w >= 0
        res = {"net": auc(yt, fit_score(params, "keep", X[is_net], y[is_net], w[is_net], Xt), None),
               "drop": auc(yt, fit_score(params, "keep", X[keep], y[keep], w[keep], Xt), None)}
        for policy in POLICIES:
            if valid(policy, name):
                res[policy] = (res["drop"] if policy == "ignore"  # the same training events
                               else auc(yt, fit_score(params, policy, X, y, w, Xt), None))
        cells = [cell(res.get(p)) for p in POLICIES]
        print(f"| {name} | {res['net']:.4f} | {res['drop']:.4f} | " + " | ".join(cells)
              + f" | {res[default] - res['net']:+.4f} | {res[default] - res['drop']:+.4f} |",
              flush=True)
        out[name] = res
    return out


def _oracle_weights(seed: int, fraction: float) -> dict:
    """One draw of the oracle's training sample (``seed``) and its background weightings:
    the true local net weight, the policy's, the policy's learning from 3x the events, and
    the net sample cut to the weighted background's effective size."""
    from hepbdt.boosting.negative_weights import regress_weights

    n = NLO_CASES["28-D"][1]
    X, y, w, is_net = nlo_like(n, n, fraction, seed=seed)
    bkg = y == 0
    truth = np.maximum(nlo_like_net_weight(X[bkg], n, fraction), 0.0)
    w_truth = w.copy()
    w_truth[bkg] = truth * w[bkg].sum() / truth.sum()
    w_policy = w.copy()
    w_policy[bkg] = regress_weights(X[bkg], w[bkg])
    # independent extra events (seed 11 for the first draw, as the one-draw table had)
    Xe, ye, we, _ = nlo_like(2 * n, 2 * n, fraction, seed=10 + seed)
    pooled = regress_weights(np.vstack([X[bkg], Xe[ye == 0]]), np.r_[w[bkg], we[ye == 0]])
    w_more = w.copy()
    w_more[bkg] = pooled[: int(bkg.sum())] * w[bkg].sum() / pooled[: int(bkg.sum())].sum()
    # the net sample cut to the effective size (sum w)^2 / sum w^2 of the given background
    # weights, each kept clean event weighing the same net total
    n_eff = int(round(w[bkg].sum() ** 2 / np.sum(w[bkg] ** 2)))
    clean = np.flatnonzero(is_net & bkg)
    kept = np.sort(np.random.default_rng(4 + seed).choice(clean, n_eff, replace=False))
    w_eff = w.copy()
    w_eff[kept] = w[bkg].sum() / n_eff
    return {"X": X, "y": y, "w": w, "is_net": is_net, "truth": w_truth, "policy": w_policy,
            "more": w_more, "eff_rows": np.r_[np.flatnonzero(y == 1), kept], "w_eff": w_eff,
            "n_eff": n_eff}


def _oracle_aucs(d: dict, name: str, Xt, yt) -> dict[str, float]:
    """Test AUCs of booster ``name`` trained on each weighting of one draw (``_oracle_weights``)."""
    params = dict(BOOSTERS[name], n_trees=NLO_TREES)
    params.pop("n_cuts", None)
    X, y, w, is_net = d["X"], d["y"], d["w"], d["is_net"]
    res = {"net": auc(yt, fit_score(params, "keep", X[is_net], y[is_net], w[is_net], Xt), None)}
    for key in ("truth", "policy", "more"):
        keep = d[key] > 0
        res[key] = auc(yt, fit_score(params, "keep", X[keep], y[keep], d[key][keep], Xt), None)
    rows = d["eff_rows"]
    res["effective"] = auc(yt, fit_score(params, "keep", X[rows], y[rows], d["w_eff"][rows], Xt),
                           None)
    return res


def oracle_table(boosters: list[str], fraction: float = 0.40, draws: int = 1) -> None:
    """The default policy against the true local net weight and against itself with 3x
    events; with ``draws`` > 1, each difference's mean and standard error over that many
    training samples (seed 1, then 101, 102, ...; the test sample the same)."""
    n = NLO_CASES["28-D"][1]
    Xt, yt, _, net_t = nlo_like(n, n, 0.0, seed=2)
    Xt, yt = Xt[net_t], yt[net_t]
    # seed 2 is the test sample's: the further draws take seeds from 101
    samples = [_oracle_weights(1 if i == 0 else 100 + i, fraction) for i in range(draws)]
    n_eff = samples[0]["n_eff"]
    print(f"\n### Where the gap comes from: 28-D, {fraction:.0%} of the background at weight -1, "
          f"test AUC ({NLO_TREES} trees" + (f", mean of {draws} draws" if draws > 1 else "")
          + ")\n")
    print("| booster | net sample | true E[w\\|x] weights | default policy | policy learning from "
          f"3x the background events | net sample of the effective size ({n_eff:,} background "
          "events) | policy - net | true - net | effective - net |"
          + (" 3x events - net |" if draws > 1 else ""))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if draws > 1 else ""))
    for name in boosters:
        runs = [_oracle_aucs(d, name, Xt, yt) for d in samples]
        mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        gap = {key: _gap_text([r[key] - r["net"] for r in runs])
               for key in ("policy", "truth", "effective", "more")}
        print(f"| {name} | {mean['net']:.4f} | {mean['truth']:.4f} | {mean['policy']:.4f} | "
              f"{mean['more']:.4f} | {mean['effective']:.4f} | {gap['policy']} | "
              f"{gap['truth']} | {gap['effective']} |" + (f" {gap['more']} |" if draws > 1 else ""),
              flush=True)


def _gap_text(diffs: list[float]) -> str:
    """One difference, or over several draws its mean +- standard error."""
    if len(diffs) == 1:
        return f"{diffs[0]:+.4f}"
    return f"{np.mean(diffs):+.4f} +- {np.std(diffs, ddof=1) / np.sqrt(len(diffs)):.4f}"


def cost(n_events: int = 1_000_000) -> None:
    """Seconds of the regress and pair policies against the main fit, at n_events x 28."""
    from hepbdt import BDTClassifier
    from hepbdt.boosting.negative_weights import pair_negative_weights, regress_negative_weights
    from hepbdt.estimators import growth_text

    n = int(round(n_events / 2.25))  # 2 n + 2 k events with k = n / 8 (10 % negative)
    X, y, w, _ = nlo_like(n, n, 0.10, seed=3)
    print(f"\n### Cost at {y.size:,} events x {X.shape[1]} features, {int(np.sum(w < 0)):,} "
          "negative (10 % of the background)\n")
    t0 = time.perf_counter()
    Xr, yr, wr = regress_negative_weights(X, y, w)
    t_regress = time.perf_counter() - t0
    t0 = time.perf_counter()
    pair_negative_weights(X, y, w)
    t_pair = time.perf_counter() - t0
    t0 = time.perf_counter()
    BDTClassifier(n_trees=200, max_depth=3, negative_weights="keep", random_state=0).fit(Xr, yr, wr)
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    default = BDTClassifier(negative_weights="keep", random_state=0).fit(Xr, yr, wr)
    t_default = time.perf_counter() - t0
    print("| step | seconds | fraction of the 200-tree fit | fraction of the default fit |")
    print("| --- | --- | --- | --- |")
    print(f"| main fit: gradient, 200 trees of depth 3 | {t_fit:.1f} | 1 | "
          f"{t_fit / t_default:.2f} |")
    shape = growth_text({"max_depth": default.max_depth_, "max_leaves": default.max_leaves_})
    print(f"| main fit: `BDTClassifier()` ({shape}, {default.n_trees_} trees kept of "
          f"\"auto\") | {t_default:.1f} | {t_default / t_fit:.2f} | 1 |")
    print(f"| `regress` policy | {t_regress:.1f} | {t_regress / t_fit:.2f} | "
          f"{t_regress / t_default:.2f} |")
    print(f"| `pair` policy | {t_pair:.1f} | {t_pair / t_fit:.2f} | {t_pair / t_default:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="gradient and adaboost only, 1 seed")
    ap.add_argument("--cost", action="store_true", help="only the policies' cost at 1M x 28")
    ap.add_argument("--oracle", action="store_true",
                    help="only the 28-D 40 %% case against the true local net weight")
    ap.add_argument("--draws", type=int, default=1,
                    help="--oracle: training samples to average the differences over")
    ap.add_argument("--boosters", default=None, help="comma-separated subset of the boosters")
    ap.add_argument("--flips-only", action="store_true", help="only the random-flip table")
    ap.add_argument("--n-jobs", type=int, default=None,
                    help="threads per fit (1 on a busy machine: the AUCs are the same)")
    args = ap.parse_args()
    global N_JOBS
    N_JOBS = args.n_jobs
    print(f"# hepbdt negative-weight policies ({machine()})")
    print(f"default policy: negative_weights={default_policy()!r}")
    t0 = time.perf_counter()
    if args.cost:
        cost()
        print(f"\n(total {time.perf_counter() - t0:.0f} s)")
        return
    boosters = ["gradient", "adaboost"] if args.quick else list(BOOSTERS)
    if args.boosters:
        boosters = [b for b in args.boosters.split(",") if b in BOOSTERS]
    seeds = 1 if args.quick else args.seeds
    if args.oracle:
        oracle_table([b for b in ("gradient", "newton", "adaboost") if b in boosters],
                     draws=args.draws)
        print(f"\n(total {time.perf_counter() - t0:.0f} s)")
        return
    if DATA.exists():
        flip_table(seeds, boosters)
    else:
        print(f"\n{DATA} is absent: the random-flip table is skipped", file=sys.stderr)
    if args.flips_only:
        print(f"\n(total {time.perf_counter() - t0:.0f} s)")
        return
    nlo_boosters = [b for b in NLO_BOOSTERS if b in boosters]
    for case in NLO_CASES:
        for fraction in (0.10, 0.40):
            nlo_table(case, fraction, nlo_boosters)
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
