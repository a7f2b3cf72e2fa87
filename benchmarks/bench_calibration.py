"""The evaluation's statistics against known truth, by simulation.

Two parts, each a Monte Carlo with fixed seeds (``--draws`` repetitions a case):

1. **Overtraining false alarms.** Training and test samples drawn from the same
   distribution (scores normal, both classes alike) with unit, lognormal, heavy, signed and
   score-dependent weights and unequal sizes; ``overtraining_test`` is run on each pair,
   and the script prints how often the KS and chi2 p-values fall below 0.01 and 0.05
   (nominal: 0.01 and 0.05; the Monte Carlo error is printed beside them) and how often
   the verdict says "overtrained" (it takes the smallest of four p-values, so it fires
   more often than 1 %).
2. **The significance scan's best cut.** A background of density 2 (1 - x) and a signal of
   density 2x on the score x in [0, 1], whose S(t) and B(t) are known; test events drawn
   at a test fraction f, yields scaled by ``split_yields``. The script prints the reported
   best S/sqrt(B) against its true value at the chosen cut (the optimisation's upward
   bias), B there against its truth, the effective background events the best cut
   rests on ((sum w)^2 / sum w^2), and the scan's "other half" estimate (a half's best
   cut measured on the other half), for unit and lognormal background weights.
3. **The uncertainties of S.** Pseudo-samples of 400 signal events (scores normal(1, 1))
   and 600 background events; at the cuts that keep 84, 50 and 16 % of the signal, the
   mean printed uncertainty of S over the spread of S (standard deviation over the
   pseudo-samples), for the summed weights' sqrt(sum w^2) (ROOT's Sumw2, a Poisson count:
   1 / sqrt(1 - eff) with unit weights) and for a given yield's binomial error.

    python benchmarks/bench_calibration.py [--draws 400] [--only overtraining|cuts|errors]

The figures in README's k-fold paragraph and outputs table (S and B's uncertainties, the
best cut's bias) and in docs/design-notes.md's "The overtraining tests' false alarms",
significance-scan and uncertainty notes come from this script (part 3 at 300 draws:
``--only errors --draws 300``) (about 2 minutes
at 400 draws on two cores).
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from hepbdt.evaluation import overtraining_test, significance_scan
from hepbdt.evaluation.metrics import split_yields


def _unit(rng, x):
    return np.ones(x.size)


def _lognormal(sigma):
    return lambda rng, x: rng.lognormal(0.0, sigma, x.size)


OVERTRAINING_CASES = [  # name, training events a class, test events a class, weights
    ("unit, 2000 / 1000", 2000, 1000, _unit),
    ("unit, 5000 / 200", 5000, 200, _unit),
    ("unit, 20 / 300", 20, 300, _unit),
    ("lognormal sigma 1", 1000, 1000, _lognormal(1.0)),
    ("lognormal sigma 2, 5000 / 5000", 5000, 5000, _lognormal(2.0)),
    ("lognormal sigma 1.5, 2400 / 600 (k-fold 5)", 2400, 600, _lognormal(1.5)),
    ("2 % at weight 200", 1000, 1000,
     lambda rng, x: np.where(rng.random(x.size) < 0.02, 200.0, 1.0)),
    ("30 % negative", 1000, 1000,
     lambda rng, x: rng.lognormal(0.0, 0.5, x.size) * np.where(rng.random(x.size) < 0.3, -1, 1)),
    ("weights exp(1.5 x)", 1000, 1000, lambda rng, x: np.exp(1.5 * x)),
    ("half the tail x > 1.5 at weight 50", 1000, 1000,
     lambda rng, x: np.where((x > 1.5) & (rng.random(x.size) < 0.5), 50.0, 1.0)),
    ("negative where x > 0.5 (45 %)", 2000, 2000,
     lambda rng, x: np.where((x > 0.5) & (rng.random(x.size) < 0.45), -1.0, 1.0)),
]


def _rates(pvalues: list[float], draws: int) -> str:
    p = np.array(pvalues)
    p = p[np.isfinite(p)]
    parts = [f"P(p < {a}) {np.mean(p < a):.4f} +- {np.sqrt(a * (1 - a) / max(p.size, 1)):.4f}"
             for a in (0.01, 0.05)]
    return "   ".join(parts) + f"   ({p.size} of {2 * draws} with a p-value)"


def overtraining(draws: int) -> None:
    """Part 1: each case's false-alarm rates."""
    print("Overtraining check on identical training and test samples "
          f"({draws} pairs a case, signal and background each):")
    for name, n_train, n_test, weight in OVERTRAINING_CASES:
        rng = np.random.default_rng(12345)
        ks, chi2, verdicts = [], [], []
        for _ in range(draws):
            samples = []
            for n in (n_train, n_test):
                x = rng.normal(size=2 * n)
                samples += [x, np.r_[np.ones(n), np.zeros(n)], weight(rng, x)]
            result = overtraining_test(*samples)
            for part in (result.signal, result.background):
                ks.append(part.ks_pvalue)
                chi2.append(part.chi2_pvalue)
            verdicts.append(result.verdict == "overtrained")
        print(f"  {name}")
        print(f"    KS    {_rates(ks, draws)}")
        print(f"    chi2  {_rates(chi2, draws)}")
        print(f"    verdict 'overtrained' in {np.mean(verdicts):.3f} of the pairs")


CUT_CASES = [  # name, background MC events, signal MC events, test fraction, lognormal sigma
    ("unit background weights", 4000, 400, 0.5, 0.0),
    ("lognormal sigma 1", 4000, 400, 0.5, 1.0),
    ("lognormal sigma 1.5, test fraction 0.3", 6000, 300, 0.3, 1.5),
    ("lognormal sigma 2", 4000, 400, 0.5, 2.0),
]


