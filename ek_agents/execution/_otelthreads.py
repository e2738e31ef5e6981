"""Carry the OpenTelemetry context into threads an agent starts, while a capture runs.

A ``ThreadPoolExecutor`` or a ``threading.Thread`` does not carry ``contextvars``: a sync agent
that makes its model calls on worker threads makes them outside its trial's trace, and the
trial gets no cost. While at least one captured trial runs (:func:`carrying`, reference
counted), ``ThreadPoolExecutor.submit`` runs each submitted callable under the OpenTelemetry
context current where it was submitted, and ``threading.Thread.start`` runs the thread's
``run`` under the context current where it was started -- what
``opentelemetry-instrumentation-threading`` does, without its dependency pins (its releases
pin one ``opentelemetry-instrumentation`` version). The executor's own worker threads are left
alone (each submitted callable brings its context), and so is a :class:`HarnessThread` (the
thread the harness runs a sync agent's call on: it brings the trial's context itself, and it is
the trial, not work the trial left running). Everything is restored when the last captured
trial ends. Each thread started and each future submitted is handed, with the context
it carries, to the tracker set by :func:`track_with` (the capture waits for a trial's, within
its grace, before reading the trial).
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any, Callable, Optional

__all__ = ["HarnessThread", "carrying", "in_context", "track_with"]

_lock = threading.Lock()
_users = 0
_saved: dict = {}
_tracker: Optional[Callable[[Any, Any], None]] = None


class HarnessThread(threading.Thread):
    """A thread the harness starts to run an agent's call in a trial's context (its target
    runs under a copy of that context): carrying neither wraps nor tracks it. Were it tracked,
    the trial would count the very thread its call ran on as work still running -- it is alive
    for a moment after it hands its result to the loop, so a capture reading the trial at once
    (``grace_s=0``) would see one more unfinished thread than the agent left, and a capture
    with a grace would wait for it."""


def track_with(fn: Optional[Callable[[Any, Any], None]]) -> None:
    """Call ``fn(context, thread_or_future)`` for each thread started and each future
    submitted while carrying (None: no tracker)."""
    global _tracker
    _tracker = fn


def in_context(ctx: Any, fn: Callable) -> Callable:
    """``fn`` run under the OpenTelemetry context ``ctx`` (attached, then detached)."""
    from opentelemetry import context  # optional dependency: only under a capture

    def run(*args: Any, **kwargs: Any) -> Any:
        token = context.attach(ctx)
        try:
            return fn(*args, **kwargs)
        finally:
            context.detach(token)
    return run


def _patch() -> None:
    from opentelemetry import context  # optional dependency: only under a capture
    submit, start = futures.ThreadPoolExecutor.submit, threading.Thread.start
    _saved.update(submit=submit, start=start)

    def carried_submit(self: Any, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
        ctx = context.get_current()
        fut = submit(self, in_context(ctx, fn), *args, **kwargs)
        if _tracker is not None:
            _tracker(ctx, fut)
        return fut

    def carried_start(self: Any) -> Any:
        target = getattr(self, "_target", None)
        if not isinstance(self, HarnessThread) and \
                getattr(target, "__module__", "") != futures.thread.__name__:  # not a pool worker
            ctx = context.get_current()
            self.run = in_context(ctx, self.run)
            if _tracker is not None:
                _tracker(ctx, self)
        return start(self)

    futures.ThreadPoolExecutor.submit = carried_submit  # type: ignore[method-assign]
    threading.Thread.start = carried_start  # type: ignore[method-assign]


def _unpatch() -> None:
    futures.ThreadPoolExecutor.submit = _saved.pop("submit")  # type: ignore[method-assign]
    threading.Thread.start = _saved.pop("start")  # type: ignore[method-assign]


@contextlib.contextmanager
def carrying() -> Iterator[None]:
    """While inside (in any thread), threads and executor work started carry the context."""
    global _users
    with _lock:
        _users += 1
        if _users == 1:
            _patch()
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _unpatch()
