"""A pipeline request checked before anything runs: the agent's import path, the request's
sources and inputs, and what a recorded verdict means as an exit.

The Prefect tasks in ``tasks/`` and the ``ek-agents`` CLI share these; the library itself never
needs them (a library user passes a callable, not an import path). They live in ``ek_agents``
rather than beside the flows because the CLI refuses a bad request (:func:`check_request`) and
maps a verdict to its exit code (:func:`raise_for_verdict`) without importing Prefect.
"""
from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from .. import errors
from ..base import Episode
from ..errors import InvalidInput, did_you_mean
from ..prices import load_prices, price_of
from ..records.baselines import load_baseline
from ..records.documents import SOURCES
from ..identity import code_digest
from ..scoring.metrics import final_state_match, get_checker, output_match
from ..store import Store
from ..suite import load_suite

__all__ = ["check_request", "check_inputs", "MAX_K", "load_agent", "agent_fingerprint",
           "raise_for_verdict"]


def check_request(*, suite: Optional[str], agent: Optional[str], ingest: Optional[str],
                  ingest_path: Optional[str], sequential: bool = False,
                  baseline: Optional[str] = None) -> None:
    """Refuse an evaluation that names neither (or both) of its sources, or a sequential gate
    without a baseline or on an ingested run, before anything runs."""
    if sequential and (not baseline or ingest is not None or ingest_path is not None):
        raise InvalidInput(f"sequential=True gates an agent's trials against a baseline as they "
                           f"run (baseline={baseline!r}, ingest={ingest!r}): give a baseline "
                           "name (--baseline NAME) and a suite + agent, not a recorded run")
    if ingest is None and ingest_path is None:
        if not suite or not agent:
            raise InvalidInput("an evaluation needs a suite and an agent (--suite PATH --agent "
                               "module:callable), or a recorded run to ingest (ingest KIND PATH)")
        load_agent(agent)  # a bad import path fails here, not in a worker
        return
    if agent:
        raise InvalidInput("give an agent to run or a recorded run to ingest, not both")
    if ingest not in SOURCES or not ingest_path:
        raise InvalidInput(f"ingest needs a kind (one of {sorted(SOURCES)}) and a path; got "
                           f"kind {ingest!r}, path {ingest_path!r}"
                           f"{did_you_mean(str(ingest), SOURCES) if ingest else ''}")


#: The most trials per task a run may ask for: more is a typo, not a plan (memory grows with k).
MAX_K = 10_000


def check_inputs(store: Store, *, run_id: str, k: int = 1, suite: Optional[str] = None,
                 check: Optional[str] = None, baseline: Optional[str] = None,
                 prices: Optional[str] = None, models: Sequence[str] = ()) -> None:
    """Refuse, before any agent is called, an evaluation that could only fail after paying for
    its trials: a bad run id or k, an unknown checker, a baseline not in ``store``, a suite
    that does not load or has a task without the gold its checker needs, a price catalog that
    does not load or lacks one of ``models``. Each refusal is an ``EkAgentsError`` naming the
    value and the fix."""
    Store.validate_name(run_id, what="run id")
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInput(f"k must be an integer in 1..{MAX_K} (trials per task), got {k!r}")
    if check is not None:
        get_checker(check)  # UnknownName with did-you-mean
    if baseline is not None:
        load_baseline(store, baseline)  # BaselineError saying how to make one
    if suite:
        loaded = load_suite(suite)
        for task in loaded.tasks:
            name = task.checker or (check if check is not None else loaded.checker)
            fn = get_checker(name)
            if fn is output_match or fn is final_state_match:  # both refuse a task without gold
                fn(Episode(task.task_id), task.gold)
    if prices is not None:
        table = load_prices(prices)
        for model in models:
            price_of(model, prices=table)  # UnknownModelPrice naming the closest entries


def load_agent(path: str) -> Callable[..., Any]:
    """Import ``"package.module:callable"`` (``"module:obj.attr"`` works too).

    >>> load_agent("os.path:basename")("/a/b")
    'b'
    """
    if not isinstance(path, str) or path.count(":") != 1 or not all(path.split(":")):
        raise InvalidInput(f"agent {path!r} is not an import path: write 'package.module:callable'")
    mod_name, attr = path.split(":")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the working directory is importable
    try:
        obj: Any = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        raise InvalidInput(f"agent {path!r}: cannot import module {mod_name!r} ({exc}); "
                           "check the spelling and that it is on PYTHONPATH") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            raise InvalidInput(f"agent {path!r}: {mod_name} has no attribute {part!r}"
                               f"{did_you_mean(part, names)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InvalidInput(f"agent {path!r} is a {type(obj).__name__}, not a callable")
    return obj


def agent_fingerprint(path: str) -> Optional[str]:
    """sha256 of the source file that defines the agent (None when it has none):
    ``records.fingerprint.code_digest`` of the import path.

    It goes into the run's fingerprint, so editing the agent's code invalidates the cached
    episodes even when its import path stays the same.
    """
    return code_digest(path)


def raise_for_verdict(verdict: Optional[Mapping]) -> None:
    """Raise what a recorded gate verdict means: the refusal's own error (IncomparableRuns,
    BaselineError), :class:`~ek_agents.errors.GateFailed` listing the reasons, or nothing."""
    if not verdict or verdict.get("passed"):
        return
    name = verdict.get("baseline")
    if verdict.get("refused"):
        cls = getattr(errors, str(verdict.get("error")), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, (errors.InvalidInput, errors.RunIncomplete)) else errors.BaselineError
        raise cls(f"gate refused baseline {name!r}: {verdict['refused']}")
    raise errors.GateFailed(f"gate failed against baseline {name!r}: "
                            + "; ".join(verdict.get("reasons") or ["(no reason recorded)"]))
