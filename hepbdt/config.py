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

The second half of the module reads TOML analysis configurations (``hepbdt train
analysis.toml``): :func:`load_config` parses, applies ``--set`` overrides and checks every
key and type, :func:`check_inputs` opens the trees and checks that every branch the
expressions need is there; both raise :class:`ConfigError` naming the file and the key.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TMVAOptionError", "parse_tmva_options", "to_tmva_options", "TMVA_OPTIONS"]

KINDS = ("classifier", "regressor")
MAX_DEPTH_LIMIT = 30


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


def _supported() -> str:
    return ", ".join(sorted(TMVA_OPTIONS, key=str.lower))


def _parse_bool(name: str, text: str) -> bool:
    t = text.strip().lower()
    if t in ("true", "t", "1", "yes", "kTRUE".lower()):
        return True
    if t in ("false", "f", "0", "no", "kFALSE".lower()):
        return False
    raise TMVAOptionError(f"option {name}={text!r}: expected True or False")


def _parse_value(name: str, text: str | None, negated: bool) -> Any:
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
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "size":
            return float(text.replace("%", "").strip())
    except ValueError:
        raise TMVAOptionError(f"option {name}={text!r}: expected a number") from None
    if kind == "str":
        return text
    for word in kind:
        if word.lower() == text.lower():
            return word
    raise TMVAOptionError(f"option {name}={text!r} is not valid; TMVA allows {list(kind)}")


