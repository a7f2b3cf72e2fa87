"""Dask fits, predictions and apply on an in-process cluster of threads
(``Client(processes=False)``) on Numba's workqueue layer, which aborts the interpreter when
two threads launch parallel kernels at once: every Python call of a kernel that launches
one takes ``engine._types.launch_lock``."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import hepbdt

ROOT = str(Path(__file__).resolve().parents[1])


def _names(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the code nested in it use."""
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _modules() -> list[types.ModuleType]:
    """Every hepbdt module that imports here (Dask's and the plots' need their extras)."""
    found = []
    for info in pkgutil.walk_packages(hepbdt.__path__, "hepbdt."):
        if info.name.endswith("__main__"):
            continue
        try:
            found.append(importlib.import_module(info.name))
        except ImportError:
            continue
    return found


def _launching(modules: list[types.ModuleType]) -> set[int]:
    """ids of the compiled kernels that launch parallel work: ``parallel=True`` in Numba's
    own options, or calling (through compiled code) one that does."""
    from numba.core.registry import CPUDispatcher

    todo = [v for m in modules for v in vars(m).values() if isinstance(v, CPUDispatcher)]
    kernels, calls = {}, {}
    while todo:
        kernel = todo.pop()
        if id(kernel) in calls:
            continue
        kernels[id(kernel)] = kernel
        scope = kernel.py_func.__globals__
        callees = [scope[n] for n in _names(kernel.py_func.__code__)
                   if isinstance(scope.get(n), CPUDispatcher)]
        calls[id(kernel)] = {id(c) for c in callees}
        todo.extend(callees)
    launching = {k for k, v in kernels.items() if v.targetoptions.get("parallel")}
    grown = True
    while grown:
        more = {k for k, callees in calls.items() if callees & launching} - launching
        launching |= more
        grown = bool(more)
    return launching


def test_every_python_call_of_a_launching_kernel_holds_the_launch_lock():
    """The parts of a Dask fit (partitions, histograms, leaf sums, score updates) and the
    client's decoding of the summed histograms called kernels outside the lock: a fit on a
    cluster of threads aborted the interpreter on the workqueue layer."""
    from numba.core.registry import CPUDispatcher

    modules = _modules()
    launching = _launching(modules)
    assert len(launching) > 20  # the engine's and the losses' parallel kernels, at least
    unlocked, locked = [], 0
    for module in modules:
        scope = vars(module)
        tree = ast.parse(inspect.getsource(module))
        for func in ast.walk(tree):
            if (not isinstance(func, ast.FunctionDef)
                    or isinstance(scope.get(func.name), CPUDispatcher)
                    or any("njit" in ast.unparse(d) for d in func.decorator_list)):
                continue
            held, twinned = set(), set()  # in `with launch_lock()`; copied by serial_twin
            for node in ast.walk(func):
                if isinstance(node, ast.With) and any(
                        "launch_lock" in ast.unparse(item.context_expr) for item in node.items):
                    held |= {id(n) for n in ast.walk(node)}
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "serial_twin":
                    twinned |= {id(n) for n in ast.walk(node)}
            for node in ast.walk(func):
                if (isinstance(node, ast.Name) and id(node) not in twinned
                        and id(scope.get(node.id)) in launching):
                    if id(node) in held:
                        locked += 1
                    else:
                        unlocked.append(f"{module.__name__}:{node.lineno} {func.name}: {node.id}")
    assert not unlocked, "kernels launched outside launch_lock():\n" + "\n".join(unlocked)
    assert locked > 20


_CLUSTER_OF_THREADS = """if True:
    import tempfile, warnings
    import numpy as np, numba, dask, dask.array as da, pandas as pd, uproot
    from distributed import Client
    from hepbdt import BDTClassifier, BDTRegressor
    from hepbdt.dask import DaskBDTClassifier, DaskBDTRegressor, apply, _cluster, _estimators
    from hepbdt.scoring import apply as apply_in_memory
    warnings.simplefilter("ignore")
    fields = ("feature", "threshold", "bin_threshold", "left", "right", "missing_left", "value",
              "tree_offsets", "tree_weights")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20000, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.01] = np.nan
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1] * X[:, 2])
         + rng.standard_normal(20000) > 0).astype(int)
    w = rng.uniform(0.3, 2.0, 20000)
    Xd, yd, wd = (da.from_array(a, chunks=(2500,) + a.shape[1:]) for a in (X, y, w))
    opts = dict(n_trees=4, max_depth=4, random_state=3, quantised_histograms=True)
    with Client(processes=False, n_workers=2, threads_per_worker=2, dashboard_address=":0") as c:
        for tasks in (False, True):
            if tasks:  # every step a task, the histograms summed on the cluster
                _estimators.ACTOR_PARTS, _cluster.CLIENT_SUM_PARTS = 0, 1
            for Memory, Dask, target in ((BDTClassifier, DaskBDTClassifier, y),
                                         (BDTRegressor, DaskBDTRegressor, 1.5 * y)):
                memory = Memory(**opts).fit(X, target, sample_weight=w)
                dist = Dask(**opts).fit(Xd, da.from_array(target, chunks=2500), wd, client=c)
                with dask.config.set(scheduler="threads"):
                    scores = dist.predict(Xd).compute()
                print(memory.forest_.base_score == dist.forest_.base_score and all(
                    np.array_equal(getattr(memory.forest_, f), getattr(dist.forest_, f),
                                   equal_nan=True) for f in fields)
                      and np.array_equal(scores, memory.predict(X)))
        tmp = tempfile.mkdtemp()
        model = BDTClassifier(n_trees=3).fit(pd.DataFrame(X[:, :2], columns=["x0", "x1"]), y)
        inputs = []
        for k in range(4):
            with uproot.recreate(f"{tmp}/in{k}.root") as f:
                f.mktree("t", {"x0": np.float32, "x1": np.float32})
                f["t"].extend({"x0": X[k::4, 0], "x1": X[k::4, 1]})
            inputs.append(f"{tmp}/in{k}.root:t")
        written = apply(model, inputs, f"{tmp}/c_{{stem}}.root", client=c)
        memory = apply_in_memory(model, inputs, f"{tmp}/m_{{stem}}.root")
        print(all(np.array_equal(uproot.open(a)["t"]["bdt_score"].array(library="np"),
                                 uproot.open(b)["t"]["bdt_score"].array(library="np"))
                  for a, b in zip(written, memory, strict=True)))
    print(numba.threading_layer())
"""


@pytest.mark.parametrize("layer", ["workqueue", "default"])
def test_dask_fits_and_apply_on_a_cluster_of_threads(layer):
    """A Dask fit on Client(processes=False) with two threads a worker aborted the
    interpreter on the workqueue layer (SIGABRT: "Concurrent access has been detected").
    The reference: the in-memory fit, its predictions and the in-memory apply."""
    pytest.importorskip("distributed")
    pytest.importorskip("uproot")
    pytest.importorskip("pandas")
    path = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": ROOT + (os.pathsep + path if path else ""),
           "NUMBA_NUM_THREADS": "2"}
    if layer != "default":
        env["NUMBA_THREADING_LAYER"] = layer
    else:
        env.pop("NUMBA_THREADING_LAYER", None)
    run = subprocess.run([sys.executable, "-c", _CLUSTER_OF_THREADS], env=env,
                         capture_output=True, text=True, timeout=400, cwd=ROOT)
    lines = run.stdout.split()
    assert run.returncode == 0 and lines[:5] == ["True"] * 5, \
        f"exit {run.returncode}\n" + run.stdout + run.stderr[-3000:]
    if layer != "default":
        assert lines[5] == layer
