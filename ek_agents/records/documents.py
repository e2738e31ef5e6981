"""A run's documents: what each stored document of a run holds, the manifest that lists them,
and the verified reads every later command uses.

A run is a set of JSON documents under the store's run prefix (``store.run_key``): the tasks,
the prices, the episodes, the graded episodes, the metrics, the report, the gate verdict and
the manifest listing each with its sha256 (:func:`record_run`). A command that uses a stored
run's documents (report, gate, promote, the flows) reads them here: the manifest validated
(DocumentError naming the field), each document's bytes checked against the manifest's sha256
(DigestMismatch: the audit's exit code) and its shape validated.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from .. import bridge
from ..base import Episode, RunProvenance, TaskSpec, task_table
from ..core import copy_plain
from ..errors import ArtifactNotFound, DigestMismatch, DocumentError, InvalidInput, UnknownName, did_you_mean
from ..prices import ModelPrice, load_prices
from ..store import canonical_json, episodes_prefix, parse_json, read_url, run_key, sha256_hex
from .fingerprint import fingerprint_key
from .manifest import (DOCUMENTS, RunInputs, RunManifest, as_plain, check_baseline, check_document,
                       check_manifest, check_report)
from .segments import RunSegments
from .stagecache import EpisodesRef, ManifestRef, StageRef

__all__ = ["UNSTORED", "source_digest", "episodes_doc", "episodes_doc_bytes", "episodes_of",
           "tasks_doc", "tasks_of", "tasks_for_episodes", "SOURCES", "read_source", "prices_doc",
           "prices_of", "results_of", "trial_digests", "record_run", "read_manifest",
           "check_run_doc", "read_run_doc", "read_ref", "verified_bytes", "run_report",
           "tasks_of_chunk", "SUITE_FIELDS"]

#: What a library run (``harness.run_suite``) records in its manifest inputs for an input it
#: cannot store (a callable ``check``, a single ``price``): an audit cannot recompute from it.
UNSTORED = "<not stored: a Python object>"


def source_digest(path_or_url: str) -> str:
    """sha256 of a source file's bytes (a local path or any fsspec URL: ``store.read_url``)."""
    return sha256_hex(read_url(path_or_url, what="recorded run"))


# --------------------------------------------------------------------------- documents

def episodes_doc(episodes: Iterable[Episode]) -> dict:
    """The stored form of a list of episodes."""
    return {"schema_version": 1, "episodes": [e.to_dict() for e in episodes]}



def episodes_doc_bytes(episodes: Iterable[str]) -> bytes:
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
    # every task is the same but for its id: one TaskSpec dumped, copied per id (its lists and
    # dicts copied too) -- a window has one task per trace: ~20 us each of validation and dump
    blank = TaskSpec("", checker="recorded").to_dict()
    nested = [k for k, v in blank.items() if isinstance(v, (list, dict))]

    def task(t: Any) -> dict:
        if type(t) is not str:
            return TaskSpec(t, checker="recorded").to_dict()
        d = {**blank, "task_id": t}
        for k in nested:
            d[k] = copy_plain(blank[k])
        return d

    return {"schema_version": 1, "name": name, "version": f"ids:{digest[:12]}", "digest": digest,
            "path": "", "checker": "recorded", "tasks": [task(t) for t in ids]}


def tasks_of_chunk(suite: Mapping, task_ids: Iterable[str]) -> dict:
    """The tasks document ``suite`` cut to the tasks of ``task_ids`` (what one chunk runs: its
    trials build only their own tasks), or the whole of it when none of them is in the suite
    (the harness then refuses the unknown task, naming it)."""
    ids = set(task_ids)
    return {**suite, "tasks": [t for t in suite["tasks"] if t.get("task_id") in ids]
            or suite["tasks"]}


#: ``ingest`` kinds -> the bridge reader of that format.
SOURCES = {"inspect": "read_inspect_log", "tau-bench": "read_tau_bench_results",
           "messages": "read_messages_jsonl", "otlp": "episodes_from_otel"}


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
        # only when true: the manifests of runs without per-call billing keep their bytes
        **({"dollars_upper_bound": True} if cost.get("upper_bound") else {}),
    }


# --------------------------------------------------------------------------- the run record

#: The fields of a run's tasks document its manifest records as ``suite``.
SUITE_FIELDS = ("name", "version", "digest", "path", "checker")

def trial_digests(store: Any, run_id: str) -> dict[str, str]:
    """``{key: sha256}`` of every per-trial episode file the harness stored for the run, and
    of its segments and segment index documents (``ek_agents.records.segments``)."""
    keys = store.list(episodes_prefix(run_id))
    with ThreadPoolExecutor(max_workers=8) as pool:
        return {**dict(zip(keys, pool.map(store.digest, keys))),
                **RunSegments.load(store, run_id).digests()}


def record_run(store: Any, run_id: str, *, refs: Mapping[str, Optional[StageRef]],
               inputs: RunInputs, agent: Optional[str] = None, source: Optional[Mapping] = None,
               parameters: Optional[Mapping] = None,
               orchestrator: Optional[Mapping] = None,
               suite: Optional[Mapping] = None) -> ManifestRef:
    """Write the run's manifest (``store.run_key(run_id, "manifest")``) from the stages'
    references; return its reference.

    ``refs`` maps a stage name to its reference (``tasks``, ``prices``, ``episodes``,
    ``graded``, ``metrics``, ``report``, ``gate``; None when a stage did not run). Every stage
    document, the baseline the gate used and every per-trial episode file is listed with its
    sha256 (an :class:`EpisodesRef` with ``trials`` carries the per-trial digests the run
    computed as it wrote them: the run's folder is then neither listed nor re-hashed); the results are the report's headline figures, the gate its verdict. ``inputs``
    are the values the stages were computed with: what an audit recomputes them with.
    ``suite``: the suite's fields of the tasks document just written (``name``, ``version``,
    ``digest``, ``path``, ``checker``), when the caller has them (a monitor window of many
    thousand tasks), instead of reading the document back.
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
    fingerprint_at = fingerprint_key(run_id)
    if store.exists(fingerprint_at):  # a run of agent trials: what decided them (read once)
        data = store.read_bytes(fingerprint_at)
        fingerprint = parse_json(data, fingerprint_at)
        artifacts[fingerprint_at] = sha256_hex(data)
    tasks = read_ref(store, refs["tasks"]) if suite is None else suite
    report = read_ref(store, refs["report"])
    manifest = RunManifest.build(
        run_id, provenance=RunProvenance.from_dict((report.get("detail") or {}).get("run") or {}),
        inputs=inputs,
        suite={f: tasks.get(f) for f in SUITE_FIELDS},
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
    return check_run_doc(ref.stage, parse_json(verified_bytes(store, ref), ref.key), ref.key)


def verified_bytes(store: Any, ref: StageRef) -> bytes:
    """The bytes ``ref`` points to, which must still hash to ``ref.sha256`` (else DigestMismatch
    naming the key)."""
    data = store.read_bytes(ref.key)
    actual = sha256_hex(data)
    if actual != ref.sha256:
        raise DigestMismatch(f"{ref.key} has sha256 {actual[:12]}..., but its stage wrote "
                             f"{ref.sha256[:12]}... (changed since: another writer on this run "
                             "id, or an edit); re-run with a fresh run id")
    return data


def run_report(store: Any, run_id: str) -> tuple[dict, dict]:
    """``(manifest, report document)`` of a stored run, both verified (:func:`read_run_doc`)."""
    manifest = read_manifest(store, run_id)
    return manifest.to_dict(), read_run_doc(store, manifest, "report")
