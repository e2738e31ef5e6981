"""The agent task-suite harness: k trials, per-slice cuts, and a gate that survives noise.

This module runs trials and nothing else: :func:`run_suite` = :func:`run_trials` (run the
agent, concurrently, seeded, fault-tolerant, optionally persisted and resumable) +
``reporting.build_report`` (grade -> metrics -> cost -> reliability), recorded through
:mod:`ek_agents.record` when persisted. The spec documents the report, baseline and gate
functions under this module too: they are re-exported from their homes
(``reporting.build_report``, ``record.save_agent_baseline`` / ``load_agent_baseline`` /
``agent_regression_gate``, ``gate.AgentGateResult``).

>>> from ek_agents.base import TaskSpec
>>> tasks = [TaskSpec("t1", input="hi", gold="HI"), TaskSpec("t2", input="yo", gold="YO")]
>>> def agent(task, *, seed):            # accepts `seed`: trial i gets seed + i
...     return task.input.upper() if seed % 2 == 0 else "?"
>>> eps = run_trials(agent, tasks, k=2, seed=10)
>>> [(e.task_id, e.meta["trial"], e.run.seed, e.output) for e in eps]
[('t1', 0, 10, 'HI'), ('t1', 1, 11, '?'), ('t2', 0, 10, 'YO'), ('t2', 1, 11, '?')]
>>> run_suite(agent, tasks, k=2, seed=10).success_rate
0.5

Fault handling: an agent that raises, or overruns ``timeout_s``, yields a failed episode
(``success=False``, ``meta["error"] = "<Type>: <message>"``, ``meta["error_kind"]`` =
``"exception"`` | ``"timeout"`` | ``"infrastructure"``); one bad trial never aborts the suite.
That holds for whatever the agent raises -- its own ``asyncio.CancelledError`` (HTTP clients
raise it), ``RecursionError``, ``SystemExit``, ``KeyboardInterrupt`` -- and for an answer that
cannot be stored (not JSON, or nested deeper than :data:`EPISODE_DEPTH`), the same whether the
run is persisted or not; only the harness's own cancellation (the caller cancelling the run)
cancels.
:class:`~ek_agents.errors.TransientAgentError` is retried up to ``retries`` times with
exponential backoff (``backoff_s * 2**i``); the retries are counted in ``Cost.retries`` (or in
``meta["retries"]`` when the agent reported no Cost -- an unknown cost stays unknown).
"""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import os
import queue
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, Optional, Union

from . import record
from .base import Episode, RunProvenance, TaskSpec, task_table
from .core import canonical_json, construct
from .errors import (AgentTimeout, IntegrityError, InvalidInput,
                     TransientAgentError)
from .gate import AgentGateResult as AgentGateResult
from .record import agent_regression_gate as agent_regression_gate
from .record import load_agent_baseline as load_agent_baseline
from .record import save_agent_baseline as save_agent_baseline
from .manifest import RunInputs
from .metrics import grade
from .parsing import MAX_DEPTH, check_tree
from .reporting import build_report as build_report
from .reporting import graded_report
from .segments import SegmentWriter
from .sequential import check_baseline_comparable, gate_document, sequential_gate
from .store import (Store, acquire_lease, episode_key, episodes_prefix, open_store,
                    release_lease, sha256_hex)

__all__ = ["run_suite", "run_trials", "store_trials", "build_report", "new_run_id", "trial_fingerprint",
           "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
           "AgentGateResult"]

Pair = tuple  # (task_id, trial)

#: Deepest episode a trial may produce: an episode sits two levels down in the run's episodes
#: document, which must stay readable (``parsing.MAX_DEPTH``). A deeper answer fails its trial.
EPISODE_DEPTH = MAX_DEPTH - 2

#: Most finished trials a segmented run's event loop keeps ahead of its segment writer, both
#: called and not yet handed over, and handed over and not yet taken: a killed process loses
#: the segment being stored, the one filling, at most twice this many and the trials in flight.
WRITER_BACKLOG = 512


