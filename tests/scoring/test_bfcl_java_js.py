"""bfcl_check on BFCL's Java and JavaScript categories: typed-string arguments read by BFCL's
Java/JS type rules (one test per rule), refusals where BFCL's checker cannot answer, and
agreement with verdicts recorded from BFCL's own checker."""
import doctest
import json
from pathlib import Path

import pytest

from ek_agents.scoring import bfcl_typed_strings
from ek_agents.scoring.bfcl import bfcl_check
from ek_agents.scoring.bfcl_typed_strings import js_value, language_of
from ek_agents.errors import EkAgentsError, InvalidInput


def fn(name, **types):
    props = {}
    for param, t in types.items():
        t, _, items = t.partition(":")
        props[param] = {"type": t, "description": ""}
        if items:
            props[param]["items"] = {"type": items}
    return {"name": name, "description": "", "parameters": {"type": "dict", "properties": props,
                                                             "required": list(types)}}


def java(t, value, gold, items=None):
    """The verdict for one Java argument ``x`` of type ``t`` (``error_type`` or "ok")."""
    return _one("simple_java", t, value, gold, items)


def js(t, value, gold, items=None):
    return _one("simple_javascript", t, value, gold, items)


def _one(category, t, value, gold, items):
    doc = fn("F.run", x=f"{t}:{items}" if items else t)
    r = bfcl_check([doc], [{"F.run": {"x": value}}], [{"F.run": {"x": gold}}], category)
    assert r.valid == (r.error_type is None)
    return "ok" if r.valid else r.error_type


# --------------------------------------------------------------------------- Java

def test_java_boolean_reads_true_and_false_only():
    assert java("boolean", "true", [True]) == "ok"             # the issue: "true" was rejected
    assert java("boolean", "false", [False]) == "ok"
    assert java("boolean", "false", [True]) == "value_error:others"
    assert java("boolean", "True", [True]) == "type_error:simple"
    assert java("boolean", "1", [True]) == "type_error:simple"


def test_java_argument_that_is_not_a_typed_string_is_type_error_java():
    assert java("boolean", True, [True]) == "type_error:java"
    assert java("integer", 5, [5]) == "type_error:java"
    assert java("String", ["a"], ["a"]) == "type_error:java"


@pytest.mark.parametrize("t", ["integer", "short", "byte"])
def test_java_integer_types_read_plain_integer_literals(t):
    assert java(t, "42", [42]) == "ok"
    assert java(t, "-3", [-3]) == "ok"
    assert java(t, "43", [42]) == "value_error:others"
    assert java(t, "42L", [42]) == "type_error:simple"
    assert java(t, "42.0", [42]) == "type_error:simple"


def test_java_long_needs_the_L_suffix():
    assert java("long", "9000000000L", [9000000000]) == "ok"
    assert java("long", "9000000000l", [9000000000]) == "ok"
    assert java("long", "9000000000", [9000000000]) == "type_error:simple"   # BFCL: no suffix, no long


def test_java_float_needs_the_f_suffix_and_double_takes_none():
    assert java("float", "1.5f", [1.5]) == "ok"
    assert java("float", "15e-1F", [1.5]) == "ok"
    assert java("float", "1.5", [1.5]) == "type_error:simple"
    assert java("double", "2.25", [2.25]) == "ok"
    assert java("double", "225e-2", [2.25]) == "ok"
    assert java("double", "2", [2.0]) == "ok"
    assert java("double", "2.25d", [2.25]) == "type_error:simple"


def test_java_char_string_and_any_compare_as_standardized_strings():
    assert java("char", "q", ["q"]) == "ok"
    assert java("char", "'q'", ["q"]) == "value_error:string"      # BFCL's char pattern never strips quotes
    assert java("String", "new-york", ["New York"]) == "ok"
    assert java("String", '"New York"', ["New York"]) == "value_error:string"
    assert java("any", "Handler", ["handler"]) == "ok"
    assert java("any", "42", [42]) == "value_error:others"          # any stays a string: "42" is not 42


