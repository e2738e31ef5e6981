"""Chat transcripts -> :class:`~ek_agents.base.Trajectory` / :class:`~ek_agents.base.Episode`.

Reads, as dicts or SDK objects (duck-typed, no SDK imported):

- OpenAI Chat Completions: assistant ``tool_calls`` (``function.arguments`` a JSON string),
  ``role: "tool"`` results with ``tool_call_id`` (and the legacy ``function_call``);
- OpenAI Responses items: ``function_call`` / ``function_call_output`` (``custom_tool_call``
  too), paired by ``call_id``;
- Anthropic messages: ``tool_use`` content blocks and ``tool_result`` blocks (``is_error``);
- Inspect ``ChatMessage`` s (``function`` is the tool name, ``arguments`` a dict, a tool
  message's ``error``) and tau2-bench messages (``ToolCall(name, arguments)``, tool
  ``error: bool``; tools the *user simulator* calls are not agent steps).

Results pair with calls by id where ids exist, by order otherwise. Arguments that are not a
JSON object never crash: the step keeps the raw string and records an error.

>>> t = trajectory_from_messages([
...     {"role": "assistant", "content": [
...         {"type": "tool_use", "id": "tu1", "name": "lookup", "input": {"sku": "A1"}}]},
...     {"role": "user", "content": [
...         {"type": "tool_result", "tool_use_id": "tu1", "content": "no such sku", "is_error": True}]},
... ])
>>> t.steps[0].call, t.steps[0].error
(('lookup', {'sku': 'A1'}), 'no such sku')
"""
from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Optional

from ..base import Cost, Episode, RunProvenance, Step, Trajectory
from ..core import Provenance, construct
from ..errors import BridgeError
from ..parsing import parse_json
from ._access import plain
from .usage import cost_from_usage

__all__ = ["trajectory_from_messages", "episode_from_messages", "parse_transcript", "Transcript",
           "content_text"]

_OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output"}
_MAP = (dict, Mapping)  # isinstance(x, _MAP): a dict (what JSON gives) answers before the ABC check
_TEXT_BLOCKS = ("text", "output_text", "input_text")  # a tuple: a block's type may be unhashable


def content_text(content: Any) -> Optional[str]:
    """The text of a message ``content`` (a string or a list of content blocks), else ``None``.

    >>> content_text([{"type": "text", "text": "a"}, {"type": "thinking", "thinking": "x"},
    ...               {"type": "output_text", "text": "b"}])
    'a\\nb'
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b if isinstance(b, str) else b.get("text") for b in content
                 if isinstance(b, str) or (isinstance(b, _MAP) and b.get("type") in _TEXT_BLOCKS
                                           and isinstance(b.get("text"), str))]
        return "\n".join(parts) if parts else None
    return None


def _observation(content: Any) -> Any:
    """What a tool returned: its text when it is text, the content itself otherwise."""
    if isinstance(content, list):
        text = content_text(content)
        only_text = all(isinstance(b, str) or (isinstance(b, _MAP) and b.get("type") in _TEXT_BLOCKS)
                        for b in content)
        if text is not None and only_text:
            return text
    return content


def _parse_args(raw: Any) -> tuple:
    """``(args, error)``: a dict, or the raw string plus a note on why it is not one."""
    if raw is None:
        return {}, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            value = parse_json(raw, where="arguments", error=BridgeError, nonfinite="allow")
        except BridgeError as exc:
            return raw, f"{exc}; kept the raw string"
        if isinstance(value, dict):
            return value, None
        return raw, f"arguments are JSON {type(value).__name__}, not an object; kept the raw string"
    if isinstance(raw, _MAP):
        return dict(raw), None
    text = json.dumps(raw, default=str)
    return text, f"arguments are a {type(raw).__name__}, not an object; kept as JSON text"


def _join(first: Optional[str], second: Optional[str]) -> Optional[str]:
    if first and second:
        return f"{first}; {second}"
    return first or second or None


def _tool_error(err: Any, content: Any) -> Optional[str]:
    """A tool message's ``error`` field (Inspect dict, tau2 bool, plain string) as text."""
    if err is None or err is False or err == "":
        return None
    if isinstance(err, _MAP):
        msg = err.get("message") or err.get("error") or json.dumps(err, default=str)
        kind = err.get("type")
        return msg if kind in (None, "unknown") else f"{kind}: {msg}"
    if err is True:
        text = content_text(content)
        return text if text else "tool reported an error"
    return str(err)


