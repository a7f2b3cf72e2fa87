"""SAMME: discrete AdaBoost for more than two classes (Zhu, Zou, Rosset and Hastie 2009),
the multi-class AdaBoost of scikit-learn's ``AdaBoostClassifier``.

Each round grows one K-class tree with the one grower: the channels are an event's weight
in its own class's channel (zero in the others) and its multiplicity W, the criterion
CLASS_GINI (the multi-class Gini index). A leaf says the class of the largest weight in it
(the first on a tie). err = the weighted share of events whose leaf says another class;
the tree's weight alpha = beta (ln((1 - err) / err) + ln(K - 1)), beta playing the
learning rate; those events get w *= exp(alpha), and the weights are renormalised.
Boosting stops when err >= 1 - 1/K (no better than chance), or with a resample per tree
leaves that tree out and draws again (ten in a row stop it), as ``adaboost`` does (also
with a resample whose net weight is not positive); a run that keeps no tree is refused.

The decision per class is scikit-learn's, sum_m alpha_m c_mk(x) / sum_m alpha_m with
c = 1 for the class the tree says and -1/(K-1) for the others; the forest holds it as K
class forests of the same trees, tree m of weight alpha_m with leaf values
c / ((K - 1) sum alpha), so that the softmax of the class scores is scikit-learn's
``predict_proba``. The class scores (``decision_function``) are therefore scikit-learn's
``decision_function`` divided by K - 1. The sum over all M trees is normalised by their
total alpha: the sum over the first m < M trees is not the decision of an m-tree model
(scikit-learn's ``staged_decision_function`` divides by the first m alphas instead).
A perfect tree (err = 0) gets alpha = beta (ln((1 - e) / e) + ln(K - 1)) with e =
MIN_ERROR, as ``adaboost``'s, and ends boosting; scikit-learn gives it alpha = 1. With
K = 2, SAMME is ``adaboost`` with yes/no leaves and beta = the learning rate, which is
what two classes train.
"""

from __future__ import annotations

import math

import numpy as np

from .._util import Progress
from ..engine._types import CHANNEL_DTYPE, CLASS_GINI
from ..engine.grower import GrownTree
from ..engine.split import SplitParams
from ..model import ClassForestBuilder, Forest
from ._loop import BoostResult, add_tree, update_scores
from .adaboost import (
    MIN_ERROR,
    _EmptySample,
    _Stop,
    _TreeOptions,
    chance_tree,
    empty_sample,
    grow_weighted_tree,
    no_tree_error,
)
from .losses import class_weight_sums

__all__ = ["run_samme"]

CHANCE_TOLERANCE = 1e-12  # relative: an error rate of exactly 1 - 1/K, but for rounding, is chance


class _SammeRun:
    """A run's event weights, trees and record."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, w: np.ndarray, n_classes: int,
                 beta: float, inverse_boost_negative: bool):
        self.codes, self.n_classes, self.beta = codes, n_classes, beta
        self.inverse_boost_negative = inverse_boost_negative
        y = np.asarray(y)
        # class indices as given when they are integers (the classifier's int8: no copy)
        self.y = y if y.dtype.kind == "i" else y.astype(np.int64)
        self.w0 = np.asarray(w, dtype=np.float64)
        self.total0 = float(self.w0.sum())
        self.boost = np.ones(self.w0.size)
        self.all_features = np.ones(codes.shape[0], dtype=np.bool_)
        self.trees: list[tuple[GrownTree, np.ndarray, float]] = []  # (tree, leaf classes, alpha)
        self.votes = np.zeros((n_classes, self.w0.size))  # sum alpha [tree says class k]
        self.errors: list[float] = []
        self.train_loss: list[float] = []
        self.skipped = self.skipped_in_a_row = 0

    def grow(self, options: _TreeOptions, rng: np.random.Generator,
             it: int) -> tuple[GrownTree, np.ndarray, float]:
        """Draw events with the current weights and grow a K-class tree on them."""
        def channels(w_tree):
            by_class = np.zeros((self.n_classes, w_tree.size), dtype=CHANNEL_DTYPE)
            by_class[self.y, np.arange(w_tree.size)] = w_tree
            return by_class, None

        w_eff = self.w0 * self.boost
        tree, _ = grow_weighted_tree(self.codes, w_eff, channels, options, self.all_features,
                                     rng, it)
        return tree, w_eff, float(w_eff.sum())

    def says(self, tree: GrownTree) -> tuple[np.ndarray, np.ndarray]:
        """Each node's class (that of the largest weight; 0 on internal nodes) and the
        class the tree says for every event."""
        classes = np.where(tree.is_leaf, np.argmax(tree.class_sums, axis=1), 0)
        said = np.zeros(self.w0.size)
        update_scores(self.codes, tree, classes.astype(np.float64), said)
        return classes, said.astype(np.int64)

    def weigh(self, said: np.ndarray, w_eff: np.ndarray, total_eff: float, resampled: bool,
              it: int) -> tuple[float, np.ndarray] | None:
        """The tree's weight alpha and the misclassified events; None leaves the tree out."""
        wrong = said != self.y
        err = abs(float(w_eff[wrong].sum()) / total_eff)  # |err|: as adaboost's, with negative weights
        if err >= (1.0 - 1.0 / self.n_classes) * (1.0 - CHANCE_TOLERANCE):
            return chance_tree(self, resampled, not self.trees,
                               f"{err:.4g} >= 1 - 1/K = {1 - 1 / self.n_classes:.4g}", it)
        self.skipped_in_a_row = 0
        self.errors.append(err)
        err = max(err, MIN_ERROR)
        alpha = self.beta * (math.log((1.0 - err) / err) + math.log(self.n_classes - 1.0))
        return alpha, wrong

    def add(self, tree: GrownTree, classes: np.ndarray, said: np.ndarray, alpha: float) -> float:
        """Keep the tree; returns the ensemble's weighted error rate on the training events."""
        self.trees.append((tree, classes, alpha))
        self.votes[said, np.arange(said.size)] += alpha
        wrong = np.argmax(self.votes, axis=0) != self.y
        self.train_loss.append(float(self.w0[wrong].sum()) / self.total0)
        return self.train_loss[-1]

    def reweight(self, alpha: float, wrong: np.ndarray, it: int) -> None:
        """Misclassified events get w *= exp(alpha) (exp(-alpha) with TMVA's
        InverseBoostNegWeights for a negative weight); renormalised to the initial total."""
        factor = np.where(wrong, math.exp(alpha), 1.0)
        if self.inverse_boost_negative:
            factor = np.where(self.w0 < 0, 1.0 / factor, factor)
        self.boost *= factor
        new_total = float(np.sum(self.w0 * self.boost))
        if not (new_total > 0 and np.all(np.isfinite(self.boost))):
            raise _Stop(f"tree {it}: the reweighted net weight {new_total:.6g} is not positive")
        self.boost *= self.total0 / new_total
        if self.errors[-1] <= MIN_ERROR:
            raise _Stop(f"tree {it}: a perfect tree (error 0)")

    def result(self, mapper, stopped: str | None) -> tuple[Forest, BoostResult]:
        """K class forests of the trees (tree weight alpha, leaf values c / ((K - 1) sum alpha))
        and the record."""
        k_classes = self.n_classes
        builder = ClassForestBuilder(self.codes.shape[0], np.zeros(k_classes))
        scale = 1.0 / ((k_classes - 1) * max(sum(a for _, _, a in self.trees), MIN_ERROR))
        for tree, classes, alpha in self.trees:
            for k in range(k_classes):
                vote = np.where(classes == k, 1.0, -1.0 / (k_classes - 1))
                # alpha as the tree's weight: the TMVA ranking weighs each tree's gains by it
                add_tree(builder.classes[k], tree, np.where(tree.is_leaf, scale * vote, 0.0),
                         mapper, alpha)
        forest = builder.build()
        forest.extra.update(boosting="adaboost", algorithm="SAMME", criterion="gini",
                            error_fraction=self.errors, skipped_trees=self.skipped,
                            tree_weights=[a for _, _, a in self.trees], loss="samme")
        if stopped:
            forest.extra["stopped"] = stopped
        record = BoostResult(builder, 0.0, np.asarray(self.train_loss), None, None,
                             extra={"stopped": stopped})
        return forest, record


