"""Training workflows: k-fold by event number (no event is scored by a model that trained on
it), the k-fold manifest and report, regression outputs, a refused TMVA export."""

from __future__ import annotations

import base64
import html
import json
import re
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.analysis import ConfigError, load_config, report_from_scores, train
from hepbdt.analysis.workflow import TrainingError
from hepbdt.evaluation import overtraining_test
from hepbdt.kfold import KFoldModel
from hepbdt.persistence import load_model as load
from hepbdt.scoring import apply

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "analyses" / "demo.toml"
DATA = ROOT / "data"
FEW = ["preselection='(nJet >= 2) & (event % 5 == 0)'", "method.n_trees=15"]


@pytest.fixture(scope="module")
def kfold(tmp_path_factory):
    out = tmp_path_factory.mktemp("kfold")
    config = load_config(DEMO, [*FEW, "split.kfold=3", "output.figures=false"], output=out)
    return train(config)


def test_no_event_is_scored_by_a_model_that_trained_on_it(kfold):
    out = kfold.output_dir
    model = load(out / "model.json")
    assert isinstance(model, KFoldModel) and model.k == 3 and model.by == "event"
    with uproot.open(out / "scores.root") as file:
        train_tree = file["TrainTree"].arrays(library="np")
        test_tree = file["TestTree"].arrays(library="np")
    events = test_tree["event"]
    assert len(np.unique(events)) == len(events)  # every event scored once
    np.testing.assert_array_equal(test_tree["fold"], np.mod(events, 3))
    X = np.column_stack([test_tree[name] for name in list(test_tree)[:11]])
    for i, fold_model in enumerate(model.models):
        trained_on = train_tree["event"][train_tree["fold"] == i]
        # Model i trained on exactly the events of the other folds ...
        assert np.all(np.mod(trained_on, 3) != i)
        assert set(trained_on.tolist()) == set(events[np.mod(events, 3) != i].tolist())
        # ... and every event it scored is one it never saw.
        scored = np.mod(events, 3) == i
        assert not np.isin(events[scored], trained_on).any()
        np.testing.assert_array_equal(fold_model.decision_function(X[scored]),
                                      test_tree["bdt_score"][scored])
    np.testing.assert_array_equal(model.decision_function(X, events), test_tree["bdt_score"])


def test_kfold_manifest_apply_and_report(kfold, tmp_path):
    out = kfold.output_dir
    manifest = json.loads((out / "model.json").read_text())
    assert manifest["kind"] == "kfold" and manifest["k"] == 3 and manifest["by"] == "event"
    assert manifest["models"] == [f"model_fold{i}.json" for i in range(3)]
    assert all((out / f"model_fold{i}.weights.xml").is_file() for i in range(3))
    model = load(out / "model.json")
    assert type(hepbdt.load_model(out / "model.json")) is type(model)  # one loader for both kinds
    friend = tmp_path / "friend.root"
    apply(out / "model.json", str(DATA / "background_ttbar.root"), friend, event_branch=model.by)
    with uproot.open(friend) as file:
        applied = file["Events"].arrays(library="np")
    with uproot.open(out / "scores.root") as file:
        test = file["TestTree"].arrays(["event", "bdt_score"], library="np")
    score_of = dict(zip(applied["event"].tolist(), applied["bdt_score"].tolist(), strict=True))
    ttbar = test["event"] >= 3_000_000
    np.testing.assert_array_equal([score_of[e] for e in test["event"][ttbar].tolist()],
                                  test["bdt_score"][ttbar])

    text = (out / "report.html").read_text()
    assert '<table id="kfold-table">' in text and 'id="fig-kfold-roc"' in text
    assert text.count("<tr><td>") >= 4  # a row per fold and the mean
    assert "Per fold:" in kfold.summary and "over 3 folds" in kfold.summary
    again = report_from_scores(out / "model.json", out / "scores.root", tmp_path / "r.html")
    assert '<table id="kfold-table">' in again.read_text()
    # the training's verdict over the folds, as the summary has it (checked against each
    # fold's own test in test_kfold_overtraining_check_is_per_fold); the report's
    # overtraining section has fold 0's alone
    summary = kfold.summary.splitlines()
    start = next(i for i, line in enumerate(summary) if line.startswith("Overtraining ("))
    for html_text in (text, again.read_text()):
        block = re.search(r'<pre id="kfold-overtraining">(.*?)</pre>', html_text, re.S)
        assert block is not None
        assert html.unescape(block.group(1)).splitlines() == summary[start:start + 3]


