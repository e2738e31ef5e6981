"""Grade -> metrics -> cost -> gate: each one library call, cached on its inputs' digests."""
from __future__ import annotations

from typing import Optional

from prefect import task

from ek_agents import stages
from ek_agents.store import Store

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="grade", **TASK_DEFAULTS, **IO_RETRIES)
def grade(store_url: str, run_id: str, episodes: dict, tasks: dict, check: Optional[str]) -> dict:
    """``metrics.grade`` -> ``runs/<run_id>/graded.json``."""
    st = Store(store_url)
    digest = stages.input_digest("graded", episodes=episodes["sha256"], suite=tasks["digest"],
                                 check=check)
    return stages.stage_output(st, run_id, "graded", digest, lambda: stages.grade_stage(
        st.read_json(episodes["key"]), st.read_json(tasks["key"]), check=check))


@task(name="metrics", **TASK_DEFAULTS, **IO_RETRIES)
def metrics(store_url: str, run_id: str, graded: dict, tasks: dict, k: int, seed: int,
            run: dict) -> dict:
    """``reporting.reliability`` -> ``runs/<run_id>/metrics.json``."""
    st = Store(store_url)
    digest = stages.input_digest("metrics", graded=graded["sha256"], suite=tasks["digest"], k=k,
                                 seed=seed, run=run)
    return stages.stage_output(st, run_id, "metrics", digest, lambda: stages.metrics_stage(
        st.read_json(graded["key"]), st.read_json(tasks["key"]), k=k, seed=seed, run=run))


@task(name="cost", **TASK_DEFAULTS, **IO_RETRIES)
def cost(store_url: str, run_id: str, graded: dict, metrics: dict, prices: Optional[dict],
         seed: int) -> dict:
    """``cost.cost_report`` -> ``runs/<run_id>/report.json`` (the reliability report with cost)."""
    st = Store(store_url)
    digest = stages.input_digest("report", graded=graded["sha256"], metrics=metrics["sha256"],
                                 prices=prices and prices["sha256"], seed=seed)
    return stages.stage_output(st, run_id, "report", digest, lambda: stages.cost_stage(
        st.read_json(graded["key"]), st.read_json(metrics["key"]),
        prices and st.read_json(prices["key"]), seed=seed))


@task(name="gate", **TASK_DEFAULTS, **IO_RETRIES)
def gate(store_url: str, run_id: str, report: dict, baseline: Optional[str], tolerance: float,
         cost_tolerance: float) -> Optional[dict]:
    """``harness.agent_regression_gate`` against the named baseline -> ``runs/<run_id>/gate.json``.

    The baseline used is copied to ``runs/<run_id>/baseline.json`` (the audit re-checks the
    verdict against it). A baseline the gate refuses (incomparable, empty, malformed) gives
    a verdict with ``refused`` set: the flow records it in the manifest, then fails with it.
    """
    if baseline is None:
        return None
    st = Store(store_url)
    doc = stages.load_baseline(st, baseline)
    used = stages.write_doc(st, run_id, "baseline", doc)
    verdict = stages.guarded_gate(st.read_json(report["key"]), doc, tolerance=tolerance,
                                  cost_tolerance=cost_tolerance, baseline_name=baseline)
    return {**stages.write_doc(st, run_id, "gate", verdict), "baseline": used, "verdict": verdict}
