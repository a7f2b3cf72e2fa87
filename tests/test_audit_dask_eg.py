"""Dask fit audit EG (2026-12-05): refusals of the cluster's own settings, each a clear
error naming what is wrong and what would be valid (one line from the command line)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.array")

from hepbdt import BDTClassifier  # noqa: E402
from hepbdt.analysis import ConfigError, load_config  # noqa: E402
from hepbdt.dask import ClusterError, connect  # noqa: E402

from .test_config import BASE, write  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 single-threaded workers in this process (threads: small)."""
    from distributed import Client, LocalCluster

    with LocalCluster(processes=False, n_workers=2, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as dask_client:
        yield dask_client


NOT_ADDRESSES = ["foo", "", "host:port", "xyz://host:8786", "tcp://"]


@pytest.mark.parametrize("address", NOT_ADDRESSES)
def test_a_scheduler_that_is_no_address_is_refused_in_words(address):
    """distributed's own ValueError ("missing port number in address 'foo'") came from deep
    in its connect: a traceback from `hepbdt train` with [dask] and `hepbdt apply
    --scheduler`, after `--check` had said the configuration was OK."""
    with pytest.raises(ClusterError, match=rf"{address!r} is not a Dask scheduler address "
                                           r"\(.*\): give 'local' or an address such as"):
        connect(address, timeout=1.0)


def test_cli_apply_refuses_a_scheduler_that_is_no_address_in_one_line(tmp_path, capsys):
    from hepbdt.cli import main

    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 2)).astype(np.float32)
    path = tmp_path / "m.json"
    BDTClassifier(n_trees=2, max_depth=2).fit(X, (X[:, 0] > 0).astype(int)).save(path)
    status = main(["apply", str(path), str(tmp_path / "in.root"), "-o",
                   str(tmp_path / "o.root"), "--scheduler", "foo"])
    err = capsys.readouterr().err
    assert status == 1
    assert err.strip().splitlines() == [
        "hepbdt: error: 'foo' is not a Dask scheduler address (missing port number in "
        "address 'foo'): give 'local' or an address such as 'tcp://host:8786'"]


@pytest.mark.parametrize("address", NOT_ADDRESSES)
def test_the_configuration_check_names_a_scheduler_that_is_no_address(tmp_path, address):
    path = write(tmp_path, BASE + f'\n[dask]\nscheduler = "{address}"\n')
    with pytest.raises(ConfigError, match=rf"\[dask\] scheduler: {address!r} is not a Dask "
                                          "scheduler address"):
        load_config(path)


def test_addresses_and_local_pass_the_configuration_check(tmp_path):
    for address in ("local", "tcp://scheduler:8786", "10.0.0.1:8786", "tls://[::1]:8786"):
        load_config(write(tmp_path, BASE + f'\n[dask]\nscheduler = "{address}"\n'))


def test_the_refusal_of_deep_adaboost_trees_names_the_largest_depth(client):
    """It said "give a smaller max_depth" (201 features: 9 refused, which depth is not?);
    the depth it names must fit, and one more must not."""
    import dask.array as da

    from hepbdt.dask import DaskBDTClassifier
    from hepbdt.estimators import ParameterError

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 201)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)

    def fit(depth):
        return DaskBDTClassifier(boosting="adaboost", n_trees=1, max_depth=depth).fit(
            da.from_array(X, chunks=(200, 201)), da.from_array(y, chunks=200), client=client)

    with pytest.raises(ParameterError, match=r"give max_depth <= (\d+)$") as caught:
        fit(12)
    largest = int(str(caught.value).rsplit(" ", 1)[-1])
    assert fit(largest).forest_.n_trees == 1
    with pytest.raises(ParameterError, match=rf"max_depth={largest + 1}: with 201 features"):
        fit(largest + 1)


def test_memory_packs_from_50000_training_events_after_the_hold_out(client):
    """README said the default Dask and in-memory models differ "below 50,000 events"; memory
    counts the training events left after the hold-out, so at 52,000 given (46,800 trained on)
    with early stopping the defaults differ too. Documentation only: the Dask default is
    memory's quantised_histograms=True there, memory's default its float histograms."""
    import dask.array as da

    from hepbdt.dask import DaskBDTClassifier

    from .test_dask import _assert_same_forest

    rng = np.random.default_rng(3)
    n = 52_000
    X = rng.standard_normal((n, 3)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(n) > 0).astype(int)
    w = rng.uniform(0.5, 1.5, n)
    options = dict(n_trees=5, max_depth=4, early_stopping=True, random_state=1)
    dist = DaskBDTClassifier(**options).fit(
        *[da.from_array(a, chunks=(n // 2,) + a.shape[1:]) for a in (X, y, w)], client=client)
    packed = BDTClassifier(quantised_histograms=True, **options).fit(X, y, w)
    floats = BDTClassifier(quantised_histograms=False, **options).fit(X, y, w)
    default = BDTClassifier(**options).fit(X, y, w)
    assert np.count_nonzero(~default.held_out_mask()) < 50_000 <= n
    _assert_same_forest(packed.forest_, dist.forest_)
    _assert_same_forest(floats.forest_, default.forest_)
    with pytest.raises(AssertionError):  # the two kinds of histogram give other trees here
        _assert_same_forest(default.forest_, dist.forest_)
