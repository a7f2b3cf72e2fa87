"""The AdaBoost family on a Dask fit's parts: the loops of ``run_adaboost`` (adaboost,
realadaboost, eps; two classes) and ``run_samme`` (adaboost with three classes or more),
their per-event work on the parts (:mod:`hepbdt.dask._parts`), the in-memory model bit for
bit at the same bin edges.

These boosters grow trees on float (exact) histograms, whose sums depend on the order of
the additions. Adding the parts' histograms, or exact mergeable sums of them rounded once,
would give other bits than memory's sums, which add each node's events one after another
in event order; memory's results are not changed to suit. So the parts continue each
other's histograms in event order (:class:`~hepbdt.engine.data_parallel.ExactPartTree`),
which is memory's order: a chain of the parts a level (part after part, not pairwise),
and the trees are memory's to the bit. The sums of the loop (the total weights, the
weighted error, the renormalisation) are numpy's pairwise sums in memory; the client
rebuilds them from the parts' pieces (:class:`~hepbdt.engine.data_parallel.PairwiseSum`):
the same recursion, the same bits, whatever the number of parts. Per-event arithmetic
(the reweighting's exponentials) is the same numpy code on the parts, so the workers must
compute numpy's functions as the client's machine does (one kind of machine).

A tree on a resample (``subsample`` < 1, ``subsample_mode="poisson"``, bagging's bootstrap)
takes memory's draw, made on the client with memory's generator (uniform and Poisson draws
do not depend on the weights), each part sent its share (packed bits of its drawn events,
or their counts): its partition holds its drawn events, W their multiplicity, and the parts
count each split's events so that the client builds the smaller child as memory does (by
events, not multiplicity); the output of a tree is computed on every event from the codes;
a tree left out (an empty or chance resample) is drawn again, as in memory. Not
distributed: the weighted draw (a multinomial over every event's boosted weight, each
tree) and leaf-wise growth.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._util import Progress
from ..boosting._loop import BoostResult, _draw, add_tree, node_sums
from ..boosting.adaboost import (
    MIN_ERROR,
    MIN_GAIN_FRACTION,
    NODE_PURITY_LIMIT,
    _AdaBoostRun,
    _EmptySample,
    _leaf_output,
    _sample_mode,
    _Stop,
    chance_tree,
    empty_sample,
    no_tree_error,
    node_purity,
    purity_alpha,
)
from ..boosting.samme import CHANCE_TOLERANCE, _SammeRun
from ..engine._types import CLASS_GINI, CRITERIA
from ..engine.data_parallel import PairwiseSum, SummedTree
from ..engine.grower import GrownTree, sample_features
from ..engine.split import SplitParams
from ..model import Forest, ForestBuilder
from . import _parts
from ._cluster import Cluster

__all__ = ["AdaBoostOnParts"]


class _Calls:
    """A step on every part, each with its own requests for numpy's sums of the vectors the
    parts keep, and chains of a step through the parts in event order."""

    def __init__(self, cluster: Cluster, lengths: list[int]):
        self.cluster = cluster
        self.parts = range(len(cluster.workers))
        self.full = PairwiseSum(lengths)  # a vector of every event, float64
        self.cast = PairwiseSum(lengths, cast=True)  # float32, summed in float64
        self.received = 0

    def call(self, step, *args: Any, sums: dict[str, PairwiseSum] | None = None,
             per_part: list | None = None):
        """The parts' results of ``step(*args, requests[, per_part[i]])`` and numpy's sums
        asked for."""
        sums = sums or {}
        results = self.cluster.gather([
            self.cluster.submit_to(i, step, *args, {name: s.requests(i) for name, s in sums.items()},
                                   *(() if per_part is None else (per_part[i],)))
            for i in self.parts])
        totals = {name: s.total([r["pieces"][name] for r in results]) for name, s in sums.items()}
        return results, totals

    def sum_of(self, name: str, counts: list[int]) -> float:
        """numpy's sum of the vector ``name`` of ``counts`` values a part (a selection)."""
        return self.call(_parts.ada_sums, sums={name: PairwiseSum(counts)})[1][name]

    def chain(self, step, *args: Any) -> np.ndarray:
        """``step(running, *args)`` on each part in event order, each continuing the last one's."""
        running = None
        for i in self.parts:
            running = self.cluster.gather(self.cluster.submit_to(i, step, running, *args),
                                          "histograms")
        return running


