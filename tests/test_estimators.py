"""Estimator API, persistence, determinism and bad input."""

from __future__ import annotations

import json
import os
import warnings

import numba
import numpy as np
import pytest
from sklearn.metrics import log_loss

import hepbdt
import hepbdt._util as hepbdt_util
import hepbdt.estimators as estimators_module
from hepbdt.engine import apply_bins, predict_binned
from hepbdt.engine.predict import predict_naive
from hepbdt.model import ModelFormatError


def _data(n=2000, m=5, seed=0, nan=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(size=n) > 0.5).astype(int)
    X[rng.random((n, m)) < nan] = np.nan
    w = rng.uniform(0.5, 1.5, n)
    return X, y, w


@pytest.fixture(scope="module")
def fitted():
    X, y, w = _data()
    return X, y, w, hepbdt.BDTClassifier(boosting="newton", n_trees=40, max_depth=4).fit(X, y, w)


def test_raw_and_binned_predictions_agree_on_training_data(fitted):
    X, _, _, model = fitted
    f = model.forest_
    codes = apply_bins(X, model.bin_edges_)
    binned = predict_binned(codes, f.feature, f.bin_threshold, f.left, f.right, f.missing_left,
                            f.value, f.tree_offsets, f.tree_weights, np.zeros(X.shape[0]))
    np.testing.assert_allclose(model.decision_function(X), binned + f.base_score, atol=1e-12)
    np.testing.assert_allclose(model.decision_function(X[:200]),
                               predict_naive(X[:200], f) + f.base_score, atol=1e-12)


def test_staged_scores_end_at_the_full_score(fitted):
    X, _, _, model = fitted
    stages = list(model.staged_decision_function(X))
    assert len(stages) == model.n_trees_ == 40
    np.testing.assert_allclose(stages[-1], model.decision_function(X), atol=1e-12)
    np.testing.assert_allclose(stages[9], model.forest_.raw_score(X, n_trees=10), atol=1e-12)
    probs = list(model.staged_predict_proba(X[:10]))
    np.testing.assert_allclose(probs[-1], model.predict_proba(X[:10]))


def test_probabilities_and_labels(fitted):
    X, y, _, model = fitted
    p = model.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    order = np.argsort(model.decision_function(X))
    assert np.all(np.diff(p[order, 1]) >= 0)  # a monotone map of the score
    np.testing.assert_array_equal(model.predict(X), (p[:, 1] > 0.5).astype(int))
    assert model.score(X, y) > 0.7


def test_string_labels_name_their_signal_class():
    X, y, _ = _data()
    labels = np.where(y == 1, "sig", "bkg")
    with pytest.raises(ValueError, match="which class is signal"):
        hepbdt.BDTClassifier(n_trees=10).fit(X, labels)
    model = hepbdt.BDTClassifier(n_trees=10, signal_label="sig").fit(X, labels)
    assert list(model.classes_) == ["bkg", "sig"]
    assert set(model.predict(X)) <= {"bkg", "sig"}
    ref = hepbdt.BDTClassifier(n_trees=10).fit(X, y)
    np.testing.assert_allclose(model.decision_function(X), ref.decision_function(X))


def test_signal_is_the_high_score_whatever_the_sorted_order():
    """"Hbb" sorts before "background": the signal must still score high (as in TMVA)."""
    X, y, _ = _data()
    ref = hepbdt.BDTClassifier(n_trees=10).fit(X, y)
    labels = np.where(y == 1, "Hbb", "background")
    model = hepbdt.BDTClassifier(n_trees=10, signal_label="Hbb").fit(X, labels)
    assert list(model.classes_) == ["background", "Hbb"]
    np.testing.assert_allclose(model.decision_function(X), ref.decision_function(X))
    assert np.mean(model.predict(X)[y == 1] == "Hbb") > 0.7
    named = hepbdt.BDTClassifier(n_trees=10).fit(X, np.where(y == 1, "signal", "background"))
    np.testing.assert_allclose(named.decision_function(X), ref.decision_function(X))
    with pytest.raises(ValueError, match="signal_label=2 is not one of the labels"):
        hepbdt.BDTClassifier(n_trees=10, signal_label=2).fit(X, y)


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_save_load_round_trip(tmp_path, boosting):
    X, y, w = _data()
    model = hepbdt.BDTClassifier(boosting=boosting, n_trees=15, early_stopping=True,
                                 random_state=1).fit(X, y, w)
    path = tmp_path / "model.json"
    model.save(path)
    loaded = hepbdt.load_model(path)
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.validation_loss_, model.validation_loss_)
    reg = hepbdt.BDTRegressor(n_trees=5).fit(X, y * 2.5)
    reg.save(path)
    np.testing.assert_array_equal(hepbdt.load_model(path).predict(X), reg.predict(X))


