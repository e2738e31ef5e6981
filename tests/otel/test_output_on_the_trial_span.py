"""The trial span carries the agent's output whatever it is, so an offline read of the trace
(``episodes_from_otel``) gives the live capture's output -- never the last model call's text
in its place; an output over ``MAX_OUTPUT_CHARS`` is cut visibly and flagged."""
from __future__ import annotations

import math

from ek_agents.base import TaskSpec
from ek_agents.bridge import episodes_from_otel
from ek_agents.execution.harness import run_trials
from ek_agents.execution.otelcapture import MAX_OUTPUT_CHARS
from ek_agents_examples.otel import agents

from .otlpjson import write_otlp

TASKS = [TaskSpec("o1", input="x")]


def _offline(tmp_path, exporter):
    ep, = episodes_from_otel(write_otlp(tmp_path / "trace.jsonl", list(exporter.get_finished_spans())))
    return ep


def big_agent(task, *, seed=None):
    return agents.openai_sdk_agent(task, seed=seed) + "!" * (MAX_OUTPUT_CHARS + 10)


def nan_agent(task, *, seed=None):
    agents.openai_sdk_agent(task, seed=seed)
    return {"score": math.nan, "tags": {"b"}}


def object_agent(task, *, seed=None):
    agents.openai_sdk_agent(task, seed=seed)
    return object()


def test_a_large_output_is_cut_visibly_not_replaced(server, exporter, tmp_path):
    live, = run_trials(big_agent, TASKS, k=1, seed=7100, capture="otel")
    off = _offline(tmp_path, exporter)
    assert len(live.output) > MAX_OUTPUT_CHARS
    assert off.output == live.output[:MAX_OUTPUT_CHARS]
    assert off.meta["otel"]["output_cut"] == len(live.output) + 2  # the JSON text's length


def test_an_output_json_cannot_hold_reads_back_as_the_live_capture_has_it(server, exporter, tmp_path):
    live, = run_trials(nan_agent, TASKS, k=1, seed=7200, capture="otel")
    off = _offline(tmp_path, exporter)
    assert off.output == live.to_dict()["output"] == {"score": None, "tags": ["b"]}  # as stored
    exporter.clear()
    live, = run_trials(object_agent, TASKS, k=1, seed=7300, capture="otel")
    off = _offline(tmp_path, exporter)
    assert "cannot be stored" in live.meta["error"] and live.output is None
    assert off.output is None and "output_unstored" in off.meta["otel"]
