"""Expected yields of the whole sample from the test events of a split: each sample's test
weights x its events / its test events, never the nominal 1 / (1 - train_fraction).

``Dataset.split`` rounds each sample's share (``floor(n f + 0.5)`` events train), so small
samples have test fractions far from 1 - f, and a 1-event sample may have no test event at
all. Every expected yield here is computed by hand from the arrays the test generates: the
summed weights of ALL the events of each sample that pass a cut. Each sample has one
feature vector for all its events (so one score) and, where exactness is checked, one
weight: the estimate from the test events is then exact at every cut.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import hepbdt  # noqa: E402
from hepbdt.analysis import load_config, report_from_scores, train  # noqa: E402
from hepbdt.analysis.result import significance  # noqa: E402
from hepbdt.cli import main  # noqa: E402
from hepbdt.evaluation import metrics, overtraining_test, significance_scan  # noqa: E402
from hepbdt.io import Dataset  # noqa: E402
from hepbdt.persistence import load_model  # noqa: E402
from tests.ntuples import write_ttree  # noqa: E402

from .test_report import _rows  # noqa: E402

MODES = ("random", "alternate", "block")
# name: (events, weight of each event, feature value, first event number); several samples
# per class, of 1, 2 and 3 events among them, with different (one negative) weights.
SIGNAL = {"sig_one": (1, 7.0, 2.0, 1), "sig_two": (2, 0.5, 1.6, 3),
          "sig_three": (3, 2.0, 1.2, 5), "sig_big": (40, 0.1, 0.8, 9)}
BACKGROUND = {"bkg_three": (3, 5.0, -0.4, 60), "bkg_big": (41, 3.0, -1.0, 70),
              "bkg_two": (2, 11.0, 0.4, 120), "bkg_neg": (3, -0.2, 1.0, 130)}
SAMPLES = {**SIGNAL, **BACKGROUND}
NAMES = list(SAMPLES)


def _n_test(n, train_fraction):
    """The test events of an n-event sample, by Dataset.split's documented rounding."""
    return n - int(np.floor(n * train_fraction + 0.5))


def _arrays():
    """(X, y, w, sample index, event) of all events of SAMPLES, sample by sample."""
    X, y, w, index, event = [], [], [], [], []
    for i, (name, (n, weight, value, first)) in enumerate(SAMPLES.items()):
        X.append(np.tile([value, 0.5 * value + 0.1 * i], (n, 1)))
        y.append(np.full(n, int(name in SIGNAL)))
        w.append(np.full(n, weight))
        index.append(np.full(n, i))
        event.append(first + np.arange(n))
    X = np.concatenate(X).astype(np.float32).astype(np.float64)  # as the files store them
    return (X, np.concatenate(y), np.concatenate(w), np.concatenate(index),
            np.concatenate(event))


def _truth(score_all, y, w, index, threshold, samples):
    """(S, B) by hand: summed weights of ALL events of ``samples`` (indices) passing
    ``score >= threshold``."""
    keep = (score_all >= threshold) & np.isin(index, list(samples))
    return float(w[keep & (y == 1)].sum()), float(w[keep & (y == 0)].sum())


# -- Python API: Dataset.split, split_yields, significance_scan, report ----------------------

