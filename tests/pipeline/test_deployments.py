"""Deployments: prefect.yaml and serve.py define what they say; a real Prefect server runs one.

The integration test starts ``prefect server start`` on 127.0.0.1 (temporary PREFECT_HOME,
analytics off), serves ``evaluate-agent/manual`` with ``deployments/serve.py`` in a
subprocess, triggers it with parameters through ``run_deployment``, and checks the flow run
Completed and wrote its manifest into the store.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from ek_agents.store import Store

from .conftest import AGENT, ROOT


def test_prefect_yaml_names_real_flows_and_valid_parameters():
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    names = {d["name"]: d for d in spec["deployments"]}
    assert set(names) == {"nightly", "manual", "audit"}
    assert names["nightly"]["schedules"][0]["cron"] == "0 3 * * *"
    assert all(d["work_pool"]["name"] == "ek-agents" for d in names.values())
    for d in names.values():
        path, _, fn = d["entrypoint"].partition(":")
        flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + fn)
        flow.validate_parameters(d.get("parameters") or {})  # raises on a bad parameter
    assert (ROOT / names["nightly"]["parameters"]["suite"]).exists()


def test_serve_builds_the_three_deployments():
    sys.path.insert(0, str(ROOT / "deployments"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    deps = serve.deployments()
    assert {d.name for d in deps.values()} == {"nightly", "manual", "audit"}
    assert deps["nightly"].schedules and deps["manual"].parameters == {"k": 1}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ok, timeout: float, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}")
        try:
            if ok():
                return
        except Exception:  # noqa: BLE001 -- not up yet
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {timeout} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.mark.integration
def test_deployments_run_on_a_real_server(tmp_path, suite):
    """Serve ``evaluate-agent/manual`` (flow.serve) and run it with parameters; then deploy
    prefect.yaml to a process work pool and run ``audit-run/audit`` on a process worker."""
    port = _free_port()
    api = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home"),
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_RUNNER_POLL_FREQUENCY": "2",
           "PREFECT_WORKER_QUERY_SECONDS": "2", "EK_AGENTS_HOME": str(ROOT)}
    env.pop("PREFECT_API_URL", None)
    logs = tmp_path / "logs"
    logs.mkdir()
    procs: list = []

    def start(name: str, *cmd: str, **kw) -> subprocess.Popen:
        p = subprocess.Popen(list(cmd), stdout=open(logs / f"{name}.log", "wb"),
                             stderr=subprocess.STDOUT, start_new_session=True, **kw)
        procs.append(p)
        return p

    prefect = [sys.executable, "-m", "prefect"]
    server = start("server", *prefect, "server", "start", "--host", "127.0.0.1", "--port",
                   str(port), env=env)
    client_env = {**env, "PREFECT_API_URL": api}
    try:
        _wait("prefect server", lambda: urllib.request.urlopen(f"{api}/health", timeout=2).status == 200,
              120, server)
        served = start("serve", sys.executable, str(ROOT / "deployments" / "serve.py"), "--only",
                       "manual", env=client_env, cwd=str(ROOT))

        from prefect.client.orchestration import get_client
        from prefect.deployments import run_deployment
        from prefect.settings import PREFECT_API_URL, temporary_settings

        def deployed(name: str):
            def ok() -> bool:
                with get_client(sync_client=True) as c:
                    return c.read_deployment_by_name(name) is not None
            return ok

        store = str(tmp_path / "store")
        with temporary_settings(updates={PREFECT_API_URL: api}):
            _wait("served deployment", deployed("evaluate-agent/manual"), 120, served)
            fr = run_deployment("evaluate-agent/manual", timeout=180, parameters={
                "suite": suite, "agent": AGENT, "k": 2, "seed": 4, "store": store,
                "run_id": "served"})
            with get_client(sync_client=True) as c:
                run = c.read_flow_run(fr.id)
            assert run.state.name == "Completed", (logs / "serve.log").read_text()[-3000:]
            assert run.parameters["k"] == 2
            man = Store(store).read_manifest("served")
            assert man["orchestrator"]["flow_run_id"] == str(fr.id)
            assert man["orchestrator"]["deployment_id"] == str(run.deployment_id)
            assert man["results"]["n_trials"] == 12
            _stop(served)

            # prefect.yaml on a process work pool, run by a worker
            for cmd in (["work-pool", "create", "ek-agents", "--type", "process"],
                        ["--no-prompt", "deploy", "--all", "--prefect-file", "deployments/prefect.yaml"]):
                r = subprocess.run(prefect + cmd, env=client_env, cwd=str(ROOT), capture_output=True,
                                   text=True, timeout=120)
                assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
            with get_client(sync_client=True) as c:
                nightly = c.read_deployment_by_name("evaluate-agent/nightly")
            assert nightly.schedules[0].schedule.cron == "0 3 * * *"
            worker = start("worker", *prefect, "worker", "start", "--pool", "ek-agents", "--limit", "1",
                           env=client_env, cwd=str(ROOT))
            fr = run_deployment("audit-run/audit", timeout=180,
                                parameters={"run_id": "served", "baseline": None, "store": store})
            with get_client(sync_client=True) as c:
                run = c.read_flow_run(fr.id)
            assert worker.poll() is None
        assert run.state.name == "Completed", (logs / "worker.log").read_text()[-3000:]
    finally:
        for p in reversed(procs):
            _stop(p)
