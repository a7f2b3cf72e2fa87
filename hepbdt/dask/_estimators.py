"""DaskBDTClassifier and DaskBDTRegressor: the in-memory estimators' options, fitted on a
Dask cluster, giving an ordinary hepbdt model.

The fit (``_DaskFit``) cuts the training events into one contiguous part per worker (in
the order of the dask array's blocks), and every part lives on its worker for the whole fit
(:mod:`hepbdt.dask._parts`). Bin edges are memory's, of the events (or of memory's draw of
them) the parts send the client (or are given); the loss's initial sums from exact,
mergeable integer parts, the weights' total and
mean |w| from numpy's own sums rebuilt from the parts (the softmax's class weights, and the
class normalisation's, from the sums memory makes, rebuilt from the parts). Gradient and
newton boosting, of two classes, a regression, or K classes (K trees a round, one a class,
each from the scores of the round before), grow each tree with
:mod:`hepbdt.engine.data_parallel`: the parts quantise their channels as the whole sample
would, send the histograms of the nodes being split, which are summed pairwise on the
cluster; the client chooses the splits and sends them back. Leaf-wise growth (``max_leaves``,
``max_depth`` None or a limit) runs memory's best-first loop on the client
(``SummedLeafTree``): a round trip a split whose children get histograms, each part sending
its left child's. Leaf sums run through the parts in event order, each continuing the last
one's running sums. The model is the in-memory model (``quantised_histograms=True``, the
same bin edges) bit for bit.

``n_trees="auto"`` (the default, as in memory) and ``early_stopping`` hold out memory's
events: each part replays the fit generator's draw over the whole sample from its first row
(``PCG64.advance``; one 64-bit draw a value), or hashes the event numbers given to ``fit``;
the held-out events keep their given weights, class-normalised over the whole sample, and
the normalisation and the negative-weight policy then see the training events only. After
each round every part adds the trees to its held-out events' scores and sends the pieces of
their loss (the losses' chunked partial sums, or numpy's pairwise sum of the terms), which
the client adds as memory does (``ChunkedSum``, ``PairwiseSum``) and hands to memory's own
stop rule (``_Watch``): the same losses to the bit, the same stop and best iteration. An
``eval_set`` (numpy, or dask arrays computed to the client) is watched on the client as in
memory. Row subsampling (``subsample``, ``subsample_mode``) draws each round's events on the
client with memory's generator and function (``draw_rows``) over the training weights it
gathers once, and sends each part its share (packed bits of the drawn events, or their
counts), from which the part computes memory's tree weights.

The AdaBoost family (adaboost, realadaboost, eps, bagging, and SAMME for more than two
classes) grows its trees on float histograms chained through the parts in event order, its
sums numpy's own rebuilt from the parts (:mod:`hepbdt.dask._adaboost`, which says why),
each tree on memory's resample when asked (uniform or Poisson; bagging's bootstrap): the
in-memory model bit for bit too.

What the in-memory estimators do that these do not (each refused with a ParameterError
naming the option): the AdaBoost family's weighted draw (``subsample_mode="weighted"``, a
multinomial over every event's boosted weight, each tree) and its leaf-wise growth
(``max_leaves``: its float histograms would pass through every part in event order at each
split), float histograms for gradient and newton boosting (quantised ones for the
AdaBoost family, which has none), losses whose leaves are medians (absolute, huber,
pseudo_huber), the negative-weight policies that need every event of a class ("regress",
"pair": a fit with negative weights must choose "keep", "abs", "ignore" or, for the AdaBoost
family, "inverse_boost"), the decorrelation (flatness loss, uBoost, the DDT map),
depth-wise trees deeper than MAX_DASK_DEPTH (12), and AdaBoost trees so deep that memory
would build a level's histograms from the events (``max_depth``: with two classes, depth 8
up to 200 features, depth 10 up to 85).
"""

from __future__ import annotations

import inspect
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._sklearn import column_vector_warning
from .._util import (
    Progress,
    check_read_records,
    check_weights,
    check_X,
    column_positions,
    running_sum_slack,
    user_stacklevel,
    warn_float32_steps,
    warn_unnamed_columns,
)
from ..binned import BinnedMatrix
from ..boosting._loop import (
    BoostResult,
    _checked_training_loss,
    _draw,
    _grown,
    _OneScore,
    _Watch,
    add_tree,
    child_weight_floor,
    drawn_events,
    node_sums,
    update_scores,
)
from ..engine._types import check_n_events
from ..engine.binning import SUBSAMPLE_FOR_EDGES, BinMapper, check_edges, fit_bin_edges
from ..engine.data_parallel import (
    ChunkedSum,
    PairwiseSum,
    SummedLeafTree,
    SummedTree,
    add_histograms,
    add_leaf_results,
    exact_level_capacity,
)
from ..engine.grower import sample_features
from ..engine.histogram import Quantiser
from ..engine.split import SplitParams
from ..engine.sums import exact_sum_of_parts
from ..estimators import (
    ADABOOST_BOOSTINGS,
    BDTClassifier,
    BDTRegressor,
    ParameterError,
    _check_loss_total,
    _constructor,
    _Param,
    _whole_or_unchanged,
    check_class_totals,
    hold_out_ratio_refusal,
    quantised_option,
)
from ..io.lazy import LazyDataset
from ..model import ClassForestBuilder, ForestBuilder
from . import _parts
from ._adaboost import AdaBoostOnParts
from ._cluster import Cluster, connect, require_dask

__all__ = ["DaskBDTClassifier", "DaskBDTRegressor"]

# negative_weights keeps memory's default ("regress"), which a sample with negative weights
# refuses, so that no fit drops to another policy unasked; n_trees memory's "auto" (held-out
# events and early stopping, memory's bit for bit; the AdaBoost family's fixed count).
# quantised_histograms "auto" means something else on a cluster:
# gradient and newton boosting always sum quantised histograms on a cluster (memory's True),
# the AdaBoost family float ones (its only kind, as memory's "auto").
DASK_DEFAULTS = {"quantised_histograms": "auto"}
MAX_DASK_DEPTH = 12  # a level's summed histograms: 2**11 nodes x features x 2 kB at most
SUPPORTED_LOSSES = ("deviance", "logistic", "squared", "softmax")
# Up to this many parts the steps of a tree are actor calls (straight to the workers, a few
# ms a round trip) and the client adds the parts' histograms; beyond, tasks through the
# scheduler, the histograms summed pairwise on the cluster and the leaf sums chained from
# worker to worker, so the client's traffic does not grow with the workers.
ACTOR_PARTS = 4
EPS = float(np.finfo(np.float64).eps)  # a running sum of n terms is within n EPS sum |w|


def _dask_constructor(base: type, doc: str):
    """``base``'s options with the defaults of DASK_DEFAULTS."""
    params = [_Param(p.name, DASK_DEFAULTS.get(p.name, p.default), p.annotation)
              for p in inspect.signature(base.__init__).parameters.values() if p.name != "self"]
    return _constructor(tuple(params), doc)


