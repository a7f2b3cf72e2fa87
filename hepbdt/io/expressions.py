"""Expressions over branches: features, cuts, weights and targets.

An expression is parsed once with :mod:`ast` and evaluated on the arrays of one chunk.
Only a small language is allowed, never Python ``eval``: branch names (dotted names such
as ``Muon.pt`` and back-quoted names such as ```jet pt/F``` too), numbers, arithmetic,
comparisons, ``&&``, ``||``, ``!`` (or ``and``, ``or``, ``not``), ``&``, ``|``, ``~``,
``a if c else b``, per-event subscripts, and the functions in :data:`FUNCTIONS`.

Conditions combine as in ``TTree::Draw`` cuts: ``&&`` and ``||`` bind looser than
comparisons (``&&`` tighter than ``||``) and ``!`` is a logical not with C precedence
(``!x`` binds to ``x`` alone), so ``nJet >= 2 && nLep == 0`` means what it says. The
bitwise ``&``, ``|``, ``^`` and ``~`` keep Python's precedence, tighter than comparisons,
where C's is looser; an expression whose meaning depends on which, such as
``nJet >= 2 & nLep == 0`` (Python: ``nJet >= (2 & nLep) == 0``), is refused with the form
that was most likely meant.

Comparisons chain as in Python: ``1 < x < 3`` means ``(1 < x) && (x < 3)``. A chain with
``==`` or ``!=`` in it, such as ``x > 0 == isMC`` (Python: ``(x > 0) && (0 == isMC)``, C
and ROOT: ``(x > 0) == isMC``) or ``a == b == c`` (C: ``(a == b) == c``), is refused with
both readings.

Per-event semantics, as in ``TTree::Draw``: ``Jet_pt[:, 0]`` (or ``Jet_pt[0]``) is each
event's first element, NaN when the event has none; ``Jet_pt[:, 1:3]`` a per-event slice;
``Jet_pt[Jet_eta < 2.4]`` a per-element mask; ``num(Jet_pt)``, ``max(Jet_pt)``,
``sum(...)``, ``mean(...)`` reduce each event's list (``max`` of an empty list is NaN,
``sum`` is 0); ``max(a, b)`` with two arguments is the element-wise maximum. A missing
value is NaN where it is made (an integer element or maximum becomes a float when some
event has none; of 64-bit integers that double does not hold, beyond 2**53, it is refused,
since the chunk's other events would be rounded where another chunk's are not: write
``(vl * 1.0)[:, 0]`` to compute in double in every chunk). A missing value fails whatever
asks of it: every comparison with NaN is false, ``!=`` included (``Jet_btag[:, 0] != 0``
keeps no event without jets, as in ROOT;
``nJet == 0 || Jet_pt[:, 0] > 50`` keeps them), ``isnan`` is true, and NaN counts as false
for ``&&``, ``||``, ``where``, ``a if c else b`` and each element of ``any``, ``all`` and
``count_nonzero``, as it does for the cut itself (so
adding ``&& MET > 50`` to a condition never adds events); ``!`` of it is therefore true
(see the differences from ROOT below). A mask must
be a condition (``x[(flags & 2) != 0]``, not ``x[flags & 2]``) with, event by event, as
many elements as the list it selects from: ``Jet_pt[Jet_eta < 2.4]``, not
``Jet_pt[Lep_pt > 20]``. Fixed-size array branches (``float arr[3]``) are lists of the same
length in every event and take the same subscripts, masks and reductions (an index beyond
the length, ``arr[:, 3]``, is refused, as ROOT refuses it); with a value per
event they combine event by event, as jagged lists do (``sum(arr * nJet)`` is ROOT's
``Sum$(arr * nJet)``), and ``where`` chooses element by element (``where(nJet > 2, Jet_pt, 0)``
is ROOT's ``nJet > 2 ? Jet_pt : 0``, a list per event).

Differences from ROOT 6's ``TTreeFormula`` (``TTree::Draw``) that are deliberate, checked
against it: ``1 < x < 3`` is ``(1 < x) && (x < 3)`` (ROOT reads it from the right,
``1 < (x < 3)``); an element out of range is NaN (ROOT skips the event, so
``!(Jet_pt[0] > 50)`` passes events without jets here and not in ROOT); ``x / 0`` is inf or
NaN, ``sqrt`` of a negative number NaN and ``log`` of zero or less -inf or NaN (ROOT: 0,
``sqrt(abs(x))`` and 0), ``asin``, ``acos`` and ``atanh`` beyond [-1, 1] and ``acosh``
below 1 NaN (ROOT: 0), ``log`` of NaN NaN (ROOT: 0), ``atan2(0, -0.0)`` pi (ROOT: 0),
``max`` and ``min`` of an empty list NaN (ROOT: 0), and so are constants (``1/0`` inf,
``(-8)**0.5`` NaN, ``10**400`` inf: computed in double, as the branches are, never as
Python's numbers; ``**``, ``pow`` and ``fmod`` take their operands in double, as C's do,
but a power of two integer constants with a non-negative exponent whose value is below
2**53, exact in double, stays an integer, so ``run * 10**6 + event`` is int64
arithmetic); ``max(a, b)``,
``min(a, b)`` and ``sign`` of NaN are NaN, and so are ``max`` and ``min`` of a list
holding a NaN (ROOT's ``Max$`` and ``Min$`` are NaN when the first element is, and pass
over a later one: 70 for [70, NaN]), ``atan2`` of NaN (ROOT: -pi/2 or pi/2 when the
second argument is 0) and ``exp`` beyond 709.78 inf (ROOT stops at ``exp(700)``,
1.01e304, from 700 on); ``~`` (which ROOT's formulas do not have) is
the int64 complement, ``~u`` of a uint8 1 is -2 (of a floating-point number refused, and
so are ``<<`` and ``>>``, which TTreeFormula reads as in C: the error names ``x * 2**k``);
``&`` and ``|`` of negative integers keep their sign (ROOT gives an unsigned 64-bit value:
``-7 & -7`` is 1.8e19 there), but beside a uint64 word a signed integer is taken as uint64
in two's complement, as C and ROOT take it (``ul & -1`` is ``ul``); ROOT's TFormula groups
``a + b - c`` as ``a + (b - c)`` and ``a * b / c`` and ``a * b * c`` from the right, C and
hepbdt from the left, which changes only the rounding (and an overflow: ``x * 1e300 /
1e300`` is inf here, x in ROOT); int64 arithmetic, bitwise operators and comparisons are
exact beyond 2**53 (ROOT's go through double: bit 2 of a ULong64_t 2**63 + 4 is lost there).
``round`` rounds halves away from zero and ``sign(0)`` is 1, as in ROOT.
Refused because ROOT reads them otherwise: ``^`` (ROOT's power, even between conditions:
write ``**``, or ``!=`` for an exclusive or),
``a ** b ** c`` (ROOT: ``(a ** b) ** c``), ``a % b * c`` and ``a % b / c`` (ROOT's ``%``
binds looser than ``*`` and ``/``: ``a % (b * c)``), ``a % b % c`` (ROOT: ``a % (b % c)``,
``7 % 5 % 3`` is 1 there and 2 in Python), ``%`` of a number with a fraction
(ROOT truncates both sides to integers) and ``%`` of a floating-point number beyond int64
or infinite (ROOT's truncation to Long64_t has no value there: ``1e19 % 7`` is -1).
ROOT's ``c ? a : b``, ``Sum$``, ``TMath::Abs`` and the like do not parse here; the error
names the spelling that does (``where(c, a, b)``, ``sum``, ``abs``).

Numbers are computed as in ROOT's formulas, which work in double precision, without
wrapping around: before arithmetic and comparisons, float32 values become float64 (so
``eta <= 2.4`` of a float32 ``eta`` compares with the double 2.4, as ROOT does, and a
feature made by arithmetic is rounded to float32 once, at the end); before arithmetic
(``+ - * // %``, unary ``-``, and the functions), booleans and integers up to 32 bits,
signed or unsigned, become int64 (so ``nJet - 2`` of
an unsigned ``nJet`` is -1, ``b1 + b2`` of booleans is 2, ``run * 1000000 + event`` is
exact, and ``flags & 4`` is still a bit test); ``/``, ``**``, ``pow`` and arithmetic with a
floating-point operand work in float64. An int64 branch is used as it is. Integer
arithmetic that would go beyond int64 (and wrap around) is refused with an
:class:`ExpressionError` that says how to compute in double (``x * 1e13``), and so is
integer arithmetic on a uint64 value beyond 2**63 (a uint64 branch of event numbers below
it is exact in int64): computing such a chunk in double instead would give its other
events other values than another chunk gives them. Comparisons are exact for every integer
type, and ``sum``/``mean`` of float32 elements are taken in double.

Flat branches are evaluated as NumPy arrays and jagged ones as Awkward arrays; a finished
expression is turned into one number per event by :func:`to_column`. This module knows
nothing about files; :mod:`hepbdt.io.samples` adds the file and tree to error messages.

Bounds: an expression has at most :data:`MAX_EXPRESSION_CHARS` (100,000) characters and
at most :data:`MAX_NESTING` (200) levels of nesting, counted on the parsed expression:
each parenthesis or bracket, call, subscript and operator (``- - x`` is three levels,
``a + b + c`` three, since Python nests ``(a + b) + c``). Beyond them an expression is
refused with an :class:`ExpressionError` before it is evaluated, and the length is checked
before Python's parser sees the text (which fails on deep nesting with RecursionError,
MemoryError or "too many nested parentheses").
"""

from __future__ import annotations

import ast
import bisect
import copy
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

import awkward as ak
import numpy as np

from hepbdt.io.errors import ExpressionError, close_names

