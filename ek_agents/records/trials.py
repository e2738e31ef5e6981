"""Stored trials and this process's memo of their episodes.

:class:`StoredTrial` is one per-trial episode file as the run wrote (or read) it; the episodes
document of a run is assembled from their bytes (:func:`episodes_bytes`). The memo keeps the
episodes of a document this process parsed or wrote, and a graded document made ahead of its
stage, so the next stage in the same process does not parse and validate 20,000 episodes again
(:func:`read_episodes`, :func:`trial_grader`, :func:`remember_graded`).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from ..base import Episode, JsonShape, Trajectory
from ..core import shape
from ..errors import ArtifactNotFound, InvalidInput
from ..scoring.metrics import grade
from ..store import canonical_json, episode_key, episodes_prefix, parse_json, sha256_hex
from .documents import check_run_doc, episodes_doc_bytes, episodes_of, tasks_of, verified_bytes
from .fingerprint import parse_trial
from .manifest import input_digest
from .segments import RunSegments, iter_segments
from .stagecache import StageRef

__all__ = ["StoredTrial", "read_trials", "episodes_bytes", "episodes_json", "graded_digest", "EPISODES_MEMO_DOCS",
           "EPISODES_MEMO_EPISODES", "GRADED_MEMO_DOCS", "PLAIN_RUNS", "remember_episodes",
           "PlainEpisodeJson", "trial_grader", "remember_graded", "take_graded", "forget_episodes",
           "read_episodes"]


@shape()
class StoredTrial(JsonShape):
    """One stored trial as the run wrote (or read) it -- a line of a segment, or a per-trial
    file of a run stored one file per trial: what the stages after the trials need of it
    without reading it again."""

    task_id: str
    """The trial's task."""
    trial: int
    """The trial index."""
    key: str
    """The store key of its segment (``store.segment_key``), or of its file
    (``store.episode_key``)."""
    sha256: str
    """sha256 of that object's bytes."""
    data: str
    """Its content as canonical JSON of ``Episode.to_dict()`` (ASCII): the bytes the harness
    wrote."""


def read_trials(store: Any, run_id: str, pairs: Iterable[tuple]) -> dict[tuple[str, int], StoredTrial]:
    """The stored trials among ``pairs`` of run ``run_id``, each read once (a missing file is
    skipped; a file that is not the trial its key names is removed, so that the trial runs
    again, as :func:`claim_run` does): ``{(task_id, trial): StoredTrial}``."""
    def one(pair: tuple) -> Optional[StoredTrial]:
        key = episode_key(run_id, pair[0], pair[1])
        try:
            data = store.read_bytes(key)
        except ArtifactNotFound:
            return None
        parsed = parse_trial(data, key, pair[0], pair[1])
        if parsed is None:
            store.delete(key)
            return None
        return StoredTrial(task_id=pair[0], trial=pair[1], key=key, sha256=sha256_hex(data),
                           data=canonical_json(parsed[0]).decode("ascii"))

    pairs = [(p[0], p[1]) for p in pairs]
    out = _segment_trials(store, run_id, set(pairs))
    rest = [p for p in pairs if p not in out]
    if not rest or not store.list(episodes_prefix(run_id)):  # no per-trial file to look for
        return out
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(rest)))) as ex:
        found = list(ex.map(one, rest))
    return {**out, **{p: t for p, t in zip(rest, found) if t is not None}}


def _segment_trials(store: Any, run_id: str, wanted: set) -> dict[tuple[str, int], StoredTrial]:
    """:func:`read_trials` of the run's segments: the indexed trials of ``wanted``; a line
    that is not the trial its index names is set aside (it runs again)."""
    segments = RunSegments.load(store, run_id)
    out, drop = {}, []
    for batch in iter_segments(store, segments, only=wanted):
        for t in batch:
            parsed = parse_trial(t.data, t.key, *t.pair)
            if parsed is None:
                drop.append(t.pair)
                continue
            out[t.pair] = StoredTrial(task_id=t.pair[0], trial=t.pair[1], key=t.key,
                                      sha256=t.sha256,
                                      data=canonical_json(parsed[0]).decode("ascii"))
    if drop:
        segments.drop(drop)
    return out


def episodes_json(episodes: Iterable[Episode]) -> bytes:
    """``canonical_json(episodes_doc(episodes))``, each plain episode's part assembled by
    :class:`PlainEpisodeJson` and any other's the general way: the same bytes, ~3x faster
    (0.28 s against 0.90 s for 100,000 plain episodes: a whole run's episodes and graded
    documents, written at the end of ``run_suite``).

    >>> from ek_agents.core import canonical_json
    >>> from ek_agents.records.documents import episodes_doc
    >>> eps = [Episode("t1", output="A", meta={"trial": 0}), Episode("t2", output=[1])]
    >>> episodes_json(eps) == canonical_json(episodes_doc(eps))
    True
    """
    plain = PlainEpisodeJson()
    return episodes_doc_bytes((plain(e) or canonical_json(e.to_dict())).decode("ascii")
                              for e in episodes)


