"""Hand labels for a judged run: the file a person fills in, read back with typed errors.

A labels file is JSON Lines, one trial per line::

    {"task_id": "t3", "trial": 0, "gold": true}

``task_id`` and ``trial`` name a trial of the run (``episode.task_id``,
``episode.meta["trial"]``); ``gold`` is the person's verdict, ``true`` / ``false`` (``null``:
not labeled yet -- skipped and counted). Other keys (the input and output that
:func:`plan_labels` writes for the person to read) are ignored. Read with the bounded parser
of :mod:`ek_agents.parsing`; every refusal is a :class:`LabelError` (an ``InvalidInput``, so a
``ValueError``) that names the line, the value and the fix: an unknown task or trial, a trial
labeled twice, a verdict that is not a boolean, fewer than :data:`MIN_LABELS` labels, labels
for a run whose success no judge decided.

:func:`plan_labels` picks which trials to label -- stratified by task (round-robin over the
tasks in a seeded order, one trial of each task per round, so every task is represented before
any task gets a second label) -- and writes the file with ``gold: null`` for a person to fill.

:func:`corrected_rate_of` joins labels with graded episodes and returns the
:func:`~ek_agents.stats.judgecorrect.judge_corrected_rate` of the run, grouped by task.

>>> doc = b'{"task_id": "a", "trial": 0, "gold": true}\\n{"task_id": "a", "trial": 1, "gold": null}\\n'
>>> labs = read_labels(doc, where="labels.jsonl")
>>> [(x.task_id, x.trial, x.gold) for x in labs.labels], labs.unfilled
([('a', 0, True)], 1)
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from .base import task_table
from .core import shape
from .errors import InvalidInput, did_you_mean
from .parsing import parse_json_lines
from .stats.correctedrates import cost_per_corrected_success
from .stats.judgecorrect import MIN_LABELS as MIN_LABELS, JudgeCorrectedRate, judge_corrected_rate, rate_doc
from .store import read_url, write_url

__all__ = ["LabelError", "Label", "Labels", "read_labels", "plan_labels", "LabelPlan",
           "corrected_rate_of", "judged", "MIN_LABELS", "JUDGE_FREE_CHECKERS", "labels_digest",
           "judge_detail", "labels_doc", "labels_of_doc", "GradedBy", "not_judged_error"]

#: Checkers that are deterministic oracles, not judges: their verdicts need no correction.
JUDGE_FREE_CHECKERS = frozenset({None, "output", "final_state", "output_match", "final_state_match",
                                 "state"})


class LabelError(InvalidInput):
    """A labels file (or labels for a run) that cannot be used as given."""


@shape()
class GradedBy:
    """How a run's trials were graded, as its manifest records it (``inputs.graded_by``): by
    a deterministic checker (a named oracle: labels have no judge error to correct) or by a
    judge (labels correct its verdicts)."""

    kind: str
    """``"checker"`` or ``"judge"``."""
    name: Optional[str] = None
    """The checker's registered name, or the judge's (``module:qualname`` of a callable,
    ``JudgeMetric:module:qualname`` of a spec judge; a task's own checkers joined by ``,``)."""
    digest: Optional[str] = None
    """sha256 of the judge's code (its source and, for a spec judge, its criteria); None for
    a named checker or a judge whose source cannot be read."""

    @property
    def judged(self) -> bool:
        """Whether a judge decided some trial's success."""
        return self.kind == "judge"


@shape()
class Label:
    """One person's verdict on one trial."""

    task_id: str
    """The trial's task."""
    trial: int
    """The trial's index within its task (``episode.meta["trial"]``)."""
    gold: bool
    """The person's verdict: did the trial truly succeed?"""


@shape()
class Labels:
    """A labels file, read and checked (see :func:`read_labels`)."""

    labels: tuple[Label, ...]
    """The filled-in labels, in file order."""
    source: str
    """Where they were read from."""
    digest: str
    """sha256 of the labels (canonical: sorted ``task_id, trial, gold``), what enters a run's
    identity and manifest, and what the audit checks."""
    unfilled: int = 0
    """Lines with ``gold: null`` (planned, not labeled yet)."""

    def pairs(self) -> dict[tuple[str, int], bool]:
        """``{(task_id, trial): gold}``."""
        return {(x.task_id, x.trial): x.gold for x in self.labels}


def labels_digest(labels: Iterable[Label]) -> str:
    """sha256 of the canonical form of ``labels`` (order-free)."""
    rows = sorted((x.task_id, x.trial, x.gold) for x in labels)
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode()).hexdigest()


