"""Samples of ROOT ntuples and reading them into a :class:`~hepbdt.io.dataset.Dataset`.

A :class:`Sample` names files and trees, an event weight, a selection and a label (or a
regression target). :func:`read` checks every file, tree, branch and expression before
reading anything, then reads chunk by chunk with ``tree.iterate`` (only the branches
the expressions need), applies the cut per chunk, evaluates the features with
:mod:`hepbdt.io.expressions` and fills preallocated float32 arrays, so peak memory is
the final arrays plus one chunk. Trees may be TTrees or RNTuples (whatever uproot reads).

With ``binned=True`` the features are never held as floats: a first pass streams the
events through a mergeable edge sketch (:class:`hepbdt.engine.binning.EdgeSketch`; only
the cut, the weight and, for the few events the sketch keeps, the features are
evaluated), a second pass bins every chunk into one byte per event and feature, and
``Dataset.X`` is a :class:`~hepbdt.binned.BinnedMatrix`.

The private helpers (:func:`resolve_sources`, :class:`TreeReader`) are shared with
:mod:`hepbdt.io.writers`, which applies models chunk by chunk with the same machinery.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import functools
import gc
import glob
import lzma
import numbers
import os
import re
import socket
import stat
import sys
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import awkward as ak
import numpy as np
import uproot
import xxhash  # uproot's own dependency (it checks an RNTuple's header and footer with it)

from hepbdt._util import (
    Progress,
    available_memory,
    check_not_forked_from_openmp,
    read_ahead,
    release_free_memory,
    warn_float32_steps,
)
from hepbdt.binned import BinnedMatrix
from hepbdt.io.branch_types import BranchTypeRecord, type_text
from hepbdt.io.dataset import (
    EVENT_INT32_MAX,
    Dataset,
    TargetRounding,
    float32_targets,
    invalid_event_numbers,
    shown_number,
    smallest_int_dtype,
)
from hepbdt.io.errors import (
    BadValueError,
    BranchTypeError,
    CompressionError,
    ExpressionError,
    InputError,
    MissingBranchError,
    MissingFileError,
    MissingTreeError,
    close_names,
    describe_choices,
    empty_selection_error,
)
from hepbdt.io.expressions import CONSTANTS, Expression, quote_expression, to_column
from hepbdt.kfold import NOT_EVENT_NUMBERS

__all__ = ["Sample", "read", "choose_binned", "SIGNAL", "BACKGROUND", "CLASS_NAMES", "DistinctSamples"]

SIGNAL = 1
BACKGROUND = 0
#: Label strings understood as classes (case-insensitive).
CLASS_NAMES: dict[str, int] = {"signal": SIGNAL, "sig": SIGNAL, "background": BACKGROUND,
                               "bkg": BACKGROUND}

FileSpec = str | os.PathLike | Sequence[str | os.PathLike] | Mapping[str, str]

_TREE_CLASSES = ("TTree", "TNtuple", "TNtupleD", "ROOT::RNTuple")
_GLOB_CHARS = set("*?[")
# Chunks of a few MB: the per-chunk arrays are reused from the heap instead of freshly
# mapped pages, which measured faster than 100 MB chunks and bounds memory tightly.
DEFAULT_STEP_SIZE = "8 MB"
# Files a read keeps open from its planning to its last pass, at most: each open reads the
# tree's metadata again (about 25 ms for 29 branches), three times for a binned read.
KEEP_OPEN_FILES = 64
# A read of this many bytes of events or more ends with a full garbage collection (see read).
FULL_COLLECT_BYTES = 64 << 20
# binned="auto": binned when the float32 features of every entry would fill more than this
# share of the available memory (the float path holds them two or three times: as read, in
# the training set, and while the model bins them).
AUTO_BINNED_SHARE = 0.25


@dataclass
class Sample:
    """One physics process: its files, weight, selection and label.

    Parameters
    ----------
    name
        Name of the sample (kept in ``Dataset.sample_names``).
    files
        A path, a glob (``"data/ttbar_*.root"``), uproot's ``"file.root:tree"`` form, a
        list of any of these, or a mapping ``{path: tree}``. All files and trees are
        concatenated in the order given (a glob's matches sorted by name, hidden files
        too, as ``TChain::Add`` reads them; a path that exists is that file, even with
        ``*?[`` in its name).
    tree
        Tree name (or list of names, all read, each file's in this order) for files given
        without ``:tree``; ``None`` takes the file's only tree; ``"name;2"`` that cycle.
    weight
        Event weight: an expression over branches (``"genWeight * xsec * lumi / nGen"``),
        a number, or ``None`` (1).
    cut
        Selection expression (``"(nJet >= 2) & (MET_pt > 30)"``); events where it is
        false (or NaN) are dropped.
    label
        The class: ``"signal"``/``"sig"`` (1), ``"background"``/``"bkg"`` (0), or an int
        class index. Any other string is a regression target expression. ``None``
        infers the class from ``name`` when it is a class name, else leaves the sample
        unlabelled.
    scale
        Multiplies every weight (a cross-section or luminosity factor).
    target
        Regression target expression, an explicit alternative to ``label``.
    event
        Event-identifier expression (e.g. ``"event"``) for this sample, overriding
        ``read(event=...)``; ``None`` uses the entry number.
    """

    name: str
    files: FileSpec
    tree: str | Sequence[str] | None = None
    weight: str | float | None = None
    cut: str | None = None
    label: int | str | None = None
    scale: float = 1.0
    target: str | None = None
    event: str | None = None
    class_label: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"Sample name must be a non-empty string, not {self.name!r}")
        label = self.label
        if isinstance(label, bool):
            label = int(label)
        if isinstance(label, np.integer):
            label = int(label)
        if label is None:
            if self.target is None:
                self.class_label = CLASS_NAMES.get(self.name.lower())
        elif isinstance(label, int):
            if label < 0:
                raise InputError(
                    f"sample {self.name!r}: label={label} is negative; use 1/'signal', "
                    "0/'background', or a class index 0, 1, 2, ..."
                )
            self.class_label = label
        elif isinstance(label, str):
            if label.lower() in CLASS_NAMES:
                self.class_label = CLASS_NAMES[label.lower()]
            elif self.target is None:
                self.target = label
            else:
                raise InputError(
                    f"sample {self.name!r}: label={label!r} is not a class name "
                    f"({', '.join(CLASS_NAMES)}) and target={self.target!r} is also given"
                )
        else:
            raise InputError(
                f"sample {self.name!r}: label must be 'signal', 'background', an int "
                f"class index or a target expression, not {label!r}"
            )
        if self.target is not None and self.class_label is not None:
            raise InputError(
                f"sample {self.name!r} has both a class label and target={self.target!r}; "
                "give one"
            )
        try:
            self.scale = float(self.scale)
        except (TypeError, ValueError):
            raise InputError(
                f"sample {self.name!r}: scale must be a number, not {self.scale!r}"
            ) from None
        if not np.isfinite(self.scale):
            raise InputError(f"sample {self.name!r}: scale={self.scale} is not finite")

    @property
    def is_regression(self) -> bool:
        return self.target is not None


# -- files and trees --------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One tree in one file. ``tree`` None means the file's only tree."""

    path: str
    tree: str | None


def absolute_source(source: Source) -> Source:
    """``source`` with its local path made absolute: what a task on another process (a Dask
    worker, whose working folder may be another) reads is the file the client named."""
    if _is_remote(source.path) or os.path.isabs(source.path):
        return source
    return dataclasses.replace(source, path=os.path.abspath(source.path))


def _is_remote(path: str) -> bool:
    return "://" in path


def _local_path(path: str) -> str:
    """``path`` with a ``file:`` URL of this machine made its local path: uproot reads both
    as one file, and the overlap and duplicate checks key files by what they are."""
    url = urllib.parse.urlsplit(path)
    if url.scheme.lower() != "file" or url.netloc not in ("", "localhost") or len(path) < 6:
        return path
    return urllib.request.url2pathname(url.path)


def split_object_path(spec: str) -> tuple[str, str | None]:
    """Split uproot's ``"file.root:tree"`` form; a plain path gives ``(path, None)``."""
    if os.path.exists(spec):
        return spec, None
    index = spec.rfind(":")
    if index <= 0:
        return spec, None
    left, right = spec[:index], spec[index + 1 :]
    if not right or right.startswith("/"):
        return spec, None
    if (
        os.path.exists(left)
        or _GLOB_CHARS & set(left)
        or left.lower().endswith(".root")
        or _is_remote(left)
    ):
        return left, right
    return spec, None


def _not_a_file_message(path: str, context: str) -> str | None:
    """What ``path`` is when it exists but is not a regular file (a directory, a FIFO...)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        pattern = os.path.join(path, "*.root")
        return (f"{context}: {path!r} is a directory, not a ROOT file; give the files in it, "
                f"e.g. the glob {pattern!r}")
    kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a file")
    return (f"{context}: {path!r} is not a regular file ({kind}); a ROOT file is read from a "
            "regular file")


def _missing_file_message(path: str, context: str) -> str:
    not_a_file = _not_a_file_message(path, context)
    if not_a_file is not None:
        return not_a_file
    directory = os.path.dirname(path) or "."
    message = f"{context}: file {path!r} does not exist"
    if not os.path.isdir(directory):
        message += f" (no directory {directory!r})"
    else:
        candidates = sorted(
            name for name in os.listdir(directory) if name.endswith(".root")
        )
        matches = close_names(os.path.basename(path), candidates)
        if matches:
            message += f"; did you mean {describe_choices(matches)}?"
        elif candidates:
            message += f"; ROOT files in {directory!r}: {describe_choices(candidates, 10)}"
    return message + (
        ". Give a path, a glob ('dir/*.root'), 'file.root:tree', or a list of these."
    )


def resolve_sources(
    files: FileSpec, tree: str | Sequence[str] | None, context: str
) -> list[Source]:
    """Expand ``files`` (paths, globs, ``file:tree``, lists, ``{path: tree}``) to sources,
    in the order given, a glob's matches sorted by name, each file's trees in the order of
    ``tree``. A path that exists is that file even when its name has glob characters.

    Raises :class:`MissingFileError` for a path that does not exist or a glob that
    matches nothing, and :class:`InputError` for a file given twice with the same tree (two
    spellings, links, or a glob and a listed path). Trees are not opened here.
    """
    if isinstance(files, str | os.PathLike):
        items: list[tuple[str, str | None]] = [(os.fspath(files), None)]
    elif isinstance(files, Mapping):
        items = [(os.fspath(path), treename) for path, treename in files.items()]
    elif isinstance(files, Sequence) and all(isinstance(path, str | os.PathLike)
                                             for path in files):
        items = [(os.fspath(path), None) for path in files]
    else:
        raise InputError(
            f"{context}: files must be a path, a glob, 'file.root:tree', a list of these or "
            f"a {{path: tree}} mapping, not {files!r}"[:400]
        )
    if not items:
        raise MissingFileError(f"{context}: the list of files is empty")
    default_trees = _tree_list(tree, context)
    # (path, the tree it names: the mapping's, or the spec's inline "file.root:tree")
    split = [split_object_path(spec) if explicit is None else (spec, explicit)
             for spec, explicit in items]
    named = [t for _, t in split]
    if tree is not None and None not in named and any(t != tree for t in named):
        raise InputError(f"{context}: tree {tree!r} is the tree of none of the files: each "
                         f"names its own ({items[0][0]!r}); give the tree in one place")
    sources: list[Source] = []
    seen: dict[tuple[Any, str | None], str] = {}
    for path, given in split:
        trees = default_trees if given is None else _tree_list(given, f"{context}: file {path!r}")
        for resolved in _expand_path(path, context):
            identity = file_identity(resolved)
            for treename in trees:
                tree_key = None if treename is None else treename.split(";")[0].strip("/")
                if (identity, tree_key) in seen:
                    raise _repeated_file_error(context, seen[identity, tree_key], resolved,
                                               tree_key)
                seen[identity, tree_key] = resolved
                sources.append(Source(resolved, treename))
    return sources


def _tree_list(tree: Any, context: str) -> list[str | None]:
    """``tree`` (None, a name, or a list of names) as a non-empty list; InputError else."""
    if tree is None:
        return [None]
    trees = [tree] if isinstance(tree, str) else tree
    if (not isinstance(trees, Sequence) or not trees
            or not all(isinstance(name, str) and name.strip("/") for name in trees)):
        raise InputError(f"{context}: tree must be a tree name, a non-empty list of tree "
                         f"names, or None (the file's only tree), not {tree!r}")
    return list(trees)


def _expand_path(path: str, context: str) -> list[str]:
    """The files ``path`` names: itself (a URL, or a file that exists, even with glob
    characters such as ``[1]`` in its name), else the files its glob matches, hidden ones
    too, sorted by name, as ``TChain::Add`` reads them (MissingFileError when none, or
    when a match is not a file); a ``file:`` URL names its local path."""
    path = _local_path(path)
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        raise InputError(f"{context}: the path {path!r} cannot be written in this locale's "
                         f"file-name encoding ({sys.getfilesystemencoding()}); run hepbdt "
                         "in a UTF-8 locale (e.g. LC_ALL=C.UTF-8)") from None
    if _is_remote(path):
        return [path]
    if not _GLOB_CHARS & set(path) or os.path.lexists(path):
        if not os.path.isfile(path):
            raise MissingFileError(_missing_file_message(path, context))
        return [path]
    _check_root_brackets(path, context)
    paths = sorted(root_glob(path))
    if not paths:
        raise MissingFileError(
            f"{context}: the pattern {path!r} matches no file; "
            "check the directory and the wildcard"
        )
    for match in paths:
        if not os.path.isfile(match):
            raise MissingFileError(_missing_file_message(match, context))
    return paths


def _check_root_brackets(pattern: str, context: str) -> None:
    """InputError for a ``[...]`` that ROOT's wildcard and Python's glob read differently: a
    negated ``[!...]`` or ``[^...]`` (TChain::Add, ROOT 6.40: ``b[!1].root`` is b1.root, ``!``
    a character of the set, and ``b[^1].root`` b2.root; Python's glob the opposite), or one
    opening with ``]`` (ROOT matched nothing), so the friend written for the glob would pair
    ROOT's chain of it with other files' scores."""
    bracket = re.search(r"\[[!^\]]", pattern)
    if bracket:
        raise InputError(
            f"{context}: the pattern {pattern!r} has {bracket.group()!r}, which ROOT's "
            "TChain::Add reads differently from a glob ('[!1]' is the set of '!' and '1' "
            "there, '[^1]' anything but '1'), so ROOT's chain of it would read other files; "
            "give the files, or a pattern with a plain set such as '[02-9]'")


def root_glob(pattern: str) -> list[str]:
    """The paths ``pattern`` matches as ``TChain::Add`` matches them: hidden files and
    folders (``.sig.root``) too, which Python's glob skips (a friend of ``dir/*.root``
    written without them gave ROOT's chain of ``dir/*.root`` other events' scores)."""
    if sys.version_info >= (3, 11):
        return glob.glob(pattern, include_hidden=True)
    folder, name = os.path.split(pattern)
    folders = root_glob(folder) if _GLOB_CHARS & set(folder) else [folder]
    if not _GLOB_CHARS & set(name):
        return [os.path.join(f, name) for f in folders if os.path.lexists(os.path.join(f, name))]
    return [os.path.join(f, entry) for f in folders if os.path.isdir(f or ".")
            for entry in os.listdir(f or ".") if fnmatch.fnmatchcase(entry, name)]


def file_identity(path: str) -> Any:
    """The same for every spelling of one file (device and inode, so links too); a remote
    file's URL as written."""
    if _is_remote(path):
        return path
    info = os.stat(path)
    return info.st_dev, info.st_ino


class DistinctSamples:
    """Refuses a second sample that reads the same tree of the same file with the same cut
    as an earlier one (its events and yields would count twice, or in two classes)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Any, str, str], str] = {}

    def add(self, sample: str, cut: str | None, path: str, tree: str) -> None:
        """Record that ``sample`` reads ``tree`` of ``path`` with ``cut``; InputError when an
        earlier sample does the same."""
        cut_text = " ".join((cut or "").split())
        key = (file_identity(path), tree, _cut_meaning(cut_text))
        first = self._seen.setdefault(key, sample)
        if first != sample:
            raise InputError(
                f"samples {first!r} and {sample!r} both read tree {tree!r} of "
                f"{os.path.abspath(path)!r} with " + (f"the same cut {cut_text!r}" if cut_text
                                                       else "no cut")
                + ": its events and yields would count twice (or in two classes); give each "
                "sample its own events (other files, or cuts that split them)")


def _cut_meaning(cut: str) -> str:
    """What a cut computes (``Expression.canonical``: ``HT>50``, ``(HT > 50)`` and
    ``HT > 50`` alike); its text when it does not parse (reported where it is read)."""
    if not cut:
        return ""
    try:
        return Expression(cut, "cut").canonical()
    except ExpressionError:
        return cut


def _repeated_file_error(context: str, first: str, again: str, tree: str | None) -> InputError:
    """The error for a file (and tree) a sample lists twice: it would be read twice."""
    spelled = f"{first!r} both times" if first == again else f"{first!r} and as {again!r}"
    in_tree = "" if tree is None else f" with tree {tree!r}"
    return InputError(
        f"{context}: the file {os.path.abspath(first)!r} is given twice{in_tree} (as {spelled}), "
        "so its events and yields would count twice; list each file once (a glob and a "
        "listed path, or two spellings of a path, can name the same file). The same file "
        "with different trees is fine."
    )


def note_tree_read(trees_read: dict[tuple[Any, str], str], path: str, tree_name: str,
                   context: str) -> None:
    """Record that tree ``tree_name`` of ``path`` is read; InputError when ``trees_read``
    holds it already: a file given once with its only tree's name and once without (or two
    spellings of a path) is one tree twice. By name, whatever the cycle: an older cycle
    holds the same tree's first entries."""
    key = (file_identity(path), tree_name)
    if key in trees_read:
        raise _repeated_file_error(context, trees_read[key], path, tree_name)
    trees_read[key] = path


