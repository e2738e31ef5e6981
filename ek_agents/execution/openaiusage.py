"""Cached-token counts of openai chat completions, read from the SDK's own responses while a
capture runs (``capture="otel"``).

``opentelemetry-instrumentation-openai-v2`` (2.4b0) writes ``gen_ai.usage.cache_read.input_tokens``
on Responses-API spans only: its chat-completion spans carry the prompt and completion counts,
not the cached part of the prompt, so a call it traced would be billed at full input rates
(an upper bound). The count is in the response the SDK returned
(``usage.prompt_tokens_details.cached_tokens``; for a stream read with
``stream_options={"include_usage": True}``, the usage of its last chunk).

While a capture runs, once the application has imported ``openai`` (this module never imports
it: :func:`watch_openai` looks in ``sys.modules``), the ``create`` of the public chat-completions
resource classes (``openai.resources.chat.Completions`` and ``AsyncCompletions``) is wrapped,
once per process. Each response's cached count is handed, with the response's id, to the
recorder set by :func:`record_with` (the capture files it under the trial whose context made
the call); a stream is handed back behind a thin proxy that reads the usage of the chunks as
the agent iterates them. When the capture turns a trial's spans into calls,
:func:`fill_cached` gives a model-call span that reports no cache-read count the one recorded
under its ``gen_ai.response.id`` (openai-v2 writes the response's id there, a stream's from
its chunks). Keyed by the id, this holds whichever wrapper is outer: openai-v2's or this one.
A response whose usage carries no ``prompt_tokens_details`` records nothing, so its count
stays unknown (the bill an upper bound, as before). Spans read offline (OTLP/JSON) have no
response to read: their count stays unknown.

When no captured trial runs, the wrapper only checks that and calls through. The wrapper is
a plain function over whatever ``create`` was when the first capture began; an instrumentation
that had wrapped ``create`` before then cannot be unwrapped past it later (``wrapt``-based
``uninstrument`` removes only an outermost wrapper): uninstrument before capturing.
"""
from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from ..bridge.otel import RawSpan
from ..bridge.otelcalls import CACHED_KEYS, is_model_call

__all__ = ["record_with", "watch_openai", "fill_cached", "cached_of", "CACHE_READ_KEY"]

#: The attribute a filled-in count is written under (the GenAI conventions' name).
CACHE_READ_KEY = "gen_ai.usage.cache_read.input_tokens"

_lock = threading.Lock()
_state: dict = {"installed": False, "unavailable": False}
_record: Optional[Callable[[str, int], None]] = None
_busy: Mapping = {}  # truthy while a captured trial runs (the capture's table of open trials)


def record_with(fn: Optional[Callable[[str, int], None]], busy: Mapping) -> None:
    """Call ``fn(response_id, cached_tokens)`` for each chat completion answered while ``busy``
    (a mapping: the capture's open trials) is not empty."""
    global _record, _busy
    _record, _busy = fn, busy


def cached_of(obj: Any) -> Optional[tuple]:
    """``(response id, cached tokens)`` of a ``ChatCompletion`` or a chunk carrying usage; None
    when it reports no ``prompt_tokens_details.cached_tokens`` (or no id)."""
    usage = getattr(obj, "usage", None)
    if usage is None:
        return None
    n = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
    rid = getattr(obj, "id", None)
    if type(n) is not int or n < 0 or not isinstance(rid, str) or not rid:
        return None
    return rid, n


def _seen(obj: Any) -> None:
    try:
        got = cached_of(obj)
        if got is not None and _record is not None:
            _record(*got)
    except Exception:  # noqa: BLE001 -- never into the agent's call: the count stays unknown
        pass           # (the bill an upper bound, flagged)


def _proxy_class() -> Any:
    import wrapt  # installed with the instrumentations; only when openai is wrapped

    class UsageStream(wrapt.ObjectProxy):
        """A chat-completion stream (the SDK's, or an instrumentation's wrapper of it) whose
        chunks are read for their usage as they pass; everything else goes to the stream."""

        def __iter__(self) -> Any:
            return self

        def __next__(self) -> Any:
            chunk = next(self.__wrapped__)
            if getattr(chunk, "usage", None) is not None:
                _seen(chunk)
            return chunk

        def __aiter__(self) -> Any:
            return self

        async def __anext__(self) -> Any:
            chunk = await self.__wrapped__.__anext__()
            if getattr(chunk, "usage", None) is not None:
                _seen(chunk)
            return chunk

        def __enter__(self) -> Any:
            self.__wrapped__.__enter__()
            return self

        def __exit__(self, *exc: Any) -> Any:
            return self.__wrapped__.__exit__(*exc)

        async def __aenter__(self) -> Any:
            await self.__wrapped__.__aenter__()
            return self

        async def __aexit__(self, *exc: Any) -> Any:
            return await self.__wrapped__.__aexit__(*exc)

    return UsageStream


def _handle(result: Any, kwargs: dict, stream_cls: Any, method: str) -> Any:
    """What ``create`` returns: a completion is read at once, a stream comes back proxied; a
    raw response (``with_raw_response``: not parsed yet) is left alone."""
    if kwargs.get("stream"):
        if hasattr(type(result), method):  # a stream (not a raw response)
            return stream_cls(result)
        return result
    _seen(result)
    return result


def _install() -> None:
    try:
        from openai.resources.chat import AsyncCompletions, Completions
        stream_cls = _proxy_class()
    except (ImportError, AttributeError):  # an openai without these classes, or no wrapt
        _state["unavailable"] = True
        return
    sync_create, async_create = Completions.create, AsyncCompletions.create

    @functools.wraps(sync_create)
    def create(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = sync_create(self, *args, **kwargs)
        return _handle(result, kwargs, stream_cls, "__next__") if _busy else result

    @functools.wraps(async_create)
    async def acreate(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = await async_create(self, *args, **kwargs)
        return _handle(result, kwargs, stream_cls, "__anext__") if _busy else result

    Completions.create = create  # type: ignore[method-assign]
    AsyncCompletions.create = acreate  # type: ignore[method-assign]
    _state["installed"] = True


def watch_openai() -> bool:
    """Wrap the chat-completions ``create`` (once per process) when ``openai`` is imported;
    whether it is wrapped. Never imports ``openai``."""
    if _state["installed"]:
        return True
    if _state["unavailable"] or "openai" not in sys.modules:
        return False
    with _lock:
        if not (_state["installed"] or _state["unavailable"]):
            _install()
    return _state["installed"]


def fill_cached(spans: list, table: dict) -> int:
    """Give each model-call span of ``spans`` (:class:`RawSpan` s) that reports no cache-read
    count the one ``table`` holds under its ``gen_ai.response.id``; the entries used are removed.
    Returns how many spans were filled in."""
    filled = 0
    for s in spans:
        if not table:
            break
        if s.__class__ is not RawSpan:
            continue
        a = s.attrs
        rid = a.get("gen_ai.response.id")
        if not isinstance(rid, str) or rid not in table or not is_model_call(a):
            continue
        n = table.pop(rid)
        if not any(k in a for k in CACHED_KEYS):
            a[CACHE_READ_KEY] = n
            filled += 1
    return filled
