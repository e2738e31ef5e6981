"""The ``ek-agents monitor`` and ``ek-agents label`` commands (registered by :mod:`ek_agents.cli`),
and ``plan-labels`` on a monitor window.

``monitor SOURCE --series NAME`` runs one window (:func:`ek_agents.monitor.run_window`) and
re-evaluates the series (:func:`ek_agents.monitor.evaluate_series`); it prints the window's
sentence (traces, judged traces, labels; raw and corrected success; dollars per corrected
success; agent dollars per model; the evaluation cost on a line of its own) or, with ``--json``,
the window's report (``cost.agent_dollars``, ``cost.per_model``, ``cost.evaluation_dollars``,
...). Exit 1 on an alert, with the reason on stderr. ``label WINDOW FILE`` stores a window's
labels with its run (``--series``: default the series its run names) and re-evaluates the
series (exit 1 when the window then alerts).

The library modules are imported inside the commands, for the reason :mod:`ek_agents.cli`'s
docstring measures (``ek-agents --help`` should not pay for them: the monitor package pulls
in the bridges, scoring and cost, ~300 ms).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Optional

from .cliargs import MAX_SEED, int_in, name_arg, number, store_arg
from .errors import CheckFailed, InvalidInput

__all__ = ["add_parsers", "COMMANDS", "plan_window_labels_cmd", "grouping_args", "judge_args",
           "judge_param",
           "ingest_otlp_ungraded", "MonitorAlert", "audit_window_cmd"]


class MonitorAlert(CheckFailed):
    """A window of a monitored series moved beyond its tolerance (exit 1)."""


def grouping_args(p: argparse.ArgumentParser) -> None:
    """``--group-by``, ``--task-attr``, ``--slice-attr`` (monitor and ``ingest otlp``)."""
    p.add_argument("--group-by", default="trace", metavar="ATTR",
                   help="one episode per trace (default) or per value of this span attribute "
                        "(session.id)")
    p.add_argument("--task-attr", default=None, metavar="ATTR",
                   help="the span attribute naming an episode's task (default: each episode "
                        "its own task)")
    p.add_argument("--slice-attr", default=None, metavar="ATTR",
                   help="the span attribute naming an episode's slice (a route, a tenant)")


def judge_args(p: argparse.ArgumentParser) -> None:
    """``--judge-model``, ``--judge-base-url``, ``--judge-rubric`` (monitor, run, ingest)."""
    p.add_argument("--judge-model", default=None, metavar="MODEL",
                   help="judge each episode with this model at an OpenAI-compatible endpoint "
                        "(run, ingest: grades instead of a checker, not with --check; the "
                        "judge's own calls are the report's evaluation cost)")
    p.add_argument("--judge-base-url", default=None, metavar="URL",
                   help="OpenAI-compatible endpoint of the judge (key: $EK_JUDGE_API_KEY, "
                        "else $OPENAI_API_KEY)")
    p.add_argument("--judge-rubric", default=None, metavar="TEXT", help="what a PASS is")


def add_parsers(sub: Any) -> None:
    """Add ``monitor`` and ``label`` to the ``ek-agents`` subparsers."""
    p = sub.add_parser("monitor", help="one production window: new OTLP/JSON traces judged, "
                                       "label-corrected, appended to a series, alert on a move")
    p.add_argument("source", help="OTLP/JSON file, folder or glob (path or fsspec URL; .gz/.zst)")
    p.add_argument("--series", required=True, type=name_arg("series name"))
    p.add_argument("--window-id", default=None, type=name_arg("window id"),
                   help="the window's id (default a UTC timestamp); re-running one is a no-op")
    grouping_args(p)
    p.add_argument("--prices", default=None, metavar="PATH", help="price catalog (LiteLLM JSON)")
    judge_args(p)
    p.add_argument("--judge-sample", type=int_in(1, 100_000_000), default=None, metavar="N",
                   help="judge N episodes, stratified by slice (default: all)")
    p.add_argument("--tolerance", type=number(0.0), default=0.0,
                   help="tolerated drop of corrected success (0.05: 5 points)")
    p.add_argument("--cost-tolerance", type=number(0.0), default=0.0,
                   help="tolerated relative rise of dollars per corrected success (0.1: 10%%)")
    p.add_argument("--horizon", type=int_in(2, 100_000), default=30,
                   help="windows over which false alarms are controlled at 5%% (default 30)")
    p.add_argument("--label-windows", type=int_in(1, 100_000), default=None, metavar="N",
                   help="measure the judge's error on the labels of the last N windows only")
    p.add_argument("--baseline", default=None, type=name_arg("window id"),
                   help="compare with this window instead of all earlier ones")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    p.add_argument("--json", action="store_true", help="print the window's report as JSON")
    p.add_argument("--html", default=None, metavar="PATH",
                   help="write the series as an HTML page (path or fsspec URL)")
    store_arg(p)

    p = sub.add_parser("label", help="store a monitor window's labels (the filled plan-labels file)")
    p.add_argument("window_id", type=name_arg("window id"))
    p.add_argument("file", help="the labels file (JSONL: task_id, trial, gold)")
    p.add_argument("--series", default=None, type=name_arg("series name"),
                   help="the window's series (default: the one its run names)")
    p.add_argument("--html", default=None, metavar="PATH",
                   help="write the series as an HTML page (path or fsspec URL)")
    store_arg(p)


def _store(url: Any) -> Any:
    from .store import Store  # noqa: PLC0415 -- lazy: see the module docstring

    return Store(url)


def _judge_given(a: argparse.Namespace) -> bool:
    if a.judge_model is None and (a.judge_base_url or a.judge_rubric):
        raise InvalidInput("--judge-base-url / --judge-rubric need --judge-model")
    return a.judge_model is not None


def judge_param(a: argparse.Namespace) -> Optional[dict]:
    """``run`` / ``ingest`` ``--judge-model M [--judge-base-url U] [--judge-rubric R]``: the
    evaluate flow's ``judge`` parameter (``stages.judgerun.JudgeSpec`` as JSON), None without
    a judge; refused beside ``--check`` or ``--sequential``."""
    if not _judge_given(a):
        return None
    if a.check is not None or getattr(a, "sequential", False):
        raise InvalidInput(f"--judge-model {a.judge_model} with "
                           f"{'--check ' + a.check if a.check is not None else '--sequential'}: "
                           "a judged run is graded by the judge alone (no checker, no sequential "
                           "looks); drop one")
    from .stages.judgerun import judge_spec  # noqa: PLC0415 -- lazy: see the module docstring

    given = {"model": a.judge_model, "base_url": a.judge_base_url, "rubric": a.judge_rubric}
    return judge_spec({k: v for k, v in given.items() if v is not None}).model_dump()


def _judges(a: argparse.Namespace) -> list:
    if not _judge_given(a):
        return []
    from .adapters.judge_endpoint import DEFAULT_RUBRIC, EndpointJudge  # noqa: PLC0415

    key = os.environ.get("EK_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return [EndpointJudge(a.judge_model, a.judge_base_url, a.judge_rubric or DEFAULT_RUBRIC,
                          api_key=key)]


def _print(rep: dict) -> None:
    print(rep["sentence"] or f"window {rep['window_id']}: {rep['episodes']} episodes")
    if rep["reused"]:
        print("  (window already recorded: reused as stored; no trace read, no judge called)")
    c, i = rep["cost"], rep["ingest"]
    for model, r in sorted(c["per_model"].items()):
        d = r.get("dollars")
        print(f"  agent {model}: {int(r['calls'])} calls, "
              + ("dollars unknown (no --prices)" if d is None else f"${d:.6f}"))
    if c["evaluation_dollars"] is not None:
        print(f"  evaluation cost (the judge's own calls): ${c['evaluation_dollars']:.6f} "
              f"({rep['judge_calls']} calls, {rep['judge_cached']} verdicts reused)")
    skipped = {k: v for k, v in i.items() if v and k in (
        "bad_lines", "pending_traces", "repeated_traces", "late_spans", "no_model_call",
        "duplicate_files", "shrunk_files", "files_waiting")}
    if skipped:
        print("  set aside: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in skipped.items()))


def _evaluate(a: argparse.Namespace, st: Any, window_id: str) -> Any:
    from .monitor import SeriesOptions, evaluate_series  # noqa: PLC0415

    opts = SeriesOptions(tolerance=getattr(a, "tolerance", 0.0),
                         cost_tolerance=getattr(a, "cost_tolerance", 0.0),
                         horizon=getattr(a, "horizon", 30),
                         label_windows=getattr(a, "label_windows", None),
                         baseline=getattr(a, "baseline", None))
    rows = evaluate_series(st, a.series, opts)
    if getattr(a, "html", None):
        from .report.monitorpage import series_page  # noqa: PLC0415
        from .store import write_url  # noqa: PLC0415

        write_url(a.html, series_page(a.series, rows).encode(), what="HTML page")
    return next((r for r in rows if r.window_id == window_id), None)


def _cmd_monitor(a: argparse.Namespace) -> int:
    from .monitor import WindowOptions, run_window, window_report  # noqa: PLC0415
    from .prices import load_prices  # noqa: PLC0415

    prices = load_prices(a.prices) if a.prices else None
    st = _store(a.store)
    rec = run_window(a.source, a.series, store=st, judges=_judges(a), prices=prices,
                     window_id=a.window_id,
                     options=WindowOptions(group_by=a.group_by, task_attr=a.task_attr,
                                           slice_attr=a.slice_attr, judge_sample=a.judge_sample,
                                           seed=a.seed))
    row = _evaluate(a, st, rec.window_id)
    rep = window_report(rec, row)
    if a.json:
        print(json.dumps(rep, indent=1, default=str))
    else:
        _print(rep)
    if row is not None and row.alert:
        raise MonitorAlert(f"alert on series {a.series!r} window {rec.window_id!r}: "
                           + "; ".join(row.reasons))
    return 0


def _window_series(st: Any, run_id: str) -> Optional[str]:
    """The series of the monitor window ``run_id`` (its run's manifest ``source``); None when
    the run is not a window."""
    from .records.documents import read_manifest  # noqa: PLC0415
    from .stages.windowrun import window_of  # noqa: PLC0415

    got = window_of(read_manifest(st, run_id).source)
    return None if got is None else got[0]


def _series_of_window(st: Any, window_id: str) -> str:
    """The series a window's run names; InvalidInput when the run of that id is not a monitor
    window."""
    series = _window_series(st, window_id)
    if series is None:
        raise InvalidInput(f"run {window_id!r} is not a monitor window; give a window id of "
                           "`ek-agents monitor`")
    return series


def for_window(a: argparse.Namespace) -> bool:
    """Whether ``plan-labels RUN_ID`` is about a monitor window: ``--series`` given, or the
    run's manifest names a window (then ``a.series`` is set to its series)."""
    if getattr(a, "series", None):
        return True
    from .store import run_key  # noqa: PLC0415

    st = _store(a.store)
    if a.run_id is None or not st.exists(run_key(a.run_id, "manifest")):
        return False  # not a stored run: the run path says so
    a.series = _window_series(st, a.run_id)
    return a.series is not None


def _cmd_label(a: argparse.Namespace) -> int:
    from .monitor import store_window_labels  # noqa: PLC0415

    st = _store(a.store)
    a.series = a.series or _series_of_window(st, a.window_id)
    labs = store_window_labels(st, a.series, a.window_id, a.file)
    row = _evaluate(a, st, a.window_id)
    print(f"stored {len(labs.labels)} labels with window {a.window_id!r} (digest "
          f"{labs.digest[:12]}...; {labs.unfilled} lines not filled)")
    if row is not None:
        print(row.sentence)
        if row.alert:
            raise MonitorAlert(f"alert on series {a.series!r} window {a.window_id!r}: "
                               + "; ".join(row.reasons))
    return 0


def plan_window_labels_cmd(a: argparse.Namespace) -> int:
    """``plan-labels WINDOW [--series NAME] --n N``: the labels file of a monitor window, and
    beside it (``.html``) the page a person fills it in on."""
    from .monitor import plan_window_labels  # noqa: PLC0415

    path = a.out or f"labels-{a.series}-{a.run_id}.jsonl"
    from .report.monitorpage import labeling_page  # noqa: PLC0415
    from .store import write_url  # noqa: PLC0415

    rows = plan_window_labels(_store(a.store), a.series, a.run_id, a.n, seed=a.seed, path=path)
    page = path.rsplit(".", 1)[0] + ".html"
    write_url(page, labeling_page(a.series, a.run_id, rows).encode(), what="labeling page")
    slices = sorted({str(r["slice"]) for r in rows})
    print(f"wrote {len(rows)} traces to label ({len(slices)} slices: {', '.join(slices)}) to "
          f"{path} (and the page {page}: label in a browser, save the file); fill gold "
          f"true/false on each line, then `ek-agents label {a.run_id} {path}`")
    for r in rows:
        print(f"  {r['task_id']} [{r['slice']}] input: {str(r['input'])[:60]!r} output: "
              f"{str(r['output'])[:60]!r}")
    sys.stdout.flush()
    return 0


def ingest_otlp_ungraded(a: argparse.Namespace) -> int:
    """``ingest otlp PATH`` with no grader (no ``--suite``, no ``--check``): what the traces
    cost -- dollars per model, tokens -- with success unknown (exit 0); with ``--judge-model``
    also the judge's raw pass rate and its own calls' dollars (the evaluation cost, apart)."""
    from .cost import cost_by_model  # noqa: PLC0415
    from .monitor import Ledger, episodes_of_traces, read_new_traces  # noqa: PLC0415
    from .prices import load_prices  # noqa: PLC0415

    prices = load_prices(a.prices) if a.prices else None
    group = None if a.group_by == "trace" else a.group_by
    batch = read_new_traces(a.path, Ledger(), attrs=(group, a.task_attr, a.slice_attr))
    eps = episodes_of_traces(batch, group_by=a.group_by, task_attr=a.task_attr,
                             slice_attr=a.slice_attr, where=a.path)
    table, per_ep = cost_by_model(eps, prices)
    c = batch.counts
    judges = _judges(a)
    passed = None
    eval_table: dict = {}
    eval_dollars = None
    if judges:  # the judge's raw rate (no labels here: `ek-agents monitor` corrects it)
        calls = []
        passed = 0
        for ep in eps:
            reply = judges[0].judge(ep.output, (ep.meta or {}).get("input"))
            passed += reply.passed
            if reply.call is not None:
                calls.append(reply.call)
        from .stages.judgerun import evaluation_cost  # noqa: PLC0415

        eval_table, eval_dollars = evaluation_cost(calls, prices)
    slices: dict = {}
    for ep in eps:
        slices[ep.meta["slice"]] = slices.get(ep.meta["slice"], 0) + 1
    doc = {"episodes": len(eps), "tasks": len({ep.task_id for ep in eps}), "slices": slices,
           "success": {"known": False, "rate": None,
                       "judge_rate": None if passed is None else passed / max(len(eps), 1),
                       "why": "no grader: pass --suite, --check, or judge and correct it with "
                              "labels in `ek-agents monitor`"},
           "cost": {"agent_dollars": sum(per_ep) if prices is not None else None,
                    "per_model": table, "evaluation_dollars": eval_dollars,
                    "evaluation_per_model": eval_table},
           "ingest": c.model_dump(mode="json")}
    dollars = doc["cost"]["agent_dollars"]
    print(f"{len(eps)} episodes ({doc['tasks']} tasks, slices {slices}); success unknown (no "
          "grader); " + ("dollars unknown (no --prices)" if dollars is None
                         else f"${dollars:.6f} in all"))
    for model, r in sorted(table.items()):
        print(f"  {model}: {int(r['calls'])} calls, {int(r['input_tokens'])} input tokens "
              f"({int(r['cached_input_tokens'])} cached), {int(r['output_tokens'])} output tokens"
              + ("" if "dollars" not in r else f", ${r['dollars']:.6f}"))
    if passed is not None:
        print(f"  the judge passed {passed} of {len(eps)} (its raw rate, not corrected by labels); "
              "evaluation cost (the judge's own calls): "
              + ("unknown (no --prices)" if eval_dollars is None else f"${eval_dollars:.6f}"))
    if c.pending_traces or c.bad_lines or c.no_model_call:
        print(f"  set aside: {c.pending_traces} traces whose root span has not ended, "
              f"{c.bad_lines} bad lines, {c.no_model_call} traces without a model call")
    return 0


def audit_window_cmd(a: argparse.Namespace) -> int:
    """``audit WINDOW --series NAME``: the audit of the window's run (``audit WINDOW`` alone
    does that much: its stored episodes, verdicts and labels recomputed), and the series' index
    entry of the window compared with the run (exit 1 when something does not match)."""
    from .errors import AuditFailed  # noqa: PLC0415
    from .monitor.audit import audit_window  # noqa: PLC0415

    if a.run_id is None:
        raise InvalidInput("audit --series needs the WINDOW id")
    got = audit_window(_store(a.store), a.series, a.run_id)
    if not got.ok:
        raise AuditFailed(f"audit of window {a.run_id!r} failed: " + "; ".join(got.problems))
    print(f"audit passed: window {a.run_id!r} of series {a.series!r}: {got.episodes} episodes, "
          f"{got.judged} judged verdicts recomputed from the cache, {got.labels} labels")
    return 0


COMMANDS = {"monitor": _cmd_monitor, "label": _cmd_label}
