"""The agent task-suite harness: k trials, per-slice cuts, and a gate that survives noise.

This module runs trials and nothing else: :func:`run_suite` = :func:`run_trials` (run the
agent, concurrently, seeded, fault-tolerant, optionally persisted and resumable) +
``reporting.build_report`` (grade -> metrics -> cost -> reliability), recorded through
:mod:`ek_agents.runs.stages` when persisted. The spec documents the report, baseline and gate
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

The trial runner itself (concurrency, timeouts, retries, the writer threads) is
:mod:`ek_agents.runs.trialrunner`.
"""
from __future__ import annotations

import dataclasses
import inspect
import sys
import time
import uuid
from collections.abc import Mapping
from typing import Any, Callable, Optional, Union

from . import baselines, documents, identity, stagecache, stages, trials as stored_trials
from .agentid import agent_identity
from ..base import Episode, RunProvenance, TaskSpec, task_table
from ..errors import InvalidInput
from ..labels import Labels, labels_doc, read_labels
from ..reporting import graded_report
from ..scoring.metrics import grade
from ..sequential import check_baseline_comparable, gate_document, sequential_gate
from ..store import Store, acquire_lease, open_store, release_lease, sha256_hex
from .manifest import RunInputs
from .limits import RunLimits, limits_provenance, make_limits
from .otelcapture import make_capture
from .trialpolicy import TrialPolicy, with_policy
from .trialrunner import EPISODE_DEPTH as EPISODE_DEPTH, Pair, TrialRunner, run_coroutine

