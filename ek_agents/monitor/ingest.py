"""Incremental reading of OTLP/JSON trace files: only what no earlier window consumed.

A **ledger** (:class:`Ledger`, stored at ``monitor/<series>/ledger.json``) remembers, per file,
how far it was read. A file is identified by the sha256 of its first line, not by its name, so
that a file renamed by rotation (``traces.jsonl`` -> ``traces.jsonl.1``) is recognised as the
one already read, and the same file delivered twice (a copy in another folder) is read once
(counted in ``duplicate_files``). Per file identity the ledger keeps ``read_to`` (every complete
line before this byte offset has been parsed) and ``resume_at`` (the first line holding a span
of a trace still waiting for its root span: read again next window, its already-consumed
traces skipped). Trace ids consumed are kept too: a trace is consumed once whatever file or line
brings its spans again (``repeated_traces``), and spans arriving for a trace already consumed are
counted (``late_spans``), never made into a second episode.

A trace is **complete** when one of its spans has no parent and has ended (the root); until
then it waits (``pending_traces``). A line not ending in a newline is not read yet (the writer
may be in the middle of it). Bad input is counted, never fatal while something is usable:
lines that are not OTLP/JSON (``bad_lines``, counted once, when first passed), traces with no
model call (``no_model_call``, with the instrumentation scopes of their spans), a file that
shrank below what was read (``shrunk_files``: nothing is re-read of it). Files are read a block
of lines at a time (:func:`~ek_agents.store.sources.iter_source`, ``SOURCE_BLOCK`` bytes), a
plain file from where the window resumes, a compressed one (``.gz``, ``.zst``) decompressed as
it is read; offsets count decompressed bytes.

Two readers share this reading. :func:`read_new_traces` holds every span until the end of the
input, then takes the traces whose root has ended (:func:`episodes_of_traces` makes their
episodes). :func:`iter_new_episodes` makes the episodes as it reads: with ``group_by="trace"`` a
trace is taken once the block of lines holding its ended root has been read, its episode made
and its spans freed, so memory holds the traces in flight, not the window; a span of that
trace coming later in the input is a late span (counted in ``late_spans``, as in the next
window), where :func:`read_new_traces` would have added it to the episode -- the same episodes
whenever a trace's spans come no later than the block of its root, as exporters write them
(children end, and are exported, before their parent). With a grouping attribute the stream
holds every trace to the end of the input (a group gathers traces from anywhere in it) and
groups them as :func:`episodes_of_traces` does. Lines are parsed up to orjson's nesting limit
(:data:`READ_DEPTH`): the reader reads a span's fields and attribute values a few levels deep
only.
"""
from __future__ import annotations

import collections
import hashlib
import itertools
import operator
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..base import Episode, Trajectory
from ..bridge.otel import Ingest, RawSpan, gc_paused, spans_of_lines, trace_parts
from ..core import Provenance, construct_from
from ..errors import BridgeError, InvalidInput
from ..parsing import parse_json
from ..store.sources import SourceFile, iter_source, list_sources
from ..subworker import SubWorker, WorkerGone

__all__ = ["FileMark", "Ledger", "IngestCounts", "TraceBatch", "read_new_traces",
           "episodes_of_traces", "iter_new_episodes", "EpisodeStream", "DEFAULT_SLICE",
           "READ_DEPTH", "PARALLEL_BYTES", "AHEAD", "read_block"]

#: The slice of an episode whose traces carry no slice attribute.
DEFAULT_SLICE = "all"
#: Files of at least this many bytes in all are parsed partly in a worker process (when
#: ``workers`` is not given and the machine has 2 cores or more): below it, starting one
#: (about half a second) would cost more than it saves.
PARALLEL_BYTES = 64 << 20
#: How many units of a read (blocks of lines, file starts and ends) the worker may be ahead.
AHEAD = 6
#: The nesting a trace line may have (orjson's own limit): the reader reads what it keeps of
#: a span at most a few levels deep (attribute values: 8), so a line is not walked for depth.
READ_DEPTH = 1024


class FileMark(BaseModel):
    """How far one file (by identity) has been read."""

    url: str
    read_to: int = 0
    resume_at: int = 0


