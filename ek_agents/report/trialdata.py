"""A stored run read trial by trial: what the data frames, the export and the trial browser show.

:func:`open_run` reads a run's manifest, tasks, price catalog and labels (each checked against
the manifest's sha256) and says where its trials are: in segments (``runs.segments``: read one
segment at a time, each line graded as the run graded it, so a million-trial run streams in
bounded memory; a run a judge graded takes each trial's recorded verdict from its graded
document, never a checker's grade) or, for a run stored one file per trial, in its graded
document (the episodes the report was computed from). :meth:`StoredRun.batches` yields the graded episodes in
batches; :func:`trial_row`, :func:`call_rows` and :func:`step_rows` turn one into the rows of
the trials, calls and steps tables (columns: :data:`TRIAL_COLUMNS`, :data:`CALL_COLUMNS`,
:data:`STEP_COLUMNS`, :data:`RUN_COLUMNS`).

Dollars are billed as the run's report billed them (``cost.episode_dollars`` /
``cost.call_dollars`` with the run's stored catalog); None when the run stored no catalog (or
was priced with one ``ModelPrice``, which a run cannot store) or the trial carries no Cost.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Optional

from ..base import Episode, TaskSpec
from ..core import canonical_json
from ..cost import call_dollars, episode_dollars, episode_model
from ..errors import DigestMismatch, InvalidInput
from ..labels import judged, labels_of_doc
from ..records import documents
from ..records.manifest import RunManifest
from ..records.segments import RunSegments, iter_segments, segment_line_doc, stored_pair
from ..records.stagecache import StageRef
from ..records.trials import read_episodes
from ..scoring.metrics import grade, is_errored
from ..store import Store, open_store, run_key
from .runsummary import RunSummary, summarize_run

__all__ = ["StoredRun", "open_run", "TrialsUnreadable", "trial_row", "call_rows", "step_rows", "run_row", "as_text",
           "RUN_COLUMNS", "TRIAL_COLUMNS", "CALL_COLUMNS", "STEP_COLUMNS", "LIMIT_KINDS", "BATCH"]

#: Trials per batch read from a run stored one file per trial (a segment is its own batch).
BATCH = 4096

#: Error kinds that are a limit the run set, not the agent failing (``limits_hit``).
LIMIT_KINDS = frozenset({"timeout", "max_steps", "max_turns", "max_tokens", "budget", "limit"})

#: ``(column, arrow type, what it holds)`` of each table; the frames and the export keep
#: these names, this order and these types (nullable where the text says "null").
RUN_COLUMNS: tuple = (
    ("run_id", "string", "the run id"),
    ("agent", "string", "the agent (import path or source kind)"),
    ("model", "string", "the run's model (its provenance); empty when not recorded"),
    ("suite", "string", "the suite's name"),
    ("suite_version", "string", "the suite's version"),
    ("simulator", "string", "the user simulator of the provenance"),
    ("scaffold", "string", "the scaffold of the provenance"),
    ("created_at", "string", "when the run was recorded (ISO 8601, UTC)"),
    ("k", "int32", "trials per task"),
    ("n_tasks", "int64", "tasks"),
    ("n_trials", "int64", "trials"),
    ("n_success", "int64", "successful trials"),
    ("success_rate", "float64", "the report's success rate"),
    ("dollars", "float64", "the report's total dollars (null: unknown)"),
    ("cost_per_success", "float64", "the report's dollars per success (null: unknown; inf: none)"),
    ("layout", "string", "where its trials were read from: segments or graded"),
    ("manifest_sha256", "string", "sha256 of the run's manifest.json as read"),
)
TRIAL_COLUMNS: tuple = (
    ("run_id", "string", "the run id"),
    ("task_id", "string", "the task"),
    ("slice", "string", "the task's slice (null: none)"),
    ("trial", "int32", "the trial index within its task"),
    ("success", "bool", "graded success (an errored trial is a failure)"),
    ("judge_verdict", "bool", "the judge's verdict when a judge graded the run (null otherwise)"),
    ("label", "bool", "a person's verdict from the run's labels (null: not labelled)"),
    ("errored", "bool", "the trial ended with an error (meta.error)"),
    ("error_kind", "string", "the error's kind (null: no error)"),
    ("error", "string", "the error message (null: no error)"),
    ("limit_hit", "string", "the limit that ended the trial: a timeout, a step or token cap (null: none)"),
    ("model", "string", "the episode's model (run.model, else meta.model; null: none)"),
    ("dollars", "float64", "the trial's dollars as the report billed them (null: unknown)"),
    ("input_tokens", "int64", "all prompt tokens (cached included)"),
    ("cached_input_tokens", "int64", "prompt tokens read from the cache"),
    ("cache_write_tokens", "int64", "prompt tokens written to the cache"),
    ("output_tokens", "int64", "all completion tokens (reasoning included)"),
    ("reasoning_tokens", "int64", "completion tokens spent reasoning"),
    ("total_tokens", "int64", "input + output tokens"),
    ("latency_s", "float64", "wall-clock seconds (null: not recorded)"),
    ("retries", "int32", "transient retries"),
    ("n_steps", "int32", "tool calls"),
    ("n_step_errors", "int32", "tool calls that returned an error"),
    ("n_model_calls", "int32", "model calls recorded one by one (0: one usage tally)"),
    ("output", "string", "the final output as JSON text"),
)
CALL_COLUMNS: tuple = (
    ("run_id", "string", "the run id"),
    ("task_id", "string", "the task"),
    ("trial", "int32", "the trial index"),
    ("call", "int32", "the call's position in the trial (0-based)"),
    ("per_call", "bool", "true: a model call recorded by itself; false: the trial's usage "
                         "recorded as one tally, billed at its episode model"),
    ("model", "string", "the model that answered (the episode's model for a tally)"),
    ("requested_model", "string", "the model the call asked for (null: not known)"),
    ("provider", "string", "who served it (empty: not known)"),
    ("input_tokens", "int64", "all prompt tokens"),
    ("cached_input_tokens", "int64", "prompt tokens read from the cache"),
    ("cache_write_tokens", "int64", "prompt tokens written to the cache"),
    ("output_tokens", "int64", "all completion tokens"),
    ("reasoning_tokens", "int64", "completion tokens spent reasoning"),
    ("cached_known", "bool", "false: cached tokens not reported (dollars an upper bound)"),
    ("dollars", "float64", "the call's dollars (null: unknown)"),
)
STEP_COLUMNS: tuple = (
    ("run_id", "string", "the run id"),
    ("task_id", "string", "the task"),
    ("trial", "int32", "the trial index"),
    ("step", "int32", "the step's position in the trajectory (0-based)"),
    ("tool", "string", "the tool called"),
    ("args", "string", "its arguments as JSON text"),
    ("observation", "string", "what came back, as JSON text (null: nothing)"),
    ("error", "string", "the tool's error (null: none)"),
)


class TrialsUnreadable(InvalidInput):
    """A stored run whose trials cannot be read back graded: no segments its checker can grade
    again (a callable check) and no graded document."""


def as_text(value: Any) -> Optional[str]:
    """A stored value as JSON text (sorted keys); a string as itself; None stays None."""
    if value is None or isinstance(value, str):
        return value
    try:
        return canonical_json(value).decode("ascii")
    except (TypeError, ValueError):
        return json.dumps(value, sort_keys=True, default=str)


class StoredRun:
    """One stored run, opened by :func:`open_run`: its manifest, summary, tasks, price catalog,
    labels, and where its trials are (``layout``: ``"segments"`` or ``"graded"``)."""

    def __init__(self, store: Store, manifest: RunManifest, summary: RunSummary,
                 tasks: dict[str, TaskSpec], check: Any, prices: Optional[dict],
                 labels: dict, layout: str, segments: Optional[RunSegments],
                 read: dict[str, str], manifest_sha256: str,
                 verdicts: Optional[dict] = None) -> None:
        self.store, self.manifest, self.summary = store, manifest, summary
        self.run_id = manifest.run_id
        self.tasks, self.check, self.prices, self.labels = tasks, check, prices, labels
        self.layout, self.segments = layout, segments
        self.read = read
        """``{key: sha256}`` (as the manifest lists them) of every run document and segment
        index the trials are read from."""
        self.manifest_sha256 = manifest_sha256
        self.judged = judged(check, tasks) or verdicts is not None
        self.verdicts = verdicts
        """``{(task_id, trial): success}`` the judge recorded (a judge-graded run read from its
        segments); None when the segments are graded by the run's checker."""
        self._price_memo: dict = {}

    def batches(self) -> Iterator[list[Episode]]:
        """The run's graded episodes, a batch at a time (a segment, or :data:`BATCH`
        episodes of the graded document), each segment verified against its sha256."""
        if self.layout == "segments":
            for trials in iter_segments(self.store, self.segments):
                eps = [Episode.from_dict(segment_line_doc(t)) for t in trials]
                if self.verdicts is None:
                    yield grade(eps, self.tasks, check=self.check)
                else:  # a trial the judge did not see (a sampled window) keeps success None
                    yield [ep.graded(self.verdicts.get((ep.task_id, ep.meta.get("trial"))))
                           for ep in eps]
            return
        key = run_key(self.run_id, "graded")  # this process's memo when it holds those bytes' episodes
        graded = read_episodes(self.store, StageRef(stage="graded", key=key,
                                                    sha256=self.manifest.artifacts[key]))
        for i in range(0, len(graded), BATCH):
            yield graded[i:i + BATCH]

    def dollars(self, ep: Episode) -> tuple[Optional[float], list[Optional[float]]]:
        """``(the episode's dollars, each recorded call's dollars)`` as the report bills them;
        None where unknown (no catalog, or no Cost)."""
        if self.prices is None or ep.cost is None:
            return None, [None] * (len(ep.cost.calls) if ep.cost is not None else 0)
        if ep.cost.calls:
            per = [d for _, d in call_dollars(ep, prices=self.prices, memo=self._price_memo)]
            return episode_dollars(ep, prices=self.prices), per
        return episode_dollars(ep, prices=self.prices), []


