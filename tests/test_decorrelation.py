"""Mass decorrelation: the flatness loss against a brute-force integral, strength 0 bit for
bit, sculpting reduced on the toy, the option errors, the measures against scipy, and
``hepbdt train`` with uBoost and the DDT map."""

from __future__ import annotations

import html
import json

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from hepbdt import BDTClassifier
from hepbdt.boosting.decorrelation import FlatnessLoss, flatness_bins
from hepbdt.boosting.losses import Deviance
from hepbdt.demo_data import sculpting_arrays
from hepbdt.evaluation import decorrelation_measures, jensen_shannon_divergence
from hepbdt.persistence import load_model

FEATURES = ["mjj", "tau21", "balance", "width", "noise"]


def brute_flatness(score, w, class_index, group):
    """sum_c sum_b W_b * integral (F_b(s) - F_c(s))^2 ds, summed interval by interval."""
    total = 0.0
    for c in np.unique(class_index[class_index >= 0]):
        mine = class_index == c
        s, ww, g_of = score[mine], w[mine], group[mine]
        grid = np.unique(s)
        w_class = ww.sum()
        for g in np.unique(g_of):
            inside = g_of == g
            w_bin = ww[inside].sum()
            for lo, hi in zip(grid[:-1], grid[1:], strict=True):
                f_bin = ww[inside & (s <= lo)].sum() / w_bin
                f_class = ww[s <= lo].sum() / w_class
                total += w_bin * (f_bin - f_class) ** 2 * (hi - lo)
    return total


@pytest.mark.parametrize("target,columns", [("background", 1), ("both", 2), ("signal", 1)])
def test_flatness_gradient_matches_finite_differences(target, columns):
    rng = np.random.default_rng(3)
    n = 36
    y = (rng.random(n) < 0.5).astype(np.float64)
    m = rng.random((n, columns))
    w = rng.uniform(0.3, 2.0, n)
    score = rng.normal(size=n)  # distinct scores: no ties
    strength = 2.5
    loss = FlatnessLoss(Deviance(), strength, m, y, w, n_bins=3, target=target, tail_floor=None)
    analytic, _ = loss.flatness_terms(score, w)
    eps = 1e-7
    numeric = np.empty(n)
    for i in range(n):
        up, down = score.copy(), score.copy()
        up[i] += eps
        down[i] -= eps
        numeric[i] = strength * (brute_flatness(up, w, loss.class_index, loss.group)
                                 - brute_flatness(down, w, loss.class_index, loss.group)) / (2 * eps)
    np.testing.assert_allclose(analytic, numeric, atol=1e-6)
    assert np.abs(analytic).max() > 0.05
    untouched = loss.class_index < 0
    assert np.all(analytic[untouched] == 0)
    # the per-unit-weight gradient is the deviance's plus the flatness term's / w
    g, _ = loss.gradients(y, score)
    g0, _ = Deviance().gradients(y, score)
    np.testing.assert_allclose(g - g0, analytic / w, rtol=1e-12)


def test_tail_weight_is_the_relative_efficiency_weight():
    rng = np.random.default_rng(8)
    n = 50
    y = (rng.random(n) < 0.5).astype(np.float64)
    m = rng.random((n, 1))
    w = rng.uniform(0.3, 2.0, n)
    score = rng.normal(size=n)
    plain = FlatnessLoss(Deviance(), 1.5, m, y, w, n_bins=2, target="both", tail_floor=None)
    tailed = FlatnessLoss(Deviance(), 1.5, m, y, w, n_bins=2, target="both", tail_floor=0.1)
    psi = np.empty(n)
    for i in range(n):  # the class CDF half-way through w_i, brute force
        mine = y == y[i]
        below = w[mine & (score < score[i])].sum() + 0.5 * w[i]
        psi[i] = 1.0 / max(1.0 - below / w[mine].sum(), 0.1) ** 2
    gradient, hessian = tailed.flatness_terms(score, w)
    np.testing.assert_allclose(gradient, psi * plain.flatness_terms(score, w)[0], rtol=1e-12)
    np.testing.assert_allclose(hessian, 2 * 1.5 * np.sqrt(psi) * w, rtol=1e-12)