class Ledger(BaseModel):
    """What a series has consumed (stored as JSON; see the module docstring)."""

    schema_version: int = 1
    files: dict[str, FileMark] = Field(default_factory=dict)
    consumed: set[str] = Field(default_factory=set)
    windows: list[str] = Field(default_factory=list)


class IngestCounts(BaseModel):
    """What a window's reading found, skipped and set aside."""

    files: int = 0
    new_files: int = 0
    duplicate_files: int = 0
    shrunk_files: int = 0
    files_waiting: int = 0
    bytes_read: int = 0
    bad_lines: int = 0
    spans: int = 0
    traces: int = 0
    pending_traces: int = 0
    repeated_traces: int = 0
    late_spans: int = 0
    no_model_call: int = 0
    unknown_scopes: dict[str, int] = Field(default_factory=dict)
    truncated_attributes: int = 0


class TraceBatch(BaseModel):
    """The complete, new traces of a window (spans by trace id) and the ledger after it."""

    model_config = {"arbitrary_types_allowed": True}

    traces: dict[str, list[Any]]
    ledger: Ledger
    counts: IngestCounts


def _attrs_wanted(*attrs: Optional[str]) -> Any:
    got = frozenset(a for a in attrs if a)
    return got or None


def _identity(url: str) -> tuple[Optional[str], list]:
    """The file's identity (sha256 of its first line; None before a complete line) and the
    blocks read to find it (the start of the file, for a reader that starts at 0)."""
    got: list = []
    for block in iter_source(url):
        got.append(block)
        nl = block.find(b"\n")
        if nl >= 0:
            head = b"".join(got[:-1]) + block[:nl] if len(got) > 1 else block[:nl]
            return hashlib.sha256(head).hexdigest(), got
    return None, got


class _LineParser:
    """Parses the ``"lines"`` units of a read (:meth:`parsed`), in order. With a worker process
    (``workers``: None decides from the input -- one worker on a machine of 2 or more cores for
    at least :data:`PARALLEL_BYTES` of files, else none; at most one is used), blocks are sent
    to it up to :data:`AHEAD` units ahead of the one being read (:func:`read_block`), so that
    parsing (orjson and the spans: about half a window's work) runs beside the rest of the
    window; blocks reached while the worker starts, and every block after it failed, are
    parsed here. With ``build`` (a streamed read of one episode per trace: ``(task_attr,
    slice_attr, where)``) the worker also makes the episodes of a share of the traces whose
    spans are all on one line, the line of their ended root; the share follows the two
    processes' pace (:attr:`share`: down when this process waits for the worker, up when the
    worker waits for it). The results are the same either way: :func:`read_block` is a pure
    function of its block, and a trace made by the worker is used only when its spans are
    exactly that line's (:meth:`_Scan.complete`)."""

    def __init__(self, keep: Any, workers: Optional[int], size: int,
                 build: Optional[tuple] = None) -> None:
        if workers is None:
            workers = 1 if (os.cpu_count() or 1) >= 2 and size >= PARALLEL_BYTES else 0
        self.keep, self.build, self.worker = keep, build, None
        self.by_worker = 0  # blocks the worker parsed
        self.share = 0.25 if build is not None else 0.0
        if workers:
            try:
                self.worker = SubWorker(f"{__name__}:read_block")
            except OSError:  # no process can be started here: parse in this one
                self.worker = None

    def __enter__(self) -> "_LineParser":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.worker is not None:
            self.worker.close()
            self.worker = None

    def _pace(self, answered: bool) -> None:
        """The worker's share of episodes after a block: more when its answer was there
        before this process asked (this process is the slower), less when it was not."""
        self.share = min(0.9, self.share + 0.02) if answered else max(0.0, self.share - 0.05)

    def _result(self, unit: tuple, sent: bool) -> tuple:
        if unit[0] != "lines":
            return unit
        data, base, url = unit[1]
        if sent and self.worker is not None:
            try:
                if self.build is not None:
                    self._pace(self.worker.answered())
                lines, cut, built = self.worker.result()
                self.by_worker += 1
                return "lines", (lines, cut, built, data, base, url), unit[2]
            except WorkerGone:  # ended (killed, out of memory): the rest is parsed here
                self.worker.close()
                self.worker = None
        lines, cut, built = read_block(data, base, url, self.keep)
        return "lines", (lines, cut, built, data, base, url), unit[2]

    def parsed(self, units: Iterable[tuple]) -> Iterator[tuple]:
        """``units`` in order, each ``("lines", (bytes, offset, url), end)`` replaced by
        ``("lines", (spans by line, values cut, episodes made, bytes, offset, url), end)``
        (:func:`read_block`)."""
        pending: collections.deque = collections.deque()
        for unit in units:
            w = self.worker
            sent = unit[0] == "lines" and w is not None and w.ready.is_set()
            if sent:
                w.submit(*unit[1], self.keep, self.build and (self.share, *self.build))
            pending.append((unit, sent))
            if len(pending) > (AHEAD if self.worker is not None else 0):
                yield self._result(*pending.popleft())
        while pending:
            yield self._result(*pending.popleft())


