"""Reports people look at: stored runs as one self-contained HTML page and as Markdown.

:func:`render_html` lays out :class:`~ek_agents.report.runsummary.RunSummary` s (read by
:func:`~ek_agents.report.runsummary.load_runs`) as one page -- across runs, success against cost per
success with the Pareto frontier of each group of comparable runs, an overview table and each
series over time; per run, its figures, the pass^k curve, the per-slice table, tokens, errored
trials and the gate's verdict. The page loads nothing: inline CSS, inline SVG
(:mod:`ek_agents.report.reportplots`) and a Content-Security-Policy of ``default-src 'none'`` so a
stray fetch would be blocked. :func:`render_markdown` says the same in tables (no plots);
:func:`write_report` writes either or both.

>>> from ek_agents.report.runsummary import summarize_run
>>> run = summarize_run({"run_id": "r1"}, {"k": 1, "n_trials": 4, "n_success": 3, "success_rate": 0.75})
>>> print(render_markdown([run]).splitlines()[0])
# ek-agents report: runs (1 run)
"""
from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

from ..base import JsonShape
from ..core import shape
from ..errors import InvalidInput
from ..records.manifest import sequential_line
from ..stats.correctedrates import judge_error_line, judge_rows
from ..modelcosts import PER_MODEL_HEAD, UPPER_BOUND, markdown_table, marked, per_model_rows
from .reportplots import cost_vs_success_svg, pass_hat_svg, series_svg
from .runsummary import (RunSummary, SliceSummary, as_number, fmt_count, fmt_dollars,
                         fmt_interval, fmt_percent, fmt_seconds, frontier_flags, group_index,
                         group_label, load_runs, series_runs)
from ..store import Store, open_store, run_file_key, write_url
from .monitorpage import RunSection, series_section_of
from .trialbrowser import BrowserSection, trial_browser

__all__ = ["render_html", "render_markdown", "write_report", "CSP", "RunPublication", "publish_run",
           "table_rows", "log_lines", "REPORT_FILE", "evaluation_line", "run_sections"]

#: The file name of a run's HTML report beside its documents (``store.run_file_key``).
REPORT_FILE = "report.html"

#: The page's Content-Security-Policy: nothing may load; inline styles and data: images only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


# --------------------------------------------------------------------------- tables

def _overview_rows(runs: Sequence[RunSummary], on: Sequence[bool], *,
                   short: bool = False) -> list[list[str]]:
    """One row per run (``short``: the agent's callable name only, its path is in its section)."""
    groups = group_index(runs)
    rows = []
    for r, f in zip(runs, on):
        last = r.pass_hat[-1] if r.pass_hat else (r.k, None, 0.0, 1.0)
        rows.append([r.run_id, r.agent.rpartition(":")[2] if short else r.agent, r.model or "?",
                     chr(65 + groups[r.group]),
                     f"{fmt_percent(r.success_rate)} {fmt_interval(r.success_ci, fmt_percent)}",
                     f"{fmt_percent(last[1])} {fmt_interval(last[2:], fmt_percent)}",
                     _at_most(r) + fmt_dollars(r.dollars),
                     f"{_at_most(r)}{fmt_dollars(r.cost_per_success)} "
                     f"{fmt_interval(r.cost_per_success_ci, fmt_dollars)}".strip(),
                     fmt_count(r.tokens.get("total_tokens")), fmt_seconds(r.mean_latency_s),
                     fmt_count(sum(r.errors.values())), r.reused, "yes" if f else "no"])
    return rows


def _at_most(r: RunSummary) -> str:
    """``"≤ "`` before the dollars of a run whose dollars are an upper bound."""
    return "≤ " if r.upper_bound else ""


def _model_rows(r: RunSummary) -> list[list[str]]:
    return per_model_rows(r.per_model, money=fmt_dollars, count=fmt_count)


def _evaluation_rows(r: RunSummary) -> list[list[str]]:
    return per_model_rows(r.evaluation_per_model, money=fmt_dollars, count=fmt_count)


