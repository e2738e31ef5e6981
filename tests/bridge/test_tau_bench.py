"""read_tau_bench_results on tau-bench (v1) and tau2-bench Results fixtures of our own
(tests/bridge/fixtures/, field names as in sierra-research/tau-bench and tau2-bench)."""
import json
from pathlib import Path

import fsspec
import pytest

from ek_agents.base import Episode, RunProvenance
from ek_agents.core import Provenance
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


def test_v1_every_field_of_every_episode():
    """The whole episode list of the v1 fixture, field by field, written out from the fixture
    (``task`` / ``reward_info`` are passed through from each record's ``info`` as they are)."""
    records = json.loads(V1.read_text())
    eps = read_tau_bench_results(V1)
    src = str(V1)
    order = {"trial": 0, "reward": 1, "reward_info": 2, "task": 3, "user_cost": 4}
    steps_0 = [("find_user_id_by_name_zip", {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
                "yusuf_rossi_9620", None)]
    expected = [  # (task_id, record, success, output, steps, user_cost)
        ("0", 0, True, "Your order #W2378156 has been cancelled.",
         steps_0 + [("cancel_pending_order", {"order_id": "#W2378156", "reason": "ordered by mistake"},
                     '{"order_id": "#W2378156", "status": "cancelled"}', None)], 0.00123),
        ("0", 2, False, "Your order #W2378156 has been cancelled.",
         steps_0 + [("cancel_pending_order", {"order_id": "#W2378156", "reason": "no longer needed"},
                     '{"order_id": "#W2378156", "status": "cancelled"}', None)], 0.0011),
        ("1", 1, True, "It has shipped.",
         [("get_order_details", '{"order_id": "#W6390527"', "Error: invalid arguments",
           "arguments: column 25: not valid JSON (Expecting ',' delimiter); kept the raw string")], 0.0008),
    ]
    assert len(eps) == 4
    for e, (tid, i, success, output, steps, user_cost) in zip(eps, expected):
        info = records[i]["info"]
        assert (e.task_id, e.success, e.output, e.final_state, e.cost, e.run) == (tid, success, output, None, None, None)
        assert [(s.tool, s.args, s.observation, s.error) for s in e.trajectory.steps] == steps
        assert all(type(s.args) is type(want[1]) for s, want in zip(e.trajectory.steps, steps))
        assert e.provenance == Provenance(source=src, locator=f"[{i}]", meta={"format": "tau-bench"})
        assert e.meta == {"trial": records[i]["trial"], "reward": records[i]["reward"],
                          "reward_info": info["reward_info"], "task": info["task"], "user_cost": user_cost}
        assert list(e.meta) == sorted(e.meta, key=order.get)
    crashed = eps[3]
    assert (crashed.task_id, crashed.success, crashed.output, crashed.cost, crashed.trajectory.steps) == \
        ("1", False, None, None, ())
    assert crashed.provenance == Provenance(source=src, locator="[3]", meta={"format": "tau-bench"})
    assert list(crashed.meta.items()) == [
        ("trial", 1), ("reward", 0.0),
        ("error", "litellm.exceptions.RateLimitError: litellm.RateLimitError: rate limit reached for gpt-4o"),
        ("error_kind", "exception")]


def test_v1_transcript_shapes_each_step_as_written(tmp_path):
    """One v1 file whose transcripts take every turn of the message parser that tau-bench
    results can hold; each step, output, cost and meta written out by hand."""
    big = "1" + "0" * 20  # an integer orjson would read as a float
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "do things"},
        {"role": "assistant", "content": [{"type": "text", "text": "on it"}], "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "first", "arguments": '{"x": [1, 2.5, null]}'}},
            {"id": "b", "type": "function", "function": {"name": "second", "arguments": ""}},
            {"id": "c", "type": "function", "function": {"name": "third", "arguments": None}},
            {"type": "function", "function": {"name": "fourth", "arguments": "[1, 2]"}},
            {"id": "e", "type": "function", "function": {"name": "fifth", "arguments": '{"n": ' + big + "}"}},
            {"id": "f", "type": "function", "function": {"name": "sixth", "arguments": '{"v": Infinity}'}},
            {"id": "g", "type": "function", "function": {"name": "seventh", "arguments": {"already": "a dict"}}},
        ]},
        {"role": "tool", "tool_call_id": "b", "content": "B"},  # answered out of order, by id
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "A1"}, {"type": "text", "text": "A2"}]},
        {"role": "tool", "content": "no id: the first unanswered call"},
        {"role": "tool", "tool_call_id": "zzz", "content": "unknown id: the first unanswered call without one"},
        {"role": "tool", "tool_call_id": "e", "content": {"not": "text"}, "error": "boom"},
        {"role": "tool", "tool_call_id": "f", "content": "F", "error": {"type": "timeout", "message": "slow"}},
        {"role": "tool", "tool_call_id": "g", "content": "G"},
        {"role": "tool", "tool_call_id": "h", "content": "nobody asked"},
        {"role": "assistant", "content": None, "function_call": {"name": "legacy", "arguments": '{"k": "v"}'}},
        {"role": "assistant", "content": "done", "usage": None},
        {"role": "user", "content": "###STOP###"},
    ]
    records = [{"task_id": "t", "reward": 1 + 1e-7, "info": {"total_cost": 0.5, "user_cost": None}, "traj": traj,
                "trial": 3}]
    p = tmp_path / "results.json"
    p.write_text(json.dumps(records))
    (e,) = read_tau_bench_results(p)
    assert [(s.tool, s.args, s.observation, s.error) for s in e.trajectory.steps] == [
        ("first", {"x": [1, 2.5, None]}, "A1\nA2", None),
        ("second", {}, "B", None),
        ("third", {}, "no id: the first unanswered call", None),
        ("fourth", "[1, 2]", "unknown id: the first unanswered call without one",
         "arguments are JSON list, not an object; kept the raw string"),
        ("fifth", {"n": int(big)}, {"not": "text"}, "boom"),
        ("sixth", {"v": float("inf")}, "F", "timeout: slow"),
        ("seventh", {"already": "a dict"}, "G", None),
        ("legacy", {"k": "v"}, None, None),
    ]
    assert type(e.trajectory.steps[4].args["n"]) is int
    assert (e.task_id, e.success, e.output, e.cost) == ("t", True, "done", None)
    assert list(e.meta.items()) == [("trial", 3), ("reward", 1 + 1e-7), ("total_cost", 0.5),
                                    ("unpaired_tool_results", 1)]


