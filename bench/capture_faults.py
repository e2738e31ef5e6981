"""What ``capture="otel"`` bills when providers and applications misbehave, in one process
whose GLOBAL TracerProvider samples 10% of traces (``ParentBased(TraceIdRatioBased(0.1))``,
what production code often installs), against the scripted server; every figure beside what
the server billed (its ledger).

Run: ``.venv/bin/python -m bench.capture_faults [--tasks 20] [--k 2]``.

- **sampling**: the openai SDK under openai-v2 (global provider), tasks x k trials: trials
  captured, dollars vs the ledger (the cached counts openai-v2 leaves off its spans read from
  the SDK's responses), and the upper-bound flag;
- **threads**: a sync agent making two calls on a ThreadPoolExecutor, concurrency 4: calls
  billed to their trial vs calls the server billed;
- **429s**: a pydantic-ai agent retrying its own 429s (``max_retries=0`` in the SDK), 40% of
  requests refused, a catalog naming only the dated models: refused calls counted, the upper
  bound flag, dollars vs the ledger;
- **prompt caching**: pydantic-ai on the Anthropic Messages API, streamed, with cache writes
  and reads: dollars a trial vs the ledger, and what billing the writes as input would say.
"""
from __future__ import annotations

import argparse
import asyncio
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--k", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    trace.set_tracer_provider(TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.1))))

    import ek_agents_examples
    from ek_agents.base import TaskSpec
    from ek_agents.prices import load_prices
    from ek_agents.reporting import build_report
    from ek_agents.execution.harness import run_trials
    from ek_agents_examples.otel import agents
    from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER, FakeOpenAI

    prices = load_prices(Path(ek_agents_examples.__file__).parent / "prices.json")
    dated = {m: p for m, p in prices.items() if m[-10:-6] == "2024"}
    tasks = [TaskSpec(f"b{i:02d}", input="plan, look up, answer") for i in range(args.tasks)]
    ok = lambda ep, gold: ep.output is not None  # noqa: E731
    agents.instrument_openai_v2()

    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        eps = run_trials(agents.openai_sdk_agent, tasks, k=args.k, seed=1, capture="otel",
                         max_concurrency=8)
        rep = build_report(eps, tasks, k=args.k, check=ok, prices=prices).cost
        print(f"sampling ParentBased(TraceIdRatioBased(0.1)), global provider: "
              f"{sum(e.cost is not None for e in eps)} of {len(eps)} trials captured; "
              f"${rep['total_dollars']:.6f} billed vs ${srv.ledger_dollars(prices):.6f} the "
              f"server billed; upper bound {rep['upper_bound']}")

    def threaded(task, *, seed=None):
        client = agents._client("sync")
        mark = agents.marker(task, seed)

        def ask(model: str) -> str:
            return client.chat.completions.create(model=model, messages=[
                {"role": "user", "content": f"{mark} summarise: x"}]).choices[0].message.content
        with ThreadPoolExecutor(2) as pool:
            return "".join(pool.map(ask, [PLANNER, SUMMARISER]))

    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        eps = run_trials(threaded, tasks[:10], k=1, seed=2, capture="otel", max_concurrency=4)
        billed = sum(len(e.cost.calls) for e in eps if e.cost is not None)
        print(f"threads: {billed} calls billed to their trials of "
              f"{sum(b.calls for b in srv.ledger.values())} the server billed "
              f"({sum(e.cost is not None for e in eps)} of {len(eps)} trials with a cost)")

    async def stubborn(task, *, seed=None):
        from pydantic_ai import Agent
        from pydantic_ai.exceptions import ModelHTTPError
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider
        planner = Agent(OpenAIChatModel(PLANNER, provider=OpenAIProvider(
            openai_client=agents._client("async"))), tools=[agents.lookup, agents.convert])
        planner.instrument = True
        for _ in range(20):
            try:
                return (await planner.run(f"{agents.marker(task, seed)} {task.input}")).output
            except ModelHTTPError:
                await asyncio.sleep(0)
        raise RuntimeError("20 refusals in a row")

    with FakeOpenAI(seed=3, fault_rate=0.4, retry_after=0.0) as srv:
        agents.configure(srv.base_url)
        eps = run_trials(stubborn, tasks, k=args.k, seed=3, capture="otel", max_concurrency=8)
        rep = build_report(eps, tasks, k=args.k, check=ok, prices=dated).cost
        print(f"429s at 40%: {srv.counts.faults.get(429, 0)} of {srv.counts.requests} requests "
              f"refused, {rep.get('capture', {}).get('failed_calls', 0)} failed calls counted; "
              f"upper bound {rep['upper_bound']}; ${rep['total_dollars']:.6f} billed vs "
              f"${srv.ledger_dollars(dated):.6f} the server billed (catalog of dated models only)")

    claude = load_prices({"claude-sonnet-4-5-20250929": {
        "input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
        "cache_read_input_token_cost": 3e-07, "cache_creation_input_token_cost": 3.75e-06,
        "litellm_provider": "anthropic", "mode": "chat"}})

    async def cached(task, *, seed=None):
        from pydantic_ai import Agent
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider
        cache = agents._loop_cache()  # one client per event loop (its connection pool's)
        if "claude" not in cache:
            model = AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(
                base_url=agents.BASE_URL[:-len("/v1")], api_key="sk-local"))
            cache["claude"] = Agent(model, instructions="Use the tools.", tools=[agents.lookup],
                                    model_settings={"anthropic_cache_instructions": True})
            cache["claude"].instrument = True
        planner = cache["claude"]
        async with planner.run_stream(f"{agents.marker(task, seed)} {task.input}") as run:
            return await run.get_output()

    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        eps = run_trials(cached, tasks, k=1, seed=4, capture="otel", max_concurrency=8)
        rep = build_report(eps, tasks, k=1, check=ok, prices=claude).cost
        n = len(eps)
        led = srv.ledger["claude-sonnet-4-5-20250929"]
        as_input = rep["total_dollars"] - led.cache_write_tokens * (3.75e-06 - 3e-06)
        print(f"prompt caching (Anthropic, streamed): {led.cache_write_tokens // n} cache-write and "
              f"{led.cached_input_tokens // n} cache-read tokens a trial; "
              f"${rep['total_dollars'] / n:.6f} a trial billed vs "
              f"${srv.ledger_dollars(claude) / n:.6f} the server billed "
              f"(writes billed as input: ${as_input / n:.6f})")


if __name__ == "__main__":
    main()
