"""Tests of the demo ntuple generator and of the files shipped in ``data/``."""

from __future__ import annotations

import zlib
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot

from hepbdt import demo_data

DATA_DIR = Path(__file__).resolve().parents[1] / "data"

# The stack that wrote the shipped files. The arrays must match on any stack; the bytes
# are checked only on this one, because compressed bytes depend on the zlib build and
# the file layout on uproot's version.
SHIPPED_WITH = {"uproot": "5.7.7", "zlib": "1.2.13"}

JET_BRANCHES = ["Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btag"]
LEP_BRANCHES = ["Lep_pt", "Lep_eta", "Lep_phi", "Lep_charge"]
EVENT_BRANCHES = [
    "run",
    "event",
    "nJet",
    "nLep",
    "HT",
    "MET_pt",
    "MET_phi",
    "genWeight",
    "xsec",
    "lumi",
    "sumGenWeight",
    "true_mass",
]
ALL_BRANCHES = EVENT_BRANCHES + JET_BRANCHES + LEP_BRANCHES


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory) -> dict[str, Path]:
    return demo_data.generate(tmp_path_factory.mktemp("demo_data"))


@pytest.fixture(scope="module")
def shipped() -> dict[str, ak.Array]:
    arrays = {}
    for process in demo_data.PROCESSES:
        path = DATA_DIR / demo_data.FILE_NAMES[process]
        assert path.exists(), f"{path} is missing; run: python -m hepbdt.demo_data data"
        with uproot.open(path) as root_file:
            arrays[process] = root_file[demo_data.TREE_NAME].arrays()
    return arrays


def _leading_pair_mass(events: ak.Array) -> np.ndarray:
    """Invariant mass of the two leading jets, for events with at least two."""
    jets = events[events.nJet >= 2]
    pt, eta, phi, mass = (
        np.asarray(jets[name][:, :2], dtype=np.float64)
        for name in ("Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass")
    )
    px, py, pz = pt * np.cos(phi), pt * np.sin(phi), pt * np.sinh(eta)
    energy = np.sqrt(px**2 + py**2 + pz**2 + mass**2)
    total = [x.sum(axis=1) for x in (energy, px, py, pz)]
    return np.sqrt(np.maximum(total[0] ** 2 - total[1] ** 2 - total[2] ** 2 - total[3] ** 2, 0))


# ----------------------------------------------------------------------------------------
# Reproducibility


def test_regeneration_equals_shipped_contents(regenerated, shipped):
    assert set(regenerated) == set(demo_data.PROCESSES)
    for process, path in regenerated.items():
        assert path.name == (DATA_DIR / demo_data.FILE_NAMES[process]).name
        with uproot.open(path) as new_file:
            shipped_path = DATA_DIR / demo_data.FILE_NAMES[process]
            with uproot.open(shipped_path) as old_file:
                assert new_file.keys() == old_file.keys() == [f"{demo_data.TREE_NAME};1"]
                new_tree = new_file[demo_data.TREE_NAME]
                old_tree = old_file[demo_data.TREE_NAME]
                assert new_tree.num_entries == old_tree.num_entries
                assert new_tree.keys() == old_tree.keys()
                new = new_tree.arrays()
        for branch in new_tree.keys():
            old_branch = shipped[process][branch]
            if new[branch].ndim > 1:
                np.testing.assert_array_equal(ak.num(new[branch]), ak.num(old_branch))
            new_flat = np.asarray(ak.flatten(new[branch], axis=None))
            old_flat = np.asarray(ak.flatten(old_branch, axis=None))
            assert new_flat.dtype == old_flat.dtype, (process, branch)
            np.testing.assert_array_equal(
                new_flat,
                old_flat,
                err_msg=f"{process}:{branch} differs; regenerate: python -m hepbdt.demo_data data",
            )


def test_regeneration_equals_shipped_bytes(regenerated):
    versions = {"uproot": uproot.__version__, "zlib": zlib.ZLIB_RUNTIME_VERSION}
    if versions != SHIPPED_WITH:
        pytest.skip(f"bytes compared only with {SHIPPED_WITH}, this is {versions}")
    for process, path in regenerated.items():
        shipped_bytes = (DATA_DIR / demo_data.FILE_NAMES[process]).read_bytes()
        assert path.read_bytes() == shipped_bytes, process


def test_writing_is_byte_reproducible(tmp_path):
    sizes = {"n_signal": 300, "n_background": (200, 100)}
    first = demo_data.generate(tmp_path / "first", seed=7, **sizes)
    second = demo_data.generate(tmp_path / "second", seed=7, **sizes)
    for process in demo_data.PROCESSES:
        assert first[process].read_bytes() == second[process].read_bytes(), process
    assert not list((tmp_path / "first").glob("*.tmp"))


