"""``ek_agents.htmlreport``: a documented path (README: ``ek_agents.htmlreport.write_report``), kept as a thin re-export of ``ek_agents.report.htmlreport``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .report.htmlreport import (render_html as render_html, render_markdown as render_markdown,
    write_report as write_report, CSP as CSP, RunPublication as RunPublication,
    publish_run as publish_run, table_rows as table_rows, log_lines as log_lines,
    REPORT_FILE as REPORT_FILE)

__all__ = ["render_html", "render_markdown", "write_report", "CSP", "RunPublication",
           "publish_run", "table_rows", "log_lines", "REPORT_FILE"]