def _corrupt(tmp_path, fitted, edit):
    doc = fitted[3].to_dict()
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("edit, message", [
    (lambda d: d.update(format="other"), "not a hepbdt model"),
    (lambda d: d.update(format_version=99), "format_version 99"),
    (lambda d: d["forest"].pop("threshold"), "missing keys"),
    (lambda d: d["forest"]["left"].__setitem__(0, 10_000), "child index"),
    (lambda d: d["forest"]["feature"].__setitem__(0, 77), "feature"),
    (lambda d: d["forest"]["value"].__setitem__(-1, "x"), "wrong type"),
    (lambda d: d["forest"]["tree_offsets"].append(10**6), "tree_offsets"),
    (lambda d: d.update(feature_names=["a"]), "feature_names"),
    (lambda d: d["params"].update(bogus=1), "unknown options"),
])
def test_malformed_models_are_refused(tmp_path, fitted, edit, message):
    with pytest.raises(ModelFormatError, match=message):
        hepbdt.load_model(_corrupt(tmp_path, fitted, edit))


def test_non_json_model_is_refused(tmp_path):
    path = tmp_path / "m.json"
    path.write_bytes(b"\x80\x04pickle")
    with pytest.raises(ModelFormatError, match="not a JSON model"):
        hepbdt.load_model(path)
    with pytest.raises(FileNotFoundError):
        hepbdt.load_model(tmp_path / "missing.json")


@pytest.mark.parametrize("quantised", [False, True])
@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_same_seed_same_model_whatever_the_threads(boosting, quantised, monkeypatch):
    monkeypatch.setattr(hepbdt_util, "SERIAL_FIT_WORK", 0)  # small fits would run on one thread
    monkeypatch.setattr(hepbdt_util, "SERIAL_FIT_WORK_SPINNING", 0)
    X, y, w = _data(n=30_000)
    kw = dict(boosting=boosting, n_trees=8, max_depth=5, subsample=0.7, colsample_bynode=0.6,
              random_state=3, quantised_histograms=quantised)
    one = hepbdt.BDTClassifier(n_jobs=1, **kw).fit(X, y, w)
    two = hepbdt.BDTClassifier(n_jobs=2, **kw).fit(X, y, w)
    assert one.to_dict()["forest"] == two.to_dict()["forest"]
    other = hepbdt.BDTClassifier(n_jobs=2, **{**kw, "random_state": 4}).fit(X, y, w)
    assert other.to_dict()["forest"] != one.to_dict()["forest"]


def test_small_fits_run_on_one_thread(monkeypatch):
    seen = []
    grow = estimators_module.run_boosting
    monkeypatch.setattr(estimators_module, "run_boosting",
                        lambda *a, **k: seen.append(numba.get_num_threads()) or grow(*a, **k))
    X, y, w = _data(n=2000)
    hepbdt.BDTClassifier(n_trees=2, n_jobs=2).fit(X, y, w)
    monkeypatch.setattr(hepbdt_util, "SERIAL_FIT_WORK", X.size)
    monkeypatch.setattr(hepbdt_util, "SERIAL_FIT_WORK_SPINNING", X.size)
    hepbdt.BDTClassifier(n_trees=2, n_jobs=2).fit(X, y, w)
    assert seen == [1, min(2, numba.config.NUMBA_NUM_THREADS)]
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # spinning threads: parallel sooner
    monkeypatch.setattr(hepbdt_util, "SERIAL_FIT_WORK", X.size + 1)
    hepbdt.BDTClassifier(n_trees=2, n_jobs=2).fit(X, y, w)
    assert seen[-1] == min(2, numba.config.NUMBA_NUM_THREADS)


