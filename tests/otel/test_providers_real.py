"""Real SDKs against the scripted server misbehaving: a pydantic-ai agent (its client's
``max_retries=0``) whose requests are answered 429 at a seeded 40% is scored on the attempts
that completed, dollar for dollar, with the retried attempts' dollars apart and the two adding
up to the server's ledger; an endless tool-call loop stops within one call of its trial limit;
an agent that hides the SDK's error behind its own is still told apart by its failing
model-call span. The larger figures (20 tasks x 3,
three stacks, the token bucket, max_dollars) are ``python -m bench.bench_providers``."""
from __future__ import annotations

import pytest

from ek_agents.base import TaskSpec
from ek_agents.records import documents
from ek_agents.store import open_store
from ek_agents.execution.harness import run_suite, run_trials
from ek_agents.execution.limits import RunLimits
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.fakeopenai import PLANNER, SUMMARISER, FakeOpenAI

TASKS = [TaskSpec(f"p{i}", input="plan, look up, convert, answer", gold=f"p{i}") for i in range(3)]


def _dated(prices: dict) -> dict:
    """The catalog as some users have it: only the dated models that answer, not the names
    the agent asks for (a refused call's requested model has no price)."""
    return {m: p for m, p in prices.items() if m[-1].isdigit()}


def test_429s_retried_scored_attempt_exact_overhead_apart(prices, tmp_path):
    cat = _dated(prices)
    with FakeOpenAI(seed=11, fault_rate=0.4, retry_after=0.02) as srv:
        agents.configure(srv.base_url)
        report = run_suite(agents.pydantic_ai_agent, TASKS[:2], k=2, seed=500, max_concurrency=4,
                           capture="otel", prices=cat, check=lambda ep, gold: True,
                           persist=True, rootdir=str(tmp_path / "s"), run_id="r")
        assert srv.counts.faults.get(429, 0) > 0
        assert report.success_rate == 1.0 and report.n_trials == 4
        assert report.detail["errors"] == {} and "unresolved" not in report.detail
        over = report.cost["retry_overhead"]
        assert over["attempts"] == report.detail["providers"]["retried_attempts"] > 0
        assert not report.cost.get("upper_bound")
        billed = srv.ledger_dollars(cat)
        assert report.cost["total_dollars"] + over["dollars"] == pytest.approx(billed, rel=1e-9)
        sent = srv.sent
    st = open_store(str(tmp_path / "s"))
    eps = documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, "r"),
                                                       "episodes"))
    assert sum(e.meta.get("provider_retries", {}).get("attempts", 0) for e in eps) == over["attempts"]
    for ep in eps:  # the scored attempt's calls are the last ones answered for its trial
        calls = [(c.model, c.input_tokens, c.output_tokens, c.cached_input_tokens)
                 for c in ep.cost.calls]
        last = sent[f"{ep.task_id}.{ep.run.seed}"][-len(calls):]
        assert calls == [(s.model, s.input_tokens, s.output_tokens, s.cached_input_tokens)
                         for s in last]


def test_endless_tool_loop_stops_at_trial_calls(prices):
    with FakeOpenAI(loop=True) as srv:
        agents.configure(srv.base_url)
        report = run_suite(agents.pydantic_ai_agent, TASKS[:2], k=2, seed=700, max_concurrency=4,
                           capture="otel", prices=prices, trial_calls=8, trial_dollars=1.0)
        assert report.success_rate == 0.0 and report.detail["errors"] == {"limit": 4}
        for marker, sent in srv.sent.items():  # async: cancelled within one call of it
            assert 8 < len(sent) <= 9 and all(s.requested_model == PLANNER for s in sent), marker


def _swallowing_agent(task, *, seed):
    """Catches the SDK's error and raises its own, unchained: only the span says why."""
    failed = False
    try:
        agents._client("sync").chat.completions.create(
            model=SUMMARISER, messages=[{"role": "user", "content": f"{agents.marker(task, seed)} hi"}])
    except Exception:  # noqa: BLE001 -- what an agent that hides its errors does
        failed = True
    if failed:
        raise RuntimeError("the model call failed")
    return "ok"


def test_a_failing_model_call_span_marks_a_provider_error():
    agents.instrument_openai_v2()
    with FakeOpenAI(fault_rate=1.0, fault_status=503) as srv:
        agents.configure(srv.base_url)
        eps = run_trials(_swallowing_agent, TASKS[:1], k=1, seed=0, capture="otel",
                         limits=RunLimits(provider_retry_s=0.05))
        srv.set_faults(0.0)
        ok = run_trials(_swallowing_agent, TASKS[:1], k=1, seed=1, capture="otel")
    assert eps[0].meta["error_kind"] == "provider"
    assert eps[0].meta["provider"]["kind"] == "server_error"
    assert eps[0].meta["provider"]["model"] == SUMMARISER
    assert ok[0].output == "ok" and not ok[0].meta.get("error")
