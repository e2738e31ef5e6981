"""Model-call spans -> :class:`~ek_agents.base.ModelCall`: the token counts every convention
spells (the keys below, first found wins), and the calls that reported none (failed, or whose
usage is unknown). What is read is listed in :mod:`ek_agents.bridge.otel`'s docstring."""
from __future__ import annotations

from typing import Any, Optional

from ..base import ModelCall
from ..core import construct_from
from ..errors import BridgeError
from ._otlp import KeyPrefix, RawSpan

__all__ = ["LLM_OPS", "is_model_call", "INPUT_KEYS", "OUTPUT_KEYS", "CACHED_KEYS", "WRITE_KEYS", "REASONING_KEYS",
           "count_attr", "span_str", "has_usage", "span_failed", "model_call", "count_unbilled"]

#: ``gen_ai.operation.name`` values of a model call
LLM_OPS = frozenset({"chat", "text_completion", "generate_content", "responses", "completion",
                     "embeddings"})
INPUT_KEYS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt")
OUTPUT_KEYS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens",
               "llm.token_count.completion")
CACHED_KEYS = ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens",
               "gen_ai.usage.details.cache_read_tokens", "gen_ai.usage.cached_tokens",
               "gen_ai.usage.input_tokens.cached", "gen_ai.usage.details.cache_read_input_tokens",
               "llm.token_count.prompt_details.cache_read")
WRITE_KEYS = ("gen_ai.usage.cache_creation.input_tokens",
              "gen_ai.usage.cache_creation_input_tokens",
              "gen_ai.usage.cache_write.input_tokens", "gen_ai.usage.input_tokens.cache_write",
              "gen_ai.usage.details.cache_write_tokens",
              "gen_ai.usage.details.cache_creation_input_tokens",
              "llm.token_count.prompt_details.cache_write")
REASONING_KEYS = ("gen_ai.usage.details.reasoning_tokens", "gen_ai.usage.reasoning_tokens",
                  "gen_ai.usage.reasoning.output_tokens",
                  "llm.token_count.completion_details.reasoning")


def is_model_call(attrs: Any) -> bool:
    """Span attributes (a mapping) of a model call: a GenAI operation of :data:`LLM_OPS`, an
    OpenInference ``LLM`` span, or (older conventions) an input token count."""
    if not attrs:
        return False
    oi = attrs.get("openinference.span.kind")
    return (attrs.get("gen_ai.operation.name") in LLM_OPS or oi in ("LLM", "llm")
            or any(k in attrs for k in INPUT_KEYS[:2]))


def count_attr(s: RawSpan, keys: tuple) -> Optional[int]:
    """The first of ``keys`` the span carries, as a non-negative int (None: none carried);
    BridgeError naming the span and the attribute when it is not one."""
    got = _KEY_SETS.get(keys)
    if got is None:
        got = _KEY_SETS[keys] = frozenset(keys)
    if got.isdisjoint(s.attrs):  # (most spans carry none of most lists: one pass in C)
        return None
    for k in keys:
        if k in s.attrs:
            return _count(s, k)
    return None


def _count(s: RawSpan, k: str) -> int:
    """The span's attribute ``k`` as a non-negative int; BridgeError naming the span and the
    attribute when it is not one."""
    v = s.attrs[k]
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, str) and v.isdigit():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise BridgeError(f"span {s.span_id} ({s.name!r}): {k} must be a non-negative "
                          f"integer, got {v!r:.60}; the producer wrote a bad token count")
    return v if type(v) is int else int(v)  # an int subclass (an IntEnum) as a plain int


#: The keys of each list :func:`count_attr` is asked about, as a set.
_KEY_SETS: dict = {}


def span_str(s: RawSpan, *keys: str) -> Optional[str]:
    """The first of ``keys`` the span carries as a non-empty string, or None."""
    for k in keys:
        v = s.attrs.get(k)
        if isinstance(v, str) and v:
            return v
    return None


#: Whether a span's attributes hold a usage detail.
_DETAILS = KeyPrefix(("gen_ai.usage.details.", "llm.token_count.prompt_details."))
_USAGE_KEYS = frozenset(INPUT_KEYS + OUTPUT_KEYS)
#: Each token-count key: (which count it is -- input, output, cached, cache write, reasoning --,
#: its rank in that count's list). :func:`_usage` reads a span's counts in one pass over the
#: keys it carries of these, instead of trying each list key by key.
_COUNT_OF = {k: (i, rank) for i, keys in enumerate((INPUT_KEYS, OUTPUT_KEYS, CACHED_KEYS, WRITE_KEYS,
                                                    REASONING_KEYS))
             for rank, k in enumerate(keys)}
_COUNT_KEYS = frozenset(_COUNT_OF)


