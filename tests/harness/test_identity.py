"""Run identity in the library (issue 9): a reused run id never serves another agent's results,
resume trusts no stored file it has not checked, reuse is a choice, one writer per run id."""
from __future__ import annotations

import threading

import pytest

from ek_agents.stages import audit
from ek_agents.records import fingerprint as run_identity
from ek_agents.base import Episode, TaskSpec
from ek_agents.errors import RunInUse, RunMismatch, TransientAgentError
from ek_agents.execution.harness import run_suite, run_trials
from ek_agents.store import Store, acquire_lease, episode_key, lease_key, read_lease, release_lease
from ek_agents.records.segments import RunSegments

from .layout import to_per_trial_files

TASKS = [TaskSpec(f"t{i}", input=f"q{i}", gold="OK") for i in range(4)]


def ok_agent(task):
    return "OK"


def wrong_agent(task):
    return "WRONG"


def test_wrong_agent_on_a_reused_run_id_is_refused_and_refresh_reports_its_real_figures(tmp_path):
    first = run_suite(ok_agent, TASKS, k=2, seed=0, run_id="nightly", rootdir=str(tmp_path))
    assert first.success_rate == 1.0
    with pytest.raises(RunMismatch, match=r"agent: '(tests\.)?(harness\.)?test_identity:ok_agent' \(stored\) -> "
                                          r"'(tests\.)?(harness\.)?test_identity:wrong_agent'.*new run id.*refresh"):
        run_suite(wrong_agent, TASKS, k=2, seed=0, run_id="nightly", rootdir=str(tmp_path))
    fresh = run_suite(wrong_agent, TASKS, k=2, seed=0, run_id="nightly", rootdir=str(tmp_path),
                      refresh=True)
    assert fresh.success_rate == 0.0 and fresh.detail["reused"]["episodes"] == 0
    assert fresh.detail["reused"]["refreshed"] == 8
    st = Store(tmp_path)
    manifest = st.read_manifest("nightly")
    assert manifest["agent"].endswith("test_identity:wrong_agent")
    assert manifest["fingerprint"]["agent"].endswith("test_identity:wrong_agent")
    assert manifest["results"]["success_rate"] == 0.0
    assert audit.audit(st, "nightly").passed


def test_two_lambdas_of_one_file_are_two_agents(tmp_path):
    run_suite(lambda t: "OK", TASKS, k=2, seed=0, run_id="r", rootdir=str(tmp_path))
    with pytest.raises(RunMismatch, match="agent_code"):
        run_suite(lambda t: "WRONG", TASKS, k=2, seed=0, run_id="r", rootdir=str(tmp_path))


class Configured:
    def __init__(self, model):
        self.model = model

    def ek_config(self):
        return {"model": self.model}

    def __call__(self, task):
        return "OK"


def test_declared_configuration_is_part_of_identity(tmp_path):
    run_suite(Configured("m1"), TASKS, k=1, seed=0, run_id="r", rootdir=str(tmp_path))
    run_suite(Configured("m1"), TASKS, k=1, seed=0, run_id="r", rootdir=str(tmp_path))  # same
    with pytest.raises(RunMismatch, match=r"agent_config: \{'model': 'm1'\} \(stored\) -> "
                                          r"\{'model': 'm2'\}"):
        run_suite(Configured("m2"), TASKS, k=1, seed=0, run_id="r", rootdir=str(tmp_path))
    assert Store(tmp_path).read_manifest("r")["fingerprint"]["agent_config"] == {"model": "m1"}


@pytest.mark.parametrize("k,seed,timeout_s,field", [(3, 0, None, "k"), (2, 7, None, "seed"),
                                                     (2, 0, 5.0, "timeout_s")])
def test_every_setting_that_decides_episodes_is_checked(tmp_path, k, seed, timeout_s, field):
    run_trials(ok_agent, TASKS, k=2, seed=0, store=str(tmp_path), run_id="r")
    with pytest.raises(RunMismatch, match=f"{field}: "):
        run_trials(ok_agent, TASKS, k=k, seed=seed, timeout_s=timeout_s, store=str(tmp_path),
                   run_id="r")


def test_a_misfiled_per_trial_episode_is_run_again_never_kept(tmp_path):
    calls = []

    def agent(task, *, seed):
        calls.append((task.task_id, seed))
        return "OK"

    st = Store(tmp_path)
    run_trials(agent, TASKS, k=2, seed=0, store=st, run_id="r")
    to_per_trial_files(st, "r")  # the run as earlier versions stored it
    calls.clear()
    # another task's episode under t1/0, a bare {} under t2/1
    st.write_json(episode_key("r", "t1", 0), st.read_json(episode_key("r", "t0", 0)))
    st.write_json(episode_key("r", "t2", 1), {})
    eps = run_trials(agent, TASKS, k=2, seed=0, store=st, run_id="r")
    assert sorted(calls) == [("t1", 0), ("t2", 1)]  # exactly the two misfiled trials re-ran
    assert [(e.task_id, e.meta["trial"]) for e in eps] == [(f"t{i}", j) for i in range(4)
                                                          for j in range(2)]
    assert not st.exists(episode_key("r", "t1", 0))  # removed; the re-run is in a segment
    assert sorted(RunSegments.load(st, "r").pairs()) == [("t1", 0), ("t2", 1)]


