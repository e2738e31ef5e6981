"""run_suite end to end: grading, metrics with the suite grammar, cost, persistence, baselines."""
from __future__ import annotations

import dataclasses

import pytest

from ek_agents import as_agent, run_suite
from ek_agents.base import Cost, Episode, RunProvenance, Step, TaskSpec, ToolSpec, Trajectory
from ek_agents.core import FieldSpec, Score
from ek_agents.cost import per_million
from ek_agents.errors import IncomparableRuns, InvalidInput, RunMismatch
from ek_agents.execution.harness import (agent_regression_gate, build_report, run_trials,
                                         save_agent_baseline)
from ek_agents.store import Store, run_key
from ek_agents.scoring.toolcalls import ToolCallMetric


def test_spec_quickstart():
    tasks = [TaskSpec("t1", input="hi", gold="HI"), TaskSpec("t2", input="yo", gold="YO")]
    report = run_suite(as_agent(str.upper), tasks)
    assert report.success_rate == 1.0 and report.n_trials == 2
    assert "run_id" not in report.detail  # nothing persisted unless asked


class GrammarSpy:
    """A metric that records the grammar it was given (1.0 per episode)."""

    higher_is_better = True

    def __init__(self, grammar=None):
        self.grammar = grammar
        self.seen = []

    def score(self, pred, gold, *, grammar=None):
        self.seen.append(grammar)
        return Score(1.0)

    def aggregate(self, scores):
        return sum(s.value for s in scores) / len(scores)


def _shop():
    refund = ToolSpec("refund", params={"amount": FieldSpec("amount", "number", importance=20.0)},
                      destructive=True)
    lookup = ToolSpec("lookup", params={"id": FieldSpec("id")})
    gold = [("lookup", {"id": "o1"}), ("refund", {"amount": 5})]
    return [TaskSpec("a", input="o1", gold={"output": "done", "calls": gold}, tools=(lookup,), slice="easy"),
            TaskSpec("b", input="o1", gold={"output": "done", "calls": gold}, tools=(refund,), slice="hard")]


def _shop_agent(task, *, seed):
    steps = [Step("lookup", {"id": task.input})]
    if seed % 2 == 0:
        steps.append(Step("refund", {"amount": 5}))
    return Episode(trajectory=Trajectory(steps), output="done" if seed % 2 == 0 else "gave up",
                   cost=Cost(input_tokens=1000, output_tokens=100),
                   run=RunProvenance(model="m"))


def test_metrics_get_the_suite_grammar_and_cost_is_priced():
    spy, own = GrammarSpy(), GrammarSpy(grammar="mine")
    price = per_million(1.0, 10.0)
    report = run_suite(_shop_agent, _shop(), k=2, seed=0, check="output", price=price,
                       metrics={"spy": spy, "own": own, "calls": ToolCallMetric()})
    assert report.n_trials == 4 and report.success_rate == 0.5
    g = spy.seen[0]
    assert g.node_cost("refund") == 10.0 and g.field_cost("refund", "amount") == 20.0
    assert "lookup" in g  # union over the suite, not one task's tools
    assert own.seen == [None] * 4  # a metric with its own grammar keeps it
    m = report.detail["metrics"]
    assert m["spy"] == 1.0 and 0.0 < m["calls"] < 1.0
    per_episode = 1000 * 1e-6 + 100 * 10e-6
    assert report.cost["total_dollars"] == pytest.approx(4 * per_episode)
    assert report.cost["cost_per_success"] == pytest.approx(2 * per_episode)
    assert set(report.per_slice) == {"easy", "hard"}
    assert report.detail["run"]["model"] == "m" and report.detail["run"]["seed"] == 0


