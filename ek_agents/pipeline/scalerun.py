"""A run at scale: trials in segments on a cluster, the report streamed from them.

What only the ``evaluate-at-scale`` flow needs (``flows/scale.py``), beside
:mod:`ek_agents.pipeline.chunks`. The run is planned once from its segment index
(:func:`plan_scale`: fingerprint checked, orphans removed, the trials no indexed segment holds
split into chunks of whole tasks); each chunk (:func:`run_scale_chunk`, one task run on a Dask
worker) runs its trials with ``harness.store_trials`` (into segments), each segment graded and
summed as it is written (``streaming.segment_summarizer``: its index entry carries the
summary), keeping no episode; :func:`finish_scale` merges the summaries into the metrics and
report documents (``streaming.merged_report``: memory bounded by per-task state) and records
the manifest, which lists every segment and index document with its sha256. Nothing assumes a
shared local disk: every byte goes through the store (``s3://`` for a real cluster).

A chunk that runs again (a Prefect retry, or Dask re-running the task of a worker that died)
first reads the segment index and skips what is stored, so a killed worker costs its unflushed
segment, never a duplicate.
"""
from __future__ import annotations

import os
import resource
import socket
import time
from collections.abc import Sequence
from typing import Any, Optional

from pydantic import Field

from ..base import JsonShape, RunProvenance
from ..core import shape
from ..errors import IntegrityError, InvalidInput, RunMismatch
from ..store import Store
from ..records.documents import prices_of, read_ref, record_run, tasks_of, tasks_of_chunk
from ..execution.harness import store_trials
from ..records.fingerprint import RunFingerprint, check_fingerprint, fingerprint_key
from ..records.manifest import RunInputs
from .chunks import TrialRequest, request_fingerprint
from .request import load_agent
from ..records.segments import (SEGMENT_TRIALS, RunSegments, new_writer_name, pack_pairs,
                                unpack_pairs)
from ..records.stagecache import ManifestRef, StageRef, write_doc
from ..stages.streaming import STREAMED, merged_report, segment_summarizer
from ..stages.streaming import summary_basis

__all__ = ["ScaleChunk", "ScalePlan", "ScaleChunkResult", "plan_scale", "run_scale_chunk",
           "finish_scale", "peak_rss_mb", "SCALE_CHUNK", "held_bitmaps", "LAYOUT"]

#: Trials per chunk by default: four segments. A chunk is a task run and one segment writer;
#: its memory is bounded by its size (not the run's), and a killed worker loses at most its
#: chunk's unflushed segment.
SCALE_CHUNK = 4 * SEGMENT_TRIALS
#: ``manifest.parameters["layout"]`` of a run recorded here (``streaming.STREAMED``).
LAYOUT = STREAMED


@shape()
class ScaleChunk(JsonShape):
    """One chunk of a run at scale: whole tasks' missing trials, packed."""

    request: TrialRequest
    index: int
    pairs: list = Field(default_factory=list)
    """Its ``(task_id, trial)`` pairs, packed (``segments.pack_pairs``)."""
    n: int = 0
    """How many pairs."""
    prices: Optional[StageRef] = None
    """The run's prices document (each segment's summary prices its trials)."""
    concurrency: int = 8
    """Trials at once in this chunk."""


@shape()
class ScalePlan(JsonShape):
    """A run at scale planned from its segment index: the chunks still to run and what is held."""

    request: TrialRequest
    chunks: tuple[ScaleChunk, ...] = ()
    total: int = 0
    """Trials in the run."""
    held: int = 0
    """Trials already stored (an indexed segment holds them)."""
    refreshed: int = 0
    """Stored trials removed by ``refresh``."""
    orphans: int = 0
    """Orphan segments removed (stored, never indexed: a writer died in between)."""


