"""Trial segments: a run's finished trials stored a few thousand to an object, not one each.

A *segment* is JSON Lines -- one line per trial, the canonical JSON of its ``Episode.to_dict()``
(the bytes a per-trial file held), lines sorted by ``(task_id, trial)`` -- compressed with
zstd (level 1) and stored at ``store.segment_key(run_id, sha256)``: its key names the sha256 of
its bytes, checked on every read (:class:`~ek_agents.errors.DigestMismatch` when they differ).
A segment holds at most :data:`SEGMENT_TRIALS` trials and :data:`SEGMENT_BYTES` bytes of JSON,
and a writer stores its buffer once its oldest trial is :data:`FLUSH_S` seconds old
(``max_age_s``), whichever comes first: a slow agent's finished trials are stored within
seconds, not once a few thousand have gathered.

Codec, measured on real episode lines (``bench/scale_codec.py``: 4,000 trials of a plain
agent, 313 B/line; and of a priced agent, 485 B/line; this 2-core box):

=========  ======  ===============  =================
codec      ratio   compress MB/s    decompress MB/s
=========  ======  ===============  =================
none       1.0     --               --
zstd -1    20.8    1544             4008
zstd -3    18.4    1332             3693
zstd -9    20.5    184              5549
gzip -1    15.1    479              811
gzip -6    18.3    206              893
=========  ======  ===============  =================

zstd level 1 is chosen: the best ratio but one (episode lines repeat their keys, provenance
and run fields, so a fast level already finds nearly all of it) at 3x gzip -1's speed, and
decompression at ~4 GB/s -- reading a million trials back costs their JSON parse, not the
codec. 1M trials of 313 B are ~313 MB of JSON and ~15 MB of segments.

Which trials are stored is said by the run's *segment index*: each writer (one
``trialrunner.TrialRunner.run_all``: a library run, or one chunk of a pipeline run) keeps one small
document, ``store.segment_index_key(run_id, writer)``, listing its segments -- key, sha256,
trials (packed as ranges per task), sizes -- rewritten (one atomic PUT) after each segment
is stored. A segment is written before the index names it, so a crash between the two leaves
an *orphan* segment that no index names (its trials run again; :meth:`RunSegments.orphans`
finds it for removal) and never an index naming a missing segment: a trial counts as stored
exactly when an index names its segment. A trial set aside later (``retry_errored``, a
misfiled line) is listed in its entry's ``dropped``; readers skip it.

Requests for a run of N trials: about ``2 N / SEGMENT_TRIALS`` PUTs (each segment and its
index rewrite), one LIST and one GET per writer to plan a resume, one GET per segment to
read the run back.

>>> from ek_agents.store import Store
>>> st = Store("memory://ek-segments-doctest")
>>> w = SegmentWriter(st, "r1", writer="w1", max_trials=2)
>>> [t.pair for t in w.add(("a", 0), b'{"x":1}')], [t.pair for t in w.add(("a", 1), b'{"x":2}')]
([], [('a', 0), ('a', 1)])
>>> segs = RunSegments.load(st, "r1")
>>> sorted(segs.pairs()), [t.data for t in read_segment(st, segs.entries[0][1])]
([('a', 0), ('a', 1)], [b'{"x":1}', b'{"x":2}'])
"""
from __future__ import annotations

import os
import threading
from array import array
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Optional

import zstandard
from pydantic import Field

from ..base import JsonShape
from ..core import canonical_json, shape
from ..errors import ArtifactNotFound, DigestMismatch, DocumentError, IntegrityError, InvalidInput
from ..store import (Store, parse_json, segment_index_key, segment_index_prefix, segment_key,
                     segment_sha256, segments_prefix, sha256_hex)
from .indexjson import IndexJson

__all__ = ["SEGMENT_TRIALS", "SEGMENT_BYTES", "FLUSH_S", "ZSTD_LEVEL", "check_flush_s", "SegmentEntry", "WriterIndex",
           "SegmentTrial", "SegmentWriter", "RunSegments", "read_segment", "encode_segment",
           "decode_segment", "pack_pairs", "unpack_pairs", "new_writer_name", "iter_segments",
           "segment_line_doc", "stored_pair", "owner", "owned", "Pair"]

