"""Where a tree's time goes: hepbdt's kernels, one thread, against the histogram's limit.

Fits ``BDTClassifier(boosting="newton", max_depth=6)`` (packed histograms) on
``_data.higgs_like`` events x 28 features, unweighted (so a node's cover is its event
count), on one thread under cProfile with a CPU-time clock (other processes on the
machine change the figures little), groups the time by kernel, and counts the histogram
accumulations the trees needed: every event of the root, then at each split that is not
on the last level the events of the smaller child (its sibling comes by subtraction),
times the features. The histogram time per accumulation is then compared with the same
kernel timed alone on one node of every event (the measured limit).

With ``--levels``, a second fit of the same trees (not profiled, wall time) times each
level's histogram call: the nodes built (the root, then the smaller child of each split),
their accumulations and the time per accumulation, level by level.

Both fits take the per-level kernels (``grower._levels_compiled`` turned off), which grow
the same trees bit for bit as the one compiled call that a fit takes after the root: the
kernels inside that call are invisible to a profiler (the call saves the Python between
them, 2-4 % of a tree; design notes).

    python benchmarks/bench_breakdown.py [--events 1000000] [--trees 20] [--levels]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _data import higgs_like, machine  # noqa: E402

GROUPS = {
    "histograms (packed sums, reduction, decoding)": ("_task_sums", "_reduce_tasks",
                                                      "_decode", "_decode_wide",
                                                      "_build_exact"),
    "split search": ("_find_best_splits", "_find_best_packed", "_find_best_packed_1"),
    "partition": ("_partition_chunks", "_gather_chunks"),
    "gradients and loss": ("_logistic_channels", "_logistic_loss"),
    "leaf sums and score update": ("_slice_sums", "_add_leaf_values", "_mark_leaves",
                                   "_sums_by_leaf", "_add_by_leaf", "_logistic_leaf_sums"),
    "quantising the channels": ("_max_abs", "_pack_into", "_iota"),
}
# Once a fit, not a tree (cumulative times): the quantile edges, and the codes with their
# feature-major copy.
BINNING = (("binning.py", "fit"), ("grower.py", "from_features"))


def accumulations(model) -> int:
    """Histogram accumulations the model's trees needed (events x features)."""
    forest = model.forest_
    depth = forest.node_depths()
    total = 0
    for t in range(forest.n_trees):
        nodes = forest.tree_slice(t)
        root = nodes.start
        total += int(round(forest.cover[root]))
        for k in range(nodes.start, nodes.stop):
            if forest.feature[k] >= 0 and depth[k] + 1 < model.max_depth:
                total += int(round(min(forest.cover[forest.left[k]], forest.cover[forest.right[k]])))
    return total * forest.n_features


def limit_ns(X: np.ndarray, repeats: int = 5) -> float:
    """ns per accumulation of the packed kernel on one node holding every event."""
    from hepbdt.engine import BinMapper
    from hepbdt.engine.grower import QuantisedRows
    from hepbdt.engine.histogram import Quantiser, build_histograms, new_histograms

    mapper = BinMapper().fit(X)
    rows = QuantisedRows.from_features(X, mapper)
    a = np.random.default_rng(0).normal(size=X.shape[0]).astype(np.float32)
    b = np.abs(a) + np.float32(0.1)
    quantiser = Quantiser(a, b, X.shape[0], seed=0)
    rows.start_tree(quantiser, a, b)
    raw = new_histograms(1, X.shape[1], packed=True, wide=quantiser.wide)
    one = np.zeros(1, np.int64)
    used = np.ones(X.shape[1], np.bool_)
    best = np.inf
    for _ in range(repeats):
        start = time.process_time()
        build_histograms(rows.codes, rows.partition, rows.packed, one, one + X.shape[0], one, used,
                         raw)
        best = min(best, time.process_time() - start)
    return best / X.size * 1e9


