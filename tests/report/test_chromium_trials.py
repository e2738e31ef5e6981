"""The report's trial browser as headless Chromium runs it (the helper of ``test_chromium``):
a failing trial of the shop demo opened to its tool calls, model calls and gold; a filter to one
slice; two runs compared and a task that got worse opened; markup in stored values stays text."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")

import ek_agents
from ek_agents.base import Episode, Step, TaskSpec, Trajectory
from ek_agents.report.htmlreport import write_report
from ek_agents.report.runsummary import fmt_dollars
from ek_agents.report.trialbrowser import MAX_TEXT
from ek_agents.execution.harness import run_suite
from ek_agents.store import Store

from .reportkit import DevToolsPage, chromium_or_skip

BINARY = chromium_or_skip()


@pytest.fixture
def browser(tmp_path):
    b = DevToolsPage(BINARY, str(tmp_path / "profile"))
    yield b
    b.close()


def js(b: DevToolsPage, expr: str):
    out = b.send("Runtime.evaluate", expression=expr, returnByValue=True)
    if "exceptionDetails" in out:
        raise AssertionError(f"page script failed: {out['exceptionDetails']}")
    return out["result"].get("value")


HELPERS = """
window.T = {
  root: function(run){ return document.querySelector('.trial-browser[data-run="' + run + '"]'); },
  set: function(run, role, value){ var e = T.root(run).querySelector('[data-role=' + role + ']');
    if (e.type === 'checkbox') e.checked = value; else e.value = value;
    e.dispatchEvent(new Event(e.type === 'search' ? 'input' : 'change')); },
  rows: function(run){ return Array.from(T.root(run).querySelectorAll('tr.trial-row')).map(function(r){
    return Array.from(r.children).map(function(c){ return c.textContent; }); }); },
  open: function(run, trial){ var r = Array.from(T.root(run).querySelectorAll('tr.trial-row'))
    .filter(function(r){ return r.children[2].textContent === String(trial); })[0]; r.click();
    return r.nextSibling; },
};
"""


def test_open_a_failing_shop_trial_filter_a_slice_and_compare_two_runs(stored_runs, tmp_path, browser):
    root, ids = stored_runs
    page = tmp_path / "report.html"
    write_report(root, ids, html=str(page))
    trials = ek_agents.trials_frame(ids, store=root)
    steps = ek_agents.steps_frame(["degraded-0"], store=root)
    browser.open(page.as_uri())
    assert js(browser, "document.body.getAttribute('data-trials-ready')") == "1"
    assert browser.requests == [page.as_uri()] and browser.blocked == []
    js(browser, HELPERS)

    # a failing trial of the degraded agent with tool calls, opened from its row
    mine = trials[(trials["run_id"] == "degraded-0") & ~trials["success"] & (trials["n_steps"] >= 2)]
    row = mine.sort_values(["task_id", "trial"]).iloc[0]
    js(browser, f"T.set('degraded-0', 'task', {json.dumps(row.task_id)})")
    assert all(r[0] == row.task_id for r in js(browser, "T.rows('degraded-0')"))
    detail = js(browser, f"""(function(){{ var d = T.open('degraded-0', {int(row.trial)});
        var q = function(s){{ return Array.from(d.querySelectorAll(s)); }};
        var rect = function(s){{ var r = d.querySelector(s).getBoundingClientRect(); return [r.left, r.top]; }};
        return {{steps: q('tr.step').map(function(r){{ return [r.querySelector('.tool').textContent,
                    r.querySelector('.args').textContent, r.querySelector('.result').textContent]; }}),
                 calls: q('tr.call').map(function(r){{ return Array.from(r.children).map(function(c){{ return c.textContent; }}); }}),
                 output: d.querySelector('.output pre').textContent, gold: d.querySelector('.gold pre').textContent,
                 left: rect('.output'), right: rect('.gold'), diff: q('pre.diff span').length}}; }})()""")
    want = steps[(steps["task_id"] == row.task_id) & (steps["trial"] == row.trial)].sort_values("step")
    assert [s[0] for s in detail["steps"]] == list(want["tool"])
    for (tool, args, result), (_, w) in zip(detail["steps"], want.iterrows()):
        assert json.loads(args) == json.loads(w["args"])                      # the arguments
        assert (json.loads(result) == json.loads(w["observation"])) if pd.isna(w["error"]) \
            else result == f"error: {w['error']}"                             # the result or error
    # its model calls: the model that answered, its tokens and its dollars
    assert len(detail["calls"]) == 1
    _, model, tokens_in, _, tokens_out, _, dollars, _ = detail["calls"][0]
    assert model == row.model and int(tokens_in) == row.input_tokens and int(tokens_out) == row.output_tokens
    assert dollars == fmt_dollars(row.dollars) and float(dollars[1:]) == pytest.approx(row.dollars, rel=5e-3)
    # the output and the gold side by side, and the calls against the gold's
    gold = Store(root).read_json(f"runs/degraded-0/tasks.json")["tasks"]
    gold = next(t["gold"] for t in gold if t["task_id"] == row.task_id)
    assert json.loads(detail["gold"]) == gold and detail["output"] == str(row.output)
    assert detail["right"][0] > detail["left"][0] and detail["right"][1] == detail["left"][1]
    assert detail["diff"] >= len(gold["calls"])

    # filter to one slice: every row shown is of it, as many as the frame has
    js(browser, "T.set('small-0', 'slice', 'refund')")
    shown = js(browser, "T.rows('small-0')")
    assert {r[1] for r in shown} == {"refund"}
    assert len(shown) == int(((trials["run_id"] == "small-0") & (trials["slice"] == "refund")).sum())

    # compare two runs: the large agent against the degraded one; the worst task opened
    idx = {rid: i for i, rid in enumerate(ids)}
    js(browser, f"""(function(){{ var a = document.querySelector('select[data-role=base]'),
        b = document.querySelector('select[data-role=other]'); a.value = '{idx["large-0"]}';
        b.value = '{idx["degraded-0"]}'; b.dispatchEvent(new Event('change')); }})()""")
    worst = js(browser, """(function(){ var r = document.querySelector('table.compare tr.task-row');
        return [r.className, r.getAttribute('data-task'), r.children[4].textContent]; })()""")
    rate = trials.groupby(["run_id", "task_id"])["success"].mean()
    drops = {t: rate["degraded-0"][t] - rate["large-0"][t] for t in rate["large-0"].index}
    assert "worse" in worst[0] and drops[worst[1]] == min(drops.values()) < 0
    assert worst[2] == f"{100 * drops[worst[1]]:.1f} pt"
    js(browser, "document.querySelector('table.compare tr.task-row button.open-task').click()")
    opened = js(browser, "T.rows('degraded-0')")
    assert {r[0] for r in opened} == {worst[1]} and len(opened) == 4   # k = 4 trials, one click away
    assert js(browser, "T.open('degraded-0', 0).querySelectorAll('tr.call').length") == 1


def test_markup_in_task_ids_outputs_and_arguments_stays_text_and_long_values_are_cut(tmp_path, browser):
    evil = '</script><img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'

    def agent(task, *, seed=0):
        return Episode(task.task_id, output=evil + "x" * (3 * MAX_TEXT),
                       trajectory=Trajectory((Step("lookup", {"q": evil}, observation=evil, error=evil),)))

    tasks = [TaskSpec(evil, input="q", gold={"answer": evil}, slice=evil), TaskSpec("plain", input="q", gold="g")]
    run_suite(agent, tasks, k=1, persist=True, run_id="evil", rootdir=str(tmp_path / "st"), progress=False)
    page = tmp_path / "evil.html"
    write_report(str(tmp_path / "st"), ["evil"], html=str(page))
    text = page.read_text(encoding="utf-8")
    assert "<img" not in text and text.count("</script>") == 2  # the data block's and the script's
    browser.open(page.as_uri())
    assert js(browser, "document.body.getAttribute('data-trials-ready')") == "1"
    js(browser, HELPERS)
    row = js(browser, "T.rows('evil').filter(function(r){ return r[0] !== 'plain'; })[0]")
    assert row[0] == evil and row[1] == evil
    got = js(browser, """(function(){ var r = Array.from(document.querySelectorAll('tr.trial-row'))
        .filter(function(r){ return r.getAttribute('data-task') !== 'plain'; })[0]; r.click();
        var d = r.nextSibling; return [d.querySelector('.args').textContent, d.querySelector('.result').textContent,
        d.querySelector('.output pre').textContent, d.querySelector('.gold pre').textContent]; })()""")
    assert json.loads(got[0]) == {"q": evil} and got[1] == f"error: {evil}"
    assert got[2].startswith(evil) and got[2].endswith(f"… [{len(evil) + 3 * MAX_TEXT - MAX_TEXT:,} more characters]")
    assert json.loads(got[3]) == {"answer": evil}
    assert js(browser, "document.querySelectorAll('img').length") == 0
    assert js(browser, "window.__pwned === undefined")
    assert browser.requests == [page.as_uri()] and browser.blocked == []