def test_regression_workflow(tmp_path):
    config_text = (ROOT / "analyses" / "regression" / "mass_regression.toml").read_text()
    config_text = config_text.replace('"../../data/', f'"{DATA}/')
    path = tmp_path / "regression.toml"
    path.write_text(config_text)
    config = load_config(path, ["preselection='(nJet >= 2) & (mjj > 30) & (event % 10 == 0)'",
                                "method.n_trees=10", "output.report=false"], output=tmp_path / "out")
    result = train(config)
    assert config.task == "regression"
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        test = file["TestTree"].arrays(["target", "bdt_score", "mjj"], library="np")
    np.testing.assert_allclose(test["target"], result.test.y)
    assert "RMSE" in result.summary and "resolution" in result.summary
    assert (tmp_path / "out" / "figures" / "predicted_vs_true.png").is_file()
    assert (tmp_path / "out" / "figures" / "resolution.png").is_file()


def test_refused_tmva_export_is_a_warning(tmp_path, monkeypatch):
    import hepbdt.analysis.outputs

    def refuse(model, path, **options):
        raise ValueError("this model has no TMVA equivalent")

    monkeypatch.setattr(hepbdt.analysis.outputs, "to_tmva_xml", refuse)
    config = load_config(DEMO, [*FEW, "method.n_trees=3", "output.report=false",
                                "output.figures=false"], output=tmp_path)
    result = train(config)
    assert not (tmp_path / "model.weights.xml").exists()
    assert "warning: no TMVA XML written: this model has no TMVA equivalent" in result.summary
    assert (tmp_path / "model.json").is_file() and (tmp_path / "scores.root").is_file()


@pytest.mark.parametrize("features, warned", [(["HT * 0", "MET_pt * 0"], True),
                                             (["HT", "MET_pt"], False)])
