"""The types of the branches that expressions read, and which changes of them alter a value.

A branch's type is written as text: its numbers' NumPy type (``bool``, ``int32``,
``uint64``, ``float32``, ...) and its layout, nothing for one value an event, ``[k]`` for
a fixed-size array of k and ``[]`` for a variable-size one (``float32[3]``, ``int32[]``).
:func:`hepbdt.io.read` records them for the branches its features read
(``Dataset.branch_types``), a trained model keeps that record (``branch_types_``, the
model file's ``"branch_types"``), and ``apply`` compares it with the trees it scores.

Which changes alter a value (:func:`type_change`), for the same numbers stored:

- any change of layout: subscripts out of range, ``num``, ``sum``, ``max``, slices and
  the padding of a fixed-size array differ (a fixed ``c[3]`` always has three elements);
- a change of the kind of number, for a branch a bitwise complement ``~`` reads (not
  ``!``): ``~`` of a boolean is its logical not, of an integer up to 64 bits signed or 32
  unsigned the int64 complement (``~1`` is -2), of a uint64 the unsigned one (2**64 - 2),
  and of a floating-point number refused. Elsewhere booleans and integers compute as
  int64 and floating-point numbers in double (:mod:`hepbdt.io.expressions`), so a
  ``Bool_t`` that became an ``Int_t``, or a ``Float_t`` a ``Double_t``, gives the same
  values for the same numbers;
- a change of width within one kind (``Float_t`` to ``Double_t``, ``Int_t`` to
  ``Long64_t``) never does.

Differences between the trees of one read are judged alike (a signal file whose ``flag``
is a ``Bool_t`` and a background file whose ``flag`` is an ``Int_t``, read by ``~flag``,
would give the two classes different values for the same flag).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import awkward as ak
import numpy as np

from hepbdt.io.errors import BranchTypeError, SavedRulesError
from hepbdt.io.expressions import Expression
from hepbdt.io.model_rules import check_saved_features

__all__ = ["type_text", "type_change", "check_types", "check_feature_types", "describe_type",
           "BranchTypeRecord"]


def type_text(array: Any) -> str:
    """The type text of a branch read as ``array`` (a NumPy array of one value or of a
    fixed-size array an event, or an Awkward array of variable-size lists)."""
    if isinstance(array, np.ndarray):
        return array.dtype.name + ("" if array.ndim == 1 else f"[{array.shape[1]}]")
    typ = ak.type(array).content
    while isinstance(typ, ak.types.OptionType | ak.types.ListType | ak.types.RegularType):
        typ = typ.content
    return f"{typ.primitive}[]"


def _split(text: str) -> tuple[str, str]:
    """(number type, layout) of a type text: ("float32", "[3]")."""
    number, bracket, rest = text.partition("[")
    return number, bracket + rest


def _kind(number: str) -> str:
    """The kind of number that decides what ``~`` gives."""
    if number == "bool":
        return "boolean"
    if number == "uint64":
        return "unsigned 64-bit integer"
    return "floating-point number" if number.startswith("float") else "integer"


def _a(words: str) -> str:
    """``words`` with its indefinite article."""
    return ("an " if words[0] in "aeiou" else "a ") + words


def describe_type(text: str) -> str:
    """A type text in words: 'float32[3] (a fixed-size array of 3)'."""
    layout = _split(text)[1]
    if not layout:
        return f"{text} (one value an event)"
    if layout == "[]":
        return f"{text} (a variable-size array)"
    return f"{text} (a fixed-size array of {layout[1:-1]})"


def type_change(old: str, new: str, complemented: bool) -> str | None:
    """Why a branch of type ``old`` read as ``new`` can give other values, or None when it
    cannot; ``complemented``: a bitwise ``~`` reads the branch."""
    (old_number, old_layout), (new_number, new_layout) = _split(old), _split(new)
    if old_layout != new_layout:
        return ("its layout changed, and subscripts, num(), sum(), max() and a fixed-size "
                "array's padding can differ")
    if complemented and _kind(old_number) != _kind(new_number):
        return (f"~ reads it, and ~ of {_a(_kind(old_number))} is not ~ of "
                f"{_a(_kind(new_number))} (of a boolean it is !x, of an integer -1 - x, of a "
                "uint64 2**64 - 1 - x)")
    return None


def _complemented(expressions: Iterable[Expression]) -> set[str]:
    """The branches a bitwise ``~`` of some expression reads."""
    return {name for e in expressions for name in e.complemented}


def check_types(recorded: Mapping[str, str], types: Mapping[str, str],
                expressions: Iterable[Expression], where: str, then: str) -> None:
    """BranchTypeError for the first branch of ``types`` (name -> type text) whose
    ``recorded`` type would give ``expressions`` other values; ``then`` says where the
    recorded type was seen ("at training", "in file 'a.root'")."""
    complemented = _complemented(expressions)
    for name, new in types.items():
        old = recorded.get(name)
        reason = None if old is None else type_change(old, new, name in complemented)
        if reason is not None:
            users = [e.text for e in expressions if name in e.names]
            raise BranchTypeError(
                f"{where}: branch {name!r} is {describe_type(new)} here but was "
                f"{describe_type(old)} {then}; {reason}, so {', '.join(map(repr, users))} "
                f"would not compute what it computed there. Valid: a branch of the same "
                "layout, and, where ~ reads it, of the same kind of number (a change of width, "
                f"Float_t to Double_t or Int_t to Long64_t, is fine): write it as {old} here "
                "too, or train on files of one type")


def check_feature_types(recorded: Mapping[str, str] | None, types: Mapping[str, str],
                        names: Iterable[str], definitions: Mapping[str, str], what: str,
                        owner: str, rules: int | None = None) -> None:
    """For a model scoring a read it did not train on (``_util.check_X``): BranchTypeError
    where a branch that the features ``names`` (computed as ``definitions`` gives them, else
    as their names) read has a type in ``types`` (the input's read) that would give them
    other values than its ``recorded`` type at ``owner``'s training; SavedRulesError where
    the model file's expression ``rules`` (None: today's) may have computed a feature
    otherwise than the read did."""
    expressions = _parsed(tuple(str(definitions.get(str(n), n)) for n in names))
    if rules is not None:
        check_saved_features(expressions, rules, recorded, SavedRulesError)
    if recorded:
        read = {name for e in expressions for name in e.names}
        check_types(recorded, {k: v for k, v in types.items() if k in read}, expressions,
                    what, f"at {owner}'s training")


@functools.lru_cache(maxsize=64)
def _parsed(texts: tuple[str, ...]) -> tuple[Expression, ...]:
    """The expressions of ``texts``, parsed once (a model scores block after block)."""
    return tuple(Expression(text) for text in texts)


class BranchTypeRecord:
    """The types of the branches of one read, tree by tree: :meth:`add` refuses a tree whose
    branch types would give an expression other values than an earlier tree's did."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self._seen: dict[str, str] = {}  # branch -> where its recorded type was first seen

    def add(self, types: Mapping[str, str], expressions: Iterable[Expression], where: str
            ) -> None:
        """Take a tree's branch types (name -> type text), the expressions read from it."""
        expressions = list(expressions)
        for name, text in types.items():
            if name in self.types:
                check_types({name: self.types[name]}, {name: text}, expressions, where,
                            f"in {self._seen[name]}")
            else:
                self.types[name] = text
                self._seen[name] = where

    def of(self, expressions: Iterable[Expression]) -> dict[str, str]:
        """The recorded types of the branches ``expressions`` read (in name order)."""
        names = sorted({name for e in expressions for name in e.names})
        return {name: self.types[name] for name in names if name in self.types}
