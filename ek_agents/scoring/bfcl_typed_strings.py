"""BFCL's Java and JavaScript value rules: how BFCL's AST checker reads a decoded argument.

BFCL decodes a Java or JavaScript call into *typed strings*: every argument value is the source
text of the literal (``"5L"``, ``"true"``, ``"new int[]{1,2}"``, ``"[1, 2]"``; a top-level string
literal without its quotes). Its checker then converts each text by the parameter's declared
type and compares the converted value with the possible answers by the Python rules. This module
holds that conversion, written from the rules of BFCL's public ``java_type_converter.py``,
``js_type_converter.py`` and ``type_mappings.py`` (ShishirPatil/gorilla,
``berkeley-function-call-leaderboard``); no code carried over.

A text that does not have the declared type's literal form is *not* an error here: BFCL keeps it
as a string, so it fails the type check unless the possible answer itself is a string (BFCL's
"variable" reading, compared exactly). BFCL's lenient readings are kept as BFCL has them, so
that verdicts agree:

- Java ``long`` needs the ``L`` suffix (``"5"`` is no long), ``float`` the ``f`` suffix
  (``"1.5"`` is no float), ``double`` takes neither; Java ``char`` stays the text as given
  (BFCL's char pattern never matches), so it is compared as a ``String``;
- Java ``Array`` is read from the first ``new T[]{...}`` in the text, split on commas, each
  element read by the items type (a ``String`` element keeps its double quotes; an
  ``ArrayList`` element of type ``String`` or ``char`` loses its first and last character);
  ``HashMap`` from ``put("key", value)`` calls;
- JavaScript ``float`` has no exponent form, ``Bigint`` needs the ``n`` suffix; a ``String``
  loses one pair of surrounding quotes; ``array`` and ``dict`` are read from the start of the
  text with BFCL's patterns (a comma always separates elements, a dict value loses its quotes
  before it is read, so ``'5'`` reads as ``5``).

Where BFCL's checker would fail with an exception instead of a verdict, the input is refused
with :class:`~ek_agents.errors.InvalidInput` rather than guessed at: a type BFCL does not
implement (Java ``Set`` / ``Hashtable`` / ``Queue`` / ``Stack``), a type outside the language's
table, an array parameter without ``items.type``, an integer literal over Python's 4,300-digit
limit, a ``Bigint`` text ending in a line break, a collection literal over
:data:`MAX_COLLECTION_TEXT` characters.

>>> java_value("5L", "long"), java_value("5", "long"), java_value("true", "boolean")
(5, '5', True)
>>> java_value('new ArrayList<Integer>(Arrays.asList(1, 2))', "ArrayList", "integer")
[1, 2]
>>> js_value("[1, 2.5]", "array", "float"), js_value("'x'", "String")
([1.0, 2.5], 'x')
"""
from __future__ import annotations

import re
from typing import Any, Optional

from ..errors import InvalidInput, did_you_mean

__all__ = ["JAVA_TYPES", "JS_TYPES", "UNSUPPORTED_JAVA_TYPES", "NESTED_TYPES", "LANGUAGES", "MAX_COLLECTION_TEXT",
           "language_of", "typed_value", "java_value", "js_value", "value_types"]

#: The languages :func:`typed_value` reads (Python values are taken as they are).
LANGUAGES = ("python", "java", "javascript")

#: Java parameter type -> the Python type its converted value has (BFCL's table).
JAVA_TYPES = {
    "byte": int, "short": int, "integer": int, "long": int, "float": float, "double": float,
    "boolean": bool, "char": str, "String": str, "any": str,
    "Array": list, "ArrayList": list, "HashMap": dict,
}
#: Java types in BFCL's table whose conversion BFCL does not implement (refused here).
UNSUPPORTED_JAVA_TYPES = ("Set", "Hashtable", "Queue", "Stack")
#: JavaScript parameter type -> the Python type its converted value has (BFCL's table).
JS_TYPES = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
    "dict": dict, "array": list, "any": str,
}
#: The longest Java/JavaScript collection literal read (characters). BFCL's collection patterns
#: search the text with lazy wildcards, which takes time quadratic in its length (20,000
#: characters: ~10 s); a longer literal is refused rather than read for seconds.
MAX_COLLECTION_TEXT = 4000

