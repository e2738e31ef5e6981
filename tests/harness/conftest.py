"""Fixtures for the harness tests: stores on a local folder, memory:// and a real S3 API."""
from __future__ import annotations

import logging
import uuid

import pytest

from .faultproxy import free_port



@pytest.fixture(scope="session")
def moto_s3():
    """moto's S3 server on 127.0.0.1 with fake credentials in this test process's env only."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        mp.delenv("AWS_PROFILE", raising=False)
        import s3fs

        fs = s3fs.S3FileSystem(endpoint_url=env["AWS_ENDPOINT_URL"], skip_instance_cache=True)
        fs.mkdir("ek-test-bucket")
        yield "s3://ek-test-bucket"
    server.stop()


@pytest.fixture(params=["local", "memory", "s3"])
def store_url(request, tmp_path):
    """A fresh, empty store URL on each backend."""
    tag = uuid.uuid4().hex[:10]
    if request.param == "local":
        return str(tmp_path / "store")
    if request.param == "memory":
        return f"memory://ek-{tag}"
    return f"{request.getfixturevalue('moto_s3')}/{tag}"
