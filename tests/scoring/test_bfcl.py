"""bfcl_check: BFCL's shapes, verdicts and error-type names (own cases), and the one deviation."""
import pytest

from ek_agents.scoring import bfcl
from ek_agents.scoring.bfcl import CheckResult, bfcl_check
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.scoring.toolcalls import bfcl_check as reexported, CheckResult as reexported_result


def fn(name, props, required=()):
    return {"name": name, "description": "", "parameters": {"type": "dict", "properties": props,
                                                             "required": list(required)}}


AREA = fn("geometry.area", {"base": {"type": "integer"}, "height": {"type": "float"},
                            "unit": {"type": "string"}}, ["base", "height"])
WEATHER = fn("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"},
                             "metric": {"type": "boolean"}}, ["city"])
LIST = fn("sort_list", {"items": {"type": "array", "items": {"type": "integer"}},
                        "pair": {"type": "tuple", "items": {"type": "string"}}}, ["items"])
DICTS = fn("book", {"guest": {"type": "dict", "properties": {}},
                    "rooms": {"type": "array", "items": {"type": "dict"}},
                    "extra": {"type": "any"}}, [])

AREA_GOLD = [{"geometry.area": {"base": [10], "height": [5.0], "unit": ["cm", "centimeters", ""]}}]


def check(out, gold=AREA_GOLD, funcs=(AREA,), cat="simple", **kw):
    return bfcl_check(list(funcs), out, gold, cat, **kw)


def test_reexported_from_toolcalls():
    assert reexported is bfcl_check and reexported_result is CheckResult


def test_simple_valid_with_standardized_string_and_optional_omitted():
    assert check([{"geometry.area": {"base": 10, "height": 5.0, "unit": "CentiMeters"}}]).valid
    assert check([{"geometry.area": {"base": 10, "height": 5.0}}]) == CheckResult(True, None, ())


def test_int_accepted_for_float_param():
    assert check([{"geometry.area": {"base": 10, "height": 5}}]).valid


@pytest.mark.parametrize("out,error_type", [
    ([], "simple_function_checker:wrong_count"),
    ([{"geometry.area": {"base": 10, "height": 5.0}}] * 2, "simple_function_checker:wrong_count"),
    ([{"area": {"base": 10, "height": 5.0}}], "simple_function_checker:wrong_func_name"),
    ([{"geometry.area": {"base": 10}}], "simple_function_checker:missing_required"),
    ([{"geometry.area": {"base": 10, "height": 5.0, "color": "red"}}], "simple_function_checker:unexpected_param"),
    ([{"geometry.area": {"base": 10.0, "height": 5.0}}], "type_error:simple"),      # float for integer
    ([{"geometry.area": {"base": "10", "height": 5.0}}], "type_error:simple"),      # "10" is not 10
    ([{"geometry.area": {"base": True, "height": 5.0}}], "type_error:simple"),      # a bool is not an int
    ([{"geometry.area": {"base": 11, "height": 5.0}}], "value_error:others"),
    ([{"geometry.area": {"base": 10, "height": 5.0, "unit": "inch"}}], "value_error:string"),
])
def test_simple_error_types(out, error_type):
    r = check(out)
    assert not r.valid and r.error_type == error_type and r.errors


def test_missing_optional():
    gold = [{"get_weather": {"city": ["Paris"], "days": [3]}}]
    r = check([{"get_weather": {"city": "paris"}}], gold, (WEATHER,))
    assert r.error_type == "simple_function_checker:missing_optional"


def test_boolean_param():
    gold = [{"get_weather": {"city": ["Paris"], "metric": [True]}}]
    assert check([{"get_weather": {"city": "Paris", "metric": True}}], gold, (WEATHER,)).valid
    assert check([{"get_weather": {"city": "Paris", "metric": 1}}], gold, (WEATHER,)).error_type == "type_error:simple"
    assert check([{"get_weather": {"city": "Paris", "metric": False}}], gold, (WEATHER,)).error_type == "value_error:others"


def test_variable_escape_accepts_a_value_of_the_golds_type():
    # BFCL: when the gold lists a string for an integer parameter, a string is read as a variable
    gold = [{"get_weather": {"city": ["Paris"], "days": ["n_days"]}}]
    assert check([{"get_weather": {"city": "Paris", "days": "n_days"}}], gold, (WEATHER,)).valid
    assert check([{"get_weather": {"city": "Paris", "days": "other"}}], gold, (WEATHER,)).error_type == "value_error:others"


