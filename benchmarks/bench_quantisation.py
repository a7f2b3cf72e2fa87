"""Test AUC against the resolution of the quantised histograms: how few bits are enough.

The quantised histograms round the per-event channels A and B (stochastically) to integers
of at most ``2**bits`` in magnitude; the number of bits is chosen from the event count so
that no sum can overflow its lane (``hepbdt.engine.histogram.choose_packing``). This
benchmark forces the resolution (both lanes packed, as the packed kind would have them)
and compares the test AUC with the exact float64 histograms, on the same synthetic
HIGGS-like sample as bench_train.py (weighted events), for the newton booster (depth 6,
lambda 1) and the first-order gradient one (TMVA's BDTG). Leaf values use exact sums
either way, so only the choice of splits sees the rounding.

    python benchmarks/bench_quantisation.py [--n-train 200000] [--n-test 200000]
        [--trees 200] [--bits 1,2,3,4,6,8,10] [--boosting newton,gradient]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import higgs_like, machine  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-train", type=int, default=200_000)
    parser.add_argument("--n-test", type=int, default=200_000)
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--bits", default="1,2,3,4,6,8,10")
    parser.add_argument("--boosting", default="newton,gradient")
    args = parser.parse_args()

    import numpy as np

    import hepbdt
    from hepbdt.engine import histogram
    from hepbdt.evaluation import roc_auc

    X, y, w = higgs_like(args.n_train + args.n_test, seed=0)
    Xtr, ytr, wtr = X[:args.n_train], y[:args.n_train], w[:args.n_train]
    Xte, yte, wte = X[args.n_train:], y[args.n_train:], w[args.n_train:]
    print(f"{machine()}; {args.n_train:,} training events, {args.n_test:,} test, "
          f"{args.trees} trees of depth 6")
    print("| boosting | histograms | test AUC | AUC - exact | fit (s) |")
    print("|---|---|---|---|---|")
    choose = histogram.choose_packing
    for boosting in args.boosting.split(","):
        options = ({"reg_lambda": 1.0, "min_child_weight": 1.0} if boosting == "newton" else {})
        exact_auc = None
        for bits in [None] + [int(b) for b in args.bits.split(",")]:
            if bits is not None:
                histogram.choose_packing = lambda n_rows, bits=bits: (False, bits)
            try:
                model = hepbdt.BDTClassifier(boosting=boosting, n_trees=args.trees, max_depth=6,
                                             learning_rate=0.1, max_bins=255,
                                             quantised_histograms=bits is not None, **options)
                t0 = time.perf_counter()
                model.fit(Xtr, ytr, sample_weight=wtr)
                fit_s = time.perf_counter() - t0
            finally:
                histogram.choose_packing = choose
            auc = float(roc_auc(yte, np.asarray(model.decision_function(Xte), float), wte))
            exact_auc = auc if exact_auc is None else exact_auc
            label = "exact float64" if bits is None else f"quantised, {bits} bits"
            print(f"| {boosting} | {label} | {auc:.5f} | {auc - exact_auc:+.5f} | {fit_s:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
