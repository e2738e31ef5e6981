"""run_trials: concurrency, seeds, wrapping, provenance, retries, persistence and resume."""
from __future__ import annotations

import asyncio
import random
import threading

import pytest

from ek_agents.base import Cost, Episode, RunProvenance, Step, TaskSpec, Trajectory
from ek_agents.errors import InvalidInput, StoreError, TransientAgentError
from ek_agents.execution.harness import run_trials
from ek_agents.records.segments import RunSegments, iter_segments
from ek_agents.store import Store, episode_key, segment_index_prefix, segments_prefix


def _held(store, run_id: str) -> dict:
    """The trials the run's segments hold: ``{(task_id, trial): Episode}``."""
    st = store if isinstance(store, Store) else Store(store)
    return {t.pair: Episode.from_json(t.data) for batch in iter_segments(st, RunSegments.load(st, run_id))
            for t in batch}


def _tasks(n=5):
    return [TaskSpec(f"t{i}", input=f"in{i}", gold=f"IN{i}") for i in range(n)]


def test_sorted_seeded_and_wrapped():
    seen = []

    def agent(task, *, seed):
        seen.append((task.task_id, seed))
        return task.input.upper()

    tasks = list(reversed(_tasks(3)))
    eps = run_trials(agent, tasks, k=3, seed=100, run=RunProvenance(model="m", simulator="sim"))
    assert [(e.task_id, e.meta["trial"]) for e in eps] == [(f"t{i}", j) for i in range(3) for j in range(3)]
    assert sorted(seen) == sorted((f"t{i}", 100 + j) for i in range(3) for j in range(3))
    for e in eps:
        assert e.run.seed == 100 + e.meta["trial"]
        assert (e.run.model, e.run.simulator) == ("m", "sim")
        assert e.output == "IN" + e.task_id[1:] and e.success is None and e.cost is None
        assert e.meta["attempts"] == 1 and e.meta["latency_s"] >= 0


def test_seed_passed_only_to_agents_that_accept_it():
    got = {}

    def no_seed(task):
        return 1

    def kw(task, **opts):
        got.setdefault("kw", []).append(opts.get("seed"))
        return 1

    async def positional(task, seed=None):
        got.setdefault("pos", []).append(seed)
        return 1

    assert len(run_trials(no_seed, _tasks(1), k=2, seed=5)) == 2
    run_trials(kw, _tasks(1), k=2, seed=5)
    run_trials(positional, _tasks(1), k=2, seed=7)
    assert sorted(got["kw"]) == [5, 6] and sorted(got["pos"]) == [7, 8]
    eps = run_trials(kw, _tasks(1), k=1)  # no seed: nothing passed, None recorded
    assert got["kw"][-1] is None and eps[0].run.seed is None


def test_returned_episode_keeps_its_own_parts_and_provenance_is_merged():
    traj = Trajectory([Step("search", {"q": "x"}, observation="ok")])

    def agent(task):
        return Episode("", traj, output="o", final_state={"db": 1},
                       cost=Cost(input_tokens=7, output_tokens=3),
                       run=RunProvenance(model="agent-model", temperature=0.7, scaffold="mine"),
                       meta={"note": "kept"})

    ep, = run_trials(agent, _tasks(1), seed=3, run=RunProvenance(model="declared", simulator="s1"))
    assert ep.trajectory == traj and ep.final_state == {"db": 1} and ep.output == "o"
    assert ep.cost.input_tokens == 7 and ep.cost.latency_s is not None  # latency filled in
    assert ep.run == RunProvenance(seed=3, temperature=0.7, model="declared", simulator="s1",
                                   scaffold="mine")
    assert ep.meta["note"] == "kept" and ep.task_id == "t0"


def test_async_agents_run_concurrently_up_to_the_limit():
    state = {"now": 0, "max": 0}

    async def agent(task):
        state["now"] += 1
        state["max"] = max(state["max"], state["now"])
        await asyncio.sleep(0.01)
        state["now"] -= 1
        return task.input

    eps = run_trials(agent, _tasks(10), k=2, max_concurrency=4)
    assert len(eps) == 20 and state["max"] == 4


