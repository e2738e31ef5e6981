"""Benchmark: real SDKs against a misbehaving provider (the scripted server's faults, token
bucket and endless tool-call loop), and what the harness makes of it.

Run: ``.venv/bin/python -m bench.bench_providers [--part faults,outage,bucket,loop]``.

- **faults**: 40% of requests answered 429 (``Retry-After: 0.05``), the agents' clients at
  ``max_retries=0``, ``capture="otel"``, 20 tasks x k=3, concurrency 8, for the three stacks
  (pydantic-ai; the raw openai SDK under openai-v2; the OpenAI Agents SDK under
  OpenInference), priced with a catalog that names only the dated models that answer:
  success, attempts retried, the scored attempts' dollars, the retried attempts' dollars
  (retry overhead), their sum beside what the server billed (its ledger), the upper-bound flag.
- **outage**: ``ek-agents run`` (in this process) of 10 tasks x k=2 of a one-call agent
  (odd tasks on ``gpt-4o-mini``, the others on ``gpt-4o``) while the server answers 503 to
  every request for ``gpt-4o-mini``: the exit code (5), success over the completed trials,
  the unresolved named; then the model recovers and ``--retry-errored`` completes the run:
  trials lost and duplicated.
- **bucket**: a token bucket of 40 requests/s (burst 40) and 0.3 s per answer, 400 trials of
  one call each at ``max_concurrency=64``: wall / the ideal 10 s and the share of requests
  answered 429, with adaptive concurrency and without, side by side.
- **loop**: the endless tool-call loop with ``trial_calls=8`` and ``trial_dollars=0.01``: 20
  async (pydantic-ai) and 10 sync (a raw openai SDK loop) trials, every one a failure naming its
  limit, the most calls a trial made; then ``ek-agents run`` of 100 such trials with
  ``--max-dollars 0.05``: exit code, dollars spent, and the resume with ``--max-dollars 5``.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
PRICES = ROOT / "examples" / "prices.json"


def _setup() -> None:
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="ek-bench-ph-"))
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        trace.set_tracer_provider(TracerProvider())


def _prices() -> dict:
    from ek_agents.prices import load_prices
    return load_prices(PRICES)


def sync_loop_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """A raw openai SDK tool loop (sync) that stops only when the model stops asking (never,
    in the server's loop mode) or after 30 rounds."""
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import PLANNER, tool_result
    client = agents._client("sync")
    messages: list = [{"role": "user", "content": f"{agents.marker(task, seed)} {task.input}"}]
    for _ in range(30):
        msg = client.chat.completions.create(model=PLANNER, messages=messages,
                                             tools=agents.TOOLS).choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": tool_result(call.function.name,
                                                    json.loads(call.function.arguments))})
    return "gave up"


async def one_call_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """One chat completion (the summariser's model), async."""
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import SUMMARISER
    reply = await agents._client("async").chat.completions.create(
        model=SUMMARISER, messages=[{"role": "user", "content": f"{agents.marker(task, seed)} hi"}])
    return reply.choices[0].message.content or ""


async def split_agent(task: Any, *, seed: Optional[int] = None) -> str:
    """One chat completion, on the summariser's model for odd-numbered tasks and on the
    planner's for the others; answers ``ok``."""
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER
    model = SUMMARISER if int(task.task_id[1:]) % 2 else PLANNER
    await agents._client("async").chat.completions.create(
        model=model, messages=[{"role": "user", "content": f"{agents.marker(task, seed)} hi"}])
    return "ok"


def _tasks(n: int, prefix: str = "t") -> list:
    from ek_agents.base import TaskSpec
    return [TaskSpec(f"{prefix}{i:03d}", input="plan, look up, convert, answer",
                     gold=f"{prefix}{i:03d}") for i in range(n)]