@shape()
class ScaleChunkResult(JsonShape):
    """What one chunk at scale ran and stored, and what its process spent doing it."""

    index: int
    ran: int = 0
    """Trials run (agent calls)."""
    skipped: int = 0
    """Pairs already stored when the chunk started (a re-run of the chunk)."""
    puts: int = 0
    """PUT requests of its segment writer (segments and index rewrites)."""
    pid: int = 0
    host: str = ""
    rss_mb: float = 0.0
    """Peak resident memory of the process that ran it, MB (:func:`peak_rss_mb`)."""
    cpu_s: float = 0.0
    """CPU seconds its process spent while it ran (one chunk at a time per worker process)."""
    wall_s: float = 0.0
    """Seconds it took."""


def _basis(request: TrialRequest, prices: Optional[StageRef]) -> str:
    """``streaming.summary_basis`` of a request's suite, checker and prices document."""
    return summary_basis(request.tasks.digest, request.check,
                         None if prices is None else prices.sha256)


def held_bitmaps(segments: RunSegments, k: int) -> dict[str, bytearray]:
    """Per task, a byte per trial: 1 when an indexed segment holds it (not dropped there).
    ~k bytes per task, whatever the number of segments."""
    held: dict[str, bytearray] = {}
    for _, _, live in segments.live():
        for pair in live:
            if not 0 <= pair[1] < k:
                continue
            row = held.get(pair[0])
            if row is None:
                row = held[pair[0]] = bytearray(k)
            row[pair[1]] = 1
    return held


