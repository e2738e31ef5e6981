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

The package's modules: :mod:`.reading` (a file's text into rows, with the line of every
value), :mod:`.documents` (the pydantic models of the file layout, the JSON Schema built from
them, and the error messages that name the line, task and field). This module holds
:class:`Suite`, :func:`load_suite` / :func:`parse_suite` and :func:`dump_suite`.

May import: ``errors``, ``core``, ``parsing``, ``base``, ``store`` (see ``ek_agents.layers``).
"""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional, Union

from pydantic import Field

from ..base import JsonShape, TaskSpec, ToolSpec
from ..core import FieldSpec, shape
from ..errors import InvalidInput, SuiteError, UnknownName, did_you_mean
from ..parsing import decode_text, parse_json
from ..store import read_url, sha256_hex, write_url
from .documents import HeaderDoc, ParamDoc, TaskDoc, ToolDoc, TOP_KEYS, validate
from .documents import build_suite_schema as build_suite_schema  # the schema file is made from it
from .reading import ReadContext, Row, read_jsonl, read_yaml

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
    ctx = ReadContext(path)
    if fmt == "jsonl":
        header, task_rows = read_jsonl(text, ctx)
    else:
        header, task_rows = read_yaml(text, ctx)
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

def _build(header: Optional[Row], rows: list[Row], ctx: ReadContext, *, digest: str) -> Suite:
    hdoc = HeaderDoc()
    if header is not None:
        jsonl = header.line is not None

        def hwhere(path: tuple) -> str:
            ln = header.line if jsonl else ctx.line(*header.node, *path)
            what = "tool definitions" if path[:1] == ("tools",) else "suite header"
            return f"{what} (line {ln})" if ln is not None else what

        top = () if jsonl else tuple(k for k in TOP_KEYS)
        hdoc = validate(HeaderDoc, header.obj, ctx, hwhere, in_task=False, top=top)
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


def _where_task(row: Row, task_id: Any = None, line: Optional[int] = None) -> str:
    who = f"task {task_id!r}" if isinstance(task_id, str) and task_id else f"task #{row.index + 1}"
    ln = row.line if line is None else line
    return f"{who} (line {ln})" if ln is not None else who


def _shared_tools(hdoc: HeaderDoc, header: Optional[Row], ctx: ReadContext) -> dict:
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


def _tool(name: str, spec: ToolDoc, ctx: ReadContext, where) -> ToolSpec:
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


def _task(row: Row, ctx: ReadContext, shared: Mapping[str, ToolSpec], default_checker: Optional[str]) -> TaskSpec:
    obj = row.obj
    jsonl = not row.node or row.node[0] != "tasks"
    tid = obj.get("task_id") if isinstance(obj, dict) else None

    def where(*sub: Any) -> str:
        return _where_task(row, tid, row.line if jsonl else ctx.line(*row.node, *sub))

    doc = validate(TaskDoc, obj, ctx, lambda path: where(*path), in_task=True)
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
