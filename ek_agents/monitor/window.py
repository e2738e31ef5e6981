"""One monitor window: new traces in, judged (a sample stratified by slice), billed, recorded as
a run.

:func:`run_window` takes the episodes of what the series' ledger has not consumed from one
stream (:func:`new_episodes`), stores each in the run's segments as it comes
(``records.segments``; the run id is the window id) and keeps only a light row of it
(``stages.windowrun.WindowTrial``: key, slice, digest, the output and request the judge reads,
its calls, tokens and dollars per model). Once the stream is exhausted it judges the rows
(every one, or ``judge_sample`` of them allocated to the slices in proportion to their
traces, at least one each, seeded by the window), bills the agent's model calls and -- apart --
the judges' own calls (the **evaluation cost**), and records the run: the documents of
``stages.windowrun`` (tasks, the episodes' index, the verdicts as ``graded``, the report),
the prices it billed at, and the manifest (``source``: ``{"kind": "monitor-window", "series",
"window", "path"}``), so that ``ek-agents report``, ``audit`` and ``export`` work on it. The
series keeps its index of windows (:class:`WindowRecord`,
``monitor/<series>/windows/<id>.json``) and its ledger. Verdicts are cached by (episode
digest, judge identity) in ``monitor/<series>/verdicts/<judge>.json``: a verdict already paid
for is never asked again (and the record counts what was reused).

Re-running a window id that is recorded returns the record as stored (``reused=True``): no
trace read, no episode made, no judge called. A window id that is already the id of another
run (not a window, or a window of another series) is refused (RunMismatch naming both).
Several judges combine as :func:`~ek_agents.scoring.facades.estimate_quality` combines
signals (``combine="min"``: every judge must pass, a FAIL stops the costlier judges;
``"mean"``: the mean score >= 0.5).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..base import Episode
from ..bridge.otel import gc_paused
from ..core import canonical_json
from ..errors import ArtifactNotFound, BridgeError, DigestMismatch, IntegrityError, InvalidInput, RunMismatch
from ..identity.agentid import agent_identity
from ..labels import GradedBy
from ..records.documents import SUITE_FIELDS, prices_doc, read_manifest, record_run
from ..records.episodejson import canonical_bytes
from ..records.manifest import RunInputs, RunManifest
from ..records.segments import (RunSegments, SegmentWriter, iter_segments, new_writer_name,
                                segment_line_doc)
from ..records.stagecache import EpisodesRef, write_doc, write_tasks
from ..scoring.facades import estimate_quality
from ..stages.windowrun import (WINDOW_SOURCE, WindowFigures, combined_verdict, episode_digest,
                                episode_record, judge_sample, trial_key, verdict_cache_key,
                                window_documents, window_trial)
from ..store import Store, acquire_lease, open_store, release_lease
from ..store.sources import monitor_key
from .ingest import EpisodeStream, IngestCounts, Ledger, iter_new_episodes

__all__ = ["WindowOptions", "WindowRecord", "run_window", "load_ledger", "load_window",
           "window_episodes", "iter_window_episodes", "episode_digest", "judge_identity", "new_window_id",
           "new_episodes", "window_manifest", "WINDOW_SOURCE"]


class WindowOptions(BaseModel):
    """How a window reads and judges its traces (recorded with it)."""

    group_by: str = "trace"
    task_attr: Optional[str] = None
    slice_attr: Optional[str] = None
    judge_sample: Optional[int] = Field(default=None, ge=1)
    combine: str = "min"
    seed: int = 0


class WindowRecord(WindowFigures):
    """The series' index entry of a window: enough to recompute its rate and alert without
    reading a trace (the window's run holds its documents); its figures
    (:class:`~ek_agents.stages.windowrun.WindowFigures`) are those of the run's documents."""

    schema_version: int = 1
    window_id: str
    series: str
    created: str
    source: str
    options: WindowOptions
    counts: IngestCounts
    episodes_digest: str = ""
    """sha256 of the run's episodes document (the episodes' index)."""
    verdicts: dict[str, bool] = Field(default_factory=dict)
    """The combined verdict of each judged episode, by ``task_id/trial``."""
    judges: list[str] = Field(default_factory=list)
    judge_calls: int = 0
    judge_cached: int = 0
    reused: bool = False
    """True when this call found the window recorded and returned it as stored (then
    ``judge_calls`` and ``judge_cached`` are this call's: 0)."""

    @property
    def new_episodes(self) -> int:
        """Episodes this call made: 0 for a reused window."""
        return 0 if self.reused else self.episodes


def new_window_id() -> str:
    """A window id from the UTC time: ``w20261207T064100Z``."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("w%Y%m%dT%H%M%SZ")


def judge_identity(judge: Any) -> str:
    """A judge's identity: its ``identity`` attribute (EndpointJudge: model, endpoint, rubric,
    prompt), else the digest of its code and state; refused when part of it cannot be
    identified (a cached verdict would be reused for a different judge)."""
    ident = getattr(judge, "identity", None)
    if isinstance(ident, str) and ident:
        return ident
    a = agent_identity(judge)
    if a.undigestable:
        raise InvalidInput(f"judge {judge!r:.60} cannot be identified ({sorted(a.undigestable)}); "
                           "give it an `identity` string naming its model and rubric")
    return hashlib.sha256(canonical_json(a.to_dict())).hexdigest()


def load_ledger(store: Store, series: str) -> Ledger:
    """The series' ledger (empty for a new series)."""
    key = monitor_key(series, "ledger.json")
    return Ledger.model_validate(store.read_json(key)) if store.exists(key) else Ledger()


