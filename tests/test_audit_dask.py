"""Audit of the Dask estimators against the in-memory ones: what a fit refuses says what
memory says of the whole sample (event numbers, counts, largest values, lengths), the
refused options are named as given, and the fitted model's attributes saved with it are
memory's."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

import dask.array as da  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from hepbdt import BDTClassifier, BDTRegressor  # noqa: E402
from hepbdt.dask import DaskBDTClassifier, DaskBDTRegressor  # noqa: E402
from hepbdt.estimators import ParameterError  # noqa: E402

OPTIONS = dict(n_trees=2, max_depth=3, random_state=0, quantised_histograms=True,
               negative_weights="keep")


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                           dashboard_address=":0")
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def _data(n=3_000, m=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m)).astype(np.float32)
    y = (X[:, 0] + rng.standard_normal(n) > 0).astype(int)
    return X, y, rng.uniform(0.5, 1.5, n)


def _dask(*arrays, chunk=1_000):
    return [da.from_array(a, chunks=(chunk,) + a.shape[1:]) for a in arrays]


def _error_of(fit) -> tuple[type, str]:
    with pytest.raises((ValueError, TypeError)) as info:
        fit()
    return type(info.value), str(info.value)


def _both(client, kind: str, X, y, w):
    """The in-memory error and the Dask fit's (parts of 1,000 events, two workers)."""
    local, dist = ((BDTRegressor, DaskBDTRegressor) if kind == "regressor"
                   else (BDTClassifier, DaskBDTClassifier))
    memory = _error_of(lambda: local(**OPTIONS).fit(X, y, sample_weight=w))
    cluster = _error_of(lambda: dist(**OPTIONS).fit(*_dask(X, y, w), client=client))
    return memory, cluster


def _bad_inputs(case: str):
    X, y, w = _data()
    target = X[:, 0].astype(np.float64)
    if case == "inf feature":  # in the third part: memory counts from the sample's start
        X[2_005, 1] = np.inf
    elif case == "nan weight":
        w[2_007] = np.nan
    elif case == "weights out of range":  # in two parts: memory counts every one
        w[[5, 2_007, 2_500]] = 1e36
    elif case == "largest target":  # the larger in the later part
        target[5], target[2_009] = 1e36, -1e38
    elif case == "no feature":
        X = X[:, :0]
    elif case == "short weights":
        w = w[:-1]
    elif case == "zero weights":
        w = np.zeros_like(w)
    kind = "regressor" if case == "largest target" else "classifier"
    return kind, X, target if kind == "regressor" else y, w


@pytest.mark.parametrize("case", ["inf feature", "nan weight", "weights out of range",
                                  "largest target", "no feature", "short weights",
                                  "zero weights"])
def test_refusals_describe_the_whole_sample_as_in_memory(client, case):
    kind, X, y, w = _bad_inputs(case)
    memory, cluster = _both(client, kind, X, y, w)
    assert cluster == memory


def test_lengths_that_differ_are_named(client):
    X, y, w = _data()
    with pytest.raises(ValueError, match="X has 3000 events but y has 2999"):
        DaskBDTClassifier(**OPTIONS).fit(*_dask(X, y[:-1], w), client=client)


@pytest.mark.parametrize("option", [
    {"max_leaves": 8, "boosting": "adaboost", "quantised_histograms": "auto"}, {"max_depth": 13},
])
def test_refused_options_are_named_as_given(client, option):
    X, y, w = _data(n=500)
    with pytest.raises(ParameterError) as info:
        DaskBDTClassifier(**{**OPTIONS, **option}).fit(*_dask(X, y, w), client=client)
    assert info.value.param == next(iter(option))
    assert f"{next(iter(option))}=" in str(info.value)


def test_the_saved_model_says_what_memory_says(client):
    X, y, w = _data()
    memory = BDTClassifier(**OPTIONS).fit(X, y, sample_weight=w)
    dist = DaskBDTClassifier(**OPTIONS).fit(*_dask(X, y, w), client=client)
    assert dist.n_trees_reason_ == memory.n_trees_reason_
    saved, expected = dist.to_dict(), memory.to_dict()
    # train_loss: the losses' float32 weight total (hepbdt/boosting/losses.py) rounds apart
    for key in set(saved) | set(expected):
        if key != "train_loss":
            assert saved.get(key) == expected.get(key), key


@pytest.mark.parametrize("options", [{}, {"n_trees": "auto"}])
def test_a_hold_out_that_takes_a_class_is_named_as_in_memory(client, options):
    X, y, w = _data()
    y[:] = 0
    y[5] = 1  # seed 1's hold-out takes the one signal event, in memory and on Dask alike
    options = {**OPTIONS, "n_trees": 4, "early_stopping": True, "validation_fraction": 0.5,
               "random_state": 1, **options}
    memory = _error_of(lambda: BDTClassifier(**options).fit(X, y, sample_weight=w))
    cluster = _error_of(lambda: DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client))
    assert "every event of positive weight of class 1" in memory[1]
    assert cluster == memory


