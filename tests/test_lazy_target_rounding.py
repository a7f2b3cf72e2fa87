"""Dask's lazy read judges the float32 rounding of regression targets on all its targets,
as the in-memory read does (an audit of the lazy read against memory, 2026-12-05): each
partition judged its own alone, so targets of 1e6 + 0.2 x N(0, 1), which float32 rounds
by 0.018 (rms) against a spread of 0.2, were kept and trained on in partitions of 90
entries (under the 100 events a judgement needs), and a read whose targets spread over
500 was refused for a partition of nearly equal ones. Reference: numpy's rms rounding and
standard deviation of the exact targets, in double."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("dask.array")

import dask  # noqa: E402

from hepbdt.io import Sample, read  # noqa: E402
from hepbdt.io.dataset import TARGET_RESOLUTION  # noqa: E402
from hepbdt.io.errors import BadValueError  # noqa: E402
from tests.ntuples import KINDS, write_ntuple  # noqa: E402

N = 3_000


def _write(tmp_path, kind: str) -> tuple[str, np.ndarray]:
    rng = np.random.default_rng(5)
    noise = rng.normal(0.0, 1.0, N)
    write_ntuple(tmp_path / "t.root", "t", {"x": rng.normal(size=N).astype(np.float32),
                                            "noise": noise, "entry": np.arange(N, dtype=np.int64)},
                 kind)
    return f"{tmp_path / 't.root'}:t", noise


def _rms_rounding(exact: np.ndarray) -> float:
    return float(np.sqrt(np.mean((exact.astype(np.float32).astype(np.float64) - exact) ** 2)))


@pytest.mark.parametrize("kind", KINDS)
def test_partitions_too_small_to_judge_are_judged_together(tmp_path, kind):
    source, noise = _write(tmp_path, kind)
    exact = 1e6 + 0.2 * noise
    assert _rms_rounding(exact) > TARGET_RESOLUTION * exact.std()  # float32 cannot hold them
    samples = [Sample("r", source, target="1e6 + 0.2 * noise")]
    with pytest.raises(BadValueError) as memory:
        read(samples, ["x"], progress=False)
    lazy = read(samples, ["x"], dask=True, step_size=90)  # partitions of 90 entries
    with dask.config.set(scheduler="synchronous"), pytest.raises(BadValueError) as computed:
        lazy.y.compute()
    assert str(computed.value) == str(memory.value)
    assert "samples 'r'" in str(computed.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_partition_of_nearly_equal_targets_is_not_refused_alone(tmp_path, kind):
    source, noise = _write(tmp_path, kind)
    text = "1e6 + (entry >= 1500) * 1000 + 0.02 * noise"
    exact = 1e6 + (np.arange(N) >= 1500) * 1000 + 0.02 * noise
    assert _rms_rounding(exact) < TARGET_RESOLUTION * exact.std()  # the whole read: held
    first = exact[:1000]  # the first partition alone would not be
    assert _rms_rounding(first) > TARGET_RESOLUTION * first.std()
    samples = [Sample("r", source, target=text)]
    memory = read(samples, ["x"], progress=False)
    lazy = read(samples, ["x"], dask=True, step_size=1_000)
    with dask.config.set(scheduler="synchronous"):
        computed = lazy.compute()
    np.testing.assert_array_equal(computed.y, exact.astype(np.float32))
    np.testing.assert_array_equal(computed.y, memory.y)
