"""Dask fit audit (2026-11-27): a part of zero net weight in the training loss, a held-out
weight out of range under a class normalisation, quantised_histograms checked by value,
a cluster of no workers, a dask DataFrame's column names, and column-vector inputs, each
against the in-memory fit or its error."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

from hepbdt import BDTClassifier, BDTRegressor  # noqa: E402
from hepbdt.dask import DaskBDTClassifier, DaskBDTRegressor  # noqa: E402
from hepbdt.estimators import ParameterError  # noqa: E402

from .test_dask import _assert_same_forest, _dask, _data  # noqa: E402


def test_a_part_of_zero_net_weight_counts_in_the_training_loss(client):
    # Its mean loss is 0 by convention when its weights sum to 0; the training loss was
    # mean x total, so the part's terms were dropped (0.6663 against memory's 0.6659).
    X, y, w = _data(3000)
    w[:1000] = np.where(np.arange(1000) % 2 == 0, 1.0, -1.0)
    assert w[:1000].sum() == 0.0
    options = dict(n_trees=3, max_depth=3, quantised_histograms=True, negative_weights="keep",
                   random_state=0)
    memory = BDTClassifier(**options).fit(X, y, w)
    dist = DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1000), client=client)
    _assert_same_forest(memory.forest_, dist.forest_)
    np.testing.assert_allclose(dist.train_loss_, memory.train_loss_, rtol=1e-9)


def test_a_held_out_weight_out_of_range_is_refused_as_in_memory(client):
    # With sig_to_bkg_fraction memory checks every normalised weight before the hold-out;
    # the Dask fit checked the training events' only and trained.
    X, y, w = _data(4000)
    options = dict(n_trees="auto", sig_to_bkg_fraction=1.0, quantised_histograms=True,
                   random_state=3, max_depth=3, n_iter_no_change=3)
    held = np.random.default_rng(3).random(4000) < 0.1  # memory's hold-out draw
    w[int(np.flatnonzero(held)[0])] = 1e-35
    with pytest.raises(ValueError) as expected:
        BDTClassifier(**options).fit(X, y, w)
    with pytest.raises(ValueError) as got:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1000), client=client)
    assert str(got.value) == str(expected.value)
    assert "lie outside 1e-30 to 1e+30" in str(got.value)


@pytest.mark.parametrize("value", ["bogus", None, "False", 0, 1])
def test_quantised_histograms_is_checked_by_value(client, value):
    X, y, w = _data(1500)
    for boosting in ("gradient", "adaboost"):
        options = dict(boosting=boosting, n_trees=2, max_depth=2, quantised_histograms=value)
        with pytest.raises(ParameterError, match="expected 'auto', True or False"):
            BDTClassifier(**options).fit(X, y, w)
        with pytest.raises(ParameterError, match="expected 'auto', True or False"):
            DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=500), client=client)


def test_numpy_booleans_are_the_booleans():
    # np.False_ passed the check by equality, then acted as "auto" (packed from 50,000 events)
    X, y, w = _data(1500)
    plain = BDTClassifier(n_trees=3, max_depth=2, quantised_histograms=True).fit(X, y, w)
    numpy_true = BDTClassifier(n_trees=3, max_depth=2, quantised_histograms=np.True_).fit(X, y, w)
    _assert_same_forest(plain.forest_, numpy_true.forest_)
    assert BDTClassifier(quantised_histograms=np.False_)._use_quantised(100_000) is False


def test_a_cluster_of_no_workers_is_refused_not_awaited():
    distributed = pytest.importorskip("distributed")
    X, y, w = _data(500)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as empty:
        for model in (DaskBDTClassifier(n_trees=2, max_depth=2), DaskBDTRegressor(n_trees=2)):
            with pytest.raises(ValueError, match="no workers"):
                model.fit(*_dask(X, y.astype(float), w, chunk=250), client=empty)


def test_a_dask_dataframe_names_the_features(client):
    # Its names were dropped: a model fitted on it read a reordered pandas X by position.
    pd = pytest.importorskip("pandas")
    X, y, w = _data(2000, m=4)
    frame = pd.DataFrame(X, columns=["pt", "eta", "phi", "mass"])
    memory = BDTClassifier(n_trees=3, max_depth=3, quantised_histograms=True).fit(frame, y, w)
    dist = DaskBDTClassifier(n_trees=3, max_depth=3).fit(
        dd.from_pandas(frame, npartitions=2), *_dask(y, w, chunk=1000), client=client)
    assert list(dist.feature_names_in_) == ["pt", "eta", "phi", "mass"]
    shuffled = frame[["mass", "phi", "eta", "pt"]]
    np.testing.assert_array_equal(dist.decision_function(shuffled),
                                  memory.decision_function(shuffled))
    # and a reordered dask DataFrame is read by name too (its blocks were read by position)
    lazy = dist.decision_function(dd.from_pandas(shuffled, npartitions=2)).compute()
    np.testing.assert_array_equal(np.asarray(lazy), memory.decision_function(shuffled))
    with pytest.raises(ValueError, match=r"lacks the features \['eta'\]"):
        dist.decision_function(dd.from_pandas(shuffled.drop(columns="eta"), npartitions=2))


def test_column_vectors_as_in_memory(client):
    X, y, w = _data(1500)
    for make, target in ((BDTClassifier, y), (BDTRegressor, np.nan_to_num(X[:, 0]) + y)):
        dask_make = DaskBDTClassifier if make is BDTClassifier else DaskBDTRegressor
        options = dict(n_trees=2, max_depth=2, quantised_histograms=True)
        with pytest.warns(Warning, match="column-vector y"):
            memory = make(**options).fit(X, target[:, None], w)
        with pytest.warns(Warning, match="column-vector y"):
            dist = dask_make(**options).fit(*_dask(X, target[:, None], w, chunk=500),
                                            client=client)
        _assert_same_forest(memory.forest_, dist.forest_)
    with pytest.raises(ValueError, match=r"sample_weight must be 1-d.*\(1500, 1\)"):
        DaskBDTClassifier(n_trees=2).fit(*_dask(X, y, w[:, None], chunk=500), client=client)


def test_lazy_read_and_cluster_apply_use_the_clients_paths(tmp_path, monkeypatch):
    # the lazy-path audit (2026-12-02): relative paths were opened in the workers' working
    # folder (another file of the same name was read) and apply's output written there
    from hepbdt.io.samples import Source, absolute_source

    monkeypatch.chdir(tmp_path)
    assert absolute_source(Source("data/s.root", "t")).path == str(tmp_path / "data" / "s.root")
    assert absolute_source(Source("root://host//s.root", "t")).path == "root://host//s.root"


def test_float64_features_that_float32_collapses_warn_as_in_memory(client):
    """Memory's fit warns for a float64 feature that float32 holds in few steps (a timestamp
    of 1e9 +- 30: every value one float32); the Dask fit did not (an audit of the Dask fit
    against memory, 2026-12-05). The parts now send their columns' extents and the client
    warns for the whole sample. Reference: numpy's range of the feature, in double."""
    import re
    import warnings

    rng = np.random.default_rng(3)
    n = 4_000
    X = np.column_stack([1e9 + rng.uniform(-30, 30, n), rng.normal(size=n)])
    X[7, 0] = np.nan  # skipped, as in memory
    y = (np.nan_to_num(X[:, 0] - 1e9) > 0).astype(int)
    low, high = np.nanmin(X[:, 0]), np.nanmax(X[:, 0])  # of the whole sample, not a part's
    assert np.unique(X[~np.isnan(X[:, 0]), 0].astype(np.float32)).size <= 2  # collapsed
    expected = re.escape(f"X: feature 'stamp' spans {float(low)!r} to {float(high)!r}, which "
                         "float32")
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        DaskBDTClassifier(n_trees=2, max_depth=2).fit(
            *_dask(X, y, chunk=1_000), client=client, feature_names=["stamp", "other"])
    texts = [str(w.message) for w in got if "float32" in str(w.message)]
    assert len(texts) == 1 and re.match(expected, texts[0]), texts
    with warnings.catch_warnings(record=True) as got:  # float32 input: nothing to warn of
        warnings.simplefilter("always")
        DaskBDTClassifier(n_trees=2, max_depth=2).fit(
            *_dask(X.astype(np.float32), y, chunk=1_000), client=client)
    assert not [w for w in got if "float32 (what hepbdt" in str(w.message)]


