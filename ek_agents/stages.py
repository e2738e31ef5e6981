"""The pipeline's stages as plain functions over stored JSON documents.

Each stage turns the JSON documents of its inputs into the JSON document of its output by
calling the library (``metrics.grade``, ``reporting.reliability``, ``cost.cost_report``,
``harness.agent_regression_gate``). The Prefect tasks in ``tasks/`` wrap these functions and the
audit (:mod:`ek_agents.audit`) re-runs them, so a recorded figure and its recomputation can
only differ when stored bytes differ. :func:`cached` is the stage cache: an output is a
content-addressed artifact, indexed by the digest of the stage's inputs.

>>> from ek_agents.store import Store
>>> s = Store("memory://ek-stages-doctest")
>>> calls = []
>>> doc, sha, hit = cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})
>>> doc, hit, cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})[2], len(calls)
({'y': 9}, False, True, 1)
>>> plan_chunks(["a", "b", "c"], k=2, chunk_size=4)
[[['a', 0], ['a', 1], ['b', 0], ['b', 1]], [['c', 0], ['c', 1]]]
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional

from .base import Episode, RunProvenance, TaskSpec
from .errors import (ArtifactNotFound, BaselineError, IntegrityError, InvalidInput, UnknownName,
                     did_you_mean)
from .manifest import as_plain, input_digest, utc_now
from .store import run_key

__all__ = [
    "lookup", "cached", "stage_output", "input_digest", "run_key", "write_doc", "write_tasks",
    "source_digest", "check_request", "load_agent", "agent_fingerprint", "plan_chunks",
    "episodes_doc", "episodes_of", "tasks_doc", "tasks_of", "tasks_for_episodes", "read_source",
    "SOURCES", "prices_doc", "grade_stage", "metrics_stage", "cost_stage", "gate_stage",
    "guarded_gate", "raise_for_verdict", "results_of", "trial_digests", "record_run",
    "run_report", "load_baseline", "gate_run", "promote", "DEFAULT_CHUNKS", "UNSTORED",
]

#: A run's trials are split into about this many chunks (one Prefect task run each).
DEFAULT_CHUNKS = 16

#: What a library run (``harness.run_suite``) records in its manifest inputs for an input it
#: cannot store (a callable ``check``, a single ``price``): an audit cannot recompute from it.
UNSTORED = "<not stored: a Python object>"


# --------------------------------------------------------------------------- the stage cache

def lookup(store: Any, stage: str, digest: str) -> Optional[tuple[Any, str]]:
    """``(document, artifact sha256)`` cached for ``stage`` with input digest ``digest``, or None.

    ``cache/<stage>/<digest>.json`` points to a content-addressed artifact, verified against its
    sha256 on load; an index whose artifact is gone or damaged is a miss (recomputed, never
    trusted).
    """
    try:
        record = store.read_json(f"cache/{stage}/{digest}.json")
        return store.get_artifact(record["artifact"]), record["artifact"]
    except (ArtifactNotFound, IntegrityError, KeyError, TypeError):
        return None


def cached(store: Any, stage: str, digest: str, compute: Callable[[], Any]) -> tuple[Any, str, bool]:
    """``(document, artifact sha256, hit)``: :func:`lookup`, else ``compute()`` stored and indexed."""
    found = lookup(store, stage, digest)
    if found is not None:
        return found[0], found[1], True
    doc = as_plain(compute())
    sha = store.put_artifact(doc)
    store.write_json(f"cache/{stage}/{digest}.json", {"stage": stage, "input_digest": digest,
                                                       "artifact": sha, "created_at": utc_now()})
    return doc, sha, False


def stage_output(store: Any, run_id: str, stage: str, digest: str,
                 compute: Optional[Callable[[], Any]] = None) -> Optional[dict]:
    """Run (or reuse) a stage and write its document to ``runs/<run_id>/<stage>.json``.

    Returns the reference the next stage takes: ``{"stage", "key", "sha256", "artifact",
    "input_digest", "cached"}`` -- small and JSON, so it travels to any worker. Without
    ``compute`` only a cache hit is used: None on a miss.
    """
    if compute is None:
        found = lookup(store, stage, digest)
        if found is None:
            return None
        doc, artifact, hit = found[0], found[1], True
    else:
        doc, artifact, hit = cached(store, stage, digest, compute)
    key = run_key(run_id, stage)
    return {"stage": stage, "key": key, "sha256": store.write_json(key, doc), "artifact": artifact,
            "input_digest": digest, "cached": hit}


def write_doc(store: Any, run_id: str, name: str, doc: Any) -> dict:
    """Write a run's input document (suite, prices, baseline) and return its reference."""
    key = run_key(run_id, name)
    return {"stage": name, "key": key, "sha256": store.write_json(key, as_plain(doc))}


