"""Trial limits and the run's dollar cap (``run_suite(..., trial_calls=8, max_dollars=5.0)``).

Per trial (:class:`RunLimits`): ``trial_dollars``, ``trial_tokens``, ``trial_calls`` -- and
the harness's ``timeout_s``. A trial over one ends as a **failure** with ``meta["limit"]``
naming which (``"trial_calls"``, ...; ``"timeout_s"`` for the timeout): scored, not dropped --
a runaway agent is a bad agent. With ``capture="otel"`` the limits are enforced live from the
spans, as each model call's span ends (:class:`TrialBudget`): an ``async`` trial is cancelled
at once (within the call that crossed the limit: the one in flight when it was crossed is
the last), a sync one cannot be interrupted and is marked when it returns. Without a capture
they are checked on the Cost the agent's Episode reports, when it returns. Dollar limits need
the price catalog (``prices=``).

Per run: ``max_dollars``. No new trial starts once the dollars spent by this invocation's
finished trials plus the in-flight trials' expected dollars (``trial_dollars`` when set, else
the mean of the finished trials; until one has finished, trials start one at a time) would
pass it (:class:`RunBudget`). The trials not started are not stored, so the run stops
resumably: the report says where (``detail["stopped"]``), the CLI exits 5, and the same
command with a higher cap (or none) runs the rest.

``provider_retry_s`` and ``adaptive_concurrency`` (``runs.providers``) travel with the limits:
together they are how a run copes with what it does not control.
"""
from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Mapping
from typing import Any, Callable, Optional

from pydantic import Field

from ..base import Cost, Episode, JsonShape
from ..bridge.otel import trace_parts
from ..core import shape
from ..cost import call_dollars, episode_dollars
from ..errors import InvalidInput, UnknownModelPrice
from ..prices import load_prices
from .providers import PROVIDER_RETRY_S

__all__ = ["RunLimits", "TrialBudget", "RunBudget", "over_limit", "TRIAL_LIMITS", "make_limits",
           "given_limits", "catalog", "expected_trials", "limits_provenance"]

#: The per-trial limits, in the order they are checked.
TRIAL_LIMITS = ("trial_calls", "trial_tokens", "trial_dollars")


@shape()
class RunLimits(JsonShape):
    """A run's limits and provider-error policy (the module docstring)."""

    trial_dollars: Optional[float] = Field(default=None, gt=0)
    """Most dollars one trial may spend (needs prices)."""
    trial_tokens: Optional[int] = Field(default=None, ge=1)
    """Most tokens (input + output, all calls) one trial may use."""
    trial_calls: Optional[int] = Field(default=None, ge=1)
    """Most model calls one trial may make."""
    max_dollars: Optional[float] = Field(default=None, gt=0)
    """Most dollars one invocation of the run may spend (needs prices)."""
    provider_retry_s: float = Field(default=PROVIDER_RETRY_S, ge=0)
    """Per trial: seconds of waits between attempts a provider error ended."""
    adaptive_concurrency: bool = True
    """Lower the trials in flight against an endpoint that rate-limits (``providers``)."""
    prices: Optional[str] = None
    """The price catalog's path or URL, for the dollar limits of a run the pipeline runs."""

    @property
    def per_trial(self) -> bool:
        return any(getattr(self, n) is not None for n in TRIAL_LIMITS)

    @property
    def dollars(self) -> bool:
        return self.trial_dollars is not None or self.max_dollars is not None

    def fingerprint(self) -> dict:
        """What decides a trial's outcome (a resume with other trial limits is another run);
        ``max_dollars`` and the provider policy decide only whether and when it runs."""
        return {n: getattr(self, n) for n in TRIAL_LIMITS if getattr(self, n) is not None}


