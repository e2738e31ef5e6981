"""A monitored series: labels per window, each window's corrected rate, and the alert.

The series is recomputed from what is stored -- the window records (judge counts per slice,
dollars), the labels each window received (``ek-agents label WINDOW FILE``) -- so a label that
arrives after its window updates that window's row, and the rows are never out of date with
their inputs (``monitor/<series>/series.json`` holds the last computation, for reports).

A window's judge error comes from its own labels plus every earlier window's (or, with
``label_windows=N``, the labels of its last N windows, itself included: for a judge that may
drift). Its alert compares it with the windows before it pooled, or with a promoted baseline
window (``baseline=``); see :mod:`ek_agents.stats.windowrates` for the statistics and the
false-alarm control.
"""
from __future__ import annotations

import json
import random
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..adapters.judge_endpoint import DEFAULT_RUBRIC, EndpointJudge
from ..errors import InvalidInput
from ..modelcosts import markdown_table
from ..labels import LabelError, Labels, labels_doc, labels_of_doc, read_labels
from ..prices import load_prices
from ..records.documents import read_run_doc
from ..records.manifest import RunManifest
from ..records.stagecache import write_doc
from ..stats.windowrates import (LabelTable, SliceCounts, WindowPoint, stratified_judge_rate,
                                 window_alert, window_rate)
from ..store import Store, open_store, run_key, write_url
from ..store.sources import monitor_key
from .window import (WindowOptions, WindowRecord, iter_window_episodes, load_ledger, load_window,
                     run_window, window_manifest)

__all__ = ["SeriesOptions", "SeriesRow", "evaluate_series", "store_window_labels",
           "window_labels", "window_sentence", "plan_window_labels", "window_report",
           "monitor_window", "run_monitor", "window_markdown"]


