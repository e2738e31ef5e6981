"""Agents for the provider-error CLI tests: an endpoint that answers 503 to every request for
the tasks in :data:`DOWN` (the real openai SDK's exception, with a real httpx response), and
an agent that never stops calling its model."""
from __future__ import annotations

import httpx

from ek_agents.base import Cost, Episode, ModelCall

#: Task ids whose model endpoint is down (answers 503).
DOWN: set = set()


def down_agent(task, *, seed):
    """Upper-cases its input on ``gpt-4o-mini``; the tasks in :data:`DOWN` get a 503."""
    if task.task_id in DOWN:
        import openai
        req = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions",
                            json={"model": "gpt-4o", "messages": []})
        raise openai.InternalServerError("service unavailable", body=None,
                                         response=httpx.Response(503, request=req))
    return Episode(task.task_id, output=task.input.upper(), cost=Cost.of_calls(
        [ModelCall("gpt-4o-mini-2024-07-18", input_tokens=1000, output_tokens=100)]))
