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

An episode whose ``Cost`` records its model calls (``Cost.calls``, :class:`~ek_agents.base.ModelCall`)
is billed **call by call**, each call at the rates of the model that answered it (a gpt-4o
planner and a gpt-4o-mini summariser each at their own rates), each call one request for the
context tier; ``cost_report`` then breaks the figures down per model. A call whose source did
not report cached tokens (``cached_known=False``) is billed at full input rates: the dollars
are an **upper bound**, and the report says so.

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

from .base import TOKEN_KINDS, Cost, ModelCall
from .errors import InvalidInput, UnknownModelPrice
from .modelcosts import capture_notes
from .prices import (DEFAULT_BATCH_DISCOUNT, DEFAULT_CACHE_DISCOUNT, RATE_KINDS, SERVICE_TIERS,
                     ModelPrice, check_rate, load_prices, price_of, service_tier_of)
from .stats.bootstrap import cluster_bootstrap_ratio

__all__ = [
    "ModelPrice", "per_million", "dollars", "episode_dollars", "cost_of_pass", "cost_report",
    "load_prices", "price_of", "UnknownModelPrice", "DEFAULT_CACHE_DISCOUNT",
    "DEFAULT_BATCH_DISCOUNT", "SERVICE_TIERS", "RATE_KINDS", "episode_model",
    "episode_dollars_by_model", "call_dollars", "cost_figures", "cost_by_model",
]

def per_million(input: float, output: float, *, cached_input: Optional[float] = None,
                reasoning: Optional[float] = None, cache_write: Optional[float] = None,
                batch_input: Optional[float] = None, batch_output: Optional[float] = None) -> ModelPrice:
    """Build a :class:`ModelPrice` from the human-facing **USD per 1M tokens** figures.

    >>> p = per_million(3.0, 15.0)   # $3 in / $15 out per 1M tokens
    >>> round(p.input, 9), round(p.output, 9)
    (3e-06, 1.5e-05)
    """
    def conv(name: str, v: Optional[float]) -> Optional[float]:
        return None if v is None else check_rate(name, v) / 1e6

    return ModelPrice(input=conv("input", input), output=conv("output", output),
                      cached_input=conv("cached_input", cached_input),
                      reasoning=conv("reasoning", reasoning),
                      cache_write=conv("cache_write", cache_write),
                      batch_input=conv("batch_input", batch_input),
                      batch_output=conv("batch_output", batch_output))


def _as_cost(cost: Any) -> Cost:
    if isinstance(cost, (Cost, ModelCall)):  # a ModelCall holds the same token counts
        return cost
    if isinstance(cost, Mapping):
        return Cost.from_dict(cost)
    raise InvalidInput(f"dollars: cost must be a Cost (or its dict form), got {cost!r:.80}")


def _resolve(price: Any, prices: Optional[Mapping[str, ModelPrice]]) -> ModelPrice:
    if isinstance(price, ModelPrice):
        return price
    if isinstance(price, str):
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
    return _model_price(model, prices, memo)


def _model_price(model: str, prices: Optional[Mapping[str, ModelPrice]],
                 memo: Optional[dict]) -> ModelPrice:
    """``price_of(model, prices=prices)``, looked up once per model in ``memo`` (when given)."""
    if memo is not None and model in memo:
        return memo[model]
    p = price_of(model, prices=prices)
    if memo is not None:
        memo[model] = p
    return p


def _tier(wanted: Any, p: ModelPrice) -> Optional[str]:
    """The service tier ``wanted`` (an episode's ``meta["service_tier"]``) names among ``p``'s
    rates; None (the standard rates) when it names none of them."""
    try:
        return service_tier_of(wanted, p)
    except InvalidInput:
        return None


