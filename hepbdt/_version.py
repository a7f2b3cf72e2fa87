"""The package version, in one place."""

__version__ = "0.1.0"

# The rules by which expressions compute (hepbdt.io.expressions), recorded in model files as
# "expression_rules" (files without it: 1 where they say "constants": "bare", else 0):
#   1: 2026-12-04, a bare e, pi, inf or nan is the constant, a back-quoted name the branch;
#   2: 2026-12-05, sum and prod of a list of unsigned integers narrower than 64 bits are
#      int64 (they were uint64: ~sum(flags) of UChar_t flags was 2**64 - 1 - n).
# Raise it with any change to what an expression gives, and teach hepbdt.scoring which
# features of files saved under the older rules the change can move.
EXPRESSION_RULES = 2