def test_java_array_reads_new_type_brackets_literal():
    assert java("Array", "new int[]{1, 2, 3}", [[1, 2, 3]], "integer") == "ok"
    assert java("Array", "new int[] { 1,2,3 }", [[1, 2, 3]], "integer") == "ok"
    assert java("Array", "new int[]{3, 2, 1}", [[1, 2, 3]], "integer") == "value_error:list/tuple"
    assert java("Array", "new int[]{1, x, 3}", [[1, 2, 3]], "integer") == "type_error:nested"
    assert java("Array", "{1, 2, 3}", [[1, 2, 3]], "integer") == "type_error:simple"
    assert java("Array", "new double[]{0.5, 1}", [[0.5, 1.0]], "double") == "ok"
    assert java("Array", "new char[]{'a', 'b'}", [["'a'", "'b'"]], "char") == "ok"


def test_java_array_of_string_keeps_quotes_as_bfcl_does():
    # BFCL reads Array<String> elements with their double quotes, so the unquoted gold never matches
    assert java("Array", 'new String[]{"x", "y"}', [["x", "y"]], "String") == "value_error:list/tuple"
    assert java("Array", "new String[]{x, y}", [["x", "y"]], "String") == "ok"


def test_java_arraylist_reads_as_list_and_add_block_forms():
    gold = [["a b", "c"]]
    assert java("ArrayList", 'new ArrayList<>(Arrays.asList("a b", "c"))', gold, "String") == "ok"
    assert java("ArrayList", 'new ArrayList<String>() {{ add("a b"); add("c"); }}', gold, "String") == "ok"
    assert java("ArrayList", "new ArrayList<>()", gold, "String") == "value_error:list/tuple"
    assert java("ArrayList", "Arrays.asList(1L, 2L)", [[1, 2]], "long") == "type_error:simple"
    assert java("ArrayList", "new ArrayList<Long>(Arrays.asList(1L, 2L))", [[1, 2]], "long") == "ok"
    assert java("ArrayList", "new ArrayList<Long>(Arrays.asList(1, 2))", [[1, 2]], "long") == "type_error:nested"
    # an ArrayList<any> element stays its source text, quotes included
    assert java("ArrayList", 'new ArrayList<>(Arrays.asList("id", 42, true))', [['"id"', "42", "true"]], "any") == "ok"
    assert java("ArrayList", 'new ArrayList<>(Arrays.asList("id", 42, true))', [["id", 42, True]], "any") == "value_error:list/tuple"


def test_java_hashmap_reads_put_calls():
    gold = [{"k": ["v"], "n": [1]}]
    ok = 'new HashMap<String, Object>() {{ put("k", "v"); put("n", 1); }}'
    assert java("HashMap", ok, gold) == "ok"
    assert java("HashMap", 'new HashMap<>() {{ put("k", "V"); put("n", 1L); }}', gold) == "ok"
    assert java("HashMap", 'new HashMap<>() {{ put("k", "v"); }}', gold) == "value_error:dict_key"
    assert java("HashMap", 'new HashMap<>() {{ put("k", "v"); put("n", 2); }}', gold) == "value_error:dict_value"
    assert java("HashMap", "new HashMap<>()", gold) == "value_error:dict_key"
    assert java("HashMap", "{k: v}", gold) == "type_error:simple"


def test_java_variable_reading_when_the_gold_is_a_name():
    assert java("integer", "n", ["n"]) == "ok"
    assert java("integer", "m", ["n"]) == "value_error:others"
    assert java("HashMap", "config", ["config"]) == "ok"
    assert java("Array", "argv", ["argv"], "String") == "ok"


@pytest.mark.parametrize("t", ["Set", "Hashtable", "Queue", "Stack"])
def test_java_types_bfcl_does_not_implement_are_refused(t):
    with pytest.raises(InvalidInput, match="does not implement"):
        java(t, "x", ["x"])
    with pytest.raises(InvalidInput, match="does not implement"):
        java("ArrayList", "new ArrayList<>()", [[]], t)


