"""Streamed calls billed from their final usage, and cache writes at their own rate: the real
SDKs stream from the scripted server, ``run_suite(capture="otel")`` bills them, and the bill is
compared with the server's ledger of what it billed (priced independently of ek's cost code)."""
from __future__ import annotations

import json

import pytest

from ek_agents.base import TaskSpec
from ek_agents.cost import episode_dollars
from ek_agents.prices import load_prices
from ek_agents.reporting import build_report
from ek_agents.execution.harness import run_trials
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER, FakeOpenAI, tool_result

TASKS = [TaskSpec(f"s{i}", input="plan, look up, answer") for i in range(4)]

#: LiteLLM's catalog entry for the model the Messages API answers with (its published rates)
CLAUDE = {"claude-sonnet-4-5-20250929": {
    "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
    "cache_read_input_token_cost": 3e-07, "cache_creation_input_token_cost": 3.75e-06,
    "litellm_provider": "anthropic", "mode": "chat"}}


def run(agent, tasks, *, k, seed, prices, check=None, concurrency=4) -> tuple:
    """The captured episodes and the report of ``agent`` over ``tasks`` (what run_suite does)."""
    eps = run_trials(agent, tasks, k=k, seed=seed, capture="otel", max_concurrency=concurrency)
    check = check or (lambda ep, gold: ep.output is not None)
    return eps, build_report(eps, tasks, k=k, check=check, prices=prices)


@pytest.fixture
def srv():
    with FakeOpenAI() as s:
        agents.configure(s.base_url)
        yield s


def _sent_dollars(sent: list, prices: dict) -> float:
    """What the server's replies cost at the catalog's rates (independent of ek_agents.cost)."""
    usd = 0.0
    for s in sent:
        p = prices[s.model]
        read = s.cached_input_tokens
        write_rate = p.cache_write if p.cache_write is not None else p.input
        usd += ((s.input_tokens - read - s.cache_write_tokens) * p.input + read * p.cached_input
                + s.cache_write_tokens * write_rate + s.output_tokens * p.output)
    return usd


def _streamed(stream) -> tuple:
    """The text and tool calls of a streamed chat completion."""
    text, calls = "", {}
    for chunk in stream:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                slot["name"] += (tc.function and tc.function.name) or ""
                slot["arguments"] += (tc.function and tc.function.arguments) or ""
    return text, [calls[i] for i in sorted(calls)]


def _openai_streaming_agent(include_usage: bool):
    def agent(task, *, seed=None):
        client = agents._client("sync")
        extra = {"stream_options": {"include_usage": True}} if include_usage else {}
        messages: list = [{"role": "user", "content": f"{agents.marker(task, seed)} {task.input}"}]
        for _ in range(4):
            text, calls = _streamed(client.chat.completions.create(
                model=PLANNER, messages=messages, tools=agents.TOOLS, stream=True, **extra))
            if not calls:
                return text
            messages.append({"role": "assistant", "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]})
            messages += [{"role": "tool", "tool_call_id": c["id"],
                          "content": tool_result(c["name"], json.loads(c["arguments"]))}
                         for c in calls]
        return text
    return agent


def test_openai_sdk_streams_under_openai_v2_billed_from_the_last_chunk(srv, prices):
    agents.instrument_openai_v2()
    eps, report = run(_openai_streaming_agent(True), TASKS, k=1, seed=100, prices=prices)
    for ep in eps:
        sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [(c.model, c.input_tokens, c.output_tokens) for c in ep.cost.calls] == \
            [(s.model, s.input_tokens, s.output_tokens) for s in sent]
    total = 0.0
    for marker, sent in srv.sent.items():
        assert all(s.stream and s.usage_sent for s in sent)
        total += _sent_dollars(sent, prices)  # the cached counts read from the last chunks
    assert sum(b.calls for b in srv.ledger.values()) == 8
    assert report.cost["input_tokens"] == sum(b.input_tokens for b in srv.ledger.values())
    assert report.cost["output_tokens"] == sum(b.output_tokens for b in srv.ledger.values())
    assert report.cost["cached_input_tokens"] == sum(b.cached_input_tokens
                                                     for b in srv.ledger.values())
    assert report.cost["total_dollars"] == pytest.approx(total, rel=1e-12)
    assert not report.cost["upper_bound"] and "capture" not in report.cost

    srv.sent.clear()
    _, quiet = run(_openai_streaming_agent(False), TASKS[:2], k=1, seed=200, prices=prices)
    assert quiet.cost["capture"]["calls_without_usage"] == 4
    assert quiet.cost["capture"]["calls_without_usage_by_model"] == {"gpt-4o-2024-08-06": 4}
    # no usage reported: the cost is unknown (never a silent $0), and the report says why
    assert quiet.cost["total_dollars"] is None and quiet.cost["n_without_cost"] == 2
    assert any("reported no token usage" in w and "include_usage" in w and "LOWER BOUND" in w
               for w in quiet.cost["warnings"])


async def _pydantic_streaming_agent(task, *, seed=None):
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=agents._client("async"))
    planner = Agent(OpenAIChatModel(PLANNER, provider=provider), tools=[agents.lookup, agents.convert])
    planner.instrument = True
    async with planner.run_stream(f"{agents.marker(task, seed)} {task.input}") as run:
        first = await run.get_output()
    summariser = Agent(OpenAIChatModel(SUMMARISER, provider=provider))
    summariser.instrument = True
    async with summariser.run_stream(f"{agents.marker(task, seed)} summarise: {first}") as run:
        return await run.get_output()


def test_pydantic_ai_run_stream_billed_exactly(srv, prices):
    eps, report = run(_pydantic_streaming_agent, TASKS, k=1, seed=300, prices=prices)
    for ep in eps:
        sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [(c.model, c.input_tokens, c.output_tokens, c.cached_input_tokens)
                for c in ep.cost.calls] == \
            [(s.model, s.input_tokens, s.output_tokens, s.cached_input_tokens) for s in sent]
        assert episode_dollars(ep, prices=prices) == pytest.approx(_sent_dollars(sent, prices),
                                                                   rel=1e-12)
    assert all(s.stream and s.usage_sent for sent in srv.sent.values() for s in sent)
    led = srv.ledger
    assert {m: b.calls for m, b in led.items()} == {"gpt-4o-2024-08-06": 8,
                                                     "gpt-4o-mini-2024-07-18": 4}
    for kind in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"):
        assert report.cost[kind] == sum(getattr(b, kind) for b in led.values()), kind
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(prices), rel=1e-12)
    assert not report.cost["upper_bound"]