FileVersion = tuple[str, int, int, int, int]  # host, device, inode, size, mtime in ns


def file_version(path: str) -> FileVersion | None:
    """What changes when a local file is replaced or rewritten: the host that looked, the
    file's device and inode, its size and its modification time in ns; None for a remote
    file."""
    if _is_remote(path):
        return None
    info = os.stat(path)
    return socket.gethostname(), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


def check_file_version(path: str, version: FileVersion | None, context: str) -> None:
    """InputError when the local file ``path``, opened again, is no longer the one planned
    (``version``, from :func:`file_version`): replaced or rewritten between two passes. On
    another host (a Dask worker) only the size and modification time are compared: a
    network file system may number devices and inodes differently on each node."""
    if version is None:
        return
    now = file_version(path)
    same = now == version if now[0] == version[0] else now[3:] == version[3:]
    if not same:
        raise InputError(
            f"{context}: the file {path!r} changed while it was read (replaced or rewritten "
            "after the read counted its entries, so its events are no longer those counted); "
            "read it again once nothing writes it"
        )


def open_root_file(path: str, context: str) -> Any:
    """``path`` opened for reading, an InputError (one line, naming ``context``) for a file
    that is missing, not a regular file, not a ROOT file or truncated. Without uproot's
    array cache: it would keep a copy of every RNTuple column read (up to 100 MB a file, for
    each of the KEEP_OPEN_FILES files a read keeps open), where a read needs each entry once.
    A local file is read through descriptors held open: uproot's default source opens the
    path again for each read, so a file replaced by a rename while it was read (rsync, a
    producer's temporary renamed into place) gave entries of both files (apply: 88,715
    scores of the old file and 111,285 of the new), where this reads the file it opened."""
    not_a_file = _not_a_file_message(path, context)
    if not_a_file is not None:
        raise InputError(not_a_file)
    held = {} if _is_remote(path) else {"handler": uproot.source.file.MultithreadedFileSource}
    try:
        file = uproot.open(path, array_cache=None, **held)
    except FileNotFoundError:
        raise MissingFileError(_missing_file_message(path, context)) from None
    except Exception as err:
        try:
            size = f" ({os.path.getsize(path)} bytes: truncated, or not a ROOT file)"
        except OSError:
            size = ""
        reason = " ".join(str(err).split())  # uproot's message spans several lines
        raise InputError(
            f"{context}: cannot open {path!r} as a ROOT file{size}: {type(err).__name__}: "
            f"{reason[:300]}"
        ) from err
    check_file_length(file, path, context)
    return file


def _field(arrays: Any, name: str) -> Any:
    """Field ``name`` of an Awkward read: a field, or a subfield of an RNTuple record
    ('Jet.pt' comes back as the record 'Jet' holding 'pt')."""
    fields = getattr(arrays, "fields", ())
    head, _, rest = name.partition(".")
    if name not in fields and rest and head in fields:
        return _field(arrays[head], rest)
    return arrays[name]


class BranchIndex(NamedTuple):
    """The names of a tree's branches (:func:`branch_index`)."""

    #: every key, in uproot's order
    keys: list[str]
    #: every name an expression may read a branch by, with the branch's key
    paths: dict[str, str]
    #: the keys of a TTree's member branches by the members' own names
    members: dict[str, list[str]]


def branch_index(tree: Any) -> BranchIndex:
    """The keys of ``tree``'s branches and the names an expression may read them by, in one
    walk of its branches (four walks took a reader of 1,500 branches from 4 to 14 ms).

    A name is: each key; a TTree's top-level key with a leading ``/`` (uproot's spelling of
    the top-level branch alone); and the own name of a member branch (a split object's
    member, as Delphes writes them: ``Jet/Jet.PT`` read as ``Jet.PT``, the name ROOT's
    ``TTree::Draw`` reads it by) that no other member has. A member is a branch under
    another, not a key with a ``/``: a top-level branch may be named ``pt/m``. A top-level
    branch's name that a member also has maps to the top-level branch (:class:`TreeReader`
    refuses it: ROOT reads whichever the tree made first). An RNTuple has no members."""
    if not isinstance(tree, uproot.behaviors.TBranch.HasBranches):
        keys = list(tree.keys())
        return BranchIndex(keys, {key: key for key in keys}, {})
    index = BranchIndex([], {}, {})
    for key, branch in tree.iteritems(recursive=True):
        index.keys.append(key)
        index.paths[key] = key
        if branch.parent is tree:
            index.paths[f"/{key}"] = key
        else:
            index.members.setdefault(branch.name, []).append(key)
    for name, found in index.members.items():
        if len(found) == 1:
            index.paths.setdefault(name, found[0])
    return index


def check_file_length(file: Any, path: str, context: str) -> None:
    """InputError when a local file is shorter than its header says (fEND): a truncated
    copy, found when it is opened (``--check``) rather than in the middle of a read."""
    end = getattr(getattr(file, "file", None), "fEND", None)
    try:
        size = os.path.getsize(path)
    except (OSError, TypeError):  # not a local path (a URL): uproot's reads will tell
        return
    if isinstance(end, int) and size < end:
        raise InputError(f"{context}: file {path!r} is {size:,} bytes, but its header says it "
                         f"ends at byte {end:,}: it is truncated (a copy or transfer cut "
                         "short?); copy it again")


def tree_names(file: Any) -> list[str]:
    """Names of the trees (TTree, TNtuple, RNTuple) in an open file, subdirectories too."""
    return [
        name
        for name, classname in file.classnames(cycle=False).items()
        if classname in _TREE_CLASSES
    ]


def get_tree(file: Any, source: Source, context: str) -> Any:
    """The tree object ``source.tree`` of an open ``file`` (its only tree when None);
    InputError when uproot cannot deserialise the tree's metadata."""
    try:
        tree = _get_tree(file, source, context)
        problem = _page_list_problem(tree)
        entries = int(tree.num_entries)
    except Exception as err:
        tree = "" if source.tree is None else f", tree {source.tree.split(';')[0]!r}"
        raise _corrupt_error(err, f"{context}: file {source.path!r}{tree}") from err
    if problem:
        raise InputError(f"{context}: file {source.path!r}, tree {_tree_label(tree)!r}: "
                         f"{problem}: the file is corrupt (ROOT refuses it: 'XxHash-3 checksum "
                         "mismatch'); rewrite or replace it")
    if entries < 0:
        raise InputError(
            f"{context}: file {source.path!r}, tree {_tree_label(tree)!r}: the tree claims "
            f"{entries:,} entries; the file is corrupt (a tree has 0 or more entries)"
        )
    return tree


# An RNTuple page is followed by its xxhash3-64 (little-endian), an envelope ended by it.
_CHECKSUM_BYTES = 8


def _checksum_matches(raw: Any) -> bool:
    """Whether the last 8 bytes of ``raw`` are the xxhash3-64 of the bytes before them."""
    body, stored = raw[:-_CHECKSUM_BYTES], bytes(raw[-_CHECKSUM_BYTES:])
    return xxhash.xxh3_64_intdigest(body) == int.from_bytes(stored, "little")


def _page_list_problem(tree: Any) -> str:
    """Which page list envelope of an RNTuple ``tree`` does not match its checksum, or ''
    (and '' for a TTree): uproot checks the header's and footer's, not these, so a damaged
    page list gave other values without a word (ROOT refuses the file)."""
    if isinstance(tree, uproot.behaviors.TBranch.HasBranches):
        return ""
    for i, record in enumerate(tree.footer.cluster_group_records):
        link = record.page_list_link
        chunk, _ = tree.read_locator(link.locator, link.env_uncomp_size)
        raw = np.asarray(chunk.raw_data)
        if len(raw) <= _CHECKSUM_BYTES or not _checksum_matches(raw):
            return f"the page list of cluster group {i} does not match its checksum"
    return ""


def _page_problem(rntuple: Any, columns: Sequence[tuple[int, int]], cluster: int) -> str:
    """Which page of the ``columns`` of ``cluster`` of an RNTuple lies past the file's end or
    does not match its checksum, or '': uproot reads the pages without their checksums,
    so a damaged uncompressed or ZSTD page gave other values (ROOT refuses the page)."""
    source, links = rntuple.file.source, rntuple.page_link_list[cluster]
    size = source.num_bytes
    for column, _ in columns:
        for k, page in enumerate(links[column].pages if column < len(links) else []):
            start = int(page.locator.offset)
            stop = start + int(page.locator.num_bytes)
            end = stop + (_CHECKSUM_BYTES if page.has_checksum else 0)
            if start < 0 or (size is not None and end > size):
                problem = "lies past the end of the file"
            elif page.has_checksum and not _checksum_matches(source.chunk(start, end).raw_data):
                problem = "does not match its checksum"
            else:
                continue
            field = _field_label(rntuple.field_records, rntuple.column_records[column].field_id)
            return f"page {k} of field {field!r} (column {column}) in cluster {cluster} {problem}"
    return ""


def _field_label(records: Any, field_id: int) -> str:
    """The dotted name of an RNTuple field, from its top field ('v._0')."""
    parts = [records[field_id].field_name]
    for _ in records:  # at most that many parents: a damaged file's parents may loop
        parent = records[field_id].parent_field_id
        if parent == field_id:
            break
        field_id = parent
        parts.append(records[field_id].field_name)
    return ".".join(reversed(parts))


def _corrupt_error(err: Exception, where: str) -> Exception:
    """``err`` itself when it is hepbdt's (InputError), a MemoryError or an OSError (a
    failed read, not a corrupt file); otherwise, an exception uproot raised while
    deserialising, an InputError naming ``where``."""
    if isinstance(err, OSError) and "expected Chunk of length" in str(err):
        # uproot asked for bytes past the file's end: a truncated copy (the file is shorter
        # than its header says; check_file_length refuses that first), else a damaged
        # pointer inside a file of the length its header gives
        first = " ".join(str(err).split())
        return InputError(f"{where}: a basket or record lies past the end of the file: it is "
                          f"truncated or its pointers are corrupt; copy it again, or rewrite "
                          f"it (uproot: {first})")
    if isinstance(err, InputError | MemoryError | OSError):
        return err
    first = str(err).splitlines()[0] if str(err) else ""
    return InputError(
        f"{where}: the file is corrupt or not a ROOT file uproot can read (uproot: "
        f"{type(err).__name__}: {first})"
    )


