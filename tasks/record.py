"""Record a run (manifest), publish its report to Prefect, audit it, promote it."""
from __future__ import annotations

import re
from typing import Optional

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ek_agents import audit as audit_mod
from ek_agents import record
from ek_agents.manifest import RunInputs
from ek_agents.record import ManifestRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="write-manifest", **TASK_DEFAULTS, **IO_RETRIES)
def write_manifest(store_url: str, run_id: str, refs: dict, inputs: RunInputs,
                   agent: Optional[str], source: Optional[dict], parameters: dict,
                   orchestrator: dict) -> ManifestRef:
    """``record.record_run`` -> the run's manifest (every artifact with its sha256)."""
    return record.record_run(Store(store_url), run_id, refs=refs, inputs=inputs, agent=agent,
                             source=source, parameters=parameters, orchestrator=orchestrator)


def artifact_key(name: str, suffix: str) -> str:
    """A Prefect artifact key (``^[a-z0-9-]*$``) for a suite name: ``shop`` -> ``shop-report``."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-") or "suite"
    return f"{slug}-{suffix}"


@task(name="publish-report", **TASK_DEFAULTS)
def publish_report(store_url: str, run_id: str, manifest: ManifestRef) -> dict:
    """The report as a Prefect markdown artifact and the per-slice figures as a table artifact,
    keyed by suite (``<suite>-report``, ``<suite>-slices``): one version per run."""
    shown = record.report_views(Store(store_url), run_id, manifest.manifest)
    keys = {"report": artifact_key(shown["suite"], "report"),
            "table": artifact_key(shown["suite"], "slices")}
    create_markdown_artifact(shown["markdown"], key=keys["report"],
                             description=f"ek-agents report of run {run_id}")
    create_table_artifact(shown["rows"], key=keys["table"],
                          description=f"per-slice success, pass^k and dollars of run {run_id}")
    return keys


@task(name="audit", **TASK_DEFAULTS, **IO_RETRIES)
def audit(store_url: str, run_id: Optional[str], baseline: Optional[str]) -> dict:
    """``audit.audit``: verify every artifact's sha256 and recompute every figure."""
    result = audit_mod.audit(Store(store_url), run_id, baseline=baseline)
    create_markdown_artifact(result.markdown(), key=artifact_key(result.run_id, "audit"),
                             description="ek-agents audit")
    return result.to_dict()


@task(name="promote", **TASK_DEFAULTS, **IO_RETRIES)
def promote(store_url: str, run_id: str, name: str, replace: bool = False) -> dict:
    """``record.promote_baseline``: the run becomes the named baseline (an existing one only
    when ``replace``)."""
    return record.promote_baseline(Store(store_url), run_id, name, replace)
