"""Audit DK (2026-12-05): ``hepbdt.report(model, train, test)`` of an ``n_trees="auto"`` fit
without ``held_out=`` counted the ~10 % of training events the fit held out (on which no
tree trained) as training events. The reference is an independent splitmix64 hash of the
event numbers and a brute-force count."""

from __future__ import annotations

import re

import numpy as np
import pytest

import hepbdt
from hepbdt import Dataset


def _splitmix_fraction(event: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of each number, as a fraction in [0, 1) (written out here)."""
    z = event.astype(np.int64).view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / 2.0**53


def _split(n: int = 4000):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.int8)
    return Dataset(X, y=y, w=np.ones(n), event=np.arange(n) * 7 + 3).split("random", 0.5)


def _training_count(path) -> int:
    found = re.search(r"([\d,]+) training events", path.read_text())
    return int(found.group(1).replace(",", ""))


@pytest.mark.filterwarnings("ignore")
def test_report_leaves_out_the_events_the_fit_held_out(tmp_path):
    train, test = _split()
    model = hepbdt.BDTClassifier(max_depth=3).fit(train.X, train.y, train.w, event=train.event)
    held = _splitmix_fraction(np.asarray(train.event)) < 0.1
    assert 0 < held.sum() < len(train)
    path = hepbdt.report(model, train, test, tmp_path / "r.html")
    assert _training_count(path) == int(np.count_nonzero(~held))


@pytest.mark.filterwarnings("ignore")
def test_report_of_a_random_hold_out_and_of_other_events(tmp_path):
    train, test = _split()
    model = hepbdt.BDTClassifier(max_depth=3).fit(train.X, train.y, train.w)  # drawn by rng
    held = np.random.default_rng(0).random(len(train)) < 0.1  # the fit's seed, its first draw
    path = hepbdt.report(model, train, test, tmp_path / "r.html")
    assert _training_count(path) == int(np.count_nonzero(~held))
    with pytest.raises(ValueError, match="held_out=model.held_out_mask"):
        hepbdt.report(model, train.take(np.arange(len(train) - 1)), test, tmp_path / "s.html")
