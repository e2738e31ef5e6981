"""What could escape a trial's capture, and does not: the application's sampler, threads the
agent starts, spans ending after the trial returned, calls outside any trial, and refused (429)
calls -- real SDKs and instrumentations against the scripted server, bills compared with what
the server billed."""
from __future__ import annotations

import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from opentelemetry import context as otel_context

import ek_agents_examples
from ek_agents.base import TaskSpec
from ek_agents.prices import load_prices
from ek_agents.reporting import build_report
from ek_agents.execution.harness import run_trials
from ek_agents.execution.limits import RunLimits
from ek_agents.execution.otelcapture import OtelCapture
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER, FakeOpenAI

TASKS = [TaskSpec(f"e{i}", input="plan, look up, answer") for i in range(8)]


def _ok(ep, gold) -> bool:
    return ep.output is not None


def _calls_match(ep, srv) -> bool:
    sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
    return [(c.model, c.input_tokens, c.output_tokens) for c in ep.cost.calls] == \
        [(s.model, s.input_tokens, s.output_tokens) for s in sent]


@pytest.fixture
def srv():
    with FakeOpenAI(seed=5) as s:
        agents.configure(s.base_url)
        yield s


def _sampled_pydantic_agent(provider):
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def agent(task, *, seed=None):
        model = OpenAIChatModel(PLANNER, provider=OpenAIProvider(openai_client=agents._client("async")))
        planner = Agent(model, tools=[agents.lookup, agents.convert])
        planner.instrument = InstrumentationSettings(tracer_provider=provider)
        return (await planner.run(f"{agents.marker(task, seed)} {task.input}")).output
    return agent


def test_every_trial_captured_under_a_ten_percent_parent_based_sampler(srv, prices):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased, TraceIdRatioBased

    app = TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.1)))  # what production installs
    eps = run_trials(_sampled_pydantic_agent(app), TASKS, k=1, seed=10,
                     capture=OtelCapture(provider=app), max_concurrency=4)
    assert len(eps) == 8 and all(ep.cost is not None and _calls_match(ep, srv) for ep in eps)
    report = build_report(eps, TASKS, k=1, check=_ok, prices=prices)
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(prices), rel=1e-12)
    assert not report.cost["upper_bound"] and report.cost["n_without_cost"] == 0

    dropping = TracerProvider(sampler=ALWAYS_OFF)  # not parent-based: drops the agent's spans
    eps = run_trials(_sampled_pydantic_agent(dropping), TASKS[:2], k=1, seed=20,
                     capture=OtelCapture(provider=dropping))
    assert all(ep.cost is None and ep.meta["otel"]["sampler"] == "AlwaysOffSampler" for ep in eps)
    notes = build_report(eps, TASKS[:2], k=1, check=_ok, prices=prices).cost
    assert notes["capture"]["trials_dropped_by_sampler"] == 2
    assert any("AlwaysOffSampler" in w and "ParentBased" in w for w in notes["warnings"])


def _threaded_agent(task, *, seed=None):
    """A sync agent making its two calls on a ThreadPoolExecutor and a plain thread."""
    client = agents._client("sync")
    mark = agents.marker(task, seed)

    def ask(model: str) -> str:
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": f"{mark} summarise: {task.input}"}])
        return reply.choices[0].message.content or ""

    with ThreadPoolExecutor(max_workers=2) as pool:
        first = pool.submit(ask, SUMMARISER).result()
    out: list = []
    t = threading.Thread(target=lambda: out.append(ask(SUMMARISER)))
    t.start()
    t.join()
    return first + out[0]


def test_calls_on_worker_threads_billed_to_their_trial(srv, prices):
    agents.instrument_openai_v2()
    eps = run_trials(_threaded_agent, TASKS, k=1, seed=30, capture="otel", max_concurrency=4)
    assert all(len(ep.cost.calls) == 2 and _calls_match(ep, srv) for ep in eps)
    report = build_report(eps, TASKS, k=1, check=_ok, prices=prices)
    # the cached counts openai-v2 leaves off its spans, read from the responses on the threads
    assert all(c.cached_known for ep in eps for c in ep.cost.calls)
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(prices), rel=1e-12)
    assert not report.cost["upper_bound"] and "capture" not in report.cost


def _late_agent(release: threading.Event, after_s=None, threads=None):
    """Leaves its one call on a thread waiting for ``release`` (set ``after_s`` seconds later
    when given) and returns before it ends; each such thread is appended to ``threads``."""
    def agent(task, *, seed=None):
        client = agents._client("sync")
        msg = [{"role": "user", "content": f"{agents.marker(task, seed)} summarise: x"}]

        def work():
            release.wait(5.0)
            client.chat.completions.create(model=SUMMARISER, messages=msg)
        thread = threading.Thread(target=work)
        thread.start()
        if threads is not None:
            threads.append(thread)
        if after_s is not None:
            threading.Timer(after_s, release.set).start()
        return "left running"
    return agent


def _outside_agent(task, *, seed=None):
    """One call in its trial, one made under an empty context (a new root trace)."""
    client = agents._client("sync")
    msg = [{"role": "user", "content": f"{agents.marker(task, seed)} summarise: x"}]
    client.chat.completions.create(model=SUMMARISER, messages=msg)
    token = otel_context.attach(otel_context.Context())
    try:
        client.chat.completions.create(model=SUMMARISER, messages=msg)
    finally:
        otel_context.detach(token)
    return "done"


