"""Samples of many files and trees, against counts made independently of hepbdt's reader.

Audit CE (2026-12-05): the files are written with uproot here (ROOT's own TChain gave the
same entries for the files of the audit, written by ROOT); the expected numbers are the
files' entries and numpy's sums over the arrays written.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt.analysis import ConfigError, load_config
from hepbdt.analysis.estimate import check_memory, estimate, estimate_lines
from tests.ntuples import write_ttree


def _write(path: Path, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    branches = {"x": rng.normal(size=n).astype(np.float32),
                "w": rng.uniform(0.5, 2.0, n), "event": np.arange(n, dtype=np.int64)}
    write_ttree(path, "Events", branches, baskets=7)
    return branches


def _config(tmp_path: Path, samples: str, memory: str | None = None) -> Path:
    path = tmp_path / "a.toml"
    path.write_text(("" if memory is None else f'memory = "{memory}"\n')
                    + 'tree = "Events"\nfeatures = ["x", "w"]\n' + samples
                    + "[method]\nn_trees = 3\n")
    return path


SPLIT_BY_CUTS = """
[samples.low]
files = "one.root"
label = "low"
cut = "x < -0.5"
[samples.mid]
files = "one.root"
label = "mid"
cut = "x >= -0.5 && x < 0.5"
[samples.high]
files = ["one.root", "other.root"]
label = "high"
cut = "x >= 0.5"
"""


def test_estimate_counts_a_tree_that_several_samples_cut_once(tmp_path: Path) -> None:
    # Three samples cut from one file (and one of them from a second file too): each entry
    # goes to one sample at most, so the training holds at most the files' own entries.
    one = _write(tmp_path / "one.root", 1500, 1)
    other = _write(tmp_path / "other.root", 400, 2)
    config = load_config(_config(tmp_path, SPLIT_BY_CUTS))
    entries = len(one["x"]) + len(other["x"])  # 1,900; counted per sample it said 4,900
    assert estimate(config).events == entries
    assert f"up to {entries:,} events" in estimate_lines(config)[0]


def test_memory_refusal_names_the_entries_of_the_files(tmp_path: Path) -> None:
    one = _write(tmp_path / "one.root", 1500, 1)
    other = _write(tmp_path / "other.root", 400, 2)
    path = _config(tmp_path, SPLIT_BY_CUTS, memory="10 kB")
    with pytest.raises(ConfigError, match=f"training {len(one['x']) + len(other['x']):,} events"):
        check_memory(load_config(path))


def test_read_auto_binned_counts_a_tree_that_several_samples_cut_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # binned="auto" reads binned when the float32 features of every entry would take more
    # than AUTO_BINNED_SHARE of the memory: 1,900 entries x 2 features x 4 bytes = 15,200
    # bytes, under a quarter of 80,000; counted per sample (4,900 entries) they were over.
    import hepbdt.io.samples as samples
    from hepbdt.io import Sample, read

    one = _write(tmp_path / "one.root", 1500, 1)
    other = _write(tmp_path / "other.root", 400, 2)
    monkeypatch.setattr(samples, "available_memory", lambda: 80_000)
    entries = len(one["x"]) + len(other["x"])
    assert entries * 2 * 4 <= samples.AUTO_BINNED_SHARE * 80_000
    cuts = {"low": "x < -0.5", "mid": "x >= -0.5 && x < 0.5", "high": "x >= 0.5"}
    data = read([Sample(name, [tmp_path / "one.root", tmp_path / "other.root"], tree="Events",
                        label=k, cut=cut) for k, (name, cut) in enumerate(cuts.items())],
                ["x", "w"], binned="auto", progress=False)
    assert not data.binned and len(data) == entries  # every entry in one sample
