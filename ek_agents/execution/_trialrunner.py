"""The trial runner under :func:`ek_agents.execution.harness.run_trials`: one event loop running the
agent's trials concurrently (bounded, seeded, each under its timeout, transient errors retried
with backoff), containing whatever a trial raises as a failed episode, and handing finished
trials to writer threads that store them in segments as they finish.

A sync agent with no timeout and no capture runs on ``max_concurrency`` slot threads, each
calling the agent for one trial after another and building its episode there: one thread hop
per slot, not per trial (a thread started per call, and the hop back to the loop, cost
~0.2 ms a trial). With a timeout each call gets a thread of its own, which is abandoned when
it overruns.
"""
from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import threading
import time
from collections.abc import Mapping
from typing import Any, Callable, NamedTuple, Optional, Union

from ..records import trials as stored_trials
from .otelcapture import OtelCapture
from .providers import classify, classify_spans
from .trialpolicy import TrialPolicy
from ..base import Episode, RunProvenance, TaskSpec
from ..core import canonical_json, construct
from ..errors import AgentTimeout, InvalidInput, TransientAgentError
from ..parsing import MAX_DEPTH, check_tree
from ..store import Store
from ..records.segments import FLUSH_S, Pair, SegmentWriter, check_flush_s
from ._otelthreads import HarnessThread
from ._trialwriter import WRITER_BACKLOG, TrialWriter, abort_on

__all__ = ["TrialRunner", "EPISODE_DEPTH"]


#: Deepest episode a trial may produce: an episode sits two levels down in the run's episodes
#: document, which must stay readable (``parsing.MAX_DEPTH``). A deeper answer fails its trial.
EPISODE_DEPTH = MAX_DEPTH - 2

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


