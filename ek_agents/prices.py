"""Price catalogs: read LiteLLM's ``model_prices_and_context_window.json`` into ModelPrices.

ek-agents ships no price table (rates go stale monthly). :func:`load_prices` reads the
MIT-licensed LiteLLM **data file** (never the ``litellm`` SDK) from a path, any fsspec URL, or
an already-parsed mapping; :func:`price_of` resolves a model name against the result.

What is read, per entry: ``input_cost_per_token`` / ``output_cost_per_token``;
``cache_read_input_token_cost`` (absent: reads bill as input, as in LiteLLM);
``cache_creation_input_token_cost`` (absent: the input rate);
``output_cost_per_reasoning_token`` (absent: the output rate); the ``*_batches`` rates; the
``*_priority`` / ``*_flex`` / ``*_balanced`` / ``*_ultrafast`` service tiers; context tiers
(``input_cost_per_token_above_200k_tokens`` and kin, incl. their batch / service-tier forms);
and Dashscope-style ``tiered_pricing`` tables. ``sample_spec`` (documentation), non-model keys
(``fallback_generalizations``) and entries without token rates (image, audio, per-second
pricing) are skipped; ``alias_of`` rows are served as their target and ``aliases`` lists add
names, as LiteLLM does.

>>> table = load_prices({"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}})
>>> table["m"].output
2e-06
>>> price_of("openai/m", prices=table) is table["m"]
True
"""
from __future__ import annotations

import math
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any, Optional, Union

from .cost import SERVICE_TIERS, ModelPrice
from .errors import InvalidInput, UnknownModelPrice, did_you_mean
from .parsing import parse_json

__all__ = ["load_prices", "price_of"]

_KIND_KEYS = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cached_input",
    "cache_creation_input_token_cost": "cache_write",
    "output_cost_per_reasoning_token": "reasoning",
}
_SUFFIXES = ("batches",) + SERVICE_TIERS
_TIER_KEY = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|"
    r"cache_creation_input_token_cost)_above_(\d+(?:\.\d+)?)(k?)_tokens"
    r"(?:_(" + "|".join(_SUFFIXES) + r"))?$")
_SKIP = {"sample_spec"}
_CHAT_MODES = (None, "chat", "completion", "responses")


def _num(v: Any, key: str = "rate") -> Optional[float]:
    """A rate (USD per token): None when absent (null); a finite number >= 0 (or a string
    holding one); anything else is an InvalidInput naming ``key`` -- never a silent $0."""
    if v is None:
        return None
    x: Any = v
    if isinstance(v, str):
        try:
            x = float(v.strip())
        except ValueError:
            x = None
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0:
        raise InvalidInput(f"{key} = {v!r:.60} is not a rate; write a finite number >= 0 in USD "
                           "per token (e.g. 1.5e-07), or remove the key")
    return float(x)


def _rate_kind(key: str) -> bool:
    """Whether ``key`` names a token rate this module reads."""
    if key in _KIND_KEYS or _TIER_KEY.match(key):
        return True
    return any(key.endswith("_" + sfx) and key[: -len(sfx) - 1] in _KIND_KEYS for sfx in _SUFFIXES)


