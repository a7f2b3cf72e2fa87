"""Dataset: construction from numpy, TMVA-style splits, k-fold by event, normalisation."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt.io import Dataset, InputError


def _dataset(n_sig: int = 101, n_bkg: int = 203, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    n = n_sig + n_bkg
    return Dataset(
        rng.normal(size=(n, 3)),
        y=np.r_[np.ones(n_sig, int), np.zeros(n_bkg, int)],
        w=rng.uniform(0.1, 2.0, n),
        sample_index=np.r_[np.zeros(n_sig, int), np.ones(n_bkg, int)],
        event=rng.permutation(10 * n)[:n],
        feature_names=["a", "b", "c"],
        sample_names=["sig", "bkg"],
    )


def test_construct_from_numpy_converts_once() -> None:
    X = np.asfortranarray(np.arange(12.0).reshape(4, 3))
    ds = Dataset(X, y=np.array([1, 0, 1, 0]))
    assert ds.X.dtype == np.float32 and ds.X.flags["C_CONTIGUOUS"]
    assert ds.y.dtype == np.int8 and ds.task == "classification"
    assert ds.sample_index.dtype == np.int8 and (ds.sample_index == 0).all()
    assert ds.w.dtype == np.float64 and (ds.w == 1).all()
    assert ds.event.dtype == np.int32 and list(ds.event) == [0, 1, 2, 3]
    assert ds.feature_names == ["f0", "f1", "f2"] and len(ds) == 4
    assert Dataset(X, y=np.linspace(0, 1, 4)).task == "regression"
    assert Dataset(X).y is None
    with pytest.raises(InputError, match=r"shape \(4,\)"):
        Dataset(X, w=np.ones(3))
    with pytest.raises(InputError, match="finite"):
        Dataset(X, w=[1.0, np.nan, 1.0, 1.0])
    with pytest.raises(InputError, match="2 feature names for 3"):
        Dataset(X, feature_names=["a", "b"])


@pytest.mark.parametrize(("largest", "dtype"), [(1, np.int8), (127, np.int8), (128, np.int16),
                                                (200, np.int16), (32_767, np.int16),
                                                (32_768, np.int32), (2**31 - 1, np.int32)])
def test_labels_and_sample_indices_take_the_smallest_signed_integers(largest, dtype) -> None:
    X = np.zeros((3, 1))
    values = [0, largest, 1]
    # a sample index needs a name for each sample: up to 32,768 of them here
    index = values if largest <= 32_768 else None
    names = [f"s{i}" for i in range(largest + 1)] if index is not None else None
    for given in (np.int64, np.int32, np.float64, np.uint64):
        ds = Dataset(X, y=np.array(values, dtype=given), sample_index=index, sample_names=names,
                     task="classification")
        assert ds.y.dtype == dtype and ds.y.tolist() == values
        if index is not None:
            assert ds.sample_index.dtype == dtype and ds.sample_index.tolist() == values


def test_label_and_sample_index_rule_in_subsets_and_copies() -> None:
    X = np.zeros((4, 1))
    y = np.array([0, 200, 1, 0], dtype=np.int16)
    ds = Dataset(X, y=y, sample_index=np.array([0, 129, 1, 0]),
                 sample_names=[f"s{i}" for i in range(130)])
    assert ds.y is y  # already the smallest: kept, not copied
    assert ds.y.dtype == ds.sample_index.dtype == np.int16  # 200 labels, 130 samples
    assert ds.take([0, 2]).y.dtype == ds.take([0, 2]).sample_index.dtype == np.int8
    assert ds.take([0, 1]).y.dtype == np.int16
    assert Dataset(X, y=y, copy=True).y is not y
    assert Dataset(X, y=[True, False, True, True]).y.dtype == np.int8
    assert Dataset(X, y=np.array([0.0, 1.0, 2.0, 1.0]), task="classification").y.dtype == np.int8
    # targets and event numbers keep their types
    assert Dataset(X, y=[0.5, 1.0, 2.0, 1.0]).y.dtype == np.float32
    assert Dataset(X, event=np.arange(4, dtype=np.int8)).event.dtype == np.int64


def test_negative_and_huge_labels_and_sample_indices_are_refused() -> None:
    X = np.zeros((3, 1))
    with pytest.raises(InputError, match=">= 0"):
        Dataset(X, y=[0, -1, 1])
    with pytest.raises(InputError, match="beyond int32"):
        Dataset(X, y=[0, 2**31, 1])
    with pytest.raises(InputError, match="beyond int32"):
        Dataset(X, y=np.array([0.0, np.inf, 1.0]), task="classification")
    with pytest.raises(InputError, match="integers"):
        Dataset(X, y=np.array([0.0, 0.5, 1.0]), task="classification")
    # negative or huge sample indices are named whole, not wrapped into range
    for bad in (-1, -256, 256, 2**40):
        with pytest.raises(InputError, match="sample_index must lie in 0..1"):
            Dataset(X, sample_index=[0, bad, 1], sample_names=["a", "b"])


def test_take_by_mask_index_and_slice() -> None:
    ds = _dataset()
    mask = ds.X[:, 0] > 0
    sub = ds[mask]
    np.testing.assert_array_equal(sub.X, ds.X[mask])
    np.testing.assert_array_equal(sub.event, ds.event[mask])
    assert sub.sample_names == ds.sample_names and sub.feature_names == ds.feature_names
    np.testing.assert_array_equal(ds.take([3, 1]).w, ds.w[[3, 1]])
    assert len(ds[10:20]) == 10


@pytest.mark.parametrize("mode", ["random", "alternate", "block"])
def test_split_partitions_each_sample(mode: str) -> None:
    ds = _dataset()
    train, test = ds.split(mode, train_fraction=0.3, seed=4)
    assert len(train) + len(test) == len(ds)
    assert sorted(np.r_[train.event, test.event]) == sorted(ds.event)
    for index, size in enumerate((101, 203)):
        assert (train.sample_index == index).sum() == round(0.3 * size)
    # events keep their order
    position = {e: i for i, e in enumerate(ds.event)}
    assert np.all(np.diff([position[e] for e in train.event]) > 0)


def test_split_modes_pick_the_tmva_events() -> None:
    ds = _dataset(10, 10)
    train, _ = ds.split("alternate", 0.5)
    np.testing.assert_array_equal(train.event, ds.event[[0, 2, 4, 6, 8, 10, 12, 14, 16, 18]])
    train, _ = ds.split("block", 0.3)
    np.testing.assert_array_equal(train.event, ds.event[[0, 1, 2, 10, 11, 12]])
    a, _ = ds.split("random", 0.5, seed=7)
    b, _ = ds.split("random", 0.5, seed=7)
    c, _ = ds.split("random", 0.5, seed=8)
    np.testing.assert_array_equal(a.event, b.event)
    assert not np.array_equal(a.event, c.event)


def test_normalisation_applies_to_training_weights_only() -> None:
    ds = _dataset()
    train, test = ds.split("random", 0.5, seed=1, norm="equal_num_events")
    sig, bkg = train.y == 1, train.y == 0
    assert np.isclose(train.w[sig].sum(), train.w[bkg].sum())
    assert np.isclose(train.w[sig].sum(), sig.sum())
    raw_train, raw_test = ds.split("random", 0.5, seed=1)
    np.testing.assert_array_equal(test.w, raw_test.w)
    # per-class rescaling keeps ratios within a class
    np.testing.assert_allclose(train.w[bkg] / raw_train.w[bkg],
                               (train.w[bkg] / raw_train.w[bkg])[0])
    train, _ = ds.split("block", 0.5, norm="num_events")
    assert np.isclose(train.w[train.y == 0].sum(), (train.y == 0).sum())
    assert np.isclose(train.w[train.y == 1].sum(), (train.y == 1).sum())
    assert ds.split("block", 0.5, norm="none")[0].w.sum() == ds.split("block", 0.5)[0].w.sum()
    with pytest.raises(InputError, match="sum to"):
        ds.replace(w=-ds.w).normalize("num_events")
    with pytest.raises(InputError, match="not one of"):
        ds.split(norm="NumEvent")


def test_kfold_by_event_number() -> None:
    ds = _dataset()
    pairs = ds.kfold(3, norm="num_events")
    assert len(pairs) == 3
    seen = []
    for i, (train, test) in enumerate(pairs):
        assert np.all(test.event % 3 == i) and np.all(train.event % 3 != i)
        assert len(train) + len(test) == len(ds)
        assert np.isclose(train.w[train.y == 1].sum(), (train.y == 1).sum())
        seen.extend(test.event)
    assert sorted(seen) == sorted(ds.event)
    with pytest.raises(InputError, match=">= 2"):
        ds.kfold(1)


def test_computations_on_the_features_drop_their_names():
    """A model fitted on np.log(X), X @ M, or columns permuted by take or roll recorded the
    old names, and apply then fed it the raw branches: those give plain arrays now, while
    row selections and copies keep the names."""
    data = Dataset(np.arange(12, dtype=np.float32).reshape(4, 3) + 1, y=np.array([0, 1, 0, 1]),
                   feature_names=["a", "b", "c"])
    X = data.X
    for plain in (X.take([2, 0, 1], axis=1), np.take(X, [2, 0, 1], axis=1),
                  np.roll(X, 1, axis=1), np.log(X), X @ np.eye(3, dtype=np.float32), X * 2,
                  X[:3].T, X[:3].transpose()):
        assert getattr(plain, "feature_names", None) is None, type(plain)
    for kept in (X[1:], X[[0, 2]], X.take([0, 1], axis=0), np.take(X, [0, 1], axis=0),
                 X.copy(), X[np.array([True, False, True, False])]):
        assert kept.feature_names == ("a", "b", "c")


def test_a_bad_seed_or_an_empty_fold_is_one_clear_error():
    """seed=-1 gave numpy's message, not naming seed; kfold(20) of 10 events trained
    models on every event and tested them on none."""
    data = Dataset(np.zeros((10, 2), np.float32), y=np.arange(10) % 2)
    for seed in (-1, 1.5, True):
        with pytest.raises(InputError, match="seed must be an integer >= 0"):
            data.split("random", 0.5, seed=seed)
    with pytest.raises(InputError, match=r"kfold\(20\): fold\(s\) \[10, 11, 12, 13, 14\]"):
        data.kfold(20)
    assert len(data.kfold(5)) == 5


def test_kfold_makes_each_pair_when_it_is_taken():
    # the cliffs audit: a list of 100 folds held 115x the features at once (1.8 GB for 16 MB)
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 50_000
    data = Dataset(rng.normal(size=(n, 10)).astype(np.float32),
                   y=(rng.random(n) < 0.5).astype(int), event=np.arange(n))
    tracemalloc.start()
    try:
        folds = data.kfold(40)
        sizes = [len(test) for _, test in folds]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(folds) == 40 and sum(sizes) == n and len(folds[-1][1]) == sizes[-1]
    assert peak < 6 * data.X.nbytes  # a pair or two at a time, not 40


def test_copy_false_keeps_float32_and_converts_others_on_numpy_1_and_2() -> None:
    """copy=False (how hepbdt.read assembles every Dataset) shares a float32 C-order X and
    converts any other, on numpy 1.x as on 2.x: ``np.array(..., copy=None)`` raised
    "NoneType copy mode not allowed" on numpy < 2, so every read failed at the numpy floor."""
    X32 = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert np.shares_memory(Dataset(X32, copy=False).X, X32)
    assert not np.shares_memory(Dataset(X32, copy=True).X, X32)
    X64 = np.asfortranarray(np.arange(12.0).reshape(4, 3) / 3)
    ds = Dataset(X64, copy=False)
    assert ds.X.dtype == np.float32 and ds.X.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(ds.X, X64.astype(np.float32))


def test_target_rounding_counts_parts_of_any_size_as_the_whole_sample() -> None:
    """TargetRounding merged over parts of 1, 2 and more events (a read's chunks) gives the
    numpy count, mean, squared deviations and squared float32 roundings of all targets."""
    from hepbdt.io.dataset import TargetRounding, float32_targets

    rng = np.random.default_rng(5)
    exact = 1000.0 + rng.normal(0.0, 0.01, 40)
    stored = exact.astype(np.float32)
    counted = TargetRounding()
    for start, stop in ((0, 1), (1, 2), (2, 4), (4, 5), (5, 25), (25, 25), (25, 40)):
        counted.add(exact[start:stop], stored[start:stop])
    assert counted.n == exact.size
    assert counted.mean == pytest.approx(exact.mean(), rel=1e-15)
    assert counted.m2 == pytest.approx(np.sum((exact - exact.mean()) ** 2), rel=1e-9)
    assert counted.rounding == pytest.approx(
        np.sum((stored.astype(np.float64) - exact) ** 2), rel=1e-12)
    seen = TargetRounding()
    np.testing.assert_array_equal(float32_targets(exact, "y", seen), stored)
    assert seen.m2 == pytest.approx(np.sum((exact - exact.mean()) ** 2), rel=1e-9)


def test_targets_rounded_beyond_the_resolution_are_refused_from_exactly_the_minimum_count(
) -> None:
    """TARGET_CHECK_EVENTS targets are judged: 1000 plus values spread over 0.001 round by
    far more than TARGET_RESOLUTION of their spread (numpy's ratio), so they are refused."""
    from hepbdt.io.dataset import TARGET_CHECK_EVENTS, TARGET_RESOLUTION, float32_targets

    exact = 1000.0 + np.linspace(0.0, 0.001, TARGET_CHECK_EVENTS)
    rounding = np.sqrt(np.mean((exact.astype(np.float32).astype(np.float64) - exact) ** 2))
    assert rounding > 3 * TARGET_RESOLUTION * exact.std()
    with pytest.raises(InputError, match="rounds them by"):
        float32_targets(exact, "y")
    float32_targets(exact[:-1], "y")  # too few to judge


def test_a_task_without_labels_and_a_mask_of_another_length_are_refused() -> None:
    """Dataset(task="classification") without y is refused, not unlabelled; a boolean mask
    whose length is not the number of events is an InputError, not numpy's IndexError."""
    X = np.zeros((4, 1))
    for task in ("classification", "regression"):
        with pytest.raises(InputError, match="needs y"):
            Dataset(X, task=task)
    with pytest.raises(InputError, match=r"mask must have shape \(4,\)"):
        Dataset(X).take(np.ones(3, dtype=bool))


@pytest.mark.parametrize("mode", ["alternate", "block"])
def test_split_keeps_each_of_many_samples_apart(mode: str) -> None:
    """Three samples (signal 0, backgrounds 1 and 2, whose keys a division would merge with
    the signal's) each keep floor(n f + 0.5) of their own events, by brute force."""
    sizes, labels = (3, 4, 5), (1, 0, 0)
    index = np.repeat(np.arange(3), sizes)
    ds = Dataset(np.arange(12.0)[:, None], np.repeat(labels, sizes), sample_index=index)
    train, _ = ds.split(mode, 0.5)
    for sample, size in enumerate(sizes):
        members = np.flatnonzero(index == sample)
        n_train = int(np.floor(size * 0.5 + 0.5))
        chosen = members[:n_train] if mode == "block" else members[::2]
        np.testing.assert_array_equal(train.X[train.sample_index == sample, 0], chosen)


def test_split_defaults_to_half_and_refuses_an_unknown_mode() -> None:
    """split() trains on floor(n / 2 + 0.5) of each class (TMVA's half: 50 of 100, 51 of 101);
    a mode that is none of SPLIT_MODES is refused, not taken for another."""
    for n_sig, n_bkg in ((100, 101), (3, 1)):
        train, _ = Dataset(np.zeros((n_sig + n_bkg, 1)),
                           np.r_[np.ones(n_sig, int), np.zeros(n_bkg, int)]).split()
        assert [int((train.y == 1).sum()), int((train.y == 0).sum())] == [
            (n_sig + 1) // 2, (n_bkg + 1) // 2]
    with pytest.raises(InputError, match="split mode 'alternating' is not one of"):
        _dataset().split("alternating")


def _one_sample(w: list[float] | np.ndarray) -> Dataset:
    return Dataset(np.zeros((len(w), 1)), np.ones(len(w), int), np.asarray(w, float),
                   sample_names=["qcd"])


def test_block_split_judges_blocks_from_two_events_at_five_standard_errors() -> None:
    """The block split is refused where the blocks' mean weights differ by more than 5
    standard errors (numpy's means and variances, by hand), from two events a block on;
    a block of one event is not judged; tiny constant weights (cross-section weights of
    1e-7) are judged too."""

    def z(w: np.ndarray, n_train: int) -> float:
        first, last = w[:n_train], w[n_train:]
        error = np.sqrt(first.var() / first.size + last.var() / last.size)
        return abs(first.mean() - last.mean()) / error

    refused = "split mode 'block': sample 'qcd'"
    with pytest.raises(InputError, match=refused):  # two events a block
        _one_sample([1.0, 1.0001, 10.0, 10.0001]).split("block", 0.5)
    _one_sample([1.0, 10.0, 10.1, 9.9]).split("block", 0.25)  # one event: not judged
    _one_sample([10.0, 10.1, 9.9, 1.0]).split("block", 0.75)
    rng = np.random.default_rng(1)
    base = rng.normal(1.0, 1.0, 200)
    base = (base - base.mean()) / base.std()
    for shift, kept in ((0.3, True), (1.2, False)):
        w = np.r_[base[:100] + 5.0, base[100:] + 5.0 + shift]
        assert (z(w, 100) < 5) == kept  # ~2 and ~8.5 standard errors
        if kept:
            _one_sample(w).split("block", 0.5)
        else:
            with pytest.raises(InputError, match=refused):
                _one_sample(w).split("block", 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by a standard error of 0
        with pytest.raises(InputError, match=refused + r".*each block's weights all equal"):
            _one_sample(np.r_[np.full(10, 1e-7), np.full(10, 2e-7)]).split("block", 0.5)
    _one_sample(np.full(20, 1e-7)).split("block", 0.5)


def test_kfold_by_given_fold_numbers_checks_their_range() -> None:
    """kfold(k, by=folds) tests fold i on the events numbered i (numpy masks by hand) for
    every number 0..k-1, and refuses -1, k, a fraction and another key word."""
    ds = _dataset(6, 6)
    folds = np.arange(12) % 3
    for i, (train, test) in enumerate(ds.kfold(3, by=folds)):
        np.testing.assert_array_equal(test.event, ds.event[folds == i])
        np.testing.assert_array_equal(train.event, ds.event[folds != i])
    for bad in (-1, 3, 0.5):
        by = folds.astype(float)
        by[4] = bad
        with pytest.raises(InputError, match=r"integers in 0..2 \(k = 3\): 1 of 12 are not"):
            ds.kfold(3, by=by)
    with pytest.raises(InputError, match="takes 'event' or an array"):
        ds.kfold(3, by="run")


def test_normalize_one_event_and_refuse_balancing_a_regression() -> None:
    """num_events makes a lone event's weight 1 (TMVA: its count over its sum); a regression
    has no classes to balance with equal_num_events."""
    one = Dataset(np.zeros((1, 1)), np.ones(1, int), w=[3.0])
    assert one.normalize("num_events").w.tolist() == [1.0]
    regression = Dataset(np.zeros((3, 1)), np.array([0.5, 1.5, 2.5]), w=[1.0, 2.0, 3.0])
    np.testing.assert_allclose(regression.normalize("num_events").w, [0.5, 1.0, 1.5])
    with pytest.raises(InputError, match="balances classes"):
        regression.normalize("equal_num_events")


def test_event_numbers_that_are_no_integers_are_refused_and_two_folds_work() -> None:
    """A fractional or NaN event number is refused (int64 would truncate it into a fold);
    kfold(2) tests the even event numbers in fold 0 (Python's e % 2)."""
    X = np.zeros((3, 1))
    for bad in (1.5, np.nan):
        with pytest.raises(InputError, match=r"1 of 3 are not .*event\[1\]"):
            Dataset(X, event=[4.0, bad, 6.0])
    ds = Dataset(np.zeros((5, 1)), event=[-3, 0, 7, 10, 2**40 + 1])
    (train0, test0), (train1, test1) = ds.kfold(2)
    assert test0.event.tolist() == [e for e in ds.event.tolist() if e % 2 == 0]
    assert test1.event.tolist() == train0.event.tolist() == [-3, 7, 2**40 + 1]


def test_train_fraction_must_lie_strictly_between_0_and_1() -> None:
    """0 and 1 (an empty training or test set) and 1.005 are refused; 0.005 of 1000
    events trains on 5 of them, 0.001497 on 1 (floor(n f + 0.5)); a regression target
    beyond float32 is refused."""
    ds = Dataset(np.zeros((1000, 1)), np.ones(1000, int))
    for fraction in (0.0, 1.0, 1.005, -0.5):
        with pytest.raises(InputError, match=r"train_fraction must lie in \(0, 1\)"):
            ds.split("alternate", fraction)
    assert len(ds.split("alternate", 0.005)[0]) == 5
    assert len(ds.split("alternate", 0.001497)[0]) == 1  # floor(1.497 + 0.5)
    with pytest.raises(InputError, match="beyond float32's range"):
        Dataset(np.zeros((2, 1)), np.array([1e39, 0.0]))
