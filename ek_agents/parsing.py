"""The one reading path for JSON and YAML documents in ek-agents, with bounds.

Every loader (suites, price catalogs, bridges, store reads) turns bytes into Python through
this module, so each says the same thing about bad bytes -- a typed error from
:mod:`ek_agents.errors` naming the file, the position and the limit -- and none of them can be
made to crash, hang or balloon by its input:

- nesting deeper than :data:`MAX_DEPTH` (no ``RecursionError`` downstream),
- an integer longer than :data:`MAX_INT_DIGITS` digits (every integer converts to a finite
  float; Python's own 4300-digit limit never fires),
- a float literal that overflows to infinity, or ``NaN``/``Infinity`` unless the caller asks
  for them (``nonfinite="allow"``; stores reject them: they write their own encoding),
- input bigger than :data:`MAX_BYTES`, decompressed data bigger than a cap
  (:func:`read_capped`),
- bytes that are not UTF-8 and strings holding lone surrogates (which cannot be written back),
- YAML aliases and anchors (a suite is data: an alias bomb is refused, not expanded) and YAML
  tags that are not JSON (``!!binary``, ``!!set``, ``!!python/...``).

>>> parse_json(b'{"a": [1, 2.5, "x"]}', where="doc.json")
{'a': [1, 2.5, 'x']}
>>> parse_json(b'[' * 500 + b']' * 500, where="deep.json")
Traceback (most recent call last):
...
ek_agents.errors.InvalidInput: deep.json: nesting deeper than 128 levels at column 129 (limit MAX_DEPTH=128); flatten the document
>>> parse_yaml("a: &x [1]\\nb: *x\\n", where="s.yaml")[0]
Traceback (most recent call last):
...
ek_agents.errors.InvalidInput: s.yaml: line 1 column 4: YAML anchors and aliases are refused (a suite is plain data); write the value out where it is used
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import IO, Any, Optional

from .errors import EkAgentsError, InvalidInput

__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "MAX_BYTES", "MAX_DECOMPRESSED", "MAX_INFLATE_RATIO",
           "decode_text", "parse_json", "parse_json_lines", "fast_json_lines", "parse_yaml", "check_tree",
           "read_capped", "decompressed_cap"]

#: Deepest nesting of lists/objects accepted in any document.
MAX_DEPTH = 128
#: Longest integer literal accepted (so that every integer converts to a finite float).
MAX_INT_DIGITS = 300
#: Largest document (bytes) accepted.
MAX_BYTES = 512 * 1024 * 1024
#: Largest decompressed member accepted regardless of its compressed size.
MAX_DECOMPRESSED = 1024 * 1024 * 1024
#: A member may inflate to this many times its compressed size (or 64 MiB, whichever is more).
MAX_INFLATE_RATIO = 100

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abAB]|\\u[dD][c-fC-F]|\\U0000[dD][89a-fA-F]")
_FIX_DEPTH = "flatten the document"


class _TooBig(Exception):
    def __init__(self, literal: str, what: str) -> None:
        super().__init__(literal)
        self.literal, self.what = literal, what


def _err(error: type, where: str, msg: str) -> EkAgentsError:
    return error(f"{where}: {msg}" if where else msg)


def _linecol(text: str, pos: int) -> str:
    """``line L column C`` of offset ``pos`` (just ``column C`` in one-line text)."""
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line} column {col}" if "\n" in text else f"column {col}"


def decode_text(data: Any, *, where: str, error: type = InvalidInput,
                max_bytes: int = MAX_BYTES) -> str:
    """``data`` (bytes or str) as text: UTF-8 (a BOM is dropped), at most ``max_bytes``."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        if len(data) > max_bytes:
            raise _err(error, where, f"{len(data)} bytes is over the limit of {max_bytes} bytes "
                       "(MAX_BYTES); split the file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text_before = data[:exc.start].decode("utf-8", errors="replace")
            raise _err(error, where, f"byte {data[exc.start:exc.start + 1]!r} at offset {exc.start} "
                       f"(line {text_before.count(chr(10)) + 1}) is not UTF-8; save the file as "
                       "UTF-8") from None
        return text[1:] if text.startswith("\ufeff") else text
    if isinstance(data, str):
        if len(data) > max_bytes:
            raise _err(error, where, f"{len(data)} characters is over the limit of {max_bytes} "
                       "(MAX_BYTES); split the file")
        return data
    raise _err(error, where, f"expected bytes or text, got {type(data).__name__}")


def _parse_int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooBig(s, "int")
    return int(s)


def _parse_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _TooBig(s, "float")
    return v


def _refuse_constant(name: str) -> float:
    raise _TooBig(name, "constant")


#: The strict decoders, made once (``json.loads`` with hooks builds a decoder and its scanner on
#: every call: half the time of a short document); the stdlib's own ``json.loads`` shares one too.
_DECODERS = {nonfinite: json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=constant)
             for nonfinite, constant in (("allow", float), ("reject", _refuse_constant))}


