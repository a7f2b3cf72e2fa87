"""Audit of the configuration, the split and the k-fold bookkeeping: values TOML allows
that make every number wrong (inf, nan), features repeated under another spelling,
environment variables that are not set, and the memory a k-fold training holds."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from hepbdt.analysis import ConfigError, load_config, workflow
from hepbdt.analysis.estimate import estimate
from hepbdt.io import Dataset

from .test_config import BASE, DATA  # the reference configuration, shared


def problems(tmp_path: Path, text: str) -> str:
    path = tmp_path / "analysis.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "'0.5 b'", "0.5"])
def test_memory_that_is_no_size_is_a_config_error(tmp_path: Path, value: str) -> None:
    # memory = inf raised OverflowError (a traceback); "0.5 b" became 0 bytes
    text = problems(tmp_path, f"memory = {value}\n" + BASE)
    assert "analysis.toml: memory: expected a size" in text


@pytest.mark.parametrize(("where", "line"), [
    ('label = "signal"', "scale = nan"), ('label = "signal"', "scale = inf"),
    ('label = "signal"', "weight = inf"), ('label = "signal"', "weight = nan"),
])
def test_non_finite_scale_or_weight_is_refused_with_its_key(tmp_path: Path, where: str,
                                                           line: str) -> None:
    # accepted by --check before; training then failed without the file or the key
    text = problems(tmp_path, BASE.replace(where, f"{where}\n{line}", 1))
    key = line.split()[0]
    assert f"[samples.signal] {key}: expected" in text and "finite number" in text


def test_non_finite_top_level_weight_is_refused(tmp_path: Path) -> None:
    weight = 'weight = "genWeight * xsec * lumi / sumGenWeight"'
    text = problems(tmp_path, BASE.replace(weight, "weight = nan"))
    assert "analysis.toml: weight: expected an expression (string) or a finite number" in text


@pytest.mark.parametrize("extra", ['"Jet_pt[:,0]"', '"(HT)"', '" HT"', '"MET_pt "'])
def test_features_repeated_under_another_spelling(tmp_path: Path, extra: str) -> None:
    text = problems(tmp_path, BASE.replace('"lead_pt"]', f'"lead_pt", {extra}]'))
    assert "features: repeated:" in text and "give each feature once" in text


def test_different_features_are_not_repeats(tmp_path: Path) -> None:
    path = tmp_path / "analysis.toml"
    path.write_text(BASE.replace('"lead_pt"]', '"lead_pt", "Jet_pt[:, 1]", "HT * 2"]'))
    assert len(load_config(path).feature_expressions) == 5


def test_unset_environment_variables_in_paths(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HEPBDT_AUDIT_UNSET", raising=False)
    monkeypatch.setenv("HEPBDT_AUDIT_DATA", str(DATA))
    text = BASE.replace(str(DATA / "signal.root"), "$HEPBDT_AUDIT_UNSET/signal.root")
    text = text.replace(str(DATA / "background_qcd.root"),
                        "${HEPBDT_AUDIT_DATA}/background_qcd.root")
    found = problems(tmp_path, text + "[output]\ndirectory = '$HEPBDT_AUDIT_UNSET/out'\n")
    assert "[samples.signal] files: '$HEPBDT_AUDIT_UNSET/signal.root' uses the environment " \
           "variable $HEPBDT_AUDIT_UNSET, which is not set" in found
    assert "[output] directory: '$HEPBDT_AUDIT_UNSET/out' uses" in found
    assert "samples.qcd" not in found  # a variable that is set is expanded


def _kfold_config(tmp_path: Path, k: int, norm: str = "none") -> object:
    path = tmp_path / "analysis.toml"
    path.write_text(BASE + f"[split]\nkfold = {k}\nnorm = \"{norm}\"\n")
    return load_config(path)


class _Constant:
    """A stand-in model: fitting and scoring cost nothing, so memory is the bookkeeping's."""

    def predict(self, X: object) -> None:  # pragma: no cover - never called
        raise AssertionError

    def held_out_mask(self, event: object = None) -> None:
        """No event held out: an integer number of trees."""
        return None


def _kfold_without_fits(config: object, data: Dataset, monkeypatch: pytest.MonkeyPatch
                        ) -> object:
    monkeypatch.setattr(workflow, "_fit", lambda *args, **kwargs: _Constant())
    monkeypatch.setattr(workflow, "_score", lambda model, X: np.zeros(len(X)))
    monkeypatch.setattr(workflow, "KFoldModel", lambda models, by: list(models))
    return workflow._fit_kfold(config, [data], None)


def _dataset(n: int, m: int) -> Dataset:
    rng = np.random.default_rng(3)
    return Dataset(rng.normal(size=(n, m)).astype(np.float32), y=np.arange(n) % 2,
                   w=rng.uniform(0.5, 2.0, n), sample_index=np.arange(n) % 2,
                   event=rng.permutation(n).astype(np.int64) - n // 2,
                   feature_names=["HT", "MET_pt", "lead_pt"][:m] if m == 3 else None,
                   sample_names=["signal", "qcd"])


