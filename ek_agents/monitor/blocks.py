"""Blocks of OTLP/JSON lines read into spans, some of them ahead in worker processes: what a
monitor window's reader (:mod:`.ingest`) reads its files with."""
from __future__ import annotations

import collections
import os
from collections.abc import Iterable, Iterator
from typing import Any, Optional

from ..base import Cost, Episode, ModelCall, Step, Trajectory
from ..bridge.otel import RawSpan, spans_of_lines
from ..core import Provenance
from ..subworker import SubWorker, WorkerFailed, WorkerGone
from .traceepisodes import episode_of

__all__ = ["LineParser", "read_block", "read_block_plain", "block_of_plain", "BlockMoved", "is_root", "READ_DEPTH", "PARALLEL_BYTES",
           "AHEAD", "WORKERS"]

#: Files of at least this many bytes in all are parsed partly in worker processes (when
#: ``workers`` is not given and the machine has 2 cores or more): below it, starting them
#: (about half a second) would cost more than they save.
PARALLEL_BYTES = 64 << 20
#: Worker processes a large read starts (2: the parent's share of a window -- its episodes'
#: storage, the window's documents -- is about what one worker does; two keep both cores busy).
WORKERS = 2
#: How many units of a read (blocks of lines, file starts and ends) the workers may be ahead.
AHEAD = 10
#: The nesting a trace line may have (orjson's own limit): the reader reads what it keeps of
#: a span at most a few levels deep (attribute values: 8), so a line is not walked for depth.
READ_DEPTH = 1024


def is_root(s: RawSpan) -> bool:
    """Whether ``s`` is the ended root of its trace (no parent, an end time)."""
    return s.parent_id is None and s.end_ns > 0


class LineParser:
    """Parses the ``"lines"`` units of a read (:meth:`parsed`), in order. With worker processes
    (``workers``: None decides from the input -- :data:`WORKERS` on a machine of 2 or more
    cores for at least :data:`PARALLEL_BYTES` of files, else none), blocks are sent to them in
    turn, up to :data:`AHEAD` units ahead of the one being read (:func:`read_block`), so that
    parsing (orjson and the spans: about half a window's work) runs beside the rest of the
    window; blocks reached while the workers start, and every block after one failed, are
    parsed here. With ``build`` (a streamed read of one episode per trace: ``(task_attr,
    slice_attr, where)``) a worker also makes the episodes of a share of the traces whose spans
    are all on one line, the line of their ended root; the share follows the processes' pace
    (:attr:`share`: down when this process waits for a worker, up when the workers wait for
    it). The results are the same either way: :func:`read_block` is a pure function of its
    block, and a trace made by a worker is used only when its spans are exactly that line's
    (the reader checks it)."""

    def __init__(self, keep: Any, workers: Optional[int], size: int,
                 build: Optional[tuple] = None) -> None:
        if workers is None:
            workers = WORKERS if (os.cpu_count() or 1) >= 2 and size >= PARALLEL_BYTES else 0
        self.keep, self.build, self.workers = keep, build, []
        self.by_worker = 0  # blocks the workers parsed
        self._turn = 0
        for _ in range(workers):
            try:
                self.workers.append(SubWorker(f"{__name__}:read_block_plain"))
            except OSError:  # no process can be started here: parse in this one
                break
        # two workers can make every episode while this process stores them; one, about half
        self.share = 0.0 if build is None else 1.0 if len(self.workers) > 1 else 0.5

    @property
    def worker(self) -> Optional[SubWorker]:
        """The first worker (None without one)."""
        return self.workers[0] if self.workers else None

    def __enter__(self) -> "LineParser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _stop(self) -> None:
        for w in self.workers:
            w.close()
        self.workers = []

    def _pace(self, answered: bool) -> None:
        """The workers' share of episodes after a block: more when its answer was there
        before this process asked (this process is the slower), less when it was not."""
        self.share = min(1.0, self.share + 0.01) if answered else max(0.0, self.share - 0.03)

    def _result(self, unit: tuple, sent: Optional[SubWorker]) -> tuple:
        if unit[0] != "lines":
            return unit
        data, base, url, _ = unit[1]
        if sent is not None and sent in self.workers:
            try:
                if self.build is not None:
                    self._pace(sent.answered())
                lines, cut, built = block_of_plain(sent.result())
                self.by_worker += 1
                return "lines", (lines, cut, built, data, base, url), unit[2]
            except WorkerFailed:  # (its file rotated away, or an error): parsed here, where
                pass              # an error is raised in its turn
            except WorkerGone:  # one ended (killed, out of memory): the rest is parsed here
                self._stop()
        lines, cut, built = read_block(data, base, url, self.keep)
        return "lines", (lines, cut, built, data, base, url), unit[2]

    def parsed(self, units: Iterable[tuple]) -> Iterator[tuple]:
        """``units`` in order, each ``("lines", (bytes, offset, url, (device, inode) of a plain
        local file or None), end)`` replaced by
        ``("lines", (spans by line, values cut, episodes made, bytes, offset, url), end)``
        (:func:`read_block`)."""
        pending: collections.deque = collections.deque()
        for unit in units:
            sent = None
            if unit[0] == "lines" and self.workers:
                n = len(self.workers)
                for k in range(n):  # the next worker in turn that has started
                    w = self.workers[(self._turn + k) % n]
                    if w.is_ready():
                        self._turn += k + 1
                        data, base, url, local = unit[1]
                        w.submit(None if local else data, base, url, self.keep,
                                 self.build and (self.share, *self.build), len(data), local)
                        sent = w
                        break
            pending.append((unit, sent))
            if len(pending) > (AHEAD if self.workers else 0):
                yield self._result(*pending.popleft())
        while pending:
            yield self._result(*pending.popleft())


