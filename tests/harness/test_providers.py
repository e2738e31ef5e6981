"""Provider errors told apart from agent errors, retried, not scored; the run's adaptive
concurrency; trial limits and the dollar cap. The errors are the real SDKs' exception types,
made with real httpx requests and responses, raised by in-process agents."""
from __future__ import annotations

import asyncio
import random
import threading

import httpx
import pytest

from ek_agents.base import Cost, Episode, ModelCall, TaskSpec
from ek_agents.errors import InvalidInput
from ek_agents.cost import per_million
from ek_agents.records import documents
from ek_agents.execution.harness import run_suite, run_trials
from ek_agents.execution.limits import RunLimits
from ek_agents.execution.providers import DECREASE, EndpointLimiter, backoff_s, classify
from ek_agents.store import open_store

openai = pytest.importorskip("openai")

URL = "http://127.0.0.1:9/v1/chat/completions"
TASKS = [TaskSpec(f"t{i}", input="q", gold="ok") for i in range(6)]
PRICES = {"m-1": per_million(2.0, 8.0)}


def _req(model: str = "gpt-4o") -> httpx.Request:
    return httpx.Request("POST", URL, json={"model": model, "messages": []})


def rate_limited(model: str = "gpt-4o", retry_after: str = "0.01") -> Exception:
    resp = httpx.Response(429, headers={"retry-after": retry_after}, request=_req(model),
                          json={"error": {"message": "rate limited"}})
    return openai.RateLimitError("rate limited", response=resp, body=None)


def unavailable(model: str = "gpt-4o") -> Exception:
    resp = httpx.Response(503, request=_req(model), json={"error": {"message": "down"}})
    return openai.InternalServerError("down", response=resp, body=None)


def test_classify_reads_the_sdks_types_status_and_retry_after():
    f = classify(rate_limited(retry_after="0.25"))
    assert (f.kind, f.status, f.model, f.endpoint, f.retry_after_s) == \
        ("rate_limit", 429, "gpt-4o", "127.0.0.1:9", 0.25)
    assert classify(unavailable()).kind == "server_error"
    assert classify(openai.APITimeoutError(request=_req())).kind == "timeout"
    assert classify(httpx.ConnectError("refused", request=_req())).kind == "connection"
    bad = openai.BadRequestError("bad", response=httpx.Response(400, request=_req()), body=None)
    assert classify(bad) is None  # the agent's request was wrong: its own error
    assert classify(ValueError("nope")) is None

    class RateLimitError(Exception):  # the agent's own class of that name: not an SDK's
        status_code = 429
    assert classify(RateLimitError()) is None


def test_classify_walks_what_wraps_it():
    pai = pytest.importorskip("pydantic_ai.exceptions")
    try:
        try:
            raise rate_limited("gpt-4o-mini")
        except Exception as inner:
            raise pai.ModelHTTPError(429, "gpt-4o-mini", None) from inner
    except Exception as outer:
        f = classify(outer)
    assert (f.kind, f.model, f.endpoint, f.retry_after_s) == ("rate_limit", "gpt-4o-mini",
                                                              "127.0.0.1:9", 0.01)
    try:
        try:
            raise unavailable()
        except Exception:
            raise RuntimeError("tool loop failed")  # __context__ only
    except RuntimeError as exc:
        assert classify(exc).kind == "server_error"
    assert classify(ExceptionGroup("g", [ValueError("x"), unavailable()])).status == 503


def test_backoff_honours_retry_after_with_jitter_and_grows():
    rng = random.Random(0)
    waits = [backoff_s(1, 0.2, rng) for _ in range(200)]
    assert min(waits) >= 0.2 and max(waits) <= 0.3 and len(set(waits)) > 100
    assert backoff_s(4, 0.2, random.Random(1)) > 0.3
    plain = [backoff_s(n, None, random.Random(n)) for n in range(1, 8)]
    assert plain == sorted(plain) and plain[-1] <= 30.0


class Flaky:
    """Raises a provider error on each trial's first ``fail`` attempts; counts its calls."""

    def __init__(self, fail: int, exc=rate_limited, bad_tasks=None):
        self.fail, self.exc, self.bad_tasks = fail, exc, bad_tasks
        self.calls: dict = {}
        self.lock = threading.Lock()

    async def __call__(self, task, *, seed):
        with self.lock:
            n = self.calls[(task.task_id, seed)] = self.calls.get((task.task_id, seed), 0) + 1
        await asyncio.sleep(0)
        if (self.bad_tasks is None or task.task_id in self.bad_tasks) and n <= self.fail:
            raise self.exc()
        return Episode(task.task_id, output="ok",
                       cost=Cost.of_calls([ModelCall("m-1", input_tokens=1000, output_tokens=100)]))


def test_provider_errors_are_retried_not_scored():
    agent = Flaky(fail=2)
    report = run_suite(agent, TASKS, k=2, seed=5, prices=PRICES, max_concurrency=4,
                       check=lambda ep, gold: ep.output == gold)
    assert report.success_rate == 1.0 and report.detail["errors"] == {}
    assert report.detail["providers"]["retried_attempts"] == 2 * 12
    assert set(agent.calls.values()) == {3}  # same seed each attempt
    over = report.cost["retry_overhead"]
    assert over["attempts"] == 24 and over["dollars"] == 0.0  # nothing reported spent
    assert any("24 attempt(s) ended by provider errors" in w for w in report.detail["warnings"])
    assert report.cost["total_dollars"] == pytest.approx(12 * (1000 * 2 + 100 * 8) / 1e6)


