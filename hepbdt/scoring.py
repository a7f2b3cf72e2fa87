"""Apply a model to ntuples: read the features chunk by chunk, score, write friend trees.

:func:`apply` evaluates a model (an estimator, a model file, a k-fold manifest or a list
of k fold models) on every entry of the input trees and writes, per output file, a tree
with the same entries in the same order: the score and the event identifier. A k-fold
model scores each event with the model that did not train on it
(:func:`hepbdt.kfold.fold_of`). Every output is written to a temporary file and renamed
into place when all of them are written; SIGINT and SIGTERM wait for the renames to end, and
each tree's title records the model's SHA-256, so outputs of two models (a ``kill -9`` in
the middle of the renames) can be told apart. A lock beside each output
(:func:`~hepbdt.output_set.hold_outputs`) makes a second apply writing any of them fail at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import string
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import uproot

from ._util import (
    DeferredSignals,
    MissingValueWarning,
    Progress,
    atomic_path,
    dumps_strict,
    model_scores,
    trained_with_missing,
    unseen_missing_text,
    user_stacklevel,
)
from ._version import EXPRESSION_RULES
from .boosting.losses import softmax_rows
from .estimators import IdleOptionWarning
from .io.branch_types import check_types
from .io.errors import InputError, MissingFileError
from .io.expressions import Expression
from .io.model_rules import check_saved_features
from .io.samples import (
    DEFAULT_STEP_SIZE,
    FileSpec,
    FileVersion,
    Source,
    TreeReader,
    _event_column,
    check_file_version,
    check_threads,
    decompression_threads,
    feature_column,
    file_version,
    fill_rows,
    note_tree_read,
    open_root_file,
    resolve_sources,
)
from .io.writers import BRANCH_NAME_RULE, branch_name, is_branch_name
from .kfold import FoldExpressionWarning, KFoldModel, unrecorded_by
from .output_set import OutputSetError, check_model_files, check_writable, hold_outputs
from .persistence import ModelBytes, check_fold_name, load_model_digest

#: The inputs of one output tree, in chain order: each tree's source, its entries and the
#: file's version when planned (it must be the same file when scored).
_Members = list[tuple[Source, int, FileVersion | None]]
#: Output file -> output tree -> its members.
_Groups = dict[str, dict[str, _Members]]

__all__ = ["apply", "ApplyOptionError", "FoldExpressionWarning", "FriendOrderWarning",
           "MissingValueWarning"]

FRIEND_TITLE = "hepbdt scores"  # every friend tree's title begins so (then the branch, the model)


class ApplyOptionError(InputError):
    """A choice of outputs that cannot be used, found before any scoring: an output file that
    is an input or the model, a branch name that is not an identifier or that clashes with
    another output branch or with a branch of an input (exit status 2 on the command line)."""


#: The prefix of a multi-class model's per-class probability branches (``bdt_prob_<class>``).
DEFAULT_PROBABILITY_BRANCH = "bdt_prob"


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
    probability_branch: str | None = None,
) -> list[str]:
    """Evaluate a model on ntuples chunk by chunk and write friend trees of scores.

    Every input entry gets one output entry, in the same order, so the output tree can
    be a friend of the input (``TTree::AddFriend``, ``RDataFrame`` friends) or joined
    on the identifier branch.

    Parameters
    ----------
    model
        A model file (loaded with :func:`hepbdt.load_model`; a k-fold manifest too), an
        object with ``feature_names_in_`` (feature expressions, as in
        :func:`hepbdt.io.read`, or names with their expressions in ``feature_definitions_``)
        and ``decision_function(X)`` or ``predict(X)`` ((n, m) float32 -> (n,) or (n, k)
        float64), a :class:`~hepbdt.kfold.KFoldModel`, or a list of k such models
        trained k-fold: model i scores the events with ``identifier % k == i``.
    files
        Input files, as for :class:`~hepbdt.io.samples.Sample` (paths, globs,
        ``"file.root:tree"``, lists).
    output
        Output file. With several inputs, all trees of the same name are concatenated
        in input order (a friend of the TChain); placeholders ``{stem}``, ``{name}``,
        ``{tree}`` (input file stem, file name, tree name) give one file per input.
    branch
        Score branch name; (n, k) scores give ``<branch>_0`` ... A hepbdt model of three
        or more classes gives, per class of its ``classes_``, the raw score
        ``<branch>_<class>`` and the probability ``<probability_branch>_<class>`` (the
        class label with every run of characters other than letters, digits and ``_``
        made one ``_``, a minus sign before a digit written ``m``: ``-1`` gives ``m1``; the
        class index where that leaves names empty or equal, refused where an index would be
        the name of another class).
    tree
        Input tree name(s) for files given without ``:tree``; None takes the only tree.
    event_branch
        Event-identifier expression (e.g. ``"event"``), written as a branch of the same
        (sanitised) name. None: ``entry``, the entry number in the chain of inputs, or for
        a k-fold manifest or KFoldModel the expression its folds were made with (``by``;
        another is used with a :class:`FoldExpressionWarning`); a list of k models needs it.
    step_size
        Chunk size for ``tree.iterate``.
    output_tree
        Name of the output tree; None uses each input tree's name.
    inf_as_missing
        Treat +-inf in a feature as missing (NaN) instead of an error (``--inf-as-missing``).
    progress
        Show progress on stderr; None when stderr is a terminal.
    threads
        Threads decompressing baskets (None: the usable cores, at most 8; 1: serial; at
        most 256, refused beyond: uproot starts them all at once).
    probability_branch
        Prefix of the per-class probability branches of a multi-class model (None:
        ``"bdt_prob"``); given for a model of one score an event, it warns that it writes
        nothing (``IdleOptionWarning``).

    Returns
    -------
    list of str
        The files written.

    Each output tree's title records the model's SHA-256 (``hepbdt scores (bdt_score);
    model sha256 ...``, see :func:`_model_identity`), so outputs of two models are told apart.
    """
    threads = check_threads(threads)  # before any file is opened
    job = _Job.make(model, branch, event_branch, inf_as_missing, probability_branch)
    sources = resolve_sources(files, tree, "apply")
    groups, total = _plan_outputs(job, sources, os.fspath(output), output_tree)
    with hold_outputs(list(groups), "apply"):
        _write_outputs(job, groups, total, step_size, progress, threads)
    job.note_unseen_missing()
    return list(groups)


def _write_outputs(job: _Job, groups: _Groups, total: int,
                   step_size: int | str, progress: bool | None, threads: int | None) -> None:
    """Write every output to its temporary, then rename them all into place."""
    replaced: list[str] = []  # the outputs already renamed into place
    try:
        with Progress(total, "hepbdt.apply", progress) as bar, decompression_threads(
            threads
        ) as executor, contextlib.ExitStack() as outputs:
            # The renames all happen at the end (the stack's exits, last output first), with
            # SIGINT and SIGTERM held back until they are done, so an interrupt leaves the
            # previous set or the new one.
            held = outputs.enter_context(DeferredSignals(done=", ".join(groups)))
            temporaries = {}
            for out in groups:
                outputs.push(_note_renamed(replaced, out))
                temporaries[out] = outputs.enter_context(atomic_path(out))
            for out_path, trees in groups.items():
                _write_output(job, temporaries[out_path], trees, step_size, executor, bar)
            held.hold()
    except OSError as exc:
        if replaced:  # a rename failed after others were done: say which files are new
            raise _partly_replaced(exc, replaced, list(groups), job) from exc
        raise


def _note_renamed(replaced: list[str], out: str) -> Any:
    """An exit callback for the stack of outputs: ``out`` was renamed into place when the
    exit of its atomic_path (the next one out of the stack) raised nothing."""
    def note(exc_type: Any, *_: Any) -> bool:
        if exc_type is None:
            replaced.append(out)
        return False
    return note


def _partly_replaced(exc: OSError, replaced: list[str], outputs: list[str], job: _Job
                     ) -> OSError:
    """The error of a set of outputs whose renames stopped part way: which are new."""
    kept = [out for out in outputs if out not in replaced]
    digest = f" (model sha256 {job.model_sha256[:12]}...)" if job.model_sha256 else ""
    return OSError(exc.errno, f"{exc.strerror or exc}; the outputs were renamed into place "
                   f"only in part: {len(replaced)} of {len(outputs)} ({', '.join(replaced)}) "
                   f"hold the new scores{digest}, {', '.join(kept)} their previous contents; "
                   "apply again", exc.filename)


@dataclass
class _Job:
    """What every chunk needs: the scorer, the expressions and the output branch names."""

    scorer: Any
    features: list[Expression]
    event: Expression | None
    branch: str
    id_name: str
    inf_as_missing: bool
    expressions: list[Expression] = field(default_factory=list)
    #: A multi-class model's branches: the suffix of each class and the probability prefix.
    class_suffixes: list[str] | None = None
    probability_branch: str = DEFAULT_PROBABILITY_BRANCH
    #: The files the model was read from (no output may be one of them) and its SHA-256.
    model_files: list[str] = field(default_factory=list)
    model_sha256: str | None = None
    #: Per feature, the events scored with a missing value (NaN) where hepbdt trained the
    #: model on none (None: the training had some, or the model is not hepbdt's own).
    unseen_missing: np.ndarray | None = None

    @classmethod
    def make(cls, model: Any, branch: str, event_branch: str | None, inf_as_missing: bool,
             probability_branch: str | None = None) -> _Job:
        """Load and check the model and the branch names; a k-fold model's event expression."""
        read = ModelBytes()  # the model files' bytes as they were loaded
        scorer = _scorer(model, event_branch, read)
        model_files, model_sha256 = _model_identity(model, scorer, read)
        if isinstance(scorer, KFoldModel):
            if event_branch is None and scorer.by is None:
                raise ApplyOptionError(unrecorded_by("applying it without event_branch"))
            if event_branch is None:
                event_branch = scorer.by  # the expression its folds were made with
            elif scorer.by is not None and event_branch != scorer.by:
                warnings.warn(
                    f"the folds of the k-fold model were made with {scorer.by!r}; scoring by "
                    f"{event_branch!r} as asked: each event is scored by the model that did "
                    "not train on it only if the two give the same event number",
                    FoldExpressionWarning, stacklevel=3)
        id_name = "entry" if event_branch is None else branch_name(event_branch)
        if not is_branch_name(branch) or branch == id_name:
            raise ApplyOptionError(f"score branch {branch!r} must be a branch name "
                                   f"({BRANCH_NAME_RULE}) other than {id_name!r}")
        suffixes = _class_suffixes(scorer)
        if suffixes is None and probability_branch is not None:
            warnings.warn(f"probability branch {probability_branch!r}: the model gives one "
                          f"score an event (written to {branch!r}); per-class probability "
                          "branches are written for a classifier of three or more classes, "
                          "so none is written", IdleOptionWarning,
                          stacklevel=user_stacklevel())
        if probability_branch is None:
            probability_branch = DEFAULT_PROBABILITY_BRANCH
        if suffixes is not None:
            if not is_branch_name(probability_branch):
                raise ApplyOptionError(f"probability branch {probability_branch!r} must be a "
                                       f"branch name ({BRANCH_NAME_RULE})")
            names = [f"{prefix}_{s}" for prefix in (branch, probability_branch)
                     for s in suffixes]
            clashes = sorted({n for n in names if names.count(n) > 1} | ({id_name} & set(names)))
            if clashes:
                raise ApplyOptionError(f"the per-class branches {clashes} would clash (scores "
                                 f"{branch}_<class>, probabilities {probability_branch}_<class>, "
                                 f"identifier {id_name!r}); choose another --branch or "
                                 "--probability-branch")
        definitions = getattr(scorer, "feature_definitions_", None) or {}
        features = [Expression(definitions.get(str(t), str(t)), "feature")
                    for t in scorer.feature_names_in_]
        for model in _models(scorer):
            check_saved_features(features, _rules(model), getattr(model, "branch_types_", None),
                                 ApplyOptionError)
        event = None if event_branch is None else Expression(event_branch, "event")
        return cls(scorer, features, event, branch, id_name, inf_as_missing,
                   [*features, *([event] if event else [])], suffixes, probability_branch,
                   model_files, model_sha256,
                   None if _trained_with_missing(scorer) else np.zeros(len(features), np.int64))

    def note_unseen_missing(self) -> None:
        """Warn of the events scored with a missing value where the training had none:
        every split sends them to its default side (that of +inf), which no training event
        chose; ``log(HT)`` at HT = 0 (-inf, missing with --inf-as-missing) scored as the
        largest HT."""
        if self.unseen_missing is None or not self.unseen_missing.any():
            return
        counts = zip([f.text for f in self.features], self.unseen_missing.tolist(),
                     strict=True)
        warnings.warn(unseen_missing_text(counts), MissingValueWarning,
                      stacklevel=user_stacklevel())

    def output_branches(self) -> list[str]:
        """The branches every output tree gets, without calling the model: the identifier
        and the scores (one, or per class; a model other than hepbdt's may give (n, k)
        scores, ``<branch>_0`` ...: see :func:`_check_friend_branches`)."""
        if self.class_suffixes is not None:
            return [*self._class_branches(np.empty((0, len(self.class_suffixes)))), self.id_name]
        return [self.branch, self.id_name]

    def score(self, X: np.ndarray, ids: np.ndarray, where: str) -> dict[str, np.ndarray]:
        """The score branches of one chunk."""
        try:
            if isinstance(self.scorer, KFoldModel):
                scores = self.scorer.decision_function(X, ids)
            else:
                scores = model_scores(self.scorer, X)
        except ValueError as exc:  # the model refuses these inputs (a DDT map's NaN mass)
            first = f", a chunk of {len(X)} entries from id {ids[0]}" if len(ids) else ""
            raise InputError(f"{where}{first}: {exc}") from None
        if scores.shape[0] != len(X) or scores.ndim not in (1, 2):
            raise InputError(
                f"{where}: the model returned scores of shape {scores.shape} for {len(X)} events"
            )
        if self.class_suffixes is not None and scores.ndim == 2:
            return self._class_branches(scores)
        return _branches(scores, self.branch)

    def _class_branches(self, scores: np.ndarray) -> dict[str, np.ndarray]:
        """Every class's raw score, then every class's probability (their softmax, which
        is the model's predict_proba)."""
        proba = softmax_rows(scores)
        columns = {f"{self.branch}_{s}": np.ascontiguousarray(scores[:, j])
                   for j, s in enumerate(self.class_suffixes or [])}
        columns.update({f"{self.probability_branch}_{s}": np.ascontiguousarray(proba[:, j])
                        for j, s in enumerate(self.class_suffixes or [])})
        return columns

    def empty(self) -> dict[str, np.ndarray]:
        """The branches of a tree with no entries (as many as one event's scores)."""
        probe = np.zeros((1, len(self.features)), np.float32)
        try:
            n_outputs = len(self.score(probe, np.zeros(1, np.int64), ""))
        except Exception:  # a model that cannot score zeros still gets its one branch
            n_outputs = 1
        if self.class_suffixes is not None:
            return self._class_branches(np.empty((0, len(self.class_suffixes))))
        return _branches(np.empty((0, n_outputs)) if n_outputs > 1 else np.empty(0), self.branch)


