"""BDTClassifier and BDTRegressor: the scikit-learn-style front of the engine.

``fit(X, y, sample_weight)``, ``decision_function``, ``predict_proba``, ``predict``,
staged scores, ``get_params``/``set_params`` (so ``sklearn.clone``, pipelines and
``cross_val_score`` work), ``to_dict``/``save`` (versioned JSON), the exports
``save_tmva``, ``save_onnx`` and ``save_cpp``, and :func:`from_forest`, the one way to
wrap a forest read from elsewhere in a fitted estimator. Fitted attributes end in ``_``.
Reading model files is :mod:`hepbdt.persistence`; reading other tools' formats is :mod:`hepbdt.interop`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import math
import os
import re
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._sklearn import (
    REGRESSOR_DEPTH,
    REGRESSOR_RATE,
    NotFittedError,
    SklearnProtocol,
    column_vector_warning,
    fitted_params,
    is_auto,
    not_fitted,
    resolved_growth,
    with_resolved_growth,
)
from ._util import (
    FeatureNamesWarning,
    atomic_write_text,
    check_records,
    check_weights,
    check_X,
    column_positions,
    differing_texts,
    dumps_strict,
    feature_definitions_of,
    hash_fraction,
    positive_beyond_rounding,
    real_array,
    running_sum_slack,
    setting_text,
    threads,
    uniform_draws_below,
    user_stacklevel,
    warn_unnamed_columns,
    warn_unseen_missing,
    weight_exponent,
)
from ._version import EXPRESSION_RULES
from .binned import MISSING_CODE, BinnedMatrix
from .boosting import GradientBooster, NewtonBooster, get_loss
from .boosting._loop import BoostResult, run_boosting
from .boosting.adaboost import run_adaboost
from .boosting.ddt import apply_quantile_map, fit_quantile_map
from .boosting.decorrelation import (
    DECORRELATION_METHODS,
    DECORRELATION_TARGETS,
    FlatnessLoss,
    check_decorrelate,
)
from .boosting.losses import LOSSES, Softmax, softmax_rows
from .boosting.negative_weights import pair_class_weights, regress_class_weights
from .boosting.samme import run_samme
from .boosting.uboost import UBOOST_TARGETS, run_uboost
from .engine._types import CRITERIA, MAX_VALUE_BINS, MISSING_BIN, X_DTYPE, check_n_events
from .engine.binning import BinMapper
from .engine.grower import QuantisedRows, feature_major
from .engine.split import SplitParams
from .engine.sums import exact_sum
from .interop.cpp_export import to_cpp
from .interop.onnx_export import to_onnx
from .interop.tmva_export import to_tmva_xml
from .model import (
    FORMAT_NAME,
    FORMAT_VERSION,
    Forest,
    ModelFormatError,
    check_written_size,
    from_tmva_two_class,
)
from .tmva_options import MAX_POISSON_MEAN, MAX_TREES, parse_tmva_options, to_tmva_options

__all__ = ["BDTClassifier", "BDTRegressor", "ParameterError", "NotFittedError", "from_forest",
           "ClassOrderWarning", "FeatureNamesWarning", "LeafLimitWarning", "IdleOptionWarning",
           "acting_options", "idle_stopping_options",
           "ESTIMATORS", "warmup", "growth_text", "effective_depth", "max_trees",
           "hold_out_ratio_refusal", "check_round_count"]

NEGATIVE_WEIGHT_POLICIES = ("keep", "ignore", "abs", "pair", "regress", "inverse_boost")
ADABOOST_BOOSTINGS = ("adaboost", "realadaboost", "eps", "bagging")
CLASSIFICATION_CRITERIA = ("gini", "cross_entropy", "misclassification", "sdivsqrtsplusb")
QUANTISE_FROM_EVENTS = 50_000  # "auto": packed histograms from this many training events
# Leaf-wise trees have at most this many leaves: LightGBM's bound on num_leaves (2**17). A tree
# that size has 262,143 nodes (190 of them fill the 50 million nodes a model file may hold);
# the grower holds histograms of at most this many leaves, and never more than 256 MiB.
MAX_LEAVES = 131_072
# n_trees="auto": from this many training events, grow until the loss on a held-out
# validation_fraction stops improving (scikit-learn's HistGradientBoosting does from 10,000;
# 1,000 measured better on benchmarks/bench_defaults.py's panel), at most
# AUTO_MAX_TREES trees; below it (too few events to spare) AUTO_SMALL_TREES trees (100, as
# the peers' defaults: on the panel's two sets of a few hundred events, 100 gave a better
# test AUC and RMSE than 200, in half the time), and for the AdaBoost family (no validation
# loss) AUTO_FIXED_TREES.
MAX_CLASSES = 100  # a classifier's labels, at most (more is a continuous target by mistake)
# The boosters' labels: 0/1 or the class index, one byte an event (signed, so that 2 y - 1
# and the like stay right; MAX_CLASSES fits).
LABEL_DTYPE = np.int8
ENCODE_BLOCK = 1 << 20  # events whose class positions (int64) a multi-class encoding holds at once
AUTO_TREES_FROM = 1_000
AUTO_MAX_TREES = 2000
AUTO_FIXED_TREES = 200
AUTO_SMALL_TREES = 100
AUTO_MIN_LEAF_EVENTS = 20  # min_node_size="auto" under n_trees="auto": a child holds the weight of 20 events
BINNED_PREDICT_BLOCK = 1 << 16  # events whose representative values a binned prediction holds at once
AUTO_PATIENCE = 10  # rounds without improvement, when neither n_iter_no_change nor early_stopping_rounds says


# Training weights and regression targets, in magnitude: the per-event channels are float32
# (normal from 1.2e-38 to 3.4e38), with room for the gradient and hessian factors.
MIN_MAGNITUDE, MAX_MAGNITUDE = 1e-30, 1e30
# A regression's weights times its targets' spread, at least: 100 times float32's smallest
# normal number (1.2e-38), for the residuals that boosting makes smaller than the spread.
MIN_RESIDUAL_CHANNEL = 1e-36


def _out_of_range(w: np.ndarray) -> np.ndarray:
    """Which weights are non-zero and outside MIN_MAGNITUDE..MAX_MAGNITUDE in magnitude."""
    size = np.abs(w)
    return (size > MAX_MAGNITUDE) | ((size < MIN_MAGNITUDE) & (size > 0))


def _beyond_text(value: float) -> str:
    """A value outside +-MIN_MAGNITUDE..MAX_MAGNITUDE with the digits that tell it from the
    limit it passed (1.0001e30 is not "1e+30", the limit itself)."""
    size = abs(float(value))
    limit = MAX_MAGNITUDE if size > MAX_MAGNITUDE else MIN_MAGNITUDE
    return ("-" if value < 0 else "") + differing_texts(size, limit, 3)[0]


def check_magnitudes(w: np.ndarray, policy: str | None = None, rescalable: bool = True,
                     normalised: bool = False) -> None:
    """ValueError for a non-zero training weight outside MIN_MAGNITUDE..MAX_MAGNITUDE: as
    float32 channels it would overflow, or lose its precision, silently.

    ``policy``: None for the given weights; else the ``negative_weights`` policy whose
    weights ``w`` are (the given ones passed before it), and the message says so and gives
    the factor that brings them into range, when ``rescalable`` (no class normalisation
    sets their scale) and one does. ``normalised``: ``w`` are the given weights after the
    class normalisation, which sets each class's scale (rescaling them does not help).
    """
    bad = _out_of_range(w)
    if not bad.any():
        return
    first = int(np.flatnonzero(bad)[0])
    count = int(np.count_nonzero(bad))
    span = f"{MIN_MAGNITUDE:g} to {MAX_MAGNITUDE:g} in magnitude (the first is {_beyond_text(w[first])})"
    if policy is None and normalised:
        raise ValueError(
            f"sample_weight: {count} weight(s) lie outside {span} after the class "
            "normalisation (sig_to_bkg_fraction), though every given weight lies within; "
            "the normalisation sets each class's scale, so rescaling them does not help: the "
            "weights of a class span too many decades (drop events of negligible weight), "
            "or set sig_to_bkg_fraction=None")
    if policy is None:
        raise ValueError(
            f"sample_weight: {count} training weight(s) lie outside {span}; training works in "
            "float32 and only the weights' ratios matter: rescale them (e.g. a cross section "
            "in pb rather than cm2)")
    raise ValueError(
        f"negative_weights={policy!r}: {count} of the weights the policy gave the training "
        f"events lie outside {span}, though every given weight lies within; training works "
        f"in float32 and only the weights' ratios matter: {_rescaling(np.abs(w), rescalable)}, "
        "or choose negative_weights='ignore' or 'abs'")


#: Classes whose summed |weights| differ by more than this factor are refused: the loss's
#: probability of the larger class rounds to 1 in double precision (1 - p below 1e-16), so
#: the smaller class vanishes from the gradients (signal weights 1e19 times the background's
#: gave a test AUC of 0.21 on the demo, 1e17 still 0.914).
MAX_CLASS_RATIO = 1e15


def check_class_balance(y: np.ndarray, w: np.ndarray) -> None:
    """ValueError when the classes' summed |training weights| differ by more than
    MAX_CLASS_RATIO (classes without weight are left to the other checks)."""
    check_class_totals(np.bincount(np.asarray(y, np.int64), weights=np.abs(w)))


def check_class_totals(totals: np.ndarray) -> None:
    """``check_class_balance`` of the classes' summed |weights| ``totals``."""
    totals = np.asarray(totals, np.float64)
    totals = totals[totals > 0]
    if totals.size > 1 and totals.max() > MAX_CLASS_RATIO * totals.min():
        ratio, limit = differing_texts(totals.max() / totals.min(), MAX_CLASS_RATIO, 3)
        raise ValueError(
            f"the classes' training weights sum to {totals.min():.3g} to {totals.max():.3g} "
            f"(in magnitude), a ratio of {ratio}: beyond "
            f"{limit} the training's arithmetic cannot see the smaller class; "
            "give the classes comparable totals (a configuration's [split] norm = "
            "\"equal_num_events\", sig_to_bkg_fraction=1, or weights scaled per class)")


def check_targets(y: np.ndarray) -> np.ndarray:
    """``y`` when every regression target is finite and within +-MAX_MAGNITUDE (the float32
    gradients' range); else ValueError."""
    if not np.all(np.isfinite(y)):
        raise ValueError("the regression target y has NaN or infinite values")
    if y.size and np.max(np.abs(y)) > MAX_MAGNITUDE:
        raise ValueError(f"the regression target y reaches {_beyond_text(np.max(np.abs(y)))}: targets "
                         f"must lie within +-{MAX_MAGNITUDE:g}, as the float32 gradients "
                         "need; rescale y (e.g. to other units)")
    return y


def check_residual_scale(y: np.ndarray, w: np.ndarray) -> None:
    """ValueError when the weights times the targets' spread fall below MIN_RESIDUAL_CHANNEL: each
    is in range alone, but the float32 channels hold their products (w times a residual),
    which would underflow (targets of 1e-20 with weights of 1e-25 gave predictions off by
    1.5 target units)."""
    spread = float(np.std(y)) if y.size > 1 else 0.0
    largest = float(np.max(np.abs(w))) if w.size else 0.0
    if spread > 0 and largest > 0 and largest * spread < MIN_RESIDUAL_CHANNEL:
        raise ValueError(f"the weights (at most {largest:.3g}) times the targets' spread "
                         f"({spread:.3g}) are below {MIN_RESIDUAL_CHANNEL:g}: the float32 gradients, "
                         "their products, would underflow; rescale sample_weight (only the "
                         "weights' ratios matter) or the target")


def _rescaling(size: np.ndarray, rescalable: bool) -> str:
    """The remedy for policy-made weights of magnitudes ``size`` out of range: the power of
    ten to multiply sample_weight by, when one brings them all into range."""
    if not rescalable:
        return ("the class normalisation (sig_to_bkg_fraction) sets their scale, so "
                "rescaling sample_weight does not help")
    low, high = float(size[size > 0].min()), float(size.max())
    if low < MIN_MAGNITUDE:
        factor = 10.0 ** math.ceil(math.log10(MIN_MAGNITUDE / low))
    else:
        factor = 10.0 ** -math.ceil(math.log10(high / MAX_MAGNITUDE))
    if not (low * factor >= MIN_MAGNITUDE and high * factor <= MAX_MAGNITUDE):
        return (f"they span {low:.3g} to {high:.3g}, more than float32 training can hold at "
                "any scale")
    return f"multiply sample_weight by {factor:g} so that they lie within too"


