"""In-process capture of OpenTelemetry spans, one trial at a time (``run_suite(..., capture="otel")``).

:class:`OtelCapture` adds one span processor to the global ``TracerProvider`` (installing an SDK
one when none is set) and, around each trial, opens a root span ``ek.trial <task_id>`` with the
attributes ``ek.task_id``, ``ek.trial``, ``ek.seed`` and ``ek.output``, the agent's answer as
JSON (cut at :data:`MAX_OUTPUT_CHARS` and flagged: ``TrialSpans.record_output``). Every span the agent's instrumentations make
below it shares its trace id, and the processor files each ending span under its trace id:
a trial gets exactly its own spans, whatever runs at the same time -- concurrent asyncio
trials (each task has its own context) and sync agents on worker threads (the harness runs
them in a copy of the trial's context).

What could escape a trial, and what is done about it:

- **The application's sampler.** The trial span is always sampled (its tracer samples every
  root span it starts, whatever the provider's sampler), so under a parent-based sampler --
  ``ParentBased(TraceIdRatioBased(0.1))``, the SDK's default ``ParentBased(ALWAYS_ON)`` --
  every span below it is recorded too. A sampler that is not parent-based may still drop
  them: a trial that then records no span below its own names the sampler
  (``meta["otel"]["sampler"]``) and the report says so.
- **Threads.** While a trial runs, threads (``threading.Thread``) and ``ThreadPoolExecutor``
  work started in its context carry that context (:mod:`ek_agents.execution._otelthreads`).
  Model-call spans that still end outside any trial while trials run are counted: each
  episode records the range of such spans that ended while it ran
  (``meta["otel"]["outside_calls"]``) and the report gives their number, why, and what to do.
- **Late spans.** A span still open when its trial returns, and a thread or executor task the
  trial started that is still running (work the agent left behind), are waited for, up to
  ``grace_s`` (:data:`GRACE_S`, 0.5 s by default: ``OtelCapture(grace_s=...)``), without
  blocking other trials. What has not ended by then is counted in
  ``meta["otel"]["unfinished_spans"]`` / ``["unfinished_work"]`` and the report says so; a
  span of that trial ending later is counted in ``OtelCapture.late`` (and, a model call,
  among the spans outside any trial) -- never filed silently elsewhere.

The trial's episode (the rule when both the agent and the spans say something):

- the agent returned only its output -> the trajectory (tool calls, results, errors, in order)
  and the cost (``Cost.of_calls``: one ModelCall per model call, billed at its own model's
  rates) come from the spans (:func:`ek_agents.bridge.otel.trace_parts`); no model-call span
  -> ``cost`` stays ``None`` (unknown, not 0);
- the agent returned an Episode -> **the agent's fields win** where it set them (a non-empty
  trajectory, a cost); the spans fill in the others;
- a failed trial (exception, timeout) keeps ``success=False`` and its error, and gets the spans'
  trajectory and cost: what a failed trial spent is spent.

Cached tokens an instrumentation leaves off its spans (openai-v2's chat completions) are read
from the openai SDK's responses while a trial runs (:mod:`ek_agents.execution.openaiusage`)
and written on the model-call span with the same response id when the trial's spans are read
(``meta["otel"]["cached_from_responses"]`` counts them).

``meta["otel"]`` of each episode counts its spans, the nested model calls not counted again,
orphans and cycles (and says ``"sampled": false`` when the provider's sampler dropped the
trial's trace: nothing was recorded, so the cost stays unknown, never 0); with ``keep_spans=N`` (opt-in) the trial's first N spans are kept in
``meta["otel"]["spans_kept"]`` (name, ids, scope, GenAI attributes) for the audit.

opentelemetry-sdk is an optional dependency (``pip install 'ek-agents[otel]'``), imported only
when a capture is made.
"""
from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any, Optional

from ..base import Episode, Trajectory
from ..bridge.otel import Ingest, RawSpan, span_from_sdk, spans_from_sdk, trace_parts
from ..bridge.otelcalls import is_model_call
from ..core import canonical_json, construct
from ..errors import InvalidInput, MissingDependency
from ._otelthreads import carrying, track_with
from .openaiusage import fill_cached, record_with, watch_openai

__all__ = ["OtelCapture", "TrialSpans", "Spans", "make_capture", "MAX_OUTPUT_CHARS", "CAPTURES",
           "GRACE_S"]

#: The largest answer (JSON characters) written on the trial span as ``ek.output``.
MAX_OUTPUT_CHARS = 64 * 1024
#: The values ``capture=`` takes.
CAPTURES = ("otel",)
#: Seconds a trial's open spans are waited for after the trial returned (the default).
GRACE_S = 0.5
#: Trials whose late spans are told apart from spans outside any trial (the most remembered).
_SETTLED_KEPT = 65_536
#: Threads and futures a trial started that are waited for (the most remembered per trial).
_PENDING_KEPT = 1024
#: Cached-token counts read from a trial's openai responses (the most remembered per trial).
_CACHED_KEPT = 65_536


