"""The Dask estimators' boosters beyond two-class gradient and newton boosting, on a
LocalCluster of two worker processes: multi-class softmax boosting and the AdaBoost
family, each the in-memory model bit for bit at the same bin edges."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

import dask.array as da  # noqa: E402

from hepbdt import BDTClassifier  # noqa: E402
from hepbdt.dask import DaskBDTClassifier  # noqa: E402
from hepbdt.engine.grower import ORDERED_SUMS_FROM  # noqa: E402
from hepbdt.estimators import ParameterError  # noqa: E402
from tests.ntuples import write_ttree  # noqa: E402

from .test_dask import _assert_same_forest, _dask  # noqa: E402

CLASS_NAMES = np.array(["qcd", "signal", "ttbar"])


def _classes(n=9_000, m=4, k=3, seed=0, negative=0.0):
    """Features, k class names (strings: the model's classes_ are them sorted) and weights."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.01] = np.nan
    y = np.argmax(np.nan_to_num(X[:, :k]) + rng.standard_normal((n, k)), axis=1)
    w = rng.uniform(0.3, 2.0, n)
    w[rng.random(n) < negative] *= -1
    return X, np.array([f"class{i}" for i in range(k)])[y], w


def _assert_same_model(memory, dist):
    _assert_same_forest(memory.forest_, dist.forest_)
    assert memory.forest_.extra == dist.forest_.extra
    assert memory.classes_.tolist() == dist.classes_.tolist()
    assert dist.n_trees_reason_ == memory.n_trees_reason_


# -- multi-class gradient and newton boosting (softmax) ---------------------------------------

@pytest.mark.parametrize("options", [
    {"boosting": "gradient"},
    {"boosting": "newton", "reg_lambda": 2.0, "min_child_weight": 0.5, "k": 4},
    {"boosting": "gradient", "colsample_bytree": 0.8, "colsample_bylevel": 0.7,
     "colsample_bynode": 0.6, "learning_rate": 0.3},
])
def test_multiclass_equals_in_memory_bit_for_bit(client, options):
    options = dict(options)
    X, y, w = _classes(k=options.pop("k", 3))
    opts = dict(n_trees=4, max_depth=3, random_state=3, quantised_histograms=True, **options)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=2_000), client=client)
    _assert_same_model(memory, dist)
    assert dist.forest_.n_classes == memory.classes_.size
    # train_loss: float partial sums per part, not memory's sum (not part of the model)
    assert np.allclose(memory.train_loss_, dist.train_loss_, rtol=1e-12)
    saved, expected = dist.to_dict(), memory.to_dict()
    assert {k: v for k, v in saved.items() if k != "train_loss"} == {
        k: v for k, v in expected.items() if k != "train_loss"}


def test_multiclass_leafwise_equals_in_memory_bit_for_bit(client):
    X, y, w = _classes(n=4_000, seed=5)
    opts = dict(boosting="newton", n_trees=3, max_leaves=6, max_depth=None,
                colsample_bynode=0.7, random_state=1, quantised_histograms=True)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_model(memory, dist)
    assert np.count_nonzero(dist.forest_.feature < 0) == 3 * 3 * 6  # 3 rounds of 3 trees
    assert np.array_equal(dist.predict_proba(X), memory.predict_proba(X))


@pytest.mark.parametrize("policy", ["keep", "abs", "ignore"])
def test_multiclass_negative_weight_policies_per_worker(client, policy):
    X, y, w = _classes(n=6_000, negative=0.1, seed=1)
    opts = dict(boosting="newton", n_trees=3, max_depth=3, random_state=0,
                quantised_histograms=True, negative_weights=policy)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_model(memory, dist)


def test_multiclass_parts_that_sum_their_leaves_in_event_order(client):
    """Parts of ORDERED_SUMS_FROM events or more: leaf sums and score updates by each
    event's leaf, one class's row of the scores at a time."""
    X, y, w = _classes(n=2 * ORDERED_SUMS_FROM + 2_000, m=3, seed=5)
    opts = dict(boosting="gradient", n_trees=2, max_depth=3, random_state=0,
                quantised_histograms=True)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=X.shape[0] // 2 + 1),
                                         client=client)
    assert [count >= ORDERED_SUMS_FROM for _, count in dist.dask_parts_] == [True, True]
    _assert_same_model(memory, dist)


