"""The run record: a run's stored documents, the stage cache, the stages, baselines by name.

A run is a set of JSON documents under the store's run prefix (``store.run_key``): the tasks,
the prices, the episodes, the graded episodes, the metrics, the report, the gate verdict and
the manifest listing each with its sha256. Each stage here turns the documents of its inputs
into the document of its output by calling the library (``metrics.grade``,
``reporting.reliability_with_run``, ``reporting.with_cost``, ``gate.regression_gate``); the
``run_*`` functions are one stage each over a store -- they compute their own input digest,
reuse the stage cache (:func:`cached`: an output is a content-addressed artifact indexed by
that digest) and return the :class:`StageRef` the next stage takes. The library's persisted
``harness.run_suite``, the audit (:mod:`ek_agents.audit`) and the Prefect tasks in ``tasks/``
all use this module, so a recorded figure and its recomputation can only differ when stored
bytes differ.

>>> from ek_agents.store import Store
>>> s = Store("memory://ek-record-doctest")
>>> calls = []
>>> doc, sha, hit = cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})
>>> doc, hit, cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})[2], len(calls)
({'y': 9}, False, True, 1)
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Union

from pydantic import Field

from . import bridge
from .base import Episode, JsonShape, RunProvenance, TaskSpec, Trajectory, task_table
from .core import shape
from .errors import (ArtifactNotFound, BaselineError, DigestMismatch, DocumentError,
                     IntegrityError, InvalidInput, RunMismatch, UnknownName, did_you_mean)
from .gate import AgentGateResult, as_report, as_run, regression_gate
from .manifest import (DOCUMENTS, RunInputs, RunManifest, as_plain, check_baseline,
                       check_document, check_manifest, check_report, input_digest,
                       utc_now)
from .metrics import grade
from .prices import ModelPrice, load_prices
from .reporting import ReliabilityReport, reliability_with_run, with_cost
from .segments import RunSegments, iter_segments
from .sequential import (DEFAULT_MIN_EFFECT, SequentialVerdict, gate_document, per_check_alpha,
                         replay_sequential)
from .store import (Store, artifact_key, baseline_key, cache_key, canonical_json, episode_key,
                    episodes_prefix, open_store, parse_json, read_url, run_key, sha256_hex)
from .suite import load_suite

__all__ = [
    "lookup", "cached", "stage_output", "write_doc", "write_tasks", "source_digest",
    "episodes_doc", "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes", "read_source",
    "SOURCES", "prices_doc", "prices_of", "grade_stage", "metrics_stage", "cost_stage",
    "gate_stage", "guarded_gate", "sequential_stage", "regate", "results_of", "trial_digests", "record_run", "run_report",
    "load_baseline", "gate_run", "promote", "UNSTORED", "save_agent_baseline",
    "load_agent_baseline", "agent_regression_gate", "BASELINE_KIND", "record_suite",
    "record_prices", "ingest_run", "ingest_suite", "run_grade", "run_metrics", "run_cost",
    "run_gate", "write_gate", "run_sequential_gate", "promote_baseline", "StageRef", "SuiteRef", "GateRef",
    "ManifestRef", "read_manifest", "read_run_doc", "check_run_doc", "read_ref",
    "ManifestRef", "RunFingerprint", "RunReuse", "agent_config", "agent_name", "code_digest",
    "claim_run", "index_output", "trial_matches", "errored", "cache_origin", "EK_CONFIG",
    "StoredTrial", "EpisodesRef", "read_trials", "episodes_bytes", "read_episodes", "forget_episodes",
    "EPISODES_MEMO_DOCS", "EPISODES_MEMO_EPISODES", "PlainEpisodeJson", "trial_grader",
    "remember_graded",
]

#: What a library run (``harness.run_suite``) records in its manifest inputs for an input it
#: cannot store (a callable ``check``, a single ``price``): an audit cannot recompute from it.
UNSTORED = "<not stored: a Python object>"

#: ``kind`` tag of a stored baseline document.
BASELINE_KIND = "ek-agents/agent-baseline"


# --------------------------------------------------------------------------- references

@shape()
class StageRef(JsonShape):
    """One stored document of a run, as the next stage takes it: small and JSON, so it travels
    to any worker (a thread, a Dask worker, another machine sharing the store)."""

    stage: str
    """The document's name in the run: ``tasks``, ``prices``, ``episodes``, ``graded``,
    ``metrics``, ``report``, ``baseline``, ``gate`` or ``manifest``."""
    key: str
    """Its store key (``store.run_key(run_id, stage)``)."""
    sha256: str
    """sha256 of its bytes as written (what the manifest records)."""
    artifact: Optional[str] = None
    """A cached stage's content-addressed artifact (its sha256); None for an input document."""
    input_digest: Optional[str] = None
    """A cached stage's input digest: everything that decided it (``manifest.input_digest``)."""
    cached: Optional[bool] = None
    """Whether a cached stage was served from the stage cache (None for an input document)."""
    reused: Optional[int] = None
    """Episodes only: how many trials were reused rather than run (a cache hit: all of them;
    a resume: those already stored); None for other stages."""
    reused_from: Optional[str] = None
    """Episodes only: the run the reused trials came from (this run on a resume)."""


@shape()
class EpisodesRef(StageRef):
    """The run's episodes document, with each per-trial file's sha256 as the run wrote (or,
    for a trial kept from an earlier attempt, read) it: :func:`record_run` lists these rather
    than listing and re-hashing the run's folder."""

    trials: Optional[dict[str, str]] = None
    """``{store key: sha256}`` of every per-trial file of the run; None: not known (the run's
    folder is listed and hashed)."""


@shape()
class SuiteRef(StageRef):
    """The run's tasks document, with the suite's identity (what later stages key their caches
    on -- the file's path is not identity)."""

    name: str = ""
    """The suite's name."""
    version: str = ""
    """The suite's version (recorded as the run's ``suite_version`` provenance)."""
    digest: str = ""
    """sha256 of the suite's canonical content."""


@shape()
class GateRef(StageRef):
    """The run's gate verdict, with the baseline it was computed against."""

    baseline: Optional[StageRef] = None
    """The copy of the baseline document the gate used (the audit re-checks against it)."""
    verdict: dict = Field(default_factory=dict)
    """The verdict: ``AgentGateResult.to_dict()`` plus ``baseline`` (its name), or ``passed``
    False with ``refused`` and ``error`` when the gate refused the baseline."""


@shape()
class ManifestRef(StageRef):
    """The run's manifest, with its content (so a later task need not read it back)."""

    manifest: dict = Field(default_factory=dict)
    """``RunManifest.to_dict()`` as written."""


# --------------------------------------------------------------------------- the stage cache

def lookup(store: Any, stage: str, digest: str) -> Optional[tuple[Any, str]]:
    """``(document, artifact sha256)`` cached for ``stage`` with input digest ``digest``, or None.

    The cache index (``store.cache_key(stage, digest)``) points to a content-addressed artifact, verified against its
    sha256 on load; an index whose artifact is gone or damaged is a miss (recomputed, never
    trusted).
    """
    found = _lookup_bytes(store, stage, digest)
    return None if found is None else (parse_json(found[0], artifact_key(found[1])), found[1])


def _lookup_bytes(store: Any, stage: str, digest: str) -> Optional[tuple[bytes, str]]:
    """:func:`lookup` without parsing: ``(the artifact's verified bytes, its sha256)``."""
    try:
        record = store.read_json(cache_key(stage, digest))
        return store.get_artifact_bytes(record["artifact"]), record["artifact"]
    except (ArtifactNotFound, IntegrityError, KeyError, TypeError, InvalidInput):
        return None


def cached(store: Any, stage: str, digest: str, compute: Callable[[], Any],
           run_id: Optional[str] = None) -> tuple[Any, str, bool]:
    """``(document, artifact sha256, hit)``: :func:`lookup`, else ``compute()`` stored and
    indexed under ``digest`` (with ``run_id``, the run that produced it: :func:`cache_origin`)."""
    found = lookup(store, stage, digest)
    if found is not None:
        return found[0], found[1], True
    doc = as_plain(compute())
    return doc, _put_indexed(store, stage, digest, doc, run_id), False