def _json_loads(text: str, nonfinite: str) -> Any:
    if text.startswith("\ufeff"):  # what json.loads says before it decodes
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODERS[nonfinite].decode(text)


def parse_json(data: Any, *, where: str, error: type = InvalidInput, nonfinite: str = "reject",
               max_depth: int = MAX_DEPTH, max_bytes: int = MAX_BYTES,
               lone_surrogates: str = "reject", fast: bool = True) -> Any:
    """One JSON document from ``data`` (bytes or str), bounded; ``error`` (an
    :class:`~ek_agents.errors.EkAgentsError` class) on anything wrong, naming ``where``.

    ``nonfinite="allow"`` accepts the ``NaN``/``Infinity`` tokens Python's ``json.dumps``
    writes (foreign logs); ``"reject"`` (the default) refuses them. ``lone_surrogates="allow"``
    keeps ``"\\ud800"`` escapes (what ``canonical_json`` itself writes) instead of refusing them.

    Most documents are read by orjson (:func:`_fast_loads`: the same value, several times
    faster); every document with something to refuse takes the strict path below, which alone
    words the errors. ``fast=False`` takes the strict path for every document (what the fast
    path is tested against).
    """
    if nonfinite not in ("allow", "reject"):
        raise InvalidInput(f"nonfinite must be 'allow' or 'reject', got {nonfinite!r}")
    if fast:
        ok, doc = _fast(data, max_depth, max_bytes)
        if ok:
            return doc
    text = decode_text(data, where=where, error=error, max_bytes=max_bytes)
    try:
        doc = _json_loads(text, nonfinite)
    except _TooBig as exc:
        raise _err(error, where, _too_big_msg(exc, text)) from None
    except RecursionError:
        raise _err(error, where, _depth_msg(text, max_depth)) from None
    except json.JSONDecodeError as exc:
        raise _err(error, where, f"{_linecol(text, exc.pos)}: not valid JSON ({exc.msg})") from None
    except ValueError as exc:  # belt and braces: any other conversion refusal
        raise _err(error, where, f"not valid JSON ({exc})") from None
    check_tree(doc, where=where, error=error, max_depth=max_depth, text=text,
               surrogates=lone_surrogates != "allow"
               and _SURROGATE_ESCAPE.search(text.encode("utf-8", "surrogatepass")) is not None)
    return doc


