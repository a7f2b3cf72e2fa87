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


def _higgs_like_features(rng: np.random.Generator, shift: np.ndarray) -> np.ndarray:
    """(n, m) float32 features of ``higgs_like``'s four kinds, each shifted by ``shift`` (n, m)."""
    n, m = shift.shape
    X = np.empty((n, m), dtype=np.float32)
    for j in range(m):
        kind = j % 4
        z = rng.standard_normal(n, dtype=np.float32)
        s = shift[:, j].astype(np.float32)
        if kind == 0:
            X[:, j] = np.exp(0.6 * z + s * (0.5 + 0.1 * (j % 3)))
        elif kind == 1:
            X[:, j] = z * (1.2 - 0.5 * s)
        elif kind == 2:
            X[:, j] = rng.uniform(-np.pi, np.pi, n).astype(np.float32)
        else:
            X[:, j] = np.abs(z + 2.0 * s * np.sin(X[:, j - 1])) + 0.3 * X[:, j - 3]
    return X


def nlo_like(n_signal: int, n_background: int, negative_fraction: float, m: int = 28,
             seed: int = 0):
    """An NLO-like sample in ``m`` dimensions: (X float32 (n, m), y int8, w float64, is_net).

    Signal (shift 0.35 on every feature, as ``higgs_like``) against a background (shift 0)
    whose positive-weight part also holds a signal-like component (shift 1.0 on the first
    half of the features, 0 on the rest) that an identical negative-weight component
    cancels: the net background is clean. ``negative_fraction`` of the background events
    have weight -1 (k = f n_b / (1 - 2 f) in each component); every other weight is 1.
    ``is_net`` marks the signal and clean background events (the net sample).
    """
    if not 0 <= negative_fraction < 0.5:
        raise ValueError("negative_fraction must be in [0, 0.5)")
    rng = np.random.default_rng(seed)
    k = int(round(negative_fraction * n_background / (1 - 2 * negative_fraction)))
    shift = np.zeros((n_signal + n_background + 2 * k, m))
    shift[:n_signal] = 0.35
    shift[n_signal + n_background:, : m // 2] = 1.0
    X = _higgs_like_features(rng, shift)
    y = np.r_[np.ones(n_signal, np.int8), np.zeros(n_background + 2 * k, np.int8)]
    w = np.r_[np.ones(n_signal + n_background + k), -np.ones(k)]
    is_net = np.r_[np.ones(n_signal + n_background, bool), np.zeros(2 * k, bool)]
    return X, y, w, is_net


def _higgs_like_log_density(X: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """log density (up to terms that do not depend on the shift) of ``_higgs_like_features``
    rows generated with the per-feature shift ``shift`` (m,): each feature given the ones
    before it is log-normal, normal, uniform or a folded normal."""
    X = X.astype(np.float64)
    out = np.zeros(X.shape[0])
    for j in range(X.shape[1]):
        s = float(np.float32(shift[j]))
        kind = j % 4
        if kind == 0:
            mean = float(np.float32(s) * np.float32(0.5 + 0.1 * (j % 3)))
            out += -0.5 * ((np.log(X[:, j]) - mean) / 0.6) ** 2
        elif kind == 1:
            sd = float(np.float32(1.2) - np.float32(0.5) * np.float32(s))
            out += -0.5 * (X[:, j] / sd) ** 2 - np.log(sd)
        elif kind == 3:
            a = 2.0 * s * np.sin(X[:, j - 1])
            t = X[:, j] - 0.3 * X[:, j - 3]
            out += np.logaddexp(-0.5 * (t - a) ** 2, -0.5 * (t + a) ** 2)
    return out


def nlo_like_net_weight(X: np.ndarray, n_background: int, negative_fraction: float) -> np.ndarray:
    """The true local net weight E[w | x] of ``nlo_like``'s background at X (n, m): the clean
    density over the clean plus both cancelling components, from the generator's densities."""
    m = X.shape[1]
    k = int(round(negative_fraction * n_background / (1 - 2 * negative_fraction)))
    contamination = np.zeros(m)
    contamination[: m // 2] = 1.0
    log_ratio = _higgs_like_log_density(X, contamination) - _higgs_like_log_density(X, np.zeros(m))
    return 1.0 / (1.0 + (2 * k / n_background) * np.exp(log_ratio))


def multiclass_like(n: int, m: int = 28, n_classes: int = 5, seed: int = 0):
    """(X float32 (n, m), y int (n,) in 0..n_classes-1, w float32 (n,)): ``higgs_like``'s
    feature kinds, each class shifted (by 0.35) in its own subset of the features (class c:
    the features j with j % n_classes <= c, so classes differ in overlapping ways), the
    classes equally likely; gamma-distributed event weights."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    features = np.arange(m) % n_classes
    shift = np.where(features[None, :] <= y[:, None], 0.35, 0.0) * (y[:, None] > 0)
    X = _higgs_like_features(rng, shift)
    w = rng.gamma(4.0, 0.25, n).astype(np.float32)
    return X, y, w
