"""Train an analysis from its configuration and write everything an analysis needs.

:func:`train` takes a checked :class:`~hepbdt.config.AnalysisConfig`, reads the samples,
splits them (or builds k folds by event number), fits the model(s) and writes, into the
output folder: the model (JSON; k fold models and a manifest for k-fold), the TMVA XML,
the score trees (``scores.root``: ``TrainTree``, ``TestTree``), the figures, the HTML
report and ``summary.txt`` (the text printed at the end). :class:`KFoldModel` holds the k
models of a k-fold training and :func:`load` reads a model file of either kind.
:func:`report_from_scores` rebuilds the report from a model and its score trees.
Nothing here parses the configuration (:mod:`hepbdt.config`) or the command line
(:mod:`hepbdt.cli`).
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hepbdt.config import AnalysisConfig
from hepbdt.io import Dataset, read, write_scores
from hepbdt.model import ModelFormatError, atomic_write_text

__all__ = ["KFoldModel", "TrainResult", "train", "load", "report_from_scores", "KFOLD_FORMAT"]

KFOLD_FORMAT = "hepbdt-kfold"
KFOLD_FORMAT_VERSION = 1


class KFoldModel:
    """The k models of a k-fold training: model ``i`` scores the events with
    ``event % k == i``, the events it never saw.

    Parameters
    ----------
    models : k fitted estimators with the same features.
    by : the event-number expression the folds are taken from (``"event"``).
    """

    kind = "kfold"

    def __init__(self, models: Sequence[Any], by: str = "event") -> None:
        self.models = list(models)
        if len(self.models) < 2:
            raise ValueError("a KFoldModel needs at least two models")
        names = [list(m.feature_names_in_) for m in self.models]
        if any(n != names[0] for n in names):
            raise ValueError("the fold models use different features")
        self.by = by

    @property
    def k(self) -> int:
        return len(self.models)

    @property
    def feature_names_in_(self) -> list[str]:
        return list(self.models[0].feature_names_in_)

    def folds(self, event: Any) -> np.ndarray:
        """Fold number of each event: ``event % k``."""
        return np.mod(np.asarray(event, dtype=np.int64), self.k)

    def decision_function(self, X: Any, event: Any) -> np.ndarray:
        """Score of each event by the model that did not train on it (float64, (n,))."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        folds = self.folds(event)
        if folds.shape != (X.shape[0],):
            raise ValueError(f"event has shape {folds.shape}; X has {X.shape[0]} events")
        scores = np.empty(X.shape[0], dtype=np.float64)
        for i, model in enumerate(self.models):
            mask = folds == i
            if mask.any():
                scores[mask] = model.decision_function(X[mask])
        return scores

    def fold_paths(self, path: str | os.PathLike) -> list[Path]:
        """Where :meth:`save` writes the fold models for a manifest at ``path``."""
        path = Path(path)
        stem = path.name[:-5] if path.name.endswith(".json") else path.name
        return [path.with_name(f"{stem}_fold{i}.json") for i in range(self.k)]

    def save(self, path: str | os.PathLike) -> list[Path]:
        """Write each fold model as JSON beside ``path`` and the manifest at ``path``.

        The manifest: ``{"format": "hepbdt-kfold", "kind": "kfold", "k": k, "by": "event",
        "models": ["model_fold0.json", ...], "features": [...]}``; model paths are relative
        to the manifest's folder.
        """
        paths = self.fold_paths(path)
        for model, fold_path in zip(self.models, paths, strict=True):
            model.save(fold_path)
        manifest = {
            "format": KFOLD_FORMAT, "format_version": KFOLD_FORMAT_VERSION, "kind": "kfold",
            "k": self.k, "by": self.by, "models": [p.name for p in paths],
            "features": self.feature_names_in_,
        }
        atomic_write_text(path, json.dumps(manifest, indent=1) + "\n")
        return [*paths, Path(path)]

    @classmethod
    def from_manifest(cls, path: str | os.PathLike, doc: dict[str, Any]) -> KFoldModel:
        from hepbdt.model import load_model

        where = os.fspath(path)
        if doc.get("format_version") != KFOLD_FORMAT_VERSION:
            raise ModelFormatError(f"{where}: k-fold manifest format_version "
                                   f"{doc.get('format_version')!r} is not supported (this "
                                   f"hepbdt reads {KFOLD_FORMAT_VERSION})")
        files = doc.get("models")
        k = doc.get("k")
        if not isinstance(files, list) or not isinstance(k, int) or len(files) != k or k < 2:
            raise ModelFormatError(f"{where}: a k-fold manifest needs k >= 2 and k model files "
                                   "in 'models'")
        by = doc.get("by", "event")
        if not isinstance(by, str):
            raise ModelFormatError(f"{where}: 'by' must be the event-number expression")
        base = Path(path).parent
        return cls([load_model(base / name) for name in files], by=by)

    def __repr__(self) -> str:
        return f"KFoldModel(k={self.k}, by={self.by!r}, {type(self.models[0]).__name__})"