def new_run_id() -> str:
    """A fresh, sortable run id: ``<UTC timestamp>-<8 hex>``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


# --------------------------------------------------------------------------- run_trials

def run_trials(agent: Callable, tasks: Any, *, k: int = 1, seed: Optional[int] = None,
               run: Optional[RunProvenance] = None, max_concurrency: int = 8,
               timeout_s: Optional[float] = None, retries: int = 0,
               store: Union[Store, str, None] = None, run_id: Optional[str] = None,
               only: Optional[Any] = None, backoff_s: float = 0.5,
               progress: Optional[bool] = None, refresh: bool = False,
               retry_errored: bool = False,
               fingerprint: Optional[record.RunFingerprint] = None,
               segments: bool = False) -> list[Episode]:
    """Run ``agent`` ``k`` times on every task; return the (ungraded) episodes.

    Episodes come back sorted by ``(task_id, trial)`` whatever order the trials finished in;
    ``episode.meta["trial"]`` is the trial index and ``episode.run.seed`` its seed
    (``seed + trial``; passed to the agent when it accepts a ``seed`` keyword or ``**kwargs``).

    - ``agent``: ``TaskSpec -> Episode | answer``, a plain or ``async def`` callable. Sync agents
      run on worker threads, async ones on the event loop; at most ``max_concurrency`` trials
      run at once.
    - ``timeout_s`` bounds each attempt (retries get a fresh budget). An async agent is
      cancelled; a sync one cannot be killed, so its thread is abandoned and its late result
      dropped -- a hung agent never stalls the suite.
    - ``run``: provenance merged onto each episode (fields set here win; empty ones are filled
      from the agent's own ``episode.run``).
    - ``store`` + ``run_id``: each episode is written as it finishes to
      ``store.episode_key(run_id, task, trial)``; trials already stored there are loaded,
      not re-run (so a killed run resumes without losing or duplicating anything). ``run_id``
      alone uses the default store; ``store`` alone is an error. A resume must be the same
      run: its fingerprint (``record.RunFingerprint``: agent, its code and declared
      ``ek_config``, suite, k, seed, provenance, timeout, retries; ``fingerprint`` overrides
      the one computed here) is stored at the first write, and a different one raises
      :class:`~ek_agents.errors.RunMismatch` naming the fields. A stored file that is not the
      trial its key names is run again, never kept (``record.claim_run``).
    - ``refresh``: run every trial afresh (stored trials are removed first); ``retry_errored``:
      run again only the stored trials that ended in an error.
    - ``only``: an optional set of ``(task_id, trial)`` pairs to run (a chunk of the run).
    - ``segments=True``: the finished trials are stored a segment of a few thousand at a
      time (``ek_agents.segments``: JSON Lines, zstd, content-addressed, indexed per writer),
      not one file each; a trial counts as stored once its segment is indexed, so a killed
      run loses at most its unflushed segment. The default writes one file per trial at
      ``store.episode_key`` (both layouts are read back, resumed and audited).
    - ``progress``: a rich progress bar (default: when stderr is a terminal).
    """
    return _trials_with_reuse(agent, tasks, k=k, seed=seed, run=run,
                              max_concurrency=max_concurrency, timeout_s=timeout_s,
                              retries=retries, store=store, run_id=run_id, only=only,
                              backoff_s=backoff_s, progress=progress, refresh=refresh,
                              retry_errored=retry_errored, fingerprint=fingerprint,
                              segments=segments)[0]


def _trials_with_reuse(agent: Callable, tasks: Any, *, k: int, seed: Optional[int],
                       run: Optional[RunProvenance], max_concurrency: int,
                       timeout_s: Optional[float], retries: int, store: Any,
                       run_id: Optional[str], only: Any, backoff_s: float,
                       progress: Optional[bool], refresh: bool, retry_errored: bool,
                       fingerprint: Optional[record.RunFingerprint], segments: bool = False
                       ) -> tuple[list[Episode], Optional[record.RunReuse]]:
    specs = task_table(tasks)
    _check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s)
    wanted = _wanted_pairs(specs, k, only)
    st: Optional[Store] = None
    if store is not None or run_id is not None:
        if run_id is None:
            raise InvalidInput("run_trials: persisting to a store needs a run_id "
                               "(e.g. harness.new_run_id()); pass run_id=...")
        Store.validate_name(run_id, what="run id")
        st = open_store(store)
    done: dict = {}
    reuse = None
    if st is not None:
        fp = fingerprint or trial_fingerprint(agent, specs, k=k, seed=seed, run=run,
                                              timeout_s=timeout_s, retries=retries)
        reuse, done = record.claim_run(st, run_id, fp, wanted, refresh=refresh,
                                       retry_errored=retry_errored)
    todo = [p for p in wanted if p not in done]
    ran: dict = {}
    if todo:
        show = sys.stderr.isatty() if progress is None else bool(progress)
        runner = _Runner(agent, specs, seed=seed, run=run, max_concurrency=max_concurrency,
                         timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                         store=st, run_id=run_id, segments=segments)
        ran = _run_coroutine(lambda: runner.run_all(todo, total=len(wanted), already=len(done),
                                                    show=show))
    merged = {**done, **ran}
    return [merged[p] for p in wanted], reuse


def store_trials(agent: Callable, tasks: Any, pairs: Any, *, k: int, store: Store, run_id: str,
                 seed: Optional[int] = None, run: Optional[RunProvenance] = None,
                 max_concurrency: int = 8, timeout_s: Optional[float] = None, retries: int = 0,
                 backoff_s: float = 0.5,
                 on_stored: Optional[Callable[[record.StoredTrial, Optional[Episode]], Any]] = None,
                 segments: bool = False, summarize: Optional[Callable] = None,
                 keep: bool = True, writer: Optional[str] = None) -> list[record.StoredTrial]:
    """Run exactly ``pairs`` (``(task_id, trial)``) of a run already claimed with
    ``record.claim_run`` -- its fingerprint checked, these trials not stored -- and store each
    as it finishes, as :func:`run_trials` does; return each stored file (key, sha256 and
    bytes as written), in ``(task_id, trial)`` order.

    Nothing is listed or read back: a run's chunks take this after the run was planned once
    (``pipeline_support.plan_trials``), so that no chunk lists the run's stored trials.
    ``on_stored(stored, episode)`` is called with each trial once its file is stored, on the
    writer thread that stored it (off the event loop: the chunks grade their trials there);
    ``episode`` is the episode its bytes parse back to when the harness built it from a plain
    answer (``record.PlainEpisodeJson``), else None (parse ``stored.data``). What it raises
    fails the run as a failed write does. ``segments``: as :func:`run_trials` (then a
    stored trial's ``key`` and ``sha256`` are its segment's, ``on_stored`` is called as each
    segment is indexed); ``summarize(pairs, lines, episodes)``: a segment's summary, stored
    in its index entry (``segments.SegmentWriter``). ``keep=False`` keeps neither the episodes
    nor the stored trials in memory (a large chunk: returns ``[]``; ``on_stored`` still sees each);
    ``writer``: the segment writer's name (default a fresh one).
    """
    specs = task_table(tasks)
    _check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s)
    Store.validate_name(run_id, what="run id")
    todo = _wanted_pairs(specs, k, pairs)
    if not todo:
        return []
    runner = _Runner(agent, specs, seed=seed, run=run, max_concurrency=max_concurrency,
                     timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                     store=store, run_id=run_id, on_stored=on_stored, segments=segments,
                     summarize=summarize, keep=keep, writer=writer)
    _run_coroutine(lambda: runner.run_all(todo, total=len(todo), already=0, show=False))
    return [runner.written[p] for p in todo] if keep else []


def trial_fingerprint(agent: Callable, tasks: Any, *, k: int, seed: Optional[int],
                      run: Optional[RunProvenance], timeout_s: Optional[float],
                      retries: int) -> record.RunFingerprint:
    """The fingerprint of a library run of ``agent`` (a callable) over ``tasks``: its
    ``module:qualname``, the digest of its source file plus its own source (two lambdas of
    one file differ), its declared ``ek_config``, the tasks' digest and the run's settings."""
    code = record.code_digest(agent)
    try:
        own = inspect.getsource(agent if inspect.isfunction(agent) or inspect.ismethod(agent)
                                else type(agent))
    except (TypeError, OSError):
        own = ""
    prov = {} if run is None else {f: v for f, v in run.to_dict().items() if f != "schema_version"}
    return record.RunFingerprint(
        agent=record.agent_name(agent),
        agent_code=None if code is None and not own else
        sha256_hex(f"{code}\n{own}".encode("utf-8", "surrogatepass")),
        agent_config=record.agent_config(agent), suite=record.tasks_doc(tasks)["digest"],
        k=k, seed=seed, run=prov, timeout_s=timeout_s, retries=retries)


def _check_params(agent: Any, *, k: Any, seed: Any, max_concurrency: Any, timeout_s: Any,
                  retries: Any, run: Any, backoff_s: Any) -> None:
    if not callable(agent):
        raise InvalidInput(f"agent must be callable (TaskSpec -> Episode or answer), got {agent!r:.80}; "
                           "wrap a plain function with as_agent(fn)")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an int >= 1 (trials per task), got {k!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise InvalidInput(f"seed must be an int or None, got {seed!r}")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise InvalidInput(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
    if timeout_s is not None and not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
        raise InvalidInput(f"timeout_s must be a positive number of seconds or None, got {timeout_s!r}")
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise InvalidInput(f"retries must be an int >= 0, got {retries!r}")
    if not (isinstance(backoff_s, (int, float)) and backoff_s >= 0):
        raise InvalidInput(f"backoff_s must be a number >= 0, got {backoff_s!r}")
    if run is not None and not isinstance(run, RunProvenance):
        raise InvalidInput(f"run must be a RunProvenance or None, got {run!r:.80}")


def _wanted_pairs(specs: Mapping[str, TaskSpec], k: int, only: Any) -> list[Pair]:
    if only is None:
        return [(tid, i) for tid in sorted(specs) for i in range(k)]
    # each pair checked against the suite and k directly: a chunk of a 20,000-trial run does
    # not build the run's every pair (0.04 s per chunk, on the GIL the other chunks' loops need)
    trials = range(k)
    chosen = set()
    for p in only:
        try:
            pair = (p[0], p[1])
        except (TypeError, IndexError, KeyError):
            raise InvalidInput(f"only: each item must be a (task_id, trial) pair, got {p!r}") from None
        if pair[0] not in specs or pair[1] not in trials:
            why = (f"task {pair[0]!r} is not in the suite" if pair[0] not in specs
                   else f"trial must be in 0..{k - 1} (k={k})")
            raise InvalidInput(f"only: {pair!r} is not a trial of this run: {why}")
        chosen.add(pair)
    return sorted(chosen)


def _run_coroutine(factory: Callable[[], Any]) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    # called from inside an event loop (a notebook, an async flow): use a loop of our own
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ek-harness") as ex:
        return ex.submit(lambda: asyncio.run(factory())).result()


def _is_async(agent: Any) -> bool:
    return inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(
        getattr(agent, "__call__", None))


def _accepts_seed(agent: Any) -> bool:
    try:
        params = inspect.signature(agent).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind == p.VAR_KEYWORD or (p.name == "seed" and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
               for p in params)


class _Runner:
    """One run's trial loop (kept in an object so the async pieces share their settings)."""

    def __init__(self, agent: Callable, specs: Mapping[str, TaskSpec], *, seed: Optional[int],
                 run: Optional[RunProvenance], max_concurrency: int, timeout_s: Optional[float],
                 retries: int, backoff_s: float, store: Optional[Store], run_id: Optional[str],
                 on_stored: Optional[Callable[[record.StoredTrial, Optional[Episode]], Any]] = None,
                 segments: bool = False, summarize: Optional[Callable] = None, keep: bool = True,
                 writer: Optional[str] = None):
        self.agent, self.specs, self.seed, self.run = agent, specs, seed, run
        self.on_stored = on_stored
        self.max_concurrency, self.timeout_s = max_concurrency, timeout_s
        self.retries, self.backoff_s = retries, backoff_s
        self.store, self.run_id = store, run_id
        self.segments, self.summarize, self.keep = segments, summarize, keep
        self.writer_name = writer
        self.unbuilt = 0  # segments: trials called whose episode is not handed to the writer yet
        self.written: dict = {}  # pair -> record.StoredTrial, as each trial is stored
        self.writer: Optional[_Writer] = None  # run_all's, when the run is stored
        self.is_async = _is_async(agent)
        self.pass_seed = _accepts_seed(agent)
        self.merged: dict = {}  # trial seed -> the run's provenance with it (frozen: shared)
        self.plain_json = record.PlainEpisodeJson()  # a plain answer's episode bytes, cheaply

    def merged_run(self, trial_seed: Optional[int]) -> RunProvenance:
        """``_merge_run(self.run, None, trial_seed)``, built once per trial seed."""
        got = self.merged.get(trial_seed)
        if got is None:
            got = self.merged[trial_seed] = _merge_run(self.run, None, trial_seed)
        return got

    async def run_all(self, todo: list[Pair], *, total: int, already: int, show: bool) -> dict:
        self.sem = asyncio.Semaphore(self.max_concurrency)
        results: dict = {}
        bar = _progress(show, total, already)
        writer = None
        try:
            async with asyncio.TaskGroup() as tg:
                if self.store is not None:
                    segs = (SegmentWriter(self.store, self.run_id, summarize=self.summarize,
                                          writer=self.writer_name)
                            if self.segments else None)
                    writer = self.writer = _Writer(self.store, self.run_id, self.written,
                                                   _abort_on(tg, asyncio.get_running_loop()),
                                                   threads=1 if segs else _writer_threads(
                                                       self.store, self.max_concurrency),
                                                   then=self.on_stored, segments=segs,
                                                   keep=self.keep)
                # one task per slot, each running its next trial as soon as its agent call
                # returns (no task per trial waiting on a semaphore: that hand-over took one
                # more event-loop turn -- under the GIL of a busy process ~1 ms -- per trial)
                pending = iter(todo)
                for _ in range(min(self.max_concurrency, len(todo))):
                    tg.create_task(self._slot(pending, tg, results, bar))
        except BaseExceptionGroup as group:  # a store failure: surface it, not the group
            raise group.exceptions[0] from None
        finally:
            if writer is not None:
                writer.close()  # every trial handed over is stored (or the first failure kept)
            if bar is not None:
                bar[0].stop()
        if writer is not None and writer.error is not None:  # failed after the last trial
            raise writer.error
        return results

    async def _slot(self, pending: Any, tg: asyncio.TaskGroup, results: dict, bar: Any) -> None:
        """One of the run's ``max_concurrency`` slots: the trials of ``pending``, one after
        another. A finished trial's episode and bytes are built by a task of its own, which
        runs once this slot's next agent call has started: that CPU overlaps the call's wait
        instead of delaying it (measured: x1.18 -> x1.1 of ideal at 64 in flight)."""
        for pair in pending:
            answer = await self._trial(self.specs[pair[0]], pair[1])
            tg.create_task(self._one(pair, answer, results, bar))
            if self.segments and self.store is not None:
                # segments: agent calls never run far ahead of storage (an agent that answers
                # without awaiting never yields, so a slot would call its every trial before
                # one is stored; a killed process loses what is called and not stored)
                self.unbuilt += 1
                while self.unbuilt > WRITER_BACKLOG:
                    await asyncio.sleep(0.001)

    async def _one(self, pair: Pair, answer: Union[Episode, "_Answer"], results: dict,
                   bar: Any) -> None:
        ep, plain = self._episode(self.specs[pair[0]], pair[1], answer)
        # a plain answer's episode: its bytes assembled directly (the same bytes; scalars
        # only, so no depth to check), and it is what parsing them gives back
        data = self.plain_json(ep) if plain else None
        handed = ep if data is not None else None
        if data is None:
            ep, data = self._storable(ep, pair)
        if self.store is not None:
            while self.writer.backlog() > WRITER_BACKLOG:  # segments: the loop never runs far
                await asyncio.sleep(0.002)  # ahead of the writer (a kill loses what is queued)
            self.writer.put(pair, data, handed)
            if self.segments:
                self.unbuilt -= 1
        if self.keep:
            results[pair] = ep
        if bar is not None:
            bar[0].advance(bar[1])

    def _storable(self, ep: Episode, pair: Pair) -> tuple[Episode, bytes]:
        """The episode and its stored bytes; an answer that cannot be stored (not JSON, nested
        deeper than :data:`EPISODE_DEPTH`) fails the trial -- persisted or not, so a plain run
        grades exactly what a persisted one would read back."""
        try:
            doc = ep.to_dict()
            check_tree(doc, where="episode", max_depth=EPISODE_DEPTH, surrogates=False)
            return ep, canonical_json(doc)
        except (InvalidInput, ValueError, TypeError, RecursionError) as exc:
            why = str(exc) if not isinstance(exc, RecursionError) else "nested too deeply"
            ep = _failed(self.specs[pair[0]], pair[1], ep.run, ep.meta.get("attempts", 1),
                         InvalidInput(f"the agent's answer cannot be stored as JSON ({why:.300}); "
                                      "return plain dicts, lists, strings, numbers, booleans and "
                                      f"None, nested at most {EPISODE_DEPTH} levels"),
                         "exception", retries=ep.meta.get("retries", 0))
            return ep, canonical_json(ep.to_dict())

    async def _trial(self, task: TaskSpec, trial: int) -> Union[Episode, "_Answer"]:
        """Run the trial's agent call (its retries and timeout): the failed trial's episode,
        or the agent's answer (:meth:`_episode` builds its episode)."""
        trial_seed = None if self.seed is None else self.seed + trial
        kwargs = {"seed": trial_seed} if self.pass_seed and trial_seed is not None else {}
        attempts = transient = 0

        def failed(exc: BaseException, kind: str) -> Episode:  # provenance built only here
            return _failed(task, trial, self.merged_run(trial_seed), attempts, exc, kind,
                           transient)

        async with self.sem:
            t0 = time.perf_counter()
            while True:
                attempts += 1
                try:
                    result = await self._attempt(task, kwargs)
                    break
                except TransientAgentError as exc:
                    if transient >= self.retries:
                        return failed(exc, "infrastructure")
                    await asyncio.sleep(self.backoff_s * 2 ** transient)
                    transient += 1
                except AgentTimeout as exc:
                    return failed(exc, "timeout")
                except asyncio.CancelledError as exc:
                    if _cancelling():  # the harness's own cancellation: the run is stopping
                        raise
                    # the agent's own CancelledError (an HTTP client's, say): a failed trial
                    return failed(exc, "exception")
                except BaseException as exc:  # noqa: BLE001 -- one bad trial never aborts the
                    # suite, whatever it raised (RecursionError, SystemExit, KeyboardInterrupt)
                    return failed(exc, "exception")
            elapsed = time.perf_counter() - t0
        return _Answer(result, attempts, transient, elapsed)

    def _episode(self, task: TaskSpec, trial: int, answer: Union[Episode, "_Answer"]
                 ) -> tuple[Episode, bool]:
        """The trial's episode, and whether it is the harness's own episode of a plain answer
        (else the agent's own episode, or a failed trial)."""
        if isinstance(answer, Episode):  # a failed trial
            return answer, False
        result, attempts, transient, elapsed = answer
        trial_seed = None if self.seed is None else self.seed + trial
        if not isinstance(result, Episode):  # a plain answer: its episode built once, from
            # values made here (``output`` is typed Any: validation keeps it as is)
            return construct(Episode, task_id=task.task_id, output=result,
                             run=self.merged_run(trial_seed),
                             meta={"trial": trial, "attempts": attempts, "latency_s": elapsed,
                                   **({"retries": transient} if transient else {})}), True
        return _finish(result, task, trial, self.run, trial_seed, attempts, transient,
                       elapsed), False

    async def _attempt(self, task: TaskSpec, kwargs: dict) -> Any:
        limit = self.timeout_s
        t0 = time.perf_counter()
        try:
            if self.is_async:
                return _raised(await asyncio.wait_for(_contained(self.agent(task, **kwargs)), limit))
            fut = _in_thread(asyncio.get_running_loop(), lambda: self.agent(task, **kwargs))
            result = await asyncio.wait_for(fut, limit)
            if inspect.isawaitable(result):  # a sync callable that returned a coroutine
                left = None if limit is None else max(limit - (time.perf_counter() - t0), 1e-3)
                result = _raised(await asyncio.wait_for(_contained(result), left))
            return result
        except TimeoutError:
            raise AgentTimeout(f"trial exceeded timeout_s={limit}") from None


class _Answer(NamedTuple):
    """An agent call's answer and how it went; the trial's episode is built from it later."""

    result: Any
    attempts: int
    transient: int
    elapsed: float


class _Writer:
    """A run's trial files, stored as the trials finish by writer threads of its own.

    The event loop hands each finished trial's bytes over with one queue put (no future, no
    wake-up of the loop per write: a thread hop per trial cost ~0.1 ms of the loop's CPU) and
    goes on with the next trial; ``written`` gets each trial's :class:`record.StoredTrial`
    once its file is in the store (and ``then`` is called with it). The first failed write is kept in ``error`` and reported
    once with ``on_error`` (the run then stops); later trials are not written. A trial
    handed over but not yet written when the process dies is simply not stored: a resume
    runs it again, as it would a trial still in flight.
    """

    def __init__(self, store: Store, run_id: str, written: dict,
                 on_error: Callable[[BaseException], None], *, threads: int,
                 then: Optional[Callable[[record.StoredTrial, Optional[Episode]], Any]] = None,
                 segments: Optional[SegmentWriter] = None, keep: bool = True) -> None:
        self.store, self.run_id, self.written, self.on_error = store, run_id, written, on_error
        self.then = then
        self.segments = segments  # one thread then: the segment buffer is that thread's
        self.keep = keep  # False: the stored trials are handed to ``then`` only, not kept
        if segments is not None:  # a sealed segment is stored by a thread of its own while
            # the next one fills; one at a time (a kill loses at most the two)
            self.sealed: queue.SimpleQueue = queue.SimpleQueue()
            self.one_sealed = threading.Semaphore(1)
            self.flusher = threading.Thread(target=self._flush_loop, daemon=True,
                                            name="ek-segment-flusher")
            self.flusher.start()
        self.error: Optional[BaseException] = None
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._loop, daemon=True, name="ek-store-writer")
                        for _ in range(threads)]
        for t in self.threads:
            t.start()

    def put(self, pair: Pair, data: bytes, episode: Optional[Episode] = None) -> None:
        """Store ``data`` as trial ``pair``'s file (on a writer thread, soon); ``episode``:
        the episode ``data`` parses back to, when the caller knows it (handed to ``then``)."""
        self.queue.put((pair, data, episode))

    def backlog(self) -> int:
        """Trials handed over and not yet taken by a segment writer (0 without segments: the
        per-trial writers are not throttled)."""
        return self.queue.qsize() if self.segments is not None else 0

    def close(self) -> None:
        """Wait until every trial handed over is written (or skipped after a failure)."""
        for _ in self.threads:
            self.queue.put(None)
        for t in self.threads:
            t.join()

    def _loop(self) -> None:
        if self.segments is not None:
            return self._segment_loop()
        while (item := self.queue.get()) is not None:
            if self.error is not None:
                continue
            (task_id, trial), data, episode = item
            key = episode_key(self.run_id, task_id, trial)
            try:
                sha = self.store.write_bytes(key, data)
                # every field is a str/int made here: not validated again (0.3 s per 20,000
                # trials on the GIL the event loops need); any other pair goes through the class
                make = construct if type(task_id) is str and type(trial) is int else _stored
                stored = self.written[(task_id, trial)] = make(
                    record.StoredTrial, task_id=task_id, trial=trial, key=key, sha256=sha,
                    data=data.decode("ascii"))
                if self.then is not None:
                    self.then(stored, episode)
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                if self.error is None:
                    self.error = exc
                    self.on_error(exc)


    def _segment_loop(self) -> None:
        """:meth:`_loop` of a segmented run: each trial buffered, each full segment stored
        and indexed (``segments.SegmentWriter``), the rest at the end -- when the run is
        cancelled too (``close`` is called from ``run_all``'s ``finally``)."""
        while True:
            item = self.queue.get()
            if self.error is not None:
                if item is None:
                    return
                continue
            try:
                if item is None:
                    self._hand(self.segments.seal())
                    self._hand(None)
                    self.flusher.join()
                    return
                pair, data, episode = item
                self.segments.put(pair, data, episode)
                if self.segments.full():
                    self._hand(self.segments.seal())
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                if self.error is None:
                    self.error = exc
                    self.on_error(exc)
                if item is None:
                    self.sealed.put(None)
                    self.flusher.join()
                    return

    def _hand(self, sealed: Any) -> None:
        """Hand a sealed segment (None: the end) to the flusher, once the one before is stored."""
        if sealed is None:
            self.sealed.put(None)
            return
        self.one_sealed.acquire()
        self.sealed.put(sealed)

    def _flush_loop(self) -> None:
        while (sealed := self.sealed.get()) is not None:
            try:
                if self.error is None:
                    self._stored_segment(self.segments.store_sealed(sealed), sealed.episodes)
            except BaseException as exc:  # noqa: BLE001 -- handed to the run, which stops
                if self.error is None:
                    self.error = exc
                    self.on_error(exc)
            finally:
                self.one_sealed.release()

    def _stored_segment(self, trials: list, episodes: dict) -> None:
        if not self.keep and self.then is None:
            return
        for (task_id, trial), key, sha, data in trials:
            make = construct if type(task_id) is str and type(trial) is int else _stored
            stored = make(record.StoredTrial, task_id=task_id, trial=trial, key=key, sha256=sha,
                          data=data.decode("ascii"))
            if self.keep:
                self.written[(task_id, trial)] = stored
            if self.then is not None:
                self.then(stored, episodes.get((task_id, trial)))


