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
