"""The post-fit quantile map (decorrelation_map="ddt"): the map against a brute force, a
flat background efficiency on the toy, the mass read from X or refused, the model file
round trip, hepbdt apply, the exports' refusals and the option errors."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import uproot

from hepbdt import BDTClassifier
from hepbdt.binned import BinnedMatrix
from hepbdt.boosting.ddt import LEVELS, DDTMapWarning, apply_quantile_map, fit_quantile_map
from hepbdt.demo_data import sculpting_arrays
from hepbdt.estimators import NotFittedError
from hepbdt.evaluation import decorrelation_measures
from hepbdt.io.errors import InputError
from hepbdt.model import Forest, ModelFormatError
from hepbdt.persistence import load_model
from hepbdt.scoring import apply
from tests.ntuples import write_ttree

FEATURES = ["mjj", "tau21", "balance", "width", "noise"]


def _toy(n_signal, n_background, seed, features=FEATURES):
    a = sculpting_arrays(n_signal, n_background, seed=seed)
    return (np.column_stack([a[f] for f in features]), a["label"], a["weight"],
            a["mjj"].astype(np.float64))


def test_map_matches_brute_force():
    rng = np.random.default_rng(2)
    n = 1200
    m = rng.uniform(50, 250, n)
    w = rng.uniform(0.5, 1.5, n)
    score = rng.normal(size=n) + 0.01 * m
    spec = fit_quantile_map(score, m, w, None)
    assert len(spec["centres"]) == 4  # 1200 events, 250 a bin
    # bins: weighted quartiles of m; each bin's quantiles: the first score reaching q
    order = np.argsort(m)
    cumulative = np.cumsum(w[order])
    edges = [m[order][np.argmax(cumulative >= q * w.sum())] for q in (0.25, 0.5, 0.75)]
    cell = np.searchsorted(edges, m, side="left")
    for c in range(4):
        inside = cell == c
        s_order = np.argsort(score[inside])
        s_cumulative = np.cumsum(w[inside][s_order])
        expected = [score[inside][s_order][np.argmax(s_cumulative >= min(q, 1 - 1e-12) * w[inside].sum())]
                    for q in LEVELS]
        np.testing.assert_allclose(spec["quantiles"][c], expected, rtol=0, atol=0)
        assert spec["centres"][c] == pytest.approx(np.average(m[inside], weights=w[inside]))
    # F: the bins' CDFs (linear between quantiles) mixed linearly in m between centres
    probe_m = np.array([spec["centres"][1], 0.7 * spec["centres"][1] + 0.3 * spec["centres"][2],
                        10.0, 400.0])
    probe_s = np.array([0.3, 1.2, -0.5, 2.0])
    cdf = [np.interp(probe_s, spec["quantiles"][c], LEVELS) for c in range(4)]
    expected = [cdf[1][0], 0.7 * cdf[1][1] + 0.3 * cdf[2][1], cdf[0][2], cdf[3][3]]
    np.testing.assert_allclose(apply_quantile_map(spec, probe_s, probe_m), expected, rtol=1e-12)


def test_flat_background_efficiency_on_the_toy():
    X, y, w, m = _toy(6000, 12000, 1)
    Xt, yt, wt, mt = _toy(6000, 12000, 2)
    options = dict(n_trees=40, max_depth=3, random_state=0, decorrelation="flatness")
    flat = BDTClassifier(**options).fit(X, y, w, decorrelate=m)
    mapped = BDTClassifier(decorrelation_map="ddt", **options).fit(X, y, w, decorrelate=m)
    np.testing.assert_array_equal(flat.forest_.value, mapped.forest_.value)  # the same trees
    assert mapped.forest_.extra["decorrelation_map"]["feature"] == 0  # mjj is column 0
    score = mapped.decision_function(Xt)
    assert score.min() >= 0 and score.max() <= 1
    background = yt == 0
    quarter = np.searchsorted(np.quantile(mt[background], [0.25, 0.5, 0.75]), mt)
    for cut in (0.5, 0.9):  # the same background efficiency in every mass quarter
        efficiency = [wt[region & (score > cut)].sum() / wt[region].sum()
                      for region in (background & (quarter == q) for q in range(4))]
        # about 1 - cut: the map is of the training events' scores, and the test events'
        # background scores lie a little higher (overtraining), in every quarter alike
        assert np.mean(efficiency) == pytest.approx(1 - cut, rel=0.15)
        assert max(efficiency) - min(efficiency) < 0.35 * np.mean(efficiency)
    bins = np.linspace(mt.min(), mt.max(), 51)
    before = decorrelation_measures(flat.decision_function(Xt), yt, mt, wt, (0.5,), bins)
    after = decorrelation_measures(score, yt, mt, wt, (0.5,), bins)
    assert after.at(0.5)[1] > 2 * before.at(0.5)[1]
    assert after.at(0.5)[0] > 5


def test_mass_from_x_or_given_or_refused(tmp_path):
    X, y, w, m = _toy(1500, 3000, 1)
    # ten trees that split on m (column 0) make a score that jumps with m inside the map's
    # bins: F > 0.9 keeps none of the background for m in 151-191, and the fit says so
    with pytest.warns(DDTMapWarning, match=r"F > 0.9 keeps 0.000 of the class for m in \[15"):
        inside = BDTClassifier(n_trees=10, max_depth=3, decorrelation_map="ddt").fit(
            X, y, w, decorrelate=m)
    region = (y == 0) & (m > 152) & (m < 190)
    assert region.sum() > 150 and not (inside.decision_function(X)[region] > 0.9).any()
    np.testing.assert_array_equal(inside.decision_function(X),
                                  inside.decision_function(X, decorrelate=m))
    staged = list(inside.staged_predict_proba(X))
    np.testing.assert_array_equal(staged[-1], inside.predict_proba(X))
    np.testing.assert_array_equal(inside.predict_proba(X)[:, 1], inside.decision_function(X))
    binned = BinnedMatrix.from_features(X.astype(np.float32), inside.bin_edges_)
    with pytest.raises(ValueError, match="X is binned"):
        inside.decision_function(binned)
    np.testing.assert_allclose(inside.decision_function(binned, decorrelate=m),
                               inside.decision_function(X))
    outside = BDTClassifier(n_trees=10, max_depth=3, decorrelation_map="ddt").fit(
        X[:, 1:], y, w, decorrelate=m)
    assert outside.forest_.extra["decorrelation_map"]["feature"] is None
    for call in (outside.decision_function, outside.predict_proba, outside.predict,
                 lambda x: next(outside.staged_decision_function(x))):
        with pytest.raises(ValueError, match="not one of its features.*decorrelate=m"):
            call(X[:, 1:])
    path = tmp_path / "outside.json"
    outside.save(path)
    loaded = load_model(path)
    np.testing.assert_array_equal(loaded.decision_function(X[:, 1:], decorrelate=m),
                                  outside.decision_function(X[:, 1:], decorrelate=m))
    plain = BDTClassifier(n_trees=3, max_depth=2).fit(X, y, w)
    with pytest.raises(ValueError, match="drop decorrelate"):
        plain.decision_function(X, decorrelate=m)


def _ntuple(path, X, names):
    write_ttree(path, "Events", {n: X[:, j].astype(np.float32) for j, n in enumerate(names)})


def test_apply_reads_the_mass_from_the_features_or_refuses(tmp_path):
    X, y, w, m = _toy(1000, 2000, 1)
    data = tmp_path / "events.root"
    _ntuple(data, X, FEATURES)
    names = {"inside": FEATURES, "outside": FEATURES[1:]}
    for name, features in names.items():
        columns = [FEATURES.index(f) for f in features]
        frame = pd.DataFrame(X[:, columns], columns=features)  # named: apply reads them
        model = BDTClassifier(n_trees=10, max_depth=3, decorrelation_map="ddt")
        model.fit(frame, y, w, decorrelate=m)
        path = tmp_path / f"{name}.json"
        model.save(path)
        if name == "inside":
            apply(path, data, tmp_path / "scores.root", tree="Events")
            with uproot.open(tmp_path / "scores.root") as file:
                got = file["Events"]["bdt_score"].array(library="np")
            np.testing.assert_allclose(got, model.decision_function(frame), rtol=1e-12)
        else:
            with pytest.raises(ValueError, match="not one of its features"):
                apply(path, data, tmp_path / "refused.root", tree="Events")
            assert not (tmp_path / "refused.root").exists()


def test_apply_of_an_entry_without_the_mass_is_one_error_line(tmp_path):
    # the combinations audit: a traceback (the model's ValueError) instead of one line
    from hepbdt.cli import main

    X, y, w, m = _toy(1000, 2000, 1)
    frame = pd.DataFrame(X, columns=FEATURES)
    model = BDTClassifier(n_trees=5, max_depth=2, decorrelation_map="ddt")
    model.fit(frame, y, w, decorrelate=frame[FEATURES[0]].to_numpy())
    model.save(tmp_path / "ddt.json")
    X = X[:50].copy()
    X[7, 0] = np.nan  # one entry outside the training's selection
    _ntuple(tmp_path / "events.root", X, FEATURES)
    out = tmp_path / "friend.root"
    with pytest.raises(InputError, match=r"events.root.*from id 0: .*NaN or infinite for 1 of 50 events "
                                         r"\(the first at row 7\)"):
        apply(tmp_path / "ddt.json", tmp_path / "events.root", out, tree="Events")
    assert main(["apply", str(tmp_path / "ddt.json"), str(tmp_path / "events.root"),
                 "-o", str(out)]) == 1
    assert not out.exists()


def test_exports_refuse_and_a_broken_map_is_refused(tmp_path):
    X, y, w, m = _toy(500, 1000, 1)
    model = BDTClassifier(n_trees=5, max_depth=2, decorrelation_map="ddt").fit(
        X, y, w, decorrelate=m)
    for export in (lambda: model.save_tmva(tmp_path / "m.xml"),
                   lambda: model.save_onnx(tmp_path / "m.onnx"),
                   lambda: model.save_cpp(tmp_path / "m.h")):
        with pytest.raises(ValueError, match="decorrelation_map='ddt'.*save\\(\\)"):
            export()
    doc = model.forest_.to_dict()
    for key, value in (("feature", 9), ("centres", [2.0, 1.0]), ("levels", [0.5, 0.2]),
                       ("quantiles", [[0.0]])):
        broken = json.loads(json.dumps(doc))
        broken["extra"]["decorrelation_map"][key] = value
        with pytest.raises(ModelFormatError, match="decorrelation_map"):
            Forest.from_dict(broken)


@pytest.mark.parametrize("options,decorrelate,match", [
    ({"decorrelation_map": "quantile"}, "m", r"expected None or 'ddt'"),
    ({"decorrelation_map": "ddt", "decorrelation_target": "both"}, "m",
     r"one of \('background', 'signal'\)"),
    ({"decorrelation_map": "ddt"}, "two", "along one variable"),
    ({"decorrelation_map": "ddt"}, None, "needs the variable"),
])
def test_bad_map_options_are_refused(options, decorrelate, match):
    X, y, w, m = _toy(200, 300, 1)
    values = {"m": m, "two": np.column_stack([m, m]), None: None}
    with pytest.raises(ValueError, match=match):
        BDTClassifier(n_trees=3, **options).fit(X, y, w, decorrelate=values[decorrelate])


def test_a_refused_map_leaves_no_fitted_model():
    # the model was kept with its unmapped score, which decision_function then gave as F
    X = np.random.default_rng(0).normal(size=(300, 3))
    y = np.r_[np.zeros(15), np.ones(285)].astype(int)  # 15 background events: too few
    clf = BDTClassifier(n_trees=5, max_depth=2, decorrelation_map="ddt")
    with pytest.raises(ValueError, match="too few"):
        clf.fit(X, y, decorrelate=X[:, 0])
    with pytest.raises(NotFittedError):
        clf.decision_function(X)


def test_a_float64_mass_column_is_read_from_x():
    # float64 X and decorrelate=X[:, 0]: the column was not recognised (X is held as
    # float32), so predicting without decorrelate= was refused as if it were no feature
    rng = np.random.default_rng(1)
    X = rng.normal(size=(2000, 3))
    y = (X[:, 1] + 0.5 * X[:, 0] + rng.normal(size=2000) > 0).astype(int)
    clf = BDTClassifier(n_trees=10, max_depth=2, decorrelation_map="ddt")
    clf.fit(X, y, decorrelate=X[:, 0])
    assert clf.forest_.extra["decorrelation_map"]["feature"] == 0
    given = clf.decision_function(X, decorrelate=X[:, 0].astype(np.float32))
    np.testing.assert_array_equal(clf.decision_function(X), given)


def test_a_tie_takes_the_middle_of_its_levels():
    # A score that many events share (a saturated AdaBoost score, a leaf) is a run of equal
    # quantiles; it took the run's top level, so a tie of the most background-like score
    # passed every cut. Brute force: the tie's weight fraction below and up to it, per bin.
    rng = np.random.default_rng(4)
    n = 4000
    m = rng.uniform(50, 250, n)
    w = rng.uniform(0.5, 1.5, n)
    tied = rng.random(n) < np.where(m < 150, 0.6, 0.2)  # 60 % and 20 % at the lowest score
    score = np.where(tied, -1.0, rng.normal(size=n))
    spec = fit_quantile_map(score, m, w, None)
    centres = np.asarray(spec["centres"])
    # events at a bin's centre read that bin's CDF alone
    for c, centre in enumerate(centres):
        q = np.asarray(spec["quantiles"][c])
        run = np.flatnonzero(q == -1.0)
        expected = 0.5 * (LEVELS[run[0]] + LEVELS[run[-1]])
        got = apply_quantile_map(spec, np.array([-1.0]), np.array([centre]))[0]
        assert got == pytest.approx(expected, abs=1e-12)
        assert 0.05 < got < 0.45  # the middle of a run from level 0 to about 0.2 or 0.6
        # an untied score is read as before: linear between the quantiles
        s = float(np.quantile(score[~tied], 0.7))
        assert apply_quantile_map(spec, np.array([s]), np.array([centre]))[0] == pytest.approx(
            np.interp(s, q, LEVELS), abs=1e-12)
    F = apply_quantile_map(spec, score, m)
    low = m < 140
    for cut in (0.5, 0.9):  # the low-mass tie (60 %) no longer passes whole
        kept = np.sum(w[low] * (F[low] > cut)) / np.sum(w[low])
        assert kept <= 1 - cut + 0.03


def test_a_mass_given_against_x_s_column_is_refused():
    # The trees read X's mass column; a different decorrelate= would map with another
    # mass (a cut kept 0.53 of the background instead of 0.1).
    X, y, w, m = _toy(1500, 3000, 1)
    model = BDTClassifier(n_trees=5, max_depth=3, decorrelation_map="ddt").fit(
        X, y, w, decorrelate=m)
    np.testing.assert_array_equal(model.decision_function(X, decorrelate=m),
                                  model.decision_function(X))
    for other in (m / 1000, np.roll(m, 1)):
        with pytest.raises(ValueError, match="column 0, and decorrelate differs"):
            model.decision_function(X, decorrelate=other)


def test_learning_curve_of_a_mapped_model_is_of_its_trees():
    """The map is made for the final model's scores: the curve's log loss was that of the
    mapped F at every stage (0.96 at 10 trees, no probability) and did not reach its
    minimum at the early stop the fit's own validation loss chose. Now the trees' loss,
    against scikit-learn's log loss of the unmapped probabilities."""
    from sklearn.metrics import log_loss, roc_auc_score

    from hepbdt.evaluation import learning_curve
    from hepbdt.plotting import plot_learning_curve

    X, y, w, m = _toy(1500, 1500, 5)
    Xt, yt, wt, _ = _toy(1500, 1500, 6)
    model = BDTClassifier(n_trees=12, max_depth=2, random_state=0,
                          decorrelation_map="ddt").fit(X, y, w, decorrelate=m)
    curve = learning_curve(model, (X, y, w), (Xt, yt, wt), match_class_mix=False)
    assert curve.before_map
    raw = next(s for k, s in enumerate(model._staged_raw(Xt), start=1) if k == 5)
    p = model._link(raw)
    at = list(curve.n_trees).index(5)
    assert curve.test_loss[at] == pytest.approx(log_loss(yt, p, sample_weight=wt), rel=1e-9)
    assert curve.test_auc[at] == pytest.approx(roc_auc_score(yt, raw, sample_weight=wt),
                                               abs=1e-12)
    labels = [ax.get_ylabel() for ax in plot_learning_curve(curve).axes]
    assert all("before the DDT map" in label for label in labels)


