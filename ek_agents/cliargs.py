"""The ``ek-agents`` command line's argument types and shared option groups: each option is
bounded in the parser (beyond the bounds a value is a typo, and costs minutes or memory to find
out), and a refusal names the value and the range. :mod:`ek_agents.cli` builds its commands
from these. :func:`name_arg` imports the store only when it checks a name (a function-level
import, for the reason :mod:`ek_agents.cli`'s docstring measures: ``ek-agents --help`` and an
argument error should not pay for the library's imports).
"""
from __future__ import annotations

import argparse
import math
from typing import Any

from .errors import InvalidInput

__all__ = ["MAX_K", "MAX_CONCURRENCY", "MAX_RETRIES", "MAX_SEED", "int_in", "number", "name_arg",
           "store_arg", "eval_args", "tolerance_args"]

#: Bounds of the options (beyond them a value is a typo, and costs minutes or memory to find out).
MAX_K = 10_000  # = pipeline.MAX_K (not imported here: import time)
MAX_CONCURRENCY = 10_000
MAX_RETRIES = 100
MAX_SEED = 2**63 - 1


def int_in(lo: int, hi: int) -> Any:
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{v} is out of range: use an integer in {lo}..{hi}")
        return v
    return parse


def number(lo: float, *, above: bool = False) -> Any:
    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(v) or v < lo or (above and v == lo):
            raise argparse.ArgumentTypeError(f"{text} is out of range: use a finite number "
                                             f"{'>' if above else '>='} {lo:g}")
        return v
    return parse


def name_arg(what: str) -> Any:
    def parse(text: str) -> str:
        from .store import Store  # lazy: see the module docstring (import time)

        try:
            return Store.validate_name(text, what=what)
        except InvalidInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, metavar="URL",
                   help="artifact store: a folder, file://, memory:// or s3://bucket/prefix "
                        "(default: $EK_STORE, else ./.ek)")


def eval_args(p: argparse.ArgumentParser) -> None:
    store_arg(p)
    p.add_argument("--k", type=int_in(1, MAX_K), default=1,
                   help=f"trials per task, 1..{MAX_K} (default 1)")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0,
                   help="base seed >= 0: trial i gets seed + i (default 0)")
    p.add_argument("--run-id", type=name_arg("run id"), default=None,
                   help="run id (default: a fresh timestamped id)")
    p.add_argument("--baseline", type=name_arg("baseline name"), default=None, metavar="NAME",
                   help="gate the run against this baseline")
    p.add_argument("--prices", default=None, metavar="PATH", help="price catalog (LiteLLM JSON format)")
    p.add_argument("--check", default=None, help="default checker: output | final_state | recorded")
    p.add_argument("--model", default="", help="model name recorded in the run provenance")
    p.add_argument("--simulator", default="", help="user simulator recorded in the provenance")
    p.add_argument("--scaffold", default="", help="agent scaffold recorded in the provenance")
    tolerance_args(p)
    p.add_argument("--prefect-server", action="store_true",
                   help="with no Prefect API configured, start a temporary local Prefect server "
                        "and run the flow there, recording the flow run in $PREFECT_HOME's "
                        "database (default: run in this process, without Prefect)")


def tolerance_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tolerance", type=number(0.0), default=0.0,
                   help="gate: tolerated success drop (>= 0)")
    p.add_argument("--cost-tolerance", type=number(0.0), default=0.0,
                   help="gate: tolerated relative rise of the cost per success (>= 0)")


#: ``run`` options of the provider policy and the limits (``ek_agents.execution.limits``): their
#: flow parameters have the same names.
LIMIT_OPTIONS = ("provider_retry_s", "trial_dollars", "trial_tokens", "trial_calls", "max_dollars")


def limit_args(p: argparse.ArgumentParser) -> None:
    """``--provider-retry-s``, ``--trial-dollars``, ``--trial-tokens``, ``--trial-calls``,
    ``--max-dollars`` (docs/guides/providers.md)."""
    p.add_argument("--provider-retry-s", type=number(0.0), default=None, metavar="SECONDS",
                   help="per trial: seconds of waits between attempts a provider error (429, "
                        "5xx, timeout) ended, before it is left unresolved (default 120)")
    p.add_argument("--trial-dollars", type=number(0.0, above=True), default=None,
                   help="a trial over this many dollars fails naming the limit (needs --prices)")
    p.add_argument("--trial-tokens", type=int_in(1, 10**12), default=None,
                   help="a trial over this many tokens fails naming the limit")
    p.add_argument("--trial-calls", type=int_in(1, 10**9), default=None,
                   help="a trial over this many model calls fails naming the limit")
    p.add_argument("--max-dollars", type=number(0.0, above=True), default=None,
                   help="no new trial starts once this run would spend more (needs --prices); "
                        "the run stops resumably and exits 5")
