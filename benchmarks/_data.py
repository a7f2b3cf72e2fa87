"""Synthetic HIGGS-like classification data and the machine line shared by the benchmarks."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import numpy as np

# Every library's OpenMP threads behave as libgomp's default (spin 300,000 rounds, then
# sleep), the condition of the README's figures; hepbdt's own default lets them sleep at
# once (see bench_threading.py). Set OMP_WAIT_POLICY or GOMP_SPINCOUNT to compare otherwise.
if "OMP_WAIT_POLICY" not in os.environ:
    os.environ.setdefault("GOMP_SPINCOUNT", "300000")


def machine() -> str:
    """nproc, CPU model and the OpenMP waiting every library runs with."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    waiting = (f"OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}" if "OMP_WAIT_POLICY" in os.environ
               else f"GOMP_SPINCOUNT={os.environ.get('GOMP_SPINCOUNT')}")
    return f"nproc={os.cpu_count()}, CPU: {model}, {waiting}"


def higgs_like(n: int = 1_000_000, m: int = 28, seed: int = 0, weighted: bool = True):
    """(X float32 (n, m), y int (n,), w float32 (n,)): 21 low-level-like and 7 high-level-like
    features whose non-linear combinations separate signal from background."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.53).astype(np.int8)
    X = np.empty((n, m), dtype=np.float32)
    shift = np.where(y == 1, 0.35, 0.0).astype(np.float32)
    for j in range(m):
        kind = j % 4
        z = rng.standard_normal(n, dtype=np.float32)
        if kind == 0:  # transverse-momentum-like: positive, skewed, signal harder
            X[:, j] = np.exp(0.6 * z + shift * (0.5 + 0.1 * (j % 3)))
        elif kind == 1:  # eta-like: symmetric, signal more central
            X[:, j] = z * (1.2 - 0.5 * shift)
        elif kind == 2:  # phi-like: uninformative
            X[:, j] = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
        else:  # mass-like combination
            X[:, j] = np.abs(z + 2.0 * shift * np.sin(X[:, j - 1])) + 0.3 * X[:, j - 3]
    if weighted:
        w = rng.gamma(4.0, 0.25, n).astype(np.float32)
    else:
        w = np.ones(n, dtype=np.float32)
    return X, y, w
