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
``FakeOpenAI.ledger`` is what the server billed, per answering model (:class:`Billed`: calls and
prompt / completion / cached / cache-write / reasoning tokens of every answered request, streamed
or not, whether or not the client was sent the usage); :meth:`FakeOpenAI.ledger_dollars` prices
it from a catalog's rates.

Opt-in misbehaviour and modes (all off by default; everything seeded, bounded, on 127.0.0.1):

- **faults** (:meth:`FakeOpenAI.set_faults`, :mod:`.fakefaults`): a seeded fraction of requests
  answered 429 (with ``Retry-After`` / ``retry-after-ms``) or 503, for every model or per
  requested model (``set_faults(1.0, status=503, model="gpt-4o-mini")`` is an outage of that
  model; ``set_faults(0, model=...)`` recovers it);
- **a requests-per-second limit** (:meth:`FakeOpenAI.set_rate_limit`): a token bucket; an empty
  bucket answers 429 with ``Retry-After`` = the wait for the next token;
- **streaming**: ``"stream": true`` on chat completions (usage in a last chunk only with
  ``stream_options.include_usage``), the Responses API (usage in ``response.completed``) and
  Anthropic's Messages API (:mod:`.fakesse`, :mod:`.fakeanthropic`);
- **an endless tool-call loop** (:meth:`FakeOpenAI.set_loop`): every reply asks for another
  ``lookup`` call, whatever came back;
- **a judge** (:meth:`FakeOpenAI.set_judge`, protocol in :mod:`.fakejudge`): a chat completion
  asking for a JSON ``verdict`` is answered ``{"verdict": "PASS"|"FAIL", "rationale": ...}``
  from a truth marker ``[truth:PASS]`` / ``[truth:FAIL]`` planted in the judged text, at a set
  sensitivity and specificity;
- **Anthropic's Messages API** (``POST /v1/messages``; the ``anthropic`` SDK's base URL is
  :attr:`FakeOpenAI.anthropic_base_url`), with prompt caching (cache writes and reads in usage).

:attr:`FakeOpenAI.counts` (:class:`~.fakefaults.Counts`) counts every request, answer, fault and
throttled request, overall and per requested model.

>>> with FakeOpenAI() as srv:                             # doctest: +SKIP
...     client = openai.OpenAI(base_url=srv.base_url, api_key="x")
"""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Mapping, NamedTuple, Optional

from . import fakeanthropic as anth
from .fakefaults import Counts, Faults, Refusal, TokenBucket
from .fakejudge import Judge, Judged, is_judge_request, judge_tool
from .fakesse import chat_chunks, responses_events, sse

__all__ = ["FakeOpenAI", "Sent", "Billed", "Judge", "Judged", "SUMMARISER", "PLANNER",
           "SNAPSHOTS", "tool_result", "expected_steps", "marker_of", "summary_of"]

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
    cache_write_tokens: int = 0        # the part of input_tokens written to the cache
    stream: bool = False               # answered as a stream
    usage_sent: bool = True            # the client was sent the usage (a stream may not be)


@dataclass
class Billed:
    """What the server billed one model: calls and tokens (ek's convention: ``input_tokens``
    counts every prompt token, cache reads and writes included; ``output_tokens`` every
    completion token, reasoning included)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, s: Sent) -> None:
        self.calls += 1
        self.input_tokens += s.input_tokens
        self.output_tokens += s.output_tokens
        self.cached_input_tokens += s.cached_input_tokens
        self.cache_write_tokens += s.cache_write_tokens
        self.reasoning_tokens += s.reasoning_tokens


