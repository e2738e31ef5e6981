"""The ``ek-agents`` command line.

Commands that run a pipeline flow (``run``, ``ingest``, ``audit``, ``promote``, ``demo``) reach
Prefect through one dispatch point, :func:`_flows`, which imports the pipeline's flows (``ek_agents_pipeline.flows``)
package lazily (ek_agents itself never imports Prefect). ``report`` and ``gate`` read the store
with the library alone and start no Prefect at all.

The library modules a command needs are imported inside the command, for a measured
import-time reason: ``import ek_agents.cli`` takes ~30 ms, ``ek_agents.pipeline_support``
(harness, record, reporting, metrics, cost, bridge) ~250-350 ms, which ``ek-agents --help``
and an argument error should not pay.

Exit codes: 0 ok; 1 when the gate or the audit fails; 2 on bad input; 3 when the infrastructure
failed (the store's endpoint unreachable or timing out, access denied, bucket missing: a
:class:`~ek_agents.errors.StoreError` other than a missing run or artifact) -- always with a
one-line reason on stderr (no traceback for an ek-agents error).
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any, Optional

from .errors import ArtifactNotFound, CheckFailed, EkAgentsError, InvalidInput, MissingDependency, StoreError

__all__ = ["main", "build_parser"]

#: Offline by construction: what the CLI sets unless the environment already says otherwise.
QUIET_ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
             "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90"}


#: Where the pipeline's flows are installed (never the generic top-level name ``flows``).
FLOWS = "ek_agents_pipeline.flows"


def _flows() -> Any:
    """The one dispatch point into Prefect: the pipeline's flows (the repository's ``flows/``,
    installed as ``ek_agents_pipeline.flows``), imported on first use."""
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    try:
        return importlib.import_module(FLOWS)
    except ModuleNotFoundError as exc:
        if exc.name not in ("ek_agents_pipeline", FLOWS, "prefect"):
            raise
        raise MissingDependency(f"this command runs a Prefect flow and needs the pipeline "
                                f"({FLOWS}) and prefect ({exc}): pip install ek-agents "
                                "(or pip install -e . in the checkout)") from None


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, metavar="URL",
                   help="artifact store: a folder, file://, memory:// or s3://bucket/prefix "
                        "(default: $EK_STORE, else ./.ek)")


def _eval_args(p: argparse.ArgumentParser) -> None:
    _store_arg(p)
    p.add_argument("--k", type=int, default=1, help="trials per task (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed: trial i gets seed + i (default 0)")
    p.add_argument("--run-id", default=None, help="run id (default: a fresh timestamped id)")
    p.add_argument("--baseline", default=None, metavar="NAME", help="gate the run against this baseline")
    p.add_argument("--prices", default=None, metavar="PATH", help="price catalog (LiteLLM JSON format)")
    p.add_argument("--check", default=None, help="default checker: output | final_state | recorded")
    p.add_argument("--model", default="", help="model name recorded in the run provenance")
    p.add_argument("--simulator", default="", help="user simulator recorded in the provenance")
    p.add_argument("--scaffold", default="", help="agent scaffold recorded in the provenance")
    p.add_argument("--tolerance", type=float, default=0.0, help="gate: tolerated success drop")
    p.add_argument("--cost-tolerance", type=float, default=0.0,
                   help="gate: tolerated relative rise of the cost per success")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ek-agents``."""
    ap = argparse.ArgumentParser(prog="ek-agents", description="Evaluate AI agents in dollars per "
                                 "successfully completed task.")
    ap.add_argument("-v", "--verbose", action="store_true", help="show Prefect's logs")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run an agent over a suite through the evaluate-agent flow")
    p.add_argument("--suite", required=True, metavar="PATH", help="suite file (YAML or JSONL)")
    p.add_argument("--agent", required=True, metavar="MODULE:CALLABLE", help="the agent's import path")
    _eval_args(p)
    p.add_argument("--temperature", type=float, default=None)
    p.add_argument("--chunk-size", type=int, default=None, help="trials per Prefect task run")
    p.add_argument("--max-concurrency", type=int, default=8, help="trials at once per chunk")
    p.add_argument("--timeout", type=float, default=None, dest="timeout_s", help="seconds per trial")
    p.add_argument("--retries", type=int, default=0, help="retries of a transient agent error")
    p.add_argument("--task-runner", choices=("threads", "dask"), default="threads")
    p.add_argument("--max-workers", type=int, default=4, help="chunks at once (default 4)")
    p.add_argument("--dask-address", default=None, help="an existing Dask cluster (tcp://...)")

    p = sub.add_parser("ingest", help="evaluate a recorded run (Inspect log, tau-bench results, "
                                      "messages JSONL)")
    p.add_argument("kind", choices=("inspect", "tau-bench", "messages"))
    p.add_argument("path", help="the recorded run (a path or any fsspec URL)")
    p.add_argument("--suite", default=None, metavar="PATH",
                   help="grade against this suite (default: the success the source recorded)")
    _eval_args(p)

    p = sub.add_parser("report", help="print a stored run's report, or write an HTML/Markdown "
                                      "report comparing runs (no Prefect needed)")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID")
    p.add_argument("--json", action="store_true", help="print the report document(s) as JSON")
    p.add_argument("--html", default=None, metavar="PATH",
                   help="write a self-contained HTML report of the runs (path or fsspec URL)")
    p.add_argument("--markdown", default=None, metavar="PATH",
                   help="write the report of the runs as Markdown (path or fsspec URL)")
    _store_arg(p)

    p = sub.add_parser("gate", help="gate a stored run against a baseline (no Prefect needed)")
    p.add_argument("run_id")
    p.add_argument("--baseline", required=True, metavar="NAME")
    p.add_argument("--tolerance", type=float, default=0.0)
    p.add_argument("--cost-tolerance", type=float, default=0.0)
    _store_arg(p)

    p = sub.add_parser("audit", help="verify a run's artifacts and recompute its figures")
    p.add_argument("run_id", nargs="?", default=None)
    p.add_argument("--baseline", default=None, metavar="NAME", help="audit the run a baseline came from")
    _store_arg(p)

    p = sub.add_parser("promote", help="make a run a named baseline")
    p.add_argument("run_id")
    p.add_argument("--name", required=True)
    _store_arg(p)

    p = sub.add_parser("demo", help="the bundled shop world: two agents, a baseline, a gate, an audit")
    p.add_argument("--store", default="./.ek", metavar="URL", help="artifact store (default ./.ek)")
    p.add_argument("--k", type=int, default=4, help="trials per task (default 4)")
    return ap


