"""Streaming aggregation: a run's report from its segments, in memory bounded by per-task state.

:class:`StreamingReport` takes graded episodes one at a time (or a segment's trials at a time:
:meth:`StreamingReport.add_trials` parses and grades them, so grading streams too) and keeps,
per task, its trial and success counts and its priced trials' dollars (an exact running sum),
per slice the same cost state, and for the run the token counts, latencies (an exact running
sum), errors by kind and the distinct provenances -- never an episode. :meth:`result` builds
the same ``(metrics, report)`` documents as the in-memory path (``reporting.graded_report``:
``reliability_with_run`` then ``with_cost``): success rate and its task-clustered interval,
pass@k / pass^k and the pass^k bootstrap over tasks, per-task and per-slice tables, cost per
success and its bootstrap over tasks (tests/test_streaming.py compares both on thousands of
trials). Memory: O(tasks), whatever the number of trials.

>>> from ek_agents.base import Episode, TaskSpec
>>> tasks = [TaskSpec("a", input="x", gold="X"), TaskSpec("b", input="y", gold="Y")]
>>> s = StreamingReport(tasks, k=2)
>>> s.add_episodes([Episode("a", output="X", meta={"trial": 0}), Episode("a", output="?", meta={"trial": 1}),
...                 Episode("b", output="Y", meta={"trial": 0}), Episode("b", output="Y", meta={"trial": 1})])
>>> metrics, report = s.result()
>>> report.success_rate, report.pass_hat_k
(0.75, 0.5)
"""
from __future__ import annotations

import dataclasses
import math
from itertools import repeat
from collections.abc import Iterable, Mapping
from types import SimpleNamespace
from typing import Any, Optional

from ..base import Episode, RunProvenance, TaskSpec, task_table
from ..cost import cost_figures, episode_dollars
from ..errors import IntegrityError, InvalidInput
from ..scoring.metrics import grade, is_errored
from ..reporting import ReliabilityReport, reliability, run_provenance
from ..spancounts import merge_otel_counts, otel_read_sentence
from ..store import canonical_json, parse_json, sha256_hex
from ..records.fingerprint import trial_matches
from ..records.segments import (RunSegments, iter_segments, owned, owner, read_segment,
                                segment_line_doc)

__all__ = ["StreamingReport", "ExactSum", "stream_report", "segment_summarizer", "summary_basis",
           "merged_report", "STREAMED"]

#: ``manifest.parameters["layout"]`` of a run whose report was streamed from its segments
#: (``scalerun.LAYOUT``; the audit recomputes it so: ``streamaudit``): it has no episodes or
#: graded document.
STREAMED = "segments-streamed"

_TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens",
           "reasoning_tokens")


class ExactSum:
    """A running sum of floats whose value is ``math.fsum`` of everything added (Shewchuk's
    partials, as ``fsum`` keeps them: a handful of floats whatever the count).

    >>> s = ExactSum(); s.add_all([0.1] * 10); s.value == math.fsum([0.1] * 10)
    True
    """

    __slots__ = ("partials", "n")

    def __init__(self) -> None:
        self.partials: list[float] = []
        self.n = 0

    def add(self, x: float) -> None:
        self.n += 1
        if not math.isfinite(x):
            self.partials.append(x)
            return
        i = 0
        for y in self.partials:
            if not math.isfinite(y):
                self.partials[i] = y
                i += 1
                continue
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo:
                self.partials[i] = lo
                i += 1
            x = hi
        self.partials[i:] = [x]

    def add_all(self, xs: Iterable[float]) -> None:
        for x in xs:
            self.add(x)

    @property
    def value(self) -> float:
        return math.fsum(self.partials)

    def state(self) -> list:
        """``[n, *partials]`` (JSON: each partial a finite float, written exactly)."""
        return [self.n, *self.partials]

    def merge(self, state: list) -> None:
        """Add what :meth:`state` of another sum says (its partials: the exact total)."""
        n = self.n
        for x in state[1:]:
            self.add(float(x))
        self.n = n + int(state[0])