def test_lists_order_and_nested_types():
    gold = [{"sort_list": {"items": [[3, 1, 2]], "pair": [["a b", "c"], ""]}}]
    assert check([{"sort_list": {"items": [3, 1, 2], "pair": ["A-B", "c"]}}], gold, (LIST,)).valid
    assert check([{"sort_list": {"items": [1, 2, 3]}}], gold, (LIST,)).error_type == "value_error:list/tuple"
    assert check([{"sort_list": {"items": [3, 1, "2"]}}], gold, (LIST,)).error_type == "type_error:nested"
    assert check([{"sort_list": {"items": 3}}], gold, (LIST,)).error_type == "type_error:simple"


def test_dict_and_list_of_dict_checks():
    gold = [{"book": {"guest": [{"name": ["Ann"], "age": [30, ""]}], "rooms": [[{"kind": ["double"]}]], "extra": [""]}}]
    ok = {"book": {"guest": {"name": "ann", "age": 30}, "rooms": [{"kind": "Double"}]}}
    assert check([ok], gold, (DICTS,)).valid
    assert check([{"book": {"guest": {"name": "ann"}, "rooms": [{"kind": "double"}]}}], gold, (DICTS,)).valid
    r = check([{"book": {"guest": {"name": "ann", "vip": True}, "rooms": [{"kind": "double"}]}}], gold, (DICTS,))
    assert r.error_type == "value_error:dict_key"
    r = check([{"book": {"guest": {"name": "bob"}, "rooms": [{"kind": "double"}]}}], gold, (DICTS,))
    assert r.error_type == "value_error:dict_value"
    r = check([{"book": {"guest": {"age": 30}, "rooms": [{"kind": "double"}]}}], gold, (DICTS,))
    assert r.error_type == "value_error:dict_key"
    r = check([{"book": {"guest": {"name": "ann"}, "rooms": [{"kind": "double"}, {"kind": "double"}]}}], gold, (DICTS,))
    assert r.error_type == "value_error:list_dict_count"
    r = check([{"book": {"guest": {"name": "ann"}, "rooms": [{"kind": "single"}]}}], gold, (DICTS,))
    assert r.error_type == "value_error:dict_value"


def test_multiple_picks_the_expected_function():
    gold = [{"get_weather": {"city": ["Paris"]}}]
    assert check([{"get_weather": {"city": "Paris"}}], gold, (AREA, WEATHER), "multiple").valid
    r = check([{"geometry.area": {"base": 1, "height": 1.0}}], gold, (AREA, WEATHER), "multiple")
    assert r.error_type == "simple_function_checker:wrong_func_name"
    r = check([], gold, (AREA, WEATHER), "multiple")
    assert r.error_type == "multiple_function_checker:wrong_count"


