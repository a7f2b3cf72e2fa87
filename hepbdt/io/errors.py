"""Errors raised by :mod:`hepbdt.io`.

Every error is an :class:`InputError` (a :class:`ValueError`) whose message names the
file, the tree and the branch or expression at fault, and says what would be valid.
The subclasses let a caller tell the cases apart; none of them carries extra state.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "InputError",
    "SavedRulesError",
    "MissingFileError",
    "MissingTreeError",
    "MissingBranchError",
    "BranchTypeError",
    "ExpressionError",
    "EmptySelectionError",
    "BadValueError",
    "CompressionError",
]


class InputError(ValueError):
    """Base class of every input error raised by :mod:`hepbdt.io`."""


class MissingFileError(InputError, FileNotFoundError):
    """A file (or every file a glob could match) does not exist or cannot be opened."""


class MissingTreeError(InputError):
    """The file has no tree of the requested name (the message lists the trees it has)."""


class MissingBranchError(InputError):
    """An expression names a branch the tree does not have (the message lists close names)."""


class SavedRulesError(InputError):
    """A model file's computed feature that the expression rules it was saved under may
    compute otherwise than today's (``hepbdt.io.model_rules``)."""


class BranchTypeError(InputError):
    """A branch holds a type that cannot become a number per event (strings, objects)."""


class ExpressionError(InputError):
    """An expression does not parse, uses something not allowed, or cannot be evaluated."""


class EmptySelectionError(InputError):
    """A cut selects no event of a sample."""


class BadValueError(InputError):
    """A weight, target or feature has values that cannot be used (NaN weight, inf feature)."""


class CompressionError(InputError):
    """A basket is compressed with an algorithm uproot cannot decompress here."""


def close_names(name: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    """Return up to ``n`` names from ``candidates`` that look like ``name``."""
    candidates = list(candidates)
    matches = difflib.get_close_matches(name, candidates, n=n, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in candidates}
        matches = [
            lowered[m]
            for m in difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
        ]
    return matches


def describe_choices(names: Iterable[str], limit: int = 30) -> str:
    """Format a list of valid names for an error message, truncated to ``limit`` names."""
    names = list(names)
    if not names:
        return "(none)"
    shown = ", ".join(repr(n) for n in names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return shown


def empty_selection_error(sample: Any, total_entries: int,
                          sources: Sequence[Any]) -> EmptySelectionError:
    """The error for a sample whose cut selects no event of ``total_entries`` or whose
    files (``sources``: their ``path`` and ``tree``) hold none, in-memory and lazy alike."""
    context = f"sample {sample.name!r}"
    described = "files " + describe_choices(
        [f"{s.path}:{s.tree}" if s.tree else s.path for s in sources], 5)
    if sample.cut is not None and total_entries:
        return EmptySelectionError(
            f"{context}: cut {sample.cut!r} selects no event of {total_entries} in "
            f"{described}; loosen the cut or check its branches and units"
        )
    return EmptySelectionError(f"{context}: {described} hold no events")
