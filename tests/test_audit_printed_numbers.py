"""Numbers as they are printed (audit CO, 2026-12-05): each shown number, rounded to the
digits shown, is the number it comes from (never its neighbour, 0, 1 or a threshold), and
machine-read text parses back to the same float."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import dataclasses  # noqa: E402
import importlib  # noqa: E402
import re  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from hepbdt import plotting  # noqa: E402
from hepbdt.analysis import outputs, summary  # noqa: E402
from hepbdt.analysis.result import FoldScores  # noqa: E402
from hepbdt.evaluation import overtraining_test  # noqa: E402
from hepbdt.io.dataset import Dataset  # noqa: E402

report = importlib.import_module("hepbdt.report")  # the module: hepbdt.report is a function


def _with_signal_pvalues(check, ks, chi2=None):
    """``check`` with the signal's KS (and chi2) p-value replaced."""
    part = dataclasses.replace(check.signal, ks_pvalue=ks,
                               chi2_pvalue=check.signal.chi2_pvalue if chi2 is None else chi2)
    return dataclasses.replace(check, signal=part)


def test_pvalues_near_one_are_not_shown_as_one():
    # a KS p of 1 - 1e-9 and a chi2 p of 0.99996 showed as "1" in the summary, the report
    # and the overtraining figure: the p-value marks left out 1
    rng = np.random.default_rng(1)
    y, s = rng.integers(0, 2, 400), rng.normal(size=400)
    check = overtraining_test(s[:200], y[:200], None, s[200:], y[200:], None)
    ks, chi2 = 1 - 1e-9, 0.99996
    check = _with_signal_pvalues(check, ks, chi2)
    line = summary.overtraining_lines(check)[1]
    shown = re.findall(r"p = ([^,\s]+)", line)
    assert [float(t) for t in shown] == [float(f"{ks:.9g}"), chi2], line
    assert all(float(t) < 1 for t in shown)
    assert report._pvalue(ks, check) == f"{ks:.9g}" and report._pvalue(chi2, check) == "0.99996"
    assert report._pvalue(1.0, check) == "1"
    fig = plotting.plot_overtraining(s[:200], y[:200], None, s[200:], y[200:], None,
                                     result=check)
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert f"signal: {ks:.9g} / 0.99996" in text, text


