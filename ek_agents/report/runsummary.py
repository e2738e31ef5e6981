"""What a report shows of a stored run, and the rules it compares runs by.

:func:`load_runs` reads each run's ``manifest.json``, ``report.json`` and (when the pipeline
gated it) ``gate.json`` from a :class:`~ek_agents.store.Store` into a :class:`RunSummary`:
success rate and its interval, pass^k for k = 1..K with intervals, dollars, cost per success
and its interval, tokens, latency, slices, errored trials by kind, whether episodes were
reused, the gate's verdict. Runs are compared only within a comparability group (suite,
suite version, simulator, scaffold); a tracked series is a group and an agent.

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

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional, Union

from pydantic import Field

from ..base import NonFiniteJson, decode_nonfinite
from ..core import shape
from ..errors import InvalidInput
from ..modelcosts import upper_bound_reason
from ..records import documents
from ..reporting import pass_hat_curve
from ..store import Store, open_store, run_key

__all__ = ["RunSummary", "SliceSummary", "load_runs", "summarize_run", "pareto_frontier", "frontier_flags",
           "comparability_group", "group_index", "group_label", "series_of", "series_runs",
           "as_number", "fmt_percent", "fmt_dollars", "fmt_interval", "fmt_count", "fmt_seconds"]


# --------------------------------------------------------------------------- formatting

def as_number(x: Any) -> Optional[float]:
    """A stored number as a float (``"Infinity"`` read back as ``inf``); None when not a number."""
    x = decode_nonfinite(x)
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def fmt_percent(x: Any) -> str:
    """A rate as a percentage with one decimal (``0.3645`` -> ``"36.5%"``); ``"n/a"`` for None."""
    v = as_number(x)
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
    v = as_number(x)
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
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or any(as_number(c) is None for c in ci):
        return ""
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


def fmt_count(x: Any) -> str:
    """A count with thousands separators (``298950`` -> ``"298,950"``); ``"n/a"`` for None."""
    v = as_number(x)
    return "n/a" if v is None or not math.isfinite(v) else f"{round(v):,}"


def fmt_seconds(x: Any) -> str:
    """A duration: milliseconds below one second, else seconds with two decimals."""
    v = as_number(x)
    if v is None or not math.isfinite(v):
        return "n/a"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:,.2f} s"


# --------------------------------------------------------------------------- the runs

@shape()
class SliceSummary(NonFiniteJson):
    """One slice of a run: its tasks and trials, success and its interval, pass^K, dollars and
    cost per success with its interval (None where the run does not say)."""

    slice: str
    tasks: int = 0
    trials: int = 0
    success_rate: Optional[float] = None
    success_ci: Optional[tuple[float, float]] = None
    pass_hat_k: Optional[float] = None
    dollars: Optional[float] = None
    cost_per_success: Optional[float] = None
    cost_per_success_ci: Optional[tuple[float, float]] = None


@shape()
class RunSummary(NonFiniteJson):
    """What a report shows of one stored run (read by :func:`summarize_run`).

    ``pass_hat`` lists ``(k, pass^k, lo, hi)`` for k = 1..K; ``cost_per_success`` is ``inf``
    when nothing succeeded and None when the cost is unknown; ``reused`` says whether the
    run's episodes were reused from an earlier run (``"unknown"`` when the run does not say);
    ``gate`` is the gate's verdict (None when the run was not gated); ``group`` and ``series``
    are :func:`comparability_group` and :func:`series_of`. ``per_model`` is the cost report's
    per-model breakdown (empty when the episodes record no model calls) and ``upper_bound``
    says why the dollars are an upper bound (None when they are not).
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
    slices: list[SliceSummary] = Field(default_factory=list)
    errors: dict = Field(default_factory=dict)
    reused: str = "unknown"
    gate: Optional[dict] = None
    warnings: list[str] = Field(default_factory=list)
    per_model: dict = Field(default_factory=dict)
    upper_bound: Optional[str] = None
    judge: Optional[dict] = None
    """``report.detail["judge_corrected"]`` (a judged run with labels: the judge's raw rate
    beside the corrected one); None without labels."""
    evaluation_dollars: Optional[float] = None
    """What the judges' own calls cost (``cost.evaluation_dollars``): never in ``dollars`` nor
    in ``cost_per_success``; None when no judge ran or no price list priced its calls."""
    evaluation_per_model: dict = Field(default_factory=dict)
    """The judges' calls per model (``cost.evaluation_per_model``); empty when no judge ran."""
    source: dict = Field(default_factory=dict)
    """The manifest's ``source`` (what the run was made from: ``{"kind": "monitor-window",
    "series": ..., "window": ...}`` for a monitor window)."""

    def to_dict(self) -> dict:
        """A JSON-safe dict (non-finite numbers as strings), its slices included."""
        return {**super().to_dict(), "slices": [s.to_dict() for s in self.slices]}

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
        lo, hi = as_number(x[0]), as_number(x[1])
        if lo is not None and hi is not None:
            return (lo, hi)
    return None


