"""Audit FG (2026-12-05): the scikit-learn protocol seen from scikit-learn's own tools."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")
from sklearn.utils import get_tags  # noqa: E402
from sklearn.utils.estimator_checks import (  # noqa: E402
    check_classifier_not_supporting_multiclass,
    check_classifiers_train,
)

from hepbdt import BDTClassifier  # noqa: E402

_OPTIONS = [dict(boosting="gradient"), dict(boosting="newton"), dict(boosting="adaboost"),
            dict(boosting="realadaboost"), dict(boosting="eps"), dict(boosting="bagging"),
            dict(boosting="adaboost", use_yes_no_leaf=False),
            dict(boosting="adaboost", criterion="cross_entropy"),
            dict(boosting="gradient", loss="deviance"), dict(sig_to_bkg_fraction=2.0),
            dict(decorrelation="flatness"), dict(decorrelation_map="ddt")]


@pytest.mark.parametrize("options", _OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_multi_class_tag_says_what_fit_takes(options) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.arange(90) % 3
    estimator = BDTClassifier(n_trees=3, **options)
    try:  # the reference: whether a fit on three classes trains
        estimator.fit(X, y, decorrelate=X[:, 0] if "decorrelation" in str(options) else None)
        trains = True
    except ValueError as exc:
        trains = False
        assert "Only binary classification is supported" in str(exc)
    assert get_tags(estimator).classifier_tags.multi_class is trains
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if not trains:  # scikit-learn's own checks of a two-class classifier
            check_classifier_not_supporting_multiclass("BDTClassifier", estimator)
        elif "decorrelation" not in str(options):
            check_classifiers_train("BDTClassifier", estimator)