def test_multiclass_on_the_task_path(client, monkeypatch):
    from hepbdt.dask import _cluster, _estimators

    monkeypatch.setattr(_estimators, "ACTOR_PARTS", 0)
    monkeypatch.setattr(_cluster, "CLIENT_SUM_PARTS", 1)
    X, y, w = _classes(n=5_000, seed=7)
    opts = dict(n_trees=3, max_depth=3, random_state=0, quantised_histograms=True)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_model(memory, dist)


def test_multiclass_predictions_are_lazy(client):
    X, y, w = _classes(n=4_000, seed=4)
    model = DaskBDTClassifier(n_trees=3, max_depth=3).fit(*_dask(X, y, w), client=client)
    Xd, = _dask(X, chunk=1_000)
    scores, proba, labels = (model.decision_function(Xd), model.predict_proba(Xd),
                             model.predict(Xd))
    assert all(isinstance(a, da.Array) for a in (scores, proba, labels))
    assert scores.shape == proba.shape == (X.shape[0], 3)
    assert np.array_equal(scores.compute(), model.decision_function(X))
    assert np.array_equal(proba.compute(), model.predict_proba(X))
    assert np.array_equal(labels.compute(), model.predict(X))
    assert set(labels.compute().tolist()) <= set(model.classes_.tolist())


def test_multiclass_class_without_weight_is_refused_as_in_memory(client):
    X, y, w = _classes(n=3_000)
    w[y == "class2"] = 0.0
    opts = dict(n_trees=2, max_depth=2, quantised_histograms=True)
    with pytest.raises(ValueError) as memory:
        BDTClassifier(**opts).fit(X, y, sample_weight=w)
    with pytest.raises(ValueError) as dist:
        DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    assert str(dist.value) == str(memory.value)


def test_multiclass_two_class_loss_is_refused(client):
    X, y, w = _classes(n=2_000)
    with pytest.raises(ParameterError) as info:
        DaskBDTClassifier(loss="deviance").fit(*_dask(X, y, w), client=client)
    assert info.value.param == "loss"


def test_multiclass_workflow_trains_on_the_cluster_what_it_trains_in_memory(client, tmp_path):
    import uproot

    from hepbdt.analysis import load_config, train

    rng = np.random.default_rng(5)
    ntuple = tmp_path / "events.root"
    with uproot.recreate(ntuple) as file:
        for i, name in enumerate(CLASS_NAMES):
            write_ttree(file, name, {
                "x": rng.normal(1.5 * (i - 1), 1.0, 700).astype(np.float32),
                "y": rng.normal(1.5 * (1 - i) ** 2, 1.0, 700).astype(np.float32),
                "w": rng.uniform(0.5, 1.5, 700)})
    samples = "".join(f'[samples.{name}]\nfiles = "{ntuple}:{name}"\nlabel = "{name}"\n'
                      'weight = "w"\n' for name in CLASS_NAMES)
    config = tmp_path / "mc.toml"
    config.write_text(f'features = ["x", "y"]\n{samples}[method]\nboosting = "newton"\n'
                      "n_trees = 4\nmax_depth = 2\nquantised_histograms = true\n"
                      "[output]\ntmva_xml = false\nfigures = false\nreport = false\n")
    memory = train(load_config(config, output=tmp_path / "memory"))
    dask_table = f"dask={{scheduler = '{client.scheduler.address}'}}"
    cluster = train(load_config(config, [dask_table], output=tmp_path / "cluster"))
    assert cluster.model.classes_.tolist() == sorted(CLASS_NAMES.tolist())
    _assert_same_forest(memory.model.forest_, cluster.model.forest_)
    with uproot.open(memory.files["scores"]) as a, uproot.open(cluster.files["scores"]) as b:
        for key in ("TrainTree", "TestTree"):
            ta, tb = a[key].arrays(library="np"), b[key].arrays(library="np")
            assert ta.keys() == tb.keys()
            assert all(np.array_equal(ta[k], tb[k], equal_nan=True) for k in ta)




# -- the AdaBoost family: float histograms chained through the parts in event order ----------

def _two_classes(n=6_000, m=4, seed=0, negative=0.0):
    X, _, w = _classes(n, m, seed=seed, negative=negative)
    rng = np.random.default_rng(seed + 1)
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + rng.standard_normal(n) > 0
    return X, y.astype(int), w


