"""The ``evaluate-agent`` plan in this process, without Prefect: ``ek-agents run`` (and
``ingest``) when no Prefect API is configured.

Starting a Prefect server only to record a flow run costs more than the run itself (a migrated
temporary server is >= 6-7 s on a 2-core machine; the shop suite's 96 trials take under one).
So, with no API to record it, the CLI runs the same plan as ``flows/evaluate.py`` here, by
calling the same library functions its tasks call (each task in ``tasks/`` is one of them):

- ``stages.evaluate.record_suite`` (load-suite), or ``stages.evaluate.ingest_run`` + ``stages.evaluate.ingest_suite``
  for a recorded run;
- ``pipeline.plan_trials`` -> ``run_trial_chunk`` -> ``collect_episodes``: the same
  plan, identity rules (fingerprint, ``refresh``, ``retry_errored``) and stored trials; the
  chunks of the plan run as one chunk, on one asyncio loop, at most ``max_concurrency``
  trials at once (the flow fans chunks out on a task runner; here there is nothing to fan
  out to). ``sequential=True`` runs batch by batch as ``flows/sequential.py`` does;
- ``stages.evaluate.record_prices``, ``run_grade``, ``run_metrics``, ``run_cost``, ``run_gate``,
  ``record_run`` (the manifest: its orchestrator record says no orchestrator ran it,
  :data:`ORCHESTRATOR`), ``htmlreport.publish_run`` (its log lines to ``log``),
  ``pipeline.check_errors`` and ``raise_for_verdict``;

under the run's writer lease, as the flow holds it. The stage documents are the flow's, byte
for byte (``tests/pipeline/test_cli_local.py`` compares every artifact digest of the two
manifests); only the manifest's ``orchestrator`` and ``parameters`` differ. A ``task_runner``
other than threads (Dask) needs Prefect: :func:`evaluate_agent` refuses it.
"""
from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Optional

from .report import htmlreport
from .records import documents
from . import pipeline
from .stages import evaluate as stages
from .stages.judgerun import JudgeSpec, run_judge
from .base import RunProvenance
from .errors import InvalidInput
from .execution.harness import new_run_id
from .execution.limits import RunLimits, expected_trials, given_limits
from .records.manifest import RunInputs
from .pipeline.chunks import TrialChunk, TrialPlan, TrialRequest
from .records.stagecache import GateRef, StageRef
from .store import Store, acquire_lease, release_lease

__all__ = ["evaluate_agent", "run_trials", "sequential_trials", "ORCHESTRATOR"]

#: The manifest's orchestrator record of a run made here: no orchestrator recorded it.
ORCHESTRATOR = {"orchestrator": "none", "runner": "ek_agents.localrun"}

Log = Callable[[str], None]

_logger = logging.getLogger(__name__)


def _default_log(line: str) -> None:
    _logger.info("%s", line)