def _put_indexed(store: Any, stage: str, digest: str, doc: Any, run_id: Optional[str]) -> str:
    sha = store.put_artifact(doc)
    store.write_json(cache_key(stage, digest), {"stage": stage, "input_digest": digest,
                                                "artifact": sha, "created_at": utc_now(),
                                                "run_id": run_id})
    return sha


def cache_origin(store: Any, stage: str, digest: str) -> Optional[str]:
    """The run whose output the cache holds for ``stage`` / ``digest`` (None: unknown)."""
    try:
        origin = store.read_json(cache_key(stage, digest)).get("run_id")
    except (ArtifactNotFound, IntegrityError, AttributeError):
        return None
    return origin if isinstance(origin, str) else None


def stage_output(store: Any, run_id: str, stage: str, digest: str,
                 compute: Optional[Callable[[], Any]] = None) -> Optional[StageRef]:
    """Run (or reuse) a stage and write its document to ``store.run_key(run_id, stage)``.

    Returns the :class:`StageRef` the next stage takes. Without ``compute`` only a cache hit
    is used: None on a miss.
    """
    key = run_key(run_id, stage)
    found = _lookup_bytes(store, stage, digest)
    if found is not None:  # a hit: the artifact's verified bytes, copied as they are
        return StageRef(stage=stage, key=key, sha256=store.write_bytes(key, found[0]),
                        artifact=found[1], input_digest=digest, cached=True)
    if compute is None:
        return None
    made = compute()  # the document, or its canonical JSON bytes already
    doc = made if isinstance(made, bytes) else as_plain(made)
    artifact = _put_indexed(store, stage, digest, doc, run_id)
    sha = store.write_bytes(key, doc) if isinstance(doc, bytes) else store.write_json(key, doc)
    return StageRef(stage=stage, key=key, sha256=sha, artifact=artifact, input_digest=digest,
                    cached=False)


def index_output(store: Any, run_id: str, stage: str, digest: str, doc: Any) -> StageRef:
    """Store ``doc`` as what ``digest`` produced in run ``run_id`` (replacing any older entry
    of the stage cache under that digest: a refreshed or retried run's episodes are the newest
    production of those inputs) and write it as the run's ``stage`` document. ``doc`` may be
    its canonical JSON bytes already (:func:`episodes_bytes`)."""
    data = doc if isinstance(doc, bytes) else canonical_json(as_plain(doc))
    sha = _put_indexed(store, stage, digest, data, run_id)
    key = run_key(run_id, stage)
    return StageRef(stage=stage, key=key, sha256=store.write_bytes(key, data), artifact=sha,
                    input_digest=digest, cached=False)


def write_doc(store: Any, run_id: str, name: str, doc: Any) -> StageRef:
    """Write a run's input document (suite, prices, baseline) and return its reference."""
    key = run_key(run_id, name)
    return StageRef(stage=name, key=key, sha256=store.write_json(key, as_plain(doc)))


def write_tasks(store: Any, run_id: str, doc: Mapping) -> SuiteRef:
    """Write a run's tasks document; its reference also carries the suite's name, version and
    digest."""
    ref = write_doc(store, run_id, "tasks", doc)
    return SuiteRef(stage=ref.stage, key=ref.key, sha256=ref.sha256, name=doc["name"],
                    version=doc["version"], digest=doc["digest"])


def source_digest(path_or_url: str) -> str:
    """sha256 of a source file's bytes (a local path or any fsspec URL: ``store.read_url``)."""
    return sha256_hex(read_url(path_or_url, what="recorded run"))


# --------------------------------------------------------------------------- documents

def episodes_doc(episodes: Iterable[Episode]) -> dict:
    """The stored form of a list of episodes."""
    return {"schema_version": 1, "episodes": [e.to_dict() for e in episodes]}


def episodes_bytes(trials: Iterable["StoredTrial"]) -> bytes:
    """The canonical JSON bytes of :func:`episodes_doc` of the given stored trials, assembled
    from their stored bytes (each already canonical JSON of ``Episode.to_dict()``) without
    parsing or re-serializing one episode: equal to ``canonical_json(episodes_doc(eps))``."""
    return _doc_bytes(t.data for t in trials)


def _doc_bytes(episodes: Iterable[str]) -> bytes:
    """:func:`episodes_doc`'s canonical JSON from each episode's canonical JSON (ASCII)."""
    return b'{"episodes":[' + ",".join(episodes).encode("ascii") + b'],"schema_version":1}'


def episodes_of(doc: Mapping) -> list[Episode]:
    """The episodes of :func:`episodes_doc`'s output."""
    return [Episode.from_dict(e) for e in doc["episodes"]]


def tasks_doc(suite: Any) -> dict:
    """The stored form of a suite: its identity and every task (for grading and audits).

    ``suite`` is a loaded :class:`~ek_agents.suite.Suite`, or tasks in any form
    ``base.task_table`` takes (a library run): named ``"tasks"``, identified by the sha256 of
    their canonical JSON.
    """
    if not hasattr(suite, "digest"):
        tasks = [t.to_dict() for t in task_table(suite).values()]
        digest = sha256_hex(canonical_json(tasks))
        return {"schema_version": 1, "name": "tasks", "version": f"sha256:{digest[:12]}",
                "digest": digest, "path": "", "checker": None, "tasks": tasks}
    return {"schema_version": 1, "name": suite.name, "version": suite.version,
            "digest": suite.digest, "path": str(suite.path), "checker": suite.checker,
            "tasks": [t.to_dict() for t in suite.tasks]}


def tasks_of(doc: Mapping) -> list[TaskSpec]:
    """The tasks of :func:`tasks_doc`'s output."""
    return [TaskSpec.from_dict(t) for t in doc["tasks"]]


def tasks_for_episodes(episodes: Iterable[Episode], *, name: str = "ingested") -> dict:
    """A tasks document for ingested episodes with no suite: one gold-less task per task id,
    graded by the success the source recorded (checker ``"recorded"``)."""
    ids = sorted({e.task_id for e in episodes})
    digest = sha256_hex("\n".join(ids).encode())
    return {"schema_version": 1, "name": name, "version": f"ids:{digest[:12]}", "digest": digest,
            "path": "", "checker": "recorded",
            "tasks": [TaskSpec(t, checker="recorded").to_dict() for t in ids]}


#: ``ingest`` kinds -> the bridge reader of that format.
SOURCES = {"inspect": "read_inspect_log", "tau-bench": "read_tau_bench_results",
           "messages": "read_messages_jsonl"}


def read_source(kind: str, path: str) -> list[Episode]:
    """Episodes from a recorded run: ``kind`` is one of :data:`SOURCES`."""
    if kind not in SOURCES:
        raise UnknownName(f"unknown ingest kind {kind!r}: use one of {sorted(SOURCES)}"
                          f"{did_you_mean(str(kind), SOURCES)}")
    return list(getattr(bridge, SOURCES[kind])(path))


def prices_doc(source: Any) -> Optional[dict]:
    """The price catalog as stored with a run: ``{model: ModelPrice dict}`` (None: no prices).

    ``source`` is what ``prices.load_prices`` reads (a LiteLLM catalog's path, URL or mapping)
    or an already-loaded ``{model: ModelPrice}`` table.
    """
    if source is None:
        return None
    loaded = isinstance(source, Mapping) and source and all(
        isinstance(p, ModelPrice) for p in source.values())
    table = source if loaded else load_prices(source)
    return {"schema_version": 1, "models": {m: as_plain(p) for m, p in sorted(table.items())}}


def prices_of(doc: Optional[Mapping]) -> Optional[dict]:
    """The ``{model: ModelPrice}`` table of :func:`prices_doc`'s output (None: no prices)."""
    if doc is None:
        return None
    return {m: ModelPrice.from_dict(p) for m, p in doc["models"].items()}


# --------------------------------------------------------------------------- the stages

def grade_stage(episodes: Mapping, tasks: Mapping, *, check: Any = None) -> dict:
    """Grade stored episodes against the stored suite (``metrics.grade``)."""
    return episodes_doc(_graded(episodes_of(episodes), tasks, check))


