"""``evaluate-agent``: run (or ingest) -> grade -> metrics -> cost -> gate -> manifest."""
from __future__ import annotations

from typing import Optional

from prefect import get_run_logger
from prefect.task_runners import ThreadPoolTaskRunner

from ek_agents import pipeline
from ek_agents.base import RunProvenance
from ek_agents.execution.harness import new_run_id
from ek_agents.execution.limits import RunLimits, expected_trials, given_limits
from ek_agents.records.manifest import RunInputs
from ek_agents.stages.judgerun import JudgeSpec, run_judge
from ek_agents.pipeline.chunks import TrialPlan, TrialRequest
from ek_agents.store import Store, acquire_lease, release_lease
from ek_agents_pipeline.tasks import (check_errors, collect_episodes, cost, gate,
                                      grade, ingest_bridge, ingest_tasks, judge_correct,
                                      load_labels, load_prices,
                                      load_suite, metrics, plan_trials, publish_report,
                                      run_trial_chunk, write_manifest)

from .context import evaluate_run_name, rename_flow_run, run_context, run_parameters, scheduled_seed
from .entry import entry_flow
from .outcome import fails_as_state
from .runners import as_data, make_task_runner, run_each
from .sequential import sequential_trials_flow

#: A flow run that has not finished after this long is failed (TimedOut) by Prefect.
EVALUATE_TIMEOUT_S = 6 * 3600


@entry_flow(name="evaluate-agent", persist_result=False, task_runner=ThreadPoolTaskRunner(max_workers=4),
      timeout_seconds=EVALUATE_TIMEOUT_S, flow_run_name=evaluate_run_name)
