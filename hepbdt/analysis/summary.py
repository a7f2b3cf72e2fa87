"""The text printed after training and saved as ``summary.txt``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._sklearn import fitted_params
from .._util import (
    is_classifier,
    number_text,
    percent_text,
    pvalue_text,
    requested_percent,
    setting_text,
)
from ..boosting.losses import softmax_rows
from ..estimators import growth_text, tree_unit
from ..evaluation import (
    TMVA_RANKING,
    confusion_matrix,
    efficiency_table,
    one_vs_rest_auc,
    regression_metrics,
    yield_note,
)
from ..evaluation.metrics import SPLIT_YIELD_NOTE, SplitYields
from ..evaluation.multiclass import MulticlassOvertraining, class_mix_weights
from ..evaluation.overtraining import MIN_EFFECTIVE_EVENTS, OvertrainingResult, SampleComparison
from .result import (
    FoldScores,
    TrainResult,
    decorrelation_of,
    decorrelation_text,
    kfold_cell,
    kfold_table,
    missing_samples_text,
    models_of,
    overtraining_of,
    ranking,
    significance,
    split_yields_of,
)

__all__ = ["summarise"]


def summarise(result: TrainResult) -> str:
    """The text printed after training (and saved as ``summary.txt``)."""
    lines = [f"hepbdt: {result.config.title}", "", "Samples after cuts (all events):"]
    lines += ["  " + line for line in _sample_table(result)]
    lines += ["", _method_line(result)]
    lines += [f"Trees{'' if len(models_of(result.model)) == 1 else f' (fold {i})'}: {reason}"
              for i, m in enumerate(models_of(result.model))
              if (reason := getattr(m, "n_trees_reason_", None))]
    lines += _held_out_lines(result)
    lines += [""]
    lines += _quality_lines(result)
    if result.config.task != "regression" and not result.config.multiclass:
        lines += _significance_lines(result)
        lines += _decorrelation_lines(result)
    if result.config.split.kfold:
        lines += _fold_lines(result)
    lines += _ranking_lines(result)
    t = result.timings
    lines += ["", f"Time: reading {t.get('read', 0):.1f} s, training {t.get('train', 0):.1f} s, "
              f"outputs {t.get('outputs', 0):.1f} s"]
    lines += result.warnings
    lines += ["", f"Outputs in {result.output_dir}/:"]
    lines += _output_lines(result)
    return "\n".join(lines)


def _ranking_lines(result: TrainResult) -> list[str]:
    """The five top-ranked variables with their importance (3 decimals, more where that
    would show 0 or 1: an importance of 0.0003 is not "0.000", a feature no tree uses)."""
    of_folds = (f"; the mean of the {result.k} folds' models" if result.train_fold is not None
                else "")
    lines = ["", f"Top-ranked variables ({TMVA_RANKING}{of_folds}):"]
    for rank, (name, importance) in enumerate(ranking(result).ranked()[:5], start=1):
        lines.append(f"  {rank}. {name:30} {_fraction(importance, 3)}")
    return lines


def _held_out_lines(result: TrainResult) -> list[str]:
    """What the training column and the overtraining check leave out: the events held out
    to choose the number of trees (none: no line)."""
    if not result.n_held_out:
        return []
    rows = "event copies" if result.train_fold is not None else "events"
    fraction = models_of(result.model)[0].validation_fraction
    return [f"Held out: {result.n_held_out:,} of the {len(result.train):,} training "
            f"{rows} (validation_fraction = {setting_text(fraction)}) chose the number of "
            "trees, "
            "and no tree trained on them: the training column and the overtraining check "
            "leave them out (TrainTree: held_out = 1)"]


def _decorrelation_lines(result: TrainResult) -> list[str]:
    """Background rejection and 1/JSD of the mass at each signal efficiency: of the test
    events, or (k-fold) of every event, each scored by the model that did not train on it."""
    measures = decorrelation_of(result)
    if measures is None:
        return []
    p = result.config.params
    events = ("test events" if result.train_fold is None else
              f"every event of the {result.k} folds, scored out of fold")
    lines = ["", f"Mass decorrelation ({decorrelation_text(p)}) from {measures.variable}, "
                 f"{events} "
                 "(kept: the signal efficiency of the cut, tied scores kept together; n/a: no "
                 "cut keeps the signal efficiency, or no background passes):",
             "  signal eff.     kept   bkg rejection (1/eff_B)   1/JSD bkg   1/JSD signal"]
    for r in measures.rows():
        lines.append(f"  {requested_percent(r['signal_efficiency']):>11} "
                     f"{percent_text(r['achieved_signal_efficiency']):>8} "
                     f"{number_text(r['background_rejection']):>25} "
                     f"{number_text(r['inverse_jsd']):>11} {number_text(r['inverse_signal_jsd']):>14}")
    return lines


def _method_line(result: TrainResult) -> str:
    """Booster, trees, depth, features and the split scheme in one line."""
    config = result.config
    models = models_of(result.model)
    params = fitted_params(models[0])
    growth = growth_text(params, is_classifier(models[0]))
    method = f"{params['boosting']} boosting, {_trees_text(models)}, {growth}"
    if config.tmva_options:
        method += f" (TMVA options {config.tmva_options})"
    split = config.split
    seed = f" (seed {split.seed})" if split.mode == "random" else ""
    scheme = (f"{split.kfold}-fold by {result.kfold_by}" if split.kfold else
              f"{split.mode} split, {setting_text(split.train_fraction)} for training{seed}")
    return (f"Method: {method}; {len(config.features)} features; {scheme}; training "
            f"weights normalised: {split.norm}")


def _trees_text(models: list[Any]) -> str:
    """The trees the models kept: one count, or each fold's where they differ."""
    counts = [getattr(m, "n_trees_", fitted_params(m)["n_trees"]) for m in models]
    unit = tree_unit(models[0])
    if len(set(counts)) == 1:
        return f"{counts[0]} {unit}"
    return f"{', '.join(str(c) for c in counts)} {unit} (one count a fold)"