def test_a_batch_jobs_omp_num_threads_is_numbas_thread_count():
    """HTCondor gives a job its cores as OMP_NUM_THREADS, which Numba ignores (a one-core job
    ran as many threads as the node has cores); NUMBA_NUM_THREADS, when set, still rules,
    and a value that is no count is left to Numba's default."""
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items()
             if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}

    def numba_threads(**env: str) -> int:
        code = "import hepbdt; hepbdt.BDTClassifier; import numba; print(numba.config.NUMBA_NUM_THREADS)"
        run = subprocess.run([sys.executable, "-c", code], env={**clean, **env},
                             capture_output=True, text=True, timeout=120, check=True)
        return int(run.stdout)

    default = numba_threads()
    assert numba_threads(OMP_NUM_THREADS="1") == 1
    assert numba_threads(OMP_NUM_THREADS="1,1") == 1  # nested levels: the outer one
    assert numba_threads(OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="2") == 2
    assert numba_threads(OMP_NUM_THREADS="many") == default


LAUNCHED_FIRST = """
import numba, numpy as np
@numba.njit(parallel=True)
def total(a):
    s = 0.0
    for i in numba.prange(a.size):
        s += a[i]
    return s
total(np.ones(10))  # the user's own parallel kernel: Numba's threads start
launched = numba.config.NUMBA_NUM_THREADS
import hepbdt.engine  # noqa: E402
@numba.njit
def later(a):
    return a.sum()
later(np.ones(3))  # compiling reloads Numba's configuration
print(launched, numba.config.NUMBA_NUM_THREADS)
"""


