"""How the trial runner copes with what it does not control: provider errors retried with
backoff under a per-trial budget and an adaptive per-endpoint limit (``runs.providers``),
per-trial limits enforced live and the run's dollar cap (``runs.limits``).

:class:`TrialPolicy` wraps each trial of :class:`~ek_agents.execution._trialrunner.TrialRunner`:

1. before the trial starts, the run's ``max_dollars`` guard may refuse it (the run then
   stops resumably: the trial is not stored);
2. each attempt holds a slot on every endpoint the run has learned
   (``providers.EndpointLimiter``) and, with a capture and per-trial limits, a live
   ``limits.TrialBudget`` that cancels an async attempt once a limit is passed;
3. an attempt that ends in a provider error is run again (a fresh attempt, same seed) after
   ``providers.backoff_s``, while the trial's ``provider_retry_s`` budget of waits lasts; the
   model calls the ended attempts made (read from their spans) are kept apart in
   ``meta["provider_retries"]`` (``{"attempts", "calls", "waited_s"}``): the retry overhead;
4. what still fails is unresolved (``meta["error_kind"] == "provider"``, its fault in
   ``meta["provider"]``): not scored (``scoring.unresolved``), its calls counted in the
   overhead, re-run by ``retry_errored``.
"""
from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Mapping
from typing import Any, Optional

from ..base import Episode
from ..scoring.unresolved import PROVIDER
from .limits import RunBudget, RunLimits, TrialBudget, cancel_from_any_thread, episode_over
from .providers import EndpointLimiter, ProviderFault, backoff_s

__all__ = ["TrialPolicy", "with_policy"]


def _fault_of(ep: Any) -> Optional[ProviderFault]:
    meta = getattr(ep, "meta", None) or {}
    if meta.get("error_kind") != PROVIDER or not isinstance(meta.get("provider"), Mapping):
        return None
    return ProviderFault.from_dict(meta["provider"])


class TrialPolicy:
    """One run's policy (one event loop): see the module docstring."""

    def __init__(self, limits: Optional[RunLimits], *, max_concurrency: int,
                 prices: Optional[Mapping] = None, seed: Optional[int] = None) -> None:
        self.limits = limits or RunLimits()
        self.prices = prices
        self.limiter = EndpointLimiter(max_concurrency, adaptive=self.limits.adaptive_concurrency)
        self.budget = RunBudget(self.limits, prices) if self.limits.max_dollars is not None else None
        self.rng = random.Random(seed)
        self.retried = 0  # attempts a provider error ended, run-wide

    async def may_start(self, pair: Any) -> bool:
        """Whether the trial may start (the run's dollar cap)."""
        return True if self.budget is None else await self.budget.may_start(pair)

    def finished(self, ep: Episode) -> None:
        if self.budget is not None:
            self.budget.finished(ep)

    async def trial(self, runner: Any, task: Any, trial: int) -> Any:
        """Run the trial's attempts (``runner._trial_once``) under the policy; return what
        ``_trial_once`` returns, with the retry overhead in the answer's ``extra``."""
        waited = 0.0
        ended: list = []  # the model calls of the attempts a provider error ended
        attempts = 0
        while True:
            attempts += 1
            budget = None
            if runner.capture is not None and self.limits.per_trial:
                budget = TrialBudget(self.limits, self.prices,
                                     cancel_from_any_thread(asyncio.current_task())
                                     if runner.is_async else None)
            held = await self.limiter.acquire()
            fault = None
            try:
                answer = await runner._trial_once(task, trial, budget)
                fault = _fault_of(answer)
            finally:
                await self.limiter.release(held, fault)
            if fault is None:
                answer = self._limited(runner, task, trial, answer, budget)
                return self._with_overhead(answer, attempts - 1, ended, waited)
            wait = backoff_s(attempts, fault.retry_after_s, self.rng)
            cost = answer.cost
            if waited + wait > self.limits.provider_retry_s:  # unresolved: not scored, so
                ended.extend(cost.calls if cost is not None else ())  # its calls are overhead
                return self._with_overhead(answer, attempts, ended, waited)
            ended.extend(cost.calls if cost is not None else ())
            self.retried += 1
            await asyncio.sleep(wait)
            waited += wait

    def _limited(self, runner: Any, task: Any, trial: int, answer: Any,
                 budget: Optional[TrialBudget]) -> Any:
        """A sync trial that passed a limit while it ran (marked now that it returned), or an
        agent's own Episode whose Cost passes one: failed, naming the limit."""
        if isinstance(answer, Episode) or not self.limits.per_trial:
            return answer
        if budget is not None and budget.exceeded is not None:
            return runner.limit_failed(task, trial, answer, budget.meta())
        result = answer.result
        if budget is None and isinstance(result, Episode):
            name = episode_over(self.limits, result, self.prices)
            if name is not None:
                return runner.limit_failed(task, trial, answer, {"limit": name})
        return answer

    @staticmethod
    def _with_overhead(answer: Any, retried: int, calls: list, waited: float) -> Any:
        if not retried:
            return answer
        extra = {"provider_retries": {"attempts": retried,
                                      "calls": [c.to_dict() for c in calls],
                                      "waited_s": round(waited, 6)}}
        if isinstance(answer, Episode):
            return answer.replace(meta={**answer.meta, **extra})
        return answer._replace(extra=extra)


def with_policy(report: Any, policy: TrialPolicy, *, wanted: int, got: int) -> Any:
    """``report`` with what the policy did: ``detail["providers"]`` (attempts a provider error
    ended and were run again, each endpoint's adaptive limit) and, for a run stopped at its
    ``max_dollars``, ``detail["stopped"]`` (where, what was spent, how to resume)."""
    detail = dict(report.detail)
    if policy.retried or policy.limiter.endpoints:
        detail["providers"] = {"retried_attempts": policy.retried,
                               "endpoints": policy.limiter.summary()}
    stopped = policy.budget.stopped(wanted - got) if policy.budget is not None else {}
    if stopped:
        detail["stopped"] = stopped
        detail["warnings"] = [*detail.get("warnings", []),
                              f"incomplete: stopped at max_dollars={stopped['max_dollars']} "
                              f"after ${stopped['spent_dollars']:.4f}; {stopped['not_started']} "
                              f"trial(s) not started (first {stopped['first_not_started']}); "
                              + stopped["resume"]]
    if detail == report.detail:
        return report
    return dataclasses.replace(report, detail=detail)
