"""When a run fails for its errors: more than ``max_error_rate`` of its trials ended in an error.

Such a run's figures say nothing about the agent (an outage, a broken endpoint): the pipeline
writes the manifest, then fails with :class:`~ek_agents.errors.TooManyErrors`. Used by the
evaluate flow's ``check_errors`` task and by :mod:`ek_agents.localrun` (through the package:
``ek_agents.pipeline.check_errors``).

>>> check_errors({"n_trials": 10, "detail": {"errors": {"timeout": 5}}})  # 50%: not above
>>> check_errors({"n_trials": 10, "detail": {"errors": {"timeout": 6}}}, run_id="r1")
Traceback (most recent call last):
...
ek_agents.errors.TooManyErrors: run 'r1': 6 of 10 trials ended in an error (60% > max_error_rate 50%; timeout: 6). The manifest is written; fix the agent or its endpoint and re-run the errored trials with --retry-errored (same run id)
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from .. import errors
from ..errors import InvalidInput
from ..scoring.unresolved import incomplete_because

__all__ = ["MAX_ERROR_RATE", "check_errors", "check_complete"]

#: The errored fraction of a run's trials above which it fails (:func:`check_errors`).
MAX_ERROR_RATE = 0.5


def check_errors(report: Mapping, *, max_error_rate: Optional[float] = MAX_ERROR_RATE,
                 run_id: str = "", expected_trials: Optional[int] = None) -> None:
    """Raise :class:`~ek_agents.errors.TooManyErrors` when more than ``max_error_rate`` of a
    report's trials ended in an error (an outage: the figures say nothing about the agent).
    ``None`` never fails. Then :func:`check_complete`."""
    _too_many(report, max_error_rate, run_id)
    check_complete(report, run_id=run_id, expected_trials=expected_trials)


def check_complete(report: Mapping, *, run_id: str = "",
                   expected_trials: Optional[int] = None) -> None:
    """Raise :class:`~ek_agents.errors.RunIncomplete` (the CLI exits 5) when the report's run
    is incomplete: trials a provider error left unresolved, or not started at its
    ``max_dollars`` (or fewer than ``expected_trials``). Called once the manifest is written.

    >>> check_complete({"n_trials": 4, "detail": {"unresolved": {"n": 2,
    ...                 "by_kind_and_model": {"server_error gpt-4o": 2}}}}, run_id="r1")
    Traceback (most recent call last):
    ...
    ek_agents.errors.RunIncomplete: incomplete: provider errors: run 'r1' is incomplete: 2 trial(s) left unresolved by provider errors (2 server_error gpt-4o); the report covers the 4 trials that completed. The manifest is written; complete the run with --retry-errored (same run id) once the provider answers again
    """
    detail = report.get("detail") or {}
    n = int(report.get("n_trials") or 0)
    why = incomplete_because(detail, n_trials=n, expected_trials=expected_trials)
    if not why:
        return
    stopped = "max_dollars" in why
    raise errors.RunIncomplete(
        f"incomplete: {'provider errors' if 'provider' in why else 'max_dollars'}: run "
        f"{run_id!r} is incomplete: {why}; the report covers the {n} trials that completed. "
        "The manifest is written; "
        + ("run the same command (same run id) with a higher --max-dollars to run the rest"
           if stopped and "provider" not in why else
           "complete the run with --retry-errored (same run id) once the provider answers again"))


def _too_many(report: Mapping, max_error_rate: Optional[float], run_id: str) -> None:
    if max_error_rate is None:
        return
    if isinstance(max_error_rate, bool) or not isinstance(max_error_rate, (int, float)) \
            or not 0 <= max_error_rate <= 1:
        raise InvalidInput(f"max_error_rate must be a fraction in [0, 1] (or None), got "
                           f"{max_error_rate!r}")
    n = report.get("n_trials") or 0
    kinds = (report.get("detail") or {}).get("errors") or {}
    # a trial stopped at its limit (``runs.limits``) is the agent's failure, not an outage
    bad = sum(v for k, v in kinds.items() if isinstance(v, int) and k != "limit")
    if n and bad / n > max_error_rate:
        raise errors.TooManyErrors(
            f"run {run_id!r}: {bad} of {n} trials ended in an error ({bad / n:.0%} > "
            f"max_error_rate {max_error_rate:.0%}; {', '.join(f'{k}: {v}' for k, v in sorted(kinds.items()))}). "
            "The manifest is written; fix the agent or its endpoint and re-run the errored "
            "trials with --retry-errored (same run id)")
