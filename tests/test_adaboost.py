"""The AdaBoost family: TMVA's split criteria, SAMME equivalence, TMVA tutorial quality."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.boosting.adaboost import node_purity
from hepbdt.engine._types import CROSS_ENTROPY, GINI, MISCLASSIFICATION, SDIVSQRTSPLUSB
from hepbdt.engine.binning import BinMapper
from hepbdt.engine.grower import grow_tree
from hepbdt.engine.split import SplitParams, best_split_naive, node_score
from hepbdt.persistence import load_model

CLASSIFICATION = {"gini": GINI, "cross_entropy": CROSS_ENTROPY,
                  "misclassification": MISCLASSIFICATION, "sdivsqrtsplusb": SDIVSQRTSPLUSB}


def _tmva_index(criterion: int, s: float, b: float) -> float:
    """TMVA's separation indices (GiniIndex.cxx, CrossEntropy.cxx, ...), written out."""
    n = s + b
    if n <= 0:
        return 0.0
    p = s / n
    if criterion == SDIVSQRTSPLUSB:
        return s / math.sqrt(n)
    if criterion == GINI:
        return p * (1 - p)
    if criterion == CROSS_ENTROPY:
        return 0.0 if p <= 0 or p >= 1 else -(p * math.log(p) + (1 - p) * math.log(1 - p))
    return 1 - max(p, 1 - p)


@pytest.mark.parametrize("criterion", list(CLASSIFICATION.values()))
def test_gain_is_tmva_separation_gain_times_parent_weight(criterion):
    rng = np.random.default_rng(criterion)
    for _ in range(200):
        sl, bl, sr, br = rng.uniform(0.1, 10, 4)
        s, b = sl + sr, bl + br
        gain = (node_score(criterion, sl, bl, 0.0, 0.0) + node_score(criterion, sr, br, 0.0, 0.0)
                - node_score(criterion, s, b, 0.0, 0.0))
        tmva = (_tmva_index(criterion, s, b) - (sl + bl) / (s + b) * _tmva_index(criterion, sl, bl)
                - (sr + br) / (s + b) * _tmva_index(criterion, sr, br))
        assert gain == pytest.approx((s + b) * tmva, rel=1e-9, abs=1e-9)


def _classification_problem(seed: int, n: int = 400, m: int = 3, negative: bool = False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.05] = np.nan
    y = (X[:, 0] + 0.5 * np.nan_to_num(X[:, 1]) + rng.normal(0, 0.7, n) > 0).astype(float)
    w = rng.gamma(2.0, 0.5, n)
    if negative:
        w[rng.random(n) < 0.2] *= -0.5
    mapper = BinMapper(max_bins=16).fit(X, np.abs(w))
    codes = mapper.transform(X)
    a = np.where(y == 1, w, 0).astype(np.float32)
    b = np.where(y == 1, 0, w).astype(np.float32)
    return codes, a, b, w.astype(np.float32), mapper


@pytest.mark.parametrize("name", list(CLASSIFICATION))
@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_root_split_equals_brute_force(name, negative, seed):
    codes, a, b, w, mapper = _classification_problem(seed, negative=negative)
    rows = np.arange(codes.shape[1], dtype=np.int32)
    for third in (w, np.ones_like(w)):  # event weights, or event counts as the AdaBoost family
        params = SplitParams(CLASSIFICATION[name], min_child_weight=0.05 * float(third.sum()))
        tree = grow_tree(codes, rows, a, b, third, mapper.n_bins_, params, max_depth=1)
        gain, feature, bin_, missing_left = best_split_naive(codes, rows, a, b, third,
                                                             mapper.n_bins_, params)
        assert tree.feature[0] == feature
        if feature >= 0:
            assert tree.bin_threshold[0] == bin_ and tree.missing_left[0] == missing_left
            assert tree.gain[0] == pytest.approx(gain, rel=1e-6)
            children = tree.sum_a[1:] + tree.sum_b[1:]
            assert np.all(children > 0)  # never a child with non-positive net weight