@pytest.mark.parametrize("train_fraction", [0.5, 0.3, 0.8])
@pytest.mark.parametrize("mode", MODES)
def test_scan_yields_match_the_whole_sample_at_every_cut(mode, train_fraction):
    X, y, w, index, event = _arrays()
    data = Dataset(X, y, w, index, event, sample_names=NAMES)
    train_set, test_set = data.split(mode, train_fraction, seed=11)
    yields = metrics.split_yields(test_set.sample_index, test_set.y, train_set.sample_index,
                          train_set.y)
    counts = {i: (n, _n_test(n, train_fraction)) for i, (n, *_rest) in
              enumerate(SAMPLES.values())}
    for i, (n, n_test) in counts.items():
        assert np.count_nonzero(test_set.sample_index == i) == n_test
        if n_test:
            np.testing.assert_allclose(yields.scale[test_set.sample_index == i], n / n_test)
    missing = {i for i, (_, n_test) in counts.items() if n_test == 0}
    assert {g.sample for g in yields.missing} == missing
    if train_fraction != 0.3:
        assert 0 in missing  # the 1-event sample trains, at 0.8 the 2-event ones too
    else:
        assert not missing  # 1 event at 0.3: floor(0.8) = 0 train, its test factor is 1

    score = X[:, 0]  # one score a sample: the estimate is exact at every cut
    scan = significance_scan(test_set.y, test_set.X[:, 0], test_set.w,
                             yield_scale=yields.scale, min_background_events=0)
    present = set(range(len(NAMES))) - missing
    for k, t in enumerate(scan.thresholds):
        S, B = _truth(score, y, w, index, t, present)
        assert scan.signal[k] == pytest.approx(S, rel=1e-12, abs=1e-12), (t, k)
        assert scan.background[k] == pytest.approx(B, rel=1e-12, abs=1e-12), (t, k)
        # The stat. uncertainty is sqrt(sum (w x factor)^2) of the test events passing.
        passing = test_set.X[:, 0] >= t
        scaled = test_set.w * yields.scale
        assert scan.signal_error[k] == pytest.approx(
            np.sqrt(np.sum(scaled[passing & (test_set.y == 1)] ** 2)), rel=1e-12)


def test_random_split_estimate_is_unbiased_with_unequal_weights():
    """Three events of weights 1, 2, 4 (one fails the cut): a random half split tests one of
    them, and its weight x 3/1 averages to the sample's yield after the cut, 6; the nominal
    x 1/0.5 would average to 4."""
    y = np.array([1, 1, 1] + [0] * 10)
    w = np.array([1.0, 2.0, 4.0] + [1.0] * 10)
    score = np.array([0.0, 1.0, 1.0] + [0.5] * 10)
    index = np.array([0, 0, 0] + [1] * 10)
    data = Dataset(score[:, None], y, w, index)
    truth = float(w[(y == 1) & (score >= 1.0)].sum())
    estimates = []
    for seed in range(1500):
        train_set, test_set = data.split("random", 0.5, seed=seed)
        yields = metrics.split_yields(test_set.sample_index, test_set.y, train_set.sample_index,
                              train_set.y)
        scan = significance_scan(test_set.y, test_set.X[:, 0], test_set.w,
                                 yield_scale=yields.scale, min_background_events=0)
        k = np.flatnonzero(scan.thresholds >= 1.0)
        estimates.append(float(scan.signal[k[-1]]) if k.size else 0.0)
    assert np.mean(estimates) == pytest.approx(truth, abs=0.45)
    assert set(np.round(estimates, 9)) <= {0.0, 6.0, 12.0}


def test_scan_refuses_bad_per_event_scales():
    y, s, w = np.array([1, 0, 1]), np.array([0.1, 0.2, 0.3]), np.ones(3)
    with pytest.raises(ValueError, match="one per event"):
        significance_scan(y, s, w, yield_scale=np.ones(2))
    with pytest.raises(ValueError, match=r"yield_scale\[1\]"):
        significance_scan(y, s, w, yield_scale=np.array([1.0, np.nan, 2.0]))


def _check_significance_table(text, table_id, score_all, y, w, index, present):
    """Every best cut of the report's table: S and B are the whole-sample yields by hand of
    the ``present`` samples passing the cut as printed (``score >= printed``)."""
    thresholds = np.unique(score_all)
    rows = _rows(text, table_id)
    assert len(rows) == 3
    for row in rows:
        candidates = thresholds[thresholds >= float(row["best cut"])][:1]
        assert candidates.size, row
        truths = [_truth(score_all, y, w, index, t, present) for t in candidates]
        assert any(float(row["S"]) == pytest.approx(S, rel=1e-3)
                   and float(row["B"]) == pytest.approx(B, rel=1e-3) for S, B in truths), \
            (row, truths)


