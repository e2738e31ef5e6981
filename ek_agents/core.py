"""Core vocabulary shared by every ek instance (documented as ``ek.base``).

The Layer-A grammar (:class:`FieldSpec`, :class:`NodeType`, :class:`GraphGrammar`) is the
single source of cost weights; :class:`Score`, :class:`Metric` and :class:`Signal` are the
two scoring protocols; :class:`Finding` and :class:`Provenance` carry evidence.

>>> g = GraphGrammar({"refund": NodeType("refund", {"amount": FieldSpec("amount", "number", 20.0)}, 10.0)})
>>> g.node_cost("refund"), g.field_cost("refund", "amount"), g.field_cost("refund", "memo")
(10.0, 20.0, 1.0)
>>> canonicalize("  Hello\\u00a0  WORLD ")
'hello world'
"""
from __future__ import annotations

import copy
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional, Protocol, runtime_checkable

from pydantic import ConfigDict, Field, ValidationError
from pydantic.dataclasses import dataclass as _pyd_dataclass

from .errors import EkAgentsError, InvalidInput, did_you_mean

__all__ = [
    "FieldSpec", "NodeType", "GraphGrammar", "Score", "Metric", "Signal", "Finding",
    "Provenance", "canonicalize", "default_canonicalizer", "FIELD_TYPES", "shape", "canonical_json",
    "construct", "construct_from", "copy_plain", "make_score",
]

_CFG = ConfigDict(arbitrary_types_allowed=True)


def shape(*, frozen: bool = True, config: ConfigDict = _CFG):
    """Decorator: a pydantic dataclass whose constructor raises our error tree.

    Pydantic wraps every validation failure in its own ``ValidationError``; here an
    :class:`~ek_agents.errors.EkAgentsError` raised by ``__post_init__`` surfaces as itself, and
    any other failure becomes :class:`~ek_agents.errors.InvalidInput` naming the class and field.
    """

    def wrap(cls: type) -> type:
        dc = _pyd_dataclass(frozen=frozen, config=config)(cls)
        init = dc.__init__

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            try:
                init(self, *args, **kwargs)
            except ValidationError as exc:
                raise _translate(dc.__name__, exc) from None

        __init__.__doc__ = init.__doc__
        dc.__init__ = __init__
        return dc

    return wrap


def construct(cls: type, **fields: Any) -> Any:
    """An instance of the :func:`shape` class ``cls`` from ``fields`` that already hold the
    declared types, built without validating them again (absent fields take their defaults;
    no ``__post_init__``): for a reader that made every value itself, hundreds of thousands of
    times (validation is most of the cost of a small shape). A value the caller cannot vouch
    for goes through ``cls(...)``.

    >>> construct(Provenance, source="log.json", locator="[3]")
    Provenance(source='log.json', locator='[3]', meta={})
    """
    plan = _CONSTRUCT.get(cls)
    if plan is None:
        known = cls.__pydantic_fields__
        plan = _CONSTRUCT[cls] = (  # every field in order (defaults), factories, required, all
            {k: None if f.default_factory or f.is_required() else f.default for k, f in known.items()},
            [(k, f.default_factory) for k, f in known.items() if f.default_factory],
            {k for k, f in known.items() if f.is_required()}, set(known))
    defaults, factories, required, names = plan
    if not (required <= fields.keys() <= names):
        raise InvalidInput(f"construct({cls.__name__}): unknown fields {sorted(fields.keys() - names)}, "
                           f"missing required fields {sorted(required - fields.keys())}; the fields "
                           f"are {list(defaults)}")
    obj = object.__new__(cls)
    d = obj.__dict__
    d.update(defaults)
    for name, factory in factories:
        if name not in fields:
            d[name] = factory()
    d.update(fields)
    return obj


_CONSTRUCT: dict = {}