def cuts(draws: int, signal_total: float = 20.0, background_total: float = 1000.0) -> None:
    """Part 2: the best S/sqrt(B) against the truth at the chosen cut."""
    print(f"\nSignificance scan's best S/sqrt(B) ({draws} draws a case; S = {signal_total:g} "
          f"and B = {background_total:g} expected before any cut):")
    for name, n_b, n_s, fraction, sigma in CUT_CASES:
        rng = np.random.default_rng(3)
        reported, true, b_ratio, effective, halves = [], [], [], [], []
        for _ in range(draws):
            xb, xs = 1 - np.sqrt(rng.random(n_b)), np.sqrt(rng.random(n_s))
            wb = rng.lognormal(0.0, sigma, n_b) * background_total / (n_b * np.exp(sigma ** 2 / 2))
            ws = np.full(n_s, signal_total / n_s)
            tb, ts = rng.random(n_b) < fraction, rng.random(n_s) < fraction
            y = np.r_[np.ones(ts.sum()), np.zeros(tb.sum())].astype(int)
            scale = split_yields(np.zeros(y.size, int), y,
                                 np.zeros(n_b + n_s - y.size, int),
                                 np.r_[np.ones(n_s - ts.sum()), np.zeros(n_b - tb.sum())]
                                 .astype(int)).scale
            score, w = np.r_[xs[ts], xb[tb]], np.r_[ws[ts], wb[tb]]
            scan = significance_scan(y, score, w, yield_scale=scale, b_reg=0.0)
            best = scan.best_cuts["s_over_sqrt_b"]
            if not best.found:
                continue
            halves.append(scan.other_half["s_over_sqrt_b"])
            t = best.threshold
            s_true, b_true = signal_total * (1 - t * t), background_total * (1 - t) ** 2
            reported.append(best.value)
            true.append(s_true / np.sqrt(b_true))
            b_ratio.append(best.background / b_true)
            passing = wb[tb][xb[tb] >= t]
            effective.append(passing.sum() ** 2 / np.sum(passing ** 2))
        reported, true = np.array(reported), np.array(true)
        bias = reported / true - 1
        print(f"  {name}: reported {reported.mean():.3f}, true at the chosen cut "
              f"{true.mean():.3f} (bias {100 * bias.mean():+.1f} % +- "
              f"{100 * bias.std() / np.sqrt(bias.size):.1f}, reported above the truth in "
              f"{np.mean(reported > true):.2f} of draws); B / true B {np.mean(b_ratio):.3f}; "
              f"effective background events at the cut: median {np.median(effective):.1f}, "
              f"below 10 in {np.mean(np.array(effective) < 10 * (1 - 1e-9)):.2f}; "
              f"other half: {np.nanmean(halves):.3f} ({100 * (np.nanmean(halves) / true.mean() - 1):+.1f} % "
              f"against the truth at the chosen cut; NaN in {np.mean(np.isnan(halves)):.2f})")


ERROR_CASES = [  # name, signal weights of n events
    ("unit weights", lambda rng, n: np.ones(n)),
    ("lognormal sigma 1", lambda rng, n: rng.lognormal(0.0, 1.0, n)),
    ("lognormal sigma 1, a tenth negative",
     lambda rng, n: rng.lognormal(0.0, 1.0, n) * np.where(rng.random(n) < 0.1, -1.0, 1.0)),
]
ERROR_CUTS = (0.0, 1.0, 2.0)  # signal scores normal(1, 1): efficiencies 0.84, 0.50, 0.16


def errors(draws: int, n_signal: int = 400, n_background: int = 600) -> None:
    """Part 3: the printed uncertainty of S against the spread of S over pseudo-samples."""
    print(f"\nUncertainty of S over its spread ({draws} pseudo-samples of {n_signal} signal "
          f"events; summed weights' sqrt(sum w^2), and a given yield's binomial error):")
    for name, weight in ERROR_CASES:
        rng = np.random.default_rng(5)
        summed = {c: ([], []) for c in ERROR_CUTS}
        given = {c: ([], []) for c in ERROR_CUTS}
        for _ in range(draws):
            y = np.r_[np.ones(n_signal), np.zeros(n_background)]
            score = np.r_[rng.normal(1.0, 1.0, n_signal), rng.normal(-1.0, 1.0, n_background)]
            w = np.r_[weight(rng, n_signal), np.ones(n_background)]
            for scan, out in ((significance_scan(y, score, w, other_half=False), summed),
                              (significance_scan(y, score, w, signal_yield=100.0,
                                                 background_yield=1000.0, other_half=False),
                               given)):
                for c in ERROR_CUTS:
                    k = np.flatnonzero(scan.thresholds >= c)[-1]
                    out[c][0].append(scan.signal[k])
                    out[c][1].append(scan.signal_error[k])
        print(f"  {name}:")
        for c in ERROR_CUTS:
            eff = 0.5 * math.erfc((c - 1.0) / math.sqrt(2.0))  # normal(1, 1) above c
            ratios = [np.mean(e) / np.std(v, ddof=1) for v, e in (summed[c], given[c])]
            print(f"    efficiency {eff:.2f}: summed weights {ratios[0]:.2f}x the spread "
                  f"(1 / sqrt(1 - eff) {1 / np.sqrt(1 - eff):.2f}), given yield "
                  f"{ratios[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=400)
    parser.add_argument("--only", choices=("overtraining", "cuts", "errors"))
    args = parser.parse_args()
    if args.only in (None, "overtraining"):
        overtraining(args.draws)
    if args.only in (None, "cuts"):
        cuts(args.draws)
    if args.only in (None, "errors"):
        errors(args.draws)


if __name__ == "__main__":
    main()
