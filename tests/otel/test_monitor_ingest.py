"""The monitor's incremental ingestion, on traces a pydantic-ai agent wrote under its own
instrumentation (behind an application span carrying the route), served by the local server."""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from ek_agents.base import ModelCall
from ek_agents.cost import dollars
from ek_agents.errors import BridgeError
from ek_agents.monitor import WindowOptions, run_window
from ek_agents.store import Store
from ek_agents_examples.otel import traffic

OPTS = WindowOptions(slice_attr=traffic.ROUTE_ATTR)


class Judge:
    """A judge with an identity that counts its calls (passes what the server answered right)."""

    identity = "test-judge-v1"
    name = "test-judge"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, output: str) -> float:
        self.calls += 1
        return 0.0 if "unsure" in str(output) else 1.0


@pytest.fixture(scope="module")
def day(server):
    """Two batches of a day's traffic (12 + 12 requests) and one request left open, as span lists."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exp = InMemorySpanExporter()
    trace.get_tracer_provider().add_span_processor(SimpleSpanProcessor(exp))
    rng = random.Random(7)
    reqs = traffic.day_requests(1, 25, 0.8, rng=rng)
    open_span = traffic.serve_requests(reqs[:12], open_request=reqs[24])
    first = list(exp.get_finished_spans())
    exp.clear()
    with trace.get_tracer("app.health").start_as_current_span("GET /health"):
        pass
    traffic.serve_requests(reqs[12:24])
    open_span.end()
    second = list(exp.get_finished_spans())
    exp.clear()
    return {"first": first, "second": second, "requests": reqs}


def _write(path: Path, lines: list, mode: str = "w") -> None:
    with open(path, mode, encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def test_windows_consume_each_trace_once(day, tmp_path, server, prices):
    src = tmp_path / "traces"
    src.mkdir()
    log = src / "otel.jsonl"
    _write(log, traffic.otlp_lines(day["first"], batch=7))
    store = Store(str(tmp_path / "store"))
    judge = Judge()
    w1 = run_window(str(src), "prod", store=store, judges=[judge], prices=prices,
                    window_id="w1", options=OPTS)
    assert w1.episodes == 12 and w1.counts.pending_traces == 1
    assert sorted(w1.slices) == ["r0", "r1"] and sum(s["traces"] for s in w1.slices.values()) == 12
    assert judge.calls == 12
    right = sum(r.right for r in day["requests"][:12])
    assert sum(w1.verdicts.values()) == right

    # re-running the window: nothing read, no episode, no judge call
    again = run_window(str(src), "prod", store=store, judges=[judge], prices=prices,
                       window_id="w1", options=OPTS)
    assert again.reused and judge.calls == 12 and again.episodes == 12

    # the file grows (the open request ended, a health check, 12 more requests) and a garbage
    # line and a half-written line arrive: only the new traces, the bad line counted once
    _write(log, traffic.otlp_lines(day["second"], batch=9) + ["{not json"], mode="a")
    with open(log, "a", encoding="utf-8") as f:
        f.write('{"resourceSpans": [')
    w2 = run_window(str(src), "prod", store=store, judges=[judge], prices=prices,
                    window_id="w2", options=OPTS)
    assert w2.episodes == 13 and w2.counts.pending_traces == 0
    assert w2.counts.bad_lines == 1 and w2.counts.no_model_call == 1
    assert w2.counts.unknown_scopes == {"app.health": 1}
    assert judge.calls == 25

    # rotation: the file renamed (same identity), a gzip copy of it delivered too, a new file
    log.rename(src / "otel.jsonl.1")
    (src / "copy.jsonl.gz").write_bytes(gzip.compress((src / "otel.jsonl.1").read_bytes()))
    w3 = run_window(str(src / "*"), "prod", store=store, judges=[judge], window_id="w3",
                    options=OPTS)
    assert w3.episodes == 0 and w3.counts.duplicate_files == 1 and w3.counts.bad_lines == 0
    assert judge.calls == 25


def test_agent_dollars_per_model_are_what_the_server_billed(day, tmp_path, server, prices):
    log = tmp_path / "otel.jsonl"
    _write(log, traffic.otlp_lines(day["first"] + day["second"]))
    w = run_window(str(log), "bill", store=Store(str(tmp_path / "s")), prices=prices,
                   window_id="w1", options=OPTS)
    markers = {f"{r.task_id}.{r.seed}" for r in day["requests"]}
    want: dict = {}
    for m in markers:
        for sent in server.sent.get(m, []):
            call = ModelCall(sent.model, input_tokens=sent.input_tokens,
                             output_tokens=sent.output_tokens,
                             cached_input_tokens=sent.cached_input_tokens,
                             reasoning_tokens=sent.reasoning_tokens)
            want[sent.model] = want.get(sent.model, 0.0) + dollars(call, prices[sent.model])
    got = {m: r["dollars"] for m, r in w.agent_per_model.items()}
    assert got.keys() == want.keys() and len(got) == 2
    for m in want:
        assert got[m] == pytest.approx(want[m], rel=1e-9)
    assert w.evaluation_dollars is None  # no judge: no evaluation cost


def test_shrunk_file_and_nothing_usable(day, tmp_path):
    log = tmp_path / "otel.jsonl"
    lines = traffic.otlp_lines(day["first"], batch=5)
    _write(log, lines)
    store = Store(str(tmp_path / "s"))
    run_window(str(log), "s", store=store, window_id="a", options=OPTS)
    _write(log, lines[:2])
    w = run_window(str(log), "s", store=store, window_id="b", options=OPTS)
    assert w.counts.shrunk_files == 1 and w.episodes == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n{\"x\": 1}\n")
    with pytest.raises(BridgeError, match="nothing usable"):
        run_window(str(bad), "t", store=store, window_id="a", options=OPTS)


def test_judge_sample_labels_loop_and_commands(day, tmp_path, prices, capsys):
    import json

    from ek_agents.cli import main
    from ek_agents.labels import LabelError
    from ek_agents.monitor import (evaluate_series, plan_window_labels, store_window_labels)

    log = tmp_path / "otel.jsonl"
    _write(log, traffic.otlp_lines(day["first"] + day["second"]))
    store = Store(str(tmp_path / "s"))
    judge = Judge()
    opts = WindowOptions(slice_attr=traffic.ROUTE_ATTR, judge_sample=6)
    w = run_window(str(log), "lab", store=store, judges=[judge], window_id="w1", options=opts)
    assert w.episodes == 25 and judge.calls == 6
    assert sorted((s["traces"], s["judged"]) for s in w.slices.values()) == [(12, 3), (13, 3)]

    # the labeling file: judged traces only, stratified by slice, the verdict never shown
    rows = plan_window_labels(store, "lab", "w1", 4, path=str(tmp_path / "labels.jsonl"))
    assert len(rows) == 4 and {r["slice"] for r in rows} == {"r0", "r1"}
    assert all("verdict" not in r and r["gold"] is None and "look up" in r["input"] for r in rows)
    truth = {r.task_id: r.right for r in day["requests"]}
    filled = [dict(r, gold=truth[r["input"].rsplit(" ", 1)[-1]]) for r in rows]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in filled))
    labs = store_window_labels(store, "lab", "w1", str(tmp_path / "labels.jsonl"))
    assert len(labs.labels) == 4
    (row,) = evaluate_series(store, "lab")
    assert (row.traces, row.judged, row.labels) == (25, 6, 4)
    assert "25 traces, 6 judged, 4 labels" in row.sentence
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "nope", "trial": 0, "gold": true}\n')
    with pytest.raises(LabelError, match="name no judged trace"):
        store_window_labels(store, "lab", "w1", str(bad))
    assert main(["audit", "w1", "--series", "lab", "--store", str(tmp_path / "s")]) == 0
    assert "6 judged verdicts recomputed" in capsys.readouterr().out
    key = "monitor/lab/verdicts/" + w.judges[0][:32] + ".json"
    cache = store.read_json(key)
    store.write_json(key, {d: [1.0 - v[0], v[1]] for d, v in cache.items()})  # tampered
    assert main(["audit", "w1", "--series", "lab", "--store", str(tmp_path / "s")]) == 1

    # the commands: monitor with no judge (success unknown, dollars known), ingest with no grader
    code = main(["monitor", str(log), "--series", "cli", "--window-id", "a", "--store",
                 str(tmp_path / "c"), "--prices", _prices_path(), "--slice-attr",
                 traffic.ROUTE_ATTR, "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["episodes"] == 25 and rep["success"]["known"] is False
    assert rep["cost"]["evaluation_dollars"] is None and rep["cost"]["agent_dollars"] > 0
    assert main(["ingest", "otlp", str(log), "--slice-attr", traffic.ROUTE_ATTR]) == 0
    assert "success unknown" in capsys.readouterr().out


def _prices_path() -> str:
    import ek_agents_examples

    return str(Path(ek_agents_examples.__file__).parent / "prices.json")
