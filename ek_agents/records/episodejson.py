"""An episode's canonical JSON made without pydantic's dump and with orjson, where that gives
the very bytes ``Episode.to_json()`` gives.

A monitor window stores each episode it reads as ``Episode.to_json()`` (canonical JSON --
``core.canonical_json``: sorted keys, compact, ASCII -- of pydantic's ``to_dict``) and keys its
verdicts by a digest of the same canonical JSON of the episode's output and steps. For a
window of small episodes that is most of what it adds per episode to reading them: pydantic's
``dump_python`` (~30 us an episode) and the standard library's encoder (~50 us) -- twice for
the parts the digest reads. Here:

- :func:`plain_episode_dict` is ``Episode.to_dict()`` built from the fields directly, when
  every value is one whose dump is itself: exact ``str``, ``int``, ``bool``, ``None``, finite
  ``float`` in ``[1e-4, 1e16)`` or 0 (where ``repr`` and orjson write the same digits),
  ``dict`` with ``str`` keys, ``list``, ``tuple`` (written as a list by both), at most
  :data:`MAX_DEPTH` deep, in the exact shape classes (no subclass, no field of another type).
  Anything else (a set, bytes, a datetime, an enum, NaN, 1e-05, a ``str`` subclass, a value
  that ``core.construct`` let through untyped) gives None: the caller takes the standard path,
  which converts or refuses it as it always did.
- :func:`plain_json` is ``core.canonical_json`` of such checked values through
  ``orjson.dumps(OPT_SORT_KEYS)``: orjson writes these values as the standard encoder does
  (same separators; same escapes for ``"``, ``\\``, the control characters; ints; the floats
  above) except that it writes non-ASCII characters and DEL (0x7f) as they are, where the
  canonical form escapes them (``\\uXXXX``, lowercase; a surrogate pair above U+FFFF) -- so
  those are escaped afterwards (they only occur inside strings). An int orjson cannot hold
  (beyond 64 bits) or a lone surrogate gives None.

Import checks :data:`FAST`: orjson and the standard encoder are compared once on values at
each of these edges (an orjson that formats a float or an escape otherwise turns the fast path
off, it never changes a byte), and the shape classes must still have the fields read here.
``tests/monitor/test_episodejson.py`` proves the bytes equal on real episodes and odd values.
"""
from __future__ import annotations

import re
from itertools import product
from operator import itemgetter
from typing import Any, Optional

import orjson

from ..base import SCHEMA_VERSION, Cost, Episode, ModelCall, RunProvenance, Step, Trajectory
from ..core import Provenance, canonical_json

__all__ = ["FAST", "MAX_DEPTH", "plain_episode_dict", "plain_json", "canonical_bytes"]

#: Deepest nesting of a value taken by the fast path (deeper: the standard path).
MAX_DEPTH = 64


class _NotPlain(Exception):
    """A value the fast path does not take."""


def _check(x: Any, depth: int = 0) -> None:
    """Raise _NotPlain unless ``x`` is plain JSON whose pydantic dump and orjson form are the
    standard ones (see the module docstring)."""
    t = type(x)
    if t is str or t is int or t is bool or x is None:
        return
    if t is float:
        # NaN and inf fail both comparisons; 0.0 and -0.0 pass the first
        if not (x == 0.0 or 1e-4 <= abs(x) < 1e16):
            raise _NotPlain
        return
    if depth >= MAX_DEPTH:
        raise _NotPlain
    if t is dict:
        for k, v in x.items():
            if type(k) is not str:
                raise _NotPlain
            tv = type(v)
            if not (tv is str or tv is int or tv is bool or v is None):
                _check(v, depth + 1)
    elif t is list or t is tuple:
        for v in x:
            tv = type(v)
            if not (tv is str or tv is int or tv is bool or v is None):
                _check(v, depth + 1)
    else:
        raise _NotPlain


_NONE = type(None)


class _Fields:
    """How the fast path reads one shape class: its fields and, for each, the exact types
    whose pydantic dump is the value itself (a float field's value is also range-checked)."""

    def __init__(self, cls: type, types: dict) -> None:
        self.cls, self.names = cls, tuple(types)
        self.get = itemgetter(*self.names)
        # every allowed combination of the fields' types, so that one set lookup of the
        # tuple of the values' types checks them all (a loop of isinstance calls costs ~10x)
        self.sigs = frozenset(product(*types.values()))
        self.floats = tuple(i for i, ts in enumerate(types.values()) if float in ts)

    def read(self, obj: Any) -> dict:
        """The fields of ``obj`` as pydantic dumps them (_NotPlain when one's type is not
        allowed, or ``obj`` is not exactly of the class)."""
        if type(obj) is not self.cls:
            raise _NotPlain
        d = obj.__dict__
        vals = self.get(d)  # KeyError when a field is missing
        if len(d) != len(self.names) or tuple(map(type, vals)) not in self.sigs:
            raise _NotPlain
        for i in self.floats:
            if vals[i] is not None:
                _check(vals[i])
        return d.copy()  # exactly the fields (a copy: ~5x faster than dict(zip(names, vals)))


_CALL = _Fields(ModelCall, {"model": (str,), "requested_model": (str, _NONE), "provider": (str,),
                            "input_tokens": (int,), "output_tokens": (int,),
                            "cached_input_tokens": (int,), "reasoning_tokens": (int,),
                            "cache_write_tokens": (int,), "cached_known": (bool,),
                            "source": (str,)})
_COST = _Fields(Cost, {"input_tokens": (int,), "output_tokens": (int,),
                       "cached_input_tokens": (int,), "reasoning_tokens": (int,),
                       "retries": (int,), "latency_s": (float, _NONE),
                       "cache_write_tokens": (int,), "calls": (tuple,)})
