"""A window's stored line and verdict digest of an episode (`stages.windowrun.episode_record`,
through `records.episodejson`: no pydantic dump, orjson) are byte for byte what
`Episode.to_json()` and `episode_digest` give -- on the real pydantic-ai episodes of the
recorded fixture, and on odd values: unicode (DEL, U+2028, astral, lone surrogates), control
characters, floats at and past the edges (1e-05, 1e-4, 1e16, -0.0, 5e-324, NaN, inf), ints past
64 bits, tuples, sets, bytes, non-str keys, subclasses, deep nesting, fields of a wrong type
(an episode made with ``core.construct``). Where the standard path refuses a value, the record
refuses it with the same error."""
from __future__ import annotations

import enum
import math
import random
import re
import struct
from pathlib import Path

import pytest

from ek_agents.base import Cost, Episode, ModelCall, RunProvenance, Step, Trajectory
from ek_agents.core import Provenance, canonical_json, construct
from ek_agents.monitor.ingest import Ledger, iter_new_episodes
from ek_agents.records import episodejson
from ek_agents.records.episodejson import canonical_bytes, plain_episode_dict, plain_json
from ek_agents.stages.windowrun import episode_digest, episode_record

FIXTURE = Path(__file__).parents[1] / "fixtures" / "otlp" / "monitor-traffic.jsonl.gz"


def _standard(ep: Episode) -> tuple:
    """What the window stored and keyed before: the result, or the error as (type, message)."""
    try:
        return ep.to_json().encode("ascii"), episode_digest(ep)
    except Exception as exc:  # noqa: BLE001 -- compared with the record's
        return type(exc), str(exc)


def _record(ep: Episode) -> tuple:
    try:
        return episode_record(ep)
    except Exception as exc:  # noqa: BLE001
        return type(exc), str(exc)


def _same(ep: Episode) -> bool:
    """The record equals the standard path; True when it took the fast path."""
    assert _record(ep) == _standard(ep)
    return plain_episode_dict(ep) is not None


def test_fast_path_is_on():
    assert episodejson.FAST


def test_real_episodes_are_the_same_bytes():
    eps = list(iter_new_episodes(str(FIXTURE), Ledger(), slice_attr="app.route", where="w"))
    assert len(eps) >= 20
    assert all(_same(ep) for ep in eps)  # every one of them through the fast path
    # and with the fields a reader leaves empty here: a run, a cost without calls, success
    ep = eps[0]
    assert _same(ep.replace(run=RunProvenance(seed=3, temperature=0.7, model="m"),
                            success=True, final_state={"db": [1, 2.5, None]}))
    assert _same(ep.replace(cost=Cost(input_tokens=5, output_tokens=1, latency_s=0.25)))
    assert _same(ep.replace(cost=None, provenance=None, meta={}))


class Color(enum.Enum):
    RED = 1


class Text(str):
    pass


ODD = [
    "plain", "", "caf\u00e9", "\u2028\u2029", "\x7f", "\x00\x01\x1f\b\f\n\r\t\"\\/",
    "\U0001f600 astral", "\ud800 lone surrogate", "\ufeff\uffff",
    0, -1, 2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1, 2 ** 64, -(2 ** 63) - 1, 10 ** 30,
    0.0, -0.0, 1e-05, 1e-4, 0.00012, 1e16, 9999999999999998.0, 1e15, 5e-324, 1.7976931348623157e308,
    -2.5, 3.028997603, math.nan, math.inf, -math.inf, True, False, None,
    (1, "a"), [1, [2, [3]]], {"b": 1, "a": {"c": []}}, {"\u00e9": 1, "e": 2, "E": 3},
    {1: "int key"}, {None: 1}, {(1, 2): 3}, {1, 2}, frozenset(), b"bytes", bytearray(b"x"),
    Color.RED, Text("sub"), 1.5e300, [math.nan], {"k": math.inf},
]


def _deep(n: int) -> list:
    x: list = []
    for _ in range(n):
        x = [x]
    return x


@pytest.mark.parametrize("value", ODD + [_deep(episodejson.MAX_DEPTH - 2), _deep(300)],
                         ids=lambda v: repr(v)[:30])
