"""The split-gain ranking counts the trees the model predicts with (every class's trees of
a multi-class forest, every uBoost step's, each SAMME tree once), and the multi-class
overtraining check and training AUC compare training and test at one class mix."""

from __future__ import annotations

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.cli import main
from hepbdt.evaluation import multiclass_overtraining_test, one_vs_rest_auc, tmva_importance
from hepbdt.evaluation.multiclass import class_mix_weights
from hepbdt.evaluation.ranking import counted_trees
from tests.ntuples import write_ttree

# -- the split-gain ranking ---------------------------------------------------------------


def _data(n: int, n_classes: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    signal = X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] + rng.normal(0, 0.7, n)
    cuts = [0.0] if n_classes == 2 else np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    return X, np.digitize(signal, cuts), rng.uniform(0.5, 1.5, n)


def _trees_used(score, forest, n_trees: int | None = None) -> list[int]:
    """The trees whose leaf values change ``score()``: each tree's values are shifted by 1
    in turn (the forest's dense copy follows, keyed on a checksum of the values)."""
    base = np.asarray(score())
    used = []
    for t in range(forest.n_trees if n_trees is None else n_trees):
        nodes = slice(int(forest.tree_offsets[t]), int(forest.tree_offsets[t + 1]))
        original = forest.value[nodes].copy()
        forest.value[nodes] += 1.0
        try:
            if not np.allclose(np.asarray(score()), base, rtol=0, atol=1e-12):
                used.append(t)
        finally:
            forest.value[nodes] = original
    forest.dense()
    return used


