"""The agent task-suite harness: k trials, per-slice cuts, and a gate that survives noise.

This module runs trials and nothing else: :func:`run_suite` = :func:`run_trials` (run the
agent, concurrently, seeded, fault-tolerant, optionally persisted and resumable) +
``reporting.build_report`` (grade -> metrics -> cost -> reliability), recorded through
:mod:`ek_agents.stages.evaluate` when persisted. The spec documents the report, baseline and gate
functions under this module too: they are re-exported from their homes
(``reporting.build_report``, ``records.baselines.save_agent_baseline`` / ``load_agent_baseline`` /
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

The trial runner itself (concurrency, timeouts, retries, the writer threads) is
:mod:`ek_agents.execution._trialrunner`.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any, Callable, Optional, Union

from ..records import (baselines, documents, fingerprint as identity, grading, stagecache,
                       trials as stored_trials)
from ..stages import evaluate as stages
from ..base import Episode, RunProvenance, TaskSpec, task_table
from ..errors import InvalidInput
from ..labels import Labels, labels_doc, read_labels
from ..reporting import ReliabilityReport, check_report_inputs, graded_report
from ..scoring.metrics import grade
from ..sequential import check_baseline_comparable, gate_document, sequential_gate
from ..store import (Store, acquire_lease, episodes_prefix, open_store, release_lease, run_key,
                     segment_index_prefix, segments_prefix, sha256_hex)
from ..records.manifest import RunInputs
from ..records.segments import FLUSH_S, RunSegments, check_flush_s
from .limits import RunLimits, limits_provenance, make_limits
from .otelcapture import make_capture
from .trialpolicy import TrialPolicy, with_policy
from ._runargs import check_params, wanted_pairs
from .streamsuite import STREAMED, StreamedSuite, streamable
from ._sync import run_coroutine
from ._trialrunner import EPISODE_DEPTH as EPISODE_DEPTH, Pair, TrialRunner

# the spec documents these under ``harness`` too: re-exported from their homes
from ..gate import AgentGateResult as AgentGateResult
from ..reporting import build_report as build_report
from ..records.baselines import no_baseline
from ..records.baselines import (agent_regression_gate as agent_regression_gate,
                                 load_agent_baseline as load_agent_baseline,
                                 save_agent_baseline as save_agent_baseline)

__all__ = ["run_suite", "run_trials", "store_trials", "build_report", "new_run_id", "trial_fingerprint", "EPISODE_DEPTH",
           "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
           "AgentGateResult"]

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
               fingerprint: Optional[identity.RunFingerprint] = None,
               agent_id: Optional[str] = None, capture: Optional[str] = None,
               flush_s: float = FLUSH_S, limits: Optional[RunLimits] = None,
               prices: Optional[Mapping] = None) -> list[Episode]:
    """Run ``agent`` ``k`` times on every task; return the (ungraded) episodes.

    Episodes come back sorted by ``(task_id, trial)`` whatever order the trials finished in;
    ``episode.meta["trial"]`` is the trial index and ``episode.run.seed`` its seed
    (``seed + trial``; passed to the agent when it accepts a ``seed`` keyword or ``**kwargs``).

    - ``agent``: ``TaskSpec -> Episode | answer``, a plain or ``async def`` callable. Sync agents
      run on worker threads (one per slot; with ``timeout_s``, one per call), async ones on the
      event loop; at most ``max_concurrency`` trials run at once.
    - ``timeout_s`` bounds each attempt (retries get a fresh budget). An async agent is
      cancelled; a sync one cannot be killed, so its thread is abandoned and its late result
      dropped -- a hung agent never stalls the suite.
    - ``run``: provenance merged onto each episode (fields set here win; empty ones are filled
      from the agent's own ``episode.run``).
    - ``store`` + ``run_id``: the finished trials are stored as they finish, in *segments*
      (``ek_agents.records.segments``: a few thousand trials to an object, JSON Lines, zstd,
      content-addressed, indexed per writer); a segment is stored once it holds 4,096 trials
      or 16 MB, or once its oldest trial has waited ``flush_s`` seconds (default 10), so a
      killed run loses at most ``flush_s`` seconds' worth of finished trials and those in
      flight. Trials already stored are loaded, not re-run (a killed run resumes without
      losing or duplicating anything); a run stored one file per trial (at
      ``store.episode_key``) is read, resumed and audited too. ``run_id``
      alone uses the default store; ``store`` alone is an error. A resume must be the same
      run: its fingerprint (``records.fingerprint.RunFingerprint``: agent, its code and declared
      ``ek_config``, suite, k, seed, provenance, timeout, retries; ``fingerprint`` overrides
      the one computed here) is stored at the first write, and a different one raises
      :class:`~ek_agents.errors.RunMismatch` naming the fields. A stored file that is not the
      trial its key names is run again, never kept (``records.fingerprint.claim_run``).
    - ``refresh``: run every trial afresh (stored trials are removed first); ``retry_errored``:
      run again only the stored trials that ended in an error.
    - ``agent_id``: what identifies the agent, said by the caller (e.g. ``"bot-v3/gpt-4o"``):
      it replaces digesting the agent's state (``agentid.agent_identity``; its code is still
      digested). Needed to resume a run whose agent holds state that cannot be digested (a
      live client, a lock) from another process -- or declare ``ek_config`` on the agent.
    - ``only``: an optional set of ``(task_id, trial)`` pairs to run (a chunk of the run).
    - ``progress``: a rich progress bar (default: when stderr is a terminal).
    - ``capture="otel"``: each trial runs under a root span of its own and its OpenTelemetry
      spans (from the instrumentations the agent runs) give the episode its trajectory and its
      per-model-call cost (:mod:`ek_agents.execution.otelcapture` says which wins when the agent
      returns an Episode too); needs ``pip install 'ek-agents[otel]'``. An
      ``otelcapture.OtelCapture(keep_spans=N)`` instead also keeps each trial's first N spans
      in ``meta["otel"]["spans_kept"]`` (opt-in, for the audit).
    - provider errors (rate limits, outages: :mod:`ek_agents.execution.providers`) are retried,
      not scored; ``limits`` (:class:`~ek_agents.execution.limits.RunLimits`: per-trial calls,
      tokens, dollars; the run's ``max_dollars``; the provider retry budget) with ``prices``
      for the dollar ones (:mod:`ek_agents.execution.trialpolicy`). A run stopped at
      ``max_dollars`` returns the trials it ran.
    """
    policy = TrialPolicy(limits, max_concurrency=max_concurrency, prices=prices, seed=seed)
    return _trials_with_reuse(agent, tasks, k=k, seed=seed, run=run,
                              max_concurrency=max_concurrency, timeout_s=timeout_s,
                              retries=retries, store=store, run_id=run_id, only=only,
                              backoff_s=backoff_s, progress=progress, refresh=refresh,
                              retry_errored=retry_errored, fingerprint=fingerprint,
                              agent_id=agent_id, capture=capture, flush_s=flush_s,
                              policy=policy)[0]


def _trials_with_reuse(agent: Callable, tasks: Any, *, k: int, seed: Optional[int],
                       run: Optional[RunProvenance], max_concurrency: int,
                       timeout_s: Optional[float], retries: int, store: Any,
                       run_id: Optional[str], only: Any, backoff_s: float,
                       progress: Optional[bool], refresh: bool, retry_errored: bool,
                       fingerprint: Optional[identity.RunFingerprint],
                       agent_id: Optional[str] = None, capture: Optional[str] = None,
                       flush_s: float = FLUSH_S, policy: Optional[TrialPolicy] = None,
                       summarize: Optional[Callable] = None, keep: bool = True
                       ) -> tuple[list[Episode], Optional[identity.RunReuse]]:
    specs = task_table(tasks)
    check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s, flush_s=flush_s)
    wanted = wanted_pairs(specs, k, only)
    cap = make_capture(capture)
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
                                              timeout_s=timeout_s, retries=retries,
                                              agent_id=agent_id, capture=capture,
                                              limits=None if policy is None else policy.limits)
        reuse, done = identity.claim_run(st, run_id, fp, wanted, refresh=refresh,
                                       retry_errored=retry_errored)
    todo = [p for p in wanted if p not in done]
    ran: dict = {}
    if todo:
        show = sys.stderr.isatty() if progress is None else bool(progress)
        runner = TrialRunner(agent, specs, seed=seed, run=run, max_concurrency=max_concurrency,
                         timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                         store=st, run_id=run_id, capture=cap, flush_s=flush_s,
                         policy=policy, summarize=summarize, keep=keep)
        ran = run_coroutine(lambda: runner.run_all(todo, total=len(wanted), already=len(done),
                                                    show=show))
    merged = {**done, **ran}  # short of wanted at max_dollars; without keep: those loaded
    return [merged[p] for p in wanted if p in merged], reuse


def store_trials(agent: Callable, tasks: Any, pairs: Any, *, k: int, store: Store, run_id: str,
                 seed: Optional[int] = None, run: Optional[RunProvenance] = None,
                 max_concurrency: int = 8, timeout_s: Optional[float] = None, retries: int = 0,
                 backoff_s: float = 0.5,
                 on_stored: Optional[Callable[[stored_trials.StoredTrial, Optional[Episode]], Any]] = None,
                 summarize: Optional[Callable] = None,
                 keep: bool = True, writer: Optional[str] = None,
                 capture: Optional[str] = None, flush_s: float = FLUSH_S,
                 limits: Optional[RunLimits] = None,
                 prices: Optional[Mapping] = None) -> list[stored_trials.StoredTrial]:
    """Run exactly ``pairs`` (``(task_id, trial)``) of a run already claimed with
    ``records.fingerprint.claim_run`` -- its fingerprint checked, these trials not stored -- and store each
    as it finishes, in segments, as :func:`run_trials` does; return each stored trial (its
    segment's key and sha256, its line's bytes), in ``(task_id, trial)`` order.

    Nothing is listed or read back: a run's chunks take this after the run was planned once
    (``pipeline.plan_trials``), so that no chunk lists the run's stored trials.
    ``on_stored(stored, episode)`` is called with each trial once its segment is indexed, on
    the writer thread that stored it (off the event loop: the chunks grade their trials there);
    ``episode`` is the episode its bytes parse back to when the harness built it from a plain
    answer (``records.trials.PlainEpisodeJson``), else None (parse ``stored.data``). What it raises
    fails the run as a failed write does. ``summarize(pairs, lines, episodes)``: a segment's
    summary, stored in its index entry (``segments.SegmentWriter``); ``flush_s``: as
    :func:`run_trials`. ``keep=False`` keeps neither the episodes
    nor the stored trials in memory (a large chunk: returns ``[]``; ``on_stored`` still sees
    each); ``writer``: the segment writer's name (default a fresh one). ``limits`` /
    ``prices``: as :func:`run_trials` (a trial not started at ``max_dollars`` is not stored,
    nor returned).
    """
    specs = task_table(tasks)
    check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s, flush_s=flush_s)
    Store.validate_name(run_id, what="run id")
    todo = wanted_pairs(specs, k, pairs)
    if not todo:
        return []
    runner = TrialRunner(agent, specs, seed=seed, run=run, max_concurrency=max_concurrency,
                     timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                     store=store, run_id=run_id, on_stored=on_stored,
                     summarize=summarize, keep=keep, writer=writer,
                     capture=make_capture(capture), flush_s=flush_s,
                     policy=TrialPolicy(limits, max_concurrency=max_concurrency, prices=prices,
                                        seed=seed))
    run_coroutine(lambda: runner.run_all(todo, total=len(todo), already=0, show=False))
    return [runner.written[p] for p in todo if p in runner.written] if keep else []


def trial_fingerprint(agent: Callable, tasks: Any, *, k: int, seed: Optional[int],
                      run: Optional[RunProvenance], timeout_s: Optional[float],
                      retries: int, agent_id: Optional[str] = None,
                      capture: Optional[str] = None,
                      limits: Optional[RunLimits] = None) -> identity.RunFingerprint:
    """The fingerprint of a library run of ``agent`` (a callable) over ``tasks``: its
    ``module:qualname``, the digest of its source file plus its own source (two lambdas of
    one file differ), its declared ``ek_config``, its identity (``agentid.agent_identity``:
    code and state digested, or ``agent_id``), the tasks' digest and the run's settings."""
    code = identity.code_digest(agent)
    try:
        own = inspect.getsource(agent if inspect.isfunction(agent) or inspect.ismethod(agent)
                                else type(agent))
    except (TypeError, OSError):
        own = ""
    return identity.run_fingerprint(
        agent, name=identity.agent_name(agent), limits=limits_provenance(limits),
        code=None if code is None and not own else
        sha256_hex(f"{code}\n{own}".encode("utf-8", "surrogatepass")),
        suite=documents.tasks_doc(tasks)["digest"], k=k, seed=seed,
        run={} if run is None else run.to_dict(), capture=capture, timeout_s=timeout_s,
        retries=retries, agent_id=agent_id)


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
              agent_id: Optional[str] = None, labels: Any = None,
              capture: Optional[str] = None, flush_s: float = FLUSH_S,
              trial_dollars: Optional[float] = None, trial_tokens: Optional[int] = None,
              trial_calls: Optional[int] = None, max_dollars: Optional[float] = None,
              provider_retry_s: Optional[float] = None, adaptive_concurrency: bool = True) -> Any:
    """Run ``agent`` over a task suite, ``k`` trials per task, and report reliability + cost.

    :func:`run_trials` then :func:`build_report` (see both for the parameters). Persistence:
    ``persist=True`` (or a ``run_id``) stores every episode as it finishes under ``rootdir``
    (any :class:`~ek_agents.store.Store` URL; default ``EK_STORE`` or ``./.ek``), in
    segments flushed at least every ``flush_s`` seconds (see :func:`run_trials`); without a
    ``run_id`` one is generated and reported in ``report.detail["run_id"]`` -- pass it back to
    resume a killed run. The run is recorded as the pipeline records one: its stage documents
    (``tasks``, ``metrics``, ``report``, ``prices`` when given, at ``store.run_key``) and its
    manifest (``records.documents.record_run``: every artifact, segment and segment index with
    its sha256), so ``ek-agents report / gate / audit / promote`` work on it. The report is
    streamed from the segments as they are stored, the episodes never all in memory
    (:mod:`ek_agents.execution.streamsuite`), unless an input cannot be stored -- a callable
    ``check``, custom ``metrics``, a single ``price`` (recorded as such in the manifest's
    inputs; the audit says which figures it cannot recompute) -- or ``labels`` are given: then
    the whole-run ``episodes`` and ``graded`` documents are written too.

    Identity and reuse: a persisted run is one writer's (a lease on the run id, held while it
    writes: a second writer gets :class:`~ek_agents.errors.RunInUse` naming the holder, or
    waits ``lease_wait_s`` seconds; ``break_lease=True`` removes a dead writer's lease) and one
    fingerprint's (see :func:`run_trials`: a resume with another agent, configuration, suite,
    k, seed, provenance or limits raises :class:`~ek_agents.errors.RunMismatch`).
    ``refresh=True`` runs every trial afresh; ``retry_errored=True`` re-runs only the stored
    trials that ended in an error. The agent is identified by its code and state (closure
    cells, attributes, partial arguments: ``agentid.agent_identity``), or by ``agent_id`` when
    given; a run whose agent holds state that cannot be digested runs, says so once, and is
    not resumed from another process (:class:`~ek_agents.errors.UnidentifiedAgent`).
    ``report.detail["reused"]`` and the manifest (``parameters["reused"]``, or
    ``stages["episodes"]``) say how many trials were reused, and from which run.

    ``sequential=True`` with ``baseline=`` (a name in the store at ``rootdir``, a saved
    baseline dict, or a report) runs the trials batch by batch (trial j of every task) and
    stops calling the agent once the sequential gate has decided
    (:mod:`ek_agents.sequential`); the report covers the trials that ran and records the
    verdict -- stopped early or not, why, and how many trials it cost -- in
    ``report.detail["sequential"]``. With ``persist``/``run_id`` each trial is stored as it
    finishes and the run is recorded like any other; its gate document and manifest
    (``RunManifest.sequential``) say whether it stopped early, why, and the trials it cost,
    and ``ek-agents audit`` / ``gate`` replay the looks from the stored episodes.

    ``labels`` (a labels file's path or bytes, or ``labels.Labels``: people's verdicts on some
    trials of a judge-graded run, see :mod:`ek_agents.labels`) adds the judge-corrected success
    rate beside the judge's raw one (``report.detail["judge_corrected"]``); a persisted run
    stores the labels as its ``labels`` document (listed in the manifest with its sha256, its
    digest in ``manifest.inputs.labels``), so the audit verifies them and recomputes the
    correction. (Not with ``sequential``/``baseline``: labels come after a run.)
    ``capture="otel"``: the trials' OpenTelemetry spans give each episode its tool calls and
    its per-model-call cost (see :func:`run_trials` and :mod:`ek_agents.execution.otelcapture`).

    Providers and limits (``docs/guides/providers.md``): a provider error (an SDK's 429, 408,
    409, 5xx, connection or read timeout) is retried with backoff for up to
    ``provider_retry_s`` seconds of waits per trial (default ``providers.PROVIDER_RETRY_S``),
    the trials in flight against a rate-limiting endpoint adapt (``adaptive_concurrency``);
    what stays unresolved is not scored and ``report.detail["unresolved"]`` names it.
    ``trial_dollars`` / ``trial_tokens`` / ``trial_calls`` end a trial over them as a failure
    (``meta["limit"]``); ``max_dollars`` stops starting trials at that spend
    (``report.detail["stopped"]``; resume with the same run id). Dollar limits need
    ``prices``.
    """
    # every argument is checked before the first agent call (a bad check= would otherwise be
    # refused only after every trial had run and been paid for)
    check_report_inputs(tasks, check=check, metrics=metrics, price=price, prices=prices)
    limits = make_limits(trial_dollars=trial_dollars, trial_tokens=trial_tokens,
                         trial_calls=trial_calls, max_dollars=max_dollars,
                         provider_retry_s=provider_retry_s,
                         adaptive_concurrency=adaptive_concurrency, prices=prices)
    policy = TrialPolicy(limits, max_concurrency=max_concurrency, prices=prices, seed=seed)
    if labels is not None:  # read (and refused) before any trial runs
        if sequential or baseline is not None:
            raise InvalidInput("run_suite: labels= with sequential/baseline: a sequential run "
                               "decides as its trials finish, before anyone labels them; run "
                               "it without labels, then `ek-agents gate RUN --labels FILE`")
        labels = labels if isinstance(labels, Labels) else read_labels(labels)
    if sequential or baseline is not None:
        return _sequential_suite(agent, tasks, baseline=baseline, sequential=sequential, k=k,
                                 check=check, metrics=metrics, price=price, prices=prices,
                                 run=run, seed=seed, persisting=persist or run_id is not None,
                                 run_id=run_id, rootdir=rootdir, max_concurrency=max_concurrency,
                                 timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                                 progress=progress, agent_id=agent_id, flush_s=flush_s,
                                 **({"capture": capture} if capture else {}))
    persisting = persist or run_id is not None
    st = open_store(rootdir) if persisting else None
    if persisting and run_id is None:
        run_id = new_run_id()
    specs = task_table(tasks)
    if st is None:
        episodes = _trials_with_reuse(agent, specs, k=k, seed=seed, run=run,
                                      max_concurrency=max_concurrency, timeout_s=timeout_s,
                                      retries=retries, store=None, run_id=None, only=None,
                                      backoff_s=backoff_s, progress=progress, refresh=False,
                                      retry_errored=False, fingerprint=None, agent_id=agent_id,
                                      capture=capture, flush_s=flush_s, policy=policy)[0]
        report = graded_report(episodes, specs, k=k, check=check, metrics=metrics, price=price,
                               prices=prices, seed=0 if seed is None else seed, run=run,
                               labels=labels)[2]
        return with_policy(report, policy, wanted=len(specs) * k, got=len(episodes))
    tasks_doc = documents.tasks_doc(tasks)  # unstorable tasks fail now
    lease = acquire_lease(st, run_id, wait_s=lease_wait_s, force=break_lease)
    try:
        return _persisted_suite(agent, specs, tasks_doc, st=st, run_id=run_id, k=k, check=check,
                                metrics=metrics, price=price, prices=prices, run=run, seed=seed,
                                max_concurrency=max_concurrency, timeout_s=timeout_s,
                                retries=retries, backoff_s=backoff_s, progress=progress,
                                refresh=refresh, retry_errored=retry_errored, agent_id=agent_id,
                                labels=labels, capture=capture, flush_s=flush_s,
                                policy=policy)
    finally:
        release_lease(st, lease)


def _persisted_suite(agent: Callable, specs: Mapping[str, TaskSpec], tasks_doc: dict, *,
                     st: Store, run_id: str, k: int, check: Any, metrics: Optional[Mapping],
                     price: Any, prices: Optional[Mapping], run: Optional[RunProvenance],
                     seed: Optional[int], max_concurrency: int, timeout_s: Optional[float],
                     retries: int, backoff_s: float, progress: Optional[bool], refresh: bool,
                     retry_errored: bool, agent_id: Optional[str] = None,
                     labels: Optional[Labels] = None, capture: Optional[str] = None,
                     flush_s: float = FLUSH_S, policy: Optional[TrialPolicy] = None) -> Any:
    """:func:`run_suite` of a persisted run, under the run's lease."""
    if not (refresh or retry_errored):
        done = _recorded_report(agent, specs, st=st, run_id=run_id, k=k, check=check,
                                metrics=metrics, price=price, prices=prices, run=run, seed=seed,
                                timeout_s=timeout_s, retries=retries, agent_id=agent_id,
                                labels=labels, capture=capture)
        if done is not None:
            return done
    streamed = (StreamedSuite(tasks_doc, k=k, check=check, prices=prices, seed=seed or 0, run=run)
                if streamable(check=check, metrics=metrics, price=price, labels=labels)
                and not st.list(episodes_prefix(run_id)) else None)  # per-trial files: not
    trials = dict(agent=agent, tasks=specs, k=k, seed=seed, run=run, timeout_s=timeout_s,
                  max_concurrency=max_concurrency, retries=retries, store=st, run_id=run_id,
                  only=None, backoff_s=backoff_s, fingerprint=None, agent_id=agent_id,
                  capture=capture, flush_s=flush_s, policy=policy)  # the same run, twice at most
    episodes, reuse = _trials_with_reuse(
        **trials, progress=progress, refresh=refresh, retry_errored=retry_errored,
        summarize=None if streamed is None else streamed.summarize, keep=streamed is None)
    if streamed is not None and not streamed.note_loaded(episodes):
        episodes = graded = None
        reliability, report, got = streamed.report(st, run_id)
    else:
        if streamed is not None:  # the in-memory report, from the trials now stored (none runs)
            episodes = _trials_with_reuse(**trials, progress=False, refresh=False,
                                          retry_errored=False)[0]
        got = len(episodes)
        graded, reliability, report = graded_report(
            episodes, specs, k=k, check=check, metrics=metrics, price=price, prices=prices,
            seed=0 if seed is None else seed, run=run, labels=labels)
    if policy is not None:
        report = with_policy(report, policy, wanted=len(specs) * k, got=got)
    _record(st, run_id, agent, tasks_doc, episodes, (graded, reliability, report), k=k,
            check=check, metrics=metrics, price=price, prices=prices, run=run, seed=seed,
            runner={"max_concurrency": max_concurrency, "timeout_s": timeout_s,
                    "retries": retries, "backoff_s": backoff_s, "refresh": refresh,
                    "retry_errored": retry_errored, **({"capture": capture} if capture else {})},
            reuse=reuse, labels=labels)
    reused = {"episodes": reuse.kept, "from_run": run_id, **reuse.to_dict()}
    reused.pop("schema_version", None)
    return dataclasses.replace(report, detail={**report.detail, "run_id": run_id, "store": st.url,
                                               "reused": reused})