def test_java_unknown_types_and_missing_items_are_refused():
    with pytest.raises(InvalidInput, match="did you mean 'integer'"):
        java("Integer", "5", [5])
    with pytest.raises(InvalidInput, match="not a java type"):
        java("array", "x", ["x"], "integer")           # the JavaScript spelling
    with pytest.raises(InvalidInput, match="needs items.type"):
        java("Array", "new int[]{1}", [[1]])


def test_java_integer_over_the_digit_limit_is_refused():
    with pytest.raises(InvalidInput, match="digit limit"):
        java("integer", "1" * 5000, [1])
    with pytest.raises(InvalidInput, match="digit limit"):
        java("long", "1" * 5000 + "L", [1])


# --------------------------------------------------------------------------- JavaScript

def test_js_string_loses_one_pair_of_quotes():
    assert js("String", "hello world", ["hello world"]) == "ok"
    assert js("String", "'hello world'", ["hello world"]) == "ok"
    assert js("String", '"Hello-World"', ["hello world"]) == "ok"
    assert js("String", "`hello world`", ["hello world"]) == "value_error:string"


def test_js_integer_float_and_bigint():
    assert js("integer", "3", [3]) == "ok"
    assert js("integer", "3.0", [3]) == "type_error:simple"
    assert js("float", "2.5", [2.5]) == "ok"
    assert js("float", "60", [60.0]) == "ok"
    assert js("float", "25e-1", [2.5]) == "type_error:simple"       # no exponent form in BFCL's rule
    assert js("Bigint", "12345678901234567890n", [12345678901234567890]) == "ok"
    assert js("Bigint", "12345678901234567890", [12345678901234567890]) == "type_error:simple"
    with pytest.raises(InvalidInput, match="line break"):
        js("Bigint", "5n\n", [5])


def test_js_boolean():
    assert js("Boolean", "false", [False]) == "ok"
    assert js("Boolean", "False", [False]) == "type_error:simple"
    assert js("Boolean", False, [False]) == "type_error:js"


def test_js_arrays():
    gold = [["a", "b c"]]
    for text in ('["a", "b c"]', "['a','b c']", 'new Array("a", "b c")'):
        assert js("array", text, gold, "String") == "ok", text
    assert js("array", '["b c", "a"]', gold, "String") == "value_error:list/tuple"
    assert js("array", "[60, 30.5]", [[60.0, 30.5]], "float") == "ok"
    assert js("array", "[true, false]", [[True, False]], "Boolean") == "ok"
    assert js("array", "[1n, 2n]", [[1, 2]], "Bigint") == "ok"
    assert js("array", "[[1, 2], [3, 4]]", [[[1, 2], [3, 4]]], "array") == "ok"
    assert js("array", '[{k: "v"}]', [[{"k": ["v"]}]], "dict") == "ok"
    assert js("array", "list", ["list"], "String") == "ok"           # a variable
    assert js("array", "(1, 2)", [[1, 2]], "integer") == "type_error:simple"


def test_js_dicts():
    gold = [{"a": [1], "b": ["x"]}]
    assert js("dict", "{a: 1, b: 'x'}", gold) == "ok"
    assert js("dict", '{"a": 1, "b": "x"}', gold) == "ok"
    assert js("dict", "{a: '1', b: x}", gold) == "ok"                 # BFCL strips a value's quotes first
    assert js("dict", "{a: 2, b: 'x'}", gold) == "value_error:dict_value"
    assert js("dict", "{a: 1}", gold) == "value_error:dict_key"
    assert js("dict", "{}", [{}]) == "ok"
    assert js("dict", "cfg", ["cfg"]) == "ok"
    assert js_value("{m: [1, 2], p: true}", "dict") == {"m": [1, 2], "p": True}
    assert js_value("{m: {p: true}}", "dict") == {"m": "{p: true"}     # BFCL's pattern ends at the first }