def _models(scorer: Any) -> list[Any]:
    """The fitted models behind a scorer: a KFoldModel's fold models, or the one model."""
    return scorer.models if isinstance(scorer, KFoldModel) else [scorer]


def _rules(model: Any) -> int:
    """The expression rules a model's features were computed by (a model not from a file, or
    not hepbdt's: today's)."""
    return getattr(model, "_expression_rules", EXPRESSION_RULES)


def _branches(scores: np.ndarray, branch: str) -> dict[str, np.ndarray]:
    """``{branch: scores}``, or ``{branch_j: scores[:, j]}`` for (n, k) scores."""
    if scores.ndim == 1:
        return {branch: scores}
    return {f"{branch}_{j}": np.ascontiguousarray(scores[:, j]) for j in range(scores.shape[1])}


def _class_suffixes(scorer: Any) -> list[str] | None:
    """The branch suffix of each class of a hepbdt multi-class model (None otherwise): the
    label as :func:`_label_suffix` writes it, or the class index where that leaves a name
    empty or two names equal; ApplyOptionError where an index would be another class's name
    (labels ``1``, ``a b`` and ``a_b``: ``<branch>_1`` would not be the class ``1``)."""
    models = _models(scorer)
    forest = getattr(models[0], "forest_", None)
    classes = getattr(models[0], "classes_", None)
    if forest is None or getattr(forest, "n_classes", 1) <= 1 or classes is None:
        return None
    suffixes = [_label_suffix(c) for c in classes]
    if all(suffixes) and len(set(suffixes)) == len(suffixes):
        return suffixes
    misnamed = [(j, i) for j in range(len(classes)) for i, suffix in enumerate(suffixes)
                if i != j and suffix == str(j)]
    if misnamed:
        j, i = misnamed[0]
        raise ApplyOptionError(
            f"the model's class labels {[str(c) for c in classes]} do not give distinct branch "
            f"names, and naming the classes by index would give class {str(classes[j])!r} the "
            f"name of class {str(classes[i])!r} (suffix {str(j)!r}); relabel the classes with "
            "distinct names of letters, digits and _ and train again")
    return [str(j) for j in range(len(classes))]


