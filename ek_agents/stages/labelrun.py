"""Labels on stored runs: the report stage with a judge correction, what the audit and the
CLI (``ek-agents report / gate --labels``, ``plan-labels``, ``plan``) compute from a run's
stored documents.

Kept apart from :mod:`ek_agents.labels` (which the report builder, ``reporting``, imports)
because it reads stored runs through the ``runs`` modules (``documents``, ``stagecache``,
``stages``, ``baselines``), a layer above the report builder.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Optional

from ..base import Episode
from ..labels import (Labels, LabelPlan, judged, labels_doc, labels_of_doc, not_judged_error,
                      plan_labels, read_labels)
from ..reporting import ReliabilityReport, with_labels
from ..stats.budget import BudgetPlan, plan_budget
from ..stats.intervals import Z95
from ..stats.judgecorrect import rate_of_doc
from ..store import run_key
from ..records.baselines import load_baseline
from ..records.documents import (UNSTORED, episodes_doc, episodes_of, read_manifest, read_ref,
                                 read_run_doc, tasks_of)
from ..records.grading import grading_of
from ..records.manifest import report_markdown
from ..records.stagecache import StageRef, write_doc
from ..records.segments import RunSegments, iter_segments, segment_line_doc
from ..scoring.metrics import grade
from .evaluate import gate_run, regate
from .streaming import STREAMED

__all__ = ["labels_stage", "stored_run", "report_with_labels", "labeled_report_text",
           "plan_run_labels", "plan_labels_lines", "plan_run", "labels_for_width",
           "gate_with_labels", "run_labels", "run_judge_correct"]


def labels_stage(report: Mapping, graded: Mapping, labels: Any, tasks: Mapping, *,
                 check: Any) -> dict:
    """A report document with ``detail["judge_corrected"]`` recomputed from a run's graded
    and tasks documents and its labels (a ``labels`` run document, a :class:`Labels`, a path
    or bytes); ``check``: the checker's name, or how the run was graded
    (``grading.grading_of`` its manifest's inputs)."""
    labs = labels if isinstance(labels, Labels) else (
        labels_of_doc(labels) if isinstance(labels, Mapping) else read_labels(labels))
    rep = ReliabilityReport.from_dict(dict(report))
    return with_labels(rep, episodes_of(graded), labs, check=check,
                       tasks=tasks_of(tasks)).to_dict()


def stored_run(store: Any, run_id: str) -> tuple[Any, dict, list, dict]:
    """``(manifest, report, graded episodes, tasks document)`` of a stored run, the report
    verified against the manifest."""
    manifest = read_manifest(store, run_id)
    report = read_run_doc(store, manifest, "report")
    tasks = store.read_json(run_key(run_id, "tasks"))
    return manifest, report, _graded_doc(store, run_id, manifest, tasks), tasks


def _graded_doc(store: Any, run_id: str, manifest: Any, tasks: Mapping) -> dict:
    """A run's graded document; a run streamed from its segments has none: its segments'
    trials are graded here as the run graded them (the checker it recorded)."""
    key = run_key(run_id, "graded")
    if key in manifest.artifacts or manifest.parameters.get("layout") != STREAMED:
        return store.read_json(key)
    eps = [Episode.from_dict(segment_line_doc(t))
           for trials in iter_segments(store, RunSegments.load(store, run_id)) for t in trials]
    check = manifest.inputs.check if manifest.inputs.check is not None else tasks.get("checker")
    return episodes_doc(grade(eps, tasks_of(tasks), check=check))


def report_with_labels(store: Any, run_id: str, labels: Any) -> tuple[dict, dict]:
    """``(manifest, report)`` of a stored run with the judge correction from ``labels``."""
    manifest, _, labeled, _ = _labeled_run(store, run_id, labels)
    return manifest.to_dict(), labeled


def _labeled_run(store: Any, run_id: str, labels: Any) -> tuple[Any, dict, dict, dict]:
    """``(manifest, report, the report with the judge correction from labels, graded)`` of a
    stored run, each document read once."""
    manifest, report, graded, tasks = stored_run(store, run_id)
    labeled = labels_stage(report, graded, labels, tasks, check=grading_of(manifest.inputs))
    return manifest, report, labeled, graded


def labeled_report_text(store: Any, run_id: str, labels: Any, *, as_json: bool = False) -> str:
    """What ``ek-agents report RUN --labels FILE`` prints: the run's Markdown report (or its
    report document as JSON) with the judge correction from ``labels``."""
    manifest, report = report_with_labels(store, run_id, labels)
    return json.dumps(report, indent=2, sort_keys=True) + "\n" if as_json \
        else report_markdown(manifest, report)


def labels_for_width(report: Mapping, width: float, *, disagreement: float = 0.15) -> Optional[int]:
    """Labels a judge correction needs for a 95% interval ``width`` wide on a run like
    ``report``: the run's own (judge) variance takes what it takes, the labels the rest at the
    judge's disagreement rate with people (``disagreement``; 0.15 when not measured yet).
    None when the run's trials alone are already wider than ``width``."""
    lo, hi = report.get("success_ci") or (0.0, 1.0)
    v_run = ((hi - lo) / (2 * Z95)) ** 2
    v_target = (width / (2 * Z95)) ** 2
    if v_target <= v_run:
        return None
    return max(10, int(-(-disagreement // (v_target - v_run))))


def plan_run_labels(store: Any, run_id: str, n: int, *, path: Optional[str], seed: int = 0) -> LabelPlan:
    """:func:`~ek_agents.labels.plan_labels` of a stored run (its graded trials and tasks)."""
    return _plan_stored(stored_run(store, run_id), n, path=path, seed=seed)


def _plan_stored(run: tuple, n: int, *, path: Optional[str], seed: int) -> LabelPlan:
    """The labels plan of a stored run; refused (:class:`~ek_agents.labels.LabelError`) before
    anything is written when no judge graded the run (there is nothing for labels to correct)."""
    manifest, _, graded, tasks = run
    check = grading_of(manifest.inputs)
    if not judged(check, tasks_of(tasks)):
        raise not_judged_error(check, f"plan-labels {manifest.run_id}",
                               fix="its verdicts need no labels")
    return plan_labels(episodes_of(graded), n, seed=seed, path=path, tasks=tasks_of(tasks))


def plan_labels_lines(store: Any, run_id: str, n: int, *, path: str, seed: int = 0,
                      width: float = 0.1) -> list[str]:
    """What ``ek-agents plan-labels`` does and prints: :func:`plan_run_labels` written to
    ``path``, then how many labels a corrected interval ``width`` wide needs."""
    run = stored_run(store, run_id)
    plan = _plan_stored(run, n, path=path, seed=seed)
    need = labels_for_width(run[1], width)
    return [f"wrote {len(plan.trials)} trials of {plan.n_tasks} tasks to label to {path}: set each "
            f"line's \"gold\" to true or false, then `ek-agents report {run_id} --labels {path}`",
            f"a 95% interval {width:g} wide on the corrected success needs about {need} labels "
            "(assuming the judge disagrees with people on 15% of trials; `ek-agents plan RUN "
            "--width W --labels FILE` re-plans from the measured rate)" if need is not None else
            f"a 95% interval {width:g} wide needs more trials first: this run's own interval is "
            f"already wider (`ek-agents plan {run_id} --width {width:g}` says how many)"]


def plan_run(store: Any, run_id: str, *, labels: Any = None, **goal: Any) -> BudgetPlan:
    """:func:`~ek_agents.stats.budget.plan_budget` from a stored run as the pilot (with ``labels``:
    its judge correction too; without, only the run's manifest and report are read)."""
    if labels is None:
        return plan_budget(read_run_doc(store, read_manifest(store, run_id), "report"), **goal)
    _, report, labeled, _ = _labeled_run(store, run_id, labels)
    rate = rate_of_doc(labeled["detail"]["judge_corrected"]["rate"])
    return plan_budget(report, labels=rate, **goal)


def gate_with_labels(store: Any, run_id: str, baseline: str, labels: Any, *, tolerance: float = 0.0,
                     cost_tolerance: float = 0.0) -> dict:
    """``stages.gate_run`` of a stored run whose report is first corrected by ``labels``: the
    gate compares judge-corrected rates when the baseline's report carries labels too (and
    says why not otherwise). ``labels=None``: ``stages.gate_run`` itself."""
    if labels is None:
        return gate_run(store, run_id, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance)
    stored, _, report, graded = _labeled_run(store, run_id, labels)
    manifest = stored.to_dict()
    return regate(report, graded if manifest.get("sequential") else None,
                  load_baseline(store, baseline), manifest.get("gate"),
                  k=(manifest.get("inputs") or {}).get("k", 1), tolerance=tolerance,
                  cost_tolerance=cost_tolerance, baseline_name=baseline)


def run_labels(store: Any, run_id: str, path: Any) -> StageRef:
    """The pipeline's labels stage: read (and check) a labels file and store it as the run's
    ``labels`` document; the reference's ``input_digest`` is the labels' digest (what
    ``manifest.inputs.labels`` records)."""
    labs = read_labels(path)
    ref = write_doc(store, run_id, "labels", labels_doc(labs))
    return StageRef(stage=ref.stage, key=ref.key, sha256=ref.sha256, input_digest=labs.digest)


def run_judge_correct(store: Any, run_id: str, report: StageRef, graded: StageRef,
                      labels: StageRef, tasks: Any, check: Optional[str]) -> StageRef:
    """The pipeline's judge-correction stage: the run's report with
    ``detail["judge_corrected"]`` (:func:`labels_stage` of its stored report, graded episodes,
    labels and tasks), written over the run's report document."""
    doc = labels_stage(read_ref(store, report), read_ref(store, graded),
                       read_ref(store, labels), read_ref(store, tasks), check=check)
    return write_doc(store, run_id, "report", doc)
