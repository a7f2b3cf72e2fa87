"""What a binned fit allocates per event, beyond the codes: the number behind the 100M x 28
in 8 GB target (issue 18), measured with ``tracemalloc`` (numpy's arrays are traced), so it
does not depend on the machine's load or on what else the process holds.

A BinnedMatrix of ``--events`` x 28 random codes (held by the caller, as a Dataset holds
them), two-class labels and float32 weights; ``BDTClassifier(boosting="newton",
n_trees=3, max_depth=6)`` (packed histograms, as at scale) is fitted once to compile, then
again under ``tracemalloc``: the peak of the fit's own allocations above what was live
before it, per event, and the same with the feature-major copy of the codes turned off
(``COLUMN_COPY_BYTES = 0``: the grower keeps that copy only up to 1 GiB of codes, so at
100M x 28 it is not made, and such a fit is also "lean": its channels live in the
grower's buffers, ``QuantisedRows.lean``). Fixed-size buffers (histograms, chunked
temporaries, a few MB) weigh more per event at small ``--events``.

    python benchmarks/bench_fit_memory.py [--events 2000000]
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import machine  # noqa: E402

N_FEATURES = 28


def fit_peak(n: int, column_copy: bool) -> float:
    """Peak traced bytes per event of one fit."""
    import hepbdt
    import hepbdt.engine.grower as grower
    from hepbdt.binned import BinnedMatrix

    rng = np.random.default_rng(0)
    codes = rng.integers(0, 254, (n, N_FEATURES), dtype=np.uint8)
    X = BinnedMatrix(codes, [np.arange(253, dtype=np.float32)] * N_FEATURES)
    y = (codes[:, 0].astype(np.int64) + codes[:, 1] + rng.integers(0, 200, n) > 330).astype(np.int32)
    w = rng.gamma(4.0, 0.25, n).astype(np.float32)
    saved = grower.COLUMN_COPY_BYTES
    grower.COLUMN_COPY_BYTES = saved if column_copy else 0
    try:
        model = hepbdt.BDTClassifier(boosting="newton", n_trees=3, max_depth=6)
        model.fit(X[:60_000], y[:60_000], w[:60_000])  # compile outside the measurement
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        model.fit(X, y, w)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        grower.COLUMN_COPY_BYTES = saved
    return (peak - before) / n


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000_000)
    args = parser.parse_args()
    print(machine())
    print(f"{args.events:,} events x {N_FEATURES} features, newton, 3 trees of depth 6; "
          "codes (1 byte an event and feature) held outside the fit")
    print("| feature-major copy of the codes | fit's peak allocations, bytes / event | "
          "bytes / (event x feature) |")
    print("| --- | ---: | ---: |")
    for copy in (True, False):
        per_event = fit_peak(args.events, copy)
        print(f"| {'made (up to 1 GiB of codes)' if copy else 'not made, lean (beyond 1 GiB)'} | "
              f"{per_event:.1f} | {per_event / N_FEATURES:.2f} |")


if __name__ == "__main__":
    main()