# the spec documents these under ``harness`` too: re-exported from their homes
from ..gate import AgentGateResult as AgentGateResult
from ..reporting import build_report as build_report
from .baselines import (agent_regression_gate as agent_regression_gate,
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
               agent_id: Optional[str] = None, segments: bool = False,
               capture: Optional[str] = None, limits: Optional[RunLimits] = None,
               prices: Optional[Mapping] = None) -> list[Episode]:
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
    - ``agent_id``: what identifies the agent, said by the caller (e.g. ``"bot-v3/gpt-4o"``):
      it replaces digesting the agent's state (``agentid.agent_identity``; its code is still
      digested). Needed to resume a run whose agent holds state that cannot be digested (a
      live client, a lock) from another process -- or declare ``ek_config`` on the agent.
    - ``only``: an optional set of ``(task_id, trial)`` pairs to run (a chunk of the run).
    - ``segments=True``: the finished trials are stored a segment of a few thousand at a
      time (``ek_agents.runs.segments``: JSON Lines, zstd, content-addressed, indexed per
      writer), not one file each; a trial counts as stored once its segment is indexed, so a
      killed run loses at most its unflushed segment. The default writes one file per trial at
      ``store.episode_key`` (both layouts are read back, resumed and audited).
    - ``progress``: a rich progress bar (default: when stderr is a terminal).
    - ``capture="otel"``: each trial runs under a root span of its own and its OpenTelemetry
      spans (from the instrumentations the agent runs) give the episode its trajectory and its
      per-model-call cost (:mod:`ek_agents.runs.otelcapture` says which wins when the agent
      returns an Episode too); needs ``pip install 'ek-agents[otel]'``. An
      ``otelcapture.OtelCapture(keep_spans=N)`` instead also keeps each trial's first N spans
      in ``meta["otel"]["spans_kept"]`` (opt-in, for the audit).
    - provider errors (rate limits, outages: :mod:`ek_agents.runs.providers`) are retried,
      not scored; ``limits`` (:class:`~ek_agents.runs.limits.RunLimits`: per-trial calls,
      tokens, dollars; the run's ``max_dollars``; the provider retry budget) with ``prices``
      for the dollar ones (:mod:`ek_agents.runs.trialpolicy`). A run stopped at
      ``max_dollars`` returns the trials it ran.
    """
    policy = TrialPolicy(limits, max_concurrency=max_concurrency, prices=prices, seed=seed)
    return _trials_with_reuse(agent, tasks, k=k, seed=seed, run=run,
                              max_concurrency=max_concurrency, timeout_s=timeout_s,
                              retries=retries, store=store, run_id=run_id, only=only,
                              backoff_s=backoff_s, progress=progress, refresh=refresh,
                              retry_errored=retry_errored, fingerprint=fingerprint,
                              agent_id=agent_id, segments=segments, capture=capture,
                              policy=policy)[0]


def _trials_with_reuse(agent: Callable, tasks: Any, *, k: int, seed: Optional[int],
                       run: Optional[RunProvenance], max_concurrency: int,
                       timeout_s: Optional[float], retries: int, store: Any,
                       run_id: Optional[str], only: Any, backoff_s: float,
                       progress: Optional[bool], refresh: bool, retry_errored: bool,
                       fingerprint: Optional[identity.RunFingerprint],
                       agent_id: Optional[str] = None, segments: bool = False,
                       capture: Optional[str] = None, policy: Optional[TrialPolicy] = None
                       ) -> tuple[list[Episode], Optional[identity.RunReuse]]:
    specs = task_table(tasks)
    _check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s)
    wanted = _wanted_pairs(specs, k, only)
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
                         store=st, run_id=run_id, segments=segments, capture=cap,
                         policy=policy)
        ran = run_coroutine(lambda: runner.run_all(todo, total=len(wanted), already=len(done),
                                                    show=show))
    merged = {**done, **ran}  # less than wanted when the run stopped at its max_dollars
    return [merged[p] for p in wanted if p in merged], reuse


def store_trials(agent: Callable, tasks: Any, pairs: Any, *, k: int, store: Store, run_id: str,
                 seed: Optional[int] = None, run: Optional[RunProvenance] = None,
                 max_concurrency: int = 8, timeout_s: Optional[float] = None, retries: int = 0,
                 backoff_s: float = 0.5,
                 on_stored: Optional[Callable[[stored_trials.StoredTrial, Optional[Episode]], Any]] = None,
                 segments: bool = False, summarize: Optional[Callable] = None,
                 keep: bool = True, writer: Optional[str] = None,
                 capture: Optional[str] = None, limits: Optional[RunLimits] = None,
                 prices: Optional[Mapping] = None) -> list[stored_trials.StoredTrial]:
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
    nor the stored trials in memory (a large chunk: returns ``[]``; ``on_stored`` still sees
    each); ``writer``: the segment writer's name (default a fresh one). ``limits`` /
    ``prices``: as :func:`run_trials` (a trial not started at ``max_dollars`` is not stored,
    nor returned).
    """
    specs = task_table(tasks)
    _check_params(agent, k=k, seed=seed, max_concurrency=max_concurrency, timeout_s=timeout_s,
                  retries=retries, run=run, backoff_s=backoff_s)
    Store.validate_name(run_id, what="run id")
    todo = _wanted_pairs(specs, k, pairs)
    if not todo:
        return []
    runner = TrialRunner(agent, specs, seed=seed, run=run, max_concurrency=max_concurrency,
                     timeout_s=timeout_s, retries=retries, backoff_s=backoff_s,
                     store=store, run_id=run_id, on_stored=on_stored, segments=segments,
                     summarize=summarize, keep=keep, writer=writer,
                     capture=make_capture(capture),
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
    prov = {} if run is None else {f: v for f, v in run.to_dict().items() if f != "schema_version"}
    if capture:  # the episodes are read from spans: another run's than one without
        prov["capture"] = str(capture)
    prov.update(limits_provenance(limits))  # a trial's outcome depends on its limits
    return identity.RunFingerprint(
        agent=identity.agent_name(agent),
        agent_code=None if code is None and not own else
        sha256_hex(f"{code}\n{own}".encode("utf-8", "surrogatepass")),
        agent_config=identity.agent_config(agent), suite=documents.tasks_doc(tasks)["digest"],
        k=k, seed=seed, run=prov, timeout_s=timeout_s, retries=retries,
        agent_identity=agent_identity(agent, agent_id=agent_id))


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
              segments: bool = False, capture: Optional[str] = None,
              trial_dollars: Optional[float] = None, trial_tokens: Optional[int] = None,
              trial_calls: Optional[int] = None, max_dollars: Optional[float] = None,
              provider_retry_s: Optional[float] = None, adaptive_concurrency: bool = True) -> Any:
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
    trials that ended in an error. The agent is identified by its code and state (closure
    cells, attributes, partial arguments: ``agentid.agent_identity``), or by ``agent_id`` when
    given; a run whose agent holds state that cannot be digested runs, says so once, and is
    not resumed from another process (:class:`~ek_agents.errors.UnidentifiedAgent`).
    ``report.detail["reused"]`` and the manifest's
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

    ``labels`` (a labels file's path or bytes, or ``labels.Labels``: people's verdicts on some
    trials of a judge-graded run, see :mod:`ek_agents.labels`) adds the judge-corrected success
    rate beside the judge's raw one (``report.detail["judge_corrected"]``); a persisted run
    stores the labels as its ``labels`` document (listed in the manifest with its sha256, its
    digest in ``manifest.inputs.labels``), so the audit verifies them and recomputes the
    correction. (Not with ``sequential``/``baseline``: labels come after a run.)
    ``capture="otel"``: the trials' OpenTelemetry spans give each episode its tool calls and
    its per-model-call cost (see :func:`run_trials` and :mod:`ek_agents.runs.otelcapture`).

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
                                 progress=progress, agent_id=agent_id,
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
                                      capture=capture, policy=policy)[0]
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
                                labels=labels, segments=segments, capture=capture,
                                policy=policy)
    finally:
        release_lease(st, lease)


