"""The files a training writes: models, TMVA XML, score trees, figures and the HTML report.

:func:`write_outputs` writes all of them for a :class:`~.result.TrainResult`;
:func:`report_from_scores` writes the report again from a model file and the
``scores.root`` a training wrote. Plotting and the report import matplotlib, so they are
imported when first drawn (``hepbdt train --check`` and ``apply`` never need them). Each
step that takes a while says so through ``echo`` (the progress lines of ``hepbdt train``).
"""

from __future__ import annotations

import html
import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import uproot

from .._sklearn import fitted_params
from .._util import (
    atomic_write_text,
    differing_texts,
    dumps_strict,
    model_scores,
    percent_text,
    requested_percent,
    setting_text,
)
from ..boosting.losses import softmax_rows
from ..estimators import tree_unit
from ..evaluation import (
    DEFAULT_MIN_BACKGROUND_EVENTS,
    decorrelation_measures,
    multiclass_overtraining_test,
    resolution_vs_target,
    significance_scan,
    yield_note,
)
from ..evaluation.multiclass import class_mix_weights
from ..interop.tmva_export import to_tmva_xml
from ..io import read_scores, write_scores
from ..io.errors import InputError
from ..io.samples import check_file_version, file_version, get_tree, resolve_sources
from ..kfold import KFoldModel
from ..output_set import check_model_files, check_model_of, file_sha256, recorded_settings
from ..persistence import load_model_digest
from .config import HELD_OUT_BRANCH, AnalysisConfig, _tomllib
from .result import (
    FoldScores,
    TrainResult,
    cell,
    decorrelation_of,
    decorrelation_text,
    first_learning_curve,
    kfold_cell,
    kfold_table,
    models_of,
    ranking,
)
from .summary import overtraining_lines

__all__ = ["write_outputs", "draw_figures", "write_report", "report_from_scores",
           "provenance_of"]

Echo = Callable[[str], None] | None


def _say(echo: Echo, text: str) -> None:
    if echo is not None:
        echo(text)


def write_outputs(result: TrainResult, echo: Echo = None) -> None:
    """Write the model(s), the TMVA XML, scores.root, the figures and the report into
    ``result.output_dir``; record each in ``result.files``. ``echo`` is told of each step."""
    config, out, files = result.config, result.output_dir, result.files
    model = result.model
    model_path = out / "model.json"
    written = ["model.json"] + (["TMVA XML"] if config.output.tmva_xml else []) + ["scores.root"]
    _say(echo, f"writing {', '.join(written)}")
    if isinstance(model, KFoldModel):
        for i, path in enumerate(model.save(model_path)[:-1]):
            files[f"model_fold{i}"] = path
    else:
        model.save(model_path)
    files["model"] = model_path
    if config.output.tmva_xml:
        _write_tmva_xml(result, echo)
    files["scores"] = _write_score_trees(result, out / "scores.root")
    measures = decorrelation_of(result)
    if measures is not None:
        files["sculpting"] = out / "decorrelation.json"
        atomic_write_text(files["sculpting"], dumps_strict(  # n/a and inf as strings
            {"decorrelate": config.decorrelate, "events": _measured_events(result),
             "measures": measures.to_dict()}, indent=1) + "\n")
    if config.output.figures:
        for name, path in draw_figures(result, out / "figures",
                                       config.output.figure_formats, echo).items():
            files[f"figure:{name}"] = path
    if config.output.report:
        files["report"] = write_report(result, out / "report.html", echo)


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
    if result.config.multiclass:
        train_scores = _class_columns(result.config, result.train_scores, result.train_proba)
        test_scores = _class_columns(result.config, result.test_scores, result.test_proba)
    if result.train_fold is not None:
        if not result.config.multiclass:
            train_scores, test_scores = {branch: train_scores}, {branch: test_scores}
        train_scores = {**train_scores, "fold": result.train_fold.astype(float)}
        test_scores = {**test_scores, "fold": FoldScores.of(result).test_fold.astype(float)}
    if result.train_held_out is not None:  # the events no tree trained on, as the checks
        if not isinstance(train_scores, dict):
            train_scores = {branch: train_scores}
        train_scores = {**train_scores, HELD_OUT_BRANCH: result.train_held_out.astype(float)}
    norm = result.config.split.norm
    train_weights = ("physical event weights (as read)" if norm == "none" else
                     f"training weights, normalised per class (norm = {norm}); TestTree has "
                     "the physical ones")
    classes = result.config.classes if result.config.multiclass else None
    write_scores(path, result.labelled(result.train), train_scores, "TrainTree",
                 score_branch=branch, features=output.score_features, weights=train_weights,
                 class_names=classes)
    write_scores(path, result.labelled(result.test), test_scores, "TestTree",
                 score_branch=branch, features=output.score_features, update=True,
                 weights="physical event weights (as read)", class_names=classes)
    return path


