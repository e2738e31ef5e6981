"""Settings shared by every pipeline task."""
from __future__ import annotations

from typing import Any

from prefect.cache_policies import NO_CACHE

from ek_agents.errors import StoreError


def transient(task: Any, task_run: Any, state: Any) -> bool:
    """Retry exactly what may go away: a :class:`~ek_agents.errors.StoreError` whose kind is
    ``transient`` (the endpoint refused, reset, timed out or answered 5xx -- after the store's
    own retry window). A permanent store failure (bucket missing, access denied, object
    missing) and bad input fail at once, without waiting for retries."""
    try:
        state.result()
    except StoreError as exc:
        return bool(exc.transient)
    except Exception:  # noqa: BLE001 -- anything else is not worth a retry
        return False
    return False


#: Our store caches stage outputs; Prefect neither caches nor persists (no pickle anywhere).
TASK_DEFAULTS = dict(cache_policy=NO_CACHE, persist_result=False)
#: Store I/O can hit a transient network error (S3): retry it, with backoff.
IO_RETRIES = dict(retries=2, retry_delay_seconds=[1, 4], retry_condition_fn=transient)


def run_name(stem: str, *, against: str = "") -> Any:
    """A ``task_run_name`` callable: ``<stem>-<run_id>``, plus ``-vs-<against>`` when the
    ``against`` parameter (a baseline) is given; ``<stem>-<against>`` when there is no run id
    (an audit of a baseline). A task run's name then says what it holds."""

    def name(parameters: dict) -> str:
        rid, other = parameters.get("run_id"), parameters.get(against) if against else None
        if not rid:
            return f"{stem}-{against}-{other}" if other else stem
        return f"{stem}-{rid}" + (f"-vs-{other}" if other else "")

    return name
