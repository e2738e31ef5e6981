"""``ek_agents.harness``: a spec module name, kept as a thin re-export of ``ek_agents.execution.harness``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .execution.harness import *  # noqa: F403 -- the names of the home's __all__
from .execution.harness import __all__ as __all__