def test_node_purity():
    p = node_purity(np.array([3.0, 0.0, -1.0, 1.0]), np.array([1.0, 2.0, 3.0, -1.0]))
    assert p.tolist() == [0.75, 0.0, 0.0, 0.5]


def test_discrete_adaboost_matches_sklearn_samme_stumps():
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(7)
    n = 3000
    X = np.column_stack([rng.integers(0, 40, n), rng.integers(0, 25, n), rng.integers(-30, 30, n),
                         rng.integers(0, 60, n)]).astype(np.float32)
    logit = 0.08 * (X[:, 0] - 20) + 0.1 * (X[:, 1] - 12) - 0.002 * X[:, 2] ** 2 + 0.03 * np.sin(X[:, 3])
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    n_rounds = 20
    ours = BDTClassifier(boosting="adaboost", beta=1.0, max_depth=1, n_trees=n_rounds,
                         min_node_size=0.0, sig_to_bkg_fraction=None, random_state=0).fit(X, y, w)
    ref = AdaBoostClassifier(DecisionTreeClassifier(max_depth=1), n_estimators=n_rounds,
                             learning_rate=1.0, random_state=0).fit(X, y, sample_weight=w)
    forest = ours.forest_
    assert forest.n_trees == len(ref.estimators_) == n_rounds
    for t, stump in enumerate(ref.estimators_):
        root = int(forest.tree_offsets[t])
        assert forest.feature[root] == stump.tree_.feature[0], f"round {t}"
        assert forest.threshold[root] == pytest.approx(stump.tree_.threshold[0]), f"round {t}"
    # SAMME's weight for two classes is ln((1 - err) / err) + ln(K - 1) = ours with beta = 1.
    np.testing.assert_allclose(forest.tree_weights, ref.estimator_weights_, rtol=1e-6)
    # scikit-learn's two-class SAMME decision function is twice sum alpha T / sum alpha.
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X) / 2, atol=1e-9)


BDT = ("NTrees=850:MinNodeSize=2.5%:MaxDepth=3:BoostType=AdaBoost:AdaBoostBeta=0.5:"
       "UseBaggedBoost:BaggedSampleFraction=0.5:SeparationType=GiniIndex:nCuts=20")
BDTG = ("NTrees=1000:MinNodeSize=2.5%:BoostType=Grad:Shrinkage=0.10:UseBaggedBoost:"
        "BaggedSampleFraction=0.5:nCuts=20:MaxDepth=2")


def test_tmva_tutorial_bdt_matches_sklearn_adaboost(tmva_class_split):
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.metrics import roc_auc_score
    from sklearn.tree import DecisionTreeClassifier

    Xtr, ytr, wtr, Xte, yte, wte = tmva_class_split
    ours = BDTClassifier.from_tmva(BDT, random_state=1).fit(Xtr, ytr, wtr)
    ref = AdaBoostClassifier(DecisionTreeClassifier(max_depth=3), n_estimators=850,
                             random_state=0).fit(Xtr, ytr, sample_weight=wtr)
    auc_ours = roc_auc_score(yte, ours.decision_function(Xte), sample_weight=wte)
    auc_ref = roc_auc_score(yte, ref.decision_function(Xte), sample_weight=wte)
    print(f"TMVA BDT settings: hepbdt AUC {auc_ours:.4f}, sklearn AdaBoost {auc_ref:.4f}")
    assert auc_ours >= auc_ref - 0.005
    score = ours.decision_function(Xte)
    assert -1 <= score.min() and score.max() <= 1
    proba = ours.predict_proba(Xte)[:, 1]
    np.testing.assert_allclose(proba, (score + 1) / 2)


