"""Learning curves: training and test loss (and ROC AUC) against the number of trees.

Scores after 1, 2, ... trees come from the model's ``staged_decision_function`` (or
``staged_predict``); the losses are weighted means over events. A classifier's training
events are weighed to the test sample's class mix first (training weights are usually
normalised per class, test weights physical, and a log loss depends on the class mix). The
early-stopping point is the model's ``best_iteration_``. Drawing is in
:func:`hepbdt.plotting.plot_learning_curve`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from hepbdt._sklearn import fitted_params
from hepbdt._util import is_classifier, weight_exponent
from hepbdt.evaluation._data import (
    check_binned_scorer,
    check_classification,
    check_labels,
    class_codes,
    in_class_units,
    unpack_dataset,
)
from hepbdt.evaluation.metrics import roc_auc
from hepbdt.evaluation.multiclass import _class_indices, _class_mix_factors

__all__ = [
    "LearningCurve",
    "absolute_error",
    "binomial_deviance",
    "learning_curve",
    "log_loss",
    "multiclass_log_loss",
    "squared_error",
]

LossFunction = Callable[[np.ndarray, np.ndarray, np.ndarray], float]


def _weighted_mean(values: np.ndarray, w: np.ndarray) -> float:
    """``sum(w values) / sum(w)``, with w in units of an exact power of two (no overflow);
    refused when the summed weight is not positive."""
    w = np.ldexp(np.asarray(w, dtype=np.float64), -weight_exponent(np.asarray(w)))
    total = float(np.sum(w))
    if not total > 0:
        raise ValueError(f"a weighted mean loss needs a positive summed weight, got {total!r} "
                         "(in units of the largest |weight|)")
    return float(np.sum(w * values) / total)


def binomial_deviance(y: np.ndarray, score: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean logistic loss ``log(1 + exp(-(2y - 1) score))`` of raw scores."""
    margin = np.where(np.asarray(y) > 0.5, 1.0, -1.0) * score
    return _weighted_mean(np.logaddexp(0.0, -margin), w)


