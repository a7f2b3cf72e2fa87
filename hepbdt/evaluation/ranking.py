"""Variable ranking: TMVA-style split importance, permutation importance, correlations.

:func:`tmva_importance` reads the fitted forest's flat node arrays (``feature``, ``gain``,
``cover``, ``tree_offsets``, ``tree_weights``); :func:`permutation_importance` needs only
a model that scores events; :func:`weighted_correlation` and :func:`correlation_matrices`
need only the data. Drawing is in :mod:`hepbdt.plotting`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hepbdt._util import feature_names_of, is_classifier, weight_exponent
from hepbdt.binned import BinnedMatrix
from hepbdt.evaluation._data import (
    check_labels,
    check_weights,
    class_codes,
    in_model_order,
    labels_in_model_order,
    named_array,
    real_array,
)
from hepbdt.evaluation.metrics import roc_auc
from hepbdt.io.dataset import FeatureMatrix

__all__ = [
    "FeatureRanking",
    "PermutationImportance",
    "correlation_matrices",
    "counted_trees",
    "permutation_importance",
    "ranking_names",
    "shuffleable_copy",
    "TMVA_RANKING",
    "tmva_importance",
    "weighted_correlation",
    "weighted_correlations",
]


@dataclass(frozen=True)
class FeatureRanking:
    """Split-based feature importances; ``importance`` is normalised to sum to 1."""

    feature_names: list[str]
    importance: np.ndarray
    split_count: np.ndarray
    total_gain: np.ndarray
    cover: np.ndarray
    #: TMVA's form (each tree's squared gains, square root) rather than the summed gains.
    quadrature: bool = False

    def order(self) -> np.ndarray:
        """Feature indices from most to least important (stable for ties)."""
        return np.argsort(-self.importance, kind="stable")

    def ranked(self) -> list[tuple[str, float]]:
        """(name, importance) pairs from most to least important."""
        return [(self.feature_names[i], float(self.importance[i])) for i in self.order()]


def _forest_of(model: Any) -> Any:
    forest = getattr(model, "forest_", None)
    if forest is None:
        forest = getattr(model, "forest", model)
    for attr in ("feature", "gain", "cover", "tree_offsets"):
        if not hasattr(forest, attr):
            raise TypeError(
                f"tmva_importance needs a fitted model (with forest_) or a Forest; "
                f"{type(model).__name__} has no node array {attr!r}"
            )
    return forest


#: How the outputs name the ranking they show: ``tmva_importance(quadrature=True)``.
TMVA_RANKING = ("TMVA's variable importance: each tree's squared split gains, normalised, "
                "summed with its boost weight, square root")


def tmva_importance(
    model: Any, feature_names: list[str] | None = None, quadrature: bool = False
) -> FeatureRanking:
    """TMVA-style importance from the forest's stored split gains.

    For feature ``f``: ``importance_f = sum over split nodes n using f of
    |tree_weight(n)| * gain_n``, normalised so the importances sum to 1 (all zero when the
    counted trees have no split; ValueError when their split gains are not finite or give
    a sum that is not positive, which cannot be normalised). The engine stores
    ``gain_n`` as the decrease of the booster's criterion summed over the node's events
    (e.g. Gini: ``W_parent I_parent - W_left I_left - W_right I_right``; variance and
    Newton: the loss reduction). For the classification criteria that is TMVA's
    "separation gain times the (weighted) number of events in the node"; TMVA's regression
    trees (``BoostType=Grad``, regression) divide the variance reduction by the parent's
    summed squared deviation (``RegressionVariance::GetSeparationGain``), which the forest
    does not store, so for gradient boosting and regression this ranking weighs a split by
    its absolute, not its relative, variance reduction (a 4-variable regression of 50
    trees: 0.380 where TMVA's definition gives 0.368). ``tree_weight`` is the tree's boost
    weight. With
    ``quadrature=True``, TMVA's ``MethodBDT::GetVariableImportance``: each tree's squared
    gains summed by feature and normalised to sum 1 within the tree
    (``DecisionTree::GetVariableImportance``), those fractions added over the trees with
    weight ``|tree_weight|``, then the square root.

    Also returned, unnormalised: the number of splits on each feature, their total gain
    and their total cover (summed training weight reaching the split nodes).

    The trees counted are those the model predicts with (:func:`counted_trees`): every
    tree of every class of a multi-class forest (K a round), every tree of every uBoost
    step, and each SAMME tree once (its forest holds K copies of each tree, one a class,
    with the same splits; the normalised importance is the same either way). A model
    keeping fewer rounds than its forest holds (``n_trees_``) is counted with those only.

    Parameters
    ----------
    model : fitted BDTClassifier / BDTRegressor, or a forest object with the node arrays
        ``feature``, ``gain``, ``cover``, ``tree_offsets`` (and ``tree_weights``)
    feature_names : names of the model's features in its order, default
        ``model.feature_names_in_`` or ``x0, x1, ...`` (:func:`ranking_names` checks them)
    quadrature : TMVA's formula (squared gains, normalised per tree, root of the sum)
    """
    forest = _forest_of(model)
    offsets = np.asarray(forest.tree_offsets, dtype=np.int64)
    trees = counted_trees(forest, getattr(model, "n_trees_", None))
    starts, stops = offsets[trees], offsets[trees + 1]
    sizes = stops - starts
    # the nodes of the counted trees, tree after tree
    nodes = np.repeat(starts - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + \
        np.arange(int(sizes.sum()), dtype=np.int64)
    feature = np.asarray(forest.feature)[nodes].astype(np.int64)
    gain = np.asarray(forest.gain, dtype=np.float64)[nodes]
    cover = np.asarray(forest.cover, dtype=np.float64)[nodes]
    tree_weights = getattr(forest, "tree_weights", None)
    tree_weights = np.ones(trees.size) if tree_weights is None else \
        np.abs(np.asarray(tree_weights, dtype=np.float64)[trees])
    node_tree_weight = np.repeat(tree_weights, sizes)

    n_features = getattr(forest, "n_features", None)
    if n_features is None:
        n_features = getattr(model, "n_features_in_", None)
    if n_features is None:
        n_features = int(feature.max()) + 1 if feature.size else 0
    feature_names = ranking_names(model, feature_names, int(n_features))
    n_features = len(feature_names)

    split = feature >= 0
    f = feature[split]
    _check_split_gains(gain[split], trees[np.repeat(np.arange(trees.size), sizes)[split]])
    largest = float(np.abs(gain[split]).max()) if f.size else 0.0
    # in units of the largest gain: the weights' scale cancels, and squares do not underflow
    relative = gain / largest if largest > 0 else gain
    if quadrature:
        local_offsets = np.concatenate([[0], np.cumsum(sizes)])
        importance = np.sqrt(_tmva_sum(feature, relative, local_offsets, tree_weights,
                                       n_features))
    else:
        importance = np.bincount(f, weights=node_tree_weight[split] * relative[split],
                                 minlength=n_features)
    importance = _normalised(importance, f.size, gain[split], largest if largest > 0 else 1.0)
    return FeatureRanking(
        feature_names=list(feature_names),
        importance=importance,
        split_count=np.bincount(f, minlength=n_features).astype(np.int64),
        total_gain=np.bincount(f, weights=gain[split], minlength=n_features),
        cover=np.bincount(f, weights=cover[split], minlength=n_features),
        quadrature=quadrature,
    )


def ranking_names(model: Any, feature_names: list[str] | None, n_features: int) -> list[str]:
    """The names of a split ranking's ``n_features`` features, in the model's order: those
    given, else the model's (``x0, x1, ...`` without). ValueError for a count other than
    ``n_features``, a name given twice, or a name of the model's features given at another
    feature's place: the names label the model's features by position, so ["d", "c", "b",
    "a"] for a model of a, b, c, d printed c's importance beside "b"."""
    if feature_names is None:
        return feature_names_of(model, n_features)
    names = [str(name) for name in feature_names]
    if len(names) != n_features:
        raise ValueError(f"got {len(names)} feature names for {n_features} features")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"feature_names give {twice} more than once: each of the {n_features} "
                         "features needs its own name")
    own = getattr(model, "feature_names_in_", None)
    own = [] if own is None else [str(name) for name in own]
    moved = [(i, name) for i, name in enumerate(names) if name in own and own.index(name) != i]
    if moved:
        i, name = moved[0]
        raise ValueError(f"feature_names give {name!r} for feature {i}, which is the model's "
                         f"{own[i]!r}; {name!r} is its feature {own.index(name)}. The names "
                         f"label the model's features in its order {own}: give them in that "
                         "order, or leave feature_names out")
    return names


