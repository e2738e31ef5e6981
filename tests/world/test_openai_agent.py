"""OpenAIToolAgent against a real HTTP server on 127.0.0.1 that speaks chat-completions.

The server is a scripted model: it answers each request with the next scripted message (tool
calls, then a final answer) plus a usage record, and keeps every request it received so the
tests can check what the SDK actually sent (tools, tool results, seed, key).
"""
from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ek_agents.adapters import OpenAIToolAgent, openai_tools
from ek_agents.errors import InvalidInput, MissingDependency, TransientAgentError
from ek_agents.scoring.metrics import final_state_match
from ek_agents.suite import load_suite
from examples.shop.world import POLICY, SUITE_PATH, ShopEnv

pytest.importorskip("openai")


def tool_call(cid, name, args):
    return {"id": cid, "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


def reply(content=None, calls=None, usage=(100, 10, 0)):
    prompt, completion, cached = usage
    msg = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = calls
    return {"status": 200, "body": {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1700000000, "model": "fake-model",
        "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion, "prompt_tokens_details": {"cached_tokens": cached}},
    }}


class FakeModel:
    """A chat-completions endpoint on a free loopback port, answering from a script."""

    def __init__(self, script):
        self.script = list(script)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server API)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append(body)
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    out = {"status": 404, "body": {"error": {"message": f"no route {self.path}"}}}
                elif fake.script:
                    out = fake.script.pop(0)
                else:
                    out = {"status": 500, "body": {"error": {"message": "script exhausted"}}}
                data = json.dumps(out["body"]).encode()
                self.send_response(out["status"])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE_PATH)


def make(fake, **kw):
    kw.setdefault("env_factory", ShopEnv.for_task)
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout_s", 10)
    return OpenAIToolAgent("fake-model", base_url=fake.url, api_key="test-key", **kw)


def test_tool_loop_builds_the_episode(suite):
    task = suite.task("refund-01")
    script = [
        reply(calls=[tool_call("call_1", "get_order", {"order_id": "O1005"})], usage=(1210, 24, 0)),
        reply(calls=[tool_call("call_2", "refund_order", {"order_id": "O1005", "amount": 199.99})],
              usage=(1372, 31, 1152)),
        reply("I refunded $199.99 on order O1005.", usage=(1430, 17, 1280)),
    ]
    with FakeModel(script) as fake:
        agent = make(fake, system_prompt=POLICY, suite_version=suite.version, scaffold="examples-shop-v1")
        ep = agent(task, seed=7)
    assert ep.task_id == "refund-01" and ep.output == "I refunded $199.99 on order O1005."
    assert ep.trajectory.tools == ("get_order", "refund_order")
    assert ep.trajectory[1].args == {"order_id": "O1005", "amount": 199.99} and ep.trajectory[1].error is None
    assert json.loads(ep.trajectory[0].observation)["total"] == 199.99
    assert ep.final_state["db"]["orders"]["O1005"]["status"] == "refunded"
    assert final_state_match(ep, task.gold)
    c = ep.cost
    assert (c.input_tokens, c.output_tokens, c.cached_input_tokens) == (1210 + 1372 + 1430, 24 + 31 + 17, 1152 + 1280)
    assert c.latency_s is not None and c.latency_s > 0
    assert ep.run.model == "fake-model" and ep.run.seed == 7 and ep.run.temperature == 0.0
    assert ep.run.suite_version == suite.version and ep.run.scaffold == "examples-shop-v1"
    assert ep.meta["turns"] == 3 and ep.meta["stopped"] == "answer"

    first, second, third = fake.requests
    assert fake.headers[0]["authorization"] == "Bearer test-key"
    assert first["model"] == "fake-model" and first["seed"] == 7 and first["temperature"] == 0.0
    assert first["messages"] == [{"role": "system", "content": POLICY}, {"role": "user", "content": task.input}]
    assert first["tools"] == openai_tools(task.tools)
    fns = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(fns) == {"find_customer", "get_order", "list_orders", "update_address", "cancel_order",
                        "refund_order"}
    refund = fns["refund_order"]["parameters"]
    assert refund["properties"]["amount"] == {"type": "number"} and refund["required"] == ["order_id", "amount"]
    assert fns["cancel_order"]["parameters"]["properties"]["reason"]["enum"] == [
        "customer_request", "duplicate", "fraud"]
    assert "destructive" in fns["refund_order"]["description"]
    tool_msg = second["messages"][-1]
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1"
    assert json.loads(tool_msg["content"])["id"] == "O1005"
    assert json.loads(third["messages"][-1]["content"]) == {
        "order_id": "O1005", "refunded": 199.99, "status": "refunded"}
    assert len(third["messages"]) == 6


