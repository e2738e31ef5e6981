"""OpenTelemetry GenAI spans -> Episodes: each model call billed once, each tool call a step.

The spans of one agent run (a trace, or the spans sharing an attribute) become one
:class:`~ek_agents.base.Episode`: its trajectory (tool calls with arguments, results and
errors, in start order) and its :class:`~ek_agents.base.Cost` made of one
:class:`~ek_agents.base.ModelCall` per model call (``Cost.of_calls``), so a gpt-4o planner
with a gpt-4o-mini summariser is billed at each model's rates. Spans come from a file of
OTLP/JSON (:func:`episodes_from_otel`, ``ek-agents ingest otlp``) or from the process
(``run_suite(..., capture="otel")``, :mod:`ek_agents.execution.otelcapture`).

What is read (current and older GenAI semantic conventions, and OpenInference's keys):

- a **model call** is a span with ``gen_ai.operation.name`` ``chat`` / ``text_completion`` /
  ``generate_content`` / ``embeddings``, or ``openinference.span.kind = LLM``, or (older
  conventions, no operation name) ``gen_ai.usage.input_tokens``/``prompt_tokens`` with a model.
  Its model is the one that answered (``gen_ai.response.model``, OpenInference's
  ``llm.model_name``), else the requested one (``gen_ai.request.model``); its provider
  ``gen_ai.provider.name`` / ``gen_ai.system`` / ``llm.provider`` / ``llm.system``. Tokens:
  ``gen_ai.usage.input_tokens`` (``prompt_tokens``, ``llm.token_count.prompt``), output
  (``output_tokens``, ``completion_tokens``, ``llm.token_count.completion``), cached reads
  (``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.details.cache_read_tokens``,
  ``llm.token_count.prompt_details.cache_read``), cache writes
  (``gen_ai.usage.cache_creation.input_tokens`` -- the semantic conventions' name --, the
  Anthropic SDK's ``gen_ai.usage.cache_write.input_tokens``, pydantic-ai's
  ``gen_ai.usage.details.cache_write_tokens``, ``llm.token_count.prompt_details.cache_write``;
  billed at the catalog's cache-write rate), reasoning
  (``gen_ai.usage.details.reasoning_tokens``, ``llm.token_count.completion_details.reasoning``).
  Input counts are taken to include cached tokens (OpenAI's convention); a span whose cached
  and cache-write counts exceed its input count (Anthropic's convention) has them added.
- **Counted once.** A model-call span with model-call spans below it is not counted: what is
  below it is (the same HTTP call reported again by a second instrumentation -- pydantic-ai's
  ``chat`` over openai-v2's -- or the parts of an aggregate). A counted call that does not
  report cached tokens takes them from the model-call span right above it when that span
  reports the same call (same input and output token counts). Agent spans
  (``invoke_agent``, ``gen_ai.aggregated_usage.*``, OpenInference ``AGENT`` / ``CHAIN``) are
  never billed.
- **Calls without usage.** A model-call span that reports no input or output count is not
  billed as a call. When it failed (ERROR status or ``error.type``: a 429, a 5xx, a timeout)
  it is counted in ``meta["otel"]["failed_calls"]`` (and ``failed_calls_by_model``) and costs
  $0 -- a provider bills no tokens for a refused request, so a run's bill stays exact and
  never needs a price for a model that only appears on refused calls; a trial whose every call
  failed costs a zero Cost. Otherwise its usage is unknown (a stream read without
  ``stream_options={"include_usage": True}``): counted in ``calls_without_usage`` (and
  ``calls_without_usage_by_model``, ``streamed_without_usage`` when the span says it streamed),
  left out of the bill, and named in the report's warnings (the dollars are then a lower
  bound).
- **Cached tokens unknown** (a span reports no cache-read count and no
  ``gen_ai.usage.details.*`` at all -- openai-v2 2.4b0's chat-completion spans do not) -> the
  call's ``cached_known=False``: billed at full input rates, an upper bound, said so in
  reports. While capturing, the count openai-v2 leaves off is read from the openai SDK's own
  response and written on the span before it is read
  (:mod:`ek_agents.execution.openaiusage`), so this applies to its spans read offline and to
  responses that report no ``prompt_tokens_details``.
- a **tool call** is an ``execute_tool`` span (``gen_ai.tool.name``, ``gen_ai.tool.call.arguments``,
  ``gen_ai.tool.call.result``) or an OpenInference ``TOOL`` span (``tool.name``,
  ``input.value``, ``output.value``); its error is the span's ERROR status message (or
  ``error.type``). A tool span right inside a tool span of the same name is the same call
  reported twice and is skipped. A trace **without tool spans** (a raw SDK loop under
  openai-v2) has its steps read from the model calls' messages (``gen_ai.output.messages``
  ``tool_call`` parts -- recorded only with message capture on --, OpenInference's
  ``llm.output_messages.*.tool_calls``, the older flattened ``gen_ai.completion.N.tool_calls.M.*``
  and ``gen_ai.choice`` span events), each observation from the ``tool_call_response`` part
  (or ``tool`` message: ``gen_ai.prompt.N.*``, ``llm.input_messages.N.*``, a
  ``gen_ai.tool.message`` event) with the same call id.
- **Output**: the ``ek.output`` attribute (JSON) the harness writes on its trial span; else
  the text of the last model call's output message.
- **Broken traces**: a span whose parent is not in its group is read as a root (counted in
  ``meta["otel"]["orphans"]``); parent ids that form a cycle are cut (``"cycles"``); a group of
  more than ``max_spans`` spans raises :class:`~ek_agents.errors.BridgeError` (the memory
  bound); a token count that is not a non-negative integer raises ``BridgeError`` naming the
  span and the attribute.
"""
from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, Optional

