"""uBoost: strength 0 is plain AdaBoost bit for bit, the uniformity factor against a brute
force, the recorded cuts against the forest's own scores, less sculpting on the toy, the
model file round trip, and the exports' refusals."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.boosting.uboost import UniformityWeights, _width, class_cut, efficiency_steps
from hepbdt.demo_data import sculpting_arrays
from hepbdt.evaluation import decorrelation_measures
from hepbdt.model import Forest, ModelFormatError
from hepbdt.persistence import load_model

FEATURES = ["mjj", "tau21", "balance", "width", "noise"]
NODE_FIELDS = ("feature", "threshold", "value", "left", "right", "missing_left")


def _toy(n_signal, n_background, seed):
    a = sculpting_arrays(n_signal, n_background, seed=seed)
    return (np.column_stack([a[f] for f in FEATURES]), a["label"], a["weight"],
            a["mjj"].astype(np.float64))


def _uboost(**options):
    kwargs = dict(boosting="adaboost", n_trees=8, max_depth=3, random_state=4,
                  decorrelation="uboost", decorrelation_steps=2)
    kwargs.update(options)
    return BDTClassifier(**kwargs)


def brute_cut(signed, w, efficiency):
    """Of the midpoints between adjacent distinct values, the lowest whose weight fraction
    above it is nearest ``efficiency``."""
    values = np.unique(signed)
    midpoints = 0.5 * (values[:-1] + values[1:])
    distance = [abs(w[signed > c].sum() / w.sum() - efficiency) for c in midpoints]
    return midpoints[int(np.argmin(distance))]


def test_cut_never_splits_a_tie():
    signed = np.array([-1.0, -1.0, 0.2, 1.0, 1.0, 1.0, 1.0, 1.0])
    w = np.ones(8)
    # the gaps leave 6/8 (cut -0.4) or 5/8 (cut 0.6) above: the one nearest e, ties kept
    assert class_cut(signed, w, 0.25) == 0.6
    assert class_cut(signed, w, 0.65) == 0.6
    assert class_cut(signed, w, 0.7) == -0.4
    assert class_cut(np.ones(3), w[:3], 0.5) == 1.0
    rng = np.random.default_rng(4)
    for _ in range(20):
        signed = rng.integers(-3, 4, 30) / 3.0
        w = rng.uniform(0.1, 2.0, 30)
        e = rng.uniform(0.05, 0.95)
        assert class_cut(signed, w, e) == brute_cut(signed, w, e)


def _step_scores(model, X):
    """Each step's AdaBoost score by a recursive walk of its trees: sum a_t v_t / sum a_t."""
    forest = model.forest_
    X32 = X.astype(np.float32)

    def leaf(x, node):
        while forest.feature[node] >= 0:
            node = forest.left[node] if x[forest.feature[node]] < forest.threshold[node] \
                else forest.right[node]
        return forest.value[node]

    starts = np.concatenate([[0], np.cumsum(forest.extra["uboost"]["step_trees"])])
    scores = []
    for k in range(starts.size - 1):
        trees = range(starts[k], starts[k + 1])
        weights = forest.tree_weights[starts[k]:starts[k + 1]]
        values = np.array([[leaf(x, forest.tree_offsets[t]) for t in trees] for x in X32])
        scores.append(values @ weights / weights.sum())
    return scores


@pytest.mark.parametrize("subsample", [1.0, 0.7])
def test_strength_zero_step_is_plain_adaboost_bit_for_bit(subsample):
    X, y, w, m = _toy(300, 500, 1)
    plain = BDTClassifier(boosting="adaboost", n_trees=8, max_depth=3, random_state=4,
                          subsample=subsample).fit(X, y, w)
    zero = _uboost(decorrelation_strength=0.0, subsample=subsample).fit(X, y, w, decorrelate=m)
    n = plain.forest_.n_trees
    assert zero.forest_.extra["uboost"]["step_trees"][0] == n
    stop = int(zero.forest_.tree_offsets[n])
    for name in NODE_FIELDS:
        np.testing.assert_array_equal(getattr(plain.forest_, name),
                                      getattr(zero.forest_, name)[:stop])
    np.testing.assert_array_equal(plain.forest_.tree_weights, zero.forest_.tree_weights[:n])
    np.testing.assert_array_equal(plain.forest_.extra["purity"],
                                  zero.forest_.extra["purity"][:stop])


