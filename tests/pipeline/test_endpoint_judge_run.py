"""``ek-agents run --judge-model M --judge-base-url U``: an LLM judge at an OpenAI-compatible
endpoint (the local scripted server's judge mode) grades the run's trials in this process; its
identity keys the grade (another rubric is judged afresh, the same judge is reused), the
manifest records the run as judged (the labels commands accept it), and the judge's own calls
are billed apart from the agent's as the evaluation cost."""
from __future__ import annotations

import json
import random

import pytest

from ek_agents.base import Cost, Episode, RunProvenance
from ek_agents.cli import main
from ek_agents.prices import load_prices
from ek_agents.stages.judgerun import JudgeSpec
from ek_agents.store import Store

from .conftest import PRICES, write_suite

pytest.importorskip("openai")
from ek_agents_examples.otel.fakeopenai import FakeOpenAI  # noqa: E402

AGENT = "tests.pipeline.test_endpoint_judge_run:marker_agent"
MODEL = "gpt-4o-mini-2024-07-18"


def marker_agent(task, *, seed: int) -> Episode:
    """Right about 70% of the time; the answer carries the truth for the scripted judge."""
    ok = random.Random(f"{task.task_id}/{seed}").random() < 0.7
    out = f"{task.input.upper()} [truth:PASS]" if ok else "? [truth:FAIL]"
    return Episode(task.task_id, output=out, cost=Cost(input_tokens=1000, output_tokens=100),
                   run=RunProvenance(model=MODEL, temperature=0.0))


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI(seed=3) as srv:
        srv.set_judge(1.0, 1.0, seed=3)  # a perfect judge: its verdict is the planted truth
        yield srv


def _run(store, suite, srv, run_id, *extra):
    return main(["run", "--suite", suite, "--agent", AGENT, "--k", "2", "--seed", "1",
                 "--store", store, "--run-id", run_id, "--prices", PRICES,
                 "--judge-model", "gpt-4o-mini", "--judge-base-url", srv.base_url, *extra])


def test_a_run_graded_by_an_endpoint_judge(tmp_path, capsys, server):
    store, suite = str(tmp_path / "store"), write_suite(tmp_path / "s.jsonl", n=6)
    st = Store(store)
    before = len(server.judged)
    assert _run(store, suite, server, "j1") == 0
    out = capsys.readouterr().out
    assert len(server.judged) - before == 12  # 6 tasks x k=2, one judge call each
    graded = st.read_json("runs/j1/graded.json")["episodes"]
    assert [e["success"] for e in graded] == ["[truth:PASS]" in e["output"] for e in graded]
    man = st.read_manifest("j1")
    spec = JudgeSpec(model="gpt-4o-mini", base_url=server.base_url)
    assert man["inputs"]["graded_by"] == {"kind": "judge", "digest": spec.identity,
                                          "name": f"EndpointJudge:gpt-4o-mini@{server.base_url}"}
    assert man["parameters"]["judge"]["model"] == "gpt-4o-mini"
    # the judge's calls billed apart: what the server billed (it answered only the judge)
    report = st.read_json("runs/j1/report.json")
    prices = load_prices(PRICES)
    assert report["cost"]["evaluation_dollars"] == pytest.approx(server.ledger_dollars(prices))
    assert report["cost"]["evaluation_dollars"] > 0
    assert report["cost"]["evaluation_per_model"][MODEL]["calls"] == 12
    agent_dollars = 12 * (1000 * prices[MODEL].input + 100 * prices[MODEL].output)
    assert report["cost"]["total_dollars"] == pytest.approx(agent_dollars)  # the agent's alone
    assert "**Evaluation cost** (the judge's own calls" in out and "12 calls to" in out

    # the audit recomputes the figures from the judge's recorded verdicts: no judge asked again
    assert main(["audit", "j1", "--store", store]) == 0
    assert "audit passed" in capsys.readouterr().out and len(server.judged) - before == 12

    # the same judge again (another run id): the grade is reused, no judge call
    assert _run(store, suite, server, "j2") == 0
    assert len(server.judged) - before == 12
    # another rubric is another judge: judged afresh, never served the cached grade
    assert _run(store, suite, server, "j3", "--judge-rubric", "The answer is in capitals.") == 0
    assert len(server.judged) - before == 24
    assert st.read_manifest("j3")["inputs"]["graded_by"]["digest"] != spec.identity

    # the labels loop takes the run as judged
    plan = tmp_path / "plan.jsonl"
    assert main(["plan-labels", "j1", "--n", "10", "--out", str(plan), "--store", store]) == 0
    rows = [json.loads(x) for x in plan.read_text().splitlines()]
    assert len(rows) == 10
    for r in rows:  # the person's verdict: the planted truth
        r["gold"] = "[truth:PASS]" in r["output"]
    filled = tmp_path / "labels.jsonl"
    filled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    capsys.readouterr()
    assert main(["report", "j1", "--labels", str(filled), "--store", store]) == 0
    out = capsys.readouterr().out
    assert "| judge (raw) |" in out and "| corrected by 10 labels |" in out


