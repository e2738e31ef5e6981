"""Pipeline stage cache: recomputing grade -> metrics -> cost vs a cache hit, same run.

The baseline is the stages computed from scratch on N stored episodes; the figure is the
same stages served from the content-addressed cache (what a second identical run does).
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from typing import Any

from ek_agents.records import documents, stagecache
from ek_agents.stages import evaluate as stages
from ek_agents.records.manifest import input_digest
from ek_agents.base import Cost, Episode, RunProvenance, TaskSpec
from ek_agents.store import Store


def _docs(n_tasks: int, k: int, seed: int) -> tuple[dict, dict]:
    rnd = random.Random(seed)
    tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"A{i}", slice=f"s{i % 4}") for i in range(n_tasks)]
    eps = [Episode(t.task_id, output=t.gold if rnd.random() < 0.7 else "?",
                   cost=Cost(input_tokens=1000, output_tokens=100),
                   run=RunProvenance(model="gpt-4o-mini-2024-07-18", seed=seed + j), meta={"trial": j})
           for t in tasks for j in range(k)]
    tdoc = {"name": "bench", "version": "1", "digest": "0" * 64, "path": "", "checker": "output",
            "tasks": [t.to_dict() for t in tasks]}
    return tdoc, documents.episodes_doc(eps)


def _stages(st: Store, tasks: dict, episodes: dict, k: int) -> None:
    g = stagecache.cached(st, "graded", input_digest("graded", n=len(episodes["episodes"])),
                      lambda: stages.grade_stage(episodes, tasks))[0]
    m = stagecache.cached(st, "metrics", input_digest("metrics", n=len(g["episodes"]), k=k),
                      lambda: stages.metrics_stage(g, tasks, k=k))[0]
    stagecache.cached(st, "report", input_digest("report", n=len(g["episodes"])),
                  lambda: stages.cost_stage(g, m, None))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    tasks, episodes = _docs(args.tasks, args.k, args.seed)
    st = Store(tempfile.mkdtemp(prefix="ek-bench-"))
    t0 = time.perf_counter()
    _stages(st, tasks, episodes, args.k)
    compute = time.perf_counter() - t0
    t0 = time.perf_counter()
    _stages(st, tasks, episodes, args.k)
    hit = time.perf_counter() - t0
    n = args.tasks * args.k
    print(f"grade -> metrics -> cost on {n:,} episodes: computed {compute:.2f} s, "
          f"cache hit {hit:.3f} s (x{hit / compute:.3f})")
    return {"episodes": n, "stages_compute_s": compute, "stages_cache_hit_s": hit,
            "cache_hit_vs_compute": hit / compute}
