"""Numba compile cost: ``import hepbdt`` plus a first small fit and predict, with an empty
kernel cache (cold) and with the cache filled by the cold run (warm), each in a fresh process.
``--packed``: the first fit is one on packed histograms instead (60,000 events x 8, depth 4,
``quantised_histograms=True``), the kernels of large samples; ``--leafwise``: a first small
leaf-wise fit (2,000 x 5, ``max_leaves=31``, both boosters); ``--defaults``: a first fit of
``BDTClassifier()`` at its defaults (2,000 x 5: trees until the held-out loss stops
improving, the automatic leaf-wise trees). ``--kernels``: one cold
run that also prints the kernels whose compiles took longest (Numba's compile events:
time including the kernels compiled for it, and its own). Compare two versions in one run:

    python benchmarks/bench_coldstart.py [--repeats 3] [--packed | --leafwise | --defaults] [--kernels]
    PYTHONPATH=/path/to/other/checkout python benchmarks/bench_coldstart.py
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

LEAFWISE = SNIPPET.replace("max_depth=3)", "max_leaves=31, max_depth=None)")
DEFAULTS = SNIPPET.replace('for boosting in ("gradient", "newton"):\n    '
                           'hepbdt.BDTClassifier(boosting=boosting, n_trees=3, max_depth=3)',
                           "hepbdt.BDTClassifier()")

# Prepended to the snippet by --kernels: records each compile's time and its own share.
LISTENER = """
import time as _time
from numba.core import event as _event
_compiles, _stack = [], []
class _Listener(_event.Listener):
    def on_start(self, e):
        _stack.append([_time.perf_counter(), 0.0])
    def on_end(self, e):
        t0, inner = _stack.pop()
        spent = _time.perf_counter() - t0
        if _stack:
            _stack[-1][1] += spent
        f = e.data["dispatcher"].py_func
        _compiles.append((spent, spent - inner, len(_stack), f.__module__ + "." + f.__qualname__))
_event.register("numba:compile", _Listener())
import atexit
@atexit.register
def _show():
    for spent, own, _, name in sorted((c for c in _compiles if c[2] == 0), reverse=True)[:12]:
        print(f"  {spent:6.2f} s ({own:5.2f} s its own)  {name}")
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
    ap.add_argument("--leafwise", action="store_true", help="a first small leaf-wise fit")
    ap.add_argument("--defaults", action="store_true", help="a first BDTClassifier() fit")
    ap.add_argument("--kernels", action="store_true",
                    help="one cold run, with the longest compiles (top-level kernels)")
    args = ap.parse_args()
    snippet, kind = ((PACKED, "packed") if args.packed else (LEAFWISE, "small leaf-wise")
                     if args.leafwise else (DEFAULTS, "default") if args.defaults
                     else (SNIPPET, "small"))
    if args.kernels:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            out = subprocess.run([sys.executable, "-c", LISTENER + snippet], env=env,
                                 capture_output=True, text=True, check=True).stdout.splitlines()
        print(f"# nproc={os.cpu_count()}; one cold run; {kind} "
              f"first fit: {float(out[0]):.1f} s; longest compiles (with the kernels they call):")
        print("\n".join(out[1:]))
        return
    cold, warm = [], []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            cold.append(run(cache, snippet))
            warm.append(run(cache, snippet))
    print(f"# nproc={os.cpu_count()}; median of {args.repeats}; "
          f"{kind} first fit")
    print(f"cold start (empty cache): {statistics.median(cold):.1f} s  {sorted(cold)}")
    print(f"warm start (cached):      {statistics.median(warm):.1f} s  {sorted(warm)}")


if __name__ == "__main__":
    main()