class _DaskMixin:
    """The Dask fit and the dask-array predictions, shared by both estimators."""

    _local_class: type

    def _check_dask_options(self) -> None:
        def refuse(name: str, why: str) -> None:
            raise ParameterError(name, f"{name}={getattr(self, name)!r}: {why} "
                                       f"({type(self).__name__})")

        depth, leaves = self._depth_limit(), self._leaf_limit()
        if leaves is not None and self._adaboost:
            refuse("max_leaves", f"leaf-wise growth of boosting={self.boosting!r} is not "
                   "distributed yet: its float histograms would pass through every worker "
                   "in event order at each split, a chain of round trips a leaf (gradient "
                   "and newton boosting take max_leaves)")
        if leaves is None and (depth is None or depth > MAX_DASK_DEPTH):
            refuse("max_depth", f"the Dask fit grows depth-wise to at most {MAX_DASK_DEPTH} "
                   "(leaf-wise, with max_leaves, to any depth)")
        quantised = quantised_option(self.quantised_histograms)
        if quantised is False and not self._adaboost:
            refuse("quantised_histograms", "the Dask fit of gradient and newton boosting sums "
                   "integer histograms (exact in any order): give 'auto' or True")
        if quantised is True and self._adaboost:
            refuse("quantised_histograms", f"boosting={self.boosting!r} grows its trees on float "
                   "histograms (as in memory): give 'auto' or False")
        if self._adaboost and self.subsample_mode == "weighted":
            refuse("subsample_mode", "the AdaBoost family's weighted draw is not distributed: "
                   "each tree draws from every event's boosted weight at once (a "
                   "multinomial), which would send 8 bytes an event a tree to the client; "
                   "give 'uniform' or 'poisson'")
        if self.boosting == "newton" and self.min_node_size not in ("auto", 0, 0.0):
            refuse("min_node_size", "quantised newton histograms carry no event weight: use "
                   "min_child_weight")
        if getattr(self, "decorrelation", None) is not None:
            refuse("decorrelation", "the decorrelation (flatness loss, uBoost) is not "
                   "distributed yet")
        if getattr(self, "decorrelation_map", None) is not None:
            refuse("decorrelation_map", "the DDT map is not distributed yet")
        if not self._adaboost and self._make_loss().name not in SUPPORTED_LOSSES:
            refuse("loss", f"the Dask fit takes the losses {SUPPORTED_LOSSES}")

    # -- fitting --------------------------------------------------------------------------
    def _dask_fit(self, X: Any, y: Any, sample_weight: Any, client: Any, bin_edges: Any,
                  classes: Any, names: Any = None, definitions: Any = None,
                  eval_set: Any = None, event: Any = None, types: Any = None) -> Any:
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        client = connect(client)
        if names is None and hasattr(X, "columns"):  # a dask DataFrame names its features,
            names = [str(c) for c in X.columns]      # as a pandas one does in memory
        X = da.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d (events x features), got {X.ndim} dimensions")
        if X.shape[1] == 0:  # memory's error, with the whole sample's event count
            check_X(np.empty((_n_rows(X), 0), dtype=np.float32))
        X = X.rechunk({1: -1})
        blocks_of = X.chunks[0]
        y = _aligned(da.asarray(y), blocks_of, "y")
        w = (None if sample_weight is None
             else _aligned(da.asarray(sample_weight), blocks_of, "sample_weight"))
        e = None if event is None else _event_numbers(da.asarray(event), X)
        if types is not None and not (isinstance(types, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in types.items())):
            raise TypeError("branch_types must map branch names to type texts, as "
                            f"LazyDataset.branch_types does, not {type(types).__name__}")
        self._validate_params()
        self._check_dask_options()
        self._check_stopping(eval_set is not None)  # before any work on the cluster
        info = _workers(client)
        workers = sorted(info)
        n_parts = min(len(workers), len(blocks_of))
        groups = np.array_split(np.arange(len(blocks_of)), n_parts)
        blocks = {"X": client.compute(X.to_delayed().ravel().tolist()),
                  "y": client.compute(y.to_delayed().ravel().tolist()),
                  "w": None if w is None else client.compute(w.to_delayed().ravel().tolist()),
                  "event": None if e is None else client.compute(e.to_delayed().ravel().tolist())}
        cluster = Cluster(client, workers[:n_parts], f"hepbdt-fit-{uuid.uuid4().hex}")
        cluster.threads = [int(info[a].get("nthreads", 1)) if self.n_jobs in (None, -1)
                           else int(self.n_jobs) for a in workers[:n_parts]]
        try:
            if names is not None and len(names) != X.shape[1]:
                raise ValueError(f"{len(names)} feature names for {X.shape[1]} features")
            evals = _computed_eval_set(client, eval_set)
            self._branch_types = types  # for _set_fitted, as a hepbdt Dataset's X in memory
            return self._fit_parts(cluster, groups, blocks, bin_edges, classes, int(X.shape[1]),
                                   names, definitions or {}, evals)
        finally:
            cluster.close()
            del blocks

    def _load(self, cluster: Cluster, groups, blocks: dict[str, Any], classes, m: int,
              ratio: float | None) -> list[dict[str, Any]]:
        """Each part's blocks, checked and kept on its worker (``_parts.load``); memory's
        refusals of the whole sample."""
        def of(name: str, i: int):
            return None if blocks[name] is None else [blocks[name][b] for b in groups[i]]

        loaded = cluster.gather([
            cluster.submit_to(i, _parts.load, of("X", i), of("y", i), of("w", i), classes,
                              cluster.threads[i], ratio is None, of("event", i))
            for i in range(len(groups))])
        _raise_first_refusal(loaded)
        if not any(p["rows"] for p in loaded):  # parts may be empty, not the whole sample
            _refuse_no_events(m)
        if not any(p["nonzero"] for p in loaded):  # memory's check_weights(training=True)
            check_weights(np.zeros(1), 1, training=True)
        return loaded

    def _fit_parts(self, cluster: Cluster, groups, blocks, bin_edges, classes, m: int, names,
                   definitions, eval_set):
        ratio = self._class_ratio()
        loaded = self._load(cluster, groups, blocks, classes, m, ratio)
        _warn_float32_resolution(loaded, names)
        hashed = blocks["event"] is not None
        # the parts hold their own copies now: the futures of the float blocks (all of X,
        # y, w and event) were kept on the workers for the whole fit
        blocks.clear()
        evals = self._eval_sets(eval_set, names) if eval_set is not None else []
        # events of weight 0 count as none, as in memory
        plan = self._tree_plan(sum(p.get("n_nonzero", 0) for p in loaded), bool(evals))
        if self._adaboost and (evals or plan.hold_out):  # memory's ``_run_adaboost``
            raise ParameterError("boosting", "early stopping and eval_set are available for "
                                 f"boosting='gradient' and 'newton', not for "
                                 f"boosting={self.boosting!r}")
        rng = np.random.default_rng(self.random_state)
        parts, held_weight = self._split(cluster, loaded, plan, rng, hashed, ratio)
        self._weights(cluster, parts, ratio)
        if not any(p["positive"] for p in parts):
            raise ValueError("no event with a positive weight is left to train on")
        counts = np.array([p["n"] for p in parts], np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        n = int(counts.sum())
        check_n_events(n)
        events = sum(p["n_nonzero"] for p in parts)  # a weight of 0 is no event, as in memory
        self.min_node_size_ = self._resolved_node_size(events)
        self._set_growth()
        mapper = self._mapper(cluster, bin_edges, m, offsets)
        if self._adaboost:
            forest, result, traffic = self._train_adaboost(cluster, mapper, offsets, counts, plan)
        else:
            forest, result, traffic = self._train_boosting(
                cluster, mapper, offsets, counts, plan, rng,
                evals[-1] if evals else ([p["n_valid"] for p in parts], held_weight), events)
        if not any(f >= 0 for f in forest.feature):
            import warnings  # noqa: I001 -- only when the model made no split

            lengths = counts.tolist()  # memory's sums of the float32 or float64 weights
            sums = _vector_sums(cluster, {"weight": PairwiseSum(lengths, cast=True),
                                          "abs_weight": PairwiseSum(lengths, cast=True)})
            warnings.warn(self._no_split_hint(sums["weight"], sums["abs_weight"] / n),
                          stacklevel=user_stacklevel())
        if any(p["nan"] for p in parts):
            forest.extra["nan_in_training"] = True
        self._set_fitted(forest, None if names is None else [str(n) for n in names],
                         definitions, result, mapper)
        # the held-out events are memory's one eval set, which the loop watched
        self._record_evals(evals or ([None] if plan.hold_out else []), result)
        # memory's words (saved with the model)
        evaluated = None if result.validation_loss is None else len(result.validation_loss)
        self.n_trees_reason_ = plan.reason(forest.n_rounds, result.best_iteration,
                                           forest.trees_per_round, evaluated, forest.extra)
        self.dask_bytes_ = traffic
        self.dask_parts_ = [(int(o), int(c)) for o, c in zip(offsets, counts, strict=True)]
        return self

    def _split(self, cluster: Cluster, loaded: list[dict[str, Any]], plan, rng, hashed: bool,
               ratio: float | None) -> tuple[list[dict[str, Any]], float]:
        """Hold out memory's validation events (``plan.hold_out``: ``_held_out``'s draw over
        the whole sample, or the hashed event numbers; their weights class-normalised over
        the whole sample, then with a class ratio over themselves), then the negative-weight
        policy on the training events (``_parts.split``): the parts' training and held-out
        counts, and numpy's sum of the held-out weights (0.0: none held out)."""
        specs = [None] * len(loaded)
        factors = None
        self.validation_draw_ = None
        if plan.hold_out:
            rows = np.concatenate([[0], np.cumsum([p["rows"] for p in loaded])])
            state = None if hashed else rng.bit_generator.state
            self.validation_draw_ = {"n": int(rows[-1]), "fraction": self.validation_fraction,
                                     "state": state}
            specs = [{"state": state, "row": int(r), "fraction": self.validation_fraction}
                     for r in rows[:-1]]
            if not hashed:  # the training's draws follow the hold-out's, as in memory
                rng.bit_generator.advance(int(rows[-1]))
        if ratio is not None:  # memory's _given_weights: checked before the hold-out and policy
            acts = self.negative_weights not in ("keep", "inverse_boost") and any(
                p["negative"] for p in loaded)
            factors = self._class_factors(cluster, loaded, ratio, bool(plan.hold_out) and not acts)
            if factors is None and plan.hold_out:  # memory's refusal: no ratio to keep
                raise ValueError(hold_out_ratio_refusal(self.sig_to_bkg_fraction))
        n_classes = max(2, self.classes_.size) if self._estimator_type == "classifier" else 0
        # memory checks the training events' normalised given weights before the policy acts
        defer = bool(plan.hold_out) and factors is not None and acts
        parts = cluster.gather([cluster.submit_to(i, _parts.split, specs[i], factors,
                                                  self.negative_weights, n_classes, not defer)
                                for i in range(len(loaded))])
        # Memory words a normalised weight out of range by whether any given weight is.
        plain = not all(q["given_in_range"] for q in parts)
        _raise_first_refusal([{"rows": p["rows"], "refused": q["refused_plain" if plain else "refused"]}
                              for p, q in zip(loaded, parts, strict=True)])
        total = 0.0
        if plan.hold_out:
            held = [p["n_valid"] for p in parts]
            total = _vector_sums(cluster, {"valid_weight": PairwiseSum(held)})["valid_weight"]
            _check_loss_total(np.array([total]), f"the {sum(held)} event(s) that "
                              f"validation_fraction={self.validation_fraction!r} held out of "
                              f"{int(sum(p['rows'] for p in loaded))}",
                              "raise validation_fraction, or give an eval_set")
            if n_classes:  # memory's _check_classes_left (numpy's sums of the parts' sums)
                after = np.sum([p["class_train"] for p in parts], axis=0)
                valid = np.sum([p["class_valid"] for p in parts], axis=0)
                self._refuse_classes_held_out(after + valid, after, valid, sum(held),
                                              int(sum(p["rows"] for p in loaded)))
            if factors is not None:  # the ratio over the held-out events themselves
                self._normalise_held_out(cluster, parts, ratio)
                total = _vector_sums(cluster, {"valid_weight": PairwiseSum(held)})["valid_weight"]
        if defer:
            self._check_given_training(cluster, parts, ratio)
            acted = cluster.gather([cluster.submit_to(i, _parts.apply_policy,
                                                      self.negative_weights)
                                    for i in range(len(parts))])
            parts = [{**p, **a} for p, a in zip(parts, acted, strict=True)]
        if any(p["negative"] for p in parts) and self.negative_weights in ("regress", "pair"):
            raise ParameterError("negative_weights", f"negative_weights={self.negative_weights!r} "
                                 "needs every event of a class at once; the Dask fit takes "
                                 "'keep', 'abs', 'ignore'" + (" or 'inverse_boost'" if
                                                            self._adaboost else ""))
        return parts, total

    def _normalise_held_out(self, cluster: Cluster, parts: list[dict[str, Any]],
                            ratio: float) -> None:
        """Memory's ``_held_out_weights``: the held-out weights normalised to ``ratio`` over
        the held-out events alone, from numpy's sums of each class's (and |w|'s, for the
        rounding bound of ``positive_beyond_rounding``) rebuilt from the parts' pieces."""
        signal = [p["valid_signal"] for p in parts]
        background = [p["n_valid"] - k for p, k in zip(parts, signal, strict=True)]
        sums = _vector_sums(cluster, {
            "valid_signal": PairwiseSum(signal), "valid_background": PairwiseSum(background),
            "valid_signal_abs": PairwiseSum(signal),
            "valid_background_abs": PairwiseSum(background)})
        s, b = sums["valid_signal"], sums["valid_background"]
        if not (s > running_sum_slack(sum(signal), sums["valid_signal_abs"])
                and b > running_sum_slack(sum(background), sums["valid_background_abs"])):
            raise ValueError(hold_out_ratio_refusal(self.sig_to_bkg_fraction))
        n = float(sum(p["valid_nonzero"] for p in parts))
        factors = (n * ratio / (1.0 + ratio) / s, n / (1.0 + ratio) / b)
        cluster.gather([cluster.submit_to(i, _parts.scale_valid, factors)
                        for i in range(len(parts))])

    def _mapper(self, cluster: Cluster, bin_edges: Any, m: int, offsets: np.ndarray) -> BinMapper:
        """The bin edges: given, or memory's (``fit_bin_edges``) of the same events: those
        of non-zero weight, and above SUBSAMPLE_FOR_EDGES of them memory's draw of them,
        each part sending the client its events of the draw."""
        if bin_edges is not None:
            return BinMapper.from_edges(list(check_edges(bin_edges, m)))
        seed = 0 if self.random_state is None else int(self.random_state)
        parts = range(len(offsets))
        counts = cluster.gather([cluster.submit_to(i, _parts.edge_events) for i in parts])
        every = sum(nonzero for nonzero, _ in counts) == 0  # memory's edges then see them all
        sizes = np.array([n if every else nonzero for nonzero, n in counts], dtype=np.int64)
        picks: list[np.ndarray | None] = [None] * len(sizes)
        if sizes.sum() > SUBSAMPLE_FOR_EDGES:
            pick = np.sort(np.random.default_rng(seed).choice(int(sizes.sum()),
                                                              SUBSAMPLE_FOR_EDGES, replace=False))
            bounds = np.concatenate([[0], np.cumsum(sizes)])
            picks = [pick[(pick >= lo) & (pick < hi)] - lo
                     for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
        pieces = cluster.gather([cluster.submit_to(i, _parts.edge_rows, picks[i], every)
                                 for i in parts])
        X = np.concatenate([piece[0] for piece in pieces])
        w = np.concatenate([piece[1] for piece in pieces])
        return BinMapper.from_edges(fit_bin_edges(X, w, int(self.max_bins), int(self.n_cuts),
                                                  seed))

    @property
    def _adaboost(self) -> bool:
        """Whether the booster is of the AdaBoost family (exact histograms)."""
        return self.boosting in ADABOOST_BOOSTINGS

    def _class_ratio(self) -> float | None:
        """The signal-to-background ratio of ``_normalise_classes`` (None: no normalisation;
        more than two classes with a ratio refused with memory's error)."""
        f = getattr(self, "sig_to_bkg_fraction", None)
        multiclass = getattr(self, "_multiclass", False)
        if f == "tmva":
            f = None if multiclass else 1.0
        elif f == "auto":
            f = 1.0 if self._adaboost and not multiclass else None
        if f is not None and multiclass:
            raise self._ratio_of_many_classes()
        return f

    @staticmethod
    def _class_factors(cluster: Cluster, parts: list[dict[str, Any]], ratio: float,
                       required: bool = True) -> tuple[float, float] | None:
        """``_normalise_classes``'s factors (signal's, background's) of the parts' events
        (counted by "n" and "signal"), from numpy's sums of each class's weights rebuilt
        from the parts' pieces; a class without positive weight raises memory's error, or
        gives None when not ``required`` (memory's ``_given_weights`` with a policy that acts)."""
        signal = [p["signal"] for p in parts]
        sums = _vector_sums(cluster, {
            "signal": PairwiseSum(signal),
            "background": PairwiseSum([p["n"] - k for p, k in zip(parts, signal, strict=True)])})
        s, b = sums["signal"], sums["background"]
        # beyond the rounding of each sum, as memory's positive_beyond_rounding
        slack = _DaskMixin._class_totals(cluster, 2)[1]
        if not (s > slack[1] and b > slack[0]):
            if not required:
                return None
            raise ValueError(f"both classes need a positive sum of weights; signal {s}, "
                             f"background {b}")
        n = float(sum(p["n_nonzero"] for p in parts))  # events of weight 0: none, as in memory
        return n * ratio / (1.0 + ratio) / s, n / (1.0 + ratio) / b

    def _weights(self, cluster: Cluster, parts: list[dict[str, Any]], ratio: float | None) -> None:
        """The parts' training weights: normalised per class as ``_normalise_classes`` does
        (``_class_factors``), and cast to float32 for gradient and newton boosting, float64
        for the AdaBoost family."""
        if self._estimator_type == "classifier":  # memory's _check_class_weights, in float64
            self._refuse_classes_in_rounding(cluster, max(2, self.classes_.size))
        factors = None if ratio is None else self._class_factors(cluster, parts, ratio)
        acted = (self.negative_weights in ("abs", "ignore")
                 and any(p["negative"] for p in parts))
        dtype = "float64" if self._adaboost else "float32"
        _raise_refused(cluster.gather([cluster.submit_to(i, _parts.weights, factors, dtype,
                                                         self.negative_weights if acted else None)
                                       for i in range(len(parts))]))

    def _check_given_training(self, cluster: Cluster, parts: list[dict[str, Any]],
                              ratio: float) -> None:
        """Memory's ``_given_weights`` of the training events after the hold-out, before a
        policy that acts: their weights normalised over themselves (as given where a class's
        sum is not positive) and checked against float32's range, in memory's words."""
        factors = self._class_factors(cluster, parts, ratio, required=False) or (1.0, 1.0)
        _raise_refused(cluster.gather([cluster.submit_to(i, _parts.given_check, factors)
                                       for i in range(len(parts))]))

    def _train_boosting(self, cluster: Cluster, mapper, offsets: np.ndarray, counts: np.ndarray,
                        plan, rng: np.random.Generator, valid: Any, events: int):
        """Gradient or newton boosting on the binned parts: (forest, record, bytes).
        ``valid``: the checked eval set the loop watches (X, y, w, a tuple of arrays), or
        the parts' counts of held-out events (a list) and numpy's sum of their weights;
        ``events``: the training events of a weight other than 0."""
        loss = self._make_loss()
        booster = self._make_booster(loss)
        one_score = getattr(loss, "n_classes", 1) == 1
        if self._estimator_type == "classifier":  # memory's check_class_balance
            check_class_totals(self._chained_class_sums(cluster, max(2, self.classes_.size),
                                                        magnitude=True))
        lengths = counts.tolist()
        sums = {"weight": PairwiseSum(lengths, cast=True),
                "abs_weight": PairwiseSum(lengths, cast=True)}
        held = isinstance(valid[0], list) and plan.hold_out
        layout = None
        if held:  # how the held-out events' loss terms are added up in memory
            layout = (PairwiseSum(valid[0]) if loss.loss_chunk is None
                      else ChunkedSum(valid[0], loss.loss_chunk))
        binned = cluster.gather([cluster.submit_to(
            i, _parts.bin_part, int(offsets[i]), mapper.edges_, booster, self._depth_limit(),
            one_score, {k: v.requests(i) for k, v in sums.items()},
            None if layout is None else layout.requests(i), self._leaf_limit())
            for i in range(len(counts))])
        totals = {k: v.total([b["pieces"][k] for b in binned]) for k, v in sums.items()}
        if len(cluster.workers) <= ACTOR_PARTS:
            cluster.start_actors()
        n = int(counts.sum())
        base = self._base_scores(cluster, loss, binned)
        # memory's np.sum(w_tree, dtype=np.float64) and np.sum(np.abs(w_tree), ...)
        draws = _Draws(self, cluster, counts, rng, totals["weight"], totals["abs_weight"], events)
        multiclass = not one_score
        watch = None
        if held:
            watch = _PartsWatch(layout, valid[1], base, plan.rounds, self.tol, multiclass)
        elif not isinstance(valid[0], list):
            codes = mapper.transform(valid[0])
            watch = _ClientWatch((codes, valid[1], valid[2]), base, plan.rounds, self.tol,
                                 booster.loss if multiclass else _OneScore(booster.loss))
        with Progress(plan.n_trees, "training", enabled=True if self.verbose else None,
                      unit="rounds" if multiclass else "trees") as progress:
            builder, train_loss, traffic = self._boost(cluster, booster, mapper, base, n, draws,
                                                       plan, rng, watch, progress)
            progress.moveto(plan.n_trees, "" if watch is None or watch.watch.best_iter is None
                            else f"early stop at {watch.watch.best_iter + 1}")
        result = BoostResult(builder, float(base[0]) if one_score else 0.0,
                             np.asarray(train_loss),
                             None if watch is None else np.asarray(watch.watch.losses),
                             None if watch is None else watch.watch.best_iter)
        # the model is cut at its best iteration only when early stopping was asked for
        keep = (None if result.best_iteration is None or plan.rounds is None
                else result.best_iteration + 1)
        forest = builder.build(keep)
        forest.extra["loss"] = booster.loss.name
        return forest, result, traffic

    def _train_adaboost(self, cluster: Cluster, mapper, offsets: np.ndarray, counts: np.ndarray,
                        plan):
        """The AdaBoost family on the binned parts (``_adaboost.AdaBoostOnParts``)."""
        m = mapper.n_bins_.size
        n_classes = max(2, self.classes_.size)
        channels = n_classes + 1 if n_classes > 2 else 3
        capacity = exact_level_capacity(m, channels)  # nodes of a level held at once
        depth = self._depth_limit()
        if 2 ** (depth - 1) > capacity:
            raise ParameterError("max_depth", f"max_depth={depth!r}: with {m} features "
                                 "the in-memory grower builds the deepest levels' float "
                                 "histograms from the events, which the Dask fit does not; "
                                 f"give max_depth <= {capacity.bit_length()}")
        sent = _Traffic(len(counts))
        runner = AdaBoostOnParts(self, cluster, mapper, counts.tolist(), plan.n_trees, sent)
        cluster.gather([cluster.submit_to(i, _parts.bin_exact, int(offsets[i]), mapper.edges_,
                                          depth, runner.spec())
                        for i in range(len(counts))])
        if len(cluster.workers) <= ACTOR_PARTS:
            cluster.start_actors()
        if n_classes > 2:  # ``run_samme``: a class without weight cannot be voted for
            self._refuse_classes_without_weight(self._chained_class_sums(cluster, n_classes))
        forest, result = runner.run(np.random.default_rng(self.random_state))
        return forest, result, {"levels": sent.levels, "trees": runner.tree_bytes}

    def _refuse_classes_in_rounding(self, cluster: Cluster, n_classes: int) -> None:
        """Memory's ``_check_class_weights``: every class's net weight must exceed the
        rounding of its sum (events x eps x its |weights|)."""
        sums, slack = self._class_totals(cluster, n_classes)
        if n_classes > 2:
            self._refuse_classes_without_weight(sums, slack)
        elif not np.all(sums > slack):
            raise ValueError(f"both classes need a positive sum of weights; signal {sums[1]}, "
                             f"background {sums[0]}")

    @staticmethod
    def _class_totals(cluster: Cluster, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        """Each class's sum of weights and the rounding bound of that sum (its events x eps
        x its sum of |weights|), from one pass through the parts in event order."""
        totals = np.zeros((3, n_classes))
        for i in range(len(cluster.workers)):
            totals = cluster.gather(cluster.submit_to(i, _parts.class_sums, totals))
        return totals[0], totals[2] * EPS * totals[1]

    @staticmethod
    def _chained_class_sums(cluster: Cluster, n_classes: int,
                            magnitude: bool = False) -> np.ndarray:
        """Each class's sum of weights (|weights| with ``magnitude``), added through the
        parts in event order (memory's ``np.bincount``)."""
        sums = np.zeros(n_classes)
        for i in range(len(cluster.workers)):
            sums = cluster.gather(cluster.submit_to(i, _parts.class_sums, sums, magnitude))
        return sums

    def _base_scores(self, cluster: Cluster, loss, binned: list[dict[str, Any]]) -> np.ndarray:
        """The initial scores (K,): a one-score loss's from exact sums of the parts; the
        softmax's from the class weights summed through the parts in event order, as memory's
        ``np.bincount`` adds them (the class sums as weights of one event a class give
        memory's scores from the same numbers)."""
        n_classes = getattr(loss, "n_classes", 1)
        if n_classes == 1:
            init = {k: exact_sum_of_parts(sum(b["init"][k] for b in binned))
                    for k in binned[0]["init"]}
            return np.array([float(loss.init_score_of_sums(init))])
        sums = self._chained_class_sums(cluster, n_classes)
        self._refuse_classes_without_weight(sums)  # as memory names the classes
        return np.asarray(loss.init_scores(np.arange(n_classes), sums), dtype=np.float64)

    def _split_params(self, booster) -> SplitParams:
        """The split search's options, as memory's ``_run`` sets them."""
        newton = self.boosting == "newton"
        return SplitParams(booster.criterion, reg_lambda=self.reg_lambda if newton else 0.0,
                           reg_alpha=self.reg_alpha if newton else 0.0,
                           min_child_hessian=self.min_child_weight if newton else 0.0,
                           min_split_gain=self.min_split_gain)

    def _boost(self, cluster: Cluster, booster, mapper, base: np.ndarray, n: int,
               draws: _Draws, plan, rng: np.random.Generator, watch: Any, progress: Progress):
        """The boosting loop of ``run_boosting`` (quantised, depth-wise; one tree a round, or
        K a round, one a class, with a softmax loss), its per-event work on the parts, each
        round's events drawn by ``draws``, the validation loss watched by ``watch`` (None:
        none), the rounds counted on ``progress``: (builder, training losses, bytes)."""
        n_classes = base.size
        params = self._split_params(booster)
        m = mapper.n_bins_.size
        builder = (ClassForestBuilder(m, base) if n_classes > 1
                   else ForestBuilder(m, float(base[0])))
        train_loss, traffic = [], {"levels": [], "trees": []}
        draw = draws.next()
        beginning = draws.begin(base, None, draw.mean_abs, 0, draw)
        for it in range(plan.n_trees):
            for k in range(n_classes):
                began = cluster.gather(beginning)
                if k == 0:  # a round's channels, weights and features, once for its K trees
                    if it == 0:
                        lowest_loss, grown = _mean_loss(began), False
                    else:
                        train_loss.append(_checked_training_loss(
                            _mean_loss(began), it, "round" if n_classes > 1 else "tree",
                            train_loss[0] if train_loss else None))
                        grown = grown or _grown(lowest_loss, train_loss[-1], it, booster)
                        lowest_loss = min(lowest_loss, train_loss[-1])  # memory's warning
                        if watch is not None and watch.end_round(it - 1, began):
                            return builder, train_loss, traffic  # the last loss is the final one
                    if it and progress.shown:  # the rounds done and the loss after them
                        progress.moveto(it, f"loss after {it}: {_mean_loss(began):.5g}")
                    params.min_child_weight = child_weight_floor(
                        self.min_node_size_, draw.total, draw.drawn, self._node_events(),
                        draw.abs_total)
                    features = sample_features(np.ones(m, np.bool_), self.colsample_bytree, rng)
                max_abs = tuple(np.max([b["max_abs"] for b in began], axis=0).tolist())
                sent = _Traffic(len(cluster.workers))
                tree, applied = self._grow(cluster, mapper, params, features, rng, n,
                                           it * n_classes + k, max_abs, sent)
                running = self._leaf_sums(cluster, applied)
                # The parts add this tree and start the next one from the summed leaves at
                # once, without waiting for the client (each computes the leaf values as it
                # does); the next round's events are drawn after this tree's draws, as in memory.
                tree_draw = draw
                if it + 1 == plan.n_trees and k + 1 == n_classes:
                    beginning = cluster.run(_parts.finish, args=(running, draw.mean_abs))
                elif k + 1 < n_classes:
                    beginning = draws.begin(None, running, draw.mean_abs, k + 1, None)
                else:
                    draw = draws.next()
                    beginning = draws.begin(None, running, tree_draw.mean_abs, 0, draw)
                leaf_totals = cluster.gather(running)
                values = _parts.leaf_values(booster, tree, leaf_totals, tree_draw.mean_abs)
                add_tree(builder.classes[k] if n_classes > 1 else builder, tree, values, mapper,
                         cover=node_sums(tree, leaf_totals)[2])
                if watch is not None:
                    watch.add(k, tree, values)
                sent.leaves(leaf_totals)
                traffic["levels"].extend(sent.levels)
                traffic["trees"].append(sent.tree())
        final = cluster.gather(beginning)
        train_loss.append(_checked_training_loss(_mean_loss(final), plan.n_trees,
                                                 "round" if n_classes > 1 else "tree",
                                                 train_loss[0] if train_loss else None))
        if watch is not None:
            watch.end_round(plan.n_trees - 1, final)
        return builder, train_loss, traffic

    def _grow(self, cluster: Cluster, mapper, params: SplitParams, features: np.ndarray,
              rng: np.random.Generator, n: int, seed: int, max_abs: tuple[float, float],
              sent: _Traffic):
        """One quantised tree, level by level (``SummedTree`` on the client, the parts'
        ``root`` and ``level`` steps) or, with ``max_leaves``, best first (``SummedLeafTree``,
        the parts' ``root`` and ``leaf_splits``: a round trip a split whose children get
        histograms): the tree and the parts' last futures."""
        quantiser = Quantiser(np.empty(0), np.empty(0), n, seed=seed, max_abs=max_abs)
        by_node = self._node_fraction(mapper.n_bins_.size)
        if self._leaf_limit() is None:
            grower = SummedTree(quantiser, features, mapper.n_bins_, params, self._depth_limit(),
                                self.colsample_bylevel, by_node, rng)
            step, add = _parts.level, add_histograms
        else:
            grower = SummedLeafTree(quantiser, features, mapper.n_bins_, params,
                                    self._depth_limit(), self._leaf_limit(),
                                    self.colsample_bylevel, by_node, rng)
            step, add = _parts.leaf_splits, add_leaf_results
        roots = cluster.run(_parts.root, args=(features, n, seed, max_abs))
        before = cluster.received.get("histograms", 0)
        raw = cluster.gather(cluster.sum(roots, add_histograms), "histograms")
        sent.level(0, 1, raw, cluster.received["histograms"] - before)
        plan = grower.start(raw)
        depth = 0
        applied = [None] * len(cluster.workers)  # the last step's partitions, not waited for
        while plan is not None:
            results = cluster.run(step, args=(plan,))
            sent.plan(plan)
            depth = getattr(plan, "depth", depth + 1)  # leaf-wise: the split children's
            if plan.last:
                applied = results
                break
            before = cluster.received["histograms"]
            summed = cluster.gather(cluster.sum(results, add), "histograms")
            sent.level(depth, int(plan.parents.size), summed,
                       cluster.received["histograms"] - before)
            plan = grower.advance(summed)
        return grower.grown_tree(), applied

    @staticmethod
    def _leaf_sums(cluster: Cluster, applied: list[Any]) -> Any:
        """The future of the tree's leaf sums over every part, chained in event order."""
        running = None
        if cluster.actors is not None:  # the client passes the running sums along
            cluster.gather([f for f in applied if f is not None])
            for i in range(len(cluster.workers)):  # each continues the sums of the one before
                running = cluster.gather(cluster.submit_to(i, _parts.leaf_sums, running, None))
        else:
            for i in range(len(cluster.workers)):
                running = cluster.submit_to(i, _parts.leaf_sums, running, applied[i])
        return running

    # -- predicting ------------------------------------------------------------------------
    def to_local(self):
        """The fitted model as the in-memory estimator (BDTClassifier or BDTRegressor)."""
        self._check_fitted()
        local = self._local_class.__new__(self._local_class)
        local.__dict__.update({k: v for k, v in self.__dict__.items()
                               if not k.startswith("dask_")})
        return local

    def _lazy(self, X: Any, method: str, width: int | None, decorrelate: Any = None,
              dtype: Any = np.float64):
        """``method`` of the local model on each block of a dask array, lazily, of
        ``dtype`` (the in-memory method's; ``decorrelate`` is refused: a Dask fit makes no
        decorrelation map)."""
        import dask.array as da  # noqa: I001 -- the optional extra, imported for dask input

        if decorrelate is not None:
            raise ParameterError("decorrelate", "decorrelate=... is for a model trained with "
                                 "decorrelation_map='ddt', which the Dask fit does not make: "
                                 "drop decorrelate")

        names = getattr(self, "feature_names_in_", None)
        given = _column_names(X)
        warn_unnamed_columns(type(self).__name__, names, given)
        if isinstance(X, LazyDataset):  # a lazy read: its X, named by the read's features
            check_read_records(X, self, names)
            X = X.X
        order = None
        if given is not None and names is not None:  # by name, as memory
            order = column_positions(given, [str(n) for n in names], "X", type(self).__name__,
                                     getattr(self, "feature_definitions_", None) or {})
        if order is not None and hasattr(X, "columns"):  # a dask DataFrame
            X = X[[X.columns[j] for j in order]]
            order = None
        X = da.asarray(X)
        if order is not None and order != list(range(X.shape[1])):  # a lazy read's array
            X = X[:, order]
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d (events x features), got {X.ndim} dimensions")
        X = X.rechunk({1: -1})
        local = self.to_local()
        if width is None:
            return X.map_blocks(_parts.predict_block, local, method, dtype=dtype,
                                drop_axis=1, meta=np.empty(0, dtype))
        return X.map_blocks(_parts.predict_block, local, method, dtype=dtype,
                            chunks=(X.chunks[0], (width,)), meta=np.empty((0, 0), dtype))

    def to_dict(self) -> dict[str, Any]:
        """The model as the in-memory estimator writes it (``load_model`` gives that one)."""
        return self.to_local().to_dict()


def _workers(client: Any) -> dict[str, Any]:
    """The scheduler's record of each worker, by address; ValueError when the cluster has
    none (a computation would wait for one forever)."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    if not workers:
        raise ValueError("the Dask cluster has no workers: start some (or give client= a "
                         "cluster that has them)")
    return workers


def _labels_1d(y: Any) -> Any:
    """y as memory takes it: a column (n, 1) raveled, with scikit-learn's warning."""
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change "
                      "the shape of y to (n_samples,)", column_vector_warning(), stacklevel=4)
        return y[:, 0]
    return y


def _aligned(array: Any, blocks: tuple, what: str) -> Any:
    """``array`` (``what``: "y", "sample_weight" or "event") cut into the row blocks of X; arrays of
    as many blocks of unknown sizes (a lazy read's columns) are taken as cut alike (each
    part checks its lengths)."""
    if what == "y":
        array = _labels_1d(array)
    if array.ndim != 1:
        raise ValueError(f"{what} must be 1-d, one value per event; got shape {array.shape}")
    unknown = any(np.isnan(b) for b in blocks) or any(np.isnan(b) for b in array.chunks[0])
    if not unknown and array.shape[0] != sum(blocks):
        n, k = int(sum(blocks)), int(array.shape[0])
        raise ValueError({
            "y": f"X has {n} events but y has {k} labels or targets",
            "sample_weight": f"sample_weight has {k} entries, expected {n}: one weight per "
                             f"event ({k} values for {n} events)",
            "event": f"event: expected {n} integer event numbers, one per event; got an array "
                     f"of shape {array.shape} and dtype {array.dtype}"}[what])
    if unknown:
        if len(array.chunks[0]) != len(blocks):
            raise ValueError("X, y and sample_weight have blocks of unknown sizes, and not as "
                             "many of them: give arrays read together (hepbdt.read(..., dask=True))")
        return array
    return array if array.chunks[0] == blocks else array.rechunk((blocks,))


def _raise_refused(done: list[dict[str, Any]]) -> None:
    """Memory's refusal of a training weight out of float32's range, from the parts'
    ``_parts.weights`` or ``_parts.given_check``: in the words for a sample whose given
    weights all lie within range unless one part's do not, counting every part's."""
    plain = not all(d["given_in_range"] for d in done)
    refused = [d["refused_plain" if plain else "refused"] for d in done
               if d["refused"] is not None]
    if refused:
        error, _ = refused[0]
        count = sum(c for _, c in refused)
        raise type(error)(re.sub(r"^(.*?: )\d+ ", lambda g: f"{g.group(1)}{count} ",
                                 str(error), count=1)) from None


def _raise_first_refusal(loaded: list[dict[str, Any]]) -> None:
    """The error of the first check (in memory's order) that a part's events failed, as
    memory gives it for the whole sample: event numbers counted from the first event of
    the sample, weights out of range counted over every part, the largest target."""
    offsets = np.concatenate([[0], np.cumsum([p["rows"] for p in loaded])[:-1]])
    refused = [(p["refused"], int(first)) for p, first in zip(loaded, offsets, strict=True)
               if p["refused"] is not None]
    if not refused:
        return
    stage = min(r[0] for r, _ in refused)
    failed = [(r, first) for r, first in refused if r[0] == stage]
    (_, error, _), first = failed[0]
    message = re.sub(r"\bevent (\d+)", lambda m: f"event {int(m.group(1)) + first}", str(error))
    if stage == _parts.CHECK_TARGET_RANGE:  # the part of the largest target says it
        message = str(max(failed, key=lambda f: f[0][2])[0][1])
    elif stage == _parts.CHECK_MAGNITUDES:
        count = int(sum(r[2] for r, _ in failed))
        message = re.sub(r"^sample_weight: \d+ ", f"sample_weight: {count} ", message)
    raise type(error)(message) from None


def _n_rows(X: Any) -> int:
    """The events of a dask array: its blocks counted, not read, where their sizes are known."""
    import dask  # noqa: I001 -- the optional extra, imported with the fit

    sizes = X.chunks[0]
    if any(np.isnan(size) for size in sizes):
        sizes = dask.compute(*[dask.delayed(len)(block) for block in X.to_delayed()[:, 0]])
    return int(sum(sizes))


def _refuse_no_events(m: int) -> None:
    """The in-memory estimators' error for an X of no event (and ``m`` features)."""
    check_X(np.empty((0, m), dtype=np.float32))
    raise AssertionError("check_X accepted an X of no event")  # pragma: no cover


def _refuse_no_labels(X: Any) -> None:
    """The in-memory error for a y of no label: X's if X has no event either, else that
    their lengths differ (X's blocks counted, not read, where their sizes are known)."""
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d (events x features), got {X.ndim} dimensions")
    n = _n_rows(X)
    if n == 0:
        _refuse_no_events(int(X.shape[1]))
    raise ValueError(f"X has {n} events but y has 0 labels")


def _is_dask(X: Any) -> bool:
    return type(X).__module__.startswith("dask.")


def _is_lazy(X: Any) -> bool:
    """Whether a prediction of X is a dask array: X a dask collection or a lazy read."""
    return _is_dask(X) or isinstance(X, LazyDataset)


def _column_names(X: Any) -> list[str] | None:
    """The names of X's columns: a dask DataFrame's, a lazy read's features; else None."""
    if isinstance(X, LazyDataset):
        return [str(n) for n in X.feature_names]
    columns = getattr(X, "columns", None)
    return None if columns is None else [str(c) for c in columns]


def _vector_sums(cluster: Cluster, sums: dict[str, PairwiseSum]) -> dict[str, float]:
    """numpy's sums of the parts' vectors named (``_parts.vector_sums``), from their pieces."""
    results = cluster.gather([cluster.submit_to(i, _parts.vector_sums,
                                                {k: v.requests(i) for k, v in sums.items()})
                              for i in range(len(cluster.workers))])
    return {k: v.total([r["pieces"][k] for r in results]) for k, v in sums.items()}


def _event_numbers(event: Any, X: Any) -> Any:
    """``fit``'s event numbers (a dask array) cut into X's row blocks; memory's error for
    numbers that are not n integers."""
    if event.ndim != 1 or not np.issubdtype(event.dtype, np.integer):
        raise ValueError(f"event: expected {_n_rows(X)} integer event numbers, one per event; "
                         f"got an array of shape {event.shape} and dtype {event.dtype}")
    return _aligned(event, X.chunks[0], "event")


def _computed_eval_set(client: Any, eval_set: Any) -> Any:
    """``eval_set`` with its dask arrays computed to numpy arrays on the client (its tuples
    and lists kept), which watches it as memory does."""
    if isinstance(eval_set, tuple | list):
        return type(eval_set)(_computed_eval_set(client, entry) for entry in eval_set)
    if _is_dask(eval_set):
        return np.asarray(client.compute(eval_set).result())
    return eval_set


@dataclass
class _Draw:
    """One round's events: each part's share of the draw (None: every event), and the
    sums memory takes of the round's tree weights (their total, and that of |w|)."""

    parts: list[tuple] | None
    total: float
    abs_total: float  # memory's np.sum(np.abs(w_tree), dtype=np.float64)
    drawn: int  # events drawn (with their multiplicity), those of weight 0 not counted
    n: int  # the tree weights' events (all the training events)

    @property
    def mean_abs(self) -> float:
        """Memory's np.mean(np.abs(w_tree), dtype=np.float64): the same sum over n."""
        return self.abs_total / self.n


class _Draws:
    """The events of each round's trees: every event (no draw: no random numbers), or
    memory's draw (``draw_rows`` with the fit's generator) over the training weights the
    client holds, each part sent its share (packed bits of the drawn events, or their
    counts), from which it computes its tree weights as memory does (``_parts.tree_weights``)."""

    def __init__(self, options: Any, cluster: Cluster, counts: np.ndarray,
                 rng: np.random.Generator, total: float, abs_total: float, events: int):
        self.cluster, self.rng = cluster, rng
        self.subsample, self.mode = float(options.subsample), options.subsample_mode
        self.full = self.subsample >= 1.0 and self.mode == "uniform"
        self.bounds = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        # the events of a weight other than 0
        self.every = _Draw(None, total, abs_total, events, int(self.bounds[-1]))
        self.w = None
        if not self.full:  # float32 training weights, in event order
            self.w = np.concatenate(cluster.gather(cluster.run(_parts.training_weights)))

    def next(self) -> _Draw:
        """The next round's events (memory's draw, from the generator's current state)."""
        if self.full:
            return self.every
        w = self.w
        rows, w_tree, counts = _draw(w, self.subsample, self.mode, self.rng)
        cuts = list(zip(self.bounds[:-1], self.bounds[1:], strict=True))
        if counts is None:  # uniform: each event once or not at all
            drawn = np.zeros(w.size, np.bool_)
            drawn[rows] = True
            parts = [("uniform", np.packbits(drawn[a:b])) for a, b in cuts]
        else:
            dtype = np.min_scalar_type(int(counts.max()) if counts.size else 0)
            extra = () if self.mode == "poisson" else (
                float(np.abs(w).sum() / max(counts.sum(), 1)),)  # ``_draw``'s scale
            parts = [(self.mode, counts[a:b].astype(dtype), *extra) for a, b in cuts]
        return _Draw(parts, float(np.sum(w_tree, dtype=np.float64)),
                     float(np.sum(np.abs(w_tree), dtype=np.float64)),
                     drawn_events(rows, counts, w), w_tree.size)

    def begin(self, base: np.ndarray | None, running: Any, mean_abs: float, klass: int,
              draw: _Draw | None) -> list[Any]:
        """``_parts.begin_tree`` on every part, each with its share of ``draw``."""
        return [self.cluster.submit_to(i, _parts.begin_tree, base, running, mean_abs, klass,
                                       None if draw is None or draw.parts is None
                                       else draw.parts[i])
                for i in range(len(self.cluster.workers))]


class _Known:
    """A metric whose loss is a number computed elsewhere (``_Watch.end_round`` asks for it)."""

    def __init__(self, value: float):
        self.value = value

    def loss(self, y: Any, w: Any, scores: Any) -> float:
        return self.value


class _PartsWatch:
    """Early stopping on the events the parts held out: memory's ``_Watch`` (its record and
    stop rule), fed after each round with memory's loss of those events, rebuilt from the
    parts' pieces of its terms (``layout``: a ``ChunkedSum`` or ``PairwiseSum`` of them)
    over numpy's sum of their weights (``total``)."""

    def __init__(self, layout: Any, total: float, base: np.ndarray, rounds: int | None,
                 tol: float, multiclass: bool):
        self.layout, self.total = layout, total
        self.watch = _Watch((None, np.empty(0), None), base, rounds, tol)
        self.unit = "round" if multiclass else "tree"

    def add(self, k: int, tree: Any, values: np.ndarray) -> None:
        """Nothing: each part adds the trees to its held-out events' scores."""

    def end_round(self, it: int, results: list[dict[str, Any]]) -> bool:
        """Record the loss after round ``it`` (from the parts' results); whether to stop."""
        pieces = [r["valid"] for r in results]
        if isinstance(self.layout, ChunkedSum):
            summed = np.sum(self.layout.partial(pieces))
        else:
            summed = self.layout.total(pieces)
        value = float(summed / self.total) if self.total != 0 else 0.0
        return self.watch.end_round(it, _Known(value), self.unit)


class _ClientWatch:
    """Early stopping on an eval set the client holds: memory's ``_Watch`` itself, its scores
    updated with each tree as ``run_boosting`` updates them."""

    def __init__(self, valid: tuple, base: np.ndarray, rounds: int | None, tol: float,
                 metric: Any):
        self.watch = _Watch(valid, base, rounds, tol)
        self.metric = metric
        self.unit = "round" if getattr(metric, "n_classes", 1) > 1 else "tree"

    def add(self, k: int, tree: Any, values: np.ndarray) -> None:
        """Add a tree of class ``k`` to the set's scores."""
        update_scores(self.watch.codes, tree, values, self.watch.summed[k])

    def end_round(self, it: int, results: Any) -> bool:
        """Record the loss after round ``it``; whether to stop."""
        return self.watch.end_round(it, self.metric, self.unit)


class _Traffic:
    """Bytes of one tree's messages, measured (``nbytes`` of the arrays, pickled size of
    the plans): per level (leaf-wise: per round trip, "depth" that of the split's
    children), what the parts sent (each the histograms of the level's left children, root
    first) and what the client received; per tree, these plus the plans sent to every part
    and the leaf sums passed along the chain of parts."""

    def __init__(self, n_parts: int):
        self.n_parts = n_parts
        self.levels: list[dict[str, int]] = []
        self.plans = 0
        self.leaf_bytes = 0

    def level(self, depth: int, nodes: int, summed: np.ndarray, received: int) -> None:
        self.levels.append({"depth": depth, "nodes": nodes,
                            "parts_sent": int(summed.nbytes) * self.n_parts,
                            "client_received": int(received)})

    def plan(self, plan: Any) -> None:
        import pickle  # noqa: I001 -- only to measure a plan's size on the wire

        self.plans += len(pickle.dumps(plan)) * self.n_parts

    def leaves(self, leaf_totals: np.ndarray) -> None:
        self.leaf_bytes = int(leaf_totals.nbytes) * (self.n_parts + 1)  # the chain, the client

    def tree(self) -> dict[str, int]:
        return {"parts_sent": sum(v["parts_sent"] for v in self.levels),
                "client_received": sum(v["client_received"] for v in self.levels),
                "plans": self.plans, "leaf_sums": self.leaf_bytes}


def _mean_loss(results: list[dict[str, float]]) -> float:
    total = sum(r["weight"] for r in results)
    return sum(r["loss"] for r in results) / total if total != 0 else 0.0


def _warn_float32_resolution(loaded: list[dict[str, Any]], names: Any) -> None:
    """Memory's fit's warning for float64 features that float32 holds in few steps
    (``_util.warn_float32_resolution``), of the whole sample: the parts' extents merged."""
    extents = [p["extent"] for p in loaded if p.get("extent") is not None]
    if not extents:
        return
    low = np.fmin.reduce([e[0] for e in extents])
    high = np.fmax.reduce([e[1] for e in extents])
    changed = np.logical_or.reduce([e[2] for e in extents])
    warn_float32_steps(low, high, changed, None if names is None else [str(n) for n in names],
                       "X")


def _unpacked(X: Any, y: Any, sample_weight: Any, feature_names: Any, branch_types: Any
              ) -> tuple[Any, Any, Any, Any, Any]:
    """(X, y, sample_weight, feature_names, branch_types) of a fit: a LazyDataset X gives
    its arrays, names and branch types (so that none is left behind: without its branch
    types ``apply`` checks nothing), each refused where the caller gave another."""
    if not isinstance(X, LazyDataset):
        if y is None:
            raise TypeError("fit() needs y, the labels or targets, unless X is a lazy read "
                            "(hepbdt.read(..., dask=True)), which carries them")
        return X, y, sample_weight, feature_names, branch_types
    if X.y is None:
        raise ValueError("the lazy read has no labels or targets (its samples give none): "
                         "give y, or read samples with a label or a target")
    for name, given, own in (("y", y, X.y), ("sample_weight", sample_weight, X.w)):
        if given is not None and given is not own:
            raise ValueError(f"{name} is given beside a lazy read, which carries its own: "
                             f"fit(data) takes the read's; or pass data.X, data.y, data.w")
    if feature_names is not None and [str(n) for n in feature_names] != list(X.feature_names):
        raise ValueError(f"feature_names {list(feature_names)} differ from the lazy read's "
                         f"{list(X.feature_names)}, which name its columns")
    if branch_types is not None and dict(branch_types) != dict(X.branch_types or {}):
        raise ValueError("branch_types differ from the lazy read's, which are the types its "
                         "features were read from")
    return X.X, X.y, X.w, list(X.feature_names), X.branch_types


def _refuse_in_memory_only(X: Any, decorrelate: Any) -> None:
    """Refuse the fit's inputs that only the in-memory fit takes: binned features, and
    decorrelation variables."""
    if isinstance(X, BinnedMatrix):
        raise TypeError("the Dask fit takes float features (a dask or numpy array), not a "
                        "BinnedMatrix: give the float features, with the matrix's edges as "
                        "bin_edges=, or fit the BinnedMatrix in memory")
    if decorrelate is not None:
        raise ParameterError("decorrelate", "the decorrelation (flatness loss, uBoost) is not "
                             "distributed yet: drop decorrelate, or fit in memory")


class DaskBDTClassifier(_DaskMixin, BDTClassifier):
    """:class:`~hepbdt.BDTClassifier` fitted on a Dask cluster (two classes or more; see the
    module docstring for the options it refuses)."""

    _local_class = BDTClassifier
    __init__ = _dask_constructor(BDTClassifier, "Set the options (see BDTClassifier); "
                                 "nothing is checked until fit.")

    @_whole_or_unchanged
    def fit(self, X, y=None, sample_weight=None, eval_set=None, event=None, *, client=None,
            bin_edges=None, feature_names=None, feature_definitions=None,
            decorrelate=None, branch_types=None) -> DaskBDTClassifier:
        """Train on dask arrays X (n, m), y (n,) and optional weights (numpy arrays are
        turned into dask arrays of one block), on ``client`` (the current one when None);
        or on a lazy read alone, ``fit(data)``, which takes its features, labels, weights,
        feature names and branch types.

        ``eval_set`` and ``event`` as for :meth:`BDTClassifier.fit`: an eval set (numpy or
        dask arrays, computed to the client) is watched on the client; event numbers (a
        dask array cut as X) choose the events ``n_trees="auto"`` holds out.

        ``bin_edges`` (m increasing arrays, e.g. an in-memory model's ``bin_edges_``) bins
        with those edges; else the edges are memory's (``fit_bin_edges``) of the same
        events: the parts send the client their events of memory's draw.
        ``feature_names`` (and ``feature_definitions``, name -> expression) name the
        model's features, as a named X does in memory (``LazyDataset.feature_names``);
        with them, ``branch_types`` (``LazyDataset.branch_types``) are the types of the
        branches the features read, which the model keeps and ``apply`` checks its trees
        against, as a model fitted in memory on a read's X does.
        ``decorrelate`` is refused (the decorrelation is not distributed)."""
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        X, y, sample_weight, feature_names, branch_types = _unpacked(
            X, y, sample_weight, feature_names, branch_types)
        _refuse_in_memory_only(X, decorrelate)
        self._validate_params()  # refused options cost no work on the cluster
        self._check_stopping(eval_set is not None)
        client = connect(client)  # the labels are read on the fit's cluster too
        _workers(client)  # computing the labels on a cluster of no workers would wait forever
        y = _labels_1d(da.asarray(y))
        labels = np.asarray(client.compute(da.unique(y)).result())
        if labels.size == 0:  # no label: memory refuses the empty X first, or the lengths
            _refuse_no_labels(da.asarray(X))
        self._encode_y(labels, fitting=True)
        if self._multiclass:
            self._check_multiclass()
        self.n_features_in_ = int(da.asarray(X).shape[1])
        return self._dask_fit(X, y, sample_weight, client, bin_edges, self.classes_,
                              feature_names, feature_definitions, eval_set, event, branch_types)

    def decision_function(self, X, decorrelate=None):
        """Raw scores, (n,) or (n, K) with more than two classes; a dask array (lazy, block
        by block) for dask input or a lazy read (its columns by name; ``decorrelate``: as
        the in-memory estimator's; the Dask fit makes no decorrelation map)."""
        if _is_lazy(X):
            self._check_fitted()
            width = self.classes_.size if self._multiclass else None
            return self._lazy(X, "decision_function", width, decorrelate)
        return super().decision_function(X, decorrelate)

    def predict_proba(self, X, decorrelate=None):
        """(n, K) probabilities (K = 2 for two classes); a dask array (lazy) for dask input
        or a lazy read (its columns by name)."""
        if _is_lazy(X):
            self._check_fitted()
            return self._lazy(X, "predict_proba", max(2, self.classes_.size), decorrelate)
        return super().predict_proba(X, decorrelate)

    def predict(self, X, decorrelate=None):
        """Class labels; a dask array (lazy) for dask input or a lazy read, of the labels'
        dtype."""
        if _is_lazy(X):
            self._check_fitted()
            return self._lazy(X, "predict", None, decorrelate, self.classes_.dtype)
        return super().predict(X, decorrelate)


class DaskBDTRegressor(_DaskMixin, BDTRegressor):
    """:class:`~hepbdt.BDTRegressor` fitted on a Dask cluster (squared error; see the module
    docstring for the options it refuses)."""

    _local_class = BDTRegressor
    __init__ = _dask_constructor(BDTRegressor, "Set the options (see BDTRegressor); "
                                 "nothing is checked until fit.")

    @_whole_or_unchanged
    def fit(self, X, y=None, sample_weight=None, eval_set=None, event=None, *, client=None,
            bin_edges=None, feature_names=None, feature_definitions=None,
            branch_types=None) -> DaskBDTRegressor:
        """Train on dask arrays X (n, m), y (n,) and optional weights, ``eval_set``,
        ``event`` and ``branch_types``, or on a lazy read alone (see
        :meth:`DaskBDTClassifier.fit`)."""
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        X, y, sample_weight, feature_names, branch_types = _unpacked(
            X, y, sample_weight, feature_names, branch_types)
        _refuse_in_memory_only(X, None)
        self.n_features_in_ = int(da.asarray(X).shape[1])
        return self._dask_fit(X, y, sample_weight, client, bin_edges, None, feature_names,
                              feature_definitions, eval_set, event, branch_types)

    def predict(self, X):
        """Predicted targets; a dask array (lazy) for dask input or a lazy read."""
        if _is_lazy(X):
            return self._lazy(X, "predict", None)
        return super().predict(X)
