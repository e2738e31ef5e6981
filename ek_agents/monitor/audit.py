"""Audit a monitor window: recompute it from what is stored, and say what does not match.

:func:`audit_window` reads the window's episodes (verified against the digest its record holds),
recomputes each episode's slice, the model calls and tokens per model, the combined verdict of
every judged episode from the verdict cache (by episode digest and judge identity), the slice
counts the rate is made of, and the labels (their digest checked by
:func:`~ek_agents.labels.labels_of_doc`); then the series row from those. Nothing is read from a
trace file and no judge is called.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..errors import EkAgentsError
from ..store import open_store
from ..store.sources import monitor_key
from .series import window_labels
from .window import cost_by_model, episode_digest, load_window, window_episodes

__all__ = ["WindowAudit", "audit_window"]


class WindowAudit(BaseModel):
    """What an audit of a window found."""

    window_id: str
    series: str
    episodes: int
    judged: int
    labels: int
    problems: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No problem found."""
        return not self.problems


def audit_window(store: Any, series: str, window_id: str) -> WindowAudit:
    """Recompute a stored window (see the module docstring)."""
    st = open_store(store)
    rec = load_window(st, series, window_id)
    problems: list[str] = []
    try:
        eps = window_episodes(st, series, window_id)
    except EkAgentsError as exc:
        return WindowAudit(window_id=window_id, series=series, episodes=0, judged=0, labels=0,
                           problems=[str(exc)])
    if len(eps) != rec.episodes:
        problems.append(f"{len(eps)} episodes stored, the record says {rec.episodes}")
    table, _ = cost_by_model(eps, None)
    for model, row in table.items():
        rec_row = rec.agent_per_model.get(model, {})
        for k in ("calls", "input_tokens", "output_tokens", "cached_input_tokens"):
            if rec_row.get(k) != row[k]:
                problems.append(f"model {model}: {k} {row[k]} recomputed, {rec_row.get(k)} recorded")
    if set(table) != set(rec.agent_per_model):
        problems.append(f"models {sorted(table)} recomputed, {sorted(rec.agent_per_model)} recorded")
    caches = []
    for ident in rec.judges:
        key = monitor_key(series, "verdicts", f"{ident[:32]}.json")
        caches.append(st.read_json(key) if st.exists(key) else {})
    slices: dict[str, dict[str, int]] = {}
    for ep in eps:
        s = slices.setdefault(ep.meta.get("slice", "all"), {"traces": 0, "judged": 0, "passed": 0})
        s["traces"] += 1
        key = f"{ep.task_id}/{ep.meta.get('trial', 0)}"
        if key not in rec.verdicts:
            continue
        d = episode_digest(ep)
        scores = [c[d][0] for c in caches if d in c]
        if not scores:
            problems.append(f"episode {key}: judged, but no cached verdict of its judges")
            continue
        ok = (sum(scores) / len(scores) >= 0.5 if rec.options.combine == "mean"
              else all(x > 0 for x in scores))
        if ok != rec.verdicts[key]:
            problems.append(f"episode {key}: verdict {ok} recomputed, {rec.verdicts[key]} recorded")
        s["judged"] += 1
        s["passed"] += ok
    if slices != rec.slices:
        problems.append(f"slice counts {slices} recomputed, {rec.slices} recorded")
    try:
        labs = window_labels(st, series, window_id)
    except EkAgentsError as exc:
        labs = None
        problems.append(str(exc))
    return WindowAudit(window_id=window_id, series=series, episodes=len(eps),
                       judged=sum(s["judged"] for s in slices.values()),
                       labels=0 if labs is None else len(labs.labels), problems=problems)
