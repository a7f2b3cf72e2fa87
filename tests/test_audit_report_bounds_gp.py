"""Audit GP (2026-12-05): the report's boundaries that no test pinned. ``test_fraction``'s
refusal tolerance (each group's rounding, five binomial standard deviations and one event)
against the rule computed in 50-digit decimals, at its edge; ``held_out`` as 0 and 1
against a brute-force count; a background sample without a test event named by its class,
not "label 0". Kills surviving mutants of ``report.py`` (``_check_split_fraction``'s
constants and comparison, ``_checked_held_out``'s checks, ``_YieldBasis._label``'s
``0 <= label``)."""

from __future__ import annotations

import html
import re
from decimal import Decimal, getcontext

import numpy as np
import pytest

import hepbdt
from hepbdt import Dataset
from hepbdt.report import _check_split_fraction, _checked_held_out

from .test_report import _rows


def _reference_slack(n_all: int, fraction: str, n_groups: int) -> Decimal:
    """The documented tolerance, in 50-digit decimals: groups / 2 + 5 sqrt(n f (1 - f)) + 1."""
    getcontext().prec = 50
    f = Decimal(fraction)
    return Decimal(n_groups) / 2 + 5 * (n_all * f * (1 - f)).sqrt() + 1


@pytest.mark.parametrize(("n_all", "fraction", "n_groups"), [
    (400, "0.5", 4),  # exactly representable: the tolerance 53 events, reached exactly
    (2821, "0.4", 3),  # 3.8e-5 of an event between the edge and the next count up
    (2821, "0.6", 3),  # and down
    (1807, "0.3", 3),
])
def test_a_test_fraction_is_refused_just_beyond_its_tolerance(n_all, fraction, n_groups):
    slack = _reference_slack(n_all, fraction, n_groups)
    expected = n_all * Decimal(fraction)
    for n_test in range(int(expected - slack) - 2, int(expected + slack) + 3):
        beyond = abs(n_test - expected) > slack
        if beyond:
            with pytest.raises(ValueError, match=rf"test_fraction={fraction}, but the test set "
                                                 rf"holds {n_test} of the {n_all}"):
                _check_split_fraction(float(fraction), n_all - n_test, n_test, n_groups)
        else:
            _check_split_fraction(float(fraction), n_all - n_test, n_test, n_groups)
    # the edge is within 1e-4 of an event count on at least one side, so a tolerance
    # larger by a hundredth of an event (or of a group's rounding) accepts a count refused
    edges = (expected + slack, expected - slack)
    assert min(min(e - int(e), int(e) + 1 - e) for e in edges) < Decimal("1e-4")


@pytest.mark.parametrize(("mask", "why"), [
    (np.array([0.0, 1.0, 0.0, 1.0]), "dtype float64"),
    (np.zeros(5, bool), "shape (5,)"),
    (np.zeros((4, 1), bool), "shape (4, 1)"),
    (np.array([0, 2, 0, 1]), "booleans (or 0 and 1)"),
    (np.array([0, -1, 0, 1], np.int8), "booleans (or 0 and 1)"),
])
def test_held_out_refuses_what_is_not_one_boolean_a_training_event(mask, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        _checked_held_out(mask, 4)


@pytest.mark.parametrize("mask", [np.array([0, 1, 1, 0]), np.array([0, 1, 1, 0], np.uint8),
                                  np.array([False, True, True, False])])
def test_held_out_of_zeros_and_ones_is_a_boolean_mask(mask):
    assert _checked_held_out(mask, 4).tolist() == [False, True, True, False]
    assert _checked_held_out(None, 4) is None


@pytest.fixture(scope="module")
def report_text(tmp_path_factory):
    """A report of a split whose 1-event background sample has no test event (Dataset.split
    keeps floor(1 x 0.5 + 0.5) = 1 event in training), with a held_out mask of 0 and 1."""
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(1, 1, (400, 2)), rng.normal(-1, 1, (400, 2)),
                        [[0.3, 0.2]]]).astype(np.float32)
    y = np.r_[np.ones(400), np.zeros(401)].astype(int)
    sample = np.r_[np.zeros(400), np.ones(400), 2].astype(int)
    data = Dataset(X, y, np.ones(y.size), sample, np.arange(y.size),
                   sample_names=["sig", "bkg_big", "bkg_one"])
    train, test = data.split("block", 0.5)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0)
    model.fit(train.X, train.y, train.w)
    held = (np.arange(len(train)) % 10 == 3).astype(np.int64)  # bkg_one's event trains
    path = hepbdt.report(model, train, test, tmp_path_factory.mktemp("gp") / "r.html",
                         test_fraction=0.5, n_repeats=1, min_background_events=1,
                         held_out=held)
    return path.read_text(encoding="utf-8"), held


def test_a_held_out_mask_of_zeros_and_ones_leaves_out_the_ones(report_text):
    text, held = report_text
    counts = re.search(r"([\d,]+) training events \(([\d,]+) more held out", text)
    assert counts, "no held-out count"
    assert int(counts.group(1)) == int(np.count_nonzero(held == 0)) == 361
    assert int(counts.group(2)) == int(np.count_nonzero(held == 1)) == 40


def test_a_background_sample_without_a_test_event_is_named_by_its_class(report_text):
    text, _ = report_text
    warning = html.unescape(re.search(r'<p class="warning" id="significance-missing">(.*?)</p>',
                                      text).group(1))
    assert "bkg_one (background, 1 event)" in warning
    assert "label 0" not in text
    factors = {r["sample"]: r["yield = test weights x"] for r in _rows(text, "samples")
               if r["set"] == "test"}
    assert factors["bkg_one"] == "none: background without a test event"
    assert float(factors["bkg_big"]) == 2.0  # 400 events / 200 test events
