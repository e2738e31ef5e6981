"""Provider token-usage records -> :class:`~ek_agents.base.Cost`, in ek's one convention.

ek's :class:`Cost` counts ``input_tokens`` = ALL prompt tokens (fresh + cache reads + cache
writes) and ``output_tokens`` = ALL completion tokens (reasoning included); the cache and
reasoning counts are *parts* of those. Providers disagree, so each spelling is mapped:

=====================  =========================================  ===============================
spelling               prompt side                                completion side
=====================  =========================================  ===============================
OpenAI Chat            ``prompt_tokens`` INCLUDES cached tokens   ``completion_tokens`` INCLUDES
                       (``prompt_tokens_details.cached_tokens``;  reasoning
                       ``.cache_write_tokens`` where reported)    (``completion_tokens_details
                                                                  .reasoning_tokens``)
OpenAI Responses       ``input_tokens`` INCLUDES cached           ``output_tokens`` INCLUDES
                       (``input_tokens_details.cached_tokens``)   reasoning (``output_tokens_
                                                                  details.reasoning_tokens``)
Anthropic              ``input_tokens`` = fresh ONLY; add         ``output_tokens`` INCLUDES
                       ``cache_read_input_tokens`` and            thinking (``output_tokens_
                       ``cache_creation_input_tokens``            details.thinking_tokens``)
Inspect ``ModelUsage`` ``input_tokens`` = full-rate ONLY (since   ``output_tokens`` INCLUDES
                       inspect_ai normalised every provider);     ``reasoning_tokens``
                       add ``input_tokens_cache_read`` /
                       ``input_tokens_cache_write``
=====================  =========================================  ===============================

How inspect_ai fills ``ModelUsage`` (checked in inspect_ai 0.3.285): for OpenAI Chat it sets
``input_tokens = prompt_tokens - cached_tokens - cache_write_tokens``
(``model/_openai.py``), for OpenAI Responses ``input_tokens - cached - cache_write``
(``model/_openai_responses.py``), for Anthropic the API's fresh ``input_tokens`` with
``total_tokens = input + cache_write + cache_read + output`` (``_providers/anthropic.py``), for
Google ``prompt - cached`` and ``output = candidates + thoughts``. So every provider arrives
fresh-only, and ``total_tokens`` is the sum of all four parts.

Where a record also carries ``total_tokens`` the arithmetic is checked against it: older
inspect_ai versions passed OpenAI's ``prompt_tokens`` (cache included) straight through as
``input_tokens``; such a record has ``total_tokens == input + output`` and is read as
inclusive. Likewise an ``output_tokens`` that turns out to exclude ``reasoning_tokens``
(``total`` says so, or reasoning exceeds output) gets reasoning added.

>>> c = cost_from_usage({"input_tokens": 10, "cache_read_input_tokens": 90, "output_tokens": 5})
>>> c.input_tokens, c.cached_input_tokens, c.output_tokens
(100, 90, 5)
>>> c = cost_from_usage({"prompt_tokens": 100, "completion_tokens": 30,
...                      "prompt_tokens_details": {"cached_tokens": 60},
...                      "completion_tokens_details": {"reasoning_tokens": 20}})
>>> c.input_tokens, c.cached_input_tokens, c.output_tokens, c.reasoning_tokens
(100, 60, 30, 20)
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional

from ..base import Cost
from ..errors import BridgeError
from ._access import as_int, plain

__all__ = ["cost_from_usage", "cost_minus", "usage_kind"]

_TOKEN_KEYS = frozenset({
    "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens", "total_tokens",
    "cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens_cache_read",
    "input_tokens_cache_write", "reasoning_tokens", "input_tokens_details", "output_tokens_details",
})


def cost_from_usage(usage: Any, *, latency_s: Optional[float] = None) -> Cost:
    """Build a :class:`~ek_agents.base.Cost` from a provider ``usage`` object or dict.

    Understands the OpenAI Chat (``prompt_tokens`` / ``completion_tokens``), OpenAI Responses,
    Anthropic (``input_tokens`` / ``output_tokens`` / ``cache_read_input_tokens``) and Inspect
    ``ModelUsage`` spellings (see the module docstring for which counts include which), as
    dicts or SDK objects. A list of records, or an Inspect ``{model: usage}`` mapping, is summed;
    a whole response (anything with a ``usage`` field) is read through its ``usage``.

    >>> c = cost_from_usage({"prompt_tokens": 100, "completion_tokens": 20})
    >>> c.input_tokens, c.output_tokens
    (100, 20)
    """
    total = _cost(usage, "usage")
    if latency_s is not None:
        total = dataclasses.replace(total, latency_s=latency_s)
    return total


def _cost(usage: Any, where: str) -> Cost:
    if isinstance(usage, Cost):
        return usage
    u = plain(usage)
    if isinstance(u, list):
        if not u:
            raise BridgeError(f"{where} is an empty list: give at least one usage record (or usage=None for unknown)")
        return sum(_cost(x, f"{where}[{i}]") for i, x in enumerate(u))
    if not isinstance(u, Mapping):
        raise BridgeError(
            f"{where} must be a usage dict or object (e.g. completion.usage), got {type(usage).__name__}: {usage!r:.80}"
        )
    if not (set(u) & _TOKEN_KEYS) and isinstance(u.get("usage"), Mapping):
        return _cost(u["usage"], f"{where}.usage")  # a whole completion / Message / ModelOutput
    if u and not (set(u) & _TOKEN_KEYS) and all(isinstance(v, Mapping) for v in u.values()):
        # Inspect's per-model usage: {"openai/gpt-4o": {...}, ...}
        return sum(_cost(v, f"{where}[{k!r}]") for k, v in u.items())
    return _one(u, where)


def usage_kind(u: Mapping) -> str:
    """Which spelling a usage record uses: openai_chat | openai_responses | inspect | anthropic | generic."""
    keys = {k for k, v in u.items() if v is not None}
    out_details = u.get("output_tokens_details")
    if keys & {"prompt_tokens", "completion_tokens"}:
        return "openai_chat"
    if "input_tokens_details" in keys:
        return "openai_responses"
    if keys & {"input_tokens_cache_read", "input_tokens_cache_write"}:
        return "inspect"
    if keys & {"cache_read_input_tokens", "cache_creation_input_tokens"} or (
            isinstance(out_details, Mapping) and "thinking_tokens" in out_details):
        return "anthropic"
    if "output_tokens_details" in keys:
        return "openai_responses"
    if keys & {"input_tokens", "output_tokens"}:
        return "generic"
    raise BridgeError(
        f"usage record has no token counts I know (keys: {sorted(u)}); expected OpenAI "
        "'prompt_tokens'/'completion_tokens', Anthropic or Responses 'input_tokens'/'output_tokens', "
        "or Inspect ModelUsage fields"
    )


def _detail(u: Mapping, group: str, key: str, where: str) -> int:
    d = u.get(group)
    return as_int(d.get(key), f"{where}.{group}.{key}") if isinstance(d, Mapping) else 0


def _one(u: Mapping, where: str) -> Cost:
    kind = usage_kind(u)
    n = lambda key: as_int(u.get(key), f"{where}.{key}")  # noqa: E731
    total = n("total_tokens") or None
    if kind == "openai_chat":
        base, out = n("prompt_tokens"), n("completion_tokens")
        read = _detail(u, "prompt_tokens_details", "cached_tokens", where) or n("cache_read_input_tokens")
        write = _detail(u, "prompt_tokens_details", "cache_write_tokens", where) or n("cache_creation_input_tokens")
        reasoning = _detail(u, "completion_tokens_details", "reasoning_tokens", where) or n("reasoning_tokens")
        inclusive = True
    elif kind == "openai_responses":
        base, out = n("input_tokens"), n("output_tokens")
        read = _detail(u, "input_tokens_details", "cached_tokens", where)
        write = _detail(u, "input_tokens_details", "cache_write_tokens", where)
        reasoning = _detail(u, "output_tokens_details", "reasoning_tokens", where)
        inclusive = True
    elif kind == "inspect":
        base, out = n("input_tokens"), n("output_tokens")
        read, write = n("input_tokens_cache_read"), n("input_tokens_cache_write")
        reasoning, inclusive = n("reasoning_tokens"), False
    else:  # anthropic, or generic (no cache counts: every convention agrees)
        base, out = n("input_tokens"), n("output_tokens")
        read, write = n("cache_read_input_tokens"), n("cache_creation_input_tokens")
        reasoning = _detail(u, "output_tokens_details", "thinking_tokens", where) or n("reasoning_tokens")
        inclusive = False
    out, reasoning = _resolve_output(out, reasoning, base + read + write, base, total)
    inp = _resolve_input(base, read, write, out, total, inclusive)
    return Cost(input_tokens=inp, output_tokens=out, cached_input_tokens=read,
                cache_write_tokens=write, reasoning_tokens=reasoning)


def _resolve_input(base: int, read: int, write: int, out: int, total: Optional[int], inclusive: bool) -> int:
    """All prompt tokens: ``base`` already includes the cache counts, or they are added."""
    if read + write == 0:
        return base
    if total is not None:
        if total == base + out and total != base + read + write + out:
            inclusive = True
        elif total == base + read + write + out:
            inclusive = False
    if inclusive and read + write > base:  # cannot be inside base: the parts exceed it
        inclusive = False
    return base if inclusive else base + read + write


def _resolve_output(out: int, reasoning: int, inp_all: int, inp_base: int, total: Optional[int]) -> tuple:
    """All completion tokens (reasoning included) and the reasoning part."""
    if reasoning == 0:
        return out, 0
    excluded = reasoning > out
    if total is not None and not excluded:
        for inp in (inp_all, inp_base):
            if total == inp + out + reasoning and total != inp + out:
                excluded = True
    return (out + reasoning if excluded else out), reasoning


def cost_minus(a: Cost, b: Cost) -> tuple:
    """``a - b`` field by field, clamped at 0 -> ``(cost, clamped)`` (``clamped`` says it had to)."""
    vals = {}
    clamped = False
    for f in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
              "cache_write_tokens", "retries"):
        v = getattr(a, f) - getattr(b, f)
        clamped |= v < 0
        vals[f] = max(v, 0)
    if vals["cached_input_tokens"] + vals["cache_write_tokens"] > vals["input_tokens"]:
        clamped = True
        vals["cached_input_tokens"] = min(vals["cached_input_tokens"], vals["input_tokens"])
        vals["cache_write_tokens"] = min(vals["cache_write_tokens"], vals["input_tokens"] - vals["cached_input_tokens"])
    if vals["reasoning_tokens"] > vals["output_tokens"]:
        clamped, vals["reasoning_tokens"] = True, vals["output_tokens"]
    return Cost(latency_s=a.latency_s, **vals), clamped