def load(path: str | os.PathLike) -> Any:
    """Load a model file: a fitted estimator, or a :class:`KFoldModel` from a manifest
    (the same as :func:`hepbdt.load_model`)."""
    from hepbdt.model import load_model

    return load_model(path)


@dataclass
class TrainResult:
    """What :func:`train` produced: models, data, scores, files written and the summary."""

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


def _stack(parts: Sequence[Dataset]) -> Dataset:
    first = parts[0]
    return Dataset(
        np.concatenate([p.X for p in parts]),
        y=None if first.y is None else np.concatenate([p.y for p in parts]),
        w=np.concatenate([p.w for p in parts]),
        sample_index=np.concatenate([p.sample_index for p in parts]),
        event=np.concatenate([p.event for p in parts]),
        feature_names=first.feature_names, sample_names=first.sample_names,
        task=None if first.task == "unlabelled" else first.task,
    )


def _say(echo: Callable[[str], None] | None, text: str) -> None:
    if echo is not None:
        echo(text)


def default_output_dir(config: AnalysisConfig) -> Path:
    """``[output] directory``, else ``./hepbdt-<config file stem>``."""
    return config.output.directory or Path(f"hepbdt-{config.path.stem}")


def train(config: AnalysisConfig, *, progress: bool | None = None,
          echo: Callable[[str], None] | None = None) -> TrainResult:
    """Read, split (or k-fold), fit, and write every output of an analysis.

    Parameters
    ----------
    config : from :func:`hepbdt.config.load_config` (check inputs first with
        :func:`hepbdt.config.check_inputs` to fail before any work).
    progress : progress lines on stderr while reading and training; None: on a terminal.
    echo : called with each line of progress text and with the summary (e.g. ``print``).

    Returns
    -------
    TrainResult; ``files`` maps each output ("model", "tmva_xml", "scores", "report",
    "summary", "figure:<name>") to its path.
    """
    out = default_output_dir(config)
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    data = read(config.make_samples(), config.feature_expressions, event=config.event,
                inf_as_missing=config.inf_as_missing, progress=progress)
    timings["read"] = time.perf_counter() - start
    _say(echo, f"read {len(data):,} events of {len(config.samples)} samples in "
               f"{timings['read']:.1f} s")

    start = time.perf_counter()
    split = config.split
    regression = config.task == "regression"
    if split.kfold:
        models, train_parts, train_scores, train_fold = [], [], [], []
        test_scores = np.empty(len(data), dtype=np.float64)
        folds = data.folds(split.kfold)
        for i, (train_i, test_i) in enumerate(data.kfold(split.kfold, norm=split.norm)):
            _say(echo, f"training fold {i + 1}/{split.kfold} on {len(train_i):,} events")
            model = config.make_estimator().fit(train_i.X, train_i.y, train_i.w)
            model.feature_names_in_ = list(config.feature_expressions)
            models.append(model)
            train_parts.append(train_i)
            train_scores.append(_score(model, train_i.X))
            train_fold.append(np.full(len(train_i), i, dtype=np.int64))
            test_scores[folds == i] = _score(model, test_i.X)
        model_out: Any = KFoldModel(models, by=config.event or "event")
        train_set = _stack(train_parts)
        train_score = np.concatenate(train_scores)
        fold_of_train: np.ndarray | None = np.concatenate(train_fold)
        test_set = data
    else:
        train_set, test_set = data.split(split.mode, split.train_fraction, split.seed,
                                         norm=split.norm)
        _say(echo, f"training on {len(train_set):,} events, testing on {len(test_set):,}")
        model_out = config.make_estimator().fit(train_set.X, train_set.y, train_set.w)
        model_out.feature_names_in_ = list(config.feature_expressions)
        train_score = _score(model_out, train_set.X)
        test_scores = _score(model_out, test_set.X)
        fold_of_train = None
    timings["train"] = time.perf_counter() - start
    _say(echo, f"trained in {timings['train']:.1f} s")

    result = TrainResult(config, out, model_out, train_set, test_set, train_score, test_scores,
                         fold_of_train, timings=timings)
    start = time.perf_counter()
    _write_outputs(result, regression, echo)
    timings["outputs"] = time.perf_counter() - start
    result.summary = summarise(result)
    atomic_write_text(out / "summary.txt", result.summary + "\n")
    result.files["summary"] = out / "summary.txt"
    return result


