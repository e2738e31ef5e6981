"""from_deepeval_test_case, read_messages_jsonl and as_agent."""
import asyncio
import json
from types import SimpleNamespace as NS

import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_message_tool_call import Function
from pydantic import BaseModel

from ek_agents.base import Episode, TaskSpec
from ek_agents.bridge import as_agent, from_deepeval_test_case, read_messages_jsonl
from ek_agents.errors import BridgeError, InvalidInput


# ---------------------------------------------------------------- DeepEval (duck-typed)

class ToolCall(BaseModel):  # the shape of deepeval.test_case.ToolCall
    name: str
    description: str | None = None
    input_parameters: dict | None = None
    output: object = None


class LLMTestCase(BaseModel):  # the shape of deepeval.test_case.LLMTestCase
    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    tools_called: list[ToolCall] | None = None
    expected_tools: list[ToolCall] | None = None
    name: str | None = None
    token_cost: float | None = None
    completion_time: float | None = None


def test_deepeval_case_with_tools():
    case = LLMTestCase(input="Refund order 7", actual_output="Refunded $20.", expected_output="Refunded",
                       name="refund-7", token_cost=0.0021, completion_time=1.7,
                       tools_called=[ToolCall(name="lookup", input_parameters={"order": 7}, output={"total": 20}),
                                     ToolCall(name="refund", input_parameters={"order": 7, "amount": 20})],
                       expected_tools=[ToolCall(name="refund", input_parameters={"order": 7, "amount": 20})])
    ep = from_deepeval_test_case(case)
    assert ep.task_id == "refund-7" and ep.output == "Refunded $20."
    assert ep.calls == (("lookup", {"order": 7}), ("refund", {"order": 7, "amount": 20}))
    assert ep.trajectory.steps[0].observation == {"total": 20}
    assert ep.meta["expected_calls"] == [{"tool": "refund", "args": {"order": 7, "amount": 20}}]
    assert ep.meta["token_cost_usd"] == 0.0021 and ep.meta["latency_s"] == 1.7
    assert ep.cost is None  # DeepEval records dollars, not tokens
    assert from_deepeval_test_case(case, task_id="x").task_id == "x"
    assert Episode.from_json(ep.to_json()) == ep


def test_deepeval_plain_attribute_object_without_tools():
    ep = from_deepeval_test_case(NS(input="hi", actual_output="hello", tools_called=None))
    assert ep.output == "hello" and ep.trajectory.steps == ()


@pytest.mark.parametrize("case, needle", [
    (None, "LLMTestCase-like"),
    (NS(actual_output="x", tools_called=[NS(name="", input_parameters={})]), "tools_called[0] has no 'name'"),
    (NS(actual_output="x", tools_called=[NS(name="f", input_parameters="a=1")]), "input_parameters must be a dict"),
    (NS(actual_output="x", tools_called="f()"), "must be a list"),
])
def test_deepeval_malformed(case, needle):
    with pytest.raises(BridgeError) as ei:
        from_deepeval_test_case(case)
    assert needle in str(ei.value)


# ---------------------------------------------------------------- JSONL transcripts

def _line(**rec):
    return json.dumps(rec)


def test_read_messages_jsonl_mixed_formats(tmp_path):
    oa = ChatCompletionMessage(role="assistant", tool_calls=[ChatCompletionMessageToolCall(
        id="c1", type="function", function=Function(name="search", arguments='{"q": "cat"}'))])
    an = Message(id="m", type="message", role="assistant", model="claude-x", stop_reason="end_turn",
                 content=[TextBlock(type="text", text="ok"),
                          ToolUseBlock(type="tool_use", id="tu", name="buy", input={"sku": "A"})],
                 usage=Usage(input_tokens=10, output_tokens=5, cache_read_input_tokens=90))
    lines = [
        _line(task_id="t1", messages=[{"role": "user", "content": "find cats"}, oa.model_dump(),
                                      {"role": "tool", "tool_call_id": "c1", "content": "3 cats"},
                                      {"role": "assistant", "content": "Found 3 cats."}],
              usage={"prompt_tokens": 100, "completion_tokens": 12}, success=True, model="gpt-4o", trial=1),
        "",
        _line(task_id="t2", messages=[an.model_dump(mode="json")], final_state={"cart": ["A"]}, success=False),
        _line(task_id=3, messages=[{"type": "function_call", "call_id": "x", "name": "f", "arguments": "{}"},
                                   {"type": "function_call_output", "call_id": "x", "output": "F"}],
              output="done", latency_s=0.5, meta={"source": "prod"}, custom="kept"),
    ]
    p = tmp_path / "runs.jsonl"
    p.write_text("\n".join(lines) + "\n")
    a, b, c = read_messages_jsonl(p)
    assert (a.task_id, a.output, a.success, a.calls) == ("t1", "Found 3 cats.", True, (("search", {"q": "cat"}),))
    assert a.cost.input_tokens == 100 and a.run.model == "gpt-4o" and a.meta["model"] == "gpt-4o"
    assert a.meta["trial"] == 1 and a.provenance.locator == "line 1"
    assert (b.output, b.final_state, b.success, b.calls) == ("ok", {"cart": ["A"]}, False, (("buy", {"sku": "A"}),))
    assert b.cost.input_tokens == 100 and b.cost.cached_input_tokens == 90  # usage from the Message
    assert b.provenance.locator == "line 3"
    assert (c.task_id, c.output, c.success, c.cost) == ("3", "done", None, None)
    assert c.meta["source"] == "prod" and c.meta["latency_s"] == 0.5 and c.meta["extra_fields"] == {"custom": "kept"}


@pytest.mark.parametrize("text, needle", [
    ("{not json}", ":1: column 2: not valid JSON"),
    ('[1, 2]', "each line must be a JSON object"),
    ('{"messages": []}', "missing 'task_id'"),
    ('{"task_id": "t"}', "missing 'messages'"),
    ('{"task_id": "t", "messages": [], "success": "yes"}', "'success' must be true, false or null"),
    ('{"task_id": "t", "messages": [{"content": "x"}]}', ":1: messages[0] has no 'role'"),
])
def test_read_messages_jsonl_errors_name_the_line(tmp_path, text, needle):
    p = tmp_path / "bad.jsonl"
    p.write_text(text + "\n")
    with pytest.raises(BridgeError) as ei:
        read_messages_jsonl(p)
    assert needle in str(ei.value)


# ---------------------------------------------------------------- as_agent

def test_as_agent_wraps_plain_functions():
    agent = as_agent(str.upper)
    ep = agent(TaskSpec("t1", input="hi"))
    assert isinstance(ep, Episode) and (ep.task_id, ep.output) == ("t1", "HI")


def test_as_agent_passes_episodes_through_and_fills_the_id():
    agent = as_agent(lambda x: Episode(output=x * 2, success=True))
    ep = agent(TaskSpec("t9", input="ab"))
    assert (ep.task_id, ep.output, ep.success) == ("t9", "abab", True)


def test_as_agent_async():
    async def fn(x):
        return x[::-1]

    agent = as_agent(fn)
    assert asyncio.iscoroutinefunction(agent)
    assert asyncio.run(agent(TaskSpec("t", input="abc"))).output == "cba"


def test_as_agent_rejects_non_callables():
    with pytest.raises(InvalidInput):
        as_agent("upper")
