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

The TOML analysis configuration will live in this module too; it is not written yet.
"""

from __future__ import annotations

import math
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