def test_uniformity_factor_matches_brute_force():
    rng = np.random.default_rng(7)
    n = 80
    y = (rng.random(n) < 0.5).astype(np.float64)
    m = rng.random((n, 1))
    w = rng.uniform(0.2, 2.0, n)
    score = rng.normal(size=n)
    boosted = w * rng.uniform(0.5, 3.0, n)
    for target, label, sign in (("background", 0, -1.0), ("signal", 1, 1.0)):
        uw = UniformityWeights(m, y, w, 0.3, 1.7, 3, target)
        uw.measure(score)
        mine = np.flatnonzero(y == label)
        t = sign * score[mine]
        cut = brute_cut(t, w[mine], 0.3)
        assert uw.cuts[-1] == sign * cut
        # bins: weighted tertiles of the class's mass (the first value reaching j/3 of the weight)
        mass_order = np.argsort(m[mine, 0])
        mass_cumulative = np.cumsum(w[mine][mass_order])
        edges = [m[mine, 0][mass_order][np.argmax(mass_cumulative >= q * w[mine].sum())]
                 for q in (1 / 3, 2 / 3)]
        cell = np.searchsorted(edges, m[mine, 0], side="left")
        local = np.array([w[mine][(cell == b) & (t > cut)].sum() / w[mine][cell == b].sum()
                          for b in range(3)])
        np.testing.assert_allclose(uw.local, local, rtol=1e-12)
        gap = 0.3 - local[cell]
        spread = np.sum(boosted[mine] * np.abs(gap)) / boosted[mine].sum()
        expected = np.exp(1.7 * math.log(1 / spread) * gap)
        np.testing.assert_allclose(uw.factor(boosted), expected, rtol=1e-12)
        # apply: the class's weights times the factor, their boosted total kept
        run = SimpleNamespace(w0=w.copy(), boost=boosted / w)
        uw.apply(run, 0)
        after = run.boost * w
        ratio = after[mine] / boosted[mine]
        np.testing.assert_allclose(ratio / ratio[0], expected / expected[0], rtol=1e-12)
        assert after[mine].sum() == pytest.approx(boosted[mine].sum(), rel=1e-12)
        np.testing.assert_array_equal(after[y != label], boosted[y != label])


def test_recorded_cuts_and_score_match_the_forest():
    X, y, w, m = _toy(300, 500, 1)
    model = _uboost(decorrelation_strength=1.0, decorrelation_steps=3).fit(X, y, w, decorrelate=m)
    spec = model.forest_.extra["uboost"]
    np.testing.assert_allclose(spec["efficiencies"], efficiency_steps(3))
    assert [len(c) for c in spec["cuts"]] == spec["step_trees"]
    background = y == 0
    steps = _step_scores(model, X)
    expected = np.zeros(len(y))
    for k, (score, e) in enumerate(zip(steps, spec["efficiencies"], strict=True)):
        # the last cut: background below it (signed score above it) nearest e, no tie split
        cut = spec["cuts"][k][-1]
        assert np.min(np.abs(score - cut)) > 1e-9
        assert cut == pytest.approx(-brute_cut(-score[background], w[background], e), abs=1e-9)
        expected += 1 / (1 + np.exp(-(score - spec["cuts"][k][-1]) / spec["widths"][k]))
    np.testing.assert_allclose(model.decision_function(X), expected / 3, rtol=1e-9, atol=1e-12)
    staged = list(model.staged_decision_function(X))
    assert len(staged) == max(spec["step_trees"])
    np.testing.assert_allclose(staged[-1], model.decision_function(X), rtol=1e-12)
    proba = model.predict_proba(X)[:, 1]
    assert proba.min() >= 0 and proba.max() <= 1


