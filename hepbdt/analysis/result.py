"""What a training produced (:class:`TrainResult`) and the per-fold view of a k-fold one.

The outputs (:mod:`.outputs`) and the summary (:mod:`.summary`) read these; nothing here
writes a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._util import number_text, pvalue_text, setting_text
from ..boosting.losses import softmax_rows
from ..evaluation import (
    FeatureRanking,
    LearningCurve,
    MulticlassOvertraining,
    OvertrainingResult,
    SignificanceScan,
    combined_over_folds,
    decorrelation_measures,
    learning_curve,
    multiclass_combined_over_folds,
    multiclass_overtraining_test,
    one_vs_rest_auc,
    overtraining_test,
    regression_metrics,
    roc_auc,
    significance_scan,
    tmva_importance,
)
from ..evaluation.metrics import SplitYields, split_yields
from ..evaluation.multiclass import class_mix_weights
from ..io import Dataset
from ..kfold import KFoldModel, fold_of
from ..report import LEARNING_CURVE_EVENT_STAGES
from .config import AnalysisConfig

__all__ = ["TrainResult", "decorrelation_of", "FoldScores", "kfold_cell", "kfold_table",
           "models_of", "overtraining_of", "ranking", "significance", "split_yields_of",
           "missing_samples_text", "first_learning_curve"]


@dataclass
class TrainResult:
    """What :func:`hepbdt.analysis.train` produced: models, data, scores, files and summary.

    For k-fold, ``train`` holds every training copy of an event (one per model that
    trained on it, numbered in ``train_fold``) and ``test`` every event once, scored out
    of fold. With three or more classes the scores are (n, K) raw class scores (the
    model's ``decision_function``, columns in ``config.classes`` order) and
    ``train_proba``/``test_proba`` their softmax, the model's ``predict_proba``.
    """

    config: AnalysisConfig
    output_dir: Path
    model: Any
    train: Dataset
    test: Dataset
    train_scores: np.ndarray
    test_scores: np.ndarray
    train_fold: np.ndarray | None
    files: dict[str, Path] = field(default_factory=dict)
    summary: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: The learning curve of the first model, computed once by :func:`first_learning_curve`
    #: for both the figure and the report.
    learning_curve: LearningCurve | None = field(default=None, repr=False)
    #: With ``[method] decorrelate``: the decorrelation variables of the training and test
    #: events, float64 (n, k) in ``config.decorrelate`` order (rows as ``train``/``test``).
    train_decorrelate: np.ndarray | None = field(default=None, repr=False)
    test_decorrelate: np.ndarray | None = field(default=None, repr=False)
    #: The k-fold view of the result (:meth:`FoldScores.of`), made on first use.
    fold_view: FoldScores | None = field(default=None, repr=False)
    #: The events of ``train`` that ``n_trees="auto"`` (or ``early_stopping``) held out to
    #: choose the number of trees, so that no tree trained on them (bool, rows as ``train``;
    #: None: none held out). They count among the split's events (the yields' factors) and
    #: not among the trained-on events (the overtraining check, the training metrics).
    train_held_out: np.ndarray | None = field(default=None, repr=False)

    @property
    def train_proba(self) -> np.ndarray:
        """(n, K) class probabilities of the training events (multi-class only)."""
        return softmax_rows(self.train_scores)

    @property
    def test_proba(self) -> np.ndarray:
        """(n, K) class probabilities of the test events (multi-class only)."""
        return softmax_rows(self.test_scores)

    @property
    def k(self) -> int:
        """The number of models (1 without k-fold)."""
        return len(models_of(self.model))

    @property
    def test_fraction(self) -> float:
        """The nominal fraction of the events in ``test``: 1 - train_fraction for a split,
        1 for k-fold (every event scored out of fold). Yields do not use it: the split
        rounds each sample's share, so they scale each sample by its own actual fraction
        (:func:`split_yields_of`)."""
        return 1.0 if self.train_fold is not None else 1.0 - self.config.split.train_fraction

    @property
    def kfold_by(self) -> str | None:
        """The event expression the folds were made by (the k-fold model's ``by``, also when
        every sample gives it and the top-level ``event`` is unset); None for a split."""
        return getattr(self.model, "by", None) if self.train_fold is not None else None

    def labelled(self, data: Dataset) -> Dataset:
        """The same events with the features named as written in the config (aliases kept)."""
        return data.replace(feature_names=list(self.config.features))

    @property
    def n_held_out(self) -> int:
        """The training copies no tree trained on (:attr:`train_held_out`)."""
        return 0 if self.train_held_out is None else int(np.count_nonzero(self.train_held_out))

    def trained_events(self) -> tuple[Dataset, np.ndarray]:
        """The training copies a model trained on, and their scores: ``train`` and
        ``train_scores`` without the held-out events (:attr:`train_held_out`)."""
        if self.train_held_out is None:
            return self.train, self.train_scores
        kept = ~self.train_held_out
        return self.train.take(kept), self.train_scores[kept]

    def fold_data(self, i: int, trained: bool = True) -> tuple[Dataset, Dataset]:
        """The training events of model ``i`` (the model without k-fold) and its test events;
        the training events those it trained on unless ``trained`` is False."""
        train, test = self._fold_masks(i, trained)
        return (self.train if train is None else self.train.take(train),
                self.test if test is None else self.test.take(test))

    def fold_scores(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """The training and test scores of model ``i``, rows as :meth:`fold_data`'s."""
        train, test = self._fold_masks(i, True)
        return (self.train_scores if train is None else self.train_scores[train],
                self.test_scores if test is None else self.test_scores[test])

    def fold_held_out(self, i: int) -> np.ndarray | None:
        """Which of ``fold_data(i, trained=False)``'s training events model ``i`` held out."""
        if self.train_held_out is None:
            return None
        train, _ = self._fold_masks(i, False)
        return self.train_held_out if train is None else self.train_held_out[train]

    def _fold_masks(self, i: int, trained: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Masks of model ``i``'s training and test events (None: all)."""
        kept = None if not trained or self.train_held_out is None else ~self.train_held_out
        if self.train_fold is None:
            return kept, None
        train = self.train_fold == i
        return train if kept is None else train & kept, fold_of(self.test.event, self.k) == i


def models_of(model: Any) -> list[Any]:
    """The fold models of a KFoldModel, else ``[model]``."""
    return model.models if isinstance(model, KFoldModel) else [model]


def first_learning_curve(result: TrainResult) -> LearningCurve:
    """The learning curve of the first model on its fold's events (the model for a split),
    computed on the first call and kept on ``result``. A classifier's training events are
    weighed to the test events' class mix (the training weights are normalised per class,
    ``split.norm``; the test weights physical)."""
    if result.learning_curve is None:
        train, test = result.fold_data(0)
        result.learning_curve = learning_curve(models_of(result.model)[0], train, test,
                                               max_event_stages=LEARNING_CURVE_EVENT_STAGES,
                                               match_class_mix=True)
    return result.learning_curve


def split_yields_of(result: TrainResult) -> SplitYields:
    """The factor of each test event that makes its weight an expected yield of the whole
    sample: its sample's events / its test events (:func:`~hepbdt.evaluation.metrics.split_yields`;
    1 for k-fold, where ``test`` holds every event). Cached on the result."""
    cached = getattr(result, "_split_yields", None)
    if cached is None:
        test = result.test
        labels = test.y if test.task == "classification" else np.zeros(len(test), np.int8)
        if result.train_fold is not None:
            cached = split_yields(test.sample_index, labels, test_weight=test.w)
        else:
            train = result.train
            train_labels = (train.y if train.task == "classification"
                            else np.zeros(len(train), np.int8))
            cached = split_yields(test.sample_index, labels, train.sample_index, train_labels,
                                  test_weight=test.w, other_weight=train.w)
        result._split_yields = cached
    return cached


def missing_samples_text(yields: SplitYields, sample_names: Sequence[str],
                         class_names: Sequence[str] | None = None) -> str:
    """E.g. "one (signal, 1 event), tiny (background, 1 event)": the groups with events but
    none in the test set ("" when there are none)."""
    parts = []
    for group in yields.missing:
        name = (sample_names[group.sample] if 0 <= group.sample < len(sample_names)
                else f"sample {group.sample}")
        label = (class_names[group.label] if class_names is not None
                 and 0 <= group.label < len(class_names) else f"label {group.label}")
        parts.append(f"{name} ({label}, {group.n_events} event"
                     f"{'' if group.n_events == 1 else 's'})")
    return ", ".join(parts)


def significance(result: TrainResult) -> SignificanceScan:
    """The significance scan of the test events, in expected yields of the whole sample:
    each test event's weight x its sample's events / its test events (:func:`split_yields_of`;
    samples without a test event are left out, see ``split_yields_of(result).missing``)."""
    return significance_scan(result.test.y, result.test_scores, result.test.w,
                             yield_scale=split_yields_of(result).scale,
                             min_background_events=result.config.output.min_background_events)


def ranking(result: TrainResult) -> FeatureRanking:
    """TMVA's variable importance (``tmva_importance(quadrature=True)``); for k folds the
    mean of the folds' normalised importances."""
    names = list(result.config.features)
    rankings = [tmva_importance(m, names, quadrature=True) for m in models_of(result.model)]
    if len(rankings) == 1:
        return rankings[0]
    return FeatureRanking(
        feature_names=names,
        importance=np.mean([r.importance for r in rankings], axis=0),
        split_count=np.sum([r.split_count for r in rankings], axis=0),
        total_gain=np.sum([r.total_gain for r in rankings], axis=0),
        cover=np.sum([r.cover for r in rankings], axis=0),
        quadrature=True,
    )


@dataclass
class FoldScores:
    """Events and scores of a k-fold training: the training copies (one per model that
    trained on an event, with that model's number) and the test events (out of fold)."""

    k: int
    regression: bool
    train: Dataset
    test: Dataset
    train_scores: np.ndarray
    test_scores: np.ndarray
    train_fold: np.ndarray
    #: The class names of a multi-class training (the scores are then (n, K) raw scores).
    classes: list[str] | None = None
    #: The training copies their fold's model held out (``TrainResult.train_held_out``).
    train_held_out: np.ndarray | None = None
    #: Each fold's overtraining check, computed once (the summary's verdict, its per-fold
    #: table and the report's all read them).
    _checks: dict[int, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, result: TrainResult) -> FoldScores:
        """The fold view of a k-fold training's result (one per result, kept on it)."""
        if result.train_fold is None:
            raise ValueError("the result is not of a k-fold training")
        if result.fold_view is None:
            result.fold_view = cls(
                result.k, result.config.task == "regression", result.train, result.test,
                result.train_scores, result.test_scores, result.train_fold,
                list(result.config.classes) if result.config.multiclass else None,
                result.train_held_out)
        return result.fold_view

    def trained(self, i: int) -> np.ndarray:
        """Mask of the training copies fold ``i``'s model trained on."""
        mask = self.train_fold == i
        return mask if self.train_held_out is None else mask & ~self.train_held_out

    @property
    def test_fold(self) -> np.ndarray:
        """The fold of each test event."""
        return fold_of(self.test.event, self.k)

    def overtraining(self, i: int) -> OvertrainingResult | MulticlassOvertraining:
        """The overtraining check of fold ``i``'s model: its training events against its
        test events (multi-class: of each class's probability against the rest)."""
        if i not in self._checks:
            self._checks[i] = self._overtraining(i)
        return self._checks[i]

    def combined_overtraining(self) -> OvertrainingResult | MulticlassOvertraining:
        """Each fold's model's check on its own events, combined (Bonferroni,
        :func:`~hepbdt.evaluation.combined_over_folds`)."""
        checks = [self.overtraining(i) for i in range(self.k)]
        return (combined_over_folds(checks) if self.classes is None else
                multiclass_combined_over_folds(checks))

    def _overtraining(self, i: int) -> OvertrainingResult | MulticlassOvertraining:
        tr, te = self.trained(i), self.test_fold == i
        y_tr, w_tr, s_tr = self.train.y[tr], self.train.w[tr], self.train_scores[tr]
        y_te, w_te, s_te = self.test.y[te], self.test.w[te], self.test_scores[te]
        if self.classes is not None:
            return multiclass_overtraining_test(softmax_rows(s_tr), y_tr, w_tr,
                                                softmax_rows(s_te), y_te, w_te, self.classes)
        return overtraining_test(s_tr, y_tr, w_tr, s_te, y_te, w_te)


def overtraining_of(result: TrainResult) -> OvertrainingResult | MulticlassOvertraining:
    """The overtraining check of a classification: of the model's training events against
    its test events; for k-fold, of each fold's model on its own events, combined
    (Bonferroni, :func:`~hepbdt.evaluation.combined_over_folds`): the pooled training
    copies and out-of-fold scores are the same events, not two samples to test."""
    if result.train_fold is not None:
        return FoldScores.of(result).combined_overtraining()
    train, test = result.fold_data(0)
    s_tr, s_te = result.fold_scores(0)
    if result.config.multiclass:
        return multiclass_overtraining_test(softmax_rows(s_tr), train.y, train.w,
                                            softmax_rows(s_te), test.y, test.w,
                                            result.config.classes)
    return overtraining_test(s_tr, train.y, train.w, s_te, test.y, test.w)


def kfold_table(folds: FoldScores) -> list[dict[str, Any]]:
    """Per-fold quality: events, test and training AUC (or RMSE), KS p-values. With three or
    more classes the AUC is the mean of the classes' one-against-rest AUCs (each class's
    test AUC follows) and the KS p-value the smallest of the per-class checks that have one
    (n/a only where none has: a class's events too few for the test)."""
    rows = []
    for i in range(folds.k):
        tr = folds.trained(i)
        te = folds.test_fold == i
        row: dict[str, Any] = {"fold": i, "train events": int(tr.sum()),
                               "test events": int(te.sum())}
        y_tr, w_tr, s_tr = folds.train.y[tr], folds.train.w[tr], folds.train_scores[tr]
        y_te, w_te, s_te = folds.test.y[te], folds.test.w[te], folds.test_scores[te]
        if folds.regression:
            row["test RMSE"] = regression_metrics(y_te, s_te, w_te).rmse
            row["train RMSE"] = regression_metrics(y_tr, s_tr, w_tr).rmse
        elif folds.classes is not None:
            p_tr, p_te = softmax_rows(s_tr), softmax_rows(s_te)
            # the training classes weighed to the test's mix, as the overtraining check does
            w_mix = class_mix_weights(y_tr, w_tr, y_te, w_te)
            auc_te, auc_tr = one_vs_rest_auc(y_te, p_te, w_te), one_vs_rest_auc(y_tr, p_tr, w_mix)
            row["test AUC"] = float(auc_te.mean())
            row["train AUC"] = float(auc_tr.mean())
            for name, value in zip(folds.classes, auc_te, strict=True):
                row[f"test AUC ({name})"] = float(value)
            check = folds.overtraining(i)
            row["smallest KS p"] = _smallest_pvalue(
                [p for c in check.per_class for p in (c.signal.ks_pvalue, c.background.ks_pvalue)])
        else:
            row["test AUC"] = roc_auc(y_te, s_te, w_te)
            row["train AUC"] = roc_auc(y_tr, s_tr, w_tr)
            check = folds.overtraining(i)
            row["KS p (signal)"] = check.signal.ks_pvalue
            row["KS p (background)"] = check.background.ks_pvalue
        rows.append(row)
    return rows


def _smallest_pvalue(pvalues: Sequence[float]) -> float:
    """The smallest of the p-values that exist (NaN: a test without one, too few events);
    NaN only where none does. Python's ``min`` kept a NaN met first (``min(nan, 1e-11)`` is
    nan), so a tiny class hid another class's p-value of 1e-11 as n/a."""
    given = [float(p) for p in pvalues if not np.isnan(p)]
    return min(given) if given else float("nan")


def cell(value: Any) -> str:
    """A number as the k-fold tables show it (integers whole, else 4 significant digits,
    more where they would show 0 or 1 for a value that is not; NaN as n/a)."""
    if isinstance(value, int | np.integer):
        return str(int(value))
    return number_text(float(value))


def kfold_cell(key: str, value: Any, folds: FoldScores) -> str:
    """A cell of column ``key`` of :func:`kfold_table`: a KS p-value never rounded onto 0,
    1 or the overtraining thresholds (0.0099996 against 0.01 is not "0.01"), else
    :func:`cell`."""
    if "KS p" not in key or folds.regression:
        return cell(value)
    check = folds.overtraining(0)
    return pvalue_text(float(value), (check.pvalue_fail, check.pvalue_warn))


def decorrelation_text(params: dict[str, Any]) -> str:
    """What decorrelated the model, in words: the training's method with its strength and
    target, the DDT map, both, or neither (the measures only)."""
    method, mapping = params.get("decorrelation"), params.get("decorrelation_map")
    parts = []
    if method is not None:
        parts.append(f"{method}, strength {setting_text(params.get('decorrelation_strength', 1.0))}, "
                     f"target {params.get('decorrelation_target', 'background')!r}")
    if mapping is not None:
        parts.append(f"the {str(mapping).upper()} map")
    return ", then ".join(parts) if parts else "none (the measures only)"


def decorrelation_of(result: TrainResult) -> Any:
    """The decorrelation measures of the test events against the first ``decorrelate``
    variable (cached on the result); None without ``decorrelate``."""
    if result.test_decorrelate is None or result.config.task != "classification" \
            or result.config.multiclass:
        return None
    cached = getattr(result, "_decorrelation_measures", None)
    if cached is None:
        cached = decorrelation_measures(result.test_scores, result.test.y,
                                        result.test_decorrelate[:, 0], result.test.w,
                                        variable=result.config.decorrelate[0])
        result._decorrelation_measures = cached
    return cached
