"""The report's plots as inline SVG, drawn here (no matplotlib, nothing loaded).

:func:`cost_vs_success_svg`: each run a point at (cost per success, success rate) with
whiskers for both 95% intervals, the Pareto frontier of each comparability group as a dashed
step line, groups in different colours and markers and never joined; :func:`pass_hat_svg`:
one run's pass^k for k = 1..K with interval bars; :func:`series_svg`: a series' success rate
run after run. Elements carry classes (``run-point``, ``frontier``, ``whisker``) and
``data-*`` attributes so a test can find them in the DOM a browser builds.
"""
from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from .runsummary import (RunSummary, fmt_dollars, fmt_interval, fmt_percent, group_index,
                         group_label)

__all__ = ["cost_vs_success_svg", "pass_hat_svg", "series_svg", "PALETTE"]

#: Distinct colours for comparability groups (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")

_W, _H, _L, _R, _T, _B = 720, 400, 72, 96, 24, 56  # size and margins of a plot


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


class _Axes:
    """Data -> pixel mapping of one plot (linear y; linear or log10 x)."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float], *, logx: bool = False):
        self.logx = logx
        self.x0, self.x1 = (math.log10(x[0]), math.log10(x[1])) if logx else x
        self.y0, self.y1 = y

    def px(self, x: float) -> float:
        v = math.log10(x) if self.logx else x
        return _L + (v - self.x0) / ((self.x1 - self.x0) or 1.0) * (_W - _L - _R)

    def py(self, y: float) -> float:
        return _H - _B - (y - self.y0) / ((self.y1 - self.y0) or 1.0) * (_H - _T - _B)

    def frame(self, xticks: Sequence[tuple[float, str]], yticks: Sequence[tuple[float, str]],
              xlabel: str, ylabel: str) -> list[str]:
        out = [f'<rect x="{_L}" y="{_T}" width="{_W - _L - _R}" height="{_H - _T - _B}" '
               'fill="#fff" stroke="#999"/>']
        for v, lab in xticks:
            x = self.px(v)
            out.append(f'<line x1="{x:.1f}" y1="{_T}" x2="{x:.1f}" y2="{_H - _B}" stroke="#eee"/>'
                       f'<text x="{x:.1f}" y="{_H - _B + 16}" text-anchor="middle">{_e(lab)}</text>')
        for v, lab in yticks:
            y = self.py(v)
            out.append(f'<line x1="{_L}" y1="{y:.1f}" x2="{_W - _R}" y2="{y:.1f}" stroke="#eee"/>'
                       f'<text x="{_L - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(lab)}</text>')
        out.append(f'<text x="{(_L + _W - _R) / 2}" y="{_H - 12}" text-anchor="middle" '
                   f'class="axis-label">{_e(xlabel)}</text>')
        out.append(f'<text transform="translate(16,{(_T + _H - _B) / 2}) rotate(-90)" '
                   f'text-anchor="middle" class="axis-label">{_e(ylabel)}</text>')
        return out


def _svg(name: str, title: str, body: list[str], legend: Sequence[tuple[str, str]] = (),
         height: int = _H) -> str:
    leg = "".join(f'<g class="legend-item"><rect x="{_L + 8}" y="{_T + 8 + 18 * i}" width="10" '
                  f'height="10" fill="{c}"/><text x="{_L + 24}" y="{_T + 17 + 18 * i}">{_e(t)}</text></g>'
                  for i, (c, t) in enumerate(legend))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="ek-plot" data-plot="{_e(name)}" '
            f'role="img" viewBox="0 0 {_W} {height}" width="{_W}" height="{height}">'
            f'<title>{_e(title)}</title>' + "".join(body) + leg + "</svg>")


def _percent_ticks(a: _Axes) -> list[tuple[float, str]]:
    return [(v, f"{v * 100:.0f}%") for v in _nice_ticks(a.y0, a.y1) if a.y0 - 1e-9 <= v <= a.y1 + 1e-9]


def cost_vs_success_svg(runs: Sequence[RunSummary], on_frontier: Sequence[bool]) -> str:
    """Each run a point (cost per success, success) with whiskers for both intervals; each
    comparability group's frontier a step line; runs of different groups never joined."""
    groups = group_index(runs)
    placed = [i for i, r in enumerate(runs)
              if r.cost_per_success is not None and math.isfinite(r.cost_per_success)
              and r.cost_per_success > 0]
    if not placed:
        return ('<p class="note" data-plot="cost-vs-success">No run has a known, finite cost per '
                'success: nothing to plot.</p>')
    xs = [runs[i].cost_per_success for i in placed]
    for i in placed:
        ci = runs[i].cost_per_success_ci
        if ci and math.isfinite(ci[1]) and ci[0] > 0:
            xs += [ci[0], ci[1]]
    lo, hi = min(xs), max(xs)
    logx = hi / lo > 5
    if logx:  # padded by a tenth of the span in log space, ticks at 1, 2, 5 x 10^e
        pad = (math.log10(hi) - math.log10(lo)) * 0.08
        x0, x1 = 10 ** (math.log10(lo) - pad), 10 ** (math.log10(hi) + pad)
        xticks = [(m * 10.0 ** e, fmt_dollars(m * 10.0 ** e))
                  for e in range(math.floor(math.log10(x0)), math.ceil(math.log10(x1)) + 1)
                  for m in (1, 2, 5) if x0 <= m * 10.0 ** e <= x1]
    else:
        pad = (hi - lo) * 0.1 or hi * 0.1
        ticks = _nice_ticks(max(0.0, lo - pad), hi + pad)
        x0, x1 = ticks[0], ticks[-1]
        xticks = [(v, fmt_dollars(v)) for v in ticks]
    a = _Axes((x0, x1), (0.0, 1.0), logx=logx)
    body = a.frame(xticks, _percent_ticks(a), "cost per success (dollars, 95% interval)",
                   "success rate (95% interval)")
    for g, gi in groups.items():  # one frontier line per comparability group
        pts = sorted((runs[i].cost_per_success, runs[i].success_rate) for i in placed
                     if runs[i].group == g and on_frontier[i])
        if len(pts) >= 2:
            path = [f"{a.px(pts[0][0]):.1f},{a.py(pts[0][1]):.1f}"]
            for (_, py0), (cx, cy) in zip(pts, pts[1:]):
                path += [f"{a.px(cx):.1f},{a.py(py0):.1f}", f"{a.px(cx):.1f},{a.py(cy):.1f}"]
            body.append(f'<polyline class="frontier" data-group="{gi}" points="{" ".join(path)}" '
                        f'fill="none" stroke="{PALETTE[gi % len(PALETTE)]}" stroke-width="2" '
                        'stroke-dasharray="6 3"/>')
    for i in placed:
        r, gi = runs[i], groups[runs[i].group]
        col = PALETTE[gi % len(PALETTE)]
        x, y = a.px(r.cost_per_success), a.py(r.success_rate)
        parts = [f'<line x1="{x:.1f}" y1="{a.py(r.success_ci[0]):.1f}" x2="{x:.1f}" '
                 f'y2="{a.py(r.success_ci[1]):.1f}" stroke="{col}"/>']
        ci = r.cost_per_success_ci
        if ci and ci[0] > 0:
            right = a.px(min(ci[1], x1)) if math.isfinite(ci[1]) else _W - _R
            parts.append(f'<line x1="{a.px(max(ci[0], x0)):.1f}" y1="{y:.1f}" x2="{right:.1f}" '
                         f'y2="{y:.1f}" stroke="{col}"/>')
        shape_ = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{col}"/>' if gi == 0 else
                  f'<rect x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10" fill="{col}"/>')
        ring = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="10" fill="none" stroke="{col}"/>'
                if on_frontier[i] else "")
        parts.append(f'{shape_}{ring}<text x="{x + 12:.1f}" y="{y - 8:.1f}">{_e(r.run_id)}</text>')
        body.append(f'<g class="run-point whisker" data-run="{_e(r.run_id)}" data-group="{gi}" '
                    f'data-frontier="{str(on_frontier[i]).lower()}"><title>{_e(r.run_id)}: success '
                    f'{fmt_percent(r.success_rate)}, {fmt_dollars(r.cost_per_success)} per success'
                    f'</title>{"".join(parts)}</g>')
    legend = [(PALETTE[gi % len(PALETTE)], f"group {chr(65 + gi)}: {group_label(g)}")
              for g, gi in groups.items()]
    return _svg("cost-vs-success", "success rate against cost per success", body, legend)