def _trace_api() -> Any:
    from opentelemetry import trace  # optional dependency: only under a capture
    return trace


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
    """The span processor: files each ending span under its trial's trace id (if any), counts
    each trial's open spans, and counts the spans that end outside any trial."""

    def __init__(self) -> None:
        self.active: dict = {}  # trace id -> the trial's TrialSpans
        self.settled: dict = {}  # trace ids of trials already read (insertion-ordered, bounded)
        self.late = 0            # spans of a trial that ended after it was read
        self.outside = 0         # model-call spans that ended in no open trial's trace
        self.epoch = uuid.uuid4().hex[:12]  # names this process's count of outside spans
        self.lock = threading.Lock()

    # SpanProcessor's interface (duck-typed: the SDK calls these five)
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        got = self.active.get(span.context.trace_id)
        if got is not None:
            with self.lock:
                got.opened += 1

    def on_end(self, span: Any) -> None:
        tid = span.context.trace_id
        got = self.active.get(tid)
        if got is not None:
            got.add(span)
            if span.context.span_id != got.span_id:
                with self.lock:
                    got.ended += 1
        else:
            if tid in self.settled:
                self.late += 1
            if is_model_call(span.attributes):  # in no trial's bill
                with self.lock:
                    self.outside += 1

    def track(self, ctx: Any, work: Any) -> None:
        """Remember a thread or future started in a trial's context (otelthreads' tracker)."""
        span = _trace_api().get_current_span(ctx)
        got = self.active.get(span.get_span_context().trace_id)
        if got is not None and len(got.pending) < _PENDING_KEPT:
            with self.lock:
                got.pending.append(work)

    def cached_read(self, response_id: str, cached: int) -> None:
        """File an openai response's cached-token count under the trial whose context made
        the call (:mod:`ek_agents.execution.openaiusage`'s recorder)."""
        span = _trace_api().get_current_span()
        got = self.active.get(span.get_span_context().trace_id)
        if got is not None and len(got.spans.cached) < _CACHED_KEPT:
            got.spans.cached[response_id] = cached

    def release(self, got: "TrialSpans") -> None:
        """Stop filing spans under ``got`` (under :attr:`lock`)."""
        if self.active.pop(got.trace_id, None) is not None:
            self.settled[got.trace_id] = None
            if len(self.settled) > _SETTLED_KEPT:
                del self.settled[next(iter(self.settled))]

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
track_with(_COLLECTOR.track)
record_with(_COLLECTOR.cached_read, _COLLECTOR.active)


class Spans(list):
    """A trial's spans as they ended, each read at once into a :class:`RawSpan` (the kept
    attributes only: the SDK span, its attributes, events and lock are freed as it ends
    instead of living on to the end of the trial); ``ing`` counts what was cut, ``sdk`` holds
    the first ``keep_spans`` SDK spans themselves (for ``meta["otel"]["spans_kept"]``),
    ``cached`` the cached-token counts read from the trial's openai responses, by response id
    (:mod:`ek_agents.execution.openaiusage`)."""

    __slots__ = ("ing", "sdk", "keep", "lock", "cached")

    def __init__(self, keep: int = 0) -> None:
        super().__init__()
        self.ing = Ingest()
        self.sdk: list = []
        self.keep = keep
        self.lock = threading.Lock()  # a sync agent's threads may end spans of one trial at once
        self.cached: dict = {}


