"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 (chat completions + the Responses API).

It stands in for a model provider so that real SDKs and their real OpenTelemetry
instrumentations can be run, offline and deterministically, against it (the tests of
``ek_agents.bridge.otel`` and ``make demo`` use it). The script of a trial:

- the trial is named by a marker ``[ek:<id>]`` somewhere in the request (the agent puts it in
  its user message); every reply is recorded under it in :attr:`FakeOpenAI.sent`;
- a *planner* request (any model but the summariser's) with no tool result in it answers with
  tool calls (``lookup`` always, ``convert`` too when the id's digits sum to an odd number);
  with tool results it answers ``ANSWER(<id>): <the results>``;
- a *summariser* request (model :data:`SUMMARISER`) answers :func:`summary_of` the marker:
  ``SUMMARY(<task id>)``, or ``SUMMARY(unsure)`` when the marker's digits sum to a multiple
  of 3 (so that some trials fail a check of the output against ``SUMMARY(<task id>)``);
- the model that answers is the dated snapshot of the requested one (``gpt-4o`` ->
  ``gpt-4o-2024-08-06``), as OpenAI's API does;
- every reply's usage is unique (a running request number decides it) and carries cached and
  reasoning token counts, so an episode built from the wrong trial's spans cannot match.

``FakeOpenAI.sent[marker]`` lists, in order, each reply's :class:`Sent` (endpoint, requested
and answering model, tokens, tool calls): what a test compares episodes to, exactly.

>>> with FakeOpenAI() as srv:                             # doctest: +SKIP
...     client = openai.OpenAI(base_url=srv.base_url, api_key="x")
"""
from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

__all__ = ["FakeOpenAI", "Sent", "SUMMARISER", "PLANNER", "SNAPSHOTS", "tool_result",
           "expected_steps", "marker_of", "summary_of"]

PLANNER = "gpt-4o"
SUMMARISER = "gpt-4o-mini"
#: requested model -> the model that answers (the dated snapshot)
SNAPSHOTS = {"gpt-4o": "gpt-4o-2024-08-06", "gpt-4o-mini": "gpt-4o-mini-2024-07-18"}
_MARK = re.compile(r"\[ek:([A-Za-z0-9_.#/-]{1,80})\]")


@dataclass
class Sent:
    """One reply the server sent."""

    endpoint: str                      # "chat" | "responses"
    requested_model: str
    model: str                         # the model that answered
    input_tokens: int                  # all prompt tokens, cached included
    output_tokens: int                 # all completion tokens, reasoning included
    cached_input_tokens: int
    reasoning_tokens: int
    tool_calls: list = field(default_factory=list)   # [(name, args dict, call id)]
    text: Optional[str] = None


def marker_of(text: str) -> Optional[str]:
    """The trial marker in ``text`` (``[ek:<id>]``), or None."""
    m = _MARK.search(text)
    return m.group(1) if m else None


def _planned_calls(marker: str) -> list:
    digits = sum(int(c) for c in marker if c.isdigit())
    calls = [("lookup", {"key": f"k-{marker}"})]
    if digits % 2:
        calls.append(("convert", {"amount": digits, "unit": "usd"}))
    return calls


def summary_of(marker: str) -> str:
    """What the summariser answers in trial ``marker`` (``<task id>.<seed>``)."""
    if sum(int(c) for c in marker if c.isdigit()) % 3 == 0:
        return "SUMMARY(unsure)"
    return f"SUMMARY({marker.rsplit('.', 1)[0]})"


def tool_result(name: str, args: dict) -> str:
    """What the example tools answer (deterministic: tests know every observation)."""
    if name == "lookup":
        return f"value-of-{args['key']}"
    if name == "convert":
        return f"{args['amount'] * 0.9:.2f} eur"
    raise KeyError(name)


def expected_steps(marker: str) -> list:
    """The ``(tool, args, observation)`` a trial named ``marker`` makes, in order."""
    return [(n, a, tool_result(n, a)) for n, a in _planned_calls(marker)]


class FakeOpenAI:
    """The server; a context manager (start on enter, stop on exit). ``base_url`` ends in ``/v1``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.sent: dict[str, list[Sent]] = {}
        self.requests = 0
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                code, reply = owner.reply(self.path, self.rfile.read(n))
                self._send(code, reply)

            def _send(self, code: int, doc: dict) -> None:
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> "FakeOpenAI":
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="fakeopenai")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- the script
    def reply(self, path: str, raw: bytes) -> tuple[int, dict]:
        """``(status, JSON body)`` of the script's answer to a POST of ``raw`` to ``path``
        (what the HTTP handler sends; usable without the socket, e.g. by an
        ``httpx.MockTransport``)."""
        try:
            body = json.loads(raw)
            path = path.rstrip("/")
            if path.endswith("/chat/completions"):
                return 200, self._chat(body, raw.decode("utf-8", "replace"))
            if path.endswith("/responses"):
                return 200, self._responses(body, raw.decode("utf-8", "replace"))
            return 404, {"error": {"message": f"no route {path}"}}
        except Exception as exc:  # noqa: BLE001 -- a scripted 400, never a hang
            return 400, {"error": {"message": f"{type(exc).__name__}: {exc}"}}

    def _usage(self, model: str) -> tuple[int, int, int, int]:
        with self._lock:
            self.requests += 1
            n = self.requests
        prompt = 1000 + 37 * n + (500 if model == SUMMARISER else 0)
        cached = 128 * (n % 4)
        reasoning = 16 * (n % 3)
        completion = 20 + n % 29 + reasoning
        return prompt, completion, cached, reasoning

    def _record(self, marker: str, sent: Sent) -> None:
        with self._lock:
            self.sent.setdefault(marker, []).append(sent)

    def _decide(self, model: str, marker: str, tool_results: list) -> tuple[list, Optional[str]]:
        if model == SUMMARISER:
            return [], summary_of(marker)
        if not tool_results:
            return _planned_calls(marker), None
        return [], f"ANSWER({marker}): " + "; ".join(str(r) for r in tool_results)

    def _chat(self, body: dict, raw: str) -> dict:
        model = body["model"]
        marker = marker_of(raw) or "?"
        results = [m.get("content") for m in body.get("messages", []) if m.get("role") == "tool"]
        calls, text = self._decide(model, marker, results)
        prompt, completion, cached, reasoning = self._usage(model)
        answered = SNAPSHOTS.get(model, model)
        ids = [f"call_{marker}_{len(results)}_{i}".replace("/", "_").replace("#", "_")
               for i in range(len(calls))]
        self._record(marker, Sent("chat", model, answered, prompt, completion, cached, reasoning,
                                  [(n, a, i) for (n, a), i in zip(calls, ids)], text))
        message: dict = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = [{"id": i, "type": "function",
                                      "function": {"name": n, "arguments": json.dumps(a)}}
                                     for (n, a), i in zip(calls, ids)]
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": 1_700_000_000,
                "model": answered, "system_fingerprint": "fp_ek",
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion,
                          "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                          "completion_tokens_details": {"reasoning_tokens": reasoning,
                                                        "audio_tokens": 0,
                                                        "accepted_prediction_tokens": 0,
                                                        "rejected_prediction_tokens": 0}}}

    def _responses(self, body: dict, raw: str) -> dict:
        model = body["model"]
        marker = marker_of(raw) or "?"
        items = body.get("input") if isinstance(body.get("input"), list) else []
        results = [it.get("output") for it in items
                   if isinstance(it, dict) and it.get("type") == "function_call_output"]
        calls, text = self._decide(model, marker, results)
        prompt, completion, cached, reasoning = self._usage(model)
        answered = SNAPSHOTS.get(model, model)
        ids = [f"call_{marker}_{len(results)}_{i}".replace("/", "_").replace("#", "_")
               for i in range(len(calls))]
        self._record(marker, Sent("responses", model, answered, prompt, completion, cached,
                                  reasoning, [(n, a, i) for (n, a), i in zip(calls, ids)], text))
        n = self.requests
        output: list = [{"type": "function_call", "id": f"fc_{n}_{i}", "call_id": cid, "name": name,
                         "arguments": json.dumps(args), "status": "completed"}
                        for i, ((name, args), cid) in enumerate(zip(calls, ids))]
        if text is not None:
            output.append({"type": "message", "id": f"msg_{n}", "role": "assistant",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]})
        return {"id": f"resp_{n}", "object": "response", "created_at": 1_700_000_000,
                "status": "completed", "model": answered, "output": output,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "temperature": 1.0, "top_p": 1.0, "error": None, "incomplete_details": None,
                "instructions": None, "metadata": {},
                "usage": {"input_tokens": prompt,
                          "input_tokens_details": {"cached_tokens": cached},
                          "output_tokens": completion,
                          "output_tokens_details": {"reasoning_tokens": reasoning},
                          "total_tokens": prompt + completion}}
