"""The ``ek-agents`` command's wall time vs the library doing the same work, same run.

- ``run`` of the shop suite at k=4 (96 trials) with no Prefect API configured: the evaluate
  plan runs in the command's own process, without Prefect (``ek_agents.localrun``) -- vs a
  process calling ``harness.run_suite`` on the same suite, agent and prices (the floor:
  Python, imports, trials, grading, no Prefect). Interleaved, min of ``--repeat``.
- the same ``run --prefect-server``: the old way, a temporary local Prefect server that
  records the flow run (min of ``--repeat``, after one warm-up run that creates its database).
- the same ``run`` with a Prefect API already configured (``PREFECT_API_URL``: a server
  started once, outside the measurement): the flow run is recorded there, nothing starts.
- ``audit`` and ``promote`` of the in-process runs (no Prefect: the library does the work).

Every run writes into a store of its own, so each is a fresh run (96 agent calls), never a
cache hit of the one before. The load average is printed beside the figures (2 shared cores).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = str(ROOT / "examples" / "shop" / "suite.yaml")
PRICES = str(ROOT / "examples" / "prices.json")
AGENT = "ek_agents_examples.shop.agents:small_agent"
LIBRARY = ("import sys; from ek_agents.execution.harness import run_suite; from ek_agents.suite import "
           "load_suite; from ek_agents.prices import load_prices; "
           "from ek_agents.pipeline.request import load_agent; "
           "r = run_suite(load_agent(sys.argv[1]), load_suite(sys.argv[2]), k=int(sys.argv[3]), "
           "seed=0, prices=load_prices(sys.argv[4])); print(r.n_trials)")


def _wall(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({r.returncode}): {r.stderr[-500:]}")
    return took


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="ek-bench-cli-")
    os.environ["PREFECT_HOME"] = os.path.join(tmp, "prefect")  # the configured server's, too
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=os.path.join(tmp, "prefect"), PREFECT_SERVER_ANALYTICS_ENABLED="false",
               DO_NOT_TRACK="1")
    cli = [sys.executable, "-m", "ek_agents.cli"]

    def run(name: str, env: dict, *extra: str) -> float:
        return _wall([*cli, "run", "--suite", SUITE, "--agent", AGENT, "--k", str(args.k),
                      "--prices", PRICES, "--store", os.path.join(tmp, name), "--run-id", "r",
                      *extra], env)

    load = os.getloadavg()[0]
    lib, here = [], []
    for i in range(args.repeat):  # interleaved, so both see the same machine load
        lib.append(_wall([sys.executable, "-c", LIBRARY, AGENT, SUITE, str(args.k), PRICES], env))
        here.append(run(f"here{i}", env))
    run("warmup", env, "--prefect-server")  # creates the temporary server's database
    server = [run(f"server{i}", env, "--prefect-server") for i in range(args.repeat)]
    # the other option: a Prefect API already configured (a server started once, outside)
    from ek_agents_pipeline.flows.local import LocalServer

    srv = LocalServer()  # uses this process's environment: point it at the bench's home
    try:
        srv.wait_ready(180)
        api = [run(f"api{i}", {**env, "PREFECT_API_URL": srv.api_url}) for i in range(args.repeat)]
    finally:
        srv.stop()
    stores = [os.path.join(tmp, f"here{i}") for i in range(args.repeat)]
    audit = min(_wall([*cli, "audit", "r", "--store", s], env) for s in stores)
    promote = min(_wall([*cli, "promote", "r", "--name", "b", "--store", s], env) for s in stores)
    load = max(load, os.getloadavg()[0])
    shutil.rmtree(tmp, ignore_errors=True)
    floor = min(lib)
    figures = {"run_suite_process_s": floor, "cli_run_s": min(here),
               "cli_run_vs_run_suite": min(here) / floor, "cli_audit_s": audit,
               "cli_promote_s": promote, "cli_audit_vs_run_suite": audit / floor,
               "cli_run_prefect_server_s": min(server),
               "cli_run_prefect_server_vs_run_suite": min(server) / floor,
               "cli_run_api_configured_s": min(api),
               "cli_run_api_configured_vs_run_suite": min(api) / floor, "load_1min": load}
    print(f"shop suite, k={args.k} ({args.k * 24} trials), min of {args.repeat} [load {load:.1f}, "
          f"{os.cpu_count()} cores]: ek-agents run (no Prefect API: in-process) {min(here):.2f} s "
          f"vs run_suite in a process {floor:.2f} s (x{min(here) / floor:.1f}); "
          f"run --prefect-server (temporary server) {min(server):.2f} s "
          f"(x{min(server) / floor:.1f}); with a Prefect API already configured {min(api):.2f} s "
          f"(x{min(api) / floor:.1f}); audit {audit:.2f} s, promote {promote:.2f} s")
    return figures


if __name__ == "__main__":
    main()
