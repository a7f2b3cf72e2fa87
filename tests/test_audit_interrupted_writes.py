"""Audit EY (2026-12-05): nothing lost or half-written when a write fails or is interrupted
part way. Each test makes a writer fail (a full disk, raised in the middle) or delivers a
signal in the middle, in-process, and checks the files against their bytes before
(SHA-256) and the folder against its listing: the previous output whole, no temporaries."""

from __future__ import annotations

import errno
import hashlib
import os
import signal

import numpy as np
import pytest

import hepbdt
from hepbdt import BDTClassifier, KFoldModel


def _digests(folder) -> dict[str, str]:
    """Every entry of ``folder`` (temporaries and lock files too) and its bytes' SHA-256."""
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()
            if (folder / name).is_file() else "<folder>" for name in os.listdir(folder)}


@pytest.fixture(scope="module")
def events():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 0).astype(int)
    return X, y, np.arange(300)


def _kfold(events, n_trees: int) -> KFoldModel:
    X, y, event = events
    return KFoldModel([BDTClassifier(n_trees=n_trees, max_depth=2).fit(X[event % 3 != i],
                                                                       y[event % 3 != i])
                       for i in range(3)], by="event")


def _brute_force_scores(models, X, event) -> np.ndarray:
    """Each event scored by its fold's model, one row at a time."""
    return np.array([models[int(e) % 3].decision_function(X[j:j + 1])[0]
                     for j, e in enumerate(event.tolist())])


def _saved_and_new(tmp_path, events):
    """A 3-tree k-fold model saved at model.json, its folder's digests, and a 5-tree one."""
    path = tmp_path / "model.json"
    old = _kfold(events, 3)
    old.save(path)
    return path, old, _digests(tmp_path), _kfold(events, 5)


def test_kfold_save_failing_part_way_leaves_the_previous_model(tmp_path, events):
    """A full disk at fold 1 had renamed the new fold 0 over the old one under the old
    manifest, which then refused it: the previous model no longer loaded."""
    X, _, event = events
    path, old, before, new = _saved_and_new(tmp_path, events)

    def full_disk(where, *args, **kwargs):
        with open(where, "w") as handle:
            handle.write('{"format": ')  # a partial file, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device", os.fspath(where))

    new.models[1].save = full_disk
    with pytest.raises(OSError, match="No space left"):
        new.save(path)
    assert _digests(tmp_path) == before  # no file replaced, no temporary or lock left
    loaded = hepbdt.load_model(path)
    np.testing.assert_array_equal(loaded.decision_function(X, event),
                                  _brute_force_scores(old.models, X, event))