def test_tmva_tutorial_bdtg_matches_sklearn_gradient_boosting(tmva_class_split):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    Xtr, ytr, wtr, Xte, yte, wte = tmva_class_split
    ours = BDTClassifier.from_tmva(BDTG, random_state=1).fit(Xtr, ytr, wtr)
    ref = GradientBoostingClassifier(n_estimators=1000, learning_rate=0.1, max_depth=2,
                                     subsample=0.5, random_state=0).fit(Xtr, ytr, sample_weight=wtr)
    auc_ours = roc_auc_score(yte, ours.decision_function(Xte), sample_weight=wte)
    auc_ref = roc_auc_score(yte, ref.decision_function(Xte), sample_weight=wte)
    print(f"TMVA BDTG settings: hepbdt AUC {auc_ours:.4f}, sklearn GradientBoosting {auc_ref:.4f}")
    assert auc_ours >= auc_ref - 0.005


def _toy(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] + X[:, 2] + rng.normal(0, 0.5, n) > 0).astype(int)
    return X, y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("boosting, yes_no, lo, hi", [
    ("adaboost", True, -1, 1), ("adaboost", False, 0, 1), ("eps", True, -1, 1),
    ("bagging", True, -1, 1), ("bagging", False, 0, 1)])
def test_score_ranges_and_probabilities(boosting, yes_no, lo, hi):
    X, y, w = _toy()
    clf = BDTClassifier(boosting=boosting, use_yes_no_leaf=yes_no, n_trees=30, max_depth=3,
                        min_node_size=0.02, random_state=0).fit(X, y, w)
    s = clf.decision_function(X)
    assert lo - 1e-12 <= s.min() and s.max() <= hi + 1e-12 and np.all(np.isfinite(s))
    p = clf.predict_proba(X)
    assert np.all((p >= 0) & (p <= 1))
    assert clf.score(X, y) > 0.75
    assert clf.forest_.extra["boosting"] == boosting
    assert clf.forest_.extra["score_min"] == lo


def test_realadaboost_leaves_and_link():
    X, y, w = _toy()
    clf = BDTClassifier(boosting="realadaboost", n_trees=30, max_depth=2, min_node_size=0.02,
                        random_state=0).fit(X, y, w)
    f = clf.forest_
    assert f.aggregation == "sum"
    leaves = f.feature < 0
    p = np.clip(np.asarray(f.extra["purity"])[leaves], 1e-5, 1 - 1e-5)
    np.testing.assert_allclose(f.value[leaves], 0.5 * np.log(p / (1 - p)))
    s = clf.decision_function(X)
    np.testing.assert_allclose(clf.predict_proba(X)[:, 1], 1 / (1 + np.exp(-2 * s)))
    assert clf.score(X, y) > 0.75


def test_purity_is_stored_per_node_and_survives_save(tmp_path):
    X, y, w = _toy()
    clf = BDTClassifier(boosting="adaboost", n_trees=10, max_depth=3, min_node_size=0.02,
                        random_state=0).fit(X, y, w)
    f = clf.forest_
    purity = np.asarray(f.extra["purity"])
    assert purity.shape == (f.n_nodes,) and np.all((purity >= 0) & (purity <= 1))
    leaves = f.feature < 0
    np.testing.assert_array_equal(f.value[leaves], np.where(purity[leaves] > 0.5, 1.0, -1.0))
    clf.save(tmp_path / "m.json")
    again = load_model(tmp_path / "m.json")
    assert again.forest_.extra["purity"] == f.extra["purity"]
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))


@pytest.mark.parametrize("criterion", list(CLASSIFICATION))
def test_every_criterion_learns(criterion):
    X, y, w = _toy()
    clf = BDTClassifier(boosting="adaboost", criterion=criterion, n_trees=40, max_depth=3,
                        min_node_size=0.02, random_state=0).fit(X, y, w)
    assert clf.score(X, y) > 0.7


def test_deterministic_and_random_trees():
    X, y, w = _toy()
    kw = dict(boosting="adaboost", n_trees=20, subsample=0.5, subsample_mode="poisson",
              n_vars_per_node=2, min_node_size=0.02, random_state=5)
    a = BDTClassifier(**kw).fit(X, y, w).decision_function(X)
    b = BDTClassifier(**kw).fit(X, y, w).decision_function(X)
    np.testing.assert_array_equal(a, b)


