"""Writing results back to ROOT: score trees like TMVA's TrainTree/TestTree, and reading
them back.

:func:`write_scores` writes a Dataset and its scores as a tree; :func:`read_scores` reads
such a tree into a Dataset and its score branches, knowing the layout the writer used.
Every file is written to a temporary name and renamed when complete, so an interrupted
write never leaves a truncated file under the final name. Scoring ntuples with a model is
:mod:`hepbdt.scoring`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import uproot

from hepbdt._util import atomic_path
from hepbdt.io.dataset import Dataset
from hepbdt.io.errors import InputError
from hepbdt.io.samples import _corrupt_error, _is_decompression_error, open_root_file

__all__ = ["write_scores", "read_scores", "read_class_names", "branch_name",
           "is_branch_name", "BRANCH_NAME_RULE", "BOOKKEEPING_BRANCHES", "RDATAFRAME_COLUMNS"]

# Bytes of columns per extend (one basket a branch): the writer's copies (contiguous, then
# uproot's big-endian ones) stay this size whatever the events and branches; 1M events a
# chunk took 88 MB above the data at 540k x 12 features.
_WRITE_CHUNK_BYTES = 16 << 20
#: The branches :func:`write_scores` writes between the features and the scores, in order
#: (classID and label for classification, target for regression).
BOOKKEEPING_BRANCHES = ("classID", "label", "target", "weight", "event", "sample")


# An expression's operators spelled as words in its branch name: dropping them named "-nj"
# and "!flag" as the branches nj and flag, and "x*2" as x_2.
_OPERATOR_WORDS = {"**": "pow", "<=": "le", ">=": "ge", "==": "eq", "!=": "ne", "&&": "and",
                   "||": "or", "//": "floordiv", "*": "times", "/": "over", "+": "plus",
                   "-": "minus", "%": "mod", "<": "lt", ">": "gt", "!": "not", "~": "inv",
                   "&": "and", "|": "or", "^": "xor"}
_NAME_TOKEN = re.compile(
    r"(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)"
    r"|(?P<operator>" + "|".join(re.escape(op) for op in _OPERATOR_WORDS) + ")")


def branch_name(text: str) -> str:
    """A ROOT-friendly branch name for an expression: a branch name stays itself,
    ``"Jet_pt[:, 0]"`` is ``Jet_pt_0``, ``"log(lep_pt)"`` ``log_lep_pt``, and operators are
    spelled out (``"-nj"`` is ``minus_nj``, ``"x**2"`` ``x_pow_2``, ``"eta < 2.4"``
    ``eta_lt_2p4``), so that a name never reads as another branch's. RDataFrame's own
    column names (:data:`RDATAFRAME_COLUMNS`) lose their final ``_`` (``rdfentry_`` is
    ``rdfentry``): RDataFrame would read its entry number for them.

    The name is a valid C++ identifier for ``RDataFrame`` and ``TTree::Draw``: the
    expression's words, numbers (``.`` as ``p``, an exponent's ``-`` as ``m``) and
    operators joined by ``_``; other characters (brackets, commas, spaces) separate them.
    """
    if is_branch_name(text):
        return text
    parts = []
    for match in _NAME_TOKEN.finditer(text):
        if match.lastgroup == "operator":
            parts.append(_OPERATOR_WORDS[match.group()])
        elif match.lastgroup == "number":
            number = match.group()
            number = f"0{number}" if number.startswith(".") else number
            parts.append(number.replace(".", "p").replace("-", "m").replace("+", ""))
        else:
            parts.append(match.group())
    name = "_".join(parts).strip("_") or "x"
    return f"_{name}" if name[0].isdigit() else name


_BRANCH_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: Names RDataFrame gives its own columns (the entry and slot numbers, and their old tdf
#: spellings): a branch so named is shadowed, ``Filter("rdfentry_ > 0.5")`` and
#: ``AsNumpy(["rdfentry_"])`` reading the entry number instead of its values, without a word.
RDATAFRAME_COLUMNS = ("rdfentry_", "rdfslot_", "tdfentry_", "tdfslot_")
BRANCH_NAME_RULE = ("letters, digits and _, not starting with a digit, and none of "
                    f"RDataFrame's own column names {', '.join(RDATAFRAME_COLUMNS)}")


def is_branch_name(name: str) -> bool:
    """Whether ``name`` may name a branch hepbdt writes: a C++ identifier of ASCII letters,
    digits and ``_`` (what ``RDataFrame`` and ``TTree::Draw`` take) that RDataFrame does
    not take for a column of its own (:data:`RDATAFRAME_COLUMNS`)."""
    return (isinstance(name, str) and _BRANCH_NAME.fullmatch(name) is not None
            and name not in RDATAFRAME_COLUMNS)


def _unique_names(texts: Sequence[str], reserved: set[str]) -> list[str]:
    """The branch name of each feature: a feature that is a branch name keeps it (unless
    ``reserved``), before any expression whose spelled-out name would take it; a name taken
    gets ``_2``, ``_3``, ..."""
    used = set(reserved)
    names: list[str | None] = [None] * len(texts)
    plain = [is_branch_name(text) for text in texts]
    for i in sorted(range(len(texts)), key=lambda i: not plain[i]):  # stable: plain ones first
        base = branch_name(texts[i])
        name, suffix = base, 2
        while name in used:
            name, suffix = f"{base}_{suffix}", suffix + 1
        used.add(name)
        names[i] = name
    return [str(name) for name in names]


def _legacy_unique_names(texts: Sequence[str], reserved: set[str]) -> list[str]:
    """The names writers before 2026-12-04 gave (operators dropped, in feature order):
    files that do not record their features name them so."""
    used = set(reserved)
    names = []
    for text in texts:
        base = re.sub(r"[^0-9A-Za-z_]+", "_", text).strip("_") or "x"
        base = f"_{base}" if base[0].isdigit() else base
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
        columns = {str(k): np.asarray(v) for k, v in scores.items()}
    else:
        array = np.asarray(scores)
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
        if not is_branch_name(name):
            raise InputError(f"score branch name {name!r} is not a valid branch name "
                             f"({BRANCH_NAME_RULE}); try {branch_name(name)!r}")
        if name in BOOKKEEPING_BRANCHES:  # read_scores finds the layout by these names
            raise InputError(f"score branch name {name!r} is one of the bookkeeping branches "
                             f"{list(BOOKKEEPING_BRANCHES)}; give the scores another name")
        columns[name] = _float64_column(name, column)
    return columns


def _float64_column(name: str, column: np.ndarray) -> np.ndarray:
    """A score column as float64; InputError where that would change a value."""
    kind = column.dtype.kind
    if kind not in "biuf":
        raise InputError(f"score {name!r} must hold real numbers, not {column.dtype}")
    if kind in "iu" and column.size and (column.max() > 2**53 or column.min() < -(2**53)):
        raise InputError(f"score {name!r} holds integers beyond 2**53, which float64 (the "
                         "score branches' type) cannot hold exactly")
    values = column.astype(np.float64)
    if kind == "f" and column.dtype.itemsize > 8 and not np.array_equal(
            values.astype(column.dtype), column, equal_nan=True):
        raise InputError(f"score {name!r} ({column.dtype}) has values that float64 (the score "
                         "branches' type) cannot hold exactly")
    return values


def _names_string(names: Sequence[str], what: str) -> str:
    """``"0=a;1=b"`` as :func:`read_scores` parses it; InputError for a name it would misread."""
    text = ";".join(f"{i}={name}" for i, name in enumerate(names))
    if _parse_names(text) != [str(name) for name in names]:
        raise InputError(f"{what} names {list(names)}: a name containing ';' followed by "
                         "digits and '=' cannot be stored as '0=name;1=name'; rename it")
    return text


def _parse_names(text: str) -> list[str]:
    """The names of a ``"0=a;1=b"`` string, by index (a ';' inside a name is kept)."""
    pairs = [item.split("=", 1) for item in re.split(r";(?=[0-9]+=)", text) if "=" in item]
    pairs = [(i, name) for i, name in pairs if re.fullmatch("[0-9]+", i)]
    return [name for _, name in sorted((int(i), name) for i, name in pairs)]


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
    weights: str = "event weights as read",
    class_names: Sequence[str] | None = None,
) -> str:
    """Write a Dataset and its scores as a tree, like TMVA's TrainTree/TestTree.

    Branches: the features (float32, names from :func:`branch_name` of the feature
    expressions; one that would take the name of an earlier or later branch gets ``_2``,
    ``_3``...), ``classID`` (int32, TMVA's convention: 0 signal, 1 background in a 0/1
    problem, else the class index) and ``label`` (int32, ``Dataset.y``) for
    classification or ``target`` (float32) for regression, ``weight`` (float64),
    ``event`` (int64), ``sample`` (int32 sample index) and the score(s) (float64; a score
    named like a bookkeeping branch, or one float64 would change, is an InputError).

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
        Tree title; the sample names and ``weights`` are added to it.
    weights
        What the ``weight`` branch holds (e.g. "training weights, normalised:
        equal_num_events" for a TrainTree), written into the title.
    class_names
        The name of each class label (``label`` and ``classID`` index it), for a
        multi-class training: written into the title and as the string ``<tree>_classes``
        ("0=bg0;1=bg1;..."), which :func:`read_class_names` reads back.

    The sample names (the ``sample`` branch indexes them) are also written as the string
    ``<tree>_samples`` ("0=signal;1=qcd;..."), which :func:`read_scores` reads back.

    Returns
    -------
    str
        The path written.
    """
    n = len(dataset)
    score_columns = _score_columns(scores, n, score_branch)
    columns = _bookkeeping_columns(dataset, class_names)
    columns.update(score_columns)
    if features:
        names = _unique_names(dataset.feature_names, {*columns, *BOOKKEEPING_BRANCHES})
        X = dataset.X
        # Binned data: each event's bin lower edge, the value every split of its model sees.
        feature_columns = {name: X.feature_values(j) if dataset.binned else X[:, j]
                           for j, name in enumerate(names)}
        columns = {**feature_columns, **columns}

    path = os.fspath(path)
    with atomic_path(path) as temporary:
        if update and os.path.exists(path):
            shutil.copyfile(path, temporary)
            file = uproot.update(temporary)
            _delete_every_cycle(file, tree)
        else:
            file = uproot.recreate(temporary)
        with file:
            samples = _names_string(dataset.sample_names, "sample")
            for key in (f"{tree}_samples", f"{tree}_classes", f"{tree}_features"):
                _delete_every_cycle(file, key)
            file[f"{tree}_samples"] = samples
            if features:  # which feature each branch holds (read_scores maps names by it)
                with contextlib.suppress(InputError):  # a name the string cannot hold
                    file[f"{tree}_features"] = _names_string(dataset.feature_names, "feature")
            classes = ""
            if class_names is not None:
                classes = _names_string(class_names, "class")
                file[f"{tree}_classes"] = classes
                classes = f"; class: {classes}"
            output = file.mktree(tree, {k: v.dtype for k, v in columns.items()},
                                 title=f"{title}; sample: {samples}{classes}; weight: {weights}")
            row_bytes = sum(v.dtype.itemsize for v in columns.values())
            rows = max(1, _WRITE_CHUNK_BYTES // max(1, row_bytes))
            for start in range(0, n, rows):
                stop = min(start + rows, n)
                output.extend({k: np.ascontiguousarray(v[start:stop]) for k, v in columns.items()})
    return path


def _delete_every_cycle(file: Any, path: str) -> None:
    """Delete every cycle of ``path`` (``"dir/name"`` too) from a file open for update."""
    folder, _, name = path.rpartition("/")
    try:
        directory = file[folder] if folder else file
    except KeyError:
        return
    if not isinstance(directory, uproot.writing.WritableDirectory):
        return
    # uproot deletes the highest cycle of a name at a time; before 5.7.6 deleting a name
    # that is not there raised AttributeError, not KeyError
    while name in directory.keys(recursive=False, cycle=False):
        del directory[name]


def _bookkeeping_columns(dataset: Dataset, class_names: Sequence[str] | None = None
                         ) -> dict[str, np.ndarray]:
    """classID and label (or target), weight, event and sample, in BOOKKEEPING_BRANCHES order.

    classID is TMVA's 0 signal, 1 background in a 0/1 problem; with more than two
    ``class_names`` it is the label, whichever labels the events hold."""
    columns: dict[str, np.ndarray] = {}
    if dataset.task == "classification":
        labels = dataset.y
        if class_names is not None and len(labels) and int(labels.max()) >= len(class_names):
            raise InputError(f"class label {int(labels.max())} has no name in class_names "
                             f"{list(class_names)}")
        binary = (class_names is None or len(class_names) <= 2) and set(
            np.unique(labels).tolist()) <= {0, 1}
        columns["classID"] = (1 - labels if binary else labels).astype(np.int32)
        columns["label"] = labels.astype(np.int32)
    elif dataset.task == "regression":
        columns["target"] = dataset.y.astype(np.float32)
    columns["weight"] = dataset.w
    columns["event"] = dataset.event.astype(np.int64, copy=False)  # int64 on disk, as always
    columns["sample"] = dataset.sample_index.astype(np.int32)  # int32 on disk, as ever
    return columns


def read_scores(path: str | os.PathLike, tree: str, feature_names: Sequence[str] | None = None
                ) -> tuple[Dataset, dict[str, np.ndarray]]:
    """Read a tree written by :func:`write_scores` with its features: the Dataset and the
    score branches in the order written.

    The layout is the writer's: feature branches, then BOOKKEEPING_BRANCHES, then scores.
    With ``feature_names`` (a model's features) the feature branches are found by the
    names the writer gives them (:func:`branch_name`), in that order, and named so in the
    Dataset; a missing one is an InputError, so a tree of other features is never read by
    position. InputError too when the tree is missing or was written without features.

    The records the writer keeps twice must agree, else InputError naming the file, the
    tree and both values: the sample (and class) names in the tree's title and in
    ``<tree>_samples`` (``<tree>_classes``), the names and the ``sample`` indices (and
    ``label``) present, ``classID`` and ``label`` (TMVA's 0 signal: ``1 - label`` in a
    two-class tree, else the label), ``<tree>_features`` and the feature branches, and the
    sample and class names of ``TrainTree`` and ``TestTree`` in one file.
    """
    where = f"{os.fspath(path)}:{tree}"
    with _score_file(path, tree) as file:
        if tree not in file:
            raise InputError(f"{os.fspath(path)}: no tree {tree!r}; give the scores.root that "
                             "hepbdt train wrote")
        keys = list(file[tree].keys())
        first = next((i for i, k in enumerate(keys) if k in BOOKKEEPING_BRANCHES), None)
        # the bookkeeping branches follow the features (none of which takes their names)
        target = "target" if "target" in keys[first or 0:] else "label"
        missing = [k for k in (target, "weight", "event", "sample") if k not in keys]
        if first is None or missing or first == 0:
            raise InputError(f"{where} lacks the feature or bookkeeping branches "
                             f"({missing or 'no feature branches'}); was it written by "
                             "hepbdt train with score_features = true?")
        score_branches = keys[keys.index("sample") + 1:]
        records = _checked_records(file, os.fspath(path), tree)
        _check_feature_record(records["features"], keys[:first], keys, where)
        feature_branches, names = _feature_branches(keys[:first], keys, feature_names, where,
                                                    records["features"])
        class_ids = ["classID"] if target == "label" and "classID" in keys else []
        arrays = file[tree].arrays([*feature_branches, target, *class_ids, "weight", "event",
                                    "sample", *score_branches], library="np")
    _check_indices(arrays["sample"], records["samples"], f"{tree}_samples", "sample", where)
    if target == "label":
        _check_indices(arrays["label"], records["classes"] or ["background", "signal"],
                       f"{tree}_classes" if records["classes"] else "a two-class tree", "label",
                       where)
        if class_ids:
            _check_class_ids(arrays["classID"], arrays["label"], records["classes"], where)
    X = np.column_stack([arrays[b] for b in feature_branches]).astype(np.float32)
    data = Dataset(X, y=arrays[target], w=arrays["weight"], sample_index=arrays["sample"],
                   event=arrays["event"], feature_names=names, sample_names=records["samples"],
                   task="regression" if target == "target" else "classification")
    return data, {k: arrays[k] for k in score_branches}


def read_class_names(path: str | os.PathLike, tree: str) -> list[str] | None:
    """The class names :func:`write_scores` stored beside a tree of a multi-class training
    (index = the ``label`` branch), or None when it stored none (two classes, regression);
    InputError when they disagree with the tree's title or the other score tree's."""
    with _score_file(path, tree) as file:
        if tree not in file:
            return _sample_names(file, tree, "classes")
        return _checked_records(file, os.fspath(path), tree)["classes"]


@contextlib.contextmanager
def _score_file(path: str | os.PathLike, tree: str) -> Iterator[Any]:
    """``path`` open for reading score trees; a file that is missing, not a ROOT file,
    truncated or damaged (a basket that does not decompress or deserialise) is one
    InputError naming ``path:tree``, as the readers of ntuples say it."""
    where = f"{os.fspath(path)}:{tree}"
    with open_root_file(os.fspath(path), "scores file") as file:
        try:
            yield file
        except InputError:
            raise
        except Exception as err:
            if _is_decompression_error(err):
                reason = str(err).splitlines()[0] if str(err) else ""
                raise InputError(f"{where}: a basket does not decompress ({type(err).__name__}: "
                                 f"{reason}): the file is damaged; copy it again or write it "
                                 "anew with hepbdt train") from err
            raise _corrupt_error(err, where) from err


def _sample_names(file: Any, tree: str, what: str = "samples") -> list[str] | None:
    """The sample (or class) names :func:`write_scores` stored beside a tree (None when
    absent)."""
    key = f"{tree}_{what}"
    if key not in file:
        return None
    return _parse_names(str(file[key]))


#: The other tree of TMVA's pair: the sample and class names of both must agree.
_SIBLING_TREES = {"TrainTree": "TestTree", "TestTree": "TrainTree"}
_RECORDS = ("samples", "classes", "features")


def _names_record(file: Any, path: str, key: str) -> tuple[str, list[str]] | None:
    """The text of a ``"0=a;1=b"`` object beside a score tree and its names (None when
    absent); InputError when it is malformed (:func:`_strict_names`)."""
    if key not in file:
        return None
    return _strict_names(str(file[key]), f"{path}: {key}")


def _strict_names(text: str, what: str) -> tuple[str, list[str]]:
    """``text`` and the names of its ``"0=a;1=b"``; InputError naming ``what`` when it is
    empty or its indices are not 0, 1, ... each once (``"0=a;2=b"`` put b at index 1)."""
    items = re.split(r";(?=[0-9]+=)", text)
    pairs = [re.fullmatch(r"([0-9]+)=(.*)", item, re.DOTALL) for item in items]
    indices = sorted(int(m.group(1)) for m in pairs if m is not None)
    if not text or None in pairs or indices != list(range(len(items))):
        raise InputError(f"{what} is {text!r}, not the names of indices 0, 1, ... as hepbdt "
                         "writes them ('0=signal;1=qcd'); the file is damaged: write it anew "
                         "with hepbdt train")
    return text, _parse_names(text)


def _shown(record: tuple[str, list[str]] | None) -> str:
    return "nothing" if record is None else repr(record[0])


def _check_title(title: str, records: dict[str, tuple[str, list[str]] | None], path: str,
                 tree: str) -> None:
    """InputError unless the sample and class names :func:`write_scores` wrote into the
    tree's title are those of ``<tree>_samples`` and ``<tree>_classes``; a record absent
    (a copy of the tree alone, by ROOT) is taken from the title. A title without them, as
    a tree not written by :func:`write_scores` has, is not checked."""
    match = re.search(r"; sample: (.*?)(?:; class: (.*?))?; weight: ", title, re.DOTALL)
    if match is None:
        return
    said = {"samples": match.group(1), "classes": match.group(2)}
    for what in ("samples", "classes"):
        if records[what] is None and said[what] is not None:
            records[what] = _strict_names(said[what], f"{path}:{tree}: its title's {what}")
    samples, classes = records["samples"], records["classes"]
    fragment = (f"; sample: {'' if samples is None else samples[0]}"
                f"{'' if classes is None else '; class: ' + classes[0]}; weight: ")
    if fragment in title:
        return
    what = "samples" if samples is None or said["samples"] != samples[0] else "classes"
    raise InputError(f"{path}:{tree}: its title names the {what} {said[what] or ''!r} and "
                     f"{tree}_{what} holds {_shown(records[what])}; they disagree, so which "
                     f"{what[:-1]} an index is cannot be known: write the file anew with "
                     "hepbdt train")


def _checked_records(file: Any, path: str, tree: str) -> dict[str, list[str] | None]:
    """The sample, class and feature names recorded beside ``tree``, each checked against
    the tree's title and the sample and class names against the other score tree's;
    InputError naming the file, the tree and both values at the first disagreement."""
    records = {what: _names_record(file, path, f"{tree}_{what}") for what in _RECORDS}
    _check_title(str(file[tree].title), records, path, tree)
    sibling = _SIBLING_TREES.get(tree)
    if sibling is not None and sibling in file:
        others = {what: _names_record(file, path, f"{sibling}_{what}") for what in _RECORDS}
        _check_title(str(file[sibling].title), others, path, sibling)
        for what in ("samples", "classes"):
            mine, theirs = (None if r is None else r[0] for r in (records[what], others[what]))
            if mine != theirs:
                raise InputError(
                    f"{path}: {tree}_{what} holds {_shown(records[what])} and {sibling}_"
                    f"{what} {_shown(others[what])}; the two trees of one training name the "
                    f"same {what}, so the file is damaged: write it anew with hepbdt train")
    return {what: None if r is None else r[1] for what, r in records.items()}


def _check_indices(indices: np.ndarray, names: list[str] | None, key: str, branch: str,
                   where: str) -> None:
    """InputError when the ``branch`` indices (sample or label) lie outside the names
    recorded in ``key`` (none recorded: nothing to check)."""
    if names is None or not len(indices):
        return
    low, high = int(indices.min()), int(indices.max())
    if low < 0 or high >= len(names):
        raise InputError(f"{where}: its {branch} branch holds indices {low}..{high} and "
                         f"{key} names {len(names)} ({names}: indices 0.."
                         f"{len(names) - 1}); the file is damaged: write it anew with "
                         "hepbdt train")


def _check_class_ids(class_ids: np.ndarray, labels: np.ndarray, classes: list[str] | None,
                     where: str) -> None:
    """InputError unless ``classID`` is what :func:`write_scores` derives from ``label``
    (``1 - label`` in a two-class tree, else the label)."""
    binary = (classes is None or len(classes) <= 2) and set(
        np.unique(labels).tolist()) <= {0, 1}
    expected = 1 - labels.astype(np.int64) if binary else labels
    off = np.flatnonzero(class_ids != expected)
    if off.size:
        i = int(off[0])
        rule = "1 - label (TMVA's 0 signal)" if binary else "the label"
        raise InputError(f"{where}: classID and label disagree in {off.size:,} of "
                         f"{len(labels):,} events (entry {i}: classID {int(class_ids[i])}, "
                         f"label {int(labels[i])}; classID should be {rule}); the file is "
                         "damaged: write it anew with hepbdt train")


def _check_feature_record(recorded: list[str] | None, written: list[str], keys: list[str],
                          where: str) -> None:
    """InputError unless the feature branches are the names the writer gives the features
    recorded beside the tree (today's rule, or the one before 2026-12-04)."""
    if recorded is None:
        return
    reserved = (set(keys) - set(written)) | set(BOOKKEEPING_BRANCHES)  # as the writer does
    if written not in (_unique_names(recorded, reserved),
                       _legacy_unique_names(recorded, reserved)):
        tree = where.rpartition(":")[2]
        raise InputError(f"{where}: {tree}_features records the features {recorded} and the "
                         f"tree's feature branches are {written}, which the writer does not "
                         "name so; which branch holds which feature cannot be known: write "
                         "the file anew with hepbdt train")


def _feature_branches(written: list[str], keys: list[str], feature_names: Sequence[str] | None,
                      where: str, recorded: list[str] | None = None
                      ) -> tuple[list[str], list[str]]:
    """The feature branches to read and the names to give them: by the features the writer
    recorded beside the tree (``recorded``, in branch order), else (files written before
    it recorded them) by the branch names the writer gives ``feature_names`` in their
    order. (Built from the names asked alone, ``["log_x", "log(x)"]`` read each other's
    branches when the file held ``["log(x)", "log_x"]``.)"""
    if feature_names is None:
        return written, written
    if recorded is not None and len(recorded) == len(written):
        branch_of = dict(zip(recorded, written, strict=True))
        expected = [branch_of.get(str(n)) for n in feature_names]
        absent = [branch_name(str(n)) for n, b in zip(feature_names, expected, strict=True)
                  if b is None]
    else:
        reserved = (set(keys) - set(written)) | set(BOOKKEEPING_BRANCHES)  # as the writer does
        expected = _legacy_unique_names([str(n) for n in feature_names], reserved)
        absent = [b for b in expected if b not in written]
    if absent:
        raise InputError(f"{where} has no branches {absent} for the model's features "
                         f"{list(feature_names)} (its feature branches: {written}); give the "
                         "scores.root written with this model")
    return [str(b) for b in expected], [str(n) for n in feature_names]
