"""A run at scale without Prefect (issue 27): plan from the segment index, chunks into
segments with summaries, the report merged; it equals the in-memory report, resumes after a
killed chunk without loss or duplicates, refuses another fingerprint, and audits."""
from __future__ import annotations

import dataclasses

import pytest

from ek_agents.pipeline import scalerun
from ek_agents.stages.audit import audit
from ek_agents.base import RunProvenance
from ek_agents.errors import RunMismatch
from ek_agents.harness import run_trials
from ek_agents.pipeline.chunks import TrialRequest
from ek_agents.pipeline.request import load_agent
from ek_agents.records.documents import read_ref, tasks_of
from ek_agents.stages.evaluate import record_prices, record_suite
from ek_agents.reporting import graded_report
from ek_agents.records.segments import RunSegments, pack_pairs, unpack_pairs
from ek_agents.store import Store

from .conftest import PRICES, write_suite

AGENT = "tests.pipeline.pipeline_agents:scale_agent"


def _request(st, suite, run_id, **kw):
    tasks = record_suite(st, run_id, suite)
    return TrialRequest(store=st.url, run_id=run_id, tasks=tasks, agent=AGENT, k=kw.pop("k", 20),
                        seed=3, run=RunProvenance(seed=3, suite_version=tasks.version).to_dict(),
                        **kw)


def test_scale_run_equals_in_memory_resumes_and_audits(tmp_path, calls):
    st = Store(str(tmp_path / "store"))
    suite = write_suite(tmp_path / "s.jsonl", n=60)
    req = _request(st, suite, "big", chunk_size=300)
    prices = record_prices(st, "big", PRICES)
    plan = scalerun.plan_scale(req, prices)
    assert plan.total == 1200 and plan.held == 0 and [c.n for c in plan.chunks] == [300] * 4
    # chunk 1 "dies" after its first segment: run its first 100 pairs only
    first = plan.chunks[1]
    partial = dataclasses.replace(first, pairs=pack_pairs(unpack_pairs(first.pairs)[:100]), n=100)
    scalerun.run_scale_chunk(partial)
    calls.clear()
    plan2 = scalerun.plan_scale(req, prices)
    assert plan2.held == 100 and sum(c.n for c in plan2.chunks) == 1100
    results = [scalerun.run_scale_chunk(c) for c in plan2.chunks]
    assert sum(r.ran for r in results) == len(calls) == 1100  # nothing ran twice
    again = scalerun.run_scale_chunk(plan2.chunks[0])  # a re-run of a finished chunk
    assert again.ran == 0 and again.skipped == plan2.chunks[0].n
    segs = RunSegments.load(st, "big")
    assert segs.duplicates() == 0 and len(segs.pairs()) == 1200
    man = scalerun.finish_scale(plan2, prices, results)
    tasks = tasks_of(read_ref(st, req.tasks))
    eps = run_trials(load_agent(AGENT), tasks, k=20, seed=3, run=RunProvenance.from_dict(req.run))
    from ek_agents.prices import load_prices

    _, _, report = graded_report(eps, tasks, k=20, check=None, metrics=None, price=None,
                                 prices=load_prices(PRICES), seed=3,
                                 run=RunProvenance.from_dict(req.run))
    assert st.read_json("runs/big/report.json") == report.to_dict()
    assert man.manifest["parameters"]["merged_segments"] >= 5
    result = audit(st, "big")
    assert result.passed, result.problems
    # all stored: a re-plan runs nothing
    assert scalerun.plan_scale(req, prices).chunks == ()
    # another fingerprint is refused; refresh removes every segment
    with pytest.raises(RunMismatch, match="k: 20"):
        scalerun.plan_scale(_request(st, suite, "big", k=5), prices)
    fresh = scalerun.plan_scale(_request(st, suite, "big", k=5, refresh=True), prices)
    assert fresh.refreshed == 1200 and fresh.total == 300 and RunSegments.load(st, "big").entries == []


def test_the_audit_of_a_streamed_run_names_a_changed_segment(tmp_path, calls):
    st = Store(str(tmp_path / "store"))
    req = _request(st, write_suite(tmp_path / "s.jsonl", n=10), "r", k=4)
    plan = scalerun.plan_scale(req, None)
    results = [scalerun.run_scale_chunk(c) for c in plan.chunks]
    scalerun.finish_scale(plan, None, results)
    assert audit(st, "r").passed
    key = RunSegments.load(st, "r").entries[0][1].key
    st.write_bytes(key, st.read_bytes(key)[:-3] + b"xyz")
    bad = audit(st, "r")
    assert not bad.passed and any(key in p for p in bad.problems)


def test_the_audit_regrades_a_sample_or_every_segment_and_names_a_forged_summary(tmp_path, calls):
    from ek_agents.records.segments import WriterIndex
    from ek_agents.store import segment_index_key

    st = Store(str(tmp_path / "store"))
    req = _request(st, write_suite(tmp_path / "s.jsonl", n=30), "r", k=10, chunk_size=60)
    plan = scalerun.plan_scale(req, None)
    scalerun.finish_scale(plan, None, [scalerun.run_scale_chunk(c) for c in plan.chunks])
    ok = audit(st, "r", deep=True)
    assert ok.passed and any("5 segments regraded" in c for c in ok.checked), ok.checked
    # a summary forged in the index (and the manifest's digest of that index updated too)
    segs = RunSegments.load(st, "r")
    writer, entry = segs.entries[0]
    idx = segs.writers[writer]
    forged = dict(entry.summary)
    forged["counts"] = {t: [n, n] for t, (n, _) in forged["counts"].items()}
    idx.segments[0] = type(entry).from_dict({**entry.to_dict(), "summary": forged})
    sha = st.write_json(segment_index_key("r", writer), WriterIndex.to_dict(idx))
    man = st.read_manifest("r")
    man["artifacts"][segment_index_key("r", writer)] = sha
    st.write_manifest("r", man)
    bad = audit(st, "r", deep=True)
    assert not bad.passed and any("summary" in p for p in bad.problems), bad.problems
