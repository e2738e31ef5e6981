"""BFCL interop: check a model's decoded function calls with the Berkeley Function-Calling
Leaderboard's AST rules, on BFCL's own JSON shapes, answering with BFCL's error-type names.

Written from the rules of BFCL's public ``ast_checker.py`` (ShishirPatil/gorilla,
``berkeley-function-call-leaderboard``), for its three languages: Python, Java and JavaScript;
no code carried over.

Inputs, exactly as BFCL stores them:

- ``functions``: function docs ``{"name", "parameters": {"properties": {arg: {"type", "items"}},
  "required": [...]}}``; types ``string integer float boolean array tuple dict any`` (plus the
  JSON-Schema spellings ``number`` -> float and ``object`` -> dict);
- ``model_output``: the decoded calls ``[{name: {arg: value}}]``;
- ``possible_answer``: ``[{name: {arg: [acceptable values]}}]``, ``""`` among the values meaning
  "may be omitted";
- ``category``: ``simple`` | ``multiple`` | ``parallel`` | ``parallel_multiple`` (BFCL's longer
  names such as ``"simple_python"`` or ``"live_parallel_multiple"`` are read the way BFCL reads
  them: ``parallel`` anywhere -> unordered parallel check, else ``multiple`` -> multiple check,
  else simple). The language is read from the category as BFCL reads it: ``javascript`` in
  the name (``"simple_javascript"``) -> JavaScript, else ``java`` -> Java, else Python.

Java and JavaScript arguments are the *typed strings* BFCL's decoder hands over (the source
text of each literal: ``"5L"``, ``"true"``, ``"new int[]{1,2}"``, ``"[1, 2]"``); they are read by
the parameter's Java types (``byte short integer long float double boolean char String any
Array ArrayList HashMap``) or JavaScript types (``String integer float Bigint Boolean array dict
any``) as BFCL's checker reads them (:mod:`ek_agents.scoring.bfcl_typed_strings`), then compared by the
rules above. An argument that is not a string is ``type_error:java`` / ``type_error:js``, as in
BFCL; a type BFCL cannot check (Java ``Set``, ``Hashtable``, ``Queue``, ``Stack``, or a type
outside the language's table) is refused with :class:`~ek_agents.errors.InvalidInput`.

Verdicts and error types equal BFCL's, with **one deliberate deviation**: for the parallel
categories BFCL pairs each expected call with the *first* remaining model call that passes
(first-fit) and so rejects some valid permutations -- e.g. expected ``[f(x=[1, ""]), f(x=[1])]``
(the first accepts ``x=1`` or an omitted ``x``, the second only ``x=1``) against the output
``[f(x=1), f()]``: first-fit gives ``f(x=1)`` to the first expectation and then finds nothing
for the second. Here the pairing is a perfect bipartite matching (the assignment solver of
:mod:`ek_agents.scoring.assignment`), which accepts every output for which a valid one-to-one pairing
exists; when none exists the verdict and the error type
(``parallel_function_checker_no_order:cannot_find_match``) are BFCL's.

>>> fns = [{"name": "calc_area", "parameters": {"type": "dict", "properties": {
...     "base": {"type": "integer"}, "unit": {"type": "string"}}, "required": ["base"]}}]
>>> bfcl_check(fns, [{"calc_area": {"base": 10, "unit": "CM"}}],
...            [{"calc_area": {"base": [10], "unit": ["cm", ""]}}], "simple")
CheckResult(valid=True, error_type=None, errors=())
>>> bfcl_check(fns, [{"calc_area": {"base": 10.0}}], [{"calc_area": {"base": [10], "unit": ["cm", ""]}}],
...            "simple").error_type
'type_error:simple'
>>> jfns = [{"name": "Cache.put", "parameters": {"type": "dict", "properties": {
...     "ttl": {"type": "long"}, "sync": {"type": "boolean"}}, "required": ["ttl"]}}]
>>> bfcl_check(jfns, [{"Cache.put": {"ttl": "60L", "sync": "true"}}],
...            [{"Cache.put": {"ttl": [60], "sync": [True, ""]}}], "simple_java").valid
True
>>> bfcl_check(jfns, [{"Cache.put": {"ttl": "60"}}], [{"Cache.put": {"ttl": [60], "sync": [True, ""]}}],
...            "simple_java").error_type
'type_error:simple'
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

from pydantic import Field

from .argmatch import OMITTED, AnyOf, standardize_string
from .assignment import min_cost_assignment
from ..base import ToolSpec, JsonShape
from ..core import FieldSpec, shape
from .bfcl_typed_strings import language_of, typed_value, value_types
from ..errors import InvalidInput, UnknownName, did_you_mean

__all__ = ["bfcl_check", "CheckResult", "CATEGORIES", "BFCL_TYPES", "tool_specs", "gold_calls",
           "model_calls"]

#: The categories :func:`bfcl_check` understands (and BFCL names containing them).
CATEGORIES = ("simple", "multiple", "parallel", "parallel_multiple")

#: BFCL parameter type -> the Python type a decoded value must have.
BFCL_TYPES = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "object": dict, "any": str,
}
_NESTED = ("array", "tuple")
#: BFCL's error type for a Java / JavaScript argument that is not a typed string.
_NOT_TYPED = {"java": "type_error:java", "javascript": "type_error:js"}


@shape()
class CheckResult(JsonShape):
    """BFCL's verdict: ``valid``, the BFCL ``error_type`` (None when valid), and messages."""

    valid: bool
    error_type: Optional[str] = None
    errors: tuple = Field(default=())


