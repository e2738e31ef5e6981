"""The one error tree of ek-agents.

Every error raised on bad input is an :class:`EkAgentsError` *and* the matching builtin
(``ValueError``, ``KeyError``, ...), so callers can catch either.  A message names the
offending value and says what to do about it.

>>> from ek_agents.errors import InvalidInput, EkAgentsError
>>> issubclass(InvalidInput, ValueError) and issubclass(InvalidInput, EkAgentsError)
True
>>> str(UnknownName("checker 'outptu' is not registered; did you mean 'output'?"))
"checker 'outptu' is not registered; did you mean 'output'?"
"""
from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator

__all__ = [
    "EkAgentsError", "InvalidInput", "BridgeError", "SchemaVersionError", "SuiteError",
    "InsufficientTrials", "IncomparableRuns", "BaselineError", "UnknownName",
    "UnknownModelPrice", "MissingDependency", "StoreError", "ArtifactNotFound",
    "StoreUnreachable", "StoreTimeout", "StoreAccessDenied", "BucketNotFound",
    "IntegrityError", "TransientAgentError", "AgentTimeout", "did_you_mean",
    "CheckFailed", "GateFailed", "AuditFailed", "DocumentError", "DigestMismatch",
    "RunMismatch", "RunInUse", "TooManyErrors", "UnidentifiedAgent", "RunIncomplete",
    "exception_chain",
]


class EkAgentsError(Exception):
    """Root of every error ek-agents raises on purpose."""

    def __str__(self) -> str:  # KeyError would repr() its message; keep it readable
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class InvalidInput(EkAgentsError, ValueError):
    """A value that cannot be used as given (the message names it and the fix)."""


class BridgeError(InvalidInput):
    """Malformed input to a bridge (a transcript, a log, a usage record)."""


class SchemaVersionError(InvalidInput):
    """A stored artifact written by an incompatible version of ek-agents."""


class SuiteError(InvalidInput):
    """A task-suite file that does not follow the suite schema."""


class InsufficientTrials(InvalidInput):
    """An estimator asked for more trials than were run (e.g. ``k > n``)."""


class IncomparableRuns(InvalidInput):
    """Two runs whose provenance (simulator, suite version, scaffold) differs."""


class BaselineError(InvalidInput):
    """A baseline that is empty, malformed or missing."""


class DocumentError(InvalidInput):
    """A stored document (manifest, report, baseline, episodes, ...) whose shape is wrong: the
    message names the document and the field."""


class UnknownName(EkAgentsError, KeyError):
    """A name (checker, scheme, tool) that is not registered."""


class UnknownModelPrice(UnknownName):
    """Raised when a model's rates are not in the injected price catalog."""


class MissingDependency(EkAgentsError, ImportError):
    """An optional dependency is needed (the message names the extra to install)."""


class StoreError(EkAgentsError, OSError):
    """The artifact store could not read or write (the CLI exits 3: the infrastructure failed).

    ``transient`` says whether the same operation may succeed if tried again later (the
    pipeline retries exactly those); a permanent one fails at once.
    """

    #: Whether retrying the same operation later may succeed.
    transient: bool = False


class ArtifactNotFound(StoreError, FileNotFoundError):
    """A run, artifact or baseline is not in the store."""


class StoreUnreachable(StoreError, ConnectionError):
    """The store's endpoint refused or dropped the connection, or answered with a server error
    (5xx, throttling): transient."""

    transient = True


class StoreTimeout(StoreError, TimeoutError):
    """The store's endpoint did not answer within the configured connect/read timeout:
    transient."""

    transient = True


class StoreAccessDenied(StoreError, PermissionError):
    """The store refused the credentials (missing, wrong, expired, or not allowed): permanent."""


class BucketNotFound(StoreError, FileNotFoundError):
    """The bucket (or root folder) of the store does not exist: permanent."""


class IntegrityError(EkAgentsError, ValueError):
    """A stored artifact whose bytes no longer match its recorded digest."""


class TransientAgentError(EkAgentsError, RuntimeError):
    """Raised *by an agent* for a failure worth retrying (rate limit, 5xx, dropped socket)."""


class AgentTimeout(EkAgentsError, TimeoutError):
    """A trial that overran its ``timeout_s``."""


class CheckFailed(EkAgentsError, RuntimeError):
    """A check ran and said no (the CLI exits 1): the input was fine, the result is not."""


class GateFailed(CheckFailed):
    """The regression gate found the agent worse than its baseline (the reasons are listed)."""


class AuditFailed(CheckFailed):
    """An audit found a stored artifact or a recorded figure that does not check out."""


class DigestMismatch(AuditFailed, IntegrityError):
    """A run's document whose bytes are not the ones its manifest lists (or that the manifest
    does not list): a read that would trust it is refused, with the audit's exit code."""


class RunIncomplete(EkAgentsError, ValueError):
    """A run that is not complete (the CLI exits 5, its manifest written first): trials a
    provider error left unresolved, or trials not started at its ``max_dollars``. Its figures
    cover the trials that completed; the gate neither passes nor fails it. Complete it with
    ``--retry-errored`` (or a higher ``--max-dollars``), same run id."""


class RunMismatch(InvalidInput):
    """A resume of a run id whose stored fingerprint (agent, code, configuration, suite, k,
    seed, provenance, limits) differs from this call's: the message names the fields."""


class UnidentifiedAgent(RunMismatch):
    """A resume of a run whose agent had state that could not be identified (a live client, a
    lock, ...): the message names the attribute and the ways out (declare ``ek_config`` / pass
    ``agent_id``, or a fresh run id / ``refresh``)."""


class RunInUse(EkAgentsError, RuntimeError):
    """Another writer holds the run's lease (the message names the holder)."""


class TooManyErrors(CheckFailed):
    """A run whose errored trials exceed the allowed fraction (an outage, not a verdict)."""


def exception_chain(exc: BaseException, limit: int = 64) -> Iterator[BaseException]:
    """``exc`` and what it wraps (``__cause__``, ``__context__``, an exception group's
    exceptions), each once, depth first, at most ``limit`` of them: where the store and the
    provider classifiers look for the error a library raised under its caller's.

    >>> try:
    ...     try:
    ...         raise KeyError("inner")
    ...     except KeyError as e:
    ...         raise ValueError("outer") from e
    ... except ValueError as e:
    ...     [type(x).__name__ for x in exception_chain(e)]
    ['ValueError', 'KeyError']
    """
    seen: set = set()
    stack = [exc]
    while stack and len(seen) < limit:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        inner = list(getattr(e, "exceptions", None) or ()) if isinstance(e, BaseExceptionGroup) else []
        for nxt in reversed([e.__cause__, e.__context__, *inner]):
            if isinstance(nxt, BaseException):
                stack.append(nxt)


def did_you_mean(name: str, options: Iterable[str], *, n: int = 3) -> str:
    """A ``"; did you mean 'x'?"`` suffix listing the closest of ``options`` (or ``""``).

    >>> did_you_mean("outptu", ["output", "final_state", "recorded"])
    "; did you mean 'output'?"
    """
    close = difflib.get_close_matches(name, list(options), n=n, cutoff=0.5)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
