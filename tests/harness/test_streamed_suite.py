"""A persisted run_suite with storable inputs streams its report from its segments: the same
figures as the run in memory, no whole-run episodes or graded document, an audit that passes;
a run whose trials record their model calls is reported in memory (its per-model breakdown)."""
from __future__ import annotations

import dataclasses

from ek_agents.base import Cost, Episode, ModelCall, TaskSpec
from ek_agents.execution.harness import run_suite
from ek_agents.stages import audit
from ek_agents.stages.streaming import STREAMED
from ek_agents.store import Store

TASKS = [TaskSpec(f"t{i}", input=i, gold="ok", slice="even" if i % 2 == 0 else "odd")
         for i in range(30)]


def _agent(task, *, seed):
    return "ok" if (task.input * 7 + seed * 13) % 5 < 3 else "no"


def _figures(report):
    doc = report.to_dict()
    doc["detail"] = {k: v for k, v in doc["detail"].items() if k not in ("run_id", "store", "reused")}
    return doc


def test_the_streamed_report_is_the_in_memory_one_and_audits(tmp_path):
    st = Store(str(tmp_path))
    plain = run_suite(_agent, TASKS, k=4, seed=3)
    stored = run_suite(_agent, TASKS, k=4, seed=3, run_id="s", rootdir=st.url, flush_s=0.01)
    assert _figures(stored) == _figures(plain)
    manifest = st.read_manifest("s")
    assert manifest["parameters"]["layout"] == STREAMED
    assert not st.exists("runs/s/episodes.json") and not st.exists("runs/s/graded.json")
    result = audit.audit(st, "s")
    assert result.passed, result.problems


def test_trials_with_model_calls_are_reported_in_memory(tmp_path):
    def billed(task, *, seed):
        cost = Cost.of_calls([ModelCall("m", input_tokens=10 + seed)])
        return Episode(output=_agent(task, seed=seed),  # its own latency: not the clock's
                       cost=dataclasses.replace(cost, latency_s=0.5))

    st = Store(str(tmp_path))
    plain = run_suite(billed, TASKS, k=2, seed=0)
    stored = run_suite(billed, TASKS, k=2, seed=0, run_id="b", rootdir=st.url)
    assert "per_model" in stored.cost and _figures(stored) == _figures(plain)
    assert st.exists("runs/b/graded.json") and audit.audit(st, "b").passed
