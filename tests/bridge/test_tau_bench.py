"""read_tau_bench_results on tau-bench (v1) and tau2-bench Results fixtures of our own
(tests/bridge/fixtures/, field names as in sierra-research/tau-bench and tau2-bench)."""
import json
from pathlib import Path

import fsspec
import pytest

from ek_agents.base import Episode, RunProvenance
from ek_agents.bridge import read_tau_bench_results
from ek_agents.bridge.tau_bench import tau_success
from ek_agents.errors import BridgeError

FIX = Path(__file__).resolve().parent / "fixtures"
V1, V2 = FIX / "tau_bench_v1.json", FIX / "tau2_results.json"


def test_tau_success_tolerance_boundaries():
    assert tau_success(1 - 1e-6) and tau_success(1 + 1e-6)
    assert not tau_success(1 - 2e-6) and not tau_success(0.5) and not tau_success(True)


def test_v1_episodes_success_calls_and_crash():
    eps = read_tau_bench_results(V1)
    assert [(e.task_id, e.meta["trial"], e.success) for e in eps] == \
        [("0", 0, True), ("0", 1, False), ("1", 0, True), ("1", 1, False)]
    ok = eps[0]
    assert ok.calls == (("find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"}),
                        ("cancel_pending_order", {"order_id": "#W2378156", "reason": "ordered by mistake"}))
    assert ok.output == "Your order #W2378156 has been cancelled."
    assert ok.cost is None  # v1 records no tokens: unknown, not free
    assert ok.meta["user_cost"] == 0.00123 and ok.meta["reward"] == 1.0
    assert ok.meta["task"]["user_id"] == "yusuf_rossi_9620"
    crashed = eps[3]
    assert crashed.success is False and crashed.trajectory.steps == ()
    assert crashed.meta["error"] == "litellm.exceptions.RateLimitError: litellm.RateLimitError: rate limit reached for gpt-4o"
    assert crashed.meta["error_kind"] == "exception"
    assert "error" not in eps[1].meta  # a plain failure is not an error


def test_v1_truncated_arguments_do_not_crash():
    step = read_tau_bench_results(V1)[2].trajectory.steps[0]
    assert step.args == '{"order_id": "#W6390527"' and "not valid JSON" in step.error
    assert step.observation == "Error: invalid arguments"


def test_v1_run_provenance_is_given_by_the_caller():
    run = RunProvenance(model="gpt-4o", simulator="tau-bench-user:gpt-4o", scaffold="tool-calling")
    assert {e.run for e in read_tau_bench_results(V1, run=run)} == {run}


def test_tau2_excludes_and_counts_infrastructure_errors():
    eps = read_tau_bench_results(V2)
    assert [(e.task_id, e.meta["trial"]) for e in eps] == [("t_data", 0), ("t_data", 1), ("t_suspend", 0),
                                                          ("t_suspend", 1)]
    assert all(e.meta["simulation_id"] != "sim-b" for e in eps)
    assert {e.provenance.meta["excluded_infrastructure_errors"] for e in eps} == {1}
    assert {e.meta["excluded_infrastructure_errors"] for e in eps} == {1}
    assert [e.success for e in eps] == [True, True, False, False]


def test_tau2_episode_contents():
    eps = {e.meta["simulation_id"]: e for e in read_tau_bench_results(V2)}
    a = eps["sim-a"]
    # the user simulator's own tool (toggle_airplane_mode) is not an agent step
    assert a.calls == (("get_customer_by_phone", {"phone_number": "555-123-2002"}),)
    assert a.output == "Please turn airplane mode off."
    # cost = the agent's messages' usage (OpenAI/litellm spelling), not the user simulator's
    c = a.cost
    assert (c.input_tokens, c.cached_input_tokens, c.output_tokens) == (1200 + 1300 + 1400, 1024 + 1024 + 1280, 51)
    assert c.latency_s == 21.5
    assert a.meta["agent_cost_usd"] == 0.0013 and a.meta["termination_reason"] == "user_stop"
    assert a.run == RunProvenance(seed=300, temperature=0.0, model="gpt-4.1-mini", simulator="user_simulator:gpt-4.1",
                                  suite_version="tau2/telecom@3f1c2ab", scaffold="llm_agent")
    assert eps["sim-e"].run.seed == 301
    # parallel calls answered out of order inside a MultiToolMessage pair by id
    c_ = eps["sim-c"]
    assert [(s.tool, s.error) for s in c_.trajectory] == [("suspend_line", "Error: line L9 not found"),
                                                         ("get_details_by_id", None)]
    d = eps["sim-d"]
    assert d.success is False and d.meta["error_kind"] == "exception"
    assert d.meta["error"].startswith("AgentError:")


def test_tau2_exclude_parameter():
    eps = read_tau_bench_results(V2, exclude=())
    assert len(eps) == 5 and {e.provenance.meta["excluded_infrastructure_errors"] for e in eps} == {0}


def test_tau2_dir_format_in_memory_filesystem():
    data = json.loads(V2.read_text())
    sims = data.pop("simulations")
    data["simulations"] = []
    data["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]} for s in sims]
    fs = fsspec.filesystem("memory")
    try:
        fs.pipe("/tau2run/results.json", json.dumps(data).encode())
        for s in sims:
            fs.pipe(f"/tau2run/simulations/{s['id']}.json", json.dumps(s).encode())
        got = read_tau_bench_results("memory://tau2run/results.json")
    finally:
        fs.rm("/tau2run", recursive=True)
    strip = lambda es: [e.replace(provenance=None) for e in es]  # noqa: E731
    assert strip(got) == strip(read_tau_bench_results(V2))


def test_episodes_round_trip():
    for e in read_tau_bench_results(V2) + read_tau_bench_results(V1):
        assert Episode.from_json(e.to_json()) == e


@pytest.mark.parametrize("content, needle", [
    ('{"a": 1}', "neither tau-bench results"),
    ('[{"reward": 1.0}]', "lacks ['task_id']"),
    ('[3]', "must be an object"),
    ('{"simulations": [{"task_id": "x"}]}', "lacks ['termination_reason']"),
])
def test_malformed_results_raise(tmp_path, content, needle):
    p = tmp_path / "r.json"
    p.write_text(content)
    with pytest.raises(BridgeError) as ei:
        read_tau_bench_results(p)
    assert needle in str(ei.value)