def evaluation_line(r: RunSummary) -> Optional[str]:
    """The evaluation cost of a judged run in one line -- the judges' own calls, never part of
    the agent's dollars or cost per success; None when no judge ran.

    >>> from ek_agents.report.runsummary import summarize_run
    >>> evaluation_line(summarize_run({"run_id": "j"}, {"cost": {"evaluation_dollars": 0.0021,
    ...     "evaluation_per_model": {"judge-mini": {"calls": 12, "dollars": 0.0021}}}}))
    "evaluation (judges' own calls) $0.0021: 12 calls to judge-mini, not in the agent's dollars"
    """
    per = {m: row for m, row in r.evaluation_per_model.items() if isinstance(row, Mapping)}
    if not per and r.evaluation_dollars is None:
        return None
    calls = sum(int(as_number(row.get("calls")) or 0) for row in per.values())
    dollars = "unknown (no prices)" if r.evaluation_dollars is None else fmt_dollars(r.evaluation_dollars)
    return (f"evaluation (judges' own calls) {dollars}: {fmt_count(calls)} calls to "
            f"{', '.join(sorted(per)) or '?'}, not in the agent's dollars")


def _evaluation_overview(runs: Sequence[RunSummary]) -> str:
    """Under the overview table: what judging each judged run cost (``""`` when none was)."""
    judged = [r for r in runs if evaluation_line(r)]
    if not judged:
        return ""
    return ("evaluation (judges' own calls), not in the dollars above: " + ", ".join(
        f"{r.run_id} {'unknown' if r.evaluation_dollars is None else fmt_dollars(r.evaluation_dollars)}"
        for r in judged))


def _overview_head(runs: Sequence[RunSummary]) -> list[str]:
    return ["run", "agent", "model", "group", "success [95% CI]", f"{_pass_label(runs)} [95% CI]",
            "dollars", "$/success [95% CI]", "tokens", "mean latency", "errored",
            "reused", "frontier"]


def _pass_label(runs: Sequence[RunSummary]) -> str:
    """``pass^4`` when every run has k = 4, else ``pass^k`` (each run at its own k)."""
    ks = {r.k for r in runs}
    return f"pass^{ks.pop()}" if len(ks) == 1 else "pass^k"


def _slice_head(r: RunSummary) -> list[str]:
    return ["slice", "tasks", "trials", "success [95% CI]", _pass_label([r]), "dollars",
            "$/success [95% CI]"]


def _slice_rows(r: RunSummary) -> list[list[str]]:
    return [[s.slice, fmt_count(s.tasks), fmt_count(s.trials),
             f"{fmt_percent(s.success_rate)} {fmt_interval(s.success_ci, fmt_percent)}",
             fmt_percent(s.pass_hat_k), fmt_dollars(s.dollars),
             f"{fmt_dollars(s.cost_per_success)} {fmt_interval(s.cost_per_success_ci, fmt_dollars)}".strip()]
            for s in r.slices]


def _verdict(gate: Mapping) -> str:
    if gate.get("refused"):
        return f"REFUSED: {gate['refused']}"
    return "passed" if gate.get("passed") else "FAILED"


def _token_rows(r: RunSummary) -> list[list[str]]:
    return [[k.replace("_", " "), fmt_count(v)] for k, v in r.tokens.items()]


