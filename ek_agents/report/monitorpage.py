"""A monitored series as one self-contained HTML page (inline SVG, no script, no request).

:func:`labeling_page` is the page a person labels a window on. :func:`series_page`: three
plots over the windows, in order: corrected success with its 95% band and the judge's
raw rate beside it (alerts marked); dollars per corrected success; dollars per window -- the
agent's per model and the evaluation cost (the judges' own calls) apart. Then one row per
window: its sentence (traces, judged traces, labels it rests on) and the alert's reasons.
:func:`series_section_of` is the same, up to one window and that window marked, as the
*Series* section of the window's run report (:mod:`ek_agents.report.htmlreport`).
"""
from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from pydantic import BaseModel

from ..errors import ArtifactNotFound
from ..modelcosts import markdown_table
from ..monitor import SeriesOptions, SeriesRow, evaluate_series
from ..store import open_store
from ..stages.windowrun import window_of
from ..store.sources import monitor_key
from .runsummary import fmt_count, fmt_dollars, fmt_interval, fmt_percent

__all__ = ["series_page", "SERIES_PLOTS", "labeling_page", "window_series_rows",
           "window_series_section", "window_series_markdown", "series_section_of", "RunSection"]

#: The plots a series page draws (each an ``<svg data-plot="...">``).
SERIES_PLOTS = ("monitor-success", "monitor-cost-per-success", "monitor-dollars")
_W, _H, _L, _R, _T, _B = 640, 240, 60, 150, 20, 40
_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


class _Axes:
    def __init__(self, n: int, lo: float, hi: float) -> None:
        self.n, self.lo, self.hi = n, lo, (hi if hi > lo else lo + 1.0)

    def x(self, i: int) -> float:
        return _L + (i + 0.5) * (_W - _L - _R) / max(self.n, 1)

    def y(self, v: float) -> float:
        return _T + (self.hi - v) / (self.hi - self.lo) * (_H - _T - _B)


