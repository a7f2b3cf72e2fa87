"""The files a training writes: models, TMVA XML, score trees, figures and the HTML report.

:func:`write_outputs` writes all of them for a :class:`~.result.TrainResult`;
:func:`report_from_scores` writes the report again from a model file and the
``scores.root`` a training wrote. Plotting and the report import matplotlib, so they are
imported when first drawn (``hepbdt train --check`` and ``apply`` never need them).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..evaluation import (
    DEFAULT_MIN_BACKGROUND_EVENTS,
    learning_curve,
    overtraining_test,
    resolution_vs_target,
    roc_auc,
    roc_curve,
    significance_scan,
    yield_note,
)
from ..interop.tmva_export import to_tmva_xml
from ..io import read_scores, write_scores
from ..kfold import KFoldModel
from ..output_set import check_model_of
from ..persistence import load_model
from .result import FoldScores, TrainResult, cell, kfold_table, models_of, ranking

__all__ = ["write_outputs", "draw_figures", "write_report", "report_from_scores"]


def write_outputs(result: TrainResult, echo: Callable[[str], None] | None = None) -> None:
    """Write the model(s), the TMVA XML, scores.root, the figures and the report into
    ``result.output_dir``; record each in ``result.files``."""
    config, out, files = result.config, result.output_dir, result.files
    model = result.model
    model_path = out / "model.json"
    if isinstance(model, KFoldModel):
        for i, path in enumerate(model.save(model_path)[:-1]):
            files[f"model_fold{i}"] = path
    else:
        model.save(model_path)
    files["model"] = model_path
    if config.output.tmva_xml:
        _write_tmva_xml(result, echo)
    files["scores"] = _write_score_trees(result, out / "scores.root")
    if config.output.figures:
        for name, path in draw_figures(result, out / "figures",
                                       config.output.figure_formats).items():
            files[f"figure:{name}"] = path
    if config.output.report:
        files["report"] = write_report(result, out / "report.html")


def _write_tmva_xml(result: TrainResult, echo: Callable[[str], None] | None) -> None:
    """One TMVA weight file per model; a model TMVA cannot express gets a warning instead."""
    models = models_of(result.model)
    for i, fold_model in enumerate(models):
        name = "model.weights.xml" if len(models) == 1 else f"model_fold{i}.weights.xml"
        try:
            to_tmva_xml(fold_model, result.output_dir / name)
            result.files["tmva_xml" if i == 0 else f"tmva_xml_fold{i}"] = result.output_dir / name
        except (ValueError, NotImplementedError) as exc:
            message = f"warning: no TMVA XML written: {exc}"
            result.warnings.append(message)
            if echo is not None:
                echo(message)
            break


def _write_score_trees(result: TrainResult, path: Path) -> Path:
    """TrainTree and TestTree (with the fold of each event for k-fold) into ``path``."""
    output = result.config.output
    branch = output.score_branch
    train_scores: Any = result.train_scores
    test_scores: Any = result.test_scores
    if result.train_fold is not None:
        train_scores = {branch: result.train_scores, "fold": result.train_fold.astype(float)}
        test_scores = {branch: result.test_scores,
                       "fold": FoldScores.of(result).test_fold.astype(float)}
    write_scores(path, result.labelled(result.train), train_scores, "TrainTree",
                 score_branch=branch, features=output.score_features)
    write_scores(path, result.labelled(result.test), test_scores, "TestTree",
                 score_branch=branch, features=output.score_features, update=True)
    return path


def draw_figures(result: TrainResult, folder: Path, formats: Sequence[str] = ("png",)
                 ) -> dict[str, Path]:
    """Draw the standard figures into ``folder``; return {name: path of the first format}."""
    from .. import plotting  # matplotlib: imported only when figures are drawn

    train, test = result.train, result.test
    s_tr, s_te = result.train_scores, result.test_scores
    regression = result.config.task == "regression"
    figures: dict[str, Callable[[], Any]] = {}
    if regression:
        figures["predicted_vs_true"] = lambda: plotting.plot_predicted_vs_true(
            test.y, s_te, test.w)
        figures["resolution"] = lambda: plotting.plot_resolution(
            resolution_vs_target(test.y, s_te, test.w))
    else:
        figures["roc"] = lambda: plotting.plot_roc(test.y, s_te, test.w,
                                                   train=(train.y, s_tr, train.w))
        figures["scores"] = lambda: plotting.plot_score_distributions(test.y, s_te, test.w)
        figures["overtraining"] = lambda: plotting.plot_overtraining(
            s_tr, train.y, train.w, s_te, test.y, test.w,
            result=overtraining_test(s_tr, train.y, train.w, s_te, test.y, test.w))
        if result.train_fold is not None:
            figures["kfold_roc"] = lambda: _kfold_roc_figure(FoldScores.of(result))
    figures["ranking"] = lambda: plotting.plot_ranking(ranking(result))
    figures["correlation"] = lambda: plotting.plot_correlation_matrices(
        train.X, None if regression else train.y, train.w, list(result.config.features))
    first_model = models_of(result.model)[0]
    first_train, first_test = result.fold_data(0)
    figures["learning_curve"] = lambda: plotting.plot_learning_curve(
        learning_curve(first_model, first_train, first_test))
    written = {}
    for name, draw in figures.items():
        written[name] = plotting.save_figure(draw(), folder / name, formats)[0]
    return written


def _kfold_roc_figure(folds: FoldScores) -> Any:
    """ROC curve of each fold's test events and of all events scored out of fold."""
    from matplotlib.figure import Figure  # imported only when the figure is drawn

    fig = Figure(figsize=(7, 5.5))
    ax = fig.subplots()
    test_fold = folds.test_fold
    for i in range(folds.k):
        mask = test_fold == i
        y, s, w = folds.test.y[mask], folds.test_scores[mask], folds.test.w[mask]
        eff_s, eff_b, _ = roc_curve(y, s, w)
        ax.plot(eff_s, 1.0 - eff_b, lw=1, label=f"fold {i} (AUC = {roc_auc(y, s, w):.4f})")
    y, s, w = folds.test.y, folds.test_scores, folds.test.w
    eff_s, eff_b, _ = roc_curve(y, s, w)
    ax.plot(eff_s, 1.0 - eff_b, "k--", lw=1.5,
            label=f"all events, out of fold (AUC = {roc_auc(y, s, w):.4f})")
    ax.set_xlabel("Signal efficiency")
    ax.set_ylabel("Background rejection")
    ax.set_title(f"{folds.k}-fold: each fold scored by the model that did not train on it")
    ax.legend(loc="lower left", fontsize="small")
    fig.tight_layout()
    return fig