def _score(model: Any, X: np.ndarray) -> np.ndarray:
    return np.asarray(model.decision_function(X), dtype=np.float64)


def _models(model: Any) -> list[Any]:
    return model.models if isinstance(model, KFoldModel) else [model]


def _labelled(config: AnalysisConfig, data: Dataset) -> Dataset:
    """The same events with the features named as written in the config (aliases kept)."""
    return data.replace(feature_names=list(config.features))


def _write_outputs(result: TrainResult, regression: bool,
                   echo: Callable[[str], None] | None) -> None:
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
        from hepbdt.interop import to_tmva_xml

        for i, fold_model in enumerate(_models(model)):
            name = "model.weights.xml" if len(_models(model)) == 1 else (
                f"model_fold{i}.weights.xml")
            try:
                to_tmva_xml(fold_model, out / name)
                files["tmva_xml" if i == 0 else f"tmva_xml_fold{i}"] = out / name
            except (ValueError, NotImplementedError) as exc:
                message = f"warning: no TMVA XML written: {exc}"
                result.warnings.append(message)
                _say(echo, message)
                break

    branch = config.output.score_branch
    train_scores: Any = result.train_scores
    test_scores: Any = result.test_scores
    if result.train_fold is not None:
        train_scores = {branch: result.train_scores, "fold": result.train_fold.astype(float)}
        test_scores = {branch: result.test_scores,
                       "fold": np.mod(result.test.event, len(_models(model))).astype(float)}
    scores_path = out / "scores.root"
    features = config.output.score_features
    write_scores(scores_path, _labelled(config, result.train), train_scores, "TrainTree",
                 score_branch=branch, features=features)
    write_scores(scores_path, _labelled(config, result.test), test_scores, "TestTree",
                 score_branch=branch, features=features, update=True)
    files["scores"] = scores_path

    if config.output.figures:
        for name, path in draw_figures(result, out / "figures",
                                       config.output.figure_formats).items():
            files[f"figure:{name}"] = path
    if config.output.report:
        files["report"] = write_report(result, out / "report.html")


# -- figures and report ------------------------------------------------------------------


def _ranking(result: TrainResult) -> Any:
    """TMVA-style ranking; for k folds the mean of the folds' normalised importances."""
    from hepbdt.evaluation import FeatureRanking, tmva_importance

    names = list(result.config.features)
    rankings = [tmva_importance(m, names) for m in _models(result.model)]
    if len(rankings) == 1:
        return rankings[0]
    return FeatureRanking(
        feature_names=names,
        importance=np.mean([r.importance for r in rankings], axis=0),
        split_count=np.sum([r.split_count for r in rankings], axis=0),
        total_gain=np.sum([r.total_gain for r in rankings], axis=0),
        cover=np.sum([r.cover for r in rankings], axis=0),
    )


def draw_figures(result: TrainResult, folder: Path, formats: Sequence[str] = ("png",)
                 ) -> dict[str, Path]:
    """Draw the standard figures into ``folder``; return {name: path of the first format}."""
    from hepbdt import plotting
    from hepbdt.evaluation import learning_curve, overtraining_test, resolution_vs_target

    train, test = result.train, result.test
    s_tr, s_te = result.train_scores, result.test_scores
    names = list(result.config.features)
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
    figures["ranking"] = lambda: plotting.plot_ranking(_ranking(result))
    figures["correlation"] = lambda: plotting.plot_correlation_matrices(
        train.X, None if regression else train.y, train.w, names)
    first_model = _models(result.model)[0]
    first_train, first_test = _fold_data(result, 0)
    figures["learning_curve"] = lambda: plotting.plot_learning_curve(
        learning_curve(first_model, first_train, first_test))
    written = {}
    for name, draw in figures.items():
        paths = plotting.save_figure(draw(), folder / name, formats)
        written[name] = paths[0]
    return written


