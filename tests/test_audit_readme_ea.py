"""Audit EA (2026-12-05): README's reference sections against the code: the command-line
flags it names, and the notes it promises for options that do nothing."""

from __future__ import annotations

import numpy as np
import pytest

import hepbdt
from hepbdt.cli import main


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    X[::7, 1] = np.nan  # NaN in training, so that the TMVA file's NaN routing matters
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    path = tmp_path_factory.mktemp("ea") / "model.json"
    hepbdt.BDTClassifier(n_trees=5, max_depth=2, min_node_size=0.05).fit(X, y).save(path)
    return path


def test_export_missing_without_tmva_is_refused(model_file, tmp_path, capsys):
    # README: `hepbdt export MODEL ... [--tmva FILE [--missing auto|exact|none]]`: --missing
    # belongs to --tmva, as --namespace to --cpp; given without --tmva it changed nothing
    # and the command said nothing (exit 0).
    out = tmp_path / "m.h"
    assert main(["export", str(model_file), "--cpp", str(out), "--missing", "exact"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: error: ") and "--missing is an option of --tmva" in err
    assert not out.exists()
    # with --tmva it still reaches the file: 'exact' writes the NaN routing 'auto' leaves out
    auto, exact = tmp_path / "auto.weights.xml", tmp_path / "exact.weights.xml"
    assert main(["export", str(model_file), "--tmva", str(auto)]) == 0
    assert main(["export", str(model_file), "--tmva", str(exact), "--missing", "exact"]) == 0
    assert auto.read_text().count("<Node") < exact.read_text().count("<Node")