class ParameterError(ValueError):
    """An estimator option with a value that is not valid; ``param`` names the option."""

    def __init__(self, param: str | None, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class _Param:
    name: str
    default: Any
    annotation: str


@dataclass(frozen=True)
class _TreePlan:
    """The trees a fit grows: at most ``n_trees``, stopping after ``rounds`` without
    improvement (None: never), on a held-out fraction of the events or not; ``why`` is
    what decided it ("given", "adaboost", "eval_set", "small", "held_out")."""

    n_trees: int
    rounds: int | None
    hold_out: bool
    why: str
    fraction: float = 0.0
    tol: float = 0.0

    def reason(self, kept: int, best_iteration: int | None, n_classes: int = 1,
               evaluated: int | None = None, extra: dict | None = None) -> str:
        """How the fitted model's tree count (rounds of ``n_classes`` trees) came about;
        ``evaluated``: the rounds grown and evaluated (None: ``rounds`` after the best);
        ``extra``: the forest's record of AdaBoost's skipped trees and stop."""
        steps = (extra or {}).get("uboost", {}).get("step_trees")
        if steps:
            return self._uboost_reason(steps, extra or {})
        short = _adaboost_shortfall(extra or {}) if kept < self.n_trees else ""
        if self.why == "given":
            if kept == self.n_trees:
                return f"n_trees={self.n_trees}"
            return f"n_trees={self.n_trees}, " + (short or f"cut at its best iteration to {kept}")
        unit = "trees" if n_classes == 1 else f"rounds of {n_classes} trees (one a class)"
        head = f"n_trees='auto' kept {kept} {unit}: "
        if self.why == "adaboost":
            return head + ("a fixed count, as the AdaBoost family has no validation loss to "
                           "stop on" + (f"; {short}" if short else ""))
        if self.why == "flatness":
            return head + ("a fixed count, as the held-out loss it would stop on is the "
                           "classification loss alone, which the flatness term raises by "
                           "design (it stopped strength 1 after 3-7 trees)")
        if self.why == "small":
            return head + (f"a fixed count, as fewer than {AUTO_TREES_FROM:,} training events "
                           "are too few to hold out a validation sample")
        where = ("the last eval_set" if self.why == "eval_set"
                 else f"the {100 * self.fraction:.3g}% of the training events held out")
        if best_iteration is None or kept >= self.n_trees:
            return head + f"the loss on {where} was still improving at the limit of {self.n_trees}"
        step = "tree" if n_classes == 1 else "round"
        after = self.rounds if evaluated is None else evaluated - kept
        if evaluated is not None and evaluated >= self.n_trees:  # the limit, not the patience
            return head + (f"the loss on {where} was lowest after {step} {kept}; the limit of "
                           f"{self.n_trees} came {after} {step}(s) later")
        if self.rounds and after < self.rounds:  # tol > 0: stopped on the last counted gain
            return head + (f"the loss on {where} was lowest after {step} {kept}; it last improved "
                           f"by more than tol={setting_text(self.tol)} after {step} "
                           f"{evaluated - self.rounds}, "
                           f"and training stopped {self.rounds} {step}(s) later")
        return head + (f"the loss on {where} was lowest after {step} {kept} and did not improve "
                       f"in the next {after}")

    def _uboost_reason(self, steps: list[int], extra: dict) -> str:
        """A uBoost fit's trees: ``n_trees`` asked of each efficiency step, the trees each
        kept (a step can leave resampled trees out)."""
        asked = (f"n_trees={self.n_trees} trees a step" if self.why == "given" else
                 f"n_trees='auto' took {self.n_trees} trees a step (a fixed count, as the "
                 "AdaBoost family has no validation loss to stop on)")
        kept, wanted = sum(steps), self.n_trees * len(steps)
        if kept == wanted and self.why == "given":
            return f"n_trees={self.n_trees}"
        if kept == wanted:
            return f"{asked}, kept in each of {len(steps)} uBoost efficiency steps ({kept} trees)"
        spread = (f"{min(steps)}-{max(steps)}" if min(steps) < max(steps) else f"{steps[0]}")
        return (f"{asked}: kept {kept} of {wanted} trees over {len(steps)} uBoost efficiency "
                f"steps ({spread} a step); " + _adaboost_shortfall(extra))


def _adaboost_shortfall(extra: dict) -> str:
    """Why an AdaBoost-family fit kept fewer trees than asked (its forest's record), or ""."""
    parts = []
    skipped = int(extra.get("skipped_trees") or 0)
    if skipped:
        parts.append(f"{skipped} resampled tree(s) left out (error >= 0.5, or a resample "
                     "without positive net weight)")
    if extra.get("stopped"):
        parts.append(f"boosting stopped: {extra['stopped']}")
    return "; ".join(parts)


# The options both estimators take, in signature order; ``max_depth``, ``learning_rate``,
# ``max_leaves`` and ``loss`` differ in their defaults (benchmarks/bench_defaults.py, README
# "The defaults, measured"). The classifier's are "auto" (``resolved_growth``); the
# regressor's depth 4 at 0.15 regresses within 1.02x of the best peer at less than the
# slowest peer's fit time.
def _shared_head(max_depth: int | str, learning_rate: float | str) -> tuple[_Param, ...]:
    return (_Param("boosting", "gradient", "str"), _Param("n_trees", "auto", "int | str"),
            _Param("max_depth", max_depth, "int | None | Literal['auto']"),
            _Param("learning_rate", learning_rate, "float | Literal['auto']"))


def _shared_tail(max_leaves: int | str | None) -> tuple[_Param, ...]:
    return (*_SHARED_TAIL, _Param("max_leaves", max_leaves, "int | None | Literal['auto']"))


_SHARED_TAIL = (
    _Param("max_bins", 255, "int"), _Param("n_cuts", 0, "int"),
    _Param("min_node_size", "auto", "float | str"), _Param("min_child_weight", 1.0, "float"),
    _Param("min_split_gain", 0.0, "float"), _Param("reg_lambda", 1.0, "float"),
    _Param("reg_alpha", 0.0, "float"), _Param("subsample", 1.0, "float"),
    _Param("subsample_mode", "uniform", "str"), _Param("colsample_bytree", 1.0, "float"),
    _Param("colsample_bylevel", 1.0, "float"), _Param("colsample_bynode", 1.0, "float"),
    _Param("negative_weights", "regress", "str"), _Param("early_stopping", False, "bool"),
    _Param("validation_fraction", 0.1, "float"), _Param("n_iter_no_change", 10, "int | None"),
    _Param("early_stopping_rounds", None, "int | None"),
    _Param("tol", 0.0, "float"), _Param("quantised_histograms", "auto", "bool | str"),
    _Param("random_state", 0, "int | None"), _Param("n_jobs", None, "int | None"),
    _Param("verbose", False, "bool"), _Param("n_vars_per_node", None, "int | str | None"),
)


def _not_in(y: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Mask of the labels not in ``classes``: one comparison a class when they are few
    (np.isin sorts, with temporaries of about 15 bytes an event)."""
    if classes.size > 8:
        return ~np.isin(y, classes)
    bad = np.ones(y.shape, dtype=np.bool_)
    for c in classes:
        bad &= y != c
    return bad


def _constructor(params: tuple[_Param, ...], doc: str):
    """An ``__init__`` with one keyword per option that stores each unchecked, as
    scikit-learn expects (``fit`` validates); its signature lists the options."""
    signature = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=p.default,
                             annotation=p.annotation) for p in params])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__doc__ = doc
    return __init__


def hold_out_ratio_refusal(fraction: Any) -> str:
    """Why n_trees='auto' cannot hold events out when a class's given weights sum to
    nothing positive under a class ratio (memory and Dask)."""
    return (f"sig_to_bkg_fraction={fraction!r}: a class's given weights sum to nothing "
            "positive, so the events n_trees='auto' holds out cannot be weighed in the "
            "training's class ratio (their loss would watch another mix); give n_trees, or an "
            "eval_set whose classes have positive net weights")


def _column(y: Any) -> np.ndarray:
    """y as a 1-d array; a column vector is accepted with a warning, as scikit-learn does,
    more columns refused (raveled, they read as a length mismatch)."""
    y = real_array(y, "y")
    if y.ndim > 2 or (y.ndim == 2 and y.shape[1] != 1):
        raise ValueError(f"y must be 1-d, one label or target per event; got shape {y.shape}")
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected. Please change "
                      "the shape of y to (n_samples,)", column_vector_warning(), stacklevel=4)
    return y.ravel()


class LeafLimitWarning(UserWarning):
    """``max_leaves`` is more than ``max_depth`` allows (2**max_depth leaves a tree): the
    trees stop at the depth."""


class ClassOrderWarning(UserWarning):
    """The signal label sorts before the background's: scikit-learn's tools read the scores
    as the other class's."""


def _unsorted_classes_text(classes: np.ndarray) -> str:
    """ClassOrderWarning's message for ``classes_`` [background, signal]."""
    background, signal = classes.tolist()
    return (f"the signal label {signal!r} sorts before the background's {background!r}: "
            f"classes_ is [{background!r}, {signal!r}] (background, signal), so a high score "
            f"and predict_proba[:, 1] mean {signal!r}, but scikit-learn's scorers and tools "
            "(roc_auc_score, cross_val_score, GridSearchCV, CalibratedClassifierCV, "
            f"cross_val_predict, soft VotingClassifier) take the larger label, {background!r}, "
            "as the positive class and would read these scores inverted (soft voting predicts "
            "the other label); for them, give labels whose larger value is the signal (e.g. "
            f"y == {signal!r}); hepbdt's own evaluation is right either way")


def warn_class_order(model: Any) -> None:
    """ClassOrderWarning for a two-class classifier whose signal label sorts first (at
    fit, and again when a saved model is loaded, where nothing else would say it)."""
    classes = getattr(model, "classes_", None)
    if classes is None or len(classes) != 2:
        return
    try:
        first = np.unique(classes)[0]
    except TypeError:  # labels that do not sort (a model file's): no order to read inverted
        return
    if first == classes[1]:
        warnings.warn(_unsorted_classes_text(np.asarray(classes)), ClassOrderWarning,
                      stacklevel=user_stacklevel())


def _whole_or_unchanged(fit):
    """A ``fit`` that either completes or leaves the estimator as it was: a fit that raises
    (a refused option, weights or labels) after it set some fitted attributes would leave
    the old trees under the new ``classes_`` or feature count."""
    @functools.wraps(fit)
    def guarded(self, *args, **kwargs):
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
    return guarded


def _labels(y: Any) -> np.ndarray:
    """Class labels as a 1-d array; a continuous target is refused (scikit-learn's words)."""
    y = _column(y)
    if y.dtype == object and all(isinstance(v, int | float | np.number) for v in y.tolist()):
        y = np.asarray(y.tolist())  # numbers that came as objects are numbers
    if np.issubdtype(y.dtype, np.floating) and np.isnan(y).any():  # not a continuous target
        missing = np.isnan(y)
        raise ValueError(f"y has {int(missing.sum())} missing labels (NaN, or pandas' NA; the "
                         f"first at event {int(np.flatnonzero(missing)[0])}): every event needs "
                         "a class label (e.g. 1 for signal, 0 for background); leave those "
                         "events out or label them")
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y) & (y == np.round(y))):
        raise ValueError("Unknown label type: continuous. A classifier takes class labels "
                         "(e.g. 1 for signal, 0 for background); use BDTRegressor for a target")
    return y


def _check_unique_names(names: Any, what: str) -> None:
    """ValueError naming the first feature name given twice: predicting from named columns
    would feed one column to both features."""
    if names is None:
        return
    first: dict[str, int] = {}
    for j, name in enumerate(str(n) for n in names):
        _check_name_characters(name, f"{what} column {j}")
        if name in first:
            raise ValueError(f"{what} names feature {name!r} twice (columns {first[name]} and "
                             f"{j}); each feature needs its own name (rename or drop one column)")
        first[name] = j


# the characters XML 1.0 holds (its Char production): the TMVA XML, the report and every
# writer of a name take them; NUL, the other C0 controls and U+FFFE/U+FFFF made an XML file
# that no parser reads (and NUL ends a C string: a ROOT branch or TMVA::Reader name)
_XML_CHAR = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*")


def _check_name_characters(name: str, where: str, what: str = "feature name") -> None:
    """ValueError for a name holding a character that XML 1.0 cannot hold."""
    match = _XML_CHAR.match(name)
    if match.end() < len(name):
        bad = name[match.end()]
        raise ValueError(f"{where}: {what} {name!r} holds the character U+{ord(bad):04X} at "
                         f"position {match.end()}, which XML (the TMVA weight file) cannot "
                         "hold: a name takes tab, line breaks and the characters from U+0020 "
                         f"on but U+FFFE, U+FFFF and surrogates; change the {what}")


def _one_eval_set(eval_set: Any) -> bool:
    """Whether ``eval_set`` is one (X, y[, w]) tuple rather than a list or tuple of them
    (whose second item is a pair, or a ragged sequence numpy cannot take as labels)."""
    if not isinstance(eval_set, tuple) or len(eval_set) not in (2, 3):
        return False
    if isinstance(eval_set[1], tuple):
        return False
    try:
        return np.ndim(eval_set[1]) == 1
    except ValueError:
        return False


def _score_weights(sample_weight: Any, n_labels: int, n_events: int) -> np.ndarray:
    """``score``'s weights, checked: one label (target) and one weight per event of X,
    and a positive total (the score is a weighted mean). Returned over a power of two
    (exact; only their ratios matter): weights of 1e306 summed to inf, which made R^2 1.0
    and the accuracy NaN."""
    if n_labels != n_events:
        raise ValueError(f"X has {n_events} events but y has {n_labels} labels or targets")
    w = check_weights(sample_weight, n_events)
    w = np.ldexp(w, -weight_exponent(w))
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError(f"sample_weight sums to {total:.6g} (in units of the largest |weight|); "
                         "a score is a weighted mean and needs a positive total")
    return w


def _check_loss_total(w: np.ndarray, what: str, remedy: str) -> None:
    """ValueError unless the validation weights ``w`` sum to a positive total: the loss is
    their weighted mean, which a total of 0 (no event, or weights that cancel) makes 0 at
    every tree and a negative one turns upside down, so early stopping would keep the
    wrong trees."""
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError(f"{what}: the weights sum to {total:.6g}; the validation loss is "
                         f"their weighted mean and needs a positive total: {remedy}")


def _is_finite(value: Any) -> bool:
    """A real number (not a bool) that is finite."""
    return (isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool | np.bool_) and math.isfinite(value))


def _has_missing_bin(codes: Any) -> bool:
    """Whether binned training events (``QuantisedRows`` or (m, n) codes) hold a NaN: the
    missing bin is the highest code, so one maximum of the bytes tells (the float features
    are four times as many bytes to scan)."""
    return int((codes.codes if isinstance(codes, QuantisedRows) else codes).max()) == MISSING_BIN


def _get_loss(boosting: str, name: str, classification: bool, *args: float):
    """The loss object; ParameterError("loss") when the booster has no such loss for the task."""
    try:
        return get_loss(boosting, name, *args, classification=classification)
    except ValueError as exc:
        raise ParameterError("loss", str(exc)) from None


