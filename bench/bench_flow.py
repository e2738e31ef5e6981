"""Benchmark: the harness, the evaluate flow and the CLI against their floors, same run.

Run: ``.venv/bin/python -m bench.bench_flow [--trials 20000] [--quick]``. Rows (issue 15):

- ``run_suite`` on ``--suite-trials`` trials (default 2000) of a 50 ms ``async`` agent at
  concurrency 64 vs the ideal ``trials x 0.05 / 64`` s, and plain ``asyncio.gather`` of the
  same agent calls under a 64-slot semaphore (the harness's own floor);
- the ``evaluate-agent`` flow on ``--trials`` trials (default 20,000) of the same agent,
  concurrency 64, artifacts persisted, with a Prefect API up (a temporary ``prefect server
  start`` on a free 127.0.0.1 port; its start-up is reported apart) vs the ideal; then the same
  flow with identical inputs (a cache hit) vs the first run;
- ``ek-agents run`` of the shop suite at k=4 with no Prefect API configured (wall seconds of
  the whole command, which runs the plan in its own process: ``ek_agents.localrun``) vs the
  library's ``run_suite`` on the same suite and agent, min of 3; the same command with a
  Prefect API configured (the flow runs there and is recorded);
- ``ek-agents audit`` and ``ek-agents promote`` of that run (wall seconds of the command);
- ``import ek_agents`` vs ``import prefect`` (each a fresh interpreter, minus an empty one).

Each flow/CLI measurement runs in its own process with its own ``PREFECT_HOME`` under a temp
folder. The repeat of the flow runs under a new run id (what a re-run gets: ``evaluate_agent``
makes one), so it measures the stage cache, not a resume of a finished run.

What limits each figure (profiled; bench/PROFILE-flow.md has the numbers):

- The flow is honest about concurrency: its chunks run on ``min(max_workers, max_concurrency)``
  workers and share ``max_concurrency`` (``TrialRequest.parallel_chunks``), so at most 64 agent
  calls are in flight. (Before, each of the 4 workers ran its chunk at 64: up to 256 in flight,
  so the old "x ideal at 64" compared against a floor 4x too high.)
- Trials phase: the 50 ms waits themselves, plus the harness's CPU per trial (building the
  episode, ``to_dict``, the depth check, canonical JSON, a thread hop per write: ~0.3 ms idle,
  0.5-0.6 ms under load), i.e. 7-12 s of CPU for 20,000 trials on 2 shared cores. Chunks no
  longer list the run (``plan_trials`` lists it once) and return what they stored
  (``ChunkResult``); ``collect-episodes`` assembles the episodes document from those bytes
  (0.4 s instead of re-reading 20,000 files) and the manifest takes the digests computed as the
  files were written (0.1 s instead of re-hashing them).
- After the trials: grade, metrics and cost each read the 10 MB episodes/graded document back
  (verified) and validate 20,000 ``Episode`` s (pydantic, ~30 us each): 5-8 s together; the
  report's pass^k curve (40 bootstraps of 500 tasks x 2000 resamples and 20,000 ``pass_hat_k``
  calls): ~2 s; Prefect's flow and sub-flow creation: 1-3 s under load.
- Cache hit: every stage is a byte copy of a verified artifact (nothing parsed), no trial
  sub-flow starts; what is left is Prefect's flow run (~1-2 s) and the report (~2 s).
- ``run_suite``: the same per-trial harness CPU (0.5 s of CPU per 2,000 trials against a 1.56 s
  ideal) plus ``graded_report`` (~0.3 s: grade + the pass^k bootstrap).
"""
from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.harness.faultproxy import free_port

ROOT = Path(__file__).resolve().parent.parent
SHOP_SUITE = ROOT / "examples" / "shop" / "suite.yaml"
SHOP_AGENT = "ek_agents_examples.shop.agents:small_agent"
AGENT_S = 0.05
CONCURRENCY = 64


async def sleep_agent(task: Any) -> Any:
    """The benchmark's agent: 50 ms of waiting, then the gold answer."""
    await asyncio.sleep(AGENT_S)
    return task.gold