def _class_columns(config: AnalysisConfig, raw: np.ndarray, proba: np.ndarray
                   ) -> dict[str, np.ndarray]:
    """The branches of a multi-class training: every class's raw score, then every class's
    probability (``<score_branch>_<class>``, ``<probability_branch>_<class>``)."""
    branches = config.class_branches()
    columns = {score: raw[:, k] for k, (score, _) in enumerate(branches.values())}
    columns.update({prob: proba[:, k] for k, (_, prob) in enumerate(branches.values())})
    return columns


def draw_figures(result: TrainResult, folder: Path, formats: Sequence[str] = ("png",),
                 echo: Echo = None) -> dict[str, Path]:
    """Draw the standard figures into ``folder``; return {name: path of the first format}.
    A figure whose data cannot be drawn (a plot's ValueError) is left out with a warning.

    The learning curve is computed once per training (:func:`.result.first_learning_curve`;
    a classifier's training events at the test sample's class mix) and shared with the
    report. A multi-class training's correlation matrix (all events) weighs the training
    events to the test sample's class mix too."""
    from .. import plotting  # matplotlib: imported only when figures are drawn

    test, s_te = result.test, result.test_scores
    trained, s_tr = result.trained_events()  # the report's training events, as its figures
    regression = result.config.task == "regression"
    pooled, with_training = _pooled_titles(result)
    figures: dict[str, Callable[[], Any]] = {}
    if regression:
        figures["predicted_vs_true"] = lambda: plotting.plot_predicted_vs_true(
            test.y, s_te, test.w, suptitle=pooled)
        figures["resolution"] = lambda: plotting.plot_resolution(
            resolution_vs_target(test.y, s_te, test.w), suptitle=pooled)
    elif result.config.multiclass:
        figures.update(_multiclass_figures(result, with_training))
    else:
        figures["roc"] = lambda: plotting.plot_roc_and_rejection(
            test.y, s_te, test.w, train=(trained.y, s_tr, trained.w), suptitle=with_training)
        figures["scores"] = lambda: plotting.plot_score_distributions(test.y, s_te, test.w,
                                                                      suptitle=pooled)
        figures["overtraining"] = lambda: plotting.plot_overtraining(
            *_first_fold_comparison(result), title=_first_fold_title(result))
        if result.train_fold is not None:
            figures["kfold_roc"] = lambda: _kfold_roc_figure(FoldScores.of(result))
    measures = decorrelation_of(result)
    if measures is not None:  # k-fold: every event, scored out of fold, as the scores figure
        figures["sculpting"] = lambda: plotting.plot_mass_sculpting(measures, suptitle=pooled)
        figures["decorrelation_front"] = lambda: plotting.plot_decorrelation_front(
            {"this model" if pooled is None else f"the {result.k} folds' models": measures},
            efficiency=None, suptitle=pooled)
    figures["ranking"] = lambda: plotting.plot_ranking(
        ranking(result), title=None if result.train_fold is None else
        f"Variable ranking (split gain), the mean of the {result.k} folds' models")
    # one matrix of all classes (multi-class): at the test's class mix, not the normalised one
    figures["correlation"] = lambda: plotting.plot_correlation_matrices(
        trained.X, None if regression or result.config.multiclass else trained.y,
        class_mix_weights(trained.y, trained.w, test.y, test.w) if result.config.multiclass
        else trained.w, list(result.config.features))
    figures["learning_curve"] = lambda: plotting.plot_learning_curve(
        _learning_curve(result, echo), title=None if result.train_fold is None else
        f"fold 0 of {result.k}: its model's training and test events")
    _say(echo, f"writing figures ({len(figures)}) into {folder.name}/")
    written = {}
    for name, draw in figures.items():
        try:
            figure = draw()
        except ValueError as exc:  # e.g. a class of no positive net weight to normalise
            message = f"warning: figure {name} not drawn: {exc}"
            result.warnings.append(message)
            _say(echo, message)
            continue
        written[name] = plotting.save_figure(figure, folder / name, formats)[0]
    return written


