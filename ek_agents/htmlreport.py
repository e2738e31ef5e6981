"""Reports people look at: stored runs as one self-contained HTML page and as Markdown.

:func:`load_runs` reads each run's ``manifest.json``, ``report.json`` and (when the pipeline
gated it) ``gate.json`` from a :class:`~ek_agents.store.Store` into a :class:`RunSummary`;
:func:`render_html` draws them -- per run: success rate and its interval, the pass^k curve for
k = 1..K with intervals, dollars, cost per success and its interval, tokens, latency, the
per-slice table, errored trials by kind, whether episodes were reused; across runs: success
against cost per success with interval whiskers and the Pareto frontier of each group of
comparable runs, and each series of runs over time. :func:`render_markdown` says the same in
tables (no plots). The page loads nothing: inline CSS, inline SVG generated here, and a
Content-Security-Policy of ``default-src 'none'`` so a stray fetch would be blocked.

Numbers are formatted for people:

>>> fmt_percent(0.3645833333333333), fmt_dollars(0.00076879375), fmt_dollars(1234.5)
('36.5%', '$0.000769', '$1,234.50')
>>> fmt_dollars(None), fmt_dollars(float("inf")), fmt_interval((0.55179, 0.76465), fmt_percent)
('unknown', '∞ (no success)', '[55.2%, 76.5%]')

A run is on the Pareto frontier when no other run is at least as successful and at most as
costly, one of them strictly:

>>> pareto_frontier([(0.6, 0.001), (0.85, 0.004), (0.35, 0.002), (0.6, 0.001)])
[True, True, False, True]
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from pydantic import Field

from .base import NonFiniteJson, decode_nonfinite
from .core import shape
from .errors import ArtifactNotFound, InvalidInput
from .reporting import reliability
from .store import Store, run_key, write_url

__all__ = ["RunSummary", "load_runs", "summarize_run", "render_html", "render_markdown",
           "write_report", "pareto_frontier", "comparability_group", "series_of",
           "fmt_percent", "fmt_dollars", "fmt_interval", "fmt_count", "fmt_seconds"]

#: The page's Content-Security-Policy: nothing may load; inline styles and data: images only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: Distinct colours for comparability groups (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")


# --------------------------------------------------------------------------- formatting

def _real(x: Any) -> Optional[float]:
    x = decode_nonfinite(x)
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def fmt_percent(x: Any) -> str:
    """A rate as a percentage with one decimal (``0.3645`` -> ``"36.5%"``); ``"n/a"`` for None."""
    v = _real(x)
    if v is None or math.isnan(v):
        return "n/a"
    return f"{v * 100:.1f}%"


def fmt_dollars(x: Any) -> str:
    """Dollars with sensible precision: cents from $1 up (thousands separated), three
    significant digits below; ``"unknown"`` for None (unknown cost is not zero) and
    ``"∞ (no success)"`` for an infinite cost per success.

    >>> fmt_dollars(0.0369021), fmt_dollars(12.3456), fmt_dollars(0)
    ('$0.0369', '$12.35', '$0.00')
    """
    v = _real(x)
    if v is None or math.isnan(v):
        return "unknown"
    if math.isinf(v):
        return "∞ (no success)" if v > 0 else "-∞"
    if v == 0:
        return "$0.00"
    sign, v = ("-" if v < 0 else ""), abs(v)
    if v >= 1:
        return f"{sign}${v:,.2f}"
    digits = f"{v:.{2 - math.floor(math.log10(v))}f}".rstrip("0")  # three significant digits
    whole, frac = digits.split(".")
    return f"{sign}${whole}.{frac.ljust(2, '0')}"


def fmt_interval(ci: Any, fmt: Callable[[Any], str]) -> str:
    """An interval ``[lo, hi]`` with each end formatted by ``fmt``; ``""`` when there is none."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or any(_real(c) is None for c in ci):
        return ""
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def fmt_count(x: Any) -> str:
    """A count with thousands separators (``298950`` -> ``"298,950"``); ``"n/a"`` for None."""
    v = _real(x)
    return "n/a" if v is None or not math.isfinite(v) else f"{round(v):,}"


def fmt_seconds(x: Any) -> str:
    """A duration: milliseconds below one second, else seconds with two decimals."""
    v = _real(x)
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:,.2f} s"


# --------------------------------------------------------------------------- the runs

