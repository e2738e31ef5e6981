"""The HTML report's trial browser: every trial of each run, one click from its trajectory.

:func:`trial_browser` reads each stored run trial by trial (:mod:`ek_agents.report.trialdata`)
into a :class:`BrowserSection`: a block of the page and the JSON its script
(:mod:`ek_agents.report.browserjs`) renders -- per run a table of trials (task, slice, trial,
success, the judge's verdict and a person's label where the run has them, dollars, tokens,
latency, error, limit hit, model), sortable by any column and filtered by task, slice, model and
failures; a row opens to the trial's tool calls (arguments, result or error, in order), its
model calls (the model that answered, tokens, dollars), its output and final state beside the
task's gold, and for a failed trial whose gold lists tool calls the diff of the calls made
against them. With two or more runs, a per-task comparison of two runs of the same suite (the
tasks that got worse first), each task's trials one click away.

Bounds, so that the page stays small and fast whatever the run: a run's table holds at most
:data:`MAX_TRIALS` trials -- a larger run keeps its failing trials (up to that many) and counts
its passing ones per task, said under its table; each value shown (an argument, a result, an
output, the gold, a task id) is cut at :data:`MAX_TEXT` characters (:data:`MAX_ID` for ids) with
the number of characters left out written where it was cut; a trial shows at most
:data:`MAX_STEPS` tool calls and model calls and :data:`MAX_TRIAL_TEXT` characters of tool calls
(the rest counted); a run's part of the page holds at most :data:`MAX_RUN_TEXT` characters of
trajectories (trials past it keep their row), and the gold only of tasks whose trajectory is
shown. So a run's part is at most ~11 MB whatever its trials, plus a few dozen bytes per task
(the per-task counts the comparison needs); the table draws :data:`PAGE` rows at a time.

The data travels as JSON in a ``<script type="application/json">`` block with ``<``, ``>``
and ``&`` escaped (a value cannot close the block) and is put on the page with ``textContent``
only; the script is allowed by its sha256 in the page's Content-Security-Policy.
"""
from __future__ import annotations

import base64
import difflib
import hashlib
import html
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import orjson

from ..base import Episode, JsonShape
from ..core import shape
from .browserjs import SCRIPT, STYLE
from .trialdata import StoredRun, TrialsUnreadable, as_text, open_run, trial_row

__all__ = ["BrowserSection", "trial_browser", "browser_section", "clip", "json_block", "MAX_TRIALS",
           "MAX_TEXT", "MAX_ID", "MAX_STEPS", "MAX_TRIAL_TEXT", "MAX_RUN_TEXT", "PAGE"]

#: Most trials a run's table holds; beyond, failing trials are kept and passing ones counted.
MAX_TRIALS = 5000
#: Most characters of one value shown (an argument, a result, an output, the gold).
MAX_TEXT = 2000
#: Most characters of a task id, a tool or a model name.
MAX_ID = 200
#: Most tool calls, and most model calls, shown of one trial.
MAX_STEPS = 100
#: Most characters of one trial's tool calls (the calls past it are counted, not shown).
MAX_TRIAL_TEXT = 20_000
#: Most characters of trajectories a run's part of the page holds; trials past it keep
#: their row, not their trajectory (said under the table).
MAX_RUN_TEXT = 10_000_000
#: Rows the table draws at a time ("show more" draws the next).
PAGE = 200


@shape()
class BrowserSection(JsonShape):
    """The trial browser of a report: its HTML (data block, containers, script) and the CSP
    source that allows the script (``'sha256-...'``)."""

    html: str
    script_source: str


