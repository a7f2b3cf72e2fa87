"""The Dask estimators on a LocalCluster of two worker processes: the in-memory model bit
for bit at the same bin edges, lazy predictions, and faults that end in a clear error."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from hepbdt import BDTClassifier, BDTRegressor, load_model  # noqa: E402
from hepbdt.dask import (  # noqa: E402
    ClusterError,
    DaskBDTClassifier,
    DaskBDTRegressor,
    WorkerLostError,
    connect,
)
from hepbdt.engine.grower import ORDERED_SUMS_FROM  # noqa: E402
from hepbdt.estimators import ParameterError  # noqa: E402
from tests.ntuples import write_ttree  # noqa: E402

ROOT = str(Path(__file__).resolve().parents[1])
FOREST_FIELDS = ("feature", "threshold", "bin_threshold", "left", "right", "missing_left", "value",
                 "gain", "cover", "tree_offsets", "tree_weights")


def _start_cluster() -> tuple[LocalCluster, Client]:
    # The worker processes import this checkout's hepbdt, as the test process does.
    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = ROOT + (os.pathsep + path if path else "")
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    return cluster, Client(cluster)


def _data(n=12_000, m=5, seed=0, negative=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m)).astype(np.float32)
    X[rng.random((n, m)) < 0.01] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2]) + rng.standard_normal(n) > 0)
    w = rng.uniform(0.3, 2.0, n)
    w[rng.random(n) < negative] *= -1
    return X, y.astype(int), w


def _dask(*arrays, chunk=2_500):
    return [da.from_array(a, chunks=(chunk,) + a.shape[1:]) for a in arrays]


def _assert_same_forest(a, b):
    assert a.base_score == b.base_score
    for name in FOREST_FIELDS:
        assert np.array_equal(getattr(a, name), getattr(b, name), equal_nan=True), name


@pytest.mark.parametrize("options", [
    {"boosting": "gradient"},
    {"boosting": "newton", "reg_lambda": 2.0, "min_child_weight": 0.5},
    {"boosting": "gradient", "colsample_bytree": 0.8, "colsample_bylevel": 0.7,
     "colsample_bynode": 0.6, "learning_rate": 0.3},
])
def test_classifier_equals_in_memory_bit_for_bit(client, options):
    X, y, w = _data()
    opts = dict(n_trees=6, max_depth=4, random_state=3, quantised_histograms=True, **options)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    # The parts send the client their events of non-zero weight: memory's edges.
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    assert all(np.array_equal(a, b) for a, b in zip(memory.bin_edges_, dist.bin_edges_, strict=True))
    assert np.allclose(memory.train_loss_, dist.train_loss_, rtol=1e-12)
    assert dist.forest_.extra.get("nan_in_training")
    root = dist.dask_bytes_["levels"][0]  # each part sends the root's packed histogram
    assert root["depth"] == 0 and root["parts_sent"] == 2 * X.shape[1] * 256 * 8


def test_parts_that_sum_their_leaves_in_event_order_give_the_same_model(client):
    """Parts of ORDERED_SUMS_FROM (65,536) events or more sum their leaves and add their
    scores by each event's leaf, as memory does from that many."""
    X, y, w = _data(n=2 * ORDERED_SUMS_FROM + 2_000, m=3, seed=5)
    opts = dict(boosting="newton", n_trees=3, max_depth=3, random_state=0,
                quantised_histograms=True)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=X.shape[0] // 2 + 1),
                                         client=client)
    assert [count >= ORDERED_SUMS_FROM for _, count in dist.dask_parts_] == [True, True]
    _assert_same_forest(memory.forest_, dist.forest_)


def test_task_path_of_many_workers_gives_the_same_model(client, monkeypatch):
    """Beyond a few parts the steps are tasks, histograms are summed pairwise on the cluster
    and the leaf sums pass from worker to worker: forced here on two."""
    from hepbdt.dask import _cluster, _estimators

    monkeypatch.setattr(_estimators, "ACTOR_PARTS", 0)
    monkeypatch.setattr(_cluster, "CLIENT_SUM_PARTS", 1)
    X, y, w = _data(n=6_000, seed=7)
    opts = dict(n_trees=4, max_depth=4, random_state=0, quantised_histograms=True)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    root = dist.dask_bytes_["levels"][0]
    assert root["client_received"] == root["parts_sent"] // 2  # one summed histogram


# -- leaf-wise (best-first) growth ---------------------------------------------------------------

