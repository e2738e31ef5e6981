"""Provider errors told apart from agent errors, retried with backoff, and the per-endpoint
adaptive concurrency limit (``run_suite(..., provider_retry_s=...)``).

A rate limit or an outage measures the provider and the account, not the agent. An exception
an agent raises is a **provider error** (:func:`classify`) when it is, or wraps through
``__cause__`` / ``__context__`` / an exception group, one of:

- an HTTP answer 429 (rate limit), 408 (request timeout), 409 (conflict) or 5xx (server
  error, overloaded) from the SDKs agents use -- ``openai``, ``anthropic``, ``httpx``,
  ``pydantic_ai`` (``ModelHTTPError`` and the ``Model*Error`` family), ``litellm`` -- read
  from the exception's ``status_code`` (or its ``response.status_code``);
- a connection failure or a connect/read timeout of those SDKs (``APIConnectionError``,
  ``APITimeoutError``, ``httpx.ConnectError``, ``httpx.ReadTimeout``, ...).

Exceptions are recognised by their class's module and name, walking the class's bases: none
of the SDKs is imported here (each is tens to hundreds of milliseconds of import, and an agent
that uses none must not pay for them). An agent's own exception that happens to be named
``RateLimitError`` is not one: the class must come from one of the modules above.
``errors.TransientAgentError`` stays the explicit way to ask for a retry of anything else
(``retries=``). Under ``capture="otel"`` a failed trial whose failing model-call span carries
an ``error.type`` / HTTP status of the same kinds counts too (:func:`classify_spans`).

A trial that hits one is run again (a fresh attempt, same seed) after a wait
(:func:`backoff_s`: exponential with jitter, never shorter than the provider's
``Retry-After``), until its budget of provider waits (``provider_retry_s``, default
:data:`PROVIDER_RETRY_S`) is spent; what still fails is *unresolved*
(``meta["error_kind"] == "provider"``): left out of success and cost per success, named in the
report, and the run is incomplete (``scoring.unresolved``).

:class:`EndpointLimiter` is the adaptive concurrency: every endpoint (host and model) a
provider error named gets a limit on the trials in flight, cut to :data:`DECREASE` of itself
on a storm of rate limits (at most once per round of trials in flight) and grown back by one
per limit's worth of trials that complete (AIMD), and a pause until the provider's
``Retry-After`` has passed.
"""
from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import random
import re
import time
from collections.abc import Iterable
from typing import Any, Optional

from pydantic import Field

from ..base import JsonShape
from ..core import shape
from ..errors import exception_chain

__all__ = ["ProviderFault", "classify", "classify_spans", "backoff_s", "EndpointLimiter",
           "PROVIDER_RETRY_S", "PROVIDER_MODULES", "RETRYABLE_STATUS"]

#: Default budget, in seconds, of one trial's waits between provider-error attempts.
PROVIDER_RETRY_S = 120.0
#: First wait after a provider error without ``Retry-After`` (doubled each time, jittered).
BACKOFF_BASE_S = 0.25
#: Longest single wait between two attempts.
BACKOFF_CAP_S = 30.0
#: The top-level modules whose exceptions :func:`classify` reads.
PROVIDER_MODULES = ("openai", "anthropic", "httpx", "httpcore", "pydantic_ai", "litellm")
#: Multiplicative decrease of an endpoint's limit on a rate limit (at most once per round).
#: Deeper than TCP's 0.5: a request over a rate limit is wasted, and a run typically starts far
#: above the endpoint's limit (measured against a 40 requests/s bucket at concurrency 64:
#: 0.35 answers 10-11% of requests 429, 0.5 about 15%, at the same wall; bench.bench_providers).
DECREASE = 0.35
#: A decrease needs more than this share of rate limits among the endpoint's outcomes since the
#: last one (a lone 429 among successes is paced by its Retry-After, not by the limit).
SHARE = 0.1
#: Additive increase: slots per limit's worth of trials completed without a provider error.
INCREASE = 1.0
#: HTTP statuses that say "try again later": rate limit, request timeout, conflict, 5xx.
RETRYABLE_STATUS = frozenset({408, 409, 429})

# class names (of the modules above) that mean the request never got an answer in time
_TIMEOUTS = {"APITimeoutError", "Timeout", "TimeoutException", "ReadTimeout", "ConnectTimeout",
             "WriteTimeout", "PoolTimeout", "ModelTimeoutError", "ModelRequestTimeout"}
_CONNECTION = {"APIConnectionError", "ConnectError", "ReadError", "WriteError",
               "RemoteProtocolError", "NetworkError", "ModelConnectionError",
               "ServerDisconnectedError"}