def _graded(episodes: list[Episode], tasks: Mapping, check: Any) -> list[Episode]:
    return grade(episodes, tasks_of(tasks), check=check if check is not None else tasks.get("checker"))


def metrics_stage(graded: Mapping, tasks: Mapping, *, k: int, seed: int = 0,
                  run: Optional[Mapping] = None) -> dict:
    """Reliability of graded episodes: success, pass@k, pass^k, per task and slice.

    ``detail["run"]`` records the run's provenance (what the gate checks comparability on):
    ``run`` as given, its empty fields filled from what the agent recorded on its episodes
    (``reporting.run_provenance``); ``detail["errors"]`` counts the errored trials. The same
    helper as ``reporting.build_report``.
    """
    return _metrics(episodes_of(graded), tasks, k=k, seed=seed, run=run)


def _metrics(graded: list[Episode], tasks: Mapping, *, k: int, seed: int,
             run: Optional[Mapping]) -> dict:
    return reliability_with_run(graded, tasks_of(tasks), k=k, seed=seed,
                                run=RunProvenance.from_dict(run) if run else None).to_dict()


def cost_stage(graded: Mapping, metrics: Mapping, prices: Optional[Mapping], *, seed: int = 0) -> dict:
    """The report: :func:`metrics_stage`'s reliability carrying ``cost.cost_report`` of all
    episodes, with one ``cost_report`` per slice under ``cost["per_slice"]`` (the same helper
    as ``reporting.build_report``)."""
    return _cost(episodes_of(graded), metrics, prices, seed=seed)


def _cost(graded: list[Episode], metrics: Mapping, prices: Optional[Mapping], *, seed: int) -> dict:
    return with_cost(ReliabilityReport.from_dict(metrics), graded, prices=prices_of(prices),
                     seed=seed).to_dict()