def _html_cell(c: Any) -> str:
    """A cell; an interval after its value goes on a second, smaller line."""
    value, sep, ci = str(c).partition(" [")
    return _e(value) + (f'<br><span class="ci">[{_e(ci)}</span>' if sep else "")


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str) -> str:
    return (f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{_html_cell(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join("<tr>" + "".join(f"<td>{_html_cell(c)}</td>" for c in row)
                                               + "</tr>" for row in rows) + "</tbody></table>")


_CSS = """
.scroll{overflow-x:auto}td{white-space:nowrap}table.overview{font-size:12px}.ci{color:#666;font-size:11px}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1200px;
color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 16px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td:first-child,th:first-child{text-align:left}
svg.ek-plot{font-size:11px;max-width:100%;height:auto}svg .axis-label{font-size:12px;fill:#444}
.note{color:#555}.pass{color:#05732d;font-weight:600}.fail{color:#b00020;font-weight:600}
.group-tag{display:inline-block;padding:0 6px;border-radius:3px;color:#fff}
"""

# --------------------------------------------------------------------------- pages

def _title(runs: Sequence[RunSummary]) -> str:
    suites = sorted({f"{r.suite} {r.suite_version}".strip() for r in runs})
    return f"ek-agents report: {', '.join(suites) or 'runs'} ({len(runs)} run{'s' * (len(runs) != 1)})"


def render_html(runs: Sequence[RunSummary], browser: Optional[BrowserSection] = None,
                sections: Optional[Mapping[str, RunSection]] = None) -> str:
    """One self-contained HTML page for ``runs`` (inline CSS and SVG; nothing loaded);
    ``browser``: the runs' trial browser (:mod:`ek_agents.report.trialbrowser`) at the end,
    its script allowed by its sha256 in the page's CSP; ``sections``: a section to add at the
    end of a run's, by run id (a monitor window's series: :func:`run_sections`)."""
    runs = list(runs)
    if not runs:
        raise InvalidInput("render_html needs at least one RunSummary (see load_runs)")
    on = frontier_flags(runs)
    groups = group_index(runs)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}'
           f'{"; script-src " + browser.script_source if browser else ""}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(_title(runs))}</title><style>{_CSS}</style></head><body>",
           f"<h1>{_e(_title(runs))}</h1>",
           '<h2 id="compare">Success against cost per success</h2>',
           '<p class="note">Each run is a point with 95% intervals on both axes; the dashed line '
           'is the Pareto frontier of each group of comparable runs (a run is on it when no '
           'other run is at least as successful and at most as costly, one of them strictly; '
           'ringed). Runs of different groups (suite version, simulator or scaffold differ) '
           'are drawn with different colours and markers and are never joined.</p>',
           cost_vs_success_svg(runs, on)]
    if len(groups) > 1:
        out.append('<p class="note incomparable">Not comparable: ' + "; ".join(
            f"group {chr(65 + gi)} = {_e(group_label(g))}" for g, gi in groups.items()) + "</p>")
    unplaced = [r.run_id for r in runs if r.cost_per_success is None
                or not math.isfinite(r.cost_per_success) or r.cost_per_success <= 0]
    if unplaced:
        out.append(f'<p class="note">Not plotted (unknown, zero or infinite cost per success): '
                   f'{_e(", ".join(unplaced))}</p>')
    out.append('<div class="scroll">' + _html_table(_overview_head(runs),
                                                    _overview_rows(runs, on, short=True), "overview") + "</div>")
    if any(r.upper_bound for r in runs):
        out.append(f'<p class="note upper-bound" style="{_UB_STYLE}">{_e(_AT_MOST_NOTE)}</p>')
    if evaluated := _evaluation_overview(runs):
        out.append(f'<p class="note evaluation-overview">{_e(evaluated)}</p>')
    for series in series_runs(runs):
        out += [f'<h2>Series over time: {_e(series[0].agent)} '
                f'(group {chr(65 + groups[series[0].group])})</h2>', series_svg(series)]
    for r in runs:
        out += [f'<h2 id="run-{_e(r.run_id)}">Run {_e(r.run_id)}</h2>',
                f'<p>agent <code>{_e(r.agent)}</code>, model <code>{_e(r.model or "?")}</code>, '
                f'{_e(group_label(r.group))}; k = {r.k}, {fmt_count(r.n_tasks)} tasks, '
                f'{fmt_count(r.n_trials)} trials, created {_e(r.created_at or "?")}; episodes '
                f'reused: {_e(r.reused)}</p>',
                f'<p>success <b>{fmt_percent(r.success_rate)}</b> '
                f'{fmt_interval(r.success_ci, fmt_percent)}, dollars <b>{_e(fmt_dollars(r.dollars))}'
                f'</b>{_ub_html(r)}, cost per success <b>{_e(fmt_dollars(r.cost_per_success))}</b>{_ub_html(r)} '
                f'{_e(fmt_interval(r.cost_per_success_ci, fmt_dollars))}, mean latency '
                f'{fmt_seconds(r.mean_latency_s)}</p>']
        ev = evaluation_line(r)
        if ev:  # the judges' own calls: a line and a table of their own, apart from the agent's
            out += [f'<p class="evaluation" data-dollars="{_e(r.evaluation_dollars)}">{_e(ev)}</p>',
                    _html_table(PER_MODEL_HEAD, _evaluation_rows(r), "evaluation-per-model")]
        if r.gate:
            cls = "pass" if r.gate.get("passed") and not r.gate.get("refused") else "fail"
            out.append(f'<p class="gate">Gate vs baseline <code>{_e(r.gate.get("baseline", "?"))}'
                       f'</code>: <span class="{cls}">{_e(_verdict(r.gate))}</span></p>')
            items = list(r.gate.get("reasons") or []) + \
                [f"warning: {w}" for w in r.gate.get("warnings") or []]
            if items:
                out.append("<ul class=\"gate-reasons\">" + "".join(f"<li>{_e(x)}</li>" for x in items)
                           + "</ul>")
        if r.judge:  # judged with labels: the judge's raw rate beside the corrected one
            out += ["<h3>Judge-corrected success</h3>",
                    _html_table(["success decided by", "success", "95% CI", "cost per success"],
                                _judge_table(r), "judge"),
                    f'<p class="note">{_e(judge_error_line(r.judge))}</p>']
        out += ["<h3>pass^k</h3>", pass_hat_svg(r),
                _html_table(["k", "pass^k", "95% CI"],
                            [[str(k), fmt_percent(v), fmt_interval((lo, hi), fmt_percent)]
                             for k, v, lo, hi in r.pass_hat], "pass-hat")]
        if r.slices:
            out += ["<h3>Per slice</h3>", _html_table(_slice_head(r), _slice_rows(r), "slices")]
        if r.tokens:
            out += ["<h3>Tokens</h3>", _html_table(["tokens", "count"], _token_rows(r), "tokens")]
        if r.per_model:
            out += ["<h3>Per model</h3>", _html_table(PER_MODEL_HEAD, _model_rows(r), "per-model")]
        if r.upper_bound:
            out.append(f'<p class="note upper-bound" style="{_UB_STYLE}"><b>Upper bound:</b> '
                       f'{_e(r.upper_bound)}</p>')
        out += ["<h3>Errored trials</h3>",
                _html_table(["kind", "trials"], [[k, fmt_count(v)] for k, v in sorted(r.errors.items())],
                            "errors") if r.errors else '<p class="note">none</p>']
        if r.warnings:
            out.append("<ul class=\"warnings\">" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings)
                       + "</ul>")
        if sections and r.run_id in sections:
            out.append(sections[r.run_id].html)
    if browser is not None:
        out.append(browser.html)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _judge_table(r: RunSummary) -> list[list[str]]:
    rows = []
    for j in judge_rows(r.judge):
        ci = j["ci"] or (None, None)
        cost = j["cost_per_success"]
        cost = cost if isinstance(cost, (int, float)) else None
        cci = tuple(c if isinstance(c, (int, float)) else float("inf") for c in j["cost_ci"]) \
            if j["cost_ci"] else None
        rows.append([j["which"], fmt_percent(j["success"]), fmt_interval(tuple(ci), fmt_percent),
                     fmt_dollars(cost) + (f" {fmt_interval(cci, fmt_dollars)}" if cci else "")])
    return rows


