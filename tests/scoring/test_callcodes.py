"""The call encoding behind the fast in_order distance (``ek_agents.scoring.callcodes``): the C
extension and its pure-Python twin give the same classes, a class is "same tool, equal
arguments of the same types" (never 1 == 1.0 == True), anything not plain is refused, and ids
past the surrogate block still come back. ``CallTable`` (what ToolCallMetric.score uses) keeps
the same classes from one episode to the next, on copies, and pairs calls on the keys it is given."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ek_agents.scoring import callcodes
from ek_agents.scoring.callcodes import HAS_C, CallTable, c_encode, code_id, code_point, encode_calls, encode_python

NAN = float("nan")
plain = st.sampled_from(["a", "A", "", "é", "a b", 0, 1, 2, -1, 10**30, 0.0, -0.0, 1.0, 2.5, True, False, None, NAN])
args = st.dictionaries(st.sampled_from(["q", "n", "x", "é"]), plain, max_size=3)
call = st.tuples(st.sampled_from(["search", "answer", "open"]), args)
side = st.lists(st.lists(call, max_size=6), max_size=8)


def test_the_c_extension_is_built_where_it_must_be():
    """CI sets EK_REQUIRE_CEXT=1: there a missing extension (no compiler) fails, never slows down silently."""
    if os.environ.get("EK_REQUIRE_CEXT") == "1":
        assert HAS_C, "ek_agents.scoring._callcodes was not built (pip install -e . needs a C compiler and Python's headers)"
        assert CallTable is not None, "ek_agents.scoring._callcodes was built from an older _callcodes.c (pip install -e . again)"
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


# ------------------------------------------------------------------ CallTable (C only)
needs_table = pytest.mark.skipif(CallTable is None, reason="the C extension was not built here")
episode = st.lists(call, max_size=6)


@needs_table
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(episode, episode), min_size=1, max_size=6))
def test_a_table_keeps_encode_s_classes_from_one_episode_to_the_next(episodes):
    t = CallTable()
    got = [t.classes(a, b) for a, b in episodes]
    codes = encode_python([a for a, _ in episodes], [b for _, b in episodes])  # one batch: the same partition
    ids = [i for x, y in got for i in x + y]
    ref = [code_id(ch) for ep in range(len(episodes)) for s in (codes[0][ep], codes[1][ep]) for ch in s]
    assert len(ids) == len(ref) and len(t) == len(set(ids)) == len(set(ref))
    assert all((ids[i] == ids[j]) == (ref[i] == ref[j]) for i in range(len(ids)) for j in range(i))
    assert [t.classes(a, b) for a, b in episodes] == got  # and again: nothing new
    flat = [c for a, b in episodes for c in a + b]
    for c, i in zip(flat, ids):
        rep = t.representative(i)
        assert rep[0] == c[0] and rep[1] == c[1] and [type(v) for v in rep[1].values()] == [type(c[1][k]) for k in rep[1]]


@needs_table
def test_a_table_holds_copies_so_a_changed_dict_is_a_new_class():
    t = CallTable()
    args = {"x": 1}
    assert t.classes([("f", args)], [("f", {"x": 1})]) == ((0,), (0,))
    args["x"] = 2
    assert t.representative(0) == ("f", {"x": 1}) and t.representative(0)[1] is not args
    assert t.classes([("f", args)], [("f", {"x": 1})]) == ((1,), (0,))
    t.clear()
    assert len(t) == 0 and t.classes([("f", {"x": 1})], []) == ((0,), ())


@needs_table
@pytest.mark.parametrize("bad", [
    [("f", {"x": [1]})], [("f", {1: "a"})], [("f", {"x": 1}, "extra")], [["f", {"x": 1}]], [("f", None)],
    [(1, {})], ("f", {}), [("f", {"x": type("S", (str,), {})("a")})], [("f", type("D", (dict,), {})(x=1))],
])
def test_a_table_refuses_what_is_not_plain(bad):
    t = CallTable()
    assert t.classes(bad, []) is None and t.classes([], bad) is None
    assert t.read(bad, []) is None and t.read([("g", {})], bad) is None


def _pair_model(kp, kg):
    """read()'s pairing in Python: each predicted call in order takes the first free gold call of its key."""
    free = list(range(len(kg)))
    rest, paired = [], []
    for i, k in enumerate(kp):
        j = next((j for j in free if kg[j] == k), None)
        if j is None:
            rest.append(i)
        else:
            free.remove(j)
            paired.append(i)
    return paired, rest, free


@needs_table
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=7), st.lists(st.integers(0, 4), max_size=7),
       st.lists(st.sampled_from([1.0, 0.1, 0.7, 2.5, 1e-17, 3.0]), min_size=5, max_size=5),
       st.sets(st.integers(0, 4)))
def test_read_sums_in_order_or_pairs_keys_like_the_python_model(a, b, weights, unset):
    t = CallTable()
    calls = [("f", {"i": i}) for i in range(5)]
    pred, gold = [calls[i] for i in a], [calls[i] for i in b]
    assert t.read(calls, calls) == (tuple(range(5)), tuple(range(5)))  # no key set yet: the classes
    keys = {i: 10 + i % 3 for i in range(5)}  # classes 0 and 3 (and 1 and 4) share a key
    for i in range(5):
        if i not in unset:
            t.set_pred(i, keys[i], weights[i])
            t.set_gold(i, keys[i])
    r = t.read(pred, gold)
    if any(i in unset for i in a + b):
        assert r == (tuple(a), tuple(b))
        return
    kp, kg = [keys[i] for i in a], [keys[j] for j in b]
    paired, rest, left = _pair_model(kp, kg)
    tp = 0.0
    for i in paired:
        tp += weights[a[i]]
    if kp == kg:
        assert type(r) is float and r == tp
    else:
        assert r == (tuple(a), tuple(b), tp, tuple(rest), tuple(left))
        assert type(r[2]) is float


@needs_table
def test_read_leaves_huge_episodes_to_the_caller_and_grows_its_keys():
    t = CallTable()
    big = [("f", {"i": i}) for i in range(200)]  # past the 256 keys a table starts with, on both sides
    ids = t.classes(big, [("g", {"i": i}) for i in range(100)])
    for i in range(300):
        t.set_pred(i, i, 1.0)
        t.set_gold(i, i)
    assert t.read(big, big) == 200.0
    assert t.read(big, big[::-1]) == (ids[0], ids[0][::-1], 200.0, (), ())  # 200 x 200: paired here
    bigger = big * 2
    assert t.read(bigger, bigger[::-1]) == (ids[0] * 2, ids[0][::-1] * 2)  # 400 x 400: past the limit
    assert t.read(bigger, bigger) == 400.0


@needs_table
def test_a_table_says_what_was_wrong():
    t = CallTable()
    t.classes([("f", {})], [])
    with pytest.raises(IndexError, match=r"representative\(1\): no such class \(1 classes\)"):
        t.representative(1)
    with pytest.raises(IndexError, match=r"set_pred\(-1\)"):
        t.set_pred(-1, 0, 1.0)
    with pytest.raises(IndexError, match=r"set_gold\(5\)"):
        t.set_gold(5, 0)
    with pytest.raises(ValueError, match="above -2\\*\\*63"):
        t.set_gold(0, -2**63)
    with pytest.raises(TypeError, match="takes 2 call lists"):
        t.read([])
    with pytest.raises(TypeError, match="takes no arguments"):
        CallTable(1)
    with pytest.raises(TypeError):
        t.set_pred(0, 1, "heavy")
