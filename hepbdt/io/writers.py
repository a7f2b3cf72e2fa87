"""Writing results back to ROOT: score trees and friend trees.

:func:`write_scores` writes a Dataset and its scores as a tree like TMVA's
TrainTree/TestTree. :func:`apply` evaluates a model on input ntuples chunk by chunk and
writes a friend tree (same entries, same order) holding the score and the event
identifier. Every file is written to ``<path>.tmp-<pid>`` and renamed when complete, so
an interrupted write never leaves a truncated file under the final name.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import numpy as np
import uproot

from hepbdt.io._progress import Progress
from hepbdt.io.dataset import Dataset
from hepbdt.io.errors import InputError
from hepbdt.io.expressions import Expression
from hepbdt.io.samples import (
    DEFAULT_STEP_SIZE,
    FileSpec,
    Source,
    TreeReader,
    _evaluate,
    _open_file,
    decompression_threads,
    feature_column,
    fill_rows,
    resolve_sources,
)

__all__ = ["write_scores", "apply", "atomic_path", "branch_name"]

_WRITE_CHUNK = 1_000_000


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path next to ``path``; rename it to ``path`` on success.

    On any error (or KeyboardInterrupt) the temporary file is removed and ``path`` is
    left as it was. The parent directory is created if needed.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    temporary = f"{path}.tmp-{os.getpid()}"
    try:
        yield temporary
        os.replace(temporary, path)
    except BaseException:
        with suppress(FileNotFoundError):
            os.remove(temporary)
        raise


def branch_name(text: str) -> str:
    """A ROOT-friendly branch name for an expression: ``"Jet_pt[:, 0]"`` -> ``Jet_pt_0``.

    Characters other than letters, digits and ``_`` become ``_`` (runs collapsed), so the
    name is a valid C++ identifier for ``RDataFrame`` and ``TTree::Draw``.
    """
    name = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_") or "x"
    return f"_{name}" if name[0].isdigit() else name


def _unique_names(texts: Sequence[str], reserved: set[str]) -> list[str]:
    used = set(reserved)
    names = []
    for text in texts:
        base = branch_name(text)
        name, suffix = base, 2
        while name in used:
            name, suffix = f"{base}_{suffix}", suffix + 1
        used.add(name)
        names.append(name)
    return names


def _score_columns(
    scores: Any, n: int, score_branch: str
) -> dict[str, np.ndarray]:
    if isinstance(scores, Mapping):
        columns = {str(k): np.asarray(v, dtype=np.float64) for k, v in scores.items()}
    else:
        array = np.asarray(scores, dtype=np.float64)
        if array.ndim == 1:
            columns = {score_branch: array}
        elif array.ndim == 2:
            columns = {f"{score_branch}_{j}": array[:, j] for j in range(array.shape[1])}
        else:
            raise InputError(f"scores must be (n,) or (n, k), got shape {array.shape}")
    for name, column in columns.items():
        if column.shape != (n,):
            raise InputError(
                f"score {name!r} has shape {column.shape}; the dataset has {n} events"
            )
        if branch_name(name) != name:
            raise InputError(
                f"score branch name {name!r} is not a valid identifier; try "
                f"{branch_name(name)!r}"
            )
    return columns


def write_scores(
    path: str | os.PathLike,
    dataset: Dataset,
    scores: Any,
    tree: str = "TestTree",
    *,
    score_branch: str = "bdt_score",
    features: bool = True,
    update: bool = False,
    title: str = "hepbdt scores",
) -> str:
    """Write a Dataset and its scores as a tree, like TMVA's TrainTree/TestTree.

    Branches: the features (float32, names from :func:`branch_name` of the feature
    expressions), ``classID`` (int32, TMVA's convention: 0 signal, 1 background in a
    0/1 problem, else the class index) and ``label`` (int32, ``Dataset.y``) for
    classification or ``target`` (float32) for regression, ``weight`` (float64),
    ``event`` (int64), ``sample`` (int32 sample index) and the score(s) (float64).

    Parameters
    ----------
    path
        Output ROOT file.
    dataset
        The events.
    scores
        (n,) scores, (n, k) scores (branches ``<score_branch>_0`` ...), or a mapping
        ``{branch name: (n,) scores}``.
    tree
        Tree name (``"TrainTree"``, ``"TestTree"``...).
    score_branch
        Name of the score branch.
    features
        Also write the feature columns.
    update
        Add the tree to an existing file (replacing a tree of the same name) instead of
        recreating the file; still written to a temporary copy and renamed.
    title
        Tree title.

    Returns
    -------
    str
        The path written.
    """
    n = len(dataset)
    score_columns = _score_columns(scores, n, score_branch)
    columns: dict[str, np.ndarray] = {}
    if dataset.task == "classification":
        labels = dataset.y
        binary = set(np.unique(labels).tolist()) <= {0, 1}
        columns["classID"] = (1 - labels if binary else labels).astype(np.int32)
        columns["label"] = labels.astype(np.int32)
    elif dataset.task == "regression":
        columns["target"] = dataset.y.astype(np.float32)
    columns["weight"] = dataset.w
    columns["event"] = dataset.event
    columns["sample"] = dataset.sample_index
    clashes = set(columns) & set(score_columns)
    if clashes:
        raise InputError(f"score branch name(s) {sorted(clashes)} clash with {list(columns)}")
    columns.update(score_columns)
    if features:
        names = _unique_names(dataset.feature_names, set(columns))
        feature_columns = {name: dataset.X[:, j] for j, name in enumerate(names)}
        columns = {**feature_columns, **columns}

    path = os.fspath(path)
    with atomic_path(path) as temporary:
        if update and os.path.exists(path):
            shutil.copyfile(path, temporary)
            file = uproot.update(temporary)
            with suppress(KeyError):
                if tree in file:
                    del file[tree]
        else:
            file = uproot.recreate(temporary)
        with file:
            output = file.mktree(tree, {k: v.dtype for k, v in columns.items()}, title=title)
            for start in range(0, n, _WRITE_CHUNK):
                stop = min(start + _WRITE_CHUNK, n)
                output.extend({k: np.ascontiguousarray(v[start:stop]) for k, v in columns.items()})
    return path


# -- apply -----------------------------------------------------------------------------


def _load_models(model: Any) -> list[Any]:
    models = list(model) if isinstance(model, list | tuple) else [model]
    if not models:
        raise InputError("apply() needs a model (or a list of k models for k-fold)")
    loaded = []
    for item in models:
        if isinstance(item, str | os.PathLike):
            if not os.path.exists(item):
                raise InputError(f"model file {os.fspath(item)!r} does not exist")
            from hepbdt import load_model

            item = load_model(item)
        if hasattr(item, "models") and getattr(item, "kind", None) == "kfold":
            loaded.extend(item.models)  # a k-fold manifest: its fold models, in order
            continue
        if not hasattr(item, "decision_function") or not hasattr(item, "feature_names_in_"):
            raise InputError(
                f"{type(item).__name__} is not a fitted model: apply() needs "
                "decision_function(X) and feature_names_in_ (fit it first, or pass a "
                "model file)"
            )
        loaded.append(item)
    names = [list(m.feature_names_in_) for m in loaded]
    if any(n != names[0] for n in names[1:]):
        raise InputError(
            "the k-fold models use different features: "
            + "; ".join(str(n) for n in names)
        )
    return loaded


def _output_path(output: str, source: Source, tree_name: str) -> str:
    if "{" not in output:
        return output
    base = os.path.basename(source.path)
    stem = base[:-5] if base.lower().endswith(".root") else os.path.splitext(base)[0]
    try:
        return output.format(stem=stem, name=base, tree=tree_name.replace("/", "_"))
    except (KeyError, IndexError, ValueError) as err:
        raise InputError(
            f"output {output!r}: placeholders may be {{stem}}, {{name}} and {{tree}} ({err})"
        ) from None


def apply(
    model: Any,
    files: FileSpec,
    output: str | os.PathLike,
    branch: str = "bdt_score",
    tree: str | Sequence[str] | None = None,
    event_branch: str | None = None,
    step_size: int | str = DEFAULT_STEP_SIZE,
    *,
    output_tree: str | None = None,
    inf_as_missing: bool = False,
    progress: bool | None = None,
    threads: int | None = None,
) -> list[str]:
    """Evaluate a model on ntuples chunk by chunk and write friend trees of scores.

    Every input entry gets one output entry, in the same order, so the output tree can
    be a friend of the input (``TTree::AddFriend``, ``RDataFrame`` friends) or joined
    on the identifier branch.

    Parameters
    ----------
    model
        A model file (loaded with :func:`hepbdt.load_model`), an object with
        ``feature_names_in_`` (feature expressions, as in :func:`hepbdt.io.read`) and
        ``decision_function(X)`` ((n, m) float32 -> (n,) or (n, k) float64), or a list
        of k such models trained k-fold: model i scores the events with
        ``identifier % k == i``.
    files
        Input files, as for :class:`~hepbdt.io.samples.Sample` (paths, globs,
        ``"file.root:tree"``, lists).
    output
        Output file. With several inputs, all trees of the same name are concatenated
        in input order (a friend of the TChain); placeholders ``{stem}``, ``{name}``,
        ``{tree}`` (input file stem, file name, tree name) give one file per input.
    branch
        Score branch name; (n, k) scores give ``<branch>_0`` ...
    tree
        Input tree name(s) for files given without ``:tree``; None takes the only tree.
    event_branch
        Event-identifier expression (e.g. ``"event"``), written as a branch of the same
        (sanitised) name. None writes ``entry``, the entry number in the output tree's
        chain of inputs.
    step_size
        Chunk size for ``tree.iterate``.
    output_tree
        Name of the output tree; None uses each input tree's name.
    inf_as_missing
        Treat +-inf in a feature as missing (NaN) instead of an error.
    progress
        Show progress on stderr; None when stderr is a terminal.
    threads
        Threads decompressing baskets (None: the usable cores, at most 8; 1: serial).

    Returns
    -------
    list of str
        The files written.
    """
    models = _load_models(model)
    feature_expressions = [Expression(str(t), "feature") for t in models[0].feature_names_in_]
    context = "apply"
    event_expression = None if event_branch is None else Expression(event_branch, "event")
    id_name = "entry" if event_branch is None else branch_name(event_branch)
    if branch_name(branch) != branch or branch == id_name:
        raise InputError(
            f"score branch {branch!r} must be a valid identifier different from {id_name!r}"
        )
    output = os.fspath(output)
    expressions = [*feature_expressions, *([event_expression] if event_expression else [])]
    sources = resolve_sources(files, tree, context)

    # Phase 1: open and check every input; group inputs by (output file, output tree).
    groups: dict[str, dict[str, list[tuple[Source, int]]]] = {}
    total = 0
    for source in sources:
        with _open_file(source.path, context) as file:
            reader = TreeReader(file, source, expressions, context)
            out_path = _output_path(output, source, reader.tree_name)
            out_tree = output_tree or reader.tree_name
            resolved = Source(source.path, reader.tree_name)
            groups.setdefault(out_path, {}).setdefault(out_tree, []).append(
                (resolved, reader.num_entries)
            )
            total += reader.num_entries
    input_paths = {os.path.realpath(s.path) for s in sources}
    for out_path in groups:
        if os.path.realpath(out_path) in input_paths:
            raise InputError(
                f"apply: output {out_path!r} is one of the input files; write the friend "
                "tree to a new file"
            )

    # Phase 2: score chunk by chunk, each output file written atomically.
    written = []
    with Progress(total, "hepbdt.apply", progress) as bar, decompression_threads(
        threads
    ) as executor:
        for out_path, trees in groups.items():
            with atomic_path(out_path) as temporary, uproot.recreate(temporary) as out_file:
                for out_tree, members in trees.items():
                    writer = None
                    chain_offset = 0
                    for source, n_entries in members:
                        with _open_file(source.path, context) as file:
                            reader = TreeReader(file, source, expressions, context)
                            for arrays, start, stop in reader.iterate(step_size, executor):
                                entries = np.arange(start, stop, dtype=np.int64)
                                X = np.empty((stop - start, len(feature_expressions)),
                                             dtype=np.float32)
                                fill_rows(X, 0, [
                                    feature_column(reader, e, arrays, entries, inf_as_missing)
                                    for e in feature_expressions
                                ])
                                if event_expression is None:
                                    ids = entries + chain_offset
                                else:
                                    ids = _evaluate(
                                        reader, event_expression, arrays, len(entries), np.int64
                                    )
                                scores = _score(models, X, ids, branch, reader.where)
                                chunk = {**scores, id_name: ids}
                                if writer is None:
                                    writer = out_file.mktree(
                                        out_tree,
                                        {k: v.dtype for k, v in chunk.items()},
                                        title=f"hepbdt scores ({branch})",
                                    )
                                writer.extend(chunk)
                                bar.update(stop - start)
                        chain_offset += n_entries
                    if writer is None:  # no entries at all: an empty tree of the same shape
                        n_outputs = _n_outputs(models[0], len(feature_expressions))
                        empty = _score(models, np.empty((0, len(feature_expressions)),
                                       dtype=np.float32), np.empty(0, np.int64), branch, "",
                                       n_outputs)
                        out_file.mktree(
                            out_tree,
                            {**{k: v.dtype for k, v in empty.items()}, id_name: np.int64},
                            title=f"hepbdt scores ({branch})",
                        )
            written.append(out_path)
    return written


def _n_outputs(model: Any, n_features: int) -> int:
    try:
        scores = np.asarray(model.decision_function(np.zeros((1, n_features), np.float32)))
    except Exception:
        return 1
    return 1 if scores.ndim == 1 else int(scores.shape[1])


def _score(
    models: Sequence[Any],
    X: np.ndarray,
    ids: np.ndarray,
    branch: str,
    where: str,
    n_outputs: int | None = None,
) -> dict[str, np.ndarray]:
    n = len(X)
    if n == 0:
        k = n_outputs or 1
        if k == 1:
            return {branch: np.empty(0, np.float64)}
        return {f"{branch}_{j}": np.empty(0, np.float64) for j in range(k)}
    if len(models) == 1:
        scores = np.asarray(models[0].decision_function(X), dtype=np.float64)
    else:
        folds = np.mod(ids, len(models))
        scores = None
        for i, model in enumerate(models):
            mask = folds == i
            if not mask.any():
                continue
            part = np.asarray(model.decision_function(X[mask]), dtype=np.float64)
            if scores is None:
                scores = np.full((n, *part.shape[1:]), np.nan)
            scores[mask] = part
    if scores.shape[0] != n or scores.ndim not in (1, 2):
        raise InputError(
            f"{where}: the model returned scores of shape {scores.shape} for {n} events"
        )
    if scores.ndim == 1:
        return {branch: scores}
    return {f"{branch}_{j}": np.ascontiguousarray(scores[:, j]) for j in range(scores.shape[1])}
