"""``ek_agents.manifest``: a documented path (README: the stored documents' models), kept as a thin re-export of ``ek_agents.runs.manifest``.

New code imports from the home module; this file only re-exports its public names
(see docs/ARCHITECTURE.md)."""
from __future__ import annotations

from .runs.manifest import (RunManifest as RunManifest, RunInputs as RunInputs,
    package_info as package_info, git_sha as git_sha, input_digest as input_digest,
    utc_now as utc_now, finite as finite, as_plain as as_plain, report_rows as report_rows,
    report_markdown as report_markdown, TasksDocument as TasksDocument,
    EpisodesDocument as EpisodesDocument, GateDocument as GateDocument,
    BaselineDocument as BaselineDocument, check_document as check_document,
    check_manifest as check_manifest, check_report as check_report,
    check_baseline as check_baseline, DOCUMENTS as DOCUMENTS, REPORT_COUNTS as REPORT_COUNTS,
    reuse_lines as reuse_lines, sequential_line as sequential_line)

__all__ = ["RunManifest", "RunInputs", "package_info", "git_sha", "input_digest", "utc_now",
           "finite", "as_plain", "report_rows", "report_markdown", "TasksDocument",
           "EpisodesDocument", "GateDocument", "BaselineDocument", "check_document",
           "check_manifest", "check_report", "check_baseline", "DOCUMENTS", "REPORT_COUNTS",
           "reuse_lines", "sequential_line"]