@fails_as_state
def evaluate_agent(suite: Optional[str] = None, agent: Optional[str] = None, k: int = 1,
                   seed: Optional[int] = 0, store: Optional[str] = None,
                   run_id: Optional[str] = None,
                   baseline: Optional[str] = None, prices: Optional[str] = None,
                   ingest: Optional[str] = None, ingest_path: Optional[str] = None,
                   check: Optional[str] = None, model: str = "", temperature: Optional[float] = None,
                   simulator: str = "", scaffold: str = "", tolerance: float = 0.0,
                   cost_tolerance: float = 0.0, chunk_size: Optional[int] = None,
                   max_concurrency: int = 8, timeout_s: Optional[float] = None, retries: int = 0,
                   task_runner: str = "threads", max_workers: int = 4,
                   dask_address: Optional[str] = None, refresh: bool = False,
                   retry_errored: bool = False, max_error_rate: Optional[float] = 0.5,
                   break_lease: bool = False, lease_wait_s: float = 0.0,
                   sequential: bool = False, agent_id: Optional[str] = None,
                   labels: Optional[str] = None,
                   capture: Optional[str] = None, flush_s: float = 10.0,
                   provider_retry_s: Optional[float] = None,
                   trial_dollars: Optional[float] = None, trial_tokens: Optional[int] = None,
                   trial_calls: Optional[int] = None,
                   max_dollars: Optional[float] = None,
                   judge: Optional[JudgeSpec] = None) -> dict:
    """Evaluate an agent on a suite (or a recorded run) and record everything in the store.

    ``suite`` + ``agent`` ("package.module:callable") run ``k`` trials per task; ``ingest``
    (inspect | tau-bench | messages) + ``ingest_path`` read a recorded run instead. Every
    stage's output is a cached artifact under ``store`` (default ``EK_STORE`` or ``./.ek``);
    the run's manifest records provenance, parameters, digests, results and the
    verdict against ``baseline``. A regression fails the flow run (GateFailed); so does a
    baseline the gate refuses (IncomparableRuns), after the manifest is written.
    ``max_concurrency`` bounds the agent calls in flight in the whole run: the chunks that
    run at once (``max_workers``, at most ``max_concurrency``) share it.

    Identity: the run's episodes are reused (from the stage cache, or this run id's stored
    trials) only under the same fingerprint -- agent, code, declared ``ek_config``, suite,
    k, seed, provenance, limits; the agent's code and state are digested
    (``agentid.agent_identity``), or ``agent_id`` names what identifies it. A resume with
    another fingerprint is refused (RunMismatch); so is a resume of a run whose agent held
    state that could not be digested (UnidentifiedAgent: pass ``agent_id``).
    ``refresh`` runs every trial afresh; ``retry_errored`` re-runs only errored trials.
    ``seed=None`` derives the seed from the flow run's scheduled start time (the nightly
    deployment: every night evaluates afresh); the seed used is in the manifest's inputs.
    More than ``max_error_rate`` errored trials fail the run (TooManyErrors) after the
    manifest is written (None: never). One writer per run id: the run holds its lease while
    it writes (RunInUse names another holder; ``lease_wait_s`` waits for it, ``break_lease``
    removes a dead writer's). ``sequential=True`` (with ``baseline``) runs the trials batch
    by batch and stops once the sequential gate has decided (``flows/sequential.py``); the
    manifest says why and at what cost. ``labels`` (a JSONL file of people's verdicts on some
    trials, for a run a judge graded: ``ek_agents.labels``) is stored with the run and corrects
    its success rate (``report.detail["judge_corrected"]``, raw beside corrected); the gate then
    compares corrected rates when the baseline has them.
    ``capture="otel"`` reads each trial's OpenTelemetry
    spans (the agent's instrumentations) into its episode: tool calls and per-model-call cost.
    ``flush_s``: a finished trial is stored (in a segment) within this many seconds, so a
    crashed run loses at most that long's worth of finished trials.
    Provider errors are retried for ``provider_retry_s`` seconds of waits per trial; the
    trial limits (``trial_dollars``, ``trial_tokens``, ``trial_calls``) and the run's
    ``max_dollars`` as ``ek_agents.execution.limits`` says; a run left incomplete (unresolved
    provider errors, stopped at its cap) fails with RunIncomplete after its manifest is written.
    ``judge`` (``{model, base_url, rubric}``: an LLM judge at an OpenAI-compatible endpoint,
    ``stages.judgerun``) grades the trials instead of a checker (not with ``check`` or
    ``sequential``); its identity keys the grade, the manifest records it as ``graded_by``, and
    its own calls are the report's ``cost.evaluation_dollars``.
    """
    st = Store(store).url
    if not run_id:
        run_id = new_run_id()
        rename_flow_run(evaluate_run_name(run_id))
    pipeline.check_request(suite=suite, agent=agent, ingest=ingest, ingest_path=ingest_path,
                           sequential=sequential, baseline=baseline)
    seed = scheduled_seed() if seed is None else seed
    judge = run_judge(judge, check=check, sequential=sequential)
    limits = given_limits(prices=prices, provider_retry_s=provider_retry_s,
                          trial_dollars=trial_dollars, trial_tokens=trial_tokens,
                          trial_calls=trial_calls, max_dollars=max_dollars)
    lease = acquire_lease(Store(st), run_id, wait_s=lease_wait_s, force=break_lease)
    try:
        return _evaluate(
            st, run_id, suite=suite, agent=agent, k=k, seed=seed, baseline=baseline,
            prices=prices, ingest=ingest, ingest_path=ingest_path, check=check, model=model,
            temperature=temperature, simulator=simulator, scaffold=scaffold,
            tolerance=tolerance, cost_tolerance=cost_tolerance, chunk_size=chunk_size,
            max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries,
            task_runner=task_runner, max_workers=max_workers, dask_address=dask_address,
            refresh=refresh, retry_errored=retry_errored, max_error_rate=max_error_rate,
            sequential=sequential, agent_id=agent_id, labels=labels, capture=capture,
            flush_s=flush_s, limits=limits, judge=judge)
    finally:
        release_lease(Store(st), lease)


