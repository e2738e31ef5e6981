"""The shop task suite against a real model: ``examples.shop.openai_agent:agent``.

Configured from the environment: ``EK_OPENAI_MODEL`` (default ``gpt-4o-mini-2024-07-18``),
``EK_OPENAI_BASE_URL`` / ``OPENAI_BASE_URL`` and ``EK_OPENAI_API_KEY`` / ``OPENAI_API_KEY``.
The agent declares its configuration (``OpenAIToolAgent.ek_config``: model, base URL,
temperature, prompt digest, ...), read from these variables when the module is imported: it
is part of a run's fingerprint, so a run with another ``EK_OPENAI_MODEL`` never reuses this
one's episodes. Nothing is contacted until the agent is called::

    EK_OPENAI_BASE_URL=http://127.0.0.1:8000/v1 EK_OPENAI_MODEL=my-model \\
        ek-agents run --suite examples/shop/suite.yaml --agent examples.shop.openai_agent:agent --k 3
"""
from __future__ import annotations

import os

from ek_agents.adapters.openai_agent import OpenAIToolAgent

from .agents import SCAFFOLD
from .world import POLICY, SUITE_VERSION, ShopEnv

__all__ = ["agent", "make_agent"]


def make_agent(model: str | None = None, **kwargs) -> OpenAIToolAgent:
    """An :class:`OpenAIToolAgent` for the shop: its policy as system prompt, a fresh
    :class:`~examples.shop.world.ShopEnv` per task."""
    kwargs.setdefault("env_factory", ShopEnv.for_task)
    kwargs.setdefault("system_prompt", POLICY)
    kwargs.setdefault("suite_version", SUITE_VERSION)
    kwargs.setdefault("scaffold", SCAFFOLD)
    kwargs.setdefault("temperature", float(os.environ.get("EK_OPENAI_TEMPERATURE", "0.0")))
    return OpenAIToolAgent(model or os.environ.get("EK_OPENAI_MODEL", "gpt-4o-mini-2024-07-18"), **kwargs)


agent = make_agent()