def read_block(data: bytes, base: int, url: str, keep: Any, build: Optional[tuple] = None
               ) -> tuple[list, int, dict]:
    """The spans of a block of complete lines (the first at byte ``base`` of ``url``), as
    :func:`~ek_agents.bridge.otel.spans_of_lines` reads them: ``(lines, values cut, made)``.
    With ``build`` (``(share, task_attr, slice_attr, where)``), ``made`` holds, by line offset,
    ``{trace id: its episode, or None without a model call}`` for about ``share`` of the traces
    whose spans are all on one line of the block, with their ended root: made by
    :func:`_episode` from that line's spans as a reader holding them would make it (its trial
    numbered 0; a trace whose episode raises is left to the reader, which raises the same); the
    spans of those traces lose their attributes (``attrs`` None: the episode holds what was read
    of them). A pure function of its arguments: a window's worker process runs it."""
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
            if not any(map(_is_root, by_span.values())):
                continue
            due += share
            if due < 1.0:
                continue
            due -= 1.0
            try:
                ep = _episode(tid, list(by_span.values()), IngestCounts(), {}, task_attr,
                              slice_attr, where)
            except Exception:  # noqa: BLE001 - left to the reader, which raises it in its turn
                continue
            made.setdefault(at, {})[tid] = ep
        for tid in made.get(at, ()):
            for s in spans:
                if s.trace_id == tid:
                    s.attrs = None
    return lines, cut, made


def _is_root(s: RawSpan) -> bool:
    return s.parent_id is None and s.end_ns > 0