def test_uboost_sculpts_less_than_adaboost():
    X, y, w, m = _toy(3000, 6000, 1)
    Xt, yt, wt, mt = _toy(3000, 6000, 2)
    options = dict(boosting="adaboost", n_trees=30, max_depth=3, random_state=0)
    plain = BDTClassifier(**options).fit(X, y, w)
    flat = BDTClassifier(decorrelation="uboost", decorrelation_steps=5, **options).fit(
        X, y, w, decorrelate=m)
    bins = np.linspace(mt.min(), mt.max(), 51)
    before = decorrelation_measures(plain.decision_function(Xt), yt, mt, wt, (0.5,), bins)
    after = decorrelation_measures(flat.decision_function(Xt), yt, mt, wt, (0.5,), bins)
    assert after.at(0.5)[1] > 1.2 * before.at(0.5)[1]
    assert after.at(0.5)[0] > 5  # still a classifier


def test_save_load_round_trip_and_exports_refuse(tmp_path):
    X, y, w, m = _toy(300, 500, 1)
    model = _uboost().fit(X, y, w, decorrelate=m)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = load_model(path)
    assert loaded.get_params()["decorrelation"] == "uboost"
    assert loaded.forest_.aggregation == "uboost"
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    for export in (lambda: model.save_tmva(tmp_path / "m.xml"),
                   lambda: model.save_onnx(tmp_path / "m.onnx"),
                   lambda: model.save_cpp(tmp_path / "m.h")):
        with pytest.raises(ValueError, match="cannot write a uBoost model .* save\\(\\)"):
            export()
    assert not any(tmp_path.glob("m.*"))
    with pytest.raises(ValueError, match="uBoost forest"):
        model.forest_.truncate(2)


def test_a_broken_uboost_record_is_refused(tmp_path):
    X, y, w, m = _toy(200, 300, 1)
    model = _uboost(n_trees=3).fit(X, y, w, decorrelate=m)
    doc = model.forest_.to_dict()
    for key, value, match in (("step_trees", [1, 1], "adding up to"),
                              ("widths", [1.0, -1.0], "must be positive"),
                              ("step_aggregation", "median", "step_aggregation"),
                              ("cuts", [[0.1], [0.2]], "one cut a tree")):
        broken = json.loads(json.dumps(doc))
        broken["extra"]["uboost"][key] = value
        with pytest.raises(ModelFormatError, match=match):
            Forest.from_dict(broken)


def test_tree_count_is_per_step():
    X, y, w, m = _toy(200, 300, 1)
    model = _uboost(n_trees=4, decorrelation_steps=3).fit(X, y, w, decorrelate=m)
    assert model.forest_.n_trees == 12
    assert model.n_trees_ == 4
    assert model.n_trees_reason_ == "n_trees=4"


def test_a_class_of_one_value_goes_wholly_to_the_side_nearest_efficiency():
    # One distinct value 1.0: at efficiency >= 1/2 the whole class lies above the cut,
    # half-way down to the nearest other score; below 1/2 it lies below, half-way up.
    assert class_cut(np.ones(3), np.ones(3), 0.5, np.array([0.0, 1.0, 1.0])) == 0.5
    assert class_cut(np.ones(3), np.ones(3), 0.5, np.array([1.0, 3.0])) == 0.0  # mirrored
    assert class_cut(np.ones(3), np.ones(3), 0.49, np.array([0.0, 1.0, 3.0])) == 2.0
    assert class_cut(np.ones(3), np.ones(3), 0.49, np.array([0.0, 1.0])) == 1.5  # mirrored
    assert class_cut(np.ones(3), np.ones(3), 0.5, np.array([1.0])) == 1.0


def test_smoothing_width_is_a_quarter_of_the_weighted_standard_deviation():
    rng = np.random.default_rng(5)
    score, w = rng.normal(1.0, 2.0, 50), rng.uniform(-0.5, 3.0, 50)
    mean = np.average(score, weights=np.abs(w))
    std = math.sqrt(np.average((score - mean) ** 2, weights=np.abs(w)))
    assert _width(score, w) == pytest.approx(0.25 * std, rel=1e-12)