def _usage(s: RawSpan) -> tuple:
    """The span's token counts ``(input, output, cached, cache write, reasoning)``: input,
    output and reasoning 0 when not reported, cached and cache write None."""
    a = s.attrs
    present = _COUNT_KEYS.intersection(a)  # (a pass in C over the span's keys)
    if not present:
        return 0, 0, None, None, 0
    chosen = _CHOSEN.get(present)
    if chosen is None:
        chosen = _chosen(present)
    # a plain non-negative int (what the readers make of a count) as it is, else _count's
    # conversion or error
    inp, out, cached, write, reasoning = [
        None if k is None else v if type(v := a[k]) is int and v >= 0 else _count(s, k)
        for k in chosen]
    return inp or 0, out or 0, cached, write, reasoning or 0


#: The keys :func:`_usage` reads for each set of token-count keys a span carries (spans repeat
#: a few such sets; bounded).
_CHOSEN: dict = {}


def _chosen(present: frozenset) -> tuple:
    """The first key of each list (input, output, cached, cache write, reasoning) in
    ``present``, or None: the key :func:`count_attr` would read. Each is then checked in list
    order, so a bad count raises the error ``count_attr`` would have raised first."""
    chosen: list = [None] * 5
    for k in present:
        i, rank = _COUNT_OF[k]
        c = chosen[i]
        if c is None or rank < _COUNT_OF[c][1]:
            chosen[i] = k
    if len(_CHOSEN) > 1024:
        _CHOSEN.clear()
    got = _CHOSEN[present] = tuple(chosen)
    return got


def has_usage(s: RawSpan) -> bool:
    """The span reports the call's token usage (an input or output count)."""
    return not _USAGE_KEYS.isdisjoint(s.attrs)


def span_failed(s: RawSpan) -> bool:
    """The span says its operation failed (ERROR status, or an ``error.type``)."""
    return s.error is not None or bool(s.attrs.get("error.type"))


def model_call(s: RawSpan, above: Optional[RawSpan]) -> ModelCall:
    """The :class:`ModelCall` of a counted model-call span; ``above`` is the model-call span
    right above it (the same call reported by another instrumentation), which fills in the
    cached, cache-write and reasoning counts it does not report."""
    inp, out, cached, write, reasoning = _usage(s)
    # cached tokens are known when counted, or when the span reports some usage detail
    known = cached is not None or _DETAILS.any_in(s.attrs)
    cached = cached or 0
    if above is not None and (not known or write is None or not reasoning):
        v = _usage(above)  # the same call reported by the instrumentation above
        if v[0] == inp and v[1] == out:
            if not known and (v[2] is not None or _DETAILS.any_in(above.attrs)):
                known, cached = True, v[2] or 0
            reasoning = reasoning or v[4]
            if write is None:
                write = v[3]
    write = write or 0
    if cached + write > inp:  # input counted without its cache parts (Anthropic's convention)
        inp += cached + write
    if reasoning > out:       # output counted without its reasoning
        out += reasoning
    requested = span_str(s, "gen_ai.request.model")
    model = span_str(s, "gen_ai.response.model", "llm.model_name") or requested or \
        span_str(s, "model_name") or (above and span_str(above, "gen_ai.response.model", "llm.model_name",
                                                 "gen_ai.request.model"))
    if not model:
        raise BridgeError(f"span {s.span_id} ({s.name!r}) is a model call naming no model "
                          "(no gen_ai.response.model, gen_ai.request.model or llm.model_name); "
                          "its dollars cannot be known")
    fields = {"model": model, "requested_model": requested,
              "provider": span_str(s, "gen_ai.provider.name", "gen_ai.system", "llm.provider",
                                   "llm.system") or "",
              "input_tokens": inp, "output_tokens": out,
              "cached_input_tokens": cached if known else 0, "reasoning_tokens": reasoning,
              "cache_write_tokens": write, "cached_known": bool(known), "source": s.scope}
    if type(s.scope) is not str:  # not what a reader makes: validated
        return ModelCall(**fields)
    # every value is typed and checked above (non-negative ints from _count; cached + write
    # <= input and reasoning <= output made so just above; a non-empty model): not again
    return construct_from(ModelCall, fields)


def count_unbilled(s: RawSpan, above: Optional[RawSpan], stats: dict) -> None:
    """Count a model call that reported no usage: a failed call (billed $0: a provider bills
    no tokens for a 429 or a 5xx), or one whose usage is unknown (a stream read without its
    usage: not billed, and said so)."""
    model = (span_str(s, "gen_ai.response.model", "llm.model_name", "gen_ai.request.model",
                  "model_name")
             or (above and span_str(above, "gen_ai.response.model", "llm.model_name",
                                "gen_ai.request.model")) or "?")
    kind = "failed_calls" if span_failed(s) else "calls_without_usage"
    stats[kind] = stats.get(kind, 0) + 1
    per = stats.setdefault(f"{kind}_by_model", {})
    per[model] = per.get(model, 0) + 1
    if kind == "calls_without_usage" and (s.attrs.get("gen_ai.request.stream") is True or (
            above is not None and above.attrs.get("gen_ai.request.stream") is True)):
        stats["streamed_without_usage"] = stats.get("streamed_without_usage", 0) + 1