def make_limits(*, trial_dollars: Any = None, trial_tokens: Any = None, trial_calls: Any = None,
                max_dollars: Any = None, provider_retry_s: Any = None,
                adaptive_concurrency: bool = True, prices: Any = None,
                limits: Optional[RunLimits] = None) -> RunLimits:
    """The :class:`RunLimits` of these keyword arguments (``limits`` as the base); a dollar
    limit without ``prices`` is refused."""
    base = limits or RunLimits()
    given = {k: v for k, v in (("trial_dollars", trial_dollars), ("trial_tokens", trial_tokens),
                               ("trial_calls", trial_calls), ("max_dollars", max_dollars),
                               ("provider_retry_s", provider_retry_s)) if v is not None}
    for k, v in given.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidInput(f"{k} must be a number, got {v!r}")
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidInput(f"{k} must be finite, got {v!r}")
    if not adaptive_concurrency:
        given["adaptive_concurrency"] = False
    if isinstance(prices, str):
        given["prices"] = prices
    try:
        out = RunLimits.from_dict({**base.to_dict(), **given})
    except InvalidInput as exc:
        raise InvalidInput(f"limits: {exc} (trial_dollars, max_dollars > 0; trial_tokens, "
                           "trial_calls >= 1; provider_retry_s >= 0)") from None
    if out.dollars and prices is None and out.prices is None:
        raise InvalidInput("trial_dollars / max_dollars need the price catalog to count dollars: "
                           "pass prices= (a catalog, e.g. prices.load_prices('prices.json'))")
    return out


def limits_provenance(limits: Optional[RunLimits]) -> dict:
    """``{"limits": ...}`` for a run fingerprint's provenance when trial limits are set, else {}."""
    got = limits.fingerprint() if limits is not None else {}
    return {"limits": got} if got else {}


def given_limits(*, prices: Optional[str] = None, **given: Any) -> Optional[RunLimits]:
    """The :class:`RunLimits` of a pipeline run's parameters (``prices``: the catalog's path),
    or None when none is given (the defaults apply)."""
    if all(v is None for v in given.values()):
        return None
    return make_limits(prices=prices, **given)


def catalog(limits: Optional[RunLimits]) -> Optional[dict]:
    """The price catalog a pipeline run's dollar limits are counted with (None: none needed)."""
    if limits is None or not limits.dollars or limits.prices is None:
        return None
    return load_prices(limits.prices)


def expected_trials(st: Any, tasks: Any, k: int, limits: Optional[RunLimits]) -> Optional[int]:
    """Tasks x k of a pipeline run with a ``max_dollars`` (whose trials may stop short; ``tasks``
    its tasks document's ``SuiteRef`` in store ``st``), else None."""
    if limits is None or limits.max_dollars is None:
        return None
    return len(st.read_json(tasks.key)["tasks"]) * k


def _calls_dollars(calls: Any, prices: Optional[Mapping]) -> Optional[float]:
    used = [c for c in calls if c.input_tokens or c.output_tokens]
    if not used:
        return 0.0
    if prices is None:
        return None
    try:
        return math.fsum(d for _, d in call_dollars(Episode("t", cost=Cost.of_calls(used)),
                                                    prices=prices))
    except UnknownModelPrice:
        return None


def over_limit(limits: RunLimits, calls: int, tokens: int, dollars: Optional[float]) -> Optional[str]:
    """The first per-trial limit these counts pass (None: within every one)."""
    if limits.trial_calls is not None and calls > limits.trial_calls:
        return "trial_calls"
    if limits.trial_tokens is not None and tokens > limits.trial_tokens:
        return "trial_tokens"
    if limits.trial_dollars is not None and dollars is not None and dollars > limits.trial_dollars:
        return "trial_dollars"
    return None


