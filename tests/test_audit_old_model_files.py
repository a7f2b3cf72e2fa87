"""Model files written by earlier versions of hepbdt score as they did, or are refused.

The files in ``tests/data/old_models`` were written by the commits their names begin with
(``git worktree add`` of that commit, then ``tests/data/old_models/README.md``'s script):
``0a2bb77`` (2026-11-26, the first of format version 1: no bin edges, feature names for
unnamed columns), ``973b088`` (2026-11-26: multi-class, SAMME with alpha in the leaves,
leaf-wise trees) and ``ba0e7bb`` (2026-12-03: SAMME's alphas as tree weights); the two
``634f42a`` files are ``hepbdt train`` outputs of 2026-11-26 (a feature ``nJ - 2`` of a
uint32 branch, and plain branches). Each is scored against a walk of its JSON trees
written here from the documented format (``x < threshold`` goes left, NaN follows
``missing_left``), not against hepbdt's predictors.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.io.errors import InputError
from tests.ntuples import write_ttree

OLD = Path(__file__).parent / "data" / "old_models"
FITTED = sorted(p.name for p in OLD.glob("*.json") if not p.name.startswith("634f42a"))


def _float(value) -> float:
    """A JSON number or the writer's "Infinity"/"-Infinity"/"NaN"."""
    return float(value) if not isinstance(value, str) else float(value.replace("inity", ""))


def _leaf(forest: dict, t: int, x: np.ndarray) -> float:
    """The leaf value tree t gives the event x, walked node by node."""
    node = forest["tree_offsets"][t]
    while forest["feature"][node] != -1:
        v = float(x[forest["feature"][node]])
        if math.isnan(v):
            left = forest["missing_left"][node]
        else:
            left = v < _float(forest["threshold"][node])
        node = forest["left"][node] if left else forest["right"][node]
    return _float(forest["value"][node])


def _class_scores(forest: dict, X: np.ndarray) -> np.ndarray:
    """(n, K) scores: each class's base score plus its trees' weighted leaves (K = 1 for
    a single score; "weighted_mean" divides by the weights' sum)."""
    n_trees = len(forest["tree_offsets"]) - 1
    K = forest["extra"].get("n_classes", 1)
    rounds = n_trees // K
    bases = forest["extra"].get("base_scores", [forest["base_score"]])
    weights = [_float(w) for w in forest["tree_weights"]]
    out = np.empty((X.shape[0], K))
    for i, x in enumerate(X):
        for k in range(K):
            trees = range(k * rounds, (k + 1) * rounds)
            total = sum(weights[t] * _leaf(forest, t, x) for t in trees)
            if forest["aggregation"] == "weighted_mean":
                total /= sum(weights[t] for t in trees)
            out[i, k] = total + bases[k]
    return out