@pytest.mark.parametrize("options", [
    {"max_leaves": 12, "max_depth": None},
    {"max_leaves": 16, "max_depth": 3, "boosting": "newton", "colsample_bytree": 0.8,
     "colsample_bylevel": 0.8, "colsample_bynode": 0.6},
])
def test_leafwise_classifier_equals_in_memory_bit_for_bit(client, options):
    """A round trip a split whose children get histograms; the splits at the depth limit,
    and the last one, ride along with the next plan (or with the leaf sums)."""
    X, y, w = _data(n=6_000)
    opts = dict(n_trees=4, random_state=3, quantised_histograms=True, **options)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_500), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    saved, expected = dist.to_dict(), memory.to_dict()
    assert {k: v for k, v in saved.items() if k != "train_loss"} == {
        k: v for k, v in expected.items() if k != "train_loss"}
    scores = dist.decision_function(_dask(X)[0]).compute()
    assert np.array_equal(scores, memory.decision_function(X))
    leaves = [int(np.count_nonzero(dist.forest_.feature[a:b] < 0))
              for a, b in zip(dist.forest_.tree_offsets[:-1], dist.forest_.tree_offsets[1:],
                              strict=True)]
    trips = len(dist.dask_bytes_["levels"]) / len(dist.dask_bytes_["trees"])
    if options["max_depth"] is None:
        assert leaves == [12] * 4 and trips == 12 - 1  # the root, and 10 splits of 11
    else:
        assert max(leaves) <= 8 and trips < max(leaves)  # depth 3: the last level is free


def test_leafwise_regressor_on_the_task_path_with_a_small_pool(client, monkeypatch):
    """A pool of 3 histograms on the client (as memory's, which the test process shares):
    a leaf whose histogram was given up gets both children's from the parts."""
    from hepbdt.dask import _cluster, _estimators
    from hepbdt.engine import grower

    monkeypatch.setattr(_estimators, "ACTOR_PARTS", 0)
    monkeypatch.setattr(_cluster, "CLIENT_SUM_PARTS", 1)
    monkeypatch.setattr(grower, "LEVEL_HISTOGRAM_BYTES", 1)
    X, _, w = _data(n=5_000, seed=2)
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 3]) ** 2
    opts = dict(n_trees=3, max_leaves=20, max_depth=None, boosting="newton", subsample=0.7,
                subsample_mode="poisson", random_state=4, quantised_histograms=True)
    memory = BDTRegressor(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTRegressor(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    one = X.shape[1] * 256 * 8
    sent = {level["client_received"] // one for level in dist.dask_bytes_["levels"][1:]}
    assert sent == {1, 2}  # the sum of the parts' left children, or of both


@pytest.mark.parametrize("policy", ["keep", "abs", "ignore"])
def test_negative_weight_policies_per_worker(client, policy):
    X, y, w = _data(n=8_000, negative=0.1, seed=1)
    opts = dict(n_trees=4, max_depth=3, random_state=0, quantised_histograms=True,
                negative_weights=policy)
    memory = BDTClassifier(**opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=1_000), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)


def test_regressor_and_given_edges(client):
    X, _, w = _data(seed=2)
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 3]) ** 2
    edges = [np.linspace(-2, 2, 17, dtype=np.float32) for _ in range(X.shape[1])]
    opts = dict(n_trees=5, max_depth=3, quantised_histograms=True, boosting="newton")
    memory = BDTRegressor(**opts).fit(X, y, sample_weight=w, bin_edges=edges)
    dist = DaskBDTRegressor(**opts).fit(*_dask(X, y, w, chunk=3_000), client=client, bin_edges=edges)
    _assert_same_forest(memory.forest_, dist.forest_)


