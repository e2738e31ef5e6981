"""Trial segments: bounded, compressed, content-addressed, indexed per writer; a run
stored in segments resumes, reports and audits like one stored a file per trial."""
from __future__ import annotations

import json

import pytest

from ek_agents.records import segments as sg
from ek_agents.stages.audit import audit
from ek_agents.base import Episode, TaskSpec
from ek_agents.errors import DigestMismatch
from ek_agents.harness import run_suite, run_trials
from ek_agents.store import Store, episodes_prefix, segment_index_prefix, segments_prefix

from .layout import to_per_trial_files


def _tasks(n: int) -> list[TaskSpec]:
    return [TaskSpec(f"t{i:03d}", input=f"w{i}", gold=f"W{i}") for i in range(n)]


def _counting(calls: list, fail=lambda task, seed: False):
    def agent(task, *, seed):
        calls.append((task.task_id, seed))
        if fail(task, seed):
            raise RuntimeError("boom")
        return task.input.upper() if seed % 3 else "?"
    return agent


def test_pack_and_unpack_round_trip_any_pairs():
    import random

    rng = random.Random(7)
    pairs = {(f"t{rng.randrange(20)}", rng.randrange(50)) for _ in range(300)}
    packed = sg.pack_pairs(pairs)
    assert sg.unpack_pairs(packed) == sorted(pairs)
    assert len(json.dumps(sg.pack_pairs((f"t{i}", j) for i in range(41) for j in range(100)))) < 900


def test_the_index_document_is_the_canonical_json_of_the_index_after_every_seal(tmp_path):
    """Each seal stores the writer's whole index, its earlier entries' JSON kept from their
    seals: the bytes are those of the index dumped whole, also once the entries are changed."""
    from ek_agents.core import canonical_json

    st = Store(str(tmp_path / "s"))
    w = sg.SegmentWriter(st, "r", writer="w-1", max_trials=3,
                         summarize=lambda pairs, lines, eps: {"n": len(pairs), "x": [1.5, None]})
    for i in range(11):
        if w.add((f"t\u2028{i % 4}", i), b'{"x":1}'):
            assert st.read_bytes(w.index_key) == canonical_json(w.index.to_dict())
    first = w.index.segments[0].to_dict()
    w.index.segments[0] = sg.SegmentEntry.from_dict({**first, "dropped": [["t", [[0, 0]]]]})
    w.flush()
    assert st.read_bytes(w.index_key) == canonical_json(w.index.to_dict())
    assert len(w.index.segments) == 4 and w.index.segments[0].dropped


def test_segments_are_bounded_compressed_and_verified(tmp_path):
    st = Store(str(tmp_path / "s"))
    w = sg.SegmentWriter(st, "r", writer="w", max_trials=100, max_bytes=10_000)
    line = json.dumps({"x": "y" * 150}).encode()
    stored = []
    for i in range(1000):
        stored += w.add(("t", i), line)
    stored += w.flush()
    segs = sg.RunSegments.load(st, "r")
    sizes = [e.n for _, e in segs.entries]
    assert sum(sizes) == 1000 and max(sizes) <= 100  # the byte bound cut them at ~60 lines
    assert all(e.raw <= 10_000 + len(line) + 1 and e.size < e.raw / 5 for _, e in segs.entries)
    assert sorted(t.pair for t in stored) == sorted(segs.pairs()) == [("t", i) for i in range(1000)]
    assert w.puts == 2 * len(sizes)  # one segment + one index rewrite each
    # a changed byte is refused by name
    entry = segs.entries[0][1]
    data = bytearray(st.read_bytes(entry.key))
    data[-1] ^= 1
    st.write_bytes(entry.key, bytes(data))
    with pytest.raises(DigestMismatch, match=entry.key):
        sg.read_segment(st, entry)


def test_a_run_in_segments_resumes_only_what_no_indexed_segment_holds(tmp_path):
    url, calls = str(tmp_path / "s"), []
    agent = _counting(calls)
    first = run_trials(agent, _tasks(30), k=10, seed=0, store=url, run_id="r1",
                       only=[(f"t{i:03d}", j) for i in range(15) for j in range(10)])
    st = Store(url)
    assert len(calls) == 150 and st.list(episodes_prefix("r1")) == []
    assert len(st.list(segments_prefix("r1"))) == 1 and len(st.list(segment_index_prefix("r1"))) == 1
    calls.clear()
    full = run_trials(agent, _tasks(30), k=10, seed=0, store=url, run_id="r1")
    assert len(calls) == 150 and len(full) == 300
    assert {(t, s) for t, s in calls} == {(f"t{i:03d}", j) for i in range(15, 30) for j in range(10)}
    assert [e.to_dict() for e in full[:150]] == [e.to_dict() for e in first]
    calls.clear()
    again = run_trials(agent, _tasks(30), k=10, seed=0, store=url, run_id="r1")
    assert calls == [] and [e.to_dict() for e in again] == [e.to_dict() for e in full]
    assert sg.RunSegments.load(st, "r1").duplicates() == 0


