"""Evaluation audit (2026-11-27): a classifier whose signal is not label 1 (signal_label=0,
or string labels) had its permutation importance and report AUCs taken the wrong way round
(0.069 for 0.931); a configuration's signal_label turned its classes round; another
library's model lost its float64 inputs to float32 in the permutation test; the
overtraining test took any number of chi2 bins."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

import hepbdt
from hepbdt.analysis import ConfigError, load_config
from hepbdt.evaluation import overtraining_test, permutation_importance

DEMO = Path(__file__).resolve().parents[1] / "analyses" / "demo.toml"


def _sample(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    is_signal = X[:, 0] + 0.5 * rng.normal(size=n) < 0
    return X, is_signal


@pytest.mark.parametrize("signal_label, labels", [
    (0, (1, 0)),                            # (background, signal) labels
    ("signal", ("background", "signal")),
])
def test_signal_not_label_one_is_scored_the_right_way_round(tmp_path, signal_label, labels):
    X, is_signal = _sample()
    y = np.where(is_signal, labels[1], labels[0])
    model = hepbdt.BDTClassifier(n_trees=20, max_depth=3, signal_label=signal_label,
                                 random_state=0).fit(X[:2000], y[:2000])
    truth = roc_auc_score(is_signal[2000:], model.decision_function(X[2000:]))
    assert truth > 0.9
    result = permutation_importance(model, X[2000:], y[2000:], n_repeats=2)
    assert result.baseline == pytest.approx(truth, abs=1e-9)
    assert result.importances_mean[0] > 0.3  # the feature that separates, not -0.43
    out = tmp_path / "report.html"
    hepbdt.report(model, (X[:2000], y[:2000]), (X[2000:], y[2000:]), out)
    text = out.read_text()
    row = re.search(r'id="summary-table".*?ROC AUC</t[dh]>(.*?)</tr>', text, re.S).group(1)
    test_auc = float(html.unescape(re.sub("<[^>]+>", "", re.findall(r"<td[^>]*>(.*?)</td>",
                                                                      row)[0])))
    assert test_auc == pytest.approx(truth, abs=1e-4)


def test_a_configuration_refuses_signal_label():
    with pytest.raises(ConfigError, match=r"signal_label.*label = \"signal\" says which"):
        load_config(DEMO, ["method.signal_label=0"])


def test_permutation_keeps_another_librarys_float64_inputs():
    from sklearn.ensemble import HistGradientBoostingClassifier

    rng = np.random.default_rng(1)
    u = rng.random(4000)
    X = np.column_stack([1e9 + u, rng.normal(size=4000)])  # float32 rounds 1e9 + u to one value
    y = (u + 0.3 * rng.normal(size=4000) > 0.5).astype(int)
    model = HistGradientBoostingClassifier(max_iter=30).fit(X[:2000], y[:2000])
    result = permutation_importance(model, X[2000:], y[2000:], n_repeats=2)
    assert result.baseline == pytest.approx(
        roc_auc_score(y[2000:], model.decision_function(X[2000:])), abs=1e-12)
    assert result.importances_mean[0] > 0.2


@pytest.mark.parametrize("bins", [0, 1, 2.5, -3, True])
def test_overtraining_refuses_bad_bin_counts(bins):
    rng = np.random.default_rng(0)
    s, y = rng.normal(size=200), np.arange(200) % 2
    with pytest.raises(ValueError, match="whole number of chi2 bins >= 2"):
        overtraining_test(s, y, None, s, y, None, bins=bins)