class TrialRunner:
    """One run's trial loop (kept in an object so the async pieces share their settings)."""

    def __init__(self, agent: Callable, specs: Mapping[str, TaskSpec], *, seed: Optional[int],
                 run: Optional[RunProvenance], max_concurrency: int, timeout_s: Optional[float],
                 retries: int, backoff_s: float, store: Optional[Store], run_id: Optional[str],
                 on_stored: Optional[Callable[[stored_trials.StoredTrial, Optional[Episode]], Any]] = None,
                 summarize: Optional[Callable] = None, keep: bool = True,
                 writer: Optional[str] = None, capture: Optional[OtelCapture] = None,
                 flush_s: float = FLUSH_S, policy: Optional[TrialPolicy] = None):
        self.agent, self.specs, self.seed, self.run = agent, specs, seed, run
        # provider errors, endpoint limits, trial limits, the dollar cap (trialpolicy)
        self.policy = policy or TrialPolicy(None, max_concurrency=max_concurrency, seed=seed)
        self.capture = capture  # otelcapture.OtelCapture: each trial's spans, or None
        self.on_stored = on_stored
        self.max_concurrency, self.timeout_s = max_concurrency, timeout_s
        self.retries, self.backoff_s = retries, backoff_s
        self.store, self.run_id = store, run_id
        self.summarize, self.keep = summarize, keep
        self.flush_s = check_flush_s(flush_s)
        self.writer_name = writer
        self.unbuilt = 0  # trials called whose episode is not handed to the writer yet
        self.built: Optional[asyncio.Event] = None  # set while unbuilt is low
        # slot threads (a sync agent without timeout, capture, trial limits or a dollar cap:
        # those are watched on the loop): the trials they take, and the flag that stops them
        # when the run ends early. A provider error on a slot thread sends that trial through
        # the policy on the loop (its retries with backoff, the endpoint's limiter).
        self.threaded = (not _is_async(agent) and timeout_s is None and capture is None
                         and not self.policy.limits.per_trial and self.policy.budget is None)
        self.pending_lock, self.stop = threading.Lock(), threading.Event()
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.written: dict = {}  # pair -> records.trials.StoredTrial, as each trial is stored
        self.writer: Optional[TrialWriter] = None  # run_all's, when the run is stored
        self.is_async = _is_async(agent)
        self.pass_seed = _accepts_seed(agent)
        self.merged: dict = {}  # trial seed -> the run's provenance with it (frozen: shared)
        self.plain_json = stored_trials.PlainEpisodeJson()  # a plain answer's episode bytes, cheaply

    def merged_run(self, trial_seed: Optional[int]) -> RunProvenance:
        """``_merge_run(self.run, None, trial_seed)``, built once per trial seed."""
        got = self.merged.get(trial_seed)
        if got is None:  # setdefault: two slot threads building it at once share the first
            got = self.merged.setdefault(trial_seed, _merge_run(self.run, None, trial_seed))
        return got

    async def run_all(self, todo: list[Pair], *, total: int, already: int, show: bool) -> dict:
        self.sem = asyncio.Semaphore(self.max_concurrency)
        self.built = asyncio.Event()
        self.built.set()
        results: dict = {}
        bar = _progress(show, total, already)
        writer = None
        self.loop = asyncio.get_running_loop()
        try:
            async with asyncio.TaskGroup() as tg:
                if self.store is not None:
                    segs = SegmentWriter(self.store, self.run_id, summarize=self.summarize,
                                         writer=self.writer_name, max_age_s=self.flush_s)
                    writer = self.writer = TrialWriter(segs, self.written,
                                                       abort_on(tg, self.loop),
                                                       then=self.on_stored, keep=self.keep)
                # one task per slot, each running its next trial as soon as its agent call
                # returns (no task per trial waiting on a semaphore: that hand-over took one
                # more event-loop turn -- under the GIL of a busy process ~1 ms -- per trial)
                pending = iter(todo)
                for _ in range(min(self.max_concurrency, len(todo))):
                    tg.create_task(self._on_thread(pending, results, bar) if self.threaded
                                   else self._slot(pending, tg, results, bar))
        except BaseExceptionGroup as group:  # a store failure: surface it, not the group
            raise group.exceptions[0] from None
        finally:
            self.stop.set()  # slot threads take no further trial
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
            if not await self.policy.may_start(pair):  # the run's dollar cap: not run, not
                continue  # stored (a resume runs it)
            answer = await self._trial(self.specs[pair[0]], pair[1])
            tg.create_task(self._one(pair, answer, results, bar))
            if self.store is not None:
                # agent calls never run far ahead of storage (an agent that answers
                # without awaiting never yields, so a slot would call its every trial before
                # one is stored; a killed process loses what is called and not stored)
                self.unbuilt += 1
                if self.unbuilt > WRITER_BACKLOG:  # woken by _one at half (no polling: it
                    self.built.clear()  # took the GIL the writer threads need, measured x2-x6)
                    await self.built.wait()

    async def _one(self, pair: Pair, answer: Union[Episode, "_Answer"], results: dict,
                   bar: Any) -> None:
        ep, data, handed = self._built(pair, answer, self.plain_json)
        if self.store is not None:
            if self.writer.backlog() > WRITER_BACKLOG:  # the loop never runs far ahead of
                await asyncio.shield(self.writer.room())  # the writer (a kill loses what is
            self.writer.put(pair, data, handed)  # queued)
            self.unbuilt -= 1
            if self.unbuilt <= WRITER_BACKLOG // 2:
                self.built.set()
        self._done(pair, ep, results, bar)

    def _built(self, pair: Pair, answer: Union[Episode, "_Answer"],
               plain_json: stored_trials.PlainEpisodeJson
               ) -> tuple[Episode, bytes, Optional[Episode]]:
        """The trial's episode, its stored bytes, and the episode to hand the writer with them
        (a plain answer's: its bytes assembled directly -- the same bytes; scalars only, so no
        depth to check -- and it is what parsing them gives back; else None)."""
        ep, plain = self._episode(self.specs[pair[0]], pair[1], answer)
        self.policy.finished(ep)
        data = plain_json(ep) if plain else None
        if data is not None:
            return ep, data, ep
        ep, data = self._storable(ep, pair)
        return ep, data, None

    def _done(self, pair: Pair, ep: Episode, results: dict, bar: Any) -> None:
        if self.keep:
            results[pair] = ep
        if bar is not None:
            bar[0].advance(bar[1])

    async def _on_thread(self, pending: Any, results: dict, bar: Any) -> None:
        await _in_thread(self.loop, lambda: self._thread_slot(pending, results, bar))

    def _thread_slot(self, pending: Any, results: dict, bar: Any) -> None:
        """One of the run's ``max_concurrency`` slots as a thread (a sync agent, no timeout,
        no capture): the trials of ``pending``, one after another, each called, built and handed
        to the writer here -- what :meth:`_slot` and :meth:`_one` do on the loop, the same
        episode and bytes -- until none is left, the writer has failed or the run stops."""
        plain_json = stored_trials.PlainEpisodeJson()  # this thread's own
        writer = self.writer
        while not self.stop.is_set() and (writer is None or writer.error is None):
            with self.pending_lock:
                pair = next(pending, None)
            if pair is None:
                return
            answer = self._called(self.specs[pair[0]], pair[1])
            if isinstance(answer, Episode) and answer.meta.get("error_kind") == "provider":
                self.policy.retried += 1  # this attempt was the provider's: retried as policy says
                answer = asyncio.run_coroutine_threadsafe(
                    self.policy.trial(self, self.specs[pair[0]], pair[1]), self.loop).result()
            ep, data, handed = self._built(pair, answer, plain_json)
            if writer is not None:
                if writer.backlog() > WRITER_BACKLOG:  # never far ahead of the writer
                    writer.wait_room()
                writer.put(pair, data, handed)
            self._done(pair, ep, results, bar)

    def _called(self, task: TaskSpec, trial: int) -> Union[Episode, "_Answer"]:
        """:meth:`_attempts` on a slot thread: the agent called here (each call in a copy of
        the slot's context, as a thread of its own would run it), a transient error retried
        after ``time.sleep``; an awaitable it returns is awaited on the run's loop."""
        trial_seed = None if self.seed is None else self.seed + trial
        kwargs = {"seed": trial_seed} if self.pass_seed and trial_seed is not None else {}
        attempts = transient = 0

        def failed(exc: BaseException, kind: str) -> Episode:
            return _failed(task, trial, self.merged_run(trial_seed), attempts, exc, kind,
                           transient)

        t0 = time.perf_counter()
        while True:
            attempts += 1
            try:
                result = contextvars.copy_context().run(self.agent, task, **kwargs)
                if inspect.isawaitable(result):  # a sync callable that returned a coroutine
                    result = _raised(asyncio.run_coroutine_threadsafe(
                        _contained(result), self.loop).result())
                break
            except TransientAgentError as exc:
                if transient >= self.retries:
                    return failed(exc, "infrastructure")
                time.sleep(self.backoff_s * 2 ** transient)
                transient += 1
            except AgentTimeout as exc:
                return failed(exc, "timeout")
            except BaseException as exc:  # noqa: BLE001 -- one bad trial never aborts the
                return failed(exc, "exception")  # suite, whatever it raised
        return _Answer(result, attempts, transient, time.perf_counter() - t0)

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
        """Run the trial under the run's :class:`~ek_agents.execution.trialpolicy.TrialPolicy`
        (provider errors retried, endpoint limits, trial limits): :meth:`_trial_once` per
        attempt."""
        return await self.policy.trial(self, task, trial)

    async def _trial_once(self, task: TaskSpec, trial: int, budget: Any = None
                          ) -> Union[Episode, "_Answer"]:
        """Run the trial's agent call (its retries and timeout): the failed trial's episode,
        or the agent's answer (:meth:`_episode` builds its episode). With a capture, the
        attempts run under the trial's span and its spans come with the answer (a failed
        trial's episode gets their steps and cost at once); ``budget`` (a
        ``limits.TrialBudget``) watches them live and cancels an async trial over a limit."""
        if self.capture is None:
            return await self._attempts(task, trial)
        trial_seed = None if self.seed is None else self.seed + trial
        with self.capture.trial(task.task_id, trial, trial_seed) as got:
            got.watch = budget
            try:
                answer = await self._attempts(task, trial)
            except asyncio.CancelledError:
                if budget is None or budget.exceeded is None:
                    raise
                asyncio.current_task().uncancel()  # our own cancel: the trial passed a limit
                answer = _failed(task, trial, self.merged_run(trial_seed), 1,
                                 RuntimeError(f"the trial passed its {budget.exceeded} limit"),
                                 "limit", meta=budget.meta())
            if isinstance(answer, _Answer):
                got.record_output(answer.result)
        await self.capture.settle(got)  # its spans still open: waited for, a short grace
        if isinstance(answer, Episode):  # failed: what it spent is spent
            if answer.meta.get("error_kind") == "exception":  # a model call's span may say
                fault = classify_spans(got.spans)  # it was the provider's
                if fault is not None:
                    answer = answer.replace(meta={**answer.meta, "error_kind": "provider",
                                                  "provider": _fault_meta(fault)})
            return self.capture.episode(answer, got.spans, agent_episode=False, failed=True,
                                        sampled=got.sampled, trial=got)
        return answer._replace(spans=got)

    def limit_failed(self, task: TaskSpec, trial: int, answer: "_Answer", meta: dict) -> Episode:
        """The failed episode of a trial that returned over a limit (``meta["limit"]``), with
        what its spans say it spent."""
        trial_seed = None if self.seed is None else self.seed + trial
        ep = _failed(task, trial, self.merged_run(trial_seed), answer.attempts,
                     RuntimeError(f"the trial passed its {meta['limit']} limit"), "limit",
                     answer.transient, meta=meta)
        if answer.spans is None:
            return ep
        return self.capture.episode(ep, answer.spans.spans, agent_episode=False, failed=True,
                                    sampled=answer.spans.sampled)

    async def _attempts(self, task: TaskSpec, trial: int) -> Union[Episode, "_Answer"]:
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
                    result = await (self._attempt(task, kwargs)
                                    if self.capture is None or not self.retries  # one attempt
                                    else self._captured_attempt(task, kwargs, attempts))
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
        result, attempts, transient, elapsed, spans, extra = answer
        trial_seed = None if self.seed is None else self.seed + trial
        own = isinstance(result, Episode)
        ep = (_finish(result, task, trial, self.run, trial_seed, attempts, transient, elapsed)
              if own else self._plain(task, trial, result, trial_seed, attempts, transient, elapsed))
        if extra:  # the attempts a provider error ended (trialpolicy)
            ep, own = ep.replace(meta={**ep.meta, **extra}), True
        if spans is not None:  # captured (otelcapture.TrialSpans): its steps and calls
            return self.capture.episode(ep, spans.spans, agent_episode=own, retries=transient,
                                        latency_s=elapsed, sampled=spans.sampled,
                                        trial=spans), False
        return ep, not own

    def _plain(self, task: TaskSpec, trial: int, result: Any, trial_seed: Optional[int],
               attempts: int, transient: int, elapsed: float) -> Episode:
        """A plain answer's episode, built once from values made here (``output`` is typed
        Any: validation keeps it as is)."""
        return construct(Episode, task_id=task.task_id, output=result,
                         run=self.merged_run(trial_seed),
                         meta={"trial": trial, "attempts": attempts, "latency_s": elapsed,
                               **({"retries": transient} if transient else {})})

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

    async def _captured_attempt(self, task: TaskSpec, kwargs: dict, n: int) -> Any:
        """:meth:`_attempt` under an attempt span of the trial's capture."""
        with self.capture.attempt(n):
            return await self._attempt(task, kwargs)