__all__ = ["Expression", "FUNCTIONS", "CONSTANTS", "to_column", "quote_expression",
           "MAX_EXPRESSION_CHARS", "MAX_NESTING"]

#: The longest expression text accepted, in characters.
MAX_EXPRESSION_CHARS = 100_000
#: The deepest nesting accepted (parentheses, brackets, calls, operators: see the module doc).
MAX_NESTING = 200
# Texts longer than this are shortened in error messages.
_SHOWN_CHARS = 200

#: The constants' names. Bare, each is the constant where the tree has no branch of its name
#: and refused where it has one (the branch back-quoted, ```e```, or the number).
CONSTANTS: dict[str, float] = {"pi": np.pi, "e": np.e, "inf": np.inf, "nan": np.nan}


def _round_half_away(value: Any) -> Any:
    """C's and ROOT's round: halves away from zero (round(2.5) is 3, NumPy's rint gives 2)."""
    value = _as_float(value)
    whole = np.trunc(value)
    return whole + np.sign(value) * (np.abs(value - whole) >= 0.5)


def _sign(value: Any) -> Any:
    """ROOT's sign: -1 below zero, else 1 (sign(0) is 1); NaN stays NaN."""
    return np.sign(value) + (value == 0)


_ELEMENTWISE_1: dict[str, Callable[[Any], Any]] = {
    "log": np.log,
    "log10": np.log10,
    "log2": np.log2,
    "log1p": np.log1p,
    "exp": np.exp,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "abs": np.abs,
    "fabs": np.abs,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "asin": np.arcsin,
    "arccos": np.arccos,
    "acos": np.arccos,
    "arctan": np.arctan,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "arcsinh": np.arcsinh,
    "asinh": np.arcsinh,
    "arccosh": np.arccosh,
    "acosh": np.arccosh,
    "arctanh": np.arctanh,
    "atanh": np.arctanh,
    "floor": np.floor,
    "ceil": np.ceil,
    "round": _round_half_away,
    "sign": _sign,
    "isnan": np.isnan,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
}

_ELEMENTWISE_2: dict[str, Callable[[Any, Any], Any]] = {
    "arctan2": np.arctan2,
    "atan2": np.arctan2,
    "hypot": np.hypot,
    "pow": np.power,
    "power": np.power,
    "minimum": np.minimum,
    "maximum": np.maximum,
    "fmod": np.fmod,
}

# Reductions over each event's list (the innermost axis).
_REDUCTIONS: dict[str, Callable[..., Any]] = {
    "num": lambda x: ak.num(x, axis=-1),
    "count": lambda x: ak.num(x, axis=-1),
    "sum": lambda x: ak.sum(x, axis=-1),
    "prod": lambda x: ak.prod(x, axis=-1),
    "mean": lambda x: ak.mean(x, axis=-1),
    "std": lambda x: ak.std(x, axis=-1),
    "max": lambda x: ak.max(x, axis=-1),
    "min": lambda x: ak.min(x, axis=-1),
    "argmax": lambda x: ak.argmax(x, axis=-1),
    "argmin": lambda x: ak.argmin(x, axis=-1),
    "any": lambda x: ak.any(x, axis=-1),
    "all": lambda x: ak.all(x, axis=-1),
    "count_nonzero": lambda x: ak.count_nonzero(x, axis=-1),
}

_SPECIAL = {"where": 3, "clip": 3}

#: Every function name an expression may call.
FUNCTIONS: frozenset[str] = frozenset(
    [*_ELEMENTWISE_1, *_ELEMENTWISE_2, *_REDUCTIONS, *_SPECIAL]
)

_SUMMING = frozenset({"sum", "prod", "mean", "std"})  # reductions that add float32 elements
# Reductions that ask each element's truth: any(x) is x[0] || x[1] || ..., so a NaN element
# (a missing value) counts as false there, as it does in || (any([NaN]) was true, any(x != 0) false)
_TRUTH_REDUCTIONS = frozenset({"any", "all", "count_nonzero"})
# Reductions whose value is the same integer or boolean whether the list holds booleans,
# signed or unsigned integers of the same numbers (what ~ of them gives does not depend on
# the branch's kind; a float list is refused by ~ in any case)
_KIND_FREE = frozenset({"sum", "prod", "num", "count", "count_nonzero", "any", "all"})

# ROOT's spellings that do not parse here, and how an expression writes them
_ROOT_LIST_FUNCTIONS = {"Sum": "sum", "Length": "num", "Max": "max", "Min": "min"}
_ROOT_MATH = {"Abs": "abs", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Log10": "log10",
              "Log2": "log2", "Power": "pow", "Sin": "sin", "Cos": "cos", "Tan": "tan",
              "ASin": "asin", "ACos": "acos", "ATan": "atan", "ATan2": "atan2",
              "SinH": "sinh", "CosH": "cosh", "TanH": "tanh", "ASinH": "asinh",
              "ACosH": "acosh", "ATanH": "atanh", "Floor": "floor", "Ceil": "ceil",
              "Hypot": "hypot", "Min": "minimum", "Max": "maximum", "IsNaN": "isnan",
              "Finite": "isfinite", "Pi": "pi", "E": "e"}
_ROOT_SPELLING = re.compile(r"\b(?:(TMath|std)::(\w+)|(\w+)\$)|\?")


_BINARY_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
}

_COMPARISONS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    # NaN != x is true under IEEE; here every comparison with NaN (a missing element) is
    # false, so that Jet_btag[:, 0] != 0 keeps no event without jets (ROOT skips them)
    ast.NotEq: lambda a, b: (a != b) & (a == a) & (b == b),
}

_BITWISE = (ast.BitAnd, ast.BitOr, ast.BitXor)
_BITWISE_TEXT = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_EQUALITIES = (ast.Eq, ast.NotEq)
_COMPARISON_OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
                         ast.NotEq: "!="}
_INT64_MAX = np.iinfo(np.int64).max
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
_COMPARISON_TEXT = re.compile(r"[<>]|==|!=")