def _suite(path: Path, n: int) -> str:
    rows = [{"suite": {"name": "bench", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i:03d}", "input": "plan, look up, convert, answer", "gold": "ok"}
             for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def faults(out: dict) -> None:
    from ek_agents.execution.harness import run_suite
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import FakeOpenAI
    dated = {m: p for m, p in _prices().items() if m[-1].isdigit()}
    stacks = {"pydantic-ai": (lambda: None, agents.pydantic_ai_agent),
              "openai-sdk+openai-v2": (agents.instrument_openai_v2, agents.openai_sdk_agent),
              "agents-sdk+openinference": (agents.instrument_openinference, agents.agents_sdk_agent)}
    for i, (name, (instrument, agent)) in enumerate(stacks.items()):
        instrument()
        with FakeOpenAI(seed=40 + i, fault_rate=0.4, retry_after=0.05) as srv:
            agents.configure(srv.base_url)
            t0 = time.perf_counter()
            rep = run_suite(agent, _tasks(20), k=3, seed=1000 * (i + 1), max_concurrency=8,
                            capture="otel", prices=dated, check=lambda ep, gold: True)
            wall = time.perf_counter() - t0
            over = rep.cost.get("retry_overhead") or {}
            scored, extra = rep.cost["total_dollars"], over.get("dollars") or 0.0
            billed = srv.ledger_dollars(dated)
            # what the server billed with every input token at the full input rate: the bill
            # of a stack whose instrumentation reports no cached tokens (an upper bound)
            full = sum(x.input_tokens * dated[x.model].input + x.output_tokens * dated[x.model].output
                       for sent in srv.sent.values() for x in sent)
            c = srv.counts
            print(f"faults {name}: success {rep.success_rate:.3f} of {rep.n_trials}; "
                  f"requests {c.requests}, 429s {c.faults.get(429, 0)}; attempts retried "
                  f"{over.get('attempts', 0)}; scored ${scored:.6f} + retry overhead "
                  f"${extra:.6f} = ${scored + extra:.6f}; server billed ${billed:.6f} "
                  f"(diff {scored + extra - billed:+.2e}; at full input rates ${full:.6f}, "
                  f"diff {scored + extra - full:+.2e}); upper bound "
                  f"{bool(rep.cost.get('upper_bound'))}; unresolved "
                  f"{rep.detail.get('unresolved', {}).get('n', 0)}; wall {wall:.1f}s")
            out[f"faults_{name}_success"] = rep.success_rate
            out[f"faults_{name}_sum_vs_billed"] = (scored + extra) / billed if billed else None


def outage(out: dict) -> None:
    from ek_agents.cli import main
    from ek_agents.records import documents
    from ek_agents.store import Store
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import SUMMARISER, FakeOpenAI
    tmp = Path(tempfile.mkdtemp(prefix="ek-bench-outage-"))
    suite, store = _suite(tmp / "s.jsonl", 10), str(tmp / "st")
    args = ["run", "--suite", suite, "--agent", "bench.bench_providers:split_agent",
            "--agent-id", "split", "--k", "2", "--prices", str(PRICES), "--store", store,
            "--provider-retry-s", "1", "--run-id", "outage"]
    with FakeOpenAI(seed=5) as srv:
        agents.configure(srv.base_url)
        srv.set_faults(1.0, status=503, model=SUMMARISER)
        rc = main(args)
        st = Store(store)
        rep = documents.read_run_doc(st, documents.read_manifest(st, "outage"), "report")
        un = rep["detail"].get("unresolved", {})
        print(f"outage: exit {rc}; success {rep['success_rate']:.3f} over {rep['n_trials']} "
              f"completed trials; unresolved {un.get('n')} {un.get('by_kind_and_model')}")
        srv.set_faults(0.0, model=SUMMARISER)  # recovered
        rc2 = main([*args, "--retry-errored"])
        eps = documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, "outage"),
                                                           "episodes"))
        pairs = [(e.task_id, e.meta["trial"]) for e in eps]
        lost = 20 - len(set(pairs))
        dup = len(pairs) - len(set(pairs))
        print(f"outage: after recovery --retry-errored exit {rc2}; trials {len(pairs)}, lost "
              f"{lost}, duplicated {dup}, errored {sum(1 for e in eps if e.meta.get('error'))}")
    out.update(outage_exit=rc, outage_retry_exit=rc2, outage_lost=lost, outage_duplicated=dup)