def _ub_html(r: RunSummary) -> str:
    return (f' <span class="upper-bound" style="{_UB_STYLE}">{_e(UPPER_BOUND)}</span>'
            if r.upper_bound else "")


_UB_STYLE = "color:#a35200;font-weight:600"  # inline: pages of runs without it keep their bytes
_AT_MOST_NOTE = ("≤: an upper bound: some model calls of the run did not report their cached "
                 "tokens and were billed at full input rates")


def render_markdown(runs: Sequence[RunSummary],
                    sections: Optional[Mapping[str, RunSection]] = None) -> str:
    """The report as Markdown: the overview table (frontier and groups marked), each series,
    then per run its pass^k table, slices, tokens, errored trials and gate verdict, and its
    extra section (``sections``, by run id: see :func:`render_html`)."""
    runs = list(runs)
    if not runs:
        raise InvalidInput("render_markdown needs at least one RunSummary (see load_runs)")
    on = frontier_flags(runs)
    groups = group_index(runs)
    lines = [f"# {_title(runs)}", ""]
    lines += markdown_table(_overview_head(runs), _overview_rows(runs, on))
    if any(r.upper_bound for r in runs):
        lines += ["", _AT_MOST_NOTE]
    if evaluated := _evaluation_overview(runs):
        lines += ["", evaluated]
    lines += ["", "Groups of comparable runs (runs of different groups are never compared):"]
    lines += [f"- group {chr(65 + gi)}: {group_label(g)}" for g, gi in groups.items()]
    for series in series_runs(runs):
        lines += ["", f"## Series over time: {series[0].agent} (group {chr(65 + groups[series[0].group])})",
                  ""]
        lines += markdown_table(["created", "run", "success [95% CI]", "$/success"],
                           [[r.created_at or "?", r.run_id,
                             f"{fmt_percent(r.success_rate)} {fmt_interval(r.success_ci, fmt_percent)}",
                             fmt_dollars(r.cost_per_success)] for r in series])
    for r in runs:
        lines += ["", f"## Run `{r.run_id}`", "",
                  f"agent `{r.agent}`, model `{r.model or '?'}`, {group_label(r.group)}; k = {r.k}, "
                  f"{fmt_count(r.n_tasks)} tasks, {fmt_count(r.n_trials)} trials; episodes reused: "
                  f"{r.reused}"]
        ev = evaluation_line(r)
        if ev:
            lines += ["", ev, ""] + markdown_table(PER_MODEL_HEAD, _evaluation_rows(r))
        if r.gate:
            lines += ["", f"**Gate** vs baseline `{r.gate.get('baseline', '?')}`: {_verdict(r.gate)}"]
            lines += [f"- {x}" for x in r.gate.get("reasons") or []]
            lines += [f"- warning: {w}" for w in r.gate.get("warnings") or []]
            seq = sequential_line(r.gate)
            lines += [f"- {seq}"] if seq else []
        if r.judge:
            lines += ["", "Judge-corrected success:", ""]
            lines += markdown_table(["success decided by", "success", "95% CI", "cost per success"],
                               _judge_table(r))
            lines += ["", judge_error_line(r.judge) or ""]
        lines += [""] + markdown_table(["k", "pass^k", "95% CI"],
                                  [[str(k), fmt_percent(v), fmt_interval((lo, hi), fmt_percent)]
                                   for k, v, lo, hi in r.pass_hat])
        if r.slices:
            lines += [""] + markdown_table(_slice_head(r), _slice_rows(r))
        if r.tokens:
            lines += ["", "Tokens: " + ", ".join(f"{k.replace('_', ' ')} {fmt_count(v)}"
                                                 for k, v in r.tokens.items())
                      + f"; mean latency {fmt_seconds(r.mean_latency_s)}"]
        if r.per_model:
            lines += ["", "Per model:", ""] + markdown_table(PER_MODEL_HEAD, _model_rows(r))
        if r.upper_bound:
            lines += ["", f"**Upper bound:** dollars {marked(fmt_dollars(r.dollars), True)}: {r.upper_bound}"]
        lines += ["", "Errored trials: " + (", ".join(f"{k} {fmt_count(v)}" for k, v in
                                                      sorted(r.errors.items())) or "none")]
        if r.warnings:
            lines += ["", "Warnings:"] + [f"- {w}" for w in r.warnings]
        if sections and r.run_id in sections:
            lines += ["", sections[r.run_id].markdown]
    return "\n".join(lines) + "\n"