def _fold_data(result: TrainResult, i: int) -> tuple[Dataset, Dataset]:
    """The training and test events of fold ``i`` (the whole sets without k-fold)."""
    if result.train_fold is None:
        return result.train, result.test
    k = len(_models(result.model))
    return (result.train.take(result.train_fold == i),
            result.test.take(np.mod(result.test.event, k) == i))


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

    @classmethod
    def of(cls, result: TrainResult) -> FoldScores:
        return cls(len(_models(result.model)), result.config.task == "regression",
                   result.train, result.test, result.train_scores, result.test_scores,
                   result.train_fold)

    @property
    def test_fold(self) -> np.ndarray:
        return np.mod(self.test.event, self.k)


def kfold_table(folds: FoldScores) -> list[dict[str, Any]]:
    """Per-fold quality: events, test and training AUC (or RMSE), KS p-values."""
    from hepbdt.evaluation import overtraining_test, regression_metrics, roc_auc

    rows = []
    for i in range(folds.k):
        tr = folds.train_fold == i
        te = folds.test_fold == i
        row: dict[str, Any] = {"fold": i, "train events": int(tr.sum()),
                               "test events": int(te.sum())}
        y_tr, w_tr, s_tr = folds.train.y[tr], folds.train.w[tr], folds.train_scores[tr]
        y_te, w_te, s_te = folds.test.y[te], folds.test.w[te], folds.test_scores[te]
        if folds.regression:
            row["test RMSE"] = regression_metrics(y_te, s_te, w_te).rmse
            row["train RMSE"] = regression_metrics(y_tr, s_tr, w_tr).rmse
        else:
            row["test AUC"] = roc_auc(y_te, s_te, w_te)
            row["train AUC"] = roc_auc(y_tr, s_tr, w_tr)
            check = overtraining_test(s_tr, y_tr, w_tr, s_te, y_te, w_te)
            row["KS p (signal)"] = check.signal.ks_pvalue
            row["KS p (background)"] = check.background.ks_pvalue
        rows.append(row)
    return rows


def _kfold_roc_figure(folds: FoldScores) -> Any:
    from matplotlib.figure import Figure

    from hepbdt.evaluation import roc_auc, roc_curve

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
    """The HTML report of :func:`hepbdt.report`, plus a k-fold section for k-fold models."""
    from hepbdt.report import report

    model = _models(result.model)[0]
    train, test = _fold_data(result, 0)
    config = result.config
    kfold = result.train_fold is not None
    title = config.title + (" (fold 0 of the k-fold training; the per-fold spread is in the "
                            "k-fold section)" if kfold else "")
    report(model, _labelled(config, train), _labelled(config, test), path, title=title,
           n_repeats=config.output.permutation_repeats)
    if kfold:
        add_kfold_section(path, FoldScores.of(result))
    return path


def add_kfold_section(path: Path, folds: FoldScores) -> None:
    """Insert a k-fold section (per-fold table and ROC curves) before the first section."""
    import base64
    import io

    rows = kfold_table(folds)
    header = list(rows[0])
    values = {key: np.array([row[key] for row in rows], dtype=float) for key in header[1:]}
    body = "".join("<tr>" + "".join(f"<td>{_cell(row[h])}</td>" for h in header) + "</tr>"
                   for row in rows)
    body += "<tr><td>mean &plusmn; std</td>" + "".join(
        f"<td>{_cell(values[h].mean())} &plusmn; {_cell(values[h].std())}</td>"
        for h in header[1:]) + "</tr>"
    k = len(rows)
    parts = [
        "<h2>k-fold training</h2>",
        f"<p>{k} models; model i trained on the events with event % {k} != i and scored the "
        f"events with event % {k} == i, so every event in TestTree has the score of a model "
        "that never saw it. The sections below show fold 0.</p>",
        '<table id="kfold-table"><thead><tr>'
        + "".join(f"<th>{html.escape(h)}</th>" for h in header)
        + f"</tr></thead><tbody>{body}</tbody></table>",
    ]
    if not folds.regression:
        buffer = io.BytesIO()
        _kfold_roc_figure(folds).savefig(buffer, format="png", dpi=72)
        data = base64.b64encode(buffer.getvalue()).decode("ascii")
        caption = "ROC curve of each fold and of all events scored out of fold"
        parts.append(f'<figure id="fig-kfold-roc"><img alt="{caption}" '
                     f'src="data:image/png;base64,{data}"><figcaption>{caption}'
                     "</figcaption></figure>")
    text = path.read_text(encoding="utf-8")
    marker = text.find("<h2>")
    section = "\n".join(parts) + "\n"
    text = text[:marker] + section + text[marker:] if marker >= 0 else text + section
    text = re.sub(r"Figures: (\d+)\.",
                  lambda m: f"Figures: {int(m.group(1)) + text.count('fig-kfold-roc')}.",
                  text, count=1)
    atomic_write_text(path, text)


