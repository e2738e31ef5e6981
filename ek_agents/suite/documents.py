"""The suite file's layout as pydantic models (what ``suite.schema.json`` is built from), and
validation against them with messages that name the file, the line, the task and the field,
with the fix.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from ..base import SCHEMA_VERSION
from ..core import FIELD_TYPES
from ..errors import SuiteError, did_you_mean
from .reading import ReadContext, show

# ----------------------------------------------------------------- the format, defined once
#
# The pydantic models below ARE the suite format: load_suite validates every header and task
# with them, and ek_agents/schemas/suite.schema.json is generated from them
# (:func:`build_suite_schema`; a test asserts the shipped file equals it). What they cannot
# say -- references between tasks and shared tools, unique ids and names, defaults taken
# from the file -- is checked by hand in :func:`_build`; turning a pydantic error into a
# message naming the file, line, task and field is :func:`_explain`.

_TYPE_NAMES = tuple(sorted(FIELD_TYPES))
_FieldType = Literal[_TYPE_NAMES]  # type: ignore[valid-type]
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Text = Annotated[str, Field(min_length=1)]


def _json_kind(v: Any) -> Optional[str]:
    """The JSON type of ``v``: which branch of a union validates it (one error, not one per branch)."""
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    return "null" if v is None else None


def _by_kind(**branches: Any) -> Any:
    return Annotated[Union[tuple(Annotated[t, Tag(k)] for k, t in branches.items())],
                     Discriminator(_json_kind)]


class _Doc(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=False)


class ParamDoc(_Doc):
    """One tool argument (a FieldSpec) in its mapping form."""

    model_config = ConfigDict(title="param")
    name: Optional[str] = None
    type: _FieldType = "string"
    importance: _NonNegative = Field(1.0, description="Cost of getting this argument wrong.")
    required: bool = False
    domain: Optional[list] = Field(None, description="The allowed values.")
    items: Optional[_FieldType] = None
    description: Optional[str] = None


class NamedParamDoc(ParamDoc):
    model_config = ConfigDict(title="named_param")
    name: _Text


#: An argument: a bare type name, null (a string), or a mapping.
_ParamEntry = _by_kind(string=_FieldType, null=None, object=ParamDoc)


class ToolDoc(_Doc):
    """A tool definition (a ToolSpec)."""

    model_config = ConfigDict(title="tool_body")
    name: Optional[_Text] = None
    description: str = ""
    destructive: bool = Field(False, description="Mutates the world irreversibly (call weight "
                                                 "defaults to DESTRUCTIVE_WEIGHT).")
    importance: Optional[_NonNegative] = None
    params: _by_kind(null=None, object=dict[str, _ParamEntry], array=list[NamedParamDoc]) = None


class NamedToolDoc(ToolDoc):
    model_config = ConfigDict(title="named_tool")
    name: _Text


class TaskDoc(_Doc):
    """One task: a line of a JSONL suite, an item of a YAML suite's ``tasks``."""

    model_config = ConfigDict(title="task")
    task_id: _Text
    input: Any = None
    gold: Any = None
    value: _NonNegative = Field(1.0, description="What a completed task is worth.")
    slice: Optional[_Text] = None
    tools: list[_by_kind(string=str, object=NamedToolDoc)] = Field(
        None, description="Names of shared tools or inline definitions; omitted = every shared tool.")
    checker: Optional[_Text] = Field(None, description="A checker name: output, final_state, "
                                     "recorded, or any name metrics.get_checker knows.")
    meta: dict = Field(default_factory=dict)


class HeaderDoc(_Doc):
    """The suite-level keys (a YAML suite's top level, a JSONL suite's first line's 'suite')."""

    model_config = ConfigDict(title="header")
    schema_version: Annotated[int, Field(le=SCHEMA_VERSION)] = SCHEMA_VERSION
    name: _Text = Field(None, description="Default: the file's stem.")
    version: Union[_Text, int] = Field(None, description="RunProvenance.suite_version; quote it "
                                       "in YAML. Default: sha256:<first 12 hex of the file digest>.")
    checker: Optional[_Text] = Field(None, description="The default checker of tasks that name none.")
    description: str = ""
    meta: dict = Field(default_factory=dict)
    tools: _by_kind(object=dict[str, Optional[ToolDoc]], array=list[NamedToolDoc]) = Field(
        default_factory=dict, description="Shared tool definitions, referenced from tasks by name.")


class SuiteDoc(HeaderDoc):
    """A YAML (or JSON) suite document."""

    model_config = ConfigDict(title="ek-agents task suite")
    schema_: Optional[str] = Field(None, alias="$schema")
    tasks: Annotated[list[TaskDoc], Field(min_length=1)]


class HeaderLine(_Doc):
    """The optional first line of a JSONL suite."""

    model_config = ConfigDict(title="header_line")
    suite: HeaderDoc


def build_suite_schema() -> dict:
    """The suite format's JSON Schema (draft 2020-12), generated from the models above
    (what ``ek_agents/schemas/suite.schema.json`` holds)."""
    from pydantic.json_schema import models_json_schema  # only when generating (tests, releases)

    _, top = models_json_schema([(SuiteDoc, "validation"), (HeaderLine, "validation")],
                                ref_template="#/$defs/{model}")
    defs = top["$defs"]
    names = {k: v.get("title", k) for k, v in defs.items()}
    text = json.dumps(defs)
    for old, new in names.items():
        text = text.replace(f'"#/$defs/{old}"', f'"#/$defs/{new}"')
    defs = {names[k]: v for k, v in json.loads(text).items()}
    root = defs.pop("ek-agents task suite")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://ek-agents.invalid/schemas/suite.schema.json",
            **root, "description": root.get("description", "") + " A JSONL suite is an optional "
            "first line {\"suite\": <header>} (#/$defs/header_line) followed by one #/$defs/task "
            "per line.", "$defs": dict(sorted(defs.items()))}


