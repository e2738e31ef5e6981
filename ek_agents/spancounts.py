"""What the reads of OpenTelemetry spans behind a run's episodes skipped, cut or kept once,
summed over the run (``meta["otel"]`` of each episode, written by
:func:`~ek_agents.bridge.otel.episodes_from_otel` and the per-trial capture), so a report can
say it: a figure resting on spans that were repeated, cut or unreadable says so.

>>> from ek_agents.base import Episode
>>> eps = [Episode("a", meta={"otel": {"duplicate_tool_calls": 2, "duplicates": 1}}),
...        Episode("b", meta={"otel": {"duplicate_tool_calls": 0, "duplicates": 1}})]
>>> c = otel_read_counts(eps)
>>> c["duplicate_tool_calls"], c["duplicates"]
(2, 1)
>>> otel_read_sentence(c)
'OpenTelemetry read: 1 repeated span(s) kept once; 2 repeated tool call id(s) kept once'
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

__all__ = ["otel_read_counts", "otel_read_sentence", "merge_otel_counts", "PER_EPISODE", "PER_READ"]

#: Counts of one episode's own spans: summed over the episodes.
PER_EPISODE: dict = {"duplicate_tool_calls": "repeated tool call id(s) kept once",
                     "orphans": "span(s) whose parent was missing",
                     "cycles": "parent cycle(s) cut",
                     "output_cut": "output(s) cut on the trial span (longer than the capture writes)",
                     "output_unstored": "output(s) the capture could not write (not JSON)"}
#: Counts of a whole read (every episode of one read carries the same): the largest is kept.
PER_READ: dict = {"duplicates": "repeated span(s) kept once",
                  "truncated": "attribute(s) cut at MAX_ATTRIBUTE_CHARS",
                  "skipped_lines": "line(s) that were not OTLP/JSON skipped"}


def otel_read_counts(episodes: Iterable[Any]) -> Optional[dict]:
    """``{count: n}`` of what the span reads skipped or cut (only the non-zero ones); None
    when no episode was read from spans or nothing was skipped."""
    out: dict = {}
    for ep in episodes:
        otel = (getattr(ep, "meta", None) or {}).get("otel")
        if isinstance(otel, Mapping):
            merge_otel_counts(out, otel, episode=True)
    return out or None


def merge_otel_counts(into: dict, counts: Mapping, *, episode: bool = False) -> dict:
    """Add ``counts`` (another run part's :func:`otel_read_counts`, or with ``episode=True``
    one episode's ``meta["otel"]``) into ``into``: per-episode counts summed, per-read ones
    the largest."""
    for key in PER_EPISODE:
        v = counts.get(key)
        if episode and key in ("output_cut", "output_unstored"):
            v = 1 if v else 0
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            into[key] = into.get(key, 0) + v
    for key in PER_READ:
        v = counts.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            into[key] = max(into.get(key, 0), v)
    return into


def otel_read_sentence(counts: Optional[Mapping]) -> Optional[str]:
    """One line a report shows for :func:`otel_read_counts`' result (None when empty)."""
    if not counts:
        return None
    said = {**PER_READ, **PER_EPISODE}
    order = list(PER_READ) + list(PER_EPISODE)
    return "OpenTelemetry read: " + "; ".join(f"{counts[k]} {said[k]}" for k in order if counts.get(k))
