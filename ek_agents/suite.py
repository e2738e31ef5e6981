"""Task-suite files: a suite of :class:`~ek_agents.base.TaskSpec` s in YAML or JSONL.

:func:`load_suite` reads a file (a local path or any fsspec URL) into a :class:`Suite`;
:func:`dump_suite` writes one. The layout is described by the JSON Schema (draft 2020-12)
shipped as ``ek_agents/schemas/suite.schema.json`` (:func:`suite_schema`).

**YAML** (``.yaml``/``.yml``; a ``.json`` file uses the same layout) -- one document::

    name: shop                 # default: the file's stem
    version: "1.2"             # a string (quote it); default: "sha256:<first 12 of digest>"
    checker: final_state       # default checker of tasks that name none
    description: ...
    tools:                     # shared tool definitions, referenced from tasks by name
      get_order:
        description: Look up one order.
        params:
          order_id: {type: string, required: true, importance: 2}
      refund_order:
        destructive: true      # call weight defaults to DESTRUCTIVE_WEIGHT
        params:
          order_id: {type: string, required: true, importance: 10}
          amount: {type: number, required: true, importance: 20}
          reason: string       # shorthand for {type: string}
    tasks:
      - task_id: t1
        input: "Refund order O-1 in full."
        gold: {final_state: {...}}
        value: 2.0             # default 1.0
        slice: refund
        tools: [get_order, refund_order]   # names, or inline tool definitions
        checker: final_state               # overrides the suite default
        meta: {anything: json}

A task that omits ``tools`` may call every shared tool; ``tools: []`` means none.

**JSONL** (``.jsonl``/``.ndjson``): an optional first line ``{"suite": {...}}`` holding the
suite-level keys above (``name``, ``version``, ``checker``, ``description``, ``tools``,
``meta``), then one task object per line; blank lines are skipped.

Every mistake raises :class:`~ek_agents.errors.SuiteError` naming the file, the line, the
task and the field, with the fix:

>>> import tempfile, os
>>> p = os.path.join(tempfile.mkdtemp(), "s.jsonl")
>>> _ = open(p, "w").write('{"task_id": "t1", "input": "hi", "gold": "HI"}\\n'
...                        '{"task_id": "t2", "input": "yo", "gold": "YO", "value": "high"}\\n')
>>> load_suite(p)
Traceback (most recent call last):
...
ek_agents.errors.SuiteError: ...s.jsonl: task 't2' (line 2): 'value' must be a non-negative number, got 'high'
>>> _ = open(p, "w").write('{"task_id": "t1", "input": "hi", "gold": "HI", "slice": "easy"}\\n')
>>> s = load_suite(p)
>>> s.name, len(s), s.tasks[0].slice, s.digest == sha256_hex(open(p, "rb").read())
('s', 1, 'easy', True)
"""
from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from .base import SCHEMA_VERSION, JsonShape, TaskSpec, ToolSpec
from .core import FIELD_TYPES, FieldSpec, shape
from .errors import EkAgentsError, InvalidInput, SuiteError, UnknownName, did_you_mean
from .parsing import decode_text, parse_json, parse_yaml
from .store import read_url, sha256_hex, write_url

__all__ = ["Suite", "load_suite", "dump_suite", "suite_schema", "parse_suite"]

_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")


@shape()
class Suite(JsonShape):
    """A loaded task suite: its tasks plus the identity that makes two runs comparable.

    ``version`` goes into :class:`~ek_agents.base.RunProvenance` ``.suite_version``;
    ``digest`` is the sha256 of the file's bytes; ``tools`` the shared tool definitions.
    """

    name: str
    version: str
    tasks: tuple[TaskSpec, ...] = ()
    checker: Optional[str] = None
    tools: Mapping[str, ToolSpec] = Field(default_factory=dict)
    description: str = ""
    digest: str = ""
    path: str = ""
    meta: dict = Field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tasks)

    def __iter__(self) -> Iterator[TaskSpec]:
        return iter(self.tasks)

    @property
    def task_ids(self) -> tuple:
        """The task ids, in file order."""
        return tuple(t.task_id for t in self.tasks)

    @property
    def slices(self) -> tuple:
        """The distinct slice labels, in first-seen order (``None`` left out)."""
        return tuple(dict.fromkeys(t.slice for t in self.tasks if t.slice is not None))

    def task(self, task_id: str) -> TaskSpec:
        """The task with this id (unknown -> :class:`~ek_agents.errors.UnknownName`)."""
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise UnknownName(f"suite {self.name!r} has no task {task_id!r}"
                          f"{did_you_mean(str(task_id), self.task_ids)}")

    def by_id(self) -> dict:
        """``{task_id: TaskSpec}`` (the mapping ``metrics.grade`` accepts)."""
        return {t.task_id: t for t in self.tasks}


