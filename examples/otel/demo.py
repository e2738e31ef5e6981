"""The demo's traced agent: an OpenAI Agents SDK agent (a gpt-4o planner with two tools, a
gpt-4o-mini summariser), instrumented by OpenInference, evaluated in dollars per success with
nothing but its spans (``capture="otel"``) against the scripted local server.

``agent`` (``ek_agents_examples.otel.demo:agent``) instruments on import; point it at an
endpoint with ``EK_OPENAI_BASE_URL`` (or :func:`ek_agents_examples.otel.agents.configure`).
:data:`SUITE_PATH` is its six-task suite (checker ``output``: the summary must name the task).
"""
from __future__ import annotations

from pathlib import Path

from . import agents as _agents

__all__ = ["agent", "SUITE_PATH"]

SUITE_PATH = Path(__file__).parent / "suite.jsonl"

_agents.instrument_openinference()
agent = _agents.agents_sdk_agent