@pytest.mark.parametrize("mode", MODES)
def test_report_of_a_split_dataset_gives_whole_sample_yields(mode, tmp_path):
    X, y, w, index, event = _arrays()
    data = Dataset(X, y, w, index, event, sample_names=NAMES)
    train_set, test_set = data.split(mode, 0.5, seed=5)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0)
    model.fit(train_set.X, train_set.y, np.abs(train_set.w))
    text = hepbdt.report(model, train_set, test_set, tmp_path / "r.html", test_fraction=0.5,
                         min_background_events=1, n_repeats=1).read_text(encoding="utf-8")
    score_all = model.decision_function(X)
    present = set(range(1, len(NAMES)))  # sig_one (1 event) trains
    _check_significance_table(text, "significance-table", score_all, y, w, index, present)
    factors = {r["sample"]: r["yield = test weights x"] for r in _rows(text, "samples")
               if r["set"] == "test"}
    for name, (n, *_rest) in SAMPLES.items():
        n_test = _n_test(n, 0.5)
        if n_test:
            assert float(factors[name]) == pytest.approx(n / n_test, rel=1e-5), name
    assert factors["sig_one"].startswith("none")
    warning = re.search(r'<p class="warning" id="significance-missing">(.*?)</p>', text)
    assert warning and "sig_one (signal, 1 event)" in html.unescape(warning.group(1))


def test_report_refuses_a_test_fraction_its_events_cannot_have(tmp_path):
    X, y, w, index, event = _arrays()
    train_set, test_set = Dataset(X, y, w, index, event).split("block", 0.5)
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=1).fit(train_set.X, train_set.y)
    with pytest.raises(ValueError, match="test_fraction=0.1, but the test set holds"):
        hepbdt.report(model, train_set, test_set, tmp_path / "r.html", test_fraction=0.1)


# -- hepbdt train: summary and report, each split mode; k-fold; hepbdt report ----------------

CONFIG = """\
title = "whole-sample yields"
tree = "Events"
weight = "w"
event = "event"
features = ["x1", "x2"]

[split]
mode = "{mode}"
train_fraction = 0.5
{seed}norm = "num_events"

[method]
boosting = "gradient"
n_trees = 8
max_depth = 2

[output]
tmva_xml = false
report = true
figures = false
min_background_events = 1
permutation_repeats = 1
"""


def _write_inputs(folder: Path, mode: str = "random") -> Path:
    X, y, w, index, event = _arrays()
    text = CONFIG.format(mode=mode, seed="seed = 3\n" if mode == "random" else "")
    for i, name in enumerate(NAMES):
        mask = index == i
        write_ttree(folder / f"{name}.root", "Events", {"x1": X[mask, 0].astype(np.float32),
                                                        "x2": X[mask, 1].astype(np.float32),
                                                        "w": w[mask],
                                                        "event": event[mask].astype(np.int64)})
        label = "signal" if name in SIGNAL else "background"
        text += f'\n[samples.{name}]\nfiles = "{name}.root"\nlabel = "{label}"\n'
    path = folder / "yields.toml"
    path.write_text(text)
    return path


def _summary_best(summary):
    """(threshold text, S, B) of each best-cut line of the summary."""
    found = re.findall(r"^  (S/sqrt\(B\)|S/sqrt\(S\+B\)|AMS \(b_reg \S+\)) +\S+ at score >= "
                       r"(\S+): S = (\S+) \+- \S+ \(\d+ MC\), B = (\S+) \+- ", summary,
                       flags=re.M)
    assert len(found) == 3, summary
    return [(t, float(S), float(B)) for _, t, S, B in found]


