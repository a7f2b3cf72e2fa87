"""Review of the commits of 2026-12-04 (branch-type record, old model files, file versions,
fixed-size arrays): legitimate inputs next to what they refuse.

References are independent of hepbdt's earlier output: NumPy on the stored numbers, or
the model's own predictions on features computed here with NumPy.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import uproot

import hepbdt
from tests.ntuples import write_ttree

OLD = Path(__file__).parent / "data" / "old_models"


def _nj_file(path: Path, n: int = 300) -> dict[str, np.ndarray]:
    """A TTree 'Events' with an unsigned nJ (UInt_t), a double x0 and a 0/1 label; its
    numbers."""
    rng = np.random.default_rng(3)
    branches = {"nJ": rng.integers(0, 6, n).astype(np.uint32), "x0": rng.normal(size=n),
                "label": (rng.random(n) < 0.5).astype(np.int32)}
    write_ttree(path, "Events", branches)
    return branches


def test_an_old_model_fitted_again_today_is_saved_as_today_and_applied(tmp_path):
    """A model loaded from a file of before 2026-12-04 and fitted again computed its features
    by today's rules: its file says so, and apply scores it (it refused 'nJ - 2' before)."""
    numbers = _nj_file(tmp_path / "t.root")
    samples = [hepbdt.Sample("s", f"{tmp_path / 't.root'}:Events", cut="label == 1", label=1),
               hepbdt.Sample("b", f"{tmp_path / 't.root'}:Events", cut="label == 0", label=0)]
    data = hepbdt.read(samples, ["nJ - 2", "x0"], progress=False)
    model = hepbdt.load_model(OLD / "634f42a_computed_feature.json")
    model.fit(data.X, data.y, data.w)
    model.save(tmp_path / "m.json")
    assert json.loads((tmp_path / "m.json").read_text())["constants"] == "bare"
    hepbdt.apply(tmp_path / "m.json", f"{tmp_path / 't.root'}:Events",
                 output=str(tmp_path / "out.root"), progress=False)
    with uproot.open(tmp_path / "out.root") as file:
        scores = file["Events"]["bdt_score"].array(library="np")
    X = np.column_stack([numbers["nJ"].astype(np.int64) - 2, numbers["x0"]])
    with warnings.catch_warnings():  # unnamed columns, in the model's order
        warnings.simplefilter("ignore")
        expected = model.decision_function(X.astype(np.float32))
    np.testing.assert_allclose(scores, expected, rtol=1e-6, atol=1e-6)
