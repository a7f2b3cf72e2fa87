"""Packaging: CI runs the README's test command, the wheel holds the demo configuration, and
`hepbdt demo` from an installed wheel (no checkout) generates its ntuples into the cache
and writes the whole output set."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest

import hepbdt
from hepbdt import demo_data

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
OUTPUT_SET = ["model.json", "model.weights.xml", "scores.root", "report.html", "summary.txt",
              "figures", "hepbdt-outputs.json"]
# The stack that wrote data/ (tests/test_demo_data.py): only there are the bytes the same.
SHIPPED_WITH = {"uproot": "5.7.7", "zlib": "1.2.13"}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _same_stack_as_data() -> bool:
    import uproot

    return {"uproot": uproot.__version__, "zlib": zlib.ZLIB_RUNTIME_VERSION} == SHIPPED_WITH


def readme_test_command() -> str:
    """The code line right after the README's "Run the tests" paragraph."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Run the tests"))
    code = next(line for line in lines[start + 1:] if line.strip())
    assert code.startswith("    "), f"the line after 'Run the tests' is not a code line: {code!r}"
    return code.strip()


# ----------------------------------------------------------------------------------------
# The two commands


def test_ci_runs_the_readme_test_command():
    command = readme_test_command()
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [line.strip() for line in ci if line.strip() and not line.lstrip().startswith("#")]
    assert command in commands, f".ci/run does not run the README's test command {command!r}"
    # The last command, so that its exit status is CI's; after the fresh virtual environment.
    assert commands[-1] == command
    assert commands.index("rm -rf .venv") < commands.index(command)


def test_the_readme_test_command_is_the_test_script():
    assert readme_test_command() == "bash scripts/test"
    script = (ROOT / "scripts" / "test").read_text()
    assert script.startswith("#!/usr/bin/env bash\n")
    pytest = '.venv/bin/python -m pytest -q -n "${HEPBDT_TEST_WORKERS:-2}" --dist loadfile "$@"'
    for step in ('pip install -q --no-compile -e ".[test]"', "-m compileall -q -j 0",
                 "apt-get install", "chromium",
                 ".venv/bin/ruff check .", pytest):
        assert step in script, step


# ----------------------------------------------------------------------------------------
# The demo configuration in the package, and the shipped data's hashes


def _body(text: str) -> str:
    """A configuration without its leading comment block."""
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.strip() and not line.startswith("#"))
    return "".join(lines[first:])


def test_the_package_demo_config_is_analyses_demo_with_its_data_beside_it():
    package_copy = demo_data.demo_config_text()
    assert package_copy == (ROOT / "hepbdt" / "demo" / "demo.toml").read_text()
    repository = (ROOT / "analyses" / "demo.toml").read_text()
    assert _body(package_copy) == _body(repository).replace('"../data/', '"'), (
        "hepbdt/demo/demo.toml differs from analyses/demo.toml below its header (other than "
        "the sample paths, relative to the ntuples' own folder): change both")
    for name in demo_data.FILE_NAMES.values():
        assert f'files = "{name}"' in package_copy


def test_the_recorded_hashes_are_the_shipped_files():
    assert set(demo_data.SHIPPED_SHA256) == set(demo_data.FILE_NAMES.values())
    for name, sha in demo_data.SHIPPED_SHA256.items():
        assert _sha256(DATA / name) == sha, f"data/{name} changed: update SHIPPED_SHA256"


def test_the_cache_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HEPBDT_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert demo_data.cache_dir() == tmp_path / "home" / ".cache" / "hepbdt"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert demo_data.cache_dir() == tmp_path / "home" / ".cache" / "hepbdt"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert demo_data.cache_dir() == tmp_path / "xdg" / "hepbdt"
    monkeypatch.setenv("HEPBDT_CACHE", str(tmp_path / "mine"))
    assert demo_data.cache_dir() == tmp_path / "mine"


def test_the_checkout_demo_uses_data(tmp_path, monkeypatch):
    from hepbdt.cli import demo_config_path

    monkeypatch.setenv("HEPBDT_CACHE", str(tmp_path / "cache"))
    assert demo_config_path() == ROOT / "analyses" / "demo.toml"
    assert not (tmp_path / "cache").exists()


# ----------------------------------------------------------------------------------------
# The demo folder in the cache


