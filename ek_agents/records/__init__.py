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
    **dict.fromkeys(["BASELINE_KIND", "save_agent_baseline", "load_agent_baseline",
                    "agent_regression_gate", "load_baseline", "promote", "promote_baseline"], "baselines"),
    **dict.fromkeys(["UNSTORED", "SOURCES", "source_digest", "episodes_doc", "episodes_of",
                    "tasks_doc", "tasks_of", "tasks_for_episodes", "read_source", "prices_doc",
                    "prices_of", "results_of", "record_run", "read_manifest", "read_run_doc",
                    "read_ref", "check_run_doc", "run_report", "verified_bytes"], "documents"),
    **dict.fromkeys(["RunFingerprint", "RunReuse", "run_fingerprint", "agent_config",
                    "check_fingerprint", "claim_run", "fingerprint_key"], "fingerprint"),
    **dict.fromkeys(["RunManifest", "RunInputs", "input_digest", "report_markdown",
                    "report_rows", "TasksDocument", "EpisodesDocument", "GateDocument",
                    "BaselineDocument", "check_document", "check_manifest", "check_report",
                    "check_baseline", "DOCUMENTS"], "manifest"),
    **dict.fromkeys(["SEGMENT_TRIALS", "SEGMENT_BYTES", "SegmentWriter", "RunSegments",
                    "SegmentTrial", "read_segment", "iter_segments"], "segments"),
    **dict.fromkeys(["StageRef", "EpisodesRef", "SuiteRef", "GateRef", "ManifestRef", "lookup",
                    "cached", "cache_origin", "stage_output", "reused_output", "write_output",
                    "index_output", "write_doc", "write_tasks"], "stagecache"),
    **dict.fromkeys(["StoredTrial", "read_trials", "read_episodes", "episodes_bytes",
                    "trial_grader", "forget_episodes"], "trials"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .baselines import (BASELINE_KIND as BASELINE_KIND,
                            save_agent_baseline as save_agent_baseline,
                            load_agent_baseline as load_agent_baseline,
                            agent_regression_gate as agent_regression_gate,
                            load_baseline as load_baseline, promote as promote,
                            promote_baseline as promote_baseline)
    from .documents import (UNSTORED as UNSTORED, SOURCES as SOURCES,
                            source_digest as source_digest, episodes_doc as episodes_doc,
                            episodes_of as episodes_of, tasks_doc as tasks_doc,
                            tasks_of as tasks_of, tasks_for_episodes as tasks_for_episodes,
                            read_source as read_source, prices_doc as prices_doc,
                            prices_of as prices_of, results_of as results_of,
                            record_run as record_run, read_manifest as read_manifest,
                            read_run_doc as read_run_doc, read_ref as read_ref,
                            check_run_doc as check_run_doc, run_report as run_report,
                            verified_bytes as verified_bytes)
    from .fingerprint import (RunFingerprint as RunFingerprint, RunReuse as RunReuse,
                              run_fingerprint as run_fingerprint, agent_config as agent_config,
                              check_fingerprint as check_fingerprint, claim_run as claim_run,
                              fingerprint_key as fingerprint_key)
    from .manifest import (RunManifest as RunManifest, RunInputs as RunInputs,
                           input_digest as input_digest, report_markdown as report_markdown,
                           report_rows as report_rows, TasksDocument as TasksDocument,
                           EpisodesDocument as EpisodesDocument, GateDocument as GateDocument,
                           BaselineDocument as BaselineDocument, check_document as check_document,
                           check_manifest as check_manifest, check_report as check_report,
                           check_baseline as check_baseline, DOCUMENTS as DOCUMENTS)
    from .segments import (SEGMENT_TRIALS as SEGMENT_TRIALS, SEGMENT_BYTES as SEGMENT_BYTES,
                           SegmentWriter as SegmentWriter, RunSegments as RunSegments,
                           SegmentTrial as SegmentTrial, read_segment as read_segment,
                           iter_segments as iter_segments)
    from .stagecache import (StageRef as StageRef, EpisodesRef as EpisodesRef,
                             SuiteRef as SuiteRef, GateRef as GateRef, ManifestRef as ManifestRef,
                             lookup as lookup, cached as cached, cache_origin as cache_origin,
                             stage_output as stage_output, reused_output as reused_output,
                             write_output as write_output, index_output as index_output,
                             write_doc as write_doc, write_tasks as write_tasks)
    from .trials import (StoredTrial as StoredTrial, read_trials as read_trials,
                         read_episodes as read_episodes, episodes_bytes as episodes_bytes,
                         trial_grader as trial_grader, forget_episodes as forget_episodes)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
