"""A run's trials in chunks, one pipeline task run each: the plan (the cached episodes, or the
chunks still to run), one chunk run and graded as it is stored, the run's episodes collected.

>>> plan_chunks(["a", "b", "c"], k=2, chunk_size=4)
[[['a', 0], ['a', 1], ['b', 0], ['b', 1]], [['c', 0], ['c', 1]]]
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Optional

from pydantic import Field

from ..base import Episode, JsonShape, RunProvenance
from ..core import shape
from ..errors import InvalidInput
from ..execution.harness import run_trials, store_trials
from ..execution.limits import RunLimits, catalog, limits_provenance
from ..records.manifest import input_digest
from ..records.documents import episodes_of, tasks_of, tasks_of_chunk
from ..identity import code_digest
from ..records.fingerprint import RunFingerprint, claim_run, errored, run_fingerprint
from ..records.segments import FLUSH_S, SegmentWriter
from ..records.stagecache import (EpisodesRef, StageRef, SuiteRef, cache_origin, index_output,
                                  lookup, stage_output, write_doc)
from ..records.trials import StoredTrial, episodes_bytes, read_trials, remember_graded, trial_grader
from ..store import Store, canonical_json
from .request import load_agent

__all__ = ["DEFAULT_CHUNKS", "plan_chunks", "TrialRequest", "TrialChunk", "TrialPlan",
           "ChunkResult", "plan_trials", "cached_plan", "run_trial_chunk", "collect_episodes",
           "chunk_workers", "request_fingerprint", "request_trials", "chunk_slots",
           "chunk_concurrency"]

#: A run's trials are split into about this many chunks (one Prefect task run each).
DEFAULT_CHUNKS = 16


def plan_chunks(task_ids: Sequence[str], *, k: int, chunk_size: Optional[int] = None,
                slots: int = 1) -> list[list[list]]:
    """Split the ``(task_id, trial)`` pairs of a run into chunks, one Prefect task run each.

    Default size: about :data:`DEFAULT_CHUNKS` chunks, each a whole number of rounds of
    ``slots`` trials (the trials a chunk runs at once) but the last: a chunk whose size is not
    a multiple of its slots ends with a round that keeps most of them idle, and a worker
    running several such chunks pays that tail once per chunk. The rounds are spread evenly,
    so the chunks differ by at most one round. ``chunk_size`` fixes the size instead.
    Pairs are lists (JSON-safe as flow parameters).

    >>> [len(c) for c in plan_chunks([f"t{i}" for i in range(500)], k=40, slots=16)][:3]
    [1264, 1264, 1248]
    >>> [len(c) for c in plan_chunks(["a", "b", "c"], k=2, slots=4)]
    [4, 2]
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise InvalidInput(f"slots must be an integer >= 1, got {slots!r}")
    pairs = [[t, i] for t in task_ids for i in range(k)]
    if chunk_size is None:
        rounds = math.ceil(len(pairs) / slots)
        n = max(1, min(DEFAULT_CHUNKS, rounds))
        bounds, at = [], 0
        for i in range(n):  # the first (rounds % n) chunks take one round more
            at += (rounds // n + (i < rounds % n)) * slots
            bounds.append(min(at, len(pairs)))
        return [pairs[a:b] for a, b in zip([0, *bounds], bounds) if b > a]
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInput(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return [pairs[i:i + chunk_size] for i in range(0, len(pairs), chunk_size)]


# --------------------------------------------------------------------------- trials in chunks

@shape()
class TrialRequest(JsonShape):
    """Everything the trials of one run are decided by, as the pipeline's trial tasks take it."""

    store: str
    """The store's URL (``Store(...).url``)."""
    run_id: str
    """The run the episodes are stored under."""
    tasks: SuiteRef
    """The run's tasks document."""
    agent: str
    """The agent's import path, ``"package.module:callable"``."""
    agent_id: Optional[str] = None
    """What identifies the agent, said by the caller (``--agent-id``): it replaces digesting
    the loaded agent's state (``agentid.agent_identity``)."""
    k: int = 1
    """Trials per task."""
    seed: Optional[int] = None
    """The base seed: trial i runs with seed + i."""
    run: dict = Field(default_factory=dict)
    """The run's provenance (``RunProvenance.to_dict()``), merged onto every episode."""
    chunk_size: Optional[int] = None
    """Trials per chunk (default: about :data:`DEFAULT_CHUNKS` chunks)."""
    max_concurrency: int = 8
    """Agent calls in flight at once in the whole run (divided among the chunks that run at
    once: ``parallel_chunks``)."""
    parallel_chunks: int = 1
    """How many chunks run at once (the task runner's workers): each chunk runs
    ``max_concurrency // parallel_chunks`` trials at once (at least 1), so the run never has
    more than ``max_concurrency`` agent calls in flight when ``parallel_chunks <=
    max_concurrency``."""
    timeout_s: Optional[float] = None
    """Seconds per trial attempt."""
    retries: int = 0
    """Retries of a transient agent error."""
    refresh: bool = False
    """Run every trial afresh: no cached episodes, the run's stored trials removed."""
    retry_errored: bool = False
    """Run again the trials that ended in an error (stored in this run, or in the cached
    episodes this run would otherwise reuse)."""
    check: Optional[str] = None
    """The checker the run's grade stage uses (None: the suite's). Each chunk grades the trials
    it stored with it (``records.trials.trial_grader``), so that the grade stage, in the same process,
    takes that work instead of grading 20,000 episodes after the last trial."""
    capture: Optional[str] = None
    """``"otel"``: each trial's OpenTelemetry spans give its episode's steps and per-call cost
    (``harness.run_trials(capture=...)``); part of the run's fingerprint when set."""
    flush_s: float = Field(FLUSH_S, gt=0, allow_inf_nan=False)
    """Seconds a finished trial waits, at most, before its segment is stored."""
    limits: Optional[RunLimits] = None
    """Trial limits, ``max_dollars``, provider retry budget (``limits.RunLimits``; None: defaults)."""


@shape()
class TrialChunk(JsonShape):
    """One chunk of a run's trials: one Prefect task run."""

    request: TrialRequest
    """The run's trial request."""
    index: int
    """The chunk's position in the plan."""
    pairs: tuple[tuple[str, int], ...]
    """The ``(task_id, trial)`` pairs it runs."""
    concurrency: Optional[int] = None
    """Trials at once in this chunk (None: the request's ``max_concurrency``)."""
    claimed: bool = False
    """Whether :func:`plan_trials` claimed the run (fingerprint checked, stored trials sorted)
    and left in ``pairs`` only trials not stored: the chunk then runs them without listing the
    run. False (a sequential batch): the chunk claims the run itself (``harness.run_trials``)."""


@shape()
class ChunkResult(JsonShape):
    """What one chunk ran and stored: each trial's file as written, so that the stages after
    the trials neither list nor re-read nor re-hash the run's folder."""

    index: int
    """The chunk's position in the plan."""
    trials: tuple[StoredTrial, ...] = ()
    """Its trials' stored files (key, sha256, bytes); empty for a chunk that claimed the run
    itself (the collect step reads those from the store)."""
    graded: tuple[Episode, ...] = ()
    """``trials`` graded as the run's grade stage grades them (``records.trials.trial_grader`` with the
    request's ``check``, on the writer threads as each trial is stored), in the same order;
    empty when they were not all graded here."""
    graded_data: tuple[str, ...] = ()
    """The canonical JSON of each of ``graded``."""


@shape()
class TrialPlan(JsonShape):
    """:func:`plan_trials`' answer: the cached episodes, or the chunks to run."""

    request: TrialRequest
    """The run's trial request."""
    digest: str
    """The episodes' input digest (everything that decides them)."""
    episodes: Optional[StageRef] = None
    """The episodes document when the same inputs ran before (then nothing runs)."""
    chunks: tuple[TrialChunk, ...] = ()
    """The chunks to run when nothing was cached (only the trials not already stored)."""
    reused: int = 0
    """Trials reused rather than run: all of them on a cache hit, else those already stored."""
    reused_from: Optional[str] = None
    """The run the reused trials came from."""


def request_fingerprint(request: TrialRequest) -> RunFingerprint:
    """The run's fingerprint: the agent's import path, code digest and declared configuration
    (``records.fingerprint.agent_config`` of the loaded agent), its identity (``agentid.agent_identity``:
    code and state, or ``request.agent_id``), the suite digest, k, seed, provenance and
    limits."""
    return run_fingerprint(load_agent(request.agent), name=request.agent,
                           code=code_digest(request.agent), suite=request.tasks.digest,
                           k=request.k, seed=request.seed, run=request.run,
                           capture=request.capture, timeout_s=request.timeout_s,
                           retries=request.retries, agent_id=request.agent_id,
                           limits=limits_provenance(request.limits))


def request_trials(request: TrialRequest, only: Optional[Sequence] = None,
            max_concurrency: Optional[int] = None, tasks: Optional[Mapping] = None) -> list:
    """``harness.run_trials`` of the request (``only`` its pairs); ``tasks``: the run's tasks
    document when the caller has read it already."""
    if tasks is None:
        tasks = Store(request.store).read_json(request.tasks.key)
    return run_trials(load_agent(request.agent), tasks_of(tasks), k=request.k,
                      seed=request.seed, run=RunProvenance.from_dict(request.run),
                      max_concurrency=max_concurrency or request.max_concurrency,
                      timeout_s=request.timeout_s,
                      retries=request.retries, store=Store(request.store), run_id=request.run_id,
                      only=only, progress=False, fingerprint=request_fingerprint(request),
                      capture=request.capture, flush_s=request.flush_s, limits=request.limits,
                      prices=catalog(request.limits))


def _identity(st: Store, request: TrialRequest) -> tuple[RunFingerprint, str, list, list]:
    """The run's fingerprint, its episodes' input digest, its task ids and its pairs."""
    fp = request_fingerprint(request)
    ids = [t["task_id"] for t in st.read_json(request.tasks.key)["tasks"]]
    return (fp, input_digest("episodes", fingerprint=fp.to_dict()), ids,
            [(t, i) for t in ids for i in range(request.k)])


def cached_plan(request: TrialRequest) -> Optional[TrialPlan]:
    """:func:`plan_trials` when the same inputs ran before (its episodes, reused: copied into
    the run as their verified bytes, never parsed); None when there is something to run
    (nothing cached, ``refresh``, or ``retry_errored``: then :func:`plan_trials` decides).
    :func:`plan_trials` asks this first: a cache hit claims and lists nothing."""
    if request.refresh or request.retry_errored:
        return None
    st = Store(request.store)
    return _cached_plan(st, request, _identity(st, request))


def _cached_plan(st: Store, request: TrialRequest, identity: tuple) -> Optional[TrialPlan]:
    _, digest, _, pairs = identity
    reused = stage_output(st, request.run_id, "episodes", digest)
    if reused is None:
        return None
    origin = cache_origin(st, "episodes", digest)
    return TrialPlan(request=request, digest=digest, reused=len(pairs), reused_from=origin,
                     episodes=_with_reuse(reused, len(pairs), origin))


def plan_trials(request: TrialRequest) -> TrialPlan:
    """The run's input digest, and either the cached episodes or the chunks to run.

    The digest is that of the run's fingerprint (:func:`request_fingerprint`): episodes are
    reused only from a run with the same agent, code, configuration, suite, k, seed,
    provenance and limits. ``refresh`` skips the cache; ``retry_errored`` reuses a cached
    run's successful trials and runs its errored ones again. The run's own stored trials go
    through ``records.fingerprint.claim_run`` (fingerprint checked, misfiled files removed).
    """
    st = Store(request.store)
    identity = fp, digest, ids, pairs = _identity(st, request)  # once: a cache hit asks first
    if not (request.refresh or request.retry_errored):
        hit = _cached_plan(st, request, identity)
        if hit is not None:
            return hit
    origin, found = None, None
    if request.retry_errored and not request.refresh:  # else a hit was served just above
        found = lookup(st, "episodes", digest)
        origin = cache_origin(st, "episodes", digest) if found is not None else None
        if found is not None and not any(e.get("meta", {}).get("error")
                                         for e in found[0]["episodes"]):
            reused = stage_output(st, request.run_id, "episodes", digest)
            if reused is not None:
                return TrialPlan(request=request, digest=digest, reused=len(pairs),
                                 reused_from=origin,
                                 episodes=_with_reuse(reused, len(pairs), origin))
    reuse, kept = claim_run(st, request.run_id, fp, pairs, refresh=request.refresh,
                            retry_errored=request.retry_errored)
    n_reused, source = reuse.kept, request.run_id
    if not request.refresh and found is not None and origin != request.run_id:
        seeded = _seed_run(st, request.run_id, found[0], skip=kept)  # retry errored of a
        n_reused, kept = n_reused + len(seeded), {**kept, **seeded}    # cached run: reuse
        source = origin if seeded else source                          # its successes
    todo = {p for p in pairs if p not in kept}
    chunks = [c for c in ([pr for pr in chunk if (pr[0], pr[1]) in todo]
                          for chunk in plan_chunks(ids, k=request.k, chunk_size=request.chunk_size,
                                                   slots=chunk_slots(request)))
              if c]
    per_chunk = chunk_concurrency(request, len(chunks))
    return TrialPlan(request=request, digest=digest, reused=n_reused, reused_from=source,
                     chunks=tuple(TrialChunk(request=request, index=i,
                                             pairs=tuple((t, n) for t, n in chunk),
                                             concurrency=per_chunk, claimed=True)
                                  for i, chunk in enumerate(chunks)))


def chunk_workers(max_workers: int, max_concurrency: int) -> int:
    """How many chunks to run at once: ``max_workers``, but never more than ``max_concurrency``
    (each chunk runs at least one trial at a time, and :func:`plan_trials` gives each its share
    of ``max_concurrency``: the run never has more than ``max_concurrency`` agent calls in
    flight). A bad value is left for the runner and the harness to refuse.

    >>> chunk_workers(4, 64), chunk_workers(4, 2)
    (4, 2)
    """
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
            or max_concurrency < 1:
        return max_workers
    return min(max_workers, max_concurrency)


def chunk_slots(request: TrialRequest) -> int:
    """Trials at once per chunk when ``parallel_chunks`` chunks run at once: the round size
    :func:`plan_chunks` sizes the default chunks by."""
    return chunk_concurrency(request, request.parallel_chunks)


def chunk_concurrency(request: TrialRequest, n_chunks: int) -> int:
    """Trials at once per chunk: the run's ``max_concurrency`` divided among the chunks that
    run at once (at least 1)."""
    return max(1, request.max_concurrency // max(1, min(request.parallel_chunks, n_chunks)))


def _with_reuse(ref: StageRef, reused: int, origin: Optional[str]) -> StageRef:
    return dataclasses.replace(ref, reused=reused, reused_from=origin)


def _seed_run(st: Store, run_id: str, cached_doc: Mapping, *, skip: Mapping) -> dict:
    """Copy a cached run's successful trials into ``run_id``'s segments (but those in ``skip``,
    already stored there); the copied ones, ``{(task_id, trial): Episode}``."""
    seeded, writer = {}, SegmentWriter(st, run_id)
    for ep in episodes_of(cached_doc):
        trial = ep.meta.get("trial")
        if errored(ep) or not isinstance(trial, int) or (ep.task_id, trial) in skip:
            continue
        writer.add((ep.task_id, trial), canonical_json(ep.to_dict()))
        seeded[(ep.task_id, trial)] = ep
    writer.flush()
    return seeded


def run_trial_chunk(chunk: TrialChunk, *, resume: bool = False) -> ChunkResult:
    """Run one chunk; what it stored.

    A chunk :func:`plan_trials` planned (``claimed``) runs its pairs with
    ``harness.store_trials``, listing nothing; ``resume`` (a retry of the chunk: an earlier
    attempt may have stored some of its trials) first reads its own pairs' files and runs only
    the missing ones. Any other chunk (a sequential batch) claims the run itself
    (``harness.run_trials(only=chunk.pairs)``: stored trials loaded, not re-run).
    """
    req = chunk.request
    if not chunk.claimed:
        request_trials(req, only=chunk.pairs, max_concurrency=chunk.concurrency)
        return ChunkResult(index=chunk.index)
    st = Store(req.store)
    pairs = [(t, n) for t, n in chunk.pairs]
    found = read_trials(st, req.run_id, pairs) if resume else {}
    tasks = tasks_of_chunk(st.read_json(req.tasks.key), (t for t, _ in pairs))
    grader, graded = trial_grader(tasks, req.check), {}

    def grade_one(trial: StoredTrial, episode: Optional[Episode] = None) -> None:
        # on the run's writer threads, as each is stored (from its episode when the harness
        # hands it over: a plain answer's, which is what parsing the bytes gives back)
        graded[(trial.task_id, trial.trial)] = grader(trial, episode)

    ran = store_trials(load_agent(req.agent), tasks_of(tasks),
                       [p for p in pairs if p not in found], k=req.k, store=st,
                       run_id=req.run_id, seed=req.seed, run=RunProvenance.from_dict(req.run),
                       max_concurrency=chunk.concurrency or req.max_concurrency,
                       timeout_s=req.timeout_s, retries=req.retries, on_stored=grade_one,
                       capture=req.capture, flush_s=req.flush_s, limits=req.limits, prices=catalog(req.limits))
    for trial in found.values():
        grade_one(trial)
    done = {**found, **{(t.task_id, t.trial): t for t in ran}}
    order = sorted(done)
    if any(graded.get(p) is None for p in order):  # not all graded here: the grade stage will
        return ChunkResult(index=chunk.index, trials=tuple(done[p] for p in order))
    return ChunkResult(index=chunk.index, trials=tuple(done[p] for p in order),
                       graded=tuple(graded[p][0] for p in order),
                       graded_data=tuple(graded[p][1] for p in order))


def collect_episodes(plan: TrialPlan, chunks: Sequence[ChunkResult] = ()) -> EpisodesRef:
    """The run's trials -> its episodes document, indexed under the run's input digest, with
    what was reused and every per-trial file's sha256 (for the manifest).

    The trials the chunks ran come from ``chunks`` as written (nothing is read back or
    re-hashed); only the others -- kept from an earlier attempt of the run -- are read from the
    store, each once. A trial found nowhere is run now (as ``harness.run_trials`` would)."""
    req = plan.request
    st = Store(req.store)
    suite = st.read_json(req.tasks.key)
    ids = sorted(t["task_id"] for t in suite["tasks"])
    wanted = [(t, i) for t in ids for i in range(req.k)]
    have = {(t.task_id, t.trial): t for c in chunks for t in c.trials}
    missing = [p for p in wanted if p not in have]
    if missing:
        have.update(read_trials(st, req.run_id, missing))
        missing = [p for p in wanted if p not in have]
    if missing and (req.limits is None or req.limits.max_dollars is None):  # else: refused by it
        ran = store_trials(load_agent(req.agent), tasks_of(suite), missing,
                           k=req.k, store=st, run_id=req.run_id, seed=req.seed,
                           run=RunProvenance.from_dict(req.run),
                           max_concurrency=req.max_concurrency, timeout_s=req.timeout_s,
                           retries=req.retries, capture=req.capture, flush_s=req.flush_s,
                           limits=req.limits, prices=catalog(req.limits))
        have.update({(t.task_id, t.trial): t for t in ran})
    trials = [have[p] for p in wanted if p in have]
    # stopped at max_dollars: the run's document, not the inputs' output (a resume runs the rest)
    ref = (write_doc(st, req.run_id, "episodes", episodes_bytes(trials)) if len(trials) < len(wanted)
           else index_output(st, req.run_id, "episodes", plan.digest, episodes_bytes(trials)))
    graded = {(t.task_id, t.trial): (g, d) for c in chunks
              for t, g, d in zip(c.trials, c.graded, c.graded_data)}
    if all(p in graded for p in wanted):  # every trial graded by its chunk: grade takes that
        remember_graded(ref.sha256, req.tasks.digest, req.check, (graded[p][0] for p in wanted),
                        (graded[p][1] for p in wanted))
    fields = {f.name: getattr(ref, f.name) for f in dataclasses.fields(ref)}
    return EpisodesRef(**{**fields, "reused": plan.reused, "reused_from": plan.reused_from},
                       trials={t.key: t.sha256 for t in trials})