def _get_tree(file: Any, source: Source, context: str) -> Any:
    names = tree_names(file)
    if source.tree is None:
        if len(names) == 1:
            return file[names[0]]
        if not names:
            raise MissingTreeError(
                f"{context}: file {source.path!r} has no tree; it holds "
                f"{describe_choices(file.keys(cycle=False))}{_no_keys_note(file)}"
            )
        raise MissingTreeError(
            f"{context}: file {source.path!r} has several trees ({describe_choices(names)}); "
            "name one: tree = \"NAME\" in the configuration (tree='NAME' in Python), or "
            "'file.root:NAME'"
        )
    name, _, cycle = source.tree.lstrip("/").partition(";")
    classnames = file.classnames(cycle=False)
    if name not in classnames:
        matches = close_names(name, names)
        hint = f"; did you mean {describe_choices(matches)}? Trees" if matches else "; trees"
        raise MissingTreeError(
            f"{context}: file {source.path!r} has no tree {name!r}{hint} in it: "
            f"{describe_choices(names)}{_no_keys_note(file)}"
        )
    if classnames[name] not in _TREE_CLASSES:
        raise MissingTreeError(
            f"{context}: {name!r} in file {source.path!r} is a {classnames[name]}, not a "
            f"tree; trees in it: {describe_choices(names)}"
        )
    if cycle:
        # 'tree;1' is that cycle (an older snapshot of the tree), as in ROOT, not the newest.
        cycles = [key for key in file.keys(cycle=True) if key.partition(";")[0] == name]
        if f"{name};{cycle}" not in cycles:
            raise MissingTreeError(
                f"{context}: file {source.path!r} has no cycle {source.tree!r} of tree "
                f"{name!r}; its cycles: {describe_choices(cycles)} (give the name without "
                "';N' for the newest)"
            )
        return file[f"{name};{cycle}"]
    return file[name]


def _no_keys_note(file: Any) -> str:
    """For a file whose directory lists nothing, that it may be damaged (ROOT's
    TFile::Recover can find keys that a damaged directory no longer lists); else ''."""
    if file.keys(cycle=False):
        return ""
    return ("; its directory lists no object at all: an empty file, or a damaged one "
            "(ROOT's TFile::Recover may find the keys; copy the file again)")


def _tree_label(tree: Any) -> str:
    return tree.object_path.lstrip("/").split(";")[0]


# -- branches ------------------------------------------------------------------------------


def _value_kind(typ: Any) -> str | None:
    """'flat', 'regular' or 'jagged' for readable numeric types; None otherwise."""
    if isinstance(typ, ak.types.OptionType):
        typ = typ.content
    if isinstance(typ, ak.types.NumpyType):
        return "flat" if typ.primitive not in ("datetime64", "timedelta64") else None
    if isinstance(typ, ak.types.ListType | ak.types.RegularType):
        if typ.parameter("__array__") in ("string", "bytestring", "char", "byte"):
            return None
        inner = typ.content
        if isinstance(inner, ak.types.OptionType):
            inner = inner.content
        if not isinstance(inner, ak.types.NumpyType):
            return None
        return "jagged" if isinstance(typ, ak.types.ListType) else "regular"
    return None


def _describe_type(typ: Any) -> str:
    text = str(typ)
    if "string" in text:
        return f"strings ({text})"
    if isinstance(typ, ak.types.RecordType) or "{" in text:
        return f"nested objects ({text})"
    return text


def _branch_kind(branch: Any) -> tuple[str | None, str]:
    """Kind ('flat', 'regular', 'jagged' or None) of a TTree branch, from its interpretation."""
    from uproot.interpretation.jagged import AsJagged
    from uproot.interpretation.numerical import Numerical
    from uproot.interpretation.strings import AsStrings

    unreadable = _unreadable_leaves(branch)
    if unreadable is not None:
        return None, unreadable
    try:
        typename = branch.typename  # uproot's name for it, from its interpretation
        interpretation = branch.interpretation
    except Exception as err:
        return None, (f"a type uproot cannot interpret ({getattr(branch, 'title', '?')!r}: "
                      f"{type(err).__name__}: {err})")
    if isinstance(interpretation, Numerical):
        shape = tuple(getattr(interpretation, "inner_shape", ()) or ())
        if not shape:
            return "flat", typename
        return ("regular" if len(shape) == 1 else None), f"multi-dimensional arrays ({typename})"
    if isinstance(interpretation, AsJagged) and isinstance(interpretation.content, Numerical):
        if not tuple(getattr(interpretation.content, "inner_shape", ()) or ()):
            return "jagged", typename
    if isinstance(interpretation, AsStrings):
        return None, f"strings ({typename})"
    return None, f"nested objects ({typename}, which uproot reads as {interpretation})"


def _unreadable_leaves(branch: Any) -> str | None:
    """Why a TTree branch's leaves cannot be read as numbers, or None: a leaf list of several
    leaves (one record an event), or a Float16_t or Double32_t array stored packed (with a
    range or precision; Double32_t without one is stored as float), whose packed integers
    uproot reads as floats or not at all (its scalars it decodes)."""
    try:
        leaves = list(branch.member("fLeaves"))
    except Exception:  # not a TTree branch of leaves
        return None
    title = str(getattr(branch, "title", ""))
    if len(leaves) > 1:
        return (f"a leaf list of {len(leaves)} leaves ({title!r}, one record an event: write "
                "each leaf as a branch of its own)")
    classname = getattr(leaves[0], "classname", "") if leaves else ""
    if classname not in ("TLeafF16", "TLeafD32"):
        return None
    try:
        decoded = type(branch.interpretation).__name__ in ("AsFloat16", "AsDouble32")
    except Exception:
        decoded = False
    packed = classname == "TLeafF16" or "[" in title.partition("/")[2]
    if decoded or not packed:
        return None
    kind = "Float16_t" if classname == "TLeafF16" else "Double32_t"
    return (f"a {kind} array stored packed ({title!r}; uproot does not decode it, and would "
            "read the packed integers as floats: write it as Float_t or Double_t"
            + (", or as Double32_t without a range)" if kind == "Double32_t" else ")"))


_BLOCK_HEADER_BYTES = 9  # ROOT's compression block: algorithm (2), method, 3 + 3 sizes
_BLOCK_ALGORITHMS = (b"ZL", b"XZ", b"L4", b"ZS", b"CS")


def _basket_bytes(branch: Any, i: int) -> tuple[int, int | None]:
    """The bytes basket ``i`` of a TTree branch declares (its key's fObjlen, with the key),
    and for a compressed basket what its compression blocks' headers say they unpack to
    (with the key; None for an uncompressed or embedded basket), read from the file without
    decompressing. uproot does not compare the two: a key declaring 2 GB over one block of
    32 kB was read with 2.2 GB in 19 s (ROOT refuses the basket)."""
    try:
        key = branch.basket_key(i)
    except ValueError:  # an embedded basket: held in the tree's own record, no key
        return int(branch.basket_uncompressed_bytes(i)), None
    declared = int(key.fObjlen) + int(key.fKeylen)
    if key.fNbytes - key.fKeylen == key.fObjlen:
        return declared, None
    source, unpacked = branch.file.source, int(key.fKeylen)
    at, end = int(key.fSeekKey) + int(key.fKeylen), int(key.fSeekKey) + int(key.fNbytes)
    while at + _BLOCK_HEADER_BYTES <= end:
        block = source.chunk(at, at + _BLOCK_HEADER_BYTES).raw_data.tobytes()
        if block[:2] not in _BLOCK_ALGORITHMS:
            return declared, None  # not block headers (a damaged key): the read says so
        unpacked += int.from_bytes(block[6:9], "little")
        at += _BLOCK_HEADER_BYTES + int.from_bytes(block[3:6], "little")
    return declared, (unpacked if at == end and unpacked > key.fKeylen else None)


# ROOT's byte count of a streamed object: its count of the bytes after it, with this flag.
_BYTE_COUNT_FLAG = 0x40000000
_VECTOR_HEADER_BYTES = 10  # byte count (4), class version (2), element count (4)


def _check_vector_headers_on_read(branch: Any, where: str) -> None:
    """Have every read of the std::vector branch ``branch`` check each entry's header
    against the basket's entry offsets, as ROOT does (TBufferFile::CheckByteCount): uproot
    skips the header, so a damaged offset (uncompressed or ZSTD baskets carry no checksum)
    moved elements between entries without a word. Other jagged branches are left as they
    are (C-style arrays store no header)."""
    interpretation = branch.interpretation
    header = getattr(interpretation, "header_bytes", 0)
    if header != _VECTOR_HEADER_BYTES:
        return
    itemsize = interpretation.content.from_dtype.itemsize
    checked: set[int] = set()  # uproot reads a basket again for each chunk it spans

    def check(*, data: Any, byte_offsets: Any, basket: Any, **_: Any) -> None:
        number = getattr(basket, "basket_num", None)
        if number is not None and number in checked:
            return
        problem = _vector_header_problem(np.asarray(data), byte_offsets, itemsize)
        if problem:
            raise InputError(
                f"{where}: branch {branch.name!r}, basket {'?' if number is None else number}: "
                f"{problem}; the file is corrupt (ROOT reports 'Byte count probably "
                "corrupted'): rewrite or replace it")
        if number is not None:
            checked.add(number)

    interpretation.hook_before_basket_array = check


def _count_branch(branch: Any) -> Any:
    """The counter branch of a C-style array branch (``a[n]``, no entry header), or None."""
    if getattr(branch.interpretation, "header_bytes", None) != 0:
        return None
    try:
        counter = branch.count_branch
    except Exception:  # noqa: BLE001 - no counter uproot can find: its offsets alone
        return None
    # a counter is one integer an entry (a TClonesArray member's is a list: not checked)
    dtype = getattr(getattr(counter, "interpretation", None), "from_dtype", None)
    return counter if dtype is not None and dtype.kind in "iu" and not dtype.shape else None


