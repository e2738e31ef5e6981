"""In-process capture of OpenTelemetry spans, one trial at a time (``run_suite(..., capture="otel")``).

:class:`OtelCapture` adds one span processor to the global ``TracerProvider`` (installing an SDK
one when none is set) and, around each trial, opens a root span ``ek.trial <task_id>`` with the
attributes ``ek.task_id``, ``ek.trial``, ``ek.seed`` (and ``ek.output``, the agent's answer as
JSON when it is at most :data:`MAX_OUTPUT_CHARS`). Every span the agent's instrumentations make
below it shares its trace id, and the processor files each ending span under its trace id:
a trial gets exactly its own spans, whatever runs at the same time -- concurrent asyncio
trials (each task has its own context) and sync agents on worker threads (the harness runs
them in a copy of the trial's context). A span that ends after its trial was collected (a
sync agent abandoned at its timeout) belongs to no trial and is dropped (counted in
``OtelCapture.late``).

The trial's episode (the rule when both the agent and the spans say something):

- the agent returned only its output -> the trajectory (tool calls, results, errors, in order)
  and the cost (``Cost.of_calls``: one ModelCall per model call, billed at its own model's
  rates) come from the spans (:func:`ek_agents.bridge.otel.trace_parts`); no model-call span
  -> ``cost`` stays ``None`` (unknown, not 0);
- the agent returned an Episode -> **the agent's fields win** where it set them (a non-empty
  trajectory, a cost); the spans fill in the others;
- a failed trial (exception, timeout) keeps ``success=False`` and its error, and gets the spans'
  trajectory and cost: what a failed trial spent is spent.

``meta["otel"]`` of each episode counts its spans, the nested model calls not counted again,
orphans and cycles (and says ``"sampled": false`` when the provider's sampler dropped the
trial's trace: nothing was recorded, so the cost stays unknown, never 0); with ``keep_spans=N`` (opt-in) the trial's first N spans are kept in
``meta["otel"]["spans_kept"]`` (name, ids, scope, GenAI attributes) for the audit.

opentelemetry-sdk is an optional dependency (``pip install 'ek-agents[otel]'``), imported only
when a capture is made.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Optional

from ..base import Episode, Trajectory
from ..bridge.otel import Ingest, RawSpan, span_from_sdk, spans_from_sdk, trace_parts
from ..core import canonical_json, construct
from ..errors import InvalidInput, MissingDependency

__all__ = ["OtelCapture", "TrialSpans", "Spans", "make_capture", "MAX_OUTPUT_CHARS", "CAPTURES"]

#: The largest answer (JSON characters) written on the trial span as ``ek.output``.
MAX_OUTPUT_CHARS = 64 * 1024
#: The values ``capture=`` takes.
CAPTURES = ("otel",)

_lock = threading.Lock()
_registered: dict = {}  # id(provider) -> provider: where the one collector is a processor


def make_capture(capture: Any, *, keep_spans: int = 0) -> Optional["OtelCapture"]:
    """``None`` for ``capture=None``; an :class:`OtelCapture` for ``"otel"``; else InvalidInput."""
    if capture is None:
        return None
    if isinstance(capture, OtelCapture):
        return capture
    if capture not in CAPTURES:
        raise InvalidInput(f"capture must be None or 'otel' (OpenTelemetry spans per trial), "
                           f"got {capture!r}")
    return OtelCapture(keep_spans=keep_spans)


class _Collector:
    """The span processor: files each ending span under its trial's trace id (if any)."""

    def __init__(self) -> None:
        self.active: dict = {}  # trace id -> the trial's TrialSpans
        self.late = 0

    # SpanProcessor's interface (duck-typed: the SDK calls these five)
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        got = self.active.get(span.context.trace_id)
        if got is not None:
            got.add(span)
        else:
            self.late += 1

    def _on_ending(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _provider_and_collector(provider: Any = None) -> tuple:
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError as exc:
        raise MissingDependency(
            f"capture='otel' needs opentelemetry-sdk ({exc}); pip install 'ek-agents[otel]'") from None
    if provider is not None and not isinstance(provider, TracerProvider):
        raise InvalidInput(f"OtelCapture(provider=...) must be an opentelemetry.sdk.trace."
                           f"TracerProvider, got {type(provider).__name__}")
    with _lock:
        glob = trace.get_tracer_provider()
        if not isinstance(glob, TracerProvider):
            if type(glob).__name__ != "ProxyTracerProvider":
                raise InvalidInput(
                    f"capture='otel': the global tracer provider is a {type(glob).__name__}, "
                    "not the OpenTelemetry SDK's TracerProvider, so its spans cannot be read; set "
                    "an opentelemetry.sdk.trace.TracerProvider (or none: one is installed)")
            trace.set_tracer_provider(TracerProvider())
            glob = trace.get_tracer_provider()
        # one collector, a processor of the global provider (where instrumentations report)
        # and of the one the trial spans are made with
        for p in (glob, provider or glob):
            if _registered.get(id(p)) is not p:
                p.add_span_processor(_COLLECTOR)
                _registered[id(p)] = p
        return provider or glob, _COLLECTOR


_COLLECTOR = _Collector()


class Spans(list):
    """A trial's spans as they ended, each read at once into a :class:`RawSpan` (the kept
    attributes only: the SDK span, its attributes, events and lock are freed as it ends
    instead of living on to the end of the trial); ``ing`` counts what was cut, ``sdk`` holds
    the first ``keep_spans`` SDK spans themselves (for ``meta["otel"]["spans_kept"]``)."""

    __slots__ = ("ing", "sdk", "keep", "lock")

    def __init__(self, keep: int = 0) -> None:
        super().__init__()
        self.ing = Ingest()
        self.sdk: list = []
        self.keep = keep
        self.lock = threading.Lock()  # a sync agent's threads may end spans of one trial at once


class TrialSpans:
    """The spans of one trial (filled while it runs; read once it ended): ``spans`` holds them
    as :class:`~ek_agents.bridge.otel.RawSpan` s (:class:`Spans`)."""

    def __init__(self, span: Any, keep: int = 0) -> None:
        self.span = span
        self.spans = Spans(keep)
        self.sampled = bool(span.get_span_context().trace_flags.sampled)
        self.watch: Any = None  # called with the spans after each one ends (limits.TrialBudget)

    def add(self, span: Any) -> None:
        """File one ending SDK span (the collector's ``on_end``, in the thread that ended it)."""
        got = self.spans
        with got.lock:
            if len(got.sdk) < got.keep:
                got.sdk.append(span)
            try:
                got.append(span_from_sdk(span, got.ing))
            except Exception:  # noqa: BLE001 -- never into the agent's span.end(): the span
                got.append(span)  # itself, read with the rest (its error raised there)
        if self.watch is not None:
            self.watch(got)

    def record_output(self, answer: Any) -> None:
        """Write the agent's answer (its output) on the trial span, when it is small JSON."""
        out = answer.output if isinstance(answer, Episode) else answer
        try:
            text = canonical_json(out).decode("ascii")
        except (TypeError, ValueError, RecursionError):
            return
        if len(text) <= MAX_OUTPUT_CHARS:
            self.span.set_attribute("ek.output", text)


class OtelCapture:
    """Per-trial capture of the spans the agent's instrumentations make (module docstring)."""

    def __init__(self, *, keep_spans: int = 0, provider: Any = None) -> None:
        """``provider``: the SDK ``TracerProvider`` the trial spans are made with (default:
        the global one, installed when none is set). Spans of other providers are filed too
        when they end in a trial's trace."""
        if isinstance(keep_spans, bool) or not isinstance(keep_spans, int) or keep_spans < 0:
            raise InvalidInput(f"keep_spans must be an int >= 0, got {keep_spans!r}")
        self.provider, self.collector = _provider_and_collector(provider)  # MissingDependency first
        from opentelemetry import context, trace  # optional dependency: only when capturing
        self._context, self._trace = context, trace
        self.tracer = self.provider.get_tracer("ek_agents.harness")
        self.keep_spans = keep_spans

    def __str__(self) -> str:  # what a run's fingerprint records: the kind of capture
        return "otel"

    @property
    def late(self) -> int:
        """Spans that ended outside any trial (after their trial was collected)."""
        return self.collector.late

    @contextlib.contextmanager
    def trial(self, task_id: str, trial: int, seed: Optional[int]) -> Iterator[TrialSpans]:
        """Open the trial's root span (current in this context) and collect its trace's spans."""
        attrs: dict = {"ek.task_id": task_id, "ek.trial": trial}
        if seed is not None:
            attrs["ek.seed"] = seed
        span = self.tracer.start_span(f"ek.trial {task_id}", context=self._context.Context(),
                                      attributes=attrs)
        tid = span.get_span_context().trace_id
        got = TrialSpans(span, self.keep_spans)
        self.collector.active[tid] = got
        token = self._context.attach(self._trace.set_span_in_context(span))
        try:
            yield got
        finally:
            self._context.detach(token)
            span.end()
            self.collector.active.pop(tid, None)

    @contextlib.contextmanager
    def attempt(self, n: int) -> Iterator[None]:
        """A span per attempt of the trial (``ek.attempt`` = n), current while it runs: the
        steps are read from the last attempt's spans, the cost from all attempts'."""
        with self.tracer.start_as_current_span("ek.attempt", attributes={"ek.attempt": n}):
            yield

    def episode(self, ep: Episode, spans: list, *, agent_episode: bool, failed: bool = False,
                retries: int = 0, latency_s: Optional[float] = None,
                sampled: bool = True) -> Episode:
        """``ep`` with what the trial's ``spans`` say (the rule in the module docstring):
        ``spans`` as a trial's :class:`TrialSpans` collected them (read as they ended), or SDK
        ``ReadableSpan`` s."""
        if isinstance(spans, Spans):
            ing, sdk = spans.ing, spans.sdk
            raws = spans if all(s.__class__ is RawSpan for s in spans) else \
                [s if s.__class__ is RawSpan else span_from_sdk(s, ing) for s in spans]
        else:
            ing, sdk = Ingest(), spans
            raws = spans_from_sdk(spans, ing=ing)
        parts = trace_parts(raws, where="trial")
        meta = dict(ep.meta)
        meta["otel"] = {**parts.stats, "truncated": ing.truncated}
        if not sampled:
            meta["otel"]["sampled"] = False
        if self.keep_spans:
            meta["otel"]["spans_kept"] = [_kept(s) for s in sdk[:self.keep_spans]]
        traj, cost = ep.trajectory, ep.cost
        if not (agent_episode and len(traj)):
            traj = construct(Trajectory, steps=parts.steps)  # Steps validated as they were made
        if cost is None and parts.calls:
            cost = parts.cost(retries=retries, latency_s=latency_s)
            meta.pop("retries", None)  # counted in the Cost now (the harness's rule)
        if type(ep) is not Episode:
            return ep.replace(trajectory=traj, cost=cost, meta=meta)
        # every field is a validated value (the episode's own, or made just above)
        own = ep.__dict__
        return construct(Episode, **{f: own[f] for f in Episode.__pydantic_fields__
                                     if f not in ("trajectory", "cost", "meta")},
                         trajectory=traj, cost=cost, meta=meta)


def _kept(span: Any) -> dict:
    ctx = span.context
    return {"name": span.name, "trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}",
            "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
            "scope": getattr(getattr(span, "instrumentation_scope", None), "name", ""),
            "attributes": {k: (v if isinstance(v, (str, int, float, bool)) else list(v))
                           for k, v in (span.attributes or {}).items()
                           if k.startswith(("gen_ai.", "llm.", "ek.", "tool.", "openinference."))
                           and not (isinstance(v, str) and len(v) > 4096)}}
