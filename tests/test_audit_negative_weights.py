"""Audit of the negative-weight policies against independent references: a brute-force
pairing (scikit-learn's neighbours, math.fsum), the generator's E[w | x], scikit-learn's
isotonic regression, and the fold of every model and map behind an event's weight."""

from __future__ import annotations

import math
import threading
import tracemalloc

import numpy as np
import pytest

import hepbdt.boosting.negative_weights as nw
import hepbdt.estimators as estimators
from hepbdt import BDTClassifier

EPS = np.finfo(np.float64).eps


def _within(seconds: float, fn, *args, **kwargs):
    """fn(*args, **kwargs), failing the test when it has not returned within ``seconds``."""
    result: dict = {}

    def run():
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - handed to the test's thread
            result["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{fn.__name__} did not end within {seconds} s"
    if "error" in result:
        raise result["error"]
    return result["value"]


def _reference_pair(X: np.ndarray, w: np.ndarray, n_neighbours: int) -> np.ndarray:
    """The documented pairing, by brute force: numpy's standardisation kept in float32,
    scikit-learn's neighbours among the positive events at the start of each pass, the
    negative events in order, each list four times as long as the last."""
    from sklearn.neighbors import NearestNeighbors

    Xd = np.asarray(X, dtype=np.float64)
    mean, std = np.nanmean(Xd, axis=0), np.nanstd(Xd, axis=0)
    Z = np.where(np.isnan(Xd), 0.0, (Xd - mean) / np.where(std > 0, std, 1.0)).astype(np.float32)
    w = np.asarray(w, dtype=np.float64).copy()
    made_of, adds = np.abs(w), np.zeros(w.size, int)
    neg, k = np.flatnonzero(w < 0), n_neighbours
    while neg.size:
        pos = np.flatnonzero(w > 0)
        if pos.size == 0:
            w[neg] = 0.0
            break
        search = NearestNeighbors(n_neighbors=min(k, pos.size), algorithm="brute").fit(Z[pos])
        lists = pos[search.kneighbors(Z[neg], return_distance=False)]
        left = []
        for i, candidates in zip(neg, lists, strict=True):
            for j in candidates:
                if w[i] >= 0:
                    break
                if w[j] <= 0:
                    continue
                total = w[i] + w[j]
                # the rounding of every sum behind both weights (Higham: adds x eps x sum |terms|)
                terms, count = made_of[i] + made_of[j], adds[i] + adds[j] + 1
                if abs(total) <= max(2 * EPS * max(-w[i], w[j]), EPS * count * terms):
                    w[i] = w[j] = 0.0
                elif total > 0:
                    w[i], w[j] = 0.0, total
                    made_of[j], adds[j] = terms, count
                else:
                    w[i], w[j] = total, 0.0
                    made_of[i], adds[i] = terms, count
            left.append(w[i] < 0)
        neg, k = neg[np.array(left, dtype=bool)], 4 * k
    return w


def _two_clusters(n: int, seed: int = 0):
    """Negative events of weight -3.9 in a cluster with half as many positive ones, the
    other positive events far away: most negative events need long candidate lists."""
    rng = np.random.default_rng(seed)
    n_neg, n_near = n // 5, n // 10
    X = np.r_[rng.normal(size=(n_neg + n_near, 4)), rng.normal(size=(n - n_neg - n_near, 4)) + 6]
    w = np.r_[np.full(n_neg, -3.9), np.ones(n - n_neg)]
    order = rng.permutation(n)
    return X[order].astype(np.float32), w[order]


def _assert_net_kept(new: np.ndarray, w: np.ndarray) -> None:
    """Every new weight finite and >= 0, the net weight kept to the rounding of the sums."""
    assert np.all(np.isfinite(new)) and np.all(new >= 0)
    assert abs(math.fsum(new) - math.fsum(w)) <= w.size * EPS * math.fsum(np.abs(w))


@pytest.mark.parametrize("case", ["mixed", "clusters"])
def test_pair_equals_a_brute_force_pairing(case, monkeypatch):
    """Per class, with NaN features, several passes and lists as long as the positive
    events; the same with the lists held a few events at a time in one-query tiles."""
    rng = np.random.default_rng(1)
    if case == "mixed":
        X = rng.normal(size=(1500, 3)).astype(np.float32)
        X[rng.random(X.shape) < 0.05] = np.nan
        y = rng.integers(0, 3, X.shape[0])
        w = rng.gamma(2.0, 1.0, X.shape[0]) * np.where(rng.random(X.shape[0]) < 0.3, -1, 1)
        n_neighbours = 2
    else:
        X, w = _two_clusters(2500)
        y = np.zeros(w.size, int)
        n_neighbours = 16
    reference = np.empty(w.size)
    for c in np.unique(y):
        reference[y == c] = _reference_pair(X[y == c], w[y == c], n_neighbours)
    assert np.array_equal(nw.pair_class_weights(X, y, w, n_neighbours), reference)
    monkeypatch.setattr(nw, "PAIR_CANDIDATES", 40)
    monkeypatch.setattr(nw, "KNN_HEAP", 8)
    assert np.array_equal(nw.pair_class_weights(X, y, w, n_neighbours), reference)
    for c in np.unique(y):
        _assert_net_kept(reference[y == c], w[y == c])


def test_long_candidate_lists_cost_k_log_k():
    """A sorted insertion kept each list: 64 lists of 40,000 candidates took 15 s (k^2 a
    list). Integer coordinates: exact distances, ties broken by the smaller index, as a
    stable sort of the full distance matrix does."""
    rng = np.random.default_rng(0)
    Zq = rng.integers(0, 1000, (64, 2)).astype(np.float32)
    Zp = rng.integers(0, 1000, (40_000, 2)).astype(np.float32)
    nw._nearest(Zq[:2], Zp[:10], 5)  # compiled outside the deadline
    found = _within(5.0, nw._nearest, Zq, Zp, Zp.shape[0])
    d = ((Zq[:, None, :].astype(np.float64) - Zp[None, :, :]) ** 2).sum(axis=-1)
    assert np.array_equal(found, np.argsort(d, axis=1, kind="stable"))


def test_pair_memory_stays_bounded_when_lists_grow():
    """Every candidate list of a pass used to be held at once (n_neg * k indices, twice):
    172 MB at 20,000 events whose negative events need long lists."""
    X, w = _two_clusters(20_000)
    nw.pair_weights(X[:50], np.r_[np.ones(49), -1.0])  # compiled outside the measurement
    tracemalloc.start()
    try:
        new = _within(30.0, nw.pair_weights, X, w)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _assert_net_kept(new, w)
    assert peak < 60e6, peak


def _local_net_weight_sample(n: int = 3000, seed: int = 0):
    """Weights +-1 with P(+1 | x) = (1 + x0) / 2: the true local net weight E[w | x] is x0."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2)).astype(np.float32)
    truth = X[:, 0].astype(np.float64)
    return X, np.where(rng.random(n) < (1 + truth) / 2, 1.0, -1.0), truth


@pytest.mark.parametrize("scale", [1.0, 1e40, 1e-45, 1e300])
def test_regress_learns_the_local_net_weight_at_any_scale(scale):
    """Weights beyond float32's range overflowed the regressor's channels: near-constant
    weights (mean error 0.19-0.25 against the truth, 0.11 at scale 1)."""
    X, w, truth = _local_net_weight_sample()
    new = nw.regress_weights(X, w * scale)
    _assert_net_kept(new, w * scale)
    assert np.mean(np.abs(new / scale - truth)) < 0.15
    if scale == 1.0:  # a power of two changes no bit
        assert np.array_equal(nw.regress_weights(X, w * 2.0**-1000), new * 2.0**-1000)


def test_regress_through_a_class_normalisation_of_huge_weights(monkeypatch):
    """sig_to_bkg_fraction brings weights of 1e40 into the training's range, so they are
    accepted; the policy sees them as given."""
    X, w, truth = _local_net_weight_sample()
    y = np.r_[np.zeros(w.size, int), np.ones(500, int)]
    X = np.r_[X, np.random.default_rng(3).uniform(size=(500, 2)).astype(np.float32)]
    w = np.r_[w, np.ones(500)] * 1e40
    seen = {}
    policy = estimators.regress_class_weights

    def recording(Z, y_, w_, *args, **kwargs):
        seen["w"] = policy(Z, y_, w_, *args, **kwargs)
        return seen["w"]

    monkeypatch.setattr(estimators, "regress_class_weights", recording)
    BDTClassifier(boosting="adaboost", n_trees=2, random_state=0).fit(X, y, w)
    assert np.mean(np.abs(seen["w"][y == 0] / 1e40 - truth)) < 0.15


def test_pair_refuses_features_it_cannot_standardise():
    """An infinite value made the column NaN for every event: no neighbour was found and
    every negative event was paired with the class's last positive event."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)).astype(np.float32)
    w = np.where(np.arange(200) % 5 == 0, -1.0, 1.0)
    huge = np.c_[X[:, :2], rng.normal(size=200) * 1e200]  # float64: its square overflows
    X[7, 1] = np.inf
    with pytest.raises(ValueError, match=r"negative_weights='pair': column 1 .* infinite values"):
        nw.pair_weights(X, w)
    with pytest.raises(ValueError, match="column 2 .* too large to standardise"):
        nw.pair_weights(huge, w)


@pytest.mark.parametrize("policy", ["pair", "regress"])
def test_policies_refuse_weights_that_are_not_finite(policy):
    """A NaN weight used to pass through when no weight was negative, and otherwise was
    refused as a net weight of nan 'not positive'."""
    reweigh = nw.pair_weights if policy == "pair" else nw.regress_weights
    X = np.random.default_rng(0).normal(size=(30, 2)).astype(np.float32)
    for bad in (np.nan, np.inf):
        for first in (1.0, -1.0):
            w = np.ones(30)
            w[0], w[3] = first, bad
            with pytest.raises(ValueError, match=rf"negative_weights='{policy}': weight 3 .* is "
                                                 rf"{bad}; every weight must be a finite number"):
                reweigh(X, w)


def test_the_classifier_variant_refuses_a_fold_with_one_sign():
    X = np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)
    w = np.array([-1.0, -1.0, 10.0, -1.0, 0.1, -1.0])
    with pytest.raises(ValueError, match=r"method='classify'.* fold \d hold no positive weight"):
        nw.regress_weights(X, w, random_state=1, method="classify")


