"""What a configuration asks of the machine: training time and memory, before any work.

:func:`estimate_lines` counts the entries of the samples' trees, a tree that several
samples read once (uproot's
``num_entries``; no event data is read, and from the same metadata the largest basket or
cluster a read decompresses at once), multiplies events x features x trees by a cost
measured on the development machine, and says so in a line for ``hepbdt train --check``,
with a ``warning:`` line when the memory is more than this machine has available or the
training would take more than an hour. The figures are upper bounds of the right order:
cuts are not applied (entries before cuts) and early stopping may keep fewer trees.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import uproot

from .._util import available_memory, is_classifier
from ..engine.binning import SUBSAMPLE_FOR_EDGES
from ..estimators import ADABOOST_BOOSTINGS, effective_depth, growth_text, max_trees
from ..evaluation.ranking import CORRELATION_BLOCK
from ..io.errors import ExpressionError, InputError
from ..io.expressions import Expression
from ..io.samples import Sample, file_identity, get_tree, read_chunk_bytes, read_unit_bytes, resolve_sources
from .config import AnalysisConfig, ConfigError

__all__ = ["Estimate", "estimate", "estimate_lines", "available_memory", "use_binned",
           "check_memory", "SECONDS_PER_EVENT_FEATURE_TREE"]

#: Training seconds per event, feature and tree of depth 3, measured on the development
#: machine (2 cores, the default threads, otherwise idle): after a warm-up fit,
#: ``BDTClassifier(n_trees=200, max_depth=3).fit(X, y)`` on X = 100,000 x 10 float32
#: Gaussian events (y = x0 + x1 / 2 + noise > 0) took 1.31 s, the best of 3, so
#: 1.31 / (100,000 x 10 x 200) = 6.5e-9 s. The same fit with max_depth=6 took 1.64 s:
#: a tree costs about (9 + depth) / 12 of a depth-3 tree (a fixed part per tree plus one
#: histogram pass per level). A machine with more cores trains faster.
SECONDS_PER_EVENT_FEATURE_TREE = 6.5e-9
# Bytes that `hepbdt train` holds at its peak, per event and feature and per event: the
# float32 features read (4) and the copies the training sets hold (4 each: a split's train
# and test sets make one copy, k-fold keeps k training sets of (k-1)/k, so k-1 copies),
# with n_trees="auto" the fit's copy of the events it holds out (4 for a tenth of the
# events one fit trains on; the others are binned from the training set directly), plus
# one fit's bin codes and their feature-major copy (2); per event the weight (8), event
# number (int32 entry numbers or an int64 expression: 8), label and sample index (one
# byte each up to 127 classes and 128 samples), 18, with each copy, plus one fit's
# per-event state, at most the exact histograms' (58: scores 8, float32 weights 4 and
# channels 8, label 1, partition and scratch 8, moving payload and its scratch 24, event
# leaves 1, gradient's negated channel 4). (A 1M x 28 float fit measured 4.0 bytes a value
# of its own with n_trees=200 and 4.8 with n_trees="auto", X held outside: ``tracemalloc``.)
_FEATURE_BYTES, _CODE_BYTES, _EVENT_BYTES, _FIT_BYTES = 4, 2, 18, 58
# The AdaBoost family's fit per event: its float64 weights, boost factors, ensemble and a
# round's boosted weights (8 each), the tree's rows, sample weights and A, B, W channels
# (20), the serial grower's payload and index scratch (32) and the partition and payload it
# fills (16), the tree's output (8) and flags (4): measured 120 beside the codes
# (tracemalloc's slope, 200k-400k events x 4 features; 2026-12-05). Counted as 58, a
# 2-feature training of 400,000 events allocated 132 bytes an event against 122 estimated.
_ADABOOST_FIT_BYTES = 120
# Mass decorrelation's per-event state beside its booster's: the flatness loss's variables
# (float64 each), the float64 weights its cells read, the cells, orders and its gradient
# term; uBoost's per-step cuts and efficiencies. Measured (tracemalloc's slope, 200k-400k
# events x 4 features, one variable; 2026-12-05): flatness 109 bytes an event against
# gradient boosting's 53, uBoost 152 against AdaBoost's 124; uncounted, a 2-feature
# flatness training of 400,000 events allocated 55.8 MB against 48.8 MB estimated.
_FLATNESS_BYTES, _UBOOST_BYTES, _DECORRELATION_VARIABLE_BYTES = 56, 32, 8
# The bin edges are fitted on a sample of at most SUBSAMPLE_FOR_EDGES events, held twice
# (the rows gathered, then each feature's column): 8 bytes per sampled event and feature.
_EDGE_SAMPLE_BYTES = 8
# The report and figures of a binned training (measured: 490 bytes an event at 400k x 28
# with both, against 280 estimated without them): room for float values of the features
# (8 bytes a value for more than two classes, an upper bound: the multi-class staged
# scores and the float fallbacks see them; 4 otherwise, the score trees' float32 values,
# as the binary staged scores and the permutation tests read the codes), plus the scores,
# curves and their sorts (about 64 bytes an event).
_BINNED_OUTPUT_FEATURE_BYTES, _OUTPUT_EVENT_BYTES = 2 * _FEATURE_BYTES, 64
# Per sampled event of the binned read's sketch besides its floats: its key and weight.
_SKETCH_EVENT_BYTES = 16
# Each class beyond the first of a multi-class fit: its float64 scores and two float32
# channels in the fit (16), and its raw score and probability in the score trees (16).
_CLASS_BYTES = 32
# binned = "auto" reads binned when the float path would need more than this share of the
# memory (stated, else available): the estimate is an upper bound, but only roughly.
_AUTO_BINNED_SHARE = 0.5
# k-fold writes its outputs after the k fits, holding every event (the test set), the
# k - 1 training copies, and per training row its score and fold (16), the score tree's
# bookkeeping copies (classID, label, sample as int32, fold as float64: about 21) and the
# sorts of the training sample's efficiencies (about 30): 64 a row, measured 59 (peak RSS
# less the process's, 2.4M events x 5 features, kfold = 5: 1.04 GB, where the fits' peak
# was 0.77 GB and the estimate of the fits alone 0.63 GB); and the TrainTree's float32
# features of each row (4 a feature: at 16 features the peak grew 843 bytes an event
# from 50,000 to 200,000 events, where 64 a row alone estimated 666).
_KFOLD_TRAIN_ROW_BYTES = 64
# The report and figures of a float training beside the data it holds: a float32 copy of
# the features (they read the data held; 8 bytes a value, a binned training's room, made
# the estimate 2.02x the peak at 400,000 x 28 with both: 307 against 152 MB, tracemalloc),
# _OUTPUT_EVENT_BYTES, and per class
# beyond the first of a multi-class one its probabilities and one-against-rest sorts
# (measured peak RSS growth 599 bytes an event at 16 features and 3 classes, 50,000 to
# 200,000 events, where the fits' estimate alone was 382).
_OUTPUT_CLASS_BYTES = 128
# The correlation figure's blocks: a value of CORRELATION_BLOCK events takes 33 bytes
# (the values, their presence, the centred and weighted copies), 47 with a few columns of
# missing values (their pairs' passes; tracemalloc of correlation_matrices, 400k x 28):
# a fixed cost per feature.
_CORRELATION_VALUE_BYTES = 48
# A read holds the baskets of a TTree it decompresses about three times at its peak: the
# pages, the arrays made of them and the chunk's evaluation; and as many copies of the
# chunk it cuts from them (read_chunk_bytes, the 8 MB step): baskets of 5,000 entries x 42
# branches (1.6 MB) under chunks of 24,349 entries (8.0 MB) traced 29.6 MB where counting
# the baskets alone estimated 12.2. An RNTuple's cluster is read
# once into arrays that its chunks slice (TreeReader._iterate_clusters): 1.0 copies beyond
# the filled arrays measured (tracemalloc, one-cluster files of 200,000 and 800,000
# entries x 22 columns), 1.5 counted for jagged fields' offsets and the chunk's evaluation.
_READ_UNIT_COPIES = 3
_CLUSTER_COPIES = 1.5
_HOUR = 3600.0


@dataclass
class Estimate:
    """The events, features, trees and models a configuration trains, and what they cost."""

    events: int
    features: int
    trees: int
    growth: str  # "depth 3", "64 leaves", ...
    folds: int | None
    seconds: float
    bytes: int
    available_bytes: int | None
    auto_trees: bool = False  # n_trees="auto": ``trees`` is the most it may grow
    binned_bytes: int = 0  # the memory of the binned path (one byte per event and feature)
    binned: bool = False  # the path the configuration reads: binned or float32


def _read_sizes(config: AnalysisConfig) -> tuple[int, int]:
    """Entries of the samples' trees (before cuts), each tree once, and the most bytes one
    tree's read holds for what it decompresses at once (:func:`read_unit_bytes` of the
    branches its expressions use, with a TTree's chunk cut from its baskets, times the
    copies a read makes of them), from the file
    headers only. A tree that several samples read (a file split by exclusive cuts) counts
    once: each entry goes to one sample at most (``read`` refuses cuts that overlap), so
    three samples cut from one file of 1,500 entries train at most 1,500 events, where
    counting the tree per sample said 4,500 and tripled the memory."""
    total, unit = 0, 0
    counted: set[tuple[Any, str]] = set()  # (file, tree with its cycle) already in total
    for sample in config.make_samples():
        context = f"sample {sample.name!r}"
        try:
            sources = resolve_sources(sample.files, sample.tree, context)
            names = _branch_names(config, sample)
        except (InputError, ExpressionError):
            continue  # check_inputs reports it
        for source in sources:
            try:
                with uproot.open(source.path, array_cache=None) as file:
                    tree = get_tree(file, source, context)
                    key = (file_identity(source.path), str(tree.object_path))
                    if key not in counted:
                        counted.add(key)
                        total += int(tree.num_entries)
                    copies = (_READ_UNIT_COPIES if isinstance(
                        tree, uproot.behaviors.TBranch.HasBranches) else _CLUSTER_COPIES)
                    held = read_unit_bytes(tree, names) + read_chunk_bytes(tree, names)
                    unit = max(unit, int(copies * held))
            except Exception:  # noqa: BLE001 - unreadable files are check_inputs' to report
                continue
    return total, unit


def _branch_names(config: AnalysisConfig, sample: Sample) -> set[str]:
    """The names that a sample's features, cut, weight, target and event use."""
    texts = [*config.feature_expressions, *config.decorrelate, sample.cut, sample.weight,
             sample.target, sample.event or config.event]
    return {name for text in texts if isinstance(text, str) for name in Expression(text).names}


