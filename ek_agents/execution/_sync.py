"""Running a coroutine to its end from sync code: the harness's trials (their event loop) and
the pipeline's flows (Prefect's async engine) are both called as plain functions."""
from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["run_coroutine"]


def run_coroutine(factory: Callable[[], Awaitable[Any]], *, cancel_on_interrupt: bool = True) -> Any:
    """Run the coroutine ``factory()`` makes to its end and return what it returns: on a new
    event loop in this thread, or -- when this thread already runs one (a notebook, an async
    caller) -- on a new loop in a thread of its own, with this thread's context.

    ``cancel_on_interrupt``: Ctrl-C cancels the coroutine's task (``asyncio.run``), so a run of
    trials winds down through its ``finally`` blocks before KeyboardInterrupt is raised. False:
    Ctrl-C raises KeyboardInterrupt where the code runs -- for a coroutine whose body is sync
    code that never reaches an await, where a cancelled task would wait for one."""
    run = _cancelling if cancel_on_interrupt else _interrupting
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run(factory)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ek-loop") as pool:
        return pool.submit(context.run, run, factory).result()


def _cancelling(factory: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(factory())  # type: ignore[arg-type]


def _interrupting(factory: Callable[[], Awaitable[Any]]) -> Any:
    # not asyncio.run: its SIGINT handler would only cancel the task at its next await
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(factory())
    finally:
        try:
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()