@shape()
class RunSummary(NonFiniteJson):
    """What a report shows of one stored run (read by :func:`summarize_run`).

    ``pass_hat`` lists ``(k, pass^k, lo, hi)`` for k = 1..K; ``cost_per_success`` is ``inf``
    when nothing succeeded and None when the cost is unknown; ``reused`` says whether the
    run's episodes were reused from an earlier run (``"unknown"`` when the run does not say);
    ``gate`` is the gate's verdict (None when the run was not gated); ``group`` and ``series``
    are :func:`comparability_group` and :func:`series_of`.
    """

    run_id: str
    agent: str = ""
    model: str = ""
    created_at: str = ""
    suite: str = ""
    suite_version: str = ""
    simulator: str = ""
    scaffold: str = ""
    k: int = 1
    n_tasks: int = 0
    n_trials: int = 0
    n_success: int = 0
    success_rate: float = 0.0
    success_ci: tuple[float, float] = (0.0, 1.0)
    pass_hat: list[tuple[int, Optional[float], float, float]] = Field(default_factory=list)
    dollars: Optional[float] = None
    cost_per_success: Optional[float] = None
    cost_per_success_ci: Optional[tuple[float, float]] = None
    tokens: dict = Field(default_factory=dict)
    mean_latency_s: Optional[float] = None
    slices: list[dict] = Field(default_factory=list)
    errors: dict = Field(default_factory=dict)
    reused: str = "unknown"
    gate: Optional[dict] = None
    warnings: list[str] = Field(default_factory=list)

    @property
    def group(self) -> tuple[str, str, str, str]:
        return comparability_group(self)

    @property
    def series(self) -> tuple:
        return series_of(self)


def comparability_group(run: RunSummary) -> tuple[str, str, str, str]:
    """``(suite, suite version, simulator, scaffold)``: two runs are compared (and joined by a
    line) only when these are equal -- the gate's rule (``RunProvenance.comparability_key``)
    plus the suite's name."""
    return (run.suite, run.suite_version, run.simulator, run.scaffold)


def series_of(run: RunSummary) -> tuple:
    """The tracked series a run belongs to: its comparability group and its agent."""
    return comparability_group(run) + (run.agent,)