def _measured_events(result: TrainResult) -> str:
    """Whose events and scores the decorrelation measures are, as decorrelation.json says:
    the test events, or (k-fold) every event, each scored by the model that did not train
    on it."""
    pooled, _ = _pooled_titles(result)
    return "the test events" if pooled is None else pooled


def _pooled_titles(result: TrainResult) -> tuple[str | None, str | None]:
    """The titles of a k-fold training's figures of every event (and of its training
    events beside them): each scored by another model. None without k-fold."""
    if result.train_fold is None:
        return None, None
    test = (f"All events of the {result.k} folds, each scored by the model that did not "
            "train on it")
    return test, test + "; training: each model's own training events"


def _multiclass_figures(result: TrainResult, title: str | None = None
                        ) -> dict[str, Callable[[], Any]]:
    """The per-class ROC curves (one figure, ``title`` above it) and an overtraining
    figure per class (``overtraining_<class>``) of a multi-class training."""
    from .. import plotting  # matplotlib: imported only when figures are drawn

    classes = result.config.classes
    test, p_te = result.test, result.test_proba
    train, s_tr = result.trained_events()
    p_tr = softmax_rows(s_tr)
    # the training classes weighed to the test's mix, as the check compares them
    w_mix = class_mix_weights(train.y, train.w, test.y, test.w)
    figures: dict[str, Callable[[], Any]] = {
        "roc": lambda: plotting.plot_multiclass_roc(test.y, p_te, test.w, class_names=classes,
                                                    train=(train.y, p_tr, w_mix),
                                                    suptitle=title)}
    s_tr0, y_tr0, w_tr0, s_te0, y_te0, w_te0 = _first_fold_comparison(result)
    p_tr0, p_te0 = softmax_rows(s_tr0), softmax_rows(s_te0)
    check = multiclass_overtraining_test(p_tr0, y_tr0, w_tr0, p_te0, y_te0, w_te0, classes)
    w_mix0 = class_mix_weights(y_tr0, w_tr0, y_te0, w_te0)
    for k, name in enumerate(classes):
        figures[f"overtraining_{name}"] = (
            lambda k=k, name=name: plotting.plot_overtraining(
                p_tr0[:, k], y_tr0 == k, w_mix0, p_te0[:, k], y_te0 == k, w_te0,
                result=check.per_class[k], xlabel=f"P({plotting.plain_text(name)})",
                class_names=(name, "other classes"), title=_first_fold_title(result)))
    return figures


def _first_fold_title(result: TrainResult) -> str | None:
    """The overtraining figures' title for k-fold: whose p-values they print."""
    if result.train_fold is None:
        return None
    return (f"fold 0 of {result.k}: its model's training vs test events (the summary's "
            f"verdict: smallest p of {result.k} folds x {result.k})")


def _first_fold_comparison(result: TrainResult) -> tuple[np.ndarray, ...]:
    """(training scores, labels, weights, test scores, labels, weights) of the first model's
    own events, which the overtraining figures compare: the pooled k-fold copies are the
    test events again, not a second sample."""
    train, test = result.fold_data(0)
    s_tr, s_te = result.fold_scores(0)
    return s_tr, train.y, train.w, s_te, test.y, test.w


def _learning_curve(result: TrainResult, echo: Echo) -> Any:
    """The first model's learning curve, announced when it is computed (not when reused)."""
    if result.learning_curve is None:
        first = models_of(result.model)[0]
        _say(echo, f"computing the learning curve ({first.n_trees_} {tree_unit(first)}, "
                   "training and test events)")
    return first_learning_curve(result)


def _kfold_roc_figure(folds: FoldScores) -> Any:
    """ROC curve of each fold's test events and of all events scored out of fold."""
    from .. import plotting  # matplotlib: imported only when the figure is drawn

    test_fold, test = folds.test_fold, folds.test
    samples = [(f"fold {i}", test.y[test_fold == i], folds.test_scores[test_fold == i],
                test.w[test_fold == i], "-") for i in range(folds.k)]
    samples.append(("all events, out of fold", test.y, folds.test_scores, test.w, "k--"))
    return plotting.plot_roc_curves(
        samples, title=f"{folds.k}-fold: each fold scored by the model that did not train on it")


