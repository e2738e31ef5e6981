"""The trial browser's bounds: a run larger than the table holds keeps its failing trials and
counts the rest per task; the per-task figures stay whole."""
from __future__ import annotations

import json

import pytest

from ek_agents.base import Episode, TaskSpec
from ek_agents.report import trialbrowser
from ek_agents.report.trialdata import TrialsUnreadable
from ek_agents.execution.harness import run_suite


def _data(section) -> dict:
    return json.loads(section.html.split('id="ek-trials">', 1)[1].split("</script>", 1)[0])


def _agent(task, *, seed=0):
    n = int(task.task_id[1:])
    return Episode(task.task_id, output=task.gold if (n + seed) % 3 else "wrong")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("browser-bounds"))
    tasks = [TaskSpec(f"t{i:02d}", input="q", gold=f"g{i}", slice="ab"[i % 2]) for i in range(30)]
    run_suite(_agent, tasks, k=2, seed=0, persist=True, run_id="big", rootdir=root, progress=False)
    return root


def test_a_run_beyond_the_bound_keeps_failing_trials_and_counts_the_rest(store, monkeypatch):
    whole = _data(trialbrowser.trial_browser(store, ["big"]))["runs"][0]
    assert len(whole["trials"]) == 60 and whole["omitted"] == ""
    failing = [r for r in whole["trials"] if not r[3]]
    monkeypatch.setattr(trialbrowser, "MAX_TRIALS", 15)
    cut = _data(trialbrowser.trial_browser(store, ["big"]))["runs"][0]
    assert len(failing) == 20 and len(cut["trials"]) == 15 and not any(r[3] for r in cut["trials"])
    assert len(cut["details"]) == 15
    assert cut["tasks"] == whole["tasks"]                     # per-task counts of every trial
    assert "more than the 15 a table holds" in cut["omitted"] and "45 trials are not" in cut["omitted"]
    monkeypatch.setattr(trialbrowser, "MAX_TRIALS", 40)
    cut = _data(trialbrowser.trial_browser(store, ["big"]))["runs"][0]
    assert sorted(map(tuple, (r[:3] for r in cut["trials"]))) == sorted(tuple(r[:3]) for r in failing)


def test_values_are_cut_saying_how_much_and_the_data_block_cannot_close_its_script():
    assert trialbrowser.clip("y" * 10, 4) == "yyyy… [6 more characters]"
    assert trialbrowser.clip({"a": 1}) == '{\n  "a": 1\n}' and trialbrowser.clip(None) is None
    section = trialbrowser.browser_section([])
    assert "script-src" not in section.script_source and section.script_source.startswith("'sha256-")
    block = trialbrowser.json_block({"x": "</script><b>&\u2028"})
    assert "<" not in block and ">" not in block and "&" not in block and json.loads(block)["x"].startswith("</script>")


def test_past_the_run_budget_trials_keep_their_rows_not_their_trajectories(store, monkeypatch):
    monkeypatch.setattr(trialbrowser, "MAX_RUN_TEXT", 1)
    run = _data(trialbrowser.trial_browser(store, ["big"]))["runs"][0]
    assert len(run["trials"]) == 60 and run["details"][0] is not None
    assert run["details"][1:] == [None] * 59 and "last 59 trials listed are not kept" in run["omitted"]



def test_a_run_whose_trials_cannot_be_read_back_is_named_and_the_rest_stands(store, monkeypatch):
    real = trialbrowser.open_run

    def opening(st, rid):
        if rid == "opaque":
            raise TrialsUnreadable(f"run {rid!r} has neither trial segments <its checker> ...")
        return real(st, rid)

    monkeypatch.setattr(trialbrowser, "open_run", opening)
    section = trialbrowser.trial_browser(store, ["opaque", "big"])
    assert "run &#x27;opaque&#x27; has neither trial segments &lt;its checker&gt;" in section.html
    assert [r["id"] for r in _data(section)["runs"]] == ["big"]
