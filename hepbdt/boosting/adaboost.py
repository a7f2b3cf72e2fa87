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
  counted in ``forest.extra["skipped_trees"]``; so is a resample whose net weight is not
  positive (negative weights), for every variant. A run that keeps no tree is refused.
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
and says background; real AdaBoost's leaf purity comes from the |w| sums when the tree's
sample holds a negative weight, see ``_real_purity``); ``inverse_boost_negative`` is
TMVA's InverseBoostNegWeights (a negative-weight event is reweighted by the inverse factor).

Deviations from TMVA, all documented in the README table of options: TMVA computes err and
reweights on the bagged subsample only (an event drawn k times is boosted k times; events
not drawn keep their weight); here err (and r) is computed on every training event with its
current weight (the resample's in-sample error is optimistic), and the reweighting applies
to every event, once. TMVA's nCuts grid is an
equal-width grid between each node's minimum and maximum; here it is global and added to
255 weighted-quantile bins (so the root node sees a superset of TMVA's cut values).

Per-node purity S/(S+B) of every tree (internal nodes and leaves, aligned with the forest's
flat node arrays) is kept in ``forest.extra["purity"]`` for the TMVA XML export.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._util import Progress
from ..engine._types import CHANNEL_DTYPE
from ..engine.grower import GrownTree, SerialWorkspace, grow_tree, sample_features
from ..engine.split import SplitParams
from ..model import Forest, ForestBuilder
from ._loop import BoostResult, add_tree, draw_sample, leaf_sums, update_scores
from .losses import log_each

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


def _real_purity(tree: GrownTree, is_signal: np.ndarray, w_tree: np.ndarray) -> np.ndarray:
    """Real AdaBoost's node purities: S / (S + B), from the |w| sums when a weight is negative.

    The leaf value 1/2 ln(S / B) has no finite value when a class's signed sum S (or B) is
    not positive, and is noise where positive and negative weights cancel: it took the
    clip's extreme, exp(-y f) then multiplied that class's weights (negative ones too) by
    up to 317, round after round, until the net weight turned negative and boosting
    stopped (0.055 of test AUC lost with 10 % of the weights at -1, where discrete
    AdaBoost, whose leaves say only +-1, lost 0.002). The |w| sums are positive and
    stable; the signed weights still choose the splits and are reweighted. Without
    negative weights the two are the same sums. The price: with ``negative_weights="keep"``
    or ``"inverse_boost"`` the leaf values no longer see a cancellation (on the 4-D
    NLO-like case of ``bench_negative_weights.py`` with 40 % negative events, "keep" went
    from 0.899 to 0.824 of test AUC, "inverse_boost" from 0.863 to 0.767; with random
    flips they went from 0.882 to 0.904 and from 0.788 to 0.832); the policies that
    remove the negative weights first ("regress", the default, and "pair") do not meet it.
    """
    if not np.any(w_tree < 0):
        return node_purity(tree.sum_a, tree.sum_b)
    absolute = np.abs(w_tree.astype(np.float64))
    abs_a, abs_b = leaf_sums(tree, np.where(is_signal, absolute, 0.0),
                             np.where(is_signal, 0.0, absolute))
    return node_purity(abs_a, abs_b)


def _leaf_output(variant: str, use_yes_no_leaf: bool, purity: np.ndarray) -> np.ndarray:
    if variant == "realadaboost":
        p = np.clip(purity, PURITY_CLIP, 1.0 - PURITY_CLIP)
        return 0.5 * log_each(p / (1.0 - p))
    if use_yes_no_leaf:
        return np.where(purity > NODE_PURITY_LIMIT, 1.0, -1.0)
    return purity


def _sample_mode(variant: str, subsample: float, subsample_mode: str) -> str:
    """The draw of each tree's events: bagging on every event means a bootstrap."""
    if variant == "bagging" and subsample >= 1.0 and subsample_mode == "uniform":
        return "poisson"  # a bootstrap: every tree on a Poisson(1) resample
    return subsample_mode


class _Stop(Exception):
    """Boosting stops before its last tree, for the reason given."""


def purity_alpha(r: float, first: bool, beta: float, errors: list[float], it: int) -> float:
    """alpha = beta ln((1 + r) / (1 - r)) of a purity-leaf tree of weighted separation r,
    recorded in ``errors``; no separation refuses the ``first`` tree and stops later ones."""
    if not r > 0:
        if first:
            raise ValueError("the first tree does not separate the classes at all")
        raise _Stop(f"tree {it}: no separation (r = {r:.4g})")
    errors.append(r)
    r = min(r, 1.0 - MIN_ERROR)
    return beta * math.log((1.0 + r) / (1.0 - r))


class _EmptySample(_Stop):
    """A tree's drawn sample has no positive net weight (only with negative weights)."""


@dataclass
class _TreeOptions:
    """How each tree's events are drawn and the tree is grown."""

    n_value_bins: np.ndarray
    params: SplitParams
    max_depth: int | None
    min_node_size: float
    subsample: float
    mode: str
    colsample_bytree: float
    colsample_bylevel: float
    colsample_bynode: float
    max_leaves: int | None = None
    workspace: SerialWorkspace = field(default_factory=SerialWorkspace)  # shared by the trees

    @property
    def resampled(self) -> bool:
        """Whether each tree is grown on its own sample of the events."""
        return self.mode != "uniform" or self.subsample < 1.0


def grow_weighted_tree(codes: np.ndarray, w_eff: np.ndarray, channels, options: _TreeOptions,
                       all_features: np.ndarray, rng: np.random.Generator,
                       it: int) -> tuple[GrownTree, np.ndarray]:
    """Draw a tree's events with the boosted weights ``w_eff`` and grow a classification
    tree on ``channels(w_tree)`` (A and B; or the K class channels and None) with the
    events' multiplicity as W: (tree, w_tree). _Stop when the events' net weight is not
    positive, _EmptySample when only the drawn sample's is not (see ``empty_sample``).

    As TMVA's MinNodeSize, the third channel counts events (with their multiplicity in the
    resample; an event of weight 0 is none), so a child needs min_node_size of the tree's
    events whatever their boosted weights; node_score refuses children whose net weight
    S + B is not positive.
    """
    total_eff = float(w_eff.sum())
    if not total_eff > 0:
        raise _Stop(f"tree {it}: the events' net weight {total_eff:.6g} is not positive")
    rows, w_tree, counts = draw_sample(w_eff, options.subsample, options.mode, rng)
    counts = np.where(w_eff != 0, counts, 0)  # an event of weight 0 is none: W counts it 0
    total = float(w_tree.sum(dtype=np.float64))
    if not total > 0:
        raise _EmptySample(f"tree {it}: the sample's net weight {total:.6g} is not positive")
    a, b = channels(w_tree)
    params = options.params
    params.min_child_weight = options.min_node_size * float(counts.sum())
    params.min_split_gain = MIN_GAIN_FRACTION * total
    multiplicity = counts.astype(CHANNEL_DTYPE)
    del counts  # int64, 8 bytes an event, not held while the tree grows on its float32 copy
    features = sample_features(all_features, options.colsample_bytree, rng)
    tree = grow_tree(codes, rows, a, b, multiplicity, options.n_value_bins,
                     params, options.max_depth, features, options.colsample_bylevel,
                     options.colsample_bynode, rng, max_leaves=options.max_leaves,
                     workspace=options.workspace)
    return tree, w_tree


def chance_tree(run: Any, resampled: bool, first: bool, error: str, it: int) -> None:
    """A tree no better than chance (weighted error rate ``error``, as text): left out when
    each tree has its own resample (one grown on a resample can be no better than chance on
    the whole sample: draw again), up to MAX_SKIPPED_IN_A_ROW in a row; otherwise a
    ValueError for the first tree, and the end of boosting (_Stop) for a later one.
    ``run`` counts the skips (``skipped``, ``skipped_in_a_row``)."""
    if resampled and run.skipped_in_a_row < MAX_SKIPPED_IN_A_ROW:
        run.skipped += 1
        run.skipped_in_a_row += 1
        return None
    if first:
        raise ValueError(f"the first tree's weighted error rate is {error}: nothing to boost "
                         "(check labels, weights and min_node_size)")
    raise _Stop(f"tree {it}: error rate {error}")


def empty_sample(run: Any, resampled: bool, reason: str) -> None:
    """A tree whose drawn sample has no positive net weight (``reason``, from
    ``_EmptySample``): left out when each tree has its own resample, as a chance tree (another
    draw can be fine), up to MAX_SKIPPED_IN_A_ROW in a row; otherwise the end of boosting.

    (It used to end boosting at once: at the first tree, that gave a forest without a tree,
    whose score was 0 and probability 0.5 for every event, with no error and no warning.)"""
    if resampled and run.skipped_in_a_row < MAX_SKIPPED_IN_A_ROW:
        run.skipped += 1
        run.skipped_in_a_row += 1
        return
    raise _Stop(reason)


def no_tree_error(run: Any, stopped: str | None) -> ValueError:
    """The error of a run that kept no tree: its forest would score every event alike."""
    why = f"{stopped}; " if stopped else ""
    return ValueError(f"boosting kept no tree ({why}{run.skipped} left out): nothing to "
                      "score with; check labels, weights (negative ones), subsample and "
                      "min_node_size")


class _AdaBoostRun:
    """A run's event weights, ensemble and record, and its variant's tree weights and reweighting."""

    def __init__(self, codes: np.ndarray, y: np.ndarray, w: np.ndarray, mapper, variant: str,
                 use_yes_no_leaf: bool, beta: float, epsilon: float, inverse_boost_negative: bool):
        m, n = codes.shape
        self.codes, self.mapper, self.variant = codes, mapper, variant
        self.use_yes_no_leaf, self.beta, self.epsilon = use_yes_no_leaf, beta, epsilon
        self.inverse_boost_negative = inverse_boost_negative
        self.is_signal = np.asarray(y) == 1
        # +-1 as int8 (one byte an event): products with float64 give float64, exactly
        self.y_pm = np.where(self.is_signal, 1, -1).astype(np.int8)
        self.w0 = np.asarray(w, dtype=np.float64)
        self.total0 = float(self.w0.sum())
        self.negative = self.w0 < 0
        self.boost = np.ones(n)
        self.w_tree = self.w0  # the current tree's sample weights (set by ``grow``)
        aggregation = "sum" if variant == "realadaboost" else "weighted_mean"
        self.builder = ForestBuilder(m, base_score=0.0, aggregation=aggregation)
        self.yes_no = use_yes_no_leaf or variant == "realadaboost"
        self.threshold = 0.0 if self.yes_no else NODE_PURITY_LIMIT
        self.all_features = np.ones(m, dtype=np.bool_)
        self.ensemble = np.zeros(n)
        self.weight_sum = 0.0
        self.purities: list[np.ndarray] = []
        self.errors: list[float] = []
        self.train_loss: list[float] = []
        self.skipped = self.skipped_in_a_row = 0

    def grow(self, options: _TreeOptions, rng: np.random.Generator,
             it: int) -> tuple[GrownTree, np.ndarray, float]:
        """Draw events with the current weights, grow a tree on them: (tree, weights, their total)."""
        def channels(w_tree):
            return (np.where(self.is_signal, w_tree, 0).astype(CHANNEL_DTYPE),
                    np.where(self.is_signal, 0, w_tree).astype(CHANNEL_DTYPE))

        self.w_tree = self.w0  # the last tree's sample weights go before this one's are drawn
        w_eff = self.w0 * self.boost
        tree, self.w_tree = grow_weighted_tree(self.codes, w_eff, channels, options,
                                               self.all_features, rng, it)
        return tree, w_eff, float(w_eff.sum())

    def evaluate(self, tree: GrownTree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each node's purity, its value (leaves only), and the tree's output on every event."""
        if self.variant == "realadaboost":
            purity = _real_purity(tree, self.is_signal, self.w_tree)
        else:
            purity = node_purity(tree.sum_a, tree.sum_b)
        value = np.where(tree.is_leaf, _leaf_output(self.variant, self.use_yes_no_leaf, purity), 0.0)
        h = np.zeros(self.w0.size)
        update_scores(self.codes, tree, value, h)
        return purity, value, h

    def weigh(self, h: np.ndarray, w_eff: np.ndarray, total_eff: float, resampled: bool,
              it: int) -> tuple[float, np.ndarray | None] | None:
        """The tree's weight and the events' reweighting factor; None leaves the tree out."""
        # The error (and r) is measured on every training event with its current weight,
        # not only on the tree's resample, whose in-sample error is optimistic.
        wrong = (h > self.threshold) != self.is_signal
        if self.variant == "bagging":
            return 1.0, None
        if self.variant == "realadaboost":
            return 1.0, np.exp(-self.y_pm * h)
        if self.variant == "eps":
            return float(self.epsilon), np.where(wrong, math.exp(2.0 * self.epsilon), 1.0)
        if self.yes_no:
            return self._discrete_weight(wrong, w_eff, total_eff, resampled, it)
        return self._purity_weight(h, w_eff, total_eff, it)

    def _discrete_weight(self, wrong: np.ndarray, w_eff: np.ndarray, total_eff: float,
                         resampled: bool, it: int) -> tuple[float, np.ndarray] | None:
        """Discrete AdaBoost: alpha = beta ln((1 - err) / err); misclassified events get exp(alpha)."""
        err = float(w_eff[wrong].sum()) / total_eff
        if err < 0:  # only with negative weights; TMVA takes |err| too
            err = -err
        if err >= 0.5:
            return chance_tree(self, resampled, len(self.builder) == 0, f"{err:.4g} >= 0.5", it)
        self.skipped_in_a_row = 0
        self.errors.append(err)
        err = max(err, MIN_ERROR)
        tree_weight = self.beta * math.log((1.0 - err) / err)
        return tree_weight, np.where(wrong, math.exp(tree_weight), 1.0)

    def _purity_weight(self, h: np.ndarray, w_eff: np.ndarray, total_eff: float,
                       it: int) -> tuple[float, np.ndarray]:
        """AdaBoost with purity leaves (TMVA UseYesNoLeaf=False): alpha = beta ln((1 + r) / (1 - r))."""
        r = float(np.sum(w_eff * self.y_pm * (2.0 * h - 1.0))) / total_eff
        tree_weight = purity_alpha(r, len(self.builder) == 0, self.beta, self.errors, it)
        return tree_weight, np.exp(-tree_weight * self.y_pm * (2.0 * h - 1.0))

    def add(self, tree: GrownTree, value: np.ndarray, purity: np.ndarray, h: np.ndarray,
            tree_weight: float) -> float:
        """Add the tree to the forest and the ensemble; returns the ensemble's error rate."""
        add_tree(self.builder, tree, value, self.mapper, tree_weight)
        self.purities.append(purity)
        if self.variant == "realadaboost":
            self.ensemble += h
            score = self.ensemble
        else:
            self.ensemble += tree_weight * h
            self.weight_sum += tree_weight
            score = self.ensemble / self.weight_sum
        self.train_loss.append(float(self.w0[(score > self.threshold) != self.is_signal].sum())
                               / self.total0)
        return self.train_loss[-1]

    def score(self) -> np.ndarray:
        """The ensemble's score of every training event, as the forest computes it."""
        if self.variant == "realadaboost":
            return self.ensemble
        return self.ensemble / self.weight_sum if self.weight_sum != 0 else self.ensemble

    def reweight(self, factor: np.ndarray | None, it: int) -> None:
        """Multiply the event weights by ``factor``, renormalised to their initial total."""
        if factor is None:
            return
        if self.inverse_boost_negative:
            factor = np.where(self.negative, 1.0 / factor, factor)
        self.boost *= factor
        new_total = float(np.sum(self.w0 * self.boost))
        if not (new_total > 0 and np.all(np.isfinite(self.boost))):
            raise _Stop(f"tree {it}: the reweighted net weight {new_total:.6g} is not positive")
        self.boost *= self.total0 / new_total
        if self.variant == "adaboost" and self.yes_no and self.errors[-1] <= MIN_ERROR:
            raise _Stop(f"tree {it}: a perfect tree (error 0)")

    def result(self, criterion_name: str, stopped: str | None) -> tuple[Forest, BoostResult]:
        """The forest, with what the TMVA export needs in ``extra``, and the run's record."""
        forest = self.builder.build()
        forest.extra.update(
            boosting=self.variant,
            criterion=criterion_name,
            use_yes_no_leaf=bool(self.yes_no),
            purity=np.concatenate(self.purities).tolist() if self.purities else [],
            error_fraction=self.errors,
            skipped_trees=self.skipped,
        )
        if self.variant == "realadaboost":
            forest.extra["loss"] = "exponential"
        else:
            forest.extra["score_min"] = -1.0 if self.yes_no else 0.0
        if stopped:
            forest.extra["stopped"] = stopped
        result = BoostResult(self.builder, 0.0, np.asarray(self.train_loss), None, None,
                             extra={"stopped": stopped})
        return forest, result


def run_adaboost(codes: np.ndarray, y: np.ndarray, w: np.ndarray, n_value_bins: np.ndarray,
                 mapper, *, variant: str, n_trees: int, max_depth: int | None, criterion: int,
                 criterion_name: str = "", beta: float = 0.5, epsilon: float = 0.01,
                 use_yes_no_leaf: bool = True, min_node_size: float = 0.0,
                 subsample: float = 1.0, subsample_mode: str = "uniform",
                 colsample_bytree: float = 1.0, colsample_bylevel: float = 1.0,
                 colsample_bynode: float = 1.0, inverse_boost_negative: bool = False,
                 rng: np.random.Generator, verbose: bool = False,
                 max_leaves: int | None = None) -> tuple[Forest, BoostResult]:
    """Boost ``n_trees`` classification trees with a variant of AdaBoost.

    Parameters
    ----------
    codes : (m, n) uint8 bin codes.
    y : (n,) labels, 1 = signal, 0 = background (any numeric dtype; the classifier's are int8).
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
    max_leaves : None grows depth-wise; an integer, leaf-wise with at most this many leaves
        (``max_depth`` may then be None: no depth limit).

    Returns
    -------
    (Forest, BoostResult): the forest (``extra`` holds ``boosting``, ``score_min``,
    ``purity``, ``error_fraction``), and the run's record; ``train_loss`` is the weighted
    misclassification rate of the ensemble on the training events after each tree.
    """
    if variant not in ADABOOST_VARIANTS:
        raise ValueError(f"variant {variant!r} is not valid; use one of {ADABOOST_VARIANTS}")
    run = _AdaBoostRun(codes, y, w, mapper, variant, use_yes_no_leaf, beta, epsilon,
                       inverse_boost_negative)
    options = _TreeOptions(n_value_bins, SplitParams(criterion), max_depth, min_node_size, subsample,
                           _sample_mode(variant, subsample, subsample_mode), colsample_bytree,
                           colsample_bylevel, colsample_bynode, max_leaves)
    progress = Progress(n_trees, "training", enabled=True if verbose else None, unit="trees")
    stopped = boost_trees(run, options, n_trees, rng, progress)
    progress.moveto(n_trees)
    progress.close()
    if len(run.builder) == 0:
        raise no_tree_error(run, stopped)
    return run.result(criterion_name, stopped)


def boost_trees(run: _AdaBoostRun, options: _TreeOptions, n_trees: int,
                rng: np.random.Generator, progress: Progress, done: int = 0,
                uniformity: Any = None) -> str | None:
    """The AdaBoost loop: up to ``n_trees`` trees added to ``run``; the reason it stopped
    early, or None. ``done`` trees of the progress bar are already counted. ``uniformity``
    (uBoost, :mod:`.uboost`) measures the ensemble after each tree is added
    (``measure(run)``) and multiplies its factor into the weights after AdaBoost's
    reweighting (``apply(run, it)``)."""
    for it in range(n_trees):
        try:
            _boost_round(run, options, rng, it, progress, done, uniformity)
        except _Stop as stop:
            return str(stop)
    return None


def _boost_round(run: _AdaBoostRun, options: _TreeOptions, rng: np.random.Generator, it: int,
                 progress: Progress, done: int, uniformity: Any) -> None:
    """Round ``it`` of ``boost_trees``. Its per-event arrays (boosted weights, the tree's
    output, the reweighting factor: 8 bytes an event each) end with it, not held by the
    loop while the next tree is drawn and grown."""
    try:
        tree, w_eff, total_eff = run.grow(options, rng, it)
    except _EmptySample as empty:
        empty_sample(run, options.resampled, str(empty))
        return
    purity, value, h = run.evaluate(tree)
    weighed = run.weigh(h, w_eff, total_eff, options.resampled, it)
    if weighed is None:
        return
    run.skipped_in_a_row = 0
    tree_weight, factor = weighed
    error = run.add(tree, value, purity, h, tree_weight)
    progress.moveto(done + it + 1, f"error {error:.4g}")
    if uniformity is not None:
        uniformity.measure(run)
    run.reweight(factor, it)
    if uniformity is not None:
        uniformity.apply(run, it)
