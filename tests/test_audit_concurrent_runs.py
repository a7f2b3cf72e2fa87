"""Audit of several runs at once on the same paths, with forced interleavings: each test
pauses one writer at a chosen point (a hook) and runs the other there."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hepbdt
from hepbdt.kfold import KFoldModel
from hepbdt.model import ModelFormatError
from hepbdt.output_set import OutputSetError
from hepbdt.persistence import load_model


def _folds(n_trees: int, seed: int, k: int = 2) -> list[hepbdt.BDTClassifier]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(scale=0.8, size=400) > 0).astype(int)
    part = np.arange(len(y)) % k
    return [hepbdt.BDTClassifier(n_trees=n_trees, max_depth=2, random_state=seed)
            .fit(X[part != i], y[part != i]) for i in range(k)]


def _pausing(model: hepbdt.BDTClassifier, hook: Any) -> hepbdt.BDTClassifier:
    """``model``, whose next ``save`` runs ``hook`` once its file is written."""
    save = model.save

    def save_then_pause(path: Any) -> None:
        save(path)
        del model.save  # once
        hook()

    model.save = save_then_pause
    return model


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_second_kfold_save_of_the_same_files_fails_at_once(tmp_path):
    """Two KFoldModel.save of one path interleaving (the second between the first's fold
    files) left fold 0 of one model and fold 1 of the other under a manifest whose digests,
    read back from the files, accepted both: a mixed k-fold model loaded without a word."""
    first, second = _folds(5, seed=1), _folds(7, seed=2)
    path = tmp_path / "model.json"
    raised: list[BaseException] = []

    def second_save() -> None:
        try:
            KFoldModel(second, by="event").save(path)
        except OutputSetError as exc:
            raised.append(exc)

    KFoldModel([_pausing(first[0], second_save), first[1]], by="event").save(path)
    assert raised and "is being saved by another hepbdt run" in str(raised[0])
    loaded = load_model(path)
    assert [m.n_trees for m in loaded.models] == [5, 5]
    assert not list(tmp_path.glob(".*"))  # no lock or temporary left


def test_a_fold_file_replaced_during_the_save_is_refused_on_load(tmp_path):
    """The manifest records the digest of the bytes its save wrote, not of whatever file is
    at the fold's path when the manifest is written (another writer's)."""
    first, other = _folds(5, seed=1), _folds(7, seed=2)
    path = tmp_path / "model.json"
    stranger = tmp_path / "elsewhere.json"
    other[0].save(stranger)

    def replace_fold0() -> None:
        (tmp_path / "model_fold0.json").write_bytes(stranger.read_bytes())

    KFoldModel([first[0], _pausing(first[1], replace_fold0)], by="event").save(path)
    with pytest.raises(ModelFormatError, match="model_fold0.json' is not the file this manifest"):
        load_model(path)
    # an undisturbed save still loads, and records its files' digests
    KFoldModel(first, by="event").save(path)
    assert [m.n_trees for m in load_model(path).models] == [5, 5]
    assert '"sha256"' in path.read_text()
    assert _sha(tmp_path / "model_fold1.json") in path.read_text()
