"""Argument values as the matcher compares them: the gold vocabulary (:data:`OMITTED`,
:data:`ANY`, :class:`AnyOf`), reading a call's arguments, and the typed key of a value
(numbers by value, strings standardised, containers by their items) with the alternatives a
gold value allows.
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Set
from typing import Any, Callable, Optional

from ..errors import InvalidInput

__all__ = ["AnyOf", "OMITTED", "ANY", "standardize_string", "args_of", "value_key", "alternatives",
           "has_marker", "SCALAR_TYPES"]

_MAX_ALTERNATIVES = 4096


# --------------------------------------------------------------------------- gold vocabulary

class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name


#: Gold marker: the argument may be left out (inside :class:`AnyOf`) / must be left out (alone).
OMITTED = _Sentinel("OMITTED")
#: Gold marker: any supplied value is accepted.
ANY = _Sentinel("ANY")


class AnyOf:
    """A gold argument with several acceptable values (BFCL's list of possible answers).

    >>> AnyOf("NYC", "New York", OMITTED)
    AnyOf('NYC', 'New York', OMITTED)
    """

    __slots__ = ("values",)

    def __init__(self, *values: Any) -> None:
        if not values:
            raise InvalidInput("AnyOf() needs at least one acceptable value (use OMITTED for 'may be left out')")
        flat: list = []
        for v in values:
            flat.extend(v.values if isinstance(v, AnyOf) else (v,))
        self.values = tuple(flat)

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.values))})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AnyOf) and self.values == other.values

    def __hash__(self) -> int:
        return hash(("AnyOf", self.values))


_STD = re.compile(r"[ ,./\-_*^]")


def standardize_string(s: str) -> str:
    """BFCL's string standardization: drop spaces and ``, . / - _ * ^``, lower-case, ``'`` -> ``"``.

    >>> standardize_string("April 1, 2024") == standardize_string("april 1 2024")
    True
    """
    return _STD.sub("", s).lower().replace("'", '"')


# --------------------------------------------------------------------------- reading arguments

def args_of(call: tuple) -> Mapping:
    tool, args = call
    if type(args) is dict or isinstance(args, Mapping):
        return args
    if isinstance(args, str):  # unparseable raw JSON kept by a bridge: one undeclarable argument
        return {"<unparsed>": args}
    raise InvalidInput(f"tool call {tool!r}: args must be a mapping, got {args!r:.80}")


# --------------------------------------------------------------------------- typed value keys

_NUMERIC = ("number", "float")


def value_key(v: Any, t: Optional[str], canon: Callable[[str], Any], items: Optional[str] = None) -> Any:
    """A hashable normal form: two values are equal (for a parameter of type ``t``) iff their
    keys are equal."""
    if t is None or t == "any":
        return _infer_key(v, canon)
    if t == "string":
        return ("s", canon(v)) if isinstance(v, str) else _bad(v)
    if t == "boolean":
        return ("b", v) if isinstance(v, bool) else _bad(v)
    if t == "integer":
        if isinstance(v, bool):
            return _bad(v)
        if isinstance(v, int):
            return ("n", v)
        return ("f", v) if isinstance(v, float) else _bad(v)
    if t in _NUMERIC:
        return ("n", v) if isinstance(v, (int, float)) and not isinstance(v, bool) else _bad(v)
    if t in ("array", "tuple"):
        if isinstance(v, (list, tuple)):
            return ("l", tuple(value_key(e, items, canon) for e in v))
        return _bad(v)
    if t in ("dict", "object"):
        if isinstance(v, Mapping):
            return ("d", frozenset((k, _infer_key(x, canon)) for k, x in v.items()))
        return _bad(v)
    return _infer_key(v, canon)


def _infer_key(v: Any, canon: Callable[[str], Any]) -> Any:
    if v is None:
        return ("z",)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float)):
        return ("n", v)
    if isinstance(v, str):
        return ("s", canon(v))
    if isinstance(v, Mapping):
        return ("d", frozenset((k, _infer_key(x, canon)) for k, x in v.items()))
    if isinstance(v, (list, tuple)):
        return ("l", tuple(_infer_key(e, canon) for e in v))
    if isinstance(v, (Set, frozenset)):
        return ("S", frozenset(_infer_key(e, canon) for e in v))
    return _bad(v)


def _bad(v: Any) -> tuple:
    try:
        hash(v)
        return ("x", type(v).__name__, v)
    except TypeError:
        return ("x", type(v).__name__, repr(v))


SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})


def has_marker(v: Any) -> bool:
    if type(v) in SCALAR_TYPES:
        return False
    if v is OMITTED or v is ANY or isinstance(v, AnyOf):
        return True
    if isinstance(v, Mapping):
        return any(has_marker(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return any(has_marker(x) for x in v)
    return False


def alternatives(v: Any, t: Optional[str], canon: Callable, items: Optional[str]) -> tuple:
    """(set of acceptable keys, omittable, anything) for a gold value with markers."""
    alts = v.values if isinstance(v, AnyOf) else (v,)
    keys: set = set()
    omittable = anything = False
    for a in alts:
        if a is OMITTED:
            omittable = True
        elif a is ANY:
            anything = True
        elif has_marker(a):
            keys.update(_expand(a, t, canon, items))
        else:
            keys.add(value_key(a, t, canon, items))
    return frozenset(keys), omittable, anything


def _expand(v: Any, t: Optional[str], canon: Callable, items: Optional[str]) -> set:
    """All keys a nested gold value with markers (inside a list or a dict) accepts."""
    if isinstance(v, Mapping) and (t in (None, "any", "dict", "object")):
        names = list(v)
        choices = []
        for k in names:
            sub = v[k]
            alts = sub.values if isinstance(sub, AnyOf) else (sub,)
            opts: list = []
            for a in alts:
                if a is OMITTED:
                    opts.append(None)
                elif a is ANY:
                    raise InvalidInput(f"ANY is only supported as a whole argument, not inside a dict (key {k!r})")
                else:
                    opts.extend((k, x) for x in (_expand(a, None, canon, None) if has_marker(a)
                                                 else [_infer_key(a, canon)]))
            choices.append(opts)
        _check_size(choices, v)
        return {("d", frozenset(c for c in combo if c is not None)) for combo in itertools.product(*choices)}
    if isinstance(v, (list, tuple)) and t in (None, "any", "array", "tuple"):
        el_t = items if t in ("array", "tuple") else None
        choices = []
        for e in v:
            alts = e.values if isinstance(e, AnyOf) else (e,)
            opts = []
            for a in alts:
                if a is OMITTED or a is ANY:
                    raise InvalidInput(f"{a!r} cannot be a list element; give the acceptable lists with AnyOf([...], [...])")
                opts.extend(_expand(a, el_t, canon, None) if has_marker(a) else [value_key(a, el_t, canon)])
            choices.append(opts)
        _check_size(choices, v)
        return {("l", tuple(combo)) for combo in itertools.product(*choices)}
    raise InvalidInput(f"gold value {v!r:.80}: AnyOf/OMITTED/ANY may only appear as an argument or inside a list or dict")


def _check_size(choices: list, v: Any) -> None:
    if math.prod(len(c) for c in choices) > _MAX_ALTERNATIVES:
        raise InvalidInput(
            f"gold value {v!r:.80} expands to more than {_MAX_ALTERNATIVES} acceptable values; "
            "list fewer alternatives (or use ANY for the whole argument)"
        )
