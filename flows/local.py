"""Calling a flow from this process (the CLI's one way in)."""
from __future__ import annotations

import contextlib
import importlib
from typing import Any, Iterator

from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings


@contextlib.contextmanager
def local_settings() -> Iterator[None]:
    """Without a Prefect server (ephemeral mode), switch off the flow-run heartbeat: a local
    run has nobody to report liveness to, and the heartbeat thread costs ~1 s per flow run."""
    if PREFECT_API_URL.value():
        yield
        return
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def call_flow(flow: str, /, **params: Any) -> Any:
    """Run ``flow`` ("evaluate_agent", "audit_run", "promote_baseline") here and now; its
    result, or the exception that failed it."""
    flows = importlib.import_module(__package__)  # this package, under whichever name it was loaded

    with local_settings():
        return getattr(flows, flow)(**params)
