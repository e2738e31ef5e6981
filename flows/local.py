"""Calling a flow from this process (the CLI's one way in), on the lightest Prefect context
that still records the flow run. (With no API configured, ``ek-agents run`` runs the plan
without Prefect, ``ek_agents.localrun``; it comes here for ``--prefect-server``, a Dask task
runner, and ``demo``.)

- A Prefect API configured (``PREFECT_API_URL`` in the environment or the active profile):
  the flow run is recorded there; nothing is started.
- None configured: a temporary local Prefect server, the one Prefect's ephemeral mode would
  start on first use (the same uvicorn command, UI off), but started by :func:`start_server`
  *before* this process imports Prefect, so that the server's start-up (a process importing
  Prefect and opening its database: 9-17 s measured on the shared 2-core machine at load 7,
  the largest part of ``ek-agents run``'s wall time) overlaps this process's own
  ``import prefect`` (1-4 s there) instead of following it. The server is stopped when the
  command ends (:func:`stop_server`), and also when this process is ended by SIGTERM, SIGHUP
  or SIGINT (each becomes an exit through the caller's ``finally``); on Linux the server is
  also told to exit when its parent dies, so even a SIGKILLed ``ek-agents`` leaves no server.

This module imports no Prefect at module level (the CLI imports it before Prefect, to start
the server); :func:`call_flow` imports the flows when it runs one. Without a configured server
the flow-run heartbeat is off (nobody else watches the run).
"""
from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Iterator, Optional

#: Seconds each phase of the last command took (``import_flows``, ``server_up_since_start``, ``flow``), for ``-v``.
TIMINGS: dict[str, float] = {}

#: The environment variable Prefect reads the API's address from.
API_ENV = "PREFECT_API_URL"
#: The API address of the last temporary server :func:`start_server` started (for ``-v``).
LAST_SERVER: Optional[str] = None


def configured_api() -> Optional[str]:
    """The Prefect API this process would use: ``PREFECT_API_URL`` from the environment, else
    from the active profile of ``$PREFECT_PROFILES_PATH`` (default
    ``$PREFECT_HOME/profiles.toml``, ``~/.prefect``); None when neither sets one. Read without
    importing Prefect (which takes seconds)."""
    if os.environ.get(API_ENV):
        return os.environ[API_ENV]
    if "prefect.settings" in sys.modules:  # Prefect already loaded here (a test harness, a flow)
        from prefect.settings import PREFECT_API_URL

        return PREFECT_API_URL.value() or None
    import tomllib  # lazy: only reached without an API in the environment

    home = Path(os.environ.get("PREFECT_HOME") or "~/.prefect").expanduser()
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml").expanduser()
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or doc.get("active") or "ephemeral"
    profile = (doc.get("profiles") or {}).get(active) or {}
    url = profile.get(API_ENV) if isinstance(profile, dict) else None
    return url if isinstance(url, str) and url else None


def _free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:  # runs in the child between fork and exec (Linux only)
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class LocalServer:
    """A temporary Prefect server on 127.0.0.1, a free port, as a child process."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.api_url = f"http://127.0.0.1:{self.port}/api"
        self.t0 = time.perf_counter()
        env = {k: v for k, v in os.environ.items() if k != API_ENV}
        env.update(PREFECT_UI_ENABLED="0", PREFECT__SERVER_EPHEMERAL="1", PREFECT__SERVER_FINAL="1")
        # it only records this command's flow runs: skip re-registering Prefect's block types
        # (measured: 11-15 s vs 16-17 s to /health at load 7 on 2 cores)
        env.setdefault("PREFECT_API_BLOCKS_REGISTER_ON_START", "false")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "--factory", "prefect.server.api.server:create_app",
             "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "error",
             "--lifespan", "on"],
            env=env, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)

    def wait_ready(self, timeout: float) -> None:
        """Wait until the server answers ``/health`` (RuntimeError naming why it did not)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the temporary Prefect server exited with code "
                                   f"{self.process.returncode} before it was ready; set "
                                   f"{API_ENV} to a running server, or run with -v to see why")
            try:
                with urllib.request.urlopen(f"{self.api_url}/health", timeout=2) as r:
                    if r.status == 200:
                        TIMINGS["server_up_since_start"] = time.perf_counter() - self.t0
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"the temporary Prefect server did not start within {timeout:.0f} s; "
                           f"set {API_ENV} to a running server (prefect server start)")

    def stop(self) -> None:
        """Terminate the server (kill it after 5 s) and reap it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


_server: Optional[LocalServer] = None


def _exit_on(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def start_server() -> Optional[LocalServer]:
    """Unless a Prefect API is configured, start a temporary local server and point this
    process at it (``PREFECT_API_URL``: call before Prefect is imported). From then on SIGTERM
    and SIGHUP end this process through its ``finally`` blocks, as SIGINT does. Call
    :func:`stop_server` in a ``finally``."""
    global _server, LAST_SERVER
    if _server is not None or configured_api():
        return _server
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) in (signal.SIG_DFL, None):
            signal.signal(sig, _exit_on)
    _server = LocalServer()
    os.environ[API_ENV] = LAST_SERVER = _server.api_url
    return _server


def _drain() -> None:
    """Send the logs and events Prefect still holds, while the server is up to take them
    (else Prefect prints "Error logging to API" at exit). At most 5 s each."""
    if "prefect.logging.handlers" not in sys.modules:
        return  # Prefect never ran here: nothing queued
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        try:
            worker.drain_all(timeout=5)
        except RuntimeError:  # never started
            pass


def stop_server() -> None:
    """Stop the server :func:`start_server` started (no-op when it started none)."""
    global _server
    server, _server = _server, None
    if server is not None:
        _drain()
        if os.environ.get(API_ENV) == server.api_url:
            del os.environ[API_ENV]
        server.stop()


@contextlib.contextmanager
def local_settings() -> Iterator[None]:
    """Without a server of the user's (none configured, or our temporary one), switch off the
    flow-run heartbeat: nobody watches the run for a crash. (It costs our flows' callers no
    time: they run on Prefect's async engine, which does not wait for the heartbeat thread at
    the end, ``flows/entry.py``.)"""
    from prefect.settings import (PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY,
                                  temporary_settings)

    if PREFECT_API_URL.value() and _server is None:
        yield
        return
    with temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
        yield


def call_flow(flow: str, /, **params: Any) -> Any:
    """Run ``flow`` ("evaluate_agent", "evaluate_at_scale", "audit_run", "promote_baseline") here and now; its
    result, or the exception that failed it. Waits for a server :func:`start_server` started."""
    t0 = time.perf_counter()
    flows = importlib.import_module(__package__)  # this package, under whichever name it was loaded
    fn = getattr(flows, flow)  # imports Prefect (while a server we started boots)
    TIMINGS["import_flows"] = time.perf_counter() - t0
    if _server is not None:
        _server.wait_ready(float(os.environ.get("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS")
                                 or 90))
    t0 = time.perf_counter()
    try:
        with local_settings():
            return fn(**params)
    finally:
        TIMINGS["flow"] = time.perf_counter() - t0
