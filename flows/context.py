"""What Prefect knows about the current flow run, for the manifest."""
from __future__ import annotations

import prefect
from prefect.runtime import deployment, flow_run


def run_context() -> dict:
    """The orchestrator's record of this run: flow-run id and name, flow, deployment."""
    return {"orchestrator": "prefect", "prefect_version": prefect.__version__,
            "flow_run_id": flow_run.id, "flow_run_name": flow_run.name,
            "flow_name": flow_run.flow_name, "parent_flow_run_id": flow_run.parent_flow_run_id,
            "deployment_id": deployment.id}


def run_parameters() -> dict:
    """The parameters this flow run was called with."""
    return dict(flow_run.parameters)


def scheduled_seed() -> int:
    """A seed derived from this flow run's scheduled start time (milliseconds since the epoch):
    each scheduled run of a deployment draws afresh, and the seed is recorded in the manifest."""
    when = flow_run.scheduled_start_time
    return int(when.timestamp() * 1000)
