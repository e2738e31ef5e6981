"""The house rules that a grep can check (docs/ARCHITECTURE.md): imports point down the layers
declared in ``ek_agents.layers``, no import cycles, no import of another module's private names,
no function-level import without a listed, measured reason (and none dodging a cycle), no store
key spelled outside the store, one library call per pipeline task."""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "ek_agents"
PIPELINE = [ROOT / "tasks", ROOT / "flows", ROOT / "deployments"]

#: Private-name imports still to remove (none: any one fails).
PENDING_PRIVATE: set = set()
#: Layout prefixes only the ek_agents/store package may spell.
KEY_PREFIXES = ("runs/", "cache/", "baselines/", "artifacts/")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources(*roots: Path) -> list[Path]:
    return sorted(p for r in roots for p in r.rglob("*.py") if ".venv" not in p.parts)


MODULES = {_module_name(p): p for p in _sources(PACKAGE)}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """``path`` parsed, once for all the checks (none of them changes a tree)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def _imports(path: Path) -> list[tuple[str, list[str], bool, ast.stmt]]:
    """``(source module, imported names, at module level, node)`` of every import in ``path``
    (an ``if TYPE_CHECKING:`` block counts as neither: nothing runs there); read once a file."""
    name = _module_name(path)
    tree = _tree(path)
    found: list = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                continue
            if isinstance(child, ast.ImportFrom):
                src = _resolve(name, path.name == "__init__.py", child)
                found.append((src, [a.name for a in child.names], top, child))
            elif isinstance(child, ast.Import):
                for a in child.names:
                    found.append((a.name, [], top, child))
            child_top = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.ClassDef, ast.Lambda))
            visit(child, child_top)

    visit(tree, True)
    return found


def _targets(src: str, names: list[str]) -> list[str]:
    """The ek_agents modules an import statement loads."""
    hits = [f"{src}.{n}" for n in names if f"{src}.{n}" in MODULES]
    if src in MODULES and len(hits) < len(names) or not names:
        hits.append(src)
    return [h for h in hits if h in MODULES]


def test_no_import_cycle_among_ek_agents_modules():
    graph = {m: set() for m in MODULES}
    for mod, path in MODULES.items():
        for src, names, top, _ in _imports(path):
            if top:
                graph[mod].update(t for t in _targets(src, names) if t != mod and t != "ek_agents")
    # Tarjan's strongly connected components: any component of 2+ modules is a cycle
    index: dict = {}
    low: dict = {}
    stack: list = []
    cycles: list = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            connect(v)
    assert cycles == []
    assert graph["ek_agents.store"] and graph["ek_agents.execution.harness"]  # the graph was really built


def test_no_module_imports_another_modules_private_names():
    found = set()
    for path in _sources(PACKAGE, *PIPELINE):
        mod = _module_name(path)
        modules_here: dict[str, str] = {}  # local alias -> ek_agents module it names
        for src, names, _, node in _imports(path):
            for a in getattr(node, "names", []):
                full = f"{src}.{a.name}" if isinstance(node, ast.ImportFrom) else a.name
                if full in MODULES:
                    modules_here[a.asname or a.name.split(".")[0]] = full
            if not src.startswith("ek_agents") or src == mod:
                continue
            if src.rsplit(".", 1)[0] == mod:  # a package importing its own private submodule
                continue
            for n in names:
                if n.startswith("_") and not n.startswith("__") and f"{src}.{n}" not in MODULES:
                    found.add((mod, src, n))
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                    and node.value.id in modules_here and modules_here[node.value.id] != mod):
                found.add((mod, modules_here[node.value.id], node.attr))
    assert found - PENDING_PRIVATE == set()


from ek_agents.layers import DOCUMENTED_LAZY, LAYERS, LAZY_IMPORTS, SHIMS, layer_of  # noqa: E402


def _rel(module: str) -> str:
    return module[len("ek_agents."):] if module != "ek_agents" else ""


def _where(mod: str, node: ast.stmt) -> str:
    return f"{MODULES[mod].relative_to(ROOT)}:{node.lineno}"


def _layer_name(module: str) -> str:
    return LAYERS[layer_of(module)[0]][0]


def test_every_module_is_placed_in_a_layer():
    missing = []
    for mod in MODULES:
        try:
            layer_of(_rel(mod))
        except KeyError as exc:
            missing.append(str(exc))
    assert missing == []
    assert all(f"ek_agents.{s}" in MODULES for s in SHIMS)  # every listed shim exists


def upward_imports() -> list[str]:
    """Every import (module level or in a function) of an ek_agents module that points to a
    higher layer than its importer's, every shim importing anything but its home(s), and every
    library module importing a shim -- as ``file:line: what (layers)``."""
    bad = []
    for mod, path in MODULES.items():
        me = _rel(mod)
        here = layer_of(me)[0]
        for src, names, top, node in _imports(path):
            for target in _targets(src, names):
                them = _rel(target)
                if target == mod or them.startswith(me + ".") and me:
                    continue  # a package importing its own modules
                if me in SHIMS:
                    if them not in SHIMS[me]:
                        bad.append(f"{_where(mod, node)}: shim {mod} imports {target}, not its home "
                                   f"{SHIMS[me]}")
                    continue
                if them in SHIMS and me:
                    bad.append(f"{_where(mod, node)}: {mod} imports the shim {target}; import its "
                               f"home {SHIMS[them]}")
                    continue
                there = layer_of(them)[0]
                if there > here:
                    bad.append(f"{_where(mod, node)}: {mod} (layer {here} {LAYERS[here][0]!r}) "
                               f"imports {target} (layer {there} {LAYERS[there][0]!r}), above it")
    return bad


def test_every_import_points_down_the_declared_layers():
    assert upward_imports() == []


def top_level_closure() -> dict[str, set[str]]:
    """Every ek_agents module -> the ek_agents modules it imports at module level, transitively
    (tests/pipeline/storewalk.py orders its walk by it)."""
    direct = {m: set() for m in MODULES}
    for mod, path in MODULES.items():
        for src, names, top, _ in _imports(path):
            if top:
                direct[mod].update(t for t in _targets(src, names) if t != mod)
    closed: dict[str, set[str]] = {}

    def close(m: str) -> set[str]:
        if m not in closed:
            closed[m] = set()
            for d in direct[m]:
                closed[m] |= {d} | close(d)
        return closed[m]

    for m in direct:
        close(m)
    return closed


def test_function_level_imports_are_listed_and_dodge_no_cycle():
    """A function-level import of an ek_agents module is listed in ``layers.LAZY_IMPORTS`` with
    its measured reason (or sits in a module that documents its own: ``DOCUMENTED_LAZY``), and
    moving it to the top of its module would make no cycle (it is not there to dodge one)."""
    deps = top_level_closure()
    unlisted, dodging, seen = [], [], set()
    for mod, path in MODULES.items():
        me = _rel(mod)
        for src, names, top, node in _imports(path):
            if top:
                continue
            for target in _targets(src, names):
                if target in (mod, "ek_agents"):
                    continue
                if mod in deps.get(target, set()):
                    dodging.append(f"{_where(mod, node)}: {mod} imports {target} in a function; "
                                   f"{target} imports {mod}: a cycle dodged")
                if me in DOCUMENTED_LAZY:
                    continue
                seen.add((me, _rel(target)))
                if (me, _rel(target)) not in LAZY_IMPORTS:
                    unlisted.append(f"{_where(mod, node)}: {mod} imports {target} in a function: "
                                    "move it to the top, or list it (with the measurement) in "
                                    "ek_agents.layers.LAZY_IMPORTS")
    assert dodging == []
    assert unlisted == []
    assert set(LAZY_IMPORTS) <= seen, set(LAZY_IMPORTS) - seen  # no stale entry


def _string_parts(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string constant of ``tree`` that is not a docstring, with its line."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_store_key_is_spelled_outside_the_store():
    spelled = []
    for path in _sources(PACKAGE, *PIPELINE) + [ROOT / "ek_agents" / "cli.py"]:
        if path.is_relative_to(PACKAGE / "store"):  # the store package owns the layout (store/keys.py)
            continue
        for line, text in _string_parts(_tree(path)):
            if any(p in text for p in KEY_PREFIXES):
                spelled.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert spelled == []


def _task_functions() -> list[tuple[str, ast.FunctionDef, dict[str, str]]]:
    out = []
    for path in _sources(ROOT / "tasks"):
        tree = _tree(path)
        origin: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    origin[a.asname or a.name] = ("." * node.level) + (node.module or "")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and any(
                    "task" in ast.unparse(d) for d in node.decorator_list):
                out.append((f"{path.stem}.{node.name}", node, origin))
    return out


@pytest.mark.parametrize("name,fn,origin", _task_functions(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_pipeline_task_is_one_library_call(name, fn, origin):
    calls = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, ast.Attribute):
                root = root.value
            source = origin.get(getattr(root, "id", ""), "")
            if source.startswith("ek_agents") and getattr(root, "id", "") != "Store":
                calls.append(ast.unparse(node.func))
    assert len(calls) == 1, f"{name} calls {calls}: a task is one library call plus Prefect settings"


def test_the_task_check_sees_every_task():
    assert len(_task_functions()) == 27  # the cached_plan task went; load-labels and judge-correct came; tasks/scale.py: three (issue 27); tasks/monitor.py: one


def test_the_facade_shows_type_checkers_every_name_from_its_home():
    import ek_agents

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    seen = {}
    for node in tree.body:
        if _is_type_checking(node):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.level == 1
                for a in imp.names:
                    assert a.asname == a.name  # an explicit re-export
                    seen[a.name] = imp.module
    assert seen == ek_agents._EXPORTS
    for name, mod in seen.items():  # each name's home is the module that defines it
        obj = getattr(ek_agents, name)
        home = getattr(obj, "__module__", None) if callable(obj) else None
        assert home is None or home == f"ek_agents.{mod}" or home.startswith(f"ek_agents.{mod}."), \
            (name, mod, home)  # a subpackage (bridge) may define a name in a private submodule


# --------------------------------------------------------------------------- package surfaces

#: Most names a subpackage of ek_agents may export: a surface a reader can hold in mind.
MAX_EXPORTS = 80
#: Most lines a module may have.
MAX_LINES = 600
PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py" and m != "ek_agents")


def _export_table(module: str) -> tuple[dict, list]:
    """A package's ``_EXPORTS`` table (name -> module) and every statement that assigns
    ``_EXPORTS`` or ``__all__`` at its top level."""
    tree = _tree(MODULES[module])
    table, assigns = {}, []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        names += [e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts
                  if isinstance(e, ast.Name)]
        if "_EXPORTS" in names or "__all__" in names:
            assigns.append(node)
        if "_EXPORTS" in names and node.value is not None:
            table = eval(compile(ast.Expression(node.value), "_EXPORTS", "eval"))  # dict literal
    return table, assigns


def _type_checking_names(module: str) -> dict:
    seen: dict = {}
    for node in _tree(MODULES[module]).body:
        if _is_type_checking(node):
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.unparse(imp)
                for a in imp.names:
                    assert a.asname == a.name, ast.unparse(imp)  # an explicit re-export
                    seen[a.name] = (imp.module or "") if imp.level == 1 else \
                        "." * imp.level + (imp.module or "")  # a sibling package's
    return seen


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_keeps_its_export_list_once(package):
    """A lazily exporting package has one table, ``_EXPORTS``; ``__all__`` is ``sorted(_EXPORTS)``
    and its ``TYPE_CHECKING`` block names the same names from the same modules. Any other
    package assigns ``__all__`` once."""
    table, assigns = _export_table(package)
    if not table:
        assert len(assigns) == 1, [ast.unparse(a)[:60] for a in assigns]
        return
    all_assigns = [a for a in assigns if "__all__" in ast.unparse(a).split("=")[0]]
    assert len(assigns) == 2 and len(all_assigns) == 1
    assert ast.unparse(all_assigns[0].value) == "sorted(_EXPORTS)"
    assert _type_checking_names(package) == table


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_exports_at_most_80_documented_names(package):
    """No subpackage exports more than :data:`MAX_EXPORTS` names, and each name it exports is
    documented where it is defined (a docstring, or a ``#:`` comment over a constant): the
    surface is chosen, not a private module's internals passed through."""
    import importlib

    mod = importlib.import_module(package)
    exported = list(getattr(mod, "__all__", []))
    assert len(exported) <= MAX_EXPORTS, (package, len(exported))
    table, _ = _export_table(package)
    undocumented = []
    for name in exported:
        obj = getattr(mod, name)
        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__"):
            if not (obj.__doc__ or "").strip():
                undocumented.append(name)
            continue
        home = table.get(name)
        if home is None or home.startswith("."):
            continue  # an eager package's name, or a sibling package's (checked there)
        if not _constant_documented(f"{package}.{home}", name):
            undocumented.append(f"{home}.{name}")
    assert undocumented == [], f"{package} exports undocumented {undocumented}"


def _constant_documented(module: str, name: str) -> bool:
    path = MODULES[module]
    lines = path.read_text(encoding="utf-8").splitlines()
    body = _tree(path).body
    for i, node in enumerate(body):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            above = lines[node.lineno - 2].lstrip() if node.lineno > 1 else ""
            after = body[i + 1] if i + 1 < len(body) else None
            return above.startswith("#:") or "#:" in lines[node.lineno - 1] or (
                isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str))
    return True  # defined elsewhere and imported: documented at its own home


def test_no_module_is_over_600_lines_and_no_file_is_named_support_or_util():
    long = {m: n for m, p in MODULES.items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
    named = [str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*")
             if "support" in p.name.lower() or "util" in p.name.lower()]
    assert named == []


def test_no_module_of_ek_agents_imports_a_private_module_of_another_package():
    """``_name.py`` modules are their package's own: a sibling may import one, another package
    imports the package's public names (or a public module) instead."""
    crossing = []
    for mod, path in MODULES.items():
        for src, names, _, node in _imports(path):
            for target in _targets(src, names):
                parts = target.split(".")
                private = [i for i, p in enumerate(parts) if p.startswith("_") and p != "__init__"]
                if private and ".".join(parts[:private[0]]) != mod.rsplit(".", 1)[0] \
                        and ".".join(parts[:private[0]]) != mod:
                    crossing.append(f"{_where(mod, node)}: {mod} imports {target}")
    assert crossing == []
