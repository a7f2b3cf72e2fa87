"""The HTML report: written, self-contained, and rendered by headless Chromium."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import hepbdt  # noqa: E402

CLASSIFIER_FIGURES = ["fig-roc", "fig-scores", "fig-overtraining", "fig-significance",
                      "fig-ranking", "fig-permutation", "fig-correlation", "fig-learning-curve"]
REGRESSOR_FIGURES = ["fig-predicted-vs-true", "fig-resolution", "fig-ranking",
                     "fig-permutation", "fig-correlation", "fig-learning-curve"]


def _dataset(seed, n=1200):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    X[:, 0] += y
    X[:, 2] -= 0.6 * y
    w = rng.uniform(0.5, 1.5, n)
    w[:30] *= -1.0
    return SimpleNamespace(X=X, y=y, w=w, feature_names=["pt", "eta", "mass", "phi"])


def _render(html_path, tmp_path):
    """Dump the DOM of the page after headless Chromium loaded it; return render-check."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the browser test runs on Linux (Debian's chromium)")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.fail("headless Chromium is needed to check the rendered report: "
                    "apt-get install chromium (.ci/run installs it when missing)")
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'chromium-profile'}",
           "--virtual-time-budget=5000", "--dump-dom", html_path.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    match = re.search(r'<div id="render-check"([^>]*)>', proc.stdout)
    assert match, proc.stdout[-2000:]
    return {k: int(v) for k, v in re.findall(r'data-([a-z-]+)="(-?\d+)"', match.group(1))}


def _check_html(text, figure_ids):
    for fig_id in figure_ids:
        assert f'<figure id="{fig_id}"><img alt="' in text, fig_id
    assert "could not be drawn" not in text
    # Self-contained: no external resources.
    assert not re.search(r'(src|href)="(https?:|//)', text)
    assert text.count("data:image/png;base64,") == len(figure_ids)


def test_classifier_report_renders_in_browser(tmp_path):
    train, test = _dataset(1), _dataset(2)
    model = hepbdt.BDTClassifier(n_trees=15, max_depth=3, random_state=0)
    model.fit(train.X, train.y, sample_weight=train.w)
    path = hepbdt.report(model, train, test, tmp_path / "out" / "report.html")
    assert path.is_file() and not list(path.parent.glob("*.tmp"))
    text = path.read_text(encoding="utf-8")
    _check_html(text, CLASSIFIER_FIGURES)
    for table_id in ("options", "samples", "efficiency-table", "overtraining-table",
                     "significance-table", "ranking"):
        assert f'<table id="{table_id}">' in text, table_id
    assert "signal efficiency @ eff_B = 0.01" in text and "mass" in text
    check = _render(path, tmp_path)
    assert check["images-total"] == len(CLASSIFIER_FIGURES)
    assert check["images-shown"] == check["images-total"]
    assert check["tables"] == 6
    assert check["cells-total"] > 60 and check["cells-filled"] == check["cells-total"]


def test_regressor_report_from_tuples_renders_in_browser(tmp_path):
    train, test = _dataset(3), _dataset(4)
    target_train = 2.0 * train.X[:, 0] + train.X[:, 1]
    target_test = 2.0 * test.X[:, 0] + test.X[:, 1]
    model = hepbdt.BDTRegressor(n_trees=15, max_depth=3, random_state=0)
    model.fit(train.X, target_train, sample_weight=np.abs(train.w))
    import hepbdt.report as report_module

    # hepbdt.report may be the module once it is imported: it is callable all the same.
    path = report_module(model, (train.X, target_train, train.w), (test.X, target_test),
                         tmp_path / "regression.html")
    text = path.read_text(encoding="utf-8")
    _check_html(text, REGRESSOR_FIGURES)
    assert '<table id="regression-table">' in text
    check = _render(path, tmp_path)
    assert check["images-shown"] == check["images-total"] == len(REGRESSOR_FIGURES)
    assert check["cells-filled"] == check["cells-total"] > 30