def test_odd_values_anywhere(value):
    base = Episode("t", Trajectory([Step("search", {"q": "x"}, observation="ok")]), output="o",
                   cost=Cost.of_calls([ModelCall("m", input_tokens=3, output_tokens=1)]),
                   provenance=Provenance("src", "[0]", {"format": "x"}), meta={"trial": 0})
    for ep in (base.replace(output=value), base.replace(final_state=value),
               base.replace(meta={"trial": 0, "group": value, "x": [value]}),
               base.replace(trajectory=Trajectory([Step("t", {"a": value}, observation=value)])),
               base.replace(provenance=Provenance("s", None, {"v": value}))):
        _same(ep)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
def test_constructed_fields_of_another_type_take_the_standard_path():
    """Fields ``core.construct`` left untyped: pydantic's dump decides (or refuses), not the
    fast path."""
    ep = Episode("t", output="o", meta={"trial": 0})
    odd = [construct(Episode, task_id=7, meta={}), construct(Episode, task_id="t", success=1, meta={}),
           construct(Episode, task_id="t", meta=[]),
           ep.replace(cost=construct(Cost, input_tokens=True)),
           ep.replace(cost=construct(Cost, latency_s=2)),
           ep.replace(cost=construct(Cost, latency_s=1e-7)),
           ep.replace(cost=construct(Cost, calls=[ModelCall("m")])),
           ep.replace(cost=Cost.of_calls([construct(ModelCall, model="m", input_tokens=2.0)])),
           ep.replace(trajectory=construct(Trajectory, steps=[Step("a")])),
           ep.replace(trajectory=Trajectory([construct(Step, tool="a", args=[1])])),
           ep.replace(trajectory=Trajectory([construct(Step, tool="a", error=3)])),
           ep.replace(run=construct(RunProvenance, seed="1")),
           ep.replace(provenance=construct(Provenance, source="s", meta=None))]
    for x in odd:
        assert not _same(x)


def _value(rng: random.Random, depth: int = 0):
    """A random JSON-like value: mostly plain, now and then one of the odd atoms above."""
    r = rng.random()
    if depth < 4 and r < 0.3:
        kids = [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
        return (kids if r < 0.12 else tuple(kids) if r < 0.15
                else {_text(rng): k for k in kids})
    if r < 0.4:
        return rng.choice(ODD)
    if r < 0.6:
        return _text(rng)
    if r < 0.8:
        return struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0] if r < 0.65 \
            else round(rng.uniform(-1e6, 1e6), rng.randrange(8))
    return rng.choice([rng.randrange(-2 ** 70, 2 ** 70), rng.randrange(-99, 99), None, True])


def _text(rng: random.Random) -> str:
    pools = ["abcXYZ _-:/", "\x00\x1f\x7f\"\\\n", "\u00e9\u2028\ud7ff\ue000\uffff",
             "\U0001f600\U0010ffff", "\ud800\udfff"]
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randrange(8)))


def test_random_values():
    rng = random.Random(11)
    fast = 0
    for _ in range(1500):
        out, meta, args = _value(rng), _value(rng), {_text(rng): _value(rng) for _ in range(2)}
        fast += _same(Episode("t", Trajectory([Step("tool", args, observation=meta)]),
                              output=out, meta={"trial": 1, "group": out, "m": meta}))
    assert 100 < fast < 1400  # both paths taken


def test_floats_in_the_fast_range_format_as_repr():
    rng = random.Random(7)
    xs = []
    while len(xs) < 20000:
        x = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        x = x if rng.random() < 0.2 else rng.choice([1, -1]) * 10 ** rng.uniform(-4, 16)
        x = round(x, rng.randrange(0, 12)) if rng.random() < 0.3 else x
        if x == 0.0 or 1e-4 <= abs(x) < 1e16:
            xs.append(x)
    xs += [1e-4, -1e-4, math.nextafter(1e16, 0), -math.nextafter(1e16, 0), 0.1, 1e15, 123.0]
    assert plain_json(xs) == canonical_json(xs)


def test_canonical_bytes_of_any_document():
    """A window's documents through orjson where their values allow it: canonical_json's bytes,
    or its error."""
    rng = random.Random(5)
    docs = [{"episodes": [{"task_id": f"{i:032x}", "meta": {"trial": 0, "slice": "r0",
                                                             "digest": "%064x" % i}}
                          for i in range(50)]}, *ODD, _deep(300)]
    docs += [{"k": [_value(rng) for _ in range(3)]} for _ in range(300)]
    for doc in docs:
        try:
            want = canonical_json(doc)
        except Exception as exc:  # noqa: BLE001
            with pytest.raises(type(exc), match=re.escape(str(exc))):
                canonical_bytes(doc)
        else:
            assert canonical_bytes(doc) == want
