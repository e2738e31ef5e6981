"""Duck-typed access to what other tools emit: dicts, pydantic models (openai, anthropic,
inspect_ai, tau2), dataclasses and plain attribute objects -- without importing any of them.

>>> from types import SimpleNamespace
>>> plain(SimpleNamespace(role="user", content=("hi",)))
{'role': 'user', 'content': ['hi']}
"""
from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from typing import Any, Optional

from ..errors import BridgeError

_SCALARS = (str, int, float, bool, type(None))


def plain(obj: Any, _depth: int = 0) -> Any:
    """Turn ``obj`` into JSON-like Python (dicts, lists, scalars), duck-typing SDK objects.

    Pydantic v2 models go through ``model_dump()``, v1 through ``dict()``; dataclasses through
    their fields; other objects through their public attributes.
    """
    if isinstance(obj, _SCALARS):
        return obj
    if _depth > 64:  # a cycle or an absurdly deep object: keep it as it is
        return obj
    if isinstance(obj, enum.Enum):
        return plain(obj.value, _depth + 1)
    if isinstance(obj, Mapping):
        return {k: plain(v, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [plain(v, _depth + 1) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf-8", errors="replace")
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        try:
            return plain(dump(), _depth + 1)
        except TypeError:
            pass
    legacy = getattr(obj, "dict", None)
    if callable(legacy) and hasattr(obj, "__fields__"):
        return plain(legacy(), _depth + 1)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: plain(getattr(obj, f.name), _depth + 1) for f in dataclasses.fields(obj)}
    if hasattr(obj, "__dict__") and not callable(obj):
        return {k: plain(v, _depth + 1) for k, v in vars(obj).items() if not k.startswith("_")}
    return obj


def field(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` otherwise (``default`` when absent)."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def mapping_at(parent: Mapping, key: str, where: str) -> Mapping:
    """``parent[key]`` when it is an object, ``{}`` when absent or null, else a
    :class:`~ek_agents.errors.BridgeError` naming the field ``where.key``."""
    value = parent.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BridgeError(f"{where}.{key} must be an object, got {_short(value)}")
    return value


def list_at(parent: Mapping, key: str, where: str) -> list:
    """``parent[key]`` when it is a list, ``[]`` when absent or null, else a
    :class:`~ek_agents.errors.BridgeError` naming the field ``where.key``."""
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BridgeError(f"{where}.{key} must be a list, got {_short(value)}")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def as_seconds(value: Any, where: Optional[str] = None) -> Optional[float]:
    """A duration in seconds: a finite number >= 0, else None -- or, with ``where``, a
    :class:`~ek_agents.errors.BridgeError` naming it (an infinite latency is not a latency)."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and value >= 0:
        return float(value)
    if where is not None:
        raise BridgeError(f"{where} must be a duration in seconds (a finite number >= 0), got "
                          f"{_short(value)}")
    return None


def as_int(value: Any, where: str) -> int:
    """A non-negative token count, or :class:`~ek_agents.errors.BridgeError` naming ``where``."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value in (float("inf"), float("-inf")):
        raise BridgeError(f"{where} must be a token count (an integer), got {value!r}")
    if value < 0 or value != int(value):
        raise BridgeError(f"{where} must be a non-negative integer token count, got {value!r}")
    return int(value)