def _read(options: str) -> dict[str, Any]:
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

    def fail(name: str, why: str) -> None:
        raise TMVAOptionError(f"TMVA option {name}={opt[name]!r}: {why}")

    boost = opt["BoostType"]
    if boost in ("AdaBoostR2", "AdaCost", "RegBoost"):
        hint = " (TMVA's default for regression)" if regression and "BoostType" not in given else ""
        fail("BoostType", f"BoostType={boost}{hint} is not implemented; supported: AdaBoost, "
             f"RealAdaBoost, Bagging, Grad (regression: Grad)")
    if regression and boost != "Grad":
        fail("BoostType", "BDTRegressor supports BoostType=Grad only")
    if opt["PruneMethod"] != "NoPruning":
        fail("PruneMethod", "pruning is not implemented; use NoPruning (TMVA's default) and "
             "limit MaxDepth instead")
    for name in ("UseFisherCuts", "DoPreselection"):
        if opt[name]:
            fail(name, "not implemented in hepbdt")
    if opt["NodePurityLimit"] != 0.5:
        fail("NodePurityLimit", "only 0.5 is supported")
    if opt["VarTransform"].lower() != "none":
        fail("VarTransform", "hepbdt trains on the variables as given; use VarTransform=None")
    if opt["SeparationType"] == "GiniIndexWithLaplace":
        fail("SeparationType", "GiniIndexWithLaplace is not implemented")
    if not 0 < opt["MinNodeSize"] < 50:
        fail("MinNodeSize", "must be a percentage in (0, 50)")
    if opt["NTrees"] < 1:
        fail("NTrees", "must be at least 1")
    depth = opt["MaxDepth"]
    if opt["NNodesMax"] > 0:  # TMVA's conversion of the deprecated option
        nodes, depth = 1, 0
        while nodes < opt["NNodesMax"]:
            nodes += 2 * nodes
            depth += 1
    if not 1 <= depth <= MAX_DEPTH_LIMIT:
        name = "MaxDepth" if opt["NNodesMax"] <= 0 else "NNodesMax"
        hint = " (TMVA's regression default is 50: give MaxDepth)" if "MaxDepth" not in given else ""
        fail(name, f"the depth {depth} is outside hepbdt's range [1, {MAX_DEPTH_LIMIT}]{hint}")
    if opt["nCuts"] >= 255:
        fail("nCuts", "hepbdt supports at most 254 equal-width cuts (or -1 for its quantile bins)")
    if not 0 < opt["BaggedSampleFraction"]:
        fail("BaggedSampleFraction", "must be positive")
    if "GradBaggingFraction" in given:
        if "BaggedSampleFraction" in given:
            fail("GradBaggingFraction", "give BaggedSampleFraction or its old name, not both")
        opt["BaggedSampleFraction"] = opt["GradBaggingFraction"]

    params: dict[str, Any] = {
        "n_trees": opt["NTrees"],
        "max_depth": depth,
        "min_node_size": opt["MinNodeSize"] / 100.0,
        "n_cuts": max(0, opt["nCuts"]),
        "verbose": bool(opt["V"]),
    }
    bagged = opt["UseBaggedBoost"] or opt["UseBaggedGrad"] or boost == "Bagging"
    params["subsample"] = opt["BaggedSampleFraction"] if bagged else 1.0
    params["subsample_mode"] = "poisson" if bagged else "uniform"
    if opt["UseRandomisedTrees"]:
        if opt["UsePoissonNvars"]:
            fail("UsePoissonNvars", "hepbdt draws a fixed number of variables per node: give "
                 "UsePoissonNvars=False with UseRandomisedTrees (TMVA's default is True)")
        params["n_vars_per_node"] = opt["UseNvars"] if opt["UseNvars"] is not None else "sqrt"
        if opt["UseNvars"] is not None and opt["UseNvars"] < 1:
            fail("UseNvars", "must be at least 1")
    else:
        params["n_vars_per_node"] = None

    neg = _NEG_WEIGHTS[opt["NegWeightTreatment"].lower()]
    if opt["IgnoreNegWeightsInTraining"]:
        if "NegWeightTreatment" in given and neg != "ignore":
            fail("IgnoreNegWeightsInTraining", "contradicts NegWeightTreatment")
        neg = "ignore"
    if neg == "inverse_boost" and boost == "Grad":
        neg = "keep"  # TMVA switches Grad to Pray
    params["negative_weights"] = neg

    if regression:
        if opt["SeparationType"] != "RegressionVariance":
            fail("SeparationType", "regression trees use RegressionVariance")
        if opt["UseYesNoLeaf"]:
            fail("UseYesNoLeaf", "not meaningful for regression")
        if not 0 <= opt["HuberQuantile"] <= 1:
            fail("HuberQuantile", "must be in [0, 1]")
        params.update(boosting="gradient", learning_rate=opt["Shrinkage"],
                      loss=_REG_LOSSES[opt["RegressionLossFunctionBDTG"].lower()],
                      huber_alpha=opt["HuberQuantile"])
        for name in ("SigToBkgFraction", "SkipNormalization"):
            if name in given:
                fail(name, "applies to classification only")
        return params

    for name in ("RegressionLossFunctionBDTG", "HuberQuantile"):
        if name in given:
            fail(name, "applies to regression only (BDTRegressor)")
    if opt["SeparationType"] == "RegressionVariance":
        fail("SeparationType", "RegressionVariance is for regression; classification takes "
             "GiniIndex, CrossEntropy, MisClassificationError or SDivSqrtSPlusB")
    if not opt["SigToBkgFraction"] > 0:
        fail("SigToBkgFraction", "must be positive")
    params["criterion"] = _CRITERIA[opt["SeparationType"].lower()]
    params["beta"] = opt["AdaBoostBeta"]
    params["sig_to_bkg_fraction"] = None if opt["SkipNormalization"] else opt["SigToBkgFraction"]
    if boost == "Grad":
        params.update(boosting="gradient", learning_rate=opt["Shrinkage"], loss="deviance")
    else:
        params["boosting"] = "bagging" if boost == "Bagging" else "adaboost"
        params["use_yes_no_leaf"] = False if boost == "RealAdaBoost" else bool(opt["UseYesNoLeaf"])
        if "Shrinkage" in given:
            params["learning_rate"] = opt["Shrinkage"]  # no effect on AdaBoost, as in TMVA
    return params


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def to_tmva_options(params: dict[str, Any], kind: str = "classifier") -> str:
    """The TMVA option string of estimator parameters (``get_params()``).

    TMVAOptionError when a parameter has no TMVA equivalent (``boosting="newton"``, ``"eps"``
    or ``"realadaboost"``, ``negative_weights="abs"``, column subsampling by tree or level,
    early stopping, ...).
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    p = params

    def fail(name: str, why: str) -> None:
        raise TMVAOptionError(f"{name}={p.get(name)!r} has no TMVA equivalent: {why}")

    boosting = p.get("boosting", "gradient")
    boost_type = {"adaboost": "AdaBoost", "bagging": "Bagging", "gradient": "Grad"}.get(boosting)
    if boost_type is None:
        fail("boosting", "TMVA's BoostType is AdaBoost, RealAdaBoost (AdaBoost with purity "
             "leaves), Bagging or Grad")
    for name in ("colsample_bytree", "colsample_bylevel"):
        if p.get(name, 1.0) != 1.0:
            fail(name, "TMVA samples variables per node only (UseRandomisedTrees)")
    if p.get("early_stopping"):
        fail("early_stopping", "TMVA trains NTrees trees")
    if p.get("min_split_gain", 0.0) > 0:
        fail("min_split_gain", "TMVA has no minimal gain")
    out = ["!H", "V" if p.get("verbose") else "!V", f"NTrees={int(p['n_trees'])}",
           f"MaxDepth={int(p['max_depth'])}",
           f"MinNodeSize={_number(round(100.0 * p.get('min_node_size', 0.0), 10))}%",
           f"nCuts={int(p['n_cuts']) if p.get('n_cuts', 0) > 0 else -1}",
           f"BoostType={boost_type}"]
    if p.get("min_node_size", 0.0) <= 0:
        fail("min_node_size", "TMVA's MinNodeSize must be positive")
    subsample, mode = p.get("subsample", 1.0), p.get("subsample_mode", "uniform")
    if boosting == "bagging":
        fraction = 1.0 if (subsample >= 1.0 and mode == "uniform") else subsample
        if mode == "weighted":
            fail("subsample_mode", "TMVA resamples with Poisson counts")
        out.append(f"BaggedSampleFraction={_number(fraction)}")
    elif mode == "poisson":
        out += ["UseBaggedBoost", f"BaggedSampleFraction={_number(subsample)}"]
    elif subsample != 1.0 or mode != "uniform":
        fail("subsample_mode", "TMVA's bagged boost draws Poisson counts (subsample_mode='poisson')")
    if boosting == "gradient":
        out.append(f"Shrinkage={_number(p['learning_rate'])}")
    nvars = p.get("n_vars_per_node")
    if nvars is not None:
        out += ["UseRandomisedTrees", "UsePoissonNvars=False"]
        if nvars != "sqrt":
            out.append(f"UseNvars={int(nvars)}")
    elif p.get("colsample_bynode", 1.0) != 1.0:
        fail("colsample_bynode", "TMVA's UseNvars is a number of variables: set n_vars_per_node")
    neg = p.get("negative_weights", "keep")
    names = {"keep": "Pray", "ignore": "IgnoreNegWeightsInTraining", "pair": "PairNegWeightsGlobal",
             "inverse_boost": "InverseBoostNegWeights"}
    if neg not in names:
        fail("negative_weights", "TMVA trains with the signed weights, ignores or pairs them")
    out.append(f"NegWeightTreatment={names[neg]}")
    if kind == "regressor":
        losses = {v: k for k, v in {"Huber": "huber", "AbsoluteDeviation": "absolute",
                                    "LeastSquares": "squared"}.items()}
        loss = p.get("loss", "squared")
        if loss not in losses:
            fail("loss", f"TMVA's regression losses are {sorted(losses)}")
        out.append(f"RegressionLossFunctionBDTG={losses[loss]}")
        if loss == "huber":
            out.append(f"HuberQuantile={_number(p.get('huber_alpha', 0.7))}")
        return ":".join(out)
    if boosting == "gradient" and (p.get("loss") or "deviance") != "deviance":
        fail("loss", "TMVA's BDTG classification uses the binomial deviance")
    if boosting != "gradient":
        criteria = {v: k for k, v in {"GiniIndex": "gini", "CrossEntropy": "cross_entropy",
                                      "MisClassificationError": "misclassification",
                                      "SDivSqrtSPlusB": "sdivsqrtsplusb"}.items()}
        out.append(f"SeparationType={criteria[p.get('criterion', 'gini')]}")
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
    return ":".join(out)


# -- TOML analysis configuration ---------------------------------------------------------------

__all__ += ["ConfigError", "AnalysisConfig", "SampleConfig", "SplitConfig", "OutputConfig",
            "load_config", "check_inputs", "apply_overrides", "TMVA_NAMES"]

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

_NORM_NAMES = {"none": "none", "num_events": "num_events", "numevents": "num_events",
               "equal_num_events": "equal_num_events", "equalnumevents": "equal_num_events"}
_SPLIT_MODES = ("random", "alternate", "block")
_FIGURE_FORMATS = ("png", "pdf", "svg")
_CLASS_LABELS = {"signal": 1, "sig": 1, "background": 0, "bkg": 0, 1: 1, 0: 0}


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
_WEIGHT = (lambda v: isinstance(v, str) or _is_number(v), "an expression (string) or a number")
_LABEL = (lambda v: isinstance(v, str) or _is_int(v), "'signal', 'background', 1 or 0")

_TOP_KEYS = {
    "title": _STR, "features": _STR_LIST, "aliases": _TABLE, "event": _STR,
    "tree": _STR_OR_LIST, "weight": _WEIGHT, "preselection": _STR, "inf_as_missing": _BOOL,
    "samples": _TABLE, "split": _TABLE, "method": _TABLE, "output": _TABLE,
}
_SAMPLE_KEYS = {
    "files": _STR_OR_LIST, "tree": _STR_OR_LIST, "weight": _WEIGHT, "cut": _STR,
    "label": _LABEL, "target": _STR, "scale": _NUMBER, "event": _STR,
}
_SPLIT_KEYS = {"mode": _STR, "train_fraction": _NUMBER, "seed": _INT, "kfold": _INT, "norm": _STR}
_OUTPUT_KEYS = {
    "directory": _STR, "score_branch": _STR, "tmva_xml": _BOOL, "report": _BOOL,
    "figures": _BOOL, "figure_formats": _STR_LIST, "score_features": _BOOL,
    "permutation_repeats": _INT,
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

    def to_sample(self) -> Any:
        """The :class:`hepbdt.io.Sample` that reads this sample."""
        from .io import Sample

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
class OutputConfig:
    """``[output]``: where the results go and which are written."""

    directory: Path | None = None
    score_branch: str = "bdt_score"
    tmva_xml: bool = True
    report: bool = True
    figures: bool = True
    figure_formats: list[str] = field(default_factory=lambda: ["png"])
    score_features: bool = True
    permutation_repeats: int = 3


@dataclass
class AnalysisConfig:
    """A checked analysis configuration (see :func:`load_config`).

    ``features`` are the names as written (aliases kept, used as labels);
    ``feature_expressions`` have the aliases expanded and become the model's
    ``feature_names_in_``, which :func:`hepbdt.io.apply` evaluates on new files.
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

    @property
    def estimator_class(self) -> type:
        from .estimators import BDTClassifier, BDTRegressor

        return BDTRegressor if self.task == "regression" else BDTClassifier

    def make_estimator(self) -> Any:
        """A fresh, unfitted estimator with the configured parameters."""
        return self.estimator_class(**self.params)

    def make_samples(self) -> list[Any]:
        """The :class:`hepbdt.io.Sample` objects, in the order of the file."""
        return [s.to_sample() for s in self.samples]


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


