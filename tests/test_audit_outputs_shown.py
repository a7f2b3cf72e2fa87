"""What the user sees: figures, report cells and summary lines show the numbers they come
from, without rounding them onto 0, 1 or a p-value threshold and without showing an
undefined value (NaN) as a number."""

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
from hepbdt.analysis import summary  # noqa: E402
from hepbdt.analysis.result import cell  # noqa: E402
from hepbdt.evaluation import overtraining_test, roc_auc  # noqa: E402
from hepbdt.evaluation.decorrelation import decorrelation_measures  # noqa: E402

report = importlib.import_module("hepbdt.report")  # the module: hepbdt.report is a function


@pytest.fixture(scope="module")
def nearly_perfect():
    """Scores whose AUC is 1 - 1/40000 = 0.999975: one background event above one signal
    event, every other pair ordered; unit weights."""
    y = np.r_[np.ones(200, int), np.zeros(200, int)]
    s = np.r_[np.linspace(1.0, 2.0, 200), np.linspace(-2.0, -1.0, 200)]
    s[200] = 1.0 + 1e-9  # above exactly one signal event: the lowest, at 1
    w = np.ones(400)
    assert roc_auc(y, s, w) == pytest.approx(1 - 1 / 40000, abs=1e-12)
    return y, s, w


def _check_with(pvalues, signal_verdict="overtrained"):
    """An overtraining result of random scores with the given (KS, chi2) p-values of the
    signal, the background's left as computed."""
    rng = np.random.default_rng(1)
    y, s = rng.integers(0, 2, 400), rng.normal(size=400)
    check = overtraining_test(s[:200], y[:200], None, s[200:], y[200:], None)
    signal = dataclasses.replace(check.signal, ks_pvalue=pvalues[0], chi2_pvalue=pvalues[1],
                                 verdict=signal_verdict)
    return dataclasses.replace(check, signal=signal, verdict=signal_verdict), (y, s)


def test_overtraining_figure_shows_the_pvalues_of_its_verdict_unrounded_and_nan_as_na():
    # KS p = 0.0096 is below the 0.01 threshold: "0.010" (3 decimals) would read as not
    # below it; the chi2 p-value, which also decides, was not shown; NaN showed as "nan".
    check, (y, s) = _check_with((0.0096, float("nan")))
    fig = plotting.plot_overtraining(s[:200], y[:200], None, s[200:], y[200:], None,
                                     result=check)
    text = " ".join(t.get_text() for t in fig.axes[0].texts)
    assert "Kolmogorov-Smirnov p-value" in text and "chi2" in text
    assert "0.0096" in text and "0.010" not in text
    assert "nan" not in text and "signal: 0.0096 / n/a" in text
    background = f"{check.background.chi2_pvalue:.3g}"
    assert background in text


def test_summary_and_report_pvalues_are_not_rounded_onto_a_threshold():
    check, _ = _check_with((0.0099996, 0.5))
    lines = summary.overtraining_lines(check)
    assert "KS p = 0.0099996," in lines[1], lines[1]  # .3g showed "0.01", the threshold
    assert report._pvalue(0.0099996, check) == "0.0099996"
    assert report._pvalue(float("nan"), check) == "n/a"


def test_efficiencies_and_aucs_near_one_do_not_show_as_one(nearly_perfect):
    y, s, w = nearly_perfect
    auc = roc_auc(y, s, w)
    # the report's cells (4 significant digits showed "1")
    table = report.html_table(["", "test"], [["ROC AUC", auc]], "t")
    assert "<td>1</td>" not in table and f"<td>{auc:.5g}</td>" in table
    assert report._fmt(1.0) == "1" and report._fmt(0.5) == "0.5"
    # the ROC legends (4 decimals showed "1.0000")
    fig = plotting.plot_roc_and_rejection(y, s, w, train=(y, s, w))
    legends = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert all("1.0000" not in text for text in legends), legends
    assert any(f"AUC = {auc:.5f}" in text for text in legends), legends
    # the summary's efficiency table (4 decimals showed "1.0000")
    data = SimpleNamespace(y=y, w=w)
    result = SimpleNamespace(config=SimpleNamespace(task="classification", multiclass=False),
                             test=data, train=data, test_scores=s, train_scores=s,
                             train_fold=None, k=1, trained_events=lambda: (data, s),
                             fold_data=lambda i: (data, data), fold_scores=lambda i: (s, s))
    auc_line = next(line for line in summary._quality_lines(result)
                    if line.startswith("ROC AUC"))
    assert auc_line.split()[2:] == [f"{auc:.5f}"] * 2, auc_line