def _decorrelation_bytes(params: dict[str, Any], variables: int) -> int:
    """A fit's per-event bytes for mass decorrelation (0 without it, or at strength 0)."""
    if not variables or not params.get("decorrelation_strength"):
        return 0
    kind = params.get("decorrelation")
    extra = {"flatness": _FLATNESS_BYTES, "uboost": _UBOOST_BYTES}.get(kind, 0)
    return extra + _DECORRELATION_VARIABLE_BYTES * variables if extra else 0


def estimate(config: AnalysisConfig, available_bytes: int | None = None) -> Estimate:
    """The time and memory training ``config`` asks for (see the module's doc)."""
    model: Any = config.make_estimator()
    events, read_unit = _read_sizes(config)
    # the decorrelation variables that are not features are read as columns after them
    features = len(config.feature_expressions) + len(config.extra_expressions)
    folds = config.split.kfold
    # k-fold: k models, each on (k-1)/k of the events; a split: one on train_fraction of them.
    trained = events * (folds - 1) if folds else events * config.split.train_fraction
    depth_factor = (9 + effective_depth(model.get_params(), is_classifier(model))) / 12
    # "auto" grows few trees on a small sample: one fit's events decide, not all folds' (a
    # k-fold fit trains at most every event: folds by event number need not be even)
    trees = max_trees(model.get_params(), events if folds else int(trained))
    if config.multiclass:  # one tree a class each round
        trees *= len(config.classes)
    seconds = SECONDS_PER_EVENT_FEATURE_TREE * trained * features * trees * depth_factor
    copies = 1 + (folds - 1 if folds else 1)  # the data read, and the training sets' copies
    # n_trees="auto" and early_stopping hold out a fraction of a fit's events, which the fit
    # copies (not AdaBoost's fixed count, nor a small sample's)
    one_fit = (folds - 1) / folds if folds else config.split.train_fraction
    held_out_copy = model.held_out_fraction(int(events * one_fit)) * one_fit
    fit_bytes = ((_ADABOOST_FIT_BYTES if getattr(model, "boosting", None) in ADABOOST_BOOSTINGS
                  else _FIT_BYTES)
                 + _CLASS_BYTES * (len(config.classes) - 1 if config.multiclass else 0)
                 + _decorrelation_bytes(model.get_params(), len(config.decorrelate)))
    memory = (events * (features * (_FEATURE_BYTES * (copies + held_out_copy) + _CODE_BYTES)
                        + _EVENT_BYTES * copies + fit_bytes)
              + min(trained, SUBSAMPLE_FOR_EDGES) * features * _EDGE_SAMPLE_BYTES)
    # the outputs, written after the fits beside the data the training holds
    memory = max(memory, events * (features * _FEATURE_BYTES + _EVENT_BYTES) * copies
                 + _output_bytes(config, events, trained, features))
    # Binned: the codes read and each training set's copy, one byte each, plus the copy the
    # fit keeps of its training events (without the held-out ones); no float features.
    binned_memory = events * (features * _CODE_BYTES * (copies + 1) + _EVENT_BYTES * copies
                              + fit_bytes)
    if config.output.report or config.output.figures:
        # the outputs, written after the fits (whose copy and channels are gone) beside
        # the codes held: the report's room (each extra class's too) and the correlation
        # figure's float blocks (100,000 x 28 with the report and figures: 81 MB at the
        # peak, 79 MB estimated without this term). Added to the fit's peak, the estimate
        # of 4M x 20 was 1.8 GB where the run took 0.78 GB beyond the process's own, more
        # than the float read's 1.4 GB, so binned = "auto" never chose binned.
        binned_memory = max(binned_memory, events * (features * _CODE_BYTES + _EVENT_BYTES)
                            * copies + _report_bytes(
                                config, events, features, _BINNED_OUTPUT_FEATURE_BYTES
                                if config.multiclass else _FEATURE_BYTES)
                            + _correlation_bytes(events, features))
    else:
        binned_memory = max(binned_memory, events * (features * _CODE_BYTES + _EVENT_BYTES)
                            * copies + _summary_bytes(config, events))
    # k-fold's training rows are written as floats whatever the read (2M x 10, 10 folds:
    # 2.6 GB at the peak where this term was missing and the estimate said 954 MB)
    binned_memory += _kfold_rows_bytes(config, trained, features)
    # the read's edge sketch: up to twice SUBSAMPLE_FOR_EDGES events' floats, and a copy
    binned_memory += min(events, 2 * SUBSAMPLE_FOR_EDGES) * (features * _EDGE_SAMPLE_BYTES
                                                             + _SKETCH_EVENT_BYTES)
    # the read: the arrays it fills, and the baskets or clusters it decompresses (uproot
    # writes a dict of arrays as an RNTuple of one cluster: then a whole file's branches)
    unit_bytes = read_unit
    memory = max(memory, events * (features * _FEATURE_BYTES + _EVENT_BYTES) + unit_bytes)
    binned_memory = max(binned_memory, events * (features + _EVENT_BYTES) + unit_bytes)
    if available_bytes is None:
        available_bytes = config.memory if config.memory is not None else available_memory()
    # "auto" reads floats for a decorrelation: its variable's values are needed, not bins
    binned = config.binned is True or (config.binned == "auto" and not config.decorrelate
                                       and available_bytes is not None
                                       and memory > _AUTO_BINNED_SHARE * available_bytes
                                       and binned_memory < memory)
    growth = growth_text(model.get_params(), is_classifier(model))
    return Estimate(events, features, trees, growth, folds, seconds, int(memory),
                    available_bytes, model.n_trees == "auto", int(binned_memory), binned)