def _persisted_suite(agent: Callable, specs: Mapping[str, TaskSpec], tasks_doc: dict, *,
                     st: Store, run_id: str, k: int, check: Any, metrics: Optional[Mapping],
                     price: Any, prices: Optional[Mapping], run: Optional[RunProvenance],
                     seed: Optional[int], max_concurrency: int, timeout_s: Optional[float],
                     retries: int, backoff_s: float, progress: Optional[bool], refresh: bool,
                     retry_errored: bool, agent_id: Optional[str] = None,
                     labels: Optional[Labels] = None, segments: bool = False,
                     capture: Optional[str] = None, policy: Optional[TrialPolicy] = None) -> Any:
    """:func:`run_suite` of a persisted run, under the run's lease."""
    episodes, reuse = _trials_with_reuse(
        agent, specs, k=k, seed=seed, run=run, max_concurrency=max_concurrency,
        timeout_s=timeout_s, retries=retries, store=st, run_id=run_id, only=None,
        backoff_s=backoff_s, progress=progress, refresh=refresh, retry_errored=retry_errored,
        fingerprint=None, agent_id=agent_id, segments=segments, capture=capture, policy=policy)
    graded, reliability, report = graded_report(
        episodes, specs, k=k, check=check, metrics=metrics, price=price, prices=prices,
        seed=0 if seed is None else seed, run=run, labels=labels)
    if policy is not None:
        report = with_policy(report, policy, wanted=len(specs) * k, got=len(episodes))
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


def _record(st: Store, run_id: str, agent: Callable, tasks_doc: Mapping, episodes: list,
            scored: tuple, *, k: int, check: Any, metrics: Optional[Mapping], price: Any,
            prices: Optional[Mapping], run: Optional[RunProvenance], seed: Optional[int],
            runner: Mapping, gate: Optional[stagecache.GateRef] = None,
            reuse: Optional[identity.RunReuse] = None, labels: Optional[Labels] = None) -> None:
    """Record a persisted ``run_suite`` run as the pipeline records one: its stage documents
    and its manifest (``record.record_run``); ``gate`` a verdict already written
    (``record.write_gate``: the sequential gate's); ``reuse`` what the run kept of its stored
    trials (recorded on the episodes stage)."""
    graded, reliability, report = scored
    ep_ref = stagecache.write_doc(st, run_id, "episodes", stored_trials.episodes_json(episodes))
    if reuse is not None:
        ep_ref = dataclasses.replace(ep_ref, reused=reuse.kept, reused_from=run_id)
    refs = {"tasks": stagecache.write_tasks(st, run_id, tasks_doc),
            "prices": None if prices is None else stagecache.write_doc(st, run_id, "prices",
                                                                   documents.prices_doc(prices)),
            "episodes": ep_ref,
            "graded": stagecache.write_doc(st, run_id, "graded", stored_trials.episodes_json(graded)),
            "metrics": stagecache.write_doc(st, run_id, "metrics", reliability.to_dict()),
            "report": stagecache.write_doc(st, run_id, "report", report.to_dict()),
            "gate": gate,
            "labels": None if labels is None else stagecache.write_doc(st, run_id, "labels",
                                                                       labels_doc(labels))}
    inputs = RunInputs(k=k, seed=seed, run=None if run is None else run.to_dict(),
                       check=check if check is None or isinstance(check, str) else documents.UNSTORED,
                       price=None if price is None else documents.UNSTORED,
                       metrics=tuple(sorted(metrics or ())),
                       labels=None if labels is None else labels.digest)
    documents.record_run(st, run_id, refs=refs, inputs=inputs,  # agent: its import path when it has one
                      agent=identity.agent_name(agent),
                      parameters={"k": k, "seed": seed, **runner,
                                  **({"sequential": True} if gate is not None else {})},
                      orchestrator={"orchestrator": "ek_agents.runs.harness.run_suite"})


def _sequential_suite(agent: Callable, tasks: Any, *, baseline: Any, sequential: bool, k: int,
                      check: Any, metrics: Optional[Mapping], price: Any, prices: Optional[Mapping],
                      run: Optional[RunProvenance], seed: Optional[int], persisting: bool,
                      run_id: Optional[str], rootdir: Any, agent_id: Optional[str] = None,
                      **runner: Any) -> Any:
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
    tasks_doc = documents.tasks_doc(tasks) if st is not None else None  # unstorable tasks fail now
    ran: list = []
    # the agent is identified once, before its first trial: every batch resumes that run
    fp = None if st is None else trial_fingerprint(
        agent, specs, k=k, seed=seed, run=run, timeout_s=runner.get("timeout_s"),
        retries=runner.get("retries", 0), agent_id=agent_id, capture=runner.get("capture"))

    def run_batch(pairs: list) -> list:
        eps = run_trials(agent, specs, k=k, seed=seed, run=run, only=pairs, store=st,
                         run_id=run_id, fingerprint=fp, agent_id=agent_id, **runner)
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