def _normalised(importance: np.ndarray, n_splits: int, split_gain: np.ndarray,
                unit: float = 1.0) -> np.ndarray:
    """The importances (in units of ``unit``) divided by their sum (all zero without a
    split); a sum that is not positive is refused: dividing by it would flip the signs or
    give NaN."""
    total = importance.sum()
    if n_splits and not total > 0:
        why = "their split gains are all zero (a model stored without them?)" if \
            not np.any(split_gain) else f"they give a summed importance of {total * unit:g}"
        raise ValueError(f"tmva_importance: the counted trees have {n_splits} splits, but {why};"
                         " a gain ranking needs a positive sum (permutation_importance does "
                         "not use the gains)")
    if total > 0:
        importance = importance / total
    return importance


def _check_split_gains(gain: np.ndarray, tree_of_split: np.ndarray) -> None:
    """Refuse a split gain that is not a finite number (it would make every importance NaN)."""
    bad = ~np.isfinite(gain)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise ValueError(f"tmva_importance: a split of tree {int(tree_of_split[first])} has "
                         f"gain {gain[first]}; split gains must be finite")


def counted_trees(forest: Any, n_rounds: int | None = None) -> np.ndarray:
    """The indices (int64, ascending) of the trees of ``forest`` that a model keeping its
    first ``n_rounds`` rounds (all: None) predicts with, each grown tree once.

    ``n_rounds`` counts what ``n_trees_`` counts: trees of a one-score forest, rounds of K
    trees of a multi-class forest (class k's trees are ``[k R, (k + 1) R)`` for R rounds;
    the first ``n_rounds`` of each class count), trees of each step of a uBoost forest
    (the first ``n_rounds``, at least one, of each step, as its score uses them). A SAMME
    forest (``extra["algorithm"] == "SAMME"``) holds each grown tree K times, one copy a
    class with its own leaf values but the same splits, gains and covers: only the first
    class's copies are returned.
    """
    n_trees = int(np.asarray(forest.tree_offsets).size - 1)
    extra = getattr(forest, "extra", None) or {}
    if getattr(forest, "aggregation", "sum") == "uboost":
        sizes = [int(v) for v in extra["uboost"]["step_trees"]]
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        used = sizes if n_rounds is None else [max(1, min(int(n_rounds), n)) for n in sizes]
        return np.concatenate([np.arange(s, s + u, dtype=np.int64)
                               for s, u in zip(starts, used, strict=True)])
    n_classes = int(extra.get("n_classes", 1))
    rounds = n_trees // n_classes
    used = rounds if n_rounds is None else max(0, min(int(n_rounds), rounds))
    copies = 1 if extra.get("algorithm") == "SAMME" else n_classes
    return np.concatenate([np.arange(k * rounds, k * rounds + used, dtype=np.int64)
                           for k in range(copies)])


