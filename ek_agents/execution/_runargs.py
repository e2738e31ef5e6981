"""A run's arguments checked before any trial runs, and the trials it wants: what
:func:`~ek_agents.execution.harness.run_trials` and ``store_trials`` share."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base import RunProvenance, TaskSpec
from ..errors import InvalidInput
from ..records.segments import FLUSH_S, Pair, check_flush_s

__all__ = ["check_params", "wanted_pairs"]


def check_params(agent: Any, *, k: Any, seed: Any, max_concurrency: Any, timeout_s: Any,
                  retries: Any, run: Any, backoff_s: Any, flush_s: Any = FLUSH_S) -> None:
    """Refuse, with an :class:`~ek_agents.errors.InvalidInput` naming the value, an argument of
    a run that cannot be right, before any trial runs."""
    if not callable(agent):
        raise InvalidInput(f"agent must be callable (TaskSpec -> Episode or answer), got {agent!r:.80}; "
                           "wrap a plain function with as_agent(fn)")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an int >= 1 (trials per task), got {k!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InvalidInput(f"seed must be an int or None, got {seed!r}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise InvalidInput(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
    if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise InvalidInput(f"timeout_s must be a positive number of seconds or None, got {timeout_s!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidInput(f"retries must be an int >= 0, got {retries!r}")
    if not (isinstance(backoff_s, (int, float)) and backoff_s >= 0):
        raise InvalidInput(f"backoff_s must be a number >= 0, got {backoff_s!r}")
    if run is not None and not isinstance(run, RunProvenance):
        raise InvalidInput(f"run must be a RunProvenance or None, got {run!r:.80}")
    check_flush_s(flush_s)


def wanted_pairs(specs: Mapping[str, TaskSpec], k: int, only: Any) -> list[Pair]:
    """The ``(task_id, trial)`` pairs a run of ``specs`` at ``k`` runs, in order: every pair, or
    those of ``only`` (each checked against the suite and ``k``)."""
    if only is None:
        return [(tid, i) for tid in sorted(specs) for i in range(k)]
    # each pair checked against the suite and k directly: a chunk of a 20,000-trial run does
    # not build the run's every pair (0.04 s per chunk, on the GIL the other chunks' loops need)
    trials = range(k)
    chosen = set()
    for p in only:
        try:
            pair = (p[0], p[1])
        except (TypeError, IndexError, KeyError):
            raise InvalidInput(f"only: each item must be a (task_id, trial) pair, got {p!r}") from None
        if pair[0] not in specs or pair[1] not in trials:
            why = (f"task {pair[0]!r} is not in the suite" if pair[0] not in specs
                   else f"trial must be in 0..{k - 1} (k={k})")
            raise InvalidInput(f"only: {pair!r} is not a trial of this run: {why}")
        chosen.add(pair)
    return sorted(chosen)