def _stored(cls: type, **fields: Any) -> Any:
    return cls(**fields)


def _writer_threads(store: Store, max_concurrency: int) -> int:
    """Writer threads for a run's trial files: one or two for a local disk (a write is ~0.1 ms
    of CPU and an fsync), as many as asyncio's default executor has for a remote store (a
    PUT waits on the network), never more than trials in flight."""
    per_store = 2 if store.local else min(32, (os.cpu_count() or 1) + 4)
    return max(1, min(per_store, max_concurrency))


def _abort_on(tg: asyncio.TaskGroup, loop: asyncio.AbstractEventLoop
              ) -> Callable[[BaseException], None]:
    """A callback for another thread: fail the task group ``tg`` (running on ``loop``) with
    ``exc``, so that its trials are cancelled and ``exc`` is what the run raises. Once the
    group has finished (every trial done, writes still pending) the caller raises it itself."""

    async def fail(exc: BaseException) -> None:
        raise exc

    def abort(exc: BaseException) -> None:
        failing = fail(exc)
        try:
            tg.create_task(failing)
        except RuntimeError:  # finished or already shutting down: the run reports the error
            failing.close()

    def from_thread(exc: BaseException) -> None:
        try:
            loop.call_soon_threadsafe(abort, exc)
        except RuntimeError:  # the loop is closed: the run is over, close() reports it
            pass

    return from_thread