def _evaluate(st: str, run_id: str, *, suite: Optional[str], agent: Optional[str], k: int,
              seed: int, baseline: Optional[str], prices: Optional[str], ingest: Optional[str],
              ingest_path: Optional[str], check: Optional[str], model: str,
              temperature: Optional[float], simulator: str, scaffold: str, tolerance: float,
              cost_tolerance: float, chunk_size: Optional[int], max_concurrency: int,
              timeout_s: Optional[float], retries: int, task_runner: str, max_workers: int,
              dask_address: Optional[str], refresh: bool, retry_errored: bool,
              max_error_rate: Optional[float], sequential: bool,
              agent_id: Optional[str] = None, labels: Optional[str] = None,
              capture: Optional[str] = None, flush_s: float = 10.0, limits: Optional[RunLimits] = None,
              judge: Optional[JudgeSpec] = None) -> dict:
    """:func:`evaluate_agent`'s plan, under the run's lease."""
    decided = None
    if ingest:
        episodes = ingest_bridge(st, run_id, ingest, ingest_path)
        tasks = load_suite(st, run_id, suite) if suite else ingest_tasks(st, run_id, episodes)
        run = RunProvenance(seed, temperature, model, simulator, "", scaffold).to_dict()
    else:
        tasks = load_suite(st, run_id, suite)
        run = RunProvenance(seed, temperature, model, simulator, tasks.version, scaffold).to_dict()
        workers = pipeline.chunk_workers(max_workers, max_concurrency)
        runner = make_task_runner(task_runner, max_workers=workers, dask_address=dask_address)
        request = TrialRequest(
            store=st, run_id=run_id, tasks=tasks, agent=agent, k=k, seed=seed, run=run,
            chunk_size=chunk_size, max_concurrency=max_concurrency, parallel_chunks=workers,
            timeout_s=timeout_s, retries=retries, refresh=refresh, retry_errored=retry_errored,
            check=check, agent_id=agent_id, capture=capture, flush_s=flush_s, limits=limits)
        if sequential:  # batches until the sequential gate has decided
            episodes, decided = sequential_trials_flow.with_options(task_runner=runner)(
                request, baseline, check, tolerance, prices is not None)
        else:  # the cached episodes, or the trials not stored yet in chunks on `runner`
            plan = plan_trials(request)
            _log_reuse(plan)
            episodes = plan.episodes or collect_episodes(
                as_data(plan), as_data(run_each(runner, run_trial_chunk, plan.chunks)))
    price_list = load_prices(st, run_id, prices)
    graded = grade(st, run_id, as_data(episodes), tasks, check, judge)
    reliability = metrics(st, run_id, graded, tasks, k, seed, run)
    report = cost(st, run_id, graded, reliability, price_list, seed)
    labels_ref = load_labels(st, run_id, labels) if labels else None
    if labels_ref is not None:  # people's verdicts correct the judge's
        report = judge_correct(st, run_id, report, graded, labels_ref, tasks,
                               judge.graded_by() if judge is not None else check)
    verdict = decided or gate(st, run_id, report, baseline, tolerance, cost_tolerance)
    manifest = write_manifest(
        st, run_id,
        refs={"tasks": tasks, "prices": price_list, "episodes": as_data(episodes),
              "graded": graded,
              "metrics": reliability, "report": report, "gate": verdict, "labels": labels_ref},
        inputs=RunInputs(k=k, seed=seed, check=check, run=run, tolerance=tolerance,
                         cost_tolerance=cost_tolerance,
                         labels=labels_ref.input_digest if labels_ref is not None else None,
                         graded_by=judge.graded_by() if judge is not None else None),
        agent=agent, source={"kind": ingest, "path": ingest_path} if ingest else None,
        parameters=run_parameters(), orchestrator=run_context())
    publish_report(st, run_id, as_data(manifest))  # its manifest lists every trial file
    if not ingest:
        check_errors(st, run_id, report, max_error_rate,
                     expected_trials(Store(st), tasks, k, limits))
    pipeline.raise_for_verdict(verdict and verdict.verdict)
    return {"run_id": run_id, "store": st, "manifest": manifest.key,
            "results": manifest.manifest["results"], "gate": manifest.manifest["gate"]}


def _log_reuse(plan: TrialPlan) -> None:
    """Say in the run log what the trials reused, and what they run."""
    req = plan.request
    if plan.episodes is not None:
        get_run_logger().info("run %s: reused all %d episodes from run %s (same fingerprint); "
                              "no agent call", req.run_id, plan.reused, plan.reused_from)
    else:
        get_run_logger().info("run %s: reused %d stored episodes (from run %s), running %d trials "
                              "in %d chunks", req.run_id, plan.reused, plan.reused_from,
                              sum(len(c.pairs) for c in plan.chunks), len(plan.chunks))