def _frame(name: str, title: str, a: _Axes, labels: Sequence[str], fmt: str,
           body: list, legend: Sequence[tuple], mark: Optional[int] = None) -> str:
    out = [f'<svg class="ek-plot" data-plot="{name}" width="{_W}" height="{_H}" '
           f'viewBox="0 0 {_W} {_H}" role="img" aria-label="{_e(title)}">',
           f'<text x="{_L}" y="14" font-size="12">{_e(title)}</text>']
    if mark is not None:  # the window a run's report is of: a shaded column behind its point
        w = (_W - _L - _R) / max(a.n, 1)
        out.append(f'<rect class="this-window" data-window="{_e(labels[mark])}" '
                   f'x="{a.x(mark) - w / 2:.1f}" y="{_T}" width="{w:.1f}" '
                   f'height="{_H - _T - _B}" fill="#fde68a" fill-opacity="0.6">'
                   f'<title>this window: {_e(labels[mark])}</title></rect>')
    for k in range(5):
        v = a.lo + k * (a.hi - a.lo) / 4
        y = a.y(v)
        out.append(f'<line x1="{_L}" x2="{_W - _R}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="{_L - 4}" y="{y + 4:.1f}" font-size="10" text-anchor="end">'
                   f'{_e(format(v, fmt))}</text>')
    step = max(1, len(labels) // 8)
    for i, lab in enumerate(labels):
        if i % step == 0:
            out.append(f'<text x="{a.x(i):.1f}" y="{_H - _B + 14}" font-size="9" '
                       f'text-anchor="middle">{_e(lab)}</text>')
    out += body
    for k, (text, color) in enumerate(legend):
        y = _T + 14 * k
        out.append(f'<rect x="{_W - _R + 8}" y="{y}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{_W - _R + 22}" y="{y + 9}" font-size="10">{_e(text)}</text>')
    out.append("</svg>")
    return "".join(out)


def _line(a: _Axes, values: Sequence[Optional[float]], color: str, cls: str,
          dash: str = "") -> list:
    pts = [f"{a.x(i):.1f},{a.y(v):.1f}" for i, v in enumerate(values) if v is not None]
    if not pts:
        return []
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return [f'<polyline class="{cls}" fill="none" stroke="{color}" stroke-width="2"{d} '
            f'points="{" ".join(pts)}"/>']


def _success(rows: Sequence[SeriesRow], mark: Optional[int] = None) -> str:
    a = _Axes(len(rows), 0.0, 1.0)
    body = []
    band = [(i, r.corrected_ci) for i, r in enumerate(rows) if r.corrected_ci]
    if band:
        up = [f"{a.x(i):.1f},{a.y(ci[1]):.1f}" for i, ci in band]
        down = [f"{a.x(i):.1f},{a.y(ci[0]):.1f}" for i, ci in reversed(band)]
        body.append(f'<polygon class="band" fill="{_COLORS[0]}" fill-opacity="0.2" '
                    f'points="{" ".join(up + down)}"/>')
    body += _line(a, [r.corrected for r in rows], _COLORS[0], "corrected")
    body += _line(a, [r.judge_rate for r in rows], "#888", "judge-rate", "4 3")
    for i, r in enumerate(rows):
        if r.alert:
            body.append(f'<circle class="alert" cx="{a.x(i):.1f}" cy="{a.y(r.corrected or 0):.1f}" '
                        f'r="5" fill="{_COLORS[1]}"><title>{_e("; ".join(r.reasons))}</title></circle>')
    return _frame("monitor-success", "success: corrected (95% band) and the judge's raw rate", a,
                  [r.window_id for r in rows], ".0%", body,
                  [("corrected", _COLORS[0]), ("judge says", "#888"), ("alert", _COLORS[1])],
                  mark)


def _cps(rows: Sequence[SeriesRow], mark: Optional[int] = None) -> str:
    vals = [r.dollars_per_success for r in rows]
    hi = max([v for v in vals if v is not None] or [1.0]) * 1.15
    a = _Axes(len(rows), 0.0, hi)
    return _frame("monitor-cost-per-success", "dollars per corrected success", a,
                  [r.window_id for r in rows], ".4f", _line(a, vals, _COLORS[2], "cps"),
                  [("$ / corrected success", _COLORS[2])], mark)


def _dollars(rows: Sequence[SeriesRow], mark: Optional[int] = None) -> str:
    models = sorted({m for r in rows for m in r.agent_per_model})
    series = [(m, [r.agent_per_model.get(m) for r in rows]) for m in models]
    series.append(("evaluation (judges)", [r.evaluation_dollars for r in rows]))
    hi = max([v for _, vs in series for v in vs if v is not None] or [1.0]) * 1.15
    a = _Axes(len(rows), 0.0, hi)
    body, legend = [], []
    for k, (name, vs) in enumerate(series):
        color = _COLORS[(k + 3) % len(_COLORS)] if name.startswith("evaluation") else \
            _COLORS[(k + 2) % len(_COLORS)]
        body += _line(a, vs, color, "dollars", "2 2" if name.startswith("evaluation") else "")
        legend.append((name[:22], color))
    return _frame("monitor-dollars", "dollars per window: the agent per model, the evaluation",
                  a, [r.window_id for r in rows], ".2f", body, legend, mark)


_WRAP = ' style="white-space:normal;text-align:left"'  # a run report's cells do not wrap


def _windows_table(rs: Sequence[SeriesRow], mark: Optional[int] = None) -> str:
    """One row per window: its sentence and the alert's reasons (``mark``: that row's class is
    ``this-window``)."""
    table = ["<table class=\"windows\"><tr><th>window</th><th>what it rests on</th>"
             "<th>alert</th></tr>"]
    for i, r in enumerate(rs):
        tr = '<tr class="this-window" style="background:#fde68a">' if i == mark else "<tr>"
        table.append(f"{tr}<td>{_e(r.window_id)}</td><td{_WRAP}>{_e(r.sentence)}</td>"
                     f"<td{_WRAP}>{_e('; '.join(r.reasons)) if r.alert else ''}</td></tr>")
    table.append("</table>")
    return "".join(table)


def series_page(series: str, rows: Sequence[Any]) -> str:
    """The page of a series (``rows``: :class:`~ek_agents.monitor.SeriesRow` s or their dicts)."""
    rs = [r if isinstance(r, SeriesRow) else SeriesRow.model_validate(r) for r in rows]
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">"
            f"<title>ek-agents monitor: {_e(series)}</title><style>body{{font-family:sans-serif;"
            "margin:1em}} td,th{{border-bottom:1px solid #ddd;padding:4px;text-align:left;"
            "font-size:12px}}</style></head><body>"
            f"<h1>Series {_e(series)}: {len(rs)} windows</h1>"
            + "".join((_success(rs), "<br>", _cps(rs), "<br>", _dollars(rs)))
            + _windows_table(rs) + "</body></html>")