def test_bins_are_weighted_quantiles_per_class():
    rng = np.random.default_rng(0)
    m = rng.random((1000, 1))
    y = np.r_[np.ones(500), np.zeros(500)]
    class_index, group = flatness_bins(m, y, np.ones(1000), 4, "both")
    assert set(class_index.tolist()) == {0, 1}
    for c in (0, 1):
        counts = np.bincount(group[class_index == c] - 4 * c, minlength=4)
        assert counts.tolist() == [125, 125, 125, 125]


def _toy(n_signal=4000, n_background=8000, seed=1):
    a = sculpting_arrays(n_signal, n_background, seed=seed)
    return np.column_stack([a[f] for f in FEATURES]), a["label"], a["weight"], a["mjj"]


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_strength_zero_is_the_ordinary_model_bit_for_bit(boosting):
    X, y, w, m = _toy(600, 900)
    options = dict(boosting=boosting, n_trees=15, max_depth=3, subsample=0.8, random_state=4)
    plain = BDTClassifier(**options).fit(X, y, w)
    zero = BDTClassifier(decorrelation="flatness", decorrelation_strength=0.0, **options).fit(
        X, y, w, decorrelate=m)
    for name in ("feature", "threshold", "value", "left", "right"):
        np.testing.assert_array_equal(getattr(plain.forest_, name), getattr(zero.forest_, name))
    np.testing.assert_array_equal(plain.decision_function(X), zero.decision_function(X))


def test_decorrelation_reduces_sculpting_and_saves(tmp_path):
    X, y, w, m = _toy()
    Xt, yt, wt, mt = _toy(seed=2)
    plain = BDTClassifier(n_trees=60, max_depth=3, random_state=0).fit(X, y, w)
    flat = BDTClassifier(n_trees=60, max_depth=3, random_state=0, decorrelation="flatness",
                         decorrelation_strength=1.0).fit(X, y, w, decorrelate=m)
    before = decorrelation_measures(plain.decision_function(Xt), yt, mt, wt)
    after = decorrelation_measures(flat.decision_function(Xt), yt, mt, wt)
    for e in (0.5, 0.7, 0.9):
        assert after.at(e)[1] > 3 * before.at(e)[1]
    assert after.at(0.5)[0] > 4.0  # still a classifier
    assert flat.forest_.extra["decorrelation"]["strength"] == 1.0
    path = tmp_path / "model.json"
    flat.save(path)
    loaded = load_model(path)
    assert loaded.get_params()["decorrelation"] == "flatness"
    assert loaded.get_params()["decorrelation_strength"] == 1.0
    np.testing.assert_array_equal(loaded.decision_function(Xt), flat.decision_function(Xt))


def test_newton_decorrelates_too():
    X, y, w, m = _toy(3000, 6000)
    kwargs = dict(boosting="newton", n_trees=40, max_depth=3, random_state=0)
    plain = BDTClassifier(**kwargs).fit(X, y, w)
    flat = BDTClassifier(decorrelation="flatness", decorrelation_strength=1.0, **kwargs).fit(
        X, y, w, decorrelate=m)
    before = decorrelation_measures(plain.decision_function(X), y, m, w)
    after = decorrelation_measures(flat.decision_function(X), y, m, w)
    for e in (0.5, 0.7):
        assert after.at(e)[1] > 3 * before.at(e)[1]


