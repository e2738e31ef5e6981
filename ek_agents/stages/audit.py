"""Audit a stored run: are its bytes the recorded bytes, and do its figures recompute?

:func:`audit` re-reads a run's manifest, checks the sha256 of every artifact it lists (and
that no per-trial episode file was added behind its back), then recomputes the grades, the
metrics, the cost report, the headline results and the gate verdict from the stored episodes
with the very stage functions the pipeline ran (:mod:`ek_agents.stages.evaluate`), and compares them
figure by figure with what was recorded. Each problem names the artifact or the figure. A run
recorded by ``harness.run_suite`` with an input it cannot store (a callable ``check``, custom
``metrics``, a single ``price``: ``records.documents.UNSTORED`` or the metric names in its manifest's
inputs) gets a problem saying which figures cannot be recomputed; the rest is still compared.
A monitor window (manifest source ``monitor-window``) is recomputed by
:func:`ek_agents.stages.windowrun.audit_window_run`.

>>> from ek_agents.store import Store
>>> audit(Store("memory://ek-audit-doctest"), "no-such-run")
Traceback (most recent call last):
...
ek_agents.errors.ArtifactNotFound: run 'no-such-run' has no manifest in store 'memory://ek-audit-doctest'
>>> differences({"a": 1.0, "b": [1, 2]}, {"a": 1.0 + 1e-15, "b": [1, 3]}, "report")
['report.b[1]: recorded 2, recomputed 3']
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from ..base import JsonShape, RunProvenance
from ..core import shape
from ..errors import ArtifactNotFound, BaselineError, EkAgentsError, InvalidInput, StoreError
from ..identity.agentid import identity_note
from ..records.manifest import RunManifest, check_baseline, finite
from ..store import (baseline_key, episode_key, episodes_prefix, parse_json, run_key,
                     segment_index_prefix, segments_prefix, sha256_hex)
from ..labels import labels_of_doc
from ..records import documents
from ..records.baselines import no_baseline
from ..records.grading import grading_of
from .judgerun import endpoint_judged, verdict_problems
from . import evaluate as stages
from .labelrun import labels_stage
from ..records.segments import stored_pair
from ._streamaudit import STREAMED, audit_streamed, segment_episodes
from .windowrun import audit_window_run, window_of

__all__ = ["AuditResult", "audit", "differences", "expected_status", "REQUIRED", "KNOWN"]

#: Problems listed per comparison before the rest are summarised.
MAX_LISTED = 10


@shape()
class AuditResult(JsonShape):
    """What an audit checked and what it found (``passed`` when ``problems`` is empty)."""

    run_id: str
    passed: bool
    checked: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    baseline: Optional[str] = None
    notes: tuple[str, ...] = ()
    """What the audit says without failing: e.g. the run's agent had state that could not be
    identified, so a resume of the run is refused (``agentid.identity_note``)."""

    def summary(self) -> str:
        """One line: the verdict, what was checked, and the first problem."""
        what = f"run {self.run_id!r}" + (f" (baseline {self.baseline!r})" if self.baseline else "")
        if self.passed:
            return f"audit passed: {what}: {len(self.checked)} checks, every artifact and figure agrees"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"audit FAILED: {what}: {self.problems[0]}{more}"

    def markdown(self) -> str:
        """The summary as a Markdown heading, then one bullet per problem."""
        return "\n".join([f"# {self.summary()}", ""] + [f"- {p}" for p in self.problems]
                         + [f"- note: {n}" for n in self.notes]) + "\n"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) \
            and not isinstance(b, bool):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def differences(recorded: Any, recomputed: Any, path: str) -> list[str]:
    """Every leaf where ``recorded`` and ``recomputed`` differ, as ``"path: recorded X,
    recomputed Y"`` (numbers equal to 1e-9 relative count as equal)."""
    if isinstance(recorded, Mapping) and isinstance(recomputed, Mapping):
        out: list[str] = []
        for key in sorted(set(recorded) | set(recomputed), key=str):
            if key not in recorded or key not in recomputed:
                out.append(f"{path}.{key}: recorded {recorded.get(key, '(absent)')!r:.60}, "
                           f"recomputed {recomputed.get(key, '(absent)')!r:.60}")
            else:
                out += differences(recorded[key], recomputed[key], f"{path}.{key}")
        return out
    if isinstance(recorded, (list, tuple)) and isinstance(recomputed, (list, tuple)) \
            and len(recorded) == len(recomputed):
        return [d for i, (a, b) in enumerate(zip(recorded, recomputed))
                for d in differences(a, b, f"{path}[{i}]")]
    if _same(recorded, recomputed):
        return []
    return [f"{path}: recorded {recorded!r:.60}, recomputed {recomputed!r:.60}"]


