"""Our flows run on Prefect's async flow engine; a sync caller calls them as sync functions.

Why: Prefect 3.9's sync flow engine ends every flow run by joining its heartbeat thread, which
sleeps in 1 s steps, so the call returns 0.1-1.0 s after the run was Completed (mean ~0.5 s;
bench/PROFILE-flow.md): x0.03-0.06 of a 20,000-trial evaluate run, and most of a cache hit's
wall. The async engine sends the same heartbeats (Prefect's ``flows.heartbeat_frequency``,
crash detection unchanged) and does not wait for that thread at the end.

How (:func:`entry_flow`, used in place of ``@flow`` on each of our top-level flows):

- The Prefect flow's function is ``async def``, so Prefect runs it on its async engine here
  and on a worker that runs a deployment. It calls the flow's sync body in place, on the
  engine's own thread: the body's tasks, sub-flows, logging and signals (Ctrl-C, SIGTERM) are
  those of a sync flow. The engine awaits nothing while the body runs; its heartbeats come
  from a thread of their own. The body runs inside one sync API client context, as under the
  sync engine: without it every sync task run (each trial chunk) built a client of its own,
  TLS context and all (~1.5 CPU-s per 8,000-trial run, measured); and with the heap that
  existed before it frozen for the garbage collector (:func:`frozen_heap`).
- The flow's ``timeout_seconds`` is enforced inside the body the way the sync engine does it
  (Prefect's ``timeout``: an alarm on the main thread, a watcher thread elsewhere): the async
  engine's own timeout could only interrupt at an ``await``, and the body has none. The run
  ends TimedOut either way.
- ``flow(...)`` returns the result (or, with ``return_state=True``, the final state) to a sync
  caller, as a sync flow does: ``ek_agents.execution.run_coroutine`` drives the engine's
  coroutine on a fresh event loop in the calling thread, or, when that thread already runs a loop (a notebook, a
  caller's coroutine), on a thread of its own. ``with_options`` keeps this behaviour.
- Inside a body, call Prefect's dual sync/async helpers (artifacts, variables, events) from a
  task, not from the body itself: on an async flow run they would return a coroutine. (Our
  bodies call tasks, sub-flows and ``prefect.runtime`` only.)
"""
from __future__ import annotations

import contextlib
import gc
import inspect
from typing import Any, Callable, Iterator

from prefect import Flow
from prefect.context import FlowRunContext, SyncClientContext
from prefect.flow_engine import FlowRunTimeoutError
from prefect.utilities.hashing import file_hash
from prefect.utilities.timeout import timeout

from ek_agents.execution import run_coroutine

#: What a wrapped body's function keeps of the body (not ``__wrapped__``: Prefect would take
#: the flow for a sync one).
KEPT = ("__module__", "__name__", "__qualname__", "__doc__", "__annotations__")


class EntryFlow(Flow):
    """A Prefect flow whose function is async (see the module), called like a sync flow."""

    def __call__(self, *args: Any, return_state: bool = False, wait_for: Any = None,
                 **kwargs: Any) -> Any:
        outcome = super().__call__(*args, return_state=return_state, wait_for=wait_for, **kwargs)
        return run_coroutine(lambda: outcome, cancel_on_interrupt=False) \
            if inspect.iscoroutine(outcome) else outcome

    def with_options(self, **options: Any) -> "EntryFlow":
        """Prefect's ``with_options`` (which builds a plain ``Flow``), kept an EntryFlow."""
        new = super().with_options(**options)
        new.__class__ = type(self)
        return new


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """While the block runs, the objects that existed before it (the modules Prefect and we
    imported, the caller's) are left out of the garbage collector's scans (``gc.freeze``), and
    handed back at its end (``gc.unfreeze``): what the block creates is collected as usual,
    and anything of the frozen that became garbage meanwhile is collected after it.

    Why: each full collection walks every object of the process and holds the GIL while it
    does, stalling the trials' event loops; in a 20,000-trial evaluate run six of them (up to
    0.09 s each) and the younger ones took 0.62 s, and freezing halved that and took
    0.5-0.8 s off the run's wall (measured, bench/PROFILE-flow.md). A caller that froze its
    own heap (``gc.get_freeze_count() > 0``, e.g. a pre-fork server, or a flow inside a flow)
    is left as it is: nothing is frozen or unfrozen here.
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def entry_flow(**options: Any) -> Callable[[Callable[..., Any]], EntryFlow]:
    """``@flow(**options)`` for a sync body, as an :class:`EntryFlow` (see the module). The
    flow's name, parameters, docstring and version (a hash of the body's file, as Prefect
    computes it) are the body's."""

    def wrap(body: Callable[..., Any]) -> EntryFlow:
        async def run(*args: Any, **kwargs: Any) -> Any:
            ctx = FlowRunContext.get()
            seconds = ctx.flow.timeout_seconds if ctx is not None else None
            with frozen_heap(), SyncClientContext.get_or_create(), \
                    timeout(seconds, timeout_exc_type=FlowRunTimeoutError):
                return body(*args, **kwargs)

        for name in KEPT:
            if hasattr(body, name):
                setattr(run, name, getattr(body, name))
        run.__signature__ = inspect.signature(body)  # type: ignore[attr-defined]
        source = inspect.getsourcefile(inspect.unwrap(body))
        if source and "version" not in options:
            options["version"] = file_hash(source)
        return EntryFlow(fn=run, **options)

    return wrap