def gate_stage(report: Mapping, baseline: Mapping, *, tolerance: float = 0.0,
               cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a report against a loaded baseline (``gate.regression_gate``).

    An incomparable or malformed baseline raises (a ValueError naming why).
    """
    if not isinstance(baseline, Mapping):
        raise BaselineError(f"baseline must be a stored baseline document, got {baseline!r:.80}")
    verdict = regression_gate(ReliabilityReport.from_dict(report), dict(baseline),
                                    tolerance=tolerance, cost_tolerance=cost_tolerance)
    return verdict.to_dict()  # non-finite floats already encoded, as reports do


def guarded_gate(report: Mapping, baseline: Mapping, *, tolerance: float = 0.0,
                 cost_tolerance: float = 0.0, baseline_name: Optional[str] = None) -> dict:
    """:func:`gate_stage`, with a baseline the gate refuses (incomparable, empty, malformed:
    a ValueError) turned into a verdict ``{"passed": False, "refused": message, "error": type}``
    that can be recorded before the run fails with it."""
    try:
        verdict = gate_stage(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance)
    except ValueError as exc:
        verdict = {"passed": False, "refused": str(exc), "error": type(exc).__name__}
    return {**verdict, "baseline": baseline_name}


def sequential_stage(graded: Mapping, baseline: Mapping, *, k: int, alpha: float,
                     tolerance: float = 0.0, min_effect: float,
                     baseline_name: Optional[str] = None) -> dict:
    """The gate document of a sequentially gated run, recomputed from its graded episodes and
    the baseline it used (``sequential.replay_sequential`` -> ``sequential.gate_document``)."""
    base = baseline.get("report", baseline) if isinstance(baseline, Mapping) else baseline
    verdict = replay_sequential(episodes_of(graded), base, k=k, alpha=alpha, tolerance=tolerance,
                                min_effect=min_effect)
    return gate_document(verdict, baseline_name)


def regate(report: Mapping, graded: Mapping, baseline: Mapping, recorded: Optional[Mapping], *,
           k: int, tolerance: float = 0.0, cost_tolerance: float = 0.0,
           baseline_name: Optional[str] = None) -> dict:
    """The gate verdict of a stored run, recomputed the way the run was gated: a sequential
    run (its ``recorded`` verdict has ``sequential``) replays its looks with the recorded
    level and minimum effect (:func:`sequential_stage`); any other is :func:`guarded_gate`."""
    seq = (recorded or {}).get("sequential")
    if not seq:
        return guarded_gate(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance,
                            baseline_name=baseline_name)
    v = SequentialVerdict.from_dict(seq)
    return sequential_stage(graded, baseline, k=k, alpha=v.alpha, tolerance=tolerance,
                            min_effect=v.min_effect, baseline_name=baseline_name)


def results_of(report: Mapping) -> dict:
    """The headline figures of a report document (what a manifest records as ``results``)."""
    cost = report.get("cost") or {}
    return {
        "k": report.get("k"), "n_tasks": report.get("n_tasks"), "n_trials": report.get("n_trials"),
        "n_success": report.get("n_success"), "success_rate": report.get("success_rate"),
        "success_ci": report.get("success_ci"), "pass_at_k": report.get("pass_at_k"),
        "pass_hat_k": report.get("pass_hat_k"), "pass_hat_k_ci": report.get("pass_hat_k_ci"),
        "total_dollars": cost.get("total_dollars"), "cost_per_success": cost.get("cost_per_success"),
        "cost_per_success_ci": cost.get("cost_per_success_ci"),
        "per_slice": {label: {"success_rate": s.get("success_rate"), "pass_hat_k": s.get("pass_hat_k"),
                              "n_trials": s.get("n_trials")}
                      for label, s in (report.get("per_slice") or {}).items()},
    }


# --------------------------------------------------------------------------- the run record

def trial_digests(store: Any, run_id: str) -> dict[str, str]:
    """``{key: sha256}`` of every per-trial episode file the harness stored for the run, and
    of its segments and segment index documents (``ek_agents.segments``)."""
    keys = store.list(episodes_prefix(run_id))
    with ThreadPoolExecutor(max_workers=8) as pool:
        return {**dict(zip(keys, pool.map(store.digest, keys))),
                **RunSegments.load(store, run_id).digests()}


def record_run(store: Any, run_id: str, *, refs: Mapping[str, Optional[StageRef]],
               inputs: RunInputs, agent: Optional[str] = None, source: Optional[Mapping] = None,
               parameters: Optional[Mapping] = None,
               orchestrator: Optional[Mapping] = None) -> ManifestRef:
    """Write the run's manifest (``store.run_key(run_id, "manifest")``) from the stages'
    references; return its reference.

    ``refs`` maps a stage name to its reference (``tasks``, ``prices``, ``episodes``,
    ``graded``, ``metrics``, ``report``, ``gate``; None when a stage did not run). Every stage
    document, the baseline the gate used and every per-trial episode file is listed with its
    sha256 (an :class:`EpisodesRef` with ``trials`` carries the per-trial digests the run
    computed as it wrote them: the run's folder is then neither listed nor re-hashed); the results are the report's headline figures, the gate its verdict. ``inputs``
    are the values the stages were computed with: what an audit recomputes them with.
    """
    if not isinstance(inputs, RunInputs):
        raise InvalidInput(f"record_run: inputs must be a RunInputs, got {type(inputs).__name__}")
    refs = {name: ref for name, ref in refs.items() if ref}
    artifacts = {ref.key: ref.sha256 for ref in refs.values()}
    gate = refs.get("gate")
    if gate is not None and gate.baseline is not None:
        artifacts[gate.baseline.key] = gate.baseline.sha256
    episodes = refs.get("episodes")
    known = episodes.trials if isinstance(episodes, EpisodesRef) else None
    artifacts.update(known if known is not None else trial_digests(store, run_id))
    if known is not None:  # the segments' index documents: what says which trials count
        artifacts.update(RunSegments.load(store, run_id).digests())
    fingerprint = None
    if store.exists(_fingerprint_key(run_id)):  # a run of agent trials: what decided them
        fingerprint = store.read_json(_fingerprint_key(run_id))
        artifacts[_fingerprint_key(run_id)] = store.digest(_fingerprint_key(run_id))
    tasks = read_ref(store, refs["tasks"])
    report = read_ref(store, refs["report"])
    manifest = RunManifest.build(
        run_id, provenance=RunProvenance.from_dict((report.get("detail") or {}).get("run") or {}),
        inputs=inputs,
        suite={f: tasks.get(f) for f in ("name", "version", "digest", "path", "checker")},
        agent=agent, source=dict(source or {}), parameters=dict(parameters or {}),
        orchestrator=dict(orchestrator or {}), artifacts=artifacts,
        stages={name: {"input_digest": ref.input_digest, "cached": ref.cached,
                       "artifact": ref.artifact,
                       **({} if ref.reused is None else {"reused": ref.reused,
                                                         "reused_from": ref.reused_from})}
                for name, ref in refs.items()
                if ref.input_digest is not None or ref.reused is not None},
        results=results_of(report), fingerprint=fingerprint,
        gate=gate.verdict if gate is not None else None,
        sequential=(gate.verdict or {}).get("sequential") if gate is not None else None)
    return ManifestRef(stage="manifest", key=run_key(run_id, "manifest"),
                       sha256=store.write_manifest(run_id, manifest), manifest=manifest.to_dict())


# --------------------------------------------------------------------------- verified reads
# A command that uses a stored run's documents (report, gate, promote, the flows) reads them
# here: the manifest validated (DocumentError naming the field), each document's bytes checked
# against the manifest's sha256 (DigestMismatch: the audit's exit code) and its shape validated.

def read_manifest(store: Any, run_id: str) -> RunManifest:
    """The manifest of ``run_id``, validated: ArtifactNotFound when the run has none,
    DocumentError naming the field when it is malformed (or belongs to another run)."""
    key = run_key(run_id, "manifest")
    manifest = check_manifest(store.read_manifest(run_id), key)
    if manifest.run_id != run_id:
        raise DocumentError(f"stored {key} is malformed: field 'run_id' is {manifest.run_id!r}, "
                            f"not {run_id!r} (a manifest copied from another run); re-create "
                            "the run (or restore the file)")
    return manifest


def check_run_doc(name: str, doc: Any, key: str) -> Any:
    """``doc`` (run document ``name`` read from ``key``) validated by its model
    (``manifest.DOCUMENTS``; the report by ``manifest.check_report``); returned unchanged."""
    if name in ("report", "metrics"):
        check_report(doc, key)
    elif name == "baseline":
        check_baseline(doc, key)
    elif name in DOCUMENTS:
        check_document(DOCUMENTS[name], doc, key)
    elif name == "prices" and doc is not None:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("models"), Mapping):
            raise DocumentError(f"stored {key} is malformed: field 'models' must be an object "
                                f"of model -> rates, got {doc!r:.60}; re-create the run")
    return doc


def read_run_doc(store: Any, manifest: RunManifest, name: str) -> Any:
    """Run document ``name`` (``report``, ``gate``, ...) of the run ``manifest`` describes,
    verified: its bytes must hash to the sha256 the manifest lists for it, else
    :class:`~ek_agents.errors.DigestMismatch` (an AuditFailed: the CLI exits 1) naming it;
    then its shape is validated (:func:`check_run_doc`)."""
    run_id = manifest.run_id
    key = run_key(run_id, name)
    recorded = manifest.artifacts.get(key)
    fix = f"run `ek-agents audit {run_id}` to see what changed, or re-create the run"
    if recorded is None:
        raise DigestMismatch(f"run {run_id!r}: {key} is not listed in the run's manifest, so its "
                             f"content cannot be verified; refusing to use it: {fix}")
    try:
        data = store.read_bytes(key)
    except ArtifactNotFound:
        raise DigestMismatch(f"run {run_id!r}: {key} is listed in the manifest but missing from "
                             f"store {store.url!r}: {fix}") from None
    actual = sha256_hex(data)
    if actual != recorded:
        raise DigestMismatch(f"run {run_id!r}: {key} has sha256 {actual[:12]}..., its manifest "
                             f"recorded {recorded[:12]}... (changed after the run); refusing to "
                             f"use it: {fix}")
    return check_run_doc(name, parse_json(data, key), key)


def read_ref(store: Any, ref: StageRef) -> Any:
    """The document a stage reference points to, verified: its bytes must still hash to
    ``ref.sha256`` (what the stage wrote, what the manifest will list), else DigestMismatch
    naming it; then its shape is validated (:func:`check_run_doc`). What the next stage reads."""
    return check_run_doc(ref.stage, parse_json(_verified_bytes(store, ref), ref.key), ref.key)


def _verified_bytes(store: Any, ref: StageRef) -> bytes:
    data = store.read_bytes(ref.key)
    actual = sha256_hex(data)
    if actual != ref.sha256:
        raise DigestMismatch(f"{ref.key} has sha256 {actual[:12]}..., but its stage wrote "
                             f"{ref.sha256[:12]}... (changed since: another writer on this run "
                             "id, or an edit); re-run with a fresh run id")
    return data


# An episodes / graded document this process parsed or wrote, by the sha256 of its bytes: the
# next stage in the same process that reads those bytes (verified: read and hashed, as
# :func:`read_ref`) takes the episodes already validated instead of parsing 10 MB and validating
# 20,000 Episodes again. Only documents whose episodes came from parsing stored bytes (or from
# grading such episodes) are kept, so an entry equals what parsing its bytes gives. The audit
# never reads through it (it re-reads and re-hashes the store); another process (a Dask
# worker, a resumed run) starts empty and reads the store. Episodes are frozen; every stage
# of this module builds new episodes and never mutates its input's ``meta``.
_EPISODES_MEMO: "OrderedDict[str, tuple[Episode, ...]]" = OrderedDict()
_EPISODES_MEMO_LOCK = threading.Lock()
#: At most this many documents, and this many episodes over all of them, are kept.
EPISODES_MEMO_DOCS, EPISODES_MEMO_EPISODES = 4, 200_000


def _remember_episodes(sha256: str, episodes: Iterable[Episode]) -> None:
    kept = tuple(episodes)
    with _EPISODES_MEMO_LOCK:
        _EPISODES_MEMO[sha256] = kept
        _EPISODES_MEMO.move_to_end(sha256)
        while len(_EPISODES_MEMO) > EPISODES_MEMO_DOCS or (
                len(_EPISODES_MEMO) > 1
                and sum(map(len, _EPISODES_MEMO.values())) > EPISODES_MEMO_EPISODES):
            _EPISODES_MEMO.popitem(last=False)


#: Graded documents made ahead of their stage in this process (:func:`remember_graded`), by
#: the graded stage's input digest: ``(canonical JSON bytes, graded episodes)``; taken once.
_GRADED_MEMO: "OrderedDict[str, tuple[bytes, tuple[Episode, ...]]]" = OrderedDict()
GRADED_MEMO_DOCS = 2


#: The exact types a plain episode's output and ``meta`` values may have (a finite ``float``
#: too): each is its own JSON, and parsing that JSON gives back an equal value of that type.
_PLAIN_TYPES = (str, int, bool, type(None))


#: Distinct ``run`` provenance objects a :class:`PlainEpisodeJson` keeps the JSON of (the
#: harness shares one per trial seed); episodes of any other go the general way.
PLAIN_RUNS = 256


class PlainEpisodeJson:
    """``canonical_json(episode.to_dict())`` of a *plain* episode, assembled from a few
    pieces instead of pydantic's dump, the depth walk and a sorted dump of the nested dict
    (~8 us instead of ~30 us a trial: the harness's per-trial CPU on the event loop, and the
    chunks' grading on the writer threads). Call it with an episode: its canonical JSON bytes,
    or None when the episode is not plain (the caller then takes the general path).

    Plain: exactly an :class:`~ek_agents.base.Episode` (no subclass) with no steps, no
    ``final_state``, ``cost`` or ``provenance``, ``success`` True / False / None, an
    ``output`` that is a ``str`` / ``int`` / ``bool`` / ``None`` / finite ``float`` (exact
    types), and a flat ``meta`` of such values under string keys -- what
    ``harness.run_trials`` makes of an agent's plain answer. Such an episode's JSON parses back
    to an equal episode, so grading it or the stored bytes gives the same result.

    Every byte is the general path's: each distinct ``run`` provenance's first episode is
    also encoded the general way and compared (an instance whose pieces ever disagree -- a
    field added to ``Episode`` -- encodes nothing from then on);
    ``tests/harness/test_plain_episode_json.py`` compares both on varied episodes.
    """

    def __init__(self) -> None:
        self._runs: dict[int, tuple[Any, bytes]] = {}  # id(run) -> (run, its JSON): run kept alive
        self._broken = False

    def __call__(self, ep: Any) -> Optional[bytes]:
        if self._broken or type(ep) is not Episode:
            return None
        own = ep.__dict__
        out, meta, success = own["output"], own["meta"], own["success"]
        traj = own["trajectory"]
        if (type(traj) is not Trajectory or traj.steps or own["final_state"] is not None
                or own["cost"] is not None or own["provenance"] is not None
                or not (success is None or type(success) is bool)
                or not _plain_value(out) or type(meta) is not dict):
            return None
        for key, value in meta.items():
            if type(key) is not str or not _plain_value(value):
                return None
        run = own["run"]
        held = self._runs.get(id(run))
        first = held is None or held[0] is not run
        if first:
            if len(self._runs) >= PLAIN_RUNS:  # one provenance per trial seed is the norm
                return None
            general = ep.to_dict()  # this episode the general way: its run's JSON, and a check
            held = self._runs[id(run)] = (run, canonical_json(general.get("run")))
        try:
            data = b"".join((
                b'{"cost":null,"final_state":null,"meta":', canonical_json(meta),
                b',"output":', canonical_json(out), b',"provenance":null,"run":', held[1],
                b',"schema_version":1,"success":',
                b"null" if success is None else b"true" if success else b"false",
                b',"task_id":', canonical_json(own["task_id"]), b',"trajectory":{"steps":[]}}'))
        except InvalidInput:  # an int too long to print, say: the general path says why
            return None
        if first and data != canonical_json(general):
            self._broken = True
            return None
        return data


def _plain_value(v: Any) -> bool:
    return type(v) in _PLAIN_TYPES or (type(v) is float and math.isfinite(v))


def trial_grader(tasks: Mapping, check: Optional[str]
                 ) -> Callable[..., Optional[tuple[Episode, str]]]:
    """A function grading one stored trial as :func:`run_grade` grades it (the same parse,
    validation and ``metrics.grade`` with ``check``, else the suite's checker): ``(graded
    episode, its canonical JSON)``, or None when it cannot be graded here (the grade stage
    then grades, and says why). The suite's task table is built once, here.

    Called as ``one(trial, episode)`` with the episode the trial's bytes were made from, when
    those bytes are :class:`PlainEpisodeJson`'s (they parse back to an equal episode): that
    episode is graded without parsing the bytes again, and the graded bytes are assembled the
    same way (the same bytes as parsing, grading and dumping: tested)."""
    table = {t.task_id: t for t in tasks_of(tasks)}
    name = check if check is not None else tasks.get("checker")
    plain = PlainEpisodeJson()

    def one(trial: "StoredTrial", episode: Optional[Episode] = None
            ) -> Optional[tuple[Episode, str]]:
        try:
            given = episode is not None
            if episode is None:
                doc = check_run_doc("episodes", parse_json(episodes_bytes([trial]), trial.key),
                                    trial.key)
                (episode,) = episodes_of(doc)
            (graded,) = grade([episode], {episode.task_id: table[episode.task_id]}, check=name)
            data = (plain(graded) if given else None) or canonical_json(graded.to_dict())
            return graded, data.decode("ascii")
        except Exception:  # noqa: BLE001 -- an optimisation only: the grade stage reports it
            return None

    return one


def remember_graded(episodes_sha256: str, suite_digest: str, check: Optional[str],
                    graded: Iterable[Episode], data: Iterable[str]) -> None:
    """Keep (in this process) the graded document of the episodes document ``episodes_sha256``
    -- ``graded`` episodes in its order, ``data`` their canonical JSON (:func:`trial_grader`)
    -- for :func:`run_grade` with the same inputs to take instead of grading again."""
    digest = graded_digest(episodes_sha256, suite_digest, check)
    with _EPISODES_MEMO_LOCK:
        _GRADED_MEMO[digest] = (_doc_bytes(data), tuple(graded))
        while len(_GRADED_MEMO) > GRADED_MEMO_DOCS:
            _GRADED_MEMO.popitem(last=False)


def forget_episodes() -> None:
    """Empty this process's memo of parsed episodes documents (:func:`read_episodes`): the
    next read of each parses its stored bytes again."""
    with _EPISODES_MEMO_LOCK:
        _EPISODES_MEMO.clear()
        _GRADED_MEMO.clear()


def read_episodes(store: Any, ref: StageRef) -> list[Episode]:
    """:func:`episodes_of` :func:`read_ref` of an episodes (or graded) reference: the bytes
    are read and must hash to ``ref.sha256`` (else DigestMismatch); when this process already
    holds the episodes of those bytes (it wrote the document, or parsed it before) they are
    returned without parsing again, else the document is parsed, validated and remembered."""
    data = _verified_bytes(store, ref)
    with _EPISODES_MEMO_LOCK:
        held = _EPISODES_MEMO.get(ref.sha256)
    if held is not None:
        return list(held)
    episodes = episodes_of(check_run_doc(ref.stage, parse_json(data, ref.key), ref.key))
    _remember_episodes(ref.sha256, episodes)
    return episodes


def run_report(store: Any, run_id: str) -> tuple[dict, dict]:
    """``(manifest, report document)`` of a stored run, both verified (:func:`read_run_doc`)."""
    manifest = read_manifest(store, run_id)
    return manifest.to_dict(), read_run_doc(store, manifest, "report")


# --------------------------------------------------------------------------- baselines by name

def save_agent_baseline(report: Any, name: str, *, rootdir: Union[Store, str, None] = None,
                        run: Optional[RunProvenance] = None,
                        replaced: Optional[Mapping] = None) -> dict:
    """Freeze a run as a named baseline (including its provenance, so the gate can guard it).

    Writes ``store.baseline_key(name)`` to the store at ``rootdir`` (any Store URL; default
    ``EK_STORE`` or ``./.ek``) and returns the stored document ``{"kind", "name", "created",
    "report", "run"}``. ``run`` defaults to the provenance recorded in
    ``report.detail["run"]``. Raises :class:`~ek_agents.errors.BaselineError` (a ValueError)
    when the run evaluated nothing: an empty baseline would be a permanent free pass.
    ``replaced`` (set by :func:`promote`) records the baseline this one overwrote.
    """
    Store.validate_name(name, what="baseline name")
    doc = baseline_document(report, name, run=run)
    if replaced is not None:
        doc["replaced"] = dict(replaced)
    open_store(rootdir).save_baseline(name, doc)
    return doc


def baseline_document(report: Any, name: str, *, run: Optional[RunProvenance] = None) -> dict:
    """The baseline document of ``report`` (what :func:`save_agent_baseline` stores, and what a
    run records as the baseline its gate used): ``{"kind", "name", "created", "report", "run"}``.
    Raises :class:`~ek_agents.errors.BaselineError` for a report of 0 trials."""
    rep = as_report(report, "save_agent_baseline: report")
    if rep.n_trials <= 0:
        raise BaselineError(
            f"save_agent_baseline({name!r}): the report evaluated nothing (0 trials); an empty "
            "baseline is a permanent free pass -- run the suite first")
    prov = as_run(run if run is not None else rep.detail.get("run"), "save_agent_baseline")
    return {"schema_version": 1, "kind": BASELINE_KIND, "name": name, "created": utc_now(),
            "report": rep.to_dict(), "run": None if prov is None else prov.to_dict()}


def load_agent_baseline(name: str, *, rootdir: Union[Store, str, None] = None) -> Optional[dict]:
    """Load a named agent baseline (or ``None`` when there is none); a malformed one is a
    BaselineError naming the field (``manifest.check_baseline``)."""
    return _stored_baseline(open_store(rootdir), name)


def _stored_baseline(store: Any, name: str) -> Optional[dict]:
    doc = store.load_baseline(name)
    if doc is not None:
        check_baseline(doc, baseline_key(name))
    return doc



def agent_regression_gate(report: Any, baseline: Any, *, tolerance: float = 0.0,
                          cost_tolerance: float = 0.0,
                          rootdir: Union[Store, str, None] = None,
                          paired: Optional[bool] = None) -> AgentGateResult:
    """Fail only when the evidence says the agent **really** got worse -- not on noise.

    ``baseline`` is a name (loaded from the store at ``rootdir``), the dict
    :func:`save_agent_baseline` / :func:`load_agent_baseline` return, or a report; the
    verdict is :func:`ek_agents.gate.regression_gate`'s (see :mod:`ek_agents.gate` for the
    rules). ``tolerance`` is in success-rate / pass^k units (0.02 = 2 points);
    ``cost_tolerance`` a relative increase of cost per success (0.1 = 10%); ``paired``: ``None``
    pairs the tests when both runs cover the same tasks, ``False`` forces the unpaired ones,
    ``True`` requires pairing.

    Raises :class:`~ek_agents.errors.IncomparableRuns` (a ValueError) when the simulator, suite
    version or scaffold differ, and :class:`~ek_agents.errors.BaselineError` (a ValueError)
    when the baseline does not exist, recorded zero trials or is malformed.
    """
    label = "the baseline"
    if isinstance(baseline, str):
        label = f"baseline {baseline!r}"
        st = open_store(rootdir)
        doc = _stored_baseline(st, baseline)
        if doc is None:
            raise BaselineError(f"no baseline named {baseline!r} in store {st.url!r}: save one "
                                f"with save_agent_baseline(report, {baseline!r})")
        baseline = doc
    return regression_gate(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance,
                           label=label, paired=paired)


def load_baseline(store: Any, name: str) -> dict:
    """The stored baseline ``name``, validated (BaselineError naming the field when it is
    malformed, or saying how to make one when there is none)."""
    doc = _stored_baseline(store, name)
    if doc is None:
        raise BaselineError(f"no baseline named {name!r} in store {store.url!r}: promote a run "
                            f"first (ek-agents promote RUN_ID --name {name})")
    return doc


def gate_run(store: Any, run_id: str, baseline: str, *, tolerance: float = 0.0,
             cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a stored run against the named baseline (nothing is written);
    the run's report is a verified read (:func:`run_report`); a sequentially gated run is gated
    sequentially again (:func:`regate`)."""
    manifest, report = run_report(store, run_id)
    graded = store.read_json(run_key(run_id, "graded")) if manifest.get("sequential") else None
    return regate(report, graded, load_baseline(store, baseline), manifest.get("gate"),
                  k=(manifest.get("inputs") or {}).get("k", 1), tolerance=tolerance,
                  cost_tolerance=cost_tolerance, baseline_name=baseline)


def promote(store: Any, run_id: str, name: str, *, replace: bool = False) -> dict:
    """Make run ``run_id`` the baseline ``name`` (:func:`save_agent_baseline`).

    The run's report is a verified read (:func:`run_report`: a report.json edited after the
    run is refused with DigestMismatch). The baseline's report records ``detail["run_id"]``
    and ``detail["manifest_sha256"]``, so an audit of the baseline finds, and re-checks, the
    run it came from. An existing baseline ``name`` is refused (BaselineError) unless
    ``replace``; then the replaced document is kept as a content-addressed artifact and the
    new baseline records it under ``replaced`` (``{"artifact", "run_id", "created"}``).
    """
    Store.validate_name(name, what="baseline name")
    manifest, report = run_report(store, run_id)
    replaced = None
    if store.exists(baseline_key(name)):
        old = _previous_baseline(store, name)
        if not replace:
            raise BaselineError(
                f"baseline {name!r} already exists in store {store.url!r} (promoted from run "
                f"{old.get('run_id')!r}, {old.get('created') or 'date unknown'}): refusing to "
                f"overwrite it; pass --replace (promote(..., replace=True)) to replace it -- the "
                "replaced baseline is kept as an artifact")
        replaced = old
    rep = ReliabilityReport.from_dict(report)
    linked = dataclasses.replace(rep, detail={**rep.detail, "run_id": run_id, "manifest_sha256":
                                              store.digest(run_key(run_id, "manifest"))})
    return save_agent_baseline(linked, name, rootdir=store,
                               run=RunProvenance.from_dict(manifest["provenance"]),
                               replaced=replaced)


def _previous_baseline(store: Any, name: str) -> dict:
    """What a replacing promote records of the baseline it overwrites: its bytes kept as an
    artifact (``store.get_artifact(artifact)`` reads them back), its run and date."""
    data = store.read_bytes(baseline_key(name))
    try:
        doc = parse_json(data, baseline_key(name))
    except IntegrityError:  # unreadable: keep its digest, nothing else can be said
        return {"artifact": None, "sha256": sha256_hex(data), "run_id": None, "created": None}
    report = doc.get("report") if isinstance(doc, Mapping) else None
    detail = report.get("detail") if isinstance(report, Mapping) else None
    return {"artifact": store.put_artifact(doc), "sha256": sha256_hex(data),
            "run_id": detail.get("run_id") if isinstance(detail, Mapping) else None,
            "created": doc.get("created") if isinstance(doc, Mapping) else None}


# --------------------------------------------------------------------------- one stage over a store
# Each takes a store and the references of its inputs, computes its own input digest, and
# returns the reference of the document it wrote: what one pipeline task calls.

def record_suite(store: Any, run_id: str, suite: str) -> SuiteRef:
    """``suite.load_suite`` -> the run's tasks document (identity, digest and every task)."""
    return write_tasks(store, run_id, tasks_doc(load_suite(suite)))


def record_prices(store: Any, run_id: str, prices: Optional[str]) -> Optional[StageRef]:
    """``prices.load_prices`` -> the run's prices document (None when no catalog is given)."""
    doc = prices_doc(prices)
    return None if doc is None else write_doc(store, run_id, "prices", doc)


def ingest_run(store: Any, run_id: str, kind: str, path: str) -> StageRef:
    """``bridge.read_*`` -> the run's episodes document, cached on the source file's digest."""
    digest = input_digest("episodes", source=source_digest(path), kind=kind)
    return stage_output(store, run_id, "episodes", digest,
                        lambda: episodes_doc(read_source(kind, path)))


def ingest_suite(store: Any, run_id: str, episodes: StageRef) -> SuiteRef:
    """With no suite: one task per ingested task id, graded by the success the source recorded."""
    return write_tasks(store, run_id, tasks_for_episodes(episodes_of(read_ref(store, episodes))))


def graded_digest(episodes_sha256: str, suite_digest: str, check: Optional[str]) -> str:
    """The graded stage's input digest: the episodes document's sha256, the suite's digest and
    the checker name."""
    return input_digest("graded", episodes=episodes_sha256, suite=suite_digest, check=check)


def run_grade(store: Any, run_id: str, episodes: StageRef, tasks: SuiteRef,
              check: Optional[str]) -> StageRef:
    """:func:`grade_stage` -> the run's graded document, cached on its inputs' digests.

    When this process already graded exactly these inputs (the trial chunks grade what they
    stored: :func:`trial_grader`, :func:`remember_graded`), that document is taken as is --
    after the episodes document is read and verified, as always."""
    digest = graded_digest(episodes.sha256, tasks.digest, check)
    made: list[list[Episode]] = []

    def compute() -> Any:
        with _EPISODES_MEMO_LOCK:
            done = _GRADED_MEMO.pop(digest, None)
        if done is not None:
            _verified_bytes(store, episodes)  # a changed document is refused, as ever
            made.append(list(done[1]))
            return done[0]
        made.append(_graded(read_episodes(store, episodes), read_ref(store, tasks), check))
        return episodes_doc(made[0])

    ref = stage_output(store, run_id, "graded", digest, compute)
    if made and ref is not None:  # what the next stages read back: already validated here
        _remember_episodes(ref.sha256, made[0])
    return ref


def run_metrics(store: Any, run_id: str, graded: StageRef, tasks: SuiteRef, *, k: int, seed: int,
                run: Optional[Mapping]) -> StageRef:
    """:func:`metrics_stage` -> the run's metrics document, cached on its inputs' digests."""
    digest = input_digest("metrics", graded=graded.sha256, suite=tasks.digest, k=k,
                          seed=seed, run=run)
    return stage_output(store, run_id, "metrics", digest, lambda: _metrics(
        read_episodes(store, graded), read_ref(store, tasks), k=k, seed=seed, run=run))


def run_cost(store: Any, run_id: str, graded: StageRef, metrics: StageRef,
             prices: Optional[StageRef], *, seed: int) -> StageRef:
    """:func:`cost_stage` -> the run's report document, cached on its inputs' digests."""
    digest = input_digest("report", graded=graded.sha256, metrics=metrics.sha256,
                          prices=prices and prices.sha256, seed=seed)
    return stage_output(store, run_id, "report", digest, lambda: _cost(
        read_episodes(store, graded), read_ref(store, metrics),
        prices and read_ref(store, prices), seed=seed))


def run_gate(store: Any, run_id: str, report: StageRef, baseline: Optional[str], *,
             tolerance: float, cost_tolerance: float) -> Optional[GateRef]:
    """:func:`guarded_gate` against the named baseline -> the run's gate document.

    The baseline used is copied into the run (``baseline``: the audit re-checks the verdict
    against it). A baseline the gate refuses gives a verdict with ``refused`` set.
    """
    if baseline is None:
        return None
    doc = load_baseline(store, baseline)
    verdict = guarded_gate(read_ref(store, report), doc, tolerance=tolerance,
                           cost_tolerance=cost_tolerance, baseline_name=baseline)
    return write_gate(store, run_id, doc, verdict)


def run_sequential_gate(store: Any, run_id: str, episodes: StageRef, tasks: SuiteRef,
                        baseline: str, *, k: int, check: Optional[str] = None,
                        tolerance: float = 0.0, priced: bool = False) -> GateRef:
    """The verdict of a sequentially gated run (the pipeline's): its episodes graded as
    :func:`run_grade` grades them, the looks replayed against the named baseline
    (:func:`sequential_stage`, at ``sequential.per_check_alpha(k, priced)``) -> the run's gate
    document and the baseline it used (:func:`write_gate`)."""
    doc = load_baseline(store, baseline)
    graded = grade_stage(store.read_json(episodes.key), store.read_json(tasks.key), check=check)
    verdict = sequential_stage(graded, doc, k=k, alpha=per_check_alpha(k, priced),
                               tolerance=tolerance, min_effect=DEFAULT_MIN_EFFECT,
                               baseline_name=baseline)
    return write_gate(store, run_id, doc, verdict)


def write_gate(store: Any, run_id: str, baseline: Mapping, verdict: Mapping) -> GateRef:
    """Write the baseline a gate used (``baseline``: the audit re-checks against it) and its
    verdict (``gate``) into the run; the :class:`GateRef` :func:`record_run` takes."""
    used = write_doc(store, run_id, "baseline", baseline)
    ref = write_doc(store, run_id, "gate", verdict)
    return GateRef(stage=ref.stage, key=ref.key, sha256=ref.sha256, baseline=used,
                   verdict=dict(verdict))


def promote_baseline(store: Any, run_id: str, name: str, replace: bool = False) -> dict:
    """:func:`promote`, summarised: ``{"baseline", "key", "run_id", "created", "replaced"}``."""
    doc = promote(store, run_id, name, replace=replace)
    return {"baseline": name, "key": baseline_key(name), "run_id": run_id,
            "created": doc.get("created"), "replaced": doc.get("replaced")}


# --------------------------------------------------------------------------- run identity
# What decides a run's episodes is its fingerprint, stored at the run's first write
# (``store.run_key(run_id, "fingerprint")``); a resume must match it, and a resume trusts no
# per-trial file it has not checked (:func:`claim_run`).

#: The attribute an agent declares its configuration with (see :func:`agent_config`).
EK_CONFIG = "ek_config"


@shape()
class RunFingerprint(JsonShape):
    """Everything that decides a run's episodes: a resume of the run id must match it."""

    agent: Optional[str] = None
    """The agent's import path (``module:callable``; ``module:qualname`` for a library call)."""
    agent_code: Optional[str] = None
    """sha256 of the source file that defines the agent (:func:`code_digest`)."""
    agent_config: dict = Field(default_factory=dict)
    """The configuration the agent declares (:func:`agent_config`): model, endpoint, ..."""
    suite: str = ""
    """sha256 of the suite's canonical content."""
    k: int = 1
    """Trials per task."""
    seed: Optional[int] = None
    """The base seed."""
    run: dict = Field(default_factory=dict)
    """The run's provenance as given (``RunProvenance.to_dict()`` without ``schema_version``)."""
    timeout_s: Optional[float] = None
    """Seconds per trial attempt."""
    retries: int = 0
    """Retries of a transient agent error."""

    def differences(self, other: "RunFingerprint") -> list[str]:
        """The fields whose values differ from ``other``'s, as ``"k: 2 (stored) -> 3"``."""
        mine, theirs = self.to_dict(), other.to_dict()

        def show(v: Any) -> str:
            text = repr(v)
            return text if len(text) <= 80 else text[:77] + "..."

        return [f"{f}: {show(mine.get(f))} (stored) -> {show(theirs.get(f))}"
                for f in sorted(mine) if f != "schema_version" and mine.get(f) != theirs.get(f)]


@shape()
class RunReuse(JsonShape):
    """What :func:`claim_run` kept of a run's stored trials, and what it set aside."""

    kept: int = 0
    """Stored trials that will be reused (loaded, not run)."""
    refreshed: int = 0
    """Stored trials removed because ``refresh`` asked for every trial afresh."""
    retried: int = 0
    """Stored trials that ended in an error, removed so they run again (``retry_errored``)."""
    misfiled: int = 0
    """Stored files that were not the trial their key names (another task's episode, ``{}``,
    not an episode at all): removed so the trial runs again."""


def agent_config(agent: Any) -> dict:
    """The configuration ``agent`` declares: its ``ek_config`` attribute -- a JSON-able mapping,
    or a method returning one (model, base URL, temperature, prompt version, the environment
    variables it read). ``{}`` when it declares none.

    >>> class A:
    ...     ek_config = {"model": "m1", "temperature": 0.0}
    ...     def __call__(self, task): return "x"
    >>> agent_config(A())
    {'model': 'm1', 'temperature': 0.0}
    """
    declared = getattr(agent, EK_CONFIG, None)
    if declared is None:
        return {}
    if callable(declared) and not isinstance(declared, Mapping):
        declared = declared()
    if not isinstance(declared, Mapping):
        raise InvalidInput(f"agent {agent!r:.80}: ek_config must be a mapping (or a method "
                           f"returning one) of JSON values, got {type(declared).__name__}")
    try:  # through JSON and back: what a stored fingerprint reads back (tuples become lists)
        return json.loads(canonical_json(as_plain(dict(declared))))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"agent {agent!r:.80}: ek_config is not JSON ({exc}); declare "
                           "strings, numbers, booleans, lists and mappings only") from None


def agent_name(agent: Any) -> Optional[str]:
    """``module:qualname`` of a callable (its ``__name__``, else its class's), None when it
    has none."""
    mod = getattr(agent, "__module__", None)
    name = (getattr(agent, "__qualname__", None) or getattr(agent, "__name__", None)
            or getattr(type(agent), "__qualname__", None))
    return f"{mod}:{name}" if isinstance(mod, str) and isinstance(name, str) else None


def code_digest(agent: Any) -> Optional[str]:
    """sha256 of the source file that defines ``agent`` (a callable or a ``module:attr``
    import path); None when it has no source file."""
    try:
        if isinstance(agent, str):
            target: Any = importlib.import_module(agent.split(":")[0])
        else:
            target = agent if inspect.isfunction(agent) or inspect.isclass(agent) else type(agent)
            if inspect.ismethod(agent):
                target = agent.__func__
        src = inspect.getsourcefile(target)
        with open(src, "rb") as fh:  # type: ignore[arg-type]
            return sha256_hex(fh.read())
    except (TypeError, OSError, ImportError, ValueError):
        return None


def trial_matches(episode: Any, task_id: str, trial: int) -> bool:
    """Whether a stored episode is trial ``trial`` of task ``task_id`` (what its key says)."""
    if not isinstance(episode, Episode) or episode.task_id != task_id:
        return False
    stored = episode.meta.get("trial")
    return isinstance(stored, int) and not isinstance(stored, bool) and stored == trial


def errored(episode: Episode) -> bool:
    """Whether a trial ended in an error (the agent raised, timed out, or its endpoint failed)."""
    return bool(episode.meta.get("error"))


def _fingerprint_key(run_id: str) -> str:
    return run_key(run_id, "fingerprint")


def claim_run(store: Any, run_id: str, fingerprint: RunFingerprint, pairs: Iterable[tuple],
              *, refresh: bool = False,
              retry_errored: bool = False) -> tuple[RunReuse, dict[tuple[str, int], Episode]]:
    """Check (or record) the run's fingerprint and sort its stored trials before a (re)run;
    return what it did and the stored trials kept, ``{(task_id, trial): Episode}``.

    - The first write of a run stores ``fingerprint``; a later call whose fingerprint differs
      raises :class:`~ek_agents.errors.RunMismatch` naming the fields -- unless ``refresh``,
      which records the new fingerprint and removes every stored trial (all run afresh).
    - ``retry_errored`` removes the stored trials that ended in an error (they run again).
    - A stored file at a trial's key that is not that trial (another task's episode, ``{}``,
      not JSON) is removed: the trial runs again; it is never kept.
    """
    if not isinstance(fingerprint, RunFingerprint):
        raise InvalidInput(f"claim_run: fingerprint must be a RunFingerprint, got {fingerprint!r:.80}")
    key = _fingerprint_key(run_id)
    by_key = {episode_key(run_id, tid, i): (tid, i) for tid, i in pairs}
    present = [k for k in store.list(episodes_prefix(run_id)) if k in by_key]
    if store.exists(key):  # checked before anything is touched
        try:
            stored: Optional[RunFingerprint] = RunFingerprint.from_dict(store.read_json(key))
        except (IntegrityError, InvalidInput):
            stored = None
        if stored != fingerprint and not refresh:
            diff = (stored.differences(fingerprint) if stored is not None
                    else ["fingerprint: unreadable"])
            raise RunMismatch(
                f"run {run_id!r} was started with other settings, so its stored trials are not "
                f"this run's: {'; '.join(diff)}. Use a new run id, or refresh the run "
                "(refresh=True / --refresh) to run every trial afresh")
    first_write = not store.exists(key)
    reuse = {"kept": 0, "refreshed": 0, "retried": 0, "misfiled": 0}
    kept: dict[tuple[str, int], Episode] = {}
    segments = RunSegments.load(store, run_id)
    if refresh:
        for k in present:
            store.delete(k)
        reuse["refreshed"] = len(present) + segments.remove_all()
        present = []
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(present)))) as ex:
        loaded = list(ex.map(lambda k: _stored_episode(store, k), present))
    for k, ep in zip(present, loaded):
        if not trial_matches(ep, *by_key[k]):
            store.delete(k)
            reuse["misfiled"] += 1
        elif retry_errored and errored(ep):
            store.delete(k)
            reuse["retried"] += 1
        else:
            reuse["kept"] += 1
            kept[by_key[k]] = ep
    _claim_segments(store, segments, set(by_key.values()), kept, reuse,
                    retry_errored=retry_errored)
    if first_write and kept:
        raise RunMismatch(
            f"run {run_id!r} holds {len(kept)} stored trial(s) but no fingerprint (written by an "
            "older ek-agents, or by hand), so nothing says what produced them. Use a new run id, "
            "or refresh the run (refresh=True / --refresh) to run every trial afresh")
    store.write_json(key, fingerprint.to_dict())
    return RunReuse(**reuse), kept


