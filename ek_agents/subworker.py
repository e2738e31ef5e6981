"""A worker subprocess that calls one module-level function for each request, beside the process
that uses the answers: ``python -m ek_agents.subworker MODULE:FUNCTION`` (started by
:class:`SubWorker`).

A monitor window spends about half its work parsing lines (orjson, then the spans); the worker
parses blocks ahead while the window works on earlier ones. It is a plain subprocess, not a
``multiprocessing`` child: those start by importing the caller's main module again, which runs
any unguarded top-level code of a user's script a second time.

The protocol (stdin / stdout of the worker, each message a little-endian 8-byte length and a
pickle; only ever between this module's two ends): the worker imports its function, then writes
``("ready",)``; for each request ``(args, kwargs)`` it writes ``(True, function(*args,
**kwargs))`` or ``(False, the exception it raised)``, in order; it exits at the end of its
input. This module imports nothing of ek_agents: the function's module is imported by name in
the worker only.
"""
from __future__ import annotations

import gc
import importlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO, Optional


__all__ = ["SubWorker", "WorkerGone", "main"]

_LEN = struct.Struct("<Q")
#: How long one request may take in the worker before the caller gives up on it (and does
#: the work itself).
RESULT_TIMEOUT_S = 300.0


class WorkerGone(Exception):
    """The worker process ended or stopped answering (the caller parses the rest itself)."""


def _read_frame(stream: BinaryIO) -> Optional[bytes]:
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    body = stream.read(n)
    return body if len(body) == n else None


def _write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_LEN.pack(len(payload)))
    stream.write(payload)
    stream.flush()


class SubWorker:
    """One worker process calling ``target`` (``"package.module:function"``): :meth:`submit`
    the arguments of a call, read the answers back in the same order with :meth:`result`.
    :attr:`ready` is set once the worker has imported its function (a caller sends nothing
    before: it does that work itself). Threads feed the worker and drain its answers, so that
    neither side ever waits on a full pipe."""

    def __init__(self, target: str) -> None:
        root = str(Path(__file__).resolve().parents[1])  # where ek_agents is imported from
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "ek_agents.subworker", target],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.ready = threading.Event()
        self.pending = 0  # requests sent whose answer was not read yet
        self._requests: queue.Queue = queue.Queue()
        self._answers: queue.Queue = queue.Queue()
        self._threads = [threading.Thread(target=self._feed, daemon=True, name="ek-otlp-feed"),
                         threading.Thread(target=self._drain, daemon=True, name="ek-otlp-drain")]
        for t in self._threads:
            t.start()

    def _feed(self) -> None:
        stdin = self.proc.stdin
        try:
            while (payload := self._requests.get()) is not None:
                _write_frame(stdin, payload)
        except (OSError, ValueError):  # the worker is gone: _drain says so
            pass
        finally:
            try:
                stdin.close()
            except OSError:
                pass

    def _drain(self) -> None:
        first = True
        try:
            while (frame := _read_frame(self.proc.stdout)) is not None:
                if first:
                    first = False
                    self.ready.set()
                    continue
                self._answers.put(frame)
        except (OSError, ValueError):
            pass
        self._answers.put(None)  # end of the worker's answers

    def submit(self, *args: Any, **kwargs: Any) -> None:
        """Send one call's arguments."""
        self._requests.put(pickle.dumps((args, kwargs), protocol=pickle.HIGHEST_PROTOCOL))
        self.pending += 1

    def answered(self) -> bool:
        """Whether the answer :meth:`result` would give next has arrived already."""
        return not self._answers.empty()

    def result(self) -> Any:
        """The answer to the oldest call not read yet: what the function returned, or the
        exception it raised, raised here; WorkerGone when the worker ended first."""
        try:
            frame = self._answers.get(timeout=RESULT_TIMEOUT_S)
        except queue.Empty:
            raise WorkerGone(f"no answer in {RESULT_TIMEOUT_S:.0f} s") from None
        if frame is None:
            self._answers.put(None)  # (every later call ends the same way)
            raise WorkerGone(f"the worker ended (exit code {self.proc.poll()})")
        self.pending -= 1
        ok, got = pickle.loads(frame)
        if not ok:
            raise got
        return got

    def close(self) -> None:
        """End the worker (what it was still doing is dropped) and wait for it."""
        self._requests.put(None)
        try:
            self.proc.wait(timeout=0.5 if self.pending else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for t in self._threads:
            t.join(timeout=5)
        self.proc.stdout.close()


def main(argv: Optional[list] = None) -> int:
    """The worker's loop (see the module docstring)."""
    (target,) = sys.argv[1:] if argv is None else argv
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(1), "wb")  # the answers' pipe, kept for them alone: anything
    os.dup2(2, 1)                        # printed goes to stderr
    sys.stdout = sys.stderr
    gc.disable()  # (it holds one call's objects at a time: containers, no cycles; a collection
    #               would walk them all, over and over, as they are made)
    _write_frame(stdout, pickle.dumps(("ready",)))
    while (frame := _read_frame(stdin)) is not None:
        args, kwargs = pickle.loads(frame)
        try:
            answer = (True, function(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - sent to the caller, which raises it
            answer = (False, e)
        _write_frame(stdout, pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
