"""What identifies an agent: its code and everything in its state that decides its answers.

A stored trial is reused only for the same agent (``records.fingerprint.RunFingerprint``), so the identity
must tell ``make_agent("OK")`` from ``make_agent("WRONG")``, ``Agent(model="gpt-4o")`` from
``Agent(model="gpt-4o-mini")`` and one ``python -`` lambda from another -- and must be the same
for an equal agent built in another process or on another machine. :func:`agent_identity`
digests:

- **code**: the agent's function (a bound method's, a partial's innermost function's) or, for a
  callable instance, its class: the sha256 of the source file that defines it (when there is
  one) and of its code object -- bytecode, constants, names, nested code objects; never a
  file path, line number or address. Code with no source file (``python -``, ``python -c``,
  a notebook cell) is identified by its code object alone, plus the module globals it reads.
- **state**, recursively: closure cells, ``__defaults__`` / ``__kwdefaults__``, a bound
  method's ``__self__``, a partial's function / args / keywords, an instance's ``__dict__``
  and ``__slots__`` (and, for a class with no source file or defined inside a function, the
  class's own attributes and methods). Values go through one canonical encoding (the walk
  in :mod:`ek_agents.identity._agentstate`: containers order-free where Python's are, pydantic
  models, dataclasses, numpy arrays, pickle recipes, ...). An object that declares
  ``ek_config`` (a JSON mapping, or a method returning one) is identified by that declaration
  instead of its attributes.
- What cannot be digested -- a lock, a socket, an open file, a generator, a live client
  holding any of them, a C object whose state Python cannot see -- is never guessed: the
  identity lists it under ``undigestable`` (the top-level attribute and why) and carries a
  per-process token of those very objects (``instance``). The run still runs; a resume of its
  run id from another process or with other objects is refused
  (:class:`~ek_agents.errors.UnidentifiedAgent`) until the agent says what identifies it
  (``ek_config``, or ``agent_id=`` on the run), or the run is refreshed / given a fresh id.

Never in it: ``id()``, addresses, hash-seeded set order or default ``repr``. Bytecode is the
interpreter's, so a resume under another Python minor version is refused (never wrong).

>>> def make_agent(answer):
...     return lambda task: answer
>>> ok, wrong = agent_identity(make_agent("OK")), agent_identity(make_agent("WRONG"))
>>> ok.code == wrong.code, ok.state == wrong.state, sorted(ok.state)
(True, False, ['closure.answer'])
>>> agent_identity(make_agent("OK")) == ok
True
>>> agent_identity(make_agent("OK"), agent_id="support-bot-v3").state
{}
"""
from __future__ import annotations

import functools
import importlib
import inspect
import threading
import types
import uuid
import warnings
from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field

from ..base import JsonShape
from ..core import shape
from ..errors import InvalidInput
from ._agentstate import (BIG_BYTES, EK_CONFIG, MAX_DEPTH, MAX_NODES, Walker, attributes,
                          declared_config, file_digest, name_of, numpy_array, static_attr,
                          tree_digest)

__all__ = ["AgentIdentity", "agent_identity", "declared_config", "differences",
           "identity_note",
           "refusal", "EK_CONFIG", "BIG_BYTES", "MAX_DEPTH", "MAX_NODES", "warn_unidentified",
           "agent_name", "code_digest"]


@shape()
class AgentIdentity(JsonShape):
    """What an agent's identity was made of: the run's fingerprint and manifest record it."""

    path: Optional[str] = None
    """``module:qualname`` of the agent (its class's for a callable instance); None when it has
    none. The pipeline's fingerprint records the import path beside it."""
    code: Optional[str] = None
    """sha256 of the agent's code: its source file's bytes (when there is one) and its code
    object (bytecode, constants, names, nested code; no path, line or address)."""
    state: dict[str, str] = Field(default_factory=dict)
    """sha256 of each top-level piece of state digested, by key: ``closure.<name>``,
    ``defaults``, ``kwdefaults``, ``globals.<name>`` (code with no source file), ``self.<attr>``
    (an instance's or a bound method's ``__self__``'s attributes), ``class`` (a class with no
    source file), ``partial.func`` / ``partial.args`` / ``partial.keywords.<name>``,
    ``ek_config`` (a declared configuration, which replaces walking). Empty with ``agent_id``."""
    undigestable: dict[str, str] = Field(default_factory=dict)
    """State that could not be identified (skipped), by top-level key: the type met and where
    (``self.client``: ``'openai.OpenAI: _thread.RLock at self.client._client._lock ...'``)."""
    declared: tuple[str, ...] = ()
    """Where an ``ek_config`` declaration replaced walking an object (``agent`` for the agent
    itself, else the attribute path)."""
    agent_id: Optional[str] = None
    """The identity the caller gave (``agent_id=`` / ``--agent-id``): it replaces the state
    (the code is still digested)."""
    instance: Optional[str] = None
    """With undigestable state only: a token naming those very live objects in this process
    (random, never an address): the same objects resume, anything else is refused."""

    @property
    def identified(self) -> bool:
        """Whether everything that decides the agent's answers was identified."""
        return not self.undigestable


