"""What runs on a Dask worker: one part of a fit's events and the steps on it.

A part is a contiguous run of the training events (its ``offset`` is its first event's
index in the whole sample): its features until they are binned, then its codes (a
:class:`~hepbdt.engine.grower.QuantisedRows`), labels, float32 weights and scores, kept in
this module's registry under the fit's token for the whole fit. Every function here is a
task the driver pins to the part's worker; each does one step of
:mod:`hepbdt.engine.data_parallel` or of the boosting loop (channels, leaf sums, the score
update) on the part's events only. Nothing here imports Dask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import check_weights, check_X, exact_sum_parts
from ..boosting._loop import node_sums, update_scores
from ..engine.binning import BinMapper, EdgeSketch
from ..engine.data_parallel import LevelPlan, PartTree
from ..engine.grower import QuantisedRows, add_by_leaf
from ..engine.histogram import Quantiser
from ..estimators import MAX_MAGNITUDE, MIN_MAGNITUDE, check_magnitudes, check_targets

__all__ = ["PartActor", "PartLost", "load", "sketch", "bin_part", "begin_tree", "root", "level",
           "leaf_sums", "leaf_values", "finish", "drop", "predict_block"]

_PARTS: dict[str, _Part] = {}  # (token, part index) -> the part, in this worker process


class PartLost(RuntimeError):
    """A part's state is not on the worker the driver asked (the worker was restarted)."""


class _Part:
    def __init__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, n_threads: int):
        self.n_threads = n_threads  # the worker's threads: Numba's kernels use no more
        self.X: np.ndarray | None = X
        self.y = y
        self.w = w
        self.offset = 0
        self.tree: PartTree | None = None
        self.score: np.ndarray | None = None
        self.channels: tuple[np.ndarray, ...] = ()
        self.loss = None
        self.booster = None


def _part(key: str) -> _Part:
    try:
        part = _PARTS[key]
    except KeyError:
        raise PartLost(f"the events of part {key!r} are not on this worker (was it restarted?)") from None
    import numba  # every caller runs kernels next; Numba is loaded by then

    numba.set_num_threads(min(part.n_threads, numba.config.NUMBA_NUM_THREADS))
    return part


# The checks of the events, in the order the in-memory fit makes them on the whole sample:
# a part that fails one returns it (``load``'s "refused") and the client raises the first,
# with its event numbers and counts made the whole sample's (``_estimators``).
CHECK_X, CHECK_TARGETS, CHECK_TARGET_RANGE, CHECK_LENGTH, CHECK_WEIGHTS, CHECK_MAGNITUDES = range(6)


class _Refusal(Exception):
    """A check of a part's events failed: its stage (CHECK_*), the error with the part's own
    event numbers, and what the client adds up over the parts (a count or a maximum)."""

    def __init__(self, stage: int, error: Exception, number: float = 0.0):
        super().__init__(str(error))
        self.stage, self.error, self.number = stage, error, float(number)


def _checked(stage: int, check: Any, *args: Any, number: Any = None) -> Any:
    """``check(*args)``; its ValueError or TypeError as a :class:`_Refusal` of ``stage``."""
    try:
        return check(*args)
    except (ValueError, TypeError) as err:
        raise _Refusal(stage, err, 0.0 if number is None else number()) from None


def _checked_events(key: str, X_blocks: list[np.ndarray], y_blocks: list[np.ndarray],
                    w_blocks: list[np.ndarray] | None, signal: Any):
    """The part's float32 features, labels or targets and float64 given weights, checked
    as memory checks the whole sample's (a :class:`_Refusal` where one check fails)."""
    X = np.concatenate(X_blocks) if len(X_blocks) != 1 else X_blocks[0]
    if X.shape[0] == 0:  # check_X refuses an empty X, which only the whole sample must not be
        X = np.ascontiguousarray(X, dtype=np.float32)
    else:
        X = _checked(CHECK_X, check_X, X)[0]
    y_raw = np.concatenate(y_blocks) if len(y_blocks) != 1 else y_blocks[0]
    if signal is not None:  # as in memory: int8 0/1 labels (BDTClassifier._encode_y)
        y = np.asarray(y_raw == signal).astype(np.int8)
    else:  # float64 targets: NaN refused before a magnitude, over the whole sample
        y = y_raw.astype(np.float64)
        _checked(CHECK_TARGETS, check_targets, np.where(np.isfinite(y), 0.0, y))
        _checked(CHECK_TARGET_RANGE, check_targets, y,
                 number=lambda: np.max(np.abs(y)))
    if y_raw.shape != (X.shape[0],):
        raise _Refusal(CHECK_LENGTH, ValueError(f"X has {X.shape[0]} events but y has "
                                                f"{y_raw.size} (part {key})"))
    w_raw = None if w_blocks is None else np.concatenate(w_blocks)
    w = _checked(CHECK_WEIGHTS, check_weights, w_raw, X.shape[0])
    size = np.abs(w)
    _checked(CHECK_MAGNITUDES, check_magnitudes, w,  # the given weights, before the policy
             number=lambda: np.count_nonzero((size > MAX_MAGNITUDE)
                                             | ((size < MIN_MAGNITUDE) & (size > 0))))
    return X, y, w


