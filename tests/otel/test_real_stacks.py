"""The real rig: three agent stacks, each traced by its users' real instrumentation, run by
``run_suite(capture="otel")`` on 10 tasks x k=3 at concurrency 8 against the scripted server.
Every episode's tool calls, tokens per model and dollars must equal what the server sent,
exactly; no span of one trial may land in another; the same spans written as OTLP/JSON (hex
ids and base64 ids, by the real protobuf encoders) and read offline give the same episodes."""
from __future__ import annotations

import re

import pytest

from ek_agents.records import documents
from ek_agents.base import TaskSpec
from ek_agents.bridge import episodes_from_otel
from ek_agents.cost import episode_dollars
from ek_agents.execution.harness import run_suite
from ek_agents.store import open_store
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.fakeopenai import expected_steps, summary_of

from .otlpjson import write_otlp

STACKS = {
    # name: (instrument, agent, the instrumentation's spans report cached tokens); openai-v2's
    # chat spans do not: the capture reads them from the SDK's responses, a read offline cannot
    "openai-sdk+openai-v2": (agents.instrument_openai_v2, agents.openai_sdk_agent, False),
    "agents-sdk+openinference": (agents.instrument_openinference, agents.agents_sdk_agent, True),
    "pydantic-ai": (lambda: None, agents.pydantic_ai_agent, True),
}
TASKS = [TaskSpec(f"t{i:02d}", input="plan, look up, convert, answer", gold=f"t{i:02d}")
         for i in range(10)]
_MARK = re.compile(r"\[ek:([A-Za-z0-9_.#/-]+)\]")


def _check(ep, gold) -> bool:  # success: the task needed `convert` and the agent called it
    return "convert" in ep.trajectory.tools


def reference_dollars(sent: list, prices: dict, cached_reported: bool) -> float:
    """The dollars of what the server sent, from the catalog's rates (independent of cost.py)."""
    usd = 0.0
    for s in sent:
        p = prices[s.model]
        cached = s.cached_input_tokens if cached_reported else 0
        usd += (s.input_tokens - cached) * p.input + cached * p.cached_input + s.output_tokens * p.output
    return usd


def _stored_episodes(root: str, run_id: str) -> list:
    st = open_store(root)
    return documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, run_id), "episodes"))


def _markers(span) -> set:
    found = set()
    for v in (span.attributes or {}).values():
        if isinstance(v, str):
            found.update(_MARK.findall(v))
    return found


@pytest.mark.parametrize("stack", list(STACKS))
def test_run_suite_capture_otel_equals_what_the_server_sent(stack, server, exporter, prices, tmp_path):
    instrument, agent, cached_reported = STACKS[stack]
    instrument()
    root = str(tmp_path / "store")
    seed = 1000 * (1 + list(STACKS).index(stack))  # each stack's trials have markers of their own
    report = run_suite(agent, TASKS, k=3, seed=seed, max_concurrency=8, capture="otel",
                       check=_check, prices=prices, persist=True, rootdir=root, run_id="otel-run")
    eps = _stored_episodes(root, "otel-run")  # round-tripped through the store's JSON
    assert len(eps) == 30 and not any(e.meta.get("error") for e in eps)
    total = 0.0
    for ep in eps:
        marker = f"{ep.task_id}.{ep.run.seed}"
        sent = server.sent[marker]
        assert [(s.tool, s.args, s.observation) for s in ep.trajectory] == \
            [(n, a, o) for n, a, o in expected_steps(marker)], marker
        assert ep.output == summary_of(marker)
        calls = ep.cost.calls
        assert [(c.model, c.input_tokens, c.output_tokens) for c in calls] == \
            [(s.model, s.input_tokens, s.output_tokens) for s in sent], marker
        assert {c.model for c in calls} == {"gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"}
        assert all(c.cached_known for c in calls)
        assert [c.cached_input_tokens for c in calls] == [s.cached_input_tokens for s in sent]
        if cached_reported:
            assert [c.reasoning_tokens for c in calls] == [s.reasoning_tokens for s in sent]
        ref = reference_dollars(sent, prices, True)
        assert episode_dollars(ep, prices=prices) == pytest.approx(ref, rel=1e-12)
        total += ref
    assert report.cost["total_dollars"] == pytest.approx(total, rel=1e-12)
    assert report.success_rate == pytest.approx(
        sum(1 for e in eps if "convert" in e.trajectory.tools) / 30)

    # no span of one trial in another: every span of a trial's trace names only that trial
    spans = exporter.get_finished_spans()
    trial_of = {s.context.trace_id: f"{s.attributes['ek.task_id']}.{s.attributes['ek.seed']}"
                for s in spans if s.name.startswith("ek.trial ")}
    assert len(trial_of) == 30
    per_trace: dict = {}
    for s in spans:
        assert s.context.trace_id in trial_of, s.name  # every span inside some trial
        assert _markers(s) <= {trial_of[s.context.trace_id]}, (s.name, _markers(s))
        per_trace[s.context.trace_id] = per_trace.get(s.context.trace_id, 0) + 1
    by_marker = {f"{e.task_id}.{e.run.seed}": e for e in eps}
    for tid, marker in trial_of.items():
        assert by_marker[marker].meta["otel"]["spans"] == per_trace[tid]

    # offline: the same spans as OTLP/JSON (hex ids; base64 ids), and the SDK spans themselves,
    # read back to the same episodes
    for ids in ("hex", "base64", "sdk"):
        source = list(spans) if ids == "sdk" else \
            write_otlp(tmp_path / f"traces-{ids}.jsonl", list(spans), ids=ids, batch=37)
        offline = {(e.task_id, e.meta["trial"]): e for e in episodes_from_otel(source)}
        assert len(offline) == 30
        for ep in eps:
            off = offline[(ep.task_id, ep.meta["trial"])]
            assert off.trajectory == ep.trajectory and off.output == ep.output
            assert off.run.seed == ep.run.seed
            if cached_reported:
                assert off.cost.calls == ep.cost.calls
                assert episode_dollars(off, prices=prices) == episode_dollars(ep, prices=prices)
            else:  # no cached count on the spans: full input rates, an upper bound, marked
                assert [(c.model, c.input_tokens, c.output_tokens) for c in ep.cost.calls] == \
                    [(c.model, c.input_tokens, c.output_tokens) for c in off.cost.calls]
                assert not any(c.cached_known for c in off.cost.calls)
                sent = server.sent[f"{ep.task_id}.{ep.run.seed}"]
                assert episode_dollars(off, prices=prices) == \
                    pytest.approx(reference_dollars(sent, prices, False), rel=1e-12)