#: Most trials in one segment: ~0.5 PUT per 1,000 trials (segment + index) for a fast agent.
SEGMENT_TRIALS = 4096
#: Most bytes of JSON (before compression) in one segment.
SEGMENT_BYTES = 16 << 20
#: Seconds a finished trial waits in a writer's buffer at most: the buffer is stored once its
#: oldest trial is this old, so a killed run loses at most this long's worth of finished
#: trials (plus those in flight). Each age flush is two PUTs.
FLUSH_S = 10.0
#: zstd level (see the table above).
ZSTD_LEVEL = 1

Pair = tuple  # (task_id, trial)


class SegmentTrial(NamedTuple):
    """One trial as a segment holds it."""

    pair: tuple
    """``(task_id, trial)``."""
    key: str
    """The segment's store key."""
    sha256: str
    """The segment's sha256 (the bytes of the whole segment)."""
    data: bytes
    """The trial's line: canonical JSON of its ``Episode.to_dict()``."""


@shape()
class SegmentEntry(JsonShape):
    """One stored segment, as its writer's index lists it."""

    key: str
    """Its store key (``store.segment_key``)."""
    sha256: str
    """sha256 of its (compressed) bytes; the key names it too."""
    n: int
    """Trials (lines) in it."""
    size: int
    """Its compressed size in bytes."""
    raw: int
    """Its JSON Lines size in bytes, before compression."""
    pairs: list = Field(default_factory=list)
    """Its trials, packed (:func:`pack_pairs`): sorted, the order of its lines."""
    dropped: list = Field(default_factory=list)
    """Trials of it set aside since (packed): they do not count as stored."""
    summary: Optional[dict] = None
    """What its writer's ``summarize`` made of its trials (``streaming.StreamingReport.state``:
    their graded per-task counts and costs), so a report merges these instead of reading every
    segment again; None when none was made (the segment is then read)."""


@shape()
class WriterIndex(JsonShape):
    """One writer's part of a run's segment index."""

    run_id: str
    writer: str
    segments: list[SegmentEntry] = Field(default_factory=list)


# --------------------------------------------------------------------------- encoding

def pack_pairs(pairs: Iterable[Pair]) -> list:
    """Sorted ``(task_id, trial)`` pairs as ``[[task_id, [[first, last], ...]], ...]``
    (inclusive runs of consecutive trials): a segment of 4,096 trials at k=100 packs to ~41
    short entries.

    >>> pack_pairs([("b", 0), ("a", 2), ("a", 0), ("a", 1), ("a", 5)])
    [['a', [[0, 2], [5, 5]]], ['b', [[0, 0]]]]
    """
    out: list = []
    for task_id, trial in sorted(pairs):
        if out and out[-1][0] == task_id:
            runs = out[-1][1]
            if runs[-1][1] + 1 == trial:
                runs[-1][1] = trial
                continue
            runs.append([trial, trial])
        else:
            out.append([task_id, [[trial, trial]]])
    return out


def unpack_pairs(packed: Sequence, where: str = "segment index") -> list[Pair]:
    """The sorted pairs :func:`pack_pairs` packed (DocumentError naming ``where`` when it is
    not such a list).

    >>> unpack_pairs([["a", [[0, 2]]], ["b", [[4, 4]]]])
    [('a', 0), ('a', 1), ('a', 2), ('b', 4)]
    """
    out: list = []
    try:
        for task_id, runs in packed:
            if not isinstance(task_id, str):
                raise TypeError(task_id)
            for first, last in runs:
                if type(first) is not int or type(last) is not int or not 0 <= first <= last:
                    raise TypeError((first, last))
                out.extend((task_id, i) for i in range(first, last + 1))
    except (TypeError, ValueError) as exc:
        raise DocumentError(f"{where}: trials must be packed as [[task_id, [[first, last], ...]], "
                            f"...], got {exc!r:.80}; re-create the run (or restore the file)") from None
    return out


def encode_segment(lines: Sequence[bytes]) -> bytes:
    """The stored bytes of a segment of ``lines`` (each one trial's JSON, no newline)."""
    return _compressor().compress(b"".join(line + b"\n" for line in lines))


def decode_segment(data: bytes, key: str) -> list[bytes]:
    """The lines of a segment's stored bytes (DocumentError naming ``key`` when they are not
    a zstd frame)."""
    try:
        raw = zstandard.ZstdDecompressor().decompress(data)
    except zstandard.ZstdError as exc:
        raise DocumentError(f"segment {key} is not zstd-compressed JSON Lines ({exc}); "
                            "re-create the run (or restore the file)") from None
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


_LOCAL = threading.local()


def _compressor() -> Any:
    c = getattr(_LOCAL, "zstd", None)
    if c is None:
        c = _LOCAL.zstd = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
    return c


