"""ek_agents.parsing: the orjson fast path gives what the strict path gives -- the same value
(same types, same key order) or the same typed error, word for word -- on a seeded corpus of
tricky inputs; and the bounds hold on both paths."""
from __future__ import annotations

import doctest
import json
import random
import sys

import pytest

from ek_agents import parsing
from ek_agents.errors import BridgeError, EkAgentsError, InvalidInput
from ek_agents.parsing import MAX_DEPTH, parse_json

SEED = 15


def _outcome(data, **kw):
    """``("value", repr)`` or ``("error", class, message)``: repr tells 1 from 1.0, -0.0 from
    0.0 and keeps key order."""
    try:
        return ("value", repr(parse_json(data, where="doc", **kw)))
    except EkAgentsError as exc:
        return ("error", type(exc).__name__, str(exc))


# ------------------------------------------------------------------ the seeded corpus

_ATOMS = [
    "0", "-0", "1", "-1", "0.0", "-0.0", "1.5", "1e5", "1E-5", "2.5e+3", "1e308", "1e309",
    "-1e309", "1e-400", "4.9e-324", "2.2250738585072014e-308", "0.1", "123456789.123456789",
    str(2**63 - 1), str(2**63), str(-2**63), str(-2**63 - 1), str(2**64 - 1), str(2**64),
    str(-(2**64)), "1" + "0" * 18, "1" + "0" * 19, "-" + "9" * 19, "9" * 20, "9" * 300,
    "9" * 301, "-" + "9" * 300, "0." + "0" * 30 + "1", "1." + "9" * 40, "1" + "0" * 25 + ".5",
    "NaN", "Infinity", "-Infinity", "true", "false", "null",
    '""', '"a"', '"\\""', '"\\\\"', '"\\\\\\""', '"[{"', '"]}"', '"\\"[["', '"\\u00e9"', '"é"',
    '"\\ud83d\\ude00"', '"\\ud800"', '"\\udc00"', '"\\ud800x"', '"\\ud800\\u0041"', '"😀"',
    '"\\/"', '"\\b\\f\\n\\r\\t"', '"\\u0000"', '"1234567890123456789012"', '"-1234567890123456789"',
    '"\x7f"', '"tab\there"', '"nl\nhere"', '"\\x"', '"\\u12"',
]


def _doc(rnd: random.Random, depth: int = 0) -> str:
    r = rnd.random()
    if depth > 6 or r < 0.45:
        return rnd.choice(_ATOMS)
    ws = rnd.choice(["", " ", "\n", "\t", "\r\n  "])
    n = rnd.randint(0, 4)
    if r < 0.7:
        return "[" + ws + ("," + ws).join(_doc(rnd, depth + 1) for _ in range(n)) + ws + "]"
    keys = [rnd.choice(['"a"', '"b"', '"[x]"', '"\\"k\\""', '"\\ud800"', '"é"', '""']) for _ in range(n)]
    return "{" + ws + ("," + ws).join(f"{k}{ws}:{ws}{_doc(rnd, depth + 1)}" for k in keys) + ws + "}"


def _nested(rnd: random.Random) -> str:
    """Around MAX_DEPTH (and orjson's own 1024), with brackets and escaped quotes in strings."""
    d = rnd.choice([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 1023, 1024, 1025, 2000])
    inner = rnd.choice(['1', '"]]]]"', '"[[[["', '"\\"]"', '"\\\\"', '{}', '[]', '{"a": "}}"}'])
    opens = [rnd.choice(["[", '{"k":']) for _ in range(d - 1)]
    closes = ["]" if o == "[" else "}" for o in reversed(opens)]
    return "".join(opens) + "[" + inner + "]" + "".join(closes)