def bucket(out: dict, n: int = 400) -> None:
    from ek_agents.execution.harness import run_suite
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import FakeOpenAI
    ideal = n / 40.0
    for adaptive in (True, False):
        with FakeOpenAI(rate_limit=40, burst=40, latency_s=0.3) as srv:
            agents.configure(srv.base_url)
            t0 = time.perf_counter()
            rep = run_suite(one_call_agent, _tasks(n, "b"), k=1, seed=0, max_concurrency=64,
                            adaptive_concurrency=adaptive, check=lambda ep, gold: True)
            wall = time.perf_counter() - t0
            c = srv.counts
            share = c.throttled / c.requests
            print(f"bucket adaptive={adaptive}: wall {wall:.2f}s = {wall / ideal:.2f}x the ideal "
                  f"{ideal:.0f}s; requests {c.requests}, 429 {c.throttled} ({share:.1%}); "
                  f"success {rep.success_rate:.3f}; endpoint {rep.detail.get('providers', {}).get('endpoints')}")
            key = "adaptive" if adaptive else "fixed"
            out[f"bucket_{key}_wall_vs_ideal"] = wall / ideal
            out[f"bucket_{key}_429_share"] = share


def loop(out: dict) -> None:
    from ek_agents.cli import main
    from ek_agents.records import documents
    from ek_agents.execution.harness import run_suite
    from ek_agents.store import Store
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import FakeOpenAI
    prices = _prices()
    agents.instrument_openai_v2()  # the sync loop's spans
    for name, agent, n in (("async pydantic-ai", agents.pydantic_ai_agent, 20),
                           ("sync openai SDK", sync_loop_agent, 10)):
        with FakeOpenAI(loop=True) as srv:
            agents.configure(srv.base_url)
            rep = run_suite(agent, _tasks(n, "l"), k=1, seed=0, max_concurrency=8, capture="otel",
                            prices=prices, trial_calls=8, trial_dollars=0.01)
            calls = [len(v) for v in srv.sent.values()]
            print(f"loop {name}: {rep.n_trials} trials, success {rep.success_rate:.3f}, errors "
                  f"{rep.detail['errors']}; calls per trial min {min(calls)} max {max(calls)}; "
                  f"dollars ${rep.cost['total_dollars']:.4f}")
    tmp = Path(tempfile.mkdtemp(prefix="ek-bench-loop-"))
    suite, store = _suite(tmp / "s.jsonl", 100), str(tmp / "st")
    args = ["run", "--suite", suite, "--agent", "ek_agents_examples.otel.agents:pydantic_ai_agent",
            "--agent-id", "pyd-loop", "--prices", str(PRICES), "--store", store, "--capture",
            "otel", "--trial-calls", "8", "--trial-dollars", "0.01", "--run-id", "capped"]
    with FakeOpenAI(loop=True) as srv:
        agents.configure(srv.base_url)
        rc = main([*args, "--max-dollars", "0.05"])
        st = Store(store)
        rep = documents.read_run_doc(st, documents.read_manifest(st, "capped"), "report")
        billed1 = srv.ledger_dollars(prices)
        print(f"max_dollars 0.05: exit {rc}; {rep['n_trials']} trials ran, report dollars "
              f"${rep['cost']['total_dollars']:.4f}, server billed ${billed1:.4f}")
        rc2 = main([*args, "--max-dollars", "5"])
        rep2 = documents.read_run_doc(st, documents.read_manifest(st, "capped"), "report")
        print(f"resume --max-dollars 5: exit {rc2}; {rep2['n_trials']} trials, errors "
              f"{rep2['detail']['errors']}")
    out.update(loop_cap_exit=rc, loop_cap_billed=billed1, loop_resume_exit=rc2,
               loop_resume_trials=rep2["n_trials"])


PARTS = {"faults": faults, "outage": outage, "bucket": bucket, "loop": loop}


def main(argv: Optional[list] = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench.bench_providers")
    ap.add_argument("--part", default=",".join(PARTS))
    a = ap.parse_args(argv)
    _setup()
    out: dict = {}
    for part in a.part.split(","):
        PARTS[part](out)
    return out


if __name__ == "__main__":
    main()
