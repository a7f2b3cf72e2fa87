"""Train an analysis from its checked configuration: read, split or k-fold, fit, write.

:func:`train` reads the samples, splits them (or builds k folds by event number), fits the
model(s), then has :mod:`.outputs` write the files and :mod:`.summary` the summary.
Nothing here parses the configuration (:mod:`.config`) or the command line.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._util import (
    atomic_write_text,
    feature_definitions_of,
    model_scores,
    progress_shown,
    setting_text,
)
from ..io import Dataset, InputError, read
from ..kfold import KFoldModel
from ..output_set import OutputSet
from .config import AnalysisConfig, ConfigError
from .estimate import check_memory, use_binned
from .outputs import decorrelation_settings, write_outputs
from .result import TrainResult
from .summary import summarise

__all__ = ["train", "default_output_dir", "TrainingError"]

Echo = Callable[[str], None] | None
#: The Dask client of a training with a [dask] table, while it runs.
_CLIENT: contextvars.ContextVar[Any] = contextvars.ContextVar("hepbdt_dask_client", default=None)


def default_output_dir(config: AnalysisConfig) -> Path:
    """``[output] directory``, else ``./hepbdt-<config file stem>``."""
    return config.output.directory or Path(f"hepbdt-{config.path.stem}")


def train(config: AnalysisConfig, *, progress: bool | None = None, echo: Echo = None
          ) -> TrainResult:
    """Read, split (or k-fold), fit, and write every output of an analysis.

    Parameters
    ----------
    config : from :func:`hepbdt.analysis.load_config` (check inputs first with
        :func:`hepbdt.analysis.check_inputs` to fail before any work).
    progress : progress lines on stderr while reading and training; None: on a terminal.
    echo : called with each line of progress text and with the summary (e.g. ``print``).

    Returns
    -------
    TrainResult; ``files`` maps each output ("model", "tmva_xml", "scores", "report",
    "summary", "figure:<name>", and with ``[method] decorrelate`` "sculpting", the
    decorrelation measures' JSON) to its path.
    """
    if config.split.kfold:
        _kfold_event(config)  # folds apply cannot make again: refused before any work
    check_memory(config)  # a sample too large for the stated memory: refused before any work
    out = default_output_dir(config)
    output_set = OutputSet(out)
    # locked and known writable before any work; every bar (reading, each fit) as asked
    with output_set as staging, progress_shown(progress), _dask_client(config, echo):
        timings: dict[str, float] = {}
        start = time.perf_counter()
        data = _read(config, progress)
        timings["read"] = time.perf_counter() - start
        _say(echo, f"read {len(data):,} events of {len(config.samples)} samples in "
                   f"{timings['read']:.1f} s" + (f", binned ({data.X.nbytes:,} bytes of codes)"
                                                 if data.binned else ""))
        _check_sample_weights(config, data)
        if config.multiclass:  # a class without events or weight, named before splitting
            _check_classes(config, data, "the selected events")
        start = time.perf_counter()
        fit = _fit_kfold if config.split.kfold else _fit_split
        handoff = [data]  # the fit takes the only reference: a split lets the whole sample go
        del data
        result = fit(config, handoff, echo)
        timings["train"] = time.perf_counter() - start
        result.warnings += constant_score_warnings(result)
        for message in result.warnings:
            _say(echo, message)
        _say(echo, f"trained in {timings['train']:.1f} s")
        result.timings = timings
        start = time.perf_counter()
        result.output_dir = staging
        write_outputs(result, echo)
        timings["outputs"] = time.perf_counter() - start
        result.output_dir = out
        result.files = {key: out / path.relative_to(staging) for key, path in result.files.items()}
        result.summary = summarise(result)
        atomic_write_text(staging / "summary.txt", result.summary + "\n")
        result.files["summary"] = out / "summary.txt"
        # what `hepbdt report` needs to rebuild the same report from the score trees
        output_set.commit("model.json", settings={
            "min_background_events": config.output.min_background_events,
            "permutation_repeats": config.output.permutation_repeats,
            "binned": result.train.binned,
            **decorrelation_settings(config)})
    return result


@contextlib.contextmanager
def _dask_client(config: AnalysisConfig, echo: Echo) -> Iterator[None]:
    """The [dask] table's client for the training (a local cluster is started and stopped)."""
    if config.dask is None:
        yield
        return
    # The optional Dask extra, imported only for a training that asks for a cluster.
    from ..dask import connect

    client = connect(config.dask.scheduler, timeout=config.dask.timeout,
                     n_workers=config.dask.workers)
    _say(echo, f"training on the Dask cluster {client.scheduler.address} "
               f"({len(client.scheduler_info(n_workers=-1)['workers'])} workers)")
    token = _CLIENT.set(client)
    try:
        yield
    finally:
        _CLIENT.reset(token)
        cluster = client.cluster if config.dask.scheduler == "local" else None
        client.close()
        if cluster is not None:
            cluster.close()


def _fit_on_cluster(config: AnalysisConfig, data: Dataset, y: np.ndarray) -> Any:
    """The model fitted by the Dask estimator on the cluster (an in-memory estimator)."""
    # The optional Dask extra, imported only for a training that asks for a cluster.
    import dask.array as da

    from ..dask import DaskBDTClassifier, DaskBDTRegressor

    client = _CLIENT.get()
    cls = DaskBDTRegressor if config.task == "regression" else DaskBDTClassifier
    n_workers = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
    chunk = max(1, -(-len(data) // n_workers))
    X = np.ascontiguousarray(np.asarray(data.X, dtype=np.float32))
    # the event numbers choose the events n_trees="auto" holds out, as in memory
    event = None if data.event is None else da.from_array(np.asarray(data.event), chunks=chunk)
    model = cls(**config.estimator_params).fit(
        da.from_array(X, chunks=(chunk, X.shape[1])), da.from_array(np.asarray(y), chunks=chunk),
        da.from_array(np.asarray(data.w), chunks=chunk), event=event, client=client,
        feature_names=list(data.feature_names), feature_definitions=feature_definitions_of(data.X))
    return model.to_local()


def _read(config: AnalysisConfig, progress: bool | None) -> Dataset:
    """The events of every sample, the features named as the user wrote them (aliases),
    each with the expression behind it, so the model, the score trees and apply agree."""
    extra = config.extra_expressions
    data = read(config.make_samples(), config.feature_expressions + extra, event=config.event,
                inf_as_missing=config.inf_as_missing, progress=progress,
                binned=use_binned(config), max_bins=int(config.params.get("max_bins", 255)),
                n_cuts=int(config.params.get("n_cuts", 0)))
    return data.replace(feature_names=list(config.features) + extra, feature_definitions=dict(
        zip(config.features, config.feature_expressions, strict=True)))


def _check_sample_weights(config: AnalysisConfig, data: Dataset) -> None:
    """InputError for a sample whose selected events all weigh 0: it would add nothing to
    the training, the test or the yields, as ``scale = 0`` (refused) would not either."""
    counts = np.bincount(data.sample_index, minlength=len(data.sample_names))
    weighted = np.bincount(data.sample_index[np.asarray(data.w) != 0],
                           minlength=len(data.sample_names))
    weights = {s.name: s.weight for s in config.samples}
    for name, count, nonzero in zip(data.sample_names, counts, weighted, strict=True):
        if count and not nonzero:
            raise InputError(
                f"sample {name!r}: every one of its {int(count):,} selected events has weight "
                f"0 (weight {weights.get(name)!r}), so it would add nothing to the training, "
                "the test or the yields: check the weight expression and the branches it "
                "reads, or remove the sample")


def _features_only(config: AnalysisConfig, data: Dataset) -> tuple[Dataset, np.ndarray | None]:
    """The Dataset of the features alone, and the decorrelation variables of its events
    (float64 (n, k); None without ``decorrelate``). A binned read gives each variable's
    bin lower edges."""
    if not config.decorrelate:
        return data, None
    extra = config.extra_expressions
    names = list(config.feature_expressions) + extra
    columns = [names.index(e) for e in config.decorrelate]
    n_features = len(config.features)
    if data.binned:
        mass = data.X.columns(columns).to_features()
        X = data.X.columns(list(range(n_features)))
    else:
        mass = np.asarray(data.X)[:, columns]
        X = np.asarray(data.X)[:, :n_features]
    mass = np.asarray(mass, dtype=np.float64)
    _check_finite_mass(config, data, mass)
    features = data.replace(X=X, feature_names=list(config.features), feature_definitions=dict(
        zip(config.features, config.feature_expressions, strict=True)))
    return features, mass


def _check_finite_mass(config: AnalysisConfig, data: Dataset, mass: np.ndarray) -> None:
    """InputError, before any training, when a decorrelation variable is missing (NaN) for
    some event: training checks only its own events, and a test event's NaN failed the
    measures after the whole training, with every output lost."""
    for j, expression in enumerate(config.decorrelate):
        bad = ~np.isfinite(mass[:, j])
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            sample = data.sample_names[int(data.sample_index[first])]
            raise InputError(
                f"[method] decorrelate {expression!r} is missing (NaN) for "
                f"{int(bad.sum()):,} event(s), the first in sample {sample!r}; the "
                "decorrelation variable needs a value for every event: cut those events "
                "away (a sample's cut, or preselection), or choose another variable")


def _kfold_event(config: AnalysisConfig) -> str:
    """The event expression a k-fold training assigns folds by: every sample's own
    ``event``, else the top-level one (as :func:`hepbdt.io.read` takes them).

    The manifest records it as the k-fold model's ``by``, and ``hepbdt apply``, which
    reads files without knowing their sample, computes every event's fold with it; so all
    samples must use the same text. ConfigError otherwise (or when a sample has none)."""
    texts = {s.name: s.event or config.event for s in config.samples}
    missing = [name for name, text in texts.items() if not text]
    if missing:
        raise ConfigError([f"{config.path}: [split] kfold: k-fold training assigns events to "
                           f"folds by event number, and the samples {', '.join(missing)} have "
                           "no event expression: give event = \"event\" (the event-number "
                           "branch) at the top of the file"])
    distinct = sorted(set(texts.values()))
    if len(distinct) > 1:
        uses = "; ".join(f"{text!r} in {', '.join(n for n, t in texts.items() if t == text)}"
                         for text in distinct)
        raise ConfigError([f"{config.path}: [split] kfold: the samples' event expressions "
                           f"differ ({uses}); k-fold needs one event expression for all "
                           "samples, so that hepbdt apply, which reads files without knowing "
                           "their sample, computes the same folds: give the same event in "
                           "every sample, or one event at the top of the file and none in "
                           "the samples"])
    return distinct[0]


def _say(echo: Echo, text: str) -> None:
    if echo is not None:
        echo(text)


class TrainingError(ValueError):
    """The events cannot train the configured model (too few, one class, an empty fold)."""


def constant_score_warnings(result: TrainResult) -> list[str]:
    """A warning line when the model gives every training event the same score: it learned
    nothing from the features (the summary's AUC of 0.5 would not say so)."""
    scores = np.asarray(result.train_scores)
    if scores.shape[0] == 0 or np.ptp(scores, axis=0).max() > 0:
        return []
    if result.config.task == "regression":
        return ["warning: the model predicts one value for every training event: it learned "
                "nothing from the features (a constant target, features without information, "
                "or options that allow no split)"]
    return ["warning: the model gives every training event the same score: it separates "
            "nothing (features without information, or options that allow no split)"]


def _check_classes(config: AnalysisConfig, data: Dataset, what: str) -> None:
    """Every class (or, for a regression, some events) must be in ``data``, and each
    class's weights (a regression's: all) must sum to more than zero."""
    if config.task == "regression":
        if len(data) == 0:
            raise TrainingError(f"{what} has no events")
        total = float(data.w.sum())
        if not total > 0:  # its RMSE, bias and resolution are not defined
            raise TrainingError(f"{what}: the weights of its {len(data):,} events sum to "
                                f"{total:g}; the regression metrics (RMSE, bias, resolution) "
                                "need a positive total weight: loosen the cuts or change the "
                                "weights or scales that make it negative")
        return
    if config.multiclass:
        for label, name in enumerate(config.classes):
            mask = data.y == label
            samples = [s.name for s in config.samples if s.label == label]
            if not mask.any():
                raise TrainingError(f"{what} has no events of class {name!r} (samples "
                                    f"{', '.join(samples)}; {len(data):,} events in all); every "
                                    "class needs events: loosen the cuts or change the split")
            total = float(data.w[mask].sum())
            if not total > 0:
                raise TrainingError(f"{what}: the weights of class {name!r} (samples "
                                    f"{', '.join(samples)}) sum to {total:g}; every class needs "
                                    "a positive total weight")
        return
    for label, name in ((1, "signal"), (0, "background")):
        count = int(np.count_nonzero(data.y == label))
        if count == 0:
            raise TrainingError(f"{what} has no {name} events ({len(data):,} events in all); "
                                "training and evaluation need both classes: loosen the cuts or "
                                "change the split")
        total = float(data.w[data.y == label].sum())
        if not total > 0:  # its AUC, efficiencies and yields are not defined
            raise TrainingError(f"{what}: the {name} weights sum to {total:g}; the evaluation "
                                "of each class needs a positive total weight (negative weights "
                                "that cancel a class's events leave nothing to measure)")


def _fit(config: AnalysisConfig, data: Dataset, what: str = "training",
         decorrelate: np.ndarray | None = None) -> Any:
    """A model fitted on ``data`` (it keeps the Dataset's feature names and definitions).

    The estimator's ValueErrors are about the events it was given (one class, no positive
    weight, ...): they become a TrainingError that says which training failed."""
    # Three or more classes train on the class names, so the model's classes_ (sorted, as
    # config.classes) name its probability columns and apply's branches.
    y = np.asarray(config.classes)[data.y] if config.multiclass else data.y
    try:
        if config.dask is not None:
            model = _fit_on_cluster(config, data, y)
        else:
            extra = {} if decorrelate is None else {"decorrelate": decorrelate}
            model = config.make_estimator().fit(data.X, y, data.w, event=data.event, **extra)
    except ValueError as exc:
        raise TrainingError(f"{what} on {len(data):,} events: {exc}") from exc
    record = getattr(getattr(model, "forest_", None), "extra", {}).get("decorrelation")
    if record is not None and decorrelate is not None:  # the model file names its variables
        record["expressions"] = list(config.decorrelate)
    if data.branch_types is not None:  # binned and Dask fits too: apply checks its trees
        model.branch_types_ = dict(data.branch_types)
    return model


def _score(model: Any, X: np.ndarray) -> np.ndarray:
    return model_scores(model, X)


def _held_out(model: Any, data: Dataset) -> np.ndarray | None:
    """The events of ``data`` (as the model was fitted on them) that its fit held out to
    choose the number of trees; None when it held none out."""
    return model.held_out_mask(data.event)


def _fit_split(config: AnalysisConfig, handoff: list[Dataset], echo: Echo) -> TrainResult:
    """One model on the training part of a train/test split of the sample in ``handoff``
    (taken from it, and let go once split: the two parts hold every event)."""
    split = config.split
    data = handoff.pop()
    try:
        train_set, test_set = data.split(split.mode, split.train_fraction, split.seed)
    except ValueError as exc:
        raise TrainingError(f"splitting {len(data):,} events ({split.mode}, train_fraction "
                            f"{setting_text(split.train_fraction)}): {exc}") from exc
    del data
    _say(echo, f"training on {len(train_set):,} events, testing on {len(test_set):,}")
    for name, part in (("training", train_set), ("test", test_set)):
        _check_classes(config, part, f"the {name} sample")
    # normalised after the checks, which name the class and what is wrong with its weights
    train_set, m_train = _features_only(config, train_set.normalize(split.norm))
    test_set, m_test = _features_only(config, test_set)
    model = _fit(config, train_set, decorrelate=m_train)
    return TrainResult(config, Path(), model, train_set, test_set, _score(model, train_set.X),
                       _score(model, test_set.X), None, train_decorrelate=m_train,
                       test_decorrelate=m_test, train_held_out=_held_out(model, train_set))


def _fit_kfold(config: AnalysisConfig, handoff: list[Dataset], echo: Echo) -> TrainResult:
    """k models, model i trained on the events outside fold i and scoring fold i (the
    sample taken from ``handoff``).

    One fold's training set exists at a time: each fit keeps only the event indices, the
    normalised weights and the scores of its training events, and the training sets of all
    folds are taken from the sample once at the end, so that memory holds the sample and
    k - 1 copies of it at most, as :mod:`.estimate` counts (keeping every fold's set and
    then stacking them held 2 (k - 1) copies)."""
    data = handoff.pop()
    k = config.split.kfold
    folds = data.folds(k)
    counts = np.bincount(folds, minlength=k)
    if np.any(counts == 0):
        raise TrainingError(f"[split] kfold = {k}: fold {int(np.argmin(counts))} has no events "
                            f"(of {len(data):,}); use fewer folds")
    classes = (len(config.classes),) if config.multiclass else ()
    test_scores = np.empty((len(data), *classes), dtype=np.float64)
    train_scores = np.empty(((k - 1) * len(data), *classes), dtype=np.float64)
    train_index = np.empty((k - 1) * len(data), dtype=np.intp)
    train_weights = np.empty((k - 1) * len(data), dtype=np.float64)
    train_held = np.zeros((k - 1) * len(data), dtype=bool)
    models, start = [], 0
    for i in range(k):  # one fold at a time: k copies of the sample never exist at once
        in_train = np.flatnonzero(folds != i)
        train_i, test_i = data.take(in_train), data.take(folds == i)
        for name, part in (("training", train_i), ("test", test_i)):
            _check_classes(config, part, f"the {name} sample of fold {i}")
        train_i, m_train = _features_only(config, train_i.normalize(config.split.norm))
        test_i, _ = _features_only(config, test_i)
        # fold i as every other output names it (model_fold<i>, TrainTree's fold, errors)
        _say(echo, f"training fold {i} of {k} on {len(train_i):,} events")
        model = _fit(config, train_i, f"fold {i} of {k}", m_train)
        models.append(model)
        stop = start + len(in_train)
        train_index[start:stop], train_weights[start:stop] = in_train, train_i.w
        train_scores[start:stop] = _score(model, train_i.X)
        held = _held_out(model, train_i)
        if held is not None:
            train_held[start:stop] = held
        test_scores[folds == i] = _score(model, test_i.X)
        start = stop
        del train_i, test_i, m_train
    train_fold = np.repeat(np.arange(k, dtype=np.int64), len(data) - counts)
    train, train_mass = _features_only(config, data.take(train_index).replace(w=train_weights))
    del train_index
    data, m_test = _features_only(config, data)
    return TrainResult(config, Path(), KFoldModel(models, by=_kfold_event(config)),
                       train, data, train_scores, test_scores, train_fold,
                       train_decorrelate=train_mass, test_decorrelate=m_test,
                       train_held_out=train_held if train_held.any() else None)