def _tmva_sum(feature: np.ndarray, gain: np.ndarray, offsets: np.ndarray,
              tree_weights: np.ndarray, n_features: int) -> np.ndarray:
    """sum over trees t of tree_weights[t] * (tree t's squared gains by feature, as
    fractions of their sum; zero for a tree without a positive sum), as TMVA adds them.
    (TMVA drops a tree whose squared gains sum to at most double's epsilon, in the units of
    its weights; with gains in units of the largest (``tmva_importance``) only a tree
    without gain is dropped, so that the ranking does not depend on the weights' scale.)"""
    out = np.zeros(n_features)
    for t, weight in enumerate(tree_weights):
        nodes = slice(int(offsets[t]), int(offsets[t + 1]))
        split = feature[nodes] >= 0
        squares = np.bincount(feature[nodes][split], weights=gain[nodes][split] ** 2,
                              minlength=n_features)
        total = squares.sum()
        if total > 0:
            out += weight * (squares / total)
    return out


@dataclass(frozen=True)
class PermutationImportance:
    """Drop in the metric when one feature is shuffled, per repeat (shape (m, n_repeats))."""

    feature_names: list[str]
    importances_mean: np.ndarray
    importances_std: np.ndarray
    importances: np.ndarray
    baseline: float
    metric: str
    n_events: int | None = None  # the events shuffled (all given, or ``max_samples``)

    def order(self) -> np.ndarray:
        """Feature indices from most to least important (stable for ties)."""
        return np.argsort(-self.importances_mean, kind="stable")

    def ranked(self) -> list[tuple[str, float]]:
        """(name, mean importance) pairs from most to least important."""
        return [(self.feature_names[i], float(self.importances_mean[i])) for i in self.order()]


