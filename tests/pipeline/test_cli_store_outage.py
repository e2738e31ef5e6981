"""Issue 10 at the command line: the real ``ek-agents`` (a subprocess) against S3 (moto's server
behind the project's TCP fault proxy) while the endpoint refuses, resets or stalls.

``run`` (mid-run: the outage starts once some trials are stored), ``report`` and ``audit`` each
exit 3 with one line on stderr; then, the endpoint back, ``run`` resumed with the same
``--run-id`` ends with the report of an uninterrupted run, every trial stored once.

The phases meant to fail use small timeouts (``EK_STORE_*``); the healthy ones the defaults (a
loaded machine is slow). A subprocess ``timeout`` is a hang guard, not a timing assertion: the
seconds each failure took are printed (``-s``), and bench/bench_store_outage.py measures them
with the default settings.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import uuid

import pytest

from ek_agents.records.segments import RunSegments
from ek_agents.store import Store, run_key

from tests.harness.faultproxy import FaultProxy, free_port

from .conftest import ROOT

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_api"),
              pytest.mark.skipif(os.environ.get("EK_SOAK") != "1", reason="set EK_SOAK=1")]
SUITE = str(ROOT / "examples" / "shop" / "suite.yaml")
AGENT = "tests.pipeline.outage_agent:gated_agent"
K = 4  # 24 tasks x 4 = 96 trials
HELD_AFTER = 24  # trials stored before the outage starts
FAST = {"EK_STORE_CONNECT_TIMEOUT": "2", "EK_STORE_READ_TIMEOUT": "3", "EK_STORE_RETRY_WINDOW": "1"}
HANG_GUARD_S = 600



@pytest.fixture(scope="module")
def endpoint():
    """moto's S3 server on 127.0.0.1, the fault proxy in front of it, a bucket, and the
    environment a user's shell would have (AWS_* pointing at the proxy)."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    creds = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1"}
    import s3fs

    direct = s3fs.S3FileSystem(endpoint_url=f"http://127.0.0.1:{port}", skip_instance_cache=True,
                               use_listings_cache=False, key="testing", secret="testing")
    bucket = f"ek-cli-{uuid.uuid4().hex[:8]}"
    direct.mkdir(bucket)
    with FaultProxy(port) as proxy, pytest.MonkeyPatch.context() as mp:
        from prefect.settings import PREFECT_API_URL

        for k, v in {**creds, "AWS_ENDPOINT_URL": proxy.url}.items():  # this process's Store
            mp.setenv(k, v)
        mp.delenv("AWS_PROFILE", raising=False)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AWS_", "EK_STORE")) and k != "PREFECT_LOGGING_LEVEL"}
        env.update(creds, AWS_ENDPOINT_URL=proxy.url, PREFECT_API_URL=PREFECT_API_URL.value())
        proxy.env, proxy.direct, proxy.bucket = env, direct, bucket
        yield proxy
    server.stop()


def cli(endpoint, *args: str, fast: bool = False, extra: dict | None = None):
    """``python -m ek_agents.cli *args`` as a user runs it; (completed process, seconds)."""
    env = {**endpoint.env, **(FAST if fast else {}), **(extra or {})}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "ek_agents.cli", *args], cwd=str(ROOT), env=env,
                       capture_output=True, text=True, timeout=HANG_GUARD_S)
    return r, time.monotonic() - t0


def run_args(store: str, run_id: str) -> list:
    return ["run", "--suite", SUITE, "--agent", AGENT, "--k", str(K), "--seed", "7",
            "--store", store, "--run-id", run_id]


def assert_infrastructure_failure(r, what: str, seconds: float, mode: str) -> None:
    print(f"\n[{mode}] {what}: exit {r.returncode} after {seconds:.1f} s: {r.stderr.strip()}")
    assert r.returncode == 3, r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(("ek-agents: StoreUnreachable: ", "ek-agents: StoreTimeout: "))
    assert endpoint_named(r.stderr)


