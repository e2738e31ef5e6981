"""The walk of ``store_url`` from the scoring tasks (tasks/scoring.py) down to the store.

Runs each task's function (``grade``, ``metrics``, ``cost``, ``gate``: Prefect's ``.fn``, no
flow run) on a small stored run under a profiler that follows the store: every call whose
arguments hold the store URL or the :class:`~ek_agents.store.Store` made from it is an edge
from the module of the nearest such caller to the module of the callee. The walk goes down when
each edge's callee is an import dependency of its caller (top-level imports, transitively),
and enters no module twice when no module comes back on one path from the task to the store.

``python -m tests.pipeline.storewalk`` prints the walk; tests/pipeline/test_store_walk.py
asserts it.
"""
from __future__ import annotations

import ast
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from test_architecture import top_level_closure  # noqa: E402

STORE = "ek_agents.store"


def _unit(mod: str) -> str:
    """The store package counts as one module (the walk ends where it enters the store)."""
    return STORE if mod == STORE or mod.startswith(STORE + ".") else mod


def _make_run(tmp: Path) -> tuple[str, dict]:
    from ek_agents.base import Episode
    from ek_agents.records import documents, stagecache
    from ek_agents.stages import evaluate as stages

    suite = tmp / "suite.jsonl"
    rows = [{"suite": {"name": "walk", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"q{i}", "gold": f"A{i}"} for i in range(4)]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = str(tmp / "store")
    from ek_agents.store import Store
    from ek_agents.records.baselines import save_agent_baseline
    from ek_agents.stages.evaluate import metrics_stage, cost_stage, grade_stage
    st = Store(url)
    tasks = stages.record_suite(st, "base", str(suite))
    eps = [Episode(f"t{i}", output=f"A{i}" if (i + j) % 3 else "no", meta={"trial": j})
           for i in range(4) for j in range(2)]
    graded = grade_stage(documents.episodes_doc(eps), st.read_json(tasks.key))
    report = cost_stage(graded, metrics_stage(graded, st.read_json(tasks.key), k=2, seed=1), None, seed=1)
    from ek_agents.reporting import ReliabilityReport
    save_agent_baseline(ReliabilityReport.from_dict(report), "main", rootdir=st)
    run = stages.record_suite(st, "r", str(suite))
    ref = stagecache.index_output(st, "r", "episodes", "e" * 64, documents.episodes_doc(eps))
    return url, {"tasks": run, "episodes": ref}


def walk() -> dict[str, Any]:
    """Run the four scoring tasks on a fresh store; return the edges, the paths, the climbs
    and the re-entries of the store URL's walk."""
    import tasks.scoring as scoring
    from ek_agents.records.trials import forget_episodes

    deps = top_level_closure()
    with tempfile.TemporaryDirectory() as tmp:
        url, refs = _make_run(Path(tmp))
        forget_episodes()
        carried: list = [url]
        stack: list = []  # per frame: the module of the nearest carrying frame at or above it
        paths: set = set()
        edges: set = set()

        def carries(frame: Any) -> bool:
            code = frame.f_code
            for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
                v = frame.f_locals.get(name)
                if any(v is c for c in carried):
                    return True
            return False

        def prof(frame: Any, event: str, arg: Any) -> None:
            if event == "call":
                mod = frame.f_globals.get("__name__", "")
                parent = stack[-1] if stack else None
                tracked = mod.startswith("ek_agents") or mod == "tasks.scoring"
                if tracked and carries(frame):
                    here = _unit(mod)
                    path = (parent or ()) + ((here,) if not parent or parent[-1] != here else ())
                    if parent and parent[-1] != here:
                        edges.add((parent[-1], here))
                    paths.add(path)
                    stack.append(path)
                else:
                    stack.append(parent)
            elif event == "return":
                if stack:
                    stack.pop()
                if frame.f_code.co_name == "__init__" and frame.f_globals.get("__name__") == STORE:
                    store = frame.f_locals.get("self")
                    if store is not None and all(store is not c for c in carried):
                        carried.append(store)  # Store(store_url): the store it became

        sys.setprofile(prof)
        try:
            g = scoring.grade.fn(url, "r", refs["episodes"], refs["tasks"], None)
            m = scoring.metrics.fn(url, "r", g, refs["tasks"], 2, 1, {})
            c = scoring.cost.fn(url, "r", g, m, None, 1)
            scoring.gate.fn(url, "r", c, "main", 0.0, 0.0)
        finally:
            sys.setprofile(None)
            forget_episodes()
    climbs = sorted((a, b) for a, b in edges if a != "tasks.scoring" and b not in deps.get(a, set())
                    and not (a == STORE))
    longest = {p for p in paths if not any(q[:len(p)] == p and q != p for q in paths)}
    reentries = sorted(p for p in longest if len(set(p)) != len(p))
    order = _order({m for p in paths for m in p}, deps)
    return {"edges": sorted(edges), "paths": sorted(longest), "climbs": climbs,
            "reentries": reentries, "order": order}


def _order(mods: set, deps: dict) -> list:
    """The modules the walk entered, top first: a module before every module it depends on."""
    return sorted(mods, key=lambda m: (-len(deps.get(m, set()) & mods), m) if m != "tasks.scoring"
                  else (-10**6, m))


if __name__ == "__main__":
    w = walk()
    print("store_url walk from tasks/scoring.py (grade, metrics, cost, gate):")
    print("  modules, top to bottom: " + " -> ".join(w["order"]))
    for p in w["paths"]:
        print("  path: " + " -> ".join(p))
    print(f"  climbs (callee not below its caller): {w['climbs'] or 'none'}")
    print(f"  modules entered twice on one path: {w['reentries'] or 'none'}")
