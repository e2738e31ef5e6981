"""Inspect AI logs (``.eval`` and ``.json``) -> one :class:`~ek_agents.base.Episode` per
(sample id, epoch), without importing inspect_ai.

- ``task_id`` = the sample id; ``meta["epoch"]`` (1-based, as Inspect counts) and
  ``meta["trial"]`` = epoch - 1 (0-based, as the harness counts);
- ``trajectory`` from the sample's messages (a tool message carrying ``error`` marks the step);
- ``output`` = the final completion;
- ``cost`` from the sample's ``model_usage`` (all models summed; the per-model records stay in
  ``meta["model_usage"]``) minus the usage of grader roles (``role_usage``: a model-graded
  scorer's tokens are not the agent's) -- or, with ``role=``, that role's usage alone;
  ``latency_s`` = the sample's ``total_time``;
- ``success`` from a scorer's value (``C``/``I``, 1/0, true/false; ``scorer=`` picks which,
  default the first); all scorer values are in ``meta["scores"]``;
- ``run`` from the eval spec: model, ``suite_version = "<task>@<task_version>"``,
  ``scaffold`` = the solver chain, seed and temperature from the generate config.

A sample that errored is an Episode with ``success=False`` and ``meta["error"]`` -- never
dropped (Inspect's reducers leave errored epochs out by default; a failure is a failure).
"""
from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Mapping
from typing import Any, Optional

from ..base import Cost, Episode, RunProvenance
from ..core import Provenance, construct
from ..errors import BridgeError, did_you_mean
from ._access import as_seconds, list_at, mapping_at, plain
from ._evalzip import EvalZip
from ._io import gc_paused, loads, read_bytes, url_of
from .messages import content_text, parse_transcript
from .usage import cost_from_usage, cost_minus

__all__ = ["read_inspect_log", "from_inspect_sample", "GRADER_ROLES", "score_success"]

#: Model roles whose usage is grading, not the agent's work (subtracted from the cost).
GRADER_ROLES: tuple = ("grader", "judge", "scorer")

_TRUE = {"c", "correct", "true", "yes", "pass", "passed", "success", "1"}
_FALSE = {"i", "incorrect", "false", "no", "fail", "failed", "n", "p", "partial", "0"}


def score_success(value: Any) -> Optional[bool]:
    """A scorer value as success: ``C``/``I`` (Inspect's CORRECT/INCORRECT; ``P`` partial and
    ``N`` no-answer are failures), 1/0, true/false. ``None`` when it is not a pass/fail value.

    >>> [score_success(v) for v in ("C", "I", 1, 0.0, True, "P", 0.5, {"a": 1})]
    [True, False, True, False, True, False, False, None]
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if value != value or not 0 <= value <= 1:
            return None
        return value >= 1 - 1e-6
    if isinstance(value, str):
        v = value.strip().lower()
        return True if v in _TRUE else False if v in _FALSE else None
    return None


def _error_text(err: Any) -> str:
    """Inspect's ``EvalError.message`` (``"RuntimeError('boom')"``) as ``"RuntimeError: boom"``."""
    msg = err.get("message") if isinstance(err, Mapping) else err
    msg = str(msg or "error")
    m = re.fullmatch(r"([A-Za-z_][\w.]*)\((['\"])(.*)\2\)", msg, re.S)
    return f"{m.group(1)}: {m.group(3)}" if m else msg


def _resolve_attachments(obj: Any, attachments: Mapping) -> Any:
    if isinstance(obj, str) and obj.startswith("attachment://"):
        return attachments.get(obj[len("attachment://"):], obj)
    if isinstance(obj, list):
        return [_resolve_attachments(x, attachments) for x in obj]
    if isinstance(obj, dict):
        return {k: _resolve_attachments(v, attachments) for k, v in obj.items()}
    return obj


def _check_header(header: Any, where: str) -> Mapping:
    """The log header (eval spec, plan, stats) with every field this bridge reads checked for
    its type, so a wrong nested type is a BridgeError naming the field."""
    if not isinstance(header, Mapping):
        raise BridgeError(f"{where}: the log header must be an object, got {type(header).__name__}; "
                          "is this an Inspect log?")
    ev = mapping_at(header, "eval", "header")
    for key in ("model_generate_config", "model_roles", "packages"):
        mapping_at(ev, key, "header.eval")
    for key in ("model", "task", "solver"):
        if ev.get(key) is not None and not isinstance(ev[key], str):
            raise BridgeError(f"{where}: header.eval.{key} must be a string, got {ev[key]!r:.60}")
    plan = mapping_at(header, "plan", "header")
    mapping_at(plan, "config", "header.plan")
    list_at(plan, "steps", "header.plan")
    mapping_at(mapping_at(header, "stats", "header"), "role_usage", "header.stats")
    return header


