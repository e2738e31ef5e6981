"""Run identity in the pipeline (issue 9): fresh nightlies, configuration in the cache key,
retry-errored after an outage, loud failures, refresh, reuse shown."""
from __future__ import annotations

import importlib

import pytest

from ek_agents.records import documents, stagecache
from ek_agents import pipeline
from ek_agents.stages import evaluate as stages
from ek_agents.base import RunProvenance
from ek_agents.cli import main
from ek_agents.errors import RunMismatch, StoreError, TooManyErrors
from ek_agents.store import Store, read_lease

from .conftest import AGENT, FLAKY_AGENT

OUTAGE_AGENT = "tests.pipeline.pipeline_agents:outage_agent"
#: the module the pipeline imports the agents from (by the agent's import path)
pipeline_agents = importlib.import_module(OUTAGE_AGENT.split(":")[0])


@pytest.fixture
def outage():
    pipeline_agents.OUTAGE.clear()
    yield pipeline_agents.OUTAGE
    pipeline_agents.OUTAGE.clear()


def _request(store: Store, run_id: str, suite: str, agent: str) -> pipeline.TrialRequest:
    return pipeline.TrialRequest(
        store=store.url, run_id=run_id, tasks=stages.record_suite(store, run_id, suite),
        agent=agent, k=2, seed=0, run=RunProvenance(seed=0).to_dict())


def test_a_changed_EK_OPENAI_MODEL_is_not_a_cache_hit(tmp_path, suite, monkeypatch):
    st = Store(tmp_path / "store")
    monkeypatch.setenv("EK_OPENAI_MODEL", "model-one")
    import examples.shop.openai_agent as shop_openai

    importlib.reload(shop_openai)
    one = pipeline.plan_trials(_request(st, "a", suite, "examples.shop.openai_agent:agent"))
    # the episodes of model-one's run, cached under its digest
    stagecache.stage_output(st, "a", "episodes", one.digest, lambda: documents.episodes_doc([]))
    again = pipeline.plan_trials(_request(st, "b", suite, "examples.shop.openai_agent:agent"))
    assert again.episodes is not None and again.reused_from == "a"  # same model: a cache hit
    monkeypatch.setenv("EK_OPENAI_MODEL", "model-two")
    importlib.reload(shop_openai)
    two = pipeline.plan_trials(_request(st, "c", suite, "examples.shop.openai_agent:agent"))
    assert two.digest != one.digest and two.episodes is None and two.chunks  # runs, for real
    stored = Store(tmp_path / "store").read_json("runs/c/fingerprint.json")
    assert stored["agent_config"]["model"] == "model-two"
    monkeypatch.delenv("EK_OPENAI_MODEL")
    importlib.reload(shop_openai)


@pytest.mark.usefixtures("prefect_api")
def test_two_scheduled_nightly_runs_make_two_sets_of_agent_calls(tmp_path, suite, calls):
    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    nightly = dict(suite=suite, agent=AGENT, k=2, store=store, seed=None)  # as prefect.yaml has it
    first = evaluate_agent(**nightly)
    assert len(calls) == 12
    second = evaluate_agent(**nightly)
    assert len(calls) == 24  # night 2 called the agent again: no cache hit of night 1
    st = Store(store)
    seeds = [st.read_manifest(o["run_id"])["inputs"]["seed"] for o in (first, second)]
    assert None not in seeds and seeds[0] != seeds[1]  # each night's seed, recorded
    assert st.read_manifest(second["run_id"])["stages"]["episodes"]["reused"] == 0


def test_the_nightly_deployment_draws_its_seed_from_the_schedule():
    import yaml

    from .conftest import ROOT

    deployments = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())["deployments"]
    nightly = next(d for d in deployments if d["name"] == "nightly")
    assert "seed" in nightly["parameters"] and nightly["parameters"]["seed"] is None


@pytest.mark.usefixtures("prefect_api")
def test_a_failed_chunk_fails_the_flow_with_its_own_error(tmp_path, suite, calls, capsys):
    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    st = Store(store)
    st.write_bytes("runs/r/segments", b"not json")  # a file where the segments' folder must go
    state = evaluate_agent(suite=suite, agent=AGENT, k=2, store=store, run_id="r",
                           return_state=True)
    assert state.is_failed()
    with pytest.raises(StoreError, match="runs/r/segments/"):
        state.result()
    assert read_lease(st, "r") is None  # the lease is released on failure too
    capsys.readouterr()
    code = main(["run", "--suite", suite, "--agent", AGENT, "--k", "2", "--run-id", "r",
                 "--store", store])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 3 and "StoreError" in err and "TypeError" not in err


