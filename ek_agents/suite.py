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
from typing import Any, Optional, Union

from pydantic import Field

from .base import SCHEMA_VERSION, TaskSpec, ToolSpec, _JsonShape
from .core import FIELD_TYPES, FieldSpec, shape
from .errors import EkAgentsError, InvalidInput, SuiteError, UnknownName, did_you_mean
from .parsing import decode_text, parse_json, parse_yaml
from .store import read_url, sha256_hex, write_url

__all__ = ["Suite", "load_suite", "dump_suite", "suite_schema", "parse_suite"]

_TOP_KEYS = ("name", "version", "checker", "description", "tools", "tasks", "meta",
             "schema_version", "$schema")
_HEADER_KEYS = ("name", "version", "checker", "description", "tools", "meta", "schema_version")
_TASK_KEYS = ("task_id", "input", "gold", "value", "slice", "tools", "checker", "meta")
_TOOL_KEYS = ("name", "description", "destructive", "importance", "params")
_PARAM_KEYS = ("name", "type", "importance", "required", "domain", "items", "description")
_JSONL_SUFFIXES = (".jsonl", ".ndjson")
_YAML_SUFFIXES = (".yaml", ".yml", ".json")


@shape()
class Suite(_JsonShape):
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
    _check_keys(doc, _TOP_KEYS, ctx, "top level", "key")
    if "tasks" not in doc:
        raise ctx.error("", "no 'tasks' list; add 'tasks:' with one entry per task")
    tasks = doc["tasks"]
    if not isinstance(tasks, list):
        raise ctx.error(f"line {ctx.line('tasks')}", f"'tasks' must be a list, got {_show(tasks)}")
    header = _Row({k: v for k, v in doc.items() if k not in ("tasks", "$schema")}, 0, (), None)
    rows = [_Row(t, i, ("tasks", i), ctx.line("tasks", i)) for i, t in enumerate(tasks)]
    return header, rows


# --------------------------------------------------------------------------- validating

