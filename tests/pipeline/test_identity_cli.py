"""``ek-agents run`` identifies the agent it loads by its code and state (issue 23): the same
import path built with another configuration is refused on the same run id and runs afresh
on a new one (never a cache hit of the other's episodes); an equal agent -- in this process or
another with another PYTHONHASHSEED -- reuses every trial; an agent holding a lock runs, is
reported as not identified, and its resume is refused until ``--agent-id`` says what it is."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from ek_agents.cli import main
from ek_agents.store import Store

from .conftest import ROOT

MODULE = "tests.harness.identity_agents"
ag = importlib.import_module(MODULE)


@pytest.fixture
def answer(monkeypatch):
    """Rebuild the module's agents with ``EK_TEST_ANSWER`` set to the given answer."""
    def build(value: str):
        monkeypatch.setenv("EK_TEST_ANSWER", value)
        importlib.reload(ag)
        ag.CALLS.clear()
        return ag

    yield build
    monkeypatch.delenv("EK_TEST_ANSWER", raising=False)
    importlib.reload(ag)


def _run(suite, store, run_id, agent, *extra):
    return main(["run", "--suite", suite, "--agent", f"{MODULE}:{agent}", "--k", "2",
                 "--store", store, "--run-id", run_id, *extra])


def _success(store, run_id):
    return Store(store).read_manifest(run_id)["results"]["success_rate"]


@pytest.mark.parametrize("agent,key", [("closure_agent", "closure.answer"),
                                       ("instance_agent", "self.answer"),
                                       ("method_agent", "self"),
                                       ("partial_agent", "partial.keywords.answer")])
def test_cli_second_agent_refused_on_the_run_id_and_gets_its_own_results_elsewhere(
        tmp_path, suite, answer, capsys, agent, key):
    store = str(tmp_path / "store")
    answer("OK")
    assert _run(suite, store, "a", agent) == 0 and _success(store, "a") == 1.0
    answer("WRONG")
    capsys.readouterr()
    assert _run(suite, store, "a", agent) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("ek-agents: RunMismatch: run 'a' was started with other settings")
    assert f"agent_identity.state.{key}" in err
    assert _run(suite, store, "b", agent) == 0
    assert _success(store, "b") == 0.0 and len(ag.CALLS) == 12  # its own trials, not a's
    answer("OK")  # an equal agent, built afresh: a cache hit of run a, no agent call
    assert _run(suite, store, "c", agent) == 0 and ag.CALLS == []
    assert "reused 12 of 12 episodes from run `a`" in capsys.readouterr().out


def test_cli_undigestable_agent_is_reported_refused_and_agent_id_makes_it_resumable(
        tmp_path, suite, answer, capsys):
    store = str(tmp_path / "store")
    answer("OK")
    assert _run(suite, store, "a", "locked_agent") == 0
    assert "could not be identified (self.guard" in capsys.readouterr().err
    answer("OK")  # the same configuration, but nothing shows it: refused
    assert _run(suite, store, "a", "locked_agent") == 2
    out = capsys.readouterr()
    err = out.err.strip().splitlines()[-1]
    assert err.startswith("ek-agents: UnidentifiedAgent: run 'a' cannot be resumed")
    assert "self.guard" in err and "agent_id" in err and "--refresh" in err
    assert "agent identity: NOT identified -- self.guard" in out.out  # the run's report
    assert main(["report", "a", "--store", store]) == 0
    assert "agent identity: NOT identified -- self.guard" in capsys.readouterr().out
    assert main(["audit", "a", "--store", store]) == 0
    assert "note: agent identity: NOT identified -- self.guard" in capsys.readouterr().out
    answer("WRONG")  # a new run id: its own trials, never a cache hit of run a
    assert _run(suite, store, "fresh", "locked_agent") == 0
    assert _success(store, "fresh") == 0.0 and len(ag.CALLS) == 12
    answer("OK")
    assert _run(suite, store, "named", "locked_agent", "--agent-id", "locked/ok") == 0
    answer("OK")
    assert _run(suite, store, "named", "locked_agent", "--agent-id", "locked/ok") == 0
    assert ag.CALLS == []  # resumed: every trial reused


def test_cli_equal_agent_in_another_process_with_another_hash_seed_reuses_every_trial(
        tmp_path, suite, answer):
    store = str(tmp_path / "store")
    answer("OK")
    assert _run(suite, store, "here", "instance_agent") == 0
    env = {**os.environ, "PYTHONHASHSEED": "4242", "PYTHONPATH": str(ROOT), "EK_TEST_ANSWER": "OK"}
    env.pop("PREFECT_API_URL", None)
    cmd = [sys.executable, "-m", "ek_agents.cli", "run", "--suite", suite, "--agent",
           f"{MODULE}:instance_agent", "--k", "2", "--store", store]
    done = subprocess.run([*cmd, "--run-id", "there"], capture_output=True, text=True,
                          cwd=str(ROOT), env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "reused 12 of 12 episodes from run `here`" in done.stdout
    wrong = subprocess.run([*cmd, "--run-id", "here"], capture_output=True, text=True,
                           cwd=str(ROOT), env={**env, "EK_TEST_ANSWER": "WRONG"}, timeout=300)
    assert wrong.returncode == 2 and "agent_identity.state.self.answer" in wrong.stderr


@pytest.mark.usefixtures("prefect_api")
def test_the_evaluate_flow_takes_agent_id_and_refuses_an_unidentified_resume(tmp_path, suite,
                                                                             answer):
    from ek_agents.errors import UnidentifiedAgent
    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    answer("OK")
    evaluate_agent(suite=suite, agent=f"{MODULE}:locked_agent", k=2, store=store, run_id="f")
    answer("OK")
    with pytest.raises(UnidentifiedAgent, match=r"run 'f' cannot be resumed.*self\.guard"):
        evaluate_agent(suite=suite, agent=f"{MODULE}:locked_agent", k=2, store=store, run_id="f")
    named = dict(suite=suite, agent=f"{MODULE}:locked_agent", k=2, store=store, run_id="g",
                 agent_id="locked/ok")
    evaluate_agent(**named)
    answer("OK")
    evaluate_agent(**named)
    assert ag.CALLS == []  # resumed in full under the id the caller gave
    fp = Store(store).read_manifest("g")["fingerprint"]["agent_identity"]
    assert fp["agent_id"] == "locked/ok" and fp["state"] == {} and fp["undigestable"] == {}
