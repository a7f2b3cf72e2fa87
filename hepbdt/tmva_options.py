"""Configuration: TMVA BDT option strings to and from hepbdt's estimator parameters.

``parse_tmva_options("NTrees=850:MaxDepth=3:BoostType=AdaBoost:...", "classifier")`` gives
the keyword arguments of ``BDTClassifier`` (``"regressor"``: ``BDTRegressor``) that reproduce
TMVA's method BDT with those options; ``to_tmva_options(params, kind)`` writes them back
(``tmva_option_values``: by name, leaving out what TMVA cannot express, for the TMVA XML
export; ``tmva_options_setting``: the parameters that a string's given options set).
Option names are case-insensitive, as in TMVA; ``Name=Value``, a bare ``Name`` (True) and
``!Name`` (False) are understood, and a leading ``~`` (TMVA's mark of an option it read, in
``GetOptions()``) is dropped as TMVA drops it. Options that are not given take *TMVA's* default values
(NTrees=800, MaxDepth=3, MinNodeSize=5%, nCuts=20, AdaBoostBeta=0.5, ...), not hepbdt's.

Nothing is silently ignored: an option hepbdt does not implement (pruning, Fisher cuts,
AdaCost, AdaBoostR2, ...) is an error that names it and lists the supported ones. Options
that never change the trained model are accepted and have no effect: ``H`` (help),
``VerbosityLevel``, ``CreateMVAPdfs``, ``NbinsMVAPdf``, ``NsmoothMVAPdf``, ``DoBoostMonitor``
(TMVA's ROC-versus-trees monitoring plot), and, when Fisher cuts are off,
``MinLinCorrForFisher`` and ``UseExclusiveVars``; ``PruneStrength`` and
``PruningValFraction`` when ``PruneMethod=NoPruning``; ``UseNvars`` and ``UsePoissonNvars``
without ``UseRandomisedTrees``. ``V`` sets ``verbose``.

Mappings where TMVA and hepbdt differ (see the docstrings of the estimators):

- ``BoostType=RealAdaBoost`` is, in TMVA, AdaBoost with purity leaves (its ProcessOptions
  sets UseYesNoLeaf=False): it maps to ``boosting="adaboost", use_yes_no_leaf=False``.
  hepbdt's ``boosting="realadaboost"`` (Friedman's leaves 1/2 ln(p/(1-p))) has no TMVA
  option string.
- ``UseBaggedBoost`` with AdaBoost: each tree grows on the resample, as in TMVA, but its
  error and the boost are measured on every training event with its weight, where TMVA
  measures and boosts on the resample (its copies counted, the events left out unboosted).
- ``MinNodeSize`` is a percentage with or without ``%`` (TMVA reads both as percent).
- ``nCuts=N`` (N > 0) adds N equal-width cuts to hepbdt's quantile bins (``n_cuts=N``).
  nCuts <= 0 maps to what TMVA uses: for the AdaBoost family its full scan (TrainNodeFull),
  ``n_cuts=0``, hepbdt's 255 quantile bins; Grad and regression trees have no full scan
  (the DecisionTree constructor makes nCuts <= 0 a grid of 200 for trees without a
  separation type, and ProcessOptions first makes a regression's nCuts < 0 into 20):
  ``n_cuts=200``, and 20 for a regression's nCuts < 0. ``to_tmva_options`` writes
  ``n_cuts=0`` as nCuts=-1 for the AdaBoost family and refuses it for Grad and regressors.
  Still different: TMVA's cuts span each node's range and are the only ones it tries;
  hepbdt's span the training range, beside ``max_bins - N`` weighted-quantile bins, and
  its quantile bins are a full scan only for variables of at most 255 distinct values.
  A TMVA string stands for 255 quantile bins: ``to_tmva_options`` refuses another
  ``max_bins``.
- ``BoostType=Grad`` (classification) gives ``loss=None`` and, for SigToBkgFraction=1,
  ``sig_to_bkg_fraction="tmva"``, resolved at fit: for two classes the binomial deviance on
  classes normalised to the ratio 1, for more softmax without reweighting (TMVA's
  multi-class BDTG, whose leaves take Shrinkage / K where hepbdt's take (K - 1) / K of
  learning_rate: README). Another SigToBkgFraction stays a number, which is two-class only.
- ``UseRandomisedTrees`` with ``UseNvars=k`` gives ``n_vars_per_node=k`` (without UseNvars:
  "sqrt", TMVA's default int(sqrt(n_vars) + 0.6)). hepbdt draws exactly k variables per node,
  i.e. ``UsePoissonNvars=False``; TMVA's default UsePoissonNvars=True is honoured only as an
  explicit error, so write ``UsePoissonNvars=False`` with UseRandomisedTrees.
- ``NegWeightTreatment``: InverseBoostNegWeights -> ``"inverse_boost"`` for AdaBoost and
  Bagging, ``"ignore"`` for Grad (ROOT 6.40 writes a BDTG trained at the default as
  ``ignorenegweightsintraining``: ``../shared/tmva``'s two BDTG files; older sources switch
  it to Pray); Pray -> ``"keep"``;
  IgnoreNegWeightsInTraining, NoNegWeightsInTraining -> ``"ignore"``;
  PairNegWeightsGlobal -> ``"pair"``.
- ``SigToBkgFraction`` -> ``sig_to_bkg_fraction``; ``SkipNormalization`` -> ``None``.
- Old names: ``UseBaggedGrad`` (UseBaggedBoost), ``GradBaggingFraction``
  (BaggedSampleFraction), ``NNodesMax`` (converted to MaxDepth as TMVA does).

This module imports from hepbdt only the engine's ``MAX_VALUE_BINS`` (the bins a TMVA
string can say): the estimators, the TMVA XML reader and the analysis configuration all
build on it.
"""

from __future__ import annotations

import math
import re
import warnings
from decimal import Decimal
from typing import Any, NoReturn

from ._sklearn import with_resolved_growth
from .engine._types import MAX_VALUE_BINS

__all__ = ["TMVAOptionError", "parse_tmva_options", "to_tmva_options", "tmva_option_values",
           "tmva_options_setting", "TMVA_OPTIONS", "TMVA_NAMES", "is_tmva_option", "MAX_TREES",
           "MAX_POISSON_MEAN"]

