"""Tasks of a run at scale (``flows/scale.py``): plan from the segment index, one chunk per
Dask task, the report merged from the segments' summaries. Each is one ``ek_agents.pipeline.scalerun``
call; each takes and returns small typed JSON (a chunk's pairs are packed ranges)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from prefect import task

from ek_agents.pipeline import scalerun
from ek_agents.pipeline.chunks import TrialRequest
from ek_agents.records.stagecache import ManifestRef, StageRef
from ek_agents.pipeline.scalerun import ScaleChunk, ScaleChunkResult, ScalePlan

from .common import IO_RETRIES, TASK_DEFAULTS


@task(name="plan-scale", **TASK_DEFAULTS, **IO_RETRIES)
def plan_scale(request: TrialRequest, prices: Optional[StageRef]) -> ScalePlan:
    """``scalerun.plan_scale``: the trials no indexed segment holds, in chunks."""
    return scalerun.plan_scale(request, prices)


@task(name="run-scale-chunk", task_run_name="segments-{chunk.request.run_id}-{chunk.index}",
      **TASK_DEFAULTS, **IO_RETRIES)
def run_scale_chunk(chunk: ScaleChunk) -> ScaleChunkResult:
    """``scalerun.run_scale_chunk``: one chunk into segments (a retry skips what is stored)."""
    return scalerun.run_scale_chunk(chunk)


@task(name="finish-scale", **TASK_DEFAULTS, **IO_RETRIES)
def finish_scale(plan: ScalePlan, prices: Optional[StageRef],
                 results: Sequence[ScaleChunkResult], parameters: dict,
                 orchestrator: dict) -> ManifestRef:
    """``scalerun.finish_scale``: metrics + report from the segments, then the manifest."""
    return scalerun.finish_scale(plan, prices, results, parameters=parameters,
                                 orchestrator=orchestrator)
