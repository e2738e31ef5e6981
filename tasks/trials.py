"""Run an agent over a suite: k trials per task, in chunks, persisted as they finish.

A run of n tasks x k trials is planned into about ``stages.DEFAULT_CHUNKS`` chunks (2000 trials
-> 16 task runs, not 2000); each chunk is one ``harness.run_trials(only=chunk)`` call that
stores every episode as it finishes, so a killed run resumes where it stopped (a Prefect
retry of a chunk re-runs only its missing trials). The episodes are cached on the digest of
everything that decides them: a second identical run makes no agent call at all.
"""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents import stages
from ek_agents.base import RunProvenance
from ek_agents.harness import run_trials
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


def _trials(st: Store, run_id: str, tasks: dict, agent: str, *, k: int, seed: Optional[int],
            run: dict, max_concurrency: int, timeout_s: Optional[float], retries: int,
            only: Optional[list] = None) -> list:
    return run_trials(stages.load_agent(agent), stages.tasks_of(st.read_json(tasks["key"])), k=k,
                      seed=seed, run=RunProvenance.from_dict(run), max_concurrency=max_concurrency,
                      timeout_s=timeout_s, retries=retries, store=st, run_id=run_id, only=only,
                      progress=False)


@task(name="plan-trials", **TASK_DEFAULTS, **IO_RETRIES)
def plan_trials(store_url: str, run_id: str, tasks: dict, agent: str, k: int, seed: Optional[int],
                run: dict, chunk_size: Optional[int], timeout_s: Optional[float],
                retries: int) -> dict:
    """The run's input digest, and either the cached episodes or the chunks to run."""
    st = Store(store_url)
    digest = stages.input_digest("episodes", suite=tasks["digest"], agent=agent,
                                 agent_code=stages.agent_fingerprint(agent), k=k, seed=seed,
                                 run=run, timeout_s=timeout_s, retries=retries)
    reused = stages.stage_output(st, run_id, "episodes", digest)  # a cache hit, or None
    if reused is not None:
        return {"digest": digest, "chunks": [], "episodes": reused}
    ids = [t["task_id"] for t in st.read_json(tasks["key"])["tasks"]]
    return {"digest": digest, "episodes": None,
            "chunks": stages.plan_chunks(ids, k=k, chunk_size=chunk_size)}


@task(name="run-trial-chunk", task_run_name="trials-{run_id}-{index}", **TASK_DEFAULTS,
      **IO_RETRIES)
def run_trial_chunk(store_url: str, run_id: str, index: int, tasks: dict, agent: str, k: int,
                    seed: Optional[int], run: dict, pairs: list, max_concurrency: int,
                    timeout_s: Optional[float], retries: int) -> int:
    """``harness.run_trials(only=pairs)``: run (or resume) one chunk; the number of episodes."""
    return len(_trials(Store(store_url), run_id, tasks, agent, k=k, seed=seed, run=run,
                       max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries,
                       only=pairs))


@task(name="collect-episodes", **TASK_DEFAULTS, **IO_RETRIES)
def collect_episodes(store_url: str, run_id: str, tasks: dict, agent: str, k: int,
                     seed: Optional[int], run: dict, digest: str, max_concurrency: int,
                     timeout_s: Optional[float], retries: int) -> dict:
    """Every stored trial of the run (``harness.run_trials`` loads them all, runs none) ->
    ``runs/<run_id>/episodes.json``, indexed under the run's input digest."""
    st = Store(store_url)
    episodes = _trials(st, run_id, tasks, agent, k=k, seed=seed, run=run,
                       max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries)
    return stages.stage_output(st, run_id, "episodes", digest,
                               lambda: stages.episodes_doc(episodes))