KINDS = ("classifier", "regressor")
MAX_DEPTH_LIMIT = 30
#: The most trees one model may have (NTrees here, ``n_trees`` of the estimators): far beyond
#: any useful BDT (TMVA's default is 800), near enough to refuse a typo such as 1e23.
MAX_TREES = 100_000
#: The largest mean of a Poisson resample's counts (``subsample`` with ``subsample_mode=
#: "poisson"``, TMVA's BaggedSampleFraction): counts of this mean stay within 0.1 % of it
#: (a larger one only rescales the weights), and times the largest training weight (1e30)
#: within float32 (3.4e38). Beyond it a count of 1e9 times weights of 1e30 overflowed to
#: inf (a constant model), and beyond 9.2e18 numpy refused with "lam value too large".
MAX_POISSON_MEAN = 1e6
#: TMVA's grid for nCuts <= 0 where it has no full scan (DecisionTree's constructor, trees
#: without a separation type: Grad and regression), and its regression nCuts for nCuts < 0
#: (MethodBDT::ProcessOptions).
GRID_NCUTS = 200
REGRESSION_NEGATIVE_NCUTS = 20


class TMVAOptionError(ValueError):
    """A TMVA option string that hepbdt cannot reproduce, naming the option."""


# Canonical TMVA name -> (type, classification default, regression default).
# Types: "int", "float", "bool", "size" (MinNodeSize), or a tuple of allowed words.
TMVA_OPTIONS: dict[str, tuple[Any, Any, Any]] = {
    "NTrees": ("int", 800, 800),
    "MaxDepth": ("int", 3, 50),
    "MinNodeSize": ("size", 5.0, 0.2),
    "nCuts": ("int", 20, 20),
    "BoostType": (("AdaBoost", "RealAdaBoost", "Bagging", "Grad", "AdaBoostR2", "AdaCost",
                   "RegBoost"), "AdaBoost", "AdaBoostR2"),
    "AdaBoostBeta": ("float", 0.5, 0.5),
    "Shrinkage": ("float", 1.0, 1.0),
    "UseBaggedBoost": ("bool", False, False),
    "UseBaggedGrad": ("bool", False, False),
    "BaggedSampleFraction": ("float", 0.6, 0.6),
    "GradBaggingFraction": ("float", 0.6, 0.6),
    "SeparationType": (("GiniIndex", "CrossEntropy", "MisClassificationError", "SDivSqrtSPlusB",
                        "RegressionVariance", "GiniIndexWithLaplace"), "GiniIndex",
                       "RegressionVariance"),
    "UseRandomisedTrees": ("bool", False, False),
    "UseNvars": ("int", None, None),
    "UsePoissonNvars": ("bool", True, True),
    "UseYesNoLeaf": ("bool", True, False),
    "NegWeightTreatment": (("InverseBoostNegWeights", "IgnoreNegWeightsInTraining",
                            "NoNegWeightsInTraining", "PairNegWeightsGlobal", "Pray"),
                           "InverseBoostNegWeights", "InverseBoostNegWeights"),
    "IgnoreNegWeightsInTraining": ("bool", False, False),
    "SigToBkgFraction": ("float", 1.0, 1.0),
    "SkipNormalization": ("bool", False, False),
    "NodePurityLimit": ("float", 0.5, 0.5),
    "RegressionLossFunctionBDTG": (("Huber", "AbsoluteDeviation", "LeastSquares"), "Huber", "Huber"),
    "HuberQuantile": ("float", 0.7, 0.7),
    "PruneMethod": (("NoPruning", "ExpectedError", "CostComplexity"), "NoPruning", "NoPruning"),
    "PruneStrength": ("float", 0.0, 0.0),
    "PruningValFraction": ("float", 0.5, 0.5),
    "UseFisherCuts": ("bool", False, False),
    "MinLinCorrForFisher": ("float", 0.8, 0.8),
    "UseExclusiveVars": ("bool", False, False),
    "DoPreselection": ("bool", False, False),
    "NNodesMax": ("int", 0, 0),
    "VarTransform": ("str", "None", "None"),
    "H": ("bool", False, False),
    "V": ("bool", False, False),
    "VerbosityLevel": (("Default", "Debug", "Verbose", "Info", "Warning", "Error", "Fatal"),
                       "Default", "Default"),
    "CreateMVAPdfs": ("bool", False, False),
    "NbinsMVAPdf": ("int", 60, 60),
    "NsmoothMVAPdf": ("int", 2, 2),
    "DoBoostMonitor": ("bool", False, False),
}

# TMVA options hepbdt knows but does not implement: name -> why.
UNSUPPORTED = {
    "AdaBoostR2Loss": "AdaBoostR2 is not implemented; use BoostType=Grad for regression",
    "Css": "AdaCost is not implemented", "Cts_sb": "AdaCost is not implemented",
    "Ctb_ss": "AdaCost is not implemented", "Cbb": "AdaCost is not implemented",
    "nEventsMin": "deprecated in TMVA; give MinNodeSize (percent of training events)",
    "UseNTrainEvents": "deprecated in TMVA; give BaggedSampleFraction",
    "UseWeightedTrees": "a TMVA reader-only compatibility option",
    "PruneBeforeBoost": "a TMVA reader-only compatibility option",
    "RenormByClass": "a TMVA reader-only compatibility option",
    "Normalise": "TMVA refuses Normalise for BDTs",
}

_LOWER = {name.lower(): name for name in [*TMVA_OPTIONS, *UNSUPPORTED]}

# TMVA's DataLoader::PrepareTrainingAndTestTree options (lower case) and what a
# configuration's [split] writes instead: they are not the BDT method's options.
_FRACTION = ("train_fraction = ... (the fraction of each sample's events to train on; "
             "hepbdt takes no event counts)")
SPLIT_OPTION_HINTS = {
    "normmode": 'norm = "num_events", "equal_num_events" or "none"',
    "splitmode": 'mode = "random", "alternate" or "block"',
    "splitseed": "seed = ...",
    "mixmode": "nothing (hepbdt has no mixing option): leave it out",
    "scalewithpreseleff": "nothing (hepbdt's yields come from the events its cuts keep): "
                          "leave it out",
}


def split_option_hint(name: str) -> str | None:
    """What a configuration's [split] writes for TMVA's PrepareTrainingAndTestTree option
    ``name`` (any case; ``nTrain_<class>``, ``nTest_<class>`` included); None for others."""
    key = name.strip().lower()
    if key.startswith(("ntrain_", "ntest_")):
        return _FRACTION
    return SPLIT_OPTION_HINTS.get(key)
