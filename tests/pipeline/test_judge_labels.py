"""Labels end to end (issue 26): the evaluate flow's labels parameter (stored with the run,
in its manifest, verified by the audit), and the CLI's plan-labels / report / gate / plan."""
from __future__ import annotations

import json
import zlib

import pytest

from ek_agents.stages.audit import audit
from ek_agents.cli import main
from ek_agents.scoring.metrics import register_checker
from ek_agents.store import Store

from .conftest import AGENT


def _lenient_judge(ep, gold) -> bool:
    """Passes every right answer and half the wrong ones (decided by the trial)."""
    if ep.output == gold:
        return True
    # crc32, not hash(): str hashes change with PYTHONHASHSEED, so the judge must not use them
    return zlib.crc32(f"{ep.task_id}:{(ep.meta or {}).get('trial')}".encode()) % 2 == 0


@pytest.fixture(autouse=True)
def lenient_judge():
    """The judge registered for this module's tests only (the registry is process-wide)."""
    from ek_agents.scoring.metrics import CHECKERS

    register_checker("lenient_judge", _lenient_judge)
    yield
    CHECKERS.pop("lenient_judge", None)


def _suite(path, n=10):
    rows = [{"suite": {"name": "judged", "version": "1", "checker": "lenient_judge"}}]
    rows += [{"task_id": f"t{i}", "input": f"word{i}", "gold": f"WORD{i}"} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _fill(plan_path, st, run_id, out):
    """A person's labels: the truth (the output is the gold), for every planned trial."""
    from ek_agents.stages.labelrun import stored_run

    # the run's graded trials (a run streamed from its segments has no graded document)
    graded = {(e["task_id"], e["meta"]["trial"]): e for e in stored_run(st, run_id)[2]["episodes"]}
    rows = [json.loads(x) for x in open(plan_path)]
    for r in rows:
        e = graded[(r["task_id"], r["trial"])]
        r["gold"] = e["output"] == f"WORD{r['task_id'][1:]}"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(out)


def _library_run(tmp_path):
    from ek_agents import run_suite
    from ek_agents.suite import load_suite
    from . import pipeline_agents

    suite = load_suite(_suite(tmp_path / "judged.jsonl"))
    rep = run_suite(pipeline_agents.counting_agent, suite, k=3, seed=1, persist=True, rootdir=str(tmp_path / "store"),
                    check="lenient_judge")
    return rep.detail["run_id"]


def test_cli_plan_labels_report_gate_and_plan(tmp_path, capsys):
    run_id = _library_run(tmp_path)
    store = str(tmp_path / "store")
    plan = tmp_path / "plan.jsonl"
    assert main(["plan-labels", run_id, "--n", "15", "--out", str(plan), "--store", store]) == 0
    out = capsys.readouterr().out
    assert "wrote 15 trials of 10 tasks" in out and "needs" in out
    rows = [json.loads(x) for x in plan.read_text().splitlines()]
    assert len(rows) == 15 and all(r["gold"] is None for r in rows)
    assert main(["report", run_id, "--labels", str(plan), "--store", store]) == 2  # all null
    assert "at least 10" in capsys.readouterr().err
    labels = _fill(plan, Store(store), run_id, tmp_path / "labels.jsonl")
    assert main(["report", run_id, "--labels", labels, "--store", store]) == 0
    out = capsys.readouterr().out
    assert "| judge (raw) |" in out and "| corrected by 15 labels |" in out
    assert "judge's measured error on 15 labels" in out
    assert main(["report", run_id, "--labels", labels, "--json", "--store", store]) == 0
    doc = json.loads(capsys.readouterr().out)
    rate = doc["detail"]["judge_corrected"]["rate"]
    assert rate["judge_rate"] > rate["estimate"] and rate["specificity"] < 1.0  # a lenient judge
    assert main(["plan", run_id, "--width", "0.2", "--store", store]) == 0
    assert capsys.readouterr().out.startswith("For a 95% interval 20.0 points wide")
    assert main(["plan", run_id, "--power", "0.8", "--drop", "0.2", "--store", store]) == 0
    assert "power to catch a 20.0-point drop" in capsys.readouterr().out
    assert main(["plan", run_id, "--cps-width", "0.5", "--store", store]) == 2  # unpriced pilot
    assert "cps_width needs a priced pilot" in capsys.readouterr().err
    assert main(["promote", run_id, "--name", "b", "--store", store]) == 0
    capsys.readouterr()
    assert main(["gate", run_id, "--baseline", "b", "--labels", labels, "--store", store]) == 0
    out = capsys.readouterr().out
    assert "only this run has labels" in out  # the baseline has none: raw rates compared
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "t99", "trial": 0, "gold": True}) + "\n")
    assert main(["report", run_id, "--labels", str(bad), "--store", store]) == 2
    assert "task 't99' is not in this run" in capsys.readouterr().err