@pytest.mark.parametrize("method", ["cancel", "regress"])
def test_regress_models_and_maps_never_saw_the_events_they_weigh(method, monkeypatch):
    """Instrumented: each fold's models train (and stop) on rows that they never score,
    and every event is scored by every model of its fold, once."""
    rng = np.random.default_rng(0)
    n = 900
    X = np.c_[np.arange(n), rng.normal(size=(n, 2))].astype(np.float32)  # column 0: the event
    w = rng.uniform(0.5, 1.5, n) * np.where(rng.random(n) < 0.25, -1, 1)
    rows = np.sort(rng.choice(n, 600, replace=False))
    seen, trained, scored = [], [], []
    transform = nw.BinMapper.transform
    build = nw.run_boosting

    def recording_transform(self, X_, in_x=None):
        seen.append(set(np.asarray(X_[in_x, 0], int).tolist()))
        return transform(self, X_, in_x)

    def recording_run(*args, **kwargs):
        result = build(*args, **kwargs)
        trained.append(set().union(*seen))  # its training and validation events
        seen.clear()
        model, forest = len(trained) - 1, result.builder.build()

        class Scoring:
            def build(self, keep=None):
                return Scoring()

            def raw_score(self, Xb):
                scored.append((model, np.asarray(Xb[:, 0], int)))
                return forest.raw_score(Xb)

        result.builder = Scoring()
        return result

    monkeypatch.setattr(nw.BinMapper, "transform", recording_transform)
    monkeypatch.setattr(nw, "run_boosting", recording_run)
    new = nw.regress_weights(X, w[rows], rows=rows, method=method)
    models = nw.CANCELLATION_MODELS if method == "cancel" else 1
    assert len(trained) == nw.REGRESS_FOLDS * models
    every = np.concatenate([ids for _, ids in scored])
    assert np.array_equal(np.sort(every), np.repeat(rows, models))
    assert all(not (trained[model] & set(ids.tolist())) for model, ids in scored)
    _assert_net_kept(new, w[rows])