# ----------------------------------------------------------------- the orjson fast path
#
# orjson (Rust) parses 2-3x faster than the stdlib with parse_int/parse_float hooks. Where it
# succeeds it returns what the strict path returns, but for two cases handled here without a
# walk of the parsed tree:
# - an integer outside the 64-bit range becomes a float in orjson: a run of >= 20 digits (or
#   '-' and >= 19) sends the document to the strict path unless each run is inside a string
#   (a hex id's digits: an odd count of unescaped quotes before it);
# - orjson accepts nesting up to its own limit (1024; measured at first use). A document of
#   fewer than max_depth brackets cannot nest deeper; one of up to _WALK_MAX brackets is
#   walked after the parse (its containers, level by level); one of more is parsed inside
#   (limit - max_depth) extra arrays, so orjson itself refuses it when it nests deeper than
#   max_depth, and the value is taken back out of them (the extra arrays cost what a walk of
#   ~3000 containers costs).
# Short text (up to _SHORT characters, e.g. each of tau-bench's 46k argument strings) is
# read by orjson as it is: fewer than 19 digits or no run of 19 (its digits counted on a
# translated copy: a regex for the run costs twice orjson's parse of a tool call's
# arguments, measured) and no more than max_depth brackets (or too short to nest deeper)
# leave nothing to check after the parse.
# Everything orjson refuses -- NaN/Infinity, floats overflowing to infinity, lone surrogates
# (escaped or encoded), a BOM, bad UTF-8, too deep, bad syntax -- goes to the strict path,
# which decides whether it is accepted. Duplicate keys: both keep the last value at
# the first key's position.

_ORJSON: Any = None
_ORJSON_DEPTH = 0  # orjson's nesting limit (0: none found; the fast path is then off, but for short text)
_CHUNK = 1 << 20  # bytes per step of the integer scan (its copy stays small)
_SHORT = 1 << 12  # text up to this many characters goes to orjson as it is (see _fast)
_WALK_MAX = 3000  # containers up to which the walk is cheaper than the wrapping (measured:
# ~0.24 us a container against ~0.7 ms for the extra arrays, orjson 3.x on CPython 3.11)
_RUN_19 = b"0" * 19
_NUMBERS = bytes(0x30 if 0x30 <= b <= 0x39 else b if b in b".-" else 0x20 for b in range(256))
_BIG_POSITIVE, _BIG_NEGATIVE = b" " + b"0" * 20, b"-" + b"0" * 19


def _orjson() -> Any:
    """The orjson module, its nesting limit measured on first use."""
    global _ORJSON, _ORJSON_DEPTH
    if _ORJSON is None:
        import orjson  # not at module level: ~30 ms of import (uuid, dataclasses, inspect) when
        # this module is loaded without pydantic (-X importtime); needed at the first parse only

        def nests(depth: int) -> bool:
            try:
                orjson.loads(b"[" * depth + b"]" * depth)
            except ValueError:
                return True
            return False

        lo, hi = 1, 1 << 16  # the deepest accepted nesting, if any, is in [lo, hi)
        if nests(hi):  # refused somewhere: binary search (1024 in orjson 3.x)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if nests(mid) else (mid, hi)
            _ORJSON_DEPTH = lo
        _ORJSON = orjson
    return _ORJSON


def _fast(data: Any, max_depth: int, max_bytes: int) -> tuple[bool, Any]:
    """``(True, document)`` when orjson reads ``data`` to what the strict path would return,
    else ``(False, None)``.

    Short text (a tool call's arguments, a JSONL line) is given to orjson as it is when it
    cannot hold an integer orjson would read otherwise (fewer than 19 digits, or no run of 19:
    19 digits fit in 64 bits unless after a '-') nor nest deeper than ``max_depth`` (fewer
    than ``2 * max_depth`` characters, or at most ``max_depth`` brackets).
    """
    if type(data) is str:
        n = len(data)
        if n <= _SHORT and n <= max_bytes \
                and (n <= 2 * max_depth or data.count("[") + data.count("{") <= max_depth):
            digits = data.encode("utf-8", "surrogatepass").translate(_NUMBERS)
            if digits.count(48) < 19 or _RUN_19 not in digits:  # (48: "0", what digits became)
                try:
                    return True, (_ORJSON or _orjson()).loads(data)
                except ValueError:  # orjson.JSONDecodeError
                    return False, None
    raw = _fast_input(data, max_bytes)
    return (False, None) if raw is None else _fast_loads(raw, max_depth)


