"""Audit ED (2026-12-05): a second look at the day's changes, each against a brute-force
or independent reference."""

from __future__ import annotations

import numpy as np

from hepbdt.evaluation.metrics import background_rejection_at


def _signed_background(seed: int):
    """Continuous scores (no ties), 15 % of the background at weight -1 (NLO-like)."""
    rng = np.random.default_rng(seed)
    s_sig, s_bkg = rng.normal(1.5, 1, 500), rng.normal(-1, 1, 2000)
    w_bkg = np.where(rng.random(2000) < 0.15, -1.0, 1.0)
    return s_sig, s_bkg, w_bkg


def test_rejection_with_signed_background_weights_is_a_number_where_cuts_reach_the_target():
    """Seed 6: a negative-weight background event above the positive ones makes the lowest
    eff_B of all cuts keeping >= 10 % sit at a cut keeping 45 %; the row was n/a although
    cuts keep exactly 10 %. Brute force: the best cut keeping 10 to 15 %."""
    s_sig, s_bkg, w_bkg = _signed_background(6)
    y = np.r_[np.ones(s_sig.size), np.zeros(s_bkg.size)]
    score, w = np.r_[s_sig, s_bkg], np.r_[np.ones(s_sig.size), w_bkg]
    targets = [0.1, 0.3, 0.5]
    cuts = np.unique(score)
    eff_s = np.array([np.mean(s_sig >= t) for t in cuts])
    eff_b = np.array([w_bkg[s_bkg >= t].sum() / w_bkg.sum() for t in cuts])
    brute = [1 - eff_b[(eff_s >= e) & (eff_s <= e + 0.05)].min() for e in targets]
    np.testing.assert_allclose(background_rejection_at(y, score, w, targets), brute,
                               rtol=0, atol=1e-12)


def test_summary_echoes_train_fraction_and_decorrelation_strength_as_given():
    """a06ff52 echoed settings with setting_text; the summary's split line and the
    decorrelation text still used :g (train_fraction 0.1234567 printed as 0.123457, a
    fraction the configuration does not hold)."""
    from types import SimpleNamespace

    import hepbdt
    from hepbdt.analysis.result import decorrelation_text
    from hepbdt.analysis.summary import _method_line

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2)).astype(np.float32)
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=1).fit(X, (X[:, 0] > 0).astype(int))
    split = SimpleNamespace(kfold=None, mode="random", seed=1, train_fraction=0.1234567,
                            norm="none")
    config = SimpleNamespace(tmva_options=None, split=split, features=["a", "b"])
    line = _method_line(SimpleNamespace(config=config, model=model))
    assert "random split, 0.1234567 for training" in line
    text = decorrelation_text({"decorrelation": "flatness", "decorrelation_strength": 0.1234567})
    assert "strength 0.1234567," in text


def test_split_takes_every_real_train_fraction_and_refuses_texts():
    """8a1c08d refused a Fraction(1, 2) and a 0-d array(0.5), which split before, with
    "train_fraction must be a number in (0, 1), not Fraction(1, 2)". Reference: TMVA's
    nTrain = floor(n f + 0.5) of each class."""
    import decimal
    import fractions
    import math

    import pytest

    from hepbdt.io.dataset import Dataset
    from hepbdt.io.errors import InputError

    n = 11
    X = np.arange(2 * n, dtype=np.float32).reshape(-1, 1)
    data = Dataset(X, np.arange(2 * n) % 2, np.ones(2 * n), feature_names=["a"])
    for fraction in (fractions.Fraction(1, 3), decimal.Decimal("0.3"), np.array(0.3)):
        train, _ = data.split("alternate", fraction)
        assert int((train.y == 1).sum()) == math.floor(n * float(fraction) + 0.5)
    for text in ("0.5", np.array("0.5"), np.array([0.5]), np.bool_(True), 0.5j):
        with pytest.raises(InputError, match="train_fraction must be a number"):
            data.split("alternate", text)
