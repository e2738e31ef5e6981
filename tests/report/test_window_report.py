"""The run report of a judged run shows the evaluation cost (the judges' own calls) apart from
the agent's dollars; a monitor window's run report draws its series up to the window, the
window marked, with its sentence and the alert's reasons -- windows made by the library from
recorded production traces (a pydantic-ai agent under its own instrumentation,
tests/fixtures/make_monitor_traces.py) judged on the local server's judge endpoint, and the
page looked at in headless Chromium."""
from __future__ import annotations

import gzip
import html
import json
import random
import re
from pathlib import Path

import pytest

import ek_agents_examples
from ek_agents.base import Cost, Episode, RunProvenance
from ek_agents.cli import main
from ek_agents.errors import ArtifactNotFound, InvalidInput
from ek_agents.monitor import SeriesOptions, evaluate_series, load_window
from ek_agents.prices import load_prices
from ek_agents.report.htmlreport import publish_run, render_html, render_markdown, run_sections
from ek_agents.report.monitorpage import SERIES_PLOTS, series_section_of, window_series_section
from ek_agents.report.runsummary import fmt_dollars, summarize_run
from ek_agents.report.trialdata import open_run
from ek_agents.store import Store

from .reportkit import DevToolsPage, chromium_binary

pytest.importorskip("openai")
from ek_agents_examples.otel.fakeopenai import FakeOpenAI  # noqa: E402
from ek_agents_examples.otel.fakejudge import label_as_truth  # noqa: E402

TRACES = Path(__file__).parents[1] / "fixtures" / "otlp" / "monitor-traffic.jsonl.gz"
RUBRIC = "The answer names the looked-up value."
JUDGE = "judge-mini"  # a model the agent never calls: the server's ledger splits the two
WINDOW = {"kind": "monitor-window", "series": "prod"}


@pytest.fixture(scope="module")
def prices_path(tmp_path_factory) -> str:
    doc = json.loads((Path(ek_agents_examples.__file__).parent / "prices.json").read_text())
    doc[JUDGE] = {"input_cost_per_token": 1e-07, "output_cost_per_token": 4e-07,
                  "cache_read_input_token_cost": 5e-08,
                  "litellm_provider": "openai", "mode": "chat"}
    path = tmp_path_factory.mktemp("prices") / "prices.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.fixture(scope="module")
def series_store(tmp_path_factory, prices_path) -> str:
    """Three windows of about 12 traces (36 in all), each labeled from the truth; the judge breaks on the third
    (it fails every answer): the alert fires there."""
    from ek_agents.adapters.judge_endpoint import EndpointJudge
    from ek_agents.monitor import (WindowOptions, monitor_window, plan_window_labels,
                                   store_window_labels)

    tmp = tmp_path_factory.mktemp("windows")
    lines = gzip.decompress(TRACES.read_bytes()).decode().splitlines()
    src, store = tmp / "otel", str(tmp / "store")
    cuts = [0, 5, 10, len(lines)]  # OTLP lines of 20 spans: about 12 traces a window
    src.mkdir()
    with FakeOpenAI() as srv:
        srv.set_judge(0.95, 0.9, seed=2)
        judge = EndpointJudge(JUDGE, srv.base_url, RUBRIC)
        for i in (1, 2, 3):
            if i == 3:
                srv.set_judge(0.0, 1.0, seed=2)
            (src / f"part{i}.jsonl").write_text("\n".join(lines[cuts[i - 1]:cuts[i]]) + "\n")
            monitor_window(str(src), "prod", store=store, judges=[judge], window_id=f"d{i}",
                           prices=load_prices(prices_path),
                           options=WindowOptions(slice_attr="app.route"),
                           series_options=SeriesOptions(horizon=3))
            rows = plan_window_labels(store, "prod", f"d{i}", 100)
            path = tmp / f"labels-d{i}.jsonl"
            label_as_truth(rows, path)
            store_window_labels(store, "prod", f"d{i}", str(path))
    return store