def test_persisted_run_writes_a_manifest_and_generates_a_run_id(tmp_path):
    report = run_suite(_shop_agent, _shop(), k=2, seed=0, persist=True, rootdir=str(tmp_path))
    run_id = report.detail["run_id"]
    st = Store(tmp_path)
    man = st.read_manifest(run_id)
    assert man["run_id"] == run_id and (man["inputs"]["k"], man["inputs"]["seed"]) == (2, 0)
    assert man["results"]["n_tasks"] == 2
    listed = {key: d for key, d in man["artifacts"].items()
              if key.startswith((f"runs/{run_id}/segments/", f"runs/{run_id}/segment-index/"))}
    assert len(listed) == 2 and st.list(f"runs/{run_id}/episodes") == []  # 1 segment + its index
    assert all(st.digest(key) == d for key, d in listed.items())
    report_key = run_key(run_id, "report")
    assert man["artifacts"][report_key] == st.digest(report_key)
    stored = st.read_json(report_key)
    assert stored["n_trials"] == 4 and stored["success_rate"] == 0.5
    again = run_suite(_shop_agent, _shop(), k=2, seed=0, run_id=run_id, rootdir=str(tmp_path))
    assert again.success_rate == 0.5  # everything came from the store
    assert again.detail["reused"]["episodes"] == 4 and again.detail["reused"]["from_run"] == run_id
    calls = []
    with pytest.raises(RunMismatch, match="agent: "):  # another agent never reuses this run
        run_suite(lambda t, seed: calls.append(1), _shop(), k=2, seed=0, run_id=run_id,
                  rootdir=str(tmp_path))
    assert calls == []


def test_a_persisted_run_is_recorded_as_the_pipeline_records_one(tmp_path):
    from ek_agents.stages import audit, evaluate as stages
    from ek_agents.records import baselines, documents

    st = Store(tmp_path)
    report = run_suite(_shop_agent, _shop(), k=2, seed=0, check="output", persist=True,
                       prices={"m": per_million(1.0, 10.0)}, rootdir=str(tmp_path),
                       run=RunProvenance(simulator="sim-1", suite_version="v1"))
    run_id = report.detail["run_id"]
    manifest, doc = documents.run_report(st, run_id)
    assert manifest["results"]["success_rate"] == doc["success_rate"] == report.success_rate == 0.5
    assert manifest["provenance"]["model"] == "m" and manifest["inputs"]["check"] == "output"
    assert doc["cost"]["total_dollars"] == pytest.approx(report.cost["total_dollars"])
    assert set(doc["cost"]["per_slice"]) == {"easy", "hard"}
    result = audit.audit(st, run_id)
    assert result.passed, result.problems
    assert "recomputed metrics and report" in result.checked  # from the segments
    baselines.promote(st, run_id, "lib")
    assert audit.audit(st, baseline="lib").passed
    assert stages.gate_run(st, run_id, "lib")["passed"]


def test_the_audit_names_what_a_library_run_could_not_store(tmp_path):
    from ek_agents.stages import audit, evaluate as stages
    from ek_agents.records import baselines, documents

    st = Store(tmp_path)
    report = run_suite(_shop_agent, _shop(), k=2, seed=0, check=lambda ep, gold: True,
                       persist=True, rootdir=str(tmp_path))
    run_id = report.detail["run_id"]
    assert st.read_manifest(run_id)["inputs"]["check"] == documents.UNSTORED
    result = audit.audit(st, run_id)
    assert not result.passed and len(result.problems) == 1
    assert "callable check" in result.problems[0] and "cannot recompute" in result.problems[0]

    report = run_suite(_shop_agent, _shop(), k=2, seed=0, check="output", persist=True,
                       price=per_million(1.0, 10.0), metrics={"calls": ToolCallMetric()},
                       rootdir=str(tmp_path))
    run_id = report.detail["run_id"]
    inputs = st.read_manifest(run_id)["inputs"]
    assert inputs["price"] == documents.UNSTORED and inputs["metrics"] == ["calls"]
    result = audit.audit(st, run_id)
    assert not result.passed and len(result.problems) == 2, result.problems  # nothing else differs
    assert "report.detail.metrics" in result.problems[0] and "ModelPrice" in result.problems[1]


def test_progress_bar_when_asked(capsys):
    report = run_suite(lambda t: t.gold, [TaskSpec("t", gold="x")], k=3, progress=True)
    assert report.success_rate == 1.0