def _claim_segments(store: Any, segments: RunSegments, wanted: set, kept: dict, reuse: dict, *,
                    retry_errored: bool) -> None:
    """:func:`claim_run` for the run's segments: orphan segments (stored, never indexed)
    removed; each indexed trial of ``wanted`` (not kept already from a per-trial file) loaded
    into ``kept``, or set aside in the index -- misfiled, or errored with ``retry_errored``."""
    for orphan in segments.orphans():
        store.delete(orphan)
    drop = []
    for batch in iter_segments(store, segments, only=wanted - set(kept)):
        for t in batch:
            try:
                ep: Optional[Episode] = Episode.from_dict(parse_json(t.data, t.key))
            except (IntegrityError, InvalidInput):
                ep = None
            if not trial_matches(ep, *t.pair):
                reuse["misfiled"] += 1
                drop.append(t.pair)
            elif retry_errored and errored(ep):
                reuse["retried"] += 1
                drop.append(t.pair)
            else:
                reuse["kept"] += 1
                kept[t.pair] = ep
    if drop:
        segments.drop(drop)


def _stored_episode(store: Any, key: str) -> Optional[Episode]:
    try:
        return Episode.from_dict(store.read_json(key))
    except (IntegrityError, InvalidInput, ArtifactNotFound):
        return None


