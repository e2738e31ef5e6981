"""DeepEval ``LLMTestCase``-shaped objects -> :class:`~ek_agents.base.Episode` (duck-typed).

Note DeepEval phones home by default (Confident-AI telemetry): set
``DEEPEVAL_TELEMETRY_OPT_OUT=YES`` before importing it if that matters to you; ek never
imports it.
"""
from __future__ import annotations

from typing import Any

from ..base import Episode, Step, Trajectory
from ..errors import BridgeError
from ._access import field, plain

__all__ = ["from_deepeval_test_case"]


def _calls(items: Any, where: str, *, observe: bool) -> list:
    if items is None:
        return []
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise BridgeError(f"{where} must be a list of ToolCall objects, got {type(items).__name__}")
    steps = []
    for i, tc in enumerate(items):
        name = field(tc, "name")
        if not isinstance(name, str) or not name:
            raise BridgeError(f"{where}[{i}] has no 'name' (got {name!r}); each ToolCall needs the tool's name")
        args = plain(field(tc, "input_parameters")) or {}
        if not isinstance(args, dict):
            raise BridgeError(f"{where}[{i}].input_parameters must be a dict of arguments, got {args!r:.80}")
        steps.append(Step(name, args, plain(field(tc, "output")) if observe else None))
    return steps


def from_deepeval_test_case(case: Any, *, task_id: Any = "") -> Episode:
    """Adapt a DeepEval ``LLMTestCase``-shaped object into an ``Episode`` (duck-typed).

    Reads ``.actual_output`` and ``.tools_called`` (items with ``name``, ``input_parameters``,
    ``output``); ``.expected_tools`` go to ``meta["expected_calls"]``, ``.input`` /
    ``.expected_output`` to ``meta``; ``task_id`` defaults to the case's ``name``.

    >>> from types import SimpleNamespace as NS
    >>> case = NS(input="2+2?", actual_output="4",
    ...           tools_called=[NS(name="calc", input_parameters={"expr": "2+2"}, output=4)])
    >>> ep = from_deepeval_test_case(case, task_id="q1")
    >>> ep.output, ep.calls, ep.trajectory.steps[0].observation
    ('4', (('calc', {'expr': '2+2'}),), 4)
    """
    if case is None or not (hasattr(case, "actual_output") or hasattr(case, "tools_called")
                            or isinstance(case, dict)):
        raise BridgeError(
            f"from_deepeval_test_case needs an LLMTestCase-like object with .actual_output and "
            f".tools_called, got {type(case).__name__}"
        )
    steps = _calls(field(case, "tools_called"), "case.tools_called", observe=True)
    expected = _calls(field(case, "expected_tools"), "case.expected_tools", observe=False)
    meta: dict = {}
    for key in ("input", "expected_output", "context", "retrieval_context"):
        value = plain(field(case, key))
        if value is not None:
            meta[key] = value
    if expected:
        meta["expected_calls"] = [{"tool": s.tool, "args": s.args} for s in expected]
    if field(case, "token_cost") is not None:
        meta["token_cost_usd"] = field(case, "token_cost")
    if field(case, "completion_time") is not None:
        meta["latency_s"] = field(case, "completion_time")
    tid = task_id if task_id not in ("", None) else (field(case, "name") or "")
    return Episode(task_id=str(tid), trajectory=Trajectory(tuple(steps)),
                   output=plain(field(case, "actual_output")), meta=meta)
