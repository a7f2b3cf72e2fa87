"""Audit of hepbdt.tmva_options against TMVA's own option handling.

References (ROOT, tmva/tmva): Option.h (Option<T>::SetValueLocal reads numbers with
``std::stringstream >>``, Option<Bool_t>::SetValueLocal takes 1/true/ktrue/t and
0/false/kfalse/f, anything else is kFATAL), Configurable.cxx (ParseOptions: '!' only before a
bare boolean name; a bare token that is a predefined value sets that option, "loose option
checking"; CheckForUnusedOptions is kFATAL), MethodBDT.cxx (DeclareOptions, ProcessOptions,
Init, GetBaggedSubSample's Poisson counts).
"""

from __future__ import annotations

import pytest

from hepbdt import BDTClassifier
from hepbdt.tmva_options import TMVA_OPTIONS, TMVAOptionError, parse_tmva_options


@pytest.mark.parametrize("options, name", [
    ("NTrees=1_000", "NTrees"),       # Python int() gives 1000; TMVA's stream reads 1
    ("MaxDepth=\u0663", "MaxDepth"),  # a non-ASCII digit: int() gives 3; TMVA reads nothing
    ("AdaBoostBeta=0_5", "AdaBoostBeta"),
    ("MinNodeSize=1_0%", "MinNodeSize"),  # TString::IsFloat rejects it (kFATAL)
])
def test_numbers_are_read_as_tmva_reads_them(options: str, name: str) -> None:
    """Option.h: numbers are read by stream extraction, ASCII digits only."""
    with pytest.raises(TMVAOptionError, match=name):
        parse_tmva_options(options, "classifier")


@pytest.mark.parametrize("options, name", [
    ("AdaBoostBeta=nan", "AdaBoostBeta"), ("Shrinkage=inf:BoostType=Grad", "Shrinkage"),
    ("AdaBoostBeta=1e400", "AdaBoostBeta"), ("SigToBkgFraction=Infinity", "SigToBkgFraction"),
])
def test_non_finite_numbers_are_refused(options: str, name: str) -> None:
    """Stream extraction of a double fails on nan/inf (TMVA takes 0); Python's float() takes them."""
    with pytest.raises(TMVAOptionError, match=name):
        parse_tmva_options(options, "classifier")


@pytest.mark.parametrize("options", ["!UseBaggedBoost=True", "!UseBaggedBoost=False", "!V=1"])
def test_negation_with_a_value_is_refused(options: str) -> None:
    """Configurable::ParseOptions: '!name=value' matches no option and is kFATAL as unused;
    hepbdt read '!UseBaggedBoost=True' as False and '!UseBaggedBoost=False' as True."""
    with pytest.raises(TMVAOptionError, match="'!' only before a bare"):
        parse_tmva_options(options, "classifier")


def test_boolean_words_are_tmvas() -> None:
    """Option<Bool_t>::SetValueLocal: 1, true, ktrue, t / 0, false, kfalse, f (any case)."""
    for word in ("1", "True", "kTRUE", "T", "t"):
        assert parse_tmva_options(f"UseBaggedBoost={word}", "classifier")["subsample_mode"] == "poisson"
    for word in ("0", "False", "kFALSE", "F"):
        assert parse_tmva_options(f"UseYesNoLeaf={word}", "classifier")["use_yes_no_leaf"] is False
    for word in ("yes", "no", "on"):
        with pytest.raises(TMVAOptionError, match="UseBaggedBoost"):
            parse_tmva_options(f"UseBaggedBoost={word}", "classifier")


def test_negative_nnodesmax_is_refused() -> None:
    """MethodBDT: fNNodesMax is a UInt_t, so NNodesMax=-1 is 4294967295 nodes in TMVA
    (ProcessOptions' loop turns it into a deep tree); hepbdt silently used MaxDepth."""
    with pytest.raises(TMVAOptionError, match="NNodesMax"):
        parse_tmva_options("NNodesMax=-1", "classifier")
    assert parse_tmva_options("NNodesMax=0", "classifier")["max_depth"] == 3
    assert parse_tmva_options("NNodesMax=10", "classifier")["max_depth"] == 3  # 1, 3, 9, 27