def _walked_gains(forest, trees: list[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per feature, |tree weight| x gain summed, the split count and each tree's squared
    gains as fractions (for the quadrature form), walking each tree from its root."""
    weighted = np.zeros(forest.n_features)
    count = np.zeros(forest.n_features, dtype=np.int64)
    quadrature = np.zeros(forest.n_features)
    for t in trees:
        squares = np.zeros(forest.n_features)
        stack = [int(forest.tree_offsets[t])]
        while stack:
            node = stack.pop()
            f = int(forest.feature[node])
            if f < 0:
                continue
            weighted[f] += abs(forest.tree_weights[t]) * forest.gain[node]
            count[f] += 1
            squares[f] += forest.gain[node] ** 2
            stack += [int(forest.left[node]), int(forest.right[node])]
        if squares.sum() > 0:
            quadrature += abs(forest.tree_weights[t]) * squares / squares.sum()
    return weighted, count, np.sqrt(quadrature)


def _fit(kind: str):
    warnings.simplefilter("ignore")
    if kind == "binary":
        X, y, w = _data(1500, 2, 1)
        return hepbdt.BDTClassifier(boosting="gradient", n_trees=10, max_depth=3,
                                    random_state=0).fit(X, y, w), X
    if kind in ("gradient", "newton"):
        X, y, w = _data(1500, 3, 2)
        return hepbdt.BDTClassifier(boosting=kind, n_trees=6, max_depth=3,
                                    random_state=0).fit(X, y, w), X
    if kind == "samme":
        X, y, w = _data(1500, 3, 3)
        return hepbdt.BDTClassifier(boosting="adaboost", n_trees=6, max_depth=2,
                                    random_state=0).fit(X, y, w), X
    if kind == "uboost":
        X, y, _ = _data(1500, 2, 4)
        return hepbdt.BDTClassifier(boosting="adaboost", decorrelation="uboost",
                                    decorrelation_steps=3, n_trees=4, max_depth=2,
                                    random_state=0).fit(X, y, decorrelate=X[:, 3]), X
    X, y, w = _data(3000, 3, 5)  # "auto": held-out early stopping cuts the forest
    return hepbdt.BDTClassifier(boosting="gradient", n_trees="auto", learning_rate=0.5,
                                max_depth=3, random_state=0).fit(X, y, w), X


@pytest.mark.parametrize("kind", ["binary", "gradient", "newton", "samme", "uboost", "auto"])
def test_ranking_counts_the_trees_the_prediction_uses(kind):
    model, X = _fit(kind)
    forest = model.forest_
    used = _trees_used(lambda: model.decision_function(X[:300]), forest)
    assert used == list(range(forest.n_trees))  # the model predicts with every stored tree
    weighted, count, quadrature = _walked_gains(forest, used)
    ranking = tmva_importance(model)
    np.testing.assert_allclose(ranking.importance, weighted / weighted.sum(), rtol=1e-12)
    np.testing.assert_allclose(ranking.importance, model.feature_importances_, rtol=1e-12)
    np.testing.assert_allclose(tmva_importance(model, quadrature=True).importance,
                               quadrature / quadrature.sum(), rtol=1e-12)
    if kind == "samme":
        # K copies of each grown tree, one a class, with the same splits: counted once
        k, rounds = forest.n_classes, forest.n_rounds
        for c in range(1, k):
            first, copy = forest.tree_slice(0), forest.tree_slice(c * rounds)
            np.testing.assert_array_equal(forest.feature[first], forest.feature[copy])
            np.testing.assert_array_equal(forest.gain[first], forest.gain[copy])
        np.testing.assert_array_equal(ranking.split_count * k, count)
        assert model.n_trees_ == rounds
    else:
        np.testing.assert_array_equal(ranking.split_count, count)
    if kind in ("gradient", "newton", "auto"):
        assert forest.n_trees == 3 * model.n_trees_ and ranking.split_count.sum() == \
            int((forest.feature >= 0).sum())
    if kind == "uboost":
        assert forest.n_trees == 3 * model.n_trees_
    if kind == "auto":
        assert "kept" in model.n_trees_reason_ and model.n_trees_ < model.validation_loss_.size


@pytest.mark.parametrize("kind", ["gradient", "uboost"])
def test_a_model_keeping_fewer_rounds_counts_those_of_every_class_or_step(kind):
    model, X = _fit(kind)
    forest = model.forest_
    if kind == "uboost":
        def score():
            return forest.raw_score(X[:300], n_trees=2)
    else:
        def score():
            return forest.class_scores(X[:300], n_rounds=2)
    used = _trees_used(score, forest)
    np.testing.assert_array_equal(counted_trees(forest, 2), used)
    assert len(used) == 6  # two trees of each of the 3 classes or steps
    ranking = tmva_importance(SimpleNamespace(forest_=forest, n_trees_=2))
    weighted, count, _ = _walked_gains(forest, used)
    np.testing.assert_allclose(ranking.importance, weighted / weighted.sum(), rtol=1e-12)
    np.testing.assert_array_equal(ranking.split_count, count)


# -- the multi-class overtraining check and training AUC -------------------------------------

MEANS = np.array([0.0, 1.0, 3.0])  # class 0 lies near class 1 and far from class 2


def _posterior_sample(n: int, seed: int):
    """Class indices, a 1-d feature N(MEANS[y], 1) and its exact class posteriors: the
    other classes' P(class k) differ, so the rest's distribution depends on their mix."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    x = rng.normal(MEANS[y], 1.0)
    logits = -0.5 * (x[:, None] - MEANS[None, :]) ** 2
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    return y, proba / proba.sum(axis=1, keepdims=True), x


def _weights(y: np.ndarray, factors, seed: int) -> np.ndarray:
    return np.asarray(factors)[y] * np.random.default_rng(seed).uniform(0.5, 1.5, y.size)


def test_per_class_weight_factors_are_not_overtraining():
    y_tr, p_tr, _ = _posterior_sample(20000, 40)
    y_te, p_te, _ = _posterior_sample(20000, 41)
    w_tr = _weights(y_tr, [1.0, 1.0, 1.0], 42)  # as norm = "equal_num_events"
    w_te = _weights(y_te, [50.0, 0.2, 3.0], 43)  # physical: very different class sums
    raw = multiclass_overtraining_test(p_tr, y_tr, w_tr, p_te, y_te, w_te,
                                       match_class_mix=False)
    assert raw.verdict == "overtrained"  # what the mismatched mixes gave
    check = multiclass_overtraining_test(p_tr, y_tr, w_tr, p_te, y_te, w_te)
    assert check.passed and check.verdict != "overtrained"
    for part in check.per_class:
        assert min(part.signal.ks_pvalue, part.background.ks_pvalue) > 0.01
    # the factors give the training the test's class mix
    sums_tr = np.bincount(y_tr, weights=w_tr * check.train_class_factors[y_tr])
    sums_te = np.bincount(y_te, weights=w_te)
    np.testing.assert_allclose(sums_tr / sums_tr.sum(), sums_te / sums_te.sum(), rtol=1e-12)
    # the training AUC at the test's class mix agrees with the test AUC within statistics
    auc_te = one_vs_rest_auc(y_te, p_te, w_te)
    auc_raw = one_vs_rest_auc(y_tr, p_tr, w_tr)
    auc_tr = one_vs_rest_auc(y_tr, p_tr, class_mix_weights(y_tr, w_tr, y_te, w_te))
    assert np.max(np.abs(auc_raw - auc_te)) > 0.03
    np.testing.assert_allclose(auc_tr, auc_te, atol=0.01)


def test_class_mix_weights_keeps_the_total_and_leaves_a_missing_class_alone():
    y = np.array([0, 0, 1, 1, 2, 3])
    w = np.array([1.0, 1.0, 2.0, 2.0, 4.0, 7.0])
    reference_y = np.array([0, 1, 1, 2, 2, 2])
    out = class_mix_weights(y, w, reference_y, np.ones(6))
    assert out[5] == 7.0  # class 3 is not in the reference
    assert out[:5].sum() == pytest.approx(w[:5].sum())
    np.testing.assert_allclose(np.bincount(y[:5], weights=out[:5]) / out[:5].sum(),
                               [1 / 6, 2 / 6, 3 / 6])
    with pytest.raises(ValueError, match="class indices"):
        class_mix_weights(np.array([0.5, 1.0]), None, y, None)


@pytest.mark.parametrize("where", ["own class", "other classes"])
def test_overtraining_is_still_detected_with_per_class_weight_factors(where):
    y_tr, p_tr, _ = _posterior_sample(6000, 50)
    y_te, p_te, _ = _posterior_sample(6000, 51)
    w_tr = _weights(y_tr, [1.0, 1.0, 1.0], 52)
    w_te = _weights(y_te, [50.0, 0.2, 3.0], 53)
    p_tr = p_tr.copy()
    if where == "own class":  # training scores of class 1 too good
        p_tr[y_tr == 1, 1] = np.clip(p_tr[y_tr == 1, 1] + 0.2, 0, 1)
        flagged = 1
    else:  # class 2's training events too far from class 0
        p_tr[y_tr == 2, 0] *= 0.2
        flagged = 0
    result = multiclass_overtraining_test(p_tr, y_tr, w_tr, p_te, y_te, w_te)
    assert result.per_class[flagged].verdict == "overtrained" and not result.passed
    part = result.per_class[flagged]
    assert (part.signal if where == "own class" else part.background).ks_pvalue < 1e-6


# -- end to end: a healthy model trained with norm = "equal_num_events" ---------------------


@pytest.fixture(scope="module")
def skewed_ntuple(tmp_path_factory) -> Path:
    """Three classes of very different physical weights, separated unevenly in x and y."""
    path = tmp_path_factory.mktemp("mix") / "events.root"
    rng = np.random.default_rng(11)
    with uproot.recreate(path) as file:
        for i, (name, mean, weight) in enumerate(
                (("qcd", 0.0, 80.0), ("signal", 1.0, 0.05), ("ttbar", 3.0, 4.0))):
            n = 4000
            write_ttree(file, name, {"x": rng.normal(mean, 1.0, n).astype(np.float32),
                                     "y": rng.normal(0.5 * mean, 1.0, n).astype(np.float32),
                                     "w": weight * rng.uniform(0.8, 1.2, n),
                                     "event": np.arange(n) + n * i})
    return path


def test_summary_of_a_normalised_training_is_not_overtrained(tmp_path, skewed_ntuple, capsys):
    samples = "\n".join(f'[samples.{c}]\nfiles = "{skewed_ntuple}:{c}"\nlabel = "{c}"\n'
                        'weight = "w"\n' for c in ("qcd", "signal", "ttbar"))
    config = tmp_path / "mix.toml"
    config.write_text(f'features = ["x", "y"]\nevent = "event"\n{samples}\n'
                      '[split]\nnorm = "equal_num_events"\n'
                      '[method]\nboosting = "gradient"\nn_trees = 10\nmax_depth = 2\n'
                      f'[output]\ndirectory = "{tmp_path / "out"}"\ntmva_xml = false\n'
                      "figures = false\n")
    assert main(["train", str(config)]) == 0
    out = capsys.readouterr().out
    assert "  verdict: overtrained" not in out and "-> overtrained" not in out
    rows = {row[0]: row[1:] for row in map(str.split, out.split("Confusion matrix")[0]
                                           .splitlines()) if len(row) == 3}
    for name in ("qcd", "signal", "ttbar"):  # the weights as given: 0.88 / 0.98, 0.78 / 0.69
        test_auc, train_auc = map(float, rows[name])
        assert abs(test_auc - train_auc) < 0.03, (name, test_auc, train_auc)
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        train = file["TrainTree"].arrays(library="np")
        test = file["TestTree"].arrays(library="np")
    proba_tr = np.column_stack([train[f"bdt_prob_{c}"] for c in ("qcd", "signal", "ttbar")])
    proba_te = np.column_stack([test[f"bdt_prob_{c}"] for c in ("qcd", "signal", "ttbar")])
    raw = multiclass_overtraining_test(proba_tr, train["classID"], train["weight"], proba_te,
                                       test["classID"], test["weight"], match_class_mix=False)
    assert raw.verdict == "overtrained"  # the comparison the summary made before
    report = (tmp_path / "out" / "report.html").read_text()
    assert 'id="verdict">overtrained' not in report