def _events(forest: dict, n_features: int) -> np.ndarray:
    """Random float32 events with NaN, plus one event on every split's threshold."""
    rng = np.random.default_rng(1)
    X = rng.normal(0, 1.5, (300, n_features)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    rows = []
    for node, f in enumerate(forest["feature"]):
        if f >= 0 and math.isfinite(_float(forest["threshold"][node])):
            row = X[node % 300].copy()
            row[f] = np.float32(_float(forest["threshold"][node]))
            rows.append(row)
    return np.vstack([X, *rows])


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("name", FITTED)
def test_old_model_file_scores_as_its_trees_say(name):
    """Every old file loads and scores as a walk of its trees: decision_function, the
    documented link of predict_proba (sigmoid of 2F for the deviance and real AdaBoost's
    exponential loss, of F for the logistic loss; AdaBoost's [score_min, 1] clipped onto
    [0, 1]; softmax of the class scores) and predict."""
    doc = json.loads((OLD / name).read_text())
    forest = doc["forest"]
    model = hepbdt.load_model(OLD / name)
    X = _events(forest, forest["n_features"])
    scores = _class_scores(forest, X)
    if scores.shape[1] > 1:
        np.testing.assert_allclose(model.decision_function(X), scores, rtol=1e-12, atol=1e-12)
        if forest["extra"].get("algorithm") != "SAMME":
            shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
            np.testing.assert_allclose(model.predict_proba(X),
                                       shifted / shifted.sum(axis=1, keepdims=True), rtol=1e-12)
        np.testing.assert_array_equal(model.predict(X),
                                      np.asarray(doc["classes"])[scores.argmax(axis=1)])
        return
    score = scores[:, 0]
    if doc["estimator"] == "BDTRegressor":
        np.testing.assert_allclose(model.predict(X), score, rtol=1e-12, atol=1e-12)
        return
    np.testing.assert_allclose(model.decision_function(X), score, rtol=1e-12, atol=1e-12)
    if forest["aggregation"] == "weighted_mean":
        low = forest["extra"].get("score_min", -1.0)
        p = np.clip((score - low) / (1.0 - low), 0.0, 1.0)
    else:
        c = 1.0 if forest["extra"].get("loss") == "logistic" else 2.0
        p = 1.0 / (1.0 + np.exp(-c * score))
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], p, rtol=1e-12, atol=1e-15)
    decided = ~np.isclose(p, 0.5, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(model.predict(X)[decided],
                                  np.asarray(doc["classes"])[(p > 0.5).astype(int)][decided])


def _ntuple(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A TTree of the branches the 634f42a files read: nJ (UInt_t, 0 to 4) and x0."""
    rng = np.random.default_rng(2)
    nJ = np.arange(200, dtype=np.uint32) % 5
    x0 = (np.round(rng.normal(0, 1, 200) * 4) / 4).astype(np.float32)
    write_ttree(path, "Events", {"nJ": nJ, "x0": x0})
    return nJ, x0


def _applied(model_path: Path, tmp_path: Path) -> np.ndarray:
    """hepbdt.apply's scores of the ntuple."""
    hepbdt.apply(hepbdt.load_model(model_path), tmp_path / "in.root", tmp_path / "out.root",
                 tree="Events")
    with uproot.open(tmp_path / "out.root") as f:
        return f["Events"]["bdt_score"].array(library="np")


def test_old_file_of_branch_features_applies_as_its_trees_say(tmp_path):
    """A file saved before 2026-12-04 whose features read branches as they are applies,
    scoring as a walk of its trees."""
    nJ, x0 = _ntuple(tmp_path / "in.root")
    forest = json.loads((OLD / "634f42a_branch_features.json").read_text())["forest"]
    X = np.column_stack([nJ.astype(np.float32), x0])
    np.testing.assert_allclose(_applied(OLD / "634f42a_branch_features.json", tmp_path),
                               _class_scores(forest, X)[:, 0], rtol=1e-12)


def test_old_file_of_a_computed_feature_is_refused_by_apply(tmp_path):
    """hepbdt of 2026-11-26 computed ``nJ - 2`` of a uint32 branch in uint32 (4294967294
    for nJ = 0), today's rules give -2: its file (no "constants" marker) is refused, not
    scored with features it never saw; with the marker the file claims today's rules."""
    nJ, x0 = _ntuple(tmp_path / "in.root")
    doc = json.loads((OLD / "634f42a_computed_feature.json").read_text())
    trained_on = np.column_stack([(nJ - np.uint32(2)).astype(np.float32), x0])  # uint32 wraps
    today = np.column_stack([nJ.astype(np.float64) - 2, x0]).astype(np.float32)
    old_scores = _class_scores(doc["forest"], trained_on)[:, 0]
    assert np.any(old_scores != _class_scores(doc["forest"], today)[:, 0])  # the refusal matters
    with pytest.raises(InputError, match=r"'nJ - 2' is computed.*before 2026-11-27.*Retrain"):
        _applied(OLD / "634f42a_computed_feature.json", tmp_path)
    doc["constants"] = "bare"  # the edit the message names, for a model of today's rules
    (tmp_path / "marked.json").write_text(json.dumps(doc))
    np.testing.assert_allclose(_applied(tmp_path / "marked.json", tmp_path),
                               _class_scores(doc["forest"], today)[:, 0], rtol=1e-12)


def test_old_kfold_fold_file_of_a_computed_feature_is_refused(tmp_path):
    """A k-fold manifest whose fold files predate the marker is refused alike."""
    _ntuple(tmp_path / "in.root")
    for i in range(2):
        doc = json.loads((OLD / "634f42a_computed_feature.json").read_text())
        doc["forest"]["base_score"] += i  # two different fold models
        (tmp_path / f"m_fold{i}.json").write_text(json.dumps(doc))
    (tmp_path / "m.json").write_text(json.dumps(
        {"format": "hepbdt-kfold", "format_version": 1, "kind": "kfold", "k": 2, "by": "nJ",
         "models": ["m_fold0.json", "m_fold1.json"], "features": ["nJ - 2", "x0"]}))
    with pytest.raises(InputError, match=r"'nJ - 2' is computed.*before 2026-11-27"):
        _applied(tmp_path / "m.json", tmp_path)
    shutil.rmtree(tmp_path / "out.root", ignore_errors=True)