_NEG_WEIGHTS = {"inverseboostnegweights": "inverse_boost", "ignorenegweightsintraining": "ignore",
                "nonegweightsintraining": "ignore", "pairnegweightsglobal": "pair", "pray": "keep"}
_CRITERIA = {"giniindex": "gini", "crossentropy": "cross_entropy",
             "misclassificationerror": "misclassification", "sdivsqrtsplusb": "sdivsqrtsplusb"}
_REG_LOSSES = {"huber": "huber", "absolutedeviation": "absolute", "leastsquares": "squared"}
_TMVA_NEG_WEIGHTS = {"keep": "Pray", "ignore": "IgnoreNegWeightsInTraining",
                     "pair": "PairNegWeightsGlobal", "inverse_boost": "InverseBoostNegWeights"}
_TMVA_LOSSES = {"huber": "Huber", "absolute": "AbsoluteDeviation", "squared": "LeastSquares"}
_TMVA_CRITERIA = {"gini": "GiniIndex", "cross_entropy": "CrossEntropy",
                  "misclassification": "MisClassificationError", "sdivsqrtsplusb": "SDivSqrtSPlusB"}


def _supported() -> str:
    """The supported TMVA option names, sorted case-insensitively, for error messages."""
    return ", ".join(sorted(TMVA_OPTIONS, key=str.lower))


#: Numbers as TMVA's option parser reads them: ASCII digits (C++ stream extraction), no
#: ``nan``, ``inf`` or digit separators (Python's int and float take ``1_000``, TMVA reads 1).
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Option<Bool_t>::SetValueLocal's words (any case); anything else is fatal in TMVA.
TRUE_WORDS, FALSE_WORDS = ("1", "true", "ktrue", "t"), ("0", "false", "kfalse", "f")
#: A name of a weight file's <Option>: the Reader joins them as "name=value:..." and splits
#: that string again, so a name must be a word and a value must hold no ':'.
OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
#: MethodBDT options that change how the Reader evaluates the trees, which hepbdt does not.
READER_CHANGING_FLAGS = ("DoPreselection", "UseFisherCuts")


def check_option_words(name: str, value: str) -> None:
    """TMVAOptionError unless a weight file's <Option> reads as written: its name a word,
    its value without ':' (the Reader joins the options with ':' and splits them again)."""
    if not OPTION_NAME.fullmatch(name) or ":" in value:
        raise TMVAOptionError(f"<Option name={name!r}> {value[:40]!r}: an option name is a "
                              "word and a value holds no ':' (TMVA::Reader splits the "
                              "options at ':')")


def check_file_options(options: list[tuple[str, str]]) -> None:
    """TMVAOptionError unless a weight file's options (name, value), in file order, read as
    written (:func:`check_option_words`), and no flag of READER_CHANGING_FLAGS is set (the
    last of a name, in any case, as TMVA matches them)."""
    last: dict[str, str] = {}
    for name, value in options:
        check_option_words(name, value)
        last[name.lower()] = value
    for flag in READER_CHANGING_FLAGS:
        text = last.get(flag.lower(), "False").strip(" \t\n\r").lower()
        if text not in FALSE_WORDS:
            raise TMVAOptionError(f"option {flag}={text!r}: hepbdt reads and writes BDTs "
                                  f"without {flag}, which changes how TMVA::Reader evaluates "
                                  "the trees; set it to False")


def _parse_bool(name: str, text: str) -> bool:
    """A TMVA true/false value of option ``name``."""
    t = text.strip().lower()
    if t in TRUE_WORDS:
        return True
    if t in FALSE_WORDS:
        return False
    raise TMVAOptionError(f"option {name}={text!r}: expected True or False (TMVA also takes "
                          "1, 0, T, F, kTRUE, kFALSE)")


def _parse_float(name: str, text: str) -> float:
    """A finite decimal number; ValueError for text that is not one."""
    if not _FLOAT_TEXT.fullmatch(text):
        raise ValueError(text)
    value = float(text)
    if not math.isfinite(value):
        raise TMVAOptionError(f"option {name}={text!r}: expected a finite number")
    return value


def _parse_int(name: str, text: str) -> int:
    """An integer option's value, written in digits: TMVA reads an integer option up to its
    first character that is not a digit (``NTrees=1e3`` is 1 tree, ``850.0`` is 850,
    ``1.5`` is 1), so any other form is refused rather than read as TMVA does or as meant."""
    if _INT_TEXT.fullmatch(text):
        return int(text)
    _parse_float(name, text)  # a text that is no number at all says so
    example = TMVA_OPTIONS[name][1] if TMVA_OPTIONS[name][1] is not None else 1
    raise TMVAOptionError(f"option {name}={text!r}: expected an integer written in digits, "
                          f"e.g. {name}={example} (TMVA reads an integer option up to its first "
                          f"character that is not a digit: {name}={text} would not be what it "
                          "says there)")


class _Percent(float):
    """A MinNodeSize percentage as written: the number, and its text, from which
    :func:`_percent_fraction` rounds the fraction once."""

    text: str

    @classmethod
    def read(cls, name: str, text: str) -> _Percent:
        """The percentage of option ``name`` written as ``text`` ('%' removed)."""
        value = cls(_parse_float(name, text))
        value.text = text
        return value


def _not_a_number(name: str, text: str) -> TMVAOptionError:
    """The error for a number option's text that is not a number."""
    hint = " (only MinNodeSize takes %)" if "%" in text else ""
    return TMVAOptionError(f"option {name}={text!r}: expected a number{hint}")


def _parse_value(name: str, text: str | None, negated: bool) -> Any:
    """The typed value of option ``name`` given as ``text`` (None: bare), ``negated`` by '!'."""
    kind = TMVA_OPTIONS[name][0]
    if negated and text is not None:
        raise TMVAOptionError(f"option '!{name}={text}': TMVA takes '!' only before a bare "
                              f"true/false option (!{name}), and rejects it with a value; "
                              f"write {name}=True or {name}=False")
    if kind == "bool":
        value = True if text is None else _parse_bool(name, text)
        return not value if negated else value
    if negated or text is None:
        raise TMVAOptionError(f"option {name} needs a value ({name}=...); only true/false "
                              "options can be given bare or with '!'")
    text = text.strip()
    try:
        if kind == "int":
            return _parse_int(name, text)
        if kind == "float":
            return _parse_float(name, text)
        if kind == "size":  # SetMinNodeSize: '%' and blanks removed, a percentage either way
            return _Percent.read(name, text.replace("%", "").replace(" ", ""))
    except TMVAOptionError:
        raise
    except ValueError:
        raise _not_a_number(name, text) from None
    if kind == "str":
        return text
    for word in kind:
        if word.lower() == text.lower():
            return word
    raise TMVAOptionError(f"option {name}={text!r} is not valid; TMVA allows {list(kind)}")