def _ok() -> CheckResult:
    return CheckResult(True, None, ())


def _fail(error_type: str, *messages: str) -> CheckResult:
    return CheckResult(False, error_type, tuple(messages))


# --------------------------------------------------------------------------- value checkers

def _first_type(possible: Sequence) -> Optional[type]:
    """The type of the first acceptable value that is not the "may be omitted" marker."""
    for a in possible:
        if a != "":
            return type(a)
    return None


def _type_check(param: str, value: Any, possible: Any, type_name: str, expected: type,
                nested: Optional[type]) -> tuple[Optional[CheckResult], bool]:
    """``(failure or None, is_variable)``: BFCL's type rule, including its "variable" escape
    (a value of the gold's own type is accepted as a variable reference)."""
    pa_type = _first_type(possible)
    is_variable = pa_type is not None and pa_type is not expected
    failure = None
    if type(value) is expected:
        if nested is None:
            return None, is_variable
        for item in possible:
            fine = True
            if type(item) is list:
                for v in value:
                    sub, _ = _type_check(param, v, item, nested.__name__, nested, None)
                    if sub is not None:
                        fine = False
                        break
            if fine:
                return None, is_variable
        failure = _fail("type_error:nested",
                        f"nested type check failed for {param!r}: expected {type_name} of {nested.__name__}, got {value!r}")
    if pa_type is not None and type(value) is pa_type:
        return failure, True
    return _fail("type_error:simple",
                 f"incorrect type for {param!r}: expected {type_name}, got {type(value).__name__} ({value!r})"), is_variable


def _std_all(values: Any) -> list:
    return [standardize_string(v) if type(v) is str else v for v in values]


def _string_check(param: str, value: str, possible: Sequence) -> Optional[CheckResult]:
    if standardize_string(value) not in [standardize_string(a) for a in possible if type(a) is str]:
        return _fail("value_error:string", f"invalid value for {param!r}: {value!r}; expected one of {list(possible)!r}")
    return None


def _list_check(param: str, value: Sequence, possible: Sequence) -> Optional[CheckResult]:
    if _std_all(value) not in [_std_all(a) for a in possible]:
        return _fail("value_error:list/tuple", f"invalid value for {param!r}: {value!r}; expected one of {list(possible)!r}")
    return None


