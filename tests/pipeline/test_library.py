"""The pipeline's library side (ek_agents.stages, records, pipeline: stages / documents / chunks / manifest / audit): no Prefect needed."""
from __future__ import annotations

import sys

import pytest

import ek_agents.version
from ek_agents.records import documents, stagecache
from ek_agents import pipeline
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.records.manifest import (RunManifest, input_digest, package_info, report_markdown,
                                        report_rows)
from ek_agents.store import Store


def test_a_2000_trial_run_is_tens_of_task_runs():
    chunks = pipeline.plan_chunks([f"t{i}" for i in range(500)], k=4)
    assert len(chunks) == pipeline.DEFAULT_CHUNKS == 16
    pairs = [tuple(p) for c in chunks for p in c]
    assert len(pairs) == 2000 == len(set(pairs))
    assert len(pipeline.plan_chunks(["a"], k=3, chunk_size=1)) == 3
    with pytest.raises(InvalidInput):
        pipeline.plan_chunks(["a"], k=0)


@pytest.mark.parametrize("n_tasks,k,slots", [(500, 40, 16), (500, 4, 2), (7, 3, 16), (1, 1, 64),
                                             (333, 7, 5), (64, 2, 1), (100, 40, 16)])
def test_default_chunks_are_whole_rounds_of_their_slots(n_tasks, k, slots):
    # a chunk that is not a whole number of rounds of its slots ends with most of them idle,
    # once per chunk: the default sizes leave that to the run's last chunk alone
    ids = [f"t{i}" for i in range(n_tasks)]
    chunks = pipeline.plan_chunks(ids, k=k, slots=slots)
    pairs = [tuple(p) for c in chunks for p in c]
    assert pairs == [(t, i) for t in ids for i in range(k)]  # every pair once, in order
    assert 1 <= len(chunks) <= pipeline.DEFAULT_CHUNKS and all(chunks)
    assert all(len(c) % slots == 0 for c in chunks[:-1])
    rounds = [-(-len(c) // slots) for c in chunks]
    assert max(rounds) - min(rounds[:-1] or rounds) <= 1  # spread evenly
    assert pipeline.plan_chunks(ids, k=k, slots=slots, chunk_size=3) == \
        pipeline.plan_chunks(ids, k=k, chunk_size=3)  # a fixed size is kept as given
    with pytest.raises(InvalidInput, match="slots"):
        pipeline.plan_chunks(ids, k=k, slots=0)


def test_input_digest_covers_inputs_and_the_package_version(monkeypatch):
    a = input_digest("graded", episodes="e", check="output")
    assert a == input_digest("graded", check="output", episodes="e")
    assert a != input_digest("graded", episodes="e", check="final_state")
    assert a != input_digest("metrics", episodes="e", check="output")
    monkeypatch.setattr(ek_agents.version, "__version__", "9.9.9")  # the manifest reads it there
    assert a != input_digest("graded", episodes="e", check="output")


def test_cache_recomputes_a_damaged_artifact():
    st = Store("memory://ek-lib-cache")
    d = input_digest("x", n=1)
    doc, sha, hit = stagecache.cached(st, "x", d, lambda: {"v": 1})
    assert not hit and stagecache.cached(st, "x", d, lambda: {"v": 2})[:3] == ({"v": 1}, sha, True)
    st.write_bytes(f"artifacts/{sha}.json", b'{"v":666}')  # tampered: never trusted
    assert stagecache.cached(st, "x", d, lambda: {"v": 1}) == ({"v": 1}, sha, False)


def test_load_agent_names_the_problem():
    assert pipeline.load_agent("os.path:join")("a", "b") == "a/b"
    with pytest.raises(InvalidInput, match="import path"):
        pipeline.load_agent("os.path.join")
    with pytest.raises(InvalidInput, match="cannot import module 'no_such_mod_xyz'"):
        pipeline.load_agent("no_such_mod_xyz:f")
    with pytest.raises(InvalidInput, match="did you mean 'join'"):
        pipeline.load_agent("os.path:jion")
    with pytest.raises(UnknownName, match="did you mean 'inspect'"):
        documents.read_source("inspekt", "x")


def test_manifest_round_trips_and_records_the_code():
    info = package_info()
    assert info["version"] == ek_agents.__version__ and info["python"]
    assert info["git_sha"] is None or len(info["git_sha"].split("+")[0]) == 40
    m = RunManifest.build("r", results={"success_rate": 0.5, "k": 2, "pass_hat_k": 0.25,
                                        "cost_per_success": float("inf")})
    assert RunManifest.from_dict(m.to_dict()) == m
    assert m.created_at.endswith("Z") and "$/success inf" in m.headline()


def test_report_presentation():
    report = {"k": 2, "n_tasks": 2, "n_trials": 4, "success_rate": 0.0, "pass_hat_k": 0.0,
              "per_slice": {"a": {"n_tasks": 1, "n_trials": 2, "success_rate": 0.0, "pass_hat_k": 0.0}},
              "cost": {"total_dollars": 0.5, "cost_per_success": "Infinity",
                       "per_slice": {"a": {"total_dollars": 0.25, "cost_per_success": "Infinity"}}}}
    rows = report_rows(report)
    assert [r["slice"] for r in rows] == ["all", "a"]
    assert rows[1]["cost_per_success"] == float("inf") and rows[1]["dollars"] == 0.25
    md = report_markdown({"run_id": "r", "suite": {"name": "s", "version": "1"},
                          "gate": {"passed": False, "baseline": "b", "reasons": ["worse"]}}, report)
    assert "| a | 1 | 2 | 0.000 | 0.000 | $0.25 | inf |" in md and "FAILED" in md and "- worse" in md


def test_importing_ek_agents_pipeline_modules_imports_no_prefect():
    import subprocess

    code = ("import sys, ek_agents.cli, ek_agents.stages.evaluate, ek_agents.stages.audit, ek_agents.records.manifest; "
            "sys.exit('prefect' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
