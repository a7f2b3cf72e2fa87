"""The AdaBoost family: discrete AdaBoost (beta), real AdaBoost, epsilon-boost and bagging.

Classification trees are grown by the one grower on channels A = signal weight, B =
background weight, W = event weight, with TMVA's separation criteria (Gini, cross-entropy,
misclassification error, S/sqrt(S+B)). Unlike gradient boosting, each round reweights the
*events*, not the scores; so this module has its own loop (it reuses ``draw_rows``,
``grow_tree``, ``add_tree`` and ``ForestBuilder``). It does not know about estimators,
option strings or I/O.

What each variant does (p = a node's purity S/(S+B) with the round's weights; an event is
called signal when its leaf has p > 0.5, TMVA's NodePurityLimit):

- ``adaboost`` with yes/no leaves (TMVA UseYesNoLeaf=True): a leaf says +1 or -1;
  err = weighted misclassification rate of the round's sample; tree weight
  alpha = beta * ln((1 - err) / err); misclassified events get w *= exp(alpha); weights are
  renormalised to their initial total. Score = sum alpha_m T_m(x) / sum alpha_m in [-1, 1].
  Boosting stops (as in TMVA and scikit-learn) when a tree has err >= 0.5; with a
  resample per tree, such a tree is left out and another drawn (ten in a row stop it),
  counted in ``forest.extra["skipped_trees"]``.
- ``adaboost`` with purity leaves (TMVA UseYesNoLeaf=False, which is what TMVA's
  BoostType=RealAdaBoost means): a leaf outputs p; r = sum w y (2p - 1) / sum w with
  y = +-1, alpha = beta * ln((1 + r) / (1 - r)), w *= exp(-alpha y (2p - 1)).
  Score = sum alpha_m p_m(x) / sum alpha_m in [0, 1].
- ``realadaboost`` (Friedman, Hastie and Tibshirani's Real AdaBoost): a leaf outputs
  f = 1/2 ln(p / (1 - p)) with p clipped to [1e-5, 1 - 1e-5]; w *= exp(-y f).
  Score F = sum_m f_m(x) (aggregation "sum"); P(signal) = 1 / (1 + exp(-2F)).
- ``eps`` (epsilon-boost): +-1 (or purity) leaves, misclassified events get
  w *= exp(2 epsilon), renormalised; every tree weight is epsilon, so the score
  sum epsilon T_m(x) / sum epsilon = the mean tree output, in [-1, 1] (or [0, 1]).
- ``bagging`` (TMVA BoostType=Bagging): weights never change; each tree is grown on a
  Poisson resample (``subsample`` = BaggedSampleFraction; a full bootstrap when
  ``subsample`` is 1), every tree weight 1; score = mean leaf output.

Negative event weights are used as given (with the engine's safeguards: a node whose net
weight is not positive is not split; a leaf with no positive net weight has purity 0.5
and says background); ``inverse_boost_negative`` is TMVA's InverseBoostNegWeights
(a negative-weight event is reweighted by the inverse factor).

Deviations from TMVA, all documented in the README table of options: TMVA computes err and
reweights on the bagged subsample only (an event drawn k times is boosted k times; events
not drawn keep their weight); here err is computed on the tree's (resampled) events, as
TMVA, but the reweighting applies to every event, once. TMVA's nCuts grid is an
equal-width grid between each node's minimum and maximum; here it is global and added to
255 weighted-quantile bins (so the root node sees a superset of TMVA's cut values).

Per-node purity S/(S+B) of every tree (internal nodes and leaves, aligned with the forest's
flat node arrays) is kept in ``forest.extra["purity"]`` for the TMVA XML export.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine._types import CHANNEL_DTYPE
from ..engine.grower import grow_tree, sample_features
from ..engine.split import SplitParams
from ..model import Forest, ForestBuilder
from ._loop import BoostResult, Progress, add_tree, draw_rows, update_scores

__all__ = ["ADABOOST_VARIANTS", "run_adaboost", "node_purity"]

ADABOOST_VARIANTS = ("adaboost", "realadaboost", "eps", "bagging")
NODE_PURITY_LIMIT = 0.5  # TMVA's NodePurityLimit: a node with purity above it is signal
PURITY_CLIP = 1e-5  # real AdaBoost: |f| <= 1/2 ln((1 - c) / c) ~ 5.76
MIN_ERROR = 1e-10  # a perfect tree gets alpha = beta * ln((1 - MIN_ERROR) / MIN_ERROR)
MAX_SKIPPED_IN_A_ROW = 10  # resampled AdaBoost: stop after this many useless trees in a row
MIN_GAIN_FRACTION = 1e-10  # splits must gain more than this times the tree's total weight


def node_purity(sum_signal: np.ndarray, sum_background: np.ndarray) -> np.ndarray:
    """Purity S/(S+B) of each node, clipped to [0, 1]; 0.5 where S + B is not positive."""
    total = sum_signal + sum_background
    safe = np.where(total > 0, total, 1.0)
    return np.where(total > 0, np.clip(sum_signal / safe, 0.0, 1.0), 0.5)


def _leaf_output(variant: str, use_yes_no_leaf: bool, purity: np.ndarray) -> np.ndarray:
    if variant == "realadaboost":
        p = np.clip(purity, PURITY_CLIP, 1.0 - PURITY_CLIP)
        return 0.5 * np.log(p / (1.0 - p))
    if use_yes_no_leaf:
        return np.where(purity > NODE_PURITY_LIMIT, 1.0, -1.0)
    return purity


def _draw(w: np.ndarray, subsample: float, mode: str,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_rows`` plus each event's multiplicity in the resample (int64, 0 off it)."""
    n = w.size
    if mode == "poisson":
        counts = rng.poisson(subsample, n)
    elif mode == "weighted":
        aw = np.abs(w)
        counts = rng.multinomial(max(1, int(round(subsample * n))), aw / aw.sum())
    else:
        rows, w_tree = draw_rows(w, subsample, mode, rng)
        counts = np.zeros(n, dtype=np.int64)
        counts[rows] = 1
        return rows, w_tree, counts
    rows = np.flatnonzero(counts > 0).astype(np.int32)
    if mode == "poisson":
        w_tree = (w * counts).astype(CHANNEL_DTYPE)
    else:  # as draw_rows: each copy weighs sign(w) times the mean |w|
        scale = np.abs(w).sum() / max(counts.sum(), 1)
        w_tree = (counts * np.sign(w) * scale).astype(CHANNEL_DTYPE)
    return rows, w_tree, counts


