"""What identifies an agent: its code and everything in its state that decides its answers.

A stored trial is reused only for the same agent (``record.RunFingerprint``), so the identity
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
  class's own attributes and methods). Values go through one canonical encoding: JSON
  values, tuples / lists / dicts (key order free), sets (order free), enums (by class and
  name), pydantic models (their fields), dataclasses and plain objects (their attributes),
  numpy arrays (dtype, shape and a streamed sha256 of the bytes), paths, functions and
  classes (by code, as above), modules (by name), and C-level values that pickle by value
  (datetimes, decimals, ``re`` patterns, ...) through their pickle recipe. Strings and bytes
  over 4 KiB are hashed, not copied. An object that declares ``ek_config`` (a JSON mapping, or
  a method returning one) is identified by that declaration instead of its attributes.
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

import copyreg
import dataclasses
import enum
import functools
import hashlib
import inspect
import json
import os
import pathlib
import sys
import threading
import types
import uuid
import warnings
from collections.abc import Mapping
from typing import Any, Optional

from pydantic import Field

from ..base import JsonShape
from ..core import canonical_json, shape
from ..errors import InvalidInput

__all__ = ["AgentIdentity", "agent_identity", "declared_config", "differences",
           "identity_note",
           "refusal", "EK_CONFIG", "BIG_BYTES", "MAX_DEPTH", "MAX_NODES", "warn_unidentified"]

#: The attribute an agent (or any object in its state) declares its configuration with.
EK_CONFIG = "ek_config"
#: Strings and bytes longer than this are hashed (streamed), not copied into the encoding.
BIG_BYTES = 4096
#: Deepest nesting walked; anything deeper is undigestable (an agent says what identifies it).
MAX_DEPTH = 64
#: Most objects walked for one agent; beyond, the rest is undigestable (declare ek_config).
MAX_NODES = 200_000


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


# --------------------------------------------------------------------------- digests

def _sha(data: Any) -> str:
    return hashlib.sha256(data).hexdigest()


def _tree_digest(tree: Any) -> str:
    return _sha(canonical_json(tree))


@functools.lru_cache(maxsize=512)
def _file_digest_cached(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_digest(path: Any) -> Optional[str]:
    """sha256 of a source file's bytes, or None when there is no such file (``<stdin>``,
    ``<string>``, a notebook cell, a frozen module)."""
    if not isinstance(path, str) or not path or path.startswith("<"):
        return None
    try:
        st = os.stat(path)
        if not os.path.isfile(path):
            return None
        return _file_digest_cached(path, st.st_mtime_ns, st.st_size)
    except OSError:
        return None


def _all_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _all_names(c)
    return names


def _name_of(obj: Any) -> str:
    mod = getattr(obj, "__module__", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    return f"{mod}:{name}"


def _type_name(obj: Any) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


#: Class attributes that are bookkeeping, not behaviour (walking a class with no source file).
_CLASS_SKIP = frozenset({"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__",
                         "__slots__", "__annotations__", "__dataclass_fields__",
                         "__dataclass_params__", "__match_args__", "__hash__", "__orig_bases__",
                         "__parameters__", "__static_attributes__", "__firstlineno__",
                         "_member_map_", "_value2member_map_", "_member_names_", "_member_type_",
                         "_value_repr_", "_unhashable_values_", "_new_member_", "_use_args_",
                         "__pydantic_decorators__", "__pydantic_core_schema__",
                         "__pydantic_validator__", "__pydantic_serializer__",
                         "__pydantic_fields__", "__pydantic_complete__", "__signature__",
                         "__abstractmethods__", "_abc_impl", "__class_vars__",
                         "__private_attributes__", "model_fields", "model_computed_fields",
                         "__pydantic_generic_metadata__", "__pydantic_parent_namespace__",
                         "__pydantic_post_init__", "__pydantic_custom_init__",
                         "__pydantic_root_model__", "__pydantic_computed_fields__",
                         "__pydantic_setattr_handlers__", "model_config",
                         "__pydantic_fields_complete__", "__pydantic_config__"})
#: Descriptor types a class body gets from the interpreter (slots, __dict__): no state there.
_DESCRIPTORS = (types.MemberDescriptorType, types.GetSetDescriptorType,
                types.WrapperDescriptorType, types.MethodDescriptorType)
#: Objects that are live by nature: named in the message as such.
_LIVE = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, types.FrameType,
         types.TracebackType)
#: The default object reductions: the object's state is its __dict__ and slots (walked).
_NEWOBJ = {"__newobj__", "__newobj_ex__", "_reconstructor"}


class _Walker:
    """One agent's walk: deterministic encodings of its code and state (plain JSON trees).

    ``id()`` is used only to notice, within this walk, an object met before (a cycle or a
    shared object: encoded as a reference to the path where it was first met); it never
    reaches an encoding.
    """

    def __init__(self) -> None:
        self.seen: dict[int, str] = {}
        self.keep: list = []  # everything in `seen` stays alive: no id() reuse within a walk
        self.classes: dict[int, Any] = {}
        self.undigestable: list[tuple[str, str]] = []
        self.live: list = []
        self.declared: list[str] = []
        self.nodes = 0
        self.limited = False  # a walk limit was met (said once)
        self.fresh = False  # the state was not walked to its end: a token of its own

    # ---- entry points
    def value(self, obj: Any, path: str) -> Any:
        try:
            return self.encode(obj, path, 0)
        except RecursionError:  # pragma: no cover - MAX_DEPTH keeps the walk far from it
            return self.refuse(obj, path, "nested too deeply to walk")

    def refuse(self, obj: Any, path: str, why: str) -> dict:
        self.undigestable.append((path, f"{_type_name(obj)} at {path}: {why}"))
        self.live.append(obj)
        return {"undigestable": _type_name(obj)}

    # ---- the encoding
    def encode(self, x: Any, path: str, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES or depth > MAX_DEPTH:
            self.fresh = True  # not walked to the end: no same-objects resume either
            if self.limited:
                return {"undigestable": "beyond the walk's limits"}
            self.limited = True
            return self.refuse(x, path, f"more than {MAX_NODES} objects" if self.nodes > MAX_NODES
                               else f"nested deeper than {MAX_DEPTH} levels")
        t = type(x)
        if x is None or t is bool or t is int and abs(x) < 2 ** 53:
            return x
        if t is int:
            return {"int": str(x)}
        if t is float:
            return x if x == x and x not in (float("inf"), float("-inf")) else {"float": repr(x)}
        if t is str:
            return x if len(x) <= BIG_BYTES else self.big(x.encode("utf-8", "surrogatepass"), "str")
        if t in (bytes, bytearray):
            return {"bytes": bytes(x).hex()} if len(x) <= BIG_BYTES else self.big(x, "bytes")
        if isinstance(x, enum.Enum):
            return {"enum": self.cls(t, path, depth), "name": x.name}
        if t in (tuple, list, dict, set, frozenset) or isinstance(x, (dict, list, set, frozenset)):
            return self.container(x, path, depth)
        if isinstance(x, tuple):  # a namedtuple too: its values by position, and its class
            return self.container(x, path, depth)
        if t is complex:
            return {"complex": [self.encode(x.real, path, depth), self.encode(x.imag, path, depth)]}
        if isinstance(x, type):
            return self.cls(x, path, depth)
        if isinstance(x, types.ModuleType):
            return {"module": x.__name__}
        if isinstance(x, types.FunctionType):
            return self.remembered(x, path, lambda: self.function(x, path, depth))
        if isinstance(x, types.MethodType):
            return {"method": self.encode(x.__func__, path, depth + 1),
                    "self": self.encode(x.__self__, f"{path}.__self__", depth + 1)}
        if isinstance(x, functools.partial):
            return self.remembered(x, path, lambda: {"partial": [
                self.encode(x.func, f"{path}.func", depth + 1),
                self.encode(x.args, f"{path}.args", depth + 1),
                self.encode(x.keywords, f"{path}.keywords", depth + 1)]})
        if isinstance(x, (types.BuiltinFunctionType, types.BuiltinMethodType)):
            owner = getattr(x, "__self__", None)
            if owner is None or isinstance(owner, types.ModuleType):
                return {"builtin": _name_of(x)}
            return {"builtin": x.__name__,
                    "self": self.encode(owner, f"{path}.__self__", depth + 1)}
        if isinstance(x, (types.MethodWrapperType,)):
            return {"builtin": x.__name__, "self": self.encode(x.__self__, f"{path}.__self__",
                                                               depth + 1)}
        if isinstance(x, _DESCRIPTORS):
            return {"descriptor": _name_of(x)}
        if isinstance(x, (staticmethod, classmethod)):
            return {type(x).__name__: self.encode(x.__func__, path, depth + 1)}
        if isinstance(x, property):
            return {"property": [self.encode(f, path, depth + 1) for f in (x.fget, x.fset, x.fdel)]}
        if isinstance(x, types.CodeType):
            return {"code": self.code(x, path, depth)}
        if isinstance(x, _LIVE):
            return self.refuse(x, path, "a live execution state")
        if isinstance(x, pathlib.PurePath):
            return {"path": self.cls(t, path, depth), "str": str(x)}
        return self.remembered(x, path, lambda: self.instance(x, path, depth))

    def big(self, data: Any, kind: str) -> Any:
        """A long string or bytes: its sha256 (hashlib streams it; nothing is copied)."""
        return {kind + "_sha256": _sha(data), "len": len(data)}

    def remembered(self, x: Any, path: str, make: Any) -> Any:
        """A mutable object met again in this walk (a cycle, or shared): its first path."""
        key = id(x)
        if key in self.seen:
            return {"ref": self.seen[key]}
        self.seen[key] = path
        self.keep.append(x)
        return make()

    def container(self, x: Any, path: str, depth: int) -> Any:
        if isinstance(x, (dict, list, set)):  # mutable: may be shared or cyclic
            key = id(x)
            if key in self.seen:
                return {"ref": self.seen[key]}
            self.seen[key] = path
            self.keep.append(x)
        d = depth + 1
        if isinstance(x, dict):
            items = list(x.items())
            if all(type(k) is str for k, _ in items):  # walked in key order, as encoded
                out: Any = {"dict": {k: self.encode(v, f"{path}.{k}", d)
                                     for k, v in sorted(items, key=lambda kv: kv[0])}}
            else:
                pairs = [[self.encode(k, f"{path}[{i}]", d), self.encode(v, f"{path}[{i}]", d)]
                         for i, (k, v) in enumerate(items)]
                out = {"dict_items": sorted(pairs, key=canonical_json)}
            if type(x) is not dict:
                out["type"] = self.cls(type(x), path, depth)
                factory = getattr(x, "default_factory", None)
                if factory is not None:
                    out["default_factory"] = self.encode(factory, f"{path}.default_factory", d)
            return out
        if isinstance(x, (set, frozenset)):
            elems = [self.encode(v, f"{path}{{}}", d) for v in x]
            return {"set": sorted(elems, key=canonical_json)}
        tag = "list" if isinstance(x, list) else "tuple"
        out = {tag: [self.encode(v, f"{path}[{i}]", d) for i, v in enumerate(x)]}
        if type(x) not in (list, tuple):
            out["type"] = self.cls(type(x), path, depth)
        return out

    # ---- code
    def code(self, co: types.CodeType, path: str, depth: int) -> str:
        """sha256 of a code object: what it does, not where it sits (no file, line, address)."""
        consts = [{"code": self.code(c, path, depth)} if isinstance(c, types.CodeType)
                  else self.encode(c, path, depth + 1) for c in co.co_consts]
        return _tree_digest({
            "name": co.co_qualname if hasattr(co, "co_qualname") else co.co_name,
            "args": [co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount],
            "flags": co.co_flags, "bytecode": _sha(co.co_code),
            "exceptions": _sha(getattr(co, "co_exceptiontable", b"")),
            "consts": consts, "names": list(co.co_names), "varnames": list(co.co_varnames),
            "freevars": list(co.co_freevars), "cellvars": list(co.co_cellvars)})

    def function_code(self, f: types.FunctionType, path: str, depth: int) -> dict:
        return {"function": _name_of(f), "file": _file_digest(f.__code__.co_filename),
                "code": self.code(f.__code__, path, depth)}

    def function_state(self, f: types.FunctionType, path: str, depth: int,
                       prefix: str = "") -> dict[str, Any]:
        """A function's state by key: closure cells, defaults, keyword defaults, and -- for
        code with no source file -- the module globals it reads."""
        out: dict[str, Any] = {}
        d = depth + 1
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            key = f"{prefix}closure.{name}"
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell (a name assigned later)
                out[key] = {"empty_cell": True}
                continue
            out[key] = self.encode(value, f"{path}{key}" if path else key, d)
        if f.__defaults__:
            out[f"{prefix}defaults"] = self.encode(f.__defaults__, f"{path}{prefix}defaults", d)
        if f.__kwdefaults__:
            out[f"{prefix}kwdefaults"] = self.encode(f.__kwdefaults__,
                                                     f"{path}{prefix}kwdefaults", d)
        if _file_digest(f.__code__.co_filename) is None:
            glob = f.__globals__
            for name in sorted(_all_names(f.__code__)):
                if name in glob and name != "__builtins__":
                    key = f"{prefix}globals.{name}"
                    out[key] = self.encode(glob[name], f"{path}{key}" if path else key, d)
        return out

    def function(self, f: types.FunctionType, path: str, depth: int) -> dict:
        return {**self.function_code(f, path, depth),
                "state": self.function_state(f, f"{path}.", depth)}

    def cls(self, c: type, path: str, depth: int) -> Any:
        """A class: its name, its source file's digest and its bases; a class with no source
        file, or defined inside a function, also by its own attributes and methods."""
        key = id(c)
        if key in self.classes:
            done = self.classes[key]
            return done if done is not None else {"class_ref": _name_of(c)}
        if c.__module__ == "builtins":
            return {"class": _name_of(c)}
        self.classes[key] = None  # in progress: a method naming its own class
        self.keep.append(c)
        mod = sys.modules.get(c.__module__)
        file = _file_digest(getattr(mod, "__file__", None))
        tree: dict = {"class": _name_of(c), "file": file,
                      "bases": [self.cls(b, path, depth) for b in c.__bases__ if b is not object]}
        if file is None or "<locals>" in (c.__qualname__ or ""):
            members = {}
            for name, v in sorted(vars(c).items()):
                if name in _CLASS_SKIP or isinstance(v, _DESCRIPTORS):
                    continue
                members[name] = self.encode(v, f"{path}.<class>.{name}", depth + 1)
            tree["members"] = members
        self.classes[key] = tree
        return tree

    # ---- objects
    def instance(self, x: Any, path: str, depth: int) -> Any:
        t = type(x)
        if _static_attr(x, EK_CONFIG) is not None:
            self.declared.append(path)
            return {"declared": self.cls(t, path, depth), "config": declared_config(x)}
        ndarray = _numpy_array(x)
        if ndarray is not None:
            return self.array(x, path, depth)
        fields = getattr(t, "model_fields", None)
        if isinstance(fields, Mapping) and hasattr(x, "__pydantic_fields_set__"):  # pydantic
            d = depth + 1
            out = {"class": self.cls(t, path, depth),
                   "fields": {n: self.encode(getattr(x, n, None), f"{path}.{n}", d)
                              for n in sorted(fields)}}
            for extra in ("__pydantic_extra__", "__pydantic_private__"):
                value = getattr(x, extra, None)
                if value:
                    out[extra.strip("_")] = self.encode(value, f"{path}.{extra}", d)
            return out
        try:  # what Python itself copies and pickles the value by
            reducer = copyreg.dispatch_table.get(t)
            recipe = reducer(x) if reducer is not None else x.__reduce_ex__(4)
        except Exception as exc:  # a lock, a socket, an open file, a C object with hidden state
            return self.refuse(x, path, f"{' '.join(str(exc).split())[:120]}")
        if isinstance(recipe, str):  # a global singleton, pickled by name
            return {"global": f"{t.__module__}:{recipe}"}
        if not isinstance(recipe, tuple) or len(recipe) < 2:
            return self.refuse(x, path, "no pickle recipe to identify it by")
        maker = getattr(recipe[0], "__name__", None)
        if maker in _NEWOBJ and getattr(recipe[0], "__module__", None) == "copyreg":
            args = recipe[1] if isinstance(recipe[1], tuple) else ()
            return {"object": self.cls(t, path, depth), "attrs": self.attributes(x, path, depth),
                    "newargs": self.encode(args[1:], f"{path}.<newargs>", depth + 1)}
        d = depth + 1
        return {"reduce": self.encode(recipe[0], f"{path}.<reduce>", d),
                "args": self.encode(recipe[1], f"{path}.<args>", d),
                "state": self.encode(recipe[2] if len(recipe) > 2 else None, f"{path}.<state>", d),
                "items": self.encode(list(recipe[3]) if len(recipe) > 3 and recipe[3] is not None
                                     else None, f"{path}.<items>", d),
                "dictitems": self.encode(dict(recipe[4]) if len(recipe) > 4
                                         and recipe[4] is not None else None,
                                         f"{path}.<dictitems>", d)}

    def attributes(self, x: Any, path: str, depth: int) -> dict:
        """An object's ``__dict__`` and ``__slots__``, by attribute name."""
        return {name: self.encode(value, f"{path}.{name}", depth + 1)
                for name, value in sorted(_attributes(x).items())}

    def array(self, x: Any, path: str, depth: int) -> Any:
        head = {"ndarray": x.dtype.str, "dtype": str(x.dtype), "shape": list(x.shape)}
        if type(x).__name__ != "ndarray":
            head["class"] = self.cls(type(x), path, depth)
        if x.dtype.hasobject:
            return {**head, "items": self.encode(x.tolist(), path, depth + 1)}
        np = sys.modules["numpy"]
        data = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        return {**head, "sha256": _sha(data.data if data.ndim else data.tobytes())}


