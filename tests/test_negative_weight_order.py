"""Where the negative-weight policies act in a fit: on the training events only, after the
n_trees="auto" hold-out is split off (which keeps its given weights, as an eval_set); in
the space of the features and the decorrelation variables; and which weights the float32
magnitude check blames on sample_weight and which on the policy."""

from __future__ import annotations

import numpy as np
import pytest

import hepbdt.estimators as estimators
from hepbdt import BDTClassifier, BDTRegressor
from hepbdt._util import hash_fraction
from hepbdt.boosting.negative_weights import pair_weights, regress_class_weights

POLICIES = ("regress", "pair", "ignore", "abs")
AUTO = dict(n_trees="auto", max_depth=2, learning_rate=0.5, n_iter_no_change=3, random_state=0)
AUTO_FRACTION = 0.1  # BDTClassifier's default validation_fraction


def _sample(n=3000, seed=0):
    """Two classes in 4 features, a signal-like background component (a quarter of the
    background) cancelled by negative weights, and event numbers."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.normal(0, 0.8, n) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    w[(y == 0) & (rng.random(n) < 0.25)] *= -1
    event = np.arange(n, dtype=np.int64) * 7 + 11
    return X, y, w, event


def _forest(model):
    return model.to_dict()["forest"]


@pytest.mark.parametrize("settings", [{}, {"sig_to_bkg_fraction": 1.0},
                                      {"n_trees": 40, "early_stopping": True}])
@pytest.mark.parametrize("policy", POLICIES)
def test_negative_weights_only_among_held_out_events_change_nothing(policy, settings):
    # They used to: the policy ran before the split, so with negative weights only among
    # the held-out events, regress moved weight between training events and pair removed
    # some of them; and the held-out events were evaluated with the policy's weights.
    X, y, w, event = _sample()
    held = hash_fraction(event) < AUTO_FRACTION
    w = np.abs(w)
    # every third held-out background event negative: each class of the held-out events
    # keeps a positive total (a hold-out without one is refused), also class-normalised
    w[held & (y == 0) & (np.arange(w.size) % 3 == 0)] *= -1
    assert w[held & (y == 0)].sum() > 0
    assert np.any(w < 0) and not np.any(w[~held] < 0)
    params = dict(AUTO, **settings)
    keep = BDTClassifier(negative_weights="keep", **params).fit(X, y, w, event=event)
    model = BDTClassifier(negative_weights=policy, **params).fit(X, y, w, event=event)
    assert keep.best_iteration_ is not None  # something was held out and watched
    assert _forest(model) == _forest(keep)
    assert np.array_equal(model.validation_loss_, keep.validation_loss_)


@pytest.mark.parametrize("policy", ("regress", "pair", "ignore"))
def test_the_hold_out_is_an_eval_set_of_given_weights(policy):
    """The held-out events are evaluated with their given weights (negative ones
    included, none dropped), and the policy sees the other events only: the fit is the
    one that trains on those events with the held-out ones as its eval_set."""
    X, y, w, event = _sample(seed=1)
    held = hash_fraction(event) < AUTO_FRACTION
    assert np.any(w[held] < 0) and np.any(w[~held] < 0)
    model = BDTClassifier(negative_weights=policy, **AUTO).fit(X, y, w, event=event)
    by_hand = BDTClassifier(negative_weights=policy, **AUTO).fit(
        X[~held], y[~held], w[~held], eval_set=(X[held], y[held], w[held]))
    assert "held out" in model.n_trees_reason_
    assert _forest(model) == _forest(by_hand)
    assert np.array_equal(model.validation_loss_, by_hand.validation_loss_)


def test_an_eval_set_is_watched_in_the_training_class_ratio():
    """With sig_to_bkg_fraction, the held-out events were class-normalised and an eval_set
    was not (S/B 0.011 against 1): the same events watched otherwise. Now an eval_set is
    weighed in the training's class ratio: its losses are those of the same events with
    their weights normalised by hand to S/B = 1 and watched without normalisation."""
    X, y, w, event = _sample(seed=2)
    w[y == 1] *= 0.01
    held = hash_fraction(event) < AUTO_FRACTION
    valid = (X[held], y[held], w[held])
    model = BDTClassifier(negative_weights="keep", sig_to_bkg_fraction=1.0, **AUTO).fit(
        X[~held], y[~held], w[~held], eval_set=valid)
    s, b = w[held][y[held] == 1].sum(), w[held][y[held] == 0].sum()
    by_hand = np.where(y[held] == 1, w[held] / s, w[held] / b)
    watched = BDTClassifier(negative_weights="keep", sig_to_bkg_fraction=1.0, **AUTO)
    watched.fit(X[~held], y[~held], w[~held], eval_set=(X[held], y[held], by_hand))
    np.testing.assert_allclose(model.validation_loss_, watched.validation_loss_, rtol=1e-12)
    unnormalised = BDTClassifier(negative_weights="keep", sig_to_bkg_fraction=None, **AUTO)
    unnormalised.fit(X[~held], y[~held], w[~held], eval_set=valid)
    assert abs(unnormalised.validation_loss_[0] - model.validation_loss_[0]) > 0.01


def test_a_hold_out_that_cannot_take_the_class_ratio_is_refused():
    """A class of negative net weight: 'abs' trains in the class ratio, but the held-out
    events kept their given weights (S/B -0.004) and early stopping watched another mix."""
    X, y, w, event = _sample(seed=3)
    w[y == 1] = -np.abs(w[y == 1])
    w[(y == 1) & (np.arange(w.size) % 4 == 0)] *= -0.5
    assert w[y == 1].sum() < 0
    with pytest.raises(ValueError, match="cannot be weighed in the training's class ratio"):
        BDTClassifier(negative_weights="abs", sig_to_bkg_fraction=1.0, **AUTO).fit(
            X, y, w, event=event)
    fixed = BDTClassifier(negative_weights="abs", sig_to_bkg_fraction=1.0,
                          **dict(AUTO, n_trees=5)).fit(X, y, w)
    assert fixed.n_trees_ == 5


def _cancelled_mass_bump(seed=0):
    """A background component with weight +1 and an identical one with weight -1, both
    at m = 0.8, m not a feature: the net background is flat in m."""
    rng = np.random.default_rng(seed)
    ns, nb, k = 4000, 8000, 2000
    X = rng.normal(size=(ns + nb + 2 * k, 3)).astype(np.float32)
    X[:ns] += 0.5
    m = np.r_[rng.uniform(0, 1, ns + nb), rng.normal(0.8, 0.05, 2 * k)]
    y = np.r_[np.ones(ns, int), np.zeros(nb + 2 * k, int)]
    w = np.r_[np.ones(ns + nb + k), -np.ones(k)]
    return X, y, w, m


@pytest.mark.parametrize("policy", ("regress", "pair"))
def test_the_policy_keeps_the_net_distribution_of_the_decorrelation_variable(monkeypatch, policy):
    # It used to reweight in the features only: the cancelled component at m = 0.8 kept
    # its weight there, a false bump of twice the net background that the flatness loss
    # then flattened the score against.
    X, y, w, m = _cancelled_mass_bump()
    seen = {}
    flatness = estimators.FlatnessLoss

    def recording(loss, strength, decorrelate, y_train, w_train, *args):
        seen.update(m=decorrelate[:, 0].copy(), y=np.asarray(y_train).copy(),
                    w=np.asarray(w_train, np.float64).copy())
        return flatness(loss, strength, decorrelate, y_train, w_train, *args)

    monkeypatch.setattr(estimators, "FlatnessLoss", recording)
    BDTClassifier(n_trees=2, negative_weights=policy, decorrelation="flatness",
                  random_state=0).fit(X, y, w, decorrelate=m)
    bins = np.linspace(0, 1, 11)
    given = np.histogram(m[y == 0], bins, weights=w[y == 0])[0]
    error = np.sqrt(np.histogram(m[y == 0], bins, weights=w[y == 0] ** 2)[0])
    background = seen["y"] == 0
    assert np.all(seen["w"] > 0)
    trained = np.histogram(seen["m"][background], bins, weights=seen["w"][background])[0]
    assert np.all(np.abs(trained - given) < 3 * error), (trained, given, error)


def test_pair_leaves_exact_zeros_where_weights_cancel_to_rounding():
    # A weight of -1e-15 against one ulp more: the sum, 1.97e-31, used to be left as a
    # training weight, which the float32 check then refused as the user's sample_weight.
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    w = np.full(n, 1e-15)
    a, b = np.flatnonzero(y == 0)[:2]
    X[b] = X[a]
    w[a], w[b] = np.nextafter(1e-15, 1.0), -1e-15
    new = pair_weights(X[y == 0], w[y == 0])
    assert new[0] == 0.0 and new[1] == 0.0
    assert np.all(new[2:] == 1e-15)
    BDTClassifier(n_trees=2, negative_weights="pair").fit(X, y, w)


def test_given_weights_are_checked_before_the_policy():
    # A given weight of 1e-35 is refused as sample_weight's, even where a policy would
    # annihilate it (pair) or drop it (ignore) before training.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    w = np.ones(400)
    w[np.flatnonzero(y == 0)[0]] = -1e-35
    for policy in ("pair", "ignore", "regress"):
        with pytest.raises(ValueError, match=r"^sample_weight: 1 training weight"):
            BDTClassifier(n_trees=2, negative_weights=policy).fit(X, y, w)


def test_weights_the_policy_takes_out_of_range_are_blamed_on_it():
    """Every given weight within 1e-30..1e30, some of regress's below: the refusal names
    the policy and the factor that brings its weights into range, which then trains."""
    X, y, w, _ = _sample(n=2000, seed=2)
    new = regress_class_weights(X, y, w)
    smallest_new, smallest_given = new[new > 0].min(), np.abs(w).min()
    assert smallest_new < 0.5 * smallest_given  # the case: the policy makes smaller ones
    scale = 1.5e-30 / smallest_given
    assert np.abs(w * scale).min() >= estimators.MIN_MAGNITUDE
    with pytest.raises(ValueError, match=r"^negative_weights='regress': .* the policy gave .*"
                                         r"every given weight lies within.* multiply "
                                         r"sample_weight by (\d+)") as caught:
        BDTClassifier(n_trees=2, random_state=0).fit(X, y, w * scale)
    factor = float(caught.value.args[0].split("multiply sample_weight by ")[1].split()[0])
    BDTClassifier(n_trees=2, random_state=0).fit(X, y, w * scale * factor)


@pytest.mark.parametrize("policy", ("regress", "pair"))
def test_a_regression_refusal_speaks_of_the_regression(policy):
    X = np.random.default_rng(0).normal(size=(8, 2)).astype(np.float32)
    w = np.array([1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0, 0.5])
    with pytest.raises(ValueError, match="regression's training events") as caught:
        BDTRegressor(n_trees=2, negative_weights=policy).fit(X, X[:, 0], w)
    assert "class" not in str(caught.value)
