"""Every library at its defaults on a panel of data sets: the measurement behind hepbdt's defaults.

For each data set, ``--splits`` random 50/50 train/test splits (stratified by class, by
sample for the demo ntuples; split ``i`` uses seed ``i``); on each split every model is
fitted once in turn, so that drifts in machine load hit every library alike, and the
tables give the medians over the splits of the test metric, of the fit time and of the
number of trees kept (early stopping ends some sooner). Columns ``... - best peer`` give
hepbdt's AUC minus the best of XGBoost, LightGBM and HistGradientBoosting, or its RMSE
divided by the best peer's. The metrics are deterministic; the fit times are as noisy as
the machine's load (the medians damp that, they do not remove it). Metrics:

- classification: test ROC AUC of the raw score (hepbdt ``decision_function``, XGBoost
  ``output_margin``, LightGBM ``raw_score``, HistGradientBoosting ``decision_function``),
  weighted where the data set has weights;
- regression: test RMSE of ``predict``.

Models, all at their library's defaults (only ``random_state`` is set, to the split's seed):
hepbdt ``BDTClassifier()`` / ``BDTRegressor()``; XGBoost ``XGBClassifier()`` /
``XGBRegressor()`` with ``n_jobs`` = all cores; LightGBM ``LGBMClassifier()`` /
``LGBMRegressor()`` with ``verbose=-1``; scikit-learn ``HistGradientBoostingClassifier()`` /
``HistGradientBoostingRegressor()`` (whose default early stopping holds out 10 % when the
training set has more than 10,000 events). ``--hepbdt PARAMS_JSON`` (repeatable) adds a
hepbdt row with those parameters (``hepbdt#1``, ``hepbdt#2``, ...), so that candidate
defaults are compared in the same run.

The panel (``--only`` takes these names; ``higgs-like-1M`` runs with ``--large``):

========================  ======  =========================================================
tmva-class                class   ROOT's TMVA tutorial ntuple (``../shared/data``), var1..var4,
                                  background weights used in training and AUC
tmva-reg                  reg     ROOT's TMVA regression tutorial, var1, var2 -> fvalue
demo                      class   the repo's ``data/`` ntuples read as ``analyses/demo.toml``
                                  does (its features and preselection; signal against QCD and
                                  ttbar). Training weights: the physics weights, events with a
                                  negative weight left out (XGBoost refuses negative weights;
                                  the same events for every library), each class scaled to
                                  the signal's event count (the demo's equal_num_events).
                                  Test AUC: the signed physics weights (hepbdt's weighted
                                  Mann-Whitney AUC, defined for negative weights)
breast-cancer             class   scikit-learn's ``load_breast_cancer``
diabetes                  reg     scikit-learn's ``load_diabetes``
hastie                    class   ``make_hastie_10_2``, 12,000 events
friedman1                 reg     ``make_friedman1``, 20,000 events x 10, noise=1
higgs-like                class   ``_data.higgs_like(200_000, 28, seed=1)``, weighted
higgs-like-1M             class   ``_data.higgs_like(1_000_000, 28)``, weighted (``--large``)
========================  ======  =========================================================

Every feature matrix is converted to float32 once, so that every library bins the same
values. AUCs use scikit-learn's ``roc_auc_score`` except where test weights are negative.
A data set whose files are absent is skipped with a note.

    python benchmarks/bench_defaults.py [--splits 5] [--only NAME,...] [--large]
        [--hepbdt '{"n_trees": 500, "max_depth": 4}' ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED_DATA = REPO.parent / "shared" / "data"
sys.path.insert(0, str(HERE))

from _data import higgs_like, machine  # noqa: E402

PEERS = ("xgboost", "lightgbm", "sklearn-hgb")
TEST_SIZE = 0.5


@dataclass
class PanelSet:
    """One data set: float32 X (n, m), y (int 0/1 labels, or float targets), weights for
    training and for the test metric (None: unit), and the classes a split stratifies."""

    name: str
    task: str  # "classification" or "regression"
    X: np.ndarray
    y: np.ndarray
    w_fit: np.ndarray | None = None
    w_eval: np.ndarray | None = None
    strata: np.ndarray | None = None
    balance_classes: bool = False  # scale each class's training weights to the signal count


# -- the panel ------------------------------------------------------------------------------


def _tmva_class() -> PanelSet:
    import hepbdt
    from hepbdt.io import Sample

    path = SHARED_DATA / "tmva_class_example.root"
    if not path.exists():
        raise FileNotFoundError(path)
    d = hepbdt.read([Sample("signal", str(path), tree="TreeS", label=1),
                     Sample("background", str(path), tree="TreeB", label=0, weight="weight")],
                    ["var1", "var2", "var3", "var4"], progress=False)
    return PanelSet("tmva-class", "classification", d.X, d.y, d.w, d.w, d.y)


def _tmva_reg() -> PanelSet:
    import hepbdt
    from hepbdt.io import Sample

    path = SHARED_DATA / "tmva_reg_example.root"
    if not path.exists():
        raise FileNotFoundError(path)
    d = hepbdt.read(Sample("regression", str(path), tree="TreeR", target="fvalue"),
                    ["var1", "var2"], progress=False)
    return PanelSet("tmva-reg", "regression", d.X, d.y.astype(np.float64))


def _demo() -> PanelSet:
    import hepbdt
    from hepbdt.analysis.config import load_config

    config = load_config(REPO / "analyses" / "demo.toml")
    d = hepbdt.read(config.make_samples(), config.feature_expressions, event=config.event,
                    inf_as_missing=config.inf_as_missing, progress=False)
    w_fit = np.where(d.w > 0, d.w, 0.0)
    return PanelSet("demo", "classification", d.X, d.y, w_fit, d.w, d.sample_index,
                    balance_classes=True)


def _breast_cancer() -> PanelSet:
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return PanelSet("breast-cancer", "classification", X, y, strata=y)


def _diabetes() -> PanelSet:
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    return PanelSet("diabetes", "regression", X, y)


def _hastie() -> PanelSet:
    from sklearn.datasets import make_hastie_10_2

    X, y = make_hastie_10_2(n_samples=12_000, random_state=0)
    y = (y > 0).astype(np.int32)
    return PanelSet("hastie", "classification", X, y, strata=y)


def _friedman1() -> PanelSet:
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=20_000, n_features=10, noise=1.0, random_state=0)
    return PanelSet("friedman1", "regression", X, y)


def _higgs(n: int, seed: int, name: str) -> Callable[[], PanelSet]:
    def load() -> PanelSet:
        X, y, w = higgs_like(n, 28, seed=seed)
        return PanelSet(name, "classification", X, y.astype(np.int32), w, w, y)
    return load


PANEL: dict[str, Callable[[], PanelSet]] = {
    "tmva-class": _tmva_class,
    "tmva-reg": _tmva_reg,
    "demo": _demo,
    "breast-cancer": _breast_cancer,
    "diabetes": _diabetes,
    "hastie": _hastie,
    "friedman1": _friedman1,
    "higgs-like": _higgs(200_000, 1, "higgs-like"),
}
LARGE = {"higgs-like-1M": _higgs(1_000_000, 0, "higgs-like-1M")}


# -- models ---------------------------------------------------------------------------------


@dataclass
class ModelSpec:
    """A column of the tables: a library at its defaults, or hepbdt with ``params``."""

    name: str
    library: str
    params: dict[str, Any]


def make_model(spec: ModelSpec, task: str, seed: int) -> Any:
    """A fresh estimator for ``task``; every library's defaults but ``random_state``."""
    classify = task == "classification"
    if spec.library == "hepbdt":
        import hepbdt

        cls = hepbdt.BDTClassifier if classify else hepbdt.BDTRegressor
        return cls(**{"random_state": seed, **spec.params})
    if spec.library == "xgboost":
        import xgboost as xgb

        cls = xgb.XGBClassifier if classify else xgb.XGBRegressor
        return cls(n_jobs=os.cpu_count(), random_state=seed)
    if spec.library == "lightgbm":
        import lightgbm as lgb

        cls = lgb.LGBMClassifier if classify else lgb.LGBMRegressor
        return cls(verbose=-1, random_state=seed)
    if spec.library == "sklearn-hgb":
        from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

        cls = HistGradientBoostingClassifier if classify else HistGradientBoostingRegressor
        return cls(random_state=seed)
    raise ValueError(spec.library)