def episode_dollars(episode: Any, *, prices: Optional[Mapping[str, ModelPrice]] = None,
                    price: Optional[ModelPrice] = None, batch: bool = False) -> Optional[float]:
    """Monetary cost of one episode, or ``None`` when it carries no :class:`~ek_agents.base.Cost`.

    (The spec says 0.0 there; ek-agents returns ``None`` on purpose: an unknown cost is not
    free.) ``price`` applies to the episode as given; otherwise the episode's model
    (``run.model``, else ``meta["model"]``) is looked up in ``prices``. An episode's
    ``meta["service_tier"]`` (as a provider reports it) selects the service-tier rates. An
    episode whose Cost records its model calls is billed call by call, each call at its own
    model's rates (:func:`call_dollars`; ``price`` then bills every call at those rates).
    """
    if getattr(episode, "cost", None) is None:
        return None
    return _billed(episode, prices, price, batch)


def _billed(episode: Any, prices: Optional[Mapping[str, ModelPrice]],
            price: Optional[ModelPrice], batch: bool, memo: Optional[dict] = None) -> float:
    """Dollars of an episode that carries a Cost, at its recorded ``meta["service_tier"]``
    when the price has rates for that tier (else the standard rates); call by call when the
    Cost records its model calls."""
    if episode.cost.calls:
        return math.fsum(d for _, d in call_dollars(episode, prices=prices, price=price,
                                                    batch=batch, memo=memo))
    if not any(getattr(episode.cost, k) for k in TOKEN_KINDS):  # nothing billed (every call
        return 0.0  # refused): $0 at any rates, so no price is needed
    p = _episode_price(episode, prices, price, memo)
    tier = None if batch else _tier((getattr(episode, "meta", None) or {}).get("service_tier"), p)
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


def cost_figures(*, n: int, n_success: int, n_without: int, priced: bool, n_costed: int,
                 n_costed_success: int, total: Any, task_totals: Any,
                 mean_latency_s: Optional[float], tokens: Mapping[str, int], seed: int,
                 batch: bool, resamples: int) -> dict:
    """The figures every cost report states, from a run's tallies: :func:`cost_report`'s keys
    up to ``warnings`` (its per-model and per-task parts aside), in its order.

    ``n`` episodes, ``n_success`` of them successes, ``n_without`` without a Cost;
    ``n_costed`` (``n_costed_success``) the episodes (successes) with a Cost; ``total`` and
    ``task_totals`` zero-argument callables giving their dollars and ``{task_id: {n,
    n_success, dollars}}``, called only when ``priced`` and something was costed;
    ``tokens`` the token tallies by kind (``input_tokens``, ``output_tokens``, ...)."""
    warnings_: list[str] = []
    if n == 0:
        warnings_.append("no episodes: nothing to report")
    if n_without:
        warnings_.append(
            f"{n_without} of {n} episode(s) carry no Cost: left out of the dollar figures and "
            "the cost per success (their cost is unknown, not zero)")
    if not priced:
        warnings_.append("no price/prices given: dollar figures are None (ek-agents does not "
                         "invent rates); pass price= or prices=load_prices(...)")
    dollars_ = cps = ci = mean_d = totals = None
    if priced and n_costed:
        dollars_ = total()
        mean_d = dollars_ / n_costed
        cps = cost_of_pass(dollars_, n_costed_success)
        totals = task_totals()
        ci = cluster_bootstrap_ratio([t["dollars"] for t in totals.values()],
                                     [t["n_success"] for t in totals.values()],
                                     resamples=resamples, seed=seed)
    elif priced:
        warnings_.append("no episode carries a Cost: dollar figures are None")
    return {
        "n": n, "n_success": n_success, "success_rate": n_success / n if n else None,
        "total_dollars": dollars_, "cost_per_success": cps,
        "cost_per_success_ci": list(ci) if ci is not None else None,
        "cost_per_success_ci_method": None if ci is None else
        "bootstrap-t over tasks (each task keeps all its trials)",
        "task_totals": totals,
        "mean_dollars": mean_d,
        "mean_latency_s": mean_latency_s,
        "total_tokens": tokens["input_tokens"] + tokens["output_tokens"], **tokens,
        "n_without_cost": n_without, "seed": seed, "batch": batch, "warnings": warnings_,
    }


