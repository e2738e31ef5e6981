"""``ek-agents run`` against an endpoint that is down for some tasks: exit 5 (incomplete:
provider errors) after the manifest is written, the gate refuses the incomplete run, and
``--retry-errored`` completes it with nothing lost or duplicated."""
from __future__ import annotations

import json

import pytest

from ek_agents.cli import main
from ek_agents.records import documents
from ek_agents.store import Store

from . import provider_agents

PRICES = "examples/prices.json"
AGENT = "tests.harness.provider_agents:down_agent"


@pytest.fixture
def no_api(monkeypatch, tmp_path):
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "ph"))


def _suite(path) -> str:
    rows = [{"suite": {"name": "tiny", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"w{i}", "gold": f"W{i}"} for i in range(5)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_down_endpoint_exits_5_gate_refuses_retry_errored_completes(tmp_path, no_api, capsys,
                                                                     monkeypatch):
    suite, store = _suite(tmp_path / "s.jsonl"), str(tmp_path / "st")
    args = ["run", "--suite", suite, "--agent", AGENT, "--agent-id", "down", "--k", "2",
            "--prices", PRICES, "--store", store, "--provider-retry-s", "0.05"]
    assert main([*args, "--run-id", "base"]) == 0
    assert main(["promote", "base", "--name", "b", "--store", store]) == 0
    monkeypatch.setattr(provider_agents, "DOWN", {"t1", "t3"})
    capsys.readouterr()
    assert main([*args, "--run-id", "r", "--refresh"]) == 5  # not the cached episodes
    out, err = capsys.readouterr()
    assert "incomplete: provider errors: run 'r' is incomplete: 4 trial(s) left unresolved" in err
    assert "server_error gpt-4o" in err and "--retry-errored" in err
    st = Store(store)
    report = documents.read_run_doc(st, documents.read_manifest(st, "r"), "report")
    assert report["n_trials"] == 6 and report["success_rate"] == 1.0
    assert sorted(report["detail"]["unresolved"]["trials"]) == ["t1#0", "t1#1", "t3#0", "t3#1"]

    assert main(["gate", "r", "--baseline", "b", "--store", store]) == 5
    err = capsys.readouterr().err
    assert "the current run is incomplete" in err and "neither passes nor fails" in err

    monkeypatch.setattr(provider_agents, "DOWN", set())  # the endpoint recovered
    assert main([*args, "--run-id", "r", "--retry-errored"]) == 0
    eps = documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, "r"),
                                                       "episodes"))
    pairs = [(e.task_id, e.meta["trial"]) for e in eps]
    assert len(pairs) == len(set(pairs)) == 10 and not any(e.meta.get("error") for e in eps)
    assert main(["gate", "r", "--baseline", "b", "--store", store]) == 0