def test_same_seed_same_arrays_different_seed_different():
    sizes = {"n_signal": 2000, "n_background": (1500, 1000)}
    first = demo_data.generate_arrays(seed=11, **sizes)
    second = demo_data.generate_arrays(seed=11, **sizes)
    other = demo_data.generate_arrays(seed=12, **sizes)
    for process in demo_data.PROCESSES:
        assert first[process].keys() == second[process].keys()
        for branch in first[process]:
            np.testing.assert_array_equal(first[process][branch], second[process][branch])
        for branch in ("Jet_pt", "MET_pt", "genWeight", "true_mass"):
            assert not np.array_equal(first[process][branch], other[process][branch])


def test_each_process_has_its_own_random_stream():
    small = demo_data.generate_arrays(seed=3, n_signal=500, n_background=(400, 300))
    larger = demo_data.generate_arrays(seed=3, n_signal=900, n_background=(400, 300))
    for process in ("background_qcd", "background_ttbar"):
        for branch in small[process]:
            np.testing.assert_array_equal(small[process][branch], larger[process][branch])


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="n_signal"):
        demo_data.generate_arrays(n_signal=0)
    with pytest.raises(ValueError, match="n_background"):
        demo_data.generate_arrays(n_background=(10,))
    with pytest.raises(ValueError, match="n_background"):
        demo_data.generate_arrays(n_background=(10, 10**7))


def test_command_line(tmp_path, capsys):
    argv = [str(tmp_path), "--seed", "5", "--n-signal", "50", "--n-background", "40", "30"]
    assert demo_data.main(argv) == 0
    assert "signal" in capsys.readouterr().out
    with uproot.open(tmp_path / "background_ttbar.root") as root_file:
        assert root_file["Events"].num_entries == 30


# ----------------------------------------------------------------------------------------
# The shipped files: structure


def test_files_hold_the_documented_branches_and_types(shipped):
    for process in demo_data.PROCESSES:
        with uproot.open(DATA_DIR / demo_data.FILE_NAMES[process]) as root_file:
            tree = root_file["Events"]
            assert set(tree.keys()) == set(ALL_BRANCHES)
            assert tree.num_entries >= 20_000
            assert tree["event"].typename == "uint64_t"
            assert tree["Jet_pt"].typename == "float[]"
            assert tree["Lep_charge"].typename == "int32_t[]"
    total_size = sum((DATA_DIR / name).stat().st_size for name in demo_data.FILE_NAMES.values())
    assert total_size < 5_000_000


def test_events_are_unique_across_files_and_exact_in_float32(shipped):
    events = np.concatenate([np.asarray(shipped[p].event) for p in demo_data.PROCESSES])
    assert len(np.unique(events)) == len(events)
    assert events.max() < 2**24
    np.testing.assert_array_equal(events.astype(np.float32).astype(np.uint64), events)


def test_objects_are_pt_ordered_counted_and_in_acceptance(shipped):
    for process, events in shipped.items():
        assert ak.all(ak.num(events.Jet_pt) == events.nJet)
        assert ak.all(ak.num(events.Lep_pt) == events.nLep)
        for name in JET_BRANCHES:
            assert ak.all(ak.num(events[name]) == events.nJet), (process, name)
        assert ak.all(events.Jet_pt[:, 1:] <= events.Jet_pt[:, :-1]), process
        assert ak.all(events.Lep_pt[:, 1:] <= events.Lep_pt[:, :-1]), process
        assert ak.all(events.Jet_pt > 20.0) and ak.all(abs(events.Jet_eta) < 2.5)
        assert ak.all(events.Lep_pt > 10.0) and ak.all(abs(events.Lep_eta) < 2.4)
        assert ak.all((events.Jet_btag >= 0.0) & (events.Jet_btag <= 1.0))
        assert set(np.unique(ak.flatten(events.Lep_charge)).tolist()) <= {-1, 1}
        # Some events with no jet and some with one, as a reader must handle.
        assert ak.sum(events.nJet == 0) > 0 and ak.sum(events.nJet == 1) > 0, process


def test_event_level_quantities_are_consistent(shipped):
    for process, events in shipped.items():
        np.testing.assert_allclose(
            np.asarray(events.HT), np.asarray(ak.sum(events.Jet_pt, axis=1)), rtol=2e-3
        )
        assert ak.all(events.MET_pt >= 0.0)
        assert ak.all(abs(events.MET_phi) <= np.pi + 1e-3)
        assert ak.all(events.run == 1)
        np.testing.assert_array_equal(np.asarray(events.xsec), demo_data.XSEC[process])
        np.testing.assert_array_equal(np.asarray(events.lumi), demo_data.LUMI)


# ----------------------------------------------------------------------------------------
# The shipped files: physics