@pytest.mark.parametrize("mode", MODES)
def test_hepbdt_train_summary_and_report_give_whole_sample_yields(mode, tmp_path):
    config = _write_inputs(tmp_path, mode)
    out = tmp_path / "out"
    assert main(["train", str(config), "--output", str(out), "--no-progress"]) == 0
    X, y, w, index, _ = _arrays()
    score_all = load_model(out / "model.json").decision_function(X)
    present = set(range(1, len(NAMES)))  # sig_one: 1 event, it trains
    summary = (out / "summary.txt").read_text()
    thresholds = np.unique(score_all)
    for t_text, S, B in _summary_best(summary):
        truths = [_truth(score_all, y, w, index, t, present)  # score >= the printed cut
                  for t in thresholds[thresholds >= float(t_text)][:1]]
        assert any(S == pytest.approx(s, rel=1e-3) and B == pytest.approx(b, rel=1e-3)
                   for s, b in truths), (t_text, S, B, truths)
    warning = [line for line in summary.splitlines() if "WARNING" in line]
    assert len(warning) == 1 and "sig_one (signal, 1 event)" in warning[0]
    assert "each sample's test weights x its events / its test events" in summary
    # The samples table shows each sample's test events and factor.
    for name, (n, *_rest) in SAMPLES.items():
        line = next(x for x in summary.splitlines() if x.split()[:1] == [name])
        n_test = _n_test(n, 0.5)
        assert int(line.split()[3]) == n_test, line
        if n_test:
            assert float(line.split()[4]) == pytest.approx(n / n_test, rel=1e-5), line
        else:
            assert "none: no test event" in line

    text = (out / "report.html").read_text(encoding="utf-8")
    _check_significance_table(text, "significance-table", score_all, y, w, index, present)
    assert 'id="significance-missing"' in text

    if mode == "random":  # again from the trees alone: the same per-sample factors
        again = report_from_scores(out / "model.json", out / "scores.root",
                                   tmp_path / "again.html", n_repeats=1,
                                   min_background_events=1).read_text(encoding="utf-8")
        _check_significance_table(again, "significance-table", score_all, y, w, index,
                                  present)


def test_python_workflow_significance_matches_the_whole_sample_at_every_cut(tmp_path):
    config = load_config(_write_inputs(tmp_path, "alternate"), output=tmp_path / "out")
    result = train(config)
    X, y, w, index, _ = _arrays()
    score_all = result.model.decision_function(X)
    scan = significance(result)
    present = set(range(1, len(NAMES)))
    for k, t in enumerate(scan.thresholds):
        S, B = _truth(score_all, y, w, index, t, present)
        assert scan.signal[k] == pytest.approx(S, rel=1e-9, abs=1e-12)
        assert scan.background[k] == pytest.approx(B, rel=1e-9, abs=1e-12)
    assert result.test_fraction == 0.5  # the nominal fraction, shown, not used for yields


def test_kfold_fold_zero_report_scales_each_sample_by_its_fold_zero_events(tmp_path):
    config = _write_inputs(tmp_path)
    out = tmp_path / "out"
    assert main(["train", str(config), "--output", str(out), "--no-progress",
                 "--set", "split.kfold=3"]) == 0
    X, y, w, index, event = _arrays()
    model = load_model(out / "model.json")
    score_all = model.models[0].decision_function(X)  # fold 0 is scored by model 0
    in_fold0 = {i for i in range(len(NAMES)) if np.any(event[index == i] % 3 == 0)}
    assert 0 not in in_fold0 and len(in_fold0) == len(NAMES) - 1  # sig_one: event 1
    text = (out / "report.html").read_text(encoding="utf-8")
    _check_significance_table(text, "significance-table", score_all, y, w, index, in_fold0)
    # The summary scans every event once, scored out of fold: all samples, x 1.
    summary = (out / "summary.txt").read_text()
    assert "WARNING" not in summary and "test weights x 1/1" in summary


def test_summary_overtraining_line_shows_the_pvalues_of_its_verdict(tmp_path):
    config = load_config(_write_inputs(tmp_path, "block"), output=tmp_path / "out")
    result = train(config)
    check = overtraining_test(result.train_scores, result.train.y, result.train.w,
                              result.test_scores, result.test.y, result.test.w)

    def shown(p):
        return f"{p:.3g}" if np.isfinite(p) else "n/a"

    lines = result.summary.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Overtraining"))
    assert "KS test and chi2 test" in lines[head] and lines[head].endswith(f"-> {check.verdict}")
    for offset, (name, part) in enumerate((("signal", check.signal),
                                           ("background", check.background)), start=1):
        words = lines[head + offset].split()
        assert words[:11] == [
            name, "KS", "p", "=", f"{shown(part.ks_pvalue)},", "chi2", "p", "=",
            shown(part.chi2_pvalue), "->", part.verdict]
        # a class of too few effective events has no p-value, and the line says why
        fewest = min(part.n_eff_train, part.n_eff_test)
        assert " ".join(words[11:]) == ("" if fewest >= 10 else (
            f"(fewer than 10 effective training or test events: {fewest:.3g}; the tests "
            "need more)"))
    text = (result.output_dir / "report.html").read_text(encoding="utf-8")
    verdict = re.search(r'id="summary-verdict">.*?</p>', text).group(0)
    assert "chi2" in verdict