class TrialBudget:
    """One trial attempt's live counts, fed by its capture as each span ends (any thread);
    ``on_exceed`` is called once, when a limit is first passed."""

    def __init__(self, limits: RunLimits, prices: Optional[Mapping],
                 on_exceed: Optional[Callable[[], None]] = None) -> None:
        self.limits, self.prices, self.on_exceed = limits, prices, on_exceed
        self.exceeded: Optional[str] = None
        self.calls = self.tokens = 0
        self.dollars: Optional[float] = 0.0
        self._lock = threading.Lock()

    def __call__(self, spans: list) -> None:
        """Recount from the trial's spans so far (``otelcapture.TrialSpans`` calls this)."""
        with self._lock:
            if self.exceeded is not None:
                return
            try:
                calls = trace_parts(list(spans), where="trial").calls
            except Exception:  # noqa: BLE001 -- never into the agent's span.end(); the episode
                return  # is built (and any error named) from the same spans later
            self.calls = len(calls)
            self.tokens = sum(c.input_tokens + c.output_tokens for c in calls)
            self.dollars = (_calls_dollars(calls, self.prices)
                            if self.limits.trial_dollars is not None else None)
            self.exceeded = over_limit(self.limits, self.calls, self.tokens, self.dollars)
            fire = self.exceeded is not None and self.on_exceed is not None
        if fire:
            self.on_exceed()

    def meta(self) -> dict:
        """What the failed trial records: ``limit`` and the counts when it was crossed."""
        return {"limit": self.exceeded, "limit_counts": {
            "calls": self.calls, "tokens": self.tokens,
            **({"dollars": self.dollars} if self.dollars is not None else {})}}


def episode_over(limits: RunLimits, ep: Episode, prices: Optional[Mapping]) -> Optional[str]:
    """The per-trial limit an agent's own Episode passes, read from its Cost when it returns."""
    cost = ep.cost
    if cost is None or not limits.per_trial:
        return None
    calls = len(cost.calls) if cost.calls else 1
    dollars = None
    if limits.trial_dollars is not None and prices is not None:
        try:
            dollars = episode_dollars(ep, prices=prices)
        except UnknownModelPrice:
            dollars = None
    return over_limit(limits, calls, cost.input_tokens + cost.output_tokens, dollars)


def cancel_from_any_thread(task: asyncio.Task) -> Callable[[], None]:
    """A callable that cancels ``task`` from whatever thread calls it."""
    loop = task.get_loop()

    def cancel() -> None:
        try:
            loop.call_soon_threadsafe(task.cancel)
        except RuntimeError:  # the loop is gone: the trial is over anyway
            pass
    return cancel


class RunBudget:
    """The run's ``max_dollars`` guard (one run, one event loop): :meth:`may_start` before each
    trial, :meth:`finished` after; :attr:`stopped` says where the run stopped."""

    def __init__(self, limits: RunLimits, prices: Optional[Mapping]) -> None:
        self.limits, self.prices = limits, prices
        self.spent = 0.0
        self.finished_n = 0
        self.in_flight = 0
        self.unknown = 0  # finished trials whose dollars could not be counted
        self.refused: list = []  # the pairs refused a start
        self.idle = asyncio.Event()
        self.idle.set()

    def expected(self) -> float:
        if self.limits.trial_dollars is not None:
            return self.limits.trial_dollars
        return self.spent / self.finished_n if self.finished_n else 0.0

    async def may_start(self, pair: Any) -> bool:
        """Whether trial ``pair`` may start now (waits while the first trial runs, when the
        dollars a trial costs are not known yet)."""
        cap = self.limits.max_dollars
        if cap is None:
            return True
        while self.finished_n == 0 and self.in_flight and self.limits.trial_dollars is None:
            await self.idle.wait()
        if self.refused or self.spent + (self.in_flight + 1) * self.expected() > cap:
            self.refused.append(pair)
            return False
        self.in_flight += 1
        self.idle.clear()
        return True

    def finished(self, ep: Episode) -> None:
        if self.limits.max_dollars is None:
            return
        self.in_flight -= 1
        self.finished_n += 1
        try:
            d = episode_dollars(ep, prices=self.prices)
        except UnknownModelPrice:
            d = None
        if d is None:
            self.unknown += 1
        else:
            self.spent += d
        if self.in_flight == 0:
            self.idle.set()

    def stopped(self, not_started: int) -> dict:
        """``detail["stopped"]`` of a run that stopped at its cap (``{}`` when it did not)."""
        if not self.refused and not not_started:
            return {}
        first = self.refused[0] if self.refused else None
        return {"reason": "max_dollars", "max_dollars": self.limits.max_dollars,
                "spent_dollars": self.spent, "trials_finished": self.finished_n,
                "not_started": not_started,
                "first_not_started": None if first is None else f"{first[0]}#{first[1]}",
                "resume": "run the same command (same run id) with a higher max_dollars, or "
                          "none, to run the rest"}