def _recorded_report(agent: Callable, specs: Mapping[str, TaskSpec], *, st: Store, run_id: str,
                     k: int, check: Any, metrics: Optional[Mapping], price: Any,
                     prices: Optional[Mapping], run: Optional[RunProvenance],
                     seed: Optional[int], timeout_s: Optional[float], retries: int,
                     agent_id: Optional[str], labels: Optional[Labels],
                     capture: Optional[str]) -> Any:
    """The report a finished run recorded, when this call would compute the same one; else
    None (the run's trials are then claimed and graded as usual).

    The same: the run's fingerprint (checked as a resume checks it: RunMismatch when it
    differs), every input the report was computed with recorded in its manifest and equal
    (``check`` a name or None, no ``metrics`` or ``price``, no ``prices`` catalog), and the
    trials the manifest lists still exactly what the store holds (the segments and index
    documents, by digest; no per-trial file). Then nothing is read but the manifest, the
    index documents and the report (verified against the manifest's sha256), and
    ``detail["reused"]`` says so (``"report": "recorded"``)."""
    if metrics or price is not None or prices is not None or not (check is None or isinstance(check, str)):
        return None
    fp = trial_fingerprint(agent, specs, k=k, seed=seed, run=run, timeout_s=timeout_s,
                           retries=retries, agent_id=agent_id, capture=capture)
    at = identity.fingerprint_key(run_id)
    if not st.exists(run_key(run_id, "manifest")) or not st.exists(at):
        return None
    identity.check_fingerprint(st, run_id, fp)  # a resume with other settings is refused
    manifest = documents.read_manifest(st, run_id)
    if (manifest.sequential is not None or manifest.inputs != _inputs(k, seed, run, check, None, None, labels, list(specs.values()))
            or manifest.artifacts.get(at) != st.digest(at)
            or manifest.results.get("n_trials") != len(specs) * k
            or st.list(episodes_prefix(run_id))):
        return None
    held = RunSegments.load(st, run_id).digests()
    listed = {key: sha for key, sha in manifest.artifacts.items()
              if key.startswith((segments_prefix(run_id) + "/", segment_index_prefix(run_id) + "/"))}
    if not held or held != listed:
        return None
    report = ReliabilityReport.from_dict(documents.read_run_doc(st, manifest, "report"))
    reused = {"episodes": len(specs) * k, "from_run": run_id, "report": "recorded",
              **identity.RunReuse(kept=len(specs) * k).to_dict()}
    reused.pop("schema_version", None)
    return dataclasses.replace(report, detail={**report.detail, "run_id": run_id, "store": st.url,
                                               "reused": reused})