def shuffleable_copy(X: Any, y: Any = None, sample_weight: Any = None,
                     max_samples: int | None = None, random_state: int | None = 0,
                     model: Any = None) -> tuple[Any, np.ndarray, Any, Any]:
    """A copy of X whose columns a permutation test may shuffle, the array holding them
    (float32 features for a hepbdt ``model``, which reads them so, else in X's own float
    type; or a BinnedMatrix's codes: one byte a value, not four), and y and the weights of
    its events: with ``max_samples`` below the event count, a random subset of that many
    events (drawn with ``random_state``, in their order), as scikit-learn's
    ``permutation_importance`` offers. Events of weight 0 are left out first: they are no
    events, and a shuffle would give their values to the others."""
    X, ordered = in_model_order(model, X)  # columns are shuffled, and scored, by position
    if not isinstance(X, BinnedMatrix):
        X = named_array(X)[0]  # a dict of arrays too (np.asarray made it one object)
    n = X.shape[0]
    y = None if y is None else real_array(y, "y")  # a mask refused, not dropped
    # checked before a subset is drawn: indexing a longer array would silently pair the
    # events with other events' labels or weights
    if y is not None and np.shape(y)[:1] != (n,):
        raise ValueError(f"y has shape {np.shape(y)}, expected ({n},): one label or target "
                         "per event of X")
    if sample_weight is not None:
        sample_weight = check_weights(sample_weight, n)
        counted = sample_weight != 0
        if not counted.all():  # no event: shuffled in, its values stood in for real events'
            X, sample_weight = X[counted], sample_weight[counted]
            y = None if y is None else np.asarray(y)[counted]
            n = X.shape[0]
    if max_samples is not None:
        if (isinstance(max_samples, bool) or not isinstance(max_samples, int | np.integer)
                or max_samples < 1):
            raise ValueError(f"max_samples must be a whole number of events >= 1, got "
                             f"{max_samples!r}")
        if n > max_samples:
            keep = np.sort(np.random.default_rng(random_state).choice(n, int(max_samples),
                                                                      replace=False))
            X = X[keep]
            if y is not None and is_classifier(model) and np.unique(np.asarray(y)[keep]).size \
                    < min(2, np.unique(np.asarray(y)).size):
                raise ValueError(f"max_samples={int(max_samples)}: the {int(max_samples)} "
                                 "events drawn hold one class only; take more events")
            y = None if y is None else np.asarray(y)[keep]
            sample_weight = None if sample_weight is None else np.asarray(sample_weight)[keep]
    hepbdt_model = model is None or hasattr(model, "forest_")
    X, columns = _shuffleable(X, hepbdt_model)
    if ordered is not None and hepbdt_model and not isinstance(X, BinnedMatrix):
        X = X.view(FeatureMatrix)  # still named: the model need not warn of lost names
        X.feature_names = tuple(ordered)
    return X, columns, y, sample_weight


