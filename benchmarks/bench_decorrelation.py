"""Mass decorrelation: hepbdt's flatness loss, uBoost and DDT map against hep_ml's.

The toy of ``hepbdt.demo_data.sculpting_arrays`` (signal peak at 125 GeV on a falling
background; mjj and tau21 discriminate and sculpt, balance and width discriminate without
mass information), ``--signal`` + ``--background`` events to train (seed 1) and as many
to test (seed 2). Every model grows ``--trees`` trees of depth ``--depth`` at learning
rate 0.1 on all events:

  hepbdt          ``BDTClassifier(decorrelation="flatness")``, gradient boosting (binomial
                  deviance), background flat in 10 bins of mjj, over ``--strengths``
  hep_ml-flat     ``UGradientBoostingClassifier(loss=BinFlatnessLossFunction(["mjj"],
                  uniform_label=0, n_bins=10, fl_coefficient=s))`` over the same strengths
  hep_ml-uboost   ``uBoostClassifier(uniform_features=["mjj"], uniform_label=0,
                  efficiency_steps=--uboost-steps)`` (its trees are ``--trees`` per step)
  hepbdt-uboost   ``BDTClassifier(boosting="adaboost", beta=1, decorrelation="uboost",
                  decorrelation_steps=--uboost-steps)``, ``--trees`` per step, over
                  ``--uboost-strengths``, efficiencies in ``--uboost-bins`` bins of mjj
                  (hep_ml's: in the 50 nearest neighbours); beta = 1 is hep_ml's SAMME
                  reweighting (a misclassified event gains (1 - err) / err against a
                  correct one)
  hepbdt-ada      hepbdt's plain AdaBoost, beta = 1 (the reference of uBoost)
  <model>+ddt     the same model with ``decorrelation_map="ddt"`` (the score mapped
                  through the background's score CDF in bins of mjj, after the fit): for
                  plain and for the flatness loss at ``--ddt-strengths``
  no-mass         hepbdt without decorrelation on balance, width and noise only
  plain           hepbdt without decorrelation on every feature

For each model: the background rejection at 50 % signal efficiency and 1/JSD of the
background mjj (50 bins, base 2) before and after that cut, on the test events, and the
fit time, and the statistical floor: the median (10-90 %) 1/JSD of
``FLOOR_DRAWS`` selections that keep the same fraction of the test background at random,
whatever its mass (the best any selection of that efficiency can do on this sample).
Then: which hep_ml points hepbdt's front dominates (a hepbdt point at least as good in
both), hepbdt's best rejection at the 1/JSD the no-mass model reaches, the best rejection
among the rows at their floor (1/JSD above the floor's 10 % point), every hepbdt row cut
where it keeps the no-mass cut's background efficiency (so at that cut's floor: the signal
it keeps and its 1/JSD against the floor's band), and the ratio of
hep_ml's fit time to hepbdt's at each strength (hepbdt on all cores, and on one thread as
hep_ml, which is single-threaded). hep_ml is optional (``pip install --no-deps hep_ml``);
without it only hepbdt's rows are printed. With ``--draws N`` only the two flatness-loss
fronts are fitted, on N independent training and test samples, and each point's mean and
standard error are printed, with how many draws' hepbdt front dominates each hep_ml point.

    python benchmarks/bench_decorrelation.py [--signal 20000] [--background 40000]
        [--trees 100] [--depth 3] [--strengths 0.003,0.01,...,100] [--no-uboost]
        [--uboost-steps 5] [--uboost-strengths 0.3,1,3,10] [--uboost-bins 10]
        [--ddt-strengths 0.3,1,3] [--draws N]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# No OpenMP library is compared here (hep_ml is NumPy and scikit-learn's single-threaded
# trees): hepbdt runs with its own default, threads that sleep at once when idle
# (_data otherwise sets libgomp's spinning; on a loaded machine spinning threads made the
# plain fit 28x slower: 12 s against 0.43 s).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from _data import machine  # noqa: E402

from hepbdt import BDTClassifier  # noqa: E402
from hepbdt.demo_data import SCULPTING_FEATURES, sculpting_arrays  # noqa: E402
from hepbdt.evaluation import decorrelation_measures  # noqa: E402

NO_MASS = ["balance", "width", "noise"]
FLOOR_DRAWS = 20


def sample(n_signal: int, n_background: int, seed: int):
    a = sculpting_arrays(n_signal, n_background, seed=seed)
    X = np.column_stack([a[f] for f in SCULPTING_FEATURES])
    return X, a["label"], a["weight"].astype(np.float64), a["mjj"].astype(np.float64)


def measure(score, test) -> tuple[float, float]:
    _, y, w, mass = test
    bins = np.linspace(*_range(mass), 51)
    return decorrelation_measures(score, y, mass, w, efficiencies=(0.5,), bins=bins).at(0.5)


def _range(mass):
    return float(mass.min()), float(mass.max())


def floor(efficiency, test, draws=FLOOR_DRAWS) -> tuple[float, float, float]:
    """1/JSD (10 %, median, 90 %) of selections keeping ``efficiency`` of the test
    background at random: the statistical floor of a cut of that background efficiency.
    Selections that keep no event have no JSD and are left out; NaN when all are empty (a
    cut that keeps almost none of the background)."""
    from hepbdt.evaluation import jensen_shannon_divergence

    _, y, w, mass = test
    background = y == 0
    edges = np.linspace(*_range(mass), 51)
    before = np.histogram(mass[background], edges, weights=w[background])[0]
    rng = np.random.default_rng(0)
    inverse = []
    for _ in range(draws):
        keep = rng.random(int(background.sum())) < efficiency
        after = np.histogram(mass[background][keep], edges, weights=w[background][keep])[0]
        if after.sum() > 0:
            inverse.append(1.0 / jensen_shannon_divergence(before, after))
    if not inverse:
        return (float("nan"),) * 3
    return tuple(float(v) for v in np.percentile(inverse, [10, 50, 90]))


def at_background_efficiency(score, test, efficiency) -> tuple[float, float, float]:
    """The cut keeping the top ``efficiency`` of the test background's weight: (the
    background fraction it keeps, the signal fraction it keeps, 1/JSD of the background
    mjj), so that models are compared at one statistical floor."""
    from hepbdt.evaluation import jensen_shannon_divergence

    _, y, w, mass = test
    background = y == 0
    order = np.argsort(-score[background], kind="stable")
    kept = np.cumsum(w[background][order]) / w[background].sum()
    threshold = score[background][order][min(np.searchsorted(kept, efficiency), order.size - 1)]
    passed = score >= threshold
    edges = np.linspace(*_range(mass), 51)
    before = np.histogram(mass[background], edges, weights=w[background])[0]
    after = np.histogram(mass[background & passed], edges, weights=w[background & passed])[0]
    fraction = float(w[background & passed].sum() / w[background].sum())
    signal = float(w[~background & passed].sum() / w[~background].sum())
    return fraction, signal, 1.0 / jensen_shannon_divergence(before, after)


def fit_hepbdt(train, trees, depth, strength=None, columns=None, n_jobs=None, ddt=False,
               uboost_steps=None, uboost_bins=10):
    """A hepbdt fit: gradient boosting (flatness loss at ``strength``), or with
    ``uboost_steps`` AdaBoost (beta 1; uBoost at ``strength`` when it is not None);
    ``ddt`` adds the quantile map. (model, fit seconds, columns)."""
    X, y, w, mass = train
    cols = list(range(X.shape[1])) if columns is None else columns
    options = dict(n_trees=trees, max_depth=depth, learning_rate=0.1, random_state=0,
                   n_jobs=n_jobs)
    extra = {}
    if uboost_steps is not None:
        options.update(boosting="adaboost", beta=1.0)
        if strength is not None:
            options.update(decorrelation="uboost", decorrelation_strength=strength,
                           decorrelation_steps=uboost_steps, decorrelation_bins=uboost_bins)
    elif strength is not None:
        options.update(decorrelation="flatness", decorrelation_strength=strength)
    if ddt:
        options.update(decorrelation_map="ddt")
    if "decorrelation" in options or ddt:
        extra = {"decorrelate": mass}
    model = BDTClassifier(**options)
    start = time.perf_counter()
    model.fit(X[:, cols], y, w, **extra)
    return model, time.perf_counter() - start, cols


def fit_hep_ml(kind, train, trees, depth, strength=None, steps=5):
    import pandas as pd
    from hep_ml.gradientboosting import UGradientBoostingClassifier
    from hep_ml.losses import BinFlatnessLossFunction
    from hep_ml.uboost import uBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    X, y, w, _ = train
    frame = pd.DataFrame(X, columns=list(SCULPTING_FEATURES))
    features = list(SCULPTING_FEATURES)
    if kind == "flat":
        loss = BinFlatnessLossFunction(["mjj"], uniform_label=0, n_bins=10, fl_coefficient=strength)
        model = UGradientBoostingClassifier(loss=loss, n_estimators=trees, max_depth=depth,
                                            learning_rate=0.1, train_features=features,
                                            random_state=0)
    else:
        model = uBoostClassifier(uniform_features=["mjj"], uniform_label=0,
                                 train_features=features, n_estimators=trees,
                                 efficiency_steps=steps,
                                 base_estimator=DecisionTreeClassifier(max_depth=depth),
                                 random_state=0)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(frame, y, sample_weight=w)
    return model, time.perf_counter() - start


def hep_ml_score(kind, model, test):
    import pandas as pd

    frame = pd.DataFrame(test[0], columns=list(SCULPTING_FEATURES))
    if kind == "flat":
        return model.decision_function(frame)
    return model.predict_proba(frame)[:, 1]


def ddt_rows(args, train, test, add) -> None:
    """The DDT map on the plain model and on the flatness loss at ``--ddt-strengths``."""
    strengths = [None] + [float(s) for s in args.ddt_strengths.split(",") if s]
    for s in strengths:
        model, seconds, _ = fit_hepbdt(train, args.trees, args.depth, s, ddt=True)
        add("plain+ddt" if s is None else "hepbdt+ddt", s, model.decision_function(test[0]),
            seconds)


def uboost_rows(args, train, test, add) -> None:
    """hepbdt's plain AdaBoost and uBoost at ``--uboost-strengths`` (beta 1, as hep_ml)."""
    model, seconds, _ = fit_hepbdt(train, args.trees, args.depth, uboost_steps=args.uboost_steps)
    add("hepbdt-ada", None, model.decision_function(test[0]), seconds)
    for s in (float(v) for v in args.uboost_strengths.split(",") if v):
        model, seconds, _ = fit_hepbdt(train, args.trees, args.depth, s,
                                       uboost_steps=args.uboost_steps,
                                       uboost_bins=args.uboost_bins)
        add("hepbdt-uboost", s, model.decision_function(test[0]), seconds)


