"""Audit a monitor window: its run recomputed, and the series' index entry against it.

A window is a run (``stages.windowrun``), so :func:`audit_window` is first the audit of that run
(:func:`ek_agents.stages.audit.audit`: every artifact's sha256, every episode read again from
the segments, the judged sample drawn again, each verdict from the verdict cache, the labels,
the documents made again and compared); then the series' index entry of the window
(:class:`~ek_agents.monitor.window.WindowRecord`, what the series' rates and alert are
computed from) is compared with what the run's documents say. Nothing is read from a trace
file and no judge is called.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..errors import ArtifactNotFound, EkAgentsError
from ..records.documents import read_run_doc
from ..stages.audit import audit, differences
from ..store import open_store
from .series import window_labels
from .window import load_window, window_manifest

__all__ = ["WindowAudit", "audit_window"]


class WindowAudit(BaseModel):
    """What an audit of a window found."""

    window_id: str
    series: str
    episodes: int
    judged: int
    labels: int
    checks: int = 0
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def audit_window(store: Any, series: str, window_id: str) -> WindowAudit:
    """Recompute a stored window (see the module docstring)."""
    st = open_store(store)
    if window_manifest(st, series, window_id) is None:
        raise ArtifactNotFound(f"window {window_id!r} of series {series!r} has no run in store "
                               f"{st.url!r}")
    rec = load_window(st, series, window_id)
    got = audit(st, window_id)
    problems = list(got.problems)
    labels = 0
    try:
        labs = window_labels(st, series, window_id)
        labels = 0 if labs is None else len(labs.labels)
        report = read_run_doc(st, window_manifest(st, series, window_id), "report")
        cost, mon = report.get("cost") or {}, (report.get("detail") or {}).get("monitor") or {}
        index = {"episodes": rec.episodes, "judged": sum(s["judged"] for s in rec.slices.values()),
                 "slices": {s: v["traces"] for s, v in rec.slices.items()},
                 "agent_dollars": rec.agent_dollars, "per_model": rec.agent_per_model,
                 "evaluation_dollars": rec.evaluation_dollars,
                 "passed": sum(s["passed"] for s in rec.slices.values())}
        run = {"episodes": mon.get("episodes"), "judged": report.get("n_trials"),
               "slices": {s: v.get("traces") for s, v in (report.get("per_slice") or {}).items()},
               "agent_dollars": cost.get("total_dollars"), "per_model": cost.get("per_model"),
               "evaluation_dollars": cost.get("evaluation_dollars"),
               "passed": report.get("n_success")}
        problems += [f"series index {d}" for d in differences(index, run, "window")]
    except EkAgentsError as exc:
        problems.append(str(exc))
    return WindowAudit(window_id=window_id, series=series, episodes=rec.episodes,
                       judged=sum(s["judged"] for s in rec.slices.values()), labels=labels,
                       checks=len(got.checked), problems=problems)