def by_level(X: np.ndarray, y: np.ndarray, trees: int) -> None:
    """Fit again with each histogram call timed, and print the time per level."""
    import hepbdt
    import hepbdt.engine.grower as grower

    build = grower.build_histograms
    calls: list[tuple[int, int, int, float]] = []  # (level, nodes, accumulations, seconds)

    def timed(codes, partition, payload, node_start, node_stop, *rest, **options):
        start = time.perf_counter()
        build(codes, partition, payload, node_start, node_stop, *rest, **options)
        seconds = time.perf_counter() - start
        events = int((node_stop - node_start).sum())
        level = 0 if events == X.shape[0] and node_start.size == 1 else calls[-1][0] + 1
        calls.append((level, node_start.size, events * X.shape[1], seconds))

    grower.build_histograms = timed
    try:
        hepbdt.BDTClassifier(boosting="newton", n_trees=trees, max_depth=6, n_jobs=1,
                             quantised_histograms=True).fit(X, y)
    finally:
        grower.build_histograms = build
    print(f"{'level':>5} {'nodes':>6} {'M adds a tree':>14} {'ms a tree':>10} {'ns an add':>10}")
    for level in sorted({c[0] for c in calls}):
        rows = [c for c in calls if c[0] == level]
        adds = sum(c[2] for c in rows)
        seconds = sum(c[3] for c in rows)
        print(f"{level:>5} {rows[0][1]:>6} {adds / trees / 1e6:>14.1f} "
              f"{seconds / trees * 1e3:>10.1f} {seconds / adds * 1e9:>10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--trees", type=int, default=20)
    parser.add_argument("--levels", action="store_true",
                        help="also time each level's histograms (a second, unprofiled fit)")
    args = parser.parse_args()
    import hepbdt
    import hepbdt.engine.grower as grower

    grower._levels_compiled = lambda *args: False  # the per-level kernels, seen one by one
    X, y, _ = higgs_like(args.events, 28, seed=1)
    hepbdt.BDTClassifier(boosting="newton", n_trees=2, max_depth=6).fit(X[:60_000], y[:60_000])
    model = hepbdt.BDTClassifier(boosting="newton", n_trees=args.trees, max_depth=6, n_jobs=1,
                                 quantised_histograms=True)
    profile = cProfile.Profile(time.process_time)
    profile.enable()
    model.fit(X, y)
    profile.disable()
    stats = pstats.Stats(profile).stats
    total = max(v[3] for v in stats.values())  # the fit's cumulative time
    by_name: dict[str, float] = {}
    binning = 0.0
    for (path, _, name), (_, _, tottime, cumtime, _) in stats.items():
        by_name[name] = by_name.get(name, 0.0) + tottime
        if any(path.endswith(f) and name == n for f, n in BINNING):
            binning += cumtime
    print(f"machine: {machine()}; {args.events:,} events x 28, {args.trees} newton trees of "
          f"depth 6, packed histograms, one thread, CPU time")
    print(f"fit: {total:.2f} s CPU")
    per_tree = {group: sum(by_name.get(n, 0.0) for n in names) for group, names in GROUPS.items()}
    tree_total = total - binning
    per_tree["the rest (Python between kernels, numpy)"] = tree_total - sum(per_tree.values())
    print(f"{'':50} {'ms a tree':>10} {'share':>7}")
    for group, seconds in per_tree.items():
        print(f"{group:50} {seconds / args.trees * 1e3:>10.1f} {seconds / tree_total:>7.0%}")
    print(f"{'binning (once a fit)':50} {binning * 1e3:>9.0f}ms")
    n_acc = accumulations(model)
    hist = per_tree["histograms (packed sums, reduction, decoding)"]
    print(f"histogram accumulations: {n_acc / args.trees / 1e6:.1f} M a tree "
          f"({n_acc / args.trees / X.size:.2f} passes over the events x features)")
    print(f"histogram time per accumulation: {hist / n_acc * 1e9:.2f} ns; the kernel on one "
          f"node of every event: {limit_ns(X):.2f} ns")
    if args.levels:
        by_level(X, y, args.trees)


if __name__ == "__main__":
    main()
