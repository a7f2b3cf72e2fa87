"""Audit FH (2026-12-05): every flag of the command line with bad and borderline values.
Each mistake is one ``hepbdt: error:`` line naming the flag, with exit status 2; numbers
the Python API takes are refused with a ValueError naming them, never a NumPy TypeError."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt.cli import main
from hepbdt.evaluation import separation, significance_scan

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "analyses" / "demo.toml"
HUGE = str(10**26)  # beyond int64 and exact in no float


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The single stderr line of a refused command (nothing on stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1, captured.err
    assert lines[0].startswith("hepbdt: error: "), lines[0]
    return lines[0]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The error line of a command argparse refuses (SystemExit 2)."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    return _one_error_line(capsys)


@pytest.mark.parametrize("argv, flag", [
    (["report", "m.json", "s.root", "--min-background-events", HUGE], "--min-background-events"),
    (["report", "m.json", "s.root", "--min-background-events", "1_0"], "--min-background-events"),
    (["report", "m.json", "s.root", "--min-background-events", "-1"], "--min-background-events"),
    (["inspect", "m.json", "--tree", HUGE], "--tree"),
    (["inspect", "m.json", "--tree", "1_0"], "--tree"),        # int() reads 10
    (["inspect", "m.json", "--tree", "\u0663"], "--tree"),     # int() reads 3
])
def test_count_flags_take_ascii_integers_in_int64(argv, flag, capsys):
    line = _usage_error(argv, capsys)
    assert f"argument {flag}" in line and argv[-1] in line, line


def test_count_flags_take_the_largest_count(capsys):
    # 2**63 - 1 parses (the model file is what is missing, reported after parsing)
    assert main(["inspect", "no-such-model.json", "--tree", str(2**63 - 1)]) == 2
    assert "no-such-model.json" in _one_error_line(capsys)


def test_a_configured_count_beyond_int64_is_refused_before_training(capsys):
    status = main(["train", str(DEMO), "--check", "--set",
                   f"output.min_background_events={HUGE}"])
    assert status == 2
    line = _one_error_line(capsys)
    assert "min_background_events (from --set)" in line and "2**63 - 1" in line, line


Y = np.array([1, 0, 1, 0, 1, 0])
SCORE = np.array([0.9, 0.1, 0.8, 0.2, 0.7, 0.3])


@pytest.mark.parametrize("option, value", [
    ("min_background_events", 10**26), ("min_background_events", 2**63),
    ("b_reg", 10**400), ("signal_yield", 10**400), ("background_yield", 10**400),
], ids=["count-1e26", "count-2**63", "b_reg-1e400", "signal-1e400", "background-1e400"])
def test_scan_numbers_beyond_float64_or_int64_are_value_errors(option, value):
    with pytest.raises(ValueError, match=option):
        significance_scan(Y, SCORE, **{option: value})


def test_bins_beyond_float64_are_value_errors():
    with pytest.raises(ValueError, match="bins"):
        separation(Y, SCORE, bins=10**400)


def test_a_yield_given_as_a_large_python_int_is_used():
    # S = signal_yield x eff_S by definition; at the loosest cut eff_S = 1 and B's share 1
    scan = significance_scan(Y, SCORE, signal_yield=10**30, background_yield=10**20,
                             other_half=False, min_background_events=0)
    loosest = np.argmin(scan.thresholds)
    assert scan.signal[loosest] == pytest.approx(1e30, rel=1e-12)
    assert scan.background[loosest] == pytest.approx(1e20, rel=1e-12)
    assert scan.s_over_sqrt_b[loosest] == pytest.approx(1e30 / np.sqrt(1e20), rel=1e-12)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    """A three-tree demo model (a fifth of the events), trained once for this module."""
    out = tmp_path_factory.mktemp("fh") / "results"
    assert main(["train", str(DEMO), "--output", str(out), "--no-progress",
                 "--set", "preselection='(nJet >= 2) & (event % 5 == 0)'",
                 "--set", "method.n_trees=3", "--set", "output.report=false",
                 "--set", "output.figures=false", "--set", "output.tmva_xml=false"]) == 0
    return out / "model.json"


SIGNAL = str(ROOT / "data" / "signal.root")


@pytest.mark.parametrize("template", ["{stem!r}.root", "{stem:>30}.root", "{stem.upper}.root",
                                      "{stem[0]}.root", "{}.root", "{0}.root", "{nope}.root"])
def test_apply_output_placeholders_are_the_three_names_as_written(small_model, tmp_path,
                                                                  template, capsys):
    capsys.readouterr()
    status = main(["apply", str(small_model), SIGNAL, "--output", str(tmp_path / template)])
    assert status == 2
    line = _one_error_line(capsys)
    assert "placeholders may be {stem}, {name} and {tree}" in line, line
    assert list(tmp_path.iterdir()) == []  # nothing written: the str.format names are not made


def test_apply_output_placeholders_fill_as_documented(small_model, tmp_path, capsys):
    # {stem} = file name without .root, {name} = file name, {tree} = tree name; {{ }} braces
    template = str(tmp_path / "{stem}-{tree}-{name}-{{x}}.root")
    assert main(["apply", str(small_model), SIGNAL, "--output", template]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["signal-Events-signal.root-{x}.root"]


@pytest.mark.parametrize("argv, flag", [
    (["train", ""], "config"),
    (["train", "a.toml", "--output", ""], "--output/-o"),
    (["demo", "--output", ""], "--output/-o"),
    (["apply", "", "f.root", "-o", "x.root"], "model"),
    (["apply", "m.json", "", "-o", "x.root"], "INPUT"),
    (["apply", "m.json", "f.root", "-o", ""], "--output/-o"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--tree", ""], "--tree"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--branch", ""], "--branch"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--probability-branch", ""],
     "--probability-branch"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--event", " "], "--event"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--output-tree", ""], "--output-tree"),
    (["apply", "m.json", "f.root", "-o", "x.root", "--scheduler", ""], "--scheduler"),
    (["export", "", "--onnx", "m.onnx"], "model"),
    (["export", "m.json", "--onnx", "m.onnx", "--cpp", ""], "--cpp"),
    (["export", "m.json", "--onnx", ""], "--onnx"),
    (["export", "m.json", "--tmva", ""], "--tmva"),
    (["export", "m.json", "--onnx", "m.onnx", "--namespace", ""], "--namespace"),
    (["inspect", ""], "model"),
    (["report", "", "s.root"], "model"),
    (["report", "m.json", ""], "scores"),
    (["report", "m.json", "s.root", "--output", ""], "--output/-o"),
    # '--title ""' gave the default title 'hepbdt report: m.json' (audit FO, 2026-12-05)
    (["report", "m.json", "s.root", "--title", ""], "--title"),
], ids=lambda v: v if isinstance(v, str) else " ".join(x or "''" for x in v))
def test_an_empty_value_is_refused_by_its_flag(argv, flag, capsys):
    # Before: '--cpp ""' beside --onnx wrote no header, '--output-tree ""' took the input
    # tree's name, '--scheduler ""' scored locally, each without a word; empty paths were
    # reported as the current folder ('.: is a directory')
    line = _usage_error(argv, capsys)
    assert f"argument {flag}: " in line and ("is empty" in line or "is blank" in line), line


def test_an_empty_output_directory_in_the_configuration_is_named(capsys):
    assert main(["train", str(DEMO), "--check", "--set", "output.directory=''"]) == 2
    line = _one_error_line(capsys)
    assert "[output] directory (from --set): '' is empty" in line, line


@pytest.mark.parametrize("tree", ["a;1", "a//b", "/a", "a/", ""])
def test_apply_output_tree_names_root_cannot_read_back_are_refused(small_model, tmp_path, tree):
    from hepbdt.scoring import ApplyOptionError, apply

    with pytest.raises(ApplyOptionError, match="output tree"):
        apply(str(small_model), SIGNAL, str(tmp_path / "f.root"), output_tree=tree)
    assert list(tmp_path.iterdir()) == []


def test_apply_output_tree_in_a_folder_reads_back_in_root(small_model, tmp_path):
    # 'dir/tree' is a tree in a folder, as an input 'file.root:dir/tree' is read
    import uproot

    out = tmp_path / "f.root"
    apply_status = main(["apply", str(small_model), SIGNAL, "-o", str(out), "--output-tree",
                         "dir/scores", "--no-progress"])
    assert apply_status == 0
    with uproot.open(SIGNAL) as source, uproot.open(out) as friend:
        assert friend["dir/scores"].num_entries == source["Events"].num_entries


@pytest.mark.parametrize("argv", [
    ["export", "m.json", "--onnx", "a.onnx", "--onnx", "b.onnx"],
    ["export", "m.json", "--cpp", "a.h", "--namespace", "a", "--namespace", "b"],
    ["export", "m.json", "--tmva", "a.xml", "--missing", "auto", "--missing", "exact"],
    ["apply", "m.json", "f.root", "--output", "a.root", "-o", "b.root"],
    ["apply", "m.json", "f.root", "-o", "a.root", "--branch", "x", "--branch", "y"],
    ["apply", "m.json", "f.root", "-o", "a.root", "--event", "event", "--event", "run"],
    ["train", "a.toml", "--output", "a", "--output", "b"],
    ["report", "m.json", "s.root", "--title", "a", "--title", "b"],
    ["report", "m.json", "s.root", "--min-background-events", "3",
     "--min-background-events", "4"],
    ["demo", "-o", "a", "-o", "b"],
], ids=lambda v: " ".join(v[:1] + v[-2:]))
def test_an_option_of_one_value_given_twice_is_refused(argv, capsys, tmp_path, monkeypatch):
    # argparse kept the last: --onnx a.onnx --onnx b.onnx wrote b.onnx alone, silently
    monkeypatch.chdir(tmp_path)  # (before the fix, demo trained into ./b)
    line = _usage_error(argv, capsys)
    assert "given twice" in line and argv[-1] in line and argv[-3] in line, line


def test_repeatable_options_still_repeat(small_model, capsys):
    capsys.readouterr()
    assert main(["inspect", str(small_model), "--tree", "0", "--tree", "2"]) == 0
    out = capsys.readouterr().out
    assert "Tree 0 (weight" in out and "Tree 2 (weight" in out
    assert main(["train", str(DEMO), "--check", "--set", "method.n_trees=5",
                 "--set", "method.max_depth=2"]) == 0


def test_a_number_that_toml_read_as_a_string_says_how_toml_writes_it(capsys):
    """--set method.learning_rate=.5 is TOML's string ".5": refused, but the message said
    only "got a string" (audit FH's note); it names TOML's spelling of the number now."""
    from hepbdt.cli import main

    status = main(["train", str(DEMO), "--check", "--set", "method.learning_rate=.5"])
    err = capsys.readouterr().err
    assert status != 0 and err.count("hepbdt: error:") == 1
    assert "got a string ('.5')" in err and "unquoted" in err and "0.5" in err
