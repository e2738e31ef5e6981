"""Task success and cost per successful task: the checkers and the two metrics built on them.

A **checker** is the success oracle ``(episode, gold) -> bool``. Three are registered by name:

==================  ===================================================================
``"output"``        :func:`output_match` -- canonicalized exact match on the final answer
``"final_state"``   :func:`final_state_match` -- the world's end state equals the goal state
``"recorded"``      :func:`recorded_success` -- trust ``episode.success`` set elsewhere
==================  ===================================================================

Any ``(episode, gold) -> bool`` callable works too. An episode whose ``meta`` carries an
``"error"`` never counts as a success, whatever the checker says.

>>> from ek_agents.base import Episode, TaskSpec
>>> eps = grade([Episode("t1", output=" HI "), Episode("t2", output="no")],
...             [TaskSpec("t1", gold="hi"), TaskSpec("t2", gold="yes")])
>>> [e.success for e in eps]
[True, False]
>>> m = TaskSuccessMetric()
>>> m.aggregate([m.score(e, t) for e, t in [(Episode(output="a"), "A"), (Episode(output="b"), "c")]])
0.5
"""
from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Mapping, Sequence, Set
from typing import Any, Callable, Optional, Protocol, runtime_checkable

from ..base import Episode, TaskSpec, is_episode, task_table
from ..core import GraphGrammar, Score, canonicalize
from ..errors import InvalidInput, UnknownName, did_you_mean
from .judge import judge_checker

__all__ = [
    "Checker", "output_match", "final_state_match", "recorded_success", "CHECKERS",
    "register_checker", "get_checker", "grade", "state_equal", "is_errored",
    "TaskSuccessMetric", "CostPerSuccessMetric", "GOLD_KEYS",
]

#: Keys that make a gold *mapping* a wrapper (``{"output": ..., "final_state": ..., "calls": ...}``)
#: rather than the literal expected value: a gold dict whose keys are all in this set and which
#: holds the key a checker reads is unwrapped by that checker.
GOLD_KEYS = frozenset({"output", "final_state", "calls"})


@runtime_checkable
class Checker(Protocol):
    """The success oracle: did this episode leave the world in the required state?

    Injected, never owned by ek-agents: a real suite plugs in a database-state comparison, a
    hidden-test runner, or a programmatic predicate, run isolated from the agent.
    """

    def __call__(self, episode: Any, gold: Any) -> bool: ...


def is_errored(episode: Any) -> bool:
    """True when the episode records an error (``meta["error"]``): it never counts as success."""
    meta = getattr(episode, "meta", None)
    return (type(meta) is dict or isinstance(meta, Mapping)) and bool(meta.get("error"))


def _unwrap(gold: Any, key: str) -> Any:
    if isinstance(gold, Mapping) and key in gold and set(gold) <= GOLD_KEYS:
        return gold[key]
    return gold


def _gold_part(episode: Any, gold: Any, key: str) -> Any:
    if type(gold) is str:  # the common gold: no wrapper to look into
        return gold
    part = _unwrap(gold, key)
    wrapper_without_key = isinstance(gold, Mapping) and gold and set(gold) <= GOLD_KEYS and key not in gold
    if part is None or wrapper_without_key:
        raise InvalidInput(
            f"{key} checker: task {getattr(episode, 'task_id', '')!r} has no gold {key} (gold is "
            f"{gold!r}); give the task a gold {key!r} or choose another checker "
            "('output', 'final_state', 'recorded', or a callable)"
        )
    return part


# --------------------------------------------------------------------------- state equality

