"""The writer threads under :class:`ek_agents.execution._trialrunner.TrialRunner`: a run's finished
trials stored as they finish, one file each or in segments (``segments.SegmentWriter``), with
the event loop held back -- without polling -- when a segment writer falls behind.
"""
from __future__ import annotations

import asyncio
import os
import queue
import threading
from typing import Any, Callable, Optional

from ..records import trials as stored_trials
from ..base import Episode
from ..core import construct
from ..store import Store, episode_key
from ..records.segments import Pair, SegmentWriter

__all__ = ["TrialWriter", "WRITER_BACKLOG", "abort_on", "writer_threads"]


#: Most finished trials a segmented run's event loop keeps ahead of its segment writer, both
#: called and not yet handed over, and handed over and not yet taken: a killed process loses
#: the segment being stored, the one filling, at most twice this many and the trials in flight.
WRITER_BACKLOG = 512


class TrialWriter:
    """A run's trial files, stored as the trials finish by writer threads of its own.

    The event loop hands each finished trial's bytes over with one queue put (no future, no
    wake-up of the loop per write: a thread hop per trial cost ~0.1 ms of the loop's CPU) and
    goes on with the next trial; ``written`` gets each trial's :class:`records.trials.StoredTrial`
    once its file is in the store (and ``then`` is called with it). The first failed write is kept in ``error`` and reported
    once with ``on_error`` (the run then stops); later trials are not written. A trial
    handed over but not yet written when the process dies is simply not stored: a resume
    runs it again, as it would a trial still in flight.
    """

    def __init__(self, store: Store, run_id: str, written: dict,
                 on_error: Callable[[BaseException], None], *, threads: int,
                 then: Optional[Callable[[stored_trials.StoredTrial, Optional[Episode]], Any]] = None,
                 segments: Optional[SegmentWriter] = None, keep: bool = True) -> None:
        self.store, self.run_id, self.written, self.on_error = store, run_id, written, on_error
        self.then = then
        self.segments = segments  # one thread then: the segment buffer is that thread's
        self.keep = keep  # False: the stored trials are handed to ``then`` only, not kept
        if segments is not None:  # a sealed segment is stored by a thread of its own while
            # the next one fills; one at a time (a kill loses at most the two)
            self.sealed: queue.SimpleQueue = queue.SimpleQueue()
            self.one_sealed = threading.Semaphore(1)
            self.flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                            name="ek-segment-flusher")
            self.flusher.start()
        self.error: Optional[BaseException] = None
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.lock, self.waiting = threading.Lock(), None  # room(): the loop's future, if any
        self.threads = [threading.Thread(target=self._loop, daemon=True, name="ek-store-writer")
                        for _ in range(threads)]
        for t in self.threads:
            t.start()

    def put(self, pair: Pair, data: bytes, episode: Optional[Episode] = None) -> None:
        """Store ``data`` as trial ``pair``'s file (on a writer thread, soon); ``episode``:
        the episode ``data`` parses back to, when the caller knows it (handed to ``then``)."""
        self.queue.put((pair, data, episode))

    def room(self) -> asyncio.Future:
        """(On the event loop) a future done once the backlog is down to half of
        :data:`WRITER_BACKLOG`: the segment writer thread resolves it (one thread hop per wait)."""
        with self.lock:
            if self.waiting is None:
                self.waiting = asyncio.get_running_loop().create_future()
                if self.queue.qsize() <= WRITER_BACKLOG // 2:  # drained meanwhile
                    self.waiting, fut = None, self.waiting
                    fut.set_result(None)
                    return fut
            return self.waiting

    def _wake(self) -> None:
        """(On the writer thread) resolve :meth:`room`'s future once the backlog is low."""
        with self.lock:
            if self.waiting is None or self.queue.qsize() > WRITER_BACKLOG // 2:
                return
            fut, self.waiting = self.waiting, None
        fut.get_loop().call_soon_threadsafe(lambda: fut.done() or fut.set_result(None))

    def backlog(self) -> int:
        """Trials handed over and not yet taken by a segment writer (0 without segments: the
        per-trial writers are not throttled)."""
        return self.queue.qsize() if self.segments is not None else 0

    def close(self) -> None:
        """Wait until every trial handed over is written (or skipped after a failure)."""
        for _ in self.threads:
            self.queue.put(None)
        for t in self.threads:
            t.join()

    def _loop(self) -> None:
        if self.segments is not None:
            return self._segment_loop()
        while (item := self.queue.get()) is not None:
            if self.error is not None:
                continue
            (task_id, trial), data, episode = item
            key = episode_key(self.run_id, task_id, trial)
            try:
                sha = self.store.write_bytes(key, data)
                stored = self.written[(task_id, trial)] = _stored(task_id, trial, key, sha, data)
                if self.then is not None:
                    self.then(stored, episode)
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                self._fail(exc)

    def _segment_loop(self) -> None:
        """:meth:`_loop` of a segmented run: each trial buffered, each full segment stored
        and indexed (``segments.SegmentWriter``), the rest at the end -- when the run is
        cancelled too (``close`` is called from ``run_all``'s ``finally``)."""
        while True:
            item = self.queue.get()
            if self.waiting is not None:
                self._wake()
            if self.error is not None:
                if item is None:
                    return
                continue
            try:
                if item is None:
                    self._hand(self.segments.seal())
                    self._hand(None)
                    self.flusher.join()
                    return
                pair, data, episode = item
                self.segments.put(pair, data, episode)
                if self.segments.full():
                    self._hand(self.segments.seal())
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                self._fail(exc)
                if item is None:
                    self.sealed.put(None)
                    self.flusher.join()
                    return

    def _hand(self, sealed: Any) -> None:
        """Hand a sealed segment (None: the end) to the flusher, once the one before is stored."""
        if sealed is None:
            self.sealed.put(None)
            return
        self.one_sealed.acquire()
        self.sealed.put(sealed)

    def _flush_loop(self) -> None:
        while (sealed := self.sealed.get()) is not None:
            try:
                if self.error is None:
                    self._stored_segment(self.segments.store_sealed(sealed), sealed.episodes)
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                self._fail(exc)
            finally:
                self.one_sealed.release()

    def _stored_segment(self, trials: list, episodes: dict) -> None:
        if not self.keep and self.then is None:
            return
        for (task_id, trial), key, sha, data in trials:
            stored = _stored(task_id, trial, key, sha, data)
            if self.keep:
                self.written[(task_id, trial)] = stored
            if self.then is not None:
                self.then(stored, episodes.get((task_id, trial)))

    def _fail(self, exc: BaseException) -> None:
        """Keep the run's first failure and report it (once) with ``on_error``."""
        if self.error is None:
            self.error = exc
            self.on_error(exc)


