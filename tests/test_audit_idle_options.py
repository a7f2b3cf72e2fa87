"""Options accepted in a configuration that do nothing with the rest of it (audit CJ,
2026-12-05): each is named in an IdleOptionWarning (a ``hepbdt: note:`` line), checked
against fits in which changing the option leaves the model bit for bit the same."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from hepbdt import BDTRegressor
from hepbdt.analysis import load_config
from hepbdt.estimators import IdleOptionWarning

DATA = Path(__file__).resolve().parents[1] / "data"

REGRESSION = f"""
event = "event"
tree = "Events"
features = ["HT", "MET_pt"]

[samples.signal]
files = "{DATA / 'signal.root'}"
target = "nJet"

[method]
n_trees = 20
loss = "huber"
"""


def _write(tmp_path: Path, text: str, name: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _predictions(**options) -> np.ndarray:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 2)).astype(np.float32)
    y = 3 * X[:, 0] + rng.standard_t(2, 800)
    return BDTRegressor(n_trees=10, max_depth=3, loss="huber", **options).fit(X, y).predict(X)


def test_huber_options_of_the_other_booster_are_named(tmp_path):
    """huber_alpha with newton (pseudo-Huber, a fixed delta) and huber_delta with gradient
    (delta the huber_alpha quantile each round) change nothing, yet were counted as acting on
    both boosters: no note at --check, and the report listed them among the options used."""
    for booster, idle, acting in (("newton", "huber_alpha", "huber_delta"),
                                  ("gradient", "huber_delta", "huber_alpha")):
        np.testing.assert_array_equal(_predictions(boosting=booster, **{idle: 0.3}),
                                      _predictions(boosting=booster, **{idle: 0.9}))
        assert not np.array_equal(_predictions(boosting=booster, **{acting: 0.3}),
                                  _predictions(boosting=booster, **{acting: 0.9}))
        text = REGRESSION + f'boosting = "{booster}"\n'
        with pytest.warns(IdleOptionWarning, match=rf"\[method\] {idle}: does nothing with "
                          rf"boosting='{booster}'"):
            load_config(_write(tmp_path, text + f"{idle} = 0.3\n", f"{idle}.toml"))
        with warnings.catch_warnings():
            warnings.simplefilter("error", IdleOptionWarning)
            load_config(_write(tmp_path, text + f"{acting} = 0.3\n", f"{acting}.toml"))


CLASSIFICATION = f"""
event = "event"
tree = "Events"
features = ["HT", "MET_pt"]

[samples.signal]
files = "{DATA / 'signal.root'}"
label = "signal"

[samples.qcd]
files = "{DATA / 'background_qcd.root'}"
label = "background"

