"""The HTML report: written, self-contained, and rendered by headless Chromium."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import html  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
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


def _browser() -> str:
    """Headless Chromium's path; a skip without it (a failure in CI, ``CI=true``)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the browser test runs on Linux (Debian's chromium)")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        why = ("headless Chromium is needed to check the rendered report: apt-get install "
               "chromium (.ci/run installs it when missing)")
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return browser


def _render(html_path, tmp_path):
    """Dump the DOM of the page after headless Chromium loaded it; return render-check."""
    cmd = [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
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
    # summary, samples, efficiencies, overtraining, significance, ranking, provenance,
    # features, options
    assert check["tables"] == 9
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
        ws = np.broadcast_to(scale, w.shape) * w  # scale: one number, or one per event
        S, B = ws[sig].sum(), ws[bkg].sum()
        if np.count_nonzero(bkg) < min_background or B <= 0 or S / np.sqrt(B) <= best_value:
            continue
        best_value = S / np.sqrt(B)
        best = (t, S, np.sqrt(np.sum(ws[sig] ** 2)), B, np.sqrt(np.sum(ws[bkg] ** 2)),
                np.count_nonzero(sig), np.count_nonzero(bkg))
    return best_value, best


def test_significance_table_shows_whole_sample_yields_of_a_half_split(tmp_path):
    train, test = _dataset(21), _dataset(22)
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=3, random_state=0)
    model.fit(train.X, train.y, sample_weight=train.w)
    text = hepbdt.report(model, train, test, tmp_path / "r.html", test_fraction=0.5,
                         n_repeats=1).read_text(encoding="utf-8")
    assert ("each sample&#x27;s test weights x its events / its test events (the test events "
            "a split of the training and test events, nominal test fraction 0.5 as given") in text
    counted = re.search(r"on (\d+) variables; ([\d,]+) training events and ([\d,]+) test", text)
    assert counted and [int(g.replace(",", "")) for g in counted.groups()] == [
        train.X.shape[1], len(train.y), len(test.y)]
    rows = {row["figure of merit"]: row for row in _table_rows(text, "significance-table")}
    assert set(rows) == {"S/sqrt(B)", "S/sqrt(S+B)", "AMS (b_reg = 10)"}
    s_te = model.decision_function(test.X)
    # Each class's test events stand for all its events: x (n_train + n_test) / n_test.
    scale = np.empty(test.y.size)
    for c in (0, 1):
        n_test = np.count_nonzero(test.y == c)
        scale[test.y == c] = (np.count_nonzero(train.y == c) + n_test) / n_test
    value, (t, S, dS, B, dB, nS, nB) = _brute_best_s_over_sqrt_b(test.y, s_te, test.w, scale)
    row = rows["S/sqrt(B)"]
    assert float(row["best cut"]) == pytest.approx(t, rel=1e-3, abs=1e-4)
    assert float(row["value"]) == pytest.approx(value, rel=1e-3)
    # About twice the test sums: the test sample is about half of each class's events.
    keep = s_te >= t
    assert S == pytest.approx(scale[test.y == 1][0] * test.w[keep & (test.y == 1)].sum())
    assert B == pytest.approx(scale[test.y == 0][0] * test.w[keep & (test.y == 0)].sum())
    assert 1.9 < scale.min() <= scale.max() < 2.1
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
    assert ("each sample&#x27;s test weights x its events / its test events (the test events "
            "a split of the training and test events, test fraction not given") in text
    rows = _table_rows(text, "significance-table")
    assert len(rows) == 3
    for row in rows:
        assert row["best cut"] == (f"no cut leaves &gt;= {n_background + 1} background MC "
                                   "events (counted and effective) with B &gt; 0")
        assert row["value"] == row["S"] == row["B"] == "n/a"
    with pytest.raises(ValueError, match="test_fraction must lie in"):
        hepbdt.report(model, train, test, tmp_path / "bad.html", test_fraction=1.5)


# -- what a physicist reads: summary first, provenance, samples, options last --------------

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "analyses" / "demo.toml"


