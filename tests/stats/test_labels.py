"""Labels files (issue 26): the reader's typed errors, plan_labels, and the correction of a
graded run's judge verdicts."""
from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from ek_agents.base import Episode, TaskSpec
from ek_agents.errors import EkAgentsError
from ek_agents.labels import (LabelError, corrected_rate_of, judged, plan_labels, read_labels)


def _run(tasks=20, k=5, seed=0, sens=0.95, spec=0.6):
    """Graded episodes whose ``success`` is a lenient judge's verdict, and the truth."""
    rng = np.random.default_rng(seed)
    p = rng.beta(1.5, 1.0, tasks)
    eps, truth = [], {}
    for i in range(tasks):
        for j in range(k):
            y = bool(rng.random() < p[i])
            h = bool(rng.random() < (sens if y else 1 - spec))
            eps.append(Episode(f"t{i}", output=f"answer {i}.{j}", success=h, meta={"trial": j}))
            truth[(f"t{i}", j)] = y
    return eps, truth


def _lines(rows):
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_plan_labels_is_stratified_seeded_and_round_trips(tmp_path):
    eps, truth = _run()
    tasks = [TaskSpec(f"t{i}", input=f"question {i}") for i in range(20)]
    path = tmp_path / "labels.jsonl"
    plan = plan_labels(eps, 30, seed=3, path=str(path), tasks=tasks)
    per_task = {}
    for t, _ in plan.trials:
        per_task[t] = per_task.get(t, 0) + 1
    assert len(plan.trials) == 30 and plan.n_tasks == 20
    assert sorted(set(per_task.values())) == [1, 2]  # every task before any task's second label
    assert plan_labels(eps, 30, seed=3).trials == plan.trials  # seeded
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert all(r["gold"] is None and r["input"].startswith("question") for r in rows)
    assert "success" not in rows[0] and "judge" not in json.dumps(rows[0])  # no anchoring
    # a person fills it in: the truth
    for r in rows:
        r["gold"] = truth[(r["task_id"], r["trial"])]
    path.write_bytes(_lines(rows))
    labs = read_labels(str(path))
    assert len(labs.labels) == 30 and labs.unfilled == 0 and len(labs.digest) == 64
    r = corrected_rate_of(eps, labs, check="recorded")
    raw = sum(e.success for e in eps) / len(eps)
    assert r.judge_rate == pytest.approx(raw) and r.n_labeled == 30 and r.n_groups == 20
    assert r.estimate < raw  # a lenient judge corrected downward


@pytest.mark.parametrize("rows,needle", [
    ([{"task_id": "nope", "trial": 0, "gold": True}], "task 'nope' is not in this run"),
    ([{"task_id": "t1", "trial": 99, "gold": True}], "task 't1' has no trial 99"),
    ([{"task_id": "t10", "trial": 0, "gold": True}] * 2, "labeled twice"),
    ([{"task_id": "t1", "trial": 0, "gold": "yes"}], "gold must be true or false"),
    ([{"task_id": "t1", "trial": 0, "gold": 1}], "gold must be true or false"),
    ([{"task_id": "t1", "trial": "0", "gold": True}], "trial must be a trial index"),
    ([{"task_id": "t1", "gold": True}], "missing trial"),
    ([["t1", 0, True]], "expected an object"),
    ([{"task_id": f"t{i}", "trial": 0, "gold": True} for i in range(9)], "at least 10"),
])
def test_bad_labels_are_typed_errors_naming_the_fix(rows, needle):
    eps, _ = _run()
    with pytest.raises(LabelError) as e:
        corrected_rate_of(eps, _lines(rows), check="recorded")
    assert isinstance(e.value, EkAgentsError) and isinstance(e.value, ValueError)
    assert needle in str(e.value)


