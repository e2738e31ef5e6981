"""Agent-evaluation data shapes: the episode (Layer B) and the task/tool grammar (Layer A).

Every shape is a frozen pydantic dataclass that keeps the spec's positional constructor and
round-trips through JSON with a ``schema_version``:

>>> ep = Episode("t1", Trajectory([Step("search", {"q": "cat"})]), output="meow",
...              cost=Cost(input_tokens=10, output_tokens=2), success=True)
>>> Episode.from_dict(ep.to_dict()) == ep
True
>>> ep.to_dict()["schema_version"]
1

Token accounting (what :class:`Cost` counts, the convention every bridge maps onto):

- ``input_tokens`` -- **all** prompt tokens, *including* cached reads and cache writes
  (OpenAI's ``prompt_tokens``; Anthropic's ``input_tokens + cache_read + cache_creation``).
- ``cached_input_tokens`` -- the part of ``input_tokens`` read from the prompt cache.
- ``cache_write_tokens`` -- the part of ``input_tokens`` written to the cache (Anthropic bills
  these at 1.25x input: a token kind of its own).
- ``output_tokens`` -- **all** completion tokens, *including* reasoning tokens.
- ``reasoning_tokens`` -- the part of ``output_tokens`` spent reasoning (billed once).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Optional, Union

from pydantic import Field, TypeAdapter, model_serializer

from .core import (FieldSpec, GraphGrammar, NodeType, Provenance, canonical_json, construct,
                   construct_from, copy_plain, shape)
from .errors import InvalidInput, SchemaVersionError
from .parsing import parse_json

__all__ = [
    "Step", "Trajectory", "Episode", "Cost", "ModelCall", "RunProvenance", "ToolSpec", "TaskSpec",
    "tool_grammar", "suite_grammar", "task_table", "as_call", "is_episode", "DEFAULT_TASK_VALUE",
    "DESTRUCTIVE_WEIGHT", "SCHEMA_VERSION", "JsonShape", "NonFiniteJson", "encode_nonfinite",
    "decode_nonfinite", "TOKEN_KINDS",
]

#: Default value of a completed task (the task-level analog of ``FieldSpec.importance``).
DEFAULT_TASK_VALUE: float = 1.0
#: Multiplier applied to a destructive tool's importance when it is not set explicitly.
DESTRUCTIVE_WEIGHT: float = 10.0
#: Version of the JSON form of every shape here; bumped on an incompatible change.
SCHEMA_VERSION: int = 1


@functools.lru_cache(maxsize=None)
def _adapter(cls: type) -> TypeAdapter:
    return TypeAdapter(cls)


class JsonShape:
    """``to_dict`` / ``from_dict`` / ``to_json`` / ``from_json`` with a ``schema_version``."""

    def to_dict(self) -> dict:
        """A JSON-safe dict of this shape, tagged with ``schema_version``."""
        d = _adapter(type(self)).dump_python(self, mode="json")
        d["schema_version"] = SCHEMA_VERSION
        return d

    def to_json(self) -> str:
        """Compact, key-sorted JSON (stable bytes for content addressing)."""
        return canonical_json(self.to_dict()).decode("ascii")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """Validate ``data`` (as written by :meth:`to_dict`) back into this shape."""
        if not isinstance(data, Mapping):
            raise InvalidInput(f"{cls.__name__}.from_dict needs a mapping, got {type(data).__name__}")
        d = dict(data)
        version = d.pop("schema_version", SCHEMA_VERSION)
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{cls.__name__} has schema_version {version!r}; this ek-agents reads up to "
                f"{SCHEMA_VERSION}: upgrade ek-agents to read it"
            )
        try:
            return _adapter(cls).validate_python(d)
        except Exception as exc:  # pydantic.ValidationError -> our tree, with the field named
            # one line (pydantic's message spans several): a CLI refusal prints one line
            raise InvalidInput(f"malformed {cls.__name__}: {' '.join(str(exc).split())}") from exc

    @classmethod
    def from_json(cls, text: Union[str, bytes]):
        """Parse JSON text written by :meth:`to_json`."""
        return cls.from_dict(parse_json(text, where=f"{cls.__name__}.from_json"))


_NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def encode_nonfinite(x: Any) -> Any:
    """``x`` with non-finite floats written as ``"Infinity"`` / ``"-Infinity"`` / ``"NaN"``
    (strict JSON has no such numbers).

    >>> encode_nonfinite({"c": [float("inf"), 1.0]})
    {'c': ['Infinity', 1.0]}
    """
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, Mapping):
        return {k: encode_nonfinite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [encode_nonfinite(v) for v in x]
    return x


def decode_nonfinite(x: Any) -> Any:
    """The inverse of :func:`encode_nonfinite`."""
    if isinstance(x, str) and x in _NONFINITE:
        return _NONFINITE[x]
    if isinstance(x, Mapping):
        return {k: decode_nonfinite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [decode_nonfinite(v) for v in x]
    return x


class NonFiniteJson(JsonShape):
    """A shape of plain fields (numbers, strings, tuples, dicts, lists) whose JSON form writes
    non-finite floats as ``"Infinity"`` / ``"-Infinity"`` / ``"NaN"`` and reads them back.

    Fields are encoded *before* pydantic dumps them: pydantic's JSON mode would turn an
    ``inf`` inside an untyped ``dict`` field into ``None``.
    """

    def to_dict(self) -> dict:
        """A JSON-safe dict (``allow_nan=False``-safe), tagged with ``schema_version``."""
        d = {f.name: encode_nonfinite(getattr(self, f.name)) for f in dataclasses.fields(self)}
        d["schema_version"] = SCHEMA_VERSION
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]):
        """Read back what :meth:`to_dict` wrote (non-finite strings become floats again)."""
        if not isinstance(data, Mapping):
            raise InvalidInput(f"{cls.__name__}.from_dict needs a mapping, got {type(data).__name__}")
        return super().from_dict(decode_nonfinite(dict(data)))


@shape()
class Step(JsonShape):
    """One step of a trajectory: a tool call and what came back.

    ``args`` is normally a dict; a bridge that met arguments which are not valid JSON keeps
    the raw string here and sets ``error``.

    >>> Step("search", {"q": "cat"}).call
    ('search', {'q': 'cat'})
    """

    tool: str
    args: Union[dict, str] = Field(default_factory=dict)
    observation: Any = None
    error: Optional[str] = None

    @property
    def call(self) -> tuple:
        """The ``(tool, args)`` pair -- what tool-call correctness actually compares."""
        return (self.tool, self.args)


@shape()
class Trajectory(JsonShape):
    """The ordered sequence of :class:`Step` s an agent took."""

    steps: tuple[Step, ...] = ()

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __getitem__(self, i: int) -> Step:
        return self.steps[i]

    @property
    def calls(self) -> tuple:
        """The ``(tool, args)`` pairs in call order."""
        return tuple(s.call for s in self.steps)

    @property
    def tools(self) -> tuple:
        """The tool names in call order."""
        return tuple(s.tool for s in self.steps)


#: The empty trajectory every episode without steps shares (frozen, so sharing it is safe;
#: built once instead of validated again for each such episode).
_NO_STEPS = Trajectory()


#: The token counts a :class:`ModelCall` and a :class:`Cost` share (a Cost with calls holds their sums).
TOKEN_KINDS: tuple[str, ...] = ("input_tokens", "output_tokens", "cached_input_tokens",
                                "reasoning_tokens", "cache_write_tokens")
#: A call's (or a Cost's) counts of each of :data:`TOKEN_KINDS`, as a tuple.
_TOKEN_COUNTS = operator.attrgetter(*TOKEN_KINDS)


def _check_token_kinds(who: str, x: Any) -> None:
    """The :class:`Cost` convention: cached + cache-write tokens are part of the input, reasoning
    tokens part of the output."""
    if x.cached_input_tokens + x.cache_write_tokens > x.input_tokens:
        raise InvalidInput(
            f"{who}: cached_input_tokens ({x.cached_input_tokens}) + cache_write_tokens "
            f"({x.cache_write_tokens}) exceed input_tokens ({x.input_tokens}); "
            "input_tokens counts ALL prompt tokens, cached ones included "
            "(use bridge.cost_from_usage to convert an Anthropic usage record)"
        )
    if x.reasoning_tokens > x.output_tokens:
        raise InvalidInput(
            f"{who}: reasoning_tokens ({x.reasoning_tokens}) exceed output_tokens "
            f"({x.output_tokens}); output_tokens counts ALL completion tokens, reasoning included"
        )


@shape()
class ModelCall(JsonShape):
    """One call to a model, as a trace or a usage record reports it: what a multi-model agent
    (a planner on a large model, a summariser on a small one) is billed call by call.

    Token counts follow :class:`Cost`'s convention (see the module docstring).

    >>> c = ModelCall("gpt-4o-mini", provider="openai", input_tokens=120, output_tokens=30,
    ...               cached_input_tokens=100)
    >>> ModelCall.from_json(c.to_json()) == c
    True
    """

    model: str
    """The model that answered (the response's model); the requested one when the answer does not say."""
    requested_model: Optional[str] = None
    """The model the call asked for (``gen_ai.request.model``), when known."""
    provider: str = ""
    """Who served it: ``gen_ai.provider.name`` / ``gen_ai.system`` / ``llm.provider`` (``"openai"``, ...)."""
    input_tokens: int = Field(default=0, ge=0)
    """ALL prompt tokens of the call, cached reads and cache writes included."""
    output_tokens: int = Field(default=0, ge=0)
    """ALL completion tokens of the call, reasoning included."""
    cached_input_tokens: int = Field(default=0, ge=0)
    """The part of ``input_tokens`` read from the prompt cache."""
    reasoning_tokens: int = Field(default=0, ge=0)
    """The part of ``output_tokens`` spent reasoning."""
    cache_write_tokens: int = Field(default=0, ge=0)
    """The part of ``input_tokens`` written to the prompt cache."""
    cached_known: bool = True
    """``False``: the source did not report cached-token counts, so the call is billed at full
    input rates -- an UPPER BOUND on what it cost, and reports say so."""
    source: str = ""
    """Where the call was read from (an instrumentation scope name, a bridge): informational."""

    def __post_init__(self) -> None:
        if not self.model:
            raise InvalidInput(
                f"ModelCall: model is empty (requested_model={self.requested_model!r}); give the "
                "model that answered, or the requested one when the answer does not say")
        _check_token_kinds(f"ModelCall({self.model!r})", self)


@shape()
class Cost(JsonShape):
    """What one episode consumed: tokens (by kind), retries, and wall-clock.

    See the module docstring for which counts include which. ``calls`` optionally records each
    model call (:class:`ModelCall`; built with :meth:`of_calls`), the token counts then being
    their sums. ``Cost`` s add up (their calls concatenated; tokens outside any recorded call
    cannot join a Cost that records its calls):

    >>> (Cost(input_tokens=100, output_tokens=50) + Cost(input_tokens=10, retries=1)).input_tokens
    110
    """

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)
    reasoning_tokens: int = Field(default=0, ge=0)
    retries: int = Field(default=0, ge=0)
    latency_s: Optional[float] = Field(default=None, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    calls: tuple[ModelCall, ...] = ()
    """Each model call, when the source reports them one by one (a trace, per-call usage): the
    episode is then billed call by call, each at its own model's rates, and the token counts
    above are the sums over the calls (build it with :meth:`Cost.of_calls`). Empty: one tally
    billed at the episode's model rates. The JSON form omits an empty ``calls``."""

    def __post_init__(self) -> None:
        _check_token_kinds("Cost", self)
        if self.calls:
            sums = {k: sum(getattr(c, k) for c in self.calls) for k in TOKEN_KINDS}
            off = {k: (getattr(self, k), v) for k, v in sums.items() if getattr(self, k) != v}
            if off:
                raise InvalidInput(
                    f"Cost: its token counts differ from the sums over its {len(self.calls)} "
                    f"call(s) ({', '.join(f'{k}={a} but the calls sum to {b}' for k, (a, b) in off.items())}); "
                    "each model call is counted once: build it with Cost.of_calls(calls)")

    @model_serializer(mode="wrap")
    def _omit_empty_calls(self, handler: Any) -> Any:
        # a Cost without calls writes the JSON it always wrote (stored digests unchanged)
        d = handler(self)
        if not self.calls and isinstance(d, dict):
            d.pop("calls", None)
        return d

    @classmethod
    def of_calls(cls, calls: Iterable[Any], *, retries: int = 0,
                 latency_s: Optional[float] = None) -> "Cost":
        """The Cost of these model calls: every token count the sum over ``calls`` (each a
        :class:`ModelCall` or its dict form), the calls kept for per-call billing.

        >>> c = Cost.of_calls([ModelCall("gpt-4o", input_tokens=900, output_tokens=80),
        ...                    ModelCall("gpt-4o-mini", input_tokens=400, output_tokens=60)])
        >>> c.input_tokens, c.output_tokens, len(c.calls)
        (1300, 140, 2)
        """
        calls = tuple(calls)
        if not all(map(isinstance, calls, itertools.repeat(ModelCall))):
            calls = tuple(c if isinstance(c, ModelCall) else ModelCall.from_dict(c) if isinstance(c, Mapping)
                          else _not_a_call(c) for c in calls)
        # each kind's sum over the calls, the rows and columns walked in C (a reader builds
        # one Cost per episode)
        inp, out, cached, reasoning, write = map(sum, zip(*map(_TOKEN_COUNTS, calls))) if calls \
            else (0, 0, 0, 0, 0)
        if cls is Cost and type(retries) is int and retries >= 0 and (
                latency_s is None or (type(latency_s) is float and latency_s >= 0)):
            # not validated again: the sums of validated calls meet Cost's convention and are
            # the sums __post_init__ would check (a trace reader builds one per episode)
            return construct_from(Cost, {
                "input_tokens": inp, "output_tokens": out, "cached_input_tokens": cached,
                "reasoning_tokens": reasoning, "retries": retries, "latency_s": latency_s,
                "cache_write_tokens": write, "calls": calls})
        return cls(input_tokens=inp, output_tokens=out, cached_input_tokens=cached,
                   reasoning_tokens=reasoning, retries=retries, latency_s=latency_s,
                   cache_write_tokens=write, calls=calls)

    @property
    def cached_known(self) -> bool:
        """``False`` when some call did not report its cached tokens: billed at full input rates,
        the dollars are an upper bound."""
        return all(c.cached_known for c in self.calls)

    def __add__(self, other: "Cost") -> "Cost":
        if not isinstance(other, Cost):
            return NotImplemented
        lat = None if self.latency_s is None and other.latency_s is None else \
            (self.latency_s or 0.0) + (other.latency_s or 0.0)
        if self.calls or other.calls:
            for side in (self, other):
                if not side.calls and any(getattr(side, k) for k in TOKEN_KINDS):
                    raise InvalidInput(
                        f"Cost + Cost: one side records its model calls, the other has "
                        f"{side.input_tokens} input / {side.output_tokens} output tokens from no "
                        "recorded call; record those tokens as a ModelCall (Cost.of_calls) so "
                        "every token is billed at the rates of the model that spent it")
        return Cost(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            retries=self.retries + other.retries,
            latency_s=lat,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            calls=self.calls + other.calls,
        )

    def __radd__(self, other: Any) -> "Cost":
        if other == 0:  # so that sum(costs) works
            return self
        return NotImplemented

    @property
    def total_tokens(self) -> int:
        """All billed tokens (a rough size proxy -- *not* a cost; see ``dollars()``)."""
        return self.input_tokens + self.output_tokens


def _not_a_call(x: Any) -> ModelCall:
    raise InvalidInput(f"Cost.of_calls: a call must be a ModelCall or its dict form, got {x!r:.80}")


@shape()
class RunProvenance(JsonShape):
    """The hidden eval variables that decide whether two runs are even comparable."""

    seed: Optional[int] = None
    temperature: Optional[float] = None
    model: str = ""
    simulator: str = ""
    suite_version: str = ""
    scaffold: str = ""

    def comparability_key(self) -> tuple:
        """The fields that must match for two runs to be comparable (seed excluded).

        >>> RunProvenance(seed=1, model="m", simulator="sim-v2").comparability_key()
        ('sim-v2', '', '')
        """
        return (self.simulator, self.suite_version, self.scaffold)


@shape()
class Episode(JsonShape):
    """Layer B: one agent run over one task -- the object agent evaluation scores."""

    task_id: str = ""
    trajectory: Trajectory = Field(default_factory=lambda: _NO_STEPS)
    output: Any = None
    final_state: Any = None
    cost: Optional[Cost] = None
    success: Optional[bool] = None
    run: Optional[RunProvenance] = None
    provenance: Optional[Provenance] = None
    meta: dict = Field(default_factory=dict)

    @property
    def calls(self) -> tuple:
        """The ``(tool, args)`` pairs taken, in order."""
        return self.trajectory.calls

    def graded(self, success: Optional[bool]) -> "Episode":
        """A copy with ``success`` set (never mutates; ``meta`` is copied, not shared).

        >>> e = Episode("t", meta={"k": [1]}); g = e.graded(True)
        >>> g.success, e.success, g.meta is e.meta
        (True, None, False)

        Every field but ``success`` and ``meta`` is this (validated) episode's own, so an
        ``Episode`` graded ``True`` / ``False`` / ``None`` is built without validating it
        again (``core.construct``); any other ``success`` (``1``, a numpy bool), or a subclass,
        goes through the validating ``dataclasses.replace``.
        """
        meta = copy_plain(self.meta)
        if type(self) is Episode and (success is None or type(success) is bool):
            own = self.__dict__
            return construct(Episode, **{name: own[name] for name in _EPISODE_FIELDS},
                             success=success, meta=meta)
        return dataclasses.replace(self, success=success, meta=meta)

    def replace(self, **changes: Any) -> "Episode":
        """A copy with ``changes`` applied (``meta`` deep-copied unless given)."""
        if "meta" not in changes:  # not setdefault: that would deep-copy even when meta is given
            changes["meta"] = copy_plain(self.meta)
        return dataclasses.replace(self, **changes)


_EPISODE_FIELDS = tuple(f for f in Episode.__pydantic_fields__ if f not in ("success", "meta"))


@shape()
class ToolSpec(JsonShape):
    """One tool the agent may call: its argument schema and its error costs."""

    name: str
    params: Mapping[str, FieldSpec] = Field(default_factory=dict)
    importance: Optional[float] = None
    destructive: bool = False
    description: str = ""

    @property
    def weight(self) -> float:
        """The call-level cost weight (explicit, else destructive-aware default)."""
        if self.importance is not None:
            return float(self.importance)
        return DESTRUCTIVE_WEIGHT * 1.0 if self.destructive else 1.0

    @property
    def required(self) -> tuple:
        """Names of the arguments a call must supply."""
        return tuple(n for n, f in self.params.items() if f.required)

    def to_node_type(self) -> NodeType:
        """Render this tool as a Layer-A :class:`~ek_agents.core.NodeType` (args as fields)."""
        return NodeType(self.name, dict(self.params), self.weight)


@shape()
class TaskSpec(JsonShape):
    """One task in a suite: its input, its oracle, its value, and its allowed tools.

    ``checker`` optionally names the oracle for this task (``"final_state"``, ...), and
    ``meta`` carries anything else a suite file declares.
    """

    task_id: str
    input: Any = None
    gold: Any = None
    value: float = DEFAULT_TASK_VALUE
    tools: tuple[ToolSpec, ...] = ()
    slice: Optional[str] = None
    checker: Optional[str] = None
    meta: dict = Field(default_factory=dict)

    def grammar(self) -> GraphGrammar:
        """The Layer-A grammar for this task's tool set (built once per task: the spec is frozen)."""
        g = self.__dict__.get("_grammar")
        if g is None:
            g = tool_grammar(*self.tools)
            object.__setattr__(self, "_grammar", g)
        return g


def task_table(tasks: Any) -> dict[str, TaskSpec]:
    """``{task_id: TaskSpec}`` from TaskSpecs, dicts, a mapping, or a Suite (``.tasks``); ids must
    be unique and the suite non-empty.

    >>> list(task_table([TaskSpec("a"), {"task_id": "b"}]))
    ['a', 'b']
    """
    if hasattr(tasks, "tasks") and not isinstance(tasks, Mapping):
        tasks = tasks.tasks
    items = list(tasks.values()) if isinstance(tasks, Mapping) else list(tasks)
    table: dict[str, TaskSpec] = {}
    for t in items:
        if isinstance(t, Mapping):
            t = TaskSpec.from_dict(t)
        if not isinstance(t, TaskSpec):
            raise InvalidInput(f"tasks must be TaskSpecs (or a {{task_id: TaskSpec}} mapping), got {t!r:.80}")
        if t.task_id in table:
            raise InvalidInput(f"task_id {t.task_id!r} appears twice in tasks; task ids must be unique")
        table[t.task_id] = t
    if not table:
        raise InvalidInput("tasks is empty: give at least one TaskSpec")
    return table


def tool_grammar(*tools: ToolSpec) -> GraphGrammar:
    """Build the Layer-A :class:`GraphGrammar` from :class:`ToolSpec` s.

    Node cost = the tool's call weight, field cost = the argument's importance.
    """
    return GraphGrammar({t.name: t.to_node_type() for t in tools})


def suite_grammar(tasks: Union[Iterable[TaskSpec], Mapping[str, TaskSpec]]) -> GraphGrammar:
    """The union grammar over a whole task suite (later tools win on name collision)."""
    specs = tasks.values() if isinstance(tasks, Mapping) else tasks
    tools: dict[str, ToolSpec] = {}
    for t in specs:
        for tool in t.tools:
            tools[tool.name] = tool
    return tool_grammar(*tools.values())


def as_call(x: Any) -> tuple:
    """Coerce a :class:`Step`, ``(tool, args)`` tuple, ``{"tool":…, "args":…}`` dict or a bare
    tool name into a ``(tool, args)`` pair."""
    if isinstance(x, Step):
        return x.call
    if isinstance(x, str):
        return (x, {})
    if isinstance(x, Mapping):
        name = x.get("tool", x.get("name"))
        if not isinstance(name, str):
            raise InvalidInput(f"as_call: a call dict needs a 'tool' (or 'name') string, got {dict(x)!r}")
        args = x.get("args", x.get("arguments", {}))
        return (name, {} if args is None else args)
    if isinstance(x, Sequence) and len(x) == 2 and isinstance(x[0], str):
        return (x[0], {} if x[1] is None else x[1])
    if hasattr(x, "tool") and hasattr(x, "args"):
        return (x.tool, x.args)
    raise InvalidInput(
        f"as_call: cannot read a tool call from {x!r}; give a Step, a (tool, args) pair, "
        "a {'tool': ..., 'args': ...} dict or a tool name"
    )


def is_episode(x: Any) -> bool:
    """Duck-typed episode check (it checks the *shape*, not the class)."""
    return isinstance(x, Episode) or all(hasattr(x, a) for a in ("task_id", "trajectory", "success", "cost"))
