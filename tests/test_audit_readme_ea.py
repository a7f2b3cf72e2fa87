"""Audit EA (2026-12-05): README's reference sections against the code: the command-line
flags it names, and the notes it promises for options that do nothing."""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import hepbdt
from hepbdt.analysis.config import load_config
from hepbdt.cli import _parser, main
from hepbdt.estimators import IdleOptionWarning


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


REGRESSION = Path(__file__).resolve().parents[1] / "analyses" / "regression" / "mass_regression.toml"


@pytest.mark.parametrize(("overrides", "settings"), [
    # README: huber_alpha is gradient's Huber quantile; both Huber options act with
    # loss = "huber" only. Beside loss = "absolute" the note said it "does nothing with
    # boosting='gradient' ... choose a boosting it acts on": gradient is the boosting it
    # acts on, the loss is why it does nothing.
    (["method.huber_alpha=0.8"], "boosting='gradient', loss='absolute'"),
    (['method.boosting="newton"', "method.huber_delta=2.0"], "boosting='newton', loss='absolute'"),
    (['method.boosting="newton"', 'method.loss="huber"', "method.huber_alpha=0.8"],
     "boosting='newton', loss='huber'"),
])
def test_idle_huber_note_names_the_loss(overrides, settings):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_config(REGRESSION, overrides)
    notes = [str(w.message) for w in caught if issubclass(w.category, IdleOptionWarning)]
    assert len(notes) == 1 and f"nothing with {settings} " in notes[0], notes
    assert "choose a boosting or loss it acts on" in notes[0]


def test_huber_option_with_huber_loss_has_no_note():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_config(REGRESSION, ["method.huber_alpha=0.8", "method.loss='huber'"])
    assert not [w for w in caught if issubclass(w.category, IdleOptionWarning)]


def test_readme_synopsis_lists_every_flag():
    # README's "The command line" says every flag of each command is in its synopsis:
    # apply's --probability-branch, --scheduler and --progress and demo's --progress were not.
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = text.split("## The command line\n\n```\n", 1)[1].split("```", 1)[0]
    listed: dict[str, set[str]] = {}
    command = None
    for line in block.splitlines():
        words = line.split()
        if words[:1] == ["hepbdt"] and not words[1].startswith("-"):
            command = words[1]
        if command is not None and not line.startswith("hepbdt --"):
            listed.setdefault(command, set()).update(re.findall(r"--[a-z][a-z-]*", line))
    parser = _parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in commands.choices.items():
        flags = {s for a in sub._actions for s in a.option_strings
                 if s.startswith("--") and s != "--help"}
        assert listed.get(name) == flags, name
