"""Agents of every shape a new user writes, for the identity tests (issue 23).

Each answers the task's input upper-cased when it was built with ``"OK"`` (right for the
``output`` checker of the tiny suites) and ``"WRONG"`` otherwise. The module-level agents
(for ``ek-agents run --agent tests.harness.identity_agents:<name>``) are built from
``EK_TEST_ANSWER`` when the module is imported, as a real agent module reads its model name.
"""
from __future__ import annotations

import functools
import os
import threading

CALLS: list = []
_LOCK = threading.Lock()


def _answer(task, answer: str) -> str:
    with _LOCK:
        CALLS.append(task.task_id)
    return task.input.upper() if answer == "OK" else "WRONG"


def make_agent(answer: str):
    """A closure: its state is the cell ``answer``."""
    return lambda task: _answer(task, answer)


class Agent:
    """The most common shape: a class holding its configuration (a model, a prompt, tools)."""

    def __init__(self, answer: str, tools=("search", "calc", "lookup", "refund")):
        self.answer = answer
        self.tools = set(tools)  # a set of strings: its order changes with PYTHONHASHSEED
        self.prompt = {"system": "be brief", "tools": sorted(tools)}

    def __call__(self, task):
        return _answer(task, self.answer)

    def run(self, task):
        return _answer(task, self.answer)


class LockedAgent(Agent):
    """An agent holding live state that cannot be digested (a lock, as any client has)."""

    def __init__(self, answer: str):
        super().__init__(answer)
        self.guard = threading.Lock()


class DeclaredLockedAgent(LockedAgent):
    """A :class:`LockedAgent` that says what identifies it: ``ek_config`` replaces walking."""

    def ek_config(self):
        return {"answer": self.answer}


def answer_fn(task, *, answer: str):
    return _answer(task, answer)


def make_partial(answer: str):
    return functools.partial(answer_fn, answer=answer)


ANSWER = os.environ.get("EK_TEST_ANSWER", "OK")
closure_agent = make_agent(ANSWER)
instance_agent = Agent(ANSWER)
method_agent = Agent(ANSWER).run
partial_agent = make_partial(ANSWER)
locked_agent = LockedAgent(ANSWER)


def rich_agent():
    """An agent whose state holds values of many kinds (sets of strings change order with
    PYTHONHASHSEED; arrays, enums, models, dataclasses): the same identity in every process."""
    import dataclasses
    import enum

    import numpy as np

    from ek_agents.base import TaskSpec

    class Mode(enum.Enum):
        FAST = "fast"

    @dataclasses.dataclass
    class Limits:
        max_turns: int
        stop: frozenset

    agent = Agent("OK", tools=("a", "b", "c", "d", "e", "f", "g"))
    agent.weights = np.linspace(0.0, 1.0, 1000)
    agent.mode = Mode.FAST
    agent.limits = Limits(8, frozenset({"STOP", "END", "DONE", "QUIT"}))
    agent.example = TaskSpec("demo", input="q", gold="Q")
    agent.table = {("x", 1): {"k", "j"}, ("y", 2): None}
    return agent