def test_regress_calibration_is_scikit_learns_isotonic_regression_on_the_other_half():
    """Each event's calibration (method "regress") ignores its own weight and equals
    scikit-learn's isotonic regression fitted on the other half of its fold."""
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(0)
    n = 900
    w = rng.uniform(0.5, 1.5, n) * np.where(rng.random(n) < 0.25, -1, 1)
    score = rng.normal(size=n).round(1)
    fold = rng.permutation(n) % 3
    local = nw._calibrated(score, w, fold, np.random.default_rng(6))
    halves_rng, reference = np.random.default_rng(6), np.empty(n)
    for k in range(3):
        events = halves_rng.permutation(np.flatnonzero(fold == k))
        halves = (events[0::2], events[1::2])
        for mine, other in (halves, halves[::-1]):
            iso = IsotonicRegression(out_of_bounds="clip").fit(score[other], w[other])
            reference[mine] = iso.predict(score[mine])
    np.testing.assert_allclose(local, reference, rtol=0, atol=1e-12)
    for i in range(0, n, 7):
        changed = w.copy()
        changed[i] += 1e3
        assert nw._calibrated(score, changed, fold, np.random.default_rng(6))[i] == local[i]


@pytest.mark.parametrize("n_neighbours", [0, -2, 1.5, True])
def test_pair_refuses_an_empty_candidate_list(n_neighbours):
    """n_neighbours=0 gave empty lists that never grew (k *= 4): the pairing looped forever."""
    X = np.random.default_rng(0).normal(size=(20, 2)).astype(np.float32)
    w = np.where(np.arange(20) % 4 == 0, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"negative_weights='pair': n_neighbours=.* integer >= 1"):
        _within(10.0, nw.pair_weights, X, w, n_neighbours)
    assert np.all(nw.pair_weights(X, w, np.int64(1)) >= 0)


