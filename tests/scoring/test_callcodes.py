"""The call encoding behind the fast in_order distance (``ek_agents.callcodes``): the C
extension and its pure-Python twin give the same classes, a class is "same tool, equal
arguments of the same types" (never 1 == 1.0 == True), anything not plain is refused, and ids
past the surrogate block still come back."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ek_agents import callcodes
from ek_agents.callcodes import HAS_C, c_encode, code_id, code_point, encode_calls, encode_python

NAN = float("nan")
plain = st.sampled_from(["a", "A", "", "é", "a b", 0, 1, 2, -1, 10**30, 0.0, -0.0, 1.0, 2.5, True, False, None, NAN])
args = st.dictionaries(st.sampled_from(["q", "n", "x", "é"]), plain, max_size=3)
call = st.tuples(st.sampled_from(["search", "answer", "open"]), args)
side = st.lists(st.lists(call, max_size=6), max_size=8)


def test_the_c_extension_is_built_where_it_must_be():
    """CI sets EK_REQUIRE_CEXT=1: there a missing extension (no compiler) fails, never slows down silently."""
    if os.environ.get("EK_REQUIRE_CEXT") == "1":
        assert HAS_C, "ek_agents._callcodes was not built (pip install -e . needs a C compiler and Python's headers)"
    assert callcodes.HAS_C is (c_encode is not None)


@pytest.mark.skipif(not HAS_C, reason="the C extension was not built here")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(side, side, st.randoms(use_true_random=False))
def test_c_and_python_give_the_same_codes(a, b, rnd):
    # the same dict in another key order, and the very same call object, now and then
    b = [[(t, dict(reversed(list(d.items())))) if rnd.random() < 0.3 else (t, d) for t, d in row] for row in b]
    if a and a[0] and b:
        b[0].append(a[0][0])
    assert c_encode(a, b) == encode_python(a, b)


@given(side, side)
@settings(max_examples=200, deadline=None)
def test_a_class_is_the_same_tool_with_equal_arguments_of_the_same_types(a, b):
    codes = encode_calls(a, b)
    flat = [c for rows in (a, b) for row in rows for c in row]
    ids = [code_id(ch) for rows in codes.classes for s in rows for ch in s]
    tools = [codes.tool_names[code_id(ch)] for rows in codes.tools for s in rows for ch in s]
    assert len(ids) == len(flat) and tools == [t for t, _ in flat]

    def same(x, y):
        return x[0] == y[0] and x[1].keys() == y[1].keys() and all(
            type(v) is type(y[1][k]) and (v is y[1][k] or v == y[1][k]) for k, v in x[1].items())

    for i in range(len(flat)):
        for j in range(i):
            assert (ids[i] == ids[j]) == same(flat[i], flat[j]), (flat[i], flat[j])
        assert same(flat[i], codes.representatives[ids[i]])


def test_one_one_point_oh_and_true_are_three_classes_and_key_order_is_not_a_fourth():
    codes = encode_calls([[("f", {"x": 1}), ("f", {"x": 1.0}), ("f", {"x": True})]],
                         [[("f", {"x": 1, "y": "a"}), ("f", {"y": "a", "x": 1})]])
    assert [list(map(code_id, s)) for s in codes.classes[0] + codes.classes[1]] == [[0, 1, 2], [3, 3]]


@pytest.mark.parametrize("bad", [
    [[("f", {"x": [1]})]],           # a list value
    [[("f", {"x": {"y": 1}})]],      # a dict value
    [[("f", {1: "a"})]],             # a key that is not a str
    [[("f", {"x": type("S", (str,), {})("a")})]],  # a str subclass
    [[("f", {"x": 1}, "extra")]],    # three items
    [[["f", {"x": 1}]]],             # a list, not a tuple
    [[("f", None)]],                 # no dict of arguments
    [[(1, {})]],                     # a tool that is not a str
    [("f", {})],                     # a call where a list of calls was due
    ([[("f", {})]],),                # not a list
])
def test_anything_not_plain_is_refused_by_both(bad):
    assert encode_python(bad, []) is None and encode_python([], bad) is None
    assert encode_calls(bad, []) is None and encode_calls([], bad) is None


def test_ids_skip_the_surrogates_and_come_back():
    n = 0xD800 + 300
    rows = [[("f", {"i": i}) for i in range(n)]]
    codes = encode_calls(rows, [[("f", {"i": n - 1})]])
    s = codes.classes[0][0]
    assert len(s) == n and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)
    assert [code_id(ch) for ch in s] == list(range(n))
    assert code_id(codes.classes[1][0]) == n - 1
    assert code_point(0xD7FF) == "\ud7ff" and ord(code_point(0xD800)) == 0xE000
    if HAS_C:
        assert c_encode(rows, [[("f", {"i": n - 1})]]) == encode_python(rows, [[("f", {"i": n - 1})]])
