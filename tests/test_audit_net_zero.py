"""A net weight of exactly 0 with unit weights is a residue of the sum's rounding with
weights of 0.1 (3e-17) or 0.3 (-1e-16). Tests of ``> 0`` took such residues for positive
totals and divided by them; each now compares with the rounding of the sum
(``_util.positive_beyond_rounding``), so the outcome does not depend on the weights'
scale (a tolerance audit, 2026-12-03). Reference: the same call with unit weights."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt._util import weighted_quantile
from hepbdt.boosting.ddt import apply_quantile_map, fit_quantile_map
from hepbdt.boosting.decorrelation import FlatnessLoss
from hepbdt.boosting.losses import get_loss
from hepbdt.io.dataset import Dataset
from hepbdt.io.errors import InputError

SCALES = [0.1, 0.3, 1.1]
NET_ZERO = np.array([1, 1, 1, -1, -1, -1.0])


@pytest.mark.parametrize("scale", SCALES)
def test_quantiles_of_a_net_zero_sample_take_the_magnitudes(scale):
    values = np.arange(6.0)
    np.testing.assert_array_equal(weighted_quantile(values, NET_ZERO * scale, [0.25, 0.5, 0.75]),
                                  weighted_quantile(values, NET_ZERO, [0.25, 0.5, 0.75]))


@pytest.mark.parametrize("scale", SCALES)
def test_normalising_a_class_of_net_zero_weight_is_refused(scale):
    """Weights of 0.1 were normalised by their residue: weights of 2e16."""
    X = np.arange(12, dtype=np.float32).reshape(12, 1)
    y = np.array([0] * 6 + [1] * 6)
    with pytest.raises(InputError, match="cannot normalise: the weights of class 0"):
        Dataset(X, y, np.r_[NET_ZERO, np.ones(6)] * scale).normalize("num_events")


@pytest.mark.parametrize("scale", SCALES)
def test_a_flatness_cell_of_net_zero_weight_gets_no_term(scale):
    """Its term divided by the cell's residue: gradients of 1e17."""
    m = np.r_[np.arange(200.0), np.arange(200.0)]
    y = np.r_[np.zeros(200), np.ones(200)].astype(int)
    w = np.ones(400)
    w[:20] = np.r_[np.ones(10), -np.ones(10)]  # the background's lowest cell of 10 nets 0

    def gradients(weights):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loss = FlatnessLoss(get_loss("gradient", "deviance"), 1.0, m, y, weights, n_bins=10)
        return loss.flatness_terms(np.linspace(-1, 1, 400), weights)[0]

    np.testing.assert_allclose(gradients(w * scale), gradients(w) * scale, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_the_ddt_map_merges_a_mass_cell_of_net_zero_weight(scale):
    """Weights of 0.1 kept a bin whose net weight was a residue: 4 bins instead of 3 and
    the last bin's quantiles collapsed (F moved by up to 0.49)."""
    rng = np.random.default_rng(0)
    w = np.r_[np.ones(700), 300.0, np.tile(NET_ZERO, 50)]
    m = np.arange(w.size, dtype=float)
    score = rng.normal(size=w.size) + m / 500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unit, scaled = (fit_quantile_map(score, m, weights, None) for weights in (w, w * scale))
    assert len(scaled["centres"]) == len(unit["centres"])
    np.testing.assert_allclose(apply_quantile_map(scaled, score, m),
                               apply_quantile_map(unit, score, m), rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", SCALES)
def test_a_class_of_net_zero_weight_is_named_as_zero(scale):
    X = np.arange(12, dtype=np.float32).reshape(12, 1)
    y = np.array([0] * 6 + [1] * 6)
    with pytest.raises(ValueError, match="both classes need a positive sum of weights"):
        BDTClassifier(boosting="adaboost", n_trees=2, negative_weights="keep").fit(
            X, y, np.r_[NET_ZERO, np.ones(6)] * scale)


@pytest.mark.parametrize("scale", SCALES)
def test_a_multiclass_class_of_net_zero_weight_is_named_by_its_label(scale):
    """The label check summed with bincount (a residue passed it) where the boosters sum
    exactly: the class was then refused by its index, not its label."""
    X = np.arange(12, dtype=np.float32).reshape(12, 1)
    y = np.array(["qcd"] * 6 + ["signal"] * 3 + ["ttbar"] * 3)
    with pytest.raises(ValueError, match=r"these classes have none: 'qcd' \(0\)"):
        BDTClassifier(boosting="newton", n_trees=2, negative_weights="keep").fit(
            X, y, np.r_[NET_ZERO, np.ones(6)] * scale)


@pytest.mark.parametrize("scale", [1.0, *SCALES])
@pytest.mark.parametrize("boosting", ["gradient", "newton", "adaboost"])
def test_a_class_netting_zero_is_refused_whatever_the_rounding(scale, boosting):
    """Weights 1, 2, -3 net exactly 0; times 0.1 or 0.3 they net a residue of either sign
    (fl(0.1) + fl(0.2) != fl(0.3), in exact sums too), which a positive sign let through."""
    X = np.arange(12, dtype=np.float32).reshape(12, 1)
    y = np.array([0] * 6 + [1] * 6)
    w = np.r_[np.tile([1.0, 2.0, -3.0], 2), np.ones(6)] * scale
    with pytest.raises(ValueError, match="both classes need a positive sum of weights"):
        BDTClassifier(boosting=boosting, n_trees=2, negative_weights="keep").fit(X, y, w)


def _cancelling_sample(n: int = 2000):
    """Integer weights 1-5, 8 % of them negative: some nodes' weights cancel exactly (3 - 1
    - 2), which weights of 3e-6, 1e-6 and 2e-6 do only up to their float32 rounding."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.8 * y[:, None]
    w = rng.integers(1, 6, n).astype(float)
    w[rng.random(n) < 0.08] *= -1
    target = X[:, 0] * 2 + X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    return X, target, w


@pytest.mark.parametrize("scale", [1e-6, 0.1, 3e5])
def test_kept_negative_weights_grow_the_same_trees_at_any_scale(scale):
    """A side whose signed weights cancel held the float32 rounding of its weights at 1e-6
    (W about 1e-13, where unit weights give 0): its A^2 / W gave a gain of 1.9e8, a split on
    another feature was taken, and predictions moved by up to 1.06. The reference: the
    same fit on the unit weights, whose sums are exact."""
    from hepbdt import BDTRegressor

    X, target, w = _cancelling_sample()
    options = dict(boosting="gradient", loss="squared", n_trees=3, max_depth=3,
                   min_node_size=0.0, negative_weights="keep", random_state=0)
    unit = BDTRegressor(**options).fit(X, target, sample_weight=w)
    scaled = BDTRegressor(**options).fit(X, target, sample_weight=w * scale)
    np.testing.assert_array_equal(scaled.forest_.feature, unit.forest_.feature)
    np.testing.assert_array_equal(scaled.forest_.threshold, unit.forest_.threshold)
    np.testing.assert_allclose(scaled.predict(X), unit.predict(X), rtol=1e-5, atol=1e-5)