class _Source:
    """The Python source an expression is parsed as, mapped back to the text as written.

    Back-quoted names become placeholders, ``&&`` and ``||`` become ``and`` and ``or``, and
    ``!`` (not ``!=``) becomes ``~`` whose position is remembered as a logical not: a unary
    operator with C precedence. ``spans[i]`` is where source character ``i`` was written.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.quoted: dict[str, str] = {}
        chars: list[str] = []
        self.spans: list[tuple[int, int]] = []
        nots: list[int] = []
        i = 0
        while i < len(text):
            end = text.find("`", i + 1) if text[i] == "`" else -1
            if end >= 0:
                word = f"__hepbdt_branch_{len(self.quoted)}__"
                self.quoted[word] = text[i + 1 : end]
                end += 1
            elif text.startswith(("&&", "||"), i):
                word, end = (" and " if text[i] == "&" else " or "), i + 2
            elif text[i] == "!" and not text.startswith("!=", i):
                nots.append(len(chars))
                word, end = "~", i + 1
            else:
                word, end = text[i], i + 1
            chars.extend(word)
            self.spans.extend([(i, end)] * len(word))
            i = end
        self.source = "".join(chars)
        self._line_starts = [0] + [k + 1 for k, ch in enumerate(chars) if ch == "\n"]
        self.logical_nots = frozenset(self._position(k) for k in nots)

    def _position(self, index: int) -> tuple[int, int]:
        """(line, UTF-8 column) of a source character, as :mod:`ast` numbers them."""
        line = bisect.bisect_right(self._line_starts, index) - 1
        start = self._line_starts[line]
        return line + 1, len(self.source[start:index].encode())

    def _index(self, line: int, column: int) -> int:
        """The source character at (line, UTF-8 column)."""
        start = self._line_starts[line - 1]
        return start + len(self.source[start:].encode()[:column].decode(errors="ignore"))

    def written(self, node: ast.expr) -> tuple[int, int]:
        """Where ``node`` was written: start and end in :attr:`text`."""
        start = self._index(node.lineno, node.col_offset)
        end = self._index(node.end_lineno or node.lineno, node.end_col_offset or 0)
        return self.spans[start][0], self.spans[max(end - 1, start)][1]

    def written_at(self, index: int) -> int:
        """Where source character ``index`` (clamped to the source) was written."""
        if not self.spans:
            return 0
        if index >= len(self.spans):
            return len(self.text)
        return self.spans[max(index, 0)][0]

    def parenthesised(self, node: ast.expr) -> bool:
        """True when ``node`` is written inside its own parentheses, as in ``(a & 4)``."""
        start, end = self.written(node)
        before, after = self.text[:start].rstrip(), self.text[end:].lstrip()
        return before.endswith("(") and after.startswith(")")

    def is_logical_not(self, node: ast.AST) -> bool:
        """True for a ``!``: a unary ``~`` at a position where ``!`` was written."""
        return (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.Invert)
            and (node.lineno, node.col_offset) in self.logical_nots
        )


class Expression:
    """A parsed expression over branches.

    Parameters
    ----------
    text
        The expression, e.g. ``"log(lep_pt)"``, ``"Jet_pt[:, 0]"``,
        ``"(nJet >= 2) & (MET_pt > 30)"``.
    role
        What the expression is for (``"feature"``, ``"cut"``, ``"weight"``...); used in
        error messages only.

    Attributes
    ----------
    names
        Every free name in the expression: branch names, or constants (``pi``, ``e``,
        ``inf``, ``nan``) when no branch has that name.
    bare_constants
        The constants' names written bare; a tree with a branch of such a name is refused
        by the readers (back-quoted, ```e```, is always the branch).
    complemented
        The names a bitwise ``~`` (not ``!``) reads: its value depends on their type
        (:mod:`hepbdt.io.branch_types`).
    summed
        The names a ``sum`` or ``prod`` reads (model files saved before 2026-12-05 summed
        narrow unsigned integers otherwise: ``hepbdt.scoring``).
    computes
        False for a branch read as it is (``x``, ``Jet_pt[:, 0]``), True for anything that
        computes (arithmetic, comparisons, functions): hepbdt before 2026-11-27 computed
        those otherwise (``hepbdt.scoring`` refuses them in older model files).
    """

    def __init__(self, text: str, role: str = "expression") -> None:
        if not isinstance(text, str):
            raise ExpressionError(f"{role} must be a string expression, not {text!r}")
        self.text = text
        self.role = role
        # how messages name it: "cut expression 'x'", or "expression 'x'" without a role
        self.named = "expression" if role == "expression" else f"{role} expression"
        if len(text) > MAX_EXPRESSION_CHARS:
            raise self._fail(f"{len(text):,} characters, more than the "
                             f"{MAX_EXPRESSION_CHARS:,} an expression may have")
        self._source = _Source(text.strip())
        self._quoted = self._source.quoted
        if not self._source.source:
            raise ExpressionError(f"{self.named} is empty")
        depth = _bracket_depth(self._source.source)
        if depth > MAX_NESTING:
            raise self._too_deep(f"{depth} parentheses or brackets deep")
        try:
            tree = ast.parse(self._source.source, mode="eval")
        except SyntaxError as err:
            if "too many nested" in err.msg or "too complex" in err.msg:
                raise self._too_deep("too deeply") from None
            raise self._syntax_error(err) from None
        except (RecursionError, MemoryError):  # Python's parser on deep nesting
            raise self._too_deep("too deeply") from None
        depth = _tree_depth(tree.body)
        if depth > MAX_NESTING:
            raise self._too_deep(f"{depth} levels deep")
        self._node = tree.body
        names: set[str] = set()
        self._check(self._node, names)
        self.names = frozenset(names)
        # the constants' names written bare (not back-quoted): a tree's branch of that name
        # makes them ambiguous (hepbdt.io.samples.TreeReader refuses them)
        self.bare_constants = frozenset(
            node.id for node in ast.walk(self._node)
            if isinstance(node, ast.Name) and node.id in CONSTANTS)
        # the branches a bitwise ~ reads (not !): what ~ gives depends on their type
        self.complemented = frozenset(
            name for node in ast.walk(self._node)
            if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert)
            and not self._source.is_logical_not(node)
            for name in self._typed_names(node.operand) if name in names)
        # the branches a sum or prod reads: its type followed their kind before 2026-12-05
        self.summed = frozenset(
            inner.id for node in ast.walk(self._node)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("sum", "prod")
            for inner in ast.walk(node) if isinstance(inner, ast.Name) and inner.id in names)
        self.computes = not _is_branch_read(self._node)

    def canonical(self) -> str:
        """What the expression computes, as text: equal for expressions written with other
        spaces, redundant parentheses or spellings (``&&`` or ``and``, ``!`` or ``not``),
        different for different branches (back-quoted ones included) and operators."""
        source = self._source
        name_of = self._name_of

        class _Canonical(ast.NodeTransformer):
            def visit_Name(self, node: ast.Name) -> ast.AST:
                return ast.Name(id=f"`{name_of(node)}`")  # `x`, x and `x` alike

            def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
                name = name_of(node)  # a dotted branch name, a.b or `a.b`
                return self.generic_visit(node) if name is None else ast.Name(id=f"`{name}`")

            def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
                logical = source.is_logical_not(node)
                self.generic_visit(node)
                return ast.UnaryOp(op=ast.Not() if logical else node.op, operand=node.operand)

        return ast.dump(_Canonical().visit(copy.deepcopy(self._node)))

    def _syntax_error(self, err: SyntaxError) -> ExpressionError:
        """The error for an expression that does not parse, pointing where it was written."""
        written = self._source.text
        pointer = ""
        if err.offset is not None and err.lineno is not None:
            lines = self._source.source.split("\n")
            index = sum(len(line) + 1 for line in lines[: err.lineno - 1]) + err.offset - 1
            if err.offset < 1:  # the end of the input
                index = len(self._source.source)
            at = self._source.written_at(index)
            line_start = written.rfind("\n", 0, at) + 1
            line_end = len(written) if "\n" not in written[at:] else written.index("\n", at)
            line_start, line_end = max(line_start, at - 70), min(line_end, at + 70)
            pointer = f"\n    {written[line_start:line_end]}\n    {' ' * (at - line_start)}^"
        return ExpressionError(
            f"{self.named} {quote_expression(self.text)} does not parse: "
            f"{err.msg}{pointer}\n" + (_root_spelling(self._source.source) or (
                "Valid expressions use branch names, numbers, + - * / ** %, comparisons, "
                "&& || ! (or and, or, not) to combine conditions, & | ~ (with parentheses "
                "around comparisons), subscripts such as x[:, 0], and the functions "
                + ", ".join(sorted(FUNCTIONS))))
        )

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"

    # -- validation ---------------------------------------------------------------

    def _fail(self, what: str) -> ExpressionError:
        return ExpressionError(f"{self.named} {quote_expression(self.text)}: {what}")

    def _too_deep(self, how: str) -> ExpressionError:
        """The error for an expression nested beyond :data:`MAX_NESTING`."""
        return self._fail(
            f"nested {how} (parentheses, brackets, calls and operators: a + b + c and - - x "
            f"nest a level per operator); at most {MAX_NESTING} levels are allowed, simplify it"
        )

    def _name_of(self, node: ast.AST) -> str | None:
        """The branch name a Name or dotted Attribute chain stands for, else None."""
        if isinstance(node, ast.Name):
            return self._quoted.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._name_of(node.value)
            return None if base is None else f"{base}.{node.attr}"
        return None

    def _typed_names(self, node: ast.AST) -> set[str]:
        """The names whose type the type of ``node``'s value follows: none below a
        comparison or a logical operator, whose values are booleans whatever they read,
        below a count or integer sum of a list (``_KIND_FREE``), or in a where's condition."""
        if isinstance(node, ast.Compare | ast.BoolOp) or (isinstance(node, ast.UnaryOp) and (
                isinstance(node.op, ast.Not) or self._source.is_logical_not(node))):
            return set()
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in _KIND_FREE:
            return set()
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "where":
            # the condition chooses; the type is the chosen values' (~where(f, 1, 0) is the
            # same whether f is a Bool_t or an Int_t)
            return {found for arg in node.args[1:] for found in self._typed_names(arg)}
        name = self._name_of(node)
        if name is not None:
            return {name}
        return {found for child in ast.iter_child_nodes(node) for found in self._typed_names(child)}

    def _check(self, node: ast.AST, names: set[str]) -> None:
        if isinstance(node, ast.Name | ast.Attribute):
            name = self._name_of(node)
            if name is None:
                raise self._fail("attributes are allowed only on branch names (a.b.c)")
            names.add(name)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, bool | int | float):
                raise self._fail(f"only numbers are allowed as constants, not {node.value!r}")
        elif isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.LShift | ast.RShift):
                raise self._fail("the shifts << and >> are not supported: write x * 2**k "
                                 "for x << k, and x // 2**k for x >> k")
            if type(node.op) not in _BINARY_OPERATORS:
                raise self._fail(f"operator {type(node.op).__name__} is not allowed")
            if isinstance(node.op, _BITWISE):
                self._check_bitwise(node)
            self._check_arithmetic_order(node)
            self._check(node.left, names)
            self._check(node.right, names)
        elif isinstance(node, ast.UnaryOp):
            if not isinstance(node.op, ast.USub | ast.UAdd | ast.Invert | ast.Not):
                raise self._fail(f"operator {type(node.op).__name__} is not allowed")
            self._check_not_of_power(node)
            self._check(node.operand, names)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                self._check(value, names)
        elif isinstance(node, ast.Compare):
            for op in node.ops:
                if type(op) not in _COMPARISONS:
                    raise self._fail(
                        f"comparison {type(op).__name__} is not allowed "
                        "(use <, <=, >, >=, ==, !=)"
                    )
            self._check_compared(node)
            self._check(node.left, names)
            for comparator in node.comparators:
                self._check(comparator, names)
        elif isinstance(node, ast.IfExp):
            for child in (node.test, node.body, node.orelse):
                self._check(child, names)
        elif isinstance(node, ast.Call):
            self._check_call(node, names)
        elif isinstance(node, ast.Subscript):
            self._check(node.value, names)
            self._check_index(node.slice, names)
        else:
            raise self._fail(
                f"{type(node).__name__} is not allowed; expressions may use branch names, "
                "numbers, arithmetic, comparisons, && || !, & | ~, subscripts and the functions "
                + ", ".join(sorted(FUNCTIONS))
            )

    # -- operators whose meaning depends on Python or C precedence ------------------

    def _check_compared(self, node: ast.Compare) -> None:
        """Refuse an unparenthesised & | ^ beside a comparison, ! starting one, or a chain
        with == or != in it."""
        for operand in (node.left, *node.comparators):
            if (
                isinstance(operand, ast.BinOp)
                and isinstance(operand.op, _BITWISE)
                and not self._source.parenthesised(operand)
            ):
                raise self._bitwise_trap(node)
        # ``!nJet >= 2`` is (!nJet) >= 2 in C but not (nJet >= 2) as ``not`` would read it;
        # ``~`` means the same in Python and C, and ``a != !b`` has one reading.
        left = node.left
        if (
            isinstance(left, ast.UnaryOp)
            and self._source.is_logical_not(left)
            and not self._source.parenthesised(left)
        ):
            raise self._not_trap(node, left)
        if len(node.ops) > 1 and any(isinstance(op, _EQUALITIES) for op in node.ops):
            raise self._chain_trap(node)

    def _bitwise_trap(self, node: ast.Compare) -> ExpressionError:
        """``nJet >= 2 & nLep == 0``: show what it means and what was likely meant."""
        text = self._source.text
        start, end = self._source.written(node)
        parts = _split_bitwise(text[start:end])
        pieces, ops = parts[0::2], parts[1::2]

        def whole(middle: str) -> str:
            return text[:start] + middle + text[end:]

        c_reading = whole(_join(pieces, ops, wrap=True))
        bare = [self._source.written(operand) for operand in (node.left, *node.comparators)
                if isinstance(operand, ast.BinOp) and isinstance(operand.op, _BITWISE)
                and not self._source.parenthesised(operand)]
        python_reading = text
        for low, high in sorted(bare, reverse=True):
            python_reading = (f"{python_reading[:low]}({python_reading[low:high]})"
                              f"{python_reading[high:]}")
        symbols = sorted(set(ops), key="&^|".index)
        verb = "binds" if len(symbols) == 1 else "bind"
        what = (f"{' and '.join(symbols)} {verb} tighter than comparisons here (as in "
                f"Python), so this means {python_reading}")
        if not all(_COMPARISON_TEXT.search(_unquoted(piece)) for piece in pieces):
            return self._fail(f"{what}, but {c_reading} in C and ROOT; add parentheses to "
                              "say which (conditions combine with &&, || and !)")
        what += (f", not {c_reading} as in C and ROOT. To combine conditions, add "
                 f"parentheses, {c_reading}")
        if "^" not in ops:
            logical = [{"&": "&&", "|": "||"}[op] for op in ops]
            what += f", or write {whole(_join(pieces, logical, wrap=False))}"
        return self._fail(what)

    def _not_trap(self, node: ast.Compare, operand: ast.UnaryOp) -> ExpressionError:
        """``!nJet >= 2``: ``!`` applies to ``nJet`` alone, not to the comparison."""
        text = self._source.text
        start, end = self._source.written(node)
        low, high = self._source.written(operand)
        symbol = text[low]
        alone = f"{text[:low]}({text[low:high]}){text[high:]}"
        inner = (text[start:low] + text[low + 1 : end]).strip()
        negated = f"{text[:start]}!({inner}){text[end:]}"
        return self._fail(
            f"{symbol} applies to {text[low + 1 : high].strip()} alone (as in C and ROOT), "
            f"not to the comparison; add parentheses to say which: {alone}, or {negated} to "
            "negate the comparison"
        )

    def _chain_trap(self, node: ast.Compare) -> ExpressionError:
        """``x > 0 == isMC``: Python's chain (x > 0) && (0 == isMC), C's (x > 0) == isMC."""
        text = self._source.text
        start, end = self._source.written(node)
        operands = []
        for operand in (node.left, *node.comparators):
            written = text[slice(*self._source.written(operand))]
            operands.append(f"({written})" if self._source.parenthesised(operand) else written)
        ops = [_COMPARISON_OPERATORS[type(op)] for op in node.ops]
        pairs = zip(operands, ops, operands[1:], strict=False)
        python_reading = " && ".join(f"({left} {op} {right})" for left, op, right in pairs)
        # C: < <= > >= bind tighter than == and !=; both from left to right.
        terms, term_ops, equalities = [[operands[0]]], [[]], []
        for op, right in zip(ops, operands[1:], strict=True):
            if op in ("==", "!="):
                equalities.append(op)
                terms.append([right])
                term_ops.append([])
            else:
                terms[-1].append(right)
                term_ops[-1].append(op)
        grouped = [_left_to_right(items, between)
                   for items, between in zip(terms, term_ops, strict=True)]
        c_reading = _left_to_right(grouped, equalities)[1:-1]
        if (start, end) != (0, len(text)) and not self._source.parenthesised(node):
            python_reading, c_reading = f"({python_reading})", f"({c_reading})"
        return self._fail(
            f"{text[start:end]} chains == or != with another comparison: Python reads it "
            f"as {text[:start]}{python_reading}{text[end:]}, C and ROOT as "
            f"{text[:start]}{c_reading}{text[end:]}; add parentheses to say which"
        )

    def _check_bitwise(self, node: ast.BinOp) -> None:
        """Refuse ``(a > 1) & 2`` (a condition combined bit by bit with a number) and every
        ``^`` (a power in ROOT, an exclusive or in Python)."""
        sides = (node.left, node.right)
        if isinstance(node.op, ast.BitXor):
            written = self._source.text[slice(*self._source.written(node))]
            raise self._fail(
                f"^ in {written} is a bitwise exclusive or in Python, but a power in ROOT's "
                "formulas (pt^2 is pt**2, and (a > 0)^(b > 0) is pow, 1 when both are false); "
                "write ** for a power, or != between two conditions for an exclusive or"
            )
        conditions = [side for side in sides if self._is_condition(side)]
        numbers = [side for side in sides if _is_number(side)]
        if not conditions or not numbers:
            return
        text = self._source.text
        condition = text[slice(*self._source.written(conditions[0]))]
        number = text[slice(*self._source.written(numbers[0]))]
        symbol = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}[type(node.op)]
        logical = "||" if symbol == "|" else "&&"
        raise self._fail(
            f"{symbol} combines the condition {condition} with the number {number} bit by "
            f"bit; make both sides conditions, e.g. {condition} {logical} {number} != 0"
        )

    def _check_not_of_power(self, node: ast.UnaryOp) -> None:
        """Refuse ``!x ** y``: Python's ``**`` binds tighter than the ``~`` that ``!`` is
        read as, giving !(x ** y), where ROOT reads (!x) ** y (``!i**0``: 0 against 1)."""
        operand = node.operand
        if (self._source.is_logical_not(node) and isinstance(operand, ast.BinOp)
                and isinstance(operand.op, ast.Pow) and not self._source.parenthesised(operand)):
            text = self._source.text
            start, end = self._source.written(node)
            base = text[slice(*self._source.written(operand.left))]
            exponent = text[slice(*self._source.written(operand.right))]
            raise self._fail(f"{text[start:end]} is !({base} ** {exponent}) in Python but "
                             f"(!{base}) ** {exponent} in ROOT; add parentheses to say which")

    def _check_arithmetic_order(self, node: ast.BinOp) -> None:
        """Refuse ``a ** b ** c`` (Python: a ** (b ** c), ROOT: (a ** b) ** c), ``a % b * c``
        or ``a % b / c`` (Python: (a % b) * c, ROOT: a % (b * c), its % binding looser than
        * and /) and ``a % b % c`` (Python: (a % b) % c, ROOT: a % (b % c))."""
        text = self._source.text
        if isinstance(node.op, ast.Pow):
            inner = node.right
            while isinstance(inner, ast.UnaryOp) and not self._source.parenthesised(inner):
                inner = inner.operand
            if (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow)
                    and not self._source.parenthesised(inner)):
                start, end = self._source.written(node)
                base = text[start:self._source.written(node.left)[1]]
                right = text[slice(*self._source.written(node.right))]
                root_base = text[start:self._source.written(inner.left)[1]]
                exponent = text[slice(*self._source.written(inner.right))]
                raise self._fail(
                    f"{text[start:end]} is {base} ** ({right}) in Python but ({root_base}) ** "
                    f"{exponent} in ROOT; add parentheses to say which")
        elif isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv | ast.Mod):
            left = node.left
            if (isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod)
                    and not self._source.parenthesised(left)):
                a, b = (text[slice(*self._source.written(side))] for side in (left.left, left.right))
                c = text[slice(*self._source.written(node.right))]
                op = text[self._source.written(left)[1]:self._source.written(node.right)[0]].strip()
                # ROOT splits a formula at its first %: a % b % c is a % (b % c) there
                why = ("whose % groups from the right" if isinstance(node.op, ast.Mod) else
                       "whose % binds looser than * and /")
                raise self._fail(
                    f"{text[slice(*self._source.written(node))]} is ({a} % {b}) {op} {c} in "
                    f"Python but {a} % ({b} {op} {c}) in ROOT, {why}; add parentheses to say "
                    "which")

    def _is_condition(self, node: ast.AST) -> bool:
        """True for what is surely a boolean: comparisons, and/or/not, ! and ~ of those."""
        if isinstance(node, ast.Compare | ast.BoolOp):
            return True
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not) or self._source.is_logical_not(node):
                return True
            return isinstance(node.op, ast.Invert) and self._is_condition(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, _BITWISE):
            return self._is_condition(node.left) and self._is_condition(node.right)
        return isinstance(node, ast.Constant) and isinstance(node.value, bool)

    def _check_call(self, node: ast.Call, names: set[str]) -> None:
        if not isinstance(node.func, ast.Name):
            raise self._fail("only the built-in functions can be called")
        func = node.func.id
        if func not in FUNCTIONS:
            suggestions = close_names(func, FUNCTIONS)
            hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
            raise self._fail(
                f"unknown function {func!r}{hint}; valid functions are "
                + ", ".join(sorted(FUNCTIONS))
            )
        if node.keywords:
            raise self._fail(f"{func}() takes no keyword arguments")
        if any(isinstance(arg, ast.Starred) for arg in node.args):
            raise self._fail(f"{func}() takes no *arguments")
        n_args = len(node.args)
        if func in _SPECIAL:
            expected = {_SPECIAL[func]}
        elif func in ("max", "min"):
            expected = {1, 2}
        elif func in _REDUCTIONS or func in _ELEMENTWISE_1:
            expected = {1}
        else:
            expected = {2}
        if n_args not in expected:
            want = " or ".join(str(n) for n in sorted(expected))
            raise self._fail(f"{func}() takes {want} argument(s), got {n_args}")
        for arg in node.args:
            self._check(arg, names)

    def _check_index(self, node: ast.AST, names: set[str]) -> None:
        if _constant_int(node) is not None:
            return
        if isinstance(node, ast.Slice):
            self._check_slice(node)
            return
        if isinstance(node, ast.Tuple):
            if (
                len(node.elts) == 2
                and isinstance(node.elts[0], ast.Slice)
                and node.elts[0].lower is None
                and node.elts[0].upper is None
                and node.elts[0].step is None
            ):
                inner = node.elts[1]
                if _constant_int(inner) is not None:
                    return
                if isinstance(inner, ast.Slice):
                    self._check_slice(inner)
                    return
            raise self._fail(
                "subscripts select within each event: x[:, 0], x[:, -1], x[:, 1:3], "
                "x[0] or a per-element mask x[x > 30]"
            )
        # A mask expression, checked to be jagged at evaluation.
        self._check(node, names)

    def _check_slice(self, node: ast.Slice) -> None:
        for part in (node.lower, node.upper, node.step):
            if part is not None and _constant_int(part) is None:
                raise self._fail("slice bounds must be integer constants, e.g. x[:, 1:3]")
        if node.step is not None and _constant_int(node.step) == 0:
            # awkward loops forever on x[:, ::0] and gives 0 for x[:, 1:3:0]
            raise self._fail("a slice's step must be a non-zero integer, e.g. x[:, ::2]")

    # -- evaluation ---------------------------------------------------------------

    def evaluate(self, arrays: Mapping[str, Any]) -> Any:
        """Evaluate on one chunk.

        Parameters
        ----------
        arrays
            Branch name -> array (NumPy for flat branches, Awkward for jagged ones), all
            of the same length (events in the chunk).

        Returns
        -------
        A NumPy or Awkward array (or a scalar for a constant expression). Use
        :func:`to_column` to get one float per event.
        """
        with np.errstate(all="ignore"):
            try:
                return self._eval(self._node, arrays)
            except ExpressionError:
                raise
            except Exception as err:  # awkward / numpy broadcasting and type errors
                hint = ""
                if "cannot broadcast nested list" in str(err):
                    raise self._fail(
                        "two lists of different lengths in one event meet element by element "
                        "(Jet_pt * Lep_pt): combine lists of one collection, or reduce each "
                        "to one value per event first (sum(Jet_pt) * max(Lep_pt))") from err
                if "&" in self.text or "|" in self.text:
                    hint = (
                        "\nHint: & and | bind tighter than comparisons; combine "
                        "conditions with && and ||, as in a > 1 && b < 2."
                    )
                raise self._fail(f"cannot be evaluated: {type(err).__name__}: {err}{hint}") from err

    def _eval(self, node: ast.AST, arrays: Mapping[str, Any]) -> Any:
        value = self._eval_node(node, arrays)
        if self.role == "event" and node is not self._node:  # the result: by the reader
            self._check_exact_floats(node, value)
        return value

    def _check_exact_floats(self, node: ast.AST, value: Any) -> None:
        """Refuse, in an event expression, a floating-point value that an event number
        read or computed on the way may have been rounded to (from 2**53 on in double,
        2**24 in float32, which may be 2**53 + 1 and 2**24 + 1 rounded): the result alone
        does not say (``event - 16777216`` of a float32 2**24 + 1 gave 0, ``event + 1 - 1``
        of a double 2**53 gave 2**53 - 1)."""
        dtype = _leaf_dtype(value)
        if dtype is None or dtype.kind != "f":
            return
        exact = 2 ** (np.finfo(dtype).nmant + 1)
        power = "2**24" if dtype.itemsize == 4 else "2**53"
        kind = "float32" if dtype.itemsize == 4 else "double"
        # NaN and infinities are no event numbers at all: the result's check names them
        if not _any(value, lambda v: (abs(v) >= exact) & (abs(v) < np.inf)):
            return
        if isinstance(node, ast.Name | ast.Attribute | ast.Subscript):  # a value as stored
            how = f"holds {kind} values of {power} or beyond"
        else:
            how = f"reaches {power} or beyond in {kind}"
        where = self._source.text[slice(*self._source.written(node))]
        raise self._fail(
            f"{where} {how}, where not every integer is held, so an event number there may "
            "be another integer rounded (and its fold another one's); read event numbers "
            "from an integer branch and compute in integers (run * 1000000 + event), or "
            "select those events away with a cut")

    def _eval_node(self, node: ast.AST, arrays: Mapping[str, Any]) -> Any:
        if isinstance(node, ast.Name | ast.Attribute):
            name = self._name_of(node)
            if name in arrays:
                return _per_event(arrays[name])
            if name in CONSTANTS and isinstance(node, ast.Name) and node.id not in self._quoted:
                return CONSTANTS[name]
            raise self._fail(f"name {name!r} is not a branch")
        if isinstance(node, ast.Constant):
            # Python scalars on purpose: NumPy treats them as weak, so they take the type of
            # the (widened) array they meet.
            if type(node.value) is int and not _in_int64(node.value):
                raise self._fail(f"the integer constant {node.value} is beyond the 64-bit "
                                 "integer range (2**63 - 1); write it as a floating-point "
                                 "number (with a decimal point or an exponent, 1.8e19) to "
                                 "compute in double, as ROOT does")
            return node.value
        if isinstance(node, ast.BinOp):
            left = self._eval(node.left, arrays)
            right = self._eval(node.right, arrays)
            if isinstance(node.op, ast.Pow) and _is_python_int(left) and _is_python_int(right):
                # Exact integer powers of constants (10 ** 10 ** 10) would never finish.
                result = float(np.float64(left) ** np.float64(right))
                return int(result) if abs(result) < 2**53 and right >= 0 else result
            if isinstance(node.op, ast.Div | ast.Pow) and _is_python_number(left) and (
                    _is_python_number(right)):
                # Constants in double, as arrays are: 1/0 is inf, 0/0 and (-8)**0.5 NaN, not
                # a Python error, and never a complex number whose real part passes for a value.
                return float(_BINARY_OPERATORS[type(node.op)](np.float64(left), np.float64(right)))
            if isinstance(node.op, _BITWISE):
                self._check_integers(node, left, right)
                if not (_is_bool(left) and _is_bool(right)):  # conditions stay conditions
                    # integers as int64, as in arithmetic: a uint8 | 256 overflowed
                    left, right = _bitwise_operands(left, right)
            elif isinstance(node.op, ast.Pow):
                left, right = _as_real(left), _as_real(right)
            else:
                left, right = self._arithmetic_operands(node, left, right)
                if isinstance(node.op, ast.FloorDiv | ast.Mod):
                    self._check_division(node, left, right)
                return self._unwrapped(node, _BINARY_OPERATORS[type(node.op)], left, right)
            return _BINARY_OPERATORS[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, arrays)
            if isinstance(node.op, ast.USub):
                return self._unwrapped(node, operator.neg, self._widen(operand))
            if isinstance(node.op, ast.UAdd):
                return operand
            if (
                isinstance(node.op, ast.Not)
                or self._source.is_logical_not(node)
                or _is_bool(operand)
            ):
                return np.logical_not(_truth(operand))
            dtype = _leaf_dtype(operand)
            if (dtype is not None and dtype.kind == "f") or isinstance(operand, float):
                text = self._source.text[slice(*self._source.written(node))]
                where = "" if text == self._source.text.strip() else f"{text!r}: "
                raise self._fail(f"{where}~ (the bitwise complement) takes an integer or a "
                                 "boolean, not a floating-point number; for a logical not "
                                 "write !x (or x == 0)")
            return ~_bits_as_int64(operand)  # int64: ~ of a uint8 1 is -2, not 254
        if isinstance(node, ast.BoolOp):
            combine = np.logical_and if isinstance(node.op, ast.And) else np.logical_or
            result = _truth(self._eval(node.values[0], arrays))
            for value in node.values[1:]:
                result = combine(result, _truth(self._eval(value, arrays)))
            return result
        if isinstance(node, ast.Compare):
            left = _as_double(self._eval(node.left, arrays))
            result = None
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = _as_double(self._eval(comparator, arrays))
                step = _COMPARISONS[type(op)](left, right)
                result = step if result is None else np.logical_and(result, step)
                left = right
            return result
        if isinstance(node, ast.IfExp):  # where(test, body, orelse), widened as where is
            return self._choose(self._eval(node.test, arrays), self._eval(node.body, arrays),
                                self._eval(node.orelse, arrays))
        if isinstance(node, ast.Call):
            return self._eval_call(node, arrays)
        if isinstance(node, ast.Subscript):
            return self._eval_subscript(node, arrays)
        raise self._fail(f"{type(node).__name__} is not allowed")  # pragma: no cover

    def _eval_call(self, node: ast.Call, arrays: Mapping[str, Any]) -> Any:
        func = node.func.id  # type: ignore[attr-defined]
        args = [self._eval(arg, arrays) for arg in node.args]
        if func in ("max", "min") and len(args) == 2:
            return (np.maximum if func == "max" else np.minimum)(*map(self._widen, args))
        if func in _REDUCTIONS:
            (value,) = args
            if _is_flat(value):
                raise self._fail(
                    f"{func}() reduces each event's list, but its argument has one value "
                    f"per event; use {func}() on a jagged branch such as Jet_pt"
                )
            if isinstance(value, np.ndarray):
                value = ak.from_numpy(value, regulararray=True)
            if func in _SUMMING:  # float32 elements summed in double, as ROOT's Sum$
                value = _as_double(value)
            elif func in _TRUTH_REDUCTIONS:  # a NaN element is false, as in && and ||
                value = _truth(value)
            result = self._missing_as_nan(node, self._unwrapped(node, _REDUCTIONS[func], value))
            dtype = _leaf_dtype(value)
            if func in ("sum", "prod") and dtype is not None and dtype.kind == "u" and (
                    dtype.itemsize < 8):
                # Awkward sums narrow unsigned integers in uint64, where signed ones and
                # booleans give int64: ~sum(flags) of UChar_t flags was 2**64 - 1 - n
                result = self._widen(result)
            if func in ("max", "min"):
                result = _nan_where_any_nan(value, result)
            return result
        if func in _ELEMENTWISE_1:
            return self._unwrapped(node, _ELEMENTWISE_1[func], self._widen(args[0]))
        if func in ("pow", "power", "fmod"):  # C's pow and fmod, in double
            return _ELEMENTWISE_2[func](*map(_as_real, args))
        if func in _ELEMENTWISE_2:
            return _ELEMENTWISE_2[func](*map(self._widen, args))
        if func == "where":
            return self._choose(*args)
        # clip
        value, low, high = map(self._widen, args)
        return np.minimum(np.maximum(value, low), high)

    def _choose(self, condition: Any, if_true: Any, if_false: Any) -> Any:
        """``where`` and ``a if c else b``: the values widened unless both are conditions
        (a uint8 5 if c else -1 wrapped to 255), the condition's NaN false."""
        if not (_is_bool(if_true) and _is_bool(if_false)):
            if_true, if_false = self._widen(if_true), self._widen(if_false)
        return _where(_truth(condition), if_true, if_false)

    def _arithmetic_operands(self, node: ast.BinOp, left: Any, right: Any) -> tuple[Any, Any]:
        """Both operands of + - * / // %: in double when the operator is / or either side
        is floating point (numpy would convert the integers to double anyway; so may a
        uint64 beyond int64), else as int64 (:meth:`_widen`)."""
        if isinstance(node.op, ast.Div) or _is_floating(left) or _is_floating(right):
            return _as_double(_as_float(left)), _as_double(_as_float(right))
        return self._widen(left), self._widen(right)

    def _widen(self, value: Any) -> Any:
        """``value`` ready for integer arithmetic: booleans and integers as int64; a uint64
        beyond int64 is refused (see the module doc)."""
        if type(value) is bool:  # a constant condition (1 > 0): NumPy took it as float16
            return int(value)
        dtype = _leaf_dtype(value)
        if dtype is not None and dtype.kind == "f":
            return _as_double(value)
        if dtype is None or dtype.kind not in "biu" or dtype == np.int64:
            return value
        if dtype == np.uint64:
            if isinstance(value, ak.Array):
                largest = ak.max(value, axis=None)
            else:
                largest = value.max() if value.size else None
            # int(): numpy < 2 compares uint64 with int64 in double, where 2**63 + 1 <= 2**63 - 1
            if largest is not None and int(largest) > _INT64_MAX:
                # Refused in every chunk that holds one, whatever the role: taking such a
                # chunk in double would give its other events other values than another
                # chunk gives them (u % 1000 would depend on the step size).
                raise self._fail(
                    f"an unsigned 64-bit value, {int(largest)}, is beyond 2**63 - 1, so "
                    "integer arithmetic on it cannot be exact in int64; compare it (exact), "
                    "or compute in double with a floating-point constant (u * 1.0, u / 2)"
                    + ("; an event number must be an integer below 2**63"
                       if self.role == "event" else "")
                )
        return _astype(value, np.int64)

    def _unwrapped(self, node: ast.AST, operation: Callable[..., Any], *operands: Any) -> Any:
        """``operation(*operands)``; refused where integer arithmetic would wrap around
        beyond int64 (``event * 10**13``, ``sum`` of huge values). Not done in double for
        the chunk instead: that would give the chunk's other events other values than
        another chunk gives them."""
        result = operation(*operands)
        dtype = _leaf_dtype(result)
        if type(result) is int and not _in_int64(result):  # constants: Python's exact ints
            raise self._beyond_int64(node)
        if dtype is None or dtype.kind not in "iu":
            return result
        # Without wrapping, the float64 result is within a few units of the last place of
        # the exact one; a wrapped one is off by a multiple of 2**64.
        approximate = operation(*map(_as_float, operands))
        if not _any(_as_float(result) - approximate, lambda gap: abs(gap) > 2.0**62):
            return result
        raise self._beyond_int64(node)

    def _beyond_int64(self, node: ast.AST) -> ExpressionError:
        """The refusal of integer arithmetic at ``node`` that goes beyond int64."""
        text = self._source.text
        where = text[slice(*self._source.written(node))]
        return self._fail(
            f"{where} goes beyond the 64-bit integer range (2**63 - 1) for some events, where "
            "the integer result would wrap around; "
            + ("an event number must be an exact integer below 2**63 (combine run and event "
               "with a smaller factor)" if self.role == "event" else
               "compute in double with a floating-point constant, as ROOT does (x * 1e13, "
               "sum(x * 1.0))")
        )

    def _check_division(self, node: ast.BinOp, left: Any, right: Any) -> None:
        """Refuse // or % by zero (NumPy gives 0 for integers; ROOT's % by an integer zero
        crashes), % of a number with a fraction (ROOT truncates it), of one beyond int64 or
        infinite (ROOT's truncation to Long64_t has no value there) and % of a negative
        number (Python's remainder takes the divisor's sign, C's and ROOT's the dividend's:
        -7 % 3 is 2 in one and -1 in the other)."""
        text = self._source.text
        op = "//" if isinstance(node.op, ast.FloorDiv) else "%"
        if _any(right, lambda v: v == 0):
            raise self._fail(f"{text[slice(*self._source.written(node.right))]} is 0 for some "
                             f"events, and {op} by zero has no value; cut those events first, "
                             "or divide with / (which gives inf or NaN here, 0 in ROOT's "
                             "TTreeFormula)")
        if op == "%":
            for side in (left, right):
                if _is_floating(side) and _any(side, lambda v: np.isfinite(v) & (v != np.trunc(v))):
                    raise self._fail(
                        "% of a number with a fraction differs between Python (7.5 % 2 is 1.5) "
                        "and ROOT (which truncates both sides to integers first: 1); write "
                        "fmod(x, y) for the remainder with its fraction, or fmod(floor(x), "
                        "floor(y)) for ROOT's value of positive numbers")
                if _is_floating(side) and _any(side, lambda v: ~(np.abs(v) < 2.0**63) & (v == v)):
                    # ROOT truncates to Long64_t, which does not hold it: 1e19 % 7 is -1 there
                    part = text[slice(*self._source.written(node))]
                    raise self._fail(
                        ("" if part == text.strip() else f"{part}: ") + "% of a number beyond the "
                        "64-bit integer range (inf, or 2**63 and more in size) has no value in "
                        "ROOT, which truncates both sides to 64-bit integers first (1e19 % 7 is "
                        "-1 there); write fmod(x, y) for the remainder in double, or cut those "
                        "events first")
        if op == "%" and (_any(left, lambda v: v < 0) or _any(right, lambda v: v < 0)):
            raise self._fail("% of a negative number differs between Python (the divisor's "
                             "sign: -7 % 3 is 2) and C or ROOT (the dividend's: -1); write "
                             "fmod(x, y) for C's remainder, or make both sides positive "
                             "(e.g. abs(x) % y)")

    def _check_integers(self, node: ast.BinOp, left: Any, right: Any) -> None:
        """Refuse & | ^ on floating-point values (a missing element is NaN, so a float)."""
        for side, value in ((node.left, left), (node.right, right)):
            dtype = _leaf_dtype(value)
            if isinstance(value, float) or (dtype is not None and dtype.kind == "f"):
                text = self._source.text
                raise self._fail(
                    f"{_BITWISE_TEXT[type(node.op)]} works on integers and conditions, but "
                    f"{text[slice(*self._source.written(side))]} holds floating-point numbers "
                    "(a missing element, such as x[:, 0] of an empty list, or the max of an "
                    "empty list, is NaN, so a float); compare it first, e.g. (x[:, 0] > 0)"
                )

    def _missing_as_nan(self, node: ast.AST, value: Any) -> Any:
        """``value``'s missing values (None) as NaN (:func:`_nan_for_missing`); refused where
        that NaN would turn 64-bit integers into doubles that do not hold them: the chunk's
        other events would then be computed from other numbers than another chunk's
        (``vl[:, 0] == 2**53`` true for 2**53 + 1, ``% 1000`` 992 for 993)."""
        if isinstance(value, ak.Array) and isinstance(value.type.content, ak.types.OptionType) \
                and ak.any(ak.is_none(value)):
            inexact = _inexact_in_double(value)
            if inexact is not None:
                where = self._source.text[slice(*self._source.written(node))]
                raise self._fail(
                    f"{where} is missing for some events (an empty list), and the NaN that "
                    f"marks them makes its 64-bit integers doubles, which do not hold "
                    f"{inexact} (it would be {float(inexact):.17g}), so the other events' "
                    "numbers would depend on which events share a chunk; take the list in "
                    "double first to compute in double in every chunk ((x * 1.0)[:, 0], "
                    "max(x * 1.0) for a list x), or compare within the list, exact: "
                    "any(x[:, 0:1] == n)")
        return _nan_for_missing(value)

    def _check_fixed_index(self, node: ast.Subscript, arrays: Mapping[str, Any],
                           position: int) -> None:
        """Refuse an index beyond a fixed-size array branch (``c[:, 3]`` of a ``c[3]``): NaN
        for every event, where ROOT refuses it."""
        raw = arrays.get(self._name_of(node.value) or "")
        if isinstance(raw, np.ndarray) and raw.ndim == 2 and not (
                -raw.shape[1] <= position < raw.shape[1]):
            raise self._fail(
                f"index {position} is beyond the fixed-size array "
                f"{ast.unparse(node.value)!r} of {raw.shape[1]} elements in every event: valid "
                f"indices are 0 to {raw.shape[1] - 1} (or -1 to -{raw.shape[1]} from the end)")

    def _eval_subscript(self, node: ast.Subscript, arrays: Mapping[str, Any]) -> Any:
        value = self._eval(node.value, arrays)
        index = node.slice
        if isinstance(index, ast.Tuple):  # [:, i] or [:, a:b]
            index = index.elts[1]
        position = _constant_int(index)
        if position is not None or isinstance(index, ast.Slice):
            if _is_flat(value):
                raise self._fail(
                    "a subscript selects within each event's list, but "
                    f"{ast.unparse(node.value)!r} has one value per event"
                )
            if position is not None:
                self._check_fixed_index(node, arrays, position)
                return self._missing_as_nan(node, _element(value, position))
            bounds = [None if p is None else _constant_int(p) for p in
                      (index.lower, index.upper, index.step)]
            return value[:, slice(*bounds)]
        mask = self._eval(index, arrays)
        text = self._source.text
        mask_text = text[slice(*self._source.written(index))]
        if _is_flat(mask) and not _is_bool(mask):
            # ROOT's Jet_pt[nJet - 1]: an index that varies from event to event
            raise self._fail(
                f"the subscript {mask_text!r} is a number per event, but an index must be a "
                "constant: x[:, 0] for the first element, x[:, -1] for the last (ROOT's "
                "x[n - 1]), x[:, 1:3] for a slice, or a condition per element, x[x > 30]")
        if _is_flat(mask):
            raise self._fail(
                f"mask {mask_text!r} has one value per event; a subscript selects "
                "elements within events (x[x > 30]); select events with cut= (Python) or cut = "
                "\"...\" (a sample's table in the configuration) instead"
            )
        value_text = text[slice(*self._source.written(node.value))]
        if _is_flat(value):
            raise self._fail(f"a mask selects within each event's list, but {value_text!r} has "
                             "one value per event")
        if not _is_bool(mask):
            raise self._fail(
                f"the subscript {mask_text!r} is not a condition; a subscript is a constant "
                "index x[:, 0], a slice x[:, 1:3] or a condition per element, as in x[x > 30] "
                "or x[(flags & 2) != 0]"
            )
        value, mask = _as_lists(value), _as_lists(mask)
        differ = ak.to_numpy(ak.num(value, axis=1) != ak.num(mask, axis=1))
        if differ.any():
            first = int(np.flatnonzero(differ)[0])
            raise self._fail(
                f"the mask {mask_text!r} and {value_text!r} have different numbers of elements "
                f"in {int(differ.sum())} of {len(differ)} events (e.g. {len(mask[first])} "
                f"against {len(value[first])}); a mask selects elements of a list of the same "
                "length, as Jet_pt[Jet_eta < 2.4] (one value per jet on both sides); a condition "
                "on another collection must first be reduced to one value per event, e.g. "
                "where(any(Lep_pt > 20), sum(Jet_pt), 0)"
            )
        return value[mask]


