"""The monitor-production flow on a real Prefect server: a window of recorded production traces
(a pydantic-ai agent under its own instrumentation, tests/fixtures/make_monitor_traces.py)
judged on the local server's judge endpoint; when the judge breaks the flow run ends Failed
with the alert's reason as its message and the window's Markdown artifact says it too."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ek_agents.monitor import (SeriesOptions, WindowOptions, monitor_window, plan_window_labels,
                               store_window_labels)
from ek_agents.adapters.judge_endpoint import EndpointJudge
from ek_agents.monitorcli import MonitorAlert
from ek_agents_examples.otel.fakeopenai import FakeOpenAI
from ek_agents_examples.otel.fakejudge import label_as_truth

pytestmark = pytest.mark.usefixtures("prefect_api")

TRACES = Path(__file__).parents[1] / "fixtures" / "otlp" / "monitor-traffic.jsonl.gz"
RUBRIC = "The answer names the looked-up value."


def test_alert_fails_the_flow_run_with_its_reason_and_an_artifact(tmp_path):
    from prefect.artifacts import Artifact

    from ek_agents_pipeline.flows import monitor_production

    lines = gzip.decompress(TRACES.read_bytes()).decode().splitlines()
    src = tmp_path / "otel"
    src.mkdir()
    store = str(tmp_path / "store")
    cuts = [0, 5, 10, len(lines)]
    with FakeOpenAI() as srv:
        srv.set_judge(0.95, 0.9, seed=2)
        judge = EndpointJudge("judge-mini", srv.base_url, RUBRIC)
        for i in (1, 2):  # two windows the library runs, each labeled in full from the truth
            (src / f"part{i}.jsonl").write_text("\n".join(lines[cuts[i - 1]:cuts[i]]) + "\n")
            monitor_window(str(src), "prod", store=store, judges=[judge], window_id=f"d{i}",
                           options=WindowOptions(slice_attr="app.route"),
                           series_options=SeriesOptions(horizon=3))
            rows = plan_window_labels(store, "prod", f"d{i}", 100)
            path = tmp_path / f"labels-d{i}.jsonl"
            label_as_truth(rows, path)
            store_window_labels(store, "prod", f"d{i}", str(path))
        srv.set_judge(0.0, 1.0, seed=2)  # the judge breaks: it fails every answer
        (src / "part3.jsonl").write_text("\n".join(lines[cuts[2]:]) + "\n")
        state = monitor_production(source=str(src), series="prod", window_id="d3",
                                   slice_attr="app.route", judge_model="judge-mini",
                                   judge_base_url=srv.base_url, judge_rubric=RUBRIC, horizon=3,
                                   store=store, return_state=True)
    assert state.is_failed() and "corrected success fell" in state.message
    with pytest.raises(MonitorAlert, match="window 'd3'"):
        state.result()
    md = Artifact.get("monitor-prod", _sync=True)
    assert md.type == "markdown" and "**ALERT**" in md.data and "window d3" in md.data
