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
    for trial in range(2):  # each a training in a fresh process (about 5 s)
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


def test_a_file_put_into_the_folder_during_a_run_is_not_swapped_away(tmp_path):
    # the interruption audit: a user's file written into the output folder while a run
    # staged its set went with the old set (deleted), and the run exited 0; a file put in
    # the folder's place was hidden under a staging name for good
    import shutil

    from hepbdt.output_set import OutputSet, OutputSetError

    target = tmp_path / "out"
    first = OutputSet(target)
    with first as staging:
        (staging / "model.json").write_text("{}")
        first.commit()
    run = OutputSet(target)
    with pytest.raises(OutputSetError, match="my_notes.txt.*folder was left as it is"):
        with run as staging:
            (staging / "model.json").write_text('{"new": 1}')
            (target / "my_notes.txt").write_text("mine")
            run.commit()
    assert (target / "my_notes.txt").read_text() == "mine"
    assert (target / "model.json").read_text() == "{}"
    # this run's complete outputs are kept beside the folder, where the message says
    (kept,) = tmp_path.glob("out.hepbdt-new-*")
    assert (kept / "model.json").read_text() == '{"new": 1}' and (kept / "hepbdt-outputs.json").is_file()
    (target / "my_notes.txt").unlink()
    run = OutputSet(target)
    with pytest.raises(OutputSetError, match="is a file, not a folder"):
        with run as staging:
            (staging / "model.json").write_text('{"new": 1}')
            shutil.rmtree(target)
            target.write_text("a file of the user's")
            run.commit()
    assert target.read_text() == "a file of the user's"


def test_a_lock_on_a_file_its_holder_unlinked_is_taken_again(tmp_path, monkeypatch):
    # the audit's race: a run that opened the lock file just before its holder unlinked it
    # locked the unlinked file, while a third run locked a new one: two holders
    import hepbdt.output_set as output_set

    target = tmp_path / "out"
    lock = tmp_path / ".out.hepbdt-lock"
    real = output_set.fcntl.flock
    calls = []

    def flock(fd, op):
        if not calls:  # the first open's file is unlinked before its flock
            lock.unlink()
        calls.append(fd)
        return real(fd, op)

    monkeypatch.setattr(output_set.fcntl, "flock", flock)
    with output_set.OutputSet(target):
        assert len(calls) == 2 and lock.exists()  # locked the file at the path, not the old


def test_a_second_run_into_a_folder_in_use_is_refused_naming_the_first(tmp_path):
    from hepbdt.output_set import OutputSet, OutputSetError

    target = tmp_path / "out"
    with OutputSet(target) as staging:
        (staging / "model.json").write_text("{}")
        with pytest.raises(OutputSetError, match=f"in use by another hepbdt run \\(pid "
                                                 f"{os.getpid()} on "):
            with OutputSet(target):
                pass
    with OutputSet(target) as staging:  # released: the next run takes it
        (staging / "model.json").write_text("{}")
    assert not (tmp_path / ".out.hepbdt-lock").exists()


def test_an_interrupt_during_the_swap_waits_for_it_and_says_the_new_set_is_in_place(
        tmp_path, monkeypatch, capsys):
    """Ctrl-C as the training's set is swapped in: the swap and the old set's removal end
    first, and the line says the outputs are in place (a bare "interrupted" read as if the
    previous results were still there)."""
    import signal

    import hepbdt.output_set as output_set
    from hepbdt.cli import main

    config = tiny_config(tmp_path, method="n_trees = 3\nmax_depth = 2")
    out = tmp_path / "out"
    assert main(["train", str(config), "--no-progress"]) == 0
    first = _set_of(out)[0]
    config.write_text(config.read_text().replace("n_trees = 3", "n_trees = 4"))
    real_swap = output_set._swap

    def swap_then_interrupt(staging, target):
        old = real_swap(staging, target)
        os.kill(os.getpid(), signal.SIGINT)
        return old

    monkeypatch.setattr(output_set, "_swap", swap_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["train", str(config), "--no-progress"]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert f"hepbdt: interrupted after its outputs were in place ({out}:" in err, err
    assert _set_of(out)[0] != first  # the new set, whole
    assert not [p.name for p in tmp_path.iterdir() if "hepbdt-" in p.name]



@pytest.mark.parametrize("number, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_lost_in_a_callback_from_compiled_code_still_stops_the_run(
        tmp_path, monkeypatch, capsys, number, status):
    """A signal that arrives while Numba's compiler has called back into Python (a ctypes
    callback) raises there, where the exception is printed as "Exception ignored" and
    dropped: the run trained on, replaced the previous set and exited 0. Delivered again
    before the swap: the previous set stays and the status is the signal's."""
    import ctypes

    import hepbdt.output_set as output_set
    from hepbdt.cli import main

    config = tiny_config(tmp_path, method="n_trees = 3\nmax_depth = 2")
    out = tmp_path / "out"
    assert main(["train", str(config), "--no-progress"]) == 0
    first = _set_of(out)
    config.write_text(config.read_text().replace("n_trees = 3", "n_trees = 4"))
    callback = ctypes.CFUNCTYPE(None)(lambda: os.kill(os.getpid(), number))
    real_commit = output_set.OutputSet.commit

    lost = []

    def commit_after_a_lost_signal(self, *args, **kwargs):
        callback()  # the handler's exception ends here, as inside LLVM's object-cache hook
        lost.append(True)  # reached: the exception did not arrive
        return real_commit(self, *args, **kwargs)

    monkeypatch.setattr(output_set.OutputSet, "commit", commit_after_a_lost_signal)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["train", str(config), "--no-progress"]) == status
    finally:
        signal.signal(signal.SIGINT, previous)
    assert lost == [True]
    assert _set_of(out) == first
    assert not [p.name for p in tmp_path.iterdir() if "hepbdt-" in p.name]