def write_report(result: TrainResult, path: Path) -> Path:
    """The HTML report of :func:`hepbdt.report`, with a k-fold section for k-fold models.

    The significance scan shows expected yields of the whole sample: the test weights
    x 1 / (1 - train_fraction) for a split; for k-fold, fold 0's test weights x 1 / (its
    fraction of the events), and the k-fold section scans all events (scored out of fold)."""
    from ..report import report  # matplotlib: imported only when a report is written

    train, test = result.fold_data(0)
    kfold = result.train_fold is not None
    title = result.config.title + (" (fold 0 of the k-fold training; the per-fold spread is "
                                   "in the k-fold section)" if kfold else "")
    fraction = len(test) / len(result.test) if kfold else result.test_fraction
    n_min = result.config.output.min_background_events
    return report(models_of(result.model)[0], result.labelled(train), result.labelled(test),
                  path, title=title, n_repeats=result.config.output.permutation_repeats,
                  test_fraction=fraction, min_background_events=n_min,
                  sections=[_kfold_section(FoldScores.of(result), n_min)] if kfold else ())


def _kfold_section(folds: FoldScores, min_background_events: int) -> Any:
    """The report's k-fold section: the per-fold table (with mean and spread), the best cuts
    on all events scored out of fold and the ROC curves."""
    from ..report import Section, html_table  # matplotlib: imported with the report

    rows = kfold_table(folds)
    header = list(rows[0])
    values = {key: np.array([row[key] for row in rows], dtype=float) for key in header[1:]}
    table_rows = [[row[h] for h in header] for row in rows]
    table_rows.append(["mean \u00b1 std", *(f"{cell(values[h].mean())} \u00b1 {cell(values[h].std())}"
                                             for h in header[1:])])
    k = folds.k
    text = (f"<p>{k} models; model i trained on the events with event % {k} != i and scored "
            f"the events with event % {k} == i, so every event in TestTree has the score of a "
            "model that never saw it. The sections below show fold 0.</p>"
            + html_table(header, table_rows, "kfold-table"))
    if not folds.regression:
        text += _kfold_significance(folds, min_background_events)
    figures = [] if folds.regression else [
        ("fig-kfold-roc", "ROC curve of each fold and of all events scored out of fold",
         lambda: _kfold_roc_figure(folds))]
    return Section("k-fold training", text, figures)