def differs_from_default(name: str, text: str, kind: str) -> bool:
    """Whether option ``name`` (any case) written as ``text`` is not TMVA's default for
    ``kind`` (ROOT 6.40's, :data:`TMVA_OPTIONS`), as the option string parse reads the text:
    True for a text it refuses, False for a name outside TMVA_OPTIONS."""
    canonical = _LOWER.get(name.strip().lower())
    if canonical not in TMVA_OPTIONS:
        return False
    default = TMVA_OPTIONS[canonical][2 if kind == "regressor" else 1]
    try:
        return _parse_value(canonical, text, negated=False) != default
    except TMVAOptionError:
        return True


def _bare_value_hint(token: str) -> str:
    """For a bare token that is a value of an option (``Grad``), what TMVA makes of it."""
    for name, (kind, _, _) in TMVA_OPTIONS.items():
        if isinstance(kind, tuple):
            for word in kind:
                if word.lower() == token.lower():
                    return (f" (TMVA reads a bare value as its option, {name}={word}: "
                            f"write {name}={word})")
    return ""


def _read(options: str) -> dict[str, Any]:
    """The options given in a TMVA option string, by canonical name, with typed values."""
    given: dict[str, Any] = {}
    for token in options.split(":"):
        # leading '~': ParseOptions' mark of an option it read (MethodBase::GetOptions shows them)
        token = token.strip().lstrip("~")
        if not token:
            continue
        negated = token.startswith("!")
        if negated:
            token = token[1:].strip()
        name_text, sep, value = token.partition("=")
        key = name_text.strip().lower()
        name = _LOWER.get(key)
        if name is None and split_option_hint(key) is not None:
            raise TMVAOptionError(
                f"TMVA option {name_text.strip()!r} is DataLoader::PrepareTrainingAndTestTree's, "
                f"not the BDT method's; in a configuration the [split] table takes its place, "
                f"write {split_option_hint(key)} (in Python, split and normalise the events "
                "before fit)")
        if name is None:
            hint = "" if sep else _bare_value_hint(key)
            raise TMVAOptionError(f"TMVA option {name_text.strip()!r} is not known to hepbdt"
                                  f"{hint}; supported options: {_supported()}")
        if name in UNSUPPORTED:
            raise TMVAOptionError(f"TMVA option {name} is not supported: {UNSUPPORTED[name]}. "
                                  f"Supported options: {_supported()}")
        if name in given:
            raise TMVAOptionError(f"TMVA option {name} is given twice")
        given[name] = _parse_value(name, value if sep else None, negated)
    return given


def _fail(opt: dict[str, Any], name: str, why: str) -> NoReturn:
    """Raise TMVAOptionError for option ``name`` with its value in ``opt``."""
    raise TMVAOptionError(f"TMVA option {name}={opt[name]!r}: {why}")


class TMVAOptionWarning(UserWarning):
    """An option that TMVA's MethodBDT::ProcessOptions sets aside for this method; hepbdt
    does the same."""


# (option, value TMVA sets, when: f(opt, regression), where ProcessOptions does it)
_OVERRIDES = (
    ("UseYesNoLeaf", False, lambda o, r: r, "regression trees have no yes/no leaves"),
    ("SeparationType", "RegressionVariance", lambda o, r: r,
     "regression trees split by RegressionVariance"),
    ("UseFisherCuts", False, lambda o, r: r, "regression has no Fisher cuts"),
    ("PruneMethod", "NoPruning", lambda o, r: o["BoostType"] == "Grad", "Grad trees are not pruned"),
    ("PruneMethod", "NoPruning", lambda o, r: o["UseRandomisedTrees"],
     "randomised trees are not pruned"),
    ("NodePurityLimit", 0.5, lambda o, r: o["BoostType"] == "Grad" or r,
     "Grad and regression trees score by their responses, not by signal or background leaves"),
)


def _processoptions_overrides(opt: dict[str, Any], given: dict[str, Any], regression: bool) -> None:
    """Set aside, with a TMVAOptionWarning, options given that TMVA overrides for this
    method (MethodBDT::ProcessOptions warns and sets them): a string TMVA trains with is
    accepted as TMVA accepts it, where hepbdt refused it."""
    for name, value, applies, why in _OVERRIDES:
        if name in given and opt[name] != value and applies(opt, regression):
            warnings.warn(f"TMVA option {name}={opt[name]!r} is set aside, as TMVA does: {why} "
                          f"({name}={value!r} is used)", TMVAOptionWarning, stacklevel=3)
            opt[name] = value


def _check_unsupported(opt: dict[str, Any], given: dict[str, Any], regression: bool) -> None:
    """Reject boost types and tree-building settings that hepbdt does not implement."""
    boost = opt["BoostType"]
    if boost in ("AdaBoostR2", "AdaCost", "RegBoost"):
        hint = " (TMVA's default for regression)" if regression and "BoostType" not in given else ""
        _fail(opt, "BoostType", f"BoostType={boost}{hint} is not implemented; supported: AdaBoost, "
              f"RealAdaBoost, Bagging, Grad (regression: Grad)")
    if regression and boost != "Grad":
        _fail(opt, "BoostType", "BDTRegressor supports BoostType=Grad only")
    if opt["PruneMethod"] != "NoPruning":
        _fail(opt, "PruneMethod", "pruning is not implemented; use NoPruning (TMVA's default) and "
              "limit MaxDepth instead")
    for name in ("UseFisherCuts", "DoPreselection"):
        if opt[name]:
            _fail(opt, name, "not implemented in hepbdt")
    if opt["NodePurityLimit"] != 0.5:
        _fail(opt, "NodePurityLimit", "only 0.5 is supported")
    if opt["VarTransform"].lower() != "none":
        _fail(opt, "VarTransform", "hepbdt trains on the variables as given; use VarTransform=None")
    if opt["SeparationType"] == "GiniIndexWithLaplace":
        _fail(opt, "SeparationType", "GiniIndexWithLaplace is not implemented")


