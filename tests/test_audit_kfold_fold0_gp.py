"""Audit GP (2026-12-05): what a k-fold training's outputs show of fold 0 and of all events
scored out of fold, against the evaluation functions called by hand on the events read
back from ``scores.root`` (uproot) and brute-force weighted sums. Kills the surviving
mutants of ``analysis/outputs.py``: ``_first_fold_comparison`` reading fold 1 (the
overtraining figures showed fold 1's events under a fold-0 title), ``_kfold_significance``
counting fold 1's events as fold 0's and its yield note's factor 1.0 -> 1.01."""

from __future__ import annotations

import html
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.analysis import load_config, train
from hepbdt.analysis.outputs import _first_fold_comparison, _first_fold_title
from hepbdt.estimators import IdleOptionWarning
from hepbdt.evaluation import overtraining_test, roc_auc

from .test_report import _rows

DEMO = Path(__file__).resolve().parents[1] / "analyses" / "demo.toml"
K = 3
OPTIONS = ["preselection='(nJet >= 2) & (event % 4 == 0)'", f"split.kfold={K}",
           "method.n_trees=20", "method.max_depth=2", "method.learning_rate=0.3",
           "output.tmva_xml=false", "output.figures=false", "output.permutation_repeats=1"]


@pytest.fixture(scope="module")
def kfold(tmp_path_factory):
    """The training, its TrainTree and TestTree (numpy arrays) and its report's text."""
    out = tmp_path_factory.mktemp("kfold_gp")
    with warnings.catch_warnings():  # the demo's figure_formats without figures: idle
        warnings.simplefilter("ignore", IdleOptionWarning)
        result = train(load_config(DEMO, OPTIONS, output=out))
    with uproot.open(result.output_dir / "scores.root") as file:
        trees = [file[name].arrays(library="np") for name in ("TrainTree", "TestTree")]
    text = (result.output_dir / "report.html").read_text(encoding="utf-8")
    return result, trees[0], trees[1], text


def _by_event(tree: dict, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """(score, signal?, weight) of the masked events, in event-number order."""
    order = np.argsort(tree["event"][mask], kind="stable")
    return tuple(np.asarray(tree[b][mask])[order] for b in ("bdt_score", "classID", "weight"))


def test_the_overtraining_figures_compare_fold_0s_own_events(kfold):
    result, tr, te, _ = kfold
    s_tr, y_tr, w_tr, s_te, y_te, w_te = _first_fold_comparison(result)
    train0, test0 = result.fold_data(0)
    want_tr, want_te = _by_event(tr, tr["fold"] == 0), _by_event(te, te["fold"] == 0)
    assert s_tr.size == int(np.count_nonzero(tr["fold"] == 0)) != s_te.size
    for (scores, y, w, events), (s_ref, class_id, w_ref) in (
            ((s_tr, y_tr, w_tr, train0.event), want_tr), ((s_te, y_te, w_te, test0.event), want_te)):
        order = np.argsort(events, kind="stable")
        np.testing.assert_allclose(scores[order], s_ref, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(y[order] == 1, class_id == 0)  # TMVA: classID 0 signal
        np.testing.assert_allclose(w[order], w_ref, rtol=1e-6)
    assert _first_fold_title(result).startswith(f"fold 0 of {K}:")
    # the p-values the figure prints are those of fold 0's events read back
    got = overtraining_test(s_tr, y_tr, w_tr, s_te, y_te, w_te)
    ref = overtraining_test(want_tr[0], want_tr[1] == 0, want_tr[2],
                            want_te[0], want_te[1] == 0, want_te[2])
    assert got.signal.ks_pvalue == pytest.approx(ref.signal.ks_pvalue, rel=1e-6, abs=1e-9)
    assert got.background.ks_pvalue == pytest.approx(ref.background.ks_pvalue, rel=1e-6,
                                                     abs=1e-9)


def test_the_kfold_table_is_each_folds_events(kfold):
    _, tr, te, text = kfold
    rows = _rows(text, "kfold-table")
    assert [r["fold"] for r in rows] == ["0", "1", "2", "mean \u00b1 std"]
    assert 'id="fig-kfold-roc"' in text  # two classes: each fold's ROC curve
    aucs = []
    for i, row in enumerate(rows[:K]):
        on_tr, on_te = tr["fold"] == i, te["fold"] == i
        assert int(row["train events"]) == int(np.count_nonzero(on_tr))
        assert int(row["test events"]) == int(np.count_nonzero(on_te))
        aucs.append(roc_auc(te["classID"][on_te] == 0, te["bdt_score"][on_te],
                            te["weight"][on_te]))
        assert float(row["test AUC"]) == pytest.approx(aucs[-1], abs=6e-5)
    assert float(rows[K]["test AUC"].split(" \u00b1 ")[0]) == pytest.approx(np.mean(aucs),
                                                                             abs=6e-5)


def test_the_kfold_significance_scans_every_event_once(kfold):
    _, _, te, text = kfold
    note = html.unescape(re.search(r'<p id="kfold-significance-yields">(.*?)</p>', text,
                                   re.S).group(1))
    assert f"Best cuts on all {te['event'].size} events" in note
    # k-fold scores every event once: the test weights are the yields (x 1)
    factor = re.search(r"test weights x 1/(\S+) \(every event scored once\)", note)
    assert factor and float(factor.group(1)) == 1.0
    n0 = int(np.count_nonzero(te["fold"] == 0))
    assert n0 != int(np.count_nonzero(te["fold"] == 1))
    assert f"scans fold 0 alone ({n0} events)" in note
    score, signal, w = te["bdt_score"].astype(np.float64), te["classID"] == 0, te["weight"]
    thresholds = np.unique(score)
    for row in _rows(text, "kfold-significance-table"):
        cut = thresholds[thresholds >= float(row["best cut"])][0]  # the printed cut, rounded
        passing = score >= cut
        s, b = w[signal & passing].sum(dtype=np.float64), w[~signal & passing].sum(dtype=np.float64)
        assert float(row["S"]) == pytest.approx(s, rel=1e-3)
        assert float(row["B"]) == pytest.approx(b, rel=1e-3)
        assert int(row["signal MC events"]) == int(np.count_nonzero(signal & passing))
        if row["figure of merit"] == "S/sqrt(B)":
            assert float(row["value"]) == pytest.approx(s / np.sqrt(b), rel=1e-3)


def test_the_kfold_overtraining_verdict_is_bonferronis_over_the_folds(kfold):
    _, tr, te, text = kfold
    lines = html.unescape(re.search(r'<pre id="kfold-overtraining">(.*?)</pre>', text,
                                    re.S).group(1))
    checks = [overtraining_test(tr["bdt_score"][tr["fold"] == i], tr["classID"][tr["fold"] == i] == 0,
                                tr["weight"][tr["fold"] == i], te["bdt_score"][te["fold"] == i],
                                te["classID"][te["fold"] == i] == 0, te["weight"][te["fold"] == i])
              for i in range(K)]
    for name in ("signal", "background"):
        printed = float(re.search(rf"^  {name} +KS p = ([0-9.e-]+),", lines, re.M).group(1))
        smallest = min(getattr(c, name).ks_pvalue for c in checks)
        assert printed == pytest.approx(min(1.0, K * smallest), rel=2e-3)