class _BDTBase(SklearnProtocol):
    """Parameters, validation, fitting and persistence shared by both estimators."""

    _boostings: tuple[str, ...] = ("gradient", "newton")

    # -- validation -------------------------------------------------------------------------
    def check_params(self) -> None:
        """Check every option (and the loss of gradient and newton boosting) without fitting;
        :class:`ParameterError` names the first option that is not valid."""
        self._validate_params()
        if self.boosting in ("gradient", "newton"):
            self._make_loss()

    def _validate_params(self) -> None:
        def require(cond: bool, name: str, valid: str) -> None:
            if not cond:
                raise ParameterError(name, f"{name}={getattr(self, name)!r} is not valid; "
                                     f"expected {valid}")

        def is_int(value: Any, low: int, high: int) -> bool:
            return (isinstance(value, int | np.integer) and not isinstance(value, bool)
                    and low <= value <= high)

        require(self.boosting in self._boostings, "boosting", f"one of {self._boostings}")
        if self.boosting not in ("gradient", "newton"):  # idle, but saved with the model
            classifier = self._estimator_type == "classifier"
            known = sorted({name for (_, name), c in LOSSES.items()
                            if c.is_classification == classifier} | ({"softmax"} if classifier
                                                                     else set()))
            require(self.loss is None or self.loss in known, "loss",
                    f"None (it does nothing with boosting={self.boosting!r}) or a loss of "
                    f"gradient or newton boosting, {known}")
        require(self.n_trees == "auto" or is_int(self.n_trees, 1, MAX_TREES), "n_trees",
                f"'auto' or an integer in [1, {MAX_TREES}]")
        require(self.max_leaves is None or is_auto(self.max_leaves)
                or is_int(self.max_leaves, 2, MAX_LEAVES),
                "max_leaves", f"None (depth-wise trees) or an integer in [2, {MAX_LEAVES}] "
                "(leaf-wise trees), or 'auto'")
        depth, leaves, rate = self._growth()
        require(is_auto(self.max_depth) or is_int(self.max_depth, 1, 30)
                or (depth is None and leaves is not None), "max_depth",
                "an integer in [1, 30], or None (no depth limit) when max_leaves is set, or "
                "'auto'")
        require(is_auto(self.learning_rate) or (_is_finite(self.learning_rate)
                                                 and 0 < self.learning_rate <= 10),
                "learning_rate", "a number in (0, 10], or 'auto'")
        require(isinstance(self.max_bins, (int, np.integer)) and 2 <= self.max_bins <= MAX_VALUE_BINS,
                "max_bins", f"an integer in [2, {MAX_VALUE_BINS}]")
        require(is_int(self.n_cuts, 0, self.max_bins - 1), "n_cuts", "an integer in [0, max_bins)")
        require(self.min_node_size == "auto" or (_is_finite(self.min_node_size)
                                                 and 0 <= self.min_node_size < 0.5),
                "min_node_size", "'auto' or a fraction in [0, 0.5)")
        # Infinite penalties and thresholds are refused: no split would ever pass (or every
        # leaf value would be 0), a model of constant scores.
        for name in ("min_child_weight", "min_split_gain", "reg_lambda", "reg_alpha"):
            require(_is_finite(getattr(self, name)) and getattr(self, name) >= 0, name,
                    "a finite number >= 0")
        require(_is_finite(self.subsample) and (0 < self.subsample <= 1 or (
            self.subsample_mode == "poisson" and 0 < self.subsample <= MAX_POISSON_MEAN)),
                "subsample", f"a finite number: a fraction in (0, 1], or for 'poisson' the "
                f"counts' mean, in (0, {MAX_POISSON_MEAN:g}]")
        require(self.subsample_mode in ("uniform", "poisson", "weighted"), "subsample_mode",
                "'uniform', 'poisson' or 'weighted'")
        for name in ("colsample_bytree", "colsample_bylevel", "colsample_bynode"):
            require(_is_finite(getattr(self, name)) and 0 < getattr(self, name) <= 1, name,
                    "a fraction in (0, 1]")
        require(self.negative_weights in NEGATIVE_WEIGHT_POLICIES, "negative_weights",
                f"one of {NEGATIVE_WEIGHT_POLICIES}")
        require(_is_finite(self.validation_fraction) and 0 < self.validation_fraction < 1,
                "validation_fraction", "a fraction in (0, 1)")
        require(isinstance(self.early_stopping, bool | np.bool_), "early_stopping", "True or False")
        if (self.early_stopping and self.n_trees != "auto" and self.n_iter_no_change is None
                and self.early_stopping_rounds is None):
            raise ParameterError("n_iter_no_change", "early_stopping=True stops when the validation "
                                 "loss has not improved for n_iter_no_change trees; with None it "
                                 "would hold out validation_fraction of the events and never stop: "
                                 "give an integer (e.g. 10), or early_stopping=False")
        nvars = getattr(self, "n_vars_per_node", None)
        require(nvars is None or nvars == "sqrt"
                or (isinstance(nvars, (int, np.integer)) and not isinstance(nvars, bool) and nvars >= 1),
                "n_vars_per_node", "None, 'sqrt' or an integer >= 1")
        if nvars is not None and self.colsample_bynode != 1.0:
            raise ParameterError("n_vars_per_node", f"n_vars_per_node={nvars!r} and colsample_bynode="
                                 f"{self.colsample_bynode!r} both set the variables drawn per node: "
                                 "give one of them (the other at its default)")
        for name in ("colsample_bytree", "colsample_bylevel"):
            if nvars is not None and getattr(self, name) != 1.0:
                raise ParameterError(
                    "n_vars_per_node", f"n_vars_per_node={nvars!r} draws its variables from "
                    f"all of them, as TMVA's UseNvars, and {name}={getattr(self, name)!r} would "
                    "leave fewer to draw from: give one of them (for draws within the "
                    f"{name.removeprefix('colsample_by')}'s variables, colsample_bynode)")
        self._check_quantised_option()
        if self.negative_weights == "inverse_boost" and self.boosting not in ADABOOST_BOOSTINGS:
            raise ParameterError("negative_weights", "negative_weights='inverse_boost' (TMVA "
                                 f"InverseBoostNegWeights) needs an AdaBoost-type booster "
                                 f"{ADABOOST_BOOSTINGS}; boosting={self.boosting!r}")
        for name in ("n_iter_no_change", "early_stopping_rounds"):  # rounds: at most the trees
            require(getattr(self, name) is None or is_int(getattr(self, name), 1, MAX_TREES), name,
                    f"an integer in [1, {MAX_TREES}], or None (no key in a configuration)")
        # tol = inf: no loss would count as an improvement, not even the first one; tol < 0
        # would count every worse loss as one, so that training never stops
        require(_is_finite(self.tol) and self.tol >= 0, "tol", "a finite number >= 0 (the "
                "least improvement of the validation loss that counts; 0: any)")
        if self.boosting in ADABOOST_BOOSTINGS and (self.early_stopping
                                                    or self.early_stopping_rounds is not None):
            name = "early_stopping" if self.early_stopping else "early_stopping_rounds"
            raise ParameterError(name, f"{name}={getattr(self, name)!r}: early stopping is "
                                 "available for boosting='gradient' and 'newton', not for "
                                 f"boosting={self.boosting!r}, which has no validation loss "
                                 "to stop on")
        require(self.random_state is None or is_int(self.random_state, 0, 2**63 - 1),
                "random_state", "a seed, an integer in [0, 2**63 - 1], or None (no key in a "
                "configuration) for fresh randomness")
        require(self.n_jobs is None or self.n_jobs == -1 or is_int(self.n_jobs, 1, 2**31 - 1),
                "n_jobs", "None or -1 (all configured threads), or a number of threads in "
                "[1, 2**31 - 1] (Numba uses at most its configured threads)")
        self._validate_extra_params(require)
        self._warn_if_leaves_unreachable()

    def _warn_if_leaves_unreachable(self) -> None:
        """LeafLimitWarning where ``max_depth`` caps the trees below ``max_leaves``."""
        depth, leaves, _ = self._growth()
        if leaves is None or depth is None or leaves <= 2 ** depth:
            return
        needed = int(leaves - 1).bit_length()  # the least depth that holds them
        default = inspect.signature(type(self)).parameters["max_depth"].default
        which = f" (the default, {default!r})" if self.max_depth == default else ""
        warnings.warn(f"max_leaves={leaves} cannot be reached: max_depth={depth}"
                      f"{which} allows at most {2 ** depth} leaves a tree; for "
                      f"{leaves} leaves set max_depth=None (no depth limit) or "
                      f"max_depth >= {needed}", LeafLimitWarning, stacklevel=user_stacklevel())

    def _validate_extra_params(self, require) -> None:
        """Checks of the parameters one estimator has and the other has not."""

    def _policy_acts(self, w: np.ndarray) -> bool:
        """Whether the ``negative_weights`` policy changes the weights ``w``: only when one
        is negative, and never for "keep" and "inverse_boost" (the booster's concern)."""
        return self.negative_weights not in ("keep", "inverse_boost") and bool(np.any(w < 0))

    def _apply_negative_weight_policy(self, X, y, w, decorrelate=None, rows=None):
        """The ``negative_weights`` policy's weights for the training events X[rows] (all
        when None; the hold-out is split off before), whose labels or targets, weights and
        decorrelation variables (or None) are y, w and decorrelate: ((n,) float64 weights,
        (n,) bool mask of the events it keeps, or None for every event). Called only when
        the policy acts (``_policy_acts``)."""
        policy = self.negative_weights
        if policy == "abs":
            return np.abs(w), None
        if policy == "ignore":
            return w, w >= 0
        classifier = self._estimator_type == "classifier"
        # Given bins, the policies see each feature as its bin number: the fit depends on
        # the features only through their codes, so a binned read trains what X does.
        F = X.bin_indices() if isinstance(X, BinnedMatrix) else X
        # The local net weight, or the neighbours, in the space the training sees: a
        # regression's target is added, so weight moves to events with a similar target
        # too; the decorrelation variables the training flattens against (a mass that need
        # not be a feature) are added, so a component cancelled at one mass is cancelled
        # there, not left as a false bump in the net mass distribution.
        extra = [] if classifier else [y]
        if decorrelate is not None and self._decorrelates_in_training():
            extra.append(decorrelate)
        if extra:
            Z = np.column_stack([F if rows is None else F[rows], *extra]).astype(X_DTYPE)
            in_z = None
        else:
            Z, in_z = F, rows  # the training events' rows of X, not a copy of their features
        if policy == "regress":
            w = regress_class_weights(Z, y, w, by_class=classifier,
                                      random_state=self.random_state, rows=in_z)
        else:
            w = pair_class_weights(Z, y, w, by_class=classifier, rows=in_z)
        return w, w > 0

    def _decorrelates_in_training(self) -> bool:
        """Whether the training uses the decorrelation variables (flatness or uBoost at a
        strength above 0; the map alone is fitted after it, with the given weights)."""
        return (getattr(self, "decorrelation", None) is not None
                and self.decorrelation_strength > 0)

    def _given_weights(self, y, w) -> np.ndarray:
        """The given weights after the class normalisation (``_normalise_classes``), as an
        eval set's they are given, checked against the float32 range (``_check_magnitudes``)
        before any policy: what the held-out events are evaluated with, and what the
        training events train with when the policy does not act."""
        try:
            given = self._normalise_classes(y, w)
        except ParameterError:
            raise
        except ValueError:
            if not self._policy_acts(w):
                raise
            # A class's net weight is not positive: "abs" and "ignore" can make it so, and
            # "regress" and "pair" refuse it in their own words, so the weights stay as given.
            given = w
        check_magnitudes(given, normalised=given is not w and not _out_of_range(w).any())
        return given

    def _normalise_classes(self, y, w):
        return w

    def _class_ratio(self) -> float | None:
        return None

    def _node_fraction(self, n_features: int) -> float:
        """colsample_bynode, or UseNvars / n_features when ``n_vars_per_node`` is set."""
        nvars = getattr(self, "n_vars_per_node", None)
        if nvars is None:
            return self.colsample_bynode
        if nvars == "sqrt":  # TMVA's default UseNvars
            nvars = int(np.sqrt(n_features) + 0.6)
        elif nvars >= n_features:  # TMVA's node loop would draw forever; here every variable
            warnings.warn(f"n_vars_per_node={nvars} draws every one of the {n_features} "
                          "features at each node, as without it: the trees are not randomised; "
                          f"give fewer than {n_features} (or 'sqrt', TMVA's default UseNvars)",
                          IdleOptionWarning, stacklevel=user_stacklevel())
        return min(1.0, max(1, int(nvars)) / n_features)

    def _growth(self) -> tuple[Any, Any, Any]:
        """(max_depth, max_leaves, learning_rate) with "auto" resolved (``resolved_growth``)."""
        return resolved_growth(self.get_params(), self._estimator_type == "classifier")

    def _depth_limit(self) -> int | None:
        """``max_depth`` for the grower (None: no limit, leaf-wise only)."""
        depth = self._growth()[0]
        return None if depth is None else int(depth)

    def _leaf_limit(self) -> int | None:
        """``max_leaves`` for the grower (None: depth-wise growth)."""
        leaves = self._growth()[1]
        return None if leaves is None else int(leaves)

    def _set_growth(self) -> None:
        """Record the resolved (``max_depth_``, ``max_leaves_``, ``learning_rate_``)."""
        self.max_depth_, self.max_leaves_, self.learning_rate_ = self._growth()

    def _make_booster(self, loss):
        rate = float(self._growth()[2])
        if self.boosting == "gradient":
            return GradientBooster(loss, rate)
        return NewtonBooster(loss, rate, self.reg_lambda, self.reg_alpha)

    # -- fitting ------------------------------------------------------------------------------
    @staticmethod
    def _fit_features(X, bin_edges) -> tuple[Any, list[str] | None, dict[str, str]]:
        """(X, names, definitions) for fit: checked float32, or a BinnedMatrix (float X given
        ``bin_edges`` is binned here, so both ways train the same model)."""
        definitions = feature_definitions_of(X)
        if isinstance(X, BinnedMatrix):
            if bin_edges is not None:
                raise ValueError("bin_edges: X is a BinnedMatrix, whose edges are the bins; give "
                                 "one or the other")
            if X.shape[0] == 0 or X.shape[1] == 0:
                raise ValueError(f"X is empty: {X.shape[0]} sample(s) and {X.shape[1]} feature(s)")
            names = None if X.feature_names is None else list(X.feature_names)
            _check_unique_names(names, "X")
            return X, names, definitions
        X, names = check_X(X, resolution=True)
        _check_unique_names(names, "X")
        if bin_edges is not None:
            try:
                X = BinnedMatrix.from_features(X, bin_edges)
            except ValueError as exc:
                raise ValueError(f"bin_edges: {exc}") from None
        return X, names, definitions

    def _fit(self, X, y, sample_weight, eval_set, names, definitions, event=None,
             decorrelate=None):
        self._validate_params()
        check_n_events(X.shape[0])  # int32 event indices: refused before any work
        w = check_weights(sample_weight, X.shape[0], training=True)
        event = self._checked_events(event, X.shape[0])
        self.validation_draw_ = None  # _held_out records its draw
        given = self._given_weights(y, w)
        rng = np.random.default_rng(self.random_state)
        binned = isinstance(X, BinnedMatrix)
        evals = self._eval_sets(eval_set, names, X.edges if binned else None, definitions)
        plan = self._tree_plan(int(np.count_nonzero(w)), bool(evals))  # events of weight 0: none
        rows = None  # float X: the training events are X[rows] (all when None), binned from X
        if plan.hold_out:
            # Split off before the negative-weight policy, which sees the training events
            # only; the held-out ones are evaluated with their given weights, as an eval_set.
            held = self._held_out(X.shape[0], event, rng)
            if given is w and self._class_ratio() is not None:
                raise ValueError(hold_out_ratio_refusal(self.sig_to_bkg_fraction))
            _check_loss_total(given[held], f"the {int(held.sum())} event(s) that "
                              f"validation_fraction={self.validation_fraction!r} held out of "
                              f"{held.size}", "raise validation_fraction, or give an eval_set")
            train = np.flatnonzero(~held)
            if self._estimator_type == "classifier":
                self._check_classes_left(y, given, train, int(held.sum()))
            evals = [(X[held], y[held], self._held_out_weights(y[held], given[held]))]
            if binned:
                X = X[train]
            else:  # no copy of the training features: they are binned from X directly
                rows = train
            # the class normalisation (sig_to_bkg_fraction) again on the training events: the
            # held-out ones take a random share of each class's weight
            y, w = y[train], w[train]
            given = self._given_weights(y, w)
            decorrelate = None if decorrelate is None else decorrelate[train]
            del held, train  # float X: rows holds the training rows until they are binned
        if self._policy_acts(w):
            with threads(self.n_jobs, y.size * X.shape[1]):
                w, keep = self._apply_negative_weight_policy(X, y, w, decorrelate, rows)
            if keep is not None:
                y, w = y[keep], w[keep]
                decorrelate = None if decorrelate is None else decorrelate[keep]
                if binned:
                    X = X[keep]
                else:
                    rows = np.flatnonzero(keep) if rows is None else rows[keep]
            given = self._normalise_classes(y, w)
            check_magnitudes(given, self.negative_weights, rescalable=given is w)
        w = given
        if not np.any(w > 0):
            raise ValueError("no event with a positive weight is left to train on")
        if self._estimator_type == "classifier":
            check_class_balance(y, w)
        if self._estimator_type == "regressor":
            check_residual_scale(y, w)
        n_train = y.size
        # "auto"'s share of events: a weight of 0 is no event (as the 1,000-event rule counts)
        self.min_node_size_ = self._resolved_node_size(int(np.count_nonzero(w)))
        self._set_growth()
        w_edges = w  # the edges see float64 weights: float32's rounding of 0.3 against 3 x 0.1
        if self.boosting in ("gradient", "newton"):  # would break their ties another way
            w = w.astype(np.float32)  # per-event channels are float32; every sum is float64
        with threads(self.n_jobs, n_train * X.shape[1]):
            quantised = self._use_quantised(n_train)
            mapper, codes = self._bin_training(X, w_edges, rows, quantised)
            # only the flatness loss's cells read the float64 weights after the binning; else
            # they go before the trees grow (8 bytes an event held through the fit)
            w_exact = w_edges if decorrelate is not None else None
            nan_in_training = X.missing_any() if binned else _has_missing_bin(codes)
            # the training rows (int64, 8 bytes an event) are binned: not held through the trees
            del given, w_edges, rows
            forest, result = self._run(y, w, codes, mapper, evals[-1] if evals else None, rng,
                                       quantised, plan, decorrelate, w_exact)
        self._finish_fit(forest, result, mapper, names, definitions, evals, plan, w,
                         nan_in_training)
        return self

    def _bin_training(self, X, w_edges, rows, quantised: bool) -> tuple[BinMapper, Any]:
        """The training events' bin mapper and codes: a BinnedMatrix's own bins (no binning
        here), or edges fitted on the rows ``rows`` of float X (all when None) with the
        float64 weights ``w_edges``; packed rows when ``quantised``."""
        if isinstance(X, BinnedMatrix):
            mapper = BinMapper.from_edges(list(X.edges))
            return mapper, QuantisedRows(X.codes) if quantised else feature_major(X.codes)
        mapper = BinMapper(self.max_bins, self.n_cuts,
                           0 if self.random_state is None else int(self.random_state))
        mapper.fit(X, w_edges, rows)
        return mapper, (QuantisedRows.from_features(X, mapper, rows) if quantised
                        else mapper.transform(X, rows))

    def _finish_fit(self, forest, result, mapper, names, definitions, evals, plan, w,
                    nan_in_training: bool) -> None:
        """Record the fitted forest (warning when no tree split: ``w``, the training
        weights, say why), the evaluation sets' losses and why it has its trees."""
        if forest.n_trees and not np.any(forest.feature >= 0):
            warnings.warn(self._no_split_hint(float(np.sum(w, dtype=np.float64)),
                                              float(np.sum(np.abs(w), dtype=np.float64)) / w.size),
                          stacklevel=user_stacklevel())
        if nan_in_training:  # the TMVA export warns: the Reader gives -999 for NaN events
            forest.extra["nan_in_training"] = True
        self._set_fitted(forest, names, definitions, result, mapper)
        with threads(self.n_jobs):  # their scores and losses run parallel kernels too
            self._record_evals(evals, result)
        evaluated = None if result.validation_loss is None else len(result.validation_loss)
        self.n_trees_reason_ = plan.reason(forest.n_rounds, result.best_iteration,
                                           forest.trees_per_round, evaluated, forest.extra)

    def _held_out_weights(self, y: np.ndarray, given: np.ndarray) -> np.ndarray:
        """The held-out events' weights: with a class ratio (``sig_to_bkg_fraction``) their
        given ones normalised to it on their own, as an eval_set's are (the whole sample's
        factors left them the hold-out's draw around it), so that their loss watches the
        training's class mix; else as given."""
        if self._class_ratio() is None:
            return given
        try:
            return self._normalise_classes(y, given)
        except ParameterError:
            raise
        except ValueError:
            raise ValueError(hold_out_ratio_refusal(self.sig_to_bkg_fraction)) from None

    def _check_classes_left(self, y: np.ndarray, w: np.ndarray, train: np.ndarray,
                            n_held: int) -> None:
        """ValueError when the held-out events took all the positive weight of a class, or
        none of it."""
        k = int(y.max()) + 1 if y.size else 0
        held = np.ones(y.size, np.bool_)
        held[train] = False
        self._refuse_classes_held_out(np.bincount(y, weights=w, minlength=k),
                                      np.bincount(y[train], weights=w[train], minlength=k),
                                      np.bincount(y[held], weights=w[held], minlength=k),
                                      n_held, y.size)

    def _refuse_classes_held_out(self, before: np.ndarray, after: np.ndarray, held: np.ndarray,
                                 n_held: int, n: int) -> None:
        """``_check_classes_left``'s error from the classes' weight sums before the hold-out
        of ``n_held`` of ``n`` events, after it and of the held-out events (memory and Dask)."""
        def names(classes: np.ndarray) -> str:
            return ", ".join(repr(np.asarray(self.classes_[c]).item()) for c in classes)

        lost = np.flatnonzero((before > 0) & ~(after > 0))
        if lost.size:
            raise ValueError(f"validation_fraction={self.validation_fraction!r} held out {n_held} "
                             f"of {n} events, and with them every event of positive "
                             f"weight of class {names(lost)}: give more events of it, an "
                             "eval_set, or an integer n_trees (no events held out)")
        unseen = np.flatnonzero((before > 0) & ~(held > 0))
        if unseen.size:  # the loss that chooses the trees would not see the class
            raise ValueError(f"validation_fraction={self.validation_fraction!r} held out {n_held} "
                             f"of {n} events, none of them (net) of positive weight of class "
                             f"{names(unseen)}, so the validation loss that chooses the number "
                             "of trees would not see it: give more events of it, a larger "
                             "validation_fraction, an eval_set, or an integer n_trees")

    def _check_stopping(self, given_eval: bool) -> None:
        """ParameterError when ``early_stopping_rounds`` has no loss to stop on: an integer
        ``n_trees`` with neither an eval_set (``given_eval``) nor ``early_stopping``."""
        rounds = self.early_stopping_rounds
        if self.n_trees != "auto" and rounds is not None and not (given_eval
                                                                   or self.early_stopping):
            raise ParameterError("early_stopping_rounds", f"early_stopping_rounds={rounds} "
                                 "stops on the loss of an eval_set, and there is none (a "
                                 "configuration has none): set early_stopping=True to hold "
                                 "out validation_fraction of the events, or n_trees='auto', "
                                 "or give fit an eval_set")

    def held_out_fraction(self, n_events: int) -> float:
        """The fraction of a fit's ``n_events`` training events (without an eval_set) held
        out to choose the number of trees: 0 where the fit holds none out."""
        plan = self._tree_plan(n_events, False)
        return plan.fraction if plan.hold_out else 0.0

    def _tree_plan(self, n_events: int, given_eval: bool) -> _TreePlan:
        """How many trees to grow and when to stop: ``n_trees`` as given (early stopping
        only when asked for), or for ``"auto"`` the rule of AUTO_TREES_FROM."""
        tol = float(self.tol)
        self._check_stopping(given_eval)
        flat = self._decorrelates_in_training() and self.decorrelation == "flatness"
        if flat and (self.early_stopping or self.early_stopping_rounds is not None
                     or (given_eval and self.n_trees == "auto")):
            raise ParameterError("early_stopping", "early stopping with decorrelation='flatness' "
                                 "watches the classification loss alone, which the flatness "
                                 "term raises by design (it stopped strength 1 after 3-7 "
                                 "trees): leave early_stopping, early_stopping_rounds and an "
                                 "eval_set with n_trees='auto' out (n_trees='auto' then grows "
                                 f"{AUTO_FIXED_TREES} trees), or give an integer n_trees")
        if self.n_trees != "auto":
            rounds = self._stopping_rounds()
            return _TreePlan(int(self.n_trees), rounds, self.early_stopping and not given_eval,
                             "given", self.validation_fraction, tol)
        if self.boosting in ADABOOST_BOOSTINGS:
            return _TreePlan(AUTO_FIXED_TREES, None, False, "adaboost")
        if flat:
            return _TreePlan(AUTO_FIXED_TREES, None, False, "flatness")
        rounds = self._stopping_rounds() or self.n_iter_no_change or AUTO_PATIENCE
        if given_eval:
            return _TreePlan(AUTO_MAX_TREES, rounds, False, "eval_set", 0.0, tol)
        if n_events < AUTO_TREES_FROM and not self.early_stopping:
            return _TreePlan(AUTO_SMALL_TREES, None, False, "small")
        return _TreePlan(AUTO_MAX_TREES, rounds, True, "held_out", self.validation_fraction, tol)

    def _resolved_node_size(self, n_events: int) -> float:
        """``min_node_size``; "auto" is the share of AUTO_MIN_LEAF_EVENTS events for gradient
        boosting under ``n_trees="auto"`` (as LightGBM's min_child_samples and
        HistGradientBoosting's min_samples_leaf), else 0 (newton has min_child_weight)."""
        if self.min_node_size != "auto":
            return float(self.min_node_size)
        if self._node_events() is not None:
            return min(0.25, AUTO_MIN_LEAF_EVENTS / max(n_events, 1))
        return 0.0

    def _node_events(self) -> int | None:
        """The events a child must hold the weight of (``min_node_size="auto"`` under
        ``n_trees="auto"`` for gradient boosting), counted in each tree's sample; None
        where ``min_node_size_`` is a share of the tree's weight."""
        auto = self.min_node_size == "auto" and self.n_trees == "auto"
        return AUTO_MIN_LEAF_EVENTS if auto and self.boosting == "gradient" else None

    def _held_out(self, n: int, event: Any, rng: np.random.Generator) -> np.ndarray:
        """The validation events: a ``validation_fraction`` of them drawn with ``rng``, or,
        with event numbers, those whose hashed number falls below it (the same events
        whatever the seed, the order or the other events); recorded for
        :meth:`held_out_mask`."""
        state = None if event is not None else rng.bit_generator.state
        self.validation_draw_ = {"n": n, "fraction": self.validation_fraction, "state": state}
        if event is None:
            return rng.random(n) < self.validation_fraction
        return hash_fraction(event) < self.validation_fraction

    def held_out_mask(self, event: Any = None) -> np.ndarray | None:
        """Which events of the fit ``n_trees="auto"`` (or ``early_stopping``) held out to
        choose the number of trees (True: no tree trained on them), in the fit's row order;
        None when it held none out. ``event``: the event numbers the fit was given (they
        chose the events), else None."""
        self._check_fitted()
        if "validation_draw_" not in self.__dict__:
            raise ValueError("the model was loaded from a file, which does not record the "
                             "events its fit held out: call held_out_mask on the fitted model")
        draw = self.validation_draw_
        if draw is None:
            return None
        if draw["state"] is not None:
            return uniform_draws_below(draw["state"], draw["n"], draw["fraction"])
        if event is None or np.shape(event) != (draw["n"],):
            raise ValueError(f"event: the fit held events out by their hashed event numbers; "
                             f"give its {draw['n']} event numbers, in its row order")
        return hash_fraction(np.asarray(event)) < draw["fraction"]

    @staticmethod
    def _checked_events(event: Any, n: int) -> np.ndarray | None:
        """``fit``'s event numbers: None, or n integers."""
        if event is None:
            return None
        event = np.asarray(event)
        if event.shape != (n,) or not np.issubdtype(event.dtype, np.integer):
            raise ValueError(f"event: expected {n} integer event numbers, one per event; got "
                             f"an array of shape {event.shape} and dtype {event.dtype}")
        return event

    def _set_fitted(self, forest, names, definitions, result, mapper) -> None:
        """The fitted attributes (``feature_names_in_`` only for named input, as scikit-learn)."""
        _check_unique_names(names, "feature_names")
        self.forest_ = forest
        # what the files, exports and reports of these trees describe (fitted_params), not
        # what set_params changes after the fit: a file of 20 trees said n_trees=5
        self._fitted_params = copy.deepcopy(self.get_params())
        forest.dense()  # lay the trees out for prediction now, not at the first predict
        self.n_features_in_ = forest.n_features
        types = self.__dict__.pop("_branch_types", None)  # of a hepbdt Dataset's X
        # a fit computed its features by today's rules, whatever file the estimator came from
        for name in ("feature_names_in_", "feature_definitions_", "branch_types_",
                     "_expression_rules"):
            self.__dict__.pop(name, None)
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
            self.feature_definitions_ = {k: v for k, v in definitions.items() if k in names}
            if types is not None:  # the branches' types, which apply compares with its trees
                self.branch_types_ = dict(types)
        self.train_loss_ = result.train_loss
        self.validation_loss_ = result.validation_loss
        self.n_trees_ = forest.n_rounds  # trees a class: n_trees counts rounds of K trees
        if mapper is not None:
            self.bin_edges_ = mapper.edges_

    def _eval_sets(self, eval_set, names, edges=None, definitions=None
                   ) -> list[tuple[Any, np.ndarray, np.ndarray]]:
        """``eval_set`` as a list of checked (X, y, w): one (X, y[, w]) tuple or a list of them,
        as XGBoost and LightGBM take it. With ``edges`` (a binned fit) each X is a
        BinnedMatrix of those bins (float X is binned with them). Each X's features are the
        training X's (``names``, read as ``definitions``, from branches of its types)."""
        if eval_set is None:
            return []
        if _one_eval_set(eval_set):
            eval_set = [eval_set]
        sets = []
        for i, entry in enumerate(eval_set):
            if not isinstance(entry, tuple | list) or len(entry) not in (2, 3):
                raise ValueError(f"eval_set[{i}] must be a tuple (X, y) or (X, y, sample_weight)")
            Xv = self._eval_features(entry[0], names, edges, i, definitions)
            yv = self._encode_y(entry[1], fitting=False)
            if yv.size != Xv.shape[0]:
                raise ValueError(f"eval_set[{i}]: X has {Xv.shape[0]} events but y has {yv.size}")
            wv = check_weights(entry[2] if len(entry) > 2 else None, Xv.shape[0],
                               f"eval_set[{i}] sample_weight", training=True)
            _check_loss_total(wv, f"eval_set[{i}] sample_weight", "give the set events of "
                              "positive net weight")
            try:  # in the training's class ratio (sig_to_bkg_fraction), as the hold-out
                wv = self._normalise_classes(yv, wv)
            except ParameterError:
                raise
            except ValueError as exc:
                raise ValueError(f"eval_set[{i}] sample_weight: {exc}, as the training's "
                                 f"class ratio (sig_to_bkg_fraction) needs") from None
            sets.append((Xv, yv, wv))
        return sets

    def _eval_features(self, X, names, edges, i: int, definitions=None) -> Any:
        """One eval set's features: float32 for a float fit, a BinnedMatrix of ``edges`` for
        a binned one."""
        what = f"eval_set[{i}] X"
        types = self.__dict__.get("_branch_types")  # the training X's (fit sets it)
        if isinstance(X, BinnedMatrix):
            if edges is None:
                raise ValueError(f"{what} is a BinnedMatrix but the training X is not; give "
                                 "float features, or train on a BinnedMatrix of the same bins")
            X = self._binned_in_order(X, names, what, definitions, types, "this fit")
            if not X.same_bins(BinnedMatrix(X.codes[:0], edges)):
                raise ValueError(f"{what} is binned with other edges than the training X; bin "
                                 "both alike (hepbdt.read(..., bin_edges=...))")
            return X
        Xv, _ = check_X(X, self.n_features_in_ if names is None else None, what, names=names,
                        owner="this fit", definitions=definitions, branch_types=types)
        return Xv if edges is None else BinnedMatrix.from_features(Xv, edges)

    def _binned_in_order(self, X: BinnedMatrix, names, what: str, definitions, branch_types,
                         owner: str, rules: int | None = None) -> BinnedMatrix:
        """A BinnedMatrix with the columns ``names`` (by name when both have names), read as
        ``definitions``, from branches of ``branch_types`` and by expression ``rules`` say
        (those of ``owner``)."""
        check_records(X, names, definitions, branch_types, rules, what, owner)
        if names is not None and X.feature_names is not None and list(X.feature_names) != list(names):
            X = X.columns(column_positions(list(X.feature_names), list(names), what, owner,
                                           definitions or {}))
        expected = len(names) if names is not None else self.n_features_in_
        if X.shape[1] != expected:
            raise ValueError(f"{what} has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {expected} features as input")
        return X

    def _stopping_rounds(self) -> int | None:
        """Rounds without improvement before stopping: only when asked for."""
        if self.early_stopping_rounds is not None:
            return int(self.early_stopping_rounds)
        return self.n_iter_no_change if self.early_stopping else None

    def _record_evals(self, evals, result) -> None:
        """``evals_result_`` (the loss after each tree on every eval set), ``best_iteration_``
        and ``best_score_`` (on the last set, which early stopping watches)."""
        self.evals_result_ = {}
        self.best_iteration_ = None
        self.best_score_ = None
        if not evals:
            return
        # the losses in the measure the loop recorded (Huber: its first round's delta)
        loss = result.extra.get("metric_loss") or self._make_loss()
        for i, (Xv, yv, wv) in enumerate(evals[:-1]):
            if isinstance(Xv, BinnedMatrix):
                Xv = Xv.to_features()  # the bins' lower edges: the same scores as the values
            if self.forest_.n_classes > 1:
                curve = [loss.loss(yv, wv, score.T) for score in self.forest_.staged_class_scores(Xv)]
            else:
                curve = [loss.loss(yv, wv, score) for score in self.forest_.staged_raw_score(Xv)]
            self.evals_result_[f"validation_{i}"] = {loss.name: curve}
        # the boosting loop has already evaluated the last set (the one it watches) tree by tree
        # cut to the rounds kept (n_rounds: a multi-class round is K trees)
        last = np.asarray(result.validation_loss[:self.forest_.n_rounds], dtype=float).tolist()
        self.evals_result_[f"validation_{len(evals) - 1}"] = {loss.name: last}
        self.best_iteration_ = result.best_iteration
        if result.best_iteration is not None and result.validation_loss is not None:
            self.best_score_ = float(result.validation_loss[result.best_iteration])

    def _run(self, y, w, codes, mapper, valid, rng, quantised, plan, decorrelate=None,
             w_exact=None):
        if self.boosting in ADABOOST_BOOSTINGS:
            return self._run_adaboost(y, w, codes, mapper, valid, rng, plan.n_trees, decorrelate)
        loss = self._make_loss()
        if (decorrelate is not None and self.decorrelation == "flatness"
                and self.decorrelation_strength > 0):
            # strength 0 trains the ordinary model itself (bit for bit); the cells' edges
            # see the float64 weights, as the bin edges do (float32's 3 x 0.1 != 0.3 moved
            # events between cells when the weights were scaled)
            loss = FlatnessLoss(loss, float(self.decorrelation_strength), decorrelate,
                                y, w if w_exact is None else w_exact, int(self.decorrelation_bins),
                                self.decorrelation_target, int(rng.integers(2**32)))
        booster = self._make_booster(loss)
        newton = self.boosting == "newton"
        params = SplitParams(booster.criterion, reg_lambda=self.reg_lambda if newton else 0.0,
                             reg_alpha=self.reg_alpha if newton else 0.0,
                             min_child_hessian=self.min_child_weight if newton else 0.0,
                             min_split_gain=self.min_split_gain)
        valid_binned = None
        if valid is not None:
            Xv = valid[0]
            codes_v = (feature_major(Xv.codes) if isinstance(Xv, BinnedMatrix)
                       else mapper.transform(Xv))
            valid_binned = (codes_v, valid[1], valid[2])
        rounds = plan.rounds
        # y as encoded (int8 labels, float64 targets): the losses take either without a copy
        result = run_boosting(
            booster, codes, y, w, mapper.n_bins_, mapper,
            n_trees=plan.n_trees, max_depth=self._depth_limit(), split_params=params,
            min_node_size=self.min_node_size_, subsample=self.subsample,
            subsample_mode=self.subsample_mode, colsample_bytree=self.colsample_bytree,
            colsample_bylevel=self.colsample_bylevel,
            colsample_bynode=self._node_fraction(mapper.n_bins_.size),
            rng=rng, valid=valid_binned,
            n_iter_no_change=rounds, tol=self.tol, verbose=self.verbose, quantised=quantised,
            max_leaves=self._leaf_limit(), min_node_events=self._node_events())
        keep = None  # the model is cut at its best iteration only when early stopping was asked for
        if result.best_iteration is not None and rounds is not None:
            keep = result.best_iteration + 1
        forest = result.builder.build(keep)
        forest.extra["loss"] = loss.name
        self._record_decorrelation(forest, decorrelate)
        return forest, result

    def _record_decorrelation(self, forest: Forest, decorrelate) -> None:
        """The decorrelation settings in ``forest.extra["decorrelation"]`` (when used)."""
        if decorrelate is None or self.decorrelation is None:
            return
        forest.extra["decorrelation"] = {
            "method": self.decorrelation, "strength": float(self.decorrelation_strength),
            "target": self.decorrelation_target, "bins": int(self.decorrelation_bins),
            "variables": int(decorrelate.shape[1])}
        if self.decorrelation == "uboost":
            forest.extra["decorrelation"]["steps"] = int(self.decorrelation_steps)

    def _no_split_hint(self, total: float, mean_abs: float) -> str:
        """Why no tree could split, in the terms of the options that decide it (the training
        weights' sum and mean magnitude)."""
        text = ("no tree made a single split, so the model is a constant: the features do not "
                "vary, or the options allow no split. The event weights "
                f"sum to {total:.4g} (mean |w| {mean_abs:.3g}).")
        if self.boosting == "newton":
            text += (f" With boosting='newton', min_child_weight={setting_text(self.min_child_weight)} and "
                     f"reg_lambda={setting_text(self.reg_lambda)} are in units of summed hessians (event "
                     "weight times at most 0.25 for the logistic loss), so small weights leave "
                     "no child heavy enough: scale the weights (e.g. to a mean of 1) or lower "
                     "min_child_weight and reg_lambda.")
        if self.min_node_size_ > 0:
            text += f" min_node_size={setting_text(self.min_node_size_)} may also be too large."
        if self.boosting in ("gradient", "newton") and self.min_split_gain > 0:
            text += (f" min_split_gain={setting_text(self.min_split_gain)} may be too large: a "
                     "split must gain more than it, in the same units (summed weight x hessian "
                     "for newton, weighted squared error of the pseudo-residuals for gradient).")
        if self.boosting == "newton" and self.reg_alpha > 0:
            text += (f" reg_alpha={setting_text(self.reg_alpha)} may be too large: a node whose "
                     "|summed weighted gradient| is below it scores 0.")
        return text

    def _quantisable(self, node_size: float) -> bool:
        """Packed integer histograms carry A and B only, and B stands in for the weight W:
        gradient (B is the weight) always, newton (B is the hessian) without min_node_size."""
        return self.boosting == "gradient" or (self.boosting == "newton" and node_size == 0)

    def _check_quantised_option(self) -> None:
        """``quantised_histograms`` checked with the other options (it was checked only
        in fit, after a configuration's data were read): a value, and True only where the
        booster can pack its histograms."""
        q = quantised_option(self.quantised_histograms)
        node_size = 0.0 if self.min_node_size == "auto" else float(self.min_node_size)
        if q is True and not self._quantisable(node_size):
            raise ParameterError("quantised_histograms", "quantised_histograms=True needs "
                                 "boosting='gradient', or 'newton' with min_node_size=0")

    def _use_quantised(self, n_events: int) -> bool:
        """Whether this fit packs its histograms (``_quantisable``; "auto": from
        QUANTISE_FROM_EVENTS events). True where they cannot serve was refused with the
        other options (``_check_quantised_option``)."""
        q = quantised_option(self.quantised_histograms)
        if q is False:
            return False
        # gradient's does not depend on min_node_size_ (not yet resolved in some callers)
        possible = self.boosting == "gradient" or self._quantisable(self.min_node_size_)
        return possible and (q is True or n_events >= QUANTISE_FROM_EVENTS)

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "forest_")

    def _check_fitted(self) -> None:
        if not hasattr(self, "forest_"):
            raise not_fitted(f"this {type(self).__name__} is not fitted yet; call fit first")

    def _input(self, X) -> np.ndarray:
        """X checked against the fitted features: named input put in their order."""
        self._check_fitted()
        if isinstance(X, BinnedMatrix):
            return self._binned_input(X).to_features()
        names = getattr(self, "feature_names_in_", None)
        X, given = check_X(X, self.n_features_in_, names=None if names is None else list(names),
                           owner=type(self).__name__,
                           definitions=getattr(self, "feature_definitions_", None),
                           branch_types=getattr(self, "branch_types_", None),
                           rules=getattr(self, "_expression_rules", None))
        warn_unnamed_columns(type(self).__name__, names, given)
        self._check_reader_nan(X)
        warn_unseen_missing(self.forest_, X, names)  # a KFoldModel notes its folds at once
        return X

    def _check_reader_nan(self, X: np.ndarray | BinnedMatrix) -> None:
        """ValueError for NaN inputs (a BinnedMatrix's missing codes too) to a model read from
        a TMVA two-class file: its Reader (EvaluateMVA) answers -999 for such an event
        without walking the trees, so the file's trees say nothing about one. (Walked, NaN
        went left at every node: a score that was neither the Reader's nor the exported
        model's; 37-71 of 131 NaN events changed their class.)"""
        if not from_tmva_two_class(self.forest_):
            return
        missing = X.codes == MISSING_CODE if isinstance(X, BinnedMatrix) else np.isnan(X)
        rows = np.flatnonzero(missing.any(axis=1))
        if rows.size:
            raise ValueError(f"X has NaN inputs in {rows.size} event(s) (first: event "
                             f"{int(rows[0])}); this model was read from a TMVA two-class file, "
                             "whose Reader returns -999 for such an event without walking the "
                             "trees: replace the missing values, or take the Reader's answer "
                             "with hepbdt.interop.tmva_response(model, X)")

    def _binned_input(self, X: BinnedMatrix) -> BinnedMatrix:
        """A BinnedMatrix in the model's feature order, whose bins the model's thresholds
        are edges of (so the codes decide every split as the values would)."""
        names = getattr(self, "feature_names_in_", None)
        X = self._binned_in_order(X, None if names is None else list(names), "X",
                                  getattr(self, "feature_definitions_", None),
                                  getattr(self, "branch_types_", None), type(self).__name__,
                                  getattr(self, "_expression_rules", None))
        forest = self.forest_
        for f in np.unique(forest.feature[forest.feature >= 0]):
            t = forest.threshold[forest.feature == f]
            t = t[np.isfinite(t)].astype(np.float32)
            outside = t[~np.isin(t, X.edges[f])]
            if outside.size:
                raise ValueError(f"X is binned, but the model splits feature {int(f)} at "
                                 f"{float(outside[0])!r}, which is not one of its bin edges: the "
                                 "codes cannot answer that split. Predict on float features (e.g. "
                                 "hepbdt apply), or bin with the model's edges (bin_edges_)")
        self._check_reader_nan(X)
        warn_unseen_missing(forest, X.codes, names, missing_code=MISSING_CODE)
        return X

    def _raw(self, X) -> np.ndarray:
        if isinstance(X, BinnedMatrix):
            # Block by block: each bin's lower edge stands for its values, which every split of
            # this model (its thresholds are edges) sends where the raw value goes.
            X = self._binned_input(X)
            out = np.empty(len(X), dtype=np.float64)
            with threads(self.n_jobs):
                for start in range(0, len(X), BINNED_PREDICT_BLOCK):
                    stop = min(start + BINNED_PREDICT_BLOCK, len(X))
                    out[start:stop] = self.forest_.raw_score(X.to_features(start, stop))
            return out
        X = self._input(X)
        with threads(self.n_jobs, X.shape[0] * max(1, self.forest_.n_trees)):
            return self.forest_.raw_score(X)

    def _staged_raw(self, X):
        if isinstance(X, BinnedMatrix):
            X = self._binned_input(X)
            if self._grown_on(X):  # the trees' own bins: scored from the codes (1 byte a value)
                yield from self.forest_.staged_raw_score_codes(feature_major(X.codes))
                return
            yield from self.forest_.staged_raw_score(X.to_features())  # checked: not again
            return
        yield from self.forest_.staged_raw_score(self._input(X))

    def _grown_on(self, X: BinnedMatrix) -> bool:
        """Whether X (in the model's feature order) has the bins the trees were grown on, so
        that its codes answer their ``bin_threshold`` splits."""
        edges = getattr(self, "bin_edges_", None)
        return (edges is not None and self.forest_.aggregation in ("sum", "weighted_mean")
                and X.same_bins(BinnedMatrix(X.codes[:0], edges)))

    @property
    def feature_importances_(self) -> np.ndarray:
        """Split gain per feature, each split's gain times its tree's |boost weight|, summed
        and normalised to 1 (zeros for a forest without splits). TMVA's own ranking squares
        the gains within each tree: ``hepbdt.evaluation.tmva_importance(model,
        quadrature=True)``."""
        self._check_fitted()
        gains = self.forest_.feature_gain()
        total = gains.sum()
        return gains / total if total > 0 else gains

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The model as a JSON-ready dict (format, version, options, forest, learning curve)."""
        self._check_fitted()
        params = {k: (v.item() if isinstance(v, np.generic) else v)
                  for k, v in fitted_params(self).items()}
        # the expression rules of a loaded file (0: saved before 2026-12-04), else today's
        rules = getattr(self, "_expression_rules", EXPRESSION_RULES)
        doc = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "estimator": type(self).__name__,
            "params": params,
            "feature_names": None if not hasattr(self, "feature_names_in_")
            else [str(n) for n in self.feature_names_in_],
            "feature_definitions": getattr(self, "feature_definitions_", None) or {},
            # a bare e, pi, inf or nan in a feature is the constant (a branch is `e`), and
            # the expressions' rules (hepbdt._version); a file saved before both says neither
            **({} if rules == 0 else {"constants": "bare", "expression_rules": rules}),
            # the types of the branches the features read (hepbdt.io.branch_types); a
            # model fitted on other arrays, or saved before the record, has none
            **({} if getattr(self, "branch_types_", None) is None
               else {"branch_types": dict(self.branch_types_)}),
            "forest": self.forest_.to_dict(),
            "train_loss": np.asarray(self.train_loss_, float).tolist(),
            "validation_loss": None if self.validation_loss_ is None
            else np.asarray(self.validation_loss_, float).tolist(),
            "best_iteration": self.best_iteration_,
            "n_trees_reason": getattr(self, "n_trees_reason_", None),
            "min_node_size_used": getattr(self, "min_node_size_", None),
            "evals_result": getattr(self, "evals_result_", None) or {},
            "bin_edges": None if getattr(self, "bin_edges_", None) is None
            else [np.asarray(edges, dtype=np.float64).tolist() for edges in self.bin_edges_],
        }
        doc.update(self._extra_state())
        return doc

    def _extra_state(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_tmva(cls, options: str, **overrides: Any):
        """An estimator set up as TMVA's method BDT with this option string.

        E.g. ``BDTClassifier.from_tmva("NTrees=850:MinNodeSize=2.5%:MaxDepth=3:"
        "BoostType=AdaBoost:AdaBoostBeta=0.5:UseBaggedBoost:BaggedSampleFraction=0.5:"
        "SeparationType=GiniIndex:nCuts=20")``. Options not given take TMVA's defaults; an
        option hepbdt cannot reproduce is an error naming it (see ``hepbdt.tmva_options``).
        ``overrides`` set further hepbdt parameters (e.g. ``random_state``, ``n_jobs``).
        """
        params = parse_tmva_options(options, cls._estimator_type)
        params.update(overrides)
        return cls(**params)

    def to_tmva(self) -> str:
        """The TMVA option string of this estimator's parameters (see ``hepbdt.tmva_options``);
        of a fitted one, those it was fitted with (``set_params`` since acts on the next fit)."""
        params = with_resolved_growth(fitted_params(self), self._estimator_type == "classifier")
        if params["n_trees"] == "auto" and hasattr(self, "forest_"):
            params["n_trees"] = self.forest_.n_rounds  # the rounds that n_trees="auto" kept
        if params["min_node_size"] == "auto":
            params["min_node_size"] = getattr(self, "min_node_size_", None)
            if params["min_node_size"] is None:  # not fitted: what a fit would choose, when it is known
                params["min_node_size"] = 0.0 if params["n_trees"] != "auto" else "auto"
        return to_tmva_options(params, self._estimator_type)

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as versioned JSON (atomically: temporary name, then rename)."""
        text = dumps_strict(self.to_dict())
        check_written_size(f"the model file {os.fspath(path)!r}", text)
        atomic_write_text(path, text)

    def save_tmva(self, path: str | os.PathLike, **options: Any) -> dict[str, Any]:
        """Write a TMVA ``MethodBDT`` XML weight file for ``TMVA::Reader``.

        See :func:`hepbdt.interop.to_tmva_xml` for ``options`` and what is returned.
        """
        return to_tmva_xml(self, path, **options)

    def save_onnx(self, path: str | os.PathLike, **options: Any) -> dict[str, Any]:
        """Write an ONNX model (``ai.onnx.ml`` TreeEnsembleRegressor) for onnxruntime.

        See :func:`hepbdt.interop.to_onnx` for ``options``, the outputs and what is returned.
        """
        return to_onnx(self, path, **options)

    def save_cpp(self, path: str | os.PathLike, **options: Any) -> dict[str, Any]:
        """Write a dependency-free C++ header with the forest and ``evaluate(const float*)``.

        See :func:`hepbdt.interop.to_cpp` for ``options`` and what is returned.
        """
        return to_cpp(self, path, **options)


