"""``as_agent``: a plain ``input -> answer`` function as a ``TaskSpec -> Episode`` agent."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ..base import Episode, TaskSpec, is_episode
from ..errors import InvalidInput

__all__ = ["as_agent"]


def _episode(task: TaskSpec, answer: Any) -> Episode:
    if is_episode(answer):  # the function already built an Episode: keep it, fill the id
        return answer if answer.task_id else answer.replace(task_id=task.task_id)
    return Episode(task_id=task.task_id, output=answer)


def as_agent(fn: Callable[[Any], Any]) -> Callable[[TaskSpec], Episode]:
    """Wrap a plain ``input -> answer`` function into the harness's ``TaskSpec -> Episode`` shape.

    Progressive disclosure: the trivial agent should not have to learn the Episode type.
    ``async def`` functions give an async agent.

    >>> agent = as_agent(str.upper)
    >>> agent(TaskSpec("t1", input="hi")).output
    'HI'
    """
    if not callable(fn):
        raise InvalidInput(f"as_agent needs a callable input -> answer, got {fn!r:.80}")

    if inspect.iscoroutinefunction(fn):
        async def async_agent(task: TaskSpec) -> Episode:
            return _episode(task, await fn(task.input))

        return functools.wraps(fn)(async_agent)

    def agent(task: TaskSpec) -> Episode:
        return _episode(task, fn(task.input))

    try:
        return functools.wraps(fn)(agent)
    except (AttributeError, TypeError):  # pragma: no cover - exotic callables
        return agent
