"""An agent under test behind any OpenAI-compatible chat-completions endpoint.

:class:`OpenAIToolAgent` turns a task's :class:`~ek_agents.base.ToolSpec` s into OpenAI
function tools, runs the tool-calling loop with the ``openai`` SDK (OpenAI, Azure-compatible
gateways, vLLM, Ollama, LiteLLM proxy ... anything that speaks ``/chat/completions``),
executes each call in an environment built per task, and returns an
:class:`~ek_agents.base.Episode` (trajectory and cost through :mod:`ek_agents.bridge`).

The endpoint comes from ``base_url=`` or ``EK_OPENAI_BASE_URL`` (then the SDK's own
``OPENAI_BASE_URL``); the key from ``api_key=`` or ``EK_OPENAI_API_KEY`` (then
``OPENAI_API_KEY``; a custom ``base_url`` without a key gets a placeholder, as local servers
need none). The environment is any object with ``step(tool, args) -> Step`` (or
``call(tool, args) -> observation``) and, for grading, ``final_state(output)`` or ``state``.

>>> from ek_agents.base import ToolSpec
>>> from ek_agents.core import FieldSpec
>>> tool = ToolSpec("refund", {"amount": FieldSpec("amount", "number", 20.0, required=True)},
...                 destructive=True, description="Refund an order.")
>>> openai_tools([tool])[0]["function"]["parameters"]["required"]
['amount']
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from typing import Any, Callable, Optional

from ..base import Episode, RunProvenance, Step, TaskSpec, ToolSpec
from ..core import FieldSpec
from ..errors import InvalidInput, MissingDependency, TransientAgentError

__all__ = ["OpenAIToolAgent", "openai_tools", "tool_schema", "DEFAULT_SYSTEM_PROMPT"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a careful assistant with tools. Use the tools to find facts and to act; never "
    "guess identifiers or amounts. When the task is done, reply with a short final answer."
)

_JSON_TYPES = {"string": "string", "number": "number", "float": "number", "integer": "integer",
               "boolean": "boolean", "array": "array", "tuple": "array", "dict": "object",
               "object": "object"}


def _field_schema(f: FieldSpec) -> dict:
    schema: dict = {}
    if f.type in _JSON_TYPES:
        schema["type"] = _JSON_TYPES[f.type]
    if schema.get("type") == "array":
        schema["items"] = {"type": _JSON_TYPES[f.items]} if f.items in _JSON_TYPES else {}
    if f.domain is not None:
        schema["enum"] = list(f.domain)
    return schema


def tool_schema(tool: ToolSpec) -> dict:
    """One :class:`~ek_agents.base.ToolSpec` as an OpenAI function tool (JSON Schema params)."""
    desc = tool.description or tool.name
    if tool.destructive and "destructive" not in desc.lower():
        desc += " (destructive: changes the world irreversibly)"
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": desc,
            "parameters": {
                "type": "object",
                "properties": {name: _field_schema(f) for name, f in tool.params.items()},
                "required": list(tool.required),
                "additionalProperties": False,
            },
        },
    }


def openai_tools(tools: Iterable[ToolSpec]) -> list:
    """The ``tools=`` list of a chat-completions request for these tool specs."""
    return [tool_schema(t) for t in tools]


def _import_openai():
    try:
        import openai
    except ImportError as exc:
        raise MissingDependency(
            "OpenAIToolAgent needs the openai SDK: pip install 'ek-agents[openai]'") from exc
    return openai


class OpenAIToolAgent:
    """``agent(task, *, seed=None) -> Episode`` over an OpenAI-compatible endpoint.

    ``env_factory(task)`` builds a fresh environment per episode. The loop stops at the
    first assistant message without tool calls (the final answer) or after ``max_turns``
    model calls (then ``meta["stopped"] == "max_turns"``; ``output`` is the last assistant
    text, if any).
    Rate limits, timeouts, dropped connections and 5xx answers raise
    :class:`~ek_agents.errors.TransientAgentError` (the harness retries those); other API
    errors raise :class:`~ek_agents.errors.InvalidInput` naming the endpoint and status.
    """

    def __init__(self, model: str, *, base_url: Optional[str] = None, api_key: Optional[str] = None,
                 env_factory: Callable[[TaskSpec], Any], max_turns: int = 8,
                 temperature: Optional[float] = 0.0, system_prompt: Optional[str] = DEFAULT_SYSTEM_PROMPT,
                 timeout_s: float = 60.0, max_retries: int = 2, scaffold: str = "openai-tools-v1",
                 simulator: str = "none", suite_version: str = "",
                 extra_body: Optional[dict] = None, client: Any = None) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInput(f"OpenAIToolAgent: model must be a model id string, got {model!r}")
        if not callable(env_factory):
            raise InvalidInput(f"OpenAIToolAgent: env_factory must be callable task -> environment, "
                               f"got {env_factory!r}")
        if not isinstance(max_turns, int) or max_turns < 1:
            raise InvalidInput(f"OpenAIToolAgent: max_turns must be a positive int, got {max_turns!r}")
        self.model = model
        self.base_url = base_url or os.environ.get("EK_OPENAI_BASE_URL") or None
        self.api_key = api_key or os.environ.get("EK_OPENAI_API_KEY") or None
        self.env_factory = env_factory
        self.max_turns = max_turns
        self.temperature = temperature
        self.system_prompt = system_prompt
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.scaffold, self.simulator, self.suite_version = scaffold, simulator, suite_version
        self.extra_body = dict(extra_body or {})
        self._client = client
        self.__name__ = f"OpenAIToolAgent[{model}]"

    def __repr__(self) -> str:
        return f"OpenAIToolAgent({self.model!r}, base_url={self.base_url!r})"

    def ek_config(self) -> dict:
        """The configuration that decides this agent's answers (``records.fingerprint.agent_config``: it
        enters the run's fingerprint and manifest, so a changed model, endpoint, temperature
        or prompt is never served another configuration's cached episodes). Never the key."""
        prompt = self.system_prompt
        return {"model": self.model, "base_url": self.base_url or os.environ.get("OPENAI_BASE_URL"),
                "temperature": self.temperature, "max_turns": self.max_turns,
                "system_prompt_sha256": None if prompt is None else
                hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
                "scaffold": self.scaffold, "simulator": self.simulator,
                "suite_version": self.suite_version, "extra_body": self.extra_body}

    # ------------------------------------------------------------------ client
    @property
    def client(self) -> Any:
        """The ``openai.OpenAI`` client (built on first use)."""
        if self._client is None:
            openai = _import_openai()
            key = self.api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                if not (self.base_url or os.environ.get("OPENAI_BASE_URL")):
                    raise InvalidInput("OpenAIToolAgent: no API key; set OPENAI_API_KEY (or "
                                       "EK_OPENAI_API_KEY) or pass api_key=, or point base_url= at "
                                       "a local OpenAI-compatible server")
                key = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) ignore the key
            self._client = openai.OpenAI(base_url=self.base_url, api_key=key,
                                         timeout=self.timeout_s, max_retries=self.max_retries)
        return self._client

    def _complete(self, request: dict) -> Any:
        openai = _import_openai()
        try:
            return self.client.chat.completions.create(**request)
        except (openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            # APITimeoutError is an APIConnectionError
            raise TransientAgentError(f"{self.model} at {self._where()}: {type(exc).__name__}: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code in (408, 409, 429) or exc.status_code >= 500:
                raise TransientAgentError(f"{self.model} at {self._where()}: HTTP {exc.status_code}: "
                                          f"{exc.message}") from exc
            raise InvalidInput(f"{self.model} at {self._where()}: HTTP {exc.status_code}: {exc.message} "
                               "(check the model id, the key and the base_url)") from exc

    def _where(self) -> str:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"

    # ------------------------------------------------------------------ the loop
    @staticmethod
    def _run_tool(env: Any, name: str, args: Any) -> tuple:
        """``(observation, error)`` of one call in ``env``."""
        if hasattr(env, "step"):
            step = env.step(name, args)
            if isinstance(step, Step):
                return step.observation, step.error
            return step, None
        try:
            return env.call(name, args), None
        except Exception as exc:  # a tool that raises: the model sees the error, the step records it
            return {"error": f"{type(exc).__name__}: {exc}"}, f"{type(exc).__name__}: {exc}"

    def __call__(self, task: TaskSpec, *, seed: Optional[int] = None) -> Episode:
        from ..bridge import episode_from_messages  # lazy: the bridges add ~160 ms of import (-X importtime)

        env = self.env_factory(task)
        tools = openai_tools(task.tools)
        user = task.input if isinstance(task.input, str) else json.dumps(task.input)
        sent: list[dict] = []         # what the endpoint sees
        transcript: list[dict] = []   # the same, plus tool errors, for the bridge
        if self.system_prompt:
            sent.append({"role": "system", "content": self.system_prompt})
        sent.append({"role": "user", "content": user})
        transcript.extend(sent)
        usages: list[Any] = []
        output: Any = None
        stopped = "max_turns"
        turns = 0
        start = time.perf_counter()
        while turns < self.max_turns:
            request: dict = {"model": self.model, "messages": list(sent)}
            if tools:
                request["tools"] = tools
            if self.temperature is not None:
                request["temperature"] = self.temperature
            if seed is not None:
                request["seed"] = int(seed)
            if self.extra_body:
                request["extra_body"] = self.extra_body
            response = self._complete(request)
            turns += 1
            if getattr(response, "usage", None) is not None:
                usages.append(response.usage)  # cost_from_usage reads SDK objects
            if not getattr(response, "choices", None):
                raise TransientAgentError(f"{self.model} at {self._where()}: a completion without choices")
            message = response.choices[0].message
            calls = list(message.tool_calls or [])
            assistant: dict = {"role": "assistant", "content": message.content}
            if calls:
                assistant["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.function.name, "arguments": c.function.arguments or ""}}
                    for c in calls]
            sent.append(assistant)
            transcript.append(assistant)
            if not calls:
                output, stopped = message.content, "answer"
                break
            for c in calls:
                raw = c.function.arguments or "{}"
                try:
                    args = json.loads(raw)
                except json.JSONDecodeError as exc:
                    obs, err = {"error": f"arguments are not valid JSON: {exc.msg}"}, None
                else:
                    obs, err = self._run_tool(env, c.function.name, args)
                content = obs if isinstance(obs, str) else json.dumps(obs, default=str)
                msg = {"role": "tool", "tool_call_id": c.id, "content": content}
                sent.append(msg)
                transcript.append(dict(msg, error=err) if err else msg)
        latency = time.perf_counter() - start
        if hasattr(env, "final_state"):
            final_state = env.final_state(output)
        else:
            final_state = getattr(env, "state", None)
        run = RunProvenance(seed=seed, temperature=self.temperature, model=self.model,
                            simulator=self.simulator, suite_version=self.suite_version,
                            scaffold=self.scaffold)
        return episode_from_messages(
            transcript, task_id=task.task_id, usage=usages or None, output=output,
            final_state=final_state, latency_s=latency, run=run,
            meta={"adapter": "openai", "turns": turns, "stopped": stopped},
        )
