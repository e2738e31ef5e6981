"""Pipeline test setup: one Prefect test server per session, nothing touches ~/.prefect.

PREFECT_HOME and PREFECT_LOCAL_STORAGE_PATH point into a session temp dir *before* Prefect is
imported; the flow-run heartbeat is off (it costs ~1 s per flow run); analytics are off.
Library-only tests do not request ``prefect_api`` and start no server.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

_HOME = tempfile.mkdtemp(prefix="ek-prefect-home-")
os.environ["PREFECT_HOME"] = _HOME
os.environ.setdefault("PREFECT_LOCAL_STORAGE_PATH", os.path.join(_HOME, "storage"))
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["DO_NOT_TRACK"] = "1"
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
os.environ.pop("PREFECT_API_URL", None)

ROOT = Path(__file__).resolve().parents[2]
AGENT = "tests.pipeline.pipeline_agents:counting_agent"
FLAKY_AGENT = "tests.pipeline.pipeline_agents:worse_agent"
PRICES = str(ROOT / "examples" / "prices.json")


@pytest.fixture(scope="session")
def prefect_api():
    """A Prefect test server (fresh SQLite) for the whole session, heartbeat off."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
    from prefect.testing.utilities import prefect_test_harness

    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        with prefect_test_harness(server_startup_timeout=120):
            yield


@pytest.fixture
def calls():
    """The counting agent's call counter (reset for each test)."""
    import importlib

    mod = importlib.import_module(AGENT.split(":")[0])
    mod.CALLS.clear()
    return mod.CALLS


def write_suite(path: Path, *, n: int = 6, version: str = "1") -> str:
    """A tiny JSONL suite: n tasks in two slices, graded on the output."""
    rows = [{"suite": {"name": "tiny", "version": version, "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"word{i}", "gold": f"WORD{i}",
              "slice": "easy" if i % 2 else "hard"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def suite(tmp_path) -> str:
    return write_suite(tmp_path / "tiny.jsonl")