def _label_suffix(label: Any) -> str:
    """A class label as a branch-name suffix: runs of characters other than letters, digits
    and _ made one _ (none at the ends; the label's own _ kept, so a class name gives the
    branch ``hepbdt train`` names after it), a minus sign before a digit made ``m``
    (``-1``: ``m1``, not ``1``, the name of the class 1)."""
    text = re.sub(r"(?<![0-9A-Za-z_])-(?=[0-9])", "m", str(label))
    return "_".join(part for part in re.split(r"[^0-9A-Za-z_]+", text) if part)


class FriendOrderWarning(UserWarning):
    """Friend files (one per input) whose names sort otherwise than their inputs come: a
    chain of a glob of them is not in the inputs' entry order."""


def _trained_with_missing(scorer: Any) -> bool:
    """Whether a training event had a missing value, as far as hepbdt knows: True for a
    model it did not train (read from TMVA or XGBoost, or not hepbdt's)."""
    return any(trained_with_missing(getattr(m, "forest_", None)) for m in _models(scorer))


def _scorer(model: Any, event_branch: str | None, read: ModelBytes) -> Any:
    """One fitted model or a KFoldModel from what the user passed: a k-fold manifest or
    KFoldModel keeps its ``by``; a list of k models takes ``event_branch`` as its ``by``.
    The model files loaded are recorded in ``read``, in order."""
    items = list(model) if isinstance(model, list | tuple) else [model]
    if not items:
        raise InputError("apply() needs a model (or a list of k models for k-fold)")
    loaded = []
    for fold, item in enumerate(items):
        if isinstance(item, str | os.PathLike):
            if not os.path.exists(item):
                raise MissingFileError(f"model file {os.fspath(item)!r} does not exist")
            if len(items) > 1:  # model i scores the events of fold i: the file must be fold i's
                check_fold_name("the list of k-fold models", os.fspath(item), fold, InputError)
            check_model_files(item)
            item = load_model_digest(item, read)[0]
        if isinstance(item, KFoldModel):
            if len(items) > 1:  # its folds are event % k: more models would change k
                raise InputError(
                    f"apply() got a k-fold model ({item.k} folds by {item.by!r}) among "
                    f"{len(items)} models; pass the k-fold manifest (or KFoldModel) alone, or "
                    "a list of the k fold models"
                )
            for fold_model in item.models:
                _check_fitted(fold_model)
            return item
        _check_fitted(item)
        loaded.append(item)
    if len(loaded) == 1:
        return loaded[0]
    if event_branch is None:
        raise InputError(
            f"a list of {len(loaded)} k-fold models does not say which event-number expression "
            "its folds were made with: give event_branch (e.g. event_branch='event'), or pass "
            "the k-fold manifest (model.json) or a KFoldModel(models, by=...), which record it"
        )
    try:
        return KFoldModel(loaded, by=event_branch)
    except ValueError as exc:
        raise InputError(f"the k-fold models do not fit together: {exc}") from None