def episodes_bytes(trials: Iterable["StoredTrial"]) -> bytes:
    """The canonical JSON bytes of :func:`episodes_doc` of the given stored trials, assembled
    from their stored bytes (each already canonical JSON of ``Episode.to_dict()``) without
    parsing or re-serializing one episode: equal to ``canonical_json(episodes_doc(eps))``."""
    return episodes_doc_bytes(t.data for t in trials)



def graded_digest(episodes_sha256: str, suite_digest: str, check: Optional[str]) -> str:
    """The graded stage's input digest: the episodes document's sha256, the suite's digest and
    the checker name."""
    return input_digest("graded", episodes=episodes_sha256, suite=suite_digest, check=check)



# An episodes / graded document this process parsed or wrote, by the sha256 of its bytes: the
# next stage in the same process that reads those bytes (verified: read and hashed, as
# :func:`read_ref`) takes the episodes already validated instead of parsing 10 MB and validating
# 20,000 Episodes again. Only documents whose episodes came from parsing stored bytes (or from
# grading such episodes) are kept, so an entry equals what parsing its bytes gives. The audit
# never reads through it (it re-reads and re-hashes the store); another process (a Dask
# worker, a resumed run) starts empty and reads the store. Episodes are frozen; every stage
# of this module builds new episodes and never mutates its input's ``meta``.
_EPISODES_MEMO: "OrderedDict[str, tuple[Episode, ...]]" = OrderedDict()
_EPISODES_MEMO_LOCK = threading.Lock()
#: At most this many documents, and this many episodes over all of them, are kept.
EPISODES_MEMO_DOCS, EPISODES_MEMO_EPISODES = 4, 200_000


def remember_episodes(sha256: str, episodes: Iterable[Episode]) -> None:
    kept = tuple(episodes)
    with _EPISODES_MEMO_LOCK:
        _EPISODES_MEMO[sha256] = kept
        _EPISODES_MEMO.move_to_end(sha256)
        while len(_EPISODES_MEMO) > EPISODES_MEMO_DOCS or (
                len(_EPISODES_MEMO) > 1
                and sum(map(len, _EPISODES_MEMO.values())) > EPISODES_MEMO_EPISODES):
            _EPISODES_MEMO.popitem(last=False)


#: Graded documents made ahead of their stage in this process (:func:`remember_graded`), by
#: the graded stage's input digest: ``(canonical JSON bytes, graded episodes)``; taken once.
_GRADED_MEMO: "OrderedDict[str, tuple[bytes, tuple[Episode, ...]]]" = OrderedDict()
GRADED_MEMO_DOCS = 2


#: The exact types a plain episode's output and ``meta`` values may have (a finite ``float``
#: too): each is its own JSON, and parsing that JSON gives back an equal value of that type.
_PLAIN_TYPES = (str, int, bool, type(None))


#: Distinct ``run`` provenance objects a :class:`PlainEpisodeJson` keeps the JSON of (the
#: harness shares one per trial seed); episodes of any other go the general way.
PLAIN_RUNS = 256


class PlainEpisodeJson:
    """``canonical_json(episode.to_dict())`` of a *plain* episode, assembled from a few
    pieces instead of pydantic's dump, the depth walk and a sorted dump of the nested dict
    (~8 us instead of ~30 us a trial: the harness's per-trial CPU on the event loop, and the
    chunks' grading on the writer threads). Call it with an episode: its canonical JSON bytes,
    or None when the episode is not plain (the caller then takes the general path).

    Plain: exactly an :class:`~ek_agents.base.Episode` (no subclass) with no steps, no
    ``final_state``, ``cost`` or ``provenance``, ``success`` True / False / None, an
    ``output`` that is a ``str`` / ``int`` / ``bool`` / ``None`` / finite ``float`` (exact
    types), and a flat ``meta`` of such values under string keys -- what
    ``harness.run_trials`` makes of an agent's plain answer. Such an episode's JSON parses back
    to an equal episode, so grading it or the stored bytes gives the same result.

    Every byte is the general path's: each distinct ``run`` provenance's first episode is
    also encoded the general way and compared (an instance whose pieces ever disagree -- a
    field added to ``Episode`` -- encodes nothing from then on);
    ``tests/harness/test_plain_episode_json.py`` compares both on varied episodes.
    """

    def __init__(self) -> None:
        self._runs: dict[int, tuple[Any, bytes]] = {}  # id(run) -> (run, its JSON): run kept alive
        self._broken = False

    def __call__(self, ep: Any) -> Optional[bytes]:
        if self._broken or type(ep) is not Episode:
            return None
        own = ep.__dict__
        out, meta, success = own["output"], own["meta"], own["success"]
        traj = own["trajectory"]
        if (type(traj) is not Trajectory or traj.steps or own["final_state"] is not None
                or own["cost"] is not None or own["provenance"] is not None
                or not (success is None or type(success) is bool)
                or not _plain_value(out) or type(meta) is not dict):
            return None
        for key, value in meta.items():
            if type(key) is not str or not _plain_value(value):
                return None
        run = own["run"]
        held = self._runs.get(id(run))
        first = held is None or held[0] is not run
        if first:
            if len(self._runs) >= PLAIN_RUNS:  # one provenance per trial seed is the norm
                return None
            general = ep.to_dict()  # this episode the general way: its run's JSON, and a check
            held = self._runs[id(run)] = (run, canonical_json(general.get("run")))
        try:
            data = b"".join((
                b'{"cost":null,"final_state":null,"meta":', canonical_json(meta),
                b',"output":', canonical_json(out), b',"provenance":null,"run":', held[1],
                b',"schema_version":1,"success":',
                b"null" if success is None else b"true" if success else b"false",
                b',"task_id":', canonical_json(own["task_id"]), b',"trajectory":{"steps":[]}}'))
        except InvalidInput:  # an int too long to print, say: the general path says why
            return None
        if first and data != canonical_json(general):
            self._broken = True
            return None
        return data