@pytest.fixture
def folds():
    """Two folds of 200 events; every fold's signal KS p-value set to 0.0099996 (below the
    0.01 threshold)."""
    rng = np.random.default_rng(0)
    n = 400
    y, event = np.tile([0, 0, 1, 1], n // 4), np.arange(n)
    s = rng.normal(size=n) + y
    data = Dataset(s[:, None], y, np.ones(n), np.where(y == 1, 0, 1), event, ["x"],
                   ["sig", "bkg"])
    folds = FoldScores(2, False, data, data, s, s, 1 - event % 2)
    for i in range(2):
        folds._checks[i] = _with_signal_pvalues(folds.overtraining(i), 0.0099996)
    return folds


def test_kfold_table_pvalues_are_not_rounded_onto_a_threshold(folds, monkeypatch):
    result = SimpleNamespace(train_fold=folds.train_fold, fold_view=folds, k=2,
                             config=SimpleNamespace(task="classification"))
    lines = summary._fold_lines(result)
    assert lines[2].split()[-6:] == ["KS", "p", "(signal)", "KS", "p", "(background)"]
    for row in lines[3:5]:
        assert float(row.split()[-2]) < 0.01, row  # it showed "0.01"
    table = re.search(r'<table id="kfold-table">.*?</table>',
                      outputs._kfold_section(folds, 10).html).group(0)
    assert "<td>0.01</td>" not in table and table.count("<td>0.0099996</td>") == 2, table
    # the spread of the folds' test AUCs: 4e-5 showed as "0.0000"
    rows = summary.kfold_table(folds)
    rows[0]["test AUC"], rows[1]["test AUC"] = 0.99990, 0.99998
    monkeypatch.setattr(summary, "kfold_table", lambda f: rows)
    spread = re.search(r"standard deviation (\S+) \(ddof 0\) over",
                       summary._fold_lines(result)[-1]).group(1)
    assert float(spread) == pytest.approx(np.std([0.99990, 0.99998]), rel=1e-3), spread


def test_rankings_do_not_show_a_used_feature_as_zero(monkeypatch):
    # one tree of depth 3: the noise feature's one split has an importance of 3e-4, which
    # summary.txt printed as 0.000 (and the strong feature's 0.9997 as 1.000)
    from hepbdt import BDTClassifier
    from hepbdt.cli import describe_model
    from hepbdt.evaluation import FeatureRanking, tmva_importance

    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 4000)
    X = np.c_[y * 12.0 + rng.normal(size=4000), rng.normal(size=4000)]
    model = BDTClassifier(n_trees=1, max_depth=3, boosting="gradient").fit(X, y)
    importance = tmva_importance(model, ["strong", "noise"], quadrature=True).importance
    assert 0 < importance[1] < 5e-4 and importance[0] > 0.9995
    result = SimpleNamespace(config=SimpleNamespace(features=["strong", "noise"]),
                             model=model, train_fold=None, k=1)
    shown = [float(line.split()[-1]) for line in summary._ranking_lines(result)[2:]]
    assert 0 < shown[1] < 5e-4 and 0.9995 < shown[0] < 1, shown
    assert np.all(np.abs(np.array(shown) - importance) <= 0.5e-4)  # rounded, not moved
    # hepbdt inspect (4 decimals): an importance of 4e-5 showed as 0.0000
    fake = FeatureRanking(feature_names=["x0", "x1"], importance=np.array([0.99996, 4e-5]),
                          split_count=np.array([3, 1]), total_gain=np.ones(2), cover=np.ones(2),
                          quadrature=True)
    monkeypatch.setattr("hepbdt.evaluation.tmva_importance", lambda *a, **k: fake)
    lines = [line for line in describe_model(model).splitlines() if "splits)" in line]
    assert [float(line.split()[2]) for line in lines] == [0.99996, 4e-5], lines


def test_report_samples_table_cut_selects_the_training_events_counted():
    # the 1 % background-efficiency cut is at the test signal score 0.12344; it printed as
    # "score >= 0.1234" (selecting the same test events) while the training rows counted
    # a training signal event at 0.12341 out: "score >= 0.1234" keeps it
    bkg = np.r_[np.linspace(-1, 0.1, 99), 0.2]
    s_te, y_te = np.r_[0.12344, 0.5, 0.6, bkg], np.r_[np.ones(3, int), np.zeros(100, int)]
    s_tr, y_tr = np.array([0.12341, 0.7, -0.5, -0.6]), np.array([1, 1, 0, 0])

    def events(s, y):
        return report._Events(s[:, None], y, np.ones(y.size), s,
                              [("sig", "signal", np.flatnonzero(y == 1)),
                               ("bkg", "background", np.flatnonzero(y == 0))])

    out = report._Sections()
    yields = SimpleNamespace(factor_text=lambda *a: "", factor_note=lambda: "")
    report._samples_section(out, events(s_tr, y_tr), events(s_te, y_te), True, yields, None)
    html = "".join(out.parts)
    cut = float(re.search(r"efficiency of score \u2265 (\S+) \(cut at 1 %", html).group(1))
    rows = {re.findall(r"<td>([^<]*)</td>", row)[2]: re.findall(r"<td>([^<]*)</td>", row)
            for row in re.findall(r"<tr><td>sig</td>.*?</tr>", html)}
    for name, s, y in (("test", s_te, y_te), ("training", s_tr, y_tr)):
        kept = np.mean(s[y == 1] >= cut)  # what the printed cut keeps
        assert float(rows[name][-2]) == pytest.approx(kept), (cut, rows[name])


