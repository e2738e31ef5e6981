"""A reference-free judge behind any OpenAI-compatible chat-completions endpoint.

:class:`EndpointJudge` asks the model at ``base_url`` whether an output meets a rubric, in a
JSON object ``{"verdict": "PASS" | "FAIL", "rationale": ...}`` (``response_format``
``json_object``); a bare ``PASS`` / ``FAIL`` answer (a model or server that ignores the format)
is accepted too, anything else raises :class:`JudgeReplyError` naming the reply. Each call's
usage comes back as a :class:`~ek_agents.base.ModelCall`, so what the judge costs is billed at
its own model's rates -- the **evaluation cost**, kept apart from the agent's.

The object is also a :class:`~ek_agents.core.Signal` (``judge(output) -> 1.0 | 0.0``, with
``name`` and ``cost_tier``), so several judges combine as ``estimate_quality``'s signals do.
Its :attr:`~EndpointJudge.identity` (model, endpoint, rubric, prompt) is what a verdict cache
is keyed by. The ``openai`` SDK is imported when the first call is made
(``pip install 'ek-agents[openai]'``).
"""
from __future__ import annotations

import hashlib
import json
import threading
from typing import Any, NamedTuple, Optional

from ..base import ModelCall
from ..errors import InvalidInput, MissingDependency, TransientAgentError

__all__ = ["EndpointJudge", "JudgeReply", "JudgeReplyError", "parse_verdict", "JUDGE_PROMPT",
           "DEFAULT_RUBRIC"]

DEFAULT_RUBRIC = ("The output answers the user's request correctly and completely, without "
                  "inventing facts.")
JUDGE_PROMPT = ("You grade one answer of an AI agent against a rubric, without a reference "
                "answer. Rubric: {rubric}\nReply with a JSON object: {{\"verdict\": \"PASS\" or "
                "\"FAIL\", \"rationale\": \"one sentence\"}}.")


class JudgeReplyError(InvalidInput):
    """A judge's reply that is neither the JSON verdict nor a bare PASS / FAIL."""


class JudgeReply(NamedTuple):
    """One judged output: the verdict, the judge's reason, and the call it cost."""

    passed: bool
    rationale: str
    call: Optional[ModelCall]


def parse_verdict(text: Any, *, who: str = "judge") -> tuple[bool, str]:
    """``(passed, rationale)`` of a judge's reply: a JSON object with ``verdict`` PASS/FAIL (or a
    boolean ``pass``), or the bare word PASS / FAIL."""
    if not isinstance(text, str) or not text.strip():
        raise JudgeReplyError(f"{who}: empty reply {text!r}; the judge must answer PASS or FAIL")
    s = text.strip()
    if s.startswith("```"):
        s = s.strip("`").split("\n", 1)[-1].rsplit("```", 1)[0].strip()
    word = s.strip(" .!\"'").upper()
    if word in ("PASS", "FAIL"):
        return word == "PASS", ""
    try:
        doc = json.loads(s)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        v = doc.get("verdict", doc.get("pass"))
        rationale = str(doc.get("rationale", doc.get("reason", "")) or "")
        if isinstance(v, bool):
            return v, rationale
        if isinstance(v, str) and v.strip().upper() in ("PASS", "FAIL"):
            return v.strip().upper() == "PASS", rationale
    raise JudgeReplyError(f"{who}: reply {text[:120]!r} is neither {{\"verdict\": \"PASS\"|\"FAIL\", "
                          "\"rationale\": ...}} nor a bare PASS / FAIL; fix the judge's prompt "
                          "or model")


class EndpointJudge:
    """An LLM judge at an OpenAI-compatible endpoint (see the module docstring)."""

    cost_tier = 5

    def __init__(self, model: str, base_url: Optional[str] = None, rubric: str = DEFAULT_RUBRIC, *,
                 api_key: Optional[str] = None, name: Optional[str] = None,
                 timeout_s: float = 60.0, max_retries: int = 2) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidInput(f"EndpointJudge: model must be a model name, got {model!r}")
        if not isinstance(rubric, str) or not rubric.strip():
            raise InvalidInput("EndpointJudge: rubric must say what a PASS is (a sentence)")
        self.model, self.base_url, self.rubric = model, base_url, rubric
        self.api_key, self.timeout_s, self.max_retries = api_key, timeout_s, max_retries
        self.name = name or f"judge:{model}"
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        """sha256 of what decides a verdict: model, endpoint, rubric and prompt."""
        doc = json.dumps([self.model, self.base_url or "", self.rubric, JUDGE_PROMPT])
        return hashlib.sha256(doc.encode()).hexdigest()

    def __repr__(self) -> str:
        return f"EndpointJudge({self.model!r}, base_url={self.base_url!r})"

    def _openai(self) -> Any:
        with self._lock:
            if self._client is None:
                try:
                    import openai  # noqa: PLC0415 -- the SDK is ~0.3 s of import, paid on use
                except ImportError:
                    raise MissingDependency("EndpointJudge needs the openai SDK: pip install "
                                            "'ek-agents[openai]'") from None
                self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "sk-none",
                                             timeout=self.timeout_s, max_retries=self.max_retries)
            return self._client

    def messages(self, output: Any, input: Any = None) -> list[dict]:
        """The chat messages sent for one output (and the request it answered, when known)."""
        out = output if isinstance(output, str) else json.dumps(output, default=str)
        user = (f"Request:\n{input if isinstance(input, str) else json.dumps(input, default=str)}"
                f"\n\nAnswer:\n{out}" if input is not None else f"Answer:\n{out}")
        return [{"role": "system", "content": JUDGE_PROMPT.format(rubric=self.rubric)},
                {"role": "user", "content": user}]

    def judge(self, output: Any, input: Any = None) -> JudgeReply:
        """Judge one output; the reply's usage as a ModelCall (None when the endpoint reports
        none). A provider failure the SDK gave up on raises TransientAgentError."""
        client = self._openai()
        try:
            resp = client.chat.completions.create(
                model=self.model, messages=self.messages(output, input), temperature=0,
                response_format={"type": "json_object"})
        except Exception as exc:  # the SDK's own error tree: named, not swallowed
            raise TransientAgentError(f"{self!r}: the judge's endpoint failed: "
                                      f"{type(exc).__name__}: {exc}") from exc
        text = resp.choices[0].message.content if resp.choices else None
        passed, rationale = parse_verdict(text, who=repr(self))
        usage = getattr(resp, "usage", None)
        call = None
        if usage is not None:
            details = getattr(usage, "prompt_tokens_details", None)
            cached = getattr(details, "cached_tokens", None) if details is not None else None
            call = ModelCall(model=getattr(resp, "model", None) or self.model,
                             requested_model=self.model, provider="openai",
                             input_tokens=int(usage.prompt_tokens or 0),
                             output_tokens=int(usage.completion_tokens or 0),
                             cached_input_tokens=int(cached or 0),
                             cached_known=cached is not None, source="ek_agents.judge")
        return JudgeReply(passed, rationale, call)

    def __call__(self, output: Any) -> float:
        """The Signal form: 1.0 for PASS, 0.0 for FAIL."""
        return 1.0 if self.judge(output).passed else 0.0
