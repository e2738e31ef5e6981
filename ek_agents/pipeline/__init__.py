"""Pipeline: what the pipeline and the CLI need around the library, without Prefect.

``request`` checks a request, loads an agent from its import path and maps a verdict to an
exit code; ``chunks`` plans a run's trials as chunks and runs one; ``_batches`` runs the
sequential gate's batches; ``scalerun`` the ``evaluate-at-scale`` plan, chunk and finish;
``_errorrate`` when a run fails for its errored trials.

May import: ``execution``, ``stages``, ``records``, ``identity`` and the layers below them
(see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: The package's public names -> the module of the package that defines each: the one export
#: list (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it). A name resolves on first use: importing one module of the
#: package does not import the others.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["plan_batch", "batch_look", "collect_batches"], "_batches"),
    **dict.fromkeys(["check_errors", "MAX_ERROR_RATE"], "_errorrate"),
    **dict.fromkeys(["DEFAULT_CHUNKS", "plan_chunks", "TrialRequest", "TrialChunk", "TrialPlan",
                    "ChunkResult", "plan_trials", "cached_plan", "run_trial_chunk",
                    "collect_episodes", "chunk_workers", "request_fingerprint"], "chunks"),
    **dict.fromkeys(["check_request", "check_inputs", "MAX_K", "load_agent", "agent_fingerprint",
                    "raise_for_verdict"], "request"),
    **dict.fromkeys(["ScaleChunk", "ScalePlan", "ScaleChunkResult", "plan_scale",
                    "run_scale_chunk", "finish_scale", "SCALE_CHUNK"], "scalerun"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from ._batches import (plan_batch as plan_batch, batch_look as batch_look,
                           collect_batches as collect_batches)
    from ._errorrate import (check_errors as check_errors, MAX_ERROR_RATE as MAX_ERROR_RATE)
    from .chunks import (DEFAULT_CHUNKS as DEFAULT_CHUNKS, plan_chunks as plan_chunks,
                         TrialRequest as TrialRequest, TrialChunk as TrialChunk,
                         TrialPlan as TrialPlan, ChunkResult as ChunkResult,
                         plan_trials as plan_trials, cached_plan as cached_plan,
                         run_trial_chunk as run_trial_chunk, collect_episodes as collect_episodes,
                         chunk_workers as chunk_workers,
                         request_fingerprint as request_fingerprint)
    from .request import (check_request as check_request, check_inputs as check_inputs,
                          MAX_K as MAX_K, load_agent as load_agent,
                          agent_fingerprint as agent_fingerprint,
                          raise_for_verdict as raise_for_verdict)
    from .scalerun import (ScaleChunk as ScaleChunk, ScalePlan as ScalePlan,
                           ScaleChunkResult as ScaleChunkResult, plan_scale as plan_scale,
                           run_scale_chunk as run_scale_chunk, finish_scale as finish_scale,
                           SCALE_CHUNK as SCALE_CHUNK)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
