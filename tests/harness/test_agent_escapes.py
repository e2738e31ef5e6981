"""Whatever an agent raises -- its own CancelledError, RecursionError, SystemExit,
KeyboardInterrupt -- or answers (not JSON, nested too deep) fails that trial and only that
trial, the same in plain and persisted runs; only the caller's cancellation cancels."""
from __future__ import annotations

import asyncio
import random

import pytest

from ek_agents.base import TaskSpec
from ek_agents.execution.harness import EPISODE_DEPTH, run_suite, run_trials
from ek_agents.execution import TrialRunner
from ek_agents.store import Store

from .layout import held_lines

N_TASKS, K = 40, 5


def _tasks():
    return [TaskSpec(f"t{i:02d}", input=f"q{i}", gold=f"a{i}") for i in range(N_TASKS)]


def _cancels(task_id: str, seed: int) -> bool:  # 5% of trials
    return random.Random(f"{task_id}:{seed}").random() < 0.05


async def cancelling_agent(task, *, seed):
    await asyncio.sleep(0)
    if _cancels(task.task_id, seed):
        raise asyncio.CancelledError()  # what an HTTP client does when its own request is cancelled
    return "a" + task.task_id[1:].lstrip("0") if task.task_id != "t00" else "a0"


@pytest.mark.parametrize("persist", [False, True])
def test_a_suite_with_5_percent_agent_cancellations_completes(tmp_path, persist):
    expected = {(t.task_id, i) for t in _tasks() for i in range(K) if _cancels(t.task_id, 7 + i)}
    assert 5 <= len(expected) <= 20  # about 5% of 200 trials
    extra = dict(persist=True, run_id="cancel", rootdir=str(tmp_path / "s")) if persist else {}
    report = run_suite(cancelling_agent, _tasks(), k=K, seed=7, **extra)
    assert report.n_trials == N_TASKS * K
    assert report.n_success == N_TASKS * K - len(expected)
    eps = run_trials(cancelling_agent, _tasks(), k=K, seed=7,
                     **({"store": extra["rootdir"], "run_id": "cancel"} if persist else {}))
    failed = {(e.task_id, e.meta["trial"]) for e in eps if e.meta.get("error")}
    assert failed == expected
    assert all(e.meta["error"].startswith("CancelledError") and e.success is False
               for e in eps if e.meta.get("error"))


def _deep(n):
    out: list = []
    for _ in range(n):
        out = [out]
    return out


RAISES = {"t01": lambda: asyncio.CancelledError(), "t02": lambda: SystemExit(3),
          "t03": lambda: KeyboardInterrupt(), "t04": lambda: RecursionError("too deep")}
ANSWERS = {"t05": lambda: _deep(5000), "t06": lambda: _deep(EPISODE_DEPTH + 1),
           "t07": lambda: object()}


def _answer(task):
    if task.task_id in RAISES:
        raise RAISES[task.task_id]()
    if task.task_id in ANSWERS:
        return ANSWERS[task.task_id]()
    return "a" + task.task_id[1:].lstrip("0") if task.task_id != "t00" else "a0"


def sync_agent(task):
    return _answer(task)


async def async_agent(task):
    await asyncio.sleep(0)
    return _answer(task)


@pytest.mark.parametrize("agent", [sync_agent, async_agent])
@pytest.mark.parametrize("timeout_s", [None, 30.0])
@pytest.mark.parametrize("persist", [False, True])
def test_every_escape_and_unstorable_answer_fails_its_trial_alike(tmp_path, agent, timeout_s, persist):
    tasks = [TaskSpec(f"t{i:02d}", input="q", gold=f"a{i}") for i in range(10)]
    store = dict(store=str(tmp_path / "s"), run_id="esc") if persist else {}
    eps = {e.task_id: e for e in run_trials(agent, tasks, timeout_s=timeout_s, **store)}
    errors = {tid: e.meta.get("error", "") for tid, e in eps.items()}
    assert errors["t01"].startswith("CancelledError") and errors["t02"] == "SystemExit: 3"
    assert errors["t03"].startswith("KeyboardInterrupt") and errors["t04"] == "RecursionError: too deep"
    for tid in ANSWERS:
        assert "cannot be stored as JSON" in errors[tid], (tid, errors[tid])
    assert not errors["t00"] and not errors["t08"] and not errors["t09"]
    assert sum(1 for e in eps.values() if e.meta.get("error")) == 7
    report = run_suite(agent, tasks, timeout_s=timeout_s,  # grading a plain run never recurses
                       **({"run_id": "esc2", "rootdir": store["store"]} if persist else {}))
    assert report.n_success == 3
    if persist:  # every trial was stored and reads back
        again = run_trials(agent, tasks, timeout_s=timeout_s, **store)  # same fingerprint: a resume
        assert [e.meta.get("error") for e in again] == [errors[t.task_id] or None for t in tasks]
        assert len(held_lines(Store(store["store"]), "esc")) == 10


def test_only_the_callers_cancellation_cancels():
    started = asyncio.Event()

    async def slow(task):
        started.set()
        await asyncio.sleep(30)
        return "x"

    async def main():
        runner = TrialRunner(slow, {t.task_id: t for t in _tasks()[:4]}, seed=None, run=None,
                         max_concurrency=4, timeout_s=None, retries=0, backoff_s=0.0,
                         store=None, run_id=None)
        job = asyncio.create_task(runner.run_all([(f"t{i:02d}", 0) for i in range(4)],
                                                 total=4, already=0, show=False))
        await started.wait()
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job

    asyncio.run(main())