@shape()
class StoredTrial(JsonShape):
    """One per-trial episode file as the run wrote (or read) it: what the stages after the
    trials need of it without reading the file again."""

    task_id: str
    """The trial's task."""
    trial: int
    """The trial index."""
    key: str
    """Its store key (``store.episode_key``)."""
    sha256: str
    """sha256 of its bytes."""
    data: str
    """Its content as canonical JSON of ``Episode.to_dict()`` (ASCII): the bytes the harness
    wrote."""


def read_trials(store: Any, run_id: str, pairs: Iterable[tuple]) -> dict[tuple[str, int], StoredTrial]:
    """The stored trials among ``pairs`` of run ``run_id``, each read once (a missing file is
    skipped; a file that is not the trial its key names is removed, so that the trial runs
    again, as :func:`claim_run` does): ``{(task_id, trial): StoredTrial}``."""
    def one(pair: tuple) -> Optional[StoredTrial]:
        key = episode_key(run_id, pair[0], pair[1])
        try:
            data = store.read_bytes(key)
        except ArtifactNotFound:
            return None
        try:
            doc = parse_json(data, key)
            ep: Optional[Episode] = Episode.from_dict(doc)
        except (IntegrityError, InvalidInput):
            ep = None
        if not trial_matches(ep, pair[0], pair[1]):
            store.delete(key)
            return None
        return StoredTrial(task_id=pair[0], trial=pair[1], key=key, sha256=sha256_hex(data),
                           data=canonical_json(doc).decode("ascii"))

    pairs = [(p[0], p[1]) for p in pairs]
    out = _segment_trials(store, run_id, set(pairs))
    rest = [p for p in pairs if p not in out]
    if not rest or not store.list(episodes_prefix(run_id)):  # no per-trial file to look for
        return out
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(rest)))) as ex:
        found = list(ex.map(one, rest))
    return {**out, **{p: t for p, t in zip(rest, found) if t is not None}}


def _segment_trials(store: Any, run_id: str, wanted: set) -> dict[tuple[str, int], StoredTrial]:
    """:func:`read_trials` of the run's segments: the indexed trials of ``wanted``; a line
    that is not the trial its index names is set aside (it runs again)."""
    segments = RunSegments.load(store, run_id)
    out, drop = {}, []
    for batch in iter_segments(store, segments, only=wanted):
        for t in batch:
            try:
                doc = parse_json(t.data, t.key)
                ep: Optional[Episode] = Episode.from_dict(doc)
            except (IntegrityError, InvalidInput):
                ep = None
            if not trial_matches(ep, *t.pair):
                drop.append(t.pair)
                continue
            out[t.pair] = StoredTrial(task_id=t.pair[0], trial=t.pair[1], key=t.key,
                                      sha256=t.sha256, data=canonical_json(doc).decode("ascii"))
    if drop:
        segments.drop(drop)
    return out