def _mutate(rnd: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    k = rnd.randrange(5)
    i = rnd.randrange(len(data))
    if k == 0:
        return data[:i]
    if k == 1:
        return data[:i] + bytes([rnd.randrange(256)]) + data[i + 1:]
    if k == 2:
        return data[:i] + rnd.choice([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x00", b"\\", b'"', b"["]) + data[i:]
    if k == 3:
        return b"\xef\xbb\xbf" + data
    return data + rnd.choice([b" ", b"x", b"]", b"\n\n", b"{}"])


def corpus(n: int = 2500) -> list:
    rnd = random.Random(SEED)
    out: list = [b"", b" ", b"[", b"[1,]", b"{'a': 1}", b'{"a":1,"a":2,"b":3,"a":4}', b"01", b"+1",
                 b".5", b"1.", b"-", b"[1]x", "\ud800", '"\ud800"', '["\udfff"]']
    for _ in range(n):
        r = rnd.random()
        text = _nested(rnd) if r < 0.1 else _doc(rnd)
        data = text.encode("utf-8", "surrogatepass")
        if rnd.random() < 0.25:
            data = _mutate(rnd, data)
        out.append(text if r > 0.9 and rnd.random() < 0.5 else data)
    return out


CASES = corpus()
OPTIONS = [{}, {"nonfinite": "allow"}, {"lone_surrogates": "allow"}, {"max_depth": 3},
           {"max_depth": 2000}, {"error": BridgeError, "nonfinite": "allow"}]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={getattr(v, '__name__', v)}" for k, v in o.items()) or "default")
def test_fast_path_agrees_with_the_strict_path_on_a_seeded_corpus(opts):
    assert _agree(CASES, opts) == {"value", "error"}  # the corpus holds both


def _agree(cases: list, opts: dict) -> set:
    """Asserts the fast and the strict path agree on each of ``cases``; the outcome kinds met."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))  # repr of the 2000-deep values
    try:
        kinds = set()
        for data in cases:
            fast, strict = _outcome(data, **opts), _outcome(data, fast=False, **opts)
            assert fast == strict, f"input {data[:200]!r}"
            kinds.add(fast[0])
    finally:
        sys.setrecursionlimit(limit)
    return kinds


def _as_text(data) -> list:
    """``data`` as text too (lone surrogates kept), when it decodes."""
    if isinstance(data, str):
        return [data]
    try:
        return [data, data.decode("utf-8", "surrogatepass")]
    except UnicodeDecodeError:
        return [data]


TEXT_CASES = [t for d in CASES for t in _as_text(d)[1:] if len(t) <= 4096] + [
    "-" + "9" * 19, "9" * 19, "[" + "1" * 19 + "]", '{"a": -' + "1" * 19 + "}", '"' + "1" * 19 + '"',
    "\ufeff{}", '{"a": "\ud800"}', '{"a": "\udfff x"}', "[" * 128 + "]" * 128, "[" * 129 + "]" * 129,
    '{"k":' * 127 + "[1]" + "}" * 127, '{"k":' * 128 + "[1]" + "}" * 128, "[[[]]]", "[[[[]]]]",
    '["[[[[[[[[["]', "[NaN, Infinity]", "1e400", "[1.5e-400]",
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: ",".join(f"{k}={getattr(v, '__name__', v)}" for k, v in o.items()) or "default")
def test_short_text_read_by_orjson_as_it_is_agrees_with_the_strict_path(opts):
    """Text up to 4 KiB (tool-call arguments) skips the byte scans: the same value or the same
    error as the strict path, near each bound (19-20 digit integers, max_depth brackets, BOM,
    lone surrogates encoded or escaped)."""
    assert _agree(TEXT_CASES, opts) == {"value", "error"} and len(TEXT_CASES) > 2000


@pytest.mark.parametrize("text, message", [
    ("\ufeff{}", "doc: column 1: not valid JSON (Unexpected UTF-8 BOM (decode using utf-8-sig))"),
    ('{"a": NaN}', "doc: NaN at column 7 is not a number this document may hold; write a finite number "
                   "(or null when there is none)"),
    ("[1,", "doc: column 4: not valid JSON (Expecting value)"),
])
def test_strict_errors_are_worded_as_the_stdlib_words_them(text, message):
    for fast in (True, False):
        with pytest.raises(InvalidInput) as ei:
            parse_json(text, where="doc", fast=fast)
        assert str(ei.value) == message


def test_the_corpus_reaches_every_bound():
    """The corpus is tricky where it must be: each refusal of the strict path occurs."""
    messages = " ".join(_outcome(d)[-1] for d in CASES if _outcome(d)[0] == "error")
    for needle in ("nesting deeper than 128", "integer of 301 digits", "overflows a float",
                   "is not a number this document may hold", "lone UTF-16 surrogate", "is not UTF-8",
                   "not valid JSON"):
        assert needle in messages


@pytest.mark.parametrize("text, value", [
    (str(2**64), 2**64), (str(-2**63 - 1), -2**63 - 1), ("9" * 300, int("9" * 300)),
    ("-" + "9" * 19, -int("9" * 19)), ('{"a": [' + "9" * 20 + "]}", {"a": [int("9" * 20)]}),
    ("[" + str(2**70) + ", 1.0, -0.0]", [2**70, 1.0, -0.0]),
    ('{"a": 1, "b": 2, "a": 3}', {"a": 3, "b": 2}),
    ('"\\ud83d\\ude00"', "\U0001F600"),
    ('{"big": "' + "7" * 40 + '"}', {"big": "7" * 40}),  # digits in a string: a false alarm, same value
])
def test_values_orjson_would_read_otherwise_come_out_as_the_strict_parser_reads_them(text, value):
    for data in (text.encode(), text):  # bytes, and short text (the path tool-call arguments take)
        got = parse_json(data, where="doc")
        assert got == value and repr(got) == repr(value)
        assert type(got) is type(value)


@pytest.mark.parametrize("depth, ok", [(MAX_DEPTH, True), (MAX_DEPTH + 1, False), (1024, False), (1025, False)])
def test_nesting_is_bounded_at_max_depth_with_brackets_inside_strings(depth, ok):
    text = '{"a": "]]]]\\"]]", "b": ' * (depth - 1) + '["[[[["]' + "}" * (depth - 1)
    if ok:
        doc = parse_json(text, where="deep.json")
        for _ in range(depth - 1):
            doc = doc["b"]
        assert doc == ["[[[["]
    else:
        with pytest.raises(InvalidInput, match=f"deep.json: nesting deeper than {MAX_DEPTH} levels at column"):
            parse_json(text, where="deep.json")


def test_a_large_document_takes_the_fast_path_and_keeps_its_bounds():
    """Many containers, escaped quotes and brackets in strings (as tau-bench's JSON-string
    arguments), one nesting past the limit deep inside: refused, as by the strict path."""
    rows = [{"args": json.dumps({"id": f"#W{i}", "q": "[x]"}), "n": i, "f": i / 7} for i in range(20_000)]
    data = json.dumps(rows).encode()
    assert parse_json(data, where="big.json") == rows
    deep = {"x": 1}
    for _ in range(MAX_DEPTH):
        deep = {"x": deep}
    rows[12_345]["deep"] = deep
    data = json.dumps(rows).encode()
    with pytest.raises(InvalidInput, match="nesting deeper than 128"):
        parse_json(data, where="big.json")
    assert _outcome(data) == _outcome(data, fast=False)


@pytest.mark.parametrize("offset", [-25, -19, -10, -1, 0, 1, 10])
def test_a_big_integer_across_the_scans_chunk_boundary_stays_an_integer(offset):
    """The integer scan reads 1 MiB at a time: a 20-digit integer cut by the boundary is seen."""
    big = 2 ** 64 + 7  # 20 digits, over orjson's 64 bits
    head = b'{"pad": "' + b"x" * ((1 << 20) + offset - 10) + b'", "n": '
    got = parse_json(head + str(big).encode() + b"}", where="doc")
    assert got["n"] == big and type(got["n"]) is int


def test_bytes_like_and_text_inputs_read_alike():
    for data in (b'{"a": [1, 2.5]}', bytearray(b'{"a": [1, 2.5]}'), memoryview(b'{"a": [1, 2.5]}'),
                 '{"a": [1, 2.5]}'):
        assert parse_json(data, where="doc") == {"a": [1, 2.5]}
    with pytest.raises(InvalidInput, match="expected bytes or text, got int"):
        parse_json(5, where="doc")
    with pytest.raises(InvalidInput, match="over the limit of 10 bytes"):
        parse_json(b"[" + b"1," * 10 + b"1]", where="doc", max_bytes=10)


def test_docstring_examples():
    assert doctest.testmod(parsing, optionflags=doctest.ELLIPSIS).failed == 0


def test_json_lines_fast_path_reads_each_line_as_parse_json_does_or_leaves_it_to_it():
    from ek_agents.parsing import fast_json_lines

    deep = b"[" * 200 + b"]" * 200
    lines = [b'{"a": [1, 2.5, "x"], "b": {"c": null}}', b"   ", b'{"n": 123456789012345678901}',
             b'{"x": NaN}', b"\xef\xbb\xbf{}", deep, b'{"s": "' + b"[" * 300 + b'"}',
             b'[' + b",".join([b'{"k": [1]}'] * 1600) + b']', b'{"cut": ']
    data = b"\n".join(lines) + b"\n"
    got = list(fast_json_lines(data))
    assert [at for at, *_ in got] == [data.index(x) for x in lines if x.strip()]
    for at, line, ok, doc in got:
        try:
            want = parse_json(line, where="l", nonfinite="allow")
        except InvalidInput:
            assert not ok  # every refusal is left to parse_json, which words it
            continue
        if ok:
            assert doc == want
    oks = [ok for *_, ok, _ in got]
    # the long integer, NaN, the BOM, the deep nesting and the cut line go to parse_json
    assert oks == [True, False, False, False, False, True, True, False]
    # without the long integer in the span, the other lines are read by orjson alone
    rest = data.replace(lines[2] + b"\n", b"")
    assert [ok for *_, ok, _ in fast_json_lines(rest)] == [True, False, False, False, True, True, False]


def test_json_lines_send_exactly_the_lines_holding_a_long_integer_to_parse_json(monkeypatch):
    from ek_agents import parsing
    from ek_agents.parsing import fast_json_lines

    monkeypatch.setattr(parsing, "_CHUNK", 64)  # runs cut across chunks too
    rng = random.Random(7)
    lines = []
    for i in range(300):
        n = rng.choice([18, 19, 20, 25])
        num = rng.choice(["", "-", "0."]) + "".join(rng.choice("123456789") for _ in range(n))
        lines.append(b'{"i": %d, "pad": "%s", "v": %s}' % (i, b"x" * rng.randrange(40),
                                                         num.encode()))
    data = b"\n".join(lines) + b"\n"
    start = len(lines[0]) + 1  # a span starting after the first line
    for at, line, ok, doc in fast_json_lines(data, start):
        want = parse_json(line, where="l", nonfinite="allow")
        assert ok == (not parsing._may_hold_big_int(line))
        if ok:
            assert doc == want and type(doc["v"]) is type(want["v"])


def test_long_digit_runs_inside_strings_keep_the_fast_path_and_the_values():
    """A run of >= 20 digits inside a string (a hex trace id's digits) is no integer: orjson
    reads the document; one outside a string -- also after escaped quotes, or in a document
    with an escaped backslash -- still goes to the strict path and stays an integer."""
    ids = ["031169aff36" + "81234567890123456789" + "0", 'ab"-1234567890123456789012']
    for text in (json.dumps({"ids": ids, "n": 1}), json.dumps([{"task_id": i} for i in ids * 50])):
        assert parsing._fast(text.encode(), MAX_DEPTH, 1 << 30) == (True, json.loads(text))
    for text in ('{"a": "x\\"y", "n": 123456789012345678901, "id": "12345678901234567890"}',
                 '{"id": "12345678901234567890", "b": "\\\\", "n": -12345678901234567890}',
                 '{"id": "12345678901234567890\\\\", "n": 99999999999999999999}'):
        assert parsing._fast(text.encode(), MAX_DEPTH, 1 << 30)[0] is False
        got = parse_json(text.encode(), where="doc")
        assert type(got["n"]) is int and got == json.loads(text)
    rng = random.Random(3)
    for _ in range(300):  # strings with runs and escapes, integers in and out of 64 bits
        parts = []
        for _ in range(rng.randrange(1, 6)):
            run = "".join(rng.choice("0123456789") for _ in range(rng.choice([5, 19, 20, 25])))
            parts.append(rng.choice([json.dumps("q\"" * rng.randrange(2) + run),
                                     json.dumps("\\" * rng.randrange(3) + run), run.lstrip("0") or "0",
                                     "-" + (run.lstrip("0") or "1")]))
        data = ("[" + ", ".join(parts) + "]").encode()
        assert _outcome(data) == _outcome(data, fast=False)
