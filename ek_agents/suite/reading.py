"""Reading a suite file's text: JSONL lines or one YAML/JSON document into a header row and
task rows, each remembering the line every value came from (what the error messages cite).
"""
from __future__ import annotations

from typing import Any, Optional

from ..errors import SuiteError
from ..parsing import parse_json, parse_yaml

class ReadContext:
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


class Row:
    """One raw task (or header) object and how to point at it."""

    def __init__(self, obj: Any, index: int, node: tuple, line: Optional[int]) -> None:
        self.obj, self.index, self.node, self.line = obj, index, node, line


def read_jsonl(text: str, ctx: ReadContext) -> tuple[Optional[Row], list[Row]]:
    header: Optional[Row] = None
    rows: list[Row] = []
    for lineno, ln in enumerate(text.splitlines(), start=1):
        if not ln.strip():
            continue
        try:
            obj = parse_json(ln, where="", error=SuiteError)
        except SuiteError as exc:
            raise ctx.error("", f"line {lineno} {exc}; each line must be one JSON object") from None
        if not isinstance(obj, dict):
            raise ctx.error(f"line {lineno}", f"expected a JSON object (a task), got {show(obj)}")
        if "suite" in obj and "task_id" not in obj:
            if rows or header is not None:
                raise ctx.error(f"line {lineno}", "a {\"suite\": ...} header line must be the "
                                "first line of the file; move it to the top")
            extra = sorted(set(obj) - {"suite"})
            if extra:
                raise ctx.error(f"line {lineno}", f"the header line holds only 'suite', got also {extra}")
            header = Row(obj["suite"], 0, ("suite",), lineno)
            continue
        rows.append(Row(obj, len(rows), (len(rows),), lineno))
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


def read_yaml(text: str, ctx: ReadContext) -> tuple[Optional[Row], list[Row]]:
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
        raise ctx.error("line 1", f"expected a mapping with a 'tasks' list, got {show(doc)}")
    if "tasks" not in doc:
        raise ctx.error("", "no 'tasks' list; add 'tasks:' with one entry per task")
    tasks = doc["tasks"]
    if not isinstance(tasks, list):
        raise ctx.error(f"line {ctx.line('tasks')}", f"'tasks' must be a list, got {show(tasks)}")
    header = Row({k: v for k, v in doc.items() if k not in ("tasks", "$schema")}, 0, (), None)
    rows = [Row(t, i, ("tasks", i), ctx.line("tasks", i)) for i, t in enumerate(tasks)]
    return header, rows

def show(x: Any) -> str:
    s = repr(x)
    return s if len(s) <= 60 else s[:57] + "..."
