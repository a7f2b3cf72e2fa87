"""Audit CW (2026-12-05): two roads to one model. A TMVA option string (``from_tmva``,
``[method] tmva_options``) and hepbdt's own parameters (Python, ``[method]`` keys) must
train the same model, and ``to_tmva()`` must write a string that reads back as the model's
own parameters."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.tmva_options import parse_tmva_options


def _gini_best_cut(x: np.ndarray, y: np.ndarray, min_events: float) -> float:
    """Brute force: the cut between sorted distinct x values with the largest decrease of
    the event-counted Gini index, both children holding at least ``min_events`` events."""
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]

    def gini(labels: np.ndarray) -> float:
        p = labels.mean()
        return labels.size * p * (1 - p)

    best, best_cut = -np.inf, np.nan
    for i in range(1, x.size):
        if x[i] == x[i - 1] or i < min_events or x.size - i < min_events:
            continue
        gain = gini(y) - gini(y[:i]) - gini(y[i:])
        if gain > best:
            best, best_cut = gain, (x[i - 1] + x[i]) / 2
    return best_cut


@pytest.mark.parametrize(("percent", "fraction"), [("3.6", Fraction(36, 1000)),
                                                   ("1.3", Fraction(13, 1000)),
                                                   ("0.7", Fraction(7, 1000)),
                                                   ("2.5", Fraction(25, 1000))])
def test_min_node_size_percent_is_the_fraction_written(percent: str, fraction: Fraction) -> None:
    """MinNodeSize=3.6% is min_node_size=0.036, the double nearest 36/1000 (3.6 / 100 was
    0.036000000000000004)."""
    got = parse_tmva_options(f"MinNodeSize={percent}%:BoostType=AdaBoost")["min_node_size"]
    assert got == float(fraction)


def test_min_node_size_percent_trains_the_model_of_the_fraction() -> None:
    """250 events, 9 pure signal ones at the bottom: a child of exactly 9 events (3.6 %) is
    allowed, so both roads cut at 8.5, the brute-force best cut (MinNodeSize=3.6% cut at
    10.5: it asked for 9.000000000000002 events)."""
    n, k = 250, 9
    X = np.arange(n, dtype=np.float32)[:, None]
    y = np.zeros(n, dtype=int)
    y[:k] = 1
    y[k:] = np.arange(n - k) % 2
    expected = _gini_best_cut(X[:, 0].astype(np.float64), y.astype(np.float64), k)
    assert expected == 8.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_name = BDTClassifier(boosting="adaboost", n_trees=1, max_depth=1, min_node_size=0.036,
                                negative_weights="keep").fit(X, y)
        by_tmva = BDTClassifier.from_tmva("NTrees=1:MaxDepth=1:BoostType=AdaBoost:nCuts=-1:"
                                          "MinNodeSize=3.6%:NegWeightTreatment=Pray").fit(X, y)
    assert by_name.forest_.threshold[0] == expected
    assert by_tmva.forest_.threshold[0] == expected
    assert by_name.to_dict()["forest"] == by_tmva.to_dict()["forest"]


@pytest.mark.parametrize("size", [0.036, 0.0123456789012345, 20 / 27000, 1e-05, 0.07, 0.3])
def test_to_tmva_min_node_size_reads_back_exactly(size: float) -> None:
    """to_tmva wrote round(100 size, 10) %: 0.0123456789012345 read back as 0.012345678901."""
    model = BDTClassifier(boosting="adaboost", n_trees=5, max_depth=2, min_node_size=size,
                          negative_weights="keep")
    assert BDTClassifier.from_tmva(model.to_tmva()).min_node_size == size


def _fit_pair(params: dict) -> tuple[BDTClassifier, BDTClassifier]:
    """A model of ``params`` and the model of its to_tmva() string, fitted on one sample."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 4)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=2000) > 0).astype(int)
    w = rng.lognormal(0, 0.5, size=2000) * np.where(y == 1, 3.0, 1.0)
    model = BDTClassifier(**params)
    back = BDTClassifier.from_tmva(model.to_tmva())
    return model.fit(X, y, w), back.fit(X, y, w)


def test_to_tmva_writes_a_class_ratio_near_one() -> None:
    """sig_to_bkg_fraction = 1 + 5e-10 was written as nothing (math.isclose to 1): it read
    back as TMVA's 1, another model (leaf values 5e-10 apart)."""
    ratio = 1 + 5e-10
    model, back = _fit_pair(dict(boosting="gradient", n_trees=5, max_depth=2, n_cuts=20,
                                 min_node_size=0.01, negative_weights="keep",
                                 sig_to_bkg_fraction=ratio))
    assert back.sig_to_bkg_fraction == ratio
    assert model.to_dict()["forest"] == back.to_dict()["forest"]


def test_to_tmva_refuses_an_adaboost_class_ratio_near_one() -> None:
    """AdaBoost's class ratio other than 1 has no TMVA spelling (TMVA multiplies it again
    after every tree): 1 - 5e-10 was written as TMVA's 1, not refused."""
    from hepbdt.tmva_options import TMVAOptionError

    model = BDTClassifier(boosting="adaboost", n_trees=5, max_depth=2, min_node_size=0.01,
                          negative_weights="keep", sig_to_bkg_fraction=1 - 5e-10)
    with pytest.raises(TMVAOptionError, match="sig_to_bkg_fraction"):
        model.to_tmva()


def _config(tmp_path, method: str, overrides: tuple[str, ...] = ()):
    """The configuration of two shipped samples with this ``[method]`` table."""
    from pathlib import Path

    from hepbdt.analysis import load_config

    data = Path(__file__).resolve().parents[1] / "data"
    path = tmp_path / "analysis.toml"
    path.write_text(f"""
tree = "Events"
features = ["HT", "MET_pt"]
[samples.signal]
files = "{data / 'signal.root'}"
label = "signal"
[samples.qcd]
files = "{data / 'background_qcd.root'}"
label = "background"
[method]
{method}
""")
    return load_config(path, overrides)


def test_method_writes_none_as_python_does(tmp_path) -> None:
    """TOML has no None: [method] max_depth, random_state, sig_to_bkg_fraction could not be
    None (README: max_depth "None for no limit" beside max_leaves), so a leaf-wise tree
    without a depth limit trained in Python had no configuration. "none" is None now."""
    config = _config(tmp_path, 'boosting = "gradient"\nn_trees = 3\nmax_depth = "none"\n'
                     'max_leaves = 40\nsig_to_bkg_fraction = "None"',
                     ("method.n_vars_per_node=none",))
    params = dict(boosting="gradient", n_trees=3, max_depth=None, max_leaves=40,
                  sig_to_bkg_fraction=None, n_vars_per_node=None)
    assert config.estimator_params == {"random_state": 0, **params}
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X.sum(axis=1) + rng.normal(size=3000) > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_config = config.make_estimator().fit(X, y)
        by_python = BDTClassifier(**params).fit(X, y)
    assert by_config.to_dict()["forest"] == by_python.to_dict()["forest"]


def test_method_none_is_refused_where_python_refuses_it(tmp_path) -> None:
    """An option Python does not take None for still refuses "none", naming what it takes."""
    from hepbdt.analysis import ConfigError

    with pytest.raises(ConfigError, match=r"\[method\] max_bins: expected an integer, got a "
                                          r"string \('none'\)"):
        _config(tmp_path, 'max_bins = "none"')
    with pytest.raises(ConfigError, match=r'\[method\] max_leaves: expected an integer or '
                                          r'"none" \(None\) or "auto", got a string'):
        _config(tmp_path, 'max_leaves = "many"')