def _freeze(x: Any, canon: Optional[Callable[[Any], Any]] = None) -> Any:
    """A hashable normal form in which equal states are equal (see :func:`state_equal`)."""
    if x is None:
        return ("none",)
    if isinstance(x, bool):
        return ("bool", x)
    if isinstance(x, (int, float)):
        return ("num", x)  # 1 == 1.0 and hash(1) == hash(1.0)
    if isinstance(x, str):
        return ("str", canon(x) if canon is not None else x)
    if isinstance(x, (bytes, bytearray)):
        return ("bytes", bytes(x))
    if isinstance(x, Mapping):
        return ("map", frozenset((_freeze(k, canon), _freeze(v, canon)) for k, v in x.items()))
    if isinstance(x, (Set, frozenset)):
        return ("set", frozenset(_freeze(v, canon) for v in x))
    if isinstance(x, Sequence):
        return ("seq", tuple(_freeze(v, canon) for v in x))
    if type(x).__module__ == "numpy":  # numpy scalars / arrays without importing numpy
        return _freeze(x.tolist(), canon)
    to_dict = getattr(x, "to_dict", None)
    if callable(to_dict):
        return _freeze(to_dict(), canon)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return ("obj", type(x).__name__, _freeze(dataclasses.asdict(x), canon))
    try:
        hash(x)
    except TypeError:
        return ("repr", type(x).__name__, repr(x))
    return ("other", x)


def state_equal(a: Any, b: Any, *, canon: Optional[Callable[[Any], Any]] = None) -> bool:
    """Structural equality of two world states (JSON-like values).

    Not differences: mapping key order, ``list`` vs ``tuple``, ``1`` vs ``1.0``.
    Differences: ``True`` vs ``1`` (a bool is never a number), ``"1"`` vs ``1``, a ``set``
    vs a ``list``, a missing key vs a key holding ``None``. Numbers compare exactly
    (``0.1 + 0.2`` is not ``0.3``). ``canon``, when given, is applied to every string first.

    >>> state_equal({"a": [1, 2], "b": True}, {"b": True, "a": (1.0, 2)})
    True
    >>> state_equal({"paid": True}, {"paid": 1}), state_equal({"n": 1}, {"n": "1"})
    (False, False)
    """
    return _freeze(a, canon) == _freeze(b, canon)


# --------------------------------------------------------------------------- the checkers

def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def output_match(episode: Any, gold: Any) -> bool:
    """Canonicalized exact match on the final answer (the GAIA-style oracle).

    ``gold`` is the expected answer, or a mapping ``{"output": answer, ...}`` (keys from
    :data:`GOLD_KEYS`). Strings compare after :func:`~ek_agents.core.canonicalize` (NFKC,
    case-fold, whitespace collapsed), also inside lists and dicts; otherwise the rules of
    :func:`state_equal` apply. A number and a string match when the string parses to that
    number (``42`` vs ``" 42 "``). A gold of ``None`` is refused: an unset oracle would pass
    every agent that returns nothing.

    >>> from ek_agents.base import Episode
    >>> output_match(Episode(output="Paris\\n"), "paris"), output_match(Episode(output="Rome"), {"output": "Paris"})
    (True, False)
    """
    if is_errored(episode):
        return False
    expected = _gold_part(episode, gold, "output")
    got = getattr(episode, "output", episode) if is_episode(episode) else episode
    if type(got) is str and type(expected) is str:  # what state_equal does for two strings
        return got == expected or canonicalize(got) == canonicalize(expected)
    if isinstance(got, str) and _number(expected) or isinstance(expected, str) and _number(got):
        text, num = (got, expected) if isinstance(got, str) else (expected, got)
        try:
            return float(canonicalize(text)) == num
        except ValueError:
            return False
    return state_equal(got, expected, canon=canonicalize)


def final_state_match(episode: Any, gold: Any) -> bool:
    """Compare the episode's **final state** with the goal state (the tau-bench oracle).

    ``gold`` is the goal state itself, or a mapping ``{"final_state": goal, ...}`` whose keys
    are all in :data:`GOLD_KEYS` (so a suite can keep ``output`` and ``final_state`` golds side
    by side). Equality is :func:`state_equal`: key order, list vs tuple and ``1`` vs ``1.0``
    are not differences; ``True`` vs ``1`` is one. Strings compare exactly (no case folding:
    a state is data, not prose).

    >>> from ek_agents.base import Episode
    >>> ep = Episode(final_state={"orders": [{"id": 7, "status": "refunded", "amount": 20}]})
    >>> final_state_match(ep, {"final_state": {"orders": ({"amount": 20.0, "status": "refunded", "id": 7},)}})
    True
    """
    if is_errored(episode):
        return False
    goal = _gold_part(episode, gold, "final_state")
    return state_equal(getattr(episode, "final_state", None), goal)