def _run(header: Optional[Mapping]) -> Optional[RunProvenance]:
    if not header or not isinstance(header.get("eval"), Mapping):
        return None
    ev, plan = header["eval"], header.get("plan") or {}
    gen = {**(ev.get("model_generate_config") or {}), **(plan.get("config") or {})}
    steps = [s.get("solver", "") for s in plan.get("steps") or [] if isinstance(s, Mapping)]
    solver = ev.get("solver") or " > ".join(str(s) for s in steps if s)
    seed = gen.get("seed")
    temp = gen.get("temperature")
    return RunProvenance(
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        temperature=float(temp) if isinstance(temp, (int, float)) else None,
        model=str(ev.get("model") or ""),
        suite_version=f"{ev.get('task', '')}@{ev.get('task_version', 0)}",
        scaffold=solver,
    )


def _usage_records(records: Any) -> dict:
    """``{name: usage}`` with unset (None) counts dropped, as inspect_ai writes them to JSON."""
    if not isinstance(records, Mapping):
        return {}
    return {k: ({f: v for f, v in u.items() if v is not None} if isinstance(u, Mapping) else u)
            for k, u in records.items()}


def _cost(sample: Mapping, role: Optional[str], grader_roles: tuple, where: str,
          known_roles: frozenset = frozenset()) -> tuple:
    """``(cost, meta)`` from the sample's model/role usage."""
    model_usage = _usage_records(sample.get("model_usage"))
    role_usage = _usage_records(sample.get("role_usage"))
    meta: dict = {}
    if model_usage:
        meta["model_usage"] = model_usage
    if role_usage:
        meta["role_usage"] = role_usage
    latency = as_seconds(sample.get("total_time"))
    if role is not None:
        if role not in role_usage and role in known_roles:  # the role made no call in this sample
            return Cost(latency_s=latency), meta
        if role not in role_usage:
            raise BridgeError(f"{where}: no usage for model role {role!r} (roles: {sorted(role_usage)})"
                              f"{did_you_mean(role, role_usage)}")
        return cost_from_usage(role_usage[role], latency_s=latency), meta
    if not model_usage:  # Inspect records every model call: an empty record means no calls
        return (None if "model_usage" not in sample else Cost(latency_s=latency)), meta
    cost = cost_from_usage(model_usage, latency_s=latency)
    graders = [r for r in role_usage if r in grader_roles]
    if graders:
        cost, clamped = cost_minus(cost, sum(cost_from_usage(role_usage[r]) for r in graders))
        meta["grader_roles_excluded"] = graders
        if clamped:
            meta["usage_inconsistent"] = "grader usage exceeded model usage; clamped at 0"
    return cost, meta


def _output(sample: Mapping, final_text: Optional[str]) -> Any:
    out = sample.get("output")
    if isinstance(out, Mapping):
        if out.get("completion"):
            return out["completion"]
        choices = out.get("choices") or []
        if choices and isinstance(choices[0], Mapping):
            return content_text((choices[0].get("message") or {}).get("content")) or ""
    return final_text


#: The EvalSample fields a bridge reads (events, store, ... are left alone: they can be large).
_FIELDS = ("id", "epoch", "messages", "output", "scores", "model_usage", "role_usage", "error",
           "error_retries", "limit", "target", "total_time", "working_time", "uuid", "attachments")


def _sample_fields(sample: Any, where: str, parsed: bool = False) -> dict:
    if parsed and isinstance(sample, dict):  # straight from JSON: already plain, no copy
        return {k: sample[k] for k in _FIELDS if k in sample}
    if isinstance(sample, Mapping):
        return {k: plain(sample[k]) for k in _FIELDS if k in sample}
    if sample is None or isinstance(sample, (str, bytes, list, tuple, int, float)):
        raise BridgeError(f"{where} must be an Inspect EvalSample (object or dict), got {type(sample).__name__}")
    return {k: plain(getattr(sample, k)) for k in _FIELDS if hasattr(sample, k)}


