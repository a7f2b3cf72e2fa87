"""uBoost: AdaBoost ensembles whose event weights also push a class's efficiency flat in mass.

After Stevens and Williams 2013 (arXiv:1305.7248), as hep_ml's ``uBoostBDT`` and
``uBoostClassifier`` implement it. For each of K target efficiencies e_k (K steps, evenly
spaced in (0, 1): 1/(K+1), ..., K/(K+1)) one AdaBoost ensemble is grown by the ordinary
loop of :mod:`.adaboost` (``boost_trees``, the one grower); after each tree, besides
AdaBoost's own reweighting, the target class's events get the uniformity factor

    exp(strength * beta * (e_k - e_b))    beta = ln(1 / E),  E = sum_i v_i |e_b(i) - e_k| / sum_i v_i

where e_b is the efficiency, in the event's bin b of the decorrelation variable(s), of the
class's cut at e_k (the class's "efficiency" is the weight on its own side of the cut:
above it for signal, below it for background, as hep_ml's signed scores), and v the
current boosted weights of the class. The cut lies half-way between two adjacent distinct
scores of the class, the pair whose split puts the fraction nearest e_k on the class's
side: discrete AdaBoost's scores repeat (a score is a weighted mean of +-1 leaves), and a
cut at a repeated score would split a tie by a rule instead of by the score. A class whose
events all share one score v (a perfect first tree, a separable sample) is put wholly on the
side of the cut nearest e_k (all of it on its side when e_k >= 0.5), the cut half-way between
v and the nearest other score of any event. Bins where the class
passes too rarely gain weight, so the next trees move their events to the class's side.
The factor only moves weight between the bins of the class: the class's boosted total is
kept. ``strength`` is hep_ml's ``uniforming_rate`` (0: every step is plain AdaBoost, bit
for bit); beta is hep_ml's ln(1 / e'), which grows as the efficiencies become uniform.

Local efficiencies are taken in the equal-weight bins (cells of the grid for k > 1
variables) of the flatness loss (``decorrelation.flatness_bins``), not in hep_ml's 50
nearest neighbours: the bins are weighted with the event weights (hep_ml's neighbours
and cuts count events), cost one ``bincount`` a tree with no neighbour search, give every
event of a region the same efficiency (50 neighbours carry a binomial noise of about
0.07 at e = 0.5), and are the cells that the flatness loss already uses. The cut and the
efficiencies use the events' own weights and a hard cut (hep_ml's uBoostClassifier counts
events and smooths the cut with its width 10 / K); E uses the boosted weights, as hep_ml's,
but of the class's events only (hep_ml's averages over both classes). A
target class whose weights do not sum to a positive total is refused; a bin whose signed
weights do not (negative weights) has no efficiency and its events get a factor of 1, and a
bin's efficiency is clipped to [0, 1] (signed weights can put it outside: E would exceed 1
and beta = ln(1 / E) turn negative, pushing weight away from the bins that pass too rarely).

The model averages the steps' smoothed cut decisions (hep_ml's ``uBoostClassifier``):
score = (1/K) sum_k sigmoid((s_k - c_k) / tau_k) in [0, 1], with s_k the step's AdaBoost
score, c_k its cut after its last tree and tau_k = ``SMOOTHING`` times the weighted
standard deviation of the step's training scores (hep_ml's width is 10 / K in units of its
unnormalised scores). One Forest holds the K ensembles side by side (aggregation
"uboost", :class:`hepbdt.model.Forest`). Nothing here knows about estimators or files.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .._util import Progress
from ..engine.split import SplitParams
from ..model import Forest, ForestBuilder
from ._loop import BoostResult
from .adaboost import (
    MIN_ERROR,
    _AdaBoostRun,
    _sample_mode,
    _Stop,
    _TreeOptions,
    boost_trees,
)
from .decorrelation import check_decorrelate, flatness_bins

__all__ = ["UBOOST_TARGETS", "SMOOTHING", "UniformityWeights", "class_cut", "efficiency_steps",
           "run_uboost"]

UBOOST_TARGETS = ("background", "signal")
SMOOTHING = 0.25  # tau_k: this fraction of the step's weighted score standard deviation


def efficiency_steps(n_steps: int) -> NDArray:
    """The K target efficiencies 1/(K+1), ..., K/(K+1), float64 (K,)."""
    return np.linspace(0.0, 1.0, int(n_steps) + 2)[1:-1]


def class_cut(signed: NDArray, w: NDArray, efficiency: float,
              others: NDArray | None = None) -> float:
    """The cut half-way between two adjacent distinct values of ``signed`` (n,) whose
    weight fraction above it is nearest ``efficiency`` (the lowest such cut; |w| when the
    weights do not add up to a positive total). A class of one distinct value goes wholly
    to the side nearest ``efficiency``, the cut half-way to the nearest other value of
    ``others`` (every event's signed score; ``_lone_cut``)."""
    order = np.argsort(signed, kind="stable")
    values = signed[order]
    weights = np.asarray(w, np.float64)[order]
    total = float(weights.sum())
    if not total > 0:
        weights, total = np.abs(weights), float(np.abs(weights).sum())
    gaps = np.flatnonzero(values[1:] != values[:-1])
    if gaps.size == 0:
        return _lone_cut(float(values[0]), efficiency, others)
    if not total > 0:
        return float(values[0])
    above = total - np.cumsum(weights)[gaps]
    k = gaps[int(np.argmin(np.abs(above / total - efficiency)))]
    return float(0.5 * (values[k] + values[k + 1]))


def _lone_cut(value: float, efficiency: float, others: NDArray | None) -> float:
    """The cut for a class whose values all equal ``value``: below it (the class above the
    cut, fraction 1) when ``efficiency`` >= 0.5, else above it (fraction 0), half-way to the
    nearest distinct value of ``others`` on that side (mirrored when none lies there);
    ``value`` itself without ``others`` or when no other value exists."""
    if others is None:
        return value
    others = np.asarray(others, np.float64)
    below, above = others[others < value], others[others > value]
    if below.size == 0 and above.size == 0:
        return value
    half_below = 0.5 * (value - below.max()) if below.size else None
    half_above = 0.5 * (above.min() - value) if above.size else None
    if efficiency >= 0.5:
        return value - (half_below if half_below is not None else half_above)
    return value + (half_above if half_above is not None else half_below)


class UniformityWeights:
    """One uBoost step's uniformity factor for the ``target`` class (module docstring).

    ``m`` (n, k) float64 decorrelation variables, ``y`` 0/1 labels, ``w`` event weights
    (which fix the bins, the cut and the efficiencies); ``efficiency`` the step's e_k.
    ``measure`` records the cut (``cuts``) and the bins' efficiencies (``local``) of a
    score; ``factor`` gives the targeted events' factor; ``apply`` multiplies it into a
    run's boost weights.
    """

    def __init__(self, m: NDArray, y: NDArray, w: NDArray, efficiency: float, strength: float,
                 n_bins: int, target: str):
        if target not in UBOOST_TARGETS:
            raise ValueError(f"decorrelation_target={target!r} is not valid for uBoost; "
                             f"expected one of {UBOOST_TARGETS}")
        if not 0 < efficiency < 1:
            raise ValueError(f"uBoost efficiency {efficiency!r} is not valid; expected a number "
                             "in (0, 1)")
        if not (np.isfinite(strength) and strength >= 0):
            raise ValueError(f"decorrelation_strength={strength!r} is not valid; expected a "
                             "finite number >= 0")
        self.sign = 1.0 if target == "signal" else -1.0
        self.efficiency, self.strength = float(efficiency), float(strength)
        m = check_decorrelate(m, np.shape(y)[0])
        class_index, group = flatness_bins(m, y, np.asarray(w, np.float64), n_bins, target)
        self.targeted = np.flatnonzero(class_index >= 0)
        self.group = group[self.targeted]
        self.w = np.asarray(w, np.float64)[self.targeted]
        self.n_cells = int(n_bins) ** m.shape[1]
        self.bin_total = np.bincount(self.group, weights=self.w, minlength=self.n_cells)
        self.cuts: list[float] = []
        self.local = np.full(self.n_cells, self.efficiency)

    def measure(self, run: _AdaBoostRun | NDArray) -> None:
        """The cut keeping ``efficiency`` of the class on its side, and each bin's efficiency
        at it, for a run's current ensemble (or a score array, (n,))."""
        score = run.score() if isinstance(run, _AdaBoostRun) else np.asarray(run, np.float64)
        signed = self.sign * score[self.targeted]
        cut = class_cut(signed, self.w, self.efficiency, self.sign * score)
        passed = np.bincount(self.group, weights=self.w * (signed > cut), minlength=self.n_cells)
        with np.errstate(invalid="ignore", divide="ignore"):
            local = np.clip(passed / self.bin_total, 0.0, 1.0)
        self.local = np.where(self.bin_total > 0, local, self.efficiency)
        self.cuts.append(self.sign * cut)

    def factor(self, boosted: NDArray) -> NDArray:
        """exp(strength * beta * (e - e_b)) of each targeted event, (len(targeted),), given
        every event's boosted weight ``boosted`` (n,)."""
        gap = self.efficiency - self.local[self.group]
        v = np.abs(boosted[self.targeted])
        spread = float(np.sum(v * np.abs(gap))) / max(float(v.sum()), MIN_ERROR)
        beta = math.log(1.0 / max(spread, MIN_ERROR))
        return np.exp(self.strength * beta * gap)

    def apply(self, run: _AdaBoostRun, it: int) -> None:
        """Multiply the targeted events' boost weights by ``factor``, the class's boosted
        total kept; _Stop when that total is not positive or a weight not finite."""
        if self.strength == 0:
            return
        rows = self.targeted
        before = float(np.sum(run.w0[rows] * run.boost[rows]))
        run.boost[rows] *= self.factor(run.w0 * run.boost)
        after = float(np.sum(run.w0[rows] * run.boost[rows]))
        if not (before > 0 and after > 0 and np.all(np.isfinite(run.boost[rows]))):
            raise _Stop(f"tree {it}: the uniformity reweighting left the class's weight "
                        f"{after:.6g}")
        run.boost[rows] *= before / after


def _concatenate(forests: list[Forest]) -> Forest:
    """The forests' trees one after the other in one Forest (aggregation "uboost")."""
    builder = ForestBuilder(forests[0].n_features, aggregation="uboost")
    for forest in forests:
        for t in range(forest.n_trees):
            nodes = forest.tree_slice(t)
            arrays = {k: getattr(forest, k)[nodes] for k in
                      ("feature", "threshold", "bin_threshold", "missing_left", "value", "gain",
                       "cover")}
            for side in ("left", "right"):
                child = getattr(forest, side)[nodes]
                arrays[side] = np.where(child >= 0, child - nodes.start, -1)
            builder.add(float(forest.tree_weights[t]), **arrays)
    return builder.build()


def _width(score: NDArray, w: NDArray) -> float:
    """SMOOTHING times the |w|-weighted standard deviation of ``score`` (1e-12 at least)."""
    a = np.abs(w)
    mean = float(np.sum(a * score) / a.sum())
    return max(SMOOTHING * math.sqrt(float(np.sum(a * (score - mean) ** 2) / a.sum())), 1e-12)


def run_uboost(codes: NDArray, y: NDArray, w: NDArray, n_value_bins: NDArray, mapper,
               decorrelate: NDArray, *, n_steps: int, strength: float, n_bins: int,
               target: str, variant: str, n_trees: int, max_depth: int | None, criterion: int,
               criterion_name: str = "", beta: float = 0.5, epsilon: float = 0.01,
               use_yes_no_leaf: bool = True, min_node_size: float = 0.0,
               subsample: float = 1.0, subsample_mode: str = "uniform",
               colsample_bytree: float = 1.0, colsample_bylevel: float = 1.0,
               colsample_bynode: float = 1.0, inverse_boost_negative: bool = False,
               rng: np.random.Generator, verbose: bool = False,
               max_leaves: int | None = None) -> tuple[Forest, BoostResult]:
    """``n_steps`` uBoost steps of up to ``n_trees`` trees each, in one Forest.

    Parameters as :func:`hepbdt.boosting.adaboost.run_adaboost`, plus ``decorrelate``
    (n, k) float64, the variables made flat; ``n_steps`` K; ``strength`` the uniforming
    rate (>= 0); ``n_bins`` bins per variable; ``target`` ``"background"`` or ``"signal"``.
    The steps draw from ``rng`` one after the other, so step 1 at strength 0 is the model
    ``run_adaboost`` grows with the same generator.

    Returns
    -------
    (Forest, BoostResult): the forest (aggregation "uboost", ``extra["uboost"]``), and the
    record; ``train_loss`` holds every step's curve one after the other.
    """
    options = _TreeOptions(n_value_bins, SplitParams(criterion), max_depth, min_node_size,
                           subsample, _sample_mode(variant, subsample, subsample_mode),
                           colsample_bytree, colsample_bylevel, colsample_bynode, max_leaves)
    steps = efficiency_steps(n_steps)
    progress = Progress(n_trees * steps.size, "training", enabled=True if verbose else None,
                        unit="trees")
    forests, cuts, widths, losses, stopped = [], [], [], [], []
    for k, efficiency in enumerate(steps):
        run = _AdaBoostRun(codes, y, w, mapper, variant, use_yes_no_leaf, beta, epsilon,
                           inverse_boost_negative)
        uniformity = UniformityWeights(decorrelate, y, w, efficiency, strength, n_bins, target)
        reason = boost_trees(run, options, n_trees, rng, progress, k * n_trees, uniformity)
        forest, result = run.result(criterion_name, reason)
        if forest.n_trees == 0:
            raise ValueError(f"uBoost step {k + 1} (efficiency {efficiency:.3g}) grew no tree: "
                             f"{reason}")
        forests.append(forest)
        cuts.append([float(c) for c in uniformity.cuts])
        widths.append(_width(run.score(), run.w0))
        losses.append(result.train_loss)
        stopped.append(reason)
    progress.moveto(n_trees * steps.size)
    progress.close()
    return _uboost_result(forests, cuts, widths, losses, stopped, steps,
                          dict(strength=float(strength), bins=int(n_bins), target=target))


def _uboost_result(forests, cuts, widths, losses, stopped, steps, settings):
    """The steps' forests as one uBoost Forest, and the run's record."""
    forest = _concatenate(forests)
    first = forests[0].extra
    forest.extra.update(
        boosting=first["boosting"], criterion=first["criterion"],
        use_yes_no_leaf=first["use_yes_no_leaf"], score_min=0.0,
        purity=[p for f in forests for p in f.extra["purity"]],
        error_fraction=[e for f in forests for e in f.extra["error_fraction"]],
        skipped_trees=int(sum(f.extra["skipped_trees"] for f in forests)),
        uboost={"step_trees": [int(f.n_trees) for f in forests],
                "step_aggregation": "sum" if first["boosting"] == "realadaboost"
                else "weighted_mean",
                "efficiencies": [float(e) for e in steps], "cuts": cuts,
                "widths": [float(v) for v in widths], "stopped": stopped, **settings})
    if any(stopped):
        forest.extra["stopped"] = next(s for s in stopped if s)
    builder = ForestBuilder(forest.n_features)
    return forest, BoostResult(builder, 0.0, np.concatenate(losses), None, None,
                               extra={"stopped": forest.extra.get("stopped")})