class TrialSpans:
    """The spans of one trial (filled while it runs; read once it ended): ``spans`` holds them
    as :class:`~ek_agents.bridge.otel.RawSpan` s (:class:`Spans`)."""

    def __init__(self, span: Any, keep: int = 0, outside_from: int = 0) -> None:
        self.span = span
        ctx = span.get_span_context()
        self.trace_id, self.span_id = ctx.trace_id, ctx.span_id
        self.spans = Spans(keep)
        self.sampled = bool(ctx.trace_flags.sampled)
        self.opened = self.ended = 0  # spans started / ended below the trial span
        self.closed = False           # the trial returned (its span ended)
        self.unfinished = 0           # spans still open when the trial was read
        self.pending: list = []       # threads and futures started in its context
        self.unfinished_work = 0      # of those, still running when the trial was read
        self.outside_from = outside_from
        self.outside_to = outside_from
        self.watch: Any = None  # called with the spans after each one ends (limits.TrialBudget)

    def open_spans(self) -> int:
        """Spans started below the trial span and not ended yet."""
        return max(self.opened - self.ended, 0)

    def running(self) -> int:
        """Threads and futures started in the trial's context and still running."""
        return sum(1 for w in self.pending
                   if (w.is_alive() if hasattr(w, "is_alive") else not w.done()))

    def busy(self) -> bool:
        return bool(self.open_spans() or self.running())

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
        """Write the agent's answer (its output) on the trial span as ``ek.output``: its JSON as
        the stored episode writes it, so that a read of the trace alone gives the output a
        stored run reads back. Longer than :data:`MAX_OUTPUT_CHARS`: the first that many
        characters (of the string, or of the JSON of another value) as a string, with
        ``ek.output_cut`` = the full JSON length; not JSON (the trial fails: its answer cannot
        be stored), ``null`` with ``ek.output_unstored`` saying why."""
        try:
            ep = answer if isinstance(answer, Episode) else construct(Episode, output=answer)
            out = ep.to_dict()["output"]
            text = canonical_json(out).decode("ascii")
        except Exception as exc:  # noqa: BLE001 -- whatever the answer is, the trial goes on
            self.span.set_attribute("ek.output", "null")
            self.span.set_attribute("ek.output_unstored", f"{type(exc).__name__}: {exc}"[:200])
            return
        if len(text) > MAX_OUTPUT_CHARS:
            self.span.set_attribute("ek.output_cut", len(text))
            text = canonical_json((out if isinstance(out, str) else text)[:MAX_OUTPUT_CHARS]).decode("ascii")
        self.span.set_attribute("ek.output", text)


