"""Multi-class evaluation: one-against-rest ROC and AUC, the weighted confusion matrix, the
overtraining check and the permutation ranking of each class.

Labels are class indices 0..K-1 and scores are (n, K) class probabilities (a column per
class, as ``predict_proba`` gives them). Class k against the rest is the two-class problem
"label == k" scored by column k, so every per-class number is the binary one of
:mod:`hepbdt.evaluation.metrics` and :mod:`hepbdt.evaluation.overtraining` on that
problem: the same weighted Mann-Whitney AUC, the same weighted KS and chi2 tests. The
confusion matrix predicts the most probable class (the first on a tie, as ``argmax``).
Training against test (the overtraining check, a training AUC beside the test AUC) is
compared at one class mix: :func:`class_mix_weights` rescales the training weights class
by class to the test sample's mix, since "the rest" mixes the other classes and neither its
score distribution nor a one-against-rest AUC is invariant to per-class weight factors.
Drawing is in :mod:`hepbdt.plotting`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hepbdt.evaluation._data import (
    check_weights,
    class_codes,
    labels_in_model_order,
    real_array,
    weight_exponent,
)
from hepbdt.evaluation.metrics import roc_auc, roc_curve
from hepbdt.evaluation.overtraining import (
    _SEVERITY,
    PVALUE_FAIL,
    PVALUE_WARN,
    OvertrainingResult,
    combined_over_folds,
    overtraining_test,
)
from hepbdt.evaluation.ranking import (
    PermutationImportance,
    check_repeats,
    permutation_feature_names,
    shuffleable_copy,
)

__all__ = [
    "ConfusionMatrix",
    "MulticlassOvertraining",
    "check_multiclass",
    "class_mix_weights",
    "confusion_matrix",
    "multiclass_combined_over_folds",
    "multiclass_overtraining_test",
    "one_vs_rest_auc",
    "one_vs_rest_roc",
    "per_class_permutation_importance",
]


def check_multiclass(y: Any, proba: Any, sample_weight: Any = None, name: str = "proba"
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validate (labels, (n, K) probabilities, weights); return (int64 y, float64 proba, w).

    Labels must be integers in 0..K-1 with K the number of columns, K >= 2."""
    try:
        p = np.ascontiguousarray(real_array(proba, name).astype(np.float64, copy=False))
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be numbers, an (n, K) array of class probabilities; "
                         f"{exc}") from exc
    if p.ndim != 2 or p.shape[1] < 2:
        raise ValueError(f"{name} must be (n, K) with K >= 2 classes, got shape {p.shape}")
    labels = real_array(y, "y")
    if labels.shape != (p.shape[0],):
        raise ValueError(f"y must have shape ({p.shape[0]},) like {name}, got {labels.shape}")
    if labels.dtype.kind not in "biuf":
        raise ValueError(f"y must hold class indices 0..{p.shape[1] - 1} (a column of {name} "
                         f"each), got {labels.dtype} values such as {labels[:3].tolist()}")
    if labels.size and (not np.all(labels == np.round(labels)) or labels.min() < 0
                        or labels.max() >= p.shape[1]):
        raise ValueError(f"y must hold class indices 0..{p.shape[1] - 1} (a column of {name} "
                         f"each), got values {np.unique(labels)[:5]}")
    if np.isnan(p).any():
        raise ValueError(f"{name} contains NaN")
    return labels.astype(np.int64), p, check_weights(sample_weight, p.shape[0])


def one_vs_rest_auc(y: Any, proba: Any, sample_weight: Any = None) -> np.ndarray:
    """(K,) weighted ROC AUC of each class against the rest: class k's events as signal,
    every other event as background, scored by column k (:func:`roc_auc`).

    Equals scikit-learn's ``roc_auc_score(y, proba, multi_class="ovr", average=None,
    sample_weight=w)`` (where that exists: positive weights)."""
    labels, p, w = check_multiclass(y, proba, sample_weight)
    return np.array([_one_vs_rest(roc_auc, labels, p, w, k) for k in range(p.shape[1])])


def _one_vs_rest(metric: Any, labels: np.ndarray, p: np.ndarray, w: np.ndarray, k: int) -> Any:
    """``metric(labels == k, p[:, k], w)``, its error naming class k."""
    try:
        return metric(labels == k, p[:, k], w)
    except ValueError as exc:
        raise ValueError(f"class {k} against the rest: {exc}") from exc