def test_errors():
    X, y, w = _toy(300)
    with pytest.raises(ValueError, match="criterion"):
        BDTClassifier(boosting="adaboost", criterion="entropy").fit(X, y, w)
    with pytest.raises(ValueError, match="eval_set"):
        BDTClassifier(boosting="adaboost", n_trees=2).fit(X, y, w, eval_set=(X, y))
    with pytest.raises(ValueError, match="inverse_boost"):
        BDTClassifier(boosting="gradient", negative_weights="inverse_boost").fit(X, y, w)
    with pytest.raises(ValueError, match="n_vars_per_node"):
        BDTClassifier(boosting="adaboost", n_vars_per_node=0).fit(X, y, w)
    # both set the variables per node: n_vars_per_node won and colsample_bynode was ignored
    with pytest.raises(ValueError, match="give one of them"):
        BDTClassifier(boosting="adaboost", n_vars_per_node=2, colsample_bynode=0.75).fit(X, y, w)


def _stump_output(forest, t: int, X: np.ndarray) -> np.ndarray:
    """Tree t of a depth-1 forest on NaN-free X, walked with numpy (x < threshold goes left)."""
    root = int(forest.tree_offsets[t])
    if forest.feature[root] < 0:
        return np.full(len(X), forest.value[root])
    go_left = X[:, forest.feature[root]] < forest.threshold[root]
    return np.where(go_left, forest.value[forest.left[root]], forest.value[forest.right[root]])


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_purity_leaf_adaboost_weights_follow_tmva_formula(beta):
    # TMVA's AdaBoost with UseYesNoLeaf=False: r = sum w y (2h - 1) / sum w over the training
    # events, alpha = beta ln((1 + r) / (1 - r)), then w *= exp(-alpha y (2h - 1)),
    # renormalised: written out here with numpy on the forest's own stumps.
    X, y, w = _toy(n=600)
    clf = BDTClassifier(boosting="adaboost", use_yes_no_leaf=False, beta=beta, n_trees=3,
                        max_depth=1, min_node_size=0.0, sig_to_bkg_fraction=None,
                        random_state=0).fit(X, y, w)
    f = clf.forest_
    y_pm = np.where(y == 1, 1.0, -1.0)
    weights = w / w.sum()
    for t in range(f.n_trees):
        margin = y_pm * (2.0 * _stump_output(f, t, X) - 1.0)
        r = np.sum(weights * margin) / weights.sum()
        alpha = beta * math.log((1 + r) / (1 - r))
        assert f.tree_weights[t] == pytest.approx(alpha, rel=1e-9), f"tree {t}"
        weights = weights * np.exp(-alpha * margin)


def test_first_tree_at_exactly_chance_is_refused():
    # No split (one value of x): the root's purity is 1/2 exactly, its yes/no leaf says
    # background, so the weighted error is 2/4 = 0.5 exactly: a tree of weight ln(1) = 0
    # that nothing can boost, refused rather than kept as a forest of zero-weight trees.
    X = np.zeros((4, 1), dtype=np.float32)
    with pytest.raises(ValueError, match=r"first tree's weighted error rate is 0\.5 "):
        BDTClassifier(boosting="adaboost", n_trees=3, max_depth=1, min_node_size=0.0,
                      sig_to_bkg_fraction=None).fit(X, [0, 1, 0, 1], [1.0, 1.0, 1.0, 1.0])


def test_yes_no_leaf_of_purity_one_half_is_background():
    # TMVA's DecisionTree: a node is signal (+1) when purity > NodePurityLimit, else -1.
    # x = 0 holds one signal and one background event: purity 1/2 exactly, so -1.
    X = np.array([[0.0], [0.0], [1.0], [1.0]], dtype=np.float32)
    clf = BDTClassifier(boosting="adaboost", beta=1.0, n_trees=1, max_depth=1, min_node_size=0.0,
                        sig_to_bkg_fraction=None).fit(X, [0, 1, 1, 1], [1.0, 1.0, 1.0, 1.0])
    assert clf.decision_function(X).tolist() == [-1.0, -1.0, 1.0, 1.0]
    assert clf.forest_.tree_weights[0] == pytest.approx(math.log(3.0))  # err = 1/4