def _stored(task_id: Any, trial: Any, key: str, sha: str, data: bytes) -> stored_trials.StoredTrial:
    """A stored trial's record. Every field is a str/int made here: not validated again
    (0.3 s per 20,000 trials on the GIL the event loops need); any other pair goes through
    the class."""
    make = construct if type(task_id) is str and type(trial) is int else _validated
    return make(stored_trials.StoredTrial, task_id=task_id, trial=trial, key=key, sha256=sha,
                data=data.decode("ascii"))


def _validated(cls: type, **fields: Any) -> Any:
    return cls(**fields)


def writer_threads(store: Store, max_concurrency: int) -> int:
    """Writer threads for a run's trial files: one or two for a local disk (a write is ~0.1 ms
    of CPU and an fsync), as many as asyncio's default executor has for a remote store (a
    PUT waits on the network), never more than trials in flight."""
    per_store = 2 if store.local else min(32, (os.cpu_count() or 1) + 4)
    return max(1, min(per_store, max_concurrency))


def abort_on(tg: asyncio.TaskGroup, loop: asyncio.AbstractEventLoop
              ) -> Callable[[BaseException], None]:
    """A callback for another thread: fail the task group ``tg`` (running on ``loop``) with
    ``exc``, so that its trials are cancelled and ``exc`` is what the run raises. Once the
    group has finished (every trial done, writes still pending) the caller raises it itself."""

    async def fail(exc: BaseException) -> None:
        raise exc

    def abort(exc: BaseException) -> None:
        failing = fail(exc)
        try:
            tg.create_task(failing)
        except RuntimeError:  # finished or already shutting down: the run reports the error
            failing.close()

    def from_thread(exc: BaseException) -> None:
        try:
            loop.call_soon_threadsafe(abort, exc)
        except RuntimeError:  # the loop is closed: the run is over, close() reports it
            pass

    return from_thread