# pydantic-ai's typed family, for the ones that carry no status code of their own
_NAMED = {"ModelRateLimitError": 429, "ModelOverloadedError": 529, "ModelServerError": 500,
          "ModelUnavailableError": 503, "RateLimitError": 429, "ServiceUnavailableError": 503,
          "InternalServerError": 500, "OverloadedError": 529, "BadGatewayError": 502}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# OpenTelemetry error.type values (the instrumentations put the class name or the status there)
_SPAN_TYPES = _TIMEOUTS | _CONNECTION | set(_NAMED)


@shape()
class ProviderFault(JsonShape):
    """What a provider error said: stored in a failed trial's ``meta["provider"]``."""

    kind: str
    """``"rate_limit"`` (429), ``"server_error"`` (5xx), ``"timeout"`` (408 or no answer in
    time), ``"conflict"`` (409) or ``"connection"``."""
    error: str
    """The exception's class, ``module.Name``."""
    status: Optional[int] = None
    """The HTTP status, when there was an answer."""
    model: Optional[str] = None
    """The model the failed request asked for, when the exception says."""
    endpoint: Optional[str] = None
    """Where the request went: ``host[:port]`` of its URL, when the exception says."""
    retry_after_s: Optional[float] = Field(default=None, ge=0)
    """The provider's ``Retry-After`` (or ``retry-after-ms``), seconds."""

    @property
    def key(self) -> str:
        """What the concurrency limit keys on: endpoint and model."""
        return f"{self.endpoint or '?'} {self.model or '?'}"


def _kind_of(status: Optional[int], name: str) -> Optional[str]:
    if status is not None:
        if status == 429:
            return "rate_limit"
        if status == 408:
            return "timeout"
        if status == 409:
            return "conflict"
        if 500 <= status <= 599:
            return "server_error"
        return None
    if name in _TIMEOUTS:
        return "timeout"
    if name in _CONNECTION:
        return "connection"
    return None


def _from_provider(cls: type) -> Optional[str]:
    """The class name of ``cls`` or of its first base that one of :data:`PROVIDER_MODULES`
    defines (None: not an SDK's exception)."""
    for c in cls.__mro__:
        mod = (getattr(c, "__module__", "") or "").split(".", 1)[0]
        if mod in PROVIDER_MODULES:
            return c.__name__
    return None


def _names(cls: type) -> set:
    return {c.__name__ for c in cls.__mro__
            if (getattr(c, "__module__", "") or "").split(".", 1)[0] in PROVIDER_MODULES}


def _status(exc: BaseException) -> Optional[int]:
    for holder in (exc, getattr(exc, "response", None)):
        code = getattr(holder, "status_code", None)
        if isinstance(code, int) and not isinstance(code, bool) and 100 <= code <= 599:
            return code
    return None


def _headers(exc: BaseException) -> Any:
    got = getattr(exc, "headers", None)
    if got is None:
        got = getattr(getattr(exc, "response", None), "headers", None)
    return got


def _retry_after(exc: BaseException) -> Optional[float]:
    own = getattr(exc, "retry_after", None)  # pydantic-ai reads it for us
    if isinstance(own, (int, float)) and not isinstance(own, bool) and math.isfinite(own) and own >= 0:
        return float(own)
    headers = _headers(exc)
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(float(ms) / 1000.0, 0.0)
        s = headers.get("retry-after")
        if s is not None:
            return max(float(s), 0.0)
    except (TypeError, ValueError, AttributeError):  # an HTTP date, or not a mapping
        return None
    return None


def _request(exc: BaseException) -> Any:
    req = None
    try:
        req = getattr(exc, "request", None)
    except Exception:  # noqa: BLE001 -- httpx raises RuntimeError when no request was set
        req = None
    if req is None:
        try:
            req = getattr(getattr(exc, "response", None), "request", None)
        except Exception:  # noqa: BLE001 -- as above
            req = None
    return req


def _endpoint_and_model(exc: BaseException) -> tuple[Optional[str], Optional[str]]:
    model = getattr(exc, "model_name", None) or getattr(exc, "model", None)
    model = model if isinstance(model, str) and model else None
    endpoint = None
    req = _request(exc)
    url = getattr(req, "url", None)
    host = getattr(url, "host", None)
    if isinstance(host, str) and host:
        port = getattr(url, "port", None)
        endpoint = f"{host}:{port}" if port else host
    if model is None and req is not None:
        try:
            body = json.loads(req.content)
            model = body.get("model") if isinstance(body, dict) else None
        except Exception:  # noqa: BLE001 -- a streamed or non-JSON body: the model stays unknown
            model = None
    return endpoint, model if isinstance(model, str) else None


