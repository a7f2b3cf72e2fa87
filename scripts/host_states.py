"""How this machine's two threads talk over time, and what it does to small fits.

Some hosts (this 2-vCPU virtual machine) pass through episodes of seconds to a minute in
which messages between the cores slow down while the cores compute at full speed. This
script shows them: in a loop for ``--seconds``, it times an empty parallel launch (the
mean of 2,000, taken before and after the fits, the larger kept), a compute-only kernel
on one thread and on two (each ``work`` of 20M dependent multiply-adds: equal times mean
the threads ran at once), and fits on the hastie set of ``benchmarks/bench_defaults.py``:
the default ``BDTClassifier()`` (leaf-wise trees, on one thread), the former default
``max_depth=5`` (its levels shared over two spinning threads) and scikit-learn's
``HistGradientBoostingClassifier()``; then prints the
medians of the iterations whose launches took less than ``--slow-us`` ("usual") and the
rest ("slow"). Run it with spinning threads (libgomp's default, as the benchmarks set).

    python scripts/host_states.py [--seconds 150] [--slow-us 1.3]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("GOMP_SPINCOUNT", "300000")  # before numba starts OpenMP

import numpy as np  # noqa: E402
from numba import njit, prange  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@njit(parallel=True)
def _launch(flags):
    for t in prange(2):
        flags[t * 16] += 1.0


@njit
def _launches(flags, n):
    for _ in range(n):
        _launch(flags)


@njit
def _work(n):
    x = 1.0
    for _ in range(n):
        x = x * 1.0000001 + 1e-9
    return x


@njit(parallel=True)
def _work_twice(out, n):
    for t in prange(2):
        out[t] = _work(n)


def _timed(f) -> float:
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def main() -> None:
    """Print the medians of each state's launches, compute times and fit times."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--slow-us", type=float, default=1.3)
    args = parser.parse_args()
    import bench_defaults
    from _data import machine
    from sklearn.ensemble import HistGradientBoostingClassifier

    import hepbdt

    data = bench_defaults.PANEL["hastie"]()
    train, _ = bench_defaults.splits(data, 1)[0]
    X, y = data.X[train], data.y[train]
    flags, out = np.zeros(64), np.zeros(2)
    fits = {"default": lambda: hepbdt.BDTClassifier(random_state=0).fit(X, y),
            "depth 5": lambda: hepbdt.BDTClassifier(random_state=0, max_depth=5).fit(X, y),
            "sklearn": lambda: HistGradientBoostingClassifier(random_state=0).fit(X, y),
            "work x1": lambda: _work(20_000_000),
            "work x2": lambda: _work_twice(out, 20_000_000)}
    _launches(flags, 10)
    for f in fits.values():
        f()
    rows = []
    end = time.time() + args.seconds
    while time.time() < end:
        launch = _timed(lambda: _launches(flags, 2000)) / 2000 * 1e6
        row = [_timed(f) for f in fits.values()]
        launch = max(launch, _timed(lambda: _launches(flags, 2000)) / 2000 * 1e6)
        rows.append([launch, *row])
    rows = np.array(rows)
    print(machine())
    print(f"{'state':7s} {'n':>4s} {'launch us':>9s} " + " ".join(f"{k:>10s}" for k in fits))
    for name, pick in (("usual", rows[:, 0] < args.slow_us), ("slow", rows[:, 0] >= args.slow_us)):
        if pick.any():
            med = np.median(rows[pick], axis=0)
            print(f"{name:7s} {int(pick.sum()):4d} {med[0]:9.2f} "
                  + " ".join(f"{v:10.4f}" for v in med[1:]))


if __name__ == "__main__":
    main()