@pytest.mark.parametrize("options,fit_kwargs,match", [
    ({"decorrelation": "flatness"}, {}, "needs the variable"),
    ({}, {"decorrelate": "m"}, "decorrelation is None"),
    ({"decorrelation": "disco"}, {"decorrelate": "m"}, r"expected None or one of \('flatness', 'uboost'\)"),
    ({"decorrelation": "flatness", "decorrelation_strength": -1.0}, {"decorrelate": "m"},
     "finite number >= 0"),
    ({"decorrelation": "flatness", "decorrelation_strength": float("nan")}, {"decorrelate": "m"},
     "finite number >= 0"),
    ({"decorrelation": "flatness", "decorrelation_target": "sig"}, {"decorrelate": "m"},
     "'background', 'signal', 'both'"),
    ({"decorrelation": "flatness", "decorrelation_bins": 1}, {"decorrelate": "m"}, r"\[2, 1000\]"),
    ({"decorrelation": "flatness", "boosting": "adaboost"}, {"decorrelate": "m"},
     "use decorrelation='uboost'"),
    ({"decorrelation": "uboost", "boosting": "gradient"}, {"decorrelate": "m"},
     "use decorrelation='flatness'"),
    ({"decorrelation": "uboost", "boosting": "adaboost", "decorrelation_target": "both"},
     {"decorrelate": "m"}, r"one of \('background', 'signal'\)"),
    ({"decorrelation": "uboost", "boosting": "adaboost", "decorrelation_steps": 0},
     {"decorrelate": "m"}, r"integer in \[1, 100\]"),
    ({"decorrelation": "flatness"}, {"decorrelate": "short"}, r"shape \(200,\) or \(200, k\)"),
    ({"decorrelation": "flatness"}, {"decorrelate": "nan"}, "NaN or infinite"),
    ({"decorrelation": "flatness"}, {"decorrelate": "wide"}, "at most 3"),
    # complex masses trained on the real part, masked ones on the hidden values, and a
    # ragged list gave numpy's message
    ({"decorrelation": "flatness"}, {"decorrelate": "complex"}, "expected real numbers"),
    ({"decorrelation": "flatness"}, {"decorrelate": "masked"}, "masked array"),
    ({"decorrelation": "flatness"}, {"decorrelate": "ragged"}, "decorrelate: expected an array"),
])
def test_bad_decorrelation_options_are_refused(options, fit_kwargs, match):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (rng.random(200) < 0.5).astype(int)
    m = rng.random(200)
    values = {"m": m, "short": m[:-1], "nan": np.where(np.arange(200) == 7, np.nan, m),
              "wide": rng.random((200, 4)), "complex": m + 1j,
              "masked": np.ma.masked_less(m, 0.1), "ragged": [[1.0, 2.0], [3.0]] * 100}
    kwargs = {k: values[v] for k, v in fit_kwargs.items()}
    with pytest.raises(ValueError, match=match):
        BDTClassifier(n_trees=3, **options).fit(X, y, decorrelate=kwargs.get("decorrelate"))


def test_multiclass_decorrelation_is_refused():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, 3, 300)
    with pytest.raises(ValueError, match="decorrelation is for two classes"):
        BDTClassifier(n_trees=3, decorrelation="flatness").fit(X, y, decorrelate=X[:, 0])


def test_jsd_matches_scipy_and_measures_match_brute_force():
    rng = np.random.default_rng(5)
    p, q = rng.random(20), rng.random(20)
    q[3] = 0.0
    assert jensen_shannon_divergence(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2,
                                                            rel=1e-10)
    n = 3000
    y = (rng.random(n) < 0.4).astype(int)
    mass = rng.uniform(50, 250, n)
    score = rng.normal(size=n) + y + 0.004 * mass * (1 - y)
    w = rng.uniform(0.5, 1.5, n)
    res = decorrelation_measures(score, y, mass, w, efficiencies=(0.3, 0.5), bins=20)
    edges = np.linspace(mass[y == 0].min(), mass[y == 0].max(), 21)
    for k, e in enumerate((0.3, 0.5)):
        # brute force: the highest cut whose signal efficiency reaches e
        cuts = np.sort(score[y == 1])[::-1]
        eff = np.array([w[(y == 1) & (score >= c)].sum() for c in cuts]) / w[y == 1].sum()
        cut = cuts[np.argmax(eff >= e)]
        assert res.threshold[k] == cut
        passed = (y == 0) & (score >= cut)
        assert res.background_efficiency[k] == pytest.approx(w[passed].sum() / w[y == 0].sum())
        before = np.histogram(mass[y == 0], edges, weights=w[y == 0])[0]
        after = np.histogram(mass[passed], edges, weights=w[passed])[0]
        assert res.background_jsd[k] == pytest.approx(jensenshannon(before, after, base=2) ** 2)
        assert res.background_shapes[k].sum() == pytest.approx(1.0)
    rejection, inverse = res.at(0.5)
    assert rejection == pytest.approx(1 / res.background_efficiency[1])
    assert inverse == pytest.approx(1 / res.background_jsd[1])
    assert res.background_jsd[0] > 0.001  # the mass-dependent background score sculpts


def _config(tmp_path, method: str):
    from hepbdt.analysis import load_config

    text = f"""
features = ["a", "b"]
[samples.s]
files = "s.root"
label = "signal"
[samples.b]
files = "b.root"
label = "background"
[method]
n_trees = 5
{method}
"""
    path = tmp_path / "c.toml"
    path.write_text(text)
    return lambda: load_config(path)


