"""What a model file's features computed under the expression rules it was saved with
(``hepbdt._version.EXPRESSION_RULES`` then; ``persistence`` reads it), against today's.

A feature that is computed (an expression, not a bare branch) may give today another
value than the one its trees were grown on: files of rules 0 (saved before 2026-12-04)
do not say which rules trained them, rules 1 summed narrow unsigned integers in uint64,
and rules newer than this hepbdt's are unknown. :func:`check_saved_features` refuses such
a feature wherever today's rules would compute it for the model: ``apply`` of a file, and
a model scoring a ``hepbdt.read`` in Python (``_util.check_X``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hepbdt._version import EXPRESSION_RULES
from hepbdt.io.expressions import CONSTANTS, Expression

__all__ = ["check_saved_features"]


def check_saved_features(features: Sequence[Expression], rules: int,
                         types: Mapping[str, str] | None, error: type[Exception]) -> None:
    """``error`` for a feature of a model saved under expression ``rules`` (its recorded
    branch ``types``, or None) that today's rules may compute otherwise."""
    features = list(features)
    if rules == 0:  # a file saved before 2026-12-04
        _check_saved_constants(features, error)
        _check_saved_expressions(features, error)
    _check_expression_rules(features, rules, types, error)


def _check_saved_constants(features: list[Expression], error: type[Exception]) -> None:
    """``error``, for a model file saved before a bare e, pi, inf or nan meant the
    constant only (expression rules 0, ``persistence._expression_rules``), when its features use one:
    there it meant a tree's branch of that name where the tree had one, so the file cannot
    say which."""
    for feature in features:
        for name in sorted(feature.bare_constants):
            raise error(
                f"the model's feature {feature.text!r} uses {name!r}, which in a model saved "
                f"before hepbdt told the branch `{name}` from the constant {name} (2026-12-04) "
                f"was the branch where a tree had one: retrain it, or in its model file write "
                f"`{name}` (back-quoted) for the branch, or {CONSTANTS[name]!r} for the "
                "constant, in feature_names and feature_definitions, and add "
                "\"constants\": \"bare\"")


def _check_saved_expressions(features: list[Expression], error: type[Exception]
                              ) -> None:
    """``error``, for a model file saved before 2026-12-04 (no "constants": "bare"),
    when its features compute: it may come from hepbdt before 2026-11-27, which computed
    expressions otherwise (unsigned integers wrapped, NaN != x was true, round(0.5) was 0,
    float32 arithmetic in float32), and the file does not say which rules trained it, so
    today's values may not be those its trees were grown on (scores off by up to 0.7)."""
    for feature in features:
        if feature.computes:
            raise error(
                f"the model's feature {feature.text!r} is computed by an expression, and the "
                "model file was saved before 2026-12-04 (it has no \"constants\": \"bare\"), "
                "so it may come from hepbdt before 2026-11-27, which computed expressions "
                "otherwise (an unsigned nJet - 2 was 4294967294 for nJet = 0, x != 0 was true "
                "for a missing x, round(0.5) was 0, float32 arithmetic was done in float32): "
                "its features would be read otherwise than it was trained on. Retrain it; or, "
                "if it was trained with hepbdt of 2026-11-27 or later, add \"constants\": "
                "\"bare\" to its model file (after back-quoting any branch named e, pi, inf "
                "or nan in feature_names and feature_definitions)")


def _check_expression_rules(features: list[Expression], rules: int,
                            types: Mapping[str, str] | None, error: type[Exception]) -> None:
    """``error`` for a computed feature that the expression rules of a model file
    (``EXPRESSION_RULES`` when it was saved) may compute otherwise than today's: any under
    newer rules than this hepbdt knows, and under rules 1 (2026-12-04) a sum or prod of a
    list of unsigned integers narrower than 64 bits (then uint64, now int64). Files under
    rules 0 are ``_check_saved_expressions``'s."""
    computed = [f.text for f in features if f.computes]
    if rules > EXPRESSION_RULES and computed:
        raise error(
            f"the model file was saved under expression rules {rules}, newer than this "
            f"hepbdt's ({EXPRESSION_RULES}): its computed feature {computed[0]!r} may be "
            "read otherwise here than it was trained on; apply it with the hepbdt that "
            "saved it, or a newer one")
    if rules != 1:
        return
    for feature in features:
        moved = [n for n in sorted(feature.summed)
                 if types is None or re.match(r"uint(8|16|32)\b", types.get(n, "uint8"))]
        if moved:
            raise error(
                f"the model's feature {feature.text!r} sums or multiplies {moved[0]!r}, "
                "and the model file was saved under expression rules 1 (2026-12-04), "
                "when sum and prod of unsigned integers narrower than 64 bits were uint64 "
                "(~sum(flags) was 2**64 - 1 - n), where they are int64 now: retrain it; "
                "or, if the branch holds no unsigned integers, write \"expression_rules\": "
                f"{EXPRESSION_RULES} in its model file")
