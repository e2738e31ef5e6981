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

from pydantic import Field

from .base import JsonShape
from .core import shape
from .errors import InvalidInput, UnknownModelPrice, did_you_mean
from .parsing import parse_json
from .store import read_url

__all__ = ["ModelPrice", "load_prices", "price_of", "check_rate", "service_tier_of",
           "DEFAULT_CACHE_DISCOUNT", "DEFAULT_BATCH_DISCOUNT", "SERVICE_TIERS", "RATE_KINDS"]

#: Cached-input rate as a fraction of the input rate when a price declares no cached rate
#: (OpenAI's original prompt-caching discount; Anthropic's cache reads bill at 0.1x, newer
#: OpenAI models at 0.1-0.25x: declare ``cached_input`` when you know it).
DEFAULT_CACHE_DISCOUNT: float = 0.5
#: Batch-API rate as a fraction of the standard rate when a price declares no batch rates
#: (OpenAI and Anthropic both bill batch jobs at 50%).
DEFAULT_BATCH_DISCOUNT: float = 0.5
#: Service tiers a price may carry rates for (LiteLLM's ``*_priority``, ``*_flex``, ...).
#: ``"fast"`` is read as ``"priority"``; ``None``, ``"default"``, ``"standard"`` and
#: ``"auto"`` mean the standard rates.
SERVICE_TIERS: tuple[str, ...] = ("priority", "flex", "balanced", "ultrafast")
_TIER_ALIASES = {"fast": "priority"}
_STANDARD_TIERS = {None, "default", "standard", "auto", ""}
#: The token kinds a rate card prices.
RATE_KINDS: tuple[str, ...] = ("input", "output", "cached_input", "cache_write", "reasoning")
_TIERED_KINDS = ("input", "output", "cached_input", "cache_write")