def _static_attr(x: Any, name: str) -> Any:
    """``x.name`` found without running ``__getattr__`` (a proxy answers anything)."""
    try:
        return inspect.getattr_static(x, name, None)
    except Exception:  # pragma: no cover - getattr_static does not raise on a normal object
        return None


def _numpy_array(x: Any) -> Any:
    np = sys.modules.get("numpy")  # numpy is never imported here: only met if the agent has it
    if np is None:
        return None
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, np.generic):
        return x
    return None


def _attributes(x: Any) -> dict:
    try:
        own = object.__getattribute__(x, "__dict__")
    except AttributeError:
        own = None
    out = dict(own) if isinstance(own, dict) else {}
    for c in type(x).__mro__:
        slots = c.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            stored = f"_{c.__name__.lstrip('_')}{name}" if name.startswith("__") and not \
                name.endswith("__") else name
            try:
                out[stored] = object.__getattribute__(x, stored)
            except AttributeError:  # an unset slot
                continue
    return out


# --------------------------------------------------------------------------- the identity

def declared_config(obj: Any) -> dict:
    """The configuration ``obj`` declares: its ``ek_config`` attribute -- a JSON mapping, or a
    method returning one -- through JSON and back (what a stored fingerprint reads back).
    ``{}`` when it declares none.

    >>> class A:
    ...     ek_config = {"model": "m1", "temperature": 0.0}
    >>> declared_config(A())
    {'model': 'm1', 'temperature': 0.0}
    """
    declared = getattr(obj, EK_CONFIG, None)
    if declared is None:
        return {}
    if callable(declared) and not isinstance(declared, Mapping):
        declared = declared()
    if not isinstance(declared, Mapping):
        raise InvalidInput(f"agent {type(obj).__qualname__}: ek_config must be a mapping (or a "
                           f"method returning one) of JSON values, got {type(declared).__name__}")
    try:
        return json.loads(canonical_json(_plain(dict(declared))))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"agent {type(obj).__qualname__}: ek_config is not JSON ({exc}); "
                           "declare strings, numbers, booleans, lists and mappings only") from None


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _plain(dataclasses.asdict(v))
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


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
    w = _Walker()
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
        if _static_attr(agent, EK_CONFIG) is not None:
            declared.append("agent")
            state["ek_config"] = declared_config(agent)
        elif _numpy_array(agent) is None:
            try:
                state.update({f"self.{k}": v for k, v in _attributes(agent).items()})
            except Exception:  # pragma: no cover
                state["self"] = agent
    code_digest = _tree_digest(code)
    path = _name_of(agent if isinstance(agent, (types.FunctionType, types.MethodType, type))
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
        state={k: _tree_digest(v) for k, v in sorted(encoded.items())},
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
