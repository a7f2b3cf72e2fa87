"""What runs on a Dask worker: one part of a fit's events and the steps on it.

A part is a contiguous run of the events (its ``offset`` is its first training event's
index in the training sample): its features until they are binned, then its codes (a
:class:`~hepbdt.engine.grower.QuantisedRows` for gradient and newton boosting, feature-major
codes for the AdaBoost family's exact histograms), labels, weights (float32, or float64 for
the AdaBoost family) and scores (K rows: one a class), or the AdaBoost family's boost
factors and ensemble, kept in this module's registry under the fit's token for the whole
fit. A fit that holds out validation events (``n_trees="auto"``, early stopping) keeps the
part's share of them beside its training events: their codes, labels, weights and the
scores the trees give them, and sends the pieces of the validation loss after each round.
Every function here is a task the driver pins to the part's worker; each does one step of
:mod:`hepbdt.engine.data_parallel` or of a boosting loop (channels, a round's tree weights
from the client's draw, leaf sums, the score update; AdaBoost's tree output, reweighting
and the pieces of numpy's sums) on the part's events only. Nothing here imports Dask.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._util import (
    FLOAT32_STEPS,
    check_weights,
    check_X,
    float32_steps,
    hash_fraction,
    uniform_draws_below,
)
from ..boosting._loop import _OneScore, node_sums, update_scores
from ..engine._types import CHANNEL_DTYPE
from ..engine.binning import BinMapper
from ..engine.data_parallel import (
    ExactPartTree,
    LeafPlan,
    LeafResult,
    LevelPlan,
    PartTree,
    chunk_pieces,
    pairwise_pieces,
)
from ..engine.grower import QuantisedRows, add_by_leaf
from ..engine.histogram import Quantiser
from ..estimators import MAX_MAGNITUDE, MIN_MAGNITUDE, check_magnitudes, check_targets

__all__ = ["PartActor", "PartLost", "load", "held_out", "split", "training_weights",
           "tree_weights", "drawn_counts", "vector_sums", "weights", "edge_events", "edge_rows", "bin_part",
           "class_sums", "begin_tree", "root", "level", "leaf_splits", "bin_exact", "ada_tree",
           "exact_histograms", "exact_level", "exact_leaf_sums", "ada_evaluate", "ada_sums",
           "ada_add", "leaf_sums", "leaf_values", "finish", "drop", "predict_block"]

_PARTS: dict[str, _Part] = {}  # (token, part index) -> the part, in this worker process


class PartLost(RuntimeError):
    """A part's state is not on the worker the driver asked (the worker was restarted)."""


class _Part:
    def __init__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray, n_threads: int):
        self.n_threads = n_threads  # the worker's threads: Numba's kernels use no more
        self.X: np.ndarray | None = X
        self.y = y
        self.w = w
        self.w_edges: np.ndarray | None = None  # float64 training weights, until the edges
        self.offset = 0
        self.event: np.ndarray | None = None  # event numbers (int64), until ``split``
        self.valid: _Valid | None = None  # the held-out events of this part
        self.w_tree: np.ndarray | None = None  # the round's tree weights (float32)
        self.tree: PartTree | None = None
        self.score: np.ndarray | None = None  # (K, n): one row a class (K = 1: one score)
        self.channels: tuple[np.ndarray, ...] = ()  # the current tree's (wg, wh, w, A, B)
        self.round_channels: tuple[np.ndarray, np.ndarray, float] | None = None
        self.klass = 0  # the class of the tree being grown (its row of ``score``)
        self.loss = None  # the loss of (K, n) scores (a one-score loss wrapped)
        self.booster = None