def _cancelling() -> bool:
    """Whether the running task is being cancelled (by the harness's caller), as opposed to
    an agent raising ``CancelledError`` on its own."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class _Escaped:
    """A ``SystemExit`` / ``KeyboardInterrupt`` an agent's coroutine raised, carried as a value:
    raised inside a task asyncio would let it escape the event loop and end the whole run."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


async def _contained(awaitable: Any) -> Any:
    try:
        return await awaitable
    except (SystemExit, KeyboardInterrupt) as exc:
        return _Escaped(exc)


def _raised(result: Any) -> Any:
    """:func:`_contained`'s answer: the result, or the escape re-raised here (in the trial's
    own frame, where :meth:`_Runner._trial` turns it into a failed trial)."""
    if isinstance(result, _Escaped):
        raise result.exc
    return result


def _in_thread(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> asyncio.Future:
    """Run ``fn`` on a daemon thread of its own; its result lands in an asyncio future.

    A thread per trial (the semaphore bounds how many run at once) rather than a fixed pool:
    a sync agent that overruns its timeout cannot be killed, and a hung one must not hold a
    pool worker forever -- it is abandoned (daemon: it never blocks interpreter exit) and the
    suite goes on.
    """
    fut = loop.create_future()

    def settle(result: Any, exc: Optional[BaseException]) -> None:
        if fut.done():  # timed out and cancelled meanwhile: drop the late result
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    def target() -> None:
        try:
            result, exc = fn(), None
        except BaseException as e:  # noqa: BLE001 -- handed to the awaiting trial
            result, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, result, exc)
        except RuntimeError:  # the run (and its loop) finished while this thread overran
            pass

    threading.Thread(target=target, daemon=True, name="ek-trial").start()
    return fut