def cost_report(episodes: Iterable[Any], *, prices: Optional[Mapping[str, ModelPrice]] = None,
                price: Optional[ModelPrice] = None, seed: int = 0, per_task: bool = False,
                batch: bool = False, resamples: int = 2000) -> dict:
    """The quality x cost x latency triple, reported **together**.

    Keys: ``n``, ``n_success``, ``success_rate``, ``total_dollars``, ``cost_per_success``
    (the pooled Cost-of-Pass ``sum(dollars) / sum(successes)``), ``cost_per_success_ci`` (a
    seeded bootstrap-t over **tasks**, each task keeping all its trials:
    :func:`~ek_agents.stats.cluster_bootstrap_ratio`; with one trial per task that is a
    bootstrap over episodes) and ``cost_per_success_ci_method``, ``task_totals`` (``{task_id:
    {n, n_success, dollars}}`` of the priced episodes: what a paired gate compares task by
    task), ``mean_dollars``, ``mean_latency_s``,
    ``total_tokens`` (and ``input_tokens``, ``output_tokens``, ``cached_input_tokens``,
    ``cache_write_tokens``, ``reasoning_tokens``), ``n_without_cost``, ``seed`` and
    ``warnings``. When some episode's Cost records its model calls, also ``per_model``
    (``{model: {calls, episodes, input_tokens, cached_input_tokens, cache_write_tokens,
    output_tokens, reasoning_tokens, dollars, upper_bound}}``, each call under the model that
    answered it; an episode without calls under its episode model, with ``calls`` 0),
    ``upper_bound`` (True when some call did not report cached tokens: its dollars, and so
    the totals, are an upper bound) and ``upper_bound_reason``. When the episodes were read
    from captured spans and something escaped the bill (refused calls billed $0, calls without
    usage, late or outside spans, a sampler that dropped them), also ``capture``
    (:func:`~ek_agents.modelcosts.capture_notes`'s figures) with one warning each. With ``per_task=True`` also ``cost_per_success_per_task`` -- Erol et al.
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
    n_success = 0
    costed: list[tuple[str, float, bool]] = []  # (task_id, dollars, success)
    lat: list[float] = []
    tok = dict.fromkeys(("input_tokens", "output_tokens", "cached_input_tokens",
                         "cache_write_tokens", "reasoning_tokens"), 0)
    n_without = 0
    memo: dict[str, ModelPrice] = {}
    by_model: Optional[dict] = {} if any(getattr(getattr(ep, "cost", None), "calls", None)
                                         for ep in eps) else None
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
        if by_model is not None:
            costed.append((str(ep.task_id), _add_by_model(by_model, ep, prices, price, batch, memo,
                                                          priced), ok))
        elif priced:
            costed.append((str(ep.task_id), _billed(ep, prices, price, batch, memo), ok))
        else:
            costed.append((str(ep.task_id), math.nan, ok))
    report = cost_figures(
        n=len(eps), n_success=n_success, n_without=n_without, priced=priced, n_costed=len(costed),
        n_costed_success=sum(ok for _, _, ok in costed),
        total=lambda: math.fsum(d for _, d, _ in costed), task_totals=lambda: _task_totals(costed),
        mean_latency_s=math.fsum(lat) / len(lat) if lat else None, tokens=tok, seed=seed,
        batch=batch, resamples=resamples)
    warnings_ = report["warnings"]
    if by_model is not None:
        report.update(_model_breakdown(by_model, priced))
        if report["upper_bound"]:
            warnings_.append(report["upper_bound_reason"])
    notes = capture_notes(eps)
    if notes["figures"]:
        report["capture"] = notes["figures"]
        warnings_.extend(notes["warnings"])
    if per_task:
        report.update(_per_task(costed, priced))
    return report


def _task_totals(costed: list[tuple[str, float, bool]]) -> dict:
    """``{task_id: {n, n_success, dollars}}`` in order of first appearance."""
    table: dict[str, dict] = {}
    for tid, d, ok in costed:
        t = table.setdefault(tid, {"n": 0, "n_success": 0, "dollars": []})
        t["n"] += 1
        t["n_success"] += ok
        t["dollars"].append(d)
    for t in table.values():
        t["dollars"] = math.fsum(t["dollars"])
    return table


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


# --------------------------------------------------------------------------- per-call billing

def _call_price(call: ModelCall, where: str, prices: Optional[Mapping[str, ModelPrice]],
                price: Optional[ModelPrice], memo: Optional[dict]) -> ModelPrice:
    if price is not None:
        return _resolve(price, prices)
    try:
        return _model_price(call.model, prices, memo)
    except UnknownModelPrice as exc:
        asked = (f", which asked for {call.requested_model!r}"
                 if call.requested_model and call.requested_model != call.model else "")
        raise UnknownModelPrice(f"{where} (answered by {call.model!r}{asked}): "
                                f"{exc.args[0] if exc.args else exc}") from None


def call_dollars(episode: Any, *, prices: Optional[Mapping[str, ModelPrice]] = None,
                 price: Optional[ModelPrice] = None, batch: bool = False,
                 memo: Optional[dict] = None) -> list[tuple[ModelCall, float]]:
    """``[(call, dollars)]`` of each model call the episode's Cost records, in order: each
    call one request at the rates of the model that answered it (``call.model``, looked up in
    ``prices``; :class:`~ek_agents.errors.UnknownModelPrice` naming the call when it has no
    rates), at the episode's ``meta["service_tier"]`` where that model has rates for it.
    ``price`` bills every call at those rates instead. ``[]`` for an episode without calls.

    >>> from ek_agents.base import Cost, Episode, ModelCall
    >>> prices = {"big": per_million(2.5, 10.0), "small": per_million(0.15, 0.6)}
    >>> ep = Episode("t", cost=Cost.of_calls([ModelCall("big", input_tokens=1000, output_tokens=100),
    ...                                       ModelCall("small", input_tokens=1000, output_tokens=100)]))
    >>> [(c.model, round(d, 6)) for c, d in call_dollars(ep, prices=prices)]
    [('big', 0.0035), ('small', 0.00021)]
    """
    cost = getattr(episode, "cost", None)
    if cost is None or not cost.calls:
        return []
    tid = getattr(episode, "task_id", "?")
    wanted = None if batch else (getattr(episode, "meta", None) or {}).get("service_tier")
    out = []
    for i, call in enumerate(cost.calls):
        p = _call_price(call, f"episode of task {tid!r}, model call {i}", prices, price, memo)
        tier = _tier(wanted, p)
        out.append((call, dollars(call, p, batch=batch, service_tier=tier)))
    return out


def episode_dollars_by_model(episode: Any, *, prices: Optional[Mapping[str, ModelPrice]] = None,
                             price: Optional[ModelPrice] = None,
                             batch: bool = False) -> Optional[dict[str, float]]:
    """``{model: dollars}`` of one episode: its model calls summed per model that answered
    them; an episode without calls is one entry, its episode model's (``"?"`` when it records
    none and ``price`` is given). ``None`` when it carries no Cost. The values add up to
    :func:`episode_dollars`.

    >>> from ek_agents.base import Cost, Episode, ModelCall
    >>> prices = {"big": per_million(2.5, 10.0), "small": per_million(0.15, 0.6)}
    >>> ep = Episode("t", cost=Cost.of_calls([ModelCall("big", input_tokens=1000),
    ...                                       ModelCall("small", input_tokens=1000),
    ...                                       ModelCall("big", output_tokens=100)]))
    >>> {m: round(d, 6) for m, d in episode_dollars_by_model(ep, prices=prices).items()}
    {'big': 0.0035, 'small': 0.00015}
    """
    cost = getattr(episode, "cost", None)
    if cost is None:
        return None
    if not cost.calls:
        return {episode_model(episode) or "?": _billed(episode, prices, price, batch)}
    out: dict[str, list[float]] = {}
    for call, d in call_dollars(episode, prices=prices, price=price, batch=batch):
        out.setdefault(call.model, []).append(d)
    return {m: math.fsum(ds) for m, ds in out.items()}


_NO_MODEL = "(no model recorded)"


def _add_by_model(table: dict, ep: Any, prices: Optional[Mapping[str, ModelPrice]],
                  price: Optional[ModelPrice], batch: bool, memo: dict, priced: bool) -> float:
    """Add the episode's calls (or, without calls, the episode) to ``table``'s rows; its dollars
    (NaN when not priced)."""
    cost = ep.cost
    if cost.calls:
        parts = (call_dollars(ep, prices=prices, price=price, batch=batch, memo=memo) if priced
                 else [(c, math.nan) for c in cost.calls])
        seen = set()
        for call, d in parts:
            row = _row(table, call.model)
            row["calls"] += 1
            row["episodes"] += call.model not in seen
            seen.add(call.model)
            _add_tokens(row, call, d)
            row["unknown_cached"] += not call.cached_known
        return math.fsum(d for _, d in parts) if priced else math.nan
    d = _billed(ep, prices, price, batch, memo) if priced else math.nan
    if not any(getattr(cost, k) for k in TOKEN_KINDS):  # nothing billed (every call refused):
        return d  # no row of its own (the refused calls are counted in "capture")
    row = _row(table, episode_model(ep) or _NO_MODEL)
    row["episodes"] += 1
    _add_tokens(row, cost, d)
    return d


def _row(table: dict, model: str) -> dict:
    row = table.get(model)
    if row is None:
        row = table[model] = {"calls": 0, "episodes": 0, **dict.fromkeys(TOKEN_KINDS, 0),
                              "dollars": [], "unknown_cached": 0}
    return row


def _add_tokens(row: dict, counts: Any, d: float) -> None:
    for k in TOKEN_KINDS:
        row[k] += getattr(counts, k)
    row["dollars"].append(d)


def _model_breakdown(table: dict, priced: bool) -> dict:
    """``per_model`` (largest spend first when priced, else most calls), ``upper_bound`` and
    its reason."""
    rows = {}
    unknown = {m: r["unknown_cached"] for m, r in table.items() if r["unknown_cached"]}
    for model, r in table.items():
        rows[model] = {"calls": r["calls"], "episodes": r["episodes"],
                       **{k: r[k] for k in TOKEN_KINDS},
                       "dollars": math.fsum(r["dollars"]) if priced else None,
                       "upper_bound": model in unknown}
    order = sorted(rows, key=lambda m: (-(rows[m]["dollars"] or 0.0), -rows[m]["calls"], m))
    n_calls = sum(r["calls"] for r in rows.values())
    reason = None
    if unknown:
        reason = (f"{sum(unknown.values())} of {n_calls} model call(s) did not report cached "
                  f"tokens ({', '.join(f'{m}: {n}' for m, n in sorted(unknown.items()))}): billed at "
                  "full input rates, so the dollar figures are an UPPER BOUND (turn on an "
                  "instrumentation that reports cached tokens to bill them exactly)")
    return {"per_model": {m: rows[m] for m in order}, "upper_bound": bool(unknown),
            "upper_bound_reason": reason}


def cost_by_model(episodes: Iterable[Any], prices: Optional[Mapping]) -> tuple:
    """``({model: {calls, input_tokens, output_tokens, cached_input_tokens[, dollars]}},
    [dollars of each priced episode])``: each call under the model that answered it."""
    table: dict[str, dict[str, float]] = {}
    per_ep: list = []
    for ep in episodes:
        if ep.cost is None:
            continue
        for c in ep.cost.calls:
            row = table.setdefault(c.model, {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                             "cached_input_tokens": 0})
            row["calls"] += 1
            row["input_tokens"] += c.input_tokens
            row["output_tokens"] += c.output_tokens
            row["cached_input_tokens"] += c.cached_input_tokens
        if prices is not None:
            d = episode_dollars_by_model(ep, prices=prices) or {}
            for m, x in d.items():
                table[m]["dollars"] = table[m].get("dollars", 0.0) + x
            per_ep.append(math.fsum(d.values()))
    return table, per_ep