def _episode(sample: Any, run: Optional[RunProvenance], *, task_id: Any = "", scorer: Optional[str] = None,
             role: Optional[str] = None, grader_roles: tuple = GRADER_ROLES,
             provenance: Optional[Provenance] = None, where: str = "sample",
             known_roles: frozenset = frozenset(), parsed: bool = False) -> Episode:
    s = _sample_fields(sample, where, parsed)
    for key in ("attachments", "scores", "output", "model_usage", "role_usage"):
        mapping_at(s, key, where)
    for key in ("messages", "error_retries"):
        list_at(s, key, where)
    choices = list_at(mapping_at(s, "output", where), "choices", f"{where}.output")
    if choices and isinstance(choices[0], Mapping):
        mapping_at(choices[0], "message", f"{where}.output.choices[0]")
    if "id" in s and (isinstance(s["id"], (dict, list, bool)) or str(s["id"]) == ""):
        raise BridgeError(f"{where}.id must be a non-empty string or integer, got {s['id']!r:.60}")
    if s.get("attachments"):
        s = _resolve_attachments(s, s["attachments"])
    if "id" not in s and not task_id:
        raise BridgeError(f"{where} has no 'id'; pass task_id=... or give an Inspect EvalSample")
    messages = s.get("messages")
    if messages is None:
        raise BridgeError(f"{where} has no 'messages' list (keys: {sorted(s)[:12]}); is this an EvalSample?")
    tr = parse_transcript(messages, from_json=parsed)
    epoch = s.get("epoch") if isinstance(s.get("epoch"), int) else 1
    meta: dict = {"epoch": epoch, "trial": epoch - 1, "sample_id": s.get("id")}
    cost, usage_meta = _cost(s, role, grader_roles, where, known_roles)
    meta.update(usage_meta)
    scores = s.get("scores") or {}
    success: Optional[bool] = None
    if scores:
        name = scorer if scorer is not None else next(iter(scores))
        if name not in scores:
            raise BridgeError(f"{where}: no scorer {name!r} (scorers: {sorted(scores)})"
                              f"{did_you_mean(name, scores)}")
        value = (scores[name] or {}).get("value") if isinstance(scores[name], Mapping) else scores[name]
        success = score_success(value)
        meta["scorer"] = name
        meta["scores"] = {k: (v.get("value") if isinstance(v, Mapping) else v) for k, v in scores.items()}
        if success is None:
            meta["score_unreadable"] = f"scorer {name!r} value {value!r} is not pass/fail"
    if s.get("error"):
        success = False
        meta["error"] = _error_text(s["error"])
        meta["error_kind"] = "exception"
    if s.get("error_retries"):
        meta["error_retries"] = len(s["error_retries"])
        if cost is not None:
            cost = dataclasses.replace(cost, retries=len(s["error_retries"]))
    if s.get("limit"):
        meta["limit"] = s["limit"]
    for key in ("target", "total_time", "working_time", "uuid"):
        if s.get(key) is not None:
            meta[key] = s[key]
    if tr.unpaired_results:
        meta["unpaired_tool_results"] = tr.unpaired_results
    if run is not None and run.model:
        meta["model"] = run.model
    tid = task_id if task_id not in ("", None) else s.get("id")
    return construct(Episode, task_id=str(tid), trajectory=tr.trajectory, output=_output(s, tr.final_text),
                     cost=cost, success=success, run=run, provenance=provenance, meta=meta)  # all made here


def from_inspect_sample(sample: Any, *, task_id: Any = "", scorer: Optional[str] = None,
                        role: Optional[str] = None, grader_roles: tuple = GRADER_ROLES) -> Episode:
    """Adapt an Inspect AI ``EvalSample``-shaped object (or its dict) into an ``Episode``.

    Reads ``.messages``, ``.output``, ``.id``, ``.epoch``, ``.scores``, ``.model_usage``,
    ``.error`` -- no ``inspect_ai`` import required. See :func:`read_inspect_log`.

    >>> ep = from_inspect_sample({"id": 3, "epoch": 2, "messages": [
    ...     {"role": "assistant", "content": "", "tool_calls": [
    ...         {"id": "c1", "function": "add", "arguments": {"a": 1, "b": 2}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "3"},
    ...     {"role": "assistant", "content": "3"}],
    ...     "output": {"completion": "3"}, "scores": {"match": {"value": "C"}},
    ...     "model_usage": {"openai/gpt-4o": {"input_tokens": 50, "output_tokens": 9,
    ...                                       "total_tokens": 59}}})
    >>> ep.task_id, ep.meta["epoch"], ep.calls, ep.output, ep.success, ep.cost.total_tokens
    ('3', 2, (('add', {'a': 1, 'b': 2}),), '3', True, 59)
    """
    return _episode(sample, None, task_id=task_id, scorer=scorer, role=role, grader_roles=grader_roles)