def test_sync_agents_run_in_a_thread_pool():
    barrier = threading.Barrier(3, timeout=10)  # only passes if 3 trials run at the same time
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def agent(task):
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        barrier.wait()
        with lock:
            state["now"] -= 1
        return task.input

    eps = run_trials(agent, _tasks(6), k=1, max_concurrency=3)
    assert all("error" not in e.meta for e in eps) and state["max"] == 3


def test_result_does_not_depend_on_completion_order():
    async def agent(task, *, seed):
        await asyncio.sleep(random.random() * 0.01)  # unseeded jitter: a different finish order
        return f"{task.task_id}-{seed}"

    def strip(eps):
        return [{**e.to_dict(), "meta": {k: v for k, v in e.meta.items() if k != "latency_s"}}
                for e in eps]

    a = run_trials(agent, _tasks(8), k=3, seed=1, max_concurrency=8)
    b = run_trials(agent, _tasks(8), k=3, seed=1, max_concurrency=3)
    assert strip(a) == strip(b)


def test_transient_errors_are_retried_and_counted():
    calls = {}

    def agent(task):
        n = calls[task.task_id] = calls.get(task.task_id, 0) + 1
        if n <= 2:
            raise TransientAgentError("429 rate limited")
        return Episode(output="ok", cost=Cost(input_tokens=5, retries=1))

    ep, = run_trials(agent, _tasks(1), retries=3, backoff_s=0.001)
    assert ep.cost.retries == 3 and ep.meta["attempts"] == 3 and "error" not in ep.meta

    calls.clear()
    ep, = run_trials(agent, _tasks(1), retries=1, backoff_s=0.001)
    assert ep.success is False and ep.meta["error_kind"] == "infrastructure"
    assert ep.meta["error"] == "TransientAgentError: 429 rate limited" and ep.meta["retries"] == 1

    calls.clear()
    ep, = run_trials(lambda t: agent(t) and "bare", _tasks(1), retries=2, backoff_s=0)
    assert ep.cost is None and ep.meta["retries"] == 2  # unknown cost stays unknown


def test_other_exceptions_are_not_retried():
    calls = []

    def agent(task):
        calls.append(1)
        raise KeyError("missing tool")

    ep, = run_trials(agent, _tasks(1), retries=5, backoff_s=0)
    assert len(calls) == 1 and ep.meta["error"] == "KeyError: 'missing tool'"
    assert ep.meta["error_kind"] == "exception" and ep.success is False


def test_only_runs_a_subset():
    calls = []

    def agent(task, seed=None):
        calls.append((task.task_id, seed))
        return 1

    eps = run_trials(agent, _tasks(3), k=3, seed=0, only={("t2", 1), ("t0", 2)})
    assert [(e.task_id, e.meta["trial"]) for e in eps] == [("t0", 2), ("t2", 1)]
    assert sorted(calls) == [("t0", 2), ("t2", 1)]
    with pytest.raises(InvalidInput, match="not in the suite"):
        run_trials(agent, _tasks(3), k=3, only=[("t9", 0)])
    with pytest.raises(InvalidInput, match="trial must be in 0..2"):
        run_trials(agent, _tasks(3), k=3, only=[("t0", 3)])


def test_persist_and_resume_on_every_backend(store_url):
    url = store_url
    calls = []

    def agent(task, *, seed):
        calls.append((task.task_id, seed))
        return task.input

    first = run_trials(agent, _tasks(4), k=2, seed=0, store=url, run_id="r1",
                       only=[("t0", 0), ("t1", 1), ("t3", 0)])
    assert len(calls) == 3
    st = Store(url)  # one segment and its writer's index, no per-trial object
    assert st.list("runs/r1/episodes") == []
    assert len(st.list(segments_prefix("r1"))) == len(st.list(segment_index_prefix("r1"))) == 1
    held = _held(st, "r1")
    assert sorted(held) == [("t0", 0), ("t1", 1), ("t3", 0)] and held[("t1", 1)] == first[1]
    calls.clear()
    full = run_trials(agent, _tasks(4), k=2, seed=0, store=url, run_id="r1")
    assert len(full) == 8 and len(calls) == 5
    assert ("t0", 0) not in calls and ("t1", 1) not in calls
    assert [e for e in full if (e.task_id, e.meta["trial"]) == ("t1", 1)] == [first[1]]
    calls.clear()
    again = run_trials(agent, _tasks(4), k=2, seed=0, store=url, run_id="r1")
    assert calls == [] and again == full
    with pytest.raises(InvalidInput, match="seed"):
        run_trials(agent, _tasks(4), k=2, seed=50, store=url, run_id="r1")


