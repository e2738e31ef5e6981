"""The evaluate, audit and promote flows under a Prefect test server."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ek_agents import pipeline
from ek_agents.stages.audit import differences
from ek_agents.errors import AuditFailed, GateFailed, IncomparableRuns, SuiteError
from ek_agents.records.segments import RunSegments, encode_segment, read_segment
from ek_agents.store import Store

from .conftest import AGENT, FLAKY_AGENT, PRICES, write_suite

pytestmark = pytest.mark.usefixtures("prefect_api")


def test_evaluate_records_a_complete_manifest(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import evaluate_agent

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
    # every artifact listed with the sha256 of its bytes: the stage docs, and the segments
    # holding the 18 trials with their index documents (no per-trial file)
    segments = RunSegments.load(st, "r1")
    assert len(segments.pairs()) == 18 and segments.duplicates() == 0
    assert segments.digests().items() <= man["artifacts"].items()
    assert not [k for k in man["artifacts"] if "/episodes/" in k]
    for key, sha in man["artifacts"].items():
        assert st.digest(key) == sha
    report = st.read_json("runs/r1/report.json")
    assert report["n_trials"] == 18 and man["results"]["n_trials"] == 18
    assert set(report["per_slice"]) == {"easy", "hard"}
    assert report["cost"]["total_dollars"] > 0
    assert man["results"]["success_rate"] == report["success_rate"]
    assert man["gate"] is None
    # the report and the per-slice table, published as Prefect artifacts keyed per series
    # (suite and agent), and the HTML report beside the run in the store
    from prefect.artifacts import Artifact

    series = "tiny-tests-pipeline-pipeline-agents-counting-agent"
    md, table = Artifact.get(f"{series}-report", _sync=True), Artifact.get(f"{series}-slices", _sync=True)
    assert md.type == "markdown" and "## Run `r1`" in md.data and "runs/r1/report.html" in md.data
    assert str(md.flow_run_id) == man["orchestrator"]["flow_run_id"]
    rows = json.loads(table.data)
    assert [r["slice"] for r in rows] == ["all", "easy", "hard"] and rows[0]["trials"] == "18"
    assert {r["run_id"] for r in rows} == {"r1"} and {r["agent"] for r in rows} == {AGENT}
    assert all(v.endswith("%") for r in rows for v in (r["success"], r["pass^3"]))
    assert st.read_bytes("runs/r1/report.html").startswith(b"<!DOCTYPE html>")


def test_second_identical_run_makes_zero_agent_calls(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    first = evaluate_agent(suite=suite, agent=AGENT, k=2, seed=3, store=store, run_id="a")
    n = len(calls)
    assert n == 12
    second = evaluate_agent(suite=suite, agent=AGENT, k=2, seed=3, store=store, run_id="b")
    assert len(calls) == n  # not one agent call
    st = Store(store)
    man = st.read_manifest("b")
    assert all(s["cached"] for s in man["stages"].values() if "cached" in s)
    assert st.read_bytes("runs/b/report.json") == st.read_bytes("runs/a/report.json")
    assert second["results"] == first["results"]
    # a different seed is a different run: the agent is called again
    evaluate_agent(suite=suite, agent=AGENT, k=2, seed=4, store=store, run_id="c")
    assert len(calls) == 2 * n
    assert not st.read_manifest("c")["stages"]["episodes"]["cached"]


def test_killed_run_resumes_without_rerunning_finished_trials(tmp_path, suite, calls):
    """A run stopped part-way (here: one chunk finished, then the process died) resumes."""
    from ek_agents.stages import evaluate as stages
    from ek_agents.base import RunProvenance

    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    request = pipeline.TrialRequest(  # what the flow asks for, planned in chunks of 3
        store=Store(store).url, run_id="r", tasks=stages.record_suite(Store(store), "r", suite),
        agent=AGENT, k=2, seed=5, run=RunProvenance(seed=5, suite_version="1").to_dict(),
        chunk_size=3)
    first = pipeline.plan_trials(request).chunks[0]
    pipeline.run_trial_chunk(first)  # one chunk finished, then the process died
    assert len(calls) == 3 and list(first.pairs) == [("t0", 0), ("t0", 1), ("t1", 0)]
    evaluate_agent(suite=suite, agent=AGENT, k=2, seed=5, store=store, run_id="r")
    assert len(calls) == 12  # 12 trials in all, the 3 stored ones not re-run
    assert sorted(c[0] for c in calls).count("t0") == 2


def test_audit_passes_then_catches_one_flipped_byte(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import audit_run, evaluate_agent

    store = str(tmp_path / "store")
    evaluate_agent(suite=suite, agent=AGENT, k=2, seed=1, store=store, run_id="r", prices=PRICES)
    assert audit_run(run_id="r", store=store)["passed"]
    st = Store(store)
    entry = RunSegments.load(st, "r").pairs()[("t2", 1)]
    lines = [t.data for t in read_segment(st, entry)]
    n = [t.pair for t in read_segment(st, entry)].index(("t2", 1))
    data = bytearray(lines[n])
    i = data.index(b'"output":"') + len(b'"output":"')
    data[i] = ord("X") if data[i] != ord("X") else ord("Y")  # one byte of the agent's answer
    lines[n] = bytes(data)
    st.write_bytes(entry.key, encode_segment(lines))  # the segment holding t2/1, rewritten
    with pytest.raises(AuditFailed, match=re.escape(entry.key)):
        audit_run(run_id="r", store=store)


def test_audit_names_a_recorded_figure_that_differs(tmp_path, suite, calls):
    from ek_agents.stages.audit import audit

    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    evaluate_agent(suite=suite, agent=AGENT, k=2, seed=1, store=store, run_id="r")
    st = Store(store)
    man = st.read_manifest("r")
    man["results"]["success_rate"] = 0.99  # a doctored headline, bytes re-hashed nowhere
    st.write_manifest("r", man)
    result = audit(st, "r")
    assert not result.passed
    assert any(p.startswith("results.success_rate: recorded 0.99") for p in result.problems)


def test_promote_then_gate_passes_same_agent_and_fails_a_worse_one(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import audit_run, evaluate_agent, promote_baseline

    store = str(tmp_path / "store")
    big = write_suite(tmp_path / "big.jsonl", n=30)
    evaluate_agent(suite=big, agent=AGENT, k=3, seed=1, store=store, run_id="base", prices=PRICES)
    promote_baseline(run_id="base", name="main", store=store)
    st = Store(store)
    assert st.load_baseline("main")["report"]["detail"]["run_id"] == "base"
    ok = evaluate_agent(suite=big, agent=AGENT, k=3, seed=2, store=store, run_id="same",
                        baseline="main", prices=PRICES)
    assert ok["gate"]["passed"] is True
    with pytest.raises(GateFailed, match="main"):
        evaluate_agent(suite=big, agent=FLAKY_AGENT, k=3, seed=2, store=store, run_id="worse",
                       baseline="main", prices=PRICES)
    worse = st.read_manifest("worse")  # recorded before the run failed
    assert worse["gate"]["passed"] is False and worse["gate"]["reasons"]
    assert audit_run(baseline="main", store=store)["passed"]
    assert audit_run(run_id="worse", store=store)["passed"]  # the verdict recomputes too


def test_incomparable_baseline_fails_the_flow_run_with_its_message(tmp_path, calls):
    from ek_agents_pipeline.flows import evaluate_agent, promote_baseline

    store = str(tmp_path / "store")
    v1 = write_suite(tmp_path / "v1.jsonl", version="1")
    v2 = write_suite(tmp_path / "v2.jsonl", version="2")
    evaluate_agent(suite=v1, agent=AGENT, k=2, seed=1, store=store, run_id="v1")
    promote_baseline(run_id="v1", name="main", store=store)
    state = evaluate_agent(suite=v2, agent=AGENT, k=2, seed=1, store=store, run_id="v2",
                           baseline="main", return_state=True)
    assert state.is_failed()
    with pytest.raises(IncomparableRuns, match="suite_version"):
        state.result()
    assert Store(store).read_manifest("v2")["gate"]["refused"]


def test_bad_input_fails_before_any_work(tmp_path, suite):
    from ek_agents.errors import InvalidInput

    from ek_agents_pipeline.flows import evaluate_agent

    with pytest.raises(InvalidInput, match="did you mean 'counting_agent'"):
        evaluate_agent(suite=suite, agent="tests.pipeline.pipeline_agents:countng_agent",
                       store=str(tmp_path / "s"))
    with pytest.raises(InvalidInput, match="needs a suite and an agent"):
        evaluate_agent(suite=suite, store=str(tmp_path / "s"))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"task_id": "t1", "input": "x", "value": "high"}\n')
    state = evaluate_agent(suite=str(broken), agent=AGENT, store=str(tmp_path / "s"),
                           return_state=True)
    with pytest.raises(SuiteError, match="broken.jsonl: task 't1' \\(line 1\\)"):
        state.result()  # failed at once: bad input is never retried


def test_dask_runner_gives_the_same_results_as_threads(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import evaluate_agent

    a = evaluate_agent(suite=suite, agent=AGENT, k=3, seed=9, store=str(tmp_path / "a"),
                       run_id="r", chunk_size=4, task_runner="threads", max_workers=2)
    b = evaluate_agent(suite=suite, agent=AGENT, k=3, seed=9, store=str(tmp_path / "b"),
                       run_id="r", chunk_size=4, task_runner="dask", max_workers=2)
    assert len(calls) == 36  # both really ran
    ra = Store(str(tmp_path / "a")).read_json("runs/r/report.json")
    rb = Store(str(tmp_path / "b")).read_json("runs/r/report.json")
    # the same figures; only the measured wall-clock latency may differ
    assert [d for d in differences(ra, rb, "report") if "latency" not in d] == []
    assert a["results"] == b["results"]


def test_ingest_a_recorded_run(tmp_path):
    from ek_agents_pipeline.flows import evaluate_agent

    fixtures = sorted(Path(__file__).resolve().parents[1].glob("fixtures/inspect/*.eval"))
    if not fixtures:
        pytest.skip("no Inspect fixture log")
    out = evaluate_agent(ingest="inspect", ingest_path=str(fixtures[0]), store=str(tmp_path / "s"),
                         run_id="ing")
    man = Store(str(tmp_path / "s")).read_manifest("ing")
    assert man["source"]["kind"] == "inspect" and man["results"]["n_trials"] > 0
    assert out["results"]["n_trials"] == man["results"]["n_trials"]


def _messages_jsonl(path: Path) -> Path:
    rows = []
    for i in range(3):
        for trial in range(2):
            rows.append({"task_id": f"m{i}", "trial": trial, "success": (i + trial) % 2 == 0,
                         "model": "gpt-4o-mini-2024-07-18",
                         "usage": {"prompt_tokens": 100 + i, "completion_tokens": 10},
                         "messages": [{"role": "user", "content": f"q{i}"},
                                      {"role": "assistant", "tool_calls": [{"id": "c1", "function": {
                                          "name": "lookup", "arguments": json.dumps({"i": i})}}]},
                                      {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                                      {"role": "assistant", "content": f"a{i}"}]})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("kind", ["tau-bench", "tau2", "messages"])
def test_ingest_tau_bench_and_message_logs(tmp_path, kind):
    """Every ingest source runs through the flow; the flow's figures equal the bridge's own."""
    from ek_agents_pipeline.flows import evaluate_agent
    from ek_agents.bridge import read_messages_jsonl, read_tau_bench_results

    fixtures = Path(__file__).resolve().parents[1] / "bridge" / "fixtures"
    if kind == "messages":
        path, reader = _messages_jsonl(tmp_path / "run.jsonl"), read_messages_jsonl
    else:
        path = fixtures / ("tau_bench_v1.json" if kind == "tau-bench" else "tau2_results.json")
        reader = read_tau_bench_results
    direct = reader(str(path))
    out = evaluate_agent(ingest="messages" if kind == "messages" else "tau-bench",
                         ingest_path=str(path), store=str(tmp_path / "s"), run_id="ing",
                         prices=PRICES if kind == "messages" else None)
    man = Store(str(tmp_path / "s")).read_manifest("ing")
    assert man["results"]["n_trials"] == len(direct) == out["results"]["n_trials"]
    assert man["results"]["n_success"] == sum(bool(e.success) for e in direct)
    if kind == "messages":  # priced from usage: 6 episodes, (100+i) in / 10 out tokens each
        rates = json.loads(Path(PRICES).read_text())["gpt-4o-mini-2024-07-18"]
        expect = 2 * (100 + 101 + 102) * rates["input_cost_per_token"] + 60 * rates["output_cost_per_token"]
        assert man["results"]["total_dollars"] == pytest.approx(expect, rel=1e-12)


def test_the_flow_never_has_more_agent_calls_in_flight_than_max_concurrency(tmp_path, suite):
    """Chunks run on several workers at once; they share max_concurrency, not each take it."""
    from ek_agents_pipeline.flows import evaluate_agent
    from tests.pipeline import pipeline_agents

    pipeline_agents.INFLIGHT.update(now=0, max=0)
    out = evaluate_agent(suite=suite, agent="tests.pipeline.pipeline_agents:inflight_agent", k=4,
                         store=str(tmp_path / "store"), run_id="r", chunk_size=3,
                         max_concurrency=3, max_workers=4)
    assert out["results"]["n_trials"] == 24
    assert 1 <= pipeline_agents.INFLIGHT["max"] <= 3