def test_a_judge_beside_a_checker_is_refused(tmp_path, capsys, server):
    store, suite = str(tmp_path / "store"), write_suite(tmp_path / "s.jsonl", n=2)
    before = len(server.judged)
    assert _run(store, suite, server, "x", "--check", "output") == 2
    err = capsys.readouterr().err
    assert "--judge-model gpt-4o-mini with --check output" in err
    assert main(["run", "--suite", suite, "--agent", AGENT, "--store", store,
                 "--judge-rubric", "x"]) == 2
    assert "--judge-rubric need --judge-model" in capsys.readouterr().err
    assert len(server.judged) == before and not Store(store).exists("runs/x/manifest.json")


def test_the_evaluate_flow_takes_the_judge_as_json():
    """The flow's ``judge`` parameter is plain data: a dict from a deployment or the CLI is
    validated into a JudgeSpec (a typo refused), never a callable."""
    pytest.importorskip("prefect")
    from prefect.exceptions import ParameterTypeError

    from ek_agents_pipeline.flows.evaluate import evaluate_agent

    got = evaluate_agent.validate_parameters(
        {"suite": "s.jsonl", "agent": "m:f", "judge": {"model": "gpt-4o-mini", "base_url": "http://h"}})
    assert got["judge"] == JudgeSpec(model="gpt-4o-mini", base_url="http://h")
    with pytest.raises(ParameterTypeError, match="judge.modl"):
        evaluate_agent.validate_parameters({"suite": "s.jsonl", "agent": "m:f",
                                            "judge": {"modl": "gpt-4o-mini"}})


def test_ingest_grades_a_recorded_run_with_the_judge(tmp_path, capsys, server):
    """``ingest messages --judge-model``: the judge's verdicts replace the success the log
    recorded (each recorded success here is the opposite of the planted truth)."""
    rows = [{"task_id": f"m{i}", "trial": 0, "success": i % 2 == 1, "model": MODEL,
             "usage": {"prompt_tokens": 100, "completion_tokens": 10},
             "messages": [{"role": "user", "content": f"q{i}"},
                          {"role": "assistant",
                           "content": f"a{i} [truth:{'PASS' if i % 2 == 0 else 'FAIL'}]"}]}
            for i in range(4)]
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store, before = str(tmp_path / "store"), len(server.judged)
    assert main(["ingest", "messages", str(log), "--store", store, "--run-id", "ing",
                 "--prices", PRICES, "--judge-model", "gpt-4o-mini",
                 "--judge-base-url", server.base_url]) == 0
    assert len(server.judged) - before == 4
    st = Store(store)
    graded = st.read_json("runs/ing/graded.json")["episodes"]
    assert {e["task_id"]: e["success"] for e in graded} == {"m0": True, "m1": False,
                                                            "m2": True, "m3": False}
    assert st.read_manifest("ing")["inputs"]["graded_by"]["kind"] == "judge"
    assert st.read_json("runs/ing/report.json")["cost"]["evaluation_per_model"][MODEL]["calls"] == 4