def _shuffleable(X: Any, as_float32: bool = True) -> tuple[Any, np.ndarray]:
    """A copy of X and the array of its columns (see ``shuffleable_copy``; not as float32,
    in X's float type: another library's model may read 1e9 + u, which float32 rounds to
    one value)."""
    if isinstance(X, BinnedMatrix):
        X = BinnedMatrix(X.codes.copy(), X.edges, X.feature_names, X.feature_definitions)
        return X, X.codes
    kind = np.float32 if as_float32 else np.result_type(np.asarray(X).dtype, np.float32)
    X = np.array(X, dtype=kind, copy=True)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (events x features), got shape {X.shape}")
    return X, X


#: The most repeats of a permutation ranking (each one scores every event again): the
#: configuration's ``permutation_repeats`` limit, here for the Python API too, where
#: n_repeats=1e9 asked for a 22 GiB array of 3 features (and, given it, would run for ever).
MAX_PERMUTATION_REPEATS = 1000


def check_repeats(n_repeats: Any) -> int:
    """``n_repeats`` as an int; ValueError unless it is an integer in [1, MAX_PERMUTATION_REPEATS]."""
    if (isinstance(n_repeats, bool) or not isinstance(n_repeats, int | np.integer)
            or not 1 <= n_repeats <= MAX_PERMUTATION_REPEATS):
        raise ValueError(f"n_repeats={n_repeats!r} is not valid; expected an integer in "
                         f"[1, {MAX_PERMUTATION_REPEATS}] (each repeat scores every event again)")
    return int(n_repeats)


def permutation_importance(
    model: Any,
    X: Any,
    y: Any,
    sample_weight: Any = None,
    n_repeats: int = 5,
    random_state: int | None = 0,
    feature_names: list[str] | None = None,
    max_samples: int | None = None,
) -> PermutationImportance:
    """Permutation importance on a (test) sample.

    Classifiers: drop in weighted ROC AUC of ``decision_function`` when the feature's
    column is shuffled. Regressors: rise in weighted mean squared error of ``predict``.
    Each feature is shuffled ``n_repeats`` times with a generator seeded by
    ``random_state``; the mean and standard deviation over repeats are returned.
    ``max_samples``: on samples larger than this, a random subset of that many events
    (``n_events`` of the result says how many were used).
    """
    n_repeats = check_repeats(n_repeats)  # before the copy of X
    feature_names = labels_in_model_order(model, X, feature_names)  # X's, in the model's order
    X, columns, y, sample_weight = shuffleable_copy(X, y, sample_weight, max_samples,
                                                    random_state, model)
    n, m = X.shape
    # over a power of two (exact): the AUC and the MSE are ratios, and weights of 1e306 made
    # the MSE's sums inf (a baseline of 0.0 and NaN importances)
    w = check_weights(sample_weight, n)
    w = np.ldexp(w, -weight_exponent(w))
    classifier = is_classifier(model)
    if classifier:
        classes = getattr(model, "classes_", None)
        if classes is not None and len(classes) > 2:
            raise ValueError(f"the model has {len(classes)} classes: permutation_importance "
                             "ranks a two-class model's score; for a multi-class model use "
                             "per_class_permutation_importance (one ranking per class)")
        labels = check_labels(class_codes(model, np.asarray(y)))  # the model's labels: 1 = signal

        def evaluate(data: np.ndarray) -> float:
            return roc_auc(labels, model.decision_function(data), w)

        metric, sign = "roc_auc", 1.0
    else:
        target, total = _regression_target(y, w)

        def evaluate(data: np.ndarray) -> float:
            pred = np.asarray(model.predict(data), dtype=np.float64)
            return float(np.sum(w * (pred - target) ** 2) / total)

        metric, sign = "mse", -1.0
    rng = np.random.default_rng(random_state)
    baseline = evaluate(X)
    importances = np.empty((m, n_repeats))
    for j in range(m):
        original = columns[:, j].copy()
        for r in range(n_repeats):
            columns[:, j] = original[rng.permutation(n)]
            importances[j, r] = sign * (baseline - evaluate(X))
        columns[:, j] = original
    return PermutationImportance(
        feature_names=permutation_feature_names(model, m, feature_names),
        importances_mean=importances.mean(axis=1),
        importances_std=importances.std(axis=1),
        importances=importances,
        baseline=baseline,
        metric=metric,
        n_events=n,
    )