def load_window(store: Store, series: str, window_id: str) -> WindowRecord:
    """A stored window record (the series' index entry)."""
    return WindowRecord.model_validate(store.read_json(monitor_key(series, "windows",
                                                                   f"{window_id}.json")))


def window_manifest(store: Store, series: str, window_id: str) -> Optional[RunManifest]:
    """The manifest of the window's run (None when no run of that id is recorded); RunMismatch
    when the run of that id is not a window of ``series``."""
    try:
        manifest = read_manifest(store, window_id)
    except ArtifactNotFound:
        return None
    src = manifest.source
    if src.get("kind") != WINDOW_SOURCE or src.get("series") != series:
        what = (f"a window of series {src.get('series')!r}" if src.get("kind") == WINDOW_SOURCE
                else f"a run of source {src.get('kind') or 'an agent'!r}")
        raise RunMismatch(f"window {window_id!r} of series {series!r}: store {store.url!r} holds "
                          f"run {window_id!r}, {what}, and a window is the run of its id; give "
                          "the window another id (--window-id)")
    return manifest


def iter_window_episodes(store: Store, series: str, window_id: str) -> Iterator[Episode]:
    """A stored window's episodes, a segment at a time, each segment and index checked against
    the run's manifest (DigestMismatch when one changed after the window)."""
    manifest = window_manifest(store, series, window_id)
    if manifest is None:
        raise ArtifactNotFound(f"window {window_id!r} of series {series!r} has no run in store "
                               f"{store.url!r}; run `ek-agents monitor` for it first")
    segs = RunSegments.load(store, window_id)
    for key, sha in segs.read_sha256.items():
        if manifest.artifacts.get(key) != sha:
            raise DigestMismatch(f"window {window_id!r}: segment index {key} is not the one its "
                                 f"manifest lists (changed after the window); run `ek-agents "
                                 f"audit {window_id}`")
    for _, entry in segs.entries:
        if manifest.artifacts.get(entry.key) != entry.sha256:
            raise DigestMismatch(f"window {window_id!r}: segment {entry.key} is not listed in its "
                                 f"manifest; run `ek-agents audit {window_id}`")
    for trials in iter_segments(store, segs):
        for t in trials:
            yield Episode.from_dict(segment_line_doc(t))


def window_episodes(store: Store, series: str, window_id: str) -> list[Episode]:
    """A stored window's episodes (its run's segments, verified: :func:`iter_window_episodes`)."""
    return list(iter_window_episodes(store, series, window_id))


def new_episodes(source: Any, ledger: Ledger, options: WindowOptions) -> EpisodeStream:
    """The window's one source of episodes: those of the complete traces of ``source`` that
    ``ledger`` has not consumed, made as their traces complete and handed out one at a time
    (:func:`~ek_agents.monitor.ingest.iter_new_episodes`); once the stream is exhausted, its
    ``counts`` and ``ledger`` (the series' ledger after the window)."""
    return iter_new_episodes(source, ledger, group_by=options.group_by,
                             task_attr=options.task_attr, slice_attr=options.slice_attr,
                             where=str(source))


class _Cached:
    """One judge as a Signal for estimate_quality, answering from the cache when it can."""

    def __init__(self, judge: Any, ident: str, cache: dict, calls: list, counter: list) -> None:
        self.judge, self.ident, self.cache, self.calls, self.counter = judge, ident, cache, calls, counter
        self.name = getattr(judge, "name", None) or ident[:12]
        self.cost_tier = getattr(judge, "cost_tier", 5)
        self.digest: str = ""
        self.input: Any = None

    def __call__(self, output: Any) -> float:
        hit = self.cache.get(self.digest)
        if hit is not None:
            self.counter[1] += 1
            return float(hit[0])
        self.counter[0] += 1
        if hasattr(self.judge, "judge"):
            reply = self.judge.judge(output, self.input)
            score, why, call = (1.0 if reply.passed else 0.0), reply.rationale, reply.call
        else:
            score, why, call = float(self.judge(output)), "", None
        if call is not None:
            self.calls.append(call)
        self.cache[self.digest] = [score, why]
        return score