def recorded_success(episode: Any, gold: Any) -> bool:
    """Trust a ``success`` already recorded on the episode (e.g. by an external harness).

    An episode never graded (``success is None``) is refused rather than read as a failure.

    >>> from ek_agents.base import Episode
    >>> recorded_success(Episode(success=True), None), recorded_success(Episode(success=False), None)
    (True, False)
    """
    if is_errored(episode):
        return False
    success = getattr(episode, "success", None)
    if success is None:
        raise InvalidInput(
            f"recorded_success: episode of task {getattr(episode, 'task_id', '')!r} has no recorded "
            "success (success is None); grade it with a real checker ('output', 'final_state', "
            "or a callable) instead of 'recorded'"
        )
    return bool(success)


#: The checker registry: name -> ``(episode, gold) -> bool``.
CHECKERS: dict[str, Callable[[Any, Any], bool]] = {
    "output": output_match,
    "final_state": final_state_match,
    "recorded": recorded_success,
}
_ALIASES = {"output_match": "output", "final_state_match": "final_state",
            "recorded_success": "recorded", "state": "final_state"}


def register_checker(name: str, fn: Callable[[Any, Any], bool]) -> None:
    """Register ``fn`` under ``name`` so suites and the CLI can name it."""
    if not isinstance(name, str) or not name or not callable(fn):
        raise InvalidInput(f"register_checker needs a non-empty name and a callable, got {name!r}, {fn!r}")
    CHECKERS[name] = fn


def _as_bool(result: Any, who: str) -> bool:
    if isinstance(result, bool):
        return result
    if type(result).__name__ in ("bool_", "bool") and type(result).__module__ == "numpy":
        return bool(result)
    raise InvalidInput(
        f"checker {who} returned {result!r} ({type(result).__name__}); a checker must return "
        "True or False (threshold a score yourself, e.g. lambda ep, gold: score(ep, gold) >= 0.5)"
    )