def clip(value: Any, limit: int = MAX_TEXT) -> Optional[str]:
    """``value`` as text cut at ``limit`` characters, saying how many were left out; None
    stays None.

    >>> clip("x" * 12, 5)
    'xxxxx… [7 more characters]'
    """
    text = value if isinstance(value, str) or value is None else _pretty(value)
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def _pretty(value: Any) -> str:
    """JSON text for people (indented, keys sorted); orjson: ~10x the standard encoder's speed
    with an indent, which is most of a large page's making."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
                            | orjson.OPT_NON_STR_KEYS, default=str).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return str(value)


def _call_text(tool: Any, args: Any) -> str:
    return f"{tool}({as_text(args)})"


def _diff(ep: Episode, gold: Any) -> Optional[list]:
    """The tool calls made against those the gold lists, as ``[op, call]`` lines (``=``, ``-``
    expected only, ``+`` made only); None when the trial passed or the gold lists none."""
    calls = gold.get("calls") if isinstance(gold, Mapping) else None
    if ep.success or not isinstance(calls, list):
        return None
    want = [clip(_call_text(c.get("tool"), c.get("args")) if isinstance(c, Mapping) else as_text(c))
            for c in calls]
    made = [clip(_call_text(s.tool, s.args)) for s in ep.trajectory.steps[:MAX_STEPS]]
    out = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, want, made, autojunk=False).get_opcodes():
        if op == "equal":
            out += [["=", x] for x in want[a0:a1]]
        else:
            out += [["-", x] for x in want[a0:a1]] + [["+", x] for x in made[b0:b1]]
    return out


def _detail(run: StoredRun, ep: Episode, per_call: list, dollars: Optional[float], row: dict) -> dict:
    steps = ep.trajectory.steps
    cost = ep.cost
    if cost is None:
        calls = []
    elif not cost.calls:
        calls = [[clip(row["model"] or "?", MAX_ID), cost.input_tokens, cost.cached_input_tokens,
                  cost.output_tokens, cost.reasoning_tokens, dollars, False]]
    else:
        calls = [[clip(c.model, MAX_ID), c.input_tokens, c.cached_input_tokens, c.output_tokens,
                  c.reasoning_tokens, d, True] for c, d in zip(cost.calls[:MAX_STEPS], per_call)]
    task = run.tasks.get(ep.task_id)
    meta = {k: v for k, v in ep.meta.items() if k not in ("trial", "error")}
    shown, size = [], 0
    for s in steps[:MAX_STEPS]:
        one = [clip(s.tool, MAX_ID), clip(s.args), clip(s.observation), clip(s.error)]
        size += sum(len(x) for x in one if x)
        if shown and size > MAX_TRIAL_TEXT:
            break
        shown.append(one)
    return {"steps": shown, "steps_more": len(steps) - len(shown),
            "calls": calls, "output": clip(ep.output), "final_state": clip(ep.final_state),
            "error": clip(row["error"]), "meta": clip(meta) if meta else None,
            "diff": _diff(ep, task.gold) if task is not None else None}


def _run_data(run: StoredRun) -> dict:
    """One run's part of the browser's JSON (see the module docstring for its bounds)."""
    everything = run.summary.n_trials <= MAX_TRIALS
    trials, details = [], []
    spent, unkept = 0, 0  # characters of trajectories held; trials kept without theirs
    tasks: dict[str, list] = {}  # task -> [slice, n, c, dollars]
    left: dict[str, int] = {}   # passing trials not kept, per task
    shown_gold: set = set()     # tasks with a trajectory shown: the gold goes beside it
    for batch in run.batches():
        for ep in batch:
            dollars, per_call = run.dollars(ep)
            row = trial_row(run, ep, dollars)
            t = tasks.get(ep.task_id)
            if t is None:
                t = tasks[ep.task_id] = [row["slice"], 0, 0, None]
            t[1] += 1
            t[2] += row["success"]
            if dollars is not None:
                t[3] = (t[3] or 0.0) + dollars
            if not (everything or (not row["success"] and len(trials) < MAX_TRIALS)):
                left[ep.task_id] = left.get(ep.task_id, 0) + 1
                continue
            trials.append([clip(ep.task_id, MAX_ID), clip(row["slice"], MAX_ID), row["trial"], row["success"],
                           row["judge_verdict"], row["label"], dollars, row["total_tokens"],
                           row["latency_s"], clip(row["error_kind"], MAX_ID) if row["errored"] else None,
                           row["limit_hit"], clip(row["model"], MAX_ID) if row["model"] else None])
            detail = _detail(run, ep, per_call, dollars, row) if spent < MAX_RUN_TEXT else None
            if detail is not None:
                spent += len(orjson.dumps(detail))
                shown_gold.add(ep.task_id)
            else:
                unkept += 1
            details.append(detail)
    omitted = ""
    if left:
        omitted = (f"This run has {run.summary.n_trials:,} trials, more than the {MAX_TRIALS:,} a "
                   f"table holds: its failing trials are listed (up to {MAX_TRIALS:,}); "
                   f"{sum(left.values()):,} trials are not, per task: "
                   + ", ".join(f"{clip(k, MAX_ID)} {n:,}" for k, n in sorted(left.items())[:200])
                   + (", …" if len(left) > 200 else "") + ".")
    if unkept:
        omitted += (f" The trajectories of the last {unkept:,} trials listed are not kept: the "
                    f"run's page holds {MAX_RUN_TEXT:,} characters of trajectories.")
    return {"id": run.run_id, "suite": f"{run.summary.suite} {run.summary.suite_version}",
            "trials": trials, "details": details,
            "tasks": {clip(k, MAX_ID): [clip(v[0], MAX_ID), *v[1:]] for k, v in tasks.items()},
            "slices": sorted({r[1] for r in trials if r[1] is not None}),
            "models": sorted({r[11] for r in trials if r[11] is not None}),
            "gold": {clip(k, MAX_ID): clip(run.tasks[k].gold) for k in shown_gold if k in run.tasks},
            "omitted": omitted}


def json_block(doc: Any) -> str:
    """JSON that cannot end its ``<script>`` block: ``<``, ``>``, ``&`` and the line
    separators escaped (a non-finite number is null)."""
    text = orjson.dumps(doc, default=str).decode("utf-8")
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                 ("\u2029", "\\u2029")):
        text = text.replace(a, b)
    return text


def _compare_pair(runs: list) -> Optional[list[int]]:
    """The first two runs of the same suite (base, other), None when no two share one."""
    for j, b in enumerate(runs):
        for i in range(j):
            if runs[i]["suite"] == b["suite"]:
                return [i, j]
    return None


def browser_section(runs: Sequence[StoredRun]) -> BrowserSection:
    """The trial browser of opened runs (:func:`~ek_agents.report.trialdata.open_run`)."""
    data = [_run_data(r) for r in runs]
    pair = _compare_pair(data)
    out = ['<h2 id="trials">Trials</h2>',
           '<p class="note">Every trial of each run (click a row for its tool calls, model calls, '
           'output beside the gold); sort by any column, filter by task, slice, model or '
           f'failures. A run of more than {MAX_TRIALS:,} trials lists its failing ones; values '
           f'longer than {MAX_TEXT:,} characters are cut, saying how much was left out.</p>']
    if pair is not None:
        out += ['<h3 id="trials-compare-head">Per task: which tasks got worse</h3>',
                '<div id="trials-compare" class="trials-compare"></div>']
    for i, r in enumerate(runs):
        out += [f'<h3 id="trials-head-{i}">Trials of run {html.escape(r.run_id)}</h3>',
                f'<div id="trials-{i}" class="trial-browser" data-run="{html.escape(r.run_id)}"></div>']
    doc = {"page": PAGE, "runs": data, "compare": pair}
    out += [f"<style>{STYLE}</style>",
            f'<script type="application/json" id="ek-trials">{json_block(doc)}</script>',
            f"<script>{SCRIPT}</script>"]
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return BrowserSection(html="\n".join(out), script_source=f"'sha256-{digest}'")


def trial_browser(store: Any, run_ids: Sequence[str]) -> BrowserSection:
    """:func:`browser_section` of stored runs ``run_ids`` of ``store`` (a Store or URL); a run
    whose trials cannot be read back (:class:`~ek_agents.report.trialdata.TrialsUnreadable`) is
    left out of it, saying why, and the rest of the report stands."""
    runs, notes = [], []
    for rid in run_ids:
        try:
            runs.append(open_run(store, rid))
        except TrialsUnreadable as exc:
            notes.append(str(exc))
    section = browser_section(runs)
    if not notes:
        return section
    said = "".join(f'<p class="note trials-unreadable">{html.escape(n)}</p>' for n in notes)
    return BrowserSection(html=section.html.replace("</p>", "</p>" + said, 1),
                          script_source=section.script_source)