def test_real_adaboost_pure_leaf_is_clipped():
    # Real AdaBoost's leaf 1/2 ln(p / (1 - p)) with p clipped to [c, 1 - c], c = 1e-5:
    # pure leaves give +-1/2 ln((1 - c) / c), not infinity.
    X = np.array([[0.0], [1.0], [2.0], [3.0]], dtype=np.float32)
    clf = BDTClassifier(boosting="realadaboost", n_trees=1, max_depth=1, min_node_size=0.0,
                        sig_to_bkg_fraction=None).fit(X, [0, 0, 1, 1], [1.0, 1.0, 1.0, 1.0])
    edge = 0.5 * math.log((1 - 1e-5) / 1e-5)
    np.testing.assert_allclose(clf.decision_function(X), [-edge, -edge, edge, edge], rtol=1e-12)


def test_negative_weighted_error_counts_as_its_magnitude():
    # TMVA's AdaBoost takes |err| when negative weights make the weighted error negative:
    # the misclassified event (signal at x = 0) weighs -0.5 of 3.5, so err = 1/7 and
    # alpha = ln((1 - 1/7) / (1/7)) = ln 6.
    X = np.array([[0.0], [0.0], [1.0]], dtype=np.float32)
    clf = BDTClassifier(boosting="adaboost", beta=1.0, n_trees=1, max_depth=1, min_node_size=0.0,
                        sig_to_bkg_fraction=None, negative_weights="keep").fit(
        X, [0, 1, 1], [2.0, -0.5, 2.0])
    assert clf.forest_.tree_weights[0] == pytest.approx(math.log(6.0), rel=1e-12)


@pytest.mark.parametrize("yes_no", [True, False])
def test_adaboost_training_curve_is_the_weighted_error_of_each_stage(yes_no):
    # train_loss_[t]: the weighted fraction of training events that the first t + 1 trees
    # classify wrongly (score above 0, or above 1/2 with purity leaves, means signal).
    X, y, w = _toy(n=500)
    clf = BDTClassifier(boosting="adaboost", use_yes_no_leaf=yes_no, n_trees=4, max_depth=2,
                        min_node_size=0.0, sig_to_bkg_fraction=None, random_state=0).fit(X, y, w)
    threshold = 0.0 if yes_no else 0.5
    expected = [np.sum(w[(s > threshold) != (y == 1)]) / np.sum(w)
                for s in clf.staged_decision_function(X)]
    np.testing.assert_allclose(clf.train_loss_, expected, rtol=1e-9)


def test_min_node_size_is_a_fraction_of_the_training_events():
    # TMVA's MinNodeSize=25 %: of 10 events, no leaf may hold fewer than 2.5. The best cut
    # without it isolates the one signal event; counted here by comparing x with the cut.
    X = np.arange(10, dtype=np.float32).reshape(-1, 1)
    y = np.r_[1, np.zeros(9, int)]
    y[5] = 1
    clf = BDTClassifier(boosting="adaboost", n_trees=1, max_depth=1, min_node_size=0.25,
                        sig_to_bkg_fraction=None).fit(X, y, np.ones(10))
    f = clf.forest_
    assert f.feature[0] == 0
    left = int(np.sum(X[:, 0] < f.threshold[0]))
    assert min(left, 10 - left) >= 2.5


def test_a_side_of_exactly_min_node_size_events_is_allowed():
    # TMVA's TrainNodeFast keeps a cut when (sl + bl) >= fMinSize on both sides: with
    # MinNodeSize=40 % of 10 events (4.0 exactly), the perfect 4 | 6 cut is allowed.
    X = np.arange(10, dtype=np.float32).reshape(-1, 1)
    y = np.r_[np.ones(4, int), np.zeros(6, int)]
    clf = BDTClassifier(boosting="adaboost", n_trees=1, max_depth=1, min_node_size=0.4,
                        sig_to_bkg_fraction=None).fit(X, y, np.ones(10))
    assert clf.decision_function(X).tolist() == [1.0] * 4 + [-1.0] * 6
