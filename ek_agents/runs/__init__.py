"""Runs: running trials and recording a run -- documents, stage cache, identity, baselines, audit.

Owns the harness that runs an agent over a suite (``harness``) and its trial runner
(``trialrunner``: the event loop, timeouts, retries, writer threads), the stage cache and stage
references (``stagecache``), a run's stored documents and manifest reads (``documents``), the
library stages and their store-backed ``run_*`` steps (``stages``), baselines by name
(``baselines``), run fingerprints and the run claim (``identity``), an agent's identity by its
code and state (``agentid``) over the canonical walk that digests them (``agentstate``), stored
trials (``trials``), the in-process episode memo (``memo``), the manifest shapes
(``manifest``), the audit that recomputes a run (``audit``, and ``streamaudit`` for a run
streamed from its segments), the judge correction of a stored run by people's labels and the
planners over a stored run (``labelrun``), the pipeline's helpers (``pipeline_support``) and
when a run fails for its errors (``errorrate``), the OpenTelemetry capture of each trial's
spans (``otelcapture``: ``capture="otel"``), and a run at scale (issue 27): trials stored in
segments (``segments``), metrics and report streamed from them (``streaming``), the
``evaluate-at-scale`` plan (``scalerun``; its ``summary_basis`` is reached through the module:
the package's is ``streaming``'s).

May import: every layer below it -- ``errors`` .. ``store``, ``bridge``, ``stats``, ``scoring``,
``cost``, ``suite``, the evaluation layer (``reporting``, ``gate``, ``sequential``)
(see ``ek_agents.layers``). The spec's ``ek_agents.harness`` and the old ``ek_agents.record``
and ``ek_agents.manifest`` paths are thin re-exports of the modules here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: public name -> the module of this package that defines it (names resolve lazily:
#: importing one module of the package does not import the others)
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["AgentIdentity", "agent_identity", "identity_note"], "agentid"),
    **dict.fromkeys(["AuditResult", "differences", "expected_status", "REQUIRED", "KNOWN"], "audit"),
    **dict.fromkeys(["BASELINE_KIND", "save_agent_baseline", "baseline_document",
                    "load_agent_baseline", "stored_baseline", "agent_regression_gate",
                    "load_baseline", "promote", "promote_baseline"], "baselines"),
    **dict.fromkeys(["UNSTORED", "source_digest", "episodes_doc", "episodes_doc_bytes",
                    "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes", "SOURCES",
                    "read_source", "prices_doc", "prices_of", "results_of", "trial_digests",
                    "record_run", "read_manifest", "check_run_doc", "read_run_doc", "read_ref",
                    "verified_bytes", "run_report"], "documents"),
    **dict.fromkeys(["run_suite", "run_trials", "store_trials", "build_report", "new_run_id",
                    "trial_fingerprint", "AgentGateResult"], "harness"),
    **dict.fromkeys(["EK_CONFIG", "RunFingerprint", "RunReuse", "agent_config", "agent_name",
                    "code_digest", "trial_matches", "errored", "fingerprint_key", "check_fingerprint", "claim_run"], "identity"),
    **dict.fromkeys(["RunManifest", "RunInputs", "package_info", "git_sha", "input_digest",
                    "utc_now", "finite", "as_plain", "report_rows", "report_markdown",
                    "TasksDocument", "EpisodesDocument", "GateDocument", "BaselineDocument",
                    "check_document", "check_manifest", "check_report", "check_baseline",
                    "DOCUMENTS", "REPORT_COUNTS", "reuse_lines", "sequential_line"], "manifest"),
    **dict.fromkeys(["labels_stage", "stored_run", "report_with_labels", "plan_run_labels",
                    "plan_run", "labels_for_width", "gate_with_labels", "run_labels",
                    "run_judge_correct"], "labelrun"),
    **dict.fromkeys(["check_request", "check_inputs", "MAX_K", "load_agent", "agent_fingerprint",
                    "plan_chunks", "raise_for_verdict", "DEFAULT_CHUNKS", "TrialRequest",
                    "TrialChunk", "TrialPlan", "ChunkResult", "plan_trials", "cached_plan",
                    "run_trial_chunk", "collect_episodes", "chunk_workers", "request_fingerprint",
                    "plan_batch", "batch_look", "collect_batches"], "pipeline_support"),
    **dict.fromkeys(["check_errors", "MAX_ERROR_RATE"], "errorrate"),
    **dict.fromkeys(["OtelCapture", "TrialSpans", "make_capture", "CAPTURES"], "otelcapture"),
    **dict.fromkeys(["ScaleChunk", "ScalePlan", "ScaleChunkResult", "plan_scale",
                    "run_scale_chunk", "finish_scale", "SCALE_CHUNK", "held_bitmaps", "LAYOUT"], "scalerun"),
    **dict.fromkeys(["SEGMENT_TRIALS", "SEGMENT_BYTES", "ZSTD_LEVEL", "SegmentEntry", "WriterIndex",
                    "SegmentTrial", "SegmentWriter", "RunSegments", "read_segment", "encode_segment",
                    "decode_segment", "pack_pairs", "unpack_pairs", "new_writer_name",
                    "iter_segments", "segment_line_doc", "owner"], "segments"),
    **dict.fromkeys(["STREAMED", "AUDIT_SAMPLE", "segment_episodes", "audit_streamed"], "streamaudit"),
    **dict.fromkeys(["StageRef", "EpisodesRef", "SuiteRef", "GateRef", "ManifestRef", "lookup",
                    "lookup_bytes", "cached", "put_indexed", "cache_origin", "stage_output",
                    "reused_output", "write_output", "index_output", "write_doc", "write_tasks",
                    "doc_bytes"], "stagecache"),
    **dict.fromkeys(["grade_stage", "graded_episodes", "metrics_stage", "metrics_report",
                    "cost_stage", "cost_report_doc", "gate_stage", "guarded_gate",
                    "sequential_stage", "regate", "gate_run", "record_suite", "record_prices",
                    "ingest_run", "ingest_suite", "run_grade", "run_metrics", "run_cost",
                    "run_gate", "run_sequential_gate", "write_gate"], "stages"),
    **dict.fromkeys(["StreamingReport", "ExactSum", "stream_report", "segment_summarizer",
                    "summary_basis", "merged_report"], "streaming"),
    **dict.fromkeys(["TrialRunner", "run_coroutine", "EPISODE_DEPTH"], "trialrunner"),
    **dict.fromkeys(["StoredTrial", "read_trials", "episodes_bytes", "episodes_json", "graded_digest",
                    "EPISODES_MEMO_DOCS", "EPISODES_MEMO_EPISODES", "GRADED_MEMO_DOCS",
                    "PLAIN_RUNS", "remember_episodes", "PlainEpisodeJson", "trial_grader",
                    "remember_graded", "take_graded", "forget_episodes", "read_episodes"], "trials"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .agentid import (AgentIdentity as AgentIdentity, agent_identity as agent_identity,
        identity_note as identity_note)
    from .audit import (AuditResult as AuditResult, differences as differences,
        expected_status as expected_status, REQUIRED as REQUIRED, KNOWN as KNOWN)
    from .baselines import (BASELINE_KIND as BASELINE_KIND,
        save_agent_baseline as save_agent_baseline, baseline_document as baseline_document,
        load_agent_baseline as load_agent_baseline, stored_baseline as stored_baseline,
        agent_regression_gate as agent_regression_gate, load_baseline as load_baseline,
        promote as promote, promote_baseline as promote_baseline)
    from .labelrun import (labels_stage as labels_stage, stored_run as stored_run,
        report_with_labels as report_with_labels, plan_run_labels as plan_run_labels,
        plan_run as plan_run, labels_for_width as labels_for_width,
        gate_with_labels as gate_with_labels, run_labels as run_labels,
        run_judge_correct as run_judge_correct)
    from .documents import (UNSTORED as UNSTORED, source_digest as source_digest,
        episodes_doc as episodes_doc, episodes_doc_bytes as episodes_doc_bytes,
        episodes_of as episodes_of, tasks_doc as tasks_doc, tasks_of as tasks_of,
        tasks_for_episodes as tasks_for_episodes, SOURCES as SOURCES, read_source as read_source,
        prices_doc as prices_doc, prices_of as prices_of, results_of as results_of,
        trial_digests as trial_digests, record_run as record_run, read_manifest as read_manifest,
        check_run_doc as check_run_doc, read_run_doc as read_run_doc, read_ref as read_ref,
        verified_bytes as verified_bytes, run_report as run_report)
    from .harness import (run_suite as run_suite, run_trials as run_trials,
        store_trials as store_trials, build_report as build_report, new_run_id as new_run_id,
        trial_fingerprint as trial_fingerprint, AgentGateResult as AgentGateResult)
    from .identity import (EK_CONFIG as EK_CONFIG, RunFingerprint as RunFingerprint,
        RunReuse as RunReuse, agent_config as agent_config, agent_name as agent_name,
        code_digest as code_digest, trial_matches as trial_matches, errored as errored,
        fingerprint_key as fingerprint_key, check_fingerprint as check_fingerprint,
        claim_run as claim_run)
    from .manifest import (RunManifest as RunManifest, RunInputs as RunInputs,
        package_info as package_info, git_sha as git_sha, input_digest as input_digest,
        utc_now as utc_now, finite as finite, as_plain as as_plain, report_rows as report_rows,
        report_markdown as report_markdown, TasksDocument as TasksDocument,
        EpisodesDocument as EpisodesDocument, GateDocument as GateDocument,
        BaselineDocument as BaselineDocument, check_document as check_document,
        check_manifest as check_manifest, check_report as check_report,
        check_baseline as check_baseline, DOCUMENTS as DOCUMENTS, REPORT_COUNTS as REPORT_COUNTS,
        reuse_lines as reuse_lines, sequential_line as sequential_line)
    from .pipeline_support import (check_request as check_request, check_inputs as check_inputs,
        MAX_K as MAX_K, load_agent as load_agent, agent_fingerprint as agent_fingerprint,
        plan_chunks as plan_chunks, raise_for_verdict as raise_for_verdict,
        DEFAULT_CHUNKS as DEFAULT_CHUNKS, TrialRequest as TrialRequest, TrialChunk as TrialChunk,
        TrialPlan as TrialPlan, ChunkResult as ChunkResult, plan_trials as plan_trials,
        cached_plan as cached_plan, run_trial_chunk as run_trial_chunk,
        collect_episodes as collect_episodes, chunk_workers as chunk_workers,
        request_fingerprint as request_fingerprint, plan_batch as plan_batch,
        batch_look as batch_look, collect_batches as collect_batches)
    from .errorrate import check_errors as check_errors, MAX_ERROR_RATE as MAX_ERROR_RATE
    from .otelcapture import (OtelCapture as OtelCapture, TrialSpans as TrialSpans,
        make_capture as make_capture, CAPTURES as CAPTURES)
    from .scalerun import (ScaleChunk as ScaleChunk, ScalePlan as ScalePlan,
        ScaleChunkResult as ScaleChunkResult, plan_scale as plan_scale,
        run_scale_chunk as run_scale_chunk, finish_scale as finish_scale,
        SCALE_CHUNK as SCALE_CHUNK, held_bitmaps as held_bitmaps, LAYOUT as LAYOUT)
    from .segments import (SEGMENT_TRIALS as SEGMENT_TRIALS, SEGMENT_BYTES as SEGMENT_BYTES,
        ZSTD_LEVEL as ZSTD_LEVEL, SegmentEntry as SegmentEntry, WriterIndex as WriterIndex,
        SegmentTrial as SegmentTrial, SegmentWriter as SegmentWriter, RunSegments as RunSegments,
        read_segment as read_segment, encode_segment as encode_segment,
        decode_segment as decode_segment, pack_pairs as pack_pairs, unpack_pairs as unpack_pairs,
        new_writer_name as new_writer_name, iter_segments as iter_segments,
        segment_line_doc as segment_line_doc, owner as owner)
    from .stagecache import (StageRef as StageRef, EpisodesRef as EpisodesRef,
        SuiteRef as SuiteRef, GateRef as GateRef, ManifestRef as ManifestRef, lookup as lookup,
        lookup_bytes as lookup_bytes, cached as cached, put_indexed as put_indexed,
        cache_origin as cache_origin, stage_output as stage_output, reused_output as reused_output,
        write_output as write_output, index_output as index_output, write_doc as write_doc,
        write_tasks as write_tasks, doc_bytes as doc_bytes)
    from .stages import (grade_stage as grade_stage, graded_episodes as graded_episodes,
        metrics_stage as metrics_stage, metrics_report as metrics_report, cost_stage as cost_stage,
        cost_report_doc as cost_report_doc, gate_stage as gate_stage, guarded_gate as guarded_gate,
        sequential_stage as sequential_stage, regate as regate, gate_run as gate_run,
        record_suite as record_suite, record_prices as record_prices, ingest_run as ingest_run,
        ingest_suite as ingest_suite, run_grade as run_grade, run_metrics as run_metrics,
        run_cost as run_cost, run_gate as run_gate, run_sequential_gate as run_sequential_gate,
        write_gate as write_gate)
    from .streamaudit import (STREAMED as STREAMED, AUDIT_SAMPLE as AUDIT_SAMPLE,
        segment_episodes as segment_episodes, audit_streamed as audit_streamed)
    from .streaming import (StreamingReport as StreamingReport, ExactSum as ExactSum,
        stream_report as stream_report, segment_summarizer as segment_summarizer,
        summary_basis as summary_basis, merged_report as merged_report)
    from .trialrunner import (TrialRunner as TrialRunner, run_coroutine as run_coroutine,
        EPISODE_DEPTH as EPISODE_DEPTH)
    from .trials import (StoredTrial as StoredTrial, read_trials as read_trials,
        episodes_bytes as episodes_bytes, episodes_json as episodes_json,
        graded_digest as graded_digest,
        EPISODES_MEMO_DOCS as EPISODES_MEMO_DOCS, EPISODES_MEMO_EPISODES as EPISODES_MEMO_EPISODES,
        GRADED_MEMO_DOCS as GRADED_MEMO_DOCS, PLAIN_RUNS as PLAIN_RUNS,
        remember_episodes as remember_episodes, PlainEpisodeJson as PlainEpisodeJson,
        trial_grader as trial_grader, remember_graded as remember_graded,
        take_graded as take_graded, forget_episodes as forget_episodes,
        read_episodes as read_episodes)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