#: Per language, the types whose ``items.type`` is read for their elements.
NESTED_TYPES = {"java": ("Array", "ArrayList"), "javascript": ("array",)}

_TABLES = {"java": JAVA_TYPES, "javascript": JS_TYPES}

# BFCL's literal forms. Each is matched against the text with one final line break removed,
# which is what BFCL's ``^...$`` patterns accept.
_INT = re.compile(r"-?\d+")
_JAVA_FLOAT = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]")
_JAVA_DOUBLE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_JAVA_LONG = re.compile(r"-?\d+[lL]")
_JS_FLOAT = re.compile(r"-?\d+(\.\d+)?")
_JS_BIGINT = re.compile(r"-?\d+n")

_JAVA_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
_JAVA_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_JAVA_ADD_BLOCK = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
_JAVA_ADD = re.compile(r"add\((.+?)\)")
_JAVA_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
_JAVA_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
_JAVA_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
_JAVA_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")

_JS_NEW_ARRAY = re.compile(r"new\s+Array\(")
_JS_ARRAY = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
_JS_BRACKETS = re.compile(r"\[(.*?)\]")
_JS_DICT = re.compile(r"\{(.*?)\}")
_JS_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


def language_of(category: str) -> str:
    """The language BFCL checks a category in: ``"javascript"`` in the name, else ``"java"``
    in the name, else ``"python"`` (BFCL's own reading of its category names)."""
    if "javascript" in category:
        return "javascript"
    if "java" in category:
        return "java"
    return "python"


def _line(text: str) -> str:
    """The text BFCL's ``$``-anchored patterns see: one final line break does not count."""
    return text[:-1] if text.endswith("\n") else text


def _is(pattern: re.Pattern, text: str) -> bool:
    return pattern.fullmatch(_line(text)) is not None


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise InvalidInput(
            f"BFCL typed value {text[:40]!r}... has {len(text)} characters, over Python's integer "
            f"digit limit, where BFCL's checker fails; shorten the literal"
        ) from None


def _bounded(text: str, type_name: str) -> str:
    if len(text) > MAX_COLLECTION_TEXT:
        raise InvalidInput(
            f"BFCL typed {type_name} value {text[:40]!r}... has {len(text)} characters, over the "
            f"{MAX_COLLECTION_TEXT} read for a collection literal; pass a shorter literal"
        )
    return text


def _quoted(text: str, quotes: str) -> bool:
    return any(text.startswith(q) and text.endswith(q) for q in quotes)


def value_types(language: str, function: str, param: str, spec: dict) -> tuple[str, type, Optional[str], Optional[type]]:
    """``(type name, converted type, items type name or None, converted items type or None)``
    of a Java or JavaScript parameter, or a typed error naming the parameter and the fix."""
    table = _TABLES[language]
    if not isinstance(spec, dict):
        raise InvalidInput(f"BFCL function {function!r}: parameter {param!r} must be described by "
                           f"{{'type': ...}}, got {spec!r:.80}")
    t = spec.get("type")

    def known(name: Any, what: str) -> type:
        if language == "java" and name in UNSUPPORTED_JAVA_TYPES:
            raise InvalidInput(
                f"BFCL function {function!r}: parameter {param!r} has Java {what} {name!r}, which "
                f"BFCL's checker does not implement; declare it as one of {sorted(JAVA_TYPES)}"
            )
        if name not in table:
            raise InvalidInput(
                f"BFCL function {function!r}: parameter {param!r} has {what} {name!r}, not a "
                f"{language} type BFCL checks{did_you_mean(str(name), table)} (one of {sorted(table)})"
            )
        return table[name]

    expected = known(t, "type")
    if t not in NESTED_TYPES[language]:
        return t, expected, None, None
    items = (spec.get("items") or {}).get("type")
    if items is None:
        raise InvalidInput(
            f"BFCL function {function!r}: {language} {t} parameter {param!r} needs items.type "
            f"(one of {sorted(table)})"
        )
    return t, expected, items, known(items, "items type")