def quantised_option(q: Any) -> bool | str:
    """``quantised_histograms`` as "auto", True or False (numpy's booleans too); refused
    otherwise. (0 and numpy's False passed a check by equality and then acted as "auto",
    which packs the histograms from 50,000 events.)"""
    if isinstance(q, bool | np.bool_):
        return bool(q)
    if isinstance(q, str) and q == "auto":
        return q
    raise ParameterError("quantised_histograms", f"quantised_histograms={q!r} is not valid; "
                         "expected 'auto', True or False")


def _check_same_mass(column: np.ndarray, m: np.ndarray, feature: int) -> None:
    """ParameterError where ``decorrelate`` (float64) differs from X's column of the map's
    variable (the model reads it there; as float32, the type X is read in): the trees
    would use one mass and the map another."""
    differ = np.flatnonzero(np.asarray(column, np.float32) != m.astype(np.float32))
    if differ.size:
        i = int(differ[0])
        raise ParameterError("decorrelate", f"this model reads its map's variable from X's "
                             f"column {feature}, and decorrelate differs from it at "
                             f"{differ.size} event(s) (first: event {i}, X has {float(column[i]):.9g}, "
                             f"decorrelate {float(m[i]):.9g}): drop decorrelate, or give X's "
                             "values")


def _check_same_mass_bin(X: BinnedMatrix, m: np.ndarray, feature: int) -> None:
    """ParameterError where ``decorrelate`` falls in another bin of the map's variable than
    binned X's column (in the model's order): the trees would read one mass and the map
    another (a binned X gives only the bin, so values within it are not compared)."""
    edges = X.edges[feature]
    codes = BinnedMatrix.from_features(m.astype(np.float32)[:, None], [edges]).codes[:, 0]
    differ = np.flatnonzero(codes != X.codes[:, feature])
    if differ.size:
        i = int(differ[0])
        raise ParameterError("decorrelate", f"this model reads its map's variable from X's "
                             f"column {feature}, and decorrelate falls in another of its bins "
                             f"at {differ.size} event(s) (first: event {i}, X's bin code "
                             f"{int(X.codes[i, feature])}, decorrelate {float(m[i]):.9g} in bin "
                             f"{int(codes[i])}): drop decorrelate, or give X's values")


