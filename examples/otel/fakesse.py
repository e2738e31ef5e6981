"""Server-sent events of the scripted server's replies, shaped as OpenAI's API streams them.

- :func:`chat_chunks`: a chat completion as ``chat.completion.chunk`` s -- the role, the text
  (in a few pieces) or each tool call (name and id first, then its arguments), the finish
  reason, then -- only when the request said ``stream_options={"include_usage": true}`` -- a
  last chunk with ``choices: []`` and the usage; then ``data: [DONE]``.
- :func:`responses_events`: a Responses API reply as ``response.created``,
  ``response.in_progress``, per output item ``response.output_item.added`` / its deltas /
  ``response.output_item.done``, and ``response.completed`` carrying the whole response with
  its usage (the Responses API always reports usage there).
- :func:`sse`: the bytes of a list of ``(event name or None, JSON document)``.
"""
from __future__ import annotations

import json
from typing import Any, Optional

__all__ = ["sse", "chat_chunks", "responses_events", "pieces"]


def sse(events: list) -> bytes:
    """``event: <name>`` (when named) and ``data: <json>`` lines, a blank line after each."""
    out = []
    for name, doc in events:
        head = f"event: {name}\n" if name else ""
        data = doc if isinstance(doc, str) else json.dumps(doc, separators=(",", ":"))
        out.append(f"{head}data: {data}\n\n")
    return "".join(out).encode()


def pieces(text: str, n: int = 3) -> list:
    """``text`` cut in up to ``n`` consecutive pieces (the deltas of a stream)."""
    if not text:
        return [""]
    size = max(1, -(-len(text) // n))
    return [text[i:i + size] for i in range(0, len(text), size)]


def chat_chunks(doc: dict, include_usage: bool) -> list:
    """The chunks of the chat completion ``doc`` (as :meth:`FakeOpenAI.reply` makes it)."""
    head = {"id": doc["id"], "object": "chat.completion.chunk", "created": doc["created"],
            "model": doc["model"], "system_fingerprint": doc.get("system_fingerprint")}
    choice = doc["choices"][0]
    msg = choice["message"]

    def chunk(delta: dict, finish: Optional[str] = None) -> tuple:
        c: dict = {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                        "finish_reason": finish}]}
        if include_usage:
            c["usage"] = None
        return None, c

    out = [chunk({"role": "assistant", "content": ""})]
    for part in (pieces(msg["content"]) if msg.get("content") else []):
        out.append(chunk({"content": part}))
    for i, call in enumerate(msg.get("tool_calls") or []):
        fn = call["function"]
        out.append(chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                          "function": {"name": fn["name"], "arguments": ""}}]}))
        for part in pieces(fn["arguments"], 2):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    out.append(chunk({}, choice["finish_reason"]))
    if include_usage:
        out.append((None, {**head, "choices": [], "usage": doc["usage"]}))
    out.append((None, "[DONE]"))
    return out


def responses_events(doc: dict) -> list:
    """The events of the Responses API reply ``doc`` (usage in ``response.completed``)."""
    seq = iter(range(1_000_000))
    pending = {**doc, "status": "in_progress", "output": [], "usage": None}
    out: list = [("response.created", {"type": "response.created", "sequence_number": next(seq),
                                       "response": pending}),
                 ("response.in_progress", {"type": "response.in_progress",
                                           "sequence_number": next(seq), "response": pending})]

    def ev(kind: str, **fields: Any) -> None:
        out.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    for oi, item in enumerate(doc["output"]):
        if item["type"] == "function_call":
            ev("response.output_item.added", output_index=oi,
               item={**item, "arguments": "", "status": "in_progress"})
            for part in pieces(item["arguments"], 2):
                ev("response.function_call_arguments.delta", item_id=item["id"], output_index=oi,
                   delta=part)
            ev("response.function_call_arguments.done", item_id=item["id"], output_index=oi,
               arguments=item["arguments"])
        else:  # a message with one output_text part
            text = item["content"][0]["text"]
            ev("response.output_item.added", output_index=oi,
               item={**item, "content": [], "status": "in_progress"})
            empty = {"type": "output_text", "text": "", "annotations": []}
            ev("response.content_part.added", item_id=item["id"], output_index=oi,
               content_index=0, part=empty)
            for part in pieces(text):
                ev("response.output_text.delta", item_id=item["id"], output_index=oi,
                   content_index=0, delta=part, logprobs=[])
            ev("response.output_text.done", item_id=item["id"], output_index=oi,
               content_index=0, text=text, logprobs=[])
            ev("response.content_part.done", item_id=item["id"], output_index=oi,
               content_index=0, part=item["content"][0])
        ev("response.output_item.done", output_index=oi, item=item)
    ev("response.completed", response=doc)
    return out