def test_an_orphan_segment_does_not_count_and_is_removed(tmp_path):
    """A writer killed between storing a segment and indexing it: the segment is an orphan,
    its trials run again, and the next claim removes it."""
    url, calls = str(tmp_path / "s"), []
    agent = _counting(calls)
    st = Store(url)
    run_trials(agent, _tasks(4), k=5, seed=0, store=url, run_id="r",
               only=[("t000", 0)])
    orphan = sg.SegmentWriter(st, "r", writer="dead")
    orphan.add(("t001", 0), Episode("t001", output="W1", meta={"trial": 0}).to_json().encode())
    def killed_before_the_index(key, data):
        if "/segment-index/" in key:
            raise OSError("killed")
        return st.write_bytes(key, data)

    orphan.store = type("NoIndex", (), {"write_bytes": staticmethod(killed_before_the_index)})()
    with pytest.raises(OSError):
        orphan.flush()
    assert len(st.list(segments_prefix("r"))) == 2
    calls.clear()
    eps = run_trials(agent, _tasks(4), k=5, seed=0, store=url, run_id="r")
    assert len(eps) == 20 and len(calls) == 19 and ("t001", 0) in calls
    segs = sg.RunSegments.load(st, "r")
    assert segs.orphans() == [] and segs.duplicates() == 0 and len(segs.pairs()) == 20


def test_retry_errored_and_refresh_in_segments(tmp_path):
    url, calls = str(tmp_path / "s"), []
    broken = {"t002"}
    agent = _counting(calls, fail=lambda task, seed: task.task_id in broken)
    # the agent's closure holds ``broken``, which changes: its caller says what identifies it
    run_trials(agent, _tasks(6), k=4, seed=0, store=url, run_id="r",
               agent_id="counting")
    broken.clear()
    calls.clear()
    eps = run_trials(agent, _tasks(6), k=4, seed=0, store=url, run_id="r",
                     retry_errored=True, agent_id="counting")
    assert sorted(calls) == [("t002", i) for i in range(4)]
    assert not any(e.meta.get("error") for e in eps)
    segs = sg.RunSegments.load(Store(url), "r")
    assert segs.duplicates() == 0 and len(segs.pairs()) == 24
    calls.clear()
    run_trials(agent, _tasks(6), k=4, seed=0, store=url, run_id="r", refresh=True,
               agent_id="counting")
    assert len(calls) == 24 and len(sg.RunSegments.load(Store(url), "r").entries) == 1


def test_a_misfiled_segment_line_runs_again(tmp_path):
    url, calls = str(tmp_path / "s"), []
    agent = _counting(calls)
    st = Store(url)
    run_trials(agent, _tasks(2), k=2, seed=0, store=url, run_id="r",
               only=[("t000", 0)])
    w = sg.SegmentWriter(st, "r", writer="zz-forged")  # says t001/0, holds t000/1's episode
    w.add(("t001", 0), Episode("t000", output="x", meta={"trial": 1}).to_json().encode())
    w.flush()
    calls.clear()
    eps = run_trials(agent, _tasks(2), k=2, seed=0, store=url, run_id="r")
    assert sorted(calls) == [("t000", 1), ("t001", 0), ("t001", 1)]
    assert [(e.task_id, e.meta["trial"]) for e in eps] == [("t000", 0), ("t000", 1),
                                                          ("t001", 0), ("t001", 1)]


def test_old_per_trial_runs_resume_in_segments(tmp_path):
    """A run stored one file per trial resumes with segments on: both layouts read back."""
    url, calls = str(tmp_path / "s"), []
    agent = _counting(calls)
    run_trials(agent, _tasks(3), k=3, seed=0, store=url, run_id="r",
               only=[("t000", 0), ("t001", 2)])
    assert to_per_trial_files(Store(url), "r") == 2
    calls.clear()
    eps = run_trials(agent, _tasks(3), k=3, seed=0, store=url, run_id="r")
    assert len(calls) == 7 and len(eps) == 9
    st = Store(url)
    assert len(st.list(episodes_prefix("r"))) == 2 and len(sg.RunSegments.load(st, "r").pairs()) == 7