def test_a_large_sample_takes_at_most_100_bins_at_exact_percentiles():
    # 30,000 events of unit weight would make 120 bins of 250; the map takes 100, cut at
    # the first m whose count reaches k / 100 of the events, k n / 100 in integers (numpy's
    # inverted-CDF percentile rounds 0.27 n up to 8,101 events)
    rng = np.random.default_rng(7)
    n = 30_000
    m = rng.uniform(50, 250, n)
    score = rng.normal(size=n)
    spec = fit_quantile_map(score, m, np.ones(n), None)
    edges = np.sort(m)[np.arange(1, 100) * n // 100 - 1]
    cell = np.searchsorted(edges, m, side="left")
    expected = [m[cell == c].mean() for c in range(100)]
    np.testing.assert_allclose(spec["centres"], expected, rtol=1e-12)


def test_the_map_needs_20_weighted_events_and_a_positive_total():
    # the module's rule: 20 events of non-zero weight fit, 19 are refused, and so is a
    # total of exactly 0 (+1 and -1 in turn), not only a negative one
    score, m = np.arange(20.0), np.linspace(50, 250, 20)
    spec = fit_quantile_map(score, m, np.ones(20), None)
    assert len(spec["centres"]) == 2
    with pytest.raises(ValueError, match="19 of non-zero weight are too few"):
        fit_quantile_map(score[:19], m[:19], np.ones(19), None)
    signs = np.tile([1.0, -1.0], 20)
    with pytest.raises(ValueError, match="weights sum to 0"):
        fit_quantile_map(np.arange(40.0), np.linspace(50, 250, 40), signs, None)


@pytest.mark.parametrize("tie, tied_score", [(0.0, 0.0), (0.6, -5.0), (0.6, 5.0)])
def test_a_map_that_keeps_its_promise_does_not_warn(tie, tied_score):
    # F > c keeps 1 - c of each bin (brute force below) where the score moves slowly with m,
    # and a tie at the lowest or the highest score (60 % of the low-mass half) is no broken
    # promise: no cut can split it, so the fit must not warn on any
    rng = np.random.default_rng(4)
    n = 4000
    m = rng.uniform(50, 250, n)
    w = rng.uniform(0.5, 1.5, n)
    tied = rng.random(n) < np.where(m < 150, tie, 0.0)
    score = np.where(tied, tied_score, rng.normal(size=n) + 0.002 * m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DDTMapWarning)
        spec = fit_quantile_map(score, m, w, None)
    F = apply_quantile_map(spec, score, m)
    if tie and tied_score < 0:  # a tie at the first bin's lowest score: half its fraction
        first = m <= np.sort(m)[n // 16]  # about the first of the 16 bins
        fraction = w[first & tied].sum() / w[first].sum()
        at_centre = apply_quantile_map(spec, np.array([tied_score]), np.array(spec["centres"][:1]))
        assert at_centre[0] == pytest.approx(fraction / 2, abs=0.03)
    high = m > 160  # untied: F > 0.5 keeps half of the weight, as a weighted median says
    assert np.sum(w[high] * (F[high] > 0.5)) / np.sum(w[high]) == pytest.approx(0.5, abs=0.04)



@pytest.mark.parametrize("case", ["one-event cell", "two-event cell", "one-event last cell"])
def test_bins_of_fewer_than_2_events_merge_forward_and_the_last_backward(case):
    # 1,000 events cut at the weight's quartiles of m (brute force below); a cell of fewer
    # than 2 events (heavy events reach two quartiles in turn) joins the next, a last one
    # the run before it. Runs by hand; centres: weighted means of m over each run.
    n = 1000
    m = np.linspace(50, 250, n)
    w = np.ones(n)
    if case == "one-event cell":  # events 399 and 400 each reach the next quartile
        w[[399, 400]], runs = 300.0, [[0], [1, 2], [3]]
    elif case == "two-event cell":
        w[[400, 401]], runs = 300.0, [[0], [1], [2], [3]]
    else:  # and event 998 reaches the third quartile: event 999 alone after it
        w[[399, 400, 998]], runs = 1000.0, [[0], [1, 2, 3]]
    spec = fit_quantile_map(np.cos(m), m, w, None)
    cumulative = np.cumsum(w)
    edges = [m[np.argmax(cumulative >= q * w.sum())] for q in (0.25, 0.5, 0.75)]
    cell = np.searchsorted(edges, m, side="left")
    count, net = np.bincount(cell, minlength=4), np.bincount(cell, weights=w, minlength=4)
    short = [c for c in range(4) if count[c] < 2 or net[c] <= 0]
    assert short == {"one-event cell": [1], "two-event cell": [], "one-event last cell": [1, 3]}[case]
    expected = [np.average(m[np.isin(cell, r)], weights=w[np.isin(cell, r)]) for r in runs]
    np.testing.assert_allclose(spec["centres"], expected, rtol=1e-12)
