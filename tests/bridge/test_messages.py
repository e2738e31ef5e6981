"""trajectory_from_messages / episode_from_messages on dicts and on REAL SDK objects."""
import json

import pytest
from anthropic.types import Message, TextBlock, ToolResultBlockParam, ToolUseBlock, Usage
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_message_tool_call import Function
from openai.types.completion_usage import CompletionTokensDetails, PromptTokensDetails
from openai.types.responses import (ResponseFunctionToolCall, ResponseFunctionToolCallOutputItem,
                                    ResponseOutputMessage, ResponseOutputText)

from ek_agents.base import Episode, Step
from ek_agents.bridge import episode_from_messages, trajectory_from_messages
from ek_agents.errors import BridgeError, InvalidInput


def oa_call(cid, name, args):
    return ChatCompletionMessageToolCall(id=cid, type="function", function=Function(name=name, arguments=args))


# ---------------------------------------------------------------- OpenAI Chat Completions

def test_openai_sdk_objects_pair_by_id_even_out_of_order():
    msgs = [
        {"role": "user", "content": "weather in Paris and Rome?"},
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            oa_call("call_p", "get_weather", '{"city": "Paris"}'),
            oa_call("call_r", "get_weather", '{"city": "Rome"}')]),
        {"role": "tool", "tool_call_id": "call_r", "content": "25C"},   # answered out of order
        {"role": "tool", "tool_call_id": "call_p", "content": "18C"},
        ChatCompletionMessage(role="assistant", content="Paris 18C, Rome 25C."),
    ]
    ep = episode_from_messages(msgs, task_id="w1")
    assert ep.calls == (("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"}))
    assert [s.observation for s in ep.trajectory] == ["18C", "25C"]
    assert ep.output == "Paris 18C, Rome 25C."
    assert ep.cost is None  # no usage given: unknown, not free
    assert Episode.from_dict(ep.to_dict()) == ep


def test_results_without_ids_pair_by_order():
    msgs = [{"role": "assistant", "tool_calls": [
                {"function": {"name": "a", "arguments": "{}"}},
                {"function": {"name": "b", "arguments": '{"x": 1}'}}]},
            {"role": "tool", "content": "A"}, {"role": "tool", "content": "B"}]
    t = trajectory_from_messages(msgs)
    assert [(s.tool, s.observation) for s in t] == [("a", "A"), ("b", "B")]