def test_a_hold_out_without_a_class_is_refused_as_in_memory(client):
    # the one signal event stays in training (seed 1 took it into the hold-out above): the
    # validation loss that chose the trees saw background only, without a word (the
    # auto-trees audit: 60 signal events, none held out, 21 trees on a one-class loss)
    X, y, w = _data()
    y[:] = 0
    y[6] = 1
    options = {**OPTIONS, "n_trees": 4, "early_stopping": True, "validation_fraction": 0.5,
               "random_state": 1}
    memory = _error_of(lambda: BDTClassifier(**options).fit(X, y, sample_weight=w))
    cluster = _error_of(lambda: DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client))
    assert "none of them (net) of positive weight of class 1" in memory[1], memory
    assert "would not see it" in memory[1]
    assert cluster == memory


@pytest.mark.parametrize("boosting", ["gradient", "newton"])  # AdaBoost refuses it
def test_the_no_split_warning_says_what_memory_says(client, boosting):
    X, y, w = _data()
    X[:] = 1.0  # nothing to split on
    options = {**OPTIONS, "boosting": boosting}
    with pytest.warns(UserWarning, match="no tree made a single split") as memory:
        BDTClassifier(**options).fit(X, y, sample_weight=w)
    with pytest.warns(UserWarning, match="no tree made a single split") as cluster:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    texts = [[str(r.message) for r in record if "no tree made" in str(r.message)]
             for record in (memory, cluster)]
    assert texts[1] == texts[0] and "The event weights sum to" in texts[0][0]


@pytest.mark.parametrize("scale", [0.1, 0.3])
@pytest.mark.parametrize("options", [{}, {"sig_to_bkg_fraction": 1.0},
                                     {"boosting": "adaboost", "quantised_histograms": "auto"}])
def test_a_class_netting_zero_is_refused_on_a_cluster_as_in_memory(client, scale, options):
    """Background weights 1, 2, -3 net 0 exactly, times 0.1 or 0.3 a residue of either sign
    (the tolerance audit): memory and the cluster both refuse, with the same message."""
    X, y, _ = _data()
    y = np.r_[np.zeros(1_500, int), np.ones(1_500, int)]
    w = np.r_[np.tile([1.0, 2.0, -3.0], 500), np.ones(1_500)] * scale
    memory = _error_of(lambda: BDTClassifier(**{**OPTIONS, **options}).fit(X, y, sample_weight=w))
    cluster = _error_of(lambda: DaskBDTClassifier(**{**OPTIONS, **options}).fit(
        *_dask(X, y, w), client=client))
    assert "positive sum of weights" in memory[1]
    assert cluster[0] is memory[0] and cluster[1].split(";")[0] == memory[1].split(";")[0]


def test_a_class_netting_less_than_its_rounding_is_refused_on_a_cluster_as_in_memory(client):
    """Background weights 1, 2, -3 and one of 1e-10: a net weight (1e-10 in rationals) below
    the rounding of its sum, 1,501 events x eps x 3,000 = 1.0e-9, is refused as memory's."""
    from fractions import Fraction

    X, _, _ = _data(n=3_001)
    y = np.r_[np.zeros(1_501, int), np.ones(1_500, int)]
    w = np.r_[np.tile([1.0, 2.0, -3.0], 500), 1e-10, np.ones(1_500)]
    net = sum(Fraction(v) for v in w[y == 0])
    bound = 1_501 * Fraction(np.finfo(np.float64).eps) * sum(Fraction(abs(v)) for v in w[y == 0])
    assert 0 < net < bound / 5
    memory = _error_of(lambda: BDTClassifier(**OPTIONS).fit(X, y, sample_weight=w))
    cluster = _error_of(lambda: DaskBDTClassifier(**OPTIONS).fit(*_dask(X, y, w), client=client))
    assert "positive sum of weights" in memory[1]
    assert cluster[0] is memory[0] and cluster[1].split(";")[0] == memory[1].split(";")[0]


@pytest.mark.parametrize("boosting", ["adaboost", "gradient"])
def test_a_ratio_of_three_classes_is_refused_as_in_memory(client, boosting):
    """A numeric sig_to_bkg_fraction with three classes: the Dask fit's check called
    memory's, which called the Dask fit's back, until Python's recursion limit."""
    X, _, w = _data()
    y = np.arange(X.shape[0]) % 3
    options = dict(OPTIONS, boosting=boosting, sig_to_bkg_fraction=1.0)
    with pytest.raises(ParameterError) as memory:
        BDTClassifier(**options).fit(X, y, sample_weight=w)
    with pytest.raises(ParameterError) as cluster:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    assert str(cluster.value) == str(memory.value)


def test_binned_features_and_decorrelation_are_refused_in_words(client):
    """A BinnedMatrix gave an AttributeError from dask's from_array; decorrelate= a
    TypeError of an unexpected argument."""
    from hepbdt.binned import BinnedMatrix

    X, y, w = _data()
    binned = BinnedMatrix.from_features(X, [np.linspace(-2, 2, 17, dtype=np.float32)] * X.shape[1])
    for estimator in (DaskBDTClassifier, DaskBDTRegressor):
        with pytest.raises(TypeError, match="not a BinnedMatrix"):
            estimator(**OPTIONS).fit(binned, y, client=client)
    with pytest.raises(ParameterError, match="decorrelation .* is not distributed"):
        DaskBDTClassifier(**OPTIONS).fit(*_dask(X, y, w), client=client, decorrelate=X[:, :1])


