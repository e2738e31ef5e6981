"""Run manifests: what a run was (provenance, parameters, code), what it stored, what it found.

A manifest lives at ``runs/<run_id>/manifest.json`` in an :class:`ek_agents.store.Store`. It
lists every artifact of the run with its sha256, so an audit can tell a stored byte that
changed from a figure that was recomputed differently.

>>> from ek_agents.base import RunProvenance
>>> m = RunManifest(run_id="r1", provenance=RunProvenance(seed=0, model="m"),
...                 artifacts={"runs/r1/report.json": "ab" * 32})
>>> RunManifest.from_dict(m.to_dict()) == m
True
>>> input_digest("grade", episodes="e" * 64, check="output") == input_digest("grade", check="output", episodes="e" * 64)
True
"""
from __future__ import annotations

import datetime as _dt
import functools
import math
import platform
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

from pydantic import Field, StrictBool

from ..identity.agentid import identity_note
from ..base import JsonShape, RunProvenance, decode_nonfinite, encode_nonfinite
from ..core import canonical_json, shape
from ..errors import BaselineError, DocumentError, EkAgentsError
from ..labels import GradedBy
from ..modelcosts import PER_MODEL_HEAD, markdown_table, marked, per_model_rows, upper_bound_reason
from ..reporting import ReliabilityReport
from ..sequential import SequentialVerdict
from ..stats.correctedrates import judge_error_line, judge_rows
from ..store import sha256_hex
from .. import version

__all__ = ["RunManifest", "RunInputs", "package_info", "git_sha", "input_digest", "utc_now", "finite",
           "as_plain", "report_rows", "report_markdown", "TasksDocument", "EpisodesDocument",
           "GateDocument", "BaselineDocument", "check_document", "check_manifest", "check_report",
           "check_baseline", "DOCUMENTS", "REPORT_COUNTS", "reuse_lines", "sequential_line"]


def input_digest(stage: str, **inputs: Any) -> str:
    """sha256 naming a stage's output by everything that decides it, ek-agents' version included.

    Two calls with the same stage and inputs give the same digest, in any keyword order;
    a new ek-agents version gives a new one (so an upgrade never reuses stale results).
    """
    return sha256_hex(canonical_json({"stage": stage, "ek_agents": version.__version__,
                                      "inputs": inputs}))


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (``2026-01-31T03:00:00Z``)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def git_sha(path: Optional[str] = None) -> Optional[str]:
    """The commit checked out at ``path`` (default: where ek_agents lives), ``+dirty`` when
    tracked files differ from it; None when git or a repository is not there."""
    where = path or str(Path(__file__).resolve().parent)
    try:
        sha = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return sha.stdout.strip() + ("+dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")


@functools.lru_cache(maxsize=1)
def package_info() -> dict:
    """Name, version and git sha of the code that ran, and the Python that ran it."""
    return {"name": "ek-agents", "version": version.__version__, "git_sha": git_sha(),
            "python": platform.python_version()}


@shape()
class RunInputs(JsonShape):
    """The values a run's stages were computed with: what an audit recomputes them with.

    Written by the pipeline (``flows/evaluate.py``) and by ``harness.run_suite``, read back by
    :mod:`ek_agents.stages.audit`.
    """

    k: int = 1
    """Trials per task."""
    seed: Optional[int] = None
    """The base seed (trial i ran with seed + i)."""
    check: Optional[str] = None
    """The default checker by name; ``records.documents.UNSTORED`` when a library run graded with a
    callable (which a run cannot store)."""
    run: Optional[dict] = None
    """The run's provenance as given (``RunProvenance.to_dict()``)."""
    tolerance: float = 0.0
    """The gate's tolerated success drop."""
    cost_tolerance: float = 0.0
    """The gate's tolerated relative rise of the cost per success."""
    price: Optional[str] = None
    """``records.documents.UNSTORED`` when a library run was priced with one ModelPrice (not stored)."""
    metrics: tuple[str, ...] = ()
    """Names of the custom metrics a library run scored (their objects are not stored)."""
    labels: Optional[str] = None
    """sha256 digest (``labels.Labels.digest``) of the people's labels the judge-corrected
    rate used (the run's ``labels`` document); None when the run had no labels."""
    graded_by: Optional[GradedBy] = None
    """How the trials were graded: a named checker or a judge (its name and code digest,
    ``runs.grading.graded_by``); what the labels commands read. None in a run recorded
    without it (then ``check`` decides)."""