def test_unserializable_output_is_a_failed_trial_when_persisting(tmp_path):
    class Opaque:
        pass

    ep, = run_trials(lambda t: Opaque(), _tasks(1), store=str(tmp_path), run_id="r")
    assert ep.success is False and "JSON" in ep.meta["error"]
    assert _held(str(tmp_path), "r") == {("t0", 0): ep}


def test_corrupt_stored_episode_is_run_again(tmp_path):
    st = Store(tmp_path)  # a per-trial file (the layout of earlier versions), half written
    st.write_bytes(episode_key("r", "t0", 0), b"{half an episo")
    ep, = run_trials(lambda t: "fresh", _tasks(1), store=st, run_id="r")
    assert ep.output == "fresh"
    assert not st.exists(episode_key("r", "t0", 0)) and _held(st, "r")[("t0", 0)].output == "fresh"


def test_works_inside_a_running_event_loop():
    async def main():
        return run_trials(lambda t: t.input, _tasks(2))

    assert [e.output for e in asyncio.run(main())] == ["in0", "in1"]


@pytest.mark.parametrize("kwargs, match", [
    ({"k": 0}, "k must be"), ({"max_concurrency": 0}, "max_concurrency"),
    ({"timeout_s": 0}, "timeout_s"), ({"retries": -1}, "retries"), ({"seed": 1.5}, "seed"),
    ({"store": "memory://x"}, "run_id"), ({"run_id": "../x"}, "invalid run id"),
    ({"run": {"model": "m"}}, "RunProvenance"),
])
def test_bad_parameters_are_refused(kwargs, match):
    with pytest.raises(InvalidInput, match=match):
        run_trials(lambda t: 1, _tasks(1), **kwargs)


def test_bad_agent_and_tasks_are_refused():
    with pytest.raises(InvalidInput, match="callable"):
        run_trials("not an agent", _tasks(1))
    with pytest.raises(InvalidInput, match="twice"):
        run_trials(lambda t: 1, _tasks(1) + _tasks(1))
    with pytest.raises(InvalidInput, match="empty"):
        run_trials(lambda t: 1, [])


class _FailingStore(Store):
    """A store whose ``fail_at``-th write of a segment or segment index (1-based) raises a
    StoreError, and every later one."""

    def __init__(self, url: str, fail_at: int) -> None:
        super().__init__(url)
        self.fail_at, self.writes = fail_at, 0

    def write_bytes(self, key: str, data: bytes) -> str:
        mine = "/segment" in key
        self.writes += mine
        if mine and self.writes >= self.fail_at:
            raise StoreError(f"cannot write {key!r}: disk full (test)")
        return super().write_bytes(key, data)


def _echo(task: TaskSpec) -> object:
    return task.input


@pytest.mark.parametrize("fail_at", [1, 2])
def test_a_failed_trial_write_fails_the_run_with_its_own_error_and_keeps_what_was_stored(tmp_path, fail_at):
    # the trials' segment is written by the run's writer threads after the last trial
    # finished: a failure of its PUT (1) or of its index's (2: an orphan segment) is the run's
    # error, and nothing counts as stored
    tasks = [TaskSpec(f"t{i}", input=i, gold=i) for i in range(6)]
    st = _FailingStore(str(tmp_path / "st"), fail_at)
    with pytest.raises(StoreError, match="disk full"):
        run_trials(_echo, tasks, k=2, store=st, run_id="r", max_concurrency=4)
    assert _held(str(tmp_path / "st"), "r") == {}
    resumed = run_trials(_echo, tasks, k=2, store=str(tmp_path / "st"), run_id="r")
    assert [(e.task_id, e.meta["trial"], e.output) for e in resumed] == \
        [(f"t{i}", n, i) for i in range(6) for n in range(2)]
    assert len(_held(str(tmp_path / "st"), "r")) == 12
    assert len(Store(str(tmp_path / "st")).list(segments_prefix("r"))) == 1  # the orphan removed