def _regression_target(y: Any, w: np.ndarray) -> tuple[np.ndarray, float]:
    """The (n,) float64 targets of a regression and the total weight, both checked: finite
    targets and a positive total (the weighted mean squared error divides by it)."""
    target = np.asarray(y, dtype=np.float64)
    if target.shape != w.shape:
        raise ValueError(f"y has shape {target.shape}, expected {w.shape}: one target per event")
    bad = ~np.isfinite(target)
    if bad.any():
        raise ValueError(f"y has NaN or infinite targets (first at event "
                         f"{int(np.flatnonzero(bad)[0])})")
    total = float(w.sum())
    if not total > 0:
        raise ValueError(f"sample_weight sums to {total:g} (in units of the largest |weight|): "
                         "the weighted mean squared error needs a positive total weight")
    return target, total


def permutation_feature_names(model: Any, m: int, feature_names: list[str] | None) -> list[str]:
    """The m names of a permutation ranking: those given (checked), else the model's."""
    if feature_names is None:
        return feature_names_of(model, m)
    names = [str(name) for name in feature_names]
    if len(names) != m:
        raise ValueError(f"got {len(names)} feature names for the {m} columns of X")
    return names


CORRELATION_BLOCK = 1 << 16  # events converted to float64 at once (memory stays bounded)


def _float_rows(X: Any) -> tuple[Any, int, int]:
    """X in a form whose row blocks ``_blocks`` converts one at a time: (X, n, m); a plain
    array as it is, other containers as the estimators read them (masked entries and
    pandas' NA as NaN, a dict's columns: ``named_array``)."""
    if isinstance(X, np.ma.MaskedArray) or not isinstance(X, np.ndarray | BinnedMatrix):
        X = named_array(X)[0]
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (events x features), got shape {X.shape}")
    return X, X.shape[0], X.shape[1]


def _blocks(X: Any, n: int, *per_event: np.ndarray):
    """Each block of CORRELATION_BLOCK events: its rows of X as float64 (a BinnedMatrix's
    representative values), then the same rows of each per-event array."""
    for a in range(0, n, CORRELATION_BLOCK):
        b = a + CORRELATION_BLOCK
        rows = X[a:b].astype(np.float64) if isinstance(X, np.ndarray) else \
            X.to_features(a, b).astype(np.float64)
        yield (rows, *(v[a:b] for v in per_event))


