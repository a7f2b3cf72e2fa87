"""What a physicist looks at after training: weighted metrics, overtraining, rankings.

Everything takes signed event weights; labels are 1 for signal and 0 for background, and
for more than two classes (:mod:`hepbdt.evaluation.multiclass`) class indices 0..K-1 with
(n, K) class probabilities.
This package computes; :mod:`hepbdt.plotting` draws and :mod:`hepbdt.report` writes the
HTML report.
"""

from __future__ import annotations

from hepbdt.evaluation._data import LabelReadingWarning
from hepbdt.evaluation.curves import LearningCurve, learning_curve
from hepbdt.evaluation.decorrelation import (
    DecorrelationMeasures,
    decorrelation_measures,
    jensen_shannon_divergence,
)
from hepbdt.evaluation.metrics import (
    DEFAULT_MIN_BACKGROUND_EVENTS,
    FIGURES_OF_MERIT,
    MAX_MIN_BACKGROUND_EVENTS,
    BestCut,
    BinnedRegressionMetrics,
    EfficiencyTable,
    RegressionMetrics,
    SignificanceScan,
    ams,
    background_rejection_at,
    efficiency_table,
    regression_metrics,
    resolution_vs_target,
    roc_auc,
    roc_curve,
    separation,
    signal_efficiency_at,
    significance_scan,
    yield_note,
)
from hepbdt.evaluation.multiclass import (
    ConfusionMatrix,
    MulticlassOvertraining,
    confusion_matrix,
    multiclass_combined_over_folds,
    multiclass_overtraining_test,
    one_vs_rest_auc,
    one_vs_rest_roc,
    per_class_permutation_importance,
)
from hepbdt.evaluation.overtraining import (
    MIN_EFFECTIVE_EVENTS,
    PVALUE_FAIL,
    PVALUE_WARN,
    OvertrainingResult,
    SampleComparison,
    chi2_test,
    combined_over_folds,
    effective_sample_size,
    overtraining_test,
    weighted_ks_2samp,
)
from hepbdt.evaluation.ranking import (
    TMVA_RANKING,
    FeatureRanking,
    PermutationImportance,
    correlation_matrices,
    permutation_importance,
    tmva_importance,
    weighted_correlation,
)

__all__ = [
    "DEFAULT_MIN_BACKGROUND_EVENTS",
    "MAX_MIN_BACKGROUND_EVENTS",
    "FIGURES_OF_MERIT",
    "MIN_EFFECTIVE_EVENTS",
    "PVALUE_FAIL",
    "PVALUE_WARN",
    "TMVA_RANKING",
    "BestCut",
    "BinnedRegressionMetrics",
    "ConfusionMatrix",
    "DecorrelationMeasures",
    "EfficiencyTable",
    "FeatureRanking",
    "LabelReadingWarning",
    "LearningCurve",
    "MulticlassOvertraining",
    "OvertrainingResult",
    "PermutationImportance",
    "RegressionMetrics",
    "SampleComparison",
    "SignificanceScan",
    "ams",
    "background_rejection_at",
    "chi2_test",
    "combined_over_folds",
    "confusion_matrix",
    "correlation_matrices",
    "decorrelation_measures",
    "effective_sample_size",
    "efficiency_table",
    "jensen_shannon_divergence",
    "learning_curve",
    "multiclass_combined_over_folds",
    "multiclass_overtraining_test",
    "one_vs_rest_auc",
    "one_vs_rest_roc",
    "overtraining_test",
    "per_class_permutation_importance",
    "permutation_importance",
    "regression_metrics",
    "resolution_vs_target",
    "roc_auc",
    "roc_curve",
    "separation",
    "signal_efficiency_at",
    "significance_scan",
    "tmva_importance",
    "weighted_correlation",
    "weighted_ks_2samp",
    "yield_note",
]