def _cell(value: Any) -> str:
    if isinstance(value, int | np.integer):
        return str(int(value))
    return f"{float(value):.4g}"


# -- summary --------------------------------------------------------------------------------


def summarise(result: TrainResult) -> str:
    """The text printed after training (and saved as ``summary.txt``)."""
    from hepbdt.evaluation import efficiency_table, overtraining_test, regression_metrics

    config = result.config
    lines = [f"hepbdt: {config.title}", ""]
    lines.append("Samples after cuts (all events):")
    lines += ["  " + line for line in _sample_table(result)]
    params = result.model.models[0].get_params() if isinstance(result.model, KFoldModel) else (
        result.model.get_params())
    method = f"{params['boosting']} boosting, {params['n_trees']} trees, depth {params['max_depth']}"
    if config.tmva_options:
        method += f" (TMVA options {config.tmva_options})"
    split = config.split
    scheme = (f"{split.kfold}-fold by {config.event}" if split.kfold else
              f"{split.mode} split, {split.train_fraction:g} for training (seed {split.seed})")
    lines += ["", f"Method: {method}; {len(config.features)} features; {scheme}; training "
              f"weights normalised: {split.norm}", ""]
    test, train = result.test, result.train
    s_te, s_tr = result.test_scores, result.train_scores
    if config.task == "regression":
        m_te = regression_metrics(test.y, s_te, test.w)
        m_tr = regression_metrics(train.y, s_tr, train.w)
        lines.append(f"{'':34} {'test':>10} {'train':>10}")
        for label, key in (("RMSE", "rmse"), ("mean absolute error", "mae"), ("bias", "bias"),
                           ("resolution (IQR / 1.349)", "resolution_iqr")):
            lines.append(f"{label:34} {getattr(m_te, key):>10.4g} {getattr(m_tr, key):>10.4g}")
    else:
        eff_te = efficiency_table(test.y, s_te, test.w)
        eff_tr = efficiency_table(train.y, s_tr, train.w)
        lines.append(f"{'':40} {'test':>8} {'train':>8}")
        for (label, v_te), (_, v_tr) in zip(eff_te.rows(), eff_tr.rows(), strict=True):
            lines.append(f"{label:40} {v_te:>8.4f} {v_tr:>8.4f}")
        check = overtraining_test(s_tr, train.y, train.w, s_te, test.y, test.w)
        lines += ["", f"Overtraining (KS test, training vs test): signal p = "
                  f"{check.signal.ks_pvalue:.3g}, background p = "
                  f"{check.background.ks_pvalue:.3g} -> {check.verdict}"]
    if split.kfold:
        rows = kfold_table(FoldScores.of(result))
        lines += ["", "Per fold:"]
        header = list(rows[0])
        widths = [max(len(h), 7) for h in header]
        lines.append("  " + "  ".join(f"{h:>{n}}" for h, n in zip(header, widths, strict=True)))
        for row in rows:
            lines.append("  " + "  ".join(
                f"{_cell(row[h]):>{n}}" for h, n in zip(header, widths, strict=True)))
        key = "test RMSE" if config.task == "regression" else "test AUC"
        values = np.array([row[key] for row in rows])
        lines.append(f"  {key}: {values.mean():.4f} +- {values.std():.4f} over {len(rows)} "
                     "folds; the test column above is out of fold for every event")
    ranking = _ranking(result)
    lines += ["", "Top-ranked variables (split gain):"]
    for rank, (name, importance) in enumerate(ranking.ranked()[:5], start=1):
        lines.append(f"  {rank}. {name:30} {importance:.3f}")
    t = result.timings
    lines += ["", f"Time: reading {t.get('read', 0):.1f} s, training {t.get('train', 0):.1f} s, "
              f"outputs {t.get('outputs', 0):.1f} s"]
    for warning in result.warnings:
        lines.append(warning)
    lines += ["", f"Outputs in {result.output_dir}/:"]
    k = len(_models(result.model))
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
    return "\n".join(lines)


