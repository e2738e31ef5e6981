"""The whole evaluate flow against S3: moto's server on 127.0.0.1, store s3://bucket/prefix."""
from __future__ import annotations

import logging

import pytest

from ek_agents.records.segments import RunSegments
from ek_agents.store import Store
from tests.harness.faultproxy import free_port

from .conftest import AGENT, PRICES

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_api")]



@pytest.fixture
def s3_bucket(monkeypatch):
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    import s3fs

    try:
        s3fs.S3FileSystem(endpoint_url=endpoint, skip_instance_cache=True).mkdir("ek-pipeline")
    except FileExistsError:  # moto's backends live per process: an earlier test's bucket
        pass
    yield "s3://ek-pipeline"
    server.stop()


def test_evaluate_audit_and_cache_on_s3(s3_bucket, suite, calls):
    from ek_agents_pipeline.flows import audit_run, evaluate_agent, promote_baseline

    store = f"{s3_bucket}/team/evals"
    out = evaluate_agent(suite=suite, agent=AGENT, k=2, seed=1, store=store, run_id="s3run",
                         prices=PRICES, chunk_size=4)
    assert len(calls) == 12 and out["store"] == store
    st = Store(store)
    man = st.read_manifest("s3run")
    held = RunSegments.load(st, "s3run")
    assert len(held.pairs()) == 12 and held.digests().items() <= man["artifacts"].items()
    assert all(st.digest(k) == sha for k, sha in man["artifacts"].items())
    assert st.list("cache/episodes")  # the stage cache lives in the bucket too
    assert audit_run(run_id="s3run", store=store)["passed"]
    promote_baseline(run_id="s3run", name="main", store=store)
    again = evaluate_agent(suite=suite, agent=AGENT, k=2, seed=1, store=store, run_id="s3run2",
                           prices=PRICES, baseline="main")
    assert len(calls) == 12  # cached in S3: no agent call
    assert again["gate"]["passed"]


def test_the_run_lease_is_a_conditional_put_on_s3(s3_bucket):
    """One writer per run id on S3: the lease is a PUT with If-None-Match, so a second
    writer is refused by the bucket itself, naming the holder."""
    from ek_agents.errors import RunInUse
    from ek_agents.store import acquire_lease, read_lease, release_lease

    st = Store(f"{s3_bucket}/leases")
    held = acquire_lease(st, "r")
    other = Store(f"{s3_bucket}/leases")  # another client of the same bucket
    with pytest.raises(RunInUse, match=f"pid {held.pid} "):
        acquire_lease(other, "r")
    assert read_lease(other, "r").token == held.token
    assert release_lease(st, held)
    assert acquire_lease(other, "r").token != held.token
