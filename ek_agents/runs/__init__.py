"""Runs: running an agent's trials and recording the run, in one import.

The work is done in four packages, each named for what it holds (docs/ARCHITECTURE.md draws
them): ``identity`` (what identifies an agent), ``records`` (a run's stored documents, stage
cache, trials, segments, baselines), ``stages`` (the stages over a run's documents, the
streamed report, the audit, the labels), ``execution`` (the harness, the trial runner, the
writer threads, the OpenTelemetry capture) and ``pipeline`` (requests, chunks, batches and the
run at scale for the pipeline and the CLI). This package re-exports their most used names, and
keeps the module paths ``ek_agents.runs.manifest`` and ``ek_agents.runs.otelcapture`` (the
README names them) as the very modules ``ek_agents.records.manifest`` and
``ek_agents.execution.otelcapture``.

May import: the packages above and every layer below them (see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports, module_aliases

#: The package's public names -> the package that defines each: the one export list
#: (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it).
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["AgentIdentity", "agent_identity"], "..identity"),
    **dict.fromkeys(["RunManifest", "RunInputs", "input_digest", "report_markdown",
                     "RunFingerprint", "claim_run", "StageRef", "EpisodesRef", "SuiteRef",
                     "GateRef", "ManifestRef", "record_run", "read_manifest", "read_run_doc",
                     "run_report", "episodes_of", "tasks_of", "StoredTrial", "read_trials",
                     "RunSegments", "SegmentWriter", "read_segment", "iter_segments",
                     "save_agent_baseline", "load_agent_baseline", "agent_regression_gate",
                     "load_baseline", "promote", "promote_baseline"], "..records"),
    **dict.fromkeys(["grade_stage", "metrics_stage", "cost_stage", "gate_stage",
                     "sequential_stage", "regate", "gate_run", "run_grade", "run_metrics",
                     "run_cost", "run_gate", "AuditResult", "StreamingReport", "stream_report",
                     "labels_stage", "gate_with_labels"], "..stages"),
    **dict.fromkeys(["run_suite", "run_trials", "store_trials", "build_report", "new_run_id",
                     "trial_fingerprint", "TrialRunner", "OtelCapture", "TrialSpans",
                     "make_capture"], "..execution"),
    **dict.fromkeys(["check_request", "check_inputs", "load_agent", "raise_for_verdict",
                     "TrialRequest", "TrialChunk", "TrialPlan", "ChunkResult", "plan_trials",
                     "run_trial_chunk", "collect_episodes", "check_errors", "ScalePlan",
                     "ScaleChunk", "plan_scale", "run_scale_chunk", "finish_scale"], "..pipeline"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from ..identity import AgentIdentity as AgentIdentity, agent_identity as agent_identity
    from ..records import (RunManifest as RunManifest, RunInputs as RunInputs,
                           input_digest as input_digest, report_markdown as report_markdown,
                           RunFingerprint as RunFingerprint, claim_run as claim_run,
                           StageRef as StageRef, EpisodesRef as EpisodesRef, SuiteRef as SuiteRef,
                           GateRef as GateRef, ManifestRef as ManifestRef,
                           record_run as record_run, read_manifest as read_manifest,
                           read_run_doc as read_run_doc, run_report as run_report,
                           episodes_of as episodes_of, tasks_of as tasks_of,
                           StoredTrial as StoredTrial, read_trials as read_trials,
                           RunSegments as RunSegments, SegmentWriter as SegmentWriter,
                           read_segment as read_segment, iter_segments as iter_segments,
                           save_agent_baseline as save_agent_baseline,
                           load_agent_baseline as load_agent_baseline,
                           agent_regression_gate as agent_regression_gate,
                           load_baseline as load_baseline, promote as promote,
                           promote_baseline as promote_baseline)
    from ..stages import (grade_stage as grade_stage, metrics_stage as metrics_stage,
                          cost_stage as cost_stage, gate_stage as gate_stage,
                          sequential_stage as sequential_stage, regate as regate,
                          gate_run as gate_run, run_grade as run_grade,
                          run_metrics as run_metrics, run_cost as run_cost, run_gate as run_gate,
                          AuditResult as AuditResult, StreamingReport as StreamingReport,
                          stream_report as stream_report, labels_stage as labels_stage,
                          gate_with_labels as gate_with_labels)
    from ..execution import (run_suite as run_suite, run_trials as run_trials,
                             store_trials as store_trials, build_report as build_report,
                             new_run_id as new_run_id, trial_fingerprint as trial_fingerprint,
                             TrialRunner as TrialRunner, OtelCapture as OtelCapture,
                             TrialSpans as TrialSpans, make_capture as make_capture)
    from ..pipeline import (check_request as check_request, check_inputs as check_inputs,
                            load_agent as load_agent, raise_for_verdict as raise_for_verdict,
                            TrialRequest as TrialRequest, TrialChunk as TrialChunk,
                            TrialPlan as TrialPlan, ChunkResult as ChunkResult,
                            plan_trials as plan_trials, run_trial_chunk as run_trial_chunk,
                            collect_episodes as collect_episodes, check_errors as check_errors,
                            ScalePlan as ScalePlan, ScaleChunk as ScaleChunk,
                            plan_scale as plan_scale, run_scale_chunk as run_scale_chunk,
                            finish_scale as finish_scale)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

#: Module paths the README names, kept as their homes themselves (no file here).
ALIASES: dict[str, str] = {"manifest": "ek_agents.records.manifest",
                           "otelcapture": "ek_agents.execution.otelcapture"}
module_aliases(__name__, ALIASES)