def suite_schema() -> dict:
    """The suite file's JSON Schema (draft 2020-12), as shipped in ``ek_agents/schemas``."""
    from importlib import resources

    return json.loads(resources.files("ek_agents").joinpath("schemas/suite.schema.json").read_text())


# --------------------------------------------------------------------------- reading

def load_suite(path_or_url: Union[str, os.PathLike]) -> Suite:
    """Read a suite file (YAML or JSONL, see the module docs) through fsspec.

    The format follows the suffix (``.jsonl``/``.ndjson`` -> JSONL; ``.yaml``/``.yml``/
    ``.json`` -> YAML); any other suffix is sniffed. Raises :class:`~ek_agents.errors.SuiteError`
    naming the file, line and field on a malformed file.
    """
    path = os.fspath(path_or_url)
    return parse_suite(read_url(path, what="suite file", invalid=SuiteError), path=path)


def parse_suite(data: Union[bytes, str], *, path: str = "<suite>",
                format: Optional[str] = None) -> Suite:
    """Parse suite bytes (what :func:`load_suite` does after reading the file).

    ``format`` is ``"yaml"`` or ``"jsonl"``; by default it follows ``path``'s suffix.
    """
    if isinstance(data, str):
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise SuiteError(f"{path}: character {exc.start} is a lone UTF-16 surrogate, not "
                             "text; fix the file's encoding") from None
    else:
        raw = bytes(data)
    text = decode_text(raw, where=path, error=SuiteError)
    fmt = format or _format_of(path, text)
    if fmt not in ("yaml", "jsonl"):
        raise SuiteError(f"{path}: unknown suite format {fmt!r}{did_you_mean(fmt, ['yaml', 'jsonl'])}")
    ctx = _Ctx(path)
    if fmt == "jsonl":
        header, task_rows = _read_jsonl(text, ctx)
    else:
        header, task_rows = _read_yaml(text, ctx)
    return _build(header, task_rows, ctx, digest=sha256_hex(raw))


def _format_of(path: str, text: str) -> str:
    low = path.lower()
    if low.endswith(_JSONL_SUFFIXES):
        return "jsonl"
    if low.endswith(_YAML_SUFFIXES):
        return "yaml"
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) > 1 and lines[0].lstrip().startswith("{"):
        try:
            if isinstance(parse_json(lines[0], where=path, error=SuiteError), dict):
                return "jsonl"
        except SuiteError:
            pass
    return "yaml"