def _output_bytes(config: AnalysisConfig, events: int, trained: float, features: int
                  ) -> float:
    """What the outputs of a float training take beside its data: k-fold's training rows,
    the report's and figures' room (with each extra class's) and the correlation blocks,
    or without a report and figures the score trees' and summary's."""
    out = _kfold_rows_bytes(config, trained, features)
    if config.output.report or config.output.figures:
        out += (_report_bytes(config, events, features, _FEATURE_BYTES)
                + _correlation_bytes(events, features))
    else:
        out += _summary_bytes(config, events)
    return out


def _summary_bytes(config: AnalysisConfig, events: int) -> int:
    """The score trees' and summary's room without a report or figures: the scores, curves
    and sorts, and each extra class's probabilities and one-against-rest sorts (3 classes
    of 140,000 events x 4 features: 95.1 MB at the peak, in the summary, where the
    estimate without this term said 89.6)."""
    extra_classes = len(config.classes) - 1 if config.multiclass else 0
    return events * (_OUTPUT_EVENT_BYTES + _OUTPUT_CLASS_BYTES * extra_classes)


def _report_bytes(config: AnalysisConfig, events: int, features: int,
                  feature_bytes: int) -> int:
    """The report's and figures' room beside the data, float or binned: ``feature_bytes``
    a feature value, the scores, curves and sorts, and each extra class's probabilities
    and sorts."""
    extra_classes = len(config.classes) - 1 if config.multiclass else 0
    return events * (features * feature_bytes + _OUTPUT_EVENT_BYTES
                     + _OUTPUT_CLASS_BYTES * extra_classes)