class _Call:
    __slots__ = ("id", "tool", "args", "observation", "error", "answered")

    def __init__(self, id: Optional[str], tool: str, args: Any, error: Optional[str]) -> None:
        self.id, self.tool, self.args, self.error = id, tool, args, error
        self.observation: Any = None
        self.answered = False

    def step(self) -> Step:
        # tool is a non-empty str, args a dict or str, error a str or None: made here
        return construct(Step, tool=self.tool, args=self.args, observation=self.observation, error=self.error)


def _id(value: Any) -> Optional[str]:
    """A call or result id as text (None when absent or empty)."""
    if type(value) is str:
        return value or None
    return None if value in (None, "") else str(value)


class Transcript:
    """A parsed transcript: the calls in order, the assistant texts, and any usage records."""

    def __init__(self) -> None:
        self.calls: list[_Call] = []
        self.texts: list[str] = []
        self.usages: list[Any] = []
        self.unpaired_results = 0
        self._pending: dict[str, deque] = {}

    @property
    def trajectory(self) -> Trajectory:
        return construct(Trajectory, steps=tuple([c.step() for c in self.calls]))

    @property
    def final_text(self) -> Optional[str]:
        """The last assistant text: the agent's final answer."""
        return self.texts[-1] if self.texts else None

    def add_call(self, id: Any, tool: Any, raw_args: Any, where: str, *at: int, error: Optional[str] = None,
                 result: Any = ..., result_error: Optional[str] = None, free_form: bool = False) -> None:
        """One call; ``where`` names its field in errors (a ``str.format`` template of the
        indices ``at``, formatted only for an error)."""
        if not isinstance(tool, str) or not tool:
            raise BridgeError(
                f"{where.format(*at) if at else where} has no tool name (got {tool!r}); a tool call needs a name "
                "(OpenAI: function.name, Anthropic: tool_use.name, Responses: name)"
            )
        if free_form and isinstance(raw_args, str):
            args, arg_error = raw_args, None
        else:
            args, arg_error = _parse_args(raw_args)
        cid = id if type(id) is str and id else _id(id)
        # (an error is None or non-empty text: _join only when there are two)
        call = _Call(cid, tool, args, arg_error if error is None else _join(arg_error, error))
        self.calls.append(call)
        if result is not ...:  # a call that carries its own result (server-side tool use)
            call.observation, call.error, call.answered = result, _join(call.error, result_error), True
        elif cid is not None:
            waiting = self._pending.get(cid)
            if waiting is None:
                self._pending[cid] = deque((call,))
            else:
                waiting.append(call)

    def add_result(self, id: Any, content: Any, error: Optional[str]) -> None:
        rid = id if type(id) is str and id else _id(id)
        waiting = self._pending.get(rid) if rid is not None else None
        if waiting:
            call = waiting.popleft()
        else:  # by order: the first unanswered call (one without an id first when ours has one)
            waiting = [c for c in self.calls if not c.answered]
            if rid is not None:
                waiting = [c for c in waiting if c.id is None] or waiting
            call = waiting[0] if waiting else None
            if call is not None and call.id is not None:
                self._pending[call.id].remove(call)
        if call is None:
            self.unpaired_results += 1
            return
        call.answered = True
        call.observation = _observation(content) if isinstance(content, list) else content
        if error is not None:
            call.error = _join(call.error, error)


def _messages_list(messages: Any) -> list:
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
        hint = ""
        if isinstance(messages, _MAP) or hasattr(messages, "role") or hasattr(messages, "choices"):
            hint = " (one message? wrap it in a list; a whole completion? pass its messages)"
        raise BridgeError(
            f"messages must be a list of chat messages, got {type(messages).__name__}{hint}"
        )
    return list(messages)