class Answer(NamedTuple):
    """What the HTTP handler sends: status, body bytes, content type, extra headers."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple = ()


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


class _Server(ThreadingHTTPServer):
    """A thread per connection; a listen backlog deep enough for a burst of concurrent trials
    (the default of 5 resets connections under a loaded machine)."""

    daemon_threads = True
    request_queue_size = 128


class FakeOpenAI:
    """The server; a context manager (start on enter, stop on exit). ``base_url`` ends in ``/v1``.

    ``seed`` seeds the faults (and the default judge); ``fault_rate`` / ``fault_status`` /
    ``retry_after`` set a fault rule for every model, ``rate_limit`` (requests/s) and ``burst``
    a token bucket, ``loop=True`` the endless tool-call loop, ``judge`` a
    :class:`~.fakejudge.Judge` -- each also settable while the server runs (``set_*``);
    ``latency_s`` delays every answer (at most 5 s); ``usage_details=False`` leaves
    ``prompt_tokens_details`` and ``completion_tokens_details`` out of chat completions' usage
    (as some OpenAI-compatible servers do: the cached count is then unknown to the client)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, seed: int = 0,
                 fault_rate: float = 0.0, fault_status: int = 429, retry_after: Optional[float] = 0.05,
                 rate_limit: Optional[float] = None, burst: Optional[float] = None,
                 loop: bool = False, judge: Optional[Judge] = None,
                 latency_s: float = 0.0, usage_details: bool = True) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"the scripted server serves the loopback only, not {host!r}")
        if not 0 <= latency_s <= 5:
            raise ValueError(f"latency_s must be in [0, 5] seconds, got {latency_s!r}")
        self.latency_s = latency_s  # each answered request waits this long (a slow provider)
        self.usage_details = usage_details
        self.sent: dict[str, list[Sent]] = {}
        self.ledger: dict[str, Billed] = {}
        self.judged: list[Judged] = []
        self.counts = Counts()
        self.requests = 0           # requests answered (numbers each reply's usage)
        self.faults = Faults(seed)
        self.bucket: Optional[TokenBucket] = None
        self.judge = judge
        self._loop: set = set()     # models in the tool-call loop ("*": every model)
        self._cache: set = set()    # (marker, model) whose prompt prefix is in Anthropic's cache
        self._lock = threading.Lock()
        if fault_rate:
            self.set_faults(fault_rate, status=fault_status, retry_after=retry_after)
        if rate_limit is not None:
            self.set_rate_limit(rate_limit, burst)
        if loop:
            self.set_loop(True)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()  # headers and body go out at once (no Nagle delay between them)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("content-length") or 0)
                ans = owner.answer(self.path, self.rfile.read(n))
                self.send_response(ans.status)
                self.send_header("content-type", ans.content_type)
                self.send_header("content-length", str(len(ans.body)))
                for k, v in ans.headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(ans.body)

        self._httpd = _Server((host, port), Handler)
        self._thread: Optional[threading.Thread] = None

    # -- lifecycle
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The base URL for the ``anthropic`` SDK (it appends ``/v1/messages``)."""
        return self.base_url[:-len("/v1")]

    def start(self) -> "FakeOpenAI":
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True, name="fakeopenai")  # stops within 50 ms
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:  # shutdown() waits for serve_forever: only when it runs
            self._httpd.shutdown()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "FakeOpenAI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- modes
    def set_faults(self, rate: float, *, status: int = 429, retry_after: Optional[float] = 0.05,
                   model: Optional[str] = None) -> None:
        """Answer ``rate`` of the requests (for ``model``, else every model) with ``status``."""
        self.faults.set(rate, status=status, retry_after=retry_after, model=model)

    def set_rate_limit(self, rate: Optional[float], burst: Optional[float] = None) -> None:
        """A token bucket of ``rate`` requests/s (``None``: no limit)."""
        self.bucket = None if rate is None else TokenBucket(rate, burst)

    def set_loop(self, on: bool = True, model: Optional[str] = None) -> None:
        """Every reply (to ``model``, else to every model) asks for another tool call."""
        with self._lock:
            key = model or "*"
            (self._loop.add if on else self._loop.discard)(key)

    def set_judge(self, sensitivity: float = 1.0, specificity: float = 1.0,
                  seed: int = 0) -> None:
        """Judge mode on (see :mod:`.fakejudge`)."""
        self.judge = Judge(sensitivity, specificity, seed)

    def ledger_dollars(self, prices: Mapping[str, Any]) -> float:
        """The dollars of :attr:`ledger` at each answering model's catalog rates
        (``input``, ``cached_input``, ``cache_write`` -- the input rate when None --, ``output``)."""
        usd = 0.0
        for model, b in self.ledger.items():
            p = prices[model]
            write = p.cache_write if p.cache_write is not None else p.input
            plain = b.input_tokens - b.cached_input_tokens - b.cache_write_tokens
            usd += (plain * p.input + b.cached_input_tokens * p.cached_input
                    + b.cache_write_tokens * write + b.output_tokens * p.output)
        return usd

    # -- the HTTP answer
    def answer(self, path: str, raw: bytes) -> Answer:
        """The whole answer to a POST of ``raw`` to ``path``: the rate limit and the faults
        first, then the script (JSON, or server-sent events when the request streams)."""
        with self._lock:
            self.counts.requests += 1
        anthropic = path.rstrip("/").endswith("/messages")
        try:
            body = json.loads(raw)
            model = body.get("model") if isinstance(body, dict) else None
        except ValueError:
            body, model = None, None
        with self._lock:
            self.counts.of(model).requests += 1
        refusal = self.bucket.take() if self.bucket is not None else None
        if refusal is None and model is not None:
            refusal = self.faults.decide(model, raw)
        if refusal is not None:
            return self._refuse(refusal, model, anthropic)
        if self.latency_s:
            time.sleep(self.latency_s)
        code, doc, events = self._route(path, body, raw)
        with self._lock:
            if code == 200:
                self.counts.answered += 1
                self.counts.of(model).answered += 1
            else:
                self.counts.bad += 1
        if events is not None:
            return Answer(code, sse(events), "text/event-stream")
        return Answer(code, json.dumps(doc).encode())

    def _refuse(self, r: Refusal, model: Optional[str], anthropic: bool) -> Answer:
        with self._lock:
            per = self.counts.of(model)
            if r.reason == "rate_limit":
                self.counts.throttled += 1
                per.throttled += 1
            else:
                self.counts.faults[r.status] = self.counts.faults.get(r.status, 0) + 1
                per.faults += 1
        message = ("Rate limit reached for requests" if r.status == 429
                   else f"The server had an error ({r.status}) while processing your request")
        if anthropic:
            kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(r.status, "api_error")
            doc: dict = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            kind = "requests" if r.status == 429 else "server_error"
            doc = {"error": {"message": message, "type": kind, "param": None,
                             "code": "rate_limit_exceeded" if r.status == 429 else None}}
        headers: tuple = ()
        if r.retry_after is not None:
            headers = (("retry-after", f"{r.retry_after:g}"),
                       ("retry-after-ms", str(int(round(r.retry_after * 1000)))))
        return Answer(r.status, json.dumps(doc).encode(), headers=headers)

    # -- the script
    def reply(self, path: str, raw: bytes) -> tuple[int, dict]:
        """``(status, JSON body)`` of the script's answer to a POST of ``raw`` to ``path``
        (no rate limit, no faults, never streamed; usable without the socket, e.g. by an
        ``httpx.MockTransport``)."""
        try:
            body = json.loads(raw)
        except ValueError as exc:
            return 400, {"error": {"message": f"{type(exc).__name__}: {exc}"}}
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k != "stream"}
        code, doc, _ = self._route(path, body, raw)
        return code, doc

    def _route(self, path: str, body: Any, raw: bytes) -> tuple[int, Optional[dict], Optional[list]]:
        try:
            if not isinstance(body, dict):
                raise ValueError("the request body is not a JSON object")
            text = raw.decode("utf-8", "replace")
            path = path.rstrip("/")
            if path.endswith("/chat/completions"):
                return self._chat(body, raw, text)
            if path.endswith("/responses"):
                return self._responses(body, text)
            if path.endswith("/messages"):
                return self._messages(body, text)
            return 404, {"error": {"message": f"no route {path}"}}, None
        except Exception as exc:  # noqa: BLE001 -- a scripted 400, never a hang
            return 400, {"error": {"message": f"{type(exc).__name__}: {exc}"}}, None

    def _usage(self, model: str) -> tuple[int, int, int, int, int]:
        with self._lock:
            self.requests += 1
            n = self.requests
        prompt = 1000 + 37 * n + (500 if model == SUMMARISER else 0)
        cached = 128 * (n % 4)
        reasoning = 16 * (n % 3)
        completion = 20 + n % 29 + reasoning
        return n, prompt, completion, cached, reasoning

    def _record(self, marker: str, sent: Sent) -> None:
        with self._lock:
            self.sent.setdefault(marker, []).append(sent)
            self.ledger.setdefault(sent.model, Billed()).add(sent)

    def _looping(self, model: str) -> bool:
        return "*" in self._loop or model in self._loop

    def _decide(self, model: str, marker: str, tool_results: list) -> tuple[list, Optional[str]]:
        if self._looping(model):
            return [("lookup", {"key": f"k-{marker}-{len(tool_results)}"})], None
        if model == SUMMARISER:
            return [], summary_of(marker)
        if not tool_results:
            return _planned_calls(marker), None
        return [], f"ANSWER({marker}): " + "; ".join(str(r) for r in tool_results)

    @staticmethod
    def _ids(marker: str, results: list, calls: list) -> list:
        return [f"call_{marker}_{len(results)}_{i}".replace("/", "_").replace("#", "_")
                for i in range(len(calls))]

    def _chat(self, body: dict, raw: bytes, text: str) -> tuple:
        model = body["model"]
        marker = marker_of(text) or "?"
        results = [m.get("content") for m in body.get("messages", []) if m.get("role") == "tool"]
        judged = None
        if self.judge is not None and is_judge_request(body, text):
            verdict, truth, why = self.judge.verdict(raw, text)
            tool = judge_tool(body)
            calls, answer = (([(tool, {"verdict": verdict, "rationale": why})], None) if tool
                             else ([], json.dumps({"verdict": verdict, "rationale": why})))
            judged = Judged(truth, verdict, marker_of(text))
        else:
            calls, answer = self._decide(model, marker, results)
        n, prompt, completion, cached, reasoning = self._usage(model)
        answered = SNAPSHOTS.get(model, model)
        ids = self._ids(marker, results, calls)
        stream = bool(body.get("stream"))
        include = stream and bool((body.get("stream_options") or {}).get("include_usage"))
        self._record(marker, Sent("chat", model, answered, prompt, completion, cached, reasoning,
                                  [(c, a, i) for (c, a), i in zip(calls, ids)], answer,
                                  stream=stream, usage_sent=include or not stream))
        if judged is not None:
            with self._lock:
                self.judged.append(judged)
        message: dict = {"role": "assistant", "content": answer}
        if calls:
            message["tool_calls"] = [{"id": i, "type": "function",
                                      "function": {"name": c, "arguments": json.dumps(a)}}
                                     for (c, a), i in zip(calls, ids)]
        doc = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000,
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
        if not self.usage_details:
            for k in ("prompt_tokens_details", "completion_tokens_details"):
                del doc["usage"][k]
        return 200, doc, (chat_chunks(doc, include) if stream else None)

    def _responses(self, body: dict, text: str) -> tuple:
        model = body["model"]
        marker = marker_of(text) or "?"
        items = body.get("input") if isinstance(body.get("input"), list) else []
        results = [it.get("output") for it in items
                   if isinstance(it, dict) and it.get("type") == "function_call_output"]
        calls, answer = self._decide(model, marker, results)
        n, prompt, completion, cached, reasoning = self._usage(model)
        answered = SNAPSHOTS.get(model, model)
        ids = self._ids(marker, results, calls)
        stream = bool(body.get("stream"))
        self._record(marker, Sent("responses", model, answered, prompt, completion, cached,
                                  reasoning, [(c, a, i) for (c, a), i in zip(calls, ids)], answer,
                                  stream=stream))
        output: list = [{"type": "function_call", "id": f"fc_{n}_{i}", "call_id": cid, "name": name,
                         "arguments": json.dumps(args), "status": "completed"}
                        for i, ((name, args), cid) in enumerate(zip(calls, ids))]
        if answer is not None:
            output.append({"type": "message", "id": f"msg_{n}", "role": "assistant",
                           "status": "completed",
                           "content": [{"type": "output_text", "text": answer, "annotations": []}]})
        doc = {"id": f"resp_{n}", "object": "response", "created_at": 1_700_000_000,
               "status": "completed", "model": answered, "output": output,
               "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
               "temperature": 1.0, "top_p": 1.0, "error": None, "incomplete_details": None,
               "instructions": None, "metadata": {},
               "usage": {"input_tokens": prompt,
                         "input_tokens_details": {"cached_tokens": cached},
                         "output_tokens": completion,
                         "output_tokens_details": {"reasoning_tokens": reasoning},
                         "total_tokens": prompt + completion}}
        return 200, doc, (responses_events(doc) if stream else None)

    def _messages(self, body: dict, text: str) -> tuple:
        model = body["model"]
        marker = marker_of(text) or "?"
        results = anth.tool_results(body)
        calls, answer = self._decide(model, marker, results)
        n, fresh, completion, _, _ = self._usage(model)
        write = read = 0
        if anth.wants_cache(text):
            with self._lock:
                key = (marker, model)
                if key in self._cache:
                    read = anth.CACHE_TOKENS
                else:
                    write = anth.CACHE_TOKENS
                    if len(self._cache) < 1_000_000:
                        self._cache.add(key)
        answered = anth.ANTHROPIC_SNAPSHOTS.get(model, model)
        ids = [f"toolu_{i}" for i in self._ids(marker, results, calls)]
        stream = bool(body.get("stream"))
        self._record(marker, Sent("messages", model, answered, fresh + read + write, completion,
                                  read, 0, [(c, a, i) for (c, a), i in zip(calls, ids)], answer,
                                  cache_write_tokens=write, stream=stream))
        usage = {"input_tokens": fresh, "cache_creation_input_tokens": write,
                 "cache_read_input_tokens": read, "output_tokens": completion}
        doc = anth.message_doc(n, answered, calls, ids, answer, usage)
        return 200, doc, (anth.message_events(doc) if stream else None)
