"""The C reader of OTLP/JSON spans (``ek_agents.bridge._otlpspans``) gives exactly what the Python
reader gives: the same RawSpans, the same counts, the same errors with the same words -- on real
pydantic-ai traffic and on spans bent every way the format allows or forbids (ids in capitals,
base64 or zero, times as numbers or strings, statuses, events, every attribute value kind, bad
keys and values, values to cut, kept and dropped keys, grouping attributes)."""
from __future__ import annotations

import gzip
import itertools
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ek_agents.bridge import _otlp
from ek_agents.bridge._otlp import HAS_C, Ingest, spans_of_document
from ek_agents.errors import BridgeError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "otlp" / "monitor-traffic.jsonl.gz"


def test_the_c_reader_is_built_where_it_must_be():
    """CI sets EK_REQUIRE_CEXT=1: there a missing extension (no compiler) fails, never slows down silently."""
    if os.environ.get("EK_REQUIRE_CEXT") == "1":
        assert HAS_C, "ek_agents.bridge._otlpspans was not built (pip install -e . needs a C compiler)"
    assert HAS_C is (_otlp.read_spans is not None)


def _read(doc, group_attr, c: bool):
    """(spans, counts) or (error type, message) of one document, by the C or the Python reader."""
    saved = _otlp.read_spans
    if not c:
        _otlp.read_spans = None
    ing = Ingest()
    try:
        return [s for s in spans_of_document(doc, "f.jsonl:1", ing=ing, group_attr=group_attr)], ing
    except (BridgeError, TypeError, ValueError, OverflowError) as e:
        return type(e), str(e)
    finally:
        _otlp.read_spans = saved


def _same(doc, group_attr=None):
    c, py = _read(doc, group_attr, True), _read(doc, group_attr, False)
    assert repr(c) == repr(py)  # (repr: 1 and 1.0, True and 1 told apart; nan equal to nan)
    return c


needs_c = pytest.mark.skipif(not HAS_C, reason="the C extension was not built here")


@needs_c
def test_real_traffic_reads_the_same():
    with gzip.open(FIXTURE, "rb") as f:
        lines = list(itertools.islice(f, 40))
    n = 0
    for line in lines:
        doc = orjson.loads(line)
        for group in (None, "session.id", frozenset({"app.route", "session.id"})):
            spans, ing = _same(doc, group)
            n += len(spans)
    assert n > 100 and any(s.attrs for s in spans) and ing == Ingest()


PLAIN = {
    "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
    "parentSpanId": "eee19b7ec3c1b173", "name": "chat gpt-4o", "kind": 3,
    "startTimeUnixNano": "1544712660000000000", "endTimeUnixNano": "1544712661000000000",
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
        {"key": "server.port", "value": {"intValue": "8080"}},
        {"key": "app.route", "value": {"stringValue": "/ask"}},
    ],
    "status": {},
}

ODD_VALUES = [
    None, "", 0, 1, 2, -1, "2", 2.0, True, False, "0", "007", "-5", "12a", "1" * 19, "1" * 20, "x",
    "２", "NaN", "Infinity", 1e300, 10**30, 10**400, [], {}, [1], {"a": 1}, "0" * 16, "0" * 32,
    "EEE19B7EC3C1B174", "5B8EFFF798038103D269B633813FC60C", "7uGbfsPBsXQ=", "W47/95gDgQPSabYzgT/GDA==",
    "STATUS_CODE_ERROR", "STATUS_CODE_OK", "é", "gen_ai.choice", "exception"]
ODD = st.sampled_from(ODD_VALUES)

ARRAYS = [{"values": [{"stringValue": "stop"}]}, {"values": []}, {},
          {"values": [{"intValue": "3"}, {"doubleValue": 1}, {"boolValue": False}, {"intValue": 4}]},
          {"values": [{"arrayValue": {"values": [{"stringValue": "a"}]}}]}, {"values": [{}]},
          {"values": [{"boolValue": "x"}]}, {"values": "x"}, {"values": [], "x": 1},
          {"values": [{"kvlistValue": {"values": []}}]}, {"values": [{"intValue": "1", "x": 2}]},
          {"values": [{"stringValue": "x" * (_otlp.MAX_ATTRIBUTE_CHARS + 1)}]}]
_nested = ARRAYS[0]
for _ in range(10):  # arrays in arrays, up to past the depth the reader refuses (8)
    ARRAYS.append(_nested := {"values": [{"arrayValue": _nested}, {"intValue": "1"}]})