def one_vs_rest_roc(y: Any, proba: Any, sample_weight: Any = None
                    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """For each class k, :func:`roc_curve` of class k against the rest by column k:
    (efficiency of class k, efficiency of the other classes, thresholds)."""
    labels, p, w = check_multiclass(y, proba, sample_weight)
    return [_one_vs_rest(roc_curve, labels, p, w, k) for k in range(p.shape[1])]


@dataclass(frozen=True)
class ConfusionMatrix:
    """Events of true class i (row) predicted as class j (column): ``weights`` the summed
    event weights, ``counts`` the events of non-zero weight (an event of weight 0 is no
    event, as in the significance scan's MC counts), both (K, K)."""

    classes: list[str]
    weights: np.ndarray
    counts: np.ndarray

    def fractions(self) -> np.ndarray:
        """Each row divided by its total weight: the fraction of class i's weight predicted
        as class j (rows sum to 1; NaN for a class of zero total weight)."""
        totals = self.weights.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(totals != 0, self.weights / totals, np.nan)

    @property
    def accuracy(self) -> float:
        """The weighted fraction of events predicted as their own class."""
        total = float(self.weights.sum())
        return float(np.trace(self.weights) / total) if total != 0 else float("nan")


def confusion_matrix(y: Any, proba: Any, sample_weight: Any = None,
                     classes: Sequence[Any] | None = None) -> ConfusionMatrix:
    """The weighted confusion matrix of the most probable class (``argmax`` of each row of
    ``proba``, the first on a tie) against the true class.

    Equals scikit-learn's ``confusion_matrix(y, argmax, labels=range(K),
    sample_weight=w)``. ``classes``: the K names (default "0", "1", ...)."""
    labels, p, w = check_multiclass(y, proba, sample_weight)
    k = p.shape[1]
    predicted = np.argmax(p, axis=1)
    cell = labels * k + predicted
    weights = np.bincount(cell, weights=w, minlength=k * k).reshape(k, k)
    counts = np.bincount(cell[w != 0], minlength=k * k).reshape(k, k).astype(np.int64)
    if not (np.all(np.isfinite(weights)) and np.isfinite(np.abs(weights).sum())):
        raise ValueError(f"the confusion matrix's weighted sums overflow float64 (weights up "
                         f"to {np.abs(w).max():.3g}); divide sample_weight by their "
                         f"largest: the fractions and the accuracy do not change")
    return ConfusionMatrix(_class_names(classes, k), weights, counts)


def _class_names(classes: Sequence[Any] | None, k: int) -> list[str]:
    """The K class names as str ("0", "1", ... by default); refused unless one a column."""
    names = [str(c) for c in classes] if classes is not None else [str(i) for i in range(k)]
    if len(names) != k:
        raise ValueError(f"{len(names)} class names for {k} columns of proba: classes must "
                         f"name each of the {k} classes, in column order")
    return names


def class_mix_weights(y: Any, w: Any, reference_y: Any, reference_w: Any) -> np.ndarray:
    """``w`` rescaled class by class so that the classes make up the same fractions of its
    total weight as they do of the reference sample's, its total kept (float64, (n,)).

    An event of class k gets ``w * (R_k / R) / (W_k / W)``, with ``W_k``, ``R_k`` the summed
    weights of class k in the sample and in the reference and ``W``, ``R`` their sums over
    the classes whose summed weight is positive in both samples; the events of any other
    class (absent from one sample, or of non-positive net weight) keep their weights.
    ``y``, ``reference_y``: class indices 0..K-1.
    """
    labels, ref_labels = _class_indices(y, "y"), _class_indices(reference_y, "reference_y")
    weights = check_weights(w, labels.size, "w")
    ref_weights = check_weights(reference_w, ref_labels.size, "reference_w")
    return weights * _class_mix_factors(labels, weights, ref_labels, ref_weights)[labels]


def _class_mix_factors(labels: np.ndarray, weights: np.ndarray, ref_labels: np.ndarray,
                       ref_weights: np.ndarray, k: int | None = None) -> np.ndarray:
    """(K,) the per-class factors of :func:`class_mix_weights` (checked int64 labels below
    k, float64 weights); K: ``k``, else the largest label of either sample plus one."""
    if k is None:
        k = int(max(labels.max(initial=-1), ref_labels.max(initial=-1))) + 1
    # each sample over a power of two of its own (exact; the factors are ratios within a
    # sample): fifty weights of 1e307 summed to inf and every factor of that sample was NaN
    sums = np.bincount(labels, weights=np.ldexp(weights, -weight_exponent(weights)),
                       minlength=k)
    ref_sums = np.bincount(ref_labels, minlength=k,
                           weights=np.ldexp(ref_weights, -weight_exponent(ref_weights)))
    both = (sums > 0) & (ref_sums > 0)
    factors = np.ones(k)
    if both.any():
        factors[both] = (ref_sums[both] / ref_sums[both].sum()) / (sums[both] / sums[both].sum())
    return factors


def _class_indices(y: Any, name: str) -> np.ndarray:
    """Class indices (non-negative integers, any integer-valued dtype) as int64 (n,)."""
    labels = real_array(y, name)
    if labels.ndim != 1 or labels.dtype.kind not in "biuf" or (labels.size and (
            not np.all(np.isfinite(labels) & (labels == np.round(labels)))
            or labels.min() < 0)):
        seen = np.unique(labels)[:5].tolist() if labels.dtype.kind in "biuf" else []
        raise ValueError(f"{name} must be a 1-d array of class indices 0..K-1 (finite, "
                         f"non-negative integers), got {labels.dtype} of shape {labels.shape}"
                         + (f", values such as {seen}" if seen else ""))
    return labels.astype(np.int64)


@dataclass(frozen=True)
class MulticlassOvertraining:
    """The overtraining check of each class against the rest: ``per_class[k].signal``
    compares class k's events, ``per_class[k].background`` the other classes' events, both
    scored by the probability of class k. ``verdict``: the worst of the classes'.
    ``train_class_factors``: (K,) the factors the training weights of each class were
    multiplied by to give them the test sample's class mix (ones when not matched)."""

    classes: list[str]
    per_class: list[OvertrainingResult]
    verdict: str
    pvalue_fail: float
    pvalue_warn: float
    train_class_factors: np.ndarray | None = None

    @property
    def passed(self) -> bool:
        """True unless the verdict is "overtrained"."""
        return self.verdict != "overtrained"


def multiclass_overtraining_test(
    train_proba: Any, train_y: Any, train_w: Any, test_proba: Any, test_y: Any, test_w: Any,
    classes: Sequence[Any] | None = None, bins: int = 20, pvalue_fail: float = PVALUE_FAIL,
    pvalue_warn: float = PVALUE_WARN, match_class_mix: bool = True,
) -> MulticlassOvertraining:
    """:func:`~hepbdt.evaluation.overtraining_test` of each class k against the rest: the
    training and test distributions of P(class k), for class k's events and for the
    others' separately (weighted KS and chi2 tests, as the two-class check).

    Class mix. "The others" mix K - 1 classes, whose score distributions differ, so their
    distribution depends on the proportions of the classes in the sample: training weights
    normalised per class (``norm = "equal_num_events"``) against physical test weights
    would differ there on a healthy model. With ``match_class_mix`` (default) the training
    weights are first rescaled class by class to the test sample's class mix
    (:func:`class_mix_weights`; the factors are ``train_class_factors`` of the result),
    so that both sides hold the same mixture and only a difference within a class shows.
    The test mix is the one kept because the test weights are those the evaluation quotes
    (the test AUC, the confusion matrix, the yields): usually the physical ones, while a
    per-class normalisation of the training weights is a device of the training. Class
    k's own events are not affected (each distribution is normalised, so a per-class
    factor cancels, as in the two-class check). Matching the class sums exactly also
    takes out their statistical fluctuation between the samples, which can only make the
    check slightly more lenient. ``match_class_mix=False`` compares the weights as given.
    """
    y_tr, p_tr, w_tr = check_multiclass(train_y, train_proba, train_w, "train_proba")
    y_te, p_te, w_te = check_multiclass(test_y, test_proba, test_w, "test_proba")
    if p_tr.shape[1] != p_te.shape[1]:
        raise ValueError(f"train_proba has {p_tr.shape[1]} classes, test_proba {p_te.shape[1]}")
    k = p_tr.shape[1]
    names = _class_names(classes, k)
    factors = _class_mix_factors(y_tr, w_tr, y_te, w_te, k) if match_class_mix else np.ones(k)
    w_tr = w_tr * factors[y_tr]
    results = []
    for j in range(k):
        try:
            results.append(overtraining_test(p_tr[:, j], y_tr == j, w_tr, p_te[:, j], y_te == j,
                                             w_te, bins, pvalue_fail, pvalue_warn))
        except ValueError as exc:
            raise ValueError(f"class {names[j]!r} against the rest: {exc}") from None
    verdict = max((r.verdict for r in results), key=_SEVERITY.__getitem__)
    return MulticlassOvertraining(names, results, verdict, pvalue_fail, pvalue_warn, factors)


def multiclass_combined_over_folds(checks: Sequence[MulticlassOvertraining]
                                   ) -> MulticlassOvertraining:
    """One check of k fold models, class by class as
    :func:`~hepbdt.evaluation.overtraining.combined_over_folds` (each p-value the smallest
    of the folds' times k); no class factors (each fold has its own)."""
    if not checks:
        raise ValueError("multiclass_combined_over_folds: no fold checks given")
    first = checks[0]
    per_class = [combined_over_folds([c.per_class[j] for c in checks])
                 for j in range(len(first.classes))]
    verdict = max((r.verdict for r in per_class), key=_SEVERITY.__getitem__)
    return MulticlassOvertraining(first.classes, per_class, verdict, first.pvalue_fail,
                                  first.pvalue_warn)


def per_class_permutation_importance(
    model: Any, X: Any, y: Any, sample_weight: Any = None, n_repeats: int = 5,
    random_state: int | None = 0, feature_names: list[str] | None = None,
    max_samples: int | None = None,
) -> list[PermutationImportance]:
    """Permutation importance of each class: the drop in class k's one-against-rest
    weighted ROC AUC of ``predict_proba`` (column k) when a feature's column is shuffled.

    ``y`` holds the model's labels (``classes_``), or class indices (columns of
    ``predict_proba``) when some value is not a label, as for :func:`permutation_importance`
    (labels 1, 2, 3 and a y of 1s and 2s are read as labels, with a
    :class:`~hepbdt.evaluation.LabelReadingWarning`). One shuffle scores the events
    once for every class, so the K rankings share their shuffles (seeded by
    ``random_state``, ``n_repeats`` per feature, as :func:`permutation_importance`; and
    ``max_samples`` as there). Ranking k's ``metric`` names its class (the model's label),
    "roc_auc, class <label> against the rest", which :func:`~hepbdt.plotting.plot_ranking`
    writes on the axis."""
    n_repeats = check_repeats(n_repeats)  # before the copy of X
    feature_names = labels_in_model_order(model, X, feature_names)  # X's, in the model's order
    X, columns, y, sample_weight = shuffleable_copy(X, y, sample_weight, max_samples,
                                                    random_state, model)
    n, m = X.shape
    labels, p, w = check_multiclass(class_codes(model, np.asarray(y)), model.predict_proba(X),
                                    sample_weight)
    k = p.shape[1]

    def evaluate(proba: np.ndarray) -> np.ndarray:  # an absent class's error names it
        return np.array([_one_vs_rest(roc_auc, labels, proba, w, j) for j in range(k)])

    rng = np.random.default_rng(random_state)
    baseline = evaluate(p)
    importances = np.empty((k, m, n_repeats))
    for f in range(m):
        original = columns[:, f].copy()
        for r in range(n_repeats):
            columns[:, f] = original[rng.permutation(n)]
            importances[:, f, r] = baseline - evaluate(np.asarray(model.predict_proba(X)))
        columns[:, f] = original
    feature_names = permutation_feature_names(model, m, feature_names)
    names = _class_names(getattr(model, "classes_", None), k)
    return [PermutationImportance(feature_names=list(feature_names),
                                  importances_mean=importances[j].mean(axis=1),
                                  importances_std=importances[j].std(axis=1),
                                  importances=importances[j], baseline=float(baseline[j]),
                                  metric=f"roc_auc, class {names[j]} against the rest",
                                  n_events=n)
            for j in range(k)]