def _model_identity(model: Any, scorer: Any, read: ModelBytes) -> tuple[list[str], str | None]:
    """The files a model was read from and the SHA-256 :func:`apply` records in every output.

    The SHA-256 of the model file's bytes (``sha256sum model.json``, as the output set's
    manifest records it); a k-fold manifest: of its bytes followed by its fold files' in fold
    order (``cat model.json model_fold0.json model_fold1.json ... | sha256sum``); a list of
    model files: of their bytes in order. A model in memory: of the JSON its ``save``
    writes (a KFoldModel: its ``by`` expression and a newline, then its folds' JSON); None
    for one without ``to_dict``. Model files: the files and bytes :func:`_scorer` loaded,
    ``read`` (reading the files again here recorded a model that a training swapped into
    their folder meanwhile, beside the scores of the one loaded)."""
    items = list(model) if isinstance(model, list | tuple) else [model]
    digest = hashlib.sha256()
    if all(isinstance(item, str | os.PathLike) for item in items):
        return read.files, read.sha256()
    files = [os.fspath(item) for item in items if isinstance(item, str | os.PathLike)]
    models = _models(scorer)
    if not all(callable(getattr(m, "to_dict", None)) for m in models):
        return files, None
    if isinstance(scorer, KFoldModel):
        digest.update(f"{scorer.by}\n".encode())
    for fold_model in models:
        digest.update(dumps_strict(fold_model.to_dict()).encode("utf-8"))  # what save() writes
    return files, digest.hexdigest()


