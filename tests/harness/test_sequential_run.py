"""A persisted sequential run: stored trial by trial, recorded like any run, audited, re-gated."""
from __future__ import annotations

import json

import numpy as np

from ek_agents.records import baselines, documents
from ek_agents.stages import evaluate as stages
from ek_agents import run_suite
from ek_agents.stages.audit import audit
from ek_agents.base import TaskSpec
from ek_agents.records.manifest import RunManifest, report_markdown
from ek_agents.core import canonical_json
from ek_agents.records.segments import RunSegments, encode_segment, read_segment
from ek_agents.store import Store

from .layout import held_lines

TASKS = [TaskSpec(f"t{i:02d}", input=str(i), gold="ok") for i in range(40)]


def _agent(p, calls=None):
    def agent(task, *, seed):
        if calls is not None:
            calls.append((task.task_id, seed))
        rng = np.random.default_rng([int(task.task_id[1:]), seed])
        return "ok" if rng.random() < p else "no"
    return agent


def test_persisted_sequential_run_stops_early_is_recorded_audited_and_regated(tmp_path):
    st = Store(str(tmp_path / "store"))
    run_suite(_agent(0.8), TASKS, k=4, seed=0, check="output", run_id="base", rootdir=st)
    baselines.promote(st, "base", "good")
    fixed_calls: list = []
    run_suite(_agent(0.2, fixed_calls), TASKS, k=4, seed=50, check="output", run_id="fixed",
              rootdir=st)
    calls: list = []
    r = run_suite(_agent(0.2, calls), TASKS, k=4, seed=50, check="output", baseline="good",
                  sequential=True, persist=True, run_id="seq", rootdir=st)
    assert len(fixed_calls) == 160 and 0 < len(calls) < len(fixed_calls)
    assert r.detail["run_id"] == "seq" and r.n_trials == len(calls)
    # every trial the gate ran is stored, and nothing more
    assert len(held_lines(st, "seq")) == len(calls)
    man = RunManifest.from_dict(st.read_manifest("seq"))
    assert man.sequential is not None and man.sequential.stopped_early
    assert man.sequential.decision == "regression" and not man.sequential.passed
    assert man.sequential.trials_run == len(calls) and man.sequential.trials_planned == 160
    assert man.sequential.reason.startswith("regression at look 1 of 4")
    assert man.gate["passed"] is False and man.gate["test"] == "sequential"
    assert man.gate["reasons"] == [man.sequential.reason] and man.gate["baseline"] == "good"
    assert man.results["n_trials"] == len(calls)
    shown = report_markdown(*documents.run_report(st, "seq"))
    assert "stopped early, 40 of 160 planned trials" in shown and "regression at look 1" in shown
    # the audit recomputes the sequential verdict from the stored episodes; gate reproduces it
    result = audit(st, "seq")
    assert result.passed, result.problems
    assert any(c.startswith("recomputed gate verdict") for c in result.checked)
    assert stages.gate_run(st, "seq", "good") == st.read_manifest("seq")["gate"]
    # a tampered episode changes the replayed verdict's inputs: the audit says so
    entry = RunSegments.load(st, "seq").entries[0][1]
    lines = [json.loads(t.data) for t in read_segment(st, entry)]
    lines[0]["output"] = "ok" if lines[0]["output"] != "ok" else "no"
    st.write_bytes(entry.key, encode_segment([canonical_json(d) for d in lines]))
    assert not audit(st, "seq").passed


def test_persisted_sequential_run_of_the_same_agent_passes_and_audits(tmp_path):
    st = Store(str(tmp_path / "store"))
    base = run_suite(_agent(0.8), TASKS, k=4, seed=0, check="output")
    r = run_suite(_agent(0.8), TASKS, k=4, seed=90, check="output", baseline=base,
                  sequential=True, run_id="same", rootdir=st)
    man = st.read_manifest("same")
    assert r.detail["sequential"]["passed"] and man["gate"]["passed"]
    assert man["sequential"]["trials_run"] == r.n_trials
    assert audit(st, "same").passed


def test_sequential_run_refuses_an_incomparable_baseline_before_calling_the_agent(tmp_path):
    from ek_agents.base import RunProvenance
    from ek_agents.errors import IncomparableRuns
    import pytest

    base = run_suite(_agent(0.8), TASKS, k=2, seed=0, check="output",
                     run=RunProvenance(suite_version="1"))
    calls: list = []
    with pytest.raises(IncomparableRuns, match="suite_version"):
        run_suite(_agent(0.8, calls), TASKS, k=2, seed=1, check="output", baseline=base,
                  sequential=True, run=RunProvenance(suite_version="2"))
    assert calls == []