@shape()
class RunManifest(JsonShape):
    """Everything needed to trust, compare and re-check one evaluation run.

    ``parameters`` are the flow's parameters as called; ``inputs`` the values the stages were
    computed with (what an audit recomputes them with). ``artifacts`` maps each store key of the run to the sha256 of its bytes; ``stages`` records
    per stage its input digest and whether it was a cache hit; ``results`` holds the headline
    figures; ``gate`` the verdict against a baseline (None when no baseline was asked for).
    """

    run_id: str
    provenance: RunProvenance = Field(default_factory=RunProvenance)
    created_at: str = ""
    status: str = "completed"
    suite: dict = Field(default_factory=dict)
    agent: Optional[str] = None
    source: dict = Field(default_factory=dict)
    parameters: dict = Field(default_factory=dict)
    inputs: RunInputs = Field(default_factory=RunInputs)
    package: dict = Field(default_factory=dict)
    orchestrator: dict = Field(default_factory=dict)
    artifacts: dict[str, str] = Field(default_factory=dict)
    stages: dict = Field(default_factory=dict)
    results: dict = Field(default_factory=dict)
    gate: Optional[dict] = None
    fingerprint: Optional[dict] = None
    """What decided the run's episodes (``records.fingerprint.RunFingerprint``: agent, its code digest and
    declared configuration, suite, k, seed, provenance, limits); None for an ingested run."""
    sequential: Optional[SequentialVerdict] = None
    """A sequentially gated run: whether it stopped early, why, and the trials the verdict cost
    (``trials_run`` of ``trials_planned``); None for a fixed-design run."""

    @classmethod
    def build(cls, run_id: str, **fields: Any) -> "RunManifest":
        """A manifest stamped with the time and this package's version and git sha."""
        fields.setdefault("created_at", utc_now())
        fields.setdefault("package", package_info())
        for name in ("parameters", "results", "gate"):  # inf stays inf, never null
            if fields.get(name) is not None:
                fields[name] = finite(fields[name])
        return cls(run_id=run_id, **fields)

    def headline(self) -> str:
        """One line: the run, its success rate, pass^k and dollars per success."""
        r = self.results
        return (f"run {self.run_id}: success {_fmt(r.get('success_rate'))}, "
                f"pass^{r.get('k', '?')} {_fmt(r.get('pass_hat_k'))}, "
                f"$/success {marked(_fmt(r.get('cost_per_success'), money=True), r.get('dollars_upper_bound'))}")


# --------------------------------------------------------------------------- stored documents
# The shapes of a run's documents as read back from a store: each read is validated before use
# (check_document), so a wrong nested type is a DocumentError naming the document and the field,
# never an AttributeError three calls later.

@shape()
class TasksDocument(JsonShape):
    """``runs/<id>/tasks.json``: the suite's identity and every task (``records.documents.tasks_doc``)."""

    name: str
    version: str
    digest: str
    tasks: list[dict]
    path: str = ""
    checker: Optional[str] = None


@shape()
class EpisodesDocument(JsonShape):
    """``runs/<id>/episodes.json`` / ``graded.json``: ``{"episodes": [Episode dict, ...]}``."""

    episodes: list[dict]


@shape()
class GateDocument(JsonShape):
    """``runs/<id>/gate.json``: the verdict (``AgentGateResult.to_dict()`` + ``baseline``),
    or ``passed`` False with ``refused`` when the gate refused the baseline."""

    passed: StrictBool  # a verdict is true or false, never 0.0 read as False
    baseline: Optional[str] = None
    refused: Optional[str] = None
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


@shape()
class BaselineDocument(JsonShape):
    """``baselines/<name>.json`` (``records.baselines.save_agent_baseline``): a frozen report and the run
    provenance the gate checks comparability on; ``replaced`` records the baseline a
    ``promote --replace`` overwrote (its content-addressed artifact, run id and date)."""

    kind: str
    name: str
    report: dict
    created: str = ""
    run: Optional[RunProvenance] = None
    replaced: Optional[dict] = None


#: Document name in a run -> its model (report: ``ReliabilityReport`` via :func:`check_report`).
DOCUMENTS = {"tasks": TasksDocument, "episodes": EpisodesDocument, "graded": EpisodesDocument,
             "gate": GateDocument, "baseline": BaselineDocument, "manifest": RunManifest}


def _field_errors(exc: BaseException) -> str:
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if not callable(errors):
        return str(exc)
    out = []
    for e in errors()[:3]:
        loc = ".".join(str(p) for p in e.get("loc", ())) or "(the document)"
        out.append(f"field {loc!r}: {e.get('msg')} (got {e.get('input')!r:.60})")
    more = len(errors()) - 3
    return "; ".join(out) + (f"; and {more} more" if more > 0 else "")


