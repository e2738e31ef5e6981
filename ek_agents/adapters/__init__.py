"""Agents under test behind real endpoints (the SDKs they need are imported lazily).

- :class:`~ek_agents.adapters.openai_agent.OpenAIToolAgent` -- any OpenAI-compatible
  chat-completions endpoint with tool calling (``pip install 'ek-agents[openai]'``).

May import: ``errors`` .. ``store``, ``bridge`` (lazily, measured in ``ek_agents.layers``),
``stats``, ``suite`` (see ``ek_agents.layers``).
"""
from __future__ import annotations

from .openai_agent import DEFAULT_SYSTEM_PROMPT, OpenAIToolAgent, openai_tools, tool_schema

__all__ = ["OpenAIToolAgent", "openai_tools", "tool_schema", "DEFAULT_SYSTEM_PROMPT"]