def _check_keys(table: dict[str, Any], spec: dict[str, tuple[Any, str]], name: str | None,
                problems: _Problems) -> dict[str, Any]:
    """The entries of ``table`` that are known and of the right type; the rest are problems."""
    good = {}
    for key, value in table.items():
        if key not in spec:
            matches = difflib.get_close_matches(key, list(spec), n=3, cutoff=0.6)
            hint = f"did you mean {' or '.join(repr(m) for m in matches)}? " if matches else ""
            problems.add(name, key, f"unknown key; {hint}valid keys: {', '.join(spec)}")
            continue
        test, words = spec[key]
        if not test(value):
            problems.add(name, key, f"expected {words}, got {_type_name(value)} ({value!r})")
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


def _expand(text: str, aliases: dict[str, str], seen: tuple[str, ...] = ()) -> str:
    """``text`` with every alias replaced by its (parenthesised, expanded) expression."""
    stripped = text.strip()
    if stripped in aliases and not seen:
        return _expand(aliases[stripped], aliases, (stripped,))

    def replace(match: re.Match[str]) -> str:
        name = match.group(0)
        if name.startswith("`") or name not in aliases:
            return name
        if name in seen:
            raise ValueError(f"alias {name!r} refers to itself ({' -> '.join([*seen, name])})")
        return f"({_expand(aliases[name], aliases, (*seen, name))})"

    return _NAME.sub(replace, text)


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
    as one :class:`ConfigError`. Files and branches are checked by :func:`check_inputs`.
    """
    source = os.fspath(path)
    config_path = Path(source)
    if not config_path.is_file():
        raise ConfigError([f"{source}: the configuration file does not exist"])
    toml = _tomllib()
    try:
        document = toml.loads(config_path.read_text(encoding="utf-8"))
    except toml.TOMLDecodeError as exc:
        raise ConfigError([f"{source}: not valid TOML: {exc}"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{source}: not a UTF-8 text file ({exc})"]) from None
    overridden = apply_overrides(document, overrides)
    split_table = document.get("split")
    if isinstance(split_table, dict):
        # An override of the scheme replaces the file's scheme: --set split.kfold=5 on a
        # file with mode and train_fraction trains k folds, and the other way round.
        single = {"split.mode", "split.train_fraction"}
        if "split.kfold" in overridden:
            for key in single - overridden:
                split_table.pop(key.split(".")[1], None)
        elif single & overridden:
            split_table.pop("kfold", None)
    problems = _Problems(source, overridden)
    top = _check_keys(document, _TOP_KEYS, None, problems)
    base = config_path.resolve().parent

    aliases: dict[str, str] = {}
    for name, text in top.get("aliases", {}).items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            problems.add("aliases", name, "an alias name must be an identifier (letters, "
                         "digits, _)")
        elif name in _expression_functions():
            problems.add("aliases", name, "an alias cannot have the name of a function")
        elif not isinstance(text, str):
            problems.add("aliases", name, f"expected an expression (string), got "
                         f"{_type_name(text)}")
        else:
            aliases[name] = text

    def expression(text: str, role: str, table: str | None, key: str) -> str | None:
        from .io.expressions import Expression

        try:
            expanded = _expand(text, aliases)
            Expression(expanded, role)
        except ValueError as exc:  # ExpressionError is a ValueError
            problems.add(table, key, str(exc))
            return None
        return expanded

    features = top.get("features")
    expressions: list[str] = []
    if features is None and "features" not in document:
        problems.add(None, "features", "missing; list the branches or expressions to train "
                     "on, e.g. features = [\"HT\", \"MET_pt\", \"Jet_pt[:, 0]\"]")
    for text in features or []:
        expanded = expression(text, "feature", None, "features")
        if expanded is not None:
            expressions.append(expanded)
    repeated = sorted({e for e in expressions if expressions.count(e) > 1})
    if repeated:
        problems.add(None, "features", f"repeated: {', '.join(map(repr, repeated))}")

    event = top.get("event")
    if event is not None:
        event = expression(event, "event", None, "event")
    preselection = top.get("preselection")
    if preselection is not None:
        preselection = expression(preselection, "cut", None, "preselection")
    default_weight = top.get("weight")
    if isinstance(default_weight, str):
        default_weight = expression(default_weight, "weight", None, "weight")

    samples: list[SampleConfig] = []
    sample_tables = top.get("samples")
    if sample_tables is None and "samples" not in document:
        problems.add(None, "samples", "missing; add a [samples.NAME] table per sample with "
                     "files and label (or target)")
    for name, table in (sample_tables or {}).items():
        section = f"samples.{name}"
        if not isinstance(table, dict):
            problems.add("samples", name, f"expected a table [samples.{name}] with files and "
                         f"label, got {_type_name(table)}")
            continue
        entry = _check_keys(table, _SAMPLE_KEYS, section, problems)
        if "files" not in table:
            problems.add(section, "files", "missing; give a path, a glob or a list of them "
                         "(relative to the configuration file)")
            continue
        files = entry.get("files")
        if files is None:
            continue
        files = [files] if isinstance(files, str) else files
        sample = SampleConfig(name=name, files=[_resolve_path(f, base) for f in files],
                              tree=entry.get("tree", top.get("tree")),
                              scale=float(entry.get("scale", 1.0)))
        weight = entry.get("weight", default_weight)
        if isinstance(weight, str) and "weight" in entry:
            weight = expression(weight, "weight", section, "weight")
        sample.weight = weight
        cuts = [preselection] if preselection else []
        if "cut" in entry:
            cut = expression(entry["cut"], "cut", section, "cut")
            if cut is not None:
                cuts.append(cut)
        sample.cut = " & ".join(f"({c})" for c in cuts) if len(cuts) > 1 else (
            cuts[0] if cuts else None)
        if "event" in entry:
            sample.event = expression(entry["event"], "event", section, "event")
        if "target" in entry:
            sample.target = expression(entry["target"], "target", section, "target")
            if "label" in entry:
                problems.add(section, "label", "give label (classification) or target "
                             "(regression), not both")
        elif "label" in entry:
            label = entry["label"]
            key = label.lower() if isinstance(label, str) else label
            if key not in _CLASS_LABELS:
                problems.add(section, "label", f"{label!r} is not a class; valid: 'signal' "
                             "(or 1), 'background' (or 0). For a regression give target = "
                             "'expression' instead")
            else:
                sample.label = _CLASS_LABELS[key]
        elif "label" not in table and "target" not in table:
            problems.add(section, None, "give label = 'signal' or 'background' "
                         "(classification) or target = 'expression' (regression)")
        samples.append(sample)

    regression = [s.name for s in samples if s.target is not None]
    task = "regression" if regression else "classification"
    if regression and len(regression) < len(samples):
        others = [s.name for s in samples if s.target is None]
        problems.add("samples", None, f"samples {regression} have a target but {others} do "
                     "not; every sample of a regression needs target = '...'")
    if samples and not regression and not problems.lines:
        labels = {s.label for s in samples}
        if labels != {0, 1}:
            missing = "signal" if 1 not in labels else "background"
            problems.add("samples", None, f"no {missing} sample; a classification needs at "
                         "least one sample with label = 'signal' and one with label = "
                         "'background'")

    split = _split_config(top.get("split", {}), task, problems)
    if split.kfold is not None and event is None and not all(s.event for s in samples):
        problems.add("split", "kfold", "k-fold training assigns events to folds by event "
                     "number: give event = \"event\" (the event-number branch) at the top of "
                     "the file")
    params, tmva_options = _method_config(top.get("method", {}), task, problems)
    output_config = _output_config(top.get("output", {}), problems)
    if output is not None:
        output_config.directory = Path(output)
    problems.raise_if_any()
    return AnalysisConfig(
        path=config_path, title=top.get("title", config_path.stem), task=task,
        features=list(features or []), feature_expressions=expressions, samples=samples,
        event=event, inf_as_missing=top.get("inf_as_missing", False), split=split,
        params=params, tmva_options=tmva_options, output=output_config, aliases=aliases,
        document=document,
    )


def _expression_functions() -> frozenset[str]:
    from .io.expressions import FUNCTIONS

    return FUNCTIONS


def _split_config(table: dict[str, Any], task: str, problems: _Problems) -> SplitConfig:
    entry = _check_keys(table, _SPLIT_KEYS, "split", problems)
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
        split.seed = entry["seed"]
    if "kfold" in entry:
        if entry["kfold"] < 2:
            problems.add("split", "kfold", f"{entry['kfold']} folds: k-fold needs k >= 2")
        clash = [k for k in ("mode", "train_fraction") if k in entry]
        if clash:
            problems.add("split", "kfold", f"kfold splits by event number; remove "
                         f"{' and '.join(clash)}, which are for a single train/test split")
        split.kfold = entry["kfold"]
    if "norm" in entry:
        norm = _NORM_NAMES.get(entry["norm"].lower())
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


def _accepts(annotation: str, value: Any) -> bool:
    tests = {"int": _is_int, "float": _is_number, "bool": lambda v: isinstance(v, bool),
             "str": lambda v: isinstance(v, str)}
    kinds = [k.strip() for k in str(annotation).split("|")]
    known = [tests[k] for k in kinds if k in tests]
    return not known or any(test(value) for test in known)


def _annotation_words(annotation: str) -> str:
    words = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}
    kinds = [words[k.strip()] for k in str(annotation).split("|") if k.strip() in words]
    return " or ".join(kinds)


def _method_config(table: dict[str, Any], task: str, problems: _Problems
                   ) -> tuple[dict[str, Any], str | None]:
    import inspect

    from .estimators import BDTClassifier, BDTRegressor

    cls = BDTRegressor if task == "regression" else BDTClassifier
    kind = cls._estimator_kind
    signature = inspect.signature(cls.__init__)
    valid = [name for name in signature.parameters if name != "self"]
    tmva_lower = {name.lower(): ours for ours, name in TMVA_NAMES.items()}
    n_before = len(problems.lines)
    params: dict[str, Any] = {}
    tmva_options = table.get("tmva_options")
    if tmva_options is not None:
        if not isinstance(tmva_options, str):
            problems.add("method", "tmva_options", "expected a TMVA option string, e.g. "
                         "\"NTrees=850:MaxDepth=3:BoostType=AdaBoost\"")
            tmva_options = None
        else:
            try:
                params = parse_tmva_options(tmva_options, kind)
            except TMVAOptionError as exc:
                problems.add("method", "tmva_options", str(exc))
    for key, value in table.items():
        if key == "tmva_options":
            continue
        if key not in valid:
            if key.lower() in tmva_lower and tmva_lower[key.lower()] in valid:
                hint = (f"{key} is TMVA's name: write {tmva_lower[key.lower()]} = ..., or put "
                        f"{key}=... in tmva_options")
            elif key.lower() in _LOWER:
                hint = f"{key} is a TMVA option: put {key}=... in tmva_options"
            else:
                matches = difflib.get_close_matches(key, [*valid, "tmva_options"], n=3,
                                                    cutoff=0.6)
                hint = (f"did you mean {' or '.join(repr(m) for m in matches)}? "
                        if matches else "") + f"valid options: {', '.join(valid)}, tmva_options"
            problems.add("method", key, f"unknown option of {cls.__name__}; {hint}")
            continue
        annotation = signature.parameters[key].annotation
        if not _accepts(annotation, value):
            problems.add("method", key, f"expected {_annotation_words(annotation)}, got "
                         f"{_type_name(value)} ({value!r})")
            continue
        params[key] = value
    if len(problems.lines) == n_before:
        estimator = cls(**params)
        try:
            estimator._validate_params()
            if estimator.boosting in ("gradient", "newton"):
                estimator._make_loss()
        except (ValueError, TypeError) as exc:
            match = re.match(r"(\w+)[= ]", str(exc))
            key = match.group(1) if match else None
            if key not in table:
                key = "tmva_options" if tmva_options else None
            problems.add("method", key, str(exc))
    return params, tmva_options


def _output_config(table: dict[str, Any], problems: _Problems) -> OutputConfig:
    entry = _check_keys(table, _OUTPUT_KEYS, "output", problems)
    output = OutputConfig()
    for key, value in entry.items():
        if key == "directory":
            output.directory = Path(os.path.expandvars(os.path.expanduser(value)))
        elif key == "score_branch" and not re.fullmatch(r"[A-Za-z_]\w*", value):
            problems.add("output", key, f"{value!r} is not a valid branch name (letters, "
                         "digits, _)")
        elif key == "figure_formats" and not set(value) <= set(_FIGURE_FORMATS):
            problems.add("output", key, f"valid formats: {', '.join(_FIGURE_FORMATS)}")
        elif key == "permutation_repeats" and value < 1:
            problems.add("output", key, "must be at least 1")
        else:
            setattr(output, key, value)
    return output


def check_inputs(config: AnalysisConfig) -> None:
    """Open every sample's files and trees and check the branches the expressions need.

    Reads no event data. Raises :class:`ConfigError` listing, per key, files that do not
    exist, trees that are missing and expressions that use names that are not branches
    (with close names), before any work starts.
    """
    import uproot

    from .io.errors import InputError
    from .io.expressions import CONSTANTS, Expression
    from .io.samples import Source, TreeReader, get_tree, resolve_sources

    source = os.fspath(config.path)
    problems = _Problems(source, set())
    seen: set[tuple[str | None, str, str, str]] = set()
    feature_labels = dict(zip(config.feature_expressions, config.features, strict=True))
    for sample in config.samples:
        section = f"samples.{sample.name}"
        context = f"sample {sample.name!r}"
        try:
            sources = resolve_sources(sample.files, sample.tree, context)
        except InputError as exc:
            problems.add(section, "files", str(exc).removeprefix(f"{context}: "))
            continue
        roles: list[tuple[str | None, str, str, str]] = [
            (None, "features", expr, "feature") for expr in config.feature_expressions]
        for key in ("weight", "cut", "target", "event"):
            value = getattr(sample, key)
            if key == "event" and value is None:
                value = config.event
            if isinstance(value, str):
                roles.append((section, key, value, key))
        for src in sources:
            try:
                file = uproot.open(src.path)
            except Exception as exc:
                problems.add(section, "files", f"cannot open {src.path!r} as a ROOT file "
                             f"({type(exc).__name__}: {exc})")
                continue
            with file:
                try:
                    tree = get_tree(file, src, context)
                except InputError as exc:
                    problems.add(section, "tree", str(exc).removeprefix(f"{context}: "))
                    continue
                branches = list(tree.keys())
                branch_set = set(branches)
                where = f"tree {tree.name!r} of {src.path!r} (sample {sample.name!r})"
                for alias in config.aliases:
                    if alias in branch_set and ("aliases", alias, "", "") not in seen:
                        seen.add(("aliases", alias, "", ""))
                        problems.add("aliases", alias, f"is also a branch of {where}; "
                                     "rename the alias")
                clean = True
                for table, key, text, role in roles:
                    missing = sorted(Expression(text, role).names - branch_set - set(CONSTANTS))
                    for name in missing:
                        clean = False
                        if (table, key, text, name) in seen:
                            continue
                        seen.add((table, key, text, name))
                        shown = feature_labels.get(text, text) if key == "features" else text
                        expanded = f" (= {text!r})" if shown != text else ""
                        matches = difflib.get_close_matches(name, branches, n=3, cutoff=0.6)
                        hint = (f"did you mean {' or '.join(repr(m) for m in matches)}? "
                                if matches else "")
                        listed = ", ".join(branches[:40]) + (" ..." if len(branches) > 40 else "")
                        problems.add(table, key, f"{shown!r}{expanded} uses {name!r}, which is "
                                     f"not a branch of {where}; {hint}branches: {listed}")
                if clean:
                    try:
                        TreeReader(file, Source(src.path, src.tree),
                                   [Expression(text, role) for _, _, text, role in roles],
                                   context)
                    except InputError as exc:
                        problems.add(section, None, str(exc))
    problems.raise_if_any()