def _check_fitted(model: Any) -> None:
    """InputError unless ``model`` can score and names the features to read."""
    if not (hasattr(model, "decision_function") or hasattr(model, "predict")):
        raise InputError(
            f"{type(model).__name__} is not a fitted model: apply() needs "
            "decision_function(X) or predict(X) (fit it first, or pass a model file)"
        )
    if getattr(model, "feature_names_in_", None) is None:
        raise InputError(
            f"the {type(model).__name__} has no feature names, so apply() cannot know which "
            "branches to read: fit it on a hepbdt Dataset's X (or a data frame) whose "
            "columns are named by their expressions"
        )


def _plan_outputs(job: _Job, sources: list[Source], output: str, output_tree: str | None
                  ) -> tuple[_Groups, int]:
    """Open and check every input; group them by (output file, output tree); check that
    every output can be written, before any scoring."""
    _check_output_tree(output_tree)
    groups: _Groups = {}
    first_input: dict[str, str] = {}
    trees_read: dict[tuple[Any, str], str] = {}
    total = 0
    branches = job.output_branches()
    for source in sources:
        with open_root_file(source.path, "apply") as file:
            reader = TreeReader(file, source, job.expressions, "apply")
            # 'a.root' beside 'a.root:Events' (a glob and a listed file): one tree scored twice
            note_tree_read(trees_read, source.path, reader.tree_name, "apply")
            _check_branch_types(job, reader)
            _check_friend_branches(job, reader, branches)
            out_path = _output_path(output, source, reader.tree_name)
            real = os.path.realpath(out_path)
            if "{" in output and first_input.setdefault(real, source.path) != source.path:
                raise OutputSetError(f"apply: the inputs {first_input[real]!r} and "
                                 f"{source.path!r} both give the output {out_path!r}; make "
                                 "the name unique (e.g. add {tree}, or a folder per input)")
            out_tree = output_tree or reader.tree_name
            members = groups.setdefault(out_path, {}).setdefault(out_tree, [])
            _check_one_chain(members, reader.tree_name, out_path, out_tree)
            members.append((Source(source.path, reader.tree_path), reader.num_entries,
                            file_version(source.path)))
            total += reader.num_entries
    input_paths = {os.path.realpath(s.path) for s in sources}
    model_paths = {os.path.realpath(p) for p in job.model_files}
    for out_path in groups:
        if os.path.realpath(out_path) in input_paths | model_paths:
            what = "input files" if os.path.realpath(out_path) in input_paths else "model files"
            raise ApplyOptionError(
                f"apply: output {out_path!r} is one of the {what}; write the friend tree to a "
                "new file"
            )
        check_writable(out_path)
        _check_replaceable(out_path, len(branches))
    _note_friend_order(groups)
    return groups, total


