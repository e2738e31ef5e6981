"""A worker subprocess that calls one module-level function for each request, beside the process
that uses the answers: ``python -m ek_agents.subworker MODULE:FUNCTION FOLDER`` (started by
:class:`SubWorker`).

A monitor window spends about half its work parsing lines (orjson, then the spans); the worker
parses blocks ahead while the window works on earlier ones. It is a plain subprocess, not a
``multiprocessing`` child: those start by importing the caller's main module again, which runs
any unguarded top-level code of a user's script a second time.

The protocol (only ever between this module's two ends): each call's arguments ``(args,
kwargs)`` and each answer (``(True, what the function returned)`` or ``(False, what it
raised, in words)``) are written with :mod:`marshal` -- plain values only (str, bytes, numbers,
None, tuples, lists, dicts, sets), which loading never turns into code, unlike a pickle -- to a
file of FOLDER (a private temporary folder, removed at the end);
the worker's stdin and stdout carry only the files' names, each message a little-endian 8-byte
length and its bytes, in order. The worker first writes ``ready`` once its function is
imported; it exits at the end of its input. (Payloads go through files, not the pipes: a pipe
moves 64 KiB per system call, and a thread feeding it from a busy Python process waits for the
interpreter's lock after each one -- the worker starved, several MiB a block.) This module
imports nothing of ek_agents: the function's module is imported by name in the worker only.
"""
from __future__ import annotations

import gc
import importlib
import os
import marshal
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, BinaryIO, Optional

__all__ = ["SubWorker", "WorkerGone", "WorkerFailed", "main"]

_LEN = struct.Struct("<Q")
#: How long one request may take in the worker before the caller gives up on it (and does
#: the work itself).
RESULT_TIMEOUT_S = 300.0


class WorkerGone(Exception):
    """The worker process ended or stopped answering (the caller does the rest itself)."""


class WorkerFailed(Exception):
    """The worker's call raised (its type and message in words): the caller does that call
    itself, and meets the error, if it is one, where it would have."""


def _read_frame(stream: BinaryIO) -> Optional[bytes]:
    head = stream.read(_LEN.size)
    if len(head) < _LEN.size:
        return None
    (n,) = _LEN.unpack(head)
    body = stream.read(n)
    return body if len(body) == n else None


def _write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_LEN.pack(len(payload)) + payload)
    stream.flush()


def _dump(path: str, obj: Any) -> None:
    with open(path, "wb") as f:
        f.write(marshal.dumps(obj))


def _load(path: str) -> Any:
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)
    return marshal.loads(data)


class SubWorker:
    """One worker process calling ``target`` (``"package.module:function"``): :meth:`submit`
    the arguments of a call, read the answers back in the same order with :meth:`result`
    (arguments and answers: plain values :mod:`marshal` writes).
    :meth:`is_ready` tells (without waiting) whether the worker has imported its function (a
    caller sends nothing before: it does that work itself)."""

    def __init__(self, target: str) -> None:
        root = str(Path(__file__).resolve().parents[1])  # where ek_agents is imported from
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.folder = tempfile.mkdtemp(prefix="ek-subworker-")
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ek_agents.subworker", target, self.folder],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.pending = 0  # calls sent whose answer was not read yet
        self._sent = 0
        self._buf = bytearray()  # what was read of the worker's messages
        self._ready = False
        self._ended = False

    def _read(self, timeout: float) -> None:
        """What the worker wrote, waiting up to ``timeout`` seconds for something."""
        fd = self.proc.stdout.fileno()
        if self._ended or not select.select([fd], [], [], timeout)[0]:
            return
        got = os.read(fd, 1 << 16)
        if got:
            self._buf += got
        else:
            self._ended = True

    def _whole(self) -> int:
        """The length of the next message when all of it has been read, else -1."""
        if len(self._buf) < _LEN.size:
            return -1
        (n,) = _LEN.unpack_from(self._buf)
        return n if len(self._buf) >= _LEN.size + n else -1

    def _frame(self) -> Optional[bytes]:
        """The next whole message read (None: not all of it yet)."""
        n = self._whole()
        if n < 0:
            return None
        body = bytes(self._buf[_LEN.size:_LEN.size + n])
        del self._buf[:_LEN.size + n]
        return body

    def _next(self, timeout: float) -> bytes:
        """The next message, waiting for it; WorkerGone when the worker ended first."""
        deadline = time.monotonic() + timeout
        while (frame := self._frame()) is None:
            if self._ended:
                raise WorkerGone(f"the worker ended (exit code {self.proc.poll()})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerGone(f"no answer in {timeout:.0f} s")
            self._read(left)
        return frame

    def is_ready(self) -> bool:
        """Whether the worker has started (its function imported), without waiting."""
        if not self._ready:
            self._read(0)
            if self._frame() is not None:  # (the first message says so)
                self._ready = True
        return self._ready

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker to start."""
        try:
            if not self._ready:
                self._next(timeout)
                self._ready = True
        except WorkerGone:
            return False
        return True

    def submit(self, *args: Any, **kwargs: Any) -> None:
        """Send one call's arguments."""
        path = os.path.join(self.folder, f"call-{self._sent}")
        self._sent += 1
        _dump(path, (args, kwargs))
        try:
            _write_frame(self.proc.stdin, path.encode())
        except (OSError, ValueError):  # the worker is gone: result() says so
            self._ended = self._ended or self.proc.poll() is not None
        self.pending += 1

    def answered(self) -> bool:
        """Whether the answer :meth:`result` would give next has arrived already."""
        self._read(0)
        return self._whole() >= 0

    def result(self) -> Any:
        """The answer to the oldest call not read yet: what the function returned;
        WorkerFailed when it raised, WorkerGone when the worker ended first."""
        if not self._ready:
            self._next(RESULT_TIMEOUT_S)  # (its first message: started)
            self._ready = True
        path = self._next(RESULT_TIMEOUT_S).decode()
        self.pending -= 1
        ok, got = _load(path)
        if not ok:
            raise WorkerFailed(got)
        return got

    def close(self) -> None:
        """End the worker (what it was still doing is dropped), wait for it, and remove its
        folder."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=0.5 if self.pending else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: Optional[list] = None) -> int:
    """The worker's loop (see the module docstring)."""
    target, folder = sys.argv[1:] if argv is None else argv
    module, _, name = target.partition(":")
    function = getattr(importlib.import_module(module), name)
    stdin = sys.stdin.buffer
    stdout = os.fdopen(os.dup(1), "wb")  # the messages' pipe, kept for them alone: anything
    os.dup2(2, 1)                        # printed goes to stderr
    sys.stdout = sys.stderr
    gc.disable()  # (it holds one call's objects at a time: containers, no cycles; a collection
    #               would walk them all, over and over, as they are made)
    _write_frame(stdout, b"ready")
    n = 0
    while (frame := _read_frame(stdin)) is not None:
        args, kwargs = _load(frame.decode())
        try:
            answer = (True, function(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - told to the caller, which does the call itself
            answer = (False, f"{type(e).__name__}: {e}")
        path = os.path.join(folder, f"answer-{n}")
        n += 1
        try:
            _dump(path, answer)
        except ValueError as e:  # an answer with a value marshal does not write
            _dump(path, (False, f"{type(e).__name__}: {e}"))
        _write_frame(stdout, path.encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
