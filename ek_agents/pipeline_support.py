"""What only the pipeline needs: agent import paths, trial chunk plans, exit codes.

The Prefect tasks in ``tasks/`` and the ``ek-agents`` CLI share these; the library itself never
needs them (a library user passes a callable, not an import path). They live in ``ek_agents``
rather than beside the flows because the CLI refuses a bad request (:func:`check_request`) and
maps a verdict to its exit code (:func:`raise_for_verdict`) without importing Prefect.

>>> plan_chunks(["a", "b", "c"], k=2, chunk_size=4)
[[['a', 0], ['a', 1], ['b', 0], ['b', 1]], [['c', 0], ['c', 1]]]
"""
from __future__ import annotations

import importlib
import inspect
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Optional

from . import errors
from .base import RunProvenance
from .errors import InvalidInput, did_you_mean
from .harness import run_trials
from .manifest import input_digest
from .record import SOURCES, episodes_doc, stage_output, tasks_of
from .store import sha256_hex

__all__ = ["check_request", "load_agent", "agent_fingerprint", "plan_chunks", "raise_for_verdict",
           "DEFAULT_CHUNKS", "plan_trials", "run_trial_chunk", "collect_episodes"]

#: A run's trials are split into about this many chunks (one Prefect task run each).
DEFAULT_CHUNKS = 16


def check_request(*, suite: Optional[str], agent: Optional[str], ingest: Optional[str],
                  ingest_path: Optional[str]) -> None:
    """Refuse an evaluation that names neither (or both) of its sources, before anything runs."""
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
    """sha256 of the source file that defines the agent (None when it has none).

    It goes into the run-trials input digest, so editing the agent's code invalidates the
    cached episodes even when its import path stays the same.
    """
    try:
        src = inspect.getsourcefile(importlib.import_module(path.split(":")[0]))
        with open(src, "rb") as fh:  # type: ignore[arg-type]
            return sha256_hex(fh.read())
    except (TypeError, OSError, ImportError):
        return None


def plan_chunks(task_ids: Sequence[str], *, k: int, chunk_size: Optional[int] = None) -> list[list[list]]:
    """Split the ``(task_id, trial)`` pairs of a run into chunks, one Prefect task run each.

    Default size: about :data:`DEFAULT_CHUNKS` chunks, so 2000 trials are 16 task runs of 125.
    Pairs are lists (JSON-safe as flow parameters).
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInput(f"k must be an integer >= 1, got {k!r}")
    pairs = [[t, i] for t in task_ids for i in range(k)]
    if chunk_size is None:
        chunk_size = max(1, math.ceil(len(pairs) / DEFAULT_CHUNKS))
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInput(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    return [pairs[i:i + chunk_size] for i in range(0, len(pairs), chunk_size)]



def raise_for_verdict(verdict: Optional[Mapping]) -> None:
    """Raise what a recorded gate verdict means: the refusal's own error (IncomparableRuns,
    BaselineError), :class:`~ek_agents.errors.GateFailed` listing the reasons, or nothing."""
    if not verdict or verdict.get("passed"):
        return
    name = verdict.get("baseline")
    if verdict.get("refused"):
        cls = getattr(errors, str(verdict.get("error")), None)
        cls = cls if isinstance(cls, type) and issubclass(cls, errors.InvalidInput) else errors.BaselineError
        raise cls(f"gate refused baseline {name!r}: {verdict['refused']}")
    raise errors.GateFailed(f"gate failed against baseline {name!r}: "
                            + "; ".join(verdict.get("reasons") or ["(no reason recorded)"]))


# --------------------------------------------------------------------------- trials in chunks

def _trials(store: Any, run_id: str, tasks: Mapping, agent: str, *, k: int, seed: Optional[int],
            run: Mapping, max_concurrency: int, timeout_s: Optional[float], retries: int,
            only: Optional[list] = None) -> list:
    return run_trials(load_agent(agent), tasks_of(store.read_json(tasks["key"])), k=k, seed=seed,
                      run=RunProvenance.from_dict(run), max_concurrency=max_concurrency,
                      timeout_s=timeout_s, retries=retries, store=store, run_id=run_id, only=only,
                      progress=False)


def plan_trials(store: Any, run_id: str, tasks: Mapping, agent: str, *, k: int,
                seed: Optional[int], run: Mapping, chunk_size: Optional[int],
                timeout_s: Optional[float], retries: int) -> dict:
    """The run's input digest, and either the cached episodes (a reference) or the chunks to
    run: ``{"digest", "episodes", "chunks"}``."""
    digest = input_digest("episodes", suite=tasks["digest"], agent=agent,
                          agent_code=agent_fingerprint(agent), k=k, seed=seed, run=run,
                          timeout_s=timeout_s, retries=retries)
    reused = stage_output(store, run_id, "episodes", digest)  # a cache hit, or None
    if reused is not None:
        return {"digest": digest, "chunks": [], "episodes": reused}
    ids = [t["task_id"] for t in store.read_json(tasks["key"])["tasks"]]
    return {"digest": digest, "episodes": None, "chunks": plan_chunks(ids, k=k, chunk_size=chunk_size)}


def run_trial_chunk(store: Any, run_id: str, tasks: Mapping, agent: str, *, k: int,
                    seed: Optional[int], run: Mapping, pairs: list, max_concurrency: int,
                    timeout_s: Optional[float], retries: int) -> int:
    """``harness.run_trials(only=pairs)``: run (or resume) one chunk; the number of episodes."""
    return len(_trials(store, run_id, tasks, agent, k=k, seed=seed, run=run,
                       max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries,
                       only=pairs))


def collect_episodes(store: Any, run_id: str, tasks: Mapping, agent: str, *, k: int,
                     seed: Optional[int], run: Mapping, digest: str, max_concurrency: int,
                     timeout_s: Optional[float], retries: int) -> dict:
    """Every stored trial of the run (``harness.run_trials`` loads them all, runs none) -> the
    run's episodes document, indexed under the run's input digest."""
    episodes = _trials(store, run_id, tasks, agent, k=k, seed=seed, run=run,
                       max_concurrency=max_concurrency, timeout_s=timeout_s, retries=retries)
    return stage_output(store, run_id, "episodes", digest, lambda: episodes_doc(episodes))