def typed_value(language: str, text: str, type_name: str, items: Optional[str] = None) -> Any:
    """A decoded Java/JavaScript typed string as BFCL's checker reads it for ``type_name``
    (the text itself when it does not have that type's literal form)."""
    if language == "java":
        return java_value(text, type_name, items)
    if language == "javascript":
        return js_value(text, type_name, items)
    raise InvalidInput(f"typed values are read for {LANGUAGES[1:]}, got language {language!r}")


# --------------------------------------------------------------------------- Java

def java_value(text: str, type_name: str, items: Optional[str] = None) -> Any:
    """One Java typed string read as BFCL reads it for the Java type ``type_name``."""
    if type_name in ("byte", "short", "integer"):
        return _int(text) if _is(_INT, text) else text
    if type_name == "float":
        return float(_line(text)[:-1]) if _is(_JAVA_FLOAT, text) else text
    if type_name == "double":
        return float(text) if _is(_JAVA_DOUBLE, text) else text
    if type_name == "long":
        return _int(_line(text)[:-1]) if _is(_JAVA_LONG, text) else text
    if type_name == "boolean":
        return text == "true" if text in ("true", "false") else text
    if type_name in ("char", "String", "any"):
        return text
    if type_name == "Array":
        return _java_array(_bounded(text, type_name), items)
    if type_name == "ArrayList":
        return _java_array_list(_bounded(text, type_name), items)
    if type_name == "HashMap":
        return _java_map(_bounded(text, type_name))
    if type_name in UNSUPPORTED_JAVA_TYPES:
        raise InvalidInput(f"BFCL's checker does not implement the Java type {type_name!r}; "
                           f"declare the parameter as one of {sorted(JAVA_TYPES)}")
    raise InvalidInput(f"unknown Java type {type_name!r}{did_you_mean(str(type_name), JAVA_TYPES)} "
                       f"(one of {sorted(JAVA_TYPES)})")


def _java_element(text: str, items: Optional[str]) -> Any:
    return java_value(text, items) if items else _java_literal(text)


def _java_array(text: str, items: Optional[str]) -> Any:
    m = _JAVA_ARRAY.search(text)
    if m is None:
        return text
    return [_java_element(part.strip(), items) for part in m.group(1).split(",") if part.strip()]


def _java_list_element(text: str, items: Optional[str]) -> Any:
    if items in ("char", "String"):
        return text[1:-1]
    return _java_element(text, items)


def _java_array_list(text: str, items: Optional[str]) -> Any:
    m = _JAVA_AS_LIST.search(text)
    if m is not None:
        return [_java_list_element(part.strip(), items) for part in m.group(1).split(",")]
    m = _JAVA_ADD_BLOCK.search(text)
    if m is not None:
        return [_java_list_element(part.strip(), items) for part in _JAVA_ADD.findall(m.group(1))]
    return [] if _JAVA_EMPTY_LIST.search(text) else text


def _java_map(text: str) -> Any:
    m = _JAVA_MAP.search(text)
    if m is not None:
        return {key: _java_literal(value.strip()) for key, value in _JAVA_PUT.findall(m.group(1))}
    return {} if _JAVA_EMPTY_MAP.search(text) else text