def open_run(store: Any, run_id: str) -> StoredRun:
    """Open stored run ``run_id`` of ``store`` (a Store or URL; None: ``$EK_STORE``, else
    ``./.ek``): its documents verified against its manifest (DigestMismatch when one was changed
    after the run); ArtifactNotFound when the store has no such run."""
    st = open_store(store)
    manifest = documents.read_manifest(st, run_id)
    manifest_sha256 = st.digest(run_key(run_id, "manifest"))
    report = documents.read_run_doc(st, manifest, "report")
    summary = summarize_run(manifest.to_dict(), report)
    read = {run_key(run_id, n): manifest.artifacts[run_key(run_id, n)] for n in ("report", "tasks")}
    tasks_doc = documents.read_run_doc(st, manifest, "tasks")
    tasks = {t.task_id: t for t in documents.tasks_of(tasks_doc)}
    check = manifest.inputs.check if manifest.inputs.check is not None else tasks_doc.get("checker")
    prices = None
    if run_key(run_id, "prices") in manifest.artifacts:
        prices = documents.prices_of(documents.read_run_doc(st, manifest, "prices"))
        read[run_key(run_id, "prices")] = manifest.artifacts[run_key(run_id, "prices")]
    labels: dict = {}
    if run_key(run_id, "labels") in manifest.artifacts:
        labs = labels_of_doc(documents.read_run_doc(st, manifest, "labels"))
        labels = {(x.task_id, x.trial): x.gold for x in labs.labels}
        read[run_key(run_id, "labels")] = manifest.artifacts[run_key(run_id, "labels")]
    segments = RunSegments.load(st, run_id)
    verdicts = None
    if len(segments) and check != documents.UNSTORED:
        layout = "segments"
        for key, sha in segments.read_sha256.items():
            if manifest.artifacts.get(key) != sha:
                raise DigestMismatch(f"run {run_id!r}: segment index {key} has sha256 {sha[:12]}..., "
                                     f"its manifest lists {str(manifest.artifacts.get(key))[:12]}... "
                                     f"(changed after the run); run `ek-agents audit {run_id}`")
            read[key] = sha
        if manifest.inputs.graded_by is not None and manifest.inputs.graded_by.kind == "judge" \
                and run_key(run_id, "graded") in manifest.artifacts:
            verdicts = _recorded_verdicts(st, manifest)
            read[run_key(run_id, "graded")] = manifest.artifacts[run_key(run_id, "graded")]
    elif run_key(run_id, "graded") in manifest.artifacts:
        layout, segments = "graded", None
        read[run_key(run_id, "graded")] = manifest.artifacts[run_key(run_id, "graded")]
    else:
        raise TrialsUnreadable(f"run {run_id!r} has neither trial segments its checker can grade again "
                           f"nor a graded document in store {st.url!r}: its trials cannot be read "
                           "(re-create the run with run_suite or the evaluate flow)")
    return StoredRun(st, manifest, summary, tasks, check, prices, labels, layout, segments,
                     read, manifest_sha256, verdicts)