def test_recorded_scores_refusal_quotes_two_different_numbers():
    # scores 3e-9 apart (the check's tolerance is 1e-9 relative) were quoted with 6 digits
    # as one number ("-0.495081 recorded, -0.495081 now"); a multi-class model's class 2
    # differing was quoted by class 0's equal scores
    from hepbdt import BDTClassifier
    from hepbdt.analysis.outputs import _check_recorded_scores
    from hepbdt.io.errors import InputError

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    data = SimpleNamespace(task="classification", X=X.astype(np.float32), event=np.arange(300))
    model = BDTClassifier(n_trees=5).fit(X, (X[:, 0] > 0).astype(int))
    score = model.decision_function(X).astype(np.float64)
    recorded = score.copy()
    recorded[7] += 3e-9 * (1 + abs(recorded[7]))
    with pytest.raises(InputError) as info:
        _check_recorded_scores(model, "s.root:TestTree", data, {"score": recorded}, True)
    old, new = re.search(r"event 7: (\S+) recorded, (\S+) now", str(info.value)).groups()
    assert float(old) != float(new)
    assert abs(float(old) - recorded[7]) < abs(float(old) - score[7])  # each its own
    assert abs(float(new) - score[7]) < abs(float(new) - recorded[7])
    model3 = BDTClassifier(n_trees=3).fit(X, np.digitize(X[:, 0], [-0.5, 0.5]))
    scores3 = model3.decision_function(X).astype(np.float64)
    recorded3 = {f"score_{k}": scores3[:, k].copy() for k in range(3)}
    recorded3["score_2"][0] += 0.25
    with pytest.raises(InputError, match=r"event 0, score_2: (\S+) recorded") as info:
        _check_recorded_scores(model3, "s.root:TestTree", data, recorded3, True)
    old, new = re.search(r"score_2: (\S+) recorded, (\S+) now", str(info.value)).groups()
    assert float(new) == pytest.approx(scores3[0, 2], abs=1e-5)
    assert float(old) == pytest.approx(scores3[0, 2] + 0.25, abs=1e-5)


def _two_numbers(pattern, text):
    """The two numbers ``pattern`` (two groups) finds in ``text``, as floats."""
    return [float(v) for v in re.search(pattern, text).groups()]


def test_refusals_quote_a_bound_and_its_limit_as_two_numbers(tmp_path):
    # a bound 0.01 % above the tolerance read "by up to 4.44e-08, more than the tolerance
    # 4.44e-08"; a class ratio of 1.0001e15 "a ratio of 1e+15: beyond 1e+15"
    from hepbdt import BDTClassifier
    from hepbdt.interop.tmva_export import TMVAExportError, to_tmva_xml

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=500) > 0).astype(int)
    model = BDTClassifier(n_trees=20, boosting="adaboost").fit(X, y)
    bound = to_tmva_xml(model, tmp_path / "a.weights.xml", tolerance=1.0)["max_response_error"]
    tolerance = bound * (1 - 1e-4)
    with pytest.raises(TMVAExportError) as info:
        to_tmva_xml(model, tmp_path / "b.weights.xml", tolerance=tolerance)
    shown = _two_numbers(r"by up to (\S+), more than the tolerance (\S+)$", str(info.value))
    assert shown[0] > shown[1]
    assert shown == pytest.approx([bound, tolerance], rel=1e-3)
    w = np.r_[np.full(100, 1.0001e15), np.ones(100)]
    with pytest.raises(ValueError) as info:
        BDTClassifier(n_trees=2).fit(X[:200], np.r_[np.ones(100, int), np.zeros(100, int)],
                                     sample_weight=w)
    shown = _two_numbers(r"a ratio of (\S+): beyond (\S+) the", str(info.value))
    assert shown == [1.0001e15, 1e15]