def check_document(model: type, data: Any, where: str, *, error: type = DocumentError) -> Any:
    """``data`` validated as ``model`` (a JsonShape), or ``error`` naming ``where`` and the
    field that is wrong.

    >>> check_document(EpisodesDocument, {"schema_version": 1}, "runs/r/episodes.json")
    Traceback (most recent call last):
    ...
    ek_agents.errors.DocumentError: stored runs/r/episodes.json is malformed: field 'episodes': Field required (got {}); it was damaged or not written by ek-agents: re-create the run (or restore the file)
    """
    if not isinstance(data, Mapping):
        raise error(f"stored {where} is malformed: expected a JSON object, got "
                    f"{type(data).__name__} {data!r:.60}; it was damaged or not written by "
                    "ek-agents: re-create the run (or restore the file)")
    try:
        return model.from_dict(data)
    except EkAgentsError as exc:
        raise error(f"stored {where} is malformed: {_field_errors(exc)}; it was damaged or not "
                    "written by ek-agents: re-create the run (or restore the file)") from None


def check_manifest(data: Any, where: str) -> RunManifest:
    """A manifest read from a store, validated (:class:`~ek_agents.errors.DocumentError`),
    its recorded gate verdict too (a :class:`GateDocument`; ``sequential`` an object)."""
    manifest = check_document(RunManifest, data, where)
    if manifest.gate is not None:
        check_document(GateDocument, manifest.gate, f"{where} (field 'gate')")
        _check_object(manifest.gate.get("sequential"), f"{where}", "gate.sequential")
    return manifest


def _check_object(x: Any, where: str, field: str, *, error: type = DocumentError) -> None:
    if x is not None and not isinstance(x, Mapping):
        raise error(f"stored {where} is malformed: field {field!r} must be an object or null, "
                    f"got {type(x).__name__} {x!r:.60}; re-create it from its run")


def _check_strings(x: Any, where: str, field: str, *, error: type = DocumentError) -> None:
    if x is not None and not (isinstance(x, (list, tuple)) and all(isinstance(s, str) for s in x)):
        raise error(f"stored {where} is malformed: field {field!r} must be a list of strings, "
                    f"got {type(x).__name__} {x!r:.60}; re-create it from its run")


def _number(x: Any) -> bool:
    x = decode_nonfinite(x)
    return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))


#: The per-task figures of a report (``per_task[task]``) that are numbers (or null).
_PER_TASK_NUMBERS = ("c", "n", "pass_at_k", "pass_hat_k", "dollars", "n_success")
#: The counts every stored report document records (nothing defaults them on a read).
REPORT_COUNTS = ("n_trials", "n_success", "success_rate")


def check_report(data: Any, where: str, *, error: type = DocumentError) -> ReliabilityReport:
    """A report document read from a store, validated: its shape (``ReliabilityReport``), its
    cost figures (numbers or None) and its counts (``success_rate`` = ``n_success / n_trials``).

    >>> check_report({"k": 1, "n_trials": 4, "n_success": 1, "success_rate": 0.75}, "report.json")
    Traceback (most recent call last):
    ...
    ek_agents.errors.DocumentError: stored report.json is inconsistent: field 'success_rate' is 0.75 but n_success / n_trials = 1/4 = 0.25; it was edited or damaged: re-create it from its run (or restore the file)
    """
    rep = check_document(ReliabilityReport, data, where, error=error)
    missing = [f for f in REPORT_COUNTS if f not in data]
    if missing:  # the model's defaults would pass an empty {} off as a run of 0 trials
        raise error(f"stored {where} is malformed: field {missing[0]!r} is missing (a report "
                    f"records {', '.join(REPORT_COUNTS)}); re-create it from its run")
    for f in ("total_dollars", "cost_per_success"):
        if not _number(rep.cost.get(f)):
            raise error(f"stored {where} is malformed: field 'cost.{f}' must be a number or "
                        f"null, got {rep.cost.get(f)!r:.60}; re-create it from its run")
    _check_strings(rep.cost.get("warnings"), where, "cost.warnings", error=error)
    _check_strings(rep.detail.get("warnings"), where, "detail.warnings", error=error)
    for task, row in rep.per_task.items():  # the gate resamples these columns
        _check_object(row, where, f"per_task.{task}", error=error)
        for f in _PER_TASK_NUMBERS:
            if row and not _number(row.get(f)):
                raise error(f"stored {where} is malformed: field 'per_task.{task}.{f}' must be a "
                            f"number or null, got {row.get(f)!r:.60}; re-create it from its run")
    ci = rep.cost.get("cost_per_success_ci")
    if ci is not None and not (isinstance(ci, (list, tuple)) and len(ci) == 2
                               and all(_number(c) for c in ci)):
        raise error(f"stored {where} is malformed: field 'cost.cost_per_success_ci' must be two "
                    f"numbers or null, got {ci!r:.60}; re-create it from its run")
    problem = None
    if rep.n_trials < 0 or not 0 <= rep.n_success <= rep.n_trials:
        problem = f"n_success={rep.n_success} with n_trials={rep.n_trials}"
    elif rep.n_trials and not math.isclose(rep.success_rate, rep.n_success / rep.n_trials,
                                           rel_tol=1e-9, abs_tol=1e-12):
        problem = (f"field 'success_rate' is {rep.success_rate!r} but n_success / n_trials = "
                   f"{rep.n_success}/{rep.n_trials} = {rep.n_success / rep.n_trials!r}")
    if problem:
        raise error(f"stored {where} is inconsistent: {problem}; it was edited or damaged: "
                    "re-create it from its run (or restore the file)")
    return rep