class BlockMoved(Exception):
    """The file a block was to be read from is not the one its reader read (rotated away)."""


def _region(url: str, base: int, length: int, file_id: tuple) -> bytes:
    """``length`` bytes of the local file ``url`` from ``base``, if it is still the file
    ``file_id`` (device, inode) names and holds them: BlockMoved otherwise."""
    try:
        with open(url, "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != tuple(file_id):
                raise BlockMoved(url)
            f.seek(base)
            data = f.read(length)
    except OSError:
        raise BlockMoved(url) from None
    if len(data) != length:
        raise BlockMoved(url)
    return data


def read_block(data: Optional[bytes], base: int, url: str, keep: Any,
               build: Optional[tuple] = None, length: int = 0, file_id: Optional[tuple] = None
               ) -> tuple[list, int, dict]:
    """The spans of a block of complete lines (the first at byte ``base`` of ``url``), as
    :func:`~ek_agents.bridge.otel.spans_of_lines` reads them: ``(lines, values cut, made)``.
    ``data`` None: the block is the ``length`` bytes from ``base`` of the plain local file
    ``url``, read here when it is still the file ``file_id`` (device, inode) names -- a worker
    reads the blocks of such files itself, saving their copy through a pipe; an exporter only
    appends to a file, and one rotated away is another inode (BlockMoved: its reader parses the
    block it holds).
    With ``build`` (``(share, task_attr, slice_attr, where)``), ``made`` holds, by line offset,
    ``{trace id: its episode, or None without a model call}`` for about ``share`` of the traces
    whose spans are all on one line of the block, with their ended root: made by
    :func:`~ek_agents.monitor.traceepisodes.episode_of` from that line's spans as a reader
    holding them would make it (its trial numbered 0; a trace whose episode raises is left to
    the reader, which raises the same); the spans of those traces lose their attributes
    (``attrs`` None: the episode holds what was read of them). A pure function of its
    arguments: a window's worker process runs it."""
    if data is None:
        data = _region(url, base, length, file_id)
    lines, cut = spans_of_lines(data, base, url, group_attr=keep, max_depth=READ_DEPTH)
    made: dict = {}
    if not build or build[0] <= 0:
        return lines, cut, made
    share, task_attr, slice_attr, where = build
    line_of: dict = {}  # trace id -> the index of its one line, -1 when on several
    for i, (_, spans) in enumerate(lines):
        for s in spans or ():
            j = line_of.setdefault(s.trace_id, i)
            if j != i:
                line_of[s.trace_id] = -1
    due = 0.0
    for i, (at, spans) in enumerate(lines):
        if not spans:
            continue
        ours: dict = {}
        for s in spans:
            if line_of[s.trace_id] == i:
                ours.setdefault(s.trace_id, {})[s.span_id] = s
        for tid, by_span in ours.items():
            if not any(map(is_root, by_span.values())):
                continue
            due += share
            if due < 1.0:
                continue
            due -= 1.0
            try:
                ep = episode_of(tid, list(by_span.values()), {}, task_attr, slice_attr, where)
            except Exception:  # noqa: BLE001 - left to the reader, which raises it in its turn
                continue
            made.setdefault(at, {})[tid] = ep
        for tid in made.get(at, ()):
            for s in spans:
                if s.trace_id == tid:
                    s.attrs = None
    return lines, cut, made


# --------------------------------------------------------------------------- to and from a worker
# A worker's answer travels as plain values (``ek_agents.subworker`` writes them with marshal):
# a span as the tuple of its fields, an episode as the tuples of the fields of its shapes, in
# the order the classes declare them, rebuilt here as ``core.construct_from`` builds them.

#: The shape held by each field of an episode's shapes (a 1-tuple: a tuple of that shape).
_NESTED: dict = {Episode: {"trajectory": Trajectory, "cost": Cost, "provenance": Provenance},
                 Trajectory: {"steps": (Step,)}, Cost: {"calls": (ModelCall,)}}


def _shape_plain(obj: Any, cls: type) -> tuple:
    names = tuple(cls.__pydantic_fields__)
    d = obj.__dict__
    if type(obj) is not cls or tuple(d) != names:
        raise ValueError(f"{type(obj).__name__} is not a {cls.__name__} as a reader makes it")
    nested = _NESTED.get(cls, {})
    out = []
    for name, v in d.items():
        sub = nested.get(name)
        if sub is None or v is None:
            out.append(v)
        elif type(sub) is tuple:
            out.append(tuple(_shape_plain(x, sub[0]) for x in v))
        else:
            out.append(_shape_plain(v, sub))
    return tuple(out)


def _shape_of(values: tuple, cls: type) -> Any:
    nested = _NESTED.get(cls, {})
    d = {}
    for name, v in zip(cls.__pydantic_fields__, values):
        sub = nested.get(name)
        if sub is None or v is None:
            d[name] = v
        elif type(sub) is tuple:
            d[name] = tuple(_shape_of(x, sub[0]) for x in v)
        else:
            d[name] = _shape_of(v, sub)
    obj = object.__new__(cls)
    obj.__dict__.update(d)
    return obj


def _span_plain(s: RawSpan) -> tuple:
    return (s.trace_id, s.span_id, s.parent_id, s.name, s.start_ns, s.end_ns, s.attrs, s.error,
            s.scope, s.events)


def read_block_plain(*args: Any) -> tuple:
    """:func:`read_block` as a worker answers it: its spans and episodes as plain values
    (:func:`block_of_plain` makes them again)."""
    lines, cut, made = read_block(*args)
    return ([(at, None if spans is None else [_span_plain(s) for s in spans])
             for at, spans in lines], cut,
            {at: {tid: None if ep is None else _shape_plain(ep, Episode) for tid, ep in eps.items()}
             for at, eps in made.items()})


def block_of_plain(plain: tuple) -> tuple[list, int, dict]:
    """What :func:`read_block` returned, from :func:`read_block_plain`'s plain values: the same
    spans and episodes."""
    lines, cut, made = plain
    return ([(at, None if spans is None else [RawSpan(*t) for t in spans]) for at, spans in lines],
            cut, {at: {tid: None if ep is None else _shape_of(ep, Episode) for tid, ep in eps.items()}
                  for at, eps in made.items()})