def test_too_few_effective_events_are_not_shown_as_the_threshold():
    # 10 test signal events, one of weight 1.0067: Kish's count 9.99996 < 10 printed as
    # "fewer than 10 effective training or test events: 10"
    rng = np.random.default_rng(0)
    w_signal = np.r_[np.ones(9), 1.0067]
    n_eff = w_signal.sum() ** 2 / (w_signal ** 2).sum()
    assert 9.9999 < n_eff < 10
    y_tr, y_te = np.r_[np.ones(100, int), np.zeros(100, int)], np.r_[np.ones(10, int),
                                                                       np.zeros(100, int)]
    check = overtraining_test(rng.normal(size=200), y_tr, None, rng.normal(size=110), y_te,
                              np.r_[w_signal, np.ones(100)])
    line = summary.overtraining_lines(check)[1]
    shown = float(re.search(r"test events: ([^;]+);", line).group(1))
    assert shown < 10 and shown == pytest.approx(n_eff, rel=1e-5), line


def test_negative_zero_is_shown_as_zero():
    # a sample of net negative weight (-3) none of whose events pass a cut: its efficiency
    # 0.0 / -3.0 = -0.0 showed as "-0" in the report's samples table
    from hepbdt._util import cut_text, number_text, percent_text

    assert (number_text(-0.0), number_text(-0.0, fixed=True), percent_text(-0.0),
            cut_text(-0.0)) == ("0", "0.0000", "0.0%", "0")
    s = np.r_[0.5, 0.6, np.linspace(-1, 0.1, 99), 0.2, -2.0, -2.5]
    y, w = np.r_[1, 1, np.zeros(102, int)], np.r_[1, 1, np.ones(100), -2.0, -1.0]
    groups = [("sig", "signal", np.arange(2)), ("bkg", "background", np.arange(2, 102)),
              ("nlo", "background", np.arange(102, 104))]
    events = report._Events(s[:, None], y, w, s, groups)
    out = report._Sections()
    yields = SimpleNamespace(factor_text=lambda *a: "", factor_note=lambda: "")
    report._samples_section(out, events, events, True, yields, None)
    row = re.search(r"<tr><td>nlo</td>.*?</tr>", "".join(out.parts)).group(0)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    assert cells[-2:] == ["0", "0"], cells  # no event of the sample passes either cut
    assert not any(c.startswith("-0") for c in cells)


def test_requested_efficiencies_are_labelled_as_requested():
    """A requested signal efficiency of 99.5 % was labelled "100%" (``.0%``) in the
    sculpting and front figures' legends and axis, and 12.5 % "12%" (round half to even):
    each is now shown with the decimals that give it exactly, which the legend's text,
    parsed back and divided by 100, must equal."""
    from hepbdt.evaluation import decorrelation_measures

    rng = np.random.default_rng(5)
    n = 20_000
    y = (rng.random(n) < 0.5).astype(int)
    score = rng.normal(y, 1.0)  # continuous: every requested efficiency is kept as asked
    mass = rng.uniform(50, 150, n)
    requested = (0.125, 0.5, 0.995)
    m = decorrelation_measures(score, y, mass, efficiencies=requested)
    fig = plotting.plot_mass_sculpting(m)
    legends = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    shown = sorted({float(x) / 100 for text in legends
                    for x in re.findall(r"ε_S = ([0-9.]+)%", text)})
    assert shown == sorted(requested), legends
    front = plotting.plot_decorrelation_front({"model": m}, efficiency=0.995)
    assert "at 99.5% signal efficiency" in front.axes[0].get_ylabel()


def test_a_regression_kfold_section_has_no_significance_nor_roc():
    """The significance scan and the ROC of the folds are of two classes: a regression's
    k-fold section shows the table alone (with ``or`` for ``and`` in the section's
    two-class test, the scan took a regression's targets for labels and the report failed)."""
    rng = np.random.default_rng(1)
    n = 400
    event = np.arange(n)
    target = rng.normal(size=n)
    s = target + 0.1 * rng.normal(size=n)
    data = Dataset(s[:, None], target, np.ones(n), np.zeros(n, np.int64), event, ["x"], ["mc"])
    folds = FoldScores(2, True, data, data, s, s, 1 - event % 2)
    section = outputs._kfold_section(folds, 10)
    assert '<table id="kfold-table">' in section.html
    assert "significance" not in section.html.lower() and section.figures == []