def test_a_judged_runs_report_shows_the_evaluation_cost_apart(tmp_path, prices_path, capsys):
    rows = [{"task_id": f"m{i}", "trial": 0, "success": True, "model": "gpt-4o-mini-2024-07-18",
             "usage": {"prompt_tokens": 100, "completion_tokens": 10},
             "messages": [{"role": "user", "content": f"q{i}"},
                          {"role": "assistant",
                           "content": f"a{i} [truth:{'PASS' if i % 3 else 'FAIL'}]"}]}
            for i in range(6)]
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = str(tmp_path / "store")
    with FakeOpenAI() as srv:
        srv.set_judge(1.0, 1.0, seed=3)
        assert main(["ingest", "messages", str(log), "--store", store, "--run-id", "ing",
                     "--prices", prices_path, "--judge-model", JUDGE,
                     "--judge-base-url", srv.base_url]) == 0
        billed = srv.ledger_dollars(load_prices(prices_path))
    cost = Store(store).read_json("runs/ing/report.json")["cost"]
    assert cost["evaluation_dollars"] == pytest.approx(billed) and billed > 0
    html_path, md_path = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", "ing", "--store", store, "--html", str(html_path),
                 "--markdown", str(md_path)]) == 0
    page, md = html_path.read_text(), md_path.read_text()
    shown = re.search(r'<p class="evaluation" data-dollars="([^"]+)">([^<]+)</p>', page)
    assert float(shown.group(1)) == cost["evaluation_dollars"]
    line = f"evaluation (judges&#x27; own calls) {fmt_dollars(cost['evaluation_dollars'])}: 6 calls"
    assert shown.group(2).startswith(line)
    assert re.search(r'<table class="evaluation-per-model">.*?<td>judge-mini</td><td>6</td>', page)
    # never in the agent's dollars nor its cost per success
    agent = fmt_dollars(cost["total_dollars"])
    assert f"dollars <b>{agent}</b>" in page and cost["total_dollars"] < 6 * 110 * 1e-6
    assert f"evaluation (judges' own calls) {fmt_dollars(cost['evaluation_dollars'])}: 6 calls" in md
    assert "| judge-mini | 6 |" in md
    assert publish_run(store, "ing").log[3].startswith("evaluation (judges' own calls) $")
    ev = fmt_dollars(cost["evaluation_dollars"])  # and under the overview table
    assert f"evaluation (judges&#x27; own calls), not in the dollars above: ing {ev}" in page
    assert f"evaluation (judges' own calls), not in the dollars above: ing {ev}" in md
    # a run no judge graded says nothing of it
    plain = summarize_run({"run_id": "p"}, {"n_trials": 1, "cost": {"total_dollars": 0.1}})
    assert plain.evaluation_dollars is None and "evaluation" not in render_markdown([plain])


def marker_agent(task, *, seed: int) -> Episode:
    """Right two times in three; the answer carries the truth for the scripted judge (and never
    equals the gold, so the suite's output checker would fail every trial)."""
    ok = random.Random(f"{task.task_id}/{seed}").random() < 0.67
    return Episode(task.task_id, output=f"{task.input.upper()} [truth:{'PASS' if ok else 'FAIL'}]",
                   cost=Cost(input_tokens=1000, output_tokens=100),
                   run=RunProvenance(model="gpt-4o-mini-2024-07-18", temperature=0.0))


def test_a_judge_graded_runs_trials_show_the_judges_verdicts(tmp_path, prices_path):
    """The trial browser (and the exports) read a judged run's trials from its segments with
    the verdicts the judge recorded, not the suite's checker run again."""
    suite = tmp_path / "s.jsonl"
    suite.write_text("".join(json.dumps(r) + "\n" for r in [
        {"suite": {"name": "tiny", "version": "1", "checker": "output"}},
        *({"task_id": f"t{i}", "input": f"word{i}", "gold": f"WORD{i}"} for i in range(4))]))
    store = str(tmp_path / "store")
    with FakeOpenAI() as srv:
        srv.set_judge(1.0, 1.0, seed=3)
        assert main(["run", "--suite", str(suite), "--agent", f"{__name__}:marker_agent",
                     "--k", "2", "--store", store, "--run-id", "j", "--prices", prices_path,
                     "--judge-model", JUDGE, "--judge-base-url", srv.base_url]) == 0
    graded = Store(store).read_json("runs/j/graded.json")["episodes"]
    want = sorted((e["task_id"], e["meta"]["trial"], "[truth:PASS]" in e["output"]) for e in graded)
    run = open_run(store, "j")
    assert run.layout == "segments" and run.judged
    got = sorted((e.task_id, e.meta["trial"], e.success) for b in run.batches() for e in b)
    assert got == want and {ok for *_, ok in got} == {True, False}