class _Cost:
    """:func:`~ek_agents.cost.cost_report`'s state over a stream of graded episodes."""

    def __init__(self) -> None:
        self.n = self.n_success = self.n_without = 0
        self.tokens = dict.fromkeys(_TOKENS, 0)
        self.latency = ExactSum()
        self.total = ExactSum()
        self.costed_success = 0
        self.costed = 0
        self.per_task: dict[str, list] = {}  # task -> [n, n_success, ExactSum dollars]

    def add(self, ep: Episode, ok: bool, dollars: Optional[float]) -> None:
        self.n += 1
        self.n_success += ok
        c = ep.cost
        if c is None:
            self.n_without += 1
            return
        for k in _TOKENS:
            self.tokens[k] += getattr(c, k)
        if c.latency_s is not None:
            self.latency.add(float(c.latency_s))
        self.costed += 1
        self.costed_success += ok
        if dollars is not None:
            self.total.add(dollars)
            t = self.per_task.get(ep.task_id)
            if t is None:
                t = self.per_task[ep.task_id] = [0, 0, ExactSum()]
            t[0] += 1
            t[1] += ok
            t[2].add(dollars)

    def state(self) -> dict:
        return {"n": self.n, "n_success": self.n_success, "n_without": self.n_without,
                "tokens": dict(self.tokens), "latency": self.latency.state(),
                "total": self.total.state(), "costed": self.costed,
                "costed_success": self.costed_success,
                "per_task": {t: [v[0], v[1], v[2].state()] for t, v in self.per_task.items()}}

    def merge(self, st: Mapping) -> None:
        self.n += st["n"]
        self.n_success += st["n_success"]
        self.n_without += st["n_without"]
        for k in _TOKENS:
            self.tokens[k] += st["tokens"][k]
        self.latency.merge(st["latency"])
        self.total.merge(st["total"])
        self.costed += st["costed"]
        self.costed_success += st["costed_success"]
        for tid, (n, ns, dollars) in st["per_task"].items():
            t = self.per_task.get(tid)
            if t is None:
                t = self.per_task[tid] = [0, 0, ExactSum()]
            t[0] += n
            t[1] += ns
            t[2].merge(dollars)

    def report(self, *, priced: bool, seed: int, resamples: int = 2000) -> dict:
        # the in-memory path's order: episodes sorted by (task, trial), tasks by first appearance
        return cost_figures(
            n=self.n, n_success=self.n_success, n_without=self.n_without, priced=priced,
            n_costed=self.costed, n_costed_success=self.costed_success,
            total=lambda: self.total.value,
            task_totals=lambda: {tid: {"n": t[0], "n_success": t[1], "dollars": t[2].value}
                                 for tid, t in sorted(self.per_task.items())},
            mean_latency_s=self.latency.value / self.latency.n if self.latency.n else None,
            tokens=self.tokens, seed=seed, batch=False, resamples=resamples)