def run_adaboost(codes: np.ndarray, y: np.ndarray, w: np.ndarray, n_value_bins: np.ndarray,
                 mapper, *, variant: str, n_trees: int, max_depth: int, criterion: int,
                 criterion_name: str = "", beta: float = 0.5, epsilon: float = 0.01,
                 use_yes_no_leaf: bool = True, min_node_size: float = 0.0,
                 subsample: float = 1.0, subsample_mode: str = "uniform",
                 colsample_bytree: float = 1.0, colsample_bylevel: float = 1.0,
                 colsample_bynode: float = 1.0, inverse_boost_negative: bool = False,
                 rng: np.random.Generator, verbose: bool = False) -> tuple[Forest, BoostResult]:
    """Boost ``n_trees`` classification trees with a variant of AdaBoost.

    Parameters
    ----------
    codes : (m, n) uint8 bin codes.
    y : (n,) float64, 1 = signal, 0 = background.
    w : (n,) float64 event weights (may be negative).
    n_value_bins : (m,) int32 value bins per feature.
    mapper : the fitted BinMapper (for raw thresholds).
    variant : one of ``ADABOOST_VARIANTS``.
    criterion : engine criterion code (GINI, CROSS_ENTROPY, MISCLASSIFICATION, SDIVSQRTSPLUSB).
    beta : AdaBoost's exponent (TMVA AdaBoostBeta); epsilon : epsilon-boost's step.
    use_yes_no_leaf : leaves say +-1 (True) or output their purity (False); not for
        ``realadaboost``, whose leaves are 1/2 ln(p / (1 - p)).
    min_node_size : a child needs at least this fraction of the tree's events (counted
        with their multiplicity in the resample, unweighted, as TMVA's MinNodeSize).
    subsample, subsample_mode : the events of each tree (see ``draw_rows``).
    colsample_bytree, colsample_bylevel, colsample_bynode : random feature subsets.
    inverse_boost_negative : TMVA InverseBoostNegWeights for negative-weight events.

    Returns
    -------
    (Forest, BoostResult): the forest (``extra`` holds ``boosting``, ``score_min``,
    ``purity``, ``error_fraction``), and the run's record; ``train_loss`` is the weighted
    misclassification rate of the ensemble on the training events after each tree.
    """
    if variant not in ADABOOST_VARIANTS:
        raise ValueError(f"variant {variant!r} is not valid; use one of {ADABOOST_VARIANTS}")
    m, n = codes.shape
    is_signal = np.asarray(y) == 1
    y_pm = np.where(is_signal, 1.0, -1.0)
    w0 = np.asarray(w, dtype=np.float64)
    total0 = float(w0.sum())
    negative = w0 < 0
    boost = np.ones(n)
    aggregation = "sum" if variant == "realadaboost" else "weighted_mean"
    builder = ForestBuilder(m, base_score=0.0, aggregation=aggregation)
    yes_no = use_yes_no_leaf or variant == "realadaboost"
    threshold = 0.0 if yes_no else NODE_PURITY_LIMIT
    mode = subsample_mode
    if variant == "bagging" and subsample >= 1.0 and mode == "uniform":
        mode = "poisson"  # a bootstrap: every tree on a Poisson(1) resample
    params = SplitParams(criterion)
    all_features = np.ones(m, dtype=np.bool_)
    ensemble = np.zeros(n)
    weight_sum = 0.0
    purities: list[np.ndarray] = []
    errors: list[float] = []
    train_loss: list[float] = []
    stopped = None
    resampled = mode != "uniform" or subsample < 1.0
    skipped = skipped_in_a_row = 0
    progress = Progress(n_trees, "training", enabled=True if verbose else None)
    for it in range(n_trees):
        w_eff = w0 * boost
        total_eff = float(w_eff.sum())
        rows, w_tree, counts = _draw(w_eff, subsample, mode, rng)
        total = float(w_tree.sum(dtype=np.float64))
        if not (total > 0 and total_eff > 0):
            stopped = f"tree {it}: the sample's net weight {total:.6g} is not positive"
            break
        a = np.where(is_signal, w_tree, 0).astype(CHANNEL_DTYPE)
        b = np.where(is_signal, 0, w_tree).astype(CHANNEL_DTYPE)
        # As TMVA's MinNodeSize: the third channel counts events (with their multiplicity in
        # the resample), so a child needs min_node_size of the tree's events whatever their
        # boosted weights; node_score refuses children whose net weight S + B is not positive.
        multiplicity = counts.astype(CHANNEL_DTYPE)
        params.min_child_weight = min_node_size * float(counts.sum())
        params.min_split_gain = MIN_GAIN_FRACTION * total
        features = sample_features(all_features, colsample_bytree, rng)
        tree = grow_tree(codes, rows, a, b, multiplicity, n_value_bins, params, max_depth,
                         features, colsample_bylevel, colsample_bynode, rng)
        purity = node_purity(tree.sum_a, tree.sum_b)
        value = np.where(tree.is_leaf, _leaf_output(variant, use_yes_no_leaf, purity), 0.0)
        h = np.zeros(n)
        update_scores(codes, tree, value, h)
        wrong = (h > threshold) != is_signal

        # The error (and r) is measured on every training event with its current weight,
        # not only on the tree's resample, whose in-sample error is optimistic.
        factor = None
        if variant == "bagging":
            tree_weight = 1.0
        elif variant == "realadaboost":
            tree_weight = 1.0
            factor = np.exp(-y_pm * h)
        elif variant == "eps":
            tree_weight = float(epsilon)
            factor = np.where(wrong, math.exp(2.0 * epsilon), 1.0)
        elif yes_no:  # discrete AdaBoost
            err = float(w_eff[wrong].sum()) / total_eff
            if err < 0:  # only with negative weights; TMVA takes |err| too
                err = -err
            if err >= 0.5:
                if resampled and skipped_in_a_row < MAX_SKIPPED_IN_A_ROW:
                    # A tree grown on a resample can be no better than chance on the whole
                    # sample: leave it out, draw again.
                    skipped += 1
                    skipped_in_a_row += 1
                    continue
                if len(builder) == 0:
                    raise ValueError(f"the first tree's weighted error rate is {err:.4g} >= 0.5: "
                                     "nothing to boost (check labels, weights and min_node_size)")
                stopped = f"tree {it}: error rate {err:.4g} >= 0.5"
                break
            skipped_in_a_row = 0
            errors.append(err)
            err = max(err, MIN_ERROR)
            tree_weight = beta * math.log((1.0 - err) / err)
            factor = np.where(wrong, math.exp(tree_weight), 1.0)
        else:  # AdaBoost with purity leaves (TMVA UseYesNoLeaf=False)
            r = float(np.sum(w_eff * y_pm * (2.0 * h - 1.0))) / total_eff
            if not r > 0:
                if len(builder) == 0:
                    raise ValueError("the first tree does not separate the classes at all")
                stopped = f"tree {it}: no separation (r = {r:.4g})"
                break
            errors.append(r)
            r = min(r, 1.0 - MIN_ERROR)
            tree_weight = beta * math.log((1.0 + r) / (1.0 - r))
            factor = np.exp(-tree_weight * y_pm * (2.0 * h - 1.0))

        add_tree(builder, tree, value, mapper, tree_weight)
        purities.append(purity)
        if variant == "realadaboost":
            ensemble += h
            score = ensemble
        else:
            ensemble += tree_weight * h
            weight_sum += tree_weight
            score = ensemble / weight_sum
        train_loss.append(float(w0[(score > threshold) != is_signal].sum()) / total0)
        progress.update(it + 1, f"error {train_loss[-1]:.4g}")

        if factor is not None:
            if inverse_boost_negative:
                factor = np.where(negative, 1.0 / factor, factor)
            boost *= factor
            new_total = float(np.sum(w0 * boost))
            if not (new_total > 0 and np.all(np.isfinite(boost))):
                stopped = f"tree {it}: the reweighted net weight {new_total:.6g} is not positive"
                break
            boost *= total0 / new_total
            if variant == "adaboost" and yes_no and errors[-1] <= MIN_ERROR:
                stopped = f"tree {it}: a perfect tree (error 0)"
                break
    progress.update(n_trees)
    forest = builder.build()
    forest.extra.update(
        boosting=variant,
        criterion=criterion_name,
        use_yes_no_leaf=bool(yes_no),
        purity=np.concatenate(purities).tolist() if purities else [],
        error_fraction=errors,
        skipped_trees=skipped,
    )
    if variant == "realadaboost":
        forest.extra["loss"] = "exponential"
    else:
        forest.extra["score_min"] = -1.0 if yes_no else 0.0
    if stopped:
        forest.extra["stopped"] = stopped
    result = BoostResult(builder, 0.0, np.asarray(train_loss), None, None,
                         extra={"stopped": stopped})
    return forest, result
