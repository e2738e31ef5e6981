"""Production-like traffic for the monitor's tests and bench: real instrumentation, real files.

Each request is an application span (``POST /ask``, attribute ``app.route``: the slice) around
the pydantic-ai agent of :mod:`.agents` (its own instrumentation) against the local
OpenAI-compatible server (:mod:`.fakeopenai`). Whether the agent answers right is the server's
script: its summariser answers ``SUMMARY(unsure)`` (wrong) when the trial marker's digits sum to
a multiple of 3, else ``SUMMARY(<task id>)`` (right); :func:`seed_for` picks, for a task id and
a wanted outcome, the first seed whose marker gives it, so a day's traffic is right with any
chosen probability. The spans the SDK finished are written as OTLP/JSON lines with the OTLP
protobuf encoder and protobuf's JSON mapping (ids in hex, as the collector's file exporter
writes them).

>>> seed_for("d01-r0-0007", right=True) != seed_for("d01-r0-0007", right=False)
True
"""
from __future__ import annotations

import asyncio
import base64
import json
import random
from types import SimpleNamespace
from typing import Any, Optional

from . import agents
from .fakeopenai import summary_of

__all__ = ["seed_for", "is_right", "Request", "day_requests", "serve_requests", "otlp_lines",
           "hex_ids", "record", "ROUTE_ATTR"]

#: The span attribute naming a request's route (the slice).
ROUTE_ATTR = "app.route"


def is_right(task_id: str, seed: int) -> bool:
    """Whether the server's script answers trial ``task_id.seed`` right."""
    return summary_of(f"{task_id}.{seed}") != "SUMMARY(unsure)"


def seed_for(task_id: str, *, right: bool) -> int:
    """The smallest seed >= 0 whose trial of ``task_id`` is answered right (or wrong)."""
    for seed in range(100):
        if is_right(task_id, seed) == right:
            return seed
    raise ValueError(f"no seed below 100 gives {task_id!r} right={right}")


class Request(SimpleNamespace):
    """One request of the day: ``task_id``, ``input``, ``seed``, ``route``, ``right``."""


def day_requests(day: int, n: int, p: float, *, rng: random.Random,
                 routes: tuple = ("r0", "r1")) -> list:
    """``n`` requests of day ``day``, alternating routes, each right with probability ``p``."""
    out = []
    for i in range(n):
        route = routes[i % len(routes)]
        tid = f"d{day:02d}-{route}-{i:04d}"
        right = rng.random() < p
        truth = "PASS" if right else "FAIL"  # for the server's judge mode (fakejudge)
        out.append(Request(task_id=tid, input=f"look up {tid} [truth:{truth}]",
                           seed=seed_for(tid, right=right),
                           route=route, right=right))
    return out


async def _serve(requests: list, concurrency: int, open_root: Optional[list]) -> None:
    from opentelemetry import trace  # noqa: PLC0415 -- example code: the SDK only when serving

    tracer = trace.get_tracer("ek_agents_examples.traffic")
    sem = asyncio.Semaphore(concurrency)

    async def one(r: Any) -> None:
        async with sem:
            with tracer.start_as_current_span("POST /ask", attributes={ROUTE_ATTR: r.route}):
                await agents.pydantic_ai_agent(r, seed=r.seed)

    await asyncio.gather(*(one(r) for r in requests))
    if open_root is not None:  # a request still in flight when the file is written
        span = tracer.start_span("POST /ask", attributes={ROUTE_ATTR: "r0"})
        with trace.use_span(span, end_on_exit=False):
            r = open_root[0]
            await agents.pydantic_ai_agent(r, seed=r.seed)
        open_root[:] = [span]


def serve_requests(requests: list, *, concurrency: int = 4, open_request: Any = None) -> Any:
    """Serve ``requests`` through the agent (``agents.configure(base_url)`` first). With
    ``open_request``, serve it too but leave its application span open; return that span
    (end it later with ``span.end()``)."""
    box = [open_request] if open_request is not None else None
    asyncio.run(_serve(requests, concurrency, box))
    return box[0] if box else None


def record(requests: list, *, concurrency: int = 4) -> list:
    """Serve ``requests`` against a fresh local server with the process's tracer provider (an
    SDK one, made and set if there is none) and return the spans they finished, in the order
    they ended."""
    from opentelemetry import trace  # noqa: PLC0415 -- example code: the SDK only when recording
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: PLC0415
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: PLC0415
        InMemorySpanExporter)

    from .fakeopenai import FakeOpenAI  # noqa: PLC0415

    tp = trace.get_tracer_provider()
    if not isinstance(tp, TracerProvider):
        tp = TracerProvider()
        trace.set_tracer_provider(tp)
    exp = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exp))
    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        serve_requests(requests, concurrency=concurrency)
    spans = sorted(exp.get_finished_spans(), key=lambda s: s.end_time)
    exp.shutdown()
    return spans


def hex_ids(doc: dict) -> dict:
    """An OTLP/JSON document from protobuf's JSON mapping (base64 ids) with hex ids, as the
    collector's file exporter writes them (changed in place, and returned)."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64decode(sp[key]).hex()
    return doc


def otlp_lines(spans: list, *, batch: int = 50) -> list:
    """OTLP/JSON lines (hex ids) of SDK spans, ``batch`` spans a line."""
    from google.protobuf import json_format  # noqa: PLC0415 -- example code, on use
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans  # noqa: PLC0415

    out = []
    for i in range(0, len(spans), batch):
        out.append(json.dumps(hex_ids(json_format.MessageToDict(encode_spans(spans[i:i + batch])))))
    return out