def load(key: str, X_blocks: list[np.ndarray], y_blocks: list[np.ndarray],
         w_blocks: list[np.ndarray] | None, signal: Any, policy: str,
         n_threads: int = 1) -> dict[str, Any]:
    """Keep the part's events: float32 features, labels (classifier: int8 1 for ``signal``,
    else 0; regressor, ``signal`` None: the float64 targets), float64 weights, after the
    ``negative_weights`` policy where it works event by event ("abs", "ignore"), as
    float32.

    A part of no event (its blocks emptied by cuts, or of no rows) is kept empty: it adds
    nothing to any sum, and the fit refuses only when every part is empty.

    Returns the part's event count (after the policy), its rows before it ("rows"),
    whether it held a negative weight, and "refused": None, or (stage, error, number) of
    the first check its events failed (nothing is kept then)."""
    rows = sum(int(np.shape(b)[0]) for b in X_blocks)
    try:
        X, y, w = _checked_events(key, X_blocks, y_blocks, w_blocks, signal)
    except _Refusal as refusal:
        return {"rows": rows, "refused": (refusal.stage, refusal.error, refusal.number)}
    negative = bool(np.any(w < 0))
    nonzero = bool(np.any(w != 0))
    if negative and policy == "abs":
        w = np.abs(w)
    elif negative and policy == "ignore":
        keep = w >= 0
        X, y, w = X[keep], y[keep], w[keep]
    w = w.astype(np.float32)  # per-event channels are float32, as in memory
    _PARTS[key] = _Part(X, y, w, max(1, int(n_threads)))
    return {"n": int(X.shape[0]), "rows": rows, "negative": negative, "refused": None,
            "nonzero": nonzero, "nan": bool(np.isnan(X).any()), "positive": bool(np.any(w > 0))}


def sketch(key: str, offset: int, capacity: int, seed: int) -> EdgeSketch:
    """An edge sketch of the part's events (ids: their indices in the whole sample)."""
    part = _part(key)
    result = EdgeSketch(part.X.shape[1], capacity, seed)
    result.update(part.X, part.w, offset + np.arange(part.X.shape[0], dtype=np.int64))
    return result


def bin_part(key: str, offset: int, edges: list[np.ndarray], booster: Any, max_depth: int,
             init_parts: bool) -> dict[str, Any]:
    """Bin the part's features with the global ``edges`` (the floats are dropped), keep
    the booster, and return the exact parts of the loss's initial sums and of sum |w|."""
    part = _part(key)
    part.offset = int(offset)
    mapper = BinMapper.from_edges(edges)
    ordered = QuantisedRows.from_features(part.X, mapper)
    part.X = None
    part.tree = PartTree(ordered, offset, max_depth)
    part.booster, part.loss = booster, booster.loss
    return {"init": part.loss.init_sum_parts(part.y, part.w) if init_parts else None,
            "abs_weight": exact_sum_parts(np.abs(part.w))}


def leaf_values(booster: Any, tree: Any, leaf_totals: np.ndarray, mean_abs_weight: float) -> np.ndarray:
    """A tree's node values from its leaves' (w g, w h, w) sums over every event: what the
    client puts in the forest and every part adds to its scores, computed alike."""
    return booster.leaf_values(tree, None, np.array([mean_abs_weight]), None,
                               node_sums(tree, leaf_totals))