@pytest.mark.parametrize("method,match", [
    ('decorrelation = "flatness"', "needs the variables to decorrelate from"),
    ('decorrelate = ["mjj"]', "decorrelate is set but decorrelation is not"),
    ('decorrelation = "flatness"\ndecorrelate = 3', "expected a list of branch names"),
    ('decorrelation = "uboost"\ndecorrelate = ["mjj"]', "use decorrelation='flatness'"),
    ('decorrelation = "disco"\ndecorrelate = ["mjj"]', "decorrelation='disco' is not valid"),
    ('decorrelation = "flatness"\ndecorrelate = ["mjj"]\ndecorrelation_strength = -2.0',
     "finite number >= 0"),
    ('decorrelation = "flatness"\ndecorrelate = ["mjj +"]', "decorrelate"),
])
def test_configuration_errors(tmp_path, method, match):
    from hepbdt.analysis import ConfigError

    with pytest.raises(ConfigError, match=match):
        _config(tmp_path, method)()


def test_binned_reads_are_refused_for_decorrelation_and_auto_reads_floats(tmp_path):
    # A binned read gives the mass's bin codes (their lower edges), not its values: the
    # flatness loss trained on 255 masses where the float fit saw 15,000.
    from hepbdt.analysis import ConfigError, load_config
    from hepbdt.analysis.estimate import use_binned

    for method in ('decorrelation = "flatness"', 'boosting = "adaboost"\ndecorrelation = "uboost"'):
        path = tmp_path / "c.toml"
        body = _config(tmp_path, f'{method}\ndecorrelate = ["mjj"]')
        text = path.read_text()
        path.write_text("binned = true\n" + text)
        with pytest.raises(ConfigError, match="decorrelation needs the values .* remove binned"):
            body()
        path.write_text('binned = "auto"\nmemory = "1 kB"\n' + text)
        assert not use_binned(load_config(path))  # floats, however short the memory


def test_configuration_reads_uboost(tmp_path):
    config = _config(tmp_path, 'boosting = "adaboost"\ndecorrelation = "uboost"\n'
                     'decorrelate = ["mjj"]\ndecorrelation_steps = 3')()
    assert config.params["decorrelation"] == "uboost"
    assert config.params["decorrelation_steps"] == 3


def test_configuration_reads_decorrelate(tmp_path):
    config = _config(tmp_path, 'decorrelation = "flatness"\ndecorrelate = ["mjj / 2"]\n'
                     'decorrelation_strength = 3.0')()
    assert config.decorrelate == ["mjj / 2"]
    assert config.params["decorrelation_strength"] == 3.0


def test_tmva_option_string_refuses_decorrelation_but_xml_export_works(tmp_path):
    from hepbdt.tmva_options import TMVAOptionError

    X, y, w, m = _toy(300, 600)
    model = BDTClassifier(n_trees=5, max_depth=2, min_node_size=0.05, decorrelation="flatness",
                          decorrelation_strength=1.0).fit(X, y, w, decorrelate=m)
    with pytest.raises(TMVAOptionError, match="decorrelation='flatness' has no TMVA equivalent"):
        model.to_tmva()
    model.save_tmva(tmp_path / "model.weights.xml")
    assert (tmp_path / "model.weights.xml").is_file()


def _sculpting_config(tmp_path, n_signal: int, n_background: int, settings: list[str],
                      output: str):
    """analyses/decorrelation's configuration on a sculpting sample written to tmp_path,
    with ``settings`` (``--set`` texts) and its outputs in tmp_path / output."""
    from pathlib import Path

    from hepbdt.analysis import load_config
    from hepbdt.demo_data import write_sculpting_sample

    paths = write_sculpting_sample(tmp_path / "data", n_signal, n_background)
    files = [f"samples.{sample}.files='{path}'" for sample, path in paths.items()]
    config_path = Path(__file__).parents[1] / "analyses" / "decorrelation" / "decorrelation.toml"
    return load_config(config_path, files + settings, output=tmp_path / output)