def _fast_input(data: Any, max_bytes: int) -> Optional[bytes]:
    """``data`` as the bytes orjson should read, or None for the strict path (over the
    size limit, text that is not UTF-8-encodable, not bytes or text)."""
    if isinstance(data, str):
        if len(data) > max_bytes:
            return None
        try:
            return data.encode("utf-8")
        except UnicodeEncodeError:
            return None
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if isinstance(data, bytes) and len(data) <= max_bytes:
        return data
    return None


def _may_hold_big_int(raw: bytes) -> bool:
    """Whether ``raw`` has a run of >= 20 digits (or '-' and >= 19) not after a '.'."""
    n = len(raw)
    if n < 19:
        return False
    if n <= _CHUNK:
        nums = (b" " + raw).translate(_NUMBERS)
        return _BIG_POSITIVE in nums or _BIG_NEGATIVE in nums
    for start in range(0, n, _CHUNK):  # each chunk with the 20 bytes before it (a run across
        # the cut); the document's first byte counts as preceded by a space
        nums = (raw[start - 20:start + _CHUNK] if start else b" " + raw[:_CHUNK]).translate(_NUMBERS)
        if _BIG_POSITIVE in nums or _BIG_NEGATIVE in nums:
            return True
    return False


def _fast_loads(raw: bytes, max_depth: int) -> tuple[bool, Any]:
    """``(True, document)`` when orjson reads ``raw`` to what the strict path would return,
    else ``(False, None)``."""
    if _ORJSON is None:
        _orjson()  # (measures _ORJSON_DEPTH)
    if not _ORJSON_DEPTH or (_may_hold_big_int(raw) and (b"\\\\" in raw or not _runs_in_strings(raw))):
        return False, None
    return _loads_bounded(raw, max_depth)


def _runs_in_strings(raw: bytes) -> bool:
    """Whether each run :func:`_big_int_runs` finds is in a string: after an odd count of quotes
    not escaped (for ``raw`` where no backslash is escaped: a quote after ``\\\\`` is not)."""
    runs = _big_int_runs(raw, 0, len(raw))  # (each starts at a digit or '-': no \" is cut below)
    between = (raw.count(b'"', a, b) - raw.count(b'\\"', a, b) for a, b in zip([0, *runs], runs))
    return bool(runs) and all(quotes % 2 for quotes in accumulate(between))


def _loads_bounded(raw: bytes, max_depth: int) -> tuple[bool, Any]:
    """:func:`_fast_loads` once ``raw`` is known to hold no integer orjson reads otherwise."""
    orjson = _ORJSON or _orjson()
    wrap = walk = 0
    if max_depth < _ORJSON_DEPTH and len(raw) > 2 * max_depth:  # (a depth of d takes 2d bytes)
        brackets = raw.count(b"[") + raw.count(b"{")
        if brackets > _WALK_MAX:  # the walk visits every container: dearer than the wrapping
            wrap = _ORJSON_DEPTH - max_depth
        else:
            walk = brackets > max_depth
    try:
        doc = orjson.loads(b"".join((b"[" * wrap, raw, b"]" * wrap)) if wrap else raw)  # (one copy)
    except ValueError:  # orjson.JSONDecodeError
        return False, None
    for _ in range(wrap):
        doc = doc[0]
    if walk and not _nests_at_most(doc, max_depth):
        return False, None
    return True, doc


def _nests_at_most(doc: Any, max_depth: int) -> bool:
    """Whether ``doc`` (orjson's: plain dicts and lists) nests at most ``max_depth`` deep."""
    level, depth = [doc] if type(doc) is dict or type(doc) is list else [], 0
    while level:
        depth += 1
        if depth > max_depth:
            return False
        level = [v for c in level for v in (c.values() if type(c) is dict else c)
                 if type(v) is dict or type(v) is list]
    return True


