"""Old import paths of names that moved in 0.2, kept for one release with a warning.

A module whose names moved defines ``__getattr__`` that calls :func:`moved`. The new home
is imported by name with importlib only when an old path is used, so the layering of the
package (see docs/design-notes.md) does not depend on these aliases; they go in 0.3.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["moved"]


def moved(module: str, name: str, homes: dict[str, str]) -> Any:
    """The object ``name`` from its new module ``homes[name]``, with a DeprecationWarning;
    AttributeError when ``name`` is not one of ``module``'s moved names."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    warnings.warn(f"{module}.{name} has moved to {home}.{name}; the old path goes in hepbdt 0.3",
                  DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(home), name)