# --------------------------------------------------------------------------- the identity

_TOKENS: list[tuple[tuple, str]] = []
_TOKENS_LOCK = threading.Lock()
#: Live objects remembered for :attr:`AgentIdentity.instance` (oldest forgotten first).
_MAX_TOKENS = 256


def _instance_token(objs: list) -> str:
    """A random token for exactly these live objects in this process (compared with ``is``)."""
    key = tuple(objs)
    with _TOKENS_LOCK:
        for held, token in _TOKENS:
            if len(held) == len(key) and all(a is b for a, b in zip(held, key)):
                return token
        token = f"process-local:{uuid.uuid4().hex}"
        _TOKENS.append((key, token))
        del _TOKENS[:-_MAX_TOKENS]
        return token


def agent_identity(agent: Any, *, agent_id: Optional[str] = None) -> AgentIdentity:
    """The identity of ``agent`` (any callable): see the module's docstring for what is
    digested. ``agent_id`` (a non-empty string the caller vouches for) replaces the state."""
    if agent_id is not None and (not isinstance(agent_id, str) or not agent_id.strip()):
        raise InvalidInput(f"agent_id must be a non-empty string naming what identifies the "
                           f"agent (e.g. 'support-bot-v3/gpt-4o'), got {agent_id!r}")
    w = Walker()
    state: dict[str, Any] = {}
    declared: list[str] = []
    target = agent
    if isinstance(agent, functools.partial):
        inner = agent
        while isinstance(inner, functools.partial):
            inner = inner.func
        code = w.value(inner, "partial.func") if not isinstance(inner, types.FunctionType) \
            else w.function_code(inner, "partial.func", 0)
        state["partial.func"] = agent.func
        state["partial.args"] = agent.args
        for k, v in sorted(agent.keywords.items()):
            state[f"partial.keywords.{k}"] = v
        target = inner
    elif isinstance(agent, types.MethodType):
        code = w.function_code(agent.__func__, "", 0) if isinstance(
            agent.__func__, types.FunctionType) else w.value(agent.__func__, "method")
        state["self"] = agent.__self__
    elif isinstance(agent, types.FunctionType):
        code = w.function_code(agent, "", 0)
    elif isinstance(agent, type) or isinstance(agent, (types.BuiltinFunctionType,)):
        code = w.value(agent, "agent")
    else:
        code = w.cls(type(agent), "self", 0)
        if static_attr(agent, EK_CONFIG) is not None:
            declared.append("agent")
            state["ek_config"] = declared_config(agent)
        elif numpy_array(agent) is None:
            try:
                state.update({f"self.{k}": v for k, v in attributes(agent).items()})
            except Exception:  # pragma: no cover
                state["self"] = agent
    code_digest = tree_digest(code)
    path = name_of(agent if isinstance(agent, (types.FunctionType, types.MethodType, type))
                    else target if isinstance(target, types.FunctionType) else type(agent))
    if agent_id is not None:
        return AgentIdentity(path=path, code=code_digest, agent_id=agent_id)
    encoded: dict[str, Any] = {}
    if isinstance(agent, (types.FunctionType,)):
        encoded.update(w.function_state(agent, "", 0))
    elif isinstance(agent, types.MethodType) and isinstance(agent.__func__, types.FunctionType):
        encoded.update(w.function_state(agent.__func__, "", 0))
    for key, value in state.items():
        encoded[key] = value if key == "ek_config" else w.value(value, key)
    undigestable: dict[str, str] = {}
    for where, why in w.undigestable:
        top = _top_key(where, encoded)
        undigestable.setdefault(top, why)
    return AgentIdentity(
        path=path, code=code_digest,
        state={k: tree_digest(v) for k, v in sorted(encoded.items())},
        undigestable=dict(sorted(undigestable.items())),
        declared=tuple(declared + sorted(w.declared)),
        instance=(f"process-local:{uuid.uuid4().hex}" if w.fresh else _instance_token(w.live))
        if undigestable else None)


def _top_key(path: str, keys: Mapping[str, Any]) -> str:
    best = ""
    for k in keys:
        if (path == k or path.startswith(k + ".") or path.startswith(k + "[")
                or path.startswith(k + "{")) and len(k) > len(best):
            best = k
    return best or path.split(".")[0] or "agent"


# --------------------------------------------------------------------------- reporting