@pytest.mark.parametrize("given_out_of_range", [False, True])
def test_a_held_out_weight_put_out_of_range_by_its_class_factor_is_refused_as_in_memory(
        client, given_out_of_range):
    # Each weight lies within range as given; the background's normalisation factor (about
    # 1e-7 here) puts a held-out event's 1e-25 below 1e-30. Memory says that rescaling does
    # not help; the Dask fit told the user to rescale (and a slip to w / factor kept it at
    # 1e-18 and trained). With a given weight out of range in the other part, memory words
    # it as for given weights, and so must the part that finds the first.
    X, y, w = _data(4000)
    w = np.where(y == 0, 1e7 * w, w)
    options = dict(n_trees="auto", sig_to_bkg_fraction=1.0, quantised_histograms=True,
                   random_state=3, max_depth=3, n_iter_no_change=3)
    held = np.random.default_rng(3).random(4000) < 0.1  # memory's hold-out draw
    first = int(np.flatnonzero(held & (y == 0))[0])
    assert first < 2000  # in the first of the two parts
    w[first] = 1e-25
    if given_out_of_range:
        w[3999] = 1e31
    with pytest.raises(ValueError) as expected:
        BDTClassifier(**options).fit(X, y, w)
    with pytest.raises(ValueError) as got:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1000), client=client)
    assert str(got.value) == str(expected.value)
    normalised = "after the class normalisation" in str(got.value)
    assert normalised is not given_out_of_range


