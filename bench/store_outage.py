"""How long ``ek-agents run`` / ``audit`` / ``report`` take to fail when the S3 endpoint is gone,
with the store's DEFAULT settings (connect 5 s, read 10 s, retry window 15 s) and Prefect as a
user starts it (ephemeral server, a fresh PREFECT_HOME): the figures in README's Store section.

    .venv/bin/python -m bench.store_outage [refuse] [stall] [reset]

moto's S3 server on 127.0.0.1 behind the project's fault proxy (tests/harness/faultproxy.py),
switched to the mode before each command. Prints the seconds from the command's start to its
exit (Prefect's start-up included), its exit code and its stderr line. Not a test: a measurement
(minutes; the machine's load shows in the figures). The shop suite, k=4 (96 trials).
"""
from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = str(ROOT / "examples" / "shop" / "suite.yaml")
COMMANDS = {
    "report": ["report", "r1"],
    "audit": ["audit", "r1"],
    "run": ["run", "--suite", SUITE, "--agent", "examples.shop.agents:small_agent", "--k", "4",
            "--run-id", "r1"],
}



def main(argv: list[str] | None = None) -> dict:
    modes = list(sys.argv[1:] if argv is None else argv) or ["refuse", "stall"]
    sys.path.insert(0, str(ROOT))
    from moto.server import ThreadedMotoServer

    from tests.harness.faultproxy import FaultProxy, free_port

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    figures: dict = {}
    home = tempfile.mkdtemp(prefix="ek-bench-prefect-")
    try:
        with FaultProxy(port) as proxy:
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("AWS_", "EK_STORE", "PREFECT_"))}
            env.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                       AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=proxy.url,
                       PREFECT_HOME=home, PREFECT_SERVER_ANALYTICS_ENABLED="false", DO_NOT_TRACK="1")
            import s3fs

            s3fs.S3FileSystem(endpoint_url=proxy.url, key="testing", secret="testing",
                              skip_instance_cache=True).mkdir("ek-bench")
            print("| mode | command | exit | seconds | stderr |\n|---|---|---|---|---|")
            for mode in modes:
                for name, args in COMMANDS.items():
                    proxy.mode = mode
                    t0 = time.monotonic()
                    r = subprocess.run([sys.executable, "-m", "ek_agents.cli", *args, "--store",
                                        f"s3://ek-bench/{mode}"], cwd=str(ROOT), env=env,
                                       capture_output=True, text=True, timeout=900)
                    s = time.monotonic() - t0
                    proxy.mode = "pass"
                    lines = r.stderr.strip().splitlines()
                    figures[f"{name}_{mode}_s"] = s
                    print(f"| {mode} | {name} | {r.returncode} | {s:.1f} | "
                          f"{len(lines)} line(s): {(lines or [''])[-1][:160]} |", flush=True)
    finally:
        server.stop()
    return figures


if __name__ == "__main__":
    main()