def write_suite(path: Path, n_tasks: int) -> str:
    rows = [{"suite": {"name": "bench-flow", "version": "1", "checker": "output"}}]
    rows += [{"task_id": f"t{i}", "input": f"q{i}", "gold": f"A{i}"} for i in range(n_tasks)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _env(home: Path, api_url: str | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1",
               PYTHONPATH=str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


def _wall(cmd: list, env: dict, cwd: Path = ROOT) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()[-800:]}")
    return t


def _child_json(args: list, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-m", "bench.bench_flow", "--child", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"bench_flow child {args[0]}: {proc.stderr.strip()[-1500:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- rows ------------------------------------------------------------------------------------

def harness_rows(trials: int) -> dict:
    from ek_agents import TaskSpec, run_suite

    tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"A{i}") for i in range(trials)]

    async def gather() -> list:
        sem = asyncio.Semaphore(CONCURRENCY)

        async def one(t: TaskSpec) -> Any:
            async with sem:
                return await sleep_agent(t)
        return await asyncio.gather(*(one(t) for t in tasks))

    ideal = trials * AGENT_S / CONCURRENCY
    t0 = time.perf_counter()
    asyncio.run(gather())
    t_gather = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_suite(sleep_agent, tasks, k=1, max_concurrency=CONCURRENCY, progress=False)
    t_suite = time.perf_counter() - t0
    # the same call again: the first one also loaded numpy and the report's modules (once
    # per process); gather is timed first, then the second call, for the steady-state figure
    t0 = time.perf_counter()
    asyncio.run(gather())
    t_gather2 = time.perf_counter() - t0
    t0 = time.perf_counter()
    run_suite(sleep_agent, tasks, k=1, max_concurrency=CONCURRENCY, progress=False)
    t_warm = time.perf_counter() - t0
    print(f"  run_suite, {trials:,} trials of a 50 ms agent at concurrency {CONCURRENCY}: {t_suite:.2f} s vs "
          f"ideal {ideal:.2f} s (x{t_suite / ideal:.2f}); asyncio.gather {t_gather:.2f} s (x{t_gather / ideal:.2f}); "
          f"second call {t_warm:.2f} s (x{t_warm / ideal:.2f}; gather x{t_gather2 / ideal:.2f})")
    return {"run_suite_s": t_suite, "run_suite_ideal_s": ideal, "run_suite_vs_ideal": t_suite / ideal,
            "asyncio_gather_vs_ideal": t_gather / ideal, "run_suite_second_vs_ideal": t_warm / ideal,
            "asyncio_gather_second_vs_ideal": t_gather2 / ideal}



def start_server(home: Path, timeout: float = 180.0) -> tuple[subprocess.Popen, str, float]:
    """A temporary Prefect server on a free 127.0.0.1 port: (process, API URL, start-up s)."""
    port = free_port()
    log = open(home / "server.log", "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1",
                             "--port", str(port)], env=_env(home), stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/api"
    while time.perf_counter() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"prefect server exited {proc.returncode}: see {home / 'server.log'}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url, time.perf_counter() - t0
        except OSError:
            time.sleep(0.25)
    proc.terminate()
    raise RuntimeError(f"prefect server did not answer on {url} within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def flow_rows(trials: int, tmp: Path) -> dict:
    k = 40 if trials >= 400 else 1
    suite = write_suite(tmp / "flow-suite.jsonl", max(1, trials // k))
    home = tmp / "prefect-server"
    home.mkdir()
    proc, url, t_start = start_server(home)
    try:
        args = ["flow", suite, str(k), str(tmp / "flow-store")]
        first = _child_json(args + ["bench-flow-run"], _env(home, url))
        # the same inputs again as a new run (what a re-run gets: evaluate_agent makes a run id)
        again = _child_json(args + ["bench-flow-rerun"], _env(home, url))
    finally:
        stop_server(proc)
    ideal = trials * AGENT_S / CONCURRENCY
    print(f"  evaluate-agent flow, {trials:,} trials (API up; server start-up {t_start:.1f} s apart): "
          f"{first['s']:.2f} s vs ideal {ideal:.2f} s (x{first['s'] / ideal:.2f}); identical re-run "
          f"(cache hit) {again['s']:.2f} s (x{again['s'] / first['s']:.3f} of the first)")
    print(f"    first run: {first['cpu_s']:.1f} s CPU; phases (start, s): {first['phases']}")
    print(f"    cache hit: {again['cpu_s']:.1f} s CPU; phases (start, s): {again['phases']}")
    return {"flow_trials": trials, "prefect_server_start_s": t_start, "flow_s": first["s"], "flow_ideal_s": ideal,
            "flow_vs_ideal": first["s"] / ideal, "flow_cache_hit_s": again["s"],
            "flow_cache_hit_vs_first": again["s"] / first["s"], "flow_phases_s": first["phases"],
            "flow_cpu_s": first["cpu_s"]}


def cli_rows(tmp: Path, k: int = 4, repeat: int = 3) -> dict:
    """``ek-agents run`` of the shop suite (no Prefect API configured: the plan runs in the
    command's process) vs ``run_suite``, interleaved, each run into a store of its own (a fresh
    run, not a cache hit), min of ``repeat``; ``audit`` and ``promote`` of those runs; the same
    ``run`` with a Prefect API configured (a server started once, its start-up apart)."""
    home = tmp / "prefect-cli"
    home.mkdir()
    env = _env(home)  # no PREFECT_API_URL: the CLI decides how to record the flow run
    cli = [sys.executable, "-m", "ek_agents.cli"]

    def run(i: int, kind: str, env: dict) -> float:
        return _wall(cli + ["run", "--suite", str(SHOP_SUITE), "--agent", SHOP_AGENT, "--k", str(k),
                            "--store", str(tmp / f"cli-{kind}-{i}"), "--run-id", "bench-cli-run"], env)

    load = os.getloadavg()[0]
    libs, runs = [], []
    for i in range(repeat):
        libs.append(_child_json(["run_suite", str(k)], env))
        runs.append(run(i, "here", env))
    lib = min(libs, key=lambda r: r["s"])
    t_run = min(runs)
    t_audit = min(_wall(cli + ["audit", "bench-cli-run", "--store", str(tmp / f"cli-here-{i}")], env)
                  for i in range(repeat))
    t_promote = min(_wall(cli + ["promote", "bench-cli-run", "--name", "bench", "--store",
                                 str(tmp / f"cli-here-{i}")], env) for i in range(repeat))
    proc, url, t_start = start_server(home)
    try:
        t_api = min(run(i, "api", _env(home, url)) for i in range(repeat))
    finally:
        stop_server(proc)
    load = max(load, os.getloadavg()[0])
    print(f"  ek-agents run, shop suite k={k} ({lib['trials']} trials), no Prefect API (in-process), "
          f"min of {repeat}: {t_run:.2f} s wall vs run_suite {lib['s']:.2f} s (x{t_run / lib['s']:.1f}); "
          f"ek-agents audit {t_audit:.2f} s, promote {t_promote:.2f} s; with a Prefect API configured "
          f"(flow run recorded; server start-up {t_start:.1f} s apart): run {t_api:.2f} s "
          f"[load {load:.1f}]")
    return {"cli_run_shop_s": t_run, "run_suite_shop_s": lib["s"], "cli_run_vs_run_suite": t_run / lib["s"],
            "cli_audit_s": t_audit, "cli_promote_s": t_promote, "cli_run_api_configured_s": t_api,
            "cli_load_1min": load}


def import_rows(repeat: int = 5) -> dict:
    """``import ek_agents`` (the lazy facade), the same with every public name resolved, and
    ``import prefect``: each timed inside a fresh interpreter (min of ``repeat``), so the
    interpreter's own start-up is not part of the figure."""
    env = _env(Path(tempfile.gettempdir()))
    timer = "import time; t0 = time.perf_counter(); {body}; print(time.perf_counter() - t0)"

    def best(body: str) -> float:
        runs = []
        for _ in range(repeat):
            out = subprocess.run([sys.executable, "-c", timer.format(body=body)], env=env, cwd=ROOT,
                                 capture_output=True, text=True, check=True)
            runs.append(float(out.stdout.strip().splitlines()[-1]))
        return min(runs)

    ek_s = best("import ek_agents")
    names_s = best("import ek_agents; [getattr(ek_agents, n) for n in ek_agents.__all__]")
    pf_s = best("import prefect")
    print(f"  import ek_agents {ek_s:.4f} s, every public name resolved {names_s:.3f} s, vs import prefect "
          f"{pf_s:.3f} s (x{ek_s / pf_s:.4f} / x{names_s / pf_s:.2f})")
    return {"import_ek_agents_s": ek_s, "import_prefect_s": pf_s, "import_ek_agents_vs_prefect": ek_s / pf_s,
            "import_ek_agents_names_s": names_s, "import_ek_agents_names_vs_prefect": names_s / pf_s}


# -- children (own process, own Prefect settings) ----------------------------------------------

def _child(args: list) -> None:
    if args[0] == "flow":
        suite, k, store, run_id = args[1], int(args[2]), args[3], args[4]
        from ek_agents_pipeline.flows.evaluate import evaluate_agent

        t0 = time.perf_counter()
        started = datetime.datetime.now(datetime.timezone.utc)
        evaluate_agent(suite=suite, agent="bench.bench_flow:sleep_agent", k=k, store=store, run_id=run_id,
                       max_concurrency=CONCURRENCY)
        s = time.perf_counter() - t0
        print(json.dumps({"s": s, "phases": _phases(started, run_id), "cpu_s": _cpu_s()}))
    elif args[0] == "run_suite":
        from ek_agents import load_suite, run_suite
        from ek_agents_examples.shop.agents import small_agent

        k = int(args[1])
        suite = load_suite(str(SHOP_SUITE))
        t0 = time.perf_counter()
        run_suite(small_agent, suite, k=k, progress=False)
        print(json.dumps({"s": time.perf_counter() - t0, "trials": len(suite.tasks) * k}))


def _cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _phases(since: datetime.datetime, run_id: str) -> dict:
    """(start offset, seconds) per task of the flow run just finished, read back from the API (task runs that
    started after ``since``): the trial chunks as one span, every other task its own."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import TaskRunFilter, TaskRunFilterStartTime

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(task_run_filter=TaskRunFilter(
            start_time=TaskRunFilterStartTime(after_=since)), limit=200)
    spans: dict[str, list] = {}
    for r in runs:
        if r.start_time is None or r.end_time is None:
            continue
        name = re.sub(r"(-[0-9a-f]{3}|-\d+)+$", "", r.name.replace(f"-{run_id}", ""))
        span = spans.setdefault(name, [r.start_time, r.end_time])
        span[0], span[1] = min(span[0], r.start_time), max(span[1], r.end_time)
    return {n: (round((a - since).total_seconds(), 2), round((b - a).total_seconds(), 2))
            for n, (a, b) in sorted(spans.items(), key=lambda i: i[1][0])}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20_000, help="trials of the evaluate flow row")
    ap.add_argument("--suite-trials", type=int, default=2000, help="trials of the run_suite row")
    ap.add_argument("--quick", action="store_true", help="tiny sizes, no server (a smoke test)")
    ap.add_argument("--skip", nargs="*", default=[], choices=("harness", "flow", "cli", "import"))
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        _child(args.child)
        return {}
    if args.quick:
        args.trials, args.suite_trials, args.skip = 64, 128, [*args.skip, "flow", "cli"]
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="ek-bench-flow-") as d:
        tmp = Path(d)
        if "import" not in args.skip:
            figures.update(import_rows())
        if "harness" not in args.skip:
            figures.update(harness_rows(args.suite_trials))
        if "cli" not in args.skip:
            figures.update(cli_rows(tmp))
        if "flow" not in args.skip:
            figures.update(flow_rows(args.trials, tmp))
    return figures


if __name__ == "__main__":
    main()