def _inputs(k: int, seed: Optional[int], run: Optional[RunProvenance], check: Any,
            price: Any, metrics: Optional[Mapping], labels: Optional[Labels],
            tasks: Any) -> RunInputs:
    """What a run_suite run records as the inputs its figures were computed with (``tasks``:
    the suite, whose own checkers are part of how the run was graded)."""
    return RunInputs(k=k, seed=seed, run=None if run is None else run.to_dict(),
                     check=check if check is None or isinstance(check, str) else documents.UNSTORED,
                     price=None if price is None else documents.UNSTORED,
                     metrics=tuple(sorted(metrics or ())),
                     labels=None if labels is None else labels.digest,
                     graded_by=grading.graded_by(check, tasks))


def _record(st: Store, run_id: str, agent: Callable, tasks_doc: Mapping, episodes: list,
            scored: tuple, *, k: int, check: Any, metrics: Optional[Mapping], price: Any,
            prices: Optional[Mapping], run: Optional[RunProvenance], seed: Optional[int],
            runner: Mapping, gate: Optional[stagecache.GateRef] = None,
            reuse: Optional[identity.RunReuse] = None, labels: Optional[Labels] = None) -> None:
    """Record a persisted ``run_suite`` run as the pipeline records one: its stage documents
    and its manifest (``records.documents.record_run``); ``gate`` a verdict already written
    (``stages.evaluate.write_gate``: the sequential gate's); ``reuse`` what the run kept of its stored
    trials. ``episodes`` None: a run streamed from its segments (``streamsuite``): no episodes
    or graded document, ``parameters["layout"]`` STREAMED and ``["reused"]``."""
    graded, reliability, report = scored
    ep_ref = gr_ref = None
    layout: dict = {"layout": STREAMED} if episodes is None else {}
    if episodes is None and reuse is not None:
        layout["reused"] = {"reused": reuse.kept, "reused_from": run_id}  # as an episodes stage
    elif episodes is not None:
        ep_ref = stagecache.write_doc(st, run_id, "episodes", stored_trials.episodes_json(episodes))
        gr_ref = stagecache.write_doc(st, run_id, "graded", stored_trials.episodes_json(graded))
        if reuse is not None:
            ep_ref = dataclasses.replace(ep_ref, reused=reuse.kept, reused_from=run_id)
    refs = {"tasks": stagecache.write_tasks(st, run_id, tasks_doc),
            "prices": None if prices is None else stagecache.write_doc(st, run_id, "prices",
                                                                   documents.prices_doc(prices)),
            "episodes": ep_ref,
            "graded": gr_ref,
            "metrics": stagecache.write_doc(st, run_id, "metrics", reliability.to_dict()),
            "report": stagecache.write_doc(st, run_id, "report", report.to_dict()),
            "gate": gate,
            "labels": None if labels is None else stagecache.write_doc(st, run_id, "labels",
                                                                       labels_doc(labels))}
    inputs = _inputs(k, seed, run, check, price, metrics, labels, documents.tasks_of(tasks_doc))
    documents.record_run(st, run_id, refs=refs, inputs=inputs,  # agent: its import path when it has one
                      agent=identity.agent_name(agent),
                      parameters={"k": k, "seed": seed, **runner, **layout,
                                  **({"sequential": True} if gate is not None else {})},
                      orchestrator={"orchestrator": "ek_agents.execution.harness.run_suite"})


