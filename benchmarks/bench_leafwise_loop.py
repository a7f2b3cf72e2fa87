"""Leaf-wise growth in one compiled call against the per-split path, in one process.

Fits ``BDTClassifier(boosting="newton", max_leaves=64, max_depth=None)`` (packed
histograms) on ``_data.higgs_like`` events x 28 features, alternating the compiled loop
(``grower._packed_leaves``) and the per-split path (``_PackedSplits``, taken by turning the
compiled loop off), both warmed up first; prints each fit's seconds and the medians. The
trees are the same bit for bit (tests/test_leafwise.py), so only the time differs.

    python benchmarks/bench_leafwise_loop.py [--events 1000000] [--trees 40] [--repeats 4]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import higgs_like, machine  # noqa: E402


def main() -> None:
    """Time both paths, alternating, and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    import hepbdt
    import hepbdt.engine.grower as grower

    X, y, w = higgs_like(args.events, seed=0)[:3]
    options = dict(boosting="newton", n_trees=args.trees, quantised_histograms=True,
                   max_leaves=64, max_depth=None)
    compiled = grower._leaves_compiled
    paths = {"compiled loop": compiled, "per-split path": lambda *a: False}
    times: dict[str, list[float]] = {name: [] for name in paths}
    for choose in paths.values():  # warm-up: compile and cache both
        grower._leaves_compiled = choose
        hepbdt.BDTClassifier(**{**options, "n_trees": 2}).fit(X, y, w)
    for _ in range(args.repeats):
        for name, choose in paths.items():
            grower._leaves_compiled = choose
            start = time.perf_counter()
            hepbdt.BDTClassifier(**options).fit(X, y, w)
            times[name].append(time.perf_counter() - start)
    grower._leaves_compiled = compiled
    print(f"# {machine()}; {args.events} x 28, {args.trees} trees of 64 leaves")
    for name, values in times.items():
        print(f"{name:15} " + " ".join(f"{v:.2f}" for v in values)
              + f"  median {statistics.median(values):.2f} s")


if __name__ == "__main__":
    main()
