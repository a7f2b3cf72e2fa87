"""Numba's threading layers, on a quiet and on a busy machine: which default is robust?

Each row fits the same model in a fresh process with ``NUMBA_THREADING_LAYER`` set (omp
also with ``OMP_WAIT_POLICY=PASSIVE``, threads that sleep instead of spinning; the
kernels are cached, so no compile time is measured), alternating the layers, once with
the machine quiet and once while other processes keep every core busy (as on a shared
batch node or a laptop running other work). Prints the median fit time of each layer in
each condition and the ratio workqueue / omp.

    python benchmarks/bench_threading.py [--events 200000] [--repeats 3]

``--sizes`` measures instead, in one process with hepbdt's default waiting (``--spin``:
libgomp's), the time per tree of fits of several sizes on 2 threads against 1 (depth 5,
medians of interleaved runs): the measurement behind ``hepbdt._util.SERIAL_FIT_WORK``,
below which hepbdt fits on one thread whatever ``n_jobs`` says.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from _data import machine  # noqa: E402

FIT = """
import time, numpy as np
from numba import threading_layer
from hepbdt import BDTClassifier
from _data import higgs_like
X, y, w = higgs_like({events}, 28, seed=1)
BDTClassifier(n_trees=2, max_depth=6).fit(X[:5000], y[:5000])  # load the kernels
start = time.perf_counter()
BDTClassifier(boosting="{boosting}", n_trees={trees}, max_depth=6).fit(X, y, w)
print(time.perf_counter() - start, threading_layer())
"""


def _busy(stop_at: float) -> None:
    while time.time() < stop_at:
        pass


VARIANTS = {"omp": {"NUMBA_THREADING_LAYER": "omp"},  # OpenMP's default waiting: spin, then sleep
            "omp-passive": {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "PASSIVE"},
            "omp-spin10k": {"NUMBA_THREADING_LAYER": "omp", "GOMP_SPINCOUNT": "10000"},
            "workqueue": {"NUMBA_THREADING_LAYER": "workqueue"}}


def fit_seconds(variant: str, events: int, trees: int, boosting: str) -> tuple[float, str]:
    """Fit time in a fresh process with the threading layer (and settings) of ``variant``."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if variant == "omp":
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default waiting (hepbdt's is to sleep)
    env.update(VARIANTS[variant])
    code = FIT.format(events=events, trees=trees, boosting=boosting)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.dirname(__file__), check=True).stdout.split()
    return float(out[0]), variant if out[1] in variant else f"{variant}?{out[1]}"


SIZES = """
import statistics, time, numpy as np, numba
import hepbdt._util as util
from hepbdt import BDTClassifier
util.SERIAL_FIT_WORK = 0  # measure both thread counts at every size
rng = np.random.default_rng(0)
print(f"{'events':>8} {'features':>8} {'work':>9} {'1 thread ms/tree':>17} {'2 threads':>10} {'2/1':>5}")
for m in (4, 10, 28):
    for n in (2_000, 5_000, 20_000, 50_000, 100_000, 200_000):
        X = rng.normal(size=(n, m)).astype(np.float32)
        y = (X[:, 0] + X[:, 1] * X[:, 2 % m] + rng.normal(size=n) > 0).astype(int)
        times = {1: [], 2: []}
        for _ in range({repeats}):
            for jobs in (1, 2):
                model = BDTClassifier(n_trees=50, max_depth=5, n_jobs=jobs)
                start = time.perf_counter()
                model.fit(X, y)
                times[jobs].append((time.perf_counter() - start) / 50 * 1e3)
        one, two = statistics.median(times[1]), statistics.median(times[2])
        print(f"{n:>8} {m:>8} {n * m:>9} {one:>17.2f} {two:>10.2f} {two / one:>5.2f}", flush=True)
"""


def sizes(repeats: int, spin: bool) -> None:
    """Time per tree on 2 threads against 1 over sample sizes (hepbdt's default waiting, or
    with ``spin`` libgomp's: spin 300,000 rounds, then sleep)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if spin:
        env["GOMP_SPINCOUNT"] = "300000"
    BDT_WARM = "from hepbdt import BDTClassifier; import numpy as np; "
    subprocess.run([sys.executable, "-c", BDT_WARM + "BDTClassifier(n_trees=2).fit("
                    "np.random.rand(100, 4), np.arange(100) % 2)"], env=env, check=True)
    subprocess.run([sys.executable, "-c", SIZES.replace("{repeats}", str(repeats))], env=env,
                   check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--trees", type=int, default=50)
    parser.add_argument("--boosting", default="gradient")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", action="store_true",
                        help="time per tree on 2 threads against 1 over sample sizes")
    parser.add_argument("--spin", action="store_true",
                        help="with --sizes: libgomp's default waiting instead of hepbdt's")
    args = parser.parse_args()
    if args.sizes:
        waiting = "GOMP_SPINCOUNT=300000" if args.spin else "hepbdt's default waiting"
        print(f"machine: nproc={os.cpu_count()}, {waiting}; 50 trees of depth 5, "
              f"median of {args.repeats}")
        sizes(args.repeats, args.spin)
        return
    print(f"machine: {machine()}; {args.events:,} events x 28 features, {args.trees} "
          f"{args.boosting} trees of depth 6, median of {args.repeats}")
    results: dict[tuple[str, str], list[float]] = {}
    for condition in ("quiet", "busy"):
        for _ in range(args.repeats):
            for layer in VARIANTS:
                hogs = []
                if condition == "busy":  # one busy process per core, for the whole fit
                    stop = time.time() + 600
                    hogs = [multiprocessing.Process(target=_busy, args=(stop,))
                            for _ in range(os.cpu_count() or 1)]
                    for hog in hogs:
                        hog.start()
                try:
                    seconds, used = fit_seconds(layer, args.events, args.trees, args.boosting)
                finally:
                    for hog in hogs:
                        hog.terminate()
                        hog.join()
                results.setdefault((condition, used), []).append(seconds)
    print(f"{'machine':8} {'layer':10} {'fit s (median)':>15} {'runs':>30}")
    for (condition, layer), times in results.items():
        runs = ", ".join(f"{t:.2f}" for t in times)
        print(f"{condition:8} {layer:10} {statistics.median(times):>15.2f} {runs:>30}")
    for condition in ("quiet", "busy"):
        omp = results.get((condition, "omp"))
        for other in ("omp-passive", "omp-spin10k", "workqueue"):
            times = results.get((condition, other))
            if omp and times:
                ratio = statistics.median(times) / statistics.median(omp)
                print(f"{condition}: {other} / omp = {ratio:.2f} (median), worst "
                      f"{max(times):.2f} s against {max(omp):.2f} s")


if __name__ == "__main__":
    main()