@pytest.mark.parametrize("name,options", [
    ("uboost", ["method.boosting='adaboost'", "method.decorrelation='uboost'",
                "method.decorrelation_steps=2"]),
    ("ddt", ["method.decorrelation_map='ddt'"]),
])
def test_train_writes_the_decorrelation_outputs(tmp_path, name, options):
    from hepbdt.analysis import check_inputs, train

    config = _sculpting_config(tmp_path, 1500, 3000,
                               ["method.n_trees=10", "output.report=false", *options], name)
    check_inputs(config)
    result = train(config)
    out = tmp_path / name
    measures = json.loads((out / "decorrelation.json").read_text())["measures"]
    assert [row["signal_efficiency"] for row in measures["rows"]] == [0.1, 0.3, 0.5, 0.7, 0.9]
    for figure in ("sculpting.png", "decorrelation_front.png"):
        assert (out / "figures" / figure).is_file()
    loaded = load_model(out / "model.json")  # the saved model scores the test events alike
    np.testing.assert_allclose(loaded.decision_function(result.test.X), result.test_scores,
                               rtol=1e-12)
    # the header named p.get('decorrelation') and a strength: "(None, strength 1)" for the
    # DDT map alone
    header = next(x for x in result.summary.splitlines() if x.startswith("Mass decorrelation"))
    assert ("the DDT map" in header) == (name == "ddt")
    assert ("uboost, strength" in header) == (name == "uboost") and "None" not in header


def test_a_missing_decorrelation_variable_is_refused_before_training(tmp_path):
    # a test event's NaN failed the measures with a traceback after the whole training
    from pathlib import Path

    from hepbdt.analysis import load_config, train
    from hepbdt.demo_data import write_sculpting_sample
    from hepbdt.io import InputError

    paths = write_sculpting_sample(tmp_path / "data", 1500, 3000)
    files = [f"samples.{sample}.files='{path}'" for sample, path in paths.items()]
    config_path = Path(__file__).parents[1] / "analyses" / "decorrelation" / "decorrelation.toml"
    config = load_config(config_path, files + [
        "method.n_trees=3", "output.report=false", "output.figures=false",
        "method.decorrelate=['where(mjj > 150, nan, mjj)']"], output=tmp_path / "out")
    with pytest.raises(InputError, match=r"decorrelate 'where\(mjj > 150, nan, mjj\)' is "
                                         r"missing \(NaN\) for [\d,]+ event"):
        train(config)
    assert not (tmp_path / "out").exists()


def test_threshold_takes_tied_scores_together():
    # A cut keeps or drops tied scores together: with signed weights the crossing inside a
    # group of ties depended on the events' order. Brute force over the distinct scores.
    from hepbdt.evaluation.decorrelation import threshold_at_efficiency

    assert threshold_at_efficiency(np.array([3.0, 2, 2, 1]), np.array([0.5, 2, -2, 1.5]), 0.5) == 1
    rng = np.random.default_rng(3)
    for _ in range(500):
        n = int(rng.integers(1, 12))
        s, w = rng.integers(0, 4, n).astype(float), rng.normal(size=n) + 0.3
        if not w.sum() > 0:
            continue
        e = rng.uniform(0.05, 1.0)
        cuts = sorted(set(s), reverse=True)
        expected = next(c for c in cuts if w[s >= c].sum() >= e * w.sum() * (1 - 1e-12))
        assert threshold_at_efficiency(s, w, e) == expected


@pytest.mark.parametrize("change, match", [
    ({"y": [0, 1, 2, 1]}, "1 for signal and 0 for background"),
    ({"score": [0.1, np.nan, 0.3, 0.4]}, "score contains NaN"),
    ({"w": [1.0, 1.0, np.nan, 1.0]}, "NaN or infinite"),
    ({"w": [-1.0, 1.0, -1.0, 1.0]}, "background weights sum to -2"),
])
def test_decorrelation_measures_refuse_what_they_cannot_measure(change, match):
    arrays = {"score": [0.1, 0.2, 0.3, 0.4], "y": [0, 1, 0, 1], "w": [1.0, 1.0, 1.0, 1.0]}
    arrays.update(change)
    with pytest.raises(ValueError, match=match):
        decorrelation_measures(np.array(arrays["score"]), np.array(arrays["y"]), np.arange(4.0),
                               np.array(arrays["w"]))


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_a_strength_beyond_float32_is_refused_not_nan(boosting):
    # 1e38 passed the "finite >= 0" check, overflowed the float32 channels and gave a model
    # of NaN scores with only a warning; 1e30 still trains.
    X, y, w, m = _toy(300, 500)
    options = dict(boosting=boosting, n_trees=3, max_depth=2, decorrelation="flatness")
    fine = BDTClassifier(decorrelation_strength=1e30, **options).fit(X, y, w, decorrelate=m)
    assert np.all(np.isfinite(fine.decision_function(X)))
    with pytest.raises(ValueError, match="beyond float32's range"):
        BDTClassifier(decorrelation_strength=1e38, **options).fit(X, y, w, decorrelate=m)


