"""The bounded task runners a run can fan its trial chunks out on."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from prefect.context import FlowRunContext
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from ek_agents.errors import InvalidInput, MissingDependency, UnknownName, did_you_mean

RUNNERS = ("threads", "dask")


def make_task_runner(kind: str = "threads", *, max_workers: int = 4,
                     dask_address: Optional[str] = None, processes: bool = False) -> Any:
    """A task runner for the trial chunks, always bounded.

    - ``"threads"``: ``ThreadPoolTaskRunner(max_workers)`` (Prefect's default pool is unbounded).
    - ``"dask"`` with ``dask_address``: an existing Dask cluster (``tcp://host:8786``). Its
      workers must reach the Prefect API (a real server: ``PREFECT_API_URL``) and the store
      (a shared one, e.g. ``s3://``).
    - ``"dask"`` without an address: a LocalCluster of ``max_workers`` threads inside this
      process (works with Prefect's ephemeral API; worker processes could not reach it).
      ``processes=True``: a LocalCluster of ``max_workers`` worker processes, one thread
      each (CPU-bound trials: the GIL is per process); they need a real Prefect API
      (``PREFECT_API_URL`` in the environment) and a store every process can reach.
    """
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
        raise InvalidInput(f"max_workers must be an int >= 1, got {max_workers!r}")
    if kind == "threads":
        return ThreadPoolTaskRunner(max_workers=max_workers)
    if kind != "dask":
        raise UnknownName(f"unknown task_runner {kind!r}: use one of {list(RUNNERS)}"
                          f"{did_you_mean(str(kind), RUNNERS)}")
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise MissingDependency("task_runner='dask' needs prefect-dask: "
                                "pip install 'ek-agents[dask]'") from None
    if dask_address:
        return DaskTaskRunner(address=dask_address)
    if processes:
        return DaskTaskRunner(cluster_kwargs={"n_workers": max_workers, "threads_per_worker": 1,
                                              "processes": True, "dashboard_address": None})
    return DaskTaskRunner(cluster_kwargs={"n_workers": 1, "threads_per_worker": max_workers,
                                          "processes": False, "dashboard_address": None})


def as_data(value: Any, runner: Any = None) -> Any:
    """A task argument that is data, not a place to look for futures: ``quote(value)`` on the
    threads runner (``runner``, default the flow's), so Prefect does not walk it item by item
    (a chunk's thousand pairs, the chunks' stored trials: seconds at 20,000 trials); as is on
    any other runner (Dask unpacks the annotation into a plain tuple)."""
    if runner is None:
        ctx = FlowRunContext.get()
        runner = ctx.task_runner if ctx is not None else None
    if isinstance(runner, ThreadPoolTaskRunner):
        return quote(value)
    return value


def run_each(runner: Any, task: Any, chunks: Sequence[Any]) -> list:
    """``task(chunk)`` for every chunk, as task runs of the current flow run on ``runner``
    (started here and shut down before returning: its workers bound how many chunks run at
    once); their results in order. The first failed chunk's own error is raised (the others
    still running are cancelled as the runner shuts down).

    The chunks fan out from the flow run itself rather than from a sub-flow with this task
    runner: creating a sub-flow run costs seconds of orchestration at 20,000 trials
    (bench/PROFILE-flow.md, third pass)."""
    with runner:
        futures = [runner.submit(task, {"chunk": as_data(chunk, runner)}) for chunk in chunks]
        return [future.result() for future in futures]
