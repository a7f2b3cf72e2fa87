"""Faults of model files given to ``hepbdt inspect`` and ``hepbdt apply``; and the model
documents (hepbdt and XGBoost JSON, "chain" trees of any depth) the limit tests build."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tests.faults import DATA, Fault

N_FEATURES = 5


def chain_arrays(depth: int, seed: int = 0) -> dict[str, list[Any]]:
    """One "chain" tree of ``depth`` in preorder: each internal node has a leaf on the left
    and the rest of the chain on the right (2 * depth + 1 nodes; local child indices)."""
    rng = np.random.default_rng(seed)
    n = 2 * depth + 1
    feature, left, right = [-1] * n, [-1] * n, [-1] * n
    threshold = [float("inf")] * n
    missing_left = [False] * n
    value = [0.0] * n
    for i in range(depth):
        k = 2 * i
        feature[k] = i % N_FEATURES
        threshold[k] = float(np.float32(rng.normal(scale=0.5)))
        missing_left[k] = bool(i % 3 == 0)
        left[k], right[k] = k + 1, k + 2
        value[k + 1] = round(float(rng.normal()), 6)
    value[n - 1] = round(float(rng.normal()), 6)
    return {"feature": feature, "threshold": threshold, "left": left, "right": right,
            "missing_left": missing_left, "value": value}


def forest_dict(trees: list[dict[str, list[Any]]], base_score: float = 0.25) -> dict[str, Any]:
    """A forest in the model file's layout (``Forest.to_dict``) from local-index trees."""
    out: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right",
                                                 "missing_left", "value")}
    offsets = [0]
    for tree in trees:
        start = offsets[-1]
        for k in ("feature", "threshold", "missing_left", "value"):
            out[k] += tree[k]
        for k in ("left", "right"):
            out[k] += [c + start if c >= 0 else -1 for c in tree[k]]
        offsets.append(start + len(tree["feature"]))
    n = offsets[-1]
    out["threshold"] = ["Infinity" if t == float("inf") else t for t in out["threshold"]]
    return {**out, "bin_threshold": [0] * n, "gain": [1.0] * n, "cover": [1.0] * n,
            "tree_offsets": offsets, "tree_weights": [1.0] * len(trees),
            "n_features": N_FEATURES, "base_score": base_score, "aggregation": "sum", "extra": {}}


def model_doc(trees: list[dict[str, list[Any]]]) -> dict[str, Any]:
    """A hepbdt model file's document (``BDTClassifier.to_dict``) of these trees."""
    return {"format": "hepbdt-model", "format_version": 1, "estimator": "BDTClassifier",
            "params": {"n_trees": len(trees), "max_depth": 3}, "feature_names": None,
            "feature_definitions": {}, "forest": forest_dict(trees), "classes": [0, 1],
            "train_loss": [], "validation_loss": None, "best_iteration": None,
            "evals_result": {}}


def chain_model(depth: int, n_trees: int = 4) -> dict[str, Any]:
    """A hepbdt model of ``n_trees`` chains of ``depth``."""
    return model_doc([chain_arrays(depth, seed=t) for t in range(n_trees)])


def xgboost_chain(depth: int, n_trees: int = 4) -> dict[str, Any]:
    """An XGBoost JSON model (``Booster.save_model``) of ``n_trees`` chains of ``depth``."""
    trees = []
    for t in range(n_trees):
        c = chain_arrays(depth, seed=t)
        n = len(c["feature"])
        leaf = [f < 0 for f in c["feature"]]
        trees.append({
            "id": t, "left_children": c["left"], "right_children": c["right"],
            "split_indices": [max(f, 0) for f in c["feature"]],
            "split_conditions": [v if is_leaf else thr
                                 for v, thr, is_leaf in zip(c["value"], c["threshold"], leaf,
                                                            strict=True)],
            "default_left": [int(m) for m in c["missing_left"]], "split_type": [0] * n,
            "loss_changes": [0.0 if is_leaf else 1.0 for is_leaf in leaf],
            "sum_hessian": [1.0] * n, "base_weights": [0.0] * n,
            "categories": [], "categories_nodes": [], "categories_segments": [],
            "categories_sizes": [],
            "tree_param": {"num_deleted": "0", "num_feature": str(N_FEATURES),
                           "num_nodes": str(n), "size_leaf_vector": "1"}})
    return {"learner": {
        "objective": {"name": "binary:logistic"},
        "learner_model_param": {"base_score": "5E-1", "num_class": "0",
                                "num_feature": str(N_FEATURES), "num_target": "1"},
        "gradient_booster": {"name": "gbtree", "model": {"trees": trees,
                                                         "tree_info": [0] * n_trees}},
        "feature_names": []}, "version": [2, 1, 0]}


# -- catalogue rows ------------------------------------------------------------------------


