"""DaskBDTClassifier and DaskBDTRegressor: the in-memory estimators' options, fitted on a
Dask cluster, giving an ordinary hepbdt model.

The fit (``_DaskFit``) cuts the training events into one contiguous part per worker (in
the order of the dask array's blocks), and every part lives on its worker for the whole fit
(:mod:`hepbdt.dask._parts`). Bin edges come from the parts' edge sketches merged (or are
given); the loss's initial sums and sum |w| from exact, mergeable integer parts (the
softmax's class weights, and the class normalisation's, from the sums memory makes,
rebuilt from the parts). Gradient and newton boosting, of two classes, a regression, or
K classes (K trees a round, one a class, each from the scores of the round before), grow
each tree with :mod:`hepbdt.engine.data_parallel`: the parts quantise their channels as
the whole sample would, send the histograms of the nodes being split, which are summed
pairwise on the cluster; the client chooses the splits and sends them back. Leaf sums run
through the parts in event order, each continuing the last one's running sums. The model
is the in-memory model (``quantised_histograms=True``, the same bin edges) bit for bit.
The AdaBoost family (adaboost, realadaboost, eps, and SAMME for more than two classes)
grows its trees on float histograms chained through the parts in event order, its sums
numpy's own rebuilt from the parts (:mod:`hepbdt.dask._adaboost`, which says why): the
in-memory model bit for bit too.

What the in-memory estimators do that these do not (each refused with a ParameterError
naming the option): bagging and every resampling of the events (``subsample`` < 1,
``subsample_mode``), leaf-wise growth (``max_leaves``), float histograms for gradient and
newton boosting (quantised ones for the AdaBoost family, which has none), ``n_trees="auto"``
and early stopping for gradient and newton boosting (the AdaBoost family's "auto" is a
fixed count, which is distributed), ``eval_set``, losses whose leaves are medians (absolute,
huber, pseudo_huber), the negative-weight policies that need every event of a class
("regress", "pair": a fit with negative weights must choose "keep", "abs", "ignore" or, for
the AdaBoost family, "inverse_boost"), the decorrelation (flatness loss, uBoost, the DDT
map), and AdaBoost trees so deep that memory would build a level's histograms from the
events (``max_depth``: with two classes, depth 8 up to 200 features, depth 10 up to 85).
"""

from __future__ import annotations

import inspect
import re
import uuid
from typing import Any

import numpy as np

from .._util import check_weights, check_X, exact_sum_of_parts
from ..boosting._loop import BoostResult, add_tree, node_sums
from ..boosting.losses import class_weight_sums
from ..engine._types import check_n_events
from ..engine.binning import SUBSAMPLE_FOR_EDGES, BinMapper, check_edges
from ..engine.data_parallel import PairwiseSum, SummedTree, add_histograms, exact_level_capacity
from ..engine.grower import sample_features
from ..engine.histogram import Quantiser
from ..engine.split import SplitParams
from ..estimators import (
    ADABOOST_BOOSTINGS,
    BDTClassifier,
    BDTRegressor,
    ParameterError,
    _constructor,
    _Param,
)
from ..model import ClassForestBuilder, ForestBuilder
from . import _parts
from ._adaboost import AdaBoostOnParts
from ._cluster import Cluster, connect, require_dask

__all__ = ["DaskBDTClassifier", "DaskBDTRegressor"]