def test_late_spans_waited_for_within_the_grace_and_outside_calls_counted(prices):
    agents.instrument_openai_v2()
    with FakeOpenAI() as slow:
        agents.configure(slow.base_url)
        eps = run_trials(_late_agent(threading.Event(), after_s=0.2), TASKS[:2], k=1, seed=40,
                         capture=OtelCapture(grace_s=5.0))   # the wait ends when the work does
        assert all(_calls_match(ep, slow) and len(ep.cost.calls) == 1 for ep in eps)
        assert all("unfinished_work" not in ep.meta["otel"] for ep in eps)
        release, left = threading.Event(), []
        cut = run_trials(_late_agent(release, threads=left), TASKS[:2], k=1, seed=50,
                         capture=OtelCapture(grace_s=0.0))
        release.set()    # the calls left behind run now, after their trials were read
        assert all(ep.cost is None and ep.meta["otel"]["unfinished_work"] == 1 for ep in cut)
        notes = build_report(cut, TASKS[:2], k=1, check=_ok, prices=prices).cost
        assert notes["capture"]["unfinished_work"] == 2
        assert any("had not ended within the capture's grace" in w for w in notes["warnings"])
        for thread in left:  # they end in no open trial: counted, not filed; and they end
            thread.join(10)  # here, before the next capture starts (whatever the load)
        assert not any(thread.is_alive() for thread in left)
    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        eps = run_trials(_outside_agent, TASKS[:4], k=1, seed=60, capture="otel",
                         max_concurrency=4)
        notes = build_report(eps, TASKS[:4], k=1, check=_ok, prices=prices).cost
        assert all(len(ep.cost.calls) == 1 for ep in eps)
        assert notes["capture"]["outside_calls"] == 4   # each counted once, across trials
        assert any("ended outside any trial" in w for w in notes["warnings"])


_HELD: contextvars.ContextVar = contextvars.ContextVar("held")


class _SlowToFree:
    """Freed with the agent's context, on the thread the harness ran the call on, after the
    call's answer was handed back: that thread outlives the trial by ``s`` seconds."""

    def __init__(self, s: float) -> None:
        self.s = s

    def __del__(self) -> None:
        time.sleep(self.s)


def _lingering_agent(task, *, seed=None):
    """One call on its own thread (no thread of its own left behind); its thread winds down
    slowly once it has answered."""
    _HELD.set(_SlowToFree(0.3))
    client = agents._client("sync")
    msg = [{"role": "user", "content": f"{agents.marker(task, seed)} summarise: x"}]
    client.chat.completions.create(model=SUMMARISER, messages=msg)
    return "done"


def test_the_thread_a_sync_call_ran_on_is_not_work_the_trial_left_running(srv):
    agents.instrument_openai_v2()
    eps = run_trials(_lingering_agent, TASKS[:2], k=1, seed=90, capture=OtelCapture(grace_s=0.0))
    assert all(_calls_match(ep, srv) and len(ep.cost.calls) == 1 for ep in eps)
    assert all("unfinished_work" not in ep.meta["otel"] for ep in eps)


def _refused_then_retried(max_tries: int):
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import ModelHTTPError
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def agent(task, *, seed=None):
        planner = Agent(OpenAIChatModel(PLANNER, provider=OpenAIProvider(
            openai_client=agents._client("async"))), tools=[agents.lookup, agents.convert])
        planner.instrument = True
        for attempt in range(max_tries):
            try:
                return (await planner.run(f"{agents.marker(task, seed)} {task.input}")).output
            except ModelHTTPError:
                if attempt == max_tries - 1:
                    raise
    return agent


def test_refused_calls_billed_zero_never_an_upper_bound_nor_an_unknown_price(srv):
    catalog = load_prices(Path(ek_agents_examples.__file__).parent / "prices.json")
    dated = {m: p for m, p in catalog.items() if m in ("gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18")}
    srv.set_faults(0.4, retry_after=0.0)      # 40% of requests answered 429
    eps = run_trials(_refused_then_retried(12), TASKS, k=1, seed=70, capture="otel",
                     max_concurrency=4)
    report = build_report(eps, TASKS, k=1, check=_ok, prices=dated)
    refused = srv.counts.faults[429]
    assert refused > 0 and report.success_rate == 1.0
    assert report.cost["capture"]["failed_calls"] == refused
    assert report.cost["capture"]["failed_calls_by_model"] == {"gpt-4o": refused}
    assert not report.cost["upper_bound"]       # the refused calls are not unknown cached counts
    assert report.cost["total_dollars"] == pytest.approx(srv.ledger_dollars(dated), rel=1e-12)

    srv.set_faults(1.0)                         # every call refused: the trial fails, spends $0
    eps = run_trials(_refused_then_retried(1), TASKS[:2], k=1, seed=80, capture="otel",
                     limits=RunLimits(provider_retry_s=0))  # no retry: unresolved at once
    report = build_report(eps, TASKS[:2], k=1, check=_ok, prices=dated)
    assert all(ep.meta.get("error_kind") == "provider" and ep.cost.input_tokens == 0 for ep in eps)
    assert report.detail["unresolved"]["n"] == 2    # not scored: the provider's, not the agent's
    assert report.cost["retry_overhead"] == {"attempts": 2, "calls": 0, "dollars": 0.0}
    assert report.cost["total_dollars"] is None or report.cost["total_dollars"] == 0.0
