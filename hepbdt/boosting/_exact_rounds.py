"""A small exact fit's boosting rounds in compiled calls: a round a call, or many.

On a few thousand events a one-call tree (``engine._serial_tree``) takes tens of
microseconds, and the Python around it (the tree's arrays, its leaf sums and values, the
score update, the forest's copy of the tree) about as long again: the TMVA multi-class
tutorial's 800 trees spent 62 % of the fit outside the compiled trees. Where a round's
trees are one-call trees (exact histograms, no feature draws below the tree, depth-wise or
leaf-wise, one thread, unsigned weights; the whole sample or a row subsample; leaf-wise
trees in their own compiled copies of the rounds, ``_rounds_leaves``) and the leaf values
are a ratio of the leaf sums (newton's and gradient boosting's but for the absolute and
Huber losses), ``ExactRounds`` grows every class's tree of a round, sums its leaves,
sets their values, adds them to the training and validation scores and writes the
nodes into a store of the fit's trees, in one call: the same kernels and the
same arithmetic in the same order as ``run_boosting``'s loop, so the same model bit for
bit (tests/test_exact_rounds.py). Where the rounds also need no draw and the loss is one
of FUSED_LOSSES, ``ExactRounds.run`` grows many rounds a call, computing each round's
channels and the training and validation losses there with the loss's own kernels and
applying the early-stopping rule; the loop records those losses afterwards, round by
round.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine._serial_tree import (
    SPARSE_EVENTS,
    SerialWorkspace,
    grow_exact_leaves_serial,
    grow_exact_serial,
    grow_exact_serial_1,
)
from ..engine._types import (
    CHANNEL_DTYPE,
    INDEX_DTYPE,
    MISSING_BIN,
    N_CHANNELS,
    launch_lock,
    njit,
    serial_twin,
)
from ..engine.grower import (
    SERIAL_NODE_ARRAYS,
    depth_limit_of,
    numba_threads,
    serial_leaves_buffers,
    serial_tree_buffers,
    serial_tree_sharing,
)
from ..engine.sums import numpy_sum
from .losses import (
    LOSS_CHUNK,
    Deviance,
    Logistic,
    Softmax,
    Squared,
    _logistic_chunk,
    _logistic_loss_term,
    _softmax_chunk,
    _softmax_loss_sum,
    _softmax_terms,
    _squared_channels,
    _squared_terms,
)

__all__ = ["ExactRounds", "FusedLoss", "NEWTON_LEAF", "RATIO_LEAF", "can_fuse"]

# Nodes the store holds before its trees go to the forest builder (at least a round's):
# about 2.3 MB, whatever the forest's size.
STORE_NODES = 1 << 16

NEWTON_LEAF = 0  # -T_alpha(G) / (H + lambda) where H + lambda > 0 (newton.py)
RATIO_LEAF = 1  # -G / H where H > floor (gradient.py)
# Event-features a call of many rounds grows trees over at most (its rounds: this over the
# sample's events x features): hastie's 5,400 x 10 take 1,242 rounds a call, 60,000 x 28
# take 39 (about 0.2 s), so Ctrl-C and the progress bar wait for no long call.
CALL_WORK = 1 << 26
# Where a call's rounds take their channels from: given (one round, the loop's channels), or
# computed in the call from the scores, for the losses below.
GIVEN, LOGISTIC, SQUARED, SOFTMAX = 0, 1, 2, 3
FUSED_LOSSES = {Deviance: LOGISTIC, Logistic: LOGISTIC, Squared: SQUARED, Softmax: SOFTMAX}
# How a call of rounds ended (``run``): every round asked for; a training loss not finite
# before round ``done`` (its trees not grown); a validation loss not finite, or the stop
# rule, after round ``done - 1``.
ALL_DONE, TRAIN_NOT_FINITE, VALID_NOT_FINITE, STOPPED = 0, 1, 2, 3
# the node arrays a tree keeps in the store, by name and type (model.NODE_ARRAYS less the
# thresholds, which the bin mapper gives at each flush)
STORED = (("feature", np.int32), ("bin_threshold", np.uint8), ("missing_left", np.bool_),
          ("left", np.int32), ("right", np.int32), ("value", np.float64),
          ("gain", np.float64), ("cover", np.float64))


# ``_rounds``' loss arguments where the loop gives the channels (unread, of their types)
NO_FUSED = (np.zeros(3), np.empty(0), np.empty(0), 0.0, np.empty(0), np.empty(0), 0.0,
            np.zeros(1), np.zeros(4), np.empty(0), np.empty(0), np.empty(0))


class ExactRounds:
    """The rounds of a fit on feature-major ``codes`` (m, n) of ``n_classes`` trees each,
    depth ``max_depth`` (with ``max_leaves``: leaf-wise trees of at most that many leaves,
    ``max_depth`` None or their depth limit), into ``builder`` (a ClassForestBuilder when ``n_classes`` > 1:
    class k the k-th tree of each round) with thresholds from ``mapper``: ``grow`` does
    one round, ``flush`` hands the trees grown to the builder (a block whenever the
    store could not take another round: see STORE_NODES)."""

    def __init__(self, codes: np.ndarray, n_value_bins: np.ndarray, max_depth: int | None,
                 n_classes: int, builder, mapper, workspace: SerialWorkspace | None = None,
                 max_leaves: int | None = None):
        m, n = codes.shape
        self.codes, self.n_value_bins = codes, n_value_bins
        self.n_classes, self.builder, self.mapper = n_classes, builder, mapper
        self.every_event = np.empty(0, INDEX_DTYPE)
        self.leafwise = max_leaves is not None
        if self.leafwise:  # the tree's limits in place of the depth (_leaves_round_tree)
            self.max_depth = (int(max_leaves), depth_limit_of(max_depth))
            self.buffers = serial_leaves_buffers(n, m, max_leaves, INDEX_DTYPE, CHANNEL_DTYPE,
                                                 workspace)
        else:
            self.max_depth = max_depth
            self.buffers = serial_tree_buffers(n, m, max_depth, INDEX_DTYPE, CHANNEL_DTYPE,
                                               workspace, serial_tree_sharing(n, m))
        self.partition = np.empty(n, INDEX_DTYPE)
        self.payload = np.empty((n, N_CHANNELS), CHANNEL_DTYPE)
        per_tree = self.buffers[SERIAL_NODE_ARRAYS].size  # the node capacity of one tree
        self.per_round = n_classes * per_tree
        self.node_sums = np.empty((N_CHANNELS, per_tree))
        self.no_valid = (np.empty((m, 0), np.uint8), np.empty((n_classes, 0)))
        capacity = max(self.per_round, STORE_NODES)  # a tree has a node at least
        self.store = {name: np.empty(capacity, dtype) for name, dtype in STORED}
        self.stored = tuple(self.store[name] for name, _ in STORED)
        self.sizes = np.empty(capacity, np.int64)
        self.n_nodes = self.n_trees = 0

    def grow(self, wg: np.ndarray, wh: np.ndarray, w_tree: np.ndarray, rows: np.ndarray | None,
             score: np.ndarray, used: np.ndarray, params: tuple, rule: tuple,
             valid: tuple | None) -> None:
        """One round: a tree a class on the channels ``wg``, ``wh`` (K, n) and weights
        ``w_tree`` of the events ``rows`` (sorted int32; None: every event), leaf values by
        ``rule`` (the booster's ``exact_leaf_rule``) added to every event's ``score`` (K, n)
        and, with ``valid`` (the validation codes (m, n_valid) and their summed scores (K,
        n_valid)), to those."""
        self._call(None, 1, 0, wg, wh, w_tree, rows, score, used, params, rule, valid)

    def run(self, fused: FusedLoss, n_rounds: int, first: int, w_tree: np.ndarray,
            score: np.ndarray, used: np.ndarray, params: tuple, rule: tuple,
            valid: tuple | None) -> tuple[int, int]:
        """Rounds ``first``, ``first + 1``, ... of a fit on every event whose channels
        ``fused`` computes in the call from the scores, as the loss's ``channels`` does,
        with the training loss before each round and the validation loss after it
        (``fused.before``, ``fused.after``, from round ``first`` on): at most ``n_rounds``,
        as many as the store takes and CALL_WORK allows. Returns (rounds grown, how the
        call ended: ALL_DONE, TRAIN_NOT_FINITE, VALID_NOT_FINITE or STOPPED)."""
        m, n = self.codes.shape
        bounded = max(1, CALL_WORK // (m * n))  # a call's time (Ctrl-C, progress) stays short
        return self._call(fused, min(n_rounds, bounded), first, *fused.channels, w_tree, None,
                          score, used, params, rule, valid)

    def _call(self, fused: FusedLoss | None, n_rounds: int, first: int, wg, wh, w_tree, rows,
              score, used, params, rule, valid) -> tuple[int, int]:
        """``_rounds`` (or its one-thread twin) for at most ``n_rounds`` rounds, as many as
        the store takes (flushed first when it cannot take one); the store's counts moved on."""
        if self.n_nodes + self.per_round > self.sizes.size:
            self.flush()
        n_rounds = min(n_rounds, (self.sizes.size - self.n_nodes) // self.per_round)
        n_rows = self.partition.size if rows is None else rows.size
        valid_codes, valid_summed = self.no_valid if valid is None else valid
        shared = 1 if self.leafwise else serial_tree_sharing(n_rows, self.codes.shape[0])
        args = ((GIVEN, *NO_FUSED) if fused is None else fused.arguments(first)) + (
            n_rounds, first, self.codes, self.every_event if rows is None else rows,
            self.partition[:n_rows], self.payload[:n_rows], used, self.n_value_bins, params,
            self.max_depth, *self.buffers, SPARSE_EVENTS, shared, wg, wh, w_tree, rule, score,
            valid_codes, valid_summed, self.node_sums, *self.stored, self.sizes, self.n_nodes,
            self.n_trees)
        if self.leafwise:
            self.n_nodes, done, ended = _rounds_leaves(*args)
        elif shared > 1:
            with launch_lock(), numba_threads(shared):
                self.n_nodes, done, ended = _rounds(*args)
        else:  # no context to enter: a round of a few thousand events takes tens of us
            self.n_nodes, done, ended = _rounds_1(*args)
        self.n_trees += done * self.n_classes
        return done, ended

    def flush(self) -> None:
        """Hand the trees grown since the last flush to the builder and empty the store."""
        if self.n_trees == 0:
            return
        sizes = self.sizes[:self.n_trees]
        first = np.concatenate([[0], np.cumsum(sizes)])
        for k in range(self.n_classes):
            trees = np.arange(k, self.n_trees, self.n_classes)
            nodes = _node_indices(first[trees], sizes[trees])
            arrays = {name: self.store[name][nodes] for name, _ in STORED}
            arrays["threshold"] = self.mapper.thresholds(arrays["feature"], arrays["bin_threshold"])
            target = self.builder.classes[k] if self.n_classes > 1 else self.builder
            target.add_trees(sizes[trees], np.ones(trees.size), **arrays)
        self.n_nodes = self.n_trees = 0


def _node_indices(first: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The node positions of trees that start at ``first`` with ``sizes`` nodes, in order."""
    starts = np.repeat(first - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return np.arange(int(sizes.sum()), dtype=np.int64) + starts


@njit
def _exact_round(codes, rows, partition, payload, used, n_value_bins, params, max_depth, pool,
                 bits, dirty, free, buf, scratch_idx, scratch_payload, scan_sums, scan_bins,
                 feature, bin_threshold, missing_left, left, right, gain, start, stop, sums,
                 sparse_events, n_threads, wg, wh, w_tree, rule, score, valid_codes,
                 valid_summed, node_sums, out_feature, out_bin, out_missing, out_left, out_right,
                 out_value, out_gain, out_cover, out_sizes, at, tree):
    """A tree a class (``grow_exact_serial`` on A, B, W from the channels as the booster's
    ``channels`` makes them) of the events ``rows`` (empty: every event; ``partition`` and
    ``payload`` are as long as the tree's events), its leaf values, every event's scores,
    and its nodes stored from node ``at`` (tree ``tree``); returns the next free node."""
    kind, negate_a, b_is_w, alpha, reg_lambda, floor, rate = rule
    n_rows = partition.size
    every = rows.size == 0
    for k in range(wg.shape[0]):
        for i in range(n_rows):
            e = i if every else rows[i]
            partition[i] = e
            payload[i, 0] = -wg[k, e] if negate_a else wg[k, e]
            payload[i, 1] = w_tree[e] if b_is_w else wh[k, e]
            payload[i, 2] = w_tree[e]
        n_nodes = grow_exact_serial(codes, partition, payload, used, n_value_bins, params,
                                    max_depth, pool, bits, dirty, free, buf, scratch_idx,
                                    scratch_payload, scan_sums, scan_bins, feature,
                                    bin_threshold, missing_left, left, right, gain, start, stop,
                                    sums, sparse_events, n_threads)
        tree_sums = node_sums[:, :n_nodes]
        serial_node_sums(partition, feature[:n_nodes], left[:n_nodes], right[:n_nodes],
                         start[:n_nodes], stop[:n_nodes], (wg[k], wh[k], w_tree), tree_sums)
        for c in range(n_nodes):
            value = 0.0
            if feature[c] < 0:
                value = _leaf_value(kind, tree_sums[0, c], tree_sums[1, c], alpha, reg_lambda,
                                    floor) * rate
                if n_rows == score.shape[1]:  # every event in the tree: through its leaves
                    for j in range(start[c], stop[c]):
                        score[k, partition[j]] += value
            out_feature[at + c] = feature[c]
            out_bin[at + c] = bin_threshold[c]
            out_missing[at + c] = missing_left[c]
            out_left[at + c] = left[c]
            out_right[at + c] = right[c]
            out_value[at + c] = value
            out_gain[at + c] = gain[c]
            out_cover[at + c] = sums[c, 2]
        if n_rows < score.shape[1]:  # a subsample: every event down the tree
            _add_walked(codes, feature, bin_threshold, missing_left, left, right,
                        out_value[at:], score[k])
        _add_walked(valid_codes, feature, bin_threshold, missing_left, left, right,
                    out_value[at:], valid_summed[k])
        out_sizes[tree + k] = n_nodes
        at += n_nodes
    return at


@njit
def _leaf_value(kind, g, h, alpha, reg_lambda, floor):
    """A leaf's value before the learning rate, as newton.py and gradient.py compute it."""
    if kind == NEWTON_LEAF:
        if g != g:
            t = np.nan
        else:
            t = (1.0 if g > 0 else -1.0 if g < 0 else 0.0) * max(abs(g) - alpha, 0.0)
        den = h + reg_lambda
        return -t / den if den > 0 else 0.0
    return -g / h if h > floor else 0.0


@njit
def _add_walked(codes, feature, bin_threshold, missing_left, left, right, value, summed):
    """summed[i] += the tree's value at event i of ``codes`` (m, n), each event walked down
    the tree (``predict_binned``'s walk)."""
    for i in range(codes.shape[1]):
        node = 0
        while feature[node] >= 0:
            c = codes[feature[node], i]
            go_left = missing_left[node] if c == MISSING_BIN else c <= bin_threshold[node]
            node = left[node] if go_left else right[node]
        summed[i] += 1.0 * value[node]


@njit
def serial_node_sums(partition, feature, left, right, start, stop, values, out):
    """Exact sums of each of ``values`` over each leaf's events, added in partition order
    from zero, then each internal node its children's, deepest first: (len(values), nodes)
    into ``out``. (``grower.slice_sums`` and ``node_sums`` in one call on one thread:
    called from there, its parallel launch made tmva-reg's 1,708 small trees 0.40 -> 0.51 s.)
    Three values (the channels, the usual call) in one pass: three chains of adds that
    overlap, where one value after another waited on each add (4,500 events, 7.5 -> 4.6 us)."""
    for k in range(feature.size):
        if feature[k] < 0:
            if len(values) == 3:
                x, y, z = values
                tx, ty, tz = 0.0, 0.0, 0.0
                for j in range(np.uint64(start[k]), np.uint64(stop[k])):
                    i = np.uint64(partition[j])
                    tx += x[i]
                    ty += y[i]
                    tz += z[i]
                out[0, k], out[1, k], out[2, k] = tx, ty, tz
                continue
            for v in range(len(values)):
                total = 0.0
                for j in range(np.uint64(start[k]), np.uint64(stop[k])):
                    total += values[v][np.uint64(partition[j])]
                out[v, k] = total
    add_children(out, feature, left, right)


@njit
def add_children(out, feature, left, right):
    """Each internal node's sums are its children's, deepest first (children follow parents)."""
    for k in range(feature.size - 1, -1, -1):
        if feature[k] >= 0:
            for v in range(out.shape[0]):
                out[v, k] = out[v, left[k]] + out[v, right[k]]


_exact_round_1 = serial_twin(_exact_round, grow_exact_serial=grow_exact_serial_1)


@njit
def _fused_channels(kind, factors, y, w, w_total, w_tree, score, wg, wh, buffer, partial):
    """The loss's ``channels`` into ``wg``, ``wh`` (K, n), and the training loss it returns:
    the same kernels' arithmetic, chunks and order of sums (numpy's for ``np.sum``).
    ``factors``: the logistic family's scale, softmax's gradient and hessian factors."""
    n = y.size
    if kind == SQUARED:
        _squared_channels(y, score[0], w_tree, w, wg[0], wh[0], buffer[:n])
        total = numpy_sum(buffer[:n])
    else:
        for c in range(partial.size):
            lo = c * LOSS_CHUNK
            hi = min(n, lo + LOSS_CHUNK)
            if kind == LOGISTIC:
                partial[c] = _logistic_chunk(y[lo:hi], score[0, lo:hi], w_tree[lo:hi], w[lo:hi],
                                             factors[0], wg[0, lo:hi], wh[0, lo:hi],
                                             buffer[:hi - lo])
            else:
                partial[c] = _softmax_chunk(y, score, w_tree, w, factors[1], factors[2], wg, wh,
                                            lo, hi - lo)
        total = numpy_sum(partial)
    return total / w_total if w_total != 0 else 0.0


@njit
def _fused_loss(kind, factors, y, w, w_total, base, summed, score, buffer, partial):
    """The loss's ``loss`` at the scores ``summed + base`` (K, n) (``score``, ``buffer``:
    scratch), as ``_Watch`` takes it."""
    n = y.size
    for k in range(score.shape[0]):
        for i in range(n):
            score[k, i] = summed[k, i] + base[k]
    if kind == SQUARED:
        _squared_terms(y, score[0], w, buffer[:n])
        return numpy_sum(buffer[:n]) / w_total if w_total != 0 else 0.0
    for c in range(partial.size):
        lo = c * LOSS_CHUNK
        hi = min(n, lo + LOSS_CHUNK)
        if kind == LOGISTIC:
            total = 0.0
            for i in range(lo, hi):
                total += _logistic_loss_term(score[0, i], y[i], w[i], factors[0])
            partial[c] = total
        else:
            p, top, norm = np.empty((score.shape[0], hi - lo)), np.empty(hi - lo), np.empty(hi - lo)
            _softmax_terms(score, np.uint64(lo), hi - lo, p, top, norm)
            partial[c] = _softmax_loss_sum(y, score, w, np.uint64(lo), hi - lo, top, norm, p[0])
    return numpy_sum(partial) / w_total if w_total != 0 else 0.0


@njit
def _rounds(kind, factors, y, w, w_total, valid_y, valid_w, valid_total, base, state, before,
            after, buffer, n_rounds, first, codes, rows, partition, payload, used, n_value_bins,
            params, max_depth, pool, bits, dirty, free, buf, scratch_idx, scratch_payload,
            scan_sums, scan_bins, feature, bin_threshold, missing_left, left, right, gain, start,
            stop, sums, sparse_events, n_threads, wg, wh, w_tree, rule, score, valid_codes,
            valid_summed, node_sums, out_feature, out_bin, out_missing, out_left, out_right,
            out_value, out_gain, out_cover, out_sizes, at, tree):
    """``n_rounds`` rounds of ``_exact_round``, from round ``first``: one on the channels
    ``wg``, ``wh`` given (kind GIVEN), or (LOGISTIC, SQUARED, SOFTMAX: every event) each
    round's channels and the training loss before it (``before[r]``) computed here from
    ``score``, and with validation events (``valid_y``) the loss after it (``after[r]``)
    and ``_Watch``'s stop rule (``state``: the loss and round of the last improvement by
    more than the tolerance, the tolerance, the patience or 0). Returns (the next free
    node, the rounds grown, how the call ended)."""
    partial = np.empty((y.size + LOSS_CHUNK - 1) // LOSS_CHUNK)
    partial_valid = np.empty((valid_y.size + LOSS_CHUNK - 1) // LOSS_CHUNK)
    valid_score = np.empty((wg.shape[0], valid_y.size))
    for r in range(n_rounds):
        it = first + r
        if kind != GIVEN:
            before[r] = _fused_channels(kind, factors, y, w, w_total, w_tree, score, wg, wh, buffer,
                                        partial)
            if it > 0 and not math.isfinite(before[r]):  # the loop checks from round 1
                return at, r, TRAIN_NOT_FINITE
        at = _exact_round(codes, rows, partition, payload, used, n_value_bins, params, max_depth,
                          pool, bits, dirty, free, buf, scratch_idx, scratch_payload, scan_sums,
                          scan_bins, feature, bin_threshold, missing_left, left, right, gain,
                          start, stop, sums, sparse_events, n_threads, wg, wh, w_tree, rule,
                          score, valid_codes, valid_summed, node_sums, out_feature, out_bin,
                          out_missing, out_left, out_right, out_value, out_gain, out_cover,
                          out_sizes, at, tree + r * wg.shape[0])
        if kind != GIVEN and valid_y.size > 0:
            value = _fused_loss(kind, factors, valid_y, valid_w, valid_total, base, valid_summed,
                                valid_score, buffer, partial_valid)
            after[r] = value
            if not math.isfinite(value):
                return at, r + 1, VALID_NOT_FINITE
            if value < state[0] - state[2]:
                state[0] = value
                state[1] = it
            elif state[3] > 0 and it - state[1] >= state[3]:
                return at, r + 1, STOPPED
    return at, n_rounds, ALL_DONE


_rounds_1 = serial_twin(_rounds, _exact_round=_exact_round_1)


@njit
def _leaves_round_tree(codes, partition, payload, used, n_value_bins, params, limits, pool, bits,
                       dirty, free, buf, scratch_idx, scratch_payload, scan_sums, scan_bins,
                       feature, bin_threshold, missing_left, left, right, gain, start, stop, sums,
                       sparse_events, n_threads):
    """``grow_exact_leaves_serial`` called as ``grow_exact_serial`` is, ``limits`` (the
    leaves, the depth limit) in place of the depth (``free``, ``buf`` and ``n_threads``
    unread: the leaf-wise tree keeps its own and runs on one thread)."""
    max_leaves, depth_limit = limits
    return grow_exact_leaves_serial(codes, partition, payload, used, n_value_bins, params,
                                    max_leaves, depth_limit, pool, bits, dirty, scratch_idx,
                                    scratch_payload, scan_sums, scan_bins, feature, bin_threshold,
                                    missing_left, left, right, gain, start, stop, sums,
                                    sparse_events)


# The rounds of leaf-wise trees: their own compiled copies, so that a depth-wise fit compiles
# no leaf-wise tree.
_rounds_leaves = serial_twin(
    _rounds, "_leaves",
    _exact_round=serial_twin(_exact_round, "_leaves", grow_exact_serial=_leaves_round_tree))


class FusedLoss:
    """A loss whose channels and losses ``ExactRounds.run`` computes in its compiled rounds
    (FUSED_LOSSES), with what that needs: labels or targets and weights in double (the
    values the loss's kernels read), its factors, the weights' totals as the loss takes
    them, the validation events' and the stop rule's state (``_Watch``'s), the channels'
    storage (K, n), and the losses before and after each round."""

    def __init__(self, loss, y: np.ndarray, w: np.ndarray, n_trees: int, watch=None):
        self.kind = FUSED_LOSSES[type(loss)]
        self.factors = np.array([getattr(loss, "scale", 1.0), getattr(loss, "gradient_factor", 1.0),
                                 getattr(loss, "hessian_factor", 1.0)], np.float64)
        n, n_classes = y.size, getattr(loss, "n_classes", 1)
        self.y, self.w = np.asarray(y, np.float64), np.asarray(w, np.float64)
        self.w_total = loss.weight_total(w)
        self.channels = tuple(np.empty((n_classes, n), CHANNEL_DTYPE) for _ in range(2))
        self.before, self.after = np.empty(n_trees + 1), np.empty(n_trees + 1)
        empty = np.empty(0)
        self.valid = (empty, empty, 0.0, np.zeros(n_classes))
        self.state = np.zeros(4)
        n_valid = 0
        if watch is not None:
            self.valid = (np.asarray(watch.y, np.float64), np.asarray(watch.w, np.float64),
                          loss.weight_total(watch.w), np.ascontiguousarray(watch.base[:, 0]))
            self.state[2:] = watch.tol, watch.rounds or 0
            n_valid = watch.y.size
        self.buffer = np.empty(max(n, n_valid, LOSS_CHUNK))
        self.watch = watch

    def arguments(self, first: int) -> tuple:
        """``_rounds``' arguments before ``n_rounds``, from round ``first`` on."""
        if self.watch is not None:  # the watch's rule state, as the rounds before left it
            self.state[0], self.state[1] = self.watch.counted_loss, self.watch.counted_iter
        return (self.kind, self.factors, self.y, self.w, self.w_total, *self.valid, self.state,
                self.before[first:], self.after[first:], self.buffer)


def can_fuse(loss, rounds: ExactRounds | None, full_sample: bool, every_feature: bool) -> bool:
    """Whether ``ExactRounds.run`` can take a fit's rounds: exact rounds on every event and
    every feature each round, of a loss in FUSED_LOSSES (whose ``begin_round`` does
    nothing, so the loss recorded is the loss itself)."""
    return rounds is not None and full_sample and every_feature and type(loss) in FUSED_LOSSES