def check_baseline(data: Any, where: str) -> BaselineDocument:
    """A baseline read from a store, validated: its shape, its report (:func:`check_report`)
    and its run provenance; :class:`~ek_agents.errors.BaselineError` naming the field."""
    doc = check_document(BaselineDocument, data, where, error=BaselineError)
    check_report(doc.report, f"{where} (field 'report')", error=BaselineError)
    return doc


def _fmt(x: Any, *, money: bool = False) -> str:
    return _cell(_num(x) if isinstance(x, str) else x, money)


def finite(x: Any) -> Any:
    """``x`` with non-finite floats as the strings ``"Infinity"``/``"-Infinity"``/``"NaN"`` --
    the convention of ``ReliabilityReport.to_dict`` (whose encoder this is) -- so that it can be
    stored as strict JSON."""
    return encode_nonfinite(x)


def as_plain(x: Any) -> Any:
    """A JSON-ready form of a library result: ``to_dict()`` when it has one, else itself."""
    if hasattr(x, "to_dict"):
        return x.to_dict()
    if isinstance(x, Mapping):
        return dict(x)
    return x


# --------------------------------------------------------------------------- presenting a run

def _num(x: Any) -> Optional[float]:
    x = decode_nonfinite(x)
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def report_rows(report: Mapping) -> list[dict]:
    """One row per slice (and ``all`` first): tasks, trials, success, pass^k, dollars, $/success.

    >>> rows = report_rows({"k": 2, "n_tasks": 2, "n_trials": 4, "success_rate": 0.5, "pass_hat_k": 0.5,
    ...                     "cost": {"total_dollars": 0.02, "cost_per_success": 0.01}})
    >>> rows[0]["slice"], rows[0]["cost_per_success"]
    ('all', 0.01)
    """
    cost = report.get("cost") or {}
    per_cost = cost.get("per_slice") or {}

    def row(label: str, r: Mapping, c: Mapping) -> dict:
        return {"slice": label, "tasks": r.get("n_tasks"), "trials": r.get("n_trials"),
                "success": r.get("success_rate"), f"pass^{report.get('k', 1)}": r.get("pass_hat_k"),
                "dollars": _num(c.get("total_dollars")),
                "cost_per_success": _num(c.get("cost_per_success"))}

    return [row("all", report, cost)] + [row(label, s, per_cost.get(label) or {})
                                         for label, s in sorted((report.get("per_slice") or {}).items())]


def _cell(x: Any, money: bool = False) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        if money:
            return "inf" if math.isinf(x) else f"${x:.4g}"
        return f"{x:.3f}"
    return str(x)


def reuse_lines(manifest: Mapping, report: Mapping) -> list[str]:
    """What a run reused, as the report says it: ``["reused 8 of 12 episodes from run `r1`", ""]``
    (nothing for a run that recorded no reuse, e.g. an ingested one)."""
    ep = (manifest.get("stages") or {}).get("episodes") or {}
    if ep.get("reused") is None:
        return []
    n = report.get("n_trials")
    src = ep.get("reused_from")
    where = "" if not src else (" (this run's stored trials)" if src == manifest.get("run_id")
                                else f" from run `{src}`")
    return [f"reused {ep['reused']} of {n} episodes{where}; ran {max(0, (n or 0) - ep['reused'])}",
            ""]


