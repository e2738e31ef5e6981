"""The ek-agents command line: exit codes 0 / 1 / 2, one-line reasons, Prefect only when needed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ek_agents.cli import main
from ek_agents.records.manifest import RunInputs
from ek_agents.records.segments import RunSegments
from ek_agents.store import Store

from .conftest import AGENT, FLAKY_AGENT, PRICES, ROOT, write_suite


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ek_agents.cli", *args], cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)


@pytest.mark.usefixtures("prefect_api")
def test_run_promote_gate_audit_report(tmp_path, capsys, calls):
    store = str(tmp_path / "store")
    big = write_suite(tmp_path / "big.jsonl", n=30)
    common = ["--suite", big, "--k", "3", "--store", store, "--prices", PRICES]
    assert main(["run", "--agent", AGENT, "--run-id", "base", "--seed", "1", *common]) == 0
    out = capsys.readouterr().out
    assert "| all | 30 | 90 |" in out and "runs/base/manifest.json" in out
    assert main(["promote", "base", "--name", "main", "--store", store]) == 0
    assert main(["run", "--agent", FLAKY_AGENT, "--run-id", "worse", "--seed", "2",
                 "--baseline", "main", *common]) == 1
    err = capsys.readouterr().err.strip().splitlines()  # (Prefect's own log lines come first)
    assert err[-1].startswith("ek-agents: gate failed against baseline 'main': success rate")
    assert main(["gate", "worse", "--baseline", "main", "--store", store]) == 1
    assert main(["gate", "base", "--baseline", "main", "--store", store]) == 0
    assert main(["audit", "worse", "--store", store]) == 0
    # one flipped byte in the segment holding an episode: the audit fails, naming the segment
    st = Store(store)
    key = RunSegments.load(st, "worse").pairs()[("t3", 2)].key
    data = bytearray(st.read_bytes(key))
    data[len(data) // 2] ^= 1
    st.write_bytes(key, bytes(data))
    # as a command: exit 1, one line naming the file, no traceback (this test's server)
    from prefect.settings import PREFECT_API_URL

    r = subprocess.run([sys.executable, "-m", "ek_agents.cli", "audit", "worse", "--store", store],
                       cwd=str(ROOT), capture_output=True, text=True, timeout=120,
                       env={**{k: v for k, v in os.environ.items() if k != "PREFECT_LOGGING_LEVEL"},
                            "PREFECT_API_URL": PREFECT_API_URL.value()})
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert r.stderr.startswith("ek-agents: audit FAILED") and key in r.stderr


def test_bad_input_exits_2_with_one_line(tmp_path, suite):
    r = _run("run", "--suite", suite, "--agent", "no_colon_here", "--store", str(tmp_path / "s"))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "import path" in r.stderr
    assert "Traceback" not in r.stderr
    r = _run("report", "no-such-run", "--store", str(tmp_path / "s"))
    assert r.returncode == 2 and "no manifest" in r.stderr
    r = _run("run", "--suite", suite)  # argparse: a missing --agent
    assert r.returncode == 2


def test_report_and_gate_need_no_prefect(tmp_path, suite, calls):
    """A run made with the library alone, read back by `report` and `gate` without Prefect."""
    from ek_agents.records import baselines, documents, stagecache
    from ek_agents import pipeline
    from ek_agents.stages import evaluate as stages

    st = Store(str(tmp_path / "s"))
    # a hand-built run: every stage function, no flow
    ep = documents.episodes_doc(__import__("ek_agents.execution.harness", fromlist=["x"]).run_trials(
        pipeline.load_agent(AGENT), documents.tasks_of(documents.tasks_doc(
            __import__("ek_agents.suite", fromlist=["x"]).load_suite(suite))), k=2, seed=0))
    tasks = documents.tasks_doc(__import__("ek_agents.suite", fromlist=["x"]).load_suite(suite))
    refs = {"tasks": stagecache.write_tasks(st, "lib", tasks),
            "episodes": stagecache.write_doc(st, "lib", "episodes", ep)}
    graded = stages.grade_stage(ep, tasks)
    refs["graded"] = stagecache.write_doc(st, "lib", "graded", graded)
    metrics = stages.metrics_stage(graded, tasks, k=2)
    refs["metrics"] = stagecache.write_doc(st, "lib", "metrics", metrics)
    refs["report"] = stagecache.write_doc(st, "lib", "report", stages.cost_stage(graded, metrics, None))
    documents.record_run(st, "lib", refs=refs, inputs=RunInputs(k=2, seed=0))
    baselines.promote(st, "lib", "b")
    code = ("import sys; from ek_agents.cli import main; rc = main(sys.argv[1:]); "
            "assert 'prefect' not in sys.modules, 'prefect was imported'; sys.exit(rc)")
    for args in (["report", "lib"], ["report", "lib", "--json"], ["gate", "lib", "--baseline", "b"]):
        r = subprocess.run([sys.executable, "-c", code, *args, "--store", st.url], cwd=str(ROOT),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    assert json.loads(subprocess.run([sys.executable, "-m", "ek_agents.cli", "report", "lib", "--json",
                                      "--store", st.url], cwd=str(ROOT), capture_output=True,
                                     text=True, timeout=60).stdout)["n_trials"] == 12


@pytest.mark.usefixtures("prefect_api")
def test_ingest_an_inspect_log(tmp_path, capsys):
    log = ROOT / "tests" / "fixtures" / "inspect" / "calc.json"
    if not log.exists():
        pytest.skip("no Inspect fixture log")
    store = str(tmp_path / "s")
    assert main(["ingest", "inspect", str(log), "--store", store, "--run-id", "ing"]) == 0
    assert "runs/ing/manifest.json" in capsys.readouterr().out
    man = Store(store).read_manifest("ing")
    assert man["source"] == {"kind": "inspect", "path": str(log)} and man["results"]["n_trials"] > 0
    with pytest.raises(SystemExit) as exc:  # argparse refuses an unknown kind, exit 2
        main(["ingest", "inspekt", str(log), "--store", store])
    assert exc.value.code == 2