def _plain_value(v: Any) -> bool:
    return type(v) in _PLAIN_TYPES or (type(v) is float and math.isfinite(v))


def trial_grader(tasks: Mapping, check: Optional[str]
                 ) -> Callable[..., Optional[tuple[Episode, str]]]:
    """A function grading one stored trial as :func:`run_grade` grades it (the same parse,
    validation and ``metrics.grade`` with ``check``, else the suite's checker): ``(graded
    episode, its canonical JSON)``, or None when it cannot be graded here (the grade stage
    then grades, and says why). The suite's task table is built once, here.

    Called as ``one(trial, episode)`` with the episode the trial's bytes were made from, when
    those bytes are :class:`PlainEpisodeJson`'s (they parse back to an equal episode): that
    episode is graded without parsing the bytes again, and the graded bytes are assembled the
    same way (the same bytes as parsing, grading and dumping: tested)."""
    table = {t.task_id: t for t in tasks_of(tasks)}
    name = check if check is not None else tasks.get("checker")
    plain = PlainEpisodeJson()

    def one(trial: "StoredTrial", episode: Optional[Episode] = None
            ) -> Optional[tuple[Episode, str]]:
        try:
            given = episode is not None
            if episode is None:
                doc = check_run_doc("episodes", parse_json(episodes_bytes([trial]), trial.key),
                                    trial.key)
                (episode,) = episodes_of(doc)
            (graded,) = grade([episode], {episode.task_id: table[episode.task_id]}, check=name)
            data = (plain(graded) if given else None) or canonical_json(graded.to_dict())
            return graded, data.decode("ascii")
        except Exception:  # noqa: BLE001 -- an optimisation only: the grade stage reports it
            return None

    return one


def remember_graded(episodes_sha256: str, suite_digest: str, check: Optional[str],
                    graded: Iterable[Episode], data: Iterable[str]) -> None:
    """Keep (in this process) the graded document of the episodes document ``episodes_sha256``
    -- ``graded`` episodes in its order, ``data`` their canonical JSON (:func:`trial_grader`)
    -- for :func:`run_grade` with the same inputs to take instead of grading again."""
    digest = graded_digest(episodes_sha256, suite_digest, check)
    with _EPISODES_MEMO_LOCK:
        _GRADED_MEMO[digest] = (episodes_doc_bytes(data), tuple(graded))
        while len(_GRADED_MEMO) > GRADED_MEMO_DOCS:
            _GRADED_MEMO.popitem(last=False)




def take_graded(digest: str) -> Optional[tuple[bytes, tuple[Episode, ...]]]:
    """The graded document :func:`remember_graded` kept under the graded stage's input digest
    ``digest`` -- ``(canonical JSON bytes, graded episodes)`` -- removed from the memo (taken
    once); None when this process made none."""
    with _EPISODES_MEMO_LOCK:
        return _GRADED_MEMO.pop(digest, None)


def forget_episodes() -> None:
    """Empty this process's memo of parsed episodes documents (:func:`read_episodes`): the
    next read of each parses its stored bytes again."""
    with _EPISODES_MEMO_LOCK:
        _EPISODES_MEMO.clear()
        _GRADED_MEMO.clear()


def read_episodes(store: Any, ref: StageRef) -> list[Episode]:
    """:func:`episodes_of` :func:`read_ref` of an episodes (or graded) reference: the bytes
    are read and must hash to ``ref.sha256`` (else DigestMismatch); when this process already
    holds the episodes of those bytes (it wrote the document, or parsed it before) they are
    returned without parsing again, else the document is parsed, validated and remembered."""
    data = verified_bytes(store, ref)
    with _EPISODES_MEMO_LOCK:
        held = _EPISODES_MEMO.get(ref.sha256)
    if held is not None:
        return list(held)
    episodes = episodes_of(check_run_doc(ref.stage, parse_json(data, ref.key), ref.key))
    remember_episodes(ref.sha256, episodes)
    return episodes
