"""The boosting loop shared by the score-based boosters (gradient, newton).

Each round: draw the events (subsample), let the booster fill the channels, grow one tree
with the one grower, let the booster set the leaf values, and add the tree to the scores
on the binned data. Keeps the weighted training and validation loss of every round and
stops early when the validation loss has not improved for ``n_iter_no_change`` rounds.
A small exact fit's rounds (``_exact_rounds``) run in compiled calls, many rounds a call
where the loss's channels can be computed there, with the same result.
"""

from __future__ import annotations

import copy
import math
import warnings
from dataclasses import dataclass, field

import numpy as np

from .._util import Progress, user_stacklevel, weighted_quantile
from ..engine._types import CHANNEL_DTYPE
from ..engine.grower import (
    ORDERED_SUMS_FROM,
    GrownTree,
    SerialWorkspace,
    add_by_leaf,
    add_through_partition,
    event_leaves,
    grow_tree,
    sample_features,
    serial_leaves_fit,
    serial_tree_fits,
    slice_sums,
    sums_by_leaf,
)
from ..engine.predict import predict_binned
from ..engine.split import SplitParams
from ..model import ClassForestBuilder, ForestBuilder
from ._exact_rounds import (
    ALL_DONE,
    STOPPED,
    TRAIN_NOT_FINITE,
    ExactRounds,
    FusedLoss,
    add_children,
    can_fuse,
    serial_node_sums,
)
from .losses import Loss

__all__ = ["BoostResult", "draw_rows", "draw_sample", "leaf_sums", "node_sums", "run_boosting",
           "add_tree", "cancelled", "CANCELLED_LEAF", "child_weight_floor", "drawn_events"]

SUBSAMPLE_MODES = ("uniform", "poisson", "weighted")
SERIAL_LEAF_SUMS = 1 << 16  # trees of fewer events sum their leaves in one call on one thread
# With negative weights kept, a leaf whose signed weights cancel leaves a net hessian near 0,
# and the step (net gradient / net hessian) grows without bound (scores of 1e40, then NaN,
# in regression; -3.7e10 in a classifier): a leaf whose net hessian is at most this share of
# its |w| one gets no step, as a leaf of net hessian <= 0 gets none.
CANCELLED_LEAF = 0.05
# With negative weights kept, a side whose weights cancel in double (3 - 1 - 2) keeps the
# float32 rounding of its weights (1e-13 of 3e-6 - 1e-6 - 2e-6): a net weight within this
# share of the tree's sum of |w| is none, or a side's A^2 / W took a gain of 1e8 and the
# trees depended on the weights' unit.
WEIGHT_ROUNDING = 2.0**-24
DIVERGED_LOSS = 1.0  # a signed training loss below -this x the first one is refused
GROWN_LOSS = 2.0  # a first tree that takes the training loss above this x the constant's warns


