"""The ``ek-agents`` command line.

Commands that run a pipeline flow (``run``, ``ingest``, ``demo``) reach Prefect through one
dispatch point, :func:`_flows`, which imports the pipeline's flows (``ek_agents_pipeline.flows``)
package lazily (ek_agents itself never imports Prefect). ``report`` and ``gate`` read the store
with the library alone and start no Prefect at all; so do ``audit`` and ``promote`` unless a
Prefect API is configured (then they run as flows there, recorded like any deployment's).

Every option is checked before Prefect starts or an agent is called -- bounds in the parser,
then the run id, the store, the baseline, the suite (each task's gold for its checker), the
agent's import path and the price catalog -- and a refusal is one line on stderr, exit 2.
``run`` (and ``ingest``) with a Prefect API configured run the flow there (recorded); with none
they run the same plan in this process without importing Prefect (``ek_agents.localrun``: the
same stage documents, lease, identity rules and exit codes), since a Prefect server only to
record the flow run takes longer to start than the run takes. ``--prefect-server`` (and
``--task-runner dask``) take the flow's way with no API configured: a temporary local server
(``flows/local.py``), started before Prefect is imported so the two overlap, and stopped on
exit or SIGTERM/SIGHUP/SIGINT. ``-v`` says which way ran and where the time went.

The library modules a command needs are imported inside the command, for a measured
import-time reason: ``import ek_agents.cli`` takes ~30 ms, ``ek_agents.pipeline.chunks``
(harness, record, reporting, metrics, cost, bridge) ~250-350 ms, which ``ek-agents --help``
and an argument error should not pay.

Exit codes: 0 ok; 1 when the gate or the audit fails, or when a stored document does not match
its run's manifest (``report``, ``gate``, ``promote``: DigestMismatch); 2 on bad input (a
malformed stored document included; also a resume refused by the run's fingerprint,
RunMismatch, and a run id another writer holds, RunInUse); 3 when the infrastructure failed
(the store's endpoint unreachable or timing out, access denied, bucket missing: a
:class:`~ek_agents.errors.StoreError` other than a missing run or artifact); 4 when more of a
run's trials errored than ``--max-error-rate`` allows (TooManyErrors, after the manifest is
written); 5 when the run is incomplete -- trials a provider error left unresolved, or trials
not started at ``--max-dollars`` (RunIncomplete, after the manifest is written; complete it
with ``--retry-errored`` or a higher cap) -- always with a one-line reason on stderr (no
traceback for an ek-agents error).
"""
from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any, Optional

from .cliargs import (LIMIT_OPTIONS, MAX_CONCURRENCY, MAX_K, MAX_RETRIES, MAX_SEED, eval_args,
                      int_in, limit_args, name_arg, number, store_arg, tolerance_args)
from .exportcmd import add_export_parser, cmd_export
from .errors import (ArtifactNotFound, AuditFailed, CheckFailed, EkAgentsError, InvalidInput,
                     MissingDependency, RunIncomplete, StoreError, TooManyErrors)
from . import monitorcli

__all__ = ["main", "build_parser"]

#: Offline by construction: what the CLI sets unless the environment already says otherwise.
QUIET_ENV = {"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
             "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90"}


#: Where the pipeline's flows are installed (never the generic top-level name ``flows``).
FLOWS = "ek_agents_pipeline.flows"
class _Parser(argparse.ArgumentParser):
    """argparse, refusing in one line (``ek-agents run: error: argument --k: ...``), exit 2."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _local() -> Any:
    """The pipeline's Prefect-free module that finds or starts a Prefect API (None when the
    pipeline is not installed)."""
    _quiet()
    try:
        return importlib.import_module(FLOWS + ".local")
    except ModuleNotFoundError as exc:
        if exc.name not in ("ek_agents_pipeline", FLOWS, FLOWS + ".local"):
            raise
        return None


class _Clock:
    """Where a command's time went, said on ``-v``."""

    def __init__(self, verbose: bool, since: Optional[float] = None) -> None:
        now = time.perf_counter() if since is None else since
        self.verbose, self.t0, self.last, self.parts = verbose, now, now, []

    def mark(self, what: str) -> None:
        now = time.perf_counter()
        self.parts.append(f"{what} {now - self.last:.2f} s")
        self.last = now

    def say(self, extra: Optional[dict] = None, where: Optional[str] = None) -> None:
        if self.verbose:
            more = [f"{k.replace('_', ' ')} {v:.2f} s" for k, v in (extra or {}).items()]
            print(f"ek-agents: time: {', '.join(self.parts + more)}; total "
                  f"{time.perf_counter() - self.t0:.2f} s"
                  + (f" (temporary Prefect server {where}, stopped)" if where else ""),
                  file=sys.stderr)