def write_report(result: TrainResult, path: Path, echo: Echo = None) -> Path:
    """The HTML report of :func:`hepbdt.report`, with its provenance (:func:`provenance_of`)
    and a k-fold section for k-fold models.

    The significance scan shows expected yields of the whole sample: each sample's test
    weights x its events / its test events (:func:`hepbdt.evaluation.metrics.split_yields`;
    fold 0's events for k-fold), and the k-fold section scans all events (scored out of
    fold, x 1)."""
    from ..report import report  # matplotlib: imported only when a report is written

    train, test = result.fold_data(0, trained=False)  # the yields count the held-out events
    kfold = result.train_fold is not None
    folds = FoldScores.of(result) if kfold else None
    title = result.config.title + (" (fold 0 of the k-fold training; the per-fold spread is "
                                   "in the k-fold section)" if kfold else "")
    fraction = 1.0 / result.k if kfold else result.test_fraction  # nominal: fold 0's is 1/k
    n_min = result.config.output.min_background_events
    curve = _learning_curve(result, echo)
    _say(echo, f"writing {path.name}")
    return report(models_of(result.model)[0], result.labelled(train), result.labelled(test),
                  path, title=title, n_repeats=result.config.output.permutation_repeats,
                  test_fraction=fraction, min_background_events=n_min,
                  sections=([_kfold_section(folds, n_min)] if folds else [])
                  + _decorrelation_section(result),
                  provenance=provenance_of(result), learning_curve=curve,
                  figure_files=_drawn_figures(result), held_out=result.fold_held_out(0),
                  summary_verdict=_kfold_verdict(folds))


def _kfold_verdict(folds: FoldScores | None) -> tuple[Any, str] | None:
    """The report summary's overtraining verdict of a k-fold classification, summary.txt's:
    every fold's model on its own events (the report's other sections show fold 0's)."""
    if folds is None or folds.regression:
        return None
    return (folds.combined_overtraining(), f"summary.txt's, over the {folds.k} folds: each "
            f"fold's model on its own events, the smallest p-value x {folds.k}; the "
            "overtraining section shows fold 0's")


# The figures draw_figures writes that the report shows as they are (same events, scores
# and model): report figure id -> figure name.
_SHARED_FIGURES = {"fig-roc": "roc", "fig-scores": "scores", "fig-overtraining": "overtraining",
                   "fig-ranking": "ranking", "fig-correlation": "correlation",
                   "fig-learning-curve": "learning_curve",
                   "fig-predicted-vs-true": "predicted_vs_true", "fig-resolution": "resolution"}


def _drawn_figures(result: TrainResult) -> dict[str, Path]:
    """The PNG figures already written that the report can embed instead of drawing them
    again; none for k-fold, whose figures show all folds where the report shows fold 0."""
    if result.train_fold is not None:
        return {}
    drawn = {fig_id: result.files.get(f"figure:{name}")
             for fig_id, name in _SHARED_FIGURES.items()}
    return {fig_id: path for fig_id, path in drawn.items()
            if path is not None and path.suffix == ".png"}


def provenance_of(result: TrainResult) -> Any:
    """The report's :class:`~hepbdt.report.Provenance` of a training: the command, the
    configuration file and its text, the samples' files (with tree and entry count), cuts
    and weights, features, aliases, the split and the SHA-256 of the model files written."""
    from ..report import Provenance  # matplotlib: imported with the report

    config = result.config
    try:
        text: str | None = config.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = None
    split = config.split
    scheme = (f"{split.kfold}-fold by event number ({result.kfold_by})" if split.kfold else
              f"{split.mode}, train_fraction {setting_text(split.train_fraction)}, seed {split.seed}")
    keys = ["model", *(key for key in result.files if key.startswith("model_fold"))]
    models = {result.files[key].name: file_sha256(result.files[key]) for key in keys
              if key in result.files}
    return Provenance(
        command=_command(config, text), config_path=str(config.path), config_text=text,
        samples=[_sample_provenance(config, s) for s in config.samples],
        features=dict(zip(config.features, config.feature_expressions, strict=True)),
        aliases=dict(config.aliases), split=scheme,
        training_weights=("as read: physical weights" if split.norm == "none" else
                          f"normalised per class (norm = {split.norm}, TMVA's NormMode), so "
                          "their sums are not expected yields"),
        model_files=models, notes=_fold_models_note(result.model))


def _fold_models_note(model: Any) -> dict[str, str]:
    """The provenance row of a k-fold model's folds and their trees (the report's "model"
    row describes fold 0's, whose tree count alone is not the training's); none else."""
    if not isinstance(model, KFoldModel):
        return {}
    folds = ", ".join(f"fold {i}: {m.n_trees_} {tree_unit(m)}"
                      for i, m in enumerate(model.models))
    return {"fold models": f"{folds} (the model row is fold 0's)"}