def _pass_hat_curve(report: Mapping) -> list[tuple[int, Optional[float], float, float]]:
    """pass^k for k = 1..K with the report's own interval method (``reporting.pass_hat_curve``:
    what ``reporting.reliability`` reports at each k, from each task's (n, c), which is all
    pass^k depends on), seeded as the run was."""
    per_task = report.get("per_task") or {}
    k_max = int(report.get("k") or 1)
    counts = {}
    for tid, t in per_task.items():
        c = max(0, int(t.get("c", 0)))
        counts[str(tid)] = (c + max(0, int(t.get("n", 0)) - c), c)
    if not counts:
        return []
    seed = int((report.get("detail") or {}).get("seed") or 0)
    return pass_hat_curve(counts, k_max, seed=seed)


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
            src = val.get("from") or val.get("from_run") or val.get("run_id")
            if n is not None or src:
                return (f"{fmt_count(n)} episodes" if n is not None else "yes") + \
                    (f" from run {src}" if src else "")
        if isinstance(val, str) and val:
            return val
    # a run streamed from its segments records it in its parameters (it has no episodes stage)
    stage = ((manifest.get("stages") or {}).get("episodes")
             or (manifest.get("parameters") or {}).get("reused"))
    if isinstance(stage, Mapping) and isinstance(stage.get("reused"), int):  # the run's record
        src = stage.get("reused_from")
        return (f"{fmt_count(stage['reused'])} episodes" + (f" from run {src}" if src else "")
                if stage["reused"] else "no")
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
        slices.append(SliceSummary(
            slice=label, tasks=int(s.get("n_tasks") or 0), trials=int(s.get("n_trials") or 0),
            success_rate=as_number(s.get("success_rate")), success_ci=_pair(s.get("success_ci")),
            pass_hat_k=as_number(s.get("pass_hat_k")), dollars=as_number(c.get("total_dollars")),
            cost_per_success=as_number(c.get("cost_per_success")),
            cost_per_success_ci=_pair(c.get("cost_per_success_ci"))))
    has_cost = bool(cost) and as_number(cost.get("total_dollars")) is not None
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
        success_rate=as_number(report.get("success_rate")) or 0.0,
        success_ci=_pair(report.get("success_ci")) or (0.0, 1.0),
        pass_hat=_pass_hat_curve(report),
        dollars=as_number(cost.get("total_dollars")) if has_cost else None,
        cost_per_success=as_number(cost.get("cost_per_success")) if has_cost else None,
        cost_per_success_ci=_pair(cost.get("cost_per_success_ci")) if has_cost else None,
        tokens=tokens, mean_latency_s=as_number(cost.get("mean_latency_s")), slices=slices,
        errors=dict(detail.get("errors") or {}), reused=_reused(manifest, report),
        gate=dict(gate) if gate else (dict(manifest["gate"]) if manifest.get("gate") else None),
        warnings=[str(w) for w in list(detail.get("warnings") or []) + list(cost.get("warnings") or [])],
        per_model=dict(cost.get("per_model") or {}), upper_bound=upper_bound_reason(cost),
        judge=dict(detail["judge_corrected"]) if detail.get("judge_corrected") else None,
        evaluation_dollars=as_number(cost.get("evaluation_dollars")),
        evaluation_per_model=dict(cost.get("evaluation_per_model") or {}),
        source=dict(manifest.get("source") or {}))


def load_runs(store: Union[Store, str], run_ids: Sequence[str]) -> list[RunSummary]:
    """The :class:`RunSummary` of each stored run, in the order given.

    Reads ``runs/<id>/manifest.json``, ``runs/<id>/report.json`` and, when the manifest lists
    it, ``runs/<id>/gate.json`` (``records.documents.read_run_doc``: each checked against the manifest's
    sha256); a run without a manifest raises :class:`~ek_agents.errors.ArtifactNotFound`
    naming it and the store.
    """
    st = open_store(store)
    if isinstance(run_ids, str) or not run_ids:
        raise InvalidInput(f"a report needs a non-empty list of run ids, got {run_ids!r}: "
                           "give one or more RUN_IDs (the ids 'ek-agents run' printed)")
    runs = []
    for rid in run_ids:  # verified reads: a document edited after its run is refused
        manifest = documents.read_manifest(st, rid)
        report = documents.read_run_doc(st, manifest, "report")
        gate = (documents.read_run_doc(st, manifest, "gate")
                if run_key(rid, "gate") in manifest.artifacts else None)
        runs.append(summarize_run(manifest.to_dict(), report, gate))
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
        return all(as_number(v) is not None and not math.isnan(as_number(v)) for v in p)

    pts = [(as_number(s), as_number(c)) if known((s, c)) else None for s, c in points]
    out = []
    for i, p in enumerate(pts):
        if p is None:
            out.append(False)
            continue
        dominated = any(q is not None and j != i and q[0] >= p[0] and q[1] <= p[1]
                        and (q[0] > p[0] or q[1] < p[1]) for j, q in enumerate(pts))
        out.append(not dominated)
    return out


def group_index(runs: Sequence[RunSummary]) -> dict[tuple, int]:
    """``{comparability group: its index}``, in order of first appearance (group A, B, ...)."""
    idx: dict[tuple, int] = {}
    for r in runs:
        idx.setdefault(r.group, len(idx))
    return idx


def frontier_flags(runs: Sequence[RunSummary]) -> list[bool]:
    """Whether each run is on the Pareto frontier of *its own* comparability group."""
    on = [False] * len(runs)
    for g in group_index(runs):
        members = [i for i, r in enumerate(runs) if r.group == g]
        flags = pareto_frontier([(runs[i].success_rate, runs[i].cost_per_success) for i in members])
        for i, f in zip(members, flags):
            on[i] = f
    return on


def group_label(g: tuple) -> str:
    """A comparability group for people: ``suite shop 1.0, simulator none, scaffold v1``."""
    suite, version, sim, scaffold = g
    return (f"suite {suite or '?'} {version or '?'}, simulator {sim or 'none'}, "
            f"scaffold {scaffold or 'none'}")


def series_runs(runs: Sequence[RunSummary]) -> list[list[RunSummary]]:
    """The tracked series (:func:`series_of`) with at least two runs, each oldest first."""
    by: dict[tuple, list[RunSummary]] = {}
    for r in runs:
        by.setdefault(r.series, []).append(r)
    return [sorted(v, key=lambda r: (r.created_at, r.run_id)) for v in by.values() if len(v) >= 2]