def _max_depth(opt: dict[str, Any], given: dict[str, Any]) -> int:
    """The tree depth from MaxDepth, or from the deprecated NNodesMax as TMVA converts it."""
    depth = opt["MaxDepth"]
    if opt["NNodesMax"] < 0:  # an unsigned option in TMVA: -1 is 4294967295 nodes, not "off"
        _fail(opt, "NNodesMax", "must be >= 0 (0: not used, MaxDepth decides); give MaxDepth")
    if opt["NNodesMax"] > 0:
        nodes, depth = 1, 0
        while nodes < opt["NNodesMax"]:
            nodes += 2 * nodes
            depth += 1
    if not 1 <= depth <= MAX_DEPTH_LIMIT:
        name = "MaxDepth" if opt["NNodesMax"] <= 0 else "NNodesMax"
        hint = " (TMVA's regression default is 50: give MaxDepth)" if "MaxDepth" not in given else ""
        _fail(opt, name, f"the depth {depth} is outside hepbdt's range [1, {MAX_DEPTH_LIMIT}]{hint}")
    return depth


def _tree_params(opt: dict[str, Any], given: dict[str, Any], regression: bool) -> dict[str, Any]:
    """The number, depth, minimal node size and cuts of the trees, and verbosity."""
    if not 0 < opt["MinNodeSize"] < 50:
        _fail(opt, "MinNodeSize", "must be a percentage in (0, 50)")
    if not 1 <= opt["NTrees"] <= MAX_TREES:
        _fail(opt, "NTrees", f"must be an integer in [1, {MAX_TREES}]")
    depth = _max_depth(opt, given)
    return {
        "n_trees": opt["NTrees"],
        "max_depth": depth,
        "min_node_size": _percent_fraction(opt["MinNodeSize"]),
        "n_cuts": _n_cuts(opt, regression),
        "verbose": bool(opt["V"]),
    }


def _percent_fraction(percent: float) -> float:
    """The fraction a MinNodeSize percentage stands for, rounded once from its text:
    ``3.6`` gives 0.036, the ``min_node_size=0.036`` of Python and ``[method]``, where
    ``3.6 / 100`` rounds twice, to 0.036000000000000004, one unit in the last place above
    (a child of exactly 9 of 250 events was allowed by one and refused by the other)."""
    return float(Decimal(getattr(percent, "text", repr(float(percent)))).scaleb(-2))


def _percent_text(fraction: float) -> str:
    """The percentage text of ``fraction`` that :func:`_percent_fraction` reads back as it
    exactly (0.025 -> ``"2.5"``, 0.07 -> ``"7"``, 1e-05 -> ``"0.001"``)."""
    return format(Decimal(repr(float(fraction))).scaleb(2).normalize(), "f")


def _n_cuts(opt: dict[str, Any], regression: bool) -> int:
    """``n_cuts`` of nCuts, with the grid TMVA itself uses for nCuts <= 0: for regression its
    ProcessOptions turns nCuts < 0 into 20, and the DecisionTree constructor turns nCuts <= 0
    into 200 for trees without a separation type (regression, and Grad, whose InitGradBoost
    sets it to NULL); only the AdaBoost family's nCuts <= 0 is a full scan (TrainNodeFull),
    hepbdt's quantile bins (``n_cuts=0``)."""
    n = opt["nCuts"]
    if n >= 255:
        _fail(opt, "nCuts", "hepbdt supports at most 254 equal-width cuts (nCuts <= 0: TMVA's full "
              "scan for the AdaBoost family, a grid of 200 cuts for Grad and regression)")
    if n > 0:
        return n
    if regression and n < 0:
        return REGRESSION_NEGATIVE_NCUTS
    if regression or opt["BoostType"] == "Grad":
        return GRID_NCUTS
    return 0


def _bagging_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``subsample`` and ``subsample_mode`` from Bagging, UseBaggedBoost and the sample fraction."""
    name = "GradBaggingFraction" if "GradBaggingFraction" in given else "BaggedSampleFraction"
    if name == "GradBaggingFraction" and "BaggedSampleFraction" in given:
        _fail(opt, name, "give BaggedSampleFraction or its old name, not both")
    fraction = opt[name]
    if not 0 < fraction <= MAX_POISSON_MEAN:
        _fail(opt, name, f"must be in (0, {MAX_POISSON_MEAN:g}] (the mean of each event's "
              "Poisson count)")
    bagged = opt["UseBaggedBoost"] or opt["UseBaggedGrad"] or opt["BoostType"] == "Bagging"
    return {"subsample": fraction if bagged else 1.0, "subsample_mode": "poisson" if bagged else "uniform"}


def _n_vars_per_node(opt: dict[str, Any]) -> int | str | None:
    """``n_vars_per_node`` from UseRandomisedTrees, UseNvars and UsePoissonNvars."""
    if not opt["UseRandomisedTrees"]:
        return None
    if opt["UsePoissonNvars"]:
        _fail(opt, "UsePoissonNvars", "hepbdt draws a fixed number of variables per node: give "
              "UsePoissonNvars=False with UseRandomisedTrees (TMVA's default is True)")
    nvars = opt["UseNvars"]
    if nvars is not None and nvars < 1:
        _fail(opt, "UseNvars", "must be at least 1")
    return nvars if nvars is not None else "sqrt"


def _negative_weights(opt: dict[str, Any], given: dict[str, Any]) -> str:
    """``negative_weights`` from NegWeightTreatment and IgnoreNegWeightsInTraining."""
    neg = _NEG_WEIGHTS[opt["NegWeightTreatment"].lower()]
    if opt["IgnoreNegWeightsInTraining"]:
        if "NegWeightTreatment" in given and neg != "ignore":
            _fail(opt, "IgnoreNegWeightsInTraining", "contradicts NegWeightTreatment")
        neg = "ignore"
    if neg == "inverse_boost" and opt["BoostType"] == "Grad":
        neg = "ignore"  # what ROOT 6.40 trains (and writes) for Grad at the default
    return neg


def _regression_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The gradient-boosting parameters of BDTRegressor, rejecting classification options."""
    if opt["SeparationType"] != "RegressionVariance":
        _fail(opt, "SeparationType", "regression trees use RegressionVariance")
    if opt["UseYesNoLeaf"]:
        _fail(opt, "UseYesNoLeaf", "not meaningful for regression")
    if not 0 <= opt["HuberQuantile"] <= 1:
        _fail(opt, "HuberQuantile", "must be in [0, 1]")
    for name in CLASSIFICATION_ONLY:
        if name in given:
            _fail(opt, name, "applies to classification only")
    return {"boosting": "gradient", "learning_rate": opt["Shrinkage"],
            "loss": _REG_LOSSES[opt["RegressionLossFunctionBDTG"].lower()],
            "huber_alpha": opt["HuberQuantile"]}


