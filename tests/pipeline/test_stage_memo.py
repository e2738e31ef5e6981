"""The stages after the trials reuse, within one process, the episodes a stage already parsed
or wrote (``records.trials.read_episodes``): same bytes out, and a changed document is still refused."""
from __future__ import annotations

import json

import pytest

from ek_agents.records import documents, stagecache, trials
from ek_agents.stages import evaluate as stages
from ek_agents.base import Episode
from ek_agents.errors import DigestMismatch
from ek_agents.store import Store, canonical_json


@pytest.fixture()
def stored(tmp_path):
    suite = tmp_path / "suite.jsonl"
    rows = [{"suite": {"name": "memo", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"q{i}", "gold": f"A{i}"} for i in range(6)]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    st = Store(str(tmp_path / "store"))

    def make(run_id: str):
        tasks = stages.record_suite(st, run_id, str(suite))
        eps = [Episode(f"t{i}", output=f"A{i}" if (i + j) % 3 else "no",
                       meta={"trial": j, "nested": {"x": [i, j]}}) for i in range(6) for j in range(3)]
        ref = stagecache.index_output(st, run_id, "episodes", "e" * 64, documents.episodes_doc(eps))
        return tasks, ref

    trials.forget_episodes()
    yield st, make
    trials.forget_episodes()


def _stages(st, run_id, tasks, episodes):
    graded = stages.run_grade(st, run_id, episodes, tasks, None)
    metrics = stages.run_metrics(st, run_id, graded, tasks, k=3, seed=7, run=None)
    report = stages.run_cost(st, run_id, graded, metrics, None, seed=7)
    return graded, metrics, report


def test_a_memo_hit_gives_the_same_bytes_as_reading_the_store(stored, monkeypatch):
    st, make = stored
    parsed = []
    real = documents.episodes_of
    for mod in (trials, stages):  # every reader of a stored episodes document
        monkeypatch.setattr(mod, "episodes_of", lambda doc: parsed.append(1) or real(doc))
    tasks, episodes = make("a")
    held = _stages(st, "a", tasks, episodes)
    assert len(parsed) == 1  # the episodes, once; metrics and cost took the graded episodes held
    # each stage from the store alone: a fresh memo, and the stages as the audit runs them
    trials.forget_episodes()
    assert trials.read_episodes(st, held[0]) == real(st.read_json(held[0].key))
    assert len(parsed) == 2
    ep_doc, tasks_doc = st.read_json(episodes.key), st.read_json(tasks.key)
    graded = stages.grade_stage(ep_doc, tasks_doc)
    metrics = stages.metrics_stage(graded, tasks_doc, k=3, seed=7)
    report = stages.cost_stage(graded, metrics, None, seed=7)
    for ref, doc in zip(held, (graded, metrics, report)):
        assert st.read_bytes(ref.key) == canonical_json(doc)


def test_a_forged_document_is_refused_though_its_episodes_are_held(stored):
    st, make = stored
    tasks, episodes = make("b")
    graded = stages.run_grade(st, "b", episodes, tasks, None)
    doc = st.read_json(graded.key)
    doc["episodes"][0]["success"] = not doc["episodes"][0]["success"]
    st.write_json(graded.key, doc)  # the graded document edited after its stage wrote it
    with pytest.raises(DigestMismatch, match="graded"):
        stages.run_metrics(st, "b", graded, tasks, k=3, seed=7, run=None)
    with pytest.raises(DigestMismatch, match="graded"):
        trials.read_episodes(st, graded)


def test_what_a_memo_hit_returns_is_the_callers_own_list(stored):
    st, make = stored
    tasks, episodes = make("c")
    graded = stages.run_grade(st, "c", episodes, tasks, None)
    first = trials.read_episodes(st, graded)
    first.clear()
    assert len(trials.read_episodes(st, graded)) == 18


def test_the_memo_is_bounded(stored, monkeypatch):
    st, make = stored
    monkeypatch.setattr(trials, "EPISODES_MEMO_DOCS", 1)
    parsed = []
    real = documents.episodes_of
    for mod in (trials, stages):  # every reader of a stored episodes document
        monkeypatch.setattr(mod, "episodes_of", lambda doc: parsed.append(1) or real(doc))
    tasks, episodes = make("d")
    trials.read_episodes(st, episodes)
    trials.read_episodes(st, episodes)
    assert len(parsed) == 1
    graded = stages.run_grade(st, "d", episodes, tasks, None)  # holds the graded ones only now
    trials.read_episodes(st, graded)
    assert len(parsed) == 1
    trials.read_episodes(st, episodes)
    assert len(parsed) == 2
    trials.read_episodes(st, graded)  # evicted by the episodes just read
    assert len(parsed) == 3


def test_the_grade_stage_takes_what_the_chunks_graded_and_it_is_what_grading_the_store_gives(
        tmp_path, monkeypatch):
    # the chunks grade the trials they stored (record.grade_trials); in the same process the
    # grade stage takes that document instead of parsing and grading the episodes again, and
    # it is byte for byte what grading the stored episodes document gives
    from ek_agents import pipeline
    from ek_agents.pipeline.chunks import TrialRequest

    suite = tmp_path / "suite.jsonl"
    rows = [{"suite": {"name": "chunks", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"q{i}", "gold": f"A{i}"} for i in range(5)]
    rows += [{"task_id": "tf", "input": "q", "gold": {"x": 1}, "checker": "final_state"}]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    st = Store(str(tmp_path / "store"))
    trials.forget_episodes()
    tasks = stages.record_suite(st, "r", str(suite))
    request = TrialRequest(store=st.url, run_id="r", tasks=tasks, k=3, seed=1, chunk_size=4,
                           agent="tests.pipeline.pipeline_agents:counting_agent", check=None)
    plan = pipeline.plan_trials(request)
    ran = [pipeline.run_trial_chunk(c) for c in plan.chunks]
    assert len(ran) == 5 and all(len(c.graded) == len(c.trials) for c in ran)
    episodes = pipeline.collect_episodes(plan, ran)
    parsed = []
    real = documents.episodes_of
    for mod in (trials, stages):  # every reader of a stored episodes document
        monkeypatch.setattr(mod, "episodes_of", lambda doc: parsed.append(1) or real(doc))
    graded = stages.run_grade(st, "r", episodes, tasks, None)
    assert parsed == []  # the chunks' grading, taken
    stages.run_metrics(st, "r", graded, tasks, k=3, seed=7, run=None)
    assert parsed == []  # and the graded episodes with it
    expected = stages.grade_stage(st.read_json(episodes.key), st.read_json(tasks.key))
    assert st.read_bytes(graded.key) == canonical_json(expected)
    assert trials.read_episodes(st, graded) == real(expected)
    # a changed episodes document is refused, as when the stage grades it itself
    trials.forget_episodes()
    again = [pipeline.run_trial_chunk(c) for c in plan.chunks]
    ref = pipeline.collect_episodes(plan, again)
    st.write_bytes(ref.key, st.read_bytes(ref.key) + b" ")
    with pytest.raises(DigestMismatch):
        stages.run_grade(st, "r2", ref, tasks, None)
    trials.forget_episodes()
