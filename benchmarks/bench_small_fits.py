"""hepbdt's time for small fits at its defaults, to compare one version of the code with another.

Small fits (a few hundred to ten thousand events) are where per-tree costs outside the
histograms show: the trees are grown in one compiled call each, and the Python around
them, the gradients and the validation loss are a large part of a tree. For each set the
script fits ``BDTClassifier()`` or ``BDTRegressor()`` (``random_state=0``, so the tree
count is fixed) on the first training split of ``bench_defaults.py`` (and the TMVA
multi-class tutorial at ``bench_multiclass.py``'s settings for newton, 200 rounds of
depth 3), ``--repeats`` times after one warm-up fit, and prints the best and the median
time with the trees grown. ``--hepbdt PARAMS_JSON`` sets parameters on every fit of the
panel sets (for example ``'{"max_depth": 8, "min_node_size": 0}'``: deep trees, whose
nodes of a few events take the one-call grower's sparse scans). Compare two versions in
one run on an idle machine:

    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_small_fits.py
    python benchmarks/bench_small_fits.py

The peers' times on the same sets are in ``bench_defaults.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SETS = ("tmva-reg", "hastie", "breast-cancer", "friedman1", "diabetes", "tmva-class")


def _time(make, fit_args: tuple, repeats: int) -> tuple[list[float], object]:
    """Seconds of each of ``repeats`` fits of ``make()`` on ``fit_args`` after one
    untimed fit, and the last model."""
    model = make().fit(*fit_args)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model = make().fit(*fit_args)
        times.append(time.perf_counter() - t0)
    return times, model


def main() -> None:
    """Time every set and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--only", default=",".join((*SETS, "tmva-multiclass")),
                        help="comma-separated sets (a set alone shows a fresh process's cost)")
    parser.add_argument("--hepbdt", default="{}", help="JSON parameters for the panel sets' fits")
    args = parser.parse_args()
    only = set(args.only.split(","))
    import bench_defaults
    import bench_multiclass
    from _data import machine

    import hepbdt

    params = json.loads(args.hepbdt)
    print(f"# {machine()}; hepbdt from {Path(hepbdt.__file__).parent}; best and median of "
          f"{args.repeats} fits; parameters {params}")
    print(f"{'set':16s} {'best s':>8s} {'median s':>9s} {'trees':>6s} {'ms a tree kept':>15s}")
    rows = []
    for name in (s for s in SETS if s in only):
        data = bench_defaults.PANEL[name]()
        train, _ = bench_defaults.splits(data, 1)[0]
        model = hepbdt.BDTRegressor if data.task == "regression" else hepbdt.BDTClassifier
        times, fitted = _time(lambda model=model: model(random_state=0, **params),
                              (data.X[train], data.y[train]), args.repeats)
        rows.append((name, times, fitted.forest_.n_trees))
    tutorial = bench_multiclass.tmva_multiclass() if "tmva-multiclass" in only else None
    if tutorial is not None:
        (Xa, ya, wa), _ = bench_multiclass.split(*tutorial, 0)
        times, fitted = _time(lambda: bench_multiclass.make("hepbdt-newton", 200, 3),
                              (Xa, ya, wa), args.repeats)
        rows.append(("tmva-multiclass", times, fitted.forest_.n_trees))
    for name, times, trees in rows:
        best = min(times)
        print(f"{name:16s} {best:8.4f} {statistics.median(times):9.4f} {trees:6d} "
              f"{1e3 * best / trees:15.3f}")


if __name__ == "__main__":
    main()