# negative_weights keeps memory's default ("regress"), which a sample with negative weights
# refuses, so that no fit drops to another policy unasked. quantised_histograms "auto":
# gradient and newton boosting always sum quantised histograms on a cluster (memory's True),
# the AdaBoost family float ones (its only kind, as memory's "auto").
DASK_DEFAULTS = {"n_trees": 200, "quantised_histograms": "auto"}
MAX_DASK_DEPTH = 12  # a level's summed histograms: 2**11 nodes x features x 2 kB at most
SUPPORTED_LOSSES = ("deviance", "logistic", "squared", "softmax")
# Up to this many parts the steps of a tree are actor calls (straight to the workers, a few
# ms a round trip) and the client adds the parts' histograms; beyond, tasks through the
# scheduler, the histograms summed pairwise on the cluster and the leaf sums chained from
# worker to worker, so the client's traffic does not grow with the workers.
ACTOR_PARTS = 4


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

        resampling = ("resampling the events is not distributed: each tree's draw is one "
                      "generator over the whole sample")
        if self.boosting == "bagging":
            refuse("boosting", f"bagging grows every tree on a resample of the events, and "
                   f"{resampling}; the Dask estimators boost with 'gradient', 'newton', "
                   "'adaboost', 'realadaboost' or 'eps'")
        if self.n_trees == "auto" and not self._adaboost:
            refuse("n_trees", "'auto' holds out events and stops early, which the Dask fit does "
                   "not do yet; give the number of trees")
        if self.max_leaves is not None:
            refuse("max_leaves", "leaf-wise growth is not distributed yet (depth-wise only)")
        if self.max_depth is None or int(self.max_depth) > MAX_DASK_DEPTH:
            refuse("max_depth", f"the Dask fit grows depth-wise to at most {MAX_DASK_DEPTH}")
        if self.quantised_histograms is False and not self._adaboost:
            refuse("quantised_histograms", "the Dask fit of gradient and newton boosting sums "
                   "integer histograms (exact in any order): give 'auto' or True")
        if self.quantised_histograms is True and self._adaboost:
            refuse("quantised_histograms", f"boosting={self.boosting!r} grows its trees on float "
                   "histograms (as in memory): give 'auto' or False")
        if self.subsample < 1.0:
            refuse("subsample", f"{resampling}; give subsample=1.0")
        if self.subsample_mode != "uniform":
            refuse("subsample_mode", f"{resampling}; give subsample_mode='uniform'")
        if self.early_stopping:
            refuse("early_stopping", "early stopping is not distributed yet")
        if self.early_stopping_rounds is not None:
            refuse("early_stopping_rounds", "early stopping (on an eval_set) is not "
                   "distributed yet")
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
                  classes: Any, names: Any = None, definitions: Any = None) -> Any:
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        client = connect(client)
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
        self._validate_params()
        self._check_dask_options()
        info = client.scheduler_info(n_workers=-1)["workers"]
        workers = sorted(info)
        if not workers:
            raise ValueError("the Dask cluster has no workers")
        n_parts = min(len(workers), len(blocks_of))
        groups = np.array_split(np.arange(len(blocks_of)), n_parts)
        x_blocks = client.compute(X.to_delayed().ravel().tolist())
        y_blocks = client.compute(y.to_delayed().ravel().tolist())
        w_blocks = None if w is None else client.compute(w.to_delayed().ravel().tolist())
        cluster = Cluster(client, workers[:n_parts], f"hepbdt-fit-{uuid.uuid4().hex}")
        cluster.threads = [int(info[a].get("nthreads", 1)) if self.n_jobs in (None, -1)
                           else int(self.n_jobs) for a in workers[:n_parts]]
        try:
            if names is not None and len(names) != X.shape[1]:
                raise ValueError(f"{len(names)} feature names for {X.shape[1]} features")
            return self._fit_parts(cluster, groups, x_blocks, y_blocks, w_blocks, bin_edges,
                                   classes, int(X.shape[1]), names, definitions or {})
        finally:
            cluster.close()
            del x_blocks, y_blocks, w_blocks

    def _fit_parts(self, cluster: Cluster, groups, x_blocks, y_blocks, w_blocks, bin_edges,
                   classes, m: int, names, definitions):
        parts = range(len(groups))
        ratio = self._class_ratio()
        loaded = cluster.gather([
            cluster.submit_to(i, _parts.load, [x_blocks[b] for b in groups[i]],
                              [y_blocks[b] for b in groups[i]],
                              None if w_blocks is None else [w_blocks[b] for b in groups[i]],
                              classes, self.negative_weights, cluster.threads[i], ratio is None)
            for i in parts])
        _raise_first_refusal(loaded)
        if not any(p["rows"] for p in loaded):  # parts may be empty, not the whole sample
            _refuse_no_events(m)
        if not any(p["nonzero"] for p in loaded):  # memory's check_weights(training=True)
            check_weights(np.zeros(1), 1, training=True)
        if any(p["negative"] for p in loaded) and self.negative_weights in ("regress", "pair"):
            raise ParameterError("negative_weights", f"negative_weights={self.negative_weights!r} "
                                 "needs every event of a class at once; the Dask fit takes "
                                 "'keep', 'abs', 'ignore'" + (" or 'inverse_boost'" if
                                                            self._adaboost else ""))
        self._weights(cluster, loaded, ratio)
        if not any(p["positive"] for p in loaded):
            raise ValueError("no event with a positive weight is left to train on")
        counts = np.array([p["n"] for p in loaded], np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        n = int(counts.sum())
        check_n_events(n)
        self.min_node_size_ = self._resolved_node_size(n)
        seed = 0 if self.random_state is None else int(self.random_state)
        if bin_edges is not None:
            edges = check_edges(bin_edges, m)
        else:
            sketches = [cluster.submit_to(i, _parts.sketch, int(offsets[i]), SUBSAMPLE_FOR_EDGES,
                                          seed) for i in parts]
            merged = cluster.gather(cluster.sum(sketches, _merge_sketches))
            edges = merged.edges(int(self.max_bins), int(self.n_cuts))
        mapper = BinMapper.from_edges(list(edges))
        train = self._train_adaboost if self._adaboost else self._train_boosting
        forest, result, traffic = train(cluster, mapper, offsets, counts)
        if not any(f >= 0 for f in forest.feature):
            import warnings  # noqa: I001 -- only when the model made no split

            warnings.warn("no tree made a single split, so the model is a constant", stacklevel=3)
        if any(p["nan"] for p in loaded):
            forest.extra["nan_in_training"] = True
        self._set_fitted(forest, None if names is None else [str(n) for n in names],
                         definitions, result, mapper)
        self.evals_result_, self.best_iteration_, self.best_score_ = {}, None, None
        # memory's words (saved with the model): no early stopping; SAMME's rounds are trees
        per_round = 1 if forest.extra.get("algorithm") == "SAMME" else forest.n_classes
        self.n_trees_reason_ = self._tree_plan(n, False).reason(forest.n_rounds, None,
                                                                per_round)
        self.dask_bytes_ = traffic
        self.dask_parts_ = [(int(o), int(c)) for o, c in zip(offsets, counts, strict=True)]
        return self

    @property
    def _adaboost(self) -> bool:
        """Whether the booster is of the AdaBoost family (exact histograms)."""
        return self.boosting in ADABOOST_BOOSTINGS

    def _class_ratio(self) -> float | None:
        """The signal-to-background ratio of ``_normalise_classes`` (None: no normalisation;
        more than two classes with a ratio refused there, in memory's words)."""
        f = getattr(self, "sig_to_bkg_fraction", None)
        multiclass = getattr(self, "_multiclass", False)
        if f == "tmva":
            f = None if multiclass else 1.0
        elif f == "auto":
            f = 1.0 if self._adaboost and not multiclass else None
        if f is not None and multiclass:
            self._normalise_classes(np.zeros(0, np.int8), np.zeros(0))
        return f

    def _weights(self, cluster: Cluster, loaded: list[dict[str, Any]], ratio: float | None) -> None:
        """The parts' training weights: normalised per class as ``_normalise_classes`` does,
        from numpy's sums of each class's weights (rebuilt from the parts' pieces), and
        cast to float32 for gradient and newton boosting, float64 for the AdaBoost family."""
        factors = None
        if ratio is not None:
            signal = [p["signal"] for p in loaded]
            sums = {"signal": PairwiseSum(signal),
                    "background": PairwiseSum([p["n"] - k for p, k in zip(loaded, signal,
                                                                            strict=True)])}
            results = cluster.gather([cluster.submit_to(
                i, _parts.class_weights, {k: v.requests(i) for k, v in sums.items()})
                for i in range(len(loaded))])
            s, b = (sums[k].total([r["pieces"][k] for r in results]) for k in sums)
            if not (s > 0 and b > 0):
                raise ValueError(f"both classes need a positive sum of weights; signal {s}, "
                                 f"background {b}")
            n = float(sum(p["n"] for p in loaded))
            factors = (n * ratio / (1.0 + ratio) / s, n / (1.0 + ratio) / b)
        acted = (self.negative_weights in ("abs", "ignore")
                 and any(p["negative"] for p in loaded))
        dtype = "float64" if self._adaboost else "float32"
        done = cluster.gather([cluster.submit_to(i, _parts.weights, factors, dtype,
                                                 self.negative_weights if acted else None)
                               for i in range(len(loaded))])
        refused = [d["refused"] for d in done if d["refused"] is not None]
        if refused:  # memory's message, counting the weights of every part
            error, _ = refused[0]
            count = sum(c for _, c in refused)
            raise type(error)(re.sub(r"^(.*?: )\d+ ", lambda g: f"{g.group(1)}{count} ",
                                     str(error), count=1)) from None

    def _train_boosting(self, cluster: Cluster, mapper, offsets: np.ndarray, counts: np.ndarray):
        """Gradient or newton boosting on the binned parts: (forest, record, bytes)."""
        loss = self._make_loss()
        booster = self._make_booster(loss)
        one_score = getattr(loss, "n_classes", 1) == 1
        binned = cluster.gather([cluster.submit_to(i, _parts.bin_part, int(offsets[i]),
                                                   mapper.edges_, booster, int(self.max_depth),
                                                   one_score) for i in range(len(counts))])
        if len(cluster.workers) <= ACTOR_PARTS:
            cluster.start_actors()
        n = int(counts.sum())
        base = self._base_scores(cluster, loss, binned)
        mean_abs_w = exact_sum_of_parts(sum(b["abs_weight"] for b in binned)) / n
        return self._boost(cluster, booster, mapper, base, n, mean_abs_w)

    def _train_adaboost(self, cluster: Cluster, mapper, offsets: np.ndarray, counts: np.ndarray):
        """The AdaBoost family on the binned parts (``_adaboost.AdaBoostOnParts``)."""
        m = mapper.n_bins_.size
        n_classes = max(2, self.classes_.size)
        channels = n_classes + 1 if n_classes > 2 else 3
        if 2 ** (int(self.max_depth) - 1) > exact_level_capacity(m, channels):
            raise ParameterError("max_depth", f"max_depth={self.max_depth!r}: with {m} features "
                                 "the in-memory grower builds the deepest levels' float "
                                 "histograms from the events, which the Dask fit does not; "
                                 "give a smaller max_depth")
        sent = _Traffic(len(counts))
        runner = AdaBoostOnParts(self, cluster, mapper, counts.tolist(),
                                 self._tree_plan(int(counts.sum()), False).n_trees, sent)
        cluster.gather([cluster.submit_to(i, _parts.bin_exact, int(offsets[i]), mapper.edges_,
                                          int(self.max_depth), runner.spec())
                        for i in range(len(counts))])
        if len(cluster.workers) <= ACTOR_PARTS:
            cluster.start_actors()
        if n_classes > 2:  # ``run_samme``: a class without weight cannot be voted for
            class_weight_sums(np.arange(n_classes), self._chained_class_sums(cluster, n_classes),
                              n_classes)
        forest, result = runner.run(np.random.default_rng(self.random_state))
        return forest, result, {"levels": sent.levels, "trees": runner.tree_bytes}

    @staticmethod
    def _chained_class_sums(cluster: Cluster, n_classes: int) -> np.ndarray:
        """Each class's sum of weights, added through the parts in event order (memory's
        ``np.bincount``)."""
        sums = np.zeros(n_classes)
        for i in range(len(cluster.workers)):
            sums = cluster.gather(cluster.submit_to(i, _parts.class_sums, sums))
        return sums

    @staticmethod
    def _base_scores(cluster: Cluster, loss, binned: list[dict[str, Any]]) -> np.ndarray:
        """The initial scores (K,): a one-score loss's from exact sums of the parts; the
        softmax's from the class weights summed through the parts in event order, as memory's
        ``np.bincount`` adds them (the class sums as weights of one event a class give
        memory's scores from the same numbers)."""
        n_classes = getattr(loss, "n_classes", 1)
        if n_classes == 1:
            init = {k: exact_sum_of_parts(sum(b["init"][k] for b in binned))
                    for k in binned[0]["init"]}
            return np.array([float(loss.init_score_of_sums(init))])
        sums = _DaskMixin._chained_class_sums(cluster, n_classes)
        return np.asarray(loss.init_scores(np.arange(n_classes), sums), dtype=np.float64)

    def _boost(self, cluster: Cluster, booster, mapper, base: np.ndarray, n: int,
               mean_abs_w: float):
        """The boosting loop of ``run_boosting`` (quantised, depth-wise; one tree a round, or
        K a round, one a class, with a softmax loss), its per-event work on the parts."""
        n_classes = base.size
        newton = self.boosting == "newton"
        params = SplitParams(booster.criterion, reg_lambda=self.reg_lambda if newton else 0.0,
                             reg_alpha=self.reg_alpha if newton else 0.0,
                             min_child_hessian=self.min_child_weight if newton else 0.0,
                             min_split_gain=self.min_split_gain)
        rng = np.random.default_rng(self.random_state)
        m = mapper.n_bins_.size
        all_features = np.ones(m, dtype=np.bool_)
        builder = (ClassForestBuilder(m, base) if n_classes > 1
                   else ForestBuilder(m, float(base[0])))
        train_loss = []
        traffic = {"levels": [], "trees": []}
        n_trees = int(self.n_trees)
        beginning = cluster.run(_parts.begin_tree, args=(base, None, mean_abs_w, 0))
        for it in range(n_trees):
            for k in range(n_classes):
                began = cluster.gather(beginning)
                if k == 0:  # a round's channels, weights and features, once for its K trees
                    if it > 0:
                        train_loss.append(_mean_loss(began))
                    params.min_child_weight = self.min_node_size_ * sum(b["weight"] for b in began)
                    features = sample_features(all_features, self.colsample_bytree, rng)
                max_abs = tuple(np.max([b["max_abs"] for b in began], axis=0).tolist())
                sent = _Traffic(len(cluster.workers))
                tree, applied = self._grow(cluster, mapper, params, features, rng, n,
                                           it * n_classes + k, max_abs, sent)
                running = self._leaf_sums(cluster, applied)
                # The parts add this tree and start the next one from the summed leaves at
                # once, without waiting for the client (each computes the leaf values as it does).
                if it + 1 < n_trees or k + 1 < n_classes:
                    beginning = cluster.run(_parts.begin_tree, args=(
                        None, running, mean_abs_w, (k + 1) % n_classes))
                else:
                    beginning = cluster.run(_parts.finish, args=(running, mean_abs_w))
                leaf_totals = cluster.gather(running)
                values = _parts.leaf_values(booster, tree, leaf_totals, mean_abs_w)
                add_tree(builder.classes[k] if n_classes > 1 else builder, tree, values, mapper,
                         cover=node_sums(tree, leaf_totals)[2])
                sent.leaves(leaf_totals)
                traffic["levels"].extend(sent.levels)
                traffic["trees"].append(sent.tree())
        train_loss.append(_mean_loss(cluster.gather(beginning)))
        result = BoostResult(builder, float(base[0]) if n_classes == 1 else 0.0,
                             np.asarray(train_loss), None, None)
        forest = builder.build()
        forest.extra["loss"] = booster.loss.name
        return forest, result, traffic

    def _grow(self, cluster: Cluster, mapper, params: SplitParams, features: np.ndarray,
              rng: np.random.Generator, n: int, seed: int, max_abs: tuple[float, float],
              sent: _Traffic):
        """One quantised tree, level by level (``SummedTree`` on the client, the parts'
        ``root`` and ``level`` steps): the tree and the parts' last level futures."""
        quantiser = Quantiser(np.empty(0), np.empty(0), n, seed=seed, max_abs=max_abs)
        grower = SummedTree(quantiser, features, mapper.n_bins_, params, int(self.max_depth),
                            self.colsample_bylevel, self._node_fraction(mapper.n_bins_.size), rng)
        roots = cluster.run(_parts.root, args=(features, n, seed, max_abs))
        before = cluster.received.get("histograms", 0)
        raw = cluster.gather(cluster.sum(roots, add_histograms), "histograms")
        sent.level(0, 1, raw, cluster.received["histograms"] - before)
        plan = grower.start(raw)
        depth = 0
        applied = [None] * len(cluster.workers)  # the last level's partitions, not waited for
        while plan is not None:
            lefts = cluster.run(_parts.level, args=(plan,))
            sent.plan(plan)
            depth += 1
            if plan.last:
                applied = lefts
                break
            before = cluster.received["histograms"]
            left = cluster.gather(cluster.sum(lefts, add_histograms), "histograms")
            sent.level(depth, int(plan.parents.size), left,
                       cluster.received["histograms"] - before)
            plan = grower.advance(left)
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

        X = da.asarray(X)
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


def _aligned(array: Any, blocks: tuple, what: str) -> Any:
    """``array`` (``what``: "y" or "sample_weight") cut into the row blocks of X; arrays of
    as many blocks of unknown sizes (a lazy read's columns) are taken as cut alike (each
    part checks its lengths)."""
    if array.ndim != 1:
        raise ValueError(f"y and sample_weight must be 1-d, got {array.ndim} dimensions")
    unknown = any(np.isnan(b) for b in blocks) or any(np.isnan(b) for b in array.chunks[0])
    if not unknown and array.shape[0] != sum(blocks):
        n, k = int(sum(blocks)), int(array.shape[0])
        raise ValueError(f"X has {n} events but y has {k} labels or targets" if what == "y"
                         else f"sample_weight has {k} entries, expected {n}: one weight per "
                         f"event ({k} values for {n} events)")
    if unknown:
        if len(array.chunks[0]) != len(blocks):
            raise ValueError("X, y and sample_weight have blocks of unknown sizes, and not as "
                             "many of them: give arrays read together (hepbdt.read(..., dask=True))")
        return array
    return array if array.chunks[0] == blocks else array.rechunk((blocks,))


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


class _Traffic:
    """Bytes of one tree's messages, measured (``nbytes`` of the arrays, pickled size of
    the plans): per level, what the parts sent (each the histograms of the level's left
    children, root first) and what the client received; per tree, these plus the plans
    sent to every part and the leaf sums passed along the chain of parts."""

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


def _merge_sketches(a, b):
    return a.merge(b)


def _mean_loss(results: list[dict[str, float]]) -> float:
    total = sum(r["weight"] for r in results)
    return sum(r["loss"] for r in results) / total if total != 0 else 0.0


class DaskBDTClassifier(_DaskMixin, BDTClassifier):
    """:class:`~hepbdt.BDTClassifier` fitted on a Dask cluster (two classes or more; see the
    module docstring for the options it refuses). ``n_trees`` defaults to 200."""

    _local_class = BDTClassifier
    __init__ = _dask_constructor(BDTClassifier, "Set the options (see BDTClassifier); "
                                 "nothing is checked until fit.")

    def fit(self, X, y, sample_weight=None, *, client=None, bin_edges=None, feature_names=None,
            feature_definitions=None) -> DaskBDTClassifier:
        """Train on dask arrays X (n, m), y (n,) and optional weights (numpy arrays are
        turned into dask arrays of one block), on ``client`` (the current one when None).

        ``bin_edges`` (m increasing arrays, e.g. an in-memory model's ``bin_edges_``) bins
        with those edges; else the edges come from the workers' merged edge sketches.
        ``feature_names`` (and ``feature_definitions``, name -> expression) name the
        model's features, as a named X does in memory (``LazyDataset.feature_names``)."""
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        client = connect(client)  # the labels are read on the fit's cluster too
        labels = np.asarray(client.compute(da.unique(da.asarray(y))).result())
        if labels.size == 0:  # no label: memory refuses the empty X first, or the lengths
            _refuse_no_labels(da.asarray(X))
        self._encode_y(labels, fitting=True)
        if self._multiclass:
            self._check_multiclass()
        self.n_features_in_ = int(da.asarray(X).shape[1])
        return self._dask_fit(X, y, sample_weight, client, bin_edges, self.classes_,
                              feature_names, feature_definitions)

    def decision_function(self, X, decorrelate=None):
        """Raw scores, (n,) or (n, K) with more than two classes; a dask array (lazy, block
        by block) for dask input (``decorrelate``: as the in-memory estimator's; the Dask
        fit makes no decorrelation map)."""
        if _is_dask(X):
            self._check_fitted()
            width = self.classes_.size if self._multiclass else None
            return self._lazy(X, "decision_function", width, decorrelate)
        return super().decision_function(X, decorrelate)

    def predict_proba(self, X, decorrelate=None):
        """(n, K) probabilities (K = 2 for two classes); a dask array (lazy) for dask input."""
        if _is_dask(X):
            self._check_fitted()
            return self._lazy(X, "predict_proba", max(2, self.classes_.size), decorrelate)
        return super().predict_proba(X, decorrelate)

    def predict(self, X, decorrelate=None):
        """Class labels; a dask array (lazy) for dask input, of the labels' dtype."""
        if _is_dask(X):
            self._check_fitted()
            return self._lazy(X, "predict", None, decorrelate, self.classes_.dtype)
        return super().predict(X, decorrelate)


class DaskBDTRegressor(_DaskMixin, BDTRegressor):
    """:class:`~hepbdt.BDTRegressor` fitted on a Dask cluster (squared error; see the module
    docstring for the options it refuses). ``n_trees`` defaults to 200."""

    _local_class = BDTRegressor
    __init__ = _dask_constructor(BDTRegressor, "Set the options (see BDTRegressor); "
                                 "nothing is checked until fit.")

    def fit(self, X, y, sample_weight=None, *, client=None, bin_edges=None, feature_names=None,
            feature_definitions=None) -> DaskBDTRegressor:
        """Train on dask arrays X (n, m), y (n,) and optional weights (see
        :meth:`DaskBDTClassifier.fit`)."""
        require_dask()
        import dask.array as da  # noqa: I001 -- the optional extra, imported with the fit

        self.n_features_in_ = int(da.asarray(X).shape[1])
        return self._dask_fit(X, y, sample_weight, client, bin_edges, None, feature_names,
                              feature_definitions)

    def predict(self, X):
        """Predicted targets; a dask array (lazy) for dask input."""
        if _is_dask(X):
            return self._lazy(X, "predict", None)
        return super().predict(X)
