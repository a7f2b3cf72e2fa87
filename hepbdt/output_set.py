"""An output folder that is whole or absent: staged, locked, swapped in, with a manifest.

:class:`OutputSet` writes a training's files into a staging folder beside the target and,
when every file is written, swaps it in with one atomic rename (Linux ``renameat2``
``RENAME_EXCHANGE``; elsewhere two renames, with the previous set kept until the new one
is in place). A lock beside the target makes a second run into the same folder fail with
a message naming the first. The manifest (``hepbdt-outputs.json``) records the SHA-256 of
every file and of the model that produced them, so :func:`check_model_of` can tell a
score file from another run.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import errno
import fcntl
import fnmatch
import json
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ._util import DeferredSignals, atomic_write_text, current_umask, file_sha256

__all__ = ["OutputSet", "OutputSetError", "RunLock", "hold_outputs", "MANIFEST", "check_model_of",
           "check_output_folder", "check_model_files", "check_unchanged", "check_writable", "file_sha256",
           "recorded_settings"]

MANIFEST = "hepbdt-outputs.json"
MANIFEST_FORMAT = "hepbdt-outputs"


class OutputSetError(OSError):
    """The output folder cannot be written, is in use, or holds files hepbdt did not write."""


class RunLock:
    """One hepbdt run's exclusive hold on an output path: a ``flock`` on the file
    ``.<name>.hepbdt-lock`` beside it, which says who holds it and is removed on release (a
    killed run's file is taken over: its flock went with the process)."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.path = target.parent / f".{target.name}.hepbdt-lock"
        self._fd: int | None = None

    def acquire(self, in_use: Callable[[str], str]) -> None:
        """Take the lock, or raise OutputSetError(``in_use(holder)``) at once when another
        run holds it (``holder``: its pid, host and start)."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
                os.close(fd)
                raise OutputSetError(in_use(holder)) from None
            if _same_file(fd, self.path):
                break
            # the holder unlinked the file between our open and flock: a lock on it locks
            # nothing another run can see (it makes a new file); lock that one instead
            os.close(fd)
        stamp = datetime.datetime.now().isoformat(timespec="seconds")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}".encode(), 0)
        except OSError as exc:
            # a full disk: the lock file goes (it is ours, flocked), and the error names the
            # output (a bare "[Errno 28]" named no file, and the empty lock file stayed)
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            os.close(fd)
            raise OSError(exc.errno, f"{exc.strerror or exc} (writing its lock file "
                          f"{self.path.name})", os.fspath(self.target)) from None
        self._fd = fd

    def release(self) -> None:
        """Remove the lock file and drop the lock (nothing when not held)."""
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        os.close(self._fd)  # closing releases the flock
        self._fd = None


@contextlib.contextmanager
def hold_outputs(paths: list[str], command: str) -> Iterator[None]:
    """A RunLock on every output file of ``command`` for the block: a second run writing any
    of them (two sets renamed into place at once leave files of two models) fails at once,
    naming the run that holds it."""
    with contextlib.ExitStack() as locks:
        for path in sorted({os.path.realpath(p) for p in paths}):
            lock = RunLock(Path(path))
            lock.acquire(lambda holder, path=path: (
                f"{command}: output {path} is being written by another hepbdt run ({holder}); "
                "wait for it or give another output"))
            locks.callback(lock.release)
            _remove_temporaries(Path(path))
        yield


def _remove_temporaries(path: Path) -> None:
    """Remove the temporaries ``_util.atomic_path`` makes beside ``path`` (``.NAME.*.tmp``,
    files or folders), which a run killed while writing it left: whoever holds ``path``'s
    lock is the only writer of it, so they are no run's."""
    shape = re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}\.tmp")  # mkstemp's names
    for left in path.parent.glob(f".{glob_escape(path.name)}.*.tmp"):
        if not shape.fullmatch(left.name):
            continue
        if left.is_dir() and not left.is_symlink():
            shutil.rmtree(left, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                left.unlink()


class OutputSet:
    """``with OutputSet(target) as staging: ...write files into staging...; set.commit()``.

    Entering takes the lock, removes what an interrupted run left beside the target, checks
    that the target is a folder hepbdt may replace, and creates the staging folder (so an
    output location that cannot be written fails before any reading or training). Leaving
    without :meth:`commit` removes the staging folder and keeps the previous set.
    """

    def __init__(self, target: str | os.PathLike) -> None:
        # a link to a folder: the set goes into the folder it names (a link swapped for a
        # new folder left the results beside the place the user looks)
        self.target = Path(os.path.realpath(target))
        self.staging: Path | None = None
        self._run_lock = RunLock(self.target)

    def __enter__(self) -> Path:
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            self._lock()
            self._clean_leftovers()
            self._check_target()
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.hepbdt-staging-",
                                                 dir=self.target.parent))
            # mkdtemp's folder is private (0700): the set keeps the folder's mode it
            # replaces, or the umask's for a new folder, as mkdir gives
            os.chmod(self.staging, self.target.stat().st_mode & 0o7777 if self.target.is_dir()
                     else 0o777 & ~current_umask())
        except OSError as exc:
            self._unlock()
            if isinstance(exc, OutputSetError):
                raise
            raise OutputSetError(f"output folder {self.target}: cannot be written "
                                 f"({exc.strerror or exc})") from None
        return self.staging

    def commit(self, model: str = "model.json", settings: dict[str, Any] | None = None) -> None:
        """Write the manifest into the staging folder and swap it in as the target.
        ``settings``: options a later command rebuilding an output needs (JSON values)."""
        if self.staging is None:
            raise RuntimeError("OutputSet.commit() outside its with block")
        files = {str(p.relative_to(self.staging)): file_sha256(p)
                 for p in sorted(self.staging.rglob("*")) if p.is_file()}
        manifest = {"format": MANIFEST_FORMAT, "format_version": 1,
                    "written": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                    "model": model, "model_sha256": files.get(model), "files": files,
                    "settings": dict(settings or {})}
        atomic_write_text(self.staging / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        try:  # again: a file the user put into the folder meanwhile went with the old set
            self._check_target()
        except OutputSetError as exc:
            # this run's complete outputs stay, beside the folder, under a visible name
            kept = tempfile.mkdtemp(dir=self.target.parent, prefix=(
                f"{self.target.name}.hepbdt-new-{datetime.datetime.now():%Y%m%d-%H%M%S}-"))
            os.rename(self.staging, kept)  # onto the new empty folder
            self.staging = None
            raise OutputSetError(f"{exc} (found when this run's outputs were ready: the "
                                 f"folder was left as it is, and this run's outputs are in "
                                 f"{kept})") from None
        # SIGINT and SIGTERM wait for the swap and the old set's removal, so an interrupt
        # leaves no old set beside the target and is told that the new one is in place
        with DeferredSignals(done=str(self.target)) as held:
            held.hold()
            old = _swap(self.staging, self.target)
            self.staging = None
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        if self.staging is not None:
            shutil.rmtree(self.staging, ignore_errors=True)
            self.staging = None
        self._unlock()

    # -- the lock and the checks ----------------------------------------------------------
    def _lock(self) -> None:
        self._run_lock.acquire(lambda holder: (
            f"output folder {self.target} is in use by another hepbdt run ({holder}); wait "
            "for it or give another --output"))

    def _unlock(self) -> None:
        self._run_lock.release()

    def _clean_leftovers(self) -> None:
        """Remove staging folders of interrupted runs; restore a set a crash left aside."""
        prefix = f".{self.target.name}.hepbdt-"
        for path in self.target.parent.glob(f"{glob_escape(prefix)}*"):
            if path.name.startswith(prefix + "old-") and not self.target.exists():
                os.rename(path, self.target)
            elif path.name.startswith((prefix + "staging-", prefix + "old-")):
                shutil.rmtree(path, ignore_errors=True)

    def _check_target(self) -> None:
        check_output_folder(self.target)


def check_output_folder(target: str | os.PathLike) -> None:
    """OutputSetError unless ``target`` is a folder an output set may replace (nothing is
    written): absent, or a folder holding only what its manifest lists, neither a mount
    point (a mount cannot be renamed: the run failed only after training) nor the current
    folder or one above it (swapped out, the shell stood in a deleted folder)."""
    target = Path(os.path.realpath(target))
    try:
        here = Path(os.getcwd())
    except OSError:
        here = None
    if here is not None and (target == here or target in here.parents):
        raise OutputSetError(f"output folder {target} is the current folder or holds it; "
                             "the set replaces its folder whole: give a new folder, e.g. "
                             "--output results")
    if not target.exists():
        return
    if not target.is_dir():
        raise OutputSetError(f"output folder {target} is a file, not a folder; give "
                             "another --output")
    if _is_mount_point(target):
        raise OutputSetError(f"output folder {target} is a mount point, which the set cannot "
                             "replace; give a folder inside it, e.g. --output "
                             f"{target / 'results'}")
    # every file, link and folder, in every subfolder, must be one the manifest lists (a
    # folder holding listed files): a user's figures/paper_fig1.pdf or summary.txt, matched
    # by name alone, were deleted, and so were a link to the user's data and an empty folder
    listed = set(_manifest_files(target)) | {MANIFEST}
    holding = {str(parent) for name in listed for parent in Path(name).parents}
    foreign = sorted(name for p in target.rglob("*")
                     if (name := str(p.relative_to(target))) not in listed
                     and (p.is_symlink() or not p.is_dir() or name not in holding))
    if foreign:
        shown = ", ".join(foreign[:5]) + (" ..." if len(foreign) > 5 else "")
        raise OutputSetError(f"output folder {target} holds files hepbdt did not write "
                             f"({shown}); they would be replaced: give a new or empty folder")


def _is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point: os.path.ismount, which compares devices and so
    misses a bind mount within one file system (a container's -v folder), or one of the
    mount points /proc/self/mountinfo lists (Linux)."""
    if os.path.ismount(path):
        return True
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return False
    # the fifth field is the mount point, with space, tab, newline and backslash as \ooo
    points = {re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
              for line in lines if len(line.split()) > 4}
    return str(path) in points


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` is still the file at ``path``."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def glob_escape(text: str) -> str:
    """``text`` with glob's special characters escaped."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def _manifest(folder: Path) -> dict[str, Any]:
    """A folder's manifest, or {} when it has none (or none readable)."""
    try:
        doc = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def recorded_settings(path: str | os.PathLike) -> dict[str, Any]:
    """The settings the manifest of ``path``'s output set records ({} when ``path`` is in
    no set, or its set records none)."""
    real = Path(path).resolve()  # a link's target's set, as check_model_of finds it
    if real.name not in _manifest_files(real.parent):
        return {}
    settings = _manifest(real.parent).get("settings")
    return settings if isinstance(settings, dict) else {}


def _manifest_files(folder: Path) -> dict[str, str]:
    """The files a folder's manifest lists, with their SHA-256 ({} without a manifest)."""
    files = _manifest(folder).get("files")
    return files if isinstance(files, dict) else {}


def _swap(staging: Path, target: Path) -> Path | None:
    """Put ``staging`` at ``target``; return where the previous set now is (None if none)."""
    if not target.exists():
        os.rename(staging, target)
        return None
    if _exchange(staging, target):
        return staging  # the old set, now under the staging name
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.hepbdt-old-", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)  # a crash here: the next run restores it (_clean_leftovers)
    os.rename(staging, target)
    return old


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically with Linux's renameat2(RENAME_EXCHANGE); False if unsupported."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), os.fspath(b))


def check_model_of(path: str | os.PathLike, model_path: str | os.PathLike) -> None:
    """Refuse ``path`` (a file of an output set) when that set's manifest says another model
    produced it than the file at ``model_path``; silent when there is no manifest.

    For a k-fold model the fold files count too: the manifests of two k-fold trainings of
    one configuration are byte for byte the same (k, the event expression, the fold file
    names, the features), so each fold file the set recorded (``<model>_fold<i>.json``)
    must be, beside ``model_path``, the file the set recorded."""
    manifest = _manifest(Path(path).resolve().parent)
    expected = manifest.get("model_sha256")
    if not isinstance(expected, str):
        return
    actual = file_sha256(model_path)
    if actual != expected:
        raise OutputSetError(f"{path} was written with a different model than {model_path} "
                             f"(its {MANIFEST} records model sha256 {expected[:12]}..., this "
                             f"model is {actual[:12]}...); give the model of the same run")
    recorded = _manifest_files(Path(path).resolve().parent)
    model_name = manifest.get("model")
    stem = Path(model_name).stem if isinstance(model_name, str) else "model"
    folds = sorted(name for name in recorded if "/" not in name
                   and fnmatch.fnmatchcase(name, f"{glob_escape(stem)}_fold*.json"))
    for name in folds:
        fold = Path(model_path).parent / name
        fold_sha = file_sha256(fold) if fold.is_file() else None
        if fold_sha != recorded[name]:
            have = "is missing" if fold_sha is None else f"is {fold_sha[:12]}..."
            raise OutputSetError(
                f"{path} was written with a different k-fold model than {model_path}: its "
                f"{MANIFEST} records fold model {name} with sha256 {str(recorded[name])[:12]}..., "
                f"but {fold} {have} (the k-fold manifests of two trainings can be alike, their "
                "fold models are not); give the model folder of the same run")


def check_unchanged(path: str | os.PathLike) -> None:
    """Refuse a file of an output set that differs from what the set's manifest recorded
    (e.g. a model.json copied in from another run); silent when it is not listed."""
    path = Path(path)
    real = path.resolve()
    expected = _manifest_files(real.parent).get(real.name)
    if expected is not None and file_sha256(path) != expected:
        raise OutputSetError(f"{path} is not the file this output set's {MANIFEST} recorded "
                             "(it was replaced or changed after hepbdt wrote it); the scores "
                             "and reports beside it belong to another model")


def check_writable(path: str | os.PathLike) -> None:
    """Refuse, before any work, an output file that cannot be written: a folder, a device,
    a FIFO or a socket at its place, a parent that is a file or read-only, or a file of an
    output set (``apply``, ``export`` and ``report`` replaced a training's scores.root or
    summary.txt, and its manifest then no longer matched)."""
    path = Path(os.path.abspath(path))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputSetError(f"output {path}: its folder cannot be made ({exc.strerror or exc})"
                             ) from None
    if path.is_dir():
        raise OutputSetError(f"output {path} is a folder; give a file name")
    if path.exists() and not path.is_file():  # renaming over it would replace a device
        raise OutputSetError(f"output {path} exists and is not a regular file (a device, FIFO "
                             "or socket); give a file name")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise OutputSetError(f"output {path}: the folder {path.parent} is not writable")
    try:  # what access() does not know: a file system without files (/proc), root on a read-only mount
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=path.parent)
    except OSError as exc:
        raise OutputSetError(f"output {path}: no file can be written in {path.parent} "
                             f"({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
    for folder in (path.parent, path.parent.parent):  # a set's file, or one of its figures
        name = str(path.relative_to(folder))
        if name == MANIFEST or name in _manifest_files(folder):
            raise OutputSetError(f"output {path} is a file of the output set in {folder} (its "
                                 f"{MANIFEST} lists it): writing it would break the set; give "
                                 "a file outside it")


def check_model_files(path: str | os.PathLike) -> None:
    """A model file, and a k-fold manifest's fold files beside it, as their output set's
    manifest recorded them (:func:`check_unchanged`)."""
    check_unchanged(path)
    for fold in sorted(Path(path).parent.glob(f"{glob_escape(Path(path).stem)}_fold*.json")):
        check_unchanged(fold)
