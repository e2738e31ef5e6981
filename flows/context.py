"""What Prefect knows about the current flow run (for the manifest), and the names it shows."""
from __future__ import annotations

from pathlib import PurePath
from typing import Optional

import prefect
from prefect.client.orchestration import get_client
from prefect.runtime import flow_run

from ek_agents_pipeline.tasks.common import deployment_id


def run_context() -> dict:
    """The orchestrator's record of this run: flow-run id and name, flow, deployment."""
    return {"orchestrator": "prefect", "prefect_version": prefect.__version__,
            "flow_run_id": flow_run.id, "flow_run_name": flow_run.name,
            "flow_name": flow_run.flow_name, "parent_flow_run_id": flow_run.parent_flow_run_id,
            "deployment_id": deployment_id()}


def run_parameters() -> dict:
    """The parameters this flow run was called with."""
    return dict(flow_run.parameters)


def scheduled_seed() -> int:
    """A seed derived from this flow run's scheduled start time (milliseconds since the epoch):
    each scheduled run of a deployment draws afresh, and the seed is recorded in the manifest."""
    when = flow_run.scheduled_start_time
    return int(when.timestamp() * 1000)


def _short(path: object) -> str:
    """``examples.shop.agents:small_agent`` -> ``small_agent``; ``x/shop/suite.yaml`` -> ``suite``."""
    text = str(path or "")
    if ":" in text:
        return text.rpartition(":")[2]
    return PurePath(text).stem if text else ""


def evaluate_run_name(run_id: Optional[str] = None) -> str:
    """The evaluate flow run's name: ``<run id>: <agent> on <suite>`` (the ingest kind and file
    for an ingested run); ``run_id`` overrides the parameter (a run id made inside the flow)."""
    p = flow_run.parameters
    agent = _short(p.get("agent")) or str(p.get("ingest") or "?")
    suite = _short(p.get("suite") or p.get("ingest_path")) or "?"
    rid = run_id or p.get("run_id")
    return f"{rid}: {agent} on {suite}" if rid else f"{agent} on {suite}"


def audit_run_name() -> str:
    """The audit flow run's name: ``audit <run id>`` or ``audit baseline <name>``."""
    p = flow_run.parameters
    return f"audit {p['run_id']}" if p.get("run_id") else f"audit baseline {p.get('baseline')}"


def promote_run_name() -> str:
    """The promote flow run's name: ``promote <run id> to <name>``."""
    p = flow_run.parameters
    return f"promote {p.get('run_id')} to {p.get('name')}"


def rename_flow_run(name: str) -> None:
    """Rename this flow run (the evaluate flow, once it made its run id)."""
    if flow_run.id:
        with get_client(sync_client=True) as client:
            client.set_flow_run_name(flow_run.id, name)
