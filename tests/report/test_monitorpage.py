"""A monitored series' HTML page as headless Chromium builds it: the three plots (corrected
success with its band beside the judge's raw rate, alerts marked; dollars per corrected success;
the agent's dollars per model and the evaluation cost apart), one row per window, no request."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from bench.bench_monitor import simulate_series
from ek_agents.monitor import SeriesRow
from ek_agents.report.monitorpage import SERIES_PLOTS, series_page

from .reportkit import DevToolsPage, chromium_binary

BINARY = chromium_binary()
if BINARY is None:
    if os.environ.get("CI") or os.environ.get("EK_REQUIRE_CHROMIUM"):
        raise RuntimeError("chromium is not installed: .ci/run installs it (apt-get install chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium)", allow_module_level=True)


def _rows() -> list:
    # a simulated drifting series (0.80 -> 0.65 from window 11), as the monitor's rows
    res = simulate_series(np.random.default_rng(4), [0.8] * 10 + [0.65] * 5)
    rows = []
    for i, (p, rate, al) in enumerate(res):
        rows.append(SeriesRow(
            window_id=f"d{i + 1:02d}", traces=400, judged=400, labels=40, labels_used=40 * (i + 1),
            judge_rate=rate.judge_rate, corrected=rate.estimate, corrected_ci=list(rate.ci),
            dollars_per_success=0.004 / rate.estimate, agent_per_model={"gpt-4o": 1.2, "mini": 0.1},
            evaluation_dollars=0.05, alert=al.alert, reasons=list(al.reasons),
            sentence=f"window d{i + 1:02d}: 400 traces, 400 judged, 40 labels"))
    return rows


def test_series_page_in_chromium(tmp_path):
    rows = _rows()
    path = tmp_path / "series.html"
    path.write_text(series_page("prod", rows), encoding="utf-8")
    b = DevToolsPage(BINARY, str(tmp_path / "profile"))
    try:
        b.open(path.as_uri())
        dom = b.dom()
        assert b.requests == [path.as_uri()] and b.blocked == []
    finally:
        b.close()
    for name in SERIES_PLOTS:
        assert f'data-plot="{name}"' in dom
    assert re.search(r'<polygon class="band"[^>]*points="[\d.,\s]+"', dom)
    assert dom.count('class="corrected"') == 1 and dom.count('class="judge-rate"') == 1
    assert len(re.findall(r'<circle class="alert"', dom)) == sum(r.alert for r in rows) >= 1
    assert len(re.findall(r'class="dollars"', dom)) == 3  # two agent models + the evaluation
    assert dom.count("<tr>") == 16 and "fell by" in dom


def test_labeling_page_in_chromium(tmp_path):
    from ek_agents.labels import read_labels
    from ek_agents.report.monitorpage import labeling_page

    rows = [{"task_id": f"t{i}", "trial": 0, "gold": None, "slice": "r0" if i % 2 else "r1",
             "input": f"look up <k{i}>", "output": f"SUMMARY(t{i})"} for i in range(4)]
    path = tmp_path / "label.html"
    path.write_text(labeling_page("prod", "d01", rows), encoding="utf-8")
    b = DevToolsPage(BINARY, str(tmp_path / "profile"))
    try:
        b.open(path.as_uri())
        dom = b.dom()
        assert dom.count('<fieldset class="trace"') == 4 and "look up &lt;k2&gt;" in dom
        assert "verdict" not in dom.lower()
        for i, choice in ((0, "PASS"), (1, "FAIL"), (3, "PASS")):  # trace 2 left unlabeled
            b.send("Runtime.evaluate", expression=f"document.querySelector("
                   f"'input[name=l{i}][value={choice}]').click()")
        b.send("Runtime.evaluate", expression="document.getElementById('save-button').click()")
        saved = b.send("Runtime.evaluate", returnByValue=True, expression=(
            "[document.getElementById('saved').textContent, "
            "document.getElementById('save').href.slice(0, 5)]"))["result"]["value"]
        assert b.blocked == [] and b.requests[0] == path.as_uri()
    finally:
        b.close()
    labs = read_labels(saved[0].encode(), where="saved")
    assert [(x.task_id, x.gold) for x in labs.labels] == [("t0", True), ("t1", False),
                                                           ("t3", True)]
    assert labs.unfilled == 1 and saved[1] == "blob:"