class BDTClassifier(_BDTBase):
    """Boosted decision tree classifier (signal = 1, background = 0; or K >= 3 classes).

    ``decision_function`` is the raw ensemble score (larger = more signal-like);
    ``predict_proba`` maps it through the loss's link (deviance: 1/(1+exp(-2F)); logistic:
    1/(1+exp(-F))). See the README for every option and its TMVA name.

    Three or more labels train a multi-class model, ``classes_`` the sorted labels,
    ``predict_proba`` and ``decision_function`` (n, K): ``gradient`` and ``newton`` grow K
    trees a round on the softmax loss (``n_trees`` counting rounds); ``adaboost`` is SAMME
    (scikit-learn's multi-class AdaBoost, ``beta`` its learning rate), one K-class tree a
    round on the multi-class Gini index, ``predict_proba`` scikit-learn's (see
    ``hepbdt.boosting.samme``). The other boosters are two-class only.

    Boosters (``boosting``): ``"gradient"``, ``"newton"``, and the AdaBoost family of
    ``hepbdt.boosting.adaboost``: ``"adaboost"`` (TMVA's AdaBoost; score in [-1, 1], or
    [0, 1] with ``use_yes_no_leaf=False``), ``"realadaboost"`` (Friedman's real AdaBoost,
    P = 1/(1+exp(-2F))), ``"eps"`` (epsilon-boost, step ``epsilon``) and ``"bagging"``.
    The AdaBoost family uses ``criterion`` (``"gini"``, ``"cross_entropy"``,
    ``"misclassification"``, ``"sdivsqrtsplusb"``: TMVA's GiniIndex, CrossEntropy,
    MisClassificationError, SDivSqrtSPlusB), ``beta`` (AdaBoostBeta), ``use_yes_no_leaf``
    (UseYesNoLeaf), and reads ``min_node_size`` as TMVA's MinNodeSize: the fraction of the
    tree's events (unweighted). ``n_vars_per_node`` (TMVA UseNvars, or ``"sqrt"``) sets the
    number of variables drawn per node from all of them (refused with any of the
    ``colsample_by*`` fractions).
    ``sig_to_bkg_fraction``: TMVA's initial class normalisation (total signal weight /
    background weight; ``"auto"``: 1 for the AdaBoost family, weights as given for
    gradient and newton; ``"tmva"``: 1 for two classes and as given for more, as TMVA,
    what ``from_tmva`` gives for BoostType=Grad; ``None``: as given). ``from_tmva``/``to_tmva``
    read and write TMVA option strings.

    Tree growth: depth-wise to ``max_depth``, or, with ``max_leaves`` (every booster),
    leaf-wise as LightGBM's ``num_leaves`` and XGBoost's ``grow_policy="lossguide"``: the
    leaf whose best split gains most is split next, until the tree has ``max_leaves`` leaves
    or none can split; ``max_depth`` still limits the depth, and may then be None (no
    limit). ``colsample_bylevel`` then draws one feature set per depth. TMVA has no
    leaf-wise growth: ``to_tmva`` refuses it (the TMVA XML export works). ``max_depth``,
    ``max_leaves`` and ``learning_rate`` default to "auto": with the gradient booster under
    ``n_trees="auto"`` and none of the three given (nor ``decorrelation``), leaf-wise trees
    of AUTO_LEAVES (15) leaves without a depth limit at learning rate AUTO_RATE (0.15),
    measured best on the panel of ``benchmarks/bench_defaults.py``; anywhere else depth-wise
    trees of depth 5 at learning rate 0.1, the defaults before, so that an integer
    ``n_trees`` or any of the three given trains as it did. ``max_depth_``,
    ``max_leaves_`` and ``learning_rate_`` say what a fit used.

    Tree count: ``n_trees="auto"`` (default) grows gradient and newton models until the
    loss on a held-out ``validation_fraction`` of the training events (chosen by hashed
    event number when ``fit`` gets ``event``) has not improved for ``n_iter_no_change``
    trees, at most AUTO_MAX_TREES, and keeps the trees up to the best; with an
    ``eval_set`` that set is watched instead and nothing is held out. Below AUTO_TREES_FROM
    training events it grows AUTO_SMALL_TREES, and for the AdaBoost family AUTO_FIXED_TREES.
    ``n_trees_reason_`` says what decided the count. An integer ``n_trees`` grows exactly
    that many on every event (unless ``early_stopping`` is set).

    Negative event weights (``negative_weights``): ``"regress"`` (default) replaces, in
    each class that holds a negative weight, every event's weight by the class's local net
    weight E[w | x]: a model of the events' signs, P(negative | x) = e^F / (1 + 2 e^F) (F
    the log-ratio of the cancelled to the net density), boosted by hepbdt's own Newton
    booster and cross-fitted over 3 folds, scores each event with models that did not
    train on it; two numbers fitted on the other half of the event's fold rescale F, and
    the event weighs |w| / (1 + 2 e^F), whose expectation is E[w | x] (no model or map
    behind an event's new weight saw it); each class keeps its net weight
    (``hepbdt.boosting.negative_weights``); ``"pair"`` annihilates each negative-weight
    event with its nearest positive-weight neighbours of the same class (TMVA
    PairNegWeightsGlobal); ``"keep"`` trains on the signed weights (a node whose net weight
    or hessian sum is not positive is not split); ``"ignore"`` drops them from training
    (TMVA IgnoreNegWeightsInTraining; they still count in evaluation); ``"abs"`` uses |w|;
    ``"inverse_boost"`` (AdaBoost family) keeps them and reweights them by the inverse
    boost factor (TMVA InverseBoostNegWeights). Every policy acts only when some weight is
    negative: without one, every policy trains the same model. ``"regress"`` is the
    default because it measured closest to training on the net sample
    (``benchmarks/bench_negative_weights.py``, a signal-like background component
    cancelled by negative weights): in 28 features with 10 % of the background negative
    it is within 0.0017 of the net-sample model for every booster (adaboost 0.0030 above)
    and 0.013-0.017 above dropping the negative events; with 40 % it is 0.0020-0.0041
    below the net sample on average over ten draws and 0.10-0.17 above dropping them,
    where ``"pair"`` is 0.05-0.07 below the net sample (nearest neighbours in 28
    dimensions are not local). In 4 dimensions it is within 0.0007 of the net sample and
    ``"pair"`` within 0.0021, and with 10 % of the weights flipped at random ``"regress"``
    loses at most 0.0009 of test AUC against dropping the flipped events. ``"regress"``
    has no TMVA equivalent (``to_tmva`` refuses it: choose ``"pair"`` to export the option
    string). Its cost at
    1M events x 28 features is one early-stopped model of depth-2 trees a fold on at most
    90,000 events, per class with negative weights: 2.6-3.5 s, 0.66-0.72 of the default
    main fit (4.8 s; the benchmark's ``--cost``).

    Mass decorrelation (``decorrelation="flatness"``, gradient and newton, two classes):
    ``fit(X, y, w, decorrelate=m)`` with m (n,) or (n, k) the variable(s) the score must
    not sculpt (a mass; a feature or not; used only in training, not at predict time).
    The loss adds ``decorrelation_strength`` times a flatness term: for the
    ``decorrelation_target`` class(es) (``"background"``, ``"signal"`` or ``"both"``), the
    squared differences between the score CDF in each of ``decorrelation_bins``
    equal-weight bins of m (per column; cells of the grid for k > 1) and the class's whole
    CDF, weighted towards high cuts by 1/max(1 - F, 0.05)^2
    (``hepbdt.boosting.decorrelation``). Strength scale: at 1 the term's per-event
    gradient is as large as the deviance's at the median score (larger towards high
    scores); 0 trains the ordinary model bit for bit. Measured on the toy of
    ``hepbdt.demo_data.sculpting_arrays`` (100 trees of depth 3; background rejection and
    1/JSD of the background mass at 50 % signal efficiency; plain model 58 and 1.7):
    0.003-0.01 keep the model (57-55, 1.8), 0.03 gives 52 and 2.1, 0.1 gives 36 and 4.6,
    0.3 gives 20 and 32, 0.5 gives 17 and 55, 1 gives 16 and 35 (over five draws of the
    toy: 39 and 44 at 0.5 and 1, varying by about 10); above about 1 the trade-off gets
    worse, not stronger (3: 11.5 and 21; 10-100: 1/JSD 14-37), as the surrogate hessian
    that bounds the flatness steps also slows the deviance's
    (``benchmarks/bench_decorrelation.py``). Useful range: 0.01-1; above it, smaller steps
    help (learning rate 0.03 and 300 trees: strength 1 gives 14.5 and 136, 3 gives 12.7 and
    232).
    ``n_trees="auto"`` watches the base loss (deviance or logistic) on the held-out
    events, not the flatness term; the flatness hessian slows the deviance, so a
    decorrelated fit grows more trees (on the toy at strength 1: 937, against
    93 without decorrelation). More than two classes are refused.

    uBoost (``decorrelation="uboost"``, the AdaBoost family, two classes;
    ``hepbdt.boosting.uboost``): ``decorrelation_steps`` K AdaBoost ensembles of
    ``n_trees`` trees each, step k aiming at the efficiency k/(K+1) of the
    ``decorrelation_target`` class (``"background"``: the fraction below the cut, as
    hep_ml's; ``"signal"``: above it). After each tree, the class's events in the bins of
    m (``decorrelation_bins`` equal-weight bins) where the cut at that efficiency passes
    too few of them get their boost weight times exp(strength * ln(1/E) * (e - e_bin)),
    E the mean |e_bin - e|; ``decorrelation_strength`` is hep_ml's uniforming_rate (0: every
    step is plain AdaBoost, bit for bit; 1 hep_ml's default). The score is the mean over
    steps of sigmoid((s_k - cut_k) / width_k), in [0, 1]; it needs no m to predict, saves
    and loads; the TMVA, ONNX and C++ exports refuse it. Its efficiency steps cover
    1/(K+1) to K/(K+1) of the class, so a cut keeping a few per cent of the background is
    outside them: on the toy uBoost barely flattens the background there
    (``benchmarks/bench_decorrelation.py``).

    ``decorrelation_map="ddt"`` (any booster, with or without ``decorrelation``; two
    classes, one variable; ``hepbdt.boosting.ddt``): after the fit, the score is mapped
    through the target class's score CDF in equal-weight bins of m (250 training events a
    bin, 2-100 bins; interpolated in m between bin centres), so a cut on it keeps the same
    fraction of that class at every m: the designed decorrelated tagger. The mapped score
    F in [0, 1] is what ``decision_function`` and ``predict_proba``'s signal column give;
    it needs m at predict time: read from X when m was one of the features at fit (the
    same numbers), else ``decision_function(X, decorrelate=m)``, and refused without it
    (and for a binned X). Exports refuse it.
    """

    _estimator_type = "classifier"
    _boostings = ("gradient", "newton", *ADABOOST_BOOSTINGS)

    __init__ = _constructor(
        (*_shared_head("auto", "auto"), _Param("loss", None, "str | None"), *_shared_tail("auto"),
         _Param("criterion", "gini", "str"), _Param("beta", 0.5, "float"),
         _Param("epsilon", 0.01, "float"), _Param("use_yes_no_leaf", True, "bool"),
         _Param("sig_to_bkg_fraction", "auto", "float | str | None"),
         _Param("signal_label", None, "int | float | str | bool | None"),
         _Param("decorrelation", None, "str | None"),
         _Param("decorrelation_strength", 1.0, "float"),
         _Param("decorrelation_target", "background", "str"),
         _Param("decorrelation_bins", 10, "int"),
         _Param("decorrelation_steps", 5, "int"),
         _Param("decorrelation_map", None, "str | None")),
        "Set the options (see the class docstring); nothing is checked until fit.")

    def _validate_extra_params(self, require) -> None:
        require(self.criterion in CLASSIFICATION_CRITERIA, "criterion",
                f"one of {CLASSIFICATION_CRITERIA}")
        require(_is_finite(self.beta) and self.beta > 0, "beta", "a finite number > 0")
        require(_is_finite(self.epsilon) and self.epsilon > 0, "epsilon", "a finite number > 0")
        require(isinstance(self.use_yes_no_leaf, (bool, np.bool_)), "use_yes_no_leaf", "True or False")
        f = self.sig_to_bkg_fraction
        require(f is None or f in ("auto", "tmva") or (_is_finite(f) and f > 0),
                "sig_to_bkg_fraction", "'auto', 'tmva', None or a finite number > 0")
        self._validate_decorrelation()
        if self.boosting == "realadaboost" and not self.use_yes_no_leaf:
            raise ParameterError("use_yes_no_leaf", "use_yes_no_leaf=False is for "
                                 "boosting='adaboost' (TMVA's RealAdaBoost); "
                                 "boosting='realadaboost' always has leaves 1/2 ln(p/(1-p))")

    def _validate_decorrelation(self) -> None:
        """The decorrelation options (see the class docstring)."""
        method = self.decorrelation
        if method is not None and method not in DECORRELATION_METHODS:
            raise ParameterError("decorrelation", f"decorrelation={method!r} is not valid; "
                                 f"expected None or one of {DECORRELATION_METHODS}")
        s = self.decorrelation_strength
        if (isinstance(s, bool) or not isinstance(s, int | float | np.number)
                or not (math.isfinite(s) and s >= 0)):
            raise ParameterError("decorrelation_strength", f"decorrelation_strength={s!r} is "
                                 "not valid; expected a finite number >= 0 (0: no decorrelation; "
                                 "about 0.1 weak, 1 strong)")
        if self.decorrelation_target not in DECORRELATION_TARGETS:
            raise ParameterError("decorrelation_target", f"decorrelation_target="
                                 f"{self.decorrelation_target!r} is not valid; expected one of "
                                 f"{DECORRELATION_TARGETS}")
        b = self.decorrelation_bins
        if isinstance(b, bool) or not isinstance(b, int | np.integer) or not 2 <= b <= 1000:
            raise ParameterError("decorrelation_bins", f"decorrelation_bins={b!r} is not valid; "
                                 "expected an integer in [2, 1000]")
        k = self.decorrelation_steps
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= 100:
            raise ParameterError("decorrelation_steps", f"decorrelation_steps={k!r} is not "
                                 "valid; expected an integer in [1, 100] (uBoost's efficiency "
                                 "steps)")
        if method == "flatness" and self.boosting not in ("gradient", "newton"):
            raise ParameterError("decorrelation", "decorrelation='flatness' needs "
                                 "boosting='gradient' or 'newton' (the flatness loss adds to "
                                 f"their gradients); for boosting={self.boosting!r} use "
                                 "decorrelation='uboost'")
        n = self.n_trees if self.n_trees != "auto" else AUTO_FIXED_TREES
        if method == "uboost" and self.decorrelation_strength > 0 and n * k > MAX_TREES:
            # uBoost's forest holds every step's ensemble: a typo made a fit of days whose
            # model no file could hold (audit FB)
            raise ParameterError("n_trees", f"decorrelation='uboost' grows n_trees={n} trees "
                                 f"for each of decorrelation_steps={k}: {n * k:,} trees in one "
                                 f"model, more than the {MAX_TREES:,} a model may have; give "
                                 f"n_trees * decorrelation_steps <= {MAX_TREES:,}")
        if method == "uboost" and self.boosting not in ADABOOST_BOOSTINGS:
            raise ParameterError("decorrelation", "decorrelation='uboost' needs an AdaBoost-type "
                                 f"booster {ADABOOST_BOOSTINGS} (it reweights events); for "
                                 f"boosting={self.boosting!r} use decorrelation='flatness'")
        mapping = self.decorrelation_map
        if mapping not in (None, "ddt"):
            raise ParameterError("decorrelation_map", f"decorrelation_map={mapping!r} is not "
                                 "valid; expected None or 'ddt'")
        if mapping is not None and self.decorrelation_target not in UBOOST_TARGETS:
            raise ParameterError("decorrelation_target", "decorrelation_map='ddt' maps one "
                                 f"class's score: decorrelation_target one of {UBOOST_TARGETS}, "
                                 f"not {self.decorrelation_target!r}")
        if method == "uboost" and self.decorrelation_target not in UBOOST_TARGETS:
            raise ParameterError("decorrelation_target", "decorrelation='uboost' makes one class "
                                 f"flat: decorrelation_target one of {UBOOST_TARGETS}, not "
                                 f"{self.decorrelation_target!r}")

    def _given_weights(self, y, w) -> np.ndarray:
        self._check_class_weights(y, w)
        return super()._given_weights(y, w)

    def _check_class_weights(self, y, w) -> None:
        """ValueError naming, by its label, each class whose weights (as the negative-weight
        policy leaves them) sum to nothing positive beyond the rounding of the sum: the
        boosters refuse such a class, but know it only by its index, and a class netting 0
        with unit weights nets a residue of 1e-17 (either sign) with weights of 0.1. Two
        classes with "regress" or "pair" acting: the policy refuses in its own words."""
        policy = self.negative_weights
        if not self._multiclass and policy in ("regress", "pair") and np.any(w < 0):
            return
        kept = np.asarray({"abs": np.abs(w), "ignore": np.where(w > 0, w, 0.0)}.get(policy, w),
                          np.float64)
        labels = np.asarray(y, np.int64)
        classes = [kept[labels == k] for k in range(self.classes_.size)]
        sums = np.array([exact_sum(c) for c in classes])  # as the boosters take them
        if not np.all(np.isfinite(sums)):  # weights beyond float32's range: refused by name
            check_magnitudes(kept)
        slack = np.array([running_sum_slack(c.size, np.abs(c).sum()) for c in classes])
        if self._multiclass:
            self._refuse_classes_without_weight(sums, slack)
        elif not np.all(sums > slack):
            raise ValueError(f"both classes need a positive sum of weights; signal {sums[1]}, "
                             f"background {sums[0]}")

    def _refuse_classes_without_weight(self, sums: np.ndarray, slack: np.ndarray | float = 0.0
                                       ) -> None:
        """``_check_class_weights``'s error for the classes' weight sums (K,), each of which
        must exceed its ``slack`` (the rounding of its sum)."""
        bad = np.flatnonzero(~(sums > slack))
        if bad.size:
            which = ", ".join(f"{np.asarray(self.classes_[k]).item()!r} ({sums[k]:.6g})" for k in bad)
            policy = self.negative_weights
            how = (f" after negative_weights={policy!r}" if policy in ("abs", "ignore") else "")
            raise ValueError(f"every class needs a positive sum of weights{how}; these classes "
                             f"have none: {which}")

    def _class_ratio(self) -> float | None:
        """The signal / background weight ratio the normalisation sets (None: off)."""
        f = self.sig_to_bkg_fraction
        if f == "tmva":
            return None if self._multiclass else 1.0
        if f == "auto":
            return 1.0 if self.boosting in ADABOOST_BOOSTINGS and not self._multiclass else None
        return f

    def _ratio_of_many_classes(self) -> ParameterError:
        """The error of a signal / background ratio set for more than two classes."""
        return ParameterError("sig_to_bkg_fraction", "sig_to_bkg_fraction is a ratio of two "
                              f"classes; with {self.classes_.size} classes leave it 'auto' or "
                              "None, and scale the weights per class yourself")

    def _normalise_classes(self, y, w):
        """TMVA's initial normalisation: signal / background weight = sig_to_bkg_fraction.

        ``"auto"``: on (ratio 1) for the AdaBoost family, as TMVA, off for gradient and
        newton and for more than two classes; ``"tmva"``: ratio 1 for two classes, off for
        more, for every booster (TMVA's InitEventSample). The weights are scaled so that
        they add up to the number of events of non-zero weight (one of weight 0 is no event).
        """
        f = self._class_ratio()
        if f is None:
            return w
        if self._multiclass:
            raise self._ratio_of_many_classes()
        signal = y == 1
        s, b = float(w[signal].sum()), float(w[~signal].sum())
        if not (positive_beyond_rounding(w[signal]) and positive_beyond_rounding(w[~signal])):
            raise ValueError(f"both classes need a positive sum of weights; signal {s}, background {b}")
        n = float(np.count_nonzero(w))
        return np.where(signal, w * (n * f / (1.0 + f) / s), w * (n / (1.0 + f) / b))

    def _run_adaboost(self, y, w, codes, mapper, valid, rng, n_trees, decorrelate=None):
        if valid is not None:
            raise ParameterError("boosting", "early stopping and eval_set are available for "
                                 f"boosting='gradient' and 'newton', not for "
                                 f"boosting={self.boosting!r}")
        if self._multiclass:
            return run_samme(
                codes, y, w, mapper.n_bins_, mapper, n_classes=self.classes_.size,
                n_trees=n_trees, max_depth=self._depth_limit(), beta=float(self.beta),
                min_node_size=self.min_node_size_, subsample=self.subsample,
                subsample_mode=self.subsample_mode, colsample_bytree=self.colsample_bytree,
                colsample_bylevel=self.colsample_bylevel,
                colsample_bynode=self._node_fraction(codes.shape[0]),
                inverse_boost_negative=self.negative_weights == "inverse_boost", rng=rng,
                verbose=self.verbose, max_leaves=self._leaf_limit())
        options = dict(
            variant=self.boosting, n_trees=n_trees, max_depth=self._depth_limit(),
            criterion=CRITERIA[self.criterion], criterion_name=self.criterion,
            beta=float(self.beta), epsilon=float(self.epsilon),
            use_yes_no_leaf=bool(self.use_yes_no_leaf), min_node_size=self.min_node_size_,
            subsample=self.subsample, subsample_mode=self.subsample_mode,
            colsample_bytree=self.colsample_bytree, colsample_bylevel=self.colsample_bylevel,
            colsample_bynode=self._node_fraction(codes.shape[0]),
            inverse_boost_negative=self.negative_weights == "inverse_boost", rng=rng,
            verbose=self.verbose, max_leaves=self._leaf_limit())
        if decorrelate is None or self.decorrelation != "uboost":
            return run_adaboost(codes, y, w, mapper.n_bins_, mapper, **options)
        forest, result = run_uboost(
            codes, y, w, mapper.n_bins_, mapper, decorrelate,
            n_steps=int(self.decorrelation_steps), strength=float(self.decorrelation_strength),
            n_bins=int(self.decorrelation_bins), target=self.decorrelation_target, **options)
        self._record_decorrelation(forest, decorrelate)
        return forest, result

    def _multi_class_tag(self) -> bool:
        """Whether these options train three or more classes, as ``fit`` takes them (gradient
        and newton on the softmax loss, adaboost as SAMME: gini, yes/no leaves) with no
        two-class option (decorrelation, a map, a signal / background ratio): scikit-learn's
        ``multi_class`` tag, so its checks and tools do not give realadaboost, eps or bagging
        three classes to be refused."""
        if self.boosting in ("gradient", "newton"):
            booster = self.loss in (None, "softmax")
        else:
            booster = (self.boosting == "adaboost" and bool(self.use_yes_no_leaf)
                       and self.criterion == "gini")
        f = self.sig_to_bkg_fraction
        ratio = f is None or (isinstance(f, str) and f in ("auto", "tmva"))
        return (booster and ratio and self.decorrelation is None
                and self.decorrelation_map is None)

    @property
    def _multiclass(self) -> bool:
        """Whether the classes (of the fit under way or done) are more than two."""
        return getattr(self, "classes_", np.empty(0)).size > 2

    def _check_multiclass(self) -> None:
        """Refuse the boosters and options that are two-class only, in scikit-learn's words
        too: "Only binary classification is supported", as its checks ask of a classifier
        whose ``multi_class`` tag (``_multi_class_tag``) is False."""
        try:
            self._check_multiclass_options()
        except ParameterError as exc:
            raise ParameterError(exc.param, "Only binary classification is supported with "
                                 f"these options: {exc}") from None

    def _check_multiclass_options(self) -> None:
        """ParameterError naming the first option that is two-class only."""
        k = self.classes_.size
        if self.boosting == "adaboost":  # SAMME
            if not self.use_yes_no_leaf:
                raise ParameterError("use_yes_no_leaf", f"with {k} classes boosting='adaboost' "
                                     "is SAMME, whose leaves say a class: use_yes_no_leaf=True")
            if self.criterion != "gini":
                raise ParameterError("criterion", f"with {k} classes boosting='adaboost' "
                                     "(SAMME) grows its trees on the multi-class Gini index: "
                                     f"criterion='gini'; criterion={self.criterion!r} is "
                                     "two-class only")
        elif self.boosting not in ("gradient", "newton"):
            raise ParameterError("boosting", f"{k} classes need boosting='gradient' (TMVA's "
                                 "multi-class BDTG), 'newton' (softmax) or 'adaboost' (SAMME); "
                                 f"boosting={self.boosting!r} is two-class only")
        else:
            self._make_loss()
        if self.decorrelation is not None or self.decorrelation_map is not None:
            self._validate_decorrelation()
            raise ParameterError("decorrelation", f"decorrelation is for two classes; y has "
                                 f"{k} classes")
        f = self.sig_to_bkg_fraction
        if _is_finite(f) and f > 0:
            raise self._ratio_of_many_classes()

    def _make_loss(self):
        if self._multiclass:
            if self.loss not in (None, "softmax"):
                raise ParameterError("loss", f"loss {self.loss!r} is two-class; with "
                                     f"{self.classes_.size} classes the loss is 'softmax' "
                                     "(or None)")
            return Softmax(self.classes_.size, self.boosting)
        own = "logistic" if self.boosting == "newton" else "deviance"
        if self.loss == "softmax":  # the loss of three or more classes, which fit may see
            if not hasattr(self, "classes_"):
                return None  # check_params before a fit: valid
            raise ParameterError("loss", f"loss 'softmax' is the loss of three or more "
                                 f"classes; with two the loss of boosting="
                                 f"{self.boosting!r} is {own!r} (or None)")
        # loss="" is no loss name: it trained the default loss, silently
        return _get_loss(self.boosting, own if self.loss is None else self.loss, True)

    def _encode_y(self, y, fitting: bool) -> np.ndarray:
        """The labels as the boosters take them, int8 (one byte an event): 1 for signal and
        0 for background, or with more than two classes the index in ``classes_`` (at most
        MAX_CLASSES, so int8 holds it). ``fitting`` sets ``classes_`` from y first."""
        y = _labels(y)
        if fitting:
            try:
                classes = np.unique(y)
            except TypeError as err:  # labels that do not order: None among strings, str and int
                raise ValueError(f"y's class labels must be of one kind that sorts (numbers, or "
                                 f"strings); these do not: {err}") from None
            for label in classes:
                if isinstance(label, str):
                    _check_name_characters(label, "y", "class label")
            if classes.size < 2:
                raise ValueError(f"y must have at least two classes; found {classes.size} "
                                 f"class ({classes[:10].tolist()}): one class cannot be separated")
            if classes.size > MAX_CLASSES:
                numeric = np.issubdtype(classes.dtype, np.number)
                raise ValueError(f"y has {classes.size} classes; at most {MAX_CLASSES} are "
                                 "supported" + (" (is y a continuous target? use BDTRegressor)"
                                                if numeric else ": merge some classes"))
            if classes.size == 2:
                signal = self._signal_class(classes)
                self.classes_ = np.array([classes[classes != signal][0], signal],
                                         dtype=classes.dtype)
                warn_class_order(self)
            else:
                self.classes_ = classes
        bad = _not_in(y, self.classes_)
        if bad.any():
            raise ValueError(f"y has labels {np.unique(y[bad])[:5].tolist()} that are not in "
                             f"the classes {self.classes_.tolist()}")
        if self._multiclass:
            out = np.empty(y.size, dtype=LABEL_DTYPE)
            for start in range(0, y.size, ENCODE_BLOCK):  # int64 positions a block at a time
                stop = start + ENCODE_BLOCK
                out[start:stop] = np.searchsorted(self.classes_, y[start:stop])
            return out
        return (y == self.classes_[1]).view(LABEL_DTYPE)  # a fresh bool array: 0/1 as int8

    def _signal_class(self, classes: np.ndarray) -> Any:
        """The label of the signal class: ``signal_label``, else 1 (True) for numeric labels
        and "signal" for strings; anything else must be named."""
        label = self.signal_label
        if label is None:
            numeric = np.issubdtype(classes.dtype, np.number) or classes.dtype == np.bool_
            label = 1 if numeric else "signal"
            if label not in classes.tolist():
                raise ParameterError("signal_label", f"which class is signal? The labels are "
                                     f"{classes.tolist()}: give signal_label=<one of them> (by "
                                     "default 1 for numbers, 'signal' for strings)")
        elif label not in classes.tolist():
            raise ParameterError("signal_label", f"signal_label={label!r} is not one of the labels "
                                 f"{classes.tolist()}")
        return classes[classes == label][0]

    @_whole_or_unchanged
    def fit(self, X, y, sample_weight=None, eval_set=None, event=None,
            bin_edges=None, decorrelate=None) -> BDTClassifier:
        """Train on X (n, m), two-class labels y (``signal_label`` is signal; by default 1 or
        "signal") and optional event weights.

        eval_set: (X_val, y_val[, w_val]) or a list of them: the loss after each tree on each
        goes to ``evals_result_``; with ``early_stopping_rounds`` training stops when the
        last one has not improved for that many trees, and the model keeps its best trees.

        event: optional integer event numbers (n,); ``n_trees="auto"`` then holds out the
        events whose hashed number falls below ``validation_fraction`` (reproducible from the
        events alone) instead of a random draw.

        X may be a :class:`~hepbdt.binned.BinnedMatrix` (``hepbdt.read(..., binned=True)``):
        its edges are the model's bins and nothing is binned again. ``bin_edges`` (m
        increasing arrays, e.g. another model's ``bin_edges_``; a float64 edge between two
        float32 values becomes the float32 above it, which bins every float32 x as the edge
        does) bins float X with those edges instead of fitting quantiles: the model is then
        the one a BinnedMatrix of the same bins trains, bit for bit. ``max_bins`` and
        ``n_cuts`` do not apply then.

        decorrelate: with ``decorrelation`` or ``decorrelation_map`` set, the variable(s) the
        score must not depend on (e.g. a mass), float (n,) or (n, k), k <= 3, finite (one
        column for the map). The flatness loss and uBoost use them in training only; the
        map needs its variable to predict (see the class docstring). Need not be a feature.
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        self._branch_types = getattr(X, "branch_types", None)  # for _set_fitted
        X, names, definitions = self._fit_features(X, bin_edges)
        y_raw = _labels(y)
        if y_raw.size != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} events but y has {y_raw.size} labels")
        y01 = self._encode_y(y_raw, fitting=True)
        if self._multiclass:
            self._validate_params()  # the options first, then the classes: as the Dask fit
            self._check_multiclass()
        decorrelate = self._checked_decorrelate(decorrelate, X.shape[0])
        self.n_features_in_ = X.shape[1]
        self._fit(X, y01, sample_weight, eval_set, names, definitions, event, decorrelate)
        if self.decorrelation_map is not None:
            try:
                self._fit_map(X, y01, sample_weight, decorrelate[:, 0])
            except BaseException:  # no fitted model whose score would be the unmapped one
                self.__dict__.pop("forest_", None)
                raise
        return self

    def _fit_map(self, X, y01, sample_weight, m) -> None:
        """The post-fit quantile map (``decorrelation_map="ddt"``) of the target class's
        scores of every event given to fit, with their given weights."""
        w = check_weights(sample_weight, y01.size, training=True)
        mine = y01 == (1 if self.decorrelation_target == "signal" else 0)
        raw = self._raw(X)
        feature = None
        if not isinstance(X, BinnedMatrix):  # m read from X at predict time when it is a column
            # (X is float32: a float64 column given as m is the same numbers once rounded)
            feature = next((j for j in range(X.shape[1])
                            if np.array_equal(X[:, j], m.astype(X.dtype))), None)
        if feature is not None:  # the map made of the values it will read
            m = X[:, feature].astype(np.float64)
        spec = fit_quantile_map(raw[mine], m[mine], w[mine], feature)
        spec["target"] = self.decorrelation_target
        self.forest_.extra["decorrelation_map"] = spec

    def _checked_decorrelate(self, decorrelate, n: int) -> np.ndarray | None:
        """``fit``'s decorrelation variables, (n, k) float64, or None; refused when they and
        ``decorrelation`` do not come together, or with more than two classes."""
        self._validate_decorrelation()
        if self.decorrelation is None and self.decorrelation_map is None:
            if decorrelate is not None:
                raise ParameterError("decorrelation", "fit got decorrelate=..., but "
                                     "decorrelation is None; set decorrelation='flatness' "
                                     "('uboost' for the AdaBoost family) or decorrelation_map="
                                     "'ddt' (or drop decorrelate)")
            return None
        if decorrelate is None:
            what = (f"decorrelation={self.decorrelation!r}" if self.decorrelation is not None
                    else f"decorrelation_map={self.decorrelation_map!r}")
            raise ParameterError("decorrelation", f"{what} needs the variable(s) to decorrelate "
                                 "from: fit(X, y, sample_weight, decorrelate=m), m of shape (n,) "
                                 "or (n, k)")
        if self._multiclass:
            raise ParameterError("decorrelation", f"decorrelation is for two classes; y has "
                                 f"{self.classes_.size} classes")
        m = check_decorrelate(decorrelate, n)
        if self.decorrelation_map is not None and m.shape[1] != 1:
            raise ParameterError("decorrelation_map", "decorrelation_map='ddt' maps the score "
                                 f"along one variable; decorrelate has {m.shape[1]} columns")
        return m

    def _map_input(self, X, decorrelate) -> np.ndarray | None:
        """The map's variable for X's events, float64 (n,), or None for a model without a
        map; refused where it is needed and missing, or given to a model without a map."""
        spec = self.forest_.extra.get("decorrelation_map")
        if spec is None:
            if decorrelate is not None:
                raise ParameterError("decorrelation_map", "decorrelate=... is for a model "
                                     "trained with decorrelation_map='ddt'; this model's score "
                                     "does not depend on it: drop decorrelate")
            return None
        n = X.shape[0] if isinstance(X, BinnedMatrix) else len(X)
        feature = spec.get("feature")
        if decorrelate is not None:
            m = check_decorrelate(decorrelate, n)
            if m.shape[1] != 1:
                raise ParameterError("decorrelate", f"the map is along one variable; "
                                     f"decorrelate has {m.shape[1]} columns")
            if feature is not None and isinstance(X, BinnedMatrix):
                _check_same_mass_bin(self._binned_input(X), m[:, 0], feature)
            elif feature is not None:
                _check_same_mass(self._input(X)[:, feature], m[:, 0], feature)
            return m[:, 0]
        if feature is None or isinstance(X, BinnedMatrix):
            where = ("X is binned (its codes give the variable's bin, not its value)"
                     if feature is not None else "that variable is not one of its features")
            raise ParameterError("decorrelate", "this model's score is mapped in bins of its "
                                 "decorrelation variable (decorrelation_map='ddt') and "
                                 f"{where}: give it, decision_function(X, decorrelate=m) (also "
                                 "predict_proba, predict and their staged_ forms); a score "
                                 "without it would be wrong (hepbdt apply reads the features "
                                 "only: train with the variable among them)")
        m = self._input(X)[:, feature].astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(m))
        if bad.size:
            raise ValueError(f"feature {feature} (the decorrelation variable of this model's "
                             f"map) is NaN or infinite for {bad.size} of {m.size} events (the "
                             f"first at row {bad[0]}); the mapped score needs a number: score "
                             "only events where the variable is defined")
        return m

    def _mapped(self, raw: np.ndarray, m: np.ndarray | None) -> np.ndarray:
        """``raw`` through the model's quantile map (unchanged without one)."""
        if m is None:
            return raw
        return apply_quantile_map(self.forest_.extra["decorrelation_map"], raw, m)

    def decision_function(self, X, decorrelate=None) -> np.ndarray:
        """Raw ensemble score, float64 (n,); larger means more signal-like. With more than
        two classes, (n, K) raw scores, one column per class of ``classes_``. A model with
        ``decorrelation_map="ddt"`` gives the mapped score F in [0, 1]; it needs its
        decorrelation variable, read from X when it was a feature, else ``decorrelate``."""
        self._check_fitted()
        if self.forest_.n_classes > 1:
            X = self._input(X)
            with threads(self.n_jobs, X.shape[0] * max(1, self.forest_.n_trees)):
                return self.forest_.class_scores(X)
        m = self._map_input(X, decorrelate)
        return self._mapped(self._raw(X), m)

    def staged_decision_function(self, X, decorrelate=None):
        """Yield the raw score after 1, 2, ... trees (rounds of K trees with K classes);
        with a map, each stage through the final model's map."""
        self._check_fitted()
        if self.forest_.n_classes > 1:
            yield from self.forest_.staged_class_scores(self._input(X))
            return
        m = self._map_input(X, decorrelate)
        for score in self._staged_raw(X):
            yield self._mapped(score, m)

    def _link(self, score: np.ndarray) -> np.ndarray:
        kind, c = self.forest_.probability_link()
        if kind == "clip":
            return np.clip((score - c) / (1.0 - c), 0.0, 1.0)
        with np.errstate(over="ignore"):  # exp overflows to inf where the probability is 0
            return 1.0 / (1.0 + np.exp(-c * score))

    def predict_proba(self, X, decorrelate=None) -> np.ndarray:
        """(n, 2) probabilities of classes_[0] (background) and classes_[1] (signal).

        ``classes_`` is [background label, signal label]: the signal is always the second
        column and the high score, whatever the labels' sorted order. With
        ``decorrelation_map="ddt"`` the signal column is the mapped score F (the target
        class's CDF in its mass region, not a calibrated probability)."""
        self._check_fitted()
        if self.forest_.n_classes > 1:
            return softmax_rows(self.decision_function(X))
        m = self._map_input(X, decorrelate)
        raw = self._raw(X)
        p = self._link(raw) if m is None else self._mapped(raw, m)
        return np.column_stack([1.0 - p, p])

    def staged_predict_proba(self, X, decorrelate=None):
        """Yield predict_proba after 1, 2, ... trees."""
        self._check_fitted()
        if self.forest_.n_classes > 1:
            for s in self.staged_decision_function(X):
                yield softmax_rows(s)
            return
        m = self._map_input(X, decorrelate)
        for s in self._staged_raw(X):
            p = self._link(s) if m is None else self._mapped(s, m)
            yield np.column_stack([1.0 - p, p])

    def predict(self, X, decorrelate=None) -> np.ndarray:
        """Predicted class labels (signal where P(signal) > 0.5; with more than two classes,
        the most probable, the first of ``classes_`` on a tie)."""
        self._check_fitted()
        if self.forest_.n_classes > 1:
            return self.classes_[np.argmax(self.decision_function(X), axis=1)]
        return self.classes_[(self.predict_proba(X, decorrelate)[:, 1] > 0.5).astype(int)]

    def score(self, X, y, sample_weight=None) -> float:
        """Weighted accuracy."""
        y = _labels(y)
        self._check_fitted()
        bad = _not_in(y, self.classes_)
        if bad.any():  # another type of label ("1" for 1) would count as wrong: 0 accuracy
            raise ValueError(f"y has labels {np.unique(y[bad])[:5].tolist()} that are not in "
                             f"the classes {self.classes_.tolist()}")
        pred = self.predict(X)
        w = _score_weights(sample_weight, y.size, pred.size)
        return float(np.sum(w * (pred == y)) / np.sum(w))

    def _extra_state(self) -> dict[str, Any]:
        return {"classes": self.classes_.tolist()}