def window_series_rows(store: Any, series: str, window_id: str) -> list[SeriesRow]:
    """The series' rows up to and including ``window_id``, recomputed from its stored windows
    and labels (:func:`~ek_agents.monitor.evaluate_series`, so a label stored after the window
    counts) with the options the series was last evaluated with (``series.json``; the
    defaults for a series never evaluated). A window's row depends only on the windows before
    it, so the rows are what the series said of the window, with today's labels."""
    st = open_store(store)
    key = monitor_key(series, "series.json")
    opts = SeriesOptions.model_validate(st.read_json(key)["options"]) if st.exists(key) else None
    rows = evaluate_series(st, series, opts, record=False)  # a report reads; it writes nothing
    ids = [r.window_id for r in rows]
    if window_id not in ids:
        raise ArtifactNotFound(f"window {window_id!r} is not a window of series {series!r} in "
                               f"store {st.url!r} (its last windows: {ids[-5:]}); give a window "
                               "id `ek-agents monitor --series` recorded")
    return rows[:ids.index(window_id) + 1]


def window_series_section(store: Any, series: str, window_id: str) -> str:
    """The *Series* section of a window's run report (an HTML fragment): the series' three
    plots up to and including the window, the window marked; its sentence (traces, judged
    traces, labels it rests on) and the alert's reasons; one row per window."""
    return _section_html(series, window_id, window_series_rows(store, series, window_id))


def _section_html(series: str, window_id: str, rs: Sequence[SeriesRow]) -> str:
    me, at = rs[-1], len(rs) - 1
    alert = (f'<p class="alert fail">ALERT: {_e("; ".join(me.reasons))}</p>' if me.alert else
             f'<p class="no-alert">no alert (reference: {_e(me.reference or "none")})</p>')
    return (f'<section class="series" id="series-{_e(window_id)}" data-series="{_e(series)}" '
            f'data-window="{_e(window_id)}"><h2>{_e(_heading(series, window_id, rs))}</h2>'
            f'<p class="sentence">{_e(me.sentence)}</p>{alert}'
            + "<br>".join((_success(rs, at), _cps(rs, at), _dollars(rs, at)))
            + _windows_table(rs, at) + "</section>")


def _heading(series: str, window_id: str, rs: Sequence[SeriesRow]) -> str:
    return f"Series {series}: {len(rs)} window{'s' * (len(rs) != 1)} up to this one ({window_id})"


def window_series_markdown(series: str, window_id: str, rs: Sequence[SeriesRow]) -> str:
    """The *Series* section in Markdown: the window's sentence, its alert, and one table row
    per window up to it (the judge's rate, the corrected rate and its interval, dollars per
    corrected success, the agent's dollars and the evaluation cost apart)."""
    me = rs[-1]
    alert = (f"**ALERT**: {'; '.join(me.reasons)}" if me.alert
             else f"no alert (reference: {me.reference or 'none'})")
    head = ["window", "traces", "judged", "labels", "judge says", "corrected [95% CI]",
            "$/corrected success", "agent dollars", "evaluation", "alert"]
    rows = [[f"**{r.window_id}**" if r is me else r.window_id, fmt_count(r.traces),
             fmt_count(r.judged), fmt_count(r.labels), fmt_percent(r.judge_rate),
             f"{fmt_percent(r.corrected)} {fmt_interval(r.corrected_ci, fmt_percent)}".strip(),
             _cps_cell(r), fmt_dollars(r.agent_dollars),
             fmt_dollars(r.evaluation_dollars), "; ".join(r.reasons) if r.alert else ""]
            for r in rs]
    return "\n".join([f"## {_heading(series, window_id, rs)}", "", me.sentence, "", alert, ""]
                     + markdown_table(head, rows))