class StreamingReport:
    """A run's metrics and report, built trial by trial (see the module docstring).

    ``tasks``: the suite (TaskSpecs, a ``{task_id: TaskSpec}`` mapping, or a run's tasks
    document); ``check``: the checker name the grade stage uses (None: each task's, else the
    suite's); ``prices``: a price catalog (``{model: ModelPrice}``) or None; ``seed``: the
    bootstraps' seed; ``run``: the run's provenance (``RunProvenance``)."""

    def __init__(self, tasks: Any, *, k: int, check: Optional[str] = None,
                 prices: Optional[Mapping] = None, seed: int = 0,
                 run: Optional[RunProvenance] = None) -> None:
        if isinstance(tasks, Mapping) and "tasks" in tasks:  # a run's tasks document
            check = check if check is not None else tasks.get("checker")
            tasks = [TaskSpec.from_dict(t) for t in tasks["tasks"]]
        self.specs: dict[str, TaskSpec] = task_table(tasks)
        self.k, self.check, self.prices, self.seed, self.run = k, check, prices, seed, run
        self.slices = {tid: t.slice for tid, t in self.specs.items() if t.slice is not None}
        self.counts: dict[str, list[int]] = {}  # task -> [n, c]
        self.errors: dict[str, int] = {}
        self.runs: dict = {}  # distinct provenance (by value) -> itself
        self.cost = _Cost()
        self.slice_cost: dict[str, _Cost] = {}
        self.memo: dict = {}
        self.misfiled: list[str] = []  # segment lines that are not the trial their index names
        self.misfiled_merged = 0  # ... counted in the summaries merged
        self.otel_read: dict = {}  # what span reads kept once, cut or skipped (spancounts)
        self.n = 0

    # -- input --------------------------------------------------------------------------------
    def add_trials(self, trials: Iterable[Any]) -> None:
        """Parse, validate and grade a segment's trials (``segments.SegmentTrial``: ``.data``
        the episode's JSON) and add them."""
        eps = []
        for t in trials:
            ep = Episode.from_dict(segment_line_doc(t))
            if not trial_matches(ep, *t.pair):
                self.misfiled.append(f"{t.key} trial {t.pair!r} holds task {ep.task_id!r} "
                                     f"trial {ep.meta.get('trial')!r}")
            eps.append(ep)
        self.add_episodes(grade(eps, self.specs, check=self.check))

    def add_episodes(self, graded: Iterable[Episode]) -> None:
        """Add graded episodes (ungraded ones are graded here first)."""
        graded = list(graded)
        if any(ep.success is None for ep in graded):
            graded = grade(graded, self.specs, check=self.check)
        priced = self.prices is not None
        for ep in graded:
            tid = ep.task_id
            if tid not in self.specs:
                raise InvalidInput(f"streaming report: episode of task {tid!r} is not in the suite "
                                   f"({len(self.specs)} tasks); stream only the run's trials")
            ok = bool(ep.success)
            row = self.counts.get(tid)
            if row is None:
                row = self.counts[tid] = [0, 0]
            row[0] += 1
            row[1] += ok
            self.n += 1
            if is_errored(ep):
                kind = ep.meta.get("error_kind", "exception")
                self.errors[kind] = self.errors.get(kind, 0) + 1
            otel = ep.meta.get("otel")
            if otel:
                merge_otel_counts(self.otel_read, otel, episode=True)
            if ep.run is not None and ep.run not in self.runs:
                self.runs[ep.run] = ep.run
            dollars = (episode_dollars(ep, prices=self.prices)
                       if priced and ep.cost is not None else None)
            self.cost.add(ep, ok, dollars)
            label = self.slices.get(tid)
            if label is not None:
                acc = self.slice_cost.get(label)
                if acc is None:
                    acc = self.slice_cost[label] = _Cost()
                acc.add(ep, ok, dollars)

    # -- partial states (a segment's summary, a worker's share) -----------------------------------
    def state(self) -> dict:
        """This report's state as JSON: per-task counts and costs, errors, provenances -- what
        :meth:`merge_state` adds to another report of the same suite."""
        misfiled = len(self.misfiled) + self.misfiled_merged
        return {"counts": {t: list(v) for t, v in self.counts.items()}, "errors": dict(self.errors),
                "runs": [r.to_dict() for r in self.runs], "n": self.n, "cost": self.cost.state(),
                "slices": {label: c.state() for label, c in self.slice_cost.items()},
                **({"misfiled": misfiled} if misfiled else {}),
                **({"otel_read": dict(self.otel_read)} if self.otel_read else {})}

    def merge_state(self, st: Mapping) -> None:
        """Add another report's :meth:`state` (trials it holds that this one does not)."""
        for tid, (n, c) in st["counts"].items():
            row = self.counts.get(tid)
            if row is None:
                row = self.counts[tid] = [0, 0]
            row[0] += n
            row[1] += c
        for kind, n in st["errors"].items():
            self.errors[kind] = self.errors.get(kind, 0) + n
        for doc in st["runs"]:
            r = RunProvenance.from_dict(doc)
            self.runs.setdefault(r, r)
        self.n += st["n"]
        self.misfiled_merged += int(st.get("misfiled", 0))
        merge_otel_counts(self.otel_read, st.get("otel_read") or {})
        self.cost.merge(st["cost"])
        for label, c in st["slices"].items():
            acc = self.slice_cost.get(label)
            if acc is None:
                acc = self.slice_cost[label] = _Cost()
            acc.merge(c)

    def empty_like(self) -> "StreamingReport":
        """A report of the same suite and settings holding no trial (the suite not parsed again)."""
        acc = StreamingReport.__new__(StreamingReport)
        acc.__dict__.update(self.__dict__)
        acc.counts, acc.errors, acc.runs, acc.n, acc.misfiled = {}, {}, {}, 0, []
        acc.misfiled_merged, acc.otel_read = 0, {}
        acc.cost, acc.slice_cost = _Cost(), {}
        return acc

    def add_lines(self, lines: Iterable[bytes], episodes: Optional[Iterable[Any]] = None,
                  where: str = "segment", pairs: Optional[Iterable[Any]] = None) -> None:
        """Add trials given as their stored lines; ``episodes``: the episode each line was made
        from where known (a plain answer's: what parsing gives back), else None (parsed);
        ``pairs``: the ``(task_id, trial)`` each line is filed under (a line that is another
        trial is counted in ``misfiled``)."""
        eps = []
        for i, (line, ep) in enumerate(zip(lines, episodes or repeat(None))):
            eps.append(ep if ep is not None
                       else Episode.from_dict(parse_json(line, f"{where} line {i + 1}")))
        for pair, ep in zip(pairs or (), eps):
            if ep.task_id != pair[0] or ep.meta.get("trial") != pair[1]:
                self.misfiled.append(f"{where} trial {tuple(pair)!r} holds task {ep.task_id!r} "
                                     f"trial {ep.meta.get('trial')!r}")
        self.add_episodes(grade(eps, self.specs, check=self.check))

    # -- output -------------------------------------------------------------------------------
    def result(self) -> tuple[ReliabilityReport, ReliabilityReport]:
        """``(metrics, report)``: what ``reporting.reliability_with_run`` and then
        ``reporting.with_cost`` give for the same graded episodes."""
        outcomes = {tid: [True] * c + [False] * (n - c) for tid, (n, c) in self.counts.items()}
        rel = reliability(outcomes, k=self.k,
                          slices={t: s for t, s in self.slices.items() if t in outcomes} or None,
                          seed=self.seed)
        warnings = list(rel.detail.get("warnings", []))
        prov, prov_warning = run_provenance([SimpleNamespace(run=r) for r in self.runs], self.run)
        if prov_warning:
            warnings.append(prov_warning)
        if self.errors:
            warnings.append(f"{sum(self.errors.values())} of {self.n} trials failed with an error "
                            f"({', '.join(f'{n} {kind}' for kind, n in sorted(self.errors.items()))}); "
                            "they count as failures")
        if self.otel_read:
            warnings.append(otel_read_sentence(self.otel_read))
        metrics = dataclasses.replace(rel, detail={
            **rel.detail, "run": None if prov is None else prov.to_dict(),
            "errors": dict(self.errors), "warnings": warnings,
            **({"otel_read": dict(self.otel_read)} if self.otel_read else {})})
        priced = self.prices is not None
        cost = self.cost.report(priced=priced, seed=self.seed)
        labels = sorted({t["slice"] for t in metrics.per_task.values() if t.get("slice") is not None})
        cost["per_slice"] = {label: (self.slice_cost[label] if label in self.slice_cost
                                     else _Cost()).report(priced=priced, seed=self.seed)
                             for label in labels}
        return metrics, dataclasses.replace(metrics, cost=cost)

    def state_size(self) -> int:
        """Entries of per-task and per-slice state held (what bounds the memory)."""
        return (len(self.counts) + len(self.cost.per_task)
                + sum(len(c.per_task) for c in self.slice_cost.values()) + len(self.runs))