class _Scan:
    """One window's read of a source: the ledger after it, the counts, and the spans of the
    traces not yet complete (see the module docstring). :meth:`read` goes through the files;
    with ``stream`` it yields, after each block of lines, the traces whose root ended in it."""

    def __init__(self, source: Any, ledger: Ledger, attrs: Sequence[Optional[str]],
                 files: Optional[Iterable[SourceFile]], workers: Optional[int] = None,
                 build: Optional[tuple] = None) -> None:
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool)
                                    or workers < 0):
            raise InvalidInput(f"workers must be a whole number >= 0 (0: parse in this process) "
                               f"or None (decided from the input), got {workers!r}")
        self.workers = workers
        self.led = ledger.model_copy(deep=True)
        self.counts = IngestCounts()
        self.keep = _attrs_wanted(*attrs)
        self.ing = Ingest()
        self.spans_of: dict[str, dict[str, RawSpan]] = {}
        self.first_at: dict[str, dict[str, int]] = {}  # trace -> {file identity: first line}
        self.build = build  # (task_attr, slice_attr, where): the worker may make episodes
        self.made: dict = {}  # trace -> (file identity, line, episode) made by the worker
        self.light: dict = {}  # trace -> {(identity, line): (block, offset, url)} of the lines
        #                        whose spans of it came without their attributes
        self.ready_made: dict = {}  # complete trace -> its episode made by the worker
        self.listed = list(files) if files is not None else list_sources(source)

    def read(self, stream: bool) -> Iterator[list]:
        """Go through the files; with ``stream``, after each block of lines, the ids of the
        traces whose root ended in it. The lines are parsed in order, some of them ahead in a
        worker process when the input is large (:class:`_LineParser`)."""
        counts, ing = self.counts, self.ing
        with _LineParser(self.keep, self.workers, sum(f.size for f in self.listed),
                         self.build if stream else None) as parser:
            for unit in parser.parsed(self._units()):
                if unit[0] == "file":
                    _, ident, mark = unit
                    high, held = mark.read_to, []  # held: lines read before the file is known
                    continue                        # to reach `high` (not shrunk)
                if unit[0] == "end":
                    if unit[1] < high:  # the file ends (its complete lines) before what was read
                        counts.shrunk_files += 1
                    else:
                        counts.bytes_read += unit[1] - high
                        mark.read_to = mark.resume_at = unit[1]
                    continue
                _, (lines, cut, made, data, base, url), end = unit
                ing.truncated += cut
                got = []
                for at, spans in lines:
                    if spans is not None:
                        eps = made.get(at)
                        got.append((at, spans, eps and (eps, data, base, url)))
                    elif at >= high:  # a bad line, counted when first passed
                        counts.bad_lines += 1
                if end < high:
                    held.extend(got)
                    continue
                if held:
                    got, held = held + got, []
                rooted = self._take(got, ident, high)
                if stream and rooted:
                    yield rooted

    def _units(self) -> Iterator[tuple]:
        """The read in order: ``("file", identity, mark)`` for each file read, then its complete
        lines a block at a time (``("lines", (bytes, offset of the first, url), end offset)``),
        then ``("end", offset after its last complete line)``."""
        counts, seen_ids = self.counts, set()
        for f in self.listed:
            counts.files += 1
            ident, head = _identity(f.url)
            if ident is None:
                counts.files_waiting += 1  # not one complete line yet
                continue
            if ident in seen_ids:
                counts.duplicate_files += 1
                continue
            seen_ids.add(ident)
            mark = self.led.files.get(ident)
            if mark is None:
                mark = self.led.files[ident] = FileMark(url=f.url)
                counts.new_files += 1
            mark.url = f.url
            yield "file", ident, mark
            start = mark.resume_at
            # from the byte before `start` (the newline ending the line before): whether the
            # file still reaches what was read of it (a newline there or later) is then seen
            # in the bytes
            base = start - 1 if start > 0 else 0
            blocks = iter(head) if base == 0 else iter_source(f.url, base)
            lo, buf = start - base, b""
            for chunk in itertools.chain(blocks, iter_source(f.url, sum(map(len, head)))
                                         if base == 0 else ()):
                buf = buf + chunk if buf else chunk
                cut = buf.rfind(b"\n") + 1
                if not cut:
                    continue
                yield "lines", (buf[lo:cut], base + lo, f.url), base + cut
                buf, base, lo = buf[cut:], base + cut, 0
            yield "end", base

    def _take(self, lines: list, ident: str, high: int) -> list:
        """Keep the spans of ``lines`` (of traces not consumed); the ids of the traces one of
        whose spans is an ended root, in order of those spans."""
        consumed = self.led.consumed
        spans_of, first_at, made, light = self.spans_of, self.first_at, self.made, self.light
        rooted = []
        n_spans = n_late = 0  # (added to the counts once: a pydantic field set costs a call)
        for at, got, eps in lines:
            new = at >= high
            for s in got:
                tid = s.trace_id
                if tid in consumed:
                    if new:
                        n_late += 1
                    continue
                if new:
                    n_spans += 1
                by_span = spans_of.get(tid)
                if by_span is None:
                    by_span = spans_of[tid] = {}
                    first_at[tid] = {ident: at}
                    if eps is not None and tid in eps[0]:  # made by the worker from this line
                        made[tid] = (ident, at, eps[0][tid])
                else:
                    if ident not in first_at[tid]:
                        first_at[tid][ident] = at
                    m = made.get(tid)
                    if m is not None and (m[0] != ident or m[1] != at):
                        del made[tid]  # spans on another line too: made here, from them all
                if s.attrs is None:  # (its line's spans, to read again if made here)
                    light.setdefault(tid, {})[(ident, at)] = eps[1:]
                by_span[s.span_id] = s
                if s.parent_id is None and s.end_ns > 0:
                    rooted.append(tid)
        self.counts.spans += n_spans
        self.counts.late_spans += n_late
        return rooted

    def complete(self, tids: Iterable[str]) -> list:
        """``(trace id, spans)`` of the traces of ``tids`` whose root has ended, taken out of
        the pending ones and consumed, in order of their first span (then id)."""
        out = []
        for tid in dict.fromkeys(tids):
            by_span = self.spans_of.get(tid)
            if by_span is not None and any(map(_is_root, by_span.values())):
                del self.spans_of[tid], self.first_at[tid]
                m = self.made.pop(tid, None)
                lines = self.light.pop(tid, None)
                if m is not None:
                    self.ready_made[tid] = m[2]
                elif lines:
                    self._read_again(tid, by_span, lines)
                spans = list(by_span.values())
                out.append((min(s.start_ns for s in spans), tid, spans))
        out.sort(key=lambda t: (t[0], t[1]))
        self.counts.traces += len(out)
        self.led.consumed.update(t[1] for t in out)
        return [(tid, spans) for _, tid, spans in out]

    def _read_again(self, tid: str, by_span: dict, lines: dict) -> None:
        """The spans of ``tid`` whose attributes the worker left out (it made their episode,
        which is not used: the trace has spans on other lines too), read again from their
        lines."""
        for (_, at), (data, base, url) in reversed(lines.items()):  # the latest line first:
            # a span id on two of them is the later one's (as it is in `by_span`)
            start = at - base
            end = data.find(b"\n", start) + 1 or len(data)
            (_, spans), = read_block(data[start:end], at, url, self.keep)[0]
            full = {s.span_id: s for s in spans if s.trace_id == tid}
            for sid, s in by_span.items():
                if s.attrs is None and sid in full:
                    by_span[sid] = full[sid]

    def finish(self) -> None:
        """The traces left waiting: counted, and every file holding their spans resumes at
        their first line next window."""
        self.counts.truncated_attributes = self.ing.truncated
        self.counts.pending_traces += len(self.spans_of)
        for tid in self.spans_of:
            for ident, at in self.first_at[tid].items():
                m = self.led.files[ident]
                m.resume_at = min(m.resume_at, at)