def differences(stored: Optional[AgentIdentity], new: Optional[AgentIdentity]) -> list[str]:
    """What differs between two identities, as ``"agent_identity.state.closure.answer: ..."``
    lines (a resume's refusal lists them)."""
    if stored is None or new is None:
        return [f"agent_identity: {'recorded' if stored else 'not recorded'} (stored) -> "
                f"{'recorded' if new else 'not recorded'}"]
    out = []
    a, b = stored.to_dict(), new.to_dict()
    for f in ("path", "code", "agent_id", "declared", "undigestable", "instance"):
        if a.get(f) != b.get(f):
            out.append(f"agent_identity.{f}: {_short(a.get(f))} (stored) -> {_short(b.get(f))}")
    sa, sb = a.get("state") or {}, b.get("state") or {}
    for k in sorted(set(sa) | set(sb)):
        if sa.get(k) != sb.get(k):
            out.append(f"agent_identity.state.{k}: {_short(sa.get(k))} (stored) -> "
                       f"{_short(sb.get(k))}")
    return out


def _short(v: Any) -> str:
    if isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v):
        return f"sha256:{v[:12]}"
    text = repr(v)
    return text if len(text) <= 80 else text[:77] + "..."


def refusal(run_id: str, stored: Optional[AgentIdentity],
            new: Optional[AgentIdentity]) -> Optional[str]:
    """Why a resume of ``run_id`` must be refused because an agent's state was not identified
    (the stored run's or this call's), naming the attributes and both ways out; None when
    both identities are fully identified."""
    missing = {**(new.undigestable if new else {}), **(stored.undigestable if stored else {})}
    if not missing:
        return None
    what = "; ".join(f"{k}: {v}" for k, v in sorted(missing.items()))
    return (f"run {run_id!r} cannot be resumed: the agent's state could not be identified "
            f"({what}), so nothing shows its stored trials are this agent's. Either say what "
            "identifies the agent -- declare an ek_config attribute or method returning its "
            "configuration (model, endpoint, prompt, ...) or pass agent_id=... (--agent-id) -- "
            "or use a fresh run id, or refresh the run (refresh=True / --refresh)")


def warn_unidentified(run_id: str, identity: Optional[AgentIdentity]) -> None:
    """Say once, when a run starts, which state it could not identify (the run goes on)."""
    if identity is None or identity.identified:
        return
    what = "; ".join(f"{k}: {v}" for k, v in identity.undigestable.items())
    warnings.warn(f"run {run_id!r}: the agent's state could not be identified ({what}); the "
                  "run goes on, but a resume of this run id with any other agent object (another "
                  "process's included) will be refused. Declare ek_config on the agent or pass "
                  "agent_id=... (--agent-id) to make it resumable", UserWarning, stacklevel=3)


def identity_note(fingerprint: Any) -> Optional[str]:
    """For a run's report and audit: one line saying which of the agent's state the run could
    not identify and that a resume of it is refused (None when everything was identified).
    ``fingerprint`` is the manifest's ``fingerprint`` (a mapping) or None."""
    found = fingerprint.get("agent_identity") if isinstance(fingerprint, Mapping) else None
    if not isinstance(found, Mapping) or not found.get("undigestable"):
        return None
    try:
        identity = AgentIdentity.from_dict(found)
    except InvalidInput:
        return "agent identity: the recorded identity is malformed; a resume of this run is refused"
    what = "; ".join(f"{k} ({v})" for k, v in identity.undigestable.items())
    return (f"agent identity: NOT identified -- {what}. A resume of this run id is refused "
            "(UnidentifiedAgent): declare ek_config on the agent or pass agent_id (--agent-id), "
            "or use a fresh run id / --refresh")


def agent_name(agent: Any) -> Optional[str]:
    """``module:qualname`` of a callable -- its own (``name_of``), else its class's -- None when
    its module or name is not a string."""
    own = getattr(agent, "__qualname__", None) or getattr(agent, "__name__", None)
    named = agent if own else type(agent)
    name = getattr(named, "__qualname__", None) or getattr(named, "__name__", None)
    return name_of(named) if isinstance(getattr(agent, "__module__", None), str) \
        and isinstance(name, str) else None


def code_digest(agent: Any) -> Optional[str]:
    """sha256 of the source file that defines ``agent`` (a callable or a ``module:attr``
    import path; ``file_digest``); None when it has no source file."""
    try:
        if isinstance(agent, str):
            target: Any = importlib.import_module(agent.split(":")[0])
        else:
            target = agent if inspect.isfunction(agent) or inspect.isclass(agent) else type(agent)
            if inspect.ismethod(agent):
                target = agent.__func__
        return file_digest(inspect.getsourcefile(target))
    except (TypeError, OSError, ImportError, ValueError):
        return None