def test_weights_have_a_few_per_cent_negative_and_normalise(shipped):
    intended = {
        "signal": (0.01, 0.035),
        "background_qcd": (0.035, 0.07),
        "background_ttbar": (0.035, 0.07),
    }
    for process, events in shipped.items():
        weights = np.asarray(events.genWeight)
        low, high = intended[process]
        assert low < np.mean(weights < 0) < high, process
        assert np.all(weights != 0)
        sum_weights = np.sum(weights, dtype=np.float64)
        np.testing.assert_allclose(np.asarray(events.sumGenWeight), sum_weights, rtol=1e-12)
        # The documented normalisation gives the expected yield, xsec * lumi.
        normalised = weights * np.asarray(events.xsec) * np.asarray(events.lumi)
        normalised = normalised / np.asarray(events.sumGenWeight)
        expected = demo_data.XSEC[process] * demo_data.LUMI
        assert np.sum(normalised, dtype=np.float64) == pytest.approx(expected, rel=1e-5)


def test_signal_true_mass_is_the_resonance(shipped):
    true_mass = np.asarray(shipped["signal"].true_mass)
    assert abs(np.median(true_mass) - demo_data.RESONANCE_MASS) < 0.1
    assert np.all(np.abs(true_mass - demo_data.RESONANCE_MASS) < 10 * demo_data.RESONANCE_WIDTH)
    # Backgrounds are non-resonant: a broad continuum of true pair masses.
    for process in ("background_qcd", "background_ttbar"):
        background_mass = np.asarray(shipped[process].true_mass)
        assert np.percentile(background_mass, 84) - np.percentile(background_mass, 16) > 50


def test_signal_dijet_mass_peaks_near_the_resonance_within_smearing(shipped):
    mjj = _leading_pair_mass(shipped["signal"])
    counts, edges = np.histogram(mjj, bins=np.arange(0.0, 250.0, 5.0))
    mode = edges[np.argmax(counts)] + 2.5
    assert 105.0 < mode < 130.0
    core = mjj[(mjj > 60.0) & (mjj < 180.0)]
    relative_width = (np.percentile(core, 84) - np.percentile(core, 16)) / 2 / np.median(core)
    # Smeared: neither a delta function nor washed out.
    assert 0.06 < relative_width < 0.2
    # Reconstructed mass is below the truth on average (response, neutrinos).
    assert np.median(mjj) < demo_data.RESONANCE_MASS


def test_backgrounds_are_non_resonant_and_differ_from_signal(shipped):
    qcd_mjj = _leading_pair_mass(shipped["background_qcd"])
    counts, edges = np.histogram(qcd_mjj, bins=np.arange(0.0, 400.0, 10.0))
    peak = np.argmax(counts)
    assert edges[peak] < 100.0
    assert np.all(np.diff(counts[peak:]) <= 0.05 * counts[peak])  # falling beyond the peak
    signal, ttbar = shipped["signal"], shipped["background_ttbar"]
    assert np.mean(ttbar.nJet) > np.mean(signal.nJet) + 1.0
    assert np.mean(ttbar.nLep) > 5 * np.mean(signal.nLep)
    assert np.mean(ttbar.MET_pt) > np.mean(signal.MET_pt)
    leading_btag = {
        p: np.asarray(shipped[p].Jet_btag[shipped[p].nJet >= 1][:, 0]) for p in ("signal", "background_qcd")
    }
    assert np.mean(leading_btag["signal"]) > np.mean(leading_btag["background_qcd"]) + 0.2


def test_the_shipped_and_regenerated_files_hold_ttrees_as_data_readme_says(regenerated):
    """data/README.md: "each with one TTree named Events" (uproot names the class it read)."""
    for path in [*regenerated.values(), *(DATA_DIR / demo_data.FILE_NAMES[p]
                                          for p in demo_data.PROCESSES)]:
        with uproot.open(path) as root_file:
            assert root_file.classnames() == {f"{demo_data.TREE_NAME};1": "TTree"}, path


def test_the_sculpting_sample_is_a_ttree_as_its_docstring_says(tmp_path):
    """write_sculpting_sample wrote ``root_file[name] = arrays``, which uproot 5.7 writes
    as an RNTuple, where its docstring (and analyses/decorrelation) say TTree ``Events``."""
    paths = demo_data.write_sculpting_sample(tmp_path, 30, 40, seed=3)
    arrays = demo_data.sculpting_arrays(30, 40, seed=3)
    for name, label in (("signal", 1), ("background", 0)):
        with uproot.open(paths[name]) as root_file:
            assert root_file.classnames() == {f"{demo_data.TREE_NAME};1": "TTree"}
            read = root_file[demo_data.TREE_NAME].arrays(library="np")
        mine = arrays["label"] == label
        assert set(read) == set(arrays) - {"label"}
        for key, values in read.items():
            assert values.dtype == arrays[key].dtype, key
            np.testing.assert_array_equal(values, arrays[key][mine])