def _flows() -> Any:
    """The one dispatch point into Prefect: the pipeline's flows (the repository's ``flows/``,
    installed as ``ek_agents_pipeline.flows``), imported on first use."""
    _quiet()
    try:
        return importlib.import_module(FLOWS)
    except ModuleNotFoundError as exc:
        if exc.name not in ("ek_agents_pipeline", FLOWS, "prefect"):
            raise
        raise MissingDependency(f"this command runs a Prefect flow and needs the pipeline "
                                f"({FLOWS}) and prefect ({exc}): pip install ek-agents "
                                "(or pip install -e . in the checkout)") from None


def _quiet() -> None:
    """Offline by construction (:data:`QUIET_ENV`), for Prefect here and for a server we start."""
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ek-agents``."""
    ap = _Parser(prog="ek-agents", description="Evaluate AI agents in dollars per "
                                 "successfully completed task.")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="show Prefect's logs, and where a command's time went")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("run", help="run an agent over a suite: the evaluate-agent flow "
                                       "(in this process when no Prefect API is configured)")
    p.add_argument("--suite", required=True, metavar="PATH", help="suite file (YAML or JSONL)")
    p.add_argument("--agent", required=True, metavar="MODULE:CALLABLE", help="the agent's import path")
    p.add_argument("--agent-id", default=None, metavar="ID",
                   help="what identifies the agent (e.g. bot-v3/gpt-4o), instead of digesting its "
                        "state: needed to resume a run whose agent holds a live client or lock "
                        "and declares no ek_config")
    eval_args(p)
    p.add_argument("--temperature", type=number(0.0), default=None)
    p.add_argument("--chunk-size", type=int_in(1, MAX_K * MAX_CONCURRENCY), default=None,
                   help="trials per Prefect task run (>= 1)")
    p.add_argument("--max-concurrency", type=int_in(1, MAX_CONCURRENCY), default=8,
                   help=f"trials at once per chunk, 1..{MAX_CONCURRENCY} (default 8; in-process, "
                        "with no Prefect API, trials at once in all)")
    p.add_argument("--timeout", type=number(0.0, above=True), default=None, dest="timeout_s",
                   help="seconds per trial (> 0)")
    p.add_argument("--retries", type=int_in(0, MAX_RETRIES), default=0,
                   help=f"retries of a transient agent error, 0..{MAX_RETRIES} (default 0)")
    p.add_argument("--flush-s", type=number(0.0, above=True), default=10.0, metavar="SECONDS",
                   help="a finished trial is stored within SECONDS (default 10): what a crash "
                        "can lose of the finished trials")
    p.add_argument("--capture", choices=("otel",), default=None, help="each trial's OpenTelemetry "
                   "spans -> its tool calls and per-call cost (pip install 'ek-agents[otel]')")
    limit_args(p)
    p.add_argument("--task-runner", choices=("threads", "dask"), default="threads")
    p.add_argument("--max-workers", type=int_in(1, 1024), default=4, help="chunks at once on "
                   "the flow's task runner, 1..1024 (default 4; in-process one loop runs them all; "
                   "with --scale the Dask worker processes)")
    p.add_argument("--dask-address", default=None, help="an existing Dask cluster (tcp://...)")
    p.add_argument("--refresh", action="store_true",
                   help="run every trial afresh: no cached episodes, the run id's stored trials "
                        "replaced (also with another agent or settings)")
    p.add_argument("--retry-errored", action="store_true",
                   help="re-run only the trials that ended in an error (e.g. after an outage)")
    p.add_argument("--max-error-rate", type=float, default=0.5, metavar="FRACTION",
                   help="fail the run (exit 4) when more than this fraction of its trials "
                        "errored (default 0.5)")
    p.add_argument("--break-lease", action="store_true",
                   help="remove the run id's writer lease first (its writer died)")
    p.add_argument("--wait-lease", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to SECONDS for another writer of the run id to finish")
    p.add_argument("--sequential", action="store_true", help="with --baseline: stop once the gate has decided")
    p.add_argument("--scale", action="store_true", help="the evaluate-at-scale flow: trials in "
                   "segments, chunks on a Dask cluster (--max-workers processes here, or "
                   "--dask-address), the report merged from the segments; no gate")
    monitorcli.judge_args(p)  # grade with an endpoint judge instead of --check

    p = sub.add_parser("ingest", help="evaluate a recorded run (Inspect log, tau-bench results, "
                       "messages JSONL, OpenTelemetry OTLP/JSON)")
    p.add_argument("kind", choices=("inspect", "tau-bench", "messages", "otlp"))
    p.add_argument("path", help="the recorded run (a path or any fsspec URL)")
    p.add_argument("--suite", default=None, metavar="PATH",
                   help="grade against this suite (default: the success the source recorded)")
    eval_args(p)
    monitorcli.grouping_args(p)
    monitorcli.judge_args(p)

    p = sub.add_parser("report", help="print a stored run's report, or write an HTML/Markdown "
                                      "report comparing runs (no Prefect needed)")
    p.add_argument("run_ids", nargs="+", metavar="RUN_ID", type=name_arg("run id"))
    p.add_argument("--json", action="store_true", help="print the report document(s) as JSON")
    p.add_argument("--html", default=None, metavar="PATH",
                   help="write a self-contained HTML report of the runs (path or fsspec URL)")
    p.add_argument("--markdown", default=None, metavar="PATH",
                   help="write the report of the runs as Markdown (path or fsspec URL)")
    p.add_argument("--labels", metavar="FILE", help="people's verdicts on some trials (JSONL): the "
                   "judge-corrected success beside the judge's raw one (one run; printed or --json)")
    store_arg(p)

    p = sub.add_parser("gate", help="gate a stored run against a baseline (no Prefect needed)")
    p.add_argument("run_id", type=name_arg("run id"))
    p.add_argument("--baseline", required=True, metavar="NAME", type=name_arg("baseline name"))
    p.add_argument("--labels", metavar="FILE", help="labels of this run: compare judge-corrected "
                   "rates (when the baseline has labels too)")
    tolerance_args(p)
    store_arg(p)

    p = sub.add_parser("plan-labels", help="pick which trials of a judged run to label (stratified "
                                           "by task) and write the file a person fills in")
    p.add_argument("run_id", type=name_arg("run id"))
    p.add_argument("--n", type=int_in(1, 1_000_000), required=True, help="labels to plan")
    p.add_argument("--out", metavar="PATH", help="where to write the file (default labels-RUN_ID.jsonl)")
    p.add_argument("--width", type=number(0.0, above=True), default=0.1, help="labels for this width")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    p.add_argument("--series", default=None, type=name_arg("series name"),
                   help="RUN_ID is a window of this monitored series")
    store_arg(p)

    p = sub.add_parser("plan", help="plan tasks x k, labels and dollars from a pilot run, for a "
                                    "target interval width or gate power")
    p.add_argument("run_id", type=name_arg("run id"))
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--width", type=number(0.0, above=True), help="target 95%% CI width on success")
    g.add_argument("--cps-width", type=number(0.0, above=True), help="target 95%% interval width "
                   "on cost per success, a fraction of the pilot's (0.2: +-10%%)")
    g.add_argument("--power", type=number(0.0, above=True), help="target gate power (0.8), with --drop")
    p.add_argument("--drop", type=number(0.0, above=True), help="success drop to detect (0.1: 10 points)")
    p.add_argument("--max-tasks", type=int_in(2, 10_000_000), help="tasks (default: the pilot's)")
    p.add_argument("--labels", metavar="FILE", help="the pilot's labels: plan the labels too")
    p.add_argument("--method", choices=("assurance", "plug-in"), default="assurance",
                   help="assurance (default): meet the goal with 80%% probability over the "
                        "populations the pilot could have come from; plug-in: at its point estimates")
    store_arg(p)

    p = sub.add_parser("audit", help="verify a run's artifacts and recompute its figures")
    p.add_argument("run_id", nargs="?", default=None, type=name_arg("run id"))
    p.add_argument("--baseline", default=None, metavar="NAME", type=name_arg("baseline name"),
                   help="audit the run a baseline came from")
    p.add_argument("--series", default=None, type=name_arg("series name"),
                   help="RUN_ID is a window of this monitored series")
    store_arg(p)

    p = sub.add_parser("promote", help="make a run a named baseline")
    p.add_argument("run_id", type=name_arg("run id"))
    p.add_argument("--name", required=True, type=name_arg("baseline name"))
    p.add_argument("--replace", action="store_true",
                   help="replace an existing baseline of that name (the old one is kept as an artifact)")
    store_arg(p)

    p = sub.add_parser("demo", help="the bundled shop world: two agents, a baseline, a gate, an audit")
    p.add_argument("--store", default="./.ek", metavar="URL", help="artifact store (default ./.ek)")
    p.add_argument("--k", type=int_in(1, MAX_K), default=4, help="trials per task (default 4)")
    add_export_parser(sub)
    monitorcli.add_parsers(sub)
    return ap


def _store(url: Optional[str]) -> Any:
    from .store import Store

    return Store(url)


def _print_report(st: Any, run_id: str) -> None:
    from .records.manifest import report_markdown
    from .records.documents import run_report

    print(report_markdown(*run_report(st, run_id)))


def _cmd_run(a: argparse.Namespace) -> int:
    if a.command == "ingest" and a.kind == "otlp" and a.suite is None and a.check is None:
        return monitorcli.ingest_otlp_ungraded(a)  # no grader: cost with success unknown
    if a.command == "ingest" and (a.group_by != "trace" or a.task_attr or a.slice_attr):
        raise InvalidInput("--group-by / --task-attr / --slice-attr apply to `ingest otlp` "
                           "without --suite or --check; judge and correct production traces "
                           "with `ek-agents monitor`")
    from .execution.harness import new_run_id
    from .pipeline.request import check_inputs, check_request, load_agent
    from .store import run_key

    clock = _Clock(a.verbose, since=getattr(a, "started", None))  # from main(): the parsing too
    st = _store(a.store)
    run_id = a.run_id or new_run_id()
    params = dict(k=a.k, seed=a.seed, store=st.url, run_id=run_id, baseline=a.baseline,
                  prices=a.prices, check=a.check, model=a.model, simulator=a.simulator,
                  scaffold=a.scaffold, tolerance=a.tolerance, cost_tolerance=a.cost_tolerance)
    if a.command == "run":
        params.update(suite=a.suite, agent=a.agent, temperature=a.temperature,
                      chunk_size=a.chunk_size, max_concurrency=a.max_concurrency,
                      timeout_s=a.timeout_s, retries=a.retries, task_runner=a.task_runner,
                      max_workers=a.max_workers, dask_address=a.dask_address,
                      refresh=a.refresh, retry_errored=a.retry_errored,
                      max_error_rate=a.max_error_rate, break_lease=a.break_lease,
                      lease_wait_s=a.wait_lease, sequential=a.sequential, agent_id=a.agent_id,
                      flush_s=a.flush_s, **({"capture": a.capture} if a.capture else {}),
                      **{n: getattr(a, n) for n in LIMIT_OPTIONS if getattr(a, n) is not None})
        if a.scale:
            params = _scale_params(a, params)
    else:
        params.update(suite=a.suite, ingest=a.kind, ingest_path=a.path)
    judge = monitorcli.judge_param(a)  # an endpoint judge grades instead of a checker
    params.update({"judge": judge} if judge else {})
    clock.mark("parse, load ek_agents")
    # bad input: exit 2 before Prefect starts or an agent is called
    check_request(suite=params["suite"], agent=params.get("agent"), ingest=params.get("ingest"),
                  ingest_path=params.get("ingest_path"))
    models = [a.model] if a.model else []
    models += [params["judge"]["model"]] if params.get("judge") else []  # the judge is billed too
    if a.command == "run":  # an agent that says which model it calls must be priced too
        own = getattr(load_agent(a.agent), "model", None)
        models += [own] if isinstance(own, str) and own else []
    check_inputs(st, run_id=run_id, k=a.k, suite=a.suite, check=a.check, baseline=a.baseline,
                 prices=a.prices, models=models)
    stored = st.exists(run_key(run_id, "manifest"))  # the store answers (else exit 3), now
    clock.mark("checks")
    local = _local()
    here = _runs_here(a, params, local)
    server = None
    if not here and local is not None:  # the flow, recorded by the configured API, else by
        server = local.start_server()  # a temporary server that boots while Prefect imports
    ok = False
    try:
        if here:
            _run_here(params, clock, verbose=a.verbose)
        else:  # then: import of the flows (Prefect), the server (overlapped), the flow
            _flows().call_flow("evaluate_at_scale" if "n_workers" in params else "evaluate_agent",
                               **params)
        ok = True
    finally:
        if local is not None and not here:
            local.stop_server()
        _say_path(a.verbose, here, local, server)
        clock.say(None if here or local is None else local.TIMINGS,
                  where=server.api_url if server is not None else None)
        if not isinstance(sys.exc_info()[1], StoreError):  # no second wait on a failing store
            if st.exists(run_key(run_id, "manifest")):
                _print_report(st, run_id)
            elif not ok and not stored:
                print(f"run {run_id} stopped before its manifest was written; run the same "
                      f"command with --run-id {run_id} to resume it")
    print(f"run {run_id}: manifest at {st.url}/{run_key(run_id, 'manifest')}")
    return 0


def _runs_here(a: argparse.Namespace, params: dict, local: Any) -> bool:
    """Whether ``run``/``ingest`` runs the evaluate plan in this process, without Prefect: when
    no Prefect API is configured to record the flow run, ``--prefect-server`` was not asked
    for, and the trials need no Prefect task runner (``--task-runner dask``)."""
    if a.prefect_server or params.get("task_runner", "threads") != "threads" or "n_workers" in params:
        return False
    return local is None or local.configured_api() is None


#: ``run`` options the evaluate-at-scale flow has no use for (it runs, stores and reports the
#: trials: no gate, capture or sequential stop), with their defaults: refused, never dropped.
NOT_AT_SCALE = (("baseline", None), ("sequential", False), ("capture", None),
                ("retry_errored", False), ("temperature", None), ("simulator", ""),
                ("scaffold", ""), ("task_runner", "threads"), ("tolerance", 0.0),
                ("cost_tolerance", 0.0), ("max_error_rate", 0.5), ("wait_lease", 0.0),
                ("judge_model", None),
                *((n, None) for n in LIMIT_OPTIONS))


def _scale_params(a: argparse.Namespace, params: dict) -> dict:
    """``run --scale``: the evaluate-at-scale flow's parameters (``--max-workers`` its Dask
    worker processes), after refusing the options it would not use."""
    given = [f"--{key.replace('_', '-')}" for key, default in NOT_AT_SCALE
             if getattr(a, key) != default]
    if given:
        raise InvalidInput(f"run --scale: {', '.join(given)} not used by the evaluate-at-scale "
                           "flow (it runs, stores and reports the trials: no gate, capture or "
                           "sequential stop); drop them, or run without --scale")
    keep = ("suite", "agent", "agent_id", "k", "seed", "store", "run_id", "prices", "check",
            "model", "chunk_size", "max_concurrency", "timeout_s", "retries", "dask_address",
            "refresh", "break_lease", "flush_s")
    return {**{key: params[key] for key in keep}, "n_workers": a.max_workers}


def _run_here(params: dict, clock: _Clock, *, verbose: bool) -> None:
    """``localrun.evaluate_agent``: the flow's plan, the flow's stage documents, no Prefect;
    its run-log lines on stderr with ``-v``."""
    from .localrun import evaluate_agent

    clock.mark("import plan")
    try:
        evaluate_agent(**params, log=(lambda line: print(f"ek-agents: {line}", file=sys.stderr))
                       if verbose else (lambda line: None))
    finally:
        clock.mark("plan (in-process)")


def _say_path(verbose: bool, here: bool, local: Any, server: Any) -> None:
    """On ``-v``: which way ``run`` went, and how to take the other."""
    if not verbose:
        return
    if here:
        print("ek-agents: no Prefect API configured: ran in-process; set PREFECT_API_URL or pass "
              "--prefect-server to record the flow run", file=sys.stderr)
    elif server is not None:
        print(f"ek-agents: ran the evaluate-agent flow on a temporary Prefect server "
              f"({server.api_url}); its flow run is in $PREFECT_HOME's database", file=sys.stderr)
    else:
        api = local.configured_api() if local is not None else None
        print(f"ek-agents: ran the evaluate-agent flow; its flow run is recorded by the Prefect "
              f"API at {api}", file=sys.stderr)


def _cmd_report(a: argparse.Namespace) -> int:
    st = _store(a.store)
    if a.labels is not None:
        from .stages.labelrun import labeled_report_text

        if len(a.run_ids) > 1 or a.html is not None or a.markdown is not None:
            raise InvalidInput("report --labels: one run, printed (or --json); to keep labels with a "
                               "run, give them to run_suite(labels=) or the evaluate flow")
        print(labeled_report_text(st, a.run_ids[0], a.labels, as_json=a.json), end="")
        return 0
    if a.html is not None or a.markdown is not None:
        from .report.htmlreport import write_report

        for kind, path in write_report(st, a.run_ids, html=a.html, markdown=a.markdown).items():
            print(f"{kind} report of {len(a.run_ids)} run(s): {path}")
    elif a.json:
        from .records.documents import run_report

        docs = {rid: run_report(st, rid)[1] for rid in a.run_ids}
        print(json.dumps(docs[a.run_ids[0]] if len(a.run_ids) == 1 else docs, indent=2, sort_keys=True))
    elif len(a.run_ids) > 1:
        from .report.htmlreport import render_markdown
        from .report.runsummary import load_runs

        print(render_markdown(load_runs(st, a.run_ids)), end="")
    else:
        _print_report(st, a.run_ids[0])
    return 0


def _cmd_gate(a: argparse.Namespace) -> int:
    from .stages.labelrun import gate_with_labels  # labels=None: stages.gate_run
    from .pipeline.request import raise_for_verdict

    verdict = gate_with_labels(_store(a.store), a.run_id, a.baseline, a.labels,
                               tolerance=a.tolerance, cost_tolerance=a.cost_tolerance)
    raise_for_verdict(verdict)
    for w in verdict.get("warnings") or []:
        print(f"warning: {w}")
    print(f"gate passed: run {a.run_id!r} vs baseline {a.baseline!r}")
    return 0


def _cmd_plan(a: argparse.Namespace) -> int:  # plan-labels and plan
    if a.command == "plan-labels" and monitorcli.for_window(a):
        return monitorcli.plan_window_labels_cmd(a)
    from .stages.labelrun import plan_labels_lines, plan_run

    st = _store(a.store)
    print("\n".join(plan_labels_lines(st, a.run_id, a.n, seed=a.seed, width=a.width,
                                      path=a.out or f"labels-{a.run_id}.jsonl")
                    if a.command == "plan-labels" else
                    [plan_run(st, a.run_id, labels=a.labels, max_tasks=a.max_tasks, target_width=a.width,
                              cps_width=a.cps_width, power=a.power, drop=a.drop,
                              method=a.method).sentence]))
    return 0


def _orchestrated() -> bool:
    """Whether a Prefect API is configured: then ``audit`` and ``promote`` run as flows there
    (recorded like a deployment's); otherwise the library does the work, with no server."""
    local = _local()
    return local is not None and local.configured_api() is not None


def _cmd_audit(a: argparse.Namespace) -> int:
    if getattr(a, "series", None):
        return monitorcli.audit_window_cmd(a)
    if a.run_id is None and a.baseline is None:
        raise InvalidInput("audit needs a RUN_ID or --baseline NAME")
    if a.run_id is not None and a.baseline is not None:
        raise InvalidInput(f"audit takes a RUN_ID or --baseline NAME, not both (got {a.run_id!r} "
                           f"and --baseline {a.baseline!r})")
    if _orchestrated():
        result = _flows().call_flow("audit_run", run_id=a.run_id, baseline=a.baseline,
                                    store=_store(a.store).url)
    else:
        from .stages.audit import audit

        with warnings.catch_warnings():  # the recomputation repeats the run's own warnings
            warnings.simplefilter("ignore")
            done = audit(_store(a.store), a.run_id, baseline=a.baseline)
        if not done.passed:
            raise AuditFailed(done.summary())
        result = done.to_dict()
    for note in result.get("notes") or ():
        print(f"note: {note}")
    print(f"audit passed: run {result['run_id']!r}, {len(result['checked'])} checks")
    return 0


def _cmd_promote(a: argparse.Namespace) -> int:
    if _orchestrated():
        out = _flows().call_flow("promote_baseline", run_id=a.run_id, name=a.name,
                                 store=_store(a.store).url, replace=a.replace)
    else:
        from .records.baselines import promote_baseline

        out = promote_baseline(_store(a.store), a.run_id, a.name, replace=a.replace)
    was = out.get("replaced")
    print(f"run {a.run_id!r} is now baseline {a.name!r} ({out['key']})" + (
        f"; it replaced the baseline of run {was.get('run_id')!r} (kept as artifact "
        f"{str(was.get('artifact'))[:12]}...)" if was else ""))
    return 0


def _cmd_demo(a: argparse.Namespace) -> int:
    store = os.path.abspath(a.store) if "://" not in a.store else a.store
    if "://" not in store:  # keep Prefect's database with the demo's store, never in ~/.prefect
        os.environ.setdefault("PREFECT_HOME", os.path.join(store, "prefect"))
        os.makedirs(os.environ["PREFECT_HOME"], exist_ok=True)
    local = _local()
    if local is not None:
        local.start_server()
    try:
        _flows().demo.run_demo(store, k=a.k)
    finally:
        if local is not None:
            local.stop_server()
    return 0


COMMANDS = {"run": _cmd_run, "ingest": _cmd_run, "report": _cmd_report, "gate": _cmd_gate,
            "audit": _cmd_audit, "promote": _cmd_promote, "demo": _cmd_demo,
            "plan-labels": _cmd_plan, "plan": _cmd_plan, "export": cmd_export,
            **monitorcli.COMMANDS}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run ``ek-agents``; return the exit code (0 ok, 1 gate/audit failed, 2 bad input,
    3 infrastructure failed, 4 too many errored trials, 5 incomplete: provider errors left
    trials unresolved, or the run stopped at --max-dollars).

    Output cut short by its reader (``ek-agents report ID | head``) is not an error (exit 0)."""
    started = time.perf_counter()
    a = build_parser().parse_args(argv)
    a.started = started
    warnings.showwarning = _one_line_warning
    if not a.verbose:
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "CRITICAL")
        # aiohttp's writes cut by a reset endpoint end as "Task exception was never retrieved"
        # tracebacks on asyncio's logger; the StoreError that follows says it in one line
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    try:
        code = COMMANDS[a.command](a)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:  # the reader stopped early (`ek-agents report ID | head`): fine
        _quiet_stdout()
        return 0
    except TooManyErrors as exc:  # an outage, not a verdict on the agent
        print(f"ek-agents: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 4
    except RunIncomplete as exc:  # provider errors unresolved, or stopped at --max-dollars
        print(f"ek-agents: {exc}", file=sys.stderr)
        return 5
    except CheckFailed as exc:
        print(f"ek-agents: {exc}", file=sys.stderr)
        return 1
    except StoreError as exc:
        print(f"ek-agents: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ArtifactNotFound) else 3
    except EkAgentsError as exc:
        print(f"ek-agents: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


def _one_line_warning(message: Any, category: type, filename: str, lineno: int,
                      file: Any = None, line: Optional[str] = None) -> None:
    """A warning as one line on stderr (``ek-agents: warning: ...``), not two with source."""
    print(f"ek-agents: warning: {message}", file=sys.stderr if file is None else file)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