def test_predictions_lazy_and_model_is_ordinary(client, tmp_path):
    X, y, w = _data(n=6_000, seed=4)
    model = DaskBDTClassifier(n_trees=3, max_depth=3).fit(*_dask(X, y, w), client=client)
    Xd, = _dask(X, chunk=1_000)
    lazy = model.decision_function(Xd)
    assert isinstance(lazy, da.Array)
    assert np.array_equal(lazy.compute(), model.decision_function(X))
    proba = model.predict_proba(Xd)
    assert proba.shape == (X.shape[0], 2)
    assert np.array_equal(proba.compute(), model.predict_proba(X))
    assert np.array_equal(model.predict(Xd).compute(), model.predict(X))
    model.save(tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert type(loaded) is BDTClassifier
    assert np.array_equal(loaded.decision_function(X), model.decision_function(X))


def test_above_the_edges_subsample_the_fit_is_memorys_bit_for_bit(client):
    """Above 200,000 events memory's edges see a draw of them; the workers' merged edge
    sketch drew another sample, so the model differed (0.0008 of test AUC, every score,
    every printed number of `hepbdt train` with [dask]). The parts now send memory's draw:
    the same edges and the same model, with events of weight zero (which no edge sees)."""
    rng = np.random.default_rng(5)
    n = 240_000
    X = rng.standard_normal((n, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.5 * X[:, 2] * X[:, 3] + rng.standard_normal(n) > 0)
    y = y.astype(int)
    w = rng.uniform(0.5, 1.5, n)
    w[rng.random(n) < 0.05] = 0.0  # 228,000 events of non-zero weight: still a draw
    opts = dict(boosting="newton", n_trees=30, max_depth=3, learning_rate=0.1, random_state=4)
    memory = BDTClassifier(quantised_histograms=True, **opts).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X, y, w, chunk=60_000), client=client)
    assert all(np.array_equal(a, b) for a, b in zip(memory.bin_edges_, dist.bin_edges_,
                                                    strict=True))
    _assert_same_forest(memory.forest_, dist.forest_)
    assert np.array_equal(memory.decision_function(X[:5000]), dist.decision_function(X[:5000]))
    opts.update(random_state=None, n_trees=1)  # memory's edges then draw with the seed 0
    memory = BDTClassifier(quantised_histograms=True, **opts).fit(X[:, :1], y, sample_weight=w)
    dist = DaskBDTClassifier(**opts).fit(*_dask(X[:, :1], y, w, chunk=60_000), client=client)
    assert np.array_equal(memory.bin_edges_[0], dist.bin_edges_[0])


CLASS_FILE = Path(ROOT).parent / "shared" / "data" / "tmva_class_example.root"


@pytest.mark.skipif(not CLASS_FILE.exists(), reason="reference ntuples in ../shared/data are absent")
def test_lazy_read_trains_the_in_memory_model(client):
    from hepbdt.io import Sample, read

    samples = [Sample("s", str(CLASS_FILE), tree="TreeS", label=1, cut="var1 > var2"),
               Sample("b", str(CLASS_FILE), tree="TreeB", label=0, weight="weight * 2", scale=0.5)]
    features = ["var1", "log(abs(var3))", "var1 * var2 + var4 ** 2", "var4"]
    memory = read(samples, features)
    lazy = read(samples, features, dask=True, step_size=1_500)
    assert lazy.npartitions == 8
    read_back = lazy.compute()
    for name in ("X", "y", "w", "event", "sample_index"):
        assert np.array_equal(getattr(memory, name), getattr(read_back, name)), name
        # the partitions hold what the lazy arrays declare, and the in-memory read holds
        assert getattr(lazy, name).compute().dtype == getattr(lazy, name).dtype, name
        assert getattr(read_back, name).dtype == getattr(memory, name).dtype, name
    assert lazy.y.dtype == lazy.sample_index.dtype == np.int8  # two labels, two samples
    opts = dict(n_trees=4, max_depth=3, quantised_histograms=True)
    in_memory = BDTClassifier(**opts).fit(memory.X, memory.y, sample_weight=memory.w)
    dist = DaskBDTClassifier(**opts).fit(lazy.X, lazy.y, lazy.w, client=client)
    _assert_same_forest(in_memory.forest_, dist.forest_)


@pytest.mark.skipif(not CLASS_FILE.exists(), reason="reference ntuples in ../shared/data are absent")
def test_a_lazy_read_is_scored_by_its_feature_names(client):
    """README's Dask example scores the lazy read it fitted. Its ``data.X`` is a dask array
    without names, so scoring it warned (FeatureNamesWarning) and the read itself was not
    taken; the read is now taken as a named X is in memory, its columns by name in any
    order. Reference: the in-memory model on the in-memory read's named columns."""
    import warnings

    from hepbdt.io import Sample, read

    samples = [Sample("s", f"{CLASS_FILE}:TreeS", label=1),
               Sample("b", f"{CLASS_FILE}:TreeB", label=0)]
    features = ["var1", "var2", "var3", "var4"]
    lazy = read(samples, features, dask=True, step_size=1_500)
    model = DaskBDTClassifier(n_trees=4, max_depth=3).fit(lazy, client=client)
    memory = read(samples, features)
    local = model.to_local()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for data in (lazy, read(samples, features[::-1], dask=True, step_size=1_500)):
            assert np.array_equal(model.decision_function(data).compute(),
                                  local.decision_function(memory.X))
            assert np.array_equal(model.predict_proba(data).compute(),
                                  local.predict_proba(memory.X))
            assert np.array_equal(model.predict(data).compute(), local.predict(memory.X))