def write_tasks(store: Any, run_id: str, doc: Mapping) -> dict:
    """Write a run's tasks document; its reference also carries the suite's name, version and
    digest (what the later stages key their caches on -- the file's path is not identity)."""
    return {**write_doc(store, run_id, "tasks", doc),
            "name": doc["name"], "version": doc["version"], "digest": doc["digest"]}


def source_digest(path_or_url: str) -> str:
    """sha256 of a source file's bytes (a local path or any fsspec URL: ``store.read_url``)."""
    from .store import read_url, sha256_hex

    return sha256_hex(read_url(path_or_url, what="recorded run"))


def check_request(*, suite: Optional[str], agent: Optional[str], ingest: Optional[str],
                  ingest_path: Optional[str]) -> None:
    """Refuse an evaluation that names neither (or both) of its sources, before anything runs."""
    if ingest is None and ingest_path is None:
        if not suite or not agent:
            raise InvalidInput("an evaluation needs a suite and an agent (--suite PATH --agent "
                               "module:callable), or a recorded run to ingest (ingest KIND PATH)")
        load_agent(agent)  # a bad import path fails here, not in a worker
        return
    if agent:
        raise InvalidInput("give an agent to run or a recorded run to ingest, not both")
    if ingest not in SOURCES or not ingest_path:
        raise InvalidInput(f"ingest needs a kind (one of {sorted(SOURCES)}) and a path; got "
                           f"kind {ingest!r}, path {ingest_path!r}"
                           f"{did_you_mean(str(ingest), SOURCES) if ingest else ''}")


# --------------------------------------------------------------------------- agents and trials

