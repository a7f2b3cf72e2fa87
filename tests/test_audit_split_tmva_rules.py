"""Audit DH (2026-12-05): ``Dataset.split`` and ``Dataset.normalize`` against a brute-force
re-implementation of TMVA's ``DataSetFactory::MixEvents`` and ``RenormEvents`` (ROOT's
tmva/tmva/src/DataSetFactory.cxx), event by event on small odd samples with signed and
zero weights, and the refusal of a ``train_fraction`` that is no number."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hepbdt.io import Dataset
from hepbdt.io.errors import InputError


def _tmva_one_class(n: int, mode: str, n_train: int, n_test: int) -> tuple[list[int], list[int]]:
    """TMVA's training and test event positions of one class of ``n`` undefined events for
    SplitMode Alternate or Block with nTrain_/nTest_ requests (0: TMVA's defaults)."""
    if n_train == 0 and n_test == 0:  # case C: both half of the class, rounded down
        n_train = n_test = n // 2
    elif n_test == 0:  # case B
        n_test = n - n_train
    elif n_train == 0:
        n_train = n - n_test
    train: list[int] = []
    test: list[int] = []
    if mode == "alternate":
        position, trained = 0, 0
        while position < n:
            trained += 1
            if trained <= n_train:
                train.append(position)
                position += 1
            if position < n:
                test.append(position)
                position += 1
    else:  # block: the first requested events train, the next ones test
        train = list(range(n_train))
        test = list(range(n_train, n))
    return train[:n_train], test[:n_test]


def _tmva_renorm(w_train: np.ndarray, y_train: np.ndarray, norm: str) -> np.ndarray:
    """TMVA's RenormEvents on the training events: per class, the class's training count
    (events of weight 0 left out, hepbdt's documented difference) over its signed sum of
    training weights; EqualNumEvents takes the signal's count for every class."""
    out = w_train.copy()
    signal_count = sum(1 for w, y in zip(w_train, y_train, strict=True) if y == 1 and w != 0)
    for cls in (0, 1):
        members = [i for i in range(len(w_train)) if y_train[i] == cls]
        total = sum(float(w_train[i]) for i in members)
        count = sum(1 for i in members if w_train[i] != 0)
        target = count if norm == "num_events" else signal_count
        for i in members:
            out[i] = w_train[i] * target / total
    return out


def _one_sample_per_class(n_signal: int, n_background: int, seed: int) -> Dataset:
    """Signal (sample 0) then background (sample 1); X holds each event's position."""
    rng = np.random.default_rng(seed)
    n = n_signal + n_background
    w = rng.uniform(0.5, 1.5, n)
    w[2::4] *= -0.3  # signed weights: every fourth event negative
    w[::5] = 0.0
    y = np.r_[np.ones(n_signal, int), np.zeros(n_background, int)]
    return Dataset(np.arange(n, dtype=np.float32)[:, None], y, w,
                   sample_index=1 - y, sample_names=["sig", "bkg"])


@pytest.mark.parametrize("mode", ["alternate", "block"])
@pytest.mark.parametrize("sizes", [(11, 7), (7, 11), (10, 9), (1, 4)])
def test_half_split_is_tmvas_with_the_rounded_half_requested(mode: str, sizes: tuple) -> None:
    """train_fraction 0.5 trains on TMVA's events for nTrain = floor(n / 2 + 0.5) and nTest
    the rest (README: the same at 0.5); with TMVA's defaults (both 0) an odd class loses
    its last alternate event to neither part, as README says."""
    data = _one_sample_per_class(*sizes, seed=sum(sizes))
    train, test = data.split(mode, 0.5)
    offset = 0
    for n in sizes:
        want_train = math.floor(n * 0.5 + 0.5)
        tmva_train, tmva_test = _tmva_one_class(n, mode, want_train, n - want_train)
        got_train = [int(x) - offset for x in train.X[:, 0] if offset <= x < offset + n]
        got_test = [int(x) - offset for x in test.X[:, 0] if offset <= x < offset + n]
        assert got_train == tmva_train and got_test == tmva_test
        default_train, default_test = _tmva_one_class(n, mode, 0, 0)
        assert len(default_train) + len(default_test) == n - n % 2
        offset += n


@pytest.mark.parametrize("norm", ["num_events", "equal_num_events"])
@pytest.mark.parametrize("mode", ["random", "alternate", "block"])
def test_normalisation_is_tmvas_renorm_of_the_training_events(norm: str, mode: str) -> None:
    data = _one_sample_per_class(11, 7, seed=3)
    raw_train, raw_test = data.split(mode, 0.6, seed=5)
    train, test = data.split(mode, 0.6, seed=5, norm=norm)
    np.testing.assert_array_equal(train.X, raw_train.X)
    np.testing.assert_allclose(train.w, _tmva_renorm(raw_train.w, raw_train.y, norm),
                               rtol=1e-12)
    np.testing.assert_array_equal(test.w, raw_test.w)  # test weights stay physical


@pytest.mark.parametrize("fraction", ["0.5", b"0.5", True, None, [0.5]])
def test_split_refuses_a_train_fraction_that_is_no_number(fraction: object) -> None:
    data = _one_sample_per_class(11, 7, seed=1)
    with pytest.raises(InputError, match="train_fraction must"):
        data.split("alternate", fraction)


def test_split_counts_with_a_numpy_fraction_as_with_the_float() -> None:
    data = _one_sample_per_class(11, 7, seed=2)
    for fraction in (np.float32(0.3), np.float64(0.7), 1 / 3):
        train, _ = data.split("alternate", fraction)
        expected = [math.floor(n * float(fraction) + 0.5) for n in (11, 7)]
        assert [int((train.y == 1).sum()), int((train.y == 0).sum())] == expected