class _Ctx:
    """Where we are in the file, for error messages."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines: dict[tuple, int] = {}  # YAML: node path -> 1-based line

    def line(self, *node: Any) -> Optional[int]:
        for i in range(len(node), 0, -1):
            ln = self.lines.get(tuple(node[:i]))
            if ln is not None:
                return ln
        return None

    def error(self, where: str, msg: str) -> SuiteError:
        return SuiteError(f"{self.path}: {where}: {msg}" if where else f"{self.path}: {msg}")


class _Row:
    """One raw task (or header) object and how to point at it."""

    def __init__(self, obj: Any, index: int, node: tuple, line: Optional[int]) -> None:
        self.obj, self.index, self.node, self.line = obj, index, node, line


def _read_jsonl(text: str, ctx: _Ctx) -> tuple[Optional[_Row], list[_Row]]:
    header: Optional[_Row] = None
    rows: list[_Row] = []
    for lineno, ln in enumerate(text.splitlines(), start=1):
        if not ln.strip():
            continue
        try:
            obj = parse_json(ln, where="", error=SuiteError)
        except SuiteError as exc:
            raise ctx.error("", f"line {lineno} {exc}; each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise ctx.error(f"line {lineno}", f"expected a JSON object (a task), got {_show(obj)}")
        if "suite" in obj and "task_id" not in obj:
            if rows or header is not None:
                raise ctx.error(f"line {lineno}", "a {\"suite\": ...} header line must be the "
                                "first line of the file; move it to the top")
            extra = sorted(set(obj) - {"suite"})
            if extra:
                raise ctx.error(f"line {lineno}", f"the header line holds only 'suite', got also {extra}")
            header = _Row(obj["suite"], 0, ("suite",), lineno)
            continue
        rows.append(_Row(obj, len(rows), (len(rows),), lineno))
    return header, rows


def _record_lines(node: Any, at: tuple, lines: dict) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = at + (key.value,)
            lines[sub] = key.start_mark.line + 1
            _record_lines(value, sub, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines[at + (i,)] = item.start_mark.line + 1
            _record_lines(item, at + (i,), lines)


def _read_yaml(text: str, ctx: _Ctx) -> tuple[Optional[_Row], list[_Row]]:
    try:  # aliases/anchors refused, so line recording below never expands a bomb
        doc, node = parse_yaml(text, where=ctx.path, error=SuiteError)
    except SuiteError:
        if not ctx.path.lower().endswith(".json"):
            raise
        # JSON that YAML 1.1 refuses (tabs): plain JSON
        doc, node = parse_json(text, where=ctx.path, error=SuiteError), None
    if node is not None:
        _record_lines(node, (), ctx.lines)
    if doc is None:
        raise ctx.error("", "the file is empty; a suite needs a 'tasks' list")
    if isinstance(doc, list):
        raise ctx.error("line 1", "the top level is a list; put the tasks under 'tasks:' "
                        "(with optional name, version, checker, tools beside it)")
    if not isinstance(doc, dict):
        raise ctx.error("line 1", f"expected a mapping with a 'tasks' list, got {_show(doc)}")
    if "tasks" not in doc:
        raise ctx.error("", "no 'tasks' list; add 'tasks:' with one entry per task")
    tasks = doc["tasks"]
    if not isinstance(tasks, list):
        raise ctx.error(f"line {ctx.line('tasks')}", f"'tasks' must be a list, got {_show(tasks)}")
    header = _Row({k: v for k, v in doc.items() if k not in ("tasks", "$schema")}, 0, (), None)
    rows = [_Row(t, i, ("tasks", i), ctx.line("tasks", i)) for i, t in enumerate(tasks)]
    return header, rows


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


_TOP_KEYS = tuple(f.alias or n for n, f in SuiteDoc.model_fields.items())
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

def _show(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def _validate(model: type, obj: Any, ctx: _Ctx, where, *, in_task: bool, top: tuple = ()) -> Any:
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


def _explain(err: dict, obj: Any, ctx: _Ctx, where, *, in_task: bool, top: tuple) -> SuiteError:
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
            return say(f"unknown type {_show(value)}{hint} (one of {', '.join(_TYPE_NAMES)})")
        return say(f"'items' must be an element type{hint}, got {_show(value)}")
    if field == "schema_version" and kind == "less_than_equal":
        return say(f"'schema_version' {value!r} is newer than this ek-agents reads "
                   f"({SCHEMA_VERSION}); upgrade ek-agents")
    if field is None:  # the entry itself has the wrong shape
        if label.endswith("]") or " argument " in label or label.startswith("tools["):
            what = ("a type name or a mapping (type, importance, required, domain, items)"
                    if " argument " in label or "params[" in label else
                    "a tool name or a definition" if in_task else "a mapping with a 'name'")
            return ctx.error(at, f"{label} must be {what}, got {_show(value)}")
        if label:
            return ctx.error(at, f"{label} must be a mapping (description, destructive, importance, "
                             f"params), got {_show(value)}")
        return ctx.error(at, f"a task must be a mapping with at least 'task_id', got {_show(value)}"
                         if in_task else f"'suite' must be an object, got {_show(value)}")
    if field == "tools":
        must = ("a list of tool names or definitions" if in_task and not label
                else "a mapping of tool name -> definition")
    else:
        must = _MUST.get(field, "valid")
    hint = ""
    if field in ("task_id", "version") and isinstance(value, (int, float)) and not isinstance(value, bool):
        hint = (" (quote it)" if field == "task_id" else
                " (quote it: version: \"1.10\" -- unquoted it is read as a number)")
    return say(f"'{field}' must be {must}, got {_show(value)}{hint}")


def _build(header: Optional[_Row], rows: list[_Row], ctx: _Ctx, *, digest: str) -> Suite:
    hdoc = HeaderDoc()
    if header is not None:
        jsonl = header.line is not None

        def hwhere(path: tuple) -> str:
            ln = header.line if jsonl else ctx.line(*header.node, *path)
            what = "tool definitions" if path[:1] == ("tools",) else "suite header"
            return f"{what} (line {ln})" if ln is not None else what

        top = () if jsonl else tuple(k for k in _TOP_KEYS)
        hdoc = _validate(HeaderDoc, header.obj, ctx, hwhere, in_task=False, top=top)
    shared = _shared_tools(hdoc, header, ctx)
    stem = os.path.basename(ctx.path).split(".")[0] or "suite"
    version = hdoc.version
    version = f"sha256:{digest[:12]}" if version is None else str(version)
    if not rows:
        raise ctx.error("", "the suite has no tasks; add at least one")
    tasks: list[TaskSpec] = []
    seen: dict[str, Optional[int]] = {}
    for row in rows:
        t = _task(row, ctx, shared, hdoc.checker)
        if t.task_id in seen:
            first = seen[t.task_id]
            raise ctx.error(_where_task(row, t.task_id), f"duplicate task_id {t.task_id!r} "
                            f"(first used{f' on line {first}' if first else ''}); task ids must be unique")
        seen[t.task_id] = row.line
        tasks.append(t)
    return Suite(name=hdoc.name if hdoc.name is not None else stem, version=version,
                 tasks=tuple(tasks), checker=hdoc.checker, tools=shared,
                 description=hdoc.description, digest=digest, path=ctx.path, meta=hdoc.meta)


def _where_task(row: _Row, task_id: Any = None, line: Optional[int] = None) -> str:
    who = f"task {task_id!r}" if isinstance(task_id, str) and task_id else f"task #{row.index + 1}"
    ln = row.line if line is None else line
    return f"{who} (line {ln})" if ln is not None else who


def _shared_tools(hdoc: HeaderDoc, header: Optional[_Row], ctx: _Ctx) -> dict:
    node = header.node + ("tools",) if header is not None else ("tools",)
    jsonl = header is not None and header.line is not None

    def where(*sub: Any) -> str:
        ln = header.line if jsonl else ctx.line(*node, *sub)
        return f"tool definitions (line {ln})" if ln is not None else "tool definitions"

    tools = hdoc.tools
    items = (list(tools.items()) if isinstance(tools, dict) else
             [(t.name, t) for t in tools])
    out: dict[str, ToolSpec] = {}
    for i, (name, spec) in enumerate(items):
        sub = (name,) if isinstance(tools, dict) else (i,)
        if name in out:
            raise ctx.error(where(*sub), f"tool {name!r} is defined twice; keep one definition")
        out[name] = _tool(name, spec or ToolDoc(), ctx, lambda *s, _sub=sub: where(*_sub, *s))
    return out


def _tool(name: str, spec: ToolDoc, ctx: _Ctx, where) -> ToolSpec:
    if not name:
        raise ctx.error(where(), f"a tool name must be a non-empty string, got {name!r}")
    if spec.name is not None and spec.name != name:
        raise ctx.error(where("name"), f"tool {name!r} has 'name' {spec.name!r}; they must agree")
    raw = spec.params or {}
    plist = list(raw.items()) if isinstance(raw, dict) else [(p.name, p) for p in raw]
    params: dict[str, FieldSpec] = {}
    for i, (pname, p) in enumerate(plist):
        sub = ("params", pname if isinstance(raw, dict) else i)
        label = f"tool {name!r} argument {pname!r}"
        if not pname:
            raise ctx.error(where(*sub), f"tool {name!r}: an argument name must be a non-empty string")
        if pname in params:
            raise ctx.error(where(*sub), f"tool {name!r}: argument {pname!r} is defined twice")
        p = ParamDoc(type=p) if isinstance(p, str) else p or ParamDoc()
        if p.name is not None and p.name != pname:
            raise ctx.error(where(*sub), f"{label} has 'name' {p.name!r}; they must agree")
        params[pname] = FieldSpec(pname, p.type, float(p.importance),
                                  None if p.domain is None else tuple(p.domain), p.required, p.items)
    return ToolSpec(name, params, importance=None if spec.importance is None else float(spec.importance),
                    destructive=spec.destructive, description=spec.description)


def _task(row: _Row, ctx: _Ctx, shared: Mapping[str, ToolSpec], default_checker: Optional[str]) -> TaskSpec:
    obj = row.obj
    jsonl = not row.node or row.node[0] != "tasks"
    tid = obj.get("task_id") if isinstance(obj, dict) else None

    def where(*sub: Any) -> str:
        return _where_task(row, tid, row.line if jsonl else ctx.line(*row.node, *sub))

    doc = _validate(TaskDoc, obj, ctx, lambda path: where(*path), in_task=True)
    if doc.tools is None:
        tools = tuple(shared.values())
    else:
        picked: list[ToolSpec] = []
        for i, item in enumerate(doc.tools):
            if isinstance(item, str):
                if item not in shared:
                    raise ctx.error(where("tools", i), f"tools[{i}]: unknown tool {item!r}"
                                    f"{did_you_mean(item, shared)} (define it under the suite's "
                                    f"'tools', or inline it here)")
                tool = shared[item]
            else:
                tool = _tool(item.name, item, ctx, lambda *s, _i=i: where("tools", _i, *s))
            if any(t.name == tool.name for t in picked):
                raise ctx.error(where("tools", i), f"tools[{i}]: tool {tool.name!r} is listed twice")
            picked.append(tool)
        tools = tuple(picked)
    checker = doc.checker if doc.checker is not None else default_checker
    return TaskSpec(doc.task_id, doc.input, doc.gold, float(doc.value), tools, doc.slice, checker,
                    doc.meta)


# --------------------------------------------------------------------------- writing

def _param_doc(f: FieldSpec) -> Union[str, dict]:
    d: dict = {"type": f.type}
    if f.importance != 1.0:
        d["importance"] = f.importance
    if f.required:
        d["required"] = True
    if f.domain is not None:
        d["domain"] = list(f.domain)
    if f.items is not None:
        d["items"] = f.items
    return f.type if len(d) == 1 else d


def _tool_doc(t: ToolSpec, *, with_name: bool = False) -> dict:
    d: dict = {"name": t.name} if with_name else {}
    if t.description:
        d["description"] = t.description
    if t.destructive:
        d["destructive"] = True
    if t.importance is not None:
        d["importance"] = t.importance
    d["params"] = {n: _param_doc(f) for n, f in t.params.items()}
    return d


def _jsonable(x: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(x, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise SuiteError(f"dump_suite: {what} is not JSON data ({exc})") from None


def dump_suite(suite_or_tasks: Union[Suite, Iterable[TaskSpec]], path: Union[str, os.PathLike], *,
               name: Optional[str] = None, version: Optional[str] = None,
               checker: Optional[str] = None, description: Optional[str] = None) -> str:
    """Write a suite (or a list of tasks) to ``path`` as YAML or JSONL; returns the sha256.

    Tools that are defined the same way wherever they appear go to the shared ``tools``
    and are referenced by name; a checker every task shares becomes the suite default.
    ``load_suite(path)`` gives the tasks back (tuples in ``input``/``gold`` come back as lists).
    """
    path = os.fspath(path)
    if isinstance(suite_or_tasks, Suite):
        tasks = list(suite_or_tasks.tasks)
        name = name or suite_or_tasks.name
        version = version or suite_or_tasks.version
        description = suite_or_tasks.description if description is None else description
    else:
        tasks = list(suite_or_tasks)
    for t in tasks:
        if not isinstance(t, TaskSpec):
            raise InvalidInput(f"dump_suite: expected TaskSpec objects, got {type(t).__name__}")
    if not tasks:
        raise InvalidInput("dump_suite: no tasks to write")
    defs: dict[str, Optional[ToolSpec]] = {}
    for t in tasks:
        for tool in t.tools:
            if tool.name in defs and defs[tool.name] != tool:
                defs[tool.name] = None  # conflicting definitions: inline them
            else:
                defs.setdefault(tool.name, tool)
    shared = {n: tl for n, tl in defs.items() if tl is not None}
    if checker is None:  # the most common checker becomes the suite default
        counts = Counter(t.checker for t in tasks)
        checker = max(counts, key=lambda c: counts[c])
    header: dict = {"name": name or os.path.basename(path).split(".")[0] or "suite"}
    if version:
        header["version"] = version
    if checker:
        header["checker"] = checker
    if description:
        header["description"] = description
    if shared:
        header["tools"] = {n: _tool_doc(tl) for n, tl in shared.items()}
    all_shared = tuple(shared.values())
    rows = []
    for t in tasks:
        d: dict = {"task_id": t.task_id, "input": _jsonable(t.input, f"task {t.task_id!r} input"),
                   "gold": _jsonable(t.gold, f"task {t.task_id!r} gold")}
        if t.value != 1.0:
            d["value"] = t.value
        if t.slice is not None:
            d["slice"] = t.slice
        if t.tools != all_shared:
            d["tools"] = [tl.name if tl.name in shared else _tool_doc(tl, with_name=True) for tl in t.tools]
        if t.checker != checker:
            d["checker"] = t.checker
        if t.meta:
            d["meta"] = _jsonable(t.meta, f"task {t.task_id!r} meta")
        rows.append(d)
    if path.lower().endswith(_JSONL_SUFFIXES):
        lines = [json.dumps({"suite": header}, ensure_ascii=False)]
        lines += [json.dumps(r, ensure_ascii=False) for r in rows]
        data = ("\n".join(lines) + "\n").encode("utf-8")
    else:
        import yaml

        doc = dict(header, tasks=rows)
        data = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100).encode("utf-8")
    return write_url(path, data, what="suite file")
