"""Settings shared by every pipeline task."""
from __future__ import annotations

from typing import Any

from prefect.cache_policies import NO_CACHE

from ek_agents.errors import ArtifactNotFound


def transient(task: Any, task_run: Any, state: Any) -> bool:
    """Retry only what may go away: an I/O error other than a missing file (a store on S3
    dropping a connection). Bad input fails at once, without waiting for retries."""
    try:
        state.result()
    except ArtifactNotFound:
        return False
    except OSError:
        return True
    except Exception:  # noqa: BLE001 -- anything else is not worth a retry
        return False
    return False


#: Our store caches stage outputs; Prefect neither caches nor persists (no pickle anywhere).
TASK_DEFAULTS = dict(cache_policy=NO_CACHE, persist_result=False)
#: Store I/O can hit a transient network error (S3): retry it, briefly.
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
