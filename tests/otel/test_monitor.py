"""The monitor on traces a pydantic-ai agent wrote under its own instrumentation (behind an
application span carrying the route) against the local server: incremental ingestion, bad
input, billing, the judge sample, the labels loop, the commands, and end to end three windows
through `ek-agents monitor` with a judge on the server's judge endpoint (sensitivity
0.95, specificity 0.9; broken on the third window: the alert), labels between windows and a
re-run; a window as a run (its documents, manifest and audit)."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

import ek_agents_examples
from ek_agents.base import ModelCall
from ek_agents.cli import main
from ek_agents.cost import dollars
from ek_agents.prices import load_prices
from ek_agents.errors import BridgeError, RunInUse, RunMismatch
from ek_agents.records.documents import read_manifest
from ek_agents.records.segments import RunSegments, decode_segment, encode_segment
from ek_agents.stages.audit import audit
from ek_agents.monitor import WindowOptions, plan_window_labels, run_window
from ek_agents.store import Store, acquire_lease, release_lease
from ek_agents_examples.otel import traffic
from ek_agents_examples.otel.fakejudge import label_as_truth

OPTS = WindowOptions(slice_attr=traffic.ROUTE_ATTR)
JUDGE = "judge-mini"  # a model the agent never calls: the server's ledger splits the two


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
    rng = random.Random(11)
    reqs = traffic.day_requests(1, 25, 0.6, rng=rng)
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
    # stopped after the window was recorded, before its ledger moved: the re-run moves it
    moved = store.read_json("monitor/s/ledger.json")
    store.write_json("monitor/s/ledgers/a.json", moved)
    store.write_json("monitor/s/ledger.json", {"schema_version": 1})
    assert run_window(str(log), "s", store=store, window_id="a", options=OPTS).reused
    assert store.read_json("monitor/s/ledger.json") == moved
    assert not store.exists("monitor/s/ledgers/a.json")
    _write(log, lines[:2])
    # another process monitoring the series (or writing run "b") holds its lease: refused,
    # nothing read, the ledger unmoved
    for at in ("monitor/s/lease.json", ""):
        held = acquire_lease(store, "other", at=at) if at else acquire_lease(store, "b")
        with pytest.raises(RunInUse, match="lease.json' is being written.*run 'other'" if at
                           else "run 'b' is being written"):
            run_window(str(log), "s", store=store, window_id="b", options=OPTS)
        release_lease(store, held)
        assert store.read_json("monitor/s/ledger.json") == moved
    assert not store.exists("monitor/s/lease.json")
    w = run_window(str(log), "s", store=store, window_id="b", options=OPTS)
    assert w.counts.shrunk_files == 1 and w.episodes == 0
    assert not store.exists("monitor/s/lease.json") and not store.exists("runs/b/lease.json")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("garbage\n{\"x\": 1}\n")
    with pytest.raises(RunMismatch, match="window 'a' of series 't'.* a window of series 's'"):
        run_window(str(bad), "t", store=store, window_id="a", options=OPTS)  # a run's id
    with pytest.raises(BridgeError, match="nothing usable"):
        run_window(str(bad), "t", store=store, window_id="c", options=OPTS)


def test_judge_sample_labels_loop_and_commands(day, tmp_path, prices, capsys):
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
    filled = label_as_truth(rows, tmp_path / "labels.jsonl")
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
    return str(Path(ek_agents_examples.__file__).parent / "prices.json")
  # a model the agent never calls: the server's ledger splits the two


def _prices(tmp_path: Path) -> str:
    doc = json.loads((Path(ek_agents_examples.__file__).parent / "prices.json").read_text())
    doc[JUDGE] = {"input_cost_per_token": 1e-07, "output_cost_per_token": 4e-07,
                  "cache_read_input_token_cost": 5e-08, "litellm_provider": "openai", "mode": "chat"}
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _monitor(args: list, capsys) -> tuple[int, dict]:
    code = main(["monitor", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_end_to_end_three_windows_labels_rerun_and_dollars(day, server, tmp_path, capsys):
    server.set_judge(0.95, 0.9, seed=5)
    prices = _prices(tmp_path)
    src = tmp_path / "otel"
    src.mkdir()
    store = str(tmp_path / "store")
    common = ["--series", "prod", "--store", store, "--prices", prices, "--slice-attr",
              traffic.ROUTE_ATTR, "--judge-model", JUDGE, "--judge-base-url", server.base_url,
              "--judge-rubric", "The answer names the looked-up value.", "--horizon", "3"]
    judged_before = len(server.judged)
    reports = []
    second = traffic.otlp_lines(day["second"], batch=9)
    days = [traffic.otlp_lines(day["first"], batch=7), second[:len(second) // 2],
            second[len(second) // 2:]]
    for i, lines in enumerate(days, start=1):
        with open(src / "traces.jsonl", "a", encoding="utf-8") as f:  # the collector appends
            f.write("".join(line + "\n" for line in lines))
        if i == 3:  # the judge breaks (fails every answer): its rate collapses, the alert fires
            server.set_judge(0.0, 1.0, seed=5)
        code, rep = _monitor([str(src), "--window-id", f"d{i}", *common], capsys)
        assert code == (1 if i == 3 else 0), rep["sentence"]
        assert rep["episodes"] > 0 and rep["judge_calls"] == rep["episodes"]
        if i == 3:
            assert rep["alert"]["alert"] and "corrected success fell" in rep["alert"]["reasons"][0]
            assert rep["alert"]["reference"] == "2 earlier windows"
        reports.append(rep)
        # a person labels the window's traces (the truth is in the request they read)
        out = tmp_path / f"labels-d{i}.jsonl"
        series = ["--series", "prod"] if i == 1 else []  # the window's run names its series
        assert main(["plan-labels", f"d{i}", *series, "--n", "20", "--out", str(out),
                     "--store", store]) == 0
        printed = capsys.readouterr().out
        assert "verdict" not in out.read_text() and "[r0]" in printed and "[r1]" in printed
        if i == 1:  # no label yet: the judge's error is not measured, no corrected rate
            assert rep["success"]["corrected"] is None and "no corrected rate" in rep["sentence"]
        label_as_truth([json.loads(x) for x in out.read_text().splitlines()], out)
        assert main(["label", f"d{i}", str(out), "--series", "prod", "--store", store]) in (0, 1)
        capsys.readouterr()
    assert sum(r["episodes"] for r in reports) == 25
    assert len(server.judged) - judged_before == 25
    # the judge saw the planted truth
    assert {j.truth for j in server.judged[judged_before:]} == {"PASS", "FAIL"}
    assert all(j.verdict == "FAIL" for j in server.judged[-reports[2]["episodes"]:])
    # day 3 rests on its traces, all judged, and the labels of days 1-3
    n3 = reports[2]["episodes"]
    code, rep = _monitor([str(src), "--window-id", "d3", *common], capsys)
    assert rep["reused"] and rep["new_episodes"] == 0 and rep["judge_calls"] == 0 and len(server.judged) - judged_before == 25
    labels = sum(r["episodes"] for r in reports)  # every trace labeled (fewer than 20 a window)
    assert f"{n3} traces, {n3} judged, {n3} labels ({labels} used" in rep["sentence"]
    assert rep["success"]["corrected"] is not None
    # the judge's error from the last window's labels only; a promoted baseline window
    from ek_agents.monitor import SeriesOptions, evaluate_series

    rows = evaluate_series(store, "prod", SeriesOptions(label_windows=1, horizon=3))
    assert [r.labels_used for r in rows] == [r.labels for r in rows]
    rows = evaluate_series(store, "prod", SeriesOptions(baseline="d1", horizon=3))
    assert rows[2].reference == "baseline d1" and rows[2].alert
    # a new window with nothing new: no episode, no judge call
    code, rep = _monitor([str(src), "--window-id", "d4", *common], capsys)
    assert code == 0 and rep["episodes"] == 0 and rep["judge_calls"] == 0

    # agent dollars per model are what the server billed the agent's models; the judge's
    # calls are the evaluation cost, billed apart
    cat = load_prices(prices)
    billed = {m: dollars(ModelCall(m, input_tokens=b.input_tokens, output_tokens=b.output_tokens,
                                   cached_input_tokens=b.cached_input_tokens,
                                   reasoning_tokens=b.reasoning_tokens), cat[m])
              for m, b in server.ledger.items()}
    agent: dict = {}
    for rep in reports:
        for m, r in rep["cost"]["per_model"].items():
            agent[m] = agent.get(m, 0.0) + r["dollars"]
    assert set(agent) == {"gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18"}
    for m in agent:
        assert agent[m] == pytest.approx(billed[m], rel=1e-9)
    evaluation = sum(rep["cost"]["evaluation_dollars"] for rep in reports)
    assert evaluation == pytest.approx(billed[JUDGE], rel=1e-9) and evaluation > 0

    # `ingest otlp` takes the same judge: its raw rate, and its calls billed apart
    n = len(server.judged)
    assert main(["ingest", "otlp", str(src / "traces.jsonl"), "--prices", prices,
                 "--judge-model", JUDGE, "--judge-base-url", server.base_url]) == 0
    out = capsys.readouterr().out
    assert len(server.judged) - n == 25 and "the judge passed 0 of 25" in out  # still broken
    assert "evaluation cost (the judge's own calls): $" in out


def test_several_judges_combine_as_estimate_quality_does(day, tmp_path):
    class Cheap(Judge):
        identity, name, cost_tier = "cheap-v1", "cheap", 1

    class Costly(Judge):
        identity, name, cost_tier = "costly-v1", "costly", 5

        def __call__(self, output: str) -> float:
            self.calls += 1
            return 1.0

    log = tmp_path / "otel.jsonl"
    _write(log, traffic.otlp_lines(day["first"]))
    cheap, costly = Cheap(), Costly()
    w = run_window(str(log), "two", store=Store(str(tmp_path / "s")), judges=[costly, cheap],
                   window_id="a", options=OPTS)
    # "min": the cheaper judge runs first, a FAIL from it stops the costlier one
    assert cheap.calls == 12 and costly.calls == sum(w.verdicts.values())
    right = sum(r.right for r in day["requests"][:12])
    assert sum(w.verdicts.values()) == right < 12
    # the same traces again, every verdict cached: the same verdicts, each judge asked counted
    st = Store(str(tmp_path / "s"))
    for key in st.list("monitor/two/verdicts"):
        st.write_bytes(key.replace("monitor/two/", "monitor/again/"), st.read_bytes(key))
    again = run_window(str(log), "again", store=st, judges=[costly, cheap], window_id="c",
                       options=OPTS)
    assert again.verdicts == w.verdicts and again.judge_calls == 0
    assert again.judge_cached == 12 + right and cheap.calls == 12  # asked: 12 + the passes
    mean = run_window(str(log), "mean", store=Store(str(tmp_path / "s")), judges=[costly, cheap],
                      window_id="b", options=WindowOptions(slice_attr=traffic.ROUTE_ATTR,
                                                           combine="mean"))
    assert all(mean.verdicts.values())  # (0 + 1) / 2 >= 0.5: every episode passes


def test_a_pending_trace_completed_by_another_file(day, tmp_path):
    # the open request's agent spans are in one file, its root span (ended later) in the next
    src = tmp_path / "otel"
    src.mkdir()
    _write(src / "a.jsonl", traffic.otlp_lines(day["first"], batch=7))
    store = Store(str(tmp_path / "s"))
    w1 = run_window(str(src), "x", store=store, window_id="1", options=OPTS)
    assert w1.episodes == 12 and w1.counts.pending_traces == 1
    _write(src / "b.jsonl", traffic.otlp_lines(day["second"], batch=9))
    w2 = run_window(str(src), "x", store=store, window_id="2", options=OPTS)
    assert w2.episodes == 13 and w2.counts.pending_traces == 0 and w2.counts.new_files == 1
    w3 = run_window(str(src), "x", store=store, window_id="3", options=OPTS)
    assert w3.episodes == 0 and w3.counts.spans == 0
    # the completed trace is one episode with its agent's model calls (from the first file)
    from ek_agents.monitor import window_episodes

    calls = sorted(len(ep.cost.calls) for ep in window_episodes(store, "x", "2"))
    assert calls[0] >= 3


def test_an_fsspec_source_and_store(day):
    # the collector's files behind an fsspec URL (memory://, as s3:// would be), zstd-compressed
    import zstandard

    from ek_agents.store import write_url

    data = "".join(x + "\n" for x in traffic.otlp_lines(day["first"])).encode()
    write_url("memory://ek-monitor-src/otel/a.jsonl.zst", zstandard.ZstdCompressor().compress(data))
    w = run_window("memory://ek-monitor-src/otel", "m", store="memory://ek-monitor-store",
                   window_id="1", options=OPTS)
    assert w.episodes == 12 and w.counts.new_files == 1
    again = run_window("memory://ek-monitor-src/otel/*.zst", "m", store="memory://ek-monitor-store",
                       window_id="2", options=OPTS)
    assert again.episodes == 0 and again.counts.files == 1


# --------------------------------------------------------------------------- a window is a run
# Its episodes in the run's segments, its stage documents and manifest (source
# ``monitor-window``), its labels a run document, and ``ek-agents audit WINDOW`` recomputing it
# from the stored episodes, the verdict cache and the labels.

WOPTS = WindowOptions(slice_attr=traffic.ROUTE_ATTR, judge_sample=8)


@pytest.fixture()
def window(day, tmp_path):
    from ek_agents.prices import load_prices

    log = tmp_path / "otel.jsonl"
    _write(log, traffic.otlp_lines(day["first"] + day["second"], batch=4))
    store = Store(str(tmp_path / "s"))
    judge = Judge()
    rec = run_window(str(log), "prod", store=store, judges=[judge], window_id="w1",
                     options=WOPTS, prices=load_prices(_prices_path()))
    return store, rec, judge, log


def test_a_window_is_a_run_with_its_documents_and_manifest(window, tmp_path, capsys):
    store, rec, judge, log = window
    m = read_manifest(store, "w1")
    assert m.source == {"kind": "monitor-window", "series": "prod", "window": "w1",
                        "path": str(log)}
    segs = RunSegments.load(store, "w1")
    assert len(segs.pairs()) == rec.episodes == 25
    for key in [*segs.digests(), *(f"runs/w1/{n}.json" for n in
                                   ("tasks", "episodes", "graded", "report", "prices"))]:
        assert m.artifacts[key] == store.digest(key)
    assert not store.list("monitor/prod/labels") and not any(
        k.endswith(".episodes.jsonl") for k in store.list("monitor/prod/windows"))
    graded = store.read_json("runs/w1/graded.json")["episodes"]
    verdicts = {f"{g['task_id']}/{g['meta']['trial']}": g["success"] for g in graded}
    assert {k: v for k, v in verdicts.items() if v is not None} == rec.verdicts
    assert sum(v is None for v in verdicts.values()) == 25 - 8  # not judged: success unknown
    report = store.read_json("runs/w1/report.json")
    assert (report["n_trials"], report["n_success"]) == (8, sum(rec.verdicts.values()))
    assert report["cost"]["total_dollars"] == pytest.approx(rec.agent_dollars, rel=1e-12)
    assert m.results["total_dollars"] == pytest.approx(rec.agent_dollars, rel=1e-12)
    # the regular commands work on it
    assert main(["report", "w1", "--store", str(tmp_path / "s")]) == 0
    assert "w1" in capsys.readouterr().out
    # re-run: reused as stored, no episode made, no judge called
    again = run_window(str(log), "prod", store=store, judges=[judge], window_id="w1", options=WOPTS)
    assert again.reused and again.new_episodes == 0 and again.judge_calls == 0 and judge.calls == 8
    # stopped before its manifest (the ledger had not moved): no window; the next run removes
    # what the stopped one stored and reads the traces again (the verdicts are cached)
    store.delete("runs/w1/manifest.json")
    store.write_json("monitor/prod/ledger.json", {"schema_version": 1})
    again = run_window(str(log), "prod", store=store, judges=[judge], window_id="w1", options=WOPTS)
    assert not again.reused and again.episodes == 25 and again.judge_cached == 8
    segs = RunSegments.load(store, "w1")
    assert len(segs.writers) == 1 and len(segs.pairs()) == 25 and judge.calls == 8
    assert audit(store, "w1").passed
    # a window id that is the id of a run of another kind is refused, naming both
    doc = store.read_json("runs/w1/manifest.json")
    store.write_json("runs/agent1/manifest.json", {**doc, "run_id": "agent1", "source": {}})
    with pytest.raises(RunMismatch, match="window 'agent1' of series 'prod'.*a run of source"):
        run_window(str(log), "prod", store=store, judges=[judge], window_id="agent1", options=WOPTS)


def test_audit_window_finds_a_tampered_trial_verdict_cache_or_labels(window, tmp_path, capsys):
    store, rec, judge, _ = window
    url = str(tmp_path / "s")
    rows = plan_window_labels(store, "prod", "w1", 5, path=str(tmp_path / "labels.jsonl"))
    label_as_truth(rows, tmp_path / "labels.jsonl")
    assert main(["label", "w1", str(tmp_path / "labels.jsonl"), "--store", url]) in (0, 1)
    m = read_manifest(store, "w1")
    assert store.digest("runs/w1/labels.json") == m.artifacts["runs/w1/labels.json"]
    assert m.inputs.labels is not None
    capsys.readouterr()
    assert main(["audit", "w1", "--store", url]) == 0  # no --series: the run's audit
    assert "audit passed" in capsys.readouterr().out
    assert main(["audit", "w1", "--series", "prod", "--store", url]) == 0
    capsys.readouterr()

    # a trial changed in its segment (re-compressed, so that only its digest betrays it)
    (_, entry), = RunSegments.load(store, "w1").entries
    data = store.read_bytes(entry.key)
    lines = decode_segment(data, entry.key)
    lines[3] = lines[3].replace(b'"output":"', b'"output":"(edited) ')
    store.write_bytes(entry.key, encode_segment(lines))
    got = audit(store, "w1")
    assert not got.passed and any(entry.key in p and "hash to" in p for p in got.problems)
    assert main(["audit", "w1", "--store", url]) == 1
    store.write_bytes(entry.key, data)
    assert audit(store, "w1").passed

    # the verdict cache turned around: the recorded verdicts no longer recompute
    key = "monitor/prod/verdicts/" + rec.judges[0][:32] + ".json"
    cache = store.read_json(key)
    store.write_json(key, {d: [1.0 - v[0], v[1]] for d, v in cache.items()})
    got = audit(store, "w1")
    assert any("graded.episodes" in p and "success" in p for p in got.problems)
    assert main(["audit", "w1", "--store", url]) == 1
    store.write_json(key, cache)

    # a label flipped in the stored labels document
    labels = store.read_bytes("runs/w1/labels.json")
    doc = json.loads(labels)
    doc["labels"][0][2] = not doc["labels"][0][2]
    store.write_json("runs/w1/labels.json", doc)
    got = audit(store, "w1")
    assert any("runs/w1/labels.json" in p for p in got.problems)
    assert main(["audit", "w1", "--store", url]) == 1
    store.write_bytes("runs/w1/labels.json", labels)
    assert main(["audit", "w1", "--store", url]) == 0