def _sample_provenance(config: AnalysisConfig, sample: Any) -> Any:
    """A sample's files (each tree with its entry count, read from the file's header),
    class or target, cut, weight and scale."""
    from ..report import InputFile, SampleProvenance  # matplotlib: imported with the report

    files = []
    try:
        sources = resolve_sources(sample.files, sample.tree, f"sample {sample.name!r}")
    except InputError:
        sources = []
        files = [InputFile(path) for path in sample.files]
    for source in sources:
        try:
            with uproot.open(source.path) as handle:
                tree = get_tree(handle, source, f"sample {sample.name!r}")
                name = tree.object_path.lstrip("/")  # with its cycle where one was named
                if ";" not in (source.tree or ""):
                    name = name.split(";")[0]
                files.append(InputFile(source.path, name, int(tree.num_entries)))
        except (OSError, ValueError):
            files.append(InputFile(source.path, source.tree))
    role = (f"target: {sample.target}" if sample.target is not None else
            str(sample.class_name))
    return SampleProvenance(sample.name, role, files, sample.cut, sample.weight, sample.scale)


def _command(config: AnalysisConfig, text: str | None) -> str:
    """``hepbdt train CONFIG [--set KEY=VALUE ...] [--output DIR]`` that gives the same
    configuration: the --set options are the keys whose values differ from the file's."""
    words = ["hepbdt", "train", str(config.path)]
    toml = _tomllib()
    try:
        original = toml.loads(text) if text is not None else None
    except toml.TOMLDecodeError:
        original = None
    if original is not None:
        words += [w for key, value in _overrides(original, config.document, "")
                  for w in ("--set", f"{key}={_toml_value(value)}")]
    directory = config.output.directory
    if directory is not None and str(directory) != str(
            config.document.get("output", {}).get("directory")):
        words += ["--output", str(directory)]
    return shlex.join(words)


def _overrides(original: Mapping[str, Any], effective: Mapping[str, Any], prefix: str
               ) -> list[tuple[str, Any]]:
    """(dotted key, value) of every value of ``effective`` that ``original`` lacks or holds
    otherwise (keys an override removed, such as a replaced split scheme, are implied)."""
    found = []
    for key, value in effective.items():
        dotted = f"{prefix}{key}"
        before = original.get(key) if isinstance(original, Mapping) else None
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            found += _overrides(before, value, dotted + ".")
        elif key not in original or before != value:
            found.append((dotted, value))
    return found


def _toml_value(value: Any) -> str:
    """A value as TOML writes it (strings in JSON's quoting, which TOML reads alike)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def _decorrelation_section(result: TrainResult) -> list[Any]:
    """The report's decorrelation section: the rejection and JSD table and the figures."""
    measures = decorrelation_of(result)
    if measures is None:
        return []
    return [_measures_section(measures, result.config.params, result.config.decorrelate,
                              result.k if result.train_fold is not None else None)]


def decorrelation_settings(config: AnalysisConfig) -> dict[str, Any]:
    """What ``hepbdt report`` needs of a training's ``decorrelate`` variables to rebuild its
    decorrelation section from the score trees (recorded in the output set's manifest):
    their expressions, and the feature name of the first, the one measured (None when it is
    no feature, so the trees do not hold it)."""
    if not config.decorrelate or config.task != "classification" or config.multiclass:
        return {}
    first = config.decorrelate[0]
    expressions = list(config.feature_expressions)
    feature = config.features[expressions.index(first)] if first in expressions else None
    return {"decorrelate": list(config.decorrelate), "decorrelate_feature": feature}


def _rebuilt_decorrelation(settings: Mapping[str, Any], params: dict[str, Any], test: Any,
                           score: np.ndarray, k: int | None = None) -> list[Any]:
    """``hepbdt report``'s decorrelation section: the training's measures rebuilt from the
    test events of the score trees (a k-fold training's ``k`` folds: every event, scored out
    of fold), or a note where the variable is not in them."""
    decorrelate = settings.get("decorrelate")
    if not decorrelate:
        return []
    from ..report import Section  # matplotlib: imported with the report

    feature = settings.get("decorrelate_feature")
    names = list(test.feature_names or [])
    if feature not in names:
        return [Section("Mass decorrelation", (
            f"<p>Not shown: {html.escape(str(decorrelate[0]))} is not among the model's "
            "features, so the score trees do not hold it. The training's measures are in its "
            "<code>decorrelation.json</code> and report.</p>"))]
    measures = decorrelation_measures(score, test.y, np.asarray(test.X)[:, names.index(feature)]
                                      .astype(np.float64), test.w, variable=str(decorrelate[0]))
    return [_measures_section(measures, params, [str(d) for d in decorrelate], k)]


