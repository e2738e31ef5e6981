"""Trials a provider error left unresolved, and a run's retry overhead: what the report says
apart from the agent's figures.

A trial whose provider errors (rate limits, outages: ``runs.providers``) outlasted its retry
budget ends with ``meta["error_kind"] == "provider"``. It says nothing about the agent: it is
left out of the success rate and the cost per success (:func:`scored`), counted and named by
kind and model (:func:`unresolved_detail`), and the run is incomplete until
``--retry-errored`` completes it.

>>> from ek_agents.base import Episode
>>> eps = [Episode("a", success=True),
...        Episode("b", success=False, meta={"error": "RateLimitError: 429", "error_kind": "provider",
...                "trial": 0, "provider": {"kind": "rate_limit", "model": "gpt-4o"}})]
>>> [e.task_id for e in scored(eps)]
['a']
>>> unresolved_detail(eps)["by_kind_and_model"]
{'rate_limit gpt-4o': 1}
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..base import Cost, Episode, ModelCall
from ..cost import call_dollars

__all__ = ["PROVIDER", "is_unresolved", "scored", "unresolved_detail", "retry_overhead",
           "incomplete_because"]

#: ``meta["error_kind"]`` of a trial a provider error left unresolved.
PROVIDER = "provider"


def is_unresolved(episode: Any) -> bool:
    """True when the episode is a trial a provider error left unresolved."""
    meta = getattr(episode, "meta", None)
    return isinstance(meta, Mapping) and meta.get("error_kind") == PROVIDER and bool(meta.get("error"))


def scored(episodes: list) -> list:
    """The episodes that count: all but the unresolved ones (the same list when none is)."""
    if not any(is_unresolved(e) for e in episodes):
        return episodes
    return [e for e in episodes if not is_unresolved(e)]


def unresolved_detail(episodes: list) -> dict:
    """``{"n", "by_kind_and_model", "trials"}`` of the unresolved trials (``{}`` when none):
    ``trials`` lists ``task_id#trial`` (the first 50)."""
    bad = [e for e in episodes if is_unresolved(e)]
    if not bad:
        return {}
    by: dict = {}
    for e in bad:
        p = e.meta.get("provider") or {}
        key = f"{p.get('kind', 'unknown')} {p.get('model') or 'unknown model'}"
        by[key] = by.get(key, 0) + 1
    names = [f"{e.task_id}#{e.meta.get('trial', '?')}" for e in bad]
    return {"n": len(bad), "by_kind_and_model": dict(sorted(by.items())), "trials": names[:50]}


def retry_overhead(episodes: list, *, prices: Any = None, price: Any = None) -> dict:
    """What the attempts a provider error ended (then run again) spent, apart from the scored
    attempts: ``{"attempts", "calls", "dollars"}`` (``{}`` when no trial was retried). A call
    that reported no usage (the refused request itself) is billed $0; ``dollars`` is None
    when there is no price to bill the others at."""
    attempts = 0
    calls: list = []
    for e in episodes:
        got = (getattr(e, "meta", None) or {}).get("provider_retries")
        if isinstance(got, Mapping):
            attempts += int(got.get("attempts", 0))
            calls.extend(ModelCall.from_dict(c) for c in got.get("calls") or ())
    if not attempts:
        return {}
    used = [c for c in calls if c.input_tokens or c.output_tokens]
    dollars: Any = 0.0
    if used:
        if prices is None and price is None:
            dollars = None
        else:
            ep = Episode("retry-overhead", cost=Cost.of_calls(used))
            dollars = math.fsum(d for _, d in call_dollars(ep, prices=prices, price=price))
    return {"attempts": attempts, "calls": len(calls), "dollars": dollars}


def incomplete_because(detail: Mapping, *, n_trials: int = 0,
                       expected_trials: Any = None) -> str:
    """Why a report's run is incomplete, in one clause ("" when it is complete): trials a
    provider error left unresolved (``detail["unresolved"]``), trials not started at the run's
    ``max_dollars`` (``detail["stopped"]``), or fewer trials than ``expected_trials``."""
    why = []
    un = detail.get("unresolved") or {}
    if un.get("n"):
        kinds = ", ".join(f"{n} {k}" for k, n in (un.get("by_kind_and_model") or {}).items())
        why.append(f"{un['n']} trial(s) left unresolved by provider errors ({kinds})")
    stopped = detail.get("stopped") or {}
    missing = (expected_trials - n_trials - int(un.get("n", 0))
               if isinstance(expected_trials, int) else 0)
    if stopped:
        why.append(f"{stopped.get('not_started')} trial(s) not started: stopped at "
                   f"max_dollars={stopped.get('max_dollars')} after "
                   f"${float(stopped.get('spent_dollars') or 0):.4f}"
                   + (f", first not started {stopped['first_not_started']}"
                      if stopped.get("first_not_started") else ""))
    elif missing > 0:
        why.append(f"{missing} of {expected_trials} trial(s) not run (stopped at max_dollars)")
    return "; ".join(why)
