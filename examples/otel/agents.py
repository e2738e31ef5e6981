"""Three real agents of one script, each traced by the instrumentation its users run.

Each trial: a planner (``gpt-4o``) calls the tools ``lookup`` (and ``convert`` for some tasks),
reads their results and answers; a summariser (``gpt-4o-mini``) summarises the answer. The
agent returns only its output: the trajectory and the per-model cost come from the spans
(``run_suite(..., capture="otel")``).

- :func:`openai_sdk_agent` -- a plain ``openai`` SDK loop over chat completions (sync), traced
  by ``opentelemetry-instrumentation-openai-v2`` (:func:`instrument_openai_v2`);
- :func:`agents_sdk_agent` -- the OpenAI Agents SDK (Responses API, async), traced by
  ``openinference-instrumentation-openai-agents`` (:func:`instrument_openinference`);
- :func:`pydantic_ai_agent` -- pydantic-ai (chat completions, async), traced by its own
  instrumentation.

The endpoint is :data:`BASE_URL` (``EK_OPENAI_BASE_URL``, else ``OPENAI_BASE_URL``); point it at
:class:`~ek_agents_examples.otel.fakeopenai.FakeOpenAI` with :func:`configure`. Every request
names its trial with ``[ek:<task_id>.<seed>]`` (the fake server's script keys on it).
"""
from __future__ import annotations

import asyncio
import json
import os
import weakref
from typing import Any, Optional

from .fakeopenai import PLANNER, SUMMARISER, tool_result

__all__ = ["configure", "openai_sdk_agent", "agents_sdk_agent", "pydantic_ai_agent",
           "instrument_openai_v2", "instrument_openinference", "marker"]

BASE_URL: Optional[str] = os.environ.get("EK_OPENAI_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
API_KEY = os.environ.get("EK_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY") or "sk-local"

TOOLS = [
    {"type": "function", "function": {
        "name": "lookup", "description": "Look a key up.",
        "parameters": {"type": "object", "properties": {"key": {"type": "string"}},
                       "required": ["key"]}}},
    {"type": "function", "function": {
        "name": "convert", "description": "Convert an amount to euros.",
        "parameters": {"type": "object", "properties": {"amount": {"type": "number"},
                                                        "unit": {"type": "string"}},
                       "required": ["amount", "unit"]}}},
]

_clients: dict = {}
#: event loop -> {key: object}: an async client (and the agents holding it) belongs to the loop
#: it was made on (its connection pool does); each run of the harness has a loop of its own
_per_loop: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _loop_cache() -> dict:
    loop = asyncio.get_running_loop()
    got = _per_loop.get(loop)
    if got is None:
        got = _per_loop[loop] = {}
    return got


def configure(base_url: str, api_key: str = "sk-local") -> None:
    """Point every agent here at ``base_url`` (e.g. ``FakeOpenAI().base_url``)."""
    global BASE_URL, API_KEY
    BASE_URL, API_KEY = base_url, api_key
    _clients.clear()
    _per_loop.clear()


def marker(task: Any, seed: Optional[int]) -> str:
    """The trial's marker, ``[ek:<task_id>.<seed>]``."""
    return f"[ek:{task.task_id}.{seed}]"


def _client(kind: str) -> Any:
    cache = _clients if kind == "sync" else _loop_cache()
    key = (kind, BASE_URL)
    if key not in cache:
        import openai
        if BASE_URL is None:
            raise RuntimeError("no endpoint: set EK_OPENAI_BASE_URL or call configure(base_url)")
        cls = openai.OpenAI if kind == "sync" else openai.AsyncOpenAI
        cache[key] = cls(base_url=BASE_URL, api_key=API_KEY, max_retries=0)
    return cache[key]


# --------------------------------------------------------------------------- openai SDK

def openai_sdk_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """A plain chat-completions tool loop (sync), then a summariser call on another model."""
    client = _client("sync")
    messages: list = [{"role": "user", "content": f"{marker(task, seed)} {task.input}"}]
    for _ in range(4):
        reply = client.chat.completions.create(model=PLANNER, messages=messages, tools=TOOLS)
        msg = reply.choices[0].message
        if not msg.tool_calls:
            break
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            args = json.loads(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": tool_result(call.function.name, args)})
    answer = msg.content or ""
    summary = client.chat.completions.create(
        model=SUMMARISER, messages=[{"role": "user",
                                     "content": f"{marker(task, seed)} summarise: {answer}"}])
    return summary.choices[0].message.content or ""


def instrument_openai_v2() -> None:
    """``OpenAIInstrumentor().instrument()`` with message content on the spans (the tool calls
    are read from it: a raw SDK loop has no tool spans)."""
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    inst = OpenAIInstrumentor()
    if not inst.is_instrumented_by_opentelemetry:
        inst.instrument()


# --------------------------------------------------------------------------- OpenAI Agents SDK

def lookup(key: str) -> str:
    """Look a key up."""
    return tool_result("lookup", {"key": key})


def convert(amount: int, unit: str) -> str:
    """Convert an amount to euros."""
    return tool_result("convert", {"amount": amount, "unit": unit})


def _agents_pair() -> tuple:
    _agents = _loop_cache()
    if ("agents", BASE_URL) not in _agents:
        from agents import Agent, OpenAIResponsesModel, function_tool
        client = _client("async")
        planner = Agent(name="planner", instructions="Use the tools, then answer.",
                        model=OpenAIResponsesModel(PLANNER, client),
                        tools=[function_tool(lookup), function_tool(convert)])
        summariser = Agent(name="summariser", instructions="Summarise.",
                           model=OpenAIResponsesModel(SUMMARISER, client))
        _agents[("agents", BASE_URL)] = (planner, summariser)
    return _agents[("agents", BASE_URL)]


async def agents_sdk_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """An OpenAI Agents SDK planner with two function tools, then a summariser agent."""
    from agents import Runner
    planner, summariser = _agents_pair()
    first = await Runner.run(planner, f"{marker(task, seed)} {task.input}")
    second = await Runner.run(summariser, f"{marker(task, seed)} summarise: {first.final_output}")
    return str(second.final_output)


def instrument_openinference() -> None:
    """OpenInference's Agents SDK instrumentation, its processor the only one (the SDK's own
    exporter would post traces to OpenAI)."""
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    inst = OpenAIAgentsInstrumentor()
    if not inst.is_instrumented_by_opentelemetry:
        inst.instrument(exclusive_processor=True)


# --------------------------------------------------------------------------- pydantic-ai

def _pydantic_pair() -> tuple:
    _pyd = _loop_cache()
    if ("pydantic", BASE_URL) not in _pyd:
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        provider = OpenAIProvider(openai_client=_client("async"))
        planner = Agent(OpenAIChatModel(PLANNER, provider=provider),
                        instructions="Use the tools, then answer.", tools=[lookup, convert])
        planner.instrument = True
        summariser = Agent(OpenAIChatModel(SUMMARISER, provider=provider),
                           instructions="Summarise.")
        summariser.instrument = True
        _pyd[("pydantic", BASE_URL)] = (planner, summariser)
    return _pyd[("pydantic", BASE_URL)]


async def pydantic_ai_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """A pydantic-ai planner with two tools, then a summariser agent (its own instrumentation)."""
    planner, summariser = _pydantic_pair()
    first = await planner.run(f"{marker(task, seed)} {task.input}")
    second = await summariser.run(f"{marker(task, seed)} summarise: {first.output}")
    return str(second.output)
