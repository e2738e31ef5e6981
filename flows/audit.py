"""``audit-run`` and ``promote-baseline``: the flows over stored runs."""
from __future__ import annotations

from typing import Optional

from prefect import flow

from ek_agents.audit import AuditResult
from ek_agents.errors import AuditFailed
from ek_agents.store import Store
from ek_agents_pipeline.tasks import audit, promote, publish_audit

from .context import audit_run_name, promote_run_name
from .outcome import fails_as_state

#: Prefect fails (TimedOut) an audit or a promotion that has not finished after this long.
AUDIT_TIMEOUT_S = 3600
PROMOTE_TIMEOUT_S = 600


@flow(name="audit-run", persist_result=False, timeout_seconds=AUDIT_TIMEOUT_S,
      flow_run_name=audit_run_name)
@fails_as_state
def audit_run(run_id: Optional[str] = None, baseline: Optional[str] = None,
              store: Optional[str] = None) -> dict:
    """Re-read a run's manifest (or the run a baseline came from), verify every artifact's
    sha256, recompute grades, metrics, cost and the gate verdict from the stored episodes, and
    compare. Fails (AuditFailed) naming the artifact or figure that differs."""
    st = Store(store).url
    result = AuditResult.from_dict(audit(st, run_id, baseline))
    publish_audit(st, result.run_id, baseline, result.markdown())
    if not result.passed:
        raise AuditFailed(result.summary())
    return result.to_dict()


@flow(name="promote-baseline", persist_result=False, timeout_seconds=PROMOTE_TIMEOUT_S,
      flow_run_name=promote_run_name)
@fails_as_state
def promote_baseline(run_id: str, name: str, store: Optional[str] = None) -> dict:
    """Make a stored run the baseline ``name`` (``baselines/<name>.json``)."""
    return promote(Store(store).url, run_id, name)