def _a_set(folder: Path) -> None:
    """An output set in ``folder``: model.json and figures/roc.png."""
    from hepbdt.output_set import OutputSet

    output_set = OutputSet(folder)
    with output_set as staging:
        (staging / "model.json").write_text("{}")
        (staging / "figures").mkdir()
        (staging / "figures" / "roc.png").write_bytes(b"png")
        output_set.commit()


@pytest.mark.parametrize("planted", ["link to a folder", "link to a file", "empty folder"])
def test_a_link_or_folder_the_set_does_not_list_is_foreign(tmp_path, planted):
    """A user's link to their ntuples, or an empty folder, in an output folder were not
    counted as foreign and went with the old set: refused, as any unlisted file is."""
    from hepbdt.output_set import OutputSetError, check_output_folder

    out, data = tmp_path / "out", tmp_path / "data"
    _a_set(out)
    data.mkdir()
    (data / "ntuple.root").write_bytes(b"x")
    check_output_folder(out)  # nothing foreign yet (figures/ holds a listed file)
    if planted == "link to a folder":
        (out / "my_ntuples").symlink_to(data)
    elif planted == "link to a file":
        (out / "my_ntuples").symlink_to(data / "ntuple.root")
    else:
        (out / "my_ntuples").mkdir()
    with pytest.raises(OutputSetError, match=r"did not write \(my_ntuples\)"):
        _a_set(out)
    assert (data / "ntuple.root").is_file() and (out / "my_ntuples").exists()


def test_the_current_folder_and_a_mount_point_are_refused_as_output(tmp_path, monkeypatch):
    """--output . swapped the shell's folder out from under it; a mount point (a container's
    -v folder, a bind mount that os.path.ismount misses) failed only after the training."""
    from hepbdt.output_set import OutputSetError, check_output_folder

    monkeypatch.chdir(tmp_path)
    for here in (".", str(tmp_path.parent)):
        with pytest.raises(OutputSetError, match="is the current folder or holds it"):
            check_output_folder(here)
    monkeypatch.setattr(os.path, "ismount", lambda path: False)  # /proc/self/mountinfo's
    with pytest.raises(OutputSetError, match="is a mount point"):
        check_output_folder("/proc")
    check_output_folder(tmp_path / "new")


def test_check_refuses_the_output_folder_train_would_refuse(tmp_path, capsys):
    """`hepbdt train --check` said "OK ... outputs would go to data/" for a folder of
    ntuples, or a file, that the run then refused at once."""
    from hepbdt.cli import main

    config = tiny_config(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "signal.root").write_bytes(b"x")
    for output in (tmp_path / "data", config):
        assert main(["train", str(config), "--check", "--output", str(output)]) == 2
        assert "hepbdt: error: output folder" in capsys.readouterr().err
    assert main(["train", str(config), "--check", "--output", str(tmp_path / "new")]) == 0


def test_a_killed_writers_temporaries_go_when_the_output_is_next_held(tmp_path):
    """`kill -9` of apply or export left .friend.root.XXXXXXXX.tmp (a partial ROOT file) for
    good: the next run that holds friend.root removes its temporaries (mkstemp's and
    mkdtemp's names, as atomic_path makes them), and nothing else: a user's file of a
    similar name, or a temporary of another output (friend.root.v2.root) another run writes."""
    import tempfile

    from hepbdt.output_set import hold_outputs

    out = tmp_path / "friend.root"
    fd, _ = tempfile.mkstemp(prefix=".friend.root.", suffix=".tmp", dir=tmp_path)
    os.close(fd)
    private = tempfile.mkdtemp(prefix=".friend.root.", suffix=".tmp", dir=tmp_path)
    Path(private, "friend.root").write_bytes(b"x")
    fd, other = tempfile.mkstemp(prefix=".friend.root.v2.root.", suffix=".tmp", dir=tmp_path)
    os.close(fd)
    kept = [Path(other), tmp_path / ".friend.root.mynotes.tmp", tmp_path / ".friend.root.backup.tmp"]
    kept[1].write_bytes(b"mine")
    kept[2].mkdir()
    assert len(list(tmp_path.glob(".friend.root.*.tmp"))) == 5
    with hold_outputs([str(out)], "apply"):
        assert sorted(tmp_path.glob(".friend.root.*.tmp")) == sorted(kept)


