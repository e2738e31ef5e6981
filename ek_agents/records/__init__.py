"""Records: the stored record of a run -- its documents, stage cache, trials, segments, baselines.

``manifest`` holds the shapes of the stored documents (``RunManifest``, ``RunInputs``) and the
report text; ``stagecache`` the stage references and the content-addressed stage outputs;
``documents`` a run's documents and their verified reads (``record_run``, ``run_report``);
``fingerprint`` a run's fingerprint and the claim of its stored trials (``claim_run``);
``trials`` the stored trials and the in-process episode memo; ``segments`` trial segments
and the per-writer segment index; ``baselines`` baselines by name.

May import: ``identity`` and the layers below it (see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: The package's public names -> the module of the package that defines each: the one export
#: list (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it). A name resolves on first use: importing one module of the
#: package does not import the others.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["BASELINE_KIND", "save_agent_baseline", "baseline_document",
                    "load_agent_baseline", "stored_baseline", "agent_regression_gate",
                    "load_baseline", "promote", "promote_baseline"], "baselines"),
    **dict.fromkeys(["UNSTORED", "source_digest", "episodes_doc", "episodes_doc_bytes",
                    "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes", "SOURCES",
                    "read_source", "prices_doc", "prices_of", "results_of", "trial_digests",
                    "record_run", "read_manifest", "check_run_doc", "read_run_doc", "read_ref",
                    "verified_bytes", "run_report"], "documents"),
    **dict.fromkeys(["EK_CONFIG", "RunFingerprint", "RunReuse", "agent_config", "agent_name",
                    "code_digest", "trial_matches", "errored", "fingerprint_key",
                    "check_fingerprint", "claim_run"], "fingerprint"),
    **dict.fromkeys(["RunManifest", "RunInputs", "package_info", "git_sha", "input_digest",
                    "utc_now", "finite", "as_plain", "report_rows", "report_markdown",
                    "TasksDocument", "EpisodesDocument", "GateDocument", "BaselineDocument",
                    "check_document", "check_manifest", "check_report", "check_baseline",
                    "DOCUMENTS", "REPORT_COUNTS", "reuse_lines", "sequential_line"], "manifest"),
    **dict.fromkeys(["SEGMENT_TRIALS", "SEGMENT_BYTES", "ZSTD_LEVEL", "SegmentEntry",
                    "WriterIndex", "SegmentTrial", "SegmentWriter", "RunSegments",
                    "read_segment", "encode_segment", "decode_segment", "pack_pairs",
                    "unpack_pairs", "new_writer_name", "iter_segments", "segment_line_doc",
                    "owner"], "segments"),
    **dict.fromkeys(["StageRef", "EpisodesRef", "SuiteRef", "GateRef", "ManifestRef", "lookup",
                    "lookup_bytes", "cached", "put_indexed", "cache_origin", "stage_output",
                    "reused_output", "write_output", "index_output", "write_doc", "write_tasks",
                    "doc_bytes"], "stagecache"),
    **dict.fromkeys(["StoredTrial", "read_trials", "episodes_bytes", "episodes_json",
                    "graded_digest", "EPISODES_MEMO_DOCS", "EPISODES_MEMO_EPISODES",
                    "GRADED_MEMO_DOCS", "PLAIN_RUNS", "remember_episodes", "PlainEpisodeJson",
                    "trial_grader", "remember_graded", "take_graded", "forget_episodes",
                    "read_episodes"], "trials"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .baselines import (BASELINE_KIND as BASELINE_KIND,
                            save_agent_baseline as save_agent_baseline,
                            baseline_document as baseline_document,
                            load_agent_baseline as load_agent_baseline,
                            stored_baseline as stored_baseline,
                            agent_regression_gate as agent_regression_gate,
                            load_baseline as load_baseline, promote as promote,
                            promote_baseline as promote_baseline)
    from .documents import (UNSTORED as UNSTORED, source_digest as source_digest,
                            episodes_doc as episodes_doc,
                            episodes_doc_bytes as episodes_doc_bytes, episodes_of as episodes_of,
                            tasks_doc as tasks_doc, tasks_of as tasks_of,
                            tasks_for_episodes as tasks_for_episodes, SOURCES as SOURCES,
                            read_source as read_source, prices_doc as prices_doc,
                            prices_of as prices_of, results_of as results_of,
                            trial_digests as trial_digests, record_run as record_run,
                            read_manifest as read_manifest, check_run_doc as check_run_doc,
                            read_run_doc as read_run_doc, read_ref as read_ref,
                            verified_bytes as verified_bytes, run_report as run_report)
    from .fingerprint import (EK_CONFIG as EK_CONFIG, RunFingerprint as RunFingerprint,
                              RunReuse as RunReuse, agent_config as agent_config,
                              agent_name as agent_name, code_digest as code_digest,
                              trial_matches as trial_matches, errored as errored,
                              fingerprint_key as fingerprint_key,
                              check_fingerprint as check_fingerprint, claim_run as claim_run)
    from .manifest import (RunManifest as RunManifest, RunInputs as RunInputs,
                           package_info as package_info, git_sha as git_sha,
                           input_digest as input_digest, utc_now as utc_now, finite as finite,
                           as_plain as as_plain, report_rows as report_rows,
                           report_markdown as report_markdown, TasksDocument as TasksDocument,
                           EpisodesDocument as EpisodesDocument, GateDocument as GateDocument,
                           BaselineDocument as BaselineDocument, check_document as check_document,
                           check_manifest as check_manifest, check_report as check_report,
                           check_baseline as check_baseline, DOCUMENTS as DOCUMENTS,
                           REPORT_COUNTS as REPORT_COUNTS, reuse_lines as reuse_lines,
                           sequential_line as sequential_line)
    from .segments import (SEGMENT_TRIALS as SEGMENT_TRIALS, SEGMENT_BYTES as SEGMENT_BYTES,
                           ZSTD_LEVEL as ZSTD_LEVEL, SegmentEntry as SegmentEntry,
                           WriterIndex as WriterIndex, SegmentTrial as SegmentTrial,
                           SegmentWriter as SegmentWriter, RunSegments as RunSegments,
                           read_segment as read_segment, encode_segment as encode_segment,
                           decode_segment as decode_segment, pack_pairs as pack_pairs,
                           unpack_pairs as unpack_pairs, new_writer_name as new_writer_name,
                           iter_segments as iter_segments, segment_line_doc as segment_line_doc,
                           owner as owner)
    from .stagecache import (StageRef as StageRef, EpisodesRef as EpisodesRef,
                             SuiteRef as SuiteRef, GateRef as GateRef, ManifestRef as ManifestRef,
                             lookup as lookup, lookup_bytes as lookup_bytes, cached as cached,
                             put_indexed as put_indexed, cache_origin as cache_origin,
                             stage_output as stage_output, reused_output as reused_output,
                             write_output as write_output, index_output as index_output,
                             write_doc as write_doc, write_tasks as write_tasks,
                             doc_bytes as doc_bytes)
    from .trials import (StoredTrial as StoredTrial, read_trials as read_trials,
                         episodes_bytes as episodes_bytes, episodes_json as episodes_json,
                         graded_digest as graded_digest, EPISODES_MEMO_DOCS as EPISODES_MEMO_DOCS,
                         EPISODES_MEMO_EPISODES as EPISODES_MEMO_EPISODES,
                         GRADED_MEMO_DOCS as GRADED_MEMO_DOCS, PLAIN_RUNS as PLAIN_RUNS,
                         remember_episodes as remember_episodes,
                         PlainEpisodeJson as PlainEpisodeJson, trial_grader as trial_grader,
                         remember_graded as remember_graded, take_graded as take_graded,
                         forget_episodes as forget_episodes, read_episodes as read_episodes)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