def _limited(found: list[str]) -> list[str]:
    if len(found) <= MAX_LISTED:
        return found
    return found[:MAX_LISTED] + [f"... and {len(found) - MAX_LISTED} more differences"]


def audit(store: Any, run_id: Optional[str] = None, *, baseline: Optional[str] = None,
          deep: bool = False) -> AuditResult:
    """Audit run ``run_id``, or the run that baseline ``baseline`` was promoted from (one of
    the two, never both).

    Raises ArtifactNotFound when the run has no manifest and BaselineError when the baseline
    does not exist or records no run (bad input: there is nothing to audit); everything else
    that does not check out -- a damaged manifest, baseline or artifact included -- is a
    problem in the result (``passed`` False) naming it, never an exception. ``deep``: a run
    streamed from segments has every segment regraded (else a seeded sample, the rest merged
    from their digest-checked summaries; every segment's bytes are checked either way).
    """
    if (run_id is None) == (baseline is None):
        raise InvalidInput(f"audit needs exactly one of a run id or a baseline name, got run_id="
                           f"{run_id!r}, baseline={baseline!r}: audit RUN_ID, or --baseline NAME")
    checked: list[str] = []
    problems: list[str] = []
    if baseline is not None:
        run_id = _run_of_baseline(store, baseline, checked, problems)
        if run_id is None:
            return AuditResult(run_id="(unknown)", passed=False, checked=tuple(checked),
                               problems=tuple(problems), baseline=baseline)
    key = run_key(run_id, "manifest")
    checked.append(key)
    try:
        manifest = documents.read_manifest(store, run_id)
    except ArtifactNotFound:
        if baseline is None:
            raise
        problems.append(f"baseline {baseline!r}: its run's manifest {key} is missing")
        manifest = None
    except StoreError:  # the store failed, not the run: an infrastructure error (exit 3)
        raise
    except EkAgentsError as exc:  # not JSON, or a wrong shape: a damaged manifest
        problems.append(f"manifest {key} is damaged: {exc}")
        manifest = None
    if manifest is not None and window_of(manifest.source) is not None:  # a monitor window
        seen, _ = _check_bytes(store, run_id, manifest, checked, problems)
        audit_window_run(store, run_id, manifest, seen, checked, problems,
                         compare=lambda a, b, what: _limited(differences(a, b, what)))
    elif manifest is not None and manifest.parameters.get("layout") == STREAMED:
        seen, _ = _check_bytes(store, run_id, manifest, checked, problems)
        audit_streamed(store, run_id, manifest, seen, checked, problems, deep=deep,
                       compare=lambda a, b, what: _limited(differences(a, b, what)))
    elif manifest is not None:
        seen, trial_keys = _check_bytes(store, run_id, manifest, checked, problems)
        _check_artifact_set(store, run_id, manifest, checked, problems)
        try:
            _check_figures(store, run_id, manifest, seen, trial_keys, checked, problems)
        except StoreError as exc:
            if not isinstance(exc, ArtifactNotFound):
                raise  # the store failed, not the run
            problems.append(f"recomputation failed: {type(exc).__name__}: {exc}")
        except (EkAgentsError, KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(f"recomputation failed: {type(exc).__name__}: {exc}")
    note = identity_note(manifest.fingerprint) if manifest is not None else None
    return AuditResult(run_id=run_id, passed=not problems, checked=tuple(checked),
                       problems=tuple(problems), baseline=baseline,
                       notes=(note,) if note else ())


def _run_of_baseline(store: Any, name: str, checked: list, problems: list) -> Optional[str]:
    key = baseline_key(name)
    checked.append(key)
    try:
        raw = store.load_baseline(name)
    except StoreError:  # the store failed, not the baseline
        raise
    except EkAgentsError as exc:  # not JSON
        problems.append(f"baseline {name!r} ({key}) is damaged: {exc}")
        return None
    if raw is None:
        raise no_baseline(store, name)
    try:
        doc = check_baseline(raw, key)
    except EkAgentsError as exc:
        problems.append(f"baseline {name!r} ({key}) is damaged: {exc}")
        return None
    detail = doc.report.get("detail") if isinstance(doc.report.get("detail"), Mapping) else {}
    run_id = detail.get("run_id")
    if not run_id:
        raise BaselineError(f"baseline {name!r} records no run id: it was not promoted from a "
                            "pipeline run (ek-agents promote RUN_ID --name NAME), so there is "
                            "nothing to audit it against")
    if not isinstance(run_id, str):
        problems.append(f"baseline {name!r}: report.detail.run_id is {run_id!r}, not a run id")
        return None
    manifest_key = run_key(run_id, "manifest")
    checked.append(f"{key} -> {manifest_key}")
    try:
        actual = store.digest(manifest_key)
    except ArtifactNotFound:
        problems.append(f"baseline {name!r}: its run's manifest {manifest_key} is missing")
        return run_id
    if actual != detail.get("manifest_sha256"):
        problems.append(f"baseline {name!r}: {manifest_key} has sha256 {actual[:12]}..., the "
                        f"baseline recorded {str(detail.get('manifest_sha256'))[:12]}...")
    try:
        manifest = documents.read_manifest(store, run_id)
        report = documents.read_run_doc(store, manifest, "report")
    except EkAgentsError:
        return run_id  # the run's own audit names what is wrong
    strip = lambda d: {**d, "detail": {k: v for k, v in (d.get("detail") or {}).items()  # noqa: E731
                                       if k not in ("run_id", "manifest_sha256")}}
    checked.append(f"{key}: report and run provenance vs run {run_id!r}")
    problems += [f"baseline {name!r}: {d}" for d in
                 _limited(differences(strip(raw["report"]), strip(report), "report"))]
    # the provenance the gate's comparability check reads: the run's, as its manifest says
    problems += [f"baseline {name!r}: {d}" for d in
                 _limited(differences(raw.get("run"), manifest.provenance.to_dict(), "run"))]
    return run_id


def _check_bytes(store: Any, run_id: str, manifest: RunManifest, checked: list,
                 problems: list) -> tuple[dict, list]:
    """Check every recorded sha256; return ``({key: bytes read}, the run's per-trial keys)``
    so that the recomputation reads nothing twice (and only bytes that checked out)."""
    recorded = manifest.artifacts

    def fetch(key: str) -> Optional[bytes]:
        try:
            return store.read_bytes(key)
        except ArtifactNotFound:
            return None

    seen: dict[str, bytes] = {}
    keys = sorted(recorded)
    with ThreadPoolExecutor(max_workers=8) as pool:  # GETs overlap (a run's segments: hundreds)
        fetched = pool.map(fetch, keys)
    for key, data in zip(keys, fetched):
        sha = recorded[key]
        checked.append(key)
        if data is None:
            problems.append(f"artifact {key} is missing")
            continue
        actual = sha256_hex(data)
        if actual != sha:
            problems.append(f"artifact {key}: its bytes hash to {actual[:12]}..., the manifest "
                            f"recorded {sha[:12]}... (changed after the run)")
            continue
        seen[key] = data
    trial_keys = store.list(episodes_prefix(run_id))
    for key in [*trial_keys, *store.list(segments_prefix(run_id)),
                *store.list(segment_index_prefix(run_id))]:
        if key not in recorded:
            problems.append(f"artifact {key} is not in the manifest (added after the run, or "
                            "its entry was removed)")
    return seen, trial_keys


#: The documents every recorded run has; a gated run also has ``gate`` and ``baseline``.
REQUIRED = ("tasks", "episodes", "graded", "metrics", "report")
#: Every document a run may have (a prices catalog is optional).
KNOWN = REQUIRED + ("prices", "gate", "baseline", "labels")


def _check_artifact_set(store: Any, run_id: str, manifest: RunManifest, checked: list,
                        problems: list) -> None:
    """The full artifact set for the run's kind: every required document listed, a gated run's
    gate and baseline listed, no known document of the run left out of the manifest."""
    listed = manifest.artifacts
    gated = manifest.gate is not None or bool(manifest.parameters.get("baseline"))
    checked.append(f"artifact set of a {'gated ' if gated else ''}"
                   f"{'ingested' if manifest.source.get('kind') else 'agent'} run")
    for name in REQUIRED + (("gate", "baseline") if gated else ()):
        key = run_key(run_id, name)
        if key not in listed:
            problems.append(f"artifact {key} is required for this run but is not listed in "
                            "the manifest (its entry was removed, or the run never wrote it)")
    for name in KNOWN:
        key = run_key(run_id, name)
        if key not in listed and name not in REQUIRED and store.exists(key):
            problems.append(f"artifact {key} is in the store but not listed in the manifest "
                            "(its entry was removed after the run)")
    if manifest.gate is None and run_key(run_id, "gate") in listed:
        problems.append(f"manifest.gate: recorded no verdict, but the run lists "
                        f"{run_key(run_id, 'gate')}")


def _check_figures(store: Any, run_id: str, manifest: RunManifest, seen: Mapping,
                   trial_keys: list, checked: list, problems: list) -> None:
    inputs = manifest.inputs

    def load(key: str, name: Optional[str] = None) -> Any:
        doc = parse_json(seen[key], key) if key in seen else store.read_json(key)
        return documents.check_run_doc(name, doc, key) if name else doc

    read = lambda name: load(run_key(run_id, name), name)  # noqa: E731
    tasks, episodes = read("tasks"), read("episodes")
    prices_key = run_key(run_id, "prices")
    prices = read("prices") if prices_key in seen or store.exists(prices_key) else None
    recorded_report = read("report")

    _check_manifest_fields(run_id, manifest, tasks, recorded_report, checked, problems)
    _check_trials(run_id, manifest, tasks, episodes, trial_keys, load, checked, problems,
                  raw=lambda key: seen[key] if key in seen else store.read_bytes(key))

    if inputs.check == documents.UNSTORED:
        problems.append("graded, metrics, report, results: the run was graded by a callable "
                        "check (harness.run_suite(check=<function>)), which a run cannot store: "
                        "an audit cannot recompute these figures (only their bytes were checked)")
        return
    if endpoint_judged(inputs.graded_by):  # the judge's recorded verdicts: no judge asked again
        graded = read("graded")
        checked.append("graded: the endpoint judge's recorded verdicts on the stored episodes")
        problems += verdict_problems(episodes, graded)
    else:
        graded = stages.grade_stage(episodes, tasks, check=inputs.check)
    metrics = stages.metrics_stage(graded, tasks, k=inputs.k, seed=inputs.seed or 0, run=inputs.run)
    report = stages.cost_stage(graded, metrics, prices, seed=inputs.seed or 0)
    if inputs.labels is not None or run_key(run_id, "labels") in manifest.artifacts:
        report = _with_labels(run_id, manifest, report, graded, tasks, read, checked, problems)
    recomputed_report = report
    results, recomputed_results = manifest.results, finite(documents.results_of(report))
    if inputs.metrics:
        problems.append(f"report.detail.metrics: scored by custom Metric objects "
                        f"{list(inputs.metrics)} (harness.run_suite(metrics=...)), which a run "
                        "cannot store: an audit cannot recompute them (the rest of the report "
                        "is compared without them)")
        recorded_report = {**recorded_report, "detail": _without(recorded_report.get("detail"),
                                                                  ("metrics",))}
    if inputs.price == documents.UNSTORED:
        problems.append("report.cost, results (dollars): priced with one ModelPrice "
                        "(harness.run_suite(price=...)), which a run does not store: an audit "
                        "cannot recompute the cost figures (the rest is compared without them)")
        recorded_report, recomputed_report = (_without(r, ("cost",))
                                              for r in (recorded_report, recomputed_report))
        results, recomputed_results = (_without(r, _DOLLARS) for r in (results, recomputed_results))
    for name, doc, recomputed in (("graded", read("graded"), graded),
                                  ("metrics", read("metrics"), metrics),
                                  ("report", recorded_report, recomputed_report)):
        checked.append(f"recomputed {name}")
        problems += _limited(differences(doc, recomputed, name))
    checked.append("recomputed results")
    problems += _limited(differences(results, recomputed_results, "results"))
    gate_key = run_key(run_id, "gate")
    if manifest.gate is not None or gate_key in manifest.artifacts:
        checked.append("recomputed gate verdict (manifest.gate and gate.json)")
        name = (manifest.gate or {}).get("baseline") or manifest.parameters.get("baseline")
        verdict = stages.regate(report, graded, read("baseline"), manifest.gate, k=inputs.k,
                                tolerance=inputs.tolerance, cost_tolerance=inputs.cost_tolerance,
                                baseline_name=name)
        problems += _limited(differences(manifest.gate, verdict, "manifest.gate"))
        if gate_key in seen or store.exists(gate_key):
            problems += _limited(differences(read("gate"), verdict, "gate.json"))
        if manifest.sequential is not None:  # the typed copy of the sequential verdict
            seq = manifest.sequential.to_dict()
            again = {k: v for k, v in (verdict.get("sequential") or {}).items()
                     if k in seq or k != "schema_version"}  # nested: unversioned
            problems += _limited(differences(seq, again, "manifest.sequential"))


def _check_manifest_fields(run_id: str, manifest: RunManifest, tasks: Mapping, report: Mapping,
                           checked: list, problems: list) -> None:
    """The manifest's agent, provenance, suite, k and status against the stored documents."""
    checked.append("manifest agent, provenance, suite, k and status vs the stored documents")
    params = manifest.parameters
    if "agent" in params and params.get("agent") != manifest.agent:
        problems.append(f"manifest.agent: recorded {manifest.agent!r}, but the run was called "
                        f"with agent {params.get('agent')!r} (manifest.parameters.agent)")
    detail_run = (report.get("detail") or {}).get("run") or {}
    problems += _limited(differences(manifest.provenance.to_dict(),
                                     RunProvenance.from_dict(detail_run).to_dict(),
                                     "manifest.provenance vs report.detail.run"))
    suite = {f: tasks.get(f) for f in ("name", "version", "digest", "path", "checker")}
    problems += _limited(differences(manifest.suite, suite, "manifest.suite vs tasks.json"))
    ks = {"manifest.inputs.k": manifest.inputs.k, "report.k": report.get("k"),
          "manifest.results.k": manifest.results.get("k")}
    if "k" in params:
        ks["manifest.parameters.k"] = params.get("k")
    if len({repr(v) for v in ks.values()}) > 1:
        problems.append("k differs: " + ", ".join(f"{n} = {v!r}" for n, v in ks.items()))
    expected = expected_status(manifest)
    if manifest.status != expected:
        problems.append(f"manifest.status: recorded {manifest.status!r}, the stored documents "
                        f"say {expected!r}")


def expected_status(manifest: RunManifest) -> str:
    """The status a run's documents imply: ``completed`` (a manifest is written when every
    stage has recorded its document; a failed gate is a verdict, not a status)."""
    return "completed"


def _check_trials(run_id: str, manifest: RunManifest, tasks: Mapping, episodes: Mapping,
                  trial_keys: list, load: Any, checked: list, problems: list,
                  raw: Any = None) -> None:
    """Each per-trial file's key against its content, the per-trial files against
    episodes.json, and every task with exactly its trials 0..k-1 (a run of an agent)."""
    checked.append("per-trial files and trials per task")
    trials: dict = {}
    ingested = bool(manifest.source.get("kind"))
    for e in episodes["episodes"]:
        pair = stored_pair(e)
        if pair in trials and not ingested:  # a recorded source may not number its trials
            problems.append(f"episodes.json: task {pair[0]!r} trial {pair[1]!r} appears twice")
        trials[pair] = e
    found = []

    def compare(key: str, pair: tuple, ep: Mapping) -> None:
        found.append(pair)
        problems.extend(f"episodes.json vs {key}: {d}" for d in
                        _limited(differences(trials.get(pair, {}), ep, "episode")))

    for key, ep in segment_episodes(run_id, manifest, load, raw, problems):
        compare(key, stored_pair(ep), ep)
    for key in trial_keys:
        try:
            ep = load(key)
            pair = stored_pair(ep)
            where = episode_key(run_id, pair[0], pair[1])
        except (EkAgentsError, AttributeError, TypeError) as exc:
            problems.append(f"artifact {key} is not a stored trial: {exc}")
            continue
        if where != key:
            problems.append(f"artifact {key} holds task {pair[0]!r} trial {pair[1]!r}, whose key "
                            f"is {where} (a misfiled trial)")
        compare(key, pair, ep)
    if found and sorted(found, key=repr) != sorted(trials, key=repr):
        missing = sorted(set(trials) - set(found), key=repr)[:5]
        problems.append(f"episodes.json lists trials with no per-trial file: {missing}"
                        if missing else "per-trial files hold trials episodes.json does not list")
    if ingested:
        return  # an ingested run has the trials its source had
    k = manifest.inputs.k
    if manifest.sequential is not None:  # stopped after some batches: trial j of every task each
        k = len(manifest.sequential.looks) or k
    per_task: dict = {}
    for task_id, trial in trials:
        per_task.setdefault(task_id, []).append(trial)
    task_ids = [t.get("task_id") if isinstance(t, Mapping) else None for t in tasks["tasks"]]
    for tid in sorted(set(per_task) - set(task_ids), key=str):
        problems.append(f"episodes.json: task {tid!r} is not in the suite (tasks.json)")
    bad = [f"{tid!r}: {sorted(per_task.get(tid, []), key=_trial_order)}" for tid in task_ids
           if sorted(per_task.get(tid, []), key=_trial_order) != list(range(k))]
    if bad:
        problems.append(f"trials per task: each task needs exactly trials 0..{k - 1}; "
                        + "; ".join(bad[:5]) + (f" (+{len(bad) - 5} more)" if len(bad) > 5 else ""))


#: The figures of ``results`` that come from the cost report.
_DOLLARS = ("total_dollars", "cost_per_success", "cost_per_success_ci")


def _without(doc: Optional[Mapping], keys: tuple) -> dict:
    return {k: v for k, v in (doc or {}).items() if k not in keys}


def _with_labels(run_id: str, manifest: RunManifest, report: dict, graded: Mapping, tasks: Mapping,
                 read: Any, checked: list, problems: list) -> dict:
    """The recomputed report with the run's labels (its ``labels`` document, checked against
    ``manifest.inputs.labels``) applied, as the run applied them."""
    key = run_key(run_id, "labels")
    checked.append(f"{key}: the labels vs manifest.inputs.labels, and the judge correction")
    if key not in manifest.artifacts:
        problems.append(f"manifest.inputs.labels records labels {str(manifest.inputs.labels)[:12]}... "
                        f"but {key} is not listed in the manifest: the correction cannot be checked")
        return report
    try:
        labs = labels_of_doc(read("labels"), where=key)
    except EkAgentsError as exc:
        problems.append(str(exc))
        return report
    if labs.digest != manifest.inputs.labels:
        problems.append(f"{key}: labels digest {labs.digest[:12]}..., manifest.inputs.labels "
                        f"{str(manifest.inputs.labels)[:12]}...")
    return labels_stage(report, graded, labs, tasks, check=grading_of(manifest.inputs))


def _trial_order(trial: Any) -> tuple:
    """Sort key of a stored trial index: ints in numeric order (10 after 9), anything else
    after them by its repr."""
    return (0, trial, "") if type(trial) is int else (1, 0, repr(trial))
