"""The per-model breakdown and the upper-bound mark in every report of a stored run whose
episodes record their model calls: the report document (JSON), the run's Markdown, the
multi-run Markdown and HTML, the table rows and log lines; the HTML as Chromium shows it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


from ek_agents.base import Cost, Episode, ModelCall, RunProvenance, TaskSpec
from ek_agents.cli import main
from ek_agents.harness import run_suite
from ek_agents.report.htmlreport import log_lines, render_html, render_markdown, table_rows
from ek_agents.records.manifest import report_markdown
from ek_agents.prices import load_prices
from ek_agents.records.documents import run_report
from ek_agents.report.runsummary import RunSummary, load_runs
from ek_agents.store import Store

from ..harness.layout import held_lines
from .reportkit import DevToolsPage, chromium_binary

REPO = Path(__file__).resolve().parents[2]
TASKS = [TaskSpec("a", input="x", gold="ok"), TaskSpec("b", input="y", gold="ok"),
         TaskSpec("c", input="z", gold="ok")]

# LiteLLM's rates (examples/prices.json): gpt-4o $2.5 / $1.25 cached / $10 per 1M tokens,
# gpt-4o-mini $0.15 / $0.6 per 1M
PLANNER = (1500 - 1024) * 2.5e-6 + 1024 * 1.25e-6 + 220 * 1e-5    # 0.00467 per episode
SUMMARISER = 3000 * 1.5e-7 + 400 * 6e-7                            # 0.00069 per episode


def planner_summariser(task, *, seed):
    """A gpt-4o planner and a gpt-4o-mini summariser; task c's summariser call was read from a
    source that does not report cached tokens."""
    calls = [ModelCall("gpt-4o-2024-08-06", requested_model="gpt-4o", provider="openai",
                       input_tokens=1500, cached_input_tokens=1024, output_tokens=220),
             ModelCall("gpt-4o-mini", provider="openai", input_tokens=3000, output_tokens=400,
                       cached_known=task.task_id != "c")]
    return Episode(output="ok" if seed % 2 == 0 or task.task_id == "a" else "no",
                   cost=Cost.of_calls(calls), run=RunProvenance(model="gpt-4o"))


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("per-model-store"))
    run_suite(planner_summariser, TASKS, k=2, seed=0, persist=True, run_id="multi", rootdir=root,
              prices=load_prices(REPO / "examples" / "prices.json"), progress=False)
    return root


def test_the_report_document_carries_the_breakdown(stored):
    _, doc = run_report(Store(stored), "multi")
    cost = doc["cost"]
    assert cost["total_dollars"] == pytest.approx(6 * (PLANNER + SUMMARISER), rel=1e-12)
    big, small = cost["per_model"]["gpt-4o-2024-08-06"], cost["per_model"]["gpt-4o-mini"]
    assert (big["calls"], big["input_tokens"], big["cached_input_tokens"], big["output_tokens"]) == \
        (6, 9000, 6144, 1320)
    assert big["dollars"] == pytest.approx(6 * PLANNER, rel=1e-12) and big["upper_bound"] is False
    assert small["dollars"] == pytest.approx(6 * SUMMARISER, rel=1e-12) and small["upper_bound"] is True
    assert cost["upper_bound"] is True
    assert "2 of 12 model call(s) did not report cached tokens (gpt-4o-mini: 2)" in cost["upper_bound_reason"]
    # stored episodes keep their calls through the store
    stored_ep = json.loads(held_lines(Store(stored), "multi")[("a", 0)])
    assert [c["model"] for c in stored_ep["cost"]["calls"]] == ["gpt-4o-2024-08-06", "gpt-4o-mini"]


def test_the_audit_recomputes_the_same_per_model_figures(stored):
    from ek_agents.stages import audit

    result = audit.audit(Store(stored), "multi")
    assert result.passed, result.problems
    manifest = Store(stored).read_manifest("multi")
    assert manifest["results"]["dollars_upper_bound"] is True
    from ek_agents.records.manifest import RunManifest

    assert RunManifest.from_dict(manifest).headline().endswith("(upper bound)")


def test_json_report_from_the_cli(stored, capsys):
    assert main(["report", "multi", "--json", "--store", stored]) == 0
    cost = json.loads(capsys.readouterr().out)["cost"]
    assert list(cost["per_model"]) == ["gpt-4o-2024-08-06", "gpt-4o-mini"] and cost["upper_bound"] is True


def test_markdown_reports_show_the_breakdown_and_the_upper_bound(stored, capsys):
    run = load_runs(stored, ["multi"])[0]
    assert run.upper_bound and list(run.per_model) == ["gpt-4o-2024-08-06", "gpt-4o-mini"]
    assert RunSummary.from_dict(json.loads(json.dumps(run.to_dict()))) == run
    md = render_markdown([run])
    assert "| model | calls | input tokens | cached input | cache writes | output tokens | reasoning | dollars |" in md
    assert "| gpt-4o-2024-08-06 | 6 | 9,000 | 6,144 | 0 | 1,320 | 0 | $0.028 |" in md
    assert "| gpt-4o-mini | 6 | 18,000 | 0 | 0 | 2,400 | 0 | $0.00414 (upper bound) |" in md
    assert "| ≤ $0.0322 | ≤ $0.0" in md                        # the overview's dollars, marked
    assert "**Upper bound:** dollars $0.0322 (upper bound): 2 of 12 model call(s)" in md
    one = report_markdown(*run_report(Store(stored), "multi"))
    assert "| gpt-4o-mini | 6 | 18000 | 0 | 0 | 2400 | 0 | $0.00414 (upper bound) |" in one
    assert "**Upper bound:** dollars $0.03216 (upper bound):" in one
    assert main(["report", "multi", "--store", stored]) == 0       # the one-run text of the CLI
    assert "Per model:" in capsys.readouterr().out
    assert table_rows(run)[0]["dollars"] == "$0.0322 (upper bound)"
    assert "dollars $0.0322 (upper bound), cost per success" in log_lines(run)[2]


def test_html_report_shows_the_breakdown_and_the_upper_bound(stored):
    page = render_html(load_runs(stored, ["multi"]))
    table = re.search(r'<table class="per-model">.*?</table>', page, re.S).group(0)
    assert table.count("<tr>") == 3 and "<td>gpt-4o-mini</td>" in table
    assert "<td>$0.00414 (upper bound)</td>" in table and "<td>$0.028</td>" in table
    assert page.count('<span class="upper-bound"') == 2            # dollars and cost per success
    assert re.search(r'<p class="note upper-bound"[^>]*><b>Upper bound:</b> 2 of 12 model call', page)
    assert "<td>≤ $0.0322</td>" in page


BINARY = chromium_binary()


@pytest.mark.skipif(BINARY is None, reason="chromium is not installed (apt-get install chromium); "
                                           ".ci/run installs it in CI")
def test_chromium_shows_the_per_model_table_and_the_mark(stored, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_html(load_runs(stored, ["multi"])), encoding="utf-8")
    b = DevToolsPage(BINARY, str(tmp_path / "profile"))
    try:
        b.open(path.as_uri())
        dom = b.dom()
        seen = b.send("Runtime.evaluate", expression=(
            "JSON.stringify({rows: [...document.querySelectorAll('table.per-model tbody tr')]"
            ".map(r => [...r.cells].map(c => c.innerText)),"
            " mark: [...document.querySelectorAll('.upper-bound')].map(e => [e.tagName, e.innerText,"
            " getComputedStyle(e).color, e.getBoundingClientRect().height > 0])})"),
            returnByValue=True)
    finally:
        b.close()
    shown = json.loads(seen["result"]["value"])
    assert shown["rows"][0][0] == "gpt-4o-2024-08-06" and shown["rows"][1][-1] == "$0.00414 (upper bound)"
    # the two marks after the run's dollars and cost per success, the overview's note, the
    # run's reason: each drawn (not hidden), in the mark's colour
    assert [(m[0], m[1]) for m in shown["mark"] if m[0] == "SPAN"] == [("SPAN", "(upper bound)")] * 2
    notes = [m[1] for m in shown["mark"] if m[0] == "P"]
    assert notes[0].startswith("≤: an upper bound") and notes[1].startswith("Upper bound: 2 of 12 model call(s)")
    assert len(shown["mark"]) == 4 and all(visible for *_, visible in shown["mark"])
    assert all(color == "rgb(163, 82, 0)" for _, _, color, _ in shown["mark"])
    assert "Per model" in dom