def fast_json_lines(data: bytes, start: int = 0, end: Optional[int] = None, *,
                    max_depth: int = MAX_DEPTH) -> Iterator[tuple[int, bytes, bool, Any]]:
    """``(offset, line, ok, document)`` for each non-blank line of ``data[start:end]``: ``ok``
    when orjson read the line to what :func:`parse_json` returns for it (``document``), else the
    line is for :func:`parse_json`, which decides and words any refusal. The scan for integers
    orjson would read otherwise runs once over the whole span, and only the lines holding one
    of the runs it finds are checked again (a line holds such a run only if the span does)."""
    end = len(data) if end is None else end
    if _ORJSON is None:
        _orjson()  # (measures _ORJSON_DEPTH)
    runs = _big_int_runs(data, start, end) if _ORJSON_DEPTH else None
    k, pos = 0, start
    while pos < end:
        nl = data.find(b"\n", pos, end)
        nl = end if nl < 0 else nl
        line, at, pos = data[pos:nl], pos, nl + 1
        if not line or line.isspace():  # (blank: what strip() would empty, with no copy)
            continue
        if runs is not None:
            while k < len(runs) and runs[k] < at:
                k += 1
        if len(line) > MAX_BYTES:
            yield at, line, False, None
        elif runs is None or (k < len(runs) and runs[k] < nl):
            yield (at, line) + _fast_loads(line, max_depth)
        else:
            yield (at, line) + _loads_bounded(line, max_depth)


def _big_int_runs(data: bytes, start: int, end: int) -> list:
    """The offsets in ``data[start:end]`` of the runs :func:`_may_hold_big_int` looks for (the
    first digit of >= 20, or the '-' before >= 19), sorted; a chunk at a time (no copy of it
    all), each chunk with the 20 bytes before it, the span's first byte read as after a space."""
    hits = set()
    for s in range(start, end, _CHUNK):
        base, chunk = ((start - 1, b" " + data[s:min(s + _CHUNK, end)]) if s == start
                       else (s - 20, data[s - 20:min(s + _CHUNK, end)]))
        nums = chunk.translate(_NUMBERS)
        for pattern, skip in ((_BIG_POSITIVE, 1), (_BIG_NEGATIVE, 0)):
            i = nums.find(pattern)
            while i >= 0:
                hits.add(base + i + skip)
                i = nums.find(pattern, i + 1)
    return sorted(hits)


def parse_json_lines(data: Any, *, where: str, error: type = InvalidInput,
                     nonfinite: str = "reject", max_depth: int = MAX_DEPTH,
                     max_bytes: int = MAX_BYTES) -> list[tuple[int, Any]]:
    """``(line number, document)`` for each non-blank line of a JSONL file, bounded as
    :func:`parse_json`; errors name ``where`` and the line."""
    text = decode_text(data, where=where, error=error, max_bytes=max_bytes)
    out = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            out.append((lineno, parse_json(line, where=f"{where} line {lineno}", error=error,
                                           nonfinite=nonfinite, max_depth=max_depth)))
    return out


def _too_big_msg(exc: _TooBig, text: str) -> str:
    pos = text.find(exc.literal)
    at = f" at {_linecol(text, pos)}" if pos >= 0 else ""
    if exc.what == "int":
        return (f"integer of {len(exc.literal.lstrip('-'))} digits{at} is over the limit of "
                f"{MAX_INT_DIGITS} digits (MAX_INT_DIGITS); write it as a string")
    if exc.what == "float":
        return (f"number {exc.literal[:40]!r}{at} overflows a float (limit ~1.8e308); "
                "write a finite number")
    return (f"{exc.literal}{at} is not a number this document may hold; write a finite number "
            "(or null when there is none)")