def evaluate_agent(suite: Optional[str] = None, agent: Optional[str] = None, k: int = 1,
                   seed: Optional[int] = 0, store: Optional[str] = None,
                   run_id: Optional[str] = None, baseline: Optional[str] = None,
                   prices: Optional[str] = None, ingest: Optional[str] = None,
                   ingest_path: Optional[str] = None, check: Optional[str] = None, model: str = "",
                   temperature: Optional[float] = None, simulator: str = "", scaffold: str = "",
                   tolerance: float = 0.0, cost_tolerance: float = 0.0,
                   chunk_size: Optional[int] = None, max_concurrency: int = 8,
                   timeout_s: Optional[float] = None, retries: int = 0,
                   task_runner: str = "threads", max_workers: int = 4,
                   dask_address: Optional[str] = None, refresh: bool = False,
                   retry_errored: bool = False, max_error_rate: Optional[float] = 0.5,
                   break_lease: bool = False, lease_wait_s: float = 0.0,
                   sequential: bool = False, agent_id: Optional[str] = None,
                   capture: Optional[str] = None, flush_s: float = 10.0,
                   provider_retry_s: Optional[float] = None,
                   trial_dollars: Optional[float] = None, trial_tokens: Optional[int] = None,
                   trial_calls: Optional[int] = None, max_dollars: Optional[float] = None,
                   judge: Optional[Mapping] = None, log: Optional[Log] = None) -> dict:
    """The ``evaluate-agent`` flow's plan, here and now (the flow's parameters, same meaning).

    Returns what the flow returns (``run_id``, ``store``, ``manifest`` key, ``results``,
    ``gate``) and raises what it raises: GateFailed, IncomparableRuns, TooManyErrors (after
    the manifest is written), RunIncomplete (provider errors left trials unresolved, or the run
    stopped at ``max_dollars``: after the manifest is written), RunMismatch, RunInUse, bad
    input. ``seed=None`` draws the seed
    from the clock (milliseconds since the epoch, as a scheduled flow run does from its start
    time); the seed used is in the manifest's inputs. ``max_workers`` is recorded and has no
    other effect (one loop runs every chunk); ``task_runner="dask"`` needs Prefect
    (InvalidInput). ``judge`` (``{model, base_url, rubric}``, a ``stages.judgerun.JudgeSpec``)
    grades with that endpoint judge instead of a checker. ``log`` takes the run-log lines
    (default: this module's logger, INFO).
    """
    parameters = {name: value for name, value in locals().items() if name != "log"}
    if task_runner != "threads" or dask_address:
        raise InvalidInput(f"task_runner={task_runner!r} (dask_address={dask_address!r}) fans "
                           "chunks out through Prefect: run it with a Prefect API configured "
                           "(PREFECT_API_URL, or ek-agents run --prefect-server), or use "
                           "task_runner='threads'")
    log = log or _default_log
    st = Store(store)
    run_id = run_id or new_run_id()
    parameters.update(store=st.url, run_id=run_id)
    pipeline.check_request(suite=suite, agent=agent, ingest=ingest, ingest_path=ingest_path,
                           sequential=sequential, baseline=baseline)
    seed = int(time.time() * 1000) if seed is None else seed
    judge_of = run_judge(judge, check=check, sequential=sequential)
    parameters["judge"] = judge_of.model_dump() if judge_of is not None else None
    limits = given_limits(prices=prices, provider_retry_s=provider_retry_s,
                          trial_dollars=trial_dollars, trial_tokens=trial_tokens,
                          trial_calls=trial_calls, max_dollars=max_dollars)
    lease = acquire_lease(st, run_id, wait_s=lease_wait_s, force=break_lease)
    try:
        return _evaluate(
            st, run_id, suite=suite, agent=agent, k=k, seed=seed, baseline=baseline,
            prices=prices, ingest=ingest, ingest_path=ingest_path, check=check, model=model,
            temperature=temperature, simulator=simulator, scaffold=scaffold,
            tolerance=tolerance, cost_tolerance=cost_tolerance, chunk_size=chunk_size,
            max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries,
            refresh=refresh, retry_errored=retry_errored, max_error_rate=max_error_rate,
            sequential=sequential, parameters=parameters, log=log, agent_id=agent_id,
            capture=capture, flush_s=flush_s, limits=limits, judge=judge_of)
    finally:
        release_lease(st, lease)