def write_report(store: Union[Store, str], run_ids: Sequence[str], *, html: Optional[str] = None,
                 markdown: Optional[str] = None) -> dict[str, str]:
    """Render the runs and write the HTML (with the runs' trial browser) and/or Markdown report
    to the given paths or URLs (through ``ek_agents.store``); return ``{"html": path,
    "markdown": path}`` of what was written. With neither path, nothing is written and ``{}``
    is returned."""
    st = open_store(store)
    runs = load_runs(st, run_ids)
    sections = run_sections(st, runs) if html is not None or markdown is not None else {}
    out = {}
    if html is not None:
        page = render_html(runs, trial_browser(st, run_ids), sections)
        write_url(html, page.encode("utf-8"), what="HTML report")
        out["html"] = str(html)
    if markdown is not None:
        write_url(markdown, render_markdown(runs, sections).encode("utf-8"), what="Markdown report")
        out["markdown"] = str(markdown)
    return out


def run_sections(store: Store, runs: Sequence[RunSummary]) -> dict[str, RunSection]:
    """The extra section (HTML and Markdown) of each run that has one, by run id: a monitor
    window's series drawn up to it (:func:`~ek_agents.report.monitorpage.series_section_of`)."""
    out = {}
    for r in runs:
        section = series_section_of(store, r.source)
        if section is not None:
            out[r.run_id] = section
    return out