@pytest.mark.parametrize("scale", [0.1, 0.3, 1.1])
def test_pair_leaves_exact_zeros_whatever_the_weights_scale(scale):
    """One positive weight that took ten negatives in turn carried the rounding of ten sums
    (weights of 0.1 left 1e-17 where unit weights leave 0): such events counted as events
    (AdaBoost's min_node_size, the 1,000-event rule); the tolerance sanity audit."""
    from hepbdt.boosting.negative_weights import pair_class_weights

    X, w = [], []
    for g in range(300):  # a +10 among ten -1, far from the other groups, and two spares
        centre = np.array([g * 100.0, 0.0])
        X += [centre, *(centre + [0.01 * (k + 1), 0.0] for k in range(10)),
              centre + [5.0, 0.0], centre + [6.0, 0.0]]
        w += [10.0, *[-1.0] * 10, 1.0, 2.0]
    X, w = np.array(X, np.float32), np.array(w)
    y = np.ones(w.size, int)
    unit = pair_class_weights(X, y, w)
    scaled = pair_class_weights(X, y, scale * w)
    assert np.count_nonzero(unit) == 600  # the spares: every +10 took its ten -1 exactly
    np.testing.assert_array_equal(scaled != 0, unit != 0)
    np.testing.assert_allclose(scaled, scale * unit, rtol=1e-12)


@pytest.mark.parametrize("scale", [0.1, 1.1])
def test_regress_drops_the_same_events_whatever_the_weights_scale(scale):
    """A calibration block pooling +u and -u events has a mean of exactly 0 with unit
    weights (the event is dropped) and a rounding residue of 6e-18 with weights of 0.1 or
    1.1: such events survived and counted as events (the default classifier's
    min_node_size and its number of trees moved, scores by up to 0.2)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    w = np.where(rng.random(3000) < np.where(X[:, 0] < 0, 0.5, 0.1), -1.0, 1.0)
    y = np.zeros(w.size, int)
    unit = nw.regress_class_weights(X, y, w, method="regress")
    scaled = nw.regress_class_weights(X, y, scale * w, method="regress")
    assert np.count_nonzero(unit == 0) > 500  # the test sees pooled blocks at all
    np.testing.assert_array_equal(scaled == 0, unit == 0)
    np.testing.assert_allclose(scaled / scale, unit, rtol=0, atol=1e-6 * unit.max())


@pytest.mark.parametrize("rounding, refused", [(1e-2, False), (1e-4, True)])
def test_pair_drops_or_refuses_what_is_left_once_the_positive_events_are_used_up(
        rounding, refused, monkeypatch):
    """A class whose negative weight outlasts its positive events (its net weight -1e-3,
    let through as if it were rounding): what is left once every positive event is used up
    is dropped when within the rounding bound, refused beyond it; the dropped case is the
    brute-force pairing, pass by pass, and ends with no weight at all."""
    X, w = _two_clusters(500)
    w[w > 0] = (-w[w < 0].sum() - 1e-3) / np.count_nonzero(w > 0)  # 1e-3 short of |neg|
    assert math.isclose(math.fsum(w), -1e-3, rel_tol=1e-9)
    monkeypatch.setattr(nw, "_check_net_weight", lambda w, *args: rounding)
    if refused:
        with pytest.raises(ValueError, match=r"0\.001 of negative weight is left with no "
                                             "positive weight"):
            nw.pair_weights(X, w, n_neighbours=2)
        return
    new = nw.pair_weights(X, w, n_neighbours=2)
    assert np.array_equal(new, _reference_pair(X, w, 2))
    assert np.all(new == 0.0)
