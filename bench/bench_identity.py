"""Agent identity of large state, measured (issue 23): what a 10 MB attribute adds.

``agentid.agent_identity`` of an agent (a class instance) holding one 10 MB attribute -- a
``str``, ``bytes``, a float64 numpy array, a non-contiguous view of one -- vs the same agent
with a small attribute, and vs ``hashlib.sha256`` of 10 MB alone (the floor: the bytes must
be read once). The goal: a 10 MB attribute adds < 50 ms. Min of ``--repeat`` runs each.
"""
from __future__ import annotations

import argparse
import hashlib
import time
from typing import Any

import numpy as np

from ek_agents.identity.agentid import agent_identity

MB10 = 10 * 1024 * 1024


class Holder:
    def __init__(self, payload: Any) -> None:
        self.model = "gpt-4o"
        self.payload = payload

    def __call__(self, task: Any) -> str:
        return "x"


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args(argv or [])
    rng = np.random.default_rng(0)
    raw = rng.bytes(MB10)
    payloads = {"str": raw.hex()[:MB10], "bytes": raw,
                "array": rng.random(MB10 // 8),
                "array_view": rng.random(MB10 // 4)[::2]}  # non-contiguous: copied, then hashed
    small = _best(lambda: agent_identity(Holder("small")), a.repeat)
    figures: dict[str, Any] = {
        "sha256_10mb_s": _best(lambda: hashlib.sha256(raw).hexdigest(), a.repeat),
        "identity_small_s": small}
    for name, payload in payloads.items():
        agent = Holder(payload)
        took = _best(lambda: agent_identity(agent), a.repeat)
        figures[f"identity_10mb_{name}_s"] = took
        figures[f"identity_10mb_{name}_added_s"] = took - small
    figures["identity_10mb_array_vs_sha256"] = (figures["identity_10mb_array_s"]
                                                / figures["sha256_10mb_s"])
    for k, v in figures.items():
        print(f"{k}: {v * 1000:.2f} ms" if k.endswith("_s") else f"{k}: {v:.2f}x")
    worst = max(v for k, v in figures.items() if k.endswith("_added_s"))
    print(f"worst 10 MB attribute added {worst * 1000:.1f} ms (goal < 50 ms)")
    return figures


if __name__ == "__main__":
    main()