def _anthropic_agent():
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    cache = agents._loop_cache()
    if "claude" not in cache:
        model = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(
            base_url=agents.BASE_URL[:-len("/v1")], api_key="sk-local"))
        planner = Agent(model, instructions="Use the tools, then answer.", tools=[agents.lookup],
                        model_settings={"anthropic_cache_instructions": True,
                                        "anthropic_cache_tool_definitions": True})
        planner.instrument = True
        cache["claude"] = planner
    return cache["claude"]


async def _claude_agent(task, *, seed=None):
    async with _anthropic_agent().run_stream(f"{agents.marker(task, seed)} {task.input}") as run:
        return await run.get_output()


def test_anthropic_prompt_caching_billed_at_cache_write_and_read_rates(srv):
    prices = load_prices(CLAUDE)
    eps, report = run(_claude_agent, TASKS, k=1, seed=400, prices=prices,
                      check=lambda ep, gold: "ANSWER" in str(ep.output))
    assert report.success_rate == 1.0
    led = srv.ledger["claude-sonnet-4-5-20250929"]
    assert (led.calls, led.cache_write_tokens, led.cached_input_tokens) == (8, 8_000, 8_000)
    assert report.cost["cache_write_tokens"] == 8_000
    assert report.cost["cached_input_tokens"] == 8_000
    assert report.cost["input_tokens"] == led.input_tokens
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(prices), rel=1e-12)
    for ep in eps:
        sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [(c.cache_write_tokens, c.cached_input_tokens) for c in ep.cost.calls] == \
            [(2000, 0), (0, 2000)]
        assert episode_dollars(ep, prices=prices) == pytest.approx(_sent_dollars(sent, prices),
                                                                   rel=1e-12)
    # 2,000 cache-write tokens a trial at $3.75/M, not the $3/M input rate
    as_input = report.cost["total_dollars"] - 8_000 * (3.75e-06 - 3e-06)
    assert report.cost["total_dollars"] / 4 - as_input / 4 == pytest.approx(0.0015, rel=1e-9)


async def _agents_sdk_streaming_agent(task, *, seed=None):
    from agents import Runner

    planner, _ = agents._agents_pair()
    run = Runner.run_streamed(planner, f"{agents.marker(task, seed)} {task.input}")
    async for _event in run.stream_events():
        pass
    return str(run.final_output)


def test_responses_api_streams_billed_from_the_completed_event(srv, prices):
    agents.instrument_openinference()
    eps, report = run(_agents_sdk_streaming_agent, TASKS[:2], k=1, seed=500, prices=prices)
    assert all(s.endpoint == "responses" and s.stream for sent in srv.sent.values() for s in sent)
    for ep in eps:
        sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [(c.input_tokens, c.output_tokens, c.cached_input_tokens) for c in ep.cost.calls] \
            == [(s.input_tokens, s.output_tokens, s.cached_input_tokens) for s in sent]
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(prices), rel=1e-12)
    assert not report.cost["upper_bound"]