# --------------------------------------------------------------------------- a run, published

def table_rows(run: RunSummary) -> list[dict[str, str]]:
    """The run's figures as table rows of formatted strings, the run id and the agent as columns:
    ``all`` first, then one row per slice (what the pipeline's table artifact shows)."""
    k = _pass_label([run])
    last = run.pass_hat[-1] if run.pass_hat else (run.k, None, 0.0, 1.0)
    every = SliceSummary(slice="all", tasks=run.n_tasks, trials=run.n_trials,
                         success_rate=run.success_rate, success_ci=run.success_ci,
                         pass_hat_k=last[1], dollars=run.dollars,
                         cost_per_success=run.cost_per_success,
                         cost_per_success_ci=run.cost_per_success_ci)
    return [{"run_id": run.run_id, "agent": run.agent, "slice": s.slice, "tasks": fmt_count(s.tasks),
             "trials": fmt_count(s.trials), "success": fmt_percent(s.success_rate),
             "success 95% CI": fmt_interval(s.success_ci, fmt_percent), k: fmt_percent(s.pass_hat_k),
             "dollars": fmt_dollars(s.dollars), "$/success": fmt_dollars(s.cost_per_success),
             "$/success 95% CI": fmt_interval(s.cost_per_success_ci, fmt_dollars)}
            | ({"dollars": marked(fmt_dollars(s.dollars), True),
                "$/success": marked(fmt_dollars(s.cost_per_success), True)}
               if run.upper_bound and s is every else {})
            for s in [every, *run.slices]]


def log_lines(run: RunSummary) -> list[str]:
    """What a run's log says of it, one line each: trials run and reused, success, cost per
    success, a judged run's evaluation cost, the gate's verdict (the pipeline logs these
    through its run logger)."""
    gate = "gate: no baseline given"
    if run.gate:
        gate = (f"gate vs baseline {run.gate.get('baseline', '?')!r}: {_verdict(run.gate)}"
                + "".join(f"; {x}" for x in run.gate.get("reasons") or []))
    return [f"run {run.run_id}: agent {run.agent}, {fmt_count(run.n_trials)} trials of "
            f"{fmt_count(run.n_tasks)} tasks (k = {run.k}); episodes reused: {run.reused}",
            f"success {fmt_percent(run.success_rate)} {fmt_interval(run.success_ci, fmt_percent)} "
            f"({fmt_count(run.n_success)} of {fmt_count(run.n_trials)} trials)",
            f"dollars {marked(fmt_dollars(run.dollars), run.upper_bound)}, cost per success "
            f"{marked(fmt_dollars(run.cost_per_success), run.upper_bound)}"
            + (f" {fmt_interval(run.cost_per_success_ci, fmt_dollars)}"
               if run.cost_per_success_ci else ""),
            *([evaluation_line(run)] if evaluation_line(run) else []),
            gate]


@shape()
class RunPublication(JsonShape):
    """What publishing a run made: its HTML report in the store (``html_key``, its sha256), the
    Markdown report, the table rows and the log lines -- all formatted for people."""

    run_id: str
    agent: str
    suite: str
    html_key: str
    html_sha256: str
    markdown: str
    rows: list[dict[str, str]]
    log: list[str]


def publish_run(store: Union[Store, str, None], run_id: str) -> RunPublication:
    """Write the run's HTML report beside its documents (``runs/<run_id>/report.html``, through
    the store) and return it with the Markdown report, table rows and log lines of the run."""
    st = open_store(store)
    run = load_runs(st, [run_id])[0]
    key = run_file_key(run_id, REPORT_FILE)
    sections = run_sections(st, [run])
    page = render_html([run], trial_browser(st, [run_id]), sections)
    digest = st.write_bytes(key, page.encode("utf-8"))
    markdown = render_markdown([run], sections) + f"\nHTML report: `{st.url}/{key}`\n"
    return RunPublication(run_id=run.run_id, agent=run.agent, suite=run.suite, html_key=key,
                          html_sha256=digest, markdown=markdown, rows=table_rows(run),
                          log=log_lines(run))
