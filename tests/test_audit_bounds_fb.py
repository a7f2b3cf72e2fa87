"""Audit FB (2026-12-05): time and memory bounded whatever the options; the estimates that
``hepbdt train --check`` prints count what the fit does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt.analysis import load_config
from hepbdt.analysis.estimate import estimate, estimate_lines
from hepbdt.estimators import BDTClassifier
from tests.faults import tiny_config


@pytest.mark.parametrize("trees", ["n_trees = 4", 'n_trees = "auto"'])
def test_uboost_estimate_counts_every_ensemble_the_fit_grows(tmp_path: Path, trees: str) -> None:
    # uBoost grows one AdaBoost ensemble of n_trees for each of decorrelation_steps: the
    # estimate counted one (decorrelation_steps=100: 20 trees and 0.65 s printed for a fit
    # of 2,000 trees that took about 180 s)
    config = load_config(tiny_config(
        tmp_path, method=f'boosting = "adaboost"\n{trees}\nmax_depth = 2\n'
        'decorrelation = "uboost"\ndecorrelation_steps = 3\ndecorrelate = ["MET_pt"]'))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(np.int64)
    fit = BDTClassifier(**config.params).fit(X, y, decorrelate=rng.normal(size=400))
    e = estimate(config, available_bytes=10**12)
    assert e.trees == fit.forest_.n_trees == 3 * fit.n_trees_
    plain = estimate(load_config(tiny_config(
        tmp_path, method=f'boosting = "adaboost"\n{trees}\nmax_depth = 2')), available_bytes=10**12)
    assert e.seconds == pytest.approx(3 * plain.seconds)
    assert f"{e.trees:,} trees (depth 2" in estimate_lines(config, available_bytes=10**12)[0]