def _parse_entry(info: Mapping[str, Any]) -> Optional[ModelPrice]:
    """One catalog row -> a ModelPrice, or None when it carries no token rates."""
    base: dict[str, float] = {}
    tiers_st: dict[str, dict[str, float]] = {}
    batch: dict[str, float] = {}
    context: dict[float, dict] = {}
    for key, raw in info.items():
        if not isinstance(key, str) or not _rate_kind(key):
            continue
        v = _num(raw, key)
        if v is None:
            continue
        if key in _KIND_KEYS:
            base[_KIND_KEYS[key]] = v
            continue
        m = _TIER_KEY.match(key)
        if m:
            prefix, number, k, suffix = m.groups()
            thr = float(number) * (1000 if k else 1)
            card = context.setdefault(thr, {})
            kind = _KIND_KEYS[prefix]
            if suffix is None:
                card[kind] = v
            else:
                card.setdefault("batch" if suffix == "batches" else suffix, {})[kind] = v
            continue
        for suffix in _SUFFIXES:
            if key.endswith("_" + suffix) and key[: -len(suffix) - 1] in _KIND_KEYS:
                kind = _KIND_KEYS[key[: -len(suffix) - 1]]
                if suffix == "batches":
                    batch[kind] = v
                else:
                    tiers_st.setdefault(suffix, {})[kind] = v
                break
    tiered = info.get("tiered_pricing")
    if isinstance(tiered, list) and tiered:  # LiteLLM consults a tier table first
        priced = _from_tiered_pricing(info, tiered)
        if priced is not None:
            return priced
    if "input" not in base and "output" not in base:
        return None
    return ModelPrice(
        input=base.get("input", 0.0), output=base.get("output", 0.0),
        cached_input=base.get("cached_input"), reasoning=base.get("reasoning"),
        cache_write=base.get("cache_write"),
        batch_input=batch.get("input"), batch_output=batch.get("output"),
        batch_cached_input=batch.get("cached_input"), batch_cache_write=batch.get("cache_write"),
        service_tiers=tiers_st, tiers=tuple(sorted(context.items())), cache_discount=1.0,
    )


def _from_tiered_pricing(info: Mapping[str, Any], tiered: list) -> Optional[ModelPrice]:
    """Dashscope-style ``tiered_pricing``: one tier, by total input tokens, bills everything.

    A tier matches when ``start < prompt <= end``; above the last range the last tier applies;
    undeclared cache rates fall back to the tier's input rate, an undeclared output rate to
    the entry's own output rate (LiteLLM's rules).
    """
    ranged = []
    for t in tiered:
        if not isinstance(t, Mapping):
            continue
        rng = t.get("range")
        inp = _num(t.get("input_cost_per_token"), "tiered_pricing input_cost_per_token")
        if not (isinstance(rng, (list, tuple)) and len(rng) == 2) or inp is None:
            continue
        start = _num(rng[0], "tiered_pricing range start")
        if start is None:
            continue
        out = _num(t.get("output_cost_per_token"), "tiered_pricing output_cost_per_token")
        card = {"input": inp, "output": out if out is not None
                else _num(info.get("output_cost_per_token"), "output_cost_per_token") or 0.0}
        for src, kind in (("cache_read_input_token_cost", "cached_input"),
                          ("cache_creation_input_token_cost", "cache_write")):
            rate = _num(t.get(src), f"tiered_pricing {src}")
            card[kind] = rate if rate is not None else inp
        reasoning = _num(t.get("output_cost_per_reasoning_token"),
                         "tiered_pricing output_cost_per_reasoning_token")
        if reasoning is not None:
            card["reasoning"] = reasoning
        ranged.append((start, card))
    if not ranged:
        return None
    ranged.sort(key=lambda x: x[0])
    first = ranged[0][1]
    return ModelPrice(input=first["input"], output=first["output"],
                      cached_input=first["cached_input"], cache_write=first["cache_write"],
                      reasoning=first.get("reasoning"),
                      tiers=tuple((s, {k: v for k, v in c.items() if k != "reasoning"})
                                  for s, c in ranged[1:]),
                      cache_discount=1.0)


def _read_source(source: Union[str, os.PathLike]) -> Mapping[str, Any]:
    from .store import read_url

    text = os.fspath(source)
    data = read_url(text, what="price catalog (LiteLLM's model_prices_and_context_window.json)")
    parsed = parse_json(data, where=f"load_prices: {text!r}")
    if not isinstance(parsed, Mapping):
        raise InvalidInput(f"load_prices: {text!r} holds a {type(parsed).__name__}, not a "
                           "{model: {...rates}} mapping")
    return parsed