def _dump_dom(html_path, tmp_path):
    """The DOM of the page after headless Chromium loaded it (scripts run)."""
    cmd = [_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp_path / 'chromium-dom'}", "--virtual-time-budget=5000",
           "--dump-dom", html_path.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _sections(dom):
    """{section id: its HTML}, in the order of the page."""
    found = re.findall(r'<section id="([^"]+)">(.*?)</section>', dom, flags=re.S)
    return dict(found)


def _rows(dom, table_id):
    """Body rows of a table as {header: cell text} (cells may carry a class)."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', dom, flags=re.S)
    assert table, table_id
    header = [html.unescape(h) for h in re.findall(r"<th>(.*?)</th>", table.group(1))]
    body = table.group(1).split("<tbody>")[1]
    return [dict(zip(header, [html.unescape(c) for c in
                              re.findall(r"<td[^>]*>(.*?)</td>", row)], strict=True))
            for row in re.findall(r"<tr>(.*?)</tr>", body)]


def _check_reading_order(dom):
    """Summary first, options last and folded, no visible render check."""
    order = list(_sections(dom))
    assert order[0] == "sec-summary" and order[-1] == "sec-options", order
    assert order.index("sec-samples") < order.index("sec-efficiencies") < order.index(
        "sec-overtraining-check") < order.index("sec-significance") < order.index(
        "sec-variable-ranking") < order.index("sec-correlations") < order.index(
        "sec-learning-curve") < order.index("sec-provenance") < order.index("sec-options")
    first_section = dom.index('<section id="sec-summary">')
    assert dom.index("<section") == first_section
    options = _sections(dom)["sec-options"]
    assert re.search(r'<details id="options-details">', options)  # folded: no "open"
    assert "rendered:" not in dom
    check = re.search(r'<div id="render-check"([^>]*)>', dom).group(1)
    assert 'hidden=""' in check and 'data-images-shown="-1"' not in check


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from hepbdt.analysis import load_config, train

    out = tmp_path_factory.mktemp("trained") / "out"
    config = load_config(DEMO, ["preselection='(nJet >= 2) & (event % 5 == 0)'",
                                "method.n_trees=15", "output.figures=false",
                                "output.permutation_repeats=1"], output=out)
    return train(config)


def test_training_report_reads_top_down_in_browser(trained, tmp_path):
    from hepbdt.output_set import file_sha256

    path = trained.output_dir / "report.html"
    dom = _dump_dom(path, tmp_path)
    _check_reading_order(dom)
    summary = _sections(dom)["sec-summary"]
    assert re.search(r'id="summary-verdict">(ok|warning|overtrained)<', summary)
    rows = {row[""]: row for row in _rows(summary, "summary-table")}
    auc = hepbdt.evaluation.roc_auc(trained.test.y, trained.test_scores, trained.test.w)
    assert float(rows["ROC AUC"]["test sample"]) == pytest.approx(auc, abs=1e-4)
    for percent in ("1 %", "10 %", "30 %"):
        assert f"signal efficiency at {percent} background efficiency" in rows
    assert '<figure id="fig-roc"><img alt="' in summary and "log scale" in summary
    assert '<figure id="fig-scores">' in summary

    provenance = _sections(dom)["sec-provenance"]
    assert hepbdt.__version__ in provenance and str(DEMO) in provenance
    assert file_sha256(trained.output_dir / "model.json") in provenance
    assert "--set method.n_trees=15" in html.unescape(provenance)
    files = {row["sample"]: row for row in _rows(provenance, "provenance-samples")}
    assert files["ttbar"]["file"].endswith("background_ttbar.root")
    assert int(files["ttbar"]["entries"]) == 25000 and files["ttbar"]["tree"] == "Events"
    assert "genWeight * xsec * lumi / sumGenWeight" in files["qcd"]["weight"]
    assert "event % 5 == 0" in files["signal"]["cut"]
    aliases = {row["alias"]: row["definition"] for row in _rows(provenance, "provenance-aliases")}
    assert aliases["btag1"] == "Jet_btag[:, 0]"
    assert "Text of the configuration file" in provenance and "[samples.qcd]" in provenance

    test = trained.test
    samples = _rows(_sections(dom)["sec-samples"], "samples")
    assert [r["sample"] for r in samples] == ["signal", "qcd", "ttbar"] * 2
    for row in samples:
        index = test.sample_names.index(row["sample"])
        data = test if row["set"] == "test" else trained.train
        mask = data.sample_index == index
        assert int(row["events"]) == np.count_nonzero(mask)
        assert float(row["sum of weights"]) == pytest.approx(data.w[mask].sum(), rel=1e-3)
        assert float(row["sum of squared weights"]) == pytest.approx(
            np.sum(data.w[mask] ** 2), rel=1e-3)
    assert "normalised per class (norm = equal_num_events" in _sections(dom)["sec-samples"]

    options = _sections(dom)["sec-options"]
    names = {row["option"] for row in _rows(options, "options")}
    assert {"learning_rate", "n_trees", "max_depth", "min_node_size"} <= names
    assert not names & {"criterion", "beta", "epsilon", "use_yes_no_leaf", "reg_lambda",
                        "reg_alpha", "min_child_weight"}


def _sample_dataset(seed, n=1500):
    """Three physics samples (one signal, two backgrounds) in a Dataset."""
    rng = np.random.default_rng(seed)
    sample = rng.integers(0, 3, n)
    y = (sample == 0).astype(int)
    X = rng.normal(size=(n, 3))
    X[:, 0] += y
    w = rng.uniform(0.2, 2.0, n) * np.where(sample == 2, 3.0, 1.0)
    return hepbdt.io.Dataset(X, y, w, sample_index=sample, feature_names=["pt", "eta", "m"],
                             sample_names=["higgs", "qcd", "top"])


def test_report_of_datasets_with_provenance_and_label(tmp_path):
    train, test = _sample_dataset(1), _sample_dataset(2)
    model = hepbdt.BDTClassifier(boosting="adaboost", n_trees=10, max_depth=2,
                                 random_state=0).fit(train.X, train.y, train.w)
    provenance = {"command": "python make_model.py", "config_path": "cards/higgs.toml",
                  "samples": [{"name": "higgs", "role": "signal", "cut": "pt > 20",
                               "files": [{"path": "/data/higgs.root", "tree": "Events",
                                          "entries": 1234}]}],
                  "run by": "the test suite"}
    path = hepbdt.report(model, train, test, tmp_path / "r.html", provenance=provenance,
                         label="Simulation", n_repeats=1)
    dom = _dump_dom(path, tmp_path)
    _check_reading_order(dom)
    provenance_html = html.unescape(_sections(dom)["sec-provenance"])
    for text in ("python make_model.py", "cards/higgs.toml", "/data/higgs.root", "1234",
                 "the test suite"):
        assert text in provenance_html, text
    rows = _rows(dom, "samples")
    assert [(r["sample"], r["class"], r["set"]) for r in rows[:3]] == [
        ("higgs", "signal", "test"), ("qcd", "background", "test"), ("top", "background", "test")]
    cuts = [h for h in rows[0] if h.startswith("efficiency of score")]
    assert len(cuts) == 2 and "1 % background" in cuts[0] and "10 % background" in cuts[1]
    for row, index in zip(rows[:3], range(3), strict=True):
        mask = test.sample_index == index
        assert float(row["sum of weights"]) == pytest.approx(test.w[mask].sum(), rel=1e-3)
    # The background samples' efficiencies at the 1 % cut make at most 1 % of the background.
    background = [(float(r[cuts[0]]), float(r["sum of weights"])) for r in rows[1:3]]
    eff_b = sum(e * w for e, w in background) / sum(w for _, w in background)
    assert 0 < eff_b <= 0.01 + 1e-3
    assert float(rows[0][cuts[1]]) > float(rows[0][cuts[0]]) > 0  # looser cut, more signal
    # The cut as printed selects the events counted (four digits rounded up dropped the
    # events on the cut): each sample's efficiency by hand at the printed cut.
    score = model.decision_function(test.X)
    for header in cuts:
        printed = float(re.search(r"score \u2265 (\S+) \(", header).group(1))
        for row, index in zip(rows[:3], range(3), strict=True):
            mask = test.sample_index == index
            passing = test.w[mask & (score >= printed)].sum() / test.w[mask].sum()
            assert float(row[header]) == pytest.approx(passing, rel=1e-3, abs=1e-6)
    # AdaBoost: its own options shown, none of gradient or newton boosting.
    names = {row["option"] for row in _rows(dom, "options")}
    assert {"criterion", "beta", "use_yes_no_leaf"} <= names
    assert not names & {"learning_rate", "reg_lambda", "epsilon", "early_stopping", "loss"}


def test_report_without_provenance_says_what_it_knows(tmp_path):
    train, test = _dataset(31, n=600), _dataset(32, n=600)
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2, random_state=0)
    model.fit(train.X, train.y, sample_weight=train.w)
    text = hepbdt.report(model, (train.X, train.y, train.w), (test.X, test.y, test.w),
                         tmp_path / "r.html", n_repeats=1).read_text(encoding="utf-8")
    provenance = _sections(text)["sec-provenance"]
    assert hepbdt.__version__ in provenance and "BDTClassifier" in provenance
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", provenance)
    assert [r["feature"] for r in _rows(provenance, "provenance-features")] == [
        "x0", "x1", "x2", "x3"]
    rows = _rows(text, "samples")  # tuples: one row per class and set
    assert [(r["sample"], r["set"]) for r in rows] == [
        ("signal", "test"), ("background", "test"), ("signal", "training"),
        ("background", "training")]
    signal = test.y == 1
    assert float(rows[0]["sum of weights"]) == pytest.approx(test.w[signal].sum(), rel=1e-3)
    assert float(rows[1]["sum of squared weights"]) == pytest.approx(
        np.sum(test.w[~signal] ** 2), rel=1e-3)


def test_regression_summary_shows_rmse_bias_resolution(tmp_path):
    train, test = _dataset(33, n=600), _dataset(34, n=600)
    target = 2.0 * train.X[:, 0]
    model = hepbdt.BDTRegressor(n_trees=5, max_depth=2, random_state=0).fit(train.X, target)
    text = hepbdt.report(model, (train.X, target), (test.X, 2.0 * test.X[:, 0]),
                         tmp_path / "r.html", n_repeats=1).read_text(encoding="utf-8")
    summary = _sections(text)["sec-summary"]
    labels = [r[""] for r in _rows(summary, "summary-table")]
    assert labels[0] == "RMSE" and labels[1].startswith("bias") and "resolution" in labels[2]
    assert '<figure id="fig-predicted-vs-true">' in summary
    assert list(_sections(text))[-1] == "sec-options"
    # a regression has no significance scan: the factor column says what it is alone
    samples = _sections(text)["sec-samples"]
    assert "yields of the whole sample" in samples and "significance scan" not in samples


def test_the_samples_events_are_held_as_positions_not_a_mask_a_sample():
    """A mask a sample held one byte per event of every sample: 300 samples of 1.5M
    events took 440 MB beyond the memory estimate. Each sample's positions, against
    np.flatnonzero of its mask."""
    import importlib

    report = importlib.import_module("hepbdt.report")
    rng = np.random.default_rng(4)
    n, samples = 60_000, 200
    index = rng.integers(0, samples, n)
    y = (index % 3 == 0).astype(np.int8)
    data = SimpleNamespace(sample_index=index, sample_names=[f"s{i}" for i in range(samples)])
    groups = report._groups(data, y, True)
    assert [name for name, _, _ in groups] == data.sample_names
    for i, (_, role, rows) in enumerate(groups):
        np.testing.assert_array_equal(rows, np.flatnonzero(index == i))
        assert role == ("signal" if i % 3 == 0 else "background")
    assert sum(rows.nbytes for _, _, rows in groups) <= 4 * n
    left_out = rng.random(n) < 0.3  # the held-out events: positions among the others
    events = report._Events(np.zeros((n, 1)), y, np.ones(n), np.zeros(n), groups)
    kept = events.without(left_out)
    for i, (_, _, rows) in enumerate(kept.groups):
        np.testing.assert_array_equal(rows, np.flatnonzero(index[~left_out] == i))
    plain = report._groups(SimpleNamespace(), y, True)  # tuples: a group a class
    for (name, _, rows), (expected, label) in zip(plain, [("signal", 1), ("background", 0)],
                                                  strict=True):
        assert name == expected
        np.testing.assert_array_equal(rows, np.flatnonzero(y == label))
