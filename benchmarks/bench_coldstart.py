"""Numba compile cost: ``import hepbdt`` plus a first small fit and predict, with an empty
kernel cache (cold) and with the cache filled by the cold run (warm), each in a fresh process.
``--packed``: the first fit is one on packed histograms instead (60,000 events x 8, depth 4,
``quantised_histograms=True``), the kernels of large samples.

    python benchmarks/bench_coldstart.py [--repeats 3] [--packed]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

SNIPPET = """
import time
t0 = time.perf_counter()
import numpy as np
import hepbdt
rng = np.random.default_rng(0)
X = rng.normal(size=(2000, 5)).astype(np.float32)
y = (X[:, 0] > 0).astype(int)
for boosting in ("gradient", "newton"):
    hepbdt.BDTClassifier(boosting=boosting, n_trees=3, max_depth=3).fit(X, y).decision_function(X)
print(time.perf_counter() - t0)
"""

PACKED = """
import time
t0 = time.perf_counter()
import numpy as np
import hepbdt
rng = np.random.default_rng(0)
X = rng.normal(size=(60_000, 8)).astype(np.float32)
y = (X[:, 0] > 0).astype(int)
hepbdt.BDTClassifier(n_trees=5, max_depth=4, quantised_histograms=True).fit(X, y).decision_function(X)
print(time.perf_counter() - t0)
"""


def run(cache_dir: str, snippet: str = SNIPPET) -> float:
    """Seconds for ``snippet`` in a fresh interpreter with NUMBA_CACHE_DIR=cache_dir."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", snippet], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    """Print the median cold and warm start times."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--packed", action="store_true", help="a first fit on packed histograms")
    args = ap.parse_args()
    snippet = PACKED if args.packed else SNIPPET
    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run(cache, snippet))
            warm.append(run(cache, snippet))
    print(f"# nproc={os.cpu_count()}; median of {args.repeats}; "
          f"{'packed' if args.packed else 'small'} first fit")
    print(f"cold start (empty cache): {statistics.median(cold):.1f} s  {sorted(cold)}")
    print(f"warm start (cached):      {statistics.median(warm):.1f} s  {sorted(warm)}")


if __name__ == "__main__":
    main()
