"""The per-model cost breakdown as the reports show it.

``cost.cost_report`` adds ``per_model`` (``{model: {calls, episodes, input_tokens, ...,
dollars, upper_bound}}``), ``upper_bound`` and ``upper_bound_reason`` to a run's cost figures
when its episodes record their model calls. The JSON, Markdown and HTML reports lay that out
with these helpers, one table row per model, and mark dollars that are an upper bound (a call
that did not report its cached tokens was billed at full input rates) -- visibly, never
silently. A run without per-call records shows nothing new.

>>> pm = {"gpt-4o": {"calls": 2, "episodes": 1, "input_tokens": 3600, "cached_input_tokens": 2560,
...                  "cache_write_tokens": 0, "output_tokens": 400, "reasoning_tokens": 0,
...                  "dollars": 0.0098, "upper_bound": False},
...       "gpt-4o-mini": {"calls": 1, "episodes": 1, "input_tokens": 3000, "cached_input_tokens": 0,
...                       "cache_write_tokens": 0, "output_tokens": 400, "reasoning_tokens": 0,
...                       "dollars": 0.00069, "upper_bound": True}}
>>> per_model_rows(pm, money=lambda d: f"${d:.5f}", count=str)[1]
['gpt-4o-mini', '1', '3000', '0', '0', '400', '0', '$0.00069 (upper bound)']
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional

__all__ = ["PER_MODEL_HEAD", "UPPER_BOUND", "per_model_rows", "upper_bound_reason", "marked",
           "capture_notes", "markdown_table"]

def markdown_table(head: Sequence[Any], rows: Iterable[Sequence[Any]]) -> list[str]:
    r"""A table of report cells as Markdown lines (a ``|`` or newline in a cell escaped), the
    one layout of every Markdown table the reports print.

    >>> markdown_table(["model", "dollars"], [["a|b", "$1"]])
    ['| model | dollars |', '|---|---|', '| a\\|b | $1 |']
    """
    def cell(c: Any) -> str:
        return str(c).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


#: The columns of a per-model table.
PER_MODEL_HEAD: tuple[str, ...] = ("model", "calls", "input tokens", "cached input", "cache writes",
                                   "output tokens", "reasoning", "dollars")
#: What follows a dollar figure that is an upper bound.
UPPER_BOUND = "(upper bound)"

_COUNTS = ("calls", "input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
           "reasoning_tokens")


def marked(text: str, upper_bound: Any) -> str:
    """``text`` followed by ``(upper bound)`` when ``upper_bound`` is true."""
    return f"{text} {UPPER_BOUND}" if upper_bound else text


def per_model_rows(per_model: Any, *, money: Callable[[Any], str],
                   count: Callable[[Any], str]) -> list[list[str]]:
    """One row of formatted cells per model (in the report's order: largest spend first), the
    dollars of a model whose calls did not all report cached tokens marked ``(upper bound)``.
    ``[]`` for anything but a ``{model: row}`` mapping (a report without per-call records)."""
    if not isinstance(per_model, Mapping):
        return []
    rows = []
    for model, r in per_model.items():
        if not isinstance(r, Mapping):
            continue
        rows.append([str(model)] + [count(r.get(k)) for k in _COUNTS]
                    + [marked(money(r.get("dollars")), r.get("upper_bound"))])
    return rows


def upper_bound_reason(cost: Any) -> Optional[str]:
    """Why a run's dollars are an upper bound (``cost_report``'s ``upper_bound_reason``), or
    None when they are not (or the report predates per-call billing)."""
    if not isinstance(cost, Mapping) or not cost.get("upper_bound"):
        return None
    return str(cost.get("upper_bound_reason") or "some model calls did not report cached tokens")


def _merge(into: dict, more: Any) -> None:
    if isinstance(more, Mapping):
        for k, v in more.items():
            if isinstance(v, int):
                into[str(k)] = into.get(str(k), 0) + v


def _listed(by_model: dict) -> str:
    return ", ".join(f"{m}: {n}" for m, n in sorted(by_model.items()))


def _union(intervals: list) -> int:
    """How many indices the half-open ``(lo, hi)`` intervals cover together."""
    total, reach = 0, None
    for lo, hi in sorted(intervals):
        if reach is None or lo >= reach:
            total += hi - lo
            reach = hi
        elif hi > reach:
            total += hi - reach
            reach = hi
    return total


def capture_notes(episodes: Any) -> dict:
    """What captured spans say about a run's bill, from each episode's ``meta["otel"]``
    (``run_suite(capture="otel")``, :mod:`ek_agents.runs.otelcapture`): ``{"figures": {...},
    "warnings": [...]}``, both empty when there is nothing to say. Counted: model calls that
    failed without usage (billed $0), calls whose usage is unknown (not billed: a lower
    bound), spans not ended within the grace after their trial returned, model-call spans
    that ended outside any trial, and trials whose spans a sampler dropped."""
    fig: dict = {}
    failed: dict = {}
    unknown: dict = {}
    streamed = unfinished = work = unfinished_trials = dropped = 0
    outside: dict = {}
    samplers: set = set()
    for ep in episodes:
        o = (getattr(ep, "meta", None) or {}).get("otel")
        if not isinstance(o, Mapping):
            continue
        _merge(failed, o.get("failed_calls_by_model"))
        _merge(unknown, o.get("calls_without_usage_by_model"))
        streamed += int(o.get("streamed_without_usage") or 0)
        n = int(o.get("unfinished_spans") or 0)
        w = int(o.get("unfinished_work") or 0)
        unfinished += n
        work += w
        unfinished_trials += (n + w) > 0
        out = o.get("outside_calls")
        if isinstance(out, Mapping) and isinstance(out.get("from"), int) and \
                isinstance(out.get("to"), int) and out["to"] > out["from"]:
            outside.setdefault(str(out.get("epoch")), []).append((out["from"], out["to"]))
        if o.get("sampler"):
            dropped += 1
            samplers.add(str(o["sampler"]))
    notes: list = []
    if failed:
        fig["failed_calls"] = sum(failed.values())
        fig["failed_calls_by_model"] = failed
        notes.append(f"{fig['failed_calls']} model call(s) failed without reporting usage "
                     f"({_listed(failed)}): counted, billed $0 (a provider bills no tokens for a "
                     "refused request)")
    if unknown:
        fig["calls_without_usage"] = sum(unknown.values())
        fig["calls_without_usage_by_model"] = unknown
        fig["streamed_without_usage"] = streamed
        said = f"; {streamed} of them streamed" if streamed else ""
        notes.append(f"{fig['calls_without_usage']} model call(s) reported no token usage "
                     f"({_listed(unknown)}{said}): they are not in the bill, so the dollar "
                     "figures are a LOWER BOUND; a streamed OpenAI chat completion reports "
                     "usage only with stream_options={'include_usage': True}")
    if unfinished or work:
        fig["unfinished_spans"] = unfinished
        fig["unfinished_work"] = work
        notes.append(f"{unfinished} span(s) and {work} thread(s) or task(s) of "
                     f"{unfinished_trials} trial(s) had not ended within the capture's grace "
                     "after their trial returned: what they spent later is not in the bill (the "
                     "agent left work running; end it before returning, or raise "
                     "OtelCapture(grace_s=...))")
    n_out = sum(_union(v) for v in outside.values())
    if n_out:
        fig["outside_calls"] = n_out
        notes.append(f"{n_out} model-call span(s) ended outside any trial while trials ran: their "
                     "cost is in no trial's bill. The calls ran in a context the trial's span did "
                     "not reach (a process, an executor or a span started as a new root); the "
                     "capture carries it into threading.Thread and ThreadPoolExecutor work started "
                     "during a trial -- elsewhere run the calls under contextvars.copy_context()"
                     ".run, or attach the trial's context (opentelemetry.context.attach)")
    if dropped:
        fig["trials_dropped_by_sampler"] = dropped
        notes.append(f"{dropped} trial(s) recorded no span below their own: the TracerProvider's "
                     f"sampler ({', '.join(sorted(samplers))}) dropped them, so their cost is "
                     "unknown; use a parent-based sampler (ParentBased(...)) so spans follow the "
                     "trial's span, which is always sampled")
    return {"figures": fig, "warnings": notes}