def _classification_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The boosting, criterion and normalisation parameters of BDTClassifier."""
    for name in ("RegressionLossFunctionBDTG", "HuberQuantile"):
        if name in given:
            _fail(opt, name, "applies to regression only (BDTRegressor)")
    if opt["SeparationType"] == "RegressionVariance":
        _fail(opt, "SeparationType", "RegressionVariance is for regression; classification takes "
              "GiniIndex, CrossEntropy, MisClassificationError or SDivSqrtSPlusB")
    if not opt["SigToBkgFraction"] > 0:
        _fail(opt, "SigToBkgFraction", "must be positive")
    boost = opt["BoostType"]
    fraction = None if opt["SkipNormalization"] else opt["SigToBkgFraction"]
    if boost in ("AdaBoost", "RealAdaBoost") and fraction is not None and fraction != 1.0:
        _fail(opt, "SigToBkgFraction", "TMVA's AdaBoost multiplies the signal weights by it "
              "again after every tree (MethodBDT::AdaBoost), a factor that compounds; hepbdt "
              "scales the classes once before training. Set SigToBkgFraction=1, or give "
              "hepbdt's own sig_to_bkg_fraction for the once-only scaling")
    params: dict[str, Any] = {
        "criterion": _CRITERIA[opt["SeparationType"].lower()],
        "beta": opt["AdaBoostBeta"],
        "sig_to_bkg_fraction": fraction,
    }
    if boost == "Grad":
        # The class count is not known here: TMVA's BDTG is the binomial deviance with the
        # classes normalised to SigToBkgFraction for two classes, and softmax without any
        # reweighting for more (InitEventSample: "Multiclass, only gradboost is supported. No
        # reweighting."). loss=None and sig_to_bkg_fraction="tmva" mean either, as the fit
        # finds the classes.
        if fraction == 1.0:
            params["sig_to_bkg_fraction"] = "tmva"
        params.update(boosting="gradient", learning_rate=opt["Shrinkage"], loss=None)
    else:
        params["boosting"] = "bagging" if boost == "Bagging" else "adaboost"
        params["use_yes_no_leaf"] = False if boost == "RealAdaBoost" else bool(opt["UseYesNoLeaf"])
        if "Shrinkage" in given:
            params["learning_rate"] = opt["Shrinkage"]  # no effect on AdaBoost, as in TMVA
    return params


def parse_tmva_options(options: str, kind: str = "classifier") -> dict[str, Any]:
    """Estimator keyword arguments for a TMVA BDT option string.

    Parameters
    ----------
    options : the option string of ``factory.BookMethod(..., "BDT", options)``.
    kind : ``"classifier"`` (BDTClassifier) or ``"regressor"`` (BDTRegressor).

    Returns
    -------
    dict of hepbdt parameters; TMVAOptionError (a ValueError) names an option that cannot
    be reproduced.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    regression = kind == "regressor"
    given = _read(options)
    opt = {name: spec[2 if regression else 1] for name, spec in TMVA_OPTIONS.items()}
    opt.update(given)
    _processoptions_overrides(opt, given, regression)
    _check_unsupported(opt, given, regression)
    params = _tree_params(opt, given, regression)
    params.update(_bagging_params(opt, given))
    params["n_vars_per_node"] = _n_vars_per_node(opt)
    params["negative_weights"] = _negative_weights(opt, given)
    if regression:
        params.update(_regression_params(opt, given))
    else:
        params.update(_classification_params(opt, given))
    return params


def _number(x: float) -> str:
    """``x`` as TMVA option text: an integer without a decimal point, otherwise its repr."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _no_equivalent(p: dict[str, Any], name: str, why: str) -> NoReturn:
    """Raise TMVAOptionError for parameter ``name`` of ``p``, which TMVA cannot express."""
    raise TMVAOptionError(f"{name}={p.get(name)!r} has no TMVA equivalent: {why}")


def _boost_type(p: dict[str, Any], boosting: str) -> str:
    """TMVA's BoostType for ``boosting``."""
    boost_type = {"adaboost": "AdaBoost", "bagging": "Bagging", "gradient": "Grad"}.get(boosting)
    if boost_type is None:
        _no_equivalent(p, "boosting", "TMVA's BoostType is AdaBoost, RealAdaBoost (AdaBoost with purity "
                       "leaves), Bagging or Grad")
    return boost_type


def _check_no_equivalent(p: dict[str, Any]) -> None:
    """Reject column subsampling by tree or level, early stopping and a minimal split gain."""
    for name in ("colsample_bytree", "colsample_bylevel"):
        if p.get(name, 1.0) != 1.0:
            _no_equivalent(p, name, "TMVA samples variables per node only (UseRandomisedTrees)")
    if p.get("early_stopping"):
        _no_equivalent(p, "early_stopping", "TMVA trains NTrees trees")
    if p.get("max_bins", MAX_VALUE_BINS) != MAX_VALUE_BINS:
        _no_equivalent(p, "max_bins", f"TMVA's nCuts alone sets its cuts; a TMVA option string "
                       f"stands for hepbdt's {MAX_VALUE_BINS} quantile bins (with nCuts=N: N equal-width "
                       f"cuts beside {MAX_VALUE_BINS} - N)")
    if p.get("min_split_gain", 0.0) > 0:
        _no_equivalent(p, "min_split_gain", "TMVA has no minimal gain")
    if p.get("decorrelation") is not None:
        _no_equivalent(p, "decorrelation", "TMVA has no decorrelated training (the TMVA XML "
                       "export, save_tmva, writes a flatness model's trees)")
    if p.get("decorrelation_map") is not None:
        _no_equivalent(p, "decorrelation_map", "TMVA has no score map (save the model with "
                       "save(), hepbdt's JSON model)")


# The writers: each gives the option-string tokens of a few parameters, or raises
# TMVAOptionError for a value that TMVA cannot express. to_tmva_options joins them all;
# tmva_option_values keeps those that succeed.