def _correlation_bytes(events: int, features: int) -> int:
    """The correlation figure's blocks of float values (at most CORRELATION_BLOCK events)."""
    return min(events, CORRELATION_BLOCK) * features * _CORRELATION_VALUE_BYTES


def _kfold_rows_bytes(config: AnalysisConfig, trained: float, features: int) -> float:
    """k-fold's training rows in the score trees (k - 1 an event, float features)."""
    if not config.split.kfold:
        return 0.0
    row_bytes = _KFOLD_TRAIN_ROW_BYTES + _CLASS_BYTES * (len(config.classes) - 1
                                                         if config.multiclass else 0)
    return trained * (row_bytes + features * _FEATURE_BYTES)


def use_binned(config: AnalysisConfig) -> bool:
    """Whether ``hepbdt train`` reads binned: ``binned`` as configured, and for ``"auto"``
    when the float path's estimate is more than half of the memory (stated or available)."""
    if config.binned in (True, False):
        return bool(config.binned)
    return estimate(config).binned


def check_memory(config: AnalysisConfig) -> None:
    """Raise a ConfigError before any work when the configuration states ``memory`` and the
    estimate of the path it reads (binned or float32) is more than that, naming the need
    and, for the float path, the binned option and what it would need."""
    if config.memory is None:
        return
    e = estimate(config, config.memory)
    need = e.binned_bytes if e.binned else e.bytes
    if need <= config.memory:
        return
    need_text, stated = _size(need), _size(config.memory)
    if need_text == stated:  # one figure shown for two sizes: the bytes tell them apart
        need_text, stated = f"{need:,.0f} bytes", f"{config.memory:,} bytes"
    head = (f"{config.path}: memory: training {e.events:,} events (entries before cuts) x "
            f"{e.features} features needs about {need_text}")
    if e.binned or e.binned_bytes >= need:
        how = ("even binned (one byte per event and feature)" if e.binned else
               f"as float32 features (binned would need about {_size(e.binned_bytes)}: its edge "
               "sketch and report are fixed costs that only pay off on large samples)")
        advice = f"{how}; select fewer events (cuts), features or folds, or state more memory"
    else:
        advice = (f"as float32 features; set binned = true (or \"auto\") at the top of the "
                  f"configuration to read them as one-byte bin codes: about "
                  f"{_size(e.binned_bytes)}")
    raise ConfigError([f"{head}, more than the {stated} stated ({advice})"])


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2g} s"
    if seconds < _HOUR:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * _HOUR:
        return f"{seconds / _HOUR:.1f} hours"
    return f"{seconds / (24 * _HOUR):,.0f} days"


