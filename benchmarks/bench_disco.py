"""A DisCo penalty (distance correlation, Kasieczka and Shih 2020) for boosting, measured.

Issue 21 asked for a DisCo-style penalty beside the flatness loss "if it measures
better". This script is that measurement; the penalty is not in the package, because it
did not (``docs/design-notes.md``, "Mass decorrelation"). It trains gradient boosting on
the toy of ``hepbdt.demo_data.sculpting_arrays`` with the loss

    deviance + strength * W * dCor^2(s, m)

over the background events (W the total training weight, so that the strength is the DisCo
paper's lambda against the mean deviance), s the raw score and m the mass ``mjj``:
``DiscoLoss`` adds the penalty's exact gradient to the boosting channels in place of the
flatness term (the estimator's loss swapped for it in this process only). The weighted
squared distance correlation and its gradient with respect to every score take
O(n log n) a round: sorted cumulative sums for the row means of |s_i - s_j| and
|m_i - m_j|, and two sweeps over the scores with Fenwick trees over the mass ranks for
the sums over pairs of w_j |m_k - m_j| (and of w_j s_j |m_k - m_j|) with s_j below or
above s_k. The script first checks both against the O(n^2) double-centred formula and
its finite differences, and stops if they differ.

The penalty has no usable curvature; ``--hessians`` tries none (the deviance's alone),
a constant one (a number c: ``strength * c * w_i``) and ``var`` (``strength * 2 w_i /
var(s)``, the background scores' weighted variance: a curvature on the scale of the
scores). For each (strength, hessian): background
rejection at 50 % signal efficiency, 1/JSD of the background mjj after that cut (50 bins,
base 2, as ``bench_decorrelation.py``), the statistical floor of that efficiency, and the
same at 90 % signal efficiency, the fit time and dCor^2 of the test background's scores
and mjj (what the penalty lowers), beside the plain model and the flatness loss at
``--flatness-strengths``. "n/a": no cut reaches that efficiency (the scores tie).

    python benchmarks/bench_disco.py [--strengths 0.1,0.3,1,3,10,30]
        [--hessians none,0.5,var] [--flatness-strengths 0.1,0.3,1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as bench_decorrelation.py

import bench_decorrelation as bd  # noqa: E402
from _data import machine  # noqa: E402

import hepbdt.estimators as estimators  # noqa: E402
from hepbdt.boosting.decorrelation import FlatnessLoss  # noqa: E402
from hepbdt.evaluation import decorrelation_measures  # noqa: E402


@njit(cache=True)
def _row_means(x, w, order, total):
    """r_i = sum_j w_j |x_i - x_j| / total; ``order`` sorts x."""
    n = x.size
    r = np.empty(n)
    all_wx = 0.0
    for t in range(n):
        all_wx += w[order[t]] * x[order[t]]
    below_w = 0.0
    below_wx = 0.0
    for t in range(n):
        i = order[t]
        above_w = total - below_w - w[i]
        above_wx = all_wx - below_wx - w[i] * x[i]
        r[i] = (x[i] * below_w - below_wx + above_wx - x[i] * above_w) / total
        below_w += w[i]
        below_wx += w[i] * x[i]
    return r


@njit(cache=True)
def _fenwick_add(tree, k, v):
    k += 1
    while k < tree.size:
        tree[k] += v
        k += k & (-k)


@njit(cache=True)
def _fenwick_sum(tree, k):
    """The sum of entries [0, k)."""
    s = 0.0
    while k > 0:
        s += tree[k]
        k -= k & (-k)
    return s


@njit(cache=True)
def _sweep(s, m, w, s_order, m_rank, upward):
    """For each event k: L_k = sum of w_j |m_k - m_j| over the events j whose score is
    below s_k (``upward``; else above), P_k = the same sum of w_j s_j |m_k - m_j|."""
    n = s.size
    tw, tm, ts, tsm = np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1), np.zeros(n + 1)
    big_l, big_p = np.empty(n), np.empty(n)
    in_w = in_m = in_s = in_sm = 0.0
    t = 0
    while t < n:
        first = s_order[t] if upward else s_order[n - 1 - t]
        stop = t + 1
        while stop < n and s[s_order[stop] if upward else s_order[n - 1 - stop]] == s[first]:
            stop += 1
        for u in range(t, stop):  # a tie's events: none of them is below another
            k = s_order[u] if upward else s_order[n - 1 - u]
            r = m_rank[k] + 1
            lo_w, lo_m = _fenwick_sum(tw, r), _fenwick_sum(tm, r)
            lo_s, lo_sm = _fenwick_sum(ts, r), _fenwick_sum(tsm, r)
            big_l[k] = (m[k] * lo_w - lo_m) + (in_m - lo_m) - m[k] * (in_w - lo_w)
            big_p[k] = (m[k] * lo_s - lo_sm) + (in_sm - lo_sm) - m[k] * (in_s - lo_s)
        for u in range(t, stop):
            k = s_order[u] if upward else s_order[n - 1 - u]
            for tree, v in ((tw, w[k]), (tm, w[k] * m[k]), (ts, w[k] * s[k]),
                            (tsm, w[k] * s[k] * m[k])):
                _fenwick_add(tree, m_rank[k], v)
            in_w += w[k]
            in_m += w[k] * m[k]
            in_s += w[k] * s[k]
            in_sm += w[k] * s[k] * m[k]
        t = stop
    return big_l, big_p


@njit(cache=True)
def _signed_sums(s, w, rb, ra, order):
    """G_k = sum_j w_j sign(s_k - s_j), and the same sums of w_j rb_j and w_j ra_j."""
    n = s.size
    out = np.zeros((3, n))
    tot = np.zeros(3)
    for i in range(n):
        tot[0] += w[i]
        tot[1] += w[i] * rb[i]
        tot[2] += w[i] * ra[i]
    below = np.zeros(3)
    t = 0
    while t < n:
        stop = t + 1
        while stop < n and s[order[stop]] == s[order[t]]:
            stop += 1
        eq = np.zeros(3)
        for u in range(t, stop):
            k = order[u]
            eq[0] += w[k]
            eq[1] += w[k] * rb[k]
            eq[2] += w[k] * ra[k]
        for u in range(t, stop):
            for c in range(3):
                out[c, order[u]] = below[c] - (tot[c] - below[c] - eq[c])
        for c in range(3):
            below[c] += eq[c]
        t = stop
    return out


def _dvar2(x, w, r, total):
    """dVar^2 of x from its row means r."""
    mean = np.dot(w, r) / total
    wx = np.dot(w, x)
    return (2.0 * (total * np.dot(w, x * x) - wx * wx) / total**2
            - 2.0 * np.dot(w, r * r) / total + mean * mean)


class MassTerms:
    """What dCor^2(s, m) needs of the mass, once: its ranks, row means and dVar^2."""

    def __init__(self, m: np.ndarray, w: np.ndarray):
        self.m, self.w, self.total = m, w, float(w.sum())
        order = np.argsort(m, kind="stable")
        self.rank = np.empty(m.size, np.int64)
        self.rank[order] = np.arange(m.size)
        self.rb = _row_means(m, w, order, self.total)
        self.b_mean = float(np.dot(w, self.rb) / self.total)
        self.dvar2 = _dvar2(m, w, self.rb, self.total)


def dcor2_and_gradient(s: np.ndarray, mass: MassTerms) -> tuple[float, np.ndarray]:
    """(dCor^2(s, m), d dCor^2 / d s_k divided by w_k), weights ``mass.w`` (> 0)."""
    w, total, rb = mass.w, mass.total, mass.rb
    order = np.argsort(s, kind="stable")
    ra = _row_means(s, w, order, total)
    a_mean = np.dot(w, ra) / total
    v = _dvar2(s, w, ra, total)
    below, below_p = _sweep(s, mass.m, w, order, mass.rank, True)
    above = _sweep(s, mass.m, w, order, mass.rank, False)[0]
    c = (2.0 * np.dot(w, s * below - below_p) / total**2 + a_mean * mass.b_mean
         - 2.0 * np.dot(w, ra * rb) / total)
    g, h_b, h_a = _signed_sums(s, w, rb, ra, order)
    d_c = 2.0 / total**2 * ((below - above) - rb * g - h_b + mass.b_mean * g)
    d_v = 4.0 / total**2 * ((total * s - np.dot(w, s)) - ra * g - h_a + a_mean * g)
    root = np.sqrt(v * mass.dvar2)
    return c / root, d_c / root - 0.5 * c * d_v / (v * root)


def brute_dcor2(s: np.ndarray, m: np.ndarray, w: np.ndarray) -> float:
    """dCor^2 from the double-centred distance matrices, O(n^2)."""
    total = w.sum()

    def centred(x):
        a = np.abs(x[:, None] - x[None, :])
        r = a @ w / total
        return a - r[:, None] - r[None, :] + np.dot(w, r) / total

    a, b = centred(s), centred(m)
    ww = np.outer(w, w) / total**2
    return float(np.sum(ww * a * b) / np.sqrt(np.sum(ww * a * a) * np.sum(ww * b * b)))


def self_check() -> None:
    """Stop unless the O(n log n) value and gradient agree with the O(n^2) formula."""
    rng = np.random.default_rng(1)
    for n in (7, 60, 300):
        m = rng.normal(size=n)
        s = np.round(m + rng.normal(size=n), 1)  # ties among the scores
        w = rng.uniform(0.5, 2.0, n)
        value, gradient = dcor2_and_gradient(s, MassTerms(m, w))
        step = 1e-6
        numeric = np.array([(brute_dcor2(s + step * (np.arange(n) == k), m, w)
                             - brute_dcor2(s - step * (np.arange(n) == k), m, w)) / (2 * step)
                            for k in range(n)])
        if (abs(value - brute_dcor2(s, m, w)) > 1e-9
                or np.max(np.abs(gradient * w - numeric)) > 1e-6 * np.max(np.abs(numeric))):
            sys.exit(f"bench_disco: the dCor kernels disagree with the O(n^2) formula (n={n})")
    print("dCor^2 and its gradient agree with the O(n^2) double-centred formula (n = 7, 60, "
          "300, tied scores)")


class DiscoLoss(FlatnessLoss):
    """A two-class loss plus strength * W * dCor^2(score, mass) over the background: the
    flatness loss's wrapping of the base loss (its channels' float32 checks included), with
    the DisCo penalty's gradient in place of the flatness term's."""

    hessian: float | str | None = None  # None: the base loss's; c: strength c w_i; "var"

    def __init__(self, base, strength, m, y, w, *_):  # FlatnessLoss's arguments
        self.base, self.strength, self.name, self.is_classification = base, strength, base.name, True
        self.events = np.flatnonzero(np.asarray(y) == 0)
        w = np.asarray(w, np.float64)
        self.scale = float(w.sum())
        self.mass = MassTerms(np.asarray(m, np.float64).reshape(len(y), -1)[self.events, 0],
                              w[self.events])

    def _add_terms(self, score, w_tree, wg, wh) -> None:
        s = score[self.events]
        if np.ptp(s) == 0:  # dCor is 0/0 while every score is equal
            return
        gradient = dcor2_and_gradient(s, self.mass)[1]
        w_here = np.asarray(w_tree, np.float64)[self.events]
        wg[self.events] += self.strength * self.scale * gradient * w_here
        if self.hessian == "var":
            w_b, total = self.mass.w, self.mass.total
            spread = np.dot(w_b, (s - np.dot(w_b, s) / total) ** 2) / total
            wh[self.events] += self.strength * 2.0 * w_here / spread
        elif self.hessian is not None:
            wh[self.events] += self.strength * self.hessian * w_here


def at_efficiency(score, test, efficiency) -> tuple[float, float]:
    """(background rejection, 1/JSD) of the cut at ``efficiency`` of the signal (NaN: none)."""
    _, y, w, mass = test
    bins = np.linspace(*bd._range(mass), 51)
    return decorrelation_measures(score, y, mass, w, efficiencies=(efficiency,),
                                  bins=bins).at(efficiency)


def main(argv=None) -> None:
    """Measure the DisCo penalty against the plain model and the flatness loss."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strengths", default="0.1,0.3,1,3,10,30")
    parser.add_argument("--hessians", default="none,0.5,var")
    parser.add_argument("--flatness-strengths", default="0.1,0.3,1")
    parser.add_argument("--trees", type=int, default=100)
    parser.add_argument("--depth", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine())
    self_check()
    train, test = bd.sample(20_000, 40_000, 1), bd.sample(20_000, 40_000, 2)
    print(f"20,000 signal + 40,000 background to train and as many to test; {args.trees} "
          f"trees of depth {args.depth}, learning rate 0.1; mjj made flat for the background")
    print(f"{'model':10s} {'strength':>8s} {'hessian':>8s} {'rej@50%':>8s} {'1/JSD':>7s} "
          f"{'floor':>6s} {'rej@90%':>8s} {'1/JSD':>7s} {'fit s':>6s} {'dCor^2':>7s}")
    background = test[1] == 0
    test_mass = MassTerms(test[3][background], test[2][background])
    bd.fit_hepbdt(bd.sample(200, 400, 3), 2, 2, 1.0)  # compile before timing

    def row(name, strength, hessian):
        start = time.perf_counter()
        model, _, cols = bd.fit_hepbdt(train, args.trees, args.depth, strength)
        seconds = time.perf_counter() - start
        score = model.decision_function(test[0][:, cols])
        half, tight = at_efficiency(score, test, 0.5)
        loose, wide = at_efficiency(score, test, 0.9)
        low = bd.floor(1.0 / half, test)[1] if np.isfinite(half) else float("nan")
        cells = [f"{v:8.3g}" if np.isfinite(v) else f"{'n/a':>8s}" for v in (half, tight, low,
                                                                              loose, wide)]
        tested = score[background].astype(np.float64)
        dcor = dcor2_and_gradient(tested, test_mass)[0] if np.ptp(tested) > 0 else float("nan")
        print(f"{name:10s} {'' if strength is None else f'{strength:g}':>8s} {hessian:>8s} "
              + " ".join(cells) + f" {seconds:6.2f} {dcor:7.4f}", flush=True)

    row("plain", None, "")
    for s in (float(v) for v in args.flatness_strengths.split(",") if v):
        row("flatness", s, "")
    estimators.FlatnessLoss = DiscoLoss  # decorrelation="flatness" now trains DisCo
    for hessian in args.hessians.split(","):
        DiscoLoss.hessian = (None if hessian == "none" else hessian if hessian == "var"
                             else float(hessian))
        for s in (float(v) for v in args.strengths.split(",")):
            row("disco", s, hessian)


if __name__ == "__main__":
    main()