@pytest.mark.skipif(not CLASS_FILE.exists(), reason="reference ntuples in ../shared/data are absent")
def test_apply_on_the_cluster_writes_what_memory_writes(client, tmp_path):
    import uproot

    from hepbdt import apply as apply_in_memory
    from hepbdt.dask import apply as apply_on_cluster
    from hepbdt.io import Sample, read

    features = ["var1", "var2", "var3", "var4"]
    data = read([Sample("s", f"{CLASS_FILE}:TreeS", label=1),
                 Sample("b", f"{CLASS_FILE}:TreeB", label=0)], features)
    model = BDTClassifier(n_trees=3, max_depth=3).fit(data.X, data.y)
    inputs = [f"{CLASS_FILE}:TreeS", f"{CLASS_FILE}:TreeB"]
    for output in ("friend_{tree}.root", "all.root"):
        memory = apply_in_memory(model, inputs, tmp_path / "memory" / output, step_size=1_000)
        cluster = apply_on_cluster(model, inputs, tmp_path / "cluster" / output, step_size=1_000,
                                   client=client)
        assert [os.path.basename(p) for p in memory] == [os.path.basename(p) for p in cluster]
        for a, b in zip(memory, cluster, strict=True):
            with uproot.open(a) as fa, uproot.open(b) as fb:
                assert fa.keys() == fb.keys()
                for key in fa.keys():
                    ta, tb = fa[key].arrays(library="np"), fb[key].arrays(library="np")
                    assert ta.keys() == tb.keys()
                    assert all(np.array_equal(ta[k], tb[k]) for k in ta)


@pytest.mark.parametrize("stopping", [[], ["method.early_stopping=true",
                                             "method.n_iter_no_change=2"]])
def test_workflow_trains_on_the_cluster_what_it_trains_in_memory(client, tmp_path, stopping):
    """And with early stopping: the events held out by their hashed event numbers."""
    import uproot

    from hepbdt.analysis import load_config, train

    demo = Path(ROOT) / "analyses" / "demo.toml"
    few = ["preselection='(nJet >= 2) & (event % 5 == 0)'", "method.n_trees=8",
           "method.min_node_size=0", "method.quantised_histograms=true", "output.figures=false",
           "output.report=false", "method.negative_weights=keep", *stopping]
    memory = train(load_config(demo, few, output=tmp_path / "memory"))
    dask_table = f"dask={{scheduler = '{client.scheduler.address}'}}"
    cluster = train(load_config(demo, [*few, dask_table], output=tmp_path / "cluster"))
    _assert_same_forest(memory.model.forest_, cluster.model.forest_)
    assert cluster.model.n_trees_reason_ == memory.model.n_trees_reason_
    if stopping:  # the events held out by their hashed numbers, the losses on them
        assert memory.model.validation_loss_ is not None
        assert np.array_equal(cluster.model.validation_loss_, memory.model.validation_loss_)
    assert list(cluster.model.feature_names_in_) == list(memory.model.feature_names_in_)
    with uproot.open(memory.files["scores"]) as a, uproot.open(cluster.files["scores"]) as b:
        for key in ("TrainTree", "TestTree"):
            ta, tb = a[key].arrays(library="np"), b[key].arrays(library="np")
            assert all(np.array_equal(ta[k], tb[k], equal_nan=True) for k in ta)


def test_cli_apply_with_an_unreachable_scheduler(tmp_path, capsys, monkeypatch):
    from hepbdt.cli import main
    from hepbdt.dask import _cluster

    monkeypatch.setattr(_cluster.connect, "__defaults__", (None, 2.0, 2))  # not 10 s
    X, y, _ = _data(n=500)
    path = tmp_path / "m.json"
    BDTClassifier(n_trees=2, max_depth=2).fit(X, y).save(path)
    start = time.monotonic()
    status = main(["apply", str(path), str(tmp_path / "in.root"), "-o", str(tmp_path / "o.root"),
                   "--scheduler", "tcp://127.0.0.1:9"])
    assert status == 1
    assert "no Dask scheduler answered at 'tcp://127.0.0.1:9' within 2 s" in capsys.readouterr().err
    assert time.monotonic() - start < 30