def _merge_run(run: Optional[RunProvenance], own: Optional[RunProvenance],
               trial_seed: Optional[int]) -> RunProvenance:
    base = run or RunProvenance()
    if own is None:
        return dataclasses.replace(base, seed=trial_seed if trial_seed is not None else base.seed)
    fields = {}
    for f in ("temperature", "model", "simulator", "suite_version", "scaffold"):
        mine = getattr(base, f)
        fields[f] = mine if mine not in (None, "") else getattr(own, f)
    seed = trial_seed if trial_seed is not None else (base.seed if base.seed is not None else own.seed)
    return RunProvenance(seed=seed, **fields)


def _finish(result: Any, task: TaskSpec, trial: int, run: Optional[RunProvenance],
            trial_seed: Optional[int], attempts: int, transient: int, elapsed: float) -> Episode:
    ep = result if isinstance(result, Episode) else Episode(task.task_id, output=result)
    meta = dict(ep.meta)
    if ep.task_id and ep.task_id != task.task_id:
        meta["agent_task_id"] = ep.task_id
    meta.update(trial=trial, attempts=attempts, latency_s=elapsed)
    cost = ep.cost
    if cost is not None:
        cost = dataclasses.replace(cost, retries=cost.retries + transient,
                                   latency_s=elapsed if cost.latency_s is None else cost.latency_s)
    elif transient:
        meta["retries"] = transient
    return ep.replace(task_id=task.task_id, run=_merge_run(run, ep.run, trial_seed), cost=cost,
                      meta=meta)


