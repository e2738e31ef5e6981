"""Record a run (manifest), publish its report to Prefect, audit it, promote it."""
from __future__ import annotations

import re
from typing import Optional

from prefect import task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ek_agents import audit as _audit
from ek_agents import manifest as _manifest
from ek_agents import stages
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="write-manifest", **TASK_DEFAULTS, **IO_RETRIES)
def write_manifest(store_url: str, run_id: str, refs: dict, inputs: dict, agent: Optional[str],
                   source: Optional[dict], parameters: dict, orchestrator: dict) -> dict:
    """``stages.record_run`` -> ``runs/<run_id>/manifest.json`` (every artifact with its sha256)."""
    return stages.record_run(Store(store_url), run_id, refs=refs, inputs=inputs, agent=agent,
                             source=source, parameters=parameters, orchestrator=orchestrator)


def artifact_key(name: str, suffix: str) -> str:
    """A Prefect artifact key (``^[a-z0-9-]*$``) for a suite name: ``shop`` -> ``shop-report``."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-") or "suite"
    return f"{slug}-{suffix}"


@task(name="publish-report", **TASK_DEFAULTS)
def publish_report(store_url: str, run_id: str, manifest: dict) -> dict:
    """The report as a Prefect markdown artifact and the per-slice figures as a table artifact,
    keyed by suite (``<suite>-report``, ``<suite>-slices``): one version per run."""
    man = manifest["manifest"]  # write-manifest's reference carries it: no re-read
    report = Store(store_url).read_json(stages.run_key(run_id, "report"))
    suite = (man.get("suite") or {}).get("name", "suite")
    keys = {"report": artifact_key(suite, "report"), "table": artifact_key(suite, "slices")}
    create_markdown_artifact(_manifest.report_markdown(man, report), key=keys["report"],
                             description=f"ek-agents report of run {run_id}")
    create_table_artifact(_manifest.report_rows(report), key=keys["table"],
                          description=f"per-slice success, pass^k and dollars of run {run_id}")
    return keys


@task(name="audit", **TASK_DEFAULTS, **IO_RETRIES)
def audit(store_url: str, run_id: Optional[str], baseline: Optional[str]) -> dict:
    """``audit.audit``: verify every artifact's sha256 and recompute every figure."""
    result = _audit.audit(Store(store_url), run_id, baseline=baseline)
    create_markdown_artifact(
        "\n".join([f"# {result.summary()}", ""] + [f"- {p}" for p in result.problems]) + "\n",
        key=artifact_key(result.run_id, "audit"), description="ek-agents audit")
    return result.to_dict()


@task(name="promote", **TASK_DEFAULTS, **IO_RETRIES)
def promote(store_url: str, run_id: str, name: str) -> dict:
    """``stages.promote`` -> ``baselines/<name>.json`` (``harness.save_agent_baseline``)."""
    doc = stages.promote(Store(store_url), run_id, name)
    return {"baseline": name, "key": f"baselines/{name}.json", "run_id": run_id,
            "created": doc.get("created")}