def new_writer_name() -> str:
    """A fresh writer name, sortable by start time: ``<UTC>-<pid>-<8 hex>``."""
    return (time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time() % 1:.6f}"[1:].replace(".", "")
            + f"-{os.getpid()}-{uuid.uuid4().hex[:8]}")


# --------------------------------------------------------------------------- writing

def check_flush_s(flush_s: Any) -> float:
    """``flush_s`` as a float, or InvalidInput naming it (a positive, finite number of seconds).

    >>> check_flush_s(2)
    2.0
    """
    if isinstance(flush_s, bool) or not isinstance(flush_s, (int, float)) \
            or not 0 < flush_s < float("inf"):
        raise InvalidInput(f"flush_s must be a number of seconds > 0 (how long a finished trial "
                           f"waits before it is stored; default {FLUSH_S:g}), got {flush_s!r}")
    return float(flush_s)


class SegmentWriter:
    """A writer's buffer of finished trials, stored as a segment once it holds ``max_trials``
    trials or ``max_bytes`` bytes, or once its oldest trial is ``max_age_s`` seconds old (and
    by :meth:`flush` at the end of a run, or when it is cancelled). Count and size are checked
    by :meth:`add`; the age by whoever owns the writer (:meth:`deadline`: the writer thread
    waits on its queue until then). Not thread-safe: one writer thread owns it.

    Each flush writes the segment (one PUT, content-addressed) and then the writer's index
    document (one PUT, atomic) naming it: only then do the segment's trials count as stored,
    and only then are they returned (what the caller hands on as stored)."""

    def __init__(self, store: Store, run_id: str, *, writer: Optional[str] = None,
                 max_trials: int = SEGMENT_TRIALS, max_bytes: int = SEGMENT_BYTES,
                 max_age_s: float = FLUSH_S, summarize: Optional[Any] = None) -> None:
        if isinstance(max_trials, bool) or not isinstance(max_trials, int) or max_trials < 1:
            raise InvalidInput(f"max_trials must be an int >= 1, got {max_trials!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
            raise InvalidInput(f"max_bytes must be an int >= 1, got {max_bytes!r}")
        self.store, self.run_id = store, Store.validate_name(run_id, what="run id")
        self.writer = writer or new_writer_name()
        self.index_key = segment_index_key(run_id, self.writer)
        self.max_trials, self.max_bytes = max_trials, max_bytes
        self.max_age_s = check_flush_s(max_age_s)
        self.first_at = 0.0  # time.monotonic() when the oldest buffered trial finished
        self.store_s = 0.0  # how long the last segment took to store (segment + index PUTs)
        self.buffer: dict = {}
        self.episodes: dict = {}  # pair -> the episode its line was made from, when given
        self.summarize = summarize  # (pairs, lines, episodes) -> the entry's summary
        self.last_episodes: dict = {}
        self.buffered = 0
        self.index = WriterIndex(run_id=run_id, writer=self.writer)
        self.index_json = IndexJson(SegmentEntry)  # the index document, each entry dumped once
        self.puts = 0  # PUT requests made (segments and index rewrites)

    def add(self, pair: Pair, data: bytes, episode: Any = None) -> list[SegmentTrial]:
        """Buffer trial ``pair``'s line (``episode``: the episode it was made from, if known:
        handed to ``summarize``); the trials stored when this filled a segment (or found the
        oldest buffered trial ``max_age_s`` old)."""
        self.put(pair, data, episode)
        return self.flush() if self.full() or time.monotonic() >= self.deadline() else []

    def put(self, pair: Pair, data: bytes, episode: Any = None,
            finished_at: Optional[float] = None) -> None:
        """Buffer trial ``pair``'s line, nothing more (the caller seals when :meth:`full`, or
        at :meth:`deadline`); ``finished_at``: the ``time.monotonic()`` the trial finished at
        (default now), which its age counts from. A pair already buffered is refused
        (:class:`~ek_agents.errors.IntegrityError`): which of two lines is the trial is not
        knowable, and neither is dropped silently."""
        if (pair[0], pair[1]) in self.buffer:
            raise IntegrityError(f"segment writer {self.writer!r} of run {self.run_id!r}: task "
                                 f"{pair[0]!r} trial {pair[1]!r} was given twice before its segment "
                                 "was stored; each trial is written once (a trial runner runs each "
                                 "pair once: re-run the run, it resumes from what is stored)")
        if not self.buffer:
            self.first_at = time.monotonic() if finished_at is None else finished_at
        self.buffer[(pair[0], pair[1])] = data
        if episode is not None:
            self.episodes[(pair[0], pair[1])] = episode
        self.buffered += len(data) + 1

    def full(self) -> bool:
        return len(self.buffer) >= self.max_trials or self.buffered >= self.max_bytes

    def deadline(self) -> float:
        """The ``time.monotonic()`` at which the buffer is to be sealed for its age (``inf``
        when it is empty): ``max_age_s`` after its oldest trial finished, less a margin for
        storing it -- twice the time the last segment took, at least 5% of the age, at most
        half -- so that the trial is stored by then."""
        if not self.buffer:
            return float("inf")
        margin = min(max(2 * self.store_s, self.max_age_s / 20), self.max_age_s / 2)
        return self.first_at + self.max_age_s - margin

    def flush(self) -> list[SegmentTrial]:
        """Store the buffered trials as one segment (nothing when none are buffered); the
        trials stored."""
        sealed = self.seal()
        return self.store_sealed(sealed) if sealed is not None else []

    def seal(self) -> Optional["Sealed"]:
        """The buffered trials made into a segment and the writer's next index document
        (the CPU part of a flush: sort, summarize, compress, hash); the buffer starts afresh.
        :meth:`store_sealed` stores them, in the order sealed (another thread may: the next
        segment fills meanwhile)."""
        if not self.buffer:
            return None
        pairs = sorted(self.buffer)
        lines = [self.buffer[p] for p in pairs]
        data = encode_segment(lines)
        sha = sha256_hex(data)
        key = segment_key(self.run_id, sha)
        summary = None
        if self.summarize is not None:
            summary = self.summarize(pairs, lines, [self.episodes.get(p) for p in pairs])
        entry = SegmentEntry(key=key, sha256=sha, n=len(pairs), size=len(data),
                             raw=self.buffered, pairs=pack_pairs(pairs), summary=summary)
        self.index.segments.append(entry)
        sealed = Sealed(key, data, self.index_json(self.index),
                        [SegmentTrial(p, key, sha, line) for p, line in zip(pairs, lines)],
                        self.episodes)
        self.buffer, self.buffered, self.episodes = {}, 0, {}
        return sealed

    def store_sealed(self, sealed: "Sealed") -> list[SegmentTrial]:
        """Store a sealed segment, then the index naming it: only then do its trials count as
        stored; they are returned."""
        t0 = time.monotonic()
        self.store.write_bytes(sealed.key, sealed.data)
        self.store.write_bytes(self.index_key, sealed.index)  # now they count as stored
        self.store_s = time.monotonic() - t0
        self.puts += 2
        self.last_episodes = sealed.episodes
        return sealed.trials


class Sealed(NamedTuple):
    """A segment sealed by :meth:`SegmentWriter.seal`, not stored yet."""

    key: str
    data: bytes
    index: bytes
    """The writer's index document naming it (and every segment sealed before)."""
    trials: list
    episodes: dict


# --------------------------------------------------------------------------- reading

class RunSegments:
    """A run's segment index as stored: every writer's entries, in writer-name order."""

    def __init__(self, store: Optional[Store], run_id: str,
                 writers: Mapping[str, WriterIndex]) -> None:
        self.store, self.run_id = store, run_id
        self.writers = dict(sorted(writers.items()))
        self.read_sha256: dict[str, str] = {}  # index key -> sha256 of the bytes load() read
        self.entries: list[tuple[str, SegmentEntry]] = [
            (w, e) for w, idx in self.writers.items() for e in idx.segments]

    @classmethod
    def from_docs(cls, store: Optional[Store], run_id: str, docs: Iterable[Any]) -> "RunSegments":
        """The index of ``run_id`` from its writers' documents already read (the audit's)."""
        writers = {}
        for doc in docs:
            idx = WriterIndex.from_dict(doc)
            if idx.run_id != run_id:
                raise DocumentError(f"a segment index of run {run_id!r} belongs to run "
                                    f"{idx.run_id!r} (copied from another run)")
            writers[idx.writer] = idx
        return cls(store, run_id, writers)

    @classmethod
    def load(cls, store: Store, run_id: str, *, writers: str = "") -> "RunSegments":
        """Read the run's index (one LIST, one GET per writer); ``writers``: only the writers
        whose names start with it (a chunk's earlier attempts)."""
        found = writers
        writers = {}
        shas = {}
        for key in store.list(segment_index_prefix(run_id)):
            if found and not key.rpartition("/")[2].startswith(found):
                continue
            try:
                data = store.read_bytes(key)
                idx = WriterIndex.from_dict(parse_json(data, key))
            except ArtifactNotFound:  # removed meanwhile (a refresh)
                continue
            except (InvalidInput, ValueError) as exc:
                raise DocumentError(f"segment index {key} is malformed ({exc}); re-create the "
                                    "run, or refresh it (--refresh) to run every trial afresh") from None
            if idx.run_id != run_id:
                raise DocumentError(f"segment index {key} belongs to run {idx.run_id!r}, not "
                                    f"{run_id!r} (copied from another run); remove it or "
                                    "refresh the run")
            writers[idx.writer] = idx
            shas[key] = sha256_hex(data)
        out = cls(store, run_id, writers)
        out.read_sha256 = shas
        return out

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def index_keys(self) -> list[str]:
        return [segment_index_key(self.run_id, w) for w in self.writers]

    def pairs(self) -> dict[Pair, SegmentEntry]:
        """Every stored trial -> the entry of the segment that holds it (the first in writer
        order when two do: see :meth:`duplicates`)."""
        out: dict = {}
        for _, entry, held in self.live():
            for p in held:
                if p not in out:
                    out[p] = entry
        return out

    def live(self) -> Iterator[tuple[int, SegmentEntry, list[Pair]]]:
        """``(position in`` :attr:`entries` ``, entry, its trials that still count)`` of each
        indexed segment: its pairs less those it has dropped (a trial two segments hold is in
        both; the first holds it)."""
        for pos, (_, entry) in enumerate(self.entries):
            held = unpack_pairs(entry.pairs, entry.key)
            if entry.dropped:
                dropped = set(unpack_pairs(entry.dropped, entry.key))
                held = [p for p in held if p not in dropped]
            yield pos, entry, held

    def owners(self, k: int) -> dict[str, "array"]:
        """Per task, for each trial ``0..k-1`` the position in :attr:`entries` of the segment that
        holds it (the first in writer order), -1 when none: what :meth:`pairs` says, in ~8 bytes
        per trial instead of a dict entry (a million trials: 8 MB, not ~200 MB)."""
        out: dict[str, array] = {}
        for pos, _, held in self.live():
            for pair in held:
                row = out.get(pair[0])
                if row is None:
                    row = out[pair[0]] = array("q", [-1]) * max(k, pair[1] + 1)
                elif pair[1] >= len(row):
                    row.extend([-1] * (pair[1] + 1 - len(row)))
                if row[pair[1]] == -1:
                    row[pair[1]] = pos
        return out

    def duplicates(self) -> int:
        """Trials that more than one segment holds (counted once each)."""
        seen: set = set()
        dup: set = set()
        for _, _, held in self.live():
            for p in held:
                (dup if p in seen else seen).add(p)
        return len(dup)

    def orphans(self) -> list[str]:
        """Segments in the store that no index names (a writer died between storing one and
        indexing it): their trials do not count as stored."""
        named = {e.key for _, e in self.entries}
        return [k for k in self.store.list(segments_prefix(self.run_id))
                if k not in named and segment_sha256(k) is not None]

    def drop(self, pairs: Iterable[Pair]) -> int:
        """Set ``pairs`` aside (each writer's index rewritten once): they no longer count as
        stored, so they run again; how many were dropped."""
        wanted = {(p[0], p[1]) for p in pairs}
        held = self.pairs()
        n = 0
        for writer, idx in self.writers.items():
            changed = False
            for i, entry in enumerate(idx.segments):
                mine = [p for p in unpack_pairs(entry.pairs, entry.key)
                        if p in wanted and held.get(p) is entry]
                if mine:
                    old = unpack_pairs(entry.dropped, entry.key) if entry.dropped else []
                    idx.segments[i] = SegmentEntry.from_dict({**entry.to_dict(), "dropped": pack_pairs([*old, *mine])})
                    n += len(mine)
                    changed = True
            if changed:
                key = segment_index_key(self.run_id, writer)
                self.read_sha256[key] = self.store.write_json(key, idx.to_dict())
        self.entries = [(w, e) for w, idx in self.writers.items() for e in idx.segments]
        return n

    def remove_all(self) -> int:
        """Remove every segment and index document of the run (a refresh); trials removed."""
        n = len(self.pairs())
        for key in [*self.store.list(segments_prefix(self.run_id)), *self.index_keys]:
            self.store.delete(key)
        self.writers, self.entries, self.read_sha256 = {}, [], {}
        return n

    def digests(self) -> dict[str, str]:
        """``{key: sha256}`` of every indexed segment and every index document (what a
        manifest lists); each index document hashed as :meth:`load` read it (the entries
        listed are those bytes'; one not read here is read and hashed), the segments named by
        their keys (verified whenever read)."""
        out = {e.key: e.sha256 for _, e in self.entries}
        for key in self.index_keys:
            sha = self.read_sha256.get(key)
            out[key] = sha if sha is not None else self.store.digest(key)
        return out


def read_segment(store: Optional[Store], entry: SegmentEntry, *, verify: bool = True,
                 data: Optional[bytes] = None) -> list[SegmentTrial]:
    """The trials of one indexed segment that still count (dropped ones skipped), its bytes
    checked against the sha256 its key and entry name (DigestMismatch) and its line count
    against the entry (DocumentError)."""
    key = entry.key
    if data is None:
        data = store.read_bytes(key)
    if verify:
        actual = sha256_hex(data)
        if actual != entry.sha256 or segment_sha256(key) != entry.sha256:
            raise DigestMismatch(f"segment {key} has sha256 {actual[:12]}..., its index recorded "
                                 f"{entry.sha256[:12]}... (changed after the run); refusing to use "
                                 "it: run `ek-agents audit` on the run, or refresh it")
    lines = decode_segment(data, key)
    pairs = unpack_pairs(entry.pairs, key)
    if len(lines) != len(pairs) or len(pairs) != entry.n:
        raise DocumentError(f"segment {key} holds {len(lines)} lines, its index lists "
                            f"{len(pairs)} trials (n={entry.n}); re-create the run")
    dropped = set(unpack_pairs(entry.dropped, key)) if entry.dropped else ()
    return [SegmentTrial(p, key, entry.sha256, line) for p, line in zip(pairs, lines)
            if p not in dropped]


def owner(owners: Mapping[str, Any], pair: Pair) -> int:
    """The position of the segment holding ``pair`` in :meth:`RunSegments.owners`' map (-1: none)."""
    row = owners.get(pair[0])
    return row[pair[1]] if row is not None and 0 <= pair[1] < len(row) else -1


def owned(owners: Mapping[str, Any]) -> Counter:
    """Per position in :attr:`RunSegments.entries`, how many trials that segment holds first,
    from :meth:`RunSegments.owners`' map (one pass over it, no pair unpacked again)."""
    counts: Counter = Counter()
    for row in owners.values():
        counts.update(row)
    counts.pop(-1, None)
    return counts


def iter_segments(store: Store, segments: RunSegments, *, only: Optional[set] = None,
                  verify: bool = True, prefetch: int = 4) -> Iterator[list[SegmentTrial]]:
    """Each segment's trials in turn (those that count, first holder only; with ``only``, just
    those pairs), reading up to ``prefetch`` segments ahead on threads (a remote store's GETs
    overlap the caller's parsing); memory: ``prefetch + 1`` segments."""
    owners = segments.owners(0)
    todo = [(pos, e) for pos, (_, e) in enumerate(segments.entries)
            if any(owner(owners, p) == pos and (only is None or p in only)
                   for p in unpack_pairs(e.pairs, e.key))]
    if not todo:
        return
    with ThreadPoolExecutor(max_workers=max(1, prefetch)) as pool:
        futures = [pool.submit(store.read_bytes, e.key) for _, e in todo[:prefetch]]
        for i, (pos, entry) in enumerate(todo):
            data = futures[i].result()
            futures[i] = None  # type: ignore[call-overload]
            if i + prefetch < len(todo):
                futures.append(pool.submit(store.read_bytes, todo[i + prefetch][1].key))
            yield [t for t in read_segment(store, entry, verify=verify, data=data)
                   if owner(owners, t.pair) == pos and (only is None or t.pair in only)]


def segment_line_doc(trial: SegmentTrial) -> Any:
    """One segment line parsed (DocumentError naming the segment and trial when it is not JSON)."""
    return parse_json(trial.data, f"{trial.key} trial {trial.pair!r}")


def stored_pair(doc: Any) -> Pair:
    """The ``(task_id, trial)`` a stored episode document names (a segment line, a per-trial
    file, an entry of an episodes document); AttributeError when it is not an object whose
    ``meta`` is an object or null."""
    return (doc.get("task_id"), (doc.get("meta") or {}).get("trial"))


