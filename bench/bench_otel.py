"""Benchmark: the cost of ``capture="otel"``, and reading 100k spans of OTLP/JSON.

Run: ``.venv/bin/python -m bench.bench_otel [--trials 2000] [--repeat 3] [--spans 100000]``.

- **Capture overhead**: ``run_trials`` of 2,000 trials (k=1, concurrency 8) of a zero-latency
  instrumented agent -- the real ``openai`` SDK (async) under the real openai-v2
  instrumentation, three chat completions per trial (planner with tool calls, planner's
  answer, a summariser on another model), the replies made in-process by the scripted
  server's :meth:`~ek_agents_examples.otel.fakeopenai.FakeOpenAI.reply` through an
  ``httpx.MockTransport`` (no socket: no latency to hide the overhead). Both sides run with
  the SDK ``TracerProvider`` and the instrumentation on (what the user already runs); the
  only difference is ``capture="otel"``: the trial span, the span processor, and reading each
  trial's spans into its steps and per-call Cost. Without and with alternate, ``--repeat``
  times each; the figure is the least of each, ``capture_on_vs_off`` their ratio (goal <= 1.10);
  ``capture_on_vs_off_cpu`` the same in process CPU time (less swayed by a shared machine), and
  ``capture_on_vs_off_paired_median`` the median of the wall ratios of back-to-back pairs.
- **100k spans**: an OTLP/JSON file of ``--spans`` spans (1,000 traces of 100: model calls,
  tool calls, agent spans) read by ``episodes_from_otel``: seconds, spans per second, and the
  peak of traced Python memory (``tracemalloc``, in a second read: tracing slows it) next to
  the file's size; then the same spans
  as ONE trace (one episode of 100k spans): refused with a typed error
  (``max_spans``, default 50,000) -- the seconds until the refusal.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Optional


def _instrumented_agent() -> Any:
    import httpx
    import openai

    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER, FakeOpenAI, tool_result

    agents.instrument_openai_v2()
    script = FakeOpenAI(port=0)  # its reply() only: the socket is never served

    def handle(request: httpx.Request) -> httpx.Response:
        code, body = script.reply(request.url.path, request.content)
        return httpx.Response(code, json=body)

    clients: dict = {}

    def client() -> Any:
        loop = asyncio.get_running_loop()
        if loop not in clients:
            clients.clear()
            clients[loop] = openai.AsyncOpenAI(
                base_url="http://bench.invalid/v1", api_key="x", max_retries=0,
                http_client=httpx.AsyncClient(transport=httpx.MockTransport(handle)))
        return clients[loop]

    async def agent(task: Any, *, seed: Optional[int] = None) -> str:
        c = client()
        messages: list = [{"role": "user", "content": f"[ek:{task.task_id}.{seed}] go"}]
        reply = await c.chat.completions.create(model=PLANNER, messages=messages, tools=agents.TOOLS)
        msg = reply.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls or ():
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": tool_result(call.function.name,
                                                    json.loads(call.function.arguments))})
        answer = (await c.chat.completions.create(model=PLANNER, messages=messages,
                                                  tools=agents.TOOLS)).choices[0].message.content
        summary = await c.chat.completions.create(
            model=SUMMARISER, messages=[{"role": "user", "content": f"[ek:{task.task_id}.{seed}] {answer}"}])
        return summary.choices[0].message.content or ""

    return agent, script


def capture_overhead(trials: int, repeat: int) -> dict:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider

    from ek_agents.base import TaskSpec
    from ek_agents.execution.harness import run_trials

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())
    agent, script = _instrumented_agent()
    tasks = [TaskSpec(f"t{i:05d}", input="x") for i in range(trials)]
    run_trials(agent, tasks[:50], k=1, seed=0, capture="otel")  # warm both paths' imports
    run_trials(agent, tasks[:50], k=1, seed=0)
    off, on, off_cpu, on_cpu = [], [], [], []
    for r in range(repeat):
        for capture, into, cpu in ((None, off, off_cpu), ("otel", on, on_cpu)):
            t0, c0 = time.perf_counter(), time.process_time()
            eps = run_trials(agent, tasks, k=1, seed=1000 * (r + 1), capture=capture,
                             max_concurrency=8, progress=False)
            into.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
            assert not any(e.meta.get("error") for e in eps), eps[0].meta
            if capture:  # the capture really read every trial's three calls
                assert all(len(e.cost.calls) == 3 for e in eps)
    best_off, best_on = min(off), min(on)
    print(f"capture overhead: {trials} trials x3 calls, off {best_off:.2f} s, on {best_on:.2f} s "
          f"(x{best_on / best_off:.3f}); runs off {[round(x, 2) for x in off]} "
          f"on {[round(x, 2) for x in on]}")
    paired = sorted(b / a for a, b in zip(off, on))  # each pair ran back to back
    median = paired[len(paired) // 2] if len(paired) % 2 else \
        (paired[len(paired) // 2 - 1] + paired[len(paired) // 2]) / 2
    print(f"  CPU: off {min(off_cpu):.2f} s, on {min(on_cpu):.2f} s (x{min(on_cpu) / min(off_cpu):.3f}); "
          f"wall ratio of each back-to-back pair: {[round(x, 3) for x in paired]}, median x{median:.3f}")
    return {"capture_off_s": best_off, "capture_on_s": best_on,
            "capture_on_vs_off": best_on / best_off, "capture_trials": trials,
            "capture_on_vs_off_cpu": min(on_cpu) / min(off_cpu),
            "capture_on_vs_off_paired_median": median}


def _v(x: Any) -> dict:
    return {"intValue": str(x)} if isinstance(x, int) else {"stringValue": x}


def _span(trace_id: int, sid: int, parent: Optional[int], name: str, start: int, attrs: dict) -> dict:
    return {"traceId": f"{trace_id:032x}", "spanId": f"{sid:016x}",
            "parentSpanId": "" if parent is None else f"{parent:016x}", "name": name, "kind": 1,
            "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1),
            "attributes": [{"key": k, "value": _v(v)} for k, v in attrs.items()], "status": {}}


def write_spans(path: Path, n: int, *, traces: int) -> int:
    """``n`` spans over ``traces`` traces (an agent span, then model calls and tool calls)."""
    per = n // traces
    with open(path, "w", encoding="utf-8") as f:
        for t in range(1, traces + 1):
            spans = [_span(t, 1, None, "invoke_agent a", 0, {"gen_ai.operation.name": "invoke_agent",
                                                             "gen_ai.aggregated_usage.input_tokens": 9})]
            for i in range(2, per + 1):
                if i % 2:
                    spans.append(_span(t, i, 1, "execute_tool lookup", i, {
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                        "gen_ai.tool.call.arguments": json.dumps({"key": f"k{i}"}),
                        "gen_ai.tool.call.result": f"value {i}"}))
                else:
                    spans.append(_span(t, i, 1, "chat gpt-4o", i, {
                        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                        "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06",
                        "gen_ai.usage.input_tokens": 1000 + i, "gen_ai.usage.output_tokens": 20,
                        "gen_ai.usage.cache_read.input_tokens": 128}))
            for j in range(0, len(spans), 500):
                f.write(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
                    {"scope": {"name": "bench"}, "spans": spans[j:j + 500]}]}]}) + "\n")
    return per * traces


def read_many(n: int) -> dict:
    from ek_agents.bridge import episodes_from_otel
    from ek_agents.errors import BridgeError

    with tempfile.TemporaryDirectory() as d:
        many = Path(d) / "many.jsonl"
        total = write_spans(many, n, traces=1000)
        size = many.stat().st_size
        t0 = time.perf_counter()
        eps = episodes_from_otel(many)
        read_s = time.perf_counter() - t0
        assert len(eps) == 1000 and sum(len(e.cost.calls) for e in eps) == total // 2
        del eps
        tracemalloc.start()  # memory apart: tracing every allocation slows the read
        episodes_from_otel(many)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        one = Path(d) / "one.jsonl"
        write_spans(one, n, traces=1)
        t0 = time.perf_counter()
        try:
            episodes_from_otel(one)
            refused = False
        except BridgeError as exc:
            refused = "max_spans" in str(exc)
        refuse_s = time.perf_counter() - t0
    print(f"{total} spans ({size / 1e6:.1f} MB OTLP/JSON): read in {read_s:.2f} s "
          f"({total / read_s:,.0f} spans/s), traced peak {peak / 1e6:.0f} MB; one trace of "
          f"{total} spans refused (max_spans): {refused}, after {refuse_s:.2f} s")
    return {"otlp_spans": total, "otlp_read_s": read_s, "otlp_mb": size / 1e6,
            "otlp_peak_mb": peak / 1e6, "otlp_one_trace_refused": refused,
            "otlp_one_trace_refuse_s": refuse_s}


def main(argv: Optional[list] = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench.bench_otel")
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--spans", type=int, default=100_000)
    ap.add_argument("--skip", action="append", default=[], choices=("capture", "spans"))
    a = ap.parse_args(argv)
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    figures: dict = {}
    if "capture" not in a.skip:
        figures.update(capture_overhead(a.trials, a.repeat))
    if "spans" not in a.skip:
        figures.update(read_many(a.spans))
    return figures


if __name__ == "__main__":
    main()