def stream_report(store: Any, run_id: str, tasks: Any, *, k: int, check: Optional[str] = None,
                  prices: Optional[Mapping] = None, seed: int = 0,
                  run: Optional[RunProvenance] = None, verify: bool = True
                  ) -> tuple[ReliabilityReport, ReliabilityReport, int]:
    """``(metrics, report, trials read)`` of a run stored in segments, read one segment at a
    time (each verified against its sha256) -- the run's episodes are never all in memory."""
    acc = StreamingReport(tasks, k=k, check=check, prices=prices, seed=seed, run=run)
    n = 0
    for trials in iter_segments(store, RunSegments.load(store, run_id), verify=verify):
        acc.add_trials(trials)
        n += len(trials)
    metrics, report = acc.result()
    return metrics, report, n


def summary_basis(suite_digest: str, check: Optional[str], prices_sha256: Optional[str]) -> str:
    """What a segment's summary depends on besides its bytes: the suite, the checker and the
    price catalog (k, the seed and the run's provenance only enter when the report is built)."""
    doc = {"suite": suite_digest, "check": check, "prices": prices_sha256}
    return sha256_hex(canonical_json(doc))


def segment_summarizer(tasks: Any, *, k: int, check: Optional[str] = None,
                       prices: Optional[Mapping] = None, seed: int = 0,
                       run: Optional[RunProvenance] = None) -> Any:
    """A ``summarize(pairs, lines, episodes)`` for ``segments.SegmentWriter``: the segment's
    trials graded and summed (:meth:`StreamingReport.state`), stored in its index entry. The
    suite is parsed once, here."""
    proto = StreamingReport(tasks, k=k, check=check, prices=prices, seed=seed, run=run)

    def summarize(pairs: list, lines: list, episodes: list) -> dict:
        acc = proto.empty_like()
        acc.add_lines(lines, episodes, pairs=pairs)
        return acc.state()

    return summarize