def construct_from(cls: type, fields: dict) -> Any:
    """:func:`construct` from a dict holding every field of ``cls`` in the order the class
    declares them (checked: :class:`~ek_agents.errors.InvalidInput` names the order
    otherwise): the same instance, without packing keyword arguments and laying defaults under
    them -- about half of ``construct``'s cost, for a reader that builds several per trace.

    >>> construct_from(Provenance, {"source": "log.json", "locator": "[3]", "meta": {}})
    Provenance(source='log.json', locator='[3]', meta={})
    """
    order = _ORDER.get(cls)
    if order is None:
        order = _ORDER[cls] = tuple(cls.__pydantic_fields__)
    if tuple(fields) != order:
        raise InvalidInput(f"construct_from({cls.__name__}): the fields must be {list(order)}, "
                           f"all of them in this order; got {list(fields)}")
    obj = object.__new__(cls)
    obj.__dict__.update(fields)
    return obj


#: The fields of each class :func:`construct_from` built, in declared order.
_ORDER: dict = {}


def copy_plain(value: Any) -> Any:
    """A deep copy of ``value``: JSON-plain data (``dict`` / ``list`` / ``tuple`` of ``str``,
    ``int``, ``float``, ``bool``, ``None``; exact types, not subclasses) is rebuilt directly,
    anything else goes through ``copy.deepcopy``. Equal to ``copy.deepcopy(value)`` and shares
    nothing mutable with it, at a fraction of its cost on the small metadata dicts an episode
    carries (one difference: an inner list that appears twice is copied twice, not once).

    >>> m = {"k": [1, {"a": None}], "t": (1.5, "x")}; c = copy_plain(m)
    >>> c == m, c["k"] is m["k"], c["k"][1] is m["k"][1]
    (True, False, False)
    """
    try:
        return _plain(value)
    except (_NotPlain, RecursionError):  # an object, or a cycle: deepcopy keeps its memo
        return copy.deepcopy(value)


class _NotPlain(Exception):
    pass


_ATOMS = frozenset({str, int, float, bool, type(None)})


def _plain(x: Any) -> Any:
    t = type(x)
    if t in _ATOMS:
        return x
    if t is dict:
        out = {}
        for k, v in x.items():
            if type(k) not in _ATOMS:
                raise _NotPlain
            out[k] = v if type(v) in _ATOMS else _plain(v)
        return out
    if t is list:
        return [v if type(v) in _ATOMS else _plain(v) for v in x]
    if t is tuple:
        return tuple([v if type(v) in _ATOMS else _plain(v) for v in x])
    raise _NotPlain


def _translate(name: str, exc: ValidationError) -> Exception:
    for err in exc.errors():
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, EkAgentsError):
            return inner
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()))
        parts.append(f"{loc or '(value)'}: {err.get('msg')} (got {err.get('input')!r:.80})")
    return InvalidInput(f"{name}: " + "; ".join(parts))



#: The argument types a :class:`FieldSpec` may declare (JSON-Schema / BFCL names).
FIELD_TYPES = frozenset({
    "string", "number", "float", "integer", "boolean", "array", "tuple", "dict", "object", "any",
})


@shape()
class FieldSpec:
    """One field of a node type (for agents: one argument of a tool).

    ``importance`` is the cost of getting this field wrong; ``domain`` optionally lists the
    allowed values; ``required`` marks an argument a call must supply; ``items`` is the
    element type of an ``array``.

    >>> FieldSpec("amount", "number", importance=20.0).importance
    20.0
    """

    name: str
    type: str = "string"
    importance: float = 1.0
    domain: Optional[tuple] = None
    required: bool = False
    items: Optional[str] = None

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise InvalidInput(
                f"FieldSpec {self.name!r}: unknown type {self.type!r}"
                f"{did_you_mean(self.type, sorted(FIELD_TYPES))} (one of {sorted(FIELD_TYPES)})"
            )
        if not self.importance >= 0:
            raise InvalidInput(f"FieldSpec {self.name!r}: importance must be >= 0, got {self.importance!r}")


@shape()
class NodeType:
    """A node type of the grammar: a name, its fields, and the cost of the node itself."""

    name: str
    fields: Mapping[str, FieldSpec] = Field(default_factory=dict)
    importance: float = 1.0