class BDTRegressor(_BDTBase):
    """Boosted decision tree regressor (e.g. of a resonance mass).

    Shares BDTClassifier's boosting and tree options (``gradient`` or ``newton`` boosting;
    depth-wise trees, or leaf-wise ones with ``max_leaves``); ``loss`` is ``"squared"``,
    ``"absolute"`` or ``"huber"`` (``huber_alpha``, ``huber_delta``)."""

    _estimator_type = "regressor"

    __init__ = _constructor(
        (*_shared_head(REGRESSOR_DEPTH, REGRESSOR_RATE), _Param("loss", "squared", "str"),
         _Param("huber_alpha", 0.9, "float"), _Param("huber_delta", 1.0, "float"),
         *_shared_tail(None)),
        "Set the options (see the class docstring); nothing is checked until fit.")

    def _validate_extra_params(self, require) -> None:
        # Checked whatever the loss, as they are saved with the model. huber_delta = inf
        # would be the squared loss, but pseudo-Huber's loss value is then inf * 0 = NaN:
        # loss="squared" says it.
        require(_is_finite(self.huber_alpha) and 0 < self.huber_alpha < 1, "huber_alpha",
                "a finite quantile in (0, 1)")
        require(_is_finite(self.huber_delta) and 0 < self.huber_delta <= MAX_MAGNITUDE,
                "huber_delta", f"a finite number > 0, at most {MAX_MAGNITUDE:g} (the pseudo-Huber "
                "loss squares it; for the squared loss, loss='squared')")

    def _make_loss(self):
        return _get_loss(self.boosting, self.loss, False, self.huber_alpha, self.huber_delta)

    def _encode_y(self, y, fitting: bool) -> np.ndarray:
        return check_targets(_column(y).astype(np.float64))

    @_whole_or_unchanged
    def fit(self, X, y, sample_weight=None, eval_set=None, event=None,
            bin_edges=None) -> BDTRegressor:
        """Train on X (n, m) and the target y (n,), optional event weights; ``eval_set``,
        ``event``, ``bin_edges`` and a binned X as for :meth:`BDTClassifier.fit`."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        self._branch_types = getattr(X, "branch_types", None)  # for _set_fitted
        X, names, definitions = self._fit_features(X, bin_edges)
        y = self._encode_y(y, fitting=True)
        if y.size != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} events but y has {y.size} targets")
        self.n_features_in_ = X.shape[1]
        return self._fit(X, y, sample_weight, eval_set, names, definitions, event)

    def predict(self, X) -> np.ndarray:
        """Predicted target, float64 (n,)."""
        return self._raw(X)

    def staged_predict(self, X):
        """Yield the prediction after 1, 2, ... trees."""
        yield from self._staged_raw(X)

    def score(self, X, y, sample_weight=None) -> float:
        """Weighted coefficient of determination R^2."""
        y = _column(y).astype(np.float64)
        if not np.all(np.isfinite(y)):
            raise ValueError("y has NaN or infinite values; R^2 needs a number for every event")
        pred = self.predict(X)
        w = _score_weights(sample_weight, y.size, pred.size)
        mean = np.sum(w * y) / np.sum(w)
        spread = float(np.sum(w * (y - mean) ** 2))
        if not spread > 0:
            raise ValueError("R^2 is not defined: the (weighted) y does not vary, so there is no "
                             "variance to explain; score with another metric (e.g. the mean "
                             "squared error)")
        return float(1 - np.sum(w * (y - pred) ** 2) / spread)


ESTIMATORS = {"BDTClassifier": BDTClassifier, "BDTRegressor": BDTRegressor}
_BY_TYPE = {"classifier": BDTClassifier, "regressor": BDTRegressor}


def check_round_count(n_rounds: int, what: str) -> None:
    """ModelFormatError when ``what`` has more boosting rounds than ``n_trees`` may be
    (MAX_TREES): its model file, whose ``n_trees`` says them, would not load again."""
    if n_rounds > MAX_TREES:
        raise ModelFormatError(f"{what} has {n_rounds:,} boosting rounds; a hepbdt model has at "
                               f"most {MAX_TREES:,} (n_trees' limit), so a model file of it "
                               f"could not be read again: cut it to its first {MAX_TREES:,} rounds "
                               "with the tool that wrote it, or score it there")


def from_forest(kind: str, forest: Forest, feature_names: list[str] | None,
                params: dict[str, Any] | None = None, *, classes: Any = (0, 1),
                feature_definitions: dict[str, str] | None = None, train_loss: Any = (),
                validation_loss: Any = None, best_iteration: int | None = None,
                evals_result: dict[str, Any] | None = None,
                bin_edges: list[np.ndarray] | None = None,
                n_trees_reason: str | None = None,
                min_node_size_used: float | None = None) -> BDTClassifier | BDTRegressor:
    """A fitted estimator around a forest (from a model file or another tool's format).

    kind : "classifier" or "regressor" (or the class name). ``params`` are estimator
    options; those the estimator does not have are dropped (an imported model's settings
    may have no hepbdt name). ``feature_names``: one name per forest feature, or None for a
    model fitted on unnamed columns. ``classes``: [background label, signal label], or
    the K labels of a multi-class forest in its class order.
    """
    cls = _BY_TYPE.get(kind) or ESTIMATORS.get(kind)
    if cls is None:
        raise ModelFormatError(f"estimator {kind!r} is not known; valid: {sorted(ESTIMATORS)}")
    check_round_count(forest.n_rounds, "the forest")
    valid = set(cls._param_names())
    est = cls(**{k: v for k, v in (params or {}).items() if k in valid})
    if feature_names is not None and len(feature_names) != forest.n_features:
        raise ModelFormatError(f"feature_names must list {forest.n_features} names, got "
                               f"{len(feature_names)}")
    result = BoostResult(None, 0.0, np.asarray(train_loss, float),
                         None if validation_loss is None else np.asarray(validation_loss, float),
                         best_iteration)
    names = None if feature_names is None else [str(n) for n in feature_names]
    try:
        _check_unique_names(names, "feature_names")
    except ValueError as exc:
        raise ModelFormatError(str(exc)) from None
    est._set_fitted(forest, names, dict(feature_definitions or {}), result, None)
    est.evals_result_ = dict(evals_result or {})
    if bin_edges is not None:
        est.bin_edges_ = list(bin_edges)
    est.best_iteration_ = best_iteration
    est.n_trees_reason_ = n_trees_reason
    if min_node_size_used is not None:
        est.min_node_size_ = float(min_node_size_used)
    est._set_growth()
    est.best_score_ = None
    if best_iteration is not None and est.validation_loss_ is not None:
        if 0 <= best_iteration < est.validation_loss_.size:
            est.best_score_ = float(est.validation_loss_[best_iteration])
    if cls is BDTClassifier:
        n_labels = max(2, forest.n_classes)
        if len(classes) != n_labels:
            raise ModelFormatError(f"this classifier's forest scores {n_labels} classes, but "
                                   f"'classes' lists {len(classes)} labels")
        try:
            for label in classes:
                if isinstance(label, str):
                    _check_name_characters(label, "classes", "class label")
        except ValueError as exc:
            raise ModelFormatError(str(exc)) from None
        est.classes_ = np.asarray(classes)
    elif forest.n_classes > 1:
        raise ModelFormatError("a regressor's forest has one score, not "
                               f"{forest.n_classes} classes")
    return est


def max_trees(params: dict[str, Any], n_events: int) -> int:
    """The most trees a fit with these options grows on ``n_events`` training events
    (``n_trees``, or what ``"auto"`` allows; uBoost grows one ensemble of them for each of
    its ``decorrelation_steps``)."""
    ensembles = int(params.get("decorrelation_steps", 5)) if params.get("decorrelation") == "uboost" else 1
    if params.get("n_trees", "auto") != "auto":
        return int(params["n_trees"]) * ensembles
    flat = params.get("decorrelation") == "flatness" and params.get("decorrelation_strength", 1) > 0
    if params.get("boosting") in ADABOOST_BOOSTINGS or flat:
        return AUTO_FIXED_TREES * ensembles
    small = n_events < AUTO_TREES_FROM and not params.get("early_stopping")
    return AUTO_SMALL_TREES if small else AUTO_MAX_TREES


_GRADIENT_FAMILY = ("gradient", "newton")
_ADABOOST_FAMILY = ("adaboost", "realadaboost", "eps", "bagging")
# The options that act on some boosting algorithms only (see BDTClassifier, BDTRegressor
# and the README's option table); every other option acts on all of them.
_ACTS_ON = {
    "learning_rate": _GRADIENT_FAMILY, "loss": _GRADIENT_FAMILY,
    "min_split_gain": _GRADIENT_FAMILY, "early_stopping": _GRADIENT_FAMILY,
    "validation_fraction": _GRADIENT_FAMILY, "n_iter_no_change": _GRADIENT_FAMILY,
    "tol": _GRADIENT_FAMILY, "early_stopping_rounds": _GRADIENT_FAMILY,
    "quantised_histograms": _GRADIENT_FAMILY,
    # Huber's quantile sets gradient boosting's delta each round (M-TreeBoost); newton's
    # pseudo-Huber loss takes a fixed delta instead (losses.get_loss)
    "huber_alpha": ("gradient",), "huber_delta": ("newton",),
    "reg_lambda": ("newton",), "reg_alpha": ("newton",), "min_child_weight": ("newton",),
    "criterion": _ADABOOST_FAMILY, "beta": ("adaboost",), "epsilon": ("eps",),
    "use_yes_no_leaf": ("adaboost", "eps", "bagging"),
}


# The decorrelation options act with these methods only ("ddt": decorrelation_map alone).
_DECORRELATION_ACTS_WITH = {
    "decorrelation_strength": ("flatness", "uboost"), "decorrelation_bins": ("flatness", "uboost"),
    "decorrelation_steps": ("uboost",), "decorrelation_target": ("flatness", "uboost", "ddt"),
}


def acting_options(params: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The options that act on ``params["boosting"]`` and the names of those that do not
    (huber_alpha and huber_delta act with loss="huber" only, the decorrelation options with
    the decorrelation methods of _DECORRELATION_ACTS_WITH)."""
    boosting = params.get("boosting")
    if boosting is None:
        return dict(params), []
    acting, idle = {}, []
    method = params.get("decorrelation") or ("ddt" if params.get("decorrelation_map") else None)
    for name, value in params.items():
        acts = boosting in _ACTS_ON.get(name, (boosting,))
        if name.startswith("huber_") and params.get("loss") != "huber":
            acts = False
        if name in _DECORRELATION_ACTS_WITH and method not in _DECORRELATION_ACTS_WITH[name]:
            acts = False
        if acts:
            acting[name] = value
        else:
            idle.append(name)
    return acting, sorted(idle)


_STOPPING_OPTIONS = ["n_iter_no_change", "tol", "validation_fraction"]


def idle_stopping_options(params: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The early-stopping options that a fit without an eval_set (a configuration's) does
    not use, as (why, names) pairs: none watches a loss with an integer ``n_trees`` and
    no ``early_stopping``, nor the flatness loss's fixed count under ``n_trees="auto"``
    (as ``_tree_plan``), and ``early_stopping_rounds`` is the patience in place of
    ``n_iter_no_change``. The AdaBoost family's are left to :func:`acting_options`."""
    if params.get("boosting") in ADABOOST_BOOSTINGS:
        return []
    n_trees, rounds = params.get("n_trees", "auto"), params.get("early_stopping_rounds")
    flat = (params.get("decorrelation") == "flatness"
            and params.get("decorrelation_strength", 1.0) > 0)
    if n_trees != "auto" and not params.get("early_stopping"):
        return [(f"n_trees={n_trees!r} and early_stopping=False (every tree is kept; set "
                 "early_stopping = true to stop on held-out events)", _STOPPING_OPTIONS)]
    if n_trees == "auto" and flat:
        return [(f"n_trees='auto' and decorrelation='flatness' (which grows {AUTO_FIXED_TREES} "
                 "trees, watching no loss)", _STOPPING_OPTIONS)]
    if rounds is not None:
        return [(f"early_stopping_rounds={rounds!r}, the patience in its place",
                 ["n_iter_no_change"])]
    return []


class IdleOptionWarning(UserWarning):
    """An option given explicitly that does nothing with the chosen ``boosting``."""


def growth_text(params: dict[str, Any], classifier: bool = True) -> str:
    """How an estimator's trees grow, in words: "depth 3", "64 leaves" or "64 leaves, depth <= 6"."""
    depth, leaves, _ = resolved_growth(params, classifier)
    if leaves is None:
        return f"depth {depth}"
    return f"{leaves} leaves" + ("" if depth is None else f", depth <= {depth}")


def tree_unit(model: Any) -> str:
    """What a fitted model's ``n_trees_`` counts: "trees", "rounds of K trees" for a
    multi-class model that grows one tree a class (SAMME's K-class trees are trees), or
    the trees of each of a uBoost model's efficiency steps."""
    forest = getattr(model, "forest_", None)
    if forest is not None and forest.aggregation == "uboost":
        steps = forest.extra["uboost"]["step_trees"]
        if min(steps) == max(steps):
            return f"trees a step, {len(steps)} uBoost efficiency steps ({sum(steps)} trees)"
        return (f"trees in the largest of {len(steps)} uBoost efficiency steps "
                f"({min(steps)}-{max(steps)} a step, {sum(steps)} trees)")
    k = 1 if forest is None else forest.trees_per_round
    return "trees" if k == 1 else f"rounds of {k} trees"


def effective_depth(params: dict[str, Any], classifier: bool = True) -> float:
    """The depth whose level-by-level cost a tree of these options has, about: ``max_depth``,
    or for leaf-wise trees log2(max_leaves) x 1.6 (lopsided trees partition more events:
    64 leaves cost as much as depth 9.6, measured), at most ``max_depth``."""
    depth, leaves, _ = resolved_growth(params, classifier)
    if leaves is None:
        return float(depth)
    grown = 1.6 * math.log2(leaves)
    return grown if depth is None else min(float(depth), grown)


def warmup() -> None:
    """Compile (or load from the cache) every engine kernel, by fitting tiny models once."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    w = np.ones(64)
    w[::16] = -0.5  # the default negative-weight policy's regressors
    for boosting in ("gradient", "newton", "adaboost"):
        BDTClassifier(boosting=boosting, n_trees=2, max_depth=2).fit(X, y, w).decision_function(X)
        # per-node feature draws: the per-level kernels, not the one-call small-tree grower
        BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, colsample_bynode=0.9).fit(X, y, w)
        BDTClassifier(boosting=boosting, n_trees=2, max_leaves=3, max_depth=None).fit(X, y, w)
        if boosting != "adaboost":  # a subsample: one-call trees, one at a time (not a round)
            BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, subsample=0.5).fit(X, y, w)
            # the packed-histogram path, with a validation set
            BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, quantised_histograms=True).fit(
                X, y, eval_set=(X, y)).decision_function(X)
            BDTClassifier(boosting=boosting, n_trees=2, max_leaves=3, max_depth=None,
                          quantised_histograms=True).fit(X, y)  # the compiled packed splits
    for boosting in ("newton", "adaboost"):  # softmax, and SAMME's class-Gini splits
        BDTClassifier(boosting=boosting, n_trees=2, max_depth=2).fit(
            X, np.arange(64) % 3).predict_proba(X)
    # softmax's channels outside the rounds (a subsample)
    BDTClassifier(boosting="newton", n_trees=2, max_depth=2, subsample=0.5).fit(X, np.arange(64) % 3)
    for policy in ("pair", "keep"):  # pair's neighbours; kept signed weights' node sums
        BDTClassifier(n_trees=2, max_depth=2, negative_weights=policy).fit(X, y, w)
    for boosting in ("gradient", "newton"):  # the flatness loss, on both histogram kinds
        BDTClassifier(boosting=boosting, n_trees=2, max_depth=2, decorrelation="flatness",
                      decorrelation_bins=3,
                      quantised_histograms=boosting == "newton").fit(X, y, decorrelate=X[:, 1])
    BDTRegressor(n_trees=2, max_depth=2).fit(X, X[:, 0]).predict(X)
    BDTRegressor(n_trees=2, max_depth=2, subsample=0.5).fit(X, X[:, 0])  # channels outside rounds
    deep = BDTRegressor(n_trees=2, max_depth=5, min_child_weight=0.0).fit(X, X[:, 0] * X[:, 1])
    deep.predict(X)  # the dense kernel's 32-bit leaf masks (trees deeper than 3)
    # a chain of splits deeper than the dense kernel's levels: the node-by-node walk
    chain = np.sort(X[:, 0])
    BDTRegressor(n_trees=1, max_depth=20, min_child_weight=0.0, min_node_size=0.0,
                 learning_rate=1.0).fit(chain[:, None], 2.0 ** np.arange(64)).predict(chain[:, None])
    # a fit above ORDERED_SUMS_FROM events: each event's leaf and the leaf sums in event order
    big = rng.normal(size=(70_000, 2)).astype(np.float32)
    BDTClassifier(n_trees=2, max_depth=2).fit(big, (big[:, 0] > 0).astype(int))


def __getattr__(name: str) -> Any:
    # old names only: imported when one is used
    from ._lazy import moved

    return moved(__name__, name, {"estimator_from_dict": "hepbdt.persistence"})
