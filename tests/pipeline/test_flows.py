"""The evaluate, audit and promote flows under a Prefect test server."""
from __future__ import annotations

import json

import pytest

from ek_agents import stages
from ek_agents.errors import AuditFailed, GateFailed, IncomparableRuns
from ek_agents.store import Store

from .conftest import AGENT, FLAKY_AGENT, PRICES, write_suite

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_evaluate_records_a_complete_manifest(tmp_path, suite, calls):
    from flows import evaluate_agent

    store = str(tmp_path / "store")
    out = evaluate_agent(suite=suite, agent=AGENT, k=3, seed=7, store=store, run_id="r1",
                         prices=PRICES, chunk_size=5)
    assert len(calls) == 6 * 3
    st = Store(store)
    man = st.read_manifest("r1")
    assert man["run_id"] == "r1" and out["run_id"] == "r1"
    assert man["provenance"]["seed"] == 7 and man["provenance"]["suite_version"] == "1"
    assert man["provenance"]["model"] == "gpt-4o-mini-2024-07-18"
    assert man["suite"]["name"] == "tiny" and len(man["suite"]["digest"]) == 64
    assert man["package"]["version"] and "python" in man["package"]
    assert man["orchestrator"]["flow_run_id"] and man["orchestrator"]["flow_name"] == "evaluate-agent"
    assert man["parameters"]["k"] == 3 and man["parameters"]["agent"] == AGENT
    # every artifact listed with the sha256 of its bytes: 6 stage docs + 18 trial files
    assert len([k for k in man["artifacts"] if "/episodes/" in k]) == 18
    for key, sha in man["artifacts"].items():
        assert st.digest(key) == sha
    report = st.read_json("runs/r1/report.json")
    assert report["n_trials"] == 18 and man["results"]["n_trials"] == 18
    assert set(report["per_slice"]) == {"easy", "hard"}
    assert report["cost"]["total_dollars"] > 0
    assert man["results"]["success_rate"] == report["success_rate"]
    assert man["gate"] is None
