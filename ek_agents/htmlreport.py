"""``ek_agents.htmlreport``: a documented path (README: ``ek_agents.htmlreport.write_report``), kept as a thin re-export of ``ek_agents.report.htmlreport``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .report.htmlreport import *  # noqa: F403 -- the names of the home's __all__
from .report.htmlreport import __all__ as __all__