OUTAGE = {"on": True}


def flaky_endpoint_agent(task):
    """Down while OUTAGE["on"] for tasks t1 and t3 (a rate limit that does not go away)."""
    flaky_endpoint_agent.calls.append(task.task_id)
    if OUTAGE["on"] and task.task_id in ("t1", "t3"):
        raise TransientAgentError("HTTP 503 from the endpoint")
    return "OK"


def test_retry_errored_after_an_outage_re_runs_only_those_trials(tmp_path):
    flaky_endpoint_agent.calls = []
    OUTAGE["on"] = True
    try:
        down = run_suite(flaky_endpoint_agent, TASKS, k=2, seed=0, run_id="r", rootdir=str(tmp_path))
        assert down.success_rate == 0.5 and down.detail["errors"] == {"infrastructure": 4}
        OUTAGE["on"] = False
        flaky_endpoint_agent.calls = []
        frozen = run_suite(flaky_endpoint_agent, TASKS, k=2, seed=0, run_id="r",
                           rootdir=str(tmp_path))
        assert flaky_endpoint_agent.calls == [] and frozen.success_rate == 0.5  # reuse: the default
        retried = run_suite(flaky_endpoint_agent, TASKS, k=2, seed=0, run_id="r",
                            rootdir=str(tmp_path), retry_errored=True)
        assert sorted(flaky_endpoint_agent.calls) == ["t1", "t1", "t3", "t3"]
        assert retried.success_rate == 1.0
        assert retried.detail["reused"]["episodes"] == 4 and retried.detail["reused"]["retried"] == 4
        manifest = Store(tmp_path).read_manifest("r")
        assert manifest["parameters"]["reused"]["reused"] == 4  # streamed: no episodes stage
        assert manifest["parameters"]["retry_errored"] is True
    finally:
        OUTAGE["on"] = True


def test_two_concurrent_writers_one_refused_no_double_agent_calls(tmp_path):
    started, release = threading.Event(), threading.Event()
    calls = []

    def slow_agent(task):
        calls.append(task.task_id)
        started.set()
        release.wait(30)  # a safety net, not a timing assertion
        return "OK"

    first: dict = {}
    writer = threading.Thread(target=lambda: first.setdefault("report", run_suite(
        slow_agent, TASKS, k=2, seed=0, run_id="r", rootdir=str(tmp_path))))
    writer.start()
    assert started.wait(30)
    try:
        with pytest.raises(RunInUse, match=r"run 'r' is being written by another process: pid \d+"):
            run_suite(slow_agent, TASKS, k=2, seed=0, run_id="r", rootdir=str(tmp_path))
    finally:
        release.set()
        writer.join(60)
    assert first["report"].success_rate == 1.0
    assert sorted(calls) == sorted(t.task_id for t in TASKS for _ in range(2))  # 8, not 16
    assert read_lease(Store(tmp_path), "r") is None  # released at the end


def test_a_lease_waits_when_asked_and_a_dead_writers_lease_is_broken_explicitly(tmp_path):
    st = Store(tmp_path)
    held = acquire_lease(st, "r")
    threading.Timer(0.3, lambda: release_lease(st, held)).start()
    mine = acquire_lease(st, "r", wait_s=30)  # waits for the holder to let go
    assert mine.token != held.token and not release_lease(st, held)  # not the holder any more
    with pytest.raises(RunInUse):
        run_suite(ok_agent, TASKS, run_id="r", rootdir=str(tmp_path))
    report = run_suite(ok_agent, TASKS, run_id="r", rootdir=str(tmp_path), break_lease=True)
    assert report.success_rate == 1.0 and not st.exists(lease_key("r"))


def test_the_lease_is_a_conditional_create_on_memory_stores():
    st = Store("memory://ek-identity-lease")
    held = acquire_lease(st, "r")
    with pytest.raises(RunInUse, match="pid"):
        acquire_lease(st, "r")
    assert release_lease(st, held) and acquire_lease(st, "r")


def test_agent_config_must_be_json():
    class Bad:
        ek_config = {"client": object()}

        def __call__(self, task):
            return "x"

    with pytest.raises(Exception, match="ek_config is not JSON"):
        run_identity.agent_config(Bad())