def test_an_output_that_is_a_symlink_is_written_through(tmp_path: Path) -> None:
    """apply --output link.root replaced the link with a regular file, so the file the link
    named (read by its own path, say on shared storage) kept the old model's scores; ROOT's
    RECREATE and a shell's > write through the link. Against the file's own contents."""
    from hepbdt._util import atomic_write_text

    store = tmp_path / "store"
    store.mkdir()
    (store / "scores.txt").write_text("old")
    link = tmp_path / "scores.txt"
    link.symlink_to(store / "scores.txt")
    atomic_write_text(link, "new")
    assert link.is_symlink() and (store / "scores.txt").read_text() == "new"
    assert sorted(p.name for p in store.iterdir()) == ["scores.txt"]  # no temporary left


def test_a_dangling_link_is_written_as_a_shell_writes_it(tmp_path: Path) -> None:
    """A link to a missing file in a folder that exists is written through (the file is
    made); a link into a missing folder is refused without making the folder, as the
    shell's > (the reference, run here) refuses it; atomic_path made the folders."""
    import errno
    import subprocess

    from hepbdt._util import atomic_write_text

    (tmp_path / "store").mkdir()
    for name, target in (("ok", tmp_path / "store" / "a.txt"),
                         ("bad", tmp_path / "gone" / "deeper" / "a.txt")):
        (tmp_path / f"{name}-ours").symlink_to(target)
        (tmp_path / f"{name}-shell").symlink_to(target.with_name("b.txt"))
    shell = subprocess.run(["sh", "-c", f"echo new > '{tmp_path / 'ok-shell'}'"])
    assert shell.returncode == 0 and (tmp_path / "store" / "b.txt").read_text() == "new\n"
    atomic_write_text(tmp_path / "ok-ours", "new\n")
    assert (tmp_path / "store" / "a.txt").read_text() == "new\n"
    shell = subprocess.run(["sh", "-c", f"echo new > '{tmp_path / 'bad-shell'}'"],
                           capture_output=True)
    assert shell.returncode != 0 and not (tmp_path / "gone").exists()
    with pytest.raises(OSError) as caught:
        atomic_write_text(tmp_path / "bad-ours", "new\n")
    assert caught.value.errno == errno.ENOENT
    assert caught.value.filename == str(tmp_path / "bad-ours")
    assert not (tmp_path / "gone").exists()


def test_a_set_a_crash_left_aside_between_the_renames_is_restored(tmp_path):
    """A run killed between ``_swap``'s two renames leaves the previous set at
    ``.out.hepbdt-old-*`` and no ``out``: the next run puts it back, byte for byte (with
    the test inverted, the set was deleted as a leftover)."""
    from hepbdt.output_set import OutputSet

    target = tmp_path / "out"
    first = OutputSet(target)
    with first as staging:
        (staging / "model.json").write_text('{"trees": 1}')
        first.commit()
    recorded = {p.name: p.read_bytes() for p in target.iterdir()}
    os.rename(target, tmp_path / ".out.hepbdt-old-abc123")  # the crash between the renames
    with OutputSet(target):
        pass  # entered and left without a commit: the previous set stays
    assert {p.name: p.read_bytes() for p in target.iterdir()} == recorded
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_second_run_is_told_the_folder_is_in_use_not_that_it_cannot_be_written(tmp_path):
    """The lock's refusal is its own message (wrapped as 'cannot be written' it read as a
    permission problem)."""
    from hepbdt.output_set import OutputSet, OutputSetError

    target = tmp_path / "out"
    with OutputSet(target):
        with pytest.raises(OutputSetError) as info:
            with OutputSet(target):
                pass
    assert str(info.value).startswith(f"output folder {target} is in use by another hepbdt run")
    assert "cannot be written" not in str(info.value)


def test_commit_outside_the_with_block_is_refused(tmp_path):
    from hepbdt.output_set import OutputSet

    with pytest.raises(RuntimeError, match="outside its with block"):
        OutputSet(tmp_path / "out").commit()
    assert not (tmp_path / "out").exists()
