"""Misbehaviour for the scripted server (:mod:`.fakeopenai`): seeded faults, a token bucket,
and the counts of what was answered how.

- :class:`Faults` answers a seeded fraction of requests with an HTTP error (429 with
  ``Retry-After``, or 503), by one rule for every model and optional rules per requested model
  (``rate=1.0, status=503`` for one model is an outage; setting its rate back to 0 recovers).
  A request's draw is a hash of the seed, the request's bytes and how many times those exact
  bytes were seen before, so the same run of requests faults the same way whatever order
  concurrent trials send them in, and a retry of a faulted request draws afresh.
- :class:`TokenBucket` is a requests-per-second limit: ``rate`` tokens a second up to ``burst``;
  a request that finds the bucket empty is answered 429 with ``Retry-After`` = the time until
  the next token.
- :class:`Counts` counts every request, every answer, every fault (by status) and every
  throttled request, overall and per requested model.
"""
from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

__all__ = ["FaultRule", "Faults", "TokenBucket", "Counts", "Refusal", "MAX_SEEN"]

#: The most distinct request bodies whose repeat counts are kept (the memory bound); past it
#: the counts start again from zero (a repeat then draws as a first attempt would).
MAX_SEEN = 200_000


@dataclass(frozen=True)
class FaultRule:
    """Answer ``rate`` (0..1) of requests with ``status`` (429 or 5xx); a 429 or 503 carries
    ``Retry-After: retry_after`` seconds when ``retry_after`` is not None."""

    rate: float
    status: int = 429
    retry_after: Optional[float] = 0.05

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"fault rate must be in [0, 1], got {self.rate!r}")
        if not (self.status == 429 or 500 <= self.status <= 599 or self.status in (408, 409)):
            raise ValueError(f"fault status must be 408, 409, 429 or 5xx, got {self.status!r}")
        if self.retry_after is not None and not 0 <= self.retry_after <= 60:
            raise ValueError(f"retry_after must be in [0, 60] seconds, got {self.retry_after!r}")


@dataclass(frozen=True)
class Refusal:
    """An error answer: the status, the ``Retry-After`` seconds (or None) and why."""

    status: int
    retry_after: Optional[float]
    reason: str             # "fault" | "rate_limit"


class Faults:
    """Seeded faults: one rule for all models (``default``) and rules per requested model."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.default: Optional[FaultRule] = None
        self.per_model: dict[str, FaultRule] = {}
        self._seen: dict[bytes, int] = {}
        self._lock = threading.Lock()

    def set(self, rate: float, *, status: int = 429, retry_after: Optional[float] = 0.05,
            model: Optional[str] = None) -> None:
        """Fault ``rate`` of the requests for ``model`` (every model when None); rate 0 for a
        model recovers it (a model rule, even at rate 0, overrides the default)."""
        rule = FaultRule(rate, status, retry_after)
        with self._lock:
            if model is None:
                self.default = rule if rate > 0 else None
            else:
                self.per_model[model] = rule

    def clear(self) -> None:
        with self._lock:
            self.default = None
            self.per_model.clear()

    def decide(self, model: Optional[str], raw: bytes) -> Optional[Refusal]:
        """The refusal of this request (its model and bytes), or None to answer it."""
        with self._lock:
            rule = self.per_model.get(model) if model in self.per_model else self.default
            if rule is None or rule.rate <= 0:
                return None
            digest = hashlib.blake2b(raw, digest_size=16).digest()
            if len(self._seen) >= MAX_SEEN and digest not in self._seen:
                self._seen.clear()
            nth = self._seen.get(digest, 0)
            self._seen[digest] = nth + 1
        draw = hashlib.blake2b(b"%d:%d:" % (self.seed, nth) + digest, digest_size=8).digest()
        if int.from_bytes(draw, "big") / 2.0 ** 64 >= rule.rate:
            return None
        return Refusal(rule.status, rule.retry_after if rule.status in (429, 503) else None, "fault")


class TokenBucket:
    """``rate`` requests a second, bursts up to ``burst`` (default: a tenth of a second's worth,
    at least 1). ``clock`` is injectable (monotonic seconds) for tests of the bucket itself."""

    def __init__(self, rate: float, burst: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0 requests/s, got {rate!r}")
        self.rate = float(rate)
        self.burst = float(burst) if burst is not None else max(1.0, self.rate / 10)
        if self.burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst!r}")
        self._clock = clock
        self._tokens = self.burst
        self._at = clock()
        self._lock = threading.Lock()

    def take(self) -> Optional[Refusal]:
        """Take a token (None: answer), or a 429 refusal with the wait until the next one."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.rate)
            self._at = now
            if self._tokens >= 1:
                self._tokens -= 1
                return None
            wait = (1 - self._tokens) / self.rate
        return Refusal(429, round(wait, 4), "rate_limit")


@dataclass
class ModelCounts:
    requests: int = 0
    answered: int = 0
    faults: int = 0
    throttled: int = 0


@dataclass
class Counts:
    """What the server was asked and how it answered. ``faults`` counts the seeded faults by
    status, ``throttled`` the token bucket's 429s; ``per_model`` the same by requested model."""

    requests: int = 0
    answered: int = 0
    faults: dict = field(default_factory=dict)      # status -> count
    throttled: int = 0
    bad: int = 0                                      # answered 4xx (bad request, no route)
    per_model: dict = field(default_factory=dict)   # requested model -> ModelCounts

    def of(self, model: Optional[str]) -> ModelCounts:
        return self.per_model.setdefault(model or "?", ModelCounts())

    @property
    def faulted(self) -> int:
        return sum(self.faults.values())
