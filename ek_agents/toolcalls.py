"""``ek_agents.toolcalls``: a spec module name, kept as a thin re-export of ``ek_agents.scoring.toolcalls``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .scoring.toolcalls import *  # noqa: F403 -- the names of the home's __all__
from .scoring.toolcalls import __all__ as __all__