_RUN = _Fields(RunProvenance, {"seed": (int, _NONE), "temperature": (float, _NONE),
                               "model": (str,), "simulator": (str,), "suite_version": (str,),
                               "scaffold": (str,)})
_PROVENANCE = _Fields(Provenance, {"source": (str,), "locator": (str, _NONE), "meta": (dict,)})
_STEP = _Fields(Step, {"tool": (str,), "args": (dict, str), "observation": (object,),
                       "error": (str, _NONE)})
_EPISODE = _Fields(Episode, {"task_id": (str,), "trajectory": (Trajectory,), "output": (object,),
                             "final_state": (object,), "cost": (Cost, _NONE),
                             "success": (bool, _NONE), "run": (RunProvenance, _NONE),
                             "provenance": (Provenance, _NONE), "meta": (dict,)})
# ``(object,)``: a field of any value, checked by _check (these two are read field by field)
_SHAPES = (_CALL, _COST, _RUN, _PROVENANCE, _STEP, _EPISODE)


def _step(s: Any) -> dict:
    if type(s) is not Step:
        raise _NotPlain
    d = s.__dict__
    tool, args, obs, err = _STEP.get(d)
    if type(tool) is not str or (err is not None and type(err) is not str):
        raise _NotPlain
    if type(args) is dict:
        _check(args)
    elif type(args) is not str:
        raise _NotPlain
    _check(obs)
    return {"tool": tool, "args": args, "observation": obs, "error": err}


def _provenance(p: Any) -> dict:
    out = _PROVENANCE.read(p)
    _check(out["meta"])
    return out


def _cost(c: Any) -> Optional[dict]:
    if c is None:
        return None
    out = _COST.read(c)
    calls = out.pop("calls")
    if calls:  # Cost's serializer leaves out an empty ``calls``
        out["calls"] = [_CALL.read(m) for m in calls]
    return out


def plain_episode_dict(ep: Any) -> Optional[dict]:
    """``ep.to_dict()`` made from its fields, every value checked plain (see the module
    docstring); None when one is not (or :data:`FAST` is off): then use ``ep.to_dict()``.
    The dict shares the episode's own values (its ``meta``, its steps' ``args``): read it,
    do not change it."""
    if not FAST or type(ep) is not Episode:
        return None
    d = ep.__dict__
    try:
        task_id, traj, output, final, cost, success, run, prov, meta = _EPISODE.get(d)
        if (type(task_id) is not str or type(traj) is not Trajectory
                or type(traj.steps) is not tuple or type(meta) is not dict
                or (success is not None and type(success) is not bool)):
            raise _NotPlain
        _check(output)
        _check(final)
        _check(meta)
        return {"task_id": task_id, "trajectory": {"steps": [_step(s) for s in traj.steps]},
                "output": output, "final_state": final, "cost": _cost(cost),
                "success": success, "run": None if run is None else _RUN.read(run),
                "provenance": None if prov is None else _provenance(prov), "meta": meta,
                "schema_version": SCHEMA_VERSION}
    except (_NotPlain, KeyError, AttributeError):
        return None


_SORT = orjson.OPT_SORT_KEYS
#: What orjson writes as is and the canonical form escapes: DEL and every non-ASCII character.
_UNESCAPED = re.compile("[\x7f-\U0010ffff]")


def _escape(m: re.Match) -> str:
    n = ord(m.group())
    if n < 0x10000:
        return "\\u%04x" % n
    n -= 0x10000  # above the BMP: a UTF-16 surrogate pair, as the standard encoder writes it
    return "\\u%04x\\u%04x" % (0xD800 | (n >> 10), 0xDC00 | (n & 0x3FF))


def plain_json(obj: Any) -> Optional[bytes]:
    """``core.canonical_json(obj)`` for ``obj`` made of values :func:`plain_episode_dict`
    checked (plain JSON within its bounds), through orjson; None when orjson refuses it (an int
    beyond 64 bits, a lone surrogate): then use ``canonical_json``."""
    try:
        out = orjson.dumps(obj, option=_SORT)
    except orjson.JSONEncodeError:
        return None
    if out.isascii() and b"\x7f" not in out:
        return out
    return _UNESCAPED.sub(_escape, out.decode("utf-8")).encode("ascii")


def canonical_bytes(obj: Any) -> bytes:
    """``core.canonical_json(obj)``: through orjson (:func:`plain_json`) when every value of
    ``obj`` is plain JSON within the fast path's bounds, else the standard encoder (a window's
    documents: one entry per trace, ~2x faster)."""
    if FAST:
        try:
            _check(obj)
        except _NotPlain:
            return canonical_json(obj)
        out = plain_json(obj)
        if out is not None:
            return out
    return canonical_json(obj)


def _agrees() -> bool:
    """orjson writes, on the edges the fast path relies on, what the standard encoder writes,
    and the shape classes have the fields read here."""
    if set(Trajectory.__pydantic_fields__) != {"steps"} or any(
            set(f.cls.__pydantic_fields__) != set(f.names) for f in _SHAPES):
        return False
    probe = {"s": "".join(map(chr, range(0x80))) + "\u00e9\u2028\uffff\U0001f600",
             "f": [0.0, -0.0, 1e-4, 0.00012345, 0.1, 1.5, 3.028997603, 123456789012345.6,
                   9999999999999998.0, 1e15, 2.0 ** 53],
             "i": [0, -1, 2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1], "b": [True, False, None],
             "n": {"z": {}, "a": [[], (1, "x")], "\u00e9": 1, "B": 2}}
    return plain_json(probe) == canonical_json(probe)


#: The fast path is on: orjson agrees with the standard encoder on the probe values.
FAST: bool = _agrees()
