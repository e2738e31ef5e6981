"""The labels loop on a run graded by a Python judge: the run records how it was graded, so
``plan-labels`` -> fill -> ``report --labels`` / ``gate --labels`` work through the CLI; a run
graded by a deterministic checker is refused by ``plan-labels`` up front; a bad ``check=`` is
refused before the first agent call."""
from __future__ import annotations

import json
import zlib

import pytest

from ek_agents import JudgeMetric, JudgeSignal, run_suite
from ek_agents.base import TaskSpec
from ek_agents.cli import main
from ek_agents.errors import EkAgentsError
from ek_agents.store import Store

TASKS = [TaskSpec(f"t{i}", input=f"word{i}", gold=f"WORD{i}") for i in range(8)]


def _agent(calls):
    def agent(task, *, seed=0):
        calls.append((task.task_id, seed))
        return task.input.upper() if seed % 3 else "?"
    return agent


def lenient_judge(ep, gold) -> bool:
    """Passes every right answer and about half the wrong ones (by the trial's crc32)."""
    return ep.output == gold or zlib.crc32(f"{ep.task_id}:{ep.meta['trial']}".encode()) % 2 == 0


def _fill(plan, st, run_id, out):
    graded = {(e["task_id"], e["meta"]["trial"]): e
              for e in st.read_json(f"runs/{run_id}/graded.json")["episodes"]}
    rows = [json.loads(x) for x in plan.read_text().splitlines()]
    for r in rows:
        r["gold"] = graded[(r["task_id"], r["trial"])]["output"] == f"WORD{r['task_id'][1:]}"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(out)


@pytest.mark.parametrize("check", [lenient_judge,
                                   JudgeMetric(lambda out, *, criteria, reference: float(out == reference)),
                                   JudgeSignal(lambda out, *, criteria: float(out.isupper()), name="caps")],
                         ids=["callable", "JudgeMetric", "JudgeSignal"])
def test_the_labels_loop_through_the_cli_on_a_judged_run(tmp_path, capsys, check):
    store, calls = str(tmp_path / "store"), []
    run_suite(_agent(calls), TASKS, k=5, seed=1, check=check, run_id="j", rootdir=store)
    assert len(calls) == 40
    man = Store(store).read_manifest("j")
    graded_by = man["inputs"]["graded_by"]
    assert graded_by["kind"] == "judge" and graded_by["name"] and len(graded_by["digest"]) == 64
    plan = tmp_path / "labels-j.jsonl"
    assert main(["plan-labels", "j", "--n", "16", "--out", str(plan), "--store", store]) == 0
    assert "wrote 16 trials of 8 tasks" in capsys.readouterr().out
    labels = _fill(plan, Store(store), "j", tmp_path / "labels.jsonl")
    assert main(["report", "j", "--labels", labels, "--store", store]) == 0
    out = capsys.readouterr().out
    assert "| judge (raw) |" in out and "| corrected by 16 labels |" in out
    assert main(["promote", "j", "--name", "b", "--store", store]) == 0
    capsys.readouterr()
    assert main(["gate", "j", "--baseline", "b", "--labels", labels, "--store", store]) == 0
    assert "only this run has labels" in capsys.readouterr().out


def test_plan_labels_refuses_a_run_graded_by_a_deterministic_checker(tmp_path, capsys):
    store = str(tmp_path / "store")
    run_suite(_agent([]), TASKS, k=2, check="output", run_id="d", rootdir=store)
    assert Store(store).read_manifest("d")["inputs"]["graded_by"] == {
        "kind": "checker", "name": "output", "digest": None}
    plan = tmp_path / "p.jsonl"
    assert main(["plan-labels", "d", "--n", "10", "--out", str(plan), "--store", store]) == 2
    err = capsys.readouterr().err
    assert "deterministic checker 'output'" in err and not plan.exists()


def _two_args_required_and_a_third(ep, gold, extra):
    return True


@pytest.mark.parametrize("check, says", [
    (object(), "a checker must be"),
    ("outptu", "did you mean 'output'"),
    (lambda ep: True, "(episode, gold)"),
    (_two_args_required_and_a_third, "(episode, gold)"),
    (JudgeMetric, "a class"),
])
def test_a_bad_check_is_refused_before_any_agent_call(tmp_path, check, says):
    calls = []
    with pytest.raises(EkAgentsError) as err:
        run_suite(_agent(calls), TASKS, k=5, check=check, run_id="bad", rootdir=str(tmp_path))
    assert says in str(err.value) and calls == []
    with pytest.raises(EkAgentsError):  # not persisted: refused before the trials too
        run_suite(_agent(calls), TASKS, k=5, check=check)
    assert calls == []


def test_a_bad_task_checker_or_metric_is_refused_before_any_agent_call():
    calls = []
    tasks = [*TASKS[:2], TaskSpec("x", input="a", gold="A", checker="no_such_checker")]
    with pytest.raises(EkAgentsError, match="no_such_checker"):
        run_suite(_agent(calls), tasks, k=2)
    with pytest.raises(EkAgentsError, match="metrics"):
        run_suite(_agent(calls), TASKS, k=2, metrics={"m": object()})
    assert calls == []


def test_unpriced_trials_filled_in_at_the_mean_cost_are_counted_in_the_report(tmp_path, capsys):
    """The cost per corrected success fills trials without a known cost in at the priced
    trials' mean: the report document counts them and the Markdown / HTML text says so."""
    from ek_agents.base import Cost, Episode
    from ek_agents.prices import ModelPrice

    def agent(task, *, seed=0):
        out = task.input.upper() if seed % 3 else "?"
        return Episode(task.task_id, output=out,
                       cost=Cost(input_tokens=100, output_tokens=10) if seed % 2 else None)

    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"task_id": t.task_id, "trial": j, "gold": (1 + j) % 3 != 0}) + "\n"
                              for t in TASKS for j in range(2)))
    store = str(tmp_path / "store")
    rep = run_suite(agent, TASKS, k=4, seed=1, check=lenient_judge, run_id="u", rootdir=store,
                    price=ModelPrice(1e-6, 2e-6), labels=str(labels))
    cps = rep.detail["judge_corrected"]["cost_per_success"]
    assert cps["estimated"] == 16 and cps["trials"] == 32  # trials 1 and 3 of each task unpriced
    html = tmp_path / "r.html"
    assert main(["report", "u", "--html", str(html), "--store", store]) == 0
    capsys.readouterr()
    assert main(["report", "u", "--store", store]) == 0
    for text in (capsys.readouterr().out, html.read_text()):
        assert "16 of 32 trials had no known cost" in text
