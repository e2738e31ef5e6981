"""How a flow run fails without leaving a pickled exception in ``$PREFECT_HOME/storage``.

Prefect 3's flow engine turns an exception raised by a flow body into its Failed state with
``exception_to_failed_state(..., write_result=True)`` (``FlowRunEngine.handle_exception``):
the write ignores the flow's ``persist_result=False``, so every failed flow run leaves the
exception, cloudpickled, as a result file under ``$PREFECT_HOME/storage`` (a task's failure
honours its ``persist_result=False``). A flow that *returns* a Failed state goes the other way,
through ``return_value_to_state(..., write_result=should_persist_result())``, which our
``persist_result=False`` switches off. :func:`fails_as_state` makes every flow body do that:
the exception travels in memory to a caller in this process (``flow()`` raises it, unchanged)
and as a message to the API; nothing is written.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, TypeVar, get_type_hints

from prefect import get_run_logger
from prefect.states import Failed

F = TypeVar("F", bound=Callable[..., Any])


def fails_as_state(fn: F) -> F:
    """Wrap a flow body: an exception it raises becomes the Failed (or, for a timeout,
    TimedOut) state it returns, logged with its traceback as Prefect would; the signature is
    kept (``functools.wraps``), so the flow's parameters and run form are unchanged."""

    @functools.wraps(fn)
    def body(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 -- every failure, as a state (see the module)
            what = f"{type(exc).__name__}: {exc}"
            get_run_logger().error("Encountered exception during execution: %s", what, exc_info=True)
            if isinstance(exc, TimeoutError):
                return Failed(name="TimedOut", data=exc, message=f"Flow run timed out: {what}")
            return Failed(data=exc, message=f"Flow run encountered an exception: {what}")

    # the annotations resolved in the flow's module (they are strings under ``from __future__
    # import annotations``; Prefect resolves them in the wrapper's module otherwise)
    body.__annotations__ = get_type_hints(fn)
    body.__signature__ = inspect.signature(fn, eval_str=True)  # type: ignore[attr-defined]
    return body  # type: ignore[return-value]