def _counter_problem(array: Any, counts: np.ndarray, start: int) -> str:
    """Why the lists of the C-style array ``array`` (entries from ``start``) do not each hold
    as many elements as its counter branch's values ``counts``, or ''."""
    held = np.asarray(ak.num(array, axis=1), dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    if held.shape == counts.shape and np.array_equal(held, counts):
        return ""
    if held.shape != counts.shape:
        return f"{len(held):,} entries, but its counter branch {len(counts):,}"
    entry = int(np.argmax(held != counts))
    return (f"entry {start + entry:,} holds {int(held[entry]):,} elements by its basket's "
            f"offsets, but its counter branch says {int(counts[entry]):,}")


def _vector_header_problem(data: np.ndarray, byte_offsets: Any, itemsize: int) -> str:
    """Why the entries ``data[byte_offsets[i]:byte_offsets[i + 1]]`` of a std::vector basket
    are not each a header (byte count, version, element count) and that many elements of
    ``itemsize`` bytes, or ''."""
    if byte_offsets is None:
        return ""
    offsets = np.asarray(byte_offsets, dtype=np.int64)
    if len(offsets) < 2:
        return ""
    sizes = np.diff(offsets)
    if offsets[0] < 0 or offsets[-1] > len(data) or (sizes < _VECTOR_HEADER_BYTES).any():
        return "its entry offsets do not fit its bytes"
    # the big-endian uint32 that starts at each byte: two gathers an entry, where a gather
    # of all ten header bytes as int64 took 160 bytes an entry and doubled a read's time
    data = np.ascontiguousarray(data, dtype=np.uint8)
    words = np.ndarray((len(data) - 3,), dtype=">u4", buffer=data, strides=(1,))
    starts = offsets[:-1]
    count = words[starts].astype(np.int64)
    elements = words[starts + 6].astype(np.int64)
    bad = ((count & _BYTE_COUNT_FLAG) == 0) | ((count & ~_BYTE_COUNT_FLAG) != sizes - 4)
    bad |= elements * itemsize != sizes - _VECTOR_HEADER_BYTES
    if not bad.any():
        return ""
    entry = int(np.argmax(bad))
    return (f"entry {entry} of the basket spans {int(sizes[entry]):,} bytes, but its header "
            f"counts {int(count[entry] & ~_BYTE_COUNT_FLAG):,} bytes and "
            f"{int(elements[entry]):,} elements")


# A basket declares at most this many bytes an entry (131,072 doubles) and this many more,
# or it is refused unread (TreeReader._check_basket_sizes, as a read begins).
MAX_BASKET_BYTES_PER_ENTRY = 1 << 20
#: The most threads a read or an apply decompresses with (``threads``): uproot starts them
#: all at once, whatever the file.
MAX_DECOMPRESSION_THREADS = 256
BASKET_SLACK_BYTES = 1 << 16


class TreeReader:
    """Reads the branches a set of expressions needs from one tree, chunk by chunk.

    Construct inside ``with uproot.open(path) as file``; the constructor checks that
    every name is a branch and every branch is numeric (flat, fixed-size or jagged).
    """

    def __init__(
        self,
        file: Any,
        source: Source,
        expressions: Sequence[Expression],
        context: str,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.source = source
        self.context = context
        self.tree = get_tree(file, source, context)
        self.tree_name = _tree_label(self.tree)
        self.tree_path = self.tree.object_path.lstrip("/")  # with its cycle: the tree read
        self.where = f"{context}: file {source.path!r}, tree {self.tree_name!r}"
        try:
            self.num_entries = int(self.tree.num_entries)
            available, self.paths, members = branch_index(self.tree)
        except Exception as err:
            raise _corrupt_error(err, self.where) from err
        needed: list[str] = []
        for expression in expressions:
            for name in sorted(expression.names):
                bare = name in expression.bare_constants
                if name in self.paths:
                    if name in members and self.paths[name] == name:
                        raise MissingBranchError(
                            f"{self.where}: {expression.named} {expression.text!r} uses "
                            f"{name!r}, which names both the branch {name!r} and "
                            f"{describe_choices(members[name])}, a member of a split object: "
                            "ROOT's TTree::Draw reads whichever the tree made first; write "
                            f"`/{name}` (back-quoted) for the top-level branch, or the "
                            "member's path")
                    if bare:
                        raise ExpressionError(
                            f"{self.where}: {expression.named} {expression.text!r} uses "
                            f"{name!r}, which is both a branch of this tree and the constant "
                            f"{name} = {CONSTANTS[name]!r}: write `{name}` (back-quoted) for "
                            f"the branch, or {CONSTANTS[name]!r} for the constant")
                    if name not in needed:
                        needed.append(name)
                elif bare:
                    continue  # the constant: no tree it is read from has such a branch
                else:
                    matches = members.get(name) or close_names(name, available)
                    hint = f" Close names: {describe_choices(matches)}." if matches else ""
                    if len(members.get(name, ())) > 1:
                        hint = (f" Members of {len(members[name])} split objects have this "
                                f"name: {describe_choices(members[name])}; write the one meant.")
                    extra = (hints or {}).get(expression.text, "")
                    raise MissingBranchError(
                        f"{self.where}: {expression.named} {expression.text!r} "
                        f"uses {name!r}, which is not a branch.{hint} "
                        f"Branches: {describe_choices(available)}{extra}"
                    )
        self.paths = {name: self.paths[name] for name in needed}
        self._check_entries(needed)
        self.branches = needed
        self._read_names = self._names_read(members)
        self._verified_clusters: set[int] = set()
        try:
            self.kinds = self._check_types(needed)
        except Exception as err:
            raise _corrupt_error(err, self.where) from err
        self.library = "ak" if "jagged" in self.kinds.values() else "np"
        self.counters = self._counters()

    def branch(self, name: str) -> Any:
        """The uproot branch (TTree) or field (RNTuple) that ``name`` reads."""
        return self.tree[self.paths[name]]

    def _names_read(self, members: Mapping[str, list[str]]) -> dict[str, str]:
        """The key uproot reads each branch by, and returns it under, by the name read: a
        TTree branch's key, with a leading ``/`` for a top-level branch whose name a
        member's also is (``members``: of ``fLineColor`` and ``a/fLineColor`` read
        together, uproot 5.7 returned the member's values for both; ``/fLineColor`` it
        reads as the top-level branch)."""
        if not isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            return {name: name for name in self.branches}
        return {name: f"/{path}" if path in members else path
                for name, path in self.paths.items()}

    def _selection(self) -> dict[str, Any]:
        """uproot's keyword that reads exactly the branches read: a TTree's by their keys
        (:meth:`_names_read`), under which it returns them (a name filter matches branches
        by their own names and reads each by its own name, which may be another branch's:
        of ``fLineColor`` and ``a/fLineColor``, uproot returned the first's values for the
        second)."""
        if isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            return {"expressions": list(dict.fromkeys(self._read_names.values()))}
        names = set(self.branches)
        return {"filter_name": lambda name: name in names}

    def _counters(self) -> dict[str, Any]:
        """The counter branch of each C-style array read (``a[n]``), by the array's name."""
        if not isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            return {}
        counters = {}
        for name, kind in self.kinds.items():
            counter = _count_branch(self.branch(name)) if kind == "jagged" else None
            if counter is not None:
                counters[name] = counter
        return counters

    def _check_counters(self, chunk: Mapping[str, Any], start: int, stop: int) -> None:
        """Refuse a chunk whose C-style array lists hold other than their counter branch's
        numbers of elements: ROOT reads an entry's counter's number of elements from the
        entry's start, uproot cuts entries by the basket's offsets alone, and an
        uncompressed or ZSTD basket protects neither (a damaged offset moved elements
        between entries, a damaged counter made ROOT read another entry's elements)."""
        read: dict[str, Any] = {}  # one counter (nJet) serves several arrays (Jet_pt, ...)
        for name, counter in self.counters.items():
            if counter.name in read:
                counts = read[counter.name]
            elif self.kinds.get(counter.name) == "flat" and counter.name in chunk:
                counts = read[counter.name] = chunk[counter.name]  # read with the chunk
            else:
                try:
                    counts = counter.array(entry_start=start, entry_stop=stop, library="np")
                except Exception as err:
                    raise self._read_error(err, start, stop) from err
                read[counter.name] = counts
            problem = _counter_problem(chunk[name], counts, start)
            if problem:
                raise InputError(
                    f"{self.where}: branch {name!r} disagrees with its counter branch "
                    f"{counter.name!r}: {problem}; the file is corrupt (ROOT reads the "
                    "counter's number of elements, other values): rewrite or replace it")

    def _check_entries(self, names: Sequence[str]) -> None:
        """Refuse a tree that claims more entries than a branch it is read from holds (a
        corrupt or hostile header; reading it would allocate for entries that do not
        exist). Fewer is read as ROOT reads it: the tree's count."""
        for name in names:
            try:
                held = int(self.branch(name).num_entries)
            except Exception as err:
                raise _corrupt_error(err, self.where) from err
            if held < self.num_entries:
                raise InputError(
                    f"{self.where}: the tree claims {self.num_entries:,} entries but branch "
                    f"{name!r} holds {held:,}; the file is corrupt (every branch of a tree "
                    "holds as many entries as the tree)"
                )

    def _check_basket_sizes(self, first: int, last: int) -> None:
        """Refuse, before reading entries [first, last), a TTree basket among theirs that
        declares more bytes than MAX_BASKET_BYTES_PER_ENTRY an entry (a decompression bomb:
        a 1.6 MB file whose basket unpacked to 1.6 GB took 3.2 GB to read; memory must
        follow the chunks, not what a file claims). Only the baskets a read touches have
        their keys read (a lazy partition its own, not the whole file's). Baskets whose key
        cannot be read are left to the read, which says what is wrong. An RNTuple's clusters
        are checked alike (:meth:`_check_cluster_sizes`)."""
        if not isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            self._check_cluster_sizes(first, last)
            return
        for name in self.branches:
            branch = self.branch(name)
            try:
                ranges = [branch.basket_entry_start_stop(i) for i in range(branch.num_baskets)]
                sizes = [(i, start, stop, *_basket_bytes(branch, i))
                         for i, (start, stop) in enumerate(ranges)
                         if start < last and stop > first]
            except Exception:  # noqa: BLE001 - a damaged key: the read reports it
                continue
            for i, start, stop, declared, unpacked in sizes:
                if unpacked is not None and unpacked != declared:
                    raise InputError(
                        f"{self.where}: basket {i} of branch {name!r} declares {declared:,} "
                        f"bytes, but its compressed blocks unpack to {unpacked:,}: the file is "
                        "corrupt (ROOT's TBasket::ReadBasketBuffers refuses it too); it is not "
                        "read")
                entries = max(int(stop) - int(start), 0)
                if declared > entries * MAX_BASKET_BYTES_PER_ENTRY + BASKET_SLACK_BYTES:
                    raise InputError(
                        f"{self.where}: basket {i} of branch {name!r} declares {declared:,} "
                        f"bytes for its {entries:,} entries, more than "
                        f"{MAX_BASKET_BYTES_PER_ENTRY:,} an entry: the file is corrupt (or "
                        "built to exhaust memory); it is not read")

    def _check_cluster_sizes(self, first: int, last: int) -> None:
        """Refuse, before reading entries [first, last), an RNTuple cluster among theirs whose
        pages of the fields read declare more than MAX_BASKET_BYTES_PER_ENTRY an entry (the
        basket check's rule: the pages' element counts size the arrays a read makes, and a
        page of zeros compresses a thousandfold). Damaged metadata is left to the read."""
        for i, (start, entries, declared) in enumerate(self._clusters):
            if not start < last or not start + entries > first:
                continue
            if declared > entries * MAX_BASKET_BYTES_PER_ENTRY + BASKET_SLACK_BYTES:
                raise InputError(
                    f"{self.where}: cluster {i} declares {declared:,} bytes of the fields "
                    f"{describe_choices(self.branches)} for its {entries:,} entries, more than "
                    f"{MAX_BASKET_BYTES_PER_ENTRY:,} an entry: the file is corrupt (or built "
                    "to exhaust memory); it is not read")
            if i not in self._verified_clusters:
                self._check_pages(i)

    def _check_pages(self, cluster: int) -> None:
        """Refuse a cluster one of whose pages of the fields read lies past the file's end or
        does not match its checksum (:func:`_page_problem`); each is checked once a reader."""
        try:
            problem = _page_problem(self.tree, self._columns, cluster)
        except Exception as err:
            raise _corrupt_error(err, self.where) from err
        if problem:
            raise InputError(f"{self.where}: {problem}: the file is corrupt (ROOT refuses it: "
                             "'page checksum verification failed'); rewrite or replace it")
        self._verified_clusters.add(cluster)

    @functools.cached_property
    def _columns(self) -> list[tuple[int, int]]:
        """(column, bits an element) of the RNTuple columns behind the fields read."""
        return _field_columns(self.tree, self.branches)

    @functools.cached_property
    def _clusters(self) -> list[tuple[int, int, int]]:
        """:func:`_cluster_bytes` of the fields read, once a reader (a lazy partition's reads
        and apply's chunks check them again); none where the metadata cannot be read."""
        try:
            return _cluster_bytes(self.tree, self.branches)
        except Exception:  # noqa: BLE001 - the read reports it
            return []

    def _check_types(self, names: list[str]) -> dict[str, str]:
        kinds = {}
        for name in names:
            if isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
                kind, description = _branch_kind(self.branch(name))
            else:
                kind, description = self._field_kind(name)
            if kind is None:
                raise BranchTypeError(
                    f"{self.where}: branch {name!r} holds {description}, which cannot be a "
                    "feature, weight or cut. Valid branches hold numbers: one per event "
                    "(float, int, bool), a fixed-size array, or a jagged list of numbers "
                    "(e.g. std::vector<float>)."
                )
            kinds[name] = kind
            if kind == "jagged" and isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
                _check_vector_headers_on_read(self.branch(name), self.where)
        return kinds

    def _field_kind(self, name: str) -> tuple[str | None, str]:
        """Kind of an RNTuple field, from the type of an empty read."""
        try:
            typ = _field(self._empty_field(name), name).type.content
        except Exception as err:
            if _is_decompression_error(err):
                raise self._compression_error(err, 0, 1) from err
            return None, f"a type uproot cannot read ({type(err).__name__}: {err})"
        return _value_kind(typ), _describe_type(typ)

    def iterate(
        self, step_size: int | str = DEFAULT_STEP_SIZE, executor: Any = None
    ) -> Iterator[tuple[dict[str, Any], int, int]]:
        """Yield ``(arrays, entry_start, entry_stop)`` per chunk.

        ``arrays`` maps branch name to a NumPy array (flat and fixed-size branches) or
        an Awkward array (jagged branches). ``executor`` (an uproot executor) decompresses
        baskets in parallel; None decompresses serially.
        """
        step_size = check_step_size(step_size)
        if not self.branches:
            step = step_size if isinstance(step_size, int) else 1_000_000
            for start in range(0, self.num_entries, step):
                yield {}, start, min(start + step, self.num_entries)
            return
        self._check_basket_sizes(0, self.num_entries)
        if not isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            yield from self._iterate_clusters(self._step_entries(step_size, 100_000), executor)
            return
        start = 0
        try:
            for arrays, report in self.tree.iterate(
                step_size=step_size,
                library=self.library,
                report=True,
                decompression_executor=executor,
                **self._selection(),
            ):
                start, stop = int(report.tree_entry_start), int(report.tree_entry_stop)
                yield self._chunk(arrays, start, stop), start, stop
                start = stop
        except Exception as err:
            raise self._read_error(err, start, start + self._step_entries(step_size)) from err

    def _empty_field(self, name: str) -> Any:
        """An RNTuple's field ``name`` with no entries, from its form (no page read: uproot's
        read of no entries reads the first cluster, whose page list may claim gigabytes
        under a valid checksum); by a read of no entries where the form cannot be made."""
        def wanted(field_name: str) -> bool:
            return field_name == name

        try:
            return ak.Array(self.tree.to_akform(filter_name=wanted)[0].length_zero_array())
        except Exception:  # noqa: BLE001 - a form uproot cannot make: the read says why
            return self.tree.arrays(filter_name=wanted, entry_stop=0, library="ak")

    def no_entries(self) -> dict[str, Any]:
        """``read(0, 0)``, typed from a TTree's branch records alone: uproot's read of no
        entries decompresses the first basket (566 MB for one holding an event of 60M
        jagged elements, in a ``--check`` documented to read no events). An RNTuple, or a
        branch whose type uproot cannot give without its data, is read."""
        if not self.branches:
            return self.read(0, 0)
        if not isinstance(self.tree, uproot.behaviors.TBranch.HasBranches):
            return self._unwrap({name: _field(self._empty_field(name), name)
                                 for name in self.branches})
        try:
            empty = {name: ak.Array(self.branch(name).interpretation.awkward_form(
                self.tree.file).length_zero_array()) for name in self.branches}
        except Exception:  # noqa: BLE001 - a type known only from the data: read it
            return self.read(0, 0)
        return {name: array if self.kinds[name] == "jagged"
                else ak.to_numpy(array, allow_missing=False) for name, array in empty.items()}

    def branch_types(self, no_entries: dict[str, Any] | None = None) -> dict[str, str]:
        """The type text of every branch read (:func:`~hepbdt.io.branch_types.type_text`),
        from the branch records (:meth:`no_entries`, or its result when given)."""
        arrays = self.no_entries() if no_entries is None else no_entries
        return {name: type_text(arrays[name]) for name in self.branches}

    def check_shape(self, expression: Expression, no_entries: dict[str, Any]) -> None:
        """Refuse an expression that gives a list per event (a jagged branch not reduced) or
        a list for some events, from the branches' types alone: ``no_entries`` is
        :meth:`no_entries`. The ExpressionError a read would raise on its first chunk."""
        try:
            _evaluate(self, expression, no_entries, 0, np.float64)
        except InputError:
            raise
        except Exception:  # noqa: BLE001 - not a shape: the read says what is wrong
            return

    def _iterate_clusters(self, step: int, executor: Any
                          ) -> Iterator[tuple[dict[str, Any], int, int]]:
        """An RNTuple's chunks of ``step`` entries, each cluster read once: uproot
        decompresses a whole cluster for any range of it, so steps inside one cluster (a
        file of one ``extend``) read it again each, time growing with the square of its
        entries (60 s for 4M x 20, 5 s as a TTree). Memory is a cluster's, as it was."""
        for cluster in self.tree.cluster_summaries:
            first = int(cluster.num_first_entry)
            last = min(first + int(cluster.num_entries), self.num_entries)
            if last <= first:
                continue
            arrays = self.read(first, last, executor)
            for start in range(first, last, step):
                stop = min(start + step, last)
                yield ({name: value[start - first:stop - first] for name, value in arrays.items()},
                       start, stop)

    def _step_entries(self, step_size: int | str, unknown: int = 1) -> int:
        """The entries of one chunk of ``iterate`` (``unknown`` where uproot cannot say:
        1 for an error's message, a cluster's chunks take 100,000)."""
        if isinstance(step_size, int):
            return step_size
        try:
            return max(1, int(self.tree.num_entries_for(step_size, **self._selection())))
        except Exception:  # noqa: BLE001 - sized otherwise
            return unknown

    def read(self, start: int, stop: int, executor: Any = None) -> dict[str, Any]:
        """The arrays of entries [start, stop), as :meth:`iterate` yields a chunk."""
        if not self.branches:
            return {}
        self._check_basket_sizes(start, stop)
        try:
            arrays = self.tree.arrays(entry_start=start, entry_stop=stop, library=self.library,
                                      decompression_executor=executor, **self._selection())
        except Exception as err:
            raise self._read_error(err, start, stop) from err
        return self._chunk(arrays, start, stop)

    def _unwrap(self, arrays: Any) -> dict[str, Any]:
        """A chunk read as Awkward, by the names read: flat fields as NumPy arrays (no
        copy), jagged ones kept as Awkward once checked valid (corrupt offsets in a basket
        give lists that reach beyond their content: computing on them reads garbage or
        crashes)."""
        chunk = {}
        for name in self.branches:
            array = _field(arrays, self._read_names[name])
            if self.kinds[name] == "jagged":
                problem = ak.validity_error(array)
                if problem:
                    problem = problem.splitlines()[0].split(" (in compiled code")[0]
                    raise InputError(
                        f"{self.where}: branch {name!r} is corrupt (awkward: {problem}); "
                        "the file is damaged, rewrite or replace it"
                    )
                chunk[name] = array
            else:
                chunk[name] = ak.to_numpy(array, allow_missing=False)
        return chunk

    def _chunk(self, arrays: Any, start: int, stop: int) -> dict[str, Any]:
        """A chunk of entries [start, stop) as uproot read it, by the names read: read as
        Awkward, unwrapped (:meth:`_unwrap`) and its arrays checked against their
        counters."""
        if self.library == "np":
            return {name: arrays[self._read_names[name]] for name in self.branches}
        chunk = self._unwrap(arrays)
        self._check_counters(chunk, start, stop)
        return chunk

    def _read_error(self, err: Exception, start: int, stop: int) -> Exception:
        """What a failed read of entries [start, stop) raises: hepbdt's errors as they are,
        a CompressionError for a basket that does not decompress, else the error for a
        file uproot cannot deserialise."""
        if not isinstance(err, InputError) and _is_decompression_error(err):
            return self._compression_error(err, start, stop)
        return _corrupt_error(err, self.where)

    def chunks(self, step_size: int | str = DEFAULT_STEP_SIZE,
               executor: Any = None) -> Iterator[tuple[dict[str, Any], int, int]]:
        """``iterate``, read one chunk ahead by a background thread when there is an
        ``executor`` (threads), so that reading overlaps the caller's work on the chunk
        before. Close it (``contextlib.closing``) when stopping early: the thread stops."""
        chunks = self.iterate(step_size, executor)
        return chunks if executor is None else read_ahead(chunks)

    def _compression_error(self, err: Exception, start: int, stop: int) -> CompressionError:
        """The error of baskets that do not decompress in entries [start, stop): the
        branches whose read of those entries fails, one branch at a time (all of them where
        none fails alone)."""
        stop = min(max(stop, start + 1), self.num_entries)
        culprits = []
        for name in self.branches:
            try:
                self.branch(name).array(entry_start=start, entry_stop=stop, library="ak")
            except Exception as branch_err:
                if _is_decompression_error(branch_err):
                    culprits.append(name)
        named = describe_choices(culprits) if culprits else describe_choices(self.branches)
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        return CompressionError(
            f"{self.where}: cannot decompress branch(es) {named} (entries {start} to "
            f"{stop - 1}): "
            f"{type(err).__name__}: {reason}. Either the basket is corrupt (its header or "
            "key damaged: copy the file again), or it uses a codec uproot cannot read: "
            "uproot reads ZLIB and LZMA, LZ4 with the 'lz4' and 'xxhash' packages and ZSTD "
            "with 'zstandard' (pip install lz4 xxhash zstandard); otherwise rewrite the file "
            "with ZLIB or LZMA, e.g. 'hadd -f101 new.root old.root'."
        )


def read_unit_bytes(tree: Any, names: Iterable[str]) -> int:
    """The uncompressed bytes of the branches ``names`` (those the tree has) that a read of
    ``tree`` decompresses at once, whatever its chunk size, from the metadata alone: for a
    TTree each branch's largest basket (its entries times the branch's mean bytes an entry),
    summed; for an RNTuple the largest cluster's pages of those fields' columns. 0 where the
    metadata cannot be read (the read reports that)."""
    try:
        wanted = _used_keys(tree, names)
        if isinstance(tree, uproot.behaviors.TBranch.HasBranches):
            return sum(_largest_basket_bytes(tree[name]) for name in wanted)
        return max((size for _, _, size in _cluster_bytes(tree, wanted)), default=0)
    except Exception:  # noqa: BLE001 - damaged metadata: the read says what is wrong
        return 0


def read_chunk_bytes(tree: Any, names: Iterable[str],
                     step_size: int | str = DEFAULT_STEP_SIZE) -> int:
    """The uncompressed bytes of the branches ``names`` (those the tree has) in one chunk
    of a TTree's read: the entries uproot takes for ``step_size``, at most the tree's, times
    the branches' mean bytes an entry (fTotBytes / fEntries, from the metadata alone). A
    chunk is read beside the baskets it spans, so a read holds both. 0 for an RNTuple (its
    chunks slice the cluster read) or where the metadata cannot be read."""
    try:
        if not isinstance(tree, uproot.behaviors.TBranch.HasBranches):
            return 0
        wanted = [tree[key] for key in _used_keys(tree, names)]
        if not wanted:
            return 0
        per_entry = sum(int(branch.member("fTotBytes")) / max(int(branch.member("fEntries")), 1)
                        for branch in wanted)
        entries = tree.num_entries_for(step_size, filter_name=[b.name for b in wanted])
        return int(min(int(entries), int(tree.num_entries)) * per_entry)
    except Exception:  # noqa: BLE001 - damaged metadata: the read says what is wrong
        return 0


def _used_keys(tree: Any, names: Iterable[str]) -> list[str]:
    """The keys of the branches (fields) that ``names`` read, those the tree has, once each."""
    paths = branch_index(tree).paths
    return list(dict.fromkeys(paths[name] for name in names if name in paths))


def _largest_basket_bytes(branch: Any) -> int:
    """A TTree branch's largest basket, from the branch's record alone: the larger of its
    most entries times the branch's mean uncompressed bytes an entry, and its most
    compressed bytes times the branch's mean compression (fTotBytes / fZipBytes). Entries
    alone took a basket holding one event of 60M jagged elements (240 MB) among 20,000
    for a twentieth of its size; its compressed bytes show it."""
    entries = int(branch.member("fEntries"))
    if entries <= 0 or branch.num_baskets == 0:
        return 0
    total = int(branch.member("fTotBytes"))
    largest = max(stop - start for start, stop in
                  (branch.basket_entry_start_stop(i) for i in range(branch.num_baskets)))
    by_entries = largest * total / entries
    compressed = np.asarray(branch.member("fBasketBytes"))[:branch.num_baskets]
    zipped = int(branch.member("fZipBytes"))
    by_bytes = float(compressed.max()) * total / zipped if compressed.size and zipped > 0 else 0
    return int(max(by_entries, by_bytes))


def _cluster_bytes(rntuple: Any, names: Sequence[str]) -> list[tuple[int, int, int]]:
    """(first entry, entries, uncompressed bytes of the pages of the columns behind
    ``names``) of each cluster of an RNTuple, from its page lists (a dotted name is a
    subfield: its columns and its parents' own, e.g. the offsets)."""
    columns = _field_columns(rntuple, names)
    return [(int(summary.num_first_entry), int(summary.num_entries),
             sum(sum(int(page.num_elements) for page in cluster[c].pages) * bits // 8
                 for c, bits in columns))
            for summary, cluster in zip(rntuple.cluster_summaries, rntuple.page_link_list,
                                        strict=True)]


def _field_columns(rntuple: Any, names: Sequence[str]) -> list[tuple[int, int]]:
    """(column index, bits an element) of the columns behind the fields ``names`` of an
    RNTuple (a dotted name is a subfield: its columns and its parents' own)."""
    records = rntuple.field_records
    children: dict[int, list[int]] = {}
    for i, record in enumerate(records):
        if record.parent_field_id != i:
            children.setdefault(record.parent_field_id, []).append(i)
    tops = [i for i, record in enumerate(records) if record.parent_field_id == i]
    fields: set[int] = set()
    for name in names:
        found = _field_path(records, children, tops, name.split("."))
        if found is None:  # not mapped: count every column, an upper bound
            fields = set(range(len(records)))
            break
        fields.update(found[:-1])
        stack = [found[-1]]
        while stack:  # its descendants (each once: a damaged file's parents may loop)
            field = stack.pop()
            if field not in fields:
                fields.add(field)
                stack.extend(children.get(field, []))
    return [(c, record.nbits) for c, record in enumerate(rntuple.column_records)
            if record.field_id in fields]


def _field_path(records: Any, children: Mapping[int, list[int]], candidates: list[int],
                parts: list[str]) -> list[int] | None:
    """The field ids from the top field to the one ``parts`` names, with the anonymous levels
    (such as a collection's ``_0``) searched on the way, or None."""
    path: list[int] = []
    for part in parts:
        queue, match, seen = list(candidates), None, set(path)
        while queue and match is None:
            field = queue.pop(0)
            if records[field].field_name == part:
                match = field
            elif records[field].field_name.startswith("_") and path and field not in seen:
                seen.add(field)  # once: a damaged file's parents may loop
                path.append(field)  # an anonymous level between the parent and the part
                queue.extend(children.get(field, []))
        if match is None:
            return None
        path.append(match)
        candidates = children.get(match, [])
    return path


def check_step_size(step_size: Any) -> int | str:
    """``step_size`` as uproot takes it: a positive number of entries (an int) or a memory
    size with units (``"100 MB"``); InputError for anything else (0, a negative number, a
    bool, a float, a string without units), which uproot would misread or refuse
    with an error that does not say it is the step size."""
    if isinstance(step_size, int | np.integer) and not isinstance(step_size, bool | np.bool_):
        if step_size >= 1:
            return int(step_size)
    elif isinstance(step_size, str):
        with contextlib.suppress(TypeError, ValueError):
            if uproot._util.memory_size(step_size) >= 1:
                return step_size
    raise InputError(f"step_size must be a positive number of entries (an int, e.g. 100000) "
                     f"or a memory size with units (e.g. \"100 MB\"), not {step_size!r}")


def check_threads(threads: Any) -> int | None:
    """``threads`` of a read or an apply as an int (None stays None); InputError for
    anything but a whole number in [1, MAX_DECOMPRESSION_THREADS]: uproot's executor
    starts every thread at once (threads=100,000 stopped the read with Python's bare
    "can't start new thread", or held that many threads), and more than the cores
    decompress no faster."""
    if threads is None:
        return None
    try:
        whole = not isinstance(threads, bool | str) and int(threads) == threads
    except (TypeError, ValueError, OverflowError):  # NaN, infinity, not a number
        whole = False
    if not whole or not 1 <= threads <= MAX_DECOMPRESSION_THREADS:
        raise InputError(f"threads must be None (the usable cores, at most 8) or an integer "
                         f"in [1, {MAX_DECOMPRESSION_THREADS}], not {threads!r}")
    return int(threads)


@contextmanager
def decompression_threads(threads: int | None) -> Iterator[Any]:
    """An uproot executor with ``threads`` workers (None: the usable cores, at most 8).

    zlib, LZMA and LZ4 release the GIL, so baskets decompress in parallel; 1 gives
    None (serial, uproot's default).
    """
    threads = check_threads(threads)
    if threads is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        threads = min(usable or os.cpu_count() or 1, 8)
    if threads == 1:
        yield None
        return
    executor = uproot.ThreadPoolExecutor(max_workers=int(threads))
    try:
        yield executor
    finally:
        executor.shutdown()


def _is_decompression_error(err: BaseException) -> bool:
    if isinstance(err, ImportError | zlib.error | lzma.LZMAError):
        return True
    if type(err).__name__ == "DecompressionError":
        return True
    text = str(err).lower()
    return isinstance(err, ValueError) and (
        "compression" in text or "decompress" in text or "checksum" in text
    )


# -- reading ---------------------------------------------------------------------------


class _OpenFiles(contextlib.ExitStack):
    """The files a read keeps open from its planning to its last pass."""

    def __init__(self) -> None:
        super().__init__()
        self.kept = 0

    def room(self) -> bool:
        """Whether one more file may stay open (counted as kept)."""
        self.kept += 1
        return self.kept <= KEEP_OPEN_FILES


@dataclass
class _Plan:
    """One sample's sources, their entry counts and its parsed expressions."""

    sample_index: int
    sample: Sample
    sources: list[Source]
    entries: list[int]
    expressions: dict[str, Expression | None]
    # Each source's reader, kept open from the planning to the last pass (None: reopened).
    readers: list[TreeReader | None] = field(default_factory=list)
    # Each source's (path, tree name as read, without its cycle), for DistinctSamples.
    trees: list[tuple[str, str]] = field(default_factory=list)
    # Each source's file_version when planned: a file opened again must still be that one.
    versions: list[FileVersion | None] = field(default_factory=list)
    # Each source's branch types (name -> type text), for the BranchTypeRecord.
    types: list[dict[str, str]] = field(default_factory=list)


@dataclass
class _Output:
    """The preallocated output arrays of :func:`read`, one row per selected event: float32
    features ``X``, or (binned) ``codes`` and the packed edges with the kernel that bins."""

    X: np.ndarray | None
    y: np.ndarray | None
    w: np.ndarray
    event: np.ndarray
    sample_index: np.ndarray
    codes: np.ndarray | None = None
    packed_edges: np.ndarray | None = None
    binner: Any = None
    target_rounding: TargetRounding | None = None  # the regression targets', judged at the end
    # each feature's lowest and highest value before float32, and 1 where float32 rounded
    # one (rows), for warn_float32_steps
    extent: np.ndarray | None = None

    def put_features(self, start: int, columns: Sequence[np.ndarray]) -> None:
        """The features of one chunk into rows ``start:``: floats, or their codes."""
        if self.codes is None:
            fill_rows(self.X, start, columns)
            return
        n = len(columns[0])
        block = np.empty((n, len(columns)), dtype=np.float32)
        fill_rows(block, 0, columns)
        self.binner(block, self.packed_edges, self.codes[start:start + n])


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, str | Sample):
        return [value]
    return list(value)


def read(
    samples: Sample | Sequence[Sample],
    features: str | Sequence[str],
    *,
    event: str | None = None,
    step_size: int | str = DEFAULT_STEP_SIZE,
    inf_as_missing: bool = False,
    progress: bool | None = None,
    threads: int | None = None,
    binned: bool | str = False,
    max_bins: int = 255,
    n_cuts: int = 0,
    bin_edges: Sequence[Any] | None = None,
    edge_sample: int | None = None,
    seed: int = 0,
    dask: bool = False,
) -> Dataset:
    """Read samples into a :class:`~hepbdt.io.dataset.Dataset`.

    Parameters
    ----------
    samples
        One :class:`Sample` or a list of them; they are stacked in order.
    features
        Branch names or expressions, one column each: ``"lep_pt"``, ``"log(lep_pt)"``,
        ``"Jet_pt[:, 0]"`` (NaN when the event has no jet), ``"num(Jet_pt)"``,
        ``"max(Jet_btag)"``. The expression strings become ``Dataset.feature_names``.
    event
        Event-identifier expression for every sample (e.g. ``"event"``); a sample's own
        ``event`` overrides it. ``None`` uses the entry number in the sample's chain of
        files and trees (first tree's entries first).
    step_size
        Chunk size for ``tree.iterate``: entries (int) or memory (``"100 MB"``).
    inf_as_missing
        Treat +-inf in a feature as missing (NaN). By default it is an error.
    progress
        Show a progress line on stderr; ``None`` shows it when stderr is a terminal.
    threads
        Threads decompressing baskets (None: the usable cores, at most 8; 1: serial; at
        most 256, refused beyond: uproot starts them all at once).
        The result does not depend on it.
    binned
        True: ``X`` is a :class:`~hepbdt.binned.BinnedMatrix`, one byte per event and
        feature, read in two passes (edges, then codes) without ever holding the float
        features; every estimator fits it as it is. ``"auto"``: binned when the float32
        features of every entry (a tree that several samples read counted once) would take
        more than a quarter of the available memory (:func:`choose_binned`). False
        (default): float32 features.
    max_bins, n_cuts
        Value bins per feature for ``binned``, and TMVA's equal-width cuts added to the
        quantiles (as the estimators' options of these names).
    bin_edges
        With ``binned``: these edges (m increasing arrays, e.g. a model's ``bin_edges_``)
        instead of a sketch; one pass.
    edge_sample
        Events the edge sketch keeps (default 200,000, as the estimators subsample): with
        at most that many events the edges are exactly ``fit_bin_edges`` of the events read
        and their given weights (a fit on the float features bins with its training
        weights, which the negative-weight policy, a hold-out or a class normalisation can
        change, so its edges may differ); above it, those of a weighted priority sample of
        that many events (see :class:`hepbdt.engine.binning.EdgeSketch`). |w| counts, as in
        the estimators.
    seed
        Seed of the edge sketch's sample (the sample is also independent of the chunks).
    dask
        True: a :class:`~hepbdt.io.lazy.LazyDataset` of Dask arrays, one partition per
        entry range of a tree (``step_size`` entries when it is a number, else 500,000),
        each read by a Dask task exactly as here (the optional extra ``hepbdt[dask]``).
        The files, trees, branches and expressions are checked now; nothing is read but
        the cuts of a tree that several samples read (each entry must go to one sample).
        Not with ``binned`` (the Dask estimators bin on their workers).

    Returns
    -------
    Dataset
        ``X`` (n, m) float32 C-contiguous, ``y`` class labels (1 signal, 0 background,
        or class indices), float32 regression targets or None, ``w`` float64 weights
        (expression x scale), ``sample_index``, ``event`` (the entry numbers as int32
        below 2**31, an event expression's values as int64). Labels and sample indices
        are the smallest signed integers that hold the largest (int8 for labels up to 127
        and up to 128 samples, else int16, else int32), allocated so from the start.

    Raises
    ------
    InputError
        (a subclass of it) for a missing file, tree or branch, a branch that is not
        numeric, an expression that does not parse, a cut that selects nothing, a NaN
        or infinite weight or target, an infinite feature, an unreadable compression.
    RuntimeError for a binned read in a process forked after GNU OpenMP ran (its kernels
    would stop it: ``_util.check_not_forked_from_openmp``).
    """
    samples, feature_texts = _check_arguments(samples, features)
    feature_expressions = [Expression(text, "feature") for text in feature_texts]
    task = _task(samples)
    events = 0
    try:
        with _OpenFiles() as open_files:
            data = _read_planned(samples, feature_expressions, feature_texts, task, event,
                                 step_size, inf_as_missing, progress, threads, binned, max_bins,
                                 n_cuts, bin_edges, edge_sample, seed, open_files, dask)
            events = 0 if dask else len(data)  # a lazy read holds no events here
            return data
    finally:
        # uproot's file and tree objects refer to each other, so the chunks they read stay
        # allocated until the cyclic garbage collector runs, which counts objects, not
        # bytes: as much as all the data read (600k x 12 floats: 29 MB kept after read).
        # The young generations hold what this read made; a full collection walks every
        # object of the process (0.15-0.25 s in a test process), worth it after large reads.
        large = events * (len(feature_texts) + 3) * 4 >= FULL_COLLECT_BYTES
        gc.collect(2 if large else 1)
        release_free_memory()  # the freed chunks' pages (10M x 28 binned: 0.06-0.13 GB)


def _read_planned(samples: list[Sample], feature_expressions: list[Expression],
                  feature_texts: list[str], task: str, event: str | None, step_size: int | str,
                  inf_as_missing: bool, progress: bool | None, threads: int | None, binned: Any,
                  max_bins: int, n_cuts: int, bin_edges: Any, edge_sample: int | None, seed: int,
                  open_files: _OpenFiles, dask: bool = False) -> Dataset:
    """``read`` once its arguments are checked: plan every sample, then read (binned or not).
    The first KEEP_OPEN_FILES files stay open in ``open_files`` from the planning to the
    last pass (reading a tree's metadata costs tens of milliseconds a file and pass)."""
    step_size = check_step_size(step_size)
    threads = check_threads(threads)
    # Every file, tree, branch and expression is checked before any data is read.
    plans = [
        _plan_sample(index, sample, feature_expressions, event, open_files)
        for index, sample in enumerate(samples)
    ]
    distinct = DistinctSamples()
    for plan in plans:
        for path, tree in plan.trees:
            distinct.add(plan.sample.name, plan.sample.cut, path, tree)
    branch_types = _branch_types(plans, feature_expressions)
    capacity = sum(sum(plan.entries) for plan in plans)
    dtypes = _index_dtypes(plans)
    _check_disjoint(plans, step_size)  # after the checks of the metadata: it reads the cuts
    if dask:
        if binned or bin_edges is not None:
            raise InputError("dask=True reads float features (the Dask estimators bin them on "
                             "their workers); leave binned and bin_edges out")
        # The optional Dask extra: imported only for a lazy read.
        from .lazy import read_lazy

        # The tasks reopen their files: the plans travel without their open readers, and
        # with absolute paths (a worker reads the file the client named, whatever its folder).
        plans = [dataclasses.replace(plan, readers=[], sources=[absolute_source(s) for s in
                                                                 plan.sources]) for plan in plans]
        return read_lazy(plans, feature_expressions, feature_texts, [s.name for s in samples],
                         task, step_size, inf_as_missing, read_partition, dtypes, branch_types,
                         _event_sources(plans))
    if binned == "auto":
        binned = choose_binned(_distinct_entries(plans), len(feature_expressions))
    elif binned not in (True, False):
        raise InputError(f"binned must be True, False or 'auto', not {binned!r}")
    if bin_edges is not None and not binned:
        raise InputError("bin_edges are for binned=True: float features are not binned")
    if binned:
        check_not_forked_from_openmp()
        return _read_binned(plans, feature_expressions, feature_texts, [s.name for s in samples],
                            task, step_size, inf_as_missing, progress, threads, max_bins,
                            n_cuts, bin_edges, edge_sample, seed).replace(
                                branch_types=branch_types, event_sources=_event_sources(plans))
    out = _allocate(capacity, len(feature_expressions), task, dtypes)
    filled = 0
    with Progress(capacity, "hepbdt.read", progress) as bar, decompression_threads(
        threads
    ) as executor:
        for plan in plans:
            filled = _read_sample(
                plan, feature_expressions, out, filled, step_size, inf_as_missing, executor, bar
            )
    return _assemble(out, filled, feature_texts, [s.name for s in samples]).replace(
        branch_types=branch_types, event_sources=_event_sources(plans))


def _distinct_entries(plans: Sequence[_Plan]) -> int:
    """The entries of the trees the samples read, a tree that several samples read (cut into
    samples, each entry to one at most: ``_check_disjoint``) once: the most events the read
    can hold (``capacity`` counts such a tree per sample)."""
    entries: dict[tuple[Any, str], int] = {}
    for plan in plans:
        for (path, tree), n_entries in zip(plan.trees, plan.entries, strict=True):
            key = (file_identity(path), tree)
            entries[key] = max(entries.get(key, 0), n_entries)
    return sum(entries.values())


def _event_sources(plans: Sequence[_Plan]) -> tuple[str | None, ...]:
    """The distinct event expressions of the samples read (None: entry numbers), in order."""
    return tuple(dict.fromkeys(None if p.expressions["event"] is None
                               else p.expressions["event"].text for p in plans))


def _branch_types(plans: Sequence[_Plan], feature_expressions: list[Expression]
                  ) -> dict[str, str]:
    """The types of the branches the features read (name -> type text); BranchTypeError
    for a tree whose branch types would give an expression read from it other values than
    an earlier tree's gave (:mod:`hepbdt.io.branch_types`)."""
    record = BranchTypeRecord()
    for plan in plans:
        expressions = _reader_expressions(feature_expressions, plan.expressions)
        for (path, tree), types in zip(plan.trees, plan.types, strict=True):
            record.add(types, expressions, f"sample {plan.sample.name!r}: file {path!r}, "
                                           f"tree {tree!r}")
    return record.of(feature_expressions)


def _check_disjoint(plans: Sequence[_Plan], step_size: int | str) -> None:
    """InputError when two samples select one entry of a tree both read (with cuts that
    differ, or DistinctSamples would have refused them): its event would count twice, or
    in two classes. Reads only the cuts' branches, of only the trees samples share."""
    users: dict[tuple[Any, str], list[tuple[_Plan, Source, int]]] = {}
    for plan in plans:
        for source, (path, tree), entries in zip(plan.sources, plan.trees, plan.entries,
                                                 strict=True):
            users.setdefault((file_identity(path), tree), []).append((plan, source, entries))
    for shared in users.values():
        if len(shared) > 1:
            _check_shared_tree(shared, step_size)


def _check_shared_tree(shared: list[tuple[_Plan, Source, int]], step_size: int | str) -> None:
    """``_check_disjoint`` for one tree and the samples that read it. Samples that read
    two cycles of it (``Events;1``, ``Events;2``: an older snapshot holds the newer one's
    first entries) share only the shorter one's entries, so the cuts are evaluated on it
    (on the longer one, an entry only one sample reads counted as selected by both)."""
    cuts = [plan.expressions["cut"] for plan, _, _ in shared]
    names = [plan.sample.name for plan, _, _ in shared]
    source = min(shared, key=lambda user: user[2])[1]
    with open_root_file(source.path, f"sample {names[0]!r}") as file:
        reader = TreeReader(file, source, [cut for cut in cuts if cut is not None],
                            f"samples {', '.join(map(repr, names))}")
        overlap, first = 0, None
        for arrays, start, stop in reader.chunks(step_size):
            selected = np.zeros((len(cuts), stop - start), dtype=bool)
            for row, cut in enumerate(cuts):
                if cut is None:
                    selected[row] = True
                else:
                    values = _evaluate(reader, cut, arrays, stop - start, np.float64)
                    selected[row] = (values != 0) & ~np.isnan(values)
            twice = np.flatnonzero(selected.sum(axis=0) > 1)
            if twice.size and first is None:
                first = (start + int(twice[0]), [n for n, s in zip(names, selected[:, twice[0]],
                                                                   strict=True) if s])
            overlap += twice.size
    if first is not None:
        entry, both = first
        raise InputError(
            f"samples {both[0]!r} and {both[1]!r} both select entry {entry:,} of tree "
            f"{reader.tree_name!r} of {os.path.abspath(source.path)!r} ({overlap:,} of its "
            f"{reader.num_entries:,} entries are selected by more than one sample): those "
            "events and yields would count twice, or in two classes; make the samples' cuts "
            "exclusive (e.g. 'x > 0' and '!(x > 0)')")


def read_partition(plan: Any, source_index: int, chain_offset: int, start: int, stop: int,
                    feature_expressions: Sequence[Any], inf_as_missing: bool,
                    task: str,
                    dtypes: tuple[np.dtype, np.dtype, np.dtype]) -> tuple[Any, ...]:
    """Entries [start, stop) of one source of a sample, as ``read`` would fill them: X, y,
    w, event, sample_index, and the regression targets' float32 rounding (a TargetRounding,
    or None), which the lazy read judges over all its partitions, as ``read`` judges all
    its targets (a partition alone is not the read: a partition of under 100 events was
    never judged, one of nearly equal targets refused). ``dtypes``: the labels', sample
    indices' and event numbers' of the whole read (``_index_dtypes``), so that every
    partition has the dtypes the lazy arrays declare."""
    source = plan.sources[source_index]
    context = f"sample {plan.sample.name!r}"
    out = _allocate(stop - start, len(feature_expressions), task, dtypes)
    out.extent = None  # one partition's range is not the read's: no float32 warning here
    with open_root_file(source.path, context) as file:
        check_file_version(source.path, plan.versions[source_index], context)
        reader = TreeReader(file, source, _reader_expressions(feature_expressions, plan.expressions),
                            context)
        arrays = reader.read(start, stop)
        filled = _fill_chunk(reader, arrays, start, stop, chain_offset, plan, feature_expressions,
                             inf_as_missing, out, 0)
    y = None if out.y is None else out.y[:filled]
    return (out.X[:filled], y, out.w[:filled], out.event[:filled], out.sample_index[:filled],
            out.target_rounding)


def choose_binned(entries: int, n_features: int, available_bytes: int | None = None) -> bool:
    """``binned="auto"``: True when ``entries`` x ``n_features`` float32 values would take more
    than ``AUTO_BINNED_SHARE`` of the available memory (False when the system does not say)."""
    if available_bytes is None:
        available_bytes = available_memory()
    if available_bytes is None:
        return False
    return entries * n_features * 4 > AUTO_BINNED_SHARE * available_bytes


def _check_count(value: Any, name: str, low: int, high: int | None, valid: str) -> None:
    """InputError unless ``value`` is a whole number (not a bool or a string) in [low,
    high] (high None: no bound)."""
    try:
        whole = not isinstance(value, bool | str) and int(value) == value
    except (TypeError, ValueError, OverflowError):  # None, NaN, infinity
        whole = False
    if not whole or value < low or (high is not None and value > high):
        raise InputError(f"{name} must be {valid}, not {value!r}")


def _read_binned(
    plans: Sequence[_Plan],
    feature_expressions: Sequence[Expression],
    feature_texts: Sequence[str],
    sample_names: list[str],
    task: str,
    step_size: int | str,
    inf_as_missing: bool,
    progress: bool | None,
    threads: int | None,
    max_bins: int,
    n_cuts: int,
    bin_edges: Sequence[Any] | None,
    edge_sample: int | None,
    seed: int,
) -> Dataset:
    """``read(..., binned=True)``: edges from a sketch (pass 1), then codes (pass 2)."""
    # The binning kernels need Numba: imported on the binned path only, so plain reads stay free of it.
    from hepbdt.engine.binning import (
        SUBSAMPLE_FOR_EDGES,
        EdgeSketch,
        bin_rows_into,
        check_edges,
        pack_edges,
    )

    m = len(feature_expressions)
    _check_count(max_bins, "max_bins", 2, 255, "an integer in [2, 255]")
    _check_count(n_cuts, "n_cuts", 0, max_bins - 1, "an integer in [0, max_bins)")
    if edge_sample is not None:
        _check_count(edge_sample, "edge_sample", 1, None,
                     "None (200,000) or an integer >= 1: the events the edge sketch keeps")
    _check_count(seed, "seed", 0, 2**63 - 1, "an integer in [0, 2**63 - 1]")
    entries = sum(sum(plan.entries) for plan in plans)
    passes = 1 if bin_edges is not None else 2
    with Progress(entries * passes, f"hepbdt.read (binned, {passes} pass{'es' * (passes > 1)})",
                  progress) as bar, decompression_threads(threads) as executor:
        if bin_edges is not None:
            try:
                edges = check_edges(bin_edges, m)
            except ValueError as err:
                raise InputError(f"bin_edges: {err}") from None
            selected = entries  # an upper bound: the cuts are applied in the one pass
        else:
            sketch = EdgeSketch(m, int(edge_sample or SUBSAMPLE_FOR_EDGES), int(seed))
            selected = 0
            for plan in plans:
                selected = _read_sample(plan, feature_expressions, None, selected, step_size,
                                        inf_as_missing, executor, bar, sketch=sketch)
            edges = sketch.edges(int(max_bins), int(n_cuts))
        out = _allocate(selected, m, task, _index_dtypes(plans), binned=True)
        out.codes, out.packed_edges, out.binner = np.empty((selected, m), np.uint8), pack_edges(
            edges), bin_rows_into
        filled = 0
        for plan in plans:
            filled = _read_sample(plan, feature_expressions, out, filled, step_size,
                                  inf_as_missing, executor, bar)
    if bin_edges is None and filled != selected:
        raise InputError(f"the samples changed while they were read: the first pass selected "
                         f"{selected:,} events, the second {filled:,}")
    return _assemble(out, filled, feature_texts, sample_names, edges)


def _check_arguments(samples: Any, features: Any) -> tuple[list[Sample], list[str]]:
    """The samples and the feature strings as lists, checked to be non-empty and unique."""
    samples = _as_list(samples)
    if not samples or not all(isinstance(s, Sample) for s in samples):
        raise InputError("read() needs a Sample or a non-empty list of Sample objects")
    names = [s.name for s in samples]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"sample names must be unique; repeated: {describe_choices(duplicates)}")
    feature_texts = _as_list(features)
    if not feature_texts:
        raise InputError("read() needs at least one feature")
    repeated = sorted({f for f in feature_texts if feature_texts.count(f) > 1})
    if repeated:
        raise InputError(f"features must be unique; repeated: {describe_choices(repeated)}")
    return samples, feature_texts


