"""The hepbdt command: train on the shipped config end to end, apply, inspect, report,
demo, --help everywhere, and configuration errors reported before any work."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.cli import demo_config_path, main

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "analyses" / "demo.toml"
DATA = ROOT / "data"
# A fifth of the events and 20 trees: the whole pipeline, quickly.
QUICK = ["--set", "preselection='(nJet >= 2) & (event % 5 == 0)'", "--set", "method.n_trees=20",
         "--no-progress"]
REPORT_FIGURES = ["fig-roc", "fig-scores", "fig-overtraining", "fig-significance",
                  "fig-ranking", "fig-permutation", "fig-correlation", "fig-learning-curve"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("cli") / "results"
    assert main(["train", str(DEMO), "--output", str(out), *QUICK]) == 0
    return out


def test_train_writes_every_promised_output(trained, capsys):
    for name in ("model.json", "model.weights.xml", "scores.root", "report.html",
                 "summary.txt"):
        assert (trained / name).is_file(), name
    model = hepbdt.load_model(trained / "model.json")
    assert model.n_trees_ == 20 and len(model.feature_names_in_) == 11
    assert ET.parse(trained / "model.weights.xml").getroot().tag == "MethodSetup"

    with uproot.open(trained / "scores.root") as file:
        train = file["TrainTree"].arrays(library="np")
        test = file["TestTree"].arrays(library="np")
    for arrays in (train, test):
        for branch in ("bdt_score", "classID", "label", "weight", "event", "sample", "mjj",
                       "btag1"):
            assert branch in arrays
        assert np.all(np.mod(arrays["event"], 5) == 0)
    assert not set(train["event"]) & set(test["event"])
    # The model's scores of the stored features are the stored scores.
    X = np.column_stack([test[name] for name in list(test)[:11]])
    np.testing.assert_array_equal(model.decision_function(X), test["bdt_score"])

    text = (trained / "report.html").read_text()
    for figure in REPORT_FIGURES:
        assert f'<figure id="{figure}"><img' in text, figure
    assert "could not be drawn" not in text
    assert text.count("data:image/png;base64,") == len(REPORT_FIGURES)

    figures = sorted(p.name for p in (trained / "figures").iterdir())
    assert figures == ["correlation.png", "learning_curve.png", "overtraining.png",
                       "ranking.png", "roc.png", "scores.png"]
    for name in figures:
        assert (trained / "figures" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (trained / "summary.txt").read_text()
    for text in ("ROC AUC", "signal efficiency @ eff_B = 0.01", "KS test", "Top-ranked",
                 "1. ", "Time: reading", "model.weights.xml"):
        assert text in summary


def test_apply_reproduces_the_test_tree_exactly(trained, tmp_path, capsys):
    output = tmp_path / "friend.root"
    inputs = [str(DATA / "signal.root"), str(DATA / "background_*.root")]
    assert main(["apply", str(trained / "model.json"), *inputs, "--output", str(output),
                 "--event", "event", "--no-progress"]) == 0
    assert "wrote" in capsys.readouterr().out
    with uproot.open(output) as file:
        friend = file["Events"].arrays(["event", "bdt_score"], library="np")
    with uproot.open(trained / "scores.root") as file:
        test = file["TestTree"].arrays(["event", "bdt_score"], library="np")
    assert len(friend["event"]) == 75_000  # every entry of the three files
    score_of = dict(zip(friend["event"].tolist(), friend["bdt_score"].tolist(), strict=True))
    applied = np.array([score_of[e] for e in test["event"].tolist()])
    np.testing.assert_array_equal(applied, test["bdt_score"])


def test_export_writes_files_that_score_as_the_model(trained, tmp_path, capsys):
    model_path = str(trained / "model.json")
    onnx, header, xml = tmp_path / "m.onnx", tmp_path / "m.h", tmp_path / "m.weights.xml"
    assert main(["export", model_path, "--onnx", str(onnx), "--cpp", str(header),
                 "--namespace", "demo_bdt", "--tmva", str(xml)]) == 0
    out = capsys.readouterr().out
    assert out.count("wrote ") == 3 and "(20 trees," in out
    assert "namespace demo_bdt" in header.read_text()
    # its opening comment names the file, not the temporary it was written to first
    comment = header.read_text().split("*/")[0]
    assert '"m.h"' in comment and ".tmp" not in comment
    model = hepbdt.load_model(model_path)
    assert ET.parse(xml).getroot().get("Method") == "BDT::BDT"
    ort = pytest.importorskip("onnxruntime")
    names = [str(n) for n in model.feature_names_in_]
    with uproot.open(trained / "scores.root") as file:
        test = file["TestTree"].arrays(names, library="np")
    X = np.column_stack([test[n] for n in names]).astype(np.float32)
    session = ort.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
    (score,) = session.run(["score"], {"input": X})
    np.testing.assert_allclose(score[:, 0], model.decision_function(X), rtol=0, atol=1e-5)


def test_export_of_a_kfold_manifest_and_its_mistakes(tmp_path, capsys):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    folds = [hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X[i::2], y[i::2]) for i in (0, 1)]
    manifest = tmp_path / "model.json"
    hepbdt.KFoldModel(folds, by="event").save(manifest)
    assert main(["export", str(manifest), "--cpp", str(tmp_path / "m.h"),
                 "--tmva", str(tmp_path / "m.weights.xml")]) == 0
    out = capsys.readouterr().out
    for name in ("m_fold0.h", "m_fold1.h", "m_fold0.weights.xml", "m_fold1.weights.xml"):
        assert (tmp_path / name).is_file() and name in out
        if name.endswith(".h"):
            assert f'"{name}"' in (tmp_path / name).read_text().split("*/")[0]
    assert "event % 2 == i" in out
    assert main(["export", str(manifest)]) == 2
    assert "--onnx FILE, --cpp FILE and/or --tmva FILE" in capsys.readouterr().err
    assert main(["export", str(manifest), "--onnx", "m.onnx", "--namespace", "x"]) == 2
    assert "--namespace is an option of --cpp" in capsys.readouterr().err
    assert main(["export", str(manifest), "--cpp", str(tmp_path / "bad.h"),
                 "--namespace", "not valid"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: error: ") and "bad_fold0.h" in err
    assert not (tmp_path / "bad_fold0.h").exists()
    # One format failing writes none of the others (the ONNX files are made first).
    pytest.importorskip("onnx")
    assert main(["export", str(manifest), "--onnx", str(tmp_path / "first.onnx"),
                 "--cpp", str(tmp_path / "second.h"), "--namespace", "std"]) == 2
    assert "second_fold0.h" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir() if "first" in p.name or "second" in p.name] == []


def test_kfold_onnx_export_gives_each_fold_file_its_fold_models_scores(tmp_path, capsys):
    # Fold i's ONNX file, run by onnxruntime, scores as fold i's model (names with a tab,
    # a blank and a quote; float32 arithmetic: 1e-5), and not as the other fold's.
    ort = pytest.importorskip("onnxruntime")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(int)
    frame = pd.DataFrame(X, columns=["a\tb", "c d", 'e"f'])
    event = np.arange(len(y))
    folds = [hepbdt.BDTClassifier(n_trees=20, max_depth=3).fit(frame[event % 2 != i],
                                                               y[event % 2 != i]) for i in (0, 1)]
    hepbdt.KFoldModel(folds, by="event").save(tmp_path / "model.json")
    assert main(["export", str(tmp_path / "model.json"), "--onnx", str(tmp_path / "m.onnx")]) == 0
    for i in (0, 1):
        session = ort.InferenceSession(str(tmp_path / f"m_fold{i}.onnx"),
                                       providers=["CPUExecutionProvider"])
        names = json.loads(session.get_modelmeta().custom_metadata_map["feature_names"])
        assert names == list(frame.columns)
        (score,) = session.run(["score"], {"input": X})
        model = hepbdt.load_model(tmp_path / f"model_fold{i}.json")
        np.testing.assert_allclose(score[:, 0], model.decision_function(frame), rtol=0, atol=1e-5)
        assert np.abs(score[:, 0] - folds[1 - i].decision_function(frame)).max() > 1e-3


def test_inspect_prints_options_features_trees_ranking(trained, capsys):
    assert main(["inspect", str(trained / "model.json"), "--tree", "0"]) == 0
    out = capsys.readouterr().out
    # The default negative_weights='regress' has no TMVA equivalent: inspect says so.
    for text in ("BDTClassifier", "Options:", "n_trees",
                 "TMVA options: none (negative_weights='regress' has no TMVA equivalent",
                 "Features (11):", "Jet_btag[:, 0]", "Trees: 20", "Ranking", "Tree 0",
                 "leaf:", "if "):
        assert text in out, text
    assert main(["inspect", str(trained / "model.json"), "--tree", "99"]) == 2


def test_report_again_from_model_and_scores(trained, tmp_path, capsys):
    path = tmp_path / "again.html"
    assert main(["report", str(trained / "model.json"), str(trained / "scores.root"),
                 "--output", str(path), "--title", "again"]) == 0
    text = path.read_text()
    assert "<title>again</title>" in text
    for figure in REPORT_FIGURES:
        assert f'id="{figure}"' in text
    assert main(["report", str(trained / "model.json"), str(tmp_path / "none.root")]) == 2
    assert "none.root: no such file" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["flipped", "truncated", "folder"])
def test_report_of_a_damaged_scores_file_is_one_error_line(trained, tmp_path, capsys, damage):
    scores = tmp_path / "scores.root"
    data = bytearray((trained / "scores.root").read_bytes())
    if damage == "flipped":  # 64 bytes inside the baskets, a third of the way in
        for k in range(len(data) // 3, len(data) // 3 + 64):
            data[k] ^= 0x55
    elif damage == "truncated":
        data = data[:len(data) // 2]
    if damage == "folder":
        scores.mkdir()
    else:
        scores.write_bytes(bytes(data))
    out = tmp_path / "r.html"
    assert main(["report", str(trained / "model.json"), str(scores), "-o", str(out)]) in (1, 2)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hepbdt: error: "), lines
    assert {"flipped": "the file is damaged", "truncated": "it is truncated",
            "folder": "is a folder; give the scores file"}[damage] in lines[0]
    assert not out.exists()


def test_a_device_given_as_the_model_is_named_so(capsys):
    assert main(["inspect", os.devnull]) == 2
    err = capsys.readouterr().err
    assert err == f"hepbdt: error: {os.devnull}: is not a regular file (a device, FIFO or " \
                  "socket), not a model file\n"


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_an_output_where_no_file_can_be_made_is_refused_by_its_name(trained, capsys):
    # os.access says yes to root for /proc; the lock file's name came out in the error
    assert main(["export", str(trained / "model.json"), "--tmva", "/proc/m.xml"]) == 2
    err = capsys.readouterr().err
    assert err in ("hepbdt: error: output /proc/m.xml: no file can be written in /proc (No "
                   "such file or directory)\n",  # root
                   "hepbdt: error: output /proc/m.xml: the folder /proc is not writable\n")


@pytest.mark.parametrize("command", [["export", "--onnx"], ["export", "--tmva"], ["report"]])
def test_an_ntuple_is_never_replaced_by_an_export_or_a_report(trained, tmp_path, capsys,
                                                                command):
    ntuple = tmp_path / "events.root"
    shutil.copyfile(DATA / "signal.root", ntuple)
    before = ntuple.read_bytes()
    args = [command[0], str(trained / "model.json")]
    args += ([str(trained / "scores.root"), "-o", str(ntuple)] if command[0] == "report"
             else [command[1], str(ntuple)])
    assert main(args) == 2
    assert "exists and is a ROOT file" in capsys.readouterr().err
    assert ntuple.read_bytes() == before


def test_config_errors_stop_before_any_work(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    demo = DEMO.read_text().replace('"../data/', f'"{DATA}/')
    bad.write_text(demo.replace("n_trees = 300", "n_tress = 300").replace('"MET_pt"', '"MET_ptt"'))
    out = tmp_path / "never"
    assert main(["train", str(bad), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hepbdt: error: ")
    assert f"{bad}: [method] n_tress: unknown option of BDTClassifier; did you mean 'n_trees'" in err
    assert not out.exists()
    # With the key fixed, the branch is checked before anything is read or written.
    bad.write_text(demo.replace('"MET_pt"', '"MET_ptt"'))
    assert main(["train", str(bad), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "features: 'MET_ptt' uses 'MET_ptt', which is not a branch" in err
    assert "did you mean 'MET_pt'" in err
    assert not out.exists()
    assert main(["train", str(DEMO), "--check", "--output", str(out)]) == 0
    assert "OK (3 samples, 11 features, classification)" in capsys.readouterr().out
    assert not out.exists()
    assert main(["apply", str(tmp_path / "no.json"), "x.root", "--output", "y.root"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_demo_command(tmp_path, capsys, monkeypatch):
    assert demo_config_path() == DEMO
    monkeypatch.chdir(tmp_path)
    assert main(["demo", *QUICK, "--set", "output.report=false",
                 "--set", "output.figures=false"]) == 0
    out = capsys.readouterr().out
    assert "ROC AUC" in out and "hepbdt-demo/" in out
    assert (tmp_path / "hepbdt-demo" / "model.json").is_file()
    assert json.loads((tmp_path / "hepbdt-demo" / "model.json").read_text())["format"] == (
        "hepbdt-model")


@pytest.mark.parametrize("command", [[], ["train"], ["apply"], ["export"], ["inspect"],
                                     ["report"], ["demo"]])
def test_help_everywhere(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([*command, "--help"])
    assert info.value.code == 0
    assert "usage: hepbdt" in capsys.readouterr().out


@pytest.mark.parametrize("argv, command, says", [
    ([], "", "arguments are required: COMMAND"),
    (["bogus"], "", "invalid choice: 'bogus'"),
    (["train"], "train", "arguments are required: config"),
    (["apply", "model.json", "data.root:Events"], "apply", "required: --output/-o"),
    (["export", "model.json", "--tmva", "m.xml", "--missing", "bogus"], "export",
     "argument --missing: invalid choice: 'bogus'"),
    (["report", "m.json", "s.root", "--min-background-events", "1.5"], "report",
     "invalid int value: '1.5'"),
    (["train", "a.toml", "--bogus"], "train", "unrecognized arguments: --bogus"),
])
def test_usage_mistakes_are_one_error_line(argv, command, says, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("hepbdt: error: "), captured.err
    assert says in lines[0]
    assert lines[0].endswith(f"(see 'hepbdt{' ' + command if command else ''} --help')")


def test_console_entry_point():
    result = subprocess.run([sys.executable, "-m", "hepbdt.cli", "--help"], capture_output=True,
                            text=True, check=True)
    assert "train" in result.stdout and "apply" in result.stdout
    result = subprocess.run([sys.executable, "-m", "hepbdt", "--version"], capture_output=True,
                            text=True)  # no "No module named hepbdt.__main__"
    assert result.returncode == 0 and result.stdout.startswith("hepbdt "), result.stderr
    script = Path(sys.executable).with_name("hepbdt")
    if script.exists():
        result = subprocess.run([str(script), "--version"], capture_output=True, text=True)
        assert result.returncode == 0 and result.stdout.startswith("hepbdt ")


def test_outputs_that_are_inputs_or_not_regular_files_are_refused(trained, tmp_path, capsys):
    # report -o scores.root replaced the score trees with HTML, export --tmva model.json the
    # model with XML, and an output on a FIFO or device was replaced by a regular file.
    work = tmp_path / "copy"
    shutil.copytree(trained, work)
    model, scores = work / "model.json", work / "scores.root"
    before = {p: p.read_bytes() for p in (model, scores)}
    assert main(["report", str(model), str(scores), "-o", str(scores)]) == 2
    assert "the output" in capsys.readouterr().err
    assert main(["export", str(model), "--tmva", str(model)]) == 2
    assert main(["export", str(model), "--cpp", str(tmp_path / "x.h"),
                 "--tmva", str(tmp_path / "x.h")]) == 2
    assert "given as two outputs" in capsys.readouterr().err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["export", str(model), "--cpp", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err and fifo.is_fifo()
    assert {p: p.read_bytes() for p in (model, scores)} == before


def test_a_configuration_file_too_large_to_be_one_is_refused_before_reading(tmp_path, capsys):
    path = tmp_path / "huge.toml"
    with open(path, "wb") as f:  # sparse: no disk, no memory
        f.truncate(1 << 30)
    assert main(["train", str(path), "--check"]) == 2
    assert "more than a configuration has" in capsys.readouterr().err


def test_a_truncated_input_is_named_not_the_output(trained, tmp_path, capsys):
    # uproot's read error (an OSError without an errno) was reported as the output's.
    truncated = tmp_path / "truncated.root"
    truncated.write_bytes((DATA / "signal.root").read_bytes()[:500_000])
    friend = tmp_path / "friend.root"
    assert main(["apply", str(trained / "model.json"), str(truncated), "-o", str(friend),
                 "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "truncated.root" in err and "friend.root" not in err and not friend.exists()


def test_a_full_stdout_after_the_outputs_are_in_place_is_a_warning(tmp_path, capsys,
                                                                   monkeypatch):
    """A batch job's stdout on a full disk: the run wrote and swapped in its whole output
    set, then failed to print the summary and exited 1 ("[Errno 28]", naming nothing), so
    the job looked failed with this run's outputs in place."""
    import errno
    import types

    import hepbdt.analysis

    class Full:
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self):
            pass

    done = types.SimpleNamespace(summary="AUC 0.9", output_dir=tmp_path / "out")
    monkeypatch.setattr(hepbdt.analysis, "train", lambda config, **kw: done)
    monkeypatch.setattr(sys, "stdout", Full())
    assert main(["train", str(DEMO), "--output", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == (
        "hepbdt: warning: could not write the summary to standard output (No space left on "
        f"device); the outputs are in place in {tmp_path / 'out'}/\n")


def test_export_of_a_kfold_manifest_to_a_dotted_header_name_keeps_each_fold(tmp_path):
    """`--cpp bdt.v2.h` of a k-fold manifest: each fold's header has its own namespace, so
    one program holds them all; compiled by the system's C++ compiler, fold i's evaluate
    gives fold i's decision_function bit for bit (every fold was namespace bdt before)."""
    import shutil
    import subprocess

    compiler = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        pytest.skip("install a C++ compiler (apt-get install g++) to run this")
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = (X[:, 0] + 0.3 * X[:, 1] > 0).astype(int)
    folds = [hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X[i::3], y[i::3]) for i in range(3)]
    manifest = tmp_path / "model.json"
    hepbdt.KFoldModel(folds, by="event").save(manifest)
    assert main(["export", str(manifest), "--cpp", str(tmp_path / "bdt.v2.h")]) == 0
    calls = "".join(f'  std::printf("%.17g\\n", bdt_fold{i}::evaluate(x));\n' for i in range(3))
    includes = "".join(f'#include "bdt.v2_fold{i}.h"\n' for i in range(3))
    (tmp_path / "main.cpp").write_text(
        includes + "#include <cstdio>\n#include <cstdlib>\nint main(int argc, char** argv) {\n"
        "  float x[3];\n  for (int j = 0; j < 3; ++j) x[j] = std::strtof(argv[j + 1], nullptr);\n"
        + calls + "  return 0;\n}\n")
    subprocess.run([compiler, "-std=c++11", "-O2", "-o", str(tmp_path / "main"),
                    str(tmp_path / "main.cpp")], check=True, cwd=tmp_path)
    for row in X[:5]:
        out = subprocess.run([str(tmp_path / "main"), *(f"{v:.9g}" for v in row)], check=True,
                             capture_output=True, text=True).stdout.split()
        want = [fold.decision_function(row[None, :])[0] for fold in folds]
        assert [float(v) for v in out] == want