def _check_output_tree(output_tree: Any) -> None:
    """ApplyOptionError unless ``output_tree`` is None or a tree name ROOT reads back: not
    empty (it gave the input tree's name without a word), without ';' (ROOT reads 'a;1' as
    cycle 1 of 'a', and uproot wrote a key 'a;1;1' that TFile::Get finds by no name) and
    without an empty folder name ('/a', 'a/', 'a//b')."""
    if output_tree is None:
        return
    if not isinstance(output_tree, str) or not output_tree.strip():
        problem = "is not a name"
    elif ";" in output_tree:
        problem = "holds ';', which ROOT reads as a cycle number ('a;1' is cycle 1 of 'a')"
    elif not all(output_tree.split("/")):
        problem = "has an empty folder name (a '/' first, last or twice)"
    else:
        return
    raise ApplyOptionError(f"apply: output tree {output_tree!r} {problem}; give a tree name, "
                           "or leave --output-tree out (each input tree's own name)")


def _note_friend_order(groups: _Groups) -> None:
    """Warn (:class:`FriendOrderWarning`) when the output files of one tree name (one per
    input, ``{stem}``) sort by name otherwise than their inputs come: ``TChain::Add`` sorts a
    glob's files by name, so a chain of the outputs' glob attached to the chain of the
    inputs gives entries other inputs' scores, with no word from ROOT (ttbar.root and
    ttbar_ext.root give ttbar_ext_friend.root first)."""
    by_tree: dict[str, list[tuple[str, str]]] = {}
    for out_path, trees in groups.items():
        for out_tree, members in trees.items():
            by_tree.setdefault(out_tree, []).append((out_path, members[0][0].path))
    for out_tree, pairs in by_tree.items():
        outputs = [out for out, _ in pairs]
        if outputs == sorted(outputs):
            continue
        i = next(i for i, (a, b) in enumerate(zip(outputs, sorted(outputs), strict=True))
                 if a != b)
        later = outputs.index(sorted(outputs)[i])
        warnings.warn(
            f"the friend files of tree {out_tree!r} sort by name otherwise than their inputs were given: "
            f"{outputs[later]!r} (of {pairs[later][1]!r}) before {outputs[i]!r} (of "
            f"{pairs[i][1]!r}), so a TChain of a glob of the outputs (TChain::Add sorts a "
            "glob's files by name) attached to the chain of the inputs would give entries "
            "the scores of other events without a word from ROOT; add the friend files in "
            "the order of their inputs, or check with --event (no entry with event != "
            "friend.event)", FriendOrderWarning, stacklevel=user_stacklevel())


