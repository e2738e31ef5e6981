"""The CLI refuses bad input before Prefect starts or an agent is called (one line on stderr,
exit 2), answers store commands without Prefect, and leaves no Prefect server behind."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ek_agents import cli
from ek_agents import pipeline
from ek_agents.execution.harness import run_suite
from ek_agents.records.segments import RunSegments, encode_segment, read_segment
from ek_agents.store import Store

from .conftest import PRICES, ROOT, write_suite

MARKING_AGENT = "tests.pipeline.test_cli_inputs:marking_agent"
SLOW_AGENT = "tests.pipeline.test_cli_inputs:slow_agent"

#: Runs main(); exits with its code; fails (exit 99) if Prefect was imported on the way.
WRAPPER = ("import sys\nfrom ek_agents.cli import main\ntry:\n    rc = main(sys.argv[1:])\n"
           "except SystemExit as e:\n    rc = e.code\n"
           "if 'prefect' in sys.modules:\n    print('prefect was imported', file=sys.stderr)\n"
           "    rc = 99\nsys.exit(rc)\n")


def marking_agent(task, *, seed):
    """Appends a line to $EK_TEST_CALLS for every call (calls are counted across processes)."""
    with open(os.environ["EK_TEST_CALLS"], "a") as fh:
        fh.write(f"{task.task_id} {seed}\n")
    return task.input.upper()


def slow_agent(task, *, seed):
    time.sleep(0.5)
    return task.input.upper()


def _cli(*args: str, calls: Path, wrapper: bool = True, env: dict | None = None,
         **kw) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", WRAPPER] if wrapper else [sys.executable, "-m", "ek_agents.cli"]
    return subprocess.run([*cmd, *args], cwd=str(ROOT), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "EK_TEST_CALLS": str(calls), **(env or {})}, **kw)


@pytest.fixture
def store(tmp_path) -> str:
    """A store holding one run made with the library (`lib`), promoted to baseline `b`."""
    url = str(tmp_path / "store")
    run_suite(lambda t: t.input.upper(), [__import__("ek_agents.base", fromlist=["TaskSpec"])
                                          .TaskSpec(f"t{i}", input=f"w{i}", gold=f"W{i}")
                                          for i in range(3)], k=2, seed=0, run_id="lib",
              rootdir=url)
    assert cli.main(["promote", "lib", "--name", "b", "--store", url]) == 0
    return url


def _bad_suites(tmp: Path) -> dict:
    no_gold = tmp / "no_gold.jsonl"
    no_gold.write_text(json.dumps({"suite": {"name": "s", "version": "1", "checker": "output"}})
                       + "\n" + json.dumps({"task_id": "t0", "input": "x"}) + "\n")
    state = tmp / "state.jsonl"  # gold has an output but the check asks for a final state
    state.write_text(json.dumps({"suite": {"name": "s", "version": "1"}}) + "\n"
                     + json.dumps({"task_id": "t0", "input": "x", "gold": {"output": "X"}}) + "\n")
    return {"no_gold": str(no_gold), "state": str(state)}


BAD = {  # name: (extra args for `run`, a word the one line must hold)
    "timeout -1": (["--timeout", "-1"], "--timeout"),
    "timeout 0": (["--timeout", "0"], "--timeout"),
    "timeout nan": (["--timeout", "nan"], "--timeout"),
    "retries -1": (["--retries", "-1"], "--retries"),
    "max-concurrency 0": (["--max-concurrency", "0"], "--max-concurrency"),
    "seed -1": (["--seed", "-1"], "--seed"),
    "k huge": (["--k", "1000000000000"], "--k"),
    "k 0": (["--k", "0"], "--k"),
    "run-id empty": (["--run-id", ""], "run id"),
    "run-id escapes": (["--run-id", "../x"], "run id"),
    "run-id reserved": (["--run-id", "CON"], "reserved"),
    "unknown check": (["--check", "outptu"], "did you mean 'output'"),
    "no such baseline": (["--baseline", "no-such-name"], "no baseline named 'no-such-name'"),
    "model not priced": (["--model", "gpt-4o-mni", "--prices", PRICES], "did you mean"),
    "bad agent path": (["--agent", "no_colon_here"], "import path"),
    "task without gold": (["@no_gold"], "has no gold output"),
    "gold without final state": (["@state", "--check", "final_state"], "has no gold final_state"),
    "missing suite": (["@missing"], "missing.yaml"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_run_input_is_refused_in_one_line_before_prefect_and_any_agent_call(
        tmp_path, store, case):
    extra, word = BAD[case]
    suites = {**_bad_suites(tmp_path), "missing": str(tmp_path / "missing.yaml")}
    suite = write_suite(tmp_path / "ok.jsonl")
    if extra and extra[0].startswith("@"):
        suite, extra = suites[extra[0][1:]], extra[1:]
    agent = [] if "--agent" in extra else ["--agent", MARKING_AGENT]
    calls = tmp_path / "calls.txt"
    r = _cli("run", "--suite", suite, *agent, *extra, "--store", store, calls=calls)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert word in lines[0], lines[0]
    assert not calls.exists(), "the agent was called"


@pytest.mark.parametrize("args, word", [
    (["audit", "../x"], "run id"),
    (["audit", "nope"], "no manifest"),
    (["audit", "--baseline", "nope"], "no baseline"),
    (["promote", "lib", "--name", "../x"], "baseline name"),
    (["promote", "../x", "--name", "ok"], "run id"),
    (["promote", "nope", "--name", "ok"], "no manifest"),
    (["report", "nul"], "reserved"),
    (["gate", "lib", "--baseline", "b", "--tolerance", "-0.5"], "--tolerance"),
])
def test_store_commands_refuse_in_one_line_without_prefect(tmp_path, store, args, word):
    r = _cli(*args, "--store", store, calls=tmp_path / "calls.txt")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and word in r.stderr, r.stderr


def test_audit_promote_report_gate_answer_without_prefect(tmp_path, store):
    for args in (["audit", "lib"], ["audit", "--baseline", "b"], ["promote", "lib", "--name", "c"],
                 ["report", "lib"], ["gate", "lib", "--baseline", "c"]):
        r = _cli(*args, "--store", store, calls=tmp_path / "calls.txt",
                 env={"PREFECT_API_URL": ""})
        assert r.returncode == 0, (args, r.stderr)
    # a damaged run: the audit fails (exit 1), in one line naming the segment, still no Prefect
    st = Store(store)
    entry = RunSegments.load(st, "lib").entries[0][1]
    lines = [t.data for t in read_segment(st, entry)]
    lines[0] = lines[0].replace(b'"output":"', b'"output":"X')  # one trial's answer changed
    st.write_bytes(entry.key, encode_segment(lines))
    r = _cli("audit", "lib", "--store", store, calls=tmp_path / "calls.txt")
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert entry.key in r.stderr


def test_report_into_a_closed_pipe_ends_quietly(tmp_path, store):
    p = subprocess.Popen([sys.executable, "-m", "ek_agents.cli", "report", "lib", "--json",
                          "--store", store], cwd=str(ROOT), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before a byte is written (`| head -0`)
    err = p.stderr.read().decode()
    assert p.wait(timeout=60) == 0 and err == "", err


def test_option_bounds_agree_with_the_library():
    assert cli.MAX_K == pipeline.MAX_K


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _port_open(url: str) -> bool:
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, int(port))) == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_killed_run_leaves_no_prefect_server_behind(tmp_path, sig):
    suite = write_suite(tmp_path / "s.jsonl", n=20)
    env = {**os.environ, "PREFECT_API_URL": "", "PREFECT_HOME": str(tmp_path / "ph")}
    env.pop("PREFECT_API_URL")
    p = subprocess.Popen([sys.executable, "-m", "ek_agents.cli", "run", "--suite", suite,
                          "--agent", SLOW_AGENT, "--k", "4", "--max-concurrency", "1",
                          "--store", str(tmp_path / "st"), "--prefect-server"], cwd=str(ROOT), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        servers: list[int] = []
        deadline = time.monotonic() + 120
        while not servers and time.monotonic() < deadline and p.poll() is None:
            servers = [c for c in _children(p.pid)
                       if b"uvicorn" in Path(f"/proc/{c}/cmdline").read_bytes()]
            time.sleep(0.1)
        assert servers, "no temporary Prefect server was started"
        time.sleep(1.0)
        p.send_signal(sig)
        p.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(_alive(c) for c in servers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(c) for c in servers), f"server left running after {sig!r}"
    finally:
        if p.poll() is None:
            p.kill()


@pytest.mark.integration
def test_run_says_where_its_time_went_and_stops_its_server(tmp_path):
    """``--prefect-server``: the flow run recorded by a temporary local server."""
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "ph")
    r = subprocess.run([sys.executable, "-m", "ek_agents.cli", "-v", "run", "--suite",
                        write_suite(tmp_path / "s.jsonl"), "--agent", MARKING_AGENT, "--k", "2",
                        "--store", str(tmp_path / "st"), "--prices", PRICES, "--run-id", "r1",
                        "--prefect-server"],
                       cwd=str(ROOT), env={**env, "EK_TEST_CALLS": str(tmp_path / "c")},
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    line = [x for x in r.stderr.splitlines() if x.startswith("ek-agents: time:")]
    assert len(line) == 1, r.stderr[-2000:]
    for part in ("checks", "import flows", "server up since start", "flow", "total"):
        assert part in line[0]
    url = line[0].split("temporary Prefect server ")[1].split(",")[0]
    assert not _port_open(url), "the temporary server still answers"
    assert "Error logging to API" not in r.stderr
    assert "ek-agents: ran the evaluate-agent flow on a temporary Prefect server" in r.stderr
    assert len((tmp_path / "c").read_text().splitlines()) == 12


def test_a_store_that_fails_is_one_line_and_exit_3_before_any_agent_call(tmp_path, monkeypatch,
                                                                          capsys):
    """The infrastructure code (3) for a store that cannot be reached or refuses the
    credentials: found by the checks, before Prefect starts or the agent is called."""
    from ek_agents.errors import StoreError
    from ek_agents.store import Store

    def refuse(self, key):
        raise StoreError(f"access denied by {self.url} (NoCredentialsError): check the credentials")

    monkeypatch.setattr(Store, "exists", refuse)
    monkeypatch.setenv("EK_TEST_CALLS", str(tmp_path / "calls.txt"))
    code = cli.main(["run", "--suite", write_suite(tmp_path / "s.jsonl"), "--agent", MARKING_AGENT,
                     "--store", str(tmp_path / "st")])
    err = capsys.readouterr().err
    assert code == 3 and len(err.strip().splitlines()) == 1 and "access denied" in err
    assert not (tmp_path / "calls.txt").exists()