def test_correlation_matrix_shows_undefined_cells_as_na_and_no_false_100():
    rng = np.random.default_rng(2)
    x = rng.normal(size=2000)
    X = np.c_[x, x + 0.09 * rng.normal(size=2000), np.ones(2000)]  # ~99.6 %, constant
    fig = plotting.plot_correlation_matrices(X, feature_names=["a", "b", "const"])
    ax = fig.axes[0]
    cells = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text()
             for t in ax.texts}
    corr = np.corrcoef(X[:, 0], X[:, 1])[0, 1]
    assert 0.99 < corr < 0.9995
    assert cells[0, 1] == f"{100 * corr:.1f}"  # not "100": the variables are not one
    assert cells[0, 0] == "100"
    assert cells[0, 2] == cells[2, 1] == "n/a"  # was an empty white cell, read as 0 %
    bad = ax.images[0].cmap.get_bad()
    assert bad[3] > 0 and tuple(bad[:3]) != (1.0, 1.0, 1.0)


@pytest.fixture(scope="module")
def coarse_measures():
    """Decorrelation measures of a score with three values: the 10 % and 30 % cuts keep
    far more signal than asked (not measured, NaN); the 50 % cut keeps 53 %."""
    rng = np.random.default_rng(3)
    n = 4000
    y = rng.integers(0, 2, n)
    u = rng.uniform(size=n)
    score = np.where(y == 1, np.where(u < 0.53, 2.0, np.where(u < 0.9, 1.0, 0.0)),
                     np.where(u < 0.1, 2.0, np.where(u < 0.4, 1.0, 0.0)))
    mass = rng.uniform(50, 150, n)
    return decorrelation_measures(score, y, mass, efficiencies=(0.1, 0.3, 0.5), bins=10,
                                  variable="mjj")


def test_summary_decorrelation_table_shows_nan_as_na_and_the_kept_efficiency(
        coarse_measures, monkeypatch):
    m = coarse_measures
    assert np.isnan(m.signal_jsd[:2]).all() and 0.5 < m.achieved_signal_efficiency[2] < 0.55
    monkeypatch.setattr(summary, "decorrelation_of", lambda result: m)
    result = SimpleNamespace(config=SimpleNamespace(params={"decorrelation": "flatness"}),
                             train_fold=None)
    lines = summary._decorrelation_lines(result)
    rows = lines[-3:]
    for row in rows[:2]:  # 1/NaN showed as "inf", NaN as "nan"
        assert "inf" not in row and "nan" not in row and row.split()[-3:] == ["n/a"] * 3, row
    kept = f"{m.achieved_signal_efficiency[2]:.1%}"
    assert rows[2].split()[:2] == ["50%", kept], rows[2]
    assert "1/eff_B" in lines[-4]


def test_sculpting_figure_legends_name_the_kept_efficiency_and_no_nan(coarse_measures):
    m = coarse_measures
    fig = plotting.plot_mass_sculpting(m)
    legends = [t.get_text() for ax in fig.axes for t in ax.get_legend().get_texts()]
    assert not any(re.search(r"\bnan\b", text) for text in legends), legends
    assert any("not reachable" in text for text in legends), legends
    kept = f"{m.achieved_signal_efficiency[2]:.1%}"
    assert any(f"ε_S = {kept} (requested 50%)" in text for text in legends), legends


def test_report_decorrelation_table_shows_nan_as_na_and_the_kept_efficiency(
        coarse_measures, monkeypatch):
    from hepbdt.analysis import outputs

    m = coarse_measures
    monkeypatch.setattr(outputs, "decorrelation_of", lambda result: m)
    config = SimpleNamespace(params={"decorrelation": "flatness"}, decorrelate=["mjj"])
    (section,) = outputs._decorrelation_section(SimpleNamespace(config=config, train_fold=None))
    table = section.html[section.html.index("decorrelation-table"):]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
    assert "inf" not in cells and "nan" not in cells, cells
    assert f"{m.achieved_signal_efficiency[2]:.1%}" in cells and "1/eff_B" in table
    assert cells.count("n/a") >= 6  # the two unmeasured rows: rejection and both 1/JSD
    assert cell(0.99996) == "0.99996" and cell(float("nan")) == "n/a"