def _measures_section(measures: Any, params: dict[str, Any], decorrelate: Sequence[str],
                      k: int | None = None) -> Any:
    """The decorrelation section of ``measures``: the table and the two figures; ``k``: of
    a k-fold training, whose measures are of every event, scored out of fold."""
    from .. import plotting
    from ..report import Section, html_table  # matplotlib: imported with the report

    header = ["signal efficiency", "kept by the cut", "background rejection (1/eff_B)",
              "1/JSD background", "1/JSD signal"]
    rows = [[requested_percent(r["signal_efficiency"]), percent_text(r["achieved_signal_efficiency"]),
             cell(r["background_rejection"]), cell(r["inverse_jsd"]),
             cell(r["inverse_signal_jsd"])] for r in measures.rows()]
    text = (f"<p>Decorrelation: {html.escape(decorrelation_text(params))}, from "
            f"{html.escape(', '.join(decorrelate))}. "
            + ("Test events" if k is None else f"All events of the {k} folds, each scored by "
               "the model that did not train on it (not fold 0 alone, as the other sections)")
            + ", cut at each "
            f"signal efficiency; JSD (base 2) between the {html.escape(measures.variable)} "
            "histogram "
            f"({measures.mass_edges.size - 1} bins) before and after the cut.</p>"
            + html_table(header, rows, "decorrelation-table"))
    return Section("Mass decorrelation", text, [
        ("fig-sculpting", f"{measures.variable} after cuts at fixed signal efficiency",
         lambda: plotting.plot_mass_sculpting(measures)),
        ("fig-decorrelation-front", "Background rejection against 1/JSD",
         lambda: plotting.plot_decorrelation_front(
             {"this model" if k is None else f"the {k} folds' models": measures},
             efficiency=None))])


def _kfold_section(folds: FoldScores, min_background_events: int) -> Any:
    """The report's k-fold section: the per-fold table (with mean and spread), the best cuts
    on all events scored out of fold and the ROC curves."""
    from ..report import Section, html_table  # matplotlib: imported with the report

    rows = kfold_table(folds)
    header = list(rows[0])
    values = {key: np.array([row[key] for row in rows], dtype=float) for key in header[1:]}
    table_rows = [[kfold_cell(h, row[h], folds) for h in header] for row in rows]
    table_rows.append(["mean \u00b1 std", *(f"{kfold_cell(h, values[h].mean(), folds)} \u00b1 "
                                             f"{cell(values[h].std())}" for h in header[1:])])
    k = folds.k
    text = (f"<p>{k} models; model i trained on the events with event % {k} != i and scored "
            f"the events with event % {k} == i, so every event in TestTree has the score of a "
            "model that never saw it. The other sections, the summary too, show fold 0 "
            "unless they say otherwise.</p>"
            + html_table(header, table_rows, "kfold-table"))
    if not folds.regression:
        lines = overtraining_lines(folds.combined_overtraining(), k)
        text += ("<p>The overtraining verdict of the training (summary.txt's), over the "
                 f"{k} folds; the overtraining section below checks fold 0 alone:</p>"
                 f'<pre id="kfold-overtraining">{html.escape(chr(10).join(lines))}</pre>')
    two_class = not folds.regression and folds.classes is None
    if two_class:
        text += _kfold_significance(folds, min_background_events)
    figures = [] if not two_class else [
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
            f"Stat. unc.: sqrt(sum of w^2), MC events unweighted; {html.escape(scan.rule_text)}. "
            "The significance "
            f"section below scans fold 0 alone ({n0} events), each sample's test weights x its "
            "events / its fold-0 events.</p>" + significance_table(scan, "kfold-significance-table"))


