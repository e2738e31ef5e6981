"""The Anthropic Messages API of the scripted server (``POST /v1/messages``).

The same script as the OpenAI routes (tool calls until tool results come back, then an
answer), in Anthropic's shapes: ``tool_use`` / ``text`` content blocks, tool results as
``tool_result`` blocks of a user message, ``stop_reason`` ``tool_use`` / ``end_turn``. Usage is
Anthropic's: ``input_tokens`` counts only the fresh (uncached) prompt tokens;
``cache_creation_input_tokens`` and ``cache_read_input_tokens`` are apart. **Prompt caching**: a
request carrying a ``cache_control`` block writes :data:`CACHE_TOKENS` tokens to the cache the
first time its trial (marker) and model are seen, and reads them on every later request.

Streamed (``"stream": true``) as the API does: ``message_start`` (the usage so far: input and
cache counts, ``output_tokens: 1``), per content block ``content_block_start`` /
``content_block_delta`` (``text_delta`` or ``input_json_delta``) / ``content_block_stop``, then
``message_delta`` with the stop reason and the final cumulative usage, and ``message_stop``.
"""
from __future__ import annotations

import json
from typing import Any, Optional

from .fakesse import pieces

__all__ = ["ANTHROPIC_SNAPSHOTS", "CACHE_TOKENS", "tool_results", "message_doc", "message_events",
           "wants_cache"]

#: requested model -> the model that answers (the dated snapshot)
ANTHROPIC_SNAPSHOTS = {"claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
                       "claude-haiku-4-5": "claude-haiku-4-5-20251001"}
#: tokens a cached prefix has (written once per trial and model, read after)
CACHE_TOKENS = 2000


def tool_results(body: dict) -> list:
    """The contents of the ``tool_result`` blocks sent (in order)."""
    out = []
    for m in body.get("messages", []):
        content = m.get("content") if isinstance(m, dict) else None
        for b in content if isinstance(content, list) else []:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                if isinstance(c, list):
                    c = "".join(x.get("text", "") for x in c if isinstance(x, dict))
                out.append(c)
    return out


def wants_cache(raw_text: str) -> bool:
    """The request marks a prefix for caching (a ``cache_control`` block anywhere)."""
    return '"cache_control"' in raw_text


def message_doc(n: int, model: str, calls: list, ids: list, text: Optional[str],
                usage: dict) -> dict:
    """The Message of request ``n``: tool_use blocks for ``calls`` (with ``ids``), else text."""
    content: list = [{"type": "tool_use", "id": i, "name": name, "input": args}
                     for (name, args), i in zip(calls, ids)]
    if text is not None:
        content.append({"type": "text", "text": text})
    return {"id": f"msg_{n:06d}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None, "usage": usage}


def message_events(doc: dict) -> list:
    """The stream events of the Message ``doc`` (``(event name, document)`` pairs)."""
    usage = doc["usage"]
    start_usage = {**usage, "output_tokens": 1}
    out: list = [("message_start", {"type": "message_start",
                                    "message": {**doc, "content": [], "stop_reason": None,
                                                "usage": start_usage}})]

    def ev(kind: str, **fields: Any) -> None:
        out.append((kind, {"type": kind, **fields}))

    for i, block in enumerate(doc["content"]):
        if block["type"] == "tool_use":
            ev("content_block_start", index=i, content_block={**block, "input": {}})
            for part in pieces(json.dumps(block["input"]), 2):
                ev("content_block_delta", index=i,
                   delta={"type": "input_json_delta", "partial_json": part})
        else:
            ev("content_block_start", index=i, content_block={"type": "text", "text": ""})
            for part in pieces(block["text"]):
                ev("content_block_delta", index=i, delta={"type": "text_delta", "text": part})
        ev("content_block_stop", index=i)
    ev("message_delta", delta={"stop_reason": doc["stop_reason"], "stop_sequence": None},
       usage=usage)
    ev("message_stop")
    return out