def check_rate(name: str, v: Any) -> float:
    """``v`` as a rate (USD per token): InvalidInput naming ``name`` unless a finite number >= 0."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise InvalidInput(f"ModelPrice: {name} must be a number (USD per token), got {v!r}") from None
    if not math.isfinite(f) or f < 0:
        raise InvalidInput(f"ModelPrice: {name} must be a finite rate >= 0, got {v!r}")
    return f


def _check_card(where: str, card: Any, *, nested: tuple[str, ...] = ()) -> None:
    if not isinstance(card, Mapping):
        raise InvalidInput(f"ModelPrice: {where} must be a mapping of rates, got {card!r}")
    for key, v in card.items():
        if key in nested:
            _check_card(f"{where}[{key!r}]", v)
        elif key in RATE_KINDS:
            check_rate(f"{where}[{key!r}]", v)
        else:
            raise InvalidInput(
                f"ModelPrice: {where} has unknown key {key!r}"
                f"{did_you_mean(str(key), RATE_KINDS + nested)} (rate kinds: {RATE_KINDS})")


@shape()
class ModelPrice(JsonShape):
    """Per-token rates for one model, in **USD per token**.

    - ``input`` / ``output``: the standard rates.
    - ``cached_input``: cache-read rate; ``None`` means ``cache_discount * input``
      (``cache_discount`` ``None`` = :data:`DEFAULT_CACHE_DISCOUNT`; a LiteLLM entry without a
      cache-read rate gets ``cache_discount=1.0``: LiteLLM bills such reads as plain input).
    - ``cache_write``: cache-creation rate; ``None`` means the input rate.
    - ``reasoning``: reasoning-token rate; ``None`` means the output rate.
    - ``batch_input`` / ``batch_output`` / ``batch_cached_input`` / ``batch_cache_write``: the
      batch-API rates; ``None`` means the standard rate times :data:`DEFAULT_BATCH_DISCOUNT`.
    - ``service_tiers``: ``{"priority": {"input": ..., "output": ..., ...}, "flex": {...}}``;
      a kind a tier leaves out bills at the standard rate.
    - ``tiers``: context tiers ``((threshold_tokens, rates), ...)``; when the prompt exceeds a
      threshold the whole request bills at that tier's rates (kinds it leaves out keep the
      lower rate). ``rates`` holds rate kinds and optionally ``"batch"`` and service-tier
      sub-mappings for the same threshold.

    >>> p = ModelPrice(input=1e-6, output=2e-6, tiers=((200_000, {"input": 2e-6, "output": 4e-6}),))
    >>> p.rates(100_000)["input"], p.rates(250_000)["output"]
    (1e-06, 4e-06)
    """

    input: float = 0.0
    output: float = 0.0
    cached_input: Optional[float] = None
    reasoning: Optional[float] = None
    cache_write: Optional[float] = None
    batch_input: Optional[float] = None
    batch_output: Optional[float] = None
    batch_cached_input: Optional[float] = None
    batch_cache_write: Optional[float] = None
    service_tiers: dict = Field(default_factory=dict)
    tiers: tuple[tuple[float, dict], ...] = ()
    cache_discount: Optional[float] = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input", "reasoning", "cache_write", "batch_input",
                     "batch_output", "batch_cached_input", "batch_cache_write", "cache_discount"):
            v = getattr(self, name)
            if v is not None:
                check_rate(name, v)
        for tier, card in self.service_tiers.items():
            if tier not in SERVICE_TIERS:
                raise InvalidInput(f"ModelPrice: unknown service tier {tier!r}"
                                   f"{did_you_mean(str(tier), SERVICE_TIERS)} (one of {SERVICE_TIERS})")
            _check_card(f"service_tiers[{tier!r}]", card)
        last = -math.inf
        for threshold, card in self.tiers:
            if not threshold > last:
                raise InvalidInput(
                    f"ModelPrice: context tiers must have increasing thresholds, got {threshold!r} "
                    f"after {last!r}")
            last = threshold
            _check_card(f"tiers[{threshold!r}]", card, nested=("batch",) + SERVICE_TIERS)

    @property
    def cached_rate(self) -> float:
        """The cached-input rate (explicit, else the discounted input rate)."""
        return self.rates()["cached_input"]

    @property
    def reasoning_rate(self) -> float:
        """The reasoning-token rate (explicit, else the output rate)."""
        return self.rates()["reasoning"]

    @property
    def cache_write_rate(self) -> float:
        """The cache-write rate (explicit, else the input rate)."""
        return self.rates()["cache_write"]

    def rates(self, prompt_tokens: int = 0, *, batch: bool = False,
              service_tier: Optional[str] = None) -> dict[str, float]:
        """The rate of every token kind for one request of ``prompt_tokens`` prompt tokens."""
        tier = service_tier_of(service_tier, self)
        if batch and tier is not None:
            raise InvalidInput(
                f"a request is either batch or service tier {service_tier!r}, not both")
        disc = self.cache_discount if self.cache_discount is not None else DEFAULT_CACHE_DISCOUNT
        st = self.service_tiers.get(tier, {}) if tier else {}
        r: dict[str, Optional[float]] = {
            k: st.get(k, getattr(self, k)) for k in _TIERED_KINDS}
        crossed = [card for thr, card in self.tiers if prompt_tokens > thr]
        for card in crossed:  # ascending: the highest crossed tier wins, kind by kind
            sub = card.get(tier, {}) if tier else {}
            for k in _TIERED_KINDS:
                v = sub.get(k, card.get(k))
                if v is not None:
                    r[k] = v
        if r["cached_input"] is None:
            r["cached_input"] = disc * r["input"]
        if r["cache_write"] is None:
            r["cache_write"] = r["input"]
        if "reasoning" in st:
            r["reasoning"] = st["reasoning"]
        elif "output" in st or self.reasoning is None:
            r["reasoning"] = r["output"]
        else:
            r["reasoning"] = self.reasoning
        if not batch:
            return r  # type: ignore[return-value]
        d = DEFAULT_BATCH_DISCOUNT
        b: dict[str, float] = {
            "input": self.batch_input if self.batch_input is not None else self.input * d,
            "output": self.batch_output if self.batch_output is not None else self.output * d,
            "cached_input": (self.batch_cached_input if self.batch_cached_input is not None
                             else None if self.cached_input is None else self.cached_input * d),
            "cache_write": (self.batch_cache_write if self.batch_cache_write is not None
                            else None if self.cache_write is None else self.cache_write * d),
        }
        for card in crossed:
            sub = card.get("batch", {})
            for k in _TIERED_KINDS:
                if k in sub:
                    b[k] = sub[k]
                elif card.get(k) is not None:
                    b[k] = card[k] * d
        if b["cached_input"] is None:
            b["cached_input"] = disc * b["input"]
        if b["cache_write"] is None:
            b["cache_write"] = b["input"]
        b["reasoning"] = b["output"] if self.reasoning is None else self.reasoning * d
        return b


def service_tier_of(name: Optional[str], price: ModelPrice) -> Optional[str]:
    """The service tier ``name`` selects on ``price`` (None: the standard rates); InvalidInput
    for an unknown tier or one the price declares no rates for."""
    if name is None or (isinstance(name, str) and name.lower() in _STANDARD_TIERS):
        return None
    if not isinstance(name, str):
        raise InvalidInput(f"service_tier must be a string, got {name!r}")
    tier = _TIER_ALIASES.get(name.lower(), name.lower())
    if tier not in SERVICE_TIERS:
        raise InvalidInput(f"unknown service_tier {name!r}{did_you_mean(tier, SERVICE_TIERS)} "
                           f"(one of {SERVICE_TIERS}, or None for the standard rates)")
    if tier not in price.service_tiers:
        raise InvalidInput(
            f"service_tier {name!r}: this price declares no {tier!r} rates (it has "
            f"{sorted(price.service_tiers) or 'none'}); add them to your price catalog, or bill "
            "at the standard rates with service_tier=None")
    return tier


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