def _check_one_chain(members: _Members, tree_name: str, out_path: str,
                     out_tree: str) -> None:
    """ApplyOptionError when an output tree would hold the scores of input trees of other
    names (``--output-tree`` over TreeS and TreeB): a friend of their chain alone, which
    attached to either tree gives its entries the other's scores."""
    names = {source.tree.split(";")[0] for source, *_ in members}
    if members and tree_name not in names:
        raise ApplyOptionError(
            f"apply: the output tree {out_tree!r} of {out_path!r} would hold the scores of the "
            f"input trees {sorted(names)[0]!r} and {tree_name!r} one after the other, a friend "
            "of neither tree alone; leave --output-tree out (each input tree gets a friend tree "
            "of its name), or write each tree to its own file ({tree} in --output)")


def _check_replaceable(path: str, n_branches: int) -> None:
    """ApplyOptionError unless an existing ``path`` is a friend file apply could have
    written: trees titled as apply titles them (FRIEND_TITLE), of at most ``n_branches``
    branches, and nothing else (an ntuple of the analysis named as the output was replaced
    by a friend tree; so was one of two branches, before the title was read)."""
    if not os.path.exists(path):
        return
    refuse = ApplyOptionError(f"apply: output {path!r} exists and holds what apply does not "
                              "write (trees not titled as its friend trees, more branches, or "
                              "other objects): give a new file name, or remove it first")
    try:
        with uproot.open(path) as file:
            kinds = file.classnames()  # recursive: a folder's trees are listed after it
            for key, kind in kinds.items():
                if kind == "TDirectory":  # the folder of an input tree 'dir/Events'
                    continue
                tree = file[key] if kind == "TTree" else None
                if (tree is None or not str(tree.title).startswith(FRIEND_TITLE)
                        or len(tree.keys()) > n_branches):
                    raise refuse
    except ApplyOptionError:
        raise
    except Exception:  # noqa: BLE001 - not a ROOT file uproot reads: not one apply wrote
        raise refuse from None


def _check_branch_types(job: _Job, reader: TreeReader) -> None:
    """BranchTypeError for a branch the features read whose type here would give them other
    values than the type the model's training read (``branch_types_``, recorded by
    :func:`hepbdt.io.read`; a model without the record is not checked)."""
    models = _models(job.scorer)
    recorded = next((m.branch_types_ for m in models
                     if getattr(m, "branch_types_", None) is not None), None)
    if recorded is None:
        return
    read = {name for feature in job.features for name in feature.names}
    types = {name: text for name, text in reader.branch_types().items() if name in read}
    check_types(recorded, types, job.features, reader.where, "at training")


def _check_friend_branches(job: _Job, reader: TreeReader, branches: list[str]) -> None:
    """ApplyOptionError for an output branch named as a branch (or alias) of the input tree
    it is a friend of: reading that name would give the input's values, not the output's.
    The identifier may share its name when it is that branch (``--event event``)."""
    tree = reader.tree
    existing = {*tree.keys(), *(getattr(tree, "aliases", None) or {})}  # TTree or RNTuple
    with contextlib.suppress(TypeError):  # a TTree's split branches by their own names too
        existing.update(tree.keys(full_paths=False))
    clashes = [name for name in branches if name in existing]
    models = _models(job.scorer)
    if not all(hasattr(m, "forest_") for m in models):  # (n, k) scores are <branch>_<j>
        clashes += sorted(n for n in existing if re.fullmatch(rf"{job.branch}_\d+", n))
    if job.event is not None and job.event.text.strip() == job.id_name:
        clashes = [name for name in clashes if name != job.id_name]
    if clashes:
        raise ApplyOptionError(
            f"{reader.where} already has branches named {clashes}, as the friend tree's "
            "would be; reading them through the friend would give the input's values: choose "
            "another --branch (or --probability-branch), or, for the identifier, give --event "
            "with the input's event-number branch"
        )