def weighted_correlations(X: Any, sample_weight: Any = None, groups: Any = None,
                          n_groups: int = 1) -> list[np.ndarray]:
    """Weighted linear (Pearson) correlation matrices (m, m) of the columns of X, one for
    each group of events (``groups``: (n,) integers in [0, n_groups); one group of every
    event when None), in two passes over blocks of CORRELATION_BLOCK events, so that the
    memory is a block's whatever the sample (a BinnedMatrix gives its representative
    values).

    A missing value (NaN, or infinite) leaves its event out of that column's pairs only:
    the correlation of two columns is over the events where both are present, as the
    training sees a missing value as missing, not as a reason to drop the event (one
    column missing in 41 % of the events made its whole row NaN). Each pair is centred on
    its own means (the first pass), so a column whose values sit far apart where the other
    column is and is not present loses no digits. Means and covariances use the signed
    weights; a column without spread over a pair's events of non-zero weight, or a pair
    whose weighted variances are not positive (signed weights, no common events), gives
    NaN entries (1 on the diagonal). A group of zero total weight, or a group index
    outside [0, n_groups), raises ValueError. Only the weights' ratios matter: they are
    scaled by a power of two first (exact), so weights of 1e300 or 1e-300 give the
    correlations of unit weights (their sums of w x^2 overflowed or underflowed).
    """
    X, n, m = _float_rows(X)
    w = check_weights(sample_weight, n)
    w = np.ldexp(w, -weight_exponent(w))
    g = _group_indices(groups, n, n_groups)
    totals = np.bincount(g, weights=w, minlength=n_groups)
    if np.any(totals == 0):
        raise ValueError("weighted_correlation needs a non-zero total weight")
    pair_w, pair_x = np.zeros((n_groups, m, m)), np.zeros((n_groups, m, m))
    incomplete = np.zeros(m, dtype=bool)
    for rows, wb, gb in _blocks(X, n, w, g):
        present = np.isfinite(rows)
        incomplete |= ~present.all(axis=0)
        for k in range(n_groups):
            shown, x, wk = _present_rows(rows, present, wb, gb == k)
            pair_w[k] += (shown * wk[:, None]).T @ shown
            pair_x[k] += (x * wk[:, None]).T @ shown
    with np.errstate(invalid="ignore", divide="ignore"):
        means = pair_x / pair_w  # [k, i, j]: column i's mean over the events with i and j
    sums = [_PairSums(m, np.flatnonzero(incomplete)) for _ in range(n_groups)]
    for rows, wb, gb in _blocks(X, n, w, g):
        present = np.isfinite(rows)
        for k in range(n_groups):
            sums[k].add(*_present_rows(rows, present, wb, gb == k), means[k])
    return [s.correlation() for s in sums]


