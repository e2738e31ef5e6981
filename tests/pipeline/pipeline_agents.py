"""Agents for the pipeline tests: seeded, stochastic, priced, and counted."""
from __future__ import annotations

import random
import threading
import zlib

from ek_agents.base import Cost, Episode, RunProvenance

#: (task_id, seed) of every call, across threads.
CALLS: list = []
_LOCK = threading.Lock()
MODEL = "gpt-4o-mini-2024-07-18"


def _answer(task, seed: int, p: float) -> Episode:
    with _LOCK:
        CALLS.append((task.task_id, seed))
    rng = random.Random(f"{task.task_id}/{seed}")
    ok = rng.random() < p
    return Episode(task.task_id, output=task.input.upper() if ok else "?",
                   cost=Cost(input_tokens=1000 + rng.randrange(500), output_tokens=100),
                   run=RunProvenance(model=MODEL, temperature=0.7))


def counting_agent(task, *, seed: int) -> Episode:
    """Right about 70% of the time."""
    return _answer(task, seed, 0.7)


def worse_agent(task, *, seed: int) -> Episode:
    """Right about 20% of the time."""
    return _answer(task, seed, 0.2)


#: Task ids whose endpoint is down for :func:`outage_agent` (tests switch it on and off).
OUTAGE: set = set()


def outage_agent(task, *, seed: int) -> Episode:
    """:func:`counting_agent`, except that tasks in :data:`OUTAGE` meet a failing endpoint."""
    if task.task_id in OUTAGE:
        with _LOCK:
            CALLS.append((task.task_id, seed))
        from ek_agents.errors import TransientAgentError

        raise TransientAgentError(f"HTTP 503 from the endpoint (task {task.task_id})")
    return _answer(task, seed, 0.7)


#: Agent calls in flight now, and the most seen at once, across every thread (:func:`inflight_agent`).
INFLIGHT = {"now": 0, "max": 0}


async def inflight_agent(task, *, seed: int) -> str:
    """Counts how many of its calls are in flight at once (threads and event loops alike)."""
    import asyncio

    with _LOCK:
        INFLIGHT["now"] += 1
        INFLIGHT["max"] = max(INFLIGHT["max"], INFLIGHT["now"])
    try:
        await asyncio.sleep(0.01)
        return task.input.upper()
    finally:
        with _LOCK:
            INFLIGHT["now"] -= 1


async def scale_agent(task, *, seed: int) -> str:
    """A zero-latency plain agent (issue 27's scale runs): right unless ``seed`` hits the
    task's unlucky residue, so outcomes are mixed and reproducible; counted."""
    CALLS.append((task.task_id, seed))
    return task.input.upper() if (seed + len(task.task_id) + zlib.crc32(task.input.encode()) % 7) % 4 else "?"