def _fit_both(X, y, w, chunk, client, **options):
    opts = {"n_trees": 5, "max_depth": 3, "random_state": 1, **options}
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=chunk), client=client)
    return memory, dist


def _assert_same_adaboost(memory, dist):
    """The same model to the bit, and the same record: AdaBoost's sums are numpy's."""
    _assert_same_model(memory, dist)
    assert np.array_equal(memory.train_loss_, dist.train_loss_)
    assert dist.to_dict() == memory.to_dict()


@pytest.mark.parametrize("options", [
    {"boosting": "adaboost"},
    {"boosting": "adaboost", "use_yes_no_leaf": False, "beta": 0.8},
    {"boosting": "realadaboost", "sig_to_bkg_fraction": None},
    {"boosting": "eps", "epsilon": 0.05, "sig_to_bkg_fraction": 2.5},
    {"boosting": "adaboost", "criterion": "cross_entropy", "n_vars_per_node": 3,
     "min_node_size": 0.05, "sig_to_bkg_fraction": "tmva"},
    {"boosting": "realadaboost", "colsample_bylevel": 0.7, "colsample_bynode": 0.8},
])
def test_adaboost_family_equals_in_memory_bit_for_bit(client, options):
    X, y, w = _two_classes()
    memory, dist = _fit_both(X, y, w, 1_500, client, **options)
    _assert_same_adaboost(memory, dist)
    assert dist.forest_.extra["purity"] == memory.forest_.extra["purity"]
    assert dist.dask_bytes_["levels"][0]["depth"] == 0  # the root's float histograms
    depths = [level["depth"] for level in dist.dask_bytes_["levels"]]  # 0, 1, ... a tree
    assert all(d in (0, before + 1) for before, d in zip([-1, *depths[:-1]], depths, strict=True))
    assert depths.count(0) == len(dist.dask_bytes_["trees"]) < len(depths)


@pytest.mark.parametrize("options", [
    {"negative_weights": "keep"},
    {"negative_weights": "inverse_boost", "beta": 0.3, "colsample_bytree": 0.75},
])
def test_samme_equals_in_memory_bit_for_bit(client, options):
    X, y, w = _classes(n=6_000, k=4, negative=0.1, seed=2)
    memory, dist = _fit_both(X, y, w, 1_000, client, boosting="adaboost", **options)
    assert memory.forest_.extra["algorithm"] == "SAMME"
    _assert_same_adaboost(memory, dist)


@pytest.mark.parametrize(("boosting", "policy"), [
    ("realadaboost", "keep"), ("adaboost", "abs"), ("eps", "ignore"),
    ("adaboost", "inverse_boost"),
])
def test_adaboost_negative_weight_policies_per_worker(client, boosting, policy):
    """"keep" with real AdaBoost takes its leaves' purities from |w| sums chained through
    the parts; "inverse_boost" reweights a negative event by the inverse factor."""
    X, y, w = _two_classes(n=5_000, negative=0.1, seed=3)
    memory, dist = _fit_both(X, y, w, 1_000, client, boosting=boosting, negative_weights=policy)
    _assert_same_adaboost(memory, dist)


def test_adaboost_sums_across_parts_of_many_buffers(client, monkeypatch):
    """Parts of more than numpy's 8,192-value cast buffers, cut where neither its buffers
    nor its pairwise blocks are, on the task path (histograms and sums from task results)."""
    from hepbdt.dask import _cluster, _estimators

    monkeypatch.setattr(_estimators, "ACTOR_PARTS", 0)
    monkeypatch.setattr(_cluster, "CLIENT_SUM_PARTS", 1)
    X, y, w = _two_classes(n=20_003, m=3, seed=4)
    memory, dist = _fit_both(X, y, w, 6_999, client, boosting="adaboost", n_trees=3)
    assert [count for _, count in dist.dask_parts_] == [13_998, 6_005]
    _assert_same_adaboost(memory, dist)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_adaboost_empty_part_adds_nothing(client, n_classes):
    X, y, w = _two_classes(n=3_000, seed=9) if n_classes == 2 else _classes(n=3_000, seed=9)
    opts = dict(boosting="adaboost", n_trees=3, max_depth=3, random_state=0)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    blocks = ((0, 0, 1_500, 1_500),)
    dist = DaskBDTClassifier(**opts).fit(
        da.from_array(X, chunks=blocks + ((X.shape[1],))), da.from_array(y, chunks=blocks),
        da.from_array(w, chunks=blocks), client=client)
    assert [count for _, count in dist.dask_parts_] == [0, 3_000]
    _assert_same_adaboost(memory, dist)