def _quality_lines(result: TrainResult) -> list[str]:
    """Test and training metrics side by side, and the overtraining check."""
    test, s_te = result.test, result.test_scores
    train, s_tr = result.trained_events()
    if result.config.task == "regression":
        m_te = regression_metrics(test.y, s_te, test.w)
        m_tr = regression_metrics(train.y, s_tr, train.w)
        lines = [f"{'':34} {'test':>10} {'train':>10}"]
        for label, key in (("RMSE", "rmse"), ("mean absolute error", "mae"), ("bias", "bias"),
                           ("resolution (IQR / 1.349)", "resolution_iqr")):
            lines.append(f"{label:34} {number_text(getattr(m_te, key), marks=()):>10} "
                         f"{number_text(getattr(m_tr, key), marks=()):>10}")
        return lines
    if result.config.multiclass:
        return _multiclass_lines(result)
    eff_te = efficiency_table(test.y, s_te, test.w)
    eff_tr = efficiency_table(train.y, s_tr, train.w)
    lines = [f"{'':40} {'test':>8} {'train':>8}"]
    for (label, v_te), (_, v_tr) in zip(eff_te.rows(), eff_tr.rows(), strict=True):
        lines.append(f"{label:40} {_fraction(v_te):>8} {_fraction(v_tr):>8}")
    lines += ["", *overtraining_lines(overtraining_of(result), result.k)]
    return lines


def _fraction(value: float, decimals: int = 4) -> str:
    """An efficiency, AUC or fraction with ``decimals`` decimals, more where it would
    round to 0 or 1 without being it (0.99996, not 1.0000); "n/a" for NaN."""
    return number_text(value, decimals, fixed=True)


def _pvalue(p: float, check: Any) -> str:
    """A p-value as the summary prints it, never rounded onto 0 or 1 or across the
    thresholds of ``check`` (0.00996 against 0.01 is not "0.01"); "n/a" where the test had
    none."""
    return pvalue_text(p, (check.pvalue_fail, check.pvalue_warn), 3)


def _over_folds(k: int) -> str:
    """How a k-fold training's overtraining p-values are made (empty for one model)."""
    return ("" if k == 1 else f"; each fold's model on its own training and test events, "
            f"each p-value the smallest of the {k} folds' x {k} (Bonferroni)")


def overtraining_lines(check: OvertrainingResult | MulticlassOvertraining, k: int = 1
                       ) -> list[str]:
    """The overtraining verdict as the summary prints it, and the p-values it comes from:
    the smaller of the KS and chi2 p-values of each class decides, the worst class the
    overall verdict (``k`` folds: each fold's model on its own events, Bonferroni)."""
    if isinstance(check, MulticlassOvertraining):
        return _multiclass_overtraining_lines(check, k)
    return [f"Overtraining (KS test and chi2 test, training vs test{_over_folds(k)}; the "
            f"smallest p-value decides: below {check.pvalue_fail:g} overtrained, below "
            f"{check.pvalue_warn:g} warning) -> {check.verdict}",
            *(f"  {name:10} KS p = {_pvalue(part.ks_pvalue, check)}, chi2 p = "
              f"{_pvalue(part.chi2_pvalue, check)} -> {part.verdict}{_too_few(part)}"
              for name, part in (("signal", check.signal), ("background", check.background)))]


