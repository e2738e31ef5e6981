"""The pipeline as an operator sees it in the Prefect UI, against a real Prefect server.

One ``prefect server start`` (127.0.0.1, a free port, a temporary PREFECT_HOME) for the module:

- two runs of each of two agents, a promotion and an audit, called in this process: the
  artifact keys are the documented series keys (``<suite>-<agent>-report`` / ``-slices``,
  ``baseline-<name>-audit``) with one version per run, the flow run names carry the run ids
  (one made inside the flow), the run logs carry the figures, and a failed flow run leaves no
  pickled exception under the local result storage;
- prefect.yaml deployed to a process work pool with a worker, then ``deployments/serve.py``
  serving beside it: both kinds of deployment run (and a failed deployment run leaves nothing
  under the worker's ``$PREFECT_HOME/storage``).
"""
from __future__ import annotations

import re
import time

import contextlib
import json
import logging
import sys
from pathlib import Path

import pytest

from ek_agents.errors import GateFailed
from ek_agents.report.runsummary import fmt_dollars, fmt_percent, load_runs
from ek_agents.store import Store

from .conftest import AGENT, FLAKY_AGENT, PRICES, ROOT, write_suite
from .prefectserver import PREFECT, PrefectServer, wait_for

pytestmark = pytest.mark.integration

SUITE = "tiny"
GOOD = f"{SUITE}-tests-pipeline-pipeline-agents-counting-agent"
WORSE = f"{SUITE}-tests-pipeline-pipeline-agents-worse-agent"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = PrefectServer(tmp_path_factory.mktemp("prefect-ui"))
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def on_server(server):
    """This process talks to ``server`` (heartbeat off), with INFO run logs sent to it."""
    from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings

    from prefect.events.clients import PrefectEventsClient
    from prefect.events.worker import EventsWorker

    # task runs reach the server as events, through one EventsWorker per client type: point it
    # at this server (one made earlier in the session, e.g. under prefect_test_harness, keeps
    # the API it was made for)
    EventsWorker.set_client_override(PrefectEventsClient, api_url=server.api)
    try:
        with temporary_settings(updates={PREFECT_API_URL: server.api,
                                         PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            yield server
            EventsWorker.drain_all()
    finally:
        EventsWorker.set_client_override(None)


@contextlib.contextmanager
def info_logs():
    """Run loggers at INFO (the session runs with PREFECT_LOGGING_LEVEL=WARNING); set after
    Prefect configured its logging, which resets the levels."""
    loggers = [logging.getLogger(n) for n in ("prefect.flow_runs", "prefect.task_runs")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.INFO)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def _artifacts(client, key: str) -> list:
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    return client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))


def _log_text(client, flow_run_id) -> str:
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

    logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[flow_run_id])))
    return "\n".join(log.message for log in logs)


