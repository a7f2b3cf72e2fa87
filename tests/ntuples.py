"""The ROOT files the tests write, each of the kind it names: a TTree or an RNTuple.

uproot 5.7 writes ``file[name] = arrays`` (a dict of arrays, or Awkward arrays) as an
RNTuple, not a TTree; ``file.mktree(name, types)`` then ``extend`` writes a TTree. A test
that means ROOT's TTree (leaf types, ``std::vector`` branches, baskets, friend trees, what
``hepbdt apply`` writes beside its input) writes it with :func:`write_ttree`; one that
means an RNTuple (clusters, pages, record fields) with :func:`write_rntuple`; one that
means either is parametrized over :data:`KINDS` where it is cheap and writes with
:func:`write_ntuple`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["KINDS", "kind_of", "tree_types", "write_ntuple", "write_rntuple", "write_ttree"]

KINDS = ("ttree", "rntuple")


def tree_types(branches: Mapping[str, Any]) -> dict[str, Any]:
    """mktree's types: Awkward's for jagged lists and records, numpy's (with a fixed
    shape: ``c[3]``) otherwise."""
    import awkward as ak

    return {name: value.type if isinstance(value, ak.Array)
            else np.dtype((np.asarray(value).dtype, np.shape(value)[1:]))
            for name, value in branches.items()}


def write_ttree(target: Any, name: str, branches: Mapping[str, Any], *,
                title: str = "", baskets: int = 1) -> None:
    """Write ``branches`` as TTree ``name`` in ``baskets`` extends (of about equal sizes)
    into ``target``: a path (the file is created) or a directory uproot opened to write."""
    if isinstance(target, (str, os.PathLike)):
        import uproot

        with uproot.recreate(target) as file:
            write_ttree(file, name, branches, title=title, baskets=baskets)
        return
    tree = target.mktree(name, tree_types(branches), title=title)
    n = len(next(iter(branches.values())))
    edges = np.linspace(0, n, max(baskets, 1) + 1).astype(int)
    for start, stop in zip(edges[:-1], edges[1:], strict=True):
        if stop > start:
            tree.extend({key: value[start:stop] for key, value in branches.items()})


def write_rntuple(target: Any, name: str, branches: Mapping[str, Any]) -> None:
    """Write ``branches`` as RNTuple ``name`` of one cluster into ``target`` (a path or a
    directory open to write): what ``file[name] = arrays`` writes with uproot 5.7."""
    if isinstance(target, (str, os.PathLike)):
        import uproot

        with uproot.recreate(target) as file:
            write_rntuple(file, name, branches)
        return
    target[name] = dict(branches)
    if kind_of(target[name]) != "rntuple":
        import pytest

        pytest.skip("this uproot writes a dict of arrays as a TTree")


def write_ntuple(target: Any, name: str, branches: Mapping[str, Any], kind: str) -> None:
    """Write ``branches`` as ``name`` of ``kind`` (one of :data:`KINDS`)."""
    if kind == "ttree":
        write_ttree(target, name, branches)
    elif kind == "rntuple":
        write_rntuple(target, name, branches)
    else:
        raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")


def kind_of(tree: Any) -> str:
    """'ttree' or 'rntuple': the kind of a tree uproot opened, or is writing."""
    name = type(tree).__name__
    return "rntuple" if "RNTuple" in name or name == "WritableNTuple" else "ttree"
