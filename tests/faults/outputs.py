"""Faults of output locations, output sets and runs that cannot train."""

from __future__ import annotations

import fcntl
import os
import resource
import shutil
import signal
from pathlib import Path

import numpy as np
import uproot

from hepbdt.cli import main
from tests.faults import DATA, Fault, tiny_config

_HELD: dict[str, object] = {}


def _output_is_a_file(folder: Path) -> list[str]:
    (folder / "out").write_text("my notes")
    return ["train", str(tiny_config(folder))]


def _notes_intact(folder: Path) -> None:
    assert (folder / "out").read_text() == "my notes"


def _foreign_files(folder: Path) -> list[str]:
    (folder / "out").mkdir()
    (folder / "out" / "thesis.tex").write_text("chapter 1")
    return ["train", str(tiny_config(folder))]


def _thesis_intact(folder: Path) -> None:
    assert (folder / "out" / "thesis.tex").read_text() == "chapter 1"
    assert sorted(p.name for p in (folder / "out").iterdir()) == ["thesis.tex"]


def _unwritable(folder: Path) -> list[str]:
    config = tiny_config(folder)
    config.write_text(config.read_text().replace(str(folder / "out"), "/proc/hepbdt-out"))
    return ["train", str(config)]


def _locked(folder: Path) -> list[str]:
    handle = open(folder / ".out.hepbdt-lock", "w")  # another run holds the folder
    handle.write("pid 12345 on elsewhere, since earlier")
    handle.flush()
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _HELD["lock"] = handle
    return ["train", str(tiny_config(folder))]


def _release(folder: Path) -> None:
    handle = _HELD.pop("lock")
    handle.close()
    os.unlink(folder / ".out.hepbdt-lock")
    assert not (folder / "out").exists()


def _train_twice(folder: Path) -> None:
    for name in ("one", "two"):
        (folder / name).mkdir()
        config = tiny_config(folder / name, method=f"n_trees = 3\nmax_depth = 2\nrandom_state = "
                                                   f"{len(name)}")
        if name == "two":
            config.write_text(config.read_text().replace('["HT", "MET_pt", "pt1"]',
                                                         '["HT", "MET_pt", "nJet"]'))
        assert main(["train", str(config), "--no-progress"]) == 0


def _other_runs_scores(folder: Path) -> list[str]:
    _train_twice(folder)
    return ["report", str(folder / "one" / "out" / "model.json"),
            str(folder / "two" / "out" / "scores.root"), "--output", str(folder / "r.html")]


def _scores_of_other_features(folder: Path) -> list[str]:
    _train_twice(folder)
    shutil.copy(folder / "two" / "out" / "scores.root", folder / "loose.root")  # no manifest
    return ["report", str(folder / "one" / "out" / "model.json"), str(folder / "loose.root"),
            "--output", str(folder / "r.html")]


def _no_report(folder: Path) -> None:
    assert not (folder / "r.html").exists()


def _replaced_model(folder: Path) -> list[str]:
    _train_twice(folder)
    shutil.copy(folder / "two" / "out" / "model.json", folder / "one" / "out" / "model.json")
    return ["apply", str(folder / "one" / "out" / "model.json"), str(DATA / "signal.root"),
            "--output", str(folder / "friend.root")]


def _stem_collision(folder: Path) -> list[str]:
    (folder / "b").mkdir()
    shutil.copyfile(DATA / "signal.root", folder / "b" / "signal.root")  # one stem, two files
    _train_twice(folder)
    return ["apply", str(folder / "one" / "out" / "model.json"), str(DATA / "signal.root"),
            str(folder / "b" / "signal.root"), "--output", str(folder / "{stem}_scores.root")]


def _no_friend(folder: Path) -> None:
    assert not list(folder.glob("*_scores.root")) and not (folder / "friend.root").exists()


def _apply_into_folder(folder: Path) -> list[str]:
    _train_twice(folder)
    (folder / "friend.root").mkdir()
    return ["apply", str(folder / "one" / "out" / "model.json"), str(DATA / "signal.root"),
            "--output", str(folder / "friend.root")]


def _one_signal_event(folder: Path) -> list[str]:
    with uproot.open(DATA / "signal.root") as file:
        ht = np.sort(file["Events"]["HT"].array(library="np"))
    config = tiny_config(folder)
    config.write_text(config.read_text().replace('label = "signal"',
                                                 f'label = "signal"\ncut = "HT > {float(ht[-2])!r}"'))
    return ["train", str(config)]


def _nothing_written(folder: Path) -> None:
    assert not (folder / "out").exists()


def _empty_fold(folder: Path) -> list[str]:
    config = tiny_config(folder, split="kfold = 2", top='preselection = "event % 2 == 0"')
    return ["train", str(config)]


def _truncated_root_file(folder: Path) -> list[str]:
    (folder / "signal.root").write_bytes((DATA / "signal.root").read_bytes()[:900_000])
    config = tiny_config(folder)
    config.write_text(config.read_text().replace(str(DATA / "signal.root"),
                                                 str(folder / "signal.root")))
    return ["train", str(config)]


def _file_too_large(folder: Path) -> list[str]:
    # a disk that fills up: writes beyond 60 kB fail (EFBIG) while the outputs are written
    _HELD["sigxfsz"] = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    _HELD["fsize"] = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, _HELD["fsize"][1]))
    return ["train", str(tiny_config(folder, method="n_trees = 3\nmax_depth = 2"))]


def _restore_fsize(folder: Path) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, _HELD.pop("fsize"))
    signal.signal(signal.SIGXFSZ, _HELD.pop("sigxfsz"))
    _nothing_written(folder)


FAULTS = [
    Fault("output-is-a-file", _output_is_a_file, r"out is a file, not a folder", 2, _notes_intact),
    Fault("output-holds-foreign-files", _foreign_files, r"holds files hepbdt did not write "
          r"\(thesis\.tex\)", 2, _thesis_intact),
    Fault("output-not-writable", _unwritable, r"hepbdt-out: cannot be written", 2,
          _nothing_written),
    Fault("output-locked-by-another-run", _locked, r"in use by another hepbdt run \(pid 12345",
          2, _release),
    Fault("report-scores-of-another-model", _other_runs_scores, r"written with a different "
          r"model", 2, _no_report),
    Fault("report-scores-of-other-features", _scores_of_other_features, r"has no branches "
          r"\['pt1'\] for the model's features", 2, _no_report),
    Fault("apply-model-replaced-in-its-set", _replaced_model, r"model\.json is not the file "
          r"this output set", 2, _no_friend),
    Fault("apply-stem-collision", _stem_collision, r"both give the output .*signal_scores\.root",
          2, _no_friend),
    Fault("apply-output-is-a-folder", _apply_into_folder, r"friend\.root is a folder", 2),
    Fault("one-signal-event", _one_signal_event, r"sample has no signal events", 1,
          _nothing_written),
    Fault("kfold-empty-fold", _empty_fold, r"kfold = 2: fold 1 has no events", 1,
          _nothing_written),
    Fault("truncated-root-file", _truncated_root_file, r"signal\.root.*truncated", 2,
          _nothing_written),  # found when the file is opened, before any work
    Fault("disk-full-while-writing", _file_too_large, r"\.tmp.*File too large|File too large",
          1, _restore_fsize),
]
