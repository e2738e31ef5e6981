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
import sys
from collections.abc import Callable, Mapping
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec
from typing import Any, Optional

__all__ = ["lazy_exports", "module_aliases"]


def lazy_exports(package: str, exports: Mapping[str, str],
                 namespace: dict) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for package ``package`` whose public names are
    ``exports`` (``name -> module of the package``, or a relative path such as ``"..records"``
    for a sibling package); ``namespace`` is the package's
    ``globals()``, where a name resolved once is kept (the next access is a plain lookup)."""

    def __getattr__(name: str) -> Any:
        mod = exports.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(mod if mod.startswith(".") else f".{mod}",
                                                package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


class _AliasFinder(MetaPathFinder, Loader):
    """Finds ``package.name`` for each alias and loads it as its target module itself."""

    def __init__(self, aliases: Mapping[str, str]) -> None:
        self.aliases = dict(aliases)
        self.specs: dict[str, Any] = {}

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Optional[ModuleSpec]:
        return ModuleSpec(fullname, self) if fullname in self.aliases else None

    def create_module(self, spec: ModuleSpec) -> Any:
        module = importlib.import_module(self.aliases[spec.name])
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: Any) -> None:
        # the import system set the alias's spec on the target: give it its own back
        module.__spec__ = self.specs.pop(module.__spec__.name, module.__spec__)


def module_aliases(package: str, aliases: Mapping[str, str]) -> None:
    """Make ``import package.<name>`` give the module ``aliases[name]`` (an absolute module
    path) itself -- the same module object, not a copy -- so a documented module path keeps
    working after its module moved, without a file at the old path. The target is imported
    when the alias is, not before."""
    full = {f"{package}.{name}": target for name, target in aliases.items()}
    if not any(isinstance(f, _AliasFinder) and f.aliases == full for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder(full))
