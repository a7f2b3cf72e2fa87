"""Audit GP (2026-12-05): the Dask parts' share of memory's draws, without a cluster. The
design notes promise the parts draw memory's events bit for bit: each part's tree weights
(``tree_weights``) and multiplicities (``drawn_counts``, the AdaBoost family's) are its
slice of the in-memory draw (``_draw``, ``draw_sample``), and its held-out events
(``held_out``) the in-memory estimator's ``held_out_mask``; checked against those and
against numpy and a pure-Python splitmix64 by hand. Kills the surviving mutants of
``dask/_parts.py``: ``drawn_counts``' mode test (``draw[0]`` -> ``draw[1]``, ``==`` ->
``!=``) and indices, ``tree_weights``' ``counts * sign(w)`` -> ``/`` (NaN for an event of
weight 0), ``held_out``'s ``<`` -> ``<=``."""

from __future__ import annotations

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.boosting._loop import _draw, draw_sample
from hepbdt.dask._parts import drawn_counts, held_out, tree_weights

CUTS = ((0, 0), (0, 5), (5, 777), (777, 778), (778, 2_000))  # an empty part, a 1-event one
MASK64 = (1 << 64) - 1


def _weights() -> np.ndarray:
    """2,000 float32 weights, signed, every 7th exactly 0."""
    w = np.random.default_rng(3).uniform(-0.5, 2.0, 2_000).astype(np.float32)
    w[::7] = 0.0
    return w


def _shares(rows: np.ndarray, counts: np.ndarray | None, n: int, mode: str,
            extra: tuple = ()) -> list[tuple]:
    """Each part's share of a draw, as the client sends it (packed bits, or counts)."""
    if counts is None:
        drawn = np.zeros(n, np.bool_)
        drawn[rows] = True
        return [("uniform", np.packbits(drawn[a:b])) for a, b in CUTS]
    dtype = np.min_scalar_type(int(counts.max()))
    return [(mode, counts[a:b].astype(dtype), *extra) for a, b in CUTS]


@pytest.mark.parametrize("mode", ["uniform", "poisson", "weighted"])
def test_tree_weights_are_memorys_draw_and_numpys_products(mode):
    w = _weights()
    rows, w_tree, counts = _draw(w, 0.6, mode, np.random.default_rng(7))
    unit = float(np.abs(w).sum() / counts.sum()) if mode == "weighted" else None
    shares = _shares(rows, counts, w.size, mode, () if unit is None else (unit,))
    got = np.concatenate([tree_weights(w[a:b], s) for (a, b), s in zip(CUTS, shares, strict=True)])
    assert got.dtype == np.float32 and np.array_equal(got, w_tree)
    if counts is None:  # by hand: the drawn events' weights, 0 elsewhere
        drawn = np.isin(np.arange(w.size), rows)
        by_hand = np.where(drawn, w, np.float32(0.0))
    elif mode == "poisson":  # int64 counts x float32 weights: float64 products, rounded once
        by_hand = (counts.astype(np.int64) * w.astype(np.float64)).astype(np.float32)
    else:  # each draw weighs sign(w) x the mean |w| of a draw
        by_hand = (counts * np.sign(w.astype(np.float64)) * unit).astype(np.float32)
    assert np.array_equal(got, by_hand)
    assert not np.isnan(got).any() and np.all(got[w == 0] == 0)


@pytest.mark.parametrize("mode", ["uniform", "poisson"])
def test_drawn_counts_are_the_adaboost_familys_draw(mode):
    w_eff = np.abs(_weights()).astype(np.float64)  # boosted weights: float64
    rows, w_tree, counts = draw_sample(w_eff, 0.6, mode, np.random.default_rng(9))
    # the client draws on zeros: the uniform and Poisson draws do not depend on the weights
    rows0, _, counts0 = _draw(np.zeros(w_eff.size), 0.6, mode, np.random.default_rng(9))
    shares = _shares(rows0, counts0, w_eff.size, mode)
    got = np.concatenate([drawn_counts(b - a, s) for (a, b), s in zip(CUTS, shares, strict=True)])
    assert got.dtype == np.int64 and np.array_equal(got, counts)
    by_hand = np.bincount(rows, minlength=w_eff.size) if mode == "uniform" else counts0
    assert np.array_equal(got, by_hand)
    assert (mode == "uniform") == (got.max() == 1)
    weights = np.concatenate([tree_weights(w_eff[a:b], s)
                              for (a, b), s in zip(CUTS, shares, strict=True)])
    assert np.array_equal(weights, w_tree)


def _splitmix_fraction(number: int) -> float:
    """splitmix64's finaliser of a 64-bit integer, its top 53 bits as a fraction (Python
    integers, written out here)."""
    z = (number + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return (z >> 11) / 2.0**53


def _data(n: int = 1_200):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y, np.arange(n, dtype=np.int64) * 13 + 5


def test_held_out_by_event_number_is_memorys_below_the_fraction():
    X, y, event = _data()
    fractions = [_splitmix_fraction(int(e)) for e in event]
    fraction = sorted(fractions)[len(fractions) // 3]  # an event's own draw, exactly
    edge = fractions.index(fraction)
    model = BDTClassifier(n_trees=3, max_depth=1, early_stopping=True,
                          validation_fraction=fraction).fit(X, y, event=event)
    memory = model.held_out_mask(event)
    parts = np.concatenate([held_out(b - a, {"state": None, "row": a, "fraction": fraction},
                                     event[a:b]) for a, b in ((0, 0), (0, 401), (401, 1_200))])
    by_hand = np.array([f < fraction for f in fractions])
    assert np.array_equal(parts, memory) and np.array_equal(parts, by_hand)
    assert not parts[edge]  # its draw equals the fraction: not below it, so it trains
    assert int(parts.sum()) == len(fractions) // 3


def test_held_out_by_the_generator_is_the_fits_own_draw():
    X, y, _ = _data()
    model = BDTClassifier(n_trees=3, max_depth=1, early_stopping=True,
                          validation_fraction=0.25, random_state=6).fit(X, y)
    state = model.validation_draw_["state"]
    parts = np.concatenate([held_out(b - a, {"state": state, "row": a, "fraction": 0.25}, None)
                            for a, b in ((0, 1), (1, 600), (600, 600), (600, 1_200))])
    assert np.array_equal(parts, model.held_out_mask())
    bits = getattr(np.random, state["bit_generator"])()  # numpy's replay of the fit's draw
    bits.state = state
    by_hand = np.random.Generator(bits).random(1_200) < 0.25
    assert np.array_equal(parts, by_hand)