class _Valid:
    """A part's held-out events: features until binned, then codes (m, n) uint8, labels,
    float64 weights (the given ones, class-normalised over the whole sample, then with a
    class ratio over the held-out events themselves, as memory's ``_held_out_weights``),
    their (K, n) scores summed tree by tree from zero, and how their loss terms are cut for
    the client (``ChunkedSum`` or ``PairwiseSum`` requests)."""

    def __init__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray):
        self.X: np.ndarray | None = X
        self.codes: np.ndarray | None = None
        self.y, self.w = y, w
        self.summed: np.ndarray | None = None
        self.base: np.ndarray | None = None
        self.request: Any = None


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
(CHECK_X, CHECK_TARGETS, CHECK_TARGET_RANGE, CHECK_LENGTH, CHECK_WEIGHTS, CHECK_EVENTS,
 CHECK_MAGNITUDES) = range(7)


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
                    w_blocks: list[np.ndarray] | None, classes: np.ndarray | None,
                    given_magnitudes: bool = True, event: np.ndarray | None = None):
    """The part's float32 features, labels or targets and float64 given weights, checked
    as memory checks the whole sample's (a :class:`_Refusal` where one check fails), and
    the extent of float64 features (``float64_extent``; None for others)."""
    X = np.concatenate(X_blocks) if len(X_blocks) != 1 else X_blocks[0]
    extent = None
    if X.shape[0] == 0:  # check_X refuses an empty X, which only the whole sample must not be
        X = np.ascontiguousarray(X, dtype=np.float32)
    else:
        source = X
        X = _checked(CHECK_X, check_X, X)[0]
        extent = float64_extent(source, X)
    y_raw = np.concatenate(y_blocks) if len(y_blocks) != 1 else y_blocks[0]
    if classes is not None:  # as in memory: int8 labels (BDTClassifier._encode_y)
        y = (np.asarray(y_raw == classes[1]).astype(np.int8) if classes.size == 2
             else np.searchsorted(classes, y_raw).astype(np.int8))
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
    if event is not None and event.shape != (X.shape[0],):
        raise _Refusal(CHECK_EVENTS, ValueError(f"event: expected {X.shape[0]} integer event "
                                                f"numbers, one per event (part {key}); got "
                                                f"{event.size}"))
    if given_magnitudes:
        _checked(CHECK_MAGNITUDES, check_magnitudes, w,  # the given weights, before the policy
                 number=lambda: _out_of_range(w))
    return X, y, w, extent