def test_measures_refuse_text_bins_and_bin_extreme_masses():
    rng = np.random.default_rng(0)
    y = np.r_[np.ones(100), np.zeros(100)].astype(int)
    score = rng.normal(size=200) + 2 * y
    with pytest.raises(ValueError, match="bins='10': expected a whole number"):
        decorrelation_measures(score, y, rng.uniform(0, 1, 200), bins="10")
    for mass in (np.where(y == 0, 1e17, 2e17),  # lo + 1 == lo
                 np.r_[rng.uniform(0, 1, 100), -1.7e308, 1.7e308, rng.uniform(0, 1, 98)]):
        rows = decorrelation_measures(score, y, mass, efficiencies=[0.2, 0.9]).rows()
        assert len(rows) == 2  # boost-histogram refused the edges before


def _decorrelation_table(html_text: str) -> str:
    """The report's decorrelation section up to its figures (its heading and table)."""
    start = html_text.index("Mass decorrelation</h2>")
    return html_text[start:html_text.index("</table>", start)]


@pytest.mark.parametrize("options,shown", [
    ([], True),  # mjj is a feature: the section is rebuilt from the test events
    (["split.kfold=2", "method.decorrelation_map='ddt'"], True),
    (["features=['tau21', 'balance', 'width', 'noise']"], False),  # not in the trees
])
def test_report_from_scores_rebuilds_the_decorrelation_section(tmp_path, options, shown):
    """`hepbdt report` left the section out without a word (a combination audit)."""
    from hepbdt.analysis import report_from_scores, train

    train(_sculpting_config(tmp_path, 600, 1200,
                            ["method.n_trees=5", "output.figures=false", *options], "out"))
    out = tmp_path / "out"
    again = report_from_scores(out / "model.json", out / "scores.root", tmp_path / "again.html")
    trained, rebuilt = (p.read_text() for p in (out / "report.html", again))
    if shown:
        assert _decorrelation_table(rebuilt) == _decorrelation_table(trained)
        # k-fold: the measures are of every event scored out of fold, which the section
        # says (under a report whose other sections show fold 0, it said "Test events")
        kfold = any(option.startswith("split.kfold") for option in options)
        for text in (trained, rebuilt):
            words = html.unescape(_decorrelation_table(text))
            assert ("All events of the 2 folds, each scored by the model that did not train "
                    "on it" in words) == kfold
            assert ("Test events, cut at each" in words) != kfold
    else:
        section = rebuilt[rebuilt.index("Mass decorrelation</h2>"):]
        assert "Not shown: mjj is not among the model's features" in section[:400]


@pytest.mark.parametrize("scale", [0.3, 0.7])
def test_flatness_cells_do_not_depend_on_the_weights_scale(scale):
    """The cells' edges were weighted quantiles of the float32 weights, where 3 x fl32(0.1)
    != fl32(0.3): integer weights times 0.3 or 0.7 moved events between cells and scores
    by up to 0.34 (a tolerance audit). Integer weights whose background total is a
    multiple of the cell count put cell edges exactly on events."""
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(1000), np.ones(1000)].astype(int)
    m = rng.uniform(0, 200, y.size)
    X = np.c_[rng.normal(size=y.size) + y + m / 100 * (y == 0),
              rng.normal(size=y.size)].astype(np.float32)
    w = rng.integers(1, 4, y.size).astype(float)
    r = w[y == 0].sum() % 10
    w[0] -= r if w[0] > r else -(10 - r)

    def scores(weights):
        clf = BDTClassifier(n_trees=30, max_depth=3, random_state=0, min_node_size=0.0,
                            decorrelation="flatness", decorrelation_strength=1.0)
        return clf.fit(X, y, sample_weight=weights, decorrelate=m).decision_function(X)

    np.testing.assert_allclose(scores(w * scale), scores(w), rtol=0, atol=1e-6)


