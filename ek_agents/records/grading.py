"""How a run was graded, recorded in its manifest (``inputs.graded_by``) and read back.

A run graded by a named deterministic checker (``"output"``, ``"final_state"``) has no judge
error for labels to correct; a run graded by a judge -- a callable (which a run cannot store),
a :class:`~ek_agents.scoring.judge.JudgeMetric` / ``JudgeSignal``, or a registered name that
is not a deterministic oracle -- does. The record names the judge and digests its code, so the
labels commands (``plan-labels``, ``report --labels``, ``gate --labels``) and the audit know a
judged run from a checked one without the Python object.

>>> g = graded_by("output")
>>> g.kind, g.name, g.digest
('checker', 'output', None)
>>> g = graded_by(lambda ep, gold: ep.output == gold)
>>> g.kind, g.name.endswith("<lambda>"), len(g.digest)
('judge', True, 64)
"""
from __future__ import annotations

import inspect
from typing import Any, Optional, Union

from ..base import task_table
from ..labels import JUDGE_FREE_CHECKERS, GradedBy, judged
from ..scoring.judge import JudgeMetric, JudgeSignal
from ..store import sha256_hex
from .documents import UNSTORED
from ..identity import agent_name

__all__ = ["graded_by", "grading_of"]


def _source(fn: Any) -> Optional[str]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isclass(fn) else type(fn)
    try:
        return inspect.getsource(target)
    except (TypeError, OSError):
        return None


def _judge_of(check: Any) -> tuple[Optional[str], Optional[str]]:
    """``(name, digest of the code)`` of a judge given as an object."""
    if isinstance(check, (JudgeMetric, JudgeSignal)):
        inner = check.judge
        name = f"{type(check).__name__}:{agent_name(inner) or type(inner).__qualname__}"
        src = _source(inner)
        extra = f"\n{type(check).__name__}\n{check.criteria}\n{getattr(check, 'name', '')}"
        return name, None if src is None else sha256_hex((src + extra).encode("utf-8", "surrogatepass"))
    src = _source(check)
    return (agent_name(check) or repr(check)[:80],
            None if src is None else sha256_hex(src.encode("utf-8", "surrogatepass")))


def graded_by(check: Any, tasks: Any = None) -> GradedBy:
    """How ``check`` (the run's default checker) and ``tasks``' own checkers graded a run."""
    own = sorted({str(t.checker) for t in task_table(tasks).values() if t.checker is not None}) \
        if tasks is not None else []
    if check is None or isinstance(check, str):
        name = check if check is not None else "output"
        if judged(check):
            return GradedBy(kind="judge", name=name)
        judges = [c for c in own if c not in JUDGE_FREE_CHECKERS]
        if judges:
            return GradedBy(kind="judge", name=",".join(judges))
        return GradedBy(kind="checker", name=",".join(own) if own and not check else name)
    name, digest = _judge_of(check)
    return GradedBy(kind="judge", name=name, digest=digest)


def grading_of(inputs: Any) -> Union[GradedBy, str, None]:
    """What a stored run's manifest inputs say about how it was graded, for
    :func:`~ek_agents.labels.judged`: its recorded :class:`GradedBy`; for a run recorded
    without one, its checker's name -- or, when that is ``UNSTORED`` (a callable, which only a
    judge-like checker can be), a judge of unknown name."""
    recorded = getattr(inputs, "graded_by", None)
    if recorded is not None:
        return recorded
    check = getattr(inputs, "check", None)
    if check == UNSTORED:
        return GradedBy(kind="judge", name=UNSTORED)
    return check