def read_new_traces(source: Any, ledger: Ledger, *, attrs: Sequence[Optional[str]] = (),
                    files: Optional[Iterable[SourceFile]] = None,
                    workers: Optional[int] = None) -> TraceBatch:
    """The traces of ``source`` not consumed before (see the module docstring); ``attrs`` are
    the span attributes to keep beyond the GenAI ones (grouping, task and slice). Every span is
    held until the end of the input, then the traces whose root has ended are complete. The
    ledger returned is a new one (the caller stores it once the window is recorded)."""
    return _all_traces(_Scan(source, ledger, attrs, files, workers))


def _all_traces(scan: _Scan) -> TraceBatch:
    """Read the whole input holding every span, then take the traces whose root has ended."""
    for _ in scan.read(stream=False):
        pass
    complete = dict(scan.complete(list(scan.spans_of)))
    scan.finish()
    return TraceBatch(traces=complete, ledger=scan.led, counts=scan.counts)


class EpisodeStream:
    """The episodes of a window's new traces, made as they are read (see
    :func:`iter_new_episodes`); once exhausted, :attr:`counts` and :attr:`ledger`."""

    def __init__(self, source: Any, ledger: Ledger, *, group_by: str, task_attr: Optional[str],
                 slice_attr: Optional[str], where: str,
                 files: Optional[Iterable[SourceFile]] = None,
                 workers: Optional[int] = None) -> None:
        if not isinstance(group_by, str) or not group_by:
            raise InvalidInput(f"group_by must be 'trace' or a span attribute name, got {group_by!r}")
        self.group_by, self.task_attr, self.slice_attr, self.where = (group_by, task_attr,
                                                                      slice_attr, where)
        self._scan = _Scan(source, ledger, (None if group_by == "trace" else group_by,
                                            task_attr, slice_attr), files, workers,
                           (task_attr, slice_attr, where) if group_by == "trace" else None)
        self._state = "new"

    def __iter__(self) -> Iterator[Episode]:
        if self._state != "new":
            raise InvalidInput("an episode stream is read once; call iter_new_episodes again")
        self._state = "reading"
        return self._episodes()

    def _episodes(self) -> Iterator[Episode]:
        scan, per_task, where = self._scan, {}, self.where

        def made(traces: list) -> list:
            out, ready = [], scan.ready_made
            for tid, spans in traces:
                if tid not in ready:
                    ep = _episode(tid, spans, scan.counts, per_task, self.task_attr,
                                  self.slice_attr, where)
                elif (ep := ready.pop(tid)) is None:
                    _no_model_call(spans, scan.counts)
                else:  # made by the worker: its trial numbered here, in the stream's order
                    trial = per_task.get(ep.task_id, 0)
                    per_task[ep.task_id] = trial + 1
                    ep.meta["trial"] = trial
                if ep is not None:
                    out.append(ep)
            return out

        if self.group_by == "trace":
            blocks = scan.read(stream=True)
            while True:
                # each block read and made into episodes with the collector paused (many
                # containers, no cycles: see gc_paused); the consumer runs between blocks
                # with the collector as it had it
                with gc_paused():
                    rooted = next(blocks, None)
                    got = made(scan.complete(list(scan.spans_of) if rooted is None else rooted))
                yield from got
                if rooted is None:
                    break
            scan.finish()
        else:
            with gc_paused():
                batch = _all_traces(scan)
                got = episodes_of_traces(batch, group_by=self.group_by,
                                         task_attr=self.task_attr, slice_attr=self.slice_attr,
                                         where=where)
                batch.traces.clear()
            yield from got
        self._state = "done"

    def _done(self, what: str) -> None:
        if self._state != "done":
            raise InvalidInput(f"the stream's {what} is known once every episode has been read; "
                               "read the stream to its end first")

    @property
    def counts(self) -> IngestCounts:
        """What the read found, skipped and set aside (once the stream is exhausted)."""
        self._done("counts")
        return self._scan.counts

    @property
    def ledger(self) -> Ledger:
        """The ledger after this read (once the stream is exhausted); the caller stores it once
        the window is recorded."""
        self._done("ledger")
        return self._scan.led