def read_labels(data: Union[bytes, str, Any], *, where: Optional[str] = None) -> Labels:
    """Read a labels file: ``data`` is the bytes (or text) of the file, or a path / fsspec URL
    (``str`` naming an existing file, or a ``Path``). See the module docstring for the format
    and the refusals."""
    where, raw = _load(data, where)
    seen: dict[tuple[str, int], int] = {}
    out: list[Label] = []
    unfilled = 0
    for lineno, doc in parse_json_lines(raw, where=where, error=LabelError):
        at = f"{where} line {lineno}"
        if not isinstance(doc, Mapping):
            raise LabelError(f"{at}: expected an object like {{\"task_id\": \"t1\", \"trial\": 0, "
                             f"\"gold\": true}}, got {doc!r:.80}")
        missing = [k for k in ("task_id", "trial", "gold") if k not in doc]
        if missing:
            raise LabelError(f"{at}: missing {', '.join(missing)}; each line needs task_id, trial "
                             f"and gold (true/false), got keys {sorted(doc)}")
        tid, trial, gold = doc["task_id"], doc["trial"], doc["gold"]
        if not isinstance(tid, str) or not tid:
            raise LabelError(f"{at}: task_id must be a non-empty string, got {tid!r}")
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            raise LabelError(f"{at}: trial must be a trial index (an integer >= 0), got {trial!r}")
        if gold is None:
            unfilled += 1
            continue
        if not isinstance(gold, bool):
            raise LabelError(f"{at}: gold must be true or false (the person's verdict), got "
                             f"{gold!r}; write true/false, or null for a trial not labeled yet")
        if (tid, trial) in seen:
            raise LabelError(f"{at}: task {tid!r} trial {trial} is labeled twice (first on line "
                             f"{seen[(tid, trial)]}); keep one verdict per trial")
        seen[(tid, trial)] = lineno
        out.append(Label(task_id=tid, trial=trial, gold=gold))
    return Labels(labels=tuple(out), source=where, digest=labels_digest(out), unfilled=unfilled)


def _load(data: Any, where: Optional[str]) -> tuple[str, Any]:
    if isinstance(data, Labels):
        raise LabelError("read_labels: already read; pass the Labels on")
    if isinstance(data, (bytes, bytearray)):
        return where or "labels", bytes(data)
    path = str(data)
    if isinstance(data, str) and ("\n" in data or data.lstrip().startswith("{")):
        return where or "labels", data
    return where or path, read_url(path, what="labels file", invalid=LabelError)


def judged(check: Any, tasks: Any = None) -> bool:
    """Whether a judge (anything but a deterministic oracle) decided some trial's success:
    the run's default ``check`` (a name, a callable, or the :class:`GradedBy` a run recorded)
    or any task's own ``checker``."""
    if isinstance(check, GradedBy):
        return check.judged or (tasks is not None and judged(None, tasks))
    if check is not None and (not isinstance(check, str) or check not in JUDGE_FREE_CHECKERS):
        return True
    if tasks is not None:
        return any(t.checker not in JUDGE_FREE_CHECKERS for t in task_table(tasks).values())
    return False


def _checker_name(check: Any) -> Any:
    if isinstance(check, GradedBy):
        return check.name
    return "output" if check is None else check


def not_judged_error(check: Any, where: str, *, fix: str = "drop --labels") -> LabelError:
    """The refusal of labels (or a labels plan) for a run no judge graded."""
    return LabelError(f"{where}: this run was graded by the deterministic checker "
                      f"{_checker_name(check)!r}, not a judge, so there is no judge error to "
                      f"correct; {fix} (labels correct a judge's verdicts: grade with a judge, "
                      "e.g. check='recorded', a judge callable or a JudgeMetric)")


def _labels(labels: Any) -> Labels:
    return labels if isinstance(labels, Labels) else read_labels(labels)