def load_agent(path: str) -> Callable[..., Any]:
    """Import ``"package.module:callable"`` (``"module:obj.attr"`` works too).

    >>> load_agent("os.path:basename")("/a/b")
    'b'
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise InvalidInput(f"agent {path!r} is not an import path: write 'package.module:callable'")
    mod_name, attr = path.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the working directory is importable
    try:
        obj: Any = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        raise InvalidInput(f"agent {path!r}: cannot import module {mod_name!r} ({exc}); "
                           "check the spelling and that it is on PYTHONPATH") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise InvalidInput(f"agent {path!r}: {mod_name} has no attribute {part!r}"
                               f"{did_you_mean(part, names)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidInput(f"agent {path!r} is a {type(obj).__name__}, not a callable")
    return obj


def agent_fingerprint(path: str) -> Optional[str]:
    """sha256 of the source file that defines the agent (None when it has none).

    It goes into the run-trials input digest, so editing the agent's code invalidates the
    cached episodes even when its import path stays the same.
    """
    from .store import sha256_hex

    try:
        src = inspect.getsourcefile(importlib.import_module(path.split(":")[0]))
        with open(src, "rb") as fh:  # type: ignore[arg-type]
            return sha256_hex(fh.read())
    except (TypeError, OSError, ImportError):
        return None


def plan_chunks(task_ids: Sequence[str], *, k: int, chunk_size: Optional[int] = None) -> list[list[list]]:
    """Split the ``(task_id, trial)`` pairs of a run into chunks, one Prefect task run each.

    Default size: about :data:`DEFAULT_CHUNKS` chunks, so 2000 trials are 16 task runs of 125.
    Pairs are lists (JSON-safe as flow parameters).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    pairs = [[t, i] for t in task_ids for i in range(k)]
    if chunk_size is None:
        chunk_size = max(1, math.ceil(len(pairs) / DEFAULT_CHUNKS))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInput(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return [pairs[i:i + chunk_size] for i in range(0, len(pairs), chunk_size)]


# --------------------------------------------------------------------------- documents

def episodes_doc(episodes: Iterable[Episode]) -> dict:
    """The stored form of a list of episodes."""
    return {"schema_version": 1, "episodes": [e.to_dict() for e in episodes]}


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
        from .base import task_table
        from .store import canonical_json, sha256_hex

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
    from .store import sha256_hex

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
    from . import bridge

    return list(getattr(bridge, SOURCES[kind])(path))


def prices_doc(source: Any) -> Optional[dict]:
    """The price catalog as stored with a run: ``{model: ModelPrice dict}`` (None: no prices).

    ``source`` is what ``prices.load_prices`` reads (a LiteLLM catalog's path, URL or mapping)
    or an already-loaded ``{model: ModelPrice}`` table.
    """
    if source is None:
        return None
    from .cost import ModelPrice
    from .prices import load_prices

    loaded = isinstance(source, Mapping) and source and all(
        isinstance(p, ModelPrice) for p in source.values())
    table = source if loaded else load_prices(source)
    return {"schema_version": 1, "models": {m: as_plain(p) for m, p in sorted(table.items())}}


def _prices_of(doc: Optional[Mapping]) -> Optional[dict]:
    if doc is None:
        return None
    from .cost import ModelPrice

    return {m: ModelPrice.from_dict(p) for m, p in doc["models"].items()}


# --------------------------------------------------------------------------- the stages

def grade_stage(episodes: Mapping, tasks: Mapping, *, check: Any = None) -> dict:
    """Grade stored episodes against the stored suite (``metrics.grade``)."""
    from .metrics import grade

    return episodes_doc(grade(episodes_of(episodes), tasks_of(tasks),
                              check=check if check is not None else tasks.get("checker")))


def metrics_stage(graded: Mapping, tasks: Mapping, *, k: int, seed: int = 0,
                  run: Optional[Mapping] = None) -> dict:
    """Reliability of graded episodes: success, pass@k, pass^k, per task and slice.

    ``detail["run"]`` records the run's provenance (what the gate checks comparability on):
    ``run`` as given, its empty fields filled from what the agent recorded on its episodes
    (``harness.run_provenance``); ``detail["errors"]`` counts the errored trials. The same
    helper as ``harness.build_report``.
    """
    from .harness import _reliability_with_run

    return _reliability_with_run(episodes_of(graded), tasks_of(tasks), k=k, seed=seed,
                                 run=RunProvenance.from_dict(run) if run else None).to_dict()


def cost_stage(graded: Mapping, metrics: Mapping, prices: Optional[Mapping], *, seed: int = 0) -> dict:
    """The report: :func:`metrics_stage`'s reliability carrying ``cost.cost_report`` of all
    episodes, with one ``cost_report`` per slice under ``cost["per_slice"]`` (the same helper
    as ``harness.build_report``)."""
    from .harness import _with_cost
    from .reporting import ReliabilityReport

    return _with_cost(ReliabilityReport.from_dict(metrics), episodes_of(graded),
                      prices=_prices_of(prices), seed=seed).to_dict()


def gate_stage(report: Mapping, baseline: Mapping, *, tolerance: float = 0.0,
               cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a report against a loaded baseline (``agent_regression_gate``).

    An incomparable or malformed baseline raises (a ValueError naming why).
    """
    from .harness import agent_regression_gate
    from .reporting import ReliabilityReport

    if not isinstance(baseline, Mapping):
        raise BaselineError(f"baseline must be a stored baseline document, got {baseline!r:.80}")
    verdict = agent_regression_gate(ReliabilityReport.from_dict(report), dict(baseline),
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


def raise_for_verdict(verdict: Optional[Mapping]) -> None:
    """Raise what a recorded gate verdict means: the refusal's own error (IncomparableRuns,
    BaselineError), :class:`~ek_agents.errors.GateFailed` listing the reasons, or nothing."""
    from . import errors

    if not verdict or verdict.get("passed"):
        return
    name = verdict.get("baseline")
    if verdict.get("refused"):
        cls = getattr(errors, str(verdict.get("error")), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.InvalidInput) else errors.BaselineError
        raise cls(f"gate refused baseline {name!r}: {verdict['refused']}")
    raise errors.GateFailed(f"gate failed against baseline {name!r}: "
                            + "; ".join(verdict.get("reasons") or ["(no reason recorded)"]))


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
    """``{key: sha256}`` of every per-trial episode file the harness stored for the run."""
    from concurrent.futures import ThreadPoolExecutor

    keys = store.list(f"runs/{run_id}/episodes")
    with ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(keys, pool.map(store.digest, keys)))


def record_run(store: Any, run_id: str, *, refs: Mapping[str, Optional[Mapping]],
               inputs: Mapping, agent: Optional[str] = None, source: Optional[Mapping] = None,
               parameters: Optional[Mapping] = None, orchestrator: Optional[Mapping] = None) -> dict:
    """Write ``runs/<run_id>/manifest.json`` from the stages' references; return its reference.

    ``refs`` maps a stage name to its reference (``tasks``, ``prices``, ``episodes``,
    ``graded``, ``metrics``, ``report``, ``gate``; None when a stage did not run). Every stage
    document, the baseline the gate used and every per-trial episode file is listed with its
    sha256; the results are the report's headline figures, the gate its verdict. ``inputs``
    are the values the stages were computed with (``k``, ``seed``, ``check``, ``run``,
    ``tolerance``, ``cost_tolerance``): what an audit recomputes them with.
    """
    from .manifest import RunManifest

    refs = {name: ref for name, ref in refs.items() if ref}
    artifacts = {ref["key"]: ref["sha256"] for ref in refs.values()}
    if "gate" in refs:
        artifacts[refs["gate"]["baseline"]["key"]] = refs["gate"]["baseline"]["sha256"]
    artifacts.update(trial_digests(store, run_id))
    tasks = store.read_json(refs["tasks"]["key"])
    report = store.read_json(refs["report"]["key"])
    manifest = RunManifest.build(
        run_id, provenance=RunProvenance.from_dict((report.get("detail") or {}).get("run") or {}),
        inputs=dict(inputs),
        suite={f: tasks.get(f) for f in ("name", "version", "digest", "path", "checker")},
        agent=agent, source=dict(source or {}), parameters=dict(parameters or {}),
        orchestrator=dict(orchestrator or {}), artifacts=artifacts,
        stages={name: {f: ref[f] for f in ("input_digest", "cached", "artifact")}
                for name, ref in refs.items() if "input_digest" in ref},
        results=results_of(report),
        gate=refs["gate"]["verdict"] if "gate" in refs else None)
    return {"stage": "manifest", "key": run_key(run_id, "manifest"),
            "sha256": store.write_manifest(run_id, manifest), "manifest": manifest.to_dict()}


def run_report(store: Any, run_id: str) -> tuple[dict, dict]:
    """``(manifest, report document)`` of a stored run."""
    manifest = store.read_manifest(run_id)
    return manifest, store.read_json(run_key(run_id, "report"))


def load_baseline(store: Any, name: str) -> dict:
    """The stored baseline ``name`` (BaselineError, saying how to make one, when there is none)."""
    doc = store.load_baseline(name)
    if doc is None:
        raise BaselineError(f"no baseline named {name!r} in store {store.url!r}: promote a run "
                            f"first (ek-agents promote RUN_ID --name {name})")
    return doc


def gate_run(store: Any, run_id: str, baseline: str, *, tolerance: float = 0.0,
             cost_tolerance: float = 0.0) -> dict:
    """The gate's verdict on a stored run against the named baseline (nothing is written)."""
    return guarded_gate(run_report(store, run_id)[1], load_baseline(store, baseline),
                        tolerance=tolerance, cost_tolerance=cost_tolerance, baseline_name=baseline)


def promote(store: Any, run_id: str, name: str) -> dict:
    """Make run ``run_id`` the baseline ``name`` (``harness.save_agent_baseline``).

    The baseline's report records ``detail["run_id"]`` and ``detail["manifest_sha256"]``, so
    an audit of the baseline finds, and re-checks, the run it came from.
    """
    from .harness import save_agent_baseline
    from .reporting import ReliabilityReport

    manifest, report = run_report(store, run_id)
    rep = ReliabilityReport.from_dict(report)
    linked = dataclasses.replace(rep, detail={**rep.detail, "run_id": run_id, "manifest_sha256":
                                              store.digest(run_key(run_id, "manifest"))})
    return save_agent_baseline(linked, name, rootdir=store,
                               run=RunProvenance.from_dict(manifest["provenance"]))
