"""Audit of how `hepbdt train` turns samples into training and test events and weights:
every event, weight, normalisation and yield factor is recomputed here from the ROOT files
with uproot and numpy (the split rules and TMVA's NormMode as the README states them), and
weights that leave nothing to measure are refused before any work, naming the real cause."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import uproot

from hepbdt.analysis import load_config, train
from hepbdt.analysis.result import split_yields_of
from hepbdt.analysis.workflow import TrainingError

DATA = Path(__file__).resolve().parents[1] / "data"
PRESELECTION = "event % 10 == 0"
# name: (file, cut, scale, class): two samples per class, scales and cuts that differ
SAMPLES = {"signal": ("signal.root", "HT <= 300", 1.0, 1),  # one file's events in two samples
           "sig_hard": ("signal.root", "HT > 300", 3.0, 1),
           "qcd": ("background_qcd.root", "HT > 50", 1.0, 0),
           "ttbar": ("background_ttbar.root", None, 0.5, 0)}


def _tables(samples: dict) -> str:
    lines = []
    for name, (file, cut, scale, label) in samples.items():
        lines += [f"[samples.{name}]", f'files = "{DATA / file}"',
                  f'label = "{"signal" if label else "background"}"' if label is not None
                  else 'target = "MET_pt * 2"', f"scale = {scale}"]
        lines += [f'cut = "{cut}"'] if cut else []
    return "\n".join(lines)


def _train(tmp_path: Path, split: str, samples: dict = SAMPLES, method: str = ""):
    (tmp_path / "a.toml").write_text(f"""
event = "event"
tree = "Events"
weight = "genWeight * xsec * lumi / sumGenWeight"
preselection = "{PRESELECTION}"
features = ["HT", "MET_pt"]
{_tables(samples)}
[split]
{split}
[method]
n_trees = 3
max_depth = 2
{method}
[output]
figures = false
report = false
tmva_xml = false
""")
    config = load_config(tmp_path / "a.toml", output=tmp_path / "out")
    result = train(config)
    with uproot.open(tmp_path / "out" / "scores.root") as file:
        trees = {n: file[n].arrays(library="np") for n in ("TrainTree", "TestTree")}
    return result, trees["TrainTree"], trees["TestTree"]


def _truth(file: str, cut: str | None, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Event numbers and physical weights of a sample's selected events, in file order."""
    a = uproot.open(DATA / file)["Events"].arrays(
        ["event", "genWeight", "xsec", "lumi", "sumGenWeight", "HT"], library="np")
    event = a["event"].astype(np.int64)
    keep = event % 10 == 0
    if cut is not None:
        low = cut.startswith("HT <= ")  # every cut here is "HT > x" or "HT <= x"
        edge = float(cut.removeprefix("HT <= " if low else "HT > "))
        keep &= (a["HT"] <= edge) if low else (a["HT"] > edge)
    w = a["genWeight"].astype(np.float64) * a["xsec"] * a["lumi"] / a["sumGenWeight"] * scale
    return event[keep], w[keep]


def _in_training(mode: str, n: int, fraction: float) -> np.ndarray:
    """The README's split of an n-event sample: floor(n f + 0.5) events train; block: the
    first ones, alternate: positions floor(j / f)."""
    n_train = int(np.floor(n * fraction + 0.5))
    mask = np.zeros(n, dtype=bool)
    if mode == "block":
        mask[:n_train] = True
    else:
        mask[np.floor(np.arange(n_train) / fraction).astype(np.int64)] = True
    return mask