def _add_tree(part: _Part, leaf_totals: np.ndarray, mean_abs_weight: float) -> None:
    """Add the grown tree's values (from the leaf sums of all the parts) to the part's
    scores: by each event's leaf where the part keeps them, else through its partition."""
    tree = part.tree.grown_tree()
    values = leaf_values(part.booster, tree, leaf_totals, mean_abs_weight)
    if part.tree.leaf_of is not None:
        add_by_leaf(part.tree.leaf_of, values[tree.is_leaf], part.score)
    else:
        update_scores(None, tree, values, part.score, through_partition=True)


def begin_tree(key: str, base_score: float | None, leaf_totals: np.ndarray | None,
               mean_abs_weight: float) -> dict[str, Any]:
    """Add the last tree's leaf values (from the leaf sums of all the parts) to the scores,
    or start them at ``base_score``, then fill this tree's channels; returns max |A|,
    max |B| and the loss's partial sums."""
    part = _part(key)
    if part.score is None:
        part.score = np.full(part.y.size, base_score, dtype=np.float64)
    if leaf_totals is not None:
        _add_tree(part, leaf_totals, mean_abs_weight)
    wg, wh, loss = part.loss.channels(part.y, part.score, part.w, part.w)
    a, b = part.booster.channels(wg, wh, part.w)
    part.channels = (wg, wh, part.w, a, b)
    total = float(np.sum(part.w, dtype=np.float64))
    return {"max_abs": Quantiser.max_abs(a, b), "loss": loss * total, "weight": total}


def root(key: str, used: np.ndarray, n_rows: int, seed: int,
         max_abs: tuple[float, float]) -> np.ndarray:
    """The root's raw histogram of the part's events (channels quantised as the whole's)."""
    part = _part(key)
    _, _, _, a, b = part.channels
    return part.tree.start(a, b, used, n_rows, seed, max_abs)


def level(key: str, plan: LevelPlan) -> np.ndarray | None:
    """Apply a level's splits to the part; its left children's raw histograms."""
    return _part(key).tree.apply(plan)


def leaf_sums(key: str, initial: np.ndarray | None, after: Any = None) -> np.ndarray:
    """(w g, w h, w) summed over each leaf's events of the part, continuing ``initial``
    (``after``: the result of the last level's step, so that it runs first)."""
    part = _part(key)
    wg, wh, w, _, _ = part.channels
    return part.tree.leaf_sums(initial, wg, wh, w)


def finish(key: str, leaf_totals: np.ndarray | None, mean_abs_weight: float) -> dict[str, float]:
    """Add the last tree's values; the loss's partial sums at the final scores."""
    part = _part(key)
    if leaf_totals is not None:
        _add_tree(part, leaf_totals, mean_abs_weight)
    total = float(np.sum(part.w, dtype=np.float64))
    return {"loss": part.loss.loss(part.y, part.w, part.score) * total, "weight": total}


def drop(prefix: str) -> int:
    """Forget every part of the fit ``prefix``; how many were held here."""
    keys = [k for k in _PARTS if k.startswith(prefix)]
    for k in keys:
        del _PARTS[k]
    return len(keys)


class PartActor:
    """A part's steps as a Dask actor: its calls go from the client straight to the worker,
    without the scheduler (2 ms a round trip against 15-20 ms for a task on a LocalCluster
    of this machine), for fits of few parts, which wait on round trips more than on bytes."""

    def __init__(self, key: str):
        self.key = key

    def call(self, step: str, *args: Any) -> Any:
        """``step(key, *args)``: one of this module's steps on the part."""
        if step not in _STEPS:
            raise ValueError(f"{step!r} is not a step of a part")
        return globals()[step](self.key, *args)


_STEPS = ("begin_tree", "root", "level", "leaf_sums", "finish")


def predict_block(block: np.ndarray, model: Any, method: str) -> np.ndarray:
    """One block's scores: ``method`` of an in-memory estimator. An empty block (a cut
    emptied its partition), which the estimator refuses, gives no rows of what it gives one
    event of the block's width: the shape and dtype of every other block's result."""
    if block.ndim == 2 and block.shape[0] == 0:
        one_event = np.zeros((1, block.shape[1]), dtype=block.dtype)
        return getattr(model, method)(one_event)[:0]
    return getattr(model, method)(block)