def _reader_expressions(
    feature_expressions: Sequence[Expression], expressions: Mapping[str, Expression | None]
) -> list[Expression]:
    """The features followed by the sample's cut, weight, target and event, if given."""
    return [*feature_expressions, *filter(None, expressions.values())]


def _target_hints(sample: Sample) -> dict[str, str]:
    """Extra text for a missing-branch error in a target that was given as ``label``."""
    hints = {}
    if sample.target is not None and isinstance(sample.label, str):
        hints[sample.target] = (
            f". label={sample.label!r} is not a class name "
            f"({', '.join(CLASS_NAMES)}), so it was read as a regression target "
            "expression."
        )
    return hints


def _plan_sample(
    index: int, sample: Sample, feature_expressions: Sequence[Expression], event: str | None,
    open_files: _OpenFiles,
) -> _Plan:
    """Check the expressions, files, trees and branches of one sample and count its entries."""
    context = f"sample {sample.name!r}"
    expressions: dict[str, Expression | None] = {
        "cut": _maybe_expression(sample.cut, "cut", context),
        "weight": _maybe_expression(sample.weight, "weight", context),
        "target": _maybe_expression(sample.target, "target", context),
        "event": _maybe_expression(sample.event or event, "event", context),
    }
    hints = _target_hints(sample)
    sources = resolve_sources(sample.files, sample.tree, context)
    entries, readers, versions, types = [], [], [], []
    trees_read: dict[tuple[Any, str], str] = {}
    for source in sources:
        kept = open_files.room()
        with contextlib.ExitStack() as this_file:
            file = (open_files if kept else this_file).enter_context(
                open_root_file(source.path, context))
            versions.append(file_version(source.path))
            reader = TreeReader(
                file, source, _reader_expressions(feature_expressions, expressions), context, hints
            )
            entries.append(reader.num_entries)
            readers.append(reader if kept else None)
            types.append(reader.branch_types())
        note_tree_read(trees_read, source.path, reader.tree_name, context)
    return _Plan(index, sample, sources, entries, expressions, readers,
                 [(path, tree) for (_, tree), path in trees_read.items()], versions, types)


