"""Spans in: OTLP/JSON lines and in-process SDK spans, read into one small record (:class:`RawSpan`).

Two encodings of OTLP/JSON are read, line by line (one ``{"resourceSpans": [...]}`` object per
line, as the OpenTelemetry Collector's file exporter writes them; a file holding a single
pretty-printed object is read too):

- the OTLP/JSON of the specification (the collector's): trace and span ids as **hex** strings;
- protobuf's generic JSON mapping (``google.protobuf.json_format``): ids as **base64** of their
  bytes. An id is read as hex when it is 32 (trace) / 16 (span) hex digits, else as base64.

Integers may be JSON numbers or strings (the mapping writes int64 as strings). Only the
attributes the GenAI / OpenInference readers use are kept (:func:`kept`), so memory grows with
what matters, not with a span's payload. Bounds (each a documented skip or a
:class:`~ek_agents.errors.BridgeError` naming the file and line):

- a line that is not JSON (a truncated last line included) -> ``BridgeError`` naming the line,
  unless ``skip_bad_lines=True`` (then counted in ``Ingest.skipped_lines``);
- an attribute value of the wrong type (``{"intValue": "x"}``, an unknown value kind), an id
  that is neither hex nor base64 of the right length -> ``BridgeError``;
- a string attribute longer than :data:`MAX_ATTRIBUTE_CHARS` is cut there and counted
  (``Ingest.truncated``), never silently: the episode's meta says so;
- a span repeated (same trace and span id) is kept once (``Ingest.duplicates``).
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Optional

from ..errors import BridgeError
from ..parsing import fast_json_lines, parse_json

__all__ = ["RawSpan", "Ingest", "MAX_ATTRIBUTE_CHARS", "KEPT_PREFIXES", "kept", "spans_from_otlp", "spans_of_document",
           "spans_of_lines",
           "spans_from_sdk", "span_from_sdk", "hex_id", "KeyPrefix", "read_spans", "HAS_C"]

#: A string attribute longer than this is cut (and counted): 1 MiB of text.
MAX_ATTRIBUTE_CHARS = 1 << 20
#: Attribute keys kept from a span (prefixes); the rest of a span's attributes are dropped.
KEPT_PREFIXES = ("gen_ai.", "llm.", "openinference.", "tool.", "input.value", "output.value",
                 "ek.", "error.type", "exception.", "model_name")


def kept(key: str, extra: Any = None) -> bool:
    """Whether the reader keeps attribute ``key`` (``extra``: a grouping attribute, or a
    frozenset of the attributes a monitor groups, tasks and slices by)."""
    return key.startswith(KEPT_PREFIXES) or key == extra or (
        type(extra) is frozenset and key in extra)


@dataclasses.dataclass(slots=True)
class RawSpan:
    """One span, as the readers need it (ids as lowercase hex)."""

    trace_id: str
    span_id: str
    parent_id: Optional[str]
    name: str
    start_ns: int
    end_ns: int
    attrs: dict
    error: Optional[str] = None       # the status message when the status is ERROR
    scope: str = ""
    events: tuple = ()                # ((name, attrs), ...) of GenAI events only


class KeyPrefix:
    """Whether a span's attributes hold a key starting with one of ``prefixes``
    (:meth:`any_in`). The keys seen are remembered, with and without (up to a few thousand),
    so for a span whose keys were seen before the answer is a pass or two in C (a reader asks
    it of every span, and spans repeat the same few dozen keys).

    >>> ek = KeyPrefix("ek."); ek.any_in({"gen_ai.system": 1}), ek.any_in({"ek.trial": 0})
    (False, True)
    """

    __slots__ = ("prefixes", "with_", "without")

    def __init__(self, prefixes: Any) -> None:
        self.prefixes = prefixes
        self.with_: set = set()
        self.without: set = set()

    def any_in(self, attrs: Mapping) -> bool:
        """Whether some key of ``attrs`` starts with one of the prefixes."""
        if not self.with_.isdisjoint(attrs):
            return True
        if attrs.keys() <= self.without:  # (no set made of the keys, as issuperset would)
            return False
        if len(self.without) + len(self.with_) > 4096:
            self.with_.clear()
            self.without.clear()
        for k in attrs:
            (self.with_ if k.startswith(self.prefixes) else self.without).add(k)
        return not self.with_.isdisjoint(attrs)


@dataclasses.dataclass
class Ingest:
    """What a read skipped or cut (reported in each episode's ``meta["otel"]``)."""

    skipped_lines: int = 0
    truncated: int = 0
    duplicates: int = 0


# --------------------------------------------------------------------------- ids

_HEX = frozenset("0123456789abcdefABCDEF")


def hex_id(value: Any, nbytes: int, where: str, what: str) -> Optional[str]:
    """An id (hex or base64 of ``nbytes`` bytes) as lowercase hex; None for an empty one."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BridgeError(f"{where}: {what} must be a string of hex or base64, got {value!r:.60}")
    if len(value) == 2 * nbytes and _HEX.issuperset(value):
        out = value.lower()
    else:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != nbytes:
            raise BridgeError(f"{where}: {what} {value!r:.60} is neither {2 * nbytes} hex digits nor "
                              f"the base64 of {nbytes} bytes; write ids as OTLP/JSON does")
        out = raw.hex()
    return None if out.strip("0") == "" else out


# --------------------------------------------------------------------------- values

def _int(v: Any, where: str) -> int:
    t = type(v)
    if t is int:
        return v
    if t is str and 0 < len(v) < 20 and v.isdigit() and v.isascii():  # (OTLP/JSON's int64 strings)
        return int(v)
    if isinstance(v, bool):
        raise BridgeError(f"{where}: expected an integer, got {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isdigit() and len(v) < 40:
        return int(v)
    raise BridgeError(f"{where}: expected an integer (a number or a string of digits), got {v!r:.60}")


def _time(v: Any, at: str, what: str) -> int:
    """:func:`_int` of a span's time (OTLP/JSON's int64 string read first; the place named
    only when it is wrong)."""
    if type(v) is str and 0 < len(v) < 20 and v.isdigit() and v.isascii():
        return int(v)
    return _int(v, f"{at} {what}")


def _value(v: Any, where: str, ing: Ingest, depth: int = 0) -> Any:
    if not isinstance(v, Mapping):
        raise BridgeError(f"{where}: an attribute value must be an object like "
                          f"{{\"stringValue\": ...}}, got {v!r:.60}")
    if depth > 8:
        raise BridgeError(f"{where}: attribute value nested deeper than 8 levels")
    if not v:
        return None
    (kind, x), = list(v.items())[:1]
    if kind == "stringValue":
        if not isinstance(x, str):
            raise BridgeError(f"{where}: stringValue must be a string, got {x!r:.60}")
        if len(x) > MAX_ATTRIBUTE_CHARS:
            ing.truncated += 1
            return x[:MAX_ATTRIBUTE_CHARS]
        return x
    if kind == "intValue":
        return _int(x, where)
    if kind == "doubleValue":
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            try:
                return float(x)
            except OverflowError:
                raise BridgeError(f"{where}: doubleValue {x!r:.60} is beyond the range of a "
                                  "double") from None
        if isinstance(x, str) and x in ("NaN", "Infinity", "-Infinity"):
            return float(x.replace("Infinity", "inf"))
        raise BridgeError(f"{where}: doubleValue must be a number, got {x!r:.60}")
    if kind == "boolValue":
        if not isinstance(x, bool):
            raise BridgeError(f"{where}: boolValue must be true or false, got {x!r:.60}")
        return x
    if kind == "arrayValue":
        vals = x.get("values", []) if isinstance(x, Mapping) else None
        if not isinstance(vals, list):
            raise BridgeError(f"{where}: arrayValue must be {{\"values\": [...]}}, got {x!r:.60}")
        return tuple(_value(e, where, ing, depth + 1) for e in vals)
    if kind == "kvlistValue":
        vals = x.get("values", []) if isinstance(x, Mapping) else None
        if not isinstance(vals, list):
            raise BridgeError(f"{where}: kvlistValue must be {{\"values\": [...]}}, got {x!r:.60}")
        return _attributes(vals, where, ing, None, depth + 1, keep_all=True)
    if kind == "bytesValue":
        return x
    raise BridgeError(f"{where}: unknown attribute value kind {kind!r} (expected stringValue, "
                      "intValue, doubleValue, boolValue, arrayValue, kvlistValue or bytesValue)")


def _attributes(items: Any, where: str, ing: Ingest, extra: Optional[str], depth: int = 0,
                keep_all: bool = False) -> dict:
    if keep_all or type(items) is not list:
        return _attributes_checked(items, where, ing, extra, depth, keep_all)
    out: dict = {}
    keep = _kept_cache(extra)
    for kv in items:  # the plain shape, read with the fewest steps (most of a read's time)
        try:
            key = kv["key"]
            k = keep[key]
        except (KeyError, TypeError):  # a key not decided yet, or not the plain shape
            out.update(_attributes_checked([kv], where, ing, extra, depth))
            continue
        if not k:
            continue
        v = kv.get("value", {})
        if type(v) is dict and len(v) == 1:  # the common scalars, read without the checks' calls
            x = v.get("stringValue")
            if type(x) is str and len(x) <= MAX_ATTRIBUTE_CHARS:
                out[key] = x
                continue
            x = v.get("intValue")
            if type(x) is str and 0 < len(x) < 20 and x.isdigit() and x.isascii():
                out[key] = int(x)
                continue
        out[key] = _value(v, f"{where} attribute {key!r}", ing, depth)
    return out


def _attributes_checked(items: Any, where: str, ing: Ingest, extra: Optional[str],
                        depth: int = 0, keep_all: bool = False) -> dict:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise BridgeError(f"{where}: attributes must be a list of {{key, value}}, got {items!r:.60}")
    out = {}
    keep = None if keep_all else _kept_cache(extra)
    for kv in items:
        key = kv.get("key") if type(kv) is dict else None
        if type(key) is not str:
            if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
                raise BridgeError(f"{where}: an attribute must be {{\"key\": str, \"value\": ...}}, "
                                  f"got {kv!r:.60}")
            key = kv["key"]
        if keep is not None:
            k = keep.get(key)
            if k is None:
                k = keep[key] = kept(key, extra)
            if not k:
                continue
        out[key] = _value(kv.get("value", {}), f"{where} attribute {key!r}", ing, depth)
    return out


#: Per grouping attribute(s): {attribute key: kept or not}, so each key is decided once per
#: process (a span repeats the same few dozen keys); bounded by clearing when it grows large.
_KEPT: dict = {}


def _kept_cache(extra: Any) -> dict:
    got = _KEPT.get(extra)
    if got is None or len(got) > 4096:
        if len(_KEPT) > 64:
            _KEPT.clear()
        got = _KEPT[extra] = {}
    return got


# --------------------------------------------------------------------------- OTLP/JSON

def _lines(text: str) -> Iterator[tuple[int, str]]:
    start, n = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        yield n, text[start:end]
        start, n = end + 1, n + 1


def _documents(text: str, where: str, ing: Ingest, skip_bad_lines: bool) -> Iterator[tuple[str, Any]]:
    stripped = text.lstrip()
    first: tuple = ()  # the first line's document, when the probe below read it
    if stripped.startswith("{") and "\n" in stripped.rstrip():
        # one pretty-printed document, or JSON lines: try the first line alone
        try:
            first = (parse_json(stripped.split("\n", 1)[0], where=where, error=BridgeError,
                                nonfinite="allow"),)
        except BridgeError:
            try:
                yield where, parse_json(text, where=where, error=BridgeError)
                return
            except BridgeError:
                pass  # read line by line: the error names the bad line
    for n, line in _lines(text):
        if not line.strip():
            continue
        at = f"{where}:{n}"
        if first:  # JSON lines: the first one is read already
            yield at, first[0]
            first = ()
            continue
        try:
            doc = parse_json(line, where=at, error=BridgeError, nonfinite="allow")
        except BridgeError:
            if skip_bad_lines:
                ing.skipped_lines += 1
                continue
            raise BridgeError(f"{at}: not a JSON object (a truncated or corrupt line); fix the "
                              "file, or pass skip_bad_lines=True to skip such lines") from None
        yield at, doc


def spans_from_otlp(text: str, where: str, *, ing: Ingest, group_attr: Optional[str] = None,
                    skip_bad_lines: bool = False) -> Iterator[RawSpan]:
    """Every span of the OTLP/JSON ``text`` (see the module docstring)."""
    for at, doc in _documents(text, where, ing, skip_bad_lines):
        if not isinstance(doc, Mapping) or "resourceSpans" not in doc:
            if skip_bad_lines:
                ing.skipped_lines += 1
                continue
        yield from spans_of_document(doc, at, ing=ing, group_attr=group_attr)


def spans_of_lines(data: bytes, base: int, url: str, *, group_attr: Any = None,
                   max_depth: int = 1024) -> tuple[list, int]:
    """The spans of each non-blank line of OTLP/JSON ``data`` (complete lines, the first at byte
    ``base`` of file ``url``): ``([(offset, [RawSpan, ...] or None for a line that is not
    OTLP/JSON), ...], string values cut)``. A pure function of its arguments (a monitor's
    reader runs it in a worker process); lines are parsed up to ``max_depth`` (orjson's)."""
    ing, out = Ingest(), []
    for at, line, ok, doc in fast_json_lines(data, max_depth=max_depth):
        at += base
        try:
            if ok:  # what spans_from_otlp reads of the line, parsed once
                got = list(spans_of_document(doc, f"{url}@{at}", ing=ing, group_attr=group_attr))
            else:
                got = list(spans_from_otlp(line.decode("utf-8"), f"{url}@{at}", ing=ing,
                                           group_attr=group_attr))
        except (BridgeError, UnicodeDecodeError):
            got = None
        out.append((at, got))
    return out, ing.truncated


def spans_of_document(doc: Any, where: str, *, ing: Ingest, group_attr: Optional[str] = None
                      ) -> Iterator[RawSpan]:
    """Every span of one parsed OTLP/JSON document (``{"resourceSpans": [...]}``), read as
    :func:`spans_from_otlp` reads each line's."""
    if not isinstance(doc, Mapping) or "resourceSpans" not in doc:
        raise BridgeError(f"{where}: expected an OTLP/JSON object {{\"resourceSpans\": [...]}}, got "
                          f"{(sorted(doc) if isinstance(doc, Mapping) else type(doc).__name__)!r:.80}")
    yield from _resource_spans(doc["resourceSpans"], where, ing, group_attr)


def _list(x: Any, where: str, what: str) -> list:
    if x is None:
        return []
    if not isinstance(x, list):
        raise BridgeError(f"{where}: {what} must be a list, got {type(x).__name__}")
    return x


def _resource_spans(rss: Any, where: str, ing: Ingest, group_attr: Optional[str]) -> Iterator[RawSpan]:
    for rs in _list(rss, where, "resourceSpans"):
        if type(rs) is not dict and not isinstance(rs, Mapping):
            raise BridgeError(f"{where}: each resourceSpans item must be an object")
        for ss in _list(rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")), where, "scopeSpans"):
            if type(ss) is not dict and not isinstance(ss, Mapping):
                raise BridgeError(f"{where}: each scopeSpans item must be an object")
            scope = ss.get("scope") or ss.get("instrumentationLibrary") or {}
            scope_name = scope.get("name", "") if isinstance(scope, Mapping) else ""
            spans = _list(ss.get("spans"), where, "spans")
            if read_spans is None:
                for sp in spans:
                    yield _otlp_span(sp, where, ing, str(scope_name), group_attr)
            else:  # the same RawSpans, plain spans read in C (the rest by _otlp_span)
                yield from read_spans(spans, where, ing, str(scope_name), group_attr,
                                      _kept_cache(group_attr))


def _otlp_span(sp: Any, where: str, ing: Ingest, scope: str, group_attr: Optional[str]) -> RawSpan:
    if type(sp) is not dict and not isinstance(sp, Mapping):
        raise BridgeError(f"{where}: each span must be an object, got {type(sp).__name__}")
    trace_id = hex_id(sp.get("traceId"), 16, where, "traceId")
    span_id = hex_id(sp.get("spanId"), 8, where, "spanId")
    if trace_id is None or span_id is None:
        raise BridgeError(f"{where}: a span needs a non-zero traceId and spanId, got "
                          f"{sp.get('traceId')!r:.40} / {sp.get('spanId')!r:.40}")
    at = f"{where} span {span_id}"
    name = sp.get("name", "")
    if not isinstance(name, str):
        raise BridgeError(f"{at}: name must be a string, got {name!r:.60}")
    status = sp.get("status") or {}
    if type(status) is not dict and not isinstance(status, Mapping):
        raise BridgeError(f"{at}: status must be an object, got {status!r:.60}")
    code = status.get("code", 0)
    error = None
    if code in (2, "STATUS_CODE_ERROR", "2"):
        error = str(status.get("message") or "error")
    events = []
    for ev in _list(sp.get("events"), at, "events"):
        if (type(ev) is dict or isinstance(ev, Mapping)) and str(ev.get("name", "")).startswith(("gen_ai.", "exception")):
            events.append((ev["name"], _attributes(ev.get("attributes"), at, ing, None, keep_all=True)))
    return RawSpan(trace_id=trace_id, span_id=span_id,
                   parent_id=hex_id(sp.get("parentSpanId"), 8, at, "parentSpanId"), name=name,
                   start_ns=_time(sp.get("startTimeUnixNano", 0), at, "startTimeUnixNano"),
                   end_ns=_time(sp.get("endTimeUnixNano", 0), at, "endTimeUnixNano"),
                   attrs=_attributes(sp.get("attributes"), at, ing, group_attr), error=error,
                   scope=scope, events=tuple(events))


#: The C reader of a scope's spans (``_otlpspans.c``, built at install time when a C compiler
#: was there; optional): ``read_spans(spans, where, ing, scope, group_attr, keep)`` gives the
#: RawSpans :func:`_otlp_span` gives, reading the plain shape in C and handing any other span to
#: :func:`_otlp_span`, which reads it or words its error. None when it was not built.
read_spans: Optional[Callable[..., list]]
try:
    from ._otlpspans import configure as configure_c_reader, read_spans
except ImportError:  # pragma: no cover - exercised where no compiler is (the Python path is the tests' reference)
    read_spans = None
else:
    configure_c_reader(kept, _otlp_span, RawSpan, MAX_ATTRIBUTE_CHARS)

#: Whether the C reader of spans is in use.
HAS_C = read_spans is not None


# --------------------------------------------------------------------------- SDK spans

def spans_from_sdk(spans: Iterable[Any], *, ing: Ingest, group_attr: Optional[str] = None
                   ) -> Iterator[RawSpan]:
    """:class:`RawSpan` s of OpenTelemetry SDK ``ReadableSpan`` s (duck-typed: no import)."""
    for s in spans:
        yield span_from_sdk(s, ing, group_attr)


def span_from_sdk(s: Any, ing: Ingest, group_attr: Optional[str] = None) -> RawSpan:
    """The :class:`RawSpan` of one OpenTelemetry SDK ``ReadableSpan`` (duck-typed: no import);
    run for every span of a captured trial as it ends, so kept lean: the kept keys are picked
    before their values are read (the SDK's attribute mapping answers each read in Python)."""
    ctx = s.context
    parent = s.parent
    src = s.attributes
    attrs = {}
    if src:
        for k in [k for k in src if kept(k, group_attr)]:
            v = src[k]
            if isinstance(v, str) and len(v) > MAX_ATTRIBUTE_CHARS:
                ing.truncated += 1
                v = v[:MAX_ATTRIBUTE_CHARS]
            attrs[k] = v
    status = s.status
    error = None
    if status is not None and getattr(status.status_code, "name", "") == "ERROR":
        error = status.description or "error"
    evs = s.events
    events = tuple((e.name, dict(e.attributes or {})) for e in evs
                   if e.name.startswith(("gen_ai.", "exception"))) if evs else ()
    scope = getattr(s, "instrumentation_scope", None)
    return RawSpan(f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}",
                   None if parent is None else f"{parent.span_id:016x}",
                   s.name, s.start_time or 0, s.end_time or 0, attrs, error,
                   getattr(scope, "name", "") or "", events)