@pytest.mark.slow
def test_the_demo_folder_is_made_once_reused_and_remade_when_damaged(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    told = []
    folder = demo_data.demo_folder(cache, echo=told.append)
    assert folder == cache / f"demo-{hepbdt.__version__}"
    assert len(told) == 1 and str(folder) in told[0]
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(["demo.toml", "demo-files.json", *demo_data.FILE_NAMES.values()])
    assert (folder / "demo.toml").read_text() == demo_data.demo_config_text()
    manifest = json.loads((folder / "demo-files.json").read_text())
    for name in demo_data.FILE_NAMES.values():
        assert manifest["files"][name]["sha256"] == _sha256(folder / name)
        if _same_stack_as_data():
            assert (folder / name).read_bytes() == (DATA / name).read_bytes(), name
    assert manifest["same_bytes_as_repository_data"] is _same_stack_as_data()
    assert sorted(p.name for p in cache.iterdir()) == [f".{folder.name}.lock", folder.name]

    # Complete: reused as it is, nothing generated.
    def no_generation(*args, **kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr(demo_data, "generate", no_generation)
    modified = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert demo_data.demo_folder(cache, echo=told.append) == folder
    assert len(told) == 1
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == modified

    # Damaged (a truncated ntuple) or half there (left by a killed run): made again.
    monkeypatch.undo()
    signal = folder / demo_data.FILE_NAMES["signal"]
    signal.write_bytes(signal.read_bytes()[:1000])
    (cache / f".{folder.name}.abc.tmp").mkdir()
    assert demo_data.demo_folder(cache) == folder
    assert _sha256(signal) == manifest["files"]["signal.root"]["sha256"]
    assert sorted(p.name for p in cache.iterdir()) == [f".{folder.name}.lock", folder.name]


def _setuptools_can_build() -> bool:
    try:
        return int(importlib.metadata.version("setuptools").split(".")[0]) >= 77
    except importlib.metadata.PackageNotFoundError:
        return False


@pytest.mark.slow
def test_the_wheel_runs_the_demo_without_a_checkout(tmp_path):
    # Build from a copy of the package's sources, so that the checkout gets no build/.
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for path in ROOT.glob("LICEN[CS]E*"):
        shutil.copy2(path, source / path.name)
    shutil.copytree(ROOT / "hepbdt", source / "hepbdt",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    # Without build isolation (no network) when the test extra's setuptools is here.
    isolation = ["--no-build-isolation", "--no-index"] if _setuptools_can_build() else []
    build = subprocess.run([*pip, "wheel", "--no-deps", *isolation, "-q", "-w", str(wheels),
                            str(source)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = wheels.glob("hepbdt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "hepbdt/demo/demo.toml" in names and "hepbdt/demo_data.py" in names
    assert not [n for n in names if n.endswith(".root") or n.startswith(("data/", "analyses/"))]

    target = tmp_path / "target"
    install = subprocess.run([*pip, "install", "--no-deps", "--no-index", "-q", "--target",
                              str(target), str(wheel)], capture_output=True, text=True,
                             timeout=300)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]

    work = tmp_path / "work"
    work.mkdir()
    cache = tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(target), "HEPBDT_CACHE": str(cache)}
    env.pop("PYTHONHOME", None)
    # The console entry (hepbdt.cli:main) in a process whose hepbdt is the wheel's, not the
    # checkout's that the virtual environment has as an editable install.
    program = (
        "import sys; from pathlib import Path; import hepbdt\n"
        "where = Path(hepbdt.__file__).resolve()\n"
        "assert where.is_relative_to(Path(sys.argv[1]).resolve()), where\n"
        "from hepbdt.cli import main\n"
        "sys.exit(main(sys.argv[2:]))\n"
    )
    run = subprocess.run([sys.executable, "-c", program, str(target), "demo", "--set",
                          "method.n_trees=20", "--no-progress"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "ROC AUC" in run.stdout
    assert "writing the demo ntuples into" in run.stderr

    out = work / "hepbdt-demo"
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUT_SET)
    assert sorted(p.name for p in (out / "figures").iterdir())
    recorded = json.loads((out / "hepbdt-outputs.json").read_text())
    assert "model.json" in json.dumps(recorded)

    folder = cache / f"demo-{hepbdt.__version__}"
    for name in demo_data.FILE_NAMES.values():
        assert (folder / name).stat().st_size > 1_000_000, name
        if _same_stack_as_data():
            assert _sha256(folder / name) == demo_data.SHIPPED_SHA256[name], name
    assert (folder / "demo.toml").read_text() == demo_data.demo_config_text()
    assert [p.name for p in work.iterdir()] == ["hepbdt-demo"]


def test_the_demo_output_folder_is_not_a_package(tmp_path):
    """`hepbdt demo` in a checkout writes hepbdt-demo/ there; pyproject's package pattern
    must not take it (``hepbdt*`` did: an editable install mapped it as an importable
    namespace package; a wheel, whose package data names hepbdt only, did not carry it)."""
    from setuptools import find_namespace_packages

    from hepbdt.analysis.config import _tomllib

    found = _tomllib().loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"]["find"]
    for name in ("hepbdt/engine", "hepbdt-demo/figures", "hepbdt-output"):
        (tmp_path / name).mkdir(parents=True)
    packages = find_namespace_packages(where=str(tmp_path), include=found["include"])
    assert sorted(packages) == ["hepbdt", "hepbdt.engine"]
    # the old pattern, to show the check can fail
    assert "hepbdt-demo" in find_namespace_packages(where=str(tmp_path), include=["hepbdt*"])


def test_the_test_command_refuses_a_python_older_than_its_references(tmp_path):
    # scikit-learn 1.8 (the tests' reference) has no release for Python 3.10: scripts/test
    # stops with one line naming the version found, before it touches .venv or apt.
    fake = tmp_path / "python3.10"
    fake.write_text("#!/bin/sh\ncase \"$2\" in *platform*) echo 3.10.13; exit 0;; esac\nexit 1\n")
    fake.chmod(0o755)
    script = ROOT / "scripts" / "test"
    done = subprocess.run(["bash", str(script)], env={**os.environ, "PYTHON": str(fake)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("scripts/test: error: the tests need Python 3.11")
    assert f"{fake} is 3.10.13;" in lines[0] and done.stdout == ""
