"""The report's rules (Pareto frontier, formatting, comparability) and the report of real runs."""
from __future__ import annotations

import json
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from ek_agents.cli import main
from ek_agents.errors import ArtifactNotFound, InvalidInput
from ek_agents.report.htmlreport import render_html, render_markdown, write_report
from ek_agents.report.runsummary import (fmt_count, fmt_dollars, fmt_interval, fmt_percent, fmt_seconds,
                                  RunSummary, load_runs, pareto_frontier, summarize_run)
from ek_agents.store import Store, run_key

from .reportkit import BASELINE, GATED

# --------------------------------------------------------------------------- Pareto rule


def test_a_run_is_on_the_frontier_unless_another_is_as_good_on_both_and_better_on_one():
    #            A: best cheap   B: best overall  C: dominated by A  D: = A (tie)   E: as good as B, dearer
    pts = [(0.6, 0.001), (0.85, 0.004), (0.35, 0.002), (0.6, 0.001), (0.85, 0.005)]
    assert pareto_frontier(pts) == [True, True, False, True, False]
    # equal cost, less success: dominated; equal success, lower cost: dominates
    assert pareto_frontier([(0.5, 1.0), (0.4, 1.0)]) == [True, False]
    assert pareto_frontier([(0.5, 1.0), (0.5, 0.9)]) == [False, True]


def test_unknown_or_infinite_cost_on_the_frontier():
    inf = float("inf")
    # unknown cost (None / NaN) is never on it and dominates nothing
    assert pareto_frontier([(0.9, None), (0.5, 1.0)]) == [False, True]
    assert pareto_frontier([(0.9, float("nan")), (0.5, 1.0)]) == [False, True]
    # nothing succeeded: infinite cost, dominated by any run with a success
    assert pareto_frontier([(0.0, inf), (0.1, 5.0)]) == [False, True]
    assert pareto_frontier([(0.0, inf)]) == [True]
    assert pareto_frontier([]) == []


_point = hs.tuples(hs.floats(0, 1), hs.floats(0.0001, 10))


@given(hs.lists(_point, max_size=12))
def test_frontier_matches_the_definition(points):
    on = pareto_frontier(points)
    front = [p for p, f in zip(points, on) if f]

    def dominates(q, p):
        return q[0] >= p[0] and q[1] <= p[1] and (q[0] > p[0] or q[1] < p[1])

    assert not any(dominates(q, p) for p in front for q in points)      # nobody beats a frontier run
    for p, f in zip(points, on):
        if not f:                                                        # a dominated run is beaten by
            assert any(dominates(q, p) for q in front)                   # a run on the frontier
    assert bool(points) == bool(front)


# --------------------------------------------------------------------------- formatting


def test_numbers_are_formatted_for_people():
    assert fmt_percent(0.3645833333333333) == "36.5%"
    assert fmt_percent(1) == "100.0%" and fmt_percent(0.0) == "0.0%" and fmt_percent(None) == "n/a"
    assert fmt_percent("NaN") == "n/a"
    assert [fmt_dollars(x) for x in (0.00076879375, 0.0369021, 0.5, 0.9996, 12.3456, 1234.5, 0)] == \
        ["$0.000769", "$0.0369", "$0.50", "$1.00", "$12.35", "$1,234.50", "$0.00"]
    assert fmt_dollars(None) == "unknown"                       # unknown cost is not $0
    assert fmt_dollars(float("inf")) == fmt_dollars("Infinity") == "∞ (no success)"
    assert fmt_dollars(-0.02) == "-$0.02"
    assert fmt_interval([0.5517938807199863, 0.7646551393428815], fmt_percent) == "[55.2%, 76.5%]"
    assert fmt_interval(None, fmt_percent) == "" and fmt_interval([0.1], fmt_percent) == ""
    assert fmt_count(298950) == "298,950" and fmt_count(None) == "n/a"
    assert fmt_seconds(0.35) == "350 ms" and fmt_seconds(2.746354166666667) == "2.75 s"


def test_the_run_that_said_it_reused_episodes_says_so():
    manifest = {"run_id": "r", "reused": {"episodes": 12, "from": "r0"}}
    assert summarize_run(manifest, {"k": 1}).reused == "12 episodes from run r0"
    assert summarize_run({"run_id": "r", "reused": False}, {"k": 1}).reused == "no"
    assert summarize_run({"run_id": "r", "stages": {"episodes": {"cached": True}}},
                         {"k": 1}).reused.startswith("yes")
    assert summarize_run({"run_id": "r"}, {"k": 1}).reused == "unknown"


# --------------------------------------------------------------------------- real runs

_RAW_FLOAT = re.compile(r"\d\.0*[1-9]\d{4,}")  # 5+ significant digits: 0.3645833333333333


def test_summaries_carry_the_stored_figures(stored_runs):
    root, ids = stored_runs
    runs = load_runs(root, ids)
    assert [r.run_id for r in runs] == ids
    st = Store(root)
    for r in runs:
        rep = st.read_json(run_key(r.run_id, "report"))
        assert r.success_rate == rep["success_rate"] and r.k == rep["k"] == 4
        assert [k for k, *_ in r.pass_hat] == [1, 2, 3, 4]
        assert r.pass_hat[-1][1] == pytest.approx(rep["pass_hat_k"])        # the curve ends at the report
        assert r.pass_hat[0][1] == pytest.approx(rep["success_rate"])       # pass^1 = success rate
        assert all(lo <= v <= hi for _, v, lo, hi in r.pass_hat)
        assert [v for _, v, _, _ in r.pass_hat] == sorted((v for _, v, _, _ in r.pass_hat), reverse=True)
        assert r.cost_per_success == pytest.approx(rep["cost"]["cost_per_success"])
        assert r.agent.startswith("examples.shop.agents:") and r.reused == "no"
        assert {s.slice for s in r.slices} == set(rep["per_slice"]) and r.tokens["total_tokens"] > 0
        assert RunSummary.from_dict(json.loads(json.dumps(r.to_dict()))) == r     # a typed shape
    gated = {r.run_id: r for r in runs}[GATED]
    assert gated.gate["baseline"] == BASELINE and isinstance(gated.gate["passed"], bool)
    assert sum(r.gate is not None for r in runs) == 1


