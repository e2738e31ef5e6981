"""tau-bench and tau2-bench results -> :class:`~ek_agents.base.Episode` s.

- **tau-bench (v1)**: a JSON list of ``{task_id, reward, info, traj, trial}``; ``traj`` is
  OpenAI chat messages. Success is ``1 - 1e-6 <= reward <= 1 + 1e-6`` (tau-bench's own rule). A
  trial that crashed has ``info.error`` and an empty ``traj``: a failure with the error in
  ``meta``. v1 records no token usage, so ``cost`` is ``None``.
- **tau2-bench**: a ``Results`` JSON (``info``, ``tasks``, ``simulations``; or the "dir" format:
  ``results.json`` + ``simulations/<id>.json``, given as the ``results.json`` or as the run
  folder itself, with or without a ``simulation_index``; read as tau2's ``Results.load``
  does: every ``simulations/*.json`` in name order, checked against the index when there is
  one). Each simulation has ``task_id``, ``trial``,
  ``reward_info.reward``, ``messages`` (the agent's carry ``usage``/``cost``), ``agent_cost``,
  ``duration``, ``termination_reason``. Simulations that ended in ``infrastructure_error`` never
  produced an evaluable rollout: as tau2 does, they are excluded, and counted in every returned
  episode's ``provenance.meta["excluded_infrastructure_errors"]`` (and ``meta``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional

from ..base import Episode, RunProvenance
from ..core import Provenance, construct
from ..errors import BridgeError, EkAgentsError, InvalidInput
from ..errors import ArtifactNotFound
from ..store import Store
from ._access import as_seconds, mapping_at
from ._io import gc_paused, loads, read_json, url_of
from .messages import episode_from_messages

__all__ = ["read_tau_bench_results", "tau_success"]

#: tau2 termination reasons that mean the trial errored (-> meta["error"], meta["error_kind"]).
_ERRORED = {"agent_error": ("AgentError", "exception"), "user_error": ("UserSimulatorError", "exception"),
            "unexpected_error": ("UnexpectedError", "exception"), "timeout": ("Timeout", "timeout")}


def tau_success(reward: Any) -> bool:
    """tau-bench's success rule: ``1 - 1e-6 <= reward <= 1 + 1e-6``.

    >>> tau_success(1.0), tau_success(0.9999999), tau_success(0.0), tau_success(None)
    (True, True, False, False)
    """
    return isinstance(reward, (int, float)) and not isinstance(reward, bool) and 1 - 1e-6 <= reward <= 1 + 1e-6


@gc_paused()
def read_tau_bench_results(path_or_url: Any, *, run: Optional[RunProvenance] = None,
                           exclude: tuple = ("infrastructure_error",)) -> list[Episode]:
    """Read tau-bench (v1 list) or tau2-bench (``Results``) output into Episodes.

    Sorted by (task_id, trial); ``meta["trial"]`` is the trial index and ``meta["reward"]``
    the raw reward. ``run`` overrides the provenance (tau2 results carry their own: agent LLM,
    user simulator, domain and git commit). ``exclude`` lists the tau2 termination reasons
    that are not evaluable rollouts (newer tau2 also excludes ``"context_window_exceeded"``).
    """
    url = url_of(path_or_url).rstrip("/") or url_of(path_or_url)
    folder = _folder(url)
    if folder is not None and folder.exists("results.json"):  # the tau2 run folder itself
        url = f"{url}/results.json"
    data = read_json(url, "tau-bench results file")
    if isinstance(data, Mapping) and "simulations" not in data and "simulation_index" not in data \
            and "info" in data and _sim_keys(url):
        data = {**data, "simulations": []}  # dir format saved without an index
    if isinstance(data, list):
        eps = _v1(data, url, run)
    elif isinstance(data, Mapping) and ("simulations" in data or "simulation_index" in data):
        eps = _v2(data, url, run, tuple(exclude))
    else:
        raise BridgeError(
            f"{url!r} is neither tau-bench results (a JSON list of {{task_id, reward, info, traj, trial}}) "
            "nor a tau2-bench Results object (with 'simulations')"
        )
    return sorted(eps, key=lambda e: (e.task_id, e.meta.get("trial") if isinstance(e.meta.get("trial"), int) else -1))


def _need(rec: Any, keys: tuple, where: str, *at: Any) -> Mapping:
    """``rec`` when it is a record with ``keys`` and a usable ``task_id``; else a
    :class:`BridgeError` naming it (``where``: a ``str.format`` template of ``at``, formatted
    only for an error)."""
    if type(rec) is not dict and not isinstance(rec, Mapping):
        raise BridgeError(f"{where.format(*at)} must be an object, got {type(rec).__name__}")
    for k in keys:
        if k not in rec:
            missing = [k for k in keys if k not in rec]
            raise BridgeError(f"{where.format(*at)} lacks {missing} (has {sorted(map(str, rec))[:10]}); "
                              "is this a tau-bench results file?")
    tid = rec.get("task_id")
    if type(tid) is str and tid or type(tid) is int:
        return rec
    if isinstance(tid, bool) or not isinstance(tid, (str, int)) or str(tid) == "":
        raise BridgeError(f"{where.format(*at)}.task_id must be a non-empty string or integer, got {tid!r:.60}")
    return rec


def _crash_text(info: Mapping) -> str:
    """``"<Type>: <message>"`` from v1's ``info.error`` (+ the traceback's last line when it has one)."""
    err = str(info.get("error"))
    tb = str(info.get("traceback") or "").strip().splitlines()
    last = tb[-1].strip() if tb else ""
    if ":" in last and last.split(":", 1)[0].replace(".", "").replace("_", "").isalnum():
        return last
    return f"Error: {err}"


def _v1(data: list, url: str, run: Optional[RunProvenance]) -> list[Episode]:
    eps = []
    for i, raw in enumerate(data):
        rec = _need(raw, ("task_id", "reward"), "{}[{}]", url, i)
        info = rec.get("info")
        if type(info) is not dict and not isinstance(info, Mapping):
            info = {}
        reward = rec.get("reward")
        meta: dict = {"trial": rec.get("trial"), "reward": reward}
        for key in _V1_META:
            value = info.get(key)
            if value is not None:
                meta[key] = value
        success = tau_success(reward)
        if info.get("error") is not None:
            meta["error"], meta["error_kind"], success = _crash_text(info), "exception", False
        eps.append(episode_from_messages(
            rec.get("traj") or [], task_id=rec["task_id"], success=success, run=run, meta=meta,
            provenance=construct(Provenance, source=url, locator=f"[{i}]", meta={"format": "tau-bench"}),
            from_json=True))
    return eps


_V1_META = ("reward_info", "task", "user_cost", "total_cost")  # copied from a v1 record's info when set


def _folder(url: str) -> Optional[Store]:
    try:
        return Store(url)
    except (EkAgentsError, ValueError):
        return None


def _sim_keys(results_url: str) -> list:
    """Keys ``simulations/<id>.json`` beside ``results_url`` (tau2's "dir" format), sorted."""
    base = results_url.rsplit("/", 1)[0] if "/" in results_url else "."
    folder = _folder(base)
    if folder is None:
        return []
    try:
        keys = folder.list("simulations")
    except (ArtifactNotFound, InvalidInput):
        return []
    return [k for k in keys if k.count("/") == 1 and k.endswith(".json")]


def _v2_run(info: Mapping) -> RunProvenance:
    agent = mapping_at(info, "agent_info", "info")
    user = mapping_at(info, "user_info", "info")
    env = mapping_at(info, "environment_info", "info")
    temp = mapping_at(agent, "llm_args", "info.agent_info").get("temperature")
    domain = env.get("domain_name") or ""
    commit = info.get("git_commit") or ""
    return RunProvenance(
        seed=info.get("seed") if isinstance(info.get("seed"), int) else None,
        temperature=float(temp) if isinstance(temp, (int, float)) else None,
        model=str(agent.get("llm") or ""),
        simulator=":".join(str(x) for x in (user.get("implementation"), user.get("llm")) if x),
        suite_version=f"tau2/{domain}@{commit}" if commit else f"tau2/{domain}",
        scaffold=str(agent.get("implementation") or ""),
    )


def _tick_messages(ticks: list) -> list:
    """Half-duplex messages from a full-duplex simulation's ticks (the agent's side)."""
    out: list = []
    for t in ticks:
        if not isinstance(t, Mapping):
            continue
        chunk = t.get("agent_chunk") or {}
        if not isinstance(chunk, Mapping):
            raise BridgeError(f"a tick's agent_chunk must be an object, got {chunk!r:.60}")
        if chunk or t.get("agent_tool_calls"):
            out.append({"role": "assistant", "content": chunk.get("content"),
                        "tool_calls": t.get("agent_tool_calls") or None, "usage": chunk.get("usage")})
        out.extend(t.get("agent_tool_results") or [])
    return out


def _v2_sims(data: Mapping, url: str) -> list:
    sims = data.get("simulations") or []
    if not isinstance(sims, list):
        raise BridgeError(f"{url}: 'simulations' must be a list, got {type(sims).__name__}")
    index = data.get("simulation_index")
    if index is not None and not isinstance(index, list):
        raise BridgeError(f"{url}: 'simulation_index' must be a list, got {type(index).__name__}")
    if sims:
        return sims
    # "dir" format, as tau2's Results.load reads it: every simulations/*.json beside
    # results.json (never a path built from an id, so no id can leave the folder), checked
    # against the index when there is one
    keys = _sim_keys(url)
    if index is not None:
        ids = set()
        for j, e in enumerate(index):
            if not isinstance(e, Mapping) or not isinstance(e.get("id"), str) or not e["id"]:
                raise BridgeError(f"{url}: simulation_index[{j}] needs a string 'id', got {e!r:.60}")
            ids.add(e["id"])
        on_disk = {k.split("/", 1)[1][:-len(".json")] for k in keys}
        if ids != on_disk:
            missing, extra = sorted(ids - on_disk)[:5], sorted(on_disk - ids)[:5]
            raise BridgeError(f"{url}: simulation_index does not match the files in simulations/ "
                              f"(missing files: {missing}, files not in the index: {extra}); "
                              "re-save the run with tau2 or fix the index")
    base = url.rsplit("/", 1)[0] if "/" in url else "."
    folder = _folder(base)
    out = []
    for k in keys:
        where = f"{base}/{k}"
        try:
            out.append(loads(folder.read_bytes(k), where, "a JSON tau2 simulation"))
        except ArtifactNotFound as exc:
            raise BridgeError(f"{where}: {exc}") from None
    return out


def _v2(data: Mapping, url: str, run: Optional[RunProvenance], exclude: tuple) -> list[Episode]:
    info = mapping_at(data, "info", url)
    prov_run = run if run is not None else _v2_run(info)
    kept, excluded = [], 0
    for i, raw in enumerate(_v2_sims(data, url)):
        sim = _need(raw, ("task_id", "termination_reason"), "{}:simulations[{}]", url, i)
        term = str(sim["termination_reason"])
        if term in exclude:
            excluded += 1
            continue
        kept.append((i, sim, term))
    eps = []
    for i, sim, term in kept:
        reward = mapping_at(sim, "reward_info", f"{url}:simulations[{i}]").get("reward")
        meta: dict = {"trial": sim.get("trial"), "reward": reward, "termination_reason": term,
                      "simulation_id": sim.get("id"), "excluded_infrastructure_errors": excluded}
        for key, name in (("agent_cost", "agent_cost_usd"), ("user_cost", "user_cost_usd"), ("seed", "seed")):
            if sim.get(key) is not None:
                meta[name] = sim[key]
        success = tau_success(reward)
        if term in _ERRORED:
            kind, meta["error_kind"] = _ERRORED[term]
            meta["error"] = f"{kind}: tau2 simulation ended with termination_reason={term!r}"
            success = False
        messages = sim.get("messages")
        if messages is None:
            ticks = sim.get("ticks") or []
            if not isinstance(ticks, list):
                raise BridgeError(f"{url}:simulations[{i}].ticks must be a list, got {ticks!r:.60}")
            messages = _tick_messages(ticks)
        sim_run = prov_run
        if run is None and isinstance(sim.get("seed"), int):
            sim_run = dataclasses.replace(prov_run, seed=sim["seed"])
        duration = sim.get("duration")
        prov = construct(Provenance, source=url, locator=f"simulations[{i}]",
                         meta={"format": "tau2-bench", "simulation_id": sim.get("id"),
                               "excluded_infrastructure_errors": excluded})
        eps.append(episode_from_messages(
            messages, task_id=sim["task_id"], success=success, run=sim_run, meta=meta,
            latency_s=as_seconds(duration), provenance=prov, from_json=True))
    return eps
