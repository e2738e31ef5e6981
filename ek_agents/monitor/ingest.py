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

import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..base import Episode
from ..bridge.otel import Ingest, RawSpan, gc_paused
from ..errors import InvalidInput
from ..store.sources import COMPRESSED_SUFFIXES, SourceFile, iter_source, list_sources
from .blocks import LineParser, is_root, read_block
from .traceepisodes import episode_of, value_of

__all__ = ["FileMark", "Ledger", "IngestCounts", "TraceBatch", "read_new_traces",
           "episodes_of_traces", "iter_new_episodes", "EpisodeStream", "count_no_model_call"]


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
        self.build = build  # (task_attr, slice_attr, where): workers may make episodes
        self.made: dict = {}  # trace -> (file identity, line, episode) made by a worker
        self.light: dict = {}  # trace -> {(identity, line): (block, offset, url)} of the lines
        #                        whose spans of it came without their attributes
        self.ready_made: dict = {}  # complete trace -> its episode made by a worker
        self.listed = list(files) if files is not None else list_sources(source)

    def read(self, stream: bool) -> Iterator[list]:
        """Go through the files; with ``stream``, after each block of lines, the ids of the
        traces whose root ended in it. The lines are parsed in order, some of them ahead in
        worker processes when the input is large (:class:`~ek_agents.monitor.blocks.LineParser`)."""
        counts, ing = self.counts, self.ing
        with LineParser(self.keep, self.workers, sum(f.size for f in self.listed),
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
            where = _local_file(f.url)
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
                yield "lines", (buf[lo:cut], base + lo, f.url, where), base + cut
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
                    if eps is not None and tid in eps[0]:  # made by a worker from this line
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
            if by_span is not None and any(map(is_root, by_span.values())):
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
        """The spans of ``tid`` whose attributes a worker left out (it made their episode,
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


def _local_file(url: str) -> Optional[tuple]:
    """``(device, inode)`` of a plain local file (a worker reads its blocks itself: see
    :func:`~ek_agents.monitor.blocks.read_block`), None for a compressed or remote one."""
    if "://" in url or url.endswith(COMPRESSED_SUFFIXES):
        return None
    try:
        st = os.stat(url)
    except OSError:
        return None
    return st.st_dev, st.st_ino


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
                    ep = episode_of(tid, spans, per_task, self.task_attr, self.slice_attr, where)
                elif (ep := ready.pop(tid)) is not None:  # made by a worker: its trial
                    trial = per_task.get(ep.task_id, 0)   # numbered here, in the stream's order
                    per_task[ep.task_id] = trial + 1
                    ep.meta["trial"] = trial
                if ep is None:
                    count_no_model_call(spans, scan.counts)
                else:
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
    :func:`episodes_of_traces` groups them. ``workers``: worker processes parsing lines (and
    making episodes) ahead (0: none; None: :data:`~ek_agents.monitor.blocks.WORKERS` for an
    input of :data:`~ek_agents.monitor.blocks.PARALLEL_BYTES` or more on a machine of 2 cores
    or more; the episodes are the same either way)."""
    return EpisodeStream(source, ledger, group_by=group_by, task_attr=task_attr,
                         slice_attr=slice_attr, where=where, files=files, workers=workers)


def episodes_of_traces(batch: TraceBatch, *, group_by: str = "trace",
                       task_attr: Optional[str] = None, slice_attr: Optional[str] = None,
                       where: str = "otlp") -> list[Episode]:
    """One episode per trace (``group_by="trace"``) or per value of a span attribute (a trace
    without it is its own group), in order of their first span. Each episode is its own task
    unless ``task_attr`` names the attribute whose value is its task; ``slice_attr`` the
    attribute naming its slice (``meta["slice"]``, :data:`~ek_agents.monitor.traceepisodes.DEFAULT_SLICE` without it). Groups
    without a model call are left out and counted in ``batch.counts.no_model_call``."""
    if not isinstance(group_by, str) or not group_by:
        raise InvalidInput(f"group_by must be 'trace' or a span attribute name, got {group_by!r}")
    groups: dict[str, list] = {}
    for tid, spans in batch.traces.items():
        key = tid if group_by == "trace" else (value_of(spans, group_by) or tid)
        groups.setdefault(key, []).extend(spans)
    rows = []
    per_task: dict[str, int] = {}
    for key, spans in sorted(groups.items(), key=lambda kv: (min(s.start_ns for s in kv[1]), kv[0])):
        ep = episode_of(key, spans, per_task, task_attr, slice_attr, where)
        if ep is None:
            count_no_model_call(spans, batch.counts)
        else:
            rows.append(ep)
    return rows


def count_no_model_call(spans: list, counts: IngestCounts) -> None:
    """Count a group without a model call, with the scopes of its spans."""
    counts.no_model_call += 1
    for s in spans:
        name = s.scope or "(no scope)"
        counts.unknown_scopes[name] = counts.unknown_scopes.get(name, 0) + 1
