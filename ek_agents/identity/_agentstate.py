"""How an agent's code and state are digested: one canonical walk of values and code objects.

:func:`~ek_agents.identity.agentid.agent_identity` decides what of an agent is its code and what
its state; this module turns each into a deterministic JSON tree (a :class:`Walker` per agent)
and that tree into a sha256 (:func:`tree_digest`).

- **code**: a function by the sha256 of the source file that defines it (when there is one)
  and of its code object -- bytecode, constants, names, nested code objects; never a file
  path, line number or address. Code with no source file is identified by its code object
  alone, plus the module globals it reads (``Walker.function_state``).
- **values** go through one canonical encoding: JSON values, tuples / lists / dicts (key order
  free), sets (order free), enums (by class and name), pydantic models (their fields),
  dataclasses and plain objects (their ``__dict__`` and ``__slots__``), numpy arrays (dtype,
  shape and a streamed sha256 of the bytes), paths, functions and classes (by code, as
  above; a class with no source file or defined inside a function also by its own attributes
  and methods), modules (by name), and C-level values that pickle by value (datetimes,
  decimals, ``re`` patterns, ...) through their pickle recipe. Strings and bytes over
  :data:`BIG_BYTES` are hashed, not copied. An object that declares ``ek_config`` (a JSON
  mapping, or a method returning one: :func:`declared_config`) is encoded by that declaration
  instead of its attributes. An object met again in one walk (a cycle, or shared) is encoded
  as a reference to the path where it was first met.
- What cannot be digested -- a lock, a socket, an open file, a generator, a C object whose
  state Python cannot see, anything beyond :data:`MAX_DEPTH` / :data:`MAX_NODES` -- is never
  guessed: the walker records it (``Walker.undigestable``, the objects in ``Walker.live``).

Never in an encoding: ``id()``, addresses, hash-seeded set order or default ``repr``.

>>> w = Walker()
>>> w.value({"b": 1, "a": (1, 2.5), "s": {3, 1, 2}}, "x")
{'dict': {'a': {'tuple': [1, 2.5]}, 'b': 1, 's': {'set': [1, 2, 3]}}}
>>> tree_digest(w.value("OK", "y")) == tree_digest("OK"), w.undigestable
(True, [])
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
import types
from collections.abc import Mapping
from typing import Any, Optional

from ..core import canonical_json
from ..errors import InvalidInput

__all__ = ["Walker", "tree_digest", "declared_config", "name_of", "file_digest", "attributes", "static_attr",
           "numpy_array", "EK_CONFIG", "BIG_BYTES", "MAX_DEPTH", "MAX_NODES"]

#: The attribute an agent (or any object in its state) declares its configuration with.
EK_CONFIG = "ek_config"
#: Strings and bytes longer than this are hashed (streamed), not copied into the encoding.
BIG_BYTES = 4096
#: Deepest nesting walked; anything deeper is undigestable (an agent says what identifies it).
MAX_DEPTH = 64
#: Most objects walked for one agent; beyond, the rest is undigestable (declare ek_config).
MAX_NODES = 200_000


# --------------------------------------------------------------------------- digests

def _sha(data: Any) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_digest(tree: Any) -> str:
    """sha256 of a JSON tree's canonical JSON (a walk's encoding)."""
    return _sha(canonical_json(tree))


@functools.lru_cache(maxsize=512)
def _file_digest_cached(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_digest(path: Any) -> Optional[str]:
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


def name_of(obj: Any) -> str:
    """``module:qualname`` of a function, method or class (never an address)."""
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


class Walker:
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
                return {"builtin": name_of(x)}
            return {"builtin": x.__name__,
                    "self": self.encode(owner, f"{path}.__self__", depth + 1)}
        if isinstance(x, (types.MethodWrapperType,)):
            return {"builtin": x.__name__, "self": self.encode(x.__self__, f"{path}.__self__",
                                                               depth + 1)}
        if isinstance(x, _DESCRIPTORS):
            return {"descriptor": name_of(x)}
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
        return tree_digest({
            "name": co.co_qualname if hasattr(co, "co_qualname") else co.co_name,
            "args": [co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount],
            "flags": co.co_flags, "bytecode": _sha(co.co_code),
            "exceptions": _sha(getattr(co, "co_exceptiontable", b"")),
            "consts": consts, "names": list(co.co_names), "varnames": list(co.co_varnames),
            "freevars": list(co.co_freevars), "cellvars": list(co.co_cellvars)})

    def function_code(self, f: types.FunctionType, path: str, depth: int) -> dict:
        return {"function": name_of(f), "file": file_digest(f.__code__.co_filename),
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
        if file_digest(f.__code__.co_filename) is None:
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
            return done if done is not None else {"class_ref": name_of(c)}
        if c.__module__ == "builtins":
            return {"class": name_of(c)}
        self.classes[key] = None  # in progress: a method naming its own class
        self.keep.append(c)
        mod = sys.modules.get(c.__module__)
        file = file_digest(getattr(mod, "__file__", None))
        tree: dict = {"class": name_of(c), "file": file,
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
        if static_attr(x, EK_CONFIG) is not None:
            self.declared.append(path)
            return {"declared": self.cls(t, path, depth), "config": declared_config(x)}
        ndarray = numpy_array(x)
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
                for name, value in sorted(attributes(x).items())}

    def array(self, x: Any, path: str, depth: int) -> Any:
        head = {"ndarray": x.dtype.str, "dtype": str(x.dtype), "shape": list(x.shape)}
        if type(x).__name__ != "ndarray":
            head["class"] = self.cls(type(x), path, depth)
        if x.dtype.hasobject:
            return {**head, "items": self.encode(x.tolist(), path, depth + 1)}
        np = sys.modules["numpy"]
        data = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        return {**head, "sha256": _sha(data.data if data.ndim else data.tobytes())}


def static_attr(x: Any, name: str) -> Any:
    """``x.name`` found without running ``__getattr__`` (a proxy answers anything)."""
    try:
        return inspect.getattr_static(x, name, None)
    except Exception:  # pragma: no cover - getattr_static does not raise on a normal object
        return None


def numpy_array(x: Any) -> Any:
    """``x`` when it is a numpy array or scalar, else None."""
    np = sys.modules.get("numpy")  # numpy is never imported here: only met if the agent has it
    if np is None:
        return None
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, np.generic):
        return x
    return None


def attributes(x: Any) -> dict:
    """An object's ``__dict__`` and set ``__slots__`` (mangled names as stored), read without
    running ``__getattr__`` / properties."""
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


# --------------------------------------------------------------------------- declarations

def declared_config(obj: Any, *, by_repr: bool = False) -> dict:
    """The configuration ``obj`` declares: its ``ek_config`` attribute -- a JSON mapping, or a
    method returning one -- through JSON and back (what a stored fingerprint reads back).
    ``{}`` when it declares none. An error names ``obj`` by its class (by its ``repr``, cut at
    80 characters, with ``by_repr``: the agent itself, ``identity.agent_config``).

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
        raise InvalidInput(f"agent {_who(obj, by_repr)}: ek_config must be a mapping (or a "
                           f"method returning one) of JSON values, got {type(declared).__name__}")
    try:
        return json.loads(canonical_json(_plain(dict(declared))))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"agent {_who(obj, by_repr)}: ek_config is not JSON ({exc}); "
                           "declare strings, numbers, booleans, lists and mappings only") from None


def _who(obj: Any, by_repr: bool) -> str:
    return f"{obj!r:.80}" if by_repr else type(obj).__qualname__


def _plain(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _plain(dataclasses.asdict(v))
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v