def _dict_check(param: str, value: Mapping, possible: Sequence) -> Optional[CheckResult]:
    if not isinstance(value, Mapping):  # BFCL's checker fails here (the "" marker passed the type check)
        raise InvalidInput(f"BFCL list-of-dicts parameter {param!r} holds {value!r:.80}, not a dict, where "
                           f"BFCL's checker fails; give a list of dicts (or omit the optional parameter)")
    failure = _fail("dict_checker:unclear", f"no acceptable dict for {param!r}")
    for cand in possible:
        if cand == "":
            continue
        failure = None
        for k, v in value.items():
            if k not in cand:
                failure = _fail("value_error:dict_key", f"unexpected dict key {k!r} in {param!r}")
                break
            if (standardize_string(v) if type(v) is str else v) not in _std_all(cand[k]):
                failure = _fail("value_error:dict_value", f"invalid value for dict key {k!r} in {param!r}: {v!r}")
                break
        for k, acceptable in cand.items():
            if k not in value and "" not in acceptable:
                failure = _fail("value_error:dict_key", f"missing dict key {k!r} in {param!r}")
                break
        if failure is None:
            return None
    return failure


def _list_dict_check(param: str, value: Sequence, possible: Sequence) -> Optional[CheckResult]:
    failure = _fail("list_dict_checker:unclear", f"no acceptable list of dicts for {param!r}")
    for cand in possible:
        if len(value) != len(cand):
            failure = _fail("value_error:list_dict_count", f"wrong number of dicts in {param!r}")
            continue
        failure = None
        for v, c in zip(value, cand):
            failure = _dict_check(param, v, [c])
            if failure is not None:
                break
        if failure is None:
            return None
    return failure


# --------------------------------------------------------------------------- one call

def _name(doc: Mapping, underscore_to_dot: bool) -> str:
    name = doc["name"]
    return name.replace(".", "_") if underscore_to_dot and "." in name else name


def _param_types(doc: Mapping, param: str, details: Mapping) -> tuple[str, type, Optional[type]]:
    spec = details[param]
    t = spec.get("type")
    if t not in BFCL_TYPES:
        raise InvalidInput(
            f"BFCL function {doc.get('name')!r}: parameter {param!r} has type {t!r}"
            f"{did_you_mean(str(t), BFCL_TYPES)} (one of {sorted(BFCL_TYPES)})"
        )
    nested = None
    if t in _NESTED:
        it = (spec.get("items") or {}).get("type")
        if it not in BFCL_TYPES:
            raise InvalidInput(f"BFCL function {doc.get('name')!r}: array parameter {param!r} needs items.type, got {it!r}")
        nested = BFCL_TYPES[it]
    return t, BFCL_TYPES[t], nested


def _check_call(doc: Mapping, output: Any, answer: Mapping, underscore_to_dot: bool,
                language: str = "python") -> CheckResult:
    """BFCL's simple_function_checker: one decoded call against one expected call."""
    possible = next(iter(answer.values()))
    params = doc.get("parameters") or {}
    details = params.get("properties") or {}
    required = params.get("required") or []
    name = _name(doc, underscore_to_dot)
    if not isinstance(output, Mapping) or name not in output:
        return _fail("simple_function_checker:wrong_func_name", f"function {name!r} not found in model output {output!r:.120}")
    args = output[name]
    if not isinstance(args, Mapping):
        raise InvalidInput(f"BFCL model output for {name!r}: arguments must be a dict, got {args!r:.80}")
    for param in required:
        if param not in args:
            return _fail("simple_function_checker:missing_required", f"missing required parameter {param!r}")
    for param, value in args.items():
        if param not in details or param not in possible:
            return _fail("simple_function_checker:unexpected_param", f"unexpected parameter {param!r}")
        acceptable = possible[param]
        if language == "python":
            type_name, expected, nested = _param_types(doc, param, details)
            if type_name == "tuple" and type(value) is tuple:
                value = list(value)
            if type_name in ("float", "number") and type(value) is int:
                value = float(value)  # BFCL: an int is accepted for a float parameter
        else:
            type_name, expected, items, nested = value_types(language, str(doc.get("name")), param, details[param])
            if type(value) is not str:
                return _fail(_NOT_TYPED[language],
                             f"incorrect type for {param!r}: expected the {language} source text of "
                             f"a {type_name} as a string, got {type(value).__name__} ({value!r:.80})")
            value = typed_value(language, value, type_name, items)
        failure, is_variable = _type_check(param, value, acceptable, type_name, expected, nested)
        if failure is not None:
            return failure
        if not is_variable:
            if expected is dict:
                failure = _dict_check(param, value, acceptable)
            elif expected is list and nested is dict:
                failure = _list_dict_check(param, value, acceptable)
            elif expected is str:
                failure = _string_check(param, value, acceptable)
            elif expected is list:
                failure = _list_check(param, value, acceptable)
            else:
                failure = _others(param, value, acceptable)
        else:
            failure = _others(param, value, acceptable)
        if failure is not None:
            return failure
    for param, acceptable in possible.items():
        if param not in args and "" not in acceptable:
            return _fail("simple_function_checker:missing_optional",
                         f"optional parameter {param!r} not provided and not marked as optional")
    return _ok()


