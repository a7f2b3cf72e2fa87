"""The events ``n_trees="auto"`` holds out to choose the number of trees are trained on by
no tree: the outputs' training sample (the overtraining check, the training column of the
summary and the report) leaves them out, TrainTree marks them (``held_out``), and the
yields still count them among the split's events.

References: the documented hold-out rule (events whose hashed number falls below
``validation_fraction``), and the AUC and overtraining test of the trained-on events read
back from ``scores.root``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt._util import hash_fraction
from hepbdt.analysis import load_config, report_from_scores, train
from hepbdt.analysis.result import FoldScores, first_learning_curve
from hepbdt.evaluation import overtraining_test, roc_auc

DEMO = Path(__file__).resolve().parents[1] / "analyses" / "demo.toml"
AUTO = ["preselection='(nJet >= 2) & (event % 3 == 0)'", "method.n_trees='auto'",
        "method.max_depth=2", "method.learning_rate=0.3", "output.tmva_xml=false",
        "output.figures=false", "output.permutation_repeats=1"]
BRANCHES = ["event", "classID", "weight", "bdt_score", "sample"]


def _trees(folder: Path) -> tuple[dict, dict]:
    with uproot.open(folder / "scores.root") as file:
        train_tree = file["TrainTree"].arrays(library="np")
        test_tree = file["TestTree"].arrays(library="np")
    return train_tree, test_tree


def _check(tr: dict, te: dict, kept: np.ndarray, test: np.ndarray | None = None):
    """The overtraining test of the trained-on training events against the test events."""
    test = np.ones(te["event"].size, bool) if test is None else test
    return overtraining_test(tr["bdt_score"][kept], tr["classID"][kept] == 0,
                             tr["weight"][kept], te["bdt_score"][test],
                             te["classID"][test] == 0, te["weight"][test])


def _summary_pvalues(summary: str) -> list[float]:
    values = []
    for part in ("signal", "background"):
        line = re.search(rf"^  {part} +KS p = (\S+), chi2 p = (\S+) ->", summary, re.M)
        values += [float(v.rstrip(",")) for v in line.groups()]
    return values


@pytest.fixture(scope="module")
def auto_split(tmp_path_factory):
    out = tmp_path_factory.mktemp("auto")
    return train(load_config(DEMO, [*AUTO, "split.train_fraction=0.5"], output=out))


def test_the_training_sample_of_the_outputs_is_what_the_trees_trained_on(auto_split, tmp_path):
    result = auto_split
    tr, te = _trees(result.output_dir)
    held = tr["held_out"] == 1
    # the documented rule: a 10 % hold-out by hashed event number
    np.testing.assert_array_equal(held, hash_fraction(tr["event"]) < 0.1)
    kept = ~held
    assert 0.07 < held.mean() < 0.13
    assert f"Held out: {held.sum():,} of the {held.size:,} training events" in result.summary
    # the training column's AUC: of the trained-on events only (signed weights: hepbdt's
    # weighted AUC, which tests/test_audit_metrics_curves.py checks against scikit-learn's)
    auc = float(re.search(r"^ROC AUC +\S+ +(\S+)$", result.summary, re.M).group(1))
    expected = roc_auc(tr["classID"][kept] == 0, tr["bdt_score"][kept], tr["weight"][kept])
    assert abs(roc_auc(tr["classID"] == 0, tr["bdt_score"], tr["weight"]) - expected) > 1e-4
    assert auc == pytest.approx(expected, abs=6e-5)
    # the overtraining check: of the trained-on events, in the summary and both reports
    check = _check(tr, te, kept)
    expected = [check.signal.ks_pvalue, check.signal.chi2_pvalue,
                check.background.ks_pvalue, check.background.chi2_pvalue]
    assert _summary_pvalues(result.summary) == pytest.approx(expected, rel=6e-3, abs=1e-3)
    assert _check(tr, te, np.ones(held.size, bool)).background.chi2 != check.background.chi2
    again = report_from_scores(result.output_dir / "model.json",
                               result.output_dir / "scores.root", tmp_path / "r.html",
                               n_repeats=1).read_text()
    for text in ((result.output_dir / "report.html").read_text(), again):
        table = re.search(r'<table id="overtraining-table">(.*?)</table>', text).group(1)
        chi2 = [float(v) for v in re.findall(r"<tr><td>\w+</td><td>[^<]*</td><td>[^<]*</td>"
                                             r"<td>([^<]*)</td>", table)]
        assert chi2 == pytest.approx([check.signal.chi2, check.background.chi2], rel=1e-3)
        assert f"({held.sum():,} more held out to choose the number of trees)" in text
    # the yields: each sample's events include its held-out ones (x 2 at a half split)
    n_train = np.bincount(tr["sample"], minlength=3)
    n_test = np.bincount(te["sample"], minlength=3)
    assert n_train.sum() == held.size and np.allclose((n_train + n_test) / n_test, 2, atol=0.01)
    for name, factor in zip(result.test.sample_names, (n_train + n_test) / n_test, strict=True):
        assert re.search(rf"^  {name} .* {factor:.6g}$", result.summary, re.M)


def test_each_folds_check_leaves_out_what_its_model_held_out(tmp_path):
    every_other = "preselection='(nJet >= 2) & (event % 2 == 0)'"  # folds by event % 3
    result = train(load_config(DEMO, [*AUTO, every_other, "split.kfold=3"], output=tmp_path))
    tr, te = _trees(result.output_dir)
    held = tr["held_out"] == 1
    np.testing.assert_array_equal(held, hash_fraction(tr["event"]) < 0.1)
    folds = FoldScores.of(result)
    for i in range(3):
        kept = (tr["fold"] == i) & ~held
        check = _check(tr, te, kept, te["fold"] == i)
        got = folds.overtraining(i)
        assert got.background.chi2 == pytest.approx(check.background.chi2, rel=1e-9)
        assert got.signal.ks_pvalue == pytest.approx(check.signal.ks_pvalue, rel=1e-9)
    row = [r for r in result.summary.splitlines() if re.match(r"^ +0 +\d", r)][0]
    assert int(row.split()[1]) == int(((tr["fold"] == 0) & ~held).sum())
    # the learning curve is model 0's on fold 0's events: its last stage is the model the
    # score trees hold (an AUC does not depend on a class's scale, nor on a monotone map)
    curve = first_learning_curve(result)
    kept, test = (tr["fold"] == 0) & ~held, te["fold"] == 0
    assert curve.train_auc[-1] == pytest.approx(
        roc_auc(tr["classID"][kept] == 0, tr["bdt_score"][kept], tr["weight"][kept]), rel=1e-9)
    assert curve.test_auc[-1] == pytest.approx(
        roc_auc(te["classID"][test] == 0, te["bdt_score"][test], te["weight"][test]), rel=1e-9)
