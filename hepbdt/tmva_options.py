"""Configuration: TMVA BDT option strings to and from hepbdt's estimator parameters.

``parse_tmva_options("NTrees=850:MaxDepth=3:BoostType=AdaBoost:...", "classifier")`` gives
the keyword arguments of ``BDTClassifier`` (``"regressor"``: ``BDTRegressor``) that reproduce
TMVA's method BDT with those options; ``to_tmva_options(params, kind)`` writes them back.
Option names are case-insensitive, as in TMVA; ``Name=Value``, a bare ``Name`` (True) and
``!Name`` (False) are understood. Options that are not given take *TMVA's* default values
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
- ``MinNodeSize`` is a percentage with or without ``%`` (TMVA reads both as percent).
- ``nCuts=N`` adds N equal-width cuts to hepbdt's quantile bins (``n_cuts``); ``nCuts=-1``
  (TMVA's full scan) maps to ``n_cuts=0``, hepbdt's 255 quantile bins.
- ``UseRandomisedTrees`` with ``UseNvars=k`` gives ``n_vars_per_node=k`` (without UseNvars:
  "sqrt", TMVA's default int(sqrt(n_vars) + 0.6)). hepbdt draws exactly k variables per node,
  i.e. ``UsePoissonNvars=False``; TMVA's default UsePoissonNvars=True is honoured only as an
  explicit error, so write ``UsePoissonNvars=False`` with UseRandomisedTrees.
- ``NegWeightTreatment``: InverseBoostNegWeights -> ``"inverse_boost"`` for AdaBoost and
  Bagging, ``"keep"`` for Grad (TMVA itself switches Grad to Pray); Pray -> ``"keep"``;
  IgnoreNegWeightsInTraining, NoNegWeightsInTraining -> ``"ignore"``;
  PairNegWeightsGlobal -> ``"pair"``.
- ``SigToBkgFraction`` -> ``sig_to_bkg_fraction``; ``SkipNormalization`` -> ``None``.
- Old names: ``UseBaggedGrad`` (UseBaggedBoost), ``GradBaggingFraction``
  (BaggedSampleFraction), ``NNodesMax`` (converted to MaxDepth as TMVA does).

This module imports nothing from hepbdt: the estimators, the TMVA XML reader and the
analysis configuration all build on it.
"""

from __future__ import annotations

import math
from typing import Any, NoReturn

__all__ = ["TMVAOptionError", "parse_tmva_options", "to_tmva_options", "TMVA_OPTIONS",
           "TMVA_NAMES", "is_tmva_option", "MAX_TREES"]

KINDS = ("classifier", "regressor")
MAX_DEPTH_LIMIT = 30
#: The most trees one model may have (NTrees here, ``n_trees`` of the estimators): far beyond
#: any useful BDT (TMVA's default is 800), near enough to refuse a typo such as 1e23.
MAX_TREES = 100_000


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


def _parse_bool(name: str, text: str) -> bool:
    """A TMVA true/false value of option ``name``."""
    t = text.strip().lower()
    if t in ("true", "t", "1", "yes", "kTRUE".lower()):
        return True
    if t in ("false", "f", "0", "no", "kFALSE".lower()):
        return False
    raise TMVAOptionError(f"option {name}={text!r}: expected True or False")


def _parse_int(name: str, text: str) -> int | float:
    """An integer option's value; ``1e3`` and ``800.0`` are integers too. A float beyond
    2**53 stays a float (so a message shows ``1e+23``): every such option has a bound."""
    try:
        return int(text)
    except ValueError:
        value = float(text)  # ValueError: not a number at all
    if not value.is_integer():
        raise TMVAOptionError(f"option {name}={text!r}: expected an integer, e.g. {name}="
                              f"{TMVA_OPTIONS[name][1] if TMVA_OPTIONS[name][1] is not None else 1}")
    return int(value) if abs(value) <= 2**53 else value


def _parse_value(name: str, text: str | None, negated: bool) -> Any:
    """The typed value of option ``name`` given as ``text`` (None: bare), ``negated`` by '!'."""
    kind = TMVA_OPTIONS[name][0]
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
            return float(text)
        if kind == "size":
            return float(text.replace("%", "").strip())
    except TMVAOptionError:
        raise
    except ValueError:
        raise TMVAOptionError(f"option {name}={text!r}: expected a number") from None
    if kind == "str":
        return text
    for word in kind:
        if word.lower() == text.lower():
            return word
    raise TMVAOptionError(f"option {name}={text!r} is not valid; TMVA allows {list(kind)}")