def _root_spelling(source: str) -> str | None:
    """How this language writes the first of ROOT's spellings (``Sum$``, ``TMath::Abs``,
    ``c ? a : b``) in ``source``, or None where it has none of them."""
    found = _ROOT_SPELLING.search(source)
    if found is None:
        return None
    namespace, name, formula = found.groups()
    if found.group(0) == "?":
        return "ROOT's c ? a : b is written where(c, a, b) here (or a if c else b)"
    if formula is not None:
        ours = _ROOT_LIST_FUNCTIONS.get(formula)
        if ours is None:
            return (f"ROOT's {formula}$ has no equivalent here; the functions are "
                    + ", ".join(sorted(FUNCTIONS)))
        empty = {"max": " (NaN for an event without elements, where ROOT's Max$ gives 0)",
                 "min": " (NaN for an event without elements, where ROOT's Min$ gives 0)"}
        return f"ROOT's {formula}$(...) is written {ours}(...) here{empty.get(ours, '')}"
    ours = _ROOT_MATH.get(name) if namespace == "TMath" else (
        name if name in FUNCTIONS or name in CONSTANTS else None)
    if ours is None:
        return (f"{namespace}::{name} has no equivalent here; the functions are "
                + ", ".join(sorted(FUNCTIONS)))
    if ours in CONSTANTS:
        return f"{namespace}::{name}() is written {ours} here"
    return f"{namespace}::{name}(...) is written {ours}(...) here"