def draw_rows(w: np.ndarray, subsample: float, mode: str,
              rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Events and their weights for one tree.

    ``uniform``: a fraction without replacement, weights kept; ``poisson``: every weight
    times a Poisson(subsample) count (TMVA's bagged boost); ``weighted``: subsample x the
    events of non-zero weight draws, with probability proportional to |w|, then each drawn
    event weighs its count times sign(w) times the mean |w| (so the total |w| is kept).
    Returns (rows int32 sorted, per-event weights float32 with zeros off the sample).
    """
    rows, wt, _ = _draw(w, subsample, mode, rng)
    return rows, wt


def child_weight_floor(min_node_size: float, w_total: float, drawn: int,
                       min_node_events: int | None = None, abs_total: float | None = None
                       ) -> float:
    """A tree's minimum child weight: ``min_node_size`` of its sample's weight
    ``w_total``; with ``min_node_events`` (``min_node_size="auto"``, the share of that many
    training events), that many of the ``drawn`` events of a subsampled tree (as
    LightGBM's min_child_samples counts the bag's), at most a quarter of the weight. With
    negative weights (``abs_total``, the sample's sum of |w|, above ``w_total``), at least
    the float32 rounding of the weights (WEIGHT_ROUNDING of ``abs_total``)."""
    if min_node_events is None:
        floor = min_node_size * w_total
    else:
        floor = min(0.25, min_node_events / max(drawn, 1)) * w_total
    if abs_total is not None and abs_total > w_total:
        floor = max(floor, WEIGHT_ROUNDING * abs_total)
    return floor


def drawn_events(rows: np.ndarray, counts: np.ndarray | None, w: np.ndarray) -> int:
    """The events of a draw of ``_draw`` from weights ``w``, each counted with its
    multiplicity; an event of weight 0 is no event (it moves no sum of the tree)."""
    if counts is None:
        return int(np.count_nonzero(w[rows]))
    return int(counts[w != 0].sum())


def draw_sample(w: np.ndarray, subsample: float, mode: str,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``draw_rows`` plus each event's multiplicity in the sample (int64, 0 off it), for
    the AdaBoost family: a weighted draw's events weigh their count times sign(w) times the
    power of two at or below the mean |w| (each weight, and every sum of them, exact: a tie
    of two sums is a tie whatever the weights' scale, where the float32 rounding of count
    times the mean decided it, differently at other scales; the trees do not depend on
    the unit)."""
    rows, wt, counts = _draw(w, subsample, mode, rng, exact_unit=True)
    if counts is None:
        counts = np.zeros(w.size, dtype=np.int64)
        counts[rows] = 1
    return rows, wt, counts


def _draw(w: np.ndarray, subsample: float, mode: str, rng: np.random.Generator,
          exact_unit: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The draw of ``draw_rows``, with the counts of a poisson or weighted one (None: each
    row once); ``exact_unit``: a weighted draw's unit is the power of two at or below the
    mean |w| (see ``draw_sample``)."""
    n = w.size
    if mode not in SUBSAMPLE_MODES:
        raise ValueError(f"subsample_mode {mode!r} is not valid; use one of {SUBSAMPLE_MODES}")
    if subsample >= 1.0 and mode == "uniform":
        return np.arange(n, dtype=np.int32), w.astype(CHANNEL_DTYPE, copy=False), None
    if mode == "uniform":
        k = max(1, int(round(subsample * n)))
        rows = np.sort(rng.choice(n, k, replace=False)).astype(np.int32)
        wt = np.zeros(n, CHANNEL_DTYPE)
        wt[rows] = w[rows]
        return rows, wt, None
    if mode == "poisson":
        counts = rng.poisson(subsample, n)
        wt = (w * counts).astype(CHANNEL_DTYPE)
    else:
        aw = np.abs(w).astype(np.float64)
        # draws of a fraction of the events, those of weight 0 (never drawn) not counted
        counts = rng.multinomial(max(1, int(round(subsample * np.count_nonzero(aw)))),
                                 aw / aw.sum())
        unit = np.abs(w).sum() / max(counts.sum(), 1)
        if exact_unit:
            unit = math.ldexp(1.0, math.frexp(unit)[1] - 1)
        wt = (counts * np.sign(w) * unit).astype(CHANNEL_DTYPE)
    rows = np.flatnonzero(counts > 0).astype(np.int32)
    return rows, wt, counts


def leaf_sums(tree: GrownTree, *per_event: np.ndarray) -> np.ndarray:
    """Exact sums of each per-event array over each leaf's events, and over each internal
    node's leaves below it (children always follow their parent): (len(per_event), n_nodes)."""
    if tree.partition.size < SERIAL_LEAF_SUMS and len({v.dtype for v in per_event}) == 1:
        out = np.empty((len(per_event), tree.n_nodes))
        serial_node_sums(tree.partition, tree.feature, tree.left, tree.right, tree.start,
                          tree.stop, tuple(np.ascontiguousarray(v) for v in per_event), out)
        return out
    leaves = np.flatnonzero(tree.is_leaf)
    return node_sums(tree, slice_sums(tree.partition, tree.start[leaves], tree.stop[leaves],
                                      *per_event))


def node_sums(tree: GrownTree, at_leaves: np.ndarray) -> np.ndarray:
    """Per-node sums from the leaves' (v, n_leaves, leaves in node order): each internal
    node gets the sum of the leaves below it: (v, n_nodes)."""
    out = np.zeros((at_leaves.shape[0], tree.n_nodes))
    out[:, np.flatnonzero(tree.is_leaf)] = at_leaves
    add_children(out, tree.feature, tree.left, tree.right)
    return out


def _leaf_sum_plan(ordered, loss, multiclass: bool, n: int) -> tuple[bool, bool]:
    """(lean, by_leaf). Lean: the channels live in the grower's buffers and their leaf sums
    are computed again from the events (``QuantisedRows.lean``). By leaf: leaf sums and
    score updates read the events in order (``event_leaves``), bit for bit the walk through
    the partition, which small samples keep (in cache there, and one pass fewer)."""
    lean = (ordered is not None and ordered.lean and not multiclass
            and loss.channel_leaf_sums is not None)
    return lean, lean or n >= ORDERED_SUMS_FROM


def _channel_storage(lean_rows, loss, multiclass: bool, n: int):
    """A function giving each round's ``channels(..., **storage())`` arguments: with
    ``lean_rows`` (a lean QuantisedRows) its buffers, else for a loss that takes them two
    float32 arrays made once for the fit (fresh ones each round are fresh pages to fault
    in), else none."""
    if lean_rows is not None:
        return lambda: {"out": lean_rows.channel_buffers()}
    if multiclass or not loss.channels_into:
        return dict
    kept = (np.empty(n, CHANNEL_DTYPE), np.empty(n, CHANNEL_DTYPE))
    return lambda: {"out": kept}


def _tree_sums(tree: GrownTree, leaf_of: np.ndarray | None, lean_loss, y, score, wg, wh,
               w_tree) -> np.ndarray:
    """Per-node exact sums (w g, w h, w) of a tree's events: through the partition when
    ``leaf_of`` (``event_leaves``) is None, else in event order; ``lean_loss``: the loss
    that computes them again from the events (wg and wh were not kept), else None."""
    if leaf_of is None:
        return leaf_sums(tree, wg, wh, w_tree)
    n_leaves = int(np.count_nonzero(tree.is_leaf))
    if lean_loss is not None:
        return node_sums(tree, lean_loss.channel_leaf_sums(leaf_of, n_leaves, y, score, w_tree))
    return node_sums(tree, sums_by_leaf(leaf_of, n_leaves, wg, wh, w_tree))


def _abs_hessian_sums(tree: GrownTree, leaf_of: np.ndarray | None, lean_loss, y, score, wh,
                      w_tree) -> np.ndarray:
    """Per-node sums of |w| h over a tree's events (the fourth row of a fit with negative
    weights), in the order of ``_tree_sums``."""
    if leaf_of is None:
        return leaf_sums(tree, np.abs(wh))[0]
    n_leaves = int(np.count_nonzero(tree.is_leaf))
    if lean_loss is not None:
        at_leaves = lean_loss.channel_leaf_sums(leaf_of, n_leaves, y, score, np.abs(w_tree))[1:2]
    else:
        at_leaves = sums_by_leaf(leaf_of, n_leaves, np.abs(wh))
    return node_sums(tree, at_leaves)[0]


def cancelled(net: np.ndarray, absolute: np.ndarray | None) -> np.ndarray:
    """Nodes whose net (signed-weight) hessian is at most CANCELLED_LEAF of the same sum over
    |w| (False everywhere without that sum, i.e. without negative weights): their step,
    net gradient over net hessian, would divide by what is left of a cancellation."""
    if absolute is None:
        return np.zeros(net.shape, dtype=bool)
    return net <= CANCELLED_LEAF * absolute


def _add_tree_scores(codes, tree: GrownTree, value: np.ndarray, score: np.ndarray,
                     leaf_of: np.ndarray | None, every_event: bool) -> None:
    """score += the tree on its training events: by each event's leaf when ``leaf_of`` is
    given and the tree saw ``every_event``, else through the partition or the codes."""
    if leaf_of is not None and every_event:
        add_by_leaf(leaf_of, value[tree.is_leaf], score)
    else:
        update_scores(codes, tree, value, score, through_partition=every_event)


def leaf_quantile(tree: GrownTree, values: np.ndarray, w: np.ndarray, q: float) -> np.ndarray:
    """Weighted q-quantile of ``values`` over each leaf's events (0 on internal nodes)."""
    out = np.zeros(tree.n_nodes)
    for k in np.flatnonzero(tree.is_leaf):
        idx = tree.partition[tree.start[k]:tree.stop[k]]
        out[k] = weighted_quantile(values[idx], w[idx], q)
    return out


def add_tree(builder: ForestBuilder, tree: GrownTree, value: np.ndarray, mapper,
             tree_weight: float = 1.0, cover: np.ndarray | None = None) -> None:
    """Append a grown tree with its node values to a forest under construction.

    cover: per-node sum of event weights (default: the tree's W sums).
    """
    builder.add(tree_weight=tree_weight, feature=tree.feature,
                threshold=mapper.thresholds(tree.feature, tree.bin_threshold),
                bin_threshold=tree.bin_threshold, left=tree.left, right=tree.right,
                missing_left=tree.missing_left, value=value, gain=tree.gain,
                cover=tree.sum_w if cover is None else cover)


def update_scores(codes: np.ndarray, tree: GrownTree, value: np.ndarray, score: np.ndarray,
                  scale: float = 1.0, through_partition: bool = False) -> None:
    """score += scale * tree(x) on binned data (feature-major codes (m, n)).

    through_partition: the scores are the tree's own training events and the partition
    holds every one of them, so leaf slices say where each event went.
    """
    if through_partition:
        add_through_partition(tree, scale * value[tree.is_leaf], score)
        return
    predict_binned(codes, tree.feature, tree.bin_threshold, tree.left, tree.right,
                   tree.missing_left, value, np.array([0, tree.n_nodes], np.int64),
                   np.array([scale]), score)


@dataclass
class BoostResult:
    """Outcome of a boosting run."""

    builder: ForestBuilder
    base_score: float
    train_loss: np.ndarray
    validation_loss: np.ndarray | None
    best_iteration: int | None
    extra: dict = field(default_factory=dict)


class _OneScore:
    """A loss of one score per event seen as a softmax-like loss of K = 1 scores: (1, n)
    score arrays, (1, n) channels, so one loop serves both."""

    n_classes = 1

    def __init__(self, loss):
        self.loss_of_one = loss

    def init_scores(self, y, w):
        return np.array([float(self.loss_of_one.init_score(y, w))])

    def begin_round(self, y, w, scores):
        self.loss_of_one.begin_round(y, w, scores[0])

    def channels(self, y, scores, w_tree, w, out=None, maxima=None):
        extra = {} if out is None else {"out": out}
        if maxima is not None:  # only the losses that fill them are given them
            extra["maxima"] = maxima
        wg, wh, loss = self.loss_of_one.channels(y, scores[0], w_tree, w, **extra)
        return wg[None], wh[None], loss

    @property
    def channel_leaf_sums(self):
        return self.loss_of_one.channel_leaf_sums

    @property
    def channels_into(self):
        return self.loss_of_one.channels_into

    def loss(self, y, w, scores):
        return self.loss_of_one.loss(y, w, scores[0])


def _round_dependent(loss) -> bool:
    """Whether the loss's value depends on per-round state (Huber's delta, refreshed from
    the training residuals each round; a flatness loss's base loss decides)."""
    inner = getattr(loss, "base", loss)
    method = getattr(type(inner), "begin_round", None)
    return method is not None and method is not Loss.begin_round


def _fixed_metric(loss):
    """The loss of the first round, frozen, as a one-score loss: the one measure every
    round's training and validation loss is recorded in (Huber's delta shrinks as the fit
    improves, so losses at each round's own delta are not comparable: the validation loss
    would fall with the delta alone, and early stopping would compare unlike numbers)."""
    return _OneScore(copy.copy(getattr(loss, "base", loss)))


def _checked_validation_loss(value: float, it: int, unit: str) -> float:
    """The validation loss after round ``it``; ValueError when it is not finite (its
    weights times the loss overflow float64), as no stopping rule can compare it."""
    if not np.isfinite(value):
        raise ValueError(f"the loss on the validation events (the last eval_set, or the "
                         f"held-out fraction) is {value!r} after {unit} {it + 1}: their weights "
                         "times the loss overflow float64; rescale the eval_set's sample_weight "
                         "or targets (only the weights' ratios matter)")
    return value


def _checked_training_loss(value: float, rounds: int, unit: str,
                           first: float | None = None) -> float:
    """The training loss after ``rounds`` rounds (``first``: after the first); ValueError
    when it is not finite (the scores diverged, and every later tree, and the model, would
    be NaN or overflowing) or below -``first``: every event's loss is >= 0, so only
    negative weights take the sum below zero, and that far only when the trees fit where
    the negative events lie, a loss with no lower bound (it runs away with the scores:
    1e10 GeV regression predictions, raw scores of 1e9; a region of net negative weight
    whose leaves take no step, ``cancelled``, stays a small negative term)."""
    if first is not None and value < -DIVERGED_LOSS * abs(first):
        raise ValueError(f"training diverged: the signed loss of the training events fell "
                         f"to {value:.3g} after {unit} {rounds} (from {first:.3g}): with negative "
                         "weights kept (negative_weights='keep'), the trees fit the negative-"
                         "weight events' fluctuations instead of the net sample, where the "
                         "loss has no lower bound, and the scores run away; use "
                         "n_trees='auto' (its held-out loss stops the fit in time), fewer "
                         "trees, a smaller learning_rate, or negative_weights='regress' (the "
                         "default)")
    if not np.isfinite(value):
        raise ValueError(f"training diverged: the loss on the training events is {value!r} "
                         f"after {unit} {rounds}, as the scores overflowed: each step "
                         "overshot more than the one before (a learning_rate above 1 can; so "
                         "can negative event weights kept as they are, negative_weights="
                         "'keep'); use a smaller learning_rate, negative_weights='regress' (the "
                         "default), or a larger min_node_size")
    return value


def _grown(lowest: float, now: float, it: int, booster) -> bool:
    """Warn, and say so, when the training loss after ``it`` trees is more than GROWN_LOSS
    times the lowest before it (the constant model's for the first tree): the steps
    overshoot (pseudo-Huber Newton steps with residuals far beyond huber_delta, or weights
    that make reg_lambda negligible, gave a 28-fold loss after one tree and a 370-fold one
    over 100, each step a little worse), which no later check would say."""
    if not (lowest > 0 and now > GROWN_LOSS * lowest):
        return False
    hint = ("; for loss='huber' with boosting='newton', set huber_delta to the residuals' "
            "scale (in the target's units), or use boosting='gradient'"
            if getattr(booster.loss, "name", "") in ("huber", "pseudohuber") else "")
    before = "the constant model's" if it == 1 else "its lowest before"
    warnings.warn(f"after {it} tree{'s' if it > 1 else ''} the training loss is {now:.4g}, "
                  f"more than {GROWN_LOSS:g}x {lowest:.4g} ({before}): the boosting steps "
                  f"overshoot, and the model may be worse than a constant; use a smaller "
                  f"learning_rate or a larger reg_lambda{hint}", stacklevel=user_stacklevel())
    return True


class _TrainLoss:
    """The training loss before each round (``before``), kept from the second round on and
    checked (``_checked_training_loss``, ``_grown``), and the loss after the last (``last``)."""

    def __init__(self, booster, unit: str):
        self.booster, self.unit = booster, unit
        self.losses: list[float] = []
        self.lowest, self.grown = math.inf, False

    def before(self, it: int, now: float) -> None:
        """The loss before round ``it``."""
        if it == 0:
            self.lowest, self.grown = now, False
            return
        self.losses.append(_checked_training_loss(now, it, self.unit, self._first()))
        self.grown = self.grown or _grown(self.lowest, now, it, self.booster)
        self.lowest = min(self.lowest, now)

    def last(self, now: float) -> np.ndarray:
        """The losses with ``now``, the loss after the last round."""
        self.losses.append(_checked_training_loss(now, len(self.losses) + 1, self.unit,
                                                  self._first()))
        return np.asarray(self.losses)

    def _first(self) -> float | None:
        return self.losses[0] if self.losses else None


class _Watch:
    """The validation events of early stopping: their scores, summed tree by tree from zero
    with the base score added when the loss is taken (as the staged scores are, so that
    each recorded loss is the loss of the model cut there, bit for bit), the loss after
    each round, and the stop rule. The best round is the lowest loss (the first of equal
    ones), whatever ``tol``; ``tol`` decides only when to stop: ``n_iter_no_change`` rounds
    after the last one whose loss was below the one before it that counted by more than
    ``tol`` (with tol = 0, rounds after the best)."""

    def __init__(self, valid, base: np.ndarray, n_iter_no_change, tol: float):
        self.codes, self.y, self.w = valid
        self.base = base[:, None]
        self.summed = np.zeros((base.size, self.y.size))
        self.rounds, self.tol = n_iter_no_change, tol
        self.losses: list[float] = []
        self.best_iter: int | None = None
        self.best_loss = np.inf
        self.counted_iter, self.counted_loss = 0, np.inf  # the last improvement by > tol

    def end_round(self, it: int, metric, unit: str) -> bool:
        """Record the loss after round ``it``; whether to stop now."""
        return self.record(it, metric.loss(self.y, self.w, self.summed + self.base), unit)

    def record(self, it: int, value: float, unit: str) -> bool:
        """Record ``value``, the loss after round ``it``; whether to stop now (the rule
        ``_exact_rounds._rounds`` applies in its compiled rounds too)."""
        self.losses.append(_checked_validation_loss(value, it, unit))
        if value < self.best_loss:
            self.best_loss, self.best_iter = value, it
        if value < self.counted_loss - self.tol:
            self.counted_loss, self.counted_iter = value, it
            return False
        return bool(self.rounds) and it - self.counted_iter >= self.rounds


def _channel_maxima(booster, quantised_one_score: bool) -> dict[str, np.ndarray]:
    """``channels``'s ``maxima=`` storage for (max |wg|, max |wh|) where the loss's kernel
    finds them and the booster turns them into the quantiser's (max |A|, max |B|): one pass
    of the events fewer a tree; empty where the quantiser finds them itself."""
    found = (quantised_one_score and getattr(booster.loss, "channel_maxima", False)
             and hasattr(booster, "channel_max_abs"))
    return {"maxima": np.empty(2)} if found else {}


def _exact_rounds(booster, codes, n_value_bins, w, max_depth, max_leaves, n_classes: int,
                  builder, mapper, workspace, *, ok: bool) -> ExactRounds | None:
    """``ExactRounds`` for a fit whose rounds it can grow (``ok``: no feature draws below
    the tree, unsigned weights, leaf sums through the partition; and here: the booster's
    leaf values a ratio of sums, one-call trees, depth-wise or leaf-wise), else None."""
    rule_of = getattr(booster, "exact_leaf_rule", None)
    if not ok or rule_of is None or codes.shape[1] >= SERIAL_LEAF_SUMS:
        return None
    m, n = codes.shape
    fits = (serial_tree_fits(n, m, max_depth) if max_leaves is None
            else serial_leaves_fit(n, m, max_leaves))
    if not fits or rule_of(w.astype(CHANNEL_DTYPE, copy=False)) is None:
        return None
    return ExactRounds(np.ascontiguousarray(codes), n_value_bins, max_depth, n_classes, builder,
                       mapper, workspace, max_leaves)


def _fused_rounds(rounds: ExactRounds, fused: FusedLoss, booster, w, score, n_trees: int, m: int,
                  events: int, watch, train: _TrainLoss, progress, *, split_params, min_node_size,
                  min_node_events) -> None:
    """``run_boosting``'s rounds where ``ExactRounds.run`` grows them (``can_fuse``): many
    rounds a call, each round's channels and losses computed in it, then recorded round
    by round as the loop records them (the same checks, warnings, stop and progress)."""
    w_tree = w.astype(CHANNEL_DTYPE, copy=False)
    split_params.min_child_weight = child_weight_floor(
        min_node_size, float(np.sum(w_tree, dtype=np.float64)), events, min_node_events, None)
    fixed = (w_tree, score, np.ones(m, dtype=np.bool_), split_params.as_tuple(),
             booster.exact_leaf_rule(w_tree), None if watch is None else (watch.codes, watch.summed))
    it = 0
    while it < n_trees:
        done, ended = rounds.run(fused, n_trees - it, it, *fixed)
        for r in range(it, it + done):
            train.before(r, float(fused.before[r]))
            if watch is not None and watch.record(r, float(fused.after[r]), train.unit):
                if r != it + done - 1 or ended != STOPPED:
                    raise RuntimeError("the compiled rounds and the loop disagree on the stop")
                progress.moveto(n_trees, f"early stop at {watch.best_iter + 1}")
                return
            progress.moveto(r + 1, f"loss after {r}: {fused.before[r]:.5g}" if progress.shown else "")
        it += done
        if ended == TRAIN_NOT_FINITE:
            train.before(it, float(fused.before[it]))  # raises: the loss is not finite
        if ended != ALL_DONE:
            raise RuntimeError(f"the compiled rounds ended ({ended}) where the loop goes on")


def run_boosting(booster, codes, y, w, n_value_bins, mapper, *, n_trees, max_depth,
                 split_params: SplitParams, min_node_size, subsample, subsample_mode,
                 colsample_bytree, colsample_bylevel, colsample_bynode, rng,
                 valid=None, n_iter_no_change=None, tol=0.0, verbose=False,
                 quantised=False, max_leaves=None, min_node_events=None) -> BoostResult:
    """Boost ``n_trees`` rounds of ``booster`` (gradient.py, newton.py): one tree a round, or
    with a softmax loss (``loss.n_classes`` = K > 1, y the class indices) K trees a round,
    one a class, each seeing the same events and features and the scores of the round before.

    codes: (m, n) uint8 feature-major codes, or with ``quantised`` a QuantisedRows.
    max_leaves: None grows depth-wise; an integer, leaf-wise (``max_depth`` may then be None).
    min_node_events: ``min_node_size`` is the share of this many events (see
    ``child_weight_floor``).
    """
    multiclass = getattr(booster.loss, "n_classes", 1) > 1
    loss = booster.loss if multiclass else _OneScore(booster.loss)
    if quantised:  # ``codes`` is the QuantisedRows holding every event's codes
        ordered, codes = codes, None
        n, m = ordered.codes.shape
    else:
        m, n = codes.shape
    base = loss.init_scores(y, w)
    score = np.repeat(base[:, None], n, axis=1)  # (K, n): each class's scores contiguous
    builder = ClassForestBuilder(m, base) if multiclass else ForestBuilder(m, float(base[0]))
    metric = loss  # what the losses are recorded in
    unit = "round" if multiclass else "tree"
    train = _TrainLoss(booster, unit)
    watch = None if valid is None else _Watch(valid, base, n_iter_no_change, tol)
    full_sample = subsample >= 1.0 and subsample_mode == "uniform"  # no draw, no index array
    events = int(np.count_nonzero(w))  # of the full sample: a weight of 0 is no event
    lean, by_leaf = _leaf_sum_plan(ordered if quantised else None, loss, multiclass, n)
    storage = _channel_storage(ordered if lean else None, loss, multiclass, n)
    # the last tree's event leaves (storage the next one reuses); small trees' buffers
    leaf_of, workspace = None, SerialWorkspace()
    found = _channel_maxima(booster, quantised and not multiclass)  # {"maxima": (2,)} or {}
    signed = bool(np.any(w < 0))  # negative weights kept: leaves may cancel (CANCELLED_LEAF)
    rounds = None if quantised else _exact_rounds(
        booster, codes, n_value_bins, w, max_depth, max_leaves, loss.n_classes, builder, mapper,
        workspace, ok=(not by_leaf and not signed and colsample_bylevel >= 1.0
                       and colsample_bynode >= 1.0))
    progress = Progress(n_trees, "training", enabled=True if verbose else None,
                        unit="rounds" if multiclass else "trees")
    fused = (FusedLoss(booster.loss, y, w, n_trees, watch)
             if can_fuse(booster.loss, rounds, full_sample, colsample_bytree >= 1.0) else None)
    if fused is not None:
        _fused_rounds(rounds, fused, booster, w, score, n_trees, m, events, watch, train,
                      progress, split_params=split_params, min_node_size=min_node_size,
                      min_node_events=min_node_events)
    for it in range(n_trees if fused is None else 0):
        if not multiclass:
            loss.begin_round(y, w, score)
            if it == 0 and _round_dependent(booster.loss):
                metric = _fixed_metric(booster.loss)
        if full_sample:
            rows, w_tree, drawn = None, w.astype(CHANNEL_DTYPE, copy=False), events
        else:
            rows, w_tree, counts = _draw(w, subsample, subsample_mode, rng)
            drawn = drawn_events(rows, counts, w)
            del counts  # poisson and weighted draws' int64 counts: 8 bytes an event
        if quantised:  # every event flows through; those left out carry zero channels
            rows = None
        wg, wh, previous_loss = loss.channels(y, score, w_tree, w, **storage(), **found)
        train.before(it, previous_loss if metric is loss else metric.loss(y, w, score))
        if it == 0 or not full_sample:  # the full sample's tree weights are the same each round
            w_tree_total = float(np.sum(w_tree, dtype=np.float64))
            w_tree_abs = float(np.sum(np.abs(w_tree), dtype=np.float64)) if signed else None
        split_params.min_child_weight = child_weight_floor(min_node_size, w_tree_total, drawn,
                                                           min_node_events, w_tree_abs)
        features = sample_features(np.ones(m, dtype=np.bool_), colsample_bytree, rng)
        if rounds is not None:  # every loss's channels are CHANNEL_DTYPE (Loss.channels)
            rounds.grow(wg, wh, w_tree, rows, score, features,
                        split_params.as_tuple(), booster.exact_leaf_rule(w_tree),
                        None if watch is None else (watch.codes, watch.summed))
        for k in range(0 if rounds is not None else loss.n_classes):
            a, b = booster.channels(wg[k], wh[k], w_tree, overwrite=lean)
            tree = grow_tree(codes, rows, a, b, w_tree, n_value_bins, split_params, max_depth,
                             features, colsample_bylevel, colsample_bynode, rng, workspace=workspace,
                             quantised=quantised, ordered=ordered if quantised else None,
                             rounding_seed=it * loss.n_classes + k, max_leaves=max_leaves,
                             max_abs=booster.channel_max_abs(found["maxima"], w_tree) if found else None)
            # each event's leaf, in the grower's scratch once the tree has grown
            leaf_of = (event_leaves(tree, n, ordered.scratch_idx if quantised else leaf_of)
                       if by_leaf else None)
            sums = _tree_sums(tree, leaf_of, loss if lean else None, y, score[k], wg[k], wh[k],
                              w_tree)
            if signed:  # a fourth row: sum |w| h, for the leaves whose weights cancel
                sums = np.vstack([sums, _abs_hessian_sums(tree, leaf_of, loss if lean else None,
                                                          y, score[k], wh[k], w_tree)])
            value = booster.leaf_values(tree, y, w_tree, score[k], sums)
            add_tree(builder.classes[k] if multiclass else builder, tree, value, mapper,
                     cover=sums[2] if quantised else None)
            _add_tree_scores(codes, tree, value, score[k], leaf_of,
                             every_event=rows is None or rows.size == n)
            if watch is not None:
                update_scores(watch.codes, tree, value, watch.summed[k])
            del tree, a, b  # freed before the next tree's (peak memory at large n)
        del wg, wh, w_tree, rows  # freed before the next round's draw and channels are made
        if watch is not None and watch.end_round(it, metric, unit):
            progress.moveto(n_trees, f"early stop at {watch.best_iter + 1}")
            break
        # the loss known before tree it
        progress.moveto(it + 1, f"loss after {it}: {previous_loss:.5g}" if progress.shown else "")
    progress.close()
    if rounds is not None:
        rounds.flush()
    train_loss = train.last(metric.loss(y, w, score))
    watched = (None, None) if watch is None else (np.asarray(watch.losses), watch.best_iter)
    return BoostResult(builder, float(base[0]) if not multiclass else 0.0, train_loss,
                       *watched, {} if metric is loss else {"metric_loss": metric.loss_of_one})
