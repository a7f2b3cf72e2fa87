"""Audit FI (2026-12-05): analysis configurations mutated key by key (deleted, retyped, set
to extremes, moved, misspelt) must train what they say or be refused by ``--check`` with
one ``hepbdt: error:`` line naming the key. The mutants that passed are pinned here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.cli import main
from hepbdt.estimators import ParameterError

from .faults import tiny_config


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``hepbdt train PATH --check``: the exit status and stderr's error lines."""
    status = main(["train", str(path), "--check"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return status, "\n".join(line for line in err.splitlines() if "note:" not in line)


def test_an_empty_samples_table_is_refused(tmp_path, capsys):
    # `[samples]` with no sample passed --check ("OK (0 samples ...)"); train then failed
    # in hepbdt.read with a message naming no key of the configuration
    text = tiny_config(tmp_path).read_text()
    head, tail = text.split("[samples.signal]")
    path = tmp_path / "a.toml"
    path.write_text(head + "[samples]\n\n[split]" + tail.split("[split]")[1])
    status, err = check(path, capsys)
    assert status == 2
    assert err.startswith("hepbdt: error: ") and len(err.splitlines()) == 1
    assert f"{path}: samples: holds no sample; add a [samples.NAME] table" in err


@pytest.mark.parametrize("weight", ["0", "0.0", '"0"', '"1 - 1"', '"0 * pi"'])
def test_a_sample_weight_of_zero_is_refused(tmp_path, capsys, weight):
    # weight = 0 trained as if the sample were not there (its events all weigh 0: no part
    # in the training, S or B), where scale = 0 is refused for that reason
    path = tiny_config(tmp_path)
    path.write_text(path.read_text().replace(
        'label = "background"', f'label = "background"\nweight = {weight}'))
    status, err = check(path, capsys)
    assert status == 2 and len(err.splitlines()) == 1
    assert "[samples.ttbar] weight: " in err
    assert "makes every weight of the sample 0, so it adds nothing" in err


def test_a_default_weight_of_zero_is_refused_where_a_sample_takes_it(tmp_path, capsys):
    path = tiny_config(tmp_path)
    text = path.read_text().replace('weight = "genWeight * xsec * lumi / sumGenWeight"',
                                    "weight = 0")
    path.write_text(text)
    status, err = check(path, capsys)
    assert status == 2 and len(err.splitlines()) == 1
    assert f"{path}: weight: 0 makes every weight of every sample that takes it 0" in err
    # every sample with a weight of its own: the default weighs nothing, and is no mistake
    path.write_text(text.replace('label = "signal"', 'label = "signal"\nweight = "genWeight"')
                    .replace('label = "background"', 'label = "background"\nweight = 2.5'))
    assert check(path, capsys)[0] == 0


@pytest.mark.parametrize("weight", ['"nan"', '"1/0"', '"-inf"'])
def test_a_weight_that_is_not_finite_for_every_event_is_refused_at_check(tmp_path, capsys,
                                                                          weight):
    path = tiny_config(tmp_path)
    path.write_text(path.read_text().replace(
        'label = "signal"', f'label = "signal"\nweight = {weight}'))
    status, err = check(path, capsys)
    assert status == 2 and "[samples.signal] weight: " in err
    assert "for every event; give a finite event weight" in err


def test_an_empty_loss_name_is_refused_not_the_default(tmp_path, capsys):
    # loss = "" trained the default loss (deviance) silently: `self.loss or own`
    path = tiny_config(tmp_path, method='n_trees = 3\nmax_depth = 2\nloss = ""')
    status, err = check(path, capsys)
    assert status == 2 and len(err.splitlines()) == 1
    assert "[method] loss: loss '' is not a classification loss of boosting='gradient'" in err
    assert "'deviance'" in err
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(200, 2)), np.repeat([0, 1], 100)
    for boosting in ("gradient", "newton"):
        with pytest.raises(ParameterError, match="loss '' is not a classification loss"):
            BDTClassifier(boosting=boosting, loss="", n_trees=2).fit(X, y)


@pytest.mark.parametrize("loss", ["bogus", "", "squared"])
def test_a_loss_that_is_no_loss_is_refused_beside_adaboost_too(loss):
    """loss does nothing with the AdaBoost family but is saved with the model: 'bogus' was
    taken without a word (audit FO), where gradient and newton refuse it."""
    from hepbdt.estimators import BDTClassifier, ParameterError

    with pytest.raises(ParameterError, match="loss=.* is not valid.*does nothing with"):
        BDTClassifier(boosting="adaboost", loss=loss).check_params()
    for fine in (None, "deviance", "logistic", "softmax"):
        BDTClassifier(boosting="adaboost", loss=fine).check_params()


def _with_qcd(path: Path, weight: str) -> None:
    """Add the shipped QCD ntuple to ``path``'s backgrounds with the given weight."""
    qcd = Path(__file__).resolve().parents[1] / "data" / "background_qcd.root"
    path.write_text(path.read_text().replace("[split]", f'[samples.qcd]\nfiles = "{qcd}"\n'
                                             f'label = "background"\nweight = {weight}\n\n[split]'))


def test_a_sample_whose_events_all_weigh_zero_is_refused(tmp_path, capsys):
    # a weight read from the data that is 0 for every event (a trigger flag that never
    # fires, a factor of 0) trained without the sample, as weight = 0 did before --check
    # refused it: the demo's qcd at genWeight * 0 trained to a test AUC of 0.9547 on ttbar
    import uproot

    path = tiny_config(tmp_path)
    _with_qcd(path, '"genWeight * 0"')
    status = main(["train", str(path)])
    err = capsys.readouterr().err
    with uproot.open(Path(__file__).resolve().parents[1] / "data" / "background_qcd.root") as f:
        entries = f["Events"].num_entries
    assert status == 1 and "Traceback" not in err  # as a cut that selects no event
    assert (f"hepbdt: error: sample 'qcd': every one of its {entries:,} selected events has "
            "weight 0 (weight 'genWeight * 0')") in err
    assert not (tmp_path / "out").exists()


def test_a_sample_with_some_events_of_weight_zero_trains(tmp_path, capsys):
    path = tiny_config(tmp_path)
    _with_qcd(path, '"genWeight * (nJet > 3)"')
    assert main(["train", str(path)]) == 0, capsys.readouterr().err
