"""Incremental reading of OTLP/JSON trace files: only what no earlier window consumed.

A **ledger** (:class:`Ledger`, stored at ``monitor/<series>/ledger.json``) remembers, per file,
how far it was read. A file is identified by the sha256 of its first line, not by its name, so
that a file renamed by rotation (``traces.jsonl`` -> ``traces.jsonl.1``) is recognised as the
one already read, and the same file delivered twice (a copy in another folder) is read once
(counted in ``duplicate_files``). Per file identity the ledger keeps ``read_to`` (every complete
line before this byte offset has been parsed) and ``resume_at`` (the first line holding a span
of a trace still waiting for its root span: read again next window, its already-consumed
traces skipped). Trace ids consumed are kept too: a trace is consumed once whatever file or line
brings its spans again (``repeated_traces``), and spans arriving for a trace already consumed are
counted (``late_spans``), never made into a second episode.

A trace is **complete** when one of its spans has no parent and has ended (the root); until
then it waits (``pending_traces``). A line not ending in a newline is not read yet (the writer
may be in the middle of it). Bad input is counted, never fatal while something is usable:
lines that are not OTLP/JSON (``bad_lines``, counted once, when first passed), traces with no
model call (``no_model_call``, with the instrumentation scopes of their spans), a file that
shrank below what was read (``shrunk_files``: nothing is re-read of it). Compressed files
(``.gz``, ``.zst``) are read whole and decompressed; offsets count decompressed bytes.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..base import Episode, Trajectory
from ..bridge.otel import Ingest, RawSpan, spans_from_otlp, spans_of_document, trace_parts
from ..core import Provenance
from ..errors import BridgeError, InvalidInput
from ..parsing import fast_json_lines
from ..store.sources import SourceFile, list_sources, read_source

__all__ = ["FileMark", "Ledger", "IngestCounts", "TraceBatch", "read_new_traces",
           "episodes_of_traces", "DEFAULT_SLICE"]

#: The slice of an episode whose traces carry no slice attribute.
DEFAULT_SLICE = "all"


class FileMark(BaseModel):
    """How far one file (by identity) has been read."""

    url: str
    read_to: int = 0
    resume_at: int = 0


class Ledger(BaseModel):
    """What a series has consumed (stored as JSON; see the module docstring)."""

    schema_version: int = 1
    files: dict[str, FileMark] = Field(default_factory=dict)
    consumed: set[str] = Field(default_factory=set)
    windows: list[str] = Field(default_factory=list)


class IngestCounts(BaseModel):
    """What a window's reading found, skipped and set aside."""

    files: int = 0
    new_files: int = 0
    duplicate_files: int = 0
    shrunk_files: int = 0
    files_waiting: int = 0
    bytes_read: int = 0
    bad_lines: int = 0
    spans: int = 0
    traces: int = 0
    pending_traces: int = 0
    repeated_traces: int = 0
    late_spans: int = 0
    no_model_call: int = 0
    unknown_scopes: dict[str, int] = Field(default_factory=dict)
    truncated_attributes: int = 0


class TraceBatch(BaseModel):
    """The complete, new traces of a window (spans by trace id) and the ledger after it."""

    model_config = {"arbitrary_types_allowed": True}

    traces: dict[str, list[Any]]
    ledger: Ledger
    counts: IngestCounts


def _identity(data: bytes) -> Optional[str]:
    nl = data.find(b"\n")
    return None if nl < 0 else hashlib.sha256(data[:nl]).hexdigest()


def _attrs_wanted(*attrs: Optional[str]) -> Any:
    got = frozenset(a for a in attrs if a)
    return got or None