def _reused(st: Store, series: str, wid: str) -> WindowRecord:
    """A recorded window as stored; the ledger moved if the run stopped before it did."""
    led_key, next_key = monitor_key(series, "ledger.json"), monitor_key(series, "ledgers",
                                                                         f"{wid}.json")
    try:
        rec = load_window(st, series, wid)
    except ArtifactNotFound:
        raise IntegrityError(f"window {wid!r} of series {series!r}: its run is recorded but the "
                             f"series' index entry {monitor_key(series, 'windows', wid + '.json')} "
                             "is missing (removed after the window); restore it, or record the "
                             "traces as a new window") from None
    if st.exists(next_key):  # recorded, but stopped before the ledger moved: move it now
        st.write_json(led_key, st.read_json(next_key))
        st.delete(next_key)
    return rec.model_copy(update={"reused": True, "judge_calls": 0, "judge_cached": 0})


def run_window(source: Any, series: str, *, store: Any = None, judges: Sequence[Any] = (),
               prices: Optional[Mapping] = None, window_id: Optional[str] = None,
               options: Optional[WindowOptions] = None) -> WindowRecord:
    """Run one window of ``series`` over ``source`` (see the module docstring)."""
    st = open_store(store)
    opts = options or WindowOptions()
    if opts.combine not in ("min", "mean"):
        raise InvalidInput(f"combine must be 'min' or 'mean', got {opts.combine!r}")
    wid = st.validate_name(window_id or new_window_id(), what="window id")
    rec_key = monitor_key(series, "windows", f"{wid}.json")
    if window_manifest(st, series, wid) is not None or (
            st.exists(rec_key) and wid in load_ledger(st, series).windows):  # stored with no run
        return _reused(st, series, wid)  # this run read nothing and called no judge
    # one window of a series at a time (two would read the same traces from one ledger), and
    # the window's run id written by nobody else (its leftover segments are removed first)
    series_lease = acquire_lease(st, wid, at=monitor_key(series, "lease.json"))
    try:
        run_lease = acquire_lease(st, wid)
        try:
            return _record_window(st, source, series, wid, judges, prices, opts)
        finally:
            release_lease(st, run_lease)
    finally:
        release_lease(st, series_lease)


def _judge(st: Store, series: str, wid: str, judges: Sequence[Any], idents: list,
           rows: list, opts: WindowOptions) -> tuple[dict, dict, list]:
    """Judge the window's sample of ``rows``, each judge answering from its verdict cache when
    it can: ``(verdicts by trial key, the judges' calls by trial key, [calls made, cached])``;
    a cache that gained verdicts is stored again."""
    verdicts: dict[str, bool] = {}
    eval_calls: dict[str, list] = {}
    judge_calls: list = []
    counter = [0, 0]
    if not (judges and rows):
        return verdicts, eval_calls, counter
    caches, sizes = {}, {}
    for ident in idents:
        key = verdict_cache_key(series, ident)
        caches[ident] = st.read_json(key) if st.exists(key) else {}
        sizes[ident] = len(caches[ident])
    wrapped = [_Cached(j, i, caches[i], judge_calls, counter) for j, i in zip(judges, idents)]
    # an episode every judge has a cached score for gets the estimate (and asks as many judges)
    # as the first one with the same scores: estimate_quality run once per set of scores
    known: dict = {}
    in_order = [caches[i] for i in idents]
    for r in judge_sample(rows, opts.judge_sample, opts.seed, wid):
        key = trial_key(r.task_id, r.trial)
        scores = _cached_scores(in_order, r.digest)
        if scores in known:
            est, asked = known[scores]
            counter[1] += asked
            verdicts[key] = combined_verdict([est], opts.combine)
            continue
        for w in wrapped:
            w.digest, w.input = r.digest, r.input
        before, hits = len(judge_calls), counter[1]
        est = estimate_quality(r.output, wrapped, combine=opts.combine)["estimate"]
        if scores is not None:
            known[scores] = (est, counter[1] - hits)
        verdicts[key] = combined_verdict([est], opts.combine)  # est: the min or the mean
        if len(judge_calls) > before:
            eval_calls[key] = [call.to_dict() for call in judge_calls[before:]]
    for ident in idents:  # (verdicts are only ever added: a cache of the same size is as read)
        if len(caches[ident]) != sizes[ident] or not st.exists(verdict_cache_key(series, ident)):
            st.write_json(verdict_cache_key(series, ident), caches[ident])
    return verdicts, eval_calls, counter