def _evaluate(st: Store, run_id: str, *, suite: Optional[str], agent: Optional[str], k: int,
              seed: int, baseline: Optional[str], prices: Optional[str], ingest: Optional[str],
              ingest_path: Optional[str], check: Optional[str], model: str,
              temperature: Optional[float], simulator: str, scaffold: str, tolerance: float,
              cost_tolerance: float, chunk_size: Optional[int], max_concurrency: int,
              timeout_s: Optional[float], retries: int, refresh: bool, retry_errored: bool,
              max_error_rate: Optional[float], sequential: bool, parameters: Mapping,
              log: Log, agent_id: Optional[str] = None,
              capture: Optional[str] = None, flush_s: float = 10.0, limits: Optional[RunLimits] = None,
              judge: Optional[JudgeSpec] = None) -> dict:
    """:func:`evaluate_agent`'s plan, under the run's lease (``flows/evaluate.py:_evaluate``,
    each task replaced by the library call it wraps)."""
    decided = None
    if ingest:
        episodes = stages.ingest_run(st, run_id, ingest, ingest_path)
        tasks = (stages.record_suite(st, run_id, suite) if suite
                 else stages.ingest_suite(st, run_id, episodes))
        run = RunProvenance(seed, temperature, model, simulator, "", scaffold).to_dict()
    else:
        tasks = stages.record_suite(st, run_id, suite)
        run = RunProvenance(seed, temperature, model, simulator, tasks.version, scaffold).to_dict()
        request = TrialRequest(
            store=st.url, run_id=run_id, tasks=tasks, agent=agent, k=k, seed=seed, run=run,
            chunk_size=chunk_size, max_concurrency=max_concurrency, timeout_s=timeout_s,
            retries=retries, refresh=refresh, retry_errored=retry_errored, check=check,
            agent_id=agent_id, capture=capture, flush_s=flush_s, limits=limits)
        if sequential:  # batches until the sequential gate has decided
            episodes, decided = sequential_trials(request, baseline, check, tolerance,
                                                  prices is not None)
        else:
            episodes = run_trials(request, log=log)
    price_list = stages.record_prices(st, run_id, prices)
    graded = stages.run_grade(st, run_id, episodes, tasks, check, judge)
    reliability = stages.run_metrics(st, run_id, graded, tasks, k=k, seed=seed, run=run)
    report = stages.run_cost(st, run_id, graded, reliability, price_list, seed=seed)
    verdict = decided or stages.run_gate(st, run_id, report, baseline, tolerance=tolerance,
                                         cost_tolerance=cost_tolerance)
    manifest = documents.record_run(
        st, run_id,
        refs={"tasks": tasks, "prices": price_list, "episodes": episodes, "graded": graded,
              "metrics": reliability, "report": report, "gate": verdict},
        inputs=RunInputs(k=k, seed=seed, check=check, run=run, tolerance=tolerance,
                         cost_tolerance=cost_tolerance,
                         graded_by=judge.graded_by() if judge is not None else None),
        agent=agent, source={"kind": ingest, "path": ingest_path} if ingest else None,
        parameters=dict(parameters), orchestrator=dict(ORCHESTRATOR))
    shown = htmlreport.publish_run(st, run_id)
    for line in shown.log:
        log(line)
    log(f"HTML report: {st.url}/{shown.html_key}")
    if not ingest:
        pipeline.check_errors(st.read_json(report.key), max_error_rate=max_error_rate,
                              run_id=run_id, expected_trials=expected_trials(st, tasks, k, limits))
    pipeline.raise_for_verdict(verdict and verdict.verdict)
    return {"run_id": run_id, "store": st.url, "manifest": manifest.key,
            "results": manifest.manifest["results"], "gate": manifest.manifest["gate"]}


def _one_loop(chunks: tuple[TrialChunk, ...]) -> tuple[TrialChunk, ...]:
    """The chunks as one (the first, holding every pair in plan order): one asyncio loop runs
    them all, ``max_concurrency`` trials at once, with no wait at a chunk's end."""
    if len(chunks) <= 1:
        return chunks
    return (dataclasses.replace(chunks[0], pairs=tuple(p for c in chunks for p in c.pairs)),)


def run_trials(request: TrialRequest, *, log: Log = _default_log) -> StageRef:
    """The evaluate flow's trial steps here (plan-trials, the chunks, collect-episodes): k
    trials per task (those not already stored), or the cached episodes when the same inputs
    ran before (then no agent is called)."""
    plan = pipeline.plan_trials(request)
    if plan.episodes is not None:
        log(f"run {request.run_id}: reused all {plan.reused} episodes from run "
            f"{plan.reused_from} (same fingerprint); no agent call")
        return plan.episodes
    log(f"run {request.run_id}: reused {plan.reused} stored episodes (from run "
        f"{plan.reused_from}), running {sum(len(c.pairs) for c in plan.chunks)} trials in "
        f"{len(plan.chunks)} chunks, in this process")
    plan = _as_one_chunk(plan)
    ran = [pipeline.run_trial_chunk(chunk) for chunk in plan.chunks]
    return pipeline.collect_episodes(plan, ran)


def _as_one_chunk(plan: TrialPlan) -> TrialPlan:
    return dataclasses.replace(plan, chunks=_one_loop(plan.chunks))


def sequential_trials(request: TrialRequest, baseline: str, check: Optional[str] = None,
                      tolerance: float = 0.0, priced: bool = False) -> tuple[StageRef, GateRef]:
    """The ``sequential-trials`` flow here: batch j (trial j of every task) at a time, the
    gate's look after each, until it has decided or k batches ran; ``(episodes, gate)``."""
    looks = 0
    for batch in range(request.k):
        for chunk in _one_loop(pipeline.plan_batch(request, batch)):
            pipeline.run_trial_chunk(chunk)
        looks = batch + 1
        look = pipeline.batch_look(request, baseline, looks, check=check,
                                   tolerance=tolerance, priced=priced)
        if look["decision"] != "continue":
            break
    episodes = pipeline.collect_batches(request, looks)
    verdict = stages.run_sequential_gate(Store(request.store), request.run_id, episodes,
                                         request.tasks, baseline, k=request.k, check=check,
                                         tolerance=tolerance, priced=priced)
    return episodes, verdict