def report_from_scores(model_path: str | os.PathLike, scores_path: str | os.PathLike,
                       output: str | os.PathLike, title: str | None = None,
                       n_repeats: int | None = None,
                       min_background_events: int | None = None) -> Path:
    """Write the HTML report again from a model file and its ``scores.root``.

    ``n_repeats`` and ``min_background_events``: None takes the training's, as the output
    set's manifest records them (else 3 and DEFAULT_MIN_BACKGROUND_EVENTS), so the best
    cuts are the ones train reported.

    The events, features, labels (or targets) and weights are read from ``TrainTree`` and
    ``TestTree`` as ``hepbdt train`` wrote them (:func:`hepbdt.io.read_scores`), the
    features by the model's feature names (never by position); when the folder's
    manifest says another model wrote the trees, that is an error. For a k-fold model the report shows
    fold 0 and the per-fold table from the trees.

    The trees do not record the split, so the significance scan takes the test events as a
    split of the training and test events: each sample's test weights x its events / its
    test events (for k-fold: fold 0's events against all), and the report says so; the
    k-fold section scans all events, each scored out of fold (x 1).
    """
    from ..report import report  # matplotlib: imported only when a report is written

    settings = recorded_settings(scores_path)
    if n_repeats is None:
        n_repeats = int(settings.get("permutation_repeats", 3))
    if min_background_events is None:
        min_background_events = int(settings.get("min_background_events",
                                                 DEFAULT_MIN_BACKGROUND_EVENTS))
    model, model_read = load_model_digest(model_path)
    check_model_files(model_path)  # a k-fold model's fold files as its own set recorded them
    check_model_of(scores_path, model_path)  # the scores' set: its model and fold files
    names = getattr(model, "feature_names_in_", None)
    if names is None:
        raise ValueError(f"{model_path}: the model has no feature names, so its features "
                         "cannot be found in the score trees by name")
    # the digests the provenance records are of the files read (a training swapping a new
    # set into the folder meanwhile gave the new files' beside the old model's numbers)
    scores_version, scores_sha256 = file_version(os.fspath(scores_path)), file_sha256(scores_path)
    train, train_scores = read_scores(scores_path, "TrainTree", list(names))
    test, test_scores = read_scores(scores_path, "TestTree", list(names))
    check_file_version(os.fspath(scores_path), scores_version, "the report")
    for tree, data, recorded in (("TrainTree", train, train_scores), ("TestTree", test, test_scores)):
        _check_recorded_scores(model, f"{os.fspath(scores_path)}:{tree}", data, recorded,
                               tree == "TestTree")
    title = title or f"hepbdt report: {model_path}"
    provenance = _scores_provenance(model_path, scores_path, output, len(train), len(test), model,
                                    {Path(model_path).name: model_read.file_sha256[0],
                                     Path(scores_path).name: scores_sha256})
    held = train_scores.get(HELD_OUT_BRANCH)  # n_trees="auto"'s held-out events: no tree's
    held = None if held is None else np.asarray(held) != 0
    binned = bool(settings.get("binned", False))  # the trees hold the bins' lower edges
    if not isinstance(model, KFoldModel):
        return report(model, train, test, output, title=title, n_repeats=n_repeats,
                      test_fraction=None, min_background_events=min_background_events,
                      sections=_rebuilt_decorrelation(settings, fitted_params(model), test,
                                                      model_scores(model, test.X)),
                      provenance=provenance, held_out=held, binned=binned)
    branch = next((b for b in train_scores if b != "fold" and b in test_scores), None)
    if "fold" not in train_scores or branch is None:
        raise ValueError(f"{scores_path}: TrainTree needs the 'fold' and score branches of a "
                         "k-fold training")
    classes = [str(c) for c in getattr(model.models[0], "classes_", [])]
    if len(classes) > 2:  # raw scores <score_branch>_<class>, written first, class by class
        prefix = branch.removesuffix(f"_{classes[0]}")
        columns = [f"{prefix}_{c}" for c in classes]
        if any(c not in train_scores or c not in test_scores for c in columns):
            raise ValueError(f"{scores_path}: the trees lack the score branches {columns} of "
                             "the model's classes")
        train_raw = np.column_stack([train_scores[c] for c in columns])
        test_raw = np.column_stack([test_scores[c] for c in columns])
    else:
        classes, train_raw, test_raw = [], train_scores[branch], test_scores[branch]
    folds = FoldScores(model.k, train.task == "regression", train, test, train_raw, test_raw,
                       train_scores["fold"].astype(np.int64), classes or None, held)
    first = folds.train_fold == 0
    return report(model.models[0], train.take(first),
                  test.take(folds.test_fold == 0), output,
                  held_out=None if held is None else held[first],
                  title=title + " (fold 0; the per-fold spread is in the k-fold section)",
                  n_repeats=n_repeats, test_fraction=None,
                  min_background_events=min_background_events,
                  sections=[_kfold_section(folds, min_background_events)]
                  + _rebuilt_decorrelation(settings, fitted_params(model.models[0]), test,
                                           np.asarray(test_raw, np.float64), model.k),
                  provenance=provenance, binned=binned, summary_verdict=_kfold_verdict(folds))