@pytest.fixture
def sigint_raises():
    """Python's own SIGINT handler for the test (pytest-xdist's workers ignore SIGINT, so a
    raised signal did nothing there and the tests saw no KeyboardInterrupt)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_kfold_save_interrupted_while_writing_leaves_the_previous_model(tmp_path, events,
                                                                       sigint_raises):
    """SIGINT while fold 1 is written: the previous model, whole (fold 0 was already new)."""
    X, _, event = events
    path, old, before, new = _saved_and_new(tmp_path, events)
    save = new.models[1].save

    def interrupted(where, *args, **kwargs):
        signal.raise_signal(signal.SIGINT)
        return save(where, *args, **kwargs)

    new.models[1].save = interrupted
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    assert _digests(tmp_path) == before
    np.testing.assert_array_equal(hepbdt.load_model(path).decision_function(X, event),
                                  _brute_force_scores(old.models, X, event))


def test_kfold_save_interrupted_between_renames_puts_the_new_model_in_place(
        tmp_path, events, monkeypatch, sigint_raises):
    """SIGINT after the first rename waits for the others: the new model, whole."""
    X, _, event = events
    path = tmp_path / "model.json"
    _kfold(events, 3).save(path)
    new = _kfold(events, 5)
    replace = os.replace
    renamed = []

    def replace_then_interrupt(source, target):
        replace(source, target)
        if os.path.dirname(target) != os.fspath(tmp_path):
            return  # a fold model's own save, into its private temporary folder
        renamed.append(os.path.basename(target))
        if len(renamed) == 1:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        new.save(path)
    monkeypatch.undo()
    assert sorted(renamed) == ["model.json", *(f"model_fold{i}.json" for i in range(3))]
    assert renamed[-1] == "model.json"  # the manifest last
    assert sorted(os.listdir(tmp_path)) == sorted(renamed)
    np.testing.assert_array_equal(hepbdt.load_model(path).decision_function(X, event),
                                  _brute_force_scores(new.models, X, event))


@pytest.mark.parametrize("command", ["export", "train"])
def test_a_full_disk_when_taking_the_lock_names_the_output_and_leaves_no_lock_file(
        tmp_path, monkeypatch, capsys, command):
    """Writing the lock file's holder line on a full disk: the message was a bare
    "[Errno 28] No space left on device", and the empty .NAME.hepbdt-lock stayed."""
    from hepbdt.cli import main
    from hepbdt.output_set import OutputSet

    def full_disk(fd, data, offset):
        raise OSError(errno.ENOSPC, "No space left on device")

    model = tmp_path / "model.json"
    BDTClassifier(n_trees=2, max_depth=1).fit([[0.0], [1.0]], [0, 1]).save(model)
    out = tmp_path / "out"
    monkeypatch.setattr(os, "pwrite", full_disk)
    if command == "export":
        assert main(["export", os.fspath(model), "--onnx", os.fspath(out)]) == 1
        message = capsys.readouterr().err
        assert message.startswith(f"hepbdt: error: {out}: No space left on device")
    else:
        with pytest.raises(OSError, match="No space left") as raised:
            OutputSet(out).__enter__()
        assert str(out) in str(raised.value)
    assert os.listdir(tmp_path) == ["model.json"]


def test_report_removes_a_killed_runs_temporary_and_takes_the_lock(tmp_path, monkeypatch,
                                                                  capsys):
    """`hepbdt report` killed while writing left `.report.html.<8>.tmp` for good (apply and
    export remove theirs when they next write the file); a second report of the same file
    now fails at once, as apply and export do."""
    import hepbdt.analysis
    from hepbdt._util import atomic_write_text
    from hepbdt.cli import main
    from hepbdt.output_set import RunLock

    model, scores, out = tmp_path / "model.json", tmp_path / "scores.root", tmp_path / "r.html"
    model.write_text("{}")
    scores.write_bytes(b"root")
    left = tmp_path / ".r.html.k2x_9q0z.tmp"  # a name mkstemp gives, as a kill -9 leaves it
    left.write_text("<html>half")

    def report_from_scores(model_path, scores_path, output, **options):
        atomic_write_text(output, "<html>whole</html>")
        return output

    monkeypatch.setattr(hepbdt.analysis, "report_from_scores", report_from_scores)
    assert main(["report", str(model), str(scores), "-o", str(out)]) == 0
    assert sorted(os.listdir(tmp_path)) == ["model.json", "r.html", "scores.root"]
    lock = RunLock(out)
    lock.acquire(lambda holder: holder)
    try:
        assert main(["report", str(model), str(scores), "-o", str(out)]) == 2
    finally:
        lock.release()
    assert "is being written by another hepbdt run" in capsys.readouterr().err


def test_dask_apply_names_the_outputs_other_tasks_wrote_when_one_fails(tmp_path, monkeypatch):
    """Each output file of hepbdt.dask.apply is its own task: when the second of three
    failed, the other two held the new scores and the error did not say so."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    import hepbdt.dask._apply as dask_apply
    from hepbdt.io.errors import InputError

    from .ntuples import write_ttree

    rng = np.random.default_rng(3)
    for i in range(3):
        write_ttree(tmp_path / f"in{i}.root", "t", {"a": rng.normal(size=50)})
    model = tmp_path / "model.json"
    a = rng.normal(size=200)
    BDTClassifier(n_trees=2, max_depth=1).fit({"a": a}, (a > 0).astype(int)).save(model)
    inputs = [str(tmp_path / f"in{i}.root") for i in range(3)]
    output = str(tmp_path / "{stem}_s.root")
    write = dask_apply._write_output

    def failing(job, temporary, trees, *args):
        if "in1.root" in str(trees):
            raise InputError("in1.root: a corrupt basket (simulated)")
        return write(job, temporary, trees, *args)

    monkeypatch.setattr(dask_apply, "_write_output", failing)
    with LocalCluster(processes=False, n_workers=1, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        with pytest.raises(InputError) as raised:
            dask_apply.apply(model, inputs, output, client=client)
    written = sorted(name for name in os.listdir(tmp_path) if name.endswith("_s.root"))
    assert written == ["in0_s.root", "in2_s.root"]
    message = str(raised.value)
    assert message.startswith("in1.root: a corrupt basket (simulated); each output is written")
    assert f"2 of 3 ({tmp_path / 'in0_s.root'}, {tmp_path / 'in2_s.root'}) hold the new" in message
    assert f"{tmp_path / 'in1_s.root'} their previous contents" in message
