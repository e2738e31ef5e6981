"""One-way adapters: turn whatever your agent already emits into an ek :class:`~ek_agents.base.Episode`.

ek depends only on the *shape* of what other tools emit: these adapters duck-type and import
neither inspect_ai, deepeval, openai nor anthropic. The workhorse is
:func:`trajectory_from_messages`: provider-shaped chat transcripts (OpenAI ``tool_calls``,
Responses ``function_call`` items, Anthropic ``tool_use`` blocks) are the universal wire format
of a tool-using agent.

>>> messages = [
...     {"role": "user", "content": "weather in Paris?"},
...     {"role": "assistant", "tool_calls": [
...         {"function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
...     {"role": "tool", "content": "18C"},
...     {"role": "assistant", "content": "It is 18C in Paris."},
... ]
>>> traj = trajectory_from_messages(messages)
>>> traj.tools
('get_weather',)
>>> traj.steps[0].args, traj.steps[0].observation
({'city': 'Paris'}, '18C')

Modules: :mod:`.messages` (transcripts), :mod:`.usage` (token counts -> Cost),
:mod:`.inspect_log` (Inspect AI logs), :mod:`.tau_bench` (tau-bench / tau2-bench results),
:mod:`.deepeval` (DeepEval test cases), :mod:`.jsonl` (JSONL transcripts), :mod:`.agent`
(``as_agent``), :mod:`.otel` (OpenTelemetry GenAI spans: OTLP/JSON or in-process).

May import: ``errors``, ``core``, ``parsing``, ``base``, ``store`` (see ``ek_agents.layers``).
"""
from __future__ import annotations

from .agent import as_agent
from .deepeval import from_deepeval_test_case
from .inspect_log import from_inspect_sample, read_inspect_log
from .jsonl import read_messages_jsonl
from .messages import episode_from_messages, trajectory_from_messages
from .otel import episodes_from_otel
from .tau_bench import read_tau_bench_results
from .usage import cost_from_usage

__all__ = [
    "as_agent", "trajectory_from_messages", "episode_from_messages", "cost_from_usage",
    "from_inspect_sample", "from_deepeval_test_case", "read_inspect_log",
    "read_tau_bench_results", "read_messages_jsonl", "episodes_from_otel",
]