def quote_expression(text: str) -> str:
    """``repr(text)`` for a message, shortened (with the length) beyond 200 characters."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS // 2]!r}... ({len(text):,} characters)"


def _bracket_depth(source: str) -> int:
    """The deepest nesting of parentheses and brackets in ``source`` (one pass, no parser)."""
    depth = deepest = 0
    for ch in source:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth -= 1
    return deepest


def _tree_depth(node: ast.AST) -> int:
    """Levels of expression nodes below and including ``node`` (without recursion); stops
    counting past :data:`MAX_NESTING`."""
    deepest = 0
    stack = [(node, 1)]
    while stack and deepest <= MAX_NESTING:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        for child in ast.iter_child_nodes(node):
            stack.append((child, depth + 1 if isinstance(child, ast.expr) else depth))
    return deepest


def _is_branch_read(node: ast.AST) -> bool:
    """Whether ``node`` reads a branch as it is: a name (not a constant's), or a name
    subscripted by integer constants and slices of them (``Jet_pt[:, 0]``, ``x[-1]``)."""
    if isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return _is_branch_read(node.value) and all(map(_is_constant_index, parts))
    while isinstance(node, ast.Attribute):  # a dotted branch name (Jet.pt)
        node = node.value
        if isinstance(node, ast.Name):
            return True
    return isinstance(node, ast.Name) and node.id not in CONSTANTS


def _is_constant_index(node: ast.AST | None) -> bool:
    """An integer constant (``0``, ``-1``), a slice of them or an empty bound (None)."""
    if node is None:
        return True
    if isinstance(node, ast.Slice):
        return all(map(_is_constant_index, (node.lower, node.upper, node.step)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _is_number(node: ast.AST) -> bool:
    """True for what is surely a number, not a boolean: constants and arithmetic."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _ARITHMETIC)
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd)