def classify(exc: BaseException) -> Optional[ProviderFault]:
    """The provider error ``exc`` is or wraps (module docstring), else None.

    What the links of the chain say is pooled: pydantic-ai's ``ModelHTTPError`` names the model,
    the openai error it wraps has the request's URL and the ``Retry-After`` header."""
    found: Optional[ProviderFault] = None
    extra: dict = {}
    for e in exception_chain(exc):
        name = _from_provider(type(e))
        if name is None:
            continue
        status = _status(e)
        kind = _kind_of(status, name)
        if kind is None and status is None:
            for n in _names(type(e)):
                if n in _NAMED:
                    status, kind = _NAMED[n], _kind_of(_NAMED[n], n)
                    break
                if n in _TIMEOUTS or n in _CONNECTION:
                    kind = _kind_of(None, n)
                    break
        endpoint, model = _endpoint_and_model(e)
        ra = _retry_after(e)
        for k, v in (("endpoint", endpoint), ("model", model), ("retry_after_s", ra)):
            if v is not None and extra.get(k) is None:
                extra[k] = v
        if kind is not None and found is None:
            found = ProviderFault(kind=kind, status=status,
                                  error=f"{type(e).__module__}.{type(e).__name__}")
    if found is None:
        return None
    return dataclasses.replace(found, **extra) if extra else found


def classify_spans(spans: Iterable[Any]) -> Optional[ProviderFault]:
    """The provider error a trial's failing model-call span records (``error.type`` naming
    an SDK class of the kinds above or a retryable status, or ``http.response.status_code``),
    else None. ``spans``: :class:`~ek_agents.bridge.otel.RawSpan` s."""
    for s in spans:
        attrs = getattr(s, "attrs", None) or {}
        etype = attrs.get("error.type")
        code = attrs.get("http.response.status_code") or attrs.get("http.status_code")
        if etype is None and getattr(s, "error", None) is None:
            continue
        model = attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
        if model is None and attrs.get("gen_ai.system") is None:
            continue  # not a model call's span
        status = None
        if isinstance(code, int) and not isinstance(code, bool):
            status = code
        elif isinstance(etype, str) and etype.isdigit():
            status = int(etype)
        # the class's name, however the instrumentation wrote it ("openai.RateLimitError",
        # "RateLimitError", "<class 'openai.RateLimitError'>")
        words = _WORD.findall(etype) if isinstance(etype, str) else []
        name = words[-1] if words else ""
        kind = _kind_of(status, name) if status is not None else (
            _kind_of(_NAMED[name], name) if name in _NAMED else _kind_of(None, name))
        if kind is None or (status is None and name not in _SPAN_TYPES):
            continue
        host = attrs.get("server.address")
        port = attrs.get("server.port")
        return ProviderFault(kind=kind, status=status if status is not None else _NAMED.get(name),
                             error=str(etype), model=model if isinstance(model, str) else None,
                             endpoint=(f"{host}:{port}" if host and port else host) or None)
    return None


def backoff_s(attempt: int, retry_after_s: Optional[float], rng: random.Random) -> float:
    """The wait before attempt ``attempt + 1`` (``attempt`` >= 1 attempts failed so far).

    With a ``Retry-After``: that long plus up to half of it again (jitter: the trials told to
    come back at one instant do not all come back at that instant), growing 1.5x per failed
    attempt so that a provider that keeps refusing is asked less and less often. Without one:
    :data:`BACKOFF_BASE_S` doubled per failed attempt, "full jitter" (uniform between half and
    all of it). Never more than :data:`BACKOFF_CAP_S`."""
    n = max(attempt - 1, 0)
    if retry_after_s is not None:
        base = retry_after_s * min(1.5 ** n, 8.0)
        return min(BACKOFF_CAP_S, max(retry_after_s, base * (1.0 + 0.5 * rng.random())))
    base = BACKOFF_BASE_S * 2 ** min(n, 16)
    return min(BACKOFF_CAP_S, base * (0.5 + 0.5 * rng.random()))