def _cps_cell(r: SeriesRow) -> str:
    """Dollars per corrected success: infinite when the corrected rate is 0, n/a with no rate."""
    if r.dollars_per_success is not None:
        return fmt_dollars(r.dollars_per_success)
    return fmt_dollars(float("inf")) if r.corrected == 0 and r.agent_dollars else "n/a"


class RunSection(BaseModel):
    """A section a run's report adds at the end of the run: the same content as an HTML
    fragment and as Markdown."""

    html: str
    markdown: str


def series_section_of(store: Any, source: Mapping) -> Optional[RunSection]:
    """The *Series* section of a run's report when the run is a monitor window (its
    manifest's ``source``: ``{"kind": "monitor-window", "series": S, "window": W}``); None for
    any other run."""
    got = window_of(source)
    if got is None:
        return None
    series, window = got
    rs = window_series_rows(store, series, window)
    return RunSection(html=_section_html(series, window, rs),
                      markdown=window_series_markdown(series, window, rs))


_SAVE_JS = """
function ekLabels() {
  var rows = document.querySelectorAll('fieldset.trace'), out = [];
  rows.forEach(function (f) {
    var got = f.querySelector('input[type=radio]:checked');
    out.push(JSON.stringify({task_id: f.dataset.task, trial: Number(f.dataset.trial),
                             gold: got ? got.value === 'PASS' : null}));
  });
  return out.join('\\n') + '\\n';
}
function ekSave() {
  var text = ekLabels(), a = document.getElementById('save');
  document.getElementById('saved').textContent = text;
  a.href = URL.createObjectURL(new Blob([text], {type: 'application/jsonl'}));
  a.click();
}
"""


def labeling_page(series: str, window_id: str, rows: Sequence[dict]) -> str:
    """The page a person labels a window's planned traces on (the rows of
    :func:`~ek_agents.monitor.plan_window_labels`): each trace's request and answer, PASS /
    FAIL to choose -- never the judge's verdict --, and *Save labels*, which downloads the
    labels file (``labels-<window>.jsonl``: ``task_id``, ``trial``, ``gold``; ``null`` where
    nothing was chosen) for ``ek-agents label``. No server, no request: one file."""
    parts = []
    for i, r in enumerate(rows):
        parts.append(
            f'<fieldset class="trace" data-task="{_e(r["task_id"])}" data-trial="{int(r["trial"])}">'
            f'<legend>{i + 1}. {_e(r.get("slice") or "")}</legend>'
            f'<p><b>Request</b></p><pre>{_e(r.get("input"))}</pre>'
            f'<p><b>Answer</b></p><pre>{_e(r.get("output"))}</pre>'
            f'<label><input type="radio" name="l{i}" value="PASS"> PASS</label> '
            f'<label><input type="radio" name="l{i}" value="FAIL"> FAIL</label></fieldset>')
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
            f"<title>label window {_e(window_id)}</title><style>body{{font-family:sans-serif;"
            "margin:1em}} pre{{white-space:pre-wrap;background:#f6f6f6;padding:4px}}</style>"
            f"<script>{_SAVE_JS}</script></head><body>"
            f"<h1>Label window {_e(window_id)} of series {_e(series)}</h1>"
            f"<p>{len(rows)} traces. For each, did the answer truly succeed? Then save the file "
            f"and run <code>ek-agents label {_e(window_id)} labels-{_e(window_id)}.jsonl "
            f"--series {_e(series)}</code>.</p>" + "".join(parts)
            + '<p><button id="save-button" onclick="ekSave()">Save labels</button> '
            f'<a id="save" download="labels-{_e(window_id)}.jsonl"></a></p>'
            '<pre id="saved"></pre></body></html>')
