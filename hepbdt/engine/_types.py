"""Engine dtypes, the histogram layout, criterion codes and the one Numba decorator policy.

Kernels see few types, so few compiled variants: uint8 bin codes, float32 per-event
channels and raw features, float64 histogram sums, int32 node and event indices (hence
at most ``MAX_EVENTS`` = 2**31 - 1 training events).
"""

from __future__ import annotations

import os
import sys

# OpenMP threads that sleep, not spin, between parallel kernels, unless the user chose:
# on a busy machine (a batch node, a laptop at work) spinning threads fight the other
# processes for the cores. benchmarks/bench_threading.py, 2 cores, 200k x 28, 50 trees:
# quiet 1.27 s with libgomp's default (spin, then sleep), 1.60 s sleeping at once, 2.01 s
# workqueue; with both cores busy 3.9 s (worst 12.9 s) default, 1.9 s sleeping, 3.2 s
# workqueue. Set before Numba starts its
# OpenMP layer (at the first parallel kernel), which reads it once.
if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
# A batch system's allocation: HTCondor (and many job scripts) give the cores a job may use
# as OMP_NUM_THREADS, which Numba ignores: it reads NUMBA_NUM_THREADS, else takes every core
# it sees (64 threads for a one-core job on a 64-core node). The first number of
# OMP_NUM_THREADS is Numba's thread count unless NUMBA_NUM_THREADS is set (read by Numba at
# its import and again at each compilation), or a Numba imported before hepbdt has started
# its threads: their count is fixed then, and a changed NUMBA_NUM_THREADS stopped Numba's
# next compilation (hepbdt's kernels with no cache, the user's own) with a RuntimeError.
_OMP_THREADS = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
_NUMBA_STARTED = "numba" in sys.modules and bool(getattr(
    sys.modules.get("numba.np.ufunc.parallel"), "_is_initialized", True))
if ("NUMBA_NUM_THREADS" not in os.environ and not _NUMBA_STARTED and _OMP_THREADS.isdigit()
        and int(_OMP_THREADS) >= 1):
    os.environ["NUMBA_NUM_THREADS"] = str(int(_OMP_THREADS))


def threads_sleep() -> bool:
    """Whether OpenMP's idle threads sleep at once (hepbdt's default, OMP_WAIT_POLICY=PASSIVE),
    so that each parallel kernel wakes them (tens of microseconds), or spin (about one)."""
    return os.environ.get("OMP_WAIT_POLICY", "").strip().upper() == "PASSIVE"

import contextlib  # noqa: E402
import importlib  # noqa: E402
import threading  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba.core import cgutils  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

_serial = threading.local()
_LAUNCHES = threading.RLock()  # one parallel launch at a time, on Numba's workqueue layer


def _on_workqueue() -> bool:
    """Whether Numba runs (or, before its first parallel kernel, will run) its parallel
    kernels on the workqueue layer, which aborts the interpreter when two threads launch
    one at once: chosen by NUMBA_THREADING_LAYER, or Numba's fallback where neither TBB
    nor OpenMP loads."""
    try:
        return numba.threading_layer() == "workqueue"
    except ValueError:  # no parallel kernel ran yet: the layer Numba will pick
        chosen = str(numba.config.THREADING_LAYER).lower()
        if chosen in ("workqueue", "tbb", "omp"):
            return chosen == "workqueue"
        for layer in numba.config.THREADING_LAYER_PRIORITY:
            if layer == "workqueue":
                return True
            try:
                importlib.import_module(f"numba.np.ufunc.{layer}pool")
                return False
            except ImportError:
                continue
        return True


def launch_lock() -> Any:
    """A context for Python code that launches parallel kernels: on the workqueue layer a
    lock shared by every thread (two concurrent launches abort it), else nothing."""
    return _LAUNCHES if _on_workqueue() else contextlib.nullcontext()