def _depth_msg(text: str, max_depth: int) -> str:
    depth, in_str, esc = 0, False, False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return (f"nesting deeper than {max_depth} levels at {_linecol(text, i)} "
                        f"(limit MAX_DEPTH={max_depth}); {_FIX_DEPTH}")
        elif ch in "]}":
            depth -= 1
    return f"nesting deeper than {max_depth} levels (limit MAX_DEPTH={max_depth}); {_FIX_DEPTH}"


def _has_lone_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_tree(doc: Any, *, where: str, error: type = InvalidInput, max_depth: int = MAX_DEPTH,
               surrogates: bool = True, text: Optional[str] = None) -> None:
    """Refuse ``doc`` (parsed JSON-like data) nested deeper than ``max_depth`` or, when
    ``surrogates``, holding a string (or key) with a lone surrogate."""
    level = [doc] if isinstance(doc, (dict, list)) else []
    depth = 0
    strings: list = [doc] if isinstance(doc, str) else []
    while level:  # one list per nesting level: no recursion, no per-node tuple
        depth += 1
        if depth > max_depth:
            raise _err(error, where, _depth_msg(text, max_depth) if text is not None else
                       f"nesting deeper than {max_depth} levels (limit MAX_DEPTH={max_depth}); "
                       f"{_FIX_DEPTH}")
        nxt: list = []
        for c in level:
            values = c.values() if isinstance(c, dict) else c
            nxt.extend([v for v in values if isinstance(v, (dict, list))])
            if surrogates:
                strings.extend([v for v in values if isinstance(v, str)])
                if isinstance(c, dict):
                    strings.extend([k for k in c if isinstance(k, str)])
        level = nxt
    if surrogates:
        for s in strings:
            if _has_lone_surrogate(s):
                raise _err(error, where, f"string {s[:40]!r} holds a lone UTF-16 surrogate, "
                           "which is not text; fix the \\u escape")


# --------------------------------------------------------------------------------- YAML

_LOADER: Any = None


