"""The TOML analysis configuration of ``hepbdt train``: read, override, check.

:func:`load_config` parses the file, applies ``--set`` overrides (:func:`apply_overrides`),
expands aliases and checks every key, type and value against the estimator, raising one
:class:`ConfigError` that lists every mistake as ``file: [table] key: why``. Checking the
ROOT files themselves is :func:`hepbdt.analysis.inputs.check_inputs`.
"""

from __future__ import annotations

import difflib
import inspect
import math
import os
import re
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import user_stacklevel
from ..estimators import (
    MAX_CLASSES,
    BDTClassifier,
    BDTRegressor,
    IdleOptionWarning,
    ParameterError,
    acting_options,
    idle_stopping_options,
)
from ..evaluation import DEFAULT_MIN_BACKGROUND_EVENTS, MAX_MIN_BACKGROUND_EVENTS
from ..evaluation.ranking import MAX_PERMUTATION_REPEATS
from ..io import Sample
from ..io.dataset import NORM_NAMES
from ..io.expressions import CONSTANTS, FUNCTIONS, MAX_EXPRESSION_CHARS, Expression
from ..io.samples import split_object_path
from ..io.writers import BOOKKEEPING_BRANCHES, BRANCH_NAME_RULE, branch_name, is_branch_name
from ..tmva_options import (
    CLASSIFICATION_ONLY,
    TMVA_NAMES,
    TMVAOptionError,
    is_tmva_option,
    parse_tmva_options,
    split_option_hint,
    tmva_options_setting,
)

__all__ = ["ConfigError", "AnalysisConfig", "SampleConfig", "SplitConfig", "OutputConfig",
           "load_config", "apply_overrides"]

_SPLIT_MODES = ("random", "alternate", "block")
_FIGURE_FORMATS = ("png", "pdf", "svg")
_CLASS_LABELS = {"signal": 1, "sig": 1, "background": 0, "bkg": 0, 1: 1, 0: 0}
#: The class names of a two-class training, by label (0 background, 1 signal).
BINARY_CLASSES = ("background", "signal")
#: The boosters that train more than two classes (softmax, K trees a round); the others
#: are two-class only. Mirrors BDTClassifier's own check at fit time (a test keeps them
#: equal), so that ``--check`` refuses them before any work.
MULTICLASS_BOOSTINGS = ("gradient", "newton", "adaboost")
#: A class name: it becomes part of the score branches (``bdt_score_<class>``).
_CLASS_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
#: The deepest chain of aliases using aliases (a2 = "a1 + 1", a1 = "a0 + 1", ...).
MAX_ALIAS_DEPTH = 100
#: The most folds of ``[split] kfold``: k models are trained and kept, each on (k-1)/k of
#: the events, so memory and time grow with k.
MAX_KFOLD = 100