def serial_tree_threads() -> int:
    """Threads the one-call trees of a fit run on one thread may use (``_util.threads``
    sets it: the fit's own count when idle threads spin, else 1)."""
    return getattr(_serial, "threads", 1)


def set_serial_tree_threads(n: int) -> int:
    """Set ``serial_tree_threads()`` for this Python thread; returns the old value."""
    old = serial_tree_threads()
    _serial.threads = n
    return old

X_DTYPE = np.float32  # raw features, thresholds
BIN_DTYPE = np.uint8  # bin codes
CHANNEL_DTYPE = np.float32  # per-event channels A, B and event weight W
SUM_DTYPE = np.float64  # histogram sums
INDEX_DTYPE = np.int32  # event and node indices
MAX_EVENTS = 2**31 - 1  # events of one training sample, at most: int32 event indices

N_BINS = 256  # histogram slots per feature: up to 255 value bins, then the missing bin
MISSING_BIN = 255  # the last bin holds NaN
MAX_VALUE_BINS = 255
N_CHANNELS = 3  # A, B (booster-defined) and the event weight W

# Split criteria: what a split's gain means (see split.py).
VARIANCE = 0  # A = sum w*r, B = sum w
NEWTON = 1  # A = sum g, B = sum h
GINI = 2  # A = signal weight, B = background weight
CROSS_ENTROPY = 3
MISCLASSIFICATION = 4
SDIVSQRTSPLUSB = 5
# Multi-class Gini (SAMME's trees): the channels are the weight of each of K classes, then
# W; a node's score is sum_k S_k^2 / n - n with n = sum_k S_k (-n times the Gini index).
CLASS_GINI = 6

CRITERIA = {
    "variance": VARIANCE,
    "newton": NEWTON,
    "gini": GINI,
    "cross_entropy": CROSS_ENTROPY,
    "misclassification": MISCLASSIFICATION,
    "sdivsqrtsplusb": SDIVSQRTSPLUSB,
}


def check_n_events(n_events: int) -> None:
    """Raise ValueError when ``n_events`` is more than ``MAX_EVENTS`` (int32 event indices)."""
    if n_events > MAX_EVENTS:
        raise ValueError(f"{n_events:,} training events are more than hepbdt can hold: at most "
                         f"{MAX_EVENTS:,} (2**31 - 1, int32 event indices): train on a "
                         "subsample of at most that many")