def iter_new_episodes(source: Any, ledger: Ledger, *, group_by: str = "trace",
                      task_attr: Optional[str] = None, slice_attr: Optional[str] = None,
                      where: str = "otlp", files: Optional[Iterable[SourceFile]] = None,
                      workers: Optional[int] = None) -> EpisodeStream:
    """The episodes of the traces of ``source`` not consumed before, made as they are read
    (see the module docstring): an iterable of :class:`~ek_agents.base.Episode` (read once)
    that, exhausted, gives ``.counts`` and ``.ledger`` -- what :func:`read_new_traces` and
    :func:`episodes_of_traces` give. With ``group_by="trace"`` each trace's episode is made,
    and its spans freed, after the block of lines holding its ended root; episodes come block
    by block, each block's in order of their first span, and the traces still waiting at the
    end of the input last. With a grouping attribute every trace is held to the end of the
    input (a group may gather traces from anywhere in it), then grouped as
    :func:`episodes_of_traces` groups them. ``workers``: worker processes parsing lines ahead
    (0: none; None: one for a large input on a machine of 2 cores or more; the episodes are
    the same either way)."""
    return EpisodeStream(source, ledger, group_by=group_by, task_attr=task_attr,
                         slice_attr=slice_attr, where=where, files=files, workers=workers)


_START, _END, _TRACE = (operator.attrgetter(k) for k in ("start_ns", "end_ns", "trace_id"))


def _value_of(spans: list, attr: Optional[str]) -> Optional[str]:
    """The value of ``attr`` on the first span carrying it (not empty): roots first, then by
    start (then in the order given)."""
    if not attr:
        return None
    # the spans carrying it (a few of a trace's), then the first of them as a stable sort by
    # that key would order them: min() keeps the first of equal keys
    got = [s for s in spans if s.attrs.get(attr) not in (None, "")]
    if not got:
        return None
    return str(min(got, key=_root_first).attrs[attr])


def _root_first(s: RawSpan) -> tuple:
    return s.parent_id is not None, s.start_ns