def log_loss(y: np.ndarray, proba: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean log loss ``-(y ln p + (1 - y) ln(1 - p))`` of signal probabilities."""
    p = np.clip(proba, 1e-15, 1.0 - 1e-15)
    pointwise = -np.where(np.asarray(y) > 0.5, np.log(p), np.log1p(-p))
    return _weighted_mean(pointwise, w)


def squared_error(y: np.ndarray, score: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean squared error."""
    return _weighted_mean((score - y) ** 2, w)


def absolute_error(y: np.ndarray, score: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean absolute error."""
    return _weighted_mean(np.abs(score - y), w)


@dataclass(frozen=True)
class LearningCurve:
    """Losses (and AUCs for classifiers) after ``n_trees[k]`` trees.

    ``best_n_trees`` is the number of trees at the early-stopping point, where the model
    ends at its best iteration after evaluating rounds beyond it (None without early
    stopping, also where an ``eval_set`` was watched but every tree kept, or where the
    fit's last tree was its best: it ran to ``n_trees`` and did not stop early).
    ``recorded_train_loss`` / ``recorded_validation_loss`` are the model's own
    per-iteration losses (``train_loss_``, ``validation_loss_``) when present.
    ``train_class_factors``: (K,) the factors the training weights of each class (class
    index; background 0, signal 1 for two classes) were multiplied by to give the training
    sample the test sample's class mix before its loss and AUC were computed; None when
    the weights were taken as given (a regressor, or ``match_class_mix=False``).
    ``unit`` is what ``n_trees`` counts: "trees", or "rounds of K trees" for a multi-class
    model that grows one tree a class each round. ``before_map``: the losses and AUCs are
    of the trees' own scores, before the model's ``decorrelation_map`` (which is made for
    the final model's scores, and whose mapped F is no probability).
    """

    n_trees: np.ndarray
    train_loss: np.ndarray
    test_loss: np.ndarray
    train_auc: np.ndarray | None
    test_auc: np.ndarray | None
    best_n_trees: int | None
    loss_name: str
    recorded_train_loss: np.ndarray | None = None
    recorded_validation_loss: np.ndarray | None = None
    train_class_factors: np.ndarray | None = None
    unit: str = "trees"
    before_map: bool = False


def _weights_at_mix(labels_tr: np.ndarray, w_tr: np.ndarray, labels_te: np.ndarray,
                    w_te: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The training weights rescaled class by class to the test sample's class mix (as
    :func:`~hepbdt.evaluation.multiclass.class_mix_weights`) and the (K,) factors; labels
    are class indices 0..K-1, weights checked float64."""
    factors = _class_mix_factors(labels_tr, w_tr, labels_te, w_te)
    return w_tr * factors[labels_tr], factors


def _staged(model: Any, X: np.ndarray, names: tuple[str, ...]) -> Iterator[np.ndarray]:
    for name in names:
        method = getattr(model, name, None)
        if method is not None:
            return iter(method(X))
    raise TypeError(f"{type(model).__name__} has none of the methods {', '.join(names)}")


def _has_map(model: Any) -> bool:
    """Whether the model maps its score after the fit (``decorrelation_map``)."""
    extra = getattr(getattr(model, "forest_", None), "extra", None) or {}
    return "decorrelation_map" in extra


def _staged_proba(model: Any, X: np.ndarray) -> Iterator[np.ndarray]:
    for proba in model.staged_predict_proba(X):
        yield np.asarray(proba)[:, 1]


_RAW_NAMES = ("staged_decision_function", "staged_predict")


def _stages(model: Any, X_tr: np.ndarray, X_te: np.ndarray, proba: bool
            ) -> Iterator[tuple[np.ndarray, ...]]:
    """(raw train, raw test[, probability train, probability test]) after each tree.

    A hepbdt estimator's probability is its link of the raw score (``_link``, what its
    ``staged_predict_proba`` applies), so one staged pass over each sample gives both: the
    link is applied by the caller at the stages it evaluates. Other models need a second
    pass for the probabilities."""
    if _has_map(model):  # the trees' own scores: the map is the final model's, not a stage's
        raw = zip(model._staged_raw(X_tr), model._staged_raw(X_te), strict=False)
    else:
        raw = zip(_staged(model, X_tr, _RAW_NAMES), _staged(model, X_te, _RAW_NAMES),
                  strict=False)
    if not proba or callable(getattr(model, "_link", None)):
        return raw
    return (r + p for r, p in zip(raw, zip(_staged_proba(model, X_tr),
                                           _staged_proba(model, X_te), strict=False),
                                  strict=False))


def _one_score(stage: Any, n: int) -> np.ndarray:
    """A stage's (n,) float64 scores: scikit-learn's binary ``staged_decision_function``
    gives (n, 1), which made the staged AUC fail inside numpy; more columns are refused."""
    scores = np.asarray(stage, dtype=np.float64)
    if scores.shape not in ((n,), (n, 1)):
        raise ValueError(f"a stage of the model gave scores of shape {scores.shape}; the "
                         f"learning curve takes one score an event, ({n},) or ({n}, 1)")
    return scores.reshape(n)


def _probability_link(model: Any) -> Callable[[np.ndarray], np.ndarray] | None:
    """What turns the model's staged raw score into its probability: the estimator's link
    (a ``decorrelation_map`` model's too: its curve is of the trees before the map)."""
    return getattr(model, "_link", None)


class _StagedAuc:
    """The weighted ROC AUC of :func:`hepbdt.evaluation.roc_auc` for one sample's scores
    after successive trees.

    Each stage's scores are sorted starting from the previous stage's order: one tree
    changes the order little, and a stable sort of nearly sorted runs is about twice as
    fast as sorting afresh (the sort is most of an AUC's cost)."""

    def __init__(self, y: np.ndarray, w: np.ndarray) -> None:
        is_signal, _, w = check_classification(y, np.zeros(len(y)), w)
        self.is_signal, self.w = is_signal, w
        # Each class in units of an exact power of two, as roc_auc: no overflow at 1e200.
        units = in_class_units(is_signal, w)
        self.w_signal = np.where(is_signal, units, 0.0)
        self.w_background = np.where(is_signal, 0.0, units)
        self.total_signal = float(self.w_signal.sum())
        self.total_background = float(self.w_background.sum())
        self.order = np.arange(len(y))

    def __call__(self, score: np.ndarray) -> float:
        """The AUC of ``score``; refused as by roc_auc when a class has no positive weight."""
        if not (self.total_signal > 0 and self.total_background > 0):
            return roc_auc(self.is_signal, score, self.w)  # raises, naming the class
        self.order = self.order[np.argsort(-score[self.order], kind="stable")]
        ordered = score[self.order]
        last_of_group = np.flatnonzero(np.r_[ordered[1:] != ordered[:-1], True])
        cum_signal = np.cumsum(self.w_signal[self.order])[last_of_group]
        cum_background = np.cumsum(self.w_background[self.order])[last_of_group]
        group_signal = np.diff(cum_signal, prepend=0.0)
        group_background = np.diff(cum_background, prepend=0.0)
        numerator = (np.sum(group_signal * (self.total_background - cum_background))
                     + 0.5 * np.sum(group_signal * group_background))
        return float(numerator / (self.total_signal * self.total_background))


def multiclass_log_loss(y: np.ndarray, proba: np.ndarray, w: np.ndarray) -> float:
    """Weighted mean multi-class log loss ``-ln p_y`` of (n, K) probabilities, y the class
    index (column) of each event; p_y is clipped at 1e-15 (-ln p at most 34.5 an event:
    scikit-learn's ``log_loss`` clips at the float64 epsilon, 36.0)."""
    labels = np.asarray(y)
    k = proba.shape[1]
    if labels.size and (labels.dtype.kind not in "biuf" or not np.all(
            (labels == np.round(labels)) & (labels >= 0) & (labels < k))):
        raise ValueError(f"y must be class indices 0..{k - 1} (the columns of the "
                         f"probabilities), got values {np.unique(labels)[:5].tolist()}")
    p = np.clip(proba[np.arange(len(y)), labels.astype(np.int64)], 1e-15, 1.0)
    return _weighted_mean(-np.log(p), w)


def _multiclass_curve(model: Any, train: tuple[np.ndarray, ...], test: tuple[np.ndarray, ...],
                      max_points: int, match_class_mix: bool) -> LearningCurve:
    """The multi-class log loss of ``staged_predict_proba`` after each round of K trees
    (labels: class indices, the columns of ``predict_proba``); no AUC. With
    ``match_class_mix`` the training weights are first weighed to the test's class mix."""
    factors = None
    if match_class_mix:
        labels_tr = _class_indices(train[1], "train.y")
        w_mix, factors = _weights_at_mix(labels_tr, train[2], _class_indices(test[1], "test.y"),
                                         test[2])
        train = (train[0], labels_tr, w_mix)
    step = _stage_step(model, max_points)
    stages: list[int] = []
    losses: tuple[list[float], list[float]] = ([], [])
    last = None
    staged = zip(model.staged_predict_proba(train[0]), model.staged_predict_proba(test[0]),
                 strict=False)
    for k, probas in enumerate(staged, start=1):
        last = (k, probas)
        if k == 1 or k % step == 0:
            stages.append(k)
            for out, (_, y, w), p in zip(losses, (train, test), probas, strict=True):
                out.append(multiclass_log_loss(y, np.asarray(p), w))
    if last is not None and (not stages or stages[-1] != last[0]):
        stages.append(last[0])
        for out, (_, y, w), p in zip(losses, (train, test), last[1], strict=True):
            out.append(multiclass_log_loss(y, np.asarray(p), w))
    return LearningCurve(
        n_trees=np.asarray(stages, dtype=np.int64), train_loss=np.asarray(losses[0]),
        test_loss=np.asarray(losses[1]), train_auc=None, test_auc=None,
        loss_name="multi-class log loss", train_class_factors=factors, unit=_unit(model),
        **_recorded(model),
    )


def _check_loss_weights(w: np.ndarray, name: str) -> None:
    """A weighted mean loss needs a positive summed weight."""
    if not float(np.sum(w)) > 0:
        raise ValueError(f"{name}: the summed weight is {float(np.sum(w))!r}; a weighted mean "
                         f"loss needs events with a positive summed weight")


def _stage_step(model: Any, max_points: int) -> int:
    """Evaluate every step-th stage: about ``max_points`` stages of the model's trees."""
    n_total = getattr(model, "n_trees_", None)
    return 1 if not n_total else max(1, int(np.ceil(int(n_total) / max_points)))


def _at_stages(stages: Iterator[tuple[np.ndarray, ...]], step: int,
               evaluate: Callable[[int, tuple[np.ndarray, ...]], None]) -> None:
    """Call ``evaluate(k, stage)`` at stage 1, every step-th stage and the last."""
    pending = None
    for k, stage in enumerate(stages, start=1):
        if k == 1 or k % step == 0:
            evaluate(k, stage)
            pending = None
        else:
            pending = (k, stage)
    if pending is not None:
        evaluate(*pending)


def _unit(model: Any) -> str:
    """What the curve's stages count (:func:`hepbdt.estimators.tree_unit`)."""
    from hepbdt.estimators import tree_unit  # a fitted model's own module: already imported

    return tree_unit(model)


def _recorded(model: Any) -> dict[str, Any]:
    """The model's early-stopping point (trees) and its own per-iteration losses."""
    best = getattr(model, "best_iteration_", None)
    forest = getattr(model, "forest_", None)
    recorded_train = getattr(model, "train_loss_", None)
    recorded_valid = getattr(model, "validation_loss_", None)
    if best is not None and forest is not None and forest.n_rounds != int(best) + 1:
        best = None  # an eval_set watched, the model not cut at its best: no early stop
    if best is not None and recorded_valid is not None and len(recorded_valid) <= int(best) + 1:
        best = None  # no round evaluated beyond the best: the fit ran to n_trees, not stopped
    return {
        "best_n_trees": None if best is None else int(best) + 1,
        "recorded_train_loss": None if recorded_train is None else np.asarray(recorded_train),
        "recorded_validation_loss": None if recorded_valid is None else np.asarray(
            recorded_valid),
    }


def _curve_inputs(model: Any, classifier: bool, train: Any, test: Any, max_points: int,
                  max_event_stages: int | None
                  ) -> tuple[tuple[Any, np.ndarray, np.ndarray],
                             tuple[Any, np.ndarray, np.ndarray], int]:
    """Checked (X, y, w) of both samples (a classifier's y as columns of its
    probabilities) and the number of stages to evaluate at most."""
    X_tr, y_tr, w_tr, _ = unpack_dataset(train, "train")
    X_te, y_te, w_te, _ = unpack_dataset(test, "test")
    check_binned_scorer(model, X_tr)
    check_binned_scorer(model, X_te)
    if isinstance(max_points, bool) or not (np.isscalar(max_points) and max_points >= 1):
        raise ValueError(f"max_points must be an integer >= 1, got {max_points!r}")
    _check_loss_weights(w_tr, "train.w")
    _check_loss_weights(w_te, "test.w")
    if classifier:
        y_tr, y_te = class_codes(model, y_tr), class_codes(model, y_te)
    if max_event_stages is not None:
        largest = max(len(y_tr), len(y_te), 1)
        max_points = min(max_points, max(MIN_CURVE_POINTS, int(max_event_stages) // largest))
    return (X_tr, y_tr, w_tr), (X_te, y_te, w_te), max_points


def _default_loss(model: Any, classifier: bool) -> tuple[str, LossFunction]:
    if classifier:
        if hasattr(model, "staged_predict_proba"):
            return "log loss", log_loss
        return "binomial deviance", binomial_deviance
    if str(fitted_params(model).get("loss", "squared")).startswith("absolute"):
        return "absolute error", absolute_error
    return "squared error", squared_error


MIN_CURVE_POINTS = 20  # stages a learning curve evaluates at least (max_event_stages)


def learning_curve(
    model: Any,
    train: Any,
    test: Any,
    loss: LossFunction | None = None,
    max_points: int = 200,
    max_event_stages: int | None = None,
    match_class_mix: bool = True,
) -> LearningCurve:
    """Training and test loss (and weighted ROC AUC) against the number of trees.

    Parameters
    ----------
    model : fitted BDTClassifier / BDTRegressor
    train, test : Dataset-like (``X``, ``y``, ``w``) or ``(X, y[, w])`` tuples; a
        classifier's y: the labels of ``model.classes_`` (as given to ``fit``), else class
        indices (two classes: 1 for signal, 0 for background)
    loss : ``loss(y, score, w) -> float`` of the raw staged scores; default for
        classifiers the log loss of ``staged_predict_proba`` (the binomial deviance of the
        raw score if the model has no probabilities), for regressors the squared (or
        absolute, per ``model.loss``) error
    max_points : evaluate at most about this many stages, evenly spaced (the last always)
    max_event_stages : fewer stages on large samples, so that stages x events (each stage
        sorts every event for its AUC) stays below this (at least MIN_CURVE_POINTS stages);
        the values at the stages evaluated are the same
    match_class_mix : for a classifier, weigh the training events to the test sample's
        class mix before their loss and AUC are computed: each class's training weights
        multiplied by one factor (:func:`~hepbdt.evaluation.multiclass.class_mix_weights`;
        the factors are ``train_class_factors`` of the result). Training weights are usually
        normalised per class (``norm``) and test weights physical; a log loss depends on
        the class mix, so without this the gap between the curves mixes overtraining with
        the difference of the mixes. False: the weights as given. Regressors: no effect.
    """
    classifier = is_classifier(model)
    (X_tr, y_tr, w_tr), (X_te, y_te, w_te), max_points = _curve_inputs(
        model, classifier, train, test, max_points, max_event_stages)
    loss_name, default = _default_loss(model, classifier)
    loss_fn = loss if loss is not None else default
    if loss is not None:
        loss_name = getattr(loss, "__name__", "loss")
    if loss is None and classifier and np.size(getattr(model, "classes_", ())) > 2:
        return _multiclass_curve(model, (X_tr, y_tr, w_tr), (X_te, y_te, w_te), max_points,
                                 match_class_mix)
    factors = None
    if classifier and match_class_mix:
        w_tr, factors = _weights_at_mix(check_labels(y_tr, "train.y").astype(np.int64), w_tr,
                                        check_labels(y_te, "test.y").astype(np.int64), w_te)
    y_tr, y_te = y_tr.astype(np.float64), y_te.astype(np.float64)
    step = _stage_step(model, max_points)
    link = _probability_link(model) if loss_fn is log_loss else None
    aucs = (_StagedAuc(y_tr, w_tr), _StagedAuc(y_te, w_te)) if classifier else None
    stages, tr_loss, te_loss, tr_auc, te_auc = [], [], [], [], []

    def evaluate(k: int, stage: tuple[np.ndarray, ...]) -> None:
        raw_tr, raw_te = (_one_score(a, y.size) for a, y in zip(stage[:2], (y_tr, y_te),
                                                                   strict=True))
        if len(stage) == 4:
            loss_tr, loss_te = (np.asarray(a, dtype=np.float64) for a in stage[2:])
        elif link is not None:
            loss_tr, loss_te = link(raw_tr), link(raw_te)
        else:
            loss_tr, loss_te = raw_tr, raw_te
        stages.append(k)
        tr_loss.append(loss_fn(y_tr, loss_tr, w_tr))
        te_loss.append(loss_fn(y_te, loss_te, w_te))
        if aucs is not None:
            tr_auc.append(aucs[0](raw_tr))
            te_auc.append(aucs[1](raw_te))

    _at_stages(_stages(model, X_tr, X_te, loss_fn is log_loss), step, evaluate)

    return LearningCurve(
        n_trees=np.asarray(stages, dtype=np.int64),
        train_loss=np.asarray(tr_loss),
        test_loss=np.asarray(te_loss),
        train_auc=np.asarray(tr_auc) if classifier else None,
        test_auc=np.asarray(te_auc) if classifier else None,
        loss_name=loss_name,
        train_class_factors=factors,
        unit=_unit(model),
        before_map=_has_map(model),
        **_recorded(model),
    )