@pytest.mark.parametrize("segments", [True, False])
def test_a_persisted_run_in_segments_reports_and_audits_like_per_trial_files(tmp_path, segments):
    url, calls = str(tmp_path / "s"), []
    report = run_suite(_counting(calls), _tasks(8), k=3, seed=1, run_id="r", rootdir=url)
    if not segments:  # the run as earlier versions stored it: resumed (nothing runs), recorded
        assert to_per_trial_files(Store(url), "r") == 24
        calls.clear()
        report = run_suite(_counting(calls), _tasks(8), k=3, seed=1, run_id="r", rootdir=url)
        assert calls == [] and report.detail["reused"]["kept"] == 24
        assert len(Store(url).list(episodes_prefix("r"))) == 24
    plain = run_suite(_counting([]), _tasks(8), k=3, seed=1)
    assert report.success_rate == plain.success_rate and report.pass_hat_k == plain.pass_hat_k
    st = Store(url)
    result = audit(st, "r")
    assert result.passed, result.problems
    man = st.read_manifest("r")
    seg_keys = [k for k in man["artifacts"] if "/segments/" in k]
    assert (len(seg_keys) == 1) == segments
    if segments:  # a changed segment fails the audit by name
        key = seg_keys[0]
        entry = sg.RunSegments.load(st, "r").entries[0][1]
        lines = sg.read_segment(st, entry)
        forged = [t.data.replace(b'"?"', b'"W0"') for t in lines]
        st.write_bytes(key, sg.encode_segment(forged))
        bad = audit(st, "r")
        assert not bad.passed and any(key in p for p in bad.problems)


def test_agent_calls_never_run_far_ahead_of_storage(tmp_path):
    """An agent that answers without awaiting never yields to the loop; with segments the
    harness still keeps its calls at most one segment (filling while one is stored) plus
    ~2 x WRITER_BACKLOG ahead of what is stored, so a killed process loses that, not its whole
    chunk (without the throttle: 5,904 ahead of 4,096 trials here)."""
    from ek_agents.execution import _trialwriter as trialwriter

    calls, seen = [0], []

    async def eager(task, *, seed):
        calls[0] += 1
        return "x"

    class Watching(Store):
        def write_bytes(self, key, data):
            if "/segments/" in key:
                seen.append(calls[0])
            return super().write_bytes(key, data)

    tasks = [TaskSpec(f"t{i:03d}", input="x", gold="x") for i in range(100)]
    run_trials(eager, tasks, k=100, seed=0, store=Watching(str(tmp_path / "s")), run_id="r")
    # at the n-th segment PUT, (n - 1) full segments were stored before it and this one holds
    # SEGMENT_TRIALS: the calls made beyond that are queued or not yet handed over
    ahead = [c - (i + 1) * sg.SEGMENT_TRIALS for i, c in enumerate(seen[:-1])]
    # (the next segment may fill while one is stored: at most one segment more)
    assert ahead and max(ahead) <= sg.SEGMENT_TRIALS + 2 * trialwriter.WRITER_BACKLOG + 9, ahead


def test_a_slow_segment_store_is_waited_for_not_polled(tmp_path):
    """When the segment writer falls behind, the event loop waits for it to catch up (the
    writer thread wakes it once); it does not poll. Polling (512 trials re-checking every few
    ms) took a core of CPU and the GIL the writer needed: run_suite at 100,000 trials measured
    15-60 s against 6 s (bench.scale)."""
    import time

    stalled = [0.0]

    class Slow(Store):
        def write_bytes(self, key, data):
            if "/segments/" in key:
                t0 = time.monotonic()
                time.sleep(0.4)
                stalled[0] += time.monotonic() - t0
            return super().write_bytes(key, data)

    async def eager(task, *, seed):
        return "x"

    tasks = [TaskSpec(f"t{i:03d}", input="x", gold="x") for i in range(100)]
    cpu0 = time.process_time()
    eps = run_trials(eager, tasks, k=100, seed=0, store=Slow(str(tmp_path / "s")), run_id="r")
    cpu = time.process_time() - cpu0
    assert len(eps) == 10_000 and stalled[0] >= 0.8
    # the run's own CPU (10,000 episodes built, compressed, written) is well under a second;
    # a loop polling through the stalls would add about a core for each stalled second
    assert cpu < 0.5 * stalled[0] + 1.5, (cpu, stalled[0])