from ..base import Cost, Episode, RunProvenance, Step, Trajectory
from ..core import Provenance, construct_from
from ..errors import BridgeError
from ..parsing import decode_text, parse_json
from ._io import gc_paused, read_bytes, url_of
from ._otlp import (MAX_ATTRIBUTE_CHARS, Ingest, KeyPrefix, RawSpan, span_from_sdk,
                    spans_from_otlp, spans_from_sdk, spans_of_document, spans_of_lines)
from .otelcalls import (INPUT_KEYS, LLM_OPS, count_unbilled, has_usage, model_call, span_failed,
                        span_str)

__all__ = ["episodes_from_otel", "trace_parts", "TraceParts", "MAX_SPANS", "raw_spans",
           "Ingest", "RawSpan", "spans_from_sdk", "span_from_sdk", "MAX_ATTRIBUTE_CHARS",
           "has_usage", "span_failed", "spans_from_otlp", "spans_of_document", "spans_of_lines",
           "gc_paused"]

#: The most spans one episode (one group) may have: the memory bound of a read.
MAX_SPANS = 50_000

_OI_TOOLCALL = re.compile(r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(.+)$")
_OI_INPUT = re.compile(r"^llm\.input_messages\.(\d+)\.message\.(role|tool_call_id|content)$")
# the older flattened GenAI attributes (OpenLLMetry / semconv before message JSON)
_OLD_TOOLCALL = re.compile(r"^gen_ai\.completion\.(\d+)\.tool_calls\.(\d+)\.(name|arguments|id)$")
_OLD_INPUT = re.compile(r"^gen_ai\.prompt\.(\d+)\.(role|tool_call_id|content)$")


class TraceParts(NamedTuple):
    """What one group of spans says: steps, model calls, output, and what was cut or skipped."""

    steps: tuple
    calls: tuple
    output: Any
    has_output: bool
    stats: dict
    attrs: dict          # the ek.* attributes found (task_id, trial, seed)

    def cost(self, *, retries: int = 0, latency_s: Optional[float] = None) -> Optional[Cost]:
        """``Cost.of_calls(self.calls, retries=..., latency_s=...)``; a zero Cost when every
        model call failed without reporting usage (nothing was billed); None without a model
        call, or when some call's usage is unknown and none reported it."""
        if self.calls or (self.stats.get("failed_calls") and
                          not self.stats.get("calls_without_usage")):
            return Cost.of_calls(self.calls, retries=retries, latency_s=latency_s)
        return None


# --------------------------------------------------------------------------- classification

def _kind(a: Mapping) -> str:
    """A span's kind from its attributes: ``"llm"``, ``"tool"`` or ``"other"``."""
    op = a.get("gen_ai.operation.name")
    if op is not None and not isinstance(op, str):
        op = ""  # an operation name no convention writes (a number, a list, a map): none known
    oi = a.get("openinference.span.kind")
    oi = oi.upper() if isinstance(oi, str) else None
    if op in LLM_OPS or oi == "LLM":
        return "llm"
    if op == "execute_tool" or oi == "TOOL":
        return "tool"
    if op is None and oi is None and any(k in a for k in INPUT_KEYS[:2]) and (
            "gen_ai.request.model" in a or "gen_ai.response.model" in a):
        return "llm"
    return "other"


# --------------------------------------------------------------------------- tree

#: What :func:`_ancestry` memoises for a root's parent (None): no model call, tool or attempt above.
_NONE_ABOVE = (None, None, None)
#: The mark of a span on the path being walked (a walk that meets it has gone round a cycle).
_ON_PATH = object()


def _ancestry(spans: dict, kinds: dict, attempts: set, one: bool, stats: dict
              ) -> tuple[dict, dict]:
    """Each span's parent id (None for a root) and, for each span, inclusive (the span itself
    when it is one): its nearest model call, its nearest model call or tool, and the harness
    attempt (``ek.attempt`` span, one of ``attempts``) it ran in (ids or None); a span's nearest
    ones strictly above it are ``inc[parent[sid]]`` (``inc[None]`` is ``(None, None, None)``).
    Orphans read as roots; cycles cut. Linear time (memoised: each span's triple is made once,
    from its parent's). ``one``: the spans are keyed by span id (one trace), else by (trace id,
    span id)."""
    parent: dict = {}
    orphans = 0
    inc: dict = {None: _NONE_ABOVE}
    for start in spans:
        if start in inc:
            continue
        path, cur = [], start
        while cur not in inc:  # up to a span already made (or None), marking the path
            inc[cur] = _ON_PATH
            path.append(cur)
            s = spans[cur]  # (each span is on one walk's path once: its parent read here)
            p = s.parent_id
            if p is not None:
                if not one:
                    p = (s.trace_id, p)
                if p not in spans:
                    orphans += 1
                    p = None
            parent[cur] = p
            cur = p
        if inc[cur] is _ON_PATH:  # a cycle: cut its last edge (path[-1] becomes a root)
            stats["cycles"] += 1
            parent[path[-1]] = None
        for sid in reversed(path):
            llm, lt, at = inc[parent[sid]]
            k = kinds[sid]
            if k == "llm":
                llm = lt = sid
            elif k == "tool":
                lt = sid
            if sid in attempts:
                at = sid
            inc[sid] = (llm, lt, at)
    if orphans:
        stats["orphans"] += orphans
    return parent, inc


# --------------------------------------------------------------------------- messages

def _json(v: Any) -> Any:
    """A JSON attribute's value (None when it is not JSON); the bounds of the read are the
    attribute's (``MAX_ATTRIBUTE_CHARS``)."""
    if isinstance(v, str):
        try:
            return (_LOADS or _loads())(v)
        except (ValueError, RecursionError):  # orjson.JSONDecodeError is a ValueError
            return None
    return v


_LOADS = None


def _loads() -> Any:
    global _LOADS
    import orjson  # not at module level: as in ek_agents.parsing, ~30 ms of import time
    _LOADS = orjson.loads
    return _LOADS


def _args(raw: Any) -> tuple[Any, Optional[str]]:
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return dict(raw), None
    if isinstance(raw, str):
        try:
            got = parse_json(raw, where="tool arguments", error=BridgeError)
        except BridgeError:
            return raw, "arguments are not valid JSON"
        if isinstance(got, dict):
            return got, None
        return raw, "arguments are not a JSON object"
    return str(raw), "arguments are not a JSON object"


def _message_calls(s: RawSpan) -> list:
    """``(id, name, args)`` of the tool calls a model call's output asks for."""
    out = []
    raw = s.attrs.get("gen_ai.output.messages")
    msgs = _json(raw) if not isinstance(raw, str) or '"tool_call"' in raw else None
    if isinstance(msgs, list):
        for m in msgs:
            for p in (m.get("parts") or []) if isinstance(m, Mapping) else []:
                if isinstance(p, Mapping) and p.get("type") == "tool_call":
                    out.append((p.get("id"), str(p.get("name", "")), p.get("arguments")))
    if not out and "openinference.span.kind" in s.attrs:
        found: dict = {}
        for k, v in s.attrs.items():
            m = _OI_TOOLCALL.match(k)
            if m:
                found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = v
        for key in sorted(found):
            f = found[key]
            out.append((f.get("id"), str(f.get("function.name", "")), f.get("function.arguments")))
    if not out and "gen_ai.completion.0.tool_calls.0.name" in s.attrs:
        found = {}
        for k, v in s.attrs.items():
            m = _OLD_TOOLCALL.match(k)
            if m:
                found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = v
        out.extend((found[k].get("id"), str(found[k].get("name", "")), found[k].get("arguments"))
                   for k in sorted(found))
    if not out:  # older conventions: messages as span events (gen_ai.choice)
        for name, attrs in s.events:
            if name == "gen_ai.choice":
                msg = _json(attrs.get("message"))
                calls = (msg.get("tool_calls") if isinstance(msg, Mapping) else None) or \
                    _json(attrs.get("tool_calls")) or []
                for c in calls if isinstance(calls, list) else []:
                    fn = c.get("function") if isinstance(c, Mapping) else None
                    if isinstance(fn, Mapping):
                        out.append((c.get("id"), str(fn.get("name", "")), fn.get("arguments")))
    return out


def _message_results(s: RawSpan, into: dict) -> None:
    """Tool results (by call id) sent to a model call (its input messages)."""
    raw = s.attrs.get("gen_ai.input.messages")
    msgs = _json(raw) if not isinstance(raw, str) or "tool_call_response" in raw else None
    if isinstance(msgs, list):
        for m in msgs:
            for p in (m.get("parts") or []) if isinstance(m, Mapping) else []:
                if isinstance(p, Mapping) and p.get("type") == "tool_call_response" and p.get("id"):
                    into.setdefault(p["id"], p.get("response", p.get("result")))
    for name, attrs in s.events:  # older conventions: a tool message as a span event
        if name == "gen_ai.tool.message" and attrs.get("id"):
            into.setdefault(attrs["id"], attrs.get("content"))
    pattern = (_OI_INPUT if "openinference.span.kind" in s.attrs
               else _OLD_INPUT if "gen_ai.prompt.0.role" in s.attrs else None)
    if pattern is None:
        return
    found: dict = {}
    for k, v in s.attrs.items():
        m = pattern.match(k)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = v
    for f in found.values():
        if f.get("role") == "tool" and f.get("tool_call_id"):
            into.setdefault(f["tool_call_id"], f.get("content"))


def _output_text(s: RawSpan) -> Optional[str]:
    msgs = _json(s.attrs.get("gen_ai.output.messages"))
    if isinstance(msgs, list):
        texts = [p.get("content") for m in msgs if isinstance(m, Mapping)
                 for p in (m.get("parts") or []) if isinstance(p, Mapping) and p.get("type") == "text"]
        if texts:
            return "".join(str(t) for t in texts)
    v = s.attrs.get("llm.output_messages.0.message.content")
    return v if isinstance(v, str) else None


# --------------------------------------------------------------------------- one group

def trace_parts(spans: Iterable[RawSpan], *, max_spans: int = MAX_SPANS,
                where: str = "trace") -> TraceParts:
    """Read one group of spans (one agent run): its steps, model calls, output and stats."""
    by_id: dict = {}
    stats = {"spans": 0, "orphans": 0, "cycles": 0, "duplicate_spans": 0, "nested_calls": 0,
             "duplicate_tool_calls": 0}
    # one pass over the spans: the distinct ones, the kind of each GenAI span, the model-call
    # and tool spans (with their sort keys), the ek.* attributes (first value of each key
    # wins) and the attempt spans
    kinds: dict = {}
    llm_keys, tool_keys, attempts, rest = [], [], [], []
    ek: dict = {}
    dups = 0
    # the spans of a group of one trace (the usual group) are keyed by span id: a str caches
    # its hash, a (trace id, span id) tuple is hashed again at every lookup (a dozen a span);
    # the ids order as the tuples would, so nothing read from them changes
    one = isinstance(spans, list) and len(set(map(_TRACE_ID, spans))) == 1
    for s in spans:
        key = s.span_id if one else (s.trace_id, s.span_id)
        if key in by_id:
            dups += 1
            continue
        by_id[key] = s
        if len(by_id) > max_spans:
            raise BridgeError(f"{where}: more than max_spans={max_spans} spans in one episode; "
                              "group the spans otherwise (group_by=...) or raise max_spans")
        a = s.attrs
        op = a.get("gen_ai.operation.name")
        if type(op) is str and "openinference.span.kind" not in a:  # _kind's answer, inline
            k = kinds[key] = "llm" if op in LLM_OPS else "tool" if op == "execute_tool" else "other"
            if k == "llm":
                llm_keys.append((s.start_ns, s.end_ns, key))
            elif k == "tool":
                tool_keys.append((s.start_ns, s.end_ns, key))
        else:
            rest.append(key)
        if _EK.any_in(a):  # (most spans carry none: one pass in C)
            for name, v in a.items():
                if name.startswith("ek."):
                    ek.setdefault(name, v)
            if "ek.attempt" in a:
                attempts.append(key)
    for key in rest:  # the other spans' kinds, once every span is read
        s = by_id[key]
        k = kinds[key] = _kind(s.attrs)
        if k == "llm":
            llm_keys.append((s.start_ns, s.end_ns, key))
        elif k == "tool":
            tool_keys.append((s.start_ns, s.end_ns, key))
    stats["duplicate_spans"] = dups
    stats["spans"] = len(by_id)
    parent, inc = _ancestry(by_id, kinds, set(attempts), one, stats)
    # the steps are the last attempt's (an attempt retried after a transient error left its
    # tool calls behind); every attempt's model calls are billed (they were spent)
    last = max(attempts, key=lambda sid: (by_id[sid].start_ns, sid)) if len(attempts) > 1 else None
    if attempts:
        stats["attempts"] = len(attempts)
    # in start order (then end, then id: no two keys are equal)
    llm_keys.sort()
    tool_keys.sort()
    llms = [t[2] for t in llm_keys]
    above = {sid: inc[parent[sid]][0] for sid in llms}  # the model call right above each
    covers = set(above.values())
    counted = [sid for sid in llms if sid not in covers]
    stats["nested_calls"] = len(llms) - len(counted)
    calls = []
    for sid in counted:
        up = above[sid]
        if has_usage(by_id[sid]):
            calls.append(model_call(by_id[sid], by_id[up] if up else None))
        else:  # (counts only, raises nothing: the first bad call raises as it did before)
            count_unbilled(by_id[sid], by_id[up] if up else None, stats)
    tools = []
    for _, _, sid in tool_keys:
        if last is not None and inc[sid][2] != last:
            continue
        up = inc[parent[sid]][1]
        if up is not None and kinds[up] == "tool" and _tool_name(by_id[up]) == _tool_name(by_id[sid]):
            stats["nested_calls"] += 1
            continue
        tools.append(_tool_step(by_id[sid]))
    if not tools:
        tools = _steps_from_messages([by_id[sid] for sid in llms],
                                     [sid for sid in counted
                                      if last is None or inc[sid][2] == last], by_id, above,
                                     stats)
    has_output = "ek.output" in ek
    if has_output:
        output = _json(ek["ek.output"]) if isinstance(ek["ek.output"], str) else ek["ek.output"]
    else:
        output = None
        for sid in reversed(counted):
            output = _output_text(by_id[sid])
            if output is not None:
                break
    return TraceParts(tuple(tools), tuple(calls), output, has_output, stats, ek)


_TRACE_ID = operator.attrgetter("trace_id")
#: Whether a span's attributes hold an ``ek.*`` key.
_EK = KeyPrefix("ek.")


def _tool_name(s: RawSpan) -> str:
    name = span_str(s, "gen_ai.tool.name", "tool.name")
    if name:
        return name
    return s.name[len("execute_tool "):] if s.name.startswith("execute_tool ") else s.name


def _tool_step(s: RawSpan) -> Step:
    a = s.attrs
    raw = a.get("gen_ai.tool.call.arguments", a.get("input.value"))
    args, bad = _args(raw)
    result = a.get("gen_ai.tool.call.result", a.get("output.value"))
    error = s.error or (str(a["error.type"]) if a.get("error.type") else None) or bad
    return _step(_tool_name(s), args, result, error)


def _step(tool: str, args: Any, observation: Any, error: Any) -> Step:
    """``Step(tool, args, observation=..., error=...)``; not validated again when the values
    have Step's types (a str tool, dict or str args, a str or no error), as the readers make."""
    if type(tool) is str and type(args) in (dict, str) and (error is None or type(error) is str):
        return construct_from(Step, {"tool": tool, "args": args, "observation": observation,
                                     "error": error})
    return Step(tool, args, observation=observation, error=error)


def _steps_from_messages(llm_spans: list, counted: list, by_id: dict, anc_llm: dict,
                         stats: dict) -> list:
    asked = []
    for sid in counted:
        chain, cur = [], sid  # the counted span, then the model-call spans above it
        while cur is not None and len(chain) < 8:
            chain.append(by_id[cur])
            cur = anc_llm.get(cur)
        for s in chain:
            found = _message_calls(s)
            if found:
                break
        asked.extend(found)
    if not asked:
        return []
    results: dict = {}  # the tool results the model calls were sent, by call id
    for s in llm_spans:
        _message_results(s, results)
    steps, seen = [], set()
    for cid, name, raw in asked:
        if cid is not None and cid in seen:  # one call asked for twice: kept once, counted
            stats["duplicate_tool_calls"] += 1
            continue
        seen.add(cid)
        args, bad = _args(raw)
        steps.append(_step(name, args, results.get(cid), bad))
    return steps


# --------------------------------------------------------------------------- episodes

def raw_spans(source: Any, *, ing: Ingest, group_attr: Optional[str] = None,
              skip_bad_lines: bool = False) -> tuple[Iterable[RawSpan], str]:
    """The spans of ``source``: a path/URL of OTLP/JSON, OTLP/JSON bytes, a parsed
    ``{"resourceSpans": ...}`` dict, or SDK ``ReadableSpan`` s."""
    if isinstance(source, Mapping):
        return spans_from_otlp(json.dumps(source), "<otlp>", ing=ing, group_attr=group_attr,
                               skip_bad_lines=skip_bad_lines), "<otlp>"
    if isinstance(source, (bytes, bytearray)):
        text = decode_text(bytes(source), where="<otlp bytes>", error=BridgeError)
        return spans_from_otlp(text, "<otlp bytes>", ing=ing, group_attr=group_attr,
                               skip_bad_lines=skip_bad_lines), "<otlp bytes>"
    if isinstance(source, (list, tuple)) and all(hasattr(s, "context") for s in source):
        return spans_from_sdk(source, ing=ing, group_attr=group_attr), "<spans>"
    url = url_of(source)
    text = decode_text(read_bytes(url), where=repr(url), error=BridgeError)
    return spans_from_otlp(text, url, ing=ing, group_attr=group_attr,
                           skip_bad_lines=skip_bad_lines), url


@gc_paused()
def episodes_from_otel(source: Any, *, group_by: str = "trace", max_spans: int = MAX_SPANS,
                       skip_bad_lines: bool = False) -> list[Episode]:
    """Episodes from OpenTelemetry GenAI spans (OTLP/JSON file or URL, bytes, a parsed
    document, or SDK spans), one per trace (``group_by="trace"``, the default) or per value of
    a span attribute (``group_by="ek.task_id"``, ``"session.id"``...; a trace's spans without
    it join the group of the trace's spans that have it). See the module docstring for what is
    read; ``skip_bad_lines=True`` skips lines that are not OTLP/JSON (counted in
    ``meta["otel"]["skipped_lines"]``) instead of raising.

    Each episode: ``task_id`` from the ``ek.task_id`` attribute (else the group: the trace id or
    the attribute's value), ``meta["trial"]`` from ``ek.trial``, ``run.seed`` from ``ek.seed``,
    ``cost = Cost.of_calls(model calls)`` (None when the group has no model call), the steps,
    the output, and ``meta["otel"]`` (spans read, orphans, cycles cut, nested calls not counted
    again, attributes cut). Episodes come in order of their first span's start.
    """
    if not isinstance(group_by, str) or not group_by:
        raise BridgeError(f"group_by must be 'trace' or a span attribute name, got {group_by!r}")
    if isinstance(max_spans, bool) or not isinstance(max_spans, int) or max_spans < 1:
        raise BridgeError(f"max_spans must be an int >= 1, got {max_spans!r}")
    ing = Ingest()
    attr = None if group_by == "trace" else group_by
    spans, where = raw_spans(source, ing=ing, group_attr=attr, skip_bad_lines=skip_bad_lines)
    traces: dict = {}
    total = 0
    for s in spans:
        got = traces.setdefault(s.trace_id, [])
        got.append(s)
        total += 1
        if attr is None and len(got) > max_spans:  # refused as it is read: memory stays bounded
            raise BridgeError(f"{where}: trace {s.trace_id} has more than max_spans={max_spans} "
                              "spans; group the spans otherwise (group_by=...) or raise max_spans")
    groups: dict = {}
    if attr is None:
        groups = traces
    else:
        for tid, ss in traces.items():
            values = {s.attrs[attr] for s in ss if attr in s.attrs}
            if len(values) > 1:  # spans of one trace carry different values: split by span
                for s in ss:
                    groups.setdefault(s.attrs.get(attr, tid), []).append(s)
            else:
                groups.setdefault(values.pop() if values else tid, []).extend(ss)
    read = []
    for key, ss in groups.items():
        if len(ss) > max_spans:
            raise BridgeError(f"{where}: group {key!r} has {len(ss)} spans, more than "
                              f"max_spans={max_spans}; group the spans otherwise or raise max_spans")
        parts = trace_parts(ss, max_spans=max_spans, where=f"{where} group {key!r}")
        ing.duplicates += parts.stats["duplicate_spans"]
        read.append((key, ss, parts))
    out = []  # every group read first: each episode carries the read's counts in full
    for key, ss, parts in read:
        first = min(s.start_ns for s in ss)
        out.append((first, str(key), _episode(parts, str(key), ss, where, ing, group_by)))
    out.sort(key=lambda t: (t[0], t[1]))
    return [ep for _, _, ep in out]


def _episode(parts: TraceParts, key: str, spans: list, where: str, ing: Ingest,
             group_by: str) -> Episode:
    ek = parts.attrs
    task_id = ek.get("ek.task_id")
    task_id = str(task_id) if task_id not in (None, "") else key
    meta: dict = {"otel": {**parts.stats, "truncated": ing.truncated,
                           "skipped_lines": ing.skipped_lines, "duplicates": ing.duplicates,
                           "group": key, "group_by": group_by}}
    for flag in ("output_cut", "output_unstored"):  # the capture cut or could not write it
        if f"ek.{flag}" in ek:
            meta["otel"][flag] = ek[f"ek.{flag}"]
    trial = ek.get("ek.trial")
    if isinstance(trial, int) and not isinstance(trial, bool):
        meta["trial"] = trial
    seed = ek.get("ek.seed")
    run = RunProvenance(seed=seed) if isinstance(seed, int) and not isinstance(seed, bool) else None
    cost = parts.cost()
    return Episode(task_id, Trajectory(parts.steps), output=parts.output, cost=cost, run=run,
                   provenance=Provenance(source=where, locator=f"group {key}",
                                         meta={"format": "otlp-json"}),
                   meta=meta)