def summarise_no_mass(rows) -> None:
    """The no-mass alternative against every hepbdt row: at its 1/JSD, and at the floor."""
    alt = next(r for r in rows if r["model"] == "no-mass")
    ours = [r for r in rows if r["model"].startswith(("hepbdt", "plain+"))]
    better = [r for r in ours if r["1/JSD"] >= alt["1/JSD"]]
    best = max(better, key=lambda r: r["rejection"], default=None)
    print(f"no-mass model: rejection {alt['rejection']:.3g} at 1/JSD {alt['1/JSD']:.4g} (its "
          f"floor: {alt['floor'][1]:.4g}, 10-90 % {alt['floor'][0]:.4g}-{alt['floor'][2]:.4g}); "
          + (f"hepbdt at 1/JSD >= that: best rejection {best['rejection']:.3g} ({best['model']})"
             if best is not None else "no hepbdt row reaches that 1/JSD"))
    at_floor = [r for r in ours if r["1/JSD"] >= r["floor"][0]]
    best = max(at_floor, key=lambda r: r["rejection"], default=None)
    print("hepbdt rows at their statistical floor (1/JSD above the floor's 10 % point): "
          + (", ".join(f"{r['model']} {'' if r['strength'] is None else r['strength']:} "
                       f"(rejection {r['rejection']:.3g}, 1/JSD {r['1/JSD']:.4g}, floor "
                       f"{r['floor'][1]:.4g})" for r in at_floor) or "none")
          + (f"; best rejection {best['rejection']:.3g} against the no-mass model's "
             f"{alt['rejection']:.3g}" if best is not None else ""))


