"""``audit-run`` and ``promote-baseline``: the flows over stored runs."""
from __future__ import annotations

from typing import Optional

from ek_agents.stages.audit import AuditResult
from ek_agents.errors import AuditFailed, InvalidInput
from ek_agents.store import Store
from ek_agents_pipeline.tasks import audit, promote, publish_audit

from .context import audit_run_name, promote_run_name
from .entry import entry_flow
from .outcome import fails_as_state

#: Prefect fails (TimedOut) an audit or a promotion that has not finished after this long.
AUDIT_TIMEOUT_S = 3600
PROMOTE_TIMEOUT_S = 600


@entry_flow(name="audit-run", persist_result=False, timeout_seconds=AUDIT_TIMEOUT_S,
      flow_run_name=audit_run_name)
@fails_as_state
def audit_run(run_id: Optional[str] = None, baseline: Optional[str] = None,
              store: Optional[str] = None) -> dict:
    """Re-read a run's manifest (or the run a baseline came from), verify every artifact's
    sha256, recompute grades, metrics, cost and the gate verdict from the stored episodes, and
    compare. Fails (AuditFailed) naming the artifact or figure that differs.

    Exactly one of ``run_id`` / ``baseline``: both given is refused (InvalidInput) rather than
    one silently winning (the deployment has no default for either; its schedule passes
    ``baseline``)."""
    if (run_id is None) == (baseline is None):
        raise InvalidInput(f"audit-run needs exactly one of run_id or baseline, got run_id="
                           f"{run_id!r}, baseline={baseline!r}: pass -p run_id=RUN or "
                           "-p baseline=NAME")
    st = Store(store).url
    result = AuditResult.from_dict(audit(st, run_id, baseline))
    publish_audit(st, result.run_id, baseline, result.markdown())
    if not result.passed:
        raise AuditFailed(result.summary())
    return result.to_dict()


@entry_flow(name="promote-baseline", persist_result=False, timeout_seconds=PROMOTE_TIMEOUT_S,
      flow_run_name=promote_run_name)
@fails_as_state
def promote_baseline(run_id: str, name: str, store: Optional[str] = None,
                     replace: bool = False) -> dict:
    """Make a stored run the baseline ``name`` (``baselines/<name>.json``), its report a
    verified read; an existing ``name`` is refused unless ``replace`` (the replaced baseline
    is kept as an artifact and recorded in the new one)."""
    return promote(Store(store).url, run_id, name, replace)
