"""The capture's documented rules (ek_agents.runs.otelcapture), with a real instrumented agent."""
from __future__ import annotations

import pytest

from ek_agents.base import Cost, Episode, Step, TaskSpec, Trajectory
from ek_agents.errors import InvalidInput
from ek_agents.runs.harness import run_trials
from ek_agents.runs.otelcapture import OtelCapture
from ek_agents_examples.otel import agents

TASKS = [TaskSpec("r1", input="x"), TaskSpec("r2", input="y")]


async def episode_agent(task, *, seed=None):
    out = await agents.pydantic_ai_agent(task, seed=seed)
    return Episode(task.task_id, Trajectory([Step("mine", {"a": 1})]), output=out)


async def costed_agent(task, *, seed=None):
    out = await agents.pydantic_ai_agent(task, seed=seed)
    return Episode(task.task_id, output=out, cost=Cost(input_tokens=5, output_tokens=1))


async def failing_agent(task, *, seed=None):
    await agents.pydantic_ai_agent(task, seed=seed)
    raise RuntimeError("gave up after spending")


def test_the_agents_own_fields_win_and_spans_fill_the_rest(server, exporter):
    eps = run_trials(episode_agent, TASKS, k=1, seed=9300, capture="otel")
    for ep in eps:
        sent = server.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert ep.trajectory.tools == ("mine",)                      # the agent's own
        assert [c.input_tokens for c in ep.cost.calls] == [s.input_tokens for s in sent]  # spans'
    eps = run_trials(costed_agent, TASKS, k=1, seed=9400, capture="otel")
    for ep in eps:
        assert ep.cost.input_tokens == 5 and not ep.cost.calls       # the agent's cost wins
        assert "lookup" in ep.trajectory.tools                       # the spans' steps fill in


def test_a_failed_trial_keeps_what_it_spent(server, exporter):
    eps = run_trials(failing_agent, TASKS, k=1, seed=9500, capture="otel")
    for ep in eps:
        assert ep.success is False and "gave up" in ep.meta["error"]
        sent = server.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [c.output_tokens for c in ep.cost.calls] == [s.output_tokens for s in sent]


def test_kept_spans_are_opt_in_and_bounded(server, exporter):
    plain = run_trials(agents.pydantic_ai_agent, TASKS, k=1, seed=9600, capture="otel")
    assert all("spans_kept" not in e.meta["otel"] for e in plain)
    kept = run_trials(agents.pydantic_ai_agent, TASKS, k=1, seed=9700,
                      capture=OtelCapture(keep_spans=3))
    for ep in kept:
        spans = ep.meta["otel"]["spans_kept"]
        assert len(spans) == 3 and all(len(str(v)) <= 4096 for s in spans
                                       for v in s["attributes"].values())
        assert Episode.from_json(ep.to_json()) == ep


def test_a_bad_capture_is_refused():
    with pytest.raises(InvalidInput, match="capture must be None or 'otel'"):
        run_trials(agents.pydantic_ai_agent, TASKS, k=1, capture="zipkin")


def test_a_trial_span_is_sampled_whatever_its_providers_sampler(server):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    agents.instrument_openai_v2()
    cap = OtelCapture(provider=TracerProvider(sampler=ALWAYS_OFF))  # would drop the trial span
    eps = run_trials(agents.openai_sdk_agent, TASKS[:1], k=1, seed=9800, capture=cap)
    sent = server.sent[f"{eps[0].task_id}.{eps[0].run.seed}"]
    assert "sampled" not in eps[0].meta["otel"] and "sampler" not in eps[0].meta["otel"]
    assert [c.input_tokens for c in eps[0].cost.calls] == [s.input_tokens for s in sent]


_tries: dict = {}


def flaky_agent(task, *, seed=None):
    """Spends a whole trial's calls, then fails transiently once; the retry succeeds."""
    out = agents.openai_sdk_agent(task, seed=seed)
    key = (task.task_id, seed)
    _tries[key] = _tries.get(key, 0) + 1
    if _tries[key] == 1:
        from ek_agents.errors import TransientAgentError
        raise TransientAgentError("try again")
    return out


def test_a_retried_trial_bills_every_attempt_and_steps_from_the_last(server, exporter):
    from ek_agents_examples.otel.fakeopenai import expected_steps

    agents.instrument_openai_v2()
    eps = run_trials(flaky_agent, TASKS, k=1, seed=9900, capture="otel", retries=1, backoff_s=0)
    for ep in eps:
        marker = f"{ep.task_id}.{ep.run.seed}"
        sent = server.sent[marker]
        assert len(sent) == 6 and ep.cost.retries == 1 and "retries" not in ep.meta
        assert [c.input_tokens for c in ep.cost.calls] == [s.input_tokens for s in sent]
        assert [(s.tool, s.args) for s in ep.trajectory] == [(n, a) for n, a, _ in expected_steps(marker)]
        assert ep.meta["otel"]["attempts"] == 2
