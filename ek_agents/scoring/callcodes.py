"""One character per tool call: the batch encoding behind the fast ``in_order`` distance.

:func:`encode_calls` reads two lists of call lists (predictions and golds) and gives every
call a *class*: two calls share a class iff they call the same tool with equal arguments of
the same types (``1``, ``1.0`` and ``True`` are three classes; the order of the arguments does
not matter). Each call list comes back as a string holding one code point per call, both for
the class and for the tool, so that a C++ edit distance (rapidfuzz) can align
whole episodes without touching a Python object per call.

Only *plain* input is encoded: every call a ``(str, dict)`` tuple, every key a ``str``, every
value a ``str``/``int``/``float``/``bool``/``None`` of exactly that type. Anything else
returns ``None`` and the caller takes its general path (which reads, checks and reports it).

The work is done by the C extension ``ek_agents.scoring._callcodes`` when it was built at install
time (it is optional: setup.py); :func:`encode_python` is its pure-Python twin, the same
results (tests hold them equal), about 10x slower -- slower than preparing each call's view,
so without the extension :mod:`ek_agents.scoring.trajectory` keeps its view path.

>>> codes = encode_calls([[("a", {"x": 1}), ("b", {})]], [[("a", {"x": 1.0})]])
>>> codes.classes, codes.tools
((['\\x00\\x01'], ['\\x02']), (['\\x00\\x01'], ['\\x00']))
>>> codes.representatives[2], codes.tool_names
(('a', {'x': 1.0}), ['a', 'b'])
>>> encode_calls([[("a", {"x": [1]})]], [[]]) is None  # a list value: not plain
True
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

#: The C extension's ``encode`` (the same contract as :func:`encode_python`), None when it
#: was not built.
c_encode: Optional[Callable[[Any, Any], Optional[tuple]]]
#: The C extension's ``CallTable`` type, None when it was not built: the same classes, kept
#: from one call to the next, one episode at a time. ``CallTable().classes(a, b)`` reads two
#: call lists and gives ``(ids_a, ids_b)``, a tuple of class ids per list, or ``None`` when a
#: call is not plain; ``representative(i)`` is a copy ``(tool, dict(args))`` of the first call
#: of class ``i`` (so a caller's later change to its dicts never moves a call to another
#: class); ``len()`` counts the classes and ``clear()`` forgets them. There is no pure-Python
#: twin: without the extension :class:`~ek_agents.scoring.argmatch.CallComparer` prepares each call
#: on its own.
CallTable: Optional[type]
try:  # built from _callcodes.c at install time when a C compiler was there (optional)
    from ._callcodes import encode as c_encode
except ImportError:  # pragma: no cover - exercised by the twin's own tests
    c_encode = CallTable = None
else:
    try:
        from ._callcodes import CallTable
    except ImportError:  # pragma: no cover - an extension built from an older _callcodes.c
        CallTable = None

__all__ = ["CallCodes", "encode_calls", "encode_python", "c_encode", "CallTable", "code_point", "code_id",
           "HAS_C", "MAX_CODES"]

#: Whether the C extension is in use.
HAS_C = c_encode is not None

_SURROGATES = 0x800
#: Ids a code point can carry (the surrogate block 0xD800-0xDFFF is skipped).
MAX_CODES = 0x10FFFF - _SURROGATES

_PLAIN = {str: 1, int: 2, float: 3, bool: 4, type(None): 5}


class CallCodes(NamedTuple):
    """The encoding of a batch (see the module's text)."""

    classes: tuple[list, list]
    """Per side, a str per call list, one code point per call: its class id (:func:`code_point`)."""
    tools: tuple[list, list]
    """Per side, a str per call list, one code point per call: its tool's id."""
    representatives: list
    """The first call of each class, by class id."""
    tool_names: list
    """The tool of each tool id."""


def code_point(i: int) -> str:
    """The character standing for id ``i`` (ids from 0xD800 on skip the surrogates)."""
    return chr(i if i < 0xD800 else i + _SURROGATES)


def code_id(c: str) -> int:
    """The id a character of :func:`code_point` stands for.

    >>> code_id(code_point(0xD800)), code_id(code_point(7))
    (55296, 7)
    """
    i = ord(c)
    return i if i < 0xD800 else i - _SURROGATES


def encode_calls(preds: Any, golds: Any) -> Optional[CallCodes]:
    """:class:`CallCodes` of two lists of call lists, or ``None`` when the input is not plain."""
    raw = c_encode(preds, golds) if c_encode is not None else encode_python(preds, golds)
    if raw is None:
        return None
    return CallCodes((raw[0], raw[1]), (raw[2], raw[3]), raw[4], raw[5])


def encode_python(preds: Any, golds: Any) -> Optional[tuple]:
    """The C extension's ``encode`` in Python: ``(classes_a, classes_b, tools_a, tools_b,
    representatives, tool_names)`` or ``None``."""
    classes: dict = {}
    tool_ids: dict = {}
    reps: list = []
    tool_of: list = []
    out = []
    for lists in (preds, golds):
        if type(lists) is not list:
            return None
        rows = []
        for row in lists:
            if type(row) is not list:
                return None
            ids = []
            for call in row:
                if type(call) is not tuple or len(call) != 2:
                    return None
                tool, args = call
                if type(tool) is not str or type(args) is not dict:
                    return None
                items = []
                for k, v in args.items():
                    if type(k) is not str or type(v) not in _PLAIN:
                        return None
                    items.append((k, type(v), v))
                key = (tool, frozenset(items))
                cls = classes.get(key)
                if cls is None:
                    cls = classes[key] = len(reps)
                    if cls >= MAX_CODES:
                        return None
                    tool_of.append(tool_ids.setdefault(tool, len(tool_ids)))
                    reps.append(call)
                ids.append(cls)
            rows.append(ids)
        out.append(rows)
    return (*(["".join(map(code_point, ids)) for ids in rows] for rows in out),
            *(["".join(code_point(tool_of[i]) for i in ids) for ids in rows] for rows in out),
            reps, list(tool_ids))
