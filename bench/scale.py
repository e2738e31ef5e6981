"""``make bench-scale`` (issue 27): a million trials in segments on a Dask cluster.

Run: ``.venv/bin/python -m bench.scale [--tasks 10000] [--k 100] [--small-tasks 1000]
[--no-flow20k]``. Not part of ``make bench`` / ``make test`` (minutes of both cores).

Everything runs against real services started here: a Prefect server (``prefect server start``
on a free 127.0.0.1 port), moto's S3 server (a subprocess on 127.0.0.1), and the
``evaluate-at-scale`` flow's ``LocalCluster`` of worker processes. The agent is zero-latency
(``bench/scale_agent.py``: an ``async def`` returning a plain answer). Each measured run is a
process of its own (its peak RSS is its own ``VmHWM``, ``scalerun.peak_rss_mb``; a Dask worker's is reported by the
chunks it ran). Figures printed:

- the plain loop: build the Episode, grade it, write a JSON line (no store, no Prefect), at
  the small and the full size -- the baseline of every ratio;
- ``run_suite`` alone in one process (local store) at the small size, vs the
  plain loop; the per-trial harness overhead in us;
- the flow at the small size on 1 and on 2 workers (the speed-up), and at the full size on 2
  workers (wall vs the plain loop, objects in the bucket and PUT requests, peak RSS of the flow
  process and of the workers, full vs small);
- the full run again with everything stored (all-cached resume) vs the first;
- the audit of the full run (every segment read, hashed, decoded, its trials regraded) vs the run;
- a second full run whose worker is SIGKILLed at about half-way, then resumed: lost, duplicated
  and re-executed trials;
- ``bench.bench_flow``'s evaluate-agent flow at 20,000 trials (x ideal, cache-hit re-run).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.children import child_main, run_child_of

ROOT = Path(__file__).resolve().parents[1]
run_child = run_child_of("bench.scale")  # this module's measurements in child processes
AGENT = "bench.scale_agent:zero_latency_agent"
SEED = 1


def write_suite(path: Path, n_tasks: int) -> str:
    rows = [{"suite": {"name": "bench-scale", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i:05d}", "input": f"q{i}", "gold": f"Q{i}"} for i in range(n_tasks)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _rss_mb() -> float:
    from ek_agents.pipeline.scalerun import peak_rss_mb  # (the children's, after their imports)

    return peak_rss_mb()


# -- the children ---------------------------------------------------------------------------

def child_plain(suite: str, k: int, out: str) -> dict:
    """The baseline: per trial, build the Episode, grade it, write its JSON line."""
    from ek_agents.base import Episode, RunProvenance
    from ek_agents.core import canonical_json
    from ek_agents.metrics import get_checker
    from ek_agents.suite import load_suite

    from bench.scale_agent import answer

    tasks = load_suite(suite).tasks
    check = get_checker("output")
    runs = [RunProvenance(seed=SEED + i) for i in range(k)]
    t0 = time.perf_counter()
    with open(out, "wb") as fh:
        for t in tasks:
            for i in range(k):
                ep = Episode(t.task_id, output=answer(t.task_id, t.input, SEED + i), run=runs[i],
                             meta={"trial": i})
                ep = ep.graded(check(ep, t.gold))
                fh.write(canonical_json(ep.to_dict()) + b"\n")
    return {"s": time.perf_counter() - t0, "n": len(tasks) * k, "rss_mb": _rss_mb()}


def child_suite(suite: str, k: int, store: str) -> dict:
    from ek_agents.execution.harness import run_suite
    from ek_agents.pipeline.request import load_agent
    from ek_agents.suite import load_suite

    tasks = load_suite(suite)
    t0 = time.perf_counter()
    report = run_suite(load_agent(AGENT), tasks, k=k, seed=SEED, run_id="suite", rootdir=store,
                       max_concurrency=8)
    return {"s": time.perf_counter() - t0, "rss_mb": _rss_mb(), "success": report.success_rate}


def child_flow(suite: str, k: int, store: str, run_id: str, workers: int, kill: bool) -> dict:
    from ek_agents_pipeline.flows.scale import evaluate_at_scale

    killed: dict = {}
    if kill:
        threading.Thread(target=_killer, args=(store, run_id, k, suite, killed), daemon=True).start()
    t0 = time.perf_counter()
    try:
        out = evaluate_at_scale(suite=suite, agent=AGENT, k=k, seed=SEED, store=store,
                                run_id=run_id, n_workers=workers, break_lease=kill)
        error = None
    except BaseException as exc:  # noqa: BLE001 -- a killed worker may fail the flow run
        out, error = {}, f"{type(exc).__name__}: {str(exc)[:300]}"
    return {"s": time.perf_counter() - t0, "rss_mb": _rss_mb(), "out": out, "error": error,
            "killed": killed}


def _killer(store: str, run_id: str, k: int, suite: str, killed: dict) -> None:
    """SIGKILL one Dask worker process once the run's index holds half its trials."""
    import psutil

    from ek_agents.records.segments import RunSegments
    from ek_agents.store import Store

    n_tasks = sum(1 for line in open(suite)) - 1
    half = n_tasks * k // 2
    st = Store(store)
    while True:
        time.sleep(0.5)
        try:
            held = sum(e.n for _, e in RunSegments.load(st, run_id).entries)
        except Exception:  # noqa: BLE001 -- not started yet
            continue
        if held >= half:
            break
    # the index is rewritten right after a segment is stored, so a kill at once could land
    # between two of a worker's chunks (nothing in flight): wait a seeded 0.1-0.6 s more, into
    # the next segment's trials
    time.sleep(0.1 + 0.5 * random.Random(SEED).random())
    me = psutil.Process()
    workers = [p for p in me.children(recursive=True)
               if "multiprocessing" in " ".join(p.cmdline()) and "resource_tracker" not in " ".join(p.cmdline())]
    if workers:
        victim = workers[0]
        killed.update(pid=victim.pid, held_at_kill=held, workers=len(workers))
        os.kill(victim.pid, signal.SIGKILL)


