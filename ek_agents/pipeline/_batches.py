"""A sequentially gated run's batches: batch j is trial j of every task, run through the same
chunks as a run's trials; after each batch the gate looks; the run stops once it has decided
(``ek_agents.sequential``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from ..errors import InvalidInput
from ..records.baselines import load_baseline
from ..records.documents import episodes_doc, tasks_of
from ..records.stagecache import StageRef, write_doc
from ..scoring.metrics import grade
from ..sequential import (DEFAULT_MIN_EFFECT, baseline_task_counts, check_baseline_comparable,
                          per_check_alpha, sequential_look)
from ..store import Store
from ..records.fingerprint import claim_run
from .chunks import (TrialChunk, TrialRequest, chunk_concurrency, chunk_slots, plan_chunks,
                     request_fingerprint, request_trials)

__all__ = ["plan_batch", "batch_look", "collect_batches"]


def _batch_pairs(tasks: Mapping, batches: int) -> list:
    """The pairs of the first ``batches`` batches of a run with the tasks document ``tasks``."""
    ids = [t["task_id"] for t in tasks["tasks"]]
    return [(t, j) for j in range(batches) for t in ids]


def _tasks_doc(request: TrialRequest) -> Mapping:
    return Store(request.store).read_json(request.tasks.key)


def plan_batch(request: TrialRequest, batch: int) -> tuple[TrialChunk, ...]:
    """The chunks of batch ``batch`` (0-based) of a sequential run: trial ``batch`` of every
    task not stored yet, split as :func:`plan_chunks` splits a run (``request.chunk_size``).

    The run is claimed here, once for the batch (``records.fingerprint.claim_run``: the
    fingerprint checked, misfiled trials set aside, segments no index names removed), and the
    chunks are planned as claimed: chunks that run side by side never claim the run
    themselves, where one's claim would remove the segment another has stored and not yet
    indexed."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch < request.k:
        raise InvalidInput(f"plan_batch: batch must be in 0..{request.k - 1} (k={request.k}), "
                           f"got {batch!r}")
    st = Store(request.store)
    ids = [t for t, _ in _batch_pairs(_tasks_doc(request), 1)]
    _, kept = claim_run(st, request.run_id, request_fingerprint(request),
                        [(t, batch) for t in ids], retry_errored=request.retry_errored)
    todo = [t for t in ids if (t, batch) not in kept]
    chunks = [c for c in plan_chunks(todo, k=1, chunk_size=request.chunk_size,
                                     slots=chunk_slots(request)) if c]
    return tuple(TrialChunk(request=request, index=batch * len(ids) + i,
                            pairs=tuple((t, batch) for t, _ in pairs),
                            concurrency=chunk_concurrency(request, len(chunks)), claimed=True)
                 for i, pairs in enumerate(chunks))


def batch_look(request: TrialRequest, baseline: str, look: int, *, check: Optional[str] = None,
               tolerance: float = 0.0, priced: bool = False) -> dict:
    """The sequential gate's look after batch ``look`` (1-based): the stored trials
    ``0..look-1`` of every task (loaded; none is run), graded as the run's grade stage grades
    them, against the named baseline's per-task counts (``sequential.sequential_look``, at
    ``sequential.per_check_alpha(k, priced)``). Its ``decision`` is ``"regression"``,
    ``"pass"`` or ``"continue"``."""
    st = Store(request.store)
    doc = load_baseline(st, baseline)
    check_baseline_comparable(request.run, doc)
    base = baseline_task_counts(doc.get("report") or {})
    tasks = st.read_json(request.tasks.key)
    graded = grade(request_trials(request, only=_batch_pairs(tasks, look), tasks=tasks),
                   tasks_of(tasks),
                   check=check if check is not None else tasks.get("checker"))
    counts: dict = {}
    for ep in graded:
        c, n = counts.get(str(ep.task_id), (0, 0))
        counts[str(ep.task_id)] = (c + bool(ep.success), n + 1)
    return sequential_look(counts, base, look=look, n_looks=request.k,
                           alpha=per_check_alpha(request.k, priced), tolerance=tolerance,
                           min_effect=DEFAULT_MIN_EFFECT)


def collect_batches(request: TrialRequest, batches: int) -> StageRef:
    """The stored trials of the first ``batches`` batches -> the run's episodes document. Not
    indexed in the stage cache: which trials ran depends on the baseline, so a later run with
    the same inputs must not take these for its full set."""
    tasks = _tasks_doc(request)
    episodes = request_trials(request, only=_batch_pairs(tasks, batches), tasks=tasks)
    return write_doc(Store(request.store), request.run_id, "episodes", episodes_doc(episodes))
