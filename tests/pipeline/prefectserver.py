"""A real Prefect server for the deployment tests: on 127.0.0.1, a free port, a temporary
PREFECT_HOME, analytics off; and the processes the tests start beside it (serve, workers)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable

from tests.harness.faultproxy import free_port

from .conftest import ROOT

PREFECT = [sys.executable, "-m", "prefect"]


def wait_for(what: str, ok: Callable[[], bool], timeout: float, proc: subprocess.Popen) -> None:
    """Poll ``ok`` until it is true; fail when ``proc`` exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with {proc.returncode}")
        try:
            if ok():
                return
        except Exception:  # noqa: BLE001 -- not up yet
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not ready after {timeout} s")


def stop(proc: subprocess.Popen) -> None:
    """Stop a process the test started (its whole session) and wait for it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class PrefectServer:
    """``prefect server start`` in a subprocess, and the other processes of a test beside it
    (each in its own session, logging to ``<tmp>/logs/<name>.log``); ``close`` stops them all."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "prefect-home"
        self.logs = tmp / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.env = {**os.environ, "PREFECT_HOME": str(self.home),
                    "PREFECT_LOCAL_STORAGE_PATH": str(self.home / "storage"),
                    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                    "PREFECT_LOGGING_LEVEL": "INFO", "PREFECT_RUNNER_POLL_FREQUENCY": "2",
                    "PREFECT_WORKER_QUERY_SECONDS": "2", "EK_AGENTS_HOME": str(ROOT)}
        self.env.pop("PREFECT_API_URL", None)
        self.client_env = {**self.env, "PREFECT_API_URL": self.api}
        self.procs: list[subprocess.Popen] = []
        self.server = self.start("server", *PREFECT, "server", "start", "--host", "127.0.0.1",
                                 "--port", str(self.port), env=self.env)
        wait_for("prefect server",
                 lambda: urllib.request.urlopen(f"{self.api}/health", timeout=2).status == 200,
                 120, self.server)

    def start(self, name: str, *cmd: str, env: dict | None = None, **kw) -> subprocess.Popen:
        p = subprocess.Popen(list(cmd), stdout=open(self.logs / f"{name}.log", "wb"),
                             stderr=subprocess.STDOUT, start_new_session=True,
                             env=env or self.client_env, **kw)
        self.procs.append(p)
        return p

    def prefect(self, *args: str) -> subprocess.CompletedProcess:
        """Run ``prefect ARGS`` from the checkout against this server; fail on a non-zero exit."""
        r = subprocess.run(PREFECT + list(args), env=self.client_env, cwd=str(ROOT),
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]

    def close(self) -> None:
        for p in reversed(self.procs):
            stop(p)
