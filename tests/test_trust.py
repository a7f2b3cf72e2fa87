"""Silent wrong answers that are now refused or right: feature order and names, the
README's ten lines through ``hepbdt apply``, one weighted quantile, strict model files,
stale predictions, tiny weights, TMVA defaults, and ROOT's ``^``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
import uproot

import hepbdt
from hepbdt.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def _data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] - 0.7 * X[:, 2] + rng.normal(scale=0.7, size=n) > 0).astype(int)
    return X, y


# -- feature order and names -----------------------------------------------------------------

def test_named_input_is_reordered_by_name_and_checked() -> None:
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=["pt", "eta", "phi", "m"])
    model = hepbdt.BDTClassifier(n_trees=20).fit(frame, y)
    reference = model.decision_function(frame)
    shuffled = frame[["m", "phi", "pt", "eta"]]
    np.testing.assert_array_equal(model.decision_function(shuffled), reference)
    as_dict = {name: frame[name].to_numpy() for name in ["phi", "m", "eta", "pt"]}
    np.testing.assert_array_equal(model.decision_function(as_dict), reference)
    assert not np.allclose(model.decision_function(shuffled.to_numpy()), reference)
    with pytest.raises(ValueError, match=r"lacks the features \['eta'\]"):
        model.decision_function(frame[["pt", "phi", "m"]])
    with pytest.raises(ValueError, match="expecting 4 features"):
        model.decision_function(X[:, :3])


def test_dataset_X_keeps_names_and_selecting_columns_drops_them() -> None:
    data = hepbdt.Dataset(np.ones((5, 3)), y=np.array([0, 1, 0, 1, 1]),
                          feature_names=["a", "mjj", "c"],
                          feature_definitions={"mjj": "sqrt(m2)", "a": "a"})
    assert data.X.feature_names == ("a", "mjj", "c")
    assert data.X.feature_definitions == {"mjj": "sqrt(m2)"}
    assert data.X[1:3].feature_names == ("a", "mjj", "c")
    assert getattr(data.X[:, :2], "feature_names", None) is None
    assert getattr(data.X[:, [2, 0, 1]], "feature_names", None) is None
    assert data.take([0, 2]).feature_definitions == {"mjj": "sqrt(m2)"}


def _readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Python in ten lines\n\n```python\n(.*?)```", text, re.S)
    assert block, "README.md lost its 'Python in ten lines' block"
    return block.group(1)


@pytest.mark.slow
def test_readme_ten_lines_give_a_model_that_apply_applies(tmp_path, monkeypatch) -> None:
    (tmp_path / "data").symlink_to(DATA)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(_readme_block(), "README.md", "exec"), namespace)  # the README, verbatim
    model = hepbdt.load_model("model.json")
    assert list(model.feature_names_in_) == ["HT", "MET_pt", "Jet_pt[:, 0]", "Jet_btag[:, 0]",
                                             "Jet_btag[:, 1]"]
    assert main(["apply", "model.json", "data/signal.root", "--output", "friend.root",
                 "--event", "event", "--no-progress"]) == 0
    with uproot.open("friend.root") as file:
        friend = file["Events"].arrays(["bdt_score", "event"], library="np")
    data = hepbdt.read(hepbdt.Sample("s", "data/signal.root", label="signal"),
                       list(model.feature_names_in_), event="event")
    np.testing.assert_array_equal(friend["event"], data.event)
    np.testing.assert_allclose(friend["bdt_score"], model.decision_function(data.X), rtol=1e-12)


def test_apply_refuses_a_model_without_feature_names(tmp_path) -> None:
    X, y = _data()
    model = hepbdt.BDTClassifier(n_trees=3).fit(X, y)
    with pytest.raises(hepbdt.io.InputError, match="has no feature names"):
        hepbdt.apply(model, DATA / "signal.root", tmp_path / "out.root")


# -- one weighted quantile ---------------------------------------------------------------------

def _brute_force_quantile(values, weights, q):
    """The smallest value v with (summed weight of values <= v) >= q * total weight."""
    total = np.sum(weights)
    for v in np.sort(values):
        if np.sum(weights[values <= v]) >= q * total:
            return v
    return np.max(values)


def test_one_weighted_quantile_for_leaves_and_resolutions() -> None:
    from hepbdt.boosting import losses
    from hepbdt.evaluation import _data

    values = np.array([1.0, 2.0, 3.0, 4.0])
    weights = np.array([1.0, 1.0, -1.5, 1.0])
    assert losses.weighted_quantile is _data.weighted_quantile
    assert losses.weighted_quantile(values, weights, 0.5) == 1.0
    rng = np.random.default_rng(3)
    for _ in range(50):
        v = rng.normal(size=30).round(1)
        w = rng.uniform(0.1, 2.0, size=30)
        q = rng.uniform(0.05, 0.95)
        assert losses.weighted_quantile(v, w, q) == _brute_force_quantile(v, w, q)


# -- model files ---------------------------------------------------------------------------------

def _strict(text: str):
    def refuse(token):
        raise ValueError(f"not JSON: {token}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("boosting", ["gradient", "adaboost"])
def test_model_files_are_strict_json_and_round_trip(tmp_path, boosting) -> None:
    X, y = _data()
    X[::7, 1] = np.nan
    model = hepbdt.BDTClassifier(boosting=boosting, n_trees=10).fit(X, y)
    assert np.isinf(model.forest_.threshold).any()  # leaves: what used to be 'Infinity'
    model.save(tmp_path / "m.json")
    _strict((tmp_path / "m.json").read_text())
    again = hepbdt.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(again.forest_.threshold, model.forest_.threshold)
    np.testing.assert_array_equal(again.decision_function(X), model.decision_function(X))


def test_a_split_with_a_nan_threshold_is_refused(tmp_path) -> None:
    X, y = _data()
    model = hepbdt.BDTClassifier(n_trees=3).fit(X, y)
    doc = model.to_dict()
    split = doc["forest"]["feature"].index(next(f for f in doc["forest"]["feature"] if f >= 0))
    doc["forest"]["threshold"][split] = "NaN"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(hepbdt.model.ModelFormatError, match="threshold NaN"):
        hepbdt.load_model(tmp_path / "m.json")


def test_changing_a_leaf_changes_the_prediction() -> None:
    from hepbdt.engine.predict import predict_naive

    X, y = _data()
    model = hepbdt.BDTClassifier(n_trees=5).fit(X, y)
    before = model.decision_function(X)
    model.forest_.value[model.forest_.feature < 0] += 1.0
    after = model.decision_function(X)
    np.testing.assert_allclose(after, before + 5 * model.forest_.tree_weights[0] * 1.0, rtol=1e-9)
    np.testing.assert_allclose(after, predict_naive(X, model.forest_) + model.forest_.base_score,
                               rtol=1e-9)


# -- weights of any scale ----------------------------------------------------------------------------

@pytest.mark.parametrize("loss", ["deviance", None])
def test_tiny_cross_section_weights_train_as_unit_weights(loss) -> None:
    X, y = _data()
    unit = hepbdt.BDTClassifier(n_trees=10, loss=loss).fit(X, y, np.ones(len(y)))
    tiny = hepbdt.BDTClassifier(n_trees=10, loss=loss).fit(X, y, np.full(len(y), 1e-15))
    np.testing.assert_allclose(tiny.decision_function(X), unit.decision_function(X),
                               rtol=1e-4, atol=1e-6)


def test_tiny_weights_regression_leaves_are_not_zeroed() -> None:
    X, _ = _data()
    target = 3.0 * X[:, 0]
    unit = hepbdt.BDTRegressor(n_trees=10).fit(X, target)
    tiny = hepbdt.BDTRegressor(n_trees=10).fit(X, target, np.full(len(target), 1e-15))
    np.testing.assert_allclose(tiny.predict(X), unit.predict(X), rtol=1e-4, atol=1e-5)


# -- TMVA defaults and ROOT syntax -----------------------------------------------------------------

def test_tmva_writer_default_bagging_fraction_is_tmvas() -> None:
    from hepbdt.interop.tmva_export import DEFAULT_OPTIONS
    from hepbdt.tmva_options import TMVA_OPTIONS

    defaults = dict(DEFAULT_OPTIONS)
    assert float(defaults["GradBaggingFraction"]) == TMVA_OPTIONS["GradBaggingFraction"][1] == 0.6
    assert defaults["GradBaggingFraction"] == defaults["BaggedSampleFraction"]
    # TMVA writes one setting under both names: its own files always agree.
    for path in sorted((ROOT.parent / "shared" / "tmva").glob("*.weights.xml")):
        options = dict(re.findall(r'<Option name="(\w+)" modified="\w+">([^<]*)</Option>',
                                  path.read_text()))
        assert options["GradBaggingFraction"] == options["BaggedSampleFraction"], path.name


def test_caret_is_refused_as_roots_power() -> None:
    from hepbdt.io.expressions import Expression, ExpressionError

    with pytest.raises(ExpressionError, match=r"write \*\* for a power"):
        Expression("Jet_pt^2", "feature")
    # between two conditions too: ROOT computes a power there (1 when both are false)
    with pytest.raises(ExpressionError, match=r"!= between two conditions"):
        Expression("(a > 1) ^ (b < 2)", "cut")
    Expression("(a > 1) != (b < 2)", "cut")  # the exclusive or, as ROOT and Python agree


def test_zero_weight_events_do_not_move_the_cuts() -> None:
    X, y = _data(200)
    w = np.ones(len(y))
    w[::3] = 0
    with_zero = hepbdt.BDTClassifier(n_trees=5).fit(X, y, w)
    without = hepbdt.BDTClassifier(n_trees=5).fit(X[w > 0], y[w > 0])
    np.testing.assert_array_equal(with_zero.forest_.threshold, without.forest_.threshold)


def _hepbdt_environment() -> dict[str, str]:
    """The environment variables whose names hold HEPBDT."""
    return {k: v for k, v in os.environ.items() if "HEPBDT" in k}


# as the run began: every test module is collected before any test runs
HEPBDT_ENVIRONMENT = _hepbdt_environment()


def test_environment_is_untouched() -> None:
    # the tests above set nothing globally; what the user set stays as given (the README's
    # HEPBDT_TMVA_READER=1 and HEPBDT_TEST_WORKERS=0 failed the check that none was set)
    assert _hepbdt_environment() == HEPBDT_ENVIRONMENT


def test_save_and_reload_keep_what_the_tmva_export_needs(tmp_path) -> None:
    """The bin edges are saved: the XML's variable ranges are the same after a reload."""
    from hepbdt.interop import to_tmva_xml

    X, y = _data()
    X[:, 3] *= 100.0  # a range wider than the split thresholds cover
    model = hepbdt.BDTClassifier(n_trees=5, max_depth=2).fit(X, y)
    model.save(tmp_path / "m.json")
    again = hepbdt.load_model(tmp_path / "m.json")
    for a, b in zip(again.bin_edges_, model.bin_edges_, strict=True):
        np.testing.assert_array_equal(a, b)
    to_tmva_xml(model, tmp_path / "a.xml")
    to_tmva_xml(again, tmp_path / "b.xml")
    stamp = re.compile(r'<Info name="(Date|Host)" value="[^"]*"/>')
    assert stamp.sub("", (tmp_path / "a.xml").read_text()) == stamp.sub(
        "", (tmp_path / "b.xml").read_text())