def merged_report(store: Any, run_id: str, tasks: Any, *, k: int, check: Optional[str] = None,
                  prices: Optional[Mapping] = None, seed: int = 0,
                  run: Optional[RunProvenance] = None, summaries: bool = True,
                  basis: Optional[str] = None
                  ) -> tuple[ReliabilityReport, ReliabilityReport, dict]:
    """``(metrics, report, counts)`` of a run stored in segments: each segment's summary
    merged (its index entry's, made as it was written) -- the segment itself read only when it
    has none, or when some of its trials no longer count (dropped, or held by an earlier
    segment), or when ``basis`` is given and the summary was made on another (another suite,
    checker or price catalog) -- ``summaries=False`` reads every segment. ``counts``: trials, segments merged
    from summaries and segments read. A line that is not the trial its index names (counted in
    its segment's summary as the run wrote it, or found as a segment is read) raises
    :class:`~ek_agents.errors.IntegrityError`: the run's figures would count it wrongly."""
    acc = StreamingReport(tasks, k=k, check=check, prices=prices, seed=seed, run=run)
    segs = RunSegments.load(store, run_id)
    owners = segs.owners(k)  # bounded: a few bytes per trial, not a dict of every pair
    held = owned(owners)
    read: list = []
    merged = 0
    for pos, (_, entry) in enumerate(segs.entries):
        mine = held[pos]
        if not mine:
            continue
        if (summaries and entry.summary is not None and mine == entry.n
                and (basis is None or entry.summary.get("basis") == basis)):
            acc.merge_state(entry.summary)
            merged += 1
        else:
            read.append((pos, entry))
    for pos, entry in read:  # one segment at a time: its trials that it holds
        acc.add_trials([t for t in read_segment(store, entry)
                        if owner(owners, t.pair) == pos])
    n_misfiled = len(acc.misfiled) + acc.misfiled_merged
    if n_misfiled:  # their figures would count them under trials they are not
        raise IntegrityError(f"run {run_id!r}: {n_misfiled} segment line(s) are not the trial "
                             f"their index names ({'; '.join(acc.misfiled[:3]) or 'counted as the segments were written'}); "
                             f"`ek-agents audit {run_id}` lists them: re-run the run with refresh")
    metrics, report = acc.result()
    return metrics, report, {"trials": acc.n, "merged": merged, "read": len(read),
                             "misfiled": acc.misfiled[:10], "n_misfiled": n_misfiled}
