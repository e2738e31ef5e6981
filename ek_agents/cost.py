"""The cost model: dollars per successfully completed task.

Rates live in a :class:`ModelPrice` (USD **per token**); a :class:`~ek_agents.base.Cost` tally
becomes dollars through :func:`dollars`, and a run becomes the quality x cost x latency triple
through :func:`cost_report`. ek-agents ships **no** price table: build a price with
:func:`per_million` or load LiteLLM's catalog with :func:`load_prices`.

Billing follows the ``Cost`` convention (see :mod:`ek_agents.base`): ``input_tokens``
*includes* cached reads and cache writes, ``output_tokens`` *includes* reasoning tokens, and
every token is billed **once**, at its kind's rate::

    (input - cached - cache_write) * input + cached * cached_input + cache_write * cache_write
    + (output - reasoning) * output + reasoning * reasoning

Above a context tier's threshold (prompt tokens > threshold) the **whole request** is billed at
that tier's rates, as LiteLLM and the providers do.

>>> from ek_agents.base import Cost
>>> p = per_million(3.0, 15.0)
>>> round(dollars(Cost(input_tokens=1_000_000, output_tokens=100_000), p), 6)
4.5
>>> cost_of_pass(10.0, 0)
inf
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Optional, Union

from pydantic import Field

from .base import Cost, _JsonShape
from .core import shape
from .errors import InvalidInput, UnknownModelPrice, did_you_mean
from .stats import bootstrap_ci

__all__ = [
    "ModelPrice", "per_million", "dollars", "episode_dollars", "cost_of_pass", "cost_report",
    "load_prices", "price_of", "UnknownModelPrice", "DEFAULT_CACHE_DISCOUNT",
    "DEFAULT_BATCH_DISCOUNT", "SERVICE_TIERS", "RATE_KINDS", "episode_model",
]

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


def _rate(name: str, v: Any) -> float:
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
            _rate(f"{where}[{key!r}]", v)
        else:
            raise InvalidInput(
                f"ModelPrice: {where} has unknown key {key!r}"
                f"{did_you_mean(str(key), RATE_KINDS + nested)} (rate kinds: {RATE_KINDS})")


@shape()
class ModelPrice(_JsonShape):
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
                _rate(name, v)
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
        tier = _service_tier(service_tier, self)
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


def _service_tier(name: Optional[str], price: ModelPrice) -> Optional[str]:
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


def per_million(input: float, output: float, *, cached_input: Optional[float] = None,
                reasoning: Optional[float] = None, cache_write: Optional[float] = None,
                batch_input: Optional[float] = None, batch_output: Optional[float] = None) -> ModelPrice:
    """Build a :class:`ModelPrice` from the human-facing **USD per 1M tokens** figures.

    >>> p = per_million(3.0, 15.0)   # $3 in / $15 out per 1M tokens
    >>> round(p.input, 9), round(p.output, 9)
    (3e-06, 1.5e-05)
    """
    def conv(name: str, v: Optional[float]) -> Optional[float]:
        return None if v is None else _rate(name, v) / 1e6

    return ModelPrice(input=conv("input", input), output=conv("output", output),
                      cached_input=conv("cached_input", cached_input),
                      reasoning=conv("reasoning", reasoning),
                      cache_write=conv("cache_write", cache_write),
                      batch_input=conv("batch_input", batch_input),
                      batch_output=conv("batch_output", batch_output))


def _as_cost(cost: Any) -> Cost:
    if isinstance(cost, Cost):
        return cost
    if isinstance(cost, Mapping):
        return Cost.from_dict(cost)
    raise InvalidInput(f"dollars: cost must be a Cost (or its dict form), got {cost!r:.80}")


def _resolve(price: Any, prices: Optional[Mapping[str, ModelPrice]]) -> ModelPrice:
    if isinstance(price, ModelPrice):
        return price
    if isinstance(price, str):
        from .prices import price_of

        return price_of(price, prices=prices)
    raise InvalidInput(f"price must be a ModelPrice or a model name, got {price!r:.80}")


def dollars(cost: Any, price: Union[ModelPrice, str], *,
            prices: Optional[Mapping[str, ModelPrice]] = None, batch: bool = False,
            service_tier: Optional[str] = None) -> float:
    """Monetary cost of one :class:`~ek_agents.base.Cost` tally, in USD.

    ``price`` is a :class:`ModelPrice` or a model name resolved against ``prices``
    (:class:`~ek_agents.errors.UnknownModelPrice` when it has no rates). ``batch`` bills at the
    batch-API rates; ``service_tier`` (``"priority"``, ``"flex"``, ...) at that tier's rates.
    The context tier is chosen from ``cost.input_tokens`` -- so bill **one request** at a time
    when a price has context tiers (a summed tally of many small requests would wrongly cross
    a threshold).

    >>> from ek_agents.base import Cost
    >>> p = per_million(2.0, 8.0, cached_input=0.5)
    >>> round(dollars(Cost(input_tokens=1000, cached_input_tokens=400, output_tokens=100), p), 8)
    0.0022
    """
    c = _as_cost(cost)
    p = _resolve(price, prices)
    r = p.rates(c.input_tokens, batch=batch, service_tier=service_tier)
    plain_in = c.input_tokens - c.cached_input_tokens - c.cache_write_tokens
    plain_out = c.output_tokens - c.reasoning_tokens
    try:
        usd = (plain_in * r["input"] + c.cached_input_tokens * r["cached_input"]
               + c.cache_write_tokens * r["cache_write"] + plain_out * r["output"]
               + c.reasoning_tokens * r["reasoning"])
    except OverflowError:  # a token count too large for a float
        usd = math.inf
    if not math.isfinite(usd):
        name = price if isinstance(price, str) else "the given price"
        raise InvalidInput(f"dollars: the cost of {c.input_tokens} input / {c.output_tokens} output "
                           f"tokens at {name}'s rates ({r}) is {usd}, not a finite amount; check "
                           "the price catalog's rates (USD per token) and the token counts")
    return usd


def episode_model(episode: Any) -> Optional[str]:
    """The model an episode ran on: ``episode.run.model``, else ``episode.meta["model"]``."""
    run = getattr(episode, "run", None)
    model = getattr(run, "model", None) if run is not None else None
    if not model:
        model = (getattr(episode, "meta", None) or {}).get("model")
    return str(model) if model else None


def _episode_price(episode: Any, prices: Optional[Mapping[str, ModelPrice]],
                   price: Optional[ModelPrice], memo: Optional[dict] = None) -> ModelPrice:
    if price is not None:
        return _resolve(price, prices)
    model = episode_model(episode)
    if model is None:
        raise InvalidInput(
            f"episode of task {getattr(episode, 'task_id', '?')!r} records no model "
            "(run.model or meta['model']), so it cannot be priced from a catalog; record the "
            "model or pass price=")
    if memo is not None and model in memo:
        return memo[model]
    from .prices import price_of

    p = price_of(model, prices=prices)
    if memo is not None:
        memo[model] = p
    return p


def episode_dollars(episode: Any, *, prices: Optional[Mapping[str, ModelPrice]] = None,
                    price: Optional[ModelPrice] = None, batch: bool = False) -> Optional[float]:
    """Monetary cost of one episode, or ``None`` when it carries no :class:`~ek_agents.base.Cost`.

    (The spec says 0.0 there; ek-agents returns ``None`` on purpose: an unknown cost is not
    free.) ``price`` applies to the episode as given; otherwise the episode's model
    (``run.model``, else ``meta["model"]``) is looked up in ``prices``. An episode's
    ``meta["service_tier"]`` (as a provider reports it) selects the service-tier rates.
    """
    if getattr(episode, "cost", None) is None:
        return None
    return _billed(episode, prices, price, batch)


def _billed(episode: Any, prices: Optional[Mapping[str, ModelPrice]],
            price: Optional[ModelPrice], batch: bool, memo: Optional[dict] = None) -> float:
    """Dollars of an episode that carries a Cost, at its recorded ``meta["service_tier"]``
    when the price has rates for that tier (else the standard rates)."""
    p = _episode_price(episode, prices, price, memo)
    try:
        tier = None if batch else _service_tier(
            (getattr(episode, "meta", None) or {}).get("service_tier"), p)
    except InvalidInput:
        tier = None
    return dollars(episode.cost, p, batch=batch, service_tier=tier)


def cost_of_pass(total_cost: Optional[float], n_success: int) -> Optional[float]:
    """Expected monetary cost of one *successful* task: ``total_cost / n_success``.

    ``inf`` when nothing succeeded -- infeasibility is the honest answer, not a cheap-looking
    zero. ``None`` (an unknown cost) stays ``None``.

    >>> cost_of_pass(10.0, 4)
    2.5
    >>> cost_of_pass(10.0, 0)
    inf
    """
    if total_cost is None:
        return None
    t = float(total_cost)
    if isinstance(n_success, bool) or not float(n_success).is_integer() or n_success < 0:
        raise InvalidInput(f"cost_of_pass: n_success must be a count >= 0, got {n_success!r}")
    if not t >= 0:
        raise InvalidInput(f"cost_of_pass: total_cost must be >= 0, got {total_cost!r}")
    return math.inf if n_success == 0 else t / n_success


def cost_report(episodes: Iterable[Any], *, prices: Optional[Mapping[str, ModelPrice]] = None,
                price: Optional[ModelPrice] = None, seed: int = 0, per_task: bool = False,
                batch: bool = False, resamples: int = 2000) -> dict:
    """The quality x cost x latency triple, reported **together**.

    Keys: ``n``, ``n_success``, ``success_rate``, ``total_dollars``, ``cost_per_success``
    (the pooled Cost-of-Pass ``sum(dollars) / sum(successes)``), ``cost_per_success_ci`` (a
    seeded percentile bootstrap over episodes), ``mean_dollars``, ``mean_latency_s``,
    ``total_tokens`` (and ``input_tokens``, ``output_tokens``, ``cached_input_tokens``,
    ``cache_write_tokens``, ``reasoning_tokens``), ``n_without_cost``, ``seed`` and
    ``warnings``. With ``per_task=True`` also ``cost_per_success_per_task`` -- Erol et al.
    (2025)'s form: per task ``E[cost] / E[success]``, averaged over tasks (``inf`` if any task
    never succeeded) -- and ``per_task`` (``{task_id: {n, n_success, dollars,
    cost_per_success}}``).

    With **no** ``price``/``prices`` the dollar figures are ``None``, never a fabricated 0.
    Episodes without a ``Cost`` are counted in ``n_without_cost`` and left out of the dollar
    figures (successes included), with a warning. An ungraded episode raises
    :class:`~ek_agents.errors.InvalidInput`; an unknown model raises
    :class:`~ek_agents.errors.UnknownModelPrice`.

    >>> from ek_agents.base import Cost, Episode
    >>> p = per_million(1.0, 1.0)
    >>> eps = [Episode(task_id="a", cost=Cost(input_tokens=1_000_000), success=True),
    ...        Episode(task_id="b", cost=Cost(input_tokens=1_000_000), success=False)]
    >>> r = cost_report(eps, price=p)
    >>> r["success_rate"], round(r["cost_per_success"], 2)
    (0.5, 2.0)
    >>> cost_report(eps)["cost_per_success"] is None
    True
    """
    eps = list(episodes)
    priced = price is not None or prices is not None
    warnings_: list[str] = []
    n_success = 0
    costed: list[tuple[str, float, bool]] = []  # (task_id, dollars, success)
    lat: list[float] = []
    tok = dict.fromkeys(("input_tokens", "output_tokens", "cached_input_tokens",
                         "cache_write_tokens", "reasoning_tokens"), 0)
    n_without = 0
    memo: dict[str, ModelPrice] = {}
    for ep in eps:
        if getattr(ep, "success", None) is None:
            raise InvalidInput(
                f"cost_report: episode of task {getattr(ep, 'task_id', '?')!r} is ungraded "
                "(success=None); grade the episodes first")
        ok = bool(ep.success)
        n_success += ok
        c = getattr(ep, "cost", None)
        if c is None:
            n_without += 1
            continue
        for k in tok:
            tok[k] += getattr(c, k)
        if c.latency_s is not None:
            lat.append(float(c.latency_s))
        if priced:
            costed.append((str(ep.task_id), _billed(ep, prices, price, batch, memo), ok))
        else:
            costed.append((str(ep.task_id), math.nan, ok))
    n = len(eps)
    if n == 0:
        warnings_.append("no episodes: nothing to report")
    if n_without:
        warnings_.append(
            f"{n_without} of {n} episode(s) carry no Cost: left out of the dollar figures and "
            "the cost per success (their cost is unknown, not zero)")
    if not priced:
        warnings_.append("no price/prices given: dollar figures are None (ek-agents does not "
                         "invent rates); pass price= or prices=load_prices(...)")
    total = cps = ci = mean_d = None
    if priced and costed:
        ds = [d for _, d, _ in costed]
        total = math.fsum(ds)
        mean_d = total / len(ds)
        cps = cost_of_pass(total, sum(ok for _, _, ok in costed))
        ci = bootstrap_ci([(d, float(ok)) for _, d, ok in costed], "ratio",
                          resamples=resamples, seed=seed)
    elif priced:
        warnings_.append("no episode carries a Cost: dollar figures are None")
    report = {
        "n": n, "n_success": n_success, "success_rate": n_success / n if n else None,
        "total_dollars": total, "cost_per_success": cps,
        "cost_per_success_ci": list(ci) if ci is not None else None,
        "mean_dollars": mean_d,
        "mean_latency_s": math.fsum(lat) / len(lat) if lat else None,
        "total_tokens": tok["input_tokens"] + tok["output_tokens"], **tok,
        "n_without_cost": n_without, "seed": seed, "batch": batch, "warnings": warnings_,
    }
    if per_task:
        report.update(_per_task(costed, priced))
    return report


def _per_task(costed: list[tuple[str, float, bool]], priced: bool) -> dict:
    groups: dict[str, list[tuple[float, bool]]] = {}
    for tid, d, ok in costed:
        groups.setdefault(tid, []).append((d, ok))
    table = {}
    values = []
    for tid in sorted(groups):
        rows = groups[tid]
        ns = sum(ok for _, ok in rows)
        spent = math.fsum(d for d, _ in rows) if priced else None
        # E[cost] / E[success] = (spent / n) / (ns / n) = spent / ns
        cps = cost_of_pass(spent, ns)
        table[tid] = {"n": len(rows), "n_success": ns, "dollars": spent, "cost_per_success": cps}
        values.append(cps)
    value = None
    if priced and values:
        value = math.inf if any(math.isinf(v) for v in values) else math.fsum(values) / len(values)
    return {"cost_per_success_per_task": value, "per_task": table}


def __getattr__(name: str) -> Any:  # re-exports without a circular import
    if name in ("load_prices", "price_of"):
        from . import prices

        return getattr(prices, name)
    raise AttributeError(f"module 'ek_agents.cost' has no attribute {name!r}")
