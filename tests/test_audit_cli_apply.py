"""Audit of ``hepbdt apply``/``export``: outputs that are the model, friend branches that
clash with the input's, the model's SHA-256 in every output, a set of outputs renamed
together (an interrupt waits, a failed rename says which files are new), SIGTERM cleans up,
and usage mistakes exit with status 2.

Expected scores are computed independently: uproot reads the features, numpy stacks them,
the model's own ``decision_function`` scores them.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import uproot

import hepbdt
from hepbdt.cli import main
from hepbdt.kfold import KFoldModel
from tests.ntuples import KINDS, write_ntuple, write_ttree

ROOT = Path(__file__).resolve().parents[1]


def _ntuple(path: Path, n: int, seed: int, **extra: np.ndarray) -> Path:
    rng = np.random.default_rng(seed)
    write_ttree(path, "Events", {"x1": rng.normal(size=n).astype(np.float32),
                                 "x2": rng.normal(size=n), "event": np.arange(n) + 1000 * seed,
                                 **extra})
    return path


def _fit(seed: int) -> hepbdt.BDTClassifier:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(size=400) > 0).astype(int)
    return hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(pd.DataFrame(X, columns=["x1", "x2"]), y)


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("audit")
    _fit(1).save(folder / "old.json")
    _fit(2).save(folder / "new.json")
    KFoldModel([_fit(3), _fit(4)], by="event").save(folder / "kf.json")
    return {"folder": folder, "old": folder / "old.json", "new": folder / "new.json",
            "kf": folder / "kf.json", "a": _ntuple(folder / "a.root", 120, 1),
            "b": _ntuple(folder / "b.root", 80, 2)}


def _sha(*paths: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()


def _title(path: Path) -> str:
    with uproot.open(path) as file:
        return file["Events"].title


def _features(path: Path) -> np.ndarray:
    with uproot.open(path) as file:
        arrays = file["Events"].arrays(["x1", "x2"], library="np")
    return np.column_stack([arrays["x1"], arrays["x2"]]).astype(np.float32)


def test_an_output_that_is_the_model_file_is_refused(setup, tmp_path, capsys):
    # `hepbdt apply model.json in.root -o model.json` replaced the model with a ROOT file, exit 0
    model = tmp_path / "model.json"
    model.write_bytes(setup["old"].read_bytes())
    assert main(["apply", str(model), str(setup["a"]), "-o", str(model), "--no-progress"]) == 2
    assert "is one of the model files" in capsys.readouterr().err
    assert model.read_bytes() == setup["old"].read_bytes()
    # a k-fold manifest's fold files are the model's too
    fold = setup["folder"] / "kf_fold1.json"
    before = fold.read_bytes()
    assert main(["apply", str(setup["kf"]), str(setup["a"]), "-o", str(fold),
                 "--no-progress"]) == 2
    assert fold.read_bytes() == before


def test_an_input_given_with_and_without_its_tree_name_is_refused(setup, tmp_path, capsys):
    """A glob of the folder beside one of its files named with its tree wrote a friend tree
    of 1,500 entries for inputs of 1,000: attached to the chain, b's entries got a's scores."""
    from hepbdt.cli import main

    folder = setup["folder"]
    inputs = [str(folder / "[ab].root"), f"{setup['a']}:Events"]
    out = tmp_path / "friends.root"
    assert main(["apply", str(setup["old"]), *inputs, "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"the file {str(setup['a'])!r} is given twice with tree 'Events'" in err, err
    assert not out.exists()


def test_missing_values_the_training_never_had_are_noted(setup, tmp_path):
    """NaN in a feature the training had none of went silently to every split's default
    side, that of +inf (log(HT) at HT = 0 scored as the largest HT); apply says how many."""
    import warnings

    from hepbdt.scoring import MissingValueWarning

    x1 = np.random.default_rng(5).normal(size=50).astype(np.float32)
    x1[[3, 7, 11]] = np.nan
    path = _ntuple(tmp_path / "nan.root", 50, 5, x1=x1)
    with pytest.warns(MissingValueWarning, match=r"\('x1' in 3 events\)"):
        hepbdt.apply(setup["old"], str(path), tmp_path / "f.root")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 2)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    X[::10, 0] = np.nan  # a training with missing values: their side was learnt
    hepbdt.BDTClassifier(n_trees=3).fit(pd.DataFrame(X, columns=["x1", "x2"]), y).save(
        tmp_path / "nan.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingValueWarning)
        hepbdt.apply(tmp_path / "nan.json", str(path), tmp_path / "g.root")


def test_apply_again_replaces_its_friend_of_a_tree_in_a_folder(setup, tmp_path):
    """The friend of 'dir/Events' is written as dir/Events; a second run refused to replace
    it (the folder's own key read as something apply does not write)."""
    write_ttree(tmp_path / "in.root", "dir/Events", {"x1": np.arange(30, dtype=np.float32),
                                                     "x2": np.arange(30, dtype=np.float64)})
    for _ in range(2):
        hepbdt.apply(setup["old"], f"{tmp_path / 'in.root'}:dir/Events", tmp_path / "f.root")
    assert uproot.open(tmp_path / "f.root")["dir/Events"].num_entries == 30
    with uproot.update(tmp_path / "f.root") as f:
        f["dir/notes"] = "a user's object beside the friend tree"
    with pytest.raises(Exception, match="holds what apply does not write"):
        hepbdt.apply(setup["old"], f"{tmp_path / 'in.root'}:dir/Events", tmp_path / "f.root")


def test_usage_mistakes_of_apply_exit_with_status_2(setup, tmp_path, capsys):
    for output in (str(setup["a"]), str(tmp_path / "{nope}.root")):  # both gave status 1
        before = setup["a"].read_bytes()
        assert main(["apply", str(setup["old"]), str(setup["a"]), "-o", output,
                     "--no-progress"]) == 2
        assert capsys.readouterr().err.startswith("hepbdt: error:")
        assert setup["a"].read_bytes() == before


@pytest.mark.parametrize("options, clash", [(["--branch", "x1"], "x1"),
                                            (["--branch", "event"], "event"),
                                            ([], "entry")])
def test_friend_branches_named_as_input_branches_are_refused(setup, tmp_path, capsys, options,
                                                             clash):
    # a friend branch x1 beside the input's x1: reading x1 gave the input's, not the score
    extra = {"entry": np.arange(10, dtype=np.int32) * 7} if clash == "entry" else {}
    source = _ntuple(tmp_path / "in.root", 10, 5, **extra)
    out = tmp_path / "friend.root"
    assert main(["apply", str(setup["old"]), str(source), "-o", str(out), *options,
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"already has branches named ['{clash}']" in err and not out.exists()
    # the identifier may be the input's own event branch
    assert main(["apply", str(setup["old"]), str(source), "-o", str(out), "--event", "event",
                 "--no-progress"]) == 0


def test_every_output_records_the_model_sha256(setup, tmp_path):
    out = str(tmp_path / "{stem}_scores.root")
    inputs = [str(setup["a"]), str(setup["b"])]
    assert main(["apply", str(setup["old"]), *inputs, "-o", out, "--no-progress"]) == 0
    for name in ("a", "b"):
        path = tmp_path / f"{name}_scores.root"
        assert _title(path) == f"hepbdt scores (bdt_score); model sha256 {_sha(setup['old'])}"
        with uproot.open(path) as file:
            tree = file["Events"]
            assert tree.num_entries == len(_features(setup[name]))
            scores = tree["bdt_score"].array(library="np")
        np.testing.assert_array_equal(scores, hepbdt.load_model(setup["old"])
                                      .decision_function(_features(setup[name])))
    # a k-fold manifest: its bytes, then its fold files' (two trainings' manifests can agree)
    folds = [setup["folder"] / f"kf_fold{i}.json" for i in range(2)]
    assert main(["apply", str(setup["kf"]), *inputs, "-o", out, "--no-progress"]) == 0
    assert _title(tmp_path / "a_scores.root").endswith(f"model sha256 {_sha(setup['kf'], *folds)}")
    # in memory: the JSON its save() writes, the file's SHA-256
    hepbdt.apply(hepbdt.load_model(setup["new"]), setup["a"], tmp_path / "mem.root")
    assert _title(tmp_path / "mem.root").endswith(f"model sha256 {_sha(setup['new'])}")


def _two_outputs(setup, tmp_path) -> tuple[list[str], list[Path]]:
    out = str(tmp_path / "{stem}_scores.root")
    argv = [str(setup["a"]), str(setup["b"]), "-o", out, "--no-progress"]
    assert main(["apply", str(setup["old"]), *argv]) == 0
    return argv, [tmp_path / "a_scores.root", tmp_path / "b_scores.root"]


def test_a_second_apply_writing_an_output_in_use_fails_and_changes_nothing(setup, tmp_path,
                                                                          capsys):
    """Two applies renaming their sets into place at once could leave a set of files of two
    models; the second fails at once (an error line naming the first run), before any file
    changes; once the first is done, the lock files are gone and apply works again."""
    from hepbdt.output_set import RunLock

    argv, outputs = _two_outputs(setup, tmp_path)
    before = [p.read_bytes() for p in outputs]
    other = RunLock(outputs[1])  # another run writing b_scores.root (its own open file)
    other.acquire(lambda holder: "unexpected: the lock was held already")
    try:
        assert main(["apply", str(setup["new"]), *argv]) == 2  # as a folder in use for train
    finally:
        other.release()
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: error: apply: output") and "b_scores.root" in err
    assert f"pid {os.getpid()}" in err and "Traceback" not in err
    assert [p.read_bytes() for p in outputs] == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_scores.root", "b_scores.root"]
    assert main(["apply", str(setup["new"]), *argv]) == 0
    assert all(_title(p).endswith(_sha(setup["new"])) for p in outputs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_scores.root", "b_scores.root"]


def test_an_interrupt_during_the_renames_leaves_the_whole_new_set(setup, tmp_path, capsys,
                                                                  monkeypatch):
    argv, outputs = _two_outputs(setup, tmp_path)
    real_replace = os.replace

    def replace_then_interrupt(src, dst):  # Ctrl-C just after the first output is in place
        real_replace(src, dst)
        if Path(dst) in outputs:  # not a rename of Numba's cache, compiling meanwhile
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    # Ctrl-C's own handler: an earlier test of the same worker (Dask's) can leave SIGINT
    # ignored, which the held signals then honour (nothing is raised)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["apply", str(setup["new"]), *argv]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.undo()
    # said so: the interrupt was held until the whole new set was in place
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: interrupted after its outputs were in place (")
    assert all(str(p) in err for p in outputs) and "this run's results" in err
    new = _sha(setup["new"])
    assert [_title(p).endswith(new) for p in outputs] == [True, True]  # before: one old, one new
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_scores.root", "b_scores.root"]


def test_an_export_writing_a_file_in_use_fails_and_writes_nothing(setup, tmp_path, capsys):
    from hepbdt.output_set import RunLock

    files = [tmp_path / "m.onnx", tmp_path / "m.weights.xml"]
    other = RunLock(files[1])
    other.acquire(lambda holder: "unexpected: the lock was held already")
    try:
        assert main(["export", str(setup["new"]), "--onnx", str(files[0]), "--tmva",
                     str(files[1])]) == 2
    finally:
        other.release()
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: error: export: output") and "m.weights.xml" in err
    assert list(tmp_path.iterdir()) == []


def _undated(path: Path) -> bytes:
    """A file's bytes without the TMVA XML's date of writing (two exports of one model differ
    there when a second passes between them)."""
    return re.sub(rb'<Info name="Date" value="[^"]*"/>', b"", path.read_bytes())


def test_an_interrupt_during_the_export_renames_leaves_the_whole_new_set(setup, tmp_path,
                                                                         capsys, monkeypatch):
    # `hepbdt export --onnx --tmva`, interrupted between its renames, left one file of the
    # new model beside one of the old
    def export(model: str, folder: Path) -> list[Path]:
        files = [folder / "m.onnx", folder / "m.weights.xml"]
        main(["export", str(setup[model]), "--onnx", str(files[0]), "--tmva", str(files[1])])
        return files
    reference = tmp_path / "new"
    reference.mkdir()
    new = [_undated(p) for p in export("new", reference)]
    outputs = export("old", tmp_path)
    assert [_undated(p) != b for p, b in zip(outputs, new, strict=True)] == [True, True]
    real_replace = os.replace

    def replace_then_interrupt(src, dst):  # Ctrl-C just after the first file is in place
        real_replace(src, dst)
        if Path(dst) in outputs:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(os, "replace", replace_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["export", str(setup["new"]), "--onnx", str(outputs[0]), "--tmva",
                     str(outputs[1])]) == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: interrupted after its outputs were in place (")
    assert all(str(p) in err for p in outputs)
    assert [_undated(p) == b for p, b in zip(outputs, new, strict=True)] == [True, True]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "m.weights.xml", "new"]


def test_a_rename_that_fails_part_way_says_which_outputs_are_new(setup, tmp_path, capsys,
                                                                 monkeypatch):
    argv, outputs = _two_outputs(setup, tmp_path)
    real_replace = os.replace
    calls = []

    def replace_once(src, dst):
        if Path(dst) not in outputs:  # Numba's cache
            return real_replace(src, dst)
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_once)
    assert main(["apply", str(setup["new"]), *argv]) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert err.count("hepbdt: error:") == 1 and "Traceback" not in err
    # the last output is renamed first: b's file is new, a's is the previous one
    assert f"1 of 2 ({outputs[1]}) hold the new scores" in err
    assert f"{outputs[0]} their previous contents" in err
    assert _title(outputs[1]).endswith(_sha(setup["new"]))
    assert _title(outputs[0]).endswith(_sha(setup["old"]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_scores.root", "b_scores.root"]


def test_sigterm_while_writing_removes_the_temporaries(setup, tmp_path):
    # SIGTERM's default action ended the process with the temporaries left in the folder
    argv = ["apply", str(setup["old"]), str(setup["a"]), "-o", str(tmp_path / "o.root"),
            "--no-progress"]
    code = ("import os, signal, sys\n"
            "import hepbdt.scoring as scoring\n"
            "real = scoring._write_output\n"
            "def write(*args):\n"
            "    real(*args)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "scoring._write_output = write\n"
            "from hepbdt.cli import main\n"
            f"sys.exit(main({argv!r}))\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 143, run.stderr
    assert run.stderr.strip() == "hepbdt: terminated"
    assert list(tmp_path.iterdir()) == []


def test_export_names_the_fold_file_that_cannot_be_written(setup, tmp_path, capsys):
    # the error named the hidden temporary (.x_fold1.h.abc.tmp: Is a directory)
    (tmp_path / "x_fold1.h").mkdir()
    assert main(["export", str(setup["kf"]), "--cpp", str(tmp_path / "x.h")]) == 2
    err = capsys.readouterr().err
    assert "x_fold1.h is a folder" in err and ".tmp" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x_fold1.h"]


@pytest.mark.parametrize("given, expected", [
    ([], ["namespace my_bdt {"]),
    (["--namespace", "tagger"], ["namespace tagger {"]),
])
def test_export_names_the_cpp_namespace_after_the_header(setup, tmp_path, given, expected):
    # the exports audit (2026-12-02): the command named it after its temporary file
    # (hepbdt_model), so README's my_bdt::evaluate did not compile
    assert main(["export", str(setup["old"]), "--cpp", str(tmp_path / "my_bdt.h"), *given]) == 0
    assert expected[0] in (tmp_path / "my_bdt.h").read_text()


def test_export_gives_each_fold_header_its_own_namespace_and_guard(setup, tmp_path):
    for given, names in (([], ["x_fold0", "x_fold1"]), (["--namespace", "t"], ["t_fold0", "t_fold1"])):
        assert main(["export", str(setup["kf"]), "--cpp", str(tmp_path / "x.h"), *given]) == 0
        texts = [(tmp_path / f"x_fold{i}.h").read_text() for i in range(2)]
        for text, name in zip(texts, names, strict=True):
            assert f"namespace {name} {{" in text
        guards = [next(line for line in t.splitlines() if line.startswith("#ifndef")) for t in texts]
        assert guards[0] != guards[1]
        for i in range(2):
            (tmp_path / f"x_fold{i}.h").unlink()


@pytest.mark.parametrize("task, y, names", [
    ("classification", np.array([0, 1, 0, 1, 1]), ["pt", "target"]),
    ("regression", np.arange(5.0) + 0.5, ["label", "classID"])])
def test_features_named_as_bookkeeping_branches_read_back_as_written(tmp_path, task, y, names):
    # a classification feature "target" made read_scores see a regression (y = the feature)
    from hepbdt.io import Dataset
    from hepbdt.io.writers import read_scores, write_scores

    X = np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32)
    data = Dataset(X, y=y, w=np.ones(5), feature_names=names, sample_names=["s"],
                   sample_index=np.zeros(5, int), event=np.arange(5), task=task)
    write_scores(tmp_path / "s.root", data, np.arange(5.0))
    for feature_names in (None, names):
        back, scores = read_scores(tmp_path / "s.root", "TestTree", feature_names)
        assert back.task == task and list(scores) == ["bdt_score"]
        np.testing.assert_array_equal(back.X, X)
        np.testing.assert_array_equal(back.y, y)


def test_outputs_that_apply_export_or_report_did_not_write_are_not_replaced(setup, tmp_path,
                                                                          capsys):
    """apply -o over a data ntuple replaced it with a friend tree, and apply, export and
    report over a training's files (listed in its hepbdt-outputs.json) broke the set; a
    friend file apply wrote is replaced again."""
    ntuple = tmp_path / "other_sample.root"
    ntuple.write_bytes(setup["b"].read_bytes())
    assert main(["apply", str(setup["old"]), str(setup["a"]), "-o", str(ntuple),
                 "--no-progress"]) == 2
    assert "holds what apply does not write" in capsys.readouterr().err
    assert ntuple.read_bytes() == setup["b"].read_bytes()
    friend = tmp_path / "friend.root"
    for _ in range(2):  # the second run replaces the first's friend file
        assert main(["apply", str(setup["old"]), str(setup["a"]), "-o", str(friend),
                     "--no-progress"]) == 0
    from hepbdt.output_set import OutputSet

    run = tmp_path / "run"
    out = OutputSet(run)
    with out as staging:
        (staging / "scores.root").write_bytes(b"scores")
        (staging / "summary.txt").write_text("hepbdt: summary")
        out.commit()
    for argv in (["apply", str(setup["old"]), str(setup["a"]), "-o", str(run / "scores.root")],
                 ["export", str(setup["old"]), "--cpp", str(run / "summary.txt")],
                 ["export", str(setup["old"]), "--cpp", str(run / "hepbdt-outputs.json")]):
        assert main([*argv, "--no-progress"] if argv[0] == "apply" else argv) == 2
        assert "is a file of the output set" in capsys.readouterr().err
    assert (run / "scores.root").read_bytes() == b"scores"
    assert (run / "summary.txt").read_text() == "hepbdt: summary"


def test_output_tree_over_two_trees_of_other_names_is_refused(setup, tmp_path, capsys):
    # the ROOT-reading audit (2026-12-02): --output-tree wrote TreeS's scores then TreeB's into
    # one tree, which AddFriend on TreeB read as TreeB's (1,397 events passing a cut, not 1,057)
    both = tmp_path / "both.root"
    rng = np.random.default_rng(0)
    with uproot.recreate(both) as file:  # TTrees, as TMVA's TreeS and TreeB
        for name, n in (("TreeS", 30), ("TreeB", 20)):
            write_ttree(file, name, {"x1": rng.normal(size=n).astype(np.float32),
                                     "x2": rng.normal(size=n)})
    out = tmp_path / "f.root"
    assert main(["apply", str(setup["old"]), f"{both}:TreeS", f"{both}:TreeB", "--output", str(out),
                 "--output-tree", "scores"]) == 2
    assert "a friend of neither tree alone" in capsys.readouterr().err and not out.exists()
    # without it each tree gets its own friend tree, entry for entry
    assert main(["apply", str(setup["old"]), f"{both}:TreeS", f"{both}:TreeB", "--output",
                 str(out)]) == 0
    model = hepbdt.load_model(setup["old"])
    with uproot.open(out) as friends, uproot.open(both) as inputs:
        for name in ("TreeS", "TreeB"):
            X = pd.DataFrame(inputs[name].arrays(["x1", "x2"], library="np"))
            np.testing.assert_array_equal(friends[name]["bdt_score"].array(library="np"),
                                          model.decision_function(X))


@pytest.mark.parametrize("kind", KINDS)
def test_apply_replaces_no_ntuple_of_few_branches(setup, tmp_path, capsys, kind):
    # an analysis ntuple of two branches passed the branch count and was replaced
    out = tmp_path / "mine.root"
    write_ntuple(out, "Events", {"mjj": np.arange(5.0), "xsec_weight": np.ones(5)}, kind)
    before = out.read_bytes()
    assert main(["apply", str(setup["old"]), str(setup["a"]), "--output", str(out)]) == 2
    assert "not titled as its friend trees" in capsys.readouterr().err
    assert out.read_bytes() == before
    friend = tmp_path / "friend.root"  # a friend file apply wrote is replaced, as before
    for _ in range(2):
        assert main(["apply", str(setup["old"]), str(setup["a"]), "--output", str(friend)]) == 0


def test_inspect_prints_cuts_that_read_back_as_the_model_s(setup, capsys):
    # the printed-numbers audit: cuts printed with 6 digits (btag1 < 0.372192 for 0.3721923828125)
    # sent an event at the printed value the other way from the model
    assert main(["inspect", str(setup["old"]), "--tree", "0"]) == 0
    out = capsys.readouterr().out
    model = hepbdt.load_model(setup["old"])
    forest = model.forest_
    first = int(forest.tree_offsets[0])
    stored = {float(t) for t in forest.threshold[first:int(forest.tree_offsets[1])]
              if np.isfinite(t)}
    printed = {float(v) for v in re.findall(r" < (\S+):", out)}
    assert printed and printed <= stored


def test_export_warnings_are_note_lines(tmp_path, capsys):
    # the printed-numbers audit: a format's warning came out as Python's, with a source line
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    X[::7, 0] = np.nan
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, (rng.random(400) < 0.5).astype(int))
    model.save(tmp_path / "m.json")
    assert main(["export", str(tmp_path / "m.json"), "--tmva", str(tmp_path / "m.weights.xml")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: note: ") and "-999" in err and "Warning" not in err


def test_inspect_prints_the_base_score_whole(tmp_path, capsys):
    """A regression's base score of 9999.9037 was printed 9999.9 (six digits): the number
    printed now reads back as the stored one, for one score and per class."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    model = hepbdt.BDTRegressor(n_trees=2, max_depth=2).fit(X, 9999.9 + 0.01 * X[:, 0]
                                                             + 0.001 * rng.random(300))
    model.save(tmp_path / "r.json")
    assert main(["inspect", str(tmp_path / "r.json")]) == 0
    printed = float(re.search(r"base score (\S+)", capsys.readouterr().out).group(1))
    assert printed == float(hepbdt.load_model(tmp_path / "r.json").forest_.base_score)
    y = np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]
    hepbdt.BDTClassifier(n_trees=2, max_depth=2).fit(X, y).save(tmp_path / "c.json")
    assert main(["inspect", str(tmp_path / "c.json")]) == 0
    printed = [float(v) for v in re.findall(r"base score (\S+)\)", capsys.readouterr().out)]
    stored = hepbdt.load_model(tmp_path / "c.json").forest_.extra["base_scores"]
    assert printed == [float(b) for b in stored]