def raw_score(model: Any, library: str, X: np.ndarray) -> np.ndarray:
    """The classifier's untransformed score (no saturation of probabilities near 0 or 1)."""
    if library == "xgboost":
        return np.asarray(model.predict(X, output_margin=True), dtype=np.float64)
    if library == "lightgbm":
        return np.asarray(model.predict(X, raw_score=True), dtype=np.float64)
    return np.asarray(model.decision_function(X), dtype=np.float64)


def n_trees(model: Any, library: str) -> int:
    """Boosting rounds the fitted model kept (fewer than asked where early stopping ended it)."""
    if library == "hepbdt":
        return int(model.n_trees_)
    if library == "xgboost":
        return int(model.get_booster().num_boosted_rounds())
    return int(model.n_iter_)  # LightGBM and HistGradientBoosting


def auc(y: np.ndarray, score: np.ndarray, w: np.ndarray | None) -> float:
    """scikit-learn's ROC AUC; hepbdt's weighted Mann-Whitney AUC where a weight is negative."""
    if w is not None and (w < 0).any():
        from hepbdt.evaluation import roc_auc

        return roc_auc(y, score, w)
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, score, sample_weight=w))


def _balanced(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each class's weights scaled to sum to the number of signal (label 1) events."""
    out = w.astype(np.float64, copy=True)
    n_signal = float(np.count_nonzero(y == 1))
    for cls in np.unique(y):
        mask = y == cls
        out[mask] *= n_signal / out[mask].sum()
    return out


def run_one(spec: ModelSpec, data: PanelSet, train: np.ndarray, test: np.ndarray,
            seed: int) -> tuple[float, float, int]:
    """Fit ``spec`` on the training events; (test metric, fit seconds, trees kept)."""
    X_train, y_train = data.X[train], data.y[train]
    w_train = None
    if data.w_fit is not None:
        w_train = data.w_fit[train]
        keep = w_train > 0  # the demo's negative-weight events, left out for every library
        if not keep.all():
            X_train, y_train, w_train = X_train[keep], y_train[keep], w_train[keep]
        if data.balance_classes:
            w_train = _balanced(y_train, w_train)
    model = make_model(spec, data.task, seed)
    t0 = time.perf_counter()
    model.fit(X_train, y_train, sample_weight=w_train)
    fit_s = time.perf_counter() - t0
    X_test, y_test = data.X[test], data.y[test]
    if data.task == "classification":
        w_test = None if data.w_eval is None else data.w_eval[test]
        metric = auc(y_test, raw_score(model, spec.library, X_test), w_test)
    else:
        residual = np.asarray(model.predict(X_test), dtype=np.float64) - y_test
        metric = float(np.sqrt(np.mean(residual**2)))
    return metric, fit_s, n_trees(model, spec.library)


def splits(data: PanelSet, n_splits: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n_splits`` random 50/50 (train, test) index pairs; split ``i`` uses seed ``i``."""
    from sklearn.model_selection import train_test_split

    index = np.arange(len(data.y))
    return [tuple(train_test_split(index, test_size=TEST_SIZE, random_state=i, stratify=data.strata))
            for i in range(n_splits)]


def warm_up(specs: list[ModelSpec], tasks: set[str]) -> None:
    """Fit each model once on a few hundred events: Numba loads its cached kernels, the
    other libraries their shared objects, before anything is timed."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 4)).astype(np.float32)
    targets = {"classification": (X[:, 0] > 0).astype(np.int32), "regression": X[:, 0] + X[:, 1]}
    for task in sorted(tasks):
        data = PanelSet("warm-up", task, X, targets[task], strata=None)
        half = np.arange(400) < 200
        for spec in specs:
            run_one(spec, data, np.flatnonzero(half), np.flatnonzero(~half), 0)


# -- tables ---------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def metric_table(task: str, results: dict[str, dict[str, dict[str, float]]],
                 sizes: dict[str, str], specs: list[ModelSpec]) -> str:
    """Median test metric per data set of ``task``; hepbdt columns against the best peer."""
    ours = [s.name for s in specs if s.library == "hepbdt"]
    peers = [s.name for s in specs if s.library != "hepbdt"]
    classify = task == "classification"
    compare = ([f"{name} - best peer" for name in ours] if classify
               else [f"{name} / best peer" for name in ours])
    header = ["data set", "train n x m", *(s.name for s in specs), *compare]
    rows = []
    for data_name, med in results.items():
        if med["_task"] != task:
            continue
        values = {name: med[name]["metric"] for name in ours + peers}
        row = [data_name, sizes[data_name]]
        row += [f"{values[s.name]:.4f}" if classify else f"{values[s.name]:.4g}" for s in specs]
        if classify:
            best = max(values[p] for p in peers)
            row += [f"{values[name] - best:+.4f}" for name in ours]
        else:
            best = min(values[p] for p in peers)
            row += [f"{values[name] / best:.3f}" for name in ours]
        rows.append(row)
    return _table(header, rows)


def median_table(key: str, results: dict[str, dict[str, Any]], sizes: dict[str, str],
                 specs: list[ModelSpec]) -> str:
    """Median ``key`` ("fit_s" or "trees") per data set and model."""
    rows = [[name, sizes[name], *(f"{med[s.name][key]:.3g}" for s in specs)]
            for name, med in results.items()]
    return _table(["data set", "train n x m", *(s.name for s in specs)], rows)


# -- main -----------------------------------------------------------------------------------


def main() -> None:
    """Run the panel and print the machine line, the legend and the three tables."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--splits", type=int, default=5, help="random 50/50 splits per data set")
    ap.add_argument("--only", help="comma-separated data set names (default: the whole panel)")
    ap.add_argument("--large", action="store_true", help="add higgs-like-1M")
    ap.add_argument("--hepbdt", action="append", default=[], metavar="PARAMS_JSON",
                    help="an extra hepbdt column with these parameters (repeatable)")
    args = ap.parse_args()

    available = {**PANEL, **LARGE}
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in available]
        if unknown:
            ap.error(f"unknown data set(s) {unknown}; the panel: {', '.join(available)}")
    else:
        names = list(PANEL) + (list(LARGE) if args.large else [])
    specs = [ModelSpec("hepbdt", "hepbdt", {})]
    for i, text in enumerate(args.hepbdt, 1):
        params = json.loads(text)
        if not isinstance(params, dict):
            ap.error(f"--hepbdt takes a JSON object, not {text!r}")
        specs.append(ModelSpec(f"hepbdt#{i}", "hepbdt", params))
    specs += [ModelSpec(lib, lib, {}) for lib in PEERS]

    panel: list[PanelSet] = []
    for name in names:
        try:
            data = available[name]()
        except FileNotFoundError as err:
            print(f"skipping {name}: {err} is absent", file=sys.stderr)
            continue
        data.X = np.ascontiguousarray(data.X, dtype=np.float32)
        panel.append(data)
    warm_up(specs, {d.task for d in panel})

    results: dict[str, dict[str, Any]] = {}
    sizes: dict[str, str] = {}
    t_start = time.perf_counter()
    for data in panel:
        runs: dict[str, list[tuple[float, float, int]]] = {s.name: [] for s in specs}
        for i, (train, test) in enumerate(splits(data, args.splits)):
            for spec in specs:  # interleaved: drifts in machine load hit every model alike
                runs[spec.name].append(run_one(spec, data, train, test, i))
            line = ", ".join(f"{s.name} {runs[s.name][-1][0]:.4g} ({runs[s.name][-1][1]:.2f} s)"
                             for s in specs)
            print(f"  {data.name} split {i}: {line}", file=sys.stderr)
        sizes[data.name] = f"{len(train)} x {data.X.shape[1]}"
        results[data.name] = {"_task": data.task, **{
            name: {"metric": statistics.median(r[0] for r in rs),
                   "fit_s": statistics.median(r[1] for r in rs),
                   "trees": statistics.median(r[2] for r in rs)} for name, rs in runs.items()}}
    total_s = time.perf_counter() - t_start

    print(f"# {machine()}; {args.splits} random 50/50 splits (stratified for classification), "
          f"medians; every library at its defaults; {total_s:.0f} s in all")
    for spec in specs:
        if spec.params:
            print(f"# {spec.name}: BDTClassifier/BDTRegressor(**{json.dumps(spec.params)})")
    for task, title in (("classification", "Test ROC AUC (median)"),
                        ("regression", "Test RMSE (median)")):
        if any(r["_task"] == task for r in results.values()):
            print(f"\n{title}\n")
            print(metric_table(task, results, sizes, specs))
    print("\nFit seconds (median)\n")
    print(median_table("fit_s", results, sizes, specs))
    print("\nTrees kept (median; early stopping ends some sooner)\n")
    print(median_table("trees", results, sizes, specs))


if __name__ == "__main__":
    main()