@intrinsic
def borrowed(typingctx: Any, array: Any) -> Any:
    """``array`` (a kernel's argument) as a view without a reference count: its views and
    the calls that take it then skip Numba's atomic reference counting. A compiled function
    counts a reference to each array it takes, at its entry and exit, and to each view it
    makes: on small trees that was a fifth of a one-thread hastie fit, and on two threads
    both count on the same array's counter. Only for an array that the caller holds for
    the whole call, and never returned to Python."""
    if not isinstance(array, numba.types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        source = context.make_array(array)(context, builder, value=args[0])
        view = context.make_array(array)(context, builder)
        for field in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(view, field, getattr(source, field))
        view.meminfo = cgutils.get_null_value(view.meminfo.type)
        view.parent = cgutils.get_null_value(view.parent.type)
        return view._getvalue()

    return array(array), codegen


def serial_twin(kernel: Any, suffix: str = "_1", **callees: Any) -> Any:
    """A one-thread copy of a parallel kernel (its ``prange`` loops run as ``range``), with
    its own name (the kernel's and ``suffix``) and so its own cache entry: compiled code
    that must not wake the other threads for a small piece of work calls it (Numba's thread
    count set inside compiled code would keep that code out of the cache). ``callees``:
    global names the copy sees bound to other kernels (one-thread copies of the parallel
    kernels it calls, or others of the same arguments). Two copies of one kernel with other
    callees need other suffixes: they would share a cache entry."""
    f = kernel.py_func
    names = {**f.__globals__, **callees} if callees else f.__globals__
    twin = types.FunctionType(f.__code__, names, f.__name__ + suffix, f.__defaults__,
                              f.__closure__)
    twin.__qualname__ = f.__qualname__ + suffix
    twin.__doc__ = f"``{f.__name__}`` on one thread."
    return njit(twin)


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``. Numba types writable and read-only arrays apart and
    compiles a kernel again for each; a kernel that only reads an input that can come
    either way (a user's X, tables unpickled from a Dask worker's buffers) takes it as
    this view, so that one compiled version serves both (the dense predictor's compile is
    about 9 s)."""
    view = array.view()
    view.flags.writeable = False
    return view


# Directories whose modules define kernels (a test keeps every ``njit`` user in them).
KERNEL_DIRS = (Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "boosting")


def kernel_sources_stamp() -> tuple:
    """(name, mtime in ns, size) of every module in ``KERNEL_DIRS``: the state of all the
    source a cached kernel may have compiled in."""
    stats = {f"{d.name}/{p.name}": p.stat() for d in KERNEL_DIRS for p in d.glob("*.py")}
    return tuple(sorted((name, st.st_mtime_ns, st.st_size) for name, st in stats.items()))


_SOURCES_STAMP = kernel_sources_stamp()


def _stamped(dispatcher: Any) -> Any:
    """``dispatcher`` with its cache entries valid only for today's ``KERNEL_DIRS`` sources.

    Numba keys a cached kernel on its own file's (mtime, size) alone, so after an edit
    (or a ``git pull``) of another module a kernel would load compiled code that still
    holds the old version of the kernels it calls, which gives wrong numbers or crashes.
    With every kernel module's stamp added, any change there compiles them all again."""
    cache = getattr(dispatcher, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if hasattr(cache_file, "_source_stamp"):
        cache_file._source_stamp = (cache_file._source_stamp, _SOURCES_STAMP)
    elif hasattr(cache, "disable"):  # a Numba whose cache differs: compile, never load stale
        cache.disable()
    return dispatcher


_UNCACHED: list[str] = []  # why Numba's cache is not used in this process, once said


def _without_cache(why: str) -> None:
    """Say once that kernels compile in every process: the cache is a speed-up only."""
    if not _UNCACHED:
        _UNCACHED.append(why)
        warnings.warn(f"{why}; the compiled kernels are not cached, so each run compiles "
                      "them again (a minute or more): set NUMBA_CACHE_DIR to a writable "
                      "folder with free space", RuntimeWarning, stacklevel=3)


def _tolerant_saves(dispatcher: Any) -> Any:
    """``dispatcher`` whose cache writes that fail (a full disk, a quota) leave the kernel
    compiled and the run going, instead of stopping the fit."""
    cache = getattr(dispatcher, "_cache", None)
    save = getattr(cache, "save_overload", None)
    if save is None:
        return dispatcher

    def save_overload(sig: Any, data: Any) -> None:
        try:
            save(sig, data)
        except OSError as exc:
            _without_cache(f"Numba could not write its cache ({exc.strerror or exc})")

    cache.save_overload = save_overload
    return dispatcher


def njit(*args, parallel: bool = False, fastmath: bool = False, inline: str = "never"):
    """The engine's one decorator policy: cached (valid for the kernel sources of today:
    ``_stamped``), GIL-free, no fastmath unless asked. Where no folder can hold the cache
    (a read-only install with a read-only home), or writing it fails, kernels compile
    uncached, with one warning.

    numpy's error model: a float division by zero gives inf or NaN (as in numpy) instead
    of a check that raises, which would sit in every loop and stop its vectorisation.
    """
    options = dict(nogil=True, parallel=parallel, fastmath=fastmath, error_model="numpy",
                   inline=inline)

    def compile_(func: Any) -> Any:
        try:
            return _tolerant_saves(_stamped(numba.njit(cache=True, **options)(func)))
        except RuntimeError as exc:  # Numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(exc):
                raise
            _without_cache("Numba finds no writable folder for its cache")
            return numba.njit(cache=False, **options)(func)

    if args:  # used as @njit
        return compile_(*args)
    return compile_