class SeriesOptions(BaseModel):
    """How a series' windows are corrected and compared."""

    tolerance: float = Field(default=0.0, ge=0.0, lt=1.0)
    cost_tolerance: float = Field(default=0.0, ge=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    horizon: int = Field(default=30, ge=2)
    label_windows: Optional[int] = Field(default=None, ge=1)
    baseline: Optional[str] = None


class SeriesRow(BaseModel):
    """One window of the series, as the report and the alert read it."""

    window_id: str
    traces: int
    judged: int
    labels: int
    labels_used: int
    judge_rate: Optional[float] = None
    judge_ci: Optional[list[float]] = None
    corrected: Optional[float] = None
    corrected_ci: Optional[list[float]] = None
    sensitivity: Optional[float] = None
    specificity: Optional[float] = None
    no_rate_reason: Optional[str] = None
    dollars_per_success: Optional[float] = None
    agent_dollars: Optional[float] = None
    agent_per_model: dict[str, float] = Field(default_factory=dict)
    evaluation_dollars: Optional[float] = None
    alert: bool = False
    reasons: list[str] = Field(default_factory=list)
    reference: str = ""
    sentence: str = ""


def store_window_labels(store: Any, series: str, window_id: str, source: Any) -> Labels:
    """Read a labels file for a stored window and store it with the window: the ``labels``
    document of the window's run, listed (with its digest) in the run's manifest, whose
    ``inputs.labels`` records the labels' digest; what the audit checks. Every label must name
    a judged episode of the window."""
    st = open_store(store)
    rec = load_window(st, series, window_id)
    manifest = window_manifest(st, series, window_id)
    if manifest is None:
        raise LabelError(f"labels for window {window_id!r}: the window's run is not recorded in "
                         f"store {st.url!r}; run `ek-agents monitor` for it first")
    labs = read_labels(source)
    unknown = [f"{x.task_id}/{x.trial}" for x in labs.labels
               if f"{x.task_id}/{x.trial}" not in rec.verdicts]
    if unknown:
        raise LabelError(f"labels for window {window_id!r}: {len(unknown)} label(s) name no judged "
                         f"trace of the window (first: {unknown[0]!r}); label the lines "
                         "`ek-agents plan-labels` wrote for this window")
    ref = write_doc(st, window_id, "labels", labels_doc(labs))
    doc = manifest.to_dict()
    doc["artifacts"] = {**doc["artifacts"], ref.key: ref.sha256}
    doc["inputs"] = {**doc["inputs"], "labels": labs.digest}
    st.write_manifest(window_id, RunManifest.from_dict(doc))
    return labs


def window_labels(st: Store, series: str, window_id: str) -> Optional[Labels]:
    """The labels stored with a window (None when it has none yet), verified against the
    window's manifest (DigestMismatch when they changed after they were stored)."""
    manifest = window_manifest(st, series, window_id)
    if manifest is None or run_key(window_id, "labels") not in manifest.artifacts:
        return None
    return labels_of_doc(read_run_doc(st, manifest, "labels"), where=run_key(window_id, "labels"))


def _table(rec: WindowRecord, labs: Optional[Labels]) -> LabelTable:
    if labs is None:
        return LabelTable()
    pairs = [(x.gold, rec.verdicts[f"{x.task_id}/{x.trial}"]) for x in labs.labels
             if f"{x.task_id}/{x.trial}" in rec.verdicts]
    return LabelTable.of([g for g, _ in pairs], [h for _, h in pairs])


def window_sentence(row: SeriesRow) -> str:
    """What the window's numbers rest on, in one sentence."""
    def pct(x: Optional[float]) -> str:
        return "n/a" if x is None else f"{100 * x:.1f}%"
    base = (f"window {row.window_id}: {row.traces} traces, {row.judged} judged, {row.labels} "
            f"labels ({row.labels_used} used for the judge's error)")
    if row.corrected is None:
        return f"{base}; judge says {pct(row.judge_rate)}; no corrected rate: {row.no_rate_reason}"
    cps = ("" if row.dollars_per_success is None
           else f"; ${row.dollars_per_success:.4f} per corrected success")
    ev = "" if row.evaluation_dollars is None else f"; evaluation ${row.evaluation_dollars:.4f}"
    return (f"{base}; judge says {pct(row.judge_rate)}, corrected {pct(row.corrected)} "
            f"[{pct(row.corrected_ci[0])}, {pct(row.corrected_ci[1])}]{cps}{ev}")


def evaluate_series(store: Any, series: str, options: Optional[SeriesOptions] = None, *,
                    record: bool = True) -> list[SeriesRow]:
    """Every window's row, in the order the windows ran (and, with ``record``, ``series.json``
    rewritten; a reader such as a window's report passes ``record=False`` and writes nothing)."""
    st = open_store(store)
    opts = options or SeriesOptions()
    ledger = load_ledger(st, series)
    if opts.baseline is not None and opts.baseline not in ledger.windows:
        raise InvalidInput(f"baseline window {opts.baseline!r} is not a window of series "
                           f"{series!r} (its windows: {ledger.windows[-5:]}...)")
    rows: list[SeriesRow] = []
    tables: list[LabelTable] = []
    points: dict[str, WindowPoint] = {}
    order: list[str] = []
    for wid in ledger.windows:
        rec = load_window(st, series, wid)
        labs = window_labels(st, series, wid)
        own = _table(rec, labs)
        tables.append(own)
        judged = sum(s["judged"] for s in rec.slices.values())
        row = SeriesRow(window_id=wid, traces=rec.episodes, judged=judged, labels=own.n,
                        labels_used=0, agent_dollars=rec.agent_dollars,
                        agent_per_model={m: r.get("dollars", 0.0)
                                         for m, r in rec.agent_per_model.items()},
                        evaluation_dollars=rec.evaluation_dollars)
        if not judged:
            row.no_rate_reason = "no trace judged" if rec.episodes else "no new trace"
            row.sentence = window_sentence(row)
            rows.append(row)
            continue
        slices = {k: SliceCounts(**v) for k, v in rec.slices.items()}
        q, vq = stratified_judge_rate(slices)
        row.judge_rate = q
        used = tables if opts.label_windows is None else tables[-opts.label_windows:]
        pooled = LabelTable()
        for t in used:
            pooled = pooled + t
        row.labels_used = pooled.n
        point = WindowPoint(judge_rate=q, judge_var=vq, traces=rec.episodes,
                            dollars_per_trace=rec.dollars_per_trace, dollars_var=rec.dollars_var)
        try:
            rate = window_rate(slices, pooled, own=own, alpha=opts.alpha)
        except InvalidInput as exc:
            row.no_rate_reason = str(exc).split(": ", 1)[-1]
            rate = None
        if rate is not None:
            row.judge_ci = list(rate.judge_ci)
            row.corrected, row.corrected_ci = rate.estimate, list(rate.ci)
            row.sensitivity, row.specificity = rate.sensitivity, rate.specificity
            if rec.dollars_per_trace is not None and rate.estimate > 0:
                row.dollars_per_success = rec.dollars_per_trace / rate.estimate
            if opts.baseline is not None and wid != opts.baseline and opts.baseline in points:
                ref, row.reference = [points[opts.baseline]], f"baseline {opts.baseline}"
            elif opts.baseline is None:
                ref = [points[w] for w in order]
                row.reference = f"{len(ref)} earlier windows" if ref else "none (first window)"
            else:
                ref, row.reference = [], "none"
            al = window_alert(point, ref, rate, tolerance=opts.tolerance,
                              cost_tolerance=opts.cost_tolerance, alpha=opts.alpha,
                              horizon=opts.horizon)
            row.alert, row.reasons = al.alert, list(al.reasons)
        points[wid] = point
        order.append(wid)
        row.sentence = window_sentence(row)
        rows.append(row)
    if not record:
        return rows
    st.write_json(monitor_key(series, "series.json"),
                  {"schema_version": 1, "series": series, "options": opts.model_dump(mode="json"),
                   "rows": [r.model_dump(mode="json") for r in rows]})
    return rows


def plan_window_labels(store: Any, series: str, window_id: str, n: int, *, seed: int = 0,
                       path: Optional[str] = None) -> list[dict]:
    """Pick ``n`` judged episodes of a window to label, stratified by slice (round-robin over the
    slices in a seeded order), and (with ``path``) write the file a person fills in: one line
    per trace with ``task_id``, ``trial``, ``gold: null``, its slice, the request and the
    answer -- never the judge's verdict (it would anchor the person)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LabelError(f"plan_window_labels: n must be a positive number of labels, got {n!r}")
    st = open_store(store)
    rec = load_window(st, series, window_id)
    by: dict[str, list] = {}
    for ep in iter_window_episodes(st, series, window_id):
        if f"{ep.task_id}/{ep.meta.get('trial', 0)}" in rec.verdicts:
            by.setdefault(ep.meta.get("slice", "all"), []).append(ep)
    if not by:
        raise LabelError(f"window {window_id!r} has no judged trace to label; run the monitor "
                         "with a judge (--judge-model)")
    rng = random.Random(f"{seed}/{window_id}")
    order = sorted(by)
    rng.shuffle(order)
    pools = {s: rng.sample(by[s], len(by[s])) for s in order}
    chosen: list = []
    while len(chosen) < n and any(pools.values()):
        for s in order:
            if pools[s] and len(chosen) < n:
                chosen.append(pools[s].pop())
    rows = [{"task_id": str(ep.task_id), "trial": ep.meta.get("trial", 0), "gold": None,
             "slice": ep.meta.get("slice"), "input": ep.meta.get("input"),
             "output": ep.output} for ep in chosen]
    if path is not None:
        write_url(path, "".join(json.dumps(r, default=str) + "\n" for r in rows).encode(),
                  what="labels file")
    return rows


def window_report(rec: WindowRecord, row: Optional[SeriesRow]) -> dict:
    """The JSON report of one window: what it read, judged and cost, and its row of the series."""
    return {"schema_version": 1, "series": rec.series, "window_id": rec.window_id,
            "reused": rec.reused, "source": rec.source, "episodes": rec.episodes,
            "new_episodes": rec.new_episodes,
            "ingest": rec.counts.model_dump(mode="json"),
            "judge_calls": rec.judge_calls, "judge_cached": rec.judge_cached,
            "success": None if row is None else {
                "judge_rate": row.judge_rate, "judge_ci": row.judge_ci,
                "corrected": row.corrected, "corrected_ci": row.corrected_ci,
                "sensitivity": row.sensitivity, "specificity": row.specificity,
                "labels": row.labels, "labels_used": row.labels_used,
                "no_rate_reason": row.no_rate_reason, "known": row.corrected is not None},
            "cost": {"agent_dollars": rec.agent_dollars, "per_model": rec.agent_per_model,
                     "tokens": rec.agent_tokens,
                     "dollars_per_success": None if row is None else row.dollars_per_success,
                     "evaluation_dollars": rec.evaluation_dollars,
                     "evaluation_per_model": rec.evaluation_per_model},
            "alert": None if row is None else {"alert": row.alert, "reasons": row.reasons,
                                               "reference": row.reference},
            "sentence": "" if row is None else row.sentence}


def monitor_window(source: Any, series: str, *, store: Any = None, judges: Any = (),
                   prices: Any = None, window_id: Optional[str] = None,
                   options: Optional[WindowOptions] = None,
                   series_options: Optional[SeriesOptions] = None) -> tuple:
    """One window run and the series re-evaluated: ``(record, its row or None, report)``."""
    st = open_store(store)
    rec = run_window(source, series, store=st, judges=judges, prices=prices,
                     window_id=window_id, options=options)
    rows = evaluate_series(st, series, series_options)
    row = next((r for r in rows if r.window_id == rec.window_id), None)
    return rec, row, window_report(rec, row)


def window_markdown(rep: dict) -> str:
    """The window's report as Markdown: the sentence, the alert, agent and evaluation dollars."""
    lines = [f"# {rep['series']}: window {rep['window_id']}", "", rep["sentence"] or "", ""]
    alert = rep.get("alert") or {}
    lines.append(("**ALERT**: " + "; ".join(alert.get("reasons") or [])) if alert.get("alert")
                 else f"no alert (reference: {alert.get('reference') or 'none'})")
    lines += [""] + markdown_table(
        ["model", "calls", "dollars"],
        [[m, int(r["calls"]), "unknown" if r.get("dollars") is None else f"{r['dollars']:.6f}"]
         for m, r in sorted(rep["cost"]["per_model"].items())])
    ev = rep["cost"]["evaluation_dollars"]
    lines += ["", f"evaluation cost (the judges' own calls): "
                  f"{'none' if ev is None else f'${ev:.6f}'}; {rep['judge_calls']} judge calls, "
                  f"{rep['judge_cached']} verdicts reused" + (" (window reused as stored)"
                                                             if rep["reused"] else "")]
    return "\n".join(lines)


def run_monitor(source: Any, series: str, *, store: Any = None, window_id: Optional[str] = None,
                window: Optional[dict] = None, series_options: Optional[dict] = None,
                prices: Optional[str] = None, judge_model: Optional[str] = None,
                judge_base_url: Optional[str] = None, judge_rubric: Optional[str] = None,
                judge_api_key: Optional[str] = None) -> dict:
    """:func:`monitor_window` from plain parameters (what a pipeline task passes): the judge an
    :class:`~ek_agents.adapters.judge_endpoint.EndpointJudge` when ``judge_model`` is given,
    ``prices`` a catalog path. The window's report, with its Markdown under ``"markdown"``."""
    judges = []
    if judge_model:
        judges.append(EndpointJudge(judge_model, judge_base_url, judge_rubric or DEFAULT_RUBRIC,
                                    api_key=judge_api_key))
    _, _, rep = monitor_window(source, series, store=store, judges=judges,
                               prices=load_prices(prices) if prices else None,
                               window_id=window_id, options=WindowOptions(**(window or {})),
                               series_options=SeriesOptions(**(series_options or {})))
    rep["markdown"] = window_markdown(rep)
    return rep
