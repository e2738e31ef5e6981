"""What only the pipeline needs: agent import paths, trial chunk plans, exit codes.

The Prefect tasks in ``tasks/`` and the ``ek-agents`` CLI share these; the library itself never
needs them (a library user passes a callable, not an import path). They live in ``ek_agents``
rather than beside the flows because the CLI refuses a bad request (:func:`check_request`) and
maps a verdict to its exit code (:func:`raise_for_verdict`) without importing Prefect.

>>> plan_chunks(["a", "b", "c"], k=2, chunk_size=4)
[[['a', 0], ['a', 1], ['b', 0], ['b', 1]], [['c', 0], ['c', 1]]]
"""
from __future__ import annotations

import importlib
import inspect
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from pydantic import Field

from . import errors
from .base import JsonShape, RunProvenance
from .core import shape
from .errors import InvalidInput, did_you_mean
from .harness import run_trials
from .manifest import input_digest
from .metrics import grade
from .record import (SOURCES, StageRef, SuiteRef, episodes_doc, load_baseline, stage_output,
                     tasks_of, write_doc)
from .sequential import (DEFAULT_MIN_EFFECT, baseline_task_counts, check_baseline_comparable,
                         per_check_alpha, sequential_look)
from .store import Store, sha256_hex

__all__ = ["check_request", "load_agent", "agent_fingerprint", "plan_chunks", "raise_for_verdict",
           "DEFAULT_CHUNKS", "TrialRequest", "TrialChunk", "TrialPlan", "plan_trials",
           "run_trial_chunk", "collect_episodes", "plan_batch", "batch_look", "collect_batches"]

#: A run's trials are split into about this many chunks (one Prefect task run each).
DEFAULT_CHUNKS = 16


def check_request(*, suite: Optional[str], agent: Optional[str], ingest: Optional[str],
                  ingest_path: Optional[str], sequential: bool = False,
                  baseline: Optional[str] = None) -> None:
    """Refuse an evaluation that names neither (or both) of its sources, or a sequential gate
    without a baseline or on an ingested run, before anything runs."""
    if sequential and (not baseline or ingest is not None or ingest_path is not None):
        raise InvalidInput(f"sequential=True gates an agent's trials against a baseline as they "
                           f"run (baseline={baseline!r}, ingest={ingest!r}): give a baseline "
                           "name (--baseline NAME) and a suite + agent, not a recorded run")
    if ingest is None and ingest_path is None:
        if not suite or not agent:
            raise InvalidInput("an evaluation needs a suite and an agent (--suite PATH --agent "
                               "module:callable), or a recorded run to ingest (ingest KIND PATH)")
        load_agent(agent)  # a bad import path fails here, not in a worker
        return
    if agent:
        raise InvalidInput("give an agent to run or a recorded run to ingest, not both")
    if ingest not in SOURCES or not ingest_path:
        raise InvalidInput(f"ingest needs a kind (one of {sorted(SOURCES)}) and a path; got "
                           f"kind {ingest!r}, path {ingest_path!r}"
                           f"{did_you_mean(str(ingest), SOURCES) if ingest else ''}")