def _read(options: str) -> dict[str, Any]:
    """The options given in a TMVA option string, by canonical name, with typed values."""
    given: dict[str, Any] = {}
    for token in options.split(":"):
        token = token.strip()
        if not token:
            continue
        negated = token.startswith("!")
        if negated:
            token = token[1:].strip()
        name_text, sep, value = token.partition("=")
        key = name_text.strip().lower()
        name = _LOWER.get(key)
        if name is None:
            raise TMVAOptionError(f"TMVA option {name_text.strip()!r} is not known to hepbdt; "
                                  f"supported options: {_supported()}")
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


def _tree_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The number, depth, minimal node size and cuts of the trees, and verbosity."""
    if not 0 < opt["MinNodeSize"] < 50:
        _fail(opt, "MinNodeSize", "must be a percentage in (0, 50)")
    if not 1 <= opt["NTrees"] <= MAX_TREES:
        _fail(opt, "NTrees", f"must be an integer in [1, {MAX_TREES}]")
    depth = _max_depth(opt, given)
    if opt["nCuts"] >= 255:
        _fail(opt, "nCuts", "hepbdt supports at most 254 equal-width cuts (or -1 for its quantile bins)")
    return {
        "n_trees": opt["NTrees"],
        "max_depth": depth,
        "min_node_size": opt["MinNodeSize"] / 100.0,
        "n_cuts": max(0, opt["nCuts"]),
        "verbose": bool(opt["V"]),
    }


def _bagging_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """``subsample`` and ``subsample_mode`` from Bagging, UseBaggedBoost and the sample fraction."""
    if not 0 < opt["BaggedSampleFraction"]:
        _fail(opt, "BaggedSampleFraction", "must be positive")
    fraction = opt["BaggedSampleFraction"]
    if "GradBaggingFraction" in given:
        if "BaggedSampleFraction" in given:
            _fail(opt, "GradBaggingFraction", "give BaggedSampleFraction or its old name, not both")
        fraction = opt["GradBaggingFraction"]
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
        neg = "keep"  # TMVA switches Grad to Pray
    return neg


def _regression_params(opt: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """The gradient-boosting parameters of BDTRegressor, rejecting classification options."""
    if opt["SeparationType"] != "RegressionVariance":
        _fail(opt, "SeparationType", "regression trees use RegressionVariance")
    if opt["UseYesNoLeaf"]:
        _fail(opt, "UseYesNoLeaf", "not meaningful for regression")
    if not 0 <= opt["HuberQuantile"] <= 1:
        _fail(opt, "HuberQuantile", "must be in [0, 1]")
    for name in ("SigToBkgFraction", "SkipNormalization"):
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
    params: dict[str, Any] = {
        "criterion": _CRITERIA[opt["SeparationType"].lower()],
        "beta": opt["AdaBoostBeta"],
        "sig_to_bkg_fraction": None if opt["SkipNormalization"] else opt["SigToBkgFraction"],
    }
    if boost == "Grad":
        params.update(boosting="gradient", learning_rate=opt["Shrinkage"], loss="deviance")
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
    _check_unsupported(opt, given, regression)
    params = _tree_params(opt, given)
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
    if p.get("min_split_gain", 0.0) > 0:
        _no_equivalent(p, "min_split_gain", "TMVA has no minimal gain")
    if p.get("decorrelation") is not None:
        _no_equivalent(p, "decorrelation", "TMVA has no decorrelated training (the TMVA XML "
                       "export, save_tmva, writes a flatness model's trees)")
    if p.get("decorrelation_map") is not None:
        _no_equivalent(p, "decorrelation_map", "TMVA has no score map (save the model with "
                       "save(), hepbdt's JSON model)")


def _tree_options(p: dict[str, Any], boost_type: str) -> list[str]:
    """The help, verbosity, tree-size, cut and BoostType options."""
    if p.get("n_trees") == "auto":
        _no_equivalent(p, "n_trees", "TMVA trains a fixed NTrees; set n_trees, or fit first "
                       "(a fitted model writes the count that 'auto' kept)")
    out = ["!H", "V" if p.get("verbose") else "!V", f"NTrees={int(p['n_trees'])}",
           f"MaxDepth={int(p['max_depth'])}",
           f"MinNodeSize={_number(round(100.0 * p.get('min_node_size', 0.0), 10))}%",
           f"nCuts={int(p['n_cuts']) if p.get('n_cuts', 0) > 0 else -1}",
           f"BoostType={boost_type}"]
    if p.get("min_node_size", 0.0) <= 0:
        _no_equivalent(p, "min_node_size", "TMVA's MinNodeSize must be positive")
    return out


def _subsample_options(p: dict[str, Any], boosting: str) -> list[str]:
    """The bagging options (UseBaggedBoost, BaggedSampleFraction) of ``subsample``."""
    subsample, mode = p.get("subsample", 1.0), p.get("subsample_mode", "uniform")
    if boosting == "bagging":
        fraction = 1.0 if (subsample >= 1.0 and mode == "uniform") else subsample
        if mode == "weighted":
            _no_equivalent(p, "subsample_mode", "TMVA resamples with Poisson counts")
        return [f"BaggedSampleFraction={_number(fraction)}"]
    if mode == "poisson":
        return ["UseBaggedBoost", f"BaggedSampleFraction={_number(subsample)}"]
    if subsample != 1.0 or mode != "uniform":
        _no_equivalent(p, "subsample_mode",
                       "TMVA's bagged boost draws Poisson counts (subsample_mode='poisson')")
    return []


def _random_tree_options(p: dict[str, Any]) -> list[str]:
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


def _negative_weight_option(p: dict[str, Any]) -> str:
    """The NegWeightTreatment option of ``negative_weights``."""
    neg = p.get("negative_weights", "keep")
    if neg not in _TMVA_NEG_WEIGHTS:
        _no_equivalent(p, "negative_weights", "TMVA trains with the signed weights, ignores or pairs "
                       "them (negative_weights='keep', 'ignore', 'pair' or 'inverse_boost')")
    return f"NegWeightTreatment={_TMVA_NEG_WEIGHTS[neg]}"


def _regression_options(p: dict[str, Any]) -> list[str]:
    """The loss options of a regressor."""
    loss = p.get("loss", "squared")
    if loss not in _TMVA_LOSSES:
        _no_equivalent(p, "loss", f"TMVA's regression losses are {sorted(_TMVA_LOSSES)}")
    out = [f"RegressionLossFunctionBDTG={_TMVA_LOSSES[loss]}"]
    if loss == "huber":
        out.append(f"HuberQuantile={_number(p.get('huber_alpha', 0.7))}")
    return out


def _classification_options(p: dict[str, Any], boosting: str) -> list[str]:
    """The separation, leaf, AdaBoost and normalisation options of a classifier."""
    if boosting == "gradient" and (p.get("loss") or "deviance") != "deviance":
        _no_equivalent(p, "loss", "TMVA's BDTG classification uses the binomial deviance")
    out: list[str] = []
    if boosting != "gradient":
        out.append(f"SeparationType={_TMVA_CRITERIA[p.get('criterion', 'gini')]}")
        out.append(f"UseYesNoLeaf={bool(p.get('use_yes_no_leaf', True))}")
    if boosting == "adaboost":
        out.append(f"AdaBoostBeta={_number(p.get('beta', 0.5))}")
    frac = p.get("sig_to_bkg_fraction", "auto")
    if frac is None:
        out.append("SkipNormalization")
    elif frac == "auto":
        if boosting == "gradient":  # "auto" leaves gradient boosting's weights as given
            out.append("SkipNormalization")
    elif not math.isclose(float(frac), 1.0):
        out.append(f"SigToBkgFraction={_number(frac)}")
    return out


def to_tmva_options(params: dict[str, Any], kind: str = "classifier") -> str:
    """The TMVA option string of estimator parameters (``get_params()``).

    TMVAOptionError when a parameter has no TMVA equivalent (``boosting="newton"``, ``"eps"``
    or ``"realadaboost"``, ``negative_weights="abs"`` or ``"regress"``, column subsampling by
    tree or level, early stopping, leaf-wise trees (``max_leaves``), ...).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if params.get("max_leaves") is not None:
        _no_equivalent(params, "max_leaves", "TMVA grows its trees depth-wise (MaxDepth) and has "
                       "no leaf-wise growth; the TMVA XML export (save_tmva) writes such trees")
    boosting = params.get("boosting", "gradient")
    boost_type = _boost_type(params, boosting)
    _check_no_equivalent(params)
    out = _tree_options(params, boost_type)
    out += _subsample_options(params, boosting)
    if boosting == "gradient":
        out.append(f"Shrinkage={_number(params['learning_rate'])}")
    out += _random_tree_options(params)
    out.append(_negative_weight_option(params))
    if kind == "regressor":
        out += _regression_options(params)
    else:
        out += _classification_options(params, boosting)
    return ":".join(out)


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


def is_tmva_option(name: str) -> bool:
    """True when ``name`` (any case) is a TMVA BDT option, supported or not."""
    return name.lower() in _LOWER
