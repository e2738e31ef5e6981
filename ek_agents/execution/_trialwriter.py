"""The writer threads under :class:`ek_agents.execution._trialrunner.TrialRunner`: a run's finished
trials stored in segments (``segments.SegmentWriter``) as they finish -- a segment sealed when
it is full or when its oldest trial reaches the writer's flush age -- with the trial loop held
back, without polling, when the writer falls behind.
"""
from __future__ import annotations

import asyncio
import queue
import threading
import time
from typing import Any, Callable, Optional

from ..records import trials as stored_trials
from ..base import Episode
from ..core import construct
from ..records.segments import Pair, SegmentWriter

__all__ = ["TrialWriter", "WRITER_BACKLOG", "abort_on"]


#: Most finished trials a run keeps ahead of its segment writer, both called and not yet handed
#: over, and handed over and not yet taken: a killed process loses the segment being stored,
#: the one filling (at most its flush age's worth), at most twice this many and the trials in
#: flight.
WRITER_BACKLOG = 512


class TrialWriter:
    """A run's finished trials, stored in segments by writer threads of its own.

    The trial loop hands each finished trial's bytes over with one queue put (no future, no
    wake-up of the loop per write) and goes on with the next trial. The writer thread buffers
    them in ``segments``; it seals the buffer when it is full or when its oldest trial has
    waited the writer's flush age (``SegmentWriter.deadline``: the thread waits on its queue
    with a timeout until then, so an idle run costs no CPU), and a flusher thread stores each
    sealed segment and its index while the next one fills. ``written`` gets each trial's
    :class:`records.trials.StoredTrial` once its segment is indexed (and ``then`` is called with it).
    The first failed write is kept in ``error`` and reported once with ``on_error`` (the run
    then stops); later trials are not written. A trial not yet indexed when the process dies
    is simply not stored: a resume runs it again, as it would a trial still in flight.
    """

    def __init__(self, segments: SegmentWriter, written: dict,
                 on_error: Callable[[BaseException], None], *,
                 then: Optional[Callable[[stored_trials.StoredTrial, Optional[Episode]], Any]] = None,
                 keep: bool = True) -> None:
        self.segments, self.written, self.on_error = segments, written, on_error
        self.then = then
        self.keep = keep  # False: the stored trials are handed to ``then`` only, not kept
        # a sealed segment is stored by a thread of its own while the next one fills; one at a
        # time (a kill loses at most the two)
        self.sealed: queue.SimpleQueue = queue.SimpleQueue()
        self.one_sealed = threading.Semaphore(1)
        self.error: Optional[BaseException] = None
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.waiting: Optional[asyncio.Future] = None  # room(): the loop's future, if any
        self.room_cv = threading.Condition(self.lock)  # wait_room(): trial threads
        self.sync_waiters, self.closed = 0, False
        self.flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                        name="ek-segment-flusher")
        self.thread = threading.Thread(target=self._loop, daemon=True, name="ek-store-writer")
        self.flusher.start()
        self.thread.start()

    def put(self, pair: Pair, data: bytes, episode: Optional[Episode] = None) -> None:
        """Store ``data`` as trial ``pair``'s line (on the writer thread, soon); ``episode``:
        the episode ``data`` parses back to, when the caller knows it (handed to ``then``)."""
        self.queue.put((pair, data, episode, time.monotonic()))

    def room(self) -> asyncio.Future:
        """(On the event loop) a future done once the backlog is down to half of
        :data:`WRITER_BACKLOG`: the writer thread resolves it (one thread hop per wait)."""
        with self.lock:
            if self.waiting is None:
                self.waiting = asyncio.get_running_loop().create_future()
                if self.queue.qsize() <= WRITER_BACKLOG // 2 or self.closed:  # drained meanwhile
                    self.waiting, fut = None, self.waiting
                    fut.set_result(None)
                    return fut
            return self.waiting

    def wait_room(self) -> None:
        """(On a trial thread) block until the backlog is down to half of
        :data:`WRITER_BACKLOG` (or the writer has failed or closed)."""
        with self.lock:
            self.sync_waiters += 1
            try:
                while (self.queue.qsize() > WRITER_BACKLOG // 2 and self.error is None
                       and not self.closed):
                    self.room_cv.wait()
            finally:
                self.sync_waiters -= 1

    def _wake(self, force: bool = False) -> None:
        """(On the writer thread) resolve :meth:`room`'s future and wake :meth:`wait_room`'s
        threads once the backlog is low (``force``: now)."""
        with self.lock:
            if not force and self.queue.qsize() > WRITER_BACKLOG // 2:
                return
            if self.sync_waiters:
                self.room_cv.notify_all()
            fut, self.waiting = self.waiting, None
        if fut is not None:
            fut.get_loop().call_soon_threadsafe(lambda: fut.done() or fut.set_result(None))

    def backlog(self) -> int:
        """Trials handed over and not yet taken by the writer thread."""
        return self.queue.qsize()

    def close(self) -> None:
        """Wait until every trial handed over is stored (or skipped after a failure)."""
        self.closed = True
        self.queue.put(None)
        self.thread.join()
        self._wake(force=True)

    def _loop(self) -> None:
        """Each trial buffered, each full (or old enough) segment sealed and handed to the
        flusher, the rest at the end -- when the run is cancelled too (``close`` is called
        from ``run_all``'s ``finally``)."""
        segs = self.segments
        while True:
            wait = segs.deadline() - time.monotonic()
            if wait <= 0:
                self._seal()
                continue
            try:  # a timed wait on the queue: no polling, the age flush wakes it
                item = self.queue.get(timeout=None if wait == float("inf") else wait)
            except queue.Empty:
                continue
            if self.waiting is not None or self.sync_waiters:
                self._wake()
            if self.error is not None:
                if item is None:
                    self.sealed.put(None)
                    return
                continue
            if item is None:
                self._seal()
                self.sealed.put(None)
                self.flusher.join()
                return
            pair, data, episode, finished_at = item
            segs.put(pair, data, episode, finished_at)
            if segs.full():
                self._seal()

    def _seal(self) -> None:
        """Seal the buffer and hand it to the flusher, once the segment before is stored."""
        try:
            sealed = self.segments.seal()
        except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
            self._fail(exc)
            return
        if sealed is not None:
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
            self._wake(force=True)


def _stored(task_id: Any, trial: Any, key: str, sha: str, data: bytes) -> stored_trials.StoredTrial:
    """A stored trial's record. Every field is a str/int made here: not validated again
    (0.3 s per 20,000 trials on the GIL the event loops need); any other pair goes through
    the class."""
    make = construct if type(task_id) is str and type(trial) is int else _validated
    return make(stored_trials.StoredTrial, task_id=task_id, trial=trial, key=key, sha256=sha,
                data=data.decode("ascii"))


def _validated(cls: type, **fields: Any) -> Any:
    return cls(**fields)


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
