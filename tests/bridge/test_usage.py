"""cost_from_usage: every provider spelling maps onto ek's Cost convention
(input_tokens = ALL prompt tokens incl. cache reads + writes; output_tokens incl. reasoning)."""
from types import SimpleNamespace

import pytest
from anthropic.types import Usage as AnthropicUsage
from openai.types import CompletionUsage
from openai.types.completion_usage import CompletionTokensDetails, PromptTokensDetails
from openai.types.responses import ResponseUsage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from ek_agents.base import Cost
from ek_agents.bridge import cost_from_usage
from ek_agents.errors import BridgeError


def parts(c: Cost) -> tuple:
    return (c.input_tokens, c.cached_input_tokens, c.cache_write_tokens, c.output_tokens, c.reasoning_tokens)


def test_openai_chat_sdk_object_prompt_includes_cache_completion_includes_reasoning():
    u = CompletionUsage(prompt_tokens=2000, completion_tokens=500, total_tokens=2500,
                        prompt_tokens_details=PromptTokensDetails(cached_tokens=1536),
                        completion_tokens_details=CompletionTokensDetails(reasoning_tokens=320))
    assert parts(cost_from_usage(u)) == (2000, 1536, 0, 500, 320)


def test_openai_responses_sdk_object():
    u = ResponseUsage(input_tokens=3000, output_tokens=800, total_tokens=3800,
                      input_tokens_details=InputTokensDetails(cached_tokens=2048, cache_write_tokens=0),
                      output_tokens_details=OutputTokensDetails(reasoning_tokens=600))
    assert parts(cost_from_usage(u)) == (3000, 2048, 0, 800, 600)


def test_anthropic_sdk_object_fresh_input_plus_cache_read_plus_cache_write():
    u = AnthropicUsage(input_tokens=40, output_tokens=90, cache_read_input_tokens=5000,
                       cache_creation_input_tokens=1200)
    assert parts(cost_from_usage(u)) == (6240, 5000, 1200, 90, 0)


def test_anthropic_without_cache_fields_and_with_thinking_details():
    u = AnthropicUsage(input_tokens=40, output_tokens=90, output_tokens_details={"thinking_tokens": 60})
    assert parts(cost_from_usage(u)) == (40, 0, 0, 90, 60)


def test_inspect_model_usage_current_convention_is_fresh_only():
    # inspect_ai >= the version that normalised providers: input_tokens excludes the cache
    u = {"input_tokens": 80, "output_tokens": 7, "total_tokens": 103, "input_tokens_cache_read": 16}
    assert parts(cost_from_usage(u)) == (96, 16, 0, 7, 0)


def test_inspect_model_usage_legacy_openai_passthrough_detected_by_total():
    # older inspect_ai passed OpenAI prompt_tokens (cache included) through as input_tokens
    u = {"input_tokens": 96, "output_tokens": 7, "total_tokens": 103, "input_tokens_cache_read": 16}
    assert parts(cost_from_usage(u)) == (96, 16, 0, 7, 0)


def test_inspect_model_usage_object_with_cache_write_and_reasoning():
    u = SimpleNamespace(input_tokens=10, output_tokens=50, total_tokens=10 + 300 + 40 + 50,
                        input_tokens_cache_read=300, input_tokens_cache_write=40, reasoning_tokens=30,
                        total_cost=None)
    assert parts(cost_from_usage(u)) == (350, 300, 40, 50, 30)


def test_output_that_excludes_reasoning_gets_it_added():
    # reasoning larger than output can only mean output excluded it
    c = cost_from_usage({"input_tokens": 10, "output_tokens": 5, "reasoning_tokens": 20,
                         "input_tokens_cache_read": 0})
    assert (c.output_tokens, c.reasoning_tokens) == (25, 20)
    # total_tokens says so
    c = cost_from_usage({"input_tokens": 10, "output_tokens": 30, "reasoning_tokens": 20,
                         "total_tokens": 60, "input_tokens_cache_read": 0})
    assert (c.output_tokens, c.reasoning_tokens) == (50, 20)


def test_litellm_style_chat_usage_with_anthropic_cache_keys_checked_by_total():
    inclusive = {"prompt_tokens": 1100, "completion_tokens": 10, "total_tokens": 1110,
                 "cache_read_input_tokens": 1000}
    assert parts(cost_from_usage(inclusive)) == (1100, 1000, 0, 10, 0)
    exclusive = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 1110,
                 "cache_read_input_tokens": 1000}
    assert parts(cost_from_usage(exclusive)) == (1100, 1000, 0, 10, 0)


def test_lists_and_per_model_mappings_are_summed_and_latency_set():
    recs = [{"prompt_tokens": 10, "completion_tokens": 1}, {"input_tokens": 5, "output_tokens": 2}]
    c = cost_from_usage(recs, latency_s=1.5)
    assert (c.input_tokens, c.output_tokens, c.latency_s) == (15, 3, 1.5)
    per_model = {"openai/gpt-4o": {"input_tokens": 10, "output_tokens": 1, "total_tokens": 11},
                 "anthropic/claude": {"input_tokens": 1, "output_tokens": 1, "input_tokens_cache_read": 9,
                                      "total_tokens": 11}}
    c = cost_from_usage(per_model)
    assert parts(c) == (20, 9, 0, 2, 0)


def test_float_counts_from_json_are_accepted_when_integral():
    assert cost_from_usage({"prompt_tokens": 10.0, "completion_tokens": 2}).input_tokens == 10


@pytest.mark.parametrize("bad, needle", [
    ({"tokens": 3}, "no token counts"),
    ({"prompt_tokens": -1, "completion_tokens": 2}, "usage.prompt_tokens"),
    ({"prompt_tokens": "10", "completion_tokens": 2}, "usage.prompt_tokens"),
    ({"prompt_tokens": 1.5, "completion_tokens": 2}, "non-negative integer"),
    ("100 tokens", "usage must be a usage dict"),
    ([], "empty list"),
])
def test_bad_usage_raises_bridge_error_naming_the_field(bad, needle):
    with pytest.raises(BridgeError) as ei:
        cost_from_usage(bad)
    assert needle in str(ei.value)


def test_a_cost_passes_through():
    c = Cost(input_tokens=3, output_tokens=1)
    assert cost_from_usage(c) == c and cost_from_usage(c, latency_s=2.0).latency_s == 2.0


def test_a_whole_response_is_read_through_its_usage():
    from anthropic.types import Message, TextBlock
    msg = Message(id="m", type="message", role="assistant", model="claude-x", stop_reason="end_turn",
                  content=[TextBlock(type="text", text="hi")],
                  usage=AnthropicUsage(input_tokens=3, output_tokens=2, cache_read_input_tokens=7))
    assert parts(cost_from_usage(msg)) == (10, 7, 0, 2, 0)