def test_kfold_report_summary_verdict_is_summary_txts_over_the_folds(tmp_path):
    """The report's headline verdict of a k-fold training was fold 0's check, where
    summary.txt gives every fold's (the smallest p-value x k): the two outputs of one
    training could disagree (ok in the report, overtrained in the summary)."""
    config = _write_inputs(tmp_path)
    out = tmp_path / "out"
    assert main(["train", str(config), "--output", str(out), "--no-progress",
                 "--set", "split.kfold=3"]) == 0
    lines = (out / "summary.txt").read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("Overtraining"))
    verdict = lines[head].rsplit("-> ", 1)[1]
    pvalues = [re.findall(r"(?:KS|chi2) p = ([^,\s]+)", lines[head + j]) for j in (1, 2)]
    text = (out / "report.html").read_text(encoding="utf-8")
    shown = re.search(r'id="summary-verdict">(\w+)</span>(.*?)</p>', text)
    assert shown.group(1) == verdict
    assert "over the 3 folds" in shown.group(2)
    (s_ks, s_chi2), (b_ks, b_chi2) = pvalues
    assert f"signal {s_ks} / {s_chi2}, background {b_ks} / {b_chi2}" in shown.group(2)
    # the report written again from the score trees says the same
    again = report_from_scores(out / "model.json", out / "scores.root", tmp_path / "again.html",
                               n_repeats=1).read_text(encoding="utf-8")
    assert re.search(r'id="summary-verdict">.*?</p>', again).group(0) == shown.group(0)
    # the provenance names every fold's trees, not fold 0's alone under "model"
    folds = load_model(out / "model.json").models
    listed = ", ".join(f"fold {i}: {m.n_trees_} trees" for i, m in enumerate(folds))
    for page in (text, again):
        row = re.search(r"<td>fold models</td><td[^>]*>(.*?)</td>", page).group(1)
        assert html.unescape(row) == f"{listed} (the model row is fold 0's)"


def test_block_split_of_a_sample_whose_files_weigh_differently_is_refused():
    # the end-to-end audit (2026-12-02): a sample of two files, the second of other weights,
    # read in order: the block split's test events were mostly the second file's, and the
    # yields scaled by events / test events came out at 0.72 of the truth (12 standard
    # deviations). Reference: the weights' means over each block, by hand.
    from hepbdt.io import Dataset
    from hepbdt.io.errors import InputError

    rng = np.random.default_rng(0)
    w = np.r_[rng.uniform(50, 60, 1000), rng.uniform(15, 25, 2000)]  # file 1, then file 2
    data = Dataset(rng.normal(size=(3000, 2)), y=np.ones(3000, int), w=w,
                   sample_names=["qcd"], sample_index=np.zeros(3000, int))
    with pytest.raises(InputError, match="sample 'qcd''s first 900 events .* test block does not "
                       "stand for the sample"):
        data.split("block", train_fraction=0.3)
    train, test = data.split("random", train_fraction=0.3, seed=1)
    scaled = test.w.sum() * 3000 / len(test)
    assert abs(scaled - w.sum()) < 5 * np.sqrt(np.sum((test.w * 3000 / len(test)) ** 2))
    # the same weights shuffled (one file, or files alike): the block split is kept
    Dataset(data.X, y=data.y, w=rng.permutation(w), sample_names=["qcd"],
            sample_index=np.zeros(3000, int)).split("block", train_fraction=0.3)