def plan_scale(request: TrialRequest, prices: Optional[StageRef] = None, *,
               chunk_size: Optional[int] = None) -> ScalePlan:
    """The run's chunks: every trial no indexed segment holds, whole tasks in suite order,
    ``chunk_size`` (default :data:`SCALE_CHUNK`) trials a chunk. One LIST and one GET per
    writer of the run; no trial is read."""
    st = Store(request.store)
    fp = request_fingerprint(request)
    segs = RunSegments.load(st, request.run_id)
    if not request.refresh and segs.entries and not st.exists(fingerprint_key(request.run_id)):
        raise RunMismatch(f"run {request.run_id!r} holds stored segments but no fingerprint, so "
                          "nothing says what produced them. Use a new run id, or refresh the run")
    check_fingerprint(st, request.run_id, fp, refresh=request.refresh)  # claim_run's rule, no trial read
    st.write_json(fingerprint_key(request.run_id), fp.to_dict())
    refreshed = orphans = 0
    if request.refresh:
        refreshed = segs.remove_all()
    else:
        for key in segs.orphans():
            st.delete(key)
            orphans += 1
    k = request.k
    held = held_bitmaps(segs, k)
    ids = [t["task_id"] for t in st.read_json(request.tasks.key)["tasks"]]
    size = chunk_size or request.chunk_size or SCALE_CHUNK
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidInput(f"chunk_size must be an int >= 1, got {size!r}")
    per_chunk = max(1, request.max_concurrency // max(1, request.parallel_chunks))
    chunks: list = []
    current: list = []
    n_held = 0
    for tid in sorted(ids):
        row = held.get(tid)
        for i in range(k):
            if row is not None and row[i]:
                n_held += 1
                continue
            current.append((tid, i))
        if len(current) >= size:
            chunks.append(current)
            current = []
    if current:
        chunks.append(current)
    return ScalePlan(request=request, total=len(ids) * k, held=n_held, refreshed=refreshed,
                     orphans=orphans,
                     chunks=tuple(ScaleChunk(request=request, index=i, pairs=pack_pairs(c),
                                             n=len(c), prices=prices, concurrency=per_chunk)
                                  for i, c in enumerate(chunks)))


def run_scale_chunk(chunk: ScaleChunk) -> ScaleChunkResult:
    """Run one chunk's trials not stored yet, into segments of this writer (each graded and
    summed as it is written); nothing is kept in memory beyond the open segment."""
    req = chunk.request
    t0, cpu0 = time.perf_counter(), _cpu_s()
    st = Store(req.store)
    pairs = unpack_pairs(chunk.pairs, f"chunk {chunk.index}")
    # a re-run of this chunk (a Prefect retry, Dask re-running a dead worker's task) skips what
    # its earlier attempts stored: one LIST, and a GET per earlier attempt (the plan already
    # left out what the run's other writers hold)
    mine = f"c{chunk.index:05d}-"
    held = held_bitmaps(RunSegments.load(st, req.run_id, writers=mine), req.k)
    todo = [p for p in pairs if not (p[0] in held and held[p[0]][p[1]])]
    tasks = tasks_of_chunk(st.read_json(req.tasks.key), (t for t, _ in todo))
    prices = prices_of(read_ref(st, chunk.prices)) if chunk.prices is not None else None
    run = RunProvenance.from_dict(req.run)
    summarize = segment_summarizer(tasks, k=req.k, check=req.check, prices=prices,
                                   seed=req.seed or 0, run=run)
    basis = _basis(req, chunk.prices)
    puts = [0]

    def with_basis(pairs_: list, lines: list, episodes: list) -> dict:
        puts[0] += 2
        return {**summarize(pairs_, lines, episodes), "basis": basis}

    if todo:
        store_trials(load_agent(req.agent), tasks_of(tasks), todo, k=req.k, store=st,
                     run_id=req.run_id, seed=req.seed, run=run,
                     max_concurrency=chunk.concurrency, timeout_s=req.timeout_s,
                     retries=req.retries, summarize=with_basis, keep=False,
                     writer=mine + new_writer_name(), flush_s=req.flush_s)
    return ScaleChunkResult(index=chunk.index, ran=len(todo), skipped=len(pairs) - len(todo),
                            puts=puts[0], pid=os.getpid(), host=socket.gethostname(),
                            rss_mb=peak_rss_mb(),
                            cpu_s=_cpu_s() - cpu0, wall_s=time.perf_counter() - t0)


def peak_rss_mb() -> float:
    """This process's peak resident memory, MB: ``VmHWM`` from ``/proc/self/status`` where
    there is one (its own since exec), else ``ru_maxrss`` -- which on Linux a spawned process
    starts from its parent's peak: a Dask worker reported 460 MB of a 400 MB parent against
    63 MB of its own."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def finish_scale(plan: ScalePlan, prices: Optional[StageRef],
                 results: Sequence[ScaleChunkResult] = (), *, parameters: Optional[dict] = None,
                 orchestrator: Optional[dict] = None) -> ManifestRef:
    """The run's metrics and report (the segments' summaries merged: memory bounded by per-task
    state), then its manifest listing every segment and index document with its sha256."""
    req = plan.request
    st = Store(req.store)
    tasks_doc = read_ref(st, req.tasks)
    price_table = prices_of(read_ref(st, prices)) if prices is not None else None
    run = RunProvenance.from_dict(req.run)
    metrics, report, counts = merged_report(
        st, req.run_id, tasks_doc, k=req.k, check=req.check, prices=price_table,
        seed=req.seed or 0, run=run, basis=_basis(req, prices))
    if counts["trials"] != plan.total:
        raise IntegrityError(f"run {req.run_id!r}: its segments hold {counts['trials']} of its "
                             f"{plan.total} trials after every chunk ran; run it again (it "
                             "resumes) or refresh it")
    refs = {"tasks": req.tasks, "prices": prices,
            "metrics": write_doc(st, req.run_id, "metrics", metrics.to_dict()),
            "report": write_doc(st, req.run_id, "report", report.to_dict())}
    return record_run(st, req.run_id, refs=refs,
                      inputs=RunInputs(k=req.k, seed=req.seed, check=req.check, run=req.run),
                      agent=req.agent,
                      parameters={**(parameters or {}), "layout": LAYOUT,
                                  "merged_segments": counts["merged"],
                                  "read_segments": counts["read"]},
                      orchestrator=orchestrator or {"orchestrator": "ek_agents.pipeline.scalerun"})
