"""Names a package re-exports, resolved on first use (PEP 562).

The facade ``ek_agents`` and each domain subpackage (``runs``, ``scoring``, ``stats``,
``report``) re-export their public names explicitly, from a table ``name -> module of the
package``, without importing those modules until a name is used: ``import ek_agents`` stays
fast, and importing one module of a package does not import its siblings.

>>> import types
>>> pkg = types.ModuleType("ek_agents_demo_pkg")
>>> pkg.__getattr__, pkg.__dir__ = lazy_exports("json", {"dumps": "decoder"}, vars(pkg))
>>> pkg.__getattr__("nope")
Traceback (most recent call last):
AttributeError: module 'json' has no attribute 'nope'

This module imports nothing of ek_agents: it sits in the bottom layer.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str],
                 namespace: dict) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for package ``package`` whose public names are
    ``exports`` (``name -> module of the package``); ``namespace`` is the package's
    ``globals()``, where a name resolved once is kept (the next access is a plain lookup)."""

    def __getattr__(name: str) -> Any:
        mod = exports.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{mod}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