def _help_options(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """H and V."""
    return ["!H", "V" if p.get("verbose") else "!V"]


def _n_trees_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """NTrees."""
    if p.get("n_trees") == "auto":
        _no_equivalent(p, "n_trees", "TMVA trains a fixed NTrees; set n_trees, or fit first "
                       "(a fitted model writes the count that 'auto' kept)")
    return [f"NTrees={int(p['n_trees'])}"]


def _max_depth_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """MaxDepth."""
    if p.get("max_depth") is None:
        _no_equivalent(p, "max_depth", "TMVA's trees have a MaxDepth")
    return [f"MaxDepth={int(p['max_depth'])}"]


def _min_node_size_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """MinNodeSize, in percent."""
    size = p.get("min_node_size", 0.0)
    if size is None or isinstance(size, str) or not size > 0:
        _no_equivalent(p, "min_node_size", "TMVA's MinNodeSize must be positive")
    return [f"MinNodeSize={_percent_text(size)}%"]


def _grid_only(boosting: str, regression: bool) -> bool:
    """Whether TMVA's trees always cut on a grid (no full scan for nCuts <= 0)."""
    return regression or boosting == "gradient"


def _n_cuts_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """nCuts; -1 (the full scan) for the AdaBoost family's quantile bins (``n_cuts=0``).
    Gradient boosting and regression have no full scan: their n_cuts=0 is written by no
    token here and refused by ``_n_cuts_check`` (last, so that it names other options first)."""
    n_cuts = int(p.get("n_cuts", 0))
    if n_cuts > 0:
        return [f"nCuts={n_cuts}"]
    return [] if _grid_only(boosting, regression) else ["nCuts=-1"]


def _n_cuts_check(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """Refuse ``n_cuts=0`` (hepbdt's quantile bins alone) where TMVA has no full scan."""
    if int(p.get("n_cuts", 0)) <= 0 and _grid_only(boosting, regression):
        _no_equivalent(p, "n_cuts", "TMVA's Grad and regression trees always cut on a grid of nCuts "
                       f"equal-width cuts (nCuts <= 0 means {GRID_NCUTS} cuts, nCuts < 0 for "
                       f"regression {REGRESSION_NEGATIVE_NCUTS}); set n_cuts, e.g. 20 (TMVA's default)")
    return []


def _boost_type_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """BoostType."""
    return [f"BoostType={_boost_type(p, boosting)}"]


def _subsample_options(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """The bagging options (UseBaggedBoost, BaggedSampleFraction) of ``subsample``."""
    subsample, mode = p.get("subsample", 1.0), p.get("subsample_mode", "uniform")
    if boosting == "bagging":
        if mode == "weighted" or (mode == "uniform" and subsample < 1.0):
            # hepbdt's uniform subsample < 1 draws without replacement; TMVA's Bagging draws
            # Poisson(BaggedSampleFraction) counts (uniform with 1.0: a Poisson(1) bootstrap)
            _no_equivalent(p, "subsample_mode", "TMVA resamples with Poisson counts "
                           "(subsample_mode='poisson', or 'uniform' with subsample=1.0)")
        return [f"BaggedSampleFraction={_number(1.0 if mode == 'uniform' else subsample)}"]
    if mode == "poisson":
        return ["UseBaggedBoost", f"BaggedSampleFraction={_number(subsample)}"]
    if subsample != 1.0 or mode != "uniform":
        _no_equivalent(p, "subsample_mode",
                       "TMVA's bagged boost draws Poisson counts (subsample_mode='poisson')")
    return []


def _shrinkage_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """Shrinkage, of gradient boosting."""
    return [f"Shrinkage={_number(p['learning_rate'])}"] if boosting == "gradient" else []


def _random_tree_options(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """The UseRandomisedTrees options of ``n_vars_per_node``."""
    nvars = p.get("n_vars_per_node")
    if nvars is None:
        if p.get("colsample_bynode", 1.0) != 1.0:
            _no_equivalent(p, "colsample_bynode",
                           "TMVA's UseNvars is a number of variables: set n_vars_per_node")
        return []
    out = ["UseRandomisedTrees", "UsePoissonNvars=False"]
    if nvars != "sqrt":
        out.append(f"UseNvars={int(nvars)}")
    return out


def _negative_weight_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """The NegWeightTreatment option of ``negative_weights``."""
    neg = p.get("negative_weights", "keep")
    adaboost = boosting not in ("gradient", "newton")  # InverseBoostNegWeights boosts them
    if neg not in _TMVA_NEG_WEIGHTS or (neg == "inverse_boost" and not adaboost):
        _no_equivalent(p, "negative_weights", "TMVA trains with the signed weights, ignores or pairs "
                       "them (negative_weights='keep', 'ignore', "
                       + ("'pair' or 'inverse_boost')" if adaboost else "or 'pair')"))
    return [f"NegWeightTreatment={_TMVA_NEG_WEIGHTS[neg]}"]


def _regression_options(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """The loss options of a gradient-boosted regressor."""
    if boosting != "gradient":
        return []
    loss = p.get("loss", "squared")
    if loss not in _TMVA_LOSSES:
        _no_equivalent(p, "loss", f"TMVA's regression losses are {sorted(_TMVA_LOSSES)}")
    out = [f"RegressionLossFunctionBDTG={_TMVA_LOSSES[loss]}"]
    if loss == "huber":
        out.append(f"HuberQuantile={_number(p.get('huber_alpha', 0.7))}")
    return out


def _classifier_loss_check(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """Refuse a gradient classifier's loss other than the deviance (softmax for more classes)."""
    if boosting == "gradient" and p.get("loss") not in (None, "deviance", "softmax"):
        _no_equivalent(p, "loss", "TMVA's BDTG classification uses the binomial deviance "
                       "(softmax for more than two classes)")
    return []


def _separation_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """SeparationType, of the AdaBoost family."""
    if boosting == "gradient":
        return []
    return [f"SeparationType={_TMVA_CRITERIA[p.get('criterion', 'gini')]}"]


def _yes_no_leaf_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """UseYesNoLeaf, of the AdaBoost family."""
    return [] if boosting == "gradient" else [f"UseYesNoLeaf={bool(p.get('use_yes_no_leaf', True))}"]


def _beta_option(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """AdaBoostBeta."""
    return [f"AdaBoostBeta={_number(p.get('beta', 0.5))}"] if boosting == "adaboost" else []


def _normalisation_options(p: dict[str, Any], boosting: str, regression: bool) -> list[str]:
    """SkipNormalization or SigToBkgFraction of ``sig_to_bkg_fraction``."""
    frac = p.get("sig_to_bkg_fraction", "auto")
    if frac is None:
        return ["SkipNormalization"]
    if frac == "auto":  # "auto" leaves gradient boosting's weights as given
        return ["SkipNormalization"] if boosting == "gradient" else []
    # TMVA's own: ratio 1, none for 3+ classes; exactly 1 (1 + 5e-10 left out read back as 1)
    if frac == "tmva" or float(frac) == 1.0:
        return []
    if boosting == "adaboost":
        _no_equivalent(p, "sig_to_bkg_fraction", "TMVA's AdaBoost multiplies the signal weights "
                       "by SigToBkgFraction again after every tree, where hepbdt scales the "
                       "classes once; set sig_to_bkg_fraction=1 or None (SkipNormalization)")
    return [f"SigToBkgFraction={_number(frac)}"]


_SHARED_WRITERS = (_help_options, _n_trees_option, _max_depth_option, _min_node_size_option,
                   _n_cuts_option, _boost_type_option, _subsample_options, _shrinkage_option,
                   _random_tree_options, _negative_weight_option)
_WRITERS = {
    "regressor": (*_SHARED_WRITERS, _regression_options, _n_cuts_check),
    "classifier": (*_SHARED_WRITERS, _classifier_loss_check, _separation_option,
                   _yes_no_leaf_option, _beta_option, _normalisation_options, _n_cuts_check),
}


def to_tmva_options(params: dict[str, Any], kind: str = "classifier") -> str:
    """The TMVA option string of estimator parameters (``get_params()``).

    TMVAOptionError when a parameter has no TMVA equivalent (``boosting="newton"``, ``"eps"``
    or ``"realadaboost"``, ``negative_weights="abs"`` or ``"regress"``, column subsampling by
    tree or level, early stopping, leaf-wise trees (``max_leaves``), ``n_cuts=0`` with
    gradient boosting or a regressor, ...).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    params = with_resolved_growth(params, kind == "classifier")
    if params.get("max_leaves") is not None:
        _no_equivalent(params, "max_leaves", "TMVA grows its trees depth-wise (MaxDepth) and has "
                       "no leaf-wise growth; the TMVA XML export (save_tmva) writes such trees")
    boosting = params.get("boosting", "gradient")
    _boost_type(params, boosting)
    _check_no_equivalent(params)
    regression = kind == "regressor"
    return ":".join(token for write in _WRITERS[kind] for token in write(params, boosting, regression))


def tmva_option_values(params: dict[str, Any], kind: str = "classifier") -> dict[str, str]:
    """The TMVA options that estimator parameters set, by TMVA name, as option-string text
    (``"NTrees"``: ``"200"``, ``"UseBaggedBoost"``: ``"True"``, ``"H"``: ``"False"``): the
    tokens of :func:`to_tmva_options`, but where a parameter has no TMVA equivalent its
    options are left out instead of refused (the TMVA XML export writes these, and TMVA's
    defaults for the rest)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    boosting = params.get("boosting", "gradient")
    regression = kind == "regressor"
    values: dict[str, str] = {}
    for write in _WRITERS[kind]:
        try:
            tokens = write(params, boosting, regression)
        except (TMVAOptionError, TypeError, ValueError, KeyError):
            continue  # a value TMVA cannot express, or of the wrong type: TMVA's default stays
        for token in tokens:
            name, sep, value = token.partition("=")
            if sep:
                values[name] = value
            elif name.startswith("!"):
                values[name[1:]] = "False"
            else:
                values[name] = "True"
    return values


#: hepbdt estimator parameter -> the TMVA option that sets it (hints and the README's table).
TMVA_NAMES = {
    "boosting": "BoostType", "n_trees": "NTrees", "max_depth": "MaxDepth",
    "learning_rate": "Shrinkage", "min_node_size": "MinNodeSize", "n_cuts": "nCuts",
    "beta": "AdaBoostBeta", "criterion": "SeparationType", "use_yes_no_leaf": "UseYesNoLeaf",
    "subsample": "BaggedSampleFraction", "subsample_mode": "UseBaggedBoost",
    "negative_weights": "NegWeightTreatment", "sig_to_bkg_fraction": "SigToBkgFraction",
    "n_vars_per_node": "UseNvars", "loss": "RegressionLossFunctionBDTG",
    "huber_alpha": "HuberQuantile", "verbose": "V",
}


# The parameters that more than one TMVA option sets (TMVA_NAMES holds the first of them).
_SETTING_OPTIONS = {
    "max_depth": ("MaxDepth", "NNodesMax"),
    "subsample": ("BaggedSampleFraction", "GradBaggingFraction", "UseBaggedBoost", "UseBaggedGrad"),
    "subsample_mode": ("UseBaggedBoost", "UseBaggedGrad"),
    "n_vars_per_node": ("UseNvars", "UseRandomisedTrees", "UsePoissonNvars"),
    "negative_weights": ("NegWeightTreatment", "IgnoreNegWeightsInTraining"),
    "sig_to_bkg_fraction": ("SigToBkgFraction", "SkipNormalization"),
    "use_yes_no_leaf": ("UseYesNoLeaf", "BoostType"),  # BoostType=RealAdaBoost
}


def tmva_options_setting(options: str) -> dict[str, dict[str, Any]]:
    """For each estimator parameter that an option *given* in ``options`` sets, those options
    by canonical TMVA name with their values (``{"n_trees": {"NTrees": 100}}``); options the
    string leaves out take TMVA's defaults and are not listed. TMVAOptionError for a string
    that cannot be read."""
    given = _read(options)
    setting: dict[str, dict[str, Any]] = {}
    for param, name in TMVA_NAMES.items():
        names = _SETTING_OPTIONS.get(param, (name,))
        if param == "use_yes_no_leaf" and given.get("BoostType") != "RealAdaBoost":
            names = (name,)
        found = {n: given[n] for n in names if n in given}
        if found:
            setting[param] = found
    return setting


#: TMVA options that a regression refuses (class normalisations).
CLASSIFICATION_ONLY = ("SigToBkgFraction", "SkipNormalization")


def is_tmva_option(name: str) -> bool:
    """True when ``name`` (any case) is a TMVA BDT option, supported or not."""
    return name.lower() in _LOWER
