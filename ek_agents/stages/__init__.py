"""Stages: what turns a run's stored documents into the next ones, and what recomputes them.

``evaluate`` holds the stages of a run (grade, metrics, cost, gate, sequential gate) over
documents and their store-backed ``run_*`` steps; ``streaming`` a run's report from a stream
of trials with per-task state; ``audit`` (and ``_streamaudit`` for a run streamed from its
segments) the recomputation of a stored run; ``labelrun`` the labels and judge-correction
stages over a stored run; ``windowrun`` a monitor window's documents and their audit.

May import: ``records``, ``identity`` and the layers below them (see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

#: The package's public names -> the module of the package that defines each: the one export
#: list (``__all__`` and the lazy lookups come from it; tests/test_architecture.py holds the
#: ``TYPE_CHECKING`` block to it). A name resolves on first use: importing one module of the
#: package does not import the others.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["AuditResult", "differences", "expected_status"], "audit"),
    **dict.fromkeys(["grade_stage", "metrics_stage", "cost_stage", "gate_stage", "guarded_gate",
                    "sequential_stage", "regate", "gate_run", "record_suite", "record_prices",
                    "ingest_run", "ingest_suite", "run_grade", "run_metrics", "run_cost",
                    "run_gate", "run_sequential_gate", "write_gate"], "evaluate"),
    **dict.fromkeys(["labels_stage", "report_with_labels", "plan_run_labels", "plan_run",
                    "gate_with_labels", "run_labels", "run_judge_correct"], "labelrun"),
    **dict.fromkeys(["StreamingReport", "ExactSum", "stream_report", "merged_report",
                    "segment_summarizer"], "streaming"),
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # type checkers see the real types; at runtime the names resolve lazily
    from .audit import (AuditResult as AuditResult, differences as differences,
                        expected_status as expected_status)
    from .evaluate import (grade_stage as grade_stage, metrics_stage as metrics_stage,
                           cost_stage as cost_stage, gate_stage as gate_stage,
                           guarded_gate as guarded_gate, sequential_stage as sequential_stage,
                           regate as regate, gate_run as gate_run, record_suite as record_suite,
                           record_prices as record_prices, ingest_run as ingest_run,
                           ingest_suite as ingest_suite, run_grade as run_grade,
                           run_metrics as run_metrics, run_cost as run_cost, run_gate as run_gate,
                           run_sequential_gate as run_sequential_gate, write_gate as write_gate)
    from .labelrun import (labels_stage as labels_stage, report_with_labels as report_with_labels,
                           plan_run_labels as plan_run_labels, plan_run as plan_run,
                           gate_with_labels as gate_with_labels, run_labels as run_labels,
                           run_judge_correct as run_judge_correct)
    from .streaming import (StreamingReport as StreamingReport, ExactSum as ExactSum,
                            stream_report as stream_report, merged_report as merged_report,
                            segment_summarizer as segment_summarizer)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