def _too_few(part: SampleComparison) -> str:
    """Why a class has no p-value where its events are too few for the tests, else ""."""
    fewest = min(part.n_eff_train, part.n_eff_test)
    if fewest >= MIN_EFFECTIVE_EVENTS:
        return ""
    shown = number_text(fewest, 3, marks=(0.0, MIN_EFFECTIVE_EVENTS))  # 9.9996 is not "10"
    return (f" (fewer than {MIN_EFFECTIVE_EVENTS:g} effective training or test events: "
            f"{shown}; the tests need more)")


def _multiclass_lines(result: TrainResult) -> list[str]:
    """Per-class AUC (one against the rest), the confusion matrix and the overtraining check
    of each class, for a multi-class training."""
    classes = result.config.classes
    test, p_te = result.test, result.test_proba
    train, s_tr = result.trained_events()
    p_tr = softmax_rows(s_tr)
    # training weights in the test sample's class mix: a one-against-rest AUC, and the
    # rest's score distribution, change with per-class weight factors (e.g. norm)
    w_tr = class_mix_weights(train.y, train.w, test.y, test.w)
    auc_te, auc_tr = one_vs_rest_auc(test.y, p_te, test.w), one_vs_rest_auc(train.y, p_tr, w_tr)
    width = max(20, *(len(c) + 2 for c in classes))
    lines = [f"{len(classes)} classes; ROC AUC of each class against the rest (its probability; "
             "training weights rescaled per class to the test sample's class mix):",
             f"  {'class':{width}} {'test':>8} {'train':>8}"]
    lines += [f"  {name:{width}} {_fraction(a_te):>8} {_fraction(a_tr):>8}"
              for name, a_te, a_tr in zip(classes, auc_te, auc_tr, strict=True)]
    lines.append(f"  {'mean':{width}} {_fraction(auc_te.mean()):>8} "
                 f"{_fraction(auc_tr.mean()):>8}")
    matrix = confusion_matrix(test.y, p_te, test.w, classes)
    cell = max(8, *(len(c) + 1 for c in classes))
    corner = "true \\ predicted"
    lines += ["", "Confusion matrix (test events, weighted; each row: the fraction of a true "
              "class's weight predicted as each class, the most probable):",
              f"  {corner:{width}}" + "".join(f"{c:>{cell}}" for c in classes)]
    for name, row in zip(classes, matrix.fractions(), strict=True):
        lines.append(f"  {name:{width}}" + "".join(f"{_fraction(v, 3):>{cell}}" for v in row))
    lines.append(f"  weighted accuracy: {_fraction(matrix.accuracy)}")
    return [*lines, "", *overtraining_lines(overtraining_of(result), result.k)]


def _multiclass_overtraining_lines(check: MulticlassOvertraining, k: int) -> list[str]:
    """The overtraining check of each class's probability, its events against the rest's."""
    width = max(20, *(len(c) + 2 for c in check.classes))
    lines = ["Overtraining (KS test and chi2 test, training vs test of P(class), the class's "
             "events / the other classes' events, training weights in the test's class mix"
             f"{_over_folds(k)}; the smallest p-value decides: below "
             f"{check.pvalue_fail:g} overtrained, below {check.pvalue_warn:g} warning):"]
    for name, part in zip(check.classes, check.per_class, strict=True):
        lines.append(f"  {name:{width}} KS p = {_pvalue(part.signal.ks_pvalue, check)} / "
                     f"{_pvalue(part.background.ks_pvalue, check)}, chi2 p = "
                     f"{_pvalue(part.signal.chi2_pvalue, check)} / "
                     f"{_pvalue(part.background.chi2_pvalue, check)} -> {part.verdict}")
    lines.append(f"  verdict: {check.verdict}")
    return lines


def _significance_lines(result: TrainResult) -> list[str]:
    """The best cut of each figure of merit: S and B in expected yields of the whole sample,
    with their statistical uncertainties and MC counts."""
    scan = significance(result)
    yields = split_yields_of(result)
    if result.train_fold is not None:
        note = f"{yield_note(1.0)}, every event scored out of fold"
    else:
        note = (f"{SPLIT_YIELD_NOTE} (see the samples above; nominal test fraction "
                f"1 - train_fraction = {result.test_fraction:.4g})")
    lines = ["", f"Best cuts (S, B: {note}; +- sqrt(sum (w x factor)^2); {scan.rule_text}):"]
    missing = missing_samples_text(yields, result.test.sample_names, result.config.classes)
    if missing:
        lines.append(f"  WARNING: S and B below leave out {len(yields.missing)} sample(s) with "
                     f"events but none in the test set, whose yields cannot be estimated: "
                     f"{missing}; S and B are incomplete (use a smaller train_fraction, more "
                     "events or k-fold)")
    names = {"s_over_sqrt_b": "S/sqrt(B)", "s_over_sqrt_s_plus_b": "S/sqrt(S+B)",
             "ams": f"AMS (b_reg {setting_text(scan.b_reg)})"}
    for key, name in names.items():
        best = scan.best_cuts[key]
        if not best.found:
            lines.append(f"  {name:18} no cut leaves >= {scan.min_background_events} "
                         "background MC events (counted and effective) with B > 0")
            continue
        lines.append(f"  {name:18} {best.value:8.4g} at score >= {scan.threshold_text(key)}: "
                     f"S = {best.signal:.4g} +- {best.signal_error:.3g} ({best.n_signal_mc} "
                     f"MC), B = {best.background:.4g} +- {best.background_error:.3g} "
                     f"({best.n_background_mc} MC); other half "
                     f"{number_text(scan.other_half[key], marks=())}")
    return lines