def _index_dtypes(plans: Sequence[_Plan]) -> tuple[np.dtype, np.dtype, np.dtype]:
    """The dtypes of a read's class labels, sample indices and event numbers: labels and
    indices in the smallest signed integers that hold the largest (the Dataset's rule, so
    it keeps the arrays as read; InputError for a label beyond int32); event numbers int32
    when they are entry numbers (no event expression) below 2**31, else int64."""
    labels = [(plan.sample.class_label, plan.sample.name) for plan in plans
              if plan.sample.class_label is not None]
    label, name = max(labels, default=(0, ""))
    entry_numbers = all(plan.expressions["event"] is None for plan in plans)
    largest_entry = max((sum(plan.entries) for plan in plans), default=0)
    return (smallest_int_dtype(label, f"sample {name!r}: class label"),
            smallest_int_dtype(max((plan.sample_index for plan in plans), default=0),
                               "sample index"),
            np.dtype(np.int32 if entry_numbers and largest_entry <= EVENT_INT32_MAX else np.int64))


def _allocate(capacity: int, n_features: int, task: str,
              dtypes: tuple[np.dtype, np.dtype, np.dtype], binned: bool = False) -> _Output:
    """Uninitialised output arrays with room for ``capacity`` events (no float features
    when ``binned``: the caller sets the codes); ``dtypes``: those of the class labels, the
    sample indices and the event numbers (:func:`_index_dtypes`)."""
    X = None if binned else np.empty((capacity, n_features), dtype=np.float32)
    w = np.empty(capacity, dtype=np.float64)
    label_dtype, index_dtype, event_dtype = dtypes
    event_ids = np.empty(capacity, dtype=event_dtype)
    sample_index = np.empty(capacity, dtype=index_dtype)
    if task == "classification":
        y: np.ndarray | None = np.empty(capacity, dtype=label_dtype)
    elif task == "regression":
        y = np.empty(capacity, dtype=np.float32)
    else:
        y = None
    rounding = TargetRounding() if task == "regression" else None
    extent = np.array([[np.inf] * n_features, [-np.inf] * n_features, [0.0] * n_features])
    return _Output(X, y, w, event_ids, sample_index, target_rounding=rounding, extent=extent)


