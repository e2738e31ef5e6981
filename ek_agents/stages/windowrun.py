"""A monitor window as a run: its documents from one light row per episode, and their audit.

A window of a monitored series (``ek_agents.monitor.run_window``) is recorded as a run whose id
is the window id and whose manifest's ``source`` is ``{"kind": "monitor-window", "series": S,
"window": W, ...}`` (:data:`WINDOW_SOURCE`). Its episodes are the run's trials, stored in its
segments (``records.segments``) as they are read; what the window keeps in memory is one
:class:`WindowTrial` per episode (key, slice, digest, the output and request the judge reads,
the episode's calls, tokens and dollars per model). From those rows
:func:`window_documents` makes the run's documents:

- ``tasks``: one gold-less task per task id (``records.documents.tasks_for_episodes``);
- ``episodes``: the episodes' index, one entry per episode in ``(task_id, trial)`` order --
  ``{"task_id", "meta": {"trial", "slice", "digest"}}`` -- the episodes themselves being the
  run's segments (listed with their sha256 in the manifest);
- ``graded``: the combined judge verdict of each episode (``success``: true/false for a
  judged episode, null -- success unknown -- for the rest), and the judges' own calls made
  for it (``meta["evaluation_calls"]``, as ``stages.judgerun`` keeps them);
- ``report``: the judge's raw pass rate over the judged episodes (``n_trials`` are the judged
  ones; ``detail["monitor"]`` says how many episodes there are), per slice, the agent's
  dollars and tokens per model and -- apart -- the evaluation cost
  (``cost.evaluation_dollars``, ``cost.evaluation_per_model``). The label-corrected rate is the
  series' (``ek_agents.monitor.evaluate_series``), which reads the labels of several windows.

:func:`audit_window_run` (called by ``stages.audit.audit`` for such a manifest) recomputes
them from what is stored: every episode from the segments (their bytes checked against the
manifest), the judged sample drawn again (:func:`judge_sample`, seeded by the window), each
verdict from the series' verdict cache (by episode digest and judge identity), the labels
(``labels``, a run document) against the judged episodes; then the documents are made again
by :func:`window_documents` and compared with the recorded ones figure by figure.
"""
from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Optional

from pydantic import BaseModel, Field

from ..base import SCHEMA_VERSION, Episode, ModelCall
from ..core import canonical_json
from ..cost import cost_by_model, cost_of_pass
from ..errors import EkAgentsError, InvalidInput
from ..labels import labels_of_doc
from ..records.documents import check_run_doc, prices_of, results_of, tasks_for_episodes
from ..records.episodejson import plain_episode_dict, plain_json
from ..records.manifest import RunManifest, finite
from ..records.segments import RunSegments, read_segment, segment_line_doc, stored_pair
from ..stats.intervals import wilson_interval
from ..store import parse_json, run_key, segment_index_prefix
from ..store.sources import monitor_key
from .judgerun import EVALUATION_CALLS, evaluation_cost

__all__ = ["WINDOW_SOURCE", "window_of", "WindowTrial", "WindowFigures", "episode_digest",
           "episode_record", "window_trial", "judge_sample", "combined_verdict",
           "verdict_cache_key", "window_documents", "audit_window_run", "trial_key"]

#: ``manifest.source["kind"]`` of a run that is a monitor window.
WINDOW_SOURCE = "monitor-window"


def window_of(source: Mapping) -> Optional[tuple[str, str]]:
    """``(series, window id)`` of a run whose manifest ``source`` says it is a monitor window;
    None for any other run; InvalidInput when it is a window's but names no series or window."""
    if source.get("kind") != WINDOW_SOURCE:
        return None
    series, window = source.get("series"), source.get("window")
    if not isinstance(series, str) or not isinstance(window, str) or not series or not window:
        raise InvalidInput(f"a monitor-window run's source must name its series and window, got "
                           f"{dict(source)!r}: record the window with `ek-agents monitor`")
    return series, window