def _samme_round(run: _SammeRun, options: _TreeOptions, rng: np.random.Generator, it: int,
                 progress: Progress) -> None:
    """Round ``it`` of ``run_samme``. Its per-event arrays (boosted weights, the classes the
    tree says: 8 bytes an event each) end with it, not held by the loop while the next tree
    is drawn and grown."""
    try:
        tree, w_eff, total_eff = run.grow(options, rng, it)
    except _EmptySample as empty:
        empty_sample(run, options.resampled, str(empty))
        return
    classes, said = run.says(tree)
    weighed = run.weigh(said, w_eff, total_eff, options.resampled, it)
    if weighed is None:
        return
    alpha, wrong = weighed
    error = run.add(tree, classes, said, alpha)
    progress.moveto(it + 1, f"error {error:.4g}")
    run.reweight(alpha, wrong, it)


def run_samme(codes: np.ndarray, y: np.ndarray, w: np.ndarray, n_value_bins: np.ndarray, mapper,
              *, n_classes: int, n_trees: int, max_depth: int | None, beta: float = 0.5,
              min_node_size: float = 0.0, subsample: float = 1.0, subsample_mode: str = "uniform",
              colsample_bytree: float = 1.0, colsample_bylevel: float = 1.0,
              colsample_bynode: float = 1.0, inverse_boost_negative: bool = False,
              rng: np.random.Generator, verbose: bool = False,
              max_leaves: int | None = None) -> tuple[Forest, BoostResult]:
    """Boost ``n_trees`` K-class trees with SAMME (see the module docstring).

    codes : (m, n) uint8 bin codes; y : (n,) class indices 0..K-1; w : (n,) event weights.
    The other options are ``run_adaboost``'s; ``train_loss`` of the record is the weighted
    misclassification rate of the ensemble on the training events after each tree.
    """
    if n_classes < 3:
        raise ValueError(f"SAMME is for 3 or more classes; {n_classes} classes train with "
                         "run_adaboost")
    if not (math.isfinite(beta) and beta > 0):
        raise ValueError(f"beta (the learning rate) must be a finite number > 0, got {beta!r}: "
                         "with beta <= 0 every tree weight alpha is <= 0")
    class_weight_sums(y, w, n_classes)  # a class without weight cannot be voted for
    run = _SammeRun(codes, y, w, n_classes, beta, inverse_boost_negative)
    options = _TreeOptions(n_value_bins, SplitParams(CLASS_GINI), max_depth, min_node_size,
                           subsample, subsample_mode, colsample_bytree, colsample_bylevel,
                           colsample_bynode, max_leaves)
    progress = Progress(n_trees, "training", enabled=True if verbose else None, unit="trees")
    stopped = None
    for it in range(n_trees):
        try:
            _samme_round(run, options, rng, it, progress)
        except _Stop as stop:
            stopped = str(stop)
            break
    progress.moveto(n_trees)
    progress.close()
    if not run.trees:
        raise no_tree_error(run, stopped)
    return run.result(mapper, stopped)