def test_js_unknown_type_is_refused():
    with pytest.raises(InvalidInput, match="did you mean 'Boolean'"):
        js("boolean", "true", [True])
    with pytest.raises(InvalidInput, match="needs items.type"):
        js("array", "[1]", [[1]])


def test_js_rows_read_like_bfcls_pattern_without_its_backtracking():
    # BFCL's 2-D pattern backtracks exponentially on unclosed rows; the same match is found directly
    assert js_value("[[1, 2], [3, 4]] tail", "array", "array") == [[1, 2], [3, 4]]
    assert js_value("new Array([1], [2])", "array", "array") == [[1], [2]]
    assert js_value("[[1],\n[2]]", "array", "array") == [[1], [2]]
    unclosed = "[[" + "], [" * 900
    assert js_value(unclosed, "array", "array") == ["["]               # BFCL's 1-D reading: "[" up to the first ]
    assert js("array", unclosed, [[[1]]], "array") == "type_error:nested"


def test_collection_literal_over_the_limit_is_refused():
    from ek_agents.scoring.bfcl_typed_strings import MAX_COLLECTION_TEXT
    long_array = "new int[]{" + "1," * MAX_COLLECTION_TEXT + "}"
    with pytest.raises(InvalidInput, match=f"over the {MAX_COLLECTION_TEXT}"):
        java("Array", long_array, [[1]], "integer")
    with pytest.raises(InvalidInput, match="collection literal"):
        js("dict", "{" + "a" * MAX_COLLECTION_TEXT + "}", [{}])
    assert java("String", "x" * (2 * MAX_COLLECTION_TEXT), ["x"]) == "value_error:string"  # strings: no limit


# --------------------------------------------------------------------------- categories

def test_language_is_read_from_the_category_as_bfcl_reads_it():
    assert language_of("simple_javascript") == "javascript"
    assert language_of("simple_java") == "java"
    assert language_of("live_simple") == "python"
    doc = fn("F.run", x="long")
    out, gold = [{"F.run": {"x": "5L"}}], [{"F.run": {"x": [5]}}]
    assert bfcl_check([doc], out, gold, "java").valid                 # BFCL's older bare names: simple
    assert bfcl_check([doc], out * 2, gold * 2, "parallel_java").valid
    assert bfcl_check([doc], out, gold, "multiple_java").valid
    with pytest.raises(InvalidInput):
        bfcl_check([doc], out, gold, "simple")                         # Python rules know no "long"


def test_list_of_non_dicts_where_bfcl_fails_is_refused():
    # the "" marker lets BFCL's nested type check pass, then its dict check fails on a list
    doc = fn("F.run", x="array:dict")
    with pytest.raises(InvalidInput, match="not a dict"):
        bfcl_check([doc], [{"F.run": {"x": "[[{k: 1}]]"}}], [{"F.run": {"x": [[{"k": [1]}], ""]}}],
                   "simple_javascript")


def test_module_examples():
    assert doctest.testmod(bfcl_typed_strings).failed == 0


# --------------------------------------------------------------------------- agreement with BFCL

VERDICTS = json.loads((Path(__file__).parent / "bfcl_java_js_verdicts.json").read_text())


@pytest.mark.parametrize("item", VERDICTS["items"], ids=lambda it: next(iter(it["possible_answer"][0])))
def test_agrees_with_verdicts_recorded_from_bfcls_checker(item):
    disagreements = []
    for output, (valid, error_type) in item["cases"]:
        try:
            r = bfcl_check(item["functions"], output, item["possible_answer"], item["category"])
            ours = [r.valid, r.error_type]
        except EkAgentsError:
            ours = ["crash", "refused"]
        if ours[0] == "crash" or valid == "crash":
            if ours[0] != valid:
                disagreements.append((output, [valid, error_type], ours))
        elif ours != [valid, error_type]:
            disagreements.append((output, [valid, error_type], ours))
    assert len(item["cases"]) >= 60
    assert disagreements == []