def _request_text(spans: list) -> Optional[str]:
    """The first user message of the earliest model call that records its input messages
    (``gen_ai.input.messages``): what the person asked, shown to the judge and the labeler."""
    # the spans recording them, by start (a stable sort of those alone keeps the order they
    # have among all the spans)
    for s in sorted([s for s in spans if isinstance(s.attrs.get("gen_ai.input.messages"), str)],
                    key=_START):
        raw = s.attrs["gen_ai.input.messages"]
        try:  # (orjson where it reads the text as the standard library would)
            msgs = parse_json(raw, where="gen_ai.input.messages", error=BridgeError,
                              nonfinite="allow")
        except BridgeError:
            continue
        for m in msgs if isinstance(msgs, list) else []:
            if isinstance(m, dict) and m.get("role") == "user":
                parts = m.get("parts") or [{"content": m.get("content")}]
                text = " ".join(str(p.get("content")) for p in parts
                                if isinstance(p, dict) and p.get("content") is not None)
                if text:
                    return text
    return None


def episodes_of_traces(batch: TraceBatch, *, group_by: str = "trace",
                       task_attr: Optional[str] = None, slice_attr: Optional[str] = None,
                       where: str = "otlp") -> list[Episode]:
    """One episode per trace (``group_by="trace"``) or per value of a span attribute (a trace
    without it is its own group), in order of their first span. Each episode is its own task
    unless ``task_attr`` names the attribute whose value is its task; ``slice_attr`` the
    attribute naming its slice (``meta["slice"]``, :data:`DEFAULT_SLICE` without it). Groups
    without a model call are left out and counted in ``batch.counts.no_model_call``."""
    if not isinstance(group_by, str) or not group_by:
        raise InvalidInput(f"group_by must be 'trace' or a span attribute name, got {group_by!r}")
    groups: dict[str, list] = {}
    for tid, spans in batch.traces.items():
        key = tid if group_by == "trace" else (_value_of(spans, group_by) or tid)
        groups.setdefault(key, []).extend(spans)
    rows = []
    per_task: dict[str, int] = {}
    for key, spans in sorted(groups.items(), key=lambda kv: (min(s.start_ns for s in kv[1]), kv[0])):
        ep = _episode(key, spans, batch.counts, per_task, task_attr, slice_attr, where)
        if ep is not None:
            rows.append(ep)
    return rows


def _no_model_call(spans: list, counts: IngestCounts) -> None:
    """Count a group without a model call, with the scopes of its spans."""
    counts.no_model_call += 1
    for s in spans:
        name = s.scope or "(no scope)"
        counts.unknown_scopes[name] = counts.unknown_scopes.get(name, 0) + 1


def _episode(key: str, spans: list, counts: IngestCounts, per_task: dict,
             task_attr: Optional[str], slice_attr: Optional[str], where: str
             ) -> Optional[Episode]:
    """The episode of one group of spans (None without a model call: counted, with the
    scopes of its spans); ``per_task`` numbers the trials of each task in the order made."""
    parts = trace_parts(spans, where=f"{where} group {key!r}")
    if not parts.calls:
        _no_model_call(spans, counts)
        return None
    task = _value_of(spans, task_attr) or key
    trial = per_task.get(task, 0)
    per_task[task] = trial + 1
    start = min(map(_START, spans))
    end = max(map(_END, spans))
    meta = {"trial": trial, "slice": _value_of(spans, slice_attr) or DEFAULT_SLICE,
            "input": _request_text(spans),
            "group": key, "traces": sorted(set(map(_TRACE, spans))),
            "otel": dict(parts.stats)}
    lat = (end - start) / 1e9 if end > start else None
    # every value made above has its field's type (a str task, Steps, a Cost, a str source):
    # built without validating it again (a window builds one per trace)
    return construct_from(Episode, {
        "task_id": str(task), "trajectory": construct_from(Trajectory, {"steps": tuple(parts.steps)}),
        "output": parts.output, "final_state": None, "cost": parts.cost(latency_s=lat),
        "success": None, "run": None,
        "provenance": construct_from(Provenance, {"source": str(where), "locator": f"group {key}",
                                                  "meta": {"format": "otlp-json"}}),
        "meta": meta})