def test_agent_errors_stay_failures():
    def agent(task, *, seed):
        raise ValueError("wrong tool")
    eps = run_trials(agent, TASKS[:2], k=1, seed=0)
    assert [e.meta["error_kind"] for e in eps] == ["exception", "exception"]


def test_unresolved_are_named_not_scored_and_retry_errored_completes(tmp_path):
    root = str(tmp_path / "s")
    down = Flaky(fail=10**6, exc=unavailable, bad_tasks={"t0", "t1"})
    report = run_suite(down, TASKS, k=2, seed=1, persist=True, rootdir=root, run_id="r", agent_id="flaky",
                       provider_retry_s=0.05, check=lambda ep, gold: ep.output == gold,
                       prices=PRICES)
    un = report.detail["unresolved"]
    assert un["n"] == 4 and un["by_kind_and_model"] == {"server_error gpt-4o": 4}
    assert sorted(un["trials"]) == ["t0#0", "t0#1", "t1#0", "t1#1"]
    assert report.n_trials == 8 and report.success_rate == 1.0  # over completed trials only
    assert any(w.startswith("incomplete:") for w in report.detail["warnings"])
    assert report.detail["errors"] == {}  # not the agent's

    up = Flaky(fail=0)
    report2 = run_suite(up, TASKS, k=2, seed=1, persist=True, rootdir=root, run_id="r", agent_id="flaky",
                        retry_errored=True, check=lambda ep, gold: ep.output == gold,
                        prices=PRICES)
    assert sorted(up.calls) == [("t0", 1), ("t0", 2), ("t1", 1), ("t1", 2)]
    assert "unresolved" not in report2.detail and report2.n_trials == 12
    st = open_store(root)
    eps = documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, "r"),
                                                       "episodes"))
    pairs = [(e.task_id, e.meta["trial"]) for e in eps]
    assert len(pairs) == len(set(pairs)) == 12  # 0 lost, 0 duplicated


def test_trial_limits_from_the_agents_cost_fail_the_trial_naming_it():
    def agent(task, *, seed):
        calls = [ModelCall("m-1", input_tokens=100, output_tokens=10)] * (3 + seed % 10)
        return Episode(task.task_id, output="ok", cost=Cost.of_calls(calls))
    eps = run_trials(agent, TASKS, k=2, seed=0, limits=RunLimits(trial_calls=8))
    for e in eps:
        n = 3 + e.run.seed % 10
        assert (e.meta.get("limit") == "trial_calls") == (n > 8), e.meta
        assert e.success is (False if n > 8 else None)


def test_dollar_limits_need_prices():
    with pytest.raises(InvalidInput, match="prices="):
        run_suite(lambda t: "x", TASKS, max_dollars=1.0)
    with pytest.raises(InvalidInput, match="trial_calls"):
        run_suite(lambda t: "x", TASKS, trial_calls=0)


def test_max_dollars_stops_resumably_and_a_higher_cap_finishes(tmp_path):
    root = str(tmp_path / "s")
    ran = []

    def agent(task, *, seed):  # $0.0028 a trial
        ran.append((task.task_id, seed))
        return Episode(task.task_id, output="ok",
                       cost=Cost.of_calls([ModelCall("m-1", input_tokens=1000, output_tokens=100)]))
    tasks = [TaskSpec(f"t{i:02d}", input="q", gold="ok") for i in range(20)]
    r1 = run_suite(agent, tasks, k=1, seed=0, prices=PRICES, max_dollars=0.02, max_concurrency=4,
                   persist=True, rootdir=root, run_id="cap", agent_id="capped")
    st = r1.detail["stopped"]
    assert st["reason"] == "max_dollars" and st["not_started"] == 20 - len(ran)
    assert r1.cost["total_dollars"] <= 0.02 + 0.0028 + 1e-12
    assert st["first_not_started"] == f"t{len(ran):02d}#0"
    first = len(ran)
    r2 = run_suite(agent, tasks, k=1, seed=0, prices=PRICES, max_dollars=1.0, max_concurrency=4,
                   persist=True, rootdir=root, run_id="cap", agent_id="capped")
    assert "stopped" not in r2.detail and r2.n_trials == 20
    assert len(ran) == 20 and len(set(ran)) == 20 and first < 20


def test_endpoint_limiter_backs_off_on_429s_and_grows_back():
    async def go():
        lim = EndpointLimiter(64)
        held = await lim.acquire()  # no endpoint learned yet: nothing to wait for
        assert held == ()
        fault = classify(rate_limited(retry_after="0"))
        await lim.release(held, fault)
        ep = lim.endpoints[fault.key]
        first = 64 * DECREASE
        assert ep.limit == pytest.approx(first)
        slots = int(first)
        tickets = [await lim.acquire() for _ in range(slots)]
        assert ep.in_flight == slots
        waiter = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0.01)
        assert not waiter.done()  # the next one waits for a slot
        for t in tickets[:slots // 2]:
            await lim.release(t, fault)  # one round of 429s: one decrease
        second = first * DECREASE
        assert ep.limit == pytest.approx(second)
        for t in tickets[slots // 2:]:
            await lim.release(t, None)
        await lim.release(await waiter, None)
        # grows back by about one per limit's worth of successes (slots // 2 + 1 of them)
        assert second < ep.limit < second + (slots // 2 + 1) / second + 1e-9
    asyncio.run(go())