def _recorded_verdicts(st: Store, manifest: RunManifest) -> dict:
    """``{(task_id, trial): success}`` of a judge-graded run's graded document (verified)."""
    doc = documents.read_run_doc(st, manifest, "graded")
    return {stored_pair(r): r.get("success") for r in doc.get("episodes") or ()}


def run_row(run: StoredRun) -> dict:
    """The runs-table row of ``run`` (:data:`RUN_COLUMNS`)."""
    s = run.summary
    return {"run_id": run.run_id, "agent": s.agent, "model": s.model, "suite": s.suite,
            "suite_version": s.suite_version, "simulator": s.simulator, "scaffold": s.scaffold,
            "created_at": s.created_at, "k": s.k, "n_tasks": s.n_tasks, "n_trials": s.n_trials,
            "n_success": s.n_success, "success_rate": s.success_rate, "dollars": s.dollars,
            "cost_per_success": s.cost_per_success, "layout": run.layout,
            "manifest_sha256": run.manifest_sha256}


def trial_row(run: StoredRun, ep: Episode, dollars: Optional[float]) -> dict:
    """The trials-table row of graded episode ``ep`` (:data:`TRIAL_COLUMNS`)."""
    tid, meta, cost, steps = ep.task_id, ep.meta, ep.cost, ep.trajectory.steps
    task = run.tasks.get(tid)
    trial = meta.get("trial")
    errored = is_errored(ep)
    kind = meta.get("error_kind", "exception") if errored else None
    ok = bool(ep.success)
    if cost is None:
        tokens: tuple = (0, 0, 0, 0, 0, 0)
        latency, retries, n_calls = meta.get("latency_s"), int(meta.get("retries") or 0), 0
    else:
        tokens = (cost.input_tokens, cost.cached_input_tokens, cost.cache_write_tokens,
                  cost.output_tokens, cost.reasoning_tokens, cost.input_tokens + cost.output_tokens)
        latency = cost.latency_s if cost.latency_s is not None else meta.get("latency_s")
        retries, n_calls = cost.retries, len(cost.calls)
    return {"run_id": run.run_id, "task_id": tid,
            "slice": task.slice if task is not None else None, "trial": trial,
            "success": ok, "judge_verdict": ok if run.judged else None,
            "label": run.labels.get((tid, trial)) if run.labels else None, "errored": errored,
            "error_kind": kind, "error": str(meta.get("error")) if errored else None,
            "limit_hit": kind if kind in LIMIT_KINDS else None, "model": episode_model(ep),
            "dollars": dollars, **dict(zip(_TOKEN_COLUMNS, tokens)),
            "latency_s": latency, "retries": retries, "n_steps": len(steps),
            "n_step_errors": sum(1 for s in steps if s.error), "n_model_calls": n_calls,
            "output": as_text(ep.output)}