def test_omp_num_threads_leaves_a_numba_that_started_its_threads_alone():
    """A script that ran a parallel Numba kernel of its own before importing hepbdt's engine,
    in a batch job (OMP_NUM_THREADS=1): the engine set NUMBA_NUM_THREADS=1 under Numba's
    started threads, and its next compilation (the user's, or hepbdt's with no cache)
    stopped with "Cannot set NUMBA_NUM_THREADS to a different value once the threads have
    been launched". A Numba imported but not started still takes the job's count."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    env["OMP_NUM_THREADS"] = "1"
    run = subprocess.run([sys.executable, "-c", LAUNCHED_FIRST], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-600:]
    launched, after = map(int, run.stdout.split())
    assert after == launched  # Numba's own count, kept
    code = ("import numba, hepbdt; hepbdt.BDTClassifier\n@numba.njit\ndef f(a): return a\n"
            "f(1); print(numba.config.NUMBA_NUM_THREADS)")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300, check=True)
    assert int(run.stdout) == 1


@pytest.mark.parametrize("mode", ["uniform", "poisson", "weighted"])
def test_subsample_modes_train(mode):
    X, y, w = _data()
    model = hepbdt.BDTClassifier(n_trees=20, subsample=0.5, subsample_mode=mode, random_state=0,
                                 colsample_bytree=0.8, colsample_bylevel=0.8).fit(X, y, w)
    assert model.train_loss_[-1] < model.train_loss_[0]
    assert np.all(np.isfinite(model.decision_function(X)))


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_recorded_training_loss_is_the_log_loss_of_each_stage(boosting):
    X, y, w = _data(nan=0.0)
    model = hepbdt.BDTClassifier(boosting=boosting, n_trees=15, max_depth=3, learning_rate=0.3,
                                 random_state=0).fit(X, y, w)
    staged = [log_loss(y, p[:, 1], sample_weight=w) for p in model.staged_predict_proba(X)]
    # each event's term to single precision (a float32 exponential and logarithm)
    np.testing.assert_allclose(model.train_loss_, staged, rtol=1e-6)


def test_early_stopping_keeps_the_best_iteration():
    X, y, w = _data(n=3000)
    model = hepbdt.BDTClassifier(boosting="newton", n_trees=500, max_depth=6, learning_rate=0.5,
                                 early_stopping=True, n_iter_no_change=5, random_state=0)
    model.fit(X, y, w)
    assert model.best_iteration_ is not None
    assert model.n_trees_ == model.best_iteration_ + 1 < 500
    assert len(model.validation_loss_) == model.best_iteration_ + 1 + 5
    assert np.argmin(model.validation_loss_) == model.best_iteration_


@pytest.mark.parametrize("boosting, setting, above, expected", [
    ("newton", "auto", False, False), ("newton", "auto", True, True),
    ("newton", False, True, False), ("gradient", "auto", True, True),
    ("gradient", False, True, False), ("gradient", True, False, True),
    ("adaboost", "auto", True, False)])
def test_quantised_histograms_option_picks_the_histogram_kind(monkeypatch, boosting, setting, above,
                                                               expected):
    import hepbdt.estimators as est

    n = est.QUANTISE_FROM_EVENTS if above else est.QUANTISE_FROM_EVENTS - 1

    seen = []
    real = est.QuantisedRows.from_features
    monkeypatch.setattr(est.QuantisedRows, "from_features",
                        staticmethod(lambda *a: seen.append(True) or real(*a)))
    X, y, w = _data(n=n, nan=0.0)
    hepbdt.BDTClassifier(boosting=boosting, n_trees=1, max_depth=1,
                         quantised_histograms=setting).fit(X, y, w)
    assert bool(seen) == expected


def test_quantised_model_without_subsampling_needs_no_random_state():
    X, y, w = _data(n=5000)
    fits = [hepbdt.BDTClassifier(boosting="newton", n_trees=5, quantised_histograms=True,
                                 random_state=None).fit(X, y, w) for _ in range(2)]
    assert fits[0].to_dict()["forest"] == fits[1].to_dict()["forest"]


def test_default_fits_are_the_same_model_every_time():
    """random_state=None was the default, so BDTClassifier() drew its n_trees="auto"
    hold-out afresh: two fits on the same events kept 116 and 128 trees (scores up to 1.75
    apart), and a flatness fit shuffled its ties afresh. None still draws afresh."""
    X, y, w = _data(n=3000, nan=0.0)
    fits = [hepbdt.BDTClassifier().fit(X, y, w) for _ in range(2)]
    assert fits[0].get_params()["random_state"] == 0
    assert fits[0].to_dict()["forest"] == fits[1].to_dict()["forest"]
    m = X[:, 0]
    flat = [hepbdt.BDTClassifier(decorrelation="flatness", n_trees=10).fit(X, y, w, decorrelate=m)
            for _ in range(2)]
    assert flat[0].to_dict()["forest"] == flat[1].to_dict()["forest"]
    fresh = [hepbdt.BDTClassifier(random_state=None).fit(X, y, w) for _ in range(2)]
    assert fresh[0].to_dict()["forest"] != fresh[1].to_dict()["forest"]


def test_quantised_histograms_refused_where_they_cannot_serve():
    X, y, w = _data()
    with pytest.raises(ValueError, match="min_node_size=0"):
        hepbdt.BDTClassifier(boosting="newton", min_node_size=0.05, quantised_histograms=True).fit(X, y, w)
    with pytest.raises(ValueError, match="expected 'auto', True or False"):
        hepbdt.BDTClassifier(quantised_histograms="yes").fit(X, y, w)
    # checked with the other options, before any data: a configuration's --check passed
    # them, and training refused them after reading the samples
    for options in ({"quantised_histograms": "yes"},
                    {"quantised_histograms": True, "boosting": "adaboost"},
                    {"quantised_histograms": True, "boosting": "newton", "min_node_size": 0.01}):
        with pytest.raises(ValueError, match="quantised_histograms"):
            hepbdt.BDTClassifier(**options).check_params()
    hepbdt.BDTClassifier(quantised_histograms=True, boosting="newton").check_params()


@pytest.mark.parametrize("boosting", ["gradient", "newton"])
def test_quantised_histograms_learn_as_well_as_exact_ones(boosting):
    from sklearn.metrics import roc_auc_score

    X, y, w = _data(n=160_000, nan=0.02, seed=5)
    train, test = slice(0, 120_000), slice(120_000, None)
    auc = {}
    for q in (False, True):
        model = hepbdt.BDTClassifier(boosting=boosting, n_trees=40, max_depth=5, learning_rate=0.3,
                                     min_node_size=0.01 if boosting == "gradient" else 0.0,
                                     quantised_histograms=q).fit(X[train], y[train], w[train])
        auc[q] = roc_auc_score(y[test], model.decision_function(X[test]), sample_weight=w[test])
    assert abs(auc[True] - auc[False]) < 0.002


def test_tiny_weights_that_forbid_every_split_are_reported():
    X, y, w = _data()
    with pytest.warns(UserWarning, match="scale the weights"):
        model = hepbdt.BDTClassifier(boosting="newton", n_trees=3).fit(X, y, w * 1e-6)
    assert not np.any(model.forest_.feature >= 0)
    # Scaled to a mean of 1 they train, and nothing is reported.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = hepbdt.BDTClassifier(boosting="newton", n_trees=3).fit(X, y, w)
    assert np.any(model.forest_.feature >= 0)


def test_min_node_size_limits_leaf_weight():
    X, y, w = _data()
    model = hepbdt.BDTClassifier(boosting="gradient", n_trees=3, max_depth=6,
                                 min_node_size=0.05).fit(X, y, w)
    f = model.forest_
    leaves = f.feature < 0
    assert f.cover[leaves].min() >= 0.05 * w.sum() - 1e-6


def test_scikit_learn_interoperability():
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, _ = _data(nan=0)
    model = hepbdt.BDTClassifier(n_trees=10, max_depth=2)
    cloned = clone(model)
    assert cloned.get_params() == model.get_params()
    scores = cross_val_score(make_pipeline(StandardScaler(), model), X, y, cv=3, scoring="roc_auc")
    assert scores.mean() > 0.75
    reg_scores = cross_val_score(hepbdt.BDTRegressor(n_trees=60), X, X[:, 0] * 2, cv=3)
    assert reg_scores.mean() > 0.9


def test_pandas_feature_names_and_float32_not_copied():
    pd = pytest.importorskip("pandas")
    from hepbdt._util import check_X

    X, y, _ = _data()
    frame = pd.DataFrame(X, columns=["pt", "eta", "phi", "m", "btag"])
    model = hepbdt.BDTClassifier(n_trees=5).fit(frame, y)
    assert isinstance(model.feature_names_in_, np.ndarray)  # as scikit-learn
    assert list(model.feature_names_in_) == ["pt", "eta", "phi", "m", "btag"]
    assert check_X(X)[0] is X


@pytest.mark.parametrize("kwargs, X_edit, y_edit, w_edit, message", [
    ({}, lambda X: np.where(np.arange(X.size).reshape(X.shape) == 7, np.inf, X), None, None, "infinite"),
    ({}, None, lambda y: np.zeros_like(y), None, "at least two classes"),
    ({"n_trees": -1}, None, None, None, "n_trees"),
    ({}, None, lambda y: y[:-1], None, "labels"),
    ({}, None, None, lambda w: np.zeros_like(w), "all weights are zero"),
    ({}, lambda X: X[:0], lambda y: y[:0], None, "empty"),
    ({}, None, None, lambda w: w[:5], "5 values"),
    ({}, None, None, lambda w: np.where(np.arange(w.size) == 1, np.nan, w), "NaN"),
    ({"boosting": "magic"}, None, None, None, "boosting"),
    ({"subsample_mode": "x"}, None, None, None, "subsample_mode"),
    ({"loss": "squared"}, None, None, None, "not a classification loss"),
    ({"max_bins": 300}, None, None, None, "max_bins"),
])
def test_bad_input_is_refused(kwargs, X_edit, y_edit, w_edit, message):
    X, y, w = _data(n=200)
    X = X_edit(X) if X_edit else X
    y = y_edit(y) if y_edit else y
    w = w_edit(w) if w_edit else w
    with pytest.raises(ValueError, match=message):
        hepbdt.BDTClassifier(**{"n_trees": 2, **kwargs}).fit(X, y, w)


@pytest.mark.parametrize("estimator, boosting, loss, takes", [
    (hepbdt.BDTRegressor, "newton", "logistic", "'squared', 'absolute', 'huber'"),
    (hepbdt.BDTRegressor, "gradient", "deviance", "'squared', 'absolute', 'huber'"),
    (hepbdt.BDTClassifier, "newton", "deviance", "'logistic'"),
    (hepbdt.BDTClassifier, "gradient", "huber", "'deviance'"),
])
def test_a_wrong_loss_names_the_losses_of_the_booster_and_task(estimator, boosting, loss, takes):
    X, y, _ = _data(n=200)
    with pytest.raises(ValueError, match=rf"loss '{loss}' is not a .* of boosting='{boosting}'; "
                                         rf"it takes {takes}$"):
        estimator(boosting=boosting, loss=loss, n_trees=2).fit(X, y.astype(float))


def test_predict_checks_feature_count_and_fit(fitted):
    X, _, _, model = fitted
    with pytest.raises(ValueError, match="features"):
        model.decision_function(X[:, :3])
    with pytest.raises(RuntimeError, match="not fitted"):
        hepbdt.BDTClassifier().decision_function(X)


@pytest.mark.parametrize("n_classes", [2, 12])
def test_eval_labels_outside_the_classes_are_named(n_classes):
    rng = np.random.default_rng(0)
    X = rng.random((240, 2)).astype(np.float32)
    y = np.arange(240) % n_classes
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=2)
    with pytest.raises(ValueError, match=rf"labels \[{n_classes}\] that are not in the classes"):
        model.fit(X, y, eval_set=[(X[:10], np.full(10, n_classes))])


@pytest.mark.parametrize("boosting", ["gradient", "newton", "adaboost"])
def test_labels_reach_the_boosters_as_int8_and_any_label_type_trains_one_model(boosting,
                                                                                monkeypatch):
    X, y, w = _data(n=600)
    y3 = y + (X[:, 2] > 0)
    model = hepbdt.BDTClassifier(boosting=boosting)
    encoded = model._encode_y(y, fitting=True)
    assert encoded.dtype == np.int8 and np.array_equal(encoded, y)
    monkeypatch.setattr(estimators_module, "ENCODE_BLOCK", 7)  # blocks encode alike
    encoded = model._encode_y(np.array(["a", "b", "c"])[y3], fitting=True)
    assert encoded.dtype == np.int8 and np.array_equal(encoded, y3)
    seen = []
    def spy(real, position):
        def run(*args, **kwargs):
            seen.append(args[position].dtype)  # the labels the booster is given
            return real(*args, **kwargs)
        return run

    for name, position in (("run_boosting", 2), ("run_adaboost", 1), ("run_samme", 1)):
        monkeypatch.setattr(estimators_module, name, spy(getattr(estimators_module, name), position))
    docs = set()
    for labels in (y, y.astype(np.int8), y.astype(np.float64), y.astype(bool),
                   np.where(y == 1, "signal", "background")):
        fitted = hepbdt.BDTClassifier(boosting=boosting, n_trees=5, max_depth=3,
                                      random_state=0).fit(X, labels, w)
        doc = fitted.to_dict()
        doc.pop("classes")
        docs.add(json.dumps(doc, sort_keys=True))
    assert len(docs) == 1
    hepbdt.BDTClassifier(boosting=boosting, n_trees=2, max_depth=2).fit(X, y3, w)
    assert seen == [np.int8] * 6


@pytest.mark.parametrize("scale", [1e39, 1e-46])
def test_weights_beyond_float32_are_refused_not_cast(scale):
    # Cast to the float32 channels, 1e39 became inf and 1e-46 zero: the fits were constant
    # models, or errors about the class sums, with no word about the weights.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="sample_weight: 400 training weight.* rescale"):
        hepbdt.BDTClassifier(n_trees=2).fit(X, y, np.full(400, scale))
    with pytest.raises(ValueError, match="target y reaches .* rescale y"):
        hepbdt.BDTRegressor(n_trees=2).fit(X, X[:, 0] * 1e39)
    # A normalisation that brings them into range (AdaBoost's sig_to_bkg_fraction) trains.
    hepbdt.BDTClassifier(boosting="adaboost", n_trees=2).fit(X, y, np.full(400, 1e35))


def test_a_child_forked_after_gnu_openmp_ran_gets_an_error_not_an_abort(tmp_path):
    """After a fit, a forked child's first kernel stopped the interpreter ("fork() called
    from a process already using GNU OpenMP") and multiprocessing.Pool waited forever."""
    import subprocess
    import sys

    code = """if True:
        import multiprocessing as mp, numpy as np, numba, hepbdt
        X = np.random.default_rng(0).normal(size=(3000, 4)).astype(np.float32)
        m = hepbdt.BDTClassifier(n_trees=3, max_depth=2).fit(X, (X[:, 0] > 0).astype(int))
        vendor = getattr(__import__("numba.np.ufunc.omppool").np.ufunc.omppool,
                         "openmp_vendor", None)
        if numba.threading_layer() != "omp" or vendor != "GNU":
            print("no GNU OpenMP"); raise SystemExit
        import functools, sys, uproot
        with uproot.recreate(sys.argv[1]) as f:
            f["T"] = {"x": X[:, 0]}  # an RNTuple (uproot 5.7): any tree serves here
        sample = hepbdt.Sample("s", sys.argv[1] + ":T", label="signal")
        with mp.get_context("fork").Pool(1) as pool:
            plain = pool.apply_async(hepbdt.read, (sample, ["x"])).get(timeout=60)
            print("plain read", len(plain))  # no parallel kernel: it still works
            for call in (functools.partial(m.predict_proba, X),
                         functools.partial(hepbdt.read, sample, ["x"], binned=True)):
                try:
                    pool.apply_async(call).get(timeout=60)
                except RuntimeError as exc:
                    print(exc)
    """
    run = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.root")],
                         capture_output=True, text=True, timeout=180)
    if run.stdout.strip() == "no GNU OpenMP":
        pytest.skip("Numba runs on another threading layer here: nothing to refuse")
    assert "plain read 3000" in run.stdout, run.stdout + run.stderr
    refused = "cannot run in a process forked from one that already ran its kernels on GNU OpenMP"
    assert run.stdout.count(refused) == 2, run.stdout + run.stderr