def test_adaboost_stops_as_in_memory(client):
    """A perfect first tree ends boosting; a tree no better than chance first is an error."""
    X, _, w = _two_classes(n=3_000, seed=6)
    X = np.nan_to_num(X)
    y = (X[:, 3] > 0.25).astype(int)
    edges = [np.linspace(-2, 2, 17, dtype=np.float32)] * X.shape[1]  # 0.25 is an edge
    opts = dict(boosting="adaboost", n_trees=4, max_depth=2)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w, bin_edges=edges)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client,
                                         bin_edges=edges)
    assert "perfect tree" in dist.forest_.extra["stopped"]
    _assert_same_adaboost(memory, dist)
    X_flat = np.ones_like(X)
    with pytest.raises(ValueError) as in_memory:
        BDTClassifier(boosting="adaboost", n_trees=2).fit(X_flat, y, sample_weight=w)
    with pytest.raises(ValueError) as on_cluster:
        DaskBDTClassifier(boosting="adaboost", n_trees=2).fit(*_dask(X_flat, y, w, chunk=1_000),
                                                              client=client)
    assert str(on_cluster.value) == str(in_memory.value)


def test_samme_first_tree_at_chance_up_to_rounding_is_refused_as_in_memory(client):
    """Three classes of equal weight (0.1 an event) and no feature to split on: the first tree
    votes one class everywhere, an error of exactly 2/3 = 1 - 1/K (in rationals), chance's
    but for the rounding of the float sums: memory refuses it, and so does the cluster."""
    y = np.repeat(np.array(["a", "b", "c"]), 1_000)
    X, w = np.ones((y.size, 2), np.float32), np.full(y.size, 0.1)
    assert Fraction(2_000, 3_000) == 1 - Fraction(1, 3)
    with pytest.raises(ValueError) as in_memory:
        BDTClassifier(boosting="adaboost", n_trees=2).fit(X, y, sample_weight=w)
    assert "1 - 1/K" in str(in_memory.value)
    with pytest.raises(ValueError) as on_cluster:
        DaskBDTClassifier(boosting="adaboost", n_trees=2).fit(*_dask(X, y, w, chunk=1_000),
                                                              client=client)
    assert str(on_cluster.value) == str(in_memory.value)


def test_a_reweighting_to_no_positive_net_weight_stops_as_in_memory(client):
    """Background of negative weight among the signal: the first eps tree calls it signal,
    and boosting it by e^2 leaves the weights a negative net sum (numpy's, from the tree's
    cut), where boosting stops after that tree."""
    rng = np.random.default_rng(0)
    x = np.concatenate([-1 - rng.random(2_000), 1 + rng.random(1_000)])
    X = np.column_stack([x, rng.standard_normal(x.size)]).astype(np.float32)
    y, w = np.repeat([1, 0, 0], 1_000), np.repeat([1.0, -0.5, 1.0], 1_000)
    opts = dict(boosting="eps", epsilon=1.0, n_trees=3, max_depth=1, negative_weights="keep")
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    cut = memory.forest_.threshold[0]
    wrong = (X[:, 0] < cut) != (y == 1)
    assert memory.forest_.feature[0] == 0 and np.sum(w * np.where(wrong, np.exp(2.0), 1.0)) < 0
    assert memory.forest_.n_trees == 1 and "not positive" in memory.forest_.extra["stopped"]
    _assert_same_adaboost(memory, dist)