def parse_transcript(messages: Any, *, from_json: bool = False) -> Transcript:
    """Parse ``messages`` (see the module docstring for the formats) into a :class:`Transcript`.

    ``from_json=True``: the messages come straight from a JSON parse that nothing else holds
    (plain dicts, lists and scalars), so they are read in place instead of copied through
    :func:`~ek_agents.bridge._access.plain` first.
    """
    tr = Transcript()
    # ``where`` (messages[i]...) is formatted only for an error: most messages never need it
    for i, raw in enumerate(messages if from_json and type(messages) is list else _messages_list(messages)):
        m = raw if from_json and type(raw) is dict else plain(raw)
        if type(m) is not dict and not isinstance(m, Mapping):
            raise BridgeError(f"messages[{i}] is a {type(raw).__name__}, not a message: each message is a dict "
                              "(or SDK object) with a 'role', or a Responses item with a 'type'")
        role, kind = m.get("role"), m.get("type")
        if kind is not None:  # a Responses item (or a message with a 'type')
            if not isinstance(kind, str):
                raise BridgeError(f"messages[{i}].type must be a string such as 'function_call', got {kind!r:.60}")
            if kind == "function_call":
                tr.add_call(m.get("call_id") or m.get("id"), m.get("name"), m.get("arguments"), "messages[{}]", i)
                continue
            if kind == "custom_tool_call":  # free-form text input by design: kept as given
                tr.add_call(m.get("call_id") or m.get("id"), m.get("name"), m.get("input"), "messages[{}]", i,
                            free_form=True)
                continue
            if kind in _OUTPUT_ITEMS:
                out = m.get("output")
                tr.add_result(m.get("call_id"), out, _tool_error(m.get("error"), out))
                continue
            if role is None:
                continue  # another Responses item (reasoning, web_search_call, ...): not a tool step
        if type(role) is not str:
            if role is None:
                raise BridgeError(
                    f"messages[{i}] has no 'role' (keys: {sorted(m)}); give each message a role "
                    "('user', 'assistant', 'tool', 'system') or pass Responses items with their 'type'"
                )
            if not isinstance(role, str):
                raise BridgeError(f"messages[{i}].role must be a string such as 'assistant', got {role!r}")
        if role == "assistant":
            _assistant(tr, m, i)
        elif role == "tool" or role == "function":
            tool_messages = m.get("tool_messages")
            if not tool_messages:  # one tool message (a tau2 one may be the user simulator's)
                if m.get("requestor") != "user":
                    _tool_result(tr, m)
                continue
            if not isinstance(tool_messages, list):
                raise BridgeError(f"messages[{i}].tool_messages must be a list of tool messages, got "
                                  f"{tool_messages!r:.60}")
            for tm in tool_messages:  # tau2 MultiToolMessage
                if isinstance(tm, _MAP) and tm.get("requestor") != "user":
                    _tool_result(tr, tm)
        elif role == "user" and isinstance(m.get("content"), list):
            _result_blocks(tr, m["content"])
    return tr


def _tool_result(tr: Transcript, m: Mapping) -> None:
    rid = m.get("tool_call_id") if "tool_call_id" in m else m.get("id")  # tau2 uses id
    content = m.get("content")
    err, is_error = m.get("error"), m.get("is_error")
    tr.add_result(rid, content, None if err is None and is_error is None  # (most results: no error)
                  else _join(_tool_error(err, content), _tool_error(is_error, content)))


def _result_blocks(tr: Transcript, blocks: list) -> None:
    for b in blocks:
        if isinstance(b, _MAP) and str(b.get("type", "")).endswith("tool_result"):
            content = b.get("content")
            tr.add_result(b.get("tool_use_id"), content, _tool_error(b.get("is_error"), content))