def matched_to_no_mass(rows, test) -> None:
    """Every hepbdt row cut where it keeps the no-mass model's background efficiency, whose
    statistical floor is then the no-mass model's own: the signal it keeps against the
    no-mass model's 50 %, and its 1/JSD against that floor."""
    alt = next(r for r in rows if r["model"] == "no-mass")
    p = 1.0 / alt["rejection"]
    low, median, high = alt["floor"]
    print(f"\nAt the no-mass model's background efficiency {p:.4f} (its cut keeps 50 % of the "
          f"signal at 1/JSD {alt['1/JSD']:.4g}; random selections of that efficiency: "
          f"{median:.4g}, 10-90 % {low:.4g}-{high:.4g}):")
    for r in rows:
        if not r["model"].startswith(("hepbdt", "plain")):
            continue
        kept, signal, inverse = at_background_efficiency(r["score"], test, p)
        s = "" if r["strength"] is None else f" {r['strength']:g}"
        verdict = ("within the floor's 10-90 %" if low <= inverse else "below the floor's 10 %")
        print(f"  {r['model']}{s}: keeps {kept:.4f} of the background and {signal:.3f} of the "
              f"signal, 1/JSD {inverse:.4g} ({verdict})")


def dominated(point, front) -> bool:
    return any(r >= point[0] and j >= point[1] for r, j in front)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--signal", type=int, default=20_000)
    parser.add_argument("--background", type=int, default=40_000)
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--strengths", default="0.003,0.01,0.03,0.1,0.3,0.5,1,3,10,30,100")
    parser.add_argument("--no-uboost", action="store_true")
    parser.add_argument("--uboost-steps", type=int, default=5)
    parser.add_argument("--uboost-strengths", default="0.3,1,3,10")
    parser.add_argument("--uboost-bins", type=int, default=10)
    parser.add_argument("--ddt-strengths", default="0.3,1,3")
    parser.add_argument("--no-hep-ml", action="store_true")
    parser.add_argument("--draws", type=int, default=0,
                        help="only the flatness fronts, over this many independent draws")
    args = parser.parse_args(argv)
    strengths = [float(s) for s in args.strengths.split(",")]
    print(machine())
    if args.draws:
        return draws_table(args, strengths)
    train = sample(args.signal, args.background, 1)
    test = sample(args.signal, args.background, 2)
    print(f"{args.signal:,} signal + {args.background:,} background events to train and as "
          f"many to test; {args.trees} trees of depth {args.depth}, learning rate 0.1")
    warm = sample(200, 400, 3)
    fit_hepbdt(warm, 2, 2, 1.0)  # compile the kernels before timing
    fit_hepbdt(warm, 2, 2, 1.0, uboost_steps=2)
    have_hep_ml = not args.no_hep_ml
    if have_hep_ml:
        try:
            import hep_ml

            print(f"hep_ml {hep_ml.__version__}")
        except ImportError as exc:
            print(f"hep_ml not importable ({exc}); hepbdt only")
            have_hep_ml = False
    rows = []

    def add(name, strength, score, seconds, one_thread=None):
        rejection, inverse = measure(score, test)
        low, median, high = floor(1.0 / rejection, test)
        rows.append({"model": name, "strength": strength, "rejection": rejection,
                     "1/JSD": inverse, "fit s": seconds, "fit s 1 thread": one_thread,
                     "floor": (low, median, high), "score": score})
        s = "" if strength is None else f"{strength:g}"
        single = "" if one_thread is None else f"{one_thread:9.2f}"
        print(f"{name:14s} {s:>8s} {rejection:10.3g} {inverse:10.4g} {seconds:9.2f} {single:>9s} "
              f"{median:8.4g} ({low:.4g}-{high:.4g})", flush=True)

    print(f"{'model':14s} {'strength':>8s} {'rej@50%':>10s} {'1/JSD':>10s} {'fit s':>9s} "
          f"{'1 thread':>9s} {'floor 1/JSD (10-90 %)':>22s}")
    model, seconds, cols = fit_hepbdt(train, args.trees, args.depth)
    add("plain", None, model.decision_function(test[0][:, cols]), seconds)
    columns = [SCULPTING_FEATURES.index(f) for f in NO_MASS]
    model, seconds, cols = fit_hepbdt(train, args.trees, args.depth, columns=columns)
    add("no-mass", None, model.decision_function(test[0][:, cols]), seconds)
    for s in strengths:
        model, seconds, cols = fit_hepbdt(train, args.trees, args.depth, s)
        one = fit_hepbdt(train, args.trees, args.depth, s, n_jobs=1)[1]
        add("hepbdt", s, model.decision_function(test[0]), seconds, one)
        if have_hep_ml:
            hm, hm_seconds = fit_hep_ml("flat", train, args.trees, args.depth, s)
            add("hep_ml-flat", s, hep_ml_score("flat", hm, test), hm_seconds)
    ddt_rows(args, train, test, add)
    if not args.no_uboost:
        uboost_rows(args, train, test, add)
    if have_hep_ml and not args.no_uboost:
        hm, hm_seconds = fit_hep_ml("uboost", train, args.trees, args.depth,
                                    steps=args.uboost_steps)
        add("hep_ml-uboost", None, hep_ml_score("uboost", hm, test), hm_seconds)

    print()
    for mine, name in (("hepbdt", "hep_ml-flat"), ("hepbdt", "hep_ml-uboost"),
                       ("hepbdt-uboost", "hep_ml-uboost")):
        front = [(r["rejection"], r["1/JSD"]) for r in rows if r["model"] == mine]
        points = [r for r in rows if r["model"] == name]
        if points and front:
            beaten = [r for r in points if dominated((r["rejection"], r["1/JSD"]), front)]
            print(f"{mine}'s front dominates {len(beaten)} of {len(points)} {name} points"
                  + ("" if len(beaten) == len(points) else "; not: " + ", ".join(
                      f"({r['rejection']:.3g}, {r['1/JSD']:.3g})" for r in points
                      if r not in beaten)))
    summarise_no_mass(rows)
    matched_to_no_mass(rows, test)
    strong = [r for r in rows if r["model"] == "hepbdt" and r["1/JSD"] >= 50]
    print("hepbdt strengths with 1/JSD >= 50: "
          + (", ".join(f"{r['strength']:g} (rejection {r['rejection']:.3g}, 1/JSD "
                       f"{r['1/JSD']:.3g})" for r in strong) or "none"))
    if have_hep_ml:
        print_fit_ratios(rows)
    return rows