def load_prices(source: Union[str, os.PathLike, Mapping[str, Any]]) -> dict[str, ModelPrice]:
    """Parse a LiteLLM-format price catalog into a ``{model: ModelPrice}`` table.

    ``source`` is a local path, any fsspec URL (``s3://bucket/prices.json``,
    ``memory://...``) or an already-parsed mapping. See the module docstring for what is read
    and skipped. Entries lacking token rates (embeddings priced per token are kept) are
    skipped, so a model missing from the result has no usable rates.

    >>> table = load_prices({"m": {"input_cost_per_token": 1e-6,
    ...                            "output_cost_per_token": 2e-6}})
    >>> table["m"].output
    2e-06
    """
    raw = source if isinstance(source, Mapping) else _read_source(source)
    pointers = {name: info["alias_of"] for name, info in raw.items()
                if isinstance(info, Mapping) and isinstance(info.get("alias_of"), str)}
    table: dict[str, ModelPrice] = {}
    half: list[str] = []  # chat models with only one of the input/output rates
    for name, info in raw.items():
        if name in _SKIP or name in pointers or not isinstance(info, Mapping):
            continue
        try:
            price = _parse_entry(info)
        except InvalidInput as exc:
            raise InvalidInput(f"load_prices: entry {name!r}: {exc}") from None
        if price is not None:
            table[str(name)] = price
            if info.get("mode") in _CHAT_MODES and not info.get("tiered_pricing"):
                half.extend(f"{name!r} ({k})" for k in ("input_cost_per_token", "output_cost_per_token")
                            if _num(info.get(k), k) is None)
    if half:
        warnings.warn(f"load_prices: {len(half)} chat model rate(s) missing, billed at $0: "
                      f"{', '.join(half[:10])}{' ...' if len(half) > 10 else ''}; add the rates "
                      "to the price catalog", UserWarning, stacklevel=2)
    for name, info in raw.items():  # an ``aliases`` list adds names (never over an entry)
        if name in table and isinstance(info.get("aliases"), list):
            for alias in info["aliases"]:
                if isinstance(alias, str) and alias not in raw and alias not in table:
                    table[alias] = table[name]
    for alias, target in pointers.items():  # one hop, to a real entry (as LiteLLM)
        if target in table and alias not in table:
            table[str(alias)] = table[target]
    return table


def _suffix(name: str) -> str:
    return name.split("/", 1)[1] if "/" in name else name


def price_of(model: str, *, prices: Optional[Mapping[str, ModelPrice]] = None) -> ModelPrice:
    """Resolve a model's rates from an injected catalog, or fail *actionably*.

    Tries the exact name, then the name without its provider prefix (``openai/gpt-4o`` ->
    ``gpt-4o``), then a provider-prefixed entry (``gpt-4o`` -> ``openai/gpt-4o``) when exactly
    one such entry exists (or all such entries share the same rates). Otherwise raises
    :class:`~ek_agents.errors.UnknownModelPrice` naming the closest catalog names.

    >>> p = price_of("gpt-x", prices={"openai/gpt-x": ModelPrice(1e-6, 2e-6)})
    >>> p.input
    1e-06
    """
    if prices is None:
        raise UnknownModelPrice(
            f"no rates for model {model!r}: ek-agents ships no price table; pass prices= "
            "(e.g. load_prices('model_prices_and_context_window.json')) or a ModelPrice")
    if not isinstance(model, str) or not model:
        raise InvalidInput(f"price_of: model must be a non-empty name, got {model!r}")
    if model in prices:
        return prices[model]
    bare = _suffix(model)
    if bare != model and bare in prices:
        return prices[bare]
    prefixed = [k for k in prices if "/" in k and _suffix(k) == bare]
    if prefixed:
        first = prices[prefixed[0]]
        if all(prices[k] == first for k in prefixed):
            return first
        raise UnknownModelPrice(
            f"model {model!r} is ambiguous in the price catalog: {sorted(prefixed)[:8]} carry "
            "different rates; name the provider (e.g. 'openai/...')")
    lower = {k.lower(): k for k in prices}
    if model.lower() in lower:
        return prices[lower[model.lower()]]
    hint = did_you_mean(model, prices) or (did_you_mean(bare, prices) if bare != model else "")
    raise UnknownModelPrice(
        f"no rates for model {model!r} in the price catalog ({len(prices)} models){hint}; "
        "add the model to your price catalog or pass price=ModelPrice(...)")