def _bad_model(edit: Callable[[dict[str, Any]], Any], command: str = "inspect"):
    """A row's setup: a small valid model with ``edit`` applied, given to ``command``."""

    def setup(folder: Path) -> list[str]:
        doc = chain_model(3, n_trees=2)
        edit(doc)
        path = folder / "bad.json"
        path.write_text(json.dumps(doc))
        if command == "apply":
            return ["apply", str(path), str(DATA / "signal.root"), "-o", str(folder / "out.root")]
        return ["inspect", str(path)]

    return setup


def _text_model(text: Callable[[str], str], command: str = "inspect"):
    """A row's setup: the JSON text of a small valid model rewritten by ``text``."""

    def setup(folder: Path) -> list[str]:
        path = folder / "bad.json"
        path.write_text(text(json.dumps(chain_model(3, n_trees=2))))
        if command == "apply":
            return ["apply", str(path), str(DATA / "signal.root"), "-o", str(folder / "out.root")]
        return ["inspect", str(path)]

    return setup


def _directory(folder: Path) -> list[str]:
    (folder / "model.json").mkdir()
    return ["inspect", str(folder / "model.json")]


def _empty(folder: Path) -> list[str]:
    (folder / "model.json").write_bytes(b"")
    return ["apply", str(folder / "model.json"), str(DATA / "signal.root"), "-o",
            str(folder / "out.root")]


def _forest(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda doc: doc["forest"].__setitem__(key, value)


def _nested(text: str) -> str:
    return text.replace('"value": [', '"value": ' + "[" * 100_000 + "]" * 100_000 + ', "x": [', 1)


def _no_output_left(folder: Path) -> None:
    assert not (folder / "out.root").exists()


FAULTS = [
    Fault("model-base-score-nan", _bad_model(_forest("base_score", "NaN")),
          r"bad\.json: forest\.base_score: 'NaN' is not a number"),
    Fault("model-base-score-nan-apply", _bad_model(_forest("base_score", "NaN"), "apply"),
          r"bad\.json: forest\.base_score", left=_no_output_left),
    Fault("model-missing-left-not-boolean",
          _bad_model(lambda d: d["forest"]["missing_left"].__setitem__(0, "no")),
          r"bad\.json: forest\.missing_left\[0\]: 'no' has the wrong type; expected bool"),
    Fault("model-boosting-evil", _bad_model(lambda d: d["params"].update(boosting="evil"), "apply"),
          r"bad\.json: params\.boosting: boosting='evil' is not valid", left=_no_output_left),
    Fault("model-learning-rate-string",
          _bad_model(lambda d: d["params"].update(learning_rate="fast")),
          r"bad\.json: params\.learning_rate: learning_rate='fast' is not valid; expected a "
          r"number in \(0, 10\]"),
    Fault("model-huge-integer", _bad_model(lambda d: d["forest"]["feature"].__setitem__(0, 10**300)),
          r"bad\.json: forest\.feature\[0\]: an integer of about 301 digits is outside \[-1, 4\]"),
    Fault("model-integer-of-5000-digits",
          _text_model(lambda t: t.replace('"n_features": 5', '"n_features": ' + "9" * 5000)),
          r"bad\.json: not a JSON model file \(Exceeds the limit"),
    Fault("model-child-index-float",
          _bad_model(lambda d: d["forest"]["left"].__setitem__(0, 1.5)),
          r"bad\.json: forest\.left\[0\]: 1\.5 has the wrong type; expected int"),
    Fault("model-feature-bool",
          _bad_model(lambda d: d["forest"]["feature"].__setitem__(0, True)),
          r"bad\.json: forest\.feature\[0\]: True has the wrong type"),
    Fault("model-deep-nesting", _text_model(_nested, "apply"),
          r"bad\.json: not a JSON model file \(nested too deeply\)", left=_no_output_left),
    Fault("model-extra-string", _bad_model(_forest("extra", "abc")),
          r"bad\.json: forest\.extra: expected an object, got str"),
    Fault("model-train-loss-string", _bad_model(lambda d: d.update(train_loss="abc")),
          r"bad\.json: train_loss must be a list of numbers"),
    Fault("model-n-features-string", _bad_model(_forest("n_features", "5")),
          r"bad\.json: forest\.n_features: '5' is not an integer"),
    Fault("model-aggregation-unknown", _bad_model(_forest("aggregation", ["sum"])),
          r"bad\.json: forest\.aggregation: \['sum'\], valid"),
    Fault("model-shared-node",
          _bad_model(lambda d: d["forest"]["left"].__setitem__(0, 2)),
          r"bad\.json: forest: node 1 has 0 parents, expected 1"),
    Fault("model-truncated", _text_model(lambda t: t[: len(t) // 2]),
          r"bad\.json: not a JSON model file \("),
    Fault("model-directory", _directory, r"model\.json: is a directory, not a model file"),
    Fault("model-empty", _empty, r"model\.json: the file is empty, not a JSON model file",
          left=_no_output_left),
]