def test_cli_apply_on_a_local_cluster_leaves_no_scheduler_warning(tmp_path):
    """`hepbdt apply --scheduler local` closed the LocalCluster under a client that still
    held the tasks' results: the scheduler logged "Removing worker ... caused the cluster
    to lose already computed task(s), which will be recomputed elsewhere" on stderr for
    each worker, after files that were written whole. Only the notes and the files now."""
    import subprocess
    import sys

    import pandas as pd
    import uproot

    X, y, _ = _data(n=500)
    path = tmp_path / "m.json"
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    BDTClassifier(n_trees=2, max_depth=2).fit(frame, y).save(path)
    inputs = []
    for i in range(2):
        inputs.append(str(tmp_path / f"in{i}.root"))
        with uproot.recreate(inputs[-1]) as f:
            f.mktree("T", {f"x{j}": np.float32 for j in range(X.shape[1])})
            f["T"].extend({f"x{j}": np.tile(X[:, j], 50) for j in range(X.shape[1])})
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-m", "hepbdt", "apply", str(path), *inputs, "-o",
                          str(tmp_path / "{stem}_s.root"), "--scheduler", "local"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [f"wrote {tmp_path / f'in{i}_s.root'}" for i in range(2)]
    assert [line for line in run.stderr.splitlines()
            if not line.startswith("hepbdt: note:")] == []


@pytest.mark.parametrize("option", [
    {"max_leaves": 8, "boosting": "realadaboost"}, {"quantised_histograms": False},
    {"subsample_mode": "weighted", "boosting": "adaboost"}, {"loss": "huber"},
    {"max_depth": 13},
])
def test_unsupported_options_are_refused(client, option):
    X, y, w = _data(n=2_000)
    cls = DaskBDTRegressor if option.get("loss") == "huber" else DaskBDTClassifier
    target = X[:, 0] if cls is DaskBDTRegressor else y
    with pytest.raises(ParameterError) as info:
        cls(**option).fit(*_dask(X, np.nan_to_num(target), w), client=client)
    assert info.value.param in option or info.value.param == "loss"


def test_regress_policy_with_negative_weights_is_refused(client):
    X, y, w = _data(n=2_000, negative=0.1)
    with pytest.raises(ParameterError, match="keep"):
        DaskBDTClassifier(negative_weights="regress").fit(*_dask(X, y, w), client=client)


@pytest.mark.parametrize("bad", ["weight 1e35", "weight 1e-35", "target 1e35", "target nan"])
def test_out_of_range_weights_and_targets_are_refused_as_in_memory(client, bad):
    X, y, w = _data(n=2_000)
    target = X[:, 0].astype(np.float64)
    what, value = bad.split()
    (w if what == "weight" else target)[7] = float(value)
    memory, dask_cls, labels = ((BDTRegressor, DaskBDTRegressor, target) if what == "target"
                                else (BDTClassifier, DaskBDTClassifier, y))
    with pytest.raises(ValueError) as in_memory:
        memory(n_trees=2).fit(X, labels, w)
    with pytest.raises(ValueError, match=re.escape(str(in_memory.value))):
        dask_cls(n_trees=2).fit(*_dask(X, labels, w), client=client)


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_classes_too_far_apart_are_refused_as_in_memory(client, boosting):
    X, y, w = _data(n=2_000)
    w = np.where(y == 1, w * 1e24, w)
    with pytest.raises(ValueError) as in_memory:
        BDTClassifier(boosting=boosting, n_trees=2).fit(X, y, w)
    assert "beyond 1e+15" in str(in_memory.value)
    with pytest.raises(ValueError, match=re.escape(str(in_memory.value))):
        DaskBDTClassifier(boosting=boosting, n_trees=2).fit(*_dask(X, y, w), client=client)


def test_unreachable_scheduler_is_a_clear_error():
    start = time.monotonic()
    with pytest.raises(ClusterError, match="no Dask scheduler answered"):
        connect("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - start < 15


def test_missing_dask_names_the_install_command(monkeypatch):
    import sys

    from hepbdt.dask import require_dask

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ImportError, match=r"pip install hepbdt\[dask\]"):
        require_dask()


def test_a_dead_worker_stops_the_fit_with_a_clear_error(monkeypatch):
    # The worker of part 0 is killed once the fit has started its parts' actors: a kill
    # timed from the test's start could land before the fit chose its workers (on a loaded
    # machine), and the fit then trained its 100,000 trees on the surviving worker.
    from hepbdt.dask import _cluster

    cluster, client = _start_cluster()
    start_actors = _cluster.Cluster.start_actors

    def start_then_kill(self) -> None:
        start_actors(self)
        pid = client.run(os.getpid, workers=[self.workers[0]])[self.workers[0]]
        threading.Timer(0.5, os.kill, (pid, signal.SIGKILL)).start()

    monkeypatch.setattr(_cluster.Cluster, "start_actors", start_then_kill)
    try:
        X, y, w = _data(n=4_000)
        start = time.monotonic()
        with pytest.raises(WorkerLostError, match="died|lost"):  # long before 1,000 trees (~30 s)
            DaskBDTClassifier(n_trees=1_000, max_depth=3).fit(*_dask(X, y, w, chunk=1_000),
                                                             client=client)
        assert time.monotonic() - start < 60
    finally:
        client.close()
        cluster.close()