def load_agent(path: str) -> Callable[..., Any]:
    """Import ``"package.module:callable"`` (``"module:obj.attr"`` works too).

    >>> load_agent("os.path:basename")("/a/b")
    'b'
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise InvalidInput(f"agent {path!r} is not an import path: write 'package.module:callable'")
    mod_name, attr = path.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the working directory is importable
    try:
        obj: Any = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        raise InvalidInput(f"agent {path!r}: cannot import module {mod_name!r} ({exc}); "
                           "check the spelling and that it is on PYTHONPATH") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise InvalidInput(f"agent {path!r}: {mod_name} has no attribute {part!r}"
                               f"{did_you_mean(part, names)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidInput(f"agent {path!r} is a {type(obj).__name__}, not a callable")
    return obj


def agent_fingerprint(path: str) -> Optional[str]:
    """sha256 of the source file that defines the agent (None when it has none).

    It goes into the run-trials input digest, so editing the agent's code invalidates the
    cached episodes even when its import path stays the same.
    """
    try:
        src = inspect.getsourcefile(importlib.import_module(path.split(":")[0]))
        with open(src, "rb") as fh:  # type: ignore[arg-type]
            return sha256_hex(fh.read())
    except (TypeError, OSError, ImportError):
        return None


def plan_chunks(task_ids: Sequence[str], *, k: int, chunk_size: Optional[int] = None) -> list[list[list]]:
    """Split the ``(task_id, trial)`` pairs of a run into chunks, one Prefect task run each.

    Default size: about :data:`DEFAULT_CHUNKS` chunks, so 2000 trials are 16 task runs of 125.
    Pairs are lists (JSON-safe as flow parameters).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    pairs = [[t, i] for t in task_ids for i in range(k)]
    if chunk_size is None:
        chunk_size = max(1, math.ceil(len(pairs) / DEFAULT_CHUNKS))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInput(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return [pairs[i:i + chunk_size] for i in range(0, len(pairs), chunk_size)]



def raise_for_verdict(verdict: Optional[Mapping]) -> None:
    """Raise what a recorded gate verdict means: the refusal's own error (IncomparableRuns,
    BaselineError), :class:`~ek_agents.errors.GateFailed` listing the reasons, or nothing."""
    if not verdict or verdict.get("passed"):
        return
    name = verdict.get("baseline")
    if verdict.get("refused"):
        cls = getattr(errors, str(verdict.get("error")), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.InvalidInput) else errors.BaselineError
        raise cls(f"gate refused baseline {name!r}: {verdict['refused']}")
    raise errors.GateFailed(f"gate failed against baseline {name!r}: "
                            + "; ".join(verdict.get("reasons") or ["(no reason recorded)"]))


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
    k: int = 1
    """Trials per task."""
    seed: Optional[int] = None
    """The base seed: trial i runs with seed + i."""
    run: dict = Field(default_factory=dict)
    """The run's provenance (``RunProvenance.to_dict()``), merged onto every episode."""
    chunk_size: Optional[int] = None
    """Trials per chunk (default: about :data:`DEFAULT_CHUNKS` chunks)."""
    max_concurrency: int = 8
    """Trials at once within a chunk."""
    timeout_s: Optional[float] = None
    """Seconds per trial attempt."""
    retries: int = 0
    """Retries of a transient agent error."""


@shape()
class TrialChunk(JsonShape):
    """One chunk of a run's trials: one Prefect task run."""

    request: TrialRequest
    """The run's trial request."""
    index: int
    """The chunk's position in the plan."""
    pairs: tuple[tuple[str, int], ...]
    """The ``(task_id, trial)`` pairs it runs."""


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
    """The chunks to run when nothing was cached."""


def _trials(request: TrialRequest, only: Optional[Sequence] = None) -> list:
    return run_trials(load_agent(request.agent),
                      tasks_of(Store(request.store).read_json(request.tasks.key)), k=request.k,
                      seed=request.seed, run=RunProvenance.from_dict(request.run),
                      max_concurrency=request.max_concurrency, timeout_s=request.timeout_s,
                      retries=request.retries, store=Store(request.store), run_id=request.run_id,
                      only=only, progress=False)


def plan_trials(request: TrialRequest) -> TrialPlan:
    """The run's input digest, and either the cached episodes or the chunks to run."""
    st = Store(request.store)
    digest = input_digest("episodes", suite=request.tasks.digest, agent=request.agent,
                          agent_code=agent_fingerprint(request.agent), k=request.k,
                          seed=request.seed, run=request.run, timeout_s=request.timeout_s,
                          retries=request.retries)
    reused = stage_output(st, request.run_id, "episodes", digest)  # a cache hit, or None
    if reused is not None:
        return TrialPlan(request=request, digest=digest, episodes=reused)
    ids = [t["task_id"] for t in st.read_json(request.tasks.key)["tasks"]]
    chunks = plan_chunks(ids, k=request.k, chunk_size=request.chunk_size)
    return TrialPlan(request=request, digest=digest, chunks=tuple(
        TrialChunk(request=request, index=i, pairs=tuple((t, n) for t, n in pairs))
        for i, pairs in enumerate(chunks)))


def run_trial_chunk(chunk: TrialChunk) -> int:
    """``harness.run_trials(only=chunk.pairs)``: run (or resume) one chunk; its episode count."""
    return len(_trials(chunk.request, only=chunk.pairs))


def collect_episodes(plan: TrialPlan) -> StageRef:
    """Every stored trial of the run (``harness.run_trials`` loads them all, runs none) -> the
    run's episodes document, indexed under the run's input digest."""
    episodes = _trials(plan.request)
    return stage_output(Store(plan.request.store), plan.request.run_id, "episodes", plan.digest,
                        lambda: episodes_doc(episodes))


# --------------------------------------------------------------------------- sequential batches
# A sequentially gated run (``evaluate_agent(sequential=True)``): batch j is trial j of every
# task, run through the same chunks; after each batch the gate looks; the run stops once it
# has decided (``ek_agents.sequential``).

def _batch_pairs(request: TrialRequest, batches: int) -> list:
    ids = [t["task_id"] for t in Store(request.store).read_json(request.tasks.key)["tasks"]]
    return [(t, j) for j in range(batches) for t in ids]


def plan_batch(request: TrialRequest, batch: int) -> tuple[TrialChunk, ...]:
    """The chunks of batch ``batch`` (0-based) of a sequential run: trial ``batch`` of every
    task, split as :func:`plan_chunks` splits a run (``request.chunk_size``)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or not 0 <= batch < request.k:
        raise InvalidInput(f"plan_batch: batch must be in 0..{request.k - 1} (k={request.k}), "
                           f"got {batch!r}")
    ids = [t for t, _ in _batch_pairs(request, 1)]
    chunks = plan_chunks(ids, k=1, chunk_size=request.chunk_size)
    return tuple(TrialChunk(request=request, index=batch * len(chunks) + i,
                            pairs=tuple((t, batch) for t, _ in pairs))
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
    graded = grade(_trials(request, only=_batch_pairs(request, look)), tasks_of(tasks),
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
    episodes = _trials(request, only=_batch_pairs(request, batches))
    return write_doc(Store(request.store), request.run_id, "episodes", episodes_doc(episodes))