def _sample_table(result: TrainResult) -> list[str]:
    data_sets = (result.test,) if result.train_fold is not None else (result.train, result.test)
    sample_index = np.concatenate([d.sample_index for d in data_sets])
    names = result.test.sample_names
    labels = {s.name: ("target" if s.target else ("signal" if s.label == 1 else "background"))
              for s in result.config.samples}
    rows = [f"{'sample':20} {'label':>10} {'events':>10}"]
    for index, name in enumerate(names):
        rows.append(f"{name:20} {labels.get(name, ''):>10} "
                    f"{int(np.count_nonzero(sample_index == index)):>10,}")
    return rows


# -- report again from score trees ----------------------------------------------------------


def report_from_scores(model_path: str | os.PathLike, scores_path: str | os.PathLike,
                       output: str | os.PathLike, title: str | None = None,
                       n_repeats: int = 3) -> Path:
    """Write the HTML report again from a model file and its ``scores.root``.

    The features are read from ``TrainTree`` and ``TestTree`` (written with their feature
    branches first, as ``hepbdt train`` does), with ``label``/``target`` and ``weight``.
    For a k-fold model the report shows fold 0 and the per-fold table from the trees.
    """
    import uproot

    from hepbdt.report import report

    model = load(model_path)
    names = list(model.feature_names_in_)
    sets: dict[str, tuple[Dataset, dict[str, np.ndarray]]] = {}
    with uproot.open(scores_path) as file:
        for tree_name in ("TrainTree", "TestTree"):
            if tree_name not in file:
                raise ValueError(f"{scores_path}: no {tree_name}; give the scores.root that "
                                 "hepbdt train wrote")
            tree = file[tree_name]
            keys = list(tree.keys())
            feature_branches = keys[: len(names)]
            target = "target" if "target" in keys else "label"
            needed = [*feature_branches, target, "weight", "event", "sample"]
            missing = [k for k in needed if k not in keys]
            if missing or "classID" in feature_branches or "weight" in feature_branches:
                raise ValueError(f"{scores_path}:{tree_name} lacks the feature or label branches "
                                 f"{missing or feature_branches}; was it written with "
                                 "score_features = true?")
            arrays = tree.arrays(keys, library="np")
            X = np.column_stack([arrays[b] for b in feature_branches]).astype(np.float32)
            data = Dataset(X, y=arrays[target], w=arrays["weight"],
                           sample_index=arrays["sample"], event=arrays["event"],
                           feature_names=feature_branches,
                           task="regression" if target == "target" else "classification")
            sets[tree_name] = (data, arrays)
    train, train_arrays = sets["TrainTree"]
    test, test_arrays = sets["TestTree"]
    title = title or f"hepbdt report: {model_path}"
    if not isinstance(model, KFoldModel):
        return report(model, train, test, output, title=title, n_repeats=n_repeats)
    branch = _score_branch(train_arrays, test_arrays)
    if "fold" not in train_arrays or branch is None:
        raise ValueError(f"{scores_path}: TrainTree needs the 'fold' and score branches of a "
                         "k-fold training")
    folds = FoldScores(model.k, train.task == "regression", train, test,
                       train_arrays[branch], test_arrays[branch],
                       train_arrays["fold"].astype(np.int64))
    fold0 = folds.train_fold == 0
    path = report(model.models[0], train.take(fold0), test.take(folds.test_fold == 0), output,
                  title=title + " (fold 0; the per-fold spread is in the k-fold section)",
                  n_repeats=n_repeats)
    add_kfold_section(Path(path), folds)
    return Path(path)


def _score_branch(train_arrays: dict[str, np.ndarray], test_arrays: dict[str, np.ndarray]
                  ) -> str | None:
    """The score branch: the float64 branch after 'sample' present in both trees."""
    keys = list(train_arrays)
    if "sample" not in keys:
        return None
    for key in keys[keys.index("sample") + 1:]:
        if key != "fold" and key in test_arrays:
            return key
    return None