def _failed(task: TaskSpec, trial: int, run: Optional[RunProvenance], attempts: int,
            exc: BaseException, kind: str, retries: int = 0) -> Episode:
    said = str(exc) or "(no message; raised by the agent)"
    meta: dict = {"error": f"{type(exc).__name__}: {said}", "error_kind": kind, "trial": trial,
                  "attempts": attempts}
    if retries:
        meta["retries"] = retries
    return Episode(task.task_id, success=False, run=run, meta=meta)


def _progress(show: bool, total: int, already: int) -> Any:
    if not show:
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("trials"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    tid = bar.add_task("trials", total=total, completed=already)
    bar.start()
    return bar, tid


# --------------------------------------------------------------------------- run_suite

def run_suite(agent: Callable, tasks: Any, *, k: int = 1, check: Any = None,
              metrics: Optional[Mapping[str, Any]] = None, price: Any = None,
              prices: Optional[Mapping] = None, run: Optional[RunProvenance] = None,
              seed: Optional[int] = None, persist: bool = False, run_id: Optional[str] = None,
              rootdir: Union[Store, str, None] = None, max_concurrency: int = 8,
              timeout_s: Optional[float] = None, retries: int = 0, backoff_s: float = 0.5,
              progress: Optional[bool] = None, baseline: Any = None,
              sequential: bool = False, refresh: bool = False, retry_errored: bool = False,
              lease_wait_s: float = 0.0, break_lease: bool = False,
              segments: bool = False) -> Any:
    """Run ``agent`` over a task suite, ``k`` trials per task, and report reliability + cost.

    :func:`run_trials` then :func:`build_report` (see both for the parameters). Persistence:
    ``persist=True`` (or a ``run_id``) stores every episode as it finishes under ``rootdir``
    (any :class:`~ek_agents.store.Store` URL; default ``EK_STORE`` or ``./.ek``); without a
    ``run_id`` one is generated and reported in ``report.detail["run_id"]`` -- pass it back to
    resume a killed run. At the end the run is recorded as the pipeline records one: its
    stage documents (``tasks``, ``episodes``, ``graded``, ``metrics``, ``report``, ``prices``
    when ``prices`` is given, at ``store.run_key(run_id, name)``) and its manifest
    (``record.record_run``: every artifact and per-trial episode
    with its sha256), so ``ek-agents report / gate / audit / promote`` work on it. An input a
    run cannot store -- a callable ``check``, custom ``metrics``, a single ``price`` -- is
    recorded as such in the manifest's inputs, and the audit says which figures it cannot
    recompute. ``segments=True`` stores the trials in segments (see :func:`run_trials`).

    Identity and reuse: a persisted run is one writer's (a lease on the run id, held while it
    writes: a second writer gets :class:`~ek_agents.errors.RunInUse` naming the holder, or
    waits ``lease_wait_s`` seconds; ``break_lease=True`` removes a dead writer's lease) and one
    fingerprint's (see :func:`run_trials`: a resume with another agent, configuration, suite,
    k, seed, provenance or limits raises :class:`~ek_agents.errors.RunMismatch`).
    ``refresh=True`` runs every trial afresh; ``retry_errored=True`` re-runs only the stored
    trials that ended in an error. ``report.detail["reused"]`` and the manifest's
    ``stages["episodes"]`` say how many trials were reused, and from which run.

    ``sequential=True`` with ``baseline=`` (a name in the store at ``rootdir``, a saved
    baseline dict, or a report) runs the trials batch by batch (trial j of every task) and
    stops calling the agent once the sequential gate has decided
    (:mod:`ek_agents.sequential`); the report covers the trials that ran and records the
    verdict -- stopped early or not, why, and how many trials it cost -- in
    ``report.detail["sequential"]``. With ``persist``/``run_id`` each trial is stored as it
    finishes and the run is recorded like any other; its gate document and manifest
    (``RunManifest.sequential``) say whether it stopped early, why, and the trials it cost,
    and ``ek-agents audit`` / ``gate`` replay the looks from the stored episodes.
    """
    if sequential or baseline is not None:
        return _sequential_suite(agent, tasks, baseline=baseline, sequential=sequential, k=k,
                                 check=check, metrics=metrics, price=price, prices=prices,
                                 run=run, seed=seed, persisting=persist or run_id is not None,
                                 run_id=run_id, rootdir=rootdir, max_concurrency=max_concurrency,
                                 timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                                 progress=progress)
    persisting = persist or run_id is not None
    st = open_store(rootdir) if persisting else None
    if persisting and run_id is None:
        run_id = new_run_id()
    specs = task_table(tasks)
    if st is None:
        episodes = run_trials(agent, specs, k=k, seed=seed, run=run,
                              max_concurrency=max_concurrency, timeout_s=timeout_s,
                              retries=retries, backoff_s=backoff_s, progress=progress)
        return graded_report(episodes, specs, k=k, check=check, metrics=metrics, price=price,
                             prices=prices, seed=0 if seed is None else seed, run=run)[2]
    tasks_doc = record.tasks_doc(tasks)  # unstorable tasks fail now
    lease = acquire_lease(st, run_id, wait_s=lease_wait_s, force=break_lease)
    try:
        return _persisted_suite(agent, specs, tasks_doc, st=st, run_id=run_id, k=k, check=check,
                                metrics=metrics, price=price, prices=prices, run=run, seed=seed,
                                max_concurrency=max_concurrency, timeout_s=timeout_s,
                                retries=retries, backoff_s=backoff_s, progress=progress,
                                refresh=refresh, retry_errored=retry_errored, segments=segments)
    finally:
        release_lease(st, lease)


def _persisted_suite(agent: Callable, specs: Mapping[str, TaskSpec], tasks_doc: dict, *,
                     st: Store, run_id: str, k: int, check: Any, metrics: Optional[Mapping],
                     price: Any, prices: Optional[Mapping], run: Optional[RunProvenance],
                     seed: Optional[int], max_concurrency: int, timeout_s: Optional[float],
                     retries: int, backoff_s: float, progress: Optional[bool], refresh: bool,
                     retry_errored: bool, segments: bool = False) -> Any:
    """:func:`run_suite` of a persisted run, under the run's lease."""
    episodes, reuse = _trials_with_reuse(
        agent, specs, k=k, seed=seed, run=run, max_concurrency=max_concurrency,
        timeout_s=timeout_s, retries=retries, store=st, run_id=run_id, only=None,
        backoff_s=backoff_s, progress=progress, refresh=refresh, retry_errored=retry_errored,
        fingerprint=None, segments=segments)
    graded, reliability, report = graded_report(
        episodes, specs, k=k, check=check, metrics=metrics, price=price, prices=prices,
        seed=0 if seed is None else seed, run=run)
    _record(st, run_id, agent, tasks_doc, episodes, (graded, reliability, report), k=k,
            check=check, metrics=metrics, price=price, prices=prices, run=run, seed=seed,
            runner={"max_concurrency": max_concurrency, "timeout_s": timeout_s,
                    "retries": retries, "backoff_s": backoff_s, "refresh": refresh,
                    "retry_errored": retry_errored}, reuse=reuse)
    reused = {"episodes": reuse.kept, "from_run": run_id, **reuse.to_dict()}
    reused.pop("schema_version", None)
    return dataclasses.replace(report, detail={**report.detail, "run_id": run_id, "store": st.url,
                                               "reused": reused})


def _record(st: Store, run_id: str, agent: Callable, tasks_doc: Mapping, episodes: list,
            scored: tuple, *, k: int, check: Any, metrics: Optional[Mapping], price: Any,
            prices: Optional[Mapping], run: Optional[RunProvenance], seed: Optional[int],
            runner: Mapping, gate: Optional[record.GateRef] = None,
            reuse: Optional[record.RunReuse] = None) -> None:
    """Record a persisted ``run_suite`` run as the pipeline records one: its stage documents
    and its manifest (``record.record_run``); ``gate`` a verdict already written
    (``record.write_gate``: the sequential gate's); ``reuse`` what the run kept of its stored
    trials (recorded on the episodes stage)."""
    graded, reliability, report = scored
    ep_ref = record.write_doc(st, run_id, "episodes", record.episodes_doc(episodes))
    if reuse is not None:
        ep_ref = dataclasses.replace(ep_ref, reused=reuse.kept, reused_from=run_id)
    refs = {"tasks": record.write_tasks(st, run_id, tasks_doc),
            "prices": None if prices is None else record.write_doc(st, run_id, "prices",
                                                                   record.prices_doc(prices)),
            "episodes": ep_ref,
            "graded": record.write_doc(st, run_id, "graded", record.episodes_doc(graded)),
            "metrics": record.write_doc(st, run_id, "metrics", reliability.to_dict()),
            "report": record.write_doc(st, run_id, "report", report.to_dict()),
            "gate": gate}
    inputs = RunInputs(k=k, seed=seed, run=None if run is None else run.to_dict(),
                       check=check if check is None or isinstance(check, str) else record.UNSTORED,
                       price=None if price is None else record.UNSTORED,
                       metrics=tuple(sorted(metrics or ())))
    record.record_run(st, run_id, refs=refs, inputs=inputs,  # agent: its import path when it has one
                      agent=record.agent_name(agent),
                      parameters={"k": k, "seed": seed, **runner,
                                  **({"sequential": True} if gate is not None else {})},
                      orchestrator={"orchestrator": "ek_agents.harness.run_suite"})


def _sequential_suite(agent: Callable, tasks: Any, *, baseline: Any, sequential: bool, k: int,
                      check: Any, metrics: Optional[Mapping], price: Any, prices: Optional[Mapping],
                      run: Optional[RunProvenance], seed: Optional[int], persisting: bool,
                      run_id: Optional[str], rootdir: Any, **runner: Any) -> Any:
    """``run_suite(..., baseline=..., sequential=True)``: the sequential gate drives
    :func:`run_trials` one batch at a time; the report of the trials that ran carries the
    verdict in ``detail["sequential"]``. Persisted, each trial is stored as it finishes and
    the run is recorded as a fixed-design one is (:func:`_record`), its gate document being the
    sequential verdict (``sequential.gate_document``) and the baseline it used."""
    if not sequential or baseline is None:
        raise InvalidInput("run_suite: baseline= and sequential=True go together (a sequential "
                           "gate against that baseline); for the fixed-design gate run the suite "
                           "and call agent_regression_gate(report, baseline)")
    name = baseline if isinstance(baseline, str) else None
    if isinstance(baseline, str):
        doc = load_agent_baseline(baseline, rootdir=rootdir)
        if doc is None:
            raise InvalidInput(f"run_suite: no baseline named {baseline!r} in the store; save one "
                               f"with save_agent_baseline(report, {baseline!r})")
        baseline = doc
    base_doc = baseline if isinstance(baseline, Mapping) else baseline.to_dict()
    check_baseline_comparable(run, base_doc)
    if isinstance(baseline, Mapping) and "report" in baseline:
        baseline = baseline["report"]
    specs = task_table(tasks)
    st = open_store(rootdir) if persisting else None
    if persisting and run_id is None:
        run_id = new_run_id()
    tasks_doc = record.tasks_doc(tasks) if st is not None else None  # unstorable tasks fail now
    ran: list = []

    def run_batch(pairs: list) -> list:
        eps = run_trials(agent, specs, k=k, seed=seed, run=run, only=pairs, store=st,
                         run_id=run_id, **runner)
        ran.extend(eps)
        return grade(eps, specs, check=check)

    graded, verdict = sequential_gate(run_batch, list(specs), k=k, baseline=baseline,
                                      success=lambda ep: bool(ep.success),
                                      priced=price is not None or prices is not None)
    scored = graded_report(graded, specs, k=k, check=check, metrics=metrics, price=price,
                           prices=prices, seed=0 if seed is None else seed, run=run)
    report = scored[2]
    detail = {**report.detail, "sequential": verdict.to_dict()}
    if st is not None:
        if "kind" not in base_doc:  # a report given as the baseline: record it as one
            base_doc = record.baseline_document(base_doc, name or "baseline")
        gate = record.write_gate(st, run_id, base_doc, gate_document(verdict, name))
        _record(st, run_id, agent, tasks_doc, ran, scored, k=k, check=check, metrics=metrics,
                price=price, prices=prices, run=run, seed=seed, runner=runner, gate=gate)
        detail.update(run_id=run_id, store=st.url)
    return dataclasses.replace(report, detail=detail)