def _pair(x: Any) -> Optional[tuple[float, float]]:
    if isinstance(x, (list, tuple)) and len(x) == 2:
        lo, hi = _real(x[0]), _real(x[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


def _pass_hat_curve(report: Mapping) -> list[tuple[int, Optional[float], float, float]]:
    """pass^k for k = 1..K with the report's own interval method (``reporting.reliability``
    over each task's (n, c), which is all pass^k depends on), seeded as the run was."""
    per_task = report.get("per_task") or {}
    k_max = int(report.get("k") or 1)
    outcomes = {tid: [True] * int(t.get("c", 0)) + [False] * (int(t.get("n", 0)) - int(t.get("c", 0)))
                for tid, t in per_task.items()}
    if not outcomes:
        return []
    seed = int((report.get("detail") or {}).get("seed") or 0)
    curve = []
    for k in range(1, k_max + 1):
        r = reliability(outcomes, k=k, seed=seed, warn_deterministic=False)
        curve.append((k, r.pass_hat_k, r.pass_hat_k_ci[0], r.pass_hat_k_ci[1]))
    return curve


def _reused(manifest: Mapping, report: Mapping) -> str:
    """Whether the run's episodes were reused: a ``reused`` field of the manifest or the
    report's detail when the run records one, else the pipeline's episodes-stage cache hit;
    ``"unknown"`` when the run says nothing."""
    for where in (manifest, report.get("detail") or {}):
        val = where.get("reused")
        if isinstance(val, bool):
            return "yes" if val else "no"
        if isinstance(val, (int, float)) and not isinstance(val, bool):
            return f"{fmt_count(val)} episodes" if val else "no"
        if isinstance(val, Mapping):
            n = val.get("episodes", val.get("n"))
            src = val.get("from") or val.get("run_id")
            if n is not None or src:
                return (f"{fmt_count(n)} episodes" if n is not None else "yes") + \
                    (f" from run {src}" if src else "")
        if isinstance(val, str) and val:
            return val
    stage = (manifest.get("stages") or {}).get("episodes")
    if isinstance(stage, Mapping) and isinstance(stage.get("cached"), bool):
        return "yes (cached episodes stage)" if stage["cached"] else "no"
    return "unknown"


def summarize_run(manifest: Mapping, report: Mapping, gate: Optional[Mapping] = None) -> RunSummary:
    """A :class:`RunSummary` of one run from its manifest, report document and gate verdict
    (``gate`` defaults to the verdict the manifest recorded)."""
    prov = manifest.get("provenance") or (report.get("detail") or {}).get("run") or {}
    suite = manifest.get("suite") or {}
    cost = report.get("cost") or {}
    per_cost = cost.get("per_slice") or {}
    slices = []
    for label, s in sorted((report.get("per_slice") or {}).items()):
        c = per_cost.get(label) or {}
        slices.append({"slice": label, "tasks": s.get("n_tasks"), "trials": s.get("n_trials"),
                       "success_rate": _real(s.get("success_rate")),
                       "success_ci": _pair(s.get("success_ci")),
                       "pass_hat_k": _real(s.get("pass_hat_k")),
                       "dollars": _real(c.get("total_dollars")),
                       "cost_per_success": _real(c.get("cost_per_success")),
                       "cost_per_success_ci": _pair(c.get("cost_per_success_ci"))})
    has_cost = bool(cost) and _real(cost.get("total_dollars")) is not None
    tokens = {f: cost.get(f) for f in ("input_tokens", "cached_input_tokens", "output_tokens",
                                       "reasoning_tokens", "total_tokens") if cost.get(f) is not None}
    detail = report.get("detail") or {}
    agent = manifest.get("agent") or (manifest.get("source") or {}).get("kind") or \
        prov.get("model") or manifest.get("run_id", "")
    return RunSummary(
        run_id=str(manifest.get("run_id") or detail.get("run_id") or ""),
        agent=str(agent), model=str(prov.get("model") or ""),
        created_at=str(manifest.get("created_at") or ""),
        suite=str(suite.get("name") or ""),
        suite_version=str(prov.get("suite_version") or suite.get("version") or ""),
        simulator=str(prov.get("simulator") or ""), scaffold=str(prov.get("scaffold") or ""),
        k=int(report.get("k") or 1), n_tasks=int(report.get("n_tasks") or 0),
        n_trials=int(report.get("n_trials") or 0), n_success=int(report.get("n_success") or 0),
        success_rate=_real(report.get("success_rate")) or 0.0,
        success_ci=_pair(report.get("success_ci")) or (0.0, 1.0),
        pass_hat=_pass_hat_curve(report),
        dollars=_real(cost.get("total_dollars")) if has_cost else None,
        cost_per_success=_real(cost.get("cost_per_success")) if has_cost else None,
        cost_per_success_ci=_pair(cost.get("cost_per_success_ci")) if has_cost else None,
        tokens=tokens, mean_latency_s=_real(cost.get("mean_latency_s")), slices=slices,
        errors=dict(detail.get("errors") or {}), reused=_reused(manifest, report),
        gate=dict(gate) if gate else (dict(manifest["gate"]) if manifest.get("gate") else None),
        warnings=[str(w) for w in list(detail.get("warnings") or []) + list(cost.get("warnings") or [])])


def load_runs(store: Union[Store, str], run_ids: Sequence[str]) -> list[RunSummary]:
    """The :class:`RunSummary` of each stored run, in the order given.

    Reads ``runs/<id>/manifest.json``, ``runs/<id>/report.json`` and, when present,
    ``runs/<id>/gate.json``; a run without a manifest raises
    :class:`~ek_agents.errors.ArtifactNotFound` naming it and the store.
    """
    st = store if isinstance(store, Store) else Store(store)
    if isinstance(run_ids, str) or not run_ids:
        raise InvalidInput(f"a report needs a non-empty list of run ids, got {run_ids!r}: "
                           "give one or more RUN_IDs (see the store's runs/ folder)")
    runs = []
    for rid in run_ids:
        manifest = st.read_manifest(rid)
        report = st.read_json(run_key(rid, "report"))
        try:
            gate = st.read_json(run_key(rid, "gate"))
        except ArtifactNotFound:
            gate = None
        runs.append(summarize_run(manifest, report, gate))
    return runs


# --------------------------------------------------------------------------- Pareto frontier

def pareto_frontier(points: Sequence[tuple[Optional[float], Optional[float]]]) -> list[bool]:
    """For each ``(success, cost)`` point, whether it is on the Pareto frontier.

    A point is on it when no other point is at least as successful and at most as costly,
    one of the two strictly. A point with an unknown success or cost (None, NaN) is never on
    it and dominates nothing; an infinite cost (nothing succeeded) is a real, worst cost.
    Equal points do not dominate each other.

    >>> pareto_frontier([(0.5, 1.0), (0.5, 2.0), (0.9, None)])
    [True, False, False]
    """
    def known(p: tuple) -> bool:
        return all(_real(v) is not None and not math.isnan(_real(v)) for v in p)

    pts = [(_real(s), _real(c)) if known((s, c)) else None for s, c in points]
    out = []
    for i, p in enumerate(pts):
        if p is None:
            out.append(False)
            continue
        dominated = any(q is not None and j != i and q[0] >= p[0] and q[1] <= p[1]
                        and (q[0] > p[0] or q[1] < p[1]) for j, q in enumerate(pts))
        out.append(not dominated)
    return out


def _groups(runs: Sequence[RunSummary]) -> dict[tuple, int]:
    """Comparability group -> its index (in order of first appearance)."""
    idx: dict[tuple, int] = {}
    for r in runs:
        idx.setdefault(r.group, len(idx))
    return idx


def _frontier_by_group(runs: Sequence[RunSummary]) -> list[bool]:
    """Each run's place on the frontier of *its own* comparability group."""
    on = [False] * len(runs)
    for g in _groups(runs):
        members = [i for i, r in enumerate(runs) if r.group == g]
        flags = pareto_frontier([(runs[i].success_rate, runs[i].cost_per_success) for i in members])
        for i, f in zip(members, flags):
            on[i] = f
    return on


def _group_label(g: tuple) -> str:
    suite, version, sim, scaffold = g
    return (f"suite {suite or '?'} {version or '?'}, simulator {sim or 'none'}, "
            f"scaffold {scaffold or 'none'}")


def _series(runs: Sequence[RunSummary]) -> list[list[RunSummary]]:
    """Series with at least two runs, each ordered by creation time."""
    by: dict[tuple, list[RunSummary]] = {}
    for r in runs:
        by.setdefault(r.series, []).append(r)
    return [sorted(v, key=lambda r: (r.created_at, r.run_id)) for v in by.values() if len(v) >= 2]


# --------------------------------------------------------------------------- SVG

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


def _cost_vs_success_svg(runs: Sequence[RunSummary], on_frontier: Sequence[bool]) -> str:
    """Each run a point (cost per success, success) with whiskers for both intervals; each
    comparability group's frontier a step line; runs of different groups never joined."""
    groups = _groups(runs)
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
    legend = [(PALETTE[gi % len(PALETTE)], f"group {chr(65 + gi)}: {_group_label(g)}")
              for g, gi in groups.items()]
    return _svg("cost-vs-success", "success rate against cost per success", body, legend)


def _pass_hat_svg(r: RunSummary) -> str:
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


def _series_svg(series: Sequence[RunSummary]) -> str:
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


# --------------------------------------------------------------------------- tables

def _overview_rows(runs: Sequence[RunSummary], on: Sequence[bool]) -> list[list[str]]:
    groups = _groups(runs)
    rows = []
    for r, f in zip(runs, on):
        last = r.pass_hat[-1] if r.pass_hat else (r.k, None, 0.0, 1.0)
        rows.append([r.run_id, r.agent, r.model or "?", chr(65 + groups[r.group]),
                     f"{fmt_percent(r.success_rate)} {fmt_interval(r.success_ci, fmt_percent)}",
                     f"{fmt_percent(last[1])} {fmt_interval(last[2:], fmt_percent)}",
                     fmt_dollars(r.dollars),
                     f"{fmt_dollars(r.cost_per_success)} "
                     f"{fmt_interval(r.cost_per_success_ci, fmt_dollars)}".strip(),
                     fmt_count(r.tokens.get("total_tokens")), fmt_seconds(r.mean_latency_s),
                     fmt_count(sum(r.errors.values())), r.reused, "yes" if f else "no"])
    return rows


_OVERVIEW_HEAD = ["run", "agent", "model", "group", "success [95% CI]", "pass^K [95% CI]",
                  "dollars", "$/success [95% CI]", "tokens", "mean latency", "errored",
                  "episodes reused", "on frontier"]


def _slice_rows(r: RunSummary) -> list[list[str]]:
    return [[s["slice"], fmt_count(s["tasks"]), fmt_count(s["trials"]),
             f"{fmt_percent(s['success_rate'])} {fmt_interval(s['success_ci'], fmt_percent)}",
             fmt_percent(s["pass_hat_k"]), fmt_dollars(s["dollars"]),
             f"{fmt_dollars(s['cost_per_success'])} "
             f"{fmt_interval(s['cost_per_success_ci'], fmt_dollars)}".strip()]
            for s in r.slices]


def _verdict(gate: Mapping) -> str:
    if gate.get("refused"):
        return f"REFUSED: {gate['refused']}"
    return "passed" if gate.get("passed") else "FAILED"


def _token_rows(r: RunSummary) -> list[list[str]]:
    return [[k.replace("_", " "), fmt_count(v)] for k, v in r.tokens.items()]


def _html_table(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str) -> str:
    return (f'<table class="{cls}"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row)
                                               + "</tr>" for row in rows) + "</tbody></table>")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(c: Any) -> str:
        return str(c).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


_SLICE_HEAD = ["slice", "tasks", "trials", "success [95% CI]", "pass^K", "dollars",
               "$/success [95% CI]"]
_CSS = """
.scroll{overflow-x:auto}td{white-space:nowrap}table.overview{font-size:12px}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;
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


def render_html(runs: Sequence[RunSummary]) -> str:
    """One self-contained HTML page for ``runs`` (inline CSS and SVG; nothing loaded)."""
    runs = list(runs)
    if not runs:
        raise InvalidInput("render_html needs at least one RunSummary (see load_runs)")
    on = _frontier_by_group(runs)
    groups = _groups(runs)
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(_title(runs))}</title><style>{_CSS}</style></head><body>",
           f"<h1>{_e(_title(runs))}</h1>",
           '<h2 id="compare">Success against cost per success</h2>',
           '<p class="note">Each run is a point with 95% intervals on both axes; the dashed line '
           'is the Pareto frontier of each group of comparable runs (a run is on it when no '
           'other run is at least as successful and at most as costly, one of them strictly; '
           'ringed). Runs of different groups (suite version, simulator or scaffold differ) '
           'are drawn with different colours and markers and are never joined.</p>',
           _cost_vs_success_svg(runs, on)]
    if len(groups) > 1:
        out.append('<p class="note incomparable">Not comparable: ' + "; ".join(
            f"group {chr(65 + gi)} = {_e(_group_label(g))}" for g, gi in groups.items()) + "</p>")
    unplaced = [r.run_id for r in runs if r.cost_per_success is None
                or not math.isfinite(r.cost_per_success) or r.cost_per_success <= 0]
    if unplaced:
        out.append(f'<p class="note">Not plotted (unknown, zero or infinite cost per success): '
                   f'{_e(", ".join(unplaced))}</p>')
    out.append('<div class="scroll">' + _html_table(_OVERVIEW_HEAD, _overview_rows(runs, on),
                                                    "overview") + "</div>")
    for series in _series(runs):
        out += [f'<h2>Series over time: {_e(series[0].agent)} '
                f'(group {chr(65 + groups[series[0].group])})</h2>', _series_svg(series)]
    for r in runs:
        out += [f'<h2 id="run-{_e(r.run_id)}">Run {_e(r.run_id)}</h2>',
                f'<p>agent <code>{_e(r.agent)}</code>, model <code>{_e(r.model or "?")}</code>, '
                f'{_e(_group_label(r.group))}; k = {r.k}, {fmt_count(r.n_tasks)} tasks, '
                f'{fmt_count(r.n_trials)} trials, created {_e(r.created_at or "?")}; episodes '
                f'reused: {_e(r.reused)}</p>',
                f'<p>success <b>{fmt_percent(r.success_rate)}</b> '
                f'{fmt_interval(r.success_ci, fmt_percent)}, dollars <b>{_e(fmt_dollars(r.dollars))}'
                f'</b>, cost per success <b>{_e(fmt_dollars(r.cost_per_success))}</b> '
                f'{_e(fmt_interval(r.cost_per_success_ci, fmt_dollars))}, mean latency '
                f'{fmt_seconds(r.mean_latency_s)}</p>']
        if r.gate:
            cls = "pass" if r.gate.get("passed") and not r.gate.get("refused") else "fail"
            out.append(f'<p class="gate">Gate vs baseline <code>{_e(r.gate.get("baseline", "?"))}'
                       f'</code>: <span class="{cls}">{_e(_verdict(r.gate))}</span></p>')
            items = list(r.gate.get("reasons") or []) + \
                [f"warning: {w}" for w in r.gate.get("warnings") or []]
            if items:
                out.append("<ul class=\"gate-reasons\">" + "".join(f"<li>{_e(x)}</li>" for x in items)
                           + "</ul>")
        out += ["<h3>pass^k</h3>", _pass_hat_svg(r),
                _html_table(["k", "pass^k", "95% CI"],
                            [[str(k), fmt_percent(v), fmt_interval((lo, hi), fmt_percent)]
                             for k, v, lo, hi in r.pass_hat], "pass-hat")]
        if r.slices:
            out += ["<h3>Per slice</h3>", _html_table(_SLICE_HEAD, _slice_rows(r), "slices")]
        if r.tokens:
            out += ["<h3>Tokens</h3>", _html_table(["tokens", "count"], _token_rows(r), "tokens")]
        out += ["<h3>Errored trials</h3>",
                _html_table(["kind", "trials"], [[k, fmt_count(v)] for k, v in sorted(r.errors.items())],
                            "errors") if r.errors else '<p class="note">none</p>']
        if r.warnings:
            out.append("<ul class=\"warnings\">" + "".join(f"<li>{_e(w)}</li>" for w in r.warnings)
                       + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def render_markdown(runs: Sequence[RunSummary]) -> str:
    """The report as Markdown: the overview table (frontier and groups marked), each series,
    then per run its pass^k table, slices, tokens, errored trials and gate verdict."""
    runs = list(runs)
    if not runs:
        raise InvalidInput("render_markdown needs at least one RunSummary (see load_runs)")
    on = _frontier_by_group(runs)
    groups = _groups(runs)
    lines = [f"# {_title(runs)}", ""]
    lines += _md_table(_OVERVIEW_HEAD, _overview_rows(runs, on))
    lines += ["", "Groups of comparable runs (runs of different groups are never compared):"]
    lines += [f"- group {chr(65 + gi)}: {_group_label(g)}" for g, gi in groups.items()]
    for series in _series(runs):
        lines += ["", f"## Series over time: {series[0].agent} (group {chr(65 + groups[series[0].group])})",
                  ""]
        lines += _md_table(["created", "run", "success [95% CI]", "$/success"],
                           [[r.created_at or "?", r.run_id,
                             f"{fmt_percent(r.success_rate)} {fmt_interval(r.success_ci, fmt_percent)}",
                             fmt_dollars(r.cost_per_success)] for r in series])
    for r in runs:
        lines += ["", f"## Run `{r.run_id}`", "",
                  f"agent `{r.agent}`, model `{r.model or '?'}`, {_group_label(r.group)}; k = {r.k}, "
                  f"{fmt_count(r.n_tasks)} tasks, {fmt_count(r.n_trials)} trials; episodes reused: "
                  f"{r.reused}"]
        if r.gate:
            lines += ["", f"**Gate** vs baseline `{r.gate.get('baseline', '?')}`: {_verdict(r.gate)}"]
            lines += [f"- {x}" for x in r.gate.get("reasons") or []]
            lines += [f"- warning: {w}" for w in r.gate.get("warnings") or []]
        lines += [""] + _md_table(["k", "pass^k", "95% CI"],
                                  [[str(k), fmt_percent(v), fmt_interval((lo, hi), fmt_percent)]
                                   for k, v, lo, hi in r.pass_hat])
        if r.slices:
            lines += [""] + _md_table(_SLICE_HEAD, _slice_rows(r))
        if r.tokens:
            lines += ["", "Tokens: " + ", ".join(f"{k.replace('_', ' ')} {fmt_count(v)}"
                                                 for k, v in r.tokens.items())
                      + f"; mean latency {fmt_seconds(r.mean_latency_s)}"]
        lines += ["", "Errored trials: " + (", ".join(f"{k} {fmt_count(v)}" for k, v in
                                                      sorted(r.errors.items())) or "none")]
        if r.warnings:
            lines += ["", "Warnings:"] + [f"- {w}" for w in r.warnings]
    return "\n".join(lines) + "\n"


def write_report(store: Union[Store, str], run_ids: Sequence[str], *, html: Optional[str] = None,
                 markdown: Optional[str] = None) -> dict[str, str]:
    """Render the runs and write the HTML and/or Markdown report to the given paths or URLs
    (through ``ek_agents.store``); return ``{"html": path, "markdown": path}`` of what was
    written. With neither path, nothing is written and ``{}`` is returned."""
    runs = load_runs(store, run_ids)
    out = {}
    if html is not None:
        write_url(html, render_html(runs).encode("utf-8"), what="HTML report")
        out["html"] = str(html)
    if markdown is not None:
        write_url(markdown, render_markdown(runs).encode("utf-8"), what="Markdown report")
        out["markdown"] = str(markdown)
    return out