def _sequential_suite(agent: Callable, tasks: Any, *, baseline: Any, sequential: bool, k: int,
                      check: Any, metrics: Optional[Mapping], price: Any, prices: Optional[Mapping],
                      run: Optional[RunProvenance], seed: Optional[int], persisting: bool,
                      run_id: Optional[str], rootdir: Any, agent_id: Optional[str] = None,
                      flush_s: float = FLUSH_S, **runner: Any) -> Any:
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
            raise no_baseline(open_store(rootdir), baseline)
        baseline = doc
    base_doc = baseline if isinstance(baseline, Mapping) else baseline.to_dict()
    check_baseline_comparable(run, base_doc)
    if isinstance(baseline, Mapping) and "report" in baseline:
        baseline = baseline["report"]
    specs = task_table(tasks)
    st = open_store(rootdir) if persisting else None
    if persisting and run_id is None:
        run_id = new_run_id()
    tasks_doc = documents.tasks_doc(tasks) if st is not None else None  # unstorable tasks fail now
    ran: list = []
    # the agent is identified once, before its first trial: every batch resumes that run
    fp = None if st is None else trial_fingerprint(
        agent, specs, k=k, seed=seed, run=run, timeout_s=runner.get("timeout_s"),
        retries=runner.get("retries", 0), agent_id=agent_id, capture=runner.get("capture"))

    def run_batch(pairs: list) -> list:
        eps = run_trials(agent, specs, k=k, seed=seed, run=run, only=pairs, store=st,
                         run_id=run_id, fingerprint=fp, agent_id=agent_id, flush_s=flush_s,
                         **runner)
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
            base_doc = baselines.baseline_document(base_doc, name or "baseline")
        gate = stages.write_gate(st, run_id, base_doc, gate_document(verdict, name))
        _record(st, run_id, agent, tasks_doc, ran, scored, k=k, check=check, metrics=metrics,
                price=price, prices=prices, run=run, seed=seed, runner=runner, gate=gate)
        detail.update(run_id=run_id, store=st.url)
    return dataclasses.replace(report, detail=detail)