class ConfigError(ValueError):
    """Mistakes in an analysis configuration, one line per key: ``file: [table] key: why``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(dict.fromkeys(problems))
        super().__init__("\n".join(self.problems))


# Value kinds: a test and the words for the error message.
def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_finite_number(v: Any) -> bool:
    # TOML has inf and nan: a weight or scale of either makes every yield NaN or infinite
    return _is_number(v) and math.isfinite(v)


def _is_strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


_STR = (lambda v: isinstance(v, str), "a string")
_BOOL = (lambda v: isinstance(v, bool), "true or false")
_INT = (_is_int, "an integer")
_NUMBER = (_is_number, "a number")
_TABLE = (lambda v: isinstance(v, dict), "a table")
_STR_OR_LIST = (lambda v: isinstance(v, str) or (_is_strings(v) and len(v) > 0),
                "a string or a non-empty list of strings")
_STR_LIST = (lambda v: _is_strings(v) and len(v) > 0, "a non-empty list of strings")
_WEIGHT = (lambda v: isinstance(v, str) or _is_finite_number(v),
           "an expression (string) or a finite number")
_FINITE = (_is_finite_number, "a finite number")
_LABEL = (lambda v: isinstance(v, str) or _is_int(v),
          "a class name ('signal', 'background' or, for three or more classes, any name "
          "such as 'ttbar'), 1 or 0")
_BINNED = (lambda v: isinstance(v, bool) or v == "auto", "true, false or \"auto\"")
_MEMORY = (lambda v: (isinstance(v, str) or _is_number(v)) and _memory_bytes(v) is not None,
           "a size of at least one byte such as \"8 GB\" or \"500 MB\"")
_MEMORY_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
                 "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def _memory_bytes(value: Any) -> int | None:
    """Bytes of a size given as a number or a string ("8 GB", "512MiB"); None if not one
    (TOML's inf and nan, and sizes below one byte, are not sizes)."""
    if _is_number(value):
        size = float(value)
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*", str(value))
        if not match or match.group(2).lower() not in _MEMORY_UNITS:
            return None
        size = float(match.group(1)) * _MEMORY_UNITS[match.group(2).lower()]
    return int(size) if math.isfinite(size) and size >= 1 else None


_TOP_KEYS = {
    "title": _STR, "features": _STR_LIST, "aliases": _TABLE, "event": _STR,
    "tree": _STR_OR_LIST, "weight": _WEIGHT, "preselection": _STR, "inf_as_missing": _BOOL,
    "binned": _BINNED, "memory": _MEMORY, "samples": _TABLE, "split": _TABLE, "method": _TABLE,
    "output": _TABLE, "dask": _TABLE,
}
_DASK_KEYS = {"scheduler": _STR, "workers": _INT, "timeout": _NUMBER}
_SAMPLE_KEYS = {
    "files": _STR_OR_LIST, "tree": _STR_OR_LIST, "weight": _WEIGHT, "cut": _STR,
    "label": _LABEL, "target": _STR, "scale": _FINITE, "event": _STR,
}
_SPLIT_KEYS = {"mode": _STR, "train_fraction": _NUMBER, "seed": _INT, "kfold": _INT, "norm": _STR}
_OUTPUT_KEYS = {
    "directory": _STR, "score_branch": _STR, "tmva_xml": _BOOL, "report": _BOOL,
    "figures": _BOOL, "figure_formats": _STR_LIST, "score_features": _BOOL,
    "permutation_repeats": _INT, "min_background_events": _INT, "probability_branch": _STR,
}


@dataclass
class SampleConfig:
    """One ``[samples.NAME]`` table, paths resolved and aliases expanded."""

    name: str
    files: list[str]
    tree: str | list[str] | None = None
    weight: str | float | None = None
    cut: str | None = None
    label: int | None = None
    target: str | None = None
    scale: float = 1.0
    event: str | None = None
    #: The class as named in the file ('signal', 'background', 'ttbar', ...); ``label`` is
    #: its index in :attr:`AnalysisConfig.classes`.
    class_name: str | None = None

    def to_sample(self) -> Sample:
        """The :class:`hepbdt.io.Sample` that reads this sample."""
        return Sample(self.name, self.files, tree=self.tree, weight=self.weight, cut=self.cut,
                      label=self.label, target=self.target, scale=self.scale, event=self.event)


@dataclass
class SplitConfig:
    """``[split]``: a train/test split (``mode``, ``train_fraction``, ``seed``) or ``kfold``."""

    mode: str = "random"
    train_fraction: float = 0.5
    seed: int = 0
    kfold: int | None = None
    norm: str = "none"


@dataclass
class DaskConfig:
    """``[dask]``: train on a Dask cluster. ``scheduler`` is "local" (a LocalCluster of
    ``workers`` single-threaded worker processes, started and stopped by the training) or
    a scheduler address; ``timeout``: seconds to wait for it to answer."""

    scheduler: str = "local"
    workers: int = 2
    timeout: float = 10.0


@dataclass
class OutputConfig:
    """``[output]``: where the results go and which are written."""

    directory: Path | None = None
    score_branch: str = "bdt_score"
    #: With three or more classes: the prefix of the per-class probability branches
    #: (``bdt_prob_<class>``), beside the raw scores ``<score_branch>_<class>``.
    probability_branch: str = "bdt_prob"
    tmva_xml: bool = True
    report: bool = True
    figures: bool = True
    figure_formats: list[str] = field(default_factory=lambda: ["png"])
    score_features: bool = True
    permutation_repeats: int = 3
    min_background_events: int = DEFAULT_MIN_BACKGROUND_EVENTS


@dataclass
class AnalysisConfig:
    """A checked analysis configuration (see :func:`load_config`).

    ``features`` are the names as written (aliases kept, used as labels);
    ``feature_expressions`` have the aliases expanded and become the model's
    ``feature_names_in_``, which :func:`hepbdt.scoring.apply` evaluates on new files.
    """

    path: Path
    title: str
    task: str
    features: list[str]
    feature_expressions: list[str]
    samples: list[SampleConfig]
    event: str | None
    inf_as_missing: bool
    split: SplitConfig
    params: dict[str, Any]
    tmva_options: str | None
    output: OutputConfig
    aliases: dict[str, str] = field(default_factory=dict)
    document: dict[str, Any] = field(default_factory=dict, repr=False)
    #: ``binned``: read the features as one-byte bin codes (True), as float32 (False), or
    #: choose from the estimated memory ("auto"; see :mod:`hepbdt.analysis.estimate`).
    binned: bool | str = False
    #: ``memory``: the bytes training may use ("8 GB"); None: what the machine has available.
    memory: int | None = None
    #: The class names in label order: ["background", "signal"] for two classes, else the
    #: samples' class names sorted (the model's ``classes_``); empty for a regression.
    classes: list[str] = field(default_factory=list)
    #: ``[method] decorrelate``: the expressions (aliases expanded) of the variables the
    #: score is decorrelated from (``[method] decorrelation``); read like the features,
    #: used only in training and in the decorrelation measures.
    decorrelate: list[str] = field(default_factory=list)
    #: ``[dask]``: train on a Dask cluster (None: in this process).
    dask: DaskConfig | None = None

    @property
    def multiclass(self) -> bool:
        """True for a training of three or more classes."""
        return len(self.classes) > 2

    def class_branches(self) -> dict[str, tuple[str, str]]:
        """For a multi-class training: class -> (raw score branch, probability branch)."""
        out = self.output
        return {c: (f"{out.score_branch}_{c}", f"{out.probability_branch}_{c}")
                for c in self.classes} if self.multiclass else {}

    @property
    def estimator_class(self) -> type:
        """BDTRegressor for a regression, else BDTClassifier."""
        return BDTRegressor if self.task == "regression" else BDTClassifier

    @property
    def estimator_params(self) -> dict[str, Any]:
        """The estimator's parameters: the configured ones, with ``random_state`` 0 unless
        given (a configuration trains the same model every run, as its split's seed 0
        splits the events alike)."""
        return {"random_state": 0, **self.params}

    def make_estimator(self) -> Any:
        """A fresh, unfitted estimator with the configured parameters."""
        return self.estimator_class(**self.estimator_params)

    def make_samples(self) -> list[Sample]:
        """The :class:`hepbdt.io.Sample` objects, in the order of the file."""
        return [s.to_sample() for s in self.samples]

    @property
    def extra_expressions(self) -> list[str]:
        """The decorrelation variables that are not features: read as columns after them."""
        return [e for e in self.decorrelate if e not in self.feature_expressions]


class _Problems:
    """Collects ``file: [table] key: message`` lines; marks keys that came from --set."""

    def __init__(self, source: str, overridden: set[str]) -> None:
        self.source = source
        self.overridden = overridden
        self.lines: list[str] = []

    def add(self, table: str | None, key: str | None, message: str) -> None:
        dotted = ".".join(p for p in (table, key) if p)
        where = f"[{table}] " if table else ""
        name = f"{key}: " if key else ""
        marker = " (from --set)" if dotted in self.overridden else ""
        if key and marker:
            name = f"{key}{marker}: "
        self.lines.append(f"{self.source}: {where}{name}{message}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise ConfigError(self.lines)


def _type_name(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
             list: "a list", dict: "a table"}
    return names.get(type(value), type(value).__name__)


def _got(value: Any) -> str:
    """What a key was given, for a type error: its type and value, and for a string that
    reads as a number (``--set method.learning_rate=.5`` is TOML's string ".5") how TOML
    writes the number."""
    text = f"{_type_name(value)} ({value!r})"
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return text
        if not math.isfinite(number):
            return text
        return (text + "; TOML writes a number unquoted, with a digit on each side of its "
                "point (0.5, 5.0, 1e3)")
    return text


def _check_keys(table: dict[str, Any], spec: dict[str, tuple[Any, str]], name: str | None,
                problems: _Problems, known: Callable[[str], str | None] | None = None
                ) -> dict[str, Any]:
    """The entries of ``table`` that are known and of the right type; the rest are problems
    (``known``: what to write instead of another program's name, or None)."""
    good = {}
    for key, value in table.items():
        if key not in spec:
            matches = difflib.get_close_matches(key, list(spec), n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(repr(m) for m in matches)}? " if matches else ""
            if known and known(key) is not None:
                hint = f"{key} is TMVA's option; here write {known(key)}. "
            problems.add(name, key, f"unknown key; {hint}valid keys: {', '.join(spec)}")
            continue
        test, words = spec[key]
        if not test(value):
            problems.add(name, key, f"expected {words}, got {_got(value)}")
            continue
        good[key] = value
    return good


def apply_overrides(document: dict[str, Any], overrides: list[str] | tuple[str, ...]
                    ) -> set[str]:
    """Apply ``--set key=value`` overrides in place; return the dotted keys set.

    ``key`` is dotted (``method.n_trees``, ``samples.signal.cut``, ``split.kfold``);
    ``value`` is read as a TOML value (``100``, ``true``, ``["a", "b"]``, ``"text"``) and,
    when it is not one, taken as a plain string (``--set split.mode=random``).
    """
    toml = _tomllib()
    done: set[str] = set()
    for text in overrides:
        key, sep, raw = str(text).partition("=")
        key = key.strip()
        parts = key.split(".")
        if not sep or not key or not all(parts):
            raise ConfigError([f"--set {text!r}: expected key=value with a dotted key, e.g. "
                               "--set method.n_trees=100 or --set samples.signal.cut='nJet >= 2'"])
        try:
            value = toml.loads(f"value = {raw.strip()}")["value"]
        except toml.TOMLDecodeError:
            value = raw.strip()
        table = document
        for depth, part in enumerate(parts[:-1]):
            table = table.setdefault(part, {})
            if not isinstance(table, dict):
                raise ConfigError([f"--set {text!r}: {'.'.join(parts[:depth + 1])} is not a "
                                   "table, so it has no keys"])
        table[parts[-1]] = value
        done.add(key)
    return done


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


# A name in an expression that is not a function call, an attribute or inside `backticks`.
_NAME = re.compile(r"`[^`]*`|(?<![\w.])[A-Za-z_]\w*(?![\w`])(?!\s*\()")


class _BadAlias(ValueError):
    """An expression uses an alias whose own problem is already reported."""


class _AliasTable:
    """The ``[aliases]``, each expanded once, in dependency order and without recursion.

    An alias that refers to itself (through others or not), nests more than
    :data:`MAX_ALIAS_DEPTH` aliases deep or expands to more than
    :data:`MAX_EXPRESSION_CHARS` characters is one problem on its own key; the aliases and
    expressions that use it add none. Sizes are counted before a text is built, so forty
    aliases that each use the previous one twice cost forty small steps, not 2**40.
    """

    def __init__(self, texts: dict[str, str], problems: _Problems) -> None:
        self.texts = texts
        self.problems = problems
        self.uses = {name: self._uses(text) for name, text in texts.items()}
        self.expanded: dict[str, str] = {}
        self.depth: dict[str, int] = {}
        self.deepest: dict[str, str | None] = {}
        self.bad: set[str] = set()
        self._expand_in_order()
        self._report_cycles()
        self._parse_each()

    def _parse_each(self) -> None:
        """Parse every alias, used or not: "everything is checked" held only for the aliases
        an expression used (``Jet_pt[:, 0`` in an unused one passed)."""
        for name, text in self.expanded.items():
            try:
                Expression(text, "feature")
            except ValueError as exc:  # ExpressionError
                self._refuse(name, str(exc).replace("feature expression", "expression", 1))

    def _uses(self, text: str) -> list[re.Match[str]]:
        """Where ``text`` names an alias."""
        return [m for m in _NAME.finditer(text) if m.group(0) in self.texts]

    def _expand_in_order(self) -> None:
        """Expand every alias after the aliases it uses (Kahn's order); cycles stay out."""
        waiting = {name: len({m.group(0) for m in uses}) for name, uses in self.uses.items()}
        users: dict[str, list[str]] = {name: [] for name in self.texts}
        for name, uses in self.uses.items():
            for used in dict.fromkeys(m.group(0) for m in uses):
                users[used].append(name)
        ready = [name for name, count in waiting.items() if count == 0]
        while ready:
            name = ready.pop()
            self._expand_one(name)
            for user in users[name]:
                waiting[user] -= 1
                if waiting[user] == 0:
                    ready.append(user)

    def _expand_one(self, name: str) -> None:
        """Expand ``name``, whose aliases are done: bounded in depth and size."""
        used = [m.group(0) for m in self.uses[name]]
        if any(u in self.bad for u in used):
            self.bad.add(name)
            return
        self.deepest[name] = max(used, key=lambda u: self.depth[u], default=None)
        self.depth[name] = 1 + (self.depth[self.deepest[name]] if used else 0)
        if self.depth[name] > MAX_ALIAS_DEPTH:
            chain = [name]
            while (step := self.deepest.get(chain[-1])) is not None:
                chain.append(step)
            shown = chain if len(chain) <= 4 else [*chain[:2], "...", chain[-1]]
            self._refuse(name, f"nests {len(chain)} aliases deep ({' -> '.join(shown)}), more "
                         f"than the {MAX_ALIAS_DEPTH} allowed")
            return
        try:
            self.expanded[name] = self.substitute(self.texts[name], self.uses[name])
        except ValueError as exc:
            self._refuse(name, str(exc))

    def _refuse(self, name: str, message: str) -> None:
        self.bad.add(name)
        self.problems.add("aliases", name, message)

    def substitute(self, text: str, uses: list[re.Match[str]], what: str = "") -> str:
        """``text`` with each alias in ``uses`` replaced by its expansion in parentheses;
        ValueError (before building it) when the result would be too long."""
        if any(m.group(0) in self.bad for m in uses):
            raise _BadAlias(text)
        size = len(text) + sum(len(self.expanded[m.group(0)]) + 2 - len(m.group(0))
                               for m in uses)
        if size > MAX_EXPRESSION_CHARS:
            raise ValueError(f"expands to {size:,} characters{what}, more than the "
                             f"{MAX_EXPRESSION_CHARS:,} an expression may have (each use of "
                             "an alias copies its whole expansion)")
        pieces, end = [], 0
        for m in uses:
            pieces += [text[end:m.start()], "(", self.expanded[m.group(0)], ")"]
            end = m.end()
        return "".join([*pieces, text[end:]])

    def _report_cycles(self) -> None:
        """One problem per cycle, on the alias where a walk from the first unresolved alias
        (in the file's order) enters it; the aliases that use a cycle add none."""
        left = [name for name in self.texts if name not in self.expanded and name not in self.bad]
        for start in left:
            if start in self.bad:
                continue
            path, on_path = [start], {start}
            while path[-1] not in self.bad:
                step = next(m.group(0) for m in self.uses[path[-1]]
                            if m.group(0) not in self.expanded)
                path.append(step)
                if step in on_path:
                    break
                on_path.add(step)
            if path[-1] not in self.bad:
                cycle = path[path.index(path[-1]):]
                shown = cycle if len(cycle) <= 8 else [*cycle[:3], "...", *cycle[-2:]]
                self.problems.add("aliases", cycle[0], f"alias {cycle[0]!r} refers to itself "
                                  f"({' -> '.join(shown)})")
                self.bad.update(cycle)
            self.bad.update(path)

    def expand(self, text: str) -> str:
        """``text`` with every alias replaced by its (parenthesised, expanded) expression; an
        alias alone is its expression without parentheses."""
        stripped = text.strip()
        if stripped in self.texts:
            if stripped in self.bad:
                raise _BadAlias(stripped)
            return self.expanded[stripped]
        return self.substitute(text, self._uses(text), " with its aliases")


# $NAME or ${NAME} in a path: an environment variable (os.path.expandvars' forms).
_VARIABLE = re.compile(r"\$(?:(\w+)|\{([^}]*)\})")


def _unset_variables(spec: str) -> list[str]:
    """The environment variables ``spec`` uses that are not set: os.path.expandvars leaves
    them as written, so the path would name a file or folder called ``$NAME``."""
    names = [m.group(1) or m.group(2) for m in _VARIABLE.finditer(spec)]
    return list(dict.fromkeys(n for n in names if n not in os.environ))


def _check_variables(spec: str, table: str, key: str, problems: _Problems) -> None:
    for name in _unset_variables(spec):
        problems.add(table, key, f"{spec!r} uses the environment variable ${name}, which is "
                     "not set; set it, or write the path without it")


def _resolve_path(spec: str, base: Path) -> str:
    """A file spec relative to the config file's folder (``~`` and ``$VAR`` expanded)."""
    spec = os.path.expandvars(os.path.expanduser(spec))
    if "://" in spec or os.path.isabs(spec):
        return spec
    return os.path.normpath(os.path.join(base, spec)) if not spec.startswith(":") else spec


def load_config(path: str | os.PathLike, overrides: list[str] | tuple[str, ...] = (),
                output: str | os.PathLike | None = None) -> AnalysisConfig:
    """Read and check a TOML analysis configuration.

    Parameters
    ----------
    path : the ``.toml`` file. Sample files are relative to its folder.
    overrides : ``key=value`` strings, as ``hepbdt train --set`` (see :func:`apply_overrides`).
    output : output folder, overriding ``[output] directory``.

    Every key, type and value is checked (unknown keys with close matches, estimator
    options against the estimator, expressions parsed) and all mistakes are raised together
    as one :class:`ConfigError`. Files and branches are checked by
    :func:`hepbdt.analysis.inputs.check_inputs`.
    """
    source = os.fspath(path)
    config_path = Path(source)
    document = _read_document(config_path)
    overridden = apply_overrides(document, overrides)
    _override_split_scheme(document, overridden)
    problems = _Problems(source, overridden)
    top = _check_keys(document, _TOP_KEYS, None, problems)
    expander = _Expander(_aliases(top.get("aliases", {}), problems), problems)
    features = top.get("features")
    if features is None and "features" not in document:
        problems.add(None, "features", "missing; list the branches or expressions to train "
                     "on, e.g. features = [\"HT\", \"MET_pt\", \"Jet_pt[:, 0]\"]")
    expressions = _feature_expressions(features or [], expander, problems)
    event = expander.optional(top.get("event"), "event", None, "event")
    # relative to the folder of the file as given (a link's, not its target's): what a
    # campaign folder holding a link to a shared configuration means by its data/
    samples = _samples(document, top, config_path.absolute().parent.resolve(), expander,
                       problems)
    task, classes = _task(samples, problems)
    _check_target_not_feature(samples, features or [], expressions, problems)
    split = _split_config(top.get("split", {}), task, problems)
    if split.kfold is not None and event is None and not all(s.event for s in samples):
        problems.add("split", "kfold", "k-fold training assigns events to folds by event "
                     "number: give event = \"event\" (the event-number branch) at the top of "
                     "the file")
    method = dict(top.get("method", {}))
    decorrelate_texts = method.pop("decorrelate", None)
    params, tmva_options = _method_config(method, task, problems, len(classes))
    decorrelate = _decorrelate_expressions(decorrelate_texts, params, task, len(classes),
                                           expander, problems)
    _check_map_variable(params, decorrelate, expressions, top.get("binned", False), problems)
    output_config = _output_config(top.get("output", {}), problems, classes)
    _check_score_names(output_config, features or [], classes, problems)
    dask_config = _dask_config(top["dask"], problems) if "dask" in top else None
    if dask_config is not None and decorrelate:
        problems.add("method", "decorrelate", f"{_decorrelation_named(params)} is not "
                     "distributed yet; remove the [dask] table to train it in memory")
    if dask_config is not None and top.get("binned", False) is not False:
        problems.add(None, "binned", "the Dask training bins the float features on its "
                     "workers; remove binned, or the [dask] table")
    if dask_config is not None and not problems.lines:
        _check_dask_method(params, task, problems)
    if output is not None:
        output_config.directory = Path(output)
    problems.raise_if_any()
    return AnalysisConfig(
        path=config_path, title=top.get("title", config_path.stem), task=task,
        features=list(features or []), feature_expressions=expressions, samples=samples,
        event=event, inf_as_missing=top.get("inf_as_missing", False), split=split,
        params=params, tmva_options=tmva_options, output=output_config,
        aliases=expander.aliases, document=document, binned=top.get("binned", False),
        memory=None if "memory" not in top else _memory_bytes(top["memory"]),
        classes=classes, decorrelate=decorrelate, dask=dask_config,
    )


MAX_CONFIG_BYTES = 16 << 20  # a configuration file, at most (its text and its parse are held)


def _read_document(config_path: Path) -> dict[str, Any]:
    """The parsed TOML document; ConfigError when the file is missing or not TOML."""
    source = os.fspath(config_path)
    if config_path.is_dir():
        raise ConfigError([f"{source}: is a directory, not a configuration file; give the "
                           ".toml file"])
    if config_path.exists() and not config_path.is_file():
        raise ConfigError([f"{source}: is not a regular file (a FIFO, socket or device); give "
                           "the .toml file"])
    if not config_path.is_file():
        raise ConfigError([f"{source}: the configuration file does not exist"])
    size = config_path.stat().st_size
    if size > MAX_CONFIG_BYTES:  # read whole, parsed whole: bounded before it is read
        raise ConfigError([f"{source}: {size:,} bytes, more than a configuration has (at most "
                           f"{MAX_CONFIG_BYTES:,}); give the .toml file"])
    toml = _tomllib()
    try:
        # utf-8-sig: a byte-order mark (Windows editors write one) is no TOML statement
        return toml.loads(config_path.read_text(encoding="utf-8-sig"))
    except toml.TOMLDecodeError as exc:
        raise ConfigError([f"{source}: not valid TOML: {exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{source}: not a UTF-8 text file ({exc})"]) from None


def _override_split_scheme(document: dict[str, Any], overridden: set[str]) -> None:
    """An override of the scheme replaces the file's scheme: --set split.kfold=5 on a file
    with mode, train_fraction and seed trains k folds, and the other way round; a mode
    without a random draw set over a random split drops the file's seed."""
    split_table = document.get("split")
    if not isinstance(split_table, dict):
        return
    single = {"split.mode", "split.train_fraction"}
    if "split.kfold" in overridden:
        for key in (single | {"split.seed"}) - overridden:
            split_table.pop(key.split(".")[1], None)
    elif single & overridden:
        split_table.pop("kfold", None)
        mode = split_table.get("mode", "random")
        if isinstance(mode, str) and mode.lower() != "random" and "split.seed" not in overridden:
            split_table.pop("seed", None)


def _aliases(table: dict[str, Any], problems: _Problems) -> dict[str, str]:
    """The valid ``[aliases]``: identifiers that are not function names, with string values."""
    aliases: dict[str, str] = {}
    for name, text in table.items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            problems.add("aliases", name, "an alias name must be an identifier (letters, "
                         "digits, _)")
        elif name in FUNCTIONS:
            problems.add("aliases", name, "an alias cannot have the name of a function")
        elif not isinstance(text, str):
            problems.add("aliases", name, f"expected an expression (string), got "
                         f"{_type_name(text)}")
        else:
            aliases[name] = text
    return aliases


class _Expander:
    """Expands aliases in an expression and parses it; a bad one becomes a problem."""

    def __init__(self, aliases: dict[str, str], problems: _Problems) -> None:
        self.aliases = aliases
        self.problems = problems
        self.table = _AliasTable(aliases, problems)

    def __call__(self, text: str, role: str, table: str | None, key: str) -> str | None:
        """The expanded expression, or None (and a problem) when it does not parse."""
        try:
            if len(text) > MAX_EXPRESSION_CHARS:
                Expression(text, role)  # refuses it before the aliases are looked for
            expanded = self.table.expand(text)
            Expression(expanded, role)
        except _BadAlias:  # the alias's own problem is reported
            return None
        except ValueError as exc:  # ExpressionError is a ValueError
            self.problems.add(table, key, str(exc))
            return None
        return expanded

    def optional(self, text: str | None, role: str, table: str | None, key: str) -> str | None:
        """As calling it, passing None through."""
        return None if text is None else self(text, role, table, key)


def _feature_expressions(features: list[str], expand: _Expander, problems: _Problems
                         ) -> list[str]:
    """The expanded feature expressions; repeated ones are a problem, also when written
    differently (``"Jet_pt[:,0]"`` and an alias of ``"Jet_pt[:, 0]"``, ``"HT"`` and
    ``"(HT)"``): the same column twice splits its importance in the ranking between them."""
    expanded = [(text, expand(text, "feature", None, "features")) for text in features]
    expressions = [e for _, e in expanded if e is not None]
    written: dict[str, list[str]] = {}
    for text, expression in expanded:
        if expression is not None:
            written.setdefault(_expression_key(expression), []).append(text)
    repeated = [texts for texts in written.values() if len(texts) > 1]
    if repeated:
        shown = "; ".join(" and ".join(map(repr, dict.fromkeys(texts))) if len(set(texts)) > 1
                          else repr(texts[0]) for texts in repeated)
        problems.add(None, "features", f"repeated: {shown} (the same expression, once "
                     "aliases are expanded); give each feature once")
    return expressions


def _check_target_not_feature(samples: list[SampleConfig], features: list[str],
                              expressions: list[str], problems: _Problems) -> None:
    """A regression target that is one of the features, once aliases are expanded, is a
    problem: the model would copy an input and print a near-zero RMSE."""
    if len(expressions) != len(features):  # a feature's own problem is reported
        return
    keys = {_expression_key(e): text for text, e in zip(features, expressions, strict=True)}
    for sample in samples:
        feature = None if sample.target is None else keys.get(_expression_key(sample.target))
        if feature is not None:
            problems.add(f"samples.{sample.name}", "target", f"{sample.target!r} is also "
                         f"the feature {feature!r}: the model would read the answer from its "
                         "input; remove it from features, or regress another quantity")


def _expression_key(expression: str) -> str:
    """What an expression computes, regardless of spaces, redundant parentheses and the
    spelling of ``&&``/``and``: its parsed syntax tree."""
    return Expression(expression, "feature").canonical()


def _samples(document: dict[str, Any], top: dict[str, Any], base: Path, expand: _Expander,
             problems: _Problems) -> list[SampleConfig]:
    """Every ``[samples.NAME]`` table, with the file's defaults and preselection applied."""
    defaults = {
        "tree": top.get("tree"),
        "preselection": expand.optional(top.get("preselection"), "cut", None, "preselection"),
        "weight": top.get("weight") if not isinstance(top.get("weight"), str)
        else expand(top["weight"], "weight", None, "weight"),
    }
    sample_tables = top.get("samples")
    if sample_tables is None and "samples" not in document:
        problems.add(None, "samples", "missing; add a [samples.NAME] table per sample with "
                     "files and label (or target)")
    elif sample_tables == {}:  # passed --check as "0 samples"; the read then refused it
        problems.add(None, "samples", "holds no sample; add a [samples.NAME] table per "
                     "sample with files and label (or target)")
    samples = []
    for name, table in (sample_tables or {}).items():
        sample = _sample(name, table, defaults, base, expand, problems)
        if sample is not None:
            samples.append(sample)
    if any(isinstance(t, dict) and "weight" not in t for t in (sample_tables or {}).values()):
        _check_constant_weight(defaults["weight"], None, problems)  # a sample takes it
    return samples


def _sample(name: str, table: Any, defaults: dict[str, Any], base: Path, expand: _Expander,
            problems: _Problems) -> SampleConfig | None:
    """One sample's configuration (None when its table or files are unusable)."""
    section = f"samples.{name}"
    if not isinstance(table, dict):
        problems.add("samples", name, f"expected a table [samples.{name}] with files and "
                     f"label, got {_type_name(table)}")
        return None
    entry = _check_keys(table, _SAMPLE_KEYS, section, problems)
    if "files" not in table:
        problems.add(section, "files", "missing; give a path, a glob or a list of them "
                     "(relative to the configuration file)")
        return None
    files = entry.get("files")
    if files is None:
        return None
    files = [files] if isinstance(files, str) else files
    for spec in files:
        _check_variables(spec, section, "files", problems)
    paths = [_resolve_path(f, base) for f in files]
    tree = entry.get("tree", defaults["tree"])
    named = [split_object_path(p)[1] for p in paths]
    if tree is not None and None not in named:
        if "tree" in entry and any(t != tree for t in named):  # which did the user mean?
            problems.add(section, "tree", f"{tree!r} is the tree of none of the files: each "
                         f"names its own ({files[0]!r}); give the tree in one place")
        tree = None  # the configuration's default tree, which no file of this sample takes
    sample = SampleConfig(name=name, files=paths, tree=tree,
                          scale=float(entry.get("scale", 1.0)))
    if sample.scale == 0:
        problems.add(section, "scale", "0 makes every weight of the sample 0, so it adds "
                     "nothing to the training or the yields: give the factor its weights are "
                     "multiplied by (e.g. cross section x luminosity / generated events), or "
                     "remove the sample")
    weight = entry.get("weight", defaults["weight"])
    if isinstance(weight, str) and "weight" in entry:
        weight = expand(weight, "weight", section, "weight")
    if "weight" in entry:
        _check_constant_weight(weight, section, problems)
    sample.weight = weight
    cuts = [defaults["preselection"]] if defaults["preselection"] else []
    if "cut" in entry:
        cut = expand(entry["cut"], "cut", section, "cut")
        if cut is not None:
            cuts.append(cut)
    sample.cut = " && ".join(f"({c})" for c in cuts) if len(cuts) > 1 else (
        cuts[0] if cuts else None)
    if "event" in entry:
        sample.event = expand(entry["event"], "event", section, "event")
    _sample_label(sample, table, entry, section, expand, problems)
    return sample


def _constant_value(weight: str | float | None) -> float | None:
    """The value of a weight that reads no branch (``0``, ``"0"``, ``"1 - 1"``, ``"nan"``);
    None for one that reads branches, or that the read refuses on its own."""
    if weight is None or _is_number(weight):
        return None if weight is None else float(weight)
    try:
        expression = Expression(weight, "weight")
        if not expression.names <= set(CONSTANTS):
            return None
        return float(expression.evaluate({}))
    except (ValueError, TypeError, OverflowError):  # refused where it is parsed or read
        return None


def _check_constant_weight(weight: str | float | None, section: str | None,
                           problems: _Problems) -> None:
    """A weight of the same value for every event must be a finite number other than 0:
    weight = 0 (or "0") gave the sample, silently, no part in the training or the yields,
    as scale = 0 would (which is refused), and "nan" or "1/0" passed --check."""
    value = _constant_value(weight)
    whose, instead = (("every sample that takes it", "give each sample its own weight")
                      if section is None else ("the sample", "remove the sample"))
    if value == 0:
        problems.add(section, "weight", f"{weight!r} makes every weight of {whose} 0, so it "
                     "adds nothing to the training or the yields: give the event weight (an "
                     f"expression or a number other than 0), or {instead}")
    elif value is not None and not math.isfinite(value):
        problems.add(section, "weight", f"{weight!r} is {value} for every event; give a "
                     "finite event weight (an expression or a number other than 0)")


def _sample_label(sample: SampleConfig, table: dict[str, Any], entry: dict[str, Any],
                  section: str, expand: _Expander, problems: _Problems) -> None:
    """Set the sample's class label or regression target from its table."""
    if "target" in entry:
        sample.target = expand(entry["target"], "target", section, "target")
        if "label" in entry:
            problems.add(section, "label", "give label (classification) or target "
                         "(regression), not both")
    elif "label" in entry:
        label = entry["label"]
        key = label.lower() if isinstance(label, str) else label
        if key in _CLASS_LABELS:
            sample.class_name = BINARY_CLASSES[_CLASS_LABELS[key]]
        elif isinstance(label, str) and _CLASS_NAME.fullmatch(label):
            sample.class_name = label
        elif isinstance(label, str):
            problems.add(section, "label", f"{label!r} cannot name a class: a class name "
                         "becomes part of the score branches (bdt_score_<class>), so it takes "
                         "1 to 64 letters, digits and _ (e.g. 'ttbar', 'W_jets'). For a "
                         "regression give target = 'expression' instead")
        else:
            problems.add(section, "label", f"{label!r} is not a class; valid: 'signal' "
                         "(or 1), 'background' (or 0), or a class name such as 'ttbar' for "
                         "three or more classes")
    elif "label" not in table and "target" not in table:
        problems.add(section, None, "give label = 'signal' or 'background' "
                     "(classification) or target = 'expression' (regression)")


def _task(samples: list[SampleConfig], problems: _Problems) -> tuple[str, list[str]]:
    """The task and the class names in label order; sets each sample's label.

    "regression" when the samples have targets. Otherwise a classification: two classes
    must be 'signal' and 'background' (labels 1 and 0, as always); three or more are a
    multi-class training whose classes are the names sorted, each labelled by its index
    (the order of the model's ``classes_``, of ``predict_proba``'s columns and of the
    score branches)."""
    regression = [s.name for s in samples if s.target is not None]
    if regression and len(regression) < len(samples):
        others = [s.name for s in samples if s.target is None]
        problems.add("samples", None, f"samples {regression} have a target but {others} do "
                     "not; every sample of a regression needs target = '...'")
    if regression or not samples or problems.lines:
        return ("regression" if regression else "classification"), []
    names = {s.class_name for s in samples}
    if len(names) <= 2 and names != set(BINARY_CLASSES):
        if names <= set(BINARY_CLASSES):
            missing = "signal" if "signal" not in names else "background"
            problems.add("samples", None, f"no {missing} sample; a classification needs at "
                         "least one sample with label = 'signal' and one with label = "
                         "'background' (or three or more classes, e.g. label = 'ttbar')")
        else:
            problems.add("samples", None, f"the classes {sorted(names)}: two classes are "
                         "label = 'signal' and label = 'background'; a multi-class training "
                         "needs three or more class names")
        return "classification", []
    if len(names) > MAX_CLASSES:  # BDTClassifier's limit: refused here, not after the read
        problems.add("samples", "label", f"{len(names)} classes; a training takes at most "
                     f"{MAX_CLASSES} (each a column of predict_proba and two score branches): "
                     "merge some samples into one class (the same label)")
    if len(names) > 2:
        _check_class_names(names, problems)
    classes = list(BINARY_CLASSES) if len(names) == 2 else sorted(names)
    for sample in samples:
        sample.label = classes.index(sample.class_name)
    return "classification", classes


def _check_class_names(names: set[str], problems: _Problems) -> None:
    """Problems for class names that look like one class written two ways: names that
    differ only in case, and a near miss of 'signal' or 'background' ('backgroud'). Each
    would silently make a two-class training a multi-class one, or one class two."""
    by_case: dict[str, list[str]] = {}
    for name in sorted(names):
        by_case.setdefault(name.lower(), []).append(name)
    for spellings in by_case.values():
        if len(spellings) > 1:
            problems.add("samples", "label", f"the classes {spellings} differ only in case: "
                         "write one class the same way in every sample, or give two classes "
                         "names that differ otherwise")
    for name in sorted(names - set(BINARY_CLASSES)):
        near = difflib.get_close_matches(name.lower(), BINARY_CLASSES, n=1, cutoff=0.8)
        if near and near[0] not in name.lower():
            problems.add("samples", "label", f"the class {name!r} looks like {near[0]!r} "
                         f"misspelt: every distinct name is a class, so it makes a training "
                         f"of {len(names)} classes; correct it, or name that class apart "
                         "(e.g. 'ttbar')")


def _dask_config(table: dict[str, Any], problems: _Problems) -> DaskConfig:
    entry = _check_keys(table, _DASK_KEYS, "dask", problems)
    dask = DaskConfig()
    if "scheduler" in entry:
        dask.scheduler = entry["scheduler"]
        if dask.scheduler != "local":
            from ..dask._cluster import address_problem  # no dask import without it

            problem = address_problem(dask.scheduler)
            if problem is not None:
                problems.add("dask", "scheduler", problem)
    if "workers" in entry:
        if not 1 <= entry["workers"] <= 1024:
            problems.add("dask", "workers", f"{entry['workers']} workers: expected 1 to 1024")
        if dask.scheduler != "local":
            problems.add("dask", "workers", "workers is the size of a local cluster "
                         "(scheduler = \"local\"); a scheduler address has its own workers")
        dask.workers = entry["workers"]
    if "timeout" in entry:
        from ..dask._cluster import timeout_problem  # no dask import without [dask]

        problem = timeout_problem(entry["timeout"])
        if problem is not None:
            problems.add("dask", "timeout", problem)
        dask.timeout = float(entry["timeout"])
    return dask


def _split_config(table: dict[str, Any], task: str, problems: _Problems) -> SplitConfig:
    entry = _check_keys(table, _SPLIT_KEYS, "split", problems, split_option_hint)
    split = SplitConfig()
    if "mode" in entry:
        mode = entry["mode"].lower()
        if mode not in _SPLIT_MODES:
            problems.add("split", "mode", f"{entry['mode']!r} is not a split mode; valid: "
                         f"{', '.join(_SPLIT_MODES)} (or kfold = k)")
        split.mode = mode
    if "train_fraction" in entry:
        if not 0 < entry["train_fraction"] < 1:
            problems.add("split", "train_fraction", f"{entry['train_fraction']} is not in (0, 1)")
        split.train_fraction = float(entry["train_fraction"])
    if "seed" in entry:
        if entry["seed"] < 0:
            problems.add("split", "seed", f"{entry['seed']} is not a seed; expected an integer "
                         ">= 0")
        split.seed = entry["seed"]
    if "kfold" in entry:
        if not 2 <= entry["kfold"] <= MAX_KFOLD:
            problems.add("split", "kfold", f"{entry['kfold']} folds: k-fold needs k >= 2 and "
                         f"k <= {MAX_KFOLD}")
        clash = [k for k in ("mode", "train_fraction") if k in entry]
        if clash:
            verb = "are" if len(clash) > 1 else "is"
            problems.add("split", "kfold", f"kfold splits by event number; remove "
                         f"{' and '.join(clash)}, which {verb} for a single train/test split")
        split.kfold = entry["kfold"]
    if "seed" in entry and ("kfold" in entry or split.mode != "random"):
        scheme = "kfold (by event number)" if "kfold" in entry else f"mode = {split.mode!r}"
        problems.add("split", "seed", f"seed draws the random split only; {scheme} takes no "
                     "random draw, so the seed would change nothing: remove it")
    if "norm" in entry:
        norm = NORM_NAMES.get(entry["norm"].lower())
        if norm is None:
            problems.add("split", "norm", f"{entry['norm']!r} is not a normalisation; valid: "
                         "none, num_events, equal_num_events (TMVA: None, NumEvents, "
                         "EqualNumEvents)")
        elif norm == "equal_num_events" and task == "regression":
            problems.add("split", "norm", "equal_num_events balances classes; a regression "
                         "has none (use num_events or none)")
        else:
            split.norm = norm
    return split


AUTO = "Literal['auto']"  # an estimator option's annotation for the string "auto" alone


def _accepts(annotation: str, value: Any) -> bool:
    if value is None:
        return _takes_none(annotation)
    tests = {"int": _is_int, "float": _is_number, "bool": lambda v: isinstance(v, bool),
             "str": lambda v: isinstance(v, str), AUTO: lambda v: v == "auto"}
    kinds = [k.strip() for k in str(annotation).split("|")]
    known = [tests[k] for k in kinds if k in tests]
    return not known or any(test(value) for test in known)


def _takes_none(annotation: str) -> bool:
    """Whether an estimator option's annotation admits None."""
    return "None" in [k.strip() for k in str(annotation).split("|")]


def _annotation_words(annotation: str) -> str:
    words = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string",
             "None": '"none" (None)', AUTO: '"auto"'}
    kinds = [words[k.strip()] for k in str(annotation).split("|") if k.strip() in words]
    return " or ".join(kinds)


def _method_config(table: dict[str, Any], task: str, problems: _Problems, n_classes: int = 2
                   ) -> tuple[dict[str, Any], str | None]:
    """The estimator parameters of ``[method]`` (hepbdt names or ``tmva_options``), checked
    by the estimator itself."""
    cls = BDTRegressor if task == "regression" else BDTClassifier
    signature = inspect.signature(cls.__init__)
    valid = [name for name in signature.parameters if name != "self"]
    n_before = len(problems.lines)
    params: dict[str, Any] = {}
    setting: dict[str, dict[str, Any]] = {}  # the parameters that tmva_options sets
    tmva_options = table.get("tmva_options")
    if tmva_options is not None:
        if not isinstance(tmva_options, str):
            problems.add("method", "tmva_options", "expected a TMVA option string, e.g. "
                         "\"NTrees=850:MaxDepth=3:BoostType=AdaBoost\"")
            tmva_options = None
        else:
            try:
                params = parse_tmva_options(tmva_options, cls._estimator_type)
                setting = tmva_options_setting(tmva_options)
            except TMVAOptionError as exc:
                problems.add("method", "tmva_options", str(exc))
    for key, value in table.items():
        if key == "tmva_options":
            continue
        if key not in valid:
            problems.add("method", key, f"unknown option of {cls.__name__}; "
                         f"{_unknown_option_hint(key, valid, task)}")
            continue
        if key == "signal_label":  # it turned the samples' classes round: AUC 0.10, silently
            problems.add("method", key, "the samples' label = \"signal\" says which class is "
                         "the signal (a configuration's classes are 1 for it, 0 for the "
                         "background); signal_label is for labels given in Python: leave it out")
            continue
        if tmva_options is not None and (key in setting or key == "boosting"):
            problems.add("method", key, _given_both_ways(
                key, value, setting.get(key), "method.tmva_options" in problems.overridden))
            continue
        annotation = signature.parameters[key].annotation
        if isinstance(value, str) and value.lower() == "none" and _takes_none(annotation):
            value = None  # TOML has no None: "none" is Python's None (max_depth, random_state)
        if not _accepts(annotation, value):
            problems.add("method", key, f"expected {_annotation_words(annotation)}, got "
                         f"{_got(value)}")
            continue
        params[key] = value
    if len(problems.lines) == n_before:
        try:
            estimator = cls(**params)
            estimator.check_params()
            estimator._check_stopping(False)  # a configuration gives fit no eval_set
        except ParameterError as exc:
            key = exc.param if exc.param in table else ("tmva_options" if tmva_options else None)
            problems.add("method", key, str(exc))
        else:
            _warn_idle_options(estimator.get_params(), table)
            _warn_idle_tmva_options(estimator.get_params(), setting)
            if n_classes > 2:
                _check_multiclass_method(params, table, tmva_options, n_classes, problems)
            elif n_classes == 2 and params.get("loss") == "softmax":  # check_params takes it
                problems.add("method", "loss", "loss = 'softmax' is the loss of three or more "
                             "classes; a two-class training leaves loss out (or gives "
                             "'deviance' with gradient, 'logistic' with newton)")
    return params, tmva_options


def _warn_idle_options(params: dict[str, Any], table: dict[str, Any]) -> None:
    """IdleOptionWarning for options written in ``[method]`` that do nothing with its
    boosting (learning_rate with adaboost, min_child_weight with gradient, ...) or with its
    tree count (validation_fraction with an integer n_trees, ...)."""
    given = [name for name in acting_options(params)[1] if name in table]
    if given:
        # the settings that decide: the loss too for huber_* (they act with loss="huber" only)
        huber = any(n.startswith("huber_") for n in given)
        keys = [key for key in ("boosting", "loss", "decorrelation", "decorrelation_map")
                if key == "boosting" or (key == "loss" and huber)
                or (key.startswith("decorrelation")
                    and any(n.startswith("decorrelation") for n in given))]
        method = ", ".join(f"{key}={params.get(key)!r}" for key in keys)
        warnings.warn(f"[method] {', '.join(given)}: "
                      f"{'does' if len(given) == 1 else 'do'} nothing with {method} "
                      f"(see the option table in README); remove "
                      f"{'it' if len(given) == 1 else 'them'}, or choose a "
                      f"{' or '.join(k for k in keys[:2] if k in ('boosting', 'loss'))} it acts "
                      "on", IdleOptionWarning, stacklevel=user_stacklevel())
    for why, names in idle_stopping_options(params):
        given = [name for name in names if name in table]
        if given:
            warnings.warn(f"[method] {', '.join(given)}: {'does' if len(given) == 1 else 'do'} "
                          f"nothing with {why}; remove {'it' if len(given) == 1 else 'them'}",
                          IdleOptionWarning, stacklevel=user_stacklevel())


#: TMVA's switches: given False they turn their option off, which is no idle option.
_TMVA_SWITCHES = ("UseBaggedBoost", "UseBaggedGrad", "UseRandomisedTrees")


def _warn_idle_tmva_options(params: dict[str, Any], setting: dict[str, dict[str, Any]]) -> None:
    """IdleOptionWarning for options given in ``tmva_options`` that do nothing, as TMVA
    ignores them too: those of another BoostType (Shrinkage with AdaBoost, AdaBoostBeta or
    SeparationType with Grad), BaggedSampleFraction without bagging and UseNvars without
    UseRandomisedTrees."""
    idle = set(acting_options(params)[1])
    boost = setting.get("boosting", {}).get("BoostType", "AdaBoost (TMVA's default)")
    loss = f", loss={params['loss']!r}" if params.get("loss") is not None else ""
    groups = [(f"BoostType={boost} (boosting={params.get('boosting')!r}{loss})",
               {name: value for param, found in setting.items() if param in idle
                for name, value in found.items()})]
    if params.get("subsample_mode") == "uniform":
        groups.append(("no bagging (UseBaggedBoost, or BoostType=Bagging)",
                       setting.get("subsample", {})))
    if params.get("n_vars_per_node") is None:
        groups.append(("no UseRandomisedTrees", setting.get("n_vars_per_node", {})))
    parts = []
    for why, found in groups:
        words = [f"{name}={value}" for name, value in found.items() if name not in _TMVA_SWITCHES]
        if words:
            parts.append(f"{':'.join(words)} {'does' if len(words) == 1 else 'do'} nothing "
                         f"with {why}")
    if parts:
        warnings.warn(f"[method] tmva_options: {'; '.join(parts)} (TMVA ignores them too); "
                      "remove them, or give the options they act with",
                      IdleOptionWarning, stacklevel=user_stacklevel())


def _check_dask_method(params: dict[str, Any], task: str, problems: _Problems) -> None:
    """The Dask fit's own refusals of ``[method]`` options (quantised_histograms=False, a
    depth beyond its limit, ...), at --check rather than after the read and the cluster's
    start."""
    from ..dask._estimators import DaskBDTClassifier, DaskBDTRegressor  # no dask import

    cls = DaskBDTRegressor if task == "regression" else DaskBDTClassifier
    try:
        cls(**params)._check_dask_options()
    except ParameterError as exc:
        problems.add("method", exc.param, str(exc))


def _decorrelate_expressions(texts: Any, params: dict[str, Any], task: str, n_classes: int,
                             expand: _Expander, problems: _Problems) -> list[str]:
    """``[method] decorrelate`` expanded and parsed, checked against ``decorrelation``."""
    method = params.get("decorrelation") or params.get("decorrelation_map")
    if texts is None:
        if method is not None:
            problems.add("method", "decorrelation", f"decorrelation = {method!r} needs the "
                         "variables to decorrelate from: decorrelate = [\"mjj\"] (branches or "
                         "expressions, read like the features)")
        return []
    if isinstance(texts, str):
        texts = [texts]
    if not _is_strings(texts) or not texts:
        problems.add("method", "decorrelate", "expected a list of branch names or expressions, "
                     "e.g. decorrelate = [\"mjj\"]")
        return []
    if task == "regression" or n_classes > 2:
        problems.add("method", "decorrelate", "decorrelation is for a two-class training "
                     "(signal against background)")
        return []
    if method is None:
        problems.add("method", "decorrelate", "decorrelate is set but decorrelation is not; "
                     "add decorrelation = \"flatness\" (\"uboost\" for the AdaBoost family) "
                     "or decorrelation_map = \"ddt\" (or remove decorrelate)")
        return []
    if len(texts) > 3:
        problems.add("method", "decorrelate", f"{len(texts)} variables; at most 3")
        return []
    expressions = [e for e in (expand(t, "feature", "method", "decorrelate") for t in texts)
                   if e is not None]
    if len(set(expressions)) != len(expressions):
        problems.add("method", "decorrelate", "a variable is repeated")
    return expressions


def _decorrelation_named(params: dict[str, Any]) -> str:
    """The decorrelation a [method] table asks for, in words ("the decorrelation (uBoost)"):
    a refusal named the flatness loss for uBoost and the DDT map too."""
    kinds = {"flatness": "flatness loss", "uboost": "uBoost"}
    names = [] if params.get("decorrelation") is None else [
        kinds.get(str(params["decorrelation"]), str(params["decorrelation"]))]
    if params.get("decorrelation_map") is not None:
        names.append(f"{str(params['decorrelation_map']).upper()} map")
    return f"the decorrelation ({' and '.join(names) or 'decorrelate'})"


def _check_map_variable(params: dict[str, Any], decorrelate: list[str], features: list[str],
                        binned: Any, problems: _Problems) -> None:
    """Decorrelation: not with ``binned = true``, whose codes give the variable's bin, not
    its value (the flatness loss and uBoost would train on the bins' lower edges, and the
    measures be made of them; ``"auto"`` reads floats). ``decorrelation_map``: one
    decorrelate variable, a feature, so that the model reads it from the features wherever
    it is applied (hepbdt apply, score trees, k folds)."""
    if decorrelate and binned is True:
        problems.add(None, "binned", "decorrelation needs the values of the decorrelation "
                     "variable, which a binned read replaces by its bins; remove binned (or set "
                     "it to \"auto\", which reads floats when decorrelating)")
    if params.get("decorrelation_map") is None or not decorrelate:
        return
    if len(decorrelate) != 1 or decorrelate[0] not in features:
        problems.add("method", "decorrelate", "decorrelation_map = \"ddt\" maps the score "
                     "along one variable that must also be a feature (the model reads it from "
                     f"the features when applied); got decorrelate = {decorrelate}, features "
                     f"= {features}")


def _given_both_ways(key: str, value: Any, options: dict[str, Any] | None, overridden: bool) -> str:
    """The problem of a ``[method]`` key that ``tmva_options`` sets too: an option given in
    the string (``options``), or ``boosting``, which the string's BoostType sets even where
    it is left out (TMVA's default) and which decides what the string's options mean.
    ``overridden``: tmva_options came from --set."""
    where = "tmva_options (from --set)" if overridden else "tmva_options"
    if options is None:
        return (f"given beside {where}, whose BoostType (TMVA's default AdaBoost, or "
                "AdaBoostR2 for regression, where the string does not give it) sets it; give "
                "BoostType in tmva_options instead")
    given = ":".join(f"{name}={text}" for name, text in options.items())
    return (f"given twice: {key} = {value!r} here and {given} in {where}; give each option "
            "once, by hepbdt's name or instead in tmva_options")


def _check_multiclass_method(params: dict[str, Any], table: dict[str, Any],
                             tmva_options: str | None, n_classes: int, problems: _Problems
                             ) -> None:
    """The options that cannot train three or more classes, refused before any work."""
    def key_of(name: str) -> str | None:
        return name if name in table else ("tmva_options" if tmva_options else None)

    boosting = params.get("boosting", "gradient")
    if boosting not in MULTICLASS_BOOSTINGS:
        problems.add("method", key_of("boosting"), f"boosting = {boosting!r} is two-class "
                     f"only; {n_classes} classes need one of "
                     f"{', '.join(repr(b) for b in MULTICLASS_BOOSTINGS)} ('gradient' and "
                     "'newton': softmax, one tree a class each round, TMVA's multi-class BDTG "
                     "being 'gradient'; 'adaboost': SAMME)")
    if boosting == "adaboost":
        if params.get("use_yes_no_leaf", True) is not True:
            problems.add("method", key_of("use_yes_no_leaf"), f"with {n_classes} classes "
                         "boosting = 'adaboost' is SAMME, whose leaves say a class: "
                         "use_yes_no_leaf = true")
        if params.get("criterion", "gini") != "gini":
            problems.add("method", key_of("criterion"), f"with {n_classes} classes boosting = "
                         "'adaboost' (SAMME) grows its trees on the multi-class Gini index: "
                         f"criterion = \"gini\"; {params['criterion']!r} is two-class only")
    if params.get("loss") not in (None, "softmax"):
        problems.add("method", key_of("loss"), f"loss = {params['loss']!r} is two-class; "
                     f"with {n_classes} classes the loss is 'softmax' (leave loss out)")
    fraction = params.get("sig_to_bkg_fraction", "auto")
    if fraction not in ("auto", "tmva", None):
        problems.add("method", key_of("sig_to_bkg_fraction"), "sig_to_bkg_fraction is a ratio "
                     f"of two classes; with {n_classes} classes leave it out and balance the "
                     "classes with [split] norm = \"equal_num_events\"")


#: XGBoost's, LightGBM's and scikit-learn's names of hepbdt's options (a configuration
#: copied from them), and of the options hepbdt does not have (the text says so).
PEER_NAMES = {
    "eta": "learning_rate", "shrinkage_rate": "learning_rate",
    "n_estimators": "n_trees", "num_boost_round": "n_trees", "num_iterations": "n_trees",
    "num_round": "n_trees", "max_iter": "n_trees",
    "gamma": "min_split_gain", "min_split_loss": "min_split_gain",
    "min_gain_to_split": "min_split_gain",
    "lambda": "reg_lambda", "lambda_l2": "reg_lambda", "l2_regularization": "reg_lambda",
    "alpha": "reg_alpha = ... (XGBoost's L1 penalty) or huber_alpha = ... (scikit-learn's "
             "Huber quantile)", "lambda_l1": "reg_alpha",
    "num_leaves": "max_leaves", "max_leaf_nodes": "max_leaves",
    "min_sum_hessian_in_leaf": "min_child_weight",
    "min_child_samples": "min_node_size", "min_data_in_leaf": "min_node_size",
    "min_samples_leaf": "min_node_size",
    "bagging_fraction": "subsample", "feature_fraction": "colsample_bytree",
    "feature_fraction_bynode": "colsample_bynode", "max_bin": "max_bins",
    "nthread": "n_jobs", "num_threads": "n_jobs", "seed": "random_state",
    "random_seed": "random_state",
    "max_delta_step": None, "monotone_constraints": None,
    "scale_pos_weight": None,
}


def _unknown_option_hint(key: str, valid: list[str], task: str) -> str:
    """What to write instead of an unknown ``[method]`` key (TMVA's names, and XGBoost's,
    LightGBM's and scikit-learn's, are recognised)."""
    # the keys a configuration takes: decorrelate is read beside the estimator's options,
    # and signal_label is refused (the samples' labels say which class is the signal)
    valid = [*(v for v in valid if v != "signal_label"),
             *(["decorrelate"] if task != "regression" else [])]
    tmva_lower = {name.lower(): ours for ours, name in TMVA_NAMES.items()}
    if key.lower() in tmva_lower and tmva_lower[key.lower()] in valid:
        return (f"{key} is TMVA's name: write {tmva_lower[key.lower()]} = ..., or put "
                f"{key}=... in tmva_options")
    if task == "regression" and key.lower() in {k.lower() for k in CLASSIFICATION_ONLY}:
        return f"{key} is a TMVA option of classification (a class normalisation)"
    if is_tmva_option(key):
        return f"{key} is a TMVA option: put {key}=... in tmva_options"
    if key.lower() in PEER_NAMES:
        ours = PEER_NAMES[key.lower()]
        if ours is None:
            balance = (" (balance the classes with sig_to_bkg_fraction or [split] norm)"
                       if key.lower() == "scale_pos_weight" else "")
            return f"{key} is another library's option, which hepbdt does not have{balance}"
        if " = " in ours:  # two meanings
            return f"{key} is another library's name: write {ours}"
        unit = " (a fraction of the training weight, not a count)" if ours == "min_node_size" else ""
        return f"{key} is another library's name: write {ours} = ...{unit}"
    matches = difflib.get_close_matches(key, [*valid, "tmva_options"], n=3, cutoff=0.6)
    return (f"did you mean {' or '.join(repr(m) for m in matches)}? " if matches else "") + (
        f"valid options: {', '.join(valid)}, tmva_options")


#: TrainTree's branch of the events ``n_trees="auto"`` held out (1; 0: trained on), written
#: when a model held events out.
HELD_OUT_BRANCH = "held_out"
#: Branches of the score trees besides the scores (a k-fold training adds ``fold``).
_RESERVED_BRANCHES = (*BOOKKEEPING_BRANCHES, "fold", HELD_OUT_BRANCH)


def _output_config(table: dict[str, Any], problems: _Problems, classes: list[str] | None = None
                   ) -> OutputConfig:
    entry = _check_keys(table, _OUTPUT_KEYS, "output", problems)
    output = OutputConfig()
    for key, value in entry.items():
        if key == "directory" and not value.strip():
            problems.add("output", key, f"{value!r} is empty; give a folder name, e.g. "
                         "directory = \"results\"")
        elif key == "directory":
            _check_variables(value, "output", key, problems)
            output.directory = Path(os.path.expandvars(os.path.expanduser(value)))
        elif key in ("score_branch", "probability_branch") and not is_branch_name(value):
            problems.add("output", key, f"{value!r} is not a valid branch name "
                         f"({BRANCH_NAME_RULE})")
        elif key == "figure_formats" and not set(value) <= set(_FIGURE_FORMATS):
            problems.add("output", key, f"valid formats: {', '.join(_FIGURE_FORMATS)}")
        elif key == "permutation_repeats" and not 1 <= value <= MAX_PERMUTATION_REPEATS:
            problems.add("output", key, f"must be an integer in [1, {MAX_PERMUTATION_REPEATS}], "
                         f"got {value}")
        elif key == "min_background_events" and not 0 <= value <= MAX_MIN_BACKGROUND_EVENTS:
            problems.add("output", key, "must be an integer >= 0 (at most 2**63 - 1; the "
                         "background MC events a best cut of the significance scan leaves), "
                         f"got {value}")
        else:
            setattr(output, key, value)
    _warn_idle_output_keys(entry, output, classes)
    if classes is not None and len(classes) > 2:
        _check_class_branches(output, classes, problems)
    elif output.score_branch in _RESERVED_BRANCHES:
        problems.add("output", "score_branch", f"{output.score_branch!r} is a branch the "
                     f"score trees already have ({', '.join(_RESERVED_BRANCHES)}); choose "
                     "another name, e.g. bdt_score")
    return output


def _warn_idle_output_keys(entry: dict[str, Any], output: OutputConfig,
                           classes: list[str] | None) -> None:
    """IdleOptionWarning for ``[output]`` keys that write nothing: ``probability_branch``
    of a two-class training or a regression (one score branch, no probabilities), and
    ``figure_formats`` with ``figures = false``."""
    idle = []
    if "probability_branch" in entry and classes is not None and len(classes) <= 2:
        idle.append("probability_branch: the per-class probability branches are written for "
                    "three or more classes; this training writes one score branch "
                    f"({output.score_branch})")
    if "figure_formats" in entry and not output.figures:
        idle.append("figure_formats: figures = false writes no figures")
    for words in idle:
        warnings.warn(f"[output] {words}; remove the key", IdleOptionWarning,
                      stacklevel=user_stacklevel())


def _check_score_names(output: OutputConfig, features: list[Any], classes: list[str] | None,
                       problems: _Problems) -> None:
    """A score branch must not take a feature's branch name in the score trees (the feature
    would move to ``<name>_2``, and ``TestTree->Draw("HT")`` plot the score)."""
    if not output.score_features:
        return
    named = {branch_name(str(f)): str(f) for f in features if isinstance(f, str)}
    scores = [("score_branch", output.score_branch)]
    if classes is not None and len(classes) > 2:
        scores = [(key, f"{getattr(output, key)}_{c}") for key in ("score_branch",
                                                                   "probability_branch")
                  for c in classes]
    for key, branch in scores:
        if branch in named:
            problems.add("output", key, f"the score branch {branch!r} is also the branch of "
                         f"feature {named[branch]!r} in the score trees; choose another name")


def _check_class_branches(output: OutputConfig, classes: list[str], problems: _Problems
                          ) -> None:
    """The branches of a multi-class training (<score_branch>_<class>,
    <probability_branch>_<class>) must all differ, from each other and from the
    bookkeeping branches of the score trees."""
    branches = [f"{prefix}_{c}" for prefix in (output.score_branch, output.probability_branch)
                for c in classes]
    clashes = sorted({b for b in branches if branches.count(b) > 1}
                     | (set(branches) & set(_RESERVED_BRANCHES)))
    if clashes:
        problems.add("output", "probability_branch", f"the per-class branches {clashes} would clash (score "
                     f"branches {output.score_branch}_<class>, probabilities "
                     f"{output.probability_branch}_<class>, classes {classes}); choose "
                     "other prefixes or class names")