class _Endpoint:
    """One endpoint's adaptive limit (float, so that additive increase can be gradual)."""

    __slots__ = ("limit", "in_flight", "resume_at", "cut_at", "started", "cond", "rate_limits",
                 "lowest", "recent")

    def __init__(self, limit: float, cond: asyncio.Condition) -> None:
        self.limit = limit
        self.lowest = limit
        self.in_flight = 0
        self.resume_at = 0.0  # monotonic: no trial starts here before this (Retry-After)
        self.cut_at = -1      # the start number at the last decrease
        self.started = 0      # trials started here so far
        self.cond = cond
        self.rate_limits = 0
        self.recent: list = []  # outcomes since the last decrease (True: rate-limited)


class EndpointLimiter:
    """Adaptive concurrency per endpoint (AIMD), shared by the trials of one run on one loop.

    The endpoint of a trial is learned from the provider errors its attempts raise (the SDK's
    exception carries the request's URL and model: :attr:`ProviderFault.key`); a trial holds a
    slot on every endpoint the run has learned so far (an agent's trials call the same
    endpoints, and one that has not failed yet does not know its own). Per endpoint:

    - a rate limit cuts the limit to :data:`DECREASE` of itself (at least 1) when more than
      :data:`SHARE` of the attempts that ended there since the last decrease were
      rate-limited, once per round: 429s answered to trials that started before the last
      decrease do not decrease it again;
    - each trial that completes without a provider error adds ``1 / limit`` (one slot per
      limit's worth of completions), up to the run's ``max_concurrency``;
    - a ``Retry-After`` pauses new starts there until it has passed.

    ``adaptive=False`` keeps the pause and never changes the limit (the plain semaphore run).
    """

    def __init__(self, max_concurrency: int, *, adaptive: bool = True) -> None:
        self.max = float(max_concurrency)
        self.adaptive = adaptive
        self.endpoints: dict[str, _Endpoint] = {}
        self.history: list = []  # (monotonic time, key, limit) at each change, for the report

    def summary(self) -> dict:
        """``{endpoint key: {"limit", "lowest", "rate_limits"}}``: what the run learned."""
        return {k: {"limit": round(e.limit, 2), "lowest": round(e.lowest, 2),
                    "rate_limits": e.rate_limits} for k, e in sorted(self.endpoints.items())}

    def _get(self, key: str) -> _Endpoint:
        got = self.endpoints.get(key)
        if got is None:
            got = self.endpoints[key] = _Endpoint(self.max, asyncio.Condition())
        return got

    async def acquire(self) -> tuple:
        """Wait for a slot on every endpoint learned so far; return the tickets to
        :meth:`release` (``(key, start number)`` each)."""
        held = []
        try:
            for key in sorted(self.endpoints):
                ep = self.endpoints[key]
                async with ep.cond:
                    while True:
                        wait = ep.resume_at - time.monotonic()
                        if wait > 0:
                            try:
                                await asyncio.wait_for(ep.cond.wait(), wait)
                            except TimeoutError:
                                pass
                            continue
                        if ep.in_flight < max(1, int(ep.limit)):
                            break
                        await ep.cond.wait()
                    ep.in_flight += 1
                    ep.started += 1
                    held.append((key, ep.started))
        except BaseException:
            await self.release(held, None)
            raise
        return tuple(held)

    async def release(self, held: Iterable, fault: Optional[ProviderFault]) -> None:
        """Give the slots back; ``fault``: the provider error the attempt ended with (None:
        it completed, or failed for the agent's own reasons)."""
        learned = fault is not None and fault.key not in self.endpoints
        for key, started in held:
            ep = self.endpoints[key]
            async with ep.cond:
                ep.in_flight -= 1
                if fault is None:
                    ep.recent.append(False)
                if fault is None and self.adaptive and ep.limit < self.max:
                    ep.limit = min(self.max, ep.limit + INCREASE / max(ep.limit, 1.0))
                    self.history.append((time.monotonic(), key, ep.limit))
                ep.cond.notify_all()
        if fault is None:
            return
        ep = self._get(fault.key)
        async with ep.cond:
            if fault.retry_after_s:
                ep.resume_at = max(ep.resume_at, time.monotonic() + fault.retry_after_s)
            if fault.kind == "rate_limit":
                ep.rate_limits += 1
                ep.recent.append(True)
                mine = dict(held).get(fault.key, 0)
                window = ep.recent[-max(8, int(ep.limit)):]
                storm = sum(window) > SHARE * len(window)
                if self.adaptive and (learned or (mine > ep.cut_at and storm)):
                    ep.limit = max(1.0, ep.limit * DECREASE)
                    ep.lowest = min(ep.lowest, ep.limit)
                    ep.cut_at = ep.started
                    ep.recent = []
                    self.history.append((time.monotonic(), fault.key, ep.limit))
            ep.cond.notify_all()
