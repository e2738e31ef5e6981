"""``ek_agents.manifest``: a documented path (README: the stored documents' models), kept as a thin re-export of ``ek_agents.records.manifest``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .records.manifest import *  # noqa: F403 -- the names of the home's __all__
from .records.manifest import __all__ as __all__