def _assistant(tr: Transcript, m: Mapping, i: int) -> None:
    content = m.get("content")
    if isinstance(content, str):
        if content:
            tr.texts.append(content)
    elif isinstance(content, list):
        text = content_text(content)
        if text:
            tr.texts.append(text)
        for j, b in enumerate(content):
            kind = str(b.get("type", "")) if isinstance(b, _MAP) else ""
            if kind.endswith("tool_use"):
                args = b.get("input", b.get("arguments"))
                if "result" in b:  # Inspect ContentToolUse: a server-side call with its result
                    tr.add_call(b.get("id"), b.get("name"), args, "messages[{}].content[{}]", i, j,
                                result=b.get("result"), result_error=_tool_error(b.get("error"), None))
                else:
                    tr.add_call(b.get("id"), b.get("name"), args, "messages[{}].content[{}]", i, j)
        _result_blocks(tr, content)  # server tool results live in the assistant message
    calls = m.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise BridgeError(f"messages[{i}].tool_calls must be a list of tool calls, got {type(calls).__name__}")
        for j, c in enumerate(calls):
            if type(c) is not dict and not isinstance(c, Mapping):
                raise BridgeError(f"messages[{i}].tool_calls[{j}] must be a tool call dict or object, got {c!r:.80}")
            fn = c.get("function")
            if isinstance(fn, _MAP):  # OpenAI
                name, args = fn.get("name"), fn.get("arguments")
            elif isinstance(fn, str):  # Inspect
                name, args = fn, c.get("arguments")
            else:  # tau2 and other flat spellings
                name, args = c.get("name"), c.get("arguments", c.get("input"))
            tr.add_call(c.get("id"), name, args, "messages[{}].tool_calls[{}].function.name", i, j,
                        error=c.get("parse_error") or None)
    legacy = m.get("function_call")
    if legacy is not None and isinstance(legacy, _MAP):
        tr.add_call(None, legacy.get("name"), legacy.get("arguments"), "messages[{}].function_call.name", i)
    usage = m.get("usage")
    if usage is not None:
        tr.usages.append(usage)


def trajectory_from_messages(messages: Any) -> Trajectory:
    """Parse a chat transcript into a :class:`~ek_agents.base.Trajectory`.

    Each assistant tool call becomes a :class:`~ek_agents.base.Step`; its result message
    (matched by id, else the next one) becomes the step's ``observation``, and a result
    carrying an error marks the step's ``error``.

    >>> traj = trajectory_from_messages([
    ...     {"role": "assistant", "tool_calls": [
    ...         {"id": "c1", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "18C"}])
    >>> traj.steps[0].args, traj.steps[0].observation
    ({'city': 'Paris'}, '18C')
    """
    return parse_transcript(messages).trajectory


def episode_from_messages(messages: Any, *, task_id: Any = "", usage: Any = None, output: Any = None,
                          final_state: Any = None, latency_s: Optional[float] = None,
                          success: Optional[bool] = None, run: Optional[RunProvenance] = None,
                          meta: Optional[dict] = None, provenance: Optional[Provenance] = None,
                          from_json: bool = False) -> Episode:
    """Build a full :class:`~ek_agents.base.Episode` from a transcript (+ optional usage/state).

    ``output`` defaults to the last assistant text -- the agent's final answer. ``usage`` (one
    record or a list, see :func:`cost_from_usage`) defaults to the sum of the ``usage`` the
    assistant messages carry (tau2, Anthropic ``Message`` objects); with neither, ``cost`` is
    ``None`` (unknown, not free). ``from_json``: see :func:`parse_transcript`.

    >>> ep = episode_from_messages([{"role": "user", "content": "hi"},
    ...                             {"role": "assistant", "content": "hello"}],
    ...                            task_id="t1", usage={"prompt_tokens": 5, "completion_tokens": 1})
    >>> ep.output, ep.cost.total_tokens
    ('hello', 6)
    """
    tr = parse_transcript(messages, from_json=from_json)
    if usage is None and tr.usages:
        usage = tr.usages
    cost: Optional[Cost] = None if usage is None else cost_from_usage(usage, latency_s=latency_s)
    info = dict(meta) if meta else {}
    if cost is None and latency_s is not None:
        info.setdefault("latency_s", latency_s)
    if tr.unpaired_results:
        info["unpaired_tool_results"] = tr.unpaired_results
    fields = dict(task_id=str(task_id), trajectory=tr.trajectory,
                  output=tr.final_text if output is None else output, final_state=final_state,
                  cost=cost, success=success, run=run, provenance=provenance, meta=info)
    if (success is None or type(success) is bool) and (run is None or isinstance(run, RunProvenance)) \
            and (provenance is None or isinstance(provenance, Provenance)):
        return construct(Episode, **fields)  # every field of the declared type: no re-validation
    return Episode(**fields)  # the caller's success / run / provenance checked (or refused)