def _present_rows(rows: np.ndarray, present: np.ndarray, w: np.ndarray, mine: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A group's rows of a block: (present as 0/1, values with 0 where missing, weights)."""
    return present[mine].astype(np.float64), np.where(present[mine], rows[mine], 0.0), w[mine]


class _PairSums:
    """The second pass's sums: of the columns without a missing value, their centred
    products (one matrix product); of each pair with a column that has missing values,
    over the events where both are present, centred on the pair's own means."""

    def __init__(self, m: int, incomplete: np.ndarray) -> None:
        self.incomplete = incomplete
        self.cov = np.zeros((m, m))  # complete pairs: sum w c_i c_j
        self.lowest, self.highest = np.full(m, np.inf), np.full(m, -np.inf)
        # incomplete pairs, one column j each: sum w d_i e, w d_i^2, w e^2, and the range
        # of column i (and of j) over the pair's events of non-zero weight
        self.pairs = np.zeros((incomplete.size, 3, m))
        self.ranges = np.zeros((incomplete.size, 4, m))
        self.ranges[:, ::2], self.ranges[:, 1::2] = np.inf, -np.inf

    def add(self, shown: np.ndarray, x: np.ndarray, w: np.ndarray, means: np.ndarray) -> None:
        """Add a block's rows (``_present_rows``), with the pairs' means [i, j]."""
        nonzero = (w != 0)[:, None] & (shown > 0)
        centred = np.where(shown > 0, x - np.diag(means), 0.0)  # complete: the column mean
        self.cov += (centred * w[:, None]).T @ centred
        self.lowest = np.fmin(self.lowest, np.where(nonzero, x, np.inf).min(axis=0, initial=np.inf))
        self.highest = np.fmax(self.highest, np.where(nonzero, x, -np.inf).max(axis=0,
                                                                              initial=-np.inf))
        for a, j in enumerate(self.incomplete):
            both = (shown > 0) & (shown[:, j:j + 1] > 0)
            d = np.where(both, x - means[:, j], 0.0)  # column i about its mean with j
            e = np.where(both, x[:, j:j + 1] - means[j, :], 0.0)  # j about its mean with i
            wd = d * w[:, None]
            self.pairs[a] += ((wd * e).sum(axis=0), (wd * d).sum(axis=0),
                              (e * e * w[:, None]).sum(axis=0))
            held = both & (w != 0)[:, None]
            for r, values in enumerate((x, np.broadcast_to(x[:, j:j + 1], x.shape))):
                self.ranges[a, 2 * r] = np.fmin(self.ranges[a, 2 * r], np.where(
                    held, values, np.inf).min(axis=0, initial=np.inf))
                self.ranges[a, 2 * r + 1] = np.fmax(self.ranges[a, 2 * r + 1], np.where(
                    held, values, -np.inf).max(axis=0, initial=-np.inf))

    def correlation(self) -> np.ndarray:
        """The (m, m) matrix: NaN where a column has no spread over the pair's events or a
        variance is not positive, 1 on the diagonal."""
        var = np.diag(self.cov).copy()
        # a constant column's centred values are rounding errors of its mean, not zeros
        var[~(self.lowest < self.highest) | ~(var > 0)] = np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            # over each root: the product of two variances under- or overflows where each
            # is fine (columns of values near 1e-160 or 1e160)
            root = np.sqrt(var)
            corr = self.cov / root[:, None] / root[None, :]
            for a, j in enumerate(self.incomplete):
                cross, var_i, var_j = self.pairs[a]
                spread = (self.ranges[a, 0] < self.ranges[a, 1]) & (self.ranges[a, 2]
                                                                   < self.ranges[a, 3])
                column = np.where(spread & (var_i > 0) & (var_j > 0),
                                  cross / np.sqrt(var_i) / np.sqrt(var_j), np.nan)
                corr[:, j] = corr[j, :] = column
        corr = np.clip(corr, -1.0, 1.0)  # NaN stays NaN
        np.fill_diagonal(corr, 1.0)
        return corr


def _group_indices(groups: Any, n: int, n_groups: int) -> np.ndarray:
    """The checked (n,) int64 group of each event (all 0 when ``groups`` is None)."""
    if groups is None:
        return np.zeros(n, np.int64)
    g = np.asarray(groups)
    if g.shape != (n,):
        raise ValueError(f"groups has shape {g.shape}, expected ({n},): one group per event")
    if g.dtype.kind not in "biuf" or (g.size and (
            not np.all(g == np.round(g)) or g.min() < 0 or g.max() >= n_groups)):
        raise ValueError(f"groups must hold integers in [0, {n_groups}), got values "
                         f"{np.unique(g)[:5]}")
    return g.astype(np.int64)


def weighted_correlation(X: Any, sample_weight: Any = None) -> np.ndarray:
    """Weighted linear (Pearson) correlation matrix of the columns of X, shape (m, m).

    Each pair over the events where both columns are present (not NaN or infinite);
    means and covariances use the signed weights; a column without spread, or of negative
    weighted variance, gives NaN entries (1 on the diagonal). Computed block by block
    (``weighted_correlations``).
    """
    return weighted_correlations(X, sample_weight)[0]


def correlation_matrices(X: Any, y: Any, sample_weight: Any = None
                         ) -> tuple[np.ndarray, np.ndarray]:
    """Weighted correlation matrices (signal, background) of the features."""
    background, signal = weighted_correlations(X, sample_weight, check_labels(y), 2)
    return signal, background
