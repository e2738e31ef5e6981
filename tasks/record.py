"""Record a run (manifest), publish its report (store + Prefect artifacts + run log), audit it,
promote it."""
from __future__ import annotations

import re
from typing import Optional

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from ek_agents.stages import audit as audit_mod
from ek_agents.report import htmlreport, runsummary
from ek_agents.records import baselines, documents
from ek_agents.errors import EkAgentsError
from ek_agents.records.manifest import RunInputs
from ek_agents.records.stagecache import ManifestRef
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS, deployment_name, run_name


@task(name="write-manifest", task_run_name="manifest-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def write_manifest(store_url: str, run_id: str, refs: dict, inputs: RunInputs,
                   agent: Optional[str], source: Optional[dict], parameters: dict,
                   orchestrator: dict) -> ManifestRef:
    """``documents.record_run`` -> the run's manifest (every artifact with its sha256)."""
    return documents.record_run(Store(store_url), run_id, refs=refs, inputs=inputs, agent=agent,
                             source=source, parameters=parameters, orchestrator=orchestrator)


def series_key(*parts: Optional[str]) -> str:
    """A Prefect artifact key (``^[a-z0-9-]*$``) of a tracked series: the parts slugged and
    joined, ``("nightly", "examples.shop.agents:small_agent", "report")`` ->
    ``nightly-examples-shop-agents-small-agent-report`` (one key per series, one version per run)."""
    slugs = [re.sub(r"[^a-z0-9]+", "-", str(p).lower()).strip("-") for p in parts if p]
    return "-".join(s for s in slugs if s) or "ek-agents"


def series_name(suite: Optional[str]) -> Optional[str]:
    """The first part of a series key: the deployment's name when a deployment runs the flow
    (``nightly``), else the suite's name."""
    return deployment_name() or suite


@task(name="publish-report", task_run_name="report-{run_id}", **TASK_DEFAULTS)
def publish_report(store_url: str, run_id: str, manifest: ManifestRef) -> dict:
    """``htmlreport.publish_run``: the HTML report into the store (``runs/<id>/report.html``),
    the Markdown report and the per-slice table as Prefect artifacts keyed per tracked series
    (``<deployment or suite>-<agent>-report`` and ``-slices``: one version per run), and the
    run's figures in the run log."""
    shown = htmlreport.publish_run(Store(store_url), run_id)
    logger = get_run_logger()
    for line in shown.log:
        logger.info(line)
    logger.info("HTML report: %s/%s", store_url, shown.html_key)
    series = series_name(shown.suite)
    keys = {"report": series_key(series, shown.agent, "report"),
            "table": series_key(series, shown.agent, "slices"), "html": shown.html_key}
    create_markdown_artifact(shown.markdown, key=keys["report"],
                             description=f"ek-agents report of run {run_id} ({shown.agent})")
    create_table_artifact(shown.rows, key=keys["table"],
                          description=f"per-slice success, pass^k and dollars of run {run_id}")
    return keys


@task(name="audit", task_run_name=run_name("audit", against="baseline"), **TASK_DEFAULTS, **IO_RETRIES)
def audit(store_url: str, run_id: Optional[str], baseline: Optional[str]) -> dict:
    """``audit.audit``: verify every artifact's sha256 and recompute every figure; the verdict
    in the run log."""
    result = audit_mod.audit(Store(store_url), run_id, baseline=baseline)
    get_run_logger().info(result.summary())
    return result.to_dict()


@task(name="publish-audit", task_run_name="audit-report-{run_id}", **TASK_DEFAULTS, **IO_RETRIES)
def publish_audit(store_url: str, run_id: str, baseline: Optional[str], markdown: str) -> str:
    """The audit's Markdown as a Prefect artifact keyed per baseline (``baseline-<name>-audit``)
    or, for a run audited by id, per the run's series (``<deployment or suite>-<agent>-audit``,
    ``runsummary.load_runs`` names them): one version per audit, never one key per run."""
    if baseline:
        key = series_key("baseline", baseline, "audit")
    else:
        try:
            run = runsummary.load_runs(Store(store_url), [run_id])[0]
            key = series_key(series_name(run.suite), run.agent, "audit")
        except EkAgentsError:  # a run too damaged to name its series: the audit says why
            key = series_key("run", run_id, "audit")
    create_markdown_artifact(markdown, key=key, description=f"ek-agents audit of run {run_id}")
    return key


@task(name="promote", task_run_name="promote-{run_id}-to-{name}", **TASK_DEFAULTS, **IO_RETRIES)
def promote(store_url: str, run_id: str, name: str, replace: bool = False) -> dict:
    """``baselines.promote_baseline``: the run becomes the named baseline (an existing one only
    when ``replace``)."""
    return baselines.promote_baseline(Store(store_url), run_id, name, replace)