@shape()
class GraphGrammar:
    """The frozen cost source of truth: ``node_cost`` and ``field_cost`` by name.

    Unknown nodes and fields cost ``default`` (1.0): a call to an undeclared tool is one unit
    of error, never free.
    """

    nodes: Mapping[str, NodeType] = Field(default_factory=dict)
    default: float = 1.0

    def node_cost(self, node: str) -> float:
        """Cost weight of the node (a whole tool call)."""
        nt = self.nodes.get(node)
        return float(nt.importance) if nt is not None else float(self.default)

    def field_cost(self, node: str, field: str) -> float:
        """Cost weight of one field of a node (one argument of a call)."""
        nt = self.nodes.get(node)
        if nt is None or field not in nt.fields:
            return float(self.default)
        return float(nt.fields[field].importance)

    def field(self, node: str, field: str) -> Optional[FieldSpec]:
        """The :class:`FieldSpec` of ``node.field``, or ``None`` when undeclared."""
        nt = self.nodes.get(node)
        return None if nt is None else nt.fields.get(field)

    def __contains__(self, node: object) -> bool:
        return node in self.nodes


@shape()
class Score:
    """One item's score: a value plus whatever detail an aggregate needs (e.g. tp/fp/fn)."""

    value: float
    detail: dict = Field(default_factory=dict)


def make_score(value: float, detail: dict) -> Score:
    """``Score(value, detail)`` without validating them again (:func:`construct`'s shortcut
    for the per-item loop of a metric that made the float and the dict itself).

    >>> make_score(0.5, {"tp": 1.0}) == Score(0.5, {"tp": 1.0})
    True
    """
    s = object.__new__(Score)
    s.__dict__.update(value=value, detail=detail)
    return s


@runtime_checkable
class Metric(Protocol):
    """Reference-based: ``score(pred, gold, *, grammar=None) -> Score`` per item, then
    ``aggregate(scores) -> float`` over a corpus (each metric owns its aggregation)."""

    higher_is_better: bool

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score: ...

    def aggregate(self, scores: Sequence[Score]) -> float: ...


@runtime_checkable
class Signal(Protocol):
    """Reference-free: ``signal(output) -> float`` in [0, 1]; ``cost_tier`` orders a cascade
    (cheapest first)."""

    name: str
    cost_tier: int

    def __call__(self, output: Any) -> float: ...


@shape()
class Provenance:
    """Where a value came from, for click-to-source audit (a file, a line, a run)."""

    source: str = ""
    locator: Optional[str] = None
    meta: dict = Field(default_factory=dict)


@shape()
class Finding:
    """A piece of auditable evidence: what it is about, what it says, how sure."""

    target: str
    message: str
    kind: str = "note"
    score: Optional[float] = None
    provenance: Optional[Provenance] = None


#: The encoder behind :func:`canonical_json`, built once (``json.dumps`` with these arguments
#: builds the same encoder on every call: ~3 us of a per-trial path); it holds no state.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)


def canonical_json(obj: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact, ASCII, NaN/inf refused.

    Every digest in ek-agents is a sha256 of these bytes (shapes' ``to_json`` uses them too).

    >>> canonical_json({"b": 1.5, "a": None})
    b'{"a":null,"b":1.5}'
    """
    if hasattr(obj, "to_dict") and callable(obj.to_dict):
        obj = obj.to_dict()
    try:
        return _CANONICAL.encode(obj).encode("ascii")
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            f"cannot store {type(obj).__name__} as JSON ({exc}): give plain dicts, lists, strings, "
            "numbers, booleans and None (NaN and infinity are refused: use None for unknown)"
        ) from None


_WS = re.compile(r"\s+")


def canonicalize(text: Any) -> Any:
    """The default canonicalizer: NFKC, case-fold, whitespace collapsed and stripped.

    Non-strings pass through unchanged.
    """
    if not isinstance(text, str):
        return text
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


default_canonicalizer: Callable[[Any], Any] = canonicalize