def _check_recorded_scores(model: Any, where: str, data: Any, recorded: dict[str, np.ndarray],
                           test: bool) -> None:
    """InputError unless the scores a tree recorded are ``model``'s of the tree's features
    (each k-fold copy's by the fold model it names; a test event's fold its event number's):
    the manifest that names the model of a scores.root lies beside it only while the file
    stays in its folder, and a copy of another training's trees would be reported silently
    (its "test" events partly this model's training events)."""
    fitted = model.models[0] if isinstance(model, KFoldModel) else model
    regressor = getattr(fitted, "_estimator_type", None) == "regressor"
    if regressor != (data.task == "regression"):
        raise InputError(f"{where} holds a {data.task}'s events, and the model is a "
                         f"{'regressor' if regressor else 'classifier'}; give the scores.root "
                         "of this model's training")
    k = len(getattr(fitted, "classes_", ()))
    columns = [b for b in recorded if b not in ("fold", HELD_OUT_BRANCH)][:k if k > 2 else 1]
    if not columns:
        raise InputError(f"{where} has no score branch; give the scores.root hepbdt train wrote")
    written = np.column_stack([recorded[b] for b in columns])
    if isinstance(model, KFoldModel):
        if "fold" not in recorded:
            raise InputError(f"{where} was written by a training of one model, not a k-fold "
                             f"one; give the scores.root of this {model.k}-fold model")
        fold = recorded["fold"].astype(np.int64)
        if test and not np.array_equal(fold, model.folds(data.event)):
            raise InputError(f"{where}: its events' folds are not event % {model.k}: the trees "
                             f"are of another k-fold training; give this model's scores.root")
        if fold.size and not 0 <= fold.min() <= fold.max() < model.k:
            raise InputError(f"{where} holds folds up to {fold.max()}, and the model has "
                             f"{model.k}; give the scores.root of this k-fold training")
        scores = np.empty_like(written)
        for i, fold_model in enumerate(model.models):
            rows = fold == i
            scores[rows] = model_scores(fold_model, data.X[rows]).reshape(-1, written.shape[1])
    elif "fold" in recorded:
        raise InputError(f"{where} was written by a k-fold training; give the k-fold manifest "
                         "of that training as the model")
    else:
        scores = model_scores(model, data.X).reshape(written.shape)
    off = np.abs(scores - written) > 1e-9 * (1 + np.abs(written))
    if off.any():
        row, col = (int(i) for i in np.argwhere(off)[0])  # a score that differs, shown so
        shown = differing_texts(written[row, col], scores[row, col])
        which = f", {columns[col]}" if written.shape[1] > 1 else ""
        raise InputError(
            f"{where} was written by another model: {int(off.any(axis=1).sum()):,} of its "
            f"{len(written):,} events have another score than this model gives (event "
            f"{data.event[row]}{which}: {shown[0]} recorded, {shown[1]} now); "
            "give the model and the scores.root of the same training")


def _scores_provenance(model_path: str | os.PathLike, scores_path: str | os.PathLike,
                       output: str | os.PathLike, n_train: int, n_test: int, model: Any,
                       digests: dict[str, str]) -> Any:
    """The provenance of a report written again from a model file (``model``, loaded) and
    its score trees (``digests``: the SHA-256 of each file's bytes as read)."""
    from ..report import InputFile, Provenance, SampleProvenance  # imported with the report

    scores = os.fspath(scores_path)
    return Provenance(
        command=shlex.join(["hepbdt", "report", os.fspath(model_path), scores, "--output",
                            os.fspath(output)]),
        samples=[SampleProvenance("training events", "as written by hepbdt train",
                                  [InputFile(scores, "TrainTree", n_train)]),
                 SampleProvenance("test events", "as written by hepbdt train",
                                  [InputFile(scores, "TestTree", n_test)])],
        training_weights="as stored in TrainTree by hepbdt train (normalised as its "
                         "configuration's [split] norm said)",
        model_files=digests,
        notes={"written from": "the model file and the score trees of a training; its "
                               "configuration is not stored with them",
               **_fold_models_note(model)})
