"""TMVA BDT option strings: parsing, TMVA defaults, errors that name the option, round trips."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier, BDTRegressor
from hepbdt.tmva_options import TMVAOptionError, parse_tmva_options, to_tmva_options

BDT = ("NTrees=850:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:AdaBoostBeta=0.5:"
       "UseBaggedBoost:BaggedSampleFraction=0.5:SeparationType=GiniIndex:nCuts=20")
BDTG = ("!H:!V:NTrees=1000:MinNodeSize=2.5%:BoostType=Grad:Shrinkage=0.10:UseBaggedBoost:"
        "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=2")
# The option strings of the reference models in ../shared/tmva (README there).
REFERENCE_CLASSIFIERS = [
    BDT,
    BDTG,
    "NTrees=200:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:UseYesNoLeaf=False:"
    "SeparationType=CrossEntropy:nCuts=20",
    "NTrees=300:MinNodeSize=2.5%:MaxDepth=4:BoostType=AdaBoost:AdaBoostBeta=1.0:"
    "UseYesNoLeaf=False:SeparationType=MisClassificationError:nCuts=40",
    "NTrees=100:MinNodeSize=5%:MaxDepth=3:BoostType=Bagging:BaggedSampleFraction=0.6:"
    "SeparationType=GiniIndex:nCuts=20",
]
REGRESSION_BDTG = ("NTrees=2000:BoostType=Grad:Shrinkage=0.1:UseBaggedBoost:"
                   "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=3")


def test_tutorial_bdt_string():
    clf = BDTClassifier.from_tmva(BDT)
    p = clf.get_params()
    assert p["boosting"] == "adaboost"
    assert p["n_trees"] == 850 and p["max_depth"] == 3 and p["n_cuts"] == 20
    assert p["min_node_size"] == pytest.approx(0.025)
    assert p["beta"] == 0.5 and p["criterion"] == "gini" and p["use_yes_no_leaf"] is True
    assert p["subsample"] == 0.5 and p["subsample_mode"] == "poisson"
    assert p["negative_weights"] == "inverse_boost"  # TMVA's default for AdaBoost
    assert p["sig_to_bkg_fraction"] == 1.0


def test_tutorial_bdtg_string():
    p = BDTClassifier.from_tmva(BDTG).get_params()
    # loss None and "tmva": the deviance and ratio 1 for two classes, softmax unweighted for more
    assert p["boosting"] == "gradient" and p["loss"] is None and p["sig_to_bkg_fraction"] == "tmva"
    assert p["learning_rate"] == pytest.approx(0.1) and p["n_trees"] == 1000 and p["max_depth"] == 2
    assert p["negative_weights"] == "ignore"  # as ROOT 6.40 trains a BDTG at the default
    assert p["verbose"] is False


def test_tmva_defaults_fill_unspecified_options():
    p = parse_tmva_options("BoostType=AdaBoost", "classifier")
    assert (p["n_trees"], p["max_depth"], p["n_cuts"]) == (800, 3, 20)
    assert p["min_node_size"] == pytest.approx(0.05)
    assert p["subsample"] == 1.0 and p["n_vars_per_node"] is None


def test_names_are_case_insensitive_and_flags():
    p = parse_tmva_options("ntrees=10:MAXDEPTH=2:boosttype=adaboost:!UseYesNoLeaf:V", "classifier")
    assert p["n_trees"] == 10 and p["max_depth"] == 2 and p["use_yes_no_leaf"] is False
    assert p["verbose"] is True
    assert parse_tmva_options("MinNodeSize=3", "classifier")["min_node_size"] == pytest.approx(0.03)


def test_realadaboost_is_adaboost_with_purity_leaves_as_in_tmva():
    p = parse_tmva_options("BoostType=RealAdaBoost", "classifier")
    assert p["boosting"] == "adaboost" and p["use_yes_no_leaf"] is False


def test_randomised_trees():
    p = parse_tmva_options("UseRandomisedTrees:UseNvars=3:UsePoissonNvars=False", "classifier")
    assert p["n_vars_per_node"] == 3
    p = parse_tmva_options("UseRandomisedTrees:!UsePoissonNvars", "classifier")
    assert p["n_vars_per_node"] == "sqrt"
    with pytest.raises(TMVAOptionError, match="UsePoissonNvars"):
        parse_tmva_options("UseRandomisedTrees", "classifier")


@pytest.mark.parametrize("option, policy", [
    ("NegWeightTreatment=IgnoreNegWeightsInTraining", "ignore"),
    ("NegWeightTreatment=NoNegWeightsInTraining", "ignore"),
    ("NegWeightTreatment=PairNegWeightsGlobal", "pair"),
    ("NegWeightTreatment=Pray", "keep"),
    ("IgnoreNegWeightsInTraining", "ignore"),
])
def test_negative_weight_treatments(option, policy):
    assert parse_tmva_options(option, "classifier")["negative_weights"] == policy


@pytest.mark.parametrize("options, name", [
    ("NTrees=10:Frobnicate=3", "Frobnicate"),
    ("PruneMethod=CostComplexity:PruneStrength=30", "PruneMethod"),
    ("BoostType=AdaCost", "BoostType"),
    ("UseFisherCuts", "UseFisherCuts"),
    ("SeparationType=GiniIndexWithLaplace", "SeparationType"),
    ("SeparationType=RegressionVariance", "SeparationType"),
    ("NodePurityLimit=0.6", "NodePurityLimit"),
    ("Css=0.5", "Css"),
    ("nEventsMin=100", "nEventsMin"),
    ("MaxDepth=3:MaxDepth=4", "MaxDepth"),
    ("NTrees", "NTrees"),
    ("NTrees=many", "NTrees"),
    ("HuberQuantile=0.5", "HuberQuantile"),
    ("DoPreselection", "DoPreselection"),
    ("VarTransform=D", "VarTransform"),
])
def test_errors_name_the_option(options, name):
    with pytest.raises(TMVAOptionError, match=name):
        parse_tmva_options(options, "classifier")


def test_leading_tildes_are_read_as_tmva_reads_them():
    # TMVA::Configurable::ParseOptions strips a token's leading '~' (its mark of an option
    # read, in GetOptions()), before a '!' only. The real Configurable (shared/tmva-reader's
    # libTMVA through PyROOT, NTrees, UseBaggedBoost, V declared) read "~NTrees=100:
    # ~UseBaggedBoost" as 100 and True, "~~NTrees=100:~!V" as 100 and V False, and left
    # "!~V" unread (CheckForUnusedOptions then stops). hepbdt refused every '~'.
    tilde = parse_tmva_options("~NTrees=100:~UseBaggedBoost", "classifier")
    assert tilde == parse_tmva_options("NTrees=100:UseBaggedBoost", "classifier")
    assert tilde["n_trees"] == 100 and tilde["subsample_mode"] == "poisson"
    double = parse_tmva_options("~~NTrees=100:~!V", "classifier")
    assert double["n_trees"] == 100 and double["verbose"] is False
    with pytest.raises(TMVAOptionError, match="~V"):
        parse_tmva_options("!~V", "classifier")


def test_unknown_option_lists_supported_ones():
    with pytest.raises(ValueError, match="supported options: .*NTrees"):
        BDTClassifier.from_tmva("Frobnicate=1")


def test_options_without_effect_are_accepted():
    p = parse_tmva_options("H:!V:VerbosityLevel=Debug:CreateMVAPdfs:DoBoostMonitor:"
                           "PruneMethod=NoPruning:PruneStrength=5", "classifier")
    assert p == parse_tmva_options("", "classifier")


def test_regressor_strings():
    p = BDTRegressor.from_tmva(REGRESSION_BDTG).get_params()
    assert p["boosting"] == "gradient" and p["loss"] == "huber" and p["huber_alpha"] == 0.7
    assert p["min_node_size"] == pytest.approx(0.002)  # TMVA's regression default 0.2 %
    assert BDTRegressor.from_tmva(REGRESSION_BDTG + ":RegressionLossFunctionBDTG=LeastSquares"
                                  ).loss == "squared"
    with pytest.raises(TMVAOptionError, match="AdaBoostR2"):
        BDTRegressor.from_tmva("NTrees=100:MinNodeSize=1.0%:BoostType=AdaBoostR2")
    with pytest.raises(TMVAOptionError, match="BoostType"):
        BDTRegressor.from_tmva("NTrees=100")  # TMVA's regression default is AdaBoostR2
    with pytest.raises(TMVAOptionError, match="MaxDepth"):
        BDTRegressor.from_tmva("BoostType=Grad")  # TMVA's regression default depth is 50


@pytest.mark.parametrize("options", REFERENCE_CLASSIFIERS)
def test_round_trip_classifier(options):
    clf = BDTClassifier.from_tmva(options)
    again = BDTClassifier.from_tmva(clf.to_tmva())
    assert again.get_params() == clf.get_params()


def test_round_trip_regressor():
    reg = BDTRegressor.from_tmva(REGRESSION_BDTG)
    assert BDTRegressor.from_tmva(reg.to_tmva()).get_params() == reg.get_params()


def test_to_tmva_of_native_estimators():
    s = BDTClassifier(boosting="adaboost", n_trees=50, max_depth=2, min_node_size=0.05,
                      n_vars_per_node=2, negative_weights="pair").to_tmva()
    assert "BoostType=AdaBoost" in s and "UseNvars=2" in s and "PairNegWeightsGlobal" in s
    assert "nCuts=-1" in s  # the quantile bins alone: the AdaBoost family's full scan
    assert "SkipNormalization" in BDTClassifier(  # gradient, raw weights
        n_trees=20, min_node_size=0.01, negative_weights="pair", n_cuts=20).to_tmva()
    with pytest.raises(TMVAOptionError, match="n_trees='auto'"):  # TMVA needs a count
        BDTClassifier(min_node_size=0.01, negative_weights="pair", max_depth=5).to_tmva()
    with pytest.raises(TMVAOptionError, match="max_leaves=15"):  # the automatic leaf-wise trees
        BDTClassifier(min_node_size=0.01, negative_weights="pair").to_tmva()
    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 2)).astype(np.float32)
    fitted = BDTClassifier(min_node_size=0.01, max_depth=2, negative_weights="pair", n_cuts=20).fit(
        X, X[:, 0] > 0)
    assert f"NTrees={fitted.n_trees_}:" in fitted.to_tmva()  # the count "auto" kept
    for bad in (dict(boosting="newton"), dict(boosting="eps"), dict(boosting="realadaboost"),
                dict(negative_weights="abs"), dict(negative_weights="regress"), dict(),
                dict(colsample_bytree=0.5),
                dict(subsample=0.5, subsample_mode="uniform")):
        with pytest.raises(TMVAOptionError):
            to_tmva_options(BDTClassifier(n_trees=20, min_node_size=0.01, **bad).get_params(),
                            "classifier")


@pytest.mark.parametrize(("max_bins", "n_cuts"), [(8, 0), (32, 20)])
def test_to_tmva_refuses_bins_an_option_string_cannot_hold(max_bins, n_cuts):
    """A TMVA string stands for 255 quantile bins: written for 8 or 32, it was read back as
    255 and the rebuilt estimator scored up to 0.47 away from the one that wrote it."""
    clf = BDTClassifier(boosting="adaboost", n_trees=5, max_depth=2, min_node_size=0.05,
                        max_bins=max_bins, n_cuts=n_cuts, negative_weights="pair")
    with pytest.raises(TMVAOptionError, match="max_bins"):
        clf.to_tmva()
    rng = np.random.default_rng(4)
    X = rng.normal(size=(400, 2))
    y = X[:, 0] + 0.3 * rng.normal(size=400) > 0
    clf.set_params(max_bins=255)
    again = BDTClassifier.from_tmva(clf.to_tmva())
    np.testing.assert_array_equal(again.fit(X, y).decision_function(X),
                                  clf.fit(X, y).decision_function(X))


def test_overrides_and_kind_check():
    clf = BDTClassifier.from_tmva(BDT, random_state=3, n_jobs=1)
    assert clf.random_state == 3 and clf.n_jobs == 1
    with pytest.raises(ValueError, match="kind"):
        parse_tmva_options("NTrees=3", "ranking")


def _tmva_nnodesmax_depth(n_nodes: int) -> int:
    """MethodBDT::ProcessOptions's NNodesMax -> MaxDepth, transcribed: tmp = 1; while
    (tmp < fNNodesMax) { tmp += 2 * tmp; fMaxDepth++; }."""
    nodes, depth = 1, 0
    while nodes < n_nodes:
        nodes += 2 * nodes
        depth += 1
    return depth


@pytest.mark.parametrize("n_nodes", [2, 3, 4, 9, 10, 27, 28])
def test_nnodesmax_gives_tmvas_depth_at_each_boundary(n_nodes):
    # the steps of TMVA's loop: 3 nodes give depth 1 and 9 depth 2 (not 2 and 3)
    assert parse_tmva_options(f"NNodesMax={n_nodes}")["max_depth"] == _tmva_nnodesmax_depth(n_nodes)
    assert {n: _tmva_nnodesmax_depth(n) for n in (3, 4, 9, 10)} == {3: 1, 4: 2, 9: 2, 10: 3}


def test_to_tmva_writes_the_huber_quantile_set_by_hand():
    # a Huber regressor of alpha 0.9 written without HuberQuantile trains TMVA's 0.7
    fixed = {"n_trees": 10, "min_node_size": 0.05, "negative_weights": "keep", "n_cuts": 20}
    huber = BDTRegressor(loss="huber", huber_alpha=0.9, **fixed).get_params()
    tokens = to_tmva_options(huber, "regressor").split(":")
    assert "RegressionLossFunctionBDTG=Huber" in tokens and "HuberQuantile=0.9" in tokens
    squared = to_tmva_options(BDTRegressor(loss="squared", **fixed).get_params(), "regressor")
    assert "HuberQuantile" not in squared


def test_bagged_sample_fraction_at_its_bound_is_the_estimators():
    # MAX_POISSON_MEAN itself is a valid subsample of the estimator, so a valid option
    from hepbdt.tmva_options import MAX_POISSON_MEAN

    p = parse_tmva_options(f"UseBaggedBoost:BaggedSampleFraction={MAX_POISSON_MEAN:.0f}")
    assert p["subsample"] == MAX_POISSON_MEAN and p["subsample_mode"] == "poisson"
    BDTClassifier(subsample=MAX_POISSON_MEAN, subsample_mode="poisson").check_params()



@pytest.mark.parametrize("boosting", ["adaboost", "gradient"])
def test_to_tmva_writes_one_cut_as_one_cut(boosting):
    # n_cuts=1 (one equal-width cut) read back as the full scan (n_cuts=0) or, for Grad,
    # as no nCuts at all (TMVA's default, 20)
    given = {"boosting": boosting, "n_trees": 10, "max_depth": 3, "min_node_size": 0.05,
             "n_cuts": 1, "negative_weights": "keep"}
    tokens = to_tmva_options(BDTClassifier(**given).get_params()).split(":")
    assert "nCuts=1" in tokens
    assert parse_tmva_options(":".join(tokens))["n_cuts"] == given["n_cuts"]