def _number(text: str) -> Any:
    """Python's own reading of a number literal (int, else float), else the text."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _java_literal(text: str) -> Any:
    """A Java literal read without a declared type (collection elements, map values)."""
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text, '"'):
        return text[1:-1]
    if _JAVA_LONG.fullmatch(text):
        return _int(text[:-1])
    if _JAVA_FLOAT.fullmatch(text):
        return float(text[:-1])
    return _number(text)


# --------------------------------------------------------------------------- JavaScript

def js_value(text: str, type_name: str, items: Optional[str] = None) -> Any:
    """One JavaScript typed string read as BFCL reads it for the JavaScript type ``type_name``."""
    if type_name == "String":
        return text[1:-1] if _quoted(text, "\"'") else text
    if type_name == "integer":
        return _int(text) if _is(_INT, text) else text
    if type_name == "float":
        return float(text) if _is(_JS_FLOAT, text) else text
    if type_name == "Bigint":
        if not _is(_JS_BIGINT, text):
            return text
        if text.endswith("\n"):
            raise InvalidInput(f"BFCL typed Bigint {text!r} ends in a line break, where BFCL's "
                               f"checker fails; remove the line break")
        return _int(text[:-1])
    if type_name == "Boolean":
        return text == "true" if text in ("true", "false") else text
    if type_name == "any":
        return text
    if type_name == "array":
        return _js_array(_bounded(text, type_name).strip(), items)
    if type_name == "dict":
        return _js_dict(_bounded(text, type_name).strip())
    raise InvalidInput(f"unknown JavaScript type {type_name!r}{did_you_mean(str(type_name), JS_TYPES)} "
                       f"(one of {sorted(JS_TYPES)})")


def _js_literal(text: str) -> Any:
    """A JavaScript literal read without a declared type."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text, "\"'"):
        return text[1:-1]
    return _number(text)


def _js_array(code: str, items: Optional[str]) -> Any:
    try:
        end = _rows_end(code)
        if end is not None:
            rows = []
            for i, row in enumerate(_JS_BRACKETS.findall(code[:end])):
                row = row.strip()
                if i == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([_js_literal(e.strip()) for e in row.split(",")])
            return rows
        m = _JS_ARRAY.match(code)
        if m is None:
            return code
        body = m.group(1) if m.group(1) is not None else m.group(2)
        body = (body or "").strip()
        parts = [e.strip() for e in body.split(",")] if body else []
        if not items:
            return [_js_literal(e) for e in parts]
        return [js_value(e, items, "String" if e.startswith(("'", '"')) else None) for e in parts]
    except (ValueError, IndexError):  # BFCL reads an array it cannot convert as the text itself
        return code


def _rows_end(code: str) -> Optional[int]:
    r"""Where BFCL's two-dimensional array pattern, matched at the start of ``code``, ends (None:
    no match). The pattern is ``\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]``, or the same rows inside
    ``new Array(`` ... ``)``; Python's ``re`` backtracks exponentially on it (20 unclosed rows
    take a second, 30 would take hours), so this finds the match the regex would report --
    the first in its own preference order -- in one right-to-left pass instead.

    ``done[p]``: the match end once a row has closed just before ``p`` (then: spaces, and either
    ``,`` spaces ``[`` and another row, or the closing bracket); ``row[x]``: ``done[j + 1]`` for
    the first ``]`` at ``j >= x``, on the same line, for which that is not None (a row's
    ``.*?`` is lazy and does not cross a line break)."""
    if code.startswith("["):
        start, close = 1, "]"
    else:
        m = _JS_NEW_ARRAY.match(code)
        if m is None:
            return None
        start, close = m.end(), ")"
    n = len(code)
    skip = [n] * (n + 1)                      # skip[p]: first non-space at or after p
    done: list = [None] * (n + 2)
    row: list = [None] * (n + 2)
    for p in range(n - 1, -1, -1):
        skip[p] = skip[p + 1] if code[p].isspace() else p
        ch = code[p]
        row[p] = None if ch == "\n" else done[p + 1] if ch == "]" and done[p + 1] is not None else row[p + 1]
        q = skip[p]
        if q < n and code[q] == ",":
            r = skip[q + 1]
            if r < n and code[r] == "[" and row[r + 1] is not None:
                done[p] = row[r + 1]
                continue
        done[p] = q + 1 if q < n and code[q] == close else None
    first = skip[start] if start < n else n
    return row[first + 1] if first < n and code[first] == "[" else None


def _js_dict(code: str) -> Any:
    if code == "{}":
        return {}
    m = _JS_DICT.match(code)
    if m is None:
        return code
    out: dict = {}
    for key, value in _JS_PAIR.findall(m.group(1)):
        key = key.strip().strip("'\"")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            out[key] = _js_array(value, None)
        elif value.startswith("{") and value.endswith("}"):
            out[key] = _js_dict(value)
        else:
            out[key] = _js_literal(value.strip("'\""))
    return out