def draws_table(args, strengths) -> list[dict]:
    """hepbdt's and hep_ml's flatness-loss points over ``--draws`` independent training and
    test samples (seeds 10 + 2 i and 11 + 2 i): the mean and standard error of each point,
    whether the mean fronts dominate, and in how many draws each hep_ml point is dominated
    by the same draw's hepbdt front."""
    print(f"{args.signal:,} signal + {args.background:,} background events to train and as "
          f"many to test, {args.draws} draws; {args.trees} trees of depth {args.depth}")
    fit_hepbdt(sample(200, 400, 3), 2, 2, 1.0)  # compile the kernels
    points = {}  # (model, strength) -> [(rejection, 1/JSD) per draw]
    for i in range(args.draws):
        train = sample(args.signal, args.background, 10 + 2 * i)
        test = sample(args.signal, args.background, 11 + 2 * i)
        for s in strengths:
            model = fit_hepbdt(train, args.trees, args.depth, s)[0]
            points.setdefault(("hepbdt", s), []).append(
                measure(model.decision_function(test[0]), test))
            if not args.no_hep_ml:
                hm = fit_hep_ml("flat", train, args.trees, args.depth, s)[0]
                points.setdefault(("hep_ml-flat", s), []).append(
                    measure(hep_ml_score("flat", hm, test), test))
        print(f"draw {i + 1} of {args.draws} done", flush=True)
    print("\n| model | strength | rejection @ 50 % (mean +- s.e.) | 1/JSD (mean +- s.e.) "
          "| draws its hepbdt front dominates |")
    print("| --- | --- | --- | --- | --- |")
    rows = []
    for (name, s), values in points.items():
        v = np.asarray(values)
        mean, se = v.mean(axis=0), v.std(axis=0, ddof=1) / np.sqrt(len(v))
        beaten = ""
        if name == "hep_ml-flat":
            fronts = [[points[("hepbdt", t)][i] for t in strengths] for i in range(len(v))]
            beaten = f"{sum(dominated(tuple(p), f) for p, f in zip(v, fronts, strict=True))} of {len(v)}"
        rows.append({"model": name, "strength": s, "rejection": mean[0], "1/JSD": mean[1]})
        print(f"| {name} | {s:g} | {mean[0]:.3g} +- {se[0]:.2g} | {mean[1]:.4g} +- {se[1]:.2g} "
              f"| {beaten} |")
    front = [(r["rejection"], r["1/JSD"]) for r in rows if r["model"] == "hepbdt"]
    theirs = [r for r in rows if r["model"] == "hep_ml-flat"]
    if theirs:
        beaten = [r for r in theirs if dominated((r["rejection"], r["1/JSD"]), front)]
        print(f"\nhepbdt's mean front dominates {len(beaten)} of {len(theirs)} hep_ml-flat mean "
              "points" + ("" if len(beaten) == len(theirs) else "; not: " + ", ".join(
                  f"{r['strength']:g} ({r['rejection']:.3g}, {r['1/JSD']:.4g})" for r in theirs
                  if r not in beaten)))
    return rows


def print_fit_ratios(rows) -> None:
    """hep_ml's fit time over hepbdt's: the flatness losses strength by strength (all
    cores and one thread), and uBoost."""
    for key, what in (("fit s", "all cores"), ("fit s 1 thread", "one thread")):
        ratios = [h["fit s"] / r[key] for r in rows if r["model"] == "hepbdt"
                  for h in rows if h["model"] == "hep_ml-flat" and h["strength"] == r["strength"]]
        if ratios:
            print(f"fit time hep_ml-flat / hepbdt ({what}): min {min(ratios):.1f}x, median "
                  f"{float(np.median(ratios)):.1f}x, max {max(ratios):.1f}x")
    theirs = [r["fit s"] for r in rows if r["model"] == "hep_ml-uboost"]
    ours = [r["fit s"] for r in rows if r["model"] == "hepbdt-uboost"]
    if theirs and ours:
        print(f"fit time hep_ml-uboost / hepbdt-uboost: {theirs[0] / max(ours):.1f}x-"
              f"{theirs[0] / min(ours):.1f}x")


if __name__ == "__main__":
    main()