class WindowTrial(NamedTuple):
    """What a window keeps of one episode while it reads the rest."""

    task_id: str
    trial: int
    slice: str
    digest: str
    output: Any
    input: Any
    per_model: dict
    """``cost.cost_by_model`` of this episode alone: ``{model: {calls, tokens..[, dollars]}}``."""
    dollars: Optional[float]
    """Its dollars (None: no prices, or no cost recorded)."""


class WindowFigures(BaseModel):
    """The window's figures as its documents hold them (the series index copies them)."""

    episodes: int = 0
    slices: dict[str, dict[str, int]] = Field(default_factory=dict)
    """``{slice: {traces, judged, passed}}``."""
    agent_dollars: Optional[float] = None
    dollars_per_trace: Optional[float] = None
    dollars_var: Optional[float] = None
    agent_per_model: dict[str, dict[str, float]] = Field(default_factory=dict)
    agent_tokens: dict[str, int] = Field(default_factory=dict)
    evaluation_dollars: Optional[float] = None
    evaluation_per_model: dict[str, dict[str, float]] = Field(default_factory=dict)


def episode_digest(ep: Episode) -> str:
    """sha256 of what a judge reads of an episode (its output and steps) and which trace it is."""
    return hashlib.sha256(canonical_json(_digest_doc(
        ep.output, [s.to_dict() if hasattr(s, "to_dict") else repr(s) for s in ep.trajectory.steps],
        (ep.meta or {}).get("group")))).hexdigest()


def _digest_doc(output: Any, steps: list, group: Any) -> dict:
    """What :func:`episode_digest` hashes the canonical JSON of (``steps``: each step's
    ``to_dict()``)."""
    return {"output": output, "steps": steps, "group": group}


def episode_record(ep: Episode) -> tuple[bytes, str]:
    """``(ep.to_json() as bytes, episode_digest(ep))`` -- the line a window stores and the key
    of its verdicts -- from one dump of the episode: the digest's output and steps are those of
    the line's dict. Through ``records.episodejson`` (no pydantic dump, orjson: the same
    bytes) when every value of the episode is plain JSON it takes, else the standard path."""
    d = plain_episode_dict(ep)
    if d is not None:
        line = plain_json(d)
        steps = [{**s, "schema_version": SCHEMA_VERSION} for s in d["trajectory"]["steps"]]
        key = plain_json(_digest_doc(d["output"], steps, d["meta"].get("group")))
        if line is not None and key is not None:
            return line, hashlib.sha256(key).hexdigest()
    return ep.to_json().encode("ascii"), episode_digest(ep)


def trial_key(task_id: str, trial: Any) -> str:
    """How a window names an episode in its verdicts and labels: ``task_id/trial``."""
    return f"{task_id}/{trial}"


def window_trial(ep: Episode, prices: Optional[Mapping],
                 digest: Optional[str] = None) -> WindowTrial:
    """The light row of one episode (``prices``: a ``{model: ModelPrice}`` table or None;
    ``digest``: its :func:`episode_digest` when already made, e.g. by :func:`episode_record`)."""
    meta = ep.meta or {}
    table, per = cost_by_model([ep], prices)
    return WindowTrial(str(ep.task_id), meta.get("trial", 0), meta.get("slice", "all"),
                       digest if digest is not None else episode_digest(ep), ep.output,
                       meta.get("input"), table, per[0] if per else None)


def judge_sample(rows: Sequence[WindowTrial], n: Optional[int], seed: int,
                 window_id: str) -> list[WindowTrial]:
    """The rows to judge: all of them, or ``n`` allocated to the slices in proportion to their
    rows (at least one each; the remainders by largest fraction), drawn by a generator seeded
    with ``seed`` and the window id from the rows in ``(task_id, trial)`` order (the same draw
    whatever order they were read in)."""
    if n is None or n >= len(rows):
        return list(rows)
    by: dict[str, list] = {}
    for r in sorted(rows, key=lambda r: (r.task_id, r.trial)):
        by.setdefault(r.slice, []).append(r)
    if n < len(by):
        raise InvalidInput(f"judge_sample={n} is fewer than the window's {len(by)} slices; judge "
                           "at least one trace of each slice")
    total = len(rows)
    alloc = {s: max(1, math.floor(n * len(v) / total)) for s, v in by.items()}
    for s in sorted(by, key=lambda s: -(n * len(by[s]) / total) % 1):
        if sum(alloc.values()) >= n:
            break
        if alloc[s] < len(by[s]):
            alloc[s] += 1
    rng = random.Random(f"{seed}/{window_id}")
    out = []
    for s in sorted(by):
        out.extend(rng.sample(by[s], min(alloc[s], len(by[s]))))
    return out