def test_markdown_report_of_real_runs(stored_runs):
    root, ids = stored_runs
    runs = load_runs(root, ids)
    md = render_markdown(runs)
    assert not _RAW_FLOAT.search(md)
    overview = [line for line in md.splitlines() if line.startswith("| ") and line.count("|") == 14]
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in overview[1:]}
    assert set(rows) == set(ids)
    # group B (another scaffold) is marked; each group has its own frontier
    assert rows["large-v2"][3] == "B" and {rows[i][3] for i in ids if i != "large-v2"} == {"A"}
    assert rows["large-v2"][-1] == "yes |"                     # alone in its group
    by_id = {r.run_id: r for r in runs}
    assert by_id["large-0"].success_rate > by_id["small-0"].success_rate
    assert by_id["large-0"].cost_per_success > by_id["small-0"].cost_per_success
    assert rows["large-0"][-1] == rows["small-0"][-1] == "yes |"
    assert rows["degraded-0"][-1] == "no |"                    # less success for more dollars than small-0
    assert "## Series over time: examples.shop.agents:small_agent (group A)" in md
    assert f"**Gate** vs baseline `{BASELINE}`" in md
    assert "episodes reused: no" in md


def _attr_points(svg: str, group: str) -> set:
    return {float(x) for x in re.findall(
        rf'<g class="run-point whisker" data-run="[^"]+" data-group="{group}"[^>]*>.*?<circle cx="([\d.]+)"',
        svg)}


def test_frontier_lines_never_join_incomparable_runs(stored_runs):
    root, ids = stored_runs
    page = render_html(load_runs(root, ids))
    svg = re.search(r'<svg[^>]*data-plot="cost-vs-success".*?</svg>', page, re.S).group(0)
    lines = re.findall(r'<polyline class="frontier" data-group="(\d+)" points="([^"]+)"', svg)
    assert [g for g, _ in lines] == ["0"]                      # group B has one run: no line
    xs = {float(p.split(",")[0]) for p in lines[0][1].split()}
    assert xs <= _attr_points(svg, "0") and not xs & _attr_points(svg, "1")
    assert svg.count('data-frontier="true"') == 3               # small-0, large-0, large-v2
    assert not _RAW_FLOAT.search(re.sub(r"<[^>]+>", " ", page))  # no raw floats in the text


def test_cli_writes_both_reports_and_keeps_the_single_run_text(stored_runs, tmp_path, capsys):
    root, ids = stored_runs
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", *ids, "--html", str(html), "--markdown", str(md), "--store", root]) == 0
    out = capsys.readouterr().out
    assert str(html) in out and str(md) in out
    assert html.read_text().startswith("<!DOCTYPE html>") and md.read_text().startswith("# ek-agents report")
    assert main(["report", "small-0", "--store", root]) == 0
    assert "run `small-0`" in capsys.readouterr().out             # the one-run text, as before
    assert main(["report", "small-0", "--json", "--store", root]) == 0
    assert json.loads(capsys.readouterr().out)["k"] == 4
    assert main(["report", "small-0", "large-0", "--json", "--store", root]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"small-0", "large-0"}
    assert main(["report", "small-0", "large-0", "--store", root]) == 0
    assert "| small-0 |" in capsys.readouterr().out
    assert main(["report", "small-0", "nope", "--html", str(html), "--store", root]) == 2
    assert "'nope'" in capsys.readouterr().err


def test_bad_input_names_the_value(stored_runs, tmp_path):
    root, _ = stored_runs
    with pytest.raises(ArtifactNotFound, match="'no-such-run'"):
        load_runs(root, ["no-such-run"])
    with pytest.raises(InvalidInput, match="non-empty list of run ids"):
        load_runs(root, [])
    with pytest.raises(InvalidInput, match="non-empty list"):
        load_runs(root, "small-0")                             # a string, not a list of ids
    with pytest.raises(InvalidInput, match="at least one"):
        render_html([])
    assert write_report(root, ["small-0"]) == {}


def test_unknown_and_infinite_costs_are_said_not_drawn():
    def run(rid, success, cost):
        report = {"k": 2, "n_trials": 8, "n_success": round(8 * success), "success_rate": success,
                  "success_ci": [0.0, 0.5], "per_task": {"t1": {"n": 4, "c": round(4 * success)},
                                                          "t2": {"n": 4, "c": round(4 * success)}},
                  "cost": {} if cost is None else {"total_dollars": 0.4, "cost_per_success": cost}}
        return summarize_run({"run_id": rid, "provenance": {"scaffold": "s"}}, report)

    runs = [run("none-ok", 0.0, "Infinity"), run("unpriced", 0.5, None), run("priced", 0.5, 0.1)]
    assert runs[0].cost_per_success == math.inf and runs[1].dollars is None
    assert [p[1] for p in runs[1].pass_hat] == [0.5, pytest.approx(1 / 6)]  # C(2,2)/C(4,2)
    md = render_markdown(runs)
    assert "| none-ok |" in md and "∞ (no success)" in md and "| unknown | unknown |" in md
    page = render_html(runs)
    assert "Not plotted (unknown, zero or infinite cost per success): none-ok, unpriced" in page
    assert page.count('class="run-point whisker"') == 1 and 'class="frontier"' not in page