@pytest.mark.usefixtures("prefect_api")
def test_evaluate_flow_stores_labels_and_the_audit_verifies_them(tmp_path):
    from ek_agents_pipeline.flows import evaluate_agent

    suite = _suite(tmp_path / "judged.jsonl")
    store = str(tmp_path / "store")
    evaluate_agent(suite=suite, agent=AGENT, k=3, seed=2, store=store, run_id="pilot")
    st = Store(store)
    plan = tmp_path / "plan.jsonl"
    assert main(["plan-labels", "pilot", "--n", "15", "--out", str(plan), "--store", store]) == 0
    labels = _fill(plan, st, "pilot", tmp_path / "labels.jsonl")
    evaluate_agent(suite=suite, agent=AGENT, k=3, seed=2, store=store, run_id="r1", labels=labels)
    man = st.read_manifest("r1")
    assert "runs/r1/labels.json" in man["artifacts"] and len(man["inputs"]["labels"]) == 64
    report = st.read_json("runs/r1/report.json")
    judged = report["detail"]["judge_corrected"]
    assert judged["labels"]["n"] == 15 and judged["labels"]["digest"] == man["inputs"]["labels"]
    assert judged["rate"]["estimate"] < judged["rate"]["judge_rate"]
    assert audit(st, "r1").passed
    doc = st.read_json("runs/r1/labels.json")
    doc["labels"][0][2] = not doc["labels"][0][2]  # a label changed after the run
    st.write_json("runs/r1/labels.json", doc)
    result = audit(st, "r1")
    assert not result.passed and any("labels.json" in p for p in result.problems)


def test_a_library_run_with_labels_reports_them_in_html_and_markdown_and_audits(tmp_path, capsys):
    from ek_agents import run_suite
    from ek_agents.suite import load_suite

    from . import pipeline_agents

    run_id = _library_run(tmp_path)
    store = str(tmp_path / "store")
    plan = tmp_path / "plan.jsonl"
    assert main(["plan-labels", run_id, "--n", "12", "--out", str(plan), "--store", store]) == 0
    labels = _fill(plan, Store(store), run_id, tmp_path / "labels.jsonl")
    rep = run_suite(pipeline_agents.counting_agent, load_suite(str(tmp_path / "judged.jsonl")), k=3,
                    seed=1, run_id="labeled", rootdir=store, check="lenient_judge", labels=labels)
    assert rep.detail["judge_corrected"]["labels"]["n"] == 12
    assert main(["audit", "labeled", "--store", store]) == 0
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", "labeled", "--html", str(html), "--markdown", str(md), "--store", store]) == 0
    for text in (html.read_text(), md.read_text()):
        assert "Judge-corrected success" in text and "judge (raw)" in text
        assert "corrected by 12 labels" in text
        assert "judge&#x27;s measured error" in text or "judge's measured error" in text
    capsys.readouterr()
    assert main(["report", "labeled", "--store", store]) == 0
    assert "| corrected by 12 labels |" in capsys.readouterr().out