def combined_verdict(scores: Sequence[float], combine: str) -> bool:
    """Several judges' scores as one verdict: ``"mean"``: the mean >= 0.5; ``"min"``: every
    score > 0 (a FAIL stops the costlier judges, so fewer scores may be there)."""
    if combine == "mean":
        return math.fsum(scores) / len(scores) >= 0.5
    return all(x > 0 for x in scores)


def verdict_cache_key(series: str, ident: str) -> str:
    """The store key of a series' verdict cache of one judge (``{digest: [score, why]}``)."""
    return monitor_key(series, "verdicts", f"{ident[:32]}.json")


def _add_tables(into: dict, table: Mapping) -> None:
    for model, row in table.items():
        acc = into.get(model)
        if acc is None:  # (not setdefault: that would build the zero row for every row added)
            acc = into[model] = {"calls": 0, "input_tokens": 0, "output_tokens": 0,
                                 "cached_input_tokens": 0}
        for k, v in row.items():
            acc[k] = acc.get(k, 0) + v


def window_documents(rows: Iterable[WindowTrial], *, series: str, window_id: str,
                     verdicts: Mapping[str, bool], evaluation_calls: Mapping[str, list],
                     judges: Sequence[str], combine: str, judge_sample_n: Optional[int],
                     prices: Optional[Mapping]) -> tuple[dict, WindowFigures]:
    """``({tasks, episodes, graded, report}, figures)`` of a window (see the module
    docstring); ``rows`` are taken in ``(task_id, trial)`` order, so that the same rows give
    the same bytes whatever order they were read in."""
    ordered = sorted(rows, key=lambda r: (r.task_id, r.trial))
    slices: dict[str, dict[str, int]] = {}
    agent: dict = {}
    per_ep: list = []
    slice_dollars: dict[str, list] = {}
    slice_tasks: dict[str, set] = {}
    index, graded = [], []
    for r in ordered:
        key = trial_key(r.task_id, r.trial)
        row = slices.setdefault(r.slice, {"traces": 0, "judged": 0, "passed": 0})
        row["traces"] += 1
        ok = verdicts.get(key)
        if ok is not None:
            row["judged"] += 1
            row["passed"] += ok
        _add_tables(agent, r.per_model)
        slice_tasks.setdefault(r.slice, set()).add(r.task_id)
        if r.dollars is not None:
            per_ep.append(r.dollars)
            slice_dollars.setdefault(r.slice, []).append(r.dollars)
        index.append({"task_id": r.task_id, "meta": {"trial": r.trial, "slice": r.slice,
                                                      "digest": r.digest}})
        meta: dict = {"trial": r.trial}
        if evaluation_calls.get(key):
            meta[EVALUATION_CALLS] = list(evaluation_calls[key])
        graded.append({"task_id": r.task_id, "meta": meta, "success": ok})
    calls = [ModelCall.from_dict(c) for k in sorted(evaluation_calls) for c in evaluation_calls[k]]
    eval_table, eval_dollars = evaluation_cost(calls, prices)
    n_priced = len(per_ep)
    mean = math.fsum(per_ep) / n_priced if n_priced else None
    figures = WindowFigures(
        episodes=len(ordered), slices=slices,
        agent_dollars=math.fsum(per_ep) if prices is not None else None, dollars_per_trace=mean,
        dollars_var=(math.fsum((x - mean) ** 2 for x in per_ep) / (n_priced - 1) / n_priced
                     if n_priced > 1 else None),
        agent_per_model=agent,
        agent_tokens={k: int(sum(r[k] for r in agent.values()))
                      for k in ("input_tokens", "output_tokens", "cached_input_tokens")},
        evaluation_dollars=eval_dollars if judges else None,
        evaluation_per_model=eval_table)
    judged = sum(s["judged"] for s in slices.values())
    passed = sum(s["passed"] for s in slices.values())
    tasks = tasks_for_episodes(ordered, name=f"monitor-{series}")

    def rate(p: int, n: int) -> dict:
        return {"n_trials": n, "n_success": p, "success_rate": p / n if n else 0.0,
                "success_ci": list(wilson_interval(p, n)) if n else [0.0, 1.0]}

    report = {
        "k": 1, "n_tasks": len(tasks["tasks"]), **rate(passed, judged),
        "success_ci_method": "wilson",
        "per_slice": {s: {**rate(v["passed"], v["judged"]), "traces": v["traces"],
                          "n_tasks": len(slice_tasks[s])}
                      for s, v in sorted(slices.items())},
        "cost": {"total_dollars": figures.agent_dollars,
                 "cost_per_success": _per_judged_success(figures.dollars_per_trace, passed, judged),
                 "per_model": agent, "tokens": figures.agent_tokens,
                 "dollars_per_trace": figures.dollars_per_trace,
                 "dollars_var": figures.dollars_var,
                 "evaluation_dollars": figures.evaluation_dollars,
                 "evaluation_per_model": eval_table,
                 "per_slice": {s: {"total_dollars": (math.fsum(slice_dollars.get(s, ()))
                                                     if prices is not None else None),
                                   "cost_per_success": _per_judged_success(
                                       math.fsum(slice_dollars[s]) / len(slice_dollars[s]),
                                       v["passed"], v["judged"])
                                   if prices is not None and slice_dollars.get(s) else None}
                               for s, v in sorted(slices.items())}},
        "detail": {"run": {}, "monitor": {
            "series": series, "window": window_id, "episodes": len(ordered), "judged": judged,
            "judges": list(judges), "combine": combine, "judge_sample": judge_sample_n,
            "success": "the judges' raw verdicts on the judged episodes; unknown on the rest; "
                       "cost per success at that rate; the label-corrected figures are the "
                       "series' (ek-agents monitor)"}}}
    docs = {"tasks": tasks, "episodes": {"schema_version": 1, "layout": "segments",
                                         "episodes": index},
            "graded": {"schema_version": 1, "episodes": graded}, "report": finite(report)}
    return docs, figures