def report_markdown(manifest: Mapping, report: Mapping) -> str:
    """The run's report as Markdown: headline, per-slice table, gate verdict, warnings."""
    suite, prov = manifest.get("suite") or {}, manifest.get("provenance") or {}
    k = report.get("k", 1)
    ci = report.get("success_ci") or (None, None)
    lines = [f"# {suite.get('name', 'suite')} {suite.get('version', '')}: run `{manifest.get('run_id')}`",
             "",
             f"agent `{manifest.get('agent') or (manifest.get('source') or {}).get('kind', '?')}`, "
             f"model `{prov.get('model') or '?'}`, k={k}, seed {prov.get('seed')}; "
             f"success {_cell(report.get('success_rate'))} (95% CI {_cell(ci[0])}-{_cell(ci[1])}), "
             f"pass^{k} {_cell(report.get('pass_hat_k'))}, pass@{k} {_cell(report.get('pass_at_k'))}",
             ""]
    lines += reuse_lines(manifest, report)
    rows = report_rows(report)
    head = list(rows[0])
    lines += markdown_table(head, [[_cell(r[h], money=h in ("dollars", "cost_per_success"))
                                    for h in head] for r in rows])
    lines += _per_model_lines(report.get("cost") or {})
    lines += _evaluation_lines(report.get("cost") or {})
    judged = (report.get("detail") or {}).get("judge_corrected")
    if judged:  # a judge graded the run and people labeled some trials: raw beside corrected
        lines += ["", "| success decided by | success | 95% CI | cost per success |", "|---|---|---|---|"]
        for r in judge_rows(judged):
            ci, cci = r["ci"] or (None, None), r["cost_ci"]
            cost = _cell(r["cost_per_success"], money=True) + (
                f" ({_cell(cci[0], money=True)}-{_cell(cci[1], money=True)})" if cci else "")
            lines.append(f"| {r['which']} | {_cell(r['success'])} | {_cell(ci[0])}-{_cell(ci[1])} "
                         f"| {cost} |")
        lines += ["", judge_error_line(judged) or ""]
    gate = manifest.get("gate")
    if gate:
        verdict = ("REFUSED: " + gate["refused"]) if gate.get("refused") else \
            ("passed" if gate.get("passed") else "FAILED")
        lines += ["", f"**Gate** vs baseline `{gate.get('baseline')}`: {verdict}"]
        lines += [f"- {r}" for r in gate.get("reasons") or []]
        lines += [f"- warning: {w}" for w in gate.get("warnings") or []]
        seq = sequential_line(gate)
        if seq:
            lines.append(f"- {seq}")
    notes = list((report.get("detail") or {}).get("warnings") or []) + \
        list((report.get("cost") or {}).get("warnings") or [])
    unidentified = identity_note(manifest.get("fingerprint"))
    notes += [unidentified] if unidentified else []
    if notes:
        lines += ["", "Warnings:"] + [f"- {w}" for w in notes]
    return "\n".join(lines) + "\n"


def _per_model_lines(cost: Mapping) -> list[str]:
    """The per-model table and the upper-bound note of a run whose episodes record their model
    calls (nothing for any other run)."""
    rows = per_model_rows(cost.get("per_model"), money=lambda d: _cell(_num(d), money=True),
                          count=lambda n: _cell(n))
    out = []
    if rows:
        out += ["", "Per model:", ""] + markdown_table(PER_MODEL_HEAD, rows)
    why = upper_bound_reason(cost)
    if why:
        out += ["", f"**Upper bound:** dollars {marked(_cell(_num(cost.get('total_dollars')), money=True), True)}"
                f": {why}"]
    return out


def _evaluation_lines(cost: Mapping) -> list[str]:
    """The judge's own calls (the evaluation cost), apart from the agent's: one line, for a
    run an endpoint judge graded (nothing for any other run)."""
    per = cost.get("evaluation_per_model")
    if not per:
        return []
    dollars = cost.get("evaluation_dollars")
    calls = sum(int(r.get("calls", 0)) for r in per.values())
    return ["", f"**Evaluation cost** (the judge's own calls, not in the agent's dollars): "
            f"{'unknown (no prices)' if dollars is None else _cell(_num(dollars), money=True)}, "
            f"{calls} calls to {', '.join(f'`{m}`' for m in sorted(per))}"]


def sequential_line(gate: Mapping) -> Optional[str]:
    """How a sequentially gated run ended, one line (None for a fixed-design verdict):
    ``sequential gate: stopped early, 40 of 160 planned trials: regression at look 1 ...``."""
    seq = gate.get("sequential")
    if not isinstance(seq, Mapping):
        return None
    why = "" if gate.get("reasons") else f": {seq.get('reason')}"
    return (f"sequential gate: {'stopped early' if seq.get('stopped_early') else 'ran every trial'}"
            f", {seq.get('trials_run')} of {seq.get('trials_planned')} planned trials{why}")