def _weights_of(tree: dict, mask: np.ndarray, event: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The brute-force weights of the events of ``tree[mask]``, by event number."""
    order = np.argsort(event)
    return w[order][np.searchsorted(event[order], tree["event"][mask])]


def _factor(norm: str, labels: list, n: dict, total: dict) -> dict:
    """TMVA's NormMode per class: none 1, num_events n_c / W_c, equal_num_events n_sig / W_c."""
    if norm == "none":
        return dict.fromkeys(labels, 1.0)
    return {c: (n[c] if norm == "num_events" else n[1]) / total[c] for c in labels}


@pytest.mark.parametrize(("mode", "norm"), [("block", "equal_num_events"),
                                            ("alternate", "num_events")])
def test_split_events_weights_and_yield_factors(tmp_path: Path, mode: str, norm: str) -> None:
    result, tr, te = _train(tmp_path, f'mode = "{mode}"\ntrain_fraction = 0.7\nnorm = "{norm}"')
    assert result.kfold_by is None
    n, total, physical = {0: 0, 1: 0}, {0: 0.0, 1: 0.0}, {}
    for i, (name, (file, cut, scale, label)) in enumerate(SAMPLES.items()):
        event, w = _truth(file, cut, scale)
        train_mask = _in_training(mode, len(event), 0.7)
        np.testing.assert_array_equal(tr["event"][tr["sample"] == i], event[train_mask])
        np.testing.assert_array_equal(te["event"][te["sample"] == i], event[~train_mask])
        np.testing.assert_allclose(te["weight"][te["sample"] == i], w[~train_mask], rtol=1e-12)
        n[label] += int(train_mask.sum())
        total[label] += float(w[train_mask].sum())
        physical[i] = (w[train_mask], label)
        factor = len(event) / np.count_nonzero(~train_mask)
        np.testing.assert_allclose(split_yields_of(result).scale[result.test.sample_index == i],
                                   factor, rtol=1e-12)
        table = result.summary.split("Samples after cuts")[1].split("\n\n")[0]
        row = next(line for line in table.splitlines() if line.split()[:1] == [name])
        assert float(row.split()[-1]) == pytest.approx(factor, rel=1e-5)
    norm_factor = _factor(norm, [0, 1], n, total)
    for i, (w, label) in physical.items():
        np.testing.assert_allclose(tr["weight"][tr["sample"] == i], w * norm_factor[label],
                                   rtol=1e-10)


def test_kfold_training_weights_are_normalised_per_fold(tmp_path: Path) -> None:
    k = 3
    result, tr, te = _train(tmp_path, f'kfold = {k}\nnorm = "equal_num_events"')
    assert result.kfold_by == "event"
    truth = {i: (*_truth(file, cut, scale), label)
             for i, (file, cut, scale, label) in enumerate(SAMPLES.values())}
    for i, (event, w, _) in truth.items():
        mask = te["sample"] == i
        np.testing.assert_array_equal(np.sort(te["event"][mask]), event)
        np.testing.assert_allclose(te["weight"][mask], _weights_of(te, mask, event, w),
                                   rtol=1e-12)
    for fold in range(k):
        n, total = {0: 0, 1: 0}, {0: 0.0, 1: 0.0}
        for event, w, label in truth.values():
            n[label] += int(np.count_nonzero(event % k != fold))
            total[label] += float(w[event % k != fold].sum())
        norm_factor = _factor("equal_num_events", [0, 1], n, total)
        for i, (event, w, label) in truth.items():
            mask = (tr["fold"] == fold) & (tr["sample"] == i)
            np.testing.assert_array_equal(np.sort(tr["event"][mask]), event[event % k != fold])
            np.testing.assert_allclose(tr["weight"][mask],
                                       _weights_of(tr, mask, event, w) * norm_factor[label],
                                       rtol=1e-10)


def _sum_in_message(text: str) -> float:
    return float(re.search(r"sum to (\S+?);", text).group(1))


def test_class_with_negative_training_weight_is_named_not_blamed_on_norm(tmp_path: Path
                                                                         ) -> None:
    # was: "cannot normalise: the weights of class 0 sum to ...; use no normalisation",
    # and norm = "none" then failed on the same weights
    samples = {"signal": SAMPLES["signal"], "qcd": ("background_qcd.root", None, -1.0, 0)}
    with pytest.raises(TrainingError) as info:
        _train(tmp_path, 'mode = "block"\nnorm = "num_events"', samples)
    text = str(info.value)
    assert text.startswith("the training sample: the background weights sum to ")
    assert "norm" not in text
    event, w = _truth("background_qcd.root", None, -1.0)
    expected = w[_in_training("block", len(event), 0.5)].sum()
    assert _sum_in_message(text) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("split", ['mode = "block"', "kfold = 3"])
def test_regression_without_positive_weight_is_refused_before_training(tmp_path: Path,
                                                                       split: str) -> None:
    # was: trained and wrote every output, then a ValueError traceback from the summary's
    # regression metrics (negative_weights = "abs" trains on net-negative weights)
    samples = {"signal": ("signal.root", None, -1.0, None)}
    with pytest.raises(TrainingError) as info:
        _train(tmp_path, split, samples, 'negative_weights = "abs"')
    text = str(info.value)
    event, w = _truth("signal.root", None, -1.0)
    train_mask = (_in_training("block", len(event), 0.5) if split.startswith("mode")
                  else event % 3 != 0)
    assert "need a positive total weight" in text
    assert f"{int(train_mask.sum()):,} events" in text
    assert _sum_in_message(text) == pytest.approx(w[train_mask].sum(), rel=1e-5)
    assert not (tmp_path / "out").exists()