_TOKEN_COLUMNS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens",
                  "reasoning_tokens", "total_tokens")


def call_rows(run: StoredRun, ep: Episode, dollars: Optional[float],
              per_call: list[Optional[float]]) -> list[dict]:
    """The calls-table rows of ``ep`` (:data:`CALL_COLUMNS`): one per recorded model call, or
    one tally row for a Cost without calls (billed at the episode's model, as the report
    bills it); none for an episode without a Cost."""
    cost = ep.cost
    if cost is None:
        return []
    base = {"run_id": run.run_id, "task_id": ep.task_id, "trial": ep.meta.get("trial")}
    if not cost.calls:
        return [{**base, "call": 0, "per_call": False, "model": episode_model(ep) or "?",
                 "requested_model": None, "provider": "", "input_tokens": cost.input_tokens,
                 "cached_input_tokens": cost.cached_input_tokens,
                 "cache_write_tokens": cost.cache_write_tokens, "output_tokens": cost.output_tokens,
                 "reasoning_tokens": cost.reasoning_tokens, "cached_known": True,
                 "dollars": dollars}]
    return [{**base, "call": i, "per_call": True, "model": c.model,
             "requested_model": c.requested_model, "provider": c.provider,
             "input_tokens": c.input_tokens, "cached_input_tokens": c.cached_input_tokens,
             "cache_write_tokens": c.cache_write_tokens, "output_tokens": c.output_tokens,
             "reasoning_tokens": c.reasoning_tokens, "cached_known": c.cached_known,
             "dollars": d} for i, (c, d) in enumerate(zip(cost.calls, per_call))]


def step_rows(run: StoredRun, ep: Episode) -> list[dict]:
    """The steps-table rows of ``ep`` (:data:`STEP_COLUMNS`): one per tool call, in order."""
    trial = ep.meta.get("trial")
    return [{"run_id": run.run_id, "task_id": ep.task_id, "trial": trial, "step": i,
             "tool": s.tool, "args": as_text(s.args), "observation": as_text(s.observation),
             "error": s.error} for i, s in enumerate(ep.trajectory)]