def _unquoted(text: str) -> str:
    """``text`` without its back-quoted names (which may hold any character)."""
    return re.sub(r"`[^`]*`", "``", text)


def _split_bitwise(text: str) -> list[str]:
    """Split at the top-level single & | ^: [piece, op, piece, ...] (&& and || stay)."""
    parts: list[str] = []
    depth, start, quoted = 0, 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif quoted:
            continue
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch in "&|^" and text[i - 1 : i] != ch and text[i + 1 : i + 2] != ch:
            parts += [text[start:i], ch]
            start = i + 1
    return [*parts, text[start:]]


def _enclosed(text: str) -> bool:
    """True when ``text`` is one parenthesised group, as in ``(a > 1)``."""
    if not text.startswith("("):
        return False
    depth = 0
    for i, ch in enumerate(_unquoted(text)):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return i == len(_unquoted(text)) - 1
    return False


def _join(pieces: list[str], ops: list[str], wrap: bool) -> str:
    """Pieces joined by ops; with ``wrap``, every comparison in its own parentheses."""
    out = []
    for piece in pieces:
        piece = piece.strip()
        if wrap and _COMPARISON_TEXT.search(_unquoted(piece)) and not _enclosed(piece):
            piece = f"({piece})"
        out.append(piece)
    return out[0] + "".join(f" {op} {piece}" for op, piece in zip(ops, out[1:], strict=True))


