"""The ``ek-agents`` command's wall time vs the library doing the same work, same run.

- ``run`` of the shop suite at k=4 (96 trials) with no Prefect API configured (a temporary
  local server, started before Prefect is imported so the two overlap) vs a process calling
  ``harness.run_suite`` on the same suite, agent and prices (the floor: Python, imports,
  trials, grading, no Prefect). Each the min of ``--repeat`` runs, after one warm-up run that
  creates Prefect's database.
- the same ``run`` with a Prefect API already configured (``PREFECT_API_URL``: a server
  started once, outside the measurement): the flow run is recorded there, nothing starts.
- ``audit`` and ``promote`` of that run (no Prefect: the library does the work), vs the same
  ``run_suite`` process (the goal is absolute: < 2 s).
"""
from __future__ import annotations

import argparse
import os
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
LIBRARY = ("import sys; from ek_agents.harness import run_suite; from ek_agents.suite import "
           "load_suite; from ek_agents.prices import load_prices; "
           "from ek_agents.pipeline_support import load_agent; "
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
    store = os.path.join(tmp, "store")
    cli = [sys.executable, "-m", "ek_agents.cli"]
    run = [*cli, "run", "--suite", SUITE, "--agent", AGENT, "--k", str(args.k), "--prices", PRICES,
           "--store", store]
    _wall([*run, "--run-id", "warmup"], env)  # creates Prefect's database
    lib, cmd = [], []
    for i in range(args.repeat):  # interleaved, so both see the same machine load
        lib.append(_wall([sys.executable, "-c", LIBRARY, AGENT, SUITE, str(args.k), PRICES], env))
        cmd.append(_wall([*run, "--run-id", f"r{i}"], env))
    # the other option: a Prefect API already configured (a server started once, outside)
    from ek_agents_pipeline.flows.local import LocalServer

    server = LocalServer()  # uses this process's environment: point it at the bench's home
    try:
        server.wait_ready(180)
        api = [_wall([*run, "--run-id", f"api{i}"], {**env, "PREFECT_API_URL": server.api_url})
               for i in range(args.repeat)]
    finally:
        server.stop()
    audit = min(_wall([*cli, "audit", f"r{i}", "--store", store], env) for i in range(args.repeat))
    promote = min(_wall([*cli, "promote", f"r{i}", "--name", f"b{i}", "--store", store], env)
                  for i in range(args.repeat))
    figures = {"run_suite_process_s": min(lib), "cli_run_s": min(cmd),
               "cli_run_vs_run_suite": min(cmd) / min(lib), "cli_audit_s": audit,
               "cli_promote_s": promote, "cli_audit_vs_run_suite": audit / min(lib),
               "cli_run_api_configured_s": min(api),
               "cli_run_api_configured_vs_run_suite": min(api) / min(lib)}
    print(f"shop suite, k={args.k} ({args.k * 24} trials), no Prefect API configured, min of "
          f"{args.repeat}: ek-agents run {min(cmd):.2f} s vs run_suite in a process "
          f"{min(lib):.2f} s (x{min(cmd) / min(lib):.1f}); audit {audit:.2f} s, "
          f"promote {promote:.2f} s; with a Prefect API already configured: run {min(api):.2f} s "
          f"(x{min(api) / min(lib):.1f})")
    return figures


if __name__ == "__main__":
    main()
