"""Numba's cache never serves a kernel compiled against another version of the kernels it calls.

Numba keys a cached kernel on its own file's (mtime, size) only: a kernel that calls a
kernel of another module keeps, once cached, the callee it was compiled with, after an
edit or a ``git pull`` of the callee's module (README installs with ``pip install -e``).
``engine._types.njit`` adds the stamp of every kernel module to each kernel's. The test
copies the package, adds two kernel modules (one calling the other) and runs them in
fresh processes before and after an edit of the callee, against plain ``numba.njit``
kernels in the same layout, which do serve the stale callee.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hepbdt"

CALLER = '''
from ._probe_callee import {callee}
from .{decorator_module} import njit


@njit
def caller(x):
    return {callee}(x) + 1.0
'''
CALLEE = '''
from .{decorator_module} import njit


@njit
def {callee}(x):
    return x * {factor}
'''
PLAIN = '''
import functools
import numba

njit = functools.partial(numba.njit, cache=True)
'''
RUN = ("from hepbdt.engine import _probe_caller, _plain_caller; "
       "print(_probe_caller.caller(2.0), _plain_caller.caller(2.0))")


def _write(engine: Path, factor: float, mtime: int) -> None:
    """The probe modules with the callee multiplying by ``factor``, all at ``mtime``."""
    files = {
        "_plain_njit.py": PLAIN,
        "_probe_caller.py": CALLER.format(callee="probe", decorator_module="_types"),
        "_probe_callee.py": CALLEE.format(callee="probe", decorator_module="_types",
                                          factor=factor),
        "_plain_caller.py": CALLER.replace("_probe_callee", "_plain_callee").format(
            callee="plain", decorator_module="_plain_njit"),
        "_plain_callee.py": CALLEE.format(callee="plain", decorator_module="_plain_njit",
                                          factor=factor),
    }
    for name, text in files.items():
        path = engine / name
        if name.endswith("callee.py") or not path.exists():
            path.write_text(text)
            os.utime(path, ns=(mtime, mtime))


def _run(root: Path) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_CACHE_DIR": str(root / "cache")}
    out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True,
                         check=True, cwd=root)
    return [float(v) for v in out.stdout.split()]


def test_an_edited_callee_is_compiled_again_where_numba_alone_serves_it_stale(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "hepbdt",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    engine = tmp_path / "hepbdt" / "engine"
    start = 1_700_000_000 * 10**9
    _write(engine, 2.0, start)
    assert _run(tmp_path) == [5.0, 5.0]  # compiled, and cached
    assert _run(tmp_path) == [5.0, 5.0]  # loaded from the cache
    _write(engine, 3.0, start + 10**9)  # the callees edited (a second later), callers not
    hepbdt_kernel, plain_kernel = _run(tmp_path)
    assert hepbdt_kernel == 7.0, "hepbdt's kernel was loaded stale from Numba's cache"
    # The control: Numba alone loads the caller compiled with the old callee (if a Numba
    # release tracks callees, this is 7.0 and the stamp in _types is no longer needed).
    assert plain_kernel == 5.0


def test_the_kernel_stamp_is_in_effect():
    from hepbdt.engine import _types, grower

    stamp = grower._packed_leaves._cache._cache_file._source_stamp
    assert stamp[1] == _types.kernel_sources_stamp()
    names = {name for name, _, _ in stamp[1]}
    assert {"engine/grower.py", "engine/histogram.py", "boosting/losses.py"} <= names


def test_kernels_are_defined_only_in_the_stamped_directories():
    from hepbdt.engine import _types

    stamped = {d.resolve() for d in _types.KERNEL_DIRS}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        names = {alias.name for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) for alias in node.names}
        modules = {alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.Import) for alias in node.names}
        defines = "njit" in names or "serial_twin" in names or "intrinsic" in names
        if defines or ("numba" in modules and "numba.njit" in path.read_text()):
            assert path.parent.resolve() in stamped, f"{path} defines kernels outside {stamped}"


# -- a cache that cannot be used is a slower run, not a failed one ---------------------------

def _double(x):
    return 2.0 * x


def test_kernels_compile_uncached_where_numba_finds_no_cache_folder(monkeypatch) -> None:
    """A read-only install with a read-only home: Numba's decorator raises "cannot cache
    function ...: no locator available", which stopped every command at import."""
    import warnings

    import numba

    from hepbdt.engine import _types

    real = numba.njit

    def no_locator(*args, cache=False, **options):
        if cache:
            raise RuntimeError("cannot cache function '_double': no locator available for "
                               "file '/cvmfs/hepbdt/engine/x.py'")
        return real(*args, cache=cache, **options)

    monkeypatch.setattr(_types.numba, "njit", no_locator)
    monkeypatch.setattr(_types, "_UNCACHED", [])
    with pytest.warns(RuntimeWarning, match="no writable folder for its cache") as said:
        kernel = _types.njit(_double)
        other = _types.njit(_double)
    assert len(said) == 1  # said once a process
    assert kernel(1.5) == other(1.5) == 3.0
    monkeypatch.setattr(_types.numba, "njit", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("another failure")))
    with warnings.catch_warnings(), pytest.raises(RuntimeError, match="another failure"):
        _types.njit(_double)


def test_a_cache_write_that_fails_leaves_the_kernel_running(monkeypatch) -> None:
    """A full disk or quota under the cache folder stopped the fit with OSError."""
    import errno

    from hepbdt.engine import _types

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_types, "_UNCACHED", [])
    kernel = _types.njit(lambda x: x + 1.0)
    monkeypatch.setattr(kernel._cache, "_save_overload", full)
    with pytest.warns(RuntimeWarning, match=r"could not write its cache \(No space left"):
        assert kernel(2.0) == 3.0