@pytest.mark.usefixtures("prefect_api")
def test_a_run_that_mostly_errored_fails_after_its_manifest(tmp_path, suite, calls, outage, capsys):
    from ek_agents_pipeline.flows import evaluate_agent

    store = str(tmp_path / "store")
    outage.update(f"t{i}" for i in range(6))  # the endpoint is down
    with pytest.raises(TooManyErrors, match=r"12 of 12 trials ended in an error"):
        evaluate_agent(suite=suite, agent=OUTAGE_AGENT, k=2, store=store, run_id="down")
    assert Store(store).read_manifest("down")["results"]["n_trials"] == 12  # written first
    capsys.readouterr()
    code = main(["run", "--suite", suite, "--agent", OUTAGE_AGENT, "--run-id", "down2",
                 "--store", store])
    assert code == 4 and "TooManyErrors" in capsys.readouterr().err
    assert main(["run", "--suite", suite, "--agent", OUTAGE_AGENT, "--run-id", "down3",
                 "--store", store, "--max-error-rate", "1"]) == 0  # asked to tolerate it


@pytest.mark.usefixtures("prefect_api")
def test_retry_errored_after_an_outage_re_runs_only_those_trials(tmp_path, suite, calls, outage,
                                                                 capsys):
    store = str(tmp_path / "store")
    common = ["--suite", suite, "--agent", OUTAGE_AGENT, "--k", "2", "--store", store]
    outage.update({"t1", "t4"})
    assert main(["run", "--run-id", "r", *common]) == 0  # 4 of 12 errored: under the threshold
    assert len(calls) == 12
    outage.clear()
    calls.clear()
    assert main(["run", "--run-id", "r", *common]) == 0
    assert calls == []  # reuse is the default: nothing ran ...
    assert main(["run", "--run-id", "r", "--retry-errored", *common]) == 0
    assert sorted(t for t, _ in calls) == ["t1", "t1", "t4", "t4"]  # ... until asked
    out = capsys.readouterr().out
    assert "reused 8 of 12 episodes (this run's stored trials); ran 4" in out
    st = Store(store)
    assert st.read_manifest("r")["stages"]["episodes"]["reused"] == 8
    assert st.read_json("runs/r/report.json")["detail"].get("errors", {}) == {}


@pytest.mark.usefixtures("prefect_api")
def test_retry_errored_on_a_new_run_id_reuses_the_cached_successes(tmp_path, suite, calls, outage,
                                                                   capsys):
    store = str(tmp_path / "store")
    common = ["--suite", suite, "--agent", OUTAGE_AGENT, "--k", "2", "--store", store]
    outage.update({"t2"})
    assert main(["run", "--run-id", "first", *common]) == 0
    outage.clear()
    calls.clear()
    assert main(["run", "--run-id", "second", "--retry-errored", *common]) == 0
    assert sorted(t for t, _ in calls) == ["t2", "t2"]
    assert "reused 10 of 12 episodes from run `first`; ran 2" in capsys.readouterr().out
    calls.clear()
    assert main(["run", "--run-id", "third", *common]) == 0  # an identical run: a cache hit
    assert calls == []
    assert "reused 12 of 12 episodes from run `second`" in capsys.readouterr().out


@pytest.mark.usefixtures("prefect_api")
def test_wrong_agent_on_a_reused_run_id_cli_refuses_and_refresh_runs_it(tmp_path, suite, calls,
                                                                         capsys):
    store = str(tmp_path / "store")
    common = ["--suite", suite, "--k", "2", "--store", store, "--run-id", "r1"]
    assert main(["run", "--agent", AGENT, *common]) == 0
    good = Store(store).read_manifest("r1")["results"]["success_rate"]
    capsys.readouterr()
    assert main(["run", "--agent", FLAKY_AGENT, *common]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("ek-agents: RunMismatch: run 'r1' was started with other settings")
    assert "agent: 'tests.pipeline.pipeline_agents:counting_agent' (stored)" in err
    calls.clear()
    assert main(["run", "--agent", FLAKY_AGENT, "--refresh", *common]) == 0
    assert len(calls) == 12  # the new agent really ran
    man = Store(store).read_manifest("r1")
    assert man["agent"] == FLAKY_AGENT and man["fingerprint"]["agent"] == FLAKY_AGENT
    assert man["results"]["success_rate"] < good
    calls.clear()  # and its episodes were never indexed under the old agent's key
    assert main(["run", "--agent", AGENT, "--suite", suite, "--k", "2", "--store", store,
                 "--run-id", "fresh"]) == 0
    assert Store(store).read_manifest("fresh")["results"]["success_rate"] == good
    assert calls == []  # (the good agent's own cached episodes)
    with pytest.raises(RunMismatch):
        pipeline.plan_trials(_request(Store(store), "r1", suite, AGENT))
