"""Reports for people: the stored-run summary, the HTML / Markdown report and its plots.

Owns reading stored runs into rows (``runsummary``), the self-contained HTML and Markdown
report of one or more runs (``htmlreport``) and its plots (``reportplots``: inline SVG drawn
there, no plotting library), a stored run read trial by trial (``trialdata``) as data frames
(``frames``), as exported files (``export``) and as the report's trial browser
(``trialbrowser``, its script in ``browserjs``), and a monitored series' pages
(``monitorpage``: the series, the labeling page, and the *Series* section a monitor window's
run report ends with).

May import: every layer below it, ``runs`` included (see ``ek_agents.layers``). The
documented ``ek_agents.htmlreport.write_report`` path is a thin re-export of
``report.htmlreport``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: public name -> the module of this package that defines it (names resolve lazily:
#: importing one module of the package does not import the others)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["render_html", "render_markdown", "write_report", "CSP", "RunPublication",
                    "publish_run", "table_rows", "log_lines", "REPORT_FILE"], "htmlreport"),
    **dict.fromkeys(["cost_vs_success_svg", "pass_hat_svg", "series_svg", "PALETTE"], "reportplots"),
    **dict.fromkeys(["RunSummary", "SliceSummary", "load_runs", "summarize_run", "pareto_frontier",
                    "frontier_flags", "comparability_group", "group_index", "group_label",
                    "series_of", "series_runs", "as_number", "fmt_percent", "fmt_dollars",
                    "fmt_interval", "fmt_count", "fmt_seconds"], "runsummary"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .htmlreport import (render_html as render_html, render_markdown as render_markdown,
        write_report as write_report, CSP as CSP, RunPublication as RunPublication,
        publish_run as publish_run, table_rows as table_rows, log_lines as log_lines,
        REPORT_FILE as REPORT_FILE)
    from .reportplots import (cost_vs_success_svg as cost_vs_success_svg,
        pass_hat_svg as pass_hat_svg, series_svg as series_svg, PALETTE as PALETTE)
    from .runsummary import (RunSummary as RunSummary, SliceSummary as SliceSummary,
        load_runs as load_runs, summarize_run as summarize_run, pareto_frontier as pareto_frontier,
        frontier_flags as frontier_flags, comparability_group as comparability_group,
        group_index as group_index, group_label as group_label, series_of as series_of,
        series_runs as series_runs, as_number as as_number, fmt_percent as fmt_percent,
        fmt_dollars as fmt_dollars, fmt_interval as fmt_interval, fmt_count as fmt_count,
        fmt_seconds as fmt_seconds)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