@pytest.mark.parametrize("policy", ["keep", "abs", "ignore"])
def test_a_weight_put_out_of_range_by_the_class_normalisation_without_hold_out(client, policy):
    # No events held out (a fixed n_trees): memory still checks the whole sample's normalised
    # given weights before the policy, and says that rescaling does not help. The Dask fit
    # checked only after the policy, on the training events: "rescale them" (keep), or the
    # policy's words and "the first is 9.98e-32" where memory's is 1e-31 (ignore).
    X, y, w = _data(2000)
    signal, background = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    w[background[:5]] *= -1
    w[signal[10]], w[signal[11]] = 1e29, 1e-5  # normalised: 1e-5 x 1e-26 is below 1e-30
    options = dict(boosting="adaboost", n_trees=2, negative_weights=policy)
    with pytest.raises(ValueError) as expected:
        BDTClassifier(**options).fit(X, y, w)
    assert "after the class normalisation" in str(expected.value)
    with pytest.raises(ValueError) as got:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1000), client=client)
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("policy, negatives", [("keep", 0), ("abs", 0), ("abs", 5),
                                               ("ignore", 5)])
def test_a_training_weight_put_out_of_range_by_the_training_normalisation(client, policy,
                                                                         negatives):
    # After the hold-out memory normalises the training events' classes on their own and
    # checks them (_given_weights): one background weight that the whole sample's factor
    # keeps just above 1e-30 falls to 9.99e-31. Memory says that rescaling does not help;
    # the Dask fit told the user to rescale (and with "abs" but no negative weight, a
    # policy's words would name one that did not act). With negative weights the policy
    # acts after that check: the Dask fit checked only after it, in the policy's words
    # (and under "ignore" quoting 9.97e-31).
    X, y, w = _data(3000)
    options = dict(n_trees="auto", sig_to_bkg_fraction=1.0, quantised_histograms=True,
                   random_state=4, max_depth=2, negative_weights=policy)
    held = np.random.default_rng(4).random(y.size) < 0.1  # memory's hold-out draw
    background = y == 0
    w[np.flatnonzero(background & ~held)[1:1 + negatives]] *= -1
    whole = y.size / 2 / np.sum(w[background])
    train = np.count_nonzero(~held) / 2 / np.sum(w[background & ~held])
    assert whole > train * 1.001
    w[np.flatnonzero(background & ~held)[0]] = 1e-30 / np.sqrt(whole * train)
    with pytest.raises(ValueError) as expected:
        BDTClassifier(**options).fit(X, y, w)
    assert "1 weight(s) lie outside" in str(expected.value)
    assert "after the class normalisation" in str(expected.value)
    with pytest.raises(ValueError) as got:
        DaskBDTClassifier(**options).fit(*_dask(X, y, w, chunk=1000), client=client)
    assert str(got.value) == str(expected.value)