def _store(url: Optional[str]) -> Any:
    from .store import Store

    return Store(url)


def _print_report(st: Any, run_id: str) -> None:
    from .manifest import report_markdown
    from .record import run_report

    print(report_markdown(*run_report(st, run_id)))


def _cmd_run(a: argparse.Namespace) -> int:
    from .harness import new_run_id

    st = _store(a.store)
    run_id = a.run_id or new_run_id()
    params = dict(k=a.k, seed=a.seed, store=st.url, run_id=run_id, baseline=a.baseline,
                  prices=a.prices, check=a.check, model=a.model, simulator=a.simulator,
                  scaffold=a.scaffold, tolerance=a.tolerance, cost_tolerance=a.cost_tolerance)
    if a.command == "run":
        params.update(suite=a.suite, agent=a.agent, temperature=a.temperature,
                      chunk_size=a.chunk_size, max_concurrency=a.max_concurrency,
                      timeout_s=a.timeout_s, retries=a.retries, task_runner=a.task_runner,
                      max_workers=a.max_workers, dask_address=a.dask_address)
    else:
        params.update(suite=a.suite, ingest=a.kind, ingest_path=a.path)
    from .pipeline_support import check_request
    from .store import run_key

    check_request(suite=params["suite"], agent=params.get("agent"), ingest=params.get("ingest"),
                  ingest_path=params.get("ingest_path"))  # bad input: exit 2 before Prefect starts
    store_failed = False
    try:
        _flows().call_flow("evaluate_agent", **params)
    except StoreError:
        store_failed = True  # no report to print, and no second wait on a failing store
        raise
    finally:
        if not store_failed and st.exists(run_key(run_id, "manifest")):
            _print_report(st, run_id)
    print(f"run {run_id}: manifest at {st.url}/{run_key(run_id, 'manifest')}")
    return 0