class AdaBoostOnParts:
    """The AdaBoost loop of an estimator's options on a fit's parts (their events counted
    by ``lengths``); ``run()`` gives memory's (Forest, BoostResult)."""

    def __init__(self, estimator: Any, cluster: Cluster, mapper, lengths: list[int],
                 n_trees: int, traffic: Any):
        self.options = estimator
        self.calls = _Calls(cluster, lengths)
        self.mapper = mapper
        self.n = sum(lengths)
        self.n_trees = n_trees
        self.traffic = traffic  # _Traffic of the estimators: bytes per level and tree
        self.n_classes = max(2, estimator.classes_.size)
        self.samme = self.n_classes > 2
        variant = estimator.boosting
        # the attributes ``_AdaBoostRun.result`` and ``_SammeRun.result`` read
        self.variant, self.use_yes_no_leaf = variant, bool(estimator.use_yes_no_leaf)
        self.yes_no = self.use_yes_no_leaf or variant == "realadaboost"
        self.threshold = 0.0 if self.yes_no else NODE_PURITY_LIMIT
        self.builder = ForestBuilder(mapper.n_bins_.size, base_score=0.0,
                                     aggregation="sum" if variant == "realadaboost"
                                     else "weighted_mean")
        self.codes = np.empty((mapper.n_bins_.size, 0), np.uint8)  # the width _SammeRun reads
        self.trees: list[tuple[GrownTree, np.ndarray, float]] = []
        self.purities: list[np.ndarray] = []
        self.errors: list[float] = []
        self.train_loss: list[float] = []
        self.skipped = self.skipped_in_a_row = 0
        self.weight_sum = 0.0
        self.tree_bytes: list[dict[str, int]] = []  # each tree's histogram bytes
        # each tree's events: memory's draw (``_TreeOptions``), made on the client
        self.subsample = float(estimator.subsample)
        self.mode = _sample_mode(variant, self.subsample, estimator.subsample_mode)
        self.resampled = self.mode != "uniform" or self.subsample < 1.0
        self.bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    def spec(self) -> dict[str, Any]:
        """What each part's state (``_parts.bin_exact``) needs to know of the run."""
        return {"variant": self.variant, "n_classes": self.n_classes, "threshold": self.threshold,
                "inverse_boost": self.options.negative_weights == "inverse_boost"}

    def run(self, rng: np.random.Generator) -> tuple[Forest, BoostResult]:
        """Boost up to ``n_trees`` trees; memory's forest and record."""
        stopped, scale, total0 = None, None, None
        verbose = getattr(self.options, "verbose", False)
        with Progress(self.n_trees, "training", enabled=True if verbose else None,
                      unit="trees") as progress:
            for it in range(self.n_trees):
                try:
                    scale, total0 = self._tree(it, scale, total0, rng)
                except _Stop as stop:
                    stopped = str(stop)
                    break
                progress.moveto(it + 1, f"error {self.errors[-1]:.4g}" if self.errors else "")
            progress.moveto(self.n_trees)
        if not (self.trees if self.samme else len(self.builder)):
            raise no_tree_error(self, stopped)
        if self.samme:
            return _SammeRun.result(self, self.mapper, stopped)
        return _AdaBoostRun.result(self, self.options.criterion, stopped)

    def _tree(self, it: int, scale: float | None, total0: float | None,
              rng: np.random.Generator) -> tuple[float | None, float]:
        """One tree of the loop: drawn, grown, weighed, added, the events reweighted; the
        next tree's renormalisation (None: none) and the initial total weight. A tree that
        resampling leaves out (an empty or chance tree) is neither added nor reweighted."""
        calls = self.calls
        shares = self._draw(rng) if self.resampled else None
        sums = {"w_eff": calls.full, "w_tree": calls.cast}
        if total0 is None:
            sums["w0"] = calls.full
        began, totals = calls.call(_parts.ada_tree, scale, sums=sums, per_part=shares)
        n_drawn = sum(b["events"] for b in began)  # with multiplicity; weight 0: no event
        total0 = totals.get("w0", total0)
        total_eff = totals["w_eff"]
        if not total_eff > 0:
            raise _Stop(f"tree {it}: the events' net weight {total_eff:.6g} is not positive")
        if not totals["w_tree"] > 0:
            empty_sample(self, self.resampled, str(_EmptySample(
                f"tree {it}: the sample's net weight {totals['w_tree']:.6g} is not positive")))
            return None, total0
        features = sample_features(np.ones(self.mapper.n_bins_.size, np.bool_),
                                   self.options.colsample_bytree, rng)
        first = len(self.traffic.levels)
        tree = self._grow(features, totals["w_tree"], n_drawn, rng)
        self.tree_bytes.append({key: sum(v[key] for v in self.traffic.levels[first:])
                                for key in ("parts_sent", "client_received")})
        if self.samme:
            weighed = self._weigh_samme(tree, total_eff, it)
        else:
            weighed = self._weigh(tree, total_eff, any(b["negative"] for b in began), it)
        if weighed is None:  # left out (resampled): drawn again
            return None, total0
        tree_weight, factor = weighed
        added, new = calls.call(_parts.ada_add, tree_weight, self.weight_sum, factor,
                                sums={} if factor is None else {"new_total": calls.full})
        self.train_loss.append(calls.sum_of("loss", [a["count"] for a in added]) / total0)
        if factor is None:  # bagging: the weights never change
            return None, total0
        new_total = new["new_total"]
        if not (new_total > 0 and all(a["finite"] for a in added)):
            raise _Stop(f"tree {it}: the reweighted net weight {new_total:.6g} is not positive")
        if self.variant == "adaboost" and self.yes_no and self.errors[-1] <= MIN_ERROR:
            raise _Stop(f"tree {it}: a perfect tree (error 0)")
        return total0 / new_total, total0

    def _draw(self, rng: np.random.Generator) -> list[tuple]:
        """Memory's draw of a tree's events (``draw_sample``: uniform or Poisson, whose draws
        do not depend on the weights): each part's share of it (packed bits of its drawn
        events, or their counts)."""
        rows, _, counts = _draw(np.zeros(self.n), self.subsample, self.mode, rng)
        cuts = list(zip(self.bounds[:-1], self.bounds[1:], strict=True))
        if counts is None:
            drawn = np.zeros(self.n, np.bool_)
            drawn[rows] = True
            return [("uniform", np.packbits(drawn[a:b])) for a, b in cuts]
        dtype = np.min_scalar_type(int(counts.max()) if counts.size else 0)
        return [(self.mode, counts[a:b].astype(dtype)) for a, b in cuts]

    def _grow(self, features: np.ndarray, total: float, n_drawn: int,
              rng: np.random.Generator) -> GrownTree:
        """A tree grown level by level on the parts' chained exact histograms; each level's
        smaller children counted in events, as memory chooses them."""
        options, calls = self.options, self.calls
        criterion = _criterion(options, self.samme)
        params = SplitParams(criterion)
        params.min_child_weight = options.min_node_size_ * float(n_drawn)
        params.min_split_gain = MIN_GAIN_FRACTION * total
        m = self.mapper.n_bins_.size
        grower = SummedTree(None, features, self.mapper.n_bins_, params, options._depth_limit(),
                            options.colsample_bylevel, options._node_fraction(m), rng,
                            n_channels=self.n_classes + 1 if self.samme else 3)
        plan = grower.start(self._histograms(0, 1, features, None))
        depth = 0
        while plan is not None:
            sides = calls.cluster.gather(calls.cluster.run(_parts.exact_level, args=(plan,)))
            depth += 1
            if plan.last:
                break
            # the counts of multiplicity in W need not order the children as the events do
            plan.small_left = (sum(left for left, _ in sides)
                               <= sum(right for _, right in sides))
            plan = grower.advance(self._histograms(depth, int(plan.parents.size), None,
                                                   plan.small_left))
        return grower.grown_tree()

    def _histograms(self, depth: int, nodes: int, used: np.ndarray | None,
                    small_left: np.ndarray | None) -> np.ndarray:
        """The waiting nodes' histograms, chained through the parts (and their bytes)."""
        before = self.calls.cluster.received.get("histograms", 0)
        hists = self.calls.chain(_parts.exact_histograms, used, small_left)
        self.traffic.level(depth, nodes, hists,
                           self.calls.cluster.received["histograms"] - before)
        return hists

    def _weigh(self, tree: GrownTree, total_eff: float, negative: bool,
               it: int) -> tuple[float, tuple | None] | None:
        """``_AdaBoostRun.evaluate`` and ``weigh``: the tree's values and weight, the parts'
        reweighting (None: none, bagging); the tree added to the forest. None: the tree is
        left out (a chance tree of a resampled run)."""
        if self.variant == "realadaboost" and negative:  # ``_real_purity``'s |w| sums
            purity = node_purity(*node_sums(tree, self.calls.chain(_parts.exact_leaf_sums)))
        else:
            purity = node_purity(tree.sum_a, tree.sum_b)
        value = np.where(tree.is_leaf, _leaf_output(self.variant, self.use_yes_no_leaf, purity),
                         0.0)
        purity_leaves = not self.yes_no and self.variant == "adaboost"
        sums = {"r": self.calls.full} if purity_leaves else {}
        evaluated, totals = self.calls.call(_parts.ada_evaluate, value, sums=sums)
        if self.variant == "bagging":
            tree_weight, factor = 1.0, None
        elif self.variant == "realadaboost":
            tree_weight, factor = 1.0, ("real",)
        elif self.variant == "eps":
            tree_weight = float(self.options.epsilon)
            factor = ("wrong", math.exp(2.0 * tree_weight))
        elif self.yes_no:
            err = self.calls.sum_of("err", [e["count"] for e in evaluated]) / total_eff
            tree_weight = self._discrete_weight(-err if err < 0 else err, it)
            if tree_weight is None:
                return None
            factor = ("wrong", math.exp(tree_weight))
        else:
            tree_weight = purity_alpha(totals["r"] / total_eff, len(self.builder) == 0,
                                       float(self.options.beta), self.errors, it)
            factor = ("purity", tree_weight)
        self.skipped_in_a_row = 0
        add_tree(self.builder, tree, value, self.mapper, tree_weight)
        self.purities.append(purity)
        if self.variant != "realadaboost":
            self.weight_sum += tree_weight
        return tree_weight, factor

    def _discrete_weight(self, err: float, it: int) -> float | None:
        """``_AdaBoostRun._discrete_weight``: alpha = beta ln((1 - err) / err); None: a
        chance tree left out (resampled)."""
        if err >= 0.5:  # without a resample: a ValueError at the first tree, else the end
            return chance_tree(self, self.resampled, len(self.builder) == 0, f"{err:.4g} >= 0.5",
                               it)
        self.errors.append(err)
        err = max(err, MIN_ERROR)
        return float(self.options.beta) * math.log((1.0 - err) / err)

    def _weigh_samme(self, tree: GrownTree, total_eff: float, it: int) -> tuple[float, tuple] | None:
        """``_SammeRun.says`` and ``weigh``: alpha, the parts' reweighting; the tree kept
        (None: a chance tree left out, resampled)."""
        k = self.n_classes
        classes = np.where(tree.is_leaf, np.argmax(tree.class_sums, axis=1), 0)
        evaluated, _ = self.calls.call(_parts.ada_evaluate, classes.astype(np.float64))
        err = abs(self.calls.sum_of("err", [e["count"] for e in evaluated]) / total_eff)
        if err >= (1.0 - 1.0 / k) * (1.0 - CHANCE_TOLERANCE):
            return chance_tree(self, self.resampled, not self.trees,
                               f"{err:.4g} >= 1 - 1/K = {1 - 1 / k:.4g}", it)
        self.skipped_in_a_row = 0
        self.errors.append(err)
        err = max(err, MIN_ERROR)
        alpha = float(self.options.beta) * (math.log((1.0 - err) / err) + math.log(k - 1.0))
        self.trees.append((tree, classes, alpha))
        return alpha, ("wrong", math.exp(alpha))


def _criterion(options: Any, samme: bool) -> int:
    """The engine's criterion code: the multi-class Gini index for SAMME, else the option's."""
    return CLASS_GINI if samme else CRITERIA[options.criterion]