class OtelCapture:
    """Per-trial capture of the spans the agent's instrumentations make (module docstring)."""

    def __init__(self, *, keep_spans: int = 0, provider: Any = None,
                 grace_s: float = GRACE_S) -> None:
        """``provider``: the SDK ``TracerProvider`` the trial spans are made with (default:
        the global one, installed when none is set). Spans of other providers are filed too
        when they end in a trial's trace. ``grace_s``: how long a trial's open spans are waited
        for after it returned (module docstring)."""
        if isinstance(keep_spans, bool) or not isinstance(keep_spans, int) or keep_spans < 0:
            raise InvalidInput(f"keep_spans must be an int >= 0, got {keep_spans!r}")
        if isinstance(grace_s, bool) or not isinstance(grace_s, (int, float)) or \
                not 0 <= grace_s <= 60:
            raise InvalidInput(f"grace_s must be a number of seconds in [0, 60], got {grace_s!r}")
        self.provider, self.collector = _provider_and_collector(provider)  # MissingDependency first
        from opentelemetry import context, trace  # optional dependency: only when capturing
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
        self._context, self._trace = context, trace
        self.tracer = self.provider.get_tracer("ek_agents.harness")
        # the trial span is sampled whatever the application's sampler: its children follow
        # it under a parent-based sampler (the SDK tracer's sampler is a plain attribute)
        self.tracer.sampler = ALWAYS_ON
        # the sampler the instrumentations' spans likely meet (the provider given, else the
        # global one), named when it is not parent-based and a trial records nothing below
        # its own span
        child = getattr(self.provider, "sampler", None)
        self.child_sampler = None if child is None or child is ALWAYS_ON or \
            isinstance(child, ParentBased) else child.get_description()
        self.keep_spans = keep_spans
        self.grace_s = float(grace_s)

    def __str__(self) -> str:  # what a run's fingerprint records: the kind of capture
        return "otel"

    @property
    def late(self) -> int:
        """Spans of a trial that ended after the trial was read (past its grace)."""
        return self.collector.late

    @property
    def outside(self) -> int:
        """Model-call spans that ended in no trial's trace (this process, every capture)."""
        return self.collector.outside

    @contextlib.contextmanager
    def trial(self, task_id: str, trial: int, seed: Optional[int]) -> Iterator[TrialSpans]:
        """Open the trial's root span (current in this context) and collect its trace's spans."""
        attrs: dict = {"ek.task_id": task_id, "ek.trial": trial}
        if seed is not None:
            attrs["ek.seed"] = seed
        span = self.tracer.start_span(f"ek.trial {task_id}", context=self._context.Context(),
                                      attributes=attrs)
        col = self.collector
        watch_openai()  # openai's cached-token counts, once the agent has imported openai
        got = TrialSpans(span, self.keep_spans, outside_from=col.outside)
        col.active[got.trace_id] = got
        token = self._context.attach(self._trace.set_span_in_context(span))
        try:
            with carrying():
                yield got
        finally:
            self._context.detach(token)
            span.end()
            busy = got.busy()
            with col.lock:
                got.closed = True
                if not busy:
                    col.release(got)
                got.outside_to = col.outside

    async def settle(self, got: TrialSpans) -> None:
        """Wait (without blocking the loop) up to ``grace_s`` for the trial's open spans, and
        the threads and executor work it started, to end; then stop filing its spans. What is
        still open or running is counted (``got.unfinished``, ``got.unfinished_work``)."""
        deadline = time.monotonic() + self.grace_s
        pause = 0.0005  # polls back off to 10 ms (a sync agent's thread ends within the first)
        while got.busy() and time.monotonic() < deadline:
            await asyncio.sleep(min(pause, max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.01)
        running = got.running()
        col = self.collector
        with col.lock:
            got.unfinished, got.unfinished_work = got.open_spans(), running
            col.release(got)
            got.outside_to = col.outside

    @contextlib.contextmanager
    def attempt(self, n: int) -> Iterator[None]:
        """A span per attempt of the trial (``ek.attempt`` = n), current while it runs: the
        steps are read from the last attempt's spans, the cost from all attempts'."""
        with self.tracer.start_as_current_span("ek.attempt", attributes={"ek.attempt": n}):
            yield

    def episode(self, ep: Episode, spans: list, *, agent_episode: bool, failed: bool = False,
                retries: int = 0, latency_s: Optional[float] = None,
                sampled: bool = True, trial: Optional[TrialSpans] = None) -> Episode:
        """``ep`` with what the trial's ``spans`` say (the rule in the module docstring):
        ``spans`` as a trial's :class:`TrialSpans` collected them (read as they ended), or SDK
        ``ReadableSpan`` s; ``trial`` (the :class:`TrialSpans`) adds what escaped the trial."""
        filled = 0
        if isinstance(spans, Spans):
            ing, sdk = spans.ing, spans.sdk
            raws = spans if all(s.__class__ is RawSpan for s in spans) else \
                [s if s.__class__ is RawSpan else span_from_sdk(s, ing) for s in spans]
            if spans.cached:  # what the SDK's responses said and the spans do not
                filled = fill_cached(raws, spans.cached)
                spans.cached.clear()
        else:
            ing, sdk = Ingest(), spans
            raws = spans_from_sdk(spans, ing=ing)
        parts = trace_parts(raws, where="trial")
        meta = dict(ep.meta)
        meta["otel"] = {**parts.stats, "truncated": ing.truncated}
        if filled:
            meta["otel"]["cached_from_responses"] = filled
        if not sampled:
            meta["otel"]["sampled"] = False
        if trial is not None:
            _escaped(meta["otel"], trial, self)
        if self.keep_spans:
            meta["otel"]["spans_kept"] = [_kept(s) for s in sdk[:self.keep_spans]]
        traj, cost = ep.trajectory, ep.cost
        if not (agent_episode and len(traj)):
            traj = construct(Trajectory, steps=parts.steps)  # Steps validated as they were made
        if cost is None:
            cost = parts.cost(retries=retries, latency_s=latency_s)
            if cost is not None:
                meta.pop("retries", None)  # counted in the Cost now (the harness's rule)
        if type(ep) is not Episode:
            return ep.replace(trajectory=traj, cost=cost, meta=meta)
        # every field is a validated value (the episode's own, or made just above)
        own = ep.__dict__
        return construct(Episode, **{f: own[f] for f in Episode.__pydantic_fields__
                                     if f not in ("trajectory", "cost", "meta")},
                         trajectory=traj, cost=cost, meta=meta)


def _escaped(otel: dict, trial: TrialSpans, cap: OtelCapture) -> None:
    """Record in ``meta["otel"]`` what escaped the trial: spans still open past the grace,
    model-call spans that ended outside any trial while it ran, a sampler that dropped its
    spans."""
    if trial.unfinished:
        otel["unfinished_spans"] = trial.unfinished
    if trial.unfinished_work:
        otel["unfinished_work"] = trial.unfinished_work
    if trial.outside_to > trial.outside_from:
        otel["outside_calls"] = {"epoch": cap.collector.epoch, "from": trial.outside_from,
                                 "to": trial.outside_to}
    if cap.child_sampler and otel.get("spans", 0) <= 1 + otel.get("attempts", 0):
        otel["sampler"] = cap.child_sampler


def _kept(span: Any) -> dict:
    ctx = span.context
    return {"name": span.name, "trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}",
            "parent_id": None if span.parent is None else f"{span.parent.span_id:016x}",
            "scope": getattr(getattr(span, "instrumentation_scope", None), "name", ""),
            "attributes": {k: (v if isinstance(v, (str, int, float, bool)) else list(v))
                           for k, v in (span.attributes or {}).items()
                           if k.startswith(("gen_ai.", "llm.", "ek.", "tool.", "openinference."))
                           and not (isinstance(v, str) and len(v) > 4096)}}