class _Answer(NamedTuple):
    """An agent call's answer and how it went; the trial's episode is built from it later."""

    result: Any
    attempts: int
    transient: int
    elapsed: float
    spans: Any = None  # the trial's otelcapture.TrialSpans, when captured
    extra: Any = None  # meta the trial policy adds (its provider retries)


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
    own frame, where :meth:`TrialRunner._trial` turns it into a failed trial)."""
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
    ctx = contextvars.copy_context()  # the trial's context (its span, with a capture) goes along

    def settle(result: Any, exc: Optional[BaseException]) -> None:
        if fut.done():  # timed out and cancelled meanwhile: drop the late result
            return
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)

    def target() -> None:
        try:
            result, exc = ctx.run(fn), None
        except BaseException as e:  # noqa: BLE001 -- handed to the awaiting trial
            result, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, result, exc)
        except RuntimeError:  # the run (and its loop) finished while this thread overran
            pass

    # not tracked by a capture as work the trial started: it is the trial's own call
    HarnessThread(target=target, daemon=True, name="ek-trial").start()
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


def _fault_meta(fault: Any) -> dict:
    doc = fault.to_dict()
    doc.pop("schema_version", None)
    return {k: v for k, v in doc.items() if v is not None}


def _failed(task: TaskSpec, trial: int, run: Optional[RunProvenance], attempts: int,
            exc: BaseException, kind: str, retries: int = 0, meta: Optional[dict] = None) -> Episode:
    said = str(exc) or "(no message; raised by the agent)"
    fault = classify(exc) if kind == "exception" else None  # the provider's, not the agent's
    meta = {"error": f"{type(exc).__name__}: {said}",
            "error_kind": "provider" if fault is not None else kind, "trial": trial,
            "attempts": attempts, **(meta or {}),
            **({"provider": _fault_meta(fault)} if fault is not None else {}),
            **({"limit": "timeout_s"} if kind == "timeout" else {})}
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
