"""Model-call spans -> :class:`~ek_agents.base.ModelCall`: the token counts every convention
spells (the keys below, first found wins), and the calls that reported none (failed, or whose
usage is unknown). What is read is listed in :mod:`ek_agents.bridge.otel`'s docstring."""
from __future__ import annotations

from typing import Any, NamedTuple, Optional

from ..base import ModelCall
from ..core import construct
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
            v = s.attrs[k]
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, str) and v.isdigit():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise BridgeError(f"span {s.span_id} ({s.name!r}): {k} must be a non-negative "
                                  f"integer, got {v!r:.60}; the producer wrote a bad token count")
            return v if type(v) is int else int(v)  # an int subclass (an IntEnum) as a plain int
    return None


#: The keys of each list :func:`count_attr` is asked about, as a set.
_KEY_SETS: dict = {}


def span_str(s: RawSpan, *keys: str) -> Optional[str]:
    """The first of ``keys`` the span carries as a non-empty string, or None."""
    for k in keys:
        v = s.attrs.get(k)
        if isinstance(v, str) and v:
            return v
    return None


class _Usage(NamedTuple):
    inp: int
    out: int
    cached: Optional[int]
    write: Optional[int]
    reasoning: int
    details: bool


#: Whether a span's attributes hold a usage detail.
_DETAILS = KeyPrefix(("gen_ai.usage.details.", "llm.token_count.prompt_details."))
_USAGE_KEYS = frozenset(INPUT_KEYS + OUTPUT_KEYS)


def _usage(s: RawSpan) -> _Usage:
    details = _DETAILS.any_in(s.attrs)
    return _Usage(count_attr(s, INPUT_KEYS) or 0, count_attr(s, OUTPUT_KEYS) or 0, count_attr(s, CACHED_KEYS),
                  count_attr(s, WRITE_KEYS), count_attr(s, REASONING_KEYS) or 0, details)


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
    u = _usage(s)
    known = u.cached is not None or u.details
    cached, reasoning, write = u.cached or 0, u.reasoning, u.write
    if above is not None and (not known or write is None or not reasoning):
        v = _usage(above)  # the same call reported by the instrumentation above
        if (v.inp, v.out) == (u.inp, u.out):
            if not known and (v.cached is not None or v.details):
                known, cached = True, v.cached or 0
            reasoning = reasoning or v.reasoning
            if write is None:
                write = v.write
    inp, out, write = u.inp, u.out, write or 0
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
    fields = dict(requested_model=requested,
                  provider=span_str(s, "gen_ai.provider.name", "gen_ai.system", "llm.provider",
                                "llm.system") or "",
                  input_tokens=inp, output_tokens=out, cached_input_tokens=cached if known else 0,
                  reasoning_tokens=reasoning, cache_write_tokens=write, cached_known=bool(known),
                  source=s.scope)
    if type(s.scope) is not str:  # not what a reader makes: validated
        return ModelCall(model, **fields)
    # every value is typed and checked above (non-negative ints from _count; cached + write
    # <= input and reasoning <= output made so just above; a non-empty model): not again
    return construct(ModelCall, model=model, **fields)


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