def read_new_traces(source: Any, ledger: Ledger, *, attrs: Sequence[Optional[str]] = (),
                    files: Optional[Iterable[SourceFile]] = None) -> TraceBatch:
    """The traces of ``source`` not consumed before (see the module docstring); ``attrs`` are
    the span attributes to keep beyond the GenAI ones (grouping, task and slice). The ledger
    returned is a new one (the caller stores it once the window is recorded)."""
    led = ledger.model_copy(deep=True)
    counts = IngestCounts()
    keep = _attrs_wanted(*attrs)
    ing = Ingest()
    spans_of: dict[str, dict[str, RawSpan]] = {}
    first_at: dict[str, dict[str, int]] = {}   # trace -> {file identity: first line offset}
    seen_ids: set = set()
    listed = list(files) if files is not None else list_sources(source)
    for f in listed:
        counts.files += 1
        data = b""  # the previous file's bytes go before the next file's come (one file at a time)
        data = read_source(f.url)
        ident = _identity(data)
        if ident is None:
            counts.files_waiting += 1  # not one complete line yet
            continue
        if ident in seen_ids:
            counts.duplicate_files += 1
            continue
        seen_ids.add(ident)
        mark = led.files.get(ident)
        if mark is None:
            mark = led.files[ident] = FileMark(url=f.url)
            counts.new_files += 1
        mark.url = f.url
        end = data.rfind(b"\n") + 1
        if end < mark.read_to:
            counts.shrunk_files += 1
            continue
        start, high = mark.resume_at, mark.read_to
        counts.bytes_read += end - high
        for at, line, ok, doc in fast_json_lines(data, start, end):
            try:
                if ok:  # what spans_from_otlp reads of the line, parsed once
                    got = list(spans_of_document(doc, f"{f.url}@{at}", ing=ing, group_attr=keep))
                else:
                    got = list(spans_from_otlp(line.decode("utf-8"), f"{f.url}@{at}", ing=ing,
                                               group_attr=keep))
            except (BridgeError, UnicodeDecodeError):
                if at >= high:
                    counts.bad_lines += 1
                continue
            for s in got:
                if s.trace_id in led.consumed:
                    if at >= high:
                        counts.late_spans += 1
                    continue
                if at >= high:
                    counts.spans += 1
                spans_of.setdefault(s.trace_id, {})[s.span_id] = s
                first_at.setdefault(s.trace_id, {}).setdefault(ident, at)
        mark.read_to = end
        mark.resume_at = end
    counts.truncated_attributes = ing.truncated
    complete: dict[str, list] = {}
    for tid, by_span in spans_of.items():
        if any(s.parent_id is None and s.end_ns > 0 for s in by_span.values()):
            complete[tid] = list(by_span.values())
        else:
            counts.pending_traces += 1
            for ident, at in first_at[tid].items():  # every file holding its spans waits
                m = led.files[ident]
                m.resume_at = min(m.resume_at, at)
    counts.traces = len(complete)
    led.consumed.update(complete)
    return TraceBatch(traces=complete, ledger=led, counts=counts)


def _value_of(spans: list, attr: Optional[str]) -> Optional[str]:
    if not attr:
        return None
    for s in sorted(spans, key=lambda s: (s.parent_id is not None, s.start_ns)):
        v = s.attrs.get(attr)
        if v not in (None, ""):
            return str(v)
    return None


def _request_text(spans: list) -> Optional[str]:
    """The first user message of the earliest model call that records its input messages
    (``gen_ai.input.messages``): what the person asked, shown to the judge and the labeler."""
    for s in sorted(spans, key=lambda s: s.start_ns):
        raw = s.attrs.get("gen_ai.input.messages")
        if not isinstance(raw, str):
            continue
        try:
            msgs = json.loads(raw)
        except ValueError:
            continue
        for m in msgs if isinstance(msgs, list) else []:
            if isinstance(m, dict) and m.get("role") == "user":
                parts = m.get("parts") or [{"content": m.get("content")}]
                text = " ".join(str(p.get("content")) for p in parts
                                if isinstance(p, dict) and p.get("content") is not None)
                if text:
                    return text
    return None


def episodes_of_traces(batch: TraceBatch, *, group_by: str = "trace",
                       task_attr: Optional[str] = None, slice_attr: Optional[str] = None,
                       where: str = "otlp") -> list[Episode]:
    """One episode per trace (``group_by="trace"``) or per value of a span attribute (a trace
    without it is its own group), in order of their first span. Each episode is its own task
    unless ``task_attr`` names the attribute whose value is its task; ``slice_attr`` the
    attribute naming its slice (``meta["slice"]``, :data:`DEFAULT_SLICE` without it). Groups
    without a model call are left out and counted in ``batch.counts.no_model_call``."""
    if not isinstance(group_by, str) or not group_by:
        raise InvalidInput(f"group_by must be 'trace' or a span attribute name, got {group_by!r}")
    groups: dict[str, list] = {}
    for tid, spans in batch.traces.items():
        key = tid if group_by == "trace" else (_value_of(spans, group_by) or tid)
        groups.setdefault(key, []).extend(spans)
    rows = []
    per_task: dict[str, int] = {}
    for key, spans in sorted(groups.items(), key=lambda kv: (min(s.start_ns for s in kv[1]), kv[0])):
        parts = trace_parts(spans, where=f"{where} group {key!r}")
        if not parts.calls:
            batch.counts.no_model_call += 1
            for s in spans:
                name = s.scope or "(no scope)"
                batch.counts.unknown_scopes[name] = batch.counts.unknown_scopes.get(name, 0) + 1
            continue
        task = _value_of(spans, task_attr) or key
        trial = per_task.get(task, 0)
        per_task[task] = trial + 1
        start = min(s.start_ns for s in spans)
        end = max(s.end_ns for s in spans)
        meta = {"trial": trial, "slice": _value_of(spans, slice_attr) or DEFAULT_SLICE,
                "input": _request_text(spans),
                "group": key, "traces": sorted({s.trace_id for s in spans}),
                "otel": dict(parts.stats)}
        lat = (end - start) / 1e9 if end > start else None
        rows.append(Episode(task, Trajectory(parts.steps), output=parts.output,
                            cost=parts.cost(latency_s=lat),
                            provenance=Provenance(source=where, locator=f"group {key}",
                                                  meta={"format": "otlp-json"}),
                            meta=meta))
    return rows
