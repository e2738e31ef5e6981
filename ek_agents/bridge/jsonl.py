"""Recorded transcripts as JSON Lines -> Episodes (what ``ingest messages`` reads).

One JSON object per line::

    {"task_id": "t1", "messages": [...], "usage": {...}, "output": "...",
     "final_state": {...}, "success": true, "model": "gpt-4o"}

``task_id`` and ``messages`` are required (any transcript format
:func:`~ek_agents.bridge.trajectory_from_messages` reads); ``usage`` (one record or a list),
``output``, ``final_state``, ``success``, ``model`` are optional, and so are ``trial``,
``latency_s`` and ``meta`` (a dict merged into the episode's meta). Blank lines are skipped.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import Episode, RunProvenance
from ..core import Provenance
from ..errors import BridgeError
from ..parsing import parse_json
from ._access import as_seconds
from ._io import gc_paused, read_lines, url_of
from .messages import episode_from_messages

__all__ = ["read_messages_jsonl"]

_KNOWN = {"task_id", "messages", "usage", "output", "final_state", "success", "model", "trial",
          "latency_s", "meta"}


@gc_paused()
def read_messages_jsonl(path_or_url: Any) -> list[Episode]:
    """Read a JSONL file of ``{"task_id", "messages", ...}`` records into Episodes (file order)."""
    url = url_of(path_or_url)
    eps = []
    for n, line in enumerate(read_lines(url), start=1):
        if not line.strip():
            continue
        where = f"{url}:{n}"
        rec = parse_json(line, where=where, error=BridgeError, nonfinite="allow")
        if not isinstance(rec, Mapping):
            raise BridgeError(f"{where}: each line must be a JSON object, got {type(rec).__name__}")
        for key in ("task_id", "messages"):
            if key not in rec:
                raise BridgeError(f"{where}: missing {key!r} (a line needs 'task_id' and 'messages'; "
                                  f"it has {sorted(rec)})")
        task_id = rec["task_id"]
        if isinstance(task_id, bool) or not isinstance(task_id, (str, int)) or not str(task_id).strip():
            raise BridgeError(f"{where}: 'task_id' must be a non-empty string, got {task_id!r:.60}; "
                              "give every line the id of its task")
        if not isinstance(rec["messages"], list):
            raise BridgeError(f"{where}: 'messages' must be a list of messages, got "
                              f"{type(rec['messages']).__name__}")
        success = rec.get("success")
        if success is not None and not isinstance(success, bool):
            raise BridgeError(f"{where}: 'success' must be true, false or null, got {success!r}")
        meta = rec.get("meta", {})
        if not isinstance(meta, Mapping):
            raise BridgeError(f"{where}: 'meta' must be an object, got {meta!r:.60}")
        meta = dict(meta)
        model = rec.get("model")
        if model is not None:
            meta["model"] = model
        if rec.get("trial") is not None:
            meta["trial"] = rec["trial"]
        extra = sorted(set(rec) - _KNOWN)
        if extra:
            meta["extra_fields"] = {k: rec[k] for k in extra}
        try:
            ep = episode_from_messages(
                rec["messages"], task_id=rec["task_id"], usage=rec.get("usage"), output=rec.get("output"),
                final_state=rec.get("final_state"), latency_s=as_seconds(rec.get("latency_s"), "'latency_s'"), success=success,
                run=RunProvenance(model=str(model)) if model else None, meta=meta,
                provenance=Provenance(source=url, locator=f"line {n}", meta={"format": "messages-jsonl"}),
                from_json=True)
        except BridgeError as exc:
            raise BridgeError(f"{where}: {exc}") from exc
        eps.append(ep)
    return eps