def _others(param: str, value: Any, acceptable: Sequence) -> Optional[CheckResult]:
    if value not in acceptable:
        return _fail("value_error:others", f"invalid value for {param!r}: {value!r}; expected one of {list(acceptable)!r}")
    return None


# --------------------------------------------------------------------------- the categories

def _docs(functions: Any) -> list:
    """BFCL function docs as a list (one doc may be given alone)."""
    return [functions] if isinstance(functions, Mapping) else list(functions)


def _find(functions: Sequence, name: str) -> Mapping:
    for doc in functions:
        if doc.get("name") == name:
            return doc
    raise InvalidInput(
        f"BFCL possible answer names function {name!r}, which is not among the function docs"
        f"{did_you_mean(name, [str(d.get('name')) for d in functions])}"
    )


def _category(category: str) -> str:
    if not isinstance(category, str):
        raise InvalidInput(f"BFCL category must be a string, got {category!r}")
    if "parallel" in category:
        return "parallel"
    if "multiple" in category:
        return "multiple"
    if "simple" in category or language_of(category) != "python":
        return "simple"
    raise UnknownName(f"unknown BFCL category {category!r}{did_you_mean(category, CATEGORIES)} (one of {CATEGORIES})")


def bfcl_check(functions: Any, model_output: Sequence, possible_answer: Sequence, category: str, *,
               underscore_to_dot: bool = False) -> CheckResult:
    """Check a decoded model output against BFCL's possible answers (see the module doc).

    ``underscore_to_dot`` mirrors BFCL's handling of models (OpenAI, Mistral, Google) whose
    function names cannot contain ``.``: a documented name ``math.factorial`` is then expected
    as ``math_factorial`` in the output.
    """
    kind = _category(category)
    language = language_of(category)
    docs = _docs(functions)
    outputs = list(model_output)
    answers = list(possible_answer)
    if not docs or not answers:
        raise InvalidInput("bfcl_check needs at least one function doc and one possible answer")
    if kind == "simple":
        if len(outputs) != 1:
            return _fail("simple_function_checker:wrong_count", "wrong number of functions")
        return _check_call(docs[0], outputs[0], answers[0], underscore_to_dot, language)
    if kind == "multiple":
        if len(outputs) != len(answers):
            return _fail("multiple_function_checker:wrong_count", "wrong number of functions")
        doc = _find(docs, next(iter(answers[0])))
        return _check_call(doc, outputs[0], answers[0], underscore_to_dot, language)
    if len(outputs) != len(answers):
        return _fail("parallel_function_checker_no_order:wrong_count", "wrong number of functions")
    results = []
    for ans in answers:
        doc = _find(docs, next(iter(ans)))
        results.append([_check_call(doc, out, ans, underscore_to_dot, language) for out in outputs])
    cost = [[0.0 if r.valid else 1.0 for r in row] for row in results]
    pairs = min_cost_assignment(cost)
    bad = [(i, j) for i, j in pairs if cost[i][j]]
    if not bad:
        return _ok()
    i = bad[0][0]
    return _fail("parallel_function_checker_no_order:cannot_find_match",
                 f"no one-to-one pairing of the model output with the possible answers; e.g. possible "
                 f"answer {i} matches none of the outputs left for it",
                 *(f"output {j}: {results[i][j].error_type}" for j in range(len(outputs))))


