"""``evaluate-agent``: run (or ingest) -> grade -> metrics -> cost -> gate -> manifest."""
from __future__ import annotations

from typing import Optional

from prefect import flow
from prefect.futures import wait
from prefect.task_runners import ThreadPoolTaskRunner

from ek_agents import pipeline_support
from ek_agents.base import RunProvenance
from ek_agents.harness import new_run_id
from ek_agents.manifest import RunInputs
from ek_agents.pipeline_support import TrialRequest
from ek_agents.record import StageRef
from ek_agents.store import Store
from ek_agents_pipeline.tasks import (collect_episodes, cost, gate, grade, ingest_bridge,
                                      ingest_tasks, load_prices, load_suite, metrics, plan_trials,
                                      publish_report, run_trial_chunk, write_manifest)

from .context import run_context, run_parameters
from .runners import make_task_runner


@flow(name="run-trials", persist_result=False)
def run_trials_flow(request: TrialRequest) -> StageRef:
    """k trials per task in chunks on this flow's task runner; cached episodes when the same
    inputs ran before (then no agent is called at all)."""
    plan = plan_trials(request)
    if plan.episodes is not None:
        return plan.episodes
    chunks = run_trial_chunk.map(plan.chunks)
    wait(chunks)
    chunks.result()  # a failed chunk fails the run with its own error (a StoreError: exit 3);
    # Prefect would otherwise skip collect-episodes and hand the next stage None
    return collect_episodes(plan, wait_for=chunks)


@flow(name="evaluate-agent", persist_result=False, task_runner=ThreadPoolTaskRunner(max_workers=4))
def evaluate_agent(suite: Optional[str] = None, agent: Optional[str] = None, k: int = 1,
                   seed: int = 0, store: Optional[str] = None, run_id: Optional[str] = None,
                   baseline: Optional[str] = None, prices: Optional[str] = None,
                   ingest: Optional[str] = None, ingest_path: Optional[str] = None,
                   check: Optional[str] = None, model: str = "", temperature: Optional[float] = None,
                   simulator: str = "", scaffold: str = "", tolerance: float = 0.0,
                   cost_tolerance: float = 0.0, chunk_size: Optional[int] = None,
                   max_concurrency: int = 8, timeout_s: Optional[float] = None, retries: int = 0,
                   task_runner: str = "threads", max_workers: int = 4,
                   dask_address: Optional[str] = None) -> dict:
    """Evaluate an agent on a suite (or a recorded run) and record everything in the store.

    ``suite`` + ``agent`` ("package.module:callable") run ``k`` trials per task; ``ingest``
    (inspect | tau-bench | messages) + ``ingest_path`` read a recorded run instead. Every
    stage's output is a cached artifact under ``store`` (default ``EK_STORE`` or ``./.ek``);
    the run's manifest records provenance, parameters, digests, results and the
    verdict against ``baseline``. A regression fails the flow run (GateFailed); so does a
    baseline the gate refuses (IncomparableRuns), after the manifest is written.
    """
    st = Store(store).url
    run_id = run_id or new_run_id()
    pipeline_support.check_request(suite=suite, agent=agent, ingest=ingest, ingest_path=ingest_path)
    if ingest:
        episodes = ingest_bridge(st, run_id, ingest, ingest_path)
        tasks = load_suite(st, run_id, suite) if suite else ingest_tasks(st, run_id, episodes)
        run = RunProvenance(seed, temperature, model, simulator, "", scaffold).to_dict()
    else:
        tasks = load_suite(st, run_id, suite)
        run = RunProvenance(seed, temperature, model, simulator, tasks.version, scaffold).to_dict()
        runner = make_task_runner(task_runner, max_workers=max_workers, dask_address=dask_address)
        episodes = run_trials_flow.with_options(task_runner=runner)(TrialRequest(
            store=st, run_id=run_id, tasks=tasks, agent=agent, k=k, seed=seed, run=run,
            chunk_size=chunk_size, max_concurrency=max_concurrency, timeout_s=timeout_s,
            retries=retries))
    price_list = load_prices(st, run_id, prices)
    graded = grade(st, run_id, episodes, tasks, check)
    reliability = metrics(st, run_id, graded, tasks, k, seed, run)
    report = cost(st, run_id, graded, reliability, price_list, seed)
    verdict = gate(st, run_id, report, baseline, tolerance, cost_tolerance)
    manifest = write_manifest(
        st, run_id,
        refs={"tasks": tasks, "prices": price_list, "episodes": episodes, "graded": graded,
              "metrics": reliability, "report": report, "gate": verdict},
        inputs=RunInputs(k=k, seed=seed, check=check, run=run, tolerance=tolerance,
                         cost_tolerance=cost_tolerance),
        agent=agent, source={"kind": ingest, "path": ingest_path} if ingest else None,
        parameters=run_parameters(), orchestrator=run_context())
    publish_report(st, run_id, manifest)
    pipeline_support.raise_for_verdict(verdict and verdict.verdict)
    return {"run_id": run_id, "store": st, "manifest": manifest.key,
            "results": manifest.manifest["results"], "gate": manifest.manifest["gate"]}