def _fold_lines(result: TrainResult) -> list[str]:
    """The per-fold table of a k-fold training and the spread of its test metric."""
    folds = FoldScores.of(result)
    rows = kfold_table(folds)
    lines = ["", "Per fold:"]
    header = list(rows[0])
    widths = [max(len(h), 7) for h in header]
    lines.append("  " + "  ".join(f"{h:>{n}}" for h, n in zip(header, widths, strict=True)))
    for row in rows:
        lines.append("  " + "  ".join(
            f"{kfold_cell(h, row[h], folds):>{n}}" for h, n in zip(header, widths, strict=True)))
    key = "test RMSE" if result.config.task == "regression" else "test AUC"
    values = np.array([row[key] for row in rows])
    if result.config.task == "regression":  # in the target's units: significant digits
        mean, spread = number_text(values.mean()), number_text(values.std())
    else:  # a spread of 4e-5 is not "0.0000"
        mean, spread = _fraction(values.mean()), _fraction(values.std())
    # the folds' spread, not the mean's uncertainty: "+-" beside a mean read as the latter
    lines.append(f"  {key}: mean {mean}, standard deviation {spread} (ddof 0) over "
                 f"{len(rows)} folds; the test column above is out of fold for every event")
    return lines


def _output_lines(result: TrainResult) -> list[str]:
    """One line per output file (fold files and figures summarised)."""
    k = result.k
    lines = []
    for key, path in result.files.items():
        if key.startswith("figure:") or "_fold" in key:
            continue
        shown = path.name
        if k > 1 and key == "model":
            shown += f" (k-fold manifest) + model_fold0..{k - 1}.json"
        elif k > 1 and key == "tmva_xml":
            shown = f"model_fold0..{k - 1}.weights.xml"
        elif key == "scores":
            shown += " (TrainTree, TestTree)"
        lines.append(f"  {key:10} {shown}")
    n_figures = sum(k.startswith("figure:") for k in result.files)
    if n_figures:
        lines.append(f"  {'figures':10} figures/ ({n_figures} figures)")
    lines.append(f"  {'summary':10} summary.txt")
    return lines


def _sample_table(result: TrainResult) -> list[str]:
    """Events per sample after the cuts (every event once); for a split also the test
    events and the factor that makes test weights yields: the significance scan's own
    (:func:`split_yields_of`: events / test events, events of weight 0 not counted)."""
    split = result.train_fold is None
    data_sets = (result.train, result.test) if split else (result.test,)
    sample_index = np.concatenate([d.sample_index for d in data_sets])
    labels = {s.name: ("target" if s.target else str(s.class_name))
              for s in result.config.samples}
    rows = [f"{'sample':20} {'label':>10} {'events':>10}"
            + (f" {'test':>10} {'yield = test weights x':>24}" if split else "")]
    yields = split_yields_of(result) if split else None
    for index, name in enumerate(result.test.sample_names):
        n_events = int(np.count_nonzero(sample_index == index))
        row = f"{name:20} {labels.get(name, ''):>10} {n_events:>10,}"
        if yields is not None:
            in_test = result.test.sample_index == index
            row += f" {int(np.count_nonzero(in_test)):>10,} {_factor_text(yields, index, in_test):>24}"
        rows.append(row)
    return rows


def _factor_text(yields: SplitYields, index: int, in_test: np.ndarray) -> str:
    """The factor(s) on sample ``index``'s test weights, as the scan applies them ("" for a
    sample without events of non-zero weight; "none: no test event" where none of them is
    a test event). Counting the events of weight 0 too gave 2 where the scan used 2.016."""
    if any(group.sample == index for group in yields.missing):
        return "none: no test event"
    if not any(group.sample == index for group in yields.groups):
        return ""
    return ", ".join(f"{value:.6g}" for value in np.unique(yields.scale[in_test]))
