"""``audit-run`` and ``promote-baseline``: the flows over stored runs."""
from __future__ import annotations

from typing import Optional

from prefect import flow

from ek_agents.audit import AuditResult
from ek_agents.errors import AuditFailed
from ek_agents.store import Store
from ek_agents_pipeline.tasks import audit, promote


@flow(name="audit-run", persist_result=False)
def audit_run(run_id: Optional[str] = None, baseline: Optional[str] = None,
              store: Optional[str] = None) -> dict:
    """Re-read a run's manifest (or the run a baseline came from), verify every artifact's
    sha256, recompute grades, metrics, cost and the gate verdict from the stored episodes, and
    compare. Fails (AuditFailed) naming the artifact or figure that differs."""
    result = AuditResult.from_dict(audit(Store(store).url, run_id, baseline))
    if not result.passed:
        raise AuditFailed(result.summary())
    return result.to_dict()


@flow(name="promote-baseline", persist_result=False)
def promote_baseline(run_id: str, name: str, store: Optional[str] = None) -> dict:
    """Make a stored run the baseline ``name`` (``baselines/<name>.json``)."""
    return promote(Store(store).url, run_id, name)