_PLACEHOLDERS = ("stem", "name", "tree")


def _check_placeholders(output: str) -> None:
    """ApplyOptionError unless every ``{...}`` of ``output`` is ``{stem}``, ``{name}`` or
    ``{tree}`` as written: str.format also takes ``{stem!r}``, ``{stem:>30}`` and
    ``{stem.upper}``, which named the files 'signal'.root, a padded name and "<built-in
    method upper of str object at 0x...>.root"."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion
                  in string.Formatter().parse(output) if name is not None]
    except ValueError as err:
        fields, problem = [], str(err)
    else:
        bad = [f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
               for name, spec, conversion in fields
               if name not in _PLACEHOLDERS or spec or conversion]
        problem = f"{bad[0]} is none of them" if bad else ""
    if problem:
        raise ApplyOptionError(
            f"output {output!r}: placeholders may be {{stem}}, {{name}} and {{tree}}, as "
            f"written here (no conversion, format or attribute; {{{{ and }}}} for a brace); "
            f"{problem}")


def _output_path(output: str, source: Source, tree_name: str) -> str:
    """The output file of one input: ``output`` with its placeholders filled."""
    if "{" not in output:
        return output
    _check_placeholders(output)
    base = os.path.basename(source.path)
    stem = base[:-5] if base.lower().endswith(".root") else os.path.splitext(base)[0]
    return output.format(stem=stem, name=base, tree=tree_name.replace("/", "_"))


def _write_output(job: _Job, temporary: str, trees: dict[str, _Members],
                  step_size: int | str, executor: Any, bar: Progress) -> None:
    """Score the inputs of one output file, tree by tree, into its temporary file."""
    title = f"{FRIEND_TITLE} ({job.branch})" + (
        f"; model sha256 {job.model_sha256}" if job.model_sha256 else "")
    with uproot.recreate(temporary) as out_file:
        for out_tree, members in trees.items():
            writer = None
            chain_offset = 0
            for source, n_entries, version in members:
                for chunk in _score_chunks(job, source, version, chain_offset, step_size,
                                           executor, bar):
                    if writer is None:
                        writer = out_file.mktree(out_tree, {k: v.dtype for k, v in chunk.items()},
                                                 title=title)
                    writer.extend(chunk)
                chain_offset += n_entries
            if writer is None:  # no entries at all: an empty tree of the same shape
                empty = job.empty()
                out_file.mktree(out_tree, {**{k: v.dtype for k, v in empty.items()},
                                           job.id_name: np.int64}, title=title)


def _score_chunks(job: _Job, source: Source, version: FileVersion | None, chain_offset: int,
                  step_size: int | str, executor: Any, bar: Progress):
    """Yield the output branches of one input tree, chunk by chunk (refused when the file
    is no longer the one planned, of ``version``)."""
    with open_root_file(source.path, "apply") as file:
        check_file_version(source.path, version, "apply")
        reader = TreeReader(file, source, job.expressions, "apply")
        with contextlib.closing(reader.chunks(step_size, executor)) as chunks:
            for arrays, start, stop in chunks:
                entries = np.arange(start, stop, dtype=np.int64)
                X = np.empty((stop - start, len(job.features)), dtype=np.float32)
                fill_rows(X, 0, [feature_column(reader, e, arrays, entries, job.inf_as_missing,
                                                _APPLY_INF_REMEDY) for e in job.features])
                if job.unseen_missing is not None:
                    job.unseen_missing += np.count_nonzero(np.isnan(X), axis=0)
                if job.event is None:
                    ids = entries + chain_offset
                else:
                    ids = _event_column(reader, job.event, arrays, entries)
                yield {**job.score(X, ids, reader.where), job.id_name: ids}
                bar.update(stop - start)


#: How apply makes +-inf missing, for :func:`~hepbdt.io.samples.feature_column`'s error.
_APPLY_INF_REMEDY = ("rerun with --inf-as-missing (hepbdt apply) or inf_as_missing=True "
                     "(hepbdt.apply in Python), as a training with inf_as_missing = true did")
