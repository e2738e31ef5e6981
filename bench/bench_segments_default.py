"""How ``run_suite(persist=True)`` stores trials by default: segments, at 100,000 trials.

Run: ``.venv/bin/python -m bench.bench_segments_default [--tasks 1000] [--k 100]`` (~1-2 min of
one core). Each measured run is a process of its own (its peak RSS is its own ``VmHWM``);
the agents are ``bench/scale_agent.py``'s zero-latency ones (a plain answer, no wait), as a
plain ``def`` and as an ``async def``. Figures printed:

- the plain loop of ``bench.scale`` (build the Episode, grade it, write a JSON line) at
  tasks x k: the baseline of the ratios;
- the harness alone (``run_trials``, nothing stored) per trial, sync vs async agent;
- ``run_suite(run_id=..., rootdir=...)`` with every other setting at its default, sync
  agent, tasks x k trials: objects in the store, x the plain loop, the all-cached resume
  (the same call again) x the first run, its peak RSS vs the same run at k/5;
- the same with the async agent: x the plain loop.
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from bench.children import child_main, run_child_of
from bench.scale import SEED, child_plain, write_suite

ROOT = Path(__file__).resolve().parents[1]
run_child = run_child_of("bench.bench_segments_default")  # measurements in child processes
AGENTS = {"sync": "bench.scale_agent:zero_latency_sync_agent",
          "async": "bench.scale_agent:zero_latency_agent"}


def _rss_mb() -> float:
    from ek_agents.pipeline.scalerun import peak_rss_mb

    return peak_rss_mb()


def child_plain_cpu(suite: str, k: int, out: str) -> dict:
    """``bench.scale``'s plain loop, with the CPU seconds it took."""
    cpu0 = time.process_time()
    return {**child_plain(suite, k, out), "cpu_s": time.process_time() - cpu0}


def child_harness(suite: str, k: int, kind: str) -> dict:
    """``run_trials`` of the agent, nothing stored: seconds per trial (after a warm-up)."""
    from ek_agents.execution.harness import run_trials
    from ek_agents.pipeline.chunks import load_agent
    from ek_agents.suite import load_suite

    tasks = load_suite(suite).tasks
    agent = load_agent(AGENTS[kind])
    run_trials(agent, tasks[:100], k=2, seed=SEED, progress=False)
    t0, cpu0 = time.perf_counter(), time.process_time()
    eps = run_trials(agent, tasks, k=k, seed=SEED, progress=False)
    return {"s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0, "n": len(eps)}


def child_suite(suite: str, k: int, store: str, kind: str, run_id: str) -> dict:
    """``run_suite`` with its defaults but the store and run id (so it is persisted)."""
    import warnings

    from ek_agents.execution.harness import run_suite
    from ek_agents.pipeline.chunks import load_agent
    from ek_agents.suite import load_suite

    warnings.simplefilter("ignore")
    tasks = load_suite(suite)
    agent = load_agent(AGENTS[kind])
    t0, cpu0 = time.perf_counter(), time.process_time()
    report = run_suite(agent, tasks, k=k, seed=SEED, run_id=run_id, rootdir=store, progress=False)
    return {"s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0,
            "rss_mb": _rss_mb(), "n": report.n_trials,
            "reused": report.detail["reused"]["kept"]}


CHILDREN = {"plain": child_plain_cpu, "harness": child_harness, "suite": child_suite}


def objects(root: Path, run_id: str) -> int:
    """Files under the store's folder of the run (every object a run writes is there)."""
    return sum(len(files) for _, _, files in os.walk(root / "runs" / run_id))


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench.bench_segments_default")
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--k", type=int, default=100)
    a = ap.parse_args(argv)
    n, small_k = a.tasks * a.k, max(1, a.k // 5)
    fig: dict = {"trials": n}
    with tempfile.TemporaryDirectory(prefix="ek-bench-seg-") as tmp_:
        tmp = Path(tmp_)
        suite = write_suite(tmp / "suite.jsonl", a.tasks)
        plain = run_child("plain", [suite, a.k, str(tmp / "plain.jsonl")])
        print(f"plain loop (bench.scale's: Episode + grade + JSON line): {n:,} trials in "
              f"{plain['s']:.2f} s ({plain['s'] / n * 1e6:.1f} us/trial; CPU {plain['cpu_s']:.2f} s)")
        runs = {kind: run_child("harness", [suite, small_k, kind]) for kind in ("sync", "async")}
        per = {kind: r["s"] / (a.tasks * small_k) * 1e6 for kind, r in runs.items()}
        cpu = {kind: r["cpu_s"] / (a.tasks * small_k) * 1e6 for kind, r in runs.items()}
        print(f"harness alone (run_trials, nothing stored), {a.tasks * small_k:,} trials: sync "
              f"{per['sync']:.1f} us/trial, async {per['async']:.1f} us/trial: sync "
              f"x{per['sync'] / per['async']:.2f} the async (goal <= 2); CPU sync "
              f"{cpu['sync']:.1f}, async {cpu['async']:.1f} us/trial: x{cpu['sync'] / cpu['async']:.2f}")
        fig.update(plain_s=plain["s"], harness_us=per)
        for kind in ("sync", "async"):
            store = tmp / f"store-{kind}"
            first = run_child("suite", [suite, a.k, str(store), kind, "big"])
            count = objects(store, "big")
            fig[kind] = {"s": first["s"], "x_plain": first["s"] / plain["s"], "objects": count,
                         "rss_mb": first["rss_mb"]}
            fig[kind]["cpu_x_plain"] = first["cpu_s"] / plain["cpu_s"]
            print(f"run_suite, {kind} agent, {n:,} trials, defaults: {first['s']:.2f} s = "
                  f"x{first['s'] / plain['s']:.2f} the plain loop (goal <= "
                  f"{8 if kind == 'sync' else 5}; CPU x{first['cpu_s'] / plain['cpu_s']:.2f}); "
                  f"{count} objects in the store (goal <= 140)")
            if kind != "sync":
                continue
            again = run_child("suite", [suite, a.k, str(store), kind, "big"])
            small = run_child("suite", [suite, small_k, str(store), kind, "small"])
            fig[kind].update(resume_s=again["s"], resume_x=again["s"] / first["s"],
                             resume_reused=again["reused"], small_rss_mb=small["rss_mb"],
                             rss_x=first["rss_mb"] / small["rss_mb"])
            print(f"  all-cached resume: {again['s']:.2f} s = x{again['s'] / first['s']:.3f} the "
                  f"first run (goal <= 0.10; {again['reused']:,} trials reused)")
            print(f"  peak RSS {first['rss_mb']:.0f} MB at {n:,} trials, {small['rss_mb']:.0f} MB "
                  f"at {a.tasks * small_k:,}: x{first['rss_mb'] / small['rss_mb']:.2f} (goal <= 1.3)")
    return fig


if __name__ == "__main__":
    child_main(CHILDREN, main)