def test_a_result_lost_with_its_worker_is_a_clear_error_not_a_hang():
    # A part's task finished, then its worker died: the result went with it, and the task,
    # bound to that worker, would be waited for forever (the whole suite hung there once).
    from hepbdt.dask._cluster import Cluster

    cluster, client = _start_cluster()
    try:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        parts = Cluster(client, workers, "hepbdt-test-lost", poll=0.5)
        done = client.submit(np.arange, 1000, workers=[workers[0]], allow_other_workers=False,
                             pure=False)
        done.result()
        pid = client.run(os.getpid, workers=[workers[0]])[workers[0]]
        os.kill(pid, signal.SIGKILL)  # gathered at once, before the scheduler notices
        start = time.monotonic()
        with pytest.raises(WorkerLostError):
            parts.gather([done])
        assert time.monotonic() - start < 30
    finally:
        client.close()
        cluster.close()


def _pause_fraction(fraction: float, dask_worker=None) -> None:
    dask_worker.memory_manager.memory_pause_fraction = fraction  # its own monitor pauses it


def test_a_worker_paused_for_memory_stops_the_wait_with_a_clear_error():
    # distributed pauses a worker past its memory 'pause' fraction; a paused worker starts
    # no task pinned to it, and a fit of more than 4 parts waited for it forever.
    from hepbdt.dask._cluster import Cluster, WorkerPausedError

    cluster, client = _start_cluster()
    try:
        workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
        parts = Cluster(client, workers, "hepbdt-test-paused", poll=0.2, pause_seconds=1.5)
        client.run(_pause_fraction, 1e-6, workers=[workers[0]])
        while client.scheduler_info(n_workers=-1)["workers"][workers[0]]["status"] != "paused":
            time.sleep(0.05)
        pinned = client.submit(np.arange, 1000, workers=[workers[0]],
                               allow_other_workers=False, pure=False)
        start = time.monotonic()
        with pytest.raises(WorkerPausedError, match=r"paused for 1.5 s.*memory_limit"):
            parts.gather([pinned])
        assert 1.5 <= time.monotonic() - start < 30
        # a pause that ends in time is waited out
        threading.Timer(0.8, client.run, (_pause_fraction, 0.8),
                        {"workers": [workers[0]]}).start()
        parts.paused_since.clear()
        parts.pause_seconds = 20.0
        assert len(parts.gather([pinned])[0]) == 1000
    finally:
        client.close()
        cluster.close()


def _stored_bytes(dask_worker) -> int:
    return sum(getattr(v, "nbytes", 0) for v in dask_worker.data.values())


def test_workers_hold_no_float_blocks_while_the_trees_grow(client, monkeypatch):
    """The parts keep their own events; the futures of the float blocks of X, y and w were
    kept in the workers' stores for the whole fit (X's float32 beside its one-byte codes)."""
    from hepbdt.dask import _estimators

    X, y, w = _data(n=20_000, m=8)
    stored = []
    grow = _estimators._DaskMixin._grow

    def spy(self, *args, **kwargs):
        stored.append(sum(client.run(_stored_bytes).values()))
        return grow(self, *args, **kwargs)

    monkeypatch.setattr(_estimators._DaskMixin, "_grow", spy)
    DaskBDTClassifier(boosting="newton", n_trees=2, max_depth=3).fit(*_dask(X, y, w),
                                                                     client=client)
    assert stored and max(stored) < 0.05 * X.nbytes, stored


def test_named_and_unnamed_dask_input_warn_as_memory_does(client):
    import dask.dataframe as dd
    import pandas as pd

    from hepbdt.estimators import FeatureNamesWarning

    X, y, w = _data(n=3_000, m=3)
    frame = dd.from_pandas(pd.DataFrame(X, columns=["a", "b", "c"]), npartitions=2)
    plain = DaskBDTClassifier(n_trees=3, max_depth=2).fit(*_dask(X, y), client=client)
    named = DaskBDTClassifier(n_trees=3, max_depth=2).fit(frame, _dask(y)[0].rechunk(1_500),
                                                         client=client)
    with pytest.warns(FeatureNamesWarning, match="fitted without feature names"):
        plain.decision_function(frame)
    with pytest.warns(FeatureNamesWarning, match=r"fitted with feature names \(a, b, c\)"):
        named.decision_function(_dask(X)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureNamesWarning)
        named.decision_function(frame[["c", "a", "b"]]).compute()  # by name, as memory
        plain.decision_function(_dask(X)[0]).compute()