[method]
"""


def test_stopping_options_that_watch_no_loss_are_named(tmp_path):
    """A configuration's fit has no eval_set: with an integer n_trees and no early_stopping
    nothing is held out, and early_stopping_rounds is the patience in n_iter_no_change's
    place, so validation_fraction, n_iter_no_change and tol changed nothing (the same trees,
    the same count), without a word."""
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    fixed = [BDTClassifier(n_trees=15, max_depth=2, **options).fit(X, y).decision_function(X)
             for options in ({}, {"validation_fraction": 0.5, "n_iter_no_change": 1, "tol": 1.0})]
    np.testing.assert_array_equal(*fixed)
    counts = {BDTClassifier(max_depth=2, early_stopping_rounds=5, n_iter_no_change=patience
                            ).fit(X, y).n_trees_ for patience in (1, 50)}
    assert len(counts) == 1
    cases = [("n_trees = 15\nvalidation_fraction = 0.5\ntol = 1.0\n",
              r"\[method\] tol, validation_fraction: do nothing with n_trees=15 and "
              r"early_stopping=False"),
             ("early_stopping_rounds = 5\nn_iter_no_change = 1\n",
              r"\[method\] n_iter_no_change: does nothing with early_stopping_rounds=5"),
             ('decorrelation = "flatness"\nn_iter_no_change = 1\n',
              r"n_iter_no_change: does nothing with n_trees='auto' and decorrelation='flatness'")]
    for i, (method, match) in enumerate(cases):
        text = CLASSIFICATION + method
        if "flatness" in method:
            text += 'decorrelate = ["HT"]\n'
        with pytest.warns(IdleOptionWarning, match=match):
            load_config(_write(tmp_path, text, f"{i}.toml"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        for i, method in enumerate(("n_trees = 15\nearly_stopping = true\nvalidation_fraction = 0.2\n"
                                    "n_iter_no_change = 3\ntol = 0.001\n",
                                    "validation_fraction = 0.2\nn_iter_no_change = 3\n")):
            load_config(_write(tmp_path, CLASSIFICATION + method, f"ok{i}.toml"))


@pytest.mark.parametrize("idle,plain", [
    ("NTrees=8:BoostType=AdaBoost:Shrinkage=0.3", "NTrees=8:BoostType=AdaBoost"),
    ("NTrees=8:BoostType=Grad:AdaBoostBeta=0.1:SeparationType=CrossEntropy", "NTrees=8:BoostType=Grad"),
    ("NTrees=8:BoostType=Grad:BaggedSampleFraction=0.3", "NTrees=8:BoostType=Grad"),
    ("NTrees=8:BoostType=Grad:UseNvars=1", "NTrees=8:BoostType=Grad")])
def test_tmva_options_that_do_nothing_are_named(tmp_path, idle, plain):
    """Options of a tmva_options string that do nothing with its BoostType, or without the
    switch they belong to, trained the string's model without them, and no note said so
    (the [method] keys of the same meaning are named)."""
    from hepbdt import BDTClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.normal(size=1500) > 0).astype(int)
    scores = [BDTClassifier.from_tmva(s, random_state=0).fit(X, y).decision_function(X)
              for s in (idle, plain)]
    np.testing.assert_array_equal(*scores)
    extra = [token for token in idle.split(":") if token not in plain.split(":")]
    with pytest.warns(IdleOptionWarning, match=r"\[method\] tmva_options: "
                      + re.escape(":".join(extra))):
        load_config(_write(tmp_path, CLASSIFICATION + f'tmva_options = "{idle}"\n', "idle.toml"))


def test_a_tmva_string_of_acting_options_reaches_its_parameters_without_a_note(tmp_path):
    """Every option of the brief's string acts (bagged gradient boosting): no note, and each
    reaches its parameter."""
    text = ("MaxDepth=2:NTrees=50:Shrinkage=0.3:nCuts=20:MinNodeSize=5%:UseBaggedBoost:"
            "BaggedSampleFraction=0.5:BoostType=Grad")
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        config = load_config(_write(tmp_path, CLASSIFICATION + f'tmva_options = "{text}"\n',
                                    "ok.toml"))
    params = config.make_estimator().get_params()
    assert {k: params[k] for k in ("max_depth", "n_trees", "learning_rate", "n_cuts",
                                   "min_node_size", "subsample", "subsample_mode", "boosting")} == {
        "max_depth": 2, "n_trees": 50, "learning_rate": 0.3, "n_cuts": 20, "min_node_size": 0.05,
        "subsample": 0.5, "subsample_mode": "poisson", "boosting": "gradient"}


def test_output_keys_that_write_nothing_are_named(tmp_path):
    """[output] probability_branch of a two-class training (one score branch, no
    probabilities: the per-class branches are written for three or more classes) and
    figure_formats with figures = false were accepted and wrote nothing, without a word."""
    for i, (output, match) in enumerate((
            ('probability_branch = "p"\n', r"\[output\] probability_branch: the per-class "
                                            r"probability branches are written for three"),
            ('figures = false\nfigure_formats = ["pdf"]\n', r"\[output\] figure_formats: "
                                                            r"figures = false writes no figures"))):
        config_text = CLASSIFICATION + "n_trees = 5\n[output]\n" + output
        with pytest.warns(IdleOptionWarning, match=match):
            config = load_config(_write(tmp_path, config_text, f"{i}.toml"))
        assert config.class_branches() == {} or not config.output.figures
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        load_config(_write(tmp_path, CLASSIFICATION + '[output]\nfigure_formats = ["pdf"]\n',
                           "ok.toml"))


def test_apply_names_a_probability_branch_it_does_not_write(tmp_path):
    """hepbdt apply --probability-branch of a two-class model wrote only the score branch,
    silently; the branches written are read back with uproot."""
    import pandas as pd
    import uproot

    from hepbdt import BDTClassifier
    from hepbdt.scoring import apply

    rng = np.random.default_rng(2)
    x = rng.normal(size=(400, 2))
    model = BDTClassifier(n_trees=3, max_depth=2).fit(
        pd.DataFrame(x.astype(np.float32), columns=["a", "b"]), (x[:, 0] > 0).astype(int))
    source = tmp_path / "in.root"
    with uproot.recreate(source) as out:
        out["t"] = {"a": x[:, 0], "b": x[:, 1]}
    with pytest.warns(IdleOptionWarning, match=r"probability branch 'p': the model gives one "
                      r"score an event \(written to 'bdt_score'\)"):
        written = apply(model, [str(source)], tmp_path / "out.root", probability_branch="p")
    with uproot.open(written[0]) as f:
        tree = f[f.keys()[0].split(";")[0]]
        assert "bdt_score" in tree.keys()
        assert not any(name.startswith("p") for name in tree.keys())
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdleOptionWarning)
        apply(model, [str(source)], tmp_path / "out2.root")