def test_tau2_every_field_of_every_episode():
    """The whole episode list of the tau2 fixture: steps, outputs, costs and meta."""
    eps = read_tau_bench_results(V2)
    lookup = ("get_customer_by_phone", {"phone_number": "555-123-2002"},
              '{"customer_id": "C1001", "name": "John Smith"}', None)
    want = [  # (simulation, locator index, steps, output, (in, cached, out tokens, latency), trial, seed, term, costs)
        ("sim-a", 0, [lookup], "Please turn airplane mode off.", (3900, 3328, 51, 21.5), 0, 300, "user_stop", 0.0013),
        ("sim-e", 4, [lookup], "Please turn airplane mode off.", (3900, 3328, 51, 19.0), 1, 301, "user_stop", 0.0013),
        ("sim-c", 2, [("suspend_line", {"customer_id": "C1001", "line_id": "L9"}, "Error: line L9 not found",
                       "Error: line L9 not found"),
                      ("get_details_by_id", {"id": "C1001"}, '{"lines": ["L1", "L2"]}', None)],
         "Sorry, I could not find that line.", (3900, 0, 45, 18.0), 0, 300, "user_stop", 0.0013),
        ("sim-d", 3, [], "Hi!", (1200, 0, 3, 3.0), 1, 301, "agent_error", 0.0001),
    ]
    assert len(eps) == len(want)
    for e, (sim, i, steps, output, tokens, trial, seed, term, agent_cost) in zip(eps, want):
        assert [(s.tool, s.args, s.observation, s.error) for s in e.trajectory.steps] == steps
        assert e.output == output
        c = e.cost
        assert (c.input_tokens, c.cached_input_tokens, c.output_tokens, c.latency_s) == tokens
        assert (c.reasoning_tokens, c.retries, c.cache_write_tokens) == (0, 0, 0)
        assert e.run.seed == seed
        assert e.provenance == Provenance(source=str(V2), locator=f"simulations[{i}]", meta={
            "format": "tau2-bench", "simulation_id": sim, "excluded_infrastructure_errors": 1})
        meta = {"trial": trial, "reward": 1.0 if e.success else 0.0, "termination_reason": term,
                "simulation_id": sim, "excluded_infrastructure_errors": 1, "agent_cost_usd": agent_cost,
                "user_cost_usd": 0.0004, "seed": seed}
        if term == "agent_error":
            meta.update(error_kind="exception",
                        error="AgentError: tau2 simulation ended with termination_reason='agent_error'")
        assert list(e.meta.items()) == list(meta.items())
