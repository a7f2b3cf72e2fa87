"""Names resolved on first use: a package's lazy re-exports, and old import paths.

:func:`lazy_exports` gives a package the ``__getattr__`` and ``__dir__`` that import a
public name's module only when the name is first used (``import hepbdt`` stays cheap).
:func:`moved` serves the names that moved in 0.2: a module whose names moved defines
``__getattr__`` that calls it, and the new home is imported by name with importlib only
when an old path is used, so the layering of the package (docs/design-notes.md) does not
depend on these aliases; they go in 0.3.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["moved", "lazy_exports"]


def lazy_exports(package: str, names: dict[str, str], submodules: tuple[str, ...] = ()
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``names`` maps each public name to
    the module that defines it; ``submodules`` are imported as attributes on first use."""

    def __getattr__(name: str) -> Any:
        if name in submodules:
            value = importlib.import_module(f"{package}.{name}")
        elif name in names:
            value = getattr(importlib.import_module(names[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted([*names, *submodules, *vars(sys.modules[package])])

    return __getattr__, __dir__


def moved(module: str, name: str, homes: dict[str, str], new_name: str | None = None) -> Any:
    """The object ``name`` (``new_name`` where it was renamed too) from its new module
    ``homes[name]``, with a DeprecationWarning naming the old path and the new one;
    AttributeError when ``name`` is not one of ``module``'s moved names."""
    home = homes.get(name)
    if home is None:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new_name = name if new_name is None else new_name
    warnings.warn(f"{module}.{name} has moved to {home}.{new_name}; the old path goes in "
                  "hepbdt 0.3", DeprecationWarning, stacklevel=3)
    return getattr(importlib.import_module(home), new_name)