def endpoint_named(err: str) -> bool:
    return "http://127.0.0.1:" in err and "a run resumes with the same run id" in err


def report_doc(store: str, run_id: str) -> dict:
    doc = Store(store).read_json(run_key(run_id, "report"))
    doc["detail"] = {k: v for k, v in doc["detail"].items() if k not in ("run_id", "store")}
    return doc


@pytest.fixture(scope="module")
def whole(endpoint):
    """An uninterrupted run (the reference report), and the store it is in (a store of its own:
    in the same store, a run with the same inputs would reuse its episodes and run nothing)."""
    store = f"s3://{endpoint.bucket}/whole"
    r, _ = cli(endpoint, *run_args(store, "whole"))
    assert r.returncode == 0, r.stderr
    return store


#: Each mode is about two minutes of real CLI runs on a 2-core machine, so they run with the
#: store's soak switch (EK_SOAK=1), beside the 1000-trial soak; ``make test`` keeps the
#: library-level outage tests (tests/harness/test_store_faults.py) and the CLI's exit 3.
MODES = ["refuse", "reset", "stall"]


@pytest.mark.parametrize("mode", MODES)
def test_outage_exits_3_in_one_line_and_the_run_resumes(endpoint, whole, mode, tmp_path):
    # report and audit of a stored run while the endpoint is down
    endpoint.mode = mode
    try:
        for cmd in (["report", "whole"], ["audit", "whole"]):
            r, s = cli(endpoint, *cmd, "--store", whole, fast=True)
            assert_infrastructure_failure(r, cmd[0], s, mode)
    finally:
        endpoint.mode = "pass"

    # run: the outage starts after HELD_AFTER trials are stored (the later ones wait for it)
    run_id = f"cut-{mode}"
    store = f"s3://{endpoint.bucket}/{run_id}"
    gate = tmp_path / "gate"
    gate.mkdir()
    proc_env = {**endpoint.env, **FAST, "EK_TEST_GATE": str(gate),
                "EK_TEST_GATE_AFTER": str(HELD_AFTER)}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "ek_agents.cli", *run_args(store, run_id),
                             "--flush-s", "1"],  # the first trials' segment stored 1 s on
                            cwd=str(ROOT), env=proc_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    folder = f"{endpoint.bucket}/{run_id}/runs/{run_id}/segment-index"

    def held() -> int:  # trials the run's segment index names (read on moto directly)
        return sum(e["n"] for path in endpoint.direct.find(folder)
                   for e in json.loads(endpoint.direct.cat_file(path))["segments"])

    try:
        deadline = time.monotonic() + HANG_GUARD_S  # a hang guard, not a timing assertion
        while held() < HELD_AFTER and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        stored = held()
        endpoint.mode = mode
        broken = time.monotonic()
        (gate / "go").touch()
        out, err = proc.communicate(timeout=HANG_GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        endpoint.mode = "pass"
    assert stored == HELD_AFTER, err  # the outage began mid-run
    r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert_infrastructure_failure(r, f"run (outage after {stored} of 96 trials, run started "
                                  f"{broken - t0:.1f} s before)", time.monotonic() - broken, mode)
    assert "manifest.json" not in err  # the run's own failure, not the CLI's look afterwards
    assert held() < 96  # it really stopped short

    # the endpoint is back: resume with the same run id, default settings, no gate
    r, _ = cli(endpoint, *run_args(store, run_id))
    assert r.returncode == 0, r.stderr
    assert f"run {run_id}: manifest at" in r.stdout
    assert report_doc(store, run_id) == report_doc(whole, "whole")
    st = Store(store)
    expected = {(t["task_id"], i)
                for t in st.read_json(run_key(run_id, "tasks"))["tasks"] for i in range(K)}
    segments = RunSegments.load(st, run_id)
    assert set(segments.pairs()) == expected and segments.duplicates() == 0  # 0 lost, 0 twice
    assert segments.digests().items() <= st.read_manifest(run_id)["artifacts"].items()