def test_kfold_training_sets_are_each_fold_normalised_and_ordered(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    k = 4
    config = _kfold_config(tmp_path, k, "num_events")
    data = _dataset(1000, 3)
    result = _kfold_without_fits(config, data, monkeypatch)
    folds = np.mod(data.event, k)  # negative event numbers too
    expected = np.concatenate([data.event[folds != i] for i in range(k)])
    np.testing.assert_array_equal(result.train.event, expected)
    np.testing.assert_array_equal(result.train_fold,
                                  np.repeat(np.arange(k), [np.sum(folds != i) for i in range(k)]))
    for i in range(k):  # each fold's training weights: per class, sum = its events
        part = result.train.take(result.train_fold == i)
        for label in (0, 1):
            assert part.w[part.y == label].sum() == pytest.approx(np.sum(part.y == label))
    np.testing.assert_array_equal(result.test.w, data.w)  # test weights stay physical
    assert len(result.train_scores) == len(result.train)


def test_kfold_holds_at_most_the_training_copies(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Every fold's training set was kept until the end and then stacked: 2 (k - 1) copies
    # of the sample at once, twice what the --check estimate counts.
    k = 5
    config = _kfold_config(tmp_path, k)
    data = _dataset(200_000, 3)
    one_copy = data.X.nbytes + data.w.nbytes + data.event.nbytes + 2 * len(data)
    tracemalloc.start()
    try:
        _kfold_without_fits(config, data, monkeypatch)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # k - 1 copies, the indices, weights, scores and folds of the training rows (32 bytes
    # each), and one fold's sets being made
    bound = (k - 1) * one_copy + (k - 1) * len(data) * 32 + 2 * one_copy
    assert peak < bound, (peak / one_copy, bound / one_copy)


def test_kfold_estimate_counts_the_outputs_of_every_training_row(tmp_path: Path) -> None:
    config = _kfold_config(tmp_path, 5)
    e = estimate(config, available_bytes=10**12)
    # written after the fits: the sample, its k - 1 training copies (4 bytes a value, 18 an
    # event), and per training row its score, fold, tree columns and sorts (64 bytes)
    assert e.bytes >= e.events * ((3 * 4 + 18) * 5 + 4 * 64)


@pytest.mark.parametrize(("method", "holds_out"), [
    ('boosting = "gradient"\nn_trees = 50\nearly_stopping = true', True),
    ('boosting = "gradient"\nn_trees = "auto"', True),
    ('boosting = "adaboost"\nn_trees = "auto"', False),  # a fixed count: none held out
])
def test_estimate_counts_the_held_out_copy_where_the_fit_makes_one(tmp_path: Path, method: str,
                                                                   holds_out: bool) -> None:
    """The fit copies the events it holds out to choose its number of trees: early_stopping
    with an integer n_trees does, AdaBoost's n_trees="auto" does not (the estimate had it
    the other way round)."""
    def bytes_of(method_lines: str) -> tuple[int, int]:
        path = tmp_path / "analysis.toml"
        path.write_text(BASE + "[method]\n" + method_lines + "\n[output]\nreport = false\n"
                        "figures = false\n")
        e = estimate(load_config(path), available_bytes=10**12)
        return e.bytes, e.events

    # against the same booster with a fixed count (the AdaBoost family's fit holds more)
    base, events = bytes_of(method.splitlines()[0] + "\nn_trees = 50")
    held, _ = bytes_of(method)
    # 3 features of 4 bytes, validation_fraction 0.1 of the training half
    expected = round(events * 3 * 4 * 0.1 * 0.5) if holds_out else 0
    assert held - base == pytest.approx(expected, abs=1)


@pytest.mark.parametrize(("value", "expected"), [
    ("'3 b'", 3), ("'3 kB'", 3 * 1000), ("'3 MB'", 3 * 1000**2), ("'3 gb'", 3 * 1000**3),
    ("'3 TB'", 3 * 1000**4), ("'3 KiB'", 3 * 1024), ("'3MiB'", 3 * 1024**2),
    ("'3 GiB'", 3 * 1024**3), ("' 3 tib '", 3 * 1024**4), ("'1.5 kb'", 1500), ("'7'", 7),
    ("4096", 4096), ("2.5e3", 2500), ("1", 1), ("'1 b'", 1)])
def test_memory_sizes_are_their_units_bytes(tmp_path: Path, value: str, expected: int) -> None:
    # SI (kB = 1000 B) and IEC (KiB = 1024 B) units, any case; one byte is a size
    path = tmp_path / "analysis.toml"
    path.write_text(f"memory = {value}\n" + BASE)
    assert load_config(path).memory == expected


@pytest.mark.parametrize("workers", [0, -1, 1025])
def test_dask_workers_outside_1_to_1024_are_refused(tmp_path: Path, workers: int) -> None:
    # 0 workers passed --check; the bound is [1, 1024], both ends included
    text = problems(tmp_path, BASE + f"\n[dask]\nworkers = {workers}\n")
    assert f"[dask] workers: {workers} workers: expected 1 to 1024" in text