def _show(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 60 else s[:57] + "..."


def _check_keys(obj: Mapping, allowed: Sequence[str], ctx: _Ctx, where: str, what: str) -> None:
    for key in obj:
        if key not in allowed:
            raise ctx.error(where, f"unknown {what} {key!r}{did_you_mean(str(key), allowed)}"
                            f" (allowed: {', '.join(k for k in allowed if k != '$schema')})")


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _build(header: Optional[_Row], rows: list[_Row], ctx: _Ctx, *, digest: str) -> Suite:
    h: dict = {}
    hwhere = "suite header"
    if header is not None:
        if not isinstance(header.obj, dict):
            raise ctx.error(f"line {header.line}", f"'suite' must be an object, got {_show(header.obj)}")
        h = header.obj
        if header.line is not None:  # JSONL header
            hwhere = f"suite header (line {header.line})"
            _check_keys(h, _HEADER_KEYS, ctx, hwhere, "suite key")

    def hw(key: str) -> str:
        ln = ctx.line(*header.node, key) if header is not None and header.line is None else None
        return f"{hwhere} (line {ln})" if ln is not None else hwhere

    sv = h.get("schema_version", SCHEMA_VERSION)
    if not isinstance(sv, int) or isinstance(sv, bool) or sv > SCHEMA_VERSION:
        raise ctx.error(hw("schema_version"), f"'schema_version' {sv!r} is newer than this "
                        f"ek-agents reads ({SCHEMA_VERSION}); upgrade ek-agents")
    stem = os.path.basename(ctx.path).split(".")[0] or "suite"
    name = h.get("name", stem)
    if not isinstance(name, str) or not name:
        raise ctx.error(hw("name"), f"'name' must be a non-empty string, got {_show(name)}")
    version = h.get("version")
    if version is None:
        version = f"sha256:{digest[:12]}"
    elif isinstance(version, int) and not isinstance(version, bool):
        version = str(version)
    elif not isinstance(version, str) or not version:
        raise ctx.error(hw("version"), f"'version' must be a string, got {_show(version)}"
                        " (quote it: version: \"1.10\" -- unquoted it is read as a number)")
    checker = h.get("checker")
    if checker is not None and (not isinstance(checker, str) or not checker):
        raise ctx.error(hw("checker"), f"'checker' must be a checker name such as 'final_state', "
                        f"got {_show(checker)}")
    description = h.get("description", "")
    if not isinstance(description, str):
        raise ctx.error(hw("description"), f"'description' must be a string, got {_show(description)}")
    meta = h.get("meta", {})
    if not isinstance(meta, dict):
        raise ctx.error(hw("meta"), f"'meta' must be a mapping, got {_show(meta)}")
    shared = _shared_tools(h.get("tools", {}), ctx, header)

    if not rows:
        raise ctx.error("", "the suite has no tasks; add at least one")
    tasks: list[TaskSpec] = []
    seen: dict[str, Optional[int]] = {}
    for row in rows:
        t = _task(row, ctx, shared, checker)
        if t.task_id in seen:
            first = seen[t.task_id]
            raise ctx.error(_where_task(row, t.task_id), f"duplicate task_id {t.task_id!r} "
                            f"(first used{f' on line {first}' if first else ''}); task ids must be unique")
        seen[t.task_id] = row.line
        tasks.append(t)
    return Suite(name=name, version=version, tasks=tuple(tasks), checker=checker, tools=shared,
                 description=description, digest=digest, path=ctx.path, meta=meta)


def _where_task(row: _Row, task_id: Any = None, line: Optional[int] = None) -> str:
    who = f"task {task_id!r}" if isinstance(task_id, str) and task_id else f"task #{row.index + 1}"
    ln = row.line if line is None else line
    return f"{who} (line {ln})" if ln is not None else who


def _shared_tools(tools: Any, ctx: _Ctx, header: Optional[_Row]) -> dict:
    node = header.node + ("tools",) if header is not None else ("tools",)
    jsonl = header is not None and header.line is not None

    def where(*sub: Any) -> str:
        ln = header.line if jsonl else ctx.line(*node, *sub)
        return f"tool definitions (line {ln})" if ln is not None else "tool definitions"

    out: dict[str, ToolSpec] = {}
    if isinstance(tools, dict):
        items = [(k, v, (k,)) for k, v in tools.items()]
    elif isinstance(tools, list):
        items = []
        for i, v in enumerate(tools):
            if not isinstance(v, dict) or not isinstance(v.get("name"), str):
                raise ctx.error(where(i), f"tools[{i}] must be a mapping with a 'name', got {_show(v)}")
            items.append((v["name"], v, (i,)))
    else:
        raise ctx.error(where(), f"'tools' must be a mapping of tool name -> definition, got {_show(tools)}")
    for name, spec, sub in items:
        if name in out:
            raise ctx.error(where(*sub), f"tool {name!r} is defined twice; keep one definition")
        out[name] = _tool(name, spec, ctx, lambda *s, _sub=sub: where(*_sub, *s))
    return out


def _tool(name: Any, spec: Any, ctx: _Ctx, where) -> ToolSpec:
    if not isinstance(name, str) or not name:
        raise ctx.error(where(), f"a tool name must be a non-empty string, got {_show(name)}")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise ctx.error(where(), f"tool {name!r} must be a mapping (description, destructive, "
                        f"importance, params), got {_show(spec)}")
    _check_keys(spec, _TOOL_KEYS, ctx, where(), f"key of tool {name!r}:")
    if "name" in spec and spec["name"] != name:
        raise ctx.error(where("name"), f"tool {name!r} has 'name' {spec['name']!r}; they must agree")
    desc = spec.get("description", "")
    if not isinstance(desc, str):
        raise ctx.error(where("description"), f"tool {name!r}: 'description' must be a string, got {_show(desc)}")
    destructive = spec.get("destructive", False)
    if not isinstance(destructive, bool):
        raise ctx.error(where("destructive"), f"tool {name!r}: 'destructive' must be true or false, "
                        f"got {_show(destructive)}")
    importance = spec.get("importance")
    if importance is not None and not (_number(importance) and importance >= 0):
        raise ctx.error(where("importance"), f"tool {name!r}: 'importance' must be a non-negative "
                        f"number, got {_show(importance)}")
    params_raw = spec.get("params", {}) or {}
    if isinstance(params_raw, list):
        plist = []
        for i, p in enumerate(params_raw):
            if not isinstance(p, dict) or not isinstance(p.get("name"), str):
                raise ctx.error(where("params", i), f"tool {name!r}: params[{i}] must be a mapping "
                                f"with a 'name', got {_show(p)}")
            plist.append((p["name"], p, (i,)))
    elif isinstance(params_raw, dict):
        plist = [(k, v, (k,)) for k, v in params_raw.items()]
    else:
        raise ctx.error(where("params"), f"tool {name!r}: 'params' must map argument name -> "
                        f"definition, got {_show(params_raw)}")
    params: dict[str, FieldSpec] = {}
    for pname, p, sub in plist:
        if pname in params:
            raise ctx.error(where("params", *sub), f"tool {name!r}: argument {pname!r} is defined twice")
        params[pname] = _param(name, pname, p, ctx, where("params", *sub))
    return ToolSpec(name, params, importance=None if importance is None else float(importance),
                    destructive=destructive, description=desc)


def _param(tool: str, pname: Any, p: Any, ctx: _Ctx, where: str) -> FieldSpec:
    label = f"tool {tool!r} argument {pname!r}"
    if not isinstance(pname, str) or not pname:
        raise ctx.error(where, f"tool {tool!r}: an argument name must be a string, got {_show(pname)}")
    if isinstance(p, str):
        p = {"type": p}
    elif p is None:
        p = {}
    if not isinstance(p, dict):
        raise ctx.error(where, f"{label} must be a type name or a mapping (type, importance, "
                        f"required, domain, items), got {_show(p)}")
    _check_keys(p, _PARAM_KEYS, ctx, where, f"key of {label}:")
    ftype = p.get("type", "string")
    if not isinstance(ftype, str) or ftype not in FIELD_TYPES:
        raise ctx.error(where, f"{label}: unknown type {_show(ftype)}"
                        f"{did_you_mean(str(ftype), sorted(FIELD_TYPES))} (one of {', '.join(sorted(FIELD_TYPES))})")
    imp = p.get("importance", 1.0)
    if not (_number(imp) and imp >= 0):
        raise ctx.error(where, f"{label}: 'importance' must be a non-negative number, got {_show(imp)}")
    req = p.get("required", False)
    if not isinstance(req, bool):
        raise ctx.error(where, f"{label}: 'required' must be true or false, got {_show(req)}")
    domain = p.get("domain")
    if domain is not None and not isinstance(domain, list):
        raise ctx.error(where, f"{label}: 'domain' must be a list of allowed values, got {_show(domain)}")
    items = p.get("items")
    if items is not None and (not isinstance(items, str) or items not in FIELD_TYPES):
        raise ctx.error(where, f"{label}: 'items' must be an element type"
                        f"{did_you_mean(str(items), sorted(FIELD_TYPES))}, got {_show(items)}")
    if "name" in p and p["name"] != pname:
        raise ctx.error(where, f"{label} has 'name' {p['name']!r}; they must agree")
    return FieldSpec(pname, ftype, float(imp), None if domain is None else tuple(domain), req, items)


def _task(row: _Row, ctx: _Ctx, shared: Mapping[str, ToolSpec], default_checker: Optional[str]) -> TaskSpec:
    obj = row.obj
    if not isinstance(obj, dict):
        raise ctx.error(_where_task(row), f"a task must be a mapping with at least 'task_id', got {_show(obj)}")
    tid = obj.get("task_id")
    jsonl = not row.node or row.node[0] != "tasks"

    def where(*sub: Any) -> str:
        return _where_task(row, tid, row.line if jsonl else ctx.line(*row.node, *sub))

    if "task_id" not in obj:
        raise ctx.error(where(), "missing 'task_id'; give every task a unique string id")
    if not isinstance(tid, str) or not tid:
        raise ctx.error(where("task_id"), f"'task_id' must be a non-empty string, got {_show(tid)}"
                        + (" (quote it)" if isinstance(tid, (int, float)) else ""))
    _check_keys(obj, _TASK_KEYS, ctx, where(), "task key")
    value = obj.get("value", 1.0)
    if not (_number(value) and value >= 0):
        raise ctx.error(where("value"), f"'value' must be a non-negative number, got {_show(value)}")
    slc = obj.get("slice")
    if slc is not None and (not isinstance(slc, str) or not slc):
        raise ctx.error(where("slice"), f"'slice' must be a string label, got {_show(slc)}")
    checker = obj.get("checker", default_checker)
    if checker is not None and (not isinstance(checker, str) or not checker):
        raise ctx.error(where("checker"), f"'checker' must be a checker name such as 'final_state', "
                        f"got {_show(checker)}")
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise ctx.error(where("meta"), f"'meta' must be a mapping, got {_show(meta)}")
    if "tools" not in obj:
        tools = tuple(shared.values())
    else:
        raw = obj["tools"]
        if not isinstance(raw, list):
            raise ctx.error(where("tools"), f"'tools' must be a list of tool names or definitions, "
                            f"got {_show(raw)}")
        picked: list[ToolSpec] = []
        for i, item in enumerate(raw):
            if isinstance(item, str):
                if item not in shared:
                    raise ctx.error(where("tools", i), f"tools[{i}]: unknown tool {item!r}"
                                    f"{did_you_mean(item, shared)} (define it under the suite's "
                                    f"'tools', or inline it here)")
                tool = shared[item]
            elif isinstance(item, dict):
                tool = _tool(item.get("name"), item, ctx, lambda *s, _i=i: where("tools", _i, *s))
            else:
                raise ctx.error(where("tools", i), f"tools[{i}] must be a tool name or a definition, "
                                f"got {_show(item)}")
            if any(t.name == tool.name for t in picked):
                raise ctx.error(where("tools", i), f"tools[{i}]: tool {tool.name!r} is listed twice")
            picked.append(tool)
        tools = tuple(picked)
    for key in ("input", "gold"):
        try:
            json.dumps(obj.get(key), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ctx.error(where(key), f"'{key}' must be JSON data ({exc})") from None
    try:
        return TaskSpec(tid, obj.get("input"), obj.get("gold"), float(value), tools, slc, checker, meta)
    except EkAgentsError as exc:  # pragma: no cover - every field is checked above
        raise ctx.error(where(), str(exc)) from None


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