TOP_KEYS = tuple(f.alias or n for n, f in SuiteDoc.model_fields.items())
_MUST = {
    "task_id": "a non-empty string", "name": "a non-empty string", "version": "a string",
    "value": "a non-negative number", "importance": "a non-negative number",
    "slice": "a string label", "checker": "a checker name such as 'final_state'",
    "meta": "a mapping", "description": "a string", "destructive": "true or false",
    "required": "true or false", "domain": "a list of allowed values",
    "params": "a mapping of argument name -> definition", "schema_version": "an integer",
    "$schema": "a string",
}
_MISSING = object()


# --------------------------------------------------------------------------- validating

def validate(model: type, obj: Any, ctx: ReadContext, where, *, in_task: bool, top: tuple = ()) -> Any:
    """``model`` validated from ``obj``, or the SuiteError :func:`_explain` makes of the
    first problem (``where(path)`` names the place of a path inside ``obj``)."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise _explain(exc.errors()[0], obj, ctx, where, in_task=in_task, top=top) from None


def _locate(obj: Any, loc: tuple) -> tuple:
    """``(path, value)``: the pydantic ``loc`` as keys and indices into ``obj`` (union
    branch tags dropped), and the value there (``_MISSING`` for a missing key)."""
    path: list = []
    cur = obj
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
        elif isinstance(cur, dict) and i == len(loc) - 1 and isinstance(part, str):
            cur = _MISSING
        else:
            continue
        path.append(part)
    return tuple(path), cur


def _owner(obj: Any, path: tuple) -> tuple:
    """``(label, rest)``: who the path is about (``tool 'x'``, ``tool 'x' argument 'a'``,
    or ``""``) and the rest of the path below it."""
    label, i, cur = "", 0, obj
    while i < len(path):
        key = path[i]
        if key in ("tools", "params") and i + 1 < len(path) and isinstance(cur, dict):
            coll = cur.get(key)
            item = coll[path[i + 1]]
            name = path[i + 1] if isinstance(coll, dict) else (item.get("name") if isinstance(item, dict) else None)
            if key == "tools":
                label = f"tool {name!r}" if name is not None else f"tools[{path[i + 1]}]"
            else:
                label = f"{label} argument {name!r}" if name is not None else f"{label}: params[{path[i + 1]}]"
            cur, i = item, i + 2
            continue
        break
    return label, path[i:]


def _explain(err: dict, obj: Any, ctx: ReadContext, where, *, in_task: bool, top: tuple) -> SuiteError:
    path, value = _locate(obj, tuple(err["loc"]))
    label, rest = _owner(obj, path)
    kind, at = err["type"], where(path)
    field = rest[0] if len(rest) == 1 and isinstance(rest[0], str) else None
    say = (lambda msg: ctx.error(at, f"{label}: {msg}")) if label else (lambda msg: ctx.error(at, msg))
    if kind == "missing":
        if field == "task_id":
            return say("missing 'task_id'; give every task a unique string id")
        return say(f"missing {field!r}")
    if kind == "extra_forbidden":
        key = path[-1]
        if label.startswith("tool") and " argument " in label:
            allowed, what = tuple(ParamDoc.model_fields), f"key of {label}:"
            return ctx.error(at, f"unknown {what} {key!r}{did_you_mean(str(key), allowed)} "
                             f"(allowed: {', '.join(allowed)})")
        if label:
            allowed, what = tuple(ToolDoc.model_fields), f"key of {label}:"
        elif in_task:
            allowed, what = tuple(TaskDoc.model_fields), "task key"
        else:
            allowed, what = top or tuple(HeaderDoc.model_fields), "key" if top else "suite key"
        shown = ", ".join(k for k in allowed if k != "$schema")
        return ctx.error(at, f"unknown {what} {key!r}{did_you_mean(str(key), allowed)} (allowed: {shown})")
    if kind == "literal_error" and field is None:  # an argument's shorthand: a type name
        field = "type"
    if field in ("type", "items") and kind == "literal_error":
        hint = did_you_mean(str(value), _TYPE_NAMES)
        if field == "type":
            return say(f"unknown type {show(value)}{hint} (one of {', '.join(_TYPE_NAMES)})")
        return say(f"'items' must be an element type{hint}, got {show(value)}")
    if field == "schema_version" and kind == "less_than_equal":
        return say(f"'schema_version' {value!r} is newer than this ek-agents reads "
                   f"({SCHEMA_VERSION}); upgrade ek-agents")
    if field is None:  # the entry itself has the wrong shape
        if label.endswith("]") or " argument " in label or label.startswith("tools["):
            what = ("a type name or a mapping (type, importance, required, domain, items)"
                    if " argument " in label or "params[" in label else
                    "a tool name or a definition" if in_task else "a mapping with a 'name'")
            return ctx.error(at, f"{label} must be {what}, got {show(value)}")
        if label:
            return ctx.error(at, f"{label} must be a mapping (description, destructive, importance, "
                             f"params), got {show(value)}")
        return ctx.error(at, f"a task must be a mapping with at least 'task_id', got {show(value)}"
                         if in_task else f"'suite' must be an object, got {show(value)}")
    if field == "tools":
        must = ("a list of tool names or definitions" if in_task and not label
                else "a mapping of tool name -> definition")
    else:
        must = _MUST.get(field, "valid")
    hint = ""
    if field in ("task_id", "version") and isinstance(value, (int, float)) and not isinstance(value, bool):
        hint = (" (quote it)" if field == "task_id" else
                " (quote it: version: \"1.10\" -- unquoted it is read as a number)")
    return say(f"'{field}' must be {must}, got {show(value)}{hint}")