def test_threads_calling_hepbdt_at_once_on_the_workqueue_layer():
    """Numba's workqueue layer (NUMBA_THREADING_LAYER=workqueue, and its fallback without
    OpenMP or TBB) aborted the interpreter when two threads fitted or predicted at once."""
    import subprocess
    import sys

    code = """if True:
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np, numba, hepbdt
        X = np.random.default_rng(0).normal(size=(20000, 6)).astype(np.float32)
        y = (X[:, 0] > 0).astype(int)
        model = hepbdt.BDTClassifier(n_trees=10, max_depth=3).fit(X, y)
        reference = model.predict_proba(X)
        with ThreadPoolExecutor(4) as pool:
            outs = list(pool.map(lambda _: model.predict_proba(X), range(40)))
            fits = list(pool.map(lambda _: hepbdt.BDTClassifier(n_trees=5).fit(X, y), range(4)))
        assert all(np.array_equal(o, reference) for o in outs)
        assert all(np.array_equal(f.decision_function(X), fits[0].decision_function(X))
                   for f in fits)
        print(numba.threading_layer(), "ok")
    """
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["workqueue", "ok"], \
        run.stdout + run.stderr[-2000:]


def test_threads_reaching_kernels_beside_fit_and_predict_on_the_workqueue_layer():
    """On the workqueue layer only fit and decision_function took turns: the forest's own
    scores, staged predictions, an eval_set's recorded losses and BinMapper.transform
    launched their kernels unlocked, and two threads doing one of them aborted the
    interpreter. The reference: the same call made once, alone."""
    import subprocess
    import sys

    code = """if True:
        from concurrent.futures import ThreadPoolExecutor
        import numpy as np, numba, hepbdt
        from hepbdt.engine.binning import BinMapper
        X = np.random.default_rng(0).normal(size=(100000, 6)).astype(np.float32)
        y = (X[:, 0] > 0).astype(int)
        m = hepbdt.BDTClassifier(n_trees=12, max_depth=4).fit(X[:5000], y[:5000])
        def evals():
            e = hepbdt.BDTClassifier(n_trees=6, max_depth=3).fit(
                X[:20000], y[:20000], eval_set=[(X[:60000], y[:60000]), (X[:3000], y[:3000])])
            return np.array(e.evals_result_["validation_0"]["deviance"])
        calls = [lambda: m.forest_.raw_score(X), lambda: list(m.staged_decision_function(X))[-1],
                 evals, lambda: BinMapper(255, 0, 0).fit(X[:1000], np.ones(1000)).transform(X)]
        for call in calls:
            reference = call()
            with ThreadPoolExecutor(4) as pool:
                outs = list(pool.map(lambda _: call(), range(12)))
            print(all(np.array_equal(o, reference) for o in outs))
        print(numba.threading_layer())
    """
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.split() == ["True"] * 4 + ["workqueue"], \
        run.stdout + run.stderr[-2000:]


@pytest.mark.parametrize("quantised", [False, True])
def test_a_nan_of_a_training_event_is_recorded_and_one_outside_is_not(quantised):
    # nan_in_training (the TMVA export's warning) read from the binned codes: one NaN among
    # the training events' 12,000 values sets it, whatever its place; a NaN only in an
    # evaluation set's events does not.
    rng = np.random.default_rng(4)
    X = rng.normal(size=(3000, 4)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    model = hepbdt.BDTClassifier(n_trees=2, max_depth=2, quantised_histograms=quantised)
    outside = X[:100].copy()
    outside[7, 2] = np.nan
    assert "nan_in_training" not in model.fit(X, y, eval_set=[(outside, y[:100])]).forest_.extra
    for row, col in ((0, 0), (2999, 3), (1234, 1)):
        X_nan = X.copy()
        X_nan[row, col] = np.nan
        assert np.isnan(X_nan).sum() == 1
        assert model.fit(X_nan, y).forest_.extra["nan_in_training"] is True