def test_the_window_section_draws_the_series_up_to_the_window(series_store):
    st = Store(series_store)
    before = {k: st.read_bytes(k) for k in st.list("monitor/prod")}
    d2 = window_series_section(series_store, "prod", "d2")
    assert {k: st.read_bytes(k) for k in st.list("monitor/prod")} == before  # a report writes nothing
    assert d2.count("<svg") == 3 and d2.count('class="this-window"') == 4  # 3 plots + its row
    assert 'data-window="d2"' in d2 and ">d3<" not in d2  # nothing after the window
    # its sentence: its traces, all judged and labeled, and the labels of d1 and d2 it rests on
    n1, n2 = (load_window(Store(series_store), "prod", w).episodes for w in ("d1", "d2"))
    assert f"window d2: {n2} traces, {n2} judged, {n2} labels ({n1 + n2} used" in d2
    # the rows are the series' under the options it was evaluated with (horizon 3)
    rows = evaluate_series(series_store, "prod", SeriesOptions(horizon=3))
    assert rows[1].alert and f">{html.escape('; '.join(rows[1].reasons))}</td>" in d2
    d3 = window_series_section(series_store, "prod", "d3")
    assert '<p class="alert fail">ALERT: corrected success fell' in d3
    assert d3.count('<circle class="alert"') == sum(r.alert for r in rows) == 2
    # evaluation cost per window drawn beside the agent's models
    assert d3.count('class="dollars"') == 3  # gpt-4o, gpt-4o-mini and the evaluation
    assert series_section_of(series_store, {"kind": "otlp"}) is None
    with pytest.raises(ArtifactNotFound, match="'d9' is not a window of series 'prod'"):
        window_series_section(series_store, "prod", "d9")
    with pytest.raises(InvalidInput, match="must name its series and window"):
        series_section_of(series_store, WINDOW)


def test_the_window_run_report_in_chromium(series_store, tmp_path):
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    run = summarize_run({"run_id": "d3", "source": dict(WINDOW, window="d3")},
                        {"k": 1, "n_trials": 12, "n_success": 4, "success_rate": 4 / 12})
    other = summarize_run({"run_id": "r1"}, {"k": 1, "n_trials": 2, "n_success": 1})
    sections = run_sections(Store(series_store), [run, other])
    assert list(sections) == ["d3"]
    path = tmp_path / "report.html"
    path.write_text(render_html([run, other], None, sections), encoding="utf-8")
    md = render_markdown([run, other], sections)
    assert md.index("## Run `d3`") < md.index("## Series prod: 3 windows up to this one (d3)") \
        < md.index("## Run `r1`")
    assert "**ALERT**: corrected success fell" in md and md.count("| d1 |") == 1
    assert re.search(r"\| \*\*d3\*\* \| \d+ \| \d+ \| \d+ \| 0\.0% \| 0\.0% \[0\.0%, [\d.]+%\] \| "
                     r"∞ \(no success\) \| \$[\d.]+ \| \$0\.00[\d]+ \| corrected success fell", md)
    b = DevToolsPage(binary, str(tmp_path / "profile"))
    try:
        b.open(path.as_uri())
        dom = b.dom()
        boxes = b.send("Runtime.evaluate", returnByValue=True, expression=(
            "Array.from(document.querySelectorAll('#series-d3 svg')).map(function (s) {"
            " var r = s.getBoundingClientRect(); return [s.dataset.plot, r.width, r.height]; })"
        ))["result"]["value"]
        assert b.requests == [path.as_uri()] and b.blocked == []
    finally:
        b.close()
    assert [x[0] for x in boxes] == list(SERIES_PLOTS) and all(w > 300 and h > 100
                                                              for _, w, h in boxes)
    # the section sits in the window's run, before the next run's
    assert dom.index('id="run-d3"') < dom.index('id="series-d3"') < dom.index('id="run-r1"')
    assert re.search(r'<polygon class="band"[^>]*points="[\d.,\s]+"', dom)
    assert len(re.findall(r'<rect class="this-window" data-window="d3"', dom)) == 3
    assert 'class="judge-rate"' in dom and "ALERT: corrected success fell" in dom