def test_reused_ids_across_turns_pair_with_the_pending_call():
    msgs = [{"role": "assistant", "tool_calls": [{"id": "0", "function": {"name": "a", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "0", "content": "first"},
            {"role": "assistant", "tool_calls": [{"id": "0", "function": {"name": "b", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "0", "content": "second"}]
    assert [s.observation for s in trajectory_from_messages(msgs)] == ["first", "second"]


@pytest.mark.parametrize("raw", ['{"city": "Par', "not json", "[1, 2]", '"Paris"'])
def test_bad_arguments_keep_the_raw_string_and_record_an_error(raw):
    msgs = [ChatCompletionMessage(role="assistant", tool_calls=[oa_call("c1", "get_weather", raw)]),
            {"role": "tool", "tool_call_id": "c1", "content": "?"}]
    (step,) = trajectory_from_messages(msgs).steps
    assert step.args == raw and step.tool == "get_weather" and step.observation == "?"
    assert step.error and "arguments" in step.error


def test_empty_argument_string_is_no_arguments():
    (step,) = trajectory_from_messages([{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "now", "arguments": ""}}]}]).steps
    assert step.args == {} and step.error is None


def test_tool_message_error_field_marks_the_step():
    msgs = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "", "error": {"type": "timeout", "message": "took 30s"}},
            {"role": "assistant", "tool_calls": [{"id": "d", "function": {"name": "g", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "d", "content": "fine"}]
    t = trajectory_from_messages(msgs)
    assert [s.error for s in t] == ["timeout: took 30s", None]


def test_legacy_function_call():
    msgs = [{"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": '{"a": 1}'}},
            {"role": "function", "name": "f", "content": "ok"}]
    assert trajectory_from_messages(msgs).steps == (Step("f", {"a": 1}, "ok"),)


def test_usage_argument_and_output_override():
    usage = CompletionUsage(prompt_tokens=120, completion_tokens=30, total_tokens=150,
                            prompt_tokens_details=PromptTokensDetails(cached_tokens=100),
                            completion_tokens_details=CompletionTokensDetails(reasoning_tokens=10))
    ep = episode_from_messages([{"role": "assistant", "content": "x"}], usage=usage, output="final",
                               final_state={"db": 1}, latency_s=2.5, task_id=7)
    assert ep.task_id == "7" and ep.output == "final" and ep.final_state == {"db": 1}
    c = ep.cost
    assert (c.input_tokens, c.cached_input_tokens, c.output_tokens, c.reasoning_tokens, c.latency_s) == \
        (120, 100, 30, 10, 2.5)


# ---------------------------------------------------------------- OpenAI Responses

def test_openai_responses_items():
    items = [
        {"role": "user", "content": "What is 2+3?"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="call_A", name="add",
                                 arguments='{"a": 2, "b": 3}', status="completed"),
        ResponseFunctionToolCallOutputItem(type="function_call_output", id="fco_1", call_id="call_A",
                                           output="5", status="completed"),
        ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed",
                              content=[ResponseOutputText(type="output_text", text="2+3 = 5", annotations=[])]),
    ]
    ep = episode_from_messages(items)
    assert ep.calls == (("add", {"a": 2, "b": 3}),)
    assert ep.trajectory.steps[0].observation == "5"
    assert ep.output == "2+3 = 5"


def test_responses_output_as_input_param_dict_pairs_by_call_id():
    items = [{"type": "function_call", "call_id": "x", "name": "f", "arguments": "{}"},
             {"type": "function_call", "call_id": "y", "name": "g", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "y", "output": "G"},
             {"type": "function_call_output", "call_id": "x", "output": "F"}]
    assert [s.observation for s in trajectory_from_messages(items)] == ["F", "G"]


def test_responses_custom_tool_call_keeps_free_form_input_without_error():
    items = [{"type": "custom_tool_call", "call_id": "k", "name": "shell", "input": "ls -la"},
             {"type": "custom_tool_call_output", "call_id": "k", "output": [{"type": "input_text", "text": "a.txt"}]}]
    (step,) = trajectory_from_messages(items).steps
    assert (step.tool, step.args, step.observation, step.error) == ("shell", "ls -la", "a.txt", None)


# ---------------------------------------------------------------- Anthropic

def test_anthropic_sdk_objects_with_is_error_and_usage():
    first = Message(id="msg_1", type="message", role="assistant", model="claude-x", stop_reason="tool_use",
                    content=[TextBlock(type="text", text="Let me look that up."),
                             ToolUseBlock(type="tool_use", id="toolu_1", name="lookup", input={"sku": "A1"}),
                             ToolUseBlock(type="tool_use", id="toolu_2", name="stock", input={"sku": "A1"})],
                    usage=Usage(input_tokens=50, output_tokens=40, cache_read_input_tokens=1000,
                                cache_creation_input_tokens=200))
    results: list = [
        ToolResultBlockParam(type="tool_result", tool_use_id="toolu_2", content="3 left"),
        ToolResultBlockParam(type="tool_result", tool_use_id="toolu_1", is_error=True,
                             content=[{"type": "text", "text": "sku not found"}]),
    ]
    final = Message(id="msg_2", type="message", role="assistant", model="claude-x", stop_reason="end_turn",
                    content=[TextBlock(type="text", text="A1 is unknown, but 3 are in stock.")],
                    usage=Usage(input_tokens=80, output_tokens=15, cache_read_input_tokens=1200))
    msgs = [{"role": "user", "content": "Is A1 in stock?"}, first, {"role": "user", "content": results}, final]
    ep = episode_from_messages(msgs, task_id="a1")
    a, b = ep.trajectory.steps
    assert (a.tool, a.args, a.observation, a.error) == ("lookup", {"sku": "A1"}, "sku not found", "sku not found")
    assert (b.tool, b.observation, b.error) == ("stock", "3 left", None)
    assert ep.output == "A1 is unknown, but 3 are in stock."
    # usage summed from the Message objects; Anthropic input_tokens are fresh only
    c = ep.cost
    assert c.input_tokens == 50 + 1000 + 200 + 80 + 1200
    assert (c.cached_input_tokens, c.cache_write_tokens, c.output_tokens) == (2200, 200, 55)


def test_anthropic_dict_blocks_with_non_text_result_keep_content():
    img = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]
    msgs = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "shot", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": img}]}]
    (step,) = trajectory_from_messages(msgs).steps
    assert step.observation == img


# ---------------------------------------------------------------- tau2 / Inspect spellings

def test_tau2_flat_tool_calls_and_user_tools_are_not_agent_steps():
    msgs = [{"role": "assistant", "tool_calls": [{"id": "t1", "name": "get_bill", "arguments": {"cid": "C1"},
                                                   "requestor": "assistant"}]},
            {"role": "tool", "id": "t1", "content": "Error: no bill", "requestor": "assistant", "error": True},
            {"role": "user", "tool_calls": [{"id": "u1", "name": "reboot", "arguments": {}, "requestor": "user"}]},
            {"role": "tool", "id": "u1", "content": "rebooted", "requestor": "user", "error": False}]
    (step,) = trajectory_from_messages(msgs).steps
    assert (step.tool, step.args, step.observation, step.error) == \
        ("get_bill", {"cid": "C1"}, "Error: no bill", "Error: no bill")


def test_inspect_parse_error_is_recorded():
    msgs = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "c", "function": "add", "arguments": {}, "parse_error": "Expecting value: line 1"}]}]
    (step,) = trajectory_from_messages(msgs).steps
    assert step.error == "Expecting value: line 1"


def test_unpaired_results_are_counted_not_invented():
    ep = episode_from_messages([{"role": "tool", "tool_call_id": "zz", "content": "orphan"}])
    assert ep.trajectory.steps == () and ep.meta["unpaired_tool_results"] == 1


# ---------------------------------------------------------------- malformed input

@pytest.mark.parametrize("bad, needle", [
    ({"role": "user", "content": "hi"}, "wrap it in a list"),
    ("hello", "must be a list"),
    (None, "must be a list"),
    ([{"content": "no role"}], "messages[0] has no 'role'"),
    ([{"role": "user"}, 42], "messages[1] is a int"),
    ([{"role": 3}], "messages[0].role must be a string"),
    ([{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}],
     "messages[0].tool_calls[0].function.name"),
    ([{"role": "assistant", "tool_calls": "f()"}], "messages[0].tool_calls must be a list"),
])
def test_malformed_transcripts_raise_bridge_error_naming_the_field(bad, needle):
    with pytest.raises(BridgeError) as ei:
        trajectory_from_messages(bad)
    assert needle in str(ei.value)
    assert isinstance(ei.value, InvalidInput) and isinstance(ei.value, ValueError)


def test_trajectory_round_trips_through_json_even_with_raw_args():
    t = trajectory_from_messages([{"role": "assistant", "tool_calls": [
        {"id": "c", "function": {"name": "f", "arguments": "{oops"}}]}])
    assert type(t).from_json(json.dumps(t.to_dict())) == t