def float64_extent(source: Any, X: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """A part's float64 features (``source``, (n, m), and ``X``, their float32 values): each
    column's lowest and highest value (NaN skipped) and whether float32 changed one, the
    client's to merge for memory's float32 warning of the whole sample
    (``_util.warn_float32_resolution``); None when the features were not float64."""
    source = np.asarray(source)
    if source.dtype != np.float64 or source.ndim != 2:
        return None
    low, high = np.fmin.reduce(source, axis=0), np.fmax.reduce(source, axis=0)
    # Compared column by column (no (n, m) temporaries), and only where the part's own range
    # is within twice the warning's steps: a range the whole sample holds in few steps has
    # values of one magnitude, so each part's holds as few. Elsewhere "changed" is moot.
    changed = np.ones(source.shape[1], dtype=bool)
    for col in np.flatnonzero(~(float32_steps(low, high) >= 2 * FLOAT32_STEPS)):
        changed[col] = np.any(source[:, col] != X[:, col])  # NaN counts, as in memory
    return low, high, changed


def _out_of_range(w: np.ndarray) -> int:
    """How many weights ``check_magnitudes`` refuses."""
    size = np.abs(w)
    return int(np.count_nonzero((size > MAX_MAGNITUDE) | ((size < MIN_MAGNITUDE) & (size > 0))))


def load(key: str, X_blocks: list[np.ndarray], y_blocks: list[np.ndarray],
         w_blocks: list[np.ndarray] | None, classes: np.ndarray | None,
         n_threads: int = 1, given_magnitudes: bool = True,
         e_blocks: list[np.ndarray] | None = None) -> dict[str, Any]:
    """Keep the part's events: float32 features, labels (classifier, ``classes`` its
    ``classes_``: int8, 1 for classes[1] and else 0 with two classes, the class index with
    more; regressor, ``classes`` None: the float64 targets), float64 weights as given (the
    hold-out and the ``negative_weights`` policy act in ``split``) and the event numbers
    (``e_blocks``, int64; None: none given). ``given_magnitudes``: refuse given weights out
    of float32's range (False: the class normalisation sets their scale; ``weights`` checks).

    A part of no event (its blocks emptied by cuts, or of no rows) is kept empty: it adds
    nothing to any sum, and the fit refuses only when every part is empty.

    Returns its rows ("rows", and "n" once checked), whether a weight is not zero, whether
    one is negative, its signal count, the extent of float64 features ("extent":
    ``float64_extent``), and "refused": None, or (stage, error, number) of the first check
    its events failed (nothing is kept then)."""
    rows = sum(int(np.shape(b)[0]) for b in X_blocks)
    event = None if e_blocks is None else np.concatenate(e_blocks).astype(np.int64)
    try:
        X, y, w, extent = _checked_events(key, X_blocks, y_blocks, w_blocks, classes,
                                          given_magnitudes, event)
    except _Refusal as refusal:
        return {"rows": rows, "refused": (refusal.stage, refusal.error, refusal.number)}
    part = _PARTS[key] = _Part(X, y, w, max(1, int(n_threads)))
    part.event = event
    return {"rows": rows, "refused": None, "extent": extent,
            "nonzero": bool(np.any(w != 0)), "n": int(y.size),
            "n_nonzero": int(np.count_nonzero(w)),
            "negative": bool(np.any(w < 0)), "signal": int(np.count_nonzero(y == 1))}


def training_weights(key: str) -> np.ndarray:
    """The part's training weights (float32): the client draws each round's events from them."""
    return _part(key).w


def held_out(n: int, spec: dict[str, Any], event: np.ndarray | None) -> np.ndarray:
    """Which of a part's ``n`` events are held out, as ``_BDTBase._held_out`` draws them over
    the whole sample: ``spec["state"]``, the fit generator's state before the draw, advanced
    by the part's first row (``rng.random`` takes one 64-bit draw a value), or with event
    numbers their hashed fraction; below ``spec["fraction"]``."""
    if spec.get("state") is None:
        return hash_fraction(event) < spec["fraction"]
    return uniform_draws_below(spec["state"], n, spec["fraction"], skip=spec["row"])


def split(key: str, holdout: dict[str, Any] | None, valid_factors: tuple[float, float] | None,
          policy: str, n_classes: int = 0, act: bool = True) -> dict[str, Any]:
    """Hold out the part's validation events (``holdout``: ``held_out``'s spec, or None),
    their weights scaled by ``valid_factors`` (the whole sample's class normalisation, signal's
    then background's; None: as given), then apply the ``negative_weights`` policy where it
    works event by event ("abs", "ignore") to the training events, as memory does after its
    hold-out. Returns the training events' count, whether one had a negative weight
    (before the policy), a positive one, a NaN feature, the signal count, the held-out
    events' count and signal count, ("refused") the refusal of a normalised weight out of
    float32's range, memory's check of every event before its hold-out (in the words for a
    sample whose given weights all lie within range where this part's do; "refused_plain"
    in the others, "given_in_range" whether they do), and with a hold-out
    and ``n_classes`` each class's given weights in the training and held-out events
    ("class_train", "class_valid"). With ``act`` False the policy waits for
    ``apply_policy``, and the counts are those before it."""
    part = _part(key)
    X, y, w = part.X, part.y, part.w
    n_valid = valid_signal = 0
    refused = None
    class_sums = {}
    refused_plain, given_in_range = None, True
    if valid_factors is not None:  # memory checks the whole sample's normalised weights
        scaled = _scaled(y, w, valid_factors)
        refused, refused_plain, given_in_range = _given_refusals(w, scaled)
    if holdout is not None:
        held = held_out(y.size, holdout, part.event)
        wv = w[held]
        if valid_factors is not None:
            wv = _scaled(y[held], wv, valid_factors)
        part.valid = _Valid(X[held], y[held], wv)
        n_valid, valid_signal = int(held.sum()), int(np.count_nonzero(part.valid.y == 1))
        if n_classes:
            def sums(mask):
                return np.bincount(y[mask].astype(np.int64), w[mask], n_classes).tolist()

            class_sums = {"class_train": sums(~held), "class_valid": sums(held)}
        X, y, w = X[~held], y[~held], w[~held]
    part.event = None
    part.X, part.y, part.w = X, y, w
    counts = apply_policy(key, policy if act else None)
    return {**counts, "n_valid": n_valid, "valid_signal": valid_signal,
            "valid_nonzero": 0 if holdout is None else int(np.count_nonzero(part.valid.w)),
            "refused": refused, "refused_plain": refused_plain,
            "given_in_range": given_in_range, **class_sums}


def apply_policy(key: str, policy: str | None) -> dict[str, Any]:
    """The ``negative_weights`` policy that works event by event ("abs", "ignore"; None or
    any other: none) on the part's training events. Returns their count, how many have a
    weight other than 0, whether one had a negative weight (before the policy), a positive
    one, a NaN feature, and the signal count."""
    part = _part(key)
    X, y, w = part.X, part.y, part.w
    negative = bool(np.any(w < 0))
    if negative and policy == "abs":
        w = np.abs(w)
    elif negative and policy == "ignore":
        keep = w >= 0
        X, y, w = X[keep], y[keep], w[keep]
    part.X, part.y, part.w = X, y, w
    return {"n": int(y.size), "n_nonzero": int(np.count_nonzero(w)),
            "negative": negative, "positive": bool(np.any(w > 0)),
            "nan": bool(np.isnan(X).any()), "signal": int(np.count_nonzero(y == 1))}


def _given_refusals(given: np.ndarray, scaled: np.ndarray) -> tuple[Any, Any, bool]:
    """Memory's ``_given_weights`` refusal of ``scaled``, the class-normalised ``given``
    weights: in the words for a sample whose given weights all lie within range where these
    do, in the words for the others, and whether these do."""
    given_in_range = _out_of_range(given) == 0
    refused = _magnitude_refusal(scaled, normalised=given_in_range)
    plain = _magnitude_refusal(scaled, normalised=False) if given_in_range else refused
    return refused, plain, given_in_range


def _magnitude_refusal(scaled: np.ndarray, normalised: bool) -> tuple | None:
    """(CHECK_MAGNITUDES, memory's error, count) for normalised weights out of float32's
    range, in the words memory uses when every given weight of the sample lies within
    (``normalised``: the normalisation put them out) or not; None when all lie within."""
    try:
        check_magnitudes(scaled, normalised=normalised)
    except ValueError as err:
        return CHECK_MAGNITUDES, err, _out_of_range(scaled)
    return None


def vector_sums(key: str, requests: dict[str, list]) -> dict[str, Any]:
    """numpy's pieces (``pairwise_pieces``) of the sums asked for (name -> requests): the
    signal's and the background's weights ("signal", "background": y 1 and 0), for the
    class normalisation's sums; the training weights and their magnitudes ("weight",
    "abs_weight": float32 once cast, summed in double as numpy casts them); the held-out
    events' weights ("valid_weight"), and by class, with their magnitudes, for their own
    class normalisation ("valid_signal", "valid_background", and "..._abs")."""
    part = _part(key)
    def valid(signal: bool, magnitude: bool = False) -> np.ndarray:
        w = part.valid.w[(part.valid.y == 1) == signal]
        return np.abs(w) if magnitude else w

    vectors = {"signal": lambda: part.w[part.y == 1], "background": lambda: part.w[part.y != 1],
               "weight": lambda: part.w, "abs_weight": lambda: np.abs(part.w),
               "valid_weight": lambda: part.valid.w,
               "valid_signal": lambda: valid(True), "valid_background": lambda: valid(False),
               "valid_signal_abs": lambda: valid(True, True),
               "valid_background_abs": lambda: valid(False, True)}
    return {"pieces": {name: pairwise_pieces(vectors[name](), asked)
                       for name, asked in requests.items()}}


def scale_valid(key: str, factors: tuple[float, float]) -> None:
    """The held-out events' weights scaled by the class normalisation's ``factors`` (signal's,
    background's) of the held-out events themselves, as memory's ``_held_out_weights``."""
    part = _part(key)
    part.valid.w = _scaled(part.valid.y, part.valid.w, factors)


def weights(key: str, factors: tuple[float, float] | None, dtype: str,
            policy: str | None) -> dict[str, Any]:
    """The training weights: with ``factors`` (the class normalisation's, signal's then
    background's) scaled as ``_normalise_classes`` scales them and checked against float32's
    range (``policy``: the negative-weight policy that acted, for memory's message; None:
    memory's ``_given_weights`` of the training events), then cast to ``dtype`` (float32
    for gradient and newton boosting, as in memory). Returns "refused": None, or (the
    error, how many weights it counts), in the words for a sample whose given weights all
    lie within range where this part's do ("refused_plain" in the others, "given_in_range"
    whether they do), as ``split``."""
    part = _part(key)
    w = part.w
    checked = {"refused": None, "refused_plain": None, "given_in_range": True}
    if factors is not None:
        w = _scaled(part.y, w, factors)
        if policy is None:  # memory's _given_weights of the training events
            checked = _training_refusals(part.w, w)
        else:
            try:
                check_magnitudes(w, policy, rescalable=False)
            except ValueError as err:
                checked["refused"] = checked["refused_plain"] = (err, _out_of_range(w))
    if checked["refused"] is None:
        part.w = w.astype(dtype)
        part.w_edges = w  # the edges see float64 weights, as memory's
    return checked


def given_check(key: str, factors: tuple[float, float]) -> dict[str, Any]:
    """Memory's ``_given_weights`` of the training events before a policy that acts: the
    weights scaled by the training events' class ``factors`` (signal's, background's; (1, 1)
    where a class's sum is not positive, as memory then checks them as given) and checked
    against float32's range, nothing changed. Returns ``weights``'s "refused",
    "refused_plain" and "given_in_range"."""
    part = _part(key)
    return _training_refusals(part.w, _scaled(part.y, part.w, factors))


def _scaled(y: np.ndarray, w: np.ndarray, factors: tuple[float, float]) -> np.ndarray:
    """Each weight times its class's factor (signal's, background's)."""
    return np.where(y == 1, w * factors[0], w * factors[1])


def _training_refusals(given: np.ndarray, scaled: np.ndarray) -> dict[str, Any]:
    """``_given_refusals`` of the training events, each refusal as (error, count)."""
    refused, refused_plain, given_in_range = _given_refusals(given, scaled)
    return {"refused": None if refused is None else refused[1:],
            "refused_plain": None if refused_plain is None else refused_plain[1:],
            "given_in_range": given_in_range}


def _edge_weights(part: _Part) -> np.ndarray:
    """The weights memory's edges see: the float64 training weights (``weights``'s)."""
    return part.w if part.w_edges is None else part.w_edges


def edge_events(key: str) -> tuple[int, int]:
    """(events of non-zero weight, events) of the part: the events the bin edges can see."""
    w = _edge_weights(_part(key))
    return int(np.count_nonzero(w)), int(w.size)


def edge_rows(key: str, picks: np.ndarray | None, every: bool
              ) -> tuple[np.ndarray, np.ndarray]:
    """The features and weights of the part's events that the bin edges see, in row order:
    those of non-zero weight (every event when ``every``: none in the sample has one), at
    the positions ``picks`` among them when given (memory's subsample of the whole)."""
    part = _part(key)
    w = _edge_weights(part)
    rows = np.arange(w.size) if every else np.flatnonzero(w)
    if picks is not None:
        rows = rows[picks]
    part.w_edges = None
    return part.X[rows], w[rows]


def bin_part(key: str, offset: int, edges: list[np.ndarray], booster: Any,
             max_depth: int | None, init_parts: bool, requests: dict[str, list],
             valid_request: Any = None, max_leaves: int | None = None) -> dict[str, Any]:
    """Bin the part's features with the global ``edges`` (the floats are dropped), and its
    held-out events' (``valid_request``: how their loss terms are cut for the client, the
    ``ChunkedSum`` or ``PairwiseSum`` requests); keep the booster and the trees' shape
    (``max_leaves`` None: depth-wise). Returns the exact parts of the loss's initial sums
    and the pieces of the sums asked for (``vector_sums``)."""
    part = _part(key)
    part.offset = int(offset)
    mapper = BinMapper.from_edges(edges)
    ordered = QuantisedRows.from_features(part.X, mapper)
    part.X = None
    part.tree = PartTree(ordered, offset, max_depth, max_leaves)
    part.booster = booster
    one_score = getattr(booster.loss, "n_classes", 1) == 1
    part.loss = _OneScore(booster.loss) if one_score else booster.loss
    if part.valid is not None:
        valid = part.valid
        valid.codes, valid.X, valid.request = mapper.transform(valid.X), None, valid_request
        valid.summed = np.zeros((getattr(booster.loss, "n_classes", 1), valid.y.size))
    return {"init": booster.loss.init_sum_parts(part.y, part.w) if init_parts else None,
            "pieces": vector_sums(key, requests)["pieces"]}


def tree_weights(w: np.ndarray, draw: tuple | None) -> np.ndarray:
    """The weights (float32) of the events of a round's tree, from the part's share of
    ``draw_rows``'s draw over the whole sample, as it computes them (``w``: the part's
    float32 training weights, or the AdaBoost family's float64 boosted ones): None, every
    event (``w`` itself); ("uniform", packed bits of the drawn events); ("poisson",
    counts); ("weighted", counts, sum |w| / the counts' sum)."""
    if draw is None:
        return w
    if draw[0] == "uniform":  # memory's zeros with the drawn events' weights
        drawn = np.unpackbits(draw[1], count=w.size).view(np.bool_)
        return np.where(drawn, w, CHANNEL_DTYPE(0.0)).astype(CHANNEL_DTYPE, copy=False)
    counts = draw[1].astype(np.int64)  # memory's int64 counts: the products are float64
    if draw[0] == "poisson":
        return (w * counts).astype(CHANNEL_DTYPE)
    return (counts * np.sign(w) * draw[2]).astype(CHANNEL_DTYPE)


def class_sums(key: str, initial: np.ndarray, magnitude: bool = False) -> np.ndarray:
    """Each class's sum of weights (of |weights| with ``magnitude``), continuing ``initial``
    (the parts before this one) event by event, as ``np.bincount`` adds the whole sample's
    in memory; with ``initial`` of shape (3, K), the weights', |weights|' and events' sums
    at once."""
    part = _part(key)
    sums = np.array(initial, dtype=np.float64)
    w = part.w.astype(np.float64)
    y = part.y.astype(np.int64)
    if sums.ndim == 2:
        for row, values in zip(sums, (w, np.abs(w), np.ones_like(w)), strict=True):
            np.add.at(row, y, values)
    else:
        np.add.at(sums, y, np.abs(w) if magnitude else w)
    return sums


def leaf_values(booster: Any, tree: Any, leaf_totals: np.ndarray, mean_abs_weight: float) -> np.ndarray:
    """A tree's node values from its leaves' (w g, w h, w, |w| h) sums over every event: what the
    client puts in the forest and every part adds to its scores, computed alike."""
    return booster.leaf_values(tree, None, np.array([mean_abs_weight]), None,
                               node_sums(tree, leaf_totals))


def _add_tree(part: _Part, leaf_totals: np.ndarray, mean_abs_weight: float) -> None:
    """Add the grown tree's values (from the leaf sums of all the parts) to the part's
    scores: by each event's leaf where the part keeps them, else through its partition;
    and to its held-out events' scores, as memory's ``_Watch`` adds them."""
    tree = part.tree.grown_tree()
    values = leaf_values(part.booster, tree, leaf_totals, mean_abs_weight)
    score = part.score[part.klass]
    if part.tree.leaf_of is not None:
        add_by_leaf(part.tree.leaf_of, values[tree.is_leaf], score)
    else:
        update_scores(None, tree, values, score, through_partition=True)
    if part.valid is not None:
        update_scores(part.valid.codes, tree, values, part.valid.summed[part.klass])


def _valid_pieces(part: _Part) -> Any:
    """The pieces of the held-out events' loss at their scores (a round just ended), cut as
    the client asked (``ChunkedSum``'s for a loss summed in chunks, else ``PairwiseSum``'s);
    None without held-out events."""
    valid = part.valid
    if valid is None:
        return None
    scores = valid.summed + valid.base[:, None]
    loss = part.booster.loss
    terms = loss.loss_terms(valid.y, valid.w, scores if scores.shape[0] > 1 else scores[0])
    if loss.loss_chunk is not None:
        return chunk_pieces(terms, valid.request)
    return pairwise_pieces(terms, valid.request)


def begin_tree(key: str, base_scores: np.ndarray | None, leaf_totals: np.ndarray | None,
               mean_abs_weight: float, klass: int = 0, draw: tuple | None = None) -> dict[str, Any]:
    """Add the last tree's leaf values (from the leaf sums of all the parts) to its class's
    scores, or start the (K, n) scores at ``base_scores`` (K,), then fill the channels of
    the tree of class ``klass``: at class 0 (a new round) every class's from the scores of
    the round before, with the round's tree weights (``draw``, see ``tree_weights``), as
    ``run_boosting`` does. Returns max |A|, max |B|, the loss's partial sums (at the
    round's start) and, when a round just ended, the held-out events' loss pieces."""
    part = _part(key)
    if part.score is None:
        base = np.asarray(base_scores, dtype=np.float64)
        part.score = np.repeat(base[:, None], part.y.size, axis=1)
        if part.valid is not None:
            part.valid.base = base
    if leaf_totals is not None:
        _add_tree(part, leaf_totals, mean_abs_weight)
    ended = leaf_totals is not None and int(klass) == 0
    part.klass = int(klass)
    if part.klass == 0 or part.round_channels is None:
        part.w_tree = tree_weights(part.w, draw)
        part.round_channels = part.loss.channels(part.y, part.score, part.w_tree, part.w)
    wg, wh, loss = part.round_channels
    a, b = part.booster.channels(wg[part.klass], wh[part.klass], part.w_tree)
    part.channels = (wg[part.klass], wh[part.klass], part.w_tree, a, b)
    total = float(np.sum(part.w, dtype=np.float64))
    return {"max_abs": Quantiser.max_abs(a, b), "loss": _loss_sum(part, loss, total),
            "weight": total, "valid": _valid_pieces(part) if ended else None}


def _loss_sum(part: _Part, mean: float, total: float) -> float:
    """The part's summed loss terms from its mean loss: mean x total, or where its weights
    sum to 0 (its mean is then 0 by convention) the terms' sum itself, which the whole's
    mean still counts."""
    if total != 0:
        return mean * total
    one = getattr(part.loss, "loss_of_one", None)
    terms = (one.loss_terms(part.y, part.w, part.score[0]) if one is not None
             else part.loss.loss_terms(part.y, part.w, part.score))
    return float(np.sum(terms))


def root(key: str, used: np.ndarray, n_rows: int, seed: int,
         max_abs: tuple[float, float]) -> np.ndarray:
    """The root's raw histogram of the part's events (channels quantised as the whole's)."""
    part = _part(key)
    _, _, _, a, b = part.channels
    return part.tree.start(a, b, used, n_rows, seed, max_abs)


def level(key: str, plan: LevelPlan) -> np.ndarray | None:
    """Apply a level's splits to the part; its left children's raw histograms."""
    return _part(key).tree.apply(plan)


def leaf_splits(key: str, plan: LeafPlan) -> LeafResult:
    """Split a leaf-wise plan's leaves on the part; its events' counts and its histograms
    of the last split's children (``PartTree.split_leaves``)."""
    return _part(key).tree.split_leaves(plan)


def leaf_sums(key: str, initial: np.ndarray | None, after: Any = None) -> np.ndarray:
    """(w g, w h, w, |w| h) summed over each leaf's events of the part, continuing
    ``initial`` (``after``: the result of the last level's step, so that it runs first).
    The fourth row finds the leaves whose weights cancel (``boosting._loop.cancelled``):
    memory sums it only when some weight is negative, where it differs from the second."""
    part = _part(key)
    wg, wh, w, _, _ = part.channels
    net = part.tree.leaf_sums(None if initial is None else initial[:3], wg, wh, w)
    absolute = part.tree.leaf_sums(None if initial is None else initial[3:], np.abs(wh))
    return np.vstack([net, absolute])


def finish(key: str, leaf_totals: np.ndarray | None, mean_abs_weight: float) -> dict[str, Any]:
    """Add the last tree's values; the loss's partial sums at the final scores and the
    held-out events' loss pieces."""
    part = _part(key)
    if leaf_totals is not None:
        _add_tree(part, leaf_totals, mean_abs_weight)
    total = float(np.sum(part.w, dtype=np.float64))
    part.round_channels = None
    return {"loss": _loss_sum(part, part.loss.loss(part.y, part.w, part.score), total),
            "weight": total, "valid": _valid_pieces(part)}


class _AdaBoost:
    """A part's state in the AdaBoost family (``run_adaboost``, ``run_samme``): its weights
    w0 (float64), boost factors, the ensemble's scores (two classes) or votes (SAMME), the
    last tree's output on its events, and the vectors whose numpy sums the client asks for."""

    def __init__(self, y: np.ndarray, w: np.ndarray, spec: dict[str, Any]):
        self.variant, self.n_classes = spec["variant"], int(spec["n_classes"])
        self.threshold = float(spec.get("threshold", 0.0))
        self.inverse_boost = bool(spec.get("inverse_boost", False))
        self.y = y
        self.is_signal = y == 1
        self.y_pm = np.where(self.is_signal, 1, -1).astype(np.int8)
        self.w0 = np.asarray(w, dtype=np.float64)
        self.boost = np.ones(y.size)
        self.samme = self.n_classes > 2
        self.ensemble = np.zeros((self.n_classes, y.size) if self.samme else y.size)
        self.w_eff = self.w_tree = self.h = self.wrong = None
        self.counts: np.ndarray | None = None  # the tree's drawn events' multiplicity (None: 1)
        self.vectors: dict[str, np.ndarray] = {"w0": self.w0}

    def channels(self) -> np.ndarray:
        """The tree's channels (C, n) float32: signal and background weights (SAMME: each
        class's), then the events' multiplicity (one each without a draw; 0 for an event of
        weight 0)."""
        n = self.y.size
        if self.samme:
            out = np.zeros((self.n_classes + 1, n), dtype=np.float32)
            out[self.y, np.arange(n)] = self.w_tree
        else:
            out = np.empty((3, n), dtype=np.float32)
            out[0] = np.where(self.is_signal, self.w_tree, 0)
            out[1] = np.where(self.is_signal, 0, self.w_tree)
        out[-1] = 1.0 if self.counts is None else self.counts
        out[-1][self.w_eff == 0] = 0.0  # an event of weight 0 is none, as in memory
        return out

    def pieces(self, requests: dict[str, list]) -> dict[str, list]:
        """The pieces of numpy's sums asked for (vector name -> ``PairwiseSum.requests``)."""
        return {name: pairwise_pieces(self.vectors[name], asked) for name, asked in requests.items()}


def bin_exact(key: str, offset: int, edges: list[np.ndarray], max_depth: int,
              spec: dict[str, Any]) -> None:
    """Bin the part's features feature-major (the floats are dropped) for the AdaBoost
    family's exact histograms, and start its state (``spec``: variant, classes, ...)."""
    part = _part(key)
    part.offset = int(offset)
    part.tree = ExactPartTree(BinMapper.from_edges(edges).transform(part.X), max_depth)
    part.X = None
    part.booster = _AdaBoost(part.y, part.w, spec)


def drawn_counts(n: int, draw: tuple) -> np.ndarray:
    """Each of a part's ``n`` events' multiplicity in a tree's draw (``tree_weights``'s
    share of it), int64."""
    if draw[0] == "uniform":
        return np.unpackbits(draw[1], count=n).astype(np.int64)
    return draw[1].astype(np.int64)


def ada_tree(key: str, scale: float | None, requests: dict[str, list],
             draw: tuple | None = None) -> dict[str, Any]:
    """Renormalise the boost factors (``scale``: the initial total over the reweighted one),
    then start a tree on the boosted weights: every event, or the part's share of the
    tree's draw (``draw``, see ``tree_weights``: the drawn events, their weights and
    multiplicity, as ``grow_weighted_tree`` takes them); the requested sums' pieces and
    whether a tree weight is negative."""
    part = _part(key)
    state = part.booster
    if scale is not None:
        state.boost *= scale
    state.w_eff = state.w0 * state.boost
    state.w_tree = tree_weights(state.w_eff, draw).astype(np.float32, copy=False)
    state.counts = None if draw is None else drawn_counts(state.y.size, draw)
    rows = None if state.counts is None else np.flatnonzero(state.counts > 0)
    channels = state.channels()
    part.tree.start(channels, None, rows)
    state.vectors.update(w_eff=state.w_eff, w_tree=state.w_tree)
    return {"pieces": state.pieces(requests), "negative": bool(np.any(state.w_tree < 0)),
            "events": int(channels[-1].sum(dtype=np.float64))}


def exact_histograms(key: str, initial: np.ndarray | None, used: np.ndarray | None = None,
                     small_left: np.ndarray | None = None) -> np.ndarray:
    """The waiting nodes' exact histograms, continuing those of the parts before this one
    (``used``: the tree's features, at the root; ``small_left``: the smaller children)."""
    return _part(key).tree.histograms(initial, used, small_left)


def exact_level(key: str, plan: LevelPlan) -> tuple[np.ndarray, np.ndarray]:
    """Apply a level's splits to the part's events: each split's events left and right."""
    return _part(key).tree.apply(plan)


def exact_leaf_sums(key: str, initial: np.ndarray | None) -> np.ndarray:
    """Each leaf's |w| of signal and of background (real AdaBoost's purities with negative
    weights), continuing the sums of the parts before this one."""
    part = _part(key)
    state = part.booster
    absolute = np.abs(state.w_tree.astype(np.float64))
    return part.tree.leaf_sums(initial, np.where(state.is_signal, absolute, 0.0),
                               np.where(state.is_signal, 0.0, absolute))


def ada_evaluate(key: str, value: np.ndarray, requests: dict[str, list]) -> dict[str, Any]:
    """The tree's output on the part's events (``value``: its node values; SAMME: the class
    each leaf says) and which it gets wrong; their count and the requested sums' pieces."""
    part = _part(key)
    state = part.booster
    h = np.zeros(state.y.size)
    if state.counts is None:  # every event in the tree's partition
        update_scores(None, part.tree.grown_tree(), value, h, through_partition=True)
    else:  # the tree's output on every event, drawn or not, as memory's from the codes
        update_scores(part.tree.codes, part.tree.grown_tree(), value, h)
    if state.samme:
        state.h = h.astype(np.int64)
        state.wrong = state.h != state.y
    else:
        state.h = h
        state.wrong = (h > state.threshold) != state.is_signal
        if state.threshold > 0:  # purity leaves: r = sum w y (2h - 1) / sum w
            state.vectors["r"] = state.w_eff * state.y_pm * (2.0 * h - 1.0)
    state.vectors["err"] = state.w_eff[state.wrong]
    return {"count": int(np.count_nonzero(state.wrong)), "pieces": state.pieces(requests)}


def ada_sums(key: str, requests: dict[str, list]) -> dict[str, Any]:
    """The requested sums' pieces of the vectors the part keeps."""
    return {"pieces": _part(key).booster.pieces(requests)}


def ada_add(key: str, tree_weight: float, weight_sum: float, factor: tuple,
            requests: dict[str, list]) -> dict[str, Any]:
    """Add the tree to the ensemble (the events it then gets wrong: their count) and
    reweight the events by ``factor`` ("real": exp(-y h); "purity", alpha: exp(-alpha y
    (2h - 1)); "wrong", e: e on the wrong events; None: no reweighting), as
    ``_AdaBoostRun`` and ``_SammeRun`` do; whether every boost factor is finite."""
    state = _part(key).booster
    if state.samme:
        state.ensemble[state.h, np.arange(state.h.size)] += tree_weight
        ensemble_wrong = np.argmax(state.ensemble, axis=0) != state.y
    elif state.variant == "realadaboost":
        state.ensemble += state.h
        ensemble_wrong = (state.ensemble > state.threshold) != state.is_signal
    else:
        state.ensemble += tree_weight * state.h
        ensemble_wrong = (state.ensemble / weight_sum > state.threshold) != state.is_signal
    state.vectors["loss"] = state.w0[ensemble_wrong]
    if factor is not None:
        if factor[0] == "real":
            by = np.exp(-state.y_pm * state.h)
        elif factor[0] == "purity":
            by = np.exp(-factor[1] * state.y_pm * (2.0 * state.h - 1.0))
        else:
            by = np.where(state.wrong, factor[1], 1.0)
        if state.inverse_boost:
            by = np.where(state.w0 < 0, 1.0 / by, by)
        state.boost *= by
        state.vectors["new_total"] = state.w0 * state.boost
    return {"count": int(np.count_nonzero(ensemble_wrong)), "pieces": state.pieces(requests),
            "finite": bool(np.all(np.isfinite(state.boost)))}


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


_STEPS = ("class_sums", "begin_tree", "root", "level", "leaf_splits", "leaf_sums", "finish",
          "vector_sums", "training_weights", "weights", "ada_tree", "exact_histograms",
          "exact_level", "exact_leaf_sums", "ada_evaluate", "ada_sums", "ada_add")


def predict_block(block: np.ndarray, model: Any, method: str) -> np.ndarray:
    """One block's scores: ``method`` of an in-memory estimator. An empty block (a cut
    emptied its partition), which the estimator refuses, gives no rows of what it gives one
    event of the block's width: the shape and dtype of every other block's result."""
    if block.ndim == 2 and block.shape[0] == 0:
        one_event = np.zeros((1, block.shape[1]), dtype=block.dtype)
        return getattr(model, method)(one_event)[:0]
    return getattr(model, method)(block)