def _size(n_bytes: float) -> str:
    """A size in bytes as text: '1.5 GB', '12.0 kB', '1 byte', '999 bytes'; in the next
    unit where this one would show 1,000 of it once rounded (999,999 bytes: '1.0 MB')."""
    if round(n_bytes) < 1000:
        return f"{n_bytes:.0f} byte{'' if round(n_bytes) == 1 else 's'}"
    for unit, scale in (("kB", 1e3), ("MB", 1e6)):
        if round(n_bytes / scale, 1) < 1000:
            return f"{n_bytes / scale:,.1f} {unit}"
    return f"{n_bytes / 1e9:,.1f} GB"


def estimate_lines(config: AnalysisConfig, available_bytes: int | None = None) -> list[str]:
    """The estimate as text for ``hepbdt train --check``: one line, then a ``warning:`` line
    for memory beyond what is available and one for training beyond an hour."""
    e = estimate(config, available_bytes)
    scheme = f"{e.folds} folds" if e.folds else "one train/test split"
    available = "" if e.available_bytes is None else (
        f" ({'stated' if config.memory is not None else 'available'}: {_size(e.available_bytes)})")
    lines = [f"estimate: up to {e.events:,} events (entries before cuts) x {e.features} "
             f"features x {'up to ' if e.auto_trees else ''}{e.trees:,} trees ({e.growth}"
             f"{', n_trees=auto' if e.auto_trees else ''}), {scheme}: about "
             f"{_duration(e.seconds)} of training and "
             f"{_size(e.binned_bytes if e.binned else e.bytes)} of memory"
             f"{' (binned)' if e.binned else ''}{available}"]
    if e.available_bytes is not None and (e.binned_bytes if e.binned else e.bytes) > e.available_bytes:
        lines.append(f"warning: training may need about "
                     f"{_size(e.binned_bytes if e.binned else e.bytes)} of memory, more than "
                     f"the {_size(e.available_bytes)} available; select fewer events (cuts), "
                     "features or folds")
    if e.seconds > _HOUR:
        lines.append(f"warning: training may take about {_duration(e.seconds)} (more than 1 "
                     f"hour, at {SECONDS_PER_EVENT_FEATURE_TREE:.2g} s per event, feature and "
                     "depth-3 tree as measured on 2 cores); check [method] n_trees and "
                     "max_depth, [split] kfold and the samples")
    return lines
