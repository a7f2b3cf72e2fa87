"""Audit CY (2026-12-05): a second look at the day's fixes. Siblings they did not reach:
hepbdt.Dataset read X with np.asarray (a mask dropped, a frame's int64 rounded twice),
plot_correlation_matrices read a dict of columns as one object, a model file of a Poisson
mean above today's bound did not load, and the weight and target refusals quoted a value
and its limit as the same number."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hepbdt import BDTClassifier
from hepbdt.io.dataset import Dataset
from hepbdt.io.errors import InputError


def _toy(n: int = 600, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_dataset_reads_masked_entries_as_missing_values():
    X, y = _toy()
    mask = np.zeros_like(X, bool)
    mask[::7, 0] = True
    hidden = X.copy()
    hidden[mask] = 50.0  # the data under the mask, which no event has
    data = Dataset(np.ma.MaskedArray(hidden, mask=mask), y=y)
    stored = np.asarray(data.X)
    assert np.isnan(stored[mask]).all()
    np.testing.assert_array_equal(stored[~mask], X[~mask])
    with_nan = X.copy()
    with_nan[mask] = np.nan
    model = BDTClassifier(n_trees=5, random_state=0).fit(with_nan, y)
    np.testing.assert_array_equal(model.decision_function(np.asarray(data.X)),
                                  model.decision_function(with_nan))


def test_dataset_refuses_masked_labels_and_weights():
    X, y = _toy(50)
    masked = np.ma.MaskedArray(y, mask=np.arange(50) == 3)
    with pytest.raises(InputError, match="masked"):
        Dataset(X, y=masked)
    with pytest.raises(InputError, match="masked"):
        Dataset(X, y=y, w=np.ma.MaskedArray(np.ones(50), mask=np.arange(50) == 3))


def test_dataset_rounds_a_frames_wide_integer_once():
    pd = pytest.importorskip("pandas")
    value = 2**60 + 2**36 + 1
    frame = pd.DataFrame({"a": np.array([value] * 3, dtype=np.int64), "b": [0.5, 1.5, 2.5]})
    # the nearest float32 by integer arithmetic: the spacing at 2**60 is 2**37
    low, high = 2**60, 2**60 + 2**37
    nearest = low if value - low < high - value else high
    assert int(np.asarray(Dataset(frame).X)[0, 0]) == nearest == 2**60 + 2**37


def test_dataset_refuses_complex_features():
    with pytest.raises(ValueError, match="[Cc]omplex"):
        Dataset(np.ones((4, 2), complex))


def test_correlation_plot_of_a_dict_of_columns():
    from hepbdt.plotting import plot_correlation_matrices

    X, y = _toy(400)
    fig = plot_correlation_matrices({"a": X[:, 0], "b": X[:, 1]}, y)
    assert fig is not None


def test_model_file_of_a_poisson_mean_above_todays_bound_loads(tmp_path):
    """A file written before the bound (subsample_mode='poisson', subsample=2e6, which
    trained) loads with a warning, its trees as written, read against the file's own
    forest by a naive traversal."""
    import json

    from hepbdt import load_model
    from tests.test_audit_old_model_files import _class_scores

    X, y = _toy(300)
    path = tmp_path / "m.json"
    BDTClassifier(n_trees=3, subsample=1e6, subsample_mode="poisson").fit(X, y).save(path)
    doc = json.loads(path.read_text())
    doc["params"]["subsample"] = 2e6  # as 5709127 wrote it
    path.write_text(json.dumps(doc))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = load_model(path)
    assert any("subsample=2000000.0" in str(w.message) for w in caught)
    assert model.subsample == 1e6
    np.testing.assert_allclose(model.decision_function(X), _class_scores(doc["forest"], X)[:, 0],
                               rtol=1e-12, atol=1e-12)


def _quoted(message: str, before: str) -> float:
    """The number printed right after ``before`` in ``message``."""
    import re

    return float(re.search(re.escape(before) + r"(-?[0-9.e+-]+)", message).group(1))


@pytest.mark.parametrize("weight", [1.0001e30, -1.0001e30, 0.99995e-30])
def test_weight_refusal_quotes_a_weight_beyond_the_limit(weight):
    X, y = _toy(50)
    w = np.ones(50)
    w[3] = weight
    with pytest.raises(ValueError, match="lie outside") as info:
        BDTClassifier(n_trees=2).fit(X, y, sample_weight=w)
    shown = abs(_quoted(str(info.value), "(the first is "))
    assert not 1e-30 <= shown <= 1e30  # "1e+30" was the limit itself


def test_target_refusal_quotes_a_target_beyond_the_limit():
    from hepbdt import BDTRegressor

    X, _ = _toy(50)
    t = X[:, 0].astype(np.float64)
    t[3] = 1.0001e30
    with pytest.raises(ValueError, match="reaches") as info:
        BDTRegressor(n_trees=2).fit(X, t)
    assert _quoted(str(info.value), "reaches ") > 1e30