def _yaml_loader() -> Any:
    """A SafeLoader that builds plain JSON data: no aliases/anchors, no timestamps, no
    non-JSON tags, bounded depth and integers, finite floats (built once, on first use)."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml  # not at module level: ~24 ms of import (-X importtime), needed only for YAML

    class DataLoader(yaml.SafeLoader):
        max_depth = MAX_DEPTH

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
                raise _YamlRefused(event.start_mark, "YAML anchors and aliases are refused (a "
                                   "suite is plain data); write the value out where it is used")
            self._ek_depth = getattr(self, "_ek_depth", 0) + 1
            try:
                if self._ek_depth > self.max_depth:
                    raise _YamlRefused(event.start_mark, f"nesting deeper than {self.max_depth} "
                                       f"levels (limit MAX_DEPTH={self.max_depth}); {_FIX_DEPTH}")
                return super().compose_node(parent, index)
            finally:
                self._ek_depth -= 1

        # the scanner keeps per-level state (simple keys, indents) that it walks for every
        # token: refuse deep nesting as it is scanned, before that walk gets quadratic
        def fetch_flow_collection_start(self, token_class: Any) -> None:
            if self.flow_level >= self.max_depth:
                raise _YamlRefused(self.get_mark(), f"nesting deeper than {self.max_depth} "
                                   f"levels (limit MAX_DEPTH={self.max_depth}); {_FIX_DEPTH}")
            super().fetch_flow_collection_start(token_class)

        def add_indent(self, column: int) -> bool:
            if len(self.indents) >= self.max_depth:
                raise _YamlRefused(self.get_mark(), f"nesting deeper than {self.max_depth} "
                                   f"levels (limit MAX_DEPTH={self.max_depth}); {_FIX_DEPTH}")
            return super().add_indent(column)

        def construct_yaml_int(self, node: Any) -> Any:
            digits = node.value.replace("_", "").lstrip("+-")
            if len(digits) > MAX_INT_DIGITS:
                raise _YamlRefused(node.start_mark, f"integer of {len(digits)} digits is over the "
                                   f"limit of {MAX_INT_DIGITS} digits (MAX_INT_DIGITS); write it "
                                   "as a string")
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node: Any) -> Any:
            v = super().construct_yaml_float(node)
            if not math.isfinite(v):
                raise _YamlRefused(node.start_mark, f"{node.value!r} is not a finite number; "
                                   "write a finite number (or null when there is none)")
            return v

        def construct_not_json(self, node: Any) -> Any:
            raise _YamlRefused(node.start_mark, f"tag {node.tag!r} is not JSON data; remove "
                               "the tag (a suite holds strings, numbers, lists and mappings)")

    DataLoader.add_constructor("tag:yaml.org,2002:int", DataLoader.construct_yaml_int)
    DataLoader.add_constructor("tag:yaml.org,2002:float", DataLoader.construct_yaml_float)
    for tag in ("timestamp", "binary", "set", "omap", "pairs"):
        DataLoader.add_constructor(f"tag:yaml.org,2002:{tag}", DataLoader.construct_not_json)
    DataLoader.add_constructor(None, DataLoader.construct_not_json)
    DataLoader.yaml_implicit_resolvers = {  # dates stay strings
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _LOADER = DataLoader
    return DataLoader


class _YamlRefused(Exception):
    def __init__(self, mark: Any, msg: str) -> None:
        super().__init__(msg)
        self.mark, self.msg = mark, msg


def parse_yaml(data: Any, *, where: str, error: type = InvalidInput,
               max_bytes: int = MAX_BYTES) -> tuple[Any, Any]:
    """One YAML document from ``data`` as ``(document, node)`` -- the node graph (PyYAML's)
    gives line numbers; both are None for an empty document. Bounded as :func:`parse_json`;
    aliases, anchors and non-JSON tags are refused."""
    import yaml  # not at module level: ~24 ms of import (-X importtime), needed only for YAML

    text = decode_text(data, where=where, error=error, max_bytes=max_bytes)
    loader = None
    try:
        loader = _yaml_loader()(text)  # its Reader refuses control characters right here
        node = loader.get_single_node()
        doc = loader.construct_document(node) if node is not None else None
    except _YamlRefused as exc:
        m = exc.mark
        raise _err(error, where, f"line {m.line + 1} column {m.column + 1}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1} column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise _err(error, where, f"{at}not valid YAML ({problem})") from None
    except RecursionError:  # pragma: no cover - compose_node bounds the depth first
        raise _err(error, where, f"nesting deeper than {MAX_DEPTH} levels; {_FIX_DEPTH}") from None
    finally:
        if loader is not None:
            loader.dispose()
    check_tree(doc, where=where, error=error, surrogates=True)
    return doc, node


# ---------------------------------------------------------------------------- compressed

def decompressed_cap(compressed_size: int) -> int:
    """How many bytes a compressed member of ``compressed_size`` bytes may inflate to."""
    return min(MAX_DECOMPRESSED, max(64 * 1024 * 1024, MAX_INFLATE_RATIO * int(compressed_size)))


def read_capped(stream: IO[bytes], cap: int, *, where: str, error: type = InvalidInput,
                chunk: int = 1 << 20) -> bytes:
    """All bytes of a (decompressing) ``stream``, refusing -- as soon as it is passed --
    more than ``cap`` bytes."""
    parts, total = [], 0
    while True:
        block = stream.read(min(chunk, cap + 1 - total))
        if not block:
            return b"".join(parts)
        total += len(block)
        if total > cap:
            raise _err(error, where, f"decompresses to more than {cap} bytes (limit: "
                       f"{MAX_INFLATE_RATIO}x its compressed size, at least 64 MiB, at most "
                       f"{MAX_DECOMPRESSED}); a compression bomb or a corrupt archive")
        parts.append(block)
