"""Audit CK (2026-12-05): modes of `hepbdt train` that work alone, checked where two meet.

Each test trains a small configuration on ROOT files written here (signed weights, event
numbers, a mass) and recomputes what the outputs print from `scores.root` with numpy."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.analysis import load_config, train
from hepbdt.analysis.config import ConfigError


def _write_samples(folder: Path, n: int = 1200) -> None:
    """sig.root, bkg.root (tree T): x1, x2, m, nj, event, w (15 % of the background < 0)."""
    rng = np.random.default_rng(5)
    for name, shift, first, negative in (("sig", 0.8, 0, 0.0), ("bkg", 0.0, 100000, 0.15)):
        x = rng.normal(shift, 1.0, (n, 2))
        w = rng.lognormal(0.0, 0.3, n) * np.where(rng.random(n) < negative, -1.0, 1.0)
        with uproot.recreate(folder / f"{name}.root") as file:
            file.mktree("T", {"x1": np.float32, "x2": np.float32, "m": np.float32,
                              "nj": np.int32, "event": np.int64, "w": np.float64})
            file["T"].extend({"x1": x[:, 0].astype(np.float32),
                              "x2": x[:, 1].astype(np.float32),
                              "m": rng.normal(100 + 20 * shift, 15, n).astype(np.float32),
                              "nj": rng.integers(0, 5, n).astype(np.int32),
                              "event": np.arange(first, first + n, dtype=np.int64), "w": w})


def _config(folder: Path, *, weight: str = "w", split: str = "kfold = 3",
            method: str = "", dask: bool = False) -> Path:
    path = folder / "a.toml"
    path.write_text(f"""
tree = "T"
weight = "{weight}"
event = "event"
features = ["x1", "x2", "m", "nj"]
[samples.sig]
files = "sig.root"
label = "signal"
[samples.bkg]
files = "bkg.root"
label = "background"
[split]
{split}
[method]
n_trees = 5
max_depth = 2
{method}
[output]
figures = false
report = false
tmva_xml = false
""" + ('[dask]\nscheduler = "local"\nworkers = 1\n' if dask else ""))
    return path


def test_summary_yield_factors_are_the_ones_the_significance_scan_uses(tmp_path: Path) -> None:
    """Events of weight 0 are no events in the yields' factors (README): the summary's
    samples table printed events / test events counting them (2), where the best cuts were
    scaled by the counted ones' factor (2.016 in the run of the audit)."""
    _write_samples(tmp_path)
    config = load_config(_config(tmp_path, weight="w * (nj > 0)", split=(
        'mode = "random"\ntrain_fraction = 0.5\nseed = 3')), output=tmp_path / "out")
    train(config)
    summary = (tmp_path / "out" / "summary.txt").read_text()
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        test = file["TestTree"].arrays(library="np")
        training = file["TrainTree"].arrays(library="np")
    factors = {}
    for index, name in enumerate(("sig", "bkg")):
        counted_test = np.count_nonzero((test["sample"] == index) & (test["weight"] != 0))
        counted_train = np.count_nonzero((training["sample"] == index)
                                         & (training["weight"] != 0))
        factors[index] = (counted_test + counted_train) / counted_test
        row = re.search(rf"^\s+{name}\s+\w+\s+[\d,]+\s+[\d,]+\s+(\S+)$", summary, re.M)
        assert row is not None, summary
        assert float(row.group(1)) == pytest.approx(factors[index], abs=5e-6), summary
    # the factor column is the scan's: S of the best S/sqrt(B) cut, recomputed with it
    cut = re.search(r"S/sqrt\(B\)\s+\S+ at score >= (\S+): S = (\S+) ", summary)
    assert cut is not None, summary
    passing = (test["bdt_score"] >= float(cut.group(1))) & (test["classID"] == 0)
    expected = float(np.sum(test["weight"][passing]) * factors[0])
    assert float(cut.group(2)) == pytest.approx(expected, rel=1e-3)
    assert factors[0] != pytest.approx(2.0, abs=5e-6)  # the data make the two differ


@pytest.mark.parametrize(("method", "named"), [
    ('decorrelation = "uboost"\nboosting = "adaboost"', "uBoost"),
    ('decorrelation_map = "ddt"', "DDT map"),
    ('decorrelation = "flatness"', "flatness loss"),
])
def test_dask_refusal_names_the_decorrelation_asked_for(tmp_path: Path, method: str,
                                                        named: str) -> None:
    """[dask] beside uBoost or the DDT map was refused as "the decorrelation (flatness)
    loss is not distributed yet", naming a loss the configuration did not ask for."""
    _write_samples(tmp_path, n=50)
    path = _config(tmp_path, method=f'{method}\ndecorrelate = ["m"]', dask=True)
    with pytest.raises(ConfigError) as caught:
        load_config(path, output=tmp_path / "out")
    text = str(caught.value)
    assert f"the decorrelation ({named}) is not distributed yet" in text, text
    assert named == "flatness loss" or "flatness" not in text, text
