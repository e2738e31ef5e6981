"""Audit a stored run: are its bytes the recorded bytes, and do its figures recompute?

:func:`audit` re-reads a run's manifest, checks the sha256 of every artifact it lists (and
that no per-trial episode file was added behind its back), then recomputes the grades, the
metrics, the cost report, the headline results and the gate verdict from the stored episodes
with the very stage functions the pipeline ran (:mod:`ek_agents.record`), and compares them
figure by figure with what was recorded. Each problem names the artifact or the figure. A run
recorded by ``harness.run_suite`` with an input it cannot store (a callable ``check``, custom
``metrics``, a single ``price``: ``record.UNSTORED`` or the metric names in its manifest's
inputs) gets a problem saying which figures cannot be recomputed; the rest is still compared.

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
from typing import Any, Optional

from .base import JsonShape
from .core import shape
from .errors import ArtifactNotFound, BaselineError, EkAgentsError
from .manifest import RunInputs, finite
from .store import baseline_key, episodes_prefix, parse_json, run_key, sha256_hex
from . import record

__all__ = ["AuditResult", "audit", "differences"]

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

    def summary(self) -> str:
        """One line: the verdict, what was checked, and the first problem."""
        what = f"run {self.run_id!r}" + (f" (baseline {self.baseline!r})" if self.baseline else "")
        if self.passed:
            return f"audit passed: {what}: {len(self.checked)} checks, every artifact and figure agrees"
        more = f" (+{len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return f"audit FAILED: {what}: {self.problems[0]}{more}"

    def markdown(self) -> str:
        """The summary as a Markdown heading, then one bullet per problem."""
        return "\n".join([f"# {self.summary()}", ""] + [f"- {p}" for p in self.problems]) + "\n"


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


def audit(store: Any, run_id: Optional[str] = None, *, baseline: Optional[str] = None) -> AuditResult:
    """Audit run ``run_id``, or the run that baseline ``baseline`` was promoted from.

    Raises ArtifactNotFound when the run has no manifest and BaselineError when the baseline
    does not exist or records no run; everything else that does not check out is a problem
    in the result (``passed`` False), never an exception.
    """
    checked: list[str] = []
    problems: list[str] = []
    if baseline is not None:
        run_id = _run_of_baseline(store, baseline, checked, problems)
    if run_id is None:
        raise BaselineError("audit needs a run id or a baseline name")
    manifest = store.read_manifest(run_id)
    seen, trial_keys = _check_bytes(store, run_id, manifest, checked, problems)
    try:
        _check_figures(store, run_id, manifest, seen, trial_keys, checked, problems)
    except (EkAgentsError, KeyError, TypeError, ValueError) as exc:
        problems.append(f"recomputation failed: {type(exc).__name__}: {exc}")
    return AuditResult(run_id=run_id, passed=not problems, checked=tuple(checked),
                       problems=tuple(problems), baseline=baseline)


def _run_of_baseline(store: Any, name: str, checked: list, problems: list) -> str:
    doc = store.load_baseline(name)
    if doc is None:
        raise BaselineError(f"no baseline named {name!r} in store {store.url!r}")
    detail = (doc.get("report") or {}).get("detail") or {}
    run_id = detail.get("run_id")
    if not run_id:
        raise BaselineError(f"baseline {name!r} records no run id: it was not promoted from a "
                            "pipeline run (ek-agents promote RUN_ID --name NAME), so there is "
                            "nothing to audit it against")
    manifest_key = run_key(run_id, "manifest")
    checked.append(f"{baseline_key(name)} -> {manifest_key}")
    try:
        actual = store.digest(manifest_key)
    except ArtifactNotFound:
        problems.append(f"baseline {name!r}: its run's manifest {manifest_key} is missing")
        return run_id
    if actual != detail.get("manifest_sha256"):
        problems.append(f"baseline {name!r}: {manifest_key} has sha256 {actual[:12]}..., the "
                        f"baseline recorded {str(detail.get('manifest_sha256'))[:12]}...")
    try:
        report = store.read_json(run_key(run_id, "report"))
    except ArtifactNotFound:
        return run_id  # reported by the byte check
    strip = lambda d: {**d, "detail": {k: v for k, v in (d.get("detail") or {}).items()  # noqa: E731
                                       if k not in ("run_id", "manifest_sha256")}}
    problems += [f"baseline {name!r}: {d}" for d in
                 _limited(differences(strip(doc["report"]), strip(report), "report"))]
    return run_id


def _check_bytes(store: Any, run_id: str, manifest: Mapping, checked: list,
                 problems: list) -> tuple[dict, list]:
    """Check every recorded sha256; return ``({key: bytes read}, the run's per-trial keys)``
    so that the recomputation reads nothing twice."""
    recorded = manifest.get("artifacts") or {}
    seen: dict[str, bytes] = {}
    for key, sha in sorted(recorded.items()):
        checked.append(key)
        try:
            seen[key] = store.read_bytes(key)
        except ArtifactNotFound:
            problems.append(f"artifact {key} is missing")
            continue
        actual = sha256_hex(seen[key])
        if actual != sha:
            problems.append(f"artifact {key}: its bytes hash to {actual[:12]}..., the manifest "
                            f"recorded {sha[:12]}... (changed after the run)")
    trial_keys = store.list(episodes_prefix(run_id))
    for key in trial_keys:
        if key not in recorded:
            problems.append(f"artifact {key} is not in the manifest (added after the run)")
    return seen, trial_keys


def _check_figures(store: Any, run_id: str, manifest: Mapping, seen: Mapping, trial_keys: list,
                   checked: list, problems: list) -> None:
    inputs = RunInputs.from_dict(manifest.get("inputs") or {})

    def load(key: str) -> Any:
        return parse_json(seen[key], key) if key in seen else store.read_json(key)

    read = lambda name: load(run_key(run_id, name))  # noqa: E731
    tasks, episodes = read("tasks"), read("episodes")
    prices_key = run_key(run_id, "prices")
    prices = load(prices_key) if prices_key in seen or store.exists(prices_key) else None

    trials = {(e["task_id"], (e.get("meta") or {}).get("trial")): e for e in episodes["episodes"]}
    for key in trial_keys:
        ep = load(key)
        pair = (ep.get("task_id"), (ep.get("meta") or {}).get("trial"))
        problems += [f"episodes.json vs {key}: {d}" for d in
                     _limited(differences(trials.get(pair, {}), ep, "episode"))]

    if inputs.check == record.UNSTORED:
        problems.append("graded, metrics, report, results: the run was graded by a callable "
                        "check (harness.run_suite(check=<function>)), which a run cannot store: "
                        "an audit cannot recompute these figures (only their bytes were checked)")
        return
    graded = record.grade_stage(episodes, tasks, check=inputs.check)
    metrics = record.metrics_stage(graded, tasks, k=inputs.k, seed=inputs.seed or 0, run=inputs.run)
    report = record.cost_stage(graded, metrics, prices, seed=inputs.seed or 0)
    recorded_report, recomputed_report = read("report"), report
    results, recomputed_results = manifest.get("results"), finite(record.results_of(report))
    if inputs.metrics:
        problems.append(f"report.detail.metrics: scored by custom Metric objects "
                        f"{list(inputs.metrics)} (harness.run_suite(metrics=...)), which a run "
                        "cannot store: an audit cannot recompute them (the rest of the report "
                        "is compared without them)")
        recorded_report = {**recorded_report, "detail": _without(recorded_report.get("detail"),
                                                                  ("metrics",))}
    if inputs.price == record.UNSTORED:
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
    if manifest.get("gate"):
        checked.append("recomputed gate verdict")
        verdict = record.regate(report, graded, read("baseline"), manifest["gate"], k=inputs.k,
                                tolerance=inputs.tolerance, cost_tolerance=inputs.cost_tolerance,
                                baseline_name=manifest["gate"].get("baseline"))
        problems += _limited(differences(manifest["gate"], verdict, "gate"))
        if manifest.get("sequential"):  # the typed copy of the sequential verdict
            again = {k: v for k, v in (verdict.get("sequential") or {}).items()
                     if k in manifest["sequential"] or k != "schema_version"}  # nested: unversioned
            problems += _limited(differences(manifest["sequential"], again, "sequential"))


#: The figures of ``results`` that come from the cost report.
_DOLLARS = ("total_dollars", "cost_per_success", "cost_per_success_ci")


def _without(doc: Optional[Mapping], keys: tuple) -> dict:
    return {k: v for k, v in (doc or {}).items() if k not in keys}