def _left_to_right(operands: list[str], ops: list[str]) -> str:
    """``operands`` joined by ``ops``, each step in parentheses: ((a < b) < c)."""
    text = operands[0]
    for op, right in zip(ops, operands[1:], strict=True):
        text = f"({text} {op} {right})"
    return text


def _constant_int(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _is_python_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_python_number(value: Any) -> bool:
    """A Python bool, int or float (a constant's value), not a NumPy scalar or an array."""
    return type(value) in (bool, int, float)


def _is_flat(value: Any) -> bool:
    """True for scalars and for arrays with one value per event."""
    if isinstance(value, np.ndarray):
        return value.ndim <= 1
    if isinstance(value, ak.Array):
        return value.ndim <= 1
    return True


def _is_bool(value: Any) -> bool:
    if isinstance(value, np.ndarray | np.generic):
        return value.dtype == np.bool_
    if isinstance(value, ak.Array):
        return str(value.type).endswith("bool")
    return isinstance(value, bool)


def _leaf_dtype(value: Any) -> np.dtype | None:
    """The NumPy dtype of an array's numbers (through Awkward's lists); None for Python
    numbers and anything else."""
    if isinstance(value, np.ndarray | np.generic):
        return value.dtype
    if not isinstance(value, ak.Array):
        return None
    typ = value.type.content
    while isinstance(typ, ak.types.ListType | ak.types.RegularType | ak.types.OptionType):
        typ = typ.content
    if isinstance(typ, ak.types.NumpyType):
        return np.dtype(typ.primitive)
    return None


def _astype(value: Any, dtype: Any) -> Any:
    if isinstance(value, ak.Array):
        return ak.values_astype(value, dtype)
    return np.asarray(value).astype(dtype)


def _any(value: Any, test: Callable[[Any], Any]) -> bool:
    """Whether ``test`` holds for some number of ``value`` (a Python number, a NumPy or an
    Awkward array)."""
    if isinstance(value, ak.Array):
        return bool(ak.any(test(value), axis=None))
    return bool(np.any(test(np.asarray(value))))


def _as_double(value: Any) -> Any:
    """Single-precision (float32, float16) arrays as float64, as ROOT computes formulas: a
    cut ``eta <= 2.4`` then compares float32(eta) with the double 2.4, not with float32(2.4)."""
    dtype = _leaf_dtype(value)
    return _astype(value, np.float64) if dtype is not None and dtype.kind == "f" and (
        dtype.itemsize < 8) else value


def _is_floating(value: Any) -> bool:
    """True for a Python float and floating-point arrays (through Awkward's lists)."""
    dtype = _leaf_dtype(value)
    return isinstance(value, float) or (dtype is not None and dtype.kind == "f")


def _as_float(value: Any) -> Any:
    """Boolean and integer arrays as float64, for powers (as ROOT's pow)."""
    dtype = _leaf_dtype(value)
    return _astype(value, np.float64) if dtype is not None and dtype.kind in "biu" else value


def _in_int64(value: int) -> bool:
    return -(2**63) <= value < 2**63


def _bits_as_int64(value: Any) -> Any:
    """Integers (and booleans) narrower than 64 bits as int64 for & | ~ (a uint8 | 256
    overflowed its type); 64-bit ones and Python numbers stay as they are, so a uint64
    word keeps its top bit and its sign (ROOT's bitwise results are unsigned too)."""
    dtype = _leaf_dtype(value)
    if dtype is None or dtype.kind not in "biu" or dtype.itemsize == 8:
        return value
    return _astype(value, np.int64)


def _bitwise_operands(left: Any, right: Any) -> tuple[Any, Any]:
    """Both integer operands of & and |: as int64 (:func:`_bits_as_int64`), and beside a
    uint64 word, as uint64 in two's complement, as C and ROOT convert them (``ul & -1`` is
    ``ul``): NumPy has no common type for uint64 and int64 (``ul & i`` was a TypeError)."""
    left, right = _bits_as_int64(left), _bits_as_int64(right)
    if np.uint64 not in (_leaf_dtype(left), _leaf_dtype(right)):
        return left, right
    return _as_uint64_word(left), _as_uint64_word(right)


def _as_uint64_word(value: Any) -> Any:
    """A signed integer (array or constant) as uint64 in two's complement; others as they are."""
    if _is_python_int(value):
        return value & (2**64 - 1)
    dtype = _leaf_dtype(value)
    return _astype(value, np.uint64) if dtype is not None and dtype.kind == "i" else value


def _as_real(value: Any) -> Any:
    """``value`` in double, as C's pow and fmod take it: Python numbers as floats (numpy
    would compute with Python integers in int64 and wrap: pow(2, 70) was 0), boolean,
    integer and single-precision arrays as float64."""
    return float(value) if _is_python_number(value) else _as_double(_as_float(value))


def _nan_where_any_nan(lists: Any, reduced: Any) -> Any:
    """``reduced`` (max or min of each list) NaN where its list holds a NaN, as ROOT's
    Max$ and Min$ (Awkward's reducers pass over NaN: max([NaN]) was -inf, max([NaN, 70])
    70)."""
    dtype = _leaf_dtype(lists)
    if dtype is None or dtype.kind != "f":
        return reduced
    has_nan = ak.fill_none(ak.any(np.isnan(lists), axis=-1), False)
    if not ak.any(has_nan):
        return reduced
    return ak.where(has_nan, dtype.type(np.nan), reduced)


def _nan_for_missing(value: Any) -> Any:
    """Awkward's missing values (None) as NaN; without any, the value keeps its type."""
    if not isinstance(value, ak.Array) or not isinstance(value.type.content,
                                                         ak.types.OptionType):
        return value
    if not ak.any(ak.is_none(value)):
        return ak.drop_none(value)
    return ak.fill_none(value, np.float32(np.nan) if _leaf_dtype(value) == np.float32
                        else np.nan)


def _per_event(value: Any) -> Any:
    """A branch's array as the evaluation takes it: a fixed-size array branch (an (n, k)
    NumPy array) as Awkward lists, which meet a value per event event by event, as ROOT's
    ``Sum$(arr * x)`` does (NumPy's broadcasting pairs an (n,) array with the k columns:
    ``sum(arr * nJet)`` multiplied ``arr[i, j]`` by ``nJet[j]`` in a chunk of n == k
    events, and failed in the others)."""
    if isinstance(value, np.ndarray) and value.ndim > 1:
        return ak.from_regular(ak.from_numpy(value, regulararray=True), axis=None)
    return value


def _as_lists(value: Any) -> Any:
    """A per-event array as Awkward variable-length lists (fixed-size arrays too)."""
    if isinstance(value, np.ndarray):
        value = ak.from_numpy(value, regulararray=True)
    if isinstance(value.type.content, ak.types.RegularType):
        value = ak.from_regular(value, axis=1)
    return value


def _truth(value: Any) -> Any:
    """A condition's truth, event by event: non-zero and not NaN (a missing element fails,
    as it fails the cut: ``Jet_tight[:, 0] && MET > 50`` kept events without jets when NaN
    counted as true, and ``Jet_tight[:, 0]`` alone did not)."""
    if _is_bool(value):
        return value
    return (value != 0) & (value == value)


def _where(condition: Any, if_true: Any, if_false: Any) -> Any:
    if any(isinstance(v, ak.Array) for v in (condition, if_true, if_false)):
        # element by element where a side is a list per event, as ROOT's Sum$(n > 1 ? x : 0):
        # ak.where took a condition per event as choosing the whole list or the number
        condition, if_true, if_false = ak.broadcast_arrays(condition, if_true, if_false)
        return ak.where(condition, if_true, if_false)
    return np.where(condition, if_true, if_false)


def _element(value: Any, position: int) -> Any:
    """Element ``position`` of each event's list; NaN (Awkward's None for lists) where out
    of range."""
    if isinstance(value, np.ndarray):
        if -value.shape[1] <= position < value.shape[1]:
            return value[:, position]
        return np.full(len(value), np.nan)
    stop = position + 1 if position != -1 else None
    return ak.firsts(value[:, position:stop], axis=1)


def _inexact_in_double(value: Any) -> int | None:
    """A 64-bit integer of ``value`` (Awkward, missing values left out) that double does
    not hold exactly (beyond 2**53, as 2**53 + 1), or None where double holds them all."""
    dtype = _leaf_dtype(value)
    if dtype is None or dtype.kind not in "iu" or dtype.itemsize < 8:
        return None
    numbers = ak.to_numpy(ak.flatten(ak.drop_none(value), axis=None))
    beyond = numbers[(numbers > 2**53) | (numbers < -(2**53))] if dtype.kind == "i" else (
        numbers[numbers > 2**53])
    if not beyond.size:
        return None
    with np.errstate(all="ignore"):  # 2**63 - 1 rounds to 2**63, beyond int64: inexact too
        doubles = beyond.astype(np.float64)
        inexact = (doubles >= 2.0**(64 if dtype.kind == "u" else 63)) | (
            doubles.astype(dtype) != beyond)
    return int(beyond[inexact][0]) if inexact.any() else None


def to_column(value: Any, n_events: int, dtype: Any, expression: Expression) -> np.ndarray:
    """Turn an evaluated expression into a 1-D NumPy array of ``n_events`` values.

    Missing values (an empty list's first element or maximum) become NaN for float
    dtypes. A result that is still a list per event is an :class:`ExpressionError`.
    """
    if isinstance(value, ak.Array):
        if value.ndim > 1:
            hint = (
                "any(...) (some element passes) or all(...) (every element passes)"
                if expression.role == "cut"
                else "x[:, 0] (first element, NaN if none), num(x), max(x), min(x), sum(x) "
                "or mean(x)"
            )
            raise ExpressionError(
                f"{expression.named} {quote_expression(expression.text)} gives a list "
                f"per event, "
                f"not one number; reduce it, e.g. {hint}"
            )
        if value.ndim != 1:  # a union: a list for some events, a number for others
            raise ExpressionError(
                f"{expression.named} {quote_expression(expression.text)} gives a list "
                "for some events and a number for others (a jagged branch in where(...) or "
                "'a if c else b' with a number), but each event needs one value; reduce the "
                "jagged branch first, e.g. sum(Jet_pt) or Jet_pt[:, 0] for a branch Jet_pt"
            )
        if np.issubdtype(dtype, np.floating):
            with np.errstate(over="ignore"):  # beyond float32: inf, which the readers refuse
                value = ak.fill_none(ak.values_astype(value, dtype), np.nan)
        elif ak.any(ak.is_none(value)):
            raise ExpressionError(
                f"{expression.named} {quote_expression(expression.text)} is missing for "
                "some "
                "events (an empty list); it must have a value for every event"
            )
        value = ak.to_numpy(value, allow_missing=False)
    elif isinstance(value, np.ndarray) and value.ndim == 0:  # a constant where(...)
        value = value.item()
    if not isinstance(value, np.ndarray):
        if isinstance(value, complex | np.complexfloating):
            raise ExpressionError(f"{expression.named} {quote_expression(expression.text)} "
                                  "gives a complex number; each event needs one real value")
        return np.full(n_events, value, dtype=dtype)
    if value.ndim != 1:
        raise ExpressionError(
            f"{expression.named} {quote_expression(expression.text)} gives "
            f"{value.shape[1:]} "
            "values per event, not one; select one, e.g. x[:, 0]"
        )
    if len(value) != n_events:  # pragma: no cover - guarded by awkward broadcasting
        raise ExpressionError(
            f"{expression.named} {quote_expression(expression.text)} gives "
            f"{len(value)} values "
            f"for {n_events} events"
        )
    if value.dtype.kind == "c":  # a cast would keep the real part, silently
        raise ExpressionError(f"{expression.named} {quote_expression(expression.text)} gives "
                              "complex numbers; each event needs one real value")
    with np.errstate(over="ignore"):  # beyond float32: inf, which the readers refuse
        return value.astype(dtype, copy=False)