def test_auto_trees_with_flatness_grow_a_fixed_count():
    """n_trees="auto" watched the held-out classification loss, which the flatness term
    raises by design: strength 1 stopped after 3-7 trees and left the background sculpted.
    It now grows a fixed count, and decorrelates as the explicit count does (1/JSD against
    the plain model's, computed by decorrelation_measures on test events)."""
    d = sculpting_arrays(4000, 8000, seed=2)
    X = np.column_stack([d[k] for k in ("mjj", "tau21", "balance", "width", "noise")])
    train = d["event"] % 2 == 0
    test = ~train
    fit = dict(decorrelate=d["mjj"][train], event=d["event"][train])
    auto = BDTClassifier(max_depth=3, decorrelation="flatness").fit(
        X[train], d["label"][train], d["weight"][train], **fit)
    plain = BDTClassifier(max_depth=3).fit(X[train], d["label"][train], d["weight"][train],
                                           event=d["event"][train])
    assert auto.forest_.n_trees == 200 and "flatness term raises" in auto.n_trees_reason_

    def inverse_jsd(model):
        s = model.decision_function(X[test])
        return decorrelation_measures(s, d["label"][test], d["mjj"][test], d["weight"][test],
                                      efficiencies=[0.5]).at(0.5)[1]

    assert inverse_jsd(auto) > 4 * inverse_jsd(plain)


def test_early_stopping_with_flatness_is_refused_and_strength_zero_stays_ordinary():
    """early_stopping (or an eval_set under "auto") with the flatness loss stopped strength 1
    after 3 trees, on the loss the term raises: refused. Strength 0 wraps nothing, so its
    "auto" is the ordinary model's, bit for bit (it grew the fixed 200 trees)."""
    from hepbdt.estimators import ParameterError

    d = sculpting_arrays(1000, 2000, seed=3)
    X = np.column_stack([d["mjj"], d["tau21"], d["balance"]])
    y, w, m = d["label"], d["weight"], d["mjj"]
    for options, fit in (({"n_trees": 200, "early_stopping": True}, {}),
                         ({}, {"eval_set": [(X, y)]})):
        with pytest.raises(ParameterError, match="early stopping with decorrelation='flatness'"):
            BDTClassifier(max_depth=3, decorrelation="flatness", **options).fit(
                X, y, w, decorrelate=m, **fit)
    zero = BDTClassifier(max_depth=3, decorrelation="flatness", decorrelation_strength=0.0).fit(
        X, y, w, decorrelate=m)
    plain = BDTClassifier(max_depth=3).fit(X, y, w)
    assert zero.forest_.n_trees == plain.forest_.n_trees
    np.testing.assert_array_equal(zero.decision_function(X), plain.decision_function(X))


def test_kfold_decorrelation_figures_and_json_say_every_event_scored_out_of_fold(
        tmp_path, monkeypatch):
    """A k-fold training's sculpting and decorrelation_front figures, and decorrelation.json,
    measure every event scored out of fold (the report's section says so), where a split's
    measure its test events: the figures had no title and the front's legend said "this
    model", the file no word of whose events (a k-fold audit)."""
    import uproot
    from matplotlib.figure import Figure

    from hepbdt import plotting
    from hepbdt.analysis import report_from_scores, train

    calls = {}

    def recorder(name):
        def draw(*args, **kwargs):  # records the call; an empty figure saves quickly
            calls[name] = (args, kwargs)
            return Figure()
        return draw

    for name in ("plot_mass_sculpting", "plot_decorrelation_front"):
        monkeypatch.setattr(plotting, name, recorder(name))
    train(_sculpting_config(tmp_path, 600, 1200, ["method.n_trees=5", "output.report=false",
                                                  "split.kfold=3"], "out"))
    figures = dict(calls)
    out = tmp_path / "out"
    saved = json.loads((out / "decorrelation.json").read_text())
    # the measures are of every TestTree event: the rejection at each row's cut, recomputed
    with uproot.open(out / "scores.root") as file:
        test = file["TestTree"].arrays(["bdt_score", "classID", "weight", "fold"], library="np")
    assert set(test["fold"]) == {0, 1, 2}
    signal = test["classID"] == 0
    for row in saved["measures"]["rows"]:
        passing = test["bdt_score"] >= row["threshold"]
        w = test["weight"]
        assert row["background_rejection"] == pytest.approx(
            w[~signal].sum() / w[~signal & passing].sum(), rel=1e-9)
    said = "All events of the 3 folds, each scored by the model that did not train on it"
    assert saved["events"] == said
    for name in ("plot_mass_sculpting", "plot_decorrelation_front"):
        assert figures[name][1]["suptitle"] == said
    assert list(figures["plot_decorrelation_front"][0][0]) == ["the 3 folds' models"]
    # the report's section, written again from the score trees, names the models alike
    calls.clear()
    report_from_scores(out / "model.json", out / "scores.root", tmp_path / "again.html",
                       n_repeats=1)
    assert list(calls["plot_decorrelation_front"][0][0]) == ["the 3 folds' models"]