def corrected_rate_of(graded: Sequence[Any], labels: Any, *, check: Any = None, tasks: Any = None,
                      alpha: float = 0.05, method: str = "score") -> JudgeCorrectedRate:
    """The judge-corrected success rate of a graded run: every graded episode's ``success``
    is the judge's verdict; the labels (a :class:`Labels`, a path, or the file's bytes) give
    the gold on some of them. Grouped by task (cluster-robust). Refuses (:class:`LabelError`)
    labels for a trial the run does not have, fewer than :data:`MIN_LABELS`, and labels for a
    run no judge graded (``check`` / ``tasks`` say how it was graded; when both are None the
    caller vouches that a judge graded it)."""
    labs = _labels(labels)
    if (check is not None or tasks is not None) and not judged(check, tasks):
        raise not_judged_error(check, f"labels {labs.source!r}")
    by_pair: dict[tuple[str, int], Any] = {}
    repeats: dict[tuple[str, int], int] = {}
    for ep in graded:
        pair = (str(ep.task_id), (ep.meta or {}).get("trial"))
        if pair in by_pair:
            repeats[pair] = repeats.get(pair, 1) + 1
        by_pair[pair] = ep
    if repeats:  # which of two verdicts on one trial a label corrects is not knowable
        (tid, trial), times = next(iter(repeats.items()))
        raise LabelError(f"labels {labs.source!r}: the graded run is ambiguous: task {tid!r} trial "
                         f"{trial!r} appears {times} times ({len(repeats)} (task, trial) pair(s) "
                         f"repeated, {sum(repeats.values()) - len(repeats)} extra episode(s)); "
                         "a label names one trial, so give each trial once (number an ingested "
                         "run's repeated episodes as separate trials: meta['trial'])")
    tasks_seen = {t for t, _ in by_pair}
    gold, jl, lg = [], [], []
    used = set()
    for x in labs.labels:
        ep = by_pair.get((x.task_id, x.trial))
        if ep is None:
            if x.task_id not in tasks_seen:
                raise LabelError(f"labels {labs.source!r}: task {x.task_id!r} is not in this run"
                                 f"{did_you_mean(x.task_id, sorted(tasks_seen))}; label the run's "
                                 "own trials (`ek-agents plan-labels RUN --n N` writes the file)")
            trials = sorted(t for tid, t in by_pair if tid == x.task_id and t is not None)
            raise LabelError(f"labels {labs.source!r}: task {x.task_id!r} has no trial {x.trial} "
                             f"in this run (its trials: {trials[:10]}{' ...' if len(trials) > 10 else ''}); "
                             "fix the trial index")
        gold.append(x.gold)
        jl.append(bool(ep.success))
        lg.append(x.task_id)
        used.add((x.task_id, x.trial))
    if len(gold) < MIN_LABELS:
        raise LabelError(f"labels {labs.source!r}: {len(gold)} filled-in label(s)"
                         f"{f' ({labs.unfilled} still null)' if labs.unfilled else ''}; at least "
                         f"{MIN_LABELS} are needed to measure the judge's error -- label more "
                         "trials (`ek-agents plan-labels RUN --n N` picks them)")
    ju, ug = [], []
    for (tid, trial), ep in by_pair.items():
        if (tid, trial) not in used:
            ju.append(bool(ep.success))
            ug.append(tid)
    return judge_corrected_rate(gold, jl, ju, labeled_groups=lg, unlabeled_groups=ug, alpha=alpha,
                                method=method)


@shape()
class LabelPlan:
    """Which trials to label, and the file written for a person to fill in."""

    trials: tuple[tuple[str, int], ...]
    """``(task_id, trial)`` to label, in the file's order."""
    n_tasks: int
    """Tasks represented."""
    path: Optional[str] = None
    """Where the file was written (None: not written)."""
    text: str = ""
    """The file's JSON Lines (``gold: null`` on every line)."""


def _brief(value: Any, limit: int = 400) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    s = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return s if len(s) <= limit else s[:limit] + " ..."