@gc_paused()
def read_inspect_log(path_or_url: Any, *, scorer: Optional[str] = None, role: Optional[str] = None,
                     grader_roles: tuple = GRADER_ROLES) -> list[Episode]:
    """Read an Inspect AI log (``.eval`` or ``.json``, any fsspec URL) into Episodes.

    One Episode per (sample id, epoch), sorted by (task_id, epoch); see the module docstring
    for what goes where. ``scorer`` picks the scorer whose value is ``success`` (default: each
    sample's first); ``role`` takes the cost from that model role's usage alone;
    ``grader_roles`` are the roles whose usage is subtracted otherwise.
    """
    url = url_of(path_or_url)
    data = read_bytes(url)
    if data[:4] == b"PK\x03\x04":
        header, items = _read_eval(io.BytesIO(data), url)
    else:
        header, items = _read_json(data, url)
    header = _check_header(header, url)
    known = _known_roles(header, items)
    if role is not None and role not in known:
        raise BridgeError(f"{url!r}: no model role {role!r} in this log (roles: {sorted(known)})"
                          f"{did_you_mean(role, known)}")
    run = _run(header)
    eps = [
        _episode(sample, run, scorer=scorer, role=role, grader_roles=grader_roles,
                 provenance=construct(Provenance, source=url, locator=locator, meta=_prov_meta(header, fmt)),
                 where=f"{url}:{locator}", known_roles=known, parsed=True)
        for sample, locator, fmt in items
    ]
    return sorted(eps, key=lambda e: (e.task_id, e.meta.get("epoch", 0)))


def _known_roles(header: Optional[Mapping], items: list) -> frozenset:
    """The model roles a log mentions: declared in the eval spec, or with usage anywhere."""
    header = header or {}
    roles = set((header.get("eval") or {}).get("model_roles") or {})
    roles |= set((header.get("stats") or {}).get("role_usage") or {})
    for sample, locator, _ in items:
        if isinstance(sample, Mapping):
            roles |= set(mapping_at(sample, "role_usage", locator))
    return frozenset(roles)


def _prov_meta(header: Optional[Mapping], fmt: str) -> dict:
    meta = {"format": fmt}
    ev = (header or {}).get("eval") or {}
    for key in ("eval_id", "run_id", "task", "task_version", "created"):
        if ev.get(key) is not None:
            meta[key] = ev[key]
    if (ev.get("packages") or {}).get("inspect_ai"):
        meta["inspect_ai"] = ev["packages"]["inspect_ai"]
    if (header or {}).get("status"):
        meta["log_status"] = header["status"]
    return meta


def _read_json(raw: bytes, url: str) -> tuple:
    data = loads(raw, url)
    if not isinstance(data, Mapping) or "eval" not in data:
        raise BridgeError(f"{url!r} is not an Inspect log: a .json log is an object with 'eval' and "
                          "'samples' (a .eval log is a zip)")
    samples = list_at(data, "samples", repr(url))
    if not samples:
        raise BridgeError(f"{url!r} holds no samples (written with log_samples=False, or header-only); "
                          "re-run the eval with samples logged")
    return data, [(s, f"samples[{i}]", "json") for i, s in enumerate(samples)]


def _read_eval(f: Any, url: str) -> tuple:
    z = EvalZip(f, url)
    names = z.names()
    if "header.json" in names:
        header = loads(z.read("header.json"), f"{url}:header.json")
    elif "_journal/start.json" in names:  # a log still being written, or one that crashed
        header = loads(z.read("_journal/start.json"), f"{url}:_journal/start.json")
    else:
        raise BridgeError(f"{url!r} is a zip but not an Inspect .eval log (no header.json)")
    members = [n for n in names if n.startswith("samples/") and n.endswith(".json")]
    if not members:
        raise BridgeError(f"{url!r} holds no samples (written with log_samples=False?); "
                          "re-run the eval with samples logged")
    return header, [(loads(z.read(n), f"{url}:{n}"), n, "eval") for n in members]