@pytest.mark.parametrize("value", ["0", "-0.5"])
def test_old_bagging_fraction_is_checked_and_named(value: str) -> None:
    """GradBaggingFraction is fBaggedSampleFraction's old name (DeclareOptions); it was passed
    on unchecked (a later fit blamed ``subsample``)."""
    with pytest.raises(TMVAOptionError, match="GradBaggingFraction"):
        parse_tmva_options(f"UseBaggedGrad:GradBaggingFraction={value}", "classifier")
    p = parse_tmva_options("UseBaggedGrad:GradBaggingFraction=0.4", "classifier")
    assert (p["subsample"], p["subsample_mode"]) == (0.4, "poisson")


def test_a_bare_value_names_the_option_tmva_would_set() -> None:
    """Configurable::ParseOptions' loose checking reads a bare 'Grad' as BoostType=Grad; the
    error said only that 'Grad' is not a known option."""
    with pytest.raises(TMVAOptionError, match="BoostType=Grad"):
        parse_tmva_options("NTrees=10:Grad", "classifier")
    with pytest.raises(TMVAOptionError, match="SeparationType=CrossEntropy"):
        parse_tmva_options("crossentropy", "classifier")


def test_percent_on_an_option_without_it_says_so() -> None:
    """Only MinNodeSize strips '%' (MethodBDT::SetMinNodeSize); TMVA's stream would read
    BaggedSampleFraction=50% as 50."""
    with pytest.raises(TMVAOptionError, match="only MinNodeSize takes %"):
        parse_tmva_options("UseBaggedBoost:BaggedSampleFraction=50%", "classifier")


def test_uniform_subsample_of_bagging_has_no_tmva_string() -> None:
    """GetBaggedSubSample draws Poisson(BaggedSampleFraction) copies of every event; hepbdt's
    subsample_mode='uniform' with subsample < 1 draws without replacement (_loop._draw), yet
    to_tmva wrote it as BaggedSampleFraction=subsample."""
    base = dict(boosting="bagging", n_trees=10, min_node_size=0.05, negative_weights="keep")
    with pytest.raises(TMVAOptionError, match="subsample_mode"):
        BDTClassifier(**base, subsample=0.5, subsample_mode="uniform").to_tmva()
    assert "BaggedSampleFraction=0.5" in BDTClassifier(**base, subsample=0.5,
                                                       subsample_mode="poisson").to_tmva()
    assert "BaggedSampleFraction=1" in BDTClassifier(**base).to_tmva()  # Poisson(1) bootstrap


def test_defaults_are_tmvas() -> None:
    """MethodBDT::DeclareOptions and Init (classification, regression)."""
    expected = {"NTrees": (800, 800), "MaxDepth": (3, 50), "MinNodeSize": (5.0, 0.2),
                "nCuts": (20, 20), "BoostType": ("AdaBoost", "AdaBoostR2"),
                "AdaBoostBeta": (0.5, 0.5), "Shrinkage": (1.0, 1.0),
                "BaggedSampleFraction": (0.6, 0.6), "UsePoissonNvars": (True, True),
                "UseYesNoLeaf": (True, False), "SeparationType": ("GiniIndex", "RegressionVariance"),
                "NegWeightTreatment": ("InverseBoostNegWeights", "InverseBoostNegWeights"),
                "SigToBkgFraction": (1.0, 1.0), "NodePurityLimit": (0.5, 0.5),
                "RegressionLossFunctionBDTG": ("Huber", "Huber"), "HuberQuantile": (0.7, 0.7),
                "PruneMethod": ("NoPruning", "NoPruning"), "PruningValFraction": (0.5, 0.5)}
    for name, defaults in expected.items():
        assert TMVA_OPTIONS[name][1:] == defaults, name