def test_baseline_and_gate_end_to_end(tmp_path):
    tasks = [TaskSpec(f"t{i}", input=i, gold="ok") for i in range(40)]
    run = RunProvenance(model="m", simulator="sim-1", suite_version="v1")

    def agent(p):
        def fn(task, *, seed):
            import random

            return "ok" if random.Random(f"{task.task_id}:{seed}").random() < p else "no"
        return fn

    base = run_suite(agent(0.9), tasks, k=3, seed=0, run=run)
    save_agent_baseline(base, "main", rootdir=tmp_path)
    same = run_suite(agent(0.9), tasks, k=3, seed=1000, run=run)
    assert agent_regression_gate(same, "main", rootdir=tmp_path).passed
    worse = run_suite(agent(0.4), tasks, k=3, seed=2000, run=run)
    verdict = agent_regression_gate(worse, "main", rootdir=tmp_path)
    assert not verdict.passed and verdict.reasons
    moved = run_suite(agent(0.9), tasks, k=3, seed=0, run=dataclasses.replace(run, simulator="sim-2"))
    with pytest.raises(IncomparableRuns, match="sim-2"):
        agent_regression_gate(moved, "main", rootdir=tmp_path)


def test_build_report_from_separately_run_trials():
    tasks = _shop()
    eps = run_trials(_shop_agent, tasks, k=2, seed=0)
    chunked = (run_trials(_shop_agent, tasks, k=2, seed=0, only=[("a", 0), ("b", 1)])
               + run_trials(_shop_agent, tasks, k=2, seed=0, only=[("a", 1), ("b", 0)]))
    a = build_report(eps, tasks, k=2, check="output")
    b = build_report(chunked, tasks, k=2, check="output")
    assert (a.success_rate, a.pass_hat_k, a.n_trials) == (b.success_rate, b.pass_hat_k, b.n_trials)
    assert a.detail["errors"] == {}


def test_failed_trials_are_reported_and_mixed_provenance_warns():
    def agent(task):
        if task.task_id == "b":
            raise RuntimeError("tool crashed")
        return Episode(output="done", run=RunProvenance(simulator="x" if task.task_id == "a" else "y"))

    tasks = _shop() + [TaskSpec("c", gold={"output": "done"})]
    report = run_suite(agent, tasks)
    assert report.detail["errors"] == {"exception": 1}
    assert any("1 of 3 trials failed" in w for w in report.detail["warnings"])
    assert any("disagree on simulator" in w for w in report.detail["warnings"])


def test_metrics_must_be_a_mapping_of_metrics():
    with pytest.raises(InvalidInput, match="mapping"):
        run_suite(lambda t: 1, [TaskSpec("t", gold=1)], metrics=[GrammarSpy()])
    with pytest.raises(InvalidInput, match="score"):
        run_suite(lambda t: 1, [TaskSpec("t", gold=1)], metrics={"x": object()})


def test_a_finished_run_resumed_returns_its_recorded_report_and_says_so(tmp_path):
    """Every trial stored and recorded, the same inputs: the recorded report, verified, with no
    trial read; anything that could change it (another checker, a segment set aside since)
    goes the long way."""
    from ek_agents.stages.audit import audit
    from ek_agents.records.segments import RunSegments

    calls: list = []

    def agent(task, *, seed):
        calls.append(seed)  # (its state: the run says who it is, agent_id)
        return task.input.upper() if seed % 3 else "?"

    tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"Q{i}") for i in range(5)]
    url = str(tmp_path / "s")
    first = run_suite(agent, tasks, k=12, seed=1, run_id="r", rootdir=url, agent_id="counter")
    assert len(calls) == 60 and audit(Store(url), "r").passed  # k > 10: trial 10 after 9
    again = run_suite(agent, tasks, k=12, seed=1, run_id="r", rootdir=url, agent_id="counter")
    assert len(calls) == 60 and again.detail["reused"]["report"] == "recorded"
    assert again.detail["reused"]["kept"] == 60
    strip = lambda r: {**r.to_dict(), "detail": {k: v for k, v in r.detail.items() if k != "reused"}}
    assert strip(again) == strip(first)
    with pytest.raises(RunMismatch):  # the fingerprint is checked first, as on any resume
        run_suite(agent, tasks, k=12, seed=2, run_id="r", rootdir=url, agent_id="counter")
    other = run_suite(agent, tasks, k=12, seed=1, run_id="r", rootdir=url, check="output", agent_id="counter")
    assert "report" not in other.detail["reused"] and other.detail["reused"]["kept"] == 60
    RunSegments.load(Store(url), "r").drop([("t1", 3)])  # set aside since: it runs again
    redone = run_suite(agent, tasks, k=12, seed=1, run_id="r", rootdir=url, check="output", agent_id="counter")
    assert "report" not in redone.detail["reused"] and len(calls) == 61
