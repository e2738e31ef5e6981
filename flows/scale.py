"""``evaluate-at-scale``: a run of many trials on a Dask cluster, stored in segments, its
report streamed.

suite -> plan (segment index) -> chunks on Dask workers (each writes its own segments to the
shared store) -> metrics + report merged from the segments' summaries -> manifest. Point it at
a real cluster with ``dask_address="tcp://scheduler:8786"`` and a shared bucket
(``store="s3://bucket/prefix"``); every worker needs ``PREFECT_API_URL`` (a real Prefect
server, not the ephemeral one), the agent's module importable, and the bucket's credentials
(``AWS_*``). Without an address it starts a ``LocalCluster`` of ``n_workers`` processes.
"""
from __future__ import annotations

from typing import Optional

from prefect import get_run_logger

from ek_agents.base import RunProvenance
from ek_agents.execution.harness import new_run_id
from ek_agents.pipeline.chunks import TrialRequest
from ek_agents.pipeline.request import check_request
from ek_agents.store import Store, acquire_lease, release_lease
from ek_agents_pipeline.tasks.inputs import load_prices, load_suite
from ek_agents_pipeline.tasks.scale import finish_scale, plan_scale, run_scale_chunk

from .context import run_context, run_parameters
from .entry import entry_flow
from .outcome import fails_as_state
from .runners import make_task_runner, run_each


#: A flow run that has not finished after this long is failed (TimedOut) by Prefect.
SCALE_TIMEOUT_S = 24 * 3600


@entry_flow(name="evaluate-at-scale", persist_result=False, timeout_seconds=SCALE_TIMEOUT_S)
@fails_as_state
def evaluate_at_scale(suite: Optional[str] = None, agent: Optional[str] = None, k: int = 1, seed: Optional[int] = 0,
                      agent_id: Optional[str] = None,
                      store: Optional[str] = None, run_id: Optional[str] = None,
                      prices: Optional[str] = None, check: Optional[str] = None,
                      model: str = "", chunk_size: Optional[int] = None,
                      max_concurrency: int = 8, timeout_s: Optional[float] = None,
                      retries: int = 0, n_workers: int = 2, dask_address: Optional[str] = None,
                      refresh: bool = False, break_lease: bool = False,
                      flush_s: float = 10.0) -> dict:
    """Run ``k`` trials per task of ``suite`` with ``agent`` on a Dask cluster; record the run.

    The trials not stored yet (no indexed segment holds them: a killed run resumes, an
    all-stored one runs nothing) run in chunks of whole tasks, one Dask task each; each worker
    stores its own segments. ``max_concurrency`` is the trials in flight per chunk. The report
    is merged from the segments' per-segment summaries; the manifest lists every segment.
    ``flush_s``: a finished trial is stored within this many seconds.
    """
    st = Store(store).url
    run_id = run_id or new_run_id()
    check_request(suite=suite, agent=agent, ingest=None, ingest_path=None)
    lease = acquire_lease(Store(st), run_id, force=break_lease)
    try:
        tasks = load_suite(st, run_id, suite)
        price_list = load_prices(st, run_id, prices)
        run = RunProvenance(seed, None, model, "", tasks.version, "").to_dict()
        request = TrialRequest(store=st, run_id=run_id, tasks=tasks, agent=agent,
                               agent_id=agent_id, k=k, seed=seed,
                               run=run, chunk_size=chunk_size,
                               max_concurrency=max_concurrency, parallel_chunks=1,
                               timeout_s=timeout_s, retries=retries, refresh=refresh,
                               check=check, flush_s=flush_s)
        plan = plan_scale(request, price_list)
        get_run_logger().info("run %s: %d of %d trials stored, %d to run in %d chunks",
                              run_id, plan.held, plan.total, plan.total - plan.held,
                              len(plan.chunks))
        results = []
        if plan.chunks:
            runner = make_task_runner("dask", max_workers=n_workers, dask_address=dask_address,
                                      processes=True)
            results = run_each(runner, run_scale_chunk, plan.chunks)
        manifest = finish_scale(plan, price_list, results, run_parameters(), run_context())
    finally:
        release_lease(Store(st), lease)
    return {"run_id": run_id, "store": st, "manifest": manifest.key,
            "results": manifest.manifest["results"], "trials": plan.total, "held": plan.held,
            "ran": sum(r.ran for r in results), "chunks": len(plan.chunks),
            "workers": sorted({f"{r.host}:{r.pid}" for r in results}),
            "worker_rss_mb": max((r.rss_mb for r in results), default=0.0),
            "puts": sum(r.puts for r in results),
            "chunk_cpu_s": sum(r.cpu_s for r in results),
            "chunk_wall_s": sum(r.wall_s for r in results)}
