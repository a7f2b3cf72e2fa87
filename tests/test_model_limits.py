"""Model files are data with limits: memory proportional to the node count whatever the
depth (chains of depth 24, 30, 62; many trees beside one deep one), every value checked
(hepbdt JSON, XGBoost JSON, TMVA XML in any encoding), deep fits bounded too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hepbdt
import hepbdt.model
from hepbdt.cli import main
from hepbdt.engine import grower
from hepbdt.engine.predict import (
    DENSE_SLOTS_PER_NODE,
    MAX_DENSE_DEPTH,
    dense_fits,
    predict_naive,
    predict_per_tree,
)
from hepbdt.interop import from_tmva_xml, from_xgboost_json
from hepbdt.interop.tmva import TMVAFormatError
from hepbdt.interop.xgboost import XGBoostFormatError
from hepbdt.model import Forest, ModelFormatError
from tests.faults.models import (
    N_FEATURES,
    chain_arrays,
    chain_model,
    forest_dict,
    model_doc,
    xgboost_chain,
)

ROOT = Path(__file__).resolve().parents[1]


def _X(n: int = 500, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(scale=0.7, size=(n, N_FEATURES)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _many_trees(n_stumps: int) -> dict[str, Any]:
    """One depth-12 chain beside ``n_stumps`` stumps: depth 12, about 3 nodes a tree."""
    return model_doc([chain_arrays(MAX_DENSE_DEPTH), *[chain_arrays(1, seed=s) for s in range(n_stumps)]])


# -- memory bounded by the node count ------------------------------------------------------


def test_dense_layout_only_where_it_is_small() -> None:
    assert dense_fits(10, 150, 3) and dense_fits(1, 1, 0)
    assert not dense_fits(10_000, 30_000, 12)  # 10,000 x 4096 slots for 30,000 nodes
    assert not dense_fits(4, 4 * 49, 24) and not dense_fits(4, 500, 62)
    assert not dense_fits(1, 10**6, MAX_DENSE_DEPTH + 1)
    assert dense_fits(2, 2 * 4096 // DENSE_SLOTS_PER_NODE, 12)


@pytest.mark.parametrize("doc, dense", [
    (chain_model(3), True), (chain_model(24), False), (chain_model(62), False),
    (_many_trees(200), False),  # depth 12 but 201 x 4096 slots for 625 nodes
])
def test_forest_dense_is_decided_by_depth_and_node_count(doc, dense) -> None:
    forest = Forest.from_dict(doc["forest"])
    assert (forest.dense() is not None) == dense
    X = _X(200)
    np.testing.assert_allclose(forest.raw_score(X), predict_naive(X, forest) + forest.base_score,
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("depth", [24, 30, 62])
def test_chain_models_load_predict_and_inspect(tmp_path, depth, capsys) -> None:
    X = _X()
    path = _write(tmp_path / "chain.json", chain_model(depth))
    assert path.stat().st_size < 30_000
    model = hepbdt.load_model(path)
    assert model.forest_.max_depth == depth and model.forest_.dense() is None
    np.testing.assert_allclose(model.decision_function(X),
                               predict_naive(X, model.forest_) + model.forest_.base_score,
                               rtol=1e-12, atol=1e-12)
    xgb = from_xgboost_json(_write(tmp_path / "xgb.json", xgboost_chain(depth)))
    assert xgb.forest_.max_depth == depth
    np.testing.assert_allclose(xgb.decision_function(X),
                               predict_naive(X, xgb.forest_) + xgb.forest_.base_score,
                               rtol=1e-12, atol=1e-12)
    assert main(["inspect", str(path), "--tree", "0"]) == 0
    out = capsys.readouterr().out
    assert f"depth up to {depth}" in out and out.count("leaf:") == depth + 1
    # the text grows with the nodes, not their square: deep nodes keep an indent of 16
    # levels and say their depth (a chain of 20,000 printed 800 MB)
    assert max(len(line) for line in out.splitlines()) < 200
    assert f"[depth {depth}] leaf:" in out


def test_weighted_median_holds_a_chunk_of_events_at_a_time(monkeypatch) -> None:
    doc = forest_dict([chain_arrays(4, seed=s) for s in range(7)])
    doc.update(aggregation="weighted_median", tree_weights=[1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 1.5])
    forest = Forest.from_dict(doc)
    X = _X(3000)
    whole = hepbdt.model._weighted_median_score(predict_per_tree(X, forest), forest.tree_weights)
    rows = []
    monkeypatch.setattr(hepbdt.model, "MEDIAN_CHUNK", 7 * 1000)
    monkeypatch.setattr(hepbdt.model, "predict_per_tree",
                        lambda X, f, t: rows.append(len(X)) or predict_per_tree(X, f, t))
    np.testing.assert_array_equal(forest.raw_score(X), whole)
    assert max(rows) == 1024 and sum(rows) == 3000  # at least 16 blocks of 64 events a chunk


def test_deep_level_histograms_are_built_in_batches(monkeypatch) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=3000) > 0).astype(int)

    def fit() -> hepbdt.BDTClassifier:
        return hepbdt.BDTClassifier(max_depth=30, n_trees=2, min_child_weight=0,
                                    quantised_histograms=True).fit(X, y)

    reference = fit()
    counts: list[int] = []
    build = grower._TreeEvents.histograms
    monkeypatch.setattr(grower._TreeEvents, "histograms",
                        lambda self, count, *a, **k: counts.append(count) or build(self, count, *a, **k))
    monkeypatch.setattr(grower, "LEVEL_HISTOGRAM_BYTES", 20 * 6 * 256 * 40)  # 20 nodes
    model = fit()
    assert max(counts) <= 20
    for name in ("feature", "threshold", "left", "value"):  # integer sums: the same trees
        np.testing.assert_array_equal(getattr(model.forest_, name), getattr(reference.forest_, name))


def test_node_arrays_grow_no_further_than_the_nodes_that_can_exist() -> None:
    nodes = grower._NodeArrays(5, max_nodes=2 * 40 - 1)
    for _ in range(30):
        nodes.add(2)
        assert nodes.feature.size <= max(nodes.size, 79)
    assert nodes.size == 61 and nodes.feature.size == 79


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_models_load_and_predict_under_a_memory_limit(tmp_path) -> None:
    """In a child process whose address space is limited to what it uses after importing
    hepbdt and compiling the kernels, plus 512 MiB: deep chains (hepbdt and XGBoost JSON),
    10,000 stumps beside a depth-12 chain (10,001 x 4096 dense slots would be about 860 MB),
    and a max_depth=30 fit, each predicting as the naive walk."""
    for depth in (24, 30, 62):
        _write(tmp_path / f"chain{depth}.json", chain_model(depth))
        _write(tmp_path / f"xgb{depth}.json", xgboost_chain(depth))
    _write(tmp_path / "many.json", _many_trees(10_000))
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "MALLOC_ARENA_MAX": "2",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert report["limit_mib"] == report["baseline_mib"] + 512
    assert set(report["diff"]) == {*(f"chain{d}" for d in (24, 30, 62)),
                                   *(f"xgb{d}" for d in (24, 30, 62)), "many", "fit30"}
    assert max(report["diff"].values()) <= 1e-12, report


CHILD = textwrap.dedent('''
    import json, resource, sys
    from pathlib import Path
    import numpy as np
    import hepbdt
    from hepbdt.engine.predict import predict_naive, predict_raw
    from hepbdt.interop import from_xgboost_json

    def vm_mib(key):
        for line in open("/proc/self/status"):
            if line.startswith(key + ":"):
                return int(line.split()[1]) // 1024

    hepbdt.warmup()
    rng = np.random.default_rng(1)
    X = rng.normal(scale=0.7, size=(2000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=2000) > 0).astype(int)
    small = hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y)
    predict_raw(X, small.forest_)  # compile the node-by-node walk too
    baseline = vm_mib("VmSize")
    limit = (baseline + 512) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    folder = Path(sys.argv[1])
    diff = {}
    for path in sorted(folder.glob("*.json")):
        load = from_xgboost_json if path.stem.startswith("xgb") else hepbdt.load_model
        model = load(path)
        Xp = X[:64] if path.stem == "many" else X
        got = model.decision_function(Xp)
        want = predict_naive(Xp, model.forest_) + model.forest_.base_score
        diff[path.stem] = float(np.max(np.abs(got - want)))
    deep = hepbdt.BDTClassifier(max_depth=30, n_trees=5).fit(X, y)
    got = deep.decision_function(X)
    want = predict_naive(X, deep.forest_) + deep.forest_.base_score
    diff["fit30"] = float(np.max(np.abs(got - want)))
    print(json.dumps({"baseline_mib": baseline, "limit_mib": limit >> 20,
                      "peak_mib": vm_mib("VmPeak"), "rss_mib": vm_mib("VmHWM"), "diff": diff}))
''')


# -- every value checked --------------------------------------------------------------------


def _edited(tmp_path: Path, edit) -> Path:
    doc = chain_model(3, n_trees=2)
    edit(doc)
    return _write(tmp_path / "bad.json", doc)


def _set(key: str, value: Any):
    return lambda d: d["forest"].__setitem__(key, value)


def _item(key: str, i: int, value: Any):
    return lambda d: d["forest"][key].__setitem__(i, value)


@pytest.mark.parametrize("edit, message", [
    (_set("base_score", float("nan")), r"base_score: nan is not a finite number"),
    (_set("base_score", "NaN"), r"base_score: 'NaN' is not a number"),
    (_set("base_score", True), r"base_score: True is not a number"),
    (_set("n_features", 0), r"n_features: 0 is outside \[1, 1000000\]"),
    (_set("n_features", 5.0), r"n_features: 5\.0 is not an integer"),
    (_set("n_features", 10**400), r"n_features: an integer of about 401 digits"),
    (_set("aggregation", "mean"), r"aggregation: 'mean', valid"),
    (_item("missing_left", 1, "no"), r"missing_left\[1\]: 'no' has the wrong type"),
    (_item("missing_left", 1, 0), r"missing_left\[1\]: 0 has the wrong type"),
    (_item("feature", 0, 1.5), r"feature\[0\]: 1\.5 has the wrong type"),
    (_item("right", 0, False), r"right\[0\]: False has the wrong type"),
    (_item("left", 0, 2**64), r"left\[0\]: 18446744073709551616 is outside"),
    (_item("bin_threshold", 0, 256), r"bin_threshold\[0\]: 256 is outside \[0, 255\]"),
    (_item("threshold", 0, "inf"), r"threshold\[0\]: 'inf' has the wrong type"),
    (_item("threshold", 0, 1e300), r"threshold\[0\]: 1e\+300 is outside the float32 range"),
    (_item("value", 1, 10**400), r"value: an integer is too large for a float"),
    (_item("gain", 0, "NaN"), r"split gains must be finite and covers numbers"),
    (_set("tree_weights", [1.0, "Infinity"]), r"leaf values and tree weights must be finite"),
    (_set("tree_offsets", [0, 7.0, 14]), r"tree_offsets\[1\]: 7\.0 has the wrong type"),
    (_set("feature", "abc"), r"forest\.feature: expected a list, got str"),
    (_set("extra", {"score_min": 1.0}), r"extra\.score_min: 1\.0 must be below 1"),
    (_set("extra", [1]), r"extra: expected an object, got list"),
    # 950 levels parsed (below the parser's limit), and saving, copying and pickling the
    # model then recursed too deep
    (_set("extra", {"note": json.loads("[" * 100 + "]" * 100)}), r"extra: objects and lists "
     r"nest more than 32 deep"),
    (lambda d: d["params"].update(boosting="evil"), r"params\.boosting: boosting='evil' is not valid"),
    (lambda d: d["params"].update(max_depth=31), r"params\.max_depth"),
    (lambda d: d["params"].update(n_trees=2.5), r"params\.n_trees"),
    (lambda d: d["params"].update(learning_rate=[1]),
     r"params\.learning_rate: learning_rate=\[1\] is not valid; expected a number in \(0, 10\]"),
    (lambda d: d["params"].update(n_jobs="all"), r"params\.n_jobs: 'all' is not valid"),
    (lambda d: d["params"].update(loss="squared"), r"params\.loss: loss 'squared' is not a classification"),
    (lambda d: d.update(format_version=True), r"format_version True is not supported"),
    (lambda d: d.update(classes=[[0], 1]), r"'classes' with 2 different labels"),
    (lambda d: d.update(classes=[1, 1]), r"'classes' with 2 different labels"),
    (lambda d: d.update(feature_names=[1, 2, 3, 4, 5]), r"feature_names must list 5 names"),
    (lambda d: d.update(best_iteration=1.5), r"best_iteration 1\.5 must be an integer"),
    (lambda d: d.update(validation_loss=["x"]), r"validation_loss must be a list of numbers"),
    (lambda d: d.update(evals_result={"v": {"loss": "abc"}}), r"evals_result must"),
])
def test_every_value_of_a_model_file_is_checked(tmp_path, edit, message) -> None:
    path = _edited(tmp_path, edit)
    with pytest.raises(ModelFormatError, match=message) as info:
        hepbdt.load_model(path)
    assert str(path) in str(info.value)


def test_non_finite_thresholds_are_read_as_the_writer_spells_them(tmp_path) -> None:
    doc = chain_model(3, n_trees=1)
    doc["forest"]["threshold"][0] = "-Infinity"  # every event goes right
    model = hepbdt.load_model(_write(tmp_path / "m.json", doc))
    assert model.forest_.threshold[0] == -np.inf and np.isinf(model.forest_.threshold[1])
    X = _X(50)
    np.testing.assert_array_equal(model.decision_function(X),
                                  predict_naive(X, model.forest_) + model.forest_.base_score)


@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, r"nested too deeply"),
    ('{"format": ' + "7" * 5000 + "}", r"not a JSON model file \(Exceeds the limit"),
    ("", r"the file is empty"),
    (" \n", r"the file is empty"),
    ('{"format": "hepbdt-model", "format_versi', r"not a JSON model file"),
    ("\ufeff{}".encode("utf-16").decode("latin-1"), r"not a JSON model file|not a hepbdt model"),
])
def test_malformed_json_is_a_model_format_error_naming_the_file(tmp_path, text, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="latin-1")
    with pytest.raises(ModelFormatError, match=message) as info:
        hepbdt.load_model(path)
    assert str(path) in str(info.value)


def test_files_of_many_small_parts_are_refused_before_parsing(tmp_path) -> None:
    """A JSON model padded with empty lists under a key the reader ignores, or a TMVA file
    with empty elements in a section it ignores, took 25-28 times its size to parse (a
    file under the size limit, ~14 GB); refused, where a real model file is read."""
    X = np.random.default_rng(0).normal(size=(400, 3))
    model = hepbdt.BDTClassifier(n_trees=30, max_depth=3).fit(X, (X[:, 0] > 0).astype(int))
    model.save(tmp_path / "m.json")
    model.save_tmva(tmp_path / "m.weights.xml")
    hepbdt.load_model(tmp_path / "m.json")
    from_tmva_xml(tmp_path / "m.weights.xml")
    doc = (tmp_path / "m.json").read_text().rstrip().rstrip("}")
    (tmp_path / "pad.json").write_text(doc + ', "notes": [' + "[]," * 200_000 + "0]}")
    with pytest.raises(ModelFormatError, match=r"pad\.json: 200,0\d\d JSON arrays, objects or "
                                               r"XML tags in [\d,]+ bytes, more than"):
        hepbdt.load_model(tmp_path / "pad.json")
    text = (tmp_path / "m.weights.xml").read_text()
    assert "<MVAPdfs/>" in text
    (tmp_path / "pad.weights.xml").write_text(text.replace("<MVAPdfs/>", "<MVAPdfs>" + "<a/>"
                                                           * 200_000 + "</MVAPdfs>"))
    with pytest.raises(TMVAFormatError, match=r"more than a TMVA weight file holds"):
        from_tmva_xml(tmp_path / "pad.weights.xml")


def test_directories_large_files_and_many_nodes_are_refused(tmp_path, monkeypatch) -> None:
    with pytest.raises(ModelFormatError, match="is a directory, not a model file"):
        hepbdt.load_model(tmp_path)
    path = _write(tmp_path / "m.json", chain_model(20))
    monkeypatch.setattr(hepbdt.model, "MAX_NODES", 100)
    with pytest.raises(ModelFormatError, match=r"164 nodes or more; forests of more than 100 nodes"):
        hepbdt.load_model(path)
    with pytest.raises(XGBoostFormatError, match=r"more than 100 nodes"):
        from_xgboost_json(_write(tmp_path / "x.json", xgboost_chain(20)))
    monkeypatch.setattr(hepbdt.model, "MAX_MODEL_BYTES", 1000)
    with pytest.raises(ModelFormatError, match=r"m\.json: the file has \d+ bytes; model files"):
        hepbdt.load_model(path)
    with pytest.raises(XGBoostFormatError, match=r"x\.json: the file has \d+ bytes"):
        from_xgboost_json(tmp_path / "x.json")


def test_kfold_manifest_values_are_checked(tmp_path) -> None:
    for bad in ({"models": ["a.json", 3], "k": 2}, {"models": ["a.json", "b.json"], "k": True},
                {"models": ["a.json", "b.json"], "k": 2, "format_version": 1.0}):
        doc = {"kind": "kfold", "format_version": 1, "by": "event", **bad}
        with pytest.raises(ModelFormatError, match="k-fold manifest"):
            hepbdt.load_model(_write(tmp_path / "kfold.json", doc))


# -- XGBoost JSON ---------------------------------------------------------------------------


def _tree(d: dict[str, Any]) -> dict[str, Any]:
    return d["learner"]["gradient_booster"]["model"]["trees"][0]


def _at(key: str, i: int, value: Any):
    return lambda d: _tree(d)[key].__setitem__(i, value)


def _mparam(d: dict[str, Any]) -> dict[str, Any]:
    return d["learner"]["learner_model_param"]


@pytest.mark.parametrize("edit, message", [
    (_at("left_children", 0, 1.5), r"left_children\[0\]: 1\.5 has the wrong type"),
    (_at("left_children", 0, 2**70), r"left_children: a value is too large"),
    (_at("split_indices", 0, True), r"split_indices\[0\]: True has the wrong type"),
    (_at("split_conditions", 0, "1"), r"split_conditions\[0\]: '1' has the wrong type"),
    (_at("default_left", 0, "no"), r"default_left\[0\]: 'no' has the wrong type"),
    (_at("default_left", 0, 2), r"default_left: values must be 0 or 1"),
    (_at("loss_changes", 0, [1]), r"loss_changes\[0\]: \[1\] has the wrong type"),
    (lambda d: _tree(d).__setitem__("left_children", "abc"), r"left_children: expected a list, got str"),
    (lambda d: _tree(d)["tree_param"].__setitem__("num_nodes", 7.0), r"num_nodes: 7\.0 is not an integer"),
    (lambda d: _mparam(d).__setitem__("num_feature", "1.5"), r"num_feature: '1\.5' is not an integer"),
    (lambda d: _mparam(d).__setitem__("num_feature", str(10**7)), r"num_feature=10000000; need 1 to"),
    (lambda d: d["learner"]["objective"].__setitem__("name", ["binary:logistic"]), r"objective \['binary"),
    (lambda d: d["learner"].__setitem__("feature_names", "abc"), r"feature_names must be a list"),
    (lambda d: d["learner"]["gradient_booster"].__setitem__("name", {"x": 1}), r"booster \{'x': 1\}"),
])
def test_every_value_of_an_xgboost_file_is_checked(tmp_path, edit, message) -> None:
    doc = xgboost_chain(3, n_trees=2)
    edit(doc)
    path = _write(tmp_path / "xgb.json", doc)
    with pytest.raises(XGBoostFormatError, match=message) as info:
        from_xgboost_json(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("text, message", [
    ('{"learner": ' + "[" * 100_000 + "]" * 100_000 + "}", r"not a JSON file \(nested too deeply\)"),
    ('{"learner": ' + "1" * 5000 + "}", r"not a JSON file \(Exceeds the limit"),
    ("", r"the file is empty"),
])
def test_malformed_xgboost_json_is_refused(tmp_path, text, message) -> None:
    path = tmp_path / "xgb.json"
    path.write_text(text)
    with pytest.raises(XGBoostFormatError, match=message):
        from_xgboost_json(path)
    with pytest.raises(XGBoostFormatError, match="is a directory"):
        from_xgboost_json(tmp_path)


# -- TMVA XML ---------------------------------------------------------------------------------


BOMB = ('<?xml version="1.0" encoding="{enc}"?>\n<!DOCTYPE MethodSetup [\n'
        '<!ENTITY a "aaaaaaaaaaaaaaaaaaaa">\n<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n'
        '<MethodSetup Method="BDT::BDT">&b;</MethodSetup>\n')


@pytest.mark.parametrize("encoding", ["UTF-16", "UTF-16-LE", "UTF-8"])
def test_tmva_doctype_is_refused_in_any_encoding(tmp_path, encoding) -> None:
    path = tmp_path / "weights.xml"
    text = BOMB.replace("{enc}", encoding.replace("-LE", ""))
    data = text.encode("utf-16") if encoding == "UTF-16" else text.encode(encoding.lower())
    assert b"<!DOCTYPE" not in data or encoding == "UTF-8"
    path.write_bytes(data)
    with pytest.raises(TMVAFormatError, match="DOCTYPE/ENTITY declarations are not accepted"):
        from_tmva_xml(path)


def test_tmva_file_in_utf16_reads_as_in_utf8(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, y)
    model.save_tmva(tmp_path / "w8.xml")
    text = (tmp_path / "w8.xml").read_text(encoding="utf-8")
    (tmp_path / "w16.xml").write_bytes(text.replace('encoding="UTF-8"', 'encoding="UTF-16"')
                                       .encode("utf-16"))
    np.testing.assert_array_equal(from_tmva_xml(tmp_path / "w16.xml").decision_function(X),
                                  from_tmva_xml(tmp_path / "w8.xml").decision_function(X))
    bad = text.replace('Min="', 'Min="x', 1)
    (tmp_path / "bad.xml").write_text(bad, encoding="utf-8")
    with pytest.raises(TMVAFormatError, match=r"Min='x.*' is not a number"):
        from_tmva_xml(tmp_path / "bad.xml")
    with pytest.raises(TMVAFormatError, match="is a directory"):
        from_tmva_xml(tmp_path)


def _chain_estimator(depth: int, missing_left: bool):
    from hepbdt.persistence import estimator_from_dict

    doc = chain_model(depth, n_trees=2)
    forest = doc["forest"]
    forest["missing_left"] = [missing_left] * len(forest["missing_left"])
    level = 0
    for k, f in enumerate(forest["feature"]):  # a new feature at every level of a chain
        if f >= 0:
            forest["feature"][k] = level % depth
            level += 1
    forest["n_features"] = depth
    return estimator_from_dict(doc)


def test_tmva_export_of_nan_branches_is_bounded(tmp_path) -> None:
    """Each missing-goes-right node repeats its right subtree under the NaN branch: a deep
    chain would need ~2^depth TMVA nodes, so the export is refused instead of exhausting
    memory; without NaN branches (missing='none') it is written."""
    from hepbdt.interop.tmva_export import TMVAExportError, to_tmva_xml

    model = _chain_estimator(24, missing_left=False)
    with pytest.raises(TMVAExportError, match="more than .* TMVA nodes"):
        to_tmva_xml(model, tmp_path / "deep.xml", missing="exact")
    assert not (tmp_path / "deep.xml").exists()
    to_tmva_xml(model, tmp_path / "plain.xml", missing="none")
    assert (tmp_path / "plain.xml").stat().st_size < 1_000_000


def test_tmva_export_refuses_trees_too_deep_for_xml(tmp_path) -> None:
    from hepbdt.interop.tmva_export import TMVAExportError, to_tmva_xml

    model = _chain_estimator(3000, missing_left=True)
    with pytest.raises(TMVAExportError, match="deeper than the 200 levels"):
        to_tmva_xml(model, tmp_path / "deep.xml", missing="none")


def test_imports_of_more_rounds_than_n_trees_allows_are_refused(tmp_path, monkeypatch) -> None:
    """An XGBoost file of 100,001 trees was read (13 s), and its hepbdt model file and TMVA
    export were then refused by load_model and from_tmva_xml (n_trees at most 100,000);
    the limit is scaled down here to 3 rounds."""
    import hepbdt.estimators

    _write(tmp_path / "x4.json", xgboost_chain(2, n_trees=4))
    _write(tmp_path / "x3.json", xgboost_chain(2, n_trees=3))
    model = from_xgboost_json(tmp_path / "x4.json")
    model.save_tmva(tmp_path / "m4.weights.xml")
    monkeypatch.setattr(hepbdt.estimators, "MAX_TREES", 3)
    model.save(tmp_path / "m4.json")  # what the readers make of 4 rounds where 3 is the limit
    with pytest.raises(ModelFormatError, match=r"n_trees=4 is not valid"):
        hepbdt.load_model(tmp_path / "m4.json")
    with pytest.raises(XGBoostFormatError, match=r"x4\.json: the model has 4 boosting rounds; a "
                       r"hepbdt model has at most 3 \(n_trees' limit\)"):
        from_xgboost_json(tmp_path / "x4.json")
    with pytest.raises(TMVAFormatError, match=r"m4\.weights\.xml: the file has 4 boosting rounds"):
        from_tmva_xml(tmp_path / "m4.weights.xml")
    assert from_xgboost_json(tmp_path / "x3.json").forest_.n_trees == 3
    # best_iteration keeps 2 of 4 trees: within the limit
    doc = xgboost_chain(2, n_trees=4)
    doc["learner"]["attributes"] = {"best_iteration": "1"}
    doc["learner"]["gradient_booster"]["model"]["iteration_indptr"] = [0, 1, 2, 3, 4]
    assert from_xgboost_json(_write(tmp_path / "best.json", doc)).forest_.n_trees == 2