def _per_judged_success(per_trace: Optional[float], passed: int, judged: int) -> Optional[float]:
    """Dollars per success at the judges' raw rate: the mean dollars of a trace over the share
    of judged traces that passed (``inf`` when none passed; None when the dollars or the
    verdicts are unknown). The label-corrected figure is the series'."""
    if per_trace is None or not judged:
        return None
    return cost_of_pass(per_trace * judged, passed)  # judged traces' dollars over their passes


# --------------------------------------------------------------------------- the audit

def audit_window_run(store: Any, run_id: str, manifest: RunManifest, seen: Mapping,
                     checked: list, problems: list, *,
                     compare: Callable[[Any, Any, str], list]) -> None:
    """The audit of a window run, after every artifact's sha256 was checked (``seen``: the
    bytes read; ``problems`` already says what did not check out): see the module docstring.
    ``compare(recorded, recomputed, what)`` is the audit's list of differences."""
    src = manifest.source
    series, params = src.get("series"), manifest.parameters
    checked.append(f"monitor window {run_id!r} of series {series!r}")
    if src.get("window") != run_id or not isinstance(series, str):
        problems.append(f"manifest.source: a monitor window's source names its series and "
                        f"window (this run's id {run_id!r}), got {src!r:.120}")
        return
    for name in ("tasks", "episodes", "graded", "report"):
        if run_key(run_id, name) not in manifest.artifacts:
            problems.append(f"artifact {run_key(run_id, name)} is required for a monitor window "
                            "but is not listed in the manifest")
    if problems:
        return  # bytes that did not check out: nothing is recomputed from them

    def load(name: str) -> Any:
        key = run_key(run_id, name)
        return check_run_doc(name, parse_json(seen[key], key), key)

    prices = prices_of(load("prices")) if run_key(run_id, "prices") in seen else None
    index_keys = sorted(k for k in manifest.artifacts
                        if k.startswith(segment_index_prefix(run_id) + "/"))
    try:
        segments = RunSegments.from_docs(None, run_id, [parse_json(seen[k], k) for k in index_keys])
        rows = []
        held = segments.pairs()
        for _, entry in segments.entries:
            if entry.key not in seen:
                problems.append(f"segment {entry.key} is indexed but not listed in the manifest")
                continue
            for t in read_segment(None, entry, data=seen[entry.key]):
                if held.get(t.pair) is not entry:
                    continue
                doc = segment_line_doc(t)
                if stored_pair(doc) != t.pair:
                    problems.append(f"misfiled trial: {entry.key} trial {t.pair!r} holds "
                                    f"{stored_pair(doc)!r}")
                rows.append(window_trial(Episode.from_dict(doc), prices))
        checked.append(f"{len(rows)} episodes read from {len(segments)} segments")
        judges = list(params.get("judges") or [])
        combine = params.get("combine", "min")
        recorded_graded = load("graded")
        calls = {trial_key(*stored_pair(g)): (g.get("meta") or {}).get(EVALUATION_CALLS)
                 for g in recorded_graded["episodes"] if (g.get("meta") or {}).get(EVALUATION_CALLS)}
        verdicts: dict = {}
        if judges and rows:
            caches = []
            for ident in judges:
                key = verdict_cache_key(series, ident)
                caches.append(store.read_json(key) if store.exists(key) else {})
            picked = judge_sample(rows, params.get("judge_sample"), params.get("seed", 0), run_id)
            checked.append(f"{len(picked)} judged verdicts recomputed from the verdict cache")
            for r in picked:
                scores = [c[r.digest][0] for c in caches if r.digest in c]
                key = trial_key(r.task_id, r.trial)
                if not scores:
                    problems.append(f"episode {key}: judged, but no cached verdict of its judges")
                    continue
                verdicts[key] = combined_verdict(scores, combine)
        docs, _ = window_documents(rows, series=series, window_id=run_id, verdicts=verdicts,
                                   evaluation_calls=calls, judges=judges, combine=combine,
                                   judge_sample_n=params.get("judge_sample"),
                                   prices=prices)
        for name in ("tasks", "episodes", "graded", "report"):
            checked.append(f"recomputed {name}")
            problems += compare(load(name), docs[name], name)
        checked.append("recomputed results")
        problems += compare(manifest.results, finite(results_of(docs["report"])), "results")
        if run_key(run_id, "labels") in manifest.artifacts:
            _audit_labels(run_id, manifest, load("labels"), verdicts, checked, problems)
    except (EkAgentsError, KeyError, TypeError, ValueError, AttributeError) as exc:
        problems.append(f"recomputation failed: {type(exc).__name__}: {exc}")


def _audit_labels(run_id: str, manifest: RunManifest, doc: Any, verdicts: Mapping,
                  checked: list, problems: list) -> None:
    key = run_key(run_id, "labels")
    checked.append(f"{key}: the labels vs manifest.inputs.labels and the judged episodes")
    try:
        labs = labels_of_doc(doc, where=key)
    except EkAgentsError as exc:
        problems.append(str(exc))
        return
    if labs.digest != manifest.inputs.labels:
        problems.append(f"{key}: labels digest {labs.digest[:12]}..., manifest.inputs.labels "
                        f"{str(manifest.inputs.labels)[:12]}...")
    stray = [trial_key(x.task_id, x.trial) for x in labs.labels
             if trial_key(x.task_id, x.trial) not in verdicts]
    if stray:
        problems.append(f"{key}: {len(stray)} label(s) name no judged episode of the window "
                        f"(first: {stray[0]!r})")
