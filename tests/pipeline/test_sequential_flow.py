"""evaluate_agent(sequential=True): batches of trials until the sequential gate decides."""
from __future__ import annotations

import pytest

from ek_agents.stages.audit import audit
from ek_agents.errors import GateFailed, InvalidInput
from ek_agents.records.manifest import RunManifest
from ek_agents.store import Store

from .conftest import AGENT, FLAKY_AGENT, write_suite

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_sequential_flow_stops_early_on_a_worse_agent_and_records_why(tmp_path, calls):
    from prefect.artifacts import Artifact

    from ek_agents_pipeline.flows import evaluate_agent, promote_baseline

    suite = write_suite(tmp_path / "tiny.jsonl", n=40)
    store = str(tmp_path / "store")
    evaluate_agent(suite=suite, agent=AGENT, k=4, seed=1, store=store, run_id="base",
                   chunk_size=40)
    promote_baseline(run_id="base", name="good", store=store)
    calls.clear()
    with pytest.raises(GateFailed, match="regression at look"):
        evaluate_agent(suite=suite, agent=FLAKY_AGENT, k=4, seed=2, store=store, run_id="seq",
                       baseline="good", sequential=True, chunk_size=20)
    sequential_calls = len(calls)
    st = Store(store)
    man = RunManifest.from_dict(st.read_manifest("seq"))
    assert man.sequential is not None and man.sequential.stopped_early
    assert man.sequential.decision == "regression"
    assert man.sequential.trials_run == sequential_calls == man.results["n_trials"]
    assert man.sequential.trials_planned == 160 and sequential_calls < 160
    assert man.gate["test"] == "sequential" and man.gate["reasons"] == [man.sequential.reason]
    assert man.parameters["sequential"] is True
    md = Artifact.get("tiny-tests-pipeline-pipeline-agents-worse-agent-report", _sync=True)  # its series
    assert "Run `seq`" in md.data and "stopped early" in md.data and "regression at look" in md.data
    assert audit(st, "seq").passed, audit(st, "seq").problems
    # from the command line: the same verdict, exit 1; gate and audit reproduce it
    from ek_agents.cli import main

    calls.clear()
    assert main(["run", "--suite", suite, "--agent", FLAKY_AGENT, "--k", "4", "--seed", "2",
                 "--store", store, "--run-id", "cli-seq", "--baseline", "good",
                 "--sequential"]) == 1
    assert len(calls) == sequential_calls
    assert st.read_manifest("cli-seq")["sequential"]["trials_run"] == sequential_calls
    assert main(["gate", "cli-seq", "--baseline", "good", "--store", store]) == 1
    assert main(["audit", "cli-seq", "--store", store]) == 0
    # the fixed design of the same agent calls it for every planned trial
    calls.clear()
    with pytest.raises(GateFailed):
        evaluate_agent(suite=suite, agent=FLAKY_AGENT, k=4, seed=2, store=store, run_id="fixed",
                       baseline="good")
    assert len(calls) == 160 > sequential_calls


def test_sequential_flow_needs_a_baseline(tmp_path, suite):
    from ek_agents_pipeline.flows import evaluate_agent

    with pytest.raises(InvalidInput, match="sequential=True"):
        evaluate_agent(suite=suite, agent=AGENT, k=2, store=str(tmp_path / "s"), sequential=True)
