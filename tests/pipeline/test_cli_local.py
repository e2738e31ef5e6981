"""``ek-agents run`` with no Prefect API configured runs the evaluate plan in this process
(``ek_agents.localrun``), without importing Prefect, and writes the flow's stage documents byte
for byte; with an API configured the flow runs there and is recorded."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types

import pytest

from ek_agents.execution import _trialrunner as trialrunner
from ek_agents.stages.audit import audit
from ek_agents.cli import main
from ek_agents.store import Store

from ..harness.layout import held_lines
from .conftest import AGENT, FLAKY_AGENT, PRICES, ROOT, write_suite

#: Runs main(); exits with its code; exits 99 if Prefect was imported on the way.
WRAPPER = ("import sys\nfrom ek_agents.cli import main\nrc = main(sys.argv[1:])\n"
           "if 'prefect' in sys.modules:\n    print('prefect was imported', file=sys.stderr)\n"
           "    rc = 99\nsys.exit(rc)\n")
#: What a manifest records of how the run was orchestrated, not what it computed.
ORCHESTRATION = ("orchestrator", "parameters", "created_at")


def _no_api_env(tmp_path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")  # no profile there: no API configured
    return env


def test_run_without_an_api_runs_here_without_prefect(tmp_path):
    suite = write_suite(tmp_path / "s.jsonl")
    store = str(tmp_path / "st")
    r = subprocess.run([sys.executable, "-c", WRAPPER, "-v", "run", "--suite", suite, "--agent",
                        AGENT, "--k", "2", "--prices", PRICES, "--store", store, "--run-id", "r1"],
                       cwd=str(ROOT), env=_no_api_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| all | 6 | 12 |" in r.stdout and "runs/r1/manifest.json" in r.stdout
    err = r.stderr.splitlines()
    assert ("ek-agents: no Prefect API configured: ran in-process; set PREFECT_API_URL or pass "
            "--prefect-server to record the flow run") in err
    timing = [x for x in err if x.startswith("ek-agents: time:")]
    assert len(timing) == 1 and "plan (in-process)" in timing[0] and "server" not in timing[0]
    assert any("running 12 trials" in x for x in err), err  # the run log, on -v
    assert not (tmp_path / "prefect-home").exists(), "Prefect made its home: it ran"
    st = Store(store)
    man = st.read_manifest("r1")
    assert man["orchestrator"] == {"orchestrator": "none", "runner": "ek_agents.localrun"}
    assert man["parameters"]["k"] == 2 and man["parameters"]["agent"] == AGENT
    assert man["results"]["n_trials"] == 12
    assert st.read_bytes("runs/r1/report.html").startswith(b"<!DOCTYPE html>")
    assert audit(st, "r1").passed
    # the same command again: the plan reuses every stored episode, calls no agent
    r = subprocess.run([sys.executable, "-c", WRAPPER, "run", "--suite", suite, "--agent", AGENT,
                        "--k", "2", "--prices", PRICES, "--store", store, "--run-id", "r2"],
                       cwd=str(ROOT), env=_no_api_env(tmp_path), capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert st.read_manifest("r2")["stages"]["episodes"]["reused_from"] == "r1"


def test_in_process_exit_codes_are_the_flows(tmp_path, monkeypatch, capsys, calls):
    """Gate failed: 1; a resume with another agent: 2 (RunMismatch); the run's report printed."""
    monkeypatch.setattr(_local(), "configured_api", lambda: None)
    suite = write_suite(tmp_path / "s.jsonl", n=30)
    store = str(tmp_path / "st")
    common = ["--suite", suite, "--k", "3", "--store", store]
    assert main(["run", "--agent", AGENT, "--run-id", "base", "--seed", "1", *common]) == 0
    assert main(["promote", "base", "--name", "main", "--store", store]) == 0
    capsys.readouterr()
    assert main(["run", "--agent", FLAKY_AGENT, "--run-id", "worse", "--seed", "2",
                 "--baseline", "main", *common]) == 1
    out, err = capsys.readouterr()
    assert err.strip().splitlines()[-1].startswith("ek-agents: gate failed against baseline 'main'")
    assert "# tiny 1: run `worse`" in out  # the report, printed as the flow path prints it
    assert main(["run", "--agent", FLAKY_AGENT, "--run-id", "base", "--seed", "1", *common]) == 2
    assert "RunMismatch" in capsys.readouterr().err
    # the sequential gate, in this process: stops early on the worse agent, exit 1
    calls.clear()
    assert main(["run", "--agent", FLAKY_AGENT, "--run-id", "seq", "--seed", "2", "--baseline",
                 "main", "--sequential", *common]) == 1
    seq = Store(store).read_manifest("seq")["sequential"]
    assert seq["stopped_early"] and seq["trials_run"] == len(calls) < 90
    assert audit(Store(store), "seq").passed


def _local():
    import importlib

    return importlib.import_module("ek_agents_pipeline.flows.local")


@pytest.fixture
def fixed_clock(monkeypatch):
    """The harness measures each trial's latency on the wall clock: stop that clock, so that
    two runs of the same trials write the same bytes."""
    monkeypatch.setattr(trialrunner, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))