def test_a_model_that_separates_nothing_is_named_in_the_summary(tmp_path, features, warned):
    # a constant model printed AUC 0.5000 without a word
    config = load_config(DEMO, [*FEW, "method.n_trees=5", "output.report=false",
                                "output.figures=false", f"features={features!r}"],
                         output=tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the estimator's own: no tree made a split
        result = train(config)
    assert bool(np.ptp(result.train_scores) == 0) == warned  # the case is what it says
    text = "warning: the model gives every training event the same score"
    assert (text in result.summary) == warned


def test_classes_beyond_double_precision_are_refused_before_outputs(tmp_path):
    # signal weights 1e19 times the background's with norm = "none": a test AUC of 0.21
    config = load_config(DEMO, [*FEW, "method.n_trees=5", "output.report=false",
                                "samples.signal.scale=1e19", "split.norm='none'"],
                         output=tmp_path / "out")
    with pytest.raises(TrainingError, match=r"beyond 1e\+15 .* norm = \"equal_num_events\""):
        train(config)
    assert not (tmp_path / "out").exists()


def _best_s_over_sqrt_b(y, s, w, scale, min_background):
    """The best S/sqrt(B) cut by direct sums: (S/sqrt(B), t, S, B, nS, nB)."""
    best = (-np.inf,)
    for t in np.unique(s):
        sig, bkg = (s >= t) & (y == 1), (s >= t) & (y == 0)
        ws = np.broadcast_to(scale, w.shape) * w  # scale: one number, or one per event
        S, B = ws[sig].sum(), ws[bkg].sum()
        if np.count_nonzero(bkg) >= min_background and B > 0 and S / np.sqrt(B) > best[0]:
            best = (S / np.sqrt(B), t, S, B, np.count_nonzero(sig), np.count_nonzero(bkg))
    return best


def _summary_best(summary):
    """(value, S, B, nS, nB) of the summary's S/sqrt(B) line."""
    match = re.search(r"S/sqrt\(B\) +(\S+) at score >= \S+: S = (\S+) \+- \S+ \((\d+) MC\), "
                      r"B = (\S+) \+- \S+ \((\d+) MC\)", summary)
    assert match, summary
    value, S, n_s, B, n_b = match.groups()
    return float(value), float(S), float(B), int(n_s), int(n_b)


def _html_rows(text, table_id):
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', text)
    assert table, table_id
    header = re.findall(r"<th>(.*?)</th>", table.group(1))
    body = table.group(1).split("<tbody>")[1]
    rows = [dict(zip(header, re.findall(r"<td>(.*?)</td>", r), strict=True))
            for r in re.findall(r"<tr>(.*?)</tr>", body)]
    return {row["figure of merit"]: row for row in rows}


@pytest.fixture(scope="module")
def half_split(tmp_path_factory):
    out = tmp_path_factory.mktemp("split")
    config = load_config(DEMO, [*FEW, "split.train_fraction=0.5", "output.figures=false",
                                "output.tmva_xml=false", "output.permutation_repeats=1",
                                "output.min_background_events=25"], output=out)
    return train(config)


def test_split_yields_are_of_the_whole_sample(half_split, tmp_path):
    result = half_split
    assert result.config.output.min_background_events == 25 and result.test_fraction == 0.5
    test = result.test
    # Each sample's test events stand for all of its events: x (n_train + n_test) / n_test.
    n_train = np.bincount(result.train.sample_index, minlength=len(test.sample_names))
    n_test = np.bincount(test.sample_index, minlength=len(test.sample_names))
    scale = ((n_train + n_test) / n_test)[test.sample_index]
    value, t, S, B, n_s, n_b = _best_s_over_sqrt_b(test.y, result.test_scores, test.w, scale, 25)
    keep = result.test_scores >= t
    assert S == pytest.approx(np.sum((scale * test.w)[keep & (test.y == 1)]))
    assert ("S, B: expected yield of the whole sample: each sample's test weights x its events / "
            "its test events (see the samples above; nominal test fraction 1 - train_fraction = "
            "0.5)" in result.summary)
    assert "at least 25 background MC events" in result.summary
    got = _summary_best(result.summary)
    assert got[:3] == pytest.approx((value, S, B), rel=1e-3) and got[3:] == (n_s, n_b)

    text = (result.output_dir / "report.html").read_text()
    assert ("each sample&#x27;s test weights x its events / its test events (the test events a "
            "split of the training and test events, nominal test fraction 0.5 as given" in text
            and "at least 25 background MC events" in text)
    row = _html_rows(text, "significance-table")["S/sqrt(B)"]
    assert float(row["S"]) == pytest.approx(S, rel=1e-3)
    assert float(row["B"]) == pytest.approx(B, rel=1e-3)
    assert (int(row["signal MC events"]), int(row["background MC events"])) == (n_s, n_b)

    # From the trees alone the test fraction is that of the events, and the report says so.
    again = report_from_scores(result.output_dir / "model.json",
                               result.output_dir / "scores.root", tmp_path / "r.html",
                               n_repeats=1).read_text()
    assert "(the test events a split of the training and test events, test fraction not " \
        "given" in again
    row = _html_rows(again, "significance-table")["S/sqrt(B)"]
    assert float(row["S"]) == pytest.approx(S, rel=1e-3)
    # the rebuilt report keeps the training's min_background_events (its set records it;
    # the default 10 gave another best cut), unless one is given
    assert int(row["background MC events"]) == n_b and "at least 25 background MC" in again
    loose = report_from_scores(result.output_dir / "model.json",
                               result.output_dir / "scores.root", tmp_path / "r1.html",
                               n_repeats=1, min_background_events=1).read_text()
    assert "at least 1 background MC events" in loose


def test_kfold_yields_use_every_event_once(kfold):
    test = kfold.test
    value, t, S, B, n_s, n_b = _best_s_over_sqrt_b(test.y, kfold.test_scores, test.w, 1.0, 10)
    assert "expected yield of the whole sample: test weights x 1/1, every event scored out " \
        "of fold" in kfold.summary
    got = _summary_best(kfold.summary)
    assert got[:3] == pytest.approx((value, S, B), rel=1e-3) and got[3:] == (n_s, n_b)
    text = (kfold.output_dir / "report.html").read_text()
    row = _html_rows(text, "kfold-significance-table")["S/sqrt(B)"]
    assert float(row["S"]) == pytest.approx(S, rel=1e-3)
    assert (int(row["signal MC events"]), int(row["background MC events"])) == (n_s, n_b)
    # The significance section shows fold 0 alone, each sample's events scaled by its events
    # over its fold-0 events; the nominal fraction is 1/k (fold 0's own share, here 0.337,
    # was called "as given", the end-to-end audit found)
    assert "nominal test fraction 0.3333 as given" in text


@pytest.mark.parametrize(("value", "message"), [
    ("-1", "[output] min_background_events (from --set): must be an integer >= 0"),
    ("2.5", "[output] min_background_events (from --set): expected an integer"),
])
def test_min_background_events_is_checked(value, message, tmp_path):
    with pytest.raises(ConfigError) as info:
        load_config(DEMO, [f"output.min_background_events={value}"], output=tmp_path)
    assert message in str(info.value)


def test_outputs_announce_themselves_and_compute_the_learning_curve_once(tmp_path,
                                                                         monkeypatch):
    import hepbdt.analysis.result as result_module

    calls = []
    original = result_module.learning_curve

    def counted(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(result_module, "learning_curve", counted)
    config = load_config(DEMO, [*FEW, "output.permutation_repeats=1"], output=tmp_path / "out")
    lines = []
    result = train(config, echo=lines.append)
    assert len(calls) == 1  # one curve for the figure and the report
    assert result.learning_curve is not None and result.learning_curve.n_trees[-1] == 15
    for text in ("writing model.json, TMVA XML, scores.root", "writing figures (6)",
                 "computing the learning curve (15 trees", "writing report.html"):
        assert any(line.startswith(text) for line in lines), (text, lines)
    assert lines.index("writing report.html") == len(lines) - 1  # the last output step
    report = (tmp_path / "out" / "report.html").read_text()
    assert 'id="fig-learning-curve"' in report
    # The figures already drawn into figures/ are embedded, not drawn a second time.
    for name in ("roc", "learning_curve", "correlation"):
        png = (tmp_path / "out" / "figures" / f"{name}.png").read_bytes()
        assert base64.b64encode(png).decode() in report, name
    # The command in the report's provenance gives this configuration again.
    command = re.search(r"<td>command</td><td class=\"text\">(.*?)</td>", report).group(1)
    words = shlex.split(html.unescape(command))
    assert words[:3] == ["hepbdt", "train", str(DEMO)]
    overrides = [words[i + 1] for i, w in enumerate(words) if w == "--set"]
    again = load_config(DEMO, overrides, output=words[words.index("--output") + 1])
    assert again.params == config.params and again.samples == config.samples
    assert again.output.directory == config.output.directory


def test_a_figure_that_cannot_be_drawn_is_a_warning(tmp_path, monkeypatch):
    # e.g. a test class of no positive net weight (negative weights), which a plot
    # normalised to unit area refuses: the other outputs are still written.
    import hepbdt.plotting

    def refuse(*args, **kwargs):
        raise ValueError("the background test weights sum to -3: no positive net weight")

    monkeypatch.setattr(hepbdt.plotting, "plot_overtraining", refuse)
    config = load_config(DEMO, [*FEW, "method.n_trees=3", "output.permutation_repeats=1"],
                         output=tmp_path)
    result = train(config)
    warning = ("warning: figure overtraining not drawn: the background test weights sum to -3: "
               "no positive net weight")
    assert warning in result.warnings and warning in result.summary
    figures = tmp_path / "figures"
    assert not (figures / "overtraining.png").exists() and (figures / "roc.png").is_file()
    report = (tmp_path / "report.html").read_text()
    assert 'id="fig-overtraining-error"' in report and 'id="fig-roc"' in report


def test_kfold_by_the_samples_event_is_named_in_the_summary(tmp_path):
    # every sample gives event = "event" and the top level none: the summary said "by None"
    text = DEMO.read_text().replace('event = "event"', "# (no top-level event)", 1)
    for name in ("signal", "qcd", "ttbar"):
        text = text.replace(f"[samples.{name}]\n", f'[samples.{name}]\nevent = "event"\n', 1)
    config_path = tmp_path / "demo.toml"
    config_path.write_text(text.replace('"../data/', f'"{DATA}/').replace("'../data/",
                                                                           f"'{DATA}/"))
    config = load_config(config_path, [*FEW, "method.n_trees=3", "split.kfold=3",
                                       "output.figures=false", "output.report=false"],
                         output=tmp_path / "out")
    assert config.event is None
    result = train(config)
    assert result.kfold_by == "event" and "3-fold by event;" in result.summary


def test_kfold_overtraining_check_is_per_fold(kfold):
    """The k-fold summary's overtraining p-values come from each fold's model on its own
    training and test events (read back from scores.root), the smallest of the k times k:
    pooling the folds compared every event with itself."""
    with uproot.open(kfold.output_dir / "scores.root") as file:
        tr = file["TrainTree"].arrays(["fold", "classID", "weight", "bdt_score"], library="np")
        te = file["TestTree"].arrays(["fold", "classID", "weight", "bdt_score"], library="np")
    checks = []
    for i in range(3):
        a, b = tr["fold"] == i, te["fold"] == i
        checks.append(overtraining_test(tr["bdt_score"][a], tr["classID"][a] == 0,
                                        tr["weight"][a], te["bdt_score"][b],
                                        te["classID"][b] == 0, te["weight"][b]))
    assert "the smallest of the 3 folds' x 3 (Bonferroni)" in kfold.summary
    for part in ("signal", "background"):
        line = re.search(rf"^  {part} +KS p = (\S+), chi2 p = (\S+) ->", kfold.summary, re.M)
        for printed, name in zip(line.groups(), ("ks_pvalue", "chi2_pvalue"), strict=True):
            expected = min(1.0, 3 * min(getattr(getattr(c, part), name) for c in checks))
            assert float(printed.rstrip(",")) == pytest.approx(expected, rel=6e-3, abs=1e-3)


def test_the_summary_ranks_by_tmvas_variable_importance(kfold):
    """The summary's ranking is TMVA's (squared gains per tree), not the linear sum that
    ranked a weak variable second where TMVA ranks it last; k-fold: the folds' mean."""
    names = list(kfold.config.features)
    folds = [hepbdt.evaluation.tmva_importance(m, names, quadrature=True).importance
             for m in kfold.model.models]
    mean = np.mean(folds, axis=0)
    top = [line.split()[1] for line in kfold.summary.split("Top-ranked variables")[1]
           .splitlines()[1:6]]
    assert top == [names[i] for i in np.argsort(-mean, kind="stable")[:5]]
    assert "Top-ranked variables (TMVA's variable importance" in kfold.summary
    # the report and inspect rank fold 0's model: the summary says its ranking is the mean
    assert "; the mean of the 3 folds' models):" in kfold.summary


def test_kfold_overtraining_figure_says_whose_pvalues_it_prints(kfold, monkeypatch):
    """The figure prints fold 0's p-values where the summary's verdict combines the folds;
    it said neither."""
    from hepbdt import plotting

    titles = []
    draw = plotting.plot_overtraining

    def spy(*args, **kwargs):
        titles.append(kwargs.get("title"))
        return draw(*args, **kwargs)

    monkeypatch.setattr(plotting, "plot_overtraining", spy)
    from hepbdt.analysis.outputs import draw_figures

    draw_figures(kfold, kfold.output_dir / "more-figures")
    assert titles and titles[0].startswith("fold 0 of 3")


def test_the_method_line_gives_each_folds_tree_count_and_rounds():
    # n_trees="auto" folds stop apart: the line gave fold 0's count as every fold's, and a
    # multi-class model's rounds as its trees
    from hepbdt.analysis.summary import _trees_text

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y2, y3 = (X[:, 0] > 0).astype(int), np.digitize(X[:, 0], [-0.5, 0.5])
    three, five = (hepbdt.BDTClassifier(n_trees=n, max_depth=2).fit(X, y2) for n in (3, 5))
    assert _trees_text([three, five, three]) == "3, 5, 3 trees (one count a fold)"
    assert _trees_text([five, five]) == "5 trees"
    multi = hepbdt.BDTClassifier(n_trees=4, max_depth=2).fit(X, y3)
    assert multi.forest_.n_trees == 12 and _trees_text([multi]) == "4 rounds of 3 trees"
    samme = hepbdt.BDTClassifier(boosting="adaboost", n_trees=4, max_depth=2).fit(X, y3)
    assert _trees_text([samme]) == f"{samme.n_trees_} trees"


def test_kfold_regression_summary_gives_the_rmse_in_significant_digits(tmp_path):
    # the folds' mean test RMSE printed with an AUC's four decimals: 1.1e-05 +- 1.8e-06
    # showed as "0.00001 +- 0.0000"
    config_path = tmp_path / "kf.toml"
    config_path.write_text(f"""tree = "Events"
preselection = "(nJet >= 2) & (event % 4 == 0)"
event = "event"
features = ["HT", "MET_pt"]
[samples.qcd]
files = "{DATA}/background_qcd.root"
target = "true_mass * 1e-7"
[split]
kfold = 3
[method]
n_trees = 5
max_depth = 3
[output]
report = false
figures = false
""")
    result = train(load_config(config_path, [], output=tmp_path / "out"))
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        te = file["TestTree"].arrays(["fold", "bdt_score", "target", "weight"], library="np")
    rmse = np.array([np.sqrt(np.average((te["bdt_score"][f] - te["target"][f]) ** 2,
                                        weights=te["weight"][f]))
                     for f in (te["fold"] == k for k in range(3))])
    line = next(x for x in result.summary.splitlines() if "test RMSE:" in x)
    mean, spread = (float(v) for v in re.findall(
        r"test RMSE: mean (\S+), standard deviation (\S+) \(ddof 0\)", line)[0])
    assert mean == pytest.approx(rmse.mean(), rel=1e-3)
    assert spread == pytest.approx(rmse.std(), rel=1e-3) and spread > 0


def test_kfold_learning_curve_figure_says_it_is_fold_0s(kfold, tmp_path, monkeypatch):
    """A k-fold training's learning_curve.png shows fold 0's model alone, where the ROC,
    scores and ranking figures beside it show every fold: its title says so (it had none)."""
    from matplotlib.figure import Figure

    from hepbdt import plotting
    from hepbdt.analysis.outputs import draw_figures

    titles = {}

    def recorder(name):
        def draw(*args, **kwargs):  # records the title; an empty figure saves quickly
            titles[name] = kwargs.get("title") or kwargs.get("suptitle")
            return Figure()
        return draw

    for name in [n for n in dir(plotting) if n.startswith("plot_")]:
        monkeypatch.setattr(plotting, name, recorder(name))
    draw_figures(kfold, tmp_path)
    assert titles["plot_learning_curve"].startswith("fold 0 of 3")
    assert titles["plot_ranking"].endswith("the mean of the 3 folds' models")  # as summary's
    # the ROC and the scores of every event, each scored by another model, said nothing
    for name in ("plot_roc_and_rejection", "plot_score_distributions"):
        assert titles[name].startswith("All events of the 3 folds, each scored by the model "
                                       "that did not train on it")
    assert titles["plot_roc_and_rejection"].endswith("training: each model's own training events")


def test_kfold_progress_lines_name_each_fold_as_the_outputs_do(tmp_path):
    """The progress line of fold i's training said "training fold i+1/k on N events", where
    TrainTree, model_fold<i>.json, the per-fold table and the errors call that model fold i:
    the first model's N was printed under "fold 1" (a k-fold audit)."""
    skewed = "preselection='(nJet >= 2) & (event % 5 == 0) & ((event % 3 != 2) | (event % 2 == 0))'"
    config = load_config(DEMO, [skewed, "method.n_trees=5", "split.kfold=3",
                                "output.figures=false", "output.report=false"],
                         output=tmp_path / "out")
    lines = []
    train(config, echo=lines.append)
    printed = {int(i): int(n.replace(",", "")) for i, n in
               (re.fullmatch(r"training fold (\d+)(?: of |/)3 on ([\d,]+) events", line).groups()
                for line in lines if line.startswith("training fold"))}
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        fold = file["TrainTree"]["fold"].array(library="np")
    assert printed == {i: int(np.count_nonzero(fold == i)) for i in range(3)}
    assert len(set(printed.values())) == 3  # the folds differ: a shifted name shows


def test_a_regression_of_a_constant_target_warns_in_a_regressions_words(tmp_path):
    """Every training event predicted alike: the warning spoke of a classifier's scores
    ("it separates nothing") for a regression too."""
    config_path = tmp_path / "const.toml"
    config_path.write_text(f"""tree = "Events"
preselection = "(nJet >= 2) & (event % 10 == 0)"
features = ["HT", "MET_pt"]
[samples.qcd]
files = "{DATA}/background_qcd.root"
target = "125.0"
[method]
n_trees = 3
[output]
report = false
figures = false
""")
    result = train(load_config(config_path, [], output=tmp_path / "out"))
    assert np.ptp(result.train_scores) == 0
    assert any("predicts one value for every training event" in w for w in result.warnings)
    assert not any("separates" in w for w in result.warnings)
