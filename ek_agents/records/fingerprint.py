"""Run identity: what decides a run's episodes (its fingerprint), the agent's declared
configuration and code digest, and the claim a (re)run makes on a run id's stored trials.

What decides a run's episodes is its fingerprint, stored at the run's first write
(``store.run_key(run_id, "fingerprint")``); a resume must match it, and a resume trusts no
per-trial file it has not checked (:func:`claim_run`).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from pydantic import Field

from ..base import Episode, JsonShape
from ..core import shape
from ..errors import ArtifactNotFound, IntegrityError, InvalidInput, RunMismatch, UnidentifiedAgent
from ..store import episode_key, episodes_prefix, parse_json, run_key
from ..identity import agentid
from ..identity import EK_CONFIG, agent_identity, agent_name, code_digest, declared_config
from .segments import RunSegments, iter_segments

__all__ = ["EK_CONFIG", "RunFingerprint", "RunReuse", "agent_config", "agent_name", "code_digest",
           "trial_matches", "parse_trial", "errored", "fingerprint_key", "check_fingerprint", "claim_run",
           "run_fingerprint"]


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
    agent_identity: Optional[agentid.AgentIdentity] = None
    """What identifies the agent beyond its import path: its code and state, digested
    (``agentid.agent_identity``: closure cells, attributes, partial arguments, ...), or the
    caller's ``agent_id``; what could not be identified is listed, and a resume refused."""

    def differences(self, other: "RunFingerprint") -> list[str]:
        """The fields whose values differ from ``other``'s, as ``"k: 2 (stored) -> 3"``
        (the agent's identity by part: ``agent_identity.state.closure.answer: ...``)."""
        mine, theirs = self.to_dict(), other.to_dict()

        def show(v: Any) -> str:
            text = repr(v)
            return text if len(text) <= 80 else text[:77] + "..."

        return [line for f in sorted(mine) if f != "schema_version" and mine.get(f) != theirs.get(f)
                for line in ([f"{f}: {show(mine.get(f))} (stored) -> {show(theirs.get(f))}"]
                             if f != "agent_identity" else
                             agentid.differences(self.agent_identity, other.agent_identity))]


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
    variables it read). ``{}`` when it declares none (``agentstate.declared_config``, the
    agent named by its ``repr`` in an error).

    >>> class A:
    ...     ek_config = {"model": "m1", "temperature": 0.0}
    ...     def __call__(self, task): return "x"
    >>> agent_config(A())
    {'model': 'm1', 'temperature': 0.0}
    """
    return declared_config(agent, by_repr=True)


def run_fingerprint(agent: Any, *, name: Optional[str], code: Optional[str], suite: str, k: int,
                    seed: Optional[int], run: Mapping, capture: Optional[str],
                    timeout_s: Optional[float], retries: int,
                    agent_id: Optional[str] = None,
                    limits: Optional[Mapping] = None) -> RunFingerprint:
    """The fingerprint of a run of ``agent`` (the loaded callable) named ``name`` whose code
    digests to ``code``: its declared configuration (:func:`agent_config`), its identity
    (``agentid.agent_identity``: code and state, or ``agent_id``), the suite's digest, k, the
    seed, the run's provenance ``run`` (a ``RunProvenance`` dict; the capture added when set:
    the episodes are then read from spans, another run's than one without) and ``limits``
    (the trial and run limits that were set, as ``execution.limits.limits_provenance`` gives
    them: a trial's outcome depends on its limits)."""
    prov = {f: v for f, v in run.items() if f != "schema_version"}
    if capture:
        prov["capture"] = str(capture)
    prov.update(limits or {})
    return RunFingerprint(agent=name, agent_code=code, agent_config=agent_config(agent),
                          agent_identity=agent_identity(agent, agent_id=agent_id), suite=suite,
                          k=k, seed=seed, run=prov, timeout_s=timeout_s, retries=retries)


def trial_matches(episode: Any, task_id: str, trial: int) -> bool:
    """Whether a stored episode is trial ``trial`` of task ``task_id`` (what its key says)."""
    if not isinstance(episode, Episode) or episode.task_id != task_id:
        return False
    stored = episode.meta.get("trial")
    return isinstance(stored, int) and not isinstance(stored, bool) and stored == trial


def parse_trial(data: Any, key: str, task_id: str, trial: int) -> Optional[tuple[Any, Episode]]:
    """A stored trial's bytes (a per-trial file, a segment line) read as trial ``trial`` of task
    ``task_id``, what its key names: ``(the parsed document, its episode)``, or None when they
    are not an episode, or are another trial's (misfiled: the trial runs again)."""
    try:
        doc = parse_json(data, key)
        episode = Episode.from_dict(doc)
    except (IntegrityError, InvalidInput):
        return None
    return (doc, episode) if trial_matches(episode, task_id, trial) else None


def errored(episode: Episode) -> bool:
    """Whether a trial ended in an error (the agent raised, timed out, or its endpoint failed)."""
    return bool(episode.meta.get("error"))


def fingerprint_key(run_id: str) -> str:
    """The key of a run's fingerprint document."""
    return run_key(run_id, "fingerprint")


def check_fingerprint(store: Any, run_id: str, fingerprint: RunFingerprint, *,
                      refresh: bool = False) -> bool:
    """The identity rule of a (re)run, checked before anything of it is touched: run
    ``run_id``'s stored fingerprint must be ``fingerprint`` --
    :class:`~ek_agents.errors.RunMismatch` naming the differing fields, or
    :class:`~ek_agents.errors.UnidentifiedAgent` when an agent's state could not be identified
    -- unless ``refresh``. On the run's first write (or a refresh) an agent that could not be
    identified is warned of once. Returns whether this is the run's first write; the caller
    stores the fingerprint (``fingerprint_key``) once it has done its part."""
    key = fingerprint_key(run_id)
    first_write = not store.exists(key)
    if not first_write and not refresh:
        try:
            stored: Optional[RunFingerprint] = RunFingerprint.from_dict(store.read_json(key))
        except (IntegrityError, InvalidInput):
            stored = None
        if stored != fingerprint:
            diff = (stored.differences(fingerprint) if stored is not None
                    else ["fingerprint: unreadable"])
            unidentified = agentid.refusal(run_id, stored and stored.agent_identity,
                                           fingerprint.agent_identity)
            if unidentified:  # never guessed: an agent it could not identify is not resumed
                raise UnidentifiedAgent(f"{unidentified}. Differences: {'; '.join(diff)}")
            raise RunMismatch(
                f"run {run_id!r} was started with other settings, so its stored trials are not "
                f"this run's: {'; '.join(diff)}. Use a new run id, or refresh the run "
                "(refresh=True / --refresh) to run every trial afresh")
    if first_write or refresh:
        agentid.warn_unidentified(run_id, fingerprint.agent_identity)
    return first_write


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
    key = fingerprint_key(run_id)
    by_key = {episode_key(run_id, tid, i): (tid, i) for tid, i in pairs}
    present = [k for k in store.list(episodes_prefix(run_id)) if k in by_key]
    first_write = check_fingerprint(store, run_id, fingerprint, refresh=refresh)  # before anything is touched
    reuse = {"kept": 0, "refreshed": 0, "retried": 0, "misfiled": 0}
    kept: dict[tuple[str, int], Episode] = {}
    segments = RunSegments.load(store, run_id)
    if refresh:
        for k in present:
            store.delete(k)
        reuse["refreshed"] = len(present) + segments.remove_all()
        present = []
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(present)))) as ex:
        loaded = list(ex.map(lambda k: _stored_episode(store, k, by_key[k]), present))
    for k, ep in zip(present, loaded):
        if ep is None:
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
            parsed = parse_trial(t.data, t.key, *t.pair)
            ep = parsed[1] if parsed else None
            if ep is None:
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


def _stored_episode(store: Any, key: str, pair: tuple) -> Optional[Episode]:
    """The per-trial file ``key`` as the trial ``pair`` (:func:`parse_trial`), None when it is
    gone, not an episode, or another trial's."""
    try:
        data = store.read_bytes(key)
    except ArtifactNotFound:
        return None
    parsed = parse_trial(data, key, *pair)
    return parsed[1] if parsed else None
