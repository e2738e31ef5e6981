"""The scripted server's judge: a chat completion that asks for a verdict gets one, seeded.

Protocol (what a test plants, what the server answers):

- **A judge request** is a chat completion (``/v1/chat/completions``) whose messages contain
  the word ``verdict`` (any role, any case) and that asks for structured output: a
  ``response_format.type`` of ``json_object`` or ``json_schema``, or an output tool whose name
  starts with ``final_result`` (pydantic-ai's tool output mode, ``Agent(output_type=...)``) --
  while the server's judge mode is on (``FakeOpenAI(judge=Judge(...))`` or
  ``server.set_judge(...)``). A streamed judge request is answered in chunks like any reply.
- **The truth** is a marker planted in the judged text: ``[truth:PASS]`` or ``[truth:FAIL]``
  (any case) anywhere in the request. The judge answers PASS to a PASS-truth with probability
  ``sensitivity`` and FAIL to a FAIL-truth with probability ``specificity``. A request without a
  truth marker is answered PASS with probability 1/2. A request with both markers reads the last.
- **The draw** is seeded: a hash of the judge's ``seed``, the request's bytes and how many times
  those exact bytes were judged before (so concurrent judging decides the same verdicts in any
  order, and asking again about the same text draws again).
- **The answer** is an ordinary chat completion (usage billed like any reply, in the ledger)
  whose message content is the JSON object ``{"verdict": "PASS" | "FAIL", "rationale": "..."}``
  (``finish_reason: "stop"``) -- or, to an output-tool request, a call of that tool with those
  arguments. Each verdict is also appended to ``server.judged`` as a
  :class:`Judged` (the truth, the verdict, the trial marker ``[ek:...]`` if any).
"""
from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

__all__ = ["Judge", "Judged", "is_judge_request", "judge_tool", "truth_of", "label_as_truth"]

_TRUTH = re.compile(r"\[truth:(PASS|FAIL)\]", re.IGNORECASE)
_VERDICT = re.compile(r"verdict", re.IGNORECASE)


def truth_of(text: str) -> Optional[str]:
    """The last truth marker in ``text`` (``"PASS"`` / ``"FAIL"``), or None."""
    found = _TRUTH.findall(text)
    return found[-1].upper() if found else None


def label_as_truth(rows: Iterable[dict], path: Union[str, Path]) -> list[dict]:
    """A person labeling from the truth: each planned labels line (``plan-labels``) with its
    ``gold`` the truth planted in its input, written to ``path`` as the labels file."""
    filled = [dict(r, gold=truth_of(str(r["input"])) == "PASS") for r in rows]
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in filled))
    return filled


def _asks_verdict(body: dict) -> bool:
    return bool(_VERDICT.search(" ".join(str(m.get("content")) for m in body.get("messages", [])
                                         if isinstance(m, dict))))


def judge_tool(body: dict) -> Optional[str]:
    """The output tool (``final_result...``) a verdict is asked through, or None."""
    for t in body.get("tools") or []:
        name = (t.get("function") or {}).get("name") if isinstance(t, dict) else None
        if isinstance(name, str) and name.startswith("final_result"):
            return name if _asks_verdict(body) else None
    return None


def is_judge_request(body: dict, raw_text: str = "") -> bool:
    """A chat body asking for a structured verdict (the protocol above)."""
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    return (kind in ("json_object", "json_schema") and _asks_verdict(body)) or \
        judge_tool(body) is not None


@dataclass(frozen=True)
class Judged:
    """One verdict the judge gave: the planted truth (or None), the verdict, the trial marker."""

    truth: Optional[str]
    verdict: str
    marker: Optional[str]


class Judge:
    """A judge with the given ``sensitivity`` (P(PASS | truth PASS)) and ``specificity``
    (P(FAIL | truth FAIL)), seeded by ``seed``."""

    def __init__(self, sensitivity: float = 1.0, specificity: float = 1.0, seed: int = 0) -> None:
        for name, v in (("sensitivity", sensitivity), ("specificity", specificity)):
            if not 0.0 <= v <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {v!r}")
        self.sensitivity, self.specificity, self.seed = sensitivity, specificity, seed
        self._seen: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def verdict(self, raw: bytes, text: str) -> tuple[str, Optional[str], str]:
        """``(verdict, truth, rationale)`` for a judge request of bytes ``raw`` / text ``text``."""
        digest = hashlib.blake2b(raw, digest_size=16).digest()
        with self._lock:
            nth = self._seen.get(digest, 0)
            if len(self._seen) < 200_000:
                self._seen[digest] = nth + 1
        u = int.from_bytes(hashlib.blake2b(b"%d:%d:" % (self.seed, nth) + digest,
                                           digest_size=8).digest(), "big") / 2.0 ** 64
        truth = truth_of(text)
        if truth == "PASS":
            verdict = "PASS" if u < self.sensitivity else "FAIL"
        elif truth == "FAIL":
            verdict = "FAIL" if u < self.specificity else "PASS"
        else:
            verdict = "PASS" if u < 0.5 else "FAIL"
        why = ("the answer meets the criteria" if verdict == "PASS"
               else "the answer does not meet the criteria")
        return verdict, truth, why