# --------------------------------------------------------------------------- conversion

_FIELD_TYPE = {"string": "string", "integer": "integer", "float": "float", "number": "number",
               "boolean": "boolean", "array": "array", "tuple": "tuple", "dict": "dict",
               "object": "dict", "any": "any"}


def tool_specs(functions: Any) -> tuple:
    """BFCL function docs as :class:`~ek_agents.base.ToolSpec` s (types, ``items``, ``required``),
    for :func:`ek_agents.base.tool_grammar` and the ek-agents metrics.

    >>> [t.name for t in tool_specs([{"name": "f", "parameters": {"properties": {"x": {"type": "integer"}},
    ...                                                            "required": ["x"]}}])]
    ['f']
    """
    out = []
    for doc in _docs(functions):
        params = doc.get("parameters") or {}
        required = set(params.get("required") or [])
        fields = {}
        for name, spec in (params.get("properties") or {}).items():
            t = spec.get("type")
            if t not in _FIELD_TYPE:
                raise InvalidInput(f"BFCL function {doc.get('name')!r}: parameter {name!r} has type {t!r}"
                                   f"{did_you_mean(str(t), _FIELD_TYPE)}")
            items = (spec.get("items") or {}).get("type") if t in _NESTED else None
            fields[name] = FieldSpec(name, _FIELD_TYPE[t], required=name in required,
                                     items=_FIELD_TYPE.get(items) if items else None)
        out.append(ToolSpec(doc["name"], fields, description=str(doc.get("description", ""))))
    return tuple(out)


def _acceptable(values: Any, spec: Mapping) -> Any:
    if not isinstance(values, list):
        raise InvalidInput(f"BFCL possible answer values must be a list of acceptable values, got {values!r:.80}")
    t = spec.get("type")
    item_t = (spec.get("items") or {}).get("type")
    alts = []
    for v in values:
        if isinstance(v, str) and v == "":
            alts.append(OMITTED)
        elif t in ("dict", "object") and isinstance(v, Mapping):
            alts.append({k: _acceptable(x, {}) for k, x in v.items()})
        elif t in _NESTED and item_t in ("dict", "object") and isinstance(v, list):
            alts.append([{k: _acceptable(x, {}) for k, x in d.items()} for d in v])
        else:
            alts.append(v)
    return alts[0] if len(alts) == 1 and alts[0] is not OMITTED else AnyOf(*alts)


def gold_calls(possible_answer: Sequence, functions: Any = ()) -> list:
    """BFCL possible answers as gold calls: each list of acceptable values becomes
    :class:`~ek_agents.scoring.argmatch.AnyOf` (``""`` -> :data:`~ek_agents.scoring.argmatch.OMITTED`); with the
    function docs, dict-typed parameters' nested possible answers are converted too.

    >>> gold_calls([{"f": {"x": [1, 2], "unit": ["cm", ""]}}])
    [('f', {'x': AnyOf(1, 2), 'unit': AnyOf('cm', OMITTED)})]
    """
    by_name = {d.get("name"): d for d in _docs(functions)}
    out = []
    for entry in possible_answer:
        if not isinstance(entry, Mapping) or len(entry) != 1:
            raise InvalidInput(f"a BFCL possible answer is {{name: {{arg: [values]}}}}, got {entry!r:.80}")
        (name, args), = entry.items()
        props = ((by_name.get(name) or {}).get("parameters") or {}).get("properties") or {}
        out.append((name, {a: _acceptable(vals, props.get(a) or {}) for a, vals in args.items()}))
    return out


def model_calls(model_output: Sequence) -> list:
    """A decoded BFCL model output ``[{name: {arg: value}}]`` as ``(tool, args)`` calls."""
    out = []
    for entry in model_output:
        if not isinstance(entry, Mapping):
            raise InvalidInput(f"a BFCL model output entry is {{name: {{arg: value}}}}, got {entry!r:.80}")
        out.extend((name, dict(args)) for name, args in entry.items())
    return out
