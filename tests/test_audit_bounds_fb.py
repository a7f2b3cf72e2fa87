"""Audit FB (2026-12-05): time and memory bounded whatever the options; the estimates that
``hepbdt train --check`` prints count what the fit does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hepbdt.analysis import load_config
from hepbdt.analysis.estimate import estimate, estimate_lines
from hepbdt.estimators import BDTClassifier
from tests.faults import tiny_config


@pytest.mark.parametrize("trees", ["n_trees = 4", 'n_trees = "auto"'])
def test_uboost_estimate_counts_every_ensemble_the_fit_grows(tmp_path: Path, trees: str) -> None:
    # uBoost grows one AdaBoost ensemble of n_trees for each of decorrelation_steps: the
    # estimate counted one (decorrelation_steps=100: 20 trees and 0.65 s printed for a fit
    # of 2,000 trees that took about 180 s)
    config = load_config(tiny_config(
        tmp_path, method=f'boosting = "adaboost"\n{trees}\nmax_depth = 2\n'
        'decorrelation = "uboost"\ndecorrelation_steps = 3\ndecorrelate = ["MET_pt"]'))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(np.int64)
    fit = BDTClassifier(**config.params).fit(X, y, decorrelate=rng.normal(size=400))
    e = estimate(config, available_bytes=10**12)
    assert e.trees == fit.forest_.n_trees == 3 * fit.n_trees_
    plain = estimate(load_config(tiny_config(
        tmp_path, method=f'boosting = "adaboost"\n{trees}\nmax_depth = 2')), available_bytes=10**12)
    assert e.seconds == pytest.approx(3 * plain.seconds)
    assert f"{e.trees:,} trees (depth 2" in estimate_lines(config, available_bytes=10**12)[0]


@pytest.mark.parametrize("threads", [100_000, 257, 0, 2.5, float("nan"), True])
def test_read_and_apply_refuse_thread_counts_beyond_the_limit_before_opening_a_file(
        tmp_path: Path, threads: object) -> None:
    # uproot's executor starts every thread at once: threads=100,000 stopped the read with
    # Python's bare "can't start new thread" (RuntimeError), or held that many threads
    import threading
    import time

    import hepbdt
    from hepbdt.io import InputError, Sample, read

    before = threading.active_count()
    start = time.perf_counter()
    missing = str(tmp_path / "none.root")  # a refusal of threads comes before any file
    with pytest.raises(InputError, match=r"threads must be None .* an integer in \[1, 256\]"):
        read([Sample("s", missing, tree="Events", label=1)], ["HT"], threads=threads)
    model = BDTClassifier(n_trees=2, max_depth=1).fit(np.arange(40.0).reshape(20, 2),
                                                       np.arange(20) % 2)
    with pytest.raises(InputError, match=r"an integer in \[1, 256\]"):
        hepbdt.apply(model, missing, tmp_path / "out.root", threads=threads)
    assert time.perf_counter() - start < 5 and threading.active_count() == before


def test_read_takes_the_largest_thread_count_allowed(tmp_path: Path) -> None:
    from hepbdt.io import Sample, read
    from tests.faults import DATA

    data = read([Sample("s", str(DATA / "signal.root"), tree="Events", label=1)], ["HT"],
                threads=256)
    assert len(data) > 0


@pytest.mark.parametrize("n_jobs", [10**12, 2**31, 0, -2])
def test_n_jobs_refusal_names_its_upper_bound(n_jobs: int) -> None:
    # 10**12 was refused as "expected ... a number of threads >= 1", which it is
    from hepbdt.estimators import ParameterError

    with pytest.raises(ParameterError, match=r"n_jobs=.* a number of threads in \[1, 2\*\*31 - 1\]"):
        BDTClassifier(n_jobs=n_jobs).check_params()
    BDTClassifier(n_jobs=2**31 - 1).check_params()


def test_uboost_refuses_more_trees_than_a_model_may_have_before_any_work():
    """uBoost's forest holds n_trees for each of decorrelation_steps: 100,000 x 100 was
    accepted, a fit of 10**7 trees whose model no file could hold (MAX_NODES)."""
    import time

    from hepbdt.estimators import ParameterError
    from hepbdt.tmva_options import MAX_TREES

    X = np.random.default_rng(0).normal(size=(200, 2))
    y, m = (X[:, 0] > 0).astype(int), X[:, 1]
    start = time.perf_counter()
    with pytest.raises(ParameterError, match=r"100,000 a model may have"):
        BDTClassifier(boosting="adaboost", decorrelation="uboost", n_trees=MAX_TREES // 4 + 1,
                      decorrelation_steps=4).fit(X, y, decorrelate=m)
    assert time.perf_counter() - start < 5
    BDTClassifier(boosting="adaboost", decorrelation="uboost", n_trees=MAX_TREES // 4,
                  decorrelation_steps=4).check_params()
