"""Checks of an analysis's ROOT inputs before any work: files, trees and branches.

:func:`check_inputs` opens every sample's files (reading no event data) and reports, per
configuration key, files that do not exist, missing trees, expressions whose names are not
branches (with close names) and expressions that give a list per event, as one
:class:`~hepbdt.analysis.config.ConfigError`.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from ..io.branch_types import BranchTypeRecord
from ..io.errors import InputError
from ..io.expressions import CONSTANTS, Expression
from ..io.samples import (
    DistinctSamples,
    Source,
    TreeReader,
    branch_index,
    get_tree,
    open_root_file,
    resolve_sources,
)
from .config import AnalysisConfig, _Problems

__all__ = ["check_inputs"]


def _roles(config: AnalysisConfig, sample: Any, section: str
           ) -> list[tuple[str | None, str, str, str]]:
    """(table, key, expression, role) of every expression a sample's trees must serve."""
    roles: list[tuple[str | None, str, str, str]] = [
        (None, "features", expr, "feature") for expr in config.feature_expressions]
    roles += [("method", "decorrelate", expr, "feature") for expr in config.decorrelate]
    for key in ("weight", "cut", "target", "event"):
        value = getattr(sample, key)
        if key == "event" and value is None:
            value = config.event
        if isinstance(value, str):
            roles.append((section, key, value, key))
    return roles


def _check_shapes(file: Any, src: Source, roles: list[tuple[str | None, str, str, str]],
                  context: str, section: str, problems: _Problems,
                  seen: set[tuple[str | None, str, str, str]], record: BranchTypeRecord) -> None:
    """Add, under its key, each expression that gives a list per event in this tree (from
    the branches' types; no entries are read); a tree that cannot be read, or whose branch
    types would give an expression other values than another tree's (``record``), under
    the sample."""
    expressions = [Expression(text, role) for _, _, text, role in roles]
    try:
        reader = TreeReader(file, Source(src.path, src.tree), expressions, context)
        no_entries = reader.no_entries()
        record.add(reader.branch_types(no_entries), expressions, reader.where)
    except InputError as exc:
        problems.add(section, None, str(exc))
        return
    for (table, key, text, _), expression in zip(roles, expressions, strict=True):
        try:
            reader.check_shape(expression, no_entries)
        except InputError as exc:
            if (table, key, text, "") not in seen:
                seen.add((table, key, text, ""))
                problems.add(table, key, str(exc).removeprefix(f"{context}: "))


def check_inputs(config: AnalysisConfig) -> None:
    """Open every sample's files and trees and check the branches the expressions need.

    Reads no event data. Raises :class:`ConfigError` listing, per key, files that do not
    exist, trees that are missing and expressions that use names that are not branches
    (with close names), before any work starts.
    """
    source = os.fspath(config.path)
    problems = _Problems(source, set())
    seen: set[tuple[str | None, str, str, str]] = set()
    feature_labels = dict(zip(config.feature_expressions, config.features, strict=True))
    distinct = DistinctSamples()
    record = BranchTypeRecord()  # one type a branch, as read refuses it otherwise
    for sample in config.samples:
        section = f"samples.{sample.name}"
        context = f"sample {sample.name!r}"
        try:
            sources = resolve_sources(sample.files, sample.tree, context)
        except InputError as exc:
            problems.add(section, "files", str(exc).removeprefix(f"{context}: "))
            continue
        roles = _roles(config, sample, section)
        for src in sources:
            try:
                file = open_root_file(src.path, context)
            except InputError as exc:
                problems.add(section, "files", str(exc).removeprefix(f"{context}: "))
                continue
            with file:
                try:
                    tree = get_tree(file, src, context)
                except InputError as exc:
                    problems.add(section, "tree", str(exc).removeprefix(f"{context}: "))
                    continue
                try:
                    distinct.add(sample.name, sample.cut if isinstance(sample.cut, str) else None,
                                 src.path, tree.name)
                except InputError as exc:
                    problems.add(section, "files", str(exc))
                branches, paths, members = branch_index(tree)
                branch_set = set(paths)
                where = f"tree {tree.name!r} of {src.path!r} (sample {sample.name!r})"
                for alias in config.aliases:
                    if alias in branch_set and ("aliases", alias, "", "") not in seen:
                        seen.add(("aliases", alias, "", ""))
                        problems.add("aliases", alias, f"is also a branch of {where}; "
                                     "rename the alias")
                clean = True
                for table, key, text, role in roles:
                    missing = sorted(Expression(text, role).names - branch_set - set(CONSTANTS))
                    for name in missing:
                        clean = False
                        if (table, key, text, name) in seen:
                            continue
                        seen.add((table, key, text, name))
                        shown = feature_labels.get(text, text) if key == "features" else text
                        expanded = f" (= {text!r})" if shown != text else ""
                        matches = difflib.get_close_matches(name, branches, n=3, cutoff=0.6)
                        hint = (f"did you mean {' or '.join(repr(m) for m in matches)}? "
                                if matches else "")
                        if len(members.get(name, ())) > 1:
                            hint = (f"members of {len(members[name])} split objects have this "
                                    f"name ({', '.join(map(repr, members[name]))}): write the "
                                    "one meant; ")
                        listed = ", ".join(branches[:40]) + (" ..." if len(branches) > 40 else "")
                        problems.add(table, key, f"{shown!r}{expanded} uses {name!r}, which is "
                                     f"not a branch of {where}; {hint}branches: {listed}")
                if clean:
                    _check_shapes(file, src, roles, context, section, problems, seen, record)
    problems.raise_if_any()