def _cmd_report(a: argparse.Namespace) -> int:
    st = _store(a.store)
    if a.html is not None or a.markdown is not None:
        from .htmlreport import write_report

        for kind, path in write_report(st, a.run_ids, html=a.html, markdown=a.markdown).items():
            print(f"{kind} report of {len(a.run_ids)} run(s): {path}")
    elif a.json:
        from .record import run_report

        docs = {rid: run_report(st, rid)[1] for rid in a.run_ids}
        print(json.dumps(docs[a.run_ids[0]] if len(a.run_ids) == 1 else docs, indent=2, sort_keys=True))
    elif len(a.run_ids) > 1:
        from .htmlreport import render_markdown
        from .runsummary import load_runs

        print(render_markdown(load_runs(st, a.run_ids)), end="")
    else:
        _print_report(st, a.run_ids[0])
    return 0


def _cmd_gate(a: argparse.Namespace) -> int:
    from .pipeline_support import raise_for_verdict
    from .record import gate_run

    verdict = gate_run(_store(a.store), a.run_id, a.baseline, tolerance=a.tolerance,
                       cost_tolerance=a.cost_tolerance)
    raise_for_verdict(verdict)
    for w in verdict.get("warnings") or []:
        print(f"warning: {w}")
    print(f"gate passed: run {a.run_id!r} vs baseline {a.baseline!r}")
    return 0


def _cmd_audit(a: argparse.Namespace) -> int:
    if a.run_id is None and a.baseline is None:
        raise InvalidInput("audit needs a RUN_ID or --baseline NAME")
    result = _flows().call_flow("audit_run", run_id=a.run_id, baseline=a.baseline,
                                store=_store(a.store).url)
    print(f"audit passed: run {result['run_id']!r}, {len(result['checked'])} checks")
    return 0


def _cmd_promote(a: argparse.Namespace) -> int:
    out = _flows().call_flow("promote_baseline", run_id=a.run_id, name=a.name,
                             store=_store(a.store).url)
    print(f"run {a.run_id!r} is now baseline {a.name!r} ({out['key']})")
    return 0


def _cmd_demo(a: argparse.Namespace) -> int:
    store = os.path.abspath(a.store) if "://" not in a.store else a.store
    if "://" not in store:  # keep Prefect's database with the demo's store, never in ~/.prefect
        os.environ.setdefault("PREFECT_HOME", os.path.join(store, "prefect"))
        os.makedirs(os.environ["PREFECT_HOME"], exist_ok=True)
    _flows().demo.run_demo(store, k=a.k)
    return 0


COMMANDS = {"run": _cmd_run, "ingest": _cmd_run, "report": _cmd_report, "gate": _cmd_gate,
            "audit": _cmd_audit, "promote": _cmd_promote, "demo": _cmd_demo}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``ek-agents``; return the exit code (0 ok, 1 gate/audit failed, 2 bad input,
    3 infrastructure failed)."""
    a = build_parser().parse_args(argv)
    if not a.verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
        # aiohttp's writes cut by a reset endpoint end as "Task exception was never retrieved"
        # tracebacks on asyncio's logger; the StoreError that follows says it in one line
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    try:
        return COMMANDS[a.command](a)
    except CheckFailed as exc:
        print(f"ek-agents: {exc}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"ek-agents: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ArtifactNotFound) else 3
    except EkAgentsError as exc:
        print(f"ek-agents: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