def child_audit(store: str, run_id: str) -> dict:
    from ek_agents.stages.audit import audit
    from ek_agents.store import Store

    t0 = time.perf_counter()
    result = audit(Store(store), run_id)
    return {"s": time.perf_counter() - t0, "rss_mb": _rss_mb(), "passed": result.passed,
            "problems": list(result.problems)[:5], "checked": len(result.checked)}


def child_count(store: str, run_id: str) -> dict:
    from ek_agents.records.segments import RunSegments
    from ek_agents.store import Store

    st = Store(store)
    segs = RunSegments.load(st, run_id)
    from ek_agents.store import run_prefix

    keys = st.list(run_prefix(run_id))
    return {"objects": len(keys), "segments": len(segs.entries),
            "index_docs": len(segs.writers), "held": len(segs.pairs()),
            "duplicates": segs.duplicates(), "orphans": len(segs.orphans()),
            "bytes": sum(e.size for _, e in segs.entries), "raw": sum(e.raw for _, e in segs.entries)}


CHILDREN = {"plain": child_plain, "suite": child_suite, "flow": child_flow, "audit": child_audit,
            "count": child_count}


# -- the parent -----------------------------------------------------------------------------

class Services:
    """A Prefect server and moto's S3 server on free 127.0.0.1 ports, for this bench."""

    def __init__(self, tmp: Path) -> None:
        from bench.bench_flow import start_server
        from tests.harness.faultproxy import free_port

        home = tmp / "prefect"
        home.mkdir()
        self.home = home
        self.prefect, self.api, self.prefect_start_s = start_server(home)
        port = free_port()
        self.moto = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(port)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.endpoint = f"http://127.0.0.1:{port}"
        self.aws = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                    "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
        import s3fs

        for _ in range(100):
            try:
                s3fs.S3FileSystem(endpoint_url=self.endpoint, key="testing", secret="testing",
                                  skip_instance_cache=True).mkdir("ek-scale")
                break
            except Exception:  # noqa: BLE001 -- not up yet
                time.sleep(0.2)

    def env(self, **extra: str) -> dict:
        from bench.bench_flow import _env

        env = _env(self.home, self.api)
        env.update(self.aws, PREFECT_LOGGING_LEVEL="WARNING", **extra)
        env.pop("AWS_PROFILE", None)
        return env

    def rss_mb(self) -> dict:
        import psutil

        out = {}
        for name, proc in (("prefect-server", self.prefect), ("moto", self.moto)):
            try:
                p = psutil.Process(proc.pid)
                out[name] = sum(c.memory_info().rss for c in [p, *p.children(recursive=True)]) / 2**20
            except psutil.Error:
                pass
        return out

    def close(self) -> None:
        from bench.bench_flow import stop_server

        stop_server(self.prefect)
        self.moto.terminate()
        self.moto.wait(timeout=20)


