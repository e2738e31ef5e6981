"""A run's trial chunks, without Prefect: what each stores, what the collect step builds from
them, a retried chunk, and how the run's concurrency is shared among its chunks."""
from __future__ import annotations

from ek_agents.records import documents
from ek_agents import pipeline
from ek_agents.stages import evaluate as stages
from ek_agents.base import RunProvenance
from ek_agents.core import canonical_json
from ek_agents.records.segments import RunSegments, SegmentWriter
from ek_agents.store import Store, segments_prefix

from ..harness.layout import held_lines

from .conftest import AGENT


def _request(store: str, suite: str, **kw) -> pipeline.TrialRequest:
    st = Store(store)
    return pipeline.TrialRequest(
        store=st.url, run_id="r", tasks=stages.record_suite(st, "r", suite), agent=AGENT, k=2,
        seed=5, run=RunProvenance(seed=5, suite_version="1").to_dict(), **kw)


def test_chunks_share_the_runs_concurrency(tmp_path, suite):
    store = str(tmp_path / "store")
    plan = pipeline.plan_trials(_request(store, suite, chunk_size=2, max_concurrency=8,
                                                 parallel_chunks=4))
    assert len(plan.chunks) == 6 and all(c.claimed for c in plan.chunks)
    assert {c.concurrency for c in plan.chunks} == {2}  # 4 chunks at once x 2 = 8 in flight
    assert pipeline.chunk_workers(4, 3) == 3  # never more chunks at once than calls
    one = pipeline.plan_trials(_request(store, suite, chunk_size=12, max_concurrency=8,
                                                parallel_chunks=4))
    assert [c.concurrency for c in one.chunks] == [8]  # a single chunk gets all of it
    auto = pipeline.plan_trials(_request(store, suite, max_concurrency=6, parallel_chunks=2))
    # default sizes: whole rounds of each chunk's 3 slots (12 trials -> 4 chunks of 3, not 12 of 1)
    assert [(len(c.pairs), c.concurrency) for c in auto.chunks] == [(3, 3)] * 4


def test_collect_builds_the_episodes_document_from_what_the_chunks_stored(tmp_path, suite, calls):
    store = str(tmp_path / "store")
    st = Store(store)
    plan = pipeline.plan_trials(_request(store, suite, chunk_size=5))
    ran = [pipeline.run_trial_chunk(c) for c in plan.chunks]
    assert len(calls) == 12 and sum(len(r.trials) for r in ran) == 12
    held = held_lines(st, "r")
    for trial in (t for r in ran for t in r.trials):  # what each chunk says it wrote, it wrote
        assert held[(trial.task_id, trial.trial)] == trial.data.encode("ascii")
        assert st.digest(trial.key) == trial.sha256 and "/segments/" in trial.key
    ref = pipeline.collect_episodes(plan, ran)
    data = st.read_bytes(ref.key)
    episodes = documents.episodes_of(st.read_json(ref.key))
    assert data == canonical_json(documents.episodes_doc(episodes))  # assembled = canonical
    assert [(e.task_id, e.meta["trial"]) for e in episodes] == sorted(
        (f"t{i}", j) for i in range(6) for j in range(2))
    assert ref.trials == {k: st.digest(k) for k in st.list(segments_prefix("r"))}
    # no chunk results (a resumed run's collect): the same document, read from the store
    again = pipeline.collect_episodes(plan)
    assert st.read_bytes(again.key) == data and again.trials == ref.trials and len(calls) == 12


def test_a_retried_chunk_runs_only_its_missing_trials(tmp_path, suite, calls):
    store = str(tmp_path / "store")
    st = Store(store)
    plan = pipeline.plan_trials(_request(store, suite, chunk_size=4))
    chunk = plan.chunks[0]
    first = pipeline.run_trial_chunk(chunk)
    assert len(calls) == 4
    lost, misfiled = chunk.pairs[1], chunk.pairs[2]
    RunSegments.load(st, "r").drop([lost, misfiled])  # the attempt died before these were stored
    forged = SegmentWriter(st, "r", writer="zz-forged")  # and a segment holding another line
    forged.add(misfiled, b'{"task_id":"t9"}')              # says it is this trial
    forged.flush()
    retried = pipeline.run_trial_chunk(chunk, resume=True)
    assert len(calls) == 6  # the missing and the misfiled trial, nothing else
    assert [(t.task_id, t.trial) for t in retried.trials] == list(chunk.pairs)
    assert all(st.digest(t.key) == t.sha256 for t in retried.trials)