def test_apply_on_the_cluster_notes_missing_values_the_training_never_had(client, tmp_path):
    """The count of such events was kept by each worker's copy of the job and lost: the
    cluster wrote the same scores as memory but said nothing of them."""
    import pandas as pd

    from hepbdt import apply as apply_in_memory
    from hepbdt.dask import apply as apply_on_cluster
    from hepbdt.scoring import MissingValueWarning

    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(300, 2)).astype(np.float32), columns=["x0", "x1"])
    model = BDTClassifier(n_trees=3).fit(X, (X["x0"] > 0).astype(int))
    inputs = []
    for name, nan_rows in (("a", [2, 5]), ("b", [0, 1, 9])):
        x0 = rng.normal(size=40).astype(np.float32)
        x0[nan_rows] = np.nan
        write_ttree(tmp_path / f"{name}.root", "t",
                    {"x0": x0, "x1": rng.normal(size=40).astype(np.float32)})
        inputs.append(f"{tmp_path / name}.root:t")
    for apply, where in ((apply_in_memory, {}), (apply_on_cluster, {"client": client})):
        with pytest.warns(MissingValueWarning, match=r"\('x0' in 5 events\)"):
            apply(model, inputs, tmp_path / apply.__module__ / "f_{stem}.root", **where)


def test_apply_on_a_cluster_of_threads_counts_each_missing_value_once(tmp_path):
    """On Client(processes=False) the tasks are handed the client's job itself: each added
    its file's count to the shared one and returned it, and the client added those again
    (30 such events noted as 240). The reference: the NaN the input files hold."""
    import pandas as pd

    from hepbdt.dask import apply as apply_on_cluster
    from hepbdt.scoring import MissingValueWarning

    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(300, 2)).astype(np.float32), columns=["x0", "x1"])
    model = BDTClassifier(n_trees=3).fit(X, (X["x0"] > 0).astype(int))
    inputs, n_nan = [], 0
    for k in range(3):
        x0 = rng.normal(size=40).astype(np.float32)
        x0[rng.random(40) < 0.25] = np.nan
        n_nan += int(np.isnan(x0).sum())
        write_ttree(tmp_path / f"in{k}.root", "t",
                    {"x0": x0, "x1": rng.normal(size=40).astype(np.float32)})
        inputs.append(f"{tmp_path / f'in{k}'}.root:t")
    with Client(processes=False, n_workers=1, threads_per_worker=2,
                dashboard_address=":0") as threads:
        with pytest.warns(MissingValueWarning, match=rf"\('x0' in {n_nan} events\)"):
            apply_on_cluster(model, inputs, tmp_path / "out_{stem}.root", client=threads)


def test_a_lazy_reads_model_keeps_the_branch_types_that_apply_checks(client, tmp_path):
    """A model fitted on a lazy read recorded no branch types: ``apply`` then scored a file
    whose ``flag`` had become an integer, where ``~flag`` is ``-1 - flag``, not ``!flag``,
    without a word. The lazy read now carries the types (as the in-memory read does) and
    the Dask fit keeps them."""
    from hepbdt.io import BranchTypeError, Sample, read
    from hepbdt.scoring import apply

    from .test_audit_branch_types import FEATURES, _write

    _write(tmp_path / "train.root", 1)
    source = f"{tmp_path / 'train.root'}:Events"
    samples = [Sample("s", source, cut="label == 1", label=1),
               Sample("b", source, cut="label == 0", label=0)]
    memory = read(samples, FEATURES, progress=False)
    lazy = read(samples, FEATURES, dask=True)
    assert lazy.branch_types == memory.branch_types == {"c": "float32[3]", "flag": "bool",
                                                        "x": "float32"}
    assert lazy.compute().branch_types == memory.branch_types
    model = DaskBDTClassifier(n_trees=3, max_depth=3).fit(
        lazy.X, lazy.y, lazy.w, client=client, feature_names=lazy.feature_names,
        branch_types=lazy.branch_types)
    model.save(tmp_path / "model.json")
    assert load_model(tmp_path / "model.json").branch_types_ == memory.branch_types
    _write(tmp_path / "other.root", 2, flag="int32")
    with pytest.raises(BranchTypeError, match="branch 'flag' is int32"):
        apply(tmp_path / "model.json", tmp_path / "other.root", tmp_path / "scores.root")
    assert not (tmp_path / "scores.root").exists()