KINDS = ["stringValue", "intValue", "doubleValue", "boolValue", "bytesValue", "arrayValue",
         "kvlistValue", "nope"]
VALUE = st.one_of(
    st.builds(lambda k, x: {k: x}, st.sampled_from(KINDS), ODD),
    st.just({"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": 3}]}}),
    st.just({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}}),
    st.just({"stringValue": "a", "intValue": "1"}),
    st.builds(lambda a: {"arrayValue": a}, st.sampled_from(ARRAYS)),
    st.just({}), st.just(None), st.just("plain"), ODD)

KEY = st.sampled_from(["gen_ai.request.model", "gen_ai.usage.output_tokens", "llm.model_name",
                       "ek.output", "app.route", "session.id", "logfire.msg", "error.type", 7, None])

ATTR = st.one_of(st.builds(lambda k, v: {"key": k, "value": v}, KEY, VALUE),
                 st.builds(lambda k: {"key": k}, KEY), st.just("kv"), st.just(None))

FIELDS = ["traceId", "spanId", "parentSpanId", "name", "startTimeUnixNano", "endTimeUnixNano",
          "status", "events", "attributes"]


@st.composite
def bent_span(draw):
    sp = dict(PLAIN, attributes=list(PLAIN["attributes"]))
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        how = draw(st.sampled_from(["drop", "odd", "shape"]))
        if how == "drop":
            sp.pop(field, None)
        elif how == "odd":
            sp[field] = draw(ODD)
        elif field == "status":
            sp[field] = draw(st.fixed_dictionaries({}, optional={"code": ODD, "message": ODD}))
        elif field == "events":
            sp[field] = [{"name": draw(ODD), "attributes": draw(st.lists(ATTR, max_size=2))}]
        elif field == "attributes":
            sp[field] = draw(st.lists(ATTR, max_size=5))
        else:
            sp[field] = draw(ODD)
    return sp


def _one_span(sp, group_attr=None):
    return _same({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": [sp]}]}]},
                 group_attr)


@needs_c
def test_each_field_bent_alone_reads_the_same():
    """Every field dropped or set to every odd value, every status, every attribute value kind
    with every odd value, kept and dropped: one bend at a time, all of them."""
    outcomes = set()
    for field in FIELDS:
        outcomes.add(type(_one_span({k: v for k, v in PLAIN.items() if k != field})[0]))
        for odd in ODD_VALUES:
            outcomes.add(type(_one_span(dict(PLAIN, **{field: odd}))[0]))
    for code, msg in itertools.product([*ODD_VALUES, "absent"], [*ODD_VALUES, "absent"]):
        status = {k: v for k, v in (("code", code), ("message", msg)) if v != "absent"}
        _one_span(dict(PLAIN, status=status))
    for key, kind, odd in itertools.product(["gen_ai.x", "logfire.msg"], KINDS, ODD_VALUES):
        attrs = [*PLAIN["attributes"], {"key": key, "value": {kind: odd}}]
        outcomes.add(type(_one_span(dict(PLAIN, attributes=attrs), "app.route")[0]))
    for key, arr in itertools.product(["gen_ai.x", "logfire.msg"], ARRAYS):
        attrs = [*PLAIN["attributes"], {"key": key, "value": {"arrayValue": arr}}]
        outcomes.add(type(_one_span(dict(PLAIN, attributes=attrs))[0]))
    assert outcomes == {list, type}  # both read and refused spans were among them



@needs_c
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(bent_span(), min_size=1, max_size=3),
       st.sampled_from([None, "session.id", frozenset({"app.route"})]), st.sampled_from(["s", 3, None]))
def test_bent_spans_read_the_same(spans, group_attr, scope):
    doc = {"resourceSpans": [{"resource": {}, "scopeSpans": [
        {"scope": {"name": scope}, "spans": spans}, {"scope": {"name": "other"}, "spans": [PLAIN]}]}]}
    _same(doc, group_attr)


@needs_c
def test_a_value_to_cut_is_cut_and_counted_the_same(monkeypatch):
    long = {"key": "gen_ai.input.messages", "value": {"stringValue": "x" * (_otlp.MAX_ATTRIBUTE_CHARS + 5)}}
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [dict(PLAIN, attributes=[long])]}]}]}
    spans, ing = _same(doc)
    assert ing.truncated == 1 and len(spans[0].attrs["gen_ai.input.messages"]) == _otlp.MAX_ATTRIBUTE_CHARS
