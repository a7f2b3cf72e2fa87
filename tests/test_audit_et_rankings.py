"""Audit ET (2026-12-05): the names printed beside the split rankings are those features'.

Each importance is checked against a brute-force sum over the forest's node arrays."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hepbdt import BDTClassifier
from hepbdt.evaluation import tmva_importance


def _named_model():
    """A model of the columns a, b, c, d where c matters most, then a."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 4)).astype(np.float32)
    y = (2 * X[:, 2] + X[:, 0] + rng.normal(size=1500) > 0.5).astype(int)
    return BDTClassifier(n_trees=10, max_depth=3).fit(pd.DataFrame(X, columns=list("abcd")), y)


def _summed_gain_by_name(model):
    """Brute force: each split's gain times its tree's |weight|, by the split's feature name."""
    forest = model.forest_
    totals = dict.fromkeys(model.feature_names_in_, 0.0)
    for t in range(forest.n_trees):
        for node in range(forest.tree_offsets[t], forest.tree_offsets[t + 1]):
            if forest.feature[node] >= 0:
                name = model.feature_names_in_[forest.feature[node]]
                totals[name] += abs(forest.tree_weights[t]) * forest.gain[node]
    total = sum(totals.values())
    return {name: value / total for name, value in totals.items()}


def test_names_in_the_models_order_label_their_own_features():
    model = _named_model()
    expected = _summed_gain_by_name(model)
    ranked = dict(tmva_importance(model, ["a", "b", "c", "d"]).ranked())
    assert ranked == pytest.approx(expected, rel=1e-12)


def test_model_names_in_another_order_are_refused():
    # before: attached by position, so c's 0.80 printed beside "b" and a's 0.20 beside "d"
    model = _named_model()
    with pytest.raises(ValueError, match=r"'d' for feature 0, which is the model's 'a'"):
        tmva_importance(model, ["d", "c", "b", "a"], quadrature=True)
    with pytest.raises(ValueError, match="more than once"):
        tmva_importance(model, ["a", "a", "c", "d"])


def test_other_labels_still_name_the_features_by_position():
    model = _named_model()
    expected = _summed_gain_by_name(model)
    ranked = dict(tmva_importance(model, ["A", "B", "C", "D"]).ranked())
    assert ranked == pytest.approx({k.upper(): v for k, v in expected.items()}, rel=1e-12)


def _tmva_by_name(model):
    """Brute force of TMVA's importance: each tree's squared gains as fractions, summed
    with |boost weight|, square root, normalised; by the split's feature name."""
    forest, names = model.forest_, list(model.feature_names_in_)
    summed = np.zeros(len(names))
    for t in range(forest.n_trees):
        squares = np.zeros(len(names))
        for node in range(forest.tree_offsets[t], forest.tree_offsets[t + 1]):
            if forest.feature[node] >= 0:
                squares[forest.feature[node]] += forest.gain[node] ** 2
        if squares.sum() > 0:
            summed += abs(forest.tree_weights[t]) * squares / squares.sum()
    root = np.sqrt(summed)
    return dict(zip(names, root / root.sum(), strict=True))


def test_inspect_prints_whole_names_beside_their_importances():
    # before: cut at 40 characters, both masses printed as "sqrt(2 * Jet_pt[:, 0] * Jet_pt[:, 1] * c"
    from hepbdt.cli import describe_model

    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 3)).astype(np.float32)
    y = (2 * X[:, 1] + 0.5 * X[:, 0] + rng.normal(size=1500) > 0.5).astype(int)
    names = ["sqrt(2 * Jet_pt[:, 0] * Jet_pt[:, 1] * cosh(Jet_eta[:, 0]))",
             "sqrt(2 * Jet_pt[:, 0] * Jet_pt[:, 1] * cosh(Jet_eta[:, 1]))", "MET_pt"]
    model = BDTClassifier(n_trees=10, max_depth=3).fit(pd.DataFrame(X, columns=names), y)
    text = describe_model(model)
    ranking = text[text.index("Ranking"):].splitlines()[1:4]
    expected = _tmva_by_name(model)
    shown = {}
    for line in ranking:
        name = next(n for n in names if f". {n} " in line)
        shown[name] = float(line.split(f". {name} ")[1].split()[0])
    assert set(shown) == set(names)
    assert shown == pytest.approx(expected, abs=5e-5)
