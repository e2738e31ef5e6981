"""Settings shared by every pipeline task."""
from __future__ import annotations

from typing import Any, Optional

from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.runtime import deployment

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


def deployment_id() -> Optional[str]:
    """``prefect.runtime.deployment.id``, read from the flow run's own record when it says:
    the run's ``deployment_id``, or None for a top-level run outside a deployment. (Prefect
    3.9 looks for the id on the run context, where it never is, and so asks the API for the
    flow run: 0.05-0.12 s on the evaluate flow's path, twice a run.) A sub-flow run without a
    deployment of its own asks Prefect, which knows its parent's."""
    run = getattr(FlowRunContext.get(), "flow_run", None)
    if run is not None:
        if run.deployment_id is not None:
            return str(run.deployment_id)
        if run.parent_task_run_id is None:
            return None
    return deployment.id


def deployment_name() -> Optional[str]:
    """``prefect.runtime.deployment.name``; None, without asking the API, when
    :func:`deployment_id` says the run has no deployment."""
    return deployment.name if deployment_id() is not None else None