def test_runs_read_well_in_the_ui(on_server, tmp_path):
    from prefect import flow
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterName
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogHandler
    from prefect.settings import PREFECT_LOCAL_STORAGE_PATH

    from ek_agents_pipeline.flows import audit_run, evaluate_agent, promote_baseline

    # the control: a plain failing flow persists its exception, pickled, despite persist_result=False
    storage = Path(PREFECT_LOCAL_STORAGE_PATH.value())
    before = set(_files(storage))

    @flow(persist_result=False)
    def plain_failure() -> None:
        raise ValueError("the control")

    with pytest.raises(ValueError):
        plain_failure()
    pickled = set(_files(storage)) - before
    assert len(pickled) == 1 and b"the control" not in next(iter(pickled)).read_bytes()  # a pickle
    for p in pickled:
        p.unlink()

    store = str(tmp_path / "store")
    suite = write_suite(tmp_path / f"{SUITE}.jsonl", n=12)
    common = dict(suite=suite, k=2, store=store, prices=PRICES)
    with info_logs():
        evaluate_agent(agent=AGENT, seed=1, run_id="good-1", **common)
        evaluate_agent(agent=FLAKY_AGENT, seed=1, run_id="worse-1", **common)
        promote_baseline(run_id="good-1", name="tiny-main", store=store)
        good2 = evaluate_agent(agent=AGENT, seed=1, baseline="tiny-main", **common)["run_id"]  # id made inside
        with pytest.raises(GateFailed):
            evaluate_agent(agent=FLAKY_AGENT, seed=2, run_id="worse-2", baseline="tiny-main", **common)
        assert audit_run(baseline="tiny-main", store=store)["passed"]
        APILogHandler().flush()
        EventsWorker.drain_all()  # the task runs' states
    runs = {r.run_id: r for r in load_runs(store, ["good-1", "worse-1", good2, "worse-2"])}

    with get_client(sync_client=True) as c:
        # artifact keys: one per tracked series, one version per run of it
        for key, ids in {f"{GOOD}-report": ["good-1", good2], f"{WORSE}-report": ["worse-1", "worse-2"],
                         f"{GOOD}-slices": ["good-1", good2], f"{WORSE}-slices": ["worse-1", "worse-2"],
                         "baseline-tiny-main-audit": ["good-1"]}.items():
            versions = _artifacts(c, key)
            assert len(versions) == len(ids), (key, [a.key for a in versions])
            assert all(any(rid in str(a.data) for rid in ids) for a in versions)
        every = {a.key for a in c.read_artifacts() if a.key}
        assert every == {f"{GOOD}-report", f"{WORSE}-report", f"{GOOD}-slices", f"{WORSE}-slices",
                         "baseline-tiny-main-audit"}
        rows = json.loads(_artifacts(c, f"{WORSE}-slices")[0].data)
        assert {r["agent"] for r in rows} == {FLAKY_AGENT} and len({r["run_id"] for r in rows}) == 1
        assert all(r["success"].endswith("%") and r["$/success"].startswith("$") for r in rows)

        # flow run names carry the run ids; task run names say what they hold
        flow_runs = {fr.name: fr for fr in c.read_flow_runs()}
        names = set(flow_runs)
        for rid, agent in [("good-1", "counting_agent"), ("worse-1", "worse_agent"),
                           (good2, "counting_agent"), ("worse-2", "worse_agent")]:
            assert f"{rid}: {agent} on {SUITE}" in names, names
        assert {"promote good-1 to tiny-main", "audit baseline tiny-main"} <= names
        want = {"trials-worse-2-0", "grade-worse-2", "gate-worse-2-vs-tiny-main", "gate-good-1", "report-worse-2",
                "manifest-good-1", "cost-good-1", "metrics-good-1-k2", "audit-baseline-tiny-main",
                "promote-good-1-to-tiny-main"}
        named = TaskRunFilter(name=TaskRunFilterName(any_=sorted(want)))  # the API pages at 200
        # the server writes task runs from their events asynchronously: on a busy machine some
        # are not listed yet right after the drain, so ask again for a bounded while
        deadline = time.monotonic() + 60
        while True:
            seen = {t.name for t in c.read_task_runs(task_run_filter=named)}
            if want <= seen or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert want <= seen, sorted(want - seen)
        assert flow_runs["worse-2: worse_agent on tiny"].state.name == "Failed"

        # the run logs carry the figures: trials and reuse, success, cost per success, verdict
        for rid, run in runs.items():
            text = _log_text(c, flow_runs[f"{rid}: {run.agent.rpartition(':')[2]} on {SUITE}"].id)
            assert f"{run.n_trials} trials of {run.n_tasks} tasks" in text
            assert f"success {fmt_percent(run.success_rate)}" in text
            assert f"cost per success {fmt_dollars(run.cost_per_success)}" in text
        assert re.search(r"episodes reused: \d+ episodes from run good-1",  # the cache hit
                         _log_text(c, flow_runs[f"{good2}: counting_agent on {SUITE}"].id))
        assert "episodes reused: no" in _log_text(c, flow_runs["good-1: counting_agent on tiny"].id)
        assert "gate vs baseline 'tiny-main': passed" in \
            _log_text(c, flow_runs[f"{good2}: counting_agent on {SUITE}"].id)
        assert "gate vs baseline 'tiny-main': FAILED" in \
            _log_text(c, flow_runs["worse-2: worse_agent on tiny"].id)
        assert "audit passed" in _log_text(c, flow_runs["audit baseline tiny-main"].id)

    # each run's HTML report is in the store beside it; no failed run left a pickle behind
    assert Store(store).read_bytes(_report_key("worse-2")).startswith(b"<!DOCTYPE html>")
    assert set(_files(storage)) <= before