def _read_sample(
    plan: _Plan,
    feature_expressions: Sequence[Expression],
    out: _Output | None,
    filled: int,
    step_size: int | str,
    inf_as_missing: bool,
    executor: Any,
    bar: Progress,
    sketch: Any = None,
) -> int:
    """Read one sample chunk by chunk into rows ``filled:`` of ``out`` (or, with ``sketch``,
    into the edge sketch, rows counting as ids); return the new fill."""
    context = f"sample {plan.sample.name!r}"
    sample_start = filled
    chain_offset = 0
    for source, n_entries, kept, version in zip(plan.sources, plan.entries, plan.readers,
                                                plan.versions, strict=True):
        with contextlib.ExitStack() as this_file:
            if kept is None:
                file = this_file.enter_context(open_root_file(source.path, context))
                check_file_version(source.path, version, context)
            reader = kept or TreeReader(
                file, source, _reader_expressions(feature_expressions, plan.expressions), context
            )
            with closing(reader.chunks(step_size, executor)) as chunks:
                for arrays, start, stop in chunks:
                    if sketch is not None:
                        filled = _sketch_chunk(reader, arrays, start, stop, plan,
                                               feature_expressions, inf_as_missing, sketch,
                                               filled)
                    else:
                        filled = _fill_chunk(
                            reader, arrays, start, stop, chain_offset, plan,
                            feature_expressions, inf_as_missing, out, filled,
                        )
                    bar.update(stop - start)
        chain_offset += n_entries
    if filled == sample_start:
        raise empty_selection_error(plan.sample, sum(plan.entries), plan.sources)
    return filled


def _judge_targets(out: _Output, what: str) -> None:
    """InputError (BadValueError) when float32 rounds all the targets read into ``out`` by
    too much (``TargetRounding``)."""
    if out.target_rounding is not None:
        try:
            out.target_rounding.check(what)
        except InputError as err:
            raise BadValueError(str(err)) from None


def _assemble(
    out: _Output, filled: int, feature_texts: Sequence[str], sample_names: list[str],
    edges: Sequence[np.ndarray] | None = None,
) -> Dataset:
    """Shrink the output arrays to their ``filled`` rows and wrap them in a Dataset (the
    codes in a BinnedMatrix of ``edges`` when binned)."""
    _judge_targets(out, f"samples {', '.join(map(repr, sample_names))}")
    if out.extent is not None:  # double branches or expressions that float32 collapses
        warn_float32_steps(out.extent[0], out.extent[1], out.extent[2] > 0, list(feature_texts),
                           "read")
    features = out.X if out.codes is None else out.codes
    if filled < len(features):
        # In place: shrinking the leading axis keeps rows where they are.
        features.resize((filled, features.shape[1]), refcheck=False)
        for array in (out.w, out.event, out.sample_index, out.y):
            if array is not None:
                array.resize(filled, refcheck=False)
    return Dataset(
        features if out.codes is None else BinnedMatrix(out.codes, edges),
        y=out.y,
        w=out.w,
        sample_index=out.sample_index,
        event=out.event,
        feature_names=list(feature_texts),
        sample_names=sample_names,
        copy=False,
    )


def _task(samples: Sequence[Sample]) -> str:
    regression = [s.name for s in samples if s.is_regression]
    classes = [s.name for s in samples if s.class_label is not None]
    unlabelled = [s.name for s in samples if not s.is_regression and s.class_label is None]
    if regression and (classes or unlabelled):
        raise InputError(
            f"samples {describe_choices(regression)} have regression targets but "
            f"{describe_choices(classes + unlabelled)} do not; give every sample a "
            "target, or every sample a class label"
        )
    if regression:
        return "regression"
    if classes and unlabelled:
        raise InputError(
            f"samples {describe_choices(unlabelled)} have no label while "
            f"{describe_choices(classes)} do; give label='signal', 'background' or a "
            "class index"
        )
    return "classification" if classes else "unlabelled"


def _maybe_expression(value: Any, role: str, context: str) -> Expression | None:
    if value is None:
        return None
    if role == "weight" and isinstance(value, numbers.Real) and not isinstance(value,
                                                                                bool | np.bool_):
        value = repr(float(value))  # a NumPy number too (a cross-section computed with NumPy)
    try:
        return Expression(value, role)
    except ExpressionError as err:
        raise ExpressionError(f"{context}: {err}") from None