def plan_labels(graded: Sequence[Any], n: int, *, seed: int = 0, path: Optional[str] = None,
                tasks: Any = None) -> LabelPlan:
    """Pick ``n`` trials of a run to label, stratified by task, and (with ``path``) write the
    file a person fills in (one line per trial: ``task_id``, ``trial``, ``gold: null``, and the
    task's input and the trial's output to read; not the judge's verdict, which would anchor the
    person). Errored trials are not offered (an error is a failure by rule, no judge decided
    it). Seeded: the same run and seed pick the same trials.

    >>> from ek_agents.base import Episode
    >>> eps = [Episode(f"t{i}", output="x", meta={"trial": j}) for i in range(3) for j in range(4)]
    >>> p = plan_labels(eps, 4)
    >>> p.n_tasks, len({t for t, _ in p.trials}), len(p.trials)
    (3, 3, 4)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise LabelError(f"plan_labels: n must be a positive number of labels, got {n!r}")
    by_task: dict[str, list[Any]] = {}
    for ep in graded:
        meta = ep.meta or {}
        if meta.get("error") or meta.get("trial") is None:
            continue
        by_task.setdefault(str(ep.task_id), []).append(ep)
    if not by_task:
        raise LabelError("plan_labels: the run has no trial to label (every trial errored, or "
                         "none carries meta['trial']); run the suite first")
    rng = random.Random(seed)
    order = sorted(by_task)
    rng.shuffle(order)
    pools = {t: rng.sample(by_task[t], len(by_task[t])) for t in order}
    chosen: list[Any] = []
    while len(chosen) < n and any(pools.values()):
        for t in order:
            if pools[t] and len(chosen) < n:
                chosen.append(pools[t].pop())
    table = task_table(tasks) if tasks is not None else {}
    lines = []
    for ep in chosen:
        row = {"task_id": str(ep.task_id), "trial": ep.meta["trial"], "gold": None}
        if ep.task_id in table:
            row["input"] = _brief(table[ep.task_id].input)
        row["output"] = _brief(ep.output)
        lines.append(json.dumps(row, sort_keys=False, default=str))
    text = "".join(line + "\n" for line in lines)
    if path is not None:
        write_url(path, text.encode(), what="labels file")
    return LabelPlan(trials=tuple((str(e.task_id), e.meta["trial"]) for e in chosen),
                     n_tasks=len({e.task_id for e in chosen}), path=path, text=text)


def judge_detail(graded: Sequence[Any], labels: Any, *, check: Any = None, tasks: Any = None,
                 cost: Optional[Mapping[str, Any]] = None) -> dict:
    """What a report carries under ``detail["judge_corrected"]``: the corrected rate (with the
    judge's raw rate and measured error beside it), the labels' source and digest, and -- when
    the run was priced (``cost``, a cost report with ``task_totals``) -- the cost per corrected
    success with its Fieller interval (and ``estimated``: the trials without a known cost whose
    dollars it fills in at the priced trials' mean)."""
    labs = _labels(labels)
    rate = corrected_rate_of(graded, labs, check=check, tasks=tasks)
    out: dict = {"rate": rate_doc(rate), "sentence": rate.sentence(),
                 "labels": {"source": labs.source, "digest": labs.digest, "n": len(labs.labels),
                            "unfilled": labs.unfilled}}
    totals = (cost or {}).get("task_totals")
    if totals:
        c = cost_per_corrected_success(rate, task_totals=totals)
        out["cost_per_success"] = {"estimate": c.estimate, "ci": list(c.ci), "method": c.method,
                                   "raw": (cost or {}).get("cost_per_success"),
                                   "trials": c.trials, "estimated": c.estimated}
    return out


def labels_doc(labels: Labels) -> dict:
    """``labels`` as a run document (what a persisted run stores as ``labels``)."""
    return {"schema_version": 1, "source": labels.source, "digest": labels.digest,
            "unfilled": labels.unfilled,
            "labels": [[x.task_id, x.trial, x.gold] for x in labels.labels]}


def labels_of_doc(doc: Mapping[str, Any], *, where: str = "labels") -> Labels:
    """The :class:`Labels` a run's ``labels`` document holds; :class:`LabelError` when its rows
    do not hash to its recorded digest (changed after the run)."""
    if not isinstance(doc, Mapping) or not isinstance(doc.get("labels"), list):
        raise LabelError(f"{where}: not a labels document (no 'labels' list); re-create the run")
    rows = [Label(task_id=r[0], trial=r[1], gold=r[2]) for r in doc["labels"]]
    digest = labels_digest(rows)
    if digest != doc.get("digest"):
        raise LabelError(f"{where}: its labels hash to {digest[:12]}..., the document records "
                         f"{str(doc.get('digest'))[:12]}... (changed after the run)")
    return Labels(labels=tuple(rows), source=str(doc.get("source", where)), digest=digest,
                  unfilled=int(doc.get("unfilled", 0)))
