"""Our flows run on Prefect's async engine and are called like sync flows (``flows/entry.py``)."""
from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest
from prefect import task
from prefect.context import SyncClientContext
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.hashing import file_hash

from ek_agents_pipeline.flows.entry import EntryFlow, entry_flow
from ek_agents_pipeline.flows.outcome import fails_as_state

SEEN: dict = {}


@task
def add_one(x: int) -> int:
    SEEN.setdefault("clients", []).append(id(SyncClientContext.get()))
    return x + 1


@entry_flow(name="entry-test", persist_result=False, timeout_seconds=60)
@fails_as_state
def doubled(x: int = 1, sleep_s: float = 0.0) -> int:
    """A body that records where and how it ran."""
    SEEN["thread"] = threading.get_ident()
    SEEN["frozen"] = gc.get_freeze_count()
    time.sleep(sleep_s)
    with ThreadPoolTaskRunner(max_workers=2) as runner:  # a task run in another thread, too
        y = runner.submit(add_one, {"x": x}).result()
    return add_one(y) * 2


@pytest.fixture(autouse=True)
def _clear():
    SEEN.clear()


def test_an_entry_flow_is_async_for_prefect_and_sync_for_its_caller(prefect_api):
    assert isinstance(doubled, EntryFlow) and doubled.isasync
    assert doubled(3) == 10
    assert SEEN["thread"] == threading.get_ident()  # the body ran here: signals reach it
    state = doubled(3, return_state=True)
    assert state.is_completed() and state.result() == 10
    renamed = doubled.with_options(name="entry-test-renamed")
    assert isinstance(renamed, EntryFlow) and renamed.name == "entry-test-renamed"
    assert renamed(4) == 12

    async def from_a_coroutine() -> int:  # this thread runs a loop: the flow gets a thread
        return doubled(5)
    assert asyncio.run(from_a_coroutine()) == 14
    assert SEEN["thread"] != threading.get_ident()


def test_the_body_s_tasks_share_one_sync_client(prefect_api):
    """Without the flow's client context every sync task run built a client of its own."""
    doubled(1)
    clients = SEEN["clients"]
    assert len(clients) == 2 and clients[0] == clients[1] and clients[0] != id(None)


def test_the_heap_is_frozen_during_the_body_and_handed_back(prefect_api):
    assert gc.get_freeze_count() == 0
    doubled(1)
    assert SEEN["frozen"] > 0 and gc.get_freeze_count() == 0
    gc.freeze()  # a caller that froze its own heap keeps it as it was
    try:
        before = gc.get_freeze_count()
        doubled(1)  # (the count drops by what was freed meanwhile: frozen objects still die)
        assert before * 0.9 < gc.get_freeze_count() <= before
    finally:
        gc.unfreeze()


def test_a_body_past_its_timeout_ends_timed_out(prefect_api):
    state = doubled.with_options(timeout_seconds=1)(1, 1.5, return_state=True)
    assert state.name == "TimedOut", state


def test_the_flow_version_is_its_body_s_file_and_our_flows_are_entry_flows():
    assert doubled.version == file_hash(__file__)
    from ek_agents_pipeline.flows import (audit_run, evaluate_agent, evaluate_at_scale,
                                          promote_baseline)

    for f in (evaluate_agent, audit_run, promote_baseline, evaluate_at_scale):
        assert isinstance(f, EntryFlow) and f.isasync, f.name
        assert f.timeout_seconds and f.timeout_seconds > 0