def test_a_lazy_read_fits_whole_so_its_branch_types_cannot_be_left_behind(client, tmp_path):
    """``fit(data)`` on a lazy read takes its features, labels, weights, names and branch
    types: the same model as the arrays passed one by one, and ``apply`` refuses a file
    whose ``flag`` became an integer. Arguments that differ from the read's are refused,
    and so is a fit of arrays without y."""
    from hepbdt.io import BranchTypeError, Sample, read
    from hepbdt.scoring import apply

    from .test_audit_branch_types import FEATURES, _write

    _write(tmp_path / "train.root", 1)
    source = f"{tmp_path / 'train.root'}:Events"
    samples = [Sample("s", source, cut="label == 1", label=1),
               Sample("b", source, cut="label == 0", label=0)]
    lazy = read(samples, FEATURES, dask=True)
    whole = DaskBDTClassifier(n_trees=3, max_depth=3).fit(lazy, client=client)
    parts = DaskBDTClassifier(n_trees=3, max_depth=3).fit(
        lazy.X, lazy.y, lazy.w, client=client, feature_names=lazy.feature_names,
        branch_types=lazy.branch_types)
    X = lazy.compute().X  # named columns
    np.testing.assert_array_equal(whole.decision_function(X), parts.decision_function(X))
    assert list(whole.feature_names_in_) == list(FEATURES)
    assert whole.branch_types_ == read(samples, FEATURES, progress=False).branch_types
    whole.save(tmp_path / "model.json")
    _write(tmp_path / "other.root", 2, flag="int32")
    with pytest.raises(BranchTypeError, match="branch 'flag' is int32"):
        apply(tmp_path / "model.json", tmp_path / "other.root", tmp_path / "scores.root")
    other = f"{tmp_path / 'other.root'}:Events"  # ... and so does the model scoring its read
    with pytest.raises(BranchTypeError, match="X: branch 'flag' is int32"):
        whole.decision_function(read([Sample("s", other, cut="label == 1", label=1),
                                      Sample("b", other, cut="label == 0", label=0)],
                                     FEATURES, dask=True))
    other = f"{tmp_path / 'other.root'}:Events"  # ... and so does the model scoring its read
    with pytest.raises(BranchTypeError, match="X: branch 'flag' is int32"):
        whole.decision_function(read([Sample("s", other, cut="label == 1", label=1),
                                      Sample("b", other, cut="label == 0", label=0)],
                                     FEATURES, dask=True))
    with pytest.raises(ValueError, match="feature_names .* differ from the lazy read's"):
        DaskBDTClassifier(n_trees=3).fit(lazy, client=client, feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="sample_weight is given beside a lazy read"):
        DaskBDTClassifier(n_trees=3).fit(lazy, None, lazy.w + 1, client=client)
    with pytest.raises(TypeError, match="needs y"):
        DaskBDTClassifier(n_trees=3).fit(lazy.X, client=client)


@pytest.mark.parametrize(("timeout", "toml"), [(float("inf"), "inf"), (1e300, "1e300"),
                                               (float("nan"), "nan"), (0.0, "0.0")])
def test_a_timeout_without_end_is_refused(timeout, toml, tmp_path, capsys):
    # distributed reads timeout=inf as a time unit 'inf' (a KeyError from deep in its
    # connect) and 1e300 as a wait without end on an address that never answers
    from hepbdt.cli import main

    from .faults import tiny_config

    with pytest.raises(ValueError, match=r"^timeout=.* is not a number of seconds above 0 "
                                         r"and at most 86,400 \(a day\)$"):
        connect("tcp://127.0.0.1:9", timeout=timeout)
    path = tiny_config(tmp_path, extra=f'\n[dask]\nscheduler = "tcp://127.0.0.1:9"\n'
                                       f"timeout = {toml}\n")
    assert main(["train", str(path), "--check"]) == 2
    err = capsys.readouterr().err
    assert "[dask] timeout: " in err and "at most 86,400 (a day)" in err


@pytest.mark.parametrize("timeout", [np.int64(1), np.float32(1.5)])
def test_a_numpy_timeout_is_a_number_of_seconds(timeout):
    # distributed waits a NumPy number of seconds as any other (as hepbdt did before its
    # timeout check); the check refused them as "1 is not a number of seconds above 0"
    with pytest.raises(ClusterError, match=rf"within {float(timeout):g} s .*after "
                                           rf"{float(timeout):g} s"):
        connect("tcp://127.0.0.1:9", timeout=timeout)