def _twice(tmp_path, monkeypatch, capsys, args: list, *, code: int = 0,
           before: tuple = ()) -> tuple[Store, Store]:
    """``ek-agents ARGS`` through the flow (the test server) into one store, and in this
    process (no API configured) into a copy of it; the store first prepared by the ``before``
    commands (so both runs see the same baseline, byte for byte)."""
    flow, here = str(tmp_path / "flow"), str(tmp_path / "here")
    for cmd in before:
        assert main([*cmd, "--store", flow]) == 0
    if before:
        shutil.copytree(flow, here)
    assert main([*args, "--store", flow]) == code, capsys.readouterr().err[-2000:]
    with monkeypatch.context() as m:
        m.setattr(_local(), "configured_api", lambda: None)
        assert main([*args, "--store", here]) == code, capsys.readouterr().err[-2000:]
    capsys.readouterr()
    return Store(flow), Store(here)


def _trial_objects(artifacts: dict) -> dict:
    return {k: v for k, v in artifacts.items() if "/segments/" in k or "/segment-index/" in k}


def _assert_same_stage_documents(flow: Store, here: Store, run_id: str) -> None:
    a, b = flow.read_manifest(run_id), here.read_manifest(run_id)
    assert a["orchestrator"]["orchestrator"] == "prefect" and a["orchestrator"]["flow_run_id"]
    assert b["orchestrator"]["orchestrator"] == "none"
    # the trials: the same lines, in segments whose cut and writer names depend on the chunks
    # that ran at once (the flow's task runner, or one loop here)
    assert held_lines(flow, run_id) == held_lines(here, run_id)
    assert bool(_trial_objects(a["artifacts"])) == bool(_trial_objects(b["artifacts"]))
    docs_a, docs_b = ({k: v for k, v in m["artifacts"].items() if k not in _trial_objects(m["artifacts"])}
                      for m in (a, b))
    assert sorted(docs_a) == sorted(docs_b)
    differ = [key for key in docs_a if docs_a[key] != docs_b[key]]
    assert not differ, differ
    for key, sha in b["artifacts"].items():  # and each digest is that of the bytes stored
        assert here.digest(key) == sha
    for field in set(a) | set(b):
        if field not in (*ORCHESTRATION, "artifacts"):
            assert a.get(field) == b.get(field), field
    assert audit(flow, run_id).passed and audit(here, run_id).passed


@pytest.mark.usefixtures("prefect_api", "fixed_clock")
@pytest.mark.parametrize("mode", ["fixed", "sequential"])
def test_in_process_run_writes_the_flows_stage_documents(tmp_path, monkeypatch, capsys, calls,
                                                         mode):
    suite = write_suite(tmp_path / "s.jsonl", n=12)
    common = ["--suite", suite, "--k", "3", "--prices", PRICES, "--chunk-size", "5"]
    before: tuple = ()
    args = ["run", "--agent", AGENT, "--seed", "4", "--run-id", "p", *common]
    code = 0
    if mode == "sequential":
        before = (["run", "--agent", AGENT, "--seed", "1", "--run-id", "base", *common],
                  ["promote", "base", "--name", "main"])
        args = ["run", "--agent", FLAKY_AGENT, "--seed", "2", "--run-id", "p", "--baseline",
                "main", "--sequential", *common]
        code = 1
    flow, here = _twice(tmp_path, monkeypatch, capsys, args, code=code, before=before)
    _assert_same_stage_documents(flow, here, "p")
    # the flow run is recorded by the configured API (the test server)
    from prefect import get_client

    flow_run_id = flow.read_manifest("p")["orchestrator"]["flow_run_id"]
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(flow_run_id).name.startswith("p: ")
    # and `report` prints the same figures from either store
    shown = []
    for st in (flow, here):
        assert main(["report", "p", "--store", st.url]) == 0
        shown.append(capsys.readouterr().out)
    assert shown[0] == shown[1] and "| all | 12 |" in shown[0]


@pytest.mark.usefixtures("prefect_api")
def test_in_process_ingest_writes_the_flows_stage_documents(tmp_path, monkeypatch, capsys):
    log = ROOT / "tests" / "fixtures" / "inspect" / "calc.json"
    if not log.exists():
        pytest.skip("no Inspect fixture log")
    flow, here = _twice(tmp_path, monkeypatch, capsys,
                        ["ingest", "inspect", str(log), "--run-id", "p"])
    _assert_same_stage_documents(flow, here, "p")
    assert here.read_manifest("p")["source"] == {"kind": "inspect", "path": str(log)}


def test_dask_runner_needs_prefect(tmp_path):
    from ek_agents.errors import InvalidInput
    from ek_agents.localrun import evaluate_agent

    with pytest.raises(InvalidInput, match="PREFECT_API_URL"):
        evaluate_agent(suite=write_suite(tmp_path / "s.jsonl"), agent=AGENT,
                       store=str(tmp_path / "st"), task_runner="dask")