def _cached_scores(caches: list, digest: str) -> Optional[tuple]:
    """The score each judge's cache holds for ``digest`` as ``_Cached`` answers it; None when
    one holds none (or one it could not answer)."""
    try:
        return tuple(float(c[digest][0]) for c in caches)
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _record_window(st: Store, source: Any, series: str, wid: str, judges: Sequence[Any],
                   prices: Optional[Mapping], opts: WindowOptions) -> WindowRecord:
    """Read, store, judge and record a window not recorded yet (under its leases)."""
    rec_key = monitor_key(series, "windows", f"{wid}.json")
    led_key, next_key = monitor_key(series, "ledger.json"), monitor_key(series, "ledgers",
                                                                         f"{wid}.json")
    RunSegments.load(st, wid).remove_all()  # what a window stopped before its manifest stored
    idents = [judge_identity(j) for j in judges]
    got = new_episodes(source, load_ledger(st, series), opts)
    writer = SegmentWriter(st, wid, writer=new_writer_name())
    rows = []
    with gc_paused():  # many small containers, no cycles: collections would walk them all
        for ep in got:
            line, digest = episode_record(ep)  # one dump for the stored line and the digest
            writer.add((ep.task_id, ep.meta["trial"]), line)
            rows.append(window_trial(ep, prices, digest))
        writer.flush()
    c, ledger = got.counts, got.ledger
    if not rows and (c.bad_lines or c.no_model_call) and not c.pending_traces:
        raise BridgeError(f"{source!r}: nothing usable in the window: {c.bad_lines} bad lines, "
                          f"{c.no_model_call} traces without a model call, {c.files} files; "
                          "check that the source holds OTLP/JSON GenAI spans")
    verdicts, eval_calls, counter = _judge(st, series, wid, judges, idents, rows, opts)
    with gc_paused():  # tens of thousands of small containers again, no cycles
        docs, fig = window_documents(rows, series=series, window_id=wid, verdicts=verdicts,
                                     evaluation_calls=eval_calls, judges=idents,
                                     combine=opts.combine, judge_sample_n=opts.judge_sample,
                                     prices=prices)
    rows.clear()
    # the ledger after this window is written first under the window's name, then the run's
    # documents, the series' index entry and -- last of the run -- its manifest, then the
    # ledger moves: a run stopped before its manifest leaves no window (its segments are
    # removed and its traces read again by the next run), one stopped after it a window whose
    # re-run moves the ledger; never a window whose traces the next window reads again
    ledger.windows.append(wid)
    led = canonical_json(ledger.model_dump(mode="json"))  # what write_json writes; twice below
    st.write_bytes(next_key, led)
    refs: dict = {"tasks": write_tasks(st, wid, docs["tasks"], canonical_bytes(docs["tasks"]))}
    if prices is not None:
        refs["prices"] = write_doc(st, wid, "prices", prices_doc(prices))
    ep_ref = write_doc(st, wid, "episodes", canonical_bytes(docs["episodes"]))
    refs["episodes"] = EpisodesRef(stage=ep_ref.stage, key=ep_ref.key, sha256=ep_ref.sha256,
                                   trials={e.key: e.sha256 for e in writer.index.segments})
    refs["graded"] = write_doc(st, wid, "graded", canonical_bytes(docs["graded"]))
    refs["report"] = write_doc(st, wid, "report", docs["report"])
    rec = WindowRecord(
        window_id=wid, series=series, created=_dt.datetime.now(_dt.timezone.utc).isoformat(),
        source=str(source), options=opts, counts=c, episodes_digest=ep_ref.sha256,
        verdicts=verdicts, judges=idents, judge_calls=counter[0], judge_cached=counter[1],
        **fig.model_dump())
    st.write_json(rec_key, rec.model_dump(mode="json"))
    record_run(st, wid, refs=refs,
               inputs=RunInputs(k=1, seed=opts.seed, graded_by=GradedBy(
                   kind="judge", name="monitor-window:" + ",".join(i[:12] for i in idents),
                   digest=hashlib.sha256(",".join(idents).encode()).hexdigest()) if idents
                   else None),
               source={"kind": WINDOW_SOURCE, "series": series, "window": wid,
                       "path": str(source)},
               parameters={**opts.model_dump(mode="json"), "judges": idents,
                           "priced": prices is not None},
               orchestrator={"orchestrator": "none", "runner": "ek_agents.monitor"},
               suite={f: docs["tasks"].get(f) for f in SUITE_FIELDS})
    st.write_bytes(led_key, led)
    st.delete(next_key)
    return rec