def test_report_rejects_mismatched_samples(tmp_path):
    train = _dataset(5, n=200)
    model = hepbdt.BDTClassifier(n_trees=3, max_depth=2, random_state=0)
    model.fit(train.X, train.y)
    with pytest.raises(ValueError, match="train has 4 features but test has 3"):
        hepbdt.report(model, train, (train.X[:, :3], train.y), tmp_path / "r.html")
    with pytest.raises(TypeError, match="must be a Dataset"):
        hepbdt.report(model, train, "test.root", tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


def _table_rows(text, table_id):
    """The body rows of the table ``table_id`` as {header: cell text} dicts."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', text)
    assert table, table_id
    header = re.findall(r"<th>(.*?)</th>", table.group(1))
    body = table.group(1).split("<tbody>")[1]
    return [dict(zip(header, re.findall(r"<td>(.*?)</td>", row), strict=True))
            for row in re.findall(r"<tr>(.*?)</tr>", body)]


def _brute_best_s_over_sqrt_b(y, s, w, scale, min_background=10):
    """The best S/sqrt(B) cut by direct sums: (t, S, dS, B, dB, nS, nB)."""
    best, best_value = None, -np.inf
    for t in np.unique(s):
        sig, bkg = (s >= t) & (y == 1), (s >= t) & (y == 0)
        S, B = scale * w[sig].sum(), scale * w[bkg].sum()
        if np.count_nonzero(bkg) < min_background or B <= 0 or S / np.sqrt(B) <= best_value:
            continue
        best_value = S / np.sqrt(B)
        best = (t, S, scale * np.sqrt(np.sum(w[sig] ** 2)), B,
                scale * np.sqrt(np.sum(w[bkg] ** 2)), np.count_nonzero(sig),
                np.count_nonzero(bkg))
    return best_value, best


def test_significance_table_shows_whole_sample_yields_of_a_half_split(tmp_path):
    train, test = _dataset(21), _dataset(22)
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, random_state=0)
    model.fit(train.X, train.y, sample_weight=train.w)
    text = hepbdt.report(model, train, test, tmp_path / "r.html", test_fraction=0.5,
                         n_repeats=1).read_text(encoding="utf-8")
    assert "expected yield of the whole sample: test weights x 1/0.5" in text
    rows = {row["figure of merit"]: row for row in _table_rows(text, "significance-table")}
    assert set(rows) == {"S/sqrt(B)", "S/sqrt(S+B)", "AMS (b_reg = 10)"}
    s_te = model.decision_function(test.X)
    value, (t, S, dS, B, dB, nS, nB) = _brute_best_s_over_sqrt_b(test.y, s_te, test.w, 2.0)
    row = rows["S/sqrt(B)"]
    assert float(row["best cut"]) == pytest.approx(t, rel=1e-3, abs=1e-4)
    assert float(row["value"]) == pytest.approx(value, rel=1e-3)
    # Twice the test sums: the test sample is half of the events.
    keep = s_te >= t
    assert S == pytest.approx(2 * test.w[keep & (test.y == 1)].sum())
    assert B == pytest.approx(2 * test.w[keep & (test.y == 0)].sum())
    for header, expected in (("S", S), ("S stat. unc.", dS), ("B", B), ("B stat. unc.", dB)):
        assert float(row[header]) == pytest.approx(expected, rel=1e-3), header
    assert (int(row["signal MC events"]), int(row["background MC events"])) == (nS, nB)
    for row in rows.values():
        assert int(row["background MC events"]) >= 10 and float(row["B"]) > 0


def test_report_states_an_estimated_test_fraction_and_a_missing_best_cut(tmp_path):
    train, test = _dataset(23, n=900), _dataset(24, n=300)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0)
    model.fit(train.X, train.y, sample_weight=train.w)
    n_background = int(np.count_nonzero(test.y == 0))
    text = hepbdt.report(model, train, test, tmp_path / "r.html", n_repeats=1,
                         min_background_events=n_background + 1).read_text(encoding="utf-8")
    assert ("expected yield of the whole sample: test weights x 1/0.25 (test fraction "
            "estimated from the event counts, n_test / (n_train + n_test) = 300 / 1200)") in text
    rows = _table_rows(text, "significance-table")
    assert len(rows) == 3
    for row in rows:
        assert row["best cut"] == (f"no cut leaves &gt;= {n_background + 1} background MC "
                                   "events with B &gt; 0")
        assert row["value"] == row["S"] == row["B"] == "n/a"
    with pytest.raises(ValueError, match="test_fraction must lie in"):
        hepbdt.report(model, train, test, tmp_path / "bad.html", test_fraction=1.5)