@pytest.mark.parametrize("boosting", ["adaboost", "gradient"])
def test_verbose_shows_the_progress_of_a_cluster_fit(client, capsys, boosting):
    """verbose=True drew memory's progress bar and nothing on a cluster."""
    X, y, w = _data()
    options = dict(OPTIONS, boosting=boosting, n_trees=3, verbose=True,
                   quantised_histograms=boosting == "gradient")
    BDTClassifier(**options).fit(X, y, sample_weight=w)
    memory = capsys.readouterr().err
    DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    cluster = capsys.readouterr().err
    assert "training" in memory and "3/3 trees" in memory
    assert "training" in cluster and "3/3 trees" in cluster


def test_the_grown_loss_warning_on_a_cluster_takes_the_lowest_loss_before_it(client):
    """The Dask twin of memory's grown-loss test (tests/test_audit_numeric_extremes.py): deep
    trees on 5 % subsamples at learning_rate 1 bring the squared loss from the constant's
    to its lowest after one tree, then climb past twice that lowest, though not past twice
    the highest. The warning names the first such tree and both numbers, computed here with
    numpy from the staged predictions; the Dask loop keeps its own lowest loss."""
    import warnings

    from .test_audit_numeric_extremes import (
        GROWN_LOSS_OPTIONS,
        assert_warned_at_the_first_growth,
        grown_loss_sample,
    )

    X, y = grown_loss_sample()
    X = X.astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = DaskBDTRegressor(**GROWN_LOSS_OPTIONS).fit(*_dask(X, y), client=client)
    assert_warned_at_the_first_growth(model, X, y, caught)


def test_the_training_loss_of_weights_that_add_up_to_one_is_numpys(client):
    """train_loss_ is the weighted mean loss after each tree: 1,024 events of weight 1/1024
    (a total of exactly 1) give numpy's mean squared error / 2 of the staged predictions,
    to float32 rounding, not 0."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1024, 3)).astype(np.float32)
    y = X[:, 0] + 0.5 * rng.normal(size=1024)
    w = np.full(1024, 1 / 1024)
    model = DaskBDTRegressor(loss="squared", n_trees=3, max_depth=3, random_state=0).fit(
        *_dask(X, y, w, chunk=512), client=client)
    staged = [np.sum(w * (p - y) ** 2 / 2) / np.sum(w) for p in model.staged_predict(X)]
    np.testing.assert_allclose(model.train_loss_, staged, rtol=1e-5)


def test_held_out_weights_that_add_up_to_one_give_numpys_validation_loss(client):
    """early_stopping holds out 64 of 624 events (random_state 3, the fit generator's first
    draw); weights of 1/64 make their total exactly 1. Each recorded validation loss is
    numpy's weighted mean squared error / 2 of the held-out events at the staged predictions
    (to float32 rounding), as in memory; not 0."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(624, 3)).astype(np.float32)
    y = X[:, 0] + 0.5 * rng.normal(size=624)
    w = np.full(624, 1 / 64)
    held = np.random.default_rng(3).random(624) < 0.1
    assert held.sum() == 64
    model = DaskBDTRegressor(loss="squared", n_trees=8, max_depth=3, random_state=3,
                             validation_fraction=0.1, early_stopping=True, n_iter_no_change=2).fit(
        *_dask(X, y, w, chunk=312), client=client)
    staged = [np.sum(w[held] * (p - y[held]) ** 2 / 2) / np.sum(w[held])
              for p in model.staged_predict(X[held])]
    n = min(len(staged), len(model.validation_loss_))
    assert n > 1
    np.testing.assert_allclose(model.validation_loss_[:n], staged[:n], rtol=1e-5)


@pytest.mark.parametrize("n_trees", [30, 24])
def test_a_signed_loss_that_runs_away_is_refused_in_memorys_words(client, n_trees):
    # Memory's runaway case (15 % negative weights kept, learning_rate 1): the signed loss
    # falls below -1 x the first after tree 24, a tree of one score ("after tree", not a
    # multi-class "round"), found after a later tree (30 trees) or as the final loss (24).
    from .test_audit_cancelled_leaves import _flipped_sample

    X, y, w = _flipped_sample(n=3_000)
    options = dict(n_trees=n_trees, max_depth=3, negative_weights="keep", random_state=1,
                   quantised_histograms=True, learning_rate=1.0)
    with pytest.raises(ValueError) as expected:
        BDTClassifier(**options).fit(X, y, w)
    assert "fell to -3.75e+05 after tree 24 (from 0.539)" in str(expected.value)
    with pytest.raises(ValueError) as got:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w), client=client)
    assert str(got.value) == str(expected.value)