def test_children_of_equal_counts_are_built_as_in_memory(client):
    """The root splits 1,000 events from 1,000 (x < 0 from x > 0): memory sums the left child
    and takes the right as the parent minus it, so the cluster must; the other way round the
    float sums of weights spanning 18 decades differ in their last bits."""
    rng = np.random.default_rng(3)
    x = np.concatenate([-1 - rng.random(1_000), 1 + rng.random(1_000)])
    X = np.column_stack([x, rng.standard_normal(x.size)]).astype(np.float32)
    y = ((x > 0) != (rng.random(x.size) < 0.2)).astype(int)
    w = 10.0 ** rng.uniform(-9, 9, x.size)  # float64 sums of them round
    edges = [np.linspace(-2, 2, 9, dtype=np.float32)] * 2
    opts = dict(boosting="adaboost", n_trees=2, max_depth=2, use_yes_no_leaf=False)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w, bin_edges=edges)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=700), client=client,
                                         bin_edges=edges)
    assert memory.forest_.feature[0] == 0 and np.sum(X[:, 0] <= memory.forest_.threshold[0]) == 1_000
    _assert_same_adaboost(memory, dist)
    assert dist.forest_.extra["purity"] == memory.forest_.extra["purity"]


def test_adaboost_auto_trees_is_the_fixed_count(client, monkeypatch):
    import hepbdt.estimators

    monkeypatch.setattr(hepbdt.estimators, "AUTO_FIXED_TREES", 3)
    X, y, w = _two_classes(n=2_000, seed=8)
    memory, dist = _fit_both(X, y, w, 1_000, client, boosting="adaboost", n_trees="auto")
    assert dist.forest_.n_trees == 3
    _assert_same_adaboost(memory, dist)


@pytest.mark.parametrize(("option", "match"), [
    ({"subsample_mode": "weighted"}, "weighted draw"),
    ({"quantised_histograms": True}, "quantised_histograms=True needs"),
    ({"max_leaves": 8}, "leaf-wise"), ({"decorrelation": "uboost"}, "uBoost"),
])
def test_adaboost_options_not_distributed_are_refused(client, option, match):
    X, y, w = _two_classes(n=2_000)
    options = {"boosting": "adaboost", **option}
    with pytest.raises(ParameterError, match=match) as info:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    assert info.value.param == next(iter(option))


def test_adaboost_depth_whose_levels_memory_builds_from_events_is_refused(client):
    X, y, w = _two_classes(n=600, m=200)
    with pytest.raises(ParameterError, match="max_depth") as info:
        DaskBDTClassifier(boosting="adaboost", max_depth=10).fit(*_dask(X, y, w, chunk=300),
                                                                client=client)
    assert info.value.param == "max_depth"


def test_adaboost_workflow_trains_on_the_cluster_what_it_trains_in_memory(client, tmp_path):
    import uproot

    from hepbdt.analysis import load_config, train

    demo = Path(__file__).resolve().parents[1] / "analyses" / "demo.toml"
    few = ["preselection='(nJet >= 2) & (event % 5 == 0)'", "method.n_trees=5",
           "method.boosting='adaboost'", "method.learning_rate=0.5", "output.figures=false",
           "output.report=false", "method.negative_weights=keep"]
    memory = train(load_config(demo, few, output=tmp_path / "memory"))
    dask_table = f"dask={{scheduler = '{client.scheduler.address}'}}"
    cluster = train(load_config(demo, [*few, dask_table], output=tmp_path / "cluster"))
    _assert_same_forest(memory.model.forest_, cluster.model.forest_)
    with uproot.open(memory.files["scores"]) as a, uproot.open(cluster.files["scores"]) as b:
        for key in ("TrainTree", "TestTree"):
            ta, tb = a[key].arrays(library="np"), b[key].arrays(library="np")
            assert all(np.array_equal(ta[k], tb[k], equal_nan=True) for k in ta)


# -- the engine's pieces, without a cluster ---------------------------------------------------

@pytest.mark.parametrize("lengths", [[5, 0, 300, 7], [10_000, 1, 20_000], [70_000, 3_000],
                                     [0, 129], [8_192, 8_192, 1]])
@pytest.mark.parametrize("cast", [False, True])
def test_pairwise_sum_of_parts_is_numpys_sum(lengths, cast):
    from hepbdt.engine.data_parallel import PairwiseSum, pairwise_pieces

    rng = np.random.default_rng(len(lengths))
    parts = [rng.standard_normal(k) * np.exp(rng.standard_normal(k) * 8) for k in lengths]
    if cast:
        parts = [p.astype(np.float32) for p in parts]
    total = PairwiseSum(lengths, cast)
    pieces = [pairwise_pieces(p, total.requests(i)) for i, p in enumerate(parts)]
    expected = np.concatenate(parts).sum(dtype=np.float64)
    assert total.total(pieces) == expected
    assert sum(len(total.requests(i)) for i in range(len(parts))) < 64  # not every value


