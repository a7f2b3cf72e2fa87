"""Forest: all trees of a model in flat arrays, their validation, depths and text dump.

The same arrays feed prediction, the rankings, JSON and TMVA XML. ``to_dict``/``from_dict``
give the forest's part of a model file; the file formats themselves and ``load_model``
live in :mod:`hepbdt.persistence`. Nothing here knows about estimators or files.

Limits. Loading any model file (hepbdt JSON, XGBoost JSON, TMVA XML) of up to
``MAX_MODEL_BYTES`` (512 MiB) and ``MAX_NODES`` (50 million nodes) uses memory
proportional to its size and node count, whatever the depth of its trees (parsing at most
about 17 times the file's size, for a file of short strings; a file of many more JSON
arrays or XML tags than a model holds is refused before it is parsed,
``persistence.read_model_file``); larger files, more nodes, or more than ``MAX_FEATURES``
(1 million) features are refused with a :class:`ModelFormatError`. Prediction holds no
more than that either: the dense layout (complete binary trees, 2^depth leaf slots a tree)
is used only for depth <= 12 and at most
8 leaf slots per node of the forest (:func:`hepbdt.engine.predict.dense_fits`); other
forests are walked node by node. Every value of a file is checked for its type and range:
integers are JSON integers (not 1.5, not true), booleans JSON booleans, numbers JSON numbers
or the strings "Infinity", "-Infinity" and "NaN" that the writer uses for non-finite floats.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .engine._types import X_DTYPE
from .engine.predict import (
    BLOCK,
    DenseForest,
    dense_fits,
    node_depths,
    predict_binned,
    predict_per_tree,
    predict_raw,
)

__all__ = ["Forest", "ForestBuilder", "ModelFormatError", "FORMAT_NAME", "FORMAT_VERSION",
           "MAX_MODEL_BYTES", "MAX_NODES", "MAX_FEATURES", "check_model_size", "check_node_count",
           "check_written_size",
           "tree_text", "ClassForestBuilder", "CLASSIFIER_LOSSES", "REGRESSOR_LOSSES"]

FORMAT_NAME = "hepbdt-model"
FORMAT_VERSION = 1
AGGREGATIONS = ("sum", "weighted_mean", "weighted_median", "uboost")
UBOOST_STEP_AGGREGATIONS = ("weighted_mean", "sum")
MAX_MODEL_BYTES = 512 << 20  # model files larger than this are refused
MAX_NODES = 50_000_000  # and forests of more nodes
MAX_FEATURES = 1_000_000  # and of more features
# TMVA::Reader's floor of a weighted mean's total tree weight: at or below it, it scores 0
DBL_EPSILON = float(np.finfo(np.float64).eps)
NON_FINITE = frozenset({"Infinity", "-Infinity", "NaN"})  # how the writer spells non-finite floats
# The losses a forest's extra.loss may name (the boosters' loss names; "exponential" is
# RealAdaBoost's, "samme" SAMME's): the loss decides a classifier's probability link (probability_link).
CLASSIFIER_LOSSES = frozenset({"deviance", "logistic", "softmax", "exponential", "samme"})
REGRESSOR_LOSSES = frozenset({"squared", "absolute", "huber"})
MEDIAN_CHUNK = 1 << 22  # per-tree leaf values held at once by the weighted median (events x trees)

# Node arrays: name -> dtype. left/right are indices into the flat arrays (-1 at leaves).
NODE_ARRAYS = {
    "feature": np.int32,
    "threshold": X_DTYPE,
    "bin_threshold": np.uint8,
    "left": np.int32,
    "right": np.int32,
    "missing_left": np.bool_,
    "value": np.float64,
    "gain": np.float64,
    "cover": np.float64,
}


def float32_thresholds(threshold: np.ndarray) -> np.ndarray:
    """Thresholds (not NaN) as the float32 values that decide every float32 x as they do:
    a threshold that is a float32 value as it is, any other (a float64 forest's) as the
    smallest float32 above it. For float32 x, x < t holds exactly when x < that float32;
    rounding to the nearest float32 instead would send the x equal to a threshold rounded
    down to the right, where hepbdt sends it left."""
    threshold = np.asarray(threshold)
    if threshold.dtype == np.float32:
        return threshold
    with np.errstate(over="ignore"):  # beyond float32's range: +-inf, then stepped up
        rounded = threshold.astype(np.float32)
    below = rounded.astype(threshold.dtype) < threshold
    return np.where(below, np.nextafter(rounded, np.float32(np.inf)), rounded)


class ModelFormatError(ValueError):
    """A model file that is malformed, inconsistent or of an unsupported version."""


def from_tmva_two_class(forest: Any) -> bool:
    """Whether ``forest`` was read from a TMVA two-class (Classification) file, whose Reader
    answers -999 for an event with a NaN input without walking the trees."""
    tmva = forest.extra.get("tmva")
    return isinstance(tmva, dict) and tmva.get("analysis") == "Classification"


def check_model_size(where: str, n_bytes: int) -> None:
    """ModelFormatError when a model file of ``n_bytes`` is over ``MAX_MODEL_BYTES``."""
    if n_bytes > MAX_MODEL_BYTES:
        raise ModelFormatError(f"{where}: the file has {n_bytes} bytes; model files of more "
                               f"than {MAX_MODEL_BYTES >> 20} MiB are refused")


def check_written_size(what: str, text: str) -> None:
    """ModelFormatError, before anything is written, when a model file's ``text`` would be
    more than the ``MAX_MODEL_BYTES`` that hepbdt's readers take (a forest trains to any
    size; its file would be refused when read back)."""
    if len(text) > MAX_MODEL_BYTES:  # characters: at most the bytes
        raise ModelFormatError(f"{what} would take {len(text) / 2**20:.0f} MiB, more than the "
                               f"{MAX_MODEL_BYTES >> 20} MiB of a model file that hepbdt reads "
                               "back; nothing was written: train fewer or shallower trees")


def check_node_count(where: str, n_nodes: int) -> None:
    """ModelFormatError when a model has more than ``MAX_NODES`` nodes."""
    if n_nodes > MAX_NODES:
        raise ModelFormatError(f"{where}: {n_nodes} nodes or more; forests of more than "
                               f"{MAX_NODES} nodes are refused")


@dataclass
class Forest:
    """All trees in shared flat arrays plus how their outputs combine.

    Score = base_score + sum_t tree_weights[t] * leaf_t(x) ("sum"), or
    sum_t tree_weights[t] * leaf_t(x) / sum_t tree_weights[t] ("weighted_mean", AdaBoost), or
    TMVA's AdaBoostR2 weighted median of leaf_t(x) ("weighted_median"), or uBoost's mean
    of K steps' smoothed cut decisions ("uboost"): the trees are K AdaBoost ensembles one
    after the other (``extra["uboost"]``: ``step_trees`` their sizes, ``step_aggregation``
    how each step combines its trees, ``cuts`` each step's cut after each of its trees,
    ``widths``), and the score is (1/K) sum_k sigmoid((s_k(x) - cut_k) / width_k) in [0, 1].
    """

    feature: np.ndarray
    threshold: np.ndarray
    bin_threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    tree_offsets: np.ndarray
    tree_weights: np.ndarray
    n_features: int
    base_score: float = 0.0
    aggregation: str = "sum"
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_trees(self) -> int:
        """Number of trees."""
        return int(self.tree_offsets.size - 1)

    @property
    def n_nodes(self) -> int:
        """Number of nodes over all trees."""
        return int(self.feature.size)

    @property
    def n_classes(self) -> int:
        """K >= 3 for a multi-class forest (K trees a round, stored class by class: the
        trees of class k are [k R, (k + 1) R) for R rounds), else 1 (one score)."""
        return int(self.extra.get("n_classes", 1))

    @property
    def trees_per_round(self) -> int:
        """The trees a user counts in one round: K for a multi-class forest of one tree a
        class, 1 otherwise (SAMME's K-class trees, stored once a class, are single trees)."""
        return 1 if self.extra.get("algorithm") == "SAMME" else self.n_classes

    @property
    def n_rounds(self) -> int:
        """Boosting rounds: trees per class (uBoost: the most trees of a step)."""
        if self.aggregation == "uboost":
            return max(self.extra["uboost"]["step_trees"])
        return self.n_trees // self.n_classes

    def _input(self, X: np.ndarray) -> np.ndarray:
        """X as (n, m) C-contiguous float32; ValueError unless 2-D with every feature of the
        forest (the kernels read columns up to n_features unchecked)."""
        X = np.ascontiguousarray(X, dtype=X_DTYPE)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (events, features), got shape {X.shape}")
        if X.shape[1] < self.n_features:
            raise ValueError(f"X has {X.shape[1]} features; this forest reads {self.n_features}")
        return X

    @staticmethod
    def _count(value: int | None, name: str) -> None:
        """ValueError for a negative tree or round count (not Python's count from the end)."""
        if value is not None and value < 0:
            raise ValueError(f"{name}={value}: must be >= 0")

    def _single_score(self, what: str) -> None:
        if self.n_classes > 1:
            raise ValueError(f"{what} gives one score per event; this multi-class forest has "
                             f"{self.n_classes} (use class_scores)")

    def class_scores(self, X: np.ndarray, n_rounds: int | None = None) -> np.ndarray:
        """(n, K) raw scores of a multi-class forest (its first ``n_rounds`` rounds)."""
        self._count(n_rounds, "n_rounds")
        X = self._input(X)
        rounds = self.n_rounds if n_rounds is None else min(n_rounds, self.n_rounds)
        out = np.empty((self.n_classes, X.shape[0]))
        dense = self.dense()
        factor = self._stage_factor(rounds)
        for k, base in enumerate(self.extra["base_scores"]):
            first = k * self.n_rounds
            out[k] = predict_raw(X, self, first, first + rounds, dense=dense) * factor + base
        return out.T

    def _stage_factor(self, rounds: int) -> float:
        """What the sum of the first ``rounds`` rounds is multiplied by to be the scores of a
        model of those rounds: 1, but SAMME's class scores are normalised by the alphas of
        all its trees (sum alpha), and a model of the first trees by theirs."""
        if self.extra.get("algorithm") != "SAMME" or not 0 < rounds < self.n_rounds:
            return 1.0
        alphas = np.asarray(self.extra["tree_weights"], dtype=np.float64)
        return float(alphas.sum() / alphas[:rounds].sum())

    def staged_class_scores(self, X: np.ndarray):
        """Yield the (n, K) scores after 1, 2, ... rounds, each tree evaluated once."""
        X = self._input(X)
        running = np.zeros((self.n_classes, X.shape[0]))
        dense = self.dense()
        base = np.asarray(self.extra["base_scores"], dtype=np.float64)[:, None]
        for r in range(self.n_rounds):
            for k in range(self.n_classes):
                t = k * self.n_rounds + r
                predict_raw(X, self, t, t + 1, out=running[k], dense=dense)
            yield (running * self._stage_factor(r + 1) + base).T

    def feature_gain(self) -> np.ndarray:
        """Per feature, the split gains of its nodes times their tree's |weight|, summed
        (float64, (n_features,)): the split-gain importance before normalisation (TMVA's
        squares the gains within each tree; ``tmva_importance(quadrature=True)``)."""
        split = self.feature >= 0
        tree_weight = np.repeat(np.abs(self.tree_weights), np.diff(self.tree_offsets))
        return np.bincount(self.feature[split], weights=(self.gain * tree_weight)[split],
                           minlength=self.n_features).astype(np.float64)

    def probability_link(self) -> tuple[str, float]:
        """How a classifier's P(signal) follows from its score F, for hepbdt and every
        export: ("clip", lo) maps [lo, 1] onto [0, 1], clipped (aggregations other than
        "sum": AdaBoost-type scores, already in [-1, 1] or [0, 1]); ("sigmoid", c) is
        1 / (1 + exp(-c F)), c = 1 for the logistic loss and 2 for the binomial deviance."""
        if self.aggregation != "sum":
            return "clip", float(self.extra.get("score_min", -1.0))
        return "sigmoid", 1.0 if self.extra.get("loss") == "logistic" else 2.0

    def node_depths(self) -> np.ndarray:
        """Depth of every node (roots 0), int64 (n_nodes,)."""
        return node_depths(self.feature, self.left, self.right, self.tree_offsets)

    @property
    def max_depth(self) -> int:
        """The depth of the deepest tree (0 for a forest of single leaves)."""
        return int(self.node_depths().max()) if self.n_nodes else 0

    def dense(self) -> DenseForest | None:
        """The forest as complete binary trees (built once, cached), or None when that layout
        would not be small.

        Decided from the depth and the node count before anything is allocated
        (:func:`~hepbdt.engine.predict.dense_fits`: depth <= 12 and at most 8 leaf slots per
        node), so its memory is bounded by the node count; other forests are walked node by node.
        """
        key = self._fingerprint()
        cached = self.__dict__.get("_dense")
        if cached is None or cached[0] != key:
            depth = self.max_depth if self.n_trees else -1
            fits = dense_fits(self.n_trees, self.n_nodes, depth)
            cached = (key, DenseForest(self, depth) if fits else None)
            self.__dict__["_dense"] = cached
        return cached[1]

    def _fingerprint(self) -> tuple[int, int]:
        """The node count and a checksum of every array the dense layout copies, so that a
        forest changed in place (a leaf value, a threshold) never predicts from a stale copy."""
        crc = 0
        for name in ("feature", "threshold", "left", "right", "missing_left", "value", "tree_offsets"):
            crc = zlib.crc32(np.ascontiguousarray(getattr(self, name)).view(np.uint8), crc)
        return self.n_nodes, crc

    def raw_score(self, X: np.ndarray, n_trees: int | None = None) -> np.ndarray:
        """The ensemble score of X ((n, m) float32) using the first ``n_trees`` trees."""
        self._single_score("raw_score")
        self._count(n_trees, "n_trees")
        if n_trees == 0 and self.aggregation != "sum":
            raise ValueError(f"n_trees=0: a {self.aggregation!r} score of no trees is not "
                             "defined (only a sum starts from the base score); give n_trees >= 1")
        X = self._input(X)
        t_end = self.n_trees if n_trees is None else min(n_trees, self.n_trees)
        if self.aggregation == "weighted_median":
            return self._weighted_median(X, t_end)
        if self.aggregation == "uboost":
            return self._uboost_score(X, n_trees)
        out = predict_raw(X, self, 0, t_end, dense=self.dense())
        if self.aggregation == "weighted_mean":
            total = self.tree_weights[:t_end].sum()
            return out / total if total != 0 else out
        return out + self.base_score

    def _weighted_median(self, X: np.ndarray, t_end: int) -> np.ndarray:
        """The weighted-median score of the first t_end trees, in chunks of events so that
        at most about MEDIAN_CHUNK per-tree values are held at once."""
        out = np.empty(X.shape[0])
        step = max(16 * BLOCK, MEDIAN_CHUNK // max(t_end, 1))
        for i in range(0, X.shape[0], step):
            per_tree = predict_per_tree(X[i:i + step], self, t_end)
            out[i:i + step] = _weighted_median_score(per_tree, self.tree_weights[:t_end])
        return out

    def _uboost_steps(self) -> tuple[dict[str, Any], np.ndarray]:
        """The uBoost record and the first tree of each step (K + 1 offsets)."""
        spec = self.extra["uboost"]
        return spec, np.concatenate([[0], np.cumsum(spec["step_trees"])]).astype(np.int64)

    def _uboost_score(self, X: np.ndarray, per_step: int | None = None) -> np.ndarray:
        """uBoost's score with the first ``per_step`` trees of every step (all: None)."""
        spec, starts = self._uboost_steps()
        out = np.zeros(X.shape[0])
        dense = self.dense()
        for k in range(starts.size - 1):
            used = int(starts[k + 1] - starts[k]) if per_step is None else \
                max(1, min(int(per_step), int(starts[k + 1] - starts[k])))
            step = predict_raw(X, self, int(starts[k]), int(starts[k]) + used, dense=dense)
            out += _uboost_decision(self._step_score(step, int(starts[k]), used),
                                    spec["cuts"][k][used - 1], spec["widths"][k])
        return out / (starts.size - 1)

    def _step_score(self, summed: np.ndarray, first: int, used: int) -> np.ndarray:
        """One uBoost step's score from its trees' weighted sum."""
        if self.extra["uboost"]["step_aggregation"] == "sum":
            return summed
        total = self.tree_weights[first:first + used].sum()
        return summed / total if total != 0 else summed

    def staged_raw_score(self, X: np.ndarray):
        """Yield the score after 1, 2, ... trees (uBoost: trees of every step), each tree
        evaluated once."""
        self._single_score("staged_raw_score")
        X = self._input(X)
        if self.aggregation == "uboost":
            yield from self._staged_uboost(X)
            return
        if self.aggregation == "weighted_median":
            per_tree = predict_per_tree(X, self)
            for t in range(1, self.n_trees + 1):
                yield _weighted_median_score(per_tree[:, :t], self.tree_weights[:t])
            return
        dense = self.dense()
        yield from self._staged_sums(
            X.shape[0], lambda t, out: predict_raw(X, self, t, t + 1, out=out, dense=dense))

    def staged_raw_score_codes(self, codes: np.ndarray):
        """``staged_raw_score`` of events given as bin codes, (m, n) uint8 feature-major, of
        the bins the trees were grown on (``bin_threshold``; the forest's own training
        bins): the same scores, bit for bit, without the events' float values. Forests of
        one score aggregated by "sum" or "weighted_mean"."""
        self._single_score("staged_raw_score_codes")
        if self.aggregation not in ("sum", "weighted_mean"):
            raise ValueError(f"staged scores from codes: not for aggregation {self.aggregation!r}")
        codes = np.ascontiguousarray(codes, dtype=np.uint8)
        if codes.ndim != 2 or codes.shape[0] < self.n_features:
            raise ValueError(f"codes must be (features, events) with {self.n_features} features, "
                             f"got shape {codes.shape}")
        yield from self._staged_sums(codes.shape[1], lambda t, out: predict_binned(
            codes, self.feature, self.bin_threshold, self.left, self.right, self.missing_left,
            self.value, self.tree_offsets[t:t + 2], self.tree_weights[t:t + 1], out))

    def _staged_sums(self, n: int, add_tree):
        """The running score of n events after each tree, ``add_tree(t, out)`` adding tree t's
        weighted leaf values to ``out``."""
        running = np.zeros(n)
        for t in range(self.n_trees):
            add_tree(t, running)
            if self.aggregation == "weighted_mean":
                # the prefix's total as raw_score sums it (numpy's pairwise .sum(), which the
                # C++ and ONNX exports reproduce): a running += differs in the last bit
                total = self.tree_weights[:t + 1].sum()
                yield running / total if total != 0 else running.copy()
            else:
                yield running + self.base_score

    def _staged_uboost(self, X: np.ndarray):
        """uBoost's score after 1, 2, ... trees of every step (a step's last score is kept
        once its trees are used up), each tree evaluated once."""
        spec, starts = self._uboost_steps()
        sizes = np.diff(starts)
        running = np.zeros((sizes.size, X.shape[0]))
        dense = self.dense()
        for r in range(int(sizes.max())):
            out = np.zeros(X.shape[0])
            for k, size in enumerate(sizes):
                used = min(r + 1, int(size))
                if r < size:
                    t = int(starts[k]) + r
                    predict_raw(X, self, t, t + 1, out=running[k], dense=dense)
                out += _uboost_decision(self._step_score(running[k], int(starts[k]), used),
                                        spec["cuts"][k][used - 1], spec["widths"][k])
            yield out / sizes.size

    def tree_slice(self, t: int) -> slice:
        """The node range of tree t."""
        return slice(int(self.tree_offsets[t]), int(self.tree_offsets[t + 1]))

    def truncate(self, n_trees: int) -> Forest:
        """A forest of the first ``n_trees`` trees."""
        self._single_score("truncate")
        if self.aggregation == "uboost":
            raise ValueError("a uBoost forest is K ensembles side by side; its first trees are "
                             "not a model (raw_score(X, n) uses n trees of every step)")
        stop = int(self.tree_offsets[n_trees])
        arrays = {k: getattr(self, k)[:stop].copy() for k in NODE_ARRAYS}
        return Forest(**arrays, tree_offsets=self.tree_offsets[: n_trees + 1].copy(),
                      tree_weights=self.tree_weights[:n_trees].copy(), n_features=self.n_features,
                      base_score=self.base_score, aggregation=self.aggregation,
                      extra=dict(self.extra))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (floats as Python floats, exact round trip; see
        :func:`hepbdt._util.strict_json` for the +-inf thresholds)."""
        d: dict[str, Any] = {k: getattr(self, k).tolist() for k in NODE_ARRAYS}
        d["missing_left"] = [bool(v) for v in self.missing_left]
        d.update(tree_offsets=self.tree_offsets.tolist(), tree_weights=self.tree_weights.tolist(),
                 n_features=int(self.n_features), base_score=float(self.base_score),
                 aggregation=self.aggregation, extra=self.extra)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: str = "forest") -> Forest:
        """Build and validate a forest from ``to_dict`` output; ModelFormatError if invalid.

        Every value is checked for its JSON type and range before anything is converted."""
        if not isinstance(d, dict):
            raise ModelFormatError(f"{where}: expected an object, got {type(d).__name__}")
        # base_score and aggregation too: every hepbdt writes them, and a file without one
        # was read with 0.0 and "sum" (a regressor's scores 1.05 off, an AdaBoost's 0.91)
        required = [*NODE_ARRAYS, "tree_offsets", "tree_weights", "n_features", "base_score",
                    "aggregation"]
        missing = [k for k in required if k not in d]
        if missing:
            raise ModelFormatError(f"{where}: missing keys {missing}; a forest needs {required}")
        n = _node_count(d, where)
        n_features = _json_int(d["n_features"], f"{where}.n_features", 1, MAX_FEATURES)
        arrays = {
            "feature": _int_array(d, "feature", where, -1, n_features - 1),
            "bin_threshold": _int_array(d, "bin_threshold", where, 0, 255),
            "left": _int_array(d, "left", where, -1, n - 1),
            "right": _int_array(d, "right", where, -1, n - 1),
            "missing_left": _bool_array(d, "missing_left", where),
        }
        for k in ("threshold", "value", "gain", "cover"):
            arrays[k] = _float_array(d, k, where)
        too_big = np.abs(arrays["threshold"]) > np.finfo(X_DTYPE).max
        if np.any(too_big & np.isfinite(arrays["threshold"])):
            node = int(np.flatnonzero(too_big & np.isfinite(arrays["threshold"]))[0])
            raise ModelFormatError(f"{where}.threshold[{node}]: {float(arrays['threshold'][node])!r} is "
                                   f"outside the float32 range (use \"Infinity\")")
        # a threshold that is not a float32 value (a forest built in float64) as the float32
        # that decides every float32 input alike, not the nearest one (which would send the
        # inputs equal to a threshold rounded down the other way)
        arrays["threshold"] = float32_thresholds(arrays["threshold"])
        arrays = {k: arrays[k].astype(dt) for k, dt in NODE_ARRAYS.items()}
        offsets = _int_array(d, "tree_offsets", where, 0, n)
        weights = _float_array(d, "tree_weights", where)
        forest = cls(**arrays, tree_offsets=offsets, tree_weights=weights, n_features=n_features,
                     base_score=_finite(d["base_score"], f"{where}.base_score"),
                     aggregation=_aggregation(d["aggregation"], where),
                     extra=_extra(d.get("extra"), where))
        forest.validate(where)
        return forest

    def validate(self, where: str = "forest") -> None:
        """Check shapes, index ranges and tree structure; ModelFormatError naming the problem."""
        n = self.feature.size
        for k in NODE_ARRAYS:
            a = getattr(self, k)
            if a.ndim != 1 or a.size != n:
                raise ModelFormatError(f"{where}.{k}: expected {n} values, got shape {a.shape}")
        if self.aggregation not in AGGREGATIONS:
            raise ModelFormatError(f"{where}.aggregation: {self.aggregation!r}, valid: {AGGREGATIONS}")
        off = self.tree_offsets
        if off.ndim != 1 or off.size < 1 or off[0] != 0 or off[-1] != n or np.any(np.diff(off) < 1):
            raise ModelFormatError(f"{where}.tree_offsets: must start at 0, increase strictly "
                                   f"and end at the node count {n}")
        if self.tree_weights.size != off.size - 1:
            raise ModelFormatError(f"{where}.tree_weights: {self.tree_weights.size} values for "
                                   f"{off.size - 1} trees")
        if self.n_features < 1:
            raise ModelFormatError(f"{where}.n_features: must be positive")
        if np.any(self.feature >= self.n_features) or np.any(self.feature < -1):
            raise ModelFormatError(f"{where}.feature: indices must be -1 (leaf) or in "
                                   f"[0, {self.n_features})")
        if not np.all(np.isfinite(self.value)) or not np.all(np.isfinite(self.tree_weights)):
            raise ModelFormatError(f"{where}: leaf values and tree weights must be finite")
        if not np.all(np.isfinite(self.gain)) or np.any(np.isnan(self.cover)):
            raise ModelFormatError(f"{where}: split gains must be finite and covers numbers")
        if not math.isfinite(self.base_score):
            raise ModelFormatError(f"{where}.base_score: {self.base_score!r} is not finite")
        self._validate_reach(where)
        self._validate_classes(where)
        self._validate_total_weight(where)
        if self.aggregation == "uboost":
            _validate_uboost(self.extra.get("uboost"), self.n_trees, f"{where}.extra.uboost")
        if "decorrelation_map" in self.extra:
            _validate_map(self.extra["decorrelation_map"], self.n_features,
                          f"{where}.extra.decorrelation_map")
        if np.any(np.isnan(self.threshold[self.feature >= 0])):
            node = int(np.flatnonzero((self.feature >= 0) & np.isnan(self.threshold))[0])
            raise ModelFormatError(f"{where}.threshold: split node {node} has threshold NaN; a "
                                   "split needs a number (or +-Infinity)")
        tree_of = np.repeat(np.arange(off.size - 1), np.diff(off))
        internal = self.feature >= 0
        for child in (self.left, self.right):
            c = child[internal]
            idx = np.flatnonzero(internal)
            if np.any(c <= idx) or np.any(c >= n) or np.any(tree_of[np.clip(c, 0, n - 1)] != tree_of[idx]):
                raise ModelFormatError(f"{where}: a child index points outside its tree or "
                                       f"backwards (children must follow their parent)")
        if np.any(self.left[~internal] != -1) or np.any(self.right[~internal] != -1):
            raise ModelFormatError(f"{where}: leaves must have left = right = -1")
        parents = np.bincount(np.concatenate([self.left[internal], self.right[internal]]),
                              minlength=n)
        expected = np.ones(n, np.int64)
        expected[off[:-1]] = 0  # roots
        if np.any(parents != expected):
            node = int(np.flatnonzero(parents != expected)[0])
            raise ModelFormatError(f"{where}: node {node} has {parents[node]} parents, expected "
                                   f"{expected[node]} (a tree shares no node and leaves none out)")


    def _validate_total_weight(self, where: str) -> None:
        """A weighted mean or median of the trees needs a positive total tree weight (a
        total of 0 left the sum undivided; a weighted median walks past the last tree).
        Any positive total divides: TMVA's Reader, which scores 0 at or below DBL_EPSILON,
        is the TMVA reader's and export's concern (AdaBoost with beta=1e-17 trains such
        trees, and its model must load again)."""
        if self.aggregation not in ("weighted_mean", "weighted_median") or not self.n_trees:
            return
        total = float(np.cumsum(self.tree_weights)[-1])
        if not total > 0.0:
            raise ModelFormatError(f"{where}.tree_weights: they add up to {total!r}; the "
                                   f"{self.aggregation.replace('_', ' ')} of the trees needs "
                                   "a positive total (the boost weights of a trained model)")

    def _validate_reach(self, where: str) -> None:
        """The largest score any event can reach (each tree's largest |leaf| times its
        |weight|, summed, plus the base score) and the weighted gains the rankings sum must
        be finite: every value finite, a sum of them can still overflow (every score inf)."""
        off = self.tree_offsets
        if off.size < 2:
            return
        weight = np.abs(self.tree_weights.astype(np.float64))
        largest = np.maximum.reduceat(np.abs(self.value.astype(np.float64)), off[:-1])
        with np.errstate(over="ignore", invalid="ignore"):
            reach = abs(self.base_score) + float(np.sum(largest * weight))
            gains = float(np.sum(np.abs(self.gain) * np.repeat(weight, np.diff(off))))
        if not math.isfinite(reach):
            raise ModelFormatError(f"{where}: its scores can reach beyond float64's range (each "
                                   "tree's largest leaf times its weight, summed, overflows)")
        if not math.isfinite(gains):
            raise ModelFormatError(f"{where}: its split gains times the tree weights sum beyond "
                                   "float64's range")

    def _validate_classes(self, where: str) -> None:
        """A multi-class forest: K >= 3 classes, K finite base scores, whole rounds of sums."""
        if "n_classes" not in self.extra:
            return
        k = self.extra["n_classes"]
        if isinstance(k, bool) or not isinstance(k, int) or k < 3:
            raise ModelFormatError(f"{where}.extra.n_classes: {k!r}; a multi-class forest has "
                                   "an integer of at least 3 classes")
        base = self.extra.get("base_scores")
        if (not isinstance(base, list) or len(base) != k
                or not all(isinstance(v, int | float) and math.isfinite(v) for v in base)):
            raise ModelFormatError(f"{where}.extra.base_scores: expected {k} finite numbers")
        if self.n_trees % k or self.aggregation != "sum":
            raise ModelFormatError(f"{where}: a multi-class forest sums whole rounds of {k} "
                                   f"trees; it has {self.n_trees} trees, aggregation "
                                   f"{self.aggregation!r}")
        if self.extra.get("algorithm") == "SAMME":  # staged scores divide by these alphas
            alphas = self.extra.get("tree_weights")
            if (not isinstance(alphas, list) or len(alphas) != self.n_trees // k
                    or not all(isinstance(a, int | float) and not isinstance(a, bool)
                               and math.isfinite(a) and a > 0 for a in alphas)):
                raise ModelFormatError(f"{where}.extra.tree_weights: SAMME's model needs one "
                                       f"finite positive tree weight a round, "
                                       f"{self.n_trees // k} in all")


def _node_count(d: dict[str, Any], where: str) -> int:
    """The forest's node count (the length of ``feature``), at most MAX_NODES."""
    feature = d["feature"]
    if not isinstance(feature, list):
        raise ModelFormatError(f"{where}.feature: expected a list, got {type(feature).__name__}")
    check_node_count(where, len(feature))
    return len(feature)


def _json_list(d: dict[str, Any], key: str, where: str, allowed: set[type]) -> list[Any]:
    """``d[key]``, a list whose items are all of the ``allowed`` types (bool is not int)."""
    value = d[key]
    if not isinstance(value, list):
        raise ModelFormatError(f"{where}.{key}: expected a list, got {type(value).__name__}")
    if not set(map(type, value)) <= allowed:
        i, bad = next((i, v) for i, v in enumerate(value) if type(v) not in allowed)
        kinds = " or ".join(sorted(t.__name__ for t in allowed))
        raise ModelFormatError(f"{where}.{key}[{i}]: {_short(bad)} has the wrong type; "
                               f"expected {kinds}")
    return value


def _int_array(d: dict[str, Any], key: str, where: str, lo: int, hi: int) -> np.ndarray:
    """A list of JSON integers in [lo, hi] as int64."""
    value = _json_list(d, key, where, {int})
    try:
        a = np.array(value, dtype=np.int64)
        ok = not a.size or (int(a.min()) >= lo and int(a.max()) <= hi)
    except OverflowError:
        ok = False
    if not ok:
        i = next(i for i, v in enumerate(value) if not lo <= v <= hi)
        hint = " (a child index must point inside the forest)" if key in ("left", "right") else ""
        raise ModelFormatError(f"{where}.{key}[{i}]: {_short(value[i])} is outside [{lo}, {hi}]{hint}")
    return a


def _float_array(d: dict[str, Any], key: str, where: str) -> np.ndarray:
    """A list of JSON numbers (or "Infinity", "-Infinity", "NaN") as float64."""
    value = _json_list(d, key, where, {int, float, str})
    strings = {v for v in value if type(v) is str} if any(type(v) is str for v in value) else set()
    if not strings <= NON_FINITE:
        i = next(i for i, v in enumerate(value) if type(v) is str and v not in NON_FINITE)
        raise ModelFormatError(f"{where}.{key}[{i}]: {_short(value[i])} has the wrong type; "
                               'expected a number, "Infinity", "-Infinity" or "NaN"')
    try:
        return np.array(value, dtype=np.float64)
    except OverflowError:
        raise ModelFormatError(f"{where}.{key}: an integer is too large for a float") from None


def _bool_array(d: dict[str, Any], key: str, where: str) -> np.ndarray:
    """A list of JSON booleans."""
    return np.array(_json_list(d, key, where, {bool}), dtype=np.bool_)


def _json_int(value: Any, where: str, lo: int, hi: int) -> int:
    """A JSON integer (not a float, not a boolean) in [lo, hi]."""
    if type(value) is not int:
        raise ModelFormatError(f"{where}: {_short(value)} is not an integer")
    if not lo <= value <= hi:
        raise ModelFormatError(f"{where}: {_short(value)} is outside [{lo}, {hi}]")
    return value


def _finite(value: Any, where: str) -> float:
    """A finite JSON number."""
    if type(value) not in (int, float):
        raise ModelFormatError(f"{where}: {_short(value)} is not a number")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ModelFormatError(f"{where}: {_short(value)} is not a finite number")
    return number


def _aggregation(value: Any, where: str) -> str:
    """One of AGGREGATIONS."""
    if not isinstance(value, str) or value not in AGGREGATIONS:
        raise ModelFormatError(f"{where}.aggregation: {_short(value)}, valid: {AGGREGATIONS}")
    return value


def _extra(value: Any, where: str) -> dict[str, Any]:
    """The forest's ``extra`` object (null: empty), its entries used in prediction checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ModelFormatError(f"{where}.extra: expected an object, got {type(value).__name__}")
    _check_nesting(value, f"{where}.extra")
    if "score_min" in value:
        lo = _finite(value["score_min"], f"{where}.extra.score_min")
        if lo >= 1.0:
            raise ModelFormatError(f"{where}.extra.score_min: {lo} must be below 1")
    known = CLASSIFIER_LOSSES | REGRESSOR_LOSSES
    if "loss" in value and (not isinstance(value["loss"], str) or value["loss"] not in known):
        raise ModelFormatError(f"{where}.extra.loss: {_short(value['loss'])} is not a loss name; "
                               f"valid: {sorted(known)}")
    if "tmva" in value:
        _check_tmva_extra(value["tmva"], f"{where}.extra.tmva")
    return dict(value)


MAX_EXTRA_NESTING = 32  # hepbdt writes at most 4 levels; Python's copies recurse per level


def _check_nesting(value: Any, where: str) -> None:
    """ModelFormatError when objects and lists nest more than MAX_EXTRA_NESTING deep (a
    hand-made 950 levels loaded, and saving, copying or pickling the model then failed
    with a RecursionError)."""
    level, depth = [value], 1
    while level:
        level = [item for v in level for item in (v.values() if isinstance(v, dict) else v)
                 if isinstance(item, dict | list)]
        depth += bool(level)
        if depth > MAX_EXTRA_NESTING:
            raise ModelFormatError(f"{where}: objects and lists nest more than "
                                   f"{MAX_EXTRA_NESTING} deep; a hepbdt model's extra holds "
                                   "a few levels")


def _check_tmva_extra(tmva: Any, where: str) -> None:
    """An imported TMVA model's record, as the TMVA XML export reads it: options as
    [name, modified, value] triples, variables with a name and finite min and max, node
    purities as numbers (a hand-edited file loaded, and the export then failed inside)."""
    if not isinstance(tmva, dict):
        raise ModelFormatError(f"{where}: expected an object, got {type(tmva).__name__}")
    options = tmva.get("options", [])
    if not isinstance(options, list) or not all(
            isinstance(o, list) and len(o) == 3 and isinstance(o[0], str)
            and isinstance(o[1], bool) and isinstance(o[2], str) for o in options):
        raise ModelFormatError(f"{where}.options: expected a list of [name, modified, value] "
                               "(text, true or false, text)")
    variables = tmva.get("variables", [])
    number = (int, float)
    if not isinstance(variables, list) or not all(
            isinstance(v, dict) and isinstance(v.get("name"), str)
            and all(isinstance(v.get(k, 0.0), number) and not isinstance(v.get(k, 0.0), bool)
                    and math.isfinite(v.get(k, 0.0)) for k in ("min", "max"))
            for v in variables):
        raise ModelFormatError(f"{where}.variables: expected a list of objects with a name and "
                               "finite min and max")
    purity = tmva.get("node_purity", [])
    if purity is not None and (not isinstance(purity, list) or not all(
            isinstance(p, number) and not isinstance(p, bool) for p in purity)):
        raise ModelFormatError(f"{where}.node_purity: expected a list of numbers, one a node")


def _validate_uboost(spec: Any, n_trees: int, where: str) -> None:
    """A uBoost forest's record: K >= 1 steps of >= 1 trees adding up to the forest, one
    finite cut a tree, a finite positive width a step."""
    if not isinstance(spec, dict):
        raise ModelFormatError(f"{where}: a forest of aggregation 'uboost' needs an object "
                               "with step_trees, step_aggregation, cuts and widths")
    sizes = spec.get("step_trees")
    if (not isinstance(sizes, list) or not sizes
            or not all(type(v) is int and v >= 1 for v in sizes) or sum(sizes) != n_trees):
        raise ModelFormatError(f"{where}.step_trees: {_short(sizes)}; expected a list of "
                               f"integers >= 1 adding up to the {n_trees} trees")
    if spec.get("step_aggregation") not in UBOOST_STEP_AGGREGATIONS:
        raise ModelFormatError(f"{where}.step_aggregation: {_short(spec.get('step_aggregation'))}, "
                               f"valid: {UBOOST_STEP_AGGREGATIONS}")
    cuts, widths = spec.get("cuts"), spec.get("widths")
    if (not isinstance(cuts, list) or len(cuts) != len(sizes)
            or any(not isinstance(c, list) or len(c) != n for c, n in zip(cuts, sizes, strict=False))):
        raise ModelFormatError(f"{where}.cuts: expected one list a step, one cut a tree")
    for k, row in enumerate(cuts):
        for t, c in enumerate(row):
            _finite(c, f"{where}.cuts[{k}][{t}]")
    if not isinstance(widths, list) or len(widths) != len(sizes):
        raise ModelFormatError(f"{where}.widths: expected {len(sizes)} numbers, one a step")
    for k, v in enumerate(widths):
        if not _finite(v, f"{where}.widths[{k}]") > 0:
            raise ModelFormatError(f"{where}.widths[{k}]: {v!r} must be positive")


def _validate_map(spec: Any, n_features: int, where: str) -> None:
    """A quantile map (decorrelation_map="ddt"): B >= 1 increasing finite bin centres, L >= 2
    increasing levels in [0, 1], B rows of L non-decreasing finite quantiles, the feature
    null or a column."""
    if not isinstance(spec, dict) or spec.get("method") != "ddt":
        raise ModelFormatError(f"{where}: expected an object with method 'ddt'")
    feature = spec.get("feature")
    if feature is not None and not (type(feature) is int and 0 <= feature < n_features):
        raise ModelFormatError(f"{where}.feature: {_short(feature)}; expected null or a "
                               f"column in [0, {n_features})")
    try:
        centres = np.asarray(spec.get("centres"), dtype=np.float64)
        levels = np.asarray(spec.get("levels"), dtype=np.float64)
        quantiles = np.asarray(spec.get("quantiles"), dtype=np.float64)
    except (TypeError, ValueError):
        raise ModelFormatError(f"{where}: centres, levels and quantiles must be lists of "
                               "numbers") from None
    ok = (centres.ndim == 1 and centres.size >= 1 and levels.ndim == 1 and levels.size >= 2
          and quantiles.shape == (centres.size, levels.size)
          and np.all(np.isfinite(centres)) and np.all(np.isfinite(quantiles))
          and np.all(np.diff(centres) > 0) and np.all(np.diff(levels) > 0)
          and levels[0] >= 0 and levels[-1] <= 1 and np.all(np.diff(quantiles, axis=1) >= 0))
    if not ok:
        raise ModelFormatError(f"{where}: expected increasing finite centres (B), increasing "
                               "levels in [0, 1] (L) and B rows of L non-decreasing finite "
                               "quantiles")


def _uboost_decision(score: np.ndarray, cut: float, width: float) -> np.ndarray:
    """A uBoost step's smoothed cut decision, sigmoid((score - cut) / width) in [0, 1]."""
    return 0.5 * (1.0 + np.tanh(0.5 * (score - cut) / width))


def _short(value: Any) -> str:
    """``repr(value)``, cut to 40 characters (huge integers included)."""
    if type(value) is int and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def half_tree_weight(weights: np.ndarray) -> float:
    """Half the trees' total weight, added in tree order one after another, as TMVA's
    AdaBoostR2 response takes it: numpy's pairwise sum can differ in the last bit, and the
    weighted median then lands on another tree (weights 1, 2^-52, six of 2^-53 and 1: the
    second sorted tree's value by one total, the last one's by the other)."""
    return 0.5 * sequential_sum(weights)


def sequential_sum(values: np.ndarray) -> float:
    """The sum of ``values`` added one after another from the first (numpy's own sum is
    pairwise), in their dtype, as TMVA's Reader adds the trees' weights."""
    return float(np.cumsum(values)[-1]) if values.size else 0.0


def _weighted_median_score(per_tree: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """TMVA's AdaBoostR2 response: mean of the sorted responses around the weighted median."""
    n_trees = per_tree.shape[1]
    order = np.argsort(per_tree, axis=1, kind="stable")
    sorted_resp = np.take_along_axis(per_tree, order, axis=1)
    cum = np.cumsum(weights[order], axis=1)
    k = np.argmax(cum > half_tree_weight(weights), axis=1) + 1  # smallest count past half
    half = n_trees // 6
    lo = np.maximum(0, k - half - 1)
    hi = np.minimum(n_trees, k + half)
    cs = np.concatenate([np.zeros((per_tree.shape[0], 1)), np.cumsum(sorted_resp, axis=1)], axis=1)
    rows = np.arange(per_tree.shape[0])
    return (cs[rows, hi] - cs[rows, lo]) / (hi - lo)


class ForestBuilder:
    """Collects trees (local node indices) and concatenates them into a Forest once."""

    def __init__(self, n_features: int, base_score: float = 0.0, aggregation: str = "sum"):
        self.n_features = n_features
        self.base_score = base_score
        self.aggregation = aggregation
        # blocks of trees: their nodes one tree after another (left/right local to each
        # tree), their node counts and their weights
        self._blocks: list[tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]] = []
        self._count = 0

    def add(self, tree_weight: float = 1.0, **arrays: np.ndarray) -> None:
        """Add one tree: every array of NODE_ARRAYS, left/right local to the tree."""
        tree = {k: np.asarray(arrays[k], dtype=dt) for k, dt in NODE_ARRAYS.items()}
        self._blocks.append((tree, np.array([tree["feature"].size]), np.array([float(tree_weight)])))
        self._count += 1

    def add_trees(self, sizes: np.ndarray, tree_weights: np.ndarray, **arrays: np.ndarray) -> None:
        """Add trees of ``sizes`` nodes each: every array of NODE_ARRAYS holds their nodes
        one tree after another, left/right local to each tree."""
        block = {k: np.asarray(arrays[k], dtype=dt) for k, dt in NODE_ARRAYS.items()}
        sizes = np.asarray(sizes, np.int64)
        if block["feature"].size != int(sizes.sum()) or len(tree_weights) != sizes.size:
            raise ValueError("add_trees: the node arrays must hold sum(sizes) nodes, and one "
                             "weight a tree")
        self._blocks.append((block, sizes, np.asarray(tree_weights, np.float64)))
        self._count += sizes.size

    def __len__(self) -> int:
        return self._count

    def build(self, n_trees: int | None = None) -> Forest:
        """The Forest of the first ``n_trees`` trees added (all by default)."""
        left = self._count if n_trees is None else min(n_trees, self._count)
        parts, sizes, weights = [], [], []
        for block, block_sizes, block_weights in self._blocks:
            if left <= 0:
                break
            take = min(left, block_sizes.size)
            nodes = int(block_sizes[:take].sum())
            parts.append({k: v[:nodes] for k, v in block.items()})
            sizes.append(block_sizes[:take])
            weights.append(block_weights[:take])
            left -= take
        sizes = np.concatenate(sizes) if sizes else np.empty(0, np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        shift = np.repeat(offsets[:-1], sizes)  # each node's tree's first node
        arrays = {}
        for k, dt in NODE_ARRAYS.items():
            nodes = np.concatenate([p[k] for p in parts]) if parts else np.empty(0, dt)
            if k in ("left", "right"):
                nodes = np.where(nodes >= 0, nodes + shift, -1)
            arrays[k] = nodes.astype(dt)
        return Forest(**arrays, tree_offsets=offsets,
                      tree_weights=(np.concatenate(weights) if weights
                                    else np.empty(0, np.float64)),
                      n_features=self.n_features, base_score=self.base_score,
                      aggregation=self.aggregation)


class ClassForestBuilder:
    """One ForestBuilder a class; ``build`` stacks them class by class (see Forest.n_classes)."""

    def __init__(self, n_features: int, base_scores: np.ndarray):
        self.base_scores = [float(v) for v in base_scores]
        self.classes = [ForestBuilder(n_features) for _ in self.base_scores]

    def __len__(self) -> int:
        return len(self.classes[0])

    def build(self, n_rounds: int | None = None) -> Forest:
        """The multi-class Forest of the first ``n_rounds`` rounds (all by default)."""
        parts = [b.build(n_rounds) for b in self.classes]
        sizes = [p.n_nodes for p in parts]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        arrays = {}
        for k, dt in NODE_ARRAYS.items():
            pieces = [getattr(p, k) for p in parts]
            if k in ("left", "right"):
                pieces = [np.where(a >= 0, a + offsets[i], -1) for i, a in enumerate(pieces)]
            arrays[k] = np.concatenate(pieces).astype(dt)
        tree_offsets = np.concatenate(
            [[0], *[p.tree_offsets[1:] + offsets[i] for i, p in enumerate(parts)]]).astype(np.int64)
        return Forest(**arrays, tree_offsets=tree_offsets,
                      tree_weights=np.concatenate([p.tree_weights for p in parts]),
                      n_features=parts[0].n_features,
                      extra={"n_classes": len(parts), "base_scores": list(self.base_scores)})


TEXT_INDENT_LEVELS = 16  # deeper nodes keep this indent and say their depth


def _tree_indent(depth: int) -> str:
    """The indent of a node ``depth`` levels down: 4 spaces a level up to
    TEXT_INDENT_LEVELS, then the depth written out (a chain of 20,000 levels indented in
    full printed 800 MB)."""
    if depth <= TEXT_INDENT_LEVELS:
        return "  " + "    " * depth
    return "  " + "    " * TEXT_INDENT_LEVELS + f"[depth {depth}] "


def tree_text(forest: Forest, t: int, names: Sequence[str]) -> list[str]:
    """One tree as indented text: ``name < cut`` (left) and ``name >= cut`` (right)."""
    lines: list[str] = []
    stack: list[tuple[int, int, bool]] = [(forest.tree_slice(t).start, 0, False)]
    while stack:  # explicit stack: deep trees must not exhaust Python's recursion limit
        node, depth, right = stack.pop()
        indent = _tree_indent(depth)
        if right:
            lines.append(f"{_tree_indent(depth - 1)}else:")
        if forest.left[node] < 0:
            lines.append(f"{indent}leaf: {forest.value[node]:.6g} (cover {forest.cover[node]:.4g})")
            continue
        name = names[int(forest.feature[node])]
        cut = float(forest.threshold[node])
        missing = "missing goes left" if forest.missing_left[node] else "missing goes right"
        # the cut in the digits that read back as it (.6g sent 0.372192 the other way of 0.37219238)
        lines.append(f"{indent}if {name} < {cut!r}:   [{missing}, gain {forest.gain[node]:.4g}]")
        stack.append((int(forest.right[node]), depth + 1, True))
        stack.append((int(forest.left[node]), depth + 1, False))
    return lines


def __getattr__(name: str) -> Any:
    # old names only: imported when one is used
    from ._lazy import moved

    return moved(__name__, name, {"load_model": "hepbdt.persistence",
                                  "atomic_write_text": "hepbdt._util"})
