"""A small TCP fault proxy for store tests: put it in front of moto's S3 server and break the
endpoint mid-run.

``FaultProxy(upstream_port)`` listens on 127.0.0.1 (a free port) and forwards every byte both
ways. ``proxy.mode`` can be switched at any time:

- ``"pass"``:   forward (the endpoint works);
- ``"refuse"``: nothing listens on the port any more (new connections are refused) and every
  open connection is reset;
- ``"reset"``:  connections are accepted and reset at once (RST), open ones too;
- ``"stall"``:  connections are accepted and requests read, but nothing is ever answered, open
  connections included (the endpoint hangs).

Threads, no asyncio: a test drives it from synchronous code. Each connection is one thread
running a ``select`` loop that looks at the mode on every turn.
"""
from __future__ import annotations

import select
import socket
import struct
import threading
from typing import Optional

MODES = ("pass", "refuse", "reset", "stall")
_TICK = 0.05


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server a test or bench starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rst(sock: socket.socket) -> None:
    """Close ``sock`` with an RST (SO_LINGER 0) instead of a FIN."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class FaultProxy:
    """A TCP proxy 127.0.0.1:``port`` -> ``upstream_host``:``upstream_port`` whose ``mode``
    decides whether the endpoint works, refuses, resets or stalls."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = (upstream_host, upstream_port)
        self._mode = "pass"
        self._lock = threading.Lock()
        self._conns: set = set()
        self._closed = False
        self.accepted = 0
        self._listener: Optional[socket.socket] = None
        self.port = self._listen(0)
        self._thread: Optional[threading.Thread] = None
        self._start_accepting()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- control ---------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        with self._lock:
            old, self._mode = self._mode, mode
        if mode == "refuse" and old != "refuse":
            self._stop_accepting()
            self._reset_all()
        elif mode == "reset":
            self._reset_all()
        if old == "refuse" and mode != "refuse":
            self._listen(self.port)
            self._start_accepting()

    def close(self) -> None:
        self._closed = True
        self._stop_accepting()
        self._reset_all()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------
    def _listen(self, port: int) -> int:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(128)
        s.settimeout(_TICK)
        self._listener = s
        return s.getsockname()[1]

    def _start_accepting(self) -> None:
        listener = self._listener
        self._thread = threading.Thread(target=self._accept_loop, args=(listener,), daemon=True,
                                        name="faultproxy-accept")
        self._thread.start()

    def _stop_accepting(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _reset_all(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns), set()
        for pair in conns:
            for s in pair:
                _rst(s)

    def _accept_loop(self, listener: socket.socket) -> None:
        while self._listener is listener and not self._closed:
            try:
                client, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            if self._mode == "reset":
                _rst(client)
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True,
                             name="faultproxy-conn").start()

    def _serve(self, client: socket.socket) -> None:
        upstream: Optional[socket.socket] = None
        if self._mode != "stall":
            try:
                upstream = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                _rst(client)
                return
        pair = (client,) if upstream is None else (client, upstream)
        with self._lock:
            self._conns.add(pair)
        try:
            self._pump(client, upstream)
        except (OSError, ValueError):  # ValueError: _reset_all closed a socket (fd -1) mid-select
            pass
        finally:
            with self._lock:
                self._conns.discard(pair)
            for s in pair:
                try:
                    s.close()
                except OSError:
                    pass

    def _pump(self, client: socket.socket, upstream: Optional[socket.socket]) -> None:
        while not self._closed:
            socks = [client] if upstream is None else [client, upstream]
            ready, _, _ = select.select(socks, [], [], _TICK)
            if self._mode == "stall":  # swallow what the client sends, answer nothing
                if client in ready and not client.recv(65536):
                    return
                continue
            if self._mode != "pass" or upstream is None:  # a stalled connection stays dead
                return
            for s in ready:
                data = s.recv(65536)
                if not data:
                    return
                (upstream if s is client else client).sendall(data)