@pytest.mark.parametrize("n_classes", [2, 4])
def test_exact_trees_chained_through_parts_are_the_grower_s(n_classes):
    """The parts' chained histograms and the driver's splits grow ``grow_tree``'s tree."""
    from hepbdt.engine._types import CLASS_GINI, GINI
    from hepbdt.engine.binning import BinMapper
    from hepbdt.engine.data_parallel import ExactPartTree, SummedTree
    from hepbdt.engine.grower import grow_tree
    from hepbdt.engine.split import SplitParams

    rng = np.random.default_rng(n_classes)
    n = 5_000
    X = rng.standard_normal((n, 4)).astype(np.float32)
    y = rng.integers(0, n_classes, n)
    w = (rng.uniform(0.1, 3, n) * np.exp(rng.standard_normal(n))).astype(np.float32)
    mapper = BinMapper(255, 0, 0).fit(X, w)
    codes = mapper.transform(X)
    by_class = np.zeros((n_classes, n), np.float32)
    by_class[y, np.arange(n)] = w
    ones = np.ones(n, np.float32)
    samme = n_classes > 2
    params = SplitParams(CLASS_GINI if samme else GINI)
    params.min_split_gain = 1e-10 * float(w.sum(dtype=np.float64))
    memory = grow_tree(codes, np.arange(n, dtype=np.int32), by_class if samme else by_class[1],
                       None if samme else by_class[0], ones, mapper.n_bins_, params, 4,
                       colsample_bylevel=0.8, rng=np.random.default_rng(0))
    channels = np.vstack([by_class if samme else by_class[[1, 0]], ones])
    cuts = [(0, 1_700), (1_700, 1_701), (1_701, 4_000), (4_000, n)]
    parts = [ExactPartTree(np.ascontiguousarray(codes[:, a:b]), 4) for a, b in cuts]
    for part, (a, b) in zip(parts, cuts, strict=True):
        part.start(np.ascontiguousarray(channels[:, a:b]), np.ones(4, np.bool_))

    def chained():
        running = None
        for part in parts:
            running = part.histograms(running)
        return running

    grower = SummedTree(None, np.ones(4, np.bool_), mapper.n_bins_, params, 4, 0.8,
                        rng=np.random.default_rng(0), n_channels=channels.shape[0])
    plan = grower.start(chained())
    while plan is not None:
        for part in parts:
            part.apply(plan)
        plan = None if plan.last else grower.advance(chained())
    tree = grower.grown_tree()
    for field in ("feature", "bin_threshold", "missing_left", "left", "right", "gain", "sum_w"):
        assert np.array_equal(getattr(memory, field), getattr(tree, field)), field
    if samme:
        assert np.array_equal(memory.class_sums, tree.class_sums)
    else:
        assert np.array_equal(memory.sum_a, tree.sum_a)


@pytest.mark.parametrize("options", [
    {"boosting": "adaboost", "min_node_size": 0.2},
    {"boosting": "realadaboost", "min_node_size": 0.15, "subsample": 0.7},
])
def test_adaboost_events_of_weight_zero_are_no_events_as_in_memory(client, options):
    """A third of the events at weight 0, where x0 > 0: min_node_size counts the events of
    non-zero weight only (TMVA's TrainNodeFast sees none of weight 0), so without a draw the
    trees are those of the same events without those rows; counting them moves the floor."""
    X, y, w = _two_classes(n=4_000, seed=5)
    w = np.where((np.nan_to_num(X[:, 0]) > 0) & (np.arange(w.size) % 3 > 0), 0.0, w)
    memory, dist = _fit_both(X, y, w, 1_000, client, n_trees=3, **options)
    _assert_same_adaboost(memory, dist)
    if "subsample" not in options:
        kept = w != 0
        without = BDTClassifier(n_trees=3, max_depth=3, random_state=1, **options).fit(
            X[kept], y[kept], sample_weight=w[kept])
        for name in ("feature", "threshold", "value"):
            assert np.array_equal(getattr(dist.forest_, name), getattr(without.forest_, name))
