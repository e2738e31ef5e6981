"""The stage cache: stage references and content-addressed stage outputs indexed by input digest.

A stage's output is a content-addressed artifact; the cache index (``store.cache_key(stage,
digest)``) maps the stage's input digest (``manifest.input_digest``: everything that decided it)
to that artifact, so a re-run with the same inputs is a hit and a killed run resumes where it
stopped. :class:`StageRef` (and its kinds) is what one stage hands the next: small JSON that
travels to any worker.

>>> from ek_agents.store import Store
>>> from ek_agents.records.manifest import input_digest
>>> s = Store("memory://ek-record-doctest")
>>> calls = []
>>> doc, sha, hit = cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})
>>> doc, hit, cached(s, "square", input_digest("square", x=3), lambda: calls.append(1) or {"y": 9})[2], len(calls)
({'y': 9}, False, True, 1)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Optional

from pydantic import Field

from ..base import JsonShape
from ..core import shape
from ..errors import ArtifactNotFound, IntegrityError, InvalidInput
from ..store import artifact_key, cache_key, canonical_json, parse_json, run_key
from .manifest import as_plain, utc_now

__all__ = ["StageRef", "EpisodesRef", "SuiteRef", "GateRef", "ManifestRef", "lookup",
           "lookup_bytes", "cached", "put_indexed", "cache_origin", "stage_output", "reused_output", "write_output", "index_output",
           "write_doc", "write_tasks", "doc_bytes"]

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
    found = lookup_bytes(store, stage, digest)
    return None if found is None else (parse_json(found[0], artifact_key(found[1])), found[1])


def lookup_bytes(store: Any, stage: str, digest: str) -> Optional[tuple[bytes, str]]:
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
    return doc, put_indexed(store, stage, digest, doc, run_id), False


def put_indexed(store: Any, stage: str, digest: str, doc: Any, run_id: Optional[str]) -> str:
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
    is used: None on a miss. (:func:`reused_output`, else :func:`write_output` of
    ``compute()``: the stages call the two themselves, so the stage cache never calls back up
    into a stage.)
    """
    found = reused_output(store, run_id, stage, digest)
    if found is not None or compute is None:
        return found
    return write_output(store, run_id, stage, digest, compute())


def reused_output(store: Any, run_id: str, stage: str, digest: str) -> Optional[StageRef]:
    """A stage cache hit for ``stage`` / ``digest`` written as the run's ``stage`` document
    (the artifact's verified bytes, copied as they are), or None on a miss."""
    found = lookup_bytes(store, stage, digest)
    if found is None:
        return None
    key = run_key(run_id, stage)
    return StageRef(stage=stage, key=key, sha256=store.write_bytes(key, found[0]),
                    artifact=found[1], input_digest=digest, cached=True)


def doc_bytes(doc: Any) -> bytes:
    """A run document's canonical JSON bytes; ``doc`` as it is when it is those bytes already
    (``trials.episodes_json``, ``trials.episodes_bytes``).

    >>> doc_bytes({"b": 1, "a": [None]}), doc_bytes(b'{"a":1}')
    (b'{"a":[null],"b":1}', b'{"a":1}')
    """
    return doc if isinstance(doc, bytes) else canonical_json(as_plain(doc))


def write_output(store: Any, run_id: str, stage: str, digest: str, made: Any) -> StageRef:
    """A stage's freshly computed output ``made`` (the document, or its canonical JSON bytes
    already) indexed under ``digest`` in the stage cache and written as the run's ``stage``
    document (its canonical JSON made once, for the artifact and the run's copy)."""
    data = doc_bytes(made)
    artifact = put_indexed(store, stage, digest, data, run_id)
    key = run_key(run_id, stage)
    return StageRef(stage=stage, key=key, sha256=store.write_bytes(key, data), artifact=artifact,
                    input_digest=digest, cached=False)


def index_output(store: Any, run_id: str, stage: str, digest: str, doc: Any) -> StageRef:
    """Store ``doc`` as what ``digest`` produced in run ``run_id`` (replacing any older entry
    of the stage cache under that digest: a refreshed or retried run's episodes are the newest
    production of those inputs) and write it as the run's ``stage`` document. ``doc`` may be
    its canonical JSON bytes already (:func:`episodes_bytes`). The same write as
    :func:`write_output`: ``put_indexed`` always replaces the index entry."""
    return write_output(store, run_id, stage, digest, doc)


def write_doc(store: Any, run_id: str, name: str, doc: Any) -> StageRef:
    """Write a run's document (suite, prices, baseline; a ``run_suite`` run's stages) and
    return its reference; ``doc`` may be its canonical JSON bytes already."""
    key = run_key(run_id, name)
    return StageRef(stage=name, key=key, sha256=store.write_bytes(key, doc_bytes(doc)))


def write_tasks(store: Any, run_id: str, doc: Mapping, data: Optional[bytes] = None) -> SuiteRef:
    """Write a run's tasks document (``data``: its canonical JSON bytes when the caller made
    them); its reference also carries the suite's name, version and digest."""
    ref = write_doc(store, run_id, "tasks", doc if data is None else data)
    return SuiteRef(stage=ref.stage, key=ref.key, sha256=ref.sha256, name=doc["name"],
                    version=doc["version"], digest=doc["digest"])