def _fill_chunk(
    reader: TreeReader,
    arrays: dict[str, Any],
    start: int,
    stop: int,
    chain_offset: int,
    plan: _Plan,
    feature_expressions: Sequence[Expression],
    inf_as_missing: bool,
    out: _Output,
    filled: int,
) -> int:
    """Evaluate one chunk into rows ``filled:`` of the output arrays; return the new fill."""
    expressions = plan.expressions
    arrays, entries = _apply_cut(reader, plan, arrays, start, stop)
    n = len(entries)
    if n == 0:
        return filled
    if filled + n > len(out.w):
        raise InputError(f"{reader.where}: the file changed while it was read (more events "
                         f"selected than the first pass found)")
    rows = slice(filled, filled + n)
    columns = [
        feature_column(reader, expression, arrays, entries, inf_as_missing,
                       extent=None if out.extent is None else out.extent[:, j])
        for j, expression in enumerate(feature_expressions)
    ]
    out.put_features(filled, columns)
    out.w[rows] = _weight_column(reader, plan, arrays, entries)

    if out.y is not None:
        target = expressions["target"]
        if target is None:
            out.y[rows] = plan.sample.class_label
        else:
            values = _evaluate(reader, target, arrays, n, np.float64)
            bad = ~np.isfinite(values)
            if bad.any():
                first = int(entries[np.flatnonzero(bad)[0]])
                raise BadValueError(
                    f"{reader.where}: target {target.text!r} is NaN or infinite for "
                    f"{int(np.count_nonzero(bad))} event(s), the first at entry {first}; "
                    "a regression target must be finite: select those events away with a cut "
                    "(cut = \"...\" in the sample's table, cut= in Python)"
                )
            try:
                out.y[rows] = float32_targets(values, f"{reader.where}: target {target.text!r}",
                                              out.target_rounding)
            except InputError as err:
                raise BadValueError(str(err)) from None

    event_expression = expressions["event"]
    if event_expression is None:
        out.event[rows] = entries + chain_offset
    else:
        out.event[rows] = _event_column(reader, event_expression, arrays, entries)
    out.sample_index[rows] = plan.sample_index
    return filled + n


def _apply_cut(
    reader: TreeReader, plan: _Plan, arrays: dict[str, Any], start: int, stop: int
) -> tuple[dict[str, Any], np.ndarray]:
    """The chunk's arrays and entry numbers after the sample's cut (NaN fails the cut)."""
    entries = np.arange(start, stop, dtype=np.int64)
    cut = plan.expressions["cut"]
    if cut is not None:
        values = _evaluate(reader, cut, arrays, stop - start, np.float64)
        mask = (values != 0) & ~np.isnan(values)
        if not mask.all():
            arrays = {name: array[mask] for name, array in arrays.items()}
            entries = entries[mask]
    return arrays, entries


def _weight_column(
    reader: TreeReader, plan: _Plan, arrays: dict[str, Any], entries: np.ndarray
) -> np.ndarray | float:
    """The selected events' weights (expression x scale), float64; BadValueError if not finite."""
    weight = plan.expressions["weight"]
    if weight is None:
        return plan.sample.scale
    # Scaled before the check: a finite weight times a finite scale can still overflow.
    values = _evaluate(reader, weight, arrays, len(entries), np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        values = values * plan.sample.scale
    bad = ~np.isfinite(values)
    if bad.any():
        first = int(entries[np.flatnonzero(bad)[0]])
        kind = "NaN" if np.isnan(values[bad][0]) else "infinite"
        scaled = "" if plan.sample.scale == 1 else f" times scale={plan.sample.scale!r}"
        raise BadValueError(
            f"{reader.where}: weight {weight.text!r}{scaled} is not finite for "
            f"{int(np.count_nonzero(bad))} event(s); the first, entry {first}, is {kind}. "
            "Check the branches in the expression (0/0, log of 0), or select those "
            "events away with a cut (cut = \"...\" in the sample's table, cut= in Python)."
        )
    return values


def _sketch_chunk(
    reader: TreeReader,
    arrays: dict[str, Any],
    start: int,
    stop: int,
    plan: _Plan,
    feature_expressions: Sequence[Expression],
    inf_as_missing: bool,
    sketch: Any,
    filled: int,
) -> int:
    """Pass 1 of a binned read: one chunk into the edge sketch (the features of the events
    it keeps only); the selected events are ids ``filled:``; return the new count."""
    arrays, entries = _apply_cut(reader, plan, arrays, start, stop)
    n = len(entries)
    if n == 0:
        return filled
    w = np.broadcast_to(np.asarray(_weight_column(reader, plan, arrays, entries), np.float64), (n,))
    _check_sketch_weights(reader, plan, w, entries, sketch.smallest_weight)
    ids = np.arange(filled, filled + n, dtype=np.int64)
    wanted = sketch.wanted(w, ids)
    k = int(np.count_nonzero(wanted))
    X = np.empty((k, len(feature_expressions)), dtype=np.float32)
    if k < n:
        entries, w, ids = entries[wanted], w[wanted], ids[wanted]
    if k:
        if k < n:
            arrays = {name: array[wanted] for name, array in arrays.items()}
        fill_rows(X, 0, [feature_column(reader, expression, arrays, entries, inf_as_missing)
                         for expression in feature_expressions])
    sketch.update_selected(X, w, ids, n)
    return filled + n


def _check_sketch_weights(reader: TreeReader, plan: _Plan, w: np.ndarray, entries: np.ndarray,
                          smallest: float) -> None:
    """BadValueError for nonzero weights below ``smallest`` in magnitude, which the edge
    sketch cannot sample by (its ValueError reached the command line as a traceback)."""
    tiny = (w != 0) & (np.abs(w) < smallest)
    if tiny.any():
        first = int(np.flatnonzero(tiny)[0])
        weight = plan.expressions["weight"]
        what = f"weight {weight.text!r}" if weight else f"scale={plan.sample.scale!r}"
        raise BadValueError(
            f"{reader.where}: {what} is below "
            f"{smallest:g} in magnitude for {int(np.count_nonzero(tiny))} event(s); the first, "
            f"entry {int(entries[first])}, is {float(w[first]):g}: too small for the binned "
            "read's edge sketch to sample by; scale the weights (e.g. weight = \"w * 1e300\", "
            "or scale=) or read without binned")


def _evaluate(
    reader: TreeReader, expression: Expression, arrays: dict[str, Any], n: int, dtype: Any
) -> Any:
    """The expression's column in ``dtype``, or a tuple of columns for a tuple of dtypes
    (evaluated once, each cast from its values: an integer goes to float32 in one rounding)."""
    try:
        value = expression.evaluate(arrays)
        if isinstance(dtype, tuple):
            return tuple(to_column(value, n, d, expression) for d in dtype)
        return to_column(value, n, dtype, expression)
    except ExpressionError as err:
        raise ExpressionError(f"{reader.where}: {err}") from err


def _event_column(
    reader: TreeReader, expression: Expression, arrays: dict[str, Any], entries: np.ndarray
) -> np.ndarray:
    """The event expression on one chunk as int64, read in its own type (an int64 beyond
    2**53 stays exact); BadValueError when some values are not integers in int64's range."""
    try:
        value = expression.evaluate(arrays)
        if isinstance(value, ak.Array) and value.ndim == 1 and not ak.any(ak.is_none(value)):
            value = ak.to_numpy(value, allow_missing=False)
        exact = isinstance(value, np.ndarray) and value.dtype.kind in "biu"
        values = to_column(value, len(entries), value.dtype if exact else np.float64, expression)
    except ExpressionError as err:
        raise ExpressionError(f"{reader.where}: {err}") from err
    bad = invalid_event_numbers(values)
    if values.dtype.kind == "f" and _reads_float32(expression, arrays, reader):
        # read in double, a float32 branch's numbers from 2**24 on may be others rounded
        bad |= np.abs(values) >= FLOAT32_EXACT_INTEGERS
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise BadValueError(
            f"{reader.where}: event expression {quote_expression(expression.text)} is not an "
            f"integer event number ({NOT_EVENT_NUMBERS}) for "
            f"{int(np.count_nonzero(bad))} event(s) of the {len(entries)} read from entries "
            f"{int(entries[0])} to {int(entries[-1])}; the first, entry {int(entries[index])}, "
            f"is {shown_number(values[index])}. k-fold training assigns folds by event number: "
            "give the event-number branch (event = \"event\"), or select those events away "
            "with a cut"
        )
    _check_stored_float32(reader, expression, arrays, entries)
    return values.astype(np.int64, copy=False)


def _check_stored_float32(reader: TreeReader, expression: Expression, arrays: dict[str, Any],
                          entries: np.ndarray) -> None:
    """BadValueError where an event expression reads a branch stored as float32 and read as
    double (a Double32_t without a range) from 2**24 on: its result alone does not show
    it (``event - 16777216`` of a 2**24 + 1 written as 2**24 gave 0). Branches read as
    float32, and double values from 2**53 on, are refused by the evaluator."""
    for name, column in _branch_columns(expression, arrays):
        if getattr(column, "dtype", None) != np.float64 or not _stored_as_float32(
                reader, name):
            continue
        bad = np.abs(np.asarray(column)) >= FLOAT32_EXACT_INTEGERS  # NaN: judged by the result
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise BadValueError(
                f"{reader.where}: event expression {quote_expression(expression.text)} reads "
                f"{name!r}, stored as float32, at 2**24 or beyond for "
                f"{int(np.count_nonzero(bad))} event(s); the first, entry {int(entries[index])}, is "
                f"{shown_number(column[index])}, which may be another integer rounded (and "
                "its fold another one's): read event numbers from an integer branch, or "
                "select those events away with a cut")


FLOAT32_EXACT_INTEGERS = 2**24  # float32 holds every integer below it; 2**24 may be 2**24 + 1 rounded


def _reads_float32(expression: Expression, arrays: dict[str, Any], reader: Any = None) -> bool:
    """Whether ``expression`` reads a float32 branch of ``arrays`` (the evaluator widens
    such values to double, so the result's type no longer says so), or a branch of
    ``reader``'s tree stored as float32 and read as double (a Double32_t without a range:
    ROOT rounds 2**24 + 1 to 2**24 when it writes it)."""
    for name, column in _branch_columns(expression, arrays):
        dtype = getattr(column, "dtype", None)
        if dtype == np.float32 or (dtype is None and str(ak.type(column)).endswith("float32")):
            return True
        if reader is not None and _stored_as_float32(reader, name):
            return True
    return False


def _branch_columns(expression: Expression, arrays: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, column) of each branch of ``arrays`` that ``expression`` reads (a constant's
    name skipped)."""
    for name in expression.names:
        try:
            yield name, _field(arrays, name)
        except (KeyError, AttributeError, TypeError):  # a constant's name, not a branch
            continue


def _stored_as_float32(reader: TreeReader, name: str) -> bool:
    """Whether the TTree branch ``reader`` reads as ``name`` holds float32 on disk, whatever
    uproot reads it as."""
    try:
        stored = np.dtype(reader.branch(name).interpretation.from_dtype)
    except Exception:  # noqa: BLE001 - an RNTuple field, or no plain numeric interpretation
        return False
    return stored.kind == "f" and stored.itemsize == 4


def fill_rows(X: np.ndarray, start: int, columns: Sequence[np.ndarray]) -> None:
    """Copy 1-D columns into rows ``start:`` of the C-ordered ``X``, block by block.

    Writing a whole column into row-major memory strides through all of it once per
    column (ten times slower than reading the file); a block of rows small enough for
    the cache is written by every column while it is still there.
    """
    if not columns:
        return
    n = len(columns[0])
    block = max(1024, (1 << 20) // (4 * len(columns)))
    for first in range(0, n, block):
        last = min(first + block, n)
        rows = X[start + first : start + last]
        for j, column in enumerate(columns):
            rows[:, j] = column[first:last]


#: How a training makes +-inf missing, for :func:`feature_column`'s error.
TRAINING_INF_REMEDY = ("set inf_as_missing = true at the top of the configuration "
                       "(inf_as_missing=True in Python)")


def feature_column(
    reader: TreeReader,
    expression: Expression,
    arrays: dict[str, Any],
    entries: np.ndarray,
    inf_as_missing: bool,
    inf_remedy: str = TRAINING_INF_REMEDY,
    extent: np.ndarray | None = None,
) -> np.ndarray:
    """One feature on one chunk as float32; +-inf is an error or NaN (``inf_as_missing``).

    ``entries`` are the chunk's (selected) entry numbers, for the error message, which ends
    with ``inf_remedy`` (how the command being run makes +-inf missing). ``extent``: the
    (lowest, highest, rounded) of the values so far, in double, updated with this chunk's.
    """
    if extent is None:
        values = _evaluate(reader, expression, arrays, len(entries), np.float32)
    else:
        # each from the expression's own values: an int64 beyond 2**53 cast through double
        # was rounded twice and could land on the other float32 neighbour (apply's)
        double, values = _evaluate(reader, expression, arrays, len(entries),
                                   (np.float64, np.float32))
        finite = np.isfinite(values)
        if finite.any():
            kept = double[finite]
            extent[0] = min(extent[0], kept.min())
            extent[1] = max(extent[1], kept.max())
            extent[2] = max(extent[2], float(np.any(kept != values[finite])))
    infinite = np.isinf(values)
    if infinite.any():
        if extent is None:  # the double values, to tell +-inf from finite values beyond float32
            double = _evaluate(reader, expression, arrays, len(entries), np.float64)
        _refuse_beyond_float32(reader, expression, entries, double, infinite)
        if not inf_as_missing:
            raise BadValueError(
                f"{reader.where}: feature {expression.text!r} is infinite for "
                f"{int(np.count_nonzero(infinite))} event(s), the first "
                f"at entry {int(entries[np.flatnonzero(infinite)[0]])}. To treat +-inf as "
                f"missing (NaN), {inf_remedy}, or cut those events away."
            )
        values[infinite] = np.nan
    return values


def _refuse_beyond_float32(reader: TreeReader, expression: Expression, entries: np.ndarray,
                           double: np.ndarray, infinite: np.ndarray) -> None:
    """BadValueError for finite double values that float32 makes +-inf (1e39): they are
    numbers, not missing values, so ``inf_as_missing`` must not make them NaN."""
    beyond = infinite & np.isfinite(double)
    if beyond.any():
        first = int(np.flatnonzero(beyond)[0])
        limit = float(np.finfo(np.float32).max)
        raise BadValueError(
            f"{reader.where}: feature {expression.text!r} is {float(double[first]):g} at entry "
            f"{int(entries[first])} ({int(np.count_nonzero(beyond))} event(s) beyond float32's "
            f"range): features are stored as float32, whose finite values lie within "
            f"+-{limit:.8g}, and such a value is not a missing one; rescale that feature "
            "(e.g. change its unit or take its logarithm) or cut those events away."
        )
