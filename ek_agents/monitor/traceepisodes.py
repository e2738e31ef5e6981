"""Episodes from the spans of a trace (or of a group of traces), as a monitor window makes them:
the task, the slice and the request text read from span attributes, the trajectory and the
bill from :func:`~ek_agents.bridge.otel.trace_parts`."""
from __future__ import annotations

import operator
from typing import Optional

from ..base import Episode, Trajectory
from ..bridge.otel import RawSpan, trace_parts
from ..core import Provenance, construct_from
from ..errors import BridgeError
from ..parsing import parse_json

__all__ = ["DEFAULT_SLICE", "episode_of", "value_of", "request_text"]

#: The slice of an episode whose traces carry no slice attribute.
DEFAULT_SLICE = "all"

_START, _END, _TRACE = (operator.attrgetter(k) for k in ("start_ns", "end_ns", "trace_id"))


def value_of(spans: list, attr: Optional[str]) -> Optional[str]:
    """The value of ``attr`` on the first span carrying it (not empty): roots first, then by
    start (then in the order given)."""
    if not attr:
        return None
    # the spans carrying it (a few of a trace's), then the first of them as a stable sort by
    # that key would order them: min() keeps the first of equal keys
    got = [s for s in spans if s.attrs.get(attr) not in (None, "")]
    if not got:
        return None
    return str(min(got, key=_root_first).attrs[attr])


def _root_first(s: RawSpan) -> tuple:
    return s.parent_id is not None, s.start_ns


def request_text(spans: list) -> Optional[str]:
    """The first user message of the earliest model call that records its input messages
    (``gen_ai.input.messages``): what the person asked, shown to the judge and the labeler."""
    # the spans recording them, by start (a stable sort of those alone keeps the order they
    # have among all the spans)
    for s in sorted([s for s in spans if isinstance(s.attrs.get("gen_ai.input.messages"), str)],
                    key=_START):
        raw = s.attrs["gen_ai.input.messages"]
        try:  # (orjson where it reads the text as the standard library would)
            msgs = parse_json(raw, where="gen_ai.input.messages", error=BridgeError,
                              nonfinite="allow")
        except BridgeError:
            continue
        for m in msgs if isinstance(msgs, list) else []:
            if isinstance(m, dict) and m.get("role") == "user":
                parts = m.get("parts") or [{"content": m.get("content")}]
                text = " ".join(str(p.get("content")) for p in parts
                                if isinstance(p, dict) and p.get("content") is not None)
                if text:
                    return text
    return None


def episode_of(key: str, spans: list, per_task: dict, task_attr: Optional[str],
               slice_attr: Optional[str], where: str) -> Optional[Episode]:
    """The episode of one group of spans, keyed ``key`` (None without a model call);
    ``per_task`` numbers the trials of each task in the order made. Each episode is its own
    task unless ``task_attr`` names the attribute whose value is its task; ``slice_attr`` the
    attribute naming its slice (``meta["slice"]``, :data:`DEFAULT_SLICE` without it)."""
    parts = trace_parts(spans, where=f"{where} group {key!r}")
    if not parts.calls:
        return None
    task = value_of(spans, task_attr) or key
    trial = per_task.get(task, 0)
    per_task[task] = trial + 1
    start = min(map(_START, spans))
    end = max(map(_END, spans))
    meta = {"trial": trial, "slice": value_of(spans, slice_attr) or DEFAULT_SLICE,
            "input": request_text(spans),
            "group": key, "traces": sorted(set(map(_TRACE, spans))),
            "otel": dict(parts.stats)}
    lat = (end - start) / 1e9 if end > start else None
    # every value made above has its field's type (a str task, Steps, a Cost, a str source):
    # built without validating it again (a window builds one per trace)
    return construct_from(Episode, {
        "task_id": str(task), "trajectory": construct_from(Trajectory, {"steps": tuple(parts.steps)}),
        "output": parts.output, "final_state": None, "cost": parts.cost(latency_s=lat),
        "success": None, "run": None,
        "provenance": construct_from(Provenance, {"source": str(where), "locator": f"group {key}",
                                                  "meta": {"format": "otlp-json"}}),
        "meta": meta})
