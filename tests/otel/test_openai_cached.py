"""The raw openai SDK under openai-v2, whose chat-completion spans carry no cached-token count:
while capturing, the count is read from the SDK's own responses (keyed by the response id
openai-v2 writes on its span), so the bill is exact -- under 429s with retries, and streamed
(sync and async) -- and stays an upper bound only when the response itself reports no
``prompt_tokens_details``."""
from __future__ import annotations

import pytest

from ek_agents.base import TaskSpec
from ek_agents.cost import episode_dollars
from ek_agents.execution.harness import run_suite, run_trials
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.fakeopenai import PLANNER, FakeOpenAI

TASKS = [TaskSpec(f"q{i}", input="plan, look up, convert, answer", gold=f"q{i}") for i in range(3)]


def _dated(prices: dict) -> dict:
    """Only the dated models that answer (a refused call's requested model has no price)."""
    return {m: p for m, p in prices.items() if m[-1].isdigit()}


def _sent_dollars(sent: list, prices: dict) -> float:
    """What the server's replies cost at the catalog's rates (independent of ek_agents.cost)."""
    return sum((s.input_tokens - s.cached_input_tokens) * prices[s.model].input
               + s.cached_input_tokens * prices[s.model].cached_input
               + s.output_tokens * prices[s.model].output for s in sent)


def test_raw_sdk_under_429s_scored_plus_overhead_is_the_server_bill(prices):
    agents.instrument_openai_v2()
    cat = _dated(prices)
    with FakeOpenAI(seed=12, fault_rate=0.4, retry_after=0.02) as srv:
        agents.configure(srv.base_url)
        report = run_suite(agents.openai_sdk_agent, TASKS[:2], k=2, seed=600, max_concurrency=4,
                           capture="otel", prices=cat, check=lambda ep, gold: True)
        assert srv.counts.faults.get(429, 0) > 0
        assert report.success_rate == 1.0 and report.n_trials == 4
        assert report.cost["retry_overhead"]["attempts"] > 0
        assert not report.cost.get("upper_bound")
        billed = srv.ledger_dollars(cat)
        assert sum(b.cached_input_tokens for b in srv.ledger.values()) > 0
    assert report.cost["total_dollars"] + report.cost["retry_overhead"]["dollars"] == \
        pytest.approx(billed, rel=1e-9)


def _one_stream(kind: str):
    """One streamed chat completion with its usage in the last chunk: sync (iterated), or async
    (``async with`` the stream, then iterated)."""
    def sync_agent(task, *, seed=None):
        text = ""
        for chunk in agents._client("sync").chat.completions.create(
                model=PLANNER, stream=True, stream_options={"include_usage": True},
                messages=[{"role": "user", "content": f"{agents.marker(task, seed)} x"}]):
            text += "".join(c.delta.content or "" for c in chunk.choices)
        return text

    async def async_agent(task, *, seed=None):
        text = ""
        stream = await agents._client("async").chat.completions.create(
            model=PLANNER, stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": f"{agents.marker(task, seed)} x"}])
        async with stream as chunks:
            async for chunk in chunks:
                text += "".join(c.delta.content or "" for c in chunk.choices)
        return text
    return sync_agent if kind == "sync" else async_agent


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_streamed_cached_tokens_and_dollars_equal_the_server(kind, prices):
    agents.instrument_openai_v2()
    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        eps = run_trials(_one_stream(kind), TASKS, k=1, seed=70, capture="otel",
                         max_concurrency=3)
    for ep in eps:
        sent = srv.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert all(s.stream and s.usage_sent for s in sent)
        assert all(c.cached_known for c in ep.cost.calls)
        assert [(c.model, c.input_tokens, c.cached_input_tokens) for c in ep.cost.calls] == \
            [(s.model, s.input_tokens, s.cached_input_tokens) for s in sent]
        assert ep.meta["otel"]["cached_from_responses"] == len(sent)
        assert episode_dollars(ep, prices=prices) == pytest.approx(_sent_dollars(sent, prices),
                                                                  rel=1e-12)
    assert sum(s.cached_input_tokens for v in srv.sent.values() for s in v) > 0


def test_no_prompt_tokens_details_in_the_response_stays_an_upper_bound(prices):
    agents.instrument_openai_v2()
    with FakeOpenAI(usage_details=False) as srv:
        agents.configure(srv.base_url)
        report = run_suite(agents.openai_sdk_agent, TASKS[:2], k=1, seed=800, capture="otel",
                           prices=prices, check=lambda ep, gold: True)
    assert report.cost["upper_bound"] is True
    assert report.cost["cached_input_tokens"] == 0


def test_a_capture_never_imports_openai(tmp_path):
    """An agent that does not use openai: the capture leaves openai unimported and unwrapped."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from ek_agents.base import TaskSpec\n"
            "from ek_agents.execution.harness import run_trials\n"
            "import ek_agents.execution.openaiusage as ou\n"
            "eps = run_trials(lambda task, seed=None: 'ok', [TaskSpec('t', input='x')], k=2, "
            "seed=0, capture='otel')\n"
            "assert [e.output for e in eps] == ['ok', 'ok']\n"
            "assert 'openai' not in sys.modules and not ou.watch_openai()\n"
            "print('clean')\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert got.returncode == 0 and got.stdout.strip() == "clean", got.stderr[-2000:]
