"""An agent for the CLI outage tests: the shop's ``small_agent``, held at a gate mid-run.

With ``EK_TEST_GATE`` set to a folder, the first ``EK_TEST_GATE_AFTER`` calls (default 24) run
at once; every later call waits until the file ``<folder>/go`` exists. The test waits until
those first episodes are stored, breaks the endpoint, then creates ``go``: the outage starts
mid-run, at a known point. Without ``EK_TEST_GATE`` it is ``small_agent`` itself (same
episodes), so a resumed run and an uninterrupted one have the same agent and the same digest.
"""
from __future__ import annotations

import os
import threading
import time

from examples.shop.agents import small_agent

_LOCK = threading.Lock()
_CALLS = [0]
#: The longest a held call waits for ``go`` (a safety net for a test that died, not a timing).
HOLD_LIMIT_S = 300.0


def gated_agent(task, *, seed):
    """``small_agent(task, seed=seed)``, held after the first N calls while a gate is set."""
    gate = os.environ.get("EK_TEST_GATE")
    if gate:
        with _LOCK:
            _CALLS[0] += 1
            n = _CALLS[0]
        if n > int(os.environ.get("EK_TEST_GATE_AFTER", "24")):
            deadline = time.monotonic() + HOLD_LIMIT_S
            while not os.path.exists(os.path.join(gate, "go")) and time.monotonic() < deadline:
                time.sleep(0.05)
    return small_agent(task, seed=seed)