def _report_key(run_id: str) -> str:
    from ek_agents.report.htmlreport import REPORT_FILE
    from ek_agents.store import run_file_key

    return run_file_key(run_id, REPORT_FILE)


@pytest.mark.timeout(900)
def test_serving_after_deploying_keeps_both_kinds_of_deployment(on_server, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    srv = on_server
    srv.prefect("work-pool", "create", "ek-agents", "--type", "process")
    srv.prefect("--no-prompt", "deploy", "--prefect-file", "deployments/prefect.yaml",
                "-n", "evaluate-agent/manual", "-n", "promote-baseline/promote")
    srv.start("worker", *PREFECT, "worker", "start", "--pool", "ek-agents", "--limit", "1", cwd=str(ROOT))
    served = srv.start("serve", sys.executable, str(ROOT / "deployments" / "serve.py"), "--only", "manual",
                       cwd=str(ROOT))

    def deployed(name: str):
        def ok() -> bool:
            with get_client(sync_client=True) as c:
                return c.read_deployment_by_name(name) is not None
        return ok

    wait_for("served deployment", deployed("evaluate-agent/manual-served"), 120, served)
    with get_client(sync_client=True) as c:
        manual = c.read_deployment_by_name("evaluate-agent/manual")
        promote = c.read_deployment_by_name("promote-baseline/promote")
    assert manual.work_pool_name == "ek-agents" and manual.pull_steps  # still the deployed one
    assert promote.parameter_openapi_schema["required"] == ["run_id", "name"]  # the run form asks

    store = str(tmp_path / "store")
    suite = write_suite(tmp_path / f"{SUITE}.jsonl")
    params = dict(suite=suite, agent=AGENT, k=1, seed=3, store=store)
    runs = {}
    for name, rid in [("evaluate-agent/manual", "deployed"), ("evaluate-agent/manual-served", "served")]:
        fr = run_deployment(name, timeout=240, parameters={**params, "run_id": rid})
        with get_client(sync_client=True) as c:
            runs[rid] = c.read_flow_run(fr.id)
    assert runs["deployed"].state.name == "Completed", srv.log("worker")
    assert runs["served"].state.name == "Completed", srv.log("serve")
    assert runs["deployed"].name.startswith("deployed: counting_agent")
    assert runs["served"].name.startswith("served: counting_agent")
    for rid, run in runs.items():
        orchestrator = Store(store).read_manifest(rid)["orchestrator"]
        assert orchestrator["flow_run_id"] == str(run.id)
        assert orchestrator["deployment_id"] == str(run.deployment_id)
    with get_client(sync_client=True) as c:
        # the deployment's name leads the series key
        assert len(_artifacts(c, "manual-tests-pipeline-pipeline-agents-counting-agent-report")) == 1
        assert len(_artifacts(c, "manual-served-tests-pipeline-pipeline-agents-counting-agent-report")) == 1

    # a deployment run that fails (no such run to promote) leaves no pickle in the worker's storage
    fr = run_deployment("promote-baseline/promote", timeout=240,
                        parameters={"run_id": "no-such-run", "name": "x", "store": store})
    with get_client(sync_client=True) as c:
        failed = c.read_flow_run(fr.id)
    assert failed.state.name == "Failed" and "no-such-run" in (failed.state.message or ""), srv.log("worker")
    assert failed.name == "promote no-such-run to x"
    assert _files(srv.home / "storage") == []