def test_parallel_swapped_calls_match():
    gold = [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}]
    out = [{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris"}}]
    assert check(out, gold, (WEATHER,), "parallel").valid
    r = check(out[:1], gold, (WEATHER,), "parallel")
    assert r.error_type == "parallel_function_checker_no_order:wrong_count"
    r = check([out[0], out[0]], gold, (WEATHER,), "parallel")
    assert r.error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_parallel_multiple_category():
    gold = [{"get_weather": {"city": ["Paris"]}}, {"geometry.area": {"base": [1], "height": [2.0]}}]
    out = [{"geometry.area": {"base": 1, "height": 2}}, {"get_weather": {"city": "paris"}}]
    assert check(out, gold, (AREA, WEATHER), "parallel_multiple").valid
    assert check(out, gold, (AREA, WEATHER), "live_parallel_multiple").valid  # BFCL's long names


def _first_fit(functions, outputs, answers):
    """BFCL's own parallel pairing (first-fit), rebuilt on our single-call checker."""
    used = set()
    for ans in answers:
        doc = bfcl._find(functions, next(iter(ans)))
        for j, out in enumerate(outputs):
            if j not in used and bfcl._check_call(doc, out, ans, False).valid:
                used.add(j)
                break
        else:
            return False
    return True


def test_deviation_optimal_matching_accepts_what_first_fit_rejects():
    f = fn("f", {"x": {"type": "integer"}})
    gold = [{"f": {"x": [1, ""]}}, {"f": {"x": [1]}}]
    out = [{"f": {"x": 1}}, {"f": {}}]
    assert not _first_fit([f], out, gold)        # BFCL's verdict: cannot_find_match
    assert bfcl_check([f], out, gold, "parallel").valid  # a valid one-to-one pairing exists
    # where no pairing exists, both agree
    bad = [{"f": {"x": 2}}, {"f": {}}]
    assert not _first_fit([f], bad, gold)
    assert bfcl_check([f], bad, gold, "parallel").error_type == "parallel_function_checker_no_order:cannot_find_match"


def test_underscore_to_dot():
    out = [{"geometry_area": {"base": 10, "height": 5.0}}]
    assert check(out, underscore_to_dot=True).valid
    assert check(out).error_type == "simple_function_checker:wrong_func_name"


def test_bad_inputs():
    with pytest.raises(UnknownName, match="did you mean 'simple'"):
        check([], cat="simpel")
    with pytest.raises(InvalidInput):
        check([{"g": {}}], [{"g": {}}], (AREA,), "multiple")  # gold names an undocumented function
    weird = fn("w", {"a": {"type": "strng"}})
    with pytest.raises(InvalidInput, match="did you mean 'string'"):
        check([{"w": {"a": "x"}}], [{"w": {"a": ["x"]}}], (weird,))


def test_checkresult_roundtrip():
    r = check([{"area": {}}])
    assert CheckResult.from_dict(r.to_dict()) == r


# ------------------------------------------------- BFCL data through the ek-agents metric
AGREEMENT_CASES = [
    ([{"geometry.area": {"base": 10, "height": 5.0, "unit": "CentiMeters"}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 10, "height": 5}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 10}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 10, "height": 5.0, "color": "red"}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 10.0, "height": 5.0}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": "10", "height": 5.0}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": True, "height": 5.0}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 11, "height": 5.0}}], AREA_GOLD, (AREA,)),
    ([{"geometry.area": {"base": 10, "height": 5.0, "unit": "inch"}}], AREA_GOLD, (AREA,)),
    ([{"get_weather": {"city": "paris"}}], [{"get_weather": {"city": ["Paris"], "days": [3]}}], (WEATHER,)),
    ([{"sort_list": {"items": [3, 1, 2], "pair": ["A-B", "c"]}}],
     [{"sort_list": {"items": [[3, 1, 2]], "pair": [["a b", "c"], ""]}}], (LIST,)),
    ([{"sort_list": {"items": [1, 2, 3]}}], [{"sort_list": {"items": [[3, 1, 2]], "pair": [["a b", "c"], ""]}}], (LIST,)),
    ([{"book": {"guest": {"name": "ann"}, "rooms": [{"kind": "Double"}]}}],
     [{"book": {"guest": [{"name": ["Ann"], "age": [30, ""]}], "rooms": [[{"kind": ["double"]}]], "extra": [""]}}], (DICTS,)),
    ([{"book": {"guest": {"name": "ann", "vip": True}, "rooms": [{"kind": "double"}]}}],
     [{"book": {"guest": [{"name": ["Ann"], "age": [30, ""]}], "rooms": [[{"kind": ["double"]}]], "extra": [""]}}], (DICTS,)),
    ([{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Paris"}}],
     [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}], (WEATHER,)),
    ([{"get_weather": {"city": "Rome"}}, {"get_weather": {"city": "Rome"}}],
     [{"get_weather": {"city": ["Paris"]}}, {"get_weather": {"city": ["Rome"]}}], (WEATHER,)),
]


@pytest.mark.parametrize("out,gold,funcs", AGREEMENT_CASES)
def test_tool_call_metric_agrees_with_bfcl_on_bfcl_data(out, gold, funcs):
    from ek_agents.base import tool_grammar
    from ek_agents.scoring.toolcalls import ToolCallMetric

    verdict = bfcl_check(list(funcs), out, gold, "parallel" if len(gold) > 1 else "simple").valid
    m = ToolCallMetric(grammar=tool_grammar(*bfcl.tool_specs(funcs)))
    f1 = m.score(bfcl.model_calls(out), bfcl.gold_calls(gold, funcs)).value
    assert (f1 == 1.0) == verdict


def test_conversion_shapes():
    specs = bfcl.tool_specs([AREA, LIST])
    assert specs[0].required == ("base", "height")
    assert specs[1].params["items"].items == "integer"
    assert bfcl.model_calls([{"f": {"x": 1}}, {"g": {}}]) == [("f", {"x": 1}), ("g", {})]
    with pytest.raises(InvalidInput):
        bfcl.gold_calls([{"f": {"x": 1}}])  # values must be lists