def _memory_only(a: Any, big: str, bucket: str, env: dict, fig: dict) -> dict:
    """The peak RSS of the flow process and its workers at k // 10 and k on the same tasks."""
    small_k = a.small_k or max(1, a.k // 10)
    rows = {}
    for kk, name in ((small_k, "mem-small"), (a.k, "mem-big")):
        r = run_child("flow", [big, kk, f"{bucket}/{name}", name, 2, False], env)
        rows[kk] = r
        print(f"flow, {a.tasks * kk:,} trials ({a.tasks:,} tasks x k={kk}): {r['s']:.1f} s, peak "
              f"RSS flow {r['rss_mb']:.0f} MB, worker {r['out']['worker_rss_mb']:.0f} MB")
    s, b = rows[small_k], rows[a.k]
    print(f"  x{b['rss_mb'] / s['rss_mb']:.2f} (flow), x{b['out']['worker_rss_mb'] / s['out']['worker_rss_mb']:.2f}"
          " (worker) for 10x the trials (goal <= 1.3)")
    fig.update(mem_flow_rss_mb={kk: r["rss_mb"] for kk, r in rows.items()},
               mem_worker_rss_mb={kk: r["out"]["worker_rss_mb"] for kk, r in rows.items()})
    return fig


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench.scale")
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--small-tasks", type=int, default=1_000)
    ap.add_argument("--small-k", type=int, default=None,
                    help="k of the small flow run on the full suite (default k // 10): the same "
                         "tasks, a tenth of the trials -- the memory comparison")
    ap.add_argument("--only-memory", action="store_true",
                    help="only the small-k and full flow runs (peak RSS)")
    ap.add_argument("--speedup-tasks", type=int, default=None,
                    help="tasks of the 1-vs-2-worker comparison (default: --tasks)")
    ap.add_argument("--no-flow20k", action="store_true")
    ap.add_argument("--no-kill", action="store_true")
    a = ap.parse_args(argv)
    k, n, n_small = a.k, a.tasks * a.k, a.small_tasks * a.k
    fig: dict = {"trials": n, "small_trials": n_small}
    tmp = Path(tempfile.mkdtemp(prefix="ek-bench-scale-"))
    big, small = write_suite(tmp / "big.jsonl", a.tasks), write_suite(tmp / "small.jsonl", a.small_tasks)
    svc = Services(tmp)
    bucket = "s3://ek-scale"
    try:
        env = svc.env()
        print(f"# bench-scale: {n:,} trials ({a.tasks:,} tasks x k={k}); small {n_small:,}; "
              f"Prefect server up in {svc.prefect_start_s:.1f} s; moto S3 at {svc.endpoint}")
        if a.only_memory:
            return _memory_only(a, big, bucket, env, fig)
        plain_small = run_child("plain", [small, k, str(tmp / "plain-small.jsonl")], env)
        plain = run_child("plain", [big, k, str(tmp / "plain.jsonl")], env)
        us = plain["s"] / n * 1e6
        print(f"plain loop (Episode + grade + JSON line): {n:,} in {plain['s']:.2f} s "
              f"({us:.2f} us/trial); {n_small:,} in {plain_small['s']:.2f} s")
        fig.update(plain_s=plain["s"], plain_small_s=plain_small["s"], plain_us_per_trial=us)

        suite = run_child("suite", [small, k, str(tmp / "suite-store")], env)
        over = (suite["s"] - plain_small["s"]) / n_small * 1e6
        fig.update(run_suite_s=suite["s"], run_suite_vs_plain=suite["s"] / plain_small["s"],
                   harness_overhead_us=over, run_suite_rss_mb=suite["rss_mb"])
        print(f"run_suite alone (1 process, local store, segments), {n_small:,} trials: "
              f"{suite['s']:.2f} s = x{suite['s'] / plain_small['s']:.2f} the plain loop "
              f"(goal <= 5); harness overhead {over:.1f} us/trial; peak RSS {suite['rss_mb']:.0f} MB")

        small_k = a.small_k or max(1, k // 10)
        two = run_child("flow", [big, small_k, f"{bucket}/w2", "small2", 2, False], env)
        fig.update(small_flow_rss_mb=two["rss_mb"], small_worker_rss_mb=two["out"]["worker_rss_mb"],
                   flow_small_2w_s=two["s"], small_flow_trials=a.tasks * small_k)
        print(f"flow, {a.tasks * small_k:,} trials ({a.tasks:,} tasks x k={small_k}: the same "
              f"tasks), 2 workers: {two['s']:.2f} s; peak RSS flow "
              f"{two['rss_mb']:.0f} MB, worker {two['out']['worker_rss_mb']:.0f} MB")

        first = run_child("flow", [big, k, f"{bucket}/big", "big", 2, False], env)
        if first["error"]:
            raise RuntimeError(f"the {n:,}-trial flow failed: {first['error']}")
        count = run_child("count", [f"{bucket}/big", "big"], env)
        fixed = count["objects"] - count["segments"] - count["index_docs"]
        puts = first["out"]["puts"]
        fig.update(flow_s=first["s"], flow_vs_plain=first["s"] / plain["s"],
                   flow_rss_mb=first["rss_mb"], worker_rss_mb=first["out"]["worker_rss_mb"],
                   objects=count["objects"], objects_per_1000=count["objects"] / n * 1000,
                   segments=count["segments"], segment_puts=puts,
                   segment_bytes=count["bytes"], segment_raw_bytes=count["raw"],
                   servers_rss_mb=svc.rss_mb())
        print(f"flow, {n:,} trials, 2 workers, S3, Prefect: {first['s']:.2f} s = "
              f"x{first['s'] / plain['s']:.2f} the plain loop (goal <= 10); "
              f"ran {first['out']['ran']:,} in {first['out']['chunks']} chunks on "
              f"{len(first['out']['workers'])} workers; the chunks used "
              f"{first['out'].get('chunk_cpu_s', 0):.0f} CPU-s in {first['out'].get('chunk_wall_s', 0):.0f} "
              f"s of chunk wall (x{first['out'].get('chunk_cpu_s', 0) / max(1e-9, first['out'].get('chunk_wall_s', 1)):.2f}"
              f" of a core each)")
        print(f"  objects in the run: {count['objects']} ({count['segments']} segments + "
              f"{count['index_docs']} index docs + {fixed} documents) = "
              f"{count['objects'] / n * 1000:.3f} per 1,000 trials (goal <= 1 + fixed); "
              f"segment PUTs {puts} (segments and index rewrites); "
              f"{count['bytes'] / 2**20:.1f} MB of segments for {count['raw'] / 2**20:.0f} MB of JSON")
        print(f"  peak RSS: flow process {first['rss_mb']:.0f} MB (x{first['rss_mb'] / two['rss_mb']:.2f} "
              f"of {a.tasks * small_k:,}), worker {first['out']['worker_rss_mb']:.0f} MB "
              f"(x{first['out']['worker_rss_mb'] / two['out']['worker_rss_mb']:.2f}); servers "
              f"{ {k_: round(v) for k_, v in svc.rss_mb().items()} } MB (goal <= 1024, <= 1.3x)")

        n_speed = (a.speedup_tasks or a.tasks) * k
        speed = big if n_speed == n else write_suite(tmp / "speed.jsonl", n_speed // k)
        one = run_child("flow", [speed, k, f"{bucket}/w1", "one", 1, False], env)
        ref = first["s"] if n_speed == n else run_child(
            "flow", [speed, k, f"{bucket}/w2b", "two", 2, False], env)["s"]
        fig.update(flow_1w_s=one["s"], flow_2w_s=ref, two_vs_one_worker=one["s"] / ref,
                   speedup_trials=n_speed)
        print(f"flow, {n_speed:,} trials: 1 worker {one['s']:.2f} s, 2 workers {ref:.2f} s: "
              f"x{one['s'] / ref:.2f} (goal >= 1.6); chunks' CPU {one['out'].get('chunk_cpu_s', 0):.1f} s "
              f"in {one['out'].get('chunk_wall_s', 0):.1f} s of chunk wall on 1 worker "
              f"(the box's other load takes the rest)")

        again = run_child("flow", [big, k, f"{bucket}/big", "big", 2, False], env)
        fig.update(cached_resume_s=again["s"], cached_resume_vs_first=again["s"] / first["s"])
        print(f"all-cached resume of the {n:,}: {again['s']:.2f} s = x{again['s'] / first['s']:.3f} "
              f"of the first (goal <= 0.10); ran {again['out'].get('ran')}")

        aud = run_child("audit", [f"{bucket}/big", "big"], env)
        fig.update(audit_s=aud["s"], audit_vs_run=aud["s"] / first["s"], audit_passed=aud["passed"],
                   audit_rss_mb=aud["rss_mb"])
        print(f"audit of the {n:,} (every segment read, hashed, decoded, each line's trial checked; "
              f"a seeded sample regraded against its summary): "
              f"{aud['s']:.2f} s = x{aud['s'] / first['s']:.2f} of the run (goal <= 0.20); "
              f"passed={aud['passed']} {aud['problems']}; peak RSS {aud['rss_mb']:.0f} MB")

        if not a.no_kill:
            calls = tmp / "calls"
            calls.mkdir()
            kenv = svc.env(EK_SCALE_CALLS=str(calls))
            killed = run_child("flow", [big, k, f"{bucket}/kill", "kill", 2, True], kenv)
            resumed = None
            state = run_child("count", [f"{bucket}/kill", "kill"], kenv)
            if killed["error"] or state["held"] < n:
                resumed = run_child("flow", [big, k, f"{bucket}/kill", "kill", 2, False], kenv)
                state = run_child("count", [f"{bucket}/kill", "kill"], kenv)
            from bench.scale_agent import calls as count_calls

            total_calls = count_calls(str(calls))
            fig.update(kill=killed["killed"], kill_error=killed["error"],
                       kill_lost=n - state["held"], kill_duplicated=state["duplicates"],
                       kill_reexecuted=total_calls - n)
            print(f"SIGKILL of worker pid {killed['killed'].get('pid')} at "
                  f"{killed['killed'].get('held_at_kill', 0):,} stored; first run "
                  f"{'failed: ' + killed['error'] if killed['error'] else 'completed (Dask re-ran the chunk)'}"
                  f"{'' if resumed is None else f'; resumed in {resumed[chr(115)]:.1f} s'}: "
                  f"lost {n - state['held']}, duplicated {state['duplicates']}, re-executed "
                  f"{total_calls - n:,} trials (agent calls counted exactly, the killed worker's "
                  f"too, less the {n:,} trials) = {(total_calls - n) / 4096:.2f} segments' worth "
                  f"(goal <= 2)")
    finally:
        svc.close()
    if not a.no_flow20k:
        from bench.bench_flow import flow_rows

        ftmp = Path(tempfile.mkdtemp(prefix="ek-bench-scale-flow-"))
        rows = flow_rows(20_000, ftmp)
        fig.update({f"flow20k_{key[5:]}": v for key, v in rows.items() if "vs_" in key})
    (ROOT / "bench" / "last-scale.json").write_text(json.dumps(fig, indent=1, default=str) + "\n")
    return fig


if __name__ == "__main__":
    child_main(CHILDREN, main)
