"""Audit of multi-class configurations: what --check refuses is what training refuses.

A configuration of 101 classes passed --check and was refused after the read by the
estimator ("is y a continuous target? use BDTRegressor"); a multi-class configuration's
loss = "softmax" was refused with "it takes 'deviance'", where loss = "deviance" is
refused with "the loss is 'softmax'". Checked against BDTClassifier fitting the same.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.cli import main
from tests.ntuples import write_ttree


def _config(folder: Path, n_classes: int, extra: str = "") -> Path:
    """n_classes samples of one file, split by exclusive cuts on the event number."""
    path = folder / "events.root"
    rng = np.random.default_rng(3)
    n = 30 * n_classes
    write_ttree(path, "t", {"x": rng.normal(size=n), "event": np.arange(n)})
    samples = "".join(f'[samples.s{i}]\nfiles = "{path}:t"\nlabel = "c{i}"\n'
                      f'cut = "event % {n_classes} == {i}"\n' for i in range(n_classes))
    config = folder / "mc.toml"
    config.write_text(f'features = ["x"]\nevent = "event"\n{samples}[method]\n'
                      f'boosting = "gradient"\nn_trees = 2\nmax_depth = 1\n{extra}\n'
                      f'[output]\ndirectory = "{folder / "out"}"\nfigures = false\n')
    return config


def _estimator_trains(n_classes: int, **params) -> bool:
    X = np.random.default_rng(0).normal(size=(10 * n_classes, 1))
    y = np.array([f"c{i}" for i in range(n_classes)] * 10)
    try:
        BDTClassifier(n_trees=2, max_depth=1, **params).fit(X, y)
    except ValueError:
        return False
    return True


def test_more_classes_than_the_estimator_takes_are_refused_at_check(tmp_path, capsys):
    assert not _estimator_trains(101)
    status = main(["train", str(_config(tmp_path, 101)), "--check"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("hepbdt: error: ")
    assert "[samples] label: 101 classes; a training takes at most 100" in err
    assert "BDTRegressor" not in err


def test_string_labels_beyond_the_limit_are_not_called_a_target():
    X = np.zeros((101, 1))
    with pytest.raises(ValueError, match="at most 100 are supported: merge") as info:
        BDTClassifier(n_trees=2).fit(X, [f"c{i}" for i in range(101)])
    assert "BDTRegressor" not in str(info.value)
@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_softmax_loss_is_taken_as_the_estimator_takes_it(tmp_path, capsys, boosting):
    assert _estimator_trains(3, boosting=boosting, loss="softmax")
    config = _config(tmp_path, 3, 'loss = "softmax"')
    config.write_text(config.read_text().replace('"gradient"', f'"{boosting}"'))
    status = main(["train", str(config), "--check"])
    captured = capsys.readouterr()
    assert status == 0, captured.err


def test_softmax_loss_of_two_classes_is_refused_with_the_right_loss(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(40, 1))
    with pytest.raises(ValueError, match="three or more classes; with two the loss of "
                       "boosting='newton' is 'logistic'"):
        BDTClassifier(boosting="newton", loss="softmax", n_trees=2).fit(X, [0, 1] * 20)
    config = _config(tmp_path, 3, 'loss = "softmax"')
    text = config.read_text().replace('label = "c2"', 'label = "signal"')
    config.write_text(text.replace('label = "c1"', 'label = "background"').replace(
        'label = "c0"', 'label = "background"'))
    status = main(["train", str(config), "--check"])
    err = capsys.readouterr().err
    assert status == 2 and "[method] loss: loss = 'softmax' is the loss of three" in err