def pass_hat_svg(r: RunSummary) -> str:
    """pass^k against k with interval bars for one run."""
    pts = [(k, v, lo, hi) for k, v, lo, hi in r.pass_hat if v is not None]
    if not pts:
        return '<p class="note">No task had enough trials for pass^k.</p>'
    kmax = max(k for k, *_ in pts)
    a = _Axes((0.5, kmax + 0.5), (0.0, 1.0))
    body = a.frame([(k, str(k)) for k in range(1, kmax + 1)], _percent_ticks(a),
                   "k (trials that must all succeed)", "pass^k (95% interval)")
    body.append('<polyline class="curve" fill="none" stroke="#0072B2" stroke-width="2" points="'
                + " ".join(f"{a.px(k):.1f},{a.py(v):.1f}" for k, v, _, _ in pts) + '"/>')
    for k, v, lo, hi in pts:
        body.append(f'<g class="whisker"><title>pass^{k} {fmt_percent(v)} '
                    f'{fmt_interval((lo, hi), fmt_percent)}</title>'
                    f'<line x1="{a.px(k):.1f}" y1="{a.py(lo):.1f}" x2="{a.px(k):.1f}" '
                    f'y2="{a.py(hi):.1f}" stroke="#0072B2"/>'
                    f'<circle cx="{a.px(k):.1f}" cy="{a.py(v):.1f}" r="4" fill="#0072B2"/></g>')
    return _svg("pass-hat-k", f"pass^k for k = 1..{kmax}, run {r.run_id}", body)


def series_svg(series: Sequence[RunSummary]) -> str:
    """A series' success rate run after run (oldest first) as a line with interval bars."""
    n = len(series)
    a = _Axes((-0.5, n - 0.5), (0.0, 1.0))
    body = a.frame([(i, r.run_id) for i, r in enumerate(series)],
                   _percent_ticks(a), "run (oldest first)", "success rate (95% interval)")
    body.append('<polyline class="series-line" fill="none" stroke="#009E73" stroke-width="2" '
                'points="' + " ".join(f"{a.px(i):.1f},{a.py(r.success_rate):.1f}"
                                      for i, r in enumerate(series)) + '"/>')
    for i, r in enumerate(series):
        body.append(f'<g class="whisker" data-run="{_e(r.run_id)}"><title>{_e(r.run_id)}: '
                    f'{fmt_percent(r.success_rate)} {fmt_interval(r.success_ci, fmt_percent)}</title>'
                    f'<line x1="{a.px(i):.1f}" y1="{a.py(r.success_ci[0]):.1f}" x2="{a.px(i):.1f}" '
                    f'y2="{a.py(r.success_ci[1]):.1f}" stroke="#009E73"/>'
                    f'<circle cx="{a.px(i):.1f}" cy="{a.py(r.success_rate):.1f}" r="4" '
                    f'fill="#009E73"/></g>')
    return _svg("series", f"series of {series[0].agent}", body)