def test_bad_calls_become_step_errors_the_model_sees(suite):
    task = suite.task("lookup-01")
    script = [
        reply(calls=[tool_call("a", "get_order", '{"order_id": "O1003"'),      # truncated JSON
                     tool_call("b", "drop_table", {"name": "orders"})]),       # no such tool
        reply(calls=[tool_call("c", "cancel_order", {"order_id": "O1003", "reason": "duplicate"})]),
        reply("Order O1003 is shipped."),
    ]
    with FakeModel(script) as fake:
        ep = make(fake)(task)
    steps = ep.trajectory.steps
    assert [s.tool for s in steps] == ["get_order", "drop_table", "cancel_order"]
    assert "not valid JSON" in steps[0].error and "unknown tool 'drop_table'" in steps[1].error
    assert "only pending or processing" in steps[2].error
    sent = fake.requests[1]["messages"]
    assert "not valid JSON" in json.loads(sent[-2]["content"])["error"]
    assert "unknown tool" in json.loads(sent[-1]["content"])["error"]
    assert all("error" not in m for m in sent)  # the wire format stays plain OpenAI
    assert ep.final_state == {"db": {}, "answer": "shipped"} and final_state_match(ep, task.gold)
    assert ep.run.seed is None and "seed" not in fake.requests[0]


def test_max_turns_stops_the_loop(suite):
    task = suite.task("lookup-03")
    script = [reply(calls=[tool_call(f"c{i}", "get_order", {"order_id": "O1008"})]) for i in range(5)]
    with FakeModel(script) as fake:
        ep = make(fake, max_turns=2)(task)
    assert len(fake.requests) == 2 and ep.meta["stopped"] == "max_turns" and len(ep.trajectory) == 2
    assert ep.output is None and not final_state_match(ep, task.gold)
    assert ep.cost.input_tokens == 200


def test_http_errors_map_to_transient_or_bad_input(suite):
    task = suite.task("lookup-01")
    with FakeModel([{"status": 503, "body": {"error": {"message": "overloaded"}}}]) as fake:
        with pytest.raises(TransientAgentError, match="fake-model at http://127.0.0.1"):
            make(fake)(task)
    with FakeModel([{"status": 429, "body": {"error": {"message": "slow down"}}}]) as fake:
        with pytest.raises(TransientAgentError, match="RateLimitError"):
            make(fake)(task)
    with FakeModel([{"status": 401, "body": {"error": {"message": "bad key"}}}]) as fake:
        with pytest.raises(InvalidInput, match="HTTP 401"):
            make(fake)(task)


def test_endpoint_and_key_from_the_environment(suite, monkeypatch):
    task = suite.task("lookup-01")
    with FakeModel([reply("It is shipped.")]) as fake:
        monkeypatch.setenv("EK_OPENAI_BASE_URL", fake.url)
        monkeypatch.setenv("EK_OPENAI_API_KEY", "env-key")
        agent = OpenAIToolAgent("fake-model", env_factory=ShopEnv.for_task, max_retries=0)
        ep = agent(task, seed=1)
    assert agent.base_url == fake.url and fake.headers[0]["authorization"] == "Bearer env-key"
    assert final_state_match(ep, task.gold)


def test_local_endpoint_needs_no_key(suite, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("EK_OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("EK_OPENAI_BASE_URL", raising=False)
    with FakeModel([reply("shipped")]) as fake:
        ep = OpenAIToolAgent("m", base_url=fake.url, env_factory=ShopEnv.for_task)(suite.task("lookup-01"))
    assert ep.output == "shipped"
    with pytest.raises(InvalidInput, match="no API key"):
        OpenAIToolAgent("m", env_factory=ShopEnv.for_task)(suite.task("lookup-01"))


def test_missing_sdk_names_the_extra(suite, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    agent = OpenAIToolAgent("m", base_url="http://127.0.0.1:9/v1", env_factory=ShopEnv.for_task)
    with pytest.raises(MissingDependency, match=r"pip install 'ek-agents\[openai\]'"):
        agent(suite.task("lookup-01"))


def test_constructor_checks():
    with pytest.raises(InvalidInput, match="env_factory"):
        OpenAIToolAgent("m", env_factory=None)
    with pytest.raises(InvalidInput, match="max_turns"):
        OpenAIToolAgent("m", env_factory=ShopEnv.for_task, max_turns=0)


def test_the_shop_agent_entry_point(suite, monkeypatch):
    import importlib

    monkeypatch.setenv("EK_OPENAI_MODEL", "fake-model")
    mod = importlib.reload(importlib.import_module("examples.shop.openai_agent"))
    with FakeModel([reply(calls=[tool_call("x", "get_order", {"order_id": "O1008"})]),
                    reply("Order O1008 came to $308.90.")]) as fake:
        agent = mod.make_agent(base_url=fake.url, api_key="k", max_retries=0)
        ep = agent(suite.task("lookup-03"), seed=2)
    assert mod.agent.model == "fake-model" and ep.run.scaffold == "examples-shop-v1"
    assert fake.requests[0]["messages"][0]["content"] == POLICY
    assert final_state_match(ep, suite.task("lookup-03").gold)
