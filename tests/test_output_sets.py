"""Output sets are whole or absent: kill -9 at random moments of a training never leaves a
mixed or partial set, and every write in the package goes through the one atomic helper."""

from __future__ import annotations

import ast
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hepbdt.output_set import MANIFEST, file_sha256
from tests.faults import tiny_config

PACKAGE = Path(__file__).resolve().parents[1] / "hepbdt"


def _run(config: Path) -> subprocess.Popen:
    code = ("import sys; from hepbdt.cli import main; "
            f"sys.exit(main(['train', {str(config)!r}, '--no-progress']))")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=config.parent)


def _set_of(out: Path) -> tuple[str, dict[str, str]]:
    """The model hash and the files of a complete set; fails on a mixed or partial one."""
    doc = json.loads((out / MANIFEST).read_text())
    present = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert present == sorted([*doc["files"], MANIFEST]), (present, doc["files"])
    for name, digest in doc["files"].items():
        assert file_sha256(out / name) == digest, f"{name} does not belong to this set"
    assert doc["model_sha256"] == doc["files"]["model.json"]
    return doc["model_sha256"], doc["files"]


@pytest.mark.slow
def test_kill_9_during_training_leaves_the_old_or_the_new_set(tmp_path: Path) -> None:
    config = tiny_config(tmp_path, method="n_trees = 20\nmax_depth = 3\nrandom_state = 1")
    config.write_text(config.read_text().replace("figures = false", "figures = true"))
    start = time.perf_counter()
    first = _run(config)
    assert first.wait(timeout=300) == 0, first.stderr.read().decode()
    duration = time.perf_counter() - start
    out = tmp_path / "out"
    sets = {_set_of(out)[0]}  # the models whose complete sets were seen
    rng = random.Random(7)
    for trial in range(4):
        text = config.read_text().replace(f"random_state = {trial + 1}", f"random_state = {trial + 2}")
        config.write_text(text)
        process = _run(config)
        time.sleep(rng.uniform(0.4 * duration, 1.1 * duration))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        model, _ = _set_of(out)  # complete: the previous set, or the new one if the swap was done
        sets.add(model)
    final = _run(config)  # a run after the kills cleans up and succeeds
    assert final.wait(timeout=300) == 0, final.stderr.read().decode()
    _set_of(out)
    leftovers = [p.name for p in tmp_path.iterdir() if "hepbdt-" in p.name]
    assert not leftovers, leftovers


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def _mode(call: ast.Call) -> str:
    args = [*call.args[1:2], *(k.value for k in call.keywords if k.arg == "mode")]
    return args[0].value if args and isinstance(args[0], ast.Constant) else "r"


def test_every_write_goes_through_the_atomic_helper() -> None:
    """No module but _util opens a file for writing or writes text/bytes to a path, except
    on the temporary path that ``atomic_path`` gives (named ``temporary``)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_util.py":
            continue
        for call in _calls(ast.parse(path.read_text())):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            where = f"{path.relative_to(PACKAGE)}:{call.lineno}"
            on_temporary = bool(call.args) and isinstance(call.args[0], ast.Name) and (
                call.args[0].id == "temporary")
            if name == "open" and any(c in _mode(call) for c in "wax+") and not on_temporary:
                found.append(f"{where} open(..., {_mode(call)!r})")
            elif name in ("write_text", "write_bytes"):
                found.append(f"{where} .{name}()")
            elif name in ("recreate", "update") and isinstance(func, ast.Attribute) and (
                    getattr(func.value, "id", "") == "uproot"):
                if not on_temporary:
                    found.append(f"{where} uproot.{name}() on a path that is not the temporary")
    assert not found, "\n".join(found)


def test_files_get_the_umask_mode(tmp_path: Path) -> None:
    from hepbdt._util import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


def test_a_planted_symlink_is_never_followed(tmp_path: Path) -> None:
    from hepbdt._util import atomic_write_text

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    for name in (".model.json.tmp", f".model.json.tmp-{os.getpid()}", "model.json.tmp"):
        (out / name).symlink_to(victim)
    atomic_write_text(out / "model.json", "{}")
    assert victim.read_text() == "precious"
    assert (out / "model.json").read_text() == "{}"