def _checked(check: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """``check`` wrapped so that an errored episode is never a success and a non-bool answer
    is refused (the built-in checkers do both themselves)."""
    who = getattr(check, "__name__", repr(check))

    def checker(episode: Any, gold: Any) -> bool:
        if is_errored(episode):
            return False
        return _as_bool(check(episode, gold), who)

    checker.__name__ = f"checked_{who}"
    checker.__wrapped__ = check  # type: ignore[attr-defined]
    return checker


def _two_args(check: Callable) -> None:
    """Refuse a callable that cannot be called as ``check(episode, gold)`` (said before any
    trial runs, not after every trial has been paid for)."""
    try:
        sig = inspect.signature(check)
    except (TypeError, ValueError):  # a builtin without a signature: trusted as given
        return
    try:
        sig.bind(None, None)
    except TypeError as exc:
        raise InvalidInput(f"check={getattr(check, '__name__', check)!r} takes {sig}: a checker "
                           f"is called as check(episode, gold) -> bool ({exc}); wrap it, e.g. "
                           "lambda ep, gold: fn(ep.output)") from None


def get_checker(check: Any = None) -> Callable[[Any, Any], bool]:
    """Resolve ``check`` to an ``(episode, gold) -> bool`` callable.

    ``None`` -> :func:`output_match`; a registered name; a
    :class:`~ek_agents.scoring.judge.JudgeMetric` / :class:`~ek_agents.scoring.judge.JudgeSignal`
    (:func:`~ek_agents.scoring.judge.judge_checker`); or any callable that takes
    ``(episode, gold)`` (one that cannot is refused here). Whatever it
    resolves to, an errored episode is never a success and a non-bool answer is refused
    (a registered or given callable is wrapped to enforce both).

    >>> get_checker("final_state") is final_state_match
    True
    >>> get_checker("outptu")
    Traceback (most recent call last):
    ...
    ek_agents.errors.UnknownName: unknown checker 'outptu'; did you mean 'output'? (registered: 'final_state', 'output', 'recorded')
    """
    if check is None:
        return output_match
    if isinstance(check, str):
        fn = CHECKERS.get(check) or CHECKERS.get(_ALIASES.get(check, ""))
        if fn is None:
            names = sorted(CHECKERS)
            raise UnknownName(
                f"unknown checker {check!r}{did_you_mean(check, names)} "
                f"(registered: {', '.join(map(repr, names))})"
            )
        check = fn
    if check is output_match or check is final_state_match or check is recorded_success:
        return check
    judged = judge_checker(check)
    if judged is not None:
        return _checked(judged)
    if isinstance(check, type):
        raise InvalidInput(f"check={check.__name__}: a class, not a checker; pass an instance "
                           f"(e.g. {check.__name__}(judge)) or an (episode, gold) -> bool callable")
    if callable(check):
        _two_args(check)
        return _checked(check)
    raise InvalidInput(
        f"a checker must be a name ({', '.join(map(repr, sorted(CHECKERS)))}) or an "
        f"(episode, gold) -> bool callable, got {check!r}"
    )


def grade(episodes: Any, tasks: Any, *, check: Any = None) -> list[Episode]:
    """Grade each episode against its task's gold with ``task.checker or check``.

    Returns new episodes (``success`` set); the inputs are never mutated. An errored episode
    (``meta["error"]``) stays ``success=False``. ``tasks`` is a list of :class:`TaskSpec` or a
    ``{task_id: TaskSpec}`` mapping; an episode whose task is missing raises
    :class:`~ek_agents.errors.InvalidInput` naming it.
    """
    table = task_table(tasks)
    cache: dict = {}
    out = []
    for ep in episodes:
        task = table.get(ep.task_id)
        if task is None:
            raise InvalidInput(
                f"grade: episode for task {ep.task_id!r} has no task in the suite"
                f"{did_you_mean(str(ep.task_id), [str(k) for k in table])} "
                f"({len(table)} tasks given)"
            )
        name = getattr(task, "checker", None) or check
        key = name if isinstance(name, (str, type(None))) else id(name)
        fn = cache.get(key)
        if fn is None:
            fn = cache[key] = get_checker(name)
        out.append(ep.graded(fn(ep, task.gold)))
    return out


# --------------------------------------------------------------------------- the metrics

def _as_episode(pred: Any) -> Any:
    return pred if is_episode(pred) else Episode(output=pred)


def _gold_of(gold: Any) -> Any:
    return gold.gold if isinstance(gold, TaskSpec) else gold


class TaskSuccessMetric:
    """Did the episode complete the task? (``1.0`` / ``0.0``; aggregate = success rate).

    ``check`` is a :class:`Checker`: a registered name (``"output"``, ``"final_state"``,
    ``"recorded"``) or any ``(episode, gold) -> bool`` callable; default ``"output"``.
    ``pred`` is an :class:`~ek_agents.base.Episode` (a bare answer is wrapped as its output);
    ``gold`` is the task's gold (or the :class:`~ek_agents.base.TaskSpec`).

    >>> from ek_agents.base import Episode
    >>> TaskSuccessMetric().score(Episode(output="HI"), "hi").value
    1.0
    """

    higher_is_better = True
    name = "task_success"

    def __init__(self, check: Any = None) -> None:
        self.check = check
        self._checker = get_checker(check)

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        ok = self._checker(_as_episode(pred), _gold_of(gold))
        return Score(1.0 if ok else 0.0, {"success": bool(ok)})

    def aggregate(self, scores: Sequence[Score]) -> float:
        """The success **rate** over the corpus."""
        scores = list(scores)
        if not scores:
            raise InvalidInput("TaskSuccessMetric.aggregate: no scores given; a success rate of nothing is undefined")
        return sum(1.0 for s in scores if s.detail.get("success", s.value >= 1.0)) / len(scores)

    def __repr__(self) -> str:
        return f"TaskSuccessMetric(check={self.check!r})"


class CostPerSuccessMetric:
    """Cost-of-Pass: dollars per **successfully completed** task (**lower is better**).

    The per-episode ``Score.value`` is that episode's dollar cost (``detail`` holds
    ``dollars`` and ``success``); the corpus :meth:`aggregate` is
    ``sum(dollars) / sum(successes)`` -- a ratio of sums, ``inf`` when nothing succeeded.

    An episode without a :class:`~ek_agents.base.Cost` has *unknown* dollars: its value is NaN,
    ``detail["dollars"]`` is ``None``, and :meth:`aggregate` refuses the corpus (an unknown
    cost is not free) unless ``on_missing_cost="skip"``, which leaves such episodes out of
    both sums and counts them in ``self.last_skipped``.

    >>> from ek_agents.base import Cost, Episode
    >>> from ek_agents.cost import per_million
    >>> m = CostPerSuccessMetric(price=per_million(1.0, 1.0))
    >>> eps = [(Episode(output="a", cost=Cost(input_tokens=1_000_000)), "a"),
    ...        (Episode(output="b", cost=Cost(input_tokens=1_000_000)), "x")]
    >>> m.aggregate([m.score(e, g) for e, g in eps])
    2.0
    """

    higher_is_better = False
    name = "cost_per_success"

    def __init__(self, check: Any = None, *, price: Any = None, prices: Optional[Mapping] = None,
                 on_missing_cost: str = "raise") -> None:
        if on_missing_cost not in ("raise", "skip"):
            raise InvalidInput(
                f"CostPerSuccessMetric: on_missing_cost must be 'raise' or 'skip', got {on_missing_cost!r}"
                f"{did_you_mean(str(on_missing_cost), ['raise', 'skip'])}"
            )
        self.check = check
        self.price = price
        self.prices = prices
        self.on_missing_cost = on_missing_cost
        self.last_skipped = 0
        self._checker = get_checker(check)

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        from ..cost import episode_dollars  # lazy: importing cost (and stats) is ~15 ms

        ep = _as_episode(pred)
        ok = self._checker(ep, _gold_of(gold))
        d = episode_dollars(ep, prices=self.prices, price=self.price)
        value = math.nan if d is None else float(d)
        return Score(value, {"dollars": None if d is None else float(d), "success": bool(ok)})

    def aggregate(self, scores: Sequence[Score]) -> float:
        """``sum(dollars) / sum(successes)`` -- a ratio of two sums, never a mean of ratios."""
        scores = list(scores)
        if not scores:
            raise InvalidInput("CostPerSuccessMetric.aggregate: no scores given")
        missing = [s for s in scores if s.detail.get("dollars") is None]
        self.last_skipped = len(missing)
        if missing and self.on_missing_cost == "raise":
            raise InvalidInput(
                f"CostPerSuccessMetric: {len(missing)} of {len(scores)} episodes carry no Cost, so "
                "their dollars are unknown (not free); record a Cost on every episode, or pass "
                "on_missing_cost='skip' to leave them out of both sums"
            )
        from ..cost import cost_of_pass  # lazy, as in score(): importing cost is ~15 ms

        known = [s for s in scores if s.detail.get("dollars") is not None]
        return cost_of_pass(sum(float(s.detail["dollars"]) for s in known),
                            sum(1 for s in known if s.detail.get("success")))

    def __repr__(self) -> str:
        return f"CostPerSuccessMetric(check={self.check!r}, price={self.price!r})"