def test_measures_take_one_mass_bin():
    """bins=1 is a whole number >= 1: one bin holds every event, so each shape is [1] and
    each JSD 0 (scipy's); the background efficiency is the brute-force fraction."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 400)
    score = rng.normal(y, 1.0)
    mass = rng.uniform(50.0, 150.0, 400)
    m = decorrelation_measures(score, y, mass, efficiencies=[0.5], bins=1)
    np.testing.assert_array_equal(m.background_shapes, [[1.0]])
    assert m.background_jsd[0] == jensenshannon([1.0], [1.0], base=2) ** 2 == 0.0
    assert m.background_efficiency[0] == np.mean(score[y == 0] >= m.threshold[0])


def test_measures_of_small_weights_and_a_cut_keeping_no_background_against_scipy():
    """Weights of 0.001 (every bin after a cut holds less than 1): the background JSD is
    scipy's jensenshannon(base=2)**2 of np.histogram; where the cut keeps no background
    (signal scores all above), the rejection is inf and the JSD NaN, not 1 and a number."""
    rng = np.random.default_rng(11)
    n = 400
    y = np.repeat([1, 0], n // 2)
    mass = rng.uniform(50, 150, n)
    w = np.full(n, 1e-3)
    overlap = rng.normal(size=n) + y + 0.01 * mass * (1 - y)
    res = decorrelation_measures(overlap, y, mass, w, efficiencies=(0.5,), bins=10)
    cut = np.sort(overlap[y == 1])[::-1][n // 4 - 1]
    passed = (y == 0) & (overlap >= cut)
    edges = np.linspace(mass[y == 0].min(), mass[y == 0].max(), 11)
    before = np.histogram(mass[y == 0], edges, weights=w[y == 0])[0]
    after = np.histogram(mass[passed], edges, weights=w[passed])[0]
    assert after.max() < 1 and res.threshold[0] == cut
    assert res.background_jsd[0] == pytest.approx(jensenshannon(before, after, base=2) ** 2,
                                                  rel=1e-9)
    apart = np.where(y == 1, 10.0 + rng.random(n), rng.random(n))
    res = decorrelation_measures(apart, y, mass, w, efficiencies=(0.5,), bins=10)
    rejection, inverse = res.at(0.5)
    assert res.background_efficiency[0] == 0.0 and rejection == np.inf
    assert np.isnan(res.background_jsd[0]) and np.isnan(inverse)
    apart[-1] = 20.0  # one background event passes: its bin alone after the cut
    res = decorrelation_measures(apart, y, mass, w, efficiencies=(0.5,), bins=10)
    one = np.histogram(mass[-1:], edges, weights=w[-1:])[0]
    assert res.background_efficiency[0] == pytest.approx(1 / (n // 2), rel=1e-12)
    assert res.background_jsd[0] == pytest.approx(jensenshannon(before, one, base=2) ** 2,
                                                  rel=1e-9)


@pytest.mark.parametrize("score", [[0.1, np.nan, 0.3], [], [[0.1, 0.2]]])
def test_threshold_refuses_nan_empty_or_2d_scores(score):
    from hepbdt.evaluation.decorrelation import threshold_at_efficiency

    with pytest.raises(ValueError, match="1-d array of at least one score and no NaN"):
        threshold_at_efficiency(np.asarray(score, dtype=float), np.ones(np.shape(score)), 0.5)