def _kfold_significance(folds: FoldScores, min_background_events: int) -> str:
    """Best cuts of the significance scan on all events, each scored out of fold."""
    from ..report import significance_table  # matplotlib: imported with the report

    scan = significance_scan(folds.test.y, folds.test_scores, folds.test.w,
                             min_background_events=min_background_events)
    n0 = int(np.count_nonzero(folds.test_fold == 0))
    return (f"<p id=\"kfold-significance-yields\">Best cuts on all {len(folds.test)} events, "
            f"each scored out of fold. S and B: {yield_note(1.0)} (every event scored once). "
            "Stat. unc.: sqrt(sum of w^2), MC events unweighted; a best cut leaves at least "
            f"{scan.min_background_events} background MC events and B &gt; 0. The significance "
            f"section below scans fold 0 alone ({n0} events), its test weights x 1/"
            f"{n0 / len(folds.test):.4g}.</p>" + significance_table(scan, "kfold-significance-table"))


def report_from_scores(model_path: str | os.PathLike, scores_path: str | os.PathLike,
                       output: str | os.PathLike, title: str | None = None,
                       n_repeats: int = 3,
                       min_background_events: int = DEFAULT_MIN_BACKGROUND_EVENTS) -> Path:
    """Write the HTML report again from a model file and its ``scores.root``.

    The events, features, labels (or targets) and weights are read from ``TrainTree`` and
    ``TestTree`` as ``hepbdt train`` wrote them (:func:`hepbdt.io.read_scores`), the
    features by the model's feature names (never by position); when the folder's
    manifest says another model wrote the trees, that is an error. For a k-fold model the report shows
    fold 0 and the per-fold table from the trees.

    The trees do not record the split, so the significance scan takes the test fraction
    of the events, n_test / (n_train + n_test), as the fraction of the whole sample's
    expected yield in the test weights (for k-fold: fold 0's events against all), and the
    report says so; the k-fold section scans all events, each scored out of fold (x 1).
    """
    from ..report import report  # matplotlib: imported only when a report is written

    model = load_model(model_path)
    check_model_of(scores_path, model_path)
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        raise ValueError(f"{model_path}: the model has no feature names, so its features "
                         "cannot be found in the score trees by name")
    train, train_scores = read_scores(scores_path, "TrainTree", list(names))
    test, test_scores = read_scores(scores_path, "TestTree", list(names))
    title = title or f"hepbdt report: {model_path}"
    if not isinstance(model, KFoldModel):
        return report(model, train, test, output, title=title, n_repeats=n_repeats,
                      test_fraction=None, min_background_events=min_background_events)
    branch = next((b for b in train_scores if b != "fold" and b in test_scores), None)
    if "fold" not in train_scores or branch is None:
        raise ValueError(f"{scores_path}: TrainTree needs the 'fold' and score branches of a "
                         "k-fold training")
    folds = FoldScores(model.k, train.task == "regression", train, test,
                       train_scores[branch], test_scores[branch],
                       train_scores["fold"].astype(np.int64))
    return report(model.models[0], train.take(folds.train_fold == 0),
                  test.take(folds.test_fold == 0), output,
                  title=title + " (fold 0; the per-fold spread is in the k-fold section)",
                  n_repeats=n_repeats, test_fraction=None,
                  min_background_events=min_background_events,
                  sections=[_kfold_section(folds, min_background_events)])