def test_did_you_mean_for_a_mistyped_task_and_nulls_are_counted():
    eps, _ = _run()
    rows = [{"task_id": "t01", "trial": 0, "gold": True}]
    with pytest.raises(LabelError, match="did you mean 't1'"):
        corrected_rate_of(eps, _lines(rows), check="recorded")
    rows = [{"task_id": f"t{i}", "trial": 0, "gold": None} for i in range(12)]
    with pytest.raises(LabelError, match=r"0 filled-in label\(s\) \(12 still null\)"):
        corrected_rate_of(eps, _lines(rows), check="recorded")


def test_labels_for_a_run_without_a_judge_are_refused():
    eps, _ = _run()
    rows = [{"task_id": f"t{i}", "trial": 0, "gold": True} for i in range(12)]
    with pytest.raises(LabelError, match="deterministic checker 'output', not a judge"):
        corrected_rate_of(eps, _lines(rows), check="output")
    assert judged("recorded") and judged(lambda ep, gold: True) and not judged(None)
    assert judged(None, [TaskSpec("a", checker="my_llm_judge")])
    assert not judged("final_state", [TaskSpec("a")])


def test_malformed_bytes_are_label_errors_with_the_line():
    with pytest.raises(LabelError, match="labels.jsonl line 2"):
        read_labels(b'{"task_id": "a", "trial": 0, "gold": true}\n{nope\n', where="labels.jsonl")


def _labels_bytes(eps, truth, per_task=2):
    rows, seen = [], {}
    for e in eps:
        t = e.task_id
        if seen.get(t, 0) < per_task:
            seen[t] = seen.get(t, 0) + 1
            rows.append({"task_id": t, "trial": e.meta["trial"], "gold": truth[(t, e.meta["trial"])]})
    return _lines(rows)


def test_build_report_and_the_gate_compare_corrected_rates():
    from ek_agents.gate import regression_gate
    from ek_agents.reporting import build_report

    tasks = [TaskSpec(f"t{i}") for i in range(40)]
    base_eps, base_truth = _run(tasks=40, k=6, seed=1)
    cur_eps, cur_truth = _run(tasks=40, k=6, seed=1, sens=0.95, spec=0.6)
    # the current agent is much worse in truth: flip most true successes to failures
    cur_eps = [e.graded(e.success and zlib.crc32(f"{e.task_id}:{e.meta['trial']}".encode()) % 3 == 0) for e in cur_eps]
    cur_truth = {(e.task_id, e.meta["trial"]): cur_truth[(e.task_id, e.meta["trial"])] and e.success
                 for e in cur_eps}
    base = build_report(base_eps, tasks, k=6, check="recorded", labels=_labels_bytes(base_eps, base_truth))
    cur = build_report(cur_eps, tasks, k=6, check="recorded", labels=_labels_bytes(cur_eps, cur_truth))
    jc = cur.detail["judge_corrected"]
    assert jc["rate"]["n_labeled"] == 80 and jc["labels"]["n"] == 80 and "judge says" in jc["sentence"]
    g = regression_gate(cur, base)
    check = g.details["checks"][0]
    assert check["metric"] == "success rate (judge-corrected rates compared)"
    assert "judge-corrected rates compared" in check["method"] and "paired over 40 tasks" in check["method"]
    assert not g.passed and g.reasons[0].startswith("success rate (judge-corrected rates compared): ")
    raw = build_report(cur_eps, tasks, k=6, check="recorded")
    g2 = regression_gate(raw, base)
    assert g2.details["checks"][0]["metric"] == "success rate"
    assert any("only the baseline has labels" in w for w in g2.warnings)


def test_graded_episodes_that_repeat_a_trial_are_refused_naming_the_pair():
    """60 graded episodes of 10 (task, trial) pairs (an ingested run can repeat them): the
    correction must not keep one per pair and drop the other 50 without a word."""
    eps, truth = _run(tasks=5, k=2)
    repeated = eps * 6
    labels = _lines([{"task_id": t, "trial": j, "gold": g} for (t, j), g in truth.items()])
    with pytest.raises(LabelError, match=r"task 't0' trial 0 appears 6 times") as err:
        corrected_rate_of(repeated, labels, check="recorded")
    assert "ambiguous" in str(err.value)
    assert corrected_rate_of(eps, labels, check="recorded").n_labeled == 10
